/* Counted point-to-point: the tally of every rank comes from MPI statuses, so "all bytes accounted
 * for" is a measured fact, not arithmetic on what the pattern meant to send. */
#include "harness.h"

#include "clock.h"

static void count_received(bench *b, MPI_Status *status)
{
    int bytes;
    MPI_Get_count(status, MPI_BYTE, &bytes);
    b->count.bytes_received += bytes;
    b->count.messages_received++;
}

static void count_sent(bench *b, int64_t n)
{
    b->count.bytes_sent += n;
    b->count.messages_sent++;
}

void send_msg(bench *b, const void *buf, int64_t n, int peer, int tag)
{
    MPI_Send(buf, (int)n, MPI_BYTE, peer, tag, b->comm);
    count_sent(b, n);
}

void recv_msg(bench *b, void *buf, int64_t n, int peer, int tag)
{
    MPI_Status status;
    MPI_Recv(buf, (int)n, MPI_BYTE, peer, tag, b->comm, &status);
    count_received(b, &status);
}

void post_send(bench *b, const void *buf, int64_t n, int peer, int tag, MPI_Request *req)
{
    MPI_Isend(buf, (int)n, MPI_BYTE, peer, tag, b->comm, req);
    count_sent(b, n);
}

void post_recv(bench *b, void *buf, int64_t n, int peer, int tag, MPI_Request *req)
{
    MPI_Irecv(buf, (int)n, MPI_BYTE, peer, tag, b->comm, req);
}

void wait_sends(bench *b, int n, MPI_Request *reqs)
{
    (void)b;
    MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
}

void wait_recvs(bench *b, int n, MPI_Request *reqs)
{
    for (int i = 0; i < n; i++) {
        MPI_Status status;
        MPI_Wait(&reqs[i], &status);
        count_received(b, &status);
    }
}

int wait_any_recv(bench *b, int n, MPI_Request *reqs)
{
    int index;
    MPI_Status status;
    MPI_Waitany(n, reqs, &index, &status);
    count_received(b, &status);
    return index;
}

double round_trip(bench *b, buffers io, int64_t n, int peer, int initiator)
{
    if (initiator) {
        int64_t start = now_ns();
        send_msg(b, io.send, n, peer, 0);
        recv_msg(b, io.recv, n, peer, 0);
        return (double)(now_ns() - start);
    }
    recv_msg(b, io.recv, n, peer, 0);
    send_msg(b, io.send, n, peer, 0);
    return 0;
}
