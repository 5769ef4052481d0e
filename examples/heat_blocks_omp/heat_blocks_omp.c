/* The blocked heat of examples/heat_blocks/heat_blocks.c as OpenMP tasks: same blocks, kernels and
 * loop nest, the tareador markers replaced by the pragmas `tareador hints` printed for a trace of
 * heat_blocks.c (tests/test_hints.py traces it again and checks that these are still them):
 *   tareador trace -o hb.tareador -- ./bin/heat_blocks 64 16 2 && tareador hints hb.tareador --size bs=16
 * A jacobi_block reads only an edge row or column of each neighbour block, yet its items are the
 * whole blocks, the ones the jacobi_block that wrote them names: OpenMP matches items by the
 * address they start at. The taskwait is where hints says main reads what tasks wrote.
 * Usage: heat_blocks_omp [N [BS [ITERS]]]; prints the wall time of the iterations. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>

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
    fprintf(stderr, "usage: heat_blocks_omp [N [BS [ITERS]]]  (BS divides N)\n");
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
  double started = omp_get_wtime();
#pragma omp parallel
#pragma omp single
  for (int t = 0; t < iters; t++) {
    for (int b = 0; b < blocks; b++) {
      #pragma omp task depend(in: old[b][0:bs*bs], old[up[b]][0:bs*bs], old[down[b]][0:bs*bs], old[left[b]][0:bs*bs], old[right[b]][0:bs*bs]) depend(out: new[b][0:bs*bs])
      jacobi_block(old[b], old[up[b]], old[down[b]], old[left[b]], old[right[b]], new[b], bs, b / nb, b % nb, nb);
    }
    for (int b = 0; b < blocks; b++) {
      #pragma omp task depend(in: old[b][0:bs*bs], new[b][0:bs*bs]) depend(out: residual[b])
      residual_block(old[b], new[b], bs, &residual[b]);
    }
    #pragma omp taskwait
    total = 0;
    for (int b = 0; b < blocks; b++) total += residual[b];
    double **swap = old; old = new; new = swap;
  }
  double seconds = omp_get_wtime() - started;

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
  printf("heat_blocks_omp N=%d BS=%d ITERS=%d threads=%d seconds=%.6f residual=%.6e check=%s\n", n, bs, iters,
         omp_get_max_threads(), seconds, total, ok ? "ok" : "FAILED");
  for (int b = 0; b < blocks; b++) { free(old[b]); free(new[b]); }
  free(old); free(new); free(up); free(down); free(left); free(right); free(residual); free(a); free(z);
  return ok ? 0 : 1;
}
