/*
 * The links and buses a message's transfer holds in tareador replay (engine_network.c), apart
 * from the event loop (engine_loop.c) that asks for them.
 */
#ifndef ENGINE_NETWORK_H
#define ENGINE_NETWORK_H

#include <stdint.h>

enum { NET_DEST_FIRST = 1, NET_STEALS = 2 }; /* flags per message, as in dimemas_engine.py */

/* Filled by dimemas_engine.py (C-contiguous numpy arrays it keeps alive). A "port" is one side's links:
 * a task's within its node, or a node's to the network; half-duplex ports (hd) share one set of
 * links, of out_cap == in_cap, between both directions. */
struct network_plan {
    int64_t nports, nbuses;
    int64_t shared;              /* Dimemas' RR/BOOST communication policy: buses never make a message wait,
                                    they share their bandwidth (network_time) */
    const int32_t *src, *dst;    /* per message: the port whose out link / in link it takes, -1 = none */
    const int32_t *bus;          /* per message: its bus pool, -1 = none */
    const uint8_t *flags;        /* per message: NET_DEST_FIRST (in link before out link),
                                    NET_STEALS (links between nodes: Dimemas lends them) */
    const int64_t *out_cap, *in_cap, *bus_cap;
    const uint8_t *hd;           /* per port */
    const double *ns_per_byte, *size; /* per message, for network_time */
};

struct network;

/* NULL when memory is short. nops: global operations, which wait in bus queues as nmsg + o. */
struct network *network_new(const struct network_plan *np, int64_t nmsg, int64_t nops);
void network_free(struct network *net);

/* Take what message m's transfer still lacks; 1 when it holds everything, 0 when it queued for
 * a link or bus (network_release of another message will retry it). */
int network_acquire(struct network *net, int64_t m);

/* How long m's transfer takes once acquired: full (the links and bus are held that long), or
 * with shared buses, more messages than buses under way: its bytes at bandwidth x buses /
 * messages (communic.c recompute_*_bandwidth), the ratio fixed when it starts. */
double network_time(const struct network *net, int64_t m, double full);

/* m's transfer is over: free what it holds; each freed link or bus retries the first message
 * waiting for it, through retry(ctx, waiting message), at once and in Dimemas' order; a global
 * operation at the head of a bus queue takes what was freed and is retried (as nmsg + o) once
 * it holds every bus. */
void network_release(struct network *net, int64_t m, void (*retry)(void *, int64_t), void *ctx);

/* Global operation o takes every bus of pool b (global_op_get_all_buses): 1 when it holds them
 * all now; else it holds the free ones and waits at the tail of b's queue for the others. */
int network_take_all_buses(struct network *net, int32_t b, int64_t o);

/* o frees every bus of b; they go to b's waiters in order. */
void network_free_all_buses(struct network *net, int32_t b, int64_t o, void (*retry)(void *, int64_t), void *ctx);

#endif
