/*
 * Allocation helpers shared by the replay engine's C files (engine_loop.c, engine_network.c).
 */
#ifndef ENGINE_ALLOC_H
#define ENGINE_ALLOC_H

#include <stdint.h>
#include <stdlib.h>

/* n zeroed elements; never a zero-size request, so that NULL always means out of memory. */
static inline void *zeros(int64_t n, size_t size)
{
    return calloc(n > 0 ? n : 1, size);
}

static inline void free_all(void **arrays, size_t n)
{
    for (size_t k = 0; k < n; k++)
        free(arrays[k]);
}

#endif
