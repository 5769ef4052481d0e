/* A wavefront pipeline, Sweep3D-like: receive a block's boundary from upstream with MPI_Recv,
 * compute the block in a task, send its boundary downstream with MPI_Send.
 * Usage: mpiexec -n P wavefront [R [C [BS]]]   (defaults 16 128 16; BS divides C)
 *
 * The grid has P*R rows and C columns; cell (i, j) := 0.5 * (cell(i-1, j) + cell(i, j-1)) + 1,
 * with 0 above row 0 and left of column 0, so it needs the cell above and the cell to its left:
 * a sweep from the top-left corner. Rank r owns the R global rows r*R .. r*R+R-1, stored as
 * rows 1..R of a local (R+1) x C grid whose row 0 holds the row above (from rank r-1; zeros in
 * rank 0). The columns are cut into NB = C/BS blocks of BS columns, k = 0 .. NB-1.
 *
 * Rank r, for k = 0 .. NB-1, in this order:
 *   main: MPI_Recv of local row 0, columns of block k, from rank r-1, tag k   (if r > 0);
 *   sweep_block(k): R local row 0 and the column left of block k; W block k (R x BS cells);
 *   main: MPI_Send of local row R, columns of block k, to rank r+1, tag k     (if r < P-1).
 * Messages: rank r -> r+1 for every r < P-1, NB messages with tags 0 .. NB-1 in that order,
 * BS doubles (8*BS bytes) each; none between other ranks. With the defaults and P = 4:
 * 3 links x 8 messages of 128 bytes, 24 in all. Rank r can start block k only after rank r-1
 * finished it: the ranks form a pipeline, rank r starting r blocks late.
 * Expected RAW dependencies in rank r, through the grid (main is cut into NB+1 fragments by the
 * NB tasks; its fragment k, before sweep_block(k), holds the Send of block k-1 and the Recv of
 * block k):
 *   sweep_block(k) on sweep_block(k-1) (the column left of block k, R cells, 8R bytes) and,
 *   if r > 0, on main's fragment k (the Recv wrote its part of row 0, 8*BS bytes);
 *   main's fragment k+1, if r < P-1, on sweep_block(k) (the Send reads block k's last row).
 * Check: every rank sweeps the whole grid sequentially with the same expression and compares
 * its own rows bit for bit (no communication). Prints one line per rank, ending in check=ok. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tareador.h"

/* Cells [i0, i1) x [j0, j1) of a grid of c columns, from the row above i0 and the column left of
 * j0 (none left of column 0: zero there). */
static void sweep(double *g, int c, int i0, int i1, int j0, int j1)
{
  for (int i = i0; i < i1; i++)
    for (int j = j0; j < j1; j++)
      g[i * c + j] = 0.5 * (g[(i - 1) * c + j] + (j > 0 ? g[i * c + j - 1] : 0.0)) + 1.0;
}

/* The task body: block k of local rows 1..r. */
static void sweep_block(double *g, int r, int c, int bs, int k)
{
  sweep(g, c, 1, r + 1, k * bs, (k + 1) * bs);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int r = argc > 1 ? atoi(argv[1]) : 16;
  int c = argc > 2 ? atoi(argv[2]) : 128;
  int bs = argc > 3 ? atoi(argv[3]) : 16;
  if (r < 1 || c < 1 || bs < 1 || c % bs) {
    if (rank == 0) fprintf(stderr, "usage: mpiexec -n P wavefront [R [C [BS]]]  (BS divides C)\n");
    MPI_Finalize();
    return 2;
  }
  int nb = c / bs;

  /* calloc: rank 0's row 0 is the zero row above the grid. */
  double *g = calloc((size_t)(r + 1) * c, sizeof(double));
  double *ref = calloc((size_t)(size * r + 1) * c, sizeof(double));
  if (!g || !ref) { perror("calloc"); MPI_Abort(MPI_COMM_WORLD, 2); }

  tareador_ON();
  for (int k = 0; k < nb; k++) {
    if (rank > 0)
      MPI_Recv(&g[k * bs], bs, MPI_DOUBLE, rank - 1, k, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    tareador_start_task("sweep_block");
    sweep_block(g, r, c, bs, k);
    tareador_end_task("sweep_block");
    if (rank < size - 1)
      MPI_Send(&g[r * c + k * bs], bs, MPI_DOUBLE, rank + 1, k, MPI_COMM_WORLD);
  }
  tareador_OFF();

  /* The whole grid in one sweep, laid out like a single rank's: every cell is computed by the
   * same expression from the same values, so this rank's rows must match exactly. */
  sweep(ref, c, 1, size * r + 1, 0, c);
  int ok = memcmp(&g[c], &ref[(rank * r + 1) * c], sizeof(double) * r * c) == 0;
  printf("wavefront rank=%d/%d R=%d C=%d BS=%d check=%s\n", rank, size, r, c, bs, ok ? "ok" : "FAILED");

  free(g);
  free(ref);
  MPI_Finalize();
  return ok ? 0 : 1;
}
