/* The proxy policy: server slots that drain the node's per-task queues round robin (see proxy.h).
 *
 * What MPI lets a server do for another task, and so the design:
 * - A request (MPI_Isend, MPI_Rput, ...) belongs to the process that made it: only that process can
 *   wait for it, test it or free it. A send issued by another rank would also arrive with that rank as
 *   its source and on its communicator. So every two-sided operation, and every one-sided operation
 *   with a request (MPI_Rput, MPI_Rget), is issued by its owner: inline. The proxy still schedules it:
 *   its ticket joins the owner's queue in the node's shared segment, a server slot is handed to it in
 *   the node's round robin, the owner injects it holding that slot and gives the slot back when the
 *   injecting call returns. So at most `servers` operations of the node inject at once, and a task's
 *   burst waits behind one operation of every other task that has one queued, as in the seed's Proxy.
 *   The uncongested case skips the queue (a direct take): when no queue of the node has anything
 *   waiting, an inline operation takes a free slot with one compare-and-swap. Nobody waits then, so
 *   nobody is overtaken. The rule that keeps a queued task from starving behind a stream of direct
 *   takers: a direct take must first see nothing pending, and that load and the increment of pending
 *   by which a descriptor is queued are sequentially consistent. So once a ticket is queued no direct
 *   take starts until it is dispatched: it waits at most for the direct takes already under way (one
 *   per other task of the node) and the round robin (at most one dispatch per other queue), as before.
 *   Checked: a direct take that finds something pending once it has its slot counts itself in the
 *   node's overtakes; the overtakes between a ticket's queueing and its grant can only be takes that
 *   checked before it was queued, so a ticket sees at most one per other task (max_overtaken in the
 *   counters).
 * - A one-sided operation without a request names a window, a target and a displacement. Another rank
 *   S of the window's group can issue it, if (1) S has an access epoch to the target that does not
 *   conflict with the program's synchronisation, (2) the origin data is in memory S can read, and
 *   (3) the owner's flush, unlock and free do not return before the operation is complete.
 *   (1) Window handles are local to a process and the program's epochs are the owner's, not S's. So
 *   each window the program creates (MPI_Win_create, _allocate, _allocate_shared) gets a shadow: a
 *   second window over the same memory, made in the same collective call, on which every member holds
 *   a passive lock_all epoch (MPI_MODE_NOCHECK) from creation to MPI_Win_free. Servers issue on the
 *   shadow. That is legal only where the program's own epoch could not conflict with another lock:
 *   the owner must be in a passive-target epoch that it opened with MPI_MODE_NOCHECK (lock_all, or
 *   lock of that target), by which the program asserts that no process holds or asks for a
 *   conflicting lock meanwhile. Without that assertion an MPI lock may be granted lazily, after the
 *   lock call has returned, and an operation on the shadow could land inside another origin's
 *   exclusive epoch; in fence and post/start/complete/wait epochs it could land before the target
 *   opened its exposure epoch. All those are issued inline.
 *   Accumulates are issued inline too: MPI orders a task's accumulates to one location and makes them
 *   atomic per window, neither of which holds across two windows or two issuing processes.
 *   (2) A Put's origin data is copied into the owner's staging area in the segment when it is queued
 *   (the copy is counted: staged_bytes, copy_ns); a Get lands in the staging area and the owner copies
 *   it into its buffer when it retires the operation, at the latest in the completion call. The
 *   datatypes must be one predefined type on both sides with the same count (a derived datatype handle
 *   means nothing in another process), and the data at most MAX_STAGED bytes; others go inline.
 *   (3) A server completes every operation it issues (MPI_Win_flush on the shadow) before it takes
 *   the next, so it never leaves one in flight; the owner's flush, flush_local, unlock (one or all)
 *   and MPI_Win_free first wait until all its queued operations are done, serving the queues itself
 *   when a slot is free, and MPI_Finalize too.
 *   Overlapping windows are allowed by MPI, which defines the outcome as long as no two accesses
 *   conflict; since a proxied operation is complete before the owner's next synchronisation returns,
 *   any access the program orders after that synchronisation sees it, as it would on the window.
 * - Who serves: like the seed's design, the tasks themselves, whenever they are in the library
 *   (queuing, waiting for a slot, completing): a task that finds a slot free takes it and serves the
 *   queues round robin from where the last dispatch left off, one operation per queue per turn, at
 *   most TURN operations, then lets the slot go; when the next queue's head is a ticket it hands its
 *   slot to that ticket's owner. The node's last server to let go while operations still wait serves
 *   on, so a queued Put does not wait for a task to enter the library again. A server issues only for
 *   windows it is a member of; the owner always is, so its queue never waits for a server that cannot
 *   come (at the latest, the owner issues it in its next completing call).
 * - Tokens behind the servers (optional): whoever injects (the server, or the owner holding the slot
 *   handed to it) takes the operation's tokens from the node's pool before injecting, first come first
 *   served, holding the slot meanwhile (the servers wait, as in the engine); a proxied operation gives
 *   them back when its server's flush returns, an inline one when it completes (held.h).
 * - A stall escape, as for tokens: a ticket that sees no slot come back for stall_ms (programs whose
 *   slot holders block, waiting for this very task) injects without a slot, counted in escapes.
 * Errors a server meets on the shadow are fatal (the shadow keeps MPI_ERRORS_ARE_FATAL): an operation
 * that could fail visibly (a target outside the group) is issued inline. */
