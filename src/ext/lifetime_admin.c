/* SPDX-License-Identifier: BSD-3-Clause */
/* lifetime_admin: the admin commands and counters of job lifetimes (lifetime_admin.h). */
#include "lifetime_admin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "engine.h"
#include "lifetime.h"
#include "metrics.h"
#include "peer.h"
#include "proto_admin.h"

static void reply(struct peer *p, const char *s) { peer_write(p, s, strlen(s)); }

/* number parses token t as a whole number in 0..max into *v. Returns 0 or -1. */
static int number(const struct pa_token *t, uint32_t max, uint32_t *v)
{
    uint64_t x = 0;
    if (t->len == 0 || t->len > 10)
        return -1;
    for (size_t i = 0; i < t->len; i++) {
        if (t->ptr[i] < '0' || t->ptr[i] > '9')
            return -1;
        x = x * 10 + (uint64_t)(t->ptr[i] - '0');
    }
    if (x > max)
        return -1;
    *v = (uint32_t)x;
    return 0;
}

/* list writes every function's defaults: "FUNC\tTIMEOUT_MS\tTTL_S\n" rows, then ".\n". */
static void list(struct peer *p)
{
    const struct lifetime *l = lifetime_of(p->eng);
    if (l != NULL) {
        struct hmap_iter it;
        hmap_iter_init(&it, &l->defaults);
        for (const struct life_default *d; (d = hmap_iter_next(&it)) != NULL;) {
            peer_write_name(p, d->name, d->name_len, 0);
            peer_printf(p, "\t%u\t%u\n", d->timeout_ms, d->ttl_s);
        }
    }
    reply(p, ".\n");
}

/* admin_lifetime runs `lifetime FUNC TIMEOUT_MS TTL_S` and `lifetime list`. */
static void admin_lifetime(struct peer *p, const struct pa_token *t, size_t n)
{
    if (n == 2 && pa_token_is(&t[1], "list")) {
        list(p);
        return;
    }
    uint32_t ms, s;
    if (n != 4 || number(&t[2], UINT32_MAX, &ms) != 0 ||
        number(&t[3], LIFETIME_MAX_TTL, &s) != 0) {
        reply(p, "ERR INVALID_ARGUMENTS Usage:+lifetime+FUNC+TIMEOUT_MS+TTL_SECONDS|list\r\n");
        return;
    }
    if (lifetime_of(p->eng) == NULL) {
        reply(p, "ERR UNKNOWN_COMMAND Job+lifetimes+are+not+attached\r\n");
        return;
    }
    size_t fl;
    char *fn = admin_name_arg(p, &t[1], &fl, ADMIN_NAME_TOO_LONG);
    if (fn == NULL)
        return;
    int rc = lifetime_default_set(p->eng, fn, fl, ms, s);
    free(fn);
    if (rc == -2)
        reply(p, "ERR TOO_MANY_DEFAULTS At+most+10000+functions+with+lifetime+defaults\r\n");
    else if (rc != 0)
        reply(p, "ERR MEMORY_ALLOCATION_FAILURE Out+of+memory\r\n");
    else
        reply(p, "OK\r\n");
}

static const struct admin_cmd lifetime_admin_cmds[] = {
    {"lifetime", ADM_CHANGES, admin_lifetime, NULL},
    {"lifetime list", ADM_EXACT, admin_lifetime, NULL}, /* only reads */
    {NULL, 0, NULL, NULL},
};

int lifetime_admin_register(struct engine *e) { return admin_register(e, lifetime_admin_cmds); }

/* rows: after the retry rows in every output. */
static const struct metrics_row rows[] = {
    {.text = "job_timeouts_total", .json = "lifetime.job_timeouts_total",
     .prom = "spur_job_timeouts_total",
     .help = "Running jobs failed at their own timeout (job-timeout, --job-timeout).",
     .kind = METRICS_COUNTER, METRICS_FIELD(stats.job_timeouts), .at = {1180, 620, 530}},
    {.text = "jobs_expired_total", .json = "lifetime.jobs_expired_total",
     .prom = "spur_jobs_expired_total",
     .help = "Queued jobs that no worker started within their time to live.",
     .kind = METRICS_COUNTER, METRICS_FIELD(stats.jobs_expired), .at = {1190, 630, 540}},
};

const struct metrics_table lifetime_counters = {rows, sizeof rows / sizeof rows[0]};
