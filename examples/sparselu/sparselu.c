/* LU factorisation of a sparse blocked matrix with fill-in, after the sparse LU of the Barcelona
 * OpenMP Tasks Suite (single-creator version, BOTS' sparsity pattern): blocks that start as
 * zeros are not stored, and the factorisation allocates them where it fills them in.
 * Usage: sparselu [NB [BS]]   (NB x NB blocks of BS x BS doubles; defaults 6 and 8)
 *
 * Storage: M[i * NB + j] is block (i, j), its own malloc'ed block of BS * BS doubles (element
 * (r, c) at [r * BS + c]), or NULL where the block is zero. On return the blocks hold L (unit
 * lower triangular, below the diagonal) and U (on and above it) with L U = the input.
 * Step k, in this order, one task per kernel call:
 *   lu0 (M[k][k])                   RW (k, k)
 *   fwd (M[k][k], M[k][j]), j > k    R  (k, k), its strict lower triangle   RW (k, j)
 *   bdiv(M[k][k], M[i][k]), i > k    R  (k, k), its upper triangle          RW (i, k)
 *   bmod(M[i][k], M[k][j], M[i][j])  R  (i, k), (k, j)                      RW (i, j)
 * for the stored blocks only; when (i, j) is not stored, the code creating the tasks allocates
 * it and writes its zeros first (fill-in). Expected RAW dependencies: fwd and bdiv of k on lu0(k);
 * bmod(i, j, k) on bdiv(i, k) and fwd(k, j), and on the previous writer of (i, j) (the bmod of an
 * earlier k, or main's zeros for a new block); lu0(k), fwd(k, j) and bdiv(i, k) on the last
 * bmod of their block (tests/test_validation_examples.py derives them from this loop nest).
 * fwd reads only part of the diagonal block lu0 wrote: the list items of both must still start
 * at the block's start, or OpenMP does not order them. The check: the same kernels in the same
 * order per block give the same bits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tareador.h"

static int BS; /* block side, set once before tareador_ON() */

/* A block of zeros (a fill-in, or a stored block before its values), written here: calloc may
 * hand out fresh zero pages without writing them, and the fill-in's zeros are the writes of the
 * code creating the tasks that the first bmod of the block reads. */
static double *zero_block(void)
{
  double *b = malloc(sizeof(double) * BS * BS);
  if (!b) { perror("malloc"); exit(2); }
  for (int e = 0; e < BS * BS; e++) b[e] = 0.0;
  return b;
}

/* d := L U (in place, no pivoting; the diagonal blocks are diagonally dominant). */
static void lu0(double *d)
{
  for (int k = 0; k < BS; k++)
    for (int i = k + 1; i < BS; i++) {
      d[i * BS + k] /= d[k * BS + k];
      for (int j = k + 1; j < BS; j++) d[i * BS + j] -= d[i * BS + k] * d[k * BS + j];
    }
}

/* col := L^-1 col, L the unit lower triangle of the factored diagonal block d. */
static void fwd(const double *d, double *col)
{
  for (int j = 0; j < BS; j++)
    for (int k = 0; k < BS; k++)
      for (int i = k + 1; i < BS; i++) col[i * BS + j] -= d[i * BS + k] * col[k * BS + j];
}

/* row := row U^-1, U the upper triangle of the factored diagonal block d. */
static void bdiv(const double *d, double *row)
{
  for (int i = 0; i < BS; i++)
    for (int k = 0; k < BS; k++) {
      row[i * BS + k] /= d[k * BS + k];
      for (int j = k + 1; j < BS; j++) row[i * BS + j] -= row[i * BS + k] * d[k * BS + j];
    }
}

/* inner := inner - row col. */
static void bmod(const double *row, const double *col, double *inner)
{
  for (int i = 0; i < BS; i++)
    for (int j = 0; j < BS; j++) {
      double s = inner[i * BS + j];
      for (int k = 0; k < BS; k++) s -= row[i * BS + k] * col[k * BS + j];
      inner[i * BS + j] = s;
    }
}

