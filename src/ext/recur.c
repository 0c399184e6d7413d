/* SPDX-License-Identifier: BSD-3-Clause */
/* recur: recurring schedules in the server (recur.h).
 *
 * A firing submits its job through the one core submit (job_submit, submit.h), with no peer:
 * the function is found or created (--max-functions), a live job with the same unique is
 * joined instead (counted as coalesced: a slow run is not stacked; a dead-letter one comes
 * back), the function's maxqueue limit applies, the job is created background and, with a
 * store, added to the current batch (no reply held), else queued at once. What the firing refuses is
 * counted (schedule_refused) and logged at most once a minute; the schedule stays and fires
 * again at its next due time. --policy rules govern peers and are not asked: adding a schedule
 * is an admin command that changes state (--admin-allow). The durable schedule record (kind
 * STORE_REC_SCHEDULE, key = the name) is rewritten with the new due time in the same batch as
 * the job it submitted, so after a crash either both are there or neither: one server never
 * runs one firing twice.
 *
 * Stored value: "v1 NEXT ANCHOR RUNS LAST OWED\n" then the add text as given. */
#include "recur.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "admin.h"
#include "config.h"
#include "engine.h"
#include "esc.h"
#include "func.h"
#include "heap.h"
#include "hmap.h"
#include "job.h"
#include "list.h"
#include "log.h"
#include "peer.h"
#include "proto.h"
#include "schedule.h"
#include "store.h"
#include "submit.h"
#include "store_batch.h"

/* RECUR_TEXT_MAX is the longest `schedule add` text (name, spec, function, options, payload). */
#define RECUR_TEXT_MAX 16384

/* struct recur_entry is one schedule. */
struct recur_entry {
    struct schedule s;      /* parsed form, due times (schedule.h) */
    char *text;             /* the add text as given (owned), stored and compared */
    size_t text_len;        /* bytes in text */
    uint64_t hash;          /* hash of the name, in recur.by_name */
    uint32_t pos;           /* position in recur.due, HEAP_NONE when never due */
    double key;             /* the heap key it was pushed with */
    struct list_node node;  /* in recur.all, in order of addition */
    uint64_t runs;          /* firings since it was added (kept across restarts) */
    int64_t last;           /* the last firing, -1 none */
    uint8_t owed;           /* a catch-up firing (--schedule-catchup=once) is owed: due now */
    uint8_t from_config;    /* defined by the config file */
};

/* struct recur is an engine's schedules. */
struct recur {
    struct hmap by_name;    /* struct recur_entry by name */
    struct heap due;        /* entries by next due time (owed ones at the time they were owed) */
    struct list_node all;   /* every entry, in order of addition */
    size_t n;               /* entries */
    struct log_limit refused_log; /* one line a minute about refused firings */
};

static struct recur *S(const struct engine *e) { return e->ext.recur; }

static struct recur_entry *entry_of(struct list_node *n)
{
    return container_of(n, struct recur_entry, node);
}

static uint64_t name_hash(const struct engine *e, const char *name, size_t len)
{
    return hmap_hash_bytes(name, len, e->seed ^ 0x5c4ed111u);
}

static struct recur_entry *find(const struct engine *e, const char *name, size_t len)
{
    uint64_t h = name_hash(e, name, len);
    struct hmap_probe pr;
    for (struct recur_entry *x = hmap_first(&S(e)->by_name, h, &pr); x != NULL;
         x = hmap_next(&pr))
        if (strlen(x->s.name) == len && memcmp(x->s.name, name, len) == 0)
            return x;
    return NULL;
}

/* key is when x should next run: now-ish for an owed catch-up, else its due time. */
static double key_of(const struct recur_entry *x, double now)
{
    if (x->owed)
        return now;
    return x->s.next < 0 ? -1 : (double)x->s.next;
}

/* requeue puts x back in the heap at its current key. Returns 0 or -1 (no memory: it is then
 * never due until changed; logged). */
