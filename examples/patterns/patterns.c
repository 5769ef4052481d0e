/* Production and consumption patterns with answers known by construction (tareador patterns,
 * tareador overlap; thesis ch. 5.4). Two ranks: rank 0 produces ITER messages of N doubles into
 * one buffer and sends each to rank 1 (MPI_Send, tag t); rank 1 receives each into one buffer
 * (MPI_Recv) and consumes it.
 * Usage: mpiexec -n 2 patterns [N [W [ITER [PRODUCER [CONSUMER [TRANSFER]]]]]]
 *        (defaults 256 200 3 linear linear send; PRODUCER linear|copy, CONSUMER linear|late,
 *        TRANSFER send: MPI_Send/MPI_Recv, or bcast: MPI_Bcast from rank 0 into the same buffers,
 *        the same one message from rank 0 to rank 1 as a collective)
 *
 * work(k) runs W iterations of arithmetic on a local (no access to the message buffers): one
 * "unit" of W iterations, the same number of instructions for every k. Everything else a phase
 * does is a few instructions per element, so a phase of N units is, to within 1 %, N equal steps.
 *
 * Producer, message t (its production interval runs from the send of message t-1, or the start
 * of tracing, to the send of message t):
 *   linear: buf[i] = work(t*N + i) for i = 0 .. N-1: element i is final after i+1 of the N
 *           units, at (i+1)/N of the interval. With 4 chunks of N/4 elements: the first element
 *           at 1/N (~0 %), the first chunk complete at 25 %, two at 50 %, all at 100 %.
 *   copy:   tmp[i] = work(t*N + i) into a private array, then memcpy(buf, tmp): every element is
 *           written in the last few instructions of the interval: all figures >= 95 %.
 * Consumer, message t (its consumption interval runs from the completion of receive t to the
 * next receive into the buffer, or the end of tracing):
 *   linear: for i = 0 .. N-1: read buf[i], then work(t*N + i) and compare: element i is first
 *           read after i of the N units, at i/N: nothing ~0 %, with the best chunk (the first)
 *           the interval can be passed until the second chunk's first read, 25 %, with the best
 *           two, 50 %.
 *   late:   first 2N/3 units of work on private data (2/3 of the N units of the loop after), then
 *           the linear loop: the first read comes at (2N/3) / (2N/3 + N) = 40 % of the interval.
 * Check: rank 1 compares every received element with its own work(t*N + i) and prints check=ok. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tareador.h"

static int w_iterations;
static volatile double sink;   /* keeps the late consumer's independent work */

static double work(int k)
{
  double x = k;
  for (int j = 0; j < w_iterations; j++)
    x = x * 0.5 + 1.0;
  return x + k;
}

static void produce(double *buf, double *tmp, int n, int t, int copy)
{
  double *out = copy ? tmp : buf;
  for (int i = 0; i < n; i++)
    out[i] = work(t * n + i);
  if (copy)
    memcpy(buf, tmp, n * sizeof(double));
}

static int consume(const double *buf, int n, int t, int late)
{
  int bad = 0;
  double idle = 0.0;
  for (int i = 0; late && i < 2 * n / 3; i++)
    idle += work(-i);
  for (int i = 0; i < n; i++) {
    double v = buf[i];
    bad += v != work(t * n + i);
  }
  sink = idle;
  return bad;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int n = argc > 1 ? atoi(argv[1]) : 256;
  w_iterations = argc > 2 ? atoi(argv[2]) : 200;
  int iterations = argc > 3 ? atoi(argv[3]) : 3;
  int copy = argc > 4 && strcmp(argv[4], "copy") == 0;
  int late = argc > 5 && strcmp(argv[5], "late") == 0;
  int bcast = argc > 6 && strcmp(argv[6], "bcast") == 0;
  if (size != 2 || n < 4 || w_iterations < 1 || iterations < 1) {
    if (rank == 0)
      fprintf(stderr, "usage: mpiexec -n 2 patterns [N>=4 [W [ITER [linear|copy [linear|late [send|bcast]]]]]]\n");
    MPI_Finalize();
    return 2;
  }
  double *buf = malloc(n * sizeof(double)), *tmp = malloc(n * sizeof(double));
  int bad = 0;
  tareador_ON();
  for (int t = 0; t < iterations; t++) {
    if (rank == 0)
      produce(buf, tmp, n, t, copy);
    if (bcast)
      MPI_Bcast(buf, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    else if (rank == 0)
      MPI_Send(buf, n, MPI_DOUBLE, 1, t, MPI_COMM_WORLD);
    else
      MPI_Recv(buf, n, MPI_DOUBLE, 0, t, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (rank == 1)
      bad += consume(buf, n, t, late);
  }
  tareador_OFF();
  if (rank == 1)
    printf("patterns rank 1: %d messages of %d doubles check=%s\n", iterations, n, bad ? "FAILED" : "ok");
  free(buf);
  free(tmp);
  MPI_Finalize();
  return bad != 0;
}
