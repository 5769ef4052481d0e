/* 2D heat diffusion (Jacobi) with blocked tasks: usage `heat N BS ITERS`.
 * Each iteration one task per BS x BS block computes the new grid block from the old grid
 * (5-point stencil, so it reads the halo of its neighbour blocks); then main swaps the grids.
 * Expected DAG: block (i,j) of iteration t depends on blocks (i,j), (i±1,j), (i,j±1) of t-1. */
#include <stdio.h>
#include <stdlib.h>
#include "tareador.h"

static void jacobi_block(const double *old, double *new, int n, int bi, int bj, int bs)
{
  for (int i = bi * bs; i < (bi + 1) * bs; i++)
    for (int j = bj * bs; j < (bj + 1) * bs; j++) {
      if (i == 0 || j == 0 || i == n - 1 || j == n - 1) { new[i * n + j] = old[i * n + j]; continue; }
      new[i * n + j] = 0.25 * (old[(i - 1) * n + j] + old[(i + 1) * n + j] + old[i * n + j - 1] + old[i * n + j + 1]);
    }
}

int main(int argc, char **argv)
{
  int n = argc > 1 ? atoi(argv[1]) : 32, bs = argc > 2 ? atoi(argv[2]) : 16, iters = argc > 3 ? atoi(argv[3]) : 2;
  if (n < 1 || bs < 1 || n % bs) { fprintf(stderr, "usage: heat N BS ITERS (BS divides N)\n"); return 2; }
  double *old = calloc((size_t) n * n, sizeof(double)), *new = calloc((size_t) n * n, sizeof(double));
  for (int j = 0; j < n; j++) old[j] = new[j] = 100.0;  /* hot top edge */
  tareador_ON();
  for (int t = 0; t < iters; t++) {
    for (int bi = 0; bi < n / bs; bi++)
      for (int bj = 0; bj < n / bs; bj++) {
        tareador_start_task("jacobi_block");
        jacobi_block(old, new, n, bi, bj, bs);
        tareador_end_task("jacobi_block");
      }
    double *swap = old; old = new; new = swap;
  }
  tareador_OFF();
  double sum = 0;
  for (int i = 0; i < n * n; i++) sum += old[i];
  printf("heat N=%d BS=%d ITERS=%d sum=%.6f\n", n, bs, iters, sum);
  return 0;
}
