/* SPDX-License-Identifier: BSD-3-Clause */
/* cmd: the handlers for binary request packets: client submits and status, worker abilities,
 * grabs and results, and the common ECHO / OPTION / SET_CLIENT_ID. */
#include "cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "acl.h"
#include "cancel.h"
#include "cron.h"
#include "engine.h"
#include "func.h"
#include "job.h"
#include "list.h"
#include "log.h"
#include "store.h"
#include "submit.h"
#include "worker.h"


/* ------------------------------------------------------------ small helpers */

static void not_expected(struct peer *p)
{
    peer_send_error(p, PROTO_ERR_INVALID_COMMAND, "Command not expected");
}

/* func_refused answers a CAN_DO whose function could not be created. */
static void func_refused(struct peer *p)
{
    if (func_full(p->eng))
        peer_send_error(p, PROTO_ERR_QUEUE_ERROR, "Too many functions (--max-functions)");
    else
        peer_send_error(p, PROTO_ERR_MEMORY, "Out of memory");
}

/* worker_of returns p's worker state, creating it on the first worker packet; NULL when out of
 * memory. */
static struct worker *worker_of(struct peer *p)
{
    if (p->worker == NULL) {
        p->worker = worker_new(p->eng, p);
        peer_mark(p, PEER_KIND_WORKER);
    }
    return p->worker;
}

/* parse_u32 parses leading decimal digits like atoi, saturating; anything else gives 0. */
static uint32_t parse_u32(const char *s, size_t len)
{
    uint64_t v = 0;
    for (size_t i = 0; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
        v = v * 10 + (uint64_t)(s[i] - '0');
        if (v > UINT32_MAX)
            return UINT32_MAX;
    }
    return (uint32_t)v;
}

