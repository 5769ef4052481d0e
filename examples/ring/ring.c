/* A ring: every rank's vector travels once around the ranks with MPI_Sendrecv, and every rank
 * adds up each vector it holds, one task per step, so each ends with the sum of all vectors.
 * Usage: mpiexec -n P ring [N]   (N longs per vector; default 1024)
 *
 * Rank r starts holding its own vector, element i = r*N + i + 1. For step s = 0 .. P-1:
 *   accumulate(s): R the held vector; RW sum (both N longs);
 *   main, if s < P-1: MPI_Sendrecv of the held vector to rank (r+1) mod P, tag s, receiving the
 *         next one from rank (r-1) mod P, tag s, into the other buffer; the buffers swap roles.
 * Messages: rank r -> (r+1) mod P, P-1 messages with tags 0 .. P-2 in that order, N longs
 * (8N bytes) each, for every r; none between other ranks (for P = 2 the two directions of one
 * pair). With the defaults and P = 4: 4 links x 3 messages of 8192 bytes, 12 in all.
 * Expected RAW dependencies in rank r, through the vectors (main is cut into P+1 fragments by
 * the P tasks; its fragment s, before accumulate(s), holds the Sendrecv of step s-1):
 *   accumulate(s) on accumulate(s-1) (sum, 8N bytes) and, for s > 0, on main's fragment s (the
 *   Sendrecv received the vector it reads, 8N bytes); main's fragment s+1 on main's fragment s
 *   (it sends what that one received). No task feeds a send: the messages never wait for work.
 * Check: sum element i must be N*P*(P-1)/2 + P*(i+1), exactly (integers). Prints one line per
 * rank, ending in check=ok. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include "tareador.h"

/* The task body. */
static void accumulate(long *sum, const long *held, int n)
{
  for (int i = 0; i < n; i++) sum[i] += held[i];
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int n = argc > 1 ? atoi(argv[1]) : 1024;
  if (n < 1) {
    if (rank == 0) fprintf(stderr, "usage: mpiexec -n P ring [N]\n");
    MPI_Finalize();
    return 2;
  }
  int right = (rank + 1) % size, left = (rank + size - 1) % size;

  long *held = malloc(sizeof(long) * n), *other = malloc(sizeof(long) * n), *sum = calloc(n, sizeof(long));
  if (!held || !other || !sum) { perror("malloc"); MPI_Abort(MPI_COMM_WORLD, 2); }
  for (int i = 0; i < n; i++) held[i] = (long)rank * n + i + 1;

  tareador_ON();
  for (int s = 0; s < size; s++) {
    tareador_start_task("accumulate");
    accumulate(sum, held, n);
    tareador_end_task("accumulate");
    if (s < size - 1) {
      MPI_Sendrecv(held, n, MPI_LONG, right, s, other, n, MPI_LONG, left, s, MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE);
      long *swap = held; held = other; other = swap;
    }
  }
  tareador_OFF();

  int ok = 1;
  for (int i = 0; i < n; i++) ok &= sum[i] == (long)n * size * (size - 1) / 2 + (long)size * (i + 1);
  printf("ring rank=%d/%d N=%d check=%s\n", rank, size, n, ok ? "ok" : "FAILED");

  free(held);
  free(other);
  free(sum);
  MPI_Finalize();
  return ok ? 0 : 1;
}
