/* SPDX-License-Identifier: BSD-3-Clause */
/* store_pg: the PostgreSQL backend of the store. See store_pg.h for what it does and why it runs
 * on the committer thread, and docs/PERSISTENCE.md for the tables and the guarantees.
 *
 * Every field of struct pgstore belongs to the thread that calls the backend at that moment (the
 * loop for open, note, quarantined and close; the committer for the rest), as store_backend.h
 * orders them: no lock. */
#include "store_pg.h"

#include <errno.h>
#include <libpq-fe.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "config.h"
#include "store_backend.h"
#include "store_pg_rows.h"
#include "store_pg_text.h"
#include "store_row.h"

#define SCHEMA_VERSION 3
#define MAX_FUNC_DEFAULT 512  /* spurd's default --max-function-name */
#define IMPORTED_SUFFIX "_spur_imported"
#define OID_INT8 20
#define OID_INT2 21
#define OID_BYTEA 17
#define OID_TEXT 25
#define OID_INT4 23
#define STR_(x) #x
#define STR(x) STR_(x)
#define STORE_PG_MAX_SERVERS_S STR(STORE_PG_MAX_SERVERS)
#define SLOT_MASK ((UINT64_C(1) << STORE_PG_SLOT_BITS) - 1)
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
    double timeout;          /* --store-timeout: seconds a statement, or a batch, may take before
                                it is cancelled and the session closed, 0 = no limit */
    int timed_out;           /* the session was closed because the server did not answer in time
                                (conn_msg says so instead of libpq's text) */
    size_t max_func;         /* longest function or reducer name a replayed row may have */
    double next_try;         /* monotonic time before which no reconnect is attempted */
    double gap;              /* the current pause between reconnect attempts, 0 after success */
    uint64_t *doubt;         /* ids added by batches whose commit outcome is unknown */
    size_t ndoubt, capdoubt; /* used and allocated */
    uint64_t quarantined;    /* rows the replay moved to spur_quarantine */
    char qnote[256];         /* what the replay moved aside and why, or "" */
    char note[256];          /* what open did that the operator should know, or "" */
    char err[512];           /* the last error text, or "" */
    /* the shared database (docs/HA.md) */
    char me[STORE_PG_SERVER_ID_MAX + 1]; /* this server's id: the owner of its rows */
    int slot;                /* its slot, 1..STORE_PG_MAX_SERVERS; 0 before the first session */
    int64_t epoch;           /* spur_servers.epoch when the first session took the lease */
    int fenced;              /* another server took this one's rows: no more writes */
    int conn_seen;           /* a session has taken the lease once (s->epoch is set) */
    double takeover_after;   /* --takeover-after seconds, 0 = no automatic takeover */
    uint64_t claim;          /* marker of claimed rows not yet handed to the manager, 0 = none */
    uint64_t claim_last;     /* the largest id of those already handed over */
    uint64_t claim_n;        /* how many were handed over */
    char claim_from[STORE_PG_SERVER_ID_MAX + 1]; /* whose they were */
    char anote[512];         /* what adopt did, for the manager's log */
    struct store_pg_rows rows; /* the chunk of jobs being sent (committer), reused */
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

/* conn_msg is the session's last error for a message: libpq's text, or that the server did not
 * answer in time. */
static const char *conn_msg(const struct pgstore *s, char *buf, size_t len)
{
    if (s->timed_out) {
        snprintf(buf, len, "no answer from the server within %g s (--store-timeout): query "
                 "cancelled, session closed", s->timeout);
        return buf;
    }
    return pq_msg(PQerrorMessage(s->conn), buf, len);
}

/* deadline is the monotonic time by which a statement started now must be answered (extra
 * seconds more: a statement that waits for a lock by design), 0 = no limit. */
static double deadline(const struct pgstore *s, double extra)
{
    return s->timeout > 0 ? mono() + s->timeout + extra : 0;
}

/* give_up ends a session whose server did not answer in time: the query is cancelled (best
 * effort: PQcancel opens a connection of its own, which a dead host may keep waiting for the TCP
 * connect timeout) and the socket shut down, so every later libpq call on the session fails at
 * once and the usual error paths drop it. */
static void give_up(struct pgstore *s)
{
    char m[256];
    PGcancel *k = PQgetCancel(s->conn);
    if (k != NULL) {
        PQcancel(k, m, sizeof m);
        PQfreeCancel(k);
    }
    if (PQsocket(s->conn) >= 0)
        shutdown(PQsocket(s->conn), SHUT_RDWR);
    s->timed_out = 1;
}

/* await waits until the session has sent what it holds and a result can be read without
 * blocking, at most until the monotonic time until (0: no limit). The session is non-blocking
 * (connect_db), so this is the only place that waits for the server. Returns 0, or -1 when the
 * session broke or timed out: its socket is then shut down (give_up), so PQgetResult returns at
 * once. */
static int await(struct pgstore *s, double until)
{
    PGconn *c = s->conn;
    for (;;) {
        int f = PQflush(c);
        if (f < 0)
            break;
        if (f == 0 && !PQisBusy(c))
            return 0;
        int ms = -1;
        if (until > 0) {
            double left = until - mono();
            if (left <= 0) {
                give_up(s);
                return -1;
            }
            ms = (int)(left * 1000) + 1;
        }
        struct pollfd p = {PQsocket(c), (short)(POLLIN | (f ? POLLOUT : 0)), 0};
        int n = poll(&p, 1, ms);
        if (n < 0 && errno != EINTR)
            break;
        if (n > 0 && (p.revents & (POLLIN | POLLERR | POLLHUP)) && !PQconsumeInput(c))
            break;
    }
    if (PQsocket(c) >= 0)
        shutdown(PQsocket(c), SHUT_RDWR);
    return -1;
}

/* get_result is PQgetResult waiting at most until until (see await). */
static PGresult *get_result(struct pgstore *s, double until)
{
    await(s, until);
    return PQgetResult(s->conn);
}

/* collect reads every result of the query just sent, as PQexec does (the last one, or the first
 * error), waiting at most --store-timeout (plus extra seconds). NULL when nothing came back. */
static PGresult *collect(struct pgstore *s, double extra)
{
    double until = deadline(s, extra);
    PGresult *keep = NULL, *r;
    while ((r = get_result(s, until)) != NULL) {
        if (keep != NULL && PQresultStatus(keep) == PGRES_FATAL_ERROR) {
            PQclear(r);
        } else {
            PQclear(keep);
            keep = r;
        }
        if (PQstatus(s->conn) == CONNECTION_BAD)
            break;
    }
    return keep;
}

/* pq_exec_for, pq_params, pq_prepared and pq_prepare are PQexec, PQexecParams, PQexecPrepared
 * and PQprepare bounded by --store-timeout (pq_exec_for: plus extra seconds). */
