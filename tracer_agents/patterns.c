/* Communication patterns of an MPI rank (thesis ch. 4.2 and 5.4), in one run: for every element
 * of a sent message the instruction time of its last write before the send (production), and for
 * every element of a received message the time of its first read after the receive completed
 * (consumption).
 *
 * Only under `trace --mpi`. The transform (transform.c) then emits, before the first access of
 * each block, a time record {instruction counter, TIME_INFO}: the counter already includes the
 * block, so an access's time is exact to within its block (tens of instructions). tr_flush hands
 * every record to tr_pattern_record before its own analysis. Two shadows follow memory, mapped
 * per 1 MiB chunk on first use and costing memory only where touched:
 *   written[g]  the time of the last write to 4-byte granule g (the dependency shadow keeps the
 *               writer fragment, not a time, and a fragment may be millions of instructions);
 *   watch[g]    the received message whose buffer holds g (pattern row + 1, 0 none): a read of a
 *               watched granule is a first read if its element has none yet, a write before any
 *               read means the element was overwritten unconsumed.
 * A watch lasts from the completion of its receive to the next receive into any of its bytes (or
 * the end of the run). Times are kept raw; tareador/analyses/patterns.py turns them into
 * fractions of the intervals.
 */
#define _GNU_SOURCE
#include <stdint.h>

#define CHUNK_BITS 20
#define CHUNK_SIZE (1UL << CHUNK_BITS)
#define ADDRESS_BITS 47
#define DIRECTORY_SIZE (1UL << (ADDRESS_BITS - CHUNK_BITS))
#define GRANULE 4
#define GRANULES (CHUNK_SIZE / GRANULE)

#define ACCESS_WRITE 0x40000000u
#define ACCESS_SIZE_MASK 0x3fffffffu
#define TIME_INFO UINT64_MAX       /* a time record's info word (no access has it) */
#define UNREAD UINT64_MAX          /* a received element not read yet */
#define OVERWRITTEN (UINT64_MAX - 1)   /* ... written by the program before any read */
#define OPEN UINT64_MAX            /* a watch not ended yet */

extern void *tr_map_at(uint64_t hint, uint64_t bytes);

typedef struct {
  uint64_t written[GRANULES];
  uint32_t watch[GRANULES];
  uint64_t watched;   /* some granule of the chunk is watched: reads need a look */
} TimeChunk;

/* One row per message buffer, shipped to Python (decode.py's PATTERN_ROW). call: the mpi.c row of
 * the send, receive or collective; at: the send's or the completion's time; first: where its
 * elements' times start in the times table; end: when its watch ended (receives). */
typedef struct {
  uint64_t call, address, bytes, element, at, first, end;
  uint32_t receive, pad;
} PatternRow;

uint32_t tr_patterns_on;
uint64_t tr_access_time;   /* the time of the accesses being analysed */
static TimeChunk **time_directory;
/* Both tables are reserved once, far away (map_far), and never move: pages cost memory only once
 * written. The reservation halves until the system grants it (strict overcommit); a run with
 * more rows or element times than reserved records no more patterns. */
#define MAX_ROWS (1UL << 26)
#define MAX_TIMES (1UL << 33)
#define MIN_RESERVED (1UL << 20)
static PatternRow *rows; static uint64_t row_count, row_capacity;
static uint64_t *times; static uint64_t time_count, time_capacity;
static uint64_t dropped;   /* buffers not recorded: the tables were full */

/* The time shadow is mapped far from the libraries (from PLACE up): mapped next to them, it
 * pushes the code slabs Stalker maps later beyond 2 GiB of the agent's stubs, and Frida 17's
 * relocation of their RIP-relative loads from that distance is wrong (it crashed MPI_Send). */
#define PLACE 0x300000000000UL
static uint64_t place = PLACE;

static void *map_far(uint64_t bytes) {
  void *p = tr_map_at(place, bytes);
  if (p) place = (uint64_t) p + ((bytes + 4095) & ~4095UL);
  return p;
}

static void *reserve(uint64_t *capacity, uint64_t most, uint64_t row_size) {
  for (*capacity = most; *capacity >= MIN_RESERVED; *capacity /= 2) {
    void *p = map_far(*capacity * row_size);
    if (p) return p;
  }
  return 0;
}

int tr_patterns_enable(void) {
  time_directory = map_far(DIRECTORY_SIZE * sizeof(TimeChunk *));
  rows = reserve(&row_capacity, MAX_ROWS, sizeof(PatternRow));
  times = reserve(&time_capacity, MAX_TIMES, sizeof(uint64_t));
  if (!time_directory || !rows || !times) return -1;
  tr_patterns_on = 1;
  return 0;
}

static TimeChunk *time_chunk(uint64_t address, int create) {
  uint64_t i = address >> CHUNK_BITS;
  if (i >= DIRECTORY_SIZE) return 0;
  if (!time_directory[i] && create) time_directory[i] = map_far(sizeof(TimeChunk));
  return time_directory[i];
}

