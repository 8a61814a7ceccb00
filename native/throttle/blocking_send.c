/* The blocking sends: MPI_Send, MPI_Ssend, MPI_Bsend, MPI_Rsend, MPI_Sendrecv and MPI_Sendrecv_replace
 * (classic and large count). They take part in admission like the nonblocking sends, so the tasks of a
 * node injecting at once are bounded by its pool (the congestion paper's concurrency throttling, "CCT").
 *
 * A blocking send is its nonblocking form: admitted, started, waited for, and its tokens given back
 * when it has completed locally, that is when the blocking call would have returned. While it waits,
 * for tokens (admit.c) or for its completion (wait_polling), the task hands back the tokens of its
 * other finished operations, so a send blocked behind a receiver cannot keep tokens others need.
 * Sendrecv posts its receive before it asks for tokens, and gives the send's tokens back as soon as
 * the send is done: the peer it receives from may be waiting for exactly those tokens to send.
 * A send the library does not throttle (to a task of this node, to MPI_PROC_NULL, no policy) passes
 * straight through, unless the task holds tokens: then Sendrecv's receive polls as MPI_Recv does. */
#include <stdio.h>
#include <stdlib.h>

#include "admit.h"
#include "held.h"
#include "sends.h"
#include "throttle.h"

int wait_polling(MPI_Request *request, MPI_Status *status)
{
    if (held.live == 0)
        return PMPI_Wait(request, status);
    int flag = 0, rc;
    while ((rc = PMPI_Test(request, &flag, status)) == MPI_SUCCESS && !flag)
        between_tests();
    return rc;
}

static void count_blocking(int large)
{
    throttle.stats.ops_blocking++;
    throttle.stats.ops_large_count += large;
}

static int blocking_send(send_mode mode, int large, const void *buf, MPI_Count count,
                         MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
    count_blocking(large);
    int32_t tokens = admit(count, datatype);
    MPI_Request request;
    int rc = start_send(mode, buf, count, datatype, dest, tag, comm, &request);
    injected(0, rc, MPI_REQUEST_NULL, MPI_WIN_NULL, dest); /* the proxy's slot back; the tokens kept here */
    if (rc == MPI_SUCCESS)
        rc = wait_polling(&request, MPI_STATUS_IGNORE);
    give_back(tokens);
    return rc;
}

static int start_recv(void *buf, MPI_Count count, MPI_Datatype datatype, int source, int tag,
                      MPI_Comm comm, MPI_Request *request)
{
#if MPI_VERSION >= 4
    return PMPI_Irecv_c(buf, count, datatype, source, tag, comm, request);
#else
    return PMPI_Irecv(buf, (int)count, datatype, source, tag, comm, request);
#endif
}

static int sendrecv(int large, int throttled, const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                    int dest, int sendtag, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                    int source, int recvtag, MPI_Comm comm, MPI_Status *status)
{
    MPI_Request recv, send;
    int rc = start_recv(recvbuf, recvcount, recvtype, source, recvtag, comm, &recv);
    if (rc != MPI_SUCCESS)
        return rc;
    int32_t tokens = 0;
    if (throttled) {
        count_blocking(large);
        tokens = admit(sendcount, sendtype);
    }
    rc = start_send(SEND_STANDARD, sendbuf, sendcount, sendtype, dest, sendtag, comm, &send);
    if (throttled)
        injected(0, rc, MPI_REQUEST_NULL, MPI_WIN_NULL, dest); /* as in blocking_send */
    if (rc == MPI_SUCCESS)
        rc = wait_polling(&send, MPI_STATUS_IGNORE);
    give_back(tokens);
    if (rc != MPI_SUCCESS) { /* only with an error handler that returns: no receive left behind */
        PMPI_Cancel(&recv);
        PMPI_Request_free(&recv);
        return rc;
    }
    return wait_polling(&recv, status);
}

/* Sendrecv_replace sends a packed copy of the buffer, so the receive can be posted into it first. */
static int sendrecv_replace(int large, int throttled, void *buf, MPI_Count count, MPI_Datatype datatype, int dest,
                            int sendtag, int source, int recvtag, MPI_Comm comm, MPI_Status *status)
{
#if MPI_VERSION >= 4
    MPI_Count size = 0, position = 0;
    PMPI_Pack_size_c(count, datatype, comm, &size);
#else
    int size = 0, position = 0;
    PMPI_Pack_size((int)count, datatype, comm, &size);
#endif
    void *packed = malloc((size_t)size + 1);
    if (!packed) {
        fprintf(stderr, "contend-throttle: out of memory for a %lld-byte Sendrecv_replace\n",
                (long long)size);
        abort();
    }
#if MPI_VERSION >= 4
    int rc = PMPI_Pack_c(buf, count, datatype, packed, size, &position, comm);
#else
    int rc = PMPI_Pack(buf, (int)count, datatype, packed, size, &position, comm);
#endif
    if (rc == MPI_SUCCESS)
        rc = sendrecv(large, throttled, packed, position, MPI_PACKED, dest, sendtag, buf, count, datatype, source,
                      recvtag, comm, status);
    free(packed);
    return rc;
}

