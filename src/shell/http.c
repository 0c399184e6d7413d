/* SPDX-License-Identifier: BSD-3-Clause */
/* http: the HTTP front-end: libmicrohttpd in external-polling epoll mode, the route table, and
 * job submission through an internal client per request (http.h). */
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "config.h"
#include "engine.h"
#include "acl.h"
#include "job.h"
#include "jobx.h"
#include "jobx_admin.h"
#include "list.h"
#include "log.h"
#include "metrics.h"
#include "peer.h"
#include "proto.h"
#include "proto_bin.h"
#include "session.h"
#include "store.h"

#define TEXT_PLAIN "text/plain; charset=utf-8"
#define GONE_EVENTS 64 /* disconnect notices handled per http_run */

/* enum req_state is where a submission request is. */
enum req_state {
    REQ_BODY = 0, /* receiving the body */
    REQ_WAIT,     /* submitted: waiting for JOB_CREATED or the job's result */
    REQ_DONE,     /* the answer is known (status, headers, body): queue it */
};

/* struct http is the HTTP engine: the MHD daemon and the live requests. */
struct http {
    struct engine *eng;        /* the engine requests submit to (borrowed) */
    const struct config *cfg;  /* limits (borrowed) */
    struct MHD_Daemon *d;      /* libmicrohttpd, external polling through its epoll fd */
    int gone_fd;               /* epoll: sockets of suspended requests, for EOF (EPOLLRDHUP) */
    size_t max_body;           /* --http-max-body (or --max-packet-size) */
    struct list_node dirty;    /* requests with replies or a close to look at (req.dnode) */
    struct list_node all;      /* every live submission request (req.anode) */
    struct list_node slow;     /* connections whose request deadline runs (hconn.node), in
                                  deadline order: one --http-request-timeout for all */
    size_t nreqs;              /* entries in all */
    size_t resumed;            /* requests resumed by the last http_flush */
    int stopping;              /* http_destroy runs: new requests are answered 503 */
};

/* struct hconn is one HTTP connection's deadline for its current request
 * (--http-request-timeout): armed when the request begins (the connection is accepted, or the
 * first byte of a kept-alive connection's next request arrives), disarmed once the request line,
 * headers and body are all in (it is answered or waits on its job). MHD's socket context. */
struct hconn {
    struct list_node node;     /* on h->slow while armed */
    struct http *h;            /* owner */
    int fd;                    /* the socket (MHD's: only watched and shut down here) */
    double deadline;           /* CLOCK_MONOTONIC second by which the request must be in */
    char ip[48];               /* the client's address, for the log */
    unsigned armed : 1;        /* node is linked */
    unsigned watched : 1;      /* fd is in h->gone_fd, for the next request's first byte */
    unsigned expired : 1;      /* shut down by the deadline: MHD closes it */
};

/* struct req is one POST/PUT /FUNC request: the internal client the engine sees, and its
 * answer. */
struct req {
    struct peer peer;          /* must be first: the engine's view (PEER_HTTP) */
    struct http *h;            /* owner */
    struct MHD_Connection *mc; /* its connection */
    struct list_node dnode;    /* on h->dirty while on_dirty */
    struct list_node anode;    /* on h->all */
    enum req_state state;      /* REQ_* */
    unsigned on_dirty : 1;     /* dnode is linked */
    unsigned attached : 1;     /* peer is in the engine: session_detach it once */
    unsigned suspended : 1;    /* MHD_suspend_connection was called, not yet resumed */
    unsigned watched : 1;      /* fd is in h->gone_fd */
    unsigned background : 1;   /* X-Gearman-Background: true */
    unsigned too_large : 1;    /* the body passed the limit: dropped, answered 413 */
    unsigned admin : 1;        /* POST /admin: the body is an admin line, the answer its reply */
    char *after;               /* X-Spur-After: the handles the job waits for, or NULL */
    int fd;                    /* the socket, for the disconnect watch */
    size_t body;               /* body bytes received (into peer.in, behind the packet header,
                                  function and unique: the SUBMIT packet being built there counts
                                  against --max-buffer-memory like any partial packet) */
    size_t max_body;           /* the most body bytes this request may have */
    struct buf rx;             /* replies drained from peer.out, not yet parsed */
    unsigned status;           /* the answer's HTTP status */
    const char *command;       /* X-Gearman-Command of the answer, or NULL */
    char handle[JOB_HANDLE_BUF]; /* X-Gearman-Job-Handle, "" until JOB_CREATED */
    struct buf out;            /* the answer's body (never consumed: data is the allocation) */
};

static struct log_limit http_limit = {1.0, 0, 0, 0, 0};
static struct log_limit slow_limit = {1.0, 0, 0, 0, 0}; /* --http-request-timeout closes */

/* ------------------------------------------------------------ request deadlines */

/* HCONN_TAG marks an hconn in h->gone_fd's event data (a req is untagged; both are aligned). */
#define HCONN_TAG 1u

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* client_ip writes mc's client address into ip ("-" when unknown). */
static void client_ip(struct MHD_Connection *mc, char *ip, size_t len)
{
    snprintf(ip, len, "-");
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (ci == NULL || ci->client_addr == NULL)
        return;
    const struct sockaddr *sa = ci->client_addr;
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, ip, (socklen_t)len);
    else if (sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, ip, (socklen_t)len);
}

static struct hconn *hconn_of(struct MHD_Connection *mc)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci != NULL ? ci->socket_context : NULL;
}

/* hconn_arm starts c's deadline, unless it runs already (or the option is 0). */
static void hconn_arm(struct hconn *c)
{
    double t = c->h->cfg->http_request_timeout;
    if (c->armed || c->expired || t <= 0)
        return;
    c->deadline = mono_now() + t;
    c->armed = 1;
    list_push_back(&c->h->slow, &c->node);
}

static void hconn_disarm(struct hconn *c)
{
    if (!c->armed)
        return;
    c->armed = 0;
    list_del(&c->node);
}

/* hconn_watch waits for the first byte of the kept-alive connection's next request, which
 * starts its deadline (check_gone). */
static void hconn_watch(struct hconn *c)
{
    if (c->watched || c->expired || c->fd < 0 || c->h->cfg->http_request_timeout <= 0)
        return;
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
    ev.data.u64 = (uint64_t)(uintptr_t)c | HCONN_TAG;
    if (epoll_ctl(c->h->gone_fd, EPOLL_CTL_ADD, c->fd, &ev) == 0)
        c->watched = 1;
    else
        hconn_arm(c); /* cannot watch: the deadline runs from now */
}

