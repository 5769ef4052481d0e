/* A huge block of which the program touches a little: malloc(SIZE MiB), one task writes
 * TOUCHED KiB of it as 4 KiB pieces spread evenly over the block, the next task reads them back.
 * Tracing cost must follow what is touched, not what is allocated. Writes its own peak RSS
 * (VmHWM, shadow memory included: the analysis runs inside this process) to OUT.
 * Usage: sparse_kernel SIZE_MIB TOUCHED_KIB OUT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tareador.h"

int main(int argc, char **argv)
{
  if (argc != 4) return 2;
  size_t size = (size_t) atol(argv[1]) << 20, pieces = ((size_t) atol(argv[2]) << 10) / 4096;
  size_t stride = size / pieces;
  char *p = malloc(size);
  if (!p) return 1;
  long sum = 0;
  tareador_ON();
  tareador_start_task("write");
  for (size_t k = 0; k < pieces; k++) memset(p + k * stride, 1, 4096);
  tareador_end_task("write");
  tareador_start_task("read");
  for (size_t k = 0; k < pieces; k++)
    for (size_t i = 0; i < 4096; i += sizeof(long)) sum += *(long *) (p + k * stride + i);
  tareador_end_task("read");
  tareador_OFF();
  free(p);
  char line[256];
  FILE *status = fopen("/proc/self/status", "r"), *out = fopen(argv[3], "w");
  if (!status || !out) return 1;
  while (fgets(line, sizeof line, status))
    if (strncmp(line, "VmHWM:", 6) == 0) fputs(line + 6, out);
  fclose(out);
  printf("%ld\n", sum);
  return 0;
}
