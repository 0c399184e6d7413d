/* SPDX-License-Identifier: BSD-3-Clause */
/* jobx_admin: the admin commands of retry policies and the dead-letter list (jobx_admin.h). */
#include "jobx_admin.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "buf.h"
#include "engine.h"
#include "esc.h"
#include "func.h"
#include "job.h"
#include "jobx.h"
#include "jobx_store.h"
#include "proto.h"
#include "submit.h"

static void reply(struct peer *p, const char *s) { peer_write(p, s, strlen(s)); }


#define BAD_NAME_CODE ADMIN_BAD_NAME_CODE

/* find_func returns the function named by token t (escaped form), NULL if none or invalid. */
static struct func *find_func(struct engine *e, const struct pa_token *t)
{
    size_t len;
    char *name = esc_decode_dup(t->ptr, t->len, &len);
    struct func *f = name != NULL ? func_get(e, name, len, 0) : NULL;
    free(name);
    return f;
}

static void usage(struct peer *p)
{
    reply(p, "ERR INVALID_ARGUMENTS Usage:+retry+FUNC+COUNT+BACKOFF+[MAX]|list|job+HANDLE|"
             "job+all+FUNC\r\n");
}

/* token_str copies t into out (cap bytes, NUL-terminated); returns 0, or -1 if too long. */
static int token_str(const struct pa_token *t, char *out, size_t cap)
{
    if (t->len >= cap)
        return -1;
    memcpy(out, t->ptr, t->len);
    out[t->len] = '\0';
    return 0;
}

/* is_number reports whether t starts like a number (a digit or a dot): COUNT, not "job"/"list". */
static int is_number(const struct pa_token *t)
{
    return t->len > 0 && ((t->ptr[0] >= '0' && t->ptr[0] <= '9') || t->ptr[0] == '.');
}

static void retry_list(struct peer *p)
{
    const struct jobx *x = jobx_of(p->eng);
    if (x != NULL) {
        struct hmap_iter it;
        hmap_iter_init(&it, &x->policies);
        for (const struct jobx_policy *pol; (pol = hmap_iter_next(&it)) != NULL;) {
            peer_write_name(p, pol->name, pol->name_len, 0);
            peer_printf(p, "\t%u\t%g\t%g\n", pol->count, pol->backoff, pol->max);
        }
    }
    reply(p, ".\n");
}

static void retry_job(struct peer *p, const struct pa_token *t, size_t n)
{
    struct engine *e = p->eng;
    if (n == 3) {
        struct job *j = job_find_handle(e, t[2].ptr, t[2].len);
        if (j == NULL || j->state != JOB_FAILED) {
            reply(p, "ERR UNKNOWN_JOB\r\n");
            return;
        }
        jobx_retry_job(e, j);
        engine_drain_ready(e);
        reply(p, "OK\r\n");
        return;
    }
    if (n == 4 && pa_token_is(&t[2], "all")) {
        struct func *f = find_func(e, &t[3]);
        size_t k = f != NULL ? jobx_retry_all(e, f) : 0;
        engine_drain_ready(e);
        peer_printf(p, "OK %zu\r\n", k);
        return;
    }
    usage(p);
}