static void hconn_unwatch(struct hconn *c)
{
    if (!c->watched)
        return;
    c->watched = 0;
    epoll_ctl(c->h->gone_fd, EPOLL_CTL_DEL, c->fd, NULL);
}

/* request_in notes that mc's request is all in (answered, or waiting on its job): its
 * deadline stops. */
static void request_in(struct MHD_Connection *mc)
{
    struct hconn *c = hconn_of(mc);
    if (c != NULL)
        hconn_disarm(c);
}

/* on_connection is MHD's notice of a connection starting (its deadline runs from the accept)
 * and closing. */
static void on_connection(void *cls, struct MHD_Connection *mc, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    struct http *h = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        struct hconn *c = calloc(1, sizeof *c);
        if (c == NULL)
            return; /* no deadline for this one: --http-idle-timeout still applies */
        c->h = h;
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
        c->fd = ci != NULL ? ci->connect_fd : -1;
        client_ip(mc, c->ip, sizeof c->ip);
        hconn_arm(c);
        *socket_context = c;
        return;
    }
    struct hconn *c = *socket_context;
    if (c == NULL)
        return;
    hconn_disarm(c);
    hconn_unwatch(c);
    free(c);
    *socket_context = NULL;
}

/* sweep_slow shuts down the connections whose request is not in by its deadline; MHD then
 * reads the end of the stream and closes them (on_completed, on_connection). */
static void sweep_slow(struct http *h)
{
    if (list_empty(&h->slow))
        return;
    double now = mono_now();
    while (!list_empty(&h->slow)) {
        struct hconn *c = container_of(list_first(&h->slow), struct hconn, node);
        if (c->deadline > now)
            break;
        hconn_disarm(c);
        hconn_unwatch(c);
        c->expired = 1;
        h->eng->stats.http_request_timeouts++;
        log_limited(&slow_limit, LOG_WARNING, __FILE__, __LINE__,
                    "closing HTTP connection fd %d (%s): its request was not in after %gs "
                    "(--http-request-timeout)",
                    c->fd, c->ip, h->cfg->http_request_timeout);
        if (c->fd >= 0)
            shutdown(c->fd, SHUT_RDWR);
    }
}

/* ------------------------------------------------------------ answers */

/* queue_answer queues status with body (taken over: malloc'd, freed by MHD) and the optional
 * X-Gearman headers. Returns MHD's result. */
static enum MHD_Result queue_answer(struct MHD_Connection *mc, unsigned status, char *body,
                                    size_t len, const char *type, const char *handle,
                                    const char *command, const char *allow)
{
    request_in(mc);
    struct MHD_Response *rsp;
    if (body != NULL)
        rsp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    else
        rsp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    if (rsp == NULL) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(rsp, MHD_HTTP_HEADER_CONTENT_TYPE, type ? type : TEXT_PLAIN);
    if (handle != NULL && handle[0] != '\0')
        MHD_add_response_header(rsp, "X-Gearman-Job-Handle", handle);
    if (command != NULL)
        MHD_add_response_header(rsp, "X-Gearman-Command", command);
    if (allow != NULL)
        MHD_add_response_header(rsp, MHD_HTTP_HEADER_ALLOW, allow);
    enum MHD_Result r = MHD_queue_response(mc, status, rsp);
    MHD_destroy_response(rsp);
    return r;
}

