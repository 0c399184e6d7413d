/* SPDX-License-Identifier: BSD-3-Clause */
/* store_batch: the backend-neutral batch of store operations. See store_batch.h. */
#include "store_batch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "hmap.h"

/* struct batch_add is one queued add: the job's fields copied into one allocation. */
struct batch_add {
    uint64_t id;        /* handle number */
    int64_t when;       /* run-at time, 0 = now */
    char *mem;          /* func | unique | reducer | data, owned; NULL once cancelled */
    size_t func_len;    /* bytes of func at mem */
    size_t unique_len;  /* bytes of unique after func */
    size_t reducer_len; /* bytes of reducer after unique */
    size_t data_len;    /* bytes of data after reducer */
    size_t meta_len;    /* bytes of meta after data */
    int prio;           /* 0 high, 1 normal, 2 low */
    int dead;           /* cancelled by a done in the same batch */
    int update;         /* a new version of a job that may be stored already (store_queue_update) */
};

/* struct batch_record is one queued record operation: key then value in mem. */
struct batch_record {
    int kind;           /* STORE_REC_* */
    int del;            /* a deletion (no value) */
    char *mem;          /* key | value, owned */
    size_t key_len;     /* bytes of key at mem */
    size_t value_len;   /* bytes of value after key */
};

/* struct store_batch is a batch of operations: adds (with copies) and done ids. */
struct store_batch {
    struct batch_add *adds; /* adds, in the order queued */
    size_t nadds;           /* entries used in adds, cancelled ones included */
    size_t cap_adds;        /* entries allocated in adds */
    size_t live_adds;       /* adds not cancelled */
    uint64_t *dones;        /* ids to delete */
    size_t ndones;          /* entries used in dones */
    size_t cap_dones;       /* entries allocated in dones */
    struct batch_record *recs; /* record operations, in the order queued */
    size_t nrecs;           /* entries used in recs */
    size_t cap_recs;        /* entries allocated in recs */
    uint32_t *slots;        /* open-addressing index of adds by id: add index + 1, 0 = empty */
    size_t nslots;          /* slots allocated (a power of two, or 0) */
    uint64_t max_id;        /* largest id ever added to this batch (cancelled ones too) */
    char err[256];          /* the last failed write's text, or "" */
};

/* slot_put indexes add number i (by its id) in b's slots, which have room. */
static void slot_put(struct store_batch *b, size_t i)
{
    size_t mask = b->nslots - 1;
    size_t k = (size_t)hmap_mix64(b->adds[i].id) & mask;
    while (b->slots[k] != 0)
        k = (k + 1) & mask;
    b->slots[k] = (uint32_t)(i + 1);
}

/* slot_find returns the add of id in b, or NULL. */
static struct batch_add *slot_find(const struct store_batch *b, uint64_t id)
{
    if (b->nslots == 0)
        return NULL;
    size_t mask = b->nslots - 1;
    for (size_t k = (size_t)hmap_mix64(id) & mask; b->slots[k] != 0; k = (k + 1) & mask)
        if (b->adds[b->slots[k] - 1].id == id)
            return &b->adds[b->slots[k] - 1];
    return NULL;
}

/* current returns the batch being filled, creating it. NULL when out of memory. */
static struct store_batch *current(struct store_queue *q)
{
    if (q->cur == NULL)
        q->cur = calloc(1, sizeof *q->cur);
    return q->cur;
}

/* copy_rec copies the byte fields of r into one allocation (func | unique | reducer | data | meta).
 * Returns it, or NULL when out of memory. */
static char *copy_rec(const struct store_rec *r, size_t meta_len)
{
    size_t total = r->func_len + r->unique_len + r->reducer_len + r->data_len + meta_len;
    char *mem = malloc(total ? total : 1);
    if (mem == NULL)
        return NULL;
    char *p = mem;
    const struct { const void *src; size_t n; } parts[] = {
        {r->func, r->func_len}, {r->unique, r->unique_len}, {r->reducer, r->reducer_len},
        {r->data, r->data_len}, {r->meta, meta_len}};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        if (parts[i].n)
            memcpy(p, parts[i].src, parts[i].n);
        p += parts[i].n;
    }
    return mem;
}

/* fill sets add a from r, owning mem. */
static void fill(struct batch_add *a, const struct store_rec *r, char *mem, size_t meta_len,
                 int update)
{
    *a = (struct batch_add){.id = r->id,
                            .when = r->when > 0 ? r->when : 0,
                            .mem = mem,
                            .func_len = r->func_len,
                            .unique_len = r->unique_len,
                            .reducer_len = r->reducer_len,
                            .data_len = r->data_len,
                            .meta_len = meta_len,
                            .prio = r->prio,
                            .update = update};
}

