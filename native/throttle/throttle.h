/* The state every part of the library shares: what the configuration decided, the node's pool, and
 * this task's counters. One instance per process (the library serves one thread in MPI at a time). */
#ifndef CONTEND_THROTTLE_H
#define CONTEND_THROTTLE_H

#include <mpi.h>
#include <stdint.h>

#include "config.h"
#include "segment.h"

typedef enum {
    PHASE_BEFORE_INIT, /* no MPI_Init seen: a throttled call now is refused (admit.c) */
    PHASE_ON,          /* token, rate, proxy or adaptive policy in force */
    PHASE_OFF,         /* policy none: every call passes straight through */
    PHASE_FINISHED,    /* after MPI_Finalize */
} throttle_phase;

/* This task's counters, written as one JSON line at MPI_Finalize (CONTEND_THROTTLE_STATS). */
typedef struct {
    int64_t ops;            /* throttled operations injected */
    int64_t ops_local;      /* sends and one-sided ops to a task of this node, left alone (nodes.h) */
    int64_t ops_one_sided;
    int64_t ops_large_count; /* of those, through the MPI 4 `_c` entry points (mpi4py on MPICH) */
    int64_t ops_blocking;   /* of those, blocking sends (blocking_send.c) */
    int64_t ops_persistent; /* of those, starts of persistent sends (persistent.c) */
    int64_t collectives;    /* collective calls done by the throttled implementations (collectives.c) */
    int64_t tokens;         /* tokens taken */
    int64_t waits;          /* injections that had to wait (token: joined the line; rate: gap) */
    int64_t wait_ns;
    int64_t escapes;        /* token waits ended by the stall escape */
    int64_t polls;          /* progress polls while waiting */
    int32_t max_in_use;     /* the most tokens in use on the node, seen right after a grant */
    uint32_t max_ahead;     /* the most tasks in line before this one when it joined */
    uint32_t max_served_meanwhile; /* the most grants to others while this task waited in line */
    int64_t min_gap_ns;     /* rate: the shortest time between two injections (-1: fewer than 2) */
    /* memory_throttle (target_rate.h): one-sided ops and bytes paced into other nodes, waits, and of
     * each paced start, the least time since the previous start into the same node from this node
     * (-1: none) and the least of that time minus the previous op's bytes / share (INT64_MIN: none) */
    int64_t target_ops, target_bytes, target_waits, target_wait_ns;
    int64_t target_min_gap_ns, target_min_slack_ns;
    int reserved_cpu;       /* reserve_core (reserve.h): the CPU left for communication (-1: none) */
} throttle_stats;

typedef struct {
    throttle_phase phase;
    throttle_config cfg;
    int rank;
    char node[SEGMENT_NODE_MAX];
    char job[SEGMENT_JOB_MAX];
    segment *seg;            /* token, proxy and adaptive policies: the node's pool (and the proxy's queues) */
    int64_t last_injection_ns; /* rate policy */
    throttle_stats stats;
    throttle_stats harness;  /* what was counted while the program paused counting (MPI_Pcontrol, stats.c) */
    int paused;
} throttle_state;

extern throttle_state throttle;

/* A throttled call before MPI_Init (e.g. under MPI sessions): a message and exit 2 (init.c). */
void refuse_before_init(void);

/* Whether calls are throttled now (PHASE_ON). */
static inline int throttling(void)
{
    if (throttle.phase == PHASE_BEFORE_INIT)
        refuse_before_init();
    return throttle.phase == PHASE_ON;
}

/* Whether operations hold tokens until completion (the token policy, or tokens behind the proxy). */
static inline int holding_tokens(void)
{
    return throttle.phase == PHASE_ON &&
           (throttle.cfg.policy == POLICY_TOKEN || throttle.cfg.policy == POLICY_ADAPTIVE ||
            (throttle.cfg.policy == POLICY_PROXY && throttle.cfg.tokens > 0));
}

/* Whether the proxy policy is in force (proxy.h). */
static inline int proxying(void)
{
    return throttle.phase == PHASE_ON && throttle.cfg.policy == POLICY_PROXY;
}

#endif
