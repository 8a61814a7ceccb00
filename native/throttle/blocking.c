/* The blocking receives and probes: MPI_Recv (classic and large-count), MPI_Probe and MPI_Mprobe. While
 * this task holds tokens, each is done as a loop of its nonblocking form that also polls this task's
 * own operations, as a Wait is (complete.c): blocked inside MPI, the task would keep the tokens of
 * sends that have long completed, and the sender of the very message it waits for could be waiting
 * for them. mpi4py receives every pickled object with MPI_Mprobe + MPI_Mrecv: without this, each
 * send-before-receive exchange under a one- or two-token pool ended through the stall escape. With no
 * tokens held the calls pass straight through. */
#include "admit.h"
#include "held.h"
#include "throttle.h"

#define POLLING_RECV(IRECV)                                                                           \
    MPI_Request request;                                                                              \
    int flag = 0, rc = IRECV;                                                                         \
    while (rc == MPI_SUCCESS && (rc = PMPI_Test(&request, &flag, status)) == MPI_SUCCESS && !flag)     \
        between_tests();                                                                              \
    return rc;

int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
             MPI_Status *status)
{
    if (held.live == 0)
        return PMPI_Recv(buf, count, datatype, source, tag, comm, status);
    POLLING_RECV(PMPI_Irecv(buf, count, datatype, source, tag, comm, &request))
}

#if MPI_VERSION >= 4
int MPI_Recv_c(void *buf, MPI_Count count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
               MPI_Status *status)
{
    if (held.live == 0)
        return PMPI_Recv_c(buf, count, datatype, source, tag, comm, status);
    POLLING_RECV(PMPI_Irecv_c(buf, count, datatype, source, tag, comm, &request))
}
#endif

int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    if (held.live == 0)
        return PMPI_Probe(source, tag, comm, status);
    int flag = 0, rc;
    while ((rc = PMPI_Iprobe(source, tag, comm, &flag, status)) == MPI_SUCCESS && !flag)
        between_tests();
    return rc;
}

int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status)
{
    if (held.live == 0)
        return PMPI_Mprobe(source, tag, comm, message, status);
    int flag = 0, rc;
    while ((rc = PMPI_Improbe(source, tag, comm, &flag, message, status)) == MPI_SUCCESS && !flag)
        between_tests();
    return rc;
}
