/* The throttle's configuration: environment variables, optionally over a file (docs/formats.md).
 *
 *   CONTEND_THROTTLE_CONFIG          a file of `key = value` lines (policy, tokens, size_per_token,
 *                                    gap_ns, stall_ms, servers, memory_throttle, reserve_core); each
 *                                    variable below overrides its key
 *   CONTEND_THROTTLE_POLICY          token | rate | proxy | adaptive | none (required, here or in the file)
 *   CONTEND_THROTTLE_SERVERS         proxy: server slots per node, 1..64 (required; proxy.h)
 *   CONTEND_THROTTLE_TOKENS          token: tokens in each node's pool, 1..1000000 (required);
 *                                    proxy: tokens behind the servers (optional);
 *                                    adaptive: the most its limit may reach (default 1000000)
 *   CONTEND_THROTTLE_SIZE_PER_TOKEN  token: bytes per token (size-proportional); 0 or unset: one
 *                                    token per message
 *   CONTEND_THROTTLE_STALL_MS        token, adaptive: how long the head of the line waits while no token comes
 *                                    back before it takes its tokens anyway (default 100)
 *   CONTEND_THROTTLE_GAP_NS          rate: least time between two injections of a task (required)
 *   CONTEND_THROTTLE_MEMORY_THROTTLE any policy: bytes per second of one-sided traffic into each node
 *                                    (NiMC mitigation a, target_rate.h); unset: no cap
 *   CONTEND_THROTTLE_RESERVE_CORE    any policy: 1 pins the ranks away from one core of the host,
 *                                    left for communication progress (NiMC mitigation b); 0 or unset: no
 *   CONTEND_THROTTLE_NODE            the node's name (default: the host name)
 *   CONTEND_THROTTLE_RANKS_PER_NODE  node emulation: ranks r with the same r / K share a node
 *   CONTEND_THROTTLE_JOB             the job's name for the shared memory (default: made by rank 0)
 *   CONTEND_THROTTLE_STATS           a file each rank appends one JSON line of counters to at the end
 *
 * Anything wrong (unknown policy, zero tokens, a malformed number, a setting the policy does not use,
 * an unreadable file) is an error naming the variable or file:line: the library never runs with a
 * configuration it did not understand. */
#ifndef CONTEND_THROTTLE_CONFIG_H
#define CONTEND_THROTTLE_CONFIG_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { POLICY_NONE, POLICY_TOKEN, POLICY_RATE, POLICY_PROXY, POLICY_ADAPTIVE } policy_kind;

typedef struct {
    policy_kind policy;
    int32_t tokens;          /* proxy: 0 when no tokens stand behind the servers */
    int32_t servers;         /* proxy */
    int64_t size_per_token;  /* 0: one token per message */
    int64_t stall_ms;
    int64_t gap_ns;
    int64_t memory_throttle; /* bytes/s into each node (0: no cap) */
    int reserve_core;
    char node[200];          /* "" : the host name */
    int64_t ranks_per_node;  /* 0: no emulation */
    char job[65];            /* "" : made by rank 0 */
    char stats[PATH_MAX];    /* "" : none */
} throttle_config;

/* Read the configuration from the environment (and the file it names). 0 on success; otherwise -1
 * and one line in why. */
int config_load(throttle_config *c, char *why, size_t why_len);

const char *policy_name(policy_kind p);

#endif
