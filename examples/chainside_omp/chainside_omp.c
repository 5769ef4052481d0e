/* The creator pattern of examples/chainside/chainside.c as OpenMP tasks: same work, same loop,
 * the tareador markers replaced by the pragmas `tareador hints` printed for a trace of it
 * (tests/test_hints.py traces it again and checks that these are still them):
 *   tareador trace -o cs.tareador -- ./bin/chainside 4 1000 && tareador hints cs.tareador
 * One thread creates every task; libgomp queues them, and chain(k) becomes ready only when
 * chain(k-1) ends, behind the sides queued before it.
 * Usage: chainside_omp [K [UNIT]]; prints the wall time of the task region (OMP_NUM_THREADS
 * threads), which benchmarks/predict_vs_real.py compares with tareador simulate's prediction. */
#include <stdio.h>
#include <stdlib.h>
#include <omp.h>

static double state;

static double work(double x, long steps)
{
  for (long i = 0; i < steps; i++) x = 0.5 * (x + 2.0 / x) + 1e-9 * (double) (i & 7);
  return x;
}

static void chain_step(double *s, long unit) { *s = work(*s, 2 * unit); }

static void side_step(double *slot, long unit) { *slot = work(*slot, unit); }

int main(int argc, char **argv)
{
  int K = argc > 1 ? atoi(argv[1]) : 32;
  long unit = argc > 2 ? atol(argv[2]) : 100000;
  if (K < 1 || unit < 1) { fprintf(stderr, "usage: chainside_omp [K [UNIT]]\n"); return 2; }
  double *side = malloc(sizeof(double) * K);
  if (!side) { perror("malloc"); return 2; }
  state = 1.0;
  for (int k = 0; k < K; k++) side[k] = 1.0 + k;

  double started = omp_get_wtime();
#pragma omp parallel
#pragma omp single
  for (int k = 0; k < K; k++) {
    #pragma omp task depend(inout: state)
    chain_step(&state, unit);
    #pragma omp task depend(inout: side[k])
    side_step(&side[k], unit);
  }
  double seconds = omp_get_wtime() - started;

  double s = 1.0;
  int ok = 1;
  for (int k = 0; k < K; k++) {
    s = work(s, 2 * unit);
    ok &= side[k] == work(1.0 + k, unit);
  }
  ok &= s == state;
  printf("chainside_omp K=%d UNIT=%ld threads=%d seconds=%.6f state=%.12f check=%s\n", K, unit,
         omp_get_max_threads(), seconds, state, ok ? "ok" : "FAILED");
  free(side);
  return ok ? 0 : 1;
}
