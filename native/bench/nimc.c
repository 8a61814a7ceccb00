/* Network-induced memory contention (Groves et al., IPDPS 2016), on one node: rank 0 runs a
 * STREAM-like triad pinned to one core and samples its bandwidth every --interval seconds, while
 * rank 1, pinned to another core, makes memory traffic on the same node at a paced rate (--rate
 * bytes/s; 0 none, max unpaced). --mode picks the source:
 *   none    rank 1 sleeps (the baseline)
 *   spin    rank 1 spins on the clock: a busy core without memory traffic (the control)
 *   memcpy  rank 1 copies between two --region buffers (a compute core's traffic, the reference)
 *   put     rank 1 writes --sizes[0]-byte chunks into an MPI window on rank 0 while rank 0 makes no
 *           MPI call, as an RDMA write lands in a node's memory without its CPU. Why stores through
 *           MPI_Win_allocate_shared/MPI_Win_shared_query and not MPI_Put: the pip MPICH routes MPI_Put
 *           through active messages that wait for the target's progress engine, so while the
 *           triad computes almost nothing lands (measured: 40-100 MB/s, completing only when rank 0
 *           next enters MPI); the shared-memory window is MPI's one-sided path that does not.
 *   rma     rank 1 MPI_Puts the chunks into that window, with an MPI_Win_flush after each: the same
 *           bytes through the one-sided calls libcontend-throttle.so wraps, so its NiMC mitigations
 *           (memory_throttle, reserve_core) act on them. On a window of MPI_Win_allocate_shared this MPICH
 *           copies a put at once, without rank 0's progress (measured: 8-10 GB/s while rank 0 computes).
 *   tcp     a sender thread of rank 1 streams chunks over loopback TCP to rank 1's main thread,
 *           which receives them into its --region buffer (the kernel copies every byte)
 * Paced sources wait between chunks until the rate allows the next; put and memcpy wait spinning
 * (the core stays as busy as the spin control), the tcp sender sleeping while its receiver polls.
 * With --period P the traffic comes in bursts: on for --on seconds (default P/2) of every P seconds
 * from the common start, at --rate while on; samples between bursts are the run's own baseline.
 *
 * Output (rank 0): one "interval" line per triad sample with its time, bandwidth and the software
 * (and, when the machine has them, hardware) counters of the triad thread over the sample, plus the
 * machine's CPU time split from /proc/stat and the load average, and the speed of a short
 * cache-resident kernel timed just before the sample (core_rate: the core's own speed, which a slower
 * CPU state lowers but memory traffic does not); one "injected" line with the bytes
 * rank 1 delivered per millisecond bin (Python attributes them to samples); one "result" row.
 * Checks: the triad's last pass is recomputed element by element; every chunk carries its sequence
 * number at both ends, so the receiving side counts the bytes it really got (window or socket)
 * independently of what the sender counted. */
#define _GNU_SOURCE /* sched_setaffinity, sched_getcpu, RUSAGE_THREAD */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "harness.h"
#include "json.h"

enum { TRIAD = 0, INTERFERER = 1 };
enum { NONE, SPIN, MEMCPY, PUT, TCP, RMA };
static const char *const modes[] = {"none", "spin", "memcpy", "put", "tcp", "rma", NULL};

#define TRIAD_WORDS (1L << 22) /* 32 MiB per array, 96 MiB in all: three times this machine's L3 */
#define BIN_NS 1000000LL       /* injected bytes are counted per millisecond */
#define MAX_CPUS 64
#define BODY 0x5a              /* every chunk byte between the two sequence stamps */

/* ---------- the triad ---------- */

/* noinline: each call is one full pass the compiler cannot merge with the next */
__attribute__((noinline)) static void triad(double *a, const double *b, const double *c, double s, long n)
{
    for (long i = 0; i < n; i++)
        a[i] = b[i] + s * c[i];
}

static double scalar_of_pass(int64_t pass)
{
    return 1.0 + 0.125 * (double)(pass % 8); /* exact in binary: the check can demand equality */
}

/* ---------- the core's own speed ---------- */

