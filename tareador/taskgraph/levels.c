/*
 * Bottom levels of a task graph (tareador/taskgraph/dag.py bottom_levels) in one backward pass:
 * each simulation ranks millions of instances by them, and the Python loop cost a second per
 * million. The edges must be sorted by source and each go to a later index, so that walking
 * the indices backwards meets every successor before its predecessors.
 */
#include <stdint.h>

void bottom_levels(int64_t n, const int64_t *src, const int64_t *dst, int64_t edges, const int64_t *duration,
                   int64_t *level)
{
    int64_t e = edges - 1;
    for (int64_t i = n - 1; i >= 0; i--) {
        int64_t below = 0;
        for (; e >= 0 && src[e] == i; e--)
            if (level[dst[e]] > below)
                below = level[dst[e]];
        level[i] = duration[i] + below;
    }
}
