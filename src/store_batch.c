/* SPDX-License-Identifier: BSD-3-Clause */
/* store_batch: the backend-neutral batch of store operations. See store_batch.h. */
#include "store_batch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    int prio;           /* 0 high, 1 normal, 2 low */
    int dead;           /* cancelled by a done in the same batch */
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

int store_queue_add(struct store_queue *q, const struct store_rec *r)
{
    if (r->id == 0 || r->id > (uint64_t)INT64_MAX || r->prio < 0 || r->prio > 2)
        return -1;
    if (r->func_len > SIZE_MAX / 4 || r->unique_len > SIZE_MAX / 4 || r->reducer_len > SIZE_MAX / 4 ||
        r->data_len > SIZE_MAX / 4)
        return -1; /* the sum below must not overflow */
    struct store_batch *b = current(q);
    if (b == NULL || b->nadds >= UINT32_MAX - 1)
        return -1;
    if (b->nadds == b->cap_adds) {
        size_t ncap = b->cap_adds ? b->cap_adds * 2 : 64;
        struct batch_add *na = realloc(b->adds, ncap * sizeof *na);
        if (na == NULL)
            return -1;
        b->adds = na;
        b->cap_adds = ncap;
    }
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
    size_t total = r->func_len + r->unique_len + r->reducer_len + r->data_len;
    char *mem = malloc(total ? total : 1);
    if (mem == NULL)
        return -1;
    char *p = mem;
    if (r->func_len)
        memcpy(p, r->func, r->func_len);
    p += r->func_len;
    if (r->unique_len)
        memcpy(p, r->unique, r->unique_len);
    p += r->unique_len;
    if (r->reducer_len)
        memcpy(p, r->reducer, r->reducer_len);
    p += r->reducer_len;
    if (r->data_len)
        memcpy(p, r->data, r->data_len);
    struct batch_add *a = &b->adds[b->nadds];
    *a = (struct batch_add){.id = r->id,
                            .when = r->when > 0 ? r->when : 0,
                            .mem = mem,
                            .func_len = r->func_len,
                            .unique_len = r->unique_len,
                            .reducer_len = r->reducer_len,
                            .data_len = r->data_len,
                            .prio = r->prio};
    slot_put(b, b->nadds);
    b->nadds++;
    b->live_adds++;
    if (r->id > b->max_id)
        b->max_id = r->id;
    return 0;
}

/* push_done appends id to b's dones. Returns 0 or -1 when out of memory. */
static int push_done(struct store_batch *b, uint64_t id)
{
    if (b->ndones == b->cap_dones) {
        size_t ncap = b->cap_dones ? b->cap_dones * 2 : 64;
        uint64_t *nd = realloc(b->dones, ncap * sizeof *nd);
        if (nd == NULL)
            return -1;
        b->dones = nd;
        b->cap_dones = ncap;
    }
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
        return 0;
    }
    return push_done(b, id);
}

size_t store_queue_pending(const struct store_queue *q)
{
    return q->cur ? q->cur->live_adds + q->cur->ndones : 0;
}

struct store_batch *store_queue_take(struct store_queue *q)
{
    struct store_batch *b = q->cur;
    if (b == NULL)
        return NULL;
    q->cur = NULL;
    if (q->carry_max_id > b->max_id)
        b->max_id = q->carry_max_id;
    if (b->live_adds + b->ndones == 0) { /* everything cancelled out: nothing to write */
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

size_t store_batch_ops(const struct store_batch *b) { return b->live_adds + b->ndones; }

const char *store_batch_error(const struct store_batch *b) { return b->err; }

int store_queue_retry_dones(struct store_queue *q, const struct store_batch *b)
{
    for (size_t i = 0; i < b->ndones; i++)
        if (store_queue_done(q, b->dones[i]) != 0)
            return -1;
    return 0;
}

void store_batch_free(struct store_batch *b)
{
    if (b == NULL)
        return;
    for (size_t i = 0; i < b->nadds; i++)
        free(b->adds[i].mem);
    free(b->adds);
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
                            .when = a->when};
    return 0;
}

size_t store_batch_ndones(const struct store_batch *b) { return b->ndones; }

uint64_t store_batch_done_at(const struct store_batch *b, size_t i) { return b->dones[i]; }

uint64_t store_batch_max_id(const struct store_batch *b) { return b->max_id; }

void store_batch_set_error(struct store_batch *b, const char *text)
{
    snprintf(b->err, sizeof b->err, "%s", text ? text : "");
}
