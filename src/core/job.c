/* SPDX-License-Identifier: BSD-3-Clause */
/* job: jobs, their indexes, handles, and the clients waiting on them. */
#include "job.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "esc.h"
#include "func.h"
#include "list.h"
#include "slab.h"
#include "worker.h"

/* decimal_len returns how many decimal digits v has (1 for 0). */
static size_t decimal_len(uint64_t v)
{
    static const uint64_t pow10[20] = {
        1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull,
        100000000ull, 1000000000ull, 10000000000ull, 100000000000ull, 1000000000000ull,
        10000000000000ull, 100000000000000ull, 1000000000000000ull, 10000000000000000ull,
        100000000000000000ull, 1000000000000000000ull, 10000000000000000000ull};
    /* log10(2) ~ 1233/4096: an estimate from the bit length, off by at most one */
    size_t bits = 64 - (size_t)__builtin_clzll(v | 1);
    size_t n = (bits * 1233) >> 12;
    return n + (n == 0 || v >= pow10[n]); /* (n <= 19: bits <= 64) */
}

size_t job_handle_id(const struct engine *e, uint64_t id, char *out)
{
    /* every JOB_CREATED and JOB_ASSIGN formats one: two digits per division, written from the
     * end, without a second copy */
    static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930"
                                "31323334353637383940414243444546474849505152535455565758596061"
                                "62636465666768697071727374757677787980818283848586878889909192"
                                "939495969798" "99";
    size_t pl = e->prefix_len;
    memcpy(out, e->prefix, pl);
    out[pl] = ':';
    size_t n = decimal_len(id);
    char *p = out + pl + 1 + n;
    *p = '\0';
    while (id >= 100) {
        size_t r = (size_t)(id % 100) * 2;
        id /= 100;
        *--p = pairs[r + 1];
        *--p = pairs[r];
    }
    if (id >= 10) {
        *--p = pairs[id * 2 + 1];
        *--p = pairs[id * 2];
    } else {
        *--p = (char)('0' + id);
    }
    return pl + 1 + n;
}

size_t job_handle(const struct engine *e, const struct job *j, char *out)
{
    return job_handle_id(e, j->id, out);
}

struct job *job_find_id(const struct engine *e, uint64_t id)
{
    return idtab_get(&e->jobs, id);
}

int job_check_ids(const struct engine *e, char *err, size_t errlen)
{
    if (idtab_check(&e->jobs, err, errlen) != 0)
        return -1;
    struct idtab_iter it;
    idtab_iter_init(&it, &e->jobs);
    uint64_t id;
    for (const struct job *j; (j = idtab_iter_next(&it, &id)) != NULL;) {
        if (j->id != id)
            return engine_check_fail(err, errlen, "job %" PRIu64 " is indexed as %" PRIu64,
                                     j->id, id);
    }
    return 0;
}

int job_handle_parse(const struct engine *e, const char *h, size_t len, uint64_t *id)
{
    size_t pl = e->prefix_len;
    if (len < pl + 2 || len > pl + 21 || memcmp(h, e->prefix, pl) != 0 || h[pl] != ':')
        return -1;
    const char *d = h + pl + 1;
    size_t dl = len - pl - 1;
    if (d[0] == '0') /* handles never have leading zeros */
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < dl; i++) {
        if (d[i] < '0' || d[i] > '9')
            return -1;
        uint64_t next = v * 10 + (uint64_t)(d[i] - '0');
        if (next / 10 != v)
            return -1;
        v = next;
    }
    *id = v;
    return 0;
}

struct job *job_find_handle(struct engine *e, const char *h, size_t len)
{
    uint64_t id;
    return job_handle_parse(e, h, len, &id) == 0 ? job_find_id(e, id) : NULL;
}

/* is_dash reports whether the unique is the single byte "-" (coalesce on payload). */
static int is_dash(const char *u, size_t ulen) { return ulen == 1 && u[0] == '-'; }

