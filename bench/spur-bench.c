/* SPDX-License-Identifier: BSD-3-Clause */
/* spur-bench: a load generator for Gearman job servers (spurd, gearmand).
 *
 * It speaks the raw binary protocol over non-blocking sockets, verifies every reply byte for byte
 * and counts anomalies (duplicate or missing completions, wrong payloads, unexpected packets,
 * ERROR packets, lost connections). Every run is bounded in job count and in wall time.
 *
 * Threading: one thread and one epoll loop drive every connection (clients, workers, idle
 * connections). The target machine has two cores and the server under test needs at least one of
 * them (gearmand's I/O threads may use both); a second load-generating thread would compete with
 * the server for the same cores and make its figures depend on the scheduler rather than on the
 * server. The loop never blocks on one connection, reads every ready socket each iteration and
 * flushes all pending writes once before it sleeps, so the time a reply waits inside the bench is
 * bounded by one iteration over the ready sockets (a few microseconds) and is the same for every
 * server measured. Latencies are taken with CLOCK_MONOTONIC when a request is queued for sending
 * and when its reply has been parsed.
 *
 * Output: human-readable text, then one line per result that starts with "RESULT " and carries
 * space-separated key=value pairs. Exit status 0 when the scenario finished with no anomaly,
 * 1 when it finished with anomalies or did not finish, 2 on a usage or setup error. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "procstat.h"
#include "proto.h"
#include "proto_bin.h"

#define MAX_BODY (64u << 20)     /* largest reply body accepted before framing is declared lost */
#define READ_CHUNK 65536         /* bytes of free space ensured before each recv */
#define MAX_JOBS 100000000ull    /* job ids are 32-bit; this keeps the tables sane */
#define JOB_NONE UINT32_MAX      /* an empty handle-map slot */
#define EVENTS_MAX 512           /* epoll events taken per wait */
#define REPORT_LIMIT 5           /* detailed messages printed per anomaly kind */
#define XOR_BYTE 0x5A            /* the worker's transformation: reverse the payload, XOR this */

/* ------------------------------------------------------------------------------------ options */

/* enum scenario_id names the scenarios. */
enum scenario_id {
    SC_BG_SUBMIT, SC_RT_LATENCY, SC_RT_THROUGHPUT, SC_DRAIN, SC_IDLE, SC_FANOUT, SC_COALESCE
};

/* scenario_names is indexed by enum scenario_id. */
static const char *const scenario_names[] = {"bg-submit", "rt-latency", "rt-throughput",
                                             "drain",     "idle-conns", "fanout",
                                             "coalesce"};

/* struct options holds the command line; -1 means "the scenario's default". */
struct options {
    int scenario;         /* enum scenario_id, or -1 before parsing */
    const char *host;     /* server address (numeric or a name) */
    const char *port;     /* server port, as text for getaddrinfo */
    long long jobs;       /* jobs to run (echo round trips for idle-conns) */
    int clients;          /* client connections */
    int workers;          /* worker connections */
    int window;           /* outstanding submits per client connection */
    long payload;         /* payload bytes per job */
    int functions;        /* function names (fanout) */
    long conns;           /* idle connections (idle-conns) */
    int connect_window;   /* idle connections being opened at once */
    long server_pid;      /* server process to sample in /proc, 0 for none */
    double timeout_s;     /* wall-time bound for the whole scenario */
    double stall_s;       /* give up after this long without any packet from the server */
    long long max_anomalies; /* give up once this many anomalies were counted */
    const char *label;    /* free text echoed as server= in the RESULT line */
    long long ballast_jobs; /* background jobs queued on an unworked function before measuring */
    long ballast_clients; /* connections that each hold one unworked foreground job */
    long idle_workers;    /* connections registered for the measured function that sleep and
                             ignore NOOP */
    long waiters;         /* coalesce: client connections submitting each job (same unique) */
    int tls;              /* --tls: every connection speaks TLS */
    const char *tls_ca;   /* --tls-ca: CA file the server's certificate must chain to */
    const char *tls_cert; /* --tls-cert: client certificate, or NULL */
    const char *tls_key;  /* --tls-key: its key, or NULL (in the certificate file) */
    long keys;            /* --keys: uniques "k<job mod keys>:<job>" (flow control's keys), 0
                             for "<job>" */
    const char *admin;    /* --admin: an admin line sent before measuring, "{F}" replaced by
                             each function's name (e.g. "limit {F} key-concurrency 1") */
    const char *client_option; /* --client-option: the OPTION_REQs (comma-separated) every
                                  client connection sends before its first submit, or NULL */
};

/* ----------------------------------------------------------------------------------- utilities */

/* stop_requested is set by SIGINT/SIGTERM; the loop then ends the run and reports. */
static volatile sig_atomic_t stop_requested;

struct bench;
/* tls_bench is the run, for tls_io's conn_lost and set_want_out (one run per process). */
static struct bench *tls_bench;

/* on_signal records a request to stop. */
static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

/* now_ns returns CLOCK_MONOTONIC in nanoseconds. */
static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* die prints a message and exits with status 2; only for setup errors, never mid-measurement. */
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("spur-bench: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

/* xrealloc is realloc that exits on failure (the bench is a tool: running out of memory ends
 * the run). Returns the new block, owned by the caller. */
static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (q == NULL)
        die("out of memory (%zu bytes)", n);
    return q;
}

/* xcalloc is calloc that exits on failure. */
static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (p == NULL)
        die("out of memory (%zu x %zu bytes)", n, size);
    return p;
}

/* splitmix64 advances *state and returns the next pseudo-random value. */
static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* gen_payload writes job's deterministic payload (len bytes of arbitrary binary, NULs included)
 * into out. Anyone holding the seed and the job id can regenerate it to check it. */
static void gen_payload(uint64_t seed, uint64_t job, unsigned char *out, size_t len)
{
    uint64_t st = seed ^ (job * 0xD1B54A32D192ED03ull);
    for (size_t i = 0; i < len; i += 8) {
        uint64_t v = splitmix64(&st);
        for (size_t k = 0; k < 8 && i + k < len; k++)
            out[i + k] = (unsigned char)(v >> (8 * k));
    }
}

/* transform writes the worker's result for a payload: the bytes reversed, each XORed with
 * XOR_BYTE. in and out must not overlap. */
static void transform(const unsigned char *in, size_t len, unsigned char *out)
{
    for (size_t i = 0; i < len; i++)
        out[i] = (unsigned char)(in[len - 1 - i] ^ XOR_BYTE);
}

/* hash_bytes is FNV-1a over n bytes with a final avalanche, for the handle map. */
static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ull;
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

/* parse_u64 parses a whole decimal string of n bytes (no sign, no spaces) into *out.
 * Returns 0, or -1 if it is empty, has another character or overflows. */
static int parse_u64(const char *s, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    if (n == 0 || n > 19)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    *out = v;
    return 0;
}

/* ------------------------------------------------------------------------------------- buffers */

/* struct bytes is a growable byte buffer with a consumed prefix [0, off). */
struct bytes {
    char *p;    /* storage, owned */
    size_t len; /* bytes stored */
    size_t off; /* bytes already consumed (read side) or written to the socket (write side) */
    size_t cap; /* allocated size of p */
};

/* bytes_reserve makes room for extra more bytes after len and returns where they go.
 * The pointer is valid until the next call that grows b. */
static char *bytes_reserve(struct bytes *b, size_t extra)
{
    if (b->cap - b->len < extra) {
        if (b->off > 0) { /* reclaim the consumed prefix first */
            memmove(b->p, b->p + b->off, b->len - b->off);
            b->len -= b->off;
            b->off = 0;
        }
        if (b->cap - b->len < extra) {
            size_t ncap = b->cap ? b->cap : 4096;
            while (ncap - b->len < extra)
                ncap *= 2;
            b->p = xrealloc(b->p, ncap);
            b->cap = ncap;
        }
    }
    return b->p + b->len;
}

