/* SPDX-License-Identifier: BSD-3-Clause */
/* flow_admin: the admin commands and the counters of flow control (flow_admin.h). */
#include "flow_admin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "engine.h"
#include "flow.h"
#include "func.h"
#include "metrics.h"
#include "peer.h"

static void reply(struct peer *p, const char *s) { peer_write(p, s, strlen(s)); }

#define LIMIT_USAGE "ERR INVALID_ARGUMENTS Usage:+limit+FUNC+concurrency+N|rate+R/s|" \
                    "key-concurrency+N|key-rate+R/s|off+or+limit+list\r\n"

/* set_reply applies s to the function named by t (escaped form) and replies. */
static void set_reply(struct peer *p, const struct pa_token *t, const struct flow_settings *s,
                      void (*change)(struct flow_settings *cur, const struct flow_settings *s))
{
    size_t len;
    char *name = admin_name_arg(p, t, &len, ADMIN_NAME_TOO_LONG);
    if (name == NULL)
        return;
    struct flow_settings cur;
    flow_get(p->eng, name, len, &cur);
    change(&cur, s);
    int rc = flow_set(p->eng, name, len, &cur);
    free(name);
    engine_drain_ready(p->eng);
    if (rc == -2)
        reply(p, "ERR TOO_MANY_LIMITS At+most+100000+functions+with+flow+control\r\n");
    else if (rc == -3)
        reply(p, "ERR TOO_MANY_FUNCTIONS No+function+can+be+created+(--max-functions)\r\n");
    else if (rc != 0)
        reply(p, "ERR MEMORY_ALLOCATION_FAILURE Out+of+memory+or+store+failure\r\n");
    else
        reply(p, "OK\r\n");
}

/* The changes the commands make to a function's settings (s carries the new value). */
static void ch_concurrency(struct flow_settings *c, const struct flow_settings *s)
{
    c->concurrency = s->concurrency;
}
static void ch_rate(struct flow_settings *c, const struct flow_settings *s) { c->rate = s->rate; }
static void ch_key_concurrency(struct flow_settings *c, const struct flow_settings *s)
{
    c->key_concurrency = s->key_concurrency;
}
static void ch_key_rate(struct flow_settings *c, const struct flow_settings *s)
{
    c->key_rate = s->key_rate;
}
static void ch_off(struct flow_settings *c, const struct flow_settings *s)
{
    (void)s;
    c->concurrency = c->key_concurrency = 0;
    c->rate.count = c->key_rate.count = 0;
}
static void ch_pause(struct flow_settings *c, const struct flow_settings *s)
{
    c->paused = s->paused;
}
static void ch_weight(struct flow_settings *c, const struct flow_settings *s)
{
    c->weight = s->weight;
}

/* number parses t as 0..FLOW_MAX_LIMIT. Returns 0 or -1. */
static int number(const struct pa_token *t, uint32_t *out)
{
    char v[32];
    struct flow_settings s;
    flow_defaults(&s);
    if (t->len >= 8)
        return -1;
    int n = snprintf(v, sizeof v, "concurrency=%.*s", (int)t->len, t->ptr);
    if (n <= 0 || (size_t)n >= sizeof v || flow_parse_spec(v, (size_t)n, &s, NULL, 0) != 0)
        return -1;
    *out = s.concurrency;
    return 0;
}

/* rate parses t as R/s, R/m, R/h, or 0 for none. Returns 0 or -1. */
static int rate(const struct pa_token *t, struct flow_rate *r)
{
    if (t->len == 1 && t->ptr[0] == '0') {
        r->count = 0;
        r->unit = 1;
        return 0;
    }
    return flow_parse_rate(t->ptr, t->len, r);
}

