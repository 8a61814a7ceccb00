/* throttle-check: the library's configuration rules without MPI, for `contend throttle` to check a
 * configuration before it launches anything (one owner of the rules: config.c).
 *
 * Reads the CONTEND_THROTTLE_* environment like the library's MPI_Init. Valid: the settings in force as
 * one JSON line on stdout, exit 0. Invalid: the library's one-line reason on stderr, exit 2. */
#include <stdio.h>

#include "config.h"

int main(void)
{
    throttle_config c;
    char why[1024];
    if (config_load(&c, why, sizeof why) != 0) {
        fprintf(stderr, "%s\n", why);
        return 2;
    }
    printf("{\"policy\":\"%s\",\"tokens\":%d,\"size_per_token\":%lld,\"stall_ms\":%lld,\"gap_ns\":%lld,"
           "\"ranks_per_node\":%lld,\"servers\":%d,\"memory_throttle\":%lld,\"reserve_core\":%d}\n",
           policy_name(c.policy), (int)c.tokens, (long long)c.size_per_token,
           c.policy == POLICY_TOKEN || c.policy == POLICY_PROXY || c.policy == POLICY_ADAPTIVE ? (long long)c.stall_ms : 0LL,
           (long long)c.gap_ns, (long long)c.ranks_per_node, (int)c.servers, (long long)c.memory_throttle,
           c.reserve_core);
    return 0;
}
