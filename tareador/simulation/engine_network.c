/*
 * Links and buses, as Dimemas 5.5.0 hands them to a transfer (Simulator/model/links.c
 * LINKS_get_mem_links, LINKS_get_network_links, roba_out_link, LINKS_free_*; communic.c
 * really_send_memory_message, really_send_internal_network, COMMUNIC_*_resources_COM_TIMER_OUT):
 *
 *   - a transfer takes the sender's out link, then the receiver's in link, then a bus; what it
 *     cannot get it waits for in that link's or bus's FIFO queue, keeping what it holds;
 *   - a port with exactly one of its link counts 0 is half-duplex: max(in, out) links that
 *     carry one message at a time in either direction (taking one direction takes the other);
 *     then, within a node, a message to a lower-numbered task takes the in link first;
 *   - between nodes a message may borrow ("steal") an out link from a transfer that holds one
 *     but waits for an in link, when it can get its own in link now, or in a half-duplex
 *     destination node the robbed transfer's pair of links; the robbed one goes to the head
 *     of the out-link queue;
 *   - when a transfer ends it frees its out link, its in link, then its bus; a freed link of a
 *     half-duplex port first retries the first message waiting for the other direction, then
 *     the first waiting for the same direction; a freed bus retries its first waiter;
 *   - a global operation takes every bus of the network, those free and, waiting in the bus
 *     queue, those freed later, until it holds them all (communic.c global_op_get_all_buses);
 *   - under Dimemas' RR and BOOST communication policies (shared) a transfer takes a bus
 *     without waiting, however many are in use, and moves the slower (network_time).
 *
 * Queues and the list of out links held per node (in the order they were taken, which decides
 * whose link is borrowed) are lists linked through per-message arrays: a message waits in at
 * most one queue and holds at most one out link; global operations wait in bus queues as items
 * nmsg + o.
 */

#include "engine_network.h"

#include "engine_alloc.h"

enum { HOLD_OUT = 1, HOLD_IN = 2, HOLD_BUS = 4 };

struct list {
    int32_t head, tail;
};

struct network {
    struct network_plan p;
    int64_t nmsg;
    uint8_t *held;                /* per message: HOLD_* */
    int32_t *prev, *next;         /* per message, then per operation: its place in the queue it waits in */
    int32_t *oprev, *onext;       /* per message: its place in its source node's list of out links */
    int64_t *out_used, *in_used;  /* per port */
    struct list *out_wait, *in_wait, *owners; /* per port */
    int64_t *bus_used;            /* per bus */
    struct list *bus_wait;
    int64_t *op_buses;            /* per global operation: the buses it holds while it waits */
};

static void push(int32_t *prev, int32_t *next, struct list *l, int32_t x, int front)
{
    if (l->head < 0) {
        prev[x] = next[x] = -1;
        l->head = l->tail = x;
    } else if (front) {
        prev[x] = -1;
        next[x] = l->head;
        prev[l->head] = x;
        l->head = x;
    } else {
        next[x] = -1;
        prev[x] = l->tail;
        next[l->tail] = x;
        l->tail = x;
    }
}

static void unlink_from(int32_t *prev, int32_t *next, struct list *l, int32_t x)
{
    if (prev[x] >= 0)
        next[prev[x]] = next[x];
    else
        l->head = next[x];
    if (next[x] >= 0)
        prev[next[x]] = prev[x];
    else
        l->tail = prev[x];
}

/* x takes y's place in l. */
static void replace(int32_t *prev, int32_t *next, struct list *l, int32_t y, int32_t x)
{
    prev[x] = prev[y];
    next[x] = next[y];
    if (prev[y] >= 0)
        next[prev[y]] = x;
    else
        l->head = x;
    if (next[y] >= 0)
        prev[next[y]] = x;
    else
        l->tail = x;
}

static int32_t pop(int32_t *prev, int32_t *next, struct list *l)
{
    int32_t x = l->head;
    if (x >= 0)
        unlink_from(prev, next, l, x);
    return x;
}

/* A link of port e in one direction (out or in), with its half-duplex pair; 0 if none is free. */
static int take(struct network *net, int32_t e, int out)
{
    int64_t *used = out ? net->out_used : net->in_used, *other = out ? net->in_used : net->out_used;
    if (used[e] >= (out ? net->p.out_cap[e] : net->p.in_cap[e]))
        return 0;
    used[e]++;
    if (net->p.hd[e])
        other[e]++;
    return 1;
}

static void wait_for(struct network *net, struct list *l, int64_t x, int front)
{
    push(net->prev, net->next, l, (int32_t)x, front);
}

