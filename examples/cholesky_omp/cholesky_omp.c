/* The Cholesky of examples/cholesky/cholesky.c as OpenMP tasks: same storage, same kernels, same
 * loop nest, the tareador markers replaced by the pragmas `tareador hints` printed for a trace of
 * cholesky.c (tests/test_hints_examples.py traces it again and checks that these are still them):
 *   tareador trace -o chol.tareador -- ./bin/cholesky 3 16 && tareador hints chol.tareador --size TS=16
 * Usage: cholesky_omp [NT [TS]]; prints the factorisation's wall time (OMP_NUM_THREADS threads),
 * which benchmarks/predict_vs_real.py compares with tareador simulate's prediction. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <omp.h>

static int TS; /* tile side, set once before the factorisation */

/* Its own function so that every tile comes from a separate malloc() call. */
static double *alloc_tile(void)
{
  double *t = malloc(sizeof(double) * TS * TS);
  if (!t) { perror("malloc"); exit(2); }
  return t;
}

/* a := L with L L^T = a, L lower triangular (the strict upper triangle of a is left as is). */
static void potrf(double *a)
{
  for (int j = 0; j < TS; j++) {
    for (int k = 0; k < j; k++) a[j * TS + j] -= a[j * TS + k] * a[j * TS + k];
    a[j * TS + j] = sqrt(a[j * TS + j]);
    for (int i = j + 1; i < TS; i++) {
      for (int k = 0; k < j; k++) a[i * TS + j] -= a[i * TS + k] * a[j * TS + k];
      a[i * TS + j] /= a[j * TS + j];
    }
  }
}

/* b := b L^-T, with L the lower triangle of the factored diagonal tile l. */
static void trsm(const double *l, double *b)
{
  for (int r = 0; r < TS; r++)
    for (int j = 0; j < TS; j++) {
      double s = b[r * TS + j];
      for (int k = 0; k < j; k++) s -= b[r * TS + k] * l[j * TS + k];
      b[r * TS + j] = s / l[j * TS + j];
    }
}

/* c := c - a b^T (an off-diagonal tile of the trailing matrix). */
static void gemm(const double *a, const double *b, double *c)
{
  for (int i = 0; i < TS; i++)
    for (int j = 0; j < TS; j++) {
      double s = 0;
      for (int k = 0; k < TS; k++) s += a[i * TS + k] * b[j * TS + k];
      c[i * TS + j] -= s;
    }
}

/* c := c - a a^T on the lower triangle only (a diagonal tile: potrf reads nothing else). */
static void syrk(const double *a, double *c)
{
  for (int i = 0; i < TS; i++)
    for (int j = 0; j <= i; j++) {
      double s = 0;
      for (int k = 0; k < TS; k++) s += a[i * TS + k] * a[j * TS + k];
      c[i * TS + j] -= s;
    }
}

/* The input matrix, element (r, c) of n x n: symmetric, and strictly diagonally dominant with
 * a positive diagonal, hence positive definite. */
static double spd(int r, int c, int n) { return 1.0 / (1 + abs(r - c)) + (r == c ? n : 0); }

/* Element (r, c) of the factor L, read back from the tiles (zero above the diagonal, where the
 * diagonal tiles still hold the input). */
static double factor(double ***A, int r, int c)
{
  return c > r ? 0 : A[c / TS][r / TS][(r % TS) * TS + c % TS];
}

int main(int argc, char **argv)
{
  int NT = argc > 1 ? atoi(argv[1]) : 4;
  TS = argc > 2 ? atoi(argv[2]) : 16;
  if (NT < 1 || TS < 1) { fprintf(stderr, "usage: cholesky [NT [TS]]\n"); return 2; }
  int n = NT * TS;

  double ***A = malloc(sizeof(double **) * NT);
  for (int k = 0; k < NT; k++) {
    A[k] = malloc(sizeof(double *) * NT);
    for (int i = 0; i < NT; i++) A[k][i] = i >= k ? alloc_tile() : NULL;
  }
  /* Initialised before the timed factorisation. */
  for (int k = 0; k < NT; k++)
    for (int i = k; i < NT; i++)
      for (int r = 0; r < TS; r++)
        for (int c = 0; c < TS; c++) A[k][i][r * TS + c] = spd(i * TS + r, k * TS + c, n);

  /* Task creation order, the right-looking nest of the OmpSs cholesky; one thread creates. */
  double started = omp_get_wtime();
#pragma omp parallel
#pragma omp single
  for (int k = 0; k < NT; k++) {
    #pragma omp task depend(inout: A[k][k][0:TS*TS])
    potrf(A[k][k]);
    for (int i = k + 1; i < NT; i++) {
      #pragma omp task depend(in: A[k][k][0:TS*TS]) depend(inout: A[k][i][0:TS*TS])
      trsm(A[k][k], A[k][i]);
    }
    for (int i = k + 1; i < NT; i++) {
      for (int j = k + 1; j < i; j++) {
        #pragma omp task depend(in: A[k][i][0:TS*TS], A[k][j][0:TS*TS]) depend(inout: A[j][i][0:TS*TS])
        gemm(A[k][i], A[k][j], A[j][i]);
      }
      #pragma omp task depend(in: A[k][i][0:TS*TS]) depend(inout: A[i][i][0:TS*TS])
      syrk(A[k][i], A[i][i]);
    }
  }
  double seconds = omp_get_wtime() - started;

  /* Residual check: max |(L L^T)(r, c) - A(r, c)| over the lower triangle, relative to the
   * largest element of A (the diagonal, n + 1). Rounding grows about linearly with n. */
  double worst = 0;
  for (int r = 0; r < n; r++)
    for (int c = 0; c <= r; c++) {
      double s = 0;
      for (int k = 0; k <= c; k++) s += factor(A, r, k) * factor(A, c, k);
      worst = fmax(worst, fabs(s - spd(r, c, n)));
    }
  int ok = worst / (n + 1) < 1e-14 * n;
  printf("cholesky_omp NT=%d TS=%d threads=%d seconds=%.6f residual=%.3e check=%s\n", NT, TS, omp_get_max_threads(),
         seconds, worst / (n + 1), ok ? "ok" : "FAILED");

  for (int k = 0; k < NT; k++) {
    for (int i = k; i < NT; i++) free(A[k][i]);
    free(A[k]);
  }
  free(A);
  return ok ? 0 : 1;
}
