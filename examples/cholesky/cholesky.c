/* Tiled Cholesky factorisation, the classic OmpSs / Tareador lab code.
 * Usage: cholesky [NT [TS]]   (NT x NT tiles of TS x TS doubles; defaults 4 and 16)
 *
 * Storage: A[k][i] with i >= k is the tile of matrix rows i*TS.., columns k*TS.. (the lower
 * triangle, tile by tile; tiles with i < k are never used, so they are not allocated). Every
 * tile is its own malloc'ed block, so the tracer sees one heap object per tile and names the
 * dependencies after the tiles. Within a tile, element (r, c) is at [r * TS + c].
 * On return A[k][i] holds the tile L(i, k) of the factor L (A = L L^T).
 *
 * One task per kernel call. Which tiles each kernel reads (R) and writes (W); every written
 * tile is also read first (RW), so a kernel depends on that tile's previous writer too:
 *   potrf(A[k][k])                    RW A[k][k]
 *   trsm (A[k][k], A[k][i])           R  A[k][k]           RW A[k][i]
 *   gemm (A[k][i], A[k][j], A[j][i])  R  A[k][i], A[k][j]  RW A[j][i]
 *   syrk (A[k][i], A[i][i])           R  A[k][i]           RW A[i][i]
 * tests/cholesky_dag.py derives the expected task graph from this table and the loop nest. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "tareador.h"

static int TS; /* tile side, set once before tareador_ON() */

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
  /* Initialised before tareador_ON(): these writes are not analysed. */
  for (int k = 0; k < NT; k++)
    for (int i = k; i < NT; i++)
      for (int r = 0; r < TS; r++)
        for (int c = 0; c < TS; c++) A[k][i][r * TS + c] = spd(i * TS + r, k * TS + c, n);

  /* Task creation order, the right-looking nest of the OmpSs cholesky. */
  tareador_ON();
  for (int k = 0; k < NT; k++) {
    tareador_start_task("potrf");
    potrf(A[k][k]);
    tareador_end_task("potrf");
    for (int i = k + 1; i < NT; i++) {
      tareador_start_task("trsm");
      trsm(A[k][k], A[k][i]);
      tareador_end_task("trsm");
    }
    for (int i = k + 1; i < NT; i++) {
      for (int j = k + 1; j < i; j++) {
        tareador_start_task("gemm");
        gemm(A[k][i], A[k][j], A[j][i]);
        tareador_end_task("gemm");
      }
      tareador_start_task("syrk");
      syrk(A[k][i], A[i][i]);
      tareador_end_task("syrk");
    }
  }
  tareador_OFF();

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
  printf("cholesky NT=%d TS=%d residual=%.3e check=%s\n", NT, TS, worst / (n + 1), ok ? "ok" : "FAILED");

  for (int k = 0; k < NT; k++) {
    for (int i = k; i < NT; i++) free(A[k][i]);
    free(A[k]);
  }
  free(A);
  return ok ? 0 : 1;
}