static void limit_list(struct peer *p)
{
    const struct flow *x = flow_of(p->eng);
    if (x != NULL) {
        list_for_each(n, &x->funcs) {
            const struct flow_func *ff = container_of(n, struct flow_func, node);
            const struct func *f = ff->f;
            uint32_t held[4];
            char c[16] = "-", kc[16] = "-", r[32], kr[32];
            if (ff->s.concurrency)
                snprintf(c, sizeof c, "%u", ff->s.concurrency);
            if (ff->s.key_concurrency)
                snprintf(kc, sizeof kc, "%u", ff->s.key_concurrency);
            flow_held(ff, held);
            peer_write_name(p, f->name, f->name_len, 0);
            peer_printf(p, "\tconcurrency=%s\trate=%s\tkey-concurrency=%s\tkey-rate=%s"
                        "\tweight=%u\tpaused=%u\trunning=%u\tready=%u\theld-paused=%u"
                        "\theld-concurrency=%u\theld-rate=%u\theld-key=%u\tkeys=%u"
                        "\tkeys-waiting=%u\n",
                        c, flow_format_rate(&ff->s.rate, r, sizeof r), kc,
                        flow_format_rate(&ff->s.key_rate, kr, sizeof kr), ff->s.weight,
                        ff->s.paused, f->running, func_ready(f), held[0], held[1], held[2],
                        held[3], ff->nkeys, ff->keys_waiting);
        }
    }
    reply(p, ".\n");
}

static void adm_limit_list(struct peer *p, const struct pa_token *t, size_t n)
{
    (void)t;
    (void)n;
    limit_list(p);
}

static void adm_limit(struct peer *p, const struct pa_token *t, size_t n)
{
    struct flow_settings s;
    flow_defaults(&s);
    if (n == 3 && pa_token_is(&t[2], "off")) {
        set_reply(p, &t[1], &s, ch_off);
        return;
    }
    if (n != 4) {
        reply(p, LIMIT_USAGE);
        return;
    }
    if (pa_token_is(&t[2], "concurrency") && number(&t[3], &s.concurrency) == 0)
        set_reply(p, &t[1], &s, ch_concurrency);
    else if (pa_token_is(&t[2], "key-concurrency") && number(&t[3], &s.key_concurrency) == 0)
        set_reply(p, &t[1], &s, ch_key_concurrency);
    else if (pa_token_is(&t[2], "rate") && rate(&t[3], &s.rate) == 0)
        set_reply(p, &t[1], &s, ch_rate);
    else if (pa_token_is(&t[2], "key-rate") && rate(&t[3], &s.key_rate) == 0)
        set_reply(p, &t[1], &s, ch_key_rate);
    else
        reply(p, LIMIT_USAGE);
}

static void adm_pause(struct peer *p, const struct pa_token *t, size_t n)
{
    struct flow_settings s;
    flow_defaults(&s);
    s.paused = (uint8_t)pa_token_is(&t[0], "pause");
    if (n != 2) {
        reply(p, s.paused ? "ERR INVALID_ARGUMENTS Usage:+pause+FUNC\r\n"
                          : "ERR INVALID_ARGUMENTS Usage:+resume+FUNC\r\n");
        return;
    }
    set_reply(p, &t[1], &s, ch_pause);
}

static void adm_weight(struct peer *p, const struct pa_token *t, size_t n)
{
    struct flow_settings s;
    flow_defaults(&s);
    if (n != 3 || number(&t[2], &s.weight) != 0 || s.weight == 0) {
        reply(p, "ERR INVALID_ARGUMENTS Usage:+weight+FUNC+W+(1..1000000)\r\n");
        return;
    }
    set_reply(p, &t[1], &s, ch_weight);
}

/* The commands: every one changes state but `limit list`, which must be the whole line (so
 * that `limit list concurrency 2`, for a function named list, is the changing form). */
static const struct admin_cmd flow_cmds[] = {
    {"limit", ADM_CHANGES, adm_limit, NULL},
    {"limit list", ADM_EXACT, adm_limit_list, NULL},
    {"pause", ADM_CHANGES, adm_pause, NULL},
    {"resume", ADM_CHANGES, adm_pause, NULL},
    {"weight", ADM_CHANGES, adm_weight, NULL},
    {NULL, 0, NULL, NULL},
};

