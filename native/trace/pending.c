/* One-sided operations not yet completed: an array in issue order, allocated once at MPI_Init
 * ($CONTEND_TRACE_PENDING entries). A flush, unlock or fence completes the entries it covers and the
 * array is compacted in the same pass, so its cost is the number of operations outstanding. When it is
 * full a new operation is not followed (F_UNTRACKED, counted). */
#include <stdlib.h>

#include "trace.h"

typedef struct {
    MPI_Win win;
    int target;      /* the rank in the window, as the program named it */
    uint64_t record;
} pending_op;

static pending_op *ops;
static uint64_t cap, count;

int pending_init(uint64_t capacity)
{
    ops = malloc(sizeof(pending_op) * capacity);
    cap = ops ? capacity : 0;
    return ops ? 0 : -1;
}

void pending_add(MPI_Win win, int target, trace_record *r)
{
    if (count >= cap) {
        r->flags |= F_UNTRACKED;
        tracer.untracked++;
        return;
    }
    ops[count++] = (pending_op){.win = win, .target = target, .record = record_index(r)};
}

void pending_complete(MPI_Win win, int target, int64_t now)
{
    uint64_t kept = 0;
    for (uint64_t i = 0; i < count; i++) {
        pending_op *op = &ops[i];
        if (op->win == win && (target == MPI_ANY_SOURCE || op->target == target)) {
            trace_record *r = &tracer.records[op->record];
            if (r->completed < 0)
                r->completed = now;
        } else {
            ops[kept++] = *op;
        }
    }
    count = kept;
}
