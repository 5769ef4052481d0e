/* What libgomp charges per task on this machine: the creating thread's time to create a task,
 * and the running thread's time to start, run and retire an empty one (benchmarks/runtime_costs.py
 * builds and runs this). In each round one task holds the team's other thread in a spin, so
 * the creator creates N tasks that nobody can take meanwhile (N stays under libgomp's limit of
 * 64 queued tasks per thread, beyond which it runs a new task at once instead of queueing it),
 * then runs them itself at the end of a taskgroup; the blocker is released after.
 * Usage: runtime_costs ROUNDS DEPEND (DEPEND 1: each task has depend(inout: its own item))
 * Prints: creation=<s per task> start=<s per task>. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define N 100

static volatile int started, released;
static double items[N];

int main(int argc, char **argv)
{
  int rounds = argc > 1 ? atoi(argv[1]) : 1000;
  int depend = argc > 2 ? atoi(argv[2]) : 0;
  double creating = 0, running = 0;
#pragma omp parallel num_threads(2)
#pragma omp single
  for (int r = 0; r < rounds; r++) {
    started = released = 0;
    #pragma omp task
    {
      started = 1;
      while (!released) __asm__ volatile("pause");
    }
    while (!started) __asm__ volatile("pause");
    double t0 = omp_get_wtime(), t1;
    #pragma omp taskgroup
    {
      if (depend)
        for (int i = 0; i < N; i++) {
          #pragma omp task depend(inout: items[i])
          __asm__ volatile("");
        }
      else
        for (int i = 0; i < N; i++) {
          #pragma omp task
          __asm__ volatile("");
        }
      t1 = omp_get_wtime();
    }
    double t2 = omp_get_wtime();
    released = 1;
    #pragma omp taskwait
    creating += t1 - t0;
    running += t2 - t1;
  }
  printf("creation=%.6e start=%.6e\n", creating / ((double) rounds * N), running / ((double) rounds * N));
  return 0;
}
