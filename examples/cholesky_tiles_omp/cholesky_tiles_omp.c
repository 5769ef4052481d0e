/* The tiled Cholesky of examples/cholesky_tiles/cholesky_tiles.c (one allocation, PLASMA's tile
 * layout) as OpenMP tasks: same storage, kernels and loop nest, the tareador markers replaced by
 * the pragmas `tareador hints` printed for a trace of cholesky_tiles.c (tests/test_hints.py traces
 * it again and checks that these are still them):
 *   tareador trace -o tiles.tareador -- ./bin/cholesky_tiles 4 16 && tareador hints tiles.tareador --size TS=16
 * Each tile is named by the expression that addresses it, TILE(i, k), so that every kernel's item
 * on a tile starts where the tile starts; as GCC takes no array section after a macro's result,
 * the item is the tile's first element (OpenMP runtimes match items by their start address, and
 * all items of a tile are that one element). Usage: cholesky_tiles_omp [NT [TS]]. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <omp.h>

static int TS; /* tile side, set once before the factorisation */

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
  if (NT < 1 || TS < 1) { fprintf(stderr, "usage: cholesky_tiles_omp [NT [TS]]\n"); return 2; }
  int n = NT * TS;

  double *A = malloc(sizeof(double) * n * n);
  if (!A) { perror("malloc"); return 2; }
  /* Initialised before the timed factorisation. */
  for (int k = 0; k < NT; k++)
    for (int i = k; i < NT; i++)
      for (int r = 0; r < TS; r++)
        for (int c = 0; c < TS; c++) TILE(i, k)[r * TS + c] = spd(i * TS + r, k * TS + c, n);

  /* Task creation order, the right-looking nest of the OmpSs cholesky. */
  double started = omp_get_wtime();
#pragma omp parallel
#pragma omp single
  {
  for (int k = 0; k < NT; k++) {
    #pragma omp task depend(inout: TILE(k, k)[0])
    potrf(TILE(k, k));
    for (int i = k + 1; i < NT; i++) {
      #pragma omp task depend(in: TILE(k, k)[0]) depend(inout: TILE(i, k)[0])
      trsm(TILE(k, k), TILE(i, k));
    }
    for (int i = k + 1; i < NT; i++) {
      for (int j = k + 1; j < i; j++) {
        #pragma omp task depend(in: TILE(i, k)[0], TILE(j, k)[0]) depend(inout: TILE(i, j)[0])
        gemm(TILE(i, k), TILE(j, k), TILE(i, j));
      }
      #pragma omp task depend(in: TILE(i, k)[0]) depend(inout: TILE(i, i)[0])
      syrk(TILE(i, k), TILE(i, i));
    }
  }
  }
  double seconds = omp_get_wtime() - started;

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
  printf("cholesky_tiles_omp NT=%d TS=%d threads=%d seconds=%.6f residual=%.3e check=%s\n", NT, TS,
         omp_get_max_threads(), seconds, worst / (n + 1), ok ? "ok" : "FAILED");
  free(A);
  return ok ? 0 : 1;
}