/* The unique index (engine->jobs_by_unique) holds one entry per job with a unique, so that no
 * key repeats (equal keys would share one probe sequence and cost O(jobs with that key) per
 * lookup): the oldest live job of each unique (JOB_UHEAD) under the unique alone, which answers
 * GET_STATUS_UNIQUE across functions; the other jobs with that unique (other functions) under
 * the function and the unique, linked in a ring behind their head (oldest first; the ring's nodes
 * are in a side table, engine->unique_rings, as few uniques are shared by several functions);
 * "-" jobs under the function and the payload. When a head goes, the next oldest takes its
 * slot: every operation is O(1) expected however many functions share a unique. */

/* any_hash is the hash of a head: the unique alone. */
static uint64_t any_hash(const struct engine *e, const char *u, size_t ulen)
{
    return hmap_hash_bytes(u, ulen, e->seed);
}

/* func_hash is the hash of a job that is not a head: (f, unique), or (f, payload) for "-". */
static uint64_t func_hash(const struct engine *e, const struct func *f, const char *u,
                          size_t ulen, const char *data, size_t dlen)
{
    uint64_t seed = e->seed ^ hmap_mix64((uint64_t)(uintptr_t)f);
    if (is_dash(u, ulen))
        return hmap_hash_bytes(data, dlen, seed ^ 0x2d);
    return hmap_hash_bytes(u, ulen, seed);
}

/* has_unique_entry reports whether j is in the unique index (a unique other than "" and
 * "-"-with-no-payload). */
static int has_unique_entry(const struct job *j)
{
    return j->unique_len > 0 && !(is_dash(job_unique(j), j->unique_len) && job_payload_len(j) == 0);
}

/* job_unique_hash is j's hash in engine->jobs_by_unique. */
static uint64_t job_unique_hash(const struct engine *e, const struct job *j)
{
    if (j->flags & JOB_UHEAD)
        return any_hash(e, job_unique(j), j->unique_len);
    return func_hash(e, j->func, job_unique(j), j->unique_len, job_payload(j),
                     job_payload_len(j));
}

/* same_unique reports whether j's unique is u. */
static int same_unique(const struct job *j, const char *u, size_t ulen)
{
    return j->unique_len == ulen && memcmp(job_unique(j), u, ulen) == 0;
}

/* find_head returns the head of unique u whose any_hash is h, or NULL. */
static struct job *find_head(const struct engine *e, const char *u, size_t ulen, uint64_t h)
{
    struct hmap_probe pr;
    for (struct job *j = hmap_first(&e->jobs_by_unique, h, &pr); j != NULL; j = hmap_next(&pr)) {
        if ((j->flags & JOB_UHEAD) && same_unique(j, u, ulen))
            return j;
    }
    return NULL;
}

/* The last lookup of a unique's head, so that a submit, which looks its unique up (a miss, as
 * a rule) and then creates the job, does not hash and probe it again to link the job: valid
 * while no engine's unique index changed since (unique_gen), for the same engine and bytes. */
#define MEMO_MAX 32
static uint64_t unique_gen = 1; /* bumped by every change of a unique index (unique_changed) */
static struct {
    const struct engine *e; /* the engine looked in (an engine made later at the same address
                               has no unique entry before a change, but another seed) */
    uint64_t seed;          /* its hash seed */
    uint64_t gen;           /* unique_gen then */
    uint64_t h;             /* the unique's any_hash */
    struct job *head;       /* what was found */
    size_t ulen;            /* bytes in u */
    char u[MEMO_MAX];       /* the unique */
} memo;

/* unique_changed invalidates the memo: call after each change of a unique index. */
static void unique_changed(void) { unique_gen++; }

/* memo_find returns 1 with *h and *head set when the memo holds unique u of e. */
static int memo_find(const struct engine *e, const char *u, size_t ulen, uint64_t *h,
                     struct job **head)
{
    if (memo.e != e || memo.gen != unique_gen || memo.seed != e->seed || memo.ulen != ulen ||
        memcmp(memo.u, u, ulen) != 0)
        return 0;
    *h = memo.h;
    *head = memo.head;
    return 1;
}

