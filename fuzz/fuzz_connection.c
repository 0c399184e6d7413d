/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_connection: the whole server without sockets. A small C shell, like
 * tests/unit/fake_shell.h, owns up to NSLOTS peers and a fake clock, and plays the fuzz input as a
 * list of operations on them: raw bytes fed to a peer, well-formed packets built from the input
 * (whole or split across reads, or thousands of submits at once), admin lines, disconnects, half-closes, clock steps that run the
 * engine's timers, draining a peer's output (all or part), shrinking --max-output-buffer, and
 * one allocation made to fail (out of memory). The engine runs memory-only: the durable store
 * (store.c) writes from a committer thread, which a deterministic fuzz target leaves out.
 *
 * The bytes take the real path: conn.c's read paths (session_feed, or reading behind a partial
 * packet and session_process), framing, dispatch, the job engine and admin. Each operation ends like
 * one loop iteration of server.c (admin listings continue, closed peers are torn down), and then:
 *   - engine_check() and session_check() must pass (each job in exactly one place, counters
 *     match queues, running lists and waiters belong to their connection);
 *   - every timer in the heap belongs to a live future or running job, and the heap is ordered;
 *   - every waiter and every running job points at a live peer's client or worker state;
 *   - no job is flagged JOB_STORED (there is no store);
 *   - a drained output stream is a sequence of well-formed response packets (a server-to-client
 *     command, arguments as the table says) and admin text lines, with nothing cut in half.
 * At the end every peer is detached and the engine destroyed: LeakSanitizer must find nothing.
 *
 * Input: 3 configuration bytes (job retries, worker wake-up, exceptions, limits), then
 * operations: one opcode byte and its operands each. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "cmd.h"
#include "acl.h"
#include "config.h"
#include "dump.h"
#include "engine.h"
#include "feature_set.h"
#include "func.h"
#include "fuzz_util.h"
#include "job.h"
#include "jobx_admin.h"
#include "log.h"
#include "options.h"
#include "peer.h"
#include "proto.h"
#include "proto_bin.h"
#include "jobx_counters.h"
#include "recur.h"
#include "session.h"
#include "worker.h"

#define NSLOTS 6        /* peers alive at once */
#define MAX_OPS 3000    /* operations played per input */
#define HANDLE_PREFIX "H:f"

/* the allocator under the --wrap seam (see "allocation failures" below): the shell's own
 * bookkeeping uses it directly so it never fails on purpose */
void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);

/* struct bytes is a growable byte array. */
struct bytes {
    uint8_t *p;  /* owned */
    size_t n;    /* bytes in use */
    size_t cap;  /* allocated */
};

static void bytes_add(struct bytes *b, const void *p, size_t n)
{
    if (n == 0)
        return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        while (cap < b->n + n)
            cap *= 2;
        b->p = __real_realloc(b->p, cap);
        FUZZ_CHECK(b->p != NULL, "realloc");
        b->cap = cap;
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
}

static void bytes_drop(struct bytes *b, size_t n)
{
    if (n == 0)
        return;
    memmove(b->p, b->p + n, b->n - n);
    b->n -= n;
}

