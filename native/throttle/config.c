/* Read and check the configuration (see config.h). Every value keeps where it came from (a variable,
 * or file:line) so that an error can say so. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pool.h"
#include "proxy.h"

typedef enum { KIND_POLICY, KIND_INT, KIND_NAME, KIND_JOB, KIND_PATH } value_kind;

enum { ANY = 0, TOKEN = 1 << POLICY_TOKEN, RATE = 1 << POLICY_RATE, PROXY = 1 << POLICY_PROXY,
       ADAPTIVE = 1 << POLICY_ADAPTIVE };

typedef struct {
    const char *key;   /* in the file; NULL: environment only */
    const char *env;
    value_kind kind;
    int64_t min, max;  /* KIND_INT */
    int policies;      /* the policies it applies to (ANY: all) */
} setting;

enum { S_POLICY, S_TOKENS, S_SIZE_PER_TOKEN, S_STALL_MS, S_GAP_NS, S_NODE, S_RANKS_PER_NODE, S_JOB,
       S_STATS, S_SERVERS, S_MEMORY_THROTTLE, S_RESERVE_CORE, S_COUNT };

static const setting settings[S_COUNT] = {
    [S_POLICY] = {"policy", "CONTEND_THROTTLE_POLICY", KIND_POLICY, 0, 0, ANY},
    [S_TOKENS] = {"tokens", "CONTEND_THROTTLE_TOKENS", KIND_INT, 1, POOL_MAX_TOKENS, TOKEN | PROXY | ADAPTIVE},
    [S_SIZE_PER_TOKEN] = {"size_per_token", "CONTEND_THROTTLE_SIZE_PER_TOKEN", KIND_INT, 0,
                          INT64_C(1) << 40, TOKEN | PROXY},
    [S_STALL_MS] = {"stall_ms", "CONTEND_THROTTLE_STALL_MS", KIND_INT, 1, 600000, TOKEN | PROXY | ADAPTIVE},
    [S_GAP_NS] = {"gap_ns", "CONTEND_THROTTLE_GAP_NS", KIND_INT, 1, 1000000000, RATE},
    [S_NODE] = {NULL, "CONTEND_THROTTLE_NODE", KIND_NAME, 0, 0, ANY},
    [S_RANKS_PER_NODE] = {NULL, "CONTEND_THROTTLE_RANKS_PER_NODE", KIND_INT, 1, 1000000, ANY},
    [S_JOB] = {NULL, "CONTEND_THROTTLE_JOB", KIND_JOB, 0, 0, ANY},
    [S_STATS] = {NULL, "CONTEND_THROTTLE_STATS", KIND_PATH, 0, 0, ANY},
    [S_SERVERS] = {"servers", "CONTEND_THROTTLE_SERVERS", KIND_INT, 1, PROXY_MAX_SERVERS, PROXY},
    /* the NiMC mitigations: apart from the admission policy, as in the engine's [memory] table */
    [S_MEMORY_THROTTLE] = {"memory_throttle", "CONTEND_THROTTLE_MEMORY_THROTTLE", KIND_INT, 1,
                           INT64_C(10000000000000), ANY},
    [S_RESERVE_CORE] = {"reserve_core", "CONTEND_THROTTLE_RESERVE_CORE", KIND_INT, 0, 1, ANY},
};

#define FILE_VARIABLE "CONTEND_THROTTLE_CONFIG"
#define DEFAULT_STALL_MS 100
#define LINE_MAX_CHARS 1024

typedef struct {
    int given;
    char value[PATH_MAX];
    char origin[4 * PATH_MAX + 64]; /* "VARIABLE=value" or "file:line: key = value", escaped */
    int line;                   /* in the file; 0 from the environment */
} raw_value;

static int fail(char *why, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
    return -1;
}

/* text as it may appear in a one-line message: printable ASCII as is, a backslash doubled, anything
 * else (newline, ESC, bytes of other encodings) as \n, \r, \t or \xNN. Cut to fit out. */
static const char *shown(const char *text, char *out, size_t len)
{
    size_t n = 0;
    for (const unsigned char *c = (const unsigned char *)text; *c && n + 5 < len; c++) {
        if (*c == '\\')
            n += (size_t)snprintf(out + n, len - n, "\\\\");
        else if (*c >= 0x20 && *c < 0x7f)
            out[n++] = (char)*c;
        else if (*c == '\n' || *c == '\r' || *c == '\t')
            n += (size_t)snprintf(out + n, len - n, "\\%c", *c == '\n' ? 'n' : *c == '\r' ? 'r' : 't');
        else
            n += (size_t)snprintf(out + n, len - n, "\\x%02x", *c);
    }
    out[n] = '\0';
    return out;
}

const char *policy_name(policy_kind p)
{
    return p == POLICY_TOKEN ? "token" : p == POLICY_RATE ? "rate" : p == POLICY_PROXY ? "proxy"
           : p == POLICY_ADAPTIVE ? "adaptive" : "none";
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *end = s + strlen(s);
    while (end > s && isspace((unsigned char)end[-1]))
        *--end = '\0';
    return s;
}