#include "proxy.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admit.h"
#include "clock.h"
#include "throttle.h"

#define QUEUE 256                  /* descriptors per task (a power of two) */
#define STAGING (UINT64_C(1) << 20) /* bytes of staging per task */
#define MAX_STAGED (STAGING / 8)   /* a larger Put or Get is issued inline */
#define TURN 64                    /* operations one server turn issues at most */

enum { D_EMPTY, D_QUEUED, D_TAKEN, D_GRANTED, D_DONE };
enum { K_TICKET = 1, K_PUT, K_GET };

typedef struct {
    _Atomic uint32_t state;
    uint32_t kind;
    int32_t server;           /* the slot that took it; -1: the stall escape */
    int32_t target;
    int32_t type;             /* index in known_type() */
    uint64_t window, group;   /* the window's id and its group's fingerprint */
    int64_t disp, count;
    uint64_t offset, bytes;   /* in the owner's staging area */
    int64_t queued_ns, waited_ns;
    int64_t overtakes;        /* a ticket: the node's overtakes when it was granted */
} desc;

typedef struct {
    _Alignas(64) _Atomic uint64_t tail; /* written by the owner: descriptors queued so far */
    _Atomic uint64_t served;            /* under the node lock: descriptors taken so far */
    desc ring[QUEUE];
} task_queue;

typedef struct {
    _Alignas(64) _Atomic uint32_t lock;
    uint32_t next;                      /* under the lock: the queue the next dispatch looks at first */
    _Atomic uint64_t busy;              /* bit s: slot s taken */
    _Atomic uint64_t releases;          /* slots given back so far (the stall escape watches it) */
    _Atomic int64_t pending;            /* queued and not yet taken */
    _Atomic int64_t overtakes;          /* direct takes that found something pending once they had a slot */
    _Atomic int32_t injecting;          /* operations of the node injecting or in flight on a server */
    _Atomic int32_t max_injecting;
    _Atomic int64_t dispatches[PROXY_MAX_SERVERS];
} node_head;

#define HEAD_BYTES ((sizeof(node_head) + 63) / 64 * 64)

/* A window the program created, with its shadow, and the targets it holds NOCHECK locks on. */
typedef struct {
    MPI_Win win, shadow;
    uint64_t id, group;
    int size;                 /* of the window's group */
    int all;                  /* in a lock_all epoch opened with MPI_MODE_NOCHECK */
    int *targets, ntargets, cap;
} window;

static struct {
    MPI_Comm node;
    int local, ntasks;
    node_head *head;
    task_queue *queues, *mine;
    unsigned char *staging, *my_staging;
    window *windows;
    int nwindows, windows_cap;
    uint64_t next_window_id;
    uint64_t retired;               /* own descriptors retired */
    uint64_t stage_head, stage_tail; /* own staging ring, as running byte counts */
    void *get_to[QUEUE];            /* a Get's buffer */
    uint64_t stage_end[QUEUE];      /* stage_head after each descriptor */
    desc *ticket;                   /* this task's ticket, from queued until its injection returns */
    int taken;                      /* the slot taken directly, until the injection returns; -1: none */
    int64_t direct_by_slot[PROXY_MAX_SERVERS]; /* direct takes: added to the node's dispatches at the end */
    int64_t proxied, inline_ops, direct, served, served_others, handed, queued, queue_wait_ns,
        max_queue_wait_ns, staged_bytes, copy_ns, escapes, max_overtaken;
} px = {.node = MPI_COMM_NULL, .taken = -1};

