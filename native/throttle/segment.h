/* The shared-memory segment that holds one node's token pool for one job.
 *
 * Named after a hash of (job, node): `/contend-throttle-<16 hex digits>` in /dev/shm. The first rank
 * of the node to arrive creates it (shm_open with O_EXCL, so exactly one does) and initialises it;
 * the others attach and wait until it is marked ready. The creator unlinks the name once every rank
 * has attached (the mapping lives on), so nothing is left in /dev/shm, even if the job dies later. */
#ifndef CONTEND_THROTTLE_SEGMENT_H
#define CONTEND_THROTTLE_SEGMENT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "adaptive.h"
#include "pool.h"

#define SEGMENT_JOB_MAX 80
#define SEGMENT_NODE_MAX 256

typedef struct {
    _Atomic uint32_t ready;       /* SEGMENT_READY once initialised */
    uint32_t layout;              /* sizeof(segment): another build of the library cannot attach */
    char job[SEGMENT_JOB_MAX];    /* to tell a hash collision from our own segment */
    char node[SEGMENT_NODE_MAX];
    _Atomic int32_t attached;     /* ranks of the node attached */
    uint64_t bytes;               /* the mapping: this header and the proxy's area behind it (proxy.h) */
    _Alignas(64) token_pool pool; /* on its own cache line: written by every admission */
    _Alignas(64) adaptive_state adaptive; /* the adaptive policy's controller of pool's limit */
} segment;

/* Create or attach the segment of (job, node) with a pool of `tokens` and `extra` bytes behind the
 * header (zeroed; the proxy's area). Sets *created when this task created it (it then unlinks it, see
 * segment_unlink). NULL and a message in why on failure. */
segment *segment_open(const char *job, const char *node, int32_t tokens, size_t extra, int *created,
                      char *why, size_t why_len);

/* Remove the name (attached tasks keep their mapping). */
void segment_unlink(const char *job, const char *node);

void segment_close(segment *s);

#endif
