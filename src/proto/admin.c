/* SPDX-License-Identifier: BSD-3-Clause */
/* admin: the admin text commands with gearmand's exact replies (see docs/ADMIN.md). */
#include "admin.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "acl.h"
#include "engine.h"
#include "esc.h"
#include "func.h"
#include "job.h"
#include "log.h"
#include "metrics.h"
#include "proto_admin.h"
#include "worker.h"

#define ADMIN_MAX_TOKENS 6 /* the most any command takes ("maxqueue F H N L" is 5) */
_Static_assert(ADMIN_MAX_TOKENS >= ADMIN_CMD_WORDS, "admin_find looks at a name's words");

/* reply queues a C string. */
static void reply(struct peer *p, const char *s) { peer_write(p, s, strlen(s)); }


/* unknown_command sends gearmand's reply, with the token glued to "command". */
static void unknown_command(struct peer *p, const struct pa_token *tok)
{
    int tl = tok ? (int)(tok->len < 200 ? tok->len : 200) : 0;
    peer_printf(p, "ERR UNKNOWN_COMMAND Unknown+server+command%.*s\r\n", tl, tok ? tok->ptr : "");
}

static void invalid_arguments(struct peer *p, const char *cmd)
{
    peer_printf(p, "ERR INVALID_ARGUMENTS An+incomplete+set+of+arguments+was+sent+to+this+command+%s\r\n",
           cmd);
}

void admin_line_too_long(struct peer *p)
{
    reply(p, "ERR LINE_TOO_LONG Line+longer+than+max-line-length\r\n");
}

/* ------------------------------------------------------------ listings */

/* A listing ('workers', 'status', 'prioritystatus', 'show jobs', 'show unique jobs') is written
 * a slice per loop iteration so a long one never stalls other connections. It keeps no copy of
 * the jobs, functions or peers: a cursor in the engine's table of jobs (the last handle number
 * listed: idtab_next, in handle-number order) or a marker node in its function list (in
 * creation order) holds its place and moves on as lines are written, so jobs and functions
 * freed meanwhile are simply not met. A 'workers' listing holds its place as
 * a pointer to the next peer to list (counted in that peer's cursors); a peer that goes moves
 * the pointers at it on to the peer after it (admin_peer_gone), so a freed peer is never met.
 * Jobs submitted, functions created and peers connected after the request are left out, as a
 * snapshot would. */
enum listing_kind { LIST_WORKERS, LIST_STATUS, LIST_PRIORITY, LIST_JOBS, LIST_UNIQUE,
                    LIST_JOBS_JSON, LIST_EXT /* a feature's (struct admin_job_listing) */ };

/* job_listing reports whether a listing of kind walks the jobs (a cursor in engine->jobs). */
static int job_listing(enum listing_kind kind)
{
    return kind == LIST_JOBS || kind == LIST_UNIQUE || kind == LIST_JOBS_JSON || kind == LIST_EXT;
}

struct admin_listing {
    enum listing_kind kind; /* what is listed */
    uint64_t limit;         /* jobs with a lower handle number / functions with a lower seq /
                               peers with a lower seq */
    struct idtab_cursor jcur; /* the place in engine->jobs: the last job listed (jobs
                               listings) */
    struct func *fmark;     /* the place in engine->func_list (function listings) */
    struct peer *pnext;     /* the next peer of a workers listing, NULL at its end */
    struct list_node wnode; /* engine->worker_listings (workers listings) */
    const struct admin_job_listing *ext; /* the lines of a LIST_EXT listing (borrowed) */
    uint64_t rows;          /* rows written (JSON: a comma before each but the first; LIST_EXT:
                               job lines) */
    uint64_t records;       /* LIST_EXT: what its head counted */
};

/* set_pnext moves a workers listing's place to q (NULL: the end). */
static void set_pnext(struct admin_listing *l, struct peer *q)
{
    if (l->pnext != NULL)
        l->pnext->cursors--;
    l->pnext = q;
    if (q != NULL)
        q->cursors++;
}

/* peer_after returns the peer after q in the engine's list, or NULL when q is the last. */
static struct peer *peer_after(const struct engine *e, const struct peer *q)
{
    return peer_of(list_next(&e->peers, &q->node));
}

