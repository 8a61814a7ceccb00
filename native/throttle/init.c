/* MPI_Init, MPI_Init_thread, MPI_Finalize: read the configuration, find the node and the job, attach
 * the node's pool; refuse to start, on every rank, when anything is wrong. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "admit.h"
#include "clock.h"
#include "held.h"
#include "nodes.h"
#include "proxy.h"
#include "reserve.h"
#include "stats.h"
#include "target_rate.h"
#include "throttle.h"

throttle_state throttle = {.phase = PHASE_BEFORE_INIT,
                           .stats = {.min_gap_ns = -1, .target_min_gap_ns = -1,
                                     .target_min_slack_ns = INT64_MIN, .reserved_cpu = -1}};

void refuse_before_init(void)
{
    fprintf(stderr, "contend-throttle: error: an MPI call to throttle came before MPI_Init "
            "(only the world model, MPI_Init or MPI_Init_thread, is supported)\n");
    exit(2);
}

/* Collective: if any rank failed, the lowest such rank says why, and every rank stops (exit 2). */
static void stop_if_any_failed(int failed, const char *why, int created)
{
    int size, first, mine;
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    mine = failed ? throttle.rank : size;
    PMPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (first == size)
        return;
    if (throttle.rank == first)
        fprintf(stderr, "contend-throttle: error: %s; not starting\n", why);
    if (created)
        segment_unlink(throttle.job, throttle.node);
    PMPI_Finalize();
    exit(2);
}

/* The job's name, the same on every rank: given, or rank 0's pid and clock (unique on its host). */
static void agree_on_job(void)
{
    if (throttle.rank == 0) {
        if (throttle.cfg.job[0])
            snprintf(throttle.job, sizeof throttle.job, "%s", throttle.cfg.job);
        else
            snprintf(throttle.job, sizeof throttle.job, "%ld-%llx", (long)getpid(),
                     (unsigned long long)now_ns());
    }
    PMPI_Bcast(throttle.job, sizeof throttle.job, MPI_CHAR, 0, MPI_COMM_WORLD);
}

static int name_node(char *why, size_t len)
{
    const throttle_config *c = &throttle.cfg;
    char host[128];
    if (c->node[0]) {
        snprintf(throttle.node, sizeof throttle.node, "%s", c->node);
        return 0;
    }
    if (gethostname(host, sizeof host) != 0) {
        snprintf(why, len, "cannot learn the host name; set CONTEND_THROTTLE_NODE");
        return -1;
    }
    host[sizeof host - 1] = '\0';
    if (c->ranks_per_node)
        snprintf(throttle.node, sizeof throttle.node, "%s#%lld", host,
                 (long long)(throttle.rank / c->ranks_per_node));
    else
        snprintf(throttle.node, sizeof throttle.node, "%s", host);
    return 0;
}

static void start(void)
{
    char why[1024] = "";
    PMPI_Comm_rank(MPI_COMM_WORLD, &throttle.rank);
    int failed = config_load(&throttle.cfg, why, sizeof why) != 0;
    stop_if_any_failed(failed, why, 0);
    agree_on_job();
    failed = name_node(why, sizeof why) != 0;
    int created = 0, proxy = throttle.cfg.policy == POLICY_PROXY;
    size_t extra = proxy ? proxy_prepare() : 0; /* collective: on every rank, even one that failed */
    if (!failed && (throttle.cfg.policy == POLICY_TOKEN || throttle.cfg.policy == POLICY_ADAPTIVE || proxy)) {
        throttle.seg = segment_open(throttle.job, throttle.node, throttle.cfg.tokens, extra, &created,
                                    why, sizeof why);
        failed = throttle.seg == NULL;
    }
    stop_if_any_failed(failed, why, created); /* also: every rank has attached when it returns */
    if (proxy)
        proxy_attach();
    if (created)
        segment_unlink(throttle.job, throttle.node);
    if (throttle.cfg.policy == POLICY_ADAPTIVE) { /* every rank has attached: one token per rank */
        if (created)
            adaptive_init(&throttle.seg->adaptive, &throttle.seg->pool,
                          atomic_load(&throttle.seg->attached));
        PMPI_Barrier(MPI_COMM_WORLD);
    }
    stop_if_any_failed(nodes_start(why, sizeof why) != 0, why, 0); /* traffic within a node is left alone */
    stop_if_any_failed(target_rate_start(why, sizeof why) != 0, why, 0); /* the NiMC mitigations */
    stop_if_any_failed(reserve_core_start(why, sizeof why) != 0, why, 0);
    throttle.phase = throttle.cfg.policy == POLICY_NONE ? PHASE_OFF : PHASE_ON;
}

int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS)
        start();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS)
        start();
    return rc;
}

int MPI_Finalize(void)
{
    if (proxying())
        proxy_finish();
    if (throttle.seg) /* operations the program never completed: their tokens go back */
        give_back(held_release_all());
    stats_report();
    target_rate_stop();
    nodes_stop();
    throttle.phase = PHASE_FINISHED;
    int rc = PMPI_Finalize();
    if (throttle.seg)
        segment_close(throttle.seg);
    throttle.seg = NULL;
    return rc;
}
