/*
 * Text records from numpy columns: the bulk writer behind the Paraver, Chrome and Dimemas
 * outputs (tareador/formats/text_rows.py). Millions of records a second, where formatting them
 * one Python string at a time took a microsecond per number.
 *
 * A layout is a list of fields: literal bytes, or a value taken from a column at the record's
 * source row (an integer, an integer with an implied decimal point, a double as printf's %.*f,
 * or an entry of a table of texts). Output row k uses layout layout_of[k] (0 if NULL) and source
 * row source[k]. Without an output buffer only the row ends are computed, to size what will be
 * written before writing it.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum kind { LITERAL, INTEGER, FIXED, REAL, TEXT };

struct field {
    int32_t kind;
    int32_t decimals;       /* FIXED: digits after the point; REAL: printf's precision */
    const void *column;     /* int64 values (INTEGER, FIXED; TEXT: entry index) or doubles (REAL) */
    const char *text;       /* LITERAL: its bytes; TEXT: the entries back to back */
    const int64_t *offsets; /* TEXT: entry e is text[offsets[e] .. offsets[e + 1]) */
    int64_t length;         /* LITERAL: its length */
};

struct layout {
    const struct field *fields;
    int64_t nfields;
};

static const char PAIRS[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* The decimal digits of v, at least `width` of them (zero-padded), into p; returns their count. */
static int64_t put_digits(char *p, uint64_t v, int width)
{
    char buf[24];
    char *end = buf + sizeof buf, *b = end;
    while (v >= 100) {
        b -= 2;
        memcpy(b, PAIRS + 2 * (v % 100), 2);
        v /= 100;
    }
    if (v >= 10) {
        b -= 2;
        memcpy(b, PAIRS + 2 * v, 2);
    } else {
        *--b = (char) ('0' + v);
    }
    while (end - b < width)
        *--b = '0';
    if (p)
        memcpy(p, b, (size_t) (end - b));
    return end - b;
}

static const uint64_t POW10[] = {1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull,
                                 100000000ull, 1000000000ull, 10000000000ull, 100000000000ull,
                                 1000000000000ull, 10000000000000ull, 100000000000000ull,
                                 1000000000000000ull, 10000000000000000ull, 100000000000000000ull,
                                 1000000000000000000ull};

/* v / 10^decimals written with its decimal point (none if decimals is 0); p may be NULL. */
static int64_t put_fixed(char *p, int64_t v, int decimals)
{
    int64_t n = 0;
    uint64_t u = v < 0 ? -(uint64_t) v : (uint64_t) v;
    if (v < 0) {
        if (p)
            p[0] = '-';
        n = 1;
    }
    if (!decimals)
        return n + put_digits(p ? p + n : NULL, u, 1);
    uint64_t scale = POW10[decimals];
    n += put_digits(p ? p + n : NULL, u / scale, 1);
    if (p)
        p[n] = '.';
    n += 1;
    return n + put_digits(p ? p + n : NULL, u % scale, decimals);
}

static int64_t put_field(char *p, const struct field *f, int64_t row)
{
    switch (f->kind) {
    case LITERAL:
        if (p)
            memcpy(p, f->text, (size_t) f->length);
        return f->length;
    case INTEGER:
        return put_fixed(p, ((const int64_t *) f->column)[row], 0);
    case FIXED:
        return put_fixed(p, ((const int64_t *) f->column)[row], f->decimals);
    case REAL: {
        /* text_rows.py sized the buffer for the column's largest magnitude */
        char tmp[400];
        int n = snprintf(tmp, sizeof tmp, "%.*f", f->decimals, ((const double *) f->column)[row]);
        if (p)
            memcpy(p, tmp, (size_t) n);
        return n;
    }
    default: {
        int64_t e = ((const int64_t *) f->column)[row];
        int64_t n = f->offsets[e + 1] - f->offsets[e];
        if (p)
            memcpy(p, f->text + f->offsets[e], (size_t) n);
        return n;
    }
    }
}

/* Writes `rows` records into out (or only measures them when out is NULL); row_end[k] (if not
 * NULL) gets the end of record k, from the start of out. Returns the bytes written. */
int64_t format_rows(const struct layout *layouts, const int8_t *layout_of, const int64_t *source, int64_t rows,
                    char *out, int64_t *row_end)
{
    int64_t at = 0;
    for (int64_t k = 0; k < rows; k++) {
        const struct layout *l = layouts + (layout_of ? layout_of[k] : 0);
        int64_t row = source[k];
        for (int64_t i = 0; i < l->nfields; i++)
            at += put_field(out ? out + at : NULL, l->fields + i, row);
        if (row_end)
            row_end[k] = at;
    }
    return at;
}
