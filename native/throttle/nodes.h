/* Which node each task is on, so that traffic within a node is left alone: Luo et al. 2012's
 * congestion is at the NIC, and a message between two tasks of one node (shared memory) never reaches
 * it. The engine admits only messages that leave their node (docs/models.md); the library does the
 * same for sends, one-sided ops and the pieces of its throttled collectives (docs/measure.md).
 *
 * Nodes are numbered from the names the tasks give (throttle.node: CONTEND_THROTTLE_NODE, the host
 * name, or host#(rank / CONTEND_THROTTLE_RANKS_PER_NODE)): the same name, the same node. A peer is
 * named by its rank in a communicator or window; its node is found through a table of that
 * communicator's (or window's) ranks, made at its first use and cached on it as an attribute, freed
 * with it. MPI_COMM_WORLD is the table itself; the last communicator and window asked about are kept
 * at hand, so a program that uses one pays one comparison per call. */
#ifndef CONTEND_THROTTLE_NODES_H
#define CONTEND_THROTTLE_NODES_H

#include <mpi.h>
#include <stddef.h>

/* Collective over MPI_COMM_WORLD at MPI_Init, after the node is named. 0, or -1 and one line in why. */
int nodes_start(char *why, size_t len);

/* The number of nodes, and this task's. */
int nodes_count(void);
int nodes_mine(void);

/* The node of rank of comm (for an intercommunicator, of its remote group), or -1 when it is not known
 * (MPI_PROC_NULL, a task outside MPI_COMM_WORLD). */
int node_of_comm_rank(MPI_Comm comm, int rank);

/* The node of rank of win's group, or -1 as above. */
int node_of_win_rank(MPI_Win win, int rank);

/* Whether every task of comm (both groups of an intercommunicator) is on this task's node. */
int comm_within_node(MPI_Comm comm);

/* Before PMPI_Finalize. */
void nodes_stop(void);

#endif
