/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_store: libFuzzer target for the store manager (src/store/store.c) over the in-memory backend
 * (src/store/store_mem.c). The input is a sequence of operations: submit a background job (held for one
 * of four owners, or for nobody), finish a live job, flush, commit (flush and wait until the batch
 * is written), inject write failures or a full disk, drop an owner, and restart (close the store,
 * throw the engine away, open a new one and replay). Checked:
 *   - a reply is released only once its job is in the backend (stored), or with an error when the
 *     job is not; a job whose reply was an error is gone from the engine;
 *   - no reply reaches an owner after store_owner_gone; every held reply is settled once the
 *     store is idle;
 *   - after a restart, every job acknowledged as stored and not finished is back, and no finished
 *     job is (the restart first clears the faults, so the store's last write succeeds);
 *   - engine_check after every operation. */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "engine.h"
#include "func.h"
#include "fuzz_util.h"
#include "job.h"
#include "log.h"
#include "options.h"
#include "store.h"
#include "store_backend.h"
#include "store_mem.h"

#define NAME "fuzz"
#define MAX_OPS 400
#define MAX_IDS 512
#define NOWNERS 4

/* what the model knows about a job id */
enum { ID_LIVE = 1, ID_ACKED = 2, ID_DONE = 4, ID_FAILED = 8 };

static struct {
    struct config cfg;
    struct engine eng;
    int open;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int notified;
    char owners[NOWNERS];   /* their addresses are the owners */
    int held[NOWNERS];      /* replies held per owner, as the sink heard */
    uint64_t ids[MAX_IDS];  /* every job id submitted in this input */
    uint8_t st[MAX_IDS];    /* its ID_* bits */
    size_t nids;
    int full;
} S;

static int slot_of(uint64_t id)
{
    for (size_t i = 0; i < S.nids; i++)
        if (S.ids[i] == id)
            return (int)i;
    return -1;
}

static int owner_index(void *o)
{
    for (int k = 0; k < NOWNERS; k++)
        if (o == &S.owners[k])
            return k;
    return -1;
}

static void on_held(struct engine *e, void *owner)
{
    (void)e;
    int k = owner_index(owner);
    FUZZ_CHECK(k >= 0, "held for an unknown owner");
    S.held[k]++;
}

static void on_acked(struct engine *e, void *owner, uint64_t id, const char *error)
{
    int k = owner_index(owner);
    FUZZ_CHECK(k >= 0, "reply to an unknown owner");
    FUZZ_CHECK(S.held[k] > 0, "reply to owner %d that has none held (gone?)", k);
    S.held[k]--;
    int i = slot_of(id);
    FUZZ_CHECK(i >= 0, "reply about unknown job %llu", (unsigned long long)id);
    int stored = store_mem_has(NAME, id);
    if (error == NULL) {
        FUZZ_CHECK(stored || (S.st[i] & ID_DONE), "job %llu acknowledged but not stored",
                   (unsigned long long)id);
    } else {
        FUZZ_CHECK(!stored, "job %llu reported failed but stored", (unsigned long long)id);
        FUZZ_CHECK(job_find_id(e, id) == NULL, "failed job %llu still in the engine",
                   (unsigned long long)id);
    }
}

static void on_replay_done(struct engine *e) { (void)e; }

static void on_notify(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&S.mu);
    S.notified = 1;
    pthread_cond_signal(&S.cv);
    pthread_mutex_unlock(&S.mu);
}

/* pump waits for the committer's wake-up (bounded) and runs the loop's side. */
static void pump(void)
{
    pthread_mutex_lock(&S.mu);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 60;
    while (!S.notified)
        FUZZ_CHECK(pthread_cond_timedwait(&S.cv, &S.mu, &until) == 0, "the committer never woke the loop");
    S.notified = 0;
    pthread_mutex_unlock(&S.mu);
    store_complete(&S.eng);
}

static int in_flight(void)
{
    struct store_state s;
    store_get_state(&S.eng, &s);
    return s.in_flight;
}

/* settle updates the model from the engine: a live job that is gone failed (its batch failed). */
static void settle(void)
{
    for (size_t i = 0; i < S.nids; i++) {
        if (!(S.st[i] & ID_LIVE) || job_find_id(&S.eng, S.ids[i]) != NULL)
            continue;
        S.st[i] &= (uint8_t)~ID_LIVE;
        S.st[i] |= ID_FAILED;
    }
    for (size_t i = 0; i < S.nids; i++) {
        struct job *j = job_find_id(&S.eng, S.ids[i]);
        if (j != NULL && (j->state == JOB_READY || j->state == JOB_FUTURE))
            S.st[i] |= ID_ACKED; /* runnable: its batch is durable */
    }
}

static double clock_now(struct engine *e)
{
    (void)e;
    return 1700000000.0;
}

static void noop_peer(struct engine *e, struct peer *p)
{
    (void)e;
    (void)p;
}

static void noop_shutdown(struct engine *e, int g)
{
    (void)e;
    (void)g;
}

static void check_engine(void)
{
    char err[256];
    FUZZ_CHECK(engine_check(&S.eng, err, sizeof err) == 0, "%s", err);
}

