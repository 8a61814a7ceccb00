/* Timing and checking of all-to-all exchanges, shared by the alltoall patterns (overlapped,
 * pairwise, Bruck, MPI_Alltoall), so their rows compare.
 *
 * Per size: --warmup exchanges, then --iters timed ones, each from a barrier. One sample = a rank's
 * exchange time / (P - 1), the time per block it sent, so a row's bandwidth_Bps is that rank's
 * effective injection rate over the exchange and the rows add up to the aggregate; the extra
 * alltoall_ns is the median time of the whole exchange. Block j of the send buffer goes to rank j,
 * block i of the receive buffer comes from rank i. After the sweep one more exchange of the largest
 * size carries known contents, and every rank checks every byte it received (tally: verified). */
#ifndef CONTEND_EXCHANGE_H
#define CONTEND_EXCHANGE_H

#include "harness.h"

typedef struct {
    char *send, *recv;  /* P blocks of the size being exchanged */
    char *scratch;      /* scratch_blocks blocks, for algorithms that stage data */
    MPI_Request *reqs;  /* 2 P requests */
} exchange_buffers;

typedef void (*exchange_fn)(bench *b, const exchange_buffers *io, int64_t bytes);

/* Collective: time exchange at every size, write the rows, check the data. */
int time_exchange(bench *b, exchange_fn exchange, int scratch_blocks);

#endif
