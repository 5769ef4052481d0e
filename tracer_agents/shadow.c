/* Dependency analysis inside the traced process: the hot path of tareador.
 *
 * The Stalker transform (transform.c) emits inline code that appends one record per memory
 * access to a buffer; when the buffer nears its end, and at every task boundary or allocator
 * call, tr_flush() folds the buffered records into byte-granular shadow memory. Each byte b has
 *   writer  last task instance that wrote b (instance id + 1, 0 = nobody)
 *   reader  last instance that read b since it was written (to count each byte once)
 *   object  the user object containing b (object id + 1, 0 = not a user object)
 * Programs nearly always access whole aligned 4-byte granules, whose 4 bytes then agree, so
 * the shadow keeps one (writer, reader) per granule, side by side so that an access costs one
 * cache line of shadow, and the object once per page for pages wholly inside one object (per
 * granule where objects meet): 2 bytes of shadow per byte instead of 12, which is what bounds
 * the speed of a memory-bound program's analysis. A granule whose bytes come to differ (a char
 * written alone, an object boundary inside it) is "split": its writer word holds SPLIT | slot,
 * and the slot keeps the three words for each of its bytes, until an access makes them agree
 * again. Semantics stay byte-granular either way.
 * Shadow memory follows what the program touches, not what it allocates: the granules of a new
 * object stay zero, i.e. memory never mapped, until the program touches them; starting or ending
 * an object costs a few words per page, and ending a touched one gives its shadow back.
 * A latent object (a block a system library allocated) keeps writers and readers like any
 * object but gives no edges until the program's own code touches it (a record flagged
 * ACCESS_PROGRAM): libc's own buffers stay out, blocks it hands to the program come in with
 * their history.
 * Only dependency counts leave the process, never individual accesses.
 *
 * Compiled with gcc -O2 (not Frida's TinyCC) because this loop runs for every traced access.
 * It allocates with system calls only: tr_flush may run while the program is inside malloc
 * (and see sys() below).
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include "system.h"

#define CHUNK_BITS 20
#define CHUNK_SIZE (1UL << CHUNK_BITS)
#define ADDRESS_BITS 47
#define DIRECTORY_SIZE (1UL << (ADDRESS_BITS - CHUNK_BITS))

#define ACCESS_WRITE 0x40000000u
#define ACCESS_PROGRAM 0x80000000u
#define ACCESS_SIZE_MASK 0x3fffffffu

enum { KIND_HEAP = 0, KIND_GLOBAL = 1, KIND_STACK = 2 };
enum { DEP_RAW = 0, DEP_WAR = 1, DEP_WAW = 2 };
enum { MARK_ON = 1, MARK_OFF = 2, MARK_START = 3, MARK_END = 4, MARK_DISABLE = 5, MARK_ENABLE = 6 };
enum { ERROR_NONE = 0, ERROR_END_WITHOUT_START = 1, ERROR_END_MISMATCH = 2, ERROR_OPEN_AT_OFF = 3,
       ERROR_TOO_DEEP = 4 };

typedef struct { uint64_t address; uint64_t info; } AccessRecord;

/* Layout shared with transform.c: keep the first five fields in this order. */
typedef struct {
  AccessRecord *cursor;
  AccessRecord *limit;
  uint64_t instructions;
  uint64_t string_start[2];   /* rdi and rsi before a repeated string instruction (transform.c) */
  AccessRecord *buffer;
  uint64_t buffer_records;
  uint64_t accesses;
  uint64_t flushes;
  uint64_t stack_low, stack_high;
  uint32_t current;       /* running task instance */
  uint32_t depth;         /* open tasks */
  uint32_t following;
  uint32_t suppress;      /* inside an allocator: its own accesses are not the program's */
  uint32_t error, error_task, error_name;
  uint64_t error_site;
} TracerState;

/* One row per fragment: a task instance that creates children is cut at each creation, so that
 * a child can start right after the code that created it and the parent's later code waits only
 * for what it reads. instance = id of the instance's first fragment (main's fragments share one);
 * parent = the fragment that created the instance (NO_PARENT for main). */
typedef struct {
  uint32_t name, parent, instance, pad;
  uint64_t start, end, instructions;
} TaskRow;

typedef struct {
  uint64_t address, size, site;
  uint32_t kind, disabled, alive, latent;
} ObjectRow;

typedef struct {
  uint32_t src, dst, object, kind;
  uint64_t bytes;
} EdgeRow;

#define GRANULE 4
#define GRANULES (CHUNK_SIZE / GRANULE)
#define PAGE 4096
#define PAGES (CHUNK_SIZE / PAGE)
#define PAGE_GRANULES (PAGE / GRANULE)
#define SPLIT 0x80000000u

/* What the shadow says of one byte; a granule that is not split says it of its 4 bytes. */
typedef struct { uint32_t writer, reader, object; } Shadow;

typedef struct { uint32_t writer, reader; } Granule;   /* writer: SPLIT | slot if split */

/* A page wholly inside one object says so once, in page_object, and then the object words of
 * its granules are not used; elsewhere (pages where objects meet, or of no object) each granule
 * has its object word. A granule's writer 0 stands for page_writer (calloc's zeros). Only a
 * "touched" page may have granules that are not zero, only a "spelt" one object words that are
 * not: the shadow of the others has never been written, and costs no memory. */
typedef struct {
  Granule granule[GRANULES];   /* page-aligned: one page's granules are 2 whole pages of shadow */
  uint32_t object[GRANULES];   /* one page's object words are 1 page of shadow */
  uint32_t page_object[PAGES];
  uint32_t page_writer[PAGES];
  uint16_t page_splits[PAGES];   /* split granules in the page */
  uint8_t touched[PAGES];
  uint8_t spelt[PAGES];
} ShadowChunk;

typedef struct { Shadow byte[GRANULE]; } SplitGranule;

#define MAX_DEPTH 1024
#define NO_PARENT UINT32_MAX
#define MAX_NAMES 4096

#define CALL_ARGS 8   /* the 6 integer argument registers, then the first 2 words passed on the stack */

/* The open task instances, innermost last: the instance (its first fragment), its latest
 * fragment, its name, the fragment that created it, and once it called its body (tr_task_call)
 * the call's argument values, sorted. */
typedef struct { uint32_t instance, last, name, parent, cut_count; uint64_t cuts[CALL_ARGS]; } OpenTask;

/* What the analysis needs of every fragment for the whole run (its row leaves the process):
 * its instance, the top of its private stack (as an offset from the stack's low end, 0 none:
 * see dead_frame) and the end of its longest path in the task graph (see end_fragment). */
typedef struct { uint32_t instance, top; uint64_t finish; } Fragment;

TracerState tr_state;
static ShadowChunk **directory;
static uint64_t table_rows;   /* the rows each streamed table keeps before writing them out */
static TaskRow *task_rows; static uint64_t task_count, task_first;   /* rows of fragments task_first.. */
static Fragment *fragments; static uint64_t fragment_capacity;
static ObjectRow *objects; static uint64_t object_count, object_capacity;
static EdgeRow *edges; static uint64_t edge_count;
static SplitGranule *splits; static uint64_t split_count, split_capacity;
static uint32_t split_free;   /* free slots, linked through byte[0].writer; slot + 1, 0 = none */
static OpenTask open_tasks[MAX_DEPTH];
static uint32_t main_instance = NO_PARENT, last_main = NO_PARENT;
static int task_file = -1, edge_file = -1, access_file = -1, call_file = -1;
static uint64_t instance_count;   /* task instances, not counting main or later fragments */
static const char *names[MAX_NAMES]; static uint32_t name_count;
static uint64_t last_switch;

/* No loop that GCC may turn into a call to memset (see system.h). */
#pragma GCC optimize ("no-tree-loop-distribute-patterns")

static void *address_or_null(long result) {
  return result < 0 && result > -4096 ? NULL : (void *) result;
}

