/* SPDX-License-Identifier: BSD-3-Clause */
/* store_mem: the in-memory test backend. See store_mem.h. */
#include "store_mem.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "store_backend.h"

/* struct mjob is one stored job: its fields copied into one allocation. */
struct mjob {
    uint64_t id;       /* handle number */
    int64_t when;      /* run-at time, 0 = now */
    int prio;          /* 0..2 */
    char *mem;         /* func | unique | reducer | data | meta */
    size_t len[5];     /* the five lengths */
};

/* struct mrec is one stored record: key then value in mem. */
struct mrec {
    int kind;          /* STORE_REC_* */
    char *mem;         /* key | value */
    size_t key_len, value_len;
};

/* struct mstore is one named store. */
struct mstore {
    struct mstore *next;           /* next in the registry */
    char *name;                    /* its location */
    struct mjob *jobs;             /* sorted by id */
    size_t n, cap;                 /* jobs used and allocated */
    struct mrec *recs;             /* records, in the order first written */
    size_t nrecs, cap_recs;        /* used and allocated */
    uint64_t hwm;                  /* largest id ever written */
    int open;                      /* opened by a manager */
    struct store_mem_faults faults; /* what to break */
    uint64_t writes, failed;       /* write_batch outcomes */
    char err[128];                 /* the last error, or "" */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct mstore *stores;

/* find returns store name, creating it when create is set. NULL if absent or out of memory. */
static struct mstore *find(const char *name, int create)
{
    for (struct mstore *m = stores; m != NULL; m = m->next)
        if (strcmp(m->name, name) == 0)
            return m;
    if (!create)
        return NULL;
    struct mstore *m = calloc(1, sizeof *m);
    if (m == NULL || (m->name = strdup(name)) == NULL) {
        free(m);
        return NULL;
    }
    m->next = stores;
    stores = m;
    return m;
}

/* lower returns the index of the first job with an id >= id. */
static size_t lower(const struct mstore *m, uint64_t id)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->jobs[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* copy_job makes an mjob of r. Returns 0 or -1 when out of memory. */
static int copy_job(const struct store_rec *r, struct mjob *j)
{
    size_t meta_len = r->meta != NULL ? r->meta_len : 0;
    size_t total = r->func_len + r->unique_len + r->reducer_len + r->data_len + meta_len;
    char *p = malloc(total ? total : 1);
    if (p == NULL)
        return -1;
    *j = (struct mjob){r->id, r->when, r->prio, p,
                       {r->func_len, r->unique_len, r->reducer_len, r->data_len, meta_len}};
    if (meta_len)
        memcpy(p + total - meta_len, r->meta, meta_len);
    if (r->func_len)
        memcpy(p, r->func, r->func_len);
    if (r->unique_len)
        memcpy(p + r->func_len, r->unique, r->unique_len);
    if (r->reducer_len)
        memcpy(p + r->func_len + r->unique_len, r->reducer, r->reducer_len);
    if (r->data_len)
        memcpy(p + r->func_len + r->unique_len + r->reducer_len, r->data, r->data_len);
    return 0;
}

/* insert puts j in m (replacing a job of the same id); m has room. */
static void insert(struct mstore *m, const struct mjob *j)
{
    size_t k = lower(m, j->id);
    if (k < m->n && m->jobs[k].id == j->id) {
        free(m->jobs[k].mem);
        m->jobs[k] = *j;
    } else {
        memmove(&m->jobs[k + 1], &m->jobs[k], (m->n - k) * sizeof *m->jobs);
        m->jobs[k] = *j;
        m->n++;
    }
    if (j->id > m->hwm)
        m->hwm = j->id;
}

/* reserve makes room for more jobs. Returns 0 or -1. */
static int reserve(struct mstore *m, size_t more)
{
    return array_grow((void **)&m->jobs, &m->cap, m->n + more, sizeof *m->jobs, 16);
}

/* rec_reserve makes room for more records. Returns 0 or -1. */
static int rec_reserve(struct mstore *m, size_t more)
{
    return array_grow((void **)&m->recs, &m->cap_recs, m->nrecs + more, sizeof *m->recs, 8);
}

static void erase(struct mstore *m, uint64_t id)
{
    size_t k = lower(m, id);
    if (k < m->n && m->jobs[k].id == id) {
        free(m->jobs[k].mem);
        memmove(&m->jobs[k], &m->jobs[k + 1], (m->n - k - 1) * sizeof *m->jobs);
        m->n--;
    }
}

/* rec_cmp orders records by kind, then key bytes (shorter first on a common prefix). */
static int rec_cmp(const struct mrec *x, int kind, const char *key, size_t klen)
{
    if (x->kind != kind)
        return x->kind < kind ? -1 : 1;
    size_t n = x->key_len < klen ? x->key_len : klen;
    int c = memcmp(x->mem, key, n);
    if (c != 0)
        return c;
    return x->key_len == klen ? 0 : x->key_len < klen ? -1 : 1;
}

/* rec_apply writes or deletes record r, whose copy (key | value) is mem (NULL for a deletion);
 * m has room for one more record. Records stay in (kind, key) order, as the SQL backends replay
 * them. */
static void rec_apply(struct mstore *m, const struct store_record *r, char *mem)
{
    size_t i = 0;
    while (i < m->nrecs && rec_cmp(&m->recs[i], r->kind, r->key, r->key_len) < 0)
        i++;
    int found = i < m->nrecs && rec_cmp(&m->recs[i], r->kind, r->key, r->key_len) == 0;
    if (found)
        free(m->recs[i].mem);
    if (mem == NULL) {
        if (found) {
            memmove(&m->recs[i], &m->recs[i + 1], (m->nrecs - i - 1) * sizeof *m->recs);
            m->nrecs--;
        }
        return;
    }
    if (!found) {
        memmove(&m->recs[i + 1], &m->recs[i], (m->nrecs - i) * sizeof *m->recs);
        m->nrecs++;
    }
    m->recs[i] = (struct mrec){r->kind, mem, r->key_len, r->value_len};
}

static void free_store(struct mstore *m)
{
    for (size_t i = 0; i < m->nrecs; i++)
        free(m->recs[i].mem);
    free(m->recs);
    for (size_t i = 0; i < m->n; i++)
        free(m->jobs[i].mem);
    free(m->jobs);
    free(m->name);
    free(m);
}

/* ---------------------------------------------------------------- the backend */

static void *mem_open(const struct store_params *p, uint64_t *next_id, char *err, size_t errlen)
{
    pthread_mutex_lock(&mu);
    struct mstore *m = find(p->location, 1);
    const char *why = m == NULL ? "out of memory"
                      : m->open ? "in use by another server"
                      : m->faults.fail_open ? "injected open failure" : NULL;
    if (why != NULL) {
        pthread_mutex_unlock(&mu);
        snprintf(err, errlen, "store mem:%s: %s", p->location, why);
        return NULL;
    }
    m->open = 1;
    if (next_id != NULL && *next_id <= m->hwm)
        *next_id = m->hwm + 1;
    pthread_mutex_unlock(&mu);
    return m;
}

static int mem_replay(void *db, int (*cb)(void *ctx, const struct store_rec *r), void *ctx)
{
    struct mstore *m = db;
    pthread_mutex_lock(&mu);
    int rc = 0;
    for (size_t i = 0; i < m->n && rc == 0; i++) {
        if (m->faults.fail_replay > 0 && i == (size_t)m->faults.fail_replay) {
            snprintf(m->err, sizeof m->err, "injected read failure");
            rc = -1;
            break;
        }
        const struct mjob *j = &m->jobs[i];
        const char *p = j->mem;
        size_t off_meta = j->len[0] + j->len[1] + j->len[2] + j->len[3];
        struct store_rec r = {j->id, p, j->len[0], p + j->len[0], j->len[1],
                              p + j->len[0] + j->len[1], j->len[2],
                              p + j->len[0] + j->len[1] + j->len[2], j->len[3], j->prio, j->when,
                              j->len[4] ? p + off_meta : NULL, j->len[4]};
        rc = cb(ctx, &r);
    }
    pthread_mutex_unlock(&mu);
    return rc;
}

static int mem_replay_records(void *db, int (*cb)(void *ctx, const struct store_record *r), void *ctx)
{
    struct mstore *m = db;
    pthread_mutex_lock(&mu);
    int rc = 0;
    for (size_t i = 0; i < m->nrecs && rc == 0; i++) {
        const struct mrec *x = &m->recs[i];
        struct store_record r = {x->kind, x->mem, x->key_len, x->mem + x->key_len, x->value_len};
        rc = cb(ctx, &r);
    }
    pthread_mutex_unlock(&mu);
    return rc;
}

static int mem_write_batch(void *db, struct store_batch *b)
{
    struct mstore *m = db;
    size_t nadds = store_batch_nadds(b);
    struct store_rec r;
    int has_add = 0;
    for (size_t i = 0; i < nadds && !has_add; i++)
        has_add = store_batch_add_at(b, i, &r) == 0;
    pthread_mutex_lock(&mu);
    while (m->faults.stall) { /* a hung write: poll the fault every millisecond */
        pthread_mutex_unlock(&mu);
        struct timespec ms = {0, 1000000L};
        nanosleep(&ms, NULL);
        pthread_mutex_lock(&mu);
    }
    const char *why = NULL;
    if (m->faults.fail_writes > 0) {
        m->faults.fail_writes--;
        why = "injected write failure";
    } else if (m->faults.full && has_add) {
        why = "disk full";
    }
    /* copy first, then apply: a batch is stored whole or not at all */
    struct mjob *copies = NULL;
    size_t ncopies = 0;
    if (why == NULL && nadds > 0) {
        copies = malloc(nadds * sizeof *copies);
        if (copies == NULL || reserve(m, nadds) != 0)
            why = "out of memory";
        for (size_t i = 0; why == NULL && i < nadds; i++) {
            if (store_batch_add_at(b, i, &r) != 0)
                continue;
            if (copy_job(&r, &copies[ncopies]) != 0)
                why = "out of memory";
            else
                ncopies++;
        }
    }
    size_t nrecs = store_batch_nrecords(b);
    char **rmem = NULL;
    if (why == NULL && nrecs > 0) {
        rmem = calloc(nrecs, sizeof *rmem);
        if (rmem == NULL || rec_reserve(m, nrecs) != 0)
            why = "out of memory";
        for (size_t i = 0; why == NULL && i < nrecs; i++) {
            struct store_record x;
            store_batch_record_at(b, i, &x);
            if (x.value == NULL)
                continue;
            if ((rmem[i] = malloc(x.key_len + x.value_len)) == NULL) {
                why = "out of memory";
                break;
            }
            memcpy(rmem[i], x.key, x.key_len);
            if (x.value_len)
                memcpy(rmem[i] + x.key_len, x.value, x.value_len);
        }
    }
    if (why != NULL) {
        for (size_t i = 0; i < ncopies; i++)
            free(copies[i].mem);
        free(copies);
        for (size_t i = 0; rmem != NULL && i < nrecs; i++)
            free(rmem[i]);
        free(rmem);
        snprintf(m->err, sizeof m->err, "%s (batch of %zu ops)", why, store_batch_ops(b));
        store_batch_set_error(b, m->err);
        m->failed++;
        pthread_mutex_unlock(&mu);
        return -1;
    }
    for (size_t i = 0; i < ncopies; i++)
        insert(m, &copies[i]);
    free(copies);
    for (size_t i = 0, n = store_batch_ndones(b); i < n; i++)
        erase(m, store_batch_done_at(b, i));
    for (size_t i = 0; i < nrecs; i++) {
        struct store_record x;
        store_batch_record_at(b, i, &x);
        rec_apply(m, &x, rmem[i]);
    }
    free(rmem);
    if (store_batch_max_id(b) > m->hwm)
        m->hwm = store_batch_max_id(b);
    m->writes++;
    m->err[0] = '\0';
    store_batch_set_error(b, NULL);
    pthread_mutex_unlock(&mu);
    return 0;
}

static void mem_maintain(void *db) { (void)db; }

static const char *mem_error(const void *db) { return ((const struct mstore *)db)->err; }

static const char *mem_note(const void *db)
{
    (void)db;
    return NULL;
}

static uint64_t mem_quarantined(const void *db, const char **note)
{
    (void)db;
    if (note != NULL)
        *note = "";
    return 0;
}

static void mem_close(void *db)
{
    struct mstore *m = db;
    if (m == NULL)
        return;
    pthread_mutex_lock(&mu);
    m->open = 0;
    pthread_mutex_unlock(&mu);
}

const struct store_backend store_mem_backend = {
    .name = "mem",
    .open = mem_open,
    .replay = mem_replay,
    .replay_records = mem_replay_records,
    .write_batch = mem_write_batch,
    .maintain = mem_maintain,
    .error = mem_error,
    .note = mem_note,
    .quarantined = mem_quarantined,
    .close = mem_close,
};

/* ---------------------------------------------------------------- test controls */

void store_mem_set_faults(const char *name, const struct store_mem_faults *f)
{
    pthread_mutex_lock(&mu);
    struct mstore *m = find(name, 1);
    if (m != NULL)
        m->faults = *f;
    pthread_mutex_unlock(&mu);
}

int store_mem_put(const char *name, const struct store_rec *r)
{
    if (r->id == 0 || r->id > (uint64_t)INT64_MAX || r->prio < 0 || r->prio > 2)
        return -1;
    pthread_mutex_lock(&mu);
    struct mstore *m = find(name, 1);
    struct mjob j;
    int rc = -1;
    if (m != NULL && reserve(m, 1) == 0 && copy_job(r, &j) == 0) {
        insert(m, &j);
        rc = 0;
    }
    pthread_mutex_unlock(&mu);
    return rc;
}

size_t store_mem_records(const char *name)
{
    pthread_mutex_lock(&mu);
    const struct mstore *m = find(name, 0);
    size_t n = m ? m->nrecs : 0;
    pthread_mutex_unlock(&mu);
    return n;
}

size_t store_mem_count(const char *name)
{
    pthread_mutex_lock(&mu);
    const struct mstore *m = find(name, 0);
    size_t n = m ? m->n : 0;
    pthread_mutex_unlock(&mu);
    return n;
}

int store_mem_has(const char *name, uint64_t id)
{
    pthread_mutex_lock(&mu);
    const struct mstore *m = find(name, 0);
    int has = 0;
    if (m != NULL) {
        size_t k = lower(m, id);
        has = k < m->n && m->jobs[k].id == id;
    }
    pthread_mutex_unlock(&mu);
    return has;
}

uint64_t store_mem_writes(const char *name)
{
    pthread_mutex_lock(&mu);
    const struct mstore *m = find(name, 0);
    uint64_t n = m ? m->writes : 0;
    pthread_mutex_unlock(&mu);
    return n;
}

uint64_t store_mem_failed(const char *name)
{
    pthread_mutex_lock(&mu);
    const struct mstore *m = find(name, 0);
    uint64_t n = m ? m->failed : 0;
    pthread_mutex_unlock(&mu);
    return n;
}

void store_mem_reset(void)
{
    pthread_mutex_lock(&mu);
    struct mstore **pp = &stores;
    while (*pp != NULL) {
        struct mstore *m = *pp;
        if (m->open) {
            pp = &m->next;
            continue;
        }
        *pp = m->next;
        free_store(m);
    }
    pthread_mutex_unlock(&mu);
}