static void listing_free(struct peer *p)
{
    struct engine *e = p->eng;
    struct admin_listing *l = p->listing;
    if (l == NULL)
        return;
    if (l->kind == LIST_WORKERS) {
        set_pnext(l, NULL);
        list_del(&l->wnode);
    } else if (job_listing(l->kind)) {
        idtab_cursor_end(&e->jobs, &l->jcur);
    } else {
        func_list_remove(e, l->fmark);
    }
    free(l->fmark);
    free(l);
    p->listing = NULL;
}

/* write_func writes f's row of a status or prioritystatus listing; the name escaped (esc.h) so
 * that no name can end its row or add columns. */
static void write_func(struct peer *p, enum listing_kind kind, const struct func *f)
{
    peer_write_name(p, f->name, f->name_len, 0);
    if (kind == LIST_STATUS)
        peer_printf(p, "\t%u\t%u\t%u\n", func_total(f), f->running, f->nworkers);
    else
        peer_printf(p, "\t%u\t%u\t%u\t%u\n", f->queued[PRIO_HIGH], f->queued[PRIO_NORMAL],
               f->queued[PRIO_LOW], f->nworkers);
}

/* write_job writes j's row of a show jobs, show unique jobs or show jobs json listing. */
static void write_job(struct peer *p, struct admin_listing *l, const struct job *j)
{
    enum listing_kind kind = l->kind;
    if (kind == LIST_EXT) {
        struct buf b = {0};
        if (l->ext->row(p->eng, j, &b) == 0)
            peer_write(p, buf_head(&b), buf_len(&b));
        else
            peer_close(p); /* out of memory: the receiver sees no end line */
        buf_free(&b);
    } else if (kind == LIST_JOBS_JSON) {
        struct buf b = {0};
        if (l->rows > 0)
            buf_append(&b, ",", 1);
        if (metrics_json_job(p->eng, j, &b) == 0)
            peer_write(p, buf_head(&b), buf_len(&b));
        else
            peer_close(p); /* out of memory: a half document must not look whole */
        buf_free(&b);
    } else if (kind == LIST_UNIQUE) {
        if (j->unique_len == 1 && job_unique(j)[0] == '.')
            peer_write(p, "%2E", 3); /* not the listing's end line */
        else
            peer_write_name(p, job_unique(j), j->unique_len, 0); /* one unique, one line */
        peer_write(p, "\n", 1);
    } else {
        char h[JOB_HANDLE_BUF];
        peer_write(p, h, job_handle(p->eng, j, h));
        if (j->state == JOB_FAILED || j->state == JOB_WAITING) /* a 5th column marks jobs
                                                                  beyond Gearman's states */
            peer_printf(p, "\t%u\t0\t%u\t%s\n", j->retries, (j->flags & JOB_BACKGROUND) ? 1u : 0u,
                        j->state == JOB_FAILED ? "failed" : "waiting");
        else
            peer_printf(p, "\t%u\t0\t%u\n", j->retries, (j->flags & JOB_BACKGROUND) ? 1u : 0u);
    }
}

/* write_worker writes q's row of a workers listing: all its functions on one line, separated by
 * spaces, so the client id and the names are escaped with their spaces (esc.h). */
static void write_worker(struct peer *p, const struct peer *q)
{
    peer_printf(p, "%d %s ", q->fd, q->ip);
    if (q->client_id != NULL)
        peer_write_name(p, q->client_id, strlen(q->client_id), ESC_SPACE);
    else
        peer_write(p, "-", 1);
    peer_write(p, " :", 2);
    if (q->worker != NULL)
        list_for_each(n, &q->worker->abilities) {
            const struct ability *a = ability_of_wnode(n);
            peer_write(p, " ", 1);
            peer_write_name(p, a->func->name, a->func->name_len, ESC_SPACE);
        }
    peer_write(p, "\n", 1);
}

/* write_slice moves p's listing on by at most max rows (jobs, or functions and markers),
 * counting them in *used;
 * returns 1 when the listing is finished (its last line written). */
