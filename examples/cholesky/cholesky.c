/* Tiled Cholesky factorisation (lower-triangular storage by tile columns), the classic OmpSs /
 * Tareador lab code: usage `cholesky NT TS` (NT x NT tiles of TS x TS doubles).
 *
 * Each kernel call is one task; which tiles it reads (R) and writes (W):
 *   potrf(A[k][k])                       RW A[k][k]
 *   trsm(A[k][k], A[k][i])               R  A[k][k], RW A[k][i]
 *   gemm(A[k][i], A[k][j], A[j][i])      R  A[k][i], A[k][j], RW A[j][i]
 *   syrk(A[k][i], A[i][i])               R  A[k][i], RW A[i][i]
 * Here A[k][i] (i > k) holds the block L(i,k) of the factor. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "tareador.h"

static int TS;

static double *alloc_tile(void) { return malloc(sizeof(double) * TS * TS); }

/* Cholesky of one tile in place: a = L L^T, L stored in the lower triangle. */
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

/* b := b L^-T with L the factor in the diagonal tile. */
static void trsm(const double *l, double *b)
{
  for (int r = 0; r < TS; r++)
    for (int j = 0; j < TS; j++) {
      double s = b[r * TS + j];
      for (int k = 0; k < j; k++) s -= b[r * TS + k] * l[j * TS + k];
      b[r * TS + j] = s / l[j * TS + j];
    }
}

/* c := c - a b^T */
static void gemm(const double *a, const double *b, double *c)
{
  for (int i = 0; i < TS; i++)
    for (int j = 0; j < TS; j++) {
      double s = 0;
      for (int k = 0; k < TS; k++) s += a[i * TS + k] * b[j * TS + k];
      c[i * TS + j] -= s;
    }
}

/* c := c - a a^T (only the lower triangle is needed) */
static void syrk(const double *a, double *c)
{
  for (int i = 0; i < TS; i++)
    for (int j = 0; j <= i; j++) {
      double s = 0;
      for (int k = 0; k < TS; k++) s += a[i * TS + k] * a[j * TS + k];
      c[i * TS + j] -= s;
    }
}

/* Symmetric positive definite: a[r][c] = 1/(1+|r-c|) + n on the diagonal. */
static double spd(int r, int c, int n) { return 1.0 / (1 + abs(r - c)) + (r == c ? n : 0); }

int main(int argc, char **argv)
{
  int NT = argc > 1 ? atoi(argv[1]) : 4;
  TS = argc > 2 ? atoi(argv[2]) : 16;
  int n = NT * TS;
  if (NT < 1 || TS < 1) { fprintf(stderr, "usage: cholesky NT TS\n"); return 2; }
  double ***A = malloc(sizeof(double **) * NT);
  for (int k = 0; k < NT; k++) {
    A[k] = malloc(sizeof(double *) * NT);
    for (int i = 0; i < NT; i++) A[k][i] = i >= k ? alloc_tile() : NULL;
  }
  /* Tile A[k][i] (i >= k) holds the matrix block of rows i*TS.., columns k*TS.. */
  for (int k = 0; k < NT; k++)
    for (int i = k; i < NT; i++)
      for (int r = 0; r < TS; r++)
        for (int c = 0; c < TS; c++) A[k][i][r * TS + c] = spd(i * TS + r, k * TS + c, n);

  tareador_ON();
  for (int k = 0; k < NT; k++) {
    tareador_start_task("potrf"); potrf(A[k][k]); tareador_end_task("potrf");
    for (int i = k + 1; i < NT; i++) {
      tareador_start_task("trsm"); trsm(A[k][k], A[k][i]); tareador_end_task("trsm");
    }
    for (int i = k + 1; i < NT; i++) {
      for (int j = k + 1; j < i; j++) {
        tareador_start_task("gemm"); gemm(A[k][i], A[k][j], A[j][i]); tareador_end_task("gemm");
      }
      tareador_start_task("syrk"); syrk(A[k][i], A[i][i]); tareador_end_task("syrk");
    }
  }
  tareador_OFF();

  /* Check: (L L^T)[r][c] against the original matrix, on the lower triangle. */
  double worst = 0;
  for (int r = 0; r < n; r++)
    for (int c = 0; c <= r; c++) {
      double s = 0;
      for (int k = 0; k <= c; k++) {
        double lr = A[k / TS][r / TS][(r % TS) * TS + k % TS], lc = A[k / TS][c / TS][(c % TS) * TS + k % TS];
        if (r / TS == k / TS && k % TS > r % TS) lr = 0;
        if (c / TS == k / TS && k % TS > c % TS) lc = 0;
        s += lr * lc;
      }
      worst = fmax(worst, fabs(s - spd(r, c, n)));
    }
  int ok = worst < 1e-8 * n;
  printf("cholesky NT=%d TS=%d check=%s\n", NT, TS, ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
