/* The Wait and Test families complete nonblocking operations. MPI sets a completed request to
 * MPI_REQUEST_NULL, so the rule is the same for all eight calls: keep the requests before the call,
 * and every one that is MPI_REQUEST_NULL after it was completed by it, at the time the call returned
 * (a persistent request becomes inactive instead: one that a call completes in full counts too).
 * A wildcard receive's source and tag come from its status (ours when the program ignores statuses;
 * statuses are read only while such a receive is outstanding, since filling them costs MPI time).
 * Waits are also recorded as regions (the time a rank spent blocked); a Test only when it completed a
 * followed operation (a polling loop's failed Tests would fill the buffer). Every operation a call
 * completes gets that call's record's `returned` as its `completed`, a stamp no other completion shares
 * (completion_stamp()): a converter finds the completing call by equality. The copies live in scratch
 * arrays that grow, rarely, to the largest count seen; nothing is copied while no tracked request is
 * outstanding. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

static MPI_Request *before;
static MPI_Status *statuses_own;
static size_t scratch;

static int grow(size_t n)
{
    if (n <= scratch)
        return 0;
    size_t want = scratch ? scratch : 64;
    while (want < n)
        want *= 2;
    MPI_Request *b = realloc(before, want * sizeof *b);
    if (b)
        before = b;
    MPI_Status *s = realloc(statuses_own, want * sizeof *s);
    if (s)
        statuses_own = s;
    if (!b || !s)
        return -1;
    scratch = want;
    return 0;
}

/* Whether this call must follow its requests; fills `before`. */
static int snapshot(int n, const MPI_Request *requests)
{
    if (!tracer.on || !requests_live() || n <= 0 || grow((size_t)n) != 0)
        return 0;
    memcpy(before, requests, sizeof(MPI_Request) * (size_t)n);
    return 1;
}

/* statuses: MPI_STATUSES_IGNORE (or MPI_STATUS_IGNORE) when not read. Returns how many followed
 * operations it completed. */
static int settle_all(int n, const MPI_Request *after, const MPI_Status *statuses, int64_t now)
{
    int read = statuses != MPI_STATUSES_IGNORE && statuses != MPI_STATUS_IGNORE, done = 0;
    for (int i = 0; i < n; i++)
        if (before[i] != MPI_REQUEST_NULL && (after[i] == MPI_REQUEST_NULL || persistent_is(before[i])))
            done += requests_complete(before[i], read ? &statuses[i] : NULL, now);
    return done;
}

static int settle_some(int outcount, const int *indices, const MPI_Status *statuses, int64_t now)
{
    if (outcount == MPI_UNDEFINED)
        return 0;
    int read = statuses != MPI_STATUSES_IGNORE, done = 0;
    for (int k = 0; k < outcount; k++)
        done += requests_complete(before[indices[k]], read ? &statuses[k] : NULL, now);
    return done;
}

/* A Test that completed followed operations: its record, entered at `entry`, returned at `now`. */
static void test_region(void *site, int64_t entry, int n, int64_t now)
{
    trace_record *t = record_begin(K_TEST, site);
    if (t) {
        t->posted = entry;
        t->bytes = n;
        t->returned = t->completed = now;
    }
}

static const MPI_Status *read_status(const MPI_Status *status)
{
    return status == MPI_STATUS_IGNORE ? NULL : status;
}

static trace_record *wait_region(void *site, int n)
{
    trace_record *w = record_begin(K_WAIT, site);
    if (w)
        w->bytes = n; /* for a wait region: how many requests it was given */
    return w;
}

static void end_region(trace_record *w, int64_t now)
{
    if (w)
        w->returned = w->completed = now;
}

