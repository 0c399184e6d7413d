/* SPDX-License-Identifier: BSD-3-Clause */
/* broadcast_admin: the admin commands and the counter rows of broadcast functions
 * (broadcast.h). */
#include "broadcast_admin.h"

#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "broadcast.h"
#include "engine.h"
#include "func.h"
#include "metrics.h"
#include "peer.h"
#include "proto_admin.h"
#include "submit.h"

static void reply(struct peer *p, const char *s) { peer_write(p, s, strlen(s)); }

/* list writes `broadcast list`: one line per broadcast function (and per former one whose
 * copies still wait): name, on|off, workers registered, copies waiting; then ".". */
static void list(struct peer *p)
{
    struct engine *e = p->eng;
    const struct bcast *x = broadcast_of(e);
    if (x != NULL) {
        struct hmap_iter it;
        hmap_iter_init(&it, &x->fns);
        for (const struct bcast_fn *b; (b = hmap_iter_next(&it)) != NULL;) {
            const struct func *f = func_get(e, b->name, b->name_len, 0);
            peer_write_name(p, b->name, b->name_len, 0);
            peer_printf(p, "\t%s\t%u\t%u\n", b->on ? "on" : "off",
                        f != NULL ? f->nworkers : 0, b->pending);
        }
    }
    reply(p, ".\n");
}

/* broadcast_admin runs `broadcast FUNC on|off` and `broadcast list`. */
static void broadcast_admin(struct peer *p, const struct pa_token *t, size_t n)
{
    if (n == 2 && pa_token_is(&t[1], "list")) {
        list(p);
        return;
    }
    int on = n == 3 && pa_token_is(&t[2], "on");
    if (n != 3 || (!on && !pa_token_is(&t[2], "off"))) {
        reply(p, "ERR INVALID_ARGUMENTS Usage:+broadcast+FUNC+on|off+or+broadcast+list\r\n");
        return;
    }
    size_t len;
    char *name = admin_name_arg(p, &t[1], &len, ADMIN_NAME_TOO_LONG);
    if (name == NULL)
        return;
    int rc = broadcast_set(p->eng, name, len, on);
    if (rc == 0 && broadcast_store(p->eng, name, len) != 0)
        rc = -1;
    free(name);
    if (rc == -2)
        reply(p, "ERR TOO_MANY_FUNCTIONS Function+limit+reached+(--max-functions)\r\n");
    else if (rc == -3)
        reply(p, ADMIN_BAD_NAME);
    else if (rc != 0)
        reply(p, "ERR MEMORY_ALLOCATION_FAILURE Out+of+memory\r\n");
    else
        reply(p, "OK\r\n");
}

/* The admin commands: `broadcast FUNC on|off` changes state; `broadcast list` only reads. */
static const struct admin_cmd broadcast_cmds[] = {
    {"broadcast", ADM_CHANGES, broadcast_admin, NULL},
    {"broadcast list", ADM_EXACT, broadcast_admin, NULL},
    {NULL, 0, NULL, NULL},
};

int broadcast_admin_register(struct engine *e) { return admin_register(e, broadcast_cmds); }

static void get_waiting(const struct metrics_src *src, struct metrics_value *v)
{
    const struct bcast *x = broadcast_of(src->e);
    v->u = x != NULL ? x->pending : 0;
}

static void get_functions(const struct metrics_src *src, struct metrics_value *v)
{
    const struct bcast *x = broadcast_of(src->e);
    v->u = x != NULL ? x->nfuncs : 0;
}

/* rows: in stats and metrics after every placed row; in stats json before functions_evicted
 * (523 is permission_denied.total, 530 functions_evicted) */
static const struct metrics_row rows[] = {
    {.text = "broadcast_jobs_total", .json = "broadcast.jobs_total",
     .prom = "spur_broadcast_jobs_total",
     .help = "Background submits fanned out to a broadcast function's workers.",
     .kind = METRICS_COUNTER, METRICS_FIELD(stats.broadcast_jobs), .at = {0, 524, 0}},
    {.text = "broadcast_unheard_total", .json = "broadcast.unheard_total",
     .prom = "spur_broadcast_unheard_total",
     .help = "Broadcast submits that found no worker registered (dropped).",
     .kind = METRICS_COUNTER, METRICS_FIELD(stats.broadcast_unheard), .at = {0, 525, 0}},
    {.text = "broadcast_copies_delivered_total", .json = "broadcast.copies_delivered_total",
     .prom = "spur_broadcast_copies_delivered_total",
     .help = "Broadcast copies handed to their worker (JOB_ASSIGN).",
     .kind = METRICS_COUNTER, METRICS_FIELD(stats.broadcast_delivered), .at = {0, 526, 0}},
    {.text = "broadcast_copies_lost_total", .json = "broadcast.copies_lost_total",
     .prom = "spur_broadcast_copies_lost_total",
     .help = "Broadcast copies lost: their worker left or stopped doing the function before "
             "finishing them, or had --broadcast-backlog copies waiting.",
     .kind = METRICS_COUNTER, METRICS_FIELD(stats.broadcast_lost), .at = {0, 527, 0}},
    {.text = "broadcast_refused_total", .json = "broadcast.refused_total",
     .prom = "spur_broadcast_refused_total",
     .help = "Submits a broadcast function refused (foreground, due later, or --after).",
     .kind = METRICS_COUNTER, METRICS_FIELD(stats.submit_refused[SUBMIT_BROADCAST_REFUSED]),
     .at = {0, 527, 0}},
    {.text = "broadcast_copies_waiting", .json = "broadcast.copies_waiting",
     .prom = "spur_broadcast_copies_waiting",
     .help = "Broadcast copies waiting for their worker's next GRAB.", .kind = METRICS_GAUGE,
     .get = get_waiting, .at = {0, 528, 0}},
    {.text = "broadcast_functions", .json = "broadcast.functions",
     .prom = "spur_broadcast_functions", .help = "Broadcast functions (broadcast FUNC on).",
     .kind = METRICS_GAUGE, .get = get_functions, .at = {0, 529, 0}},
};

const struct metrics_table broadcast_counters = {rows, sizeof rows / sizeof rows[0]};