/* bytes_free releases b's storage and empties it. */
static void bytes_free(struct bytes *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

/* ----------------------------------------------------------------------- server /proc sampling */


/* -------------------------------------------------------------------------------- bench state */

/* Job state bits. */
enum {
    J_SUBMITTED = 1, /* the submit packet was queued */
    J_CREATED = 2,   /* JOB_CREATED received, handle recorded */
    J_ASSIGNED = 4,  /* a worker received it */
    J_DONE = 8,      /* resolved: completion seen (foreground) or worked (drain) */
    J_FAILED = 16,   /* resolved: the server answered with ERROR / WORK_FAIL / WORK_EXCEPTION */
    J_GONE = 32,     /* the server no longer holds the job, so its handle may be reused */
};

/* struct anomalies counts everything a correct server would never cause. */
struct anomalies {
    uint64_t dup;         /* a job completed, assigned or acknowledged twice; a handle reused live */
    uint64_t missing;     /* jobs never resolved when the run ended */
    uint64_t wrong;       /* wrong payload, result, handle, function or unique */
    uint64_t unexpected;  /* a packet that has no place in the protocol state */
    uint64_t errors;      /* ERROR, WORK_FAIL and WORK_EXCEPTION packets */
    uint64_t protocol;    /* framing errors: bad magic, unknown command, malformed arguments */
    uint64_t disconnects; /* connections the server closed or refused */
    uint64_t queue_left;  /* jobs the admin "status" still lists after a drain */
};

/* enum role says what a connection does. */
enum role { ROLE_CLIENT, ROLE_WORKER, ROLE_IDLE, ROLE_PROBE, ROLE_BALLAST, ROLE_WAITER };

/* enum idle_kind says what an idle connection sends once connected, and what answer proves that
 * the server accepted and served it. */
enum idle_kind {
    IDLE_ECHO,   /* ECHO_REQ "idle" -> ECHO_RES (idle-conns, coalesce waiters) */
    IDLE_CLIENT, /* SUBMIT_JOB on the ballast function nobody works -> JOB_CREATED */
    IDLE_WORKER, /* CAN_DO the measured function, PRE_SLEEP, ECHO_REQ -> ECHO_RES; NOOPs ignored */
};

/* enum worker_state is a worker's place in the GRAB / PRE_SLEEP / NOOP cycle. */
enum worker_state {
    WS_SYNC,   /* CAN_DO sent, waiting for the ECHO_RES that proves they were processed */
    WS_READY,  /* synchronised, not yet grabbing */
    WS_GRAB,   /* a GRAB_JOB_UNIQ is outstanding */
    WS_SLEEP,  /* PRE_SLEEP sent, waiting for NOOP */
    WS_BROKEN, /* the server refused GRAB_JOB_UNIQ with ERROR; the worker idles */
};

/* struct conn is one connection to the server. */
struct conn {
    int fd;                  /* socket, -1 once closed */
    SSL *ssl;                /* --tls: the session over fd, NULL for plain TCP */
    enum role role;          /* what it does */
    uint32_t index;          /* position in bench.conns */
    int want_out;            /* EPOLLOUT is registered */
    int dirty;               /* on the flush list */
    int connecting;          /* idle connections: 1 connect in progress, 2 opening echo out */
    struct bytes in;         /* received, unparsed bytes */
    struct bytes out;        /* queued, unsent bytes */
    uint32_t *pend;          /* client: ring of job ids waiting for JOB_CREATED or ERROR */
    uint32_t pend_head;      /* client: index of the oldest entry in pend */
    uint32_t pend_count;     /* client: entries in pend */
    uint32_t pend_cap;       /* client: size of pend (the window) */
    uint32_t inflight;       /* client: jobs submitted and not yet resolved */
    enum worker_state wstate; /* worker: protocol state */
    int worker_no;           /* worker: 0..workers-1, selects its functions in fanout */
    uint64_t worked;         /* worker: jobs it completed */
    uint64_t echo_seq;       /* probe: sequence number of the outstanding echo */
    int noop_held;           /* coalesce worker: a NOOP arrived before the round was created */
    uint64_t round_seen;     /* coalesce waiter: 1 + the last round it saw completed */
};

/* struct bench is the whole state of one scenario run. */
struct bench {
    struct options opt;      /* the command line */
    int ep;                  /* epoll descriptor */
    SSL_CTX *tls_ctx;        /* --tls: the client context, NULL otherwise */
    struct sockaddr_storage addr; /* server address */
    socklen_t addrlen;       /* length of addr */
    struct conn **conns;     /* every connection, owned */
    size_t nconns;           /* entries in conns */
    size_t conns_cap;        /* allocated entries in conns */
    struct conn **dirty;     /* connections with output to flush */
    size_t ndirty;           /* entries in dirty */
    size_t dirty_cap;        /* allocated entries in dirty */
    int closing;             /* tearing down: lost connections are not anomalies */
    uint64_t seed;           /* payload seed for this run */
    char tag[32];            /* run tag that makes function names unique */
    char **fnames;           /* function names, nfuncs entries, owned */
    size_t *fname_len;       /* their lengths */
    size_t nfuncs;           /* 1, or --functions in fanout */
    int background;          /* clients submit SUBMIT_JOB_BG instead of SUBMIT_JOB */
    int window;              /* outstanding submits per client */
    size_t payload;          /* payload bytes */
    /* jobs */
    uint64_t njobs;          /* jobs in this run */
    uint64_t next_job;       /* next job id to submit */
    uint8_t *jstate;         /* per-job J_* bits */
    uint64_t *t_submit;      /* per-job submit time (ns) */
    uint32_t *owner;         /* per-job client connection index */
    uint32_t *h_off;         /* per-job offset of its handle in harena */
    uint8_t *h_len;          /* per-job handle length (0: none yet) */
    struct bytes harena;     /* job handles, back to back */
    uint32_t *hmap;          /* open-addressing map handle -> job id (JOB_NONE = empty) */
    size_t hmap_mask;        /* slots - 1 */
    uint64_t *lat;           /* latency samples (ns) of the measured phase */
    size_t nlat;             /* samples in lat */
    /* progress of the current phase */
    uint64_t resolved;       /* jobs resolved (done or failed) */
    uint64_t ok;             /* jobs resolved with everything verified */
    uint64_t t_last;         /* time of the last resolution */
    uint64_t last_packet;    /* time of the last packet received (stall detection) */
    int workers_synced;      /* workers past their CAN_DO/ECHO synchronisation */
    int drain_phase;         /* workers count resolutions (drain) instead of clients */
    uint64_t deadline;       /* the run's wall-time bound */
    /* idle-conns */
    long idle_open;          /* idle connections opened and answered */
    long idle_pending;       /* idle connections being opened */
    int idle_opening;        /* the loop keeps opening idle connections */
    long idle_next;          /* idle connections started */
    long idle_target;        /* idle connections to open in the current opening phase */
    enum idle_kind idle_kind; /* what those connections do */
    int spread_src;          /* bind idle connections to 127.0.0.1-8 (more than 28k of them) */
    uint64_t idle_noops;     /* NOOPs the idle workers received and ignored */
    /* ballast: state that the measured phase must not notice */
    char ballast_fn[96];     /* the function nobody works */
    size_t ballast_fn_len;   /* its length */
    uint64_t ballast_sent;   /* ballast background jobs submitted */
    uint64_t ballast_acked;  /* ballast background jobs acknowledged (or refused) */
    /* coalesce */
    uint64_t round;          /* the job (round) every waiter is submitting */
    long round_created;      /* waiters that got JOB_CREATED for it */
    long round_done;         /* waiters that got its WORK_COMPLETE */
    uint64_t t_wc;           /* when the worker queued the round's WORK_COMPLETE */
    struct conn *cworker;    /* the coalesce worker */
    struct conn *probe;      /* the echo-latency connection */
    uint64_t echo_target;    /* echoes to do in the current probe phase */
    uint64_t echo_done;      /* echoes verified in the current probe phase */
    /* diagnostics */
    struct anomalies an;     /* anomaly counters */
    uint64_t stray_noops;    /* NOOPs to a worker that was not sleeping (legal, informative) */
    uint64_t sleeps;         /* PRE_SLEEPs sent */
    unsigned reported;       /* detailed anomaly messages printed so far */
    unsigned char *scratch;  /* a buffer for payloads and results */
    size_t scratch_cap;      /* its size */
};

/* anomaly prints a detailed message for the first few anomalies (the counters are separate). */
static void anomaly(struct bench *b, const char *fmt, ...)
{
    if (b->reported++ >= 20) {
        if (b->reported == 21)
            fputs("spur-bench: further anomaly messages suppressed\n", stderr);
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    fputs("spur-bench: anomaly: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* scratch returns a scratch buffer of at least n bytes, valid until the next call. */
static unsigned char *scratch(struct bench *b, size_t n)
{
    if (b->scratch_cap < n) {
        b->scratch = xrealloc(b->scratch, n);
        b->scratch_cap = n;
    }
    return b->scratch;
}

/* ------------------------------------------------------------------------------- job tables */

/* jobs_alloc sizes the per-job tables for n jobs; every job starts unsubmitted. */
static void jobs_alloc(struct bench *b, uint64_t n)
{
    b->njobs = n;
    b->jstate = xcalloc(n, 1);
    b->t_submit = xcalloc(n, sizeof *b->t_submit);
    b->owner = xcalloc(n, sizeof *b->owner);
    b->h_off = xcalloc(n, sizeof *b->h_off);
    b->h_len = xcalloc(n, 1);
    b->lat = xcalloc(n, sizeof *b->lat);
    size_t slots = 1024;
    while (slots < 2 * n)
        slots *= 2;
    b->hmap = xrealloc(NULL, slots * sizeof *b->hmap);
    memset(b->hmap, 0xff, slots * sizeof *b->hmap); /* JOB_NONE everywhere */
    b->hmap_mask = slots - 1;
}

/* jobs_free releases the per-job tables. */
static void jobs_free(struct bench *b)
{
    free(b->jstate);
    free(b->t_submit);
    free(b->owner);
    free(b->h_off);
    free(b->h_len);
    free(b->lat);
    free(b->hmap);
    bytes_free(&b->harena);
    b->jstate = NULL;
    b->t_submit = NULL;
    b->owner = NULL;
    b->h_off = NULL;
    b->h_len = NULL;
    b->lat = NULL;
    b->hmap = NULL;
}

/* job_handle_is reports whether job's recorded handle is exactly h[0..n). */
static int job_handle_is(const struct bench *b, uint32_t job, const char *h, size_t n)
{
    return b->h_len[job] == n && memcmp(b->harena.p + b->h_off[job], h, n) == 0;
}

/* hmap_find returns the slot that holds handle h, or the empty slot where it would go. */
static size_t hmap_find(const struct bench *b, const char *h, size_t n)
{
    size_t i = (size_t)hash_bytes(h, n) & b->hmap_mask;
    while (b->hmap[i] != JOB_NONE && !job_handle_is(b, b->hmap[i], h, n))
        i = (i + 1) & b->hmap_mask;
    return i;
}

/* job_set_handle records h as job's handle after a JOB_CREATED. A handle still held by a job the
 * server has (a queued background job, a foreground job not completed) is a duplicate; the
 * handle of a job that is gone may legally be reused by the server.
 * Returns 0, or -1 after counting an anomaly. */
static int job_set_handle(struct bench *b, uint32_t job, const char *h, size_t n)
{
    if (n == 0 || n > PROTO_HANDLE_MAX) {
        b->an.wrong++;
        anomaly(b, "JOB_CREATED with a %zu-byte handle for job %" PRIu32, n, job);
        return -1;
    }
    size_t slot = hmap_find(b, h, n);
    uint32_t other = b->hmap[slot];
    if (other != JOB_NONE && !(b->jstate[other] & J_GONE)) {
        b->an.dup++;
        anomaly(b, "handle %.*s given to job %" PRIu32 " while job %" PRIu32 " still holds it",
                (int)n, h, job, other);
        return -1;
    }
    if (b->harena.len + n > UINT32_MAX)
        die("handle arena overflow");
    char *dst = bytes_reserve(&b->harena, n);
    memcpy(dst, h, n);
    b->h_off[job] = (uint32_t)b->harena.len;
    b->h_len[job] = (uint8_t)n;
    b->harena.len += n;
    b->hmap[slot] = job;
    return 0;
}

/* job_by_handle returns the job holding handle h, or JOB_NONE. */
static uint32_t job_by_handle(const struct bench *b, const char *h, size_t n)
{
    return b->hmap[hmap_find(b, h, n)];
}

/* job_resolve marks job resolved (done, or failed when failed != 0), records its latency when
 * want_latency, and counts it as ok when verified. gone says the server no longer holds it. */
static void job_resolve(struct bench *b, uint32_t job, int failed, int verified, int want_latency,
                        int gone)
{
    uint64_t t = now_ns();
    b->jstate[job] |= (uint8_t)((failed ? J_FAILED : J_DONE) | (gone ? J_GONE : 0));
    b->resolved++;
    b->t_last = t;
    if (!failed && verified) {
        b->ok++;
        if (want_latency)
            b->lat[b->nlat++] = t - b->t_submit[job];
    }
}

/* ------------------------------------------------------------------------------- connections */

static void conn_lost(struct bench *b, struct conn *c, const char *why);

/* conn_new wraps a connected or connecting non-blocking socket and registers it with epoll.
 * Returns the connection, owned by b. */
static struct conn *conn_new(struct bench *b, int fd, enum role role, int connecting)
{
    struct conn *c = xcalloc(1, sizeof *c);
    c->fd = fd;
    c->role = role;
    c->connecting = connecting;
    if (b->nconns == b->conns_cap) {
        b->conns_cap = b->conns_cap ? b->conns_cap * 2 : 64;
        b->conns = xrealloc(b->conns, b->conns_cap * sizeof *b->conns);
    }
    c->index = (uint32_t)b->nconns;
    b->conns[b->nconns++] = c;
    struct epoll_event ev = {.events = connecting ? EPOLLOUT : EPOLLIN, .data = {.ptr = c}};
    c->want_out = connecting;
    if (epoll_ctl(b->ep, EPOLL_CTL_ADD, fd, &ev) != 0)
        die("epoll_ctl: %s", strerror(errno));
    return c;
}

/* conn_close closes c's socket (it stays in b->conns, closed). With abort set the close sends
 * a reset instead of a FIN, so no TIME_WAIT state is left behind. */
static void conn_close(struct bench *b, struct conn *c, int abort_conn)
{
    if (c->fd < 0)
        return;
    epoll_ctl(b->ep, EPOLL_CTL_DEL, c->fd, NULL);
    if (c->ssl != NULL) {
        if (!abort_conn)
            (void)SSL_shutdown(c->ssl); /* one try at close_notify; never waits */
        SSL_free(c->ssl);
        c->ssl = NULL;
        ERR_clear_error();
    }
    if (abort_conn) {
        struct linger lg = {1, 0};
        setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    }
    close(c->fd);
    c->fd = -1;
}

/* conn_lost closes a connection the server dropped, counting it unless we are tearing down. */
static void conn_lost(struct bench *b, struct conn *c, const char *why)
{
    if (c->fd < 0)
        return;
    if (!b->closing) {
        b->an.disconnects++;
        anomaly(b, "connection %" PRIu32 " lost: %s", c->index, why);
    }
    if (c->role == ROLE_IDLE) {
        if (c->connecting)
            b->idle_pending--;
        c->connecting = 0;
    }
    conn_close(b, c, 0);
}

/* mark_dirty puts c on the flush list. */
static void mark_dirty(struct bench *b, struct conn *c)
{
    if (c->dirty)
        return;
    if (b->ndirty == b->dirty_cap) {
        b->dirty_cap = b->dirty_cap ? b->dirty_cap * 2 : 64;
        b->dirty = xrealloc(b->dirty, b->dirty_cap * sizeof *b->dirty);
    }
    b->dirty[b->ndirty++] = c;
    c->dirty = 1;
}

/* set_want_out registers or unregisters interest in writability. */
static void set_want_out(struct bench *b, struct conn *c, int on)
{
    if (c->want_out == on || c->fd < 0)
        return;
    struct epoll_event ev = {.events = EPOLLIN | (on ? EPOLLOUT : 0), .data = {.ptr = c}};
    if (epoll_ctl(b->ep, EPOLL_CTL_MOD, c->fd, &ev) != 0)
        die("epoll_ctl: %s", strerror(errno));
    c->want_out = on;
}

/* tls_io runs one SSL_write (write set) or SSL_read of up to len bytes on c. Returns the bytes
 * moved, 0 when the session would block (a read that needs the socket writable registers
 * EPOLLOUT), or -1 after conn_lost. */
static ssize_t tls_io(struct conn *c, int write, void *buf, size_t len)
{
    int n = len > INT_MAX ? INT_MAX : (int)len;
    ERR_clear_error();
    errno = 0;
    int r = write ? SSL_write(c->ssl, buf, n) : SSL_read(c->ssl, buf, n);
    if (r > 0)
        return r;
    int e = SSL_get_error(c->ssl, r);
    if (e == SSL_ERROR_WANT_READ)
        return 0;
    if (e == SSL_ERROR_WANT_WRITE) {
        set_want_out(tls_bench, c, 1);
        return 0;
    }
    char why[256] = "closed by the server";
    if (e == SSL_ERROR_SSL || ERR_peek_error() != 0)
        ERR_error_string_n(ERR_get_error(), why, sizeof why);
    else if (e == SSL_ERROR_SYSCALL && errno != 0)
        snprintf(why, sizeof why, "%s", strerror(errno));
    ERR_clear_error();
    conn_lost(tls_bench, c, why);
    return -1;
}

/* conn_flush writes as much queued output as the socket takes. */
static void conn_flush(struct bench *b, struct conn *c)
{
    if (c->fd < 0 || c->connecting == 1)
        return;
    while (c->out.off < c->out.len) {
        if (c->ssl != NULL) {
            ssize_t w = tls_io(c, 1, c->out.p + c->out.off, c->out.len - c->out.off);
            if (w > 0) {
                c->out.off += (size_t)w;
                continue;
            }
            if (w < 0)
                return; /* lost */
            break;      /* would block */
        }
        ssize_t w = send(c->fd, c->out.p + c->out.off, c->out.len - c->out.off, MSG_NOSIGNAL);
        if (w > 0) {
            c->out.off += (size_t)w;
        } else if (w < 0 && errno == EINTR) {
            continue;
        } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            break;
        } else {
            conn_lost(b, c, w < 0 ? strerror(errno) : "send returned 0");
            return;
        }
    }
    if (c->out.off == c->out.len) {
        c->out.off = c->out.len = 0;
        set_want_out(b, c, 0);
    } else {
        set_want_out(b, c, 1);
    }
}

/* flush_dirty flushes every connection with pending output (once per loop iteration). */
static void flush_dirty(struct bench *b)
{
    for (size_t i = 0; i < b->ndirty; i++) {
        b->dirty[i]->dirty = 0;
        conn_flush(b, b->dirty[i]);
    }
    b->ndirty = 0;
}

/* send_packet queues a request packet with nargs arguments on c. */
static void send_packet(struct bench *b, struct conn *c, uint32_t cmd, const struct proto_arg *args,
                        int nargs)
{
    size_t body = proto_body_size(args, nargs);
    if (body == SIZE_MAX)
        die("packet too large");
    char *dst = bytes_reserve(&c->out, PROTO_HEADER_SIZE + body);
    c->out.len += proto_encode((unsigned char *)dst, PROTO_MAGIC_REQ, cmd, args, nargs);
    mark_dirty(b, c);
}

/* send_empty queues a request packet without a body (GRAB_JOB_UNIQ, PRE_SLEEP). */
static void send_empty(struct bench *b, struct conn *c, uint32_t cmd)
{
    send_packet(b, c, cmd, NULL, 0);
}

/* socket_new_from creates a non-blocking TCP socket with TCP_NODELAY and starts connecting it.
 * With src >= 0 and an IPv4 server, the socket is first bound to the source address
 * 127.0.0.(1 + src) (port chosen at connect time), so more connections than one source
 * address has ephemeral ports can reach one server port over loopback.
 * Returns the fd and sets *in_progress, or -1 with errno set. */
static int socket_new_from(struct bench *b, int *in_progress, long src)
{
    int fd = socket(b->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (src >= 0 && b->addr.ss_family == AF_INET) {
#ifdef IP_BIND_ADDRESS_NO_PORT
        setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
#endif
        struct sockaddr_in sin = {.sin_family = AF_INET};
        sin.sin_addr.s_addr = htonl(0x7f000001u + (uint32_t)src);
        if (bind(fd, (struct sockaddr *)&sin, sizeof sin) != 0) {
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
    }
    *in_progress = 0;
    if (connect(fd, (struct sockaddr *)&b->addr, b->addrlen) != 0) {
        if (errno != EINPROGRESS) {
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
        *in_progress = 1;
    }
    return fd;
}

/* socket_new is socket_new_from with the default source address. */
static int socket_new(struct bench *b, int *in_progress)
{
    return socket_new_from(b, in_progress, -1);
}

/* tls_handshake runs the TLS client handshake on the connected socket fd (up to five seconds)
 * and verifies the server's certificate for --host. Returns the session, or NULL with the
 * reason in why. */
static SSL *tls_handshake(struct bench *b, int fd, char *why, size_t len)
{
    ERR_clear_error();
    SSL *ssl = SSL_new(b->tls_ctx);
    unsigned char a[16];
    const char *host = b->opt.host;
    int ip = inet_pton(AF_INET, host, a) == 1 || inet_pton(AF_INET6, host, a) == 1;
    if (ssl == NULL || SSL_set_fd(ssl, fd) != 1 ||
        (ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) != 1
            : SSL_set1_host(ssl, host) != 1 || SSL_set_tlsext_host_name(ssl, host) != 1)) {
        snprintf(why, len, "TLS setup failed");
        SSL_free(ssl);
        return NULL;
    }
    uint64_t deadline = now_ns() + 5000000000ull;
    for (;;) {
        ERR_clear_error();
        int r = SSL_connect(ssl);
        if (r == 1)
            return ssl;
        int e = SSL_get_error(ssl, r);
        uint64_t t = now_ns();
        if ((e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) && t < deadline) {
            struct pollfd pfd = {.fd = fd, .events = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT};
            (void)poll(&pfd, 1, (int)((deadline - t) / 1000000 + 1));
            continue;
        }
        long vr = SSL_get_verify_result(ssl);
        if (t >= deadline)
            snprintf(why, len, "timed out");
        else if (vr != X509_V_OK)
            snprintf(why, len, "server certificate not verified: %s",
                     X509_verify_cert_error_string(vr));
        else if (ERR_peek_error() != 0)
            ERR_error_string_n(ERR_get_error(), why, len);
        else
            snprintf(why, len, "the server closed the connection");
        ERR_clear_error();
        SSL_free(ssl);
        return NULL;
    }
}

/* tls_setup builds b->tls_ctx from --tls-ca, --tls-cert and --tls-key, or exits with status 2. */
static void tls_setup(struct bench *b)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == NULL)
        die("TLS: cannot create a context");
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_ENABLE_PARTIAL_WRITE);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    if (b->opt.tls_ca != NULL ? SSL_CTX_load_verify_locations(ctx, b->opt.tls_ca, NULL) != 1
                              : SSL_CTX_set_default_verify_paths(ctx) != 1)
        die("TLS: cannot load the CA file %s", b->opt.tls_ca ? b->opt.tls_ca : "(system)");
    if (b->opt.tls_cert != NULL &&
        (SSL_CTX_use_certificate_chain_file(ctx, b->opt.tls_cert) != 1 ||
         SSL_CTX_use_PrivateKey_file(ctx, b->opt.tls_key ? b->opt.tls_key : b->opt.tls_cert,
                                     SSL_FILETYPE_PEM) != 1 ||
         SSL_CTX_check_private_key(ctx) != 1))
        die("TLS: cannot load the client certificate %s and its key", b->opt.tls_cert);
    b->tls_ctx = ctx;
}

/* connect_wait connects a socket and waits up to five seconds for the handshake.
 * Returns the connection, or NULL after counting a disconnect. */
static struct conn *connect_wait(struct bench *b, enum role role)
{
    int in_progress;
    int fd = socket_new(b, &in_progress);
    if (fd >= 0 && in_progress) {
        struct pollfd pfd = {.fd = fd, .events = POLLOUT};
        int err = 0;
        socklen_t el = sizeof err;
        int r;
        do {
            r = poll(&pfd, 1, 5000);
        } while (r < 0 && errno == EINTR);
        if (r <= 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0 || err != 0) {
            errno = r == 0 ? ETIMEDOUT : (err ? err : errno);
            close(fd);
            fd = -1;
        }
    }
    if (fd < 0) {
        b->an.disconnects++;
        anomaly(b, "cannot connect to %s:%s: %s", b->opt.host, b->opt.port, strerror(errno));
        return NULL;
    }
    SSL *ssl = NULL;
    if (b->tls_ctx != NULL) {
        char why[512];
        ssl = tls_handshake(b, fd, why, sizeof why);
        if (ssl == NULL) {
            close(fd);
            b->an.disconnects++;
            anomaly(b, "TLS handshake with %s:%s failed: %s", b->opt.host, b->opt.port, why);
            return NULL;
        }
    }
    struct conn *c = conn_new(b, fd, role, 0);
    c->ssl = ssl;
    return c;
}

/* ------------------------------------------------------------------------- function names */

/* make_functions creates n function names unique to this run: "spur-bench-<scenario>-<tag>"
 * when n == 1, else that prefix plus "-<i>". */
static void make_functions(struct bench *b, size_t n)
{
    b->nfuncs = n;
    b->fnames = xcalloc(n, sizeof *b->fnames);
    b->fname_len = xcalloc(n, sizeof *b->fname_len);
    for (size_t i = 0; i < n; i++) {
        char buf[128];
        int k = n == 1 ? snprintf(buf, sizeof buf, "spur-bench-%s-%s",
                                  scenario_names[b->opt.scenario], b->tag)
                       : snprintf(buf, sizeof buf, "spur-bench-%s-%s-%zu",
                                  scenario_names[b->opt.scenario], b->tag, i);
        b->fnames[i] = strdup(buf);
        if (b->fnames[i] == NULL)
            die("out of memory");
        b->fname_len[i] = (size_t)k;
    }
}

/* job_func returns the index of the function job is submitted to: jobs are dealt over the
 * functions in order, so every function gets the same share. */
static size_t job_func(const struct bench *b, uint64_t job)
{
    return (size_t)(job % b->nfuncs);
}

/* worker_can_do reports whether worker w registered function f: worker w has every function
 * whose index is w modulo the number of workers (with fewer functions than workers, worker w has
 * function w modulo the number of functions). */
static int worker_can_do(const struct bench *b, int w, size_t f)
{
    if (b->nfuncs == 1)
        return 1; /* one function: every worker has it */
    if (b->nfuncs < (size_t)b->opt.workers) /* fewer functions than workers: w has w mod n */
        return (size_t)w % b->nfuncs == f;
    return (int)(f % (size_t)b->opt.workers) == w;
}

/* ------------------------------------------------------------------------------------ clients */

/* client_submit queues the next job on client c. */
static void client_submit(struct bench *b, struct conn *c)
{
    uint32_t job = (uint32_t)b->next_job++;
    char unique[40];
    int ul = b->opt.keys > 0
                 ? snprintf(unique, sizeof unique, "k%" PRIu32 ":%" PRIu32,
                            job % (uint32_t)b->opt.keys, job)
                 : snprintf(unique, sizeof unique, "%" PRIu32, job);
    unsigned char *payload = scratch(b, b->payload);
    gen_payload(b->seed, job, payload, b->payload);
    size_t f = job_func(b, job);
    struct proto_arg args[3] = {
        {b->fnames[f], b->fname_len[f]}, {unique, (size_t)ul}, {payload, b->payload}};
    b->t_submit[job] = now_ns();
    b->jstate[job] |= J_SUBMITTED;
    b->owner[job] = c->index;
    c->pend[(c->pend_head + c->pend_count) % c->pend_cap] = job;
    c->pend_count++;
    c->inflight++;
    send_packet(b, c, b->background ? CMD_SUBMIT_JOB_BG : CMD_SUBMIT_JOB, args, 3);
}

/* client_refill submits jobs on c until its window is full or every job is out. */
static void client_refill(struct bench *b, struct conn *c)
{
    while (c->fd >= 0 && c->inflight < (uint32_t)b->window && b->next_job < b->njobs)
        client_submit(b, c);
}

/* client_pop returns the oldest job on c still waiting for JOB_CREATED, or JOB_NONE. */
static uint32_t client_pop(struct conn *c)
{
    if (c->pend_count == 0)
        return JOB_NONE;
    uint32_t job = c->pend[c->pend_head];
    c->pend_head = (c->pend_head + 1) % c->pend_cap;
    c->pend_count--;
    return job;
}

/* client_finish resolves a job on its client and refills the window. A background job that was
 * acknowledged stays on the server (not gone); anything else the client resolves is gone. */
static void client_finish(struct bench *b, struct conn *c, uint32_t job, int failed, int verified)
{
    job_resolve(b, job, failed, verified, 1, failed || !b->background);
    c->inflight--;
    client_refill(b, c);
}

/* client_work_complete checks a WORK_COMPLETE: known handle, right connection, first
 * completion, and the result is the worker's transformation of the job's payload. */
static void client_work_complete(struct bench *b, struct conn *c, const struct pb_packet *pkt)
{
    uint32_t job = job_by_handle(b, pkt->arg[0], pkt->len[0]);
    if (job == JOB_NONE) {
        b->an.unexpected++;
        anomaly(b, "WORK_COMPLETE for unknown handle %.*s", (int)pkt->len[0], pkt->arg[0]);
        return;
    }
    if (b->jstate[job] & (J_DONE | J_FAILED)) {
        b->an.dup++;
        anomaly(b, "second WORK_COMPLETE for job %" PRIu32, job);
        return;
    }
    if (b->owner[job] != c->index) {
        b->an.unexpected++;
        anomaly(b, "WORK_COMPLETE for job %" PRIu32 " on connection %" PRIu32 ", not its client",
                job, c->index);
        return;
    }
    unsigned char *want = scratch(b, 2 * b->payload);
    gen_payload(b->seed, job, want, b->payload);
    transform(want, b->payload, want + b->payload);
    int verified = pkt->data_len == b->payload &&
                   memcmp(pkt->data, want + b->payload, b->payload) == 0;
    if (!verified) {
        b->an.wrong++;
        anomaly(b, "wrong result for job %" PRIu32 " (%" PRIu32 " bytes)", job, pkt->data_len);
    }
    client_finish(b, c, job, 0, verified);
}

/* client_packet handles one packet a client connection received. */
static void client_packet(struct bench *b, struct conn *c, const struct pb_packet *pkt)
{
    uint32_t job;
    switch (pkt->cmd) {
    case CMD_JOB_CREATED:
        job = client_pop(c);
        if (job == JOB_NONE) {
            b->an.unexpected++;
            anomaly(b, "JOB_CREATED with no submit outstanding");
            return;
        }
        b->jstate[job] |= J_CREATED;
        {
            int good = job_set_handle(b, job, pkt->arg[0], pkt->len[0]) == 0;
            if (b->background) /* the acknowledgement is the whole job */
                client_finish(b, c, job, 0, good);
        }
        return;
    case CMD_WORK_COMPLETE:
        if (b->background)
            break;
        client_work_complete(b, c, pkt);
        return;
    case CMD_OPTION_RES: /* --client-option accepted */
        if (b->opt.client_option != NULL)
            return;
        break;
    case CMD_ERROR:
        b->an.errors++;
        anomaly(b, "ERROR %.*s: %.*s", (int)pkt->len[0], pkt->arg[0], (int)pkt->len[1],
                pkt->arg[1]);
        job = client_pop(c); /* a client only sends submits: the oldest one was refused */
        if (job != JOB_NONE)
            client_finish(b, c, job, 1, 0);
        return;
    case CMD_WORK_FAIL:
    case CMD_WORK_EXCEPTION:
        b->an.errors++;
        job = job_by_handle(b, pkt->arg[0], pkt->len[0]);
        anomaly(b, "%s for handle %.*s", proto_cmd_name(pkt->cmd), (int)pkt->len[0], pkt->arg[0]);
        if (job != JOB_NONE && b->owner[job] == c->index &&
            !(b->jstate[job] & (J_DONE | J_FAILED)))
            client_finish(b, c, job, 1, 0);
        return;
    default:
        break;
    }
    b->an.unexpected++;
    anomaly(b, "client received %s", proto_cmd_name(pkt->cmd));
}

/* ------------------------------------------------------------------------------------ workers */

/* worker_check_assign verifies a JOB_ASSIGN_UNIQ and returns the job id, or JOB_NONE when the
 * unique does not name a job of this run. Counts anomalies for every mismatch. */
static uint32_t worker_check_assign(struct bench *b, struct conn *c, const struct pb_packet *pkt,
                                    int *verified)
{
    uint64_t id;
    *verified = 0;
    const char *u = pkt->arg[2];
    size_t ul = pkt->len[2];
    const char *colon = b->opt.keys > 0 ? memchr(u, ':', ul) : NULL;
    if (colon != NULL) { /* "k<key>:<job>" (--keys) */
        ul -= (size_t)(colon + 1 - u);
        u = colon + 1;
    }
    if (parse_u64(u, ul, &id) != 0 || id >= b->njobs ||
        !(b->jstate[id] & J_SUBMITTED)) {
        b->an.wrong++;
        anomaly(b, "JOB_ASSIGN_UNIQ with unknown unique %.*s", (int)pkt->len[2], pkt->arg[2]);
        return JOB_NONE;
    }
    uint32_t job = (uint32_t)id;
    int good = 1;
    if (b->jstate[job] & J_ASSIGNED) {
        b->an.dup++;
        anomaly(b, "job %" PRIu32 " assigned twice", job);
        good = 0;
    }
    b->jstate[job] |= J_ASSIGNED;
    size_t f = job_func(b, job);
    if (pkt->len[1] != b->fname_len[f] || memcmp(pkt->arg[1], b->fnames[f], pkt->len[1]) != 0 ||
        !worker_can_do(b, c->worker_no, f)) {
        b->an.wrong++;
        anomaly(b, "job %" PRIu32 " assigned with function %.*s to worker %d", job,
                (int)pkt->len[1], pkt->arg[1], c->worker_no);
        good = 0;
    }
    /* The client may not have seen JOB_CREATED yet; compare handles only when it has. */
    if ((b->jstate[job] & J_CREATED) && !job_handle_is(b, job, pkt->arg[0], pkt->len[0])) {
        b->an.wrong++;
        anomaly(b, "job %" PRIu32 " assigned with handle %.*s, created as %.*s", job,
                (int)pkt->len[0], pkt->arg[0], (int)b->h_len[job], b->harena.p + b->h_off[job]);
        good = 0;
    }
    unsigned char *want = scratch(b, b->payload);
    gen_payload(b->seed, job, want, b->payload);
    if (pkt->data_len != b->payload || memcmp(pkt->data, want, b->payload) != 0) {
        b->an.wrong++;
        anomaly(b, "job %" PRIu32 " assigned with a wrong payload (%" PRIu32 " bytes)", job,
                pkt->data_len);
        good = 0;
    }
    *verified = good;
    return job;
}

/* worker_assign handles JOB_ASSIGN_UNIQ: verify, answer WORK_COMPLETE with the transformed
 * payload, and grab again in the same write. */
static void worker_assign(struct bench *b, struct conn *c, const struct pb_packet *pkt)
{
    if (c->wstate != WS_GRAB) {
        b->an.unexpected++;
        anomaly(b, "JOB_ASSIGN_UNIQ to worker %d that did not grab", c->worker_no);
    }
    int verified;
    uint32_t job = worker_check_assign(b, c, pkt, &verified);
    unsigned char *result = scratch(b, pkt->data_len);
    transform((const unsigned char *)pkt->data, pkt->data_len, result);
    struct proto_arg args[2] = {{pkt->arg[0], pkt->len[0]}, {result, pkt->data_len}};
    if (b->opt.scenario == SC_COALESCE)
        b->t_wc = now_ns();
    send_packet(b, c, CMD_WORK_COMPLETE, args, 2);
    c->worked++;
    if (b->drain_phase && job != JOB_NONE && !(b->jstate[job] & (J_DONE | J_FAILED)))
        job_resolve(b, job, 0, verified, 0, 1);
    if (b->opt.scenario == SC_COALESCE) { /* sleep at once: the next round wakes it */
        send_empty(b, c, CMD_PRE_SLEEP);
        c->wstate = WS_SLEEP;
        b->sleeps++;
        return;
    }
    send_empty(b, c, CMD_GRAB_JOB_UNIQ);
    c->wstate = WS_GRAB;
}

/* worker_packet handles one packet a worker connection received. */
static void worker_packet(struct bench *b, struct conn *c, const struct pb_packet *pkt)
{
    switch (pkt->cmd) {
    case CMD_ECHO_RES:
        if (c->wstate != WS_SYNC)
            break;
        c->wstate = WS_READY;
        b->workers_synced++;
        return;
    case CMD_JOB_ASSIGN_UNIQ:
        worker_assign(b, c, pkt);
        return;
    case CMD_NO_JOB:
        if (c->wstate != WS_GRAB)
            break;
        send_empty(b, c, CMD_PRE_SLEEP);
        c->wstate = WS_SLEEP;
        b->sleeps++;
        return;
    case CMD_NOOP:
        if (c->wstate == WS_SLEEP && b->opt.scenario == SC_COALESCE &&
            b->round_created < b->opt.waiters) {
            c->noop_held = 1; /* grab once every waiter has joined the job */
            return;
        }
        if (c->wstate == WS_SLEEP) {
            send_empty(b, c, CMD_GRAB_JOB_UNIQ);
            c->wstate = WS_GRAB;
        } else {
            b->stray_noops++; /* harmless: the worker is already awake */
        }
        return;
    case CMD_ERROR:
        b->an.errors++;
        anomaly(b, "worker %d got ERROR %.*s: %.*s", c->worker_no, (int)pkt->len[0], pkt->arg[0],
                (int)pkt->len[1], pkt->arg[1]);
        if (c->wstate == WS_GRAB || c->wstate == WS_SLEEP)
            c->wstate = WS_BROKEN;
        return;
    default:
        break;
    }
    b->an.unexpected++;
    anomaly(b, "worker %d in state %d received %s", c->worker_no, (int)c->wstate,
            proto_cmd_name(pkt->cmd));
}

/* start_workers connects the workers, registers their functions (CAN_DO) and sends an ECHO_REQ
 * whose reply proves the server processed the registrations. Returns 0, or -1 if one could
 * not connect. */
static int start_workers(struct bench *b)
{
    for (int w = 0; w < b->opt.workers; w++) {
        struct conn *c = connect_wait(b, ROLE_WORKER);
        if (c == NULL)
            return -1;
        c->worker_no = w;
        c->wstate = WS_SYNC;
        for (size_t f = 0; f < b->nfuncs; f++) {
            if (!worker_can_do(b, w, f))
                continue;
            struct proto_arg a = {b->fnames[f], b->fname_len[f]};
            send_packet(b, c, CMD_CAN_DO, &a, 1);
        }
        struct proto_arg e = {"sync", 4};
        send_packet(b, c, CMD_ECHO_REQ, &e, 1);
    }
    return 0;
}

/* workers_grab makes every synchronised worker start grabbing. */
static void workers_grab(struct bench *b)
{
    for (size_t i = 0; i < b->nconns; i++) {
        struct conn *c = b->conns[i];
        if (c->role == ROLE_WORKER && c->fd >= 0 && c->wstate == WS_READY) {
            send_empty(b, c, CMD_GRAB_JOB_UNIQ);
            c->wstate = WS_GRAB;
        }
    }
}

/* --------------------------------------------------------------- idle connections and probe */

/* probe_send queues the next echo on the probe connection. */
static void probe_send(struct bench *b, struct conn *c)
{
    unsigned char *payload = scratch(b, 16);
    gen_payload(b->seed, c->echo_seq, payload, 16);
    b->t_submit[c->echo_seq % b->njobs] = now_ns();
    struct proto_arg a = {payload, 16};
    send_packet(b, c, CMD_ECHO_REQ, &a, 1);
}

/* probe_packet checks an ECHO_RES on the probe and sends the next echo. */
static void probe_packet(struct bench *b, struct conn *c, const struct pb_packet *pkt)
{
    if (pkt->cmd != CMD_ECHO_RES || b->echo_done >= b->echo_target) {
        if (pkt->cmd == CMD_ERROR)
            b->an.errors++;
        else
            b->an.unexpected++;
        anomaly(b, "probe received %s", proto_cmd_name(pkt->cmd));
        return;
    }
    unsigned char *want = scratch(b, 16);
    gen_payload(b->seed, c->echo_seq, want, 16);
    uint64_t t = now_ns();
    b->t_last = t;
    if (pkt->data_len != 16 || memcmp(pkt->data, want, 16) != 0) {
        b->an.wrong++;
        anomaly(b, "wrong ECHO_RES payload on the probe");
    } else {
        b->lat[b->nlat++] = t - b->t_submit[c->echo_seq % b->njobs];
        b->ok++;
    }
    b->echo_done++;
    c->echo_seq++;
    if (b->echo_done < b->echo_target)
        probe_send(b, c);
}

/* idle_packet handles a reply on an idle connection: only its one opening ECHO_RES is expected. */
static void idle_packet(struct bench *b, struct conn *c, const struct pb_packet *pkt)
{
    if (pkt->cmd == CMD_NOOP && b->idle_kind == IDLE_WORKER) {
        b->idle_noops++; /* a sleeping idle worker is woken and ignores it */
        return;
    }
    if (pkt->cmd == CMD_JOB_CREATED && c->connecting == 2 && b->idle_kind == IDLE_CLIENT) {
        c->connecting = 0;
        b->idle_pending--;
        if (pkt->len[0] > 0 && pkt->len[0] <= PROTO_HANDLE_MAX) {
            b->idle_open++;
        } else {
            b->an.wrong++;
            anomaly(b, "JOB_CREATED with a %zu-byte handle on a ballast client", pkt->len[0]);
        }
        return;
    }
    if (pkt->cmd == CMD_ECHO_RES && c->connecting == 2 && b->idle_kind != IDLE_CLIENT) {
        c->connecting = 0;
        b->idle_pending--;
        if (pkt->data_len == 4 && memcmp(pkt->data, "idle", 4) == 0) {
            b->idle_open++;
        } else {
            b->an.wrong++;
            anomaly(b, "wrong ECHO_RES payload on an idle connection");
        }
        return;
    }
    if (pkt->cmd == CMD_ERROR)
        b->an.errors++;
    else
        b->an.unexpected++;
    anomaly(b, "idle connection received %s", proto_cmd_name(pkt->cmd));
}

/* idle_connected finishes a non-blocking connect and sends the opening echo. The connection
 * stays in state connecting == 2 until the echo comes back, which proves the server accepted
 * and served it. */
static void idle_connected(struct bench *b, struct conn *c)
{
    int err = 0;
    socklen_t el = sizeof err;
    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0 || err != 0) {
        conn_lost(b, c, strerror(err ? err : errno));
        return;
    }
    c->connecting = 2;
    if (b->idle_kind == IDLE_CLIENT) {
        char unique[32];
        int ul = snprintf(unique, sizeof unique, "c%" PRIu32, c->index);
        struct proto_arg args[3] = {
            {b->ballast_fn, b->ballast_fn_len}, {unique, (size_t)ul}, {"ballast-client", 14}};
        send_packet(b, c, CMD_SUBMIT_JOB, args, 3);
        return;
    }
    if (b->idle_kind == IDLE_WORKER) {
        struct proto_arg f = {b->fnames[0], b->fname_len[0]};
        send_packet(b, c, CMD_CAN_DO, &f, 1);
        send_empty(b, c, CMD_PRE_SLEEP);
    }
    struct proto_arg a = {"idle", 4};
    send_packet(b, c, CMD_ECHO_REQ, &a, 1);
}

/* idle_open_more starts connecting idle connections while fewer than connect_window are
 * being opened. */
static void idle_open_more(struct bench *b)
{
    while (b->idle_pending < b->opt.connect_window && b->idle_next < b->idle_target) {
        int in_progress;
        int fd = socket_new_from(b, &in_progress, b->spread_src ? b->idle_next % 8 : -1);
        b->idle_next++;
        if (fd < 0) {
            b->an.disconnects++;
            anomaly(b, "idle connect: %s", strerror(errno));
            continue;
        }
        struct conn *c = conn_new(b, fd, ROLE_IDLE, 1);
        b->idle_pending++;
        if (!in_progress) {
            set_want_out(b, c, 0);
            idle_connected(b, c);
        }
    }
}

/* ------------------------------------------------------------------------------------ ballast */

#define BALLAST_CONNS 4      /* connections that queue the ballast background jobs */
#define BALLAST_WINDOW 256   /* outstanding ballast submits per connection */
#define BALLAST_PAYLOAD 64   /* payload bytes of a ballast job */

/* ballast_refill submits ballast background jobs on c until its window is full or all are out.
 * They go to the ballast function, which no worker ever registers, so they stay queued. */
static void ballast_refill(struct bench *b, struct conn *c)
{
    static const char payload[BALLAST_PAYLOAD] = "ballast";
    while (c->fd >= 0 && c->inflight < BALLAST_WINDOW &&
           b->ballast_sent < (uint64_t)b->opt.ballast_jobs) {
        char unique[24];
        int ul = snprintf(unique, sizeof unique, "b%" PRIu64, b->ballast_sent++);
        struct proto_arg args[3] = {
            {b->ballast_fn, b->ballast_fn_len}, {unique, (size_t)ul}, {payload, sizeof payload}};
        send_packet(b, c, CMD_SUBMIT_JOB_BG, args, 3);
        c->inflight++;
    }
}

/* ballast_packet counts the acknowledgement of a ballast job and refills the window. */
static void ballast_packet(struct bench *b, struct conn *c, const struct pb_packet *pkt)
{
    if ((pkt->cmd == CMD_JOB_CREATED || pkt->cmd == CMD_ERROR) && c->inflight > 0) {
        if (pkt->cmd == CMD_ERROR) {
            b->an.errors++;
            anomaly(b, "ballast job refused: ERROR %.*s", (int)pkt->len[0], pkt->arg[0]);
        }
        c->inflight--;
        b->ballast_acked++;
        ballast_refill(b, c);
        return;
    }
    b->an.unexpected++;
    anomaly(b, "ballast connection received %s", proto_cmd_name(pkt->cmd));
}

/* ------------------------------------------------------------------------------- coalesce */

/* waiter_round_start makes every waiter submit the current round's job: same function, same
 * unique (the round number), same payload, so the server should coalesce them into one job. */
static void waiter_round_start(struct bench *b)
{
    uint64_t r = b->round;
    char unique[24];
    int ul = snprintf(unique, sizeof unique, "%" PRIu64, r);
    unsigned char *payload = scratch(b, b->payload);
    gen_payload(b->seed, r, payload, b->payload);
    struct proto_arg args[3] = {
        {b->fnames[0], b->fname_len[0]}, {unique, (size_t)ul}, {payload, b->payload}};
    b->round_created = b->round_done = 0;
    b->jstate[r] |= J_SUBMITTED;
    b->t_submit[r] = now_ns();
    for (size_t i = 0; i < b->nconns; i++)
        if (b->conns[i]->role == ROLE_WAITER && b->conns[i]->fd >= 0)
            send_packet(b, b->conns[i], CMD_SUBMIT_JOB, args, 3);
}

/* waiter_packet handles a packet on a coalesce waiter: every waiter must get the same handle
 * for the round, then exactly one WORK_COMPLETE with the right result. The worker grabs only
 * once every waiter has its JOB_CREATED, so all of them are attached before the job runs. */
static void waiter_packet(struct bench *b, struct conn *c, const struct pb_packet *pkt)
{
    uint64_t r = b->round;
    if (r >= b->njobs) {
        b->an.unexpected++;
        anomaly(b, "waiter received %s after the last round", proto_cmd_name(pkt->cmd));
        return;
    }
    uint32_t job = (uint32_t)r;
    switch (pkt->cmd) {
    case CMD_JOB_CREATED:
        if (b->round_created >= b->opt.waiters) {
            b->an.unexpected++;
            anomaly(b, "more JOB_CREATED than waiters in round %" PRIu64, r);
            return;
        }
        if (b->round_created == 0) {
            job_set_handle(b, job, pkt->arg[0], pkt->len[0]);
        } else if (!job_handle_is(b, job, pkt->arg[0], pkt->len[0])) {
            b->an.wrong++;
            anomaly(b, "round %" PRIu64 " not coalesced: handle %.*s, first waiter got %.*s", r,
                    (int)pkt->len[0], pkt->arg[0], (int)b->h_len[job],
                    b->harena.p + b->h_off[job]);
        }
        b->jstate[job] |= J_CREATED;
        if (++b->round_created == b->opt.waiters && b->cworker != NULL &&
            b->cworker->noop_held && b->cworker->wstate == WS_SLEEP) {
            b->cworker->noop_held = 0;
            send_empty(b, b->cworker, CMD_GRAB_JOB_UNIQ);
            b->cworker->wstate = WS_GRAB;
        }
        return;
    case CMD_WORK_COMPLETE: {
        if (!job_handle_is(b, job, pkt->arg[0], pkt->len[0]) || c->round_seen == r + 1) {
            b->an.unexpected++;
            anomaly(b, "WORK_COMPLETE %.*s on a waiter in round %" PRIu64 " (duplicate or stray)",
                    (int)pkt->len[0], pkt->arg[0], r);
            return;
        }
        c->round_seen = r + 1;
        unsigned char *want = scratch(b, 2 * b->payload);
        gen_payload(b->seed, r, want, b->payload);
        transform(want, b->payload, want + b->payload);
        uint64_t t = now_ns();
        if (pkt->data_len == b->payload && memcmp(pkt->data, want + b->payload, b->payload) == 0) {
            b->ok++;
            b->lat[b->nlat++] = t - b->t_wc;
        } else {
            b->an.wrong++;
            anomaly(b, "wrong result for round %" PRIu64, r);
        }
        if (++b->round_done < b->opt.waiters)
            return;
        b->jstate[job] |= J_DONE | J_GONE;
        b->resolved++;
        b->t_last = t;
        if (++b->round < b->njobs)
            waiter_round_start(b);
        return;
    }
    case CMD_ERROR:
    case CMD_WORK_FAIL:
    case CMD_WORK_EXCEPTION:
        b->an.errors++;
        anomaly(b, "waiter received %s", proto_cmd_name(pkt->cmd));
        return;
    default:
        break;
    }
    b->an.unexpected++;
    anomaly(b, "waiter received %s", proto_cmd_name(pkt->cmd));
}

/* --------------------------------------------------------------------------------- event loop */

/* dispatch hands one parsed packet to its connection's role. */
static void dispatch(struct bench *b, struct conn *c, const struct pb_packet *pkt)
{
    switch (c->role) {
    case ROLE_CLIENT: client_packet(b, c, pkt); break;
    case ROLE_WORKER: worker_packet(b, c, pkt); break;
    case ROLE_IDLE: idle_packet(b, c, pkt); break;
    case ROLE_PROBE: probe_packet(b, c, pkt); break;
    case ROLE_BALLAST: ballast_packet(b, c, pkt); break;
    case ROLE_WAITER: waiter_packet(b, c, pkt); break;
    }
}

/* conn_parse parses and dispatches every complete packet in c's input. */
static void conn_parse(struct bench *b, struct conn *c)
{
    while (c->fd >= 0 && c->in.off < c->in.len) {
        struct pb_packet pkt;
        size_t used = 0;
        enum pb_status st = pb_parse(c->in.p + c->in.off, c->in.len - c->in.off, PROTO_MAGIC_RES,
                                     MAX_BODY, &pkt, &used);
        if (st == PB_NEED_MORE)
            break;
        b->last_packet = now_ns();
        if (st == PB_OK) {
            c->in.off += used;
            dispatch(b, c, &pkt);
            continue;
        }
        b->an.protocol++;
        anomaly(b, "framing: %s (command %" PRIu32 ")", pb_status_name(st), pkt.cmd);
        if (st == PB_BAD_MAGIC || st == PB_TOO_LARGE) {
            conn_close(b, c, 0); /* framing is lost */
            return;
        }
        c->in.off += used;
    }
    if (c->in.off == c->in.len)
        c->in.off = c->in.len = 0;
}

/* conn_readable reads what the socket has (bounded per call for fairness) and parses it. */
static void conn_readable(struct bench *b, struct conn *c)
{
    /* TLS: read until the session would block, since bytes it has already decrypted are
     * invisible to epoll (one record, at most 16 KiB, per SSL_read). */
    while (c->ssl != NULL && c->fd >= 0) {
        char *dst = bytes_reserve(&c->in, READ_CHUNK);
        ssize_t r = tls_io(c, 0, dst, c->in.cap - c->in.len);
        if (r <= 0)
            return; /* would block, or lost */
        c->in.len += (size_t)r;
        conn_parse(b, c);
    }
    for (int round = 0; round < 4 && c->fd >= 0; round++) {
        char *dst = bytes_reserve(&c->in, READ_CHUNK);
        size_t space = c->in.cap - c->in.len;
        ssize_t r = recv(c->fd, dst, space, 0);
        if (r > 0) {
            c->in.len += (size_t)r;
            conn_parse(b, c);
            if ((size_t)r < space)
                return;
        } else if (r == 0) {
            conn_lost(b, c, "closed by the server");
            return;
        } else if (errno == EINTR) {
            continue;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            return;
        } else {
            conn_lost(b, c, strerror(errno));
            return;
        }
    }
}

/* done_fn tells run_loop whether the current phase is complete. */
typedef int (*done_fn)(const struct bench *b);

static uint64_t anomalies_total(const struct anomalies *a);

/* run_loop drives the connections until done(b), the deadline, a stall of --stall seconds
 * without any packet, more than --max-anomalies anomalies, or a signal. Returns 0 when done,
 * -1 otherwise (with a message). */
static int run_loop(struct bench *b, done_fn done, const char *phase)
{
    struct epoll_event evs[EVENTS_MAX];
    uint64_t stall_ns = (uint64_t)(b->opt.stall_s * 1e9);
    b->last_packet = now_ns();
    for (;;) {
        if (b->idle_opening)
            idle_open_more(b);
        flush_dirty(b);
        if (done(b))
            return 0;
        uint64_t t = now_ns();
        if (stop_requested) {
            fprintf(stderr, "spur-bench: %s: interrupted\n", phase);
            return -1;
        }
        if (t >= b->deadline) {
            fprintf(stderr, "spur-bench: %s: wall-time limit (--timeout) reached\n", phase);
            return -1;
        }
        if (anomalies_total(&b->an) > (uint64_t)b->opt.max_anomalies) {
            fprintf(stderr, "spur-bench: %s: more than %lld anomalies, giving up\n", phase,
                    b->opt.max_anomalies);
            return -1;
        }
        if (t - b->last_packet > stall_ns) {
            fprintf(stderr, "spur-bench: %s: no packet from the server for %.1f s, giving up\n",
                    phase, b->opt.stall_s);
            return -1;
        }
        int n = epoll_wait(b->ep, evs, EVENTS_MAX, 20);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            die("epoll_wait: %s", strerror(errno));
        }
        for (int i = 0; i < n; i++) {
            struct conn *c = evs[i].data.ptr;
            if (c->fd < 0)
                continue;
            if (c->connecting == 1) {
                set_want_out(b, c, 0);
                idle_connected(b, c);
                continue;
            }
            if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
                conn_readable(b, c);
            if (c->fd >= 0 && (evs[i].events & EPOLLOUT))
                conn_flush(b, c);
        }
    }
}

