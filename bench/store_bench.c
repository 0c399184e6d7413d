/* SPDX-License-Identifier: BSD-3-Clause */
/* store_bench: a micro-benchmark of the SQLite store (src/store/store_sqlite.c), driven through the
 * backend interface (store_backend.h) and the batch queue (store_batch.h) as spurd drives it,
 * minus the committer thread. Not a test.
 *
 * Usage: store_bench [DIR] [REPLAY_JOBS]
 * Creates its files in DIR (default /tmp; use the file system spurd will use, fsync costs differ)
 * and removes them at the end. Measures:
 *   1. add+commit throughput with batch sizes 1, 64, 256 and 4096 (64-byte payloads), each for
 *      about two seconds on a fresh file, and the full add+done life cycle with batches of 256;
 *   2. replay of REPLAY_JOBS (default 1,000,000) stored jobs after a reopen;
 *   3. the file size with those jobs stored, and after deleting them all and calling maintain. */
#include "store_backend.h"
#include "store_batch.h"
#include "store_sqlite.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* now returns a monotonic time in seconds. */
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* files_size returns the bytes of path plus its -wal file. */
static long long files_size(const char *path)
{
    char wal[4096];
    struct stat st;
    long long total = 0;
    if (stat(path, &st) == 0)
        total += st.st_size;
    snprintf(wal, sizeof wal, "%s-wal", path);
    if (stat(wal, &st) == 0)
        total += st.st_size;
    return total;
}

/* remove_store deletes the store file and its WAL and shared-memory files. */
static void remove_store(const char *path)
{
    char side[4096];
    unlink(path);
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
}

/* struct bench_store is an open store: the backend, its handle and the batch being filled. */
struct bench_store {
    const struct store_backend *be; /* the backend */
    void *db;                       /* its handle */
    struct store_queue q;           /* the batch being filled */
};

/* open_or_die opens the store at path or exits with the error. */
static struct bench_store *open_or_die(const char *path, uint64_t *next_id)
{
    char err[512];
    struct store_params p = {.location = path, .max_function = 512};
    uint64_t ignored = 1;
    struct bench_store *s = calloc(1, sizeof *s);
    if (s == NULL)
        exit(1);
    s->be = &store_sqlite_backend;
    s->db = s->be->open(&p, next_id ? next_id : &ignored, err, sizeof err);
    if (s->db == NULL) {
        fprintf(stderr, "store_bench: %s\n", err);
        exit(1);
    }
    return s;
}

/* add_or_die queues job id with a 64-byte payload, or exits. */
static void add_or_die(struct bench_store *s, uint64_t id)
{
    static char payload[64];
    char unique[32];
    int ulen = snprintf(unique, sizeof unique, "u%" PRIu64, id);
    memset(payload, 'a' + (int)(id % 26), sizeof payload);
    struct store_rec r = {.id = id,
                          .func = "bench_func",
                          .func_len = 10,
                          .unique = unique,
                          .unique_len = (size_t)ulen,
                          .reducer = "",
                          .reducer_len = 0,
                          .data = payload,
                          .data_len = sizeof payload,
                          .prio = 1,
                          .when = 0};
    if (store_queue_add(&s->q, &r) != 0) {
        fprintf(stderr, "store_bench: add failed\n");
        exit(1);
    }
}

/* commit_or_die commits the current batch, or exits with the error. */
static void commit_or_die(struct bench_store *s)
{
    struct store_batch *b = store_queue_take_final(&s->q);
    if (b != NULL && s->be->write_batch(s->db, b) != 0) {
        fprintf(stderr, "store_bench: commit: %s\n", store_batch_error(b));
        exit(1);
    }
    store_batch_free(b);
}

/* close_store writes what is queued and closes s. */
static void close_store(struct bench_store *s)
{
    commit_or_die(s);
    s->be->close(s->db);
    free(s);
}