/* queue_add queues r as an add (update 0) or an update (1). */
static int queue_add(struct store_queue *q, const struct store_rec *r, int update)
{
    size_t meta_len = r->meta != NULL ? r->meta_len : 0;
    if (r->id == 0 || r->id > (uint64_t)INT64_MAX || r->prio < 0 || r->prio > 2 ||
        meta_len > STORE_META_MAX)
        return -1;
    if (r->func_len > SIZE_MAX / 8 || r->unique_len > SIZE_MAX / 8 || r->reducer_len > SIZE_MAX / 8 ||
        r->data_len > SIZE_MAX / 8)
        return -1; /* the sum in copy_rec must not overflow */
    struct store_batch *b = current(q);
    if (b == NULL || b->nadds >= UINT32_MAX - 1)
        return -1;
    struct batch_add *old = slot_find(b, r->id);
    if (old != NULL) { /* a second version in this batch replaces the first */
        if (old->dead)
            return -1; /* deleted in this batch: a job never comes back */
        char *mem = copy_rec(r, meta_len);
        if (mem == NULL)
            return -1;
        free(old->mem);
        fill(old, r, mem, meta_len, update || old->update);
        return 0;
    }
    if (array_grow((void **)&b->adds, &b->cap_adds, b->nadds + 1, sizeof *b->adds, 64) != 0)
        return -1;
    if ((b->nadds + 1) * 2 > b->nslots) { /* keep the index at most half full */
        size_t nslots = b->nslots ? b->nslots * 2 : 128;
        uint32_t *ns = calloc(nslots, sizeof *ns);
        if (ns == NULL)
            return -1;
        free(b->slots);
        b->slots = ns;
        b->nslots = nslots;
        for (size_t i = 0; i < b->nadds; i++)
            slot_put(b, i);
    }
    char *mem = copy_rec(r, meta_len);
    if (mem == NULL)
        return -1;
    fill(&b->adds[b->nadds], r, mem, meta_len, update);
    slot_put(b, b->nadds);
    b->nadds++;
    b->live_adds++;
    if (r->id > b->max_id)
        b->max_id = r->id;
    return 0;
}

int store_queue_add(struct store_queue *q, const struct store_rec *r) { return queue_add(q, r, 0); }

int store_queue_update(struct store_queue *q, const struct store_rec *r) { return queue_add(q, r, 1); }

int store_queue_record(struct store_queue *q, const struct store_record *r)
{
    size_t vlen = r->value != NULL ? r->value_len : 0;
    if (r->kind <= 0 || r->kind >= STORE_REC_KINDS || r->key_len == 0 || r->key_len > STORE_KEY_MAX ||
        vlen > STORE_META_MAX)
        return -1;
    struct store_batch *b = current(q);
    if (b == NULL)
        return -1;
    if (array_grow((void **)&b->recs, &b->cap_recs, b->nrecs + 1, sizeof *b->recs, 8) != 0)
        return -1;
    char *mem = malloc(r->key_len + vlen);
    if (mem == NULL)
        return -1;
    memcpy(mem, r->key, r->key_len);
    if (vlen)
        memcpy(mem + r->key_len, r->value, vlen);
    b->recs[b->nrecs++] = (struct batch_record){r->kind, r->value == NULL, mem, r->key_len, vlen};
    return 0;
}

size_t store_batch_nrecords(const struct store_batch *b) { return b->nrecs; }

void store_batch_record_at(const struct store_batch *b, size_t i, struct store_record *r)
{
    const struct batch_record *x = &b->recs[i];
    *r = (struct store_record){x->kind, x->mem, x->key_len, x->del ? NULL : x->mem + x->key_len,
                               x->value_len};
}

/* push_done appends id to b's dones. Returns 0 or -1 when out of memory. */
static int push_done(struct store_batch *b, uint64_t id)
{
    if (array_grow((void **)&b->dones, &b->cap_dones, b->ndones + 1, sizeof *b->dones, 64) != 0)
        return -1;
    b->dones[b->ndones++] = id;
    return 0;
}

int store_queue_done(struct store_queue *q, uint64_t id)
{
    struct store_batch *b = current(q);
    if (b == NULL)
        return -1;
    struct batch_add *a = slot_find(b, id);
    if (a != NULL) { /* added in this very batch: cancel both */
        if (!a->dead) {
            a->dead = 1;
            free(a->mem);
            a->mem = NULL;
            b->live_adds--;
        }
        if (!a->update)
            return 0;
        a->update = 0; /* an older version may be stored: delete it (once) */
    }
    return push_done(b, id);
}

size_t store_queue_pending(const struct store_queue *q)
{
    return q->cur ? store_batch_ops(q->cur) : 0;
}