/* Phase completion tests. */
static int done_all_resolved(const struct bench *b) { return b->resolved >= b->njobs; }

/* done_all_worked: every job resolved and every worker told NO_JOB and asleep, so the server
 * considers its queue empty and a late duplicate assignment would have been seen. The timed
 * interval still ends at the last resolution. */
static int done_all_worked(const struct bench *b)
{
    if (b->resolved < b->njobs)
        return 0;
    for (size_t i = 0; i < b->nconns; i++) {
        const struct conn *c = b->conns[i];
        if (c->role == ROLE_WORKER && c->fd >= 0 && c->wstate != WS_SLEEP &&
            c->wstate != WS_BROKEN)
            return 0;
    }
    return 1;
}
static int done_workers_synced(const struct bench *b)
{
    return b->workers_synced >= b->opt.workers;
}
static int done_idle_open(const struct bench *b)
{
    return b->idle_next >= b->idle_target && b->idle_pending == 0;
}
static int done_echoes(const struct bench *b) { return b->echo_done >= b->echo_target; }
static int done_ballast_jobs(const struct bench *b)
{
    return b->ballast_acked >= (uint64_t)b->opt.ballast_jobs;
}
/* done_workers_asleep: every worker told NO_JOB and sleeping. */
static int done_workers_asleep(const struct bench *b)
{
    for (size_t i = 0; i < b->nconns; i++) {
        const struct conn *c = b->conns[i];
        if (c->role == ROLE_WORKER && c->fd >= 0 && c->wstate != WS_SLEEP)
            return 0;
    }
    return 1;
}