/* Within a node (LINKS_get_mem_links): out link then in link, or in first (see above). */
static int mem_links(struct network *net, int64_t m)
{
    const struct network_plan *p = &net->p;
    int first = p->flags[m] & NET_DEST_FIRST ? HOLD_IN : HOLD_OUT;
    for (int k = 0; k < 2; k++) {
        int side = k ? HOLD_IN + HOLD_OUT - first : first;
        int32_t e = side == HOLD_OUT ? p->src[m] : p->dst[m];
        if (e < 0 || net->held[m] & side)
            continue;
        if (!take(net, e, side == HOLD_OUT)) {
            wait_for(net, side == HOLD_OUT ? &net->out_wait[e] : &net->in_wait[e], m, 0);
            return 0;
        }
        net->held[m] |= side;
    }
    return 1;
}

/* roba_out_link's victim at node port e: the first transfer, in the order they took them, that
 * holds one of e's out links and waits for an in link; -1: none. */
static int32_t victim(const struct network *net, int32_t e)
{
    for (int32_t c = net->owners[e].head; c >= 0; c = net->onext[c])
        if (!(net->held[c] & HOLD_IN))
            return c;
    return -1;
}

/* c loses its out link at e (and its half-duplex pair) to m and waits first for one again;
 * m holds it as its out link, or when e is m's destination, as its in link. */
static void rob(struct network *net, int32_t e, int64_t m, int32_t c)
{
    const struct network_plan *p = &net->p;
    if (e == p->src[m]) {
        replace(net->oprev, net->onext, &net->owners[e], c, (int32_t)m);
        net->held[m] |= HOLD_OUT;
    } else {
        unlink_from(net->oprev, net->onext, &net->owners[e], c);
        net->held[m] |= HOLD_IN;
    }
    net->held[c] &= ~HOLD_OUT;
    unlink_from(net->prev, net->next, &net->in_wait[p->dst[c]], c);
    wait_for(net, &net->out_wait[e], c, 1);
}

/* Between nodes (LINKS_get_network_links, the link-lending protocol Dimemas builds by default). */
static int net_links(struct network *net, int64_t m)
{
    const struct network_plan *p = &net->p;
    int32_t src = p->src[m], dst = p->dst[m], out_victim = -1;
    if (src >= 0 && !(net->held[m] & HOLD_OUT)) {
        if (take(net, src, 1)) {
            net->held[m] |= HOLD_OUT;
            push(net->oprev, net->onext, &net->owners[src], (int32_t)m, 0);
        } else if ((out_victim = victim(net, src)) < 0) {
            wait_for(net, &net->out_wait[src], m, 0);
            return 0;
        }
    }
    if (dst >= 0 && !(net->held[m] & HOLD_IN)) {
        if (take(net, dst, 0)) {
            if (out_victim >= 0)
                rob(net, src, m, out_victim);
            net->held[m] |= HOLD_IN;
        } else if (!p->hd[dst] || victim(net, dst) < 0) {
            if (out_victim < 0)
                wait_for(net, &net->in_wait[dst], m, 0);
            else
                wait_for(net, &net->out_wait[src], m, 0);
            return 0;
        } else {
            if (out_victim >= 0)
                rob(net, src, m, out_victim);
            rob(net, dst, m, victim(net, dst));
        }
    }
    return 1;
}

int network_acquire(struct network *net, int64_t m)
{
    const struct network_plan *p = &net->p;
    if (!(p->flags[m] & NET_STEALS ? net_links(net, m) : mem_links(net, m)))
        return 0;
    int32_t b = p->bus[m];
    if (b < 0 || net->held[m] & HOLD_BUS)
        return 1;
    if (net->bus_used[b] >= p->bus_cap[b] && !p->shared) {
        wait_for(net, &net->bus_wait[b], m, 0);
        return 0;
    }
    net->bus_used[b]++;
    net->held[m] |= HOLD_BUS;
    return 1;
}

double network_time(const struct network *net, int64_t m, double full)
{
    const struct network_plan *p = &net->p;
    int32_t b = p->bus[m];
    if (!p->shared || b < 0 || net->bus_used[b] <= p->bus_cap[b])
        return full;
    double ratio = (double)p->bus_cap[b] / (double)net->bus_used[b];
    return p->ns_per_byte[m] / ratio * p->size[m];
}

static void retry_first(struct network *net, struct list *l, void (*retry)(void *, int64_t), void *ctx)
{
    int32_t x = pop(net->prev, net->next, l);
    if (x >= 0)
        retry(ctx, x);
}

