/*
 * The event loop of tareador replay (tareador/simulation/dimemas_engine.py), in C because it visits every
 * action of traces with millions of threads. It follows the control flow of Dimemas 5.5.0
 * (Simulator/sched/schedule.c SCHEDULER_general, SCH_fifo.c, SCH_ss_mpi_cp.c, SCH_rr.c,
 * model/communic.c, model/links.c) step for step, because the order in which same-time steps
 * happen decides who gets a CPU, and so the makespan:
 *
 *   - one event queue, first in first out among events of the same time: a thread's burst
 *     ends (every burst, also empty ones and those that stand for a latency), a transfer
 *     frees its bus and links, a message arrives (even after a transfer of no time);
 *   - when a burst ends the thread gives its CPU up, then does its next actions: events are
 *     free; a burst, a receive that blocks or the end stop it; a send or a receive that does
 *     not block puts it back on the ready queue at the head (it keeps its turn), with an empty
 *     burst first when its next action is not a burst (so each of them costs an event);
 *     a latency is a burst at the head of the queue too;
 *   - a thread woken by an arriving message queues at the tail, and the arrival gives a free
 *     CPU of its node to the head of the queue before anything else happens;
 *   - after every event each node that queued a thread fills its free CPUs from its queue,
 *     nodes in order; a thread gets the CPU it last ran on if free, else the first free one;
 *   - ready queues: FIFO and RR, tail for a thread that lost its CPU, head for one that keeps
 *     its turn; SS_MPI_CP by priority rank (0 = never set: first, LIFO), FIFO among equal
 *     ranks for a thread that lost its CPU, LIFO for one that keeps its turn; RR slices every
 *     burst by the quantum, and a thread that keeps its turn only gets what is left of it;
 *   - a thread that gets a CPU first spends the scheduler's context-switch cost on it (every
 *     time, also to go on with the burst it was running; schedule.c put_thread_on_run), then
 *     runs its burst (under rr: a new quantum's slice, since the switch was a timer too);
 *   - a transfer takes its links and bus as engine_network.c describes, waiting in their FIFO
 *     queues for what it cannot get yet;
 *   - a global operation (GLOBAL_operation, close_global_communication): its members wait off
 *     their CPUs until the last arrives; it then takes every inter-node bus (waiting in their
 *     queue, holding what it got, where messages hold some), lasts its root's time, frees the
 *     buses and its members queue for a CPU in arrival order, the root last;
 *   - messages match receives by key (sender, receiver, tag, communicator) when they meet, as in
 *     Dimemas, not in send order: an arriving message goes to the first receiver blocked on its
 *     key, a receive takes the first message of its key that arrived, and a rendezvous send goes
 *     when a receiver is blocked on its key (or when its own receive was an irecv reached before).
 *     Whether a send or a receive was reached is known per message: the k-th send of a key
 *     pairs with its k-th receive in trace order, as dimemas_engine.py matched them.
 *
 * dimemas_engine.py matches sends with receives and fills struct plan with C-contiguous numpy arrays it
 * keeps alive while the loop exists:
 *   per action   kind (enum action), value: burst length in ns, message index, or for an event
 *                the priority rank it sets (-1 = none; 1 = highest value, runs first; a
 *                thread's rank is 0, ahead of all, until an event sets one)
 *   per thread   its actions are thread_start[t] .. thread_start[t + 1] - 1; node
 *   per message  key, latency and transfer time in ns, rendezvous and immediate flags, by_irecv
 *                (its receive is an irecv); net: its links and bus (engine_network.h), whose
 *                arrays are NULL when every bus and link is unlimited.
 *                A receive or wait action's value is its message (a wait's: its irecv's), a
 *                global operation's its record g: gop_op[g] its operation, gop_root[g] it claims
 *                the root, gop_time[g] the operation's ns with g as root (gop_startup[g] of them
 *                latencies, for the recorder); op_size[o] members;
 *                gop_pool the bus pool (of net) operations take whole (-1: unlimited buses)
 *   outputs      pc: the first action a thread has not done (< thread_start[t + 1]: it never
 *                finished), thread_end
 *   recorder     NULL unless record: reach time of each action; per message the logical and
 *                physical send and receive times, the sender and receiver threads and CPUs
 *                (numbered across nodes from 1, 0 = none); the states come out through loop_states
 *
 * Time is in nanoseconds as doubles, only ever added and subtracted, as in Dimemas. Ties are
 * broken deterministically: events by (time, order) and ready queues by (rank, +-seq), order
 * and seq taken from one counter.
 *
 * loop_run returns every so many finished threads, so that Python can report progress, and
 * every so many events, so that a Ctrl-C never waits for a long run (Python's signal handlers
 * only run between calls); all state lives in struct loop between calls.
 */

