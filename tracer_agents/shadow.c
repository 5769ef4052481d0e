/* Dependency analysis inside the traced process: the hot path of tareador.
 *
 * The Stalker transform (transform.c) emits inline code that appends one record per memory
 * access to a buffer; when the buffer nears its end, and at every task boundary or allocator
 * call, tr_flush() folds the buffered records into byte-granular shadow memory:
 *   writer[b]  last task instance that wrote byte b (instance id + 1, 0 = nobody)
 *   reader[b]  last instance that read b since it was written (to count each byte once)
 *   object[b]  the user object containing b (object id + 1, 0 = not a user object)
 * Only dependency counts leave the process, never individual accesses.
 *
 * Compiled with gcc -O2 (not Frida's TinyCC) because this loop runs for every traced access.
 * It allocates with mmap only: tr_flush may run while the program is inside malloc.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#define CHUNK_BITS 20
#define CHUNK_SIZE (1UL << CHUNK_BITS)
#define ADDRESS_BITS 47
#define DIRECTORY_SIZE (1UL << (ADDRESS_BITS - CHUNK_BITS))

#define ACCESS_WRITE 0x40000000u
#define ACCESS_SIZE_MASK 0x3fffffffu

enum { KIND_HEAP = 0, KIND_GLOBAL = 1, KIND_STACK = 2 };
enum { DEP_RAW = 0, DEP_WAR = 1, DEP_WAW = 2 };
enum { MARK_ON = 1, MARK_OFF = 2, MARK_START = 3, MARK_END = 4, MARK_DISABLE = 5, MARK_ENABLE = 6 };
enum { ERROR_NONE = 0, ERROR_END_WITHOUT_START = 1, ERROR_END_MISMATCH = 2, ERROR_OPEN_AT_OFF = 3,
       ERROR_TOO_DEEP = 4 };

typedef struct { uint64_t address; uint64_t info; } AccessRecord;

/* Layout shared with transform.c: keep the first three fields in this order. */
typedef struct {
  AccessRecord *cursor;
  AccessRecord *limit;
  uint64_t instructions;
  AccessRecord *buffer;
  uint64_t buffer_records;
  uint64_t accesses;
  uint64_t flushes;
  uint64_t stack_low, stack_high;
  uint64_t private_top;   /* stack bytes below this belong to the running task instance */
  uint32_t current;       /* running task instance */
  uint32_t depth;         /* open tasks */
  uint32_t following;
  uint32_t suppress;      /* inside an allocator: its own accesses are not the program's */
  uint32_t error, error_task, error_name;
  uint64_t error_site;
} TracerState;

typedef struct {
  uint32_t name, parent;
  uint64_t start, end, instructions;
} TaskRow;

typedef struct {
  uint64_t address, size, site;
  uint32_t kind, disabled, alive, pad;
} ObjectRow;

typedef struct {
  uint32_t src, dst, object, kind;
  uint64_t bytes;
} EdgeRow;

typedef struct {
  uint32_t writer[CHUNK_SIZE];
  uint32_t reader[CHUNK_SIZE];
  uint32_t object[CHUNK_SIZE];
} ShadowChunk;

#define MAX_DEPTH 64
#define MAX_NAMES 4096

TracerState tr_state;
static ShadowChunk **directory;
static TaskRow *tasks; static uint64_t task_count, task_capacity;
static ObjectRow *objects; static uint64_t object_count, object_capacity;
static EdgeRow *edges; static uint64_t edge_count, edge_capacity;
static uint32_t open_tasks[MAX_DEPTH];
static uint64_t open_private_top[MAX_DEPTH];
static const char *names[MAX_NAMES]; static uint32_t name_count;
static uint64_t last_switch;