/* Which blocks the input stores, BOTS' pattern (its genmat): the diagonal and its neighbours,
 * and the blocks of even row and column whose nearer one to the diagonal is a multiple of 3
 * (which fill in much of the rest of their rows and columns). */
static int stored(int i, int j) { return abs(i - j) <= 1 || (i % 2 == 0 && j % 2 == 0 && (i < j ? i : j) % 3 == 0); }

/* The input, block by block: pseudo-random elements in [-1, 1), the diagonal raised so that
 * every diagonal block stays diagonally dominant. */
static double **generate(int NB)
{
  double **M = malloc(sizeof(double *) * NB * NB);
  if (!M) { perror("malloc"); exit(2); }
  unsigned seed = 12345;
  for (int i = 0; i < NB; i++)
    for (int j = 0; j < NB; j++) {
      M[i * NB + j] = stored(i, j) ? zero_block() : NULL;
      for (int e = 0; M[i * NB + j] && e < BS * BS; e++) {
        seed = seed * 1103515245u + 12345u;
        M[i * NB + j][e] = (double) (seed >> 8 & 0xffff) / 32768.0 - 1 + (i == j && e % (BS + 1) == 0 ? 2 * NB * BS : 0);
      }
    }
  return M;
}

/* The same factorisation, one kernel after another, on a matrix of its own. */
static void reference(double **M, int NB)
{
  for (int k = 0; k < NB; k++) {
    lu0(M[k * NB + k]);
    for (int j = k + 1; j < NB; j++)
      if (M[k * NB + j]) fwd(M[k * NB + k], M[k * NB + j]);
    for (int i = k + 1; i < NB; i++)
      if (M[i * NB + k]) bdiv(M[k * NB + k], M[i * NB + k]);
    for (int i = k + 1; i < NB; i++)
      for (int j = k + 1; j < NB; j++)
        if (M[i * NB + k] && M[k * NB + j]) {
          if (!M[i * NB + j]) M[i * NB + j] = zero_block();
          bmod(M[i * NB + k], M[k * NB + j], M[i * NB + j]);
        }
  }
}

int main(int argc, char **argv)
{
  int NB = argc > 1 ? atoi(argv[1]) : 6;
  BS = argc > 2 ? atoi(argv[2]) : 8;
  if (NB < 1 || BS < 1) { fprintf(stderr, "usage: sparselu [NB [BS]]\n"); return 2; }
  double **M = generate(NB);

  tareador_ON();
  for (int k = 0; k < NB; k++) {
    tareador_start_task("lu0");
    lu0(M[k * NB + k]);
    tareador_end_task("lu0");
    for (int j = k + 1; j < NB; j++)
      if (M[k * NB + j]) {
        tareador_start_task("fwd");
        fwd(M[k * NB + k], M[k * NB + j]);
        tareador_end_task("fwd");
      }
    for (int i = k + 1; i < NB; i++)
      if (M[i * NB + k]) {
        tareador_start_task("bdiv");
        bdiv(M[k * NB + k], M[i * NB + k]);
        tareador_end_task("bdiv");
      }
    for (int i = k + 1; i < NB; i++)
      for (int j = k + 1; j < NB; j++)
        if (M[i * NB + k] && M[k * NB + j]) {
          if (!M[i * NB + j]) M[i * NB + j] = zero_block();
          tareador_start_task("bmod");
          bmod(M[i * NB + k], M[k * NB + j], M[i * NB + j]);
          tareador_end_task("bmod");
        }
  }
  tareador_OFF();

  /* Check: the same kernels in the same order per block give the same bits. */
  double **R = generate(NB);
  reference(R, NB);
  int ok = 1, filled = 0;
  for (int b = 0; b < NB * NB; b++) {
    ok &= !M[b] == !R[b] && (!M[b] || memcmp(M[b], R[b], sizeof(double) * BS * BS) == 0);
    filled += M[b] && !stored(b / NB, b % NB);
  }
  printf("sparselu NB=%d BS=%d filled=%d check=%s\n", NB, BS, filled, ok ? "ok" : "FAILED");
  for (int b = 0; b < NB * NB; b++) {
    free(M[b]);
    free(R[b]);
  }
  free(M);
  free(R);
  return ok ? 0 : 1;
}