/* answer_text queues status with a short text body formatted from fmt. */
static enum MHD_Result answer_text(struct MHD_Connection *mc, unsigned status, const char *allow,
                                   const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static enum MHD_Result answer_text(struct MHD_Connection *mc, unsigned status, const char *allow,
                                   const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if ((size_t)n >= sizeof text)
        n = (int)sizeof text - 1;
    char *body = NULL;
    if (n > 0) {
        body = malloc((size_t)n);
        if (body == NULL)
            return MHD_NO;
        memcpy(body, text, (size_t)n);
    }
    return queue_answer(mc, status, body, (size_t)n, NULL, NULL, NULL, allow);
}

/* refuse_close queues status with text and closes the connection after it: for a request
 * whose framing or head cannot be trusted, so nothing after it on the connection is read. */
static enum MHD_Result refuse_close(struct MHD_Connection *mc, unsigned status, const char *text)
{
    request_in(mc);
    struct MHD_Response *rsp = MHD_create_response_from_buffer(strlen(text), (void *)text,
                                                               MHD_RESPMEM_PERSISTENT);
    if (rsp == NULL)
        return MHD_NO;
    MHD_add_response_header(rsp, MHD_HTTP_HEADER_CONTENT_TYPE, TEXT_PLAIN);
    MHD_add_response_header(rsp, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result r = MHD_queue_response(mc, status, rsp);
    MHD_destroy_response(rsp);
    return r;
}

/* ------------------------------------------------------------ GET routes */

/* page_healthz: 200 once the store's replay is done (the server hands out stored jobs), else
 * 503. */
static int page_healthz(struct engine *e, struct http_page *pg, size_t max)
{
    (void)max;
    int ready = !store_replaying(e);
    const char *text = ready ? "ok\n" : "replaying the store\n";
    pg->status = ready ? 200 : 503;
    pg->len = strlen(text);
    pg->body = malloc(pg->len);
    if (pg->body == NULL)
        return -1;
    memcpy(pg->body, text, pg->len);
    return 0;
}

/* page_rendered hands a metrics renderer's result (rc, b) to pg as its body. */
static int page_rendered(struct http_page *pg, int rc, struct buf *b, const char *type)
{
    if (rc != 0) {
        buf_free(b);
        return rc == METRICS_TOO_LARGE ? -2 : -1;
    }
    pg->type = type;
    pg->len = buf_len(b);
    pg->body = malloc(pg->len > 0 ? pg->len : 1);
    if (pg->body == NULL) {
        buf_free(b);
        return -1;
    }
    memcpy(pg->body, buf_head(b), pg->len);
    buf_free(b);
    return 0;
}

/* The observability pages (metrics.h), as the admin commands 'metrics', 'status json',
 * 'workers json' and 'stats json' render them (without the admin '.' line). */
static int page_metrics(struct engine *e, struct http_page *pg, size_t max)
{
    struct buf b = {0};
    return page_rendered(pg, metrics_prometheus(e, engine_now(e), &b, max), &b,
                         "text/plain; version=0.0.4; charset=utf-8");
}

static int page_status_json(struct engine *e, struct http_page *pg, size_t max)
{
    struct buf b = {0};
    return page_rendered(pg, metrics_json_status(e, &b, max), &b, "application/json");
}

static int page_workers_json(struct engine *e, struct http_page *pg, size_t max)
{
    struct buf b = {0};
    return page_rendered(pg, metrics_json_workers(e, &b, max), &b, "application/json");
}

static int page_stats_json(struct engine *e, struct http_page *pg, size_t max)
{
    struct buf b = {0};
    return page_rendered(pg, metrics_json_stats(e, engine_now(e), &b, max), &b,
                         "application/json");
}

const struct http_route http_routes[] = {
    {"/healthz", page_healthz},
    {"/metrics", page_metrics},           /* Prometheus text format */
    {"/status.json", page_status_json},   /* 'status json' */
    {"/workers.json", page_workers_json}, /* 'workers json' */
    {"/stats.json", page_stats_json},     /* 'stats json' */
    {NULL, NULL},
};

static const struct http_route *find_route(const char *path)
{
    for (const struct http_route *r = http_routes; r->path != NULL; r++)
        if (strcmp(r->path, path) == 0)
            return r;
    return NULL;
}

static enum MHD_Result answer_page(struct http *h, struct MHD_Connection *mc,
                                   const struct http_route *rt)
{
    if (rt->page == NULL)
        return answer_text(mc, MHD_HTTP_NOT_IMPLEMENTED, NULL,
                           "%s is not available in this build\n", rt->path);
    struct http_page pg = {200, NULL, NULL, 0};
    int rc = rt->page(h->eng, &pg, h->cfg->max_output);
    if (rc != 0) {
        free(pg.body);
        return answer_text(mc, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL,
                           rc == -2 ? "reply too large (--max-output-buffer)\n"
                                    : "out of memory\n");
    }
    return queue_answer(mc, pg.status, pg.body, pg.len, pg.type, NULL, NULL, NULL);
}

/* ------------------------------------------------------------ requests */

static void dirty_add(struct req *r)
{
    if (r->on_dirty)
        return;
    r->on_dirty = 1;
    list_push_back(&r->h->dirty, &r->dnode);
}

static void dirty_del(struct req *r)
{
    if (!r->on_dirty)
        return;
    r->on_dirty = 0;
    list_del(&r->dnode);
}

static void unwatch(struct req *r)
{
    if (!r->watched)
        return;
    r->watched = 0;
    epoll_ctl(r->h->gone_fd, EPOLL_CTL_DEL, r->fd, NULL);
}

/* detach takes r's peer out of the engine: a job it waits on is left as a vanished binary
 * client leaves it (queued and waited on by nobody else: dropped; running: runs on). */
static void detach(struct req *r)
{
    if (!r->attached)
        return;
    r->attached = 0;
    session_detach(&r->peer);
}

static void req_free(struct req *r)
{
    detach(r);
    dirty_del(r);
    unwatch(r);
    list_del(&r->anode);
    r->h->nreqs--;
    buf_free(&r->rx);
    buf_free(&r->out);
    free(r->after);
    free(r);
}

/* finish sets r's answer and releases what it held in the engine. */
static void finish(struct req *r, unsigned status, const char *command)
{
    if (r->state == REQ_DONE)
        return;
    r->state = REQ_DONE;
    r->status = status;
    r->command = command;
    detach(r);
    buf_free(&r->rx);
}

/* finish_text is finish with a text body replacing what was collected. */
static void finish_text(struct req *r, unsigned status, const char *command, const char *text,
                        const void *extra, size_t extra_len)
{
    buf_free(&r->out);
    if (buf_append(&r->out, text, strlen(text)) != 0 ||
        (extra_len > 0 && buf_append(&r->out, extra, extra_len) != 0) ||
        buf_append(&r->out, "\n", 1) != 0)
        buf_free(&r->out); /* out of memory: the status alone says it */
    finish(r, status, command);
}

/* error_status maps an ERROR packet's code to an HTTP status. */
static unsigned error_status(const char *code, size_t len)
{
    if ((len == strlen(PROTO_ERR_ARGUMENT_TOO_LARGE) &&
         memcmp(code, PROTO_ERR_ARGUMENT_TOO_LARGE, len) == 0) ||
        (len == strlen(PROTO_ERR_INVALID_ARGUMENT) &&
         memcmp(code, PROTO_ERR_INVALID_ARGUMENT, len) == 0))
        return MHD_HTTP_BAD_REQUEST;
    if (len == strlen(PROTO_ERR_PERMISSION_DENIED) &&
        memcmp(code, PROTO_ERR_PERMISSION_DENIED, len) == 0)
        return MHD_HTTP_FORBIDDEN; /* --policy */
    return MHD_HTTP_SERVICE_UNAVAILABLE; /* queue full, store error, out of memory */
}

/* reply handles one packet the engine queued for r. */
static void reply(struct req *r, const struct pb_packet *pkt)
{
    switch (pkt->cmd) {
    case CMD_JOB_CREATED:
        snprintf(r->handle, sizeof r->handle, "%.*s", (int)pkt->len[0], pkt->arg[0]);
        if (r->background)
            finish(r, MHD_HTTP_OK, "JOB_CREATED");
        return;
    case CMD_WORK_DATA:
    case CMD_WORK_COMPLETE:
        if (pkt->data_len > 0 && buf_append(&r->out, pkt->data, pkt->data_len) != 0) {
            finish_text(r, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "out of memory", NULL, 0);
            return;
        }
        if (buf_len(&r->out) > r->h->cfg->max_output) {
            finish_text(r, MHD_HTTP_BAD_GATEWAY, NULL,
                        "the result is larger than --max-output-buffer", NULL, 0);
            return;
        }
        if (pkt->cmd == CMD_WORK_COMPLETE)
            finish(r, MHD_HTTP_OK, "WORK_COMPLETE");
        return;
    case CMD_WORK_FAIL:
        finish_text(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "WORK_FAIL", "the job failed (WORK_FAIL)",
                    NULL, 0);
        return;
    case CMD_WORK_EXCEPTION:
        finish_text(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "WORK_EXCEPTION",
                    "the job failed with an exception (WORK_EXCEPTION): ", pkt->data,
                    pkt->data_len);
        return;
    case CMD_ERROR: {
        char text[400];
        snprintf(text, sizeof text, "ERROR %.*s: %.*s", (int)pkt->len[0], pkt->arg[0],
                 (int)pkt->len[1], pkt->arg[1]);
        finish_text(r, error_status(pkt->arg[0], pkt->len[0]), "ERROR", text, NULL, 0);
        return;
    }
    default: /* WORK_STATUS, WORK_WARNING: not part of the answer */
        return;
    }
}

/* admin_status is the HTTP status of an admin reply: 403 for a refusal by --admin-allow, 400
 * for any other ERR line, else 200. */
static unsigned admin_status(const struct buf *out)
{
    static const char denied[] = "ERR PERMISSION_DENIED";
    size_t n = buf_len(out);
    const char *t = buf_head(out);
    if (n >= sizeof denied - 1 && memcmp(t, denied, sizeof denied - 1) == 0)
        return MHD_HTTP_FORBIDDEN;
    if (n >= 4 && memcmp(t, "ERR ", 4) == 0)
        return MHD_HTTP_BAD_REQUEST;
    return MHD_HTTP_OK;
}

/* take_output moves what r's output queue can give in one go (up to 64 segments) into b.
 * Returns 0, or -1 after answering 503 when out of memory. */
static int take_output(struct req *r, struct buf *b)
{
    struct peer *p = &r->peer;
    struct iovec iov[64];
    int k = outq_iov(&p->out, iov, 64);
    size_t got = 0;
    for (int i = 0; i < k; i++) {
        if (buf_append(b, iov[i].iov_base, iov[i].iov_len) != 0) {
            finish_text(r, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "out of memory", NULL, 0);
            return -1;
        }
        got += iov[i].iov_len;
    }
    outq_consume(&p->out, got);
    peer_account(p);
    return 0;
}

/* drain_admin moves the admin reply text the engine queued for r into its answer; the answer is
 * complete once the line is consumed and no listing is still being written for it. */
static void drain_admin(struct req *r)
{
    struct peer *p = &r->peer;
    while (outq_pending(&p->out) > 0) {
        if (take_output(r, &r->out) != 0)
            return;
        if (buf_len(&r->out) > r->h->cfg->max_output) {
            finish_text(r, MHD_HTTP_BAD_GATEWAY, NULL,
                        "the reply is larger than --max-output-buffer", NULL, 0);
            return;
        }
    }
    /* (a 'submit' may wait for the store: peer_waiting) */
    if (r->state == REQ_WAIT && buf_len(&p->in) == 0 && !peer_busy(p) && !peer_waiting(p))
        finish(r, admin_status(&r->out), NULL);
}

/* drain takes what the engine queued for r (binary reply packets, or an admin reply) and turns
 * it into r's answer, as far as it goes. */
static void drain(struct req *r)
{
    dirty_del(r);
    struct peer *p = &r->peer;
    if (!r->attached)
        return;
    if (r->admin) {
        drain_admin(r);
        if (r->state != REQ_DONE && (p->flags & PEER_CLOSING))
            finish_text(r, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "the server dropped the request",
                        NULL, 0);
        return;
    }
    size_t n = outq_pending(&p->out);
    if (n > 0) {
        while (outq_pending(&p->out) > 0 && r->state != REQ_DONE) {
            if (take_output(r, &r->rx) != 0)
                return;
            /* parse the whole packets received so far */
            while (r->state != REQ_DONE && buf_len(&r->rx) > 0) {
                struct pb_packet pkt;
                size_t used = 0;
                enum pb_status st = pb_parse(buf_head(&r->rx), buf_len(&r->rx),
                                             PROTO_MAGIC_RES, UINT32_MAX, &pkt, &used);
                if (st == PB_NEED_MORE)
                    break;
                if (st != PB_OK) { /* cannot happen: the engine encodes what it queues */
                    finish_text(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "bad reply", NULL, 0);
                    return;
                }
                reply(r, &pkt);
                if (r->state != REQ_DONE)
                    buf_consume(&r->rx, used);
            }
        }
    }
    if (r->state != REQ_DONE && (p->flags & PEER_CLOSING))
        finish_text(r, MHD_HTTP_SERVICE_UNAVAILABLE, NULL,
                    "the server dropped the request (out of memory or --max-buffer-memory)",
                    NULL, 0);
}

/* ------------------------------------------------------------ submission */

/* header_value returns the value of request header name, or NULL. */
static const char *header_value(struct MHD_Connection *mc, const char *name)
{
    return MHD_lookup_connection_value(mc, MHD_HEADER_KIND, name);
}

/* new_req sets up a request on mc whose body may have max_body bytes: its internal client is
 * attached to the engine (flagged PEER_HTTP, listener "http"). NULL when out of memory. */
static struct req *new_req(struct http *h, struct MHD_Connection *mc, size_t max_body)
{
    struct req *r = calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    r->h = h;
    r->mc = mc;
    r->max_body = max_body;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
    r->fd = ci != NULL ? ci->connect_fd : -1;
    char ip[48];
    client_ip(mc, ip, sizeof ip);
    peer_init(&r->peer, h->eng, r->fd, ip, 0);
    r->peer.flags |= PEER_HTTP | PEER_EXCEPTIONS; /* an exception's text is the answer */
    r->peer.listener = "http";
    list_node_init(&r->dnode);
    list_push_back(&h->all, &r->anode);
    h->nreqs++;
    /* the client is attached from now on, so the body it sends counts in the buffer budget
     * (and sheds it, worst first, like a connection sending a large packet) */
    peer_attach(&r->peer);
    r->attached = 1;
    return r;
}

/* start_admin sets up a POST /admin request: its body is one admin command line. NULL after
 * queueing an answer (*rc) when --http-admin is off. */
static struct req *start_admin(struct http *h, struct MHD_Connection *mc, enum MHD_Result *rc)
{
    if (!h->cfg->http_admin) {
        *rc = answer_text(mc, MHD_HTTP_NOT_FOUND, NULL,
                          "admin commands over HTTP are off (spurd --http-admin)\n");
        return NULL;
    }
    /* a web page can make a browser send a cross-site POST (a form: no custom header) to this
     * route: refuse another site's Origin, and require a header such a form cannot set */
    const char *origin = header_value(mc, "Origin");
    if (origin != NULL && !http_same_origin(origin, header_value(mc, MHD_HTTP_HEADER_HOST))) {
        *rc = answer_text(mc, MHD_HTTP_FORBIDDEN, NULL,
                          "a cross-site admin request (Origin is not this server) is refused\n");
        return NULL;
    }
    if (header_value(mc, "X-Spur-Admin") == NULL) {
        *rc = answer_text(mc, MHD_HTTP_FORBIDDEN, NULL,
                          "an admin command needs the header X-Spur-Admin: 1 "
                          "(a cross-site form cannot send it)\n");
        return NULL;
    }
    /* the line and its CR LF within --max-line-length, as on the admin port */
    size_t max = h->cfg->max_line > 2 ? h->cfg->max_line - 2 : 1;
    struct req *r = new_req(h, mc, max);
    if (r == NULL) {
        *rc = MHD_NO;
        return NULL;
    }
    r->admin = 1;
    return r;
}

/* start_submit checks a POST/PUT /FUNC request's headers and sets up its request. Returns the
 * request, or NULL after queueing a 4xx/5xx answer (*rc). */
static struct req *start_submit(struct http *h, struct MHD_Connection *mc, const char *fn,
                                enum MHD_Result *rc)
{
    size_t fnl = strlen(fn);
    if (fnl == 0) {
        *rc = answer_text(mc, MHD_HTTP_BAD_REQUEST, NULL,
                          "no function: submit a job with POST /FUNCTION\n");
        return NULL;
    }
    if (strchr(fn, '/') != NULL) {
        *rc = answer_text(mc, MHD_HTTP_NOT_FOUND, NULL,
                          "unknown path: submit a job with POST /FUNCTION\n");
        return NULL;
    }
    int bg = 0;
    const char *v = header_value(mc, "X-Gearman-Background");
    if (v != NULL && strcasecmp(v, "true") == 0)
        bg = 1;
    uint32_t cmd = bg ? CMD_SUBMIT_JOB_BG : CMD_SUBMIT_JOB;
    v = header_value(mc, "X-Gearman-Priority");
    if (v != NULL && strcasecmp(v, "high") == 0)
        cmd = bg ? CMD_SUBMIT_JOB_HIGH_BG : CMD_SUBMIT_JOB_HIGH;
    else if (v != NULL && strcasecmp(v, "low") == 0)
        cmd = bg ? CMD_SUBMIT_JOB_LOW_BG : CMD_SUBMIT_JOB_LOW;
    else if (v != NULL && strcasecmp(v, "normal") != 0) {
        *rc = answer_text(mc, MHD_HTTP_BAD_REQUEST, NULL,
                          "X-Gearman-Priority must be high, normal or low\n");
        return NULL;
    }
    const char *after = header_value(mc, "X-Spur-After");
    if (after != NULL && !bg) {
        *rc = answer_text(mc, MHD_HTTP_BAD_REQUEST, NULL,
                          "X-Spur-After needs X-Gearman-Background: true\n");
        return NULL;
    }
    const char *uq = header_value(mc, "X-Gearman-Unique");
    size_t uql = uq != NULL ? strlen(uq) : 0;
    /* the whole packet must fit --max-packet-size */
    size_t room = (size_t)h->cfg->max_packet > fnl + uql + 2 ? h->cfg->max_packet - fnl - uql - 2 : 0;
    size_t max_body = h->max_body < room ? h->max_body : room;
    const char *cl = header_value(mc, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl != NULL) {
        char *end;
        errno = 0;
        unsigned long long len = strtoull(cl, &end, 10);
        if (errno == 0 && end != cl && len > max_body) {
            *rc = answer_text(mc, MHD_HTTP_CONTENT_TOO_LARGE, NULL,
                              "the body is larger than --http-max-body (%zu bytes)\n",
                              h->max_body);
            return NULL;
        }
    }
    /* the function name and unique are checked by the engine, as for a binary submit; only
     * what would not fit a packet is refused here */
    if (fnl > h->cfg->max_function || uql > PROTO_UNIQUE_MAX) {
        *rc = answer_text(mc, MHD_HTTP_BAD_REQUEST, NULL, "%s\n",
                          fnl > h->cfg->max_function ? "function name too long"
                                                     : "X-Gearman-Unique too long");
        return NULL;
    }
    struct req *r = new_req(h, mc, max_body);
    if (r == NULL) {
        *rc = MHD_NO;
        return NULL;
    }
    r->background = (unsigned)bg;
    if (after != NULL && (r->after = strdup(after)) == NULL) {
        req_free(r);
        *rc = MHD_NO;
        return NULL;
    }
    /* the packet: header (size patched at submit), function, NUL, unique, NUL, then the body */
    struct peer *p = &r->peer;
    unsigned char hdr[PROTO_HEADER_SIZE];
    proto_header(hdr, PROTO_MAGIC_REQ, cmd, 0);
    if (buf_append(&p->in, hdr, sizeof hdr) != 0 || buf_append(&p->in, fn, fnl + 1) != 0 ||
        (uql > 0 && buf_append(&p->in, uq, uql) != 0) || buf_append(&p->in, "", 1) != 0) {
        req_free(r);
        *rc = MHD_NO;
        return NULL;
    }
    peer_account(p);
    return r;
}

/* take_body appends n body bytes to r's packet, or drops them once the request is refused or
 * the body passed its limit. */
static void take_body(struct req *r, const char *data, size_t n)
{
    struct peer *p = &r->peer;
    if (r->state != REQ_BODY || r->too_large || (p->flags & PEER_CLOSING))
        return;
    if (r->body + n > r->max_body) {
        r->too_large = 1; /* a chunked body past the limit: dropped as it arrives */
        buf_free(&p->in);
        peer_account(p);
        return;
    }
    if (buf_append(&p->in, data, n) != 0) {
        peer_close(p); /* out of memory: answered 503 */
        return;
    }
    r->body += n;
    peer_account(p); /* may shed r (or others) when all buffers passed the budget */
}

/* submit_admin hands r's admin line to the engine: one line, without NUL, CR or LF inside (a
 * final line ending is allowed). */
static void submit_admin(struct req *r)
{
    struct peer *p = &r->peer;
    size_t n = buf_len(&p->in);
    char *t = buf_head(&p->in);
    while (n > 0 && (t[n - 1] == '\n' || t[n - 1] == '\r'))
        n--;
    if (n == 0 || memchr(t, '\0', n) != NULL || memchr(t, '\n', n) != NULL ||
        memchr(t, '\r', n) != NULL) {
        finish_text(r, MHD_HTTP_BAD_REQUEST, NULL,
                    "the body must be one admin command line (no NUL, CR or LF inside)", NULL, 0);
        return;
    }
    p->in.end = p->in.start + n;
    if (buf_append(&p->in, "\r\n", 2) != 0) {
        finish_text(r, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "out of memory", NULL, 0);
        return;
    }
    peer_account(p);
    r->state = REQ_WAIT;
    session_process(p);
    drain(r);
}

/* submit_after creates r's job waiting for the jobs of X-Spur-After (jobx), from the packet
 * built in its input buffer: header, function, NUL, unique, NUL, body. With a store the answer
 * waits until the job is durable, as for a plain background POST. */
static void submit_after(struct req *r)
{
    struct peer *p = &r->peer;
    struct engine *e = p->eng;
    const char *pk = buf_head(&p->in), *end = pk + buf_len(&p->in);
    const char *fn = pk + PROTO_HEADER_SIZE, *uq = fn + strlen(fn) + 1;
    const char *body = uq + strlen(uq) + 1;
    uint32_t cmd = proto_get32(pk + 4);
    enum job_prio prio = cmd == CMD_SUBMIT_JOB_HIGH_BG  ? PRIO_HIGH
                         : cmd == CMD_SUBMIT_JOB_LOW_BG ? PRIO_LOW
                                                        : PRIO_NORMAL;
    r->state = REQ_WAIT;
    if (e->acl != NULL && acl_func_check(e->acl, p, ACL_SUBMIT, fn, strlen(fn)) != 0) {
        drain(r); /* the refusal, as an ERROR packet: 403 */
        return;
    }
    uint64_t ids[JOBX_MAX_AFTER];
    const char *why = NULL;
    struct job *j = NULL;
    int n = jobx_parse_after(e, r->after, strlen(r->after), ids, &why);
    if (e->replaying)
        why = "BUSY The+stored+jobs+are+being+loaded";
    int rc = why == NULL && n >= 0
                 ? jobx_submit(e, fn, strlen(fn), uq, strlen(uq), prio, body,
                               (size_t)(end - body), ids, (size_t)n, peer_ack_owner(p, 0), &j,
                               &why)
                 : -1;
    if (rc >= 0) {
        if (rc == 0) { /* else held: JOB_CREATED comes once the job is durable (drain) */
            job_handle(e, j, r->handle);
            finish(r, MHD_HTTP_OK, "JOB_CREATED");
        }
        engine_drain_ready(e);
        return;
    }
    int client = why != NULL && (strncmp(why, "UNKNOWN_JOB", 11) == 0 ||
                                 strncmp(why, "INVALID_ARGUMENT", 16) == 0 ||
                                 strncmp(why, "INVALID_FUNCTION_NAME", 21) == 0 ||
                                 strncmp(why, "ARGUMENT_TOO_LARGE", 18) == 0 ||
                                 strncmp(why, "DEPENDENCY_FAILED", 17) == 0 ||
                                 strncmp(why, "TOO_MANY", 8) == 0);
    finish_text(r, client ? MHD_HTTP_BAD_REQUEST : MHD_HTTP_SERVICE_UNAVAILABLE, "ERROR", "ERROR ",
                why, strlen(why));
}

/* submit hands r's packet, now whole in its input buffer, to the engine. */
static void submit(struct req *r)
{
    struct peer *p = &r->peer;
    if (r->admin) {
        submit_admin(r);
        return;
    }
    if (r->after != NULL) {
        submit_after(r);
        return;
    }
    size_t n = buf_len(&p->in);
    proto_put32(buf_head(&p->in) + 8, (uint32_t)(n - PROTO_HEADER_SIZE));
    r->state = REQ_WAIT;
    session_process(p);
    drain(r);
}

/* answer queues r's known answer; the body goes to MHD. */
static enum MHD_Result answer_req(struct req *r)
{
    size_t len = buf_len(&r->out);
    char *body = len > 0 ? r->out.data : NULL; /* out is never consumed: data is its start */
    if (body != NULL)
        memset(&r->out, 0, sizeof r->out);
    else
        buf_free(&r->out);
    /* a job's result is bytes; anything else is a message */
    const char *type = r->status == MHD_HTTP_OK && !r->admin ? "application/octet-stream"
                                                              : TEXT_PLAIN;
    return queue_answer(r->mc, r->status, body, len, type, r->handle, r->command, NULL);
}

/* suspend parks r's connection until its answer is known, watching its socket for the client
 * going away meanwhile. */
static void suspend(struct req *r)
{
    request_in(r->mc); /* waiting on its job is not slow sending */
    MHD_suspend_connection(r->mc);
    r->suspended = 1;
    if (r->fd >= 0 && !r->watched) {
        struct epoll_event ev;
        memset(&ev, 0, sizeof ev);
        ev.events = EPOLLRDHUP | EPOLLONESHOT;
        ev.data.u64 = (uint64_t)(uintptr_t)r;
        if (epoll_ctl(r->h->gone_fd, EPOLL_CTL_ADD, r->fd, &ev) == 0)
            r->watched = 1;
    }
}

static void resume(struct req *r)
{
    unwatch(r);
    if (!r->suspended)
        return;
    r->suspended = 0;
    MHD_resume_connection(r->mc);
    r->h->resumed++;
}

/* get_marker is the request context of a GET or HEAD until it is answered. */
static char get_marker;

/* nul_marker is the request context (from on_uri) of a request whose path has %00. */
static char nul_marker;

int http_path_has_nul(const char *uri)
{
    for (const char *t = uri; *t != '\0' && *t != '?'; t++)
        if (t[0] == '%' && t[1] == '0' && t[2] == '0')
            return 1;
    return 0;
}

int http_same_origin(const char *origin, const char *host)
{
    if (host == NULL)
        return 0;
    const char *a = strstr(origin, "://");
    if (a == NULL)
        return 0; /* "null" (a sandboxed page, a file) or garbage: not this server */
    return strcasecmp(a + 3, host) == 0;
}

/* on_uri is MHD's call as soon as a request line is in, with the URI as sent (not yet
 * decoded): a kept-alive connection's request whose first byte came with the previous one
 * starts its deadline here; a path with %00 is marked for a 400 (the decoded path would be cut
 * at the NUL). Returns the request's first context. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *mc)
{
    (void)cls;
    struct hconn *c = hconn_of(mc);
    if (c != NULL) {
        hconn_unwatch(c);
        hconn_arm(c);
    }
    return http_path_has_nul(uri) ? &nul_marker : NULL;
}

/* struct framing is what count_framing found in a request's headers. */
struct framing {
    const char *length; /* the first Content-Length value */
    const char *bad;    /* why the body's length cannot be trusted, or NULL */
    int encodings;      /* Transfer-Encoding headers */
};

/* is_token reports whether key is an HTTP field name (RFC 9110 token): no space before the
 * colon, no control byte. A proxy may read "Transfer-Encoding :" differently. */
static int is_token(const char *key)
{
    if (*key == '\0')
        return 0;
    for (const unsigned char *t = (const unsigned char *)key; *t != '\0'; t++)
        if (*t <= 0x20 || *t >= 0x7f || strchr("\"(),/:;<=>?@[\\]{}", *t) != NULL)
            return 0;
    return 1;
}

/* count_framing looks at one request header for head_refused (MHD_KeyValueIterator). */
static enum MHD_Result count_framing(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value)
{
    (void)kind;
    struct framing *f = cls;
    if (value == NULL)
        value = "";
    if (!is_token(key)) {
        f->bad = "a header name with a space or a control byte\n";
    } else if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0) {
        if (value[0] == '\0' || strspn(value, "0123456789") != strlen(value))
            f->bad = "a Content-Length that is not a number\n";
        else if (f->length != NULL && strcmp(f->length, value) != 0)
            f->bad = "Content-Length headers that differ\n";
        f->length = value;
    } else if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0) {
        f->encodings++;
        if (strcasecmp(value, "chunked") != 0)
            f->bad = "a Transfer-Encoding other than chunked\n";
    }
    return MHD_YES;
}