static void bytes_free(struct bytes *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

/* struct slot is one connection of the fake shell. */
struct slot {
    struct peer *p;       /* NULL when the slot is free */
    struct bytes pending; /* bytes "in the socket", not read while the peer is busy */
    struct bytes rx;      /* drained output not yet checked (an incomplete reply) */
    int text_seen;        /* the peer sent admin lines: its output is not checked */
    int eof;              /* half-closed: no more input, close once the output is written */
};

/* struct shell is the whole fake server. */
struct shell {
    struct config cfg;
    struct engine eng;
    double clock;                /* the fake wall clock */
    struct slot slot[NSLOTS];
    int next_fd;                 /* fd number for the next peer */
    unsigned iterations;         /* loop iterations so far */
    int stop;                    /* a shutdown asked the loop to stop */
};

static struct shell S;

/* ------------------------------------------------------------ allocation failures
 * run.sh links this target with -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc, so every
 * allocation in src/ (and here) goes through these. While the engine runs (alloc_armed) and a
 * countdown chosen by the input reaches zero, one allocation fails: out of memory must close at
 * most the affected connection and leave every invariant intact. */
static int alloc_armed;           /* the engine is running (not the shell's own bookkeeping) */
static unsigned alloc_countdown;  /* fail the allocation that brings this to 0 (0: never) */
static unsigned long alloc_failures;

static int alloc_fails(void)
{
    if (!alloc_armed || alloc_countdown == 0)
        return 0;
    if (--alloc_countdown > 0)
        return 0;
    alloc_failures++;
    return 1;
}

void *__wrap_malloc(size_t n) { return alloc_fails() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t k, size_t n) { return alloc_fails() ? NULL : __real_calloc(k, n); }
void *__wrap_realloc(void *p, size_t n) { return alloc_fails() ? NULL : __real_realloc(p, n); }

/* ------------------------------------------------------------ engine callbacks */

static void cb_output(struct engine *e, struct peer *p)
{
    (void)e;
    FUZZ_CHECK(p->eng == &S.eng, "output for a peer that is not attached");
}

static void cb_close(struct engine *e, struct peer *p)
{
    (void)e;
    FUZZ_CHECK(p->flags & PEER_CLOSING, "close requested without PEER_CLOSING");
}

static void cb_shutdown(struct engine *e, int graceful)
{
    S.stop = 1;
    if (graceful)
        engine_begin_shutdown(e); /* as server.c: assign nothing new, wait for running jobs */
}

static double cb_now(struct engine *e)
{
    (void)e;
    return S.clock;
}

static struct slot *slot_of(const struct peer *p)
{
    for (int i = 0; i < NSLOTS; i++)
        if (S.slot[i].p == p)
            return &S.slot[i];
    return NULL;
}

/* run_noting_lines feeds or processes p and notes whether it handled admin lines (its output may then hold
 * text that starts with a NUL byte, e.g. a 'status' line for a function named "\0x"). */
static int run_noting_lines(struct peer *p, const char *data, size_t n, int process)
{
    uint64_t before = S.eng.stats.lines;
    alloc_armed = 1;
    int rc = process ? session_process(p) : session_feed(p, data, n);
    alloc_armed = 0;
    if (S.eng.stats.lines != before) {
        struct slot *s = slot_of(p);
        if (s != NULL)
            s->text_seen = 1;
    }
    return rc;
}

static void cb_resume(struct engine *e, struct peer *p)
{
    (void)e;
    /* conn_resume: handle what was buffered while the listing was written */
    if (p->flags & PEER_CLOSING)
        return;
    run_noting_lines(p, NULL, 0, 1);
}

/* ------------------------------------------------------------ invariants */

static int live_peer(const struct peer *p)
{
    return p != NULL && slot_of(p) != NULL;
}

/* check_all runs engine_check and the shell's own cross-checks. */
static void check_all(void)
{
    struct engine *e = &S.eng;
    char err[256];
    int rc = engine_check(e, err, sizeof err);
    FUZZ_CHECK(rc == 0, "engine_check: %s", err);
    rc = session_check(e, err, sizeof err);
    FUZZ_CHECK(rc == 0, "session_check: %s", err);

    /* Timers are checked through the heap's count only (its layout is the engine's business):
     * every heap entry belongs to a future job or a running job with a CAN_DO_TIMEOUT, and a
     * future job always has one. A freed job left in the heap is an AddressSanitizer report the
     * next time the heap moves or a clock step pops it. */
    size_t future = 0, running = 0;
    struct idtab_iter hi;
    idtab_iter_init(&hi, &e->jobs);
    for (const struct job *j; (j = idtab_iter_next(&hi, NULL)) != NULL;) {
        future += j->state == JOB_FUTURE;
        running += j->state == JOB_RUNNING;
        FUZZ_CHECK(!(j->flags & JOB_STORED), "job %llu flagged stored without a store",
                   (unsigned long long)j->id);
        if (j->state == JOB_RUNNING) {
            FUZZ_CHECK(job_worker(j) != NULL && live_peer(job_worker(j)->peer) &&
                           job_worker(j)->peer->worker == job_worker(j),
                       "running job %llu held by a dead worker", (unsigned long long)j->id);
        }
        job_for_each_waiter(w, j) {
            FUZZ_CHECK(w->job == j, "waiter of another job");
            FUZZ_CHECK(live_peer(w->client), "job %llu waited on by a gone client",
                       (unsigned long long)j->id);
            FUZZ_CHECK(w->jnode.next->prev == &w->jnode, "waiter links");
        }
    }
    FUZZ_CHECK(e->timers.n >= future && e->timers.n <= future + running,
               "heap holds %u timers for %zu future and %zu running jobs", (unsigned)e->timers.n,
               future, running);
    FUZZ_CHECK(e->njobs >= future + running, "njobs %zu < %zu future + %zu running", e->njobs,
               future, running);

    size_t npeers = 0;
    for (int i = 0; i < NSLOTS; i++) {
        struct peer *p = S.slot[i].p;
        if (p == NULL)
            continue;
        npeers++;
        if (p->worker != NULL)
            FUZZ_CHECK(p->worker->peer == p, "worker of another peer");
        FUZZ_CHECK(!peer_busy(p) || p->listing != NULL, "busy without a listing");
    }
    FUZZ_CHECK(npeers == e->npeers, "%zu peers alive, engine counts %zu", npeers, e->npeers);
}

/* is_response reports whether cmd is something the server may send to a connection. */
static int is_response(uint32_t cmd)
{
    switch (cmd) {
    case CMD_NOOP: case CMD_JOB_CREATED: case CMD_NO_JOB: case CMD_JOB_ASSIGN:
    case CMD_WORK_STATUS: case CMD_WORK_COMPLETE: case CMD_WORK_FAIL: case CMD_ECHO_RES:
    case CMD_ERROR: case CMD_STATUS_RES: case CMD_WORK_EXCEPTION: case CMD_OPTION_RES:
    case CMD_WORK_DATA: case CMD_WORK_WARNING: case CMD_JOB_ASSIGN_UNIQ: case CMD_JOB_ASSIGN_ALL:
    case CMD_STATUS_RES_UNIQUE: case CMD_JOB_CANCELLED:
        return 1;
    }
    return 0;
}

/* check_rx checks the drained bytes of s: complete replies are removed, an incomplete tail is
 * kept. complete says the peer's queue is empty and the peer is not closing, so no tail may
 * remain. Only peers that never sent an admin line are checked: admin text can start with a NUL
 * or even look like a packet header (a function registered as "\0REQ..." opens its 'status'
 * line with those bytes), so text and binary cannot be told apart on a mixed connection. */
static void check_rx(struct slot *s, int complete)
{
    if (s->text_seen) {
        bytes_drop(&s->rx, s->rx.n);
        return;
    }
    size_t off = 0;
    const char *rx = (const char *)s->rx.p;
    while (off < s->rx.n) {
        const char *p = rx + off;
        size_t left = s->rx.n - off;
        if (p[0] == '\0') {
            struct pb_packet pkt;
            size_t used = 0;
            enum pb_status st = pb_parse(p, left, PROTO_MAGIC_RES, UINT32_MAX, &pkt, &used);
            if (st == PB_NEED_MORE)
                break;
            FUZZ_CHECK(st == PB_OK, "malformed reply to a binary-only peer: %s",
                       pb_status_name(st));
            FUZZ_CHECK(is_response(pkt.cmd), "server sent request command %u", pkt.cmd);
            /* Spur's notice goes only to a worker that asked, or answers a client's CANCEL_JOB */
            FUZZ_CHECK(pkt.cmd != CMD_JOB_CANCELLED || s->p == NULL ||
                           (s->p->flags & PEER_CANCEL_NOTIFY) ||
                           (s->p->kinds & (1u << PEER_KIND_CLIENT)),
                       "JOB_CANCELLED to a connection that did not opt in");
            if (pkt.cmd == CMD_ERROR)
                FUZZ_CHECK(pkt.len[0] > 0 && pkt.len[1] > 0, "ERROR without code or text");
            off += used;
            continue;
        }
        /* the one text reply a binary-only peer can get: ERR LINE_TOO_LONG */
        const char *nl = memchr(p, '\n', left);
        if (nl == NULL)
            break;
        FUZZ_CHECK(left >= 4 && memcmp(p, "ERR ", 4) == 0, "text reply without an admin line");
        off += (size_t)(nl - p) + 1;
    }
    if (complete)
        FUZZ_CHECK(off == s->rx.n, "output ends with %zu bytes of an unfinished reply",
                   s->rx.n - off);
    bytes_drop(&s->rx, off);
}

/* ------------------------------------------------------------ shell actions */

/* deliver hands n bytes to slot k as conn.c's read callback would. */
static void deliver(int k, const uint8_t *data, size_t n)
{
    struct slot *s = &S.slot[k];
    struct peer *p = s->p;
    if (p == NULL || n == 0 || s->eof || (p->flags & PEER_CLOSING))
        return;
    if (peer_busy(p) || s->pending.n > 0) {
        /* the shell does not read while a listing is written: the bytes wait in the socket */
        bytes_add(&s->pending, data, n);
        return;
    }
    if (buf_len(&p->in) > 0) {
        /* a partial packet is pending: read straight behind it, then process */
        int rc = buf_reserve(&p->in, n);
        FUZZ_CHECK(rc == 0, "buf_reserve");
        memcpy(buf_tail(&p->in), data, n);
        buf_commit(&p->in, n);
        run_noting_lines(p, NULL, 0, 1);
    } else {
        run_noting_lines(p, (const char *)data, n, 0);
    }
}

/* close_now tears slot k down as conn_free does. */
static void close_now(int k)
{
    struct slot *s = &S.slot[k];
    if (s->p == NULL)
        return;
    alloc_armed = 1; /* a detach that re-queues jobs may allocate (timers, wake-ups) */
    session_detach(s->p);
    alloc_armed = 0;
    free(s->p);
    s->p = NULL;
    bytes_free(&s->pending);
    bytes_free(&s->rx);
    s->text_seen = 0;
    s->eof = 0;
}

/* end_iteration does what server.c's prepare watcher does after the callbacks of one loop
 * iteration: continue listings, read what waited while a peer was busy, free closed peers. Then
 * it checks every invariant. */
static void end_iteration(void)
{
    alloc_armed = 1;
    admin_continue(&S.eng);
    alloc_armed = 0;
    for (int k = 0; k < NSLOTS; k++) {
        struct slot *s = &S.slot[k];
        if (s->p != NULL && s->pending.n > 0 && !peer_busy(s->p) &&
            !(s->p->flags & PEER_CLOSING)) {
            struct bytes b = s->pending;
            memset(&s->pending, 0, sizeof s->pending);
            deliver(k, b.p, b.n);
            bytes_free(&b);
        }
    }
    for (int k = 0; k < NSLOTS; k++)
        if (S.slot[k].p != NULL && (S.slot[k].p->flags & PEER_CLOSING))
            close_now(k);
    /* engine_check walks every job for every function: with thousands of jobs (the bulk
     * operation) check every 64th iteration so an input still runs in milliseconds */
    if (S.eng.njobs <= 256 || (++S.iterations & 63) == 0) {
        int armed = alloc_armed;
        alloc_armed = 0;
        check_all();
        alloc_armed = armed;
    }
    if (S.stop && S.eng.shutting_down && S.eng.nrunning > 0)
        S.stop = 0; /* graceful: keep running until the running jobs are done */
}

static void connect_slot(int k, int local)
{
    struct slot *s = &S.slot[k];
    if (s->p != NULL || S.eng.shutting_down)
        return;
    s->p = calloc(1, sizeof *s->p);
    FUZZ_CHECK(s->p != NULL, "calloc");
    peer_init(s->p, &S.eng, S.next_fd++, local ? "127.0.0.1" : "192.0.2.7", local);
    peer_attach(s->p);
}

/* drain writes n bytes of slot k's output (all if n is 0) and checks what was written. */
static void drain(int k, size_t n)
{
    struct slot *s = &S.slot[k];
    struct peer *p = s->p;
    if (p == NULL)
        return;
    size_t pending = outq_pending(&p->out);
    if (n == 0 || n > pending)
        n = pending;
    size_t left = n;
    while (left > 0) {
        struct iovec iov[16];
        int cnt = outq_iov(&p->out, iov, 16);
        FUZZ_CHECK(cnt > 0, "outq_iov returned nothing with %zu bytes pending", left);
        size_t took = 0;
        for (int i = 0; i < cnt && took < left; i++) {
            size_t t = iov[i].iov_len < left - took ? iov[i].iov_len : left - took;
            FUZZ_CHECK(iov[i].iov_len > 0, "empty iovec");
            bytes_add(&s->rx, iov[i].iov_base, t);
            took += t;
        }
        outq_consume(&p->out, took);
        left -= took;
    }
    int empty = outq_pending(&p->out) == 0;
    check_rx(s, empty && !(p->flags & PEER_CLOSING));
    if (empty && s->eof)
        peer_close(p); /* conn_flush closes a half-closed conn once everything is written */
}

/* ------------------------------------------------------------ building input */

/* handle_of writes the handle of job number id. */
static size_t handle_of(uint64_t id, char *out, size_t cap)
{
    int n = snprintf(out, cap, HANDLE_PREFIX ":%llu", (unsigned long long)id);
    return (size_t)n;
}

/* add_arg appends one argument chosen by the input to b. */
static void add_arg(struct reader *r, struct bytes *b)
{
    uint8_t kind = rd_u8(r);
    char tmp[64];
    size_t n;
    switch (kind & 7) {
    case 0: { /* literal bytes */
        const uint8_t *lit = rd_bytes(r, (size_t)(kind >> 3), &n);
        bytes_add(b, lit, n);
        break;
    }
    case 1: /* a function name from a small set */
        n = (size_t)snprintf(tmp, sizeof tmp, "f%u", (unsigned)(kind >> 3) & 3);
        bytes_add(b, tmp, n);
        break;
    case 2: { /* the handle of a recent job (ids count from 1 in the fuzz engine) */
        uint64_t back = (kind >> 3) & 15;
        uint64_t id = S.eng.next_id > back + 1 ? S.eng.next_id - 1 - back : 1;
        bytes_add(b, tmp, handle_of(id, tmp, sizeof tmp));
        break;
    }
    case 3: /* a unique from a small set, or the payload-coalescing "-" */
        if (((kind >> 3) & 3) == 3)
            bytes_add(b, "-", 1);
        else {
            n = (size_t)snprintf(tmp, sizeof tmp, "u%u", (unsigned)(kind >> 3) & 3);
            bytes_add(b, tmp, n);
        }
        break;
    case 4: { /* a number: epoch near the clock, a timeout in ms, or any 32-bit value */
        uint32_t v = rd_u32(r);
        if (kind & 8)
            n = (size_t)snprintf(tmp, sizeof tmp, "%lld", (long long)S.clock + (v % 600) - 60);
        else if (kind & 16)
            n = (size_t)snprintf(tmp, sizeof tmp, "%u", v % 5000);
        else
            n = (size_t)snprintf(tmp, sizeof tmp, "%d", (int32_t)v);
        bytes_add(b, tmp, n);
        break;
    }
    case 5: /* empty */
        break;
    case 6: { /* a cron field */
        static const char *const cron[] = {"*", "0", "5", "*/2", "1-3", "59", "x", "7,8"};
        bytes_add(b, cron[(kind >> 3) & 7], strlen(cron[(kind >> 3) & 7]));
        break;
    }
    case 7: { /* a large payload, to reach shared output segments */
        size_t len = (size_t)(rd_u16(r) % 6000);
        uint8_t *big = malloc(len ? len : 1);
        FUZZ_CHECK(big != NULL, "malloc");
        memset(big, 'a' + (kind >> 3) % 26, len);
        bytes_add(b, big, len);
        free(big);
        break;
    }
    }
}

/* build_packet builds a request from the input: a command, then its arguments joined by NULs. */
static void build_packet(struct reader *r, struct bytes *out)
{
    static const uint32_t odd[] = {0, CMD_MAX, 65535, 0x80000000u, 0xffffffffu, 5, 24,
                                   CMD_CANCEL_JOB, CMD_JOB_CANCELLED};
    uint8_t c = rd_u8(r);
    uint8_t flags = rd_u8(r);
    uint32_t cmd = c % 52;
    if (cmd >= CMD_MAX)
        cmd = odd[cmd - CMD_MAX];
    const struct proto_cmd *info = cmd == 0 ? NULL : proto_cmd_info(cmd);
    int nargs = info ? info->argc + info->has_data : (int)(flags & 3);
    if (flags & 0x40)
        nargs = (nargs + (flags >> 4)) % 9; /* a wrong argument count now and then */
    struct bytes body = {0};
    for (int i = 0; i < nargs; i++) {
        if (i > 0)
            bytes_add(&body, "", 1);
        add_arg(r, &body);
    }
    unsigned char hdr[PROTO_HEADER_SIZE];
    proto_header(hdr, (flags & 0x80) ? PROTO_MAGIC_RES : PROTO_MAGIC_REQ, cmd, (uint32_t)body.n);
    bytes_add(out, hdr, sizeof hdr);
    bytes_add(out, body.p, body.n);
    bytes_free(&body);
}

/* build_admin builds one admin line from a template. */
static void build_admin(struct reader *r, struct bytes *out)
{
    static const char *const tmpl[] = {
        "status", "workers", "show jobs", "show unique jobs", "prioritystatus", "version",
        "cancel job %H", "drop function f%d", "create function f%d", "maxqueue f%d %n",
        "maxqueue f%d %n %n %n", "shutdown graceful", "shutdown", "verbose", "getpid",
        " status", "show", "cancel job", "a b c d e f g h", "SHOW  JOBS ",
        "retry f%d %n %n %n", "retry f%d %n %n", "retry list", "retry job %H",
        "retry job all f%d", "show failed jobs", "show failed jobs f%d", "purge failed",
        "purge failed f%d", "retry job", "purge",
        /* recurring schedules (recur.h) */
        "schedule add s%d @every %ns f%d --nohaste p", "schedule add s%d */%n * * * * f%d x y",
        "schedule add s%d @every 1s f%d --unique u%d --priority high", "schedule list",
        "schedule remove s%d", "schedule add bad 99 * * * * f p", "schedule", "schedule add",
        "SCHEDULE LIST extra",
        /* broadcast functions (broadcast.h) */
        "broadcast f%d on", "broadcast f%d off", "broadcast list", "broadcast f%d", "broadcast",
        /* dependencies (jobx.h) */
        "submit f%d x", "submit f%d --after %H y", "submit f%d --after %H,%H --priority low z",
        "submit f%d --unique u%d --after %H", "submit", "submit f%d --after H:x:1 p",
        /* flow control (flow.h) */
        "limit f%d concurrency %n", "limit f%d rate %n/s", "limit f%d key-concurrency %n",
        "limit f%d key-rate %n/s", "limit f%d off", "limit list", "pause f%d", "resume f%d",
        "weight f%d %n", "limit f%d", "limit list x",
    };
    uint8_t t = rd_u8(r);
    uint8_t a = rd_u8(r);
    const char *f = tmpl[t % (sizeof tmpl / sizeof tmpl[0])];
    char line[128];
    size_t n = 0;
    for (const char *q = f; *q && n < sizeof line - 32; q++) {
        if (q[0] == '%' && q[1] == 'd') {
            n += (size_t)snprintf(line + n, sizeof line - n, "%u", (unsigned)a & 3);
            q++;
        } else if (q[0] == '%' && q[1] == 'n') {
            n += (size_t)snprintf(line + n, sizeof line - n, "%u", (unsigned)rd_u8(r) % 4);
            q++;
        } else if (q[0] == '%' && q[1] == 'H') {
            uint64_t back = a >> 2;
            uint64_t id = S.eng.next_id > back + 1 ? S.eng.next_id - 1 - back : 1;
            n += handle_of(id, line + n, sizeof line - n);
            q++;
        } else {
            line[n++] = *q;
        }
    }
    bytes_add(out, line, n);
    bytes_add(out, (t & 0x80) ? "\r\n" : "\n", (t & 0x80) ? 2 : 1);
}

/* deliver_split delivers b to slot k in chunks the input chooses, one loop iteration each. */
static void deliver_split(struct reader *r, int k, const struct bytes *b)
{
    size_t off = 0;
    while (off < b->n) {
        size_t chunk = (size_t)(rd_u8(r) % 16) + 1;
        if (chunk > b->n - off)
            chunk = b->n - off;
        deliver(k, b->p + off, chunk);
        off += chunk;
        end_iteration();
        if (S.stop)
            return;
    }
}

/* ------------------------------------------------------------ the target */

static void setup(struct reader *r)
{
    memset(&S, 0, sizeof S);
    alloc_armed = 0;
    alloc_countdown = 0;
    options_defaults(&S.cfg);
    uint8_t c0 = rd_u8(r), c1 = rd_u8(r), c2 = rd_u8(r);
    static const uint32_t packets[] = {16, 64, 4096, 64u << 20};
    static const size_t lines[] = {8, 32, 128, 8192};
    static const size_t outputs[] = {64, 700, 65536, 256u << 20};
    S.cfg.job_retries = (c0 % 5) - 1;        /* -1 .. 3 */
    S.cfg.worker_wakeup = (c0 / 5) % 5 - 1;  /* -1 = one per ready job, 0 = all, 1 .. 3 */
    S.cfg.exceptions = (c0 / 20) & 1;
    S.cfg.max_packet = packets[c1 & 3];
    S.cfg.max_line = lines[(c1 >> 2) & 3];
    S.cfg.max_output = outputs[(c1 >> 4) & 3];
    S.cfg.max_function = (c1 & 0x40) ? 4 : 512;
    S.cfg.max_client_id = (c1 & 0x80) ? 3 : 127;
    S.cfg.admin_shutdown = (enum admin_shutdown_policy)(c2 % 3);
    static const double grab_waits[] = {0, 0.002, 1.0};
    S.cfg.grab_wait = grab_waits[(c2 / 3) % 3]; /* held GRABs end by deadline, input or a job */
    S.cfg.job_handle_prefix = strdup(HANDLE_PREFIX);
    static const struct engine_ops ops = {cb_output, cb_close, cb_shutdown, cb_now, cb_resume};
    S.clock = 1700000000.0;
    int rc = engine_init(&S.eng, &S.cfg, &ops, &S);
    FUZZ_CHECK(rc == 0, "engine_init");
    engine_set_sink(&S.eng, &cmd_sink);
    FUZZ_CHECK(features_attach(&S.eng) == 0, "features_attach");
    /* deterministic handles and hashing, so inputs replay and the fuzzer can name jobs */
    S.eng.next_id = 1;
    S.eng.seed = 0x5eed;
    S.next_fd = 10;
    /* access rules (acl.h) on some inputs: the remote slots (192.0.2.7) are refused admin
     * changes, optionally reads, and the functions the policy does not give them */
    if ((c2 / 9) & 1) {
        char err[256];
        S.eng.acl = calloc(1, sizeof *S.eng.acl);
        FUZZ_CHECK(S.eng.acl != NULL, "calloc");
        for (int k = 0; k < DENIED_KINDS; k++)
            S.eng.acl->limit[k] = (struct log_limit){1.0, 0, 0, 10, 0};
        FUZZ_CHECK(acl_principal_parse("loopback", 8, &S.eng.acl->admin[0], err, sizeof err) == 0,
                   "%s", err);
        S.eng.acl->nadmin = 1;
        S.eng.acl->admin_read_allowed = (c2 / 18) & 1;
        static const char pol[] = "deny all fx loopback\n"
                                  "allow all f* loopback\n"
                                  "allow submit g 192.0.2.0/24\n"
                                  "allow can_do g* any\n";
        S.eng.acl->policy = acl_policy_parse(pol, sizeof pol - 1, "fuzz", err, sizeof err);
        FUZZ_CHECK(S.eng.acl->policy != NULL, "%s", err);
    }
}

static void teardown(void)
{
    for (int k = 0; k < NSLOTS; k++)
        close_now(k);
    FUZZ_CHECK(S.eng.npeers == 0 && list_empty(&S.eng.peers), "peers left after detaching all");
    FUZZ_CHECK(list_empty(&S.eng.listings), "a listing outlived its peer");
    check_all();
    engine_destroy(&S.eng);
    acl_free(S.eng.acl);
    config_free(&S.cfg);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    log_open("none");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct reader r = {data, size, 0};
    setup(&r);
    connect_slot(0, 1);
    connect_slot(1, 1);
    for (int ops = 0; ops < MAX_OPS && rd_left(&r) > 0 && !S.stop; ops++) {
        uint8_t op = rd_u8(&r);
        int k = (op >> 4) % NSLOTS;
        switch (op & 15) {
        case 0: case 1: { /* raw bytes */
            size_t n;
            const uint8_t *b = rd_bytes(&r, rd_u8(&r), &n);
            deliver(k, b, n);
            break;
        }
        case 2: case 3: case 4: { /* a well-formed packet (a few back to back) */
            struct bytes b = {0};
            uint8_t c = (op & 15) == 4 ? rd_u8(&r) : 0;
            if (c >= 0xf8) {
                /* bulk: more background jobs than one 'show jobs' slice (ADMIN_SLICE), so
                 * listings span iterations and later input waits for them */
                char fn[3] = {'f', (char)('0' + (c & 3)), '\0'};
                for (int i = 0; i < ADMIN_SLICE + 50; i++) {
                    char u[16];
                    int ul = (c & 4) ? snprintf(u, sizeof u, "b%d", i) : 0;
                    struct proto_arg a[3] = {{fn, 2}, {u, (size_t)ul}, {"x", 1}};
                    unsigned char pk[64];
                    bytes_add(&b, pk, proto_encode(pk, PROTO_MAGIC_REQ, CMD_SUBMIT_JOB_BG, a, 3));
                }
            } else {
                int count = (op & 15) == 4 ? 1 + c % 4 : 1;
                for (int i = 0; i < count; i++)
                    build_packet(&r, &b);
            }
            deliver(k, b.p, b.n);
            bytes_free(&b);
            break;
        }
        case 5: { /* a packet split over several reads */
            struct bytes b = {0};
            build_packet(&r, &b);
            deliver_split(&r, k, &b);
            bytes_free(&b);
            break;
        }
        case 6: case 7: { /* an admin line, whole or split */
            struct bytes b = {0};
            build_admin(&r, &b);
            if ((op & 15) == 6)
                deliver(k, b.p, b.n);
            else
                deliver_split(&r, k, &b);
            bytes_free(&b);
            break;
        }
        case 8: /* connect */
            connect_slot(k, !(rd_u8(&r) & 1));
            break;
        case 9: /* abrupt disconnect */
            close_now(k);
            break;
        case 10: /* half-close: no more input; closed once the output is written */
            if (S.slot[k].p != NULL && S.slot[k].pending.n == 0) {
                S.slot[k].eof = 1;
                if (outq_pending(&S.slot[k].p->out) == 0)
                    peer_close(S.slot[k].p);
            }
            break;
        case 11: { /* the clock moves; due timers run */
            uint8_t d = rd_u8(&r);
            S.clock += (double)d * d / 16.0 + (d & 1 ? 0.25 : 0);
            alloc_armed = 1;
            engine_run_timers(&S.eng, S.clock);
            recur_run(&S.eng, S.clock);
            alloc_armed = 0;
            double next = engine_next_timer(&S.eng);
            FUZZ_CHECK(next < 0 || next > S.clock, "a timer due at %.3f left at %.3f", next,
                       S.clock);
            next = recur_next_due(&S.eng);
            FUZZ_CHECK(next < 0 || next > S.clock, "a schedule due at %.3f left at %.3f", next,
                       S.clock);
            break;
        }
        case 12: /* drain all output */
            drain(k, 0);
            break;
        case 13: /* drain part of the output */
            drain(k, (size_t)rd_u8(&r) + 1);
            break;
        case 14: { /* shrink or restore the output limit (it applies from the next reply) */
            static const size_t lim[] = {40, 300, 5000, 256u << 20};
            S.cfg.max_output = lim[rd_u8(&r) & 3];
            break;
        }
        case 15: { /* one allocation will fail: the ((operand >> 1) + 1)-th from now */
            uint8_t v = rd_u8(&r);
            if (v & 1)
                alloc_countdown = (unsigned)(v >> 1) + 1;
            break;
        }
        }
        end_iteration();
    }
    teardown();
    return 0;
}