static int write_slice(struct peer *p, int max, int *used)
{
    struct engine *e = p->eng;
    struct admin_listing *l = p->listing;
    int n = 0, done = 0;
    if (l->kind == LIST_WORKERS) {
        struct peer *q = l->pnext;
        while (n < max) {
            if (q == NULL || q->seq >= l->limit) {
                done = 1;
                break;
            }
            if (!(q->flags & PEER_CLOSING))
                write_worker(p, q);
            q = peer_after(e, q);
            n++;
        }
        set_pnext(l, q);
    } else if (job_listing(l->kind)) {
        while (n < max) {
            uint64_t id;
            struct job *next = idtab_next(&e->jobs, &l->jcur, &id);
            if (next == NULL || id >= l->limit) {
                done = 1;
                break;
            }
            if (l->kind != LIST_EXT || l->ext->wanted(next)) {
                write_job(p, l, next);
                l->rows++;
            }
            n++;
            /* a feature's lines may carry payloads: a slice stops once the socket has enough
               to send */
            if (l->kind == LIST_EXT && outq_pending(&p->out) > ADMIN_SLICE_BACKLOG)
                break;
        }
    } else {
        struct func *m = l->fmark, *at = m, *next;
        while (n < max) {
            next = func_list_next(e, at);
            if (next == NULL || (!next->marker && next->seq >= l->limit)) {
                done = 1;
                break;
            }
            if (!next->marker)
                write_func(p, l->kind, next);
            at = next;
            n++;
        }
        if (at != m) {
            func_list_remove(e, m);
            func_list_after(e, m, at);
        }
    }
    *used += n;
    if (!done)
        return 0;
    if (l->kind == LIST_EXT) {
        struct buf b = {0};
        if (l->ext->tail(&b, l->rows, l->records) == 0)
            peer_write(p, buf_head(&b), buf_len(&b));
        else
            peer_close(p);
        buf_free(&b);
    }
    reply(p, l->kind == LIST_JOBS_JSON ? "]}\n" : ".\n");
    return 1;
}

/* ext_start writes the lines a feature's listing has before its first job. */
static void ext_start(struct peer *p, struct admin_listing *l)
{
    struct buf b = {0};
    if (l->ext->head(p->eng, &b, &l->records) != 0)
        peer_close(p); /* out of memory: the receiver sees no end line */
    else if (buf_len(&b) > 0)
        peer_write(p, buf_head(&b), buf_len(&b));
    buf_free(&b);
}

/* start_listing places the listing's marker before the first job or function and writes the
 * first slice; ext: the lines of a LIST_EXT listing (else NULL). */
static void start_listing(struct peer *p, enum listing_kind kind,
                          const struct admin_job_listing *ext)
{
    struct engine *e = p->eng;
    if (p->listing != NULL) {
        reply(p, "ERR BUSY A+listing+is+already+in+progress\r\n");
        return;
    }
    struct admin_listing *l = calloc(1, sizeof *l);
    struct func *fm = NULL;
    int no_fmark = job_listing(kind) || kind == LIST_WORKERS;
    if (l != NULL && !no_fmark && (fm = calloc(1, sizeof *fm)) == NULL) {
        free(l);
        l = NULL;
    }
    if (l == NULL) {
        reply(p, "ERR MEMORY_ALLOCATION_FAILURE Out+of+memory\r\n");
        return;
    }
    l->kind = kind;
    l->ext = ext;
    if (kind == LIST_WORKERS) {
        l->limit = e->peer_seq;
        list_push_front(&e->worker_listings, &l->wnode);
        set_pnext(l, peer_of(list_first(&e->peers)));
    } else if (fm != NULL) {
        fm->marker = 1;
        l->fmark = fm;
        l->limit = e->func_seq;
        func_list_after(e, fm, NULL);
    } else {
        l->limit = e->next_id; /* (jcur zeroed: before the first job) */
    }
    p->listing = l;
    if (kind == LIST_JOBS_JSON)
        reply(p, "{\"jobs\":[");
    if (kind == LIST_EXT)
        ext_start(p, l);
    int used = 0;
    if (write_slice(p, ADMIN_SLICE_ONE, &used)) {
        listing_free(p);
        return;
    }
    list_push_front(&e->listings, &p->listing_node);
}

/* send_rendered queues what a metrics renderer appended to b (rc its result) and frees b. */
static void send_rendered(struct peer *p, int rc, struct buf *b)
{
    if (rc == 0)
        peer_write(p, buf_head(b), buf_len(b));
    else if (rc == METRICS_TOO_LARGE)
        reply(p, "ERR REPLY_TOO_LARGE The+reply+would+pass+max-output-buffer\r\n");
    else
        reply(p, "ERR MEMORY_ALLOCATION_FAILURE Out+of+memory\r\n");
    buf_free(b);
}