/* The bytes [lo, hi) of watched message w were read or written. */
static void observe(uint32_t w, uint64_t lo, uint64_t hi, int is_write) {
  PatternRow *m = &rows[w];
  if (m->end != OPEN) return;
  if (lo < m->address) lo = m->address;
  if (hi > m->address + m->bytes) hi = m->address + m->bytes;
  for (uint64_t e = (lo - m->address) / m->element; lo < hi && e <= (hi - 1 - m->address) / m->element; e++) {
    uint64_t *t = &times[m->first + e];
    if (*t == UNREAD) *t = is_write ? OVERWRITTEN : tr_access_time;
  }
}

static void access_range(uint64_t address, uint64_t size, int is_write) {
  for (uint64_t end = address + size; address < end;) {
    uint64_t stop = (address | (CHUNK_SIZE - 1)) + 1;
    if (stop > end) stop = end;
    TimeChunk *c = time_chunk(address, is_write);
    uint64_t base = address & ~(CHUNK_SIZE - 1);
    uint64_t g = (address - base) / GRANULE, last = (stop - 1 - base) / GRANULE;
    if (c && is_write)
      for (uint64_t k = g; k <= last; k++) c->written[k] = tr_access_time;
    if (c && c->watched)
      for (uint64_t k = g; k <= last; k++)
        if (c->watch[k]) {
          uint64_t lo = base + k * GRANULE, hi = lo + GRANULE;
          observe(c->watch[k] - 1, lo < address ? address : lo, hi > stop ? stop : hi, is_write);
        }
    address = stop;
  }
}

/* A record of the access buffer; returns 1 for a time record (not an access). */
int tr_pattern_record(uint64_t address, uint64_t info) {
  if (info == TIME_INFO) {
    tr_access_time = address;
    return 1;
  }
  access_range(address, (uint32_t) info & ACCESS_SIZE_MASK, (info & ACCESS_WRITE) != 0);
  return 0;
}

static PatternRow *new_row(uint64_t call, uint64_t address, uint64_t bytes, uint64_t element, uint32_t receive) {
  if (!tr_patterns_on || !bytes) return 0;
  if (element == 0) element = 1;
  uint64_t n = (bytes + element - 1) / element;
  if (time_count + n > time_capacity || row_count == row_capacity) {
    dropped++;
    return 0;
  }
  PatternRow *m = &rows[row_count++];
  m->call = call; m->address = address; m->bytes = bytes; m->element = element;
  m->at = tr_access_time; m->first = time_count; m->end = OPEN; m->receive = receive; m->pad = 0;
  time_count += n;
  return m;
}

/* A send of [address, address + bytes) in elements of element bytes, made by mpi.c row call:
 * each element's time is the last write of any of its granules (0: not written while traced). */
void tr_pattern_send(uint64_t call, uint64_t address, uint64_t bytes, uint64_t element) {
  PatternRow *m = new_row(call, address, bytes, element, 0);
  if (!m) return;
  for (uint64_t e = 0, n = time_count - m->first; e < n; e++) {
    uint64_t lo = address + e * m->element, hi = lo + m->element, latest = 0;
    if (hi > address + bytes) hi = address + bytes;
    for (uint64_t b = lo & ~(uint64_t) (GRANULE - 1); b < hi; b += GRANULE) {
      TimeChunk *c = time_chunk(b, 0);
      uint64_t t = c ? c->written[(b & (CHUNK_SIZE - 1)) / GRANULE] : 0;
      if (t > latest) latest = t;
    }
    times[m->first + e] = latest;
  }
}

/* A receive into [address, address + bytes) completed (its buffer is already written): the
 * watches over those bytes end, and a new one starts. */
void tr_pattern_receive(uint64_t call, uint64_t address, uint64_t bytes, uint64_t element) {
  PatternRow *m = new_row(call, address, bytes, element, 1);
  if (!m) return;
  uint32_t id = (uint32_t) (m - rows) + 1;
  for (uint64_t e = m->first; e < time_count; e++) times[e] = UNREAD;
  for (uint64_t b = address & ~(uint64_t) (GRANULE - 1); b < address + bytes; b += GRANULE) {
    TimeChunk *c = time_chunk(b, 1);
    if (!c) return;
    uint32_t *w = &c->watch[(b & (CHUNK_SIZE - 1)) / GRANULE];
    if (*w && *w != id && rows[*w - 1].end == OPEN) rows[*w - 1].end = tr_access_time;
    *w = id;
    c->watched = 1;
  }
}

/* The tables for the agent, at the end. */
PatternRow *tr_pattern_rows(uint64_t *count) { *count = row_count; return rows; }
uint64_t *tr_pattern_times(uint64_t *count) { *count = time_count; return times; }
uint64_t tr_patterns_dropped(void) { return dropped; }
