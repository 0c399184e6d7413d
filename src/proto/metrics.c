/* SPDX-License-Identifier: BSD-3-Clause */
/* metrics: the server's counters and state as STAT lines, JSON and Prometheus text. */
#include "metrics.h"

#include <assert.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "esc.h"
#include "func.h"
#include "hist.h"
#include "job.h"
#include "jobx.h"
#include "peer.h"
#include "worker.h"

static const char *const prio_names[PRIO_SNAPSHOT] = {"high", "normal", "low"};
static const char *const kind_names[PEER_KINDS] = {"client", "worker", "admin", "none"};
static const char *const denied_names[DENIED_KINDS] = {"submit", "can_do", "admin"};
static const char *const event_names[JOB_EVENTS] = {
    "submitted", "coalesced", "assigned", "retried",   "completed", "failed",
    "exception", "timed_out", "requeued", "lost",      "cancelled", "abandoned",
};
static const char *const perr_names[PERR_KINDS] = {
    "bad_magic", "wrong_magic", "too_large", "bad_command", "bad_args", "line_too_long",
    "unrecognised",
};

/* ------------------------------------------------------------ text helpers */

/* struct out is an output buffer with a limit that remembers a failed append. */
struct out {
    struct buf *b;
    int err;      /* 0, METRICS_NO_MEMORY or METRICS_TOO_LARGE */
    size_t start; /* buf_len(b) before the document */
    size_t max;   /* bytes the document may take, 0 = no limit */
};

static struct out out_init(struct buf *b, size_t max)
{
    struct out o = {b, 0, buf_len(b), max};
    return o;
}

static void put(struct out *o, const char *s, size_t n)
{
    if (o->err)
        return;
    if (o->max != 0 && buf_len(o->b) - o->start + n > o->max)
        o->err = METRICS_TOO_LARGE;
    else if (buf_append(o->b, s, n) != 0)
        o->err = METRICS_NO_MEMORY;
}

static void puts_(struct out *o, const char *s) { put(o, s, strlen(s)); }

/* put_name appends name[0..len) escaped for a text line whose fields are separated by spaces
 * (esc.h, ESC_SPACE). */
static void put_name(struct out *o, const char *name, size_t len)
{
    if (o->err)
        return;
    size_t before = buf_len(o->b);
    if (esc_append(o->b, name, len, ESC_SPACE) != 0)
        o->err = METRICS_NO_MEMORY;
    else if (o->max != 0 && buf_len(o->b) - o->start > o->max) {
        o->b->end -= buf_len(o->b) - before; /* taken back: the document stays within max */
        o->err = METRICS_TOO_LARGE;
    }
}

/* comma separates the items of a JSON list or object: a comma before all but the first. */
static void comma(struct out *o, int *first)
{
    if (!*first)
        puts_(o, ",");
    *first = 0;
}

