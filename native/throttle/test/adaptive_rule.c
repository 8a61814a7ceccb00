/* The adaptive rule on a known case, without MPI and with a made-up clock, so that the library's
 * controller (adaptive.c) and the engine's (engine/src/policy/adaptive.rs, the unit test
 * doubles_then_halves_at_the_knee_then_grows_by_one) are checked against the same answer: full rate
 * up to 20 messages in flight, 40% less beyond, every round binding.
 *
 * Prints one JSON line: the limit after each round, and whether a grant ever exceeded the limit. */
#include <stdio.h>

#include "clock.h" /* the real now_ns first, so that adaptive.c's include of it adds nothing */

static int64_t fake_ns = 1000; /* 0 would mean "before the first completion" */

static int64_t fake_now(void)
{
    return fake_ns;
}

#define now_ns fake_now
#include "../adaptive.c"

int main(void)
{
    static token_pool pool;
    static adaptive_state a;
    pool_init(&pool, POOL_MAX_TOKENS);
    adaptive_init(&a, &pool, 1);
    pool_place waiter; /* a task in line for good: every round is binding */
    pool_join(&pool, &waiter);
    adaptive_completed(&a, &pool, 1); /* the first completion starts the first round */
    printf("{\"limits\":[");
    for (int round = 0; round < 10; round++) {
        int32_t limit = atomic_load(&pool.limit);
        int64_t step = limit <= 20 ? 1000 : 1667; /* the Rust test's round(1 / rate) */
        for (int32_t k = 0; k < round_length(limit); k++) {
            fake_ns += step;
            adaptive_completed(&a, &pool, 1);
        }
        printf("%s%d", round ? "," : "", (int)atomic_load(&pool.limit));
    }
    /* The free count follows the limit: with nothing in use, free == limit. */
    printf("],\"free\":%d,\"limit\":%d,\"min\":%d,\"max\":%d,\"adjustments\":%lld}\n", (int)pool_free(&pool),
           (int)atomic_load(&pool.limit), (int)a.min_limit, (int)a.max_limit, (long long)a.adjustments);
    return 0;
}