/* Predefined datatypes that mean the same in every process (a handle is looked up, not shipped). */
static MPI_Datatype known_type(int i)
{
    const MPI_Datatype types[] = {
        MPI_BYTE, MPI_CHAR, MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR, MPI_SHORT, MPI_UNSIGNED_SHORT,
        MPI_INT, MPI_UNSIGNED, MPI_LONG, MPI_UNSIGNED_LONG, MPI_LONG_LONG, MPI_UNSIGNED_LONG_LONG,
        MPI_FLOAT, MPI_DOUBLE, MPI_INT8_T, MPI_INT16_T, MPI_INT32_T, MPI_INT64_T, MPI_UINT8_T,
        MPI_UINT16_T, MPI_UINT32_T, MPI_UINT64_T, MPI_DATATYPE_NULL};
    return types[i];
}

static int type_index(MPI_Datatype t)
{
    for (int i = 0; known_type(i) != MPI_DATATYPE_NULL; i++)
        if (known_type(i) == t)
            return i;
    return -1;
}

static uint64_t fnv(uint64_t h, const void *data, size_t n)
{
    for (const unsigned char *c = data; n--; c++)
        h = (h ^ *c) * UINT64_C(1099511628211);
    return h;
}

#define FNV_START UINT64_C(14695981039346656037)

/* --- the node's area ------------------------------------------------------------------------- */

static size_t area_bytes(int ntasks)
{
    return HEAD_BYTES + (size_t)ntasks * (sizeof(task_queue) + STAGING);
}

size_t proxy_prepare(void)
{
    /* Ranks with the same node name share a segment; a hash collision only merges two nodes' lists
     * of queues (each node uses its own ranks' queues), it never mixes their segments. */
    uint64_t h = fnv(FNV_START, throttle.node, strlen(throttle.node));
    PMPI_Comm_split(MPI_COMM_WORLD, (int)(h & 0x7fffffff), throttle.rank, &px.node);
    PMPI_Comm_rank(px.node, &px.local);
    PMPI_Comm_size(px.node, &px.ntasks);
    return area_bytes(px.ntasks);
}

void proxy_attach(void)
{
    unsigned char *area = (unsigned char *)throttle.seg + sizeof(segment);
    px.head = (node_head *)area;
    px.queues = (task_queue *)(area + HEAD_BYTES);
    px.mine = &px.queues[px.local];
    px.staging = (unsigned char *)(px.queues + px.ntasks);
    px.my_staging = px.staging + (size_t)px.local * STAGING;
}

static void lock_node(void)
{
    while (atomic_exchange_explicit(&px.head->lock, 1, memory_order_acquire))
        sched_yield();
}

static void unlock_node(void)
{
    atomic_store_explicit(&px.head->lock, 0, memory_order_release);
}

/* The lowest free slot, taken; -1 if all are taken. Only bits below servers are ever set, so the
 * lowest clear bit is a free slot when it is below servers (no popcount: a library call without
 * -mpopcnt). */
static int take_slot(void)
{
    node_head *h = px.head;
    uint64_t b = atomic_load_explicit(&h->busy, memory_order_relaxed);
    for (;;) {
        int s = ~b ? __builtin_ctzll(~b) : PROXY_MAX_SERVERS;
        if (s >= throttle.cfg.servers)
            return -1;
        if (atomic_compare_exchange_weak_explicit(&h->busy, &b, b | UINT64_C(1) << s,
                                                  memory_order_acquire, memory_order_relaxed))
            return s;
    }
}

/* Returns 1 if no other slot was taken (this was the node's last server). Only tickets waiting in a
 * queue watch the releases (their stall escape), so with nothing pending the count is skipped: the
 * release and the load of pending are sequentially consistent, as is publish's increment, so a ticket
 * queued before that load sees the release counted, and one queued after it finds the slot free. */
static int give_slot(int s)
{
    if (s < 0)
        return 0;
    uint64_t mine = UINT64_C(1) << s;
    uint64_t before = atomic_fetch_and_explicit(&px.head->busy, ~mine, memory_order_seq_cst);
    if (atomic_load_explicit(&px.head->pending, memory_order_seq_cst) != 0)
        atomic_fetch_add_explicit(&px.head->releases, 1, memory_order_relaxed);
    return before == mine;
}

static void start_injecting(void)
{
    node_head *h = px.head;
    int32_t n = atomic_fetch_add_explicit(&h->injecting, 1, memory_order_acq_rel) + 1;
    int32_t m = atomic_load_explicit(&h->max_injecting, memory_order_relaxed);
    while (n > m && !atomic_compare_exchange_weak_explicit(&h->max_injecting, &m, n,
                                                           memory_order_relaxed, memory_order_relaxed))
        ;
}

static void stop_injecting(void)
{
    atomic_fetch_sub_explicit(&px.head->injecting, 1, memory_order_acq_rel);
}