static PGresult *pq_exec_for(struct pgstore *s, const char *sql, double extra)
{
    return s->conn != NULL && PQsendQuery(s->conn, sql) ? collect(s, extra) : NULL;
}

static PGresult *pq_params(struct pgstore *s, const char *sql, int n, const char *const *v,
                           int result_format)
{
    return s->conn != NULL && PQsendQueryParams(s->conn, sql, n, NULL, v, NULL, NULL, result_format)
               ? collect(s, 0)
               : NULL;
}

static PGresult *pq_prepared(struct pgstore *s, const char *name, int n, const char *const *v,
                             int result_format)
{
    return s->conn != NULL &&
                   PQsendQueryPrepared(s->conn, name, n, v, NULL, NULL, result_format)
               ? collect(s, 0)
               : NULL;
}

static PGresult *pq_prepare(struct pgstore *s, const char *name, const char *sql, int n,
                            const Oid *types)
{
    return s->conn != NULL && PQsendPrepare(s->conn, name, sql, n, types) ? collect(s, 0) : NULL;
}

/* exec_for runs one SQL command without parameters (fixed text only) and checks its status,
 * waiting up to --store-timeout plus extra seconds; exec waits --store-timeout. */
static int exec_for(struct pgstore *s, const char *sql, const char *what, double extra)
{
    PGresult *r = pq_exec_for(s, sql, extra);
    ExecStatusType st = PQresultStatus(r);
    int ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
    if (!ok) {
        char m[400];
        set_err(s, "%s: %s", what, conn_msg(s, m, sizeof m));
    }
    PQclear(r);
    return ok ? 0 : -1;
}