static int requeue(struct engine *e, struct recur_entry *x, double now)
{
    struct recur *sc = S(e);
    heap_remove(&sc->due, &x->pos);
    x->key = key_of(x, now);
    if (x->key < 0)
        return 0;
    if (heap_push(&sc->due, &x->pos, x->key) != 0) {
        log_error("schedule %s: out of memory: it will not fire until changed", x->s.name);
        x->s.next = -1; /* never due, as it now is */
        x->owed = 0;
        return -1;
    }
    return 0;
}

static void entry_free(struct recur_entry *x)
{
    if (x == NULL)
        return;
    schedule_free(&x->s);
    free(x->text);
    free(x);
}

/* unlink_entry takes x out of every index. */
static void unlink_entry(struct engine *e, struct recur_entry *x)
{
    struct recur *sc = S(e);
    heap_remove(&sc->due, &x->pos);
    hmap_remove(&sc->by_name, x, x->hash);
    list_del(&x->node);
    sc->n--;
    e->ext.schedules = sc->n;
}

/* value_of builds x's stored value (state line, then the text); the caller frees it. */
static char *value_of(const struct recur_entry *x, size_t *vlen)
{
    char head[128];
    int hl = snprintf(head, sizeof head, "v1 %" PRId64 " %" PRId64 " %" PRIu64 " %" PRId64 " %d\n",
                      x->s.next, x->s.anchor, x->runs, x->last, (int)x->owed);
    char *v = malloc((size_t)hl + x->text_len);
    if (v == NULL)
        return NULL;
    memcpy(v, head, (size_t)hl);
    memcpy(v + hl, x->text, x->text_len);
    *vlen = (size_t)hl + x->text_len;
    return v;
}

/* persist writes x's record (text and state) into the store's next batch. */
static void persist(struct engine *e, const struct recur_entry *x)
{
    if (e->store_mgr == NULL)
        return;
    size_t vlen = 0;
    char *v = value_of(x, &vlen);
    if (v == NULL ||
        store_record_put(e, STORE_REC_SCHEDULE, x->s.name, strlen(x->s.name), v, vlen) != 0)
        log_error("schedule %s: out of memory: its new state is not stored", x->s.name);
    free(v);
}

