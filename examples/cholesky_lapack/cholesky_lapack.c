/* The tiled Cholesky of examples/cholesky with its kernels from LAPACKE and CBLAS (column-major
 * tiles of TS x TS doubles; tile A[k][i] with k < i is block row i, block column k), for
 * taskifying library calls without markers:
 *
 *   tareador trace --task-function LAPACKE_dpotrf_work,cblas_dtrsm,cblas_dsyrk,cblas_dgemm -- \
 *       examples/bin/cholesky_lapack 6 32
 *   tareador explore -- examples/bin/cholesky_lapack 6 32
 *
 * Built with -DMARKED, each call is a marked task named after examples/cholesky's kernel and
 * the loop nest is the analysed region. Usage: cholesky_lapack [NT [TS]] (default 4 8); exits 1
 * if L[0][0]^2 is not A[0][0]. */
#include <stdio.h>
#include <stdlib.h>
#include <cblas.h>
#include <lapacke.h>
#ifdef MARKED
#include <tareador.h>
#define TASK(name, call) do { tareador_start_task(name); call; tareador_end_task(name); } while (0)
#else
#define TASK(name, call) call
#define tareador_ON()
#define tareador_OFF()
#endif
int main(int argc, char **argv) {
  int nt = argc > 1 ? atoi(argv[1]) : 4, ts = argc > 2 ? atoi(argv[2]) : 8, n = nt * ts;
  double *A[nt][nt];
  for (int i = 0; i < nt; i++)
    for (int j = 0; j < nt; j++) A[i][j] = malloc(sizeof(double) * ts * ts);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) A[j / ts][i / ts][(j % ts) * ts + i % ts] = (i == j ? n : 0) + 1.0 / (1 + i + j);
  tareador_ON();
  for (int k = 0; k < nt; k++) {
    TASK("potrf", LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', ts, A[k][k], ts));
    for (int i = k + 1; i < nt; i++)
      TASK("trsm", cblas_dtrsm(CblasColMajor, CblasRight, CblasLower, CblasTrans, CblasNonUnit, ts, ts, 1.0,
                               A[k][k], ts, A[k][i], ts));
    for (int i = k + 1; i < nt; i++) {
      for (int j = k + 1; j < i; j++)
        TASK("gemm", cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, ts, ts, ts, -1.0, A[k][i], ts, A[k][j], ts,
                                 1.0, A[j][i], ts));
      TASK("syrk", cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, ts, ts, -1.0, A[k][i], ts, 1.0, A[i][i], ts));
    }
  }
  tareador_OFF();
  /* L[0][0] = sqrt(A[0][0]) = sqrt(n + 1) */
  double l = A[0][0][0];
  printf("L[0][0]^2 = %.12g\n", l * l);
  return !(l * l > n + 1 - 1e-9 && l * l < n + 1 + 1e-9);
}