/* reply_max is the most a rendered reply may take: what --max-output-buffer would let the
 * connection hold (a larger one would close it), so a huge document is refused before it is
 * built rather than after. */
static size_t reply_max(const struct peer *p) { return p->eng->cfg->max_output; }

/* is_json reports whether the command's only argument is "json" (status json, workers json). */
static int is_json(const struct pa_token *t, size_t n)
{
    return n == 2 && pa_token_is(&t[1], "json");
}

static void adm_workers(struct peer *p, const struct pa_token *t, size_t n)
{
    if (is_json(t, n)) {
        struct buf b = {0};
        send_rendered(p, metrics_json_workers(p->eng, &b, reply_max(p)), &b);
        return;
    }
    start_listing(p, LIST_WORKERS, NULL);
}

static void adm_status(struct peer *p, const struct pa_token *t, size_t n)
{
    if (is_json(t, n)) {
        struct buf b = {0};
        send_rendered(p, metrics_json_status(p->eng, &b, reply_max(p)), &b);
        return;
    }
    start_listing(p, LIST_STATUS, NULL);
}

/* adm_stats: 'stats' (STAT lines), 'stats functions', 'stats json', 'stats reset'. */
static void adm_stats(struct peer *p, const struct pa_token *t, size_t n)
{
    struct engine *e = p->eng;
    struct buf b = {0};
    if (n == 1)
        send_rendered(p, metrics_stats_text(e, engine_now(e), &b, reply_max(p)), &b);
    else if (n == 2 && pa_token_is(&t[1], "functions"))
        send_rendered(p, metrics_stats_functions(e, &b, reply_max(p)), &b);
    else if (n == 2 && pa_token_is(&t[1], "json"))
        send_rendered(p, metrics_json_stats(e, engine_now(e), &b, reply_max(p)), &b);
    else if (n == 2 && pa_token_is(&t[1], "reset")) {
        engine_stats_reset(e);
        log_notice("admin stats reset from fd %d (%s)", p->fd, p->ip);
        reply(p, "RESET\r\n");
    } else
        reply(p, "ERR UNKNOWN_STATS_ARGUMENTS\r\n");
}

/* adm_metrics: the Prometheus text exposition, then a line ".". */
static void adm_metrics(struct peer *p, const struct pa_token *t, size_t n)
{
    (void)t;
    if (n != 1) {
        reply(p, "ERR UNKNOWN_ARGS Usage:+metrics\r\n");
        return;
    }
    struct buf b = {0};
    int rc = metrics_prometheus(p->eng, engine_now(p->eng), &b, reply_max(p) - 2);
    if (rc == 0)
        rc = buf_append(&b, ".\n", 2);
    send_rendered(p, rc, &b);
}

static void adm_prioritystatus(struct peer *p, const struct pa_token *t, size_t n)
{
    (void)t;
    (void)n;
    start_listing(p, LIST_PRIORITY, NULL);
}

void admin_list_jobs(struct peer *p, const struct admin_job_listing *l)
{
    start_listing(p, LIST_EXT, l);
}

/* listing_waits reports whether p's listing must wait for its socket to take what is queued. */
static int listing_waits(const struct peer *p)
{
    return (p->flags & PEER_CLOSING) || outq_pending(&p->out) > ADMIN_SLICE_BACKLOG;
}

void admin_continue(struct engine *e)
{
    /* round-robin: each listing in turn gets a slice of ADMIN_SLICE_ONE rows until this
     * iteration's ADMIN_SLICE rows are used; those served go to the back of the queue */
    int used = 0;
    struct list_node todo, front, back;
    list_node_init(&todo);
    list_node_init(&front);
    list_node_init(&back);
    list_splice_back(&todo, &e->listings); /* listings started by resumed requests gather in
                                              e->listings meanwhile */
    while (!list_empty(&todo)) {
        struct peer *p = container_of(todo.next, struct peer, listing_node);
        list_del(&p->listing_node);
        if (used >= ADMIN_SLICE || listing_waits(p)) {
            list_push_back(&front, &p->listing_node);
            continue;
        }
        if (write_slice(p, ADMIN_SLICE_ONE, &used)) {
            listing_free(p);
            /* requests that arrived during the listing are answered now, in order */
            e->ops.resume(e, p);
        } else {
            list_push_back(&back, &p->listing_node);
        }
    }
    /* the order is: those not served, those served, those started meanwhile */
    list_splice_back(&front, &back);
    list_splice_back(&front, &e->listings);
    list_splice_back(&e->listings, &front);
}