int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    trace_record *w = wait_region(__builtin_return_address(0), 1);
    int follow = snapshot(1, request);
    MPI_Status own;
    if (follow && status == MPI_STATUS_IGNORE && requests_need_status())
        status = &own;
    int rc = PMPI_Wait(request, status);
    int64_t now = completion_stamp();
    end_region(w, now);
    if (follow && rc == MPI_SUCCESS) /* a persistent request stays non-null: settle_all knows it */
        settle_all(1, request, status, now);
    return rc;
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    int follow = snapshot(1, request);
    MPI_Status own;
    if (follow && status == MPI_STATUS_IGNORE && requests_need_status())
        status = &own;
    int64_t entry = follow ? stamp() : 0;
    int rc = PMPI_Test(request, flag, status);
    if (follow && *flag) {
        int64_t now = completion_stamp();
        if (settle_all(1, request, status, now))
            test_region(__builtin_return_address(0), entry, 1, now);
    }
    return rc;
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[])
{
    trace_record *w = wait_region(__builtin_return_address(0), count);
    int follow = snapshot(count, requests);
    if (follow && statuses == MPI_STATUSES_IGNORE && requests_need_status())
        statuses = statuses_own;
    int rc = PMPI_Waitall(count, requests, statuses);
    int64_t now = completion_stamp();
    end_region(w, now);
    if (follow)
        settle_all(count, requests, statuses, now);
    return rc;
}

int MPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[])
{
    int follow = snapshot(count, requests);
    if (follow && statuses == MPI_STATUSES_IGNORE && requests_need_status())
        statuses = statuses_own;
    int64_t entry = follow ? stamp() : 0;
    int rc = PMPI_Testall(count, requests, flag, statuses);
    if (follow && *flag) {
        int64_t now = completion_stamp();
        if (settle_all(count, requests, statuses, now))
            test_region(__builtin_return_address(0), entry, count, now);
    }
    return rc;
}

int MPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status)
{
    trace_record *w = wait_region(__builtin_return_address(0), count);
    int follow = snapshot(count, requests);
    MPI_Status own;
    if (follow && status == MPI_STATUS_IGNORE && requests_need_status())
        status = &own;
    int rc = PMPI_Waitany(count, requests, index, status);
    int64_t now = completion_stamp();
    end_region(w, now);
    if (follow && *index != MPI_UNDEFINED)
        requests_complete(before[*index], read_status(status), now);
    return rc;
}

int MPI_Testany(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status)
{
    int follow = snapshot(count, requests);
    MPI_Status own;
    if (follow && status == MPI_STATUS_IGNORE && requests_need_status())
        status = &own;
    int64_t entry = follow ? stamp() : 0;
    int rc = PMPI_Testany(count, requests, index, flag, status);
    if (follow && *flag && *index != MPI_UNDEFINED) {
        int64_t now = completion_stamp();
        if (requests_complete(before[*index], read_status(status), now))
            test_region(__builtin_return_address(0), entry, count, now);
    }
    return rc;
}

int MPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                 MPI_Status statuses[])
{
    trace_record *w = wait_region(__builtin_return_address(0), incount);
    int follow = snapshot(incount, requests);
    if (follow && statuses == MPI_STATUSES_IGNORE && requests_need_status())
        statuses = statuses_own;
    int rc = PMPI_Waitsome(incount, requests, outcount, indices, statuses);
    int64_t now = completion_stamp();
    end_region(w, now);
    if (follow)
        settle_some(*outcount, indices, statuses, now);
    return rc;
}

int MPI_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                 MPI_Status statuses[])
{
    int follow = snapshot(incount, requests);
    if (follow && statuses == MPI_STATUSES_IGNORE && requests_need_status())
        statuses = statuses_own;
    int64_t entry = follow ? stamp() : 0;
    int rc = PMPI_Testsome(incount, requests, outcount, indices, statuses);
    if (follow && *outcount != MPI_UNDEFINED && *outcount > 0) {
        int64_t now = completion_stamp();
        if (settle_some(*outcount, indices, statuses, now))
            test_region(__builtin_return_address(0), entry, incount, now);
    }
    return rc;
}

/* A freed request is never seen again: its operation's completion stays unknown (F_FREED). */
int MPI_Request_free(MPI_Request *request)
{
    if (tracer.on && requests_live())
        requests_free(*request);
    persistent_forget(*request);
    return PMPI_Request_free(request);
}
