/* The token pool's order, tested without MPI: forked processes share one pool in shared memory.
 * One "big" process asks for every token at once, the others for one token each, again and again;
 * each holds its tokens a moment, then gives them back.
 *
 * Checked (exit 1 with the reason when one fails):
 *  - never more tokens in use than the pool has;
 *  - FIFO: sorted by grant number (taken from the pool's own count), the tickets of the processes
 *    that waited in line are granted in increasing order;
 *  - no starvation: while a process waited, at most P - 1 others were served (one per other
 *    process), so the big process is never overtaken by a stream of small ones.
 * For contrast it also runs the same processes greedily (everyone retries pool_try, nobody queues)
 * and prints how many grants the big process then had to watch go by.
 *
 * Output: one JSON line per mode. Usage: throttle-pool-check [processes] [rounds] [tokens] */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <signal.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pool.h"

typedef struct {
    int process;
    int waited;          /* joined the line (FIFO mode) or failed at least one try (greedy) */
    uint64_t ticket;
    uint32_t order;      /* the grant's number in the pool (mod 2^24) */
    uint32_t served_meanwhile;
    int32_t in_use;
} grant_record;

typedef struct {
    token_pool pool;
    _Atomic uint32_t grants;  /* greedy mode: grants made, to count those a waiting process saw */
    _Atomic int big_joined;   /* FIFO mode: the big process has taken its first ticket */
    _Atomic uint64_t logged;
    grant_record log[];
} shared;

static void hold(void)
{
    for (volatile int i = 0; i < 200; i++) {
    }
}

static void fifo_round(shared *s, int32_t n, grant_record *r, int big)
{
    pool_grant g;
    if (pool_try(&s->pool, n, &g)) {
        r->waited = 0;
    } else {
        pool_place place;
        pool_join(&s->pool, &place);
        if (big)
            atomic_store(&s->big_joined, 1);
        while (!pool_turn(&s->pool, &place) || !pool_take(&s->pool, &place, n, 0, &g))
            sched_yield();
        r->waited = 1;
        r->ticket = place.ticket;
        r->order = (place.grants_at_join + g.served_meanwhile + 1) & 0xffffff;
    }
    r->served_meanwhile = g.served_meanwhile;
    r->in_use = g.in_use;
}

static void greedy_round(shared *s, int32_t n, grant_record *r)
{
    pool_grant g;
    uint32_t before = atomic_load(&s->grants);
    r->waited = 0;
    while (!pool_try(&s->pool, n, &g)) {
        r->waited = 1;
        sched_yield();
    }
    r->served_meanwhile = atomic_fetch_add(&s->grants, 1) - before;
    r->in_use = g.in_use;
}

/* FIFO mode starts staged, so that the big process queues at least once however the processes are
 * scheduled (on a busy machine they may otherwise run one after the other and nobody waits):
 * small processes 1..tokens each hold one token until the big one has joined the line, which it
 * does once the pool is empty; the other small processes start after that. */
static void staged_start(shared *s, int id, int32_t tokens)
{
    pool_grant g;
    if (id == 0) {
        while (pool_free(&s->pool) > 0)
            sched_yield();
        return;
    }
    int holder = id <= tokens && pool_try(&s->pool, 1, &g);
    while (!atomic_load(&s->big_joined))
        sched_yield();
    if (holder)
        pool_release(&s->pool, 1);
}

static void run_process(shared *s, int id, int rounds, int32_t tokens, int fifo, int staged)
{
    int32_t n = id == 0 ? tokens : 1;
    if (staged)
        staged_start(s, id, tokens);
    for (int k = 0; k < rounds; k++) {
        grant_record r = {0};
        r.process = id;
        if (fifo)
            fifo_round(s, n, &r, id == 0);
        else
            greedy_round(s, n, &r);
        hold();
        pool_release(&s->pool, n);
        s->log[atomic_fetch_add(&s->logged, 1)] = r;
        if (k % 8 == 0)
            sched_yield();
    }
}

static int by_order(const void *a, const void *b)
{
    const grant_record *x = a, *y = b;
    return (x->order > y->order) - (x->order < y->order);
}

