/* The tracer's stress test: every rank issues a random mix of two-sided and one-sided operations to
 * random peers, then prints how many of each it issued (one JSON line per rank), so the trace can be
 * checked against the program's own counts: no operation lost, every message matched.
 *   trace-stress [ITERATIONS [SEED]]
 * Two-sided rounds: a random destination per rank (the same on all ranks, from the shared seed), so
 * each rank knows whom it receives from; receives are blocking or nonblocking, by source or
 * MPI_ANY_SOURCE, completed by Wait, Waitall, Waitany, Waitsome or a Test loop; some add a ring exchange
 * by Send, Ssend, Sendrecv or Sendrecv_replace. At the end, a ring of buffered and ready sends
 * (Bsend, Rsend, Ibsend, Irsend), then one of persistent requests (Send_init, Recv_init, Start(all)).
 * One-sided rounds: Put,
 * Get, Accumulate, Get_accumulate, Rput, Rget, Raccumulate, Rget_accumulate, Fetch_and_op,
 * Compare_and_swap to a random target in a lock_all epoch, completed by flush, flush_all, flush_local
 * or the request's Wait; then a fence epoch of puts, and a post/start/complete/wait epoch of one put
 * to the right neighbour, its exposure ended by a Win_test loop. Last, every nonblocking collective
 * with a count (classic entry points), completed by one Waitall. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { SEND, ISEND, SSEND, ISSEND, RECV, IRECV, PUT, GET, ACC, GACC, RPUT, RGET, RACC, RGACC, FOP, CAS, FENCE_PUT,
       PSCW_PUT, SENDRECV, BUFFERED_READY, PERSISTENT, NONBLOCKING_COLLECTIVES, KINDS };
static const char *names[KINDS] = {"send", "isend", "ssend", "issend", "recv", "irecv", "put", "get",
                                   "accumulate", "get_accumulate", "rput", "rget", "raccumulate",
                                   "rget_accumulate", "fetch_and_op", "compare_and_swap", "fence_put",
                                   "pscw_put", "sendrecv", "buffered_ready", "persistent",
                                   "nonblocking_collectives"};
static long issued[KINDS];
static long bytes_sent, bytes_received;

/* A generator all ranks share (same seed, same sequence) and one of this rank's own. */
static unsigned next(unsigned *state)
{
    *state = *state * 1103515245u + 12345u;
    return (*state >> 8) & 0xffffff;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int iterations = argc > 1 ? atoi(argv[1]) : 200;
    unsigned shared = argc > 2 ? (unsigned)atoi(argv[2]) : 7, own = shared * 31u + (unsigned)rank;
    int *dest = malloc(sizeof(int) * (size_t)size);
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * (size_t)(size + 1));
    char sendbuf[256], recvbuf[64][256];
    long *base;
    MPI_Win win;
    MPI_Win_allocate(1024 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    MPI_Win_lock_all(0, win);

    for (int it = 0; it < iterations; it++) {
        if (next(&shared) % 2 == 0) { /* a two-sided round */
            for (int r = 0; r < size; r++)
                do
                    dest[r] = (int)(next(&shared) % (unsigned)size);
                while (dest[r] == r);
            int bytes = 1 + (int)(next(&shared) % 200), tag = it % 97;
            int style = (int)(next(&shared) % 4), any = next(&shared) % 2, ring = next(&shared) % 3 == 0;
            int n = 0;
            for (int s = 0; s < size; s++) {
                if (dest[s] != rank || style == 0)
                    continue;
                MPI_Irecv(recvbuf[n % 64], bytes, MPI_CHAR, any ? MPI_ANY_SOURCE : s, tag,
                          MPI_COMM_WORLD, &reqs[n]);
                issued[IRECV]++;
                bytes_received += bytes;
                n++;
            }
            int kind = (int)(next(&own) % 4); /* which send this rank uses */
            MPI_Request send_req = MPI_REQUEST_NULL;
            if (kind == 1)
                MPI_Issend(sendbuf, bytes, MPI_CHAR, dest[rank], tag, MPI_COMM_WORLD, &send_req);
            else
                MPI_Isend(sendbuf, bytes, MPI_CHAR, dest[rank], tag, MPI_COMM_WORLD, &send_req);
            issued[kind == 1 ? ISSEND : ISEND]++;
            bytes_sent += bytes;
            if (style == 0) { /* blocking receives, one per sender */
                for (int s = 0; s < size; s++)
                    if (dest[s] == rank) {
                        MPI_Recv(recvbuf[0], bytes, MPI_CHAR, any ? MPI_ANY_SOURCE : s, tag,
                                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                        issued[RECV]++;
                        bytes_received += bytes;
                    }
            }
            reqs[n++] = send_req;
            if (style <= 1) {
                MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
            } else if (style == 2) {
                for (int done = 0; done < n; done++) {
                    int index;
                    MPI_Waitany(n, reqs, &index, MPI_STATUS_IGNORE);
                }
            } else {
                int left = n, outcount, indices[72], flag = 0;
                MPI_Status st[72];
                while (left > 0) {
                    if (next(&own) % 2) {
                        MPI_Waitsome(n, reqs, &outcount, indices, st);
                        left = outcount == MPI_UNDEFINED ? 0 : left - outcount;
                    } else {
                        MPI_Testall(n, reqs, &flag, MPI_STATUSES_IGNORE);
                        if (flag)
                            left = 0;
                    }
                }
            }
            /* sometimes (the same rounds on all ranks) also a ring exchange with a blocking receive */
            if (ring && size > 1) {
                int to = (rank + 1) % size, from = (rank + size - 1) % size, how = (int)(next(&own) % 4);
                if (how >= 2) { /* both in one call: counted as the send and the receive it is */
                    if (how == 2)
                        MPI_Sendrecv(sendbuf, 8, MPI_CHAR, to, 1000, recvbuf[0], 8, MPI_CHAR, MPI_ANY_SOURCE,
                                     1000, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    else
                        MPI_Sendrecv_replace(recvbuf[0], 8, MPI_CHAR, to, 1000, from, 1000, MPI_COMM_WORLD,
                                             MPI_STATUS_IGNORE);
                    issued[SEND]++;
                    issued[RECV]++;
                    issued[SENDRECV]++;
                } else { /* receive posted first, so even a synchronous send completes */
                    MPI_Request r;
                    MPI_Irecv(recvbuf[0], 8, MPI_CHAR, MPI_ANY_SOURCE, 1000, MPI_COMM_WORLD, &r);
                    issued[IRECV]++;
                    if (how == 1) {
                        MPI_Send(sendbuf, 8, MPI_CHAR, to, 1000, MPI_COMM_WORLD);
                        issued[SEND]++;
                    } else {
                        MPI_Ssend(sendbuf, 8, MPI_CHAR, to, 1000, MPI_COMM_WORLD);
                        issued[SSEND]++;
                    }
                    MPI_Wait(&r, MPI_STATUS_IGNORE);
                }
                bytes_sent += 8;
                bytes_received += 8;
            }
            MPI_Barrier(MPI_COMM_WORLD);
        } else { /* a one-sided round, then a barrier so the next two-sided round starts together */
            int ops = 1 + (int)(next(&own) % 6);
            for (int k = 0; k < ops; k++) {
                int target = (int)(next(&own) % (unsigned)size), count = 1 + (int)(next(&own) % 16);
                long value[16] = {0}, result[16];
                MPI_Request r;
                switch (next(&own) % 10) {
                case 0: MPI_Put(value, count, MPI_LONG, target, 0, count, MPI_LONG, win); issued[PUT]++; break;
                case 1: MPI_Get(result, count, MPI_LONG, target, 16, count, MPI_LONG, win); issued[GET]++; break;
                case 2: MPI_Accumulate(value, count, MPI_LONG, target, 32, count, MPI_LONG, MPI_SUM, win);
                        issued[ACC]++; break;
                case 3: MPI_Get_accumulate(value, count, MPI_LONG, result, count, MPI_LONG, target, 48, count,
                                           MPI_LONG, MPI_SUM, win);
                        issued[GACC]++; break;
                case 4: MPI_Rput(value, count, MPI_LONG, target, 64 + 16 * rank, count, MPI_LONG, win, &r);
                        MPI_Wait(&r, MPI_STATUS_IGNORE); issued[RPUT]++; break;
                case 5: MPI_Rget(result, count, MPI_LONG, target, 16, count, MPI_LONG, win, &r);
                        MPI_Wait(&r, MPI_STATUS_IGNORE); issued[RGET]++; break;
                case 6: MPI_Raccumulate(value, count, MPI_LONG, target, 32, count, MPI_LONG, MPI_SUM, win, &r);
                        MPI_Wait(&r, MPI_STATUS_IGNORE); issued[RACC]++; break;
                case 7: MPI_Rget_accumulate(value, count, MPI_LONG, result, count, MPI_LONG, target, 48, count,
                                            MPI_LONG, MPI_SUM, win, &r);
                        MPI_Wait(&r, MPI_STATUS_IGNORE); issued[RGACC]++; break;
                case 8: MPI_Fetch_and_op(value, result, MPI_LONG, target, 100, MPI_SUM, win); issued[FOP]++; break;
                default: MPI_Compare_and_swap(value, value + 1, result, MPI_LONG, target, 101, win);
                         issued[CAS]++; break;
                }
                switch (next(&own) % 3) {
                case 0: MPI_Win_flush(target, win); break;
                case 1: MPI_Win_flush_local(target, win); break;
                default: break; /* left to the flush_all below */
                }
            }
            MPI_Win_flush_all(win);
            MPI_Barrier(MPI_COMM_WORLD);
        }
    }
    MPI_Win_unlock_all(win);

    /* buffered and ready sends around the ring: every receive is posted before a barrier, so each
     * ready send finds its receive there; the buffered ones copy into the attached buffer */
    if (size > 1) {
        int to = (rank + 1) % size, from = (rank + size - 1) % size, attached_bytes = 4 * (64 + MPI_BSEND_OVERHEAD);
        char *attached = malloc((size_t)attached_bytes);
        MPI_Buffer_attach(attached, attached_bytes);
        MPI_Request r[4], s[2];
        for (int k = 0; k < 4; k++) {
            MPI_Irecv(recvbuf[k], 64, MPI_CHAR, from, 2000 + k, MPI_COMM_WORLD, &r[k]);
            issued[IRECV]++;
        }
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Rsend(sendbuf, 64, MPI_CHAR, to, 2000, MPI_COMM_WORLD);
        MPI_Bsend(sendbuf, 64, MPI_CHAR, to, 2001, MPI_COMM_WORLD);
        MPI_Irsend(sendbuf, 64, MPI_CHAR, to, 2002, MPI_COMM_WORLD, &s[0]);
        MPI_Ibsend(sendbuf, 64, MPI_CHAR, to, 2003, MPI_COMM_WORLD, &s[1]);
        issued[SEND] += 2;
        issued[ISEND] += 2;
        issued[BUFFERED_READY] += 4;
        bytes_sent += 4 * 64;
        bytes_received += 4 * 64;
        MPI_Waitall(2, s, MPI_STATUSES_IGNORE);
        MPI_Waitall(4, r, MPI_STATUSES_IGNORE);
        MPI_Buffer_detach(&attached, &attached_bytes);
        free(attached);

        /* persistent requests around the ring: three rounds by Startall and Waitall, two by Start and
         * Wait or Test, then freed */
        MPI_Request p[2];
        MPI_Recv_init(recvbuf[8], 32, MPI_CHAR, from, 3000, MPI_COMM_WORLD, &p[0]);
        MPI_Send_init(sendbuf, 32, MPI_CHAR, to, 3000, MPI_COMM_WORLD, &p[1]);
        for (int round = 0; round < 5; round++) {
            if (round < 3) {
                MPI_Startall(2, p);
                MPI_Waitall(2, p, MPI_STATUSES_IGNORE);
            } else {
                MPI_Start(&p[0]);
                MPI_Start(&p[1]);
                MPI_Wait(&p[1], MPI_STATUS_IGNORE);
                for (int flag = 0; !flag;)
                    MPI_Test(&p[0], &flag, MPI_STATUS_IGNORE);
            }
            issued[IRECV]++;
            issued[ISEND]++;
            issued[PERSISTENT] += 2;
            bytes_sent += 32;
            bytes_received += 32;
        }
        MPI_Request_free(&p[0]);
        MPI_Request_free(&p[1]);
    }

    /* a fence epoch: active target */
    MPI_Win_fence(0, win);
    for (int k = 0; k < 3; k++) {
        long value = rank;
        MPI_Put(&value, 1, MPI_LONG, (rank + k) % size, 200 + rank, 1, MPI_LONG, win);
        issued[FENCE_PUT]++;
    }
    MPI_Win_fence(0, win);

    /* a post/start/complete/wait epoch: exposed to the left neighbour, a put into the right one */
    MPI_Group world_group, exposed, accessed;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    MPI_Group_incl(world_group, 1, &left, &exposed);
    MPI_Group_incl(world_group, 1, &right, &accessed);
    MPI_Win_post(exposed, 0, win);
    MPI_Win_start(accessed, 0, win);
    long value = rank;
    MPI_Put(&value, 1, MPI_LONG, right, 300 + rank, 1, MPI_LONG, win);
    issued[PSCW_PUT]++;
    MPI_Win_complete(win);
    for (int flag = 0; !flag;)
        MPI_Win_test(win, &flag);
    MPI_Group_free(&exposed);
    MPI_Group_free(&accessed);
    MPI_Group_free(&world_group);
    MPI_Win_free(&win);

    /* every nonblocking collective with a count, rooted at rank 0 */
    int *counts = malloc(sizeof(int) * (size_t)size), *displs = malloc(sizeof(int) * (size_t)size);
    for (int r = 0; r < size; r++)
        counts[r] = 2, displs[r] = 2 * r;
    long in[2] = {rank, rank}, all_in[64], all_out[64], two[2], sum[2];
    MPI_Request coll[10];
    MPI_Igather(in, 2, MPI_LONG, all_out, 2, MPI_LONG, 0, MPI_COMM_WORLD, &coll[0]);
    MPI_Iscatter(all_in, 2, MPI_LONG, two, 2, MPI_LONG, 0, MPI_COMM_WORLD, &coll[1]);
    MPI_Ialltoallv(all_in, counts, displs, MPI_LONG, all_out + 16, counts, displs, MPI_LONG, MPI_COMM_WORLD,
                   &coll[2]);
    MPI_Iallgatherv(in, 2, MPI_LONG, all_out + 32, counts, displs, MPI_LONG, MPI_COMM_WORLD, &coll[3]);
    MPI_Igatherv(in, 2, MPI_LONG, all_out + 48, counts, displs, MPI_LONG, 0, MPI_COMM_WORLD, &coll[4]);
    MPI_Iscatterv(all_in + 16, counts, displs, MPI_LONG, sum, 2, MPI_LONG, 0, MPI_COMM_WORLD, &coll[5]);
    long vector[32] = {0}, block[2], scanned[2], exscanned[2];
    MPI_Ireduce_scatter(vector, block, counts, MPI_LONG, MPI_SUM, MPI_COMM_WORLD, &coll[6]);
    MPI_Ireduce_scatter_block(vector + 16, all_in + 32, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD, &coll[7]);
    MPI_Iscan(in, scanned, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD, &coll[8]);
    MPI_Iexscan(in, exscanned, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD, &coll[9]);
    MPI_Waitall(10, coll, MPI_STATUSES_IGNORE);
    issued[NONBLOCKING_COLLECTIVES] += 10;
    free(counts);
    free(displs);

    long totals[2] = {bytes_sent, bytes_received}, sums[2];
    MPI_Allreduce(totals, sums, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    /* one write per rank, so the launcher never interleaves two ranks' lines */
    char line[2048];
    int n = snprintf(line, sizeof line, "{\"rank\": %d, \"bytes_sent\": %ld, \"bytes_received\": %ld, "
                     "\"all_sent\": %ld, \"all_received\": %ld", rank, bytes_sent, bytes_received, sums[0],
                     sums[1]);
    for (int k = 0; k < KINDS; k++)
        n += snprintf(line + n, sizeof line - (size_t)n, ", \"%s\": %ld", names[k], issued[k]);
    n += snprintf(line + n, sizeof line - (size_t)n, "}\n");
    fwrite(line, 1, (size_t)n, stdout);
    fflush(stdout);
    free(dest);
    free(reqs);
    MPI_Finalize();
    return 0;
}
