/*
 * The event loop of tareador replay (tareador/replay/engine.py), in C because it visits every
 * action of traces with millions of threads. The model (CPUs per node, latency, transfers over
 * buses and links, rendezvous, the fifo/cp/rr ready queues) is described in engine.py; here is
 * only how it runs.
 *
 * engine.py matches sends with receives and fills struct plan with C-contiguous numpy arrays it
 * keeps alive while the loop exists:
 *   per action   kind (enum action), value: burst length in ns, message index, or priority
 *                rank (0 = never set, then 1 runs first)
 *   per thread   its actions are thread_start[t] .. thread_start[t + 1] - 1; node
 *   per message  latency and transfer time in ns, rendezvous and immediate flags,
 *                needs[m * nneeds ..]: the pools (buses, links) its transfer holds, -1 = none;
 *                needs is NULL when every bus and link is unlimited
 *   per pool     capacity
 *   outputs      pc: the first action a thread has not done (< thread_start[t + 1]: it never
 *                finished), thread_end
 *   recorder     NULL unless record: reach time of each action; per message the logical and
 *                physical send and receive times, the sender and receiver threads and CPUs
 *                (1-based, 0 = none); the states come out through loop_states
 *
 * Time is in nanoseconds as doubles, only ever added and subtracted: results are bit for bit
 * those of the same arithmetic in Python. Ties are broken deterministically: events by
 * (time, order) and cp ready queues by (priority rank, +seq, or -seq for never-set priorities,
 * which makes them LIFO), order and seq taken from one counter; free CPUs are stacks (CPU 0
 * first); FIFO ready queues and the runnable queue are first in, first out.
 *
 * loop_run returns every so many finished threads so that Python can report progress and
 * handle Ctrl-C; all state lives in struct loop between calls.
 */

#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum action { A_BURST, A_SEND, A_RECV, A_IRECV, A_WAIT, A_PRIORITY }; /* as in engine.py */
enum policy { FIFO, CP, RR };                                           /* as in engine.py */
enum status { LOOP_NOMEM = -1, LOOP_DONE, LOOP_PAUSED };              /* as in engine.py */
enum { NOT_PARKED = -2, PARKED_IMMEDIATE = -1 }; /* parked[m], else the blocked sender */
enum { STATE_FIELDS = 5 };                       /* thread, cpu + 1, begin, end, Paraver state */

struct plan {
    int64_t nthreads, nmsg, nnodes, cores, npools, nneeds, policy, record;
    int64_t running, waiting_cpu, waiting_message; /* Paraver state codes */
    double quantum;
    const int8_t *kind;
    const double *value;
    const int64_t *thread_start;
    const int32_t *node;
    const double *latency, *transfer;
    const uint8_t *rendezvous, *immediate;
    const int32_t *needs;
    const int64_t *capacity;
    int64_t *pc;
    double *thread_end;
    double *reach, *lsend, *psend, *lrecv, *precv;
    int64_t *sthread, *scpu, *rthread, *rcpu;
};

struct vec {
    void *data;
    int64_t n, cap; /* in elements */
};

/* A binary min-heap in a vec, ordered by (major, minor); minor is unique, so the order is total. */
struct entry {
    double major;
    int64_t minor, item;
};

/* Threads linked through loop.next: a thread waits in at most one queue at a time. */
struct queue {
    int32_t head, tail;
};

struct loop {
    struct plan p;
    jmp_buf nomem;
    int started;
    double now;
    int64_t order, finished;
    struct vec events;  /* item: thread (burst or latency done), nthreads + thread (rr slice
                           done), -1 - message (transfer done) */
    struct vec *ready;  /* cp, per node: threads waiting for a CPU */
    struct queue *fifo; /* fifo and rr, per node */
    struct queue runnable;
    int32_t *next;
    int32_t *free_cpus, *nfree; /* per node, a stack of cores entries */
    int32_t *cpu_of;
    int64_t *priority;
    uint8_t *paid; /* the thread paid the latency of its current send or receive */
    double *left;  /* rr: what remains of the current burst, < 0 = a new burst */
    uint8_t *arrived, *posted;
    int32_t *waiter, *parked;
    int64_t *inuse;      /* per pool */
    struct vec pending;  /* messages waiting for a bus or link, int64 */
    double *blocked, *queued; /* recorder: since when a thread waits for a message, a CPU */
    struct vec states;   /* recorder: STATE_FIELDS doubles per state */
};