/* bench_batches measures add+commit (and, with lifecycle, add+done) at one batch size. */
static void bench_batches(const char *path, size_t batch, int lifecycle)
{
    remove_store(path);
    struct bench_store *s = open_or_die(path, NULL);
    uint64_t id = 1, commits = 0;
    double t0 = now(), worst = 0;
    while (now() - t0 < 2.0) {
        double c0 = now();
        for (size_t i = 0; i < batch; i++, id++) {
            add_or_die(s, id);
            if (lifecycle && id > 4 * batch && store_queue_done(&s->q, id - 4 * batch) != 0)
                exit(1);
        }
        commit_or_die(s);
        s->be->maintain(s->db);
        commits++;
        if (now() - c0 > worst)
            worst = now() - c0;
    }
    double el = now() - t0;
    printf("  %-26s batch %5zu: %9.0f jobs/s  (%6.0f commits/s, mean %.2f ms, worst %.2f ms per batch)\n",
           lifecycle ? "add+done (life cycle)" : "add+commit", batch, (double)(id - 1) / el,
           (double)commits / el, el * 1000.0 / (double)commits, worst * 1000.0);
    fflush(stdout);
    close_store(s);
}

/* count_cb counts replayed jobs and checks their order. */
static int count_cb(void *ctx, const struct store_rec *r)
{
    uint64_t *state = ctx; /* [0] count, [1] last id */
    if (r->id <= state[1] || r->data_len != 64)
        return 1;
    state[1] = r->id;
    state[0]++;
    return 0;
}

/* main runs the benchmarks. */
int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "/tmp";
    uint64_t replay_jobs = argc > 2 ? strtoull(argv[2], NULL, 10) : 1000000;
    char path[4096];
    snprintf(path, sizeof path, "%s/store_bench.%ld.db", dir, (long)getpid());

    printf("store_bench: %s\n1. throughput, 64-byte payloads, about 2 s each, fresh file\n", path);
    static const size_t sizes[] = {1, 64, 256, 4096};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        bench_batches(path, sizes[i], 0);
    bench_batches(path, 256, 1);

    printf("2. replay of %" PRIu64 " stored jobs\n", replay_jobs);
    remove_store(path);
    struct bench_store *s = open_or_die(path, NULL);
    double t0 = now();
    for (uint64_t id = 1; id <= replay_jobs; id++) {
        add_or_die(s, id);
        if (id % 4096 == 0)
            commit_or_die(s);
    }
    commit_or_die(s);
    s->be->maintain(s->db);
    double fill = now() - t0;
    close_store(s);
    long long full = files_size(path);
    printf("  filled in %.2f s; file %.1f MiB (%.0f bytes/job)\n", fill, (double)full / 1048576.0,
           (double)full / (double)(replay_jobs ? replay_jobs : 1));

    uint64_t next_id = 1, state[2] = {0, 0};
    t0 = now();
    s = open_or_die(path, &next_id);
    double opened = now() - t0;
    t0 = now();
    int rc = s->be->replay(s->db, count_cb, state);
    double el = now() - t0;
    if (rc != 0 || state[0] != replay_jobs || next_id != replay_jobs + 1) {
        fprintf(stderr, "store_bench: replay returned %d with %" PRIu64 " jobs, next id %" PRIu64 "\n", rc, state[0],
                next_id);
        return 1;
    }
    printf("  open %.3f s; replay %.3f s = %.0f jobs/s\n", opened, el, (double)replay_jobs / el);

    printf("3. delete all %" PRIu64 " jobs (batches of 4096, maintain after each), then maintain until stable\n",
           replay_jobs);
    t0 = now();
    double worst = 0;
    for (uint64_t id = 1; id <= replay_jobs; id++) {
        if (store_queue_done(&s->q, id) != 0)
            return 1;
        if (id % 4096 == 0 || id == replay_jobs) {
            commit_or_die(s);
            double m0 = now();
            s->be->maintain(s->db);
            if (now() - m0 > worst)
                worst = now() - m0;
        }
    }
    double deleted = now() - t0;
    long long prev = -1, cur = files_size(path);
    int calls = 0;
    t0 = now();
    while (cur != prev && calls < 1000) {
        double m0 = now();
        s->be->maintain(s->db);
        if (now() - m0 > worst)
            worst = now() - m0;
        calls++;
        prev = cur;
        cur = files_size(path);
    }
    double shrink = now() - t0;
    printf("  deleted in %.2f s; size %.1f MiB before, %.2f MiB after (%d more maintain calls, %.2f s; "
           "slowest maintain %.1f ms)\n",
           deleted, (double)full / 1048576.0, (double)cur / 1048576.0, calls, shrink, worst * 1000.0);
    if (s->be->error(s->db)[0] != '\0')
        printf("  store error: %s\n", s->be->error(s->db));
    close_store(s);
    printf("  after close: %.2f MiB (the free pages below the vacuum threshold stay for reuse)\n",
           (double)files_size(path) / 1048576.0);
    remove_store(path);
    return 0;
}