#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>

#include "engine_alloc.h"
#include "engine_network.h"

enum action { A_BURST, A_SEND, A_RECV, A_IRECV, A_WAIT, A_EVENT, A_GLOBAL }; /* as in dimemas_engine.py */
enum policy { FIFO, CP, RR };                                        /* as in dimemas_engine.py */
enum status { LOOP_NOMEM = -1, LOOP_DONE, LOOP_PAUSED };           /* as in dimemas_engine.py */
enum { PARKED_IMMEDIATE = -1 };                  /* sender[m] of a parked message, else its blocked thread */
enum { STATE_FIELDS = 5 };                       /* thread, cpu + 1, begin, end, Paraver state */

struct plan {
    int64_t nthreads, nmsg, nkeys, nnodes, cores, policy, record;
    int64_t running, waiting_cpu, waiting_message, switching, startup; /* Paraver state codes */
    double quantum, context_switch;
    const int8_t *kind;
    const double *value;
    const int64_t *thread_start;
    const int32_t *node;
    const int32_t *key;
    const double *latency, *transfer;
    const uint8_t *rendezvous, *immediate, *by_irecv;
    int64_t *pc;
    double *thread_end;
    double *reach, *lsend, *psend, *lrecv, *precv;
    int64_t *sthread, *scpu, *rthread, *rcpu, *reach_cpu;
    int64_t nops;              /* global operations (simulation/global_ops.py) */
    int64_t gop_pool;          /* the inter-node bus pool every operation takes whole, -1: unlimited */
    int64_t group_communication; /* Paraver state of a member in a global operation */
    const int32_t *gop_op;     /* per global-operation record: its operation */
    const uint8_t *gop_root;   /* it claims the root */
    const double *gop_time;    /* ns its operation takes when it is the root */
    const int32_t *op_size;    /* per operation: its members */
    const double *gop_startup; /* ns of gop_time[g] that are latencies (Dimemas' startup state) */
    struct network_plan net;
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

/* A FIFO of messages or threads linked through an array of next ones: a message is in at most
 * one queue (parked, arrived) at a time, a thread in at most one. */
struct queue {
    int32_t head, tail;
};

struct loop {
    struct plan p;
    jmp_buf nomem;
    int started;
    double now;
    int64_t order, finished;
    struct vec events;   /* item: thread (its burst ends), nthreads + 2m (message m frees its
                            pools), nthreads + 2m + 1 (message m arrives), nthreads + 2 nmsg + o
                            (global operation o ends) */
    struct vec *ready;   /* per node: threads waiting for a CPU */
    uint64_t *free_cpus; /* per node, words bits: its free cores */
    int64_t words;
    int32_t *nfree;      /* per node */
    int32_t *context;    /* per CPU: the last thread it ran */
    int32_t *cpu_of;     /* per thread: the CPU it last ran on, -1 before */
    int64_t *priority;
    uint8_t *loose;      /* Dimemas' loose_cpu: the thread queues at the tail */
    uint8_t *paying, *paid; /* the thread's head burst is a latency / its latency is paid */
    uint8_t *switching;  /* the thread's CPU event ends its context switch, not its burst */
    double *work;        /* the burst at the head of the thread's actions, ns left; < 0: none
                            (then the head is the trace's action at pc) */
    double *slice;       /* rr: what the thread has used of its quantum */
    struct queue *arrived, *parked, *receivers; /* per key: messages not received yet, rendezvous
                                                   sends waiting for a receiver, blocked receivers */
    uint8_t *sent, *posted; /* per message: its send, its receive was reached */
    int32_t *sender;     /* per parked message */
    int32_t *next_msg, *next_thread;
    struct network *net; /* NULL: every link and bus unlimited */
    uint8_t *dirty;      /* per node: queued a thread during this event */
    struct vec reload;   /* the dirty nodes, int32 */
    double *blocked, *queued; /* recorder: since when a thread waits for a message, a CPU */
    double *posted_at;   /* recorder: per message, when its receive was reached */
    struct vec states;   /* recorder: STATE_FIELDS doubles per state */
    int32_t *op_arrived; /* per global operation: members arrived */
    int32_t *op_root;    /* its root's record (-1: none yet) and thread */
    int32_t *op_root_thread;
    struct queue *op_members; /* the members arrived, in order */
    double *op_start;    /* recorder: when each started */
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

static void enqueue(int32_t *next, struct queue *q, int32_t x)
{
    next[x] = -1;
    if (q->tail < 0)
        q->head = x;
    else
        next[q->tail] = x;
    q->tail = x;
}

static int32_t dequeue(const int32_t *next, struct queue *q)
{
    int32_t x = q->head;
    q->head = next[x];
    if (q->head < 0)
        q->tail = -1;
    return x;
}

static void push_event(struct loop *L, double when, int64_t item)
{
    heap_push(L, &L->events, when, L->order++, item);
}

/* Recorder: a Paraver state on a CPU (-1: none); empty ones are not kept. */
static void state(struct loop *L, int32_t t, int64_t cpu, double begin, double end, int64_t code)
{
    if (end > begin) {
        double *row = grow(L, &L->states, STATE_FIELDS * sizeof(double));
        row[0] = t;
        row[1] = (double)(cpu + 1);
        row[2] = begin;
        row[3] = end;
        row[4] = code;
    }
}

static int64_t end_of(const struct loop *L, int32_t t)
{
    return L->p.thread_start[t + 1];
}

/* Is the thread's next action a burst? Dimemas puts a thread on a CPU only to run one. */
static int head_is_burst(const struct loop *L, int32_t t)
{
    int64_t i = L->p.pc[t];
    return L->work[t] >= 0 || (i < end_of(L, t) && L->p.kind[i] == A_BURST);
}

/* SCHEDULER_thread_to_ready: queue t for a CPU of its node, at the tail if it lost its CPU. */
static void to_ready(struct loop *L, int32_t t)
{
    const struct plan *p = &L->p;
    int32_t n = p->node[t];
    if (!head_is_burst(L, t))
        L->work[t] = 0;
    int64_t rank = p->policy == CP ? L->priority[t] : 0;
    int64_t seq = L->order++;
    int front = !L->loose[t] || (p->policy == CP && rank == 0);
    heap_push(L, &L->ready[n], (double)rank, front ? -seq : seq, t);
    if (!L->dirty[n]) {
        L->dirty[n] = 1;
        *(int32_t *)grow(L, &L->reload, sizeof(int32_t)) = n;
    }
    if (p->record)
        L->queued[t] = L->now;
}

static void finish(struct loop *L, int32_t t)
{
    L->p.pc[t] = end_of(L, t);
    L->p.thread_end[t] = L->now;
    L->finished++;
}

/* The action at pc is done and t goes on at once: it queues keeping its turn, or ends. */
static void next_action(struct loop *L, int32_t t)
{
    if (++L->p.pc[t] == end_of(L, t)) {
        finish(L, t);
    } else {
        L->loose[t] = 0;
        to_ready(L, t);
    }
}

static int cpu_is_free(const struct loop *L, int64_t n, int64_t core)
{
    return (L->free_cpus[n * L->words + core / 64] >> (core % 64)) & 1;
}

static void set_cpu_free(struct loop *L, int64_t n, int64_t core, int free)
{
    uint64_t *w = &L->free_cpus[n * L->words + core / 64], bit = (uint64_t)1 << (core % 64);
    *w = free ? *w | bit : *w & ~bit;
    L->nfree[n] += free ? 1 : -1;
}

/* select_free_cpu: the CPU t ran on last if it is free and nobody ran there since, else the first free. */
static int64_t take_cpu(struct loop *L, int32_t n, int32_t t)
{
    int64_t base = (int64_t)n * L->p.cores, last = L->cpu_of[t], core = -1;
    if (last >= 0 && L->context[last] == t && cpu_is_free(L, n, last - base))
        core = last - base;
    for (int64_t w = 0; core < 0; w++)
        if (L->free_cpus[n * L->words + w])
            core = 64 * w + __builtin_ctzll(L->free_cpus[n * L->words + w]);
    set_cpu_free(L, n, core, 0);
    L->context[base + core] = t;
    L->cpu_of[t] = (int32_t)(base + core);
    return base + core;
}

/* How long t runs now: its whole head burst, or under rr what the quantum allows. */
static double run_time(struct loop *L, int32_t t)
{
    const struct plan *p = &L->p;
    double w = L->work[t], d = w;
    if (p->policy == RR) {
        if (L->loose[t] || L->slice[t] == p->quantum) {
            d = w < p->quantum ? w : p->quantum;
            L->slice[t] = d;
        } else {
            d = p->quantum - L->slice[t];
            d = d < w ? d : w;
            L->slice[t] += d;
        }
    }
    L->work[t] = w - d == 0 ? -1 : w - d;
    return d;
}

/* t, on CPU cpu, runs its head burst (or under rr the slice the quantum allows). */
static void run(struct loop *L, int32_t t, int64_t cpu)
{
    double d = run_time(L, t);
    L->loose[t] = 1;
    push_event(L, L->now + d, t);
    if (L->p.record)
        state(L, t, cpu, L->now, L->now + d, L->paying[t] ? L->p.startup : L->p.running);
}

/* put_thread_on_run: the head of node n's queue takes a free CPU and, after the context
 * switch, starts its head burst. */
static void dispatch(struct loop *L, int32_t n)
{
    const struct plan *p = &L->p;
    int32_t t = (int32_t)heap_pop(&L->ready[n]).item;
    int64_t cpu = take_cpu(L, n, t);
    if (L->work[t] < 0) {
        int64_t i = p->pc[t]++;
        L->work[t] = p->value[i];
        if (p->record)
            p->reach[i] = L->now;
    }
    if (p->record)
        state(L, t, -1, L->queued[t], L->now, p->waiting_cpu);
    if (p->context_switch > 0) {
        L->switching[t] = 1;
        L->loose[t] = 1; /* as every timer Dimemas sets for a thread (EVENT_timer): under rr the
                            burst after a switch starts a new quantum */
        push_event(L, L->now + p->context_switch, t);
        if (p->record)
            state(L, t, cpu, L->now, L->now + p->context_switch, p->switching);
        return;
    }
    run(L, t, cpu);
}

static void dispatch_one(struct loop *L, int32_t n)
{
    if (L->ready[n].n && L->nfree[n])
        dispatch(L, n);
}

/* reload_events after each event: nodes that queued threads fill their free CPUs, in order. */
static void reload(struct loop *L)
{
    int32_t *nodes = L->reload.data;
    for (int64_t i = 1; i < L->reload.n; i++)
        for (int64_t j = i; j > 0 && nodes[j - 1] > nodes[j]; j--) {
            int32_t x = nodes[j];
            nodes[j] = nodes[j - 1];
            nodes[j - 1] = x;
        }
    for (int64_t i = 0; i < L->reload.n; i++) {
        L->dirty[nodes[i]] = 0;
        while (L->ready[nodes[i]].n && L->nfree[nodes[i]])
            dispatch(L, nodes[i]);
    }
    L->reload.n = 0;
}

/* Recorder: t starts waiting, without a CPU, for a message or for a receive of its rendezvous send. */
static void block(struct loop *L, int32_t t)
{
    if (L->p.record)
        L->blocked[t] = L->now;
}

static void wake_state(struct loop *L, int32_t t)
{
    if (L->p.record)
        state(L, t, -1, L->blocked[t], L->now, L->p.waiting_message);
}

/* really_send: start message m's transfer once its links and bus are free. */
static void transfer(struct loop *L, int64_t m)
{
    const struct plan *p = &L->p;
    if (L->net && !network_acquire(L->net, m))
        return;
    if (p->record)
        p->psend[m] = L->now;
    if (L->net)
        push_event(L, L->now + p->transfer[m], p->nthreads + 2 * m);
    double t = L->net ? network_time(L->net, m, p->transfer[m]) : p->transfer[m];
    push_event(L, L->now + t, p->nthreads + 2 * m + 1);
}

static void begin_global(struct loop *L, int64_t o);

/* A link or bus freed for x: a transfer (x < nmsg) tries again, a global operation (nmsg + o)
 * that now holds every bus begins. */
static void retry(void *ctx, int64_t x)
{
    struct loop *L = ctx;
    if (x < L->p.nmsg)
        transfer(L, x);
    else
        begin_global(L, x - L->p.nmsg);
}

/* Recorder: thread w takes message got in the receive or wait whose own message is m. */
static void received(struct loop *L, int32_t w, int64_t got, int64_t m)
{
    const struct plan *p = &L->p;
    if (p->record) {
        p->rthread[got] = w;
        p->rcpu[got] = L->cpu_of[w] + 1;
        p->lrecv[got] = L->posted_at[m];
    }
}

/* message_received: the first receiver blocked on m's key takes it, queues at the tail and may
 * take a free CPU at once; with none, m waits for a receive. */
static void arrive(struct loop *L, int64_t m)
{
    const struct plan *p = &L->p;
    struct queue *receivers = &L->receivers[p->key[m]];
    if (p->record)
        p->precv[m] = L->now;
    if (receivers->head < 0) {
        enqueue(L->next_msg, &L->arrived[p->key[m]], (int32_t)m);
        return;
    }
    int32_t w = dequeue(L->next_thread, receivers);
    received(L, w, m, (int64_t)p->value[p->pc[w]]);
    wake_state(L, w);
    if (++p->pc[w] == end_of(L, w)) {
        finish(L, w);
        return;
    }
    L->loose[w] = 1;
    to_ready(L, w);
    dispatch_one(L, p->node[w]);
}

/* Start_communication_if_partner_ready_for_rendez_vous: the first rendezvous send parked on
 * the key goes; a blocked sender goes on. */
static void start_parked(struct loop *L, int64_t key)
{
    if (L->parked[key].head < 0)
        return;
    int32_t m = dequeue(L->next_msg, &L->parked[key]), s = L->sender[m];
    transfer(L, m);
    if (s != PARKED_IMMEDIATE) {
        wake_state(L, s);
        next_action(L, s);
    }
}

/* Before a send, receive or wait t pays the latency as a burst; 1 if it went to do so. */
static int pay_latency(struct loop *L, int32_t t, int64_t m)
{
    if (L->paid[t]) {
        L->paid[t] = 0;
        return 0;
    }
    if (L->p.latency[m] == 0)
        return 0;
    L->loose[t] = 0;
    L->paying[t] = 1;
    L->work[t] = L->p.latency[m];
    to_ready(L, t);
    return 1;
}

/* Recorder: the first time t reaches action i (not again after paying its latency). */
static void reached(struct loop *L, int32_t t, int64_t i)
{
    if (L->p.record && !L->paid[t])
        L->p.reach[i] = L->now;
}

static void do_send(struct loop *L, int32_t t, int64_t i, int64_t m)
{
    const struct plan *p = &L->p;
    if (p->record && !L->paid[t]) {
        p->sthread[m] = t;
        p->lsend[m] = L->now;
    }
    reached(L, t, i);
    if (pay_latency(L, t, m))
        return;
    if (p->record) /* where it paid the latency, as Dimemas writes it (the thread may have changed CPUs) */
        p->scpu[m] = L->cpu_of[t] + 1;
    L->sent[m] = 1;
    int64_t key = p->key[m];
    if (p->rendezvous[m] && !(L->posted[m] && p->by_irecv[m]) && L->receivers[key].head < 0) {
        L->sender[m] = p->immediate[m] ? PARKED_IMMEDIATE : t;
        enqueue(L->next_msg, &L->parked[key], (int32_t)m);
        if (p->immediate[m])
            next_action(L, t);
        else
            block(L, t);
        return;
    }
    transfer(L, m);
    next_action(L, t);
}

/* A receive, irecv or wait of message m (a wait's: its irecv's), matched by m's key. */
static void do_receive(struct loop *L, int32_t t, int64_t i, int64_t m, int k)
{
    const struct plan *p = &L->p;
    int64_t key = p->key[m];
    reached(L, t, i);
    if (k != A_IRECV && pay_latency(L, t, m))
        return;
    if (k != A_WAIT) {
        L->posted[m] = 1;
        if (p->record)
            L->posted_at[m] = p->reach[i];
    }
    if (k == A_IRECV) {
        if (L->sent[m] && p->rendezvous[m])
            start_parked(L, key);
        next_action(L, t);
    } else if (L->arrived[key].head >= 0) {
        received(L, t, dequeue(L->next_msg, &L->arrived[key]), m);
        next_action(L, t);
    } else {
        start_parked(L, key);
        enqueue(L->next_thread, &L->receivers[key], t);
        block(L, t);
    }
}

/* start_global_op: the operation takes its root's time, then frees the buses and ends. */
static void begin_global(struct loop *L, int64_t o)
{
    const struct plan *p = &L->p;
    if (p->record)
        L->op_start[o] = L->now;
    push_event(L, L->now + p->gop_time[L->op_root[o]], p->nthreads + 2 * p->nmsg + o);
}

/* global_op_get_all_buses: with limited buses, the operation takes every bus of the network:
 * those free now, and it waits in the buses' queue (holding them) for the others. */
static void take_all_buses(struct loop *L, int64_t o)
{
    if (L->p.gop_pool < 0 || network_take_all_buses(L->net, (int32_t)L->p.gop_pool, o))
        begin_global(L, o);
}

/* free_global_communication_resources: the buses go to their queue's waiters in order. */
static void free_all_buses(struct loop *L, int64_t o)
{
    if (L->p.gop_pool >= 0)
        network_free_all_buses(L->net, (int32_t)L->p.gop_pool, o, retry, L);
}

/* GLOBAL_operation (blocking): t waits off its CPU until every member arrived; the last one
 * starts the operation, which takes its root's time: the member that claims the root (the last
 * such), else the last to arrive. No startup is paid (global_ops.py). */
static void do_global(struct loop *L, int32_t t, int64_t i)
{
    const struct plan *p = &L->p;
    int64_t g = (int64_t)p->value[i];
    int32_t o = p->gop_op[g];
    reached(L, t, i);
    enqueue(L->next_thread, &L->op_members[o], t);
    block(L, t);
    int last = ++L->op_arrived[o] == p->op_size[o];
    if (p->gop_root[g] || (last && L->op_root[o] < 0)) {
        L->op_root[o] = (int32_t)g;
        L->op_root_thread[o] = t;
    }
    if (last)
        take_all_buses(L, o);
}

/* Recorder, as Dimemas' start_global_op writes it: Group Communication until the operation
 * starts, its latencies as a startup on the member's CPU, then Group Communication to the end. */
static void leave_global(struct loop *L, int32_t w, int64_t o)
{
    const struct plan *p = &L->p;
    if (p->record) {
        double start = L->op_start[o], up = start + p->gop_startup[L->op_root[o]];
        state(L, w, -1, L->blocked[w], start, p->group_communication);
        state(L, w, L->cpu_of[w], start, up, p->startup);
        state(L, w, -1, up, L->now, p->group_communication);
    }
    if (++L->p.pc[w] == end_of(L, w)) {
        finish(L, w);
        return;
    }
    L->loose[w] = 1;
    to_ready(L, w);
}

/* close_global_communication: the members queue for a CPU in the order they arrived, the root
 * last (the communicator's queue after the root went to take the buses and came back). */
static void close_global(struct loop *L, int64_t o)
{
    int32_t root = L->op_root_thread[o];
    free_all_buses(L, o);
    while (L->op_members[o].head >= 0) {
        int32_t w = dequeue(L->next_thread, &L->op_members[o]);
        if (w != root)
            leave_global(L, w, o);
    }
    leave_global(L, root, o);
}

/* SCHEDULER_general's next_op: t, off its CPU, does actions until one takes time or blocks. */
static void run_actions(struct loop *L, int32_t t)
{
    const struct plan *p = &L->p;
    for (;;) {
        if (head_is_burst(L, t)) {
            L->loose[t] = 1;
            to_ready(L, t);
            return;
        }
        int64_t i = p->pc[t];
        if (i == end_of(L, t)) {
            finish(L, t);
            return;
        }
        int k = p->kind[i];
        if (k == A_GLOBAL) {
            do_global(L, t, i);
            return;
        }
        if (k != A_EVENT) {
            int64_t m = (int64_t)p->value[i];
            if (k == A_SEND)
                do_send(L, t, i, m);
            else
                do_receive(L, t, i, m, k);
            return;
        }
        if (p->record) {
            p->reach[i] = L->now;
            p->reach_cpu[i] = L->cpu_of[t] + 1; /* where it last ran, as Dimemas writes its events */
        }
        if (p->value[i] >= 0)
            L->priority[t] = (int64_t)p->value[i];
        p->pc[t]++;
    }
}

/* SCH_TIMER_OUT: t's burst ended; it frees its CPU, goes on, and the CPU goes to the queue's head. */
static void burst_ends(struct loop *L, int32_t t)
{
    int32_t n = L->p.node[t];
    if (L->switching[t]) {
        L->switching[t] = 0;
        run(L, t, L->cpu_of[t]);
        return;
    }
    set_cpu_free(L, n, L->cpu_of[t] - (int64_t)n * L->p.cores, 1);
    if (L->paying[t] && L->work[t] < 0) { /* under rr, once its last slice ran */
        L->paying[t] = 0;
        L->paid[t] = 1;
    }
    run_actions(L, t);
    dispatch_one(L, n);
}

void loop_free(struct loop *L)
{
    if (!L)
        return;
    free(L->events.data);
    network_free(L->net);
    for (int64_t n = 0; L->ready && n < L->p.nnodes; n++)
        free(L->ready[n].data);
    void *arrays[] = {L->ready, L->free_cpus, L->nfree, L->context, L->cpu_of, L->priority, L->loose, L->paying,
                      L->paid, L->switching, L->work, L->slice, L->arrived, L->parked, L->receivers, L->sent,
                      L->posted, L->sender, L->next_msg, L->next_thread, L->dirty, L->reload.data, L->blocked,
                      L->queued, L->posted_at, L->states.data, L->op_arrived, L->op_root, L->op_root_thread,
                      L->op_members, L->op_start};
    free_all(arrays, sizeof arrays / sizeof *arrays);
    free(L);
}

/* NULL when memory is short. */
struct loop *loop_new(const struct plan *p)
{
    struct loop *L = calloc(1, sizeof *L);
    if (!L)
        return NULL;
    L->p = *p;
    int64_t T = p->nthreads, M = p->nmsg, K = p->nkeys, N = p->nnodes;
    L->words = (p->cores + 63) / 64;
    L->ready = zeros(N, sizeof *L->ready);
    L->free_cpus = zeros(N * L->words, sizeof *L->free_cpus);
    L->nfree = zeros(N, sizeof *L->nfree);
    L->context = zeros(N * p->cores, sizeof *L->context);
    L->cpu_of = zeros(T, sizeof *L->cpu_of);
    L->priority = zeros(T, sizeof *L->priority);
    L->loose = zeros(T, sizeof *L->loose);
    L->paying = zeros(T, sizeof *L->paying);
    L->paid = zeros(T, sizeof *L->paid);
    L->switching = zeros(T, sizeof *L->switching);
    L->work = zeros(T, sizeof *L->work);
    L->slice = zeros(T, sizeof *L->slice);
    L->arrived = zeros(K, sizeof *L->arrived);
    L->parked = zeros(K, sizeof *L->parked);
    L->receivers = zeros(K, sizeof *L->receivers);
    L->sent = zeros(M, sizeof *L->sent);
    L->posted = zeros(M, sizeof *L->posted);
    L->sender = zeros(M, sizeof *L->sender);
    L->next_msg = zeros(M, sizeof *L->next_msg);
    L->next_thread = zeros(T, sizeof *L->next_thread);
    L->net = p->net.flags ? network_new(&p->net, M, p->nops) : NULL;
    L->dirty = zeros(N, sizeof *L->dirty);
    L->blocked = zeros(p->record ? T : 0, sizeof *L->blocked);
    L->queued = zeros(p->record ? T : 0, sizeof *L->queued);
    L->posted_at = zeros(p->record ? M : 0, sizeof *L->posted_at);
    L->op_arrived = zeros(p->nops, sizeof *L->op_arrived);
    L->op_root = zeros(p->nops, sizeof *L->op_root);
    L->op_root_thread = zeros(p->nops, sizeof *L->op_root_thread);
    L->op_members = zeros(p->nops, sizeof *L->op_members);
    L->op_start = zeros(p->record ? p->nops : 0, sizeof *L->op_start);
    if (!(L->op_arrived && L->op_root && L->op_root_thread && L->op_members && L->op_start &&
          L->ready && L->free_cpus && L->nfree && L->context && L->cpu_of && L->priority && L->loose &&
          L->paying && L->paid && L->switching && L->work && L->slice && L->arrived && L->parked && L->receivers &&
          L->sent && L->posted && L->sender && L->next_msg && L->next_thread && (L->net || !p->net.flags) &&
          L->dirty && L->blocked && L->queued && L->posted_at)) {
        loop_free(L);
        return NULL;
    }
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < p->cores; c++)
            set_cpu_free(L, n, c, 1);
    for (int64_t c = 0; c < N * p->cores; c++)
        L->context[c] = -1;
    for (int64_t t = 0; t < T; t++) {
        L->cpu_of[t] = -1;
        L->work[t] = -1;
        p->pc[t] = p->thread_start[t];
    }
    for (int64_t k = 0; k < K; k++)
        L->arrived[k].head = L->arrived[k].tail = L->parked[k].head = L->parked[k].tail = L->receivers[k].head =
            L->receivers[k].tail = -1;
    for (int64_t o = 0; o < p->nops; o++) {
        L->op_root[o] = -1;
        L->op_members[o].head = L->op_members[o].tail = -1;
    }
    return L;
}

/* SCHEDULER_Init: every thread queues as one that lost its CPU (under SS_MPI_CP all of them
 * rank 0, so the last first), then each node fills its CPUs. A thread that does not begin with
 * a burst gets an empty one first (Dimemas leaves such a thread out of the simulation). */
static void start(struct loop *L)
{
    for (int32_t t = 0; t < L->p.nthreads; t++) {
        if (L->p.pc[t] == end_of(L, t)) {
            finish(L, t);
        } else {
            L->loose[t] = 1;
            to_ready(L, t);
        }
    }
    reload(L);
}

/* Run until no event is left (LOOP_DONE), or at least pause_at threads finished or another
 * max_events events were handled (LOOP_PAUSED). */
int loop_run(struct loop *L, int64_t pause_at, int64_t max_events)
{
    const struct plan *p = &L->p;
    if (setjmp(L->nomem))
        return LOOP_NOMEM;
    if (!L->started) {
        L->started = 1;
        start(L);
    }
    for (int64_t handled = 0;; handled++) {
        if (L->finished >= pause_at || handled == max_events)
            return LOOP_PAUSED;
        if (L->events.n == 0)
            return LOOP_DONE;
        struct entry e = heap_pop(&L->events);
        L->now = e.major;
        if (e.item < p->nthreads)
            burst_ends(L, (int32_t)e.item);
        else if (e.item >= p->nthreads + 2 * p->nmsg)
            close_global(L, e.item - p->nthreads - 2 * p->nmsg);
        else if ((e.item - p->nthreads) % 2)
            arrive(L, (e.item - p->nthreads) / 2);
        else
            network_release(L->net, (e.item - p->nthreads) / 2, retry, L);
        reload(L);
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
