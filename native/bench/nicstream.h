/* Streams between nodes: the engine behind Figures 1 and 2 of Luo et al. 2012 (Luo, Panda, Ibrahim, Iancu),
 * patterns nicrate (sweep the active cores) and outstanding (sweep the messages in flight per core).
 *
 * Nodes are ranks with the same processor name. On one host the two halves of the ranks stand for
 * two nodes (rows say one_host = 1), so the sweep also runs on shared memory. Every node must have
 * the same number K of ranks. Local rank i of node n sends to local rank i of node n + 1 and receives
 * from local rank i of node n - 1 (mod the nodes): all nodes inject at once, one partner per core, as
 * in Luo et al. 2012's two-node runs.
 *
 * A point is (size s, A active ranks per node, W outstanding per rank). Each round starts at a
 * barrier (the ranks sitting it out wait there asleep, leaving the cores to the others; the injecting
 * ranks then meet among themselves, so that they start together); the ranks with local index < A each
 * move M = --messages messages in batches of W: post W
 * receives and W sends and wait for all (--mode send), or W puts then MPI_Win_flush (--mode put).
 * --mode put-oneway: only the first node's ranks put, into the second node's; the targets of a passive
 * epoch need not run, so they sit every round out asleep and the origins have the cores (on one host,
 * the origins of one node truly inject at once). Rows: the first node's only.
 * A node's round time is that of its slowest active rank; one sample = that time / (A x M), so a
 * row's bandwidth_Bps is the node's injection throughput and msg_rate its message rate. One row per
 * node and point, written with the node's first rank as rank and the next node's as peer; extras:
 * active, messages, logical_node, one_host, rank_min_Bps and rank_max_Bps (the slowest and fastest
 * active rank's median throughput: the per-rank spread). After the sweep every rank sends one
 * message of the largest size with known contents to its partner, which checks every byte. */
#ifndef CONTEND_NICSTREAM_H
#define CONTEND_NICSTREAM_H

#include "harness.h"

typedef struct {
    int nodes;     /* logical nodes */
    int per_node;  /* ranks on each node (K) */
    int one_host;  /* the nodes are the two halves of one host's ranks */
    int *rank_at;  /* [node * per_node + local]: the world rank there */
    int *node_of;  /* [world rank]: its logical node */
    int *local_of; /* [world rank]: its index within the node */
} nic_layout;

/* Collective: the logical nodes (a usage error when nodes differ in size). Free with nic_layout_free. */
nic_layout nic_layout_of(bench *b);
void nic_layout_free(nic_layout *l);

/* Collective: measure every (size, active, window) point and write the rows. */
int nic_sweep(bench *b, const nic_layout *l, const int *active, int nactive, const int *windows,
              int nwindows);

#endif