void jobx_admin_retry(struct peer *p, const struct pa_token *t, size_t n)
{
    if (n == 2 && pa_token_is(&t[1], "list")) {
        retry_list(p);
        return;
    }
    if (n >= 3 && pa_token_is(&t[1], "job") && !is_number(&t[2])) {
        retry_job(p, t, n);
        return;
    }
    if (n != 4 && n != 5) {
        usage(p);
        return;
    }
    size_t fl;
    char *fn = admin_name_arg(p, &t[1], &fl, ADMIN_BAD_NAME); /* too long: as a submit says */
    if (fn == NULL)
        return;
    char cs[32], bs[32], ms[32];
    uint32_t count;
    double backoff, max;
    snprintf(ms, sizeof ms, "%g", JOBX_DEFAULT_MAX);
    if (token_str(&t[2], cs, sizeof cs) != 0 || token_str(&t[3], bs, sizeof bs) != 0 ||
        (n == 5 && token_str(&t[4], ms, sizeof ms) != 0) ||
        config_parse_retry_numbers(cs, bs, ms, &count, &backoff, &max) != 0) {
        reply(p, "ERR INVALID_ARGUMENTS COUNT+0..1000,+0+<=+BACKOFF+<=+MAX+<=+2592000+seconds\r\n");
        free(fn);
        return;
    }
    int rc = jobx_policy_set(p->eng, fn, fl, count, backoff, max);
    if (rc == 0 && jobx_store_policy(p->eng, fn, fl) != 0)
        rc = -1;
    free(fn);
    if (rc == -2)
        reply(p, "ERR TOO_MANY_POLICIES At+most+10000+retry+policies\r\n");
    else if (rc != 0)
        reply(p, "ERR MEMORY_ALLOCATION_FAILURE Out+of+memory\r\n");
    else
        reply(p, "OK\r\n");
}

/* put_escaped appends s[0..len) to b with backslash, tab, newline and other control bytes
 * written as \xHH, so a row stays one line of tab-separated fields. */
static int put_escaped(struct buf *b, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f || c == '\\') {
            char hx[5];
            snprintf(hx, sizeof hx, "\\x%02x", c);
            if (buf_append(b, hx, 4) != 0)
                return -1;
        } else if (buf_append(b, &s[i], 1) != 0) {
            return -1;
        }
    }
    return 0;
}

void jobx_admin_show_failed(struct peer *p, const struct pa_token *t, size_t n)
{
    struct engine *e = p->eng;
    const struct jobx *x = jobx_of(e);
    const struct func *f = NULL;
    if (n > 4) {
        reply(p, "ERR UNKNOWN_SHOW_ARGUMENTS\r\n");
        return;
    }
    if (n == 4 && (f = find_func(e, &t[3])) == NULL) {
        reply(p, ".\n");
        return;
    }
    struct buf b = {0};
    int rc = 0;
    if (x != NULL)
        list_for_each(it, &x->failed) {
            const struct jobx_rec *r = container_of(it, struct jobx_rec, fnode);
            const struct job *j = r->job;
            if (f != NULL && j->func != f)
                continue;
            char h[JOB_HANDLE_BUF], line[160], eb[JOBX_ERROR_BUF];
            size_t hl = job_handle(e, j, h), el;
            const char *et = jobx_error(e, r, eb, &el);
            int ll = snprintf(line, sizeof line, "\t%u\t%.3f\t%.3f\t", r->attempts,
                              r->first_failed, r->last_failed);
            rc = buf_append(&b, h, hl) || buf_append(&b, "\t", 1) ||
                 esc_append(&b, j->func->name, j->func->name_len, 0) || buf_append(&b, "\t", 1) ||
                 put_escaped(&b, job_unique(j), j->unique_len) ||
                 buf_append(&b, line, (size_t)ll) || put_escaped(&b, et, el) ||
                 buf_append(&b, "\n", 1);
            if (rc != 0 || buf_len(&b) > e->cfg->max_output)
                break;
        }
    if (rc == 0 && buf_len(&b) > e->cfg->max_output)
        reply(p, "ERR REPLY_TOO_LARGE The+reply+would+pass+max-output-buffer\r\n");
    else if (rc != 0)
        reply(p, "ERR MEMORY_ALLOCATION_FAILURE Out+of+memory\r\n");
    else {
        if (buf_len(&b) > 0) /* (an empty buf has no data pointer) */
            peer_write(p, buf_head(&b), buf_len(&b));
        reply(p, ".\n");
    }
    buf_free(&b);
}

void jobx_admin_purge(struct peer *p, const struct pa_token *t, size_t n)
{
    struct engine *e = p->eng;
    if ((n != 2 && n != 3) || !pa_token_is(&t[1], "failed")) {
        reply(p, "ERR INVALID_ARGUMENTS Usage:+purge+failed+[FUNC]\r\n");
        return;
    }
    size_t k = 0;
    if (n == 2) {
        k = jobx_purge(e, NULL);
    } else {
        struct func *f = find_func(e, &t[2]);
        if (f != NULL)
            k = jobx_purge(e, f);
    }
    peer_printf(p, "OK %zu\r\n", k);
}

