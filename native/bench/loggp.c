/* LogGP parameters by parametrised round trips (the method of Netgauge; Hoefler, Lichei, Rehm 2007).
 * Rank 0 is the client, rank 1 the server. PRTT(n, d, s): the client sends n messages of s bytes,
 * busy-waiting d ns between consecutive sends, and then receives one s-byte reply, which the server
 * sends after it has received all n. In LogGP terms (g(s) = g + (s-1)G, o_s the send overhead):
 *   PRTT(1, 0, s) = 2 (o_s + L + (s-1)G + o_r)
 *   PRTT(n, 0, s) = PRTT(1, 0, s) + (n-1) g(s)          (sends back to back: the gap limits)
 *   PRTT(n, d, s) = PRTT(1, 0, s) + (n-1) (o_s + d)     (d > g(s): the sender's CPU limits)
 * o_r is timed directly: the server busy-waits until the message has surely arrived (d_r = PRTT(1,0,s))
 * and times its MPI_Recv. This pattern writes the medians; the fit (contend.native.bench.loggp) solves them.
 * Each row: t_* = PRTT(1, 0, s) / 2 (like ping-pong); extras prtt1_ns, prttn_ns, prttd_ns, delay_ns,
 * n, o_r_ns (medians of their samples). */
#include <stdlib.h>

#include "clock.h"
#include "harness.h"

enum { CLIENT = 0, SERVER = 1 };

static double prtt(bench *b, buffers io, int64_t bytes, int n, double delay_ns)
{
    if (b->rank == CLIENT) {
        int64_t start = now_ns();
        for (int i = 0; i < n; i++) {
            if (i > 0)
                spin_ns((int64_t)delay_ns);
            send_msg(b, io.send, bytes, SERVER, 0);
        }
        recv_msg(b, io.recv, bytes, SERVER, 0);
        return (double)(now_ns() - start);
    }
    for (int i = 0; i < n; i++)
        recv_msg(b, io.recv, bytes, CLIENT, 0);
    send_msg(b, io.send, bytes, CLIENT, 0);
    return 0;
}

/* Median over iters runs of PRTT(n, d, s), agreed by both ranks (the server needs it for o_r). */
static double median_prtt(bench *b, buffers io, int64_t bytes, int n, double delay_ns, int iters,
                          double *samples, double *all)
{
    for (int i = 0; i < b->opt.warmup; i++)
        prtt(b, io, bytes, n, delay_ns);
    for (int i = 0; i < iters; i++) {
        samples[i] = prtt(b, io, bytes, n, delay_ns);
        all[i] = samples[i];
    }
    double m = median(samples, iters);
    MPI_Bcast(&m, 1, MPI_DOUBLE, CLIENT, b->comm);
    return m;
}

/* Median time of MPI_Recv at the server for a message that has already arrived. The server waits
 * wait_ns = PRTT(1,0,s) first; a receive that still took more than half of that waited for its message
 * (the client lost its core meanwhile: o_r is at most PRTT(1,0,s)/2 by the model), so it is no sample
 * of o_r and the round is run again, up to iters times more (rounds past those retries count whatever
 * they took, so that a host busy throughout still gives a figure). */
static double receive_overhead(bench *b, buffers io, int64_t bytes, double wait_ns, int iters,
                               double *samples)
{
    int kept = 0;
    for (int round = 0; round < 2 * iters && kept < iters; round++) {
        MPI_Barrier(b->comm);
        if (b->rank == CLIENT) {
            send_msg(b, io.send, bytes, SERVER, 0);
            recv_msg(b, io.recv, bytes, SERVER, 0);
        } else {
            spin_ns((int64_t)wait_ns);
            int64_t start = now_ns();
            recv_msg(b, io.recv, bytes, CLIENT, 0);
            double took = (double)(now_ns() - start);
            send_msg(b, io.send, bytes, CLIENT, 0);
            if (took <= wait_ns / 2 || round >= iters) /* a sample, or past the retries: any round */
                samples[kept++] = took;
        }
        MPI_Bcast(&kept, 1, MPI_INT, SERVER, b->comm); /* both ranks run the same rounds */
    }
    double m = median(samples, kept);
    MPI_Bcast(&m, 1, MPI_DOUBLE, SERVER, b->comm);
    return m;
}

int run_loggp(bench *b)
{
    buffers io = alloc_buffers(largest_size(b));
    int iters_max = b->opt.iters > b->opt.iters_large ? b->opt.iters : b->opt.iters_large;
    double *samples = malloc(sizeof(double) * iters_max);
    double *round_trips = malloc(sizeof(double) * iters_max);
    double *scratch = malloc(sizeof(double) * iters_max);
    int n = b->opt.prtt_n;
    MPI_Comm pair;
    MPI_Comm_split(b->comm, b->rank < 2 ? 0 : MPI_UNDEFINED, b->rank, &pair);

    for (int k = 0; k < b->opt.nsizes; k++) {
        int64_t bytes = b->opt.sizes[k];
        int iters = iterations_for(b, bytes);
        result r = {0};
        MPI_Barrier(b->comm);
        if (pair != MPI_COMM_NULL) {
            bench duo = *b; /* the same rank numbers: ranks 0 and 1 keep theirs in the split */
            duo.comm = pair;
            double p1 = median_prtt(&duo, io, bytes, 1, 0, iters, samples, round_trips);
            double pn = median_prtt(&duo, io, bytes, n, 0, iters, samples, scratch);
            double gap = (pn - p1) / (n - 1);
            double delay = p1 > 2 * gap ? p1 : 2 * gap; /* safely above the gap */
            double pd = median_prtt(&duo, io, bytes, n, delay, iters, samples, scratch);
            double o_r = receive_overhead(&duo, io, bytes, p1, iters, samples);
            b->count = duo.count;
            for (int i = 0; i < iters; i++)
                round_trips[i] /= 2;
            r = result_init("loggp", bytes, CLIENT, SERVER, round_trips, iters);
            result_extra(&r, "prtt1_ns", p1);
            result_extra(&r, "prttn_ns", pn);
            result_extra(&r, "prttd_ns", pd);
            result_extra(&r, "delay_ns", delay);
            result_extra(&r, "n", n);
            result_extra(&r, "o_r_ns", o_r);
        }
        report(b, b->rank == CLIENT ? &r : NULL);
        progress(b, k + 1, b->opt.nsizes);
    }
    if (pair != MPI_COMM_NULL)
        MPI_Comm_free(&pair);
    free(scratch);
    free(round_trips);
    free(samples);
    free_buffers(io);
    return 0;
}