/* parse_i64 parses a whole optionally signed decimal. Returns 0 or -1. */
static int parse_i64(const char *s, size_t len, int64_t *out)
{
    size_t i = 0;
    int neg = 0;
    if (len > 0 && (s[0] == '-' || s[0] == '+'))
        neg = s[i++] == '-';
    if (i == len || len - i > 18)
        return -1;
    int64_t v = 0;
    for (; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = neg ? -v : v;
    return 0;
}

/* send_handle sends a packet whose only argument is j's handle. */
static void send_handle(struct peer *p, uint32_t cmd, struct engine *e, const struct job *j)
{
    char h[JOB_HANDLE_BUF];
    struct proto_arg a = {h, job_handle(e, j, h)};
    peer_send(p, cmd, &a, 1);
}

/* ------------------------------------------------------------ client commands */

/* struct submit_kind says how a SUBMIT_* packet behaves. */
struct submit_kind {
    enum job_prio prio;
    int background;
    int epoch;   /* argument 2 is a unix time */
    int sched;   /* arguments 2..6 are cron fields */
    int reduce;  /* argument 2 is the reducer, 3 the (ignored) aggregator */
};

static int submit_kind(uint32_t cmd, struct submit_kind *k)
{
    memset(k, 0, sizeof *k);
    uint32_t f = proto_cmd_flags(cmd);
    if (!(f & PROTO_F_SUBMIT))
        return -1;
    k->prio = (f & PROTO_F_HIGH) ? PRIO_HIGH : (f & PROTO_F_LOW) ? PRIO_LOW : PRIO_NORMAL;
    k->background = !!(f & PROTO_F_DURABLE);
    k->epoch = !!(f & PROTO_F_EPOCH);
    k->sched = !!(f & PROTO_F_SCHED);
    k->reduce = !!(f & PROTO_F_REDUCE);
    return 0;
}

/* due_time works out when an epoch or scheduled job may run. Returns 0 or -1 (bad arguments). */
static int due_time(struct engine *e, const struct pb_packet *pkt, const struct submit_kind *k,
                    double *due)
{
    *due = 0;
    if (k->epoch) {
        int64_t when;
        if (parse_i64(pkt->arg[2], pkt->len[2], &when) != 0)
            return -1;
        *due = (double)when;
    } else if (k->sched) {
        struct cron_spec c;
        if (cron_parse_field(pkt->arg[2], pkt->len[2], 0, 59, &c.minute) != 0 ||
            cron_parse_field(pkt->arg[3], pkt->len[3], 0, 23, &c.hour) != 0 ||
            cron_parse_field(pkt->arg[4], pkt->len[4], 1, 31, &c.mday) != 0 ||
            cron_parse_field(pkt->arg[5], pkt->len[5], 1, 12, &c.month) != 0 ||
            cron_parse_field(pkt->arg[6], pkt->len[6], 0, 6, &c.wday) != 0)
            return -1;
        int64_t when = cron_next(&c, (int64_t)engine_now(e));
        if (when < 0)
            return -1;
        *due = (double)when;
    }
    return 0;
}

/* send_admin_error sends an ERROR packet from a reason in admin form ("CODE Text+in+admin+form",
 * as engine_ext's features give them): the code, and the text with its '+' as spaces. */
static void send_admin_error(struct peer *p, const char *why)
{
    char code[64], text[256];
    size_t i = 0, k = 0;
    for (; why[i] != '\0' && why[i] != ' ' && i < sizeof code - 1; i++)
        code[i] = why[i];
    code[i] = '\0';
    for (i += why[i] == ' '; why[i] != '\0' && k < sizeof text - 1; i++)
        text[k++] = why[i] == '+' ? ' ' : why[i];
    text[k] = '\0';
    peer_send_error(p, code, text);
}

/* submit_refused answers a submit that job_submit refused, in the binary protocol (why: the
 * feature's reason of SUBMIT_BROADCAST_REFUSED). */
static void submit_refused(struct peer *p, enum submit_result r, const char *why)
{
    switch (r) {
    case SUBMIT_BROADCAST_REFUSED: /* a foreground or deferred submit to a broadcast function */
        send_admin_error(p, why);
        break;
    case SUBMIT_BAD_NAME:
        peer_send_error(p, PROTO_ERR_INVALID_ARGUMENT, "Function name has a NUL byte");
        break;
    case SUBMIT_QUEUE_FULL:
        peer_send_error(p, PROTO_ERR_QUEUE_ERROR, "Job queue is full");
        break;
    case SUBMIT_TOO_MANY_FUNCTIONS:
        peer_send_error(p, PROTO_ERR_QUEUE_ERROR, "Too many functions (--max-functions)");
        break;
    case SUBMIT_STORE_ERROR:
        peer_send_error(p, PROTO_ERR_QUEUE_ERROR, "Could not store the job");
        break;
    default: /* no memory (a wait refusal needs an after list, which no packet has) */
        peer_send_error(p, PROTO_ERR_MEMORY, "Out of memory");
        break;
    }
}

static void submit(struct peer *p, const struct pb_packet *pkt)
{
    struct engine *e = p->eng;
    peer_mark(p, PEER_KIND_CLIENT);
    struct submit_kind k;
    submit_kind(pkt->cmd, &k);
    struct submit_req rq = {
        .func = pkt->arg[0], .func_len = pkt->len[0], .unique = pkt->arg[1],
        .unique_len = pkt->len[1], .reducer = k.reduce ? pkt->arg[2] : NULL,
        .reducer_len = k.reduce ? pkt->len[2] : 0, .data = pkt->data, .data_len = pkt->data_len,
        .prio = k.prio, .background = k.background, .client = p, .client_jobs = &p->waiters,
        .owner = peer_ack_owner(p, 0), .owner_held = p->pending_acks > 0, .log = "created",
        .life = p->life};

    if (rq.func_len > e->cfg->max_function) {
        peer_send_error(p, PROTO_ERR_ARGUMENT_TOO_LARGE, "Function name too long");
        return;
    }
    if (rq.unique_len > PROTO_UNIQUE_MAX) {
        peer_send_error(p, PROTO_ERR_ARGUMENT_TOO_LARGE, "Unique value too large");
        return;
    }
    if (rq.reducer_len > e->cfg->max_function) {
        peer_send_error(p, PROTO_ERR_ARGUMENT_TOO_LARGE, "Reducer name too long");
        return;
    }
    if (e->acl != NULL && acl_func_check(e->acl, p, ACL_SUBMIT, rq.func, rq.func_len) != 0)
        return;
    if (due_time(e, pkt, &k, &rq.due) != 0) {
        peer_send_error(p, PROTO_ERR_INVALID_ARGUMENT,
                        k.epoch ? "Invalid epoch time" : "Invalid or unreachable schedule");
        return;
    }
    struct submit_out out;
    enum submit_result r = job_submit(e, &rq, &out);
    if (r == SUBMIT_CREATED || r == SUBMIT_JOINED) {
        send_handle(p, CMD_JOB_CREATED, e, out.job);
    } else if (r == SUBMIT_BROADCAST) { /* fanned out: the broadcast's own handle */
        char h[JOB_HANDLE_BUF];
        struct proto_arg a = {h, job_handle_id(e, out.id, h)};
        peer_send(p, CMD_JOB_CREATED, &a, 1);
    } else if (r != SUBMIT_HELD) { /* HELD: the store's sink answers once it is durable */
        submit_refused(p, r, out.why);
    }
}

/* send_status answers GET_STATUS (STATUS_RES) or GET_STATUS_UNIQUE (STATUS_RES_UNIQUE, which also
 * counts the waiting clients) about j, echoing the key the client asked with. */
static void send_status(struct peer *p, const struct pb_packet *pkt, const struct job *j,
                        uint32_t reply)
{
    char num[16] = "0", den[16] = "0", clients[16] = "0";
    const char *known = "0", *running = "0";
    if (j != NULL) {
        known = "1";
        running = j->state == JOB_RUNNING ? "1" : "0";
        uint32_t n, d;
        job_status(p->eng, j, &n, &d);
        snprintf(num, sizeof num, "%u", n);
        snprintf(den, sizeof den, "%u", d);
        snprintf(clients, sizeof clients, "%u", job_nwaiters(j));
    }
    struct proto_arg a[6] = {{pkt->arg[0], pkt->len[0]}, {known, 1}, {running, 1},
                             {num, strlen(num)}, {den, strlen(den)}, {clients, strlen(clients)}};
    peer_send(p, reply, a, reply == CMD_STATUS_RES_UNIQUE ? 6 : 5);
}

/* option_life sets p's job-timeout=MS or job-ttl=SECONDS (0: none) for the jobs it submits
 * from now (lifetime.h). Returns 1 when the option was one of them (answered), else 0. */
static int option_life(struct peer *p, const struct pb_packet *pkt)
{
    const char *o = pkt->arg[0];
    size_t len = pkt->len[0], nl = len > 12 && strncasecmp(o, "job-timeout=", 12) == 0 ? 12
                                 : len > 8 && strncasecmp(o, "job-ttl=", 8) == 0    ? 8
                                                                                     : 0;
    if (nl == 0)
        return 0;
    int64_t v;
    if (parse_i64(o + nl, len - nl, &v) != 0 || v < 0 ||
        v > (nl == 8 ? 31536000 : (int64_t)UINT32_MAX)) {
        peer_send_error(p, PROTO_ERR_INVALID_ARGUMENT, nl == 8 ? "Invalid job-ttl (seconds)"
                                                               : "Invalid job-timeout (ms)");
        return 1;
    }
    if (nl == 8)
        p->life.ttl_s = (uint32_t)v;
    else
        p->life.timeout_ms = (uint32_t)v;
    struct proto_arg a = {o, len};
    peer_send(p, CMD_OPTION_RES, &a, 1);
    return 1;
}

static void option_req(struct peer *p, const struct pb_packet *pkt)
{
    if (option_life(p, pkt) || /* job-timeout, job-ttl (lifetime.h) */
        cancel_option(p, pkt)) /* cancel-notify, cancel-job (cancel.h) */
        return;
    if (pkt->len[0] == 10 && strncasecmp(pkt->arg[0], "exceptions", 10) == 0) {
        p->flags |= PEER_EXCEPTIONS;
        struct proto_arg a = {pkt->arg[0], pkt->len[0]};
        peer_send(p, CMD_OPTION_RES, &a, 1);
        return;
    }
    peer_send_error(p, PROTO_ERR_UNKNOWN_OPTION, "Server does not recognize given option");
}

static void set_client_id(struct peer *p, const struct pb_packet *pkt)
{
    size_t len = pkt->len[0];
    if (len > p->eng->cfg->max_client_id)
        len = p->eng->cfg->max_client_id;
    if (!func_name_ok(pkt->arg[0], len)) {
        peer_send_error(p, PROTO_ERR_INVALID_ARGUMENT, "Client id has a NUL byte");
        return;
    }
    char *id = malloc(len + 1);
    if (id == NULL)
        return;
    memcpy(id, pkt->arg[0], len);
    id[len] = '\0';
    free(p->client_id);
    p->client_id = id;
}

/* ------------------------------------------------------------ worker commands */

static void can_do(struct peer *p, const struct pb_packet *pkt, int with_timeout)
{
    struct engine *e = p->eng;
    if (pkt->len[0] > e->cfg->max_function) {
        peer_send_error(p, PROTO_ERR_ARGUMENT_TOO_LARGE, "Function name too long");
        return;
    }
    if (!func_name_ok(pkt->arg[0], pkt->len[0])) {
        peer_send_error(p, PROTO_ERR_INVALID_ARGUMENT, "Function name has a NUL byte");
        return;
    }
    if (e->acl != NULL && acl_func_check(e->acl, p, ACL_CAN_DO, pkt->arg[0], pkt->len[0]) != 0)
        return;
    uint32_t timeout = 0;
    if (with_timeout) {
        int64_t ms;
        if (parse_i64(pkt->arg[1], pkt->len[1], &ms) != 0 || ms < 0 || ms > UINT32_MAX) {
            peer_send_error(p, PROTO_ERR_INVALID_ARGUMENT, "Invalid timeout");
            return;
        }
        timeout = (uint32_t)ms;
    }
    struct worker *w = worker_of(p);
    if (w == NULL) {
        peer_send_error(p, PROTO_ERR_MEMORY, "Out of memory");
        return;
    }
    struct func *f = func_get(e, pkt->arg[0], pkt->len[0], 1);
    if (f == NULL) {
        func_refused(p);
        return;
    }
    if (worker_add(e, w, f, timeout) == NULL) {
        func_release(e, f);
        peer_send_error(p, PROTO_ERR_MEMORY, "Out of memory");
    }
}

static void cant_do(struct peer *p, const struct pb_packet *pkt)
{
    struct engine *e = p->eng;
    struct func *f = func_get(e, pkt->arg[0], pkt->len[0], 0);
    if (p->worker != NULL && f != NULL)
        worker_cant_do(e, p->worker, f);
}

static void reset_abilities(struct peer *p)
{
    if (p->worker != NULL)
        worker_reset_abilities(p->eng, p->worker);
}

static void pre_sleep(struct peer *p)
{
    struct worker *w = worker_of(p);
    if (w != NULL && worker_sleep(p->eng, w))
        peer_send(p, CMD_NOOP, NULL, 0);
}

/* send_assign sends j, just started on p's worker, in the form its GRAB (cmd) asked for. */
static void send_assign(struct peer *p, uint32_t cmd, const struct job *j)
{
    struct engine *e = p->eng;
    const struct func *f = j->func;
    char h[JOB_HANDLE_BUF];
    struct proto_arg args[4] = {{h, job_handle(e, j, h)}, {f->name, f->name_len},
                                {job_unique(j), j->unique_len}, {job_reducer(j), j->reducer_len}};
    int nargs = 2;
    uint32_t reply = CMD_JOB_ASSIGN;
    if (cmd == CMD_GRAB_JOB_UNIQ || (cmd == CMD_GRAB_JOB_ALL && j->reducer_len == 0)) {
        reply = CMD_JOB_ASSIGN_UNIQ;
        nargs = 3;
    } else if (cmd == CMD_GRAB_JOB_ALL) {
        reply = CMD_JOB_ASSIGN_ALL;
        nargs = 4;
    }
    peer_send_ref(p, reply, args, nargs, job_blob(j), job_payload_off(j),
                  job_payload_len(j));
}

static void grab(struct peer *p, uint32_t cmd)
{
    struct worker *w = worker_of(p);
    if (w == NULL) {
        peer_send_error(p, PROTO_ERR_MEMORY, "Out of memory");
        return;
    }
    struct job *j;
    switch (worker_grab(p->eng, w, cmd, &j)) {
    case WORKER_ASSIGNED: send_assign(p, cmd, j); break;
    case WORKER_HELD: break;
    case WORKER_NO_JOB: peer_send(p, CMD_NO_JOB, NULL, 0); break;
    }
}

void cmd_grab_release(struct engine *e, struct worker *w)
{
    worker_grab_release(e, w);
}

/* owned_job returns the running job named by the handle if p's worker holds it, or takes it
 * back for it after it passed its CAN_DO_TIMEOUT (worker_reclaim); else NULL. */
static struct job *owned_job(struct peer *p, const struct pb_packet *pkt)
{
    struct job *j = job_find_handle(p->eng, pkt->arg[0], pkt->len[0]);
    if (j == NULL || p->worker == NULL)
        return NULL;
    if (j->state == JOB_RUNNING && j->run->worker == p->worker)
        return j;
    return worker_reclaim(p->eng, p->worker, j) ? j : NULL;
}

/* forward sends the worker's packet, as received, to every client of j. Large data is copied
 * once into a shared blob when several clients wait. */
static void forward(struct job *j, uint32_t cmd, const struct pb_packet *pkt)
{
    if (!job_has_waiters(j))
        return;
    struct proto_arg args[3];
    int n = pkt->info->argc;
    for (int i = 0; i < n; i++)
        args[i] = (struct proto_arg){pkt->arg[i], pkt->len[i]};
    if (cmd == CMD_WORK_STATUS) {
        /* a client that has not read the last status gets this one instead (peer_send_status) */
        job_for_each_waiter(w, j) {
            peer_send_status(w->client, args, n, &w->status_slot);
        }
        return;
    }
    if (!pkt->info->has_data) {
        job_for_each_waiter(w, j) {
            peer_send(w->client, cmd, args, n);
        }
        return;
    }
    if (job_many_waiters(j) && pkt->data_len >= OUTQ_SHARE_MIN) {
        struct blob *b = blob_from(pkt->data, pkt->data_len);
        if (b != NULL) {
            job_for_each_waiter(w, j) {
                peer_send_ref(w->client, cmd, args, n, b, 0, b->len);
            }
            blob_unref(b);
            return;
        }
    }
    args[n] = (struct proto_arg){pkt->data, pkt->data_len};
    job_for_each_waiter(w, j) {
        peer_send(w->client, cmd, args, n + 1);
    }
}

static void work_result(struct peer *p, const struct pb_packet *pkt)
{
    struct engine *e = p->eng;
    struct job *j = owned_job(p, pkt);
    if (j == NULL) {
        if (cancel_late(p, pkt)) /* about a job it was told to stop: dropped */
            return;
        const char *text = "Job given in work result not found";
        if (pkt->cmd == CMD_WORK_DATA || pkt->cmd == CMD_WORK_WARNING)
            text = "Job does not exist on server";
        else if (pkt->cmd == CMD_WORK_EXCEPTION)
            text = "An exception was received for a job that does not exist";
        peer_send_error(p, PROTO_ERR_JOB_NOT_FOUND, text);
        return;
    }
    enum job_event ev = JOB_EV_COMPLETED;
    switch (pkt->cmd) {
    case CMD_WORK_STATUS:
        job_set_status(e, j, parse_u32(pkt->arg[1], pkt->len[1]),
                       parse_u32(pkt->arg[2], pkt->len[2]));
        forward(j, CMD_WORK_STATUS, pkt);
        return;
    case CMD_WORK_DATA:
    case CMD_WORK_WARNING:
        forward(j, pkt->cmd, pkt);
        return;
    case CMD_WORK_COMPLETE:
    case CMD_WORK_FAIL:
        ev = pkt->cmd == CMD_WORK_FAIL ? JOB_EV_FAILED : JOB_EV_COMPLETED;
        forward(j, pkt->cmd, pkt);
        break;
    case CMD_WORK_EXCEPTION: {
        ev = JOB_EV_EXCEPTION;
        struct proto_arg a[2] = {{pkt->arg[0], pkt->len[0]}, {pkt->data, pkt->data_len}};
        job_for_each_waiter(w, j) {
            if (w->client->flags & PEER_EXCEPTIONS)
                peer_send(w->client, CMD_WORK_EXCEPTION, a, 2);
            else
                peer_send(w->client, CMD_WORK_FAIL, a, 1);
        }
        break;
    }
    }
    func_count(e, j->func, ev, j->prio);
    hist_observe(&j->func->run, hist_seconds, engine_now(e) - job_since(j));
    job_log(e, j, ev == JOB_EV_COMPLETED ? "completed" : ev == JOB_EV_FAILED ? "failed"
                                                                            : "exception");
    if (ev == JOB_EV_COMPLETED && e->ext.job_completed != NULL)
        e->ext.job_completed(e, j); /* the jobs that waited for it alone are queued */
    /* a background job with a retry policy runs again later or goes to the dead-letter list */
    if (ev == JOB_EV_FAILED && e->ext.job_failed != NULL && e->ext.job_failed(e, j, "WORK_FAIL", 9))
        return;
    if (ev == JOB_EV_EXCEPTION && e->ext.job_failed != NULL &&
        e->ext.job_failed(e, j, pkt->data, pkt->data_len))
        return;
    job_free(e, j);
}

/* ------------------------------------------------------------ dispatch */

void cmd_dispatch(struct peer *p, const struct pb_packet *pkt)
{
    switch (pkt->cmd) {
    case CMD_SUBMIT_JOB:
    case CMD_SUBMIT_JOB_BG:
    case CMD_SUBMIT_JOB_HIGH:
    case CMD_SUBMIT_JOB_HIGH_BG:
    case CMD_SUBMIT_JOB_LOW:
    case CMD_SUBMIT_JOB_LOW_BG:
    case CMD_SUBMIT_JOB_EPOCH:
    case CMD_SUBMIT_JOB_SCHED:
    case CMD_SUBMIT_REDUCE_JOB:
    case CMD_SUBMIT_REDUCE_JOB_BACKGROUND:
        submit(p, pkt);
        break;
    case CMD_GET_STATUS:
        peer_mark(p, PEER_KIND_CLIENT);
        send_status(p, pkt, job_find_handle(p->eng, pkt->arg[0], pkt->len[0]), CMD_STATUS_RES);
        break;
    case CMD_GET_STATUS_UNIQUE:
        peer_mark(p, PEER_KIND_CLIENT);
        send_status(p, pkt, job_find_unique_any(p->eng, pkt->arg[0], pkt->len[0]),
                    CMD_STATUS_RES_UNIQUE);
        break;
    case CMD_OPTION_REQ: option_req(p, pkt); break;
    case CMD_CANCEL_JOB: cancel_job_request(p, pkt); break;
    case CMD_SET_CLIENT_ID: set_client_id(p, pkt); break;
    case CMD_ECHO_REQ: {
        struct proto_arg a = {pkt->data, pkt->data_len};
        peer_send(p, CMD_ECHO_RES, &a, 1);
        break;
    }
    case CMD_CAN_DO: can_do(p, pkt, 0); break;
    case CMD_CAN_DO_TIMEOUT: can_do(p, pkt, 1); break;
    case CMD_CANT_DO: cant_do(p, pkt); break;
    case CMD_RESET_ABILITIES: reset_abilities(p); break;
    case CMD_PRE_SLEEP: pre_sleep(p); break;
    case CMD_GRAB_JOB:
    case CMD_GRAB_JOB_UNIQ:
    case CMD_GRAB_JOB_ALL:
        grab(p, pkt->cmd);
        break;
    case CMD_WORK_STATUS:
    case CMD_WORK_COMPLETE:
    case CMD_WORK_FAIL:
    case CMD_WORK_EXCEPTION:
    case CMD_WORK_DATA:
    case CMD_WORK_WARNING:
        work_result(p, pkt);
        break;
    default:
        not_expected(p);
        break;
    }
    /* the wake-ups the handler asked for wait until the session has handled the rest of the
     * read (session.c run): a held GRAB then takes the best job of a whole pipelined burst */
}

void cmd_peer_gone(struct peer *p)
{
    struct engine *e = p->eng;
    /* the client side: jobs nobody waits for any more are dropped unless running */
    job_client_gone(e, &p->waiters);
    /* the worker side: running jobs go back to the queue */
    if (p->worker != NULL) {
        worker_gone(e, p->worker);
        p->worker = NULL;
    }
    engine_drain_ready(e);
}

/* ------------------------------------------------------------ the sink */

static void sink_wake(struct engine *e, struct peer *p)
{
    (void)e;
    peer_send(p, CMD_NOOP, NULL, 0);
}

static void sink_assign(struct engine *e, struct peer *p, uint32_t grab, const struct job *j)
{
    (void)e;
    send_assign(p, grab, j);
}

static void sink_no_job(struct engine *e, struct peer *p)
{
    (void)e;
    peer_send(p, CMD_NO_JOB, NULL, 0);
}

static void sink_job_failed(struct engine *e, const struct job *j)
{
    char h[JOB_HANDLE_BUF];
    struct proto_arg a = {h, job_handle(e, j, h)};
    job_for_each_waiter(w, j) {
        peer_send(w->client, CMD_WORK_FAIL, &a, 1);
    }
}

static int sink_closing(const struct engine *e, const struct peer *p)
{
    (void)e;
    return (p->flags & PEER_CLOSING) != 0;
}

static void sink_stored_gone(struct engine *e, const struct job *j) { store_done(e, j); }

const struct engine_sink cmd_sink = {sink_wake,   sink_assign,  sink_no_job,
                                     sink_job_failed, sink_closing, sink_stored_gone,
                                     cancel_notify};

/* ------------------------------------------------------------ the store's sink */

static void store_held(struct engine *e, void *owner)
{
    (void)e;
    peer_ack_peer(owner)->pending_acks++;
}

/* acked_text writes a held admin 'submit' reply: OK HANDLE, or the store's error as an ERR line
 * (its spaces as '+', control bytes as '.'). */
static void acked_text(struct peer *p, const char *handle, const char *error)
{
    if (error == NULL) {
        peer_printf(p, "OK %s\r\n", handle);
        return;
    }
    char why[300];
    size_t n = 0;
    for (; error[n] != '\0' && n < sizeof why - 1; n++)
        why[n] = error[n] == ' ' ? '+' : (unsigned char)error[n] < 0x20 ? '.' : error[n];
    why[n] = '\0';
    peer_printf(p, "ERR QUEUE_ERROR Could+not+store+the+job:+%s\r\n", why);
}

static void store_acked(struct engine *e, void *owner, uint64_t id, const char *error)
{
    struct peer *p = peer_ack_peer(owner);
    char h[JOB_HANDLE_BUF];
    struct proto_arg ca = {h, job_handle_id(e, id, h)};
    if (peer_ack_text(owner)) {
        h[ca.len] = '\0';
        acked_text(p, h, error);
    } else if (error != NULL) {
        char msg[300];
        snprintf(msg, sizeof msg, "Could not store the job: %s", error);
        peer_send_error(p, PROTO_ERR_QUEUE_ERROR, msg);
    } else {
        peer_send(p, CMD_JOB_CREATED, &ca, 1);
    }
    if (--p->pending_acks == 0)
        e->ops.resume(e, p);
}

static void store_replay_done(struct engine *e)
{
    /* submits that waited for the replay are handled now, in order */
    list_for_each_safe(n, next, &e->peers) {
        struct peer *p = peer_of(n);
        if (p->flags & PEER_WAIT_REPLAY) {
            p->flags &= ~PEER_WAIT_REPLAY;
            e->ops.resume(e, p);
        }
    }
}

const struct store_sink cmd_store_sink = {store_held, store_acked, store_replay_done};
