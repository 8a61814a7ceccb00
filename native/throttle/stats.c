/* Write the counters (see stats.h and throttle.h for their meaning). */
#include "stats.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "proxy.h"
#include "reserve.h"
#include "target_rate.h"
#include "throttle.h"

/* text as the inside of a JSON string: quote and backslash escaped, control characters and bytes
 * beyond ASCII (a host name need not be UTF-8) as \u00XX. */
static const char *json_text(const char *text, char *out, size_t len)
{
    size_t n = 0;
    for (const unsigned char *c = (const unsigned char *)text; *c && n + 7 < len; c++) {
        if (*c == '"' || *c == '\\')
            n += (size_t)snprintf(out + n, len - n, "\\%c", *c);
        else if (*c < 0x20 || *c >= 0x7f)
            n += (size_t)snprintf(out + n, len - n, "\\u%04x", *c);
        else
            out[n++] = (char)*c;
    }
    out[n] = '\0';
    return out;
}

static throttle_stats at_pause; /* the counters when counting paused */

void stats_pause(void)
{
    if (throttle.paused)
        return;
    at_pause = throttle.stats;
    throttle.paused = 1;
}

/* What was counted since the pause goes to throttle.harness; the counters are as they were. */
void stats_resume(void)
{
    if (!throttle.paused)
        return;
    throttle_stats *s = &throttle.stats, *h = &throttle.harness;
    const throttle_stats *p = &at_pause;
#define MOVE(f) (h->f += s->f - p->f, s->f = p->f)
#define HIGHEST(f) (h->f = s->f > h->f ? s->f : h->f, s->f = p->f)
    MOVE(ops), MOVE(ops_local), MOVE(ops_one_sided), MOVE(ops_large_count), MOVE(ops_blocking);
    MOVE(ops_persistent), MOVE(collectives), MOVE(tokens), MOVE(waits), MOVE(wait_ns), MOVE(escapes);
    MOVE(polls), MOVE(target_ops), MOVE(target_bytes), MOVE(target_waits), MOVE(target_wait_ns);
    HIGHEST(max_in_use), HIGHEST(max_ahead), HIGHEST(max_served_meanwhile);
#undef MOVE
#undef HIGHEST
    s->min_gap_ns = p->min_gap_ns; /* a least gap seen while paused is the harness's */
    s->target_min_gap_ns = p->target_min_gap_ns;
    s->target_min_slack_ns = p->target_min_slack_ns;
    throttle.paused = 0;
}

int MPI_Pcontrol(const int level, ...)
{
    if (level == 0)
        stats_pause();
    else
        stats_resume();
    return PMPI_Pcontrol(level);
}

/* The NiMC mitigations' settings and counters (target_rate.h, reserve.h), as more fields. */
static const char *nimc_fields(char *out, size_t len)
{
    const throttle_stats *s = &throttle.stats;
    char cpus[512], slack[24] = "null";
    reserve_cpu_list(cpus, sizeof cpus);
    if (s->target_min_slack_ns != INT64_MIN)
        snprintf(slack, sizeof slack, "%lld", (long long)s->target_min_slack_ns);
    snprintf(out, len,
             ",\"memory_throttle\":%lld,\"target_share_Bps\":%lld,\"target_ops\":%lld,"
             "\"target_bytes\":%lld,\"target_waits\":%lld,\"target_wait_ns\":%lld,"
             "\"target_min_gap_ns\":%lld,\"target_min_slack_ns\":%s,\"reserved_cpu\":%d,"
             "\"cpus\":\"%s\"",
             (long long)throttle.cfg.memory_throttle, (long long)target_rate_share(),
             (long long)s->target_ops, (long long)s->target_bytes, (long long)s->target_waits,
             (long long)s->target_wait_ns, (long long)s->target_min_gap_ns, slack, s->reserved_cpu, cpus);
    return out;
}

/* The counters of the paused spans, as one more field. */
static const char *harness_field(char *out, size_t len)
{
    const throttle_stats *h = &throttle.harness;
    snprintf(out, len,
             ",\"harness\":{\"ops\":%lld,\"ops_local\":%lld,\"ops_blocking\":%lld,\"collectives\":%lld,"
             "\"tokens\":%lld,\"waits\":%lld,\"wait_ns\":%lld,\"escapes\":%lld,\"max_in_use\":%d}",
             (long long)h->ops, (long long)h->ops_local, (long long)h->ops_blocking,
             (long long)h->collectives, (long long)h->tokens, (long long)h->waits, (long long)h->wait_ns,
             (long long)h->escapes, (int)h->max_in_use);
    return out;
}

