/* Pairwise-exchange all-to-all (Thakur, Rabenseifner, Gropp; Luo et al. 2012's "exchange-pw"): P - 1 steps;
 * in step k every rank sends its block for rank + k and receives the block of rank - k, one blocking
 * exchange at a time, so each rank has one message in flight. Timing, rows, check: exchange.h. */
#include "exchange.h"

enum { DATA = 1 };

static void pairwise(bench *b, const exchange_buffers *io, int64_t bytes)
{
    int p = b->size;
    for (int k = 1; k < p; k++) {
        int to = (b->rank + k) % p, from = (b->rank - k + p) % p;
        post_recv(b, io->recv + (size_t)from * bytes, bytes, from, DATA, &io->reqs[0]);
        send_msg(b, io->send + (size_t)to * bytes, bytes, to, DATA);
        wait_recvs(b, 1, io->reqs);
    }
}

int run_alltoall_pairwise(bench *b)
{
    return time_exchange(b, pairwise, 0);
}
