/* 2D Jacobi on an N x N grid distributed by rows over P ranks, halo exchange with
 * MPI_Isend/MPI_Irecv/MPI_Waitall, blocked tasks per rank.
 * Usage: mpiexec -n P jacobi [N [BS [ITERS]]]   (defaults 96 8 4; P divides N, BS divides N/P and N)
 *
 * Rank r owns the L = N/P global rows r*L .. r*L+L-1, stored as rows 1..L of its local grids
 * (L+2 rows of N doubles); local rows 0 and L+1 are halos, the neighbours' last and first rows.
 * The global boundary (row 0, row N-1, columns 0 and N-1) is held fixed: a hot top row, the rest
 * cold; every interior cell of the new grid is the mean of its 4 neighbours in the old grid.
 * The local rows are cut into BS x BS blocks, numbered b = bi * NB + bj (L/BS x NB, NB = N/BS).
 *
 * Per iteration t = 0 .. ITERS-1, in this order:
 *   main, halo exchange: MPI_Irecv of both halo rows, MPI_Isend of local rows 1 and L,
 *         one MPI_Waitall of all of them (rank 0 has no upper, rank P-1 no lower neighbour:
 *         no calls for them, so every call is a message);
 *   jacobi_block(b) for every b: R old, block b plus a 1-cell halo (halo rows included);
 *                   W new, block b;
 *   then main swaps the grids.
 * Messages, each one row (N doubles, 8N bytes):
 *   rank r -> r+1, tag 1 (its last row, going down), and rank r+1 -> r, tag 0 (its first row,
 *   going up), once per iteration for every r < P-1: ITERS messages of 8N bytes each way per
 *   neighbour pair, none between other ranks. With the defaults and P = 4: 4 messages of 768
 *   bytes on each of the 6 directed neighbour links, 24 in all (3 x 12 blocks per rank).
 * Expected RAW dependencies in rank r, through the grids (main's code of iteration t's exchange
 * is one fragment, between the last task of iteration t-1 and the first of iteration t):
 *   jacobi_block(b) of iteration t on the jacobi_block of b and of its neighbour blocks (not
 *   the diagonal ones) in iteration t-1, through the old grid; a block of the first (last)
 *   block row also on main's fragment of iteration t, whose Waitall received the halo row it
 *   reads, if rank r has an upper (lower) neighbour;
 *   main's fragment of iteration t, whose Isends read rows 1 and L, on the jacobi_blocks of the
 *   first and last block rows of iteration t-1. So the blocks in between need no message.
 * Check: every rank computes the whole grid sequentially with the same expression and compares
 * its own rows bit for bit (no communication). Prints one line per rank, ending in check=ok. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tareador.h"

enum { TAG_UP = 0, TAG_DOWN = 1 };

static double *alloc_grid(int rows, int n)
{
  double *g = malloc(sizeof(double) * rows * n);
  if (!g) { perror("malloc"); MPI_Abort(MPI_COMM_WORLD, 2); }
  return g;
}

/* Rows [first, first + rows) of the global initial grid: a hot top row, the rest cold. */
static void init_rows(double *g, int first, int rows, int n)
{
  for (int i = 0; i < rows; i++)
    for (int j = 0; j < n; j++) g[i * n + j] = first + i == 0 ? 100.0 : 0.0;
}

/* new := one Jacobi step of old on the local rows [i0, i1) and columns [j0, j1); local row i is
 * global row first + i - 1, so the global boundary is recognised in any rank. */
static void jacobi(const double *old, double *new, int n, int first, int i0, int i1, int j0, int j1)
{
  for (int i = i0; i < i1; i++) {
    int g = first + i - 1;
    for (int j = j0; j < j1; j++)
      new[i * n + j] = g == 0 || j == 0 || g == n - 1 || j == n - 1
        ? old[i * n + j]
        : 0.25 * (old[(i - 1) * n + j] + old[(i + 1) * n + j] + old[i * n + j - 1] + old[i * n + j + 1]);
  }
}

