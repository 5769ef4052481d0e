/*
 * The records of a Dimemas trace into numpy columns (tareador/formats/dimemas.py read_dim), one
 * pass over the bytes: a replay of millions of threads reads half a gigabyte of them.
 *
 * Only the usual forms are handled here: integer fields of an optional '-' and 1..16 digits,
 * bursts of digits with at most one '.' (at most 15 digits with one), values in the ranges the
 * columns hold, partner threads of the partner's task, sizes >= 0. At the first line that is anything else the function stops and returns its
 * index, and dimemas.py parses that chunk with its numpy path, which accepts every form the
 * format allows and names what is wrong with a line. Each column gets exactly what that path
 * writes for a line of its kind, so the two agree on every line this one takes.
 */
#include <stdint.h>
#include <string.h>

enum op { NOOP = 0, BURST = 1, SEND = 2, RECV = 3, GLOBAL_OP = 10, EVENT = 20 };
#define MAX_DIGITS 16
#define MAX_FIELDS 10
#define INT32_LOW (-2147483647 - 1)
#define INT32_HIGH 2147483647
#define GLOBAL_OPS 16
#define GLOP_SYNC 1

struct columns {
    int8_t *op;
    int32_t *gthread;
    int32_t *a;
    int64_t *b;
    int64_t *size;
    int32_t *tag;
    int32_t *comm;
    int8_t *mode;
    double *secs;
    int64_t *first_pos; /* per thread: offset of its first record, -1 until seen */
    const int64_t *base; /* per task: its thread 0's global index; base[ntasks] = threads */
    int64_t ntasks;
};

static const double POW10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14,
                               1e15, 1e16};

/* An integer field p[0..n): returns 0 unless it is '-'? and 1..MAX_DIGITS digits. */
static int integer(const char *p, int64_t n, int64_t *value)
{
    int negative = n > 1 && p[0] == '-';
    int64_t digits = n - negative, v = 0;
    if (digits < 1 || digits > MAX_DIGITS)
        return 0;
    for (int64_t i = negative; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return 0;
        v = v * 10 + (p[i] - '0');
    }
    *value = negative ? -v : v;
    return 1;
}

/* A burst's seconds: MAX_DIGITS digits as an integer, or digits with one '.' (at most 15 in all)
 * as (I * 10^k + F) / 10^k, one correctly rounded division of exact integers. */
static int seconds(const char *p, int64_t n, double *value)
{
    int64_t v = 0, dot = -1, digits = 0;
    for (int64_t i = 0; i < n; i++) {
        if (p[i] == '.' && dot < 0) {
            dot = i;
        } else if (p[i] >= '0' && p[i] <= '9') {
            v = v * 10 + (p[i] - '0');
            if (++digits > MAX_DIGITS)
                return 0;
        } else {
            return 0;
        }
    }
    if (dot < 0) {
        if (!digits)
            return 0;
        *value = (double) v;
        return 1;
    }
    if (digits > 15)
        return 0;
    *value = (double) v / POW10[n - dot - 1];
    return 1;
}

static int in(int64_t v, int64_t low, int64_t high)
{
    return v >= low && v <= high;
}

/* One line's fields (already integers where f_int says so) into row r; 0 if not handled. */
static int record(struct columns *c, int64_t r, const int64_t *f, const int *f_int, int nf, const char *burst,
                  int64_t burst_len)
{
    for (int i = 0; i < nf; i++)
        if (!f_int[i] && !(i == 3 && nf == 4 && f_int[0] && f[0] == BURST))
            return 0;
    if (nf < 3 || !in(f[1], 0, c->ntasks - 1) || !in(f[2], 0, c->base[f[1] + 1] - c->base[f[1]] - 1))
        return 0;
    int64_t op = f[0];
    switch (op) {
    case BURST: {
        double s;
        if (nf != 4 || !seconds(burst, burst_len, &s))
            return 0;
        c->secs[r] = s;
        break;
    }
    case SEND:
    case RECV: {
        if (nf != 8 && nf != 9)
            return 0;
        int aware = nf == 9;
        const int64_t *t = f + 3 + aware;
        if (!in(f[3], 0, c->ntasks - 1) || t[1] < 0 || !in(t[2], INT32_LOW, INT32_HIGH)
            || !in(t[3], INT32_LOW, INT32_HIGH) || !in(t[4], 0, 3)
            || (aware && !in(f[4], -1, c->base[f[3] + 1] - c->base[f[3]] - 1)))
            return 0;
        c->a[r] = (int32_t) f[3];
        c->b[r] = aware ? f[4] : -1;
        c->size[r] = t[1];
        c->tag[r] = (int32_t) t[2];
        c->comm[r] = (int32_t) t[3];
        c->mode[r] = (int8_t) t[4];
        break;
    }
    case GLOBAL_OP:
        if ((nf != 9 && nf != 10) || !in(f[3], 0, GLOBAL_OPS - 1) || !in(f[4], INT32_LOW, INT32_HIGH)
            || !in(f[5], INT32_LOW, INT32_HIGH) || f[6] < 0 || !in(f[7], 0, INT32_HIGH) || !in(f[8], 0, INT32_HIGH)
            || (nf == 10 && !in(f[9], 0, 3)))
            return 0;
        c->a[r] = (int32_t) f[3];
        c->comm[r] = (int32_t) f[4];
        c->tag[r] = (int32_t) f[5];
        c->size[r] = f[7];
        c->b[r] = f[8];
        c->mode[r] = nf == 10 ? (int8_t) f[9] : GLOP_SYNC;
        break;
    case EVENT:
        if (nf != 5 || !in(f[3], INT32_LOW, INT32_HIGH))
            return 0;
        c->a[r] = (int32_t) f[3];
        c->b[r] = f[4];
        break;
    case NOOP:
        if (nf != 3)
            return 0;
        break;
    default:
        return 0;
    }
    c->op[r] = (int8_t) op;
    int64_t g = c->base[f[1]] + f[2];
    c->gthread[r] = (int32_t) g;
    return 1;
}

/* Parses the whole lines data[start, stop) into rows row, row + 1, ...; returns how many lines,
 * or -1 - k when line k is not one this parser takes (rows before it are written). */
int64_t parse_records(const char *data, int64_t start, int64_t stop, int64_t row, struct columns *c)
{
    int64_t line = 0;
    const char *p = data + start, *end = data + stop;
    while (p < end) {
        int64_t f[MAX_FIELDS];
        int f_int[MAX_FIELDS];
        int nf = 0;
        const char *line_start = p, *field = p;
        int ok = 1;
        for (;; p++) {
            if (p == end) { /* every chunk ends with a newline; a missing one is not handled */
                ok = 0;
                break;
            }
            if (*p == ':' || *p == '\n') {
                if (nf == MAX_FIELDS) {
                    ok = 0;
                    break;
                }
                f_int[nf] = integer(field, p - field, f + nf);
                nf++;
                if (*p == '\n')
                    break;
                field = p + 1;
            }
        }
        if (!ok || !record(c, row + line, f, f_int, nf, field, p - field))
            return -1 - line;
        int64_t g = c->gthread[row + line];
        if (c->first_pos[g] < 0)
            c->first_pos[g] = line_start - data;
        p++;
        line++;
    }
    return line;
}

/* The newlines in data[start, stop): how many records a body holds, before parsing it. */
int64_t count_lines(const char *data, int64_t start, int64_t stop)
{
    int64_t n = 0;
    const char *p = data + start, *end = data + stop;
    while ((p = memchr(p, '\n', (size_t) (end - p))) != NULL) {
        n++;
        p++;
    }
    return n;
}