int admin_ready(const struct engine *e)
{
    list_for_each(n, &e->listings)
        if (!listing_waits(container_of(n, const struct peer, listing_node)))
            return 1;
    return 0;
}

void admin_peer_gone(struct peer *p)
{
    if (p->cursors > 0 && list_linked(&p->node))
        list_for_each(n, &p->eng->worker_listings) {
            struct admin_listing *l = container_of(n, struct admin_listing, wnode);
            if (l->pnext == p)
                set_pnext(l, peer_after(p->eng, p));
        }
    if (p->listing == NULL)
        return;
    list_del(&p->listing_node);
    listing_free(p);
}

static void adm_show(struct peer *p, const struct pa_token *t, size_t n)
{
    if (n == 2 && pa_token_is(&t[1], "jobs"))
        start_listing(p, LIST_JOBS, NULL);
    else if (n == 3 && pa_token_is(&t[1], "jobs") && pa_token_is(&t[2], "json"))
        start_listing(p, LIST_JOBS_JSON, NULL);
    else if (n == 3 && pa_token_is(&t[1], "unique") && pa_token_is(&t[2], "jobs"))
        start_listing(p, LIST_UNIQUE, NULL);
    else if (n == 1)
        unknown_command(p, &t[0]);
    else
        reply(p, "ERR UNKNOWN_SHOW_ARGUMENTS\r\n");
}

/* ------------------------------------------------------------ changes */

static void adm_cancel(struct peer *p, const struct pa_token *t, size_t n)
{
    struct engine *e = p->eng;
    if (n < 3) {
        unknown_command(p, &t[0]);
        return;
    }
    if (n > 3 || !pa_token_is(&t[1], "job")) {
        reply(p, "ERR UNKNOWN_ERROR\r\n");
        return;
    }
    struct job *j = job_find_handle(e, t[2].ptr, t[2].len);
    if (j == NULL) {
        reply(p, "ERR UNKNOWN_JOB\r\n");
        return;
    }
    job_cancel(e, j);
    reply(p, "OK\r\n");
}

char *admin_name_arg(struct peer *p, const struct pa_token *t, size_t *len, const char *too_long)
{
    char *name = esc_decode_dup(t->ptr, t->len, len);
    if (name == NULL)
        reply(p, "ERR MEMORY_ALLOCATION_FAILURE Out+of+memory\r\n");
    else if (*len > p->eng->cfg->max_function)
        reply(p, too_long);
    else if (!func_name_ok(name, *len))
        reply(p, ADMIN_BAD_NAME);
    else
        return name;
    free(name);
    return NULL;
}

static void adm_create_function(struct peer *p, const struct pa_token *t, size_t n)
{
    if (n != 3 || !pa_token_is(&t[1], "function")) {
        invalid_arguments(p, "create");
        return;
    }
    size_t len;
    char *name = admin_name_arg(p, &t[2], &len, ADMIN_NAME_TOO_LONG);
    if (name == NULL)
        return;
    struct func *f = func_get(p->eng, name, len, 1);
    free(name);
    if (f == NULL) {
        if (func_full(p->eng)) {
            reply(p, "ERR TOO_MANY_FUNCTIONS Function+limit+reached+(--max-functions)\r\n");
            return;
        }
        peer_printf(p, "ERR CREATE_FUNCTION %.*s\r\n", (int)t[2].len, t[2].ptr);
        return;
    }
    func_release(p->eng, f); /* kept until dropped, or evicted past --max-functions */
    reply(p, "OK\r\n");
}

