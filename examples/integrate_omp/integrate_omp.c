/* The divide and conquer of examples/integrate/integrate.c as OpenMP tasks: same recursion and
 * leaves, the tareador markers replaced by the pragmas `tareador hints` printed for a trace of
 * integrate.c (tests/test_hints.py traces it again and checks that these are still them):
 *   tareador trace -o in.tareador -- ./bin/integrate 2 100 && tareador hints in.tareador
 * Each task writes its result through `out` into a local of the split that created it (`left`,
 * `right`): the item is what `out` points at, and `out` itself, a pointer, is copied into the
 * task as OpenMP copies its creator's locals (shared, it would be spawn's, gone when spawn
 * returns). The taskwaits are where hints says a task's code after creating tasks (the
 * addition in node) and the program's own code (main's read of the result, after the parallel
 * region's end, which waits for every task) read what tasks wrote.
 * Usage: integrate_omp [LEVELS [N]]; prints the wall time of the recursion. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <omp.h>

static double f(double x) { return sin(x) * exp(-x / 32) + cos(3 * x) / (1 + x); }

/* Simpson's rule on [a, b] with n (even) intervals: compute-bound, a sin, an exp and a cos per point. */
static void leaf(double a, double b, long n, double *out)
{
  double h = (b - a) / n, s = f(a) + f(b);
  for (long i = 1; i < n; i++) s += (i % 2 ? 4 : 2) * f(a + i * h);
  *out = s * h / 3;
}

static void node(double a, double b, int depth, long n, double *out);

static void spawn(double a, double b, int depth, long n, double *out)
{
  if (depth == 0) {
    #pragma omp task depend(out: out[0:1])
    leaf(a, b, n, out);
  } else {
    #pragma omp task depend(out: out[0:1])
    node(a, b, depth, n, out);
  }
}

static void node(double a, double b, int depth, long n, double *out)
{
  double m = (a + b) / 2, left, right;
  spawn(a, m, depth - 1, n, &left);
  spawn(m, b, depth - 1, n, &right);
  #pragma omp taskwait
  *out = left + right;
}

static double reference(double a, double b, int depth, long n)
{
  if (depth == 0) {
    double s;
    leaf(a, b, n, &s);
    return s;
  }
  double m = (a + b) / 2;
  double left = reference(a, m, depth - 1, n), right = reference(m, b, depth - 1, n);
  return left + right;
}

int main(int argc, char **argv)
{
  int levels = argc > 1 ? atoi(argv[1]) : 4;
  long n = argc > 2 ? atol(argv[2]) : 1000;
  if (levels < 0 || levels > 20 || n < 2 || n % 2) {
    fprintf(stderr, "usage: integrate_omp [LEVELS (0..20) [N (even, >= 2)]]\n");
    return 2;
  }
  double total;
  double started = omp_get_wtime();
#pragma omp parallel
#pragma omp single
  spawn(0, 64, levels, n, &total);
  double seconds = omp_get_wtime() - started;
  double result = total;

  int ok = result == reference(0, 64, levels, n);
  printf("integrate_omp LEVELS=%d N=%ld threads=%d seconds=%.6f integral=%.12f check=%s\n", levels, n,
         omp_get_max_threads(), seconds, result, ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
