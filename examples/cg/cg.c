/* Conjugate gradient on the 1D Laplacian distributed over P ranks: a halo exchange with
 * MPI_Sendrecv before every product, MPI_Allreduce for the dot products, tasks for the kernels.
 * Usage: mpiexec -n P cg [NL [BS [ITERS]]]   (defaults 16 8 10; BS divides NL)
 *
 * Solves A x = b for the n x n matrix A = tridiag(-1, 2, -1), n = P*NL, b = 2 everywhere (the
 * solution is x(g) = (g+1)(n-g)), from x = 0, with ITERS iterations of textbook CG.
 * Rank r owns the NL unknowns g = r*NL .. r*NL+NL-1, as entries 1..NL of each local vector;
 * entries 0 and NL+1 of p are the neighbours' last and first entries (0 beyond the ends of the
 * domain). The entries are cut into NB = NL/BS blocks, b = 0 .. NB-1. Every rank runs:
 *   dot(b) for every b: partial[b] := r.r on block b;  main: rr := Allreduce(sum of partial[])
 *   then ITERS times (b being symmetric, exact CG converges in ceil(n/2) iterations, and these
 *   small integers can get there exactly: then pq = rr = 0, alpha = beta = 0 and the
 *   iterations change nothing, where a division would give NaN):
 *     main: 2 MPI_Sendrecv: p's first entry to rank r-1 with tag 0 while receiving p's last
 *           ghost from rank r+1 with tag 0; p's last entry to rank r+1 with tag 1 while receiving
 *           its first ghost from rank r-1 with tag 1 (rank 0's left and rank P-1's right
 *           neighbour is MPI_PROC_NULL: those halves of the calls carry no message);
 *     spmv(b):      q := A p on block b           (R p on block b and one entry either side)
 *     dot(b):       partial[b] := p.q on block b; main: pq := Allreduce(sum of partial[])
 *     update(b):    x += alpha p; r -= alpha q; partial[b] := r.r, on block b
 *                   (alpha = rr/pq); main: rr' := Allreduce(sum of partial[]); beta = rr'/rr
 *     direction(b): p := r + beta p on block b.
 * Messages, each one double (8 bytes): rank r -> r+1 with tag 1 and rank r+1 -> r with tag 0,
 * once per iteration, for every r < P-1: ITERS messages each way per neighbour pair, none
 * between other ranks; with the defaults and P = 4, 6 directed links x 10 = 60 messages. Every
 * rank makes 2*ITERS MPI_Sendrecv and 1 + 2*ITERS MPI_Allreduce calls (one MPI_DOUBLE, MPI_SUM).
 * Expected RAW dependencies in rank r, iteration t, through the vectors (main's code after the
 * last task of a kind and before the first of the next is one fragment; "t-1" edges exist from
 * the second iteration on, p, r and x being set before tareador_ON()):
 *   spmv(b) on direction(b) of t-1 (p's block), on direction(b-1) and direction(b+1) of t-1
 *     (the entries either side), and for the first (last) block on main's fragment holding the
 *     exchange of t (the ghost it received) if rank r-1 (r+1) exists;
 *   dot(b) on spmv(b) (q) and direction(b) of t-1 (p);
 *   main's fragment computing alpha on every dot(b) (partial[]), 8 bytes each;
 *   update(b) on spmv(b) (q), update(b) of t-1 (x and r) and direction(b) of t-1 (p);
 *   main's fragment computing beta on every update(b) (partial[]);
 *   direction(b) on update(b) (r) and direction(b) of t-1 (p);
 *   main's fragment holding the exchange of t+1 on direction(0) if rank r-1 exists and on
 *     direction(NB-1) if rank r+1 exists (the entries it sends);
 *   and before the loop, main's fragment computing the first rr on every first dot(b).
 * Check: every rank runs the same iterations sequentially on the whole vectors; the dot
 * products are summed in another order there (and in MPI's order here), so x must match up to
 * rounding, 1e-12 relative. Prints one line per rank, ending in check=ok. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include "tareador.h"

enum { TAG_LEFT = 0, TAG_RIGHT = 1 };

/* Entries 1..n, and 0 and n+1 for ghosts (zero unless received). */
static double *alloc_vector(int n)
{
  double *v = calloc(n + 2, sizeof(double));
  if (!v) { perror("calloc"); MPI_Abort(MPI_COMM_WORLD, 2); }
  return v;
}

/* The kernels on entries [i0, i1) of vectors indexed from 1 (entry 0 and n+1 are p's ghosts). */
static void spmv(const double *p, double *q, int i0, int i1)
{
  for (int i = i0; i < i1; i++) q[i] = 2 * p[i] - p[i - 1] - p[i + 1];
}

static double dot(const double *u, const double *v, int i0, int i1)
{
  double s = 0;
  for (int i = i0; i < i1; i++) s += u[i] * v[i];
  return s;
}

static double update(double *x, double *r, const double *p, const double *q, double alpha, int i0, int i1)
{
  for (int i = i0; i < i1; i++) {
    x[i] += alpha * p[i];
    r[i] -= alpha * q[i];
  }
  return dot(r, r, i0, i1);
}