/* start makes a fresh engine and opens the store on it, replaying what is stored. */
static void start(void)
{
    static const struct engine_ops ops = {noop_peer, noop_peer, noop_shutdown, clock_now, noop_peer};
    static const struct store_sink sink = {on_held, on_acked, on_replay_done};
    options_defaults(&S.cfg);
    FUZZ_CHECK(engine_init(&S.eng, &S.cfg, &ops, &S) == 0, "engine_init");
    S.eng.next_id = 1; /* deterministic; the store raises it past every id it has used */
    struct store_params p;
    memset(&p, 0, sizeof p);
    p.location = NAME;
    p.max_function = 512;
    char err[256];
    int rc = store_start(&S.eng, &store_mem_backend, &p, &sink, on_notify, NULL, err, sizeof err);
    FUZZ_CHECK(rc == 0, "store_start: %s", err);
    S.open = 1;
    while (S.eng.replaying)
        pump();
    memset(S.held, 0, sizeof S.held);
    for (size_t i = 0; i < S.nids; i++) {
        int back = job_find_id(&S.eng, S.ids[i]) != NULL;
        if ((S.st[i] & ID_ACKED) && !(S.st[i] & ID_DONE))
            FUZZ_CHECK(back, "acknowledged job %llu lost by a restart", (unsigned long long)S.ids[i]);
        if (S.st[i] & ID_DONE)
            FUZZ_CHECK(!back, "finished job %llu came back", (unsigned long long)S.ids[i]);
        if (S.st[i] & ID_FAILED)
            FUZZ_CHECK(!back, "failed job %llu came back", (unsigned long long)S.ids[i]);
        S.st[i] &= (uint8_t)~ID_LIVE;
        if (back)
            S.st[i] |= ID_LIVE | ID_ACKED;
    }
    check_engine();
}

/* stop closes the store (its last write must succeed: faults cleared) and drops the engine. */
static void stop(void)
{
    struct store_mem_faults none = {0};
    store_mem_set_faults(NAME, &none);
    S.full = 0;
    store_close(&S.eng);
    S.open = 0;
    engine_destroy(&S.eng);
    config_free(&S.cfg);
}

static void submit(uint8_t how)
{
    if (S.nids == MAX_IDS)
        return;
    static const char *const names[] = {"a", "b", "c"};
    const char *fn = names[how % 3];
    struct func *f = func_get(&S.eng, fn, 1, 1);
    FUZZ_CHECK(f != NULL, "func_get");
    struct job *j = job_new(&S.eng, f, (enum job_prio)(how % 3), 1, "", 0, "", 0, "x", 1);
    FUZZ_CHECK(j != NULL, "job_new");
    int k = (how >> 2) % (NOWNERS + 1);
    void *owner = k < NOWNERS ? &S.owners[k] : NULL;
    if (store_add(&S.eng, j, owner, 0) != 0) {
        job_free(&S.eng, j);
        return;
    }
    /* an id is never reused once stored; one whose batch failed (or cancelled and then failed)
     * may come again after a restart */
    int i = slot_of(j->id);
    if (i >= 0) {
        FUZZ_CHECK(!(S.st[i] & (ID_ACKED | ID_LIVE)), "id %llu reused", (unsigned long long)j->id);
        S.st[i] = ID_LIVE;
        return;
    }
    S.ids[S.nids] = j->id;
    S.st[S.nids] = ID_LIVE;
    S.nids++;
}

static void finish(uint8_t which)
{
    size_t live = 0;
    for (size_t i = 0; i < S.nids; i++)
        live += (S.st[i] & ID_LIVE) != 0;
    if (live == 0)
        return;
    size_t n = which % live;
    for (size_t i = 0; i < S.nids; i++) {
        if (!(S.st[i] & ID_LIVE) || n-- > 0)
            continue;
        struct job *j = job_find_id(&S.eng, S.ids[i]);
        FUZZ_CHECK(j != NULL, "live job %llu missing", (unsigned long long)S.ids[i]);
        /* as the core does when a stored job leaves the server */
        j->flags &= (uint8_t)~JOB_STORED;
        store_done(&S.eng, j);
        job_free(&S.eng, j);
        S.st[i] = (uint8_t)((S.st[i] & ~ID_LIVE) | ID_DONE);
        return;
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    log_open("none");
    pthread_mutex_init(&S.mu, NULL);
    pthread_cond_init(&S.cv, NULL);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct reader r = {data, size, 0};
    store_mem_reset();
    S.nids = 0;
    S.full = 0;
    S.notified = 0;
    start();
    for (int ops = 0; ops < MAX_OPS && rd_left(&r) > 0; ops++) {
        uint8_t op = rd_u8(&r), arg = rd_u8(&r);
        switch (op % 9) {
        case 0: case 1: submit(arg); break;
        case 2: finish(arg); break;
        case 3: store_flush(&S.eng); break;
        case 4: /* commit: flush and wait until the batch is settled */
            store_flush(&S.eng);
            while (in_flight())
                pump();
            break;
        case 5: {
            struct store_mem_faults f = {0};
            f.fail_writes = arg % 4;
            f.full = S.full;
            store_mem_set_faults(NAME, &f);
            break;
        }
        case 6: {
            struct store_mem_faults f = {0};
            S.full = !S.full;
            f.full = S.full;
            store_mem_set_faults(NAME, &f);
            break;
        }
        case 7: {
            int k = arg % NOWNERS;
            if (S.held[k] > 0) {
                store_owner_gone(&S.eng, &S.owners[k]);
                S.held[k] = 0;
            }
            break;
        }
        case 8: /* restart */
            while (in_flight())
                pump();
            settle();
            stop();
            start();
            break;
        }
        settle();
        check_engine();
    }
    while (in_flight())
        pump();
    settle();
    struct store_state s;
    store_get_state(&S.eng, &s);
    if (s.held == 0)
        for (int k = 0; k < NOWNERS; k++)
            FUZZ_CHECK(S.held[k] == 0, "owner %d still waits for %d replies", k, S.held[k]);
    stop();
    start();
    stop();
    return 0;
}