/* -------------------------------------------------------------------------------- reporting */

/* cmp_u64 orders uint64_t values for qsort. */
static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* percentile_us returns the nearest-rank num/den percentile of the sorted samples in µs. */
static double percentile_us(const uint64_t *sorted, size_t n, uint64_t num, uint64_t den)
{
    if (n == 0)
        return 0;
    uint64_t rank = ((uint64_t)n * num + den - 1) / den; /* ceil(n * q), 1-based */
    if (rank == 0)
        rank = 1;
    return (double)sorted[rank - 1] / 1000.0;
}

/* struct result accumulates the RESULT line and the human-readable summary. */
struct result {
    char line[2048]; /* "RESULT key=value ..." */
    size_t len;      /* bytes used in line */
};

/* result_kv appends " key=value" (value formatted with printf) to the RESULT line. */
static void result_kv(struct result *r, const char *key, const char *fmt, ...)
{
    if (r->len >= sizeof r->line - 2)
        return;
    int k = snprintf(r->line + r->len, sizeof r->line - r->len, " %s=", key);
    if (k > 0)
        r->len += (size_t)k;
    if (r->len >= sizeof r->line - 2) {
        r->len = sizeof r->line - 2;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    k = vsnprintf(r->line + r->len, sizeof r->line - r->len, fmt, ap);
    va_end(ap);
    if (k > 0)
        r->len += (size_t)k;
    if (r->len >= sizeof r->line - 2)
        r->len = sizeof r->line - 2;
}

/* struct cpu_mark is a CPU-time sample of the server at the start of a measured phase. */
struct cpu_mark {
    long long cpu_ns; /* utime+stime in ns, -1 if unknown */
};

/* cpu_start samples the server's CPU time (or marks it unknown). */
static struct cpu_mark cpu_start(const struct bench *b)
{
    struct cpu_mark m = {procstat_cpu_ns(b->opt.server_pid)};
    return m;
}

/* result_cpu appends the key with the server CPU µs per job since m (or n/a). */
static void result_cpu(const struct bench *b, struct result *r, const char *key,
                       struct cpu_mark m, uint64_t jobs)
{
    long long now = procstat_cpu_ns(b->opt.server_pid);
    if (m.cpu_ns < 0 || now < 0 || jobs == 0) {
        result_kv(r, key, "n/a");
        return;
    }
    double us = (double)(now - m.cpu_ns) / 1000.0 / (double)jobs;
    result_kv(r, key, "%.2f", us);
    printf("  server CPU: %.2f us per job (%.2f s over the phase)\n", us,
           (double)(now - m.cpu_ns) / 1e9);
}

/* result_latency sorts the latency samples and appends p50/p99/p99.9. */
static void result_latency(struct bench *b, struct result *r, const char *what)
{
    qsort(b->lat, b->nlat, sizeof *b->lat, cmp_u64);
    double p50 = percentile_us(b->lat, b->nlat, 1, 2);
    double p99 = percentile_us(b->lat, b->nlat, 99, 100);
    double p999 = percentile_us(b->lat, b->nlat, 999, 1000);
    result_kv(r, "p50_us", "%.1f", p50);
    result_kv(r, "p99_us", "%.1f", p99);
    result_kv(r, "p999_us", "%.1f", p999);
    printf("  %s latency over %zu samples: p50 %.1f us, p99 %.1f us, p99.9 %.1f us, max %.1f us\n",
           what, b->nlat, p50, p99, p999, b->nlat ? (double)b->lat[b->nlat - 1] / 1000.0 : 0.0);
}

/* count_missing counts the jobs never resolved as missing anomalies. */
static void count_missing(struct bench *b)
{
    uint64_t missing = 0;
    for (uint64_t j = 0; j < b->njobs; j++)
        if (!(b->jstate[j] & (J_DONE | J_FAILED)))
            missing++;
    if (missing > 0) {
        b->an.missing += missing;
        anomaly(b, "%" PRIu64 " of %" PRIu64 " jobs never resolved", missing, b->njobs);
    }
}

/* anomalies_total sums the anomaly counters. */
static uint64_t anomalies_total(const struct anomalies *a)
{
    return a->dup + a->missing + a->wrong + a->unexpected + a->errors + a->protocol +
           a->disconnects + a->queue_left;
}

/* result_finish appends the anomaly counters and prints both outputs.
 * Returns the process exit status. */
static int result_finish(struct bench *b, struct result *r, int finished)
{
    uint64_t total = anomalies_total(&b->an);
    result_kv(r, "anomalies", "%" PRIu64, total);
    result_kv(r, "dup", "%" PRIu64, b->an.dup);
    result_kv(r, "missing", "%" PRIu64, b->an.missing);
    result_kv(r, "wrong", "%" PRIu64, b->an.wrong);
    result_kv(r, "unexpected", "%" PRIu64, b->an.unexpected);
    result_kv(r, "errors", "%" PRIu64, b->an.errors);
    result_kv(r, "protocol", "%" PRIu64, b->an.protocol);
    result_kv(r, "disconnects", "%" PRIu64, b->an.disconnects);
    result_kv(r, "queue_left", "%" PRIu64, b->an.queue_left);
    result_kv(r, "status", finished ? "ok" : "incomplete");
    printf("  anomalies: %" PRIu64 " (dup %" PRIu64 ", missing %" PRIu64 ", wrong %" PRIu64
           ", unexpected %" PRIu64 ", errors %" PRIu64 ", protocol %" PRIu64
           ", disconnects %" PRIu64 ", queue_left %" PRIu64 ")%s\n",
           total, b->an.dup, b->an.missing, b->an.wrong, b->an.unexpected, b->an.errors,
           b->an.protocol, b->an.disconnects, b->an.queue_left,
           finished ? "" : "; the run did not finish");
    printf("RESULT%.*s\n", (int)r->len, r->line);
    fflush(stdout);
    return finished && total == 0 ? 0 : 1;
}

/* result_begin starts the RESULT line with the scenario, label and run tag. */
static void result_begin(const struct bench *b, struct result *r)
{
    r->len = 0;
    result_kv(r, "scenario", "%s", scenario_names[b->opt.scenario]);
    result_kv(r, "server", "%s", b->opt.label ? b->opt.label : "-");
}

/* rate returns count / seconds between two ns timestamps (0 when empty). */
static double rate(uint64_t count, uint64_t t0, uint64_t t1)
{
    return t1 > t0 ? (double)count * 1e9 / (double)(t1 - t0) : 0.0;
}

/* ---------------------------------------------------------------------------- admin status */

/* admin_queued asks the admin "status" command how many jobs the run's functions still hold.
 * Returns the total, or -1 when the server does not answer it in gearmand's format. */
static long long admin_queued(struct bench *b)
{
    int in_progress;
    int fd = socket_new(b, &in_progress);
    if (fd < 0)
        return -1;
    struct pollfd pfd = {.fd = fd, .events = POLLOUT};
    if (in_progress && poll(&pfd, 1, 5000) != 1) {
        close(fd);
        return -1;
    }
    if (send(fd, "status\n", 7, MSG_NOSIGNAL) != 7) {
        close(fd);
        return -1;
    }
    struct bytes in = {0};
    long long total = -1;
    uint64_t deadline = now_ns() + 5000000000ull;
    for (;;) {
        /* a reply ends with a line holding only "." */
        if (in.len >= 2 && (memcmp(in.p, ".\n", 2) == 0 ||
                            (in.len >= 3 && memcmp(in.p + in.len - 3, "\n.\n", 3) == 0))) {
            total = 0;
            break;
        }
        if (in.len > 0 && in.p[0] == 'E') /* "ERR ..." : not supported */
            break;
        uint64_t t = now_ns();
        if (t >= deadline)
            break;
        pfd.events = POLLIN;
        if (poll(&pfd, 1, (int)((deadline - t) / 1000000 + 1)) != 1)
            break;
        char *dst = bytes_reserve(&in, 65536);
        ssize_t r = recv(fd, dst, 65536, 0);
        if (r <= 0)
            break;
        in.len += (size_t)r;
    }
    close(fd);
    if (total == 0) {
        /* lines: function TAB total TAB running TAB available_workers */
        char *p = in.p, *end = in.p + in.len;
        while (p < end) {
            char *nl = memchr(p, '\n', (size_t)(end - p));
            if (nl == NULL)
                break;
            char *tab = memchr(p, '\t', (size_t)(nl - p));
            if (tab != NULL) {
                size_t nlen = (size_t)(tab - p);
                for (size_t f = 0; f < b->nfuncs; f++) {
                    if (b->fname_len[f] == nlen && memcmp(b->fnames[f], p, nlen) == 0) {
                        total += strtoll(tab + 1, NULL, 10);
                        break;
                    }
                }
            }
            p = nl + 1;
        }
    }
    bytes_free(&in);
    return total;
}

/* ------------------------------------------------------------------------------- scenarios */

/* start_clients connects n client connections with a ring for the window. Returns 0 or -1. */
static int start_clients(struct bench *b, int n)
{
    for (int i = 0; i < n; i++) {
        struct conn *c = connect_wait(b, ROLE_CLIENT);
        if (c == NULL)
            return -1;
        c->pend_cap = (uint32_t)b->window;
        c->pend = xcalloc(c->pend_cap, sizeof *c->pend);
        /* --client-option: one OPTION_REQ per comma-separated item, answered OPTION_RES
         * before any JOB_CREATED */
        for (const char *o = b->opt.client_option; o != NULL && *o != '\0';) {
            size_t ol = strcspn(o, ",");
            struct proto_arg a = {o, ol};
            if (ol > 0)
                send_packet(b, c, CMD_OPTION_REQ, &a, 1);
            o += ol + (o[ol] == ',');
        }
    }
    return 0;
}

/* clients_refill fills every client's window. */
static void clients_refill(struct bench *b)
{
    for (size_t i = 0; i < b->nconns; i++)
        if (b->conns[i]->role == ROLE_CLIENT)
            client_refill(b, b->conns[i]);
}

/* close_role closes every connection of one role (as teardown, not as an anomaly). */
static void close_role(struct bench *b, enum role role, int abort_conn)
{
    int was = b->closing;
    b->closing = 1;
    for (size_t i = 0; i < b->nconns; i++)
        if (b->conns[i]->role == role)
            conn_close(b, b->conns[i], abort_conn);
    b->closing = was;
}

/* open_idle opens n more idle connections of the given kind (at most --connect-window at once)
 * and waits until the server answered each. Returns 0, or -1 (anomalies counted). */
static int open_idle(struct bench *b, long n, enum idle_kind kind, const char *phase)
{
    b->idle_kind = kind;
    b->idle_target = b->idle_next + n;
    long want = b->idle_open + n;
    b->idle_opening = 1;
    int rc = run_loop(b, done_idle_open, phase);
    b->idle_opening = 0;
    if (rc == 0 && b->idle_open != want) {
        b->an.missing += (uint64_t)(want - b->idle_open);
        anomaly(b, "%s: %ld connections never answered", phase, want - b->idle_open);
        rc = -1;
    }
    return rc;
}

/* ballast_setup builds the state the measured phase runs beside, and which must not slow it
 * down: --ballast-jobs background jobs queued on a function nobody works, --ballast-clients
 * connections each waiting for one such foreground job, --idle-workers connections registered
 * for the measured function that sleep and ignore every NOOP. Returns 0, or -1. */
static int ballast_setup(struct bench *b, struct result *r)
{
    uint64_t t = now_ns();
    if (b->opt.ballast_jobs > 0) {
        for (int i = 0; i < BALLAST_CONNS; i++) {
            struct conn *c = connect_wait(b, ROLE_BALLAST);
            if (c == NULL)
                return -1;
            ballast_refill(b, c);
        }
        if (run_loop(b, done_ballast_jobs, "ballast: queueing jobs") != 0)
            return -1;
        printf("  ballast: %lld background jobs queued on %s in %.3f s\n", b->opt.ballast_jobs,
               b->ballast_fn, (double)(now_ns() - t) / 1e9);
    }
    if (b->opt.ballast_clients > 0 &&
        open_idle(b, b->opt.ballast_clients, IDLE_CLIENT, "ballast: clients") != 0)
        return -1;
    if (b->opt.idle_workers > 0 &&
        open_idle(b, b->opt.idle_workers, IDLE_WORKER, "ballast: idle workers") != 0)
        return -1;
    if (b->opt.ballast_clients > 0 || b->opt.idle_workers > 0)
        printf("  ballast: %ld clients with one unworked job, %ld sleeping workers that ignore "
               "NOOP, open after %.3f s\n", b->opt.ballast_clients, b->opt.idle_workers,
               (double)(now_ns() - t) / 1e9);
    result_kv(r, "ballast_jobs", "%lld", b->opt.ballast_jobs);
    result_kv(r, "ballast_clients", "%ld", b->opt.ballast_clients);
    result_kv(r, "idle_workers", "%ld", b->opt.idle_workers);
    result_kv(r, "setup_s", "%.3f", (double)(now_ns() - t) / 1e9);
    return 0;
}

/* run_bg_submit: pipelined SUBMIT_JOB_BG on --clients connections (window 64), acknowledgement
 * latency. Nothing drains the queue: the server holds every job until it is restarted. */
static int run_bg_submit(struct bench *b)
{
    struct result r;
    result_begin(b, &r);
    printf("bg-submit: %" PRIu64 " background jobs of %zu bytes on %d connections, window %d, "
           "function %s\n", b->njobs, b->payload, b->opt.clients, b->window, b->fnames[0]);
    int finished = 0;
    uint64_t t0 = 0;
    struct cpu_mark m = {-1};
    if (ballast_setup(b, &r) == 0 && start_clients(b, b->opt.clients) == 0) {
        m = cpu_start(b);
        t0 = now_ns();
        clients_refill(b);
        finished = run_loop(b, done_all_resolved, "bg-submit") == 0;
    }
    count_missing(b);
    double jps = rate(b->ok, t0, b->t_last);
    printf("  %" PRIu64 " jobs acknowledged in %.3f s: %.0f jobs/s (left queued on the server)\n",
           b->ok, b->t_last > t0 ? (double)(b->t_last - t0) / 1e9 : 0.0, jps);
    result_kv(&r, "jobs", "%" PRIu64, b->ok);
    result_kv(&r, "jobs_per_s", "%.0f", jps);
    result_latency(b, &r, "JOB_CREATED");
    result_cpu(b, &r, "cpu_us_per_job", m, b->ok);
    return result_finish(b, &r, finished);
}

/* run_roundtrip: foreground jobs from --clients clients with the given window, worked by
 * --workers workers; used by rt-latency, rt-throughput and fanout. */
static int run_roundtrip(struct bench *b)
{
    struct result r;
    result_begin(b, &r);
    const char *name = scenario_names[b->opt.scenario];
    printf("%s: %" PRIu64 " foreground jobs of %zu bytes, %d clients with window %d, %d workers, "
           "%zu function%s (%s%s)\n", name, b->njobs, b->payload, b->opt.clients, b->window,
           b->opt.workers, b->nfuncs, b->nfuncs == 1 ? "" : "s", b->fnames[0],
           b->nfuncs == 1 ? "" : " ...");
    int finished = 0;
    uint64_t t0 = 0;
    struct cpu_mark m = {-1};
    if (ballast_setup(b, &r) == 0 && start_workers(b) == 0 &&
        run_loop(b, done_workers_synced, "worker registration") == 0 &&
        start_clients(b, b->opt.clients) == 0) {
        m = cpu_start(b);
        t0 = now_ns();
        workers_grab(b);
        clients_refill(b);
        finished = run_loop(b, done_all_worked, name) == 0;
    }
    count_missing(b);
    double jps = rate(b->ok, t0, b->t_last);
    printf("  %" PRIu64 " jobs completed and verified in %.3f s: %.0f jobs/s; %" PRIu64
           " PRE_SLEEPs, %" PRIu64 " NOOPs to awake workers\n", b->ok,
           b->t_last > t0 ? (double)(b->t_last - t0) / 1e9 : 0.0, jps, b->sleeps, b->stray_noops);
    result_kv(&r, "jobs", "%" PRIu64, b->ok);
    result_kv(&r, "jobs_per_s", "%.0f", jps);
    result_latency(b, &r, "submit-to-WORK_COMPLETE");
    result_cpu(b, &r, "cpu_us_per_job", m, b->ok);
    result_kv(&r, "pre_sleeps", "%" PRIu64, b->sleeps);
    if (b->opt.idle_workers > 0)
        result_kv(&r, "idle_noops", "%" PRIu64, b->idle_noops);
    return result_finish(b, &r, finished);
}

/* run_coalesce: --waiters client connections submit every job with the same unique; the server
 * should run it once (one worker) and send its WORK_COMPLETE to every waiter. Rounds run one at
 * a time: all waiters submit, the worker grabs once all have JOB_CREATED, every waiter gets the
 * result, then the next round. jobs_per_s counts completions delivered to waiters; the latency
 * is from the worker queueing WORK_COMPLETE to each waiter parsing it. */
static int run_coalesce(struct bench *b)
{
    struct result r;
    result_begin(b, &r);
    printf("coalesce: %" PRIu64 " jobs of %zu bytes, each submitted by %ld waiters with the same "
           "unique, 1 worker\n", b->njobs, b->payload, b->opt.waiters);
    int finished = 0;
    uint64_t t0 = 0;
    struct cpu_mark m = {-1};
    free(b->lat);
    b->lat = xcalloc(b->njobs * (uint64_t)b->opt.waiters, sizeof *b->lat);
    uint64_t ts = now_ns();
    if (open_idle(b, b->opt.waiters, IDLE_ECHO, "coalesce: opening waiters") == 0) {
        for (size_t i = 0; i < b->nconns; i++)
            if (b->conns[i]->role == ROLE_IDLE)
                b->conns[i]->role = ROLE_WAITER;
        result_kv(&r, "setup_s", "%.3f", (double)(now_ns() - ts) / 1e9);
        if (start_workers(b) == 0 && run_loop(b, done_workers_synced, "worker registration") == 0) {
            for (size_t i = 0; i < b->nconns; i++)
                if (b->conns[i]->role == ROLE_WORKER)
                    b->cworker = b->conns[i];
            workers_grab(b);
            if (run_loop(b, done_workers_asleep, "worker asleep") == 0) {
                m = cpu_start(b);
                t0 = now_ns();
                waiter_round_start(b);
                finished = run_loop(b, done_all_worked, "coalesce") == 0;
            }
        }
    }
    if (!finished) {
        uint64_t want = b->njobs * (uint64_t)b->opt.waiters;
        if (b->ok < want) {
            b->an.missing += want - b->ok;
            anomaly(b, "%" PRIu64 " of %" PRIu64 " completions never arrived", want - b->ok, want);
        }
    }
    double cps = rate(b->ok, t0, b->t_last);
    printf("  %" PRIu64 " completions (%" PRIu64 " jobs x %ld waiters) in %.3f s: %.0f "
           "completions/s\n", b->ok, b->resolved, b->opt.waiters,
           b->t_last > t0 ? (double)(b->t_last - t0) / 1e9 : 0.0, cps);
    result_kv(&r, "waiters", "%ld", b->opt.waiters);
    result_kv(&r, "rounds", "%" PRIu64, b->resolved);
    result_kv(&r, "rounds_per_s", "%.1f", rate(b->resolved, t0, b->t_last));
    result_kv(&r, "jobs", "%" PRIu64, b->ok);
    result_kv(&r, "jobs_per_s", "%.0f", cps);
    result_latency(b, &r, "WORK_COMPLETE fan-out");
    result_cpu(b, &r, "cpu_us_per_job", m, b->ok);
    return result_finish(b, &r, finished);
}

/* run_drain: queue --jobs background jobs, then time --workers workers draining them; sample the
 * server's RSS before queueing, when everything is queued and after the drain. */
static int run_drain(struct bench *b)
{
    struct result r;
    result_begin(b, &r);
    printf("drain: queue %" PRIu64 " background jobs of %zu bytes on %d connections (window %d), "
           "then drain with %d workers\n", b->njobs, b->payload, b->opt.clients, b->window,
           b->opt.workers);
    int finished = 0;
    long long rss0 = -1, rss1 = -1, rss2 = -1;
    uint64_t t0 = 0, tq = 0, td = 0;
    double qjps = 0;
    struct cpu_mark mq = {-1}, md = {-1};
    if (start_clients(b, b->opt.clients) == 0) {
        rss0 = procstat_rss(b->opt.server_pid);
        mq = cpu_start(b);
        t0 = now_ns();
        clients_refill(b);
        if (run_loop(b, done_all_resolved, "drain: queueing") == 0) {
            tq = b->t_last;
            rss1 = procstat_rss(b->opt.server_pid);
            qjps = rate(b->ok, t0, tq);
            printf("  queued %" PRIu64 " jobs in %.3f s: %.0f jobs/s\n", b->ok,
                   (double)(tq - t0) / 1e9, qjps);
            result_kv(&r, "queue_jobs_per_s", "%.0f", qjps);
            result_cpu(b, &r, "queue_cpu_us_per_job", mq, b->ok);
            /* second phase, only when every job is queued: the workers resolve jobs */
            close_role(b, ROLE_CLIENT, 0);
            if (b->ok == b->njobs) {
                b->resolved = b->ok = 0;
                for (uint64_t j = 0; j < b->njobs; j++)
                    b->jstate[j] &= (uint8_t)~(J_DONE | J_FAILED);
                b->drain_phase = 1;
            }
            if (b->drain_phase && start_workers(b) == 0 &&
                run_loop(b, done_workers_synced, "worker registration") == 0) {
                md = cpu_start(b);
                td = now_ns();
                workers_grab(b);
                finished = run_loop(b, done_all_worked, "drain: working") == 0;
            }
        }
    }
    if (!b->drain_phase)
        result_kv(&r, "queue_jobs_per_s", "%.0f", qjps);
    count_missing(b);
    double djps = rate(b->ok, td, b->t_last);
    printf("  drained %" PRIu64 " jobs in %.3f s: %.0f jobs/s\n", b->ok,
           b->t_last > td && td ? (double)(b->t_last - td) / 1e9 : 0.0, djps);
    result_kv(&r, "jobs", "%" PRIu64, b->ok);
    result_kv(&r, "jobs_per_s", "%.0f", djps);
    result_cpu(b, &r, "cpu_us_per_job", md, b->ok);
    if (finished) {
        long long left = -1;
        for (int tries = 0; tries < 20; tries++) { /* completions may still be in flight */
            left = admin_queued(b);
            if (left <= 0)
                break;
            struct timespec ts = {0, 100000000};
            nanosleep(&ts, NULL);
        }
        if (left > 0) {
            b->an.queue_left += (uint64_t)left;
            anomaly(b, "admin status still lists %lld jobs after the drain", left);
        }
        printf("  admin status after the drain: %s\n",
               left < 0 ? "not available" : left == 0 ? "queue empty" : "jobs left");
    }
    rss2 = procstat_rss(b->opt.server_pid);
    if (rss0 >= 0 && rss1 >= 0 && b->njobs > 0) {
        double per = (double)(rss1 - rss0) / (double)b->njobs;
        printf("  server RSS: %.1f MiB before, %.1f MiB queued, %.1f MiB drained: %.0f bytes per "
               "queued job\n", rss0 / 1048576.0, rss1 / 1048576.0,
               rss2 >= 0 ? rss2 / 1048576.0 : -1.0, per);
        result_kv(&r, "rss_before", "%lld", rss0);
        result_kv(&r, "rss_queued", "%lld", rss1);
        result_kv(&r, "rss_drained", "%lld", rss2);
        result_kv(&r, "rss_bytes_per_job", "%.0f", per);
    } else {
        result_kv(&r, "rss_bytes_per_job", "n/a");
    }
    return result_finish(b, &r, finished);
}

/* probe_phase runs echo_target echoes on the probe and leaves the samples in b->lat.
 * Returns 0 when all came back. */
static int probe_phase(struct bench *b, uint64_t count, const char *phase)
{
    b->nlat = 0;
    b->ok = 0;
    b->echo_done = 0;
    b->echo_target = count;
    probe_send(b, b->probe);
    return run_loop(b, done_echoes, phase);
}

/* run_idle: --conns idle connections (each answered one ECHO, so the server has accepted and
 * served it), the server's RSS per connection, and ECHO latency on one more connection before
 * and while they are open. */
static int run_idle(struct bench *b)
{
    struct result r;
    result_begin(b, &r);
    printf("idle-conns: %ld idle connections, %" PRIu64 " echoes on a probe connection before and "
           "while they are open\n", b->opt.conns, b->njobs);
    int finished = 0;
    long long rss0 = -1, rss1 = -1;
    double base_p50 = 0, base_p99 = 0;
    struct cpu_mark m = {-1};
    uint64_t t0 = 0;
    b->probe = connect_wait(b, ROLE_PROBE);
    if (b->probe != NULL && probe_phase(b, b->njobs, "idle-conns: baseline echoes") == 0) {
        qsort(b->lat, b->nlat, sizeof *b->lat, cmp_u64);
        base_p50 = percentile_us(b->lat, b->nlat, 1, 2);
        base_p99 = percentile_us(b->lat, b->nlat, 99, 100);
        printf("  baseline echo latency: p50 %.1f us, p99 %.1f us\n", base_p50, base_p99);
        rss0 = procstat_rss(b->opt.server_pid);
        uint64_t to = now_ns();
        b->idle_kind = IDLE_ECHO;
        b->idle_target = b->opt.conns;
        b->idle_opening = 1;
        int opened = run_loop(b, done_idle_open, "idle-conns: opening");
        b->idle_opening = 0;
        if (opened == 0 &&
            b->idle_open == b->opt.conns) {
            printf("  opened %ld connections in %.3f s\n", b->idle_open,
                   (double)(now_ns() - to) / 1e9);
            rss1 = procstat_rss(b->opt.server_pid);
            m = cpu_start(b);
            t0 = now_ns();
            finished = probe_phase(b, b->njobs, "idle-conns: echoes") == 0;
        }
    }
    double eps = rate(b->ok, t0, b->t_last);
    result_kv(&r, "conns", "%ld", b->idle_open);
    result_kv(&r, "jobs", "%" PRIu64, b->ok);
    result_kv(&r, "jobs_per_s", "%.0f", eps);
    printf("  %" PRIu64 " echoes with %ld idle connections open: %.0f echoes/s\n", b->ok,
           b->idle_open, eps);
    result_latency(b, &r, "ECHO");
    result_kv(&r, "base_p50_us", "%.1f", base_p50);
    result_kv(&r, "base_p99_us", "%.1f", base_p99);
    result_cpu(b, &r, "cpu_us_per_job", m, b->ok);
    if (rss0 >= 0 && rss1 >= 0 && b->idle_open > 0) {
        double per = (double)(rss1 - rss0) / (double)b->idle_open;
        printf("  server RSS: %.1f MiB before, %.1f MiB with the connections: %.0f bytes per "
               "connection\n", rss0 / 1048576.0, rss1 / 1048576.0, per);
        result_kv(&r, "rss_before", "%lld", rss0);
        result_kv(&r, "rss_conns", "%lld", rss1);
        result_kv(&r, "rss_bytes_per_conn", "%.0f", per);
    } else {
        result_kv(&r, "rss_bytes_per_conn", "n/a");
    }
    if (!finished && b->idle_open < b->opt.conns) {
        long missing = b->opt.conns - b->idle_open;
        b->an.missing += (uint64_t)missing;
        anomaly(b, "%ld idle connections never answered their echo", missing);
    } else if (!finished) {
        b->an.missing += b->echo_target - b->echo_done;
    }
    close_role(b, ROLE_IDLE, 1);
    return result_finish(b, &r, finished);
}

/* ------------------------------------------------------------------------------- command line */

/* usage prints the help text to out. */
static void usage(FILE *out)
{
    fputs(
        "Usage: spur-bench --scenario=NAME [OPTIONS]\n"
        "A load generator for Gearman job servers that verifies every reply.\n"
        "\n"
        "Scenarios:\n"
        "  bg-submit      pipelined SUBMIT_JOB_BG; jobs/s and JOB_CREATED latency\n"
        "  rt-latency     foreground jobs one at a time per client, real workers; latency\n"
        "  rt-throughput  foreground jobs, window 32 per client; jobs/s\n"
        "  drain          queue --jobs background jobs, drain with workers; jobs/s, RSS per job\n"
        "  idle-conns     --conns idle connections; RSS per connection, ECHO latency\n"
        "  fanout         --functions function names spread over the workers; jobs/s, latency\n"
        "  coalesce       --waiters clients submit each job with the same unique; one worker;\n"
        "                 completions delivered per second, WORK_COMPLETE fan-out latency\n"
        "\n"
        "Options (defaults depend on the scenario):\n"
        "  --host=ADDR          server address (default 127.0.0.1)\n"
        "  --port=PORT          server port (default 4730)\n"
        "  --jobs=N             jobs (echo round trips for idle-conns)\n"
        "                       bg-submit 200000, rt-latency 20000, rt-throughput 100000,\n"
        "                       drain 1000000, idle-conns 10000, fanout 50000, coalesce 100\n"
        "  --clients=N          client connections (default 4)\n"
        "  --workers=N          worker connections (default 4)\n"
        "  --window=N           outstanding submits per client: bg-submit/drain 64,\n"
        "                       rt-latency 1, rt-throughput and fanout 32\n"
        "  --payload-size=N     payload bytes per job (default 64)\n"
        "  --functions=N        function names in fanout (default 10000)\n"
        "  --conns=N            idle connections in idle-conns (default 10000)\n"
        "  --connect-window=N   idle connections opened at once (default 16)\n"
        "  --waiters=N          coalesce: clients submitting each job (default 100)\n"
        "  --keys=N             uniques \"k<job mod N>:<job>\": N keys for flow control's key limits\n"
        "  --admin=LINE         an admin line sent before measuring, {F} replaced by each function\n"
        "                       (e.g. --admin='limit {F} key-concurrency 1'; plain TCP only)\n"
        "Ballast, built before measuring (bg-submit, rt-latency, rt-throughput, fanout):\n"
        "  --ballast-jobs=N     background jobs queued on a function no worker has\n"
        "  --ballast-clients=N  connections each waiting for one foreground job of that function\n"
        "  --idle-workers=N     connections registered for the measured function that sleep\n"
        "                       (PRE_SLEEP) and ignore every NOOP\n"
        "  --server-pid=PID     sample the server's RSS and CPU time in /proc\n"
        "  --timeout=SECONDS    wall-time bound for the whole run (default 600)\n"
        "  --stall=SECONDS      give up after this long without a packet (default 15)\n"
        "  --max-anomalies=N    give up after more than N anomalies (default 100000)\n"
        "  --label=TEXT         copied into the RESULT line as server=TEXT\n"
        "  --client-option=A,B  every client connection sends OPTION_REQ A (then B) first,\n"
        "                       e.g. job-ttl=3600 (Spur's job lifetimes; gearmand refuses it)\n"
        "TLS (bg-submit, rt-latency, rt-throughput, fanout; no ballast):\n"
        "  --tls                every connection speaks TLS; the server's certificate is\n"
        "                       verified for --host\n"
        "  --tls-ca=FILE        CA certificate(s), PEM (default: the system's store)\n"
        "  --tls-cert=FILE      client certificate, PEM, sent when the server asks\n"
        "  --tls-key=FILE       its key (default: in the --tls-cert file)\n"
        "  --help               this text\n"
        "\n"
        "Prints a human-readable summary and one machine-readable line:\n"
        "  RESULT scenario=... jobs=... jobs_per_s=... p50_us=... anomalies=... status=ok\n"
        "Exit status: 0 no anomaly, 1 anomalies or unfinished, 2 usage or setup error.\n",
        out);
}

/* opt_long parses a whole decimal integer within [lo, hi] or exits with a usage error. */
static long long opt_long(const char *name, const char *s, long long lo, long long hi)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
        die("--%s must be an integer from %lld to %lld", name, lo, hi);
    return v;
}