static void adm_drop_function(struct peer *p, const struct pa_token *t, size_t n)
{
    if (n != 3 || !pa_token_is(&t[1], "function")) {
        invalid_arguments(p, "drop");
        return;
    }
    size_t len;
    char *name = admin_name_arg(p, &t[2], &len, ADMIN_NAME_TOO_LONG);
    if (name == NULL)
        return;
    struct func *f = func_get(p->eng, name, len, 0);
    free(name);
    if (f == NULL) {
        reply(p, "ERR function not found\r\n");
        return;
    }
    if (f->nworkers > 0 || func_total(f) > 0 || f->parked > 0 || f->woken > 0 ||
        f->flow != NULL || f->broadcast) {
        /* (flow control's settings and a broadcast setting go first: `limit FUNC off` and the
         * rest, `broadcast FUNC off`; dropping the function would leave them without it) */
        reply(p, "ERR there are still connected workers or executing clients\r\n");
        return;
    }
    func_drop(p->eng, f);
    reply(p, "OK\r\n");
}

/* parse_limit parses like atoi (leading digits, sign allowed); negative becomes 0. */
static uint32_t parse_limit(const struct pa_token *t)
{
    size_t i = 0;
    int neg = 0;
    if (i < t->len && (t->ptr[i] == '-' || t->ptr[i] == '+'))
        neg = t->ptr[i++] == '-';
    uint64_t v = 0;
    for (; i < t->len && t->ptr[i] >= '0' && t->ptr[i] <= '9'; i++)
        if ((v = v * 10 + (uint64_t)(t->ptr[i] - '0')) > UINT32_MAX)
            v = UINT32_MAX;
    return neg ? 0 : (uint32_t)v;
}

static void adm_maxqueue(struct peer *p, const struct pa_token *t, size_t n)
{
    if (n < 2) {
        invalid_arguments(p, "maxqueue");
        return;
    }
    size_t len;
    char *name = admin_name_arg(p, &t[1], &len, ADMIN_NAME_TOO_LONG);
    if (name == NULL)
        return;
    struct func *f = func_get(p->eng, name, len, 0);
    free(name);
    if (f != NULL) {
        uint32_t v[PRIO_COUNT] = {0, 0, 0};
        if (n == 3) {
            v[0] = v[1] = v[2] = parse_limit(&t[2]);
        } else if (n >= 4) {
            v[0] = parse_limit(&t[2]);
            v[1] = parse_limit(&t[3]);
            v[2] = n >= 5 ? parse_limit(&t[4]) : 0;
        }
        memcpy(f->max_queue, v, sizeof v);
        func_release(p->eng, f); /* no limit left: evictable if nothing else holds it */
    }
    reply(p, "OK\r\n");
}

static void adm_shutdown(struct peer *p, const struct pa_token *t, size_t n)
{
    struct engine *e = p->eng;
    int graceful = n >= 2 && pa_token_is(&t[1], "graceful");
    if (n > 2 || (n == 2 && !graceful)) {
        reply(p, "ERR UNKNOWN_ARGS Usage:+shutdown+[graceful]\r\n");
        return;
    }
    enum admin_shutdown_policy pol = e->cfg->admin_shutdown;
    /* with --admin-allow, its rules (checked in admin_line) decide instead of local/any */
    if (pol == SHUTDOWN_NONE ||
        (pol == SHUTDOWN_LOCAL && !(p->flags & PEER_LOCAL) && !acl_admin_set(e->acl))) {
        reply(p, "ERR PERMISSION_DENIED Shutdown+is+not+allowed+from+this+connection\r\n");
        log_warn("refused admin shutdown from fd %d (%s)", p->fd, p->ip);
        return;
    }
    reply(p, "OK\r\n");
    log_notice("admin %sshutdown from fd %d (%s)", graceful ? "graceful " : "", p->fd, p->ip);
    e->ops.shutdown(e, graceful);
}

/* ------------------------------------------------------------ small replies */

static void adm_version(struct peer *p, const struct pa_token *t, size_t n)
{
    (void)t;
    (void)n;
    reply(p, "OK " PACKAGE_VERSION "\n");
}

static void adm_verbose(struct peer *p, const struct pa_token *t, size_t n)
{
    (void)t;
    (void)n;
    peer_printf(p, "OK %s\n", log_level_name(log_get_level()));
}

static void adm_getpid(struct peer *p, const struct pa_token *t, size_t n)
{
    (void)t;
    (void)n;
    peer_printf(p, "OK %ld\n", (long)getpid());
}