struct store_batch *store_queue_take(struct store_queue *q)
{
    struct store_batch *b = q->cur;
    if (b == NULL)
        return NULL;
    q->cur = NULL;
    if (q->carry_max_id > b->max_id)
        b->max_id = q->carry_max_id;
    if (store_batch_ops(b) == 0) { /* everything cancelled out: nothing to write */
        q->carry_max_id = b->max_id;
        store_batch_free(b);
        return NULL;
    }
    q->carry_max_id = 0;
    return b;
}

struct store_batch *store_queue_take_final(struct store_queue *q)
{
    struct store_batch *b = store_queue_take(q);
    if (b != NULL || q->carry_max_id == 0)
        return b;
    b = calloc(1, sizeof *b);
    if (b == NULL)
        return NULL;
    b->max_id = q->carry_max_id;
    q->carry_max_id = 0;
    return b;
}

size_t store_batch_ops(const struct store_batch *b) { return b->live_adds + b->ndones + b->nrecs; }

const char *store_batch_error(const struct store_batch *b) { return b->err; }

int store_queue_retry_dones(struct store_queue *q, const struct store_batch *b)
{
    for (size_t i = 0; i < b->ndones; i++)
        if (store_queue_done(q, b->dones[i]) != 0)
            return -1;
    for (size_t i = 0; i < b->nadds; i++) {
        const struct batch_add *a = &b->adds[i];
        struct store_rec r;
        /* an update is tried again unless the current batch has a newer version of the job */
        if (!a->update || store_batch_add_at(b, i, &r) != 0 ||
            (q->cur != NULL && slot_find(q->cur, a->id) != NULL))
            continue;
        if (store_queue_update(q, &r) != 0)
            return -1;
    }
    /* records go before the current batch's, so a newer write of a key still wins */
    struct store_batch *cur = current(q);
    if (cur == NULL)
        return -1;
    size_t mine = cur->nrecs;
    for (size_t i = 0; i < b->nrecs; i++) {
        struct store_record r;
        store_batch_record_at(b, i, &r);
        if (store_queue_record(q, &r) != 0)
            return -1;
    }
    /* rotate: [mine..][retried..] -> [retried..][mine..] */
    size_t n = cur->nrecs - mine;
    if (n > 0 && mine > 0) {
        struct batch_record *tmp = malloc(n * sizeof *tmp);
        if (tmp == NULL)
            return -1;
        memcpy(tmp, cur->recs + mine, n * sizeof *tmp);
        memmove(cur->recs + n, cur->recs, mine * sizeof *tmp);
        memcpy(cur->recs, tmp, n * sizeof *tmp);
        free(tmp);
    }
    return 0;
}

void store_batch_free(struct store_batch *b)
{
    if (b == NULL)
        return;
    for (size_t i = 0; i < b->nadds; i++)
        free(b->adds[i].mem);
    free(b->adds);
    for (size_t i = 0; i < b->nrecs; i++)
        free(b->recs[i].mem);
    free(b->recs);
    free(b->dones);
    free(b->slots);
    free(b);
}

void store_queue_clear(struct store_queue *q)
{
    store_batch_free(q->cur);
    q->cur = NULL;
}

size_t store_batch_nadds(const struct store_batch *b) { return b->nadds; }

int store_batch_add_is_update(const struct store_batch *b, size_t i) { return b->adds[i].update; }

int store_batch_add_at(const struct store_batch *b, size_t i, struct store_rec *r)
{
    const struct batch_add *a = &b->adds[i];
    if (a->dead)
        return -1;
    const char *p = a->mem;
    *r = (struct store_rec){.id = a->id,
                            .func = p,
                            .func_len = a->func_len,
                            .unique = p + a->func_len,
                            .unique_len = a->unique_len,
                            .reducer = p + a->func_len + a->unique_len,
                            .reducer_len = a->reducer_len,
                            .data = p + a->func_len + a->unique_len + a->reducer_len,
                            .data_len = a->data_len,
                            .prio = a->prio,
                            .when = a->when,
                            .meta = a->meta_len ? p + a->func_len + a->unique_len + a->reducer_len +
                                                      a->data_len : NULL,
                            .meta_len = a->meta_len};
    return 0;
}

size_t store_batch_ndones(const struct store_batch *b) { return b->ndones; }

uint64_t store_batch_done_at(const struct store_batch *b, size_t i) { return b->dones[i]; }

uint64_t store_batch_max_id(const struct store_batch *b) { return b->max_id; }

void store_batch_set_error(struct store_batch *b, const char *text)
{
    snprintf(b->err, sizeof b->err, "%s", text ? text : "");
}
