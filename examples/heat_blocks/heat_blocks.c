/* 2D heat diffusion by Jacobi iterations on a grid stored by blocks: each BS x BS block is an
 * allocation of its own, so every task names exactly the blocks it touches (the per-block
 * clauses examples/heat cannot have, whose blocks are parts of one array).
 * Usage: heat_blocks [N [BS [ITERS]]]   (N x N grid, BS divides N; defaults 64 16 2)
 *
 * The grid's boundary is held fixed (a hot top edge, the rest cold); each iteration computes
 * every interior cell of the new grid as the mean of its 4 neighbours in the old grid. Blocks
 * are numbered b = bi * NB + bj (NB = N / BS); up[b], down[b], left[b], right[b] are the
 * neighbour blocks, or b itself on the grid's edge (whose cells are the boundary, copied). Per
 * iteration, in this order:
 *   jacobi_block(b)    R old blocks b, up, down, left, right (the neighbours' edge rows or
 *                      columns);  W new block b
 *   residual_block(b)  R old and new block b;  W residual[b]
 *   then main sums residual[] and swaps the two grids' block tables.
 * Expected RAW dependencies: jacobi_block(b) of iteration t on the jacobi_block of b and of its 4
 * neighbours in iteration t-1; residual_block(b) of iteration t on jacobi_block(b) of
 * iterations t and t-1; main on every residual_block of the iteration. The check: the same
 * iterations on one flat grid give bit-identical cells. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tareador.h"

static double *alloc_cells(long count)
{
  double *g = malloc(sizeof(double) * count);
  if (!g) { perror("malloc"); exit(2); }
  return g;
}

static double initial(int i, int n) { return i < n ? 100.0 : 0.0; } /* row-major cell i of n x n */

/* out := one Jacobi step of block c, whose neighbours are the blocks u, d, l, r (c itself on an
 * edge of the grid, where the cells are boundary and copied). */
static void jacobi_block(const double *c, const double *u, const double *d, const double *l, const double *r,
                         double *out, int bs, int bi, int bj, int nb)
{
  int last = nb * bs - 1;
  for (int i = 0; i < bs; i++)
    for (int j = 0; j < bs; j++) {
      int gi = bi * bs + i, gj = bj * bs + j;
      if (gi == 0 || gj == 0 || gi == last || gj == last) {
        out[i * bs + j] = c[i * bs + j];
        continue;
      }
      double north = i > 0 ? c[(i - 1) * bs + j] : u[(bs - 1) * bs + j];
      double south = i < bs - 1 ? c[(i + 1) * bs + j] : d[j];
      double west = j > 0 ? c[i * bs + j - 1] : l[i * bs + bs - 1];
      double east = j < bs - 1 ? c[i * bs + j + 1] : r[i * bs];
      out[i * bs + j] = 0.25 * (north + south + west + east);
    }
}

/* Sum of the squared changes over block b. */
static void residual_block(const double *old, const double *new, int bs, double *residual)
{
  double s = 0;
  for (int k = 0; k < bs * bs; k++) {
    double d = new[k] - old[k];
    s += d * d;
  }
  *residual = s;
}

int main(int argc, char **argv)
{
  int n = argc > 1 ? atoi(argv[1]) : 64;
  int bs = argc > 2 ? atoi(argv[2]) : 16;
  int iters = argc > 3 ? atoi(argv[3]) : 2;
  if (n < 1 || bs < 1 || n % bs || iters < 0) {
    fprintf(stderr, "usage: heat_blocks [N [BS [ITERS]]]  (BS divides N)\n");
    return 2;
  }
  int nb = n / bs, blocks = nb * nb;
  double **old = malloc(sizeof(double *) * blocks), **new = malloc(sizeof(double *) * blocks);
  int *up = malloc(sizeof(int) * blocks), *down = malloc(sizeof(int) * blocks);
  int *left = malloc(sizeof(int) * blocks), *right = malloc(sizeof(int) * blocks);
  double *residual = alloc_cells(blocks);
  if (!old || !new || !up || !down || !left || !right) { perror("malloc"); return 2; }
  for (int b = 0; b < blocks; b++) {
    int bi = b / nb, bj = b % nb;
    up[b] = bi > 0 ? b - nb : b;
    down[b] = bi < nb - 1 ? b + nb : b;
    left[b] = bj > 0 ? b - 1 : b;
    right[b] = bj < nb - 1 ? b + 1 : b;
    old[b] = alloc_cells((long) bs * bs);
    new[b] = alloc_cells((long) bs * bs);
    for (int i = 0; i < bs; i++)
      for (int j = 0; j < bs; j++)
        old[b][i * bs + j] = new[b][i * bs + j] = initial((bi * bs + i) * n + bj * bs + j, n);
  }

  double total = 0; /* the last iteration's residual */
  tareador_ON();
  for (int t = 0; t < iters; t++) {
    for (int b = 0; b < blocks; b++) {
      tareador_start_task("jacobi_block");
      jacobi_block(old[b], old[up[b]], old[down[b]], old[left[b]], old[right[b]], new[b], bs, b / nb, b % nb, nb);
      tareador_end_task("jacobi_block");
    }
    for (int b = 0; b < blocks; b++) {
      tareador_start_task("residual_block");
      residual_block(old[b], new[b], bs, &residual[b]);
      tareador_end_task("residual_block");
    }
    total = 0;
    for (int b = 0; b < blocks; b++) total += residual[b];
    double **swap = old; old = new; new = swap;
  }
  tareador_OFF();

  /* The same iterations on one flat grid, cell by cell in the same expressions. */
  double *a = alloc_cells((long) n * n), *z = alloc_cells((long) n * n);
  for (int i = 0; i < n * n; i++) a[i] = z[i] = initial(i, n);
  for (int t = 0; t < iters; t++) {
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        z[i * n + j] = 0.25 * (a[(i - 1) * n + j] + a[(i + 1) * n + j] + a[i * n + j - 1] + a[i * n + j + 1]);
    double *swap = a; a = z; z = swap;
  }
  int ok = 1;
  for (int b = 0; b < blocks; b++)
    for (int i = 0; i < bs; i++)
      ok &= memcmp(&old[b][i * bs], &a[((b / nb) * bs + i) * n + (b % nb) * bs], sizeof(double) * bs) == 0;
  printf("heat_blocks N=%d BS=%d ITERS=%d residual=%.6e check=%s\n", n, bs, iters, total, ok ? "ok" : "FAILED");
  for (int b = 0; b < blocks; b++) { free(old[b]); free(new[b]); }
  free(old); free(new); free(up); free(down); free(left); free(right); free(residual); free(a); free(z);
  return ok ? 0 : 1;
}