/* --- windows --------------------------------------------------------------------------------- */

static window *window_of(MPI_Win win)
{
    for (int i = 0; i < px.nwindows; i++)
        if (px.windows[i].win == win)
            return &px.windows[i];
    return NULL;
}

static window *window_by_id(uint64_t id, uint64_t group)
{
    for (int i = 0; i < px.nwindows; i++)
        if (px.windows[i].id == id && px.windows[i].group == group)
            return &px.windows[i];
    return NULL;
}

static void *grown(void *p, int *cap, size_t item)
{
    *cap = *cap ? *cap * 2 : 4;
    void *q = realloc(p, (size_t)*cap * item);
    if (!q) {
        fprintf(stderr, "contend-throttle: out of memory for the proxy's windows\n");
        abort();
    }
    return q;
}

/* The world ranks of comm's group, hashed: members of one window agree on it. */
static uint64_t group_print(MPI_Comm comm)
{
    MPI_Group group, world;
    int n;
    PMPI_Comm_group(comm, &group);
    PMPI_Comm_group(MPI_COMM_WORLD, &world);
    PMPI_Group_size(group, &n);
    int *in = malloc(sizeof(int) * (size_t)n), *out = malloc(sizeof(int) * (size_t)n);
    if (!in || !out) {
        fprintf(stderr, "contend-throttle: out of memory for a window's group\n");
        abort();
    }
    for (int i = 0; i < n; i++)
        in[i] = i;
    PMPI_Group_translate_ranks(group, n, in, world, out);
    uint64_t h = fnv(FNV_START, out, sizeof(int) * (size_t)n);
    free(in), free(out);
    PMPI_Group_free(&group);
    PMPI_Group_free(&world);
    return h;
}

/* Collective over comm, inside the call that created win: its shadow and its id. The id is the
 * largest next id of the members, so no member has two windows with one id. */
static void add_shadow(MPI_Win win, void *base, MPI_Aint size, MPI_Aint disp_unit, MPI_Comm comm)
{
    if (px.nwindows == px.windows_cap)
        px.windows = grown(px.windows, &px.windows_cap, sizeof *px.windows);
    window *w = &px.windows[px.nwindows++];
    memset(w, 0, sizeof *w);
    w->win = win;
    uint64_t id;
    PMPI_Allreduce(&px.next_window_id, &id, 1, MPI_UINT64_T, MPI_MAX, comm);
    px.next_window_id = id + 1;
    w->id = id;
    w->group = group_print(comm);
    PMPI_Comm_size(comm, &w->size);
#if MPI_VERSION > 4 || (MPI_VERSION == 4 && MPI_SUBVERSION >= 1)
    PMPI_Win_create_c(base, size, disp_unit, MPI_INFO_NULL, comm, &w->shadow);
#else
    PMPI_Win_create(base, size, (int)disp_unit, MPI_INFO_NULL, comm, &w->shadow);
#endif
    PMPI_Win_lock_all(MPI_MODE_NOCHECK, w->shadow);
}

int MPI_Win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                   MPI_Win *win)
{
    int rc = PMPI_Win_create(base, size, disp_unit, info, comm, win);
    if (rc == MPI_SUCCESS && proxying())
        add_shadow(*win, base, size, disp_unit, comm);
    return rc;
}

int MPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr,
                     MPI_Win *win)
{
    int rc = PMPI_Win_allocate(size, disp_unit, info, comm, baseptr, win);
    if (rc == MPI_SUCCESS && proxying())
        add_shadow(*win, *(void **)baseptr, size, disp_unit, comm);
    return rc;
}

int MPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                            void *baseptr, MPI_Win *win)
{
    int rc = PMPI_Win_allocate_shared(size, disp_unit, info, comm, baseptr, win);
    if (rc == MPI_SUCCESS && proxying())
        add_shadow(*win, *(void **)baseptr, size, disp_unit, comm);
    return rc;
}

#if MPI_VERSION > 4 || (MPI_VERSION == 4 && MPI_SUBVERSION >= 1)
int MPI_Win_create_c(void *base, MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm,
                     MPI_Win *win)
{
    int rc = PMPI_Win_create_c(base, size, disp_unit, info, comm, win);
    if (rc == MPI_SUCCESS && proxying())
        add_shadow(*win, base, size, disp_unit, comm);
    return rc;
}

int MPI_Win_allocate_c(MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm,
                       void *baseptr, MPI_Win *win)
{
    int rc = PMPI_Win_allocate_c(size, disp_unit, info, comm, baseptr, win);
    if (rc == MPI_SUCCESS && proxying())
        add_shadow(*win, *(void **)baseptr, size, disp_unit, comm);
    return rc;
}

