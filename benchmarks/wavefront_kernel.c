/* Many small tasks: an N x N wavefront, cell (i, j) adds the cells above and to its left (a few
 * dozen instructions each). N * N task instances and 2 N (N - 1) RAW dependencies of 8 bytes.
 * Usage: wavefront_kernel N */
#include <stdlib.h>
#include "tareador.h"

int main(int argc, char **argv)
{
  long n = argc > 1 ? atol(argv[1]) : 100;
  double *a = calloc(n * n, sizeof *a);
  tareador_ON();
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++) {
      tareador_start_task("cell");
      a[i * n + j] += (i ? a[(i - 1) * n + j] : 1.0) + (j ? a[i * n + j - 1] : 1.0);
      tareador_end_task("cell");
    }
  tareador_OFF();
  return a[n * n - 1] > 0 ? 0 : 1;
}