static void *map(uint64_t bytes) {
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

/* Grow a table by doubling, keeping its contents (mremap avoids copying). */
static void *grow(void *table, uint64_t *capacity, uint64_t row_size) {
  uint64_t fresh = *capacity ? *capacity * 2 : 1024;
  void *p = table ? mremap(table, *capacity * row_size, fresh * row_size, MREMAP_MAYMOVE) : map(fresh * row_size);
  if (p == MAP_FAILED || p == NULL) return NULL;
  *capacity = fresh;
  return p;
}

static ShadowChunk *chunk_of(uint64_t address, int create) {
  uint64_t i = address >> CHUNK_BITS;
  if (i >= DIRECTORY_SIZE) return NULL;
  if (!directory[i] && create) directory[i] = map(sizeof(ShadowChunk));
  return directory[i];
}

/* ---- dependency edges: an open-addressing hash table keyed by (src, dst, object, kind) ---- */

static uint32_t *edge_slots; static uint64_t slot_mask;

static uint64_t edge_hash(uint32_t src, uint32_t dst, uint32_t object, uint32_t kind) {
  uint64_t h = ((uint64_t) src * 0x9E3779B97F4A7C15ULL) ^ ((uint64_t) dst * 0xC2B2AE3D27D4EB4FULL)
             ^ ((uint64_t) object * 0x165667B19E3779F9ULL) ^ kind;
  return h ^ (h >> 29);
}

static void rehash(void) {
  uint64_t slots = (slot_mask + 1) * 2;
  if (edge_slots) munmap(edge_slots, (slot_mask + 1) * sizeof(uint32_t));
  edge_slots = map(slots * sizeof(uint32_t));
  slot_mask = slots - 1;
  for (uint64_t e = 0; e < edge_count; e++) {
    EdgeRow *r = &edges[e];
    uint64_t s = edge_hash(r->src, r->dst, r->object, r->kind) & slot_mask;
    while (edge_slots[s]) s = (s + 1) & slot_mask;
    edge_slots[s] = (uint32_t) e + 1;
  }
}

static EdgeRow *edge_for(uint32_t src, uint32_t dst, uint32_t object, uint32_t kind) {
  static EdgeRow *last;
  if (last && last->src == src && last->dst == dst && last->object == object && last->kind == kind)
    return last;
  uint64_t s = edge_hash(src, dst, object, kind) & slot_mask;
  for (;; s = (s + 1) & slot_mask) {
    uint32_t e = edge_slots[s];
    if (!e) break;
    EdgeRow *r = &edges[e - 1];
    if (r->src == src && r->dst == dst && r->object == object && r->kind == kind) return last = r;
  }
  if (edge_count == edge_capacity) {
    EdgeRow *grown = grow(edges, &edge_capacity, sizeof(EdgeRow));
    if (!grown) return NULL;
    edges = grown;
    last = NULL;
  }
  EdgeRow *r = &edges[edge_count++];
  r->src = src; r->dst = dst; r->object = object; r->kind = kind; r->bytes = 0;
  edge_slots[s] = (uint32_t) edge_count;
  if (edge_count * 2 > slot_mask) rehash();
  return last = r;
}

/* Consecutive bytes of one access nearly always share their last writer and object: count them
 * as one run instead of one hash-table update per byte. */
typedef struct { uint32_t src, object, kind; uint64_t bytes; } EdgeRun;

static inline void run_flush(EdgeRun *run, uint32_t dst) {
  if (run->bytes) {
    EdgeRow *r = edge_for(run->src, dst, run->object, run->kind);
    if (r) r->bytes += run->bytes;
    run->bytes = 0;
  }
}

static inline void run_add(EdgeRun *run, uint32_t src, uint32_t object, uint32_t dst) {
  if (run->bytes && (run->src != src || run->object != object)) run_flush(run, dst);
  run->src = src; run->object = object; run->bytes++;
}

static inline int object_enabled(uint32_t object) {
  return object && !objects[object - 1].disabled;
}

static inline int uniform(const uint32_t *a, uint32_t v, uint64_t n) {
  uint32_t differ = 0;
#pragma GCC unroll 8
  for (uint64_t k = 0; k < n; k++) differ |= a[k] ^ v;
  return !differ;
}

/* The common case: a word whose bytes share object, last writer and last reader (any data
 * written or read as whole words). Returns 0 when the bytes differ and need the byte loop. */
static inline int analyse_word(ShadowChunk *c, uint64_t i, uint64_t n, int is_write, uint32_t me) {
  uint32_t object = c->object[i], w = c->writer[i], r = c->reader[i];
  if (!uniform(&c->object[i], object, n) || !uniform(&c->writer[i], w, n) || !uniform(&c->reader[i], r, n))
    return 0;
  if (!object_enabled(object)) return 1;
  if (!is_write) {
    if (r == me) return 1;
    for (uint64_t k = 0; k < n; k++) c->reader[i + k] = me;
    if (w && w != me) { EdgeRow *e = edge_for(w - 1, me - 1, object - 1, DEP_RAW); if (e) e->bytes += n; }
  } else {
    if (w == me && !r) return 1;
    if (w && w != me) { EdgeRow *e = edge_for(w - 1, me - 1, object - 1, DEP_WAW); if (e) e->bytes += n; }
    if (r && r != me) { EdgeRow *e = edge_for(r - 1, me - 1, object - 1, DEP_WAR); if (e) e->bytes += n; }
    for (uint64_t k = 0; k < n; k++) { c->writer[i + k] = me; c->reader[i + k] = 0; }
  }
  return 1;
}

/* One access's bytes [i, i + n) inside chunk c, by task instance me (ids are +1 in shadow). */
static void analyse_in_chunk(ShadowChunk *c, uint64_t i, uint64_t n, int is_write, uint32_t me) {
  if (n == 8 ? analyse_word(c, i, 8, is_write, me) : n == 4 ? analyse_word(c, i, 4, is_write, me) : 0)
    return;
  EdgeRun raw = { 0, 0, DEP_RAW, 0 }, waw = { 0, 0, DEP_WAW, 0 }, war = { 0, 0, DEP_WAR, 0 };
  uint32_t checked_object = 0;
  for (uint64_t end = i + n; i < end; i++) {
    uint32_t object = c->object[i];
    if (object != checked_object) {
      if (!object_enabled(object)) continue;
      checked_object = object;
    }
    uint32_t w = c->writer[i], r = c->reader[i];
    if (!is_write) {
      if (r == me) continue;
      c->reader[i] = me;
      if (w && w != me) run_add(&raw, w - 1, object - 1, me - 1);
    } else {
      if (w == me && !r) continue;
      if (w && w != me) run_add(&waw, w - 1, object - 1, me - 1);
      if (r && r != me) run_add(&war, r - 1, object - 1, me - 1);
      c->writer[i] = me;
      c->reader[i] = 0;
    }
  }
  run_flush(&raw, me - 1);
  run_flush(&waw, me - 1);
  run_flush(&war, me - 1);
}

static void analyse(uint64_t address, uint64_t size, int is_write, uint32_t me) {
  uint64_t end = address + size;
  if (address < tr_state.private_top && end > tr_state.stack_low) {
    if (end <= tr_state.private_top) return;
    address = tr_state.private_top;
  }
  while (address < end) {
    uint64_t chunk_end = (address | (CHUNK_SIZE - 1)) + 1;
    uint64_t stop = end < chunk_end ? end : chunk_end;
    ShadowChunk *c = chunk_of(address, 0);
    if (c) analyse_in_chunk(c, address & (CHUNK_SIZE - 1), stop - address, is_write, me);
    address = stop;
  }
}

void tr_flush(void) {
  AccessRecord *r = tr_state.buffer, *end = tr_state.cursor;
  tr_state.cursor = tr_state.buffer;
  if (tr_state.suppress || !tr_state.following) return;
  uint32_t me = tr_state.current + 1;
  tr_state.accesses += (uint64_t) (end - r);
  tr_state.flushes++;
  for (; r < end; r++) {
    uint32_t info = (uint32_t) r->info;
    analyse(r->address, info & ACCESS_SIZE_MASK, (info & ACCESS_WRITE) != 0, me);
  }
}

/* Stalker callout signature: (GumCpuContext *, gpointer). */
void tr_flush_callout(void *cpu_context, void *user_data) {
  (void) cpu_context; (void) user_data;
  tr_flush();
}

/* ---- objects ---- */

static void fill_range(uint64_t address, uint64_t size, uint32_t object, int keep_history) {
  uint64_t end = address + size;
  while (address < end) {
    uint64_t chunk_end = (address | (CHUNK_SIZE - 1)) + 1;
    uint64_t stop = end < chunk_end ? end : chunk_end;
    ShadowChunk *c = chunk_of(address, object != 0);
    if (c) {
      uint64_t i = address & (CHUNK_SIZE - 1), n = stop - address;
      for (uint64_t k = 0; k < n; k++) c->object[i + k] = object;
      if (!keep_history) {
        memset(&c->writer[i], 0, n * sizeof(uint32_t));
        memset(&c->reader[i], 0, n * sizeof(uint32_t));
      }
    }
    address = stop;
  }
}

/* Returns the object id, or -1 when out of memory. keep_history renames memory in continuous
 * use (stack frames) instead of starting a fresh object. */
int64_t tr_add_object(uint64_t address, uint64_t size, uint32_t kind, uint64_t site, uint32_t keep_history) {
  if (object_count == object_capacity) {
    ObjectRow *grown = grow(objects, &object_capacity, sizeof(ObjectRow));
    if (!grown) return -1;
    objects = grown;
  }
  ObjectRow *o = &objects[object_count];
  o->address = address; o->size = size; o->site = site; o->kind = kind;
  o->disabled = 0; o->alive = 1;
  fill_range(address, size, (uint32_t) object_count + 1, keep_history);
  return (int64_t) object_count++;
}

static uint32_t object_at(uint64_t address) {
  ShadowChunk *c = chunk_of(address, 0);
  return c ? c->object[address & (CHUNK_SIZE - 1)] : 0;
}

/* free(): the object ends; nothing flows from it to a later block at the same address. */
void tr_remove_object_at(uint64_t address) {
  uint32_t id = object_at(address);
  if (!id || objects[id - 1].address != address) return;
  ObjectRow *o = &objects[id - 1];
  o->alive = 0;
  fill_range(o->address, o->size, 0, 0);
}

/* realloc() that moved a block: the new block inherits the last writer of every moved byte. */
void tr_move_object(uint64_t old_address, uint64_t new_address, uint64_t new_size, uint64_t site) {
  uint32_t id = old_address ? object_at(old_address) : 0;
  if (!id || objects[id - 1].address != old_address) {
    tr_add_object(new_address, new_size, KIND_HEAP, site, 0);
    return;
  }
  ObjectRow *old = &objects[id - 1];
  uint64_t moved = old->size < new_size ? old->size : new_size;
  int64_t fresh = tr_add_object(new_address, new_size, KIND_HEAP, site, 0);
  if (fresh < 0) return;
  for (uint64_t k = 0; k < moved; k++) {
    ShadowChunk *from = chunk_of(old_address + k, 0), *to = chunk_of(new_address + k, 0);
    if (from && to)
      to->writer[(new_address + k) & (CHUNK_SIZE - 1)] = from->writer[(old_address + k) & (CHUNK_SIZE - 1)];
  }
  if (old_address != new_address) {
    old->alive = 0;
    if (new_address >= old_address + old->size || new_address + new_size <= old_address)
      fill_range(old_address, old->size, 0, 0);
  }
}

/* calloc(): the allocating task instance wrote the zeros. */
void tr_mark_written(uint64_t address, uint64_t size) {
  if (!tr_state.following) return;
  uint32_t me = tr_state.current + 1;
  for (uint64_t k = 0; k < size; k++) {
    ShadowChunk *c = chunk_of(address + k, 0);
    if (c) c->writer[(address + k) & (CHUNK_SIZE - 1)] = me;
  }
}

/* ---- task instances ---- */

static int64_t new_task(uint32_t name, uint32_t parent) {
  if (task_count == task_capacity) {
    TaskRow *grown = grow(tasks, &task_capacity, sizeof(TaskRow));
    if (!grown) return -1;
    tasks = grown;
  }
  TaskRow *t = &tasks[task_count];
  t->name = name; t->parent = parent;
  t->start = t->end = tr_state.instructions; t->instructions = 0;
  return (int64_t) task_count++;
}

static uint32_t intern(const char *name) {
  for (uint32_t i = 0; i < name_count; i++)
    if (names[i] == name || (name && names[i] && strcmp(names[i], name) == 0)) return i;
  if (name_count == MAX_NAMES) return MAX_NAMES - 1;
  names[name_count] = name;
  return name_count++;
}

/* Charge the instructions executed since the last switch to the running instance. */
static void settle(void) {
  TaskRow *t = &tasks[tr_state.current];
  t->instructions += tr_state.instructions - last_switch;
  t->end = tr_state.instructions;
  last_switch = tr_state.instructions;
}

static void fail(uint32_t error, uint32_t name, uint64_t site) {
  if (tr_state.error) return;
  tr_state.error = error;
  tr_state.error_task = (uint32_t) task_count;
  tr_state.error_name = name;
  tr_state.error_site = site;
}

static void begin_main_fragment(void) {
  int64_t id = new_task(0, UINT32_MAX);
  if (id >= 0) tr_state.current = (uint32_t) id;
  tr_state.private_top = 0;
}

/* Names the live frames above a task's start (frame-pointer chain; -O0 code keeps one) so that
 * dependencies through a caller's local arrays say whose locals they are. */
static void register_frames(uint64_t sp, uint64_t rbp) {
  uint64_t low = sp + 8, site = *(uint64_t *) sp;
  for (int depth = 0; depth < 32; depth++) {
    if (rbp <= low || rbp < tr_state.stack_low || rbp + 16 > tr_state.stack_high || (rbp & 7)) return;
    uint64_t high = rbp + 16;
    uint32_t id = object_at(low);
    ObjectRow *o = id ? &objects[id - 1] : NULL;
    if (!o || o->kind != KIND_STACK || o->address != low || o->size != high - low)
      tr_add_object(low, high - low, KIND_STACK, site, 1);
    site = *(uint64_t *) (rbp + 8);
    low = high;
    rbp = *(uint64_t *) rbp;
  }
}

/* A marker was reached: kind is MARK_*, argument is its argument, sp the stack pointer at the
 * marker's first instruction (pointing at the return address into the caller). */
void tr_marker(uint32_t kind, uint64_t argument, uint64_t sp, uint64_t return_address, uint64_t rbp) {
  tr_flush();
  switch (kind) {
  case MARK_ON:
    if (tr_state.following) break;
    tr_state.following = 1;
    last_switch = tr_state.instructions;
    register_frames(sp, rbp);
    begin_main_fragment();
    break;
  case MARK_OFF:
    if (!tr_state.following) break;
    settle();
    tr_state.following = 0;
    if (tr_state.depth)
      fail(ERROR_OPEN_AT_OFF, tasks[open_tasks[tr_state.depth - 1]].name, return_address);
    tr_state.depth = 0;
    break;
  case MARK_START: {
    uint32_t name = intern((const char *) argument);
    settle();
    if (tr_state.depth == MAX_DEPTH) { fail(ERROR_TOO_DEEP, name, return_address); break; }
    open_private_top[tr_state.depth] = tr_state.private_top;
    register_frames(sp, rbp);
    int64_t id = new_task(name, tr_state.current);
    if (id < 0) break;
    open_tasks[tr_state.depth++] = (uint32_t) id;
    tr_state.current = (uint32_t) id;
    tr_state.private_top = sp;
    break;
  }
  case MARK_END: {
    uint32_t name = intern((const char *) argument);
    settle();
    if (!tr_state.depth) { fail(ERROR_END_WITHOUT_START, name, return_address); break; }
    uint32_t open = open_tasks[tr_state.depth - 1];
    if (tasks[open].name != name) fail(ERROR_END_MISMATCH, name, return_address);
    tr_state.depth--;
    tr_state.private_top = open_private_top[tr_state.depth];
    if (tr_state.depth) tr_state.current = open_tasks[tr_state.depth - 1];
    else begin_main_fragment();
    break;
  }
  case MARK_DISABLE:
  case MARK_ENABLE: {
    uint32_t id = object_at(argument);
    if (id) objects[id - 1].disabled = kind == MARK_DISABLE;
    break;
  }
  }
}

/* The run ends (exit, crash, interrupt): charge what ran since the last marker. */
void tr_finish(void) {
  tr_flush();
  if (tr_state.following) settle();
  if (tr_state.following && tr_state.depth)
    fail(ERROR_OPEN_AT_OFF, tasks[open_tasks[tr_state.depth - 1]].name, 0);
  tr_state.following = 0;
}

/* Allocator calls: their own accesses (headers, tcache links, realloc's copy) are not the
 * program's; discard them. */
void tr_enter_allocator(void) { tr_flush(); tr_state.suppress++; }
void tr_leave_allocator(void) { tr_flush(); if (tr_state.suppress) tr_state.suppress--; }

int tr_init(uint64_t buffer_records, uint64_t stack_low, uint64_t stack_high) {
  directory = map(DIRECTORY_SIZE * sizeof(ShadowChunk *));
  tr_state.buffer = map(buffer_records * sizeof(AccessRecord));
  edge_slots = map(1024 * sizeof(uint32_t));
  slot_mask = 1023;
  if (!directory || !tr_state.buffer || !edge_slots) return -1;
  tr_state.buffer_records = buffer_records;
  tr_state.cursor = tr_state.buffer;
  /* Headroom: a block checks the limit once, then may append up to this many records. */
  tr_state.limit = tr_state.buffer + buffer_records - 4096;
  tr_state.stack_low = stack_low;
  tr_state.stack_high = stack_high;
  intern("main");
  return 0;
}

/* Accessors for the agent, which copies the tables out at the end of the run. */
TaskRow *tr_tasks(uint64_t *count) { *count = task_count; return tasks; }
ObjectRow *tr_objects(uint64_t *count) { *count = object_count; return objects; }
EdgeRow *tr_edges(uint64_t *count) { *count = edge_count; return edges; }
/* Counters and the first annotation error, for progress reports and the final summary. */
void tr_status(uint64_t out[8]) {
  out[0] = tr_state.accesses; out[1] = tr_state.flushes; out[2] = task_count;
  out[3] = tr_state.error; out[4] = tr_state.error_task; out[5] = tr_state.error_name;
  out[6] = tr_state.error_site; out[7] = tr_state.instructions;
}
const char *tr_name(uint32_t i) { return i < name_count ? names[i] : NULL; }
uint32_t tr_name_count(void) { return name_count; }