static int exec(struct pgstore *s, const char *sql, const char *what)
{
    return exec_for(s, sql, what, 0);
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
    "CREATE TABLE IF NOT EXISTS spur_servers (server_id text PRIMARY KEY,"
    " slot integer NOT NULL UNIQUE, epoch bigint NOT NULL DEFAULT 0, max_id bigint NOT NULL"
    " DEFAULT 0, renewed_at timestamptz, claimed_at timestamptz, claimed_by text);"
    "CREATE SEQUENCE IF NOT EXISTS spur_claims;"
    "INSERT INTO spur_meta VALUES ('schema', 1) ON CONFLICT DO NOTHING;"
    "INSERT INTO spur_meta VALUES ('max_id', 0) ON CONFLICT DO NOTHING;";

/* schema 1 (one server per database) to 2: every row gets an owner; rows without one ('') are
 * adopted by the next server that opens the database. 2 to 3: a job's extension state (meta) and
 * the durable records (schedules, retry policies), owned per server as the jobs are */
static const char *const migrate =
    "ALTER TABLE spur_jobs ADD COLUMN IF NOT EXISTS owner text NOT NULL DEFAULT '';"
    "ALTER TABLE spur_jobs ADD COLUMN IF NOT EXISTS claim bigint NOT NULL DEFAULT 0;"
    "ALTER TABLE spur_jobs ADD COLUMN IF NOT EXISTS meta bytea;"
    "CREATE TABLE IF NOT EXISTS spur_records (owner text NOT NULL, kind integer NOT NULL,"
    " key bytea NOT NULL, value bytea NOT NULL, PRIMARY KEY (owner, kind, key));"
    "UPDATE spur_meta SET value = 3 WHERE key = 'schema' AND value < 3;";

/* prepared statements: name, text, parameter count and types */
static const Oid ins_types[9] = {STORE_PG_OID_INT8_ARRAY,  STORE_PG_OID_INT2_ARRAY,
                                 STORE_PG_OID_INT8_ARRAY,  STORE_PG_OID_BYTEA_ARRAY,
                                 STORE_PG_OID_BYTEA_ARRAY, STORE_PG_OID_BYTEA_ARRAY,
                                 STORE_PG_OID_BYTEA_ARRAY, STORE_PG_OID_BYTEA_ARRAY, OID_TEXT};
static const Oid rec_types[4] = {OID_TEXT, OID_INT4, OID_BYTEA, OID_BYTEA};
static const Oid int8_text[2] = {OID_INT8, OID_TEXT};
static const Oid one_text[1] = {OID_TEXT};
static const struct {
    const char *name, *sql;
    int n;
    const Oid *types;
} stmts[] = {
    /* a chunk of jobs (store_pg_rows.h) in one statement. spur_ins_new: new jobs, whose ids were
     * never used (the high-water mark), a plain insert; spur_ins: a new version of a job that may
     * be stored (store_queue_update) replaces it if it is still this server's, and every job of
     * a batch written again after an unknown outcome or a conflict of spur_ins_new (the same
     * values again). The ids of one chunk are distinct (a second version in a batch replaces the
     * first), as ON CONFLICT DO UPDATE requires */
#define INS_SELECT                                                                                 \
    "INSERT INTO spur_jobs (id, prio, run_at, func, uniq, reducer, data, owner, meta)"             \
    " SELECT u.id, u.prio, u.run_at, u.func, u.uniq, u.reducer, u.data, $9, u.meta"                \
    " FROM unnest($1, $2, $3, $4, $5, $6, $7, $8) AS u (id, prio, run_at, func, uniq, reducer,"    \
    " data, meta)"
    {"spur_ins_new", INS_SELECT, 9, ins_types},
    {"spur_ins", INS_SELECT " ON CONFLICT (id) DO UPDATE SET"
                 " prio = EXCLUDED.prio, run_at = EXCLUDED.run_at, func = EXCLUDED.func,"
                 " uniq = EXCLUDED.uniq, reducer = EXCLUDED.reducer, data = EXCLUDED.data,"
                 " meta = EXCLUDED.meta WHERE spur_jobs.owner = EXCLUDED.owner", 9, ins_types},
    {"spur_rput", "INSERT INTO spur_records (owner, kind, key, value) VALUES ($1, $2, $3, $4)"
                  " ON CONFLICT (owner, kind, key) DO UPDATE SET value = EXCLUDED.value", 4,
     rec_types},
    {"spur_rdel", "DELETE FROM spur_records WHERE owner = $1 AND kind = $2 AND key = $3", 3,
     rec_types},
    {"spur_rsel", "SELECT kind, key, value FROM spur_records WHERE owner = $1 ORDER BY kind, key", 1,
     one_text},
    {"spur_del", "DELETE FROM spur_jobs WHERE id = ANY ($1::bigint[]) AND owner = $2", 2, NULL},
    {"spur_hwm", "UPDATE spur_servers SET max_id = $1 WHERE server_id = $2 AND max_id < $1", 2,
     int8_text},
    {"spur_sel", "SELECT id, prio, run_at, func, uniq, reducer, data, meta FROM spur_jobs WHERE owner = $1"
                 " ORDER BY id", 1, one_text},
    {"spur_renew", "UPDATE spur_servers SET renewed_at = clock_timestamp() WHERE server_id = $1", 1,
     one_text},
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

/* get_int64 reads an integer result cell (text format). */
static int64_t get_int64(PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? 0 : strtoll(PQgetvalue(r, row, col), NULL, 10);
}

/* query runs sql with text parameters v[0..n) and returns its result when it has one row (and
 * tuples_ok), else NULL with s->err set (what: for the message). *nrows gets the row count. */
static PGresult *query(struct pgstore *s, const char *sql, int n, const char *const *v,
                       const char *what, int *nrows)
{
    PGresult *r = pq_params(s, sql, n, v, 0);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
        char m[400];
        set_err(s, "%s: %s", what, conn_msg(s, m, sizeof m));
        PQclear(r);
        return NULL;
    }
    if (nrows != NULL)
        *nrows = st == PGRES_TUPLES_OK ? PQntuples(r) : atoi(PQcmdTuples(r));
    return r;
}

/* setup creates or migrates the tables and registers this server (its slot), in one transaction
 * under the transaction lock STORE_PG_LOCK_KEY, so that servers starting together take turns. */
static int setup(struct pgstore *s)
{
    char lock[200];
    snprintf(lock, sizeof lock, "SET lock_timeout = '%dms'; BEGIN; SELECT pg_advisory_xact_lock(%lld)",
             STORE_PG_LOCK_WAIT_MS, (long long)STORE_PG_LOCK_KEY);
    if (exec_for(s, lock, "waiting for the schema lock", STORE_PG_LOCK_WAIT_MS / 1000.0) != 0 || exec(s, schema, "creating the tables") != 0)
        goto fail;
    int n;
    PGresult *r = query(s, "SELECT value FROM spur_meta WHERE key = 'schema'", 0, NULL,
                        "reading the schema version", &n);
    if (r == NULL)
        goto fail;
    int64_t version = n == 1 ? get_int64(r, 0, 0) : 1;
    PQclear(r);
    if (version > SCHEMA_VERSION) {
        set_err(s, "the tables have schema version %lld, newer than this spurd's (%d)",
                (long long)version, SCHEMA_VERSION);
        goto fail;
    }
    if (version < SCHEMA_VERSION && exec(s, migrate, "migrating the tables to schema 3") != 0)
        goto fail;
    const char *v[1] = {s->me};
    r = query(s, "INSERT INTO spur_servers (server_id, slot, renewed_at) SELECT $1, min(n),"
                 " clock_timestamp() FROM generate_series(1, " STORE_PG_MAX_SERVERS_S ") n"
                 " WHERE n NOT IN (SELECT slot FROM spur_servers) HAVING min(n) IS NOT NULL"
                 " ON CONFLICT (server_id) DO NOTHING", 1, v, "registering the server id", NULL);
    if (r == NULL)
        goto fail;
    PQclear(r);
    r = query(s, "SELECT slot FROM spur_servers WHERE server_id = $1", 1, v,
              "reading the server's slot", &n);
    if (r == NULL)
        goto fail;
    int slot = n == 1 ? (int)get_int64(r, 0, 0) : 0;
    PQclear(r);
    if (slot < 1 || slot > STORE_PG_MAX_SERVERS) {
        set_err(s, "cannot register server id %s: the database has %d server ids already (the "
                   "most; delete the spur_servers rows of retired ones that own no jobs)",
                s->me, STORE_PG_MAX_SERVERS);
        goto fail;
    }
    if (exec(s, "COMMIT", "registering the server id") != 0)
        goto fail;
    s->slot = slot;
    return 0;
fail:
    exec(s, "ROLLBACK", "rollback");
    return -1;
}

/* take_lease takes this server's lease: the session lock (STORE_PG_LEASE_CLASS, slot), waiting up
 * to STORE_PG_LOCK_WAIT_MS, then renews it. The first session remembers the epoch; a later one
 * (a reconnect) that finds it bumped was taken over meanwhile: the store is fenced. */
static int take_lease(struct pgstore *s)
{
    char lock[200], m[400];
    snprintf(lock, sizeof lock, "SET lock_timeout = '%dms'; SELECT pg_advisory_lock(%d, %d)",
             STORE_PG_LOCK_WAIT_MS, STORE_PG_LEASE_CLASS, s->slot);
    PGresult *r = pq_exec_for(s, lock, STORE_PG_LOCK_WAIT_MS / 1000.0);
    int got = PQresultStatus(r) == PGRES_TUPLES_OK;
    if (!got) {
        const char *code = PQresultErrorField(r, PG_DIAG_SQLSTATE);
        if (code != NULL && strcmp(code, "55P03") == 0)
            set_err(s, "in use by another server with server id %s (it holds the lease, advisory "
                       "lock (%d, %d) of database %s)", s->me, STORE_PG_LEASE_CLASS, s->slot,
                    PQdb(s->conn));
        else
            set_err(s, "database unavailable: %s", conn_msg(s, m, sizeof m));
    }
    PQclear(r);
    if (!got || exec(s, "SET lock_timeout = 0", "set lock_timeout") != 0)
        return -1;
    const char *v[1] = {s->me};
    int n;
    r = query(s, "UPDATE spur_servers SET renewed_at = clock_timestamp() WHERE server_id = $1"
                 " RETURNING epoch, coalesce(claimed_by, '')", 1, v, "renewing the lease", &n);
    if (r == NULL)
        return -1;
    int64_t epoch = n == 1 ? get_int64(r, 0, 0) : -1;
    char by[STORE_PG_SERVER_ID_MAX + 1];
    snprintf(by, sizeof by, "%s", n == 1 ? PQgetvalue(r, 0, 1) : "?");
    PQclear(r);
    if (s->conn_seen) {
        if (epoch != s->epoch) {
            s->fenced = 1;
            set_err(s, "fenced: server %s took over this server's (%s) jobs while its database "
                       "session was lost; nothing more is written (restart spurd)", by, s->me);
            return -1;
        }
    } else {
        s->epoch = epoch;
    }
    s->conn_seen = 1;
    return 0;
}

/* connect_db opens a session: connects, takes the advisory lock, creates the schema when missing,
 * sets synchronous_commit and prepares the statements. Returns 0, or -1 with s->err set and no
 * session. */
static int connect_db(struct pgstore *s)
{
    /* defaults before dbname, which CONNINFO expands into: its own settings win. Keepalives and
     * tcp_user_timeout notice a dead peer or a silent partition; a server that is alive but does
     * not answer (a stopped backend) is the --store-timeout deadline's (await) */
    char user_timeout[24];
    snprintf(user_timeout, sizeof user_timeout, "%.0f", s->timeout * 1000);
    const char *keys[] = {"connect_timeout", "keepalives", "keepalives_idle", "keepalives_interval",
                          "keepalives_count", "tcp_user_timeout", "application_name", "dbname",
                          NULL};
    const char *vals[] = {STORE_PG_CONNECT_TIMEOUT, "1", STORE_PG_KEEPALIVES_IDLE,
                          STORE_PG_KEEPALIVES_INTERVAL, STORE_PG_KEEPALIVES_COUNT, user_timeout,
                          "spurd", s->conninfo, NULL};
    char m[400];
    s->timed_out = 0;
    s->conn = PQconnectdbParams(keys, vals, 1);
    if (s->conn == NULL) {
        set_err(s, "database unavailable: out of memory");
        return -1;
    }
    if (PQstatus(s->conn) != CONNECTION_OK) {
        set_err(s, "database unavailable: %s", conn_msg(s, m, sizeof m));
        drop(s);
        return -1;
    }
    PQsetNoticeProcessor(s->conn, quiet, NULL);
    if (PQsetnonblocking(s->conn, 1) != 0) {
        set_err(s, "database unavailable: %s", conn_msg(s, m, sizeof m));
        drop(s);
        return -1;
    }
    if (exec(s, "SET client_min_messages = warning", "set client_min_messages") != 0 ||
        exec(s, s->sync_normal ? "SET synchronous_commit = off" : "SET synchronous_commit = on",
             "set synchronous_commit") != 0 ||
        setup(s) != 0 || take_lease(s) != 0) {
        drop(s);
        return -1;
    }
    PGresult *r;
    for (size_t i = 0; i < sizeof stmts / sizeof stmts[0]; i++) {
        r = pq_prepare(s, stmts[i].name, stmts[i].sql, stmts[i].n, stmts[i].types);
        int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        if (!ok)
            set_err(s, "preparing %s: %s", stmts[i].name, conn_msg(s, m, sizeof m));
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
    if (s->fenced)
        return -1; /* s->err says why */
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


/* read_hwm returns the largest id this server has ever used: its high-water mark and the largest
 * id of its slot's range in the tables, at least the range's first id. */
static int read_hwm(struct pgstore *s, uint64_t *hwm)
{
    char lo[24], hi[24];
    snprintf(lo, sizeof lo, "%llu", (unsigned long long)((uint64_t)s->slot << STORE_PG_SLOT_BITS));
    snprintf(hi, sizeof hi, "%llu", (unsigned long long)((uint64_t)s->slot << STORE_PG_SLOT_BITS |
                                                         SLOT_MASK));
    const char *v[3] = {s->me, lo, hi};
    int n;
    PGresult *r = query(s, "SELECT greatest((SELECT max_id FROM spur_servers WHERE server_id = $1),"
                           " (SELECT max(id) FROM spur_jobs WHERE id BETWEEN $2::bigint AND $3::bigint),"
                           " (SELECT max(id) FROM spur_quarantine WHERE id BETWEEN $2::bigint AND"
                           " $3::bigint), $2::bigint)", 3, v, "reading the high-water mark", &n);
    if (r == NULL)
        return -1;
    *hwm = (uint64_t)get_int64(r, 0, 0);
    PQclear(r);
    return 0;
}

/* add_note appends one sentence to what open tells the operator. */
static void add_note(struct pgstore *s, const char *fmt, ...)
{
    size_t n = strlen(s->note);
    if (n > 0 && n + 2 < sizeof s->note) {
        strcpy(s->note + n, "; ");
        n += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->note + n, sizeof s->note - n, fmt, ap);
    va_end(ap);
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
    PGresult *r = pq_params(s,
                            "SELECT (SELECT count(*) FROM information_schema.columns WHERE "
                            "table_schema = current_schema() AND table_name = $1 AND column_name "
                            "IN ('unique_key', 'function_name', 'priority', 'data')),"
                            " (SELECT count(*) FROM information_schema.columns WHERE "
                            "table_schema = current_schema() AND table_name = $1 AND column_name "
                            "= 'when_to_run'),"
                            " (SELECT count(*) FROM information_schema.tables WHERE "
                            "table_schema = current_schema() AND table_name = $1),"
                            " (SELECT count(*) FROM spur_import WHERE table_name = $1)", 1, pv, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        set_err(s, "looking for gearmand's table %s: %s", table,
                conn_msg(s, m, sizeof m));
        PQclear(r);
        return -1;
    }
    int64_t cols = get_int64(r, 0, 0), when = get_int64(r, 0, 1), exists = get_int64(r, 0, 2),
            done = get_int64(r, 0, 3);
    PQclear(r);
    if (!exists)
        return 0;
    if (done) {
        add_note(s,
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
    r = pq_params(s, sql, 1, iv, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        set_err(s, "importing gearmand's table %s: %s", table,
                conn_msg(s, m, sizeof m));
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
    r = pq_params(s,
                  "INSERT INTO spur_import VALUES ($1, $2, extract(epoch FROM now())::bigint,"
                  " $3::bigint, $4::bigint, $5::bigint, $6::bigint)", 6, rv, 0);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    if (!ok)
        set_err(s, "recording the import: %s", conn_msg(s, m, sizeof m));
    PQclear(r);
    if (ok && jobs > 0) {
        const char *sv[2] = {last, s->me};
        r = pq_params(s, "UPDATE spur_servers SET max_id = greatest(max_id, $1::bigint)"
                         " WHERE server_id = $2", 2, sv, 0);
        ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        if (!ok)
            set_err(s, "recording the import: %s", conn_msg(s, m, sizeof m));
        PQclear(r);
    }
    if (!ok || exec(s, "COMMIT", "committing the import") != 0) {
        exec(s, "ROLLBACK", "import");
        return -1;
    }
    add_note(s,
             "imported %lld jobs from gearmand's table %s (ids %s to %s), %lld rows skipped; the "
             "table is now %s", (long long)jobs, table, jobs ? first : "-", jobs ? last : "-",
             (long long)skipped, renamed);
    if (jobs > 0)
        *next_id += (uint64_t)jobs;
    return 0;
}

/* claim moves every row of server victim to this server, inside a transaction that holds the
 * victim's lease lock, and bumps the victim's epoch (which fences it should it come back). With
 * stale > 0 only if its lease has not been renewed for that many seconds. marker tags the rows
 * (0 at open, where the replay reads them all). Returns the rows moved, 0 when the victim is not
 * claimable, or -1 with s->err set; the caller commits or rolls back. */
static int64_t claim(struct pgstore *s, const char *victim, double stale, const char *marker)
{
    char st[32];
    snprintf(st, sizeof st, "%.3f", stale);
    const char *v[3] = {victim, s->me, st};
    int n;
    PGresult *r = query(s, "UPDATE spur_servers SET epoch = epoch + 1, claimed_at = clock_timestamp(),"
                           " claimed_by = $2 WHERE server_id = $1 AND ($3::float8 = 0 OR"
                           " renewed_at < clock_timestamp() - $3::float8 * interval '1 second')",
                        3, v, "claiming the server", &n);
    if (r == NULL)
        return -1;
    PQclear(r);
    if (n != 1)
        return 0;
    const char *w[3] = {s->me, marker, victim};
    r = query(s, "UPDATE spur_jobs SET owner = $1, claim = $2::bigint WHERE owner = $3", 3, w,
              "claiming the jobs", &n);
    if (r == NULL)
        return -1;
    PQclear(r);
    return n;
}

/* takeover_at_open claims the rows of the dead server victim (--takeover), waiting up to
 * STORE_PG_LOCK_WAIT_MS for its lease lock while its session may be lingering; refused at once
 * when the server renews its lease meanwhile (it is alive). Returns 0, or -1 with s->err set. */
static int takeover_at_open(struct pgstore *s, const char *victim)
{
    if (strcmp(victim, s->me) == 0) {
        set_err(s, "--takeover=%s is this server's own id", victim);
        return -1;
    }
    const char *v[1] = {victim};
    int n;
    PGresult *r = query(s, "SELECT slot, extract(epoch FROM clock_timestamp()) FROM spur_servers"
                           " WHERE server_id = $1", 1, v, "looking for the server to take over", &n);
    if (r == NULL)
        return -1;
    if (n != 1) {
        PQclear(r);
        set_err(s, "--takeover=%s: no server with that id has used this database", victim);
        return -1;
    }
    char slot[16], t0[40];
    snprintf(slot, sizeof slot, "%s", PQgetvalue(r, 0, 0));
    snprintf(t0, sizeof t0, "%s", PQgetvalue(r, 0, 1));
    PQclear(r);
    double until = mono() + STORE_PG_LOCK_WAIT_MS / 1000.0;
    for (;;) {
        char cls[16];
        snprintf(cls, sizeof cls, "%d", STORE_PG_LEASE_CLASS);
        const char *w[4] = {cls, slot, t0, victim};
        if (exec(s, "BEGIN", "takeover") != 0)
            return -1;
        r = query(s, "SELECT pg_try_advisory_xact_lock($1::int, $2::int), coalesce(renewed_at >"
                     " to_timestamp($3::float8), false) FROM spur_servers WHERE server_id = $4",
                  4, w, "taking the lease lock", &n);
        if (r == NULL || n != 1) {
            if (r != NULL) {
                PQclear(r);
                set_err(s, "--takeover=%s: the server disappeared", victim);
            }
            exec(s, "ROLLBACK", "takeover");
            return -1;
        }
        int got = PQgetvalue(r, 0, 0)[0] == 't', alive = PQgetvalue(r, 0, 1)[0] == 't';
        PQclear(r);
        if (got) {
            int64_t jobs = claim(s, victim, 0, "0");
            if (jobs < 0 || exec(s, "COMMIT", "committing the takeover") != 0) {
                exec(s, "ROLLBACK", "takeover");
                return -1;
            }
            add_note(s, "took over %lld stored jobs of server %s", (long long)jobs, victim);
            return 0;
        }
        exec(s, "ROLLBACK", "takeover");
        if (alive) {
            set_err(s, "--takeover=%s refused: that server is alive (it holds its lease and renewed "
                       "it just now); a live server's jobs are never taken", victim);
            return -1;
        }
        if (mono() >= until) {
            set_err(s, "--takeover=%s refused: its lease is still held after %d s (a live server, or "
                       "its database session has not ended yet)", victim,
                    STORE_PG_LOCK_WAIT_MS / 1000);
            return -1;
        }
        struct timespec ts = {0, 100000000L};
        nanosleep(&ts, NULL);
    }
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
    s->timeout = p->timeout;
    s->max_func = p->max_function ? p->max_function : MAX_FUNC_DEFAULT;
    const struct store_pg_params *own = p->own;
    s->takeover_after = own != NULL ? own->takeover_after : 0;
    snprintf(s->me, sizeof s->me, "%s",
             own != NULL && own->server_id != NULL ? own->server_id : "spurd");
    uint64_t hwm = 0;
    if (p->import_table != NULL && !store_pg_valid_ident(p->import_table)) {
        set_err(s, "invalid --libpq-table '%s' (letters, digits and _, at most %d bytes)",
                p->import_table, STORE_PG_IDENT_MAX);
        goto fail;
    }
    if (connect_db(s) != 0 || read_hwm(s, &hwm) != 0)
        goto fail;
    if (next_id != NULL) {
        /* the time-based start of the engine's ids, moved into this server's range */
        uint64_t mine = (uint64_t)s->slot << STORE_PG_SLOT_BITS | (*next_id & SLOT_MASK);
        *next_id = mine > hwm ? mine : hwm + 1;
    }
    if (p->gearmand || p->import_table != NULL) {
        uint64_t first = next_id != NULL ? *next_id : hwm + 1;
        if (import_gearmand(s, p->import_table != NULL ? p->import_table : "queue", &first) != 0)
            goto fail;
        if (next_id != NULL)
            *next_id = first;
    }
    /* rows written before the database was shared (schema 1) or imported have no owner yet */
    const char *v[1] = {s->me};
    int n;
    PGresult *r = query(s, "UPDATE spur_jobs SET owner = $1 WHERE owner = ''", 1, v,
                        "adopting the rows without an owner", &n);
    if (r == NULL)
        goto fail;
    PQclear(r);
    if (n > 0)
        add_note(s, "%d stored jobs without an owner (written before the database was shared) "
                    "are now this server's (%s)", n, s->me);
    for (int i = 0; own != NULL && i < own->ntakeover; i++)
        if (takeover_at_open(s, own->takeover[i]) != 0)
            goto fail;
    return s;
fail:
    snprintf(err, errlen, "store postgres:%s: %s",
             store_pg_redact(s->conninfo, shown, sizeof shown), s->err);
    drop(s);
    free(s->conninfo);
    free(s);
    return NULL;
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

/* remember_doubt keeps the ids of b's live new jobs, whose commit outcome is unknown, to be deleted
 * by the next successful batch (they were answered with an error). Not an update's: that job is
 * stored either way, live, and its update is written again by the next batch (a deletion there
 * would follow it and lose the job). */
static void remember_doubt(struct pgstore *s, const struct store_batch *b)
{
    struct store_rec r;
    for (size_t i = 0, n = store_batch_nadds(b); i < n; i++) {
        if (store_batch_add_at(b, i, &r) != 0 || store_batch_add_is_update(b, i))
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

/* send_chunks queues the adds of b that take selects into the pipeline as statement stmt, one per
 * chunk of about STORE_PG_CHUNK_BYTES, its columns binary arrays (store_pg_rows.h), and counts
 * the statements in *sent. Returns 0, -1 when libpq could not queue one, -2 when a chunk could
 * not be encoded (out of memory). */
static int send_chunks(struct pgstore *s, const struct store_batch *b, enum store_pg_take take,
                       const char *stmt, int *sent)
{
    static const int bin9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 0}; /* the owner is text */
    struct store_pg_rows *rows = &s->rows;
    for (size_t next = 0;;) {
        int n = store_pg_rows_fill(rows, b, &next, STORE_PG_CHUNK_BYTES, take);
        if (n <= 0)
            return n < 0 ? -2 : 0;
        const char *v[9];
        int l[9];
        for (int k = 0; k < STORE_PG_NCOLS; k++) {
            v[k] = buf_head(&rows->col[k]);
            l[k] = (int)buf_len(&rows->col[k]);
        }
        v[8] = s->me;
        l[8] = 0;
        if (!PQsendQueryPrepared(s->conn, stmt, 9, v, l, bin9, 0))
            return -1;
        (*sent)++;
    }
}

/* send_jobs queues the live adds of b into the pipeline: new jobs with plain inserts and updates
 * with upserts, or with careful every job with upserts (spur_ins), and counts the statements in
 * *sent. Returns as send_chunks. */
static int send_jobs(struct pgstore *s, const struct store_batch *b, int careful, int *sent)
{
    int ret = careful ? send_chunks(s, b, STORE_PG_TAKE_ALL, "spur_ins", sent)
                      : send_chunks(s, b, STORE_PG_TAKE_NEW, "spur_ins_new", sent);
    if (ret == 0 && !careful)
        ret = send_chunks(s, b, STORE_PG_TAKE_UPDATES, "spur_ins", sent);
    /* libpq copied the arrays: keep the buffers for the next batch, unless one was outsized */
    size_t cap = 0;
    for (int k = 0; k < STORE_PG_NCOLS; k++)
        cap += s->rows.col[k].cap;
    if (cap > 4 * (size_t)STORE_PG_CHUNK_BYTES)
        store_pg_rows_free(&s->rows);
    return ret;
}

/* write_once tries to write b once, every job with an upsert when careful (send_jobs). Returns 0,
 * or -1 with s->err set and *lost set when the database was unavailable or the session broke
 * (worth another attempt), *unknown set when the commit was sent but its outcome never came back,
 * and *conflict set when a new job's id was found stored already (unique_violation: the batch
 * rolled back; worth another attempt, careful). */
static int write_once(struct pgstore *s, struct store_batch *b, int careful, int *lost,
                      int *unknown, int *conflict)
{
    *lost = *unknown = *conflict = 0;
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
    double until = deadline(s, 0); /* the whole batch: sent, committed and answered */
    int synced = 0, sent = 0;
    const char *fail = NULL; /* what failed, NULL while all is well */
    char why[400] = "";      /* the first error the server reported, "" for libpq's */
    if (!PQenterPipelineMode(c)) {
        fail = "entering pipeline mode";
        goto out;
    }
    /* send: the jobs (a statement per chunk), one delete, the records, the high-water mark, then
     * Sync (the implicit transaction commits there, or rolls back entirely on the first error) */
    int js = send_jobs(s, b, careful, &sent);
    if (js != 0) {
        fail = js == -2 ? "encoding the jobs (out of memory)" : "sending the jobs";
        goto out;
    }
    if (ids != NULL) {
        const char *v[2] = {ids, s->me};
        if (!PQsendQueryPrepared(c, "spur_del", 2, v, NULL, NULL, 0)) {
            fail = "sending the deletions";
            goto out;
        }
        sent++;
    }
    for (size_t i = 0, n = store_batch_nrecords(b); i < n; i++) {
        struct store_record x;
        store_batch_record_at(b, i, &x);
        unsigned char kind[4];
        store_pg_put_be(kind, (uint32_t)x.kind, sizeof kind);
        const char *v[4] = {s->me, (const char *)kind, x.key,
                            x.value != NULL && x.value_len ? (const char *)x.value : ""};
        int l[4] = {0, 4, (int)x.key_len, (int)x.value_len};
        static const int fmt[4] = {0, 1, 1, 1};
        if (!PQsendQueryPrepared(c, x.value != NULL ? "spur_rput" : "spur_rdel",
                                 x.value != NULL ? 4 : 3, v, l, fmt, 0)) {
            fail = "sending a record";
            goto out;
        }
        sent++;
    }
    unsigned char hwm[8];
    uint64_t max = store_batch_max_id(b);
    /* only ids of this server's range raise its mark (a job taken over keeps its id) */
    store_pg_put_be(hwm, max >> STORE_PG_SLOT_BITS == (uint64_t)s->slot ? max : 0, sizeof hwm);
    const char *hv[2] = {(const char *)hwm, s->me};
    static const int len8[2] = {8, 0}, bin1[2] = {1, 0};
    if (!PQsendQueryPrepared(c, "spur_hwm", 2, hv, len8, bin1, 0)) {
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
        PGresult *res = get_result(s, until);
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
            const char *code = PQresultErrorField(res, PG_DIAG_SQLSTATE);
            *conflict = code != NULL && strcmp(code, "23505") == 0;
        }
        PQclear(res);
    }
    if (synced == 2 && !PQexitPipelineMode(c) && fail == NULL)
        fail = "leaving pipeline mode";
out:
    free(ids);
    if (fail != NULL) {
        if (why[0] == '\0' || s->timed_out)
            conn_msg(s, why, sizeof why);
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
    int lost, unknown, conflict, doubt = 0, careful = 0;
    /* with --store-wait, an unavailable database is waited for, up to the bound. A batch whose
     * commit had an unknown outcome is written again with upserts only (careful), which write
     * the same values over what may have been committed; so is, at once, a batch that found a
     * new job's id stored (a row nobody should have written: it is replaced, as an update) */
    while (write_once(s, b, careful, &lost, &unknown, &conflict) != 0) {
        if (conflict && !careful) {
            careful = 1;
            continue;
        }
        careful |= unknown;
        doubt |= unknown;
        if (s->fenced) {
            store_batch_set_error(b, s->err);
            return -2;
        }
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

/* decode_row decodes the one row a single-row result holds (replay, adopt) into *r, whose
 * pointers point into res, and its id into *id. Returns NULL, or why the row is not a job. */
static const char *decode_row(const struct pgstore *s, PGresult *res, struct store_rec *r,
                              int64_t *id)
{
    struct store_col cols[STORE_ROW_NCOLS];
    for (int k = 0; k < STORE_ROW_NCOLS; k++)
        col_bin(res, k, &cols[k]);
    *id = cols[STORE_ROW_ID].i;
    const char *why = store_row_decode(cols, s->max_func, r);
    if (why == NULL && PQnfields(res) > STORE_ROW_NCOLS && !PQgetisnull(res, 0, STORE_ROW_NCOLS)) {
        size_t n = (size_t)PQgetlength(res, 0, STORE_ROW_NCOLS);
        if (n > STORE_META_MAX)
            return "meta longer than 65536 bytes";
        r->meta = n ? PQgetvalue(res, 0, STORE_ROW_NCOLS) : NULL;
        r->meta_len = n;
    }
    return why;
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
        PGresult *r = pq_params(s,
                                "WITH m AS (DELETE FROM spur_jobs WHERE id = $1::bigint RETURNING *)"
                                " INSERT INTO spur_quarantine SELECT m.id, m.prio, m.run_at,"
                                " m.func, m.uniq, m.reducer, m.data, $2::text,"
                                " extract(epoch FROM now())::bigint FROM m", 2, v, 0);
        int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        if (!ok) {
            char m[400];
            set_err(s, "moving invalid rows to spur_quarantine: %s",
                    conn_msg(s, m, sizeof m));
        }
        PQclear(r);
        if (!ok) {
            exec(s, "ROLLBACK", "quarantine");
            return -1;
        }
    }
    return exec(s, "COMMIT", "quarantine");
}

/* read_rows reads the results of the single-row query just sent, calling row(s, res, ctx) for
 * each row until it returns non-zero (then the rest is read away), and sets s->err ("what: ...")
 * on an error of the query or of the session. Returns 0, row's non-zero value, or -1. */
static int read_rows(struct pgstore *s, const char *what,
                     int (*row)(struct pgstore *s, PGresult *res, void *ctx), void *ctx)
{
    char m[400];
    int ret = 0;
    PGresult *res;
    while ((res = get_result(s, deadline(s, 0))) != NULL) {
        ExecStatusType st = PQresultStatus(res);
        if (st == PGRES_SINGLE_TUPLE) {
            if (ret == 0)
                ret = row(s, res, ctx);
        } else if (st != PGRES_TUPLES_OK && ret == 0) {
            set_err(s, "%s: %s", what, pq_msg(PQresultErrorMessage(res), m, sizeof m));
            ret = -1;
        }
        PQclear(res);
    }
    if (ret == 0 && PQstatus(s->conn) != CONNECTION_OK) {
        set_err(s, "%s: %s", what, conn_msg(s, m, sizeof m));
        ret = -1;
    }
    return ret;
}

/* struct replay_ctx is what pg_replay's rows go to: the callback, and the rows that are not jobs. */
struct replay_ctx {
    int (*cb)(void *ctx, const struct store_rec *r);
    void *ctx;
    struct bad_row *bad;
    size_t nbad, capbad;
};

/* replay_one hands one replayed row to the callback, or keeps it aside when it is not a job. */
static int replay_one(struct pgstore *s, PGresult *res, void *arg)
{
    struct replay_ctx *rc = arg;
    struct store_rec r;
    int64_t id;
    const char *why = decode_row(s, res, &r, &id);
    if (why == NULL)
        return rc->cb(rc->ctx, &r);
    if (array_grow((void **)&rc->bad, &rc->capbad, rc->nbad + 1, sizeof *rc->bad, 16) != 0) {
        set_err(s, "replay: out of memory");
        return -1;
    }
    rc->bad[rc->nbad++] = (struct bad_row){id, why};
    return 0;
}

static int pg_replay(void *db, int (*cb)(void *ctx, const struct store_rec *r), void *ctx)
{
    struct pgstore *s = db;
    char m[400];
    s->quarantined = 0;
    s->qnote[0] = '\0';
    if (ensure(s) != 0)
        return -1;
    const char *me[1] = {s->me};
    if (!PQsendQueryPrepared(s->conn, "spur_sel", 1, me, NULL, NULL, 1) ||
        !PQsetSingleRowMode(s->conn)) {
        set_err(s, "replay: %s", conn_msg(s, m, sizeof m));
        return -1;
    }
    struct replay_ctx rc = {cb, ctx, NULL, 0, 0};
    int ret = read_rows(s, "replay", replay_one, &rc);
    if (rc.nbad > 0 && ret == 0) {
        s->quarantined = rc.nbad;
        int moved = quarantine(s, rc.bad, rc.nbad) == 0;
        snprintf(s->qnote, sizeof s->qnote, "%zu invalid stored rows %s (the first: id %lld, %s)",
                 rc.nbad, moved ? "moved to table spur_quarantine" : "skipped (could not be moved aside)",
                 (long long)rc.bad[0].id, rc.bad[0].reason);
    }
    free(rc.bad);
    return ret;
}

static int pg_replay_records(void *db, int (*cb)(void *ctx, const struct store_record *r), void *ctx)
{
    struct pgstore *s = db;
    char m[400];
    if (ensure(s) != 0)
        return -1;
    const char *me[1] = {s->me};
    PGresult *res = pq_prepared(s, "spur_rsel", 1, me, 1);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        set_err(s, "replaying the records: %s", conn_msg(s, m, sizeof m));
        PQclear(res);
        return -1;
    }
    int ret = 0;
    for (int i = 0, n = PQntuples(res); i < n && ret == 0; i++) {
        const unsigned char *k = (const unsigned char *)PQgetvalue(res, i, 0);
        struct store_record r = {0};
        r.kind = PQgetlength(res, i, 0) == 4
                     ? (int)((uint32_t)k[0] << 24 | (uint32_t)k[1] << 16 | (uint32_t)k[2] << 8 | k[3])
                     : 0;
        r.key = PQgetvalue(res, i, 1);
        r.key_len = (size_t)PQgetlength(res, i, 1);
        r.value = PQgetvalue(res, i, 2);
        r.value_len = (size_t)PQgetlength(res, i, 2);
        ret = cb(ctx, &r);
    }
    PQclear(res);
    return ret;
}

static void pg_maintain(void *db)
{
    /* nothing to compact (autovacuum does); reconnect by ourselves after an outage, and renew the
     * lease (the lock is the session's: renewed_at only tells others how long ago it was alive) */
    struct pgstore *s = db;
    if (ensure(s) != 0)
        return;
    const char *v[1] = {s->me};
    PGresult *r = pq_prepared(s, "spur_renew", 1, v, 0);
    PQclear(r); /* a failure shows in the next ensure */
}

/* take_one hands one row taken over to the callback; a row that is not a job stays stored. */
static int take_one(struct pgstore *s, PGresult *res, void *arg)
{
    struct replay_ctx *rc = arg;
    struct store_rec r;
    int64_t id;
    if (decode_row(s, res, &r, &id) == NULL) {
        if (rc->cb(rc->ctx, &r) != 0) {
            set_err(s, "reading the jobs taken over: out of memory");
            return -1;
        }
        s->claim_n++;
    }
    s->claim_last = (uint64_t)id;
    return 0;
}

/* hand_over streams the rows claimed with marker s->claim above s->claim_last to cb, as replay
 * does. Returns 0 when all are handed over, else -1 (s->err set; the next call goes on). */
static int hand_over(struct pgstore *s, int (*cb)(void *ctx, const struct store_rec *r), void *ctx)
{
    char m[400], mark[24], last[24];
    snprintf(mark, sizeof mark, "%llu", (unsigned long long)s->claim);
    snprintf(last, sizeof last, "%llu", (unsigned long long)s->claim_last);
    const char *v[3] = {s->me, mark, last};
    if (!PQsendQueryParams(s->conn, "SELECT id, prio, run_at, func, uniq, reducer, data, meta FROM"
                           " spur_jobs WHERE owner = $1 AND claim = $2::bigint AND id > $3::bigint"
                           " ORDER BY id", 3, NULL, v, NULL, NULL, 1) ||
        !PQsetSingleRowMode(s->conn)) {
        set_err(s, "reading the jobs taken over: %s", conn_msg(s, m, sizeof m));
        return -1;
    }
    struct replay_ctx rc = {cb, ctx, NULL, 0, 0};
    return read_rows(s, "reading the jobs taken over", take_one, &rc);
}

/* adopt_one looks for one server whose lease has not been renewed for takeover_after seconds and
 * that nobody claimed since, and claims its rows under its lease lock. Returns 1 when it claimed
 * (s->claim set), 0 when there was nothing to claim, -1 with s->err set. */
static int adopt_one(struct pgstore *s)
{
    char st[32], cls[16];
    snprintf(st, sizeof st, "%.3f", s->takeover_after);
    snprintf(cls, sizeof cls, "%d", STORE_PG_LEASE_CLASS);
    const char *v[2] = {s->me, st};
    int n;
    PGresult *r = query(s, "SELECT server_id, slot FROM spur_servers WHERE server_id <> $1 AND"
                           " renewed_at < clock_timestamp() - $2::float8 * interval '1 second' AND"
                           " (claimed_at IS NULL OR claimed_at < renewed_at) ORDER BY slot LIMIT 1",
                        2, v, "looking for expired leases", &n);
    if (r == NULL)
        return -1;
    if (n != 1) {
        PQclear(r);
        return 0;
    }
    char victim[STORE_PG_SERVER_ID_MAX + 1], slot[16];
    snprintf(victim, sizeof victim, "%s", PQgetvalue(r, 0, 0));
    snprintf(slot, sizeof slot, "%s", PQgetvalue(r, 0, 1));
    PQclear(r);
    if (exec(s, "BEGIN", "takeover") != 0)
        return -1;
    const char *w[2] = {cls, slot};
    r = query(s, "SELECT pg_try_advisory_xact_lock($1::int, $2::int), nextval('spur_claims')", 2, w,
              "taking the lease lock", &n);
    if (r == NULL || n != 1 || PQgetvalue(r, 0, 0)[0] != 't') {
        if (r != NULL)
            PQclear(r); /* its session lingers, or it came back: not claimable now */
        exec(s, "ROLLBACK", "takeover");
        return r == NULL ? -1 : 0;
    }
    char mark[24];
    snprintf(mark, sizeof mark, "%s", PQgetvalue(r, 0, 1));
    PQclear(r);
    int64_t jobs = claim(s, victim, s->takeover_after, mark);
    if (jobs < 0 || exec(s, "COMMIT", "committing the takeover") != 0) {
        exec(s, "ROLLBACK", "takeover");
        return -1;
    }
    s->claim = (uint64_t)strtoull(mark, NULL, 10);
    s->claim_last = s->claim_n = 0;
    snprintf(s->claim_from, sizeof s->claim_from, "%s", victim);
    return 1;
}

static int pg_adopt(void *db, int (*cb)(void *ctx, const struct store_rec *r), void *ctx,
                    const char **note)
{
    struct pgstore *s = db;
    if (note != NULL)
        *note = s->anote;
    if (s->fenced) {
        snprintf(s->anote, sizeof s->anote, "%s", s->err);
        return -2;
    }
    if (s->takeover_after <= 0 || s->conn == NULL)
        return 0;
    if (s->claim == 0) {
        int rc = adopt_one(s);
        if (rc <= 0)
            return rc;
    }
    if (hand_over(s, cb, ctx) != 0)
        return -1; /* the claim stays pending: the next call hands over the rest */
    uint64_t n = s->claim_n;
    snprintf(s->anote, sizeof s->anote, "of server %s, whose lease was not renewed for %g s",
             s->claim_from, s->takeover_after);
    s->claim = 0;
    return (int)n;
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
    store_pg_rows_free(&s->rows);
    free(s->doubt);
    free(s->conninfo);
    free(s);
}

/* pg_params reads the PostgreSQL options of c (--server-id, default HOSTNAME:PORT; --takeover;
 * --takeover-after) and sets p->shown to the location without its password. */
static const void *pg_params(const struct config *c, struct store_params *p)
{
    static struct store_pg_params own;          /* one store per process */
    static char shown[256];                     /* logs may not show a password */
    static char id[STORE_PG_SERVER_ID_MAX + 1]; /* the default --server-id: HOSTNAME:PORT */
    p->shown = store_pg_redact(p->location, shown, sizeof shown);
    own = (struct store_pg_params){c->server_id, c->takeover, c->ntakeover, c->takeover_after};
    if (own.server_id == NULL) {
        char host[256] = "";
        if (gethostname(host, sizeof host - 1) != 0 || host[0] == '\0')
            strcpy(host, "localhost");
        snprintf(id, sizeof id, "%s:%d", host, c->port);
        for (char *q = id; *q; q++) /* a hostname has only letters, digits, - and . */
            if (!store_pg_valid_server_id((char[]){*q, '\0'}))
                *q = '_';
        own.server_id = id;
    }
    return &own;
}

const struct store_backend store_pg_backend = {
    .name = "postgres",
    .params = pg_params,
    .open = pg_open,
    .replay = pg_replay,
    .write_batch = pg_write_batch,
    .maintain = pg_maintain,
    .error = pg_error,
    .note = pg_note,
    .quarantined = pg_quarantined,
    .adopt = pg_adopt,
    .replay_records = pg_replay_records,
    .close = pg_close,
};
