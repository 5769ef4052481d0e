/* The heat of examples/heat/heat.c as OpenMP tasks: same grids, kernels and loop nest, the
 * tareador markers replaced by the pragmas `tareador hints` printed for a trace of heat.c
 * (tests/test_hints.py traces it again and checks that these are still them):
 *   tareador trace -o heat.tareador -- ./bin/heat 64 16 2 && tareador hints heat.tareador --size n=64
 * tareador hints warns that the instances of jacobi_block write different parts of `new` under one
 * clause: OpenMP runs them one after another, where tareador's prediction (dependencies by the
 * byte) runs them side by side. This version keeps the pragmas as generated, to measure that gap
 * (benchmarks/predict_vs_real.py). The taskwait is where hints says main reads what tasks wrote.
 * Usage: heat_omp [N [BS [ITERS]]]; prints the wall time of the iterations. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>

static double *alloc_grid(int n)
{
  double *g = malloc(sizeof(double) * n * n);
  if (!g) { perror("malloc"); exit(2); }
  return g;
}

/* Hot top edge, everything else 0. Both grids start alike so the boundary, which no
 * iteration changes, is right in whichever grid is the new one. */
static void init_grid(double *g, int n)
{
  for (int i = 0; i < n * n; i++) g[i] = i < n ? 100.0 : 0.0;
}

/* new := one Jacobi step of old, on the cells of the rectangle [i0, i1) x [j0, j1). */
static void jacobi(const double *old, double *new, int n, int i0, int i1, int j0, int j1)
{
  for (int i = i0; i < i1; i++)
    for (int j = j0; j < j1; j++)
      new[i * n + j] = i == 0 || j == 0 || i == n - 1 || j == n - 1
        ? old[i * n + j]
        : 0.25 * (old[(i - 1) * n + j] + old[(i + 1) * n + j] + old[i * n + j - 1] + old[i * n + j + 1]);
}

/* Sum of the squared changes over the rectangle [i0, i1) x [j0, j1). */
static double change(const double *old, const double *new, int n, int i0, int i1, int j0, int j1)
{
  double s = 0;
  for (int i = i0; i < i1; i++)
    for (int j = j0; j < j1; j++) {
      double d = new[i * n + j] - old[i * n + j];
      s += d * d;
    }
  return s;
}

/* The task bodies: the kernels above on block (bi, bj). */
static void jacobi_block(const double *old, double *new, int n, int bs, int bi, int bj)
{
  jacobi(old, new, n, bi * bs, (bi + 1) * bs, bj * bs, (bj + 1) * bs);
}

static void residual_block(const double *old, const double *new, int n, int bs, int bi, int bj, double *residual)
{
  *residual = change(old, new, n, bi * bs, (bi + 1) * bs, bj * bs, (bj + 1) * bs);
}

int main(int argc, char **argv)
{
  int n = argc > 1 ? atoi(argv[1]) : 64;
  int bs = argc > 2 ? atoi(argv[2]) : 16;
  int iters = argc > 3 ? atoi(argv[3]) : 2;
  if (n < 1 || bs < 1 || n % bs || iters < 0) {
    fprintf(stderr, "usage: heat [N [BS [ITERS]]]  (BS divides N)\n");
    return 2;
  }
  int nb = n / bs;

  double *old = alloc_grid(n), *new = alloc_grid(n);
  double *residual = malloc(sizeof(double) * nb * nb);
  if (!residual) { perror("malloc"); return 2; }
  init_grid(old, n);
  init_grid(new, n);

  double total = 0; /* the last iteration's residual */
  double started = omp_get_wtime();
#pragma omp parallel
#pragma omp single
  for (int t = 0; t < iters; t++) {
    for (int bi = 0; bi < nb; bi++)
      for (int bj = 0; bj < nb; bj++) {
        #pragma omp task depend(in: old[0:n*n]) depend(out: new[0:n*n])
        jacobi_block(old, new, n, bs, bi, bj);
      }
    for (int bi = 0; bi < nb; bi++)
      for (int bj = 0; bj < nb; bj++) {
        #pragma omp task depend(in: old[0:n*n], new[0:n*n]) depend(out: residual[bi * nb + bj])
        residual_block(old, new, n, bs, bi, bj, &residual[bi * nb + bj]);
      }
    #pragma omp taskwait
    total = 0;
    for (int b = 0; b < nb * nb; b++) total += residual[b];
    double *swap = old; old = new; new = swap;
  }
  double seconds = omp_get_wtime() - started;

  /* Check against the same iterations done on the whole grid at once: every cell is computed
   * by the same expression, so the grids must match exactly; the residual is summed in another
   * order, so it matches up to rounding. */
  double *ref_old = alloc_grid(n), *ref_new = alloc_grid(n);
  init_grid(ref_old, n);
  init_grid(ref_new, n);
  double ref_total = 0;
  for (int t = 0; t < iters; t++) {
    jacobi(ref_old, ref_new, n, 0, n, 0, n);
    ref_total = change(ref_old, ref_new, n, 0, n, 0, n);
    double *swap = ref_old; ref_old = ref_new; ref_new = swap;
  }
  double gap = total - ref_total;
  int ok = memcmp(old, ref_old, sizeof(double) * n * n) == 0 && gap * gap <= 1e-24 * ref_total * ref_total;
  printf("heat_omp N=%d BS=%d ITERS=%d threads=%d seconds=%.6f residual=%.6e check=%s\n", n, bs, iters,
         omp_get_max_threads(), seconds, total, ok ? "ok" : "FAILED");

  free(old);
  free(new);
  free(residual);
  free(ref_old);
  free(ref_new);
  return ok ? 0 : 1;
}