int MPI_Win_allocate_shared_c(MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm,
                              void *baseptr, MPI_Win *win)
{
    int rc = PMPI_Win_allocate_shared_c(size, disp_unit, info, comm, baseptr, win);
    if (rc == MPI_SUCCESS && proxying())
        add_shadow(*win, *(void **)baseptr, size, disp_unit, comm);
    return rc;
}
#endif

void proxy_lock(MPI_Win win, int target, int assert)
{
    window *w = window_of(win);
    if (!w || !(assert & MPI_MODE_NOCHECK))
        return;
    if (w->ntargets == w->cap)
        w->targets = grown(w->targets, &w->cap, sizeof *w->targets);
    w->targets[w->ntargets++] = target;
}

void proxy_lock_all(MPI_Win win, int assert)
{
    window *w = window_of(win);
    if (w && (assert & MPI_MODE_NOCHECK))
        w->all = 1;
}

void proxy_unlock(MPI_Win win, int target)
{
    window *w = window_of(win);
    for (int i = 0; w && i < w->ntargets; i++)
        if (w->targets[i] == target) {
            w->targets[i] = w->targets[--w->ntargets];
            return;
        }
}

void proxy_unlock_all(MPI_Win win)
{
    window *w = window_of(win);
    if (w)
        w->all = 0;
}

/* The window, when an operation on it to target may be issued by a server (see the top). */
static window *proxiable(MPI_Win win, int target)
{
    window *w = window_of(win);
    if (!w || target < 0 || target >= w->size)
        return NULL;
    if (w->all)
        return w;
    for (int i = 0; i < w->ntargets; i++)
        if (w->targets[i] == target)
            return w;
    return NULL;
}

/* --- queues ---------------------------------------------------------------------------------- */

static void retire(void);
static int serve_if_free(void);
static void issue(desc *d, int owner, int slot);

/* Under the node lock: descriptor d is taken by server (-1: the stall escape). The node's overtakes
 * are read before pending drops (sequentially consistent, see the top). */
static void take_descriptor(desc *d, int server)
{
    d->server = server;
    d->waited_ns = now_ns() - d->queued_ns;
    if (d->kind == K_TICKET)
        d->overtakes = atomic_load_explicit(&px.head->overtakes, memory_order_seq_cst);
    atomic_store_explicit(&d->state, d->kind == K_TICKET ? D_GRANTED : D_TAKEN, memory_order_release);
    atomic_fetch_sub_explicit(&px.head->pending, 1, memory_order_seq_cst);
}

/* Take this task's own descriptors from the first not yet taken through index last, without a slot
 * (the stall escape), and issue the proxied ones. */
static void escape_through(uint64_t last)
{
    task_queue *q = px.mine;
    uint64_t first, end = last + 1;
    lock_node();
    first = atomic_load_explicit(&q->served, memory_order_relaxed);
    for (uint64_t i = first; i < end; i++)
        take_descriptor(&q->ring[i % QUEUE], -1);
    if (end > first)
        atomic_store_explicit(&q->served, end, memory_order_relaxed);
    unlock_node();
    for (uint64_t i = first; i < end; i++)
        if (q->ring[i % QUEUE].kind != K_TICKET)
            issue(&q->ring[i % QUEUE], px.local, -1);
    px.escapes += end > first;
}

/* Wait, serving and retiring, until done(): if no slot comes back for stall_ms, this task's own
 * queued descriptors through `last` go by the escape. */
static void wait_until(int (*done)(uint64_t), uint64_t arg, uint64_t last)
{
    int64_t start = now_ns(), quiet_since = start, stall_ns = throttle.cfg.stall_ms * 1000000;
    uint64_t releases = atomic_load_explicit(&px.head->releases, memory_order_relaxed);
    for (;;) {
        retire();
        if (done(arg))
            return;
        serve_if_free();
        retire();
        if (done(arg))
            return;
        int64_t t = now_ns();
        uint64_t r = atomic_load_explicit(&px.head->releases, memory_order_relaxed);
        if (r != releases) {
            releases = r;
            quiet_since = t;
        } else if (t - quiet_since > stall_ns) {
            escape_through(last);
            quiet_since = t;
        }
        waiting_turn(t - start);
    }
}

static int queue_has_room(uint64_t unused)
{
    (void)unused;
    return atomic_load_explicit(&px.mine->tail, memory_order_relaxed) - px.retired < QUEUE;
}

static int staging_has(uint64_t bytes)
{
    uint64_t at = px.stage_head % STAGING, skip = at + bytes > STAGING ? STAGING - at : 0;
    return px.stage_head + skip + bytes - px.stage_tail <= STAGING;
}