/* Run one mode; returns the number of failed checks. */
static int run_mode(int fifo, int processes, int rounds, int32_t tokens)
{
    size_t total = (size_t)processes * rounds;
    size_t bytes = sizeof(shared) + total * sizeof(grant_record);
    shared *s = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (s == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    pool_init(&s->pool, tokens);
    atomic_init(&s->grants, 0);
    atomic_init(&s->logged, 0);
    atomic_init(&s->big_joined, 0);
    int staged = fifo && processes - 1 >= tokens; /* enough small processes to empty the pool */
    for (int id = 0; id < processes; id++)
        if (fork() == 0) {
            run_process(s, id, rounds, tokens, fifo, staged);
            _exit(0);
        }
    int failures = 0, status;
    while (wait(&status) > 0)
        failures += !WIFEXITED(status) || WEXITSTATUS(status) != 0;

    int32_t max_in_use = 0;
    uint32_t max_served = 0, big_max_served = 0;
    long waited = 0, big_waited = 0;
    grant_record *queued = malloc(total * sizeof *queued);
    size_t nqueued = 0;
    for (size_t i = 0; i < total; i++) {
        grant_record *r = &s->log[i];
        max_in_use = r->in_use > max_in_use ? r->in_use : max_in_use;
        if (!r->waited)
            continue;
        waited++;
        max_served = r->served_meanwhile > max_served ? r->served_meanwhile : max_served;
        if (r->process == 0) {
            big_waited++;
            big_max_served = r->served_meanwhile > big_max_served ? r->served_meanwhile
                                                                  : big_max_served;
        }
        queued[nqueued++] = *r;
    }
    long out_of_order = 0;
    if (fifo) { /* fewer than 2^24 grants in all, so the order number does not wrap */
        qsort(queued, nqueued, sizeof *queued, by_order);
        for (size_t i = 1; i < nqueued; i++)
            out_of_order += queued[i].ticket <= queued[i - 1].ticket;
    }
    printf("{\"mode\":\"%s\",\"processes\":%d,\"rounds\":%d,\"tokens\":%d,\"grants\":%zu,"
           "\"waited\":%ld,\"big_waited\":%ld,\"max_in_use\":%d,\"max_served_meanwhile\":%u,"
           "\"big_max_served_meanwhile\":%u,\"out_of_order\":%ld}\n",
           fifo ? "fifo" : "greedy", processes, rounds, (int)tokens, total, waited, big_waited,
           (int)max_in_use, max_served, big_max_served, out_of_order);
    if (failures)
        fprintf(stderr, "%s: %d processes failed\n", fifo ? "fifo" : "greedy", failures);
    if (max_in_use > tokens) {
        fprintf(stderr, "%s: %d tokens in use, the pool has %d\n", fifo ? "fifo" : "greedy",
                (int)max_in_use, (int)tokens);
        failures++;
    }
    if (fifo && out_of_order) {
        fprintf(stderr, "fifo: %ld grants out of ticket order\n", out_of_order);
        failures++;
    }
    if (fifo && max_served > (uint32_t)(processes - 1)) {
        fprintf(stderr, "fifo: a process waited through %u grants (bound %d)\n", max_served,
                processes - 1);
        failures++;
    }
    free(queued);
    munmap(s, bytes);
    return failures;
}

int main(int argc, char **argv)
{
    int processes = argc > 1 ? atoi(argv[1]) : 6;
    int rounds = argc > 2 ? atoi(argv[2]) : 2000;
    int tokens = argc > 3 ? atoi(argv[3]) : 4;
    if (processes < 2 || processes > 64 || rounds < 1 || rounds > 100000 || tokens < 1 ||
        tokens > POOL_MAX_TOKENS) {
        fprintf(stderr, "usage: throttle-pool-check [processes 2..64] [rounds] [tokens]\n");
        return 2;
    }
    alarm(120); /* a hang is a failure, not a stuck test */
    int failures = run_mode(1, processes, rounds, tokens);
    failures += run_mode(0, processes, rounds, tokens);
    return failures ? 1 : 0;
}