static void putf(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(struct out *o, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    put(o, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* utf8_len returns the length of the valid UTF-8 sequence at s[0..n), or 0 if it is not one. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned min;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
        min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        min = 0x10000;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    unsigned cp = c & (0xff >> (len + 1));
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

size_t metrics_sanitize(const char *name, size_t len, char *out)
{
    const unsigned char *s = (const unsigned char *)name;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        size_t l = utf8_len(s + i, len - i);
        if (l == 0) {
            static const char hex[] = "0123456789abcdef";
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hex[s[i] >> 4];
            out[o++] = hex[s[i] & 15];
            i++;
            continue;
        }
        memcpy(out + o, s + i, l);
        o += l;
        i += l;
    }
    out[o] = '\0';
    return o;
}

/* clean returns name[0..len) as valid UTF-8 text, malloc'd; NULL when out of memory. */
static char *clean(const char *name, size_t len)
{
    char *s = malloc(4 * len + 1);
    if (s != NULL)
        metrics_sanitize(name, len, s);
    return s;
}

/* put_label appends name[0..len) as a Prometheus label value (between its quotes): valid
 * UTF-8 with \, " and newline escaped. */
static void put_label(struct out *o, const char *name, size_t len)
{
    char *s = clean(name, len);
    if (s == NULL) {
        o->err = METRICS_NO_MEMORY;
        return;
    }
    for (const char *c = s; *c; c++) {
        if (*c == '\\' || *c == '"')
            put(o, "\\", 1);
        if (*c == '\n')
            put(o, "\\n", 2);
        else
            put(o, c, 1);
    }
    free(s);
}

static uint64_t sum3(const uint64_t v[PRIO_SNAPSHOT]) { return v[0] + v[1] + v[2]; }

static uint64_t hist_count(const struct hist *h) { return hist_total(h); }

/* ------------------------------------------------------------ stats (STAT lines) */

static void stat_u(struct out *o, const char *name, uint64_t v)
{
    putf(o, "STAT %s %llu\r\n", name, (unsigned long long)v);
}

static void stat_f(struct out *o, const char *name, double v) { putf(o, "STAT %s %.6f\r\n", name, v); }

int metrics_stats_text(const struct engine *e, double now, struct buf *b, size_t max)
{
    struct out o = out_init(b, max);
    struct engine_snapshot s;
    engine_stats_get(e, &s);
    const struct engine_stats *st = &s.stats;
    char name[96];
    stat_u(&o, "pid", (uint64_t)getpid());
    stat_u(&o, "uptime", (uint64_t)(now - s.started));
    stat_u(&o, "time", (uint64_t)now);
    putf(&o, "STAT version %s\r\n", PACKAGE_VERSION);
    stat_u(&o, "curr_connections", s.peers);
    stat_u(&o, "total_connections", st->connections);
    for (int k = 0; k < PEER_KIND_NONE; k++) {
        snprintf(name, sizeof name, "curr_connections_%s", kind_names[k]);
        stat_u(&o, name, s.conn_now[k]);
    }
    for (int k = 0; k < PEER_KINDS; k++) {
        snprintf(name, sizeof name, "total_connections_%s", kind_names[k]);
        stat_u(&o, name, st->conn_kind[k]);
    }
    for (int k = 0; k < PEER_KINDS; k++) {
        snprintf(name, sizeof name, "rejected_connections_%s", kind_names[k]);
        stat_u(&o, name, st->conn_rejected[k]);
    }
    stat_u(&o, "accept_errors", st->accept_errors);
    stat_u(&o, "tls_handshakes", st->tls_handshakes);
    stat_u(&o, "tls_handshake_failures", st->tls_handshake_failures);
    stat_u(&o, "tls_handshake_timeouts", st->tls_handshake_timeouts);
    stat_u(&o, "http_request_timeouts", st->http_request_timeouts);
    stat_u(&o, "connections_shed", st->shed);
    stat_u(&o, "connections_shed_bytes", st->shed_bytes);
    stat_u(&o, "packets_in", st->packets);
    stat_u(&o, "lines_in", st->lines);
    stat_u(&o, "packets_out", st->packets_out);
    stat_u(&o, "bytes_in", st->bytes_in);
    stat_u(&o, "bytes_out", st->bytes_out);
    stat_u(&o, "status_coalesced", st->status_coalesced);
    stat_u(&o, "protocol_errors", st->protocol_errors);
    for (int k = 0; k < PERR_KINDS; k++) {
        snprintf(name, sizeof name, "protocol_errors_%s", perr_names[k]);
        stat_u(&o, name, st->protocol_error[k]);
    }
    for (int ev = 0; ev < JOB_EVENTS; ev++) {
        snprintf(name, sizeof name, "jobs_%s", event_names[ev]);
        stat_u(&o, name, sum3(st->jobs[ev]));
        for (int p = 0; p < PRIO_SNAPSHOT; p++) {
            snprintf(name, sizeof name, "jobs_%s_%s", event_names[ev], prio_names[p]);
            stat_u(&o, name, st->jobs[ev][p]);
        }
    }
    stat_u(&o, "curr_jobs", s.jobs);
    stat_u(&o, "curr_jobs_running", s.running);
    for (int p = 0; p < PRIO_SNAPSHOT; p++) {
        snprintf(name, sizeof name, "curr_jobs_queued_%s", prio_names[p]);
        stat_u(&o, name, s.queued[p]);
    }
    stat_u(&o, "job_memory_bytes", s.job_bytes);
    stat_u(&o, "functions", s.functions);
    stat_u(&o, "functions_evicted", st->functions_evicted);
    stat_u(&o, "workers", s.workers);
    stat_u(&o, "abilities", s.abilities);
    stat_u(&o, "held_grabs", s.held);
    stat_u(&o, "buffered_bytes", s.buffered);
    stat_u(&o, "buffered_peak_bytes", s.buffered_peak);
    stat_u(&o, "store", e->store_mgr != NULL);
    stat_u(&o, "store_commits", st->store_commits);
    stat_u(&o, "store_commit_failures", st->store_commit_failures);
    stat_u(&o, "permission_denied", st->permission_denied[DENIED_SUBMIT] +
                                         st->permission_denied[DENIED_CAN_DO] +
                                         st->permission_denied[DENIED_ADMIN]);
    for (int k = 0; k < DENIED_KINDS; k++) {
        snprintf(name, sizeof name, "permission_denied_%s", denied_names[k]);
        stat_u(&o, name, st->permission_denied[k]);
    }
    stat_u(&o, "store_batch_operations", (uint64_t)st->store_batch_ops.sum);
    stat_f(&o, "store_commit_seconds", st->store_commit_seconds.sum);
    stat_u(&o, "store_replayed", st->store_replayed);
    stat_u(&o, "retries_total", st->retries);
    stat_u(&o, "failed_jobs", jobx_nfailed(e));
    stat_u(&o, "failed_dropped_total", st->failed_dropped);
    stat_u(&o, "schedules", e->ext.schedules);
    stat_u(&o, "schedule_fired", st->schedule_fired);
    stat_u(&o, "schedule_coalesced", st->schedule_coalesced);
    stat_u(&o, "schedule_refused", st->schedule_refused);
    stat_u(&o, "waiting_jobs", jobx_nwaiting(e));
    puts_(&o, "END\r\n");
    return o.err;
}

int metrics_stats_functions(const struct engine *e, struct buf *b, size_t max)
{
    struct out o = out_init(b, max);
    list_for_each(n, &e->func_list) {
        const struct func *f = func_of_anode(n);
        if (f->marker)
            continue;
        /* names are escaped (esc.h): a line stays one line of two fields */
        struct {
            const char *what;
            uint64_t v;
        } rows[] = {
            {"total", func_total(f)},       {"running", f->running},
            {"workers", f->nworkers},       {"queued_high", f->queued[PRIO_HIGH]},
            {"queued_normal", f->queued[PRIO_NORMAL]}, {"queued_low", f->queued[PRIO_LOW]},
            {"wait_count", hist_count(&f->wait)},      {"run_count", hist_count(&f->run)},
        };
        for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
            puts_(&o, "STAT ");
            put_name(&o, f->name, f->name_len);
            putf(&o, ":%s %llu\r\n", rows[i].what, (unsigned long long)rows[i].v);
        }
        for (int ev = 0; ev < JOB_EVENTS; ev++) {
            puts_(&o, "STAT ");
            put_name(&o, f->name, f->name_len);
            putf(&o, ":%s %llu\r\n", event_names[ev], (unsigned long long)f->events[ev]);
        }
        puts_(&o, "STAT ");
        put_name(&o, f->name, f->name_len);
        putf(&o, ":wait_seconds %.6f\r\n", f->wait.sum);
        puts_(&o, "STAT ");
        put_name(&o, f->name, f->name_len);
        putf(&o, ":run_seconds %.6f\r\n", f->run.sum);
        if (o.err)
            break;
    }
    puts_(&o, "END\r\n");
    return o.err;
}

/* ------------------------------------------------------------ JSON */

static int dump_cb(const char *buffer, size_t size, void *data)
{
    struct out *o = data;
    put(o, buffer, size);
    return o->err ? -1 : 0;
}

/* dump appends v (stolen; NULL means out of memory) to o as compact JSON. */
static void dump(struct out *o, json_t *v)
{
    if (v == NULL) {
        if (!o->err)
            o->err = METRICS_NO_MEMORY;
        return;
    }
    size_t flags = JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(9);
    if (!o->err && json_dump_callback(v, dump_cb, o, flags) != 0 && !o->err)
        o->err = METRICS_NO_MEMORY;
    json_decref(v);
}

/* item writes v (and takes it) as the next item of a JSON list; returns o->err. */
static int item(struct out *o, int *first, json_t *v)
{
    comma(o, first);
    dump(o, v);
    return o->err;
}

/* jtext returns a JSON string of the bytes name[0..len), made valid UTF-8 (metrics_sanitize). */
static json_t *jtext(const char *name, size_t len)
{
    char *s = clean(name, len);
    if (s == NULL)
        return NULL;
    json_t *v = json_string(s);
    free(s);
    return v;
}

static json_t *jprio(const uint64_t v[PRIO_SNAPSHOT])
{
    return json_pack("{sIsIsIsI}", "high", (json_int_t)v[0], "normal", (json_int_t)v[1], "low",
                     (json_int_t)v[2], "total", (json_int_t)sum3(v));
}

/* jhist returns a histogram: its bounds, its (non-cumulative) counts, one more than the bounds
 * for the values above the last, the count and the sum. */
static json_t *jhist(const struct hist *h, const double *bounds)
{
    json_t *b = json_array(), *c = json_array();
    for (size_t i = 0; i < HIST_BOUNDS; i++)
        json_array_append_new(b, json_real(bounds[i]));
    for (size_t i = 0; i <= HIST_BOUNDS; i++)
        json_array_append_new(c, json_integer((json_int_t)h->count[i]));
    return json_pack("{soso sIsf}", "bounds", b, "counts", c, "count",
                     (json_int_t)hist_count(h), "sum", h->sum);
}

static json_t *jkinds(const uint64_t *v, int n)
{
    json_t *o = json_object();
    uint64_t all = 0;
    for (int k = 0; k < n; k++) {
        json_object_set_new(o, kind_names[k], json_integer((json_int_t)v[k]));
        all += v[k];
    }
    json_object_set_new(o, "all", json_integer((json_int_t)all));
    return o;
}

int metrics_json_stats(const struct engine *e, double now, struct buf *b, size_t max)
{
    struct engine_snapshot s;
    engine_stats_get(e, &s);
    const struct engine_stats *st = &s.stats;
    uint64_t open[PEER_KINDS] = {0};
    for (int k = 0; k < PEER_KIND_NONE; k++)
        open[k] = s.conn_now[k];
    json_t *conns = json_pack("{sIsososo sIsIsI}", "open", (json_int_t)s.peers, "open_by_kind",
                              jkinds(open, PEER_KIND_NONE), "total_by_kind",
                              jkinds(st->conn_kind, PEER_KINDS), "rejected_by_kind",
                              jkinds(st->conn_rejected, PEER_KINDS), "total",
                              (json_int_t)st->connections, "accept_errors",
                              (json_int_t)st->accept_errors, "shed", (json_int_t)st->shed);
    json_t *traffic = json_pack(
        "{sIsIsIsIsIsIsI}", "packets_in", (json_int_t)st->packets, "lines_in",
        (json_int_t)st->lines, "packets_out", (json_int_t)st->packets_out, "bytes_in",
        (json_int_t)st->bytes_in, "bytes_out", (json_int_t)st->bytes_out, "status_coalesced",
        (json_int_t)st->status_coalesced, "shed_bytes", (json_int_t)st->shed_bytes);
    json_t *perr = json_object();
    for (int k = 0; k < PERR_KINDS; k++)
        json_object_set_new(perr, perr_names[k], json_integer((json_int_t)st->protocol_error[k]));
    json_object_set_new(perr, "total", json_integer((json_int_t)st->protocol_errors));
    json_t *events = json_object();
    for (int ev = 0; ev < JOB_EVENTS; ev++)
        json_object_set_new(events, event_names[ev], jprio(st->jobs[ev]));
    json_t *jobs = json_pack("{sIsIsosIso}", "live", (json_int_t)s.jobs, "running",
                             (json_int_t)s.running, "queued", jprio(s.queued), "memory_bytes",
                             (json_int_t)s.job_bytes, "events", events);
    json_t *store = json_pack("{sbsIsIsIsoso}", "enabled", e->store_mgr != NULL, "commits",
                              (json_int_t)st->store_commits, "commit_failures",
                              (json_int_t)st->store_commit_failures, "replayed",
                              (json_int_t)st->store_replayed, "batch_operations",
                              jhist(&st->store_batch_ops, hist_sizes), "commit_seconds",
                              jhist(&st->store_commit_seconds, hist_seconds));
    json_t *doc = json_pack(
        "{sssIsIsf sosososo sosIsIsIsIsIsI}", "version", PACKAGE_VERSION, "pid",
        (json_int_t)getpid(), "time", (json_int_t)now, "uptime_seconds", now - s.started,
        "connections", conns, "traffic", traffic, "protocol_errors", perr, "jobs", jobs, "store",
        store, "functions", (json_int_t)s.functions, "workers", (json_int_t)s.workers,
        "abilities", (json_int_t)s.abilities, "held_grabs", (json_int_t)s.held, "buffered_bytes",
        (json_int_t)s.buffered, "buffered_peak_bytes", (json_int_t)s.buffered_peak);
    json_t *denied = json_object();
    uint64_t ndenied = 0;
    for (int k = 0; k < DENIED_KINDS; k++) {
        json_object_set_new(denied, denied_names[k],
                            json_integer((json_int_t)st->permission_denied[k]));
        ndenied += st->permission_denied[k];
    }
    json_object_set_new(denied, "total", json_integer((json_int_t)ndenied));
    json_object_set_new(doc, "permission_denied", denied);
    json_object_set_new(doc, "functions_evicted", json_integer((json_int_t)st->functions_evicted));
    json_object_set_new(doc, "retry", json_pack("{sIsIsIsI}", "retries_total",
                                                (json_int_t)st->retries, "failed_jobs",
                                                (json_int_t)jobx_nfailed(e),
                                                "failed_dropped_total",
                                                (json_int_t)st->failed_dropped, "waiting_jobs",
                                                (json_int_t)jobx_nwaiting(e)));
    json_object_set_new(doc, "schedules",
                        json_pack("{sIsIsIsI}", "count", (json_int_t)e->ext.schedules, "fired",
                                  (json_int_t)st->schedule_fired, "coalesced",
                                  (json_int_t)st->schedule_coalesced, "refused",
                                  (json_int_t)st->schedule_refused));
    struct out o = out_init(b, max);
    dump(&o, doc);
    if (o.err)
        return o.err;
    /* the functions go in one at a time, so the document is never whole in memory: the dump's
     * closing brace is taken back, then ,"functions_by_name":{"NAME":{...},...}} */
    assert(buf_len(b) > o.start && b->data[b->end - 1] == '}');
    b->end--;
    puts_(&o, ",\"functions_by_name\":{");
    int first = 1;
    list_for_each(n, &e->func_list) {
        const struct func *f = func_of_anode(n);
        if (f->marker)
            continue;
        json_t *fe = json_object();
        for (int ev = 0; ev < JOB_EVENTS && fe != NULL; ev++)
            json_object_set_new(fe, event_names[ev], json_integer((json_int_t)f->events[ev]));
        comma(&o, &first);
        dump(&o, jtext(f->name, f->name_len));
        puts_(&o, ":");
        dump(&o, json_pack("{sososo}", "events", fe, "wait_seconds",
                           jhist(&f->wait, hist_seconds), "run_seconds",
                           jhist(&f->run, hist_seconds)));
        if (o.err)
            return o.err;
    }
    puts_(&o, "}}\n");
    return o.err;
}

int metrics_json_status(const struct engine *e, struct buf *b, size_t max)
{
    struct out o = out_init(b, max);
    puts_(&o, "{\"functions\":[");
    int first = 1;
    list_for_each(n, &e->func_list) {
        const struct func *f = func_of_anode(n);
        if (f->marker)
            continue;
        uint64_t q[PRIO_SNAPSHOT] = {f->queued[PRIO_HIGH], f->queued[PRIO_NORMAL],
                                     f->queued[PRIO_LOW]};
        json_t *row = json_pack("{sosIsIsIsIso}", "function", jtext(f->name, f->name_len),
                                "total", (json_int_t)func_total(f), "running",
                                (json_int_t)f->running, "available_workers",
                                (json_int_t)f->nworkers, "ready", (json_int_t)func_ready(f),
                                "queued", jprio(q));
        if (item(&o, &first, row) != 0)
            return o.err;
    }
    puts_(&o, "]}\n");
    return o.err;
}

int metrics_json_workers(const struct engine *e, struct buf *b, size_t max)
{
    struct out o = out_init(b, max);
    puts_(&o, "{\"workers\":[");
    int first = 1;
    list_for_each(n, &e->peers) {
        const struct peer *q = peer_of(n);
        if (q->flags & PEER_CLOSING)
            continue;
        json_t *fns = json_array();
        uint32_t running = 0;
        if (q->worker != NULL) {
            running = q->worker->nrunning;
            list_for_each(it, &q->worker->abilities) {
                const struct ability *a = ability_of_wnode(it);
                json_array_append_new(fns, jtext(a->func->name, a->func->name_len));
            }
        }
        char kind[32];
        json_t *row = json_pack(
            "{sIsssosssosIsb}", "fd", (json_int_t)q->fd, "ip", q->ip, "client_id",
            q->client_id ? jtext(q->client_id, strlen(q->client_id)) : json_null(), "kind",
            peer_kind_name(q, kind), "functions", fns, "running", (json_int_t)running,
            "sleeping", q->worker != NULL && q->worker->sleeping);
        if (item(&o, &first, row) != 0)
            return o.err;
    }
    puts_(&o, "]}\n");
    return o.err;
}

static const char *state_name(const struct job *j)
{
    switch (j->state) {
    case JOB_READY: return "queued";
    case JOB_FUTURE: return "scheduled";
    case JOB_RUNNING: return "running";
    case JOB_PENDING: return "storing";
    case JOB_FAILED: return "failed";
    case JOB_WAITING: return "waiting";
    default: return "other";
    }
}

int metrics_json_job(const struct engine *e, const struct job *j, struct buf *b)
{
    char h[JOB_HANDLE_BUF];
    job_handle(e, j, h);
    json_t *doc = json_pack(
        "{sssososssssIsbsIsIsI}", "handle", h, "function", jtext(j->func->name, j->func->name_len),
        "unique", jtext(job_unique(j), j->unique_len), "priority",
        prio_names[j->prio < PRIO_SNAPSHOT ? j->prio : PRIO_NORMAL], "state", state_name(j),
        "retries", (json_int_t)j->retries, "background", (j->flags & JOB_BACKGROUND) != 0,
        "clients", (json_int_t)job_nwaiters(j), "payload_bytes", (json_int_t)job_payload_len(j),
        "memory_bytes", (json_int_t)job_size(j));
    struct out o = out_init(b, 0);
    dump(&o, doc);
    return o.err;
}

/* ------------------------------------------------------------ Prometheus */

static void help(struct out *o, const char *name, const char *type, const char *text)
{
    putf(o, "# HELP %s %s\n# TYPE %s %s\n", name, text, name, type);
}

/* func_sample appends one sample "name{function="f"[,extra]} value". */
static void func_sample(struct out *o, const char *name, const struct func *f, const char *extra,
                        const char *value)
{
    putf(o, "%s{function=\"", name);
    put_label(o, f->name, f->name_len);
    putf(o, "\"%s} %s\n", extra, value);
}

static void func_u(struct out *o, const char *name, const struct func *f, const char *extra,
                   uint64_t v)
{
    char num[32];
    snprintf(num, sizeof num, "%llu", (unsigned long long)v);
    func_sample(o, name, f, extra, num);
}

/* prom_hist appends the samples of one histogram: cumulative _bucket lines, _sum, _count. f is
 * the function of its label, or NULL for none. */
static void prom_hist(struct out *o, const char *name, const struct func *f, const struct hist *h,
                      const double *bounds)
{
    char metric[96], extra[48], num[48];
    uint64_t cum = 0;
    snprintf(metric, sizeof metric, "%s_bucket", name);
    for (size_t i = 0; i <= HIST_BOUNDS; i++) {
        cum += h->count[i];
        if (i < HIST_BOUNDS)
            snprintf(extra, sizeof extra, "%sle=\"%.10g\"", f ? "," : "", bounds[i]);
        else
            snprintf(extra, sizeof extra, "%sle=\"+Inf\"", f ? "," : "");
        snprintf(num, sizeof num, "%llu", (unsigned long long)cum);
        if (f)
            func_sample(o, metric, f, extra, num);
        else
            putf(o, "%s{%s} %s\n", metric, extra, num);
    }
    snprintf(metric, sizeof metric, "%s_sum", name);
    snprintf(num, sizeof num, "%.9g", h->sum);
    if (f)
        func_sample(o, metric, f, "", num);
    else
        putf(o, "%s %s\n", metric, num);
    snprintf(metric, sizeof metric, "%s_count", name);
    snprintf(num, sizeof num, "%llu", (unsigned long long)cum);
    if (f)
        func_sample(o, metric, f, "", num);
    else
        putf(o, "%s %s\n", metric, num);
}

static void gauge(struct out *o, const char *name, const char *text, double v)
{
    help(o, name, "gauge", text);
    putf(o, "%s %.17g\n", name, v);
}

static void counter(struct out *o, const char *name, const char *text, uint64_t v)
{
    help(o, name, "counter", text);
    putf(o, "%s %llu\n", name, (unsigned long long)v);
}

/* FOR_FUNCS walks the functions (not the listing markers) of e as f, until the out o fails. */
#define FOR_FUNCS(e, f)                                                                      \
    for (const struct list_node *n_ = (e)->func_list.next; n_ != &(e)->func_list && !o.err;  \
         n_ = n_->next)                                                                       \
        for (const struct func *f = func_of_anode(n_); f != NULL && !f->marker; f = NULL)

int metrics_prometheus(const struct engine *e, double now, struct buf *b, size_t max)
{
    struct out o = out_init(b, max);
    struct engine_snapshot s;
    engine_stats_get(e, &s);
    const struct engine_stats *st = &s.stats;

    /* the queue state, as the gearman exporters name it */
    gauge(&o, "gearman_up", "1: the server answered.", 1);
    help(&o, "gearman_jobs", "gauge", "Jobs of the function queued or running (status TOTAL).");
    FOR_FUNCS(e, f) func_u(&o, "gearman_jobs", f, "", func_total(f));
    help(&o, "gearman_jobs_running", "gauge", "Jobs of the function running on workers.");
    FOR_FUNCS(e, f) func_u(&o, "gearman_jobs_running", f, "", f->running);
    help(&o, "gearman_jobs_waiting", "gauge", "Jobs of the function not running (queued or scheduled).");
    FOR_FUNCS(e, f) func_u(&o, "gearman_jobs_waiting", f, "", func_total(f) - f->running);
    help(&o, "gearman_workers", "gauge", "Workers that can do the function.");
    FOR_FUNCS(e, f) func_u(&o, "gearman_workers", f, "", f->nworkers);

    /* per function */
    help(&o, "spur_function_jobs_queued", "gauge", "Jobs of the function not running, by priority.");
    FOR_FUNCS(e, f) for (int p = 0; p < PRIO_SNAPSHOT; p++) {
        char extra[32];
        snprintf(extra, sizeof extra, ",priority=\"%s\"", prio_names[p]);
        func_u(&o, "spur_function_jobs_queued", f, extra, f->queued[p]);
    }
    help(&o, "spur_function_jobs_total", "counter",
         "Job events of the function (see OBSERVABILITY.md), while the function exists.");
    FOR_FUNCS(e, f) for (int ev = 0; ev < JOB_EVENTS; ev++) {
        char extra[48];
        snprintf(extra, sizeof extra, ",event=\"%s\"", event_names[ev]);
        func_u(&o, "spur_function_jobs_total", f, extra, f->events[ev]);
    }
    help(&o, "spur_job_queue_wait_seconds", "histogram",
         "Seconds a job of the function waited ready before a worker took it.");
    FOR_FUNCS(e, f) prom_hist(&o, "spur_job_queue_wait_seconds", f, &f->wait, hist_seconds);
    help(&o, "spur_job_run_seconds", "histogram",
         "Seconds from assignment to the worker's WORK_COMPLETE, WORK_FAIL or WORK_EXCEPTION.");
    FOR_FUNCS(e, f) prom_hist(&o, "spur_job_run_seconds", f, &f->run, hist_seconds);

    /* the server */
    gauge(&o, "spur_start_time_seconds", "Unix time the server started.", s.started);
    gauge(&o, "spur_uptime_seconds", "Seconds since the server started.", now - s.started);
    help(&o, "spur_connections_open", "gauge",
         "Open connections, by what they did (one may be several kinds; all: every one).");
    for (int k = 0; k < PEER_KIND_NONE; k++)
        putf(&o, "spur_connections_open{kind=\"%s\"} %zu\n", kind_names[k], s.conn_now[k]);
    putf(&o, "spur_connections_open{kind=\"all\"} %zu\n", s.peers);
    help(&o, "spur_connections_total", "counter",
         "Connections that acted as each kind (none: closed having done nothing).");
    for (int k = 0; k < PEER_KINDS; k++)
        putf(&o, "spur_connections_total{kind=\"%s\"} %llu\n", kind_names[k],
             (unsigned long long)st->conn_kind[k]);
    putf(&o, "spur_connections_total{kind=\"all\"} %llu\n", (unsigned long long)st->connections);
    help(&o, "spur_connections_rejected_total", "counter",
         "Connections closed by the server (bad input, output or memory limits), by kind.");
    for (int k = 0; k < PEER_KINDS; k++)
        putf(&o, "spur_connections_rejected_total{kind=\"%s\"} %llu\n", kind_names[k],
             (unsigned long long)st->conn_rejected[k]);
    counter(&o, "spur_accept_errors_total", "Failed accepts (EMFILE...).", st->accept_errors);
    help(&o, "spur_tls_handshakes_total", "counter",
         "TLS handshakes, by result (done, failed, timeout).");
    putf(&o, "spur_tls_handshakes_total{result=\"done\"} %llu\n",
         (unsigned long long)st->tls_handshakes);
    putf(&o, "spur_tls_handshakes_total{result=\"failed\"} %llu\n",
         (unsigned long long)st->tls_handshake_failures);
    putf(&o, "spur_tls_handshakes_total{result=\"timeout\"} %llu\n",
         (unsigned long long)st->tls_handshake_timeouts);
    counter(&o, "spur_http_request_timeouts_total",
            "HTTP connections closed because a request was not in within --http-request-timeout.",
            st->http_request_timeouts);
    counter(&o, "spur_connections_shed_total",
            "Connections closed because all buffers passed --max-buffer-memory.", st->shed);
    help(&o, "spur_packets_received_total", "counter", "Requests handled, by protocol.");
    putf(&o, "spur_packets_received_total{protocol=\"binary\"} %llu\n",
         (unsigned long long)st->packets);
    putf(&o, "spur_packets_received_total{protocol=\"text\"} %llu\n",
         (unsigned long long)st->lines);
    counter(&o, "spur_packets_sent_total", "Binary packets queued to connections.",
            st->packets_out);
    counter(&o, "spur_received_bytes_total", "Bytes read from connections.", st->bytes_in);
    counter(&o, "spur_sent_bytes_total", "Bytes written to connections.", st->bytes_out);
    counter(&o, "spur_status_coalesced_total",
            "WORK_STATUS packets replaced unsent by a newer one.", st->status_coalesced);
    help(&o, "spur_protocol_errors_total", "counter", "Malformed input, by kind.");
    for (int k = 0; k < PERR_KINDS; k++)
        putf(&o, "spur_protocol_errors_total{kind=\"%s\"} %llu\n", perr_names[k],
             (unsigned long long)st->protocol_error[k]);
    help(&o, "spur_jobs_total", "counter", "Job events of every function, by priority.");
    for (int ev = 0; ev < JOB_EVENTS; ev++)
        for (int p = 0; p < PRIO_SNAPSHOT; p++)
            putf(&o, "spur_jobs_total{event=\"%s\",priority=\"%s\"} %llu\n", event_names[ev],
                 prio_names[p], (unsigned long long)st->jobs[ev][p]);
    gauge(&o, "spur_jobs_live", "Live jobs, in any state.", (double)s.jobs);
    gauge(&o, "spur_jobs_running", "Jobs running on workers.", (double)s.running);
    help(&o, "spur_jobs_queued", "gauge", "Jobs not running (queued, scheduled, storing), by priority.");
    for (int p = 0; p < PRIO_SNAPSHOT; p++)
        putf(&o, "spur_jobs_queued{priority=\"%s\"} %llu\n", prio_names[p],
             (unsigned long long)s.queued[p]);
    gauge(&o, "spur_job_memory_bytes", "Bytes allocated for live jobs and their data.",
          (double)s.job_bytes);
    gauge(&o, "spur_functions", "Functions known.", (double)s.functions);
    counter(&o, "spur_functions_evicted_total",
            "Unused functions forgotten to make room past --max-functions.",
            st->functions_evicted);
    gauge(&o, "spur_workers", "Connections that sent a worker packet.", (double)s.workers);
    gauge(&o, "spur_held_grabs", "GRABs waiting for a job (--grab-wait).", (double)s.held);
    gauge(&o, "spur_buffered_bytes", "Bytes held by all connections' buffers.",
          (double)s.buffered);
    gauge(&o, "spur_store_enabled", "1 with a durable store (--store).", e->store_mgr != NULL);
    help(&o, "spur_store_commits_total", "counter", "Store batches written, by result.");
    putf(&o, "spur_store_commits_total{result=\"ok\"} %llu\n",
         (unsigned long long)st->store_commits);
    putf(&o, "spur_store_commits_total{result=\"failed\"} %llu\n",
         (unsigned long long)st->store_commit_failures);
    help(&o, "spur_store_batch_operations", "histogram", "Adds and deletions per store batch.");
    prom_hist(&o, "spur_store_batch_operations", NULL, &st->store_batch_ops, hist_sizes);
    help(&o, "spur_store_commit_seconds", "histogram",
         "Seconds from handing a batch to the committer to its durable answer.");
    prom_hist(&o, "spur_store_commit_seconds", NULL, &st->store_commit_seconds, hist_seconds);
    counter(&o, "spur_store_replayed_jobs_total", "Jobs restored from the store at start-up.",
            st->store_replayed);
    counter(&o, "spur_retries_total", "Failed background jobs deferred to a retry (--retry).",
            st->retries);
    gauge(&o, "spur_failed_jobs", "Jobs in the dead-letter list (show failed jobs).",
          (double)jobx_nfailed(e));
    counter(&o, "spur_failed_dropped_total",
            "Dead-letter jobs dropped as the oldest past --max-failed-jobs.", st->failed_dropped);
    gauge(&o, "spur_waiting_jobs", "Jobs waiting for the jobs they depend on (submit --after).",
          (double)jobx_nwaiting(e));
    help(&o, "spur_permission_denied_total", "counter",
         "Requests refused by --admin-allow, --admin-read or --policy, by what was refused.");
    for (int k = 0; k < DENIED_KINDS; k++)
        putf(&o, "spur_permission_denied_total{what=\"%s\"} %llu\n", denied_names[k],
             (unsigned long long)st->permission_denied[k]);
    gauge(&o, "spur_schedules", "Recurring schedules defined.", (double)e->ext.schedules);
    counter(&o, "spur_schedule_fired_total",
            "Schedule firings that submitted a job or joined a live one with their unique.",
            st->schedule_fired);
    counter(&o, "spur_schedule_coalesced_total",
            "Schedule firings that joined a live job with their unique (no new job).",
            st->schedule_coalesced);
    counter(&o, "spur_schedule_refused_total",
            "Schedule firings refused (maxqueue, functions, memory, store).",
            st->schedule_refused);
    return o.err;
}