/* Room for one more element at the end of v; out of memory, loop_run returns LOOP_NOMEM. */
static void *grow(struct loop *L, struct vec *v, size_t size)
{
    if (v->n == v->cap) {
        int64_t cap = v->cap ? 2 * v->cap : 64;
        void *data = realloc(v->data, cap * size);
        if (!data)
            longjmp(L->nomem, 1);
        v->data = data;
        v->cap = cap;
    }
    return (char *)v->data + v->n++ * size;
}

static int earlier(const struct entry *a, const struct entry *b)
{
    return a->major < b->major || (a->major == b->major && a->minor < b->minor);
}

static void heap_push(struct loop *L, struct vec *h, double major, int64_t minor, int64_t item)
{
    struct entry x = {major, minor, item};
    grow(L, h, sizeof x);
    struct entry *e = h->data;
    int64_t i = h->n - 1;
    while (i > 0 && earlier(&x, &e[(i - 1) / 2])) {
        e[i] = e[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    e[i] = x;
}

static struct entry heap_pop(struct vec *h)
{
    struct entry *e = h->data, top = e[0], x = e[--h->n];
    int64_t i = 0, c;
    while ((c = 2 * i + 1) < h->n) {
        if (c + 1 < h->n && earlier(&e[c + 1], &e[c]))
            c++;
        if (!earlier(&e[c], &x))
            break;
        e[i] = e[c];
        i = c;
    }
    e[i] = x;
    return top;
}

static void enqueue(struct loop *L, struct queue *q, int32_t t)
{
    L->next[t] = -1;
    if (q->tail < 0)
        q->head = t;
    else
        L->next[q->tail] = t;
    q->tail = t;
}

static int32_t dequeue(struct loop *L, struct queue *q)
{
    int32_t t = q->head;
    q->head = L->next[t];
    if (q->head < 0)
        q->tail = -1;
    return t;
}

static void push_event(struct loop *L, double when, int64_t item)
{
    heap_push(L, &L->events, when, L->order++, item);
}

/* Recorder: a Paraver state; empty ones are not kept. */
static void state(struct loop *L, int32_t t, int32_t cpu, double begin, double end, int64_t code)
{
    if (end > begin) {
        double *row = grow(L, &L->states, STATE_FIELDS * sizeof(double));
        row[0] = t;
        row[1] = cpu + 1;
        row[2] = begin;
        row[3] = end;
        row[4] = code;
    }
}

static void make_ready(struct loop *L, int32_t t)
{
    const struct plan *p = &L->p;
    int32_t n = p->node[t];
    if (L->nfree[n] && L->fifo[n].head < 0 && L->ready[n].n == 0) {
        L->cpu_of[t] = L->free_cpus[n * p->cores + --L->nfree[n]];
        enqueue(L, &L->runnable, t);
    } else if (p->policy == CP) {
        int64_t seq = L->order++;
        heap_push(L, &L->ready[n], (double)L->priority[t], L->priority[t] ? seq : -seq, t);
    } else {
        enqueue(L, &L->fifo[n], t);
    }
    if (p->record)
        L->queued[t] = L->now;
}

/* Thread t gives its CPU up: to the next thread waiting on its node, else back to the stack. */
static void release(struct loop *L, int32_t t)
{
    const struct plan *p = &L->p;
    int32_t n = p->node[t], cpu = L->cpu_of[t], next;
    L->cpu_of[t] = -1;
    if (L->fifo[n].head >= 0) {
        next = dequeue(L, &L->fifo[n]);
    } else if (L->ready[n].n) {
        next = (int32_t)heap_pop(&L->ready[n]).item;
    } else {
        L->free_cpus[n * p->cores + L->nfree[n]++] = cpu;
        return;
    }
    L->cpu_of[next] = cpu;
    enqueue(L, &L->runnable, next);
    if (p->record)
        state(L, next, -1, L->queued[next], L->now, p->waiting_cpu);
}

static void transfer(struct loop *L, int64_t m);

/* Message m has arrived: free its bus and links, wake its receiver, retry waiting transfers. */
static void deliver(struct loop *L, int64_t m)
{
    const struct plan *p = &L->p;
    L->arrived[m] = 1;
    if (p->record)
        p->precv[m] = L->now;
    if (p->needs)
        for (int64_t j = 0; j < p->nneeds; j++)
            if (p->needs[m * p->nneeds + j] >= 0)
                L->inuse[p->needs[m * p->nneeds + j]]--;
    int32_t w = L->waiter[m];
    if (w >= 0) {
        L->waiter[m] = -1;
        if (p->record)
            state(L, w, L->cpu_of[w], L->blocked[w], L->now, p->waiting_message);
        make_ready(L, w);
    }
    if (p->needs && L->pending.n) {
        /* Retry those pending now, in order; a transfer that still cannot start queues again. */
        struct vec waiting = L->pending;
        memset(&L->pending, 0, sizeof L->pending);
        for (int64_t k = 0; k < waiting.n; k++)
            transfer(L, ((int64_t *)waiting.data)[k]);
        free(waiting.data);
    }
}

/* Start message m's transfer, or queue it until its bus and links are free. */
static void transfer(struct loop *L, int64_t m)
{
    const struct plan *p = &L->p;
    if (p->needs) {
        const int32_t *need = p->needs + m * p->nneeds;
        for (int64_t j = 0; j < p->nneeds; j++) {
            if (need[j] >= 0 && L->inuse[need[j]] >= p->capacity[need[j]]) {
                *(int64_t *)grow(L, &L->pending, sizeof(int64_t)) = m;
                return;
            }
        }
        for (int64_t j = 0; j < p->nneeds; j++)
            if (need[j] >= 0)
                L->inuse[need[j]]++;
    }
    if (p->record)
        p->psend[m] = L->now;
    if (p->transfer[m] > 0)
        push_event(L, L->now + p->transfer[m], -1 - m);
    else
        deliver(L, m);
}

/* Thread t waits for a message and resumes at action resume. */
static void block(struct loop *L, int32_t t, int64_t resume)
{
    L->p.pc[t] = resume;
    if (L->p.record)
        L->blocked[t] = L->now;
    release(L, t);
}

static void start_burst(struct loop *L, int32_t t, int64_t i)
{
    const struct plan *p = &L->p;
    double d = p->value[i];
    int64_t item = t;
    if (p->policy == RR) {
        if (L->left[t] >= 0) {
            d = L->left[t];
            L->left[t] = -1;
        }
        if (d > p->quantum) {
            L->left[t] = d - p->quantum;
            d = p->quantum;
        } else {
            i++;
        }
        p->pc[t] = i;
        item = p->nthreads + t;
    } else {
        p->pc[t] = i + 1;
    }
    push_event(L, L->now + d, item);
    if (p->record)
        state(L, t, L->cpu_of[t], L->now, L->now + d, p->running);
}

/* Thread t posts the receive of message m (action i): a parked rendezvous send may go. */
static void post_receive(struct loop *L, int32_t t, int64_t i, int64_t m)
{
    const struct plan *p = &L->p;
    L->posted[m] = 1;
    if (p->record) {
        p->rthread[m] = t;
        p->rcpu[m] = L->cpu_of[t] + 1;
        p->lrecv[m] = p->reach[i];
    }
    int32_t s = L->parked[m];
    if (s == NOT_PARKED)
        return;
    L->parked[m] = NOT_PARKED;
    transfer(L, m);
    if (s >= 0) {
        if (p->record)
            state(L, s, -1, L->blocked[s], L->now, p->waiting_message);
        make_ready(L, s);
    }
}

/* Thread t, which holds a CPU, goes on until it starts a timed step, blocks or ends. */
static void run_thread(struct loop *L, int32_t t)
{
    const struct plan *p = &L->p;
    int64_t i = p->pc[t], end = p->thread_start[t + 1];
    for (;;) {
        if (i == end) {
            p->pc[t] = end;
            p->thread_end[t] = L->now;
            release(L, t);
            L->finished++;
            return;
        }
        int k = p->kind[i];
        if (p->record && !L->paid[t])
            p->reach[i] = L->now;
        if (k == A_BURST) {
            start_burst(L, t, i);
            return;
        }
        if (k == A_PRIORITY) {
            L->priority[t] = (int64_t)p->value[i++];
            continue;
        }
        int64_t m = (int64_t)p->value[i];
        if (k != A_WAIT && p->latency[m] != 0 && !L->paid[t]) {
            L->paid[t] = 1;
            p->pc[t] = i;
            push_event(L, L->now + p->latency[m], t);
            if (p->record)
                state(L, t, L->cpu_of[t], L->now, L->now + p->latency[m], p->running);
            return;
        }
        L->paid[t] = 0;
        if (k == A_SEND) {
            if (p->record) {
                p->sthread[m] = t;
                p->scpu[m] = L->cpu_of[t] + 1;
                p->lsend[m] = p->reach[i];
            }
            if (p->rendezvous[m] && !L->posted[m]) {
                if (p->immediate[m]) {
                    L->parked[m] = PARKED_IMMEDIATE;
                    i++;
                    continue;
                }
                L->parked[m] = t;
                block(L, t, i + 1);
                return;
            }
            transfer(L, m);
            i++;
            continue;
        }
        if (k != A_WAIT)
            post_receive(L, t, i, m);
        if (k == A_IRECV || L->arrived[m]) {
            i++;
            continue;
        }
        L->waiter[m] = t;
        block(L, t, i + 1);
        return;
    }
}

void loop_free(struct loop *L)
{
    if (!L)
        return;
    free(L->events.data);
    for (int64_t n = 0; L->ready && n < L->p.nnodes; n++)
        free(L->ready[n].data);
    void *arrays[] = {L->ready, L->fifo, L->next, L->free_cpus, L->nfree, L->cpu_of, L->priority, L->paid,
                      L->left, L->arrived, L->posted, L->waiter, L->parked, L->inuse, L->pending.data,
                      L->blocked, L->queued, L->states.data};
    for (size_t k = 0; k < sizeof arrays / sizeof *arrays; k++)
        free(arrays[k]);
    free(L);
}

static void *zeros(int64_t n, size_t size)
{
    return calloc(n > 0 ? n : 1, size);
}

/* NULL when memory is short. */
struct loop *loop_new(const struct plan *p)
{
    struct loop *L = calloc(1, sizeof *L);
    if (!L)
        return NULL;
    L->p = *p;
    int64_t T = p->nthreads, M = p->nmsg, N = p->nnodes;
    L->ready = zeros(N, sizeof *L->ready);
    L->fifo = zeros(N, sizeof *L->fifo);
    L->next = zeros(T, sizeof *L->next);
    L->free_cpus = zeros(N * p->cores, sizeof *L->free_cpus);
    L->nfree = zeros(N, sizeof *L->nfree);
    L->cpu_of = zeros(T, sizeof *L->cpu_of);
    L->priority = zeros(T, sizeof *L->priority);
    L->paid = zeros(T, sizeof *L->paid);
    L->left = zeros(T, sizeof *L->left);
    L->arrived = zeros(M, sizeof *L->arrived);
    L->posted = zeros(M, sizeof *L->posted);
    L->waiter = zeros(M, sizeof *L->waiter);
    L->parked = zeros(M, sizeof *L->parked);
    L->inuse = zeros(p->npools, sizeof *L->inuse);
    L->blocked = zeros(p->record ? T : 0, sizeof *L->blocked);
    L->queued = zeros(p->record ? T : 0, sizeof *L->queued);
    if (!(L->ready && L->fifo && L->next && L->free_cpus && L->nfree && L->cpu_of && L->priority && L->paid &&
          L->left && L->arrived && L->posted && L->waiter && L->parked && L->inuse && L->blocked && L->queued)) {
        loop_free(L);
        return NULL;
    }
    L->runnable.head = L->runnable.tail = -1;
    for (int64_t n = 0; n < N; n++) {
        L->fifo[n].head = L->fifo[n].tail = -1;
        for (int64_t c = 0; c < p->cores; c++)
            L->free_cpus[n * p->cores + c] = (int32_t)(p->cores - 1 - c);
        L->nfree[n] = (int32_t)p->cores;
    }
    for (int64_t t = 0; t < T; t++) {
        L->cpu_of[t] = -1;
        L->left[t] = -1;
        p->pc[t] = p->thread_start[t];
    }
    for (int64_t m = 0; m < M; m++) {
        L->waiter[m] = -1;
        L->parked[m] = NOT_PARKED;
    }
    return L;
}

/* Run until no event is left (LOOP_DONE) or at least pause_at threads finished (LOOP_PAUSED). */
int loop_run(struct loop *L, int64_t pause_at)
{
    const struct plan *p = &L->p;
    if (setjmp(L->nomem))
        return LOOP_NOMEM;
    if (!L->started) {
        L->started = 1;
        for (int32_t t = 0; t < p->nthreads; t++)
            if (p->pc[t] < p->thread_start[t + 1])
                make_ready(L, t);
    }
    for (;;) {
        while (L->runnable.head >= 0)
            run_thread(L, dequeue(L, &L->runnable));
        if (L->finished >= pause_at)
            return LOOP_PAUSED;
        if (L->events.n == 0)
            return LOOP_DONE;
        struct entry e = heap_pop(&L->events);
        L->now = e.major;
        if (e.item >= p->nthreads) { /* a round-robin slice ended: back to the end of the queue */
            int32_t t = (int32_t)(e.item - p->nthreads);
            release(L, t);
            make_ready(L, t);
        } else if (e.item >= 0) {
            enqueue(L, &L->runnable, (int32_t)e.item);
        } else {
            deliver(L, -1 - e.item);
        }
    }
}

int64_t loop_finished(const struct loop *L)
{
    return L->finished;
}

/* The recorded states, STATE_FIELDS doubles each; valid until loop_free. */
int64_t loop_states(const struct loop *L, const double **rows)
{
    *rows = L->states.data;
    return L->states.n;
}