/* A kernel that touches no memory beyond L1: a dependent walk of a 2 KiB ring of indices beside a
 * dependent multiply-add chain, so its time is cycles / clock. CORE_ITERS per round (about 50-100 us
 * here); the rate is that of the fastest of CORE_ROUNDS rounds, so an interrupt or a preemption
 * inside one round does not count as a slow core. */
#define CORE_RING 512
#define CORE_ITERS 32768
#define CORE_ROUNDS 4

static uint32_t core_ring[CORE_RING];
static volatile uint64_t core_sink; /* keeps the kernel's result alive */

static void core_ring_init(void)
{
    /* one cycle through all slots: i -> i + 97 (odd stride, coprime with 512) */
    for (uint32_t i = 0; i < CORE_RING; i++)
        core_ring[i] = (i + 97) % CORE_RING;
}

__attribute__((noinline)) static uint64_t core_kernel(uint64_t seed)
{
    uint32_t at = (uint32_t)seed % CORE_RING;
    uint64_t acc = seed | 1;
    for (int i = 0; i < CORE_ITERS; i++) {
        at = core_ring[at];
        acc = acc * 0x9E3779B97F4A7C15ull + at;
    }
    return acc;
}

typedef struct {
    double ns;   /* wall time of all rounds */
    double rate; /* kernel iterations per second in the fastest round */
} core_speed;

static core_speed time_core(int64_t seed)
{
    core_speed c = {0, 0};
    double best = 0;
    int64_t first = now_ns();
    for (int r = 0; r < CORE_ROUNDS; r++) {
        int64_t t = now_ns();
        core_sink += core_kernel((uint64_t)(seed + r));
        double ns = (double)(now_ns() - t);
        if (r == 0 || ns < best)
            best = ns;
    }
    c.ns = (double)(now_ns() - first);
    c.rate = best > 0 ? CORE_ITERS / best * 1e9 : -1;
    return c;
}

/* ---------- counters of the triad thread ---------- */

typedef struct {
    const char *name;
    uint32_t type;
    uint64_t config;
    int fd;
} counter;

