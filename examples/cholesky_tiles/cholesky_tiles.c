/* The tiled Cholesky of examples/cholesky with the tile layout of PLASMA: the whole matrix is
 * one malloc'ed block, tile by tile, so that a kernel's tiles are parts of one heap object.
 * Usage: cholesky_tiles [NT [TS]]   (NT x NT tiles of TS x TS doubles; defaults 4 and 16)
 *
 * Storage: tile (i, k), rows i*TS.., columns k*TS.., is the TS*TS doubles at TILE(i, k), tiles
 * column after column (tile (i, k) is the (k*NT + i)-th); within a tile, element (r, c) is at
 * [r * TS + c]. Only the lower triangle of tiles (i >= k) is used. On return tile (i, k) holds the
 * tile L(i, k) of the factor L (A = L L^T). The kernels are cholesky.c's:
 *   potrf(TILE(k, k))                          RW (k, k)
 *   trsm (TILE(k, k), TILE(i, k))              R  (k, k)           RW (i, k)
 *   gemm (TILE(i, k), TILE(j, k), TILE(i, j))  R  (i, k), (j, k)   RW (i, j)
 *   syrk (TILE(i, k), TILE(i, i))              R  (i, k)           RW (i, i)
 * gemm reads two tiles of one column, which lie in one stretch of the block with other tiles
 * between them: tareador hints must name each tile by the expression that addresses it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "tareador.h"

static int TS; /* tile side, set once before tareador_ON() */

/* Tile (i, k) of the matrix at A, NT tiles a side. */
#define TILE(i, k) (A + ((size_t) (k) * NT + (i)) * TS * TS)

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
static double factor(const double *A, int NT, int r, int c)
{
  return c > r ? 0 : TILE(r / TS, c / TS)[(r % TS) * TS + c % TS];
}

int main(int argc, char **argv)
{
  int NT = argc > 1 ? atoi(argv[1]) : 4;
  TS = argc > 2 ? atoi(argv[2]) : 16;
  if (NT < 1 || TS < 1) { fprintf(stderr, "usage: cholesky_tiles [NT [TS]]\n"); return 2; }
  int n = NT * TS;

  double *A = malloc(sizeof(double) * n * n);
  if (!A) { perror("malloc"); return 2; }
  /* Initialised before tareador_ON(): these writes are not analysed. */
  for (int k = 0; k < NT; k++)
    for (int i = k; i < NT; i++)
      for (int r = 0; r < TS; r++)
        for (int c = 0; c < TS; c++) TILE(i, k)[r * TS + c] = spd(i * TS + r, k * TS + c, n);

  /* Task creation order, the right-looking nest of the OmpSs cholesky. */
  tareador_ON();
  for (int k = 0; k < NT; k++) {
    tareador_start_task("potrf");
    potrf(TILE(k, k));
    tareador_end_task("potrf");
    for (int i = k + 1; i < NT; i++) {
      tareador_start_task("trsm");
      trsm(TILE(k, k), TILE(i, k));
      tareador_end_task("trsm");
    }
    for (int i = k + 1; i < NT; i++) {
      for (int j = k + 1; j < i; j++) {
        tareador_start_task("gemm");
        gemm(TILE(i, k), TILE(j, k), TILE(i, j));
        tareador_end_task("gemm");
      }
      tareador_start_task("syrk");
      syrk(TILE(i, k), TILE(i, i));
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
      for (int k = 0; k <= c; k++) s += factor(A, NT, r, k) * factor(A, NT, c, k);
      worst = fmax(worst, fabs(s - spd(r, c, n)));
    }
  int ok = worst / (n + 1) < 1e-14 * n;
  printf("cholesky_tiles NT=%d TS=%d residual=%.3e check=%s\n", NT, TS, worst / (n + 1), ok ? "ok" : "FAILED");
  free(A);
  return ok ? 0 : 1;
}
