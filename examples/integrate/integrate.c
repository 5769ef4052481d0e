/* Recursive divide and conquer with taskwait: the integral of f over [0, 64] by halving the
 * interval LEVELS times; each of the 2^LEVELS leaves applies Simpson's rule with N points.
 * Usage: integrate [LEVELS [N]]   (defaults 4 and 1000)
 *
 * Every inner node is a task "split" that creates its two halves as tasks and then adds their
 * results, which they wrote into its own locals (the taskwait pattern); every leaf is a task
 * "leaf". Expected, per split: 3 fragments (before each child, and the addition after them);
 * the children start after the 1st and the 2nd; the 3rd reads 8 bytes from each child (its
 * leaf's only fragment, or its split's 3rd) through the split's private stack; main reads the
 * root's result after it. The check: the same recursion without tasks gives the same bits. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "tareador.h"

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
    tareador_start_task("leaf");
    leaf(a, b, n, out);
    tareador_end_task("leaf");
  } else {
    tareador_start_task("split");
    node(a, b, depth, n, out);
    tareador_end_task("split");
  }
}

static void node(double a, double b, int depth, long n, double *out)
{
  double m = (a + b) / 2, left, right;
  spawn(a, m, depth - 1, n, &left);
  spawn(m, b, depth - 1, n, &right);
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
    fprintf(stderr, "usage: integrate [LEVELS (0..20) [N (even, >= 2)]]\n");
    return 2;
  }
  double total;
  tareador_ON();
  spawn(0, 64, levels, n, &total);
  double result = total;
  tareador_OFF();

  int ok = result == reference(0, 64, levels, n);
  printf("integrate LEVELS=%d N=%ld integral=%.12f check=%s\n", levels, n, result, ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
