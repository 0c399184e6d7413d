/* SPDX-License-Identifier: BSD-3-Clause */
/* http: the HTTP front-end's API (http.h): the GET route table, and job submission and admin
 * lines through an internal client per request, whose replies its own encoder turns into the
 * answer. The libmicrohttpd glue is http_mhd.c. */
#include "http.h"

#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>

#include "buf.h"
#include "config.h"
#include "dash.h"
#include "engine.h"
#include "acl.h"
#include "broadcast.h"
#include "job.h"
#include "jobx.h"
#include "jobx_admin.h"
#include "list.h"
#include "log.h"
#include "metrics.h"
#include "peer.h"
#include "proto.h"
#include "session.h"
#include "store.h"


/* enum req_state is where a submission request is. */
enum req_state {
    REQ_BODY = 0, /* receiving the body */
    REQ_WAIT,     /* submitted: waiting for JOB_CREATED or the job's result */
    REQ_DONE,     /* the answer is known (status, headers, body): queue it */
};

/* struct req is one POST/PUT /FUNC request: the internal client the engine sees, and its
 * answer. */
struct req {
    struct peer peer;          /* the engine's view (its ops: req_ops) */
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
    unsigned cancel : 1;       /* DELETE /jobs/HANDLE: an admin 'cancel job HANDLE' (admin set) */
    char *after;               /* X-Spur-After: the handles the job waits for, or NULL */
    int fd;                    /* the socket, for the disconnect watch */
    size_t body;               /* body bytes received (into peer.in, behind the packet header,
                                  function and unique: the SUBMIT packet being built there counts
                                  against --max-buffer-memory like any partial packet) */
    size_t max_body;           /* the most body bytes this request may have */
    unsigned status;           /* the answer's HTTP status */
    const char *command;       /* X-Gearman-Command of the answer, or NULL */
    char handle[JOB_HANDLE_BUF]; /* X-Gearman-Job-Handle, "" until JOB_CREATED */
    struct buf out;            /* the answer's body (never consumed: data is the allocation) */
};


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
        return http_answer_text(mc, MHD_HTTP_NOT_IMPLEMENTED, NULL,
                           "%s is not available in this build\n", rt->path);
    struct http_page pg = {200, NULL, NULL, 0};
    int rc = rt->page(h->eng, &pg, h->cfg->max_output);
    if (rc != 0) {
        free(pg.body);
        return http_answer_text(mc, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL,
                           rc == -2 ? "reply too large (--max-output-buffer)\n"
                                    : "out of memory\n");
    }
    return http_answer(mc, pg.status, pg.body, pg.len, pg.type, NULL, NULL, NULL);
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
    buf_free(&r->out);
    free(r->after);
    free(r);
}

/* record sets r's answer; the request leaves the engine later (drain, req_free): this runs
 * inside the engine's calls (the encoder), which may not have a peer detached under them. */
static void record(struct req *r, unsigned status, const char *command)
{
    if (r->state == REQ_DONE)
        return;
    r->state = REQ_DONE;
    r->status = status;
    r->command = command;
}

/* record_text is record with a text body replacing what was collected. */
static void record_text(struct req *r, unsigned status, const char *command, const char *text,
                        const void *extra, size_t extra_len)
{
    if (r->state == REQ_DONE)
        return;
    buf_free(&r->out);
    if (buf_append(&r->out, text, strlen(text)) != 0 ||
        (extra_len > 0 && buf_append(&r->out, extra, extra_len) != 0) ||
        buf_append(&r->out, "\n", 1) != 0)
        buf_free(&r->out); /* out of memory: the status alone says it */
    record(r, status, command);
}

/* finish sets r's answer and releases what it held in the engine. */
static void finish(struct req *r, unsigned status, const char *command)
{
    record(r, status, command);
    detach(r);
}

/* finish_text is finish with a text body replacing what was collected. */
static void finish_text(struct req *r, unsigned status, const char *command, const char *text,
                        const void *extra, size_t extra_len)
{
    record_text(r, status, command, text, extra, extra_len);
    detach(r);
}