/* head_refused checks a request's head before anything acts on it: a path with %00 (nul), a
 * request line and headers over --http-max-header-size (libmicrohttpd's pool is larger), and
 * an ambiguous body length (RFC 9112 section 6.3: Content-Length headers that differ, one with
 * Transfer-Encoding, a Transfer-Encoding other than one "chunked", a Content-Length that is not
 * digits, a header name with a space before the colon; a proxy in front may
 * frame the body the other way, so the connection is closed). Returns 1 after queueing the
 * refusal (*rc), else 0. */
static int head_refused(struct http *h, struct MHD_Connection *mc, int nul, enum MHD_Result *rc)
{
    if (nul) {
        *rc = refuse_close(mc, MHD_HTTP_BAD_REQUEST, "a NUL byte (%00) in the path\n");
        return 1;
    }
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(mc, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    if (ci != NULL && ci->header_size > h->cfg->http_max_header) {
        *rc = refuse_close(mc, MHD_HTTP_REQUEST_HEADER_FIELDS_TOO_LARGE,
                           "the request line and headers are larger than "
                           "--http-max-header-size\n");
        return 1;
    }
    struct framing f = {NULL, NULL, 0};
    MHD_get_connection_values(mc, MHD_HEADER_KIND, count_framing, &f);
    if (f.bad == NULL && f.encodings > 1)
        f.bad = "more than one Transfer-Encoding\n";
    if (f.bad == NULL && f.length != NULL && f.encodings > 0)
        f.bad = "Content-Length with Transfer-Encoding\n";
    if (f.bad != NULL) {
        *rc = refuse_close(mc, MHD_HTTP_BAD_REQUEST, f.bad);
        return 1;
    }
    return 0;
}

/* on_request is MHD's access handler: called once the headers are in, for each piece of the
 * body, once the body is complete, and again after a resume. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *mc, const char *url,
                                  const char *method, const char *version,
                                  const char *upload, size_t *upload_size, void **con_cls)
{
    (void)version;
    struct http *h = cls;
    struct req *r = *con_cls;
    if (r == (struct req *)&get_marker) {
        /* a GET or HEAD, answered once the whole request is in, so the connection stays open
         * for the next one (a body sent with it is read and dropped) */
        if (*upload_size > 0) {
            *upload_size = 0;
            return MHD_YES;
        }
        const struct http_route *rt = find_route(url);
        if (rt != NULL)
            return answer_page(h, mc, rt);
        if (strcmp(url, "/admin") == 0)
            return answer_text(mc, MHD_HTTP_METHOD_NOT_ALLOWED, "POST",
                               "an admin command is sent with POST /admin\n");
        return answer_text(mc, MHD_HTTP_NOT_FOUND, NULL,
                           "unknown path: submit a job with POST /FUNCTION\n");
    }
    if (r == (struct req *)&nul_marker || r == NULL) {
        enum MHD_Result rc;
        if (head_refused(h, mc, r != NULL, &rc))
            return rc;
        r = NULL;
        *con_cls = NULL;
    }
    if (r == NULL && h->stopping)
        return answer_text(mc, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "the server is stopping\n");
    if (r == NULL) {
        const struct http_route *rt = find_route(url);
        int get = strcmp(method, MHD_HTTP_METHOD_GET) == 0 ||
                  strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
        int post = strcmp(method, MHD_HTTP_METHOD_POST) == 0 ||
                   strcmp(method, MHD_HTTP_METHOD_PUT) == 0;
        if (get) {
            *con_cls = &get_marker;
            return MHD_YES;
        }
        if (rt != NULL)
            return answer_text(mc, MHD_HTTP_METHOD_NOT_ALLOWED, "GET, HEAD",
                               "%s answers GET and HEAD\n", rt->path);
        if (!post)
            return answer_text(mc, MHD_HTTP_METHOD_NOT_ALLOWED, "POST, PUT",
                               "a job is submitted with POST or PUT\n");
        enum MHD_Result rc = MHD_YES;
        if (strcmp(url, "/admin") == 0)
            r = start_admin(h, mc, &rc);
        else
            r = start_submit(h, mc, url[0] == '/' ? url + 1 : url, &rc);
        if (r == NULL)
            return rc;
        *con_cls = r;
        return MHD_YES;
    }
    if (*upload_size > 0) {
        take_body(r, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    switch (r->state) {
    case REQ_BODY:
        drain(r); /* closed while its body arrived (the buffer budget): answered 503 */
        if (r->state == REQ_DONE)
            return answer_req(r);
        if (r->too_large) {
            finish_text(r, MHD_HTTP_CONTENT_TOO_LARGE, NULL,
                        "the body is larger than --http-max-body", NULL, 0);
            return answer_req(r);
        }
        submit(r);
        if (r->state == REQ_DONE)
            return answer_req(r);
        suspend(r);
        return MHD_YES;
    case REQ_WAIT: /* resumed before its answer was known (cannot happen): wait again */
        suspend(r);
        return MHD_YES;
    case REQ_DONE:
        return answer_req(r);
    }
    return MHD_NO;
}

/* on_completed is MHD's notice that a request is over: answered, or its connection closed or
 * timed out first. */
static void on_completed(void *cls, struct MHD_Connection *mc, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    struct hconn *c = hconn_of(mc);
    if (c != NULL) { /* a kept-alive connection's next request starts with its first byte */
        hconn_disarm(c);
        hconn_watch(c);
    }
    struct req *r = *con_cls;
    if (r == NULL || r == (struct req *)&get_marker || r == (struct req *)&nul_marker)
        return;
    if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK && r->state != REQ_DONE)
        log_limited(&http_limit, LOG_INFO, __FILE__, __LINE__,
                    "HTTP client %s went away before its answer (%d)", r->peer.ip, (int)toe);
    *con_cls = NULL;
    req_free(r);
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char text[300];
    vsnprintf(text, sizeof text, fmt, ap);
    size_t n = strlen(text);
    while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r'))
        text[--n] = '\0';
    log_limited(&http_limit, LOG_DEBUG, __FILE__, __LINE__, "libmicrohttpd: %s", text);
}