/* jobx_admin_cmds are the admin commands of retry policies, the dead-letter list and submit
 * --after. */
static const struct admin_cmd jobx_admin_cmds[] = {
    {"retry", ADM_CHANGES, jobx_admin_retry, NULL},
    {"retry list", ADM_EXACT, jobx_admin_retry, NULL}, /* only reads (`retry list x` changes) */
    {"purge", ADM_CHANGES, jobx_admin_purge, NULL},
    {"submit", ADM_CHANGES | ADM_RAW, NULL, jobx_admin_submit},
    {"show failed jobs", 0, jobx_admin_show_failed, NULL},
    {NULL, 0, NULL, NULL},
};

int jobx_admin_register(struct engine *e) { return admin_register(e, jobx_admin_cmds); }

/* ------------------------------------------------------------ submit [--after] */

/* word returns the next space-separated word of s[*i..len) and moves *i past it and one space. */
static const char *word(const char *s, size_t len, size_t *i, size_t *wl)
{
    size_t a = *i;
    while (*i < len && s[*i] != ' ')
        (*i)++;
    *wl = *i - a;
    if (*i < len)
        (*i)++;
    return s + a;
}

void jobx_admin_submit(struct peer *p, const char *line, size_t len)
{
    struct engine *e = p->eng;
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        len--;
    size_t i = 0, fl, wl;
    word(line, len, &i, &wl); /* "submit" */
    const char *fn = word(line, len, &i, &fl);
    const char *after = NULL, *uq = "";
    size_t al = 0, ul = 0;
    enum job_prio prio = PRIO_NORMAL;
    while (i < len) {
        size_t save = i;
        const char *w = word(line, len, &i, &wl);
        if (wl == 2 && memcmp(w, "--", 2) == 0)
            break;
        if (wl == 7 && memcmp(w, "--after", 7) == 0 && i < len) {
            after = word(line, len, &i, &al);
        } else if (wl == 8 && memcmp(w, "--unique", 8) == 0 && i < len) {
            uq = word(line, len, &i, &ul);
        } else if (wl == 10 && memcmp(w, "--priority", 10) == 0 && i < len) {
            const char *v = word(line, len, &i, &wl);
            if (wl == 4 && memcmp(v, "high", 4) == 0)
                prio = PRIO_HIGH;
            else if (wl == 3 && memcmp(v, "low", 3) == 0)
                prio = PRIO_LOW;
            else if (!(wl == 6 && memcmp(v, "normal", 6) == 0)) {
                reply(p, "ERR INVALID_ARGUMENTS --priority+wants+high,+normal+or+low\r\n");
                return;
            }
        } else {
            i = save; /* the payload starts here */
            break;
        }
    }
    const char *data = line + i;
    size_t dl = len - i;
    if (fl == 0 || fl > ESC_MAX(e->cfg->max_function)) {
        reply(p, "ERR INVALID_ARGUMENTS Usage:+submit+FUNC+[--after+H1,H2]+[--unique+U]+"
                 "[--priority+P]+PAYLOAD\r\n");
        return;
    }
    if (ul > PROTO_UNIQUE_MAX) {
        reply(p, "ERR INVALID_ARGUMENTS Unique+longer+than+64+bytes\r\n");
        return;
    }
    if (e->replaying) {
        reply(p, "ERR BUSY The+stored+jobs+are+being+loaded\r\n");
        return;
    }
    uint64_t ids[JOBX_MAX_AFTER];
    const char *bad = NULL;
    int n = after != NULL ? jobx_parse_after(e, after, al, ids, &bad) : 0;
    if (n < 0) {
        peer_printf(p, "ERR %s\r\n", bad);
        return;
    }
    /* the name in the escaped form the listings print (%09 is a TAB) */
    char *name = esc_decode_dup(fn, fl, &fl);
    if (name == NULL) {
        reply(p, "ERR MEMORY_ALLOCATION_FAILURE Out+of+memory\r\n");
        return;
    }
    uint64_t id;
    const char *why = NULL;
    /* with a store, the reply waits until the job is durable, as a binary JOB_CREATED does */
    int rc = jobx_submit(e, name, fl, uq, ul, prio, data, dl, ids, (size_t)n,
                         peer_ack_owner(p, 1), &id, &why);
    free(name);
    if (rc < 0) {
        peer_printf(p, "ERR %s\r\n", why);
        return;
    }
    if (rc == 0) {
        char h[JOB_HANDLE_BUF];
        peer_printf(p, "OK %.*s\r\n", (int)job_handle_id(e, id, h), h);
    }
    engine_drain_ready(e); /* a sleeping worker of the function hears of its job */
}

