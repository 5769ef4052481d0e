/* What timing costs a program (benchmarks/timing_overhead.py): COUNT empty tasks, as a pair of
 * markers around nothing, or as calls of an empty function (for --task-function). Writes the
 * loop's CPU time in seconds (the thread's: on a busy machine its wall time also counts the
 * waits for a core) to the file named by LOOP_SECONDS.
 * Usage: timing_overhead markers|calls COUNT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tareador.h"

static volatile long sink;

/* Long enough for a hook (Interceptor needs a few bytes to patch). */
__attribute__((noinline)) void empty_task(long i) { sink = i; sink = sink + 1; }

static double now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int main(int argc, char **argv)
{
  int calls = argc > 1 && strcmp(argv[1], "calls") == 0;
  long count = argc > 2 ? atol(argv[2]) : 1000000;
  tareador_ON();
  double started = now();
  for (long i = 0; i < count; i++) {
    if (calls) {
      empty_task(i);
    } else {
      tareador_start_task("empty");
      sink = i;
      tareador_end_task("empty");
    }
  }
  double seconds = now() - started;
  tareador_OFF();
  const char *path = getenv("LOOP_SECONDS");
  FILE *f = path ? fopen(path, "w") : NULL;
  if (f) { fprintf(f, "%.9f\n", seconds); fclose(f); }
  return 0;
}