/* ------------------------------------------------------------ the engine's ops for HTTP peers */

void http_peer_output(struct peer *p)
{
    dirty_add((struct req *)p);
}

void http_peer_close(struct peer *p)
{
    dirty_add((struct req *)p);
}

void http_peer_resume(struct peer *p)
{
    struct req *r = (struct req *)p;
    if (!r->attached || (p->flags & PEER_CLOSING))
        return;
    session_process(p);
    dirty_add(r);
}

/* ------------------------------------------------------------ the shell's calls */

struct http *http_new(struct engine *e, const struct config *cfg, char *err, size_t errlen)
{
    struct http *h = calloc(1, sizeof *h);
    if (h == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    h->eng = e;
    h->cfg = cfg;
    h->max_body = config_http_max_body(cfg);
    list_node_init(&h->dirty);
    list_node_init(&h->all);
    list_node_init(&h->slow);
    h->gone_fd = epoll_create1(EPOLL_CLOEXEC);
    if (h->gone_fd < 0) {
        snprintf(err, errlen, "epoll_create1: %s", strerror(errno));
        free(h);
        return NULL;
    }
    /* the pool holds the request line and headers plus MHD's read and write buffers */
    size_t pool = 2 * cfg->http_max_header + 8192;
    h->d = MHD_start_daemon(MHD_USE_NO_LISTEN_SOCKET | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
                                MHD_USE_ERROR_LOG,
                            0, NULL, NULL, on_request, h,
                            MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, h, /* first: all messages */
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)cfg->http_max_connections,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, pool,
                            MHD_OPTION_CONNECTION_TIMEOUT, cfg->http_idle_timeout,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
                            MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
                            MHD_OPTION_URI_LOG_CALLBACK, on_uri, h,
                            MHD_OPTION_END);
    if (h->d == NULL) {
        snprintf(err, errlen, "cannot start the HTTP engine (libmicrohttpd)");
        close(h->gone_fd);
        free(h);
        return NULL;
    }
    return h;
}