static void direction(double *p, const double *r, double beta, int i0, int i1)
{
  for (int i = i0; i < i1; i++) p[i] = r[i] + beta * p[i];
}

/* This rank's share of a dot product, from the blocks' partial sums, summed over the ranks. */
static double allreduce(const double *partial, int nb)
{
  double local = 0, global;
  for (int b = 0; b < nb; b++) local += partial[b];
  MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return global;
}

/* p's ghosts from the neighbours (MPI_PROC_NULL beyond the domain leaves them 0). */
static void exchange_halos(double *p, int nl, int left, int right)
{
  MPI_Sendrecv(&p[1], 1, MPI_DOUBLE, left, TAG_LEFT, &p[nl + 1], 1, MPI_DOUBLE, right, TAG_LEFT,
               MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Sendrecv(&p[nl], 1, MPI_DOUBLE, right, TAG_RIGHT, &p[0], 1, MPI_DOUBLE, left, TAG_RIGHT,
               MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int nl = argc > 1 ? atoi(argv[1]) : 16;
  int bs = argc > 2 ? atoi(argv[2]) : 8;
  int iters = argc > 3 ? atoi(argv[3]) : 10;
  if (nl < 1 || bs < 1 || nl % bs || iters < 0) {
    if (rank == 0) fprintf(stderr, "usage: mpiexec -n P cg [NL [BS [ITERS]]]  (BS divides NL)\n");
    MPI_Finalize();
    return 2;
  }
  int n = size * nl, nb = nl / bs;
  int left = rank > 0 ? rank - 1 : MPI_PROC_NULL, right = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;

  /* x = 0, r = b - A x = b = 2, p = r. */
  double *x = alloc_vector(nl), *r = alloc_vector(nl), *p = alloc_vector(nl), *q = alloc_vector(nl);
  double *partial = calloc(nb, sizeof(double));
  if (!partial) { perror("calloc"); MPI_Abort(MPI_COMM_WORLD, 2); }
  for (int i = 1; i <= nl; i++) r[i] = p[i] = 2;

  tareador_ON();
  for (int b = 0; b < nb; b++) {
    tareador_start_task("dot");
    partial[b] = dot(r, r, 1 + b * bs, 1 + (b + 1) * bs);
    tareador_end_task("dot");
  }
  double rr = allreduce(partial, nb);
  for (int t = 0; t < iters; t++) {
    exchange_halos(p, nl, left, right);
    for (int b = 0; b < nb; b++) {
      tareador_start_task("spmv");
      spmv(p, q, 1 + b * bs, 1 + (b + 1) * bs);
      tareador_end_task("spmv");
    }
    for (int b = 0; b < nb; b++) {
      tareador_start_task("dot");
      partial[b] = dot(p, q, 1 + b * bs, 1 + (b + 1) * bs);
      tareador_end_task("dot");
    }
    double pq = allreduce(partial, nb), alpha = pq > 0 ? rr / pq : 0;
    for (int b = 0; b < nb; b++) {
      tareador_start_task("update");
      partial[b] = update(x, r, p, q, alpha, 1 + b * bs, 1 + (b + 1) * bs);
      tareador_end_task("update");
    }
    double rr_next = allreduce(partial, nb), beta = rr > 0 ? rr_next / rr : 0;
    rr = rr_next;
    for (int b = 0; b < nb; b++) {
      tareador_start_task("direction");
      direction(p, r, beta, 1 + b * bs, 1 + (b + 1) * bs);
      tareador_end_task("direction");
    }
  }
  tareador_OFF();

  /* The same iterations on the whole vectors, laid out like a single rank's. */
  double *ref_x = alloc_vector(n), *ref_r = alloc_vector(n);
  double *ref_p = alloc_vector(n), *ref_q = alloc_vector(n);
  for (int i = 1; i <= n; i++) ref_r[i] = ref_p[i] = 2;
  double ref_rr = dot(ref_r, ref_r, 1, n + 1);
  for (int t = 0; t < iters; t++) {
    spmv(ref_p, ref_q, 1, n + 1);
    double pq = dot(ref_p, ref_q, 1, n + 1), alpha = pq > 0 ? ref_rr / pq : 0;
    double next = update(ref_x, ref_r, ref_p, ref_q, alpha, 1, n + 1);
    direction(ref_p, ref_r, ref_rr > 0 ? next / ref_rr : 0, 1, n + 1);
    ref_rr = next;
  }
  double largest = 0;
  for (int i = 1; i <= n; i++) largest = fmax(largest, fabs(ref_x[i]));
  int ok = 1;
  for (int i = 1; i <= nl; i++) /* false for NaN too */
    ok &= fabs(x[i] - ref_x[rank * nl + i]) <= 1e-12 * largest;
  printf("cg rank=%d/%d NL=%d BS=%d ITERS=%d residual=%.3e check=%s\n", rank, size, nl, bs, iters, sqrt(rr),
         ok ? "ok" : "FAILED");

  free(x);
  free(r);
  free(p);
  free(q);
  free(partial);
  free(ref_x);
  free(ref_r);
  free(ref_p);
  free(ref_q);
  MPI_Finalize();
  return ok ? 0 : 1;
}
