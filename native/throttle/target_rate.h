/* NiMC mitigation (a), bandwidth throttling, for real: the one-sided traffic into each node bounded to
 * memory_throttle bytes per second (config.h; the engine's [memory] throttle, docs/models.md).
 *
 * Who shares the cap. The library sees only the origins, so the bound is kept where the traffic starts:
 * - the ranks of one origin node share one virtual clock per target node, in memory shared by the node
 *   (node-wide, not per task: per task the bound would grow with the ranks per node, and a node's
 *   ranks that write into one node in turn would each get the whole rate);
 * - the origin nodes split the cap evenly: each paces every target node at memory_throttle / (nodes - 1),
 *   so whatever the pattern, no node receives more than the cap from all others together. The price: a
 *   node written by few origins gets less than the cap (the library cannot learn who else is sending
 *   without messages of its own).
 * An operation of b bytes into node T takes the next interval of T's clock, [start, start + b / share),
 * start = max(now, the end of the previous one), and is injected at start: the starts of consecutive
 * injections into T from one node are at least the earlier one's b / share apart. Bytes: the origin
 * buffer's (count x type size). Put, Accumulate, Rput and Get, Rget alike (a get reads T's memory: the
 * engine models only writes, the library paces both). Traffic within a node is not paced (the engine's
 * writes come only from other nodes), nor to a rank outside MPI_COMM_WORLD (its node is unknown). */
#ifndef CONTEND_THROTTLE_TARGET_RATE_H
#define CONTEND_THROTTLE_TARGET_RATE_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

/* Collective over MPI_COMM_WORLD at MPI_Init, after the node table (nodes.h): with a cap, the node's
 * clocks. 0, or -1 and one line in why (e.g. the ranks disagree about the cap). */
int target_rate_start(char *why, size_t len);

/* Whether one-sided operations are paced (a cap is configured and MPI runs). */
int target_rate_on(void);

/* Wait until count elements of datatype may go to target_rank of win (see above), making MPI progress. */
void target_rate_pace(int target_rank, MPI_Win win, int64_t count, MPI_Datatype datatype);

/* Bytes per second from this node into each other node (0: not pacing), for the counters. */
int64_t target_rate_share(void);

/* Before PMPI_Finalize: free the node's clocks. */
void target_rate_stop(void);

#endif
