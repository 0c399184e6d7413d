/* admin: the admin text commands with gearmand's exact replies (see docs/ADMIN.md). */
#include "admin.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "func.h"
#include "job.h"
#include "log.h"
#include "proto_admin.h"

#define ADMIN_MAX_TOKENS 6 /* the most any command takes ("maxqueue F H N L" is 5) */

/* reply queues a C string. */
static void reply(struct peer *p, const char *s) { peer_write(p, s, strlen(s)); }

/* replyf formats one line (at most 1 KiB) and queues it. */
static void replyf(struct peer *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void replyf(struct peer *p, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof buf - 1)
        n = (int)sizeof buf - 1;
    peer_write(p, buf, (size_t)n);
}

/* unknown_command sends gearmand's reply, with the token glued to "command". */
static void unknown_command(struct peer *p, const struct pa_token *tok)
{
    int tl = tok ? (int)(tok->len < 200 ? tok->len : 200) : 0;
    replyf(p, "ERR UNKNOWN_COMMAND Unknown+server+command%.*s\r\n", tl, tok ? tok->ptr : "");
}

static void invalid_arguments(struct peer *p, const char *cmd)
{
    replyf(p, "ERR INVALID_ARGUMENTS An+incomplete+set+of+arguments+was+sent+to+this+command+%s\r\n",
           cmd);
}

void admin_line_too_long(struct peer *p)
{
    reply(p, "ERR LINE_TOO_LONG Line+longer+than+max-line-length\r\n");
}

/* ------------------------------------------------------------ listings */

static void cmd_workers(struct peer *p)
{
    struct engine *e = p->eng;
    struct peer *q = e->peers;
    if (q != NULL) {
        do {
            if (!(q->flags & PEER_CLOSING)) {
                replyf(p, "%d %s %s :", q->fd, q->ip, q->client_id ? q->client_id : "-");
                if (q->worker != NULL)
                    for (struct ability *a = q->worker->abilities; a != NULL; a = a->wnext) {
                        peer_write(p, " ", 1);
                        peer_write(p, a->func->name, a->func->name_len);
                    }
                peer_write(p, "\n", 1);
            }
            q = q->next;
        } while (q != e->peers);
    }
    reply(p, ".\n");
}

static void cmd_status(struct peer *p)
{
    for (struct func *f = p->eng->func_list; f != NULL; f = f->next) {
        peer_write(p, f->name, f->name_len);
        replyf(p, "\t%u\t%u\t%u\n", func_total(f), f->running, f->nworkers);
    }
    reply(p, ".\n");
}

static void cmd_prioritystatus(struct peer *p)
{
    for (struct func *f = p->eng->func_list; f != NULL; f = f->next) {
        peer_write(p, f->name, f->name_len);
        replyf(p, "\t%u\t%u\t%u\t%u\n", f->queued[PRIO_HIGH], f->queued[PRIO_NORMAL],
               f->queued[PRIO_LOW], f->nworkers);
    }
    reply(p, ".\n");
}

/* each_job calls fn for every live job, in handle-number order within each hash bucket. */
static void each_job(struct engine *e, void (*fn)(struct peer *, const struct job *),
                     struct peer *p)
{
    for (size_t i = 0; i < e->jobs_by_id.nbuckets; i++)
        for (struct hnode *n = e->jobs_by_id.buckets[i]; n != NULL; n = n->next)
            fn(p, (const struct job *)((const char *)n - offsetof(struct job, by_id)));
}

static void show_job(struct peer *p, const struct job *j)
{
    char h[80];
    size_t hl = job_handle(p->eng, j, h);
    peer_write(p, h, hl);
    replyf(p, "\t%u\t0\t%u\n", j->retries, (j->flags & JOB_BACKGROUND) ? 1u : 0u);
}

static void show_unique(struct peer *p, const struct job *j)
{
    peer_write(p, job_unique(j), j->unique_len);
    peer_write(p, "\n", 1);
}

static void cmd_show(struct peer *p, const struct pa_token *t, size_t n)
{
    if (n == 2 && pa_token_is(&t[1], "jobs")) {
        each_job(p->eng, show_job, p);
        reply(p, ".\n");
    } else if (n == 3 && pa_token_is(&t[1], "unique") && pa_token_is(&t[2], "jobs")) {
        each_job(p->eng, show_unique, p);
        reply(p, ".\n");
    } else if (n == 1) {
        unknown_command(p, &t[0]);
    } else {
        reply(p, "ERR UNKNOWN_SHOW_ARGUMENTS\r\n");
    }
}

/* ------------------------------------------------------------ changes */