static counter software[] = {
    {"task_clock_ns", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, -1},
    {"page_faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, -1},
    {"context_switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, -1},
    {"cpu_migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS, -1},
};
static counter hardware[] = {
    {"hw_cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, -1},
    {"hw_instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, -1},
    {"hw_cache_references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES, -1},
    {"hw_cache_misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, -1},
    {"hw_stalled_backend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND, -1},
};
#define NSOFT (int)(sizeof software / sizeof software[0])
#define NHARD (int)(sizeof hardware / sizeof hardware[0])

/* Open one counter of this thread; the errno of the failure otherwise (0 on success). */
static int open_counter(counter *c)
{
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = c->type;
    attr.config = c->config;
    attr.exclude_hv = 1;
    c->fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
    return c->fd < 0 ? errno : 0;
}

static double read_counter(const counter *c)
{
    uint64_t value = 0;
    if (c->fd < 0 || read(c->fd, &value, sizeof value) != sizeof value)
        return -1;
    return (double)value;
}

/* The counters without perf_event_open: CPU time of the thread and getrusage. */
typedef struct {
    double cpu_ns, minor_faults, major_faults, voluntary_cs, involuntary_cs;
} usage;

static usage thread_usage(void)
{
    struct timespec ts;
    struct rusage ru;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    getrusage(RUSAGE_THREAD, &ru);
    usage u = {ts.tv_sec * 1e9 + ts.tv_nsec, (double)ru.ru_minflt, (double)ru.ru_majflt,
               (double)ru.ru_nvcsw, (double)ru.ru_nivcsw};
    return u;
}

/* ---------- the machine: /proc/stat per CPU, load average ---------- */

enum { USER, NICE, SYSTEM, IDLE, IOWAIT, IRQ, SOFTIRQ, STEAL, NFIELDS };
static const char *const field_names[NFIELDS] = {"user", "nice", "system", "idle",
                                                 "iowait", "irq", "softirq", "steal"};

typedef struct {
    double ticks[MAX_CPUS + 1][NFIELDS]; /* row 0: all CPUs; row 1 + k: cpu k */
    int ok;
} cpu_times;

static cpu_times read_cpu_times(void)
{
    cpu_times t;
    memset(&t, 0, sizeof t);
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return t;
    char line[512];
    while (fgets(line, sizeof line, f) && !strncmp(line, "cpu", 3)) {
        int row = 0, k;
        char *rest = line + 3;
        if (*rest != ' ') {
            if (sscanf(rest, "%d", &k) != 1 || k < 0 || k >= MAX_CPUS)
                continue;
            row = 1 + k;
            while (*rest && *rest != ' ')
                rest++;
        }
        double *v = t.ticks[row];
        if (sscanf(rest, "%lf %lf %lf %lf %lf %lf %lf %lf", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                   &v[6], &v[7]) == NFIELDS)
            t.ok = 1;
    }
    fclose(f);
    return t;
}

/* Fractions of the interval each CPU row spent in each state (ticks are USER_HZ, 10 ms here, so an
 * interval of 100 ms sees steps of 0.1 per CPU). prefix: "cpu_all", "cpu_triad", "cpu_other". */
static void write_cpu_split(const char *prefix, const double *before, const double *after)
{
    double total = 0;
    for (int f = 0; f < NFIELDS; f++)
        total += after[f] - before[f];
    for (int f = 0; f < NFIELDS; f++) {
        char key[48];
        snprintf(key, sizeof key, "%s_%s", prefix, field_names[f]);
        json_num(key, total > 0 ? (after[f] - before[f]) / total : -1);
    }
}

/* ---------- pinning ---------- */

/* Pin this process to the k-th CPU it may run on (modulo their number); that CPU's number. */
static int pin_to(bench *b, int k)
{
    cpu_set_t allowed, one;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
        fail_usage(b, "nimc: cannot read the CPU affinity");
    int want = k % CPU_COUNT(&allowed);
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (CPU_ISSET(cpu, &allowed) && want-- == 0) {
            CPU_ZERO(&one);
            CPU_SET(cpu, &one);
            if (sched_setaffinity(0, sizeof one, &one) != 0)
                fail_usage(b, "nimc: cannot pin rank %d to CPU %d", b->rank, cpu);
            return cpu;
        }
    }
    return -1;
}

/* ---------- chunks: a sequence number at both ends, a constant body ---------- */

static void stamp(unsigned char *chunk, int64_t bytes, int64_t seq)
{
    memcpy(chunk, &seq, sizeof seq);
    memcpy(chunk + bytes - sizeof seq, &seq, sizeof seq);
}

/* The chunk's sequence number if both stamps agree and the body is intact (sampled every 4 KiB and
 * at its ends), -2 otherwise; -1 for a slot never written (the region starts as 0xff bytes). */
static int64_t chunk_seq(const unsigned char *chunk, int64_t bytes)
{
    int64_t head, tail;
    memcpy(&head, chunk, sizeof head);
    memcpy(&tail, chunk + bytes - sizeof tail, sizeof tail);
    if (head == -1 && tail == -1)
        return -1;
    if (head != tail || head < 0)
        return -2;
    for (int64_t i = 8; i < bytes - 8; i += 4096)
        if (chunk[i] != BODY)
            return -2;
    if (bytes > 16 && chunk[bytes - 9] != BODY)
        return -2;
    return head;
}

/* Bytes a region of nslots chunks shows it received: the highest stamp + 1 chunks, after checking
 * that every slot holds the last chunk that should have landed there. -1 if anything is wrong. */
static int64_t region_received(const unsigned char *region, int64_t chunk, int64_t nslots)
{
    int64_t highest = -1;
    for (int64_t s = 0; s < nslots; s++) {
        int64_t seq = chunk_seq(region + s * chunk, chunk);
        if (seq == -2 || (seq >= 0 && seq % nslots != s))
            return -1;
        if (seq > highest)
            highest = seq;
    }
    int64_t chunks = highest + 1;
    for (int64_t s = 0; s < nslots; s++) {
        int64_t seq = chunk_seq(region + s * chunk, chunk);
        int64_t want = s < chunks ? s + ((chunks - 1 - s) / nslots) * nslots : -1;
        if (seq != want)
            return -1;
    }
    return chunks * chunk;
}

/* ---------- pacing ---------- */

typedef struct {
    int64_t t0, end;
    int64_t period, on;   /* bursts: on for `on` ns of every `period` ns from t0 (period 0: always on) */
    double rate;          /* bytes per second while on; < 0 unpaced; 0 nothing */
    int64_t *bins;        /* delivered bytes per BIN_NS since t0 */
    int64_t nbins;
} schedule;

/* When the chunk that brings the total to `sent` may go (ns, absolute): the time at which the bursts
 * have been on long enough to carry `sent` bytes at the rate; unpaced, now if a burst is on, else the
 * start of the next. */
static int64_t due(const schedule *s, int64_t sent)
{
    if (s->rate == 0)
        return INT64_MAX;
    if (s->period <= 0)
        return s->rate < 0 ? 0 : s->t0 + (int64_t)((double)sent / s->rate * 1e9);
    if (s->rate < 0) {
        int64_t t = now_ns(), phase = (t - s->t0) % s->period;
        return t < s->t0 ? s->t0 : phase < s->on ? t : t + (s->period - phase);
    }
    double need = (double)sent / s->rate * 1e9; /* ns of burst time */
    int64_t bursts = (int64_t)(need / (double)s->on);
    return s->t0 + bursts * s->period + (int64_t)(need - (double)bursts * (double)s->on);
}

static void count(schedule *s, int64_t bytes)
{
    int64_t bin = (now_ns() - s->t0) / BIN_NS;
    if (bin >= 0 && bin < s->nbins)
        s->bins[bin] += bytes;
}

static void sleep_until(int64_t t)
{
    struct timespec ts = {t / 1000000000, t % 1000000000};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

/* Spin until the next chunk is due or the run ends: 1 if it is due. */
static int spin_until_due(const schedule *s, int64_t sent)
{
    int64_t when = due(s, sent);
    int64_t t;
    while ((t = now_ns()) < when && t < s->end) {
    }
    return t < s->end;
}

/* ---------- the sources ---------- */

typedef struct {
    schedule *s;
    int port;
    int64_t chunk;
    int64_t sent; /* bytes the sender handed to the socket */
    int error;
} tcp_sender;

static void *send_chunks(void *arg)
{
    tcp_sender *t = arg;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)t->port)};
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&to, sizeof to) != 0) {
        t->error = errno;
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    unsigned char *chunk = malloc((size_t)t->chunk);
    memset(chunk, BODY, (size_t)t->chunk);
    for (int64_t seq = 0;; seq++) {
        int64_t when = due(t->s, t->sent + t->chunk);
        if (when >= t->s->end)
            break;
        if (when > now_ns())
            sleep_until(when);
        if (now_ns() >= t->s->end)
            break;
        stamp(chunk, t->chunk, seq);
        for (int64_t off = 0; off < t->chunk;) {
            ssize_t n = send(fd, chunk + off, (size_t)(t->chunk - off), MSG_NOSIGNAL);
            if (n <= 0) {
                t->error = n < 0 ? errno : EPIPE;
                goto done;
            }
            off += n;
        }
        t->sent += t->chunk;
    }
done:
    close(fd); /* the receiver sees the end of the stream */
    free(chunk);
    return NULL;
}

/* The receiving side: chunks land in the region in turn; returns bytes received (whole chunks with
 * the right sequence number), -1 on a wrong chunk. */
static int64_t receive_tcp(bench *b, schedule *s, unsigned char *region, int64_t chunk, int64_t nslots,
                           int listener, int64_t *sent)
{
    tcp_sender t = {.s = s, .chunk = chunk};
    struct sockaddr_in me;
    socklen_t len = sizeof me;
    getsockname(listener, (struct sockaddr *)&me, &len);
    t.port = ntohs(me.sin_port);
    pthread_t thread;
    if (pthread_create(&thread, NULL, send_chunks, &t) != 0)
        fail_usage(b, "nimc: cannot start the TCP sender thread");
    /* Wait for the sender's connection at most until a while after the end: a sender that could not
     * connect must not leave the receiver blocked for ever. */
    struct pollfd ready = {.fd = listener, .events = POLLIN};
    int64_t wait_ms = (s->end - now_ns()) / 1000000 + 10000;
    int fd = poll(&ready, 1, (int)(wait_ms > 0 ? wait_ms : 0)) == 1 ? accept(listener, NULL, NULL) : -1;
    int64_t received = 0, bad = fd < 0;
    if (fd >= 0) {
        for (int64_t seq = 0; !bad; seq++) {
            unsigned char *slot = region + (seq % nslots) * chunk;
            int64_t off = 0;
            while (off < chunk) { /* polled: between bursts the core stays ours, as in the other modes */
                ssize_t n = recv(fd, slot + off, (size_t)(chunk - off), MSG_DONTWAIT);
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
                    continue;
                if (n <= 0)
                    break;
                off += n;
            }
            if (off == 0)
                break; /* end of stream */
            if (off < chunk || chunk_seq(slot, chunk) != seq) {
                bad = 1;
                break;
            }
            received += chunk;
            count(s, chunk);
        }
        close(fd);
    }
    pthread_join(thread, NULL);
    if (t.error)
        fprintf(stderr, "contend-bench: nimc: TCP sender: %s\n", strerror(t.error));
    *sent = t.sent;
    return bad || t.error ? -1 : received;
}

/* ---------- the pattern ---------- */

typedef struct {
    double start_ns, end_ns, passes;
    double soft[NSOFT], hard[NHARD];
    usage use;
    double load;
    int cpu;
    cpu_times cpus;
} snapshot;

static snapshot take(void)
{
    snapshot s;
    s.cpus = read_cpu_times();
    for (int i = 0; i < NSOFT; i++)
        s.soft[i] = read_counter(&software[i]);
    for (int i = 0; i < NHARD; i++)
        s.hard[i] = read_counter(&hardware[i]);
    s.use = thread_usage();
    s.load = load_average();
    s.cpu = sched_getcpu();
    s.start_ns = (double)now_ns();
    return s;
}

static void write_interval(int index, int64_t t0, const snapshot *a, const snapshot *z, int64_t passes,
                           int other_cpu, int nhard, core_speed core)
{
    double ns = z->start_ns - a->start_ns, bytes = (double)passes * 3 * sizeof(double) * TRIAD_WORDS;
    json_begin();
    json_str("type", "interval");
    json_int("index", index);
    json_num("start_ns", a->start_ns - (double)t0);
    json_num("duration_ns", ns);
    json_int("passes", passes);
    json_num("triad_bytes", bytes);
    json_num("triad_Bps", bytes / ns * 1e9);
    json_num("core_ns", core.ns);
    json_num("core_rate", core.rate);
    for (int i = 0; i < NSOFT; i++)
        json_num(software[i].name, software[i].fd >= 0 ? z->soft[i] - a->soft[i] : -1);
    for (int i = 0; i < NHARD && nhard; i++)
        json_num(hardware[i].name, hardware[i].fd >= 0 ? z->hard[i] - a->hard[i] : -1);
    json_num("thread_cpu_ns", z->use.cpu_ns - a->use.cpu_ns);
    json_num("minor_faults", z->use.minor_faults - a->use.minor_faults);
    json_num("major_faults", z->use.major_faults - a->use.major_faults);
    json_num("voluntary_cs", z->use.voluntary_cs - a->use.voluntary_cs);
    json_num("involuntary_cs", z->use.involuntary_cs - a->use.involuntary_cs);
    json_num("loadavg_1min", z->load);
    json_int("triad_cpu", z->cpu);
    if (a->cpus.ok && z->cpus.ok) {
        write_cpu_split("cpu_all", a->cpus.ticks[0], z->cpus.ticks[0]);
        if (z->cpu >= 0 && z->cpu < MAX_CPUS)
            write_cpu_split("cpu_triad", a->cpus.ticks[1 + z->cpu], z->cpus.ticks[1 + z->cpu]);
        if (other_cpu >= 0 && other_cpu < MAX_CPUS)
            write_cpu_split("cpu_other", a->cpus.ticks[1 + other_cpu], z->cpus.ticks[1 + other_cpu]);
    }
    json_end();
}

/* Rank 0: triad samples until the end; returns the number of samples written and the time per pass
 * of each sample (ns) in per_pass_ns (capacity max_samples). */
static int run_triad(bench *b, int64_t t0, int64_t end, int other_cpu, int nhard, double *per_pass_ns,
                     int max_samples, int *verified)
{
    double *a = alloc_buffer(TRIAD_WORDS * sizeof(double));
    double *x = alloc_buffer(TRIAD_WORDS * sizeof(double));
    double *y = alloc_buffer(TRIAD_WORDS * sizeof(double));
    for (long i = 0; i < TRIAD_WORDS; i++) {
        x[i] = (double)(i % 4096) * 0.5;
        y[i] = (double)(i % 1024) * 0.25;
    }
    int64_t pass = 0;
    for (int i = 0; i < 3; i++) /* warm: pages mapped, TLB and prefetchers settled */
        triad(a, x, y, scalar_of_pass(pass++), TRIAD_WORDS);
    core_ring_init();
    sleep_until(t0);
    int64_t interval = (int64_t)(b->opt.interval_s * 1e9);
    int samples = 0;
    /* Each sample: the core kernel, then the triad for the interval. The kernel stays outside the
     * triad's window (the triad's counters and CPU time are its alone), so samples are apart by the
     * kernel's time (a few hundred microseconds). */
    for (;;) {
        core_speed core = time_core(samples);
        snapshot before = take();
        if (samples >= max_samples || (int64_t)before.start_ns + interval > end)
            break;
        int64_t stop = (int64_t)before.start_ns + interval, passes = 0;
        do {
            triad(a, x, y, scalar_of_pass(pass++), TRIAD_WORDS);
            passes++;
        } while (now_ns() < stop);
        snapshot after = take();
        write_interval(samples, t0, &before, &after, passes, other_cpu, nhard, core);
        per_pass_ns[samples++] = (after.start_ns - before.start_ns) / (double)passes;
    }
    double s = scalar_of_pass(pass - 1);
    *verified = 1;
    for (long i = 0; i < TRIAD_WORDS; i++)
        if (a[i] != x[i] + s * y[i])
            *verified = 0;
    free(a);
    free(x);
    free(y);
    return samples;
}

int run_nimc(bench *b)
{
    int mode = pattern_mode(b, modes);
    if (b->size != 2)
        fail_usage(b, "nimc runs on exactly 2 ranks (a triad and an interferer), got %d", b->size);
    int64_t chunk = b->opt.sizes[0], region = b->opt.region;
    if (chunk < 64 || chunk > region || region % chunk)
        fail_usage(b, "nimc: the chunk (--sizes, %lld) must be at least 64 bytes and divide --region (%lld)",
                   (long long)chunk, (long long)region);
    int64_t nslots = region / chunk;
    int my_cpu = pin_to(b, b->rank), cpus[2];
    MPI_Allgather(&my_cpu, 1, MPI_INT, cpus, 1, MPI_INT, b->comm);
    /* On a shared machine other jobs take turns on both cores; a triad that runs a quarter of the time
     * rarely overlaps the interferer's traffic. --nice (set before the TCP sender thread starts, which
     * inherits it) keeps both on their cores; whether the system granted it is reported. */
    int nice_errno = 0;
    if (b->opt.nice && setpriority(PRIO_PROCESS, 0, b->opt.nice) != 0)
        nice_errno = errno;
    /* With autogroups (Linux's default for desktop kernels, and here) a task's nice value only ranks
     * it within its session; MPICH's launcher starts each rank in a session of its own, so each rank
     * sets its session's group nice, which is its alone. */
    FILE *group = b->opt.nice ? fopen("/proc/self/autogroup", "w") : NULL;
    if (group) {
        if (fprintf(group, "%d", b->opt.nice) < 0 || fclose(group) != 0)
            nice_errno = nice_errno ? nice_errno : errno;
    }
    int nice_failed = 0;
    MPI_Allreduce(&nice_errno, &nice_failed, 1, MPI_INT, MPI_MAX, b->comm);

    /* Counters: software ones through perf_event_open (getrusage and the thread's CPU clock always);
     * hardware ones only if this machine has them. */
    int soft_errno = 0, hard_errno = 0, nhard = 0;
    if (b->rank == TRIAD) {
        for (int i = 0; i < NSOFT; i++) {
            int e = open_counter(&software[i]);
            if (e && !soft_errno)
                soft_errno = e;
        }
        for (int i = 0; i < NHARD; i++) {
            int e = open_counter(&hardware[i]);
            if (e && !hard_errno)
                hard_errno = e;
            nhard += e == 0;
        }
    }

    /* The landing buffer: a window on rank 0 for put, rank 1's own memory for memcpy and tcp. All of
     * it is written once first, so no page fault falls inside the measurement. */
    unsigned char *base = NULL, *landing = NULL, *source = NULL;
    MPI_Win win;
    int into_window = mode == PUT || mode == RMA;
    int64_t window_bytes = into_window && b->rank == TRIAD ? region : 0;
    MPI_Win_allocate_shared(window_bytes, 1, MPI_INFO_NULL, b->comm, &base, &win);
    if (window_bytes)
        memset(base, 0xff, (size_t)region);
    int listener = -1;
    if (b->rank == INTERFERER) {
        if (mode == MEMCPY || mode == TCP) {
            landing = alloc_buffer(region);
            memset(landing, 0xff, (size_t)region);
        }
        source = alloc_buffer(mode == MEMCPY ? region : chunk);
        memset(source, BODY, (size_t)(mode == MEMCPY ? region : chunk));
        if (mode == TCP) {
            struct sockaddr_in me = {.sin_family = AF_INET, .sin_port = 0};
            me.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            listener = socket(AF_INET, SOCK_STREAM, 0);
            if (listener < 0 || bind(listener, (struct sockaddr *)&me, sizeof me) || listen(listener, 1))
                fail_usage(b, "nimc: cannot listen on 127.0.0.1: %s", strerror(errno));
        }
    }

    /* A common start a little ahead, on the node's shared monotonic clock. */
    MPI_Barrier(b->comm);
    int64_t t0 = now_ns() + 50000000;
    MPI_Bcast(&t0, 1, MPI_INT64_T, TRIAD, b->comm);
    int64_t end = t0 + (int64_t)(b->opt.duration_s * 1e9);
    schedule s = {.t0 = t0, .end = end, .rate = mode == NONE || mode == SPIN ? 0 : b->opt.rate_Bps};
    if (b->opt.period_s > 0) {
        s.period = (int64_t)(b->opt.period_s * 1e9);
        s.on = (int64_t)((b->opt.on_s > 0 ? b->opt.on_s : b->opt.period_s / 2) * 1e9);
        if (s.on > s.period)
            fail_usage(b, "nimc: --on (%g s) is longer than --period (%g s)", b->opt.on_s, b->opt.period_s);
    }
    s.nbins = (end - t0) / BIN_NS + 1;
    s.bins = calloc((size_t)s.nbins, sizeof(int64_t));

    int max_samples = (int)(b->opt.duration_s / b->opt.interval_s) + 2, samples = 0, triad_ok = 0;
    double *seconds = malloc(sizeof(double) * (size_t)max_samples);
    int64_t injected = 0, received = -1; /* sender's count, receiving side's count */
    if (b->rank == TRIAD) {
        if (b->opt.interval_s > b->opt.duration_s)
            fprintf(stderr, "contend-bench: nimc: --interval is longer than --duration: no samples\n");
        samples = run_triad(b, t0, end, cpus[INTERFERER], nhard, seconds, max_samples, &triad_ok);
    } else {
        sleep_until(t0);
        if (mode == NONE) {
            sleep_until(end);
        } else if (mode == SPIN) {
            spin_until_due(&s, 1);
        } else if (mode == MEMCPY) {
            for (int64_t seq = 0; spin_until_due(&s, injected + chunk); seq++) {
                int64_t off = (seq % nslots) * chunk;
                stamp(source + off, chunk, seq);
                memcpy(landing + off, source + off, (size_t)chunk);
                injected += chunk;
                count(&s, chunk);
            }
            received = region_received(landing, chunk, nslots);
        } else if (mode == PUT) {
            /* Stores through the shared-memory window, synchronised as MPI-3 requires (see the header) */
            MPI_Aint size;
            int unit;
            unsigned char *target;
            MPI_Win_shared_query(win, TRIAD, &size, &unit, &target);
            MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
            for (int64_t seq = 0; spin_until_due(&s, injected + chunk); seq++) {
                stamp(source, chunk, seq);
                memcpy(target + (seq % nslots) * chunk, source, (size_t)chunk);
                MPI_Win_sync(win);
                injected += chunk;
                count(&s, chunk);
            }
            MPI_Win_unlock_all(win);
            b->count.rma_bytes = injected;
        } else if (mode == RMA) {
            MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
            for (int64_t seq = 0; spin_until_due(&s, injected + chunk); seq++) {
                stamp(source, chunk, seq);
                MPI_Put(source, (int)chunk, MPI_BYTE, TRIAD, (MPI_Aint)((seq % nslots) * chunk), (int)chunk,
                        MPI_BYTE, win);
                MPI_Win_flush(TRIAD, win); /* landed: counted now, and the source may be stamped again */
                injected += chunk;
                count(&s, chunk);
            }
            MPI_Win_unlock_all(win);
            b->count.rma_bytes = injected;
        } else {
            received = receive_tcp(b, &s, landing, chunk, nslots, listener, &injected);
            close(listener);
        }
    }
    MPI_Barrier(b->comm);
    if (into_window && b->rank == TRIAD) {
        MPI_Win_lock(MPI_LOCK_SHARED, TRIAD, 0, win); /* makes the puts visible to local loads */
        received = region_received(base, chunk, nslots);
        MPI_Win_unlock(TRIAD, win);
    }
    if (mode == NONE || mode == SPIN)
        received = 0;

    /* Rank 0 learns what rank 1 sent, and its bins. */
    int64_t sent_by_1 = injected, received_put = received;
    MPI_Bcast(&sent_by_1, 1, MPI_INT64_T, INTERFERER, b->comm);
    MPI_Bcast(&received_put, 1, MPI_INT64_T, into_window ? TRIAD : INTERFERER, b->comm);
    if (b->rank == TRIAD)
        MPI_Reduce(MPI_IN_PLACE, s.bins, (int)s.nbins, MPI_INT64_T, MPI_SUM, TRIAD, b->comm);
    else
        MPI_Reduce(s.bins, NULL, (int)s.nbins, MPI_INT64_T, MPI_SUM, TRIAD, b->comm);
    int data_ok = received_put == sent_by_1;
    b->count.verified = b->rank == TRIAD ? triad_ok && data_ok : data_ok;

    if (b->rank == TRIAD) {
        json_begin();
        json_str("type", "injected");
        json_str("mode", modes[mode]);
        json_num("bin_ns", (double)BIN_NS);
        json_int("sent_bytes", sent_by_1);
        json_int("received_bytes", received_put);
        json_int("triad_cpu", cpus[TRIAD]);
        json_int("interferer_cpu", cpus[INTERFERER]);
        json_int("nice", b->opt.nice);
        json_str("nice_granted", nice_failed ? strerror(nice_failed) : "yes");
        json_str("software_counters", soft_errno ? strerror(soft_errno) : "perf_event_open");
        json_str("hardware_counters", nhard == NHARD ? "perf_event_open"
                                      : nhard ? "partial"
                                              : strerror(hard_errno));
        json_list_begin("bins");
        for (int64_t i = 0; i < s.nbins; i++)
            json_item_int(s.bins[i]);
        json_list_end();
        json_end();
    }
    /* t_* of the row: time per triad pass (bytes = one pass's traffic) over the samples */
    result r = result_init("triad", (int64_t)(3 * sizeof(double) * TRIAD_WORDS), TRIAD, INTERFERER, seconds,
                           samples);
    result_extra(&r, "samples", samples);
    result_extra(&r, "rate_target_Bps", s.rate);
    result_extra(&r, "chunk", (double)chunk);
    result_extra(&r, "region", (double)region);
    result_extra(&r, "sent_bytes", (double)sent_by_1);
    result_extra(&r, "received_bytes", (double)received_put);
    result_extra(&r, "triad_verified", triad_ok);
    result_extra(&r, "data_verified", data_ok);
    report(b, b->rank == TRIAD ? &r : NULL);
    progress(b, 1, 1);
    free(seconds);
    free(s.bins);
    free(source);
    free(landing);
    MPI_Win_free(&win);
    for (int i = 0; i < NSOFT; i++)
        if (software[i].fd >= 0)
            close(software[i].fd);
    for (int i = 0; i < NHARD; i++)
        if (hardware[i].fd >= 0)
            close(hardware[i].fd);
    return 0;
}