int jobx_submit(struct engine *e, const char *fn, size_t fl, const char *uq, size_t ul,
                enum job_prio prio, const void *data, size_t dl, const uint64_t *ids, size_t n,
                void *owner, uint64_t *id, const char **why)
{
    if (fl > e->cfg->max_function) {
        *why = "ARGUMENT_TOO_LARGE Function+name+too+long";
        return -1;
    }
    if (fl == 0) {
        *why = "INVALID_ARGUMENT Function+name+empty";
        return -1;
    }
    if (n > 0 && jobx_attach(e) != 0) { /* waiting is this module's: its hooks are set */
        *why = "MEMORY_ALLOCATION_FAILURE Out+of+memory";
        return -1;
    }
    struct submit_req rq = {.func = fn, .func_len = fl, .unique = uq, .unique_len = ul,
                            .data = data, .data_len = dl, .prio = prio, .background = 1,
                            .after = ids, .nafter = n, .owner = owner, .log = "created"};
    struct submit_out so;
    enum submit_result r = job_submit(e, &rq, &so);
    *id = so.job != NULL ? so.job->id : so.id;
    switch (r) {
    case SUBMIT_CREATED:
    case SUBMIT_JOINED:
    case SUBMIT_BROADCAST: /* fanned out: the broadcast's own handle */
        return 0;
    case SUBMIT_HELD:
        return 1;
    case SUBMIT_BAD_NAME:
        *why = BAD_NAME_CODE;
        break;
    case SUBMIT_QUEUE_FULL:
        *why = "QUEUE_FULL Job+queue+is+full";
        break;
    case SUBMIT_TOO_MANY_FUNCTIONS:
        *why = "MEMORY_ALLOCATION_FAILURE Too+many+functions+or+no+memory";
        break;
    case SUBMIT_STORE_ERROR:
        *why = "QUEUE_ERROR Could+not+store+the+job";
        break;
    case SUBMIT_WAIT_REFUSED:
    case SUBMIT_BROADCAST_REFUSED:
        *why = so.why;
        break;
    case SUBMIT_NO_MEMORY:
        *why = "MEMORY_ALLOCATION_FAILURE Out+of+memory";
        break;
    }
    return -1;
}

int jobx_parse_after(struct engine *e, const char *list, size_t len, uint64_t *ids,
                     const char **why)
{
    int n = 0;
    for (size_t i = 0; i < len;) {
        size_t a = i;
        while (i < len && list[i] != ',' && list[i] != ' ')
            i++;
        size_t hl = i - a;
        i++;
        if (hl == 0)
            continue;
        struct job *j = job_find_handle(e, list + a, hl);
        if (j == NULL) {
            *why = "UNKNOWN_JOB No+such+job+after+--after";
            return -1;
        }
        if (j->state == JOB_FAILED) {
            *why = "DEPENDENCY_FAILED A+job+after+--after+is+in+the+dead-letter+list";
            return -1;
        }
        if (n == JOBX_MAX_AFTER) {
            *why = "TOO_MANY_DEPENDENCIES At+most+64+jobs+after+--after";
            return -1;
        }
        ids[n++] = j->id;
    }
    return n;
}
