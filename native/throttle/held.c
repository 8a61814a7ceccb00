/* The ring of token-holding operations (see held.h). */
#include "held.h"

#include <stdio.h>
#include <stdlib.h>

held_ops held = {NULL, 0, 0, 0, 0};

static held_op *at(size_t i)
{
    return &held.ops[i & (held.cap - 1)];
}

static void drop_dead_front(void)
{
    while (held.head != held.tail && at(held.head)->tokens == 0)
        held.head++;
}

/* Copy the live entries into a ring of new_cap entries, oldest first. */
static void rebuild(size_t new_cap)
{
    held_op *ops = malloc(new_cap * sizeof *ops);
    if (!ops) {
        fprintf(stderr, "contend-throttle: out of memory for %zu held operations\n", new_cap);
        abort();
    }
    size_t n = 0;
    for (size_t i = held.head; i != held.tail; i++)
        if (at(i)->tokens > 0)
            ops[n++] = *at(i);
    free(held.ops);
    held.ops = ops;
    held.cap = new_cap;
    held.head = 0;
    held.tail = n;
}

void held_add(held_op op)
{
    size_t used = held.tail - held.head;
    if (used == held.cap) {
        size_t cap = held.cap ? held.cap : 64;
        rebuild(held.live * 2 >= used ? cap * 2 : cap); /* grow, or compact when mostly dead */
    }
    *at(held.tail++) = op;
    held.live++;
}

static int32_t release(held_op *op)
{
    int32_t tokens = op->tokens;
    op->tokens = 0;
    held.live--;
    return tokens;
}

int32_t held_complete_request(MPI_Request req)
{
    for (size_t i = held.head; i != held.tail; i++) {
        held_op *op = at(i);
        if (op->tokens > 0 && op->req == req) {
            int32_t tokens = release(op);
            drop_dead_front();
            return tokens;
        }
    }
    return 0;
}

static int32_t release_window(MPI_Win win, int target)
{
    int32_t tokens = 0;
    for (size_t i = held.head; i != held.tail; i++) {
        held_op *op = at(i);
        if (op->tokens > 0 && op->win == win && (target == MPI_ANY_SOURCE || op->target == target))
            tokens += release(op);
    }
    return tokens;
}

int32_t held_complete_window(MPI_Win win, int target)
{
    int32_t tokens = release_window(win, target);
    drop_dead_front();
    return tokens;
}

static int32_t poll_held(int windows)
{
    int32_t tokens = 0;
    for (size_t i = held.head; i != held.tail; i++) {
        held_op *op = at(i);
        if (op->tokens == 0)
            continue;
        if (op->req != MPI_REQUEST_NULL) {
            int done = 0;
            PMPI_Request_get_status(op->req, &done, MPI_STATUS_IGNORE);
            if (done)
                tokens += release(op);
        } else if (windows) {
            PMPI_Win_flush_local(op->target, op->win); /* completes all ops to that target */
            tokens += release_window(op->win, op->target);
        }
    }
    drop_dead_front();
    return tokens;
}

int32_t held_poll(void)
{
    return poll_held(1);
}

int32_t held_poll_requests(void)
{
    return poll_held(0);
}

int32_t held_release_all(void)
{
    int32_t tokens = 0;
    for (size_t i = held.head; i != held.tail; i++)
        if (at(i)->tokens > 0)
            tokens += release(at(i));
    held.head = held.tail;
    return tokens;
}