/* LINKS_free_mem_link / LINKS_free_network_link of one side of m. */
static void free_link(struct network *net, int64_t m, int out, void (*retry)(void *, int64_t), void *ctx)
{
    const struct network_plan *p = &net->p;
    int32_t e = out ? p->src[m] : p->dst[m];
    struct list *same = out ? &net->out_wait[e] : &net->in_wait[e], *other = out ? &net->in_wait[e] : &net->out_wait[e];
    if (out && p->flags[m] & NET_STEALS)
        unlink_from(net->oprev, net->onext, &net->owners[e], (int32_t)m);
    (out ? net->out_used : net->in_used)[e]--;
    if (p->hd[e]) {
        (out ? net->in_used : net->out_used)[e]--;
        retry_first(net, other, retry, ctx);
    }
    retry_first(net, same, retry, ctx);
}

/* The first waiter of bus pool b gets what is free: a transfer tries again, a global operation
 * adds the free buses to those it holds and goes once it holds them all. */
static void serve_bus(struct network *net, int32_t b, void (*retry)(void *, int64_t), void *ctx)
{
    int32_t x = net->bus_wait[b].head;
    if (x < net->nmsg) {
        retry_first(net, &net->bus_wait[b], retry, ctx);
        return;
    }
    net->op_buses[x - net->nmsg] += net->p.bus_cap[b] - net->bus_used[b];
    net->bus_used[b] = net->p.bus_cap[b];
    if (net->op_buses[x - net->nmsg] == net->p.bus_cap[b])
        retry_first(net, &net->bus_wait[b], retry, ctx);
}

void network_release(struct network *net, int64_t m, void (*retry)(void *, int64_t), void *ctx)
{
    uint8_t held = net->held[m];
    net->held[m] = 0;
    if (held & HOLD_OUT)
        free_link(net, m, 1, retry, ctx);
    if (held & HOLD_IN)
        free_link(net, m, 0, retry, ctx);
    if (held & HOLD_BUS) {
        net->bus_used[net->p.bus[m]]--;
        serve_bus(net, net->p.bus[m], retry, ctx);
    }
}

int network_take_all_buses(struct network *net, int32_t b, int64_t o)
{
    int64_t free = net->p.bus_cap[b] - net->bus_used[b];
    net->bus_used[b] = net->p.bus_cap[b];
    if (free == net->p.bus_cap[b])
        return 1;
    net->op_buses[o] = free;
    wait_for(net, &net->bus_wait[b], net->nmsg + o, 0);
    return 0;
}

void network_free_all_buses(struct network *net, int32_t b, int64_t o, void (*retry)(void *, int64_t), void *ctx)
{
    net->bus_used[b] = 0;
    net->op_buses[o] = 0;
    while (net->bus_wait[b].head >= 0 && net->bus_used[b] < net->p.bus_cap[b])
        serve_bus(net, b, retry, ctx);
}

void network_free(struct network *net)
{
    if (!net)
        return;
    void *arrays[] = {net->held,    net->prev,     net->next,    net->oprev,  net->onext,    net->out_used,
                      net->in_used, net->out_wait, net->in_wait, net->owners, net->bus_used, net->bus_wait,
                      net->op_buses};
    free_all(arrays, sizeof arrays / sizeof *arrays);
    free(net);
}

static struct list *lists(int64_t n)
{
    struct list *l = zeros(n, sizeof *l);
    for (int64_t k = 0; l && k < n; k++)
        l[k].head = l[k].tail = -1;
    return l;
}

struct network *network_new(const struct network_plan *np, int64_t nmsg, int64_t nops)
{
    struct network *net = calloc(1, sizeof *net);
    if (!net)
        return NULL;
    net->p = *np;
    net->nmsg = nmsg;
    net->held = zeros(nmsg, sizeof *net->held);
    net->prev = zeros(nmsg + nops, sizeof *net->prev);
    net->next = zeros(nmsg + nops, sizeof *net->next);
    net->oprev = zeros(nmsg, sizeof *net->oprev);
    net->onext = zeros(nmsg, sizeof *net->onext);
    net->out_used = zeros(np->nports, sizeof *net->out_used);
    net->in_used = zeros(np->nports, sizeof *net->in_used);
    net->out_wait = lists(np->nports);
    net->in_wait = lists(np->nports);
    net->owners = lists(np->nports);
    net->bus_used = zeros(np->nbuses, sizeof *net->bus_used);
    net->bus_wait = lists(np->nbuses);
    net->op_buses = zeros(nops, sizeof *net->op_buses);
    if (!(net->held && net->prev && net->next && net->oprev && net->onext && net->out_used && net->in_used &&
          net->out_wait && net->in_wait && net->owners && net->bus_used && net->bus_wait && net->op_buses)) {
        network_free(net);
        return NULL;
    }
    return net;
}