static int known_key(const char *key)
{
    for (int i = 0; i < S_COUNT; i++)
        if (settings[i].key && !strcmp(settings[i].key, key))
            return i;
    return -1;
}

static int read_file(const char *path, raw_value *raw, char *why, size_t len)
{
    char where[4 * PATH_MAX], text_shown[4 * LINE_MAX_CHARS + 8], value_shown[4 * LINE_MAX_CHARS + 8];
    shown(path, where, sizeof where);
    FILE *f = fopen(path, "r");
    if (!f)
        return fail(why, len, FILE_VARIABLE "=%s: cannot read it: %s", where, strerror(errno));
    char buf[LINE_MAX_CHARS + 2];
    int line = 0, rc = 0;
    while (rc == 0 && fgets(buf, sizeof buf, f)) {
        line++;
        if (!strchr(buf, '\n') && !feof(f)) {
            rc = fail(why, len, "%s:%d: line longer than %d characters", where, line, LINE_MAX_CHARS);
            break;
        }
        buf[strcspn(buf, "#")] = '\0';
        char *text = trim(buf);
        if (!*text)
            continue;
        char *eq = strchr(text, '=');
        if (!eq) {
            rc = fail(why, len, "%s:%d: expected `key = value`, got '%s'", where, line,
                      shown(text, text_shown, sizeof text_shown));
            break;
        }
        *eq = '\0';
        char *key = trim(text), *value = trim(eq + 1);
        shown(key, text_shown, sizeof text_shown);
        int i = known_key(key);
        if (i < 0)
            rc = fail(why, len, "%s:%d: unknown key '%s' (known: policy, tokens, size_per_token, "
                      "stall_ms, gap_ns, servers, memory_throttle, reserve_core)", where, line, text_shown);
        else if (raw[i].given)
            rc = fail(why, len, "%s:%d: %s given twice (first on line %d)", where, line, key,
                      raw[i].line);
        else {
            raw[i].given = 1;
            raw[i].line = line;
            snprintf(raw[i].value, sizeof raw[i].value, "%s", value);
            snprintf(raw[i].origin, sizeof raw[i].origin, "%s:%d: %s = %s", where, line, key,
                     shown(value, value_shown, sizeof value_shown));
        }
    }
    if (rc == 0 && ferror(f))
        rc = fail(why, len, "%s: read error", where);
    fclose(f);
    return rc;
}

static void read_environment(raw_value *raw)
{
    for (int i = 0; i < S_COUNT; i++) {
        const char *v = getenv(settings[i].env);
        if (!v)
            continue;
        raw[i].given = 1;
        raw[i].line = 0;
        snprintf(raw[i].value, sizeof raw[i].value, "%s", v);
        char value_shown[4 * PATH_MAX];
        snprintf(raw[i].origin, sizeof raw[i].origin, "%s=%s", settings[i].env,
                 shown(v, value_shown, sizeof value_shown));
    }
}

static int parse_int(const raw_value *r, const setting *s, int64_t *out, char *why, size_t len)
{
    const char *v = r->value;
    size_t digits = strspn(v, "0123456789");
    if (digits == 0 || v[digits] != '\0' || digits > 18)
        return fail(why, len, "%s: expected a whole number from %lld to %lld", r->origin,
                    (long long)s->min, (long long)s->max);
    int64_t x = strtoll(v, NULL, 10);
    if (x < s->min || x > s->max)
        return fail(why, len, "%s: out of range, expected %lld to %lld%s", r->origin,
                    (long long)s->min, (long long)s->max,
                    s == &settings[S_TOKENS] && x == 0 ? " (a pool of 0 tokens never grants one)" : "");
    *out = x;
    return 0;
}

static int parse_policy(const raw_value *r, policy_kind *out, char *why, size_t len)
{
    static const policy_kind all[] = {POLICY_TOKEN, POLICY_RATE, POLICY_PROXY, POLICY_ADAPTIVE, POLICY_NONE};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (!strcmp(r->value, policy_name(all[i]))) {
            *out = all[i];
            return 0;
        }
    return fail(why, len, "%s: unknown policy, expected token, rate, proxy, adaptive or none", r->origin);
}

static int parse_text(const raw_value *r, value_kind kind, char *out, size_t out_len, char *why,
                      size_t len)
{
    const char *v = r->value;
    if (!*v)
        return fail(why, len, "%s: empty", r->origin);
    if (strlen(v) >= out_len)
        return fail(why, len, "%s: longer than %zu characters", r->origin, out_len - 1);
    for (const char *c = v; *c; c++) {
        int ok = kind == KIND_JOB ? isalnum((unsigned char)*c) || strchr("._-", *c)
                                  : kind == KIND_PATH || isgraph((unsigned char)*c);
        if (!ok) {
            char one[2] = {*c, '\0'}, one_shown[8];
            return fail(why, len, "%s: character '%s' not allowed%s", r->origin,
                        shown(one, one_shown, sizeof one_shown),
                        kind == KIND_JOB ? " (letters, digits, '.', '_', '-')" : "");
        }
    }
    snprintf(out, out_len, "%s", v);
    return 0;
}