/* opt_double parses a positive number of seconds or exits with a usage error. */
static double opt_double(const char *name, const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || !(v > 0) || v > 86400)
        die("--%s must be a number of seconds", name);
    return v;
}

/* parse_args fills o from argv, applying the scenario's defaults. */
static void parse_args(int argc, char **argv, struct options *o)
{
    enum {
        O_SCENARIO = 1000, O_HOST, O_PORT, O_JOBS, O_CLIENTS, O_WORKERS, O_WINDOW, O_PAYLOAD,
        O_FUNCTIONS, O_CONNS, O_CONNECT_WINDOW, O_PID, O_TIMEOUT, O_STALL, O_MAX_ANOMALIES, O_LABEL,
        O_HELP, O_BALLAST_JOBS, O_BALLAST_CLIENTS, O_IDLE_WORKERS, O_WAITERS, O_TLS, O_TLS_CA,
        O_TLS_CERT, O_TLS_KEY, O_KEYS, O_ADMIN, O_CLIENT_OPTION
    };
    static const struct option longopts[] = {
        {"scenario", required_argument, NULL, O_SCENARIO},
        {"host", required_argument, NULL, O_HOST},
        {"port", required_argument, NULL, O_PORT},
        {"jobs", required_argument, NULL, O_JOBS},
        {"clients", required_argument, NULL, O_CLIENTS},
        {"workers", required_argument, NULL, O_WORKERS},
        {"window", required_argument, NULL, O_WINDOW},
        {"payload-size", required_argument, NULL, O_PAYLOAD},
        {"functions", required_argument, NULL, O_FUNCTIONS},
        {"conns", required_argument, NULL, O_CONNS},
        {"connect-window", required_argument, NULL, O_CONNECT_WINDOW},
        {"server-pid", required_argument, NULL, O_PID},
        {"timeout", required_argument, NULL, O_TIMEOUT},
        {"stall", required_argument, NULL, O_STALL},
        {"max-anomalies", required_argument, NULL, O_MAX_ANOMALIES},
        {"label", required_argument, NULL, O_LABEL},
        {"help", no_argument, NULL, O_HELP},
        {"ballast-jobs", required_argument, NULL, O_BALLAST_JOBS},
        {"ballast-clients", required_argument, NULL, O_BALLAST_CLIENTS},
        {"idle-workers", required_argument, NULL, O_IDLE_WORKERS},
        {"waiters", required_argument, NULL, O_WAITERS},
        {"tls", no_argument, NULL, O_TLS},
        {"tls-ca", required_argument, NULL, O_TLS_CA},
        {"tls-cert", required_argument, NULL, O_TLS_CERT},
        {"tls-key", required_argument, NULL, O_TLS_KEY},
        {"keys", required_argument, NULL, O_KEYS},
        {"admin", required_argument, NULL, O_ADMIN},
        {"client-option", required_argument, NULL, O_CLIENT_OPTION},
        {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof *o);
    o->scenario = -1;
    o->host = "127.0.0.1";
    o->port = "4730";
    o->jobs = o->clients = o->workers = o->window = o->payload = o->functions = -1;
    o->conns = -1;
    o->connect_window = 16;
    o->timeout_s = 600;
    o->stall_s = 15;
    o->max_anomalies = 100000;
    int ch;
    while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (ch) {
        case O_SCENARIO:
            for (size_t i = 0; i < sizeof scenario_names / sizeof *scenario_names; i++)
                if (strcmp(optarg, scenario_names[i]) == 0)
                    o->scenario = (int)i;
            if (o->scenario < 0)
                die("unknown scenario '%s' (see --help)", optarg);
            break;
        case O_HOST: o->host = optarg; break;
        case O_PORT: opt_long("port", optarg, 1, 65535); o->port = optarg; break;
        case O_JOBS: o->jobs = opt_long("jobs", optarg, 1, (long long)MAX_JOBS); break;
        case O_CLIENTS: o->clients = (int)opt_long("clients", optarg, 1, 1024); break;
        case O_WORKERS: o->workers = (int)opt_long("workers", optarg, 1, 1024); break;
        case O_WINDOW: o->window = (int)opt_long("window", optarg, 1, 65536); break;
        case O_PAYLOAD: o->payload = (long)opt_long("payload-size", optarg, 0, 1 << 24); break;
        case O_FUNCTIONS: o->functions = (int)opt_long("functions", optarg, 1, 1000000); break;
        case O_CONNS: o->conns = (long)opt_long("conns", optarg, 1, 1000000); break;
        case O_CONNECT_WINDOW:
            o->connect_window = (int)opt_long("connect-window", optarg, 1, 4096);
            break;
        case O_PID: o->server_pid = (long)opt_long("server-pid", optarg, 1, INT_MAX); break;
        case O_TIMEOUT: o->timeout_s = opt_double("timeout", optarg); break;
        case O_STALL: o->stall_s = opt_double("stall", optarg); break;
        case O_MAX_ANOMALIES:
            o->max_anomalies = opt_long("max-anomalies", optarg, 0, LLONG_MAX);
            break;
        case O_LABEL: o->label = optarg; break;
        case O_BALLAST_JOBS:
            o->ballast_jobs = opt_long("ballast-jobs", optarg, 0, (long long)MAX_JOBS);
            break;
        case O_BALLAST_CLIENTS:
            o->ballast_clients = (long)opt_long("ballast-clients", optarg, 0, 1000000);
            break;
        case O_IDLE_WORKERS:
            o->idle_workers = (long)opt_long("idle-workers", optarg, 0, 1000000);
            break;
        case O_WAITERS: o->waiters = (long)opt_long("waiters", optarg, 1, 1000000); break;
        case O_KEYS: o->keys = (long)opt_long("keys", optarg, 1, 100000000); break;
        case O_ADMIN: o->admin = optarg; break;
        case O_TLS: o->tls = 1; break;
        case O_TLS_CA: o->tls_ca = optarg; break;
        case O_TLS_CERT: o->tls_cert = optarg; break;
        case O_TLS_KEY: o->tls_key = optarg; break;
        case O_CLIENT_OPTION: o->client_option = optarg; break;
        case O_HELP: usage(stdout); exit(0);
        default: usage(stderr); exit(2);
        }
    }
    if (optind < argc)
        die("unexpected argument '%s'", argv[optind]);
    if (o->scenario < 0) {
        usage(stderr);
        exit(2);
    }
    static const long long default_jobs[] = {200000, 20000, 100000, 1000000, 10000, 50000, 100};
    static const int default_window[] = {64, 1, 32, 64, 1, 32, 1};
    if (o->jobs < 0)
        o->jobs = default_jobs[o->scenario];
    if (o->window < 0)
        o->window = default_window[o->scenario];
    if (o->clients < 0)
        o->clients = 4;
    if (o->workers < 0)
        o->workers = 4;
    if (o->payload < 0)
        o->payload = 64;
    if (o->functions < 0)
        o->functions = o->scenario == SC_FANOUT ? 10000 : 1;
    if (o->conns < 0)
        o->conns = 10000;
    if (o->scenario != SC_FANOUT)
        o->functions = 1;
    if (o->waiters <= 0)
        o->waiters = 100;
    if (o->scenario == SC_COALESCE) {
        o->workers = 1;
        if ((unsigned long long)o->jobs * (unsigned long long)o->waiters > 100000000ull)
            die("coalesce: --jobs x --waiters must be at most 100000000");
    }
    if ((o->ballast_jobs || o->ballast_clients || o->idle_workers) &&
        (o->scenario == SC_DRAIN || o->scenario == SC_IDLE || o->scenario == SC_COALESCE))
        die("--ballast-jobs, --ballast-clients and --idle-workers apply to bg-submit, "
            "rt-latency, rt-throughput and fanout");
    if ((o->tls_ca || o->tls_cert || o->tls_key) && !o->tls)
        die("--tls-ca, --tls-cert and --tls-key need --tls");
    if (o->tls && (o->scenario == SC_DRAIN || o->scenario == SC_IDLE ||
                   o->scenario == SC_COALESCE || o->ballast_jobs || o->ballast_clients ||
                   o->idle_workers))
        die("--tls applies to bg-submit, rt-latency, rt-throughput and fanout, without ballast");
}

