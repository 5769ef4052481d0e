/* The sparse LU of examples/sparselu/sparselu.c as OpenMP tasks: same blocks, kernels and loop
 * nest, the tareador markers replaced by the pragmas `tareador hints` printed for a trace of it
 * (tareador trace -o slu.tareador -- ./bin/sparselu 6 8 && tareador hints slu.tareador --size BS=8),
 * corrected by hand where they would race or not compile: hints gave fwd the bytes it reads of
 * the diagonal block (A[kk * NB + kk][BS:55]), which OpenMP, matching list items by the address
 * they start at, would not order after lu0's A[kk * NB + kk][0:BS*BS] (here [0:BS*BS], as the
 * others); and it gave every task a clause on the block table A itself
 * (heap:sparselu.c:112#0, not a C expression), which main fills in before creating the task
 * that reads the entry: a value the task takes when created, not a dependence (left out).
 * Usage: sparselu_omp [NB [BS]]; prints the wall time of the factorisation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>

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
  if (NB < 1 || BS < 1) { fprintf(stderr, "usage: sparselu_omp [NB [BS]]\n"); return 2; }
  double **A = malloc(sizeof(double *) * NB * NB), **R = malloc(sizeof(double *) * NB * NB);
  if (!A || !R) { perror("malloc"); return 2; }
  genmat(A);
  genmat(R);

  double started = omp_get_wtime();
#pragma omp parallel
#pragma omp single
  for (int kk = 0; kk < NB; kk++) {
    #pragma omp task depend(inout: A[kk * NB + kk][0:BS*BS])
    lu0(A[kk * NB + kk]);
    for (int jj = kk + 1; jj < NB; jj++)
      if (A[kk * NB + jj]) {
        #pragma omp task depend(in: A[kk * NB + kk][0:BS*BS]) depend(inout: A[kk * NB + jj][0:BS*BS])
        fwd(A[kk * NB + kk], A[kk * NB + jj]);
      }
    for (int ii = kk + 1; ii < NB; ii++)
      if (A[ii * NB + kk]) {
        #pragma omp task depend(in: A[kk * NB + kk][0:BS*BS]) depend(inout: A[ii * NB + kk][0:BS*BS])
        bdiv(A[kk * NB + kk], A[ii * NB + kk]);
      }
    for (int ii = kk + 1; ii < NB; ii++)
      if (A[ii * NB + kk])
        for (int jj = kk + 1; jj < NB; jj++)
          if (A[kk * NB + jj]) {
            if (!A[ii * NB + jj]) A[ii * NB + jj] = zero_block();
            #pragma omp task depend(in: A[ii * NB + kk][0:BS*BS], A[kk * NB + jj][0:BS*BS]) depend(inout: A[ii * NB + jj][0:BS*BS])
            bmod(A[ii * NB + kk], A[kk * NB + jj], A[ii * NB + jj]);
          }
  }
  double seconds = omp_get_wtime() - started;

  sequential(R);
  int ok = 1, blocks = 0;
  for (int b = 0; b < NB * NB; b++) {
    ok &= !A[b] == !R[b] && (!A[b] || memcmp(A[b], R[b], sizeof(double) * BS * BS) == 0);
    blocks += A[b] != NULL;
  }
  printf("sparselu_omp NB=%d BS=%d threads=%d seconds=%.6f blocks=%d check=%s\n", NB, BS, omp_get_max_threads(),
         seconds, blocks, ok ? "ok" : "FAILED");
  for (int b = 0; b < NB * NB; b++) { free(A[b]); free(R[b]); }
  free(A);
  free(R);
  return ok ? 0 : 1;
}