struct job *job_find_unique_any(const struct engine *e, const char *u, size_t ulen)
{
    if (ulen == 0 || is_dash(u, ulen))
        return NULL;
    uint64_t h = any_hash(e, u, ulen);
    struct job *head = find_head(e, u, ulen, h);
    if (ulen <= MEMO_MAX) {
        memo.e = e;
        memo.seed = e->seed;
        memo.gen = unique_gen;
        memo.h = h;
        memo.head = head;
        memo.ulen = ulen;
        memcpy(memo.u, u, ulen);
    }
    return head;
}

struct job *job_find_unique(const struct engine *e, const struct func *f, const char *u,
                            size_t ulen, const char *data, size_t dlen)
{
    if (ulen == 0 || (is_dash(u, ulen) && dlen == 0))
        return NULL;
    int dash = is_dash(u, ulen);
    if (!dash) {
        const struct job *head = job_find_unique_any(e, u, ulen);
        if (head == NULL || head->func == f)
            return (struct job *)(uintptr_t)head; /* none of any function, or f's */
    }
    struct hmap_probe pr;
    for (struct job *j = hmap_first(&e->jobs_by_unique, func_hash(e, f, u, ulen, data, dlen), &pr);
         j != NULL; j = hmap_next(&pr)) {
        if (j->func != f || (j->flags & JOB_UHEAD) || !same_unique(j, u, ulen))
            continue;
        if (dash && (job_payload_len(j) != dlen || memcmp(job_payload(j), data, dlen) != 0))
            continue;
        return j;
    }
    return NULL;
}

/* struct ring_node links a job into the ring of the live jobs of every function with its unique
 * (engine->unique_rings, JOB_RING): only jobs whose unique another function's live job shares
 * have one, so a job costs no ring link in the common case. */
struct ring_node {
    struct job *job;       /* the job */
    struct list_node link; /* the ring, oldest first from the JOB_UHEAD job; never alone */
};

/* ring_of returns j's ring node, or NULL when j shares its unique with no other function. */
static struct ring_node *ring_of(const struct engine *e, const struct job *j)
{
    if (!(j->flags & JOB_RING))
        return NULL;
    struct hmap_probe pr;
    for (struct ring_node *r = hmap_first(&e->unique_rings, hmap_mix64((uintptr_t)j), &pr);
         r != NULL; r = hmap_next(&pr)) {
        if (r->job == j)
            return r;
    }
    return NULL;
}

/* ring_new gives j a ring node linked to itself (inserted in engine->unique_rings); NULL when
 * out of memory. */
static struct ring_node *ring_new(struct engine *e, struct job *j)
{
    struct ring_node *r = malloc(sizeof *r);
    if (r == NULL)
        return NULL;
    r->job = j;
    list_node_init(&r->link);
    if (hmap_insert(&e->unique_rings, r, hmap_mix64((uintptr_t)j)) != 0) {
        free(r);
        return NULL;
    }
    j->flags |= JOB_RING;
    return r;
}

/* ring_free unlinks and frees node r; when one job is left on the ring, its node goes too. */
static void ring_free(struct engine *e, struct ring_node *r)
{
    struct list_node *other = r->link.next;
    list_del(&r->link);
    hmap_remove(&e->unique_rings, r, hmap_mix64((uintptr_t)r->job));
    r->job->flags &= (uint8_t)~JOB_RING;
    free(r);
    if (other != &r->link && !list_linked(other))
        ring_free(e, container_of(other, struct ring_node, link));
}

/* ring_join links j, which has no ring node, last on the ring of head (giving head a node if it
 * has none). Returns 0 or -1 when out of memory (nothing changed). */
static int ring_join(struct engine *e, struct job *head, struct job *j)
{
    struct ring_node *h = ring_of(e, head), *r;
    int fresh = h == NULL;
    if (fresh && (h = ring_new(e, head)) == NULL)
        return -1;
    if ((r = ring_new(e, j)) == NULL) {
        if (fresh)
            ring_free(e, h);
        return -1;
    }
    list_push_back(&h->link, &r->link); /* the newest, last */
    return 0;
}

/* unique_link adds j (not yet in the index) to the unique index: its unique's head, or the
 * newest of its ring. Returns 0, or -1 when out of memory (j is then not in the index). */