/* Room for bytes in this task's staging area; its offset. */
static uint64_t stage(uint64_t bytes)
{
    uint64_t tail = atomic_load_explicit(&px.mine->tail, memory_order_relaxed);
    if (!staging_has(bytes))
        wait_until(staging_has, bytes, tail - 1);
    uint64_t at = px.stage_head % STAGING;
    if (at + bytes > STAGING)
        px.stage_head += STAGING - at;
    uint64_t offset = px.stage_head % STAGING;
    px.stage_head += bytes;
    return offset;
}

/* The next descriptor of this task's queue, once it is free. */
static desc *reserve(void)
{
    uint64_t tail = atomic_load_explicit(&px.mine->tail, memory_order_relaxed);
    if (!queue_has_room(0))
        wait_until(queue_has_room, 0, tail - 1);
    desc *d = &px.mine->ring[tail % QUEUE];
    memset((char *)d + sizeof d->state, 0, sizeof *d - sizeof d->state);
    return d;
}

static uint64_t publish(desc *d)
{
    uint64_t index = atomic_load_explicit(&px.mine->tail, memory_order_relaxed);
    px.stage_end[index % QUEUE] = px.stage_head;
    d->queued_ns = now_ns();
    atomic_store_explicit(&d->state, D_QUEUED, memory_order_release);
    atomic_store_explicit(&px.mine->tail, index + 1, memory_order_release);
    atomic_fetch_add_explicit(&px.head->pending, 1, memory_order_seq_cst); /* stops direct takes (top) */
    return index;
}

static void note_wait(int64_t ns)
{
    px.queued++;
    px.queue_wait_ns += ns;
    if (ns > px.max_queue_wait_ns)
        px.max_queue_wait_ns = ns;
}

/* Own descriptors done, oldest first: a Get's data goes to the program's buffer, staging is freed. */
static void retire(void)
{
    task_queue *q = px.mine;
    uint64_t served = atomic_load_explicit(&q->served, memory_order_acquire);
    while (px.retired < served) {
        desc *d = &q->ring[px.retired % QUEUE];
        if (atomic_load_explicit(&d->state, memory_order_acquire) != D_DONE)
            break;
        if (d->kind == K_GET && d->bytes) {
            int64_t t = now_ns();
            memcpy(px.get_to[px.retired % QUEUE], px.my_staging + d->offset, d->bytes);
            px.copy_ns += now_ns() - t;
        }
        if (d->kind != K_TICKET)
            note_wait(d->waited_ns);
        px.stage_tail = px.stage_end[px.retired % QUEUE];
        px.retired++;
    }
}

/* Under the node lock: the next descriptor this server may take, round robin over the queues from
 * where the last dispatch left off; NULL if none. */
static desc *take_next(int slot, int *owner)
{
    node_head *h = px.head;
    for (int step = 0; step < px.ntasks; step++) {
        int t = (int)((h->next + (uint32_t)step) % (uint32_t)px.ntasks);
        task_queue *q = &px.queues[t];
        uint64_t served = atomic_load_explicit(&q->served, memory_order_relaxed);
        if (served == atomic_load_explicit(&q->tail, memory_order_acquire))
            continue;
        desc *d = &q->ring[served % QUEUE];
        if (d->kind != K_TICKET && !window_by_id(d->window, d->group))
            continue; /* not a member of its window: its owner, or another member, serves it */
        take_descriptor(d, slot);
        atomic_store_explicit(&q->served, served + 1, memory_order_release);
        h->next = (uint32_t)(t + 1) % (uint32_t)px.ntasks;
        *owner = t;
        atomic_fetch_add_explicit(&h->dispatches[slot], 1, memory_order_relaxed);
        return d;
    }
    return NULL;
}

/* A Put or Get for its owner, on the shadow, complete before it returns. */
static void issue(desc *d, int owner, int slot)
{
    window *w = window_by_id(d->window, d->group);
    MPI_Datatype type = known_type(d->type);
    int32_t tokens = throttle.cfg.tokens ? admit_tokens(d->count, type) : 0;
    void *buf = px.staging + (size_t)owner * STAGING + d->offset;
    start_injecting();
    if (d->kind == K_PUT)
        PMPI_Put(buf, (int)d->count, type, d->target, d->disp, (int)d->count, type, w->shadow);
    else
        PMPI_Get(buf, (int)d->count, type, d->target, d->disp, (int)d->count, type, w->shadow);
    PMPI_Win_flush(d->target, w->shadow);
    stop_injecting();
    give_back(tokens);
    (void)slot;
    px.served++;
    px.served_others += owner != px.local;
    atomic_store_explicit(&d->state, D_DONE, memory_order_release);
}

