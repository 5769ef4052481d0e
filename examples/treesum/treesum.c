/* Divide-and-conquer sum with nested tasks: the parent/child (taskwait) pattern.
 * Usage: treesum [LEVELS [LEAF]]   (2^LEVELS leaves of LEAF doubles each; defaults 3 and 256)
 *
 * Node 1 is the whole array; node k has children 2k and 2k+1, each half of its range; nodes
 * 2^LEVELS .. 2^(LEVELS+1)-1 are leaves. Every inner node is a task "split" that creates its two
 * children as tasks and then adds their results; every leaf is a task "leaf" that sums its range.
 * Each task writes its sum to sum[k] (a heap array of doubles). Expected, per inner node k:
 *   split(k) is cut into 3 fragments: before child 2k, between the children, after child 2k+1;
 *   children 2k and 2k+1 start after the 1st and the 2nd fragment of split(k);
 *   the 3rd fragment of split(k) reads sum[2k] and sum[2k+1]: RAW 8 bytes from each child
 *   (from a leaf's only fragment, or from a split's 3rd fragment);
 * and main, after the root, reads sum[1]: RAW 8 bytes from split(1)'s 3rd fragment.
 * So the leaves run in parallel and the additions climb the tree: T-inf grows with LEVELS,
 * T1 with 2^LEVELS. The data are 1, 2, 3, ...: the total is checked exactly. */
#include <stdio.h>
#include <stdlib.h>
#include "tareador.h"

static double *data, *sum;

static void reduce(long node, long lo, long hi, long leaves)
{
  if (node >= leaves) {
    tareador_start_task("leaf");
    double s = 0;
    for (long i = lo; i < hi; i++) s += data[i];
    sum[node] = s;
    tareador_end_task("leaf");
    return;
  }
  tareador_start_task("split");
  long mid = lo + (hi - lo) / 2;
  reduce(2 * node, lo, mid, leaves);
  reduce(2 * node + 1, mid, hi, leaves);
  sum[node] = sum[2 * node] + sum[2 * node + 1];
  tareador_end_task("split");
}

int main(int argc, char **argv)
{
  int levels = argc > 1 ? atoi(argv[1]) : 3;
  long leaf = argc > 2 ? atol(argv[2]) : 256;
  if (levels < 0 || levels > 20 || leaf < 1) {
    fprintf(stderr, "usage: treesum [LEVELS (0..20) [LEAF (>= 1)]]\n");
    return 2;
  }
  long leaves = 1L << levels, n = leaves * leaf;
  data = malloc(sizeof(double) * n);
  sum = malloc(sizeof(double) * 2 * leaves);
  if (!data || !sum) { perror("malloc"); return 2; }
  for (long i = 0; i < n; i++) data[i] = (double) (i + 1);

  tareador_ON();
  reduce(1, 0, n, leaves);
  double total = sum[1];
  tareador_OFF();

  double expected = (double) n * (double) (n + 1) / 2;
  printf("treesum leaves=%ld leaf=%ld total=%.0f check=%s\n", leaves, leaf, total, total == expected ? "ok" : "FAILED");
  free(data);
  free(sum);
  return total == expected ? 0 : 1;
}
