/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_http: the HTTP request path. libmicrohttpd (through http.c) serves up to NSLOTS
 * connections over socketpairs; a small C shell forwards the engine_ops to the peers' own
 * peer_ops and pumps http_run / http_flush as server.c's loop does, and a worker peer of the
 * engine takes the submitted jobs. The fuzz input is a list of operations: raw bytes to a
 * connection, well-formed requests built from the input (GET pages, POST/PUT submissions with
 * any headers and bodies, chunked or not), closing or half-closing a client mid-request or
 * while its job waits, the worker grabbing a job and answering it (WORK_DATA, COMPLETE, FAIL, EXCEPTION), and
 * the store's replay starting and ending. After every operation:
 *   - engine_check() and session_check() pass (the HTTP peers are ordinary clients to them);
 *   - what a client received starts with an HTTP status line;
 * and at the end every connection is closed, http_destroy runs, the engine is destroyed and
 * LeakSanitizer must find nothing.
 *
 * Limits are small (body 4096, headers 2048, 4 connections) so the fuzzer reaches them; there is
 * no idle timeout, so nothing depends on the clock. */
#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cmd.h"
#include "config.h"
#include "engine.h"
#include "feature_set.h"
#include "fuzz_util.h"
#include "http.h"
#include "log.h"
#include "options.h"
#include "peer.h"
#include "proto.h"
#include "session.h"
#include "store.h"

#define NSLOTS 4     /* client connections at once */
#define MAX_OPS 200  /* operations per input */
#define PUMP 4       /* http_run/http_flush rounds after each operation */

static void op_output(struct engine *e, struct peer *p)
{
    (void)e;
    if (p->ops != NULL)
        p->ops->output(p);
}

static void op_close(struct engine *e, struct peer *p)
{
    (void)e;
    if (p->ops != NULL)
        p->ops->close(p);
}

static void op_shutdown(struct engine *e, int graceful)
{
    (void)e;
    (void)graceful;
}

static double op_now(struct engine *e)
{
    (void)e;
    return 1000.0;
}

static void op_resume(struct engine *e, struct peer *p)
{
    (void)e;
    if (p->ops != NULL)
        p->ops->resume(p);
    else
        session_process(p);
}

static const struct engine_ops ops = {op_output, op_close, op_shutdown, op_now, op_resume};

/* struct slot is one client connection: our end of the socketpair and what it received. */
struct slot {
    int fd;          /* -1 when closed */
    size_t got;      /* bytes received */
    char head[8];    /* the first bytes received */
};

static struct http *H;
static struct engine E;
static struct config C;
static struct peer W;
static struct slot S[NSLOTS];

static void slot_read(struct slot *s)
{
    if (s->fd < 0)
        return;
    char buf[8192];
    ssize_t n;
    while ((n = recv(s->fd, buf, sizeof buf, MSG_DONTWAIT)) > 0) {
        for (ssize_t i = 0; i < n && s->got + (size_t)i < sizeof s->head; i++)
            s->head[s->got + (size_t)i] = buf[i];
        s->got += (size_t)n;
    }
    if (s->got >= 7)
        FUZZ_CHECK(memcmp(s->head, "HTTP/1.", 7) == 0, "a response that is not HTTP");
}

static void pump(void)
{
    for (int i = 0; i < PUMP; i++) {
        http_run(H);
        http_flush(H);
        for (int k = 0; k < NSLOTS; k++)
            slot_read(&S[k]);
    }
    char err[256];
    FUZZ_CHECK(engine_check(&E, err, sizeof err) == 0, "%s", err);
    FUZZ_CHECK(session_check(&E, err, sizeof err) == 0, "%s", err);
}

