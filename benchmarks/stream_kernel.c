/* Memory-bound kernel with an exactly known number of 4-byte loads and stores:
 * ITER passes of b[i] = a[i] + b[i] over N ints = ITER * N * 3 accesses (2 loads, 1 store),
 * in 8 tasks per pass so the dependency analysis has real work. Compiled at -O1 so the loop
 * keeps exactly those accesses and no stack traffic. Usage: stream_kernel N ITER */
#include <stdio.h>
#include <stdlib.h>
#include "tareador.h"

int main(int argc, char **argv)
{
  long n = argc > 1 ? atol(argv[1]) : 1 << 20, iters = argc > 2 ? atol(argv[2]) : 16;
  int *a = malloc(n * sizeof(int)), *b = malloc(n * sizeof(int));
  for (long i = 0; i < n; i++) { a[i] = (int) i; b[i] = 0; }
  tareador_ON();
  for (long it = 0; it < iters; it++)
    for (long t = 0; t < 8; t++) {
      tareador_start_task("chunk");
      for (long i = t * n / 8; i < (t + 1) * n / 8; i++) b[i] = a[i] + b[i];
      tareador_end_task("chunk");
    }
  tareador_OFF();
  printf("%d\n", b[n - 1]);
  return 0;
}