static void *map(uint64_t bytes) {
  return address_or_null(sys(SYS_mmap, 0, (long) bytes, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
}

/* Grow a table by doubling, keeping its contents (mremap avoids copying). */
static void *grow(void *table, uint64_t *capacity, uint64_t row_size) {
  uint64_t fresh = *capacity ? *capacity * 2 : 1024;
  void *p = table ? address_or_null(sys(SYS_mremap, (long) table, (long) (*capacity * row_size), (long) (fresh * row_size),
                                        MREMAP_MAYMOVE, 0, 0))
                  : map(fresh * row_size);
  if (p == NULL) return NULL;
  *capacity = fresh;
  return p;
}

static int advise(void *address, uint64_t bytes, int advice) {
  return (int) sys(SYS_madvise, (long) address, (long) bytes, advice, 0, 0, 0);
}

static ShadowChunk *chunk_of(uint64_t address, int create) {
  uint64_t i = address >> CHUNK_BITS;
  if (i >= DIRECTORY_SIZE) return NULL;
  if (!directory[i] && create) directory[i] = map(sizeof(ShadowChunk));
  return directory[i];
}

/* ---- the streamed tables: rows that are final leave for their file (tables.c) ----
 * Only the running fragment's rows still change: its TaskRow (the last one), its edges (edges
 * are counted per destination, and the destination is the running fragment), its access hulls
 * and its call. A buffer that fills is written out whole (the running fragment's task row and
 * call stay); should the running fragment's own edges or hulls fill it, their rows continue in
 * new rows, which the driver adds together (decode.py). */

extern void tr_table_append(int table, const void *data, uint64_t bytes);
extern int tr_table_open(const char *name);

static void write_rows(int file, void *rows, uint64_t *count, uint64_t row_size) {
  tr_table_append(file, rows, *count * row_size);
  *count = 0;
}

/* ---- dependency edges: an open-addressing hash table keyed by (src, dst, object, kind) over
 * the rows not yet written ---- */

static uint32_t *edge_slots; static uint64_t slot_mask;
static EdgeRow *last_edge;
static uint64_t running_raw;   /* the latest end of a RAW source of the running fragment */

static uint64_t edge_hash(uint32_t src, uint32_t dst, uint32_t object, uint32_t kind) {
  uint64_t h = ((uint64_t) src * 0x9E3779B97F4A7C15ULL) ^ ((uint64_t) dst * 0xC2B2AE3D27D4EB4FULL)
             ^ ((uint64_t) object * 0x165667B19E3779F9ULL) ^ kind;
  return h ^ (h >> 29);
}

static void write_edges(void) {
  write_rows(edge_file, edges, &edge_count, sizeof(EdgeRow));
  for (uint64_t s = 0; s <= slot_mask; s++) edge_slots[s] = 0;
  last_edge = NULL;
}

static EdgeRow *edge_for(uint32_t src, uint32_t dst, uint32_t object, uint32_t kind) {
  EdgeRow *last = last_edge;
  if (last && last->src == src && last->dst == dst && last->object == object && last->kind == kind)
    return last;
  uint64_t s = edge_hash(src, dst, object, kind) & slot_mask;
  for (;; s = (s + 1) & slot_mask) {
    uint32_t e = edge_slots[s];
    if (!e) break;
    EdgeRow *r = &edges[e - 1];
    if (r->src == src && r->dst == dst && r->object == object && r->kind == kind) return last_edge = r;
  }
  if (edge_count == table_rows) {
    write_edges();
    s = edge_hash(src, dst, object, kind) & slot_mask;
  }
  EdgeRow *r = &edges[edge_count++];
  r->src = src; r->dst = dst; r->object = object; r->kind = kind; r->bytes = 0;
  edge_slots[s] = (uint32_t) edge_count;
  if (kind == DEP_RAW && fragments[src].finish > running_raw) running_raw = fragments[src].finish;
  return last_edge = r;
}

/* Consecutive accesses of one flush (one task instance) nearly always share the last writer and
 * the object of what they touch: count them as one run per dependency kind instead of one
 * hash-table update per access. */
typedef struct { uint32_t src, object, kind; uint64_t bytes; } EdgeRun;
typedef struct { EdgeRun raw, waw, war; } EdgeRuns;

static inline void run_flush(EdgeRun *run, uint32_t dst) {
  if (run->bytes) {
    EdgeRow *r = edge_for(run->src, dst, run->object, run->kind);
    if (r) r->bytes += run->bytes;
    run->bytes = 0;
  }
}

/* Callers leave out latent objects: they give no edges. */
static inline void run_add(EdgeRun *run, uint32_t src, uint32_t object, uint32_t dst, uint64_t bytes) {
  if (run->bytes && (run->src != src || run->object != object)) run_flush(run, dst);
  run->src = src; run->object = object; run->bytes += bytes;
}

/* The call a task instance makes right after its tareador_start_task (the usual `start; f(args);
 * end`): the transform puts a callout on it, in the blocks that begin at a return address of
 * tareador_start_task (tr_task_sites), and tareador hints names the objects by f's parameters. */
#define MAX_TASK_SITES 256
uint64_t tr_task_sites[MAX_TASK_SITES + 1];   /* 0-ended */
static uint32_t task_site_count;

typedef struct { uint32_t fragment, pad; uint64_t site, function, args[CALL_ARGS]; } CallRow;
static CallRow *call_rows; static uint64_t call_count;
static uint32_t call_fragment = NO_PARENT;   /* the fragment of the latest call row */

/* A set of distinct non-zero values (code addresses), kept in insertion order too. */
typedef struct { uint64_t *slots, mask, *values, count, capacity; } AddressSet;

static int set_add(AddressSet *set, uint64_t value) {
  if (set->count == set->capacity) {
    uint64_t *grown = grow(set->values, &set->capacity, sizeof(uint64_t));
    if (!grown) return 0;
    set->values = grown;
  }
  if ((set->count + 1) * 2 > set->mask) {
    uint64_t size = set->slots ? (set->mask + 1) * 2 : 1024, *fresh = map(size * sizeof(uint64_t));
    if (!fresh) return 0;
    if (set->slots) sys(SYS_munmap, (long) set->slots, (long) ((set->mask + 1) * sizeof(uint64_t)), 0, 0, 0, 0);
    set->slots = fresh;
    set->mask = size - 1;
    for (uint64_t k = 0; k < set->count; k++) {
      uint64_t s = (set->values[k] * 0x9E3779B97F4A7C15ULL >> 20) & set->mask;
      while (set->slots[s]) s = (s + 1) & set->mask;
      set->slots[s] = set->values[k];
    }
  }
  uint64_t s = (value * 0x9E3779B97F4A7C15ULL >> 20) & set->mask;
  for (; set->slots[s]; s = (s + 1) & set->mask)
    if (set->slots[s] == value) return 0;
  set->slots[s] = value;
  set->values[set->count++] = value;
  return 1;
}

static AddressSet call_sites;   /* of every call row, for the agent to describe */

/* ---- what each fragment read and wrote, object by object (accesses.csv, for tareador hints) ----
 * One row per (fragment, object, part) the fragment touched: the hull of the bytes it read before
 * writing them ("exposed": an OpenMP in), and the hull of the bytes it wrote. Once the instance
 * has called its body (calls.csv), its accesses are cut at the values of the call's arguments
 * (OpenTask.cuts): part k >= 1 holds the bytes from the (k-1)-th smallest argument value up to the
 * k-th, so that tiles of one block passed as separate pointers (a kernel reading two tiles of one
 * matrix) get a hull each instead of one hull over the tiles between them; part 0 is everything
 * before the body call, or an instance without one; an access's part is that of its first byte.
 * Noted only where an access changes the shadow (the first read of a byte since its last write, a
 * write that is not a rewrite), so a loop over the same data pays nothing more; a fragment's rows
 * are contiguous, object_rows[object] is the object's last row and each row links to the object's
 * row before it in the buffer, so the current fragment's rows of an object are a short walk.
 * Addresses are absolute; Python subtracts the object's start, and drops the rows of objects
 * still latent at the end. */
typedef struct {
  uint32_t fragment, object, part, previous;   /* previous: the object's row before this one in the buffer, + 1 */
  uint64_t read_lo, read_hi, write_lo, write_hi;   /* [lo, hi); lo = UINT64_MAX: none */
} AccessRow;

static AccessRow *access_rows; static uint64_t access_count, access_written;
/* Per object: the number (from 1, over the whole table) of its latest row, 0 none. */
static uint64_t *object_rows; static uint64_t object_rows_capacity;
/* The running fragment's rows of the objects it noted lately, by object id % RECENT_ROWS
 * (a loop over a few arrays finds its rows without a look at object_rows). */
#define RECENT_ROWS 8
static AccessRow *recent_rows[RECENT_ROWS];

static void forget_recent_rows(void) {
  for (int k = 0; k < RECENT_ROWS; k++) recent_rows[k] = NULL;
}

static void write_accesses(void) {
  access_written += access_count;
  write_rows(access_file, access_rows, &access_count, sizeof(AccessRow));
  forget_recent_rows();
}

/* The row of the running fragment's part of object in the buffer (the object's rows there,
 * latest first, until another fragment's). */
static __attribute__((noinline)) AccessRow *access_row(uint32_t object, uint32_t part) {
  if (object >= object_rows_capacity) {
    uint64_t capacity = object_rows_capacity;
    uint64_t *grown = NULL;
    while (object >= capacity && (grown = grow(object_rows, &capacity, sizeof(uint64_t)))) object_rows = grown;
    if (object >= capacity) return NULL;
    object_rows_capacity = capacity;
  }
  uint64_t row = object_rows[object];
  for (uint64_t at = row > access_written ? row - access_written : 0;
       at && access_rows[at - 1].fragment == tr_state.current; at = access_rows[at - 1].previous)
    if (access_rows[at - 1].part == part) return &access_rows[at - 1];
  if (access_count == table_rows) write_accesses();
  uint32_t previous = row > access_written ? (uint32_t) (row - access_written) : 0;
  AccessRow *a = &access_rows[access_count++];
  *a = (AccessRow) { tr_state.current, object, part, previous, UINT64_MAX, 0, UINT64_MAX, 0 };
  object_rows[object] = access_written + access_count;
  return a;
}

/* Bytes [lo, hi) of part of object (a shadow id) were read before the running fragment wrote
 * them, or were written by it. */
static int private_access;  /* analyse() is in the running instance's private stack: see dead_frame */

static inline void note_access(uint32_t object, uint32_t part, uint64_t lo, uint64_t hi, int is_write) {
  AccessRow **recent = &recent_rows[object % RECENT_ROWS], *a = *recent;
  if (!a || a->object != object - 1 || a->part != part) {
    a = access_row(object - 1, part);
    if (!a) return;
    *recent = a;
  }
  uint64_t *range = is_write ? &a->write_lo : &a->read_lo;
  if (lo < range[0]) range[0] = lo;
  if (hi > range[1]) range[1] = hi;
}

/* The running instance's cuts (its OpenTask's; none for main's fragments), set by each flush. */
static const OpenTask *running_cuts;

/* The part of the running instance's accesses that address is in, and its bounds [*lo, *hi). */
static uint32_t part_of(uint64_t address, uint64_t *lo, uint64_t *hi) {
  *lo = 0;
  *hi = UINT64_MAX;
  if (!running_cuts || !running_cuts->cut_count) return 0;
  uint32_t part = 1, n = running_cuts->cut_count;
  for (uint32_t k = 0; k < n && running_cuts->cuts[k] <= address; k++) part++, *lo = running_cuts->cuts[k];
  if (part <= n) *hi = running_cuts->cuts[part - 1];
  return part;
}

/* Whether writer w and reader me (shadow ids, +1) are fragments of one instance: what an earlier
 * fragment of the instance wrote is not read before written by the instance. */
static inline int same_instance(uint32_t w, uint32_t me) {
  return w && fragments[w - 1].instance == fragments[me - 1].instance;
}


/* A task instance's private stack (below the stack pointer its creator had when it called the
 * start marker or the task function) is shared with its descendants only, and frames there are reused by one call after another: an access there (by
 * the instance or a descendant) depends on a fragment only if that fragment is the instance or a
 * descendant (its id is not below the instance's first: everything after that in the sequential
 * run is the instance or its descendants) and, for a descendant, the byte was not in its own
 * private stack, a dead frame (a child's write into its parent's local, as fib's
 * x = fib(n - 1) read after the taskwait, counts; the child's own frames, reused by the parent
 * after it returned, do not). main owns the rest of the thread's stack (analyse). */
static int owned_stack;        /* analyse() is in an instance's private stack (main's included) ... */
static uint32_t edge_floor;    /* ... whose first fragment is this, on behalf of ... */
static uint32_t running;       /* ... this instance (its earlier fragments are ordered before it anyway) */

/* The top of instance's private stack (0: it has none). */
static inline uint64_t instance_top(uint32_t instance) {
  uint32_t top = fragments[instance].top;
  return top ? tr_state.stack_low + top : 0;
}

static inline int dead_frame(uint32_t src, uint64_t address) {
  if (!owned_stack) return 0;
  uint32_t instance = fragments[src].instance;
  return src < edge_floor || instance == running || (instance != edge_floor && address < instance_top(instance));
}

static void note_task_site(uint64_t return_address) {
  for (uint32_t i = 0; i < task_site_count; i++)
    if (tr_task_sites[i] == return_address) return;
  if (task_site_count < MAX_TASK_SITES) tr_task_sites[task_site_count++] = return_address;
}

/* site: the call instruction (a direct call, e8 rel32); only the first call of a task's first
 * fragment counts. Its arguments cut the instance's later accesses into parts. */
void tr_flush(void);

void tr_task_call(uint64_t site, const uint64_t args[CALL_ARGS]) {
  if (!tr_state.following || !tr_state.depth || fragments[tr_state.current].instance != tr_state.current) return;
  if (call_fragment == tr_state.current) return;
  tr_flush();   /* what ran before the call evaluated its arguments: part 0 */
  if (call_count == table_rows) write_rows(call_file, call_rows, &call_count, sizeof(CallRow));
  CallRow *c = &call_rows[call_count++];
  c->fragment = call_fragment = tr_state.current; c->pad = 0; c->site = site;
  c->function = site + 5 + (uint64_t) (int64_t) *(const int32_t *) (site + 1);
  for (int k = 0; k < CALL_ARGS; k++) c->args[k] = args[k];
  set_add(&call_sites, site);
  OpenTask *open = &open_tasks[tr_state.depth - 1];
  open->cut_count = 0;
  for (uint32_t k = 0; k < CALL_ARGS; k++) {
    uint32_t at = open->cut_count++;
    for (; at && open->cuts[at - 1] > args[k]; at--) open->cuts[at] = open->cuts[at - 1];
    open->cuts[at] = args[k];
  }
}

/* Whether accesses to object (a shadow id, 0 = none) are analysed; the program's own code
 * touching a latent object makes it an ordinary one. */
static inline int object_enabled(uint32_t object, int program) {
  if (!object) return 0;
  ObjectRow *o = &objects[object - 1];
  if (program && o->latent) o->latent = 0;
  return !o->disabled;
}

/* ---- granules, pages and split granules ---- */

/* What granule g (not split) says of its bytes. */
static inline Shadow effective(const ShadowChunk *c, uint64_t g) {
  uint64_t p = g / PAGE_GRANULES;
  Granule x = c->granule[g];
  return (Shadow) { x.writer ? x.writer : c->page_writer[p], x.reader,
                    c->page_object[p] ? c->page_object[p] : c->object[g] };
}

/* Granule g says s of its bytes from now on (s.object is the page's if the page has one). */
static void store(ShadowChunk *c, uint64_t g, Shadow s) {
  uint64_t p = g / PAGE_GRANULES;
  Granule *x = &c->granule[g];
  if (x->writer != s.writer || x->reader != s.reader) {
    *x = (Granule) { s.writer, s.reader };
    c->touched[p] = 1;
  }
  if (!c->page_object[p] && c->object[g] != s.object) {
    c->object[g] = s.object;
    c->spelt[p] = 1;
  }
}

/* Give granule g its own per-byte words, all equal to what the granule says; NULL when out of
 * memory. */
static SplitGranule *split(ShadowChunk *c, uint64_t g) {
  uint32_t slot;
  if (split_free) {
    slot = split_free - 1;
    split_free = splits[slot].byte[0].writer;
  } else {
    if (split_count == split_capacity) {
      SplitGranule *grown = grow(splits, &split_capacity, sizeof(SplitGranule));
      if (!grown) return NULL;
      splits = grown;
    }
    slot = (uint32_t) split_count++;
  }
  SplitGranule *s = &splits[slot];
  Shadow x = effective(c, g);
  for (int k = 0; k < GRANULE; k++) s->byte[k] = x;
  c->granule[g] = (Granule) { SPLIT | slot, 0 };
  c->page_splits[g / PAGE_GRANULES]++;
  c->touched[g / PAGE_GRANULES] = 1;
  return s;
}

static void free_split(ShadowChunk *c, uint64_t g) {
  uint32_t slot = c->granule[g].writer & ~SPLIT;
  splits[slot].byte[0].writer = split_free;
  split_free = slot + 1;
  c->page_splits[g / PAGE_GRANULES]--;
}

/* A split granule whose bytes agree again goes back to one set of words. */
static void maybe_join(ShadowChunk *c, uint64_t g) {
  SplitGranule *s = &splits[c->granule[g].writer & ~SPLIT];
  for (int k = 1; k < GRANULE; k++)
    if (s->byte[k].writer != s->byte[0].writer || s->byte[k].reader != s->byte[0].reader ||
        s->byte[k].object != s->byte[0].object) return;
  Shadow x = s->byte[0];
  free_split(c, g);
  store(c, g, x);
}

/* Byte i (chunk offset). */
static Shadow byte_at(const ShadowChunk *c, uint64_t i) {
  uint32_t w = c->granule[i / GRANULE].writer;
  return w & SPLIT ? splits[w & ~SPLIT].byte[i % GRANULE] : effective(c, i / GRANULE);
}

/* Zero the flagged pages among [p, end) of an array of shadow (bytes_per_page of it per page):
 * long runs are given back to the kernel (fresh zero pages, no memory until written again). */
#define RELEASE_PAGES 16

static void zero_pages(uint8_t *flag, char *shadow, uint64_t bytes_per_page, uint64_t p, uint64_t end) {
  while (p < end) {
    uint64_t q = p;
    while (q < end && flag[q]) flag[q++] = 0;
    char *first = shadow + p * bytes_per_page;
    uint64_t bytes = (q - p) * bytes_per_page;
    if (q - p >= RELEASE_PAGES && advise(first, bytes, MADV_DONTNEED) == 0) bytes = 0;
    for (uint64_t *w = (uint64_t *) first; w < (uint64_t *) (first + bytes); w++) *w = 0;
    p = q + 1;
  }
}

/* Pages [p, end) forget everything their granules said. */
static void clear_pages(ShadowChunk *c, uint64_t p, uint64_t end) {
  for (uint64_t q = p; q < end; q++)
    for (uint64_t g = q * PAGE_GRANULES; c->page_splits[q] && g < (q + 1) * PAGE_GRANULES; g++)
      if (c->granule[g].writer & SPLIT) free_split(c, g);
  zero_pages(c->touched, (char *) c->granule, PAGE_GRANULES * sizeof(Granule), p, end);
  zero_pages(c->spelt, (char *) c->object, PAGE_GRANULES * sizeof(uint32_t), p, end);
}

/* A page that has one object for all its bytes gives each granule its own object word (and
 * calloc's writer), so that some of its bytes can change object. */
static void spell_out(ShadowChunk *c, uint64_t p) {
  for (uint64_t g = p * PAGE_GRANULES; g < (p + 1) * PAGE_GRANULES; g++) {
    c->object[g] = c->page_object[p];
    if (!c->granule[g].writer && c->page_writer[p]) c->granule[g].writer = c->page_writer[p];
  }
  c->touched[p] |= c->page_writer[p] != 0;
  c->spelt[p] = 1;
  c->page_object[p] = c->page_writer[p] = 0;
}

/* ---- updates of byte ranges: an object starts or ends, or its bytes get a writer ---- */

enum { SET_RESET,    /* bytes get (no writer, no reader, object value): a new object, or none */
       SET_RENAME,   /* bytes get object value and keep their history (stack frames, realloc) */
       SET_HISTORY   /* the bytes of an object get writer and last reader value: WRITER_READER(w, r)
                        (calloc's zeros, realloc's moved bytes) */ };

#define WRITER_READER(writer, reader) ((uint64_t) (writer) | (uint64_t) (reader) << 32)

static inline void apply(Shadow *x, int how, uint64_t value) {
  if (how == SET_RESET) *x = (Shadow) { 0, 0, (uint32_t) value };
  else if (how == SET_RENAME) x->object = (uint32_t) value;
  else if (x->object) { x->writer = (uint32_t) value; x->reader = (uint32_t) (value >> 32); }
}

static void update_bytes(ShadowChunk *c, uint64_t i, uint64_t end, int how, uint64_t value);

/* Whole pages [p, end): the page words say it; only split granules, and the writers written
 * since, change. A page has a writer word but no reader word: history with a reader goes to
 * its granules. */
static void update_pages(ShadowChunk *c, uint64_t p, uint64_t end, int how, uint64_t value) {
  if (how == SET_RESET) {
    clear_pages(c, p, end);
    for (; p < end; p++) {
      c->page_object[p] = value;
      c->page_writer[p] = 0;
    }
    return;
  }
  for (; p < end; p++) {
    if (how == SET_HISTORY && (!c->page_object[p] || value >> 32)) {
      update_bytes(c, p * PAGE, (p + 1) * PAGE, how, value);
      continue;
    }
    if (how == SET_RENAME) c->page_object[p] = (uint32_t) value;
    else c->page_writer[p] = (uint32_t) value;
    for (uint64_t g = p * PAGE_GRANULES; c->touched[p] && g < (p + 1) * PAGE_GRANULES; g++) {
      Granule *x = &c->granule[g];
      if (x->writer & SPLIT)
        for (int k = 0; k < GRANULE; k++) apply(&splits[x->writer & ~SPLIT].byte[k], how, value);
      else if (x->writer && how == SET_HISTORY) x->writer = (uint32_t) value;
    }
  }
}

/* Bytes [i, end) of one page, granule by granule. */
static void update_bytes(ShadowChunk *c, uint64_t i, uint64_t end, int how, uint64_t value) {
  if (how != SET_HISTORY && c->page_object[i / PAGE]) spell_out(c, i / PAGE);
  while (i < end) {
    uint64_t g = i / GRANULE, off = i % GRANULE, take = GRANULE - off < end - i ? GRANULE - off : end - i;
    i += take;
    if (!(c->granule[g].writer & SPLIT)) {
      Shadow x = effective(c, g);
      if (how == SET_HISTORY && !x.object) continue;
      if (take == GRANULE) {
        apply(&x, how, value);
        store(c, g, x);
        continue;
      }
    }
    SplitGranule *s = c->granule[g].writer & SPLIT ? &splits[c->granule[g].writer & ~SPLIT] : split(c, g);
    if (!s) return;
    for (uint64_t k = off; k < off + take; k++) apply(&s->byte[k], how, value);
    maybe_join(c, g);
  }
}

/* The bytes [address, address + size); create: map chunks not yet mapped. */
static void set_range(uint64_t address, uint64_t size, int how, uint64_t value, int create) {
  for (uint64_t end = address + size; address < end;) {
    uint64_t chunk_end = (address | (CHUNK_SIZE - 1)) + 1;
    uint64_t stop = end < chunk_end ? end : chunk_end;
    ShadowChunk *c = chunk_of(address, create);
    for (uint64_t i = address & (CHUNK_SIZE - 1), last = i + (stop - address); c && i < last;) {
      uint64_t whole = (last & ~(PAGE - 1)) > i ? ((last & ~(PAGE - 1)) - i) / PAGE : 0;
      if (i % PAGE == 0 && whole) {
        update_pages(c, i / PAGE, i / PAGE + whole, how, value);
        i += whole * PAGE;
      } else {
        uint64_t page_end = (i | (PAGE - 1)) + 1 < last ? (i | (PAGE - 1)) + 1 : last;
        update_bytes(c, i, page_end, how, value);
        i = page_end;
      }
    }
    address = stop;
  }
}

/* ---- the analysis ---- */

/* One access (one record) being analysed: by whom and how. */
typedef struct {
  uint32_t me;   /* the running fragment, + 1 */
  int is_write, program;
  EdgeRuns *runs;
} Visit;

static uint32_t me_instance;   /* the running fragment's instance */

/* The hulls of a flush's accesses on their way to the rows (note_access): per direction (read,
 * write), the two (object, part) pairs extended last, each with its hull so far and its part's
 * addresses [part_lo, part_lo + part_span). A loop over a few arrays extends them in place; a
 * third pair takes the place of the one extended longer ago. */
typedef struct { uint32_t object[2], part[2], older; uint64_t lo[2], hi[2], part_lo[2], part_span[2]; } HullRuns;
static HullRuns hull_runs[2];

static __attribute__((noinline)) void hull_spill(int is_write, int k) {
  HullRuns *h = &hull_runs[is_write];
  if (h->object[k]) note_access(h->object[k], h->part[k], h->lo[k], h->hi[k], is_write);
  h->object[k] = 0;
}

static __attribute__((noinline)) void hull_start(int is_write, int k, uint32_t object, uint64_t lo, uint64_t hi) {
  HullRuns *h = &hull_runs[is_write];
  hull_spill(is_write, k);
  h->object[k] = object;
  uint64_t part_hi;
  h->part[k] = part_of(lo, &h->part_lo[k], &part_hi);
  h->part_span[k] = part_hi - h->part_lo[k];
  h->lo[k] = lo;
  h->hi[k] = hi;
}

/* Bytes [lo, hi) of object were read before the running fragment wrote them, or written by it. */
static inline __attribute__((always_inline)) void hull_add(int is_write, uint32_t object, uint64_t lo, uint64_t hi) {
  HullRuns *h = &hull_runs[is_write];
  int k = h->object[0] == object && lo - h->part_lo[0] < h->part_span[0] ? 0
        : h->object[1] == object && lo - h->part_lo[1] < h->part_span[1] ? 1 : -1;
  if (k < 0) {
    k = (int) h->older;
    hull_start(is_write, k, object, lo, hi);
  } else {
    if (lo < h->lo[k]) h->lo[k] = lo;
    if (hi > h->hi[k]) h->hi[k] = hi;
  }
  h->older = (uint32_t) (1 - k);
}

/* ... unless analyse() is in the running instance's private stack. */
static inline void noted_hull_add(int is_write, uint32_t object, uint64_t lo, uint64_t hi) {
  if (!private_access) hull_add(is_write, object, lo, hi);
}

/* The bytes [off, off + n) of a split granule, one at a time. */
static void analyse_split(SplitGranule *s, uint64_t address, uint64_t off, uint64_t n, Visit *v) {
  uint32_t me = v->me;
  for (uint64_t k = off; k < off + n; k++) {
    Shadow *b = &s->byte[k];
    uint32_t object = b->object;
    if (!object_enabled(object, v->program)) continue;
    int latent = objects[object - 1].latent;
    uint32_t w = b->writer, r = b->reader;
    if (!v->is_write) {
      if (r == me) continue;
      b->reader = me;
      if (w != me && !same_instance(w, me)) noted_hull_add(v->is_write, object, address + k, address + k + 1);
      if (w && w != me && !latent && !dead_frame(w - 1, address + k)) run_add(&v->runs->raw, w - 1, object - 1, me - 1, 1);
    } else {
      if (w == me && !r) continue;
      noted_hull_add(v->is_write, object, address + k, address + k + 1);
      if (w && w != me && !latent && !dead_frame(w - 1, address + k)) run_add(&v->runs->waw, w - 1, object - 1, me - 1, 1);
      if (r && r != me && !latent && !dead_frame(r - 1, address + k)) run_add(&v->runs->war, r - 1, object - 1, me - 1, 1);
      b->writer = me;
      b->reader = 0;
    }
  }
}

/* The program touches page p of an object for the first time: map its shadow for writing at
 * once (after a read, which maps the zero page, the first write would fault again). When it
 * goes through memory in order (page p - 1 was touched), map the next pages of the run too:
 * one system call instead of a page fault per page. */
#define POPULATE_PAGES 16

static void first_touch(ShadowChunk *c, uint64_t p) {
  uint64_t q = p + 1;
  if (p && c->touched[p - 1])
    while (q < PAGES && q < p + POPULATE_PAGES && !c->touched[q] && c->page_object[q]) q++;
  advise(&c->granule[p * PAGE_GRANULES], (q - p) * PAGE_GRANULES * sizeof(Granule), MADV_POPULATE_WRITE);
  for (; p < q; p++) c->touched[p] = 1;
}

/* Whole granule g (not split), at address, of object (enabled; latent: it gives no edges). */
static inline __attribute__((always_inline)) void analyse_granule(ShadowChunk *c, uint64_t g, uint64_t address,
                                                                  uint32_t object, int latent, int noted, Visit *v) {
  Granule *x = &c->granule[g];
  uint32_t w = x->writer, r = x->reader, me = v->me;
  if (!w) {
    /* Not written since its object began: calloc's writer, or nobody. */
    uint64_t p = g / PAGE_GRANULES;
    w = c->page_writer[p];
    if (!r && !c->touched[p]) first_touch(c, p);
  }
  if (!v->is_write) {
    if (r == me) return;
    *x = (Granule) { w, me };
    if (w == me) return;
    if (noted && (!w || fragments[w - 1].instance != me_instance)) hull_add(0, object, address, address + GRANULE);
    if (w && !latent && !dead_frame(w - 1, address)) run_add(&v->runs->raw, w - 1, object - 1, me - 1, GRANULE);
  } else {
    if (w == me && !r) return;
    if (noted) hull_add(1, object, address, address + GRANULE);
    if (!latent && w && w != me && !dead_frame(w - 1, address)) run_add(&v->runs->waw, w - 1, object - 1, me - 1, GRANULE);
    if (!latent && r && r != me && !dead_frame(r - 1, address)) run_add(&v->runs->war, r - 1, object - 1, me - 1, GRANULE);
    *x = (Granule) { me, 0 };
  }
}

/* The bytes [i, end) of one page of chunk c (at base), granule by granule. A whole granule whose
 * bytes agree is one step; a partial access that changes nothing (a re-read, a re-write,
 * another object) keeps the granule whole; anything else splits it. */
static void analyse_bytes(ShadowChunk *c, uint64_t base, uint64_t i, uint64_t end, Visit *v) {
  while (i < end) {
    uint64_t g = i / GRANULE, off = i % GRANULE, take = GRANULE - off < end - i ? GRANULE - off : end - i;
    uint64_t p = g / PAGE_GRANULES;
    Granule *x = &c->granule[g];
    i += take;
    if (!(x->writer & SPLIT)) {
      uint32_t object = c->page_object[p] ? c->page_object[p] : c->object[g];
      if (!object_enabled(object, v->program)) continue;
      if (take == GRANULE) {
        analyse_granule(c, g, base + g * GRANULE, object, objects[object - 1].latent, !private_access, v);
        continue;
      }
      uint32_t w = x->writer, r = x->reader;
      if (!w) {
        w = c->page_writer[p];
        if (!r && !c->touched[p]) first_touch(c, p);
      }
      if (v->is_write ? w == v->me && !r : r == v->me) continue;
      if (!split(c, g)) continue;
    }
    analyse_split(&splits[x->writer & ~SPLIT], base + g * GRANULE, off, take, v);
    maybe_join(c, g);
  }
}

/* Whole granules [i, end) of page p, wholly inside object: the object is looked at once. */
static inline __attribute__((always_inline)) void analyse_page(ShadowChunk *c, uint64_t base, uint64_t i, uint64_t end, uint32_t object, Visit *v) {
  if (!object_enabled(object, v->program)) return;
  int latent = objects[object - 1].latent;
  for (uint64_t g = i / GRANULE; g < end / GRANULE; g++)
    if (c->granule[g].writer & SPLIT) {
      analyse_split(&splits[c->granule[g].writer & ~SPLIT], base + g * GRANULE, 0, GRANULE, v);
      maybe_join(c, g);
    } else {
      analyse_granule(c, g, base + g * GRANULE, object, latent, !private_access, v);
    }
}

/* One access's bytes [i, i + n) inside chunk c (at base), page by page. */
static void analyse_in_chunk(ShadowChunk *c, uint64_t base, uint64_t i, uint64_t n, Visit *v) {
  for (uint64_t end = i + n; i < end;) {
    uint64_t page_end = (i | (PAGE - 1)) + 1, stop = end < page_end ? end : page_end;
    uint32_t object = c->page_object[i / PAGE];
    if (object && !((i | stop) % GRANULE)) analyse_page(c, base, i, stop, object, v);
    else analyse_bytes(c, base, i, stop, v);
    i = stop;
  }
}

static void analyse_range(uint64_t address, uint64_t end, Visit *v) {
  while (address < end) {
    uint64_t chunk_end = (address | (CHUNK_SIZE - 1)) + 1;
    uint64_t stop = end < chunk_end ? end : chunk_end;
    ShadowChunk *c = chunk_of(address, 0);
    if (c) analyse_in_chunk(c, address & ~(CHUNK_SIZE - 1), address & (CHUNK_SIZE - 1), stop - address, v);
    address = stop;
  }
}

/* What the plain path (analyse_plain) knows of a page, kept during one flush, in which objects
 * and pages' words do not change: a page outside the stack and wholly inside one object that is
 * analysed and not latent (PLAIN), one without shadow (nothing to analyse: SKIP), or any other
 * (analyse's loops; a latent object that the program touches there stops being latent, and its
 * pages are plain from the next flush on). The two pages looked up last are kept: a loop goes
 * through a few arrays at a time. */
enum { NOT_PLAIN, PLAIN, SKIP };
typedef struct { uint64_t page; ShadowChunk *c; uint32_t object, kind; } PlainPage;
static PlainPage plain_pages[2];
static uint32_t plain_older;

static void forget_plain_pages(void) {
  plain_pages[0].page = plain_pages[1].page = UINT64_MAX;
}

static __attribute__((noinline)) PlainPage *plain_page(uint64_t page) {
  PlainPage *e = &plain_pages[plain_older];
  uint64_t address = page * PAGE;
  plain_older ^= 1;
  e->page = page;
  e->c = chunk_of(address, 0);
  e->object = e->c ? e->c->page_object[(address & (CHUNK_SIZE - 1)) / PAGE] : 0;
  ObjectRow *o = e->object ? &objects[e->object - 1] : NULL;
  e->kind = !e->c ? SKIP : !o || o->latent || o->disabled
            || (address < tr_state.stack_high && address + PAGE > tr_state.stack_low) ? NOT_PLAIN : PLAIN;
  return e;
}

/* The common access, analysed without the stack's, chunks' and pages' loops: whole granules,
 * none split, of a plain page. 0 if the access is not such (nothing analysed then). */
static inline __attribute__((always_inline)) int analyse_plain(uint64_t address, uint64_t size, int is_write,
                                                               int program, uint32_t me, EdgeRuns *runs) {
  uint64_t page = address / PAGE;
  /* One aligned granule (most accesses) is inside a page; anything else is checked. */
  if ((size != GRANULE || address % GRANULE)
      && ((address | size) % GRANULE || size - 1 >= PAGE || (address & (PAGE - 1)) + size > PAGE))
    return 0;
  PlainPage *e = &plain_pages[0];
  if (e->page != page) {
    e = &plain_pages[1];
    if (e->page != page) e = plain_page(page);
  }
  plain_older = e == plain_pages;
  if (e->kind != PLAIN) return e->kind == SKIP;
  ShadowChunk *c = e->c;
  uint64_t first = (address & (CHUNK_SIZE - 1)) / GRANULE;
  Visit v = { me, is_write, program, runs };
  if (size == GRANULE) {   /* most accesses: one granule, without the loops */
    if (c->granule[first].writer & SPLIT) return 0;
    analyse_granule(c, first, address, e->object, 0, 1, &v);
    return 1;
  }
  uint64_t last = first + size / GRANULE;
  for (uint64_t g = first; g < last; g++)
    if (c->granule[g].writer & SPLIT) return 0;
  for (uint64_t g = first; g < last; g++) analyse_granule(c, g, address + (g - first) * GRANULE, e->object, 0, 1, &v);
  return 1;
}

/* The part of an access inside the thread's stack is analysed one owner's private stack at a time,
 * innermost first, each with its owner's floor (dead_frame): the open instances', then main's,
 * which is the rest of the stack (main's code is a parent like any other: it never depends on a
 * child's dead frames). The running instance's own private stack is not a clause of the task for
 * hints (private_access); main's accesses are all noted. */
static void analyse(uint64_t address, uint64_t size, Visit *v) {
  uint64_t end = address + size;
  if (address < tr_state.stack_high && end > tr_state.stack_low) {
    owned_stack = 1;
    running = me_instance;
    for (uint32_t d = tr_state.depth + 1; d-- > 0 && address < end;) {
      uint64_t top = d ? instance_top(open_tasks[d - 1].instance) : tr_state.stack_high, stop = end < top ? end : top;
      if (address >= top) continue;
      edge_floor = d ? open_tasks[d - 1].instance : main_instance;
      private_access = d && d == tr_state.depth;
      analyse_range(address, stop, v);
      address = stop;
    }
    owned_stack = private_access = 0;
    if (address >= end) return;
  }
  analyse_range(address, end, v);
}

/* Communication patterns (patterns.c, only under trace --mpi): every record goes there too. */
extern uint32_t tr_patterns_on;
extern uint64_t tr_access_time;
extern int tr_pattern_record(uint64_t address, uint64_t info);

/* The records [r, end) of the running fragment me (+ 1); patterns: patterns.c sees them first
 * (a constant where inlined: each caller's loop has no test of it). */
static inline __attribute__((always_inline)) void analyse_records(const AccessRecord *r, const AccessRecord *end,
                                                                  uint32_t me, EdgeRuns *runs, int patterns) {
  for (; r < end; r++) {
    if (patterns && tr_pattern_record(r->address, r->info)) continue;
    uint32_t info = (uint32_t) r->info;
    int is_write = (info & ACCESS_WRITE) != 0, program = (info & ACCESS_PROGRAM) != 0;
    if (analyse_plain(r->address, info & ACCESS_SIZE_MASK, is_write, program, me, runs)) continue;
    Visit v = { me, is_write, program, runs };
    analyse(r->address, info & ACCESS_SIZE_MASK, &v);
  }
}

void tr_flush(void) {
  AccessRecord *r = tr_state.buffer, *end = tr_state.cursor;
  tr_state.cursor = tr_state.buffer;
  if (tr_state.suppress || !tr_state.following) return;
  uint32_t me = tr_state.current + 1;
  tr_state.accesses += (uint64_t) (end - r);
  tr_state.flushes++;
  EdgeRuns runs = { { 0, 0, DEP_RAW, 0 }, { 0, 0, DEP_WAW, 0 }, { 0, 0, DEP_WAR, 0 } };
  me_instance = fragments[me - 1].instance;
  running_cuts = tr_state.depth && open_tasks[tr_state.depth - 1].instance == me_instance
                 ? &open_tasks[tr_state.depth - 1] : NULL;
  forget_recent_rows();   /* rows are the running fragment's: a flush is one fragment's */
  forget_plain_pages();
  if (tr_patterns_on) analyse_records(r, end, me, &runs, 1);
  else analyse_records(r, end, me, &runs, 0);
  run_flush(&runs.raw, me - 1);
  run_flush(&runs.waw, me - 1);
  run_flush(&runs.war, me - 1);
  for (int k = 0; k < 4; k++) hull_spill(k / 2, k % 2);
}

/* Stalker callout signature: (GumCpuContext *, gpointer). */
void tr_flush_callout(void *cpu_context, void *user_data) {
  (void) cpu_context; (void) user_data;
  tr_flush();
}

/* ---- objects ---- */

static void fill_range(uint64_t address, uint64_t size, uint32_t object, int keep_history) {
  set_range(address, size, keep_history ? SET_RENAME : SET_RESET, object, object != 0);
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
  o->disabled = 0; o->alive = 1; o->latent = 0;
  fill_range(address, size, (uint32_t) object_count + 1, keep_history);
  return (int64_t) object_count++;
}

/* A block a system library allocated: latent until the program's own code touches it. */
int64_t tr_add_latent(uint64_t address, uint64_t size, uint64_t site) {
  int64_t id = tr_add_object(address, size, KIND_HEAP, site, 0);
  if (id >= 0) objects[id].latent = 1;
  return id;
}

static uint32_t object_at(uint64_t address) {
  ShadowChunk *c = chunk_of(address, 0);
  return c ? byte_at(c, address & (CHUNK_SIZE - 1)).object : 0;
}

/* The program got the block at address from an allocator it called at site (operator new): the
 * latent object its system library made there is the program's. */
void tr_claim(uint64_t address, uint64_t site) {
  uint32_t id = object_at(address);
  if (!id || objects[id - 1].address != address) return;
  objects[id - 1].latent = 0;
  objects[id - 1].site = site;
}

/* free(): the object ends; nothing flows from it to a later block at the same address. */
void tr_remove_object_at(uint64_t address) {
  uint32_t id = object_at(address);
  if (!id || objects[id - 1].address != address) return;
  ObjectRow *o = &objects[id - 1];
  o->alive = 0;
  fill_range(o->address, o->size, 0, 0);
}

/* munmap(): only unmapping the whole of a mapping ends it; a part of it stays the object. */
void tr_unmap(uint64_t address, uint64_t length) {
  uint32_t id = object_at(address);
  if (id && objects[id - 1].address == address && length >= objects[id - 1].size) tr_remove_object_at(address);
}

/* The bytes [from, from + size) that share one history (writer and last reader): a page never
 * touched, a whole granule, or a byte of a split one. */
static uint64_t same_history(uint64_t from, uint64_t size, uint64_t *history) {
  ShadowChunk *c = chunk_of(from, 0);
  uint64_t i = from & (CHUNK_SIZE - 1), span;
  if (!c) { *history = 0; span = CHUNK_SIZE - i; }
  else if (!c->touched[i / PAGE]) { *history = c->page_writer[i / PAGE]; span = PAGE - i % PAGE; }
  else {
    Shadow x = byte_at(c, i);
    *history = WRITER_READER(x.writer, x.reader);
    span = c->granule[i / GRANULE].writer & SPLIT ? 1 : GRANULE - i % GRANULE;
  }
  return span < size ? span : size;
}

/* realloc(): the new block inherits the last writer and last reader of every byte it keeps, as
 * if the bytes had stayed where they were. by_system: a system
 * library resized the block (getline growing its line), which stays what it was, latent or the
 * program's, and keeps its name; a block it makes from nothing is latent. */
void tr_move_object(uint64_t old_address, uint64_t new_address, uint64_t new_size, uint64_t site, uint32_t by_system) {
  uint32_t id = old_address ? object_at(old_address) : 0;
  if (!id || objects[id - 1].address != old_address) {
    if (by_system) tr_add_latent(new_address, new_size, site);
    else tr_add_object(new_address, new_size, KIND_HEAP, site, 0);
    return;
  }
  /* Not a pointer: tr_add_object may move the objects table. */
  uint64_t old_size = objects[id - 1].size;
  uint32_t latent = by_system && objects[id - 1].latent;
  if (by_system) site = objects[id - 1].site;
  objects[id - 1].alive = 0;
  /* Resized in place: the bytes keep their history; those given back belong to nobody. */
  int64_t fresh = tr_add_object(new_address, new_size, KIND_HEAP, site, new_address == old_address);
  if (fresh >= 0) objects[fresh].latent = latent;
  if (new_address == old_address) {
    if (new_size < old_size) fill_range(new_address + new_size, old_size - new_size, 0, 0);
    return;
  }
  if (fresh < 0) return;
  uint64_t moved = old_size < new_size ? old_size : new_size;
  /* Runs of bytes with one history; the new block is fresh, so bytes nobody wrote or read need
   * nothing. */
  uint64_t start = 0, history = 0;
  for (uint64_t k = 0; k < moved;) {
    uint64_t h;
    uint64_t span = same_history(old_address + k, moved - k, &h);
    if (h != history) {
      if (history) set_range(new_address + start, k - start, SET_HISTORY, history, 0);
      start = k;
      history = h;
    }
    k += span;
  }
  if (history) set_range(new_address + start, moved - start, SET_HISTORY, history, 0);
  if (new_address >= old_address + old_size || new_address + new_size <= old_address)
    fill_range(old_address, old_size, 0, 0);
}

/* calloc(): the allocating task instance wrote the zeros. */
void tr_mark_written(uint64_t address, uint64_t size) {
  if (!tr_state.following) return;
  set_range(address, size, SET_HISTORY, WRITER_READER(tr_state.current + 1, 0), 0);
}

/* ---- task instances ---- */

static uint64_t running_pred = NO_PARENT;   /* the running fragment's predecessor in the schedule */
static uint64_t critical_path;

/* Fragment f (the running one) is over: where its longest path through the task graph ends,
 * the schedule of tareador/taskgraph/metrics.py (T-infinity): after its predecessor (its
 * instance's previous fragment, or for an instance's first the fragment that created it) and
 * after its RAW sources, which all ended before it. */
static void end_fragment(uint64_t f) {
  uint64_t start = running_pred == NO_PARENT ? 0 : fragments[running_pred].finish;
  if (running_raw > start) start = running_raw;
  fragments[f].finish = start + task_rows[f - task_first].instructions;
  if (fragments[f].finish > critical_path) critical_path = fragments[f].finish;
}

/* A new fragment after pred (NO_PARENT: none); instance NO_PARENT starts a new instance with
 * this fragment. Every row before it is final: a full buffer of them leaves. */
static int64_t new_fragment(uint32_t name, uint32_t parent, uint32_t instance, uint32_t pred) {
  if (task_count == fragment_capacity) {
    Fragment *grown = grow(fragments, &fragment_capacity, sizeof(Fragment));
    if (!grown) return -1;
    fragments = grown;
  }
  if (task_count) end_fragment(task_count - 1);
  if (task_count - task_first == table_rows) {
    uint64_t rows = table_rows;
    write_rows(task_file, task_rows, &rows, sizeof(TaskRow));
    task_first = task_count;
  }
  TaskRow *t = &task_rows[task_count - task_first];
  t->name = name; t->parent = parent; t->pad = 0;
  t->instance = instance == NO_PARENT ? (uint32_t) task_count : instance;
  instance_count += instance == NO_PARENT && parent != NO_PARENT;
  t->start = t->end = tr_state.instructions; t->instructions = 0;
  fragments[task_count] = (Fragment) { t->instance, 0, 0 };
  running_pred = pred;
  running_raw = 0;
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
  TaskRow *t = &task_rows[tr_state.current - task_first];
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
  int64_t id = new_fragment(0, NO_PARENT, main_instance, last_main);
  if (id < 0) return;
  tr_state.current = last_main = (uint32_t) id;
  main_instance = fragments[id].instance;
}

/* A child ended: the instance open at depth d goes on in a new fragment. */
static void resume_instance(uint32_t d) {
  OpenTask *open = &open_tasks[d];
  int64_t id = new_fragment(open->name, open->parent, open->instance, open->last);
  if (id >= 0) tr_state.current = open->last = (uint32_t) id;
}

/* ---- stack frames: named by the function that owns them ----
 * A frame is an object per (function, frame top): the same function's frame at the same place
 * (a loop's calls, its other task creations) is one object, extended downwards when it reaches
 * lower (the stack arguments of a call); another function's frame at the same addresses is
 * another object, and the bytes are renamed to whichever frame owns them at each task start. */

static const uint64_t *function_ranges; static uint64_t function_count;   /* {start, end}, sorted */

/* agent.js: the program's functions, from its symbol tables. */
void tr_set_functions(const uint64_t *ranges, uint64_t count) { function_ranges = ranges; function_count = count; }

/* The start of the function holding code address site, or site itself where no symbol says. */
static uint64_t owner_of(uint64_t site) {
  uint64_t low = 0, high = function_count;
  while (low < high) {
    uint64_t mid = (low + high) / 2;
    if (function_ranges[2 * mid] <= site) low = mid + 1;
    else high = mid;
  }
  return low && site < function_ranges[2 * low - 1] ? function_ranges[2 * low - 2] : site;
}

static uint32_t *frame_slots; static uint64_t frame_mask, frame_count;   /* object id + 1, 0 empty */

static uint64_t frame_hash(uint64_t top, uint64_t owner) {
  uint64_t h = top * 0x9E3779B97F4A7C15ULL ^ owner * 0xC2B2AE3D27D4EB4FULL;
  return h ^ (h >> 31);
}

static int is_frame(uint32_t id, uint64_t top, uint64_t owner) {
  const ObjectRow *o = &objects[id];
  return o->kind == KIND_STACK && o->address + o->size == top && owner_of(o->site) == owner;
}

/* The slot of frame (top, owner): holding its object, or empty. */
static uint32_t *frame_slot(uint64_t top, uint64_t owner) {
  for (uint64_t s = frame_hash(top, owner) & frame_mask;; s = (s + 1) & frame_mask)
    if (!frame_slots[s] || is_frame(frame_slots[s] - 1, top, owner)) return &frame_slots[s];
}

/* Room for one more frame (at most half the slots full); 0 when out of memory. */
static int frame_room(void) {
  if (frame_slots && (frame_count + 1) * 2 <= frame_mask + 1) return 1;
  uint64_t size = frame_slots ? (frame_mask + 1) * 2 : 1024;
  uint32_t *old = frame_slots, *fresh = map(size * sizeof(uint32_t));
  if (!fresh) return 0;
  uint64_t old_size = old ? frame_mask + 1 : 0;
  frame_slots = fresh;
  frame_mask = size - 1;
  for (uint64_t s = 0; s < old_size; s++)
    if (old[s]) {
      const ObjectRow *o = &objects[old[s] - 1];
      *frame_slot(o->address + o->size, owner_of(o->site)) = old[s];
    }
  if (old) sys(SYS_munmap, (long) old, (long) (old_size * sizeof(uint32_t)), 0, 0, 0, 0);
  return 1;
}

/* Whether every byte of [low, high) is of object id (+1) already. */
static int named_wholly(uint64_t low, uint64_t high, uint32_t id) {
  while (low < high) {
    ShadowChunk *c = chunk_of(low, 0);
    uint64_t i = low & (CHUNK_SIZE - 1);
    if (!c) return 0;
    if (c->page_object[i / PAGE]) {
      if (c->page_object[i / PAGE] != id) return 0;
      low += PAGE - i % PAGE;
      continue;
    }
    if (byte_at(c, i).object != id) return 0;
    low += c->granule[i / GRANULE].writer & SPLIT ? 1 : GRANULE - i % GRANULE;
  }
  return 1;
}

/* The frame [low, top) whose code returns to site (an address in its function) owns its bytes
 * from now on, keeping their history. */
static void name_frame(uint64_t low, uint64_t top, uint64_t site) {
  uint64_t owner = owner_of(site);
  if (!frame_room()) return;
  uint32_t *slot = frame_slot(top, owner);
  if (!*slot) {
    int64_t id = tr_add_object(low, top - low, KIND_STACK, site, 1);
    if (id >= 0) { *slot = (uint32_t) id + 1; frame_count++; }
    return;
  }
  ObjectRow *o = &objects[*slot - 1];
  if (low < o->address) { o->size += o->address - low; o->address = low; }
  if (!named_wholly(low, top, *slot)) fill_range(low, top - low, *slot, 1);
}

/* Names the live frames above a task's start (frame-pointer chain; -O0 code keeps one) so that
 * dependencies through a caller's local arrays say whose locals they are. */
static void register_frames(uint64_t sp, uint64_t rbp) {
  uint64_t low = sp + 8, site = *(uint64_t *) sp;
  for (int depth = 0; depth < 32; depth++) {
    if (rbp <= low || rbp < tr_state.stack_low || rbp + 16 > tr_state.stack_high || (rbp & 7)) return;
    uint64_t high = rbp + 16;
    name_frame(low, high, site);
    site = *(uint64_t *) (rbp + 8);
    low = high;
    rbp = *(uint64_t *) rbp;
  }
}

static void restore_return_addresses(void);
static int returning_from_function;  /* tr_marker is closing a task function (tr_function_return) */
static int entering_function;  /* tr_marker is opening one (tr_function_enter): its call is a body, not a marker's */

/* A marker was reached: kind is MARK_*, argument is its argument, sp the stack pointer at the
 * marker's first instruction (pointing at the return address into the caller). */
void tr_marker(uint32_t kind, uint64_t argument, uint64_t sp, uint64_t return_address, uint64_t rbp) {
  tr_flush();
  /* A task whose body is inline code: the first call after its start marker is a marker's. (A
   * task function's return comes back from the call that was its body: that one stays.) */
  CallRow *last_call = call_count ? &call_rows[call_count - 1] : NULL;
  if (last_call && last_call->fragment == tr_state.current && last_call->site + 5 == return_address
      && !returning_from_function && !entering_function) {
    call_count--;
    call_fragment = NO_PARENT;
    if (tr_state.depth) open_tasks[tr_state.depth - 1].cut_count = 0;
  }
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
    restore_return_addresses();
    if (tr_state.depth)
      fail(ERROR_OPEN_AT_OFF, open_tasks[tr_state.depth - 1].name, return_address);
    tr_state.depth = 0;
    break;
  case MARK_START: {
    uint32_t name = intern((const char *) argument);
    settle();
    if (tr_state.depth == MAX_DEPTH) { fail(ERROR_TOO_DEEP, name, return_address); break; }
    note_task_site(return_address);
    register_frames(sp, rbp);
    int64_t id = new_fragment(name, tr_state.current, NO_PARENT, tr_state.current);
    if (id < 0) break;
    open_tasks[tr_state.depth++] = (OpenTask) { (uint32_t) id, (uint32_t) id, name, tr_state.current };
    tr_state.current = (uint32_t) id;
    /* The creator's stack pointer before its call: the slot of that call's return address is
     * the task's (it returns through it). */
    uint64_t top = sp + 8 - tr_state.stack_low;
    fragments[id].top = sp + 8 <= tr_state.stack_low ? 0 : top > UINT32_MAX ? UINT32_MAX : (uint32_t) top;
    break;
  }
  case MARK_END: {
    uint32_t name = intern((const char *) argument);
    settle();
    if (!tr_state.depth) { fail(ERROR_END_WITHOUT_START, name, return_address); break; }
    if (open_tasks[tr_state.depth - 1].name != name) fail(ERROR_END_MISMATCH, name, return_address);
    tr_state.depth--;
    if (tr_state.depth) resume_instance(tr_state.depth - 1);
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

/* ---- calls of functions named by --task-function (transform.c recognises their entries) ----
 *
 * A call is a task instance exactly as if tareador_start_task/end_task surrounded it: it starts
 * at the function's first instruction and ends when it returns. The return is seen without an
 * Interceptor hook: at the entry, the return address on the stack is swapped for the return
 * stub (agent.js), whose block transform.c recognises and whose code jumps to the address that
 * tr_function_return leaves in tr_return_to. One stack of open calls serves recursion; a tail
 * call (jmp to a task function: its return address is already the stub) opens a call on the
 * same stack slot, and both end at the one return. Not Interceptor.attach: it cannot hook a
 * function shorter than its jump (a lone ret at -O2), and it runs the function's first
 * instructions relocated into Frida's memory, outside the analysed code: their accesses and
 * instructions would be lost. Assumed: no longjmp out of a task function (its task would stay
 * open), and no code reading its own return address (backtraces, C++ unwinding see the stub). */
typedef struct { uint64_t sp, return_address; const char *name; } OpenCall;

uint64_t tr_return_stub;   /* set by agent.js */
uint64_t tr_return_to;     /* read by the stub's code */
static OpenCall open_calls[MAX_DEPTH];
static uint32_t open_call_count;

/* tareador_OFF inside a called task function: the thread runs on unfollowed, so the stub would
 * find no bookkeeping; the real return addresses go back on the stack. */
static void restore_return_addresses(void) {
  while (open_call_count) {
    OpenCall *c = &open_calls[--open_call_count];
    *(uint64_t *) c->sp = c->return_address;
  }
}

/* sp points at the return address (the function's first instruction has not run). */
void tr_function_enter(const char *name, uint64_t sp, uint64_t rbp) {
  uint64_t *slot = (uint64_t *) sp, return_address = *slot;
  int tail = return_address == tr_return_stub && open_call_count && open_calls[open_call_count - 1].sp == sp;
  if (tail) return_address = open_calls[open_call_count - 1].return_address;
  uint32_t depth = tr_state.depth;
  *slot = return_address;   /* register_frames names the caller's frame by it */
  entering_function = 1;
  tr_marker(MARK_START, (uint64_t) name, sp, return_address, rbp);
  entering_function = 0;
  if (tr_state.depth == depth || open_call_count == MAX_DEPTH) {   /* too deep: left as an ordinary call */
    if (tail) *slot = tr_return_stub;
    return;
  }
  open_calls[open_call_count++] = (OpenCall) { sp, return_address, name };
  *slot = tr_return_stub;
}

/* The stub was reached by a return: sp is just above the slot it came through. Every call
 * opened on that slot ends; the stub goes on at their caller's return address. */
void tr_function_return(uint64_t sp) {
  while (open_call_count && open_calls[open_call_count - 1].sp == sp - 8) {
    OpenCall *c = &open_calls[--open_call_count];
    tr_return_to = c->return_address;
    returning_from_function = 1;
    tr_marker(MARK_END, (uint64_t) c->name, sp - 8, c->return_address, 0);
    returning_from_function = 0;
  }
}

static uint64_t mpi_entered_at;   /* the outermost MPI call under way, if mpi_inside */
static uint32_t mpi_inside;

static AddressSet object_sites;   /* of the objects listed with a site, for the agent to describe */

/* The run ends (exit, crash, interrupt): charge what ran since the last marker; every table
 * leaves. */

void tr_finish(void) {
  tr_flush();
  /* Ended while waiting inside an MPI call (a timeout, another rank's crash, MPI_Abort): the
   * instructions the library ran there are not the program's. */
  if (mpi_inside) tr_state.instructions = mpi_entered_at;
  if (tr_state.following) settle();
  if (tr_state.following && tr_state.depth)
    fail(ERROR_OPEN_AT_OFF, open_tasks[tr_state.depth - 1].name, 0);
  tr_state.following = 0;
  if (task_count) end_fragment(task_count - 1);
  uint64_t rows = task_count - task_first;
  write_rows(task_file, task_rows, &rows, sizeof(TaskRow));
  task_first = task_count;
  write_edges();
  write_accesses();
  write_rows(call_file, call_rows, &call_count, sizeof(CallRow));
  tr_table_append(tr_table_open("objects.bin"), objects, object_count * sizeof(ObjectRow));
  for (uint64_t i = 0; i < object_count; i++)
    if (objects[i].kind != KIND_GLOBAL && !objects[i].latent && objects[i].site) set_add(&object_sites, objects[i].site);
}

/* Allocator calls: their own accesses (headers, tcache links, realloc's copy) are not the
 * program's; discard them. */
static uint32_t allocator_depth;
void tr_enter_allocator(void) { tr_flush(); tr_state.suppress++; allocator_depth++; }
void tr_leave_allocator(void) {
  tr_flush();
  if (tr_state.suppress) tr_state.suppress--;
  if (allocator_depth) allocator_depth--;
}

/* Whether the traced thread is inside the allocator: a crash there (glibc's "corrupted top
 * size" abort) may hold its lock, and whatever allocates on the way out would wait forever. */
uint32_t tr_in_allocator(void) { return allocator_depth; }

/* ---- MPI calls (mpi.c): nothing inside them is the program's work or data flow ---- */

/* A polling loop: an unsuccessful test (nothing completed, nothing arrived) at polling_at,
 * made while task_count was polling_tasks. */
static uint32_t polling;
static uint64_t polling_at, polling_tasks;

/* Entering an MPI call (the outermost): what the program accessed so far is analysed, what the
 * library does is discarded, and its instructions (busy-wait loops that vary from run to run)
 * are not counted. A test that follows an unsuccessful one with no task boundary in between
 * (poll != 0) goes on waiting: what the program ran since is its polling loop, not work, and
 * the counter goes back to the first test of the loop. Returns the instruction counter; *task
 * is the running fragment, UINT32_MAX outside the analysed region. */
uint64_t tr_enter_mpi(uint32_t *task, uint32_t poll) {
  tr_flush();
  if (poll && polling && polling_tasks == task_count) tr_state.instructions = polling_at;
  polling = 0;
  tr_state.suppress++;
  mpi_inside = 1;
  *task = tr_state.following ? tr_state.current : UINT32_MAX;
  return mpi_entered_at = tr_state.instructions;
}

void tr_leave_mpi(void) {
  tr_flush();
  if (tr_state.suppress) tr_state.suppress--;
  tr_state.instructions = mpi_entered_at;
  mpi_inside = 0;
}

/* The call under way was a test that found nothing (mpi.c): the program is polling. */
void tr_mpi_polled(void) {
  polling = 1;
  polling_at = mpi_entered_at;
  polling_tasks = task_count;
}

/* A message's whole buffer, read by a send or written by a completed receive, charged to the
 * running fragment as if the program's own code had accessed it: the ordinary analysis then
 * names the object and the bytes. Returns the object holding address (shadow id + 1, 0 none). */
uint32_t tr_mpi_access(uint64_t address, uint64_t size, uint32_t is_write) {
  uint32_t object = object_at(address), suppressed = tr_state.suppress;
  tr_flush();
  tr_access_time = mpi_entered_at;   /* the call's time: what ran inside it is not counted */
  tr_state.suppress = 0;
  for (uint64_t step; size; address += step, size -= step) {
    step = size < ACCESS_SIZE_MASK ? size : ACCESS_SIZE_MASK;
    tr_state.cursor->address = address;
    tr_state.cursor->info = step | ACCESS_PROGRAM | (is_write ? ACCESS_WRITE : 0);
    tr_state.cursor++;
    tr_flush();
  }
  tr_state.suppress = suppressed;
  return object;
}

/* Shadow for patterns.c, mapped like this file's but at the address hint when it is free. */
void *tr_map_at(uint64_t hint, uint64_t bytes) {
  return address_or_null(sys(SYS_mmap, (long) hint, (long) bytes, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
}

/* mpi.c keeps its tables in memory it grows through here (a CModule's statics are read-only). */
void *tr_grow(void *table, uint64_t *capacity, uint64_t row_size) { return grow(table, capacity, row_size); }

/* The bytes an xsave writes (and an xrstor reads) for every state component enabled in XCR0:
 * CPUID leaf 0xD's EBX, the standard format's size. transform.c records that whole area, which
 * is exact for xsave and xrstor with all components requested (as the C library's use) and
 * conservative for a smaller request or the compacted xsavec. */
uint64_t tr_xsave_bytes;

static uint64_t xsave_bytes(void) {
  unsigned int a, b, c, d;
  return __get_cpuid_count(0xd, 0, &a, &b, &c, &d) ? b : 512;
}

extern int tr_tables_directory(const char *path);

/* Memory aligned to its size rounded up to a power of two: it never crosses a 4 GiB boundary
 * (the transform compares the record buffer's cursor with its limit by their low 32 bits). */
static void *aligned_map(uint64_t bytes) {
  uint64_t size = 1;
  while (size < bytes) size *= 2;
  char *p = map(2 * size);
  return p ? (void *) (((uint64_t) p + size - 1) & ~(size - 1)) : NULL;
}

/* Returns 0, -1 when out of memory, -2 when the table files cannot be made in the directory
 * tables (tr_tables_error says why). rows: the rows each streamed table keeps in memory. */
int tr_init(uint64_t buffer_records, uint64_t rows, const char *tables, uint64_t stack_low, uint64_t stack_high) {
  tr_xsave_bytes = xsave_bytes();
  table_rows = rows ? rows : 1;
  uint64_t slots = 16;
  while (slots < 2 * table_rows) slots *= 2;
  directory = map(DIRECTORY_SIZE * sizeof(ShadowChunk *));
  tr_state.buffer = aligned_map(buffer_records * sizeof(AccessRecord));
  edge_slots = map(slots * sizeof(uint32_t));
  slot_mask = slots - 1;
  task_rows = map(table_rows * sizeof(TaskRow));
  edges = map(table_rows * sizeof(EdgeRow));
  access_rows = map(table_rows * sizeof(AccessRow));
  call_rows = map(table_rows * sizeof(CallRow));
  if (!directory || !tr_state.buffer || !edge_slots || !task_rows || !edges || !access_rows || !call_rows) return -1;
  if (tr_tables_directory(tables) || (task_file = tr_table_open("tasks.bin")) < 0
      || (edge_file = tr_table_open("edges.bin")) < 0 || (access_file = tr_table_open("accesses.bin")) < 0
      || (call_file = tr_table_open("calls.bin")) < 0) return -2;
  tr_state.buffer_records = buffer_records;
  tr_state.cursor = tr_state.buffer;
  /* Headroom: a block checks the limit once, then may append up to this many records. */
  tr_state.limit = tr_state.buffer + buffer_records - 4096;
  tr_state.stack_low = stack_low;
  tr_state.stack_high = stack_high;
  intern("main");
  return 0;
}

/* ---- where Stalker put each instruction, so that a crash in the copy names the original ---- */

typedef struct { uint64_t translated, original; } Translation;
static Translation *translations; static uint64_t translation_count, translation_capacity;

/* Called by the transform for every instruction it compiles (once per block, not per run). */
void tr_translated(uint64_t translated, uint64_t original) {
  if (translation_count == translation_capacity) {
    Translation *grown = grow(translations, &translation_capacity, sizeof(Translation));
    if (!grown) return;
    translations = grown;
  }
  translations[translation_count].translated = translated;
  translations[translation_count++].original = original;
}

/* The original of the instruction whose copy starts nearest below pc, 0 if none. The newest
 * copy wins a tie: Stalker recompiles blocks in place. */
uint64_t tr_original(uint64_t pc) {
  uint64_t best = 0, distance = UINT64_MAX;
  for (uint64_t i = translation_count; i-- > 0;)
    if (pc >= translations[i].translated && pc - translations[i].translated < distance) {
      distance = pc - translations[i].translated;
      best = translations[i].original;
    }
  return best;
}

/* The code addresses the agent describes at the end (tr_finish): objects' allocation sites
 * (which = 0) and the sites of task bodies' calls (which = 1). */
const uint64_t *tr_sites(uint32_t which, uint64_t *count) {
  const AddressSet *set = which ? &call_sites : &object_sites;
  *count = set->count;
  return set->values;
}
/* Counters, the first annotation error and T-infinity (after tr_finish), for progress reports
 * and the final summary. */
void tr_status(uint64_t out[10]) {
  out[0] = tr_state.accesses; out[1] = tr_state.flushes; out[2] = task_count;
  out[3] = tr_state.error; out[4] = tr_state.error_task; out[5] = tr_state.error_name;
  out[6] = tr_state.error_site; out[7] = tr_state.instructions; out[8] = instance_count;
  out[9] = critical_path;
}
const char *tr_name(uint32_t i) { return i < name_count ? names[i] : NULL; }
uint32_t tr_name_count(void) { return name_count; }