static int own_ticket_granted(void)
{
    return px.ticket && atomic_load_explicit(&px.ticket->state, memory_order_acquire) == D_GRANTED;
}

/* Turns as server on slot: returns 1 if the slot went to a ticket (it stays taken), else 0. A turn
 * ends after TURN operations, or early when another server has handed this task's own ticket a slot.
 * The node's last server to let go while operations wait takes another turn (if it could serve one in
 * this turn): queued Puts and Gets must not wait for a task to enter the library again. */
static int serve(int slot)
{
    for (;;) {
        int issued = 0;
        for (int turn = 0; turn < TURN; turn++) {
            if (atomic_load_explicit(&px.head->pending, memory_order_acquire) == 0 || own_ticket_granted())
                break;
            int owner = -1;
            lock_node();
            desc *d = take_next(slot, &owner);
            unlock_node();
            if (!d)
                break;
            if (d->kind == K_TICKET) {
                px.handed += owner != px.local;
                return 1;
            }
            issue(d, owner, slot);
            issued++;
        }
        if (!give_slot(slot) || issued < TURN ||
            atomic_load_explicit(&px.head->pending, memory_order_acquire) == 0 || own_ticket_granted() ||
            (slot = take_slot()) < 0)
            return 0;
    }
}

static int serve_if_free(void)
{
    if (atomic_load_explicit(&px.head->pending, memory_order_acquire) == 0)
        return 0;
    int slot = take_slot();
    return slot >= 0 ? serve(slot) : 0;
}

/* --- the calls ------------------------------------------------------------------------------- */

static int ticket_granted(uint64_t index)
{
    return atomic_load_explicit(&px.mine->ring[index % QUEUE].state, memory_order_acquire) ==
           D_GRANTED;
}

/* The direct take (see the top): a free slot, if nothing of the node is pending. */
static int take_directly(void)
{
    if (atomic_load_explicit(&px.head->pending, memory_order_seq_cst) != 0)
        return 0;
    int slot = take_slot();
    if (slot < 0)
        return 0;
    if (atomic_load_explicit(&px.head->pending, memory_order_seq_cst) != 0)
        atomic_fetch_add_explicit(&px.head->overtakes, 1, memory_order_seq_cst); /* queued meanwhile */
    px.taken = slot;
    px.direct_by_slot[slot]++;
    px.direct++;
    return 1;
}

void proxy_admit(void)
{
    px.inline_ops++;
    if (take_directly()) {
        start_injecting();
        return;
    }
    desc *d = reserve();
    d->kind = K_TICKET;
    uint64_t index = publish(d);
    int64_t overtakes = atomic_load_explicit(&px.head->overtakes, memory_order_seq_cst);
    px.ticket = d;
    if (!ticket_granted(index))
        wait_until(ticket_granted, index, index);
    note_wait(now_ns() - d->queued_ns);
    if (d->overtakes - overtakes > px.max_overtaken)
        px.max_overtaken = d->overtakes - overtakes;
    start_injecting();
}

void proxy_injected(void)
{
    stop_injecting();
    if (px.taken >= 0) {
        give_slot(px.taken);
        px.taken = -1;
    } else {
        desc *d = px.ticket;
        px.ticket = NULL;
        int slot = d->server;
        atomic_store_explicit(&d->state, D_DONE, memory_order_release);
        give_slot(slot);
    }
    retire();
}

/* Queue a Put or Get (kind) for a server, if it may go by one. */
static int queue_one_sided(int kind, void *origin, int64_t origin_count, MPI_Datatype origin_type,
                           int target, MPI_Aint disp, int64_t target_count, MPI_Datatype target_type,
                           MPI_Win win)
{
    window *w = proxiable(win, target);
    int type = type_index(origin_type), size = 0;
    if (!w || type < 0 || origin_type != target_type || origin_count != target_count ||
        origin_count < 0 || disp < 0)
        return -1;
    PMPI_Type_size(origin_type, &size);
    uint64_t bytes = (uint64_t)origin_count * (uint64_t)size;
    if (bytes > MAX_STAGED)
        return -1;
    uint64_t offset = stage(bytes);
    desc *d = reserve();
    d->kind = (uint32_t)kind;
    d->target = target;
    d->type = type;
    d->window = w->id;
    d->group = w->group;
    d->disp = disp;
    d->count = origin_count;
    d->offset = offset;
    d->bytes = bytes;
    uint64_t tail = atomic_load_explicit(&px.mine->tail, memory_order_relaxed);
    if (kind == K_PUT) {
        int64_t t = now_ns();
        memcpy(px.my_staging + offset, origin, bytes);
        px.copy_ns += now_ns() - t;
    } else
        px.get_to[tail % QUEUE] = origin;
    publish(d);
    throttle.stats.ops++;
    throttle.stats.ops_one_sided++;
    px.proxied++;
    px.staged_bytes += (int64_t)bytes;
    serve_if_free(); /* as in the seed: having queued, the task tries to act as a server */
    retire();
    return MPI_SUCCESS;
}