/* ------------------------------------------------------------ the command table */

/* core_cmds are gearmand's admin commands and spurd's own listings. The features add theirs with
 * admin_register where they are attached: jobx_admin.c (retry, purge, submit, show failed jobs),
 * recur.c (schedule), dump.c (dump, load). */
static const struct admin_cmd core_cmds[] = {
    {"workers", 0, adm_workers, NULL},
    {"status", 0, adm_status, NULL},
    {"stats", 0, adm_stats, NULL},
    {"stats reset", ADM_CHANGES, adm_stats, NULL},
    {"metrics", 0, adm_metrics, NULL},
    {"prioritystatus", 0, adm_prioritystatus, NULL},
    {"maxqueue", ADM_CHANGES, adm_maxqueue, NULL},
    {"show", 0, adm_show, NULL},
    {"cancel", ADM_CHANGES, adm_cancel, NULL},
    {"create", ADM_CHANGES, adm_create_function, NULL},
    {"drop", ADM_CHANGES, adm_drop_function, NULL},
    {"shutdown", ADM_CHANGES, adm_shutdown, NULL},
    {"version", 0, adm_version, NULL},
    {"verbose", 0, adm_verbose, NULL},
    {"getpid", 0, adm_getpid, NULL},
    {NULL, 0, NULL, NULL},
};

/* struct cmd_iter walks e's commands: core_cmds, then each registered table. */
struct cmd_iter {
    size_t table;              /* the next registered table to walk */
    const struct admin_cmd *r; /* the row returned last, NULL before the first */
};

/* cmd_next returns the next command of e, or NULL after the last (then it must not be called
 * again). */
static const struct admin_cmd *cmd_next(const struct engine *e, struct cmd_iter *it)
{
    it->r = it->r == NULL ? core_cmds : it->r + 1;
    while (it->r->name == NULL) {
        if (it->table >= e->admin_tables)
            return NULL;
        it->r = e->admin_cmds[it->table++];
    }
    return it->r;
}

const struct admin_cmd *admin_cmd_at(const struct engine *e, size_t i)
{
    struct cmd_iter it = {0, NULL};
    const struct admin_cmd *c;
    while ((c = cmd_next(e, &it)) != NULL && i-- > 0)
        ;
    return c;
}

/* name_ok reports whether name is 1 to ADMIN_CMD_WORDS words of lower-case printable bytes,
 * each at most ADMIN_CMD_WORD_MAX, one space apart. */
static int name_ok(const char *name)
{
    size_t words = 1, wl = 0;
    if (name == NULL || *name == '\0')
        return 0;
    for (const char *s = name; *s != '\0'; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == ' ') {
            if (wl == 0 || s[1] == '\0')
                return 0;
            words++;
            wl = 0;
        } else if (ch < 0x21 || ch > 0x7e || (ch >= 'A' && ch <= 'Z') ||
                   ++wl > ADMIN_CMD_WORD_MAX) {
            return 0;
        }
    }
    return words <= ADMIN_CMD_WORDS;
}

/* row_ok reports whether r is a well-formed row: its name, known flags, and exactly the
 * handler its flags call for. */
static int row_ok(const struct admin_cmd *r)
{
    const unsigned known = ADM_CHANGES | ADM_RAW | ADM_EXACT | ADM_LINE;
    int raw = (r->flags & (ADM_RAW | ADM_LINE)) != 0;
    return name_ok(r->name) && (r->flags & ~known) == 0 &&
           (raw ? r->run_raw != NULL && r->run == NULL : r->run != NULL && r->run_raw == NULL);
}

/* same_cmd reports whether a and b are one command (their name, and both or neither exact). */
static int same_cmd(const struct admin_cmd *a, const struct admin_cmd *b)
{
    return strcmp(a->name, b->name) == 0 && (a->flags & ADM_EXACT) == (b->flags & ADM_EXACT);
}

int admin_register(struct engine *e, const struct admin_cmd *rows)
{
    if (e->admin_tables >= ENGINE_ADMIN_TABLES)
        return -1;
    for (const struct admin_cmd *r = rows; r->name != NULL; r++) {
        if (!row_ok(r))
            return -1;
        for (const struct admin_cmd *q = rows; q != r; q++)
            if (same_cmd(q, r))
                return -1;
        struct cmd_iter it = {0, NULL};
        for (const struct admin_cmd *c; (c = cmd_next(e, &it)) != NULL;)
            if (same_cmd(c, r))
                return -1;
    }
    e->admin_cmds[e->admin_tables++] = rows;
    return 0;
}

