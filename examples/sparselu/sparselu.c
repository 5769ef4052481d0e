/* Sparse LU factorisation of a blocked matrix with fill-in, after the Barcelona OpenMP Tasks
 * Suite's sparselu (single-creator version): NB x NB blocks of BS x BS doubles, some blocks
 * absent (NULL) by BOTS' pattern; no pivoting (the matrix is made diagonally dominant).
 * Usage: sparselu [NB [BS]]   (defaults 8 and 16)
 *
 * For each kk: lu0 factors the diagonal block A[kk][kk]; fwd(A[kk][kk], A[kk][jj]) for every
 * present block right of it; bdiv(A[kk][kk], A[ii][kk]) for every present block below it; then
 * for every pair of those, bmod(A[ii][kk], A[kk][jj], A[ii][jj]), where main first allocates
 * A[ii][jj] as a block of zeros if it is absent (the fill-in: main writes the block, the bmod
 * reads it). Expected RAW dependencies: fwd and bdiv of kk on lu0(kk); bmod(ii, jj, kk) on
 * bdiv(ii, kk) and fwd(kk, jj), and on the previous writer of A[ii][jj] (the bmod of an earlier
 * kk, or main for a new block); lu0(kk), fwd(kk, jj) and bdiv(ii, kk) on the last bmod of their
 * block. The check: the same steps in program order give bit-identical blocks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tareador.h"

static int NB, BS;

static double *new_block(void)
{
  double *b = malloc(sizeof(double) * BS * BS);
  if (!b) { perror("malloc"); exit(2); }
  return b;
}

/* A fill-in block: its own function, so that its zeros are main's writes of one allocation. */
static double *zero_block(void)
{
  double *b = new_block();
  for (int i = 0; i < BS * BS; i++) b[i] = 0.0;
  return b;
}

/* BOTS' sparsity pattern and values (a linear congruential sequence), with the diagonal made
 * dominant so that LU without pivoting is stable. */
static void genmat(double **A)
{
  long value = 1325;
  for (int ii = 0; ii < NB; ii++)
    for (int jj = 0; jj < NB; jj++) {
      int absent = (ii < jj && ii % 3 != 0) || (ii > jj && jj % 3 != 0) || ii % 2 == 1 || jj % 2 == 1;
      if (ii == jj || ii == jj - 1 || ii - 1 == jj) absent = 0;
      A[ii * NB + jj] = NULL;
      if (absent) continue;
      double *b = A[ii * NB + jj] = new_block();
      for (int i = 0; i < BS; i++)
        for (int j = 0; j < BS; j++) {
          value = (3125 * value) % 65536;
          b[i * BS + j] = (value - 32768.0) / 16384.0 + (ii == jj && i == j ? NB * BS : 0);
        }
    }
}

static void lu0(double *diag)
{
  for (int k = 0; k < BS; k++)
    for (int i = k + 1; i < BS; i++) {
      diag[i * BS + k] /= diag[k * BS + k];
      for (int j = k + 1; j < BS; j++) diag[i * BS + j] -= diag[i * BS + k] * diag[k * BS + j];
    }
}

static void bdiv(const double *diag, double *row)
{
  for (int i = 0; i < BS; i++)
    for (int k = 0; k < BS; k++) {
      row[i * BS + k] /= diag[k * BS + k];
      for (int j = k + 1; j < BS; j++) row[i * BS + j] -= row[i * BS + k] * diag[k * BS + j];
    }
}

static void bmod(const double *row, const double *col, double *inner)
{
  for (int i = 0; i < BS; i++)
    for (int j = 0; j < BS; j++)
      for (int k = 0; k < BS; k++) inner[i * BS + j] -= row[i * BS + k] * col[k * BS + j];
}

static void fwd(const double *diag, double *col)
{
  for (int j = 0; j < BS; j++)
    for (int k = 0; k < BS; k++)
      for (int i = k + 1; i < BS; i++) col[i * BS + j] -= diag[i * BS + k] * col[k * BS + j];
}

/* The factorisation in program order, untasked: the reference. */
static void sequential(double **A)
{
  for (int kk = 0; kk < NB; kk++) {
    lu0(A[kk * NB + kk]);
    for (int jj = kk + 1; jj < NB; jj++)
      if (A[kk * NB + jj]) fwd(A[kk * NB + kk], A[kk * NB + jj]);
    for (int ii = kk + 1; ii < NB; ii++)
      if (A[ii * NB + kk]) bdiv(A[kk * NB + kk], A[ii * NB + kk]);
    for (int ii = kk + 1; ii < NB; ii++)
      if (A[ii * NB + kk])
        for (int jj = kk + 1; jj < NB; jj++)
          if (A[kk * NB + jj]) {
            if (!A[ii * NB + jj]) A[ii * NB + jj] = zero_block();
            bmod(A[ii * NB + kk], A[kk * NB + jj], A[ii * NB + jj]);
          }
  }
}

int main(int argc, char **argv)
{
  NB = argc > 1 ? atoi(argv[1]) : 8;
  BS = argc > 2 ? atoi(argv[2]) : 16;
  if (NB < 1 || BS < 1) { fprintf(stderr, "usage: sparselu [NB [BS]]\n"); return 2; }
  double **A = malloc(sizeof(double *) * NB * NB), **R = malloc(sizeof(double *) * NB * NB);
  if (!A || !R) { perror("malloc"); return 2; }
  genmat(A);
  genmat(R);

  tareador_ON();
  for (int kk = 0; kk < NB; kk++) {
    tareador_start_task("lu0");
    lu0(A[kk * NB + kk]);
    tareador_end_task("lu0");
    for (int jj = kk + 1; jj < NB; jj++)
      if (A[kk * NB + jj]) {
        tareador_start_task("fwd");
        fwd(A[kk * NB + kk], A[kk * NB + jj]);
        tareador_end_task("fwd");
      }
    for (int ii = kk + 1; ii < NB; ii++)
      if (A[ii * NB + kk]) {
        tareador_start_task("bdiv");
        bdiv(A[kk * NB + kk], A[ii * NB + kk]);
        tareador_end_task("bdiv");
      }
    for (int ii = kk + 1; ii < NB; ii++)
      if (A[ii * NB + kk])
        for (int jj = kk + 1; jj < NB; jj++)
          if (A[kk * NB + jj]) {
            if (!A[ii * NB + jj]) A[ii * NB + jj] = zero_block();
            tareador_start_task("bmod");
            bmod(A[ii * NB + kk], A[kk * NB + jj], A[ii * NB + jj]);
            tareador_end_task("bmod");
          }
  }
  tareador_OFF();

  sequential(R);
  int ok = 1, blocks = 0;
  for (int b = 0; b < NB * NB; b++) {
    ok &= !A[b] == !R[b] && (!A[b] || memcmp(A[b], R[b], sizeof(double) * BS * BS) == 0);
    blocks += A[b] != NULL;
  }
  printf("sparselu NB=%d BS=%d blocks=%d check=%s\n", NB, BS, blocks, ok ? "ok" : "FAILED");
  for (int b = 0; b < NB * NB; b++) { free(A[b]); free(R[b]); }
  free(A);
  free(R);
  return ok ? 0 : 1;
}