int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
    if (!throttled_send(dest, comm))
        return PMPI_Send(buf, count, datatype, dest, tag, comm);
    return blocking_send(SEND_STANDARD, 0, buf, count, datatype, dest, tag, comm);
}

int MPI_Ssend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
    if (!throttled_send(dest, comm))
        return PMPI_Ssend(buf, count, datatype, dest, tag, comm);
    return blocking_send(SEND_SYNCHRONOUS, 0, buf, count, datatype, dest, tag, comm);
}

int MPI_Bsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
    if (!throttled_send(dest, comm))
        return PMPI_Bsend(buf, count, datatype, dest, tag, comm);
    return blocking_send(SEND_BUFFERED, 0, buf, count, datatype, dest, tag, comm);
}

int MPI_Rsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
    if (!throttled_send(dest, comm))
        return PMPI_Rsend(buf, count, datatype, dest, tag, comm);
    return blocking_send(SEND_READY, 0, buf, count, datatype, dest, tag, comm);
}

int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                 void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                 MPI_Comm comm, MPI_Status *status)
{
    int throttled = throttled_send(dest, comm);
    if (!throttled && held.live == 0)
        return PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount,
                             recvtype, source, recvtag, comm, status);
    return sendrecv(0, throttled, sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype,
                    source, recvtag, comm, status);
}

int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest, int sendtag,
                         int source, int recvtag, MPI_Comm comm, MPI_Status *status)
{
    int throttled = throttled_send(dest, comm);
    if (!throttled && held.live == 0)
        return PMPI_Sendrecv_replace(buf, count, datatype, dest, sendtag, source, recvtag, comm,
                                     status);
    return sendrecv_replace(0, throttled, buf, count, datatype, dest, sendtag, source, recvtag, comm, status);
}

#if MPI_VERSION >= 4
int MPI_Send_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
               MPI_Comm comm)
{
    if (!throttled_send(dest, comm))
        return PMPI_Send_c(buf, count, datatype, dest, tag, comm);
    return blocking_send(SEND_STANDARD, 1, buf, count, datatype, dest, tag, comm);
}

int MPI_Ssend_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                MPI_Comm comm)
{
    if (!throttled_send(dest, comm))
        return PMPI_Ssend_c(buf, count, datatype, dest, tag, comm);
    return blocking_send(SEND_SYNCHRONOUS, 1, buf, count, datatype, dest, tag, comm);
}

int MPI_Bsend_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                MPI_Comm comm)
{
    if (!throttled_send(dest, comm))
        return PMPI_Bsend_c(buf, count, datatype, dest, tag, comm);
    return blocking_send(SEND_BUFFERED, 1, buf, count, datatype, dest, tag, comm);
}

int MPI_Rsend_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                MPI_Comm comm)
{
    if (!throttled_send(dest, comm))
        return PMPI_Rsend_c(buf, count, datatype, dest, tag, comm);
    return blocking_send(SEND_READY, 1, buf, count, datatype, dest, tag, comm);
}

int MPI_Sendrecv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, int dest,
                   int sendtag, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                   int source, int recvtag, MPI_Comm comm, MPI_Status *status)
{
    int throttled = throttled_send(dest, comm);
    if (!throttled && held.live == 0)
        return PMPI_Sendrecv_c(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount,
                               recvtype, source, recvtag, comm, status);
    return sendrecv(1, throttled, sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype,
                    source, recvtag, comm, status);
}

int MPI_Sendrecv_replace_c(void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int sendtag,
                           int source, int recvtag, MPI_Comm comm, MPI_Status *status)
{
    int throttled = throttled_send(dest, comm);
    if (!throttled && held.live == 0)
        return PMPI_Sendrecv_replace_c(buf, count, datatype, dest, sendtag, source, recvtag, comm,
                                       status);
    return sendrecv_replace(1, throttled, buf, count, datatype, dest, sendtag, source, recvtag, comm, status);
}
#endif
