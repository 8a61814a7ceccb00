/* The buffered and ready nonblocking sends, MPI_Ibsend and MPI_Irsend (classic and large count):
 * admitted and holding their tokens until completion exactly as MPI_Isend (send.c). An Ibsend completes
 * once MPI has copied it into the attached buffer; its tokens come back then, so the library bounds the
 * copies started at once, not the buffered data MPI sends afterwards on its own (docs/measure.md). */
#include "admit.h"
#include "held.h"
#include "sends.h"
#include "throttle.h"

int start_send(send_mode mode, const void *buf, MPI_Count count, MPI_Datatype datatype, int dest,
               int tag, MPI_Comm comm, MPI_Request *request)
{
#if MPI_VERSION >= 4
    switch (mode) {
    case SEND_SYNCHRONOUS: return PMPI_Issend_c(buf, count, datatype, dest, tag, comm, request);
    case SEND_BUFFERED: return PMPI_Ibsend_c(buf, count, datatype, dest, tag, comm, request);
    case SEND_READY: return PMPI_Irsend_c(buf, count, datatype, dest, tag, comm, request);
    default: return PMPI_Isend_c(buf, count, datatype, dest, tag, comm, request);
    }
#else /* counts beyond int come only through the `_c` calls, which need MPI 4 */
    int n = (int)count;
    switch (mode) {
    case SEND_SYNCHRONOUS: return PMPI_Issend(buf, n, datatype, dest, tag, comm, request);
    case SEND_BUFFERED: return PMPI_Ibsend(buf, n, datatype, dest, tag, comm, request);
    case SEND_READY: return PMPI_Irsend(buf, n, datatype, dest, tag, comm, request);
    default: return PMPI_Isend(buf, n, datatype, dest, tag, comm, request);
    }
#endif
}

int throttled_start(send_mode mode, const void *buf, MPI_Count count, MPI_Datatype datatype, int dest,
                    int tag, MPI_Comm comm, MPI_Request *request)
{
    int32_t tokens = admit(count, datatype);
    int rc = start_send(mode, buf, count, datatype, dest, tag, comm, request);
    injected(tokens, rc, rc == MPI_SUCCESS ? *request : MPI_REQUEST_NULL, MPI_WIN_NULL, dest);
    return rc;
}

int MPI_Ibsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
               MPI_Request *request)
{
    if (!throttled_send(dest, comm))
        return PMPI_Ibsend(buf, count, datatype, dest, tag, comm, request);
    return throttled_start(SEND_BUFFERED, buf, count, datatype, dest, tag, comm, request);
}

int MPI_Irsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
               MPI_Request *request)
{
    if (!throttled_send(dest, comm))
        return PMPI_Irsend(buf, count, datatype, dest, tag, comm, request);
    return throttled_start(SEND_READY, buf, count, datatype, dest, tag, comm, request);
}

#if MPI_VERSION >= 4
int MPI_Ibsend_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                 MPI_Comm comm, MPI_Request *request)
{
    if (!throttled_send(dest, comm))
        return PMPI_Ibsend_c(buf, count, datatype, dest, tag, comm, request);
    throttle.stats.ops_large_count++;
    return throttled_start(SEND_BUFFERED, buf, count, datatype, dest, tag, comm, request);
}

int MPI_Irsend_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                 MPI_Comm comm, MPI_Request *request)
{
    if (!throttled_send(dest, comm))
        return PMPI_Irsend_c(buf, count, datatype, dest, tag, comm, request);
    throttle.stats.ops_large_count++;
    return throttled_start(SEND_READY, buf, count, datatype, dest, tag, comm, request);
}
#endif