static void cmd_cancel(struct peer *p, const struct pa_token *t, size_t n)
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
    char h[80];
    struct proto_arg a = {h, job_handle(e, j, h)};
    for (struct waiter *w = j->waiters; w != NULL; w = w->jnext)
        peer_send(w->client, CMD_WORK_FAIL, &a, 1);
    if (j->state == JOB_RUNNING) {
        /* the worker finishes it; its results then go nowhere and it is never retried */
        while (j->waiters != NULL)
            job_remove_waiter(j->waiters);
        if ((j->flags & JOB_STORED) && e->store != NULL)
            e->store->done(e->store_ctx, j);
        j->flags &= (uint8_t)~(JOB_STORED | JOB_BACKGROUND);
    } else {
        job_free(e, j);
    }
    reply(p, "OK\r\n");
}

static void cmd_create_function(struct peer *p, const struct pa_token *t, size_t n)
{
    if (n != 3 || !pa_token_is(&t[1], "function")) {
        invalid_arguments(p, "create");
        return;
    }
    if (t[2].len > p->eng->cfg->max_function) {
        reply(p, "ERR ARGUMENT_TOO_LARGE Function+name+too+long\r\n");
        return;
    }
    if (func_get(p->eng, t[2].ptr, t[2].len, 1) == NULL) {
        replyf(p, "ERR CREATE_FUNCTION %.*s\r\n", (int)t[2].len, t[2].ptr);
        return;
    }
    reply(p, "OK\r\n");
}

static void cmd_drop_function(struct peer *p, const struct pa_token *t, size_t n)
{
    if (n != 3 || !pa_token_is(&t[1], "function")) {
        invalid_arguments(p, "drop");
        return;
    }
    struct func *f = func_get(p->eng, t[2].ptr, t[2].len, 0);
    if (f == NULL) {
        reply(p, "ERR function not found\r\n");
        return;
    }
    if (f->nworkers > 0 || func_total(f) > 0) {
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

static void cmd_maxqueue(struct peer *p, const struct pa_token *t, size_t n)
{
    if (n < 2) {
        invalid_arguments(p, "maxqueue");
        return;
    }
    struct func *f = func_get(p->eng, t[1].ptr, t[1].len, 0);
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
    }
    reply(p, "OK\r\n");
}

static void cmd_shutdown(struct peer *p, const struct pa_token *t, size_t n)
{
    struct engine *e = p->eng;
    int graceful = n >= 2 && pa_token_is(&t[1], "graceful");
    if (n > 2 || (n == 2 && !graceful)) {
        reply(p, "ERR UNKNOWN_ARGS Usage:+shutdown+[graceful]\r\n");
        return;
    }
    enum admin_shutdown_policy pol = e->cfg->admin_shutdown;
    if (pol == SHUTDOWN_NONE || (pol == SHUTDOWN_LOCAL && !(p->flags & PEER_LOCAL))) {
        reply(p, "ERR PERMISSION_DENIED Shutdown+is+not+allowed+from+this+connection\r\n");
        log_warn("refused admin shutdown from fd %d (%s)", p->fd, p->ip);
        return;
    }
    reply(p, "OK\r\n");
    log_notice("admin %sshutdown from fd %d (%s)", graceful ? "graceful " : "", p->fd, p->ip);
    e->ops.shutdown(e, graceful);
}

/* ------------------------------------------------------------ dispatch */

void admin_line(struct peer *p, const char *line, size_t len)
{
    struct pa_token tok[ADMIN_MAX_TOKENS];
    size_t n = pa_split(line, len, tok, ADMIN_MAX_TOKENS);
    if (n == 0) {
        unknown_command(p, NULL);
        return;
    }
    if (n > ADMIN_MAX_TOKENS - 1) {
        reply(p, "ERR TOO_MANY_ARGS Too+many+arguments\r\n");
        return;
    }
    const struct pa_token *c = &tok[0];
    if (pa_token_is(c, "workers"))
        cmd_workers(p);
    else if (pa_token_is(c, "status"))
        cmd_status(p);
    else if (pa_token_is(c, "prioritystatus"))
        cmd_prioritystatus(p);
    else if (pa_token_is(c, "maxqueue"))
        cmd_maxqueue(p, tok, n);
    else if (pa_token_is(c, "show"))
        cmd_show(p, tok, n);
    else if (pa_token_is(c, "cancel"))
        cmd_cancel(p, tok, n);
    else if (pa_token_is(c, "create"))
        cmd_create_function(p, tok, n);
    else if (pa_token_is(c, "drop"))
        cmd_drop_function(p, tok, n);
    else if (pa_token_is(c, "shutdown"))
        cmd_shutdown(p, tok, n);
    else if (pa_token_is(c, "version"))
        reply(p, "OK " PACKAGE_VERSION "\n");
    else if (pa_token_is(c, "verbose"))
        replyf(p, "OK %s\n", log_level_name(log_get_level()));
    else if (pa_token_is(c, "getpid"))
        replyf(p, "OK %ld\n", (long)getpid());
    else
        unknown_command(p, c);
}