void http_destroy(struct http *h)
{
    if (h == NULL)
        return;
    /* every request leaves the engine as a vanished client would; suspended ones are resumed,
     * since MHD may not be stopped with suspended connections */
    h->stopping = 1;
    list_for_each(it, &h->all) {
        struct req *r = container_of(it, struct req, anode);
        drain(r); /* a result that arrived in the last loop iteration is still answered */
        if (r->state != REQ_DONE)
            finish_text(r, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "the server is stopping", NULL, 0);
        resume(r);
    }
    /* a few non-blocking rounds write the answers to clients that read them */
    for (int i = 0; i < 4; i++)
        MHD_run(h->d);
    MHD_stop_daemon(h->d); /* frees the requests (on_completed) */
    while (!list_empty(&h->all))
        req_free(container_of(list_first(&h->all), struct req, anode));
    close(h->gone_fd);
    free(h);
}

void http_fds(const struct http *h, int *mhd_fd, int *gone_fd)
{
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_EPOLL_FD);
    *mhd_fd = di != NULL ? di->epoll_fd : -1;
    *gone_fd = h->gone_fd;
}

int http_add(struct http *h, int fd, const struct sockaddr *sa, socklen_t salen)
{
    if (MHD_add_connection(h->d, fd, sa, salen) != MHD_YES) { /* MHD closed fd */
        log_limited(&http_limit, LOG_WARNING, __FILE__, __LINE__,
                    "HTTP connection refused: %s (--http-max-connections %zu)", strerror(errno),
                    h->cfg->http_max_connections);
        return -1;
    }
    return 0;
}