/* error_status maps an ERROR reply's code to an HTTP status. */
static unsigned error_status(const struct proto_arg *code)
{
    static const struct {
        const char *code;
        unsigned status;
    } map[] = {
        {PROTO_ERR_ARGUMENT_TOO_LARGE, MHD_HTTP_BAD_REQUEST},
        {PROTO_ERR_INVALID_ARGUMENT, MHD_HTTP_BAD_REQUEST},
        {PROTO_ERR_PERMISSION_DENIED, MHD_HTTP_FORBIDDEN}, /* --policy */
        {BROADCAST_ERR_CODE, MHD_HTTP_BAD_REQUEST}, /* a foreground submit to a broadcast one */
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (code->len == strlen(map[i].code) && memcmp(code->ptr, map[i].code, code->len) == 0)
            return map[i].status;
    return MHD_HTTP_SERVICE_UNAVAILABLE; /* queue full, store error, out of memory */
}

static struct req *req_of(struct peer *p)
{
    return container_of(p, struct req, peer);
}

/* req_packet is an HTTP request's reply encoder (peer_ops.packet): the engine's reply, as the
 * command, its arguments and its payload (the blob range, else the last of two or more
 * arguments), becomes r's answer: JOB_CREATED (background: the answer), WORK_DATA and
 * WORK_COMPLETE (the body), WORK_FAIL, WORK_EXCEPTION, ERROR. Others (WORK_STATUS,
 * WORK_WARNING) are not part of it. Only records: drain, in http_flush, detaches. Returns 0. */
static int req_packet(struct peer *p, uint32_t cmd, const struct proto_arg *args, int nargs,
                      struct blob *b, size_t off, size_t len)
{
    struct req *r = req_of(p);
    if (r->state == REQ_DONE || r->admin)
        return 0;
    struct proto_arg pay = {"", 0};
    if (b != NULL)
        pay = (struct proto_arg){b->data + off, len};
    else if (nargs >= 2)
        pay = args[nargs - 1];
    switch (cmd) {
    case CMD_JOB_CREATED:
        snprintf(r->handle, sizeof r->handle, "%.*s", (int)args[0].len,
                 (const char *)args[0].ptr);
        if (r->background)
            record(r, MHD_HTTP_OK, "JOB_CREATED");
        return 0;
    case CMD_WORK_DATA:
    case CMD_WORK_COMPLETE:
        if (pay.len > 0 && buf_append(&r->out, pay.ptr, pay.len) != 0)
            record_text(r, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "out of memory", NULL, 0);
        else if (buf_len(&r->out) > r->h->cfg->max_output)
            record_text(r, MHD_HTTP_BAD_GATEWAY, NULL,
                        "the result is larger than --max-output-buffer", NULL, 0);
        else if (cmd == CMD_WORK_COMPLETE)
            record(r, MHD_HTTP_OK, "WORK_COMPLETE");
        return 0;
    case CMD_WORK_FAIL:
        record_text(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "WORK_FAIL", "the job failed (WORK_FAIL)",
                    NULL, 0);
        return 0;
    case CMD_WORK_EXCEPTION:
        record_text(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "WORK_EXCEPTION",
                    "the job failed with an exception (WORK_EXCEPTION): ", pay.ptr, pay.len);
        return 0;
    case CMD_ERROR: {
        char text[400];
        snprintf(text, sizeof text, "ERROR %.*s: %.*s", (int)args[0].len,
                 (const char *)args[0].ptr, (int)args[1].len, (const char *)args[1].ptr);
        record_text(r, error_status(&args[0]), "ERROR", text, NULL, 0);
        return 0;
    }
    default: /* WORK_STATUS, WORK_WARNING: not part of the answer */
        return 0;
    }
}

/* admin_status is the HTTP status of an admin reply: 403 for a refusal by --admin-allow, 404
 * for a DELETE /jobs/HANDLE of no job (cancel), 400 for any other ERR line, else 200. */
static unsigned admin_status(const struct buf *out, int cancel)
{
    static const char denied[] = "ERR PERMISSION_DENIED";
    static const char unknown[] = "ERR UNKNOWN_JOB";
    size_t n = buf_len(out);
    const char *t = buf_head(out);
    if (n >= sizeof denied - 1 && memcmp(t, denied, sizeof denied - 1) == 0)
        return MHD_HTTP_FORBIDDEN;
    if (cancel && n >= sizeof unknown - 1 && memcmp(t, unknown, sizeof unknown - 1) == 0)
        return MHD_HTTP_NOT_FOUND;
    if (n >= 4 && memcmp(t, "ERR ", 4) == 0)
        return MHD_HTTP_BAD_REQUEST;
    return MHD_HTTP_OK;
}

/* drain_admin moves the admin reply text the engine queued for r (peer_write, into its output
 * queue: admin listings pace themselves by its backlog) into its answer; the answer is complete
 * once the line is consumed and no listing is still being written for it. */
static void drain_admin(struct req *r)
{
    struct peer *p = &r->peer;
    while (outq_pending(&p->out) > 0 && r->state != REQ_DONE) {
        struct iovec iov[64];
        int k = outq_iov(&p->out, iov, 64);
        size_t got = 0;
        for (int i = 0; i < k; i++) {
            if (buf_append(&r->out, iov[i].iov_base, iov[i].iov_len) != 0) {
                finish_text(r, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "out of memory", NULL, 0);
                return;
            }
            got += iov[i].iov_len;
        }
        outq_consume(&p->out, got);
        peer_account(p);
        if (buf_len(&r->out) > r->h->cfg->max_output)
            finish_text(r, MHD_HTTP_BAD_GATEWAY, NULL,
                        "the reply is larger than --max-output-buffer", NULL, 0);
    }
    /* (a 'submit' may wait for the store: peer_waiting) */
    if (r->state == REQ_WAIT && buf_len(&p->in) == 0 && !peer_busy(p) && !peer_waiting(p))
        finish(r, admin_status(&r->out, r->cancel), NULL);
}

/* drain settles r after the engine's calls: an admin reply is collected; a request whose answer
 * the encoder recorded leaves the engine; one the engine closed is answered 503. */
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
    if (r->state == REQ_DONE)
        detach(r);
    else if (p->flags & PEER_CLOSING)
        finish_text(r, MHD_HTTP_SERVICE_UNAVAILABLE, NULL,
                    "the server dropped the request (out of memory or --max-buffer-memory)",
                    NULL, 0);
}

