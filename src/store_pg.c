/* SPDX-License-Identifier: BSD-3-Clause */
/* store_pg: the PostgreSQL backend of the store. See store_pg.h for what it does and why it runs
 * on the committer thread, and docs/PERSISTENCE.md for the tables and the guarantees.
 *
 * Every field of struct pgstore belongs to the thread that calls the backend at that moment (the
 * loop for open, note, quarantined and close; the committer for the rest), as store_backend.h
 * orders them: no lock. */
#include "store_pg.h"

#include <libpq-fe.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store_backend.h"
#include "store_pg_text.h"
#include "store_row.h"

#define SCHEMA_VERSION 1
#define MAX_FUNC_DEFAULT 512  /* spurd's default --max-function-name */
#define IMPORTED_SUFFIX "_spur_imported"
#define OID_INT8 20
#define OID_INT2 21
#define OID_BYTEA 17
#define DOUBT_MAX 1000000 /* ids of unknown-outcome adds kept for deletion; beyond, they stay */

/* struct bad_row is a stored row that is not a job, found by replay. */
struct bad_row {
    int64_t id;         /* its id */
    const char *reason; /* static text from store_row_decode */
};

/* struct pgstore is one open PostgreSQL store. */
struct pgstore {
    char *conninfo;          /* the libpq connection string, as configured */
    PGconn *conn;            /* the session, NULL while the database is unavailable */
    int sync_normal;         /* synchronous_commit=off */
    double wait;             /* --store-wait: seconds a batch waits for an unavailable database */
    size_t max_func;         /* longest function or reducer name a replayed row may have */
    double next_try;         /* monotonic time before which no reconnect is attempted */
    double gap;              /* the current pause between reconnect attempts, 0 after success */
    uint64_t *doubt;         /* ids added by batches whose commit outcome is unknown */
    size_t ndoubt, capdoubt; /* used and allocated */
    uint64_t quarantined;    /* rows the replay moved to spur_quarantine */
    char qnote[256];         /* what the replay moved aside and why, or "" */
    char note[256];          /* what open did that the operator should know, or "" */
    char err[512];           /* the last error text, or "" */
};

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* set_err formats an error text into s->err. */
static void set_err(struct pgstore *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->err, sizeof s->err, fmt, ap);
    va_end(ap);
}

/* pq_msg copies libpq's text m without its trailing newlines into buf. */
static const char *pq_msg(const char *m, char *buf, size_t len)
{
    snprintf(buf, len, "%s", m != NULL && *m ? m : "unknown error");
    size_t n = strlen(buf);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
        buf[--n] = '\0';
    for (char *p = buf; *p; p++)
        if (*p == '\n' || *p == '\t')
            *p = ' ';
    return buf;
}

/* exec runs one SQL command without parameters (fixed text only) and checks its status. */
static int exec(struct pgstore *s, const char *sql, const char *what)
{
    PGresult *r = PQexec(s->conn, sql);
    ExecStatusType st = PQresultStatus(r);
    int ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
    if (!ok) {
        char m[400];
        set_err(s, "%s: %s", what, pq_msg(PQerrorMessage(s->conn), m, sizeof m));
    }
    PQclear(r);
    return ok ? 0 : -1;
}

static const char *const schema =
    "CREATE TABLE IF NOT EXISTS spur_meta (key text PRIMARY KEY, value bigint NOT NULL);"
    "CREATE TABLE IF NOT EXISTS spur_jobs (id bigint PRIMARY KEY, prio smallint NOT NULL,"
    " run_at bigint NOT NULL, func bytea NOT NULL, uniq bytea NOT NULL, reducer bytea NOT NULL,"
    " data bytea NOT NULL);"
    "CREATE TABLE IF NOT EXISTS spur_quarantine (id bigint, prio smallint, run_at bigint,"
    " func bytea, uniq bytea, reducer bytea, data bytea, reason text NOT NULL,"
    " moved_at bigint NOT NULL);"
    "CREATE TABLE IF NOT EXISTS spur_import (table_name text PRIMARY KEY, renamed_to text NOT NULL,"
    " imported_at bigint NOT NULL, jobs bigint NOT NULL, skipped bigint NOT NULL,"
    " first_id bigint, last_id bigint);"
    "INSERT INTO spur_meta VALUES ('schema', 1) ON CONFLICT DO NOTHING;"
    "INSERT INTO spur_meta VALUES ('max_id', 0) ON CONFLICT DO NOTHING;";