int proxy_put(const void *origin, int64_t origin_count, MPI_Datatype origin_type, int target,
              MPI_Aint disp, int64_t target_count, MPI_Datatype target_type, MPI_Win win)
{
    return queue_one_sided(K_PUT, (void *)origin, origin_count, origin_type, target, disp,
                           target_count, target_type, win);
}

int proxy_get(void *origin, int64_t origin_count, MPI_Datatype origin_type, int target, MPI_Aint disp,
              int64_t target_count, MPI_Datatype target_type, MPI_Win win)
{
    return queue_one_sided(K_GET, origin, origin_count, origin_type, target, disp, target_count,
                           target_type, win);
}

static int all_retired(uint64_t unused)
{
    (void)unused;
    return px.retired == atomic_load_explicit(&px.mine->tail, memory_order_relaxed);
}

static void drain(void)
{
    uint64_t tail = atomic_load_explicit(&px.mine->tail, memory_order_relaxed);
    if (!all_retired(0))
        wait_until(all_retired, 0, tail - 1);
}

void proxy_complete(MPI_Win win)
{
    (void)win; /* all of this task's queued operations: they are few, and it keeps the rule simple */
    if (px.head)
        drain();
}

void proxy_window_free(MPI_Win win)
{
    window *w = window_of(win);
    if (!w)
        return;
    drain();
    PMPI_Win_unlock_all(w->shadow);
    PMPI_Win_free(&w->shadow);
    free(w->targets);
    *w = px.windows[--px.nwindows];
}

void proxy_finish(void)
{
    if (!px.head)
        return;
    drain();
    for (int s = 0; s < throttle.cfg.servers; s++) /* the direct takes, dispatched by their slots */
        atomic_fetch_add_explicit(&px.head->dispatches[s], px.direct_by_slot[s], memory_order_relaxed);
    PMPI_Barrier(px.node); /* nobody serves after this: the node's counters are final */
    if (px.escapes > 0)
        fprintf(stderr, "contend-throttle: rank %d (node %s): %lld proxy waits ended by the stall "
                "escape: no server slot came back for %lld ms, so more than %d operations injected at "
                "once; use more servers or a longer CONTEND_THROTTLE_STALL_MS\n", throttle.rank,
                throttle.node, (long long)px.escapes, (long long)throttle.cfg.stall_ms,
                (int)throttle.cfg.servers);
}

int proxy_stats_json(char *out, size_t len)
{
    if (!px.head)
        return snprintf(out, len, "%s", "");
    char dispatches[PROXY_MAX_SERVERS * 21 + 2];
    size_t n = 0;
    for (int s = 0; s < throttle.cfg.servers; s++)
        n += (size_t)snprintf(dispatches + n, sizeof dispatches - n, "%s%lld", s ? "," : "",
                              (long long)atomic_load(&px.head->dispatches[s]));
    return snprintf(out, len,
        ",\"proxy\":{\"servers\":%d,\"tokens_behind\":%d,\"proxied\":%lld,\"inline\":%lld,"
        "\"direct\":%lld,\"served\":%lld,\"served_others\":%lld,\"handed\":%lld,\"queued\":%lld,"
        "\"queue_wait_ns\":%lld,\"max_queue_wait_ns\":%lld,\"staged_bytes\":%lld,\"copy_ns\":%lld,"
        "\"escapes\":%lld,\"max_overtaken\":%lld,\"node_max_injecting\":%d,\"node_dispatches\":[%s]}",
        (int)throttle.cfg.servers, (int)throttle.cfg.tokens, (long long)px.proxied,
        (long long)px.inline_ops, (long long)px.direct, (long long)px.served,
        (long long)px.served_others, (long long)px.handed, (long long)px.queued, (long long)px.queue_wait_ns,
        (long long)px.max_queue_wait_ns, (long long)px.staged_bytes, (long long)px.copy_ns,
        (long long)px.escapes, (long long)px.max_overtaken, (int)atomic_load(&px.head->max_injecting),
        dispatches);
}