/* check_gone looks at the sockets of suspended requests that reported a hang-up or input. */
static void check_gone(struct http *h)
{
    struct epoll_event ev[GONE_EVENTS];
    int n = epoll_wait(h->gone_fd, ev, GONE_EVENTS, 0);
    for (int i = 0; i < n; i++) {
        if (ev[i].data.u64 & HCONN_TAG) { /* a kept-alive connection's next request began */
            struct hconn *c = (struct hconn *)(uintptr_t)(ev[i].data.u64 & ~(uint64_t)HCONN_TAG);
            hconn_unwatch(c);
            hconn_arm(c);
            continue;
        }
        struct req *r = (struct req *)(uintptr_t)ev[i].data.u64;
        r->watched = 0; /* one-shot: disarmed */
        epoll_ctl(h->gone_fd, EPOLL_CTL_DEL, r->fd, NULL);
        if (r->state == REQ_DONE)
            continue;
        log_limited(&http_limit, LOG_INFO, __FILE__, __LINE__,
                    "HTTP client %s went away while its job ran", r->peer.ip);
        finish_text(r, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "client gone", NULL, 0);
        resume(r); /* MHD answers, finds the socket closed, and frees the request */
    }
}

void http_run(struct http *h)
{
    check_gone(h);
    sweep_slow(h);
    MHD_run(h->d);
}

long long http_timeout_ms(struct http *h)
{
    MHD_UNSIGNED_LONG_LONG t;
    long long ms = -1;
    if (MHD_get_timeout(h->d, &t) == MHD_YES)
        ms = t > (MHD_UNSIGNED_LONG_LONG)LLONG_MAX ? LLONG_MAX : (long long)t;
    if (!list_empty(&h->slow)) { /* the first request deadline */
        double left = container_of(list_first(&h->slow), struct hconn, node)->deadline -
                      mono_now();
        long long d = left <= 0 ? 0 : (long long)(left * 1000.0) + 1;
        if (ms < 0 || d < ms)
            ms = d;
    }
    return ms;
}

size_t http_flush(struct http *h)
{
    h->resumed = 0;
    while (!list_empty(&h->dirty)) {
        struct req *r = container_of(list_first(&h->dirty), struct req, dnode);
        drain(r);
        if (r->state == REQ_DONE)
            resume(r);
    }
    return h->resumed;
}

size_t http_requests(const struct http *h)
{
    return h->nreqs;
}