static void slot_open(struct slot *s)
{
    if (s->fd >= 0)
        return;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0)
        return;
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    memset(s, 0, sizeof *s);
    if (http_add(H, sv[0], (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(sv[1]);
        s->fd = -1;
        return;
    }
    s->fd = sv[1];
}

static void slot_send(struct slot *s, const void *p, size_t n)
{
    if (s->fd < 0 || n == 0)
        return;
    ssize_t w = send(s->fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
    (void)w; /* a full socket or a closed server end drops the rest, like a slow network */
}

static void slot_close(struct slot *s)
{
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
}

/* worker_take returns what the engine queued for the worker. */
static size_t worker_take(char *out, size_t max)
{
    size_t n = 0;
    struct iovec iov[16];
    while (outq_pending(&W.out) > 0) {
        int k = outq_iov(&W.out, iov, 16);
        size_t used = 0;
        for (int i = 0; i < k; i++) {
            size_t c = iov[i].iov_len;
            if (n + c > max)
                c = max > n ? max - n : 0;
            memcpy(out + n, iov[i].iov_base, c);
            n += c;
            used += iov[i].iov_len;
        }
        outq_consume(&W.out, used);
    }
    return n;
}

static void worker_send(uint32_t cmd, const struct proto_arg *args, int nargs)
{
    size_t body = proto_body_size(args, nargs);
    unsigned char *pkt = malloc(PROTO_HEADER_SIZE + body);
    FUZZ_CHECK(pkt != NULL, "malloc");
    size_t n = proto_encode(pkt, PROTO_MAGIC_REQ, cmd, args, nargs);
    session_feed(&W, (const char *)pkt, n);
    free(pkt);
}

/* worker_job grabs a job and answers it as the input says. */
static void worker_job(struct reader *r)
{
    static char out[1 << 16];
    worker_take(out, sizeof out);
    worker_send(CMD_GRAB_JOB, NULL, 0);
    size_t n = worker_take(out, sizeof out);
    if (n < PROTO_HEADER_SIZE || proto_get32(out + 4) != CMD_JOB_ASSIGN)
        return;
    const char *h = out + PROTO_HEADER_SIZE;
    const char *nul = memchr(h, '\0', n - PROTO_HEADER_SIZE);
    if (nul == NULL)
        return;
    struct proto_arg a[2] = {{h, (size_t)(nul - h)}, {NULL, 0}};
    size_t got;
    uint8_t what = rd_u8(r);
    for (int i = 0; i < (what >> 4); i++) { /* some WORK_DATA first */
        a[1].ptr = rd_bytes(r, rd_u8(r), &got);
        a[1].len = got;
        worker_send(CMD_WORK_DATA, a, 2);
    }
    a[1].ptr = rd_bytes(r, rd_u8(r), &got);
    a[1].len = got;
    switch (what & 3) {
    case 0: worker_send(CMD_WORK_COMPLETE, a, 2); break;
    case 1: worker_send(CMD_WORK_FAIL, a, 1); break;
    case 2: worker_send(CMD_WORK_EXCEPTION, a, 2); break;
    default: break; /* leave it running */
    }
}

static const char *const methods[] = {"GET", "POST", "PUT", "HEAD", "DELETE", "OPTIONS", "G\x01T"};
static const char *const paths[] = {"/healthz", "/f", "/g", "/metrics", "/", "/f/x", "/has%20sp",
                                    "/%00", "/stats.json", "/f?x=1"};
static const char *const headers[] = {
    "X-Gearman-Background: true\r\n", "X-Gearman-Priority: high\r\n",
    "X-Gearman-Priority: low\r\n",    "X-Gearman-Priority: bogus\r\n",
    "X-Gearman-Unique: u1\r\n",       "X-Gearman-Unique: -\r\n",
    "Connection: close\r\n",          "Expect: 100-continue\r\n",
    "X-Gearman-Unique: uuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuu\r\n",
};

/* request sends one well-formed (or nearly) request built from the input. */
static void request(struct reader *r, struct slot *s)
{
    char head[1024];
    uint8_t m = rd_u8(r), p = rd_u8(r), hs = rd_u8(r), flags = rd_u8(r);
    int off = snprintf(head, sizeof head, "%s %s HTTP/1.%d\r\nHost: x\r\n",
                       methods[m % (sizeof methods / sizeof *methods)],
                       paths[p % (sizeof paths / sizeof *paths)], (flags & 1) ? 0 : 1);
    for (unsigned i = 0; i < sizeof headers / sizeof *headers; i++)
        if (hs & (1u << (i % 8)) && (i < 8 || (flags & 8)))
            off += snprintf(head + off, sizeof head - (size_t)off, "%s", headers[i]);
    size_t blen = (size_t)rd_u16(r) % 6000; /* past the 4096 limit sometimes */
    int chunked = (flags & 2) != 0;
    if (chunked)
        off += snprintf(head + off, sizeof head - (size_t)off, "Transfer-Encoding: chunked\r\n");
    else
        off += snprintf(head + off, sizeof head - (size_t)off, "Content-Length: %zu\r\n", blen);
    off += snprintf(head + off, sizeof head - (size_t)off, "\r\n");
    slot_send(s, head, (size_t)off);
    static char body[6000];
    size_t got;
    const uint8_t *b = rd_bytes(r, blen, &got);
    memset(body, 'b', blen);
    memcpy(body, b, got);
    if (chunked) {
        char ch[32];
        int n = snprintf(ch, sizeof ch, "%zx\r\n", blen);
        if (blen > 0) {
            slot_send(s, ch, (size_t)n);
            slot_send(s, body, blen);
            slot_send(s, "\r\n", 2);
        }
        slot_send(s, "0\r\n\r\n", 5);
    } else if (!(flags & 4)) { /* or stop short of the declared length */
        slot_send(s, body, blen);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int once;
    if (!once) {
        once = 1;
        log_open("none");
    }
    struct reader r = {data, size, 0};
    options_defaults(&C);
    C.http_port = 0;
    C.max_packet = 1u << 16;
    C.max_output = (1u << 16) + 4096;
    C.http_max_body = 4096;
    C.http_max_header = 2048;
    C.http_max_connections = NSLOTS;
    C.http_idle_timeout = 0;
    C.http_request_timeout = 86400; /* deadlines are armed and disarmed, never reached */
    FUZZ_CHECK(engine_init(&E, &C, &ops, NULL) == 0, "engine_init");
    engine_set_sink(&E, &cmd_sink);
    FUZZ_CHECK(features_attach(&E) == 0, "features_attach"); /* as the server: POST /admin too */
    char err[256];
    H = http_new(&E, &C, err, sizeof err);
    FUZZ_CHECK(H != NULL, "%s", err);
    peer_init(&W, &E, 1000, "127.0.0.1", 1);
    peer_attach(&W);
    struct proto_arg f = {"f", 1}, g = {"g", 1};
    worker_send(CMD_CAN_DO, &f, 1);
    worker_send(CMD_CAN_DO, &g, 1);
    for (int i = 0; i < NSLOTS; i++)
        S[i].fd = -1;

    for (int op = 0; op < MAX_OPS && rd_left(&r) > 0; op++) {
        uint8_t code = rd_u8(&r);
        struct slot *s = &S[(code >> 4) % NSLOTS];
        switch (code & 15) {
        case 0: slot_open(s); break;
        case 1:
        case 2: {
            size_t got;
            const uint8_t *b = rd_bytes(&r, rd_u8(&r), &got);
            slot_send(s, b, got);
            break;
        }
        case 3:
        case 4:
        case 5: request(&r, s); break;
        case 6: slot_close(s); break;
        case 7:
            if (s->fd >= 0)
                shutdown(s->fd, SHUT_WR);
            break;
        case 8:
        case 9: worker_job(&r); break;
        case 10:
            if (!E.replaying) {
                E.replaying = 1;
            } else {
                E.replaying = 0;
                cmd_store_sink.replay_done(&E);
            }
            break;
        default: slot_open(s); request(&r, s); break;
        }
        pump();
    }
    if (E.replaying) {
        E.replaying = 0;
        cmd_store_sink.replay_done(&E);
    }
    pump();
    for (int i = 0; i < NSLOTS; i++)
        slot_close(&S[i]);
    pump();
    http_destroy(H);
    H = NULL;
    session_detach(&W);
    FUZZ_CHECK(engine_check(&E, err, sizeof err) == 0, "%s", err);
    FUZZ_CHECK(E.npeers == 0, "a peer left after http_destroy");
    engine_destroy(&E);
    config_free(&C);
    return 0;
}