/* raise_nofile lifts RLIMIT_NOFILE to at least need descriptors (raising the hard limit too when
 * allowed). Returns 0, or -1 when the limit stays too low. */
static int raise_nofile(rlim_t need)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return -1;
    if (rl.rlim_cur >= need)
        return 0;
    if (rl.rlim_max < need) {
        struct rlimit hard = {need, need};
        if (setrlimit(RLIMIT_NOFILE, &hard) == 0)
            return 0;
    }
    rl.rlim_cur = rl.rlim_max < need ? rl.rlim_max : need;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < need)
        return -1;
    return 0;
}

/* resolve_addr looks up the server address into b. */
static void resolve_addr(struct bench *b)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    int rc = getaddrinfo(b->opt.host, b->opt.port, &hints, &res);
    if (rc != 0 || res == NULL)
        die("cannot resolve %s:%s: %s", b->opt.host, b->opt.port, gai_strerror(rc));
    memcpy(&b->addr, res->ai_addr, res->ai_addrlen);
    b->addrlen = res->ai_addrlen;
    freeaddrinfo(res);
}

/* send_admin sends --admin's line for every function on a blocking connection and checks each
 * reply is OK. */
static void send_admin(struct bench *b)
{
    if (b->opt.admin == NULL)
        return;
    int fd = socket(b->addr.ss_family, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&b->addr, b->addrlen) != 0)
        die("--admin: cannot connect: %s", strerror(errno));
    for (size_t f = 0; f < b->nfuncs; f++) {
        char line[512];
        const char *at = strstr(b->opt.admin, "{F}");
        int n = at == NULL ? snprintf(line, sizeof line, "%s\n", b->opt.admin)
                           : snprintf(line, sizeof line, "%.*s%s%s\n", (int)(at - b->opt.admin),
                                      b->opt.admin, b->fnames[f], at + 3);
        if (n <= 0 || (size_t)n >= sizeof line || write(fd, line, (size_t)n) != n)
            die("--admin: cannot send the line");
        char reply[256];
        size_t got = 0;
        while (got < sizeof reply - 1 && (got == 0 || reply[got - 1] != '\n')) {
            ssize_t r = read(fd, reply + got, 1);
            if (r <= 0)
                die("--admin: no reply");
            got += (size_t)r;
        }
        reply[got] = '\0';
        if (strncmp(reply, "OK", 2) != 0)
            die("--admin: '%.*s' answered %s", n - 1, line, reply);
    }
    close(fd);
}