/* make_entry parses text into a new entry (not indexed). */
static struct recur_entry *make_entry(const struct engine *e, const char *text, size_t len,
                                      enum recur_add_result *why, char *err, size_t errlen)
{
    *why = RECUR_INVALID;
    if (len > RECUR_TEXT_MAX) {
        snprintf(err, errlen, "schedule text longer than %d bytes", RECUR_TEXT_MAX);
        return NULL;
    }
    if (memchr(text, '\0', len) != NULL || memchr(text, '\n', len) != NULL ||
        memchr(text, '\r', len) != NULL) {
        snprintf(err, errlen, "control byte in the schedule text");
        return NULL;
    }
    struct recur_entry *x = calloc(1, sizeof *x);
    if (x == NULL) {
        *why = RECUR_NO_MEMORY;
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    x->pos = HEAP_NONE;
    x->last = -1;
    list_node_init(&x->node);
    if (schedule_parse(text, len, &x->s, err, errlen) != 0) {
        free(x);
        return NULL;
    }
    /* the function in the escaped form the listings print (%09 is a TAB) */
    size_t fl = esc_decode(x->s.func, strlen(x->s.func));
    x->s.func[fl] = '\0';
    if (fl > e->cfg->max_function || !func_name_ok(x->s.func, fl)) {
        snprintf(err, errlen, "function name too long or with a NUL byte");
        entry_free(x);
        return NULL;
    }
    if (strlen(x->s.unique) > PROTO_UNIQUE_MAX) {
        snprintf(err, errlen, "unique longer than %d bytes", PROTO_UNIQUE_MAX);
        entry_free(x);
        return NULL;
    }
    x->text = malloc(len + 1);
    if (x->text == NULL) {
        *why = RECUR_NO_MEMORY;
        snprintf(err, errlen, "out of memory");
        entry_free(x);
        return NULL;
    }
    memcpy(x->text, text, len);
    x->text[len] = '\0';
    x->text_len = len;
    x->hash = name_hash(e, x->s.name, strlen(x->s.name));
    return x;
}

/* insert indexes x (its name is not in the map). Returns 0 or -1 (no memory). */
static int insert(struct engine *e, struct recur_entry *x, double now)
{
    struct recur *sc = S(e);
    if (hmap_insert(&sc->by_name, x, x->hash) != 0)
        return -1;
    list_push_back(&sc->all, &x->node);
    sc->n++;
    e->ext.schedules = sc->n;
    if (requeue(e, x, now) != 0) {
        unlink_entry(e, x);
        return -1;
    }
    return 0;
}

enum recur_add_result recur_add(struct engine *e, const char *text, size_t len, int from_config,
                                char *err, size_t errlen)
{
    enum recur_add_result why;
    struct recur_entry *x = make_entry(e, text, len, &why, err, errlen);
    if (x == NULL)
        return why;
    double now = engine_now(e);
    struct recur_entry *old = find(e, x->s.name, strlen(x->s.name));
    if (old == NULL && S(e)->n >= e->cfg->max_schedules) {
        snprintf(err, errlen, "%zu schedules already (--max-schedules)", S(e)->n);
        entry_free(x);
        return RECUR_TOO_MANY;
    }
    x->from_config = (uint8_t)!!from_config;
    schedule_start(&x->s, (int64_t)now);
    int replaced = old != NULL;
    if (old != NULL) {
        unlink_entry(e, old);
        entry_free(old);
    }
    if (insert(e, x, now) != 0) {
        snprintf(err, errlen, "out of memory");
        if (replaced) /* the old one is gone from memory: not to come back at a restart */
            store_record_del(e, STORE_REC_SCHEDULE, x->s.name, strlen(x->s.name));
        entry_free(x);
        return RECUR_NO_MEMORY;
    }
    persist(e, x);
    log_notice("schedule %s %s: %s, next %s", x->s.name, replaced ? "replaced" : "added", x->s.spec,
               recur_format_time(x->s.next, (char[32]){0}, 32));
    return replaced ? RECUR_REPLACED : RECUR_ADDED;
}

int recur_remove(struct engine *e, const char *name, size_t len)
{
    struct recur_entry *x = find(e, name, len);
    if (x == NULL)
        return -1;
    unlink_entry(e, x);
    if (e->store_mgr != NULL &&
        store_record_del(e, STORE_REC_SCHEDULE, x->s.name, strlen(x->s.name)) != 0)
        log_error("schedule %s: out of memory: its removal is not stored", x->s.name);
    log_notice("schedule %s removed", x->s.name);
    entry_free(x);
    return 0;
}

int recur_apply_config(struct engine *e, char *err, size_t errlen)
{
    const struct config *c = e->cfg;
    for (int i = 0; i < c->nschedules; i++) {
        char why[256];
        enum recur_add_result r =
            recur_add(e, c->schedules[i], strlen(c->schedules[i]), 1, why, sizeof why);
        if (r != RECUR_ADDED && r != RECUR_REPLACED) {
            snprintf(err, errlen, "[schedule] '%.60s': %s", c->schedules[i], why);
            return -1;
        }
    }
    return 0;
}

double recur_next_due(const struct engine *e)
{
    const struct recur *sc = S(e);
    double at;
    if (sc == NULL || e->replaying || heap_top(&sc->due, &at) == NULL)
        return -1;
    return at;
}

size_t recur_count(const struct engine *e) { return S(e) != NULL ? S(e)->n : 0; }

/* submit submits (job_submit) the background job of one firing of x. Returns 0 (submitted or
 * joined a live job) or -1 (refused; reason in why). */
static int submit(struct engine *e, const struct recur_entry *x, const char **why)
{
    const struct schedule *s = &x->s;
    struct submit_req rq = {.func = s->func, .func_len = strlen(s->func), .unique = s->unique,
                            .unique_len = strlen(s->unique), .data = s->payload,
                            .data_len = s->payload_len, .prio = (enum job_prio)s->prio,
                            .background = 1, .log = "created by a schedule"};
    struct submit_out out;
    switch (job_submit(e, &rq, &out)) {
    case SUBMIT_JOINED:
        e->stats.schedule_coalesced++;
        return 0;
    case SUBMIT_CREATED:
    case SUBMIT_HELD: /* (not without an owner) */
    case SUBMIT_BROADCAST: /* a broadcast function's: fanned out to its workers */
        return 0;
    case SUBMIT_QUEUE_FULL:
        *why = "job queue is full (maxqueue)";
        return -1;
    case SUBMIT_STORE_ERROR:
        *why = "could not store the job";
        return -1;
    case SUBMIT_NO_MEMORY:
        *why = "out of memory";
        return -1;
    default: /* a bad name (refused when the schedule was added), the function limit */
        *why = "too many functions or no memory";
        return -1;
    }
}

/* fire fires x once at now and moves it on. */
static void fire(struct engine *e, struct recur_entry *x, double now)
{
    const char *why = NULL;
    if (submit(e, x, &why) == 0) {
        e->stats.schedule_fired++;
        x->runs++;
        x->last = (int64_t)now;
    } else {
        e->stats.schedule_refused++;
        log_limited(&S(e)->refused_log, LOG_WARNING, __FILE__, __LINE__,
                    "schedule %s: firing refused: %s", x->s.name, why);
    }
    int owed = x->owed;
    x->owed = 0;
    if (!owed || x->s.next <= (int64_t)now)
        schedule_fired(&x->s, (int64_t)now);
    requeue(e, x, now);
    persist(e, x);
}

void recur_run(struct engine *e, double now)
{
    struct recur *sc = S(e);
    if (sc == NULL || e->replaying)
        return;
    /* each entry fires at most once per call: its new key is after now (or it left the heap) */
    for (size_t budget = sc->n; budget > 0; budget--) {
        double at;
        uint32_t *pos = heap_top(&sc->due, &at);
        if (pos == NULL || at > now)
            break;
        struct recur_entry *x = container_of(pos, struct recur_entry, pos);
        fire(e, x, now);
    }
    engine_drain_ready(e); /* workers of the new jobs are woken, as after a handler */
}

/* ------------------------------------------------------------ the store's records */

/* parse_state reads the stored value's first line. Returns the text's offset, or 0 if bad. */
static size_t parse_state(const char *v, size_t len, int64_t *next, int64_t *anchor,
                          uint64_t *runs, int64_t *last, int *owed)
{
    const char *nl = memchr(v, '\n', len < 200 ? len : 200);
    if (nl == NULL)
        return 0;
    char head[200];
    size_t hl = (size_t)(nl - v);
    memcpy(head, v, hl);
    head[hl] = '\0';
    int used = 0;
    if (sscanf(head, "v1 %" SCNd64 " %" SCNd64 " %" SCNu64 " %" SCNd64 " %d%n", next, anchor,
               runs, last, owed, &used) != 5 || (size_t)used != hl)
        return 0;
    return hl + 1;
}

/* record_restored applies a stored schedule. One the config file defines keeps the config's
 * definition; it takes the stored state (due time, runs) only when the definitions are the same
 * text. The catch-up policy (--schedule-catchup) decides about due times that passed. */
static int record_restored(struct engine *e, const struct store_record *r, char *err,
                           size_t errlen)
{
    if (r->value == NULL)
        return 0;
    int64_t next, anchor, last;
    uint64_t runs;
    int owed;
    const char *v = r->value;
    size_t at = parse_state(v, r->value_len, &next, &anchor, &runs, &last, &owed);
    if (at == 0) {
        snprintf(err, errlen, "unreadable schedule state");
        return -1;
    }
    const char *text = v + at;
    size_t tlen = r->value_len - at;
    double now = engine_now(e);
    struct recur_entry *x = find(e, r->key, r->key_len);
    if (x != NULL) {
        if (!x->from_config || x->text_len != tlen || memcmp(x->text, text, tlen) != 0)
            return 0; /* the config file's definition wins (stored again with the next batch) */
    } else {
        enum recur_add_result why;
        x = make_entry(e, text, tlen, &why, err, errlen);
        if (x == NULL)
            return -1;
        if (x->hash != name_hash(e, r->key, r->key_len) || strlen(x->s.name) != r->key_len ||
            memcmp(x->s.name, r->key, r->key_len) != 0) {
            snprintf(err, errlen, "stored name and text disagree");
            entry_free(x);
            return -1;
        }
        if (S(e)->n >= e->cfg->max_schedules) {
            snprintf(err, errlen, "more than --max-schedules");
            entry_free(x);
            return -1;
        }
        if (insert(e, x, now) != 0) {
            snprintf(err, errlen, "out of memory");
            entry_free(x);
            return -1;
        }
    }
    x->s.next = next;
    x->s.anchor = anchor;
    x->runs = runs;
    x->last = last;
    x->owed = (uint8_t)(owed != 0);
    enum schedule_catchup c = e->cfg->schedule_catchup ? SCHEDULE_ONCE : SCHEDULE_SKIP;
    if (schedule_resume(&x->s, (int64_t)now, c))
        x->owed = 1;
    if (c == SCHEDULE_SKIP && x->s.next > (int64_t)now)
        x->owed = 0; /* an owed catch-up from before is dropped too */
    requeue(e, x, now);
    persist(e, x);
    return 0;
}

static void record_each(const struct engine *e,
                        void (*cb)(void *ctx, const struct store_record *r), void *ctx)
{
    list_for_each(n, &S(e)->all) {
        const struct recur_entry *x = entry_of(n);
        size_t vlen = 0;
        char *v = value_of(x, &vlen);
        if (v == NULL)
            continue;
        struct store_record r = {STORE_REC_SCHEDULE, x->s.name, strlen(x->s.name), v, vlen};
        cb(ctx, &r);
        free(v);
    }
}

/* ------------------------------------------------------------ life */

static int check_hook(const struct engine *e, char *err, size_t errlen)
{
    return recur_check(e, err, errlen);
}

int recur_attach(struct engine *e)
{
    if (S(e) != NULL)
        return 0; /* attached already */
    struct recur *sc = calloc(1, sizeof *sc);
    if (sc == NULL)
        return -1;
    if (engine_ext_join(e, check_hook, recur_detach) != 0) {
        log_error("recur: no engine_ext slot left (ENGINE_EXT_SLOTS)");
        free(sc);
        return -1;
    }
    hmap_init(&sc->by_name);
    list_node_init(&sc->all);
    sc->refused_log.interval = 60;
    e->ext.recur = sc;
    e->ext.schedules = 0;
    e->ext.record_restored[STORE_REC_SCHEDULE] = record_restored;
    e->ext.record_each[STORE_REC_SCHEDULE] = record_each;
    return 0;
}

void recur_detach(struct engine *e)
{
    struct recur *sc = S(e);
    if (sc == NULL)
        return;
    list_for_each_safe(n, next, &sc->all) {
        struct recur_entry *x = entry_of(n);
        list_del(&x->node);
        entry_free(x);
    }
    hmap_free(&sc->by_name);
    heap_free(&sc->due);
    free(sc);
    engine_ext_leave(e, check_hook, recur_detach);
    e->ext.recur = NULL;
    e->ext.schedules = 0;
    e->ext.record_restored[STORE_REC_SCHEDULE] = NULL;
    e->ext.record_each[STORE_REC_SCHEDULE] = NULL;
}

int recur_check(const struct engine *e, char *err, size_t errlen)
{
    const struct recur *sc = S(e);
    if (sc == NULL)
        return 0;
    size_t n = 0, inheap = 0;
    list_for_each(p, &sc->all) {
        const struct recur_entry *x = entry_of((struct list_node *)p);
        n++;
        if (find(e, x->s.name, strlen(x->s.name)) != x)
            return engine_check_fail(err, errlen, "schedule %s listed but not found by name",
                                     x->s.name);
        if (x->pos != HEAP_NONE) {
            inheap++;
            if (x->pos >= sc->due.n || sc->due.a[x->pos].pos != &x->pos ||
                sc->due.a[x->pos].at != x->key)
                return engine_check_fail(err, errlen, "schedule %s: heap slot disagrees",
                                         x->s.name);
            if (!x->owed && x->key != (double)x->s.next)
                return engine_check_fail(err, errlen, "schedule %s due at %.0f, queued at %.0f",
                                         x->s.name, (double)x->s.next, x->key);
        } else if (x->s.next >= 0 || x->owed) {
            return engine_check_fail(err, errlen, "schedule %s is due but not queued",
                                     x->s.name);
        }
    }
    if (n != sc->n || sc->by_name.count != n || e->ext.schedules != n)
        return engine_check_fail(err, errlen, "%zu schedules listed, %zu counted, %zu indexed",
                                 n, sc->n, sc->by_name.count);
    if (inheap != sc->due.n)
        return engine_check_fail(err, errlen, "%zu schedules queued, heap holds %u", inheap,
                                 sc->due.n);
    return 0;
}

/* ------------------------------------------------------------ admin */

char *recur_format_time(int64_t t, char *out, size_t cap)
{
    struct tm tm;
    time_t tt = (time_t)t;
    if (t < 0 || gmtime_r(&tt, &tm) == NULL || strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(out, cap, "-");
    return out;
}

static const char *const prio_word[] = {"high", "normal", "low"};

/* reply_err sends "ERR CODE msg+with+pluses". */
static void reply_err(struct peer *p, const char *code, const char *msg)
{
    char buf[512];
    int n = snprintf(buf, sizeof buf, "ERR %s ", code);
    for (const char *m = msg; *m != '\0' && n < (int)sizeof buf - 3; m++)
        buf[n++] = *m == ' ' ? '+' : ((unsigned char)*m < 0x20 ? '?' : *m);
    buf[n++] = '\r';
    buf[n++] = '\n';
    peer_write(p, buf, (size_t)n);
}

/* list_line writes one `schedule list` line: tab-separated name, spec, function, next due,
 * runs, last fired, unique, priority, and "\n" as gearmand's listings (`status`, `workers`). The name, function and unique are escaped (esc.h) so that
 * none can end the line or add a column. */
static void list_line(struct peer *p, const struct recur_entry *x)
{
    char next[32], last[32];
    const struct schedule *s = &x->s;
    peer_write_name(p, s->name, strlen(s->name), 0);
    peer_printf(p, "\t%s\t", s->spec);
    peer_write_name(p, s->func, strlen(s->func), 0);
    peer_printf(p, "\t%s\t%" PRIu64 "\t%s\t",
                recur_format_time(x->owed ? (int64_t)x->key : s->next, next, sizeof next),
                x->runs, recur_format_time(x->last, last, sizeof last));
    size_t ul = strlen(s->unique);
    peer_write_name(p, s->unique, ul < 300 ? ul : 300, 0);
    peer_printf(p, "\t%s\n", prio_word[s->prio]);
}

void recur_admin(struct peer *p, const char *line, size_t len)
{
    struct engine *e = p->eng;
    /* "schedule" then one space-separated verb */
    size_t i = 0;
    while (i < len && line[i] == ' ')
        i++;
    i += 8; /* "schedule" (the caller matched it) */
    while (i < len && line[i] == ' ')
        i++;
    size_t vs = i;
    while (i < len && line[i] != ' ')
        i++;
    size_t vl = i - vs;
    const char *verb = line + vs;
    if (i < len)
        i++; /* the one space after the verb */
    if (S(e) == NULL) {
        reply_err(p, "UNKNOWN_COMMAND", "schedules are not enabled");
        return;
    }
    if (vl == 3 && strncasecmp(verb, "add", 3) == 0) {
        char err[256];
        enum recur_add_result r = recur_add(e, line + i, len - i, 0, err, sizeof err);
        if (r == RECUR_ADDED || r == RECUR_REPLACED)
            peer_write(p, "OK\r\n", 4);
        else
            reply_err(p, r == RECUR_TOO_MANY ? "TOO_MANY_SCHEDULES"
                         : r == RECUR_NO_MEMORY ? "MEMORY_ALLOCATION_FAILURE"
                                                : "INVALID_SCHEDULE",
                      err);
    } else if (vl == 6 && strncasecmp(verb, "remove", 6) == 0) {
        const char *name = line + i;
        size_t nl = len - i;
        while (nl > 0 && name[nl - 1] == ' ')
            nl--;
        if (nl == 0 || memchr(name, ' ', nl) != NULL)
            reply_err(p, "INVALID_ARGUMENTS", "usage: schedule remove NAME");
        else if (recur_remove(e, name, nl) != 0)
            reply_err(p, "NOT_FOUND", "no such schedule");
        else
            peer_write(p, "OK\r\n", 4);
    } else if (vl == 4 && strncasecmp(verb, "list", 4) == 0 && i >= len) {
        list_for_each(n, &S(e)->all)
            list_line(p, entry_of(n));
        peer_write(p, ".\n", 2); /* gearmand's listings end their lines with LF alone */
    } else {
        reply_err(p, "INVALID_ARGUMENTS", "usage: schedule add TEXT | schedule list | schedule remove NAME");
    }
}

/* recur_cmds are the `schedule` admin commands: every verb but list changes state (an unknown
 * one too: its usage reply is refused where a change would be); the word alone only reads. */
static const struct admin_cmd recur_cmds[] = {
    {"schedule", ADM_CHANGES | ADM_RAW, NULL, recur_admin}, /* add, remove */
    {"schedule", ADM_EXACT | ADM_RAW, NULL, recur_admin},   /* the usage reply */
    {"schedule list", ADM_RAW, NULL, recur_admin},
    {NULL, 0, NULL, NULL},
};

int recur_admin_register(struct engine *e) { return admin_register(e, recur_cmds); }
static void get_schedules(const struct metrics_src *src, struct metrics_value *v)
{
    v->u = recur_count(src->e);
}

/* rows: their places ({stats, stats json, metrics}) keep the order the outputs had. */
static const struct metrics_row counter_rows[] = {
    {.text = "schedules", .json = "schedules.count", .prom = "spur_schedules",
     .help = "Recurring schedules defined.", .kind = METRICS_GAUGE, .get = get_schedules,
     .at = {1130, 580, 490}},
    {.text = "schedule_fired", .json = "schedules.fired", .prom = "spur_schedule_fired_total",
     .help = "Schedule firings that submitted a job or joined a live one with their unique.",
     .kind = METRICS_COUNTER, METRICS_FIELD(stats.schedule_fired), .at = {1140, 590, 500}},
    {.text = "schedule_coalesced", .json = "schedules.coalesced",
     .prom = "spur_schedule_coalesced_total",
     .help = "Schedule firings that joined a live job with their unique (no new job).",
     .kind = METRICS_COUNTER, METRICS_FIELD(stats.schedule_coalesced), .at = {1150, 600, 510}},
    {.text = "schedule_refused", .json = "schedules.refused", .prom = "spur_schedule_refused_total",
     .help = "Schedule firings refused (maxqueue, functions, memory, store).",
     .kind = METRICS_COUNTER, METRICS_FIELD(stats.schedule_refused), .at = {1160, 610, 520}},
};

const struct metrics_table recur_counters = {counter_rows,
                                             sizeof counter_rows / sizeof counter_rows[0]};

void recur_each(const struct engine *e, int (*fn)(void *arg, const struct recur_view *v),
                void *arg)
{
    if (S(e) == NULL)
        return;
    list_for_each(it, &S(e)->all) {
        const struct recur_entry *x = entry_of(it);
        struct recur_view v = {&x->s, x->owed ? (int64_t)x->key : x->s.next, x->runs, x->last};
        if (fn(arg, &v) != 0)
            return;
    }
}