/* The task body: block (bi, bj) of the local rows. */
static void jacobi_block(const double *old, double *new, int n, int first, int bs, int bi, int bj)
{
  jacobi(old, new, n, first, 1 + bi * bs, 1 + (bi + 1) * bs, bj * bs, (bj + 1) * bs);
}

/* Receive both halo rows of g and send its own first and last rows to the neighbours. */
static void exchange_halos(double *g, int n, int l, int rank, int size)
{
  MPI_Request req[4];
  MPI_Status status[4];
  int k = 0;
  if (rank > 0) {
    MPI_Irecv(&g[0], n, MPI_DOUBLE, rank - 1, TAG_DOWN, MPI_COMM_WORLD, &req[k++]);
    MPI_Isend(&g[1 * n], n, MPI_DOUBLE, rank - 1, TAG_UP, MPI_COMM_WORLD, &req[k++]);
  }
  if (rank < size - 1) {
    MPI_Irecv(&g[(l + 1) * n], n, MPI_DOUBLE, rank + 1, TAG_UP, MPI_COMM_WORLD, &req[k++]);
    MPI_Isend(&g[l * n], n, MPI_DOUBLE, rank + 1, TAG_DOWN, MPI_COMM_WORLD, &req[k++]);
  }
  MPI_Waitall(k, req, status);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int n = argc > 1 ? atoi(argv[1]) : 96;
  int bs = argc > 2 ? atoi(argv[2]) : 8;
  int iters = argc > 3 ? atoi(argv[3]) : 4;
  if (n < 1 || bs < 1 || n % size || (n / size) % bs || n % bs || iters < 0) {
    if (rank == 0)
      fprintf(stderr, "usage: mpiexec -n P jacobi [N [BS [ITERS]]]  (P divides N, BS divides N/P and N)\n");
    MPI_Finalize();
    return 2;
  }
  int l = n / size, first = rank * l, nbi = l / bs, nbj = n / bs;

  /* Local rows 1..L are global rows first..first+L-1; the halo rows are set by the exchange
   * (or, at the global boundary, never read). */
  double *old = alloc_grid(l + 2, n), *new = alloc_grid(l + 2, n);
  init_rows(&old[n], first, l, n);
  init_rows(&new[n], first, l, n);

  tareador_ON();
  for (int t = 0; t < iters; t++) {
    exchange_halos(old, n, l, rank, size);
    for (int bi = 0; bi < nbi; bi++)
      for (int bj = 0; bj < nbj; bj++) {
        tareador_start_task("jacobi_block");
        jacobi_block(old, new, n, first, bs, bi, bj);
        tareador_end_task("jacobi_block");
      }
    double *swap = old; old = new; new = swap;
  }
  tareador_OFF();

  /* The same iterations on the whole grid, laid out like the rows of a single rank: every cell
   * is computed by the same expression from the same values, so this rank's rows must match
   * exactly. */
  double *ref_old = alloc_grid(n + 2, n), *ref_new = alloc_grid(n + 2, n);
  init_rows(&ref_old[n], 0, n, n);
  init_rows(&ref_new[n], 0, n, n);
  for (int t = 0; t < iters; t++) {
    jacobi(ref_old, ref_new, n, 0, 1, n + 1, 0, n);
    double *swap = ref_old; ref_old = ref_new; ref_new = swap;
  }
  int ok = memcmp(&old[n], &ref_old[(first + 1) * n], sizeof(double) * l * n) == 0;
  printf("jacobi rank=%d/%d N=%d BS=%d ITERS=%d check=%s\n", rank, size, n, bs, iters, ok ? "ok" : "FAILED");

  free(old);
  free(new);
  free(ref_old);
  free(ref_new);
  MPI_Finalize();
  return ok ? 0 : 1;
}
