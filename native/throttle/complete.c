/* The completion calls, Wait and Test families: a request that holds tokens gives them back when MPI
 * completes it for the program. MPI sets a completed (non-persistent) request to MPI_REQUEST_NULL, so
 * the rule is the same for all eight calls: compare the requests before and after (a persistent send
 * is left inactive instead: persistent.c is asked about those left in place). When this task
 * holds no tokens (always so under the rate, proxy without tokens and none policies) the calls pass
 * straight through, first thing: a receiver's Wait per message is on the critical path of a
 * message-rate run.
 *
 * While this task holds tokens, a Wait is done as a loop of the matching Test, and whenever another
 * task of the node is waiting for tokens the loop also polls this task's own operations: otherwise a
 * task blocked in Wait on a receive would keep the tokens of sends that have long completed, and the
 * sender of that very receive could be the one waiting for them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admit.h"
#include "held.h"
#include "sends.h"
#include "throttle.h"

void between_tests(void)
{
    if (pool_waiting(&throttle.seg->pool))
        give_back(held_poll());
}

#define ON_STACK 64 /* requests copied without malloc */

typedef struct {
    MPI_Request *before;
    MPI_Request stack[ON_STACK];
} snapshot;

/* Copy the requests (the calls take one only while this task holds tokens). */
static void take_snapshot(snapshot *s, int n, const MPI_Request *requests)
{
    s->before = NULL;
    if (n <= 0)
        return;
    s->before = n <= ON_STACK ? s->stack : malloc(sizeof(MPI_Request) * (size_t)n);
    if (!s->before) {
        fprintf(stderr, "contend-throttle: out of memory copying %d requests\n", n);
        abort();
    }
    memcpy(s->before, requests, sizeof(MPI_Request) * (size_t)n);
}

static void settle(snapshot *s, int n, const MPI_Request *after)
{
    if (!s->before)
        return;
    int32_t tokens = 0;
    for (int i = 0; i < n; i++)
        if (s->before[i] != MPI_REQUEST_NULL && after[i] == MPI_REQUEST_NULL)
            tokens += held_complete_request(s->before[i]);
        else if (after[i] != MPI_REQUEST_NULL) /* a completed persistent send is left inactive */
            tokens += persistent_settle(after[i]);
    give_back(tokens);
    if (s->before != s->stack)
        free(s->before);
}

int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    if (held.live == 0)
        return PMPI_Wait(request, status);
    snapshot s;
    take_snapshot(&s, 1, request);
    int rc, flag = 0;
    while ((rc = PMPI_Test(request, &flag, status)) == MPI_SUCCESS && !flag)
        between_tests();
    settle(&s, 1, request);
    return rc;
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    if (held.live == 0)
        return PMPI_Test(request, flag, status);
    snapshot s;
    take_snapshot(&s, 1, request);
    int rc = PMPI_Test(request, flag, status);
    settle(&s, 1, request);
    return rc;
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[])
{
    if (held.live == 0)
        return PMPI_Waitall(count, requests, statuses);
    snapshot s;
    take_snapshot(&s, count, requests);
    int rc, flag = 0;
    while ((rc = PMPI_Testall(count, requests, &flag, statuses)) == MPI_SUCCESS && !flag)
        between_tests();
    settle(&s, count, requests);
    return rc;
}

int MPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[])
{
    if (held.live == 0)
        return PMPI_Testall(count, requests, flag, statuses);
    snapshot s;
    take_snapshot(&s, count, requests);
    int rc = PMPI_Testall(count, requests, flag, statuses);
    settle(&s, count, requests);
    return rc;
}

int MPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status)
{
    if (held.live == 0)
        return PMPI_Waitany(count, requests, index, status);
    snapshot s;
    take_snapshot(&s, count, requests);
    int rc, flag = 0;
    while ((rc = PMPI_Testany(count, requests, index, &flag, status)) == MPI_SUCCESS && !flag)
        between_tests();
    settle(&s, count, requests);
    return rc;
}

int MPI_Testany(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status)
{
    if (held.live == 0)
        return PMPI_Testany(count, requests, index, flag, status);
    snapshot s;
    take_snapshot(&s, count, requests);
    int rc = PMPI_Testany(count, requests, index, flag, status);
    settle(&s, count, requests);
    return rc;
}

int MPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                 MPI_Status statuses[])
{
    if (held.live == 0)
        return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
    snapshot s;
    take_snapshot(&s, incount, requests);
    int rc;
    while ((rc = PMPI_Testsome(incount, requests, outcount, indices, statuses)) == MPI_SUCCESS &&
           *outcount == 0)
        between_tests();
    settle(&s, incount, requests);
    return rc;
}

int MPI_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                 MPI_Status statuses[])
{
    if (held.live == 0)
        return PMPI_Testsome(incount, requests, outcount, indices, statuses);
    snapshot s;
    take_snapshot(&s, incount, requests);
    int rc = PMPI_Testsome(incount, requests, outcount, indices, statuses);
    settle(&s, incount, requests);
    return rc;
}