/* prepared statements: name, text, parameter count and types */
static const Oid ins_types[7] = {OID_INT8, OID_INT2, OID_INT8, OID_BYTEA, OID_BYTEA, OID_BYTEA,
                                 OID_BYTEA};
static const Oid one_int8[1] = {OID_INT8};
static const struct {
    const char *name, *sql;
    int n;
    const Oid *types;
} stmts[] = {
    {"spur_ins", "INSERT INTO spur_jobs (id, prio, run_at, func, uniq, reducer, data) "
                 "VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING", 7, ins_types},
    {"spur_del", "DELETE FROM spur_jobs WHERE id = ANY ($1::bigint[])", 1, NULL},
    {"spur_hwm", "UPDATE spur_meta SET value = $1 WHERE key = 'max_id' AND value < $1", 1, one_int8},
    {"spur_sel", "SELECT id, prio, run_at, func, uniq, reducer, data FROM spur_jobs ORDER BY id", 0,
     NULL},
};

/* quiet drops the server's notices (libpq would print them on stderr). */
static void quiet(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

/* drop closes a broken session; the next attempt to connect is allowed at once. */
static void drop(struct pgstore *s)
{
    if (s->conn != NULL)
        PQfinish(s->conn);
    s->conn = NULL;
}

/* connect_db opens a session: connects, takes the advisory lock, creates the schema when missing,
 * sets synchronous_commit and prepares the statements. Returns 0, or -1 with s->err set and no
 * session. */
static int connect_db(struct pgstore *s)
{
    const char *keys[] = {"connect_timeout", "application_name", "dbname", NULL};
    const char *vals[] = {STORE_PG_CONNECT_TIMEOUT, "spurd", s->conninfo, NULL};
    char m[400];
    s->conn = PQconnectdbParams(keys, vals, 1);
    if (s->conn == NULL) {
        set_err(s, "database unavailable: out of memory");
        return -1;
    }
    if (PQstatus(s->conn) != CONNECTION_OK) {
        set_err(s, "database unavailable: %s", pq_msg(PQerrorMessage(s->conn), m, sizeof m));
        drop(s);
        return -1;
    }
    PQsetNoticeProcessor(s->conn, quiet, NULL);
    /* one server per database: wait a little for the lock, since the session of a server that
     * was just killed ends only when PostgreSQL notices its socket closed */
    char lock[160];
    snprintf(lock, sizeof lock, "SET lock_timeout = '%dms'; SELECT pg_advisory_lock(%lld)",
             STORE_PG_LOCK_WAIT_MS, (long long)STORE_PG_LOCK_KEY);
    PGresult *r = PQexec(s->conn, lock);
    int got = PQresultStatus(r) == PGRES_TUPLES_OK;
    if (!got) {
        const char *code = PQresultErrorField(r, PG_DIAG_SQLSTATE);
        if (code != NULL && strcmp(code, "55P03") == 0)
            set_err(s, "in use by another server (it holds the advisory lock %lld of database %s)",
                    (long long)STORE_PG_LOCK_KEY, PQdb(s->conn));
        else
            set_err(s, "database unavailable: %s", pq_msg(PQerrorMessage(s->conn), m, sizeof m));
    }
    PQclear(r);
    if (!got || exec(s, "SET lock_timeout = 0", "set lock_timeout") != 0) {
        drop(s);
        return -1;
    }
    if (exec(s, "SET client_min_messages = warning", "set client_min_messages") != 0 ||
        exec(s, s->sync_normal ? "SET synchronous_commit = off" : "SET synchronous_commit = on",
             "set synchronous_commit") != 0 ||
        exec(s, schema, "creating the tables") != 0) {
        drop(s);
        return -1;
    }
    for (size_t i = 0; i < sizeof stmts / sizeof stmts[0]; i++) {
        r = PQprepare(s->conn, stmts[i].name, stmts[i].sql, stmts[i].n, stmts[i].types);
        int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        if (!ok)
            set_err(s, "preparing %s: %s", stmts[i].name, pq_msg(PQerrorMessage(s->conn), m, sizeof m));
        PQclear(r);
        if (!ok) {
            drop(s);
            return -1;
        }
    }
    s->gap = 0;
    return 0;
}

/* ensure makes sure there is a session, reconnecting when the pause since the last failed attempt
 * has passed. Returns 0, or -1 with s->err set. */
static int ensure(struct pgstore *s)
{
    if (s->conn != NULL) {
        /* a server that shut down or killed the session sent an error and closed: notice it before
         * sending a batch into a dead socket (the first read may return the error, the second
         * then sees the end of the stream) */
        if (PQconsumeInput(s->conn) == 0 || PQconsumeInput(s->conn) == 0 ||
            PQstatus(s->conn) != CONNECTION_OK)
            drop(s);
        else
            return 0;
    }
    double now = mono();
    if (now < s->next_try)
        return -1; /* s->err still says why */
    if (connect_db(s) == 0)
        return 0;
    s->gap = s->gap > 0 ? s->gap * 2 : STORE_PG_RETRY_FIRST;
    if (s->gap > STORE_PG_RETRY_MAX)
        s->gap = STORE_PG_RETRY_MAX;
    s->next_try = now + s->gap;
    return -1;
}

/* get_int64 reads an integer result cell (text format). */
static int64_t get_int64(PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? 0 : strtoll(PQgetvalue(r, row, col), NULL, 10);
}

/* read_hwm returns the largest id ever used: the high-water mark and the largest stored id. */
static int read_hwm(struct pgstore *s, uint64_t *hwm)
{
    PGresult *r = PQexec(s->conn,
                         "SELECT greatest((SELECT value FROM spur_meta WHERE key = 'max_id'),"
                         " (SELECT max(id) FROM spur_jobs), (SELECT max(id) FROM spur_quarantine), 0)");
    int ok = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
    if (ok)
        *hwm = (uint64_t)get_int64(r, 0, 0);
    else {
        char m[400];
        set_err(s, "reading the high-water mark: %s", pq_msg(PQerrorMessage(s->conn), m, sizeof m));
    }
    PQclear(r);
    return ok ? 0 : -1;
}

/* import_gearmand copies gearmand's queue table `table` (if it exists and was never imported) into
 * spur_jobs with ids from *next_id up, renames it to table_spur_imported and records it, in one
 * transaction. Returns 0 (also when there is nothing to import), or -1 with s->err set. */
static int import_gearmand(struct pgstore *s, const char *table, uint64_t *next_id)
{
    char m[400];
    if (!store_pg_valid_ident(table) ||
        strlen(table) + strlen(IMPORTED_SUFFIX) > STORE_PG_IDENT_MAX) {
        set_err(s, "invalid --libpq-table '%s' (letters, digits and _, at most %d bytes)", table,
                (int)(STORE_PG_IDENT_MAX - strlen(IMPORTED_SUFFIX)));
        return -1;
    }
    const char *pv[1] = {table};
    PGresult *r = PQexecParams(s->conn,
                               "SELECT (SELECT count(*) FROM information_schema.columns WHERE "
                               "table_schema = current_schema() AND table_name = $1 AND column_name "
                               "IN ('unique_key', 'function_name', 'priority', 'data')),"
                               " (SELECT count(*) FROM information_schema.columns WHERE "
                               "table_schema = current_schema() AND table_name = $1 AND column_name "
                               "= 'when_to_run'),"
                               " (SELECT count(*) FROM information_schema.tables WHERE "
                               "table_schema = current_schema() AND table_name = $1),"
                               " (SELECT count(*) FROM spur_import WHERE table_name = $1)",
                               1, NULL, pv, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        set_err(s, "looking for gearmand's table %s: %s", table,
                pq_msg(PQerrorMessage(s->conn), m, sizeof m));
        PQclear(r);
        return -1;
    }
    int64_t cols = get_int64(r, 0, 0), when = get_int64(r, 0, 1), exists = get_int64(r, 0, 2),
            done = get_int64(r, 0, 3);
    PQclear(r);
    if (!exists)
        return 0;
    if (done) {
        snprintf(s->note, sizeof s->note,
                 "gearmand table %s was imported before and has appeared again: left alone", table);
        return 0;
    }
    if (cols != 4) {
        set_err(s, "table %s exists but is not gearmand's queue table (unique_key, function_name, "
                   "priority, data)", table);
        return -1;
    }
    /* the identifier is validated above and double-quoted here; job data is never in SQL text */
    char sql[1536];
    snprintf(sql, sizeof sql,
             "WITH src AS (SELECT row_number() OVER (ORDER BY ctid) AS n, * FROM \"%s\"),"
             " ok AS (SELECT row_number() OVER (ORDER BY n) AS k, * FROM src"
             "   WHERE coalesce(function_name, '') <> ''),"
             " ins AS (INSERT INTO spur_jobs (id, prio, run_at, func, uniq, reducer, data)"
             "   SELECT $1::bigint + k - 1, CASE WHEN priority IN (0, 1, 2) THEN priority ELSE 1 END,"
             "   %s, convert_to(function_name, getdatabaseencoding()),"
             "   convert_to(coalesce(unique_key, ''), getdatabaseencoding()), ''::bytea,"
             "   coalesce(data::bytea, ''::bytea) FROM ok RETURNING id)"
             " SELECT (SELECT count(*) FROM ins), (SELECT count(*) FROM src) - (SELECT count(*) FROM ins)",
             table, when ? "greatest(coalesce(when_to_run, 0), 0)" : "0");
    char first[24];
    snprintf(first, sizeof first, "%llu", (unsigned long long)*next_id);
    const char *iv[1] = {first};
    if (exec(s, "BEGIN", "import") != 0)
        return -1;
    r = PQexecParams(s->conn, sql, 1, NULL, iv, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        set_err(s, "importing gearmand's table %s: %s", table,
                pq_msg(PQerrorMessage(s->conn), m, sizeof m));
        PQclear(r);
        exec(s, "ROLLBACK", "import");
        return -1;
    }
    int64_t jobs = get_int64(r, 0, 0), skipped = get_int64(r, 0, 1);
    PQclear(r);
    char rename[256], rec[24], last[24], sk[24];
    snprintf(rename, sizeof rename, "ALTER TABLE \"%s\" RENAME TO \"%s" IMPORTED_SUFFIX "\"", table,
             table);
    snprintf(rec, sizeof rec, "%lld", (long long)jobs);
    snprintf(sk, sizeof sk, "%lld", (long long)skipped);
    snprintf(last, sizeof last, "%llu", (unsigned long long)(*next_id + (uint64_t)jobs - 1));
    char renamed[STORE_PG_IDENT_MAX + 1];
    snprintf(renamed, sizeof renamed, "%s" IMPORTED_SUFFIX, table);
    const char *rv[6] = {table, renamed, rec, sk, jobs ? first : NULL, jobs ? last : NULL};
    if (exec(s, rename, "renaming the imported table") != 0) {
        exec(s, "ROLLBACK", "import");
        return -1;
    }
    r = PQexecParams(s->conn,
                     "INSERT INTO spur_import VALUES ($1, $2, extract(epoch FROM now())::bigint,"
                     " $3::bigint, $4::bigint, $5::bigint, $6::bigint)",
                     6, NULL, rv, NULL, NULL, 0);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    if (!ok)
        set_err(s, "recording the import: %s", pq_msg(PQerrorMessage(s->conn), m, sizeof m));
    PQclear(r);
    if (ok && jobs > 0) {
        const char *hv[1] = {last};
        r = PQexecParams(s->conn, "UPDATE spur_meta SET value = $1::bigint WHERE key = 'max_id'",
                         1, NULL, hv, NULL, NULL, 0);
        ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        if (!ok)
            set_err(s, "recording the import: %s", pq_msg(PQerrorMessage(s->conn), m, sizeof m));
        PQclear(r);
    }
    if (!ok || exec(s, "COMMIT", "committing the import") != 0) {
        exec(s, "ROLLBACK", "import");
        return -1;
    }
    snprintf(s->note, sizeof s->note,
             "imported %lld jobs from gearmand's table %s (ids %s to %s), %lld rows skipped; the "
             "table is now %s", (long long)jobs, table, jobs ? first : "-", jobs ? last : "-",
             (long long)skipped, renamed);
    if (jobs > 0)
        *next_id += (uint64_t)jobs;
    return 0;
}

static void *pg_open(const struct store_params *p, uint64_t *next_id, char *err, size_t errlen)
{
    struct pgstore *s = calloc(1, sizeof *s);
    char shown[256];
    if (s == NULL || (s->conninfo = strdup(p->location != NULL ? p->location : "")) == NULL) {
        free(s);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->sync_normal = p->sync_normal;
    s->wait = p->wait;
    s->max_func = p->max_function ? p->max_function : MAX_FUNC_DEFAULT;
    uint64_t hwm = 0;
    if (p->import_table != NULL && !store_pg_valid_ident(p->import_table)) {
        set_err(s, "invalid --libpq-table '%s' (letters, digits and _, at most %d bytes)",
                p->import_table, STORE_PG_IDENT_MAX);
        goto fail;
    }
    if (connect_db(s) != 0 || read_hwm(s, &hwm) != 0)
        goto fail;
    if (next_id != NULL && *next_id <= hwm)
        *next_id = hwm + 1;
    if (p->gearmand || p->import_table != NULL) {
        uint64_t first = next_id != NULL ? *next_id : hwm + 1;
        if (import_gearmand(s, p->import_table != NULL ? p->import_table : "queue", &first) != 0)
            goto fail;
        if (next_id != NULL)
            *next_id = first;
    }
    return s;
fail:
    snprintf(err, errlen, "store postgres:%s: %s",
             store_pg_redact(s->conninfo, shown, sizeof shown), s->err);
    drop(s);
    free(s->conninfo);
    free(s);
    return NULL;
}

/* be64 and be16 put v big-endian into b (PostgreSQL's binary int8 and int2). */
static void be64(unsigned char *b, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        b[i] = (unsigned char)v;
}

static void be16(unsigned char *b, uint16_t v)
{
    b[0] = (unsigned char)(v >> 8);
    b[1] = (unsigned char)v;
}

/* id_array appends the ids of b's dones and of the doubtful adds to an array literal
 * "{1,2,...}" (integers only, passed as a parameter). Returns a malloc'd string, or NULL when
 * there is no id (*none set) or out of memory. */
static char *id_array(const struct pgstore *s, const struct store_batch *b, int *none)
{
    size_t nd = store_batch_ndones(b), n = nd + s->ndoubt;
    *none = n == 0;
    if (n == 0)
        return NULL;
    char *a = malloc(n * 21 + 3), *p = a;
    if (a == NULL)
        return NULL;
    *p++ = '{';
    for (size_t i = 0; i < n; i++) {
        uint64_t id = i < nd ? store_batch_done_at(b, i) : s->doubt[i - nd];
        p += sprintf(p, "%s%llu", i ? "," : "", (unsigned long long)id);
    }
    *p++ = '}';
    *p = '\0';
    return a;
}

/* remember_doubt keeps the ids of b's live adds, whose commit outcome is unknown, to be deleted by
 * the next successful batch (they were answered with an error). */
static void remember_doubt(struct pgstore *s, const struct store_batch *b)
{
    struct store_rec r;
    for (size_t i = 0, n = store_batch_nadds(b); i < n; i++) {
        if (store_batch_add_at(b, i, &r) != 0)
            continue;
        if (s->ndoubt == s->capdoubt) {
            size_t cap = s->capdoubt ? s->capdoubt * 2 : 64;
            uint64_t *d = cap <= DOUBT_MAX ? realloc(s->doubt, cap * sizeof *d) : NULL;
            if (d == NULL)
                return;
            s->doubt = d;
            s->capdoubt = cap;
        }
        s->doubt[s->ndoubt++] = r.id;
    }
}

/* write_once tries to write b once. Returns 0, or -1 with s->err set and *lost set when the
 * database was unavailable or the session broke (worth another attempt), and *unknown set when the
 * commit was sent but its outcome never came back. */
static int write_once(struct pgstore *s, struct store_batch *b, int *lost, int *unknown)
{
    *lost = *unknown = 0;
    if (ensure(s) != 0) {
        *lost = 1;
        return -1;
    }
    int none;
    char *ids = id_array(s, b, &none);
    if (ids == NULL && !none) {
        set_err(s, "out of memory");
        return -1;
    }
    PGconn *c = s->conn;
    int synced = 0, sent = 0;
    const char *fail = NULL; /* what failed, NULL while all is well */
    char why[400] = "";      /* the first error the server reported, "" for libpq's */
    if (!PQenterPipelineMode(c)) {
        fail = "entering pipeline mode";
        goto out;
    }
    /* send: every insert, one delete, the high-water mark, then Sync (the implicit transaction
     * commits there, or rolls back entirely on the first error) */
    static const int bin7[7] = {1, 1, 1, 1, 1, 1, 1};
    struct store_rec r;
    for (size_t i = 0, n = store_batch_nadds(b); i < n; i++) {
        if (store_batch_add_at(b, i, &r) != 0)
            continue;
        unsigned char id[8], prio[2], when[8];
        be64(id, r.id);
        be16(prio, (uint16_t)r.prio);
        be64(when, (uint64_t)r.when);
        const char *v[7] = {(const char *)id, (const char *)prio, (const char *)when,
                            r.func_len ? r.func : "", r.unique_len ? r.unique : "",
                            r.reducer_len ? r.reducer : "",
                            r.data_len ? (const char *)r.data : ""};
        int l[7] = {8, 2, 8, (int)r.func_len, (int)r.unique_len, (int)r.reducer_len, (int)r.data_len};
        if (!PQsendQueryPrepared(c, "spur_ins", 7, v, l, bin7, 0)) {
            fail = "sending a job";
            goto out;
        }
        sent++;
    }
    if (ids != NULL) {
        const char *v[1] = {ids};
        if (!PQsendQueryPrepared(c, "spur_del", 1, v, NULL, NULL, 0)) {
            fail = "sending the deletions";
            goto out;
        }
        sent++;
    }
    unsigned char hwm[8];
    be64(hwm, store_batch_max_id(b));
    const char *hv[1] = {(const char *)hwm};
    static const int len8[1] = {8}, bin1[1] = {1};
    if (!PQsendQueryPrepared(c, "spur_hwm", 1, hv, len8, bin1, 0)) {
        fail = "sending the high-water mark";
        goto out;
    }
    sent++;
    if (!PQpipelineSync(c)) {
        fail = "sending the commit";
        goto out;
    }
    synced = 1;
    /* read: one result (then NULL) per query, PGRES_PIPELINE_SYNC last */
    for (int nulls = 0;;) {
        PGresult *res = PQgetResult(c);
        if (res == NULL) {
            if (PQstatus(c) != CONNECTION_OK || ++nulls > sent + 2) {
                if (fail == NULL)
                    fail = "reading the results";
                break;
            }
            continue;
        }
        nulls = 0;
        ExecStatusType st = PQresultStatus(res);
        if (st == PGRES_PIPELINE_SYNC) {
            PQclear(res);
            synced = 2; /* the server answered the Sync: the outcome is known */
            break;
        }
        if (st != PGRES_COMMAND_OK && fail == NULL) {
            fail = "writing the batch";
            if (PQresultErrorMessage(res)[0])
                pq_msg(PQresultErrorMessage(res), why, sizeof why);
        }
        PQclear(res);
    }
    if (synced == 2 && !PQexitPipelineMode(c) && fail == NULL)
        fail = "leaving pipeline mode";
out:
    free(ids);
    if (fail != NULL) {
        if (why[0] == '\0')
            pq_msg(PQerrorMessage(c), why, sizeof why);
        *lost = PQstatus(c) != CONNECTION_OK;
        set_err(s, "%s%s: %s", *lost ? "database unavailable: " : "", fail, why);
        if (*lost || synced != 2 || PQpipelineStatus(c) != PQ_PIPELINE_OFF) {
            *unknown = synced == 1; /* committed or not: nobody knows */
            *lost = 1;
            drop(s);
        }
        return -1;
    }
    s->ndoubt = 0; /* deleted by this batch */
    s->err[0] = '\0';
    return 0;
}

static int pg_write_batch(void *db, struct store_batch *b)
{
    struct pgstore *s = db;
    double deadline = mono() + s->wait;
    int lost, unknown, doubt = 0;
    /* with --store-wait, an unavailable database is waited for, up to the bound: the inserts are
     * idempotent (ON CONFLICT DO NOTHING on the never reused id), so a batch whose first commit
     * had an unknown outcome may be written again */
    while (write_once(s, b, &lost, &unknown) != 0) {
        doubt |= unknown;
        double now = mono();
        if (!lost || now >= deadline) {
            if (doubt)
                remember_doubt(s, b);
            store_batch_set_error(b, s->err);
            return -1;
        }
        double until = s->next_try > now ? s->next_try : now + STORE_PG_RETRY_FIRST;
        if (until > deadline)
            until = deadline;
        struct timespec ts = {(time_t)(until - now), (long)((until - now - (double)(time_t)(until - now)) * 1e9)};
        nanosleep(&ts, NULL);
    }
    store_batch_set_error(b, NULL);
    return 0;
}

/* col_bin reads binary column k of row 0 of res as a store_col of the given kind. */
static void col_bin(PGresult *res, int k, struct store_col *c)
{
    if (PQgetisnull(res, 0, k)) {
        *c = (struct store_col){STORE_COL_NULL, 0, NULL, 0};
        return;
    }
    const unsigned char *v = (const unsigned char *)PQgetvalue(res, 0, k);
    int len = PQgetlength(res, 0, k);
    Oid t = PQftype(res, k);
    if (t == OID_INT8 || t == OID_INT2) {
        uint64_t x = 0;
        for (int i = 0; i < len; i++)
            x = x << 8 | v[i];
        int64_t sx = len == 2 ? (int64_t)(int16_t)x : (int64_t)x;
        *c = (struct store_col){STORE_COL_INT, sx, NULL, 0};
    } else {
        *c = (struct store_col){STORE_COL_BLOB, 0, v, (size_t)len};
    }
}

/* quarantine moves the rows bad[0..n) to spur_quarantine with their reasons, in one transaction. */
static int quarantine(struct pgstore *s, const struct bad_row *bad, size_t n)
{
    if (exec(s, "BEGIN", "quarantine") != 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        char id[24];
        snprintf(id, sizeof id, "%lld", (long long)bad[i].id);
        const char *v[2] = {id, bad[i].reason};
        PGresult *r = PQexecParams(s->conn,
                                   "WITH m AS (DELETE FROM spur_jobs WHERE id = $1::bigint RETURNING *)"
                                   " INSERT INTO spur_quarantine SELECT m.*, $2::text,"
                                   " extract(epoch FROM now())::bigint FROM m",
                                   2, NULL, v, NULL, NULL, 0);
        int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        if (!ok) {
            char m[400];
            set_err(s, "moving invalid rows to spur_quarantine: %s",
                    pq_msg(PQerrorMessage(s->conn), m, sizeof m));
        }
        PQclear(r);
        if (!ok) {
            exec(s, "ROLLBACK", "quarantine");
            return -1;
        }
    }
    return exec(s, "COMMIT", "quarantine");
}

static int pg_replay(void *db, int (*cb)(void *ctx, const struct store_rec *r), void *ctx)
{
    struct pgstore *s = db;
    char m[400];
    s->quarantined = 0;
    s->qnote[0] = '\0';
    if (ensure(s) != 0)
        return -1;
    if (!PQsendQueryPrepared(s->conn, "spur_sel", 0, NULL, NULL, NULL, 1) ||
        !PQsetSingleRowMode(s->conn)) {
        set_err(s, "replay: %s", pq_msg(PQerrorMessage(s->conn), m, sizeof m));
        return -1;
    }
    struct bad_row *bad = NULL;
    size_t nbad = 0, capbad = 0;
    int ret = 0, stop = 0;
    PGresult *res;
    while ((res = PQgetResult(s->conn)) != NULL) {
        ExecStatusType st = PQresultStatus(res);
        if (st == PGRES_SINGLE_TUPLE && !stop) {
            struct store_col cols[STORE_ROW_NCOLS];
            for (int k = 0; k < STORE_ROW_NCOLS; k++)
                col_bin(res, k, &cols[k]);
            struct store_rec r;
            const char *why = store_row_decode(cols, s->max_func, &r);
            if (why != NULL) {
                if (nbad == capbad) {
                    size_t ncap = capbad ? capbad * 2 : 16;
                    struct bad_row *nb = realloc(bad, ncap * sizeof *nb);
                    if (nb == NULL) {
                        set_err(s, "replay: out of memory");
                        ret = -1;
                        stop = 1;
                    } else {
                        bad = nb;
                        capbad = ncap;
                    }
                }
                if (!stop)
                    bad[nbad++] = (struct bad_row){cols[STORE_ROW_ID].i, why};
            } else if ((ret = cb(ctx, &r)) != 0) {
                stop = 1; /* read the rest of the results away */
            }
        } else if (st != PGRES_SINGLE_TUPLE && st != PGRES_TUPLES_OK && ret == 0) {
            set_err(s, "replay: %s", pq_msg(PQresultErrorMessage(res), m, sizeof m));
            ret = -1;
        }
        PQclear(res);
    }
    if (ret == 0 && PQstatus(s->conn) != CONNECTION_OK) {
        set_err(s, "replay: %s", pq_msg(PQerrorMessage(s->conn), m, sizeof m));
        ret = -1;
    }
    if (nbad > 0 && ret == 0) {
        s->quarantined = nbad;
        int moved = quarantine(s, bad, nbad) == 0;
        snprintf(s->qnote, sizeof s->qnote, "%zu invalid stored rows %s (the first: id %lld, %s)",
                 nbad, moved ? "moved to table spur_quarantine" : "skipped (could not be moved aside)",
                 (long long)bad[0].id, bad[0].reason);
    }
    free(bad);
    return ret;
}

static void pg_maintain(void *db)
{
    /* nothing to compact (autovacuum does); reconnect by ourselves after an outage */
    ensure((struct pgstore *)db);
}

static const char *pg_error(const void *db) { return ((const struct pgstore *)db)->err; }

static const char *pg_note(const void *db)
{
    const struct pgstore *s = db;
    return s->note[0] ? s->note : NULL;
}

static uint64_t pg_quarantined(const void *db, const char **note)
{
    const struct pgstore *s = db;
    if (note != NULL)
        *note = s->qnote;
    return s->quarantined;
}

static void pg_close(void *db)
{
    struct pgstore *s = db;
    if (s == NULL)
        return;
    drop(s); /* ends the session: the advisory lock goes with it */
    free(s->doubt);
    free(s->conninfo);
    free(s);
}

const struct store_backend store_pg_backend = {
    .name = "postgres",
    .open = pg_open,
    .replay = pg_replay,
    .write_batch = pg_write_batch,
    .maintain = pg_maintain,
    .error = pg_error,
    .note = pg_note,
    .quarantined = pg_quarantined,
    .close = pg_close,
};