/* The counters are written at MPI_Finalize; a place they cannot go is found now, not after the run. */
static int check_stats_path(const raw_value *r, const char *path, char *why, size_t len)
{
    struct stat st;
    if (stat(path, &st) == 0) {
        if (!S_ISREG(st.st_mode))
            return fail(why, len, "%s: not a regular file", r->origin);
        if (access(path, W_OK) != 0)
            return fail(why, len, "%s: cannot write it: %s", r->origin, strerror(errno));
        return 0;
    }
    if (errno != ENOENT)
        return fail(why, len, "%s: %s", r->origin, strerror(errno));
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else
        slash[slash == dir] = '\0'; /* "/name": the directory is "/" */
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return fail(why, len, "%s: its directory does not exist", r->origin);
    if (access(dir, W_OK | X_OK) != 0)
        return fail(why, len, "%s: cannot create it: %s", r->origin, strerror(errno));
    return 0;
}

/* The policies a setting applies to, in words. */
static const char *applies_to(int policies)
{
    switch (policies) {
    case TOKEN | PROXY | ADAPTIVE: return "token, proxy or adaptive";
    case TOKEN | PROXY: return "token or proxy";
    case TOKEN: return "token";
    case PROXY: return "proxy";
    default: return "rate";
    }
}

static int check_policy_fit(const raw_value *raw, policy_kind p, char *why, size_t len)
{
    static const int needed[][2] = {{POLICY_TOKEN, S_TOKENS}, {POLICY_RATE, S_GAP_NS},
                                    {POLICY_PROXY, S_SERVERS}};
    for (size_t i = 0; i < sizeof needed / sizeof needed[0]; i++)
        if ((int)p == needed[i][0] && !raw[needed[i][1]].given)
            return fail(why, len, "the %s policy needs %s (or %s in " FILE_VARIABLE ")",
                        policy_name(p), settings[needed[i][1]].env, settings[needed[i][1]].key);
    for (int i = 0; i < S_COUNT; i++)
        if (raw[i].given && settings[i].policies != ANY && !(settings[i].policies & (1 << p)))
            return fail(why, len, "%s: applies to the %s policy, not to %s", raw[i].origin,
                        applies_to(settings[i].policies), policy_name(p));
    if (raw[S_NODE].given && raw[S_RANKS_PER_NODE].given)
        return fail(why, len, "%s and %s are both set: name the node or emulate nodes, not both",
                    settings[S_NODE].env, settings[S_RANKS_PER_NODE].env);
    return 0;
}

int config_load(throttle_config *c, char *why, size_t why_len)
{
    raw_value raw[S_COUNT];
    memset(raw, 0, sizeof raw);
    memset(c, 0, sizeof *c);
    const char *file = getenv(FILE_VARIABLE);
    if (file && read_file(file, raw, why, why_len))
        return -1;
    read_environment(raw);
    if (!raw[S_POLICY].given)
        return fail(why, why_len, "no policy: set CONTEND_THROTTLE_POLICY to token, rate, proxy, adaptive or none (or "
                    "policy in " FILE_VARIABLE ")");
    if (parse_policy(&raw[S_POLICY], &c->policy, why, why_len))
        return -1;
    int64_t tokens = 0, reserve_core = 0;
    c->stall_ms = DEFAULT_STALL_MS;
    int64_t *ints[S_COUNT] = {[S_TOKENS] = &tokens, [S_SIZE_PER_TOKEN] = &c->size_per_token,
                              [S_STALL_MS] = &c->stall_ms, [S_GAP_NS] = &c->gap_ns,
                              [S_RANKS_PER_NODE] = &c->ranks_per_node,
                              [S_MEMORY_THROTTLE] = &c->memory_throttle,
                              [S_RESERVE_CORE] = &reserve_core};
    int64_t servers = 0;
    ints[S_SERVERS] = &servers;
    for (int i = 0; i < S_COUNT; i++) {
        if (!raw[i].given || settings[i].kind != KIND_INT)
            continue;
        if (parse_int(&raw[i], &settings[i], ints[i], why, why_len))
            return -1;
    }
    c->tokens = (int32_t)(c->policy == POLICY_ADAPTIVE && !raw[S_TOKENS].given ? POOL_MAX_TOKENS : tokens);
    c->reserve_core = (int)reserve_core;
    c->servers = (int32_t)servers;
    if (raw[S_NODE].given &&
        parse_text(&raw[S_NODE], KIND_NAME, c->node, sizeof c->node, why, why_len))
        return -1;
    if (raw[S_JOB].given && parse_text(&raw[S_JOB], KIND_JOB, c->job, sizeof c->job, why, why_len))
        return -1;
    if (raw[S_STATS].given &&
        (parse_text(&raw[S_STATS], KIND_PATH, c->stats, sizeof c->stats, why, why_len) ||
         check_stats_path(&raw[S_STATS], c->stats, why, why_len)))
        return -1;
    return check_policy_fit(raw, c->policy, why, why_len);
}