static int unique_link(struct engine *e, struct job *j)
{
    if (!has_unique_entry(j))
        return 0;
    struct job *head = NULL;
    uint64_t h = 0;
    if (!is_dash(job_unique(j), j->unique_len)) {
        if (!memo_find(e, job_unique(j), j->unique_len, &h, &head)) {
            h = any_hash(e, job_unique(j), j->unique_len); /* hashed once: the head's key */
            head = find_head(e, job_unique(j), j->unique_len, h);
        }
        if (head == NULL)
            j->flags |= JOB_UHEAD;
    }
    if (!(j->flags & JOB_UHEAD))
        h = job_unique_hash(e, j);
    if (head != NULL && ring_join(e, head, j) != 0)
        return -1;
    if (hmap_insert(&e->jobs_by_unique, j, h) != 0) {
        j->flags &= (uint8_t)~JOB_UHEAD;
        if (head != NULL)
            ring_free(e, ring_of(e, j));
        return -1;
    }
    unique_changed();
    return 0;
}

/* unique_unlink removes j from the unique index. When j is a head with others in its ring, the
 * next oldest takes j's slot (and leaves its own): no allocation, O(1) expected. */
static void unique_unlink(struct engine *e, struct job *j)
{
    if (!has_unique_entry(j))
        return;
    uint64_t h = job_unique_hash(e, j);
    struct ring_node *r = ring_of(e, j);
    unique_changed();
    if (!(j->flags & JOB_UHEAD) || r == NULL) {
        hmap_remove(&e->jobs_by_unique, j, h);
    } else {
        struct job *next = container_of(r->link.next, struct ring_node, link)->job;
        hmap_remove(&e->jobs_by_unique, next, job_unique_hash(e, next));
        hmap_replace(&e->jobs_by_unique, j, next, h);
        next->flags |= JOB_UHEAD;
    }
    j->flags &= (uint8_t)~JOB_UHEAD;
    if (r != NULL)
        ring_free(e, r);
}

int job_check_uniques(const struct engine *e, char *err, size_t errlen)
{
    size_t entries = 0, ringed = 0, members = 0, rings = 0;
    struct idtab_iter it;
    idtab_iter_init(&it, &e->jobs);
    for (const struct job *j; (j = idtab_iter_next(&it, NULL)) != NULL;) {
        if (j->flags & JOB_RING)
            rings++;
        if (!has_unique_entry(j)) {
            if (ring_of(e, j) != NULL || (j->flags & (JOB_UHEAD | JOB_RING)))
                return engine_check_fail(err, errlen, "job %" PRIu64 " without a unique is in "
                                         "a ring", j->id);
            continue;
        }
        entries++;
        /* (a job of its function and unique: a restore may hold two, the older is found) */
        const struct job *found = job_find_unique(e, j->func, job_unique(j), j->unique_len,
                                                  job_payload(j), job_payload_len(j));
        if (found == NULL || found->func != j->func)
            return engine_check_fail(err, errlen, "job %" PRIu64 " not found by its function "
                                     "and unique", j->id);
        if (is_dash(job_unique(j), j->unique_len)) {
            if (ring_of(e, j) != NULL || (j->flags & (JOB_UHEAD | JOB_RING)))
                return engine_check_fail(err, errlen, "job %" PRIu64 " with the unique - is in "
                                         "a ring", j->id);
            continue;
        }
        ringed++;
        if (!(j->flags & JOB_UHEAD))
            continue;
        /* one head per distinct unique, found by it, whose ring holds the others */
        if (job_find_unique_any(e, job_unique(j), j->unique_len) != j)
            return engine_check_fail(err, errlen, "job %" PRIu64 " heads a ring but is not "
                                     "found by its unique", j->id);
        members++;
        const struct ring_node *r = ring_of(e, j);
        if ((j->flags & JOB_RING) && r == NULL)
            return engine_check_fail(err, errlen, "job %" PRIu64 " has lost its ring", j->id);
        if (r == NULL)
            continue;
        list_for_each(n, &r->link) {
            const struct job *m = container_of(n, struct ring_node, link)->job;
            if ((m->flags & JOB_UHEAD) || !(m->flags & JOB_RING) || !same_unique(m, job_unique(j), j->unique_len) ||
                job_find_id(e, m->id) != m)
                return engine_check_fail(err, errlen, "job %" PRIu64 " is in the ring of "
                                         "another unique", m->id);
            members++;
        }
    }
    if (entries != e->jobs_by_unique.count)
        return engine_check_fail(err, errlen, "%zu jobs have a unique entry, %zu indexed",
                                 entries, e->jobs_by_unique.count);
    if (rings != e->unique_rings.count)
        return engine_check_fail(err, errlen, "%zu jobs are in a ring, %zu ring nodes", rings,
                                 e->unique_rings.count);
    if (members != ringed)
        return engine_check_fail(err, errlen, "%zu jobs have a unique, %zu are in rings", ringed,
                                 members);
    return 0;
}