/* name_words returns how many words name has when they are the first words of t[0..filled)
 * (ignoring ASCII case), else 0. */
static size_t name_words(const char *name, const struct pa_token *t, size_t filled)
{
    for (size_t w = 0;; w++) {
        const char *sp = strchr(name, ' ');
        size_t wl = sp != NULL ? (size_t)(sp - name) : strlen(name);
        if (w >= filled || t[w].len != wl || strncasecmp(t[w].ptr, name, wl) != 0)
            return 0;
        if (sp == NULL)
            return w + 1;
        name = sp + 1;
    }
}

const struct admin_cmd *admin_find(const struct engine *e, const struct pa_token *t, size_t n)
{
    size_t filled = n < ADMIN_CMD_WORDS ? n : ADMIN_CMD_WORDS, best_words = 0;
    const struct admin_cmd *best = NULL;
    struct cmd_iter it = {0, NULL};
    for (const struct admin_cmd *c; (c = cmd_next(e, &it)) != NULL;) {
        size_t w = name_words(c->name, t, filled);
        if (w == 0 || ((c->flags & ADM_EXACT) && n != w))
            continue;
        if (w > best_words || (w == best_words && (c->flags & ADM_EXACT))) {
            best = c;
            best_words = w;
        }
    }
    return best;
}

/* line_cmd returns the ADM_LINE command the raw line[0..len) is ("NAME REST": the name in any
 * case, a space, REST not empty), or NULL. */
static const struct admin_cmd *line_cmd(const struct engine *e, const char *line, size_t len)
{
    struct cmd_iter it = {0, NULL};
    for (const struct admin_cmd *c; (c = cmd_next(e, &it)) != NULL;) {
        size_t nl = strlen(c->name);
        if ((c->flags & ADM_LINE) && len > nl + 1 && strncasecmp(line, c->name, nl) == 0 &&
            line[nl] == ' ')
            return c;
    }
    return NULL;
}

/* allowed asks the access rules whether p may run c (NULL: an unknown command, which only
 * reads); a refusal is logged under the command's first word ("other" for an unknown one).
 * Returns 1, or 0 after the refusal was queued. */
static int allowed(struct peer *p, const struct admin_cmd *c)
{
    if (p->eng->acl == NULL)
        return 1;
    char what[ADMIN_CMD_WORD_MAX + 1] = "other";
    if (c != NULL) {
        size_t wl = strcspn(c->name, " ");
        wl = wl < ADMIN_CMD_WORD_MAX ? wl : ADMIN_CMD_WORD_MAX;
        memcpy(what, c->name, wl);
        what[wl] = '\0';
    }
    int changes = c != NULL && (c->flags & ADM_CHANGES);
    return acl_admin_check(p->eng->acl, p, changes, what) == 0;
}

void admin_line(struct peer *p, const char *line, size_t len)
{
    const struct admin_cmd *c = line_cmd(p->eng, line, len);
    if (c != NULL) { /* load: the rest of the line is taken whole, not split */
        if (allowed(p, c))
            c->run_raw(p, line, len);
        return;
    }
    struct pa_token tok[ADMIN_MAX_TOKENS];
    size_t n = pa_split(line, len, tok, ADMIN_MAX_TOKENS);
    if (n == 0) {
        unknown_command(p, NULL);
        return;
    }
    c = admin_find(p->eng, tok, n);
    if (n > ADMIN_MAX_TOKENS - 1 && (c == NULL || !(c->flags & ADM_RAW))) {
        reply(p, "ERR TOO_MANY_ARGS Too+many+arguments\r\n");
        return;
    }
    if (!allowed(p, c))
        return;
    if (c == NULL || (c->flags & ADM_LINE)) /* an ADM_LINE command's name alone */
        unknown_command(p, &tok[0]);
    else if (c->flags & ADM_RAW) /* these take the raw line: a payload has spaces */
        c->run_raw(p, line, len);
    else
        c->run(p, tok, n);
}