static void write_line(void)
{
    const throttle_stats *s = &throttle.stats;
    const throttle_config *c = &throttle.cfg;
    char node[6 * sizeof throttle.node + 1], job[6 * sizeof throttle.job + 1];
    char proxy[4096], nimc[1024], harness[512];
    proxy_stats_json(proxy, sizeof proxy);
    char line[sizeof node + sizeof job + sizeof proxy + sizeof nimc + sizeof harness + 1200]; /* the rest: keys, 28 numbers */
    int adaptive = c->policy == POLICY_ADAPTIVE && throttle.seg;
    const adaptive_state *a = throttle.seg ? &throttle.seg->adaptive : NULL;
    int pool_limit = throttle.seg ? (int)atomic_load(&throttle.seg->pool.limit) : 0;
    int world_size = 0;
    PMPI_Comm_size(MPI_COMM_WORLD, &world_size); /* so a reader knows how many lines to expect */
    int n = snprintf(line, sizeof line,
        "{\"rank\":%d,\"world_size\":%d,\"node\":\"%s\",\"job\":\"%s\",\"policy\":\"%s\","
        "\"ranks_on_node\":%d,"
        "\"pool_tokens\":%d,\"size_per_token\":%lld,\"gap_ns\":%lld,\"stall_ms\":%lld,"
        "\"ops\":%lld,\"ops_local\":%lld,\"ops_one_sided\":%lld,\"ops_large_count\":%lld,\"tokens\":%lld,"
        "\"ops_blocking\":%lld,\"ops_persistent\":%lld,\"collectives\":%lld,"
        "\"waits\":%lld,\"wait_ns\":%lld,"
        "\"escapes\":%lld,\"polls\":%lld,\"max_in_use\":%d,\"max_ahead\":%u,"
        "\"max_served_meanwhile\":%u,\"min_gap_ns\":%lld,"
        "\"limit_min\":%d,\"limit_max\":%d,\"limit_final\":%d,\"limit_adjustments\":%lld%s%s%s}\n",
        throttle.rank, world_size, json_text(throttle.node, node, sizeof node),
        json_text(throttle.job, job, sizeof job), policy_name(c->policy),
        throttle.seg ? (int)atomic_load(&throttle.seg->attached) : 0,
        throttle.seg ? (int)throttle.seg->pool.capacity : 0, (long long)c->size_per_token,
        (long long)c->gap_ns, throttle.seg ? (long long)c->stall_ms : 0LL,
        (long long)s->ops, (long long)s->ops_local, (long long)s->ops_one_sided, (long long)s->ops_large_count,
        (long long)s->tokens, (long long)s->ops_blocking, (long long)s->ops_persistent,
        (long long)s->collectives, (long long)s->waits,
        (long long)s->wait_ns, (long long)s->escapes, (long long)s->polls, (int)s->max_in_use,
        s->max_ahead, s->max_served_meanwhile, (long long)s->min_gap_ns,
        /* the node's limit: the adaptive controller's record; a fixed pool's capacity otherwise */
        adaptive ? a->min_limit : pool_limit, adaptive ? a->max_limit : pool_limit, pool_limit,
        adaptive ? (long long)a->adjustments : 0LL, nimc_fields(nimc, sizeof nimc),
        harness_field(harness, sizeof harness), proxy);
    int fd = open(c->stats, O_WRONLY | O_APPEND | O_CREAT, 0644);
    /* One write per line: appends from the ranks do not interleave. */
    if (fd < 0 || write(fd, line, (size_t)n) != n)
        fprintf(stderr, "contend-throttle: rank %d: cannot write CONTEND_THROTTLE_STATS=%s: %s\n",
                throttle.rank, c->stats, strerror(errno));
    if (fd >= 0)
        close(fd);
}

void stats_report(void)
{
    stats_resume(); /* a span still paused at the end is the harness's too */
    const throttle_stats *s = &throttle.stats, *h = &throttle.harness;
    if (throttle.cfg.stats[0])
        write_line();
    if (s->escapes + h->escapes > 0)
        fprintf(stderr, "contend-throttle: rank %d (node %s): %lld of %lld waits for tokens ended by "
                "the stall escape: no token came back for %lld ms (sends waiting for receives not "
                "yet posted, or for a late receiver), so the node had more than %d tokens in use; "
                "use more tokens, a longer CONTEND_THROTTLE_STALL_MS, or post receives first\n",
                throttle.rank, throttle.node, (long long)(s->escapes + h->escapes),
                (long long)(s->waits + h->waits),
                (long long)throttle.cfg.stall_ms, (int)atomic_load(&throttle.seg->pool.limit));
}
