/* Figure 2 of Luo et al. 2012, rate congestion: a node's injection throughput as each core keeps more
 * messages in flight (--windows, default 1, 2, 4 .. 32 but at most --messages), per message size,
 * with a fixed number of active cores per node (--active, default all of them); nicstream.h
 * describes the streams. */
#include "nicstream.h"

int run_outstanding(bench *b)
{
    nic_layout l = nic_layout_of(b);
    int doubling[MAX_SIZES], n = 0;
    for (int w = 1; w <= 32 && w <= b->opt.messages; w *= 2)
        doubling[n++] = w;
    const options *o = &b->opt;
    int all = l.per_node;
    int rc = nic_sweep(b, &l, o->nactive ? o->active : &all, o->nactive ? o->nactive : 1,
                       o->nwindows ? o->windows : doubling, o->nwindows ? o->nwindows : n);
    nic_layout_free(&l);
    return rc;
}