/* bench_free closes every connection and frees everything b owns. */
static void bench_free(struct bench *b)
{
    b->closing = 1;
    for (size_t i = 0; i < b->nconns; i++) {
        struct conn *c = b->conns[i];
        conn_close(b, c, c->role == ROLE_IDLE || c->role == ROLE_WAITER);
        bytes_free(&c->in);
        bytes_free(&c->out);
        free(c->pend);
        free(c);
    }
    free(b->conns);
    free(b->dirty);
    for (size_t i = 0; i < b->nfuncs; i++)
        free(b->fnames[i]);
    free(b->fnames);
    free(b->fname_len);
    free(b->scratch);
    jobs_free(b);
    if (b->ep >= 0)
        close(b->ep);
    if (b->tls_ctx != NULL)
        SSL_CTX_free(b->tls_ctx);
}

/* main parses the options, runs one scenario and prints its result. */
int main(int argc, char **argv)
{
    struct bench bench;
    struct bench *b = &bench;
    memset(b, 0, sizeof *b);
    parse_args(argc, argv, &b->opt);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    rlim_t need = 256 + (rlim_t)b->opt.clients + (rlim_t)b->opt.workers +
                  (b->opt.scenario == SC_IDLE ? (rlim_t)b->opt.conns : 0) +
                  (b->opt.scenario == SC_COALESCE ? (rlim_t)b->opt.waiters : 0) +
                  (rlim_t)b->opt.ballast_clients + (rlim_t)b->opt.idle_workers;
    /* one loopback source address has about 28k ephemeral ports toward one server port */
    b->spread_src = b->opt.ballast_clients + b->opt.idle_workers +
                    (b->opt.scenario == SC_COALESCE ? b->opt.waiters : 0) +
                    (b->opt.scenario == SC_IDLE ? b->opt.conns : 0) > 16000;
    if (raise_nofile(need) != 0)
        die("cannot raise the open-file limit to %lu (try ulimit -n)", (unsigned long)need);

    resolve_addr(b);
    tls_bench = b;
    if (b->opt.tls)
        tls_setup(b);
    b->ep = epoll_create1(EPOLL_CLOEXEC);
    if (b->ep < 0)
        die("epoll_create1: %s", strerror(errno));

    uint64_t t = now_ns();
    b->seed = t ^ ((uint64_t)getpid() << 32);
    snprintf(b->tag, sizeof b->tag, "%lx-%" PRIx64, (long)getpid(),
             (uint64_t)((t / 1000) & 0xffffffffffull));
    b->deadline = t + (uint64_t)(b->opt.timeout_s * 1e9);
    b->window = b->opt.window;
    b->payload = (size_t)b->opt.payload;
    b->background = b->opt.scenario == SC_BG_SUBMIT || b->opt.scenario == SC_DRAIN;
    make_functions(b, (size_t)b->opt.functions);
    send_admin(b);
    b->ballast_fn_len = (size_t)snprintf(b->ballast_fn, sizeof b->ballast_fn,
                                         "spur-bench-%s-%s-ballast",
                                         scenario_names[b->opt.scenario], b->tag);
    jobs_alloc(b, (uint64_t)b->opt.jobs);

    int rc = 2;
    switch ((enum scenario_id)b->opt.scenario) {
    case SC_BG_SUBMIT: rc = run_bg_submit(b); break;
    case SC_RT_LATENCY:
    case SC_RT_THROUGHPUT:
    case SC_FANOUT: rc = run_roundtrip(b); break;
    case SC_DRAIN: rc = run_drain(b); break;
    case SC_IDLE: rc = run_idle(b); break;
    case SC_COALESCE: rc = run_coalesce(b); break;
    }
    bench_free(b);
    return rc;
}
