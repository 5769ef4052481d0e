/*
 * The event loop of tareador simulate's list scheduler (tareador/simulation/list_scheduler.py
 * says the model). In Python it cost about 10 s per core count at a million instances; simulate
 * runs six. Keys are (major, index) pairs compared in that order, where the Python model wrote
 * major * n + index: the same order, without its overflow past 2^63.
 */
#include <stdint.h>
#include <stdlib.h>

typedef struct {
    int64_t major, index;
} key_t_;

typedef struct {
    key_t_ *item;
    int64_t size;
} heap_t;

static int less(key_t_ a, key_t_ b)
{
    return a.major < b.major || (a.major == b.major && a.index < b.index);
}

static void push(heap_t *h, int64_t major, int64_t index)
{
    int64_t k = h->size++;
    key_t_ x = {major, index};
    while (k > 0 && less(x, h->item[(k - 1) / 2])) {
        h->item[k] = h->item[(k - 1) / 2];
        k = (k - 1) / 2;
    }
    h->item[k] = x;
}

static key_t_ pop(heap_t *h)
{
    key_t_ top = h->item[0], last = h->item[--h->size];
    int64_t k = 0;
    for (;;) {
        int64_t c = 2 * k + 1;
        if (c >= h->size)
            break;
        if (c + 1 < h->size && less(h->item[c + 1], h->item[c]))
            c++;
        if (!less(h->item[c], last))
            break;
        h->item[k] = h->item[c];
        k = c;
    }
    if (h->size)
        h->item[k] = last;
    return top;
}

typedef struct {
    int64_t n, limit;               /* fragments; cores (n when unbounded) */
    const int64_t *offsets, *succ;  /* CSR successors */
    const int64_t *duration, *priority;
    int64_t *indegree;              /* consumed */
    const int64_t *follow, *child;  /* continuation, first child (work-first) or -1 */
    const uint8_t *continuation;
    int breadth_first;
    int64_t *start, *finish, *core; /* out */
    void (*progress)(int64_t);
} schedule_t;

/* Returns the fragments run (n unless the precedence has a cycle), -1 without memory. */
int64_t list_schedule(schedule_t *s)
{
    int64_t n = s->n;
    heap_t tasks = {malloc(sizeof(key_t_) * (n + 1)), 0}, resumed = {malloc(sizeof(key_t_) * (n + 1)), 0};
    heap_t running = {malloc(sizeof(key_t_) * (n + 1)), 0}, free_cores = {malloc(sizeof(key_t_) * (n + 1)), 0};
    int64_t *ended = malloc(sizeof(int64_t) * (n + 1)), *ready = malloc(sizeof(int64_t) * (n + 1));
    uint8_t *taken = calloc(n + 1, 1);
    int64_t done = -1;
    if (!tasks.item || !resumed.item || !running.item || !free_cores.item || !ended || !ready || !taken)
        goto out;
    for (int64_t i = 0; i < n; i++)
        if (s->indegree[i] == 0)
            push(&tasks, s->priority[i], i);
    int64_t became_ready = 1, next_core = 0, now = 0, reported = 0;
    done = 0;
#define RUN(i, c) do { int64_t i_ = (i); s->start[i_] = now; s->finish[i_] = now + s->duration[i_]; \
        s->core[i_] = (c); taken[i_] = 1; push(&running, s->finish[i_], i_); } while (0)
    while (tasks.size || resumed.size || running.size) {
        while ((resumed.size || tasks.size) && (free_cores.size || next_core < s->limit)) {
            int64_t i = pop(resumed.size ? &resumed : &tasks).index;
            if (free_cores.size)
                RUN(i, pop(&free_cores).index);
            else
                RUN(i, next_core++);
        }
        now = running.item[0].major;
        int64_t nended = 0, nready = 0;
        while (running.size && running.item[0].major == now) {
            int64_t i = pop(&running).index;
            ended[nended++] = i;
            done++;
            for (int64_t e = s->offsets[i]; e < s->offsets[i + 1]; e++)
                if (--s->indegree[s->succ[e]] == 0)
                    ready[nready++] = s->succ[e];
        }
        for (int64_t k = 0; k < nended; k++) {
            int64_t i = ended[k], c = s->child[i];
            int64_t j = c >= 0 && s->indegree[c] == 0 && !taken[c] ? c : s->follow[i];
            if (j >= 0 && s->indegree[j] == 0 && !taken[j])
                RUN(j, s->core[i]);
            else
                push(&free_cores, 0, s->core[i]);
        }
        for (int64_t k = 0; k < nready; k++) {
            int64_t j = ready[k];
            if (taken[j])
                continue;
            if (s->continuation[j])
                push(&resumed, became_ready, j);
            else
                push(&tasks, s->breadth_first ? became_ready : s->priority[j], j);
            became_ready++;
        }
        if (s->progress && done >= reported + 65536) {
            s->progress(done - reported);
            reported = done;
        }
    }
#undef RUN
    if (s->progress && done > reported)
        s->progress(done - reported);
out:
    free(tasks.item);
    free(resumed.item);
    free(running.item);
    free(free_cores.item);
    free(ended);
    free(ready);
    free(taken);
    return done;
}