struct job *job_new(struct engine *e, struct func *f, enum job_prio prio, int background,
                    const char *u, size_t ulen, const char *reducer, size_t rlen,
                    const char *data, size_t dlen)
{
    return job_new_id(e, f, prio, background, u, ulen, reducer, rlen, data, dlen, 0);
}

struct job *job_new_id(struct engine *e, struct func *f, enum job_prio prio, int background,
                       const char *u, size_t ulen, const char *reducer, size_t rlen,
                       const char *data, size_t dlen, uint64_t id)
{
    assert(ulen <= UINT16_MAX && rlen <= UINT16_MAX);
    size_t dl = ulen + rlen + dlen;
    if (dl > UINT32_MAX)
        return NULL;
    /* a small job in a slab block sized to 8 bytes (no malloc header, no 16-byte rounding) */
    size_t size = sizeof(struct job) + sizeof(struct blob) + dl;
    int slab = size <= SLAB_MAX;
    struct job *j = slab ? slab_alloc(size) : malloc(size);
    if (j == NULL)
        return NULL;
    memset(j, 0, sizeof *j);
    struct blob *b = job_blob(j);
    blob_embed(b, sizeof *j, slab);
    if (ulen)
        memcpy(b->data, u, ulen);
    if (rlen)
        memcpy(b->data + ulen, reducer, rlen);
    if (dlen)
        memcpy(b->data + ulen + rlen, data, dlen);
    b->len = (uint32_t)dl;
    j->unique_len = (uint16_t)ulen;
    j->reducer_len = (uint16_t)rlen;
    j->func = f;
    j->prio = (uint8_t)prio;
    j->flags = background ? JOB_BACKGROUND : 0;
    j->timer = HEAP_NONE;
    j->state = JOB_LIMBO;
    j->id = id ? id : e->next_id++;
    if (idtab_put(&e->jobs, j->id, j) != 0) /* (a restored id taken: refused) */
        goto fail;
    if (unique_link(e, j) != 0) {
        idtab_del(&e->jobs, j->id);
        goto fail;
    }
    list_node_init(&j->qnode);
    e->njobs++;
    e->job_bytes += job_size(j);
    return j;
fail:
    blob_unref(b); /* frees the job */
    return NULL;
}

int job_add_waiter(struct job *j, struct peer *client, struct list_node *list)
{
    struct waiter *w = calloc(1, sizeof *w);
    if (w == NULL)
        return -1;
    w->job = j;
    w->client = client;
    if (j->waiters == NULL)
        list_node_init(&w->jnode);
    else
        list_insert_after(j->waiters->jnode.prev, &w->jnode); /* before the newest */
    j->waiters = w; /* the newest first */
    list_push_front(list, &w->pnode);
    return 0;
}

void job_remove_waiter(struct waiter *w)
{
    struct job *j = w->job;
    if (j->waiters == w)
        j->waiters = w->jnode.next == &w->jnode ? NULL : waiter_of(w->jnode.next);
    list_del(&w->jnode);
    list_del(&w->pnode);
    free(w);
}