/* ------------------------------------------------------------ the engine's ops for HTTP peers */

/* req_output and req_closed note the request for http_flush. */
static void req_output(struct peer *p)
{
    dirty_add(req_of(p));
}

static void req_closed(struct peer *p)
{
    dirty_add(req_of(p));
}

/* req_resumed handles the input the peer held back (a submit that waited for the store's
 * replay). */
static void req_resumed(struct peer *p)
{
    struct req *r = req_of(p);
    if (!r->attached || (p->flags & PEER_CLOSING))
        return;
    session_process(p);
    dirty_add(r);
}

/* req_ops are the peer_ops of an HTTP request's internal client: replies are encoded straight
 * into its answer (req_packet), admin text is queued and collected by drain. */
static const struct peer_ops req_ops = {req_output, req_closed, req_resumed, req_packet};

/* ------------------------------------------------------------ submission */

/* header_value returns the value of request header name, or NULL. */
static const char *header_value(struct MHD_Connection *mc, const char *name)
{
    return MHD_lookup_connection_value(mc, MHD_HEADER_KIND, name);
}

/* new_req sets up a request on mc whose body may have max_body bytes: its internal client is
 * attached to the engine (with req_ops, listener "http"). NULL when out of memory. */
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
    http_client_ip(mc, ip, sizeof ip);
    peer_init(&r->peer, h->eng, r->fd, ip, 0);
    r->peer.ops = &req_ops;
    r->peer.flags |= PEER_EXCEPTIONS; /* an exception's text is the answer */
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
        *rc = http_answer_text(mc, MHD_HTTP_NOT_FOUND, NULL,
                          "admin commands over HTTP are off (spurd --http-admin)\n");
        return NULL;
    }
    /* a web page can make a browser send a cross-site POST (a form: no custom header) to this
     * route: refuse another site's Origin, and require a header such a form cannot set */
    const char *origin = header_value(mc, "Origin");
    if (origin != NULL && !http_same_origin(origin, header_value(mc, MHD_HTTP_HEADER_HOST))) {
        *rc = http_answer_text(mc, MHD_HTTP_FORBIDDEN, NULL,
                          "a cross-site admin request (Origin is not this server) is refused\n");
        return NULL;
    }
    if (header_value(mc, "X-Spur-Admin") == NULL) {
        *rc = http_answer_text(mc, MHD_HTTP_FORBIDDEN, NULL,
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

/* life_headers reads X-Spur-Timeout (ms) and X-Spur-TTL (seconds) into life. Returns 0, or
 * -1 after queueing a 400 answer (*rc). */
static int life_headers(struct MHD_Connection *mc, struct submit_life *life, enum MHD_Result *rc)
{
    static const char *const names[2] = {"X-Spur-Timeout", "X-Spur-TTL"};
    static const unsigned long long max[2] = {UINT32_MAX, 31536000u};
    for (int i = 0; i < 2; i++) {
        const char *v = header_value(mc, names[i]);
        if (v == NULL)
            continue;
        char *end;
        errno = 0;
        unsigned long long x = strtoull(v, &end, 10);
        if (errno != 0 || end == v || *end != '\0' || *v == '-' || x > max[i]) {
            *rc = http_answer_text(mc, MHD_HTTP_BAD_REQUEST, NULL, "%s must be %s\n", names[i],
                                   i == 0 ? "milliseconds (0..4294967295)"
                                          : "seconds (0..31536000)");
            return -1;
        }
        if (i == 0)
            life->timeout_ms = (uint32_t)x;
        else
            life->ttl_s = (uint32_t)x;
    }
    return 0;
}

/* start_cancel sets up a DELETE /jobs/HANDLE request: the admin line 'cancel job HANDLE' under
 * the rules of POST /admin (start_admin), with no body. NULL after queueing an answer (*rc): once
 * those rules pass, a handle that is empty, too long or holds a space or control byte is
 * answered 400. */
static struct req *start_cancel(struct http *h, struct MHD_Connection *mc, const char *handle,
                                enum MHD_Result *rc)
{
    struct req *r = start_admin(h, mc, rc);
    if (r == NULL)
        return NULL;
    size_t n = strlen(handle);
    int ok = n > 0 && n <= PROTO_HANDLE_MAX;
    for (size_t i = 0; ok && i < n; i++)
        ok = (unsigned char)handle[i] > ' ' && (unsigned char)handle[i] < 0x7f;
    if (!ok) {
        req_free(r);
        *rc = http_answer_text(mc, MHD_HTTP_BAD_REQUEST, NULL,
                               "DELETE /jobs/HANDLE: no job handle in the path\n");
        return NULL;
    }
    r->cancel = 1;
    r->max_body = 0; /* a body is refused (413) */
    struct peer *p = &r->peer;
    if (buf_append(&p->in, "cancel job ", 11) != 0 || buf_append(&p->in, handle, n) != 0) {
        req_free(r);
        *rc = MHD_NO;
        return NULL;
    }
    peer_account(p);
    return r;
}

/* start_submit checks a POST/PUT /FUNC request's headers and sets up its request. Returns the
 * request, or NULL after queueing a 4xx/5xx answer (*rc). */
static struct req *start_submit(struct http *h, struct MHD_Connection *mc, const char *fn,
                                enum MHD_Result *rc)
{
    size_t fnl = strlen(fn);
    if (fnl == 0) {
        *rc = http_answer_text(mc, MHD_HTTP_BAD_REQUEST, NULL,
                          "no function: submit a job with POST /FUNCTION\n");
        return NULL;
    }
    if (strchr(fn, '/') != NULL) {
        *rc = http_answer_text(mc, MHD_HTTP_NOT_FOUND, NULL,
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
        *rc = http_answer_text(mc, MHD_HTTP_BAD_REQUEST, NULL,
                          "X-Gearman-Priority must be high, normal or low\n");
        return NULL;
    }
    const char *after = header_value(mc, "X-Spur-After");
    if (after != NULL && !bg) {
        *rc = http_answer_text(mc, MHD_HTTP_BAD_REQUEST, NULL,
                          "X-Spur-After needs X-Gearman-Background: true\n");
        return NULL;
    }
    struct submit_life life = {0, 0};
    if (life_headers(mc, &life, rc) != 0)
        return NULL;
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
            *rc = http_answer_text(mc, MHD_HTTP_CONTENT_TOO_LARGE, NULL,
                              "the body is larger than --http-max-body (%zu bytes)\n",
                              h->max_body);
            return NULL;
        }
    }
    /* the function name and unique are checked by the engine, as for a binary submit; only
     * what would not fit a packet is refused here */
    if (fnl > h->cfg->max_function || uql > PROTO_UNIQUE_MAX) {
        *rc = http_answer_text(mc, MHD_HTTP_BAD_REQUEST, NULL, "%s\n",
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
    r->peer.life = life; /* the timeout and TTL of its job (lifetime.h) */
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
    uint64_t id = 0;
    int n = jobx_parse_after(e, r->after, strlen(r->after), ids, &why);
    if (e->replaying)
        why = "BUSY The+stored+jobs+are+being+loaded";
    int rc = why == NULL && n >= 0
                 ? jobx_submit(e, fn, strlen(fn), uq, strlen(uq), prio, body,
                               (size_t)(end - body), ids, (size_t)n, &p->life,
                               peer_ack_owner(p, 0), &id, &why)
                 : -1;
    if (rc >= 0) {
        if (rc == 0) { /* else held: JOB_CREATED comes once the job is durable (drain) */
            job_handle_id(e, id, r->handle);
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
                                                              : HTTP_TEXT_PLAIN;
    return http_answer(r->mc, r->status, body, len, type, r->handle, r->command, NULL);
}

/* suspend parks r's connection until its answer is known, watching its socket for the client
 * going away meanwhile. */
static void suspend(struct req *r)
{
    http_request_in(r->mc); /* waiting on its job is not slow sending */
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

int http_same_origin(const char *origin, const char *host)
{
    if (host == NULL)
        return 0;
    const char *a = strstr(origin, "://");
    if (a == NULL)
        return 0; /* "null" (a sandboxed page, a file) or garbage: not this server */
    return strcasecmp(a + 3, host) == 0;
}

/* on_request is MHD's access handler: called once the headers are in, for each piece of the
 * body, once the body is complete, and again after a resume. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *mc, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
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
        enum MHD_Result drc;
        if (dash_answer(h->dash, h->cfg, mc, url, &drc)) /* GET /, /dash/... */
            return drc;
        const struct http_route *rt = find_route(url);
        if (rt != NULL)
            return answer_page(h, mc, rt);
        if (strcmp(url, "/admin") == 0)
            return http_answer_text(mc, MHD_HTTP_METHOD_NOT_ALLOWED, "POST",
                               "an admin command is sent with POST /admin\n");
        return http_answer_text(mc, MHD_HTTP_NOT_FOUND, NULL,
                           "unknown path: submit a job with POST /FUNCTION\n");
    }
    if (r == (struct req *)&http_nul_marker || r == NULL) {
        enum MHD_Result rc;
        if (http_head_refused(h, mc, r != NULL, &rc))
            return rc;
        r = NULL;
        *con_cls = NULL;
    }
    if (r == NULL && h->stopping)
        return http_answer_text(mc, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "the server is stopping\n");
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
            return http_answer_text(mc, MHD_HTTP_METHOD_NOT_ALLOWED, "GET, HEAD",
                               "%s answers GET and HEAD\n", rt->path);
        enum MHD_Result rc = MHD_YES;
        if (strcmp(method, MHD_HTTP_METHOD_DELETE) == 0 && strncmp(url, "/jobs/", 6) == 0) {
            if ((r = start_cancel(h, mc, url + 6, &rc)) == NULL)
                return rc;
            *con_cls = r;
            return MHD_YES;
        }
        if (!post)
            return http_answer_text(mc, MHD_HTTP_METHOD_NOT_ALLOWED, "POST, PUT",
                               "a job is submitted with POST or PUT\n");
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
    http_request_over(mc);
    struct req *r = *con_cls;
    if (r == NULL || r == (struct req *)&get_marker || r == (struct req *)&http_nul_marker)
        return;
    if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK && r->state != REQ_DONE)
        log_limited(&http_log_limit, LOG_INFO, __FILE__, __LINE__,
                    "HTTP client %s went away before its answer (%d)", r->peer.ip, (int)toe);
    *con_cls = NULL;
    req_free(r);
}

/* ------------------------------------------------------------ the shell's calls */

size_t http_flush(struct http *h)
{
    h->resumed = 0;
    while (!list_empty(&h->dirty)) {
        struct req *r = container_of(list_first(&h->dirty), struct req, dnode);
        drain(r);
        if (r->state == REQ_DONE)
            resume(r);
    }
    if (h->resumed > 0)
        http_kick(h); /* libmicrohttpd writes the answers in its next run */
    return h->resumed;
}

/* req_gone handles a disconnect of a waiting request's client (http_gone_fn). */
static void req_gone(struct http *h, void *req)
{
    struct req *r = req;
    r->watched = 0; /* one-shot: disarmed */
    epoll_ctl(h->gone_fd, EPOLL_CTL_DEL, r->fd, NULL);
    if (r->state == REQ_DONE)
        return;
    log_limited(&http_log_limit, LOG_INFO, __FILE__, __LINE__,
                "HTTP client %s went away while its job ran", r->peer.ip);
    finish_text(r, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "client gone", NULL, 0);
    resume(r); /* MHD answers, finds the socket closed, and frees the request */
}

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
    h->req_gone = req_gone;
    list_node_init(&h->dirty);
    list_node_init(&h->all);
    h->dash = dash_new(e);
    if (h->dash == NULL) {
        snprintf(err, errlen, "out of memory");
        free(h);
        return NULL;
    }
    if (http_mhd_start(h, on_request, on_completed, err, errlen) != 0) {
        dash_free(h->dash);
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
    http_mhd_stop(h); /* frees the requests (on_completed) */
    while (!list_empty(&h->all))
        req_free(container_of(list_first(&h->all), struct req, anode));
    dash_free(h->dash);
    free(h);
}

size_t http_requests(const struct http *h)
{
    return h->nreqs;
}
