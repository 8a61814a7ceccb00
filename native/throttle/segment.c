/* Create, attach and unlink a node's segment (see segment.h). */
#include "segment.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SEGMENT_READY 0x43544852u /* "CTHR" */
#define ATTACH_TIMEOUT_NS INT64_C(10000000000)

static void segment_name(const char *job, const char *node, char *name, size_t len)
{
    uint64_t h = UINT64_C(14695981039346656037); /* FNV-1a over job, a zero byte, node */
    for (const char *s = job;; s++) {
        h = (h ^ (unsigned char)*s) * UINT64_C(1099511628211);
        if (!*s)
            break;
    }
    for (const char *s = node; *s; s++)
        h = (h ^ (unsigned char)*s) * UINT64_C(1099511628211);
    snprintf(name, len, "/contend-throttle-%016llx", (unsigned long long)h);
}

static int64_t clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void nap(void)
{
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
}

/* Another rank created the name: wait until it has sized the segment, then map it. */
static segment *attach_existing(const char *name, size_t bytes, char *why, size_t why_len)
{
    int fd = shm_open(name, O_RDWR, 0600);
    if (fd < 0) {
        snprintf(why, why_len, "cannot open shared memory %s: %s", name, strerror(errno));
        return NULL;
    }
    int64_t deadline = clock_ns() + ATTACH_TIMEOUT_NS;
    struct stat st;
    while (fstat(fd, &st) == 0 && (size_t)st.st_size < bytes && clock_ns() < deadline)
        nap();
    if ((size_t)st.st_size < bytes) {
        close(fd);
        snprintf(why, why_len, "shared memory %s was never sized by the rank that created it", name);
        return NULL;
    }
    segment *s = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (s == MAP_FAILED) {
        snprintf(why, why_len, "cannot map shared memory %s: %s", name, strerror(errno));
        return NULL;
    }
    while (atomic_load_explicit(&s->ready, memory_order_acquire) != SEGMENT_READY &&
           clock_ns() < deadline)
        nap();
    if (atomic_load_explicit(&s->ready, memory_order_acquire) != SEGMENT_READY) {
        munmap(s, bytes);
        snprintf(why, why_len, "shared memory %s was never initialised by the rank that created it",
                 name);
        return NULL;
    }
    return s;
}

static segment *create(int fd, const char *name, const char *job, const char *node, int32_t tokens,
                       size_t bytes, char *why, size_t why_len)
{
    if (ftruncate(fd, (off_t)bytes) != 0) {
        snprintf(why, why_len, "cannot size shared memory %s: %s", name, strerror(errno));
        close(fd);
        shm_unlink(name);
        return NULL;
    }
    segment *s = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (s == MAP_FAILED) {
        snprintf(why, why_len, "cannot map shared memory %s: %s", name, strerror(errno));
        shm_unlink(name);
        return NULL;
    }
    s->layout = sizeof(segment);
    s->bytes = bytes;
    snprintf(s->job, sizeof s->job, "%s", job);
    snprintf(s->node, sizeof s->node, "%s", node);
    atomic_init(&s->attached, 0);
    pool_init(&s->pool, tokens);
    atomic_store_explicit(&s->ready, SEGMENT_READY, memory_order_release);
    return s;
}

segment *segment_open(const char *job, const char *node, int32_t tokens, size_t extra, int *created,
                      char *why, size_t why_len)
{
    size_t bytes = sizeof(segment) + extra;
    char name[64];
    segment_name(job, node, name, sizeof name);
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    segment *s;
    *created = fd >= 0;
    if (fd >= 0)
        s = create(fd, name, job, node, tokens, bytes, why, why_len);
    else if (errno == EEXIST)
        s = attach_existing(name, bytes, why, why_len);
    else {
        snprintf(why, why_len, "cannot create shared memory %s: %s", name, strerror(errno));
        return NULL;
    }
    if (!s)
        return NULL;
    if (s->layout != sizeof(segment) || strcmp(s->job, job) || strcmp(s->node, node)) {
        snprintf(why, why_len, "shared memory %s belongs to another job or library build", name);
        segment_close(s);
        return NULL;
    }
    if (s->bytes != bytes) { /* the proxy's area is sized by its servers and the node's ranks */
        snprintf(why, why_len, "node %s: its ranks disagree on the proxy's servers or on which ranks share "
                 "the node", node);
        segment_close(s);
        return NULL;
    }
    if (s->pool.capacity != tokens) {
        snprintf(why, why_len, "node %s: its pool has %d tokens but this rank was given %d (the "
                 "ranks of a node must agree)", node, (int)s->pool.capacity, (int)tokens);
        segment_close(s);
        return NULL;
    }
    atomic_fetch_add_explicit(&s->attached, 1, memory_order_acq_rel);
    return s;
}

void segment_unlink(const char *job, const char *node)
{
    char name[64];
    segment_name(job, node, name, sizeof name);
    shm_unlink(name);
}

void segment_close(segment *s)
{
    munmap(s, s->bytes);
}