int flow_admin_register(struct engine *e) { return admin_register(e, flow_cmds); }

/* ------------------------------------------------------------ counters */

/* totals sums the gauges of every function with flow control: held[0..4) as flow_held, then
 * [4] paused functions, [5] functions with a limit, [6] keys waiting, [7] keys. */
static void totals(const struct engine *e, uint64_t out[8])
{
    memset(out, 0, 8 * sizeof out[0]);
    const struct flow *x = flow_of(e);
    if (x == NULL)
        return;
    list_for_each(n, &x->funcs) {
        const struct flow_func *ff = container_of(n, struct flow_func, node);
        uint32_t held[4];
        flow_held(ff, held);
        for (int i = 0; i < 4; i++)
            out[i] += held[i];
        out[4] += ff->s.paused;
        out[5] += ff->s.concurrency || ff->s.rate.count || ff->s.key_concurrency ||
                  ff->s.key_rate.count;
        out[6] += ff->keys_waiting;
        out[7] += ff->nkeys;
    }
}

#define GETTER(fn, i)                                                                         \
    static void fn(const struct metrics_src *src, struct metrics_value *v)                     \
    {                                                                                         \
        uint64_t t[8];                                                                        \
        totals(src->e, t);                                                                    \
        v->u = t[i];                                                                          \
    }
GETTER(get_held_paused, 0)
GETTER(get_held_concurrency, 1)
GETTER(get_held_rate, 2)
GETTER(get_held_key, 3)
GETTER(get_paused, 4)
GETTER(get_limited, 5)
GETTER(get_keys_waiting, 6)
GETTER(get_keys, 7)
#undef GETTER

#define HELD_HELP "Ready jobs flow control holds back, by the reason (docs/FLOW-CONTROL.md)."
static const struct metrics_row counter_rows[] = {
    {.text = "flow_functions_paused", .json = "flow.functions_paused",
     .prom = "spur_flow_functions_paused", .help = "Functions paused (pause FUNC).",
     .kind = METRICS_GAUGE, .get = get_paused},
    {.text = "flow_functions_limited", .json = "flow.functions_limited",
     .prom = "spur_flow_functions_limited",
     .help = "Functions with a concurrency, rate or key limit.",
     .kind = METRICS_GAUGE, .get = get_limited},
    {.text = "flow_held_paused", .json = "flow.held.paused",
     .prom = "spur_flow_jobs_held{reason=\"paused\"}", .help = HELD_HELP,
     .kind = METRICS_GAUGE, .get = get_held_paused},
    {.text = "flow_held_concurrency", .json = "flow.held.concurrency",
     .prom = "spur_flow_jobs_held{reason=\"concurrency\"}", .help = HELD_HELP,
     .kind = METRICS_GAUGE, .get = get_held_concurrency},
    {.text = "flow_held_rate", .json = "flow.held.rate",
     .prom = "spur_flow_jobs_held{reason=\"rate\"}", .help = HELD_HELP,
     .kind = METRICS_GAUGE, .get = get_held_rate},
    {.text = "flow_held_key", .json = "flow.held.key",
     .prom = "spur_flow_jobs_held{reason=\"key\"}", .help = HELD_HELP,
     .kind = METRICS_GAUGE, .get = get_held_key},
    {.text = "flow_keys", .json = "flow.keys", .prom = "spur_flow_keys",
     .help = "Keys with ready or running jobs of functions with a key limit.",
     .kind = METRICS_GAUGE, .get = get_keys},
    {.text = "flow_keys_waiting", .json = "flow.keys_waiting", .prom = "spur_flow_keys_waiting",
     .help = "Keys whose ready jobs wait for their key limit.",
     .kind = METRICS_GAUGE, .get = get_keys_waiting},
};

const struct metrics_table flow_counters = {counter_rows,
                                            sizeof counter_rows / sizeof counter_rows[0]};
