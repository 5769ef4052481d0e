/* The markers do almost nothing on purpose: the tracer recognises the first instruction of each
 * function. Each stores its argument to a volatile global so that the compiler keeps a distinct,
 * hookable body for every marker (an empty function compiles to a 1-byte `ret`, and identical
 * bodies may be merged into one address).
 *
 * The timing run (`tareador time`): with TAREADOR_TIMING=FILE in the environment the markers
 * also note when they ran, as (CLOCK_MONOTONIC ns, event, task name) in memory, and the whole
 * record is written to FILE when the program exits; the program runs natively, without the
 * tracer. tareador_timing_record is also what the timing agent's hooks call (task functions,
 * MPI calls: tracer_agents/timing.c), so that every event of a run lands in one record on one
 * clock. Off, a marker costs one load and a branch more than the store. File layout (little
 * endian): "TRDTIME1", the cost of one event in ns (double, measured at exit), the name count
 * (u32), the event count (u32 high, u32 low), each name as u32 length + bytes, then the events,
 * 16 bytes each: u64 ns, u32 event, u32 name (UINT32_MAX: none). TAREADOR_TIMING_REGION_ONLY=1
 * records only ON and OFF (an explore recording, whose tasks are functions). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "tareador.h"

volatile const void *tareador_last_marker_argument;
volatile int tareador_last_marker;

/* The events, as numbered in tareador/tracing/timing.py. */
enum { EVENT_ON = 1, EVENT_OFF = 2, EVENT_START = 3, EVENT_END = 4, EVENT_FINISH = 9 };
#define NO_NAME UINT32_MAX
#define NAME_SLOTS 4096 /* pointer -> name hash; names beyond it are found by comparing strings */

typedef struct { uint64_t ns; uint32_t event, name; } TareadorEvent;

/* All of it in one object whose name the tracer skips (globals named tareador_* are not the
 * program's data), should the markers be linked statically into a traced program. */
struct {
  int on, region_only;
  pid_t pid; /* the process timed: a forked child inherits the record, but does not write it */
  const char *path;
  TareadorEvent *events;
  uint64_t count, capacity;
  const char **names;
  uint32_t name_count, name_capacity;
  struct { const char *pointer; uint32_t name; } slots[NAME_SLOTS];
} tareador_timing;

static uint64_t now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

/* A task name's number: by its pointer (string literals keep theirs), else by its text. */
static uint32_t name_of(const char *name)
{
  uint64_t h = ((uint64_t) (uintptr_t) name * 0x9E3779B97F4A7C15ull) >> 52;
  for (uint32_t probe = 0; probe < 8; probe++) {
    uint32_t at = (uint32_t) (h + probe) & (NAME_SLOTS - 1);
    if (tareador_timing.slots[at].pointer == name) return tareador_timing.slots[at].name;
    if (!tareador_timing.slots[at].pointer) break;
  }
  uint32_t number = tareador_timing.name_count;
  for (uint32_t i = 0; i < tareador_timing.name_count; i++)
    if (strcmp(tareador_timing.names[i], name) == 0) { number = i; break; }
  if (number == tareador_timing.name_count) {
    if (number == tareador_timing.name_capacity) {
      uint32_t grown = number ? 2 * number : 64;
      const char **names = realloc(tareador_timing.names, sizeof(char *) * grown);
      if (!names) return NO_NAME;
      tareador_timing.names = names;
      tareador_timing.name_capacity = grown;
    }
    tareador_timing.names[tareador_timing.name_count++] = name;
  }
  for (uint32_t probe = 0; probe < 8; probe++) {
    uint32_t at = (uint32_t) (h + probe) & (NAME_SLOTS - 1);
    if (!tareador_timing.slots[at].pointer) {
      tareador_timing.slots[at].pointer = name;
      tareador_timing.slots[at].name = number;
      break;
    }
  }
  return number;
}