uint32_t job_nwaiters(const struct job *j)
{
    uint32_t n = 0;
    job_for_each_waiter(w, j)
        n++;
    return n;
}

/* struct job_status is a job's last WORK_STATUS (engine->job_status). */
struct job_status {
    const struct job *job; /* the job */
    uint32_t num;          /* numerator */
    uint32_t den;          /* denominator */
};

/* status_find returns j's entry in engine->job_status, or NULL. */
static struct job_status *status_find(const struct engine *e, const struct job *j)
{
    if (!(j->flags & JOB_STATUS))
        return NULL;
    struct hmap_probe pr;
    for (struct job_status *s = hmap_first(&e->job_status, hmap_mix64((uintptr_t)j), &pr);
         s != NULL; s = hmap_next(&pr)) {
        if (s->job == j)
            return s;
    }
    return NULL;
}

int job_set_status(struct engine *e, struct job *j, uint32_t num, uint32_t den)
{
    struct job_status *s = status_find(e, j);
    if (num == 0 && den == 0) {
        if (s != NULL) {
            hmap_remove(&e->job_status, s, hmap_mix64((uintptr_t)j));
            free(s);
            j->flags &= (uint8_t)~JOB_STATUS;
        }
        return 0;
    }
    if (s == NULL) {
        s = malloc(sizeof *s);
        if (s == NULL)
            return -1;
        s->job = j;
        if (hmap_insert(&e->job_status, s, hmap_mix64((uintptr_t)j)) != 0) {
            free(s);
            return -1;
        }
        j->flags |= JOB_STATUS;
    }
    s->num = num;
    s->den = den;
    return 0;
}

void job_status(const struct engine *e, const struct job *j, uint32_t *num, uint32_t *den)
{
    const struct job_status *s = status_find(e, j);
    *num = s != NULL ? s->num : 0;
    *den = s != NULL ? s->den : 0;
}

void job_detach(struct engine *e, struct job *j)
{
    struct func *f = j->func;
    switch (j->state) {
    case JOB_READY:
        func_unlink(e, j);
        break;
    case JOB_FUTURE:
        heap_remove(&e->timers, &j->timer);
        f->queued[j->prio]--;
        break;
    case JOB_PENDING:
        f->queued[j->prio]--;
        break;
    case JOB_RUNNING: {
        struct job_run *run = j->run;
        struct worker *w = run->worker;
        list_del(&j->qnode);
        w->nrunning--;
        f->running--;
        e->nrunning--;
        heap_remove(&e->timers, &j->timer);
        if (f->flow != NULL && e->ext.flow_stopped != NULL)
            e->ext.flow_stopped(e, j); /* a limit may let the next one start */
        j->state = JOB_LIMBO; /* (before the run record goes: job_worker reads it) */
        j->since = run->started;
        slab_free(run);
        break;
    }
    case JOB_FAILED: /* places only a feature puts jobs in, which it takes them out of */
    case JOB_WAITING:
        assert(e->ext.job_left != NULL);
        if (e->ext.job_left != NULL)
            e->ext.job_left(e, j, (int)j->state);
        break;
    case JOB_LIMBO:
        break;
    }
    j->state = JOB_LIMBO;
}

int job_defer(struct engine *e, struct job *j, double at)
{
    assert(j->state == JOB_LIMBO);
    if (heap_push(&e->timers, &j->timer, at) != 0)
        return -1;
    j->state = JOB_FUTURE;
    j->func->queued[j->prio]++;
    return 0;
}

