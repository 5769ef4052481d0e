/* The creator pattern: main creates, per iteration k, a task "chain" of 2 units of work that
 * reads and writes one shared state (so it depends on the chain of iteration k-1) and a task
 * "side" of 1 unit that reads and writes only its own slot (independent), in that order.
 * Usage: chainside [K [UNIT]]   (K iterations, UNIT steps of work per unit; defaults 32 and 100000)
 *
 * T1 = 3K units, T-inf = 2K units (the chain). Expected RAW dependencies: chain(k) on chain(k-1)
 * (8 bytes of state) for k >= 1, nothing else between tasks; main after the loop reads nothing
 * the tasks wrote (the check runs after tareador_OFF). A runtime whose creating thread first
 * creates every task and keeps one FIFO ready queue (libgomp) runs the sides before chain(1),
 * which becomes ready only when chain(0) ends: on 2 cores 2K + K/2 - 1 units instead of 2K
 * (tests/test_list_scheduler.py derives both). The chainside_omp example is this program with
 * the pragmas tareador hints gives. */
#include <stdio.h>
#include <stdlib.h>
#include "tareador.h"

static double state; /* the chain's: a global, shared by every task of an OpenMP version too */

/* steps of Heron's iteration towards sqrt(2), nudged so that it never settles: compute-bound,
 * one division per step. */
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
  if (K < 1 || unit < 1) { fprintf(stderr, "usage: chainside [K [UNIT]]\n"); return 2; }
  double *side = malloc(sizeof(double) * K);
  if (!side) { perror("malloc"); return 2; }
  state = 1.0;
  for (int k = 0; k < K; k++) side[k] = 1.0 + k;

  tareador_ON();
  for (int k = 0; k < K; k++) {
    tareador_start_task("chain");
    chain_step(&state, unit);
    tareador_end_task("chain");
    tareador_start_task("side");
    side_step(&side[k], unit);
    tareador_end_task("side");
  }
  tareador_OFF();

  /* The same steps in program order give bit-identical results. */
  double s = 1.0;
  int ok = 1;
  for (int k = 0; k < K; k++) {
    s = work(s, 2 * unit);
    ok &= side[k] == work(1.0 + k, unit);
  }
  ok &= s == state;
  printf("chainside K=%d UNIT=%ld state=%.12f check=%s\n", K, unit, state, ok ? "ok" : "FAILED");
  free(side);
  return ok ? 0 : 1;
}