void tareador_timing_record(uint32_t event, const char *name)
{
  uint64_t ns = now_ns();
  if (!tareador_timing.on) return;
  if (tareador_timing.count == tareador_timing.capacity) {
    uint64_t grown = tareador_timing.capacity ? 2 * tareador_timing.capacity : 1 << 16;
    TareadorEvent *events = realloc(tareador_timing.events, sizeof(TareadorEvent) * grown);
    if (!events) { tareador_timing.on = 0; return; } /* the file then says nothing: an error there */
    tareador_timing.events = events;
    tareador_timing.capacity = grown;
  }
  TareadorEvent *e = &tareador_timing.events[tareador_timing.count++];
  e->ns = ns;
  e->event = event;
  e->name = name ? name_of(name) : NO_NAME;
}

/* What one event costs, as the time between two back to back: what each interval between two
 * events holds besides the program's own work. The fastest of several short batches: a batch
 * the scheduler interrupted would count the wait. */
static double event_cost(void)
{
  enum { BATCHES = 16, ROUNDS = 256 };
  uint64_t kept = tareador_timing.count, best = UINT64_MAX;
  const char *name = tareador_timing.name_count ? tareador_timing.names[0] : NULL;
  for (int b = 0; b < BATCHES; b++) {
    uint64_t began = now_ns();
    for (int i = 0; i < ROUNDS; i++) {
      tareador_timing_record(EVENT_START, name);
      tareador_timing.count = kept;
    }
    uint64_t took = now_ns() - began;
    best = took < best ? took : best;
  }
  return (double) best / ROUNDS;
}

static void write_timing(void)
{
  if (!tareador_timing.on || getpid() != tareador_timing.pid) return;
  tareador_timing_record(EVENT_FINISH, NULL);
  double cost = event_cost();
  tareador_timing.on = 0;
  FILE *f = fopen(tareador_timing.path, "wb");
  if (!f) { perror(tareador_timing.path); return; }
  uint32_t counts[3] = { tareador_timing.name_count, (uint32_t) (tareador_timing.count >> 32),
                         (uint32_t) tareador_timing.count };
  fwrite("TRDTIME1", 1, 8, f);
  fwrite(&cost, sizeof cost, 1, f);
  fwrite(counts, sizeof counts, 1, f);
  for (uint32_t i = 0; i < tareador_timing.name_count; i++) {
    uint32_t length = (uint32_t) strlen(tareador_timing.names[i]);
    fwrite(&length, sizeof length, 1, f);
    fwrite(tareador_timing.names[i], 1, length, f);
  }
  fwrite(tareador_timing.events, sizeof(TareadorEvent), tareador_timing.count, f);
  if (fclose(f) != 0) perror(tareador_timing.path);
}

__attribute__((constructor)) static void start_timing(void)
{
  const char *path = getenv("TAREADOR_TIMING");
  if (!path || !*path || tareador_timing.on) return;
  const char *region = getenv("TAREADOR_TIMING_REGION_ONLY");
  tareador_timing.path = path;
  tareador_timing.pid = getpid();
  tareador_timing.region_only = region && *region == '1';
  tareador_timing.on = 1;
  atexit(write_timing);
}

#define TAREADOR_MARKER(id, arg) do { tareador_last_marker_argument = (arg); tareador_last_marker = (id); } while (0)
#define TIMED(event, name) do { if (__builtin_expect(tareador_timing.on, 0)) tareador_timing_record(event, name); } while (0)
#define TIMED_TASK(event, name) do { if (__builtin_expect(tareador_timing.on, 0) && !tareador_timing.region_only) \
                                       tareador_timing_record(event, name); } while (0)

__attribute__((noinline)) void tareador_ON(void) { TAREADOR_MARKER(1, 0); TIMED(EVENT_ON, NULL); }
__attribute__((noinline)) void tareador_OFF(void) { TAREADOR_MARKER(2, 0); TIMED(EVENT_OFF, NULL); }
__attribute__((noinline)) void tareador_start_task(const char *name) { TAREADOR_MARKER(3, name); TIMED_TASK(EVENT_START, name); }
__attribute__((noinline)) void tareador_end_task(const char *name) { TAREADOR_MARKER(4, name); TIMED_TASK(EVENT_END, name); }
__attribute__((noinline)) void tareador_disable_object(const void *address) { TAREADOR_MARKER(5, address); }
__attribute__((noinline)) void tareador_enable_object(const void *address) { TAREADOR_MARKER(6, address); }