int job_start(struct engine *e, struct job *j, struct worker *w, uint32_t timeout_ms)
{
    assert(j->state == JOB_LIMBO);
    struct func *f = j->func;
    struct job_run *run = slab_alloc(sizeof *run);
    if (run == NULL)
        return -1;
    double now = engine_now(e);
    func_count(e, f, JOB_EV_ASSIGNED, j->prio);
    if (j->retries > 0)
        func_count(e, f, JOB_EV_RETRIED, j->prio);
    hist_observe(&f->wait, hist_seconds, now - j->since);
    run->worker = w;
    run->started = now; /* the run starts */
    j->run = run;
    job_log(e, j, "assigned");
    j->state = JOB_RUNNING;
    list_push_front(&w->running, &j->qnode);
    w->nrunning++;
    j->func->running++;
    e->nrunning++;
    if ((j->flags & JOB_LIFE) && e->ext.life_started != NULL)
        timeout_ms = e->ext.life_started(e, j, timeout_ms); /* the job's own, if smaller */
    if (timeout_ms > 0)
        heap_push(&e->timers, &j->timer, now + timeout_ms / 1000.0);
    if (f->flow != NULL && e->ext.flow_started != NULL)
        e->ext.flow_started(e, j); /* counts it against the function's limits */
    return 0;
}

void job_fail(struct engine *e, struct job *j)
{
    if (job_has_waiters(j))
        e->sink.job_failed(e, j);
    job_free(e, j);
}

void job_cancel(struct engine *e, struct job *j)
{
    func_count(e, j->func, JOB_EV_CANCELLED, j->prio);
    job_log(e, j, "cancelled");
    if (job_has_waiters(j))
        e->sink.job_failed(e, j);
    if (j->state != JOB_RUNNING) {
        job_free(e, j);
        return;
    }
    e->stats.cancelled_running++;
    /* a worker told of it (it opted in) sends nothing more that matters: the job ends now */
    if (e->sink.job_stopped != NULL && e->sink.job_stopped(e, job_worker(j)->peer, j)) {
        job_free(e, j);
        return;
    }
    /* the worker finishes it; its results then go nowhere and it is never retried */
    while (job_has_waiters(j))
        job_remove_waiter(j->waiters);
    if (j->flags & JOB_STORED)
        e->sink.stored_gone(e, j);
    j->flags &= (uint8_t)~(JOB_STORED | JOB_BACKGROUND);
}

void job_client_gone(struct engine *e, struct list_node *list)
{
    while (!list_empty(list)) {
        struct waiter *w = waiter_of_pnode(list->next);
        struct job *j = w->job;
        job_remove_waiter(w);
        if (!job_has_waiters(j) && !(j->flags & JOB_BACKGROUND) && j->state != JOB_RUNNING) {
            func_count(e, j->func, JOB_EV_ABANDONED, j->prio);
            job_log(e, j, "abandoned: no client waits");
            job_free(e, j);
        }
    }
}

void job_free(struct engine *e, struct job *j)
{
    struct func *f = j->func;
    job_detach(e, j);
    if (e->ext.job_gone != NULL)
        e->ext.job_gone(e, j); /* it never completes: a feature may fail what waits for it */
    idtab_del(&e->jobs, j->id);
    unique_unlink(e, j);
    if (j->flags & JOB_STORED)
        e->sink.stored_gone(e, j);
    if ((j->flags & JOB_EXT) && e->ext.job_freed != NULL)
        e->ext.job_freed(e, j);
    if ((j->flags & JOB_LIFE) && e->ext.life_freed != NULL)
        e->ext.life_freed(e, j);
    while (job_has_waiters(j))
        job_remove_waiter(j->waiters);
    if (j->flags & JOB_STATUS)
        job_set_status(e, j, 0, 0);
    e->njobs--;
    e->job_bytes -= job_size(j);
    blob_unref(job_blob(j)); /* frees the job too, unless a write still holds the payload */
    if (!e->destroying)
        func_release(e, f); /* the function goes with its last job if nothing else holds it */
}

static struct log_limit job_log_limit = {1.0, 0, 0, JOB_LOG_BURST, 0};

void job_log_debug(const struct engine *e, const struct job *j, const char *what)
{
    char h[JOB_HANDLE_BUF], name[ESC_MAX(100)];
    job_handle(e, j, h);
    /* the name escaped (esc.h), so that no name can forge a log line; the first 100 bytes */
    size_t nl = esc_encode(j->func->name, j->func->name_len < 100 ? j->func->name_len : 100, name,
                           ESC_SPACE);
    log_limited(&job_log_limit, LOG_DEBUG, __FILE__, __LINE__, "job %s (%.*s): %s", h, (int)nl,
                name, what);
}
