/* Figure 1 of Luo et al. 2012, concurrency congestion: a node's injection throughput and message rate as
 * more of its cores inject at once (--active, default 1 to all ranks of a node), per message size.
 * By default each core has one message outstanding (--windows 1), like Luo et al. 2012's blocking runs; the
 * streams themselves are described in nicstream.h. */
#include "nicstream.h"

int run_nicrate(bench *b)
{
    nic_layout l = nic_layout_of(b);
    int every[MAX_SIZES], n = 0;
    for (int a = 1; a <= l.per_node && n < MAX_SIZES; a++)
        every[n++] = a;
    static const int blocking[] = {1};
    const options *o = &b->opt;
    int rc = nic_sweep(b, &l, o->nactive ? o->active : every, o->nactive ? o->nactive : n,
                       o->nwindows ? o->windows : blocking, o->nwindows ? o->nwindows : 1);
    nic_layout_free(&l);
    return rc;
}
