/* SPDX-License-Identifier: BSD-3-Clause */
/* store_sqlite: the durable store of background jobs in one SQLite file. See store_sqlite.h for the
 * API and the thread-safety rules, and docs/PERSISTENCE.md for the file layout and the guarantees.
 *
 * Layout of the state: the loop side owns `q` (the batch being filled, store_batch.h); the
 * connection side owns `db`, the statements, `err`, `hwm`, `wal_frames` and the maintenance flags.
 * No field is shared between the two sides. */
#include "store_sqlite.h"
#include "config.h"
#include "file.h"

#include "log.h"
#include "store_backend.h"
#include "store_row.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#define SCHEMA_VERSION 2 /* 2: spur_jobs.meta and spur_records (1 is migrated at open) */
#define BUSY_MS 5000                 /* wait this long for another connection's lock */
#define WAL_CKPT_FRAMES 1024         /* maintain: checkpoint(TRUNCATE) from 4 MiB of WAL (4 KiB pages) */
#define WAL_HARD_FRAMES 16384        /* commit path: a passive checkpoint if maintain is not called */
#define WAL_SIZE_LIMIT "67108864"    /* journal_size_limit: a reused WAL file is cut back to 64 MiB */
#define FREE_MIN_PAGES 1024          /* maintain: vacuum only from 4 MiB of free pages ... */
#define FREE_MIN_SHARE 4             /* ... that are at least 1/4 of the file */
#define VACUUM_STEP "1024"           /* maintain: at most this many pages freed per call (4 MiB) */
#define VACUUM_STEP_PAGES 1024       /* the same number, for arithmetic */
#define IMPORTED_SUFFIX "_spur_imported"
#define ID_MAX_SQL "4611686018427387904" /* STORE_ID_MAX, for SQL text */
#define MAX_FUNC_DEFAULT 512             /* spurd's default --max-function-name */

/* struct store_sqlite is an open store. */
struct store_sqlite {
    /* loop side */
    struct store_queue q;    /* the batch being filled (direct use; empty behind the backend) */
    /* connection side */
    sqlite3 *db;             /* the connection */
    sqlite3_stmt *st_begin;  /* BEGIN IMMEDIATE */
    sqlite3_stmt *st_commit; /* COMMIT */
    sqlite3_stmt *st_insert; /* insert one job */
    sqlite3_stmt *st_delete; /* delete one job by id */
    sqlite3_stmt *st_rec_put; /* write one record */
    sqlite3_stmt *st_rec_del; /* delete one record */
    sqlite3_stmt *st_hwm;    /* raise the persistent high-water mark */
    sqlite3_stmt *st_free;   /* PRAGMA freelist_count */
    sqlite3_stmt *st_pages;  /* PRAGMA page_count */
    sqlite3_stmt *st_vacuum; /* PRAGMA incremental_vacuum(VACUUM_STEP) */
    uint64_t hwm;            /* the high-water mark as stored */
    int wal_frames;          /* frames in the WAL after the last commit (from the WAL hook) */
    int maint_dirty;         /* something was written since maintain last had nothing to do */
    int maint_freed;         /* rows were deleted since the free-page count was last checked */
    char err[256];           /* the last error text, or "" */
    char *note;              /* what open did that the operator should know, or NULL (sqlite3_free) */
    size_t max_func;         /* longest function or reducer name a replayed row may have */
    uint64_t quarantined;    /* rows the last replay moved to spur_quarantine */
    char qnote[256];         /* what the last replay moved aside and why, or "" */
};

/* set_err formats an error text into buf (len bytes). */
static void set_err(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    if (buf == NULL || len == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

/* db_err formats what went wrong in db while doing `what` into buf, with SQLite's message, result
 * code and the operating system's errno when there is one. */
static void db_err(sqlite3 *db, char *buf, size_t len, const char *what)
{
    int code = sqlite3_extended_errcode(db);
    int sys = sqlite3_system_errno(db);
    if (sys != 0 && (code & 0xff) != SQLITE_CONSTRAINT)
        set_err(buf, len, "%s: %s (sqlite code %d, errno %d: %s)", what, sqlite3_errmsg(db), code, sys,
                strerror(sys));
    else
        set_err(buf, len, "%s: %s (sqlite code %d)", what, sqlite3_errmsg(db), code);
}

/* exec runs sql (no result rows wanted). Returns 0 or -1 with the text in buf. */
static int exec(sqlite3 *db, const char *sql, char *buf, size_t len)
{
    if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK) {
        db_err(db, buf, len, sql);
        return -1;
    }
    return 0;
}

/* query_int runs sql, which yields one integer, into *out. Returns 0 or -1 with the text in buf. */
static int query_int(sqlite3 *db, const char *sql, int64_t *out, char *buf, size_t len)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            *out = sqlite3_column_int64(st, 0);
            rc = SQLITE_OK;
        } else if (rc == SQLITE_DONE) {
            *out = 0;
            rc = SQLITE_OK;
        }
    }
    if (rc != SQLITE_OK)
        db_err(db, buf, len, sql);
    sqlite3_finalize(st);
    return rc == SQLITE_OK ? 0 : -1;
}

/* step_once steps a prepared statement that yields no row we need, then resets it. Returns the
 * step's result code (SQLITE_DONE or SQLITE_ROW on success). */
static int step_once(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc;
}

/* step_ok tells whether a step result means success. */
static int step_ok(int rc) { return rc == SQLITE_DONE || rc == SQLITE_ROW; }

/* wal_hook runs after every commit with the number of frames in the WAL. It records it for
 * maintain and, as a backstop when maintain is not called, checkpoints passively once the WAL is
 * very large. Registering it also replaces SQLite's automatic checkpoint, which would otherwise run
 * on the commit path every 1000 pages. */
static int wal_hook(void *arg, sqlite3 *db, const char *name, int frames)
{
    struct store_sqlite *s = arg;
    s->wal_frames = frames;
    if (frames >= WAL_HARD_FRAMES)
        sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    return SQLITE_OK;
}

/* ---------------------------------------------------------------- schema and import */

static const char schema_sql[] =
    "CREATE TABLE IF NOT EXISTS spur_meta (\n"
    "  key TEXT PRIMARY KEY,\n"
    "  value INTEGER NOT NULL);\n"
    "CREATE TABLE IF NOT EXISTS spur_jobs (\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  prio INTEGER NOT NULL,\n"
    "  run_at INTEGER NOT NULL,\n"
    "  func BLOB NOT NULL,\n"
    "  uniq BLOB NOT NULL,\n"
    "  reducer BLOB NOT NULL,\n"
    "  data BLOB NOT NULL,\n"
    "  meta BLOB);\n"
    "CREATE TABLE IF NOT EXISTS spur_records (\n"
    "  kind INTEGER NOT NULL,\n"
    "  key BLOB NOT NULL,\n"
    "  value BLOB NOT NULL,\n"
    "  PRIMARY KEY (kind, key));\n"
    "CREATE TABLE IF NOT EXISTS spur_import (\n"
    "  table_name TEXT PRIMARY KEY,\n"
    "  renamed_to TEXT NOT NULL,\n"
    "  imported_at INTEGER NOT NULL,\n"
    "  jobs INTEGER NOT NULL,\n"
    "  skipped INTEGER NOT NULL,\n"
    "  first_id INTEGER,\n"
    "  last_id INTEGER);\n"
    "CREATE TABLE IF NOT EXISTS spur_quarantine (\n"
    "  id, prio, run_at, func, uniq, reducer, data,\n"
    "  reason TEXT NOT NULL,\n"
    "  moved_at INTEGER NOT NULL);\n"
    "INSERT OR IGNORE INTO spur_meta (key, value) VALUES ('schema', 2), ('max_id', 0);\n";

/* schema 1 to 2: a job's extension state (meta) and the durable records; spur_records is made by
 * schema_sql (IF NOT EXISTS) */
static const char migrate_sql[] =
    "ALTER TABLE spur_jobs ADD COLUMN meta BLOB;\n"
    "UPDATE spur_meta SET value = 2 WHERE key = 'schema';\n";

/* has_table tells whether a table called name exists: 1, 0, or -1 on error. */
static int has_table(sqlite3 *db, const char *name, char *buf, size_t len)
{
    sqlite3_stmt *st = NULL;
    int found = -1;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1", -1, &st,
                           NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        int rc = sqlite3_step(st);
        found = rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
    }
    if (found < 0)
        db_err(db, buf, len, "looking for a table");
    sqlite3_finalize(st);
    return found;
}

/* column_mask returns a bit mask of which of gearmand's columns table has (1 unique_key,
 * 2 function_name, 4 priority, 8 data, 16 when_to_run), or -1 on error. */
static int column_mask(sqlite3 *db, const char *table, char *buf, size_t len)
{
    static const char *const names[] = {"unique_key", "function_name", "priority", "data", "when_to_run"};
    sqlite3_stmt *st = NULL;
    int mask = 0, rc;
    if (sqlite3_prepare_v2(db, "SELECT name FROM pragma_table_info(?1)", -1, &st, NULL) != SQLITE_OK) {
        db_err(db, buf, len, "reading the import table's columns");
        return -1;
    }
    sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *col = (const char *)sqlite3_column_text(st, 0);
        for (int i = 0; col != NULL && i < 5; i++)
            if (sqlite3_stricmp(col, names[i]) == 0)
                mask |= 1 << i;
    }
    if (rc != SQLITE_DONE) {
        db_err(db, buf, len, "reading the import table's columns");
        mask = -1;
    }
    sqlite3_finalize(st);
    return mask;
}

/* blob_or_empty returns column k of st as bytes, "" rather than NULL when empty. */
static const void *blob_or_empty(sqlite3_stmt *st, int k, size_t *len)
{
    const void *p = sqlite3_column_blob(st, k);
    *len = (size_t)sqlite3_column_bytes(st, k);
    return p != NULL ? p : "";
}

/* bind_bytes binds n bytes at p to parameter k without copying; an empty value is an empty blob,
 * not NULL. Returns the SQLite result code. */
static int bind_bytes(sqlite3_stmt *st, int k, const void *p, size_t n)
{
    return sqlite3_bind_blob64(st, k, n ? p : "", (sqlite3_uint64)n, SQLITE_STATIC);
}

/* import_gearmand copies the rows of gearmand's table into spur_jobs, records the import and
 * renames the table; the caller holds the write transaction. *next is the first id to assign and
 * is advanced past the last one. Returns 0 or -1 with the text in buf. */
static int import_gearmand(struct store_sqlite *s, const char *table, uint64_t *next, char *buf, size_t len)
{
    sqlite3 *db = s->db;
    sqlite3_stmt *sel = NULL, *ins = NULL, *rec = NULL;
    char *sql = NULL, *renamed = NULL;
    int64_t jobs = 0, skipped = 0, first = 0, last = 0;
    int ret = -1, rc;

    if (strncmp(table, "spur_", 5) == 0 || strncmp(table, "sqlite_", 7) == 0) {
        set_err(buf, len, "import table %s: that name belongs to Spur or SQLite", table);
        return -1;
    }
    int exists = has_table(db, table, buf, len);
    if (exists <= 0)
        return exists; /* nothing to import, or an error */

    /* Imported before (the table has re-appeared, e.g. gearmand ran again on this file)? Leave it. */
    int64_t done_before = 0, rows = 0;
    sql = sqlite3_mprintf("SELECT count(*) FROM spur_import WHERE table_name = %Q", table);
    if (sql == NULL || query_int(db, sql, &done_before, buf, len) != 0)
        goto out;
    if (done_before) {
        sqlite3_free(sql);
        sql = sqlite3_mprintf("SELECT count(*) FROM \"%w\"", table);
        if (sql == NULL || query_int(db, sql, &rows, buf, len) != 0)
            goto out;
        if (rows > 0)
            s->note = sqlite3_mprintf("table %s was imported before and has re-appeared with %lld rows: "
                                      "not imported again (rename it and restart to import it)",
                                      table, (long long)rows);
        ret = 0;
        goto out;
    }

    int mask = column_mask(db, table, buf, len);
    if (mask < 0)
        goto out;
    if ((mask & 15) != 15) {
        set_err(buf, len, "import table %s does not have gearmand's columns "
                "(unique_key, function_name, priority, data)", table);
        goto out;
    }
    renamed = sqlite3_mprintf("%s" IMPORTED_SUFFIX, table);
    if (renamed == NULL)
        goto oom;
    int clash = has_table(db, renamed, buf, len);
    if (clash != 0) {
        if (clash > 0)
            set_err(buf, len, "cannot import table %s: a table %s already exists", table, renamed);
        goto out;
    }

    sqlite3_free(sql);
    sql = sqlite3_mprintf("SELECT unique_key, function_name, priority, data, %s FROM \"%w\" ORDER BY rowid",
                          (mask & 16) ? "when_to_run" : "0", table);
    if (sql == NULL)
        goto oom;
    if (sqlite3_prepare_v2(db, sql, -1, &sel, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "INSERT INTO spur_jobs (id, prio, run_at, func, uniq, reducer, data) "
                               "VALUES (?1, ?2, ?3, ?4, ?5, x'', ?6)",
                           -1, &ins, NULL) != SQLITE_OK) {
        db_err(db, buf, len, "preparing the import");
        goto out;
    }
    while ((rc = sqlite3_step(sel)) == SQLITE_ROW) {
        size_t ulen, flen, dlen;
        const void *u = blob_or_empty(sel, 0, &ulen);
        const void *f = blob_or_empty(sel, 1, &flen);
        const void *d = blob_or_empty(sel, 3, &dlen);
        int64_t prio = sqlite3_column_type(sel, 2) == SQLITE_NULL ? 1 : sqlite3_column_int64(sel, 2);
        int64_t when = sqlite3_column_int64(sel, 4); /* NULL reads as 0 */
        if (flen == 0) {
            skipped++;
            continue;
        }
        if (*next > (uint64_t)INT64_MAX) {
            set_err(buf, len, "import: job ids exhausted");
            goto out;
        }
        sqlite3_bind_int64(ins, 1, (int64_t)*next);
        sqlite3_bind_int(ins, 2, prio >= 0 && prio <= 2 ? (int)prio : 1);
        sqlite3_bind_int64(ins, 3, when > 0 ? when : 0);
        bind_bytes(ins, 4, f, flen);
        bind_bytes(ins, 5, u, ulen);
        bind_bytes(ins, 6, d, dlen);
        if (!step_ok(step_once(ins))) {
            db_err(db, buf, len, "importing a row");
            goto out;
        }
        if (jobs == 0)
            first = (int64_t)*next;
        last = (int64_t)*next;
        jobs++;
        (*next)++;
    }
    if (rc != SQLITE_DONE) {
        db_err(db, buf, len, "reading the import table");
        goto out;
    }
    sqlite3_finalize(sel);
    sel = NULL;

    if (sqlite3_prepare_v2(db, "INSERT INTO spur_import (table_name, renamed_to, imported_at, jobs, skipped, "
                               "first_id, last_id) VALUES (?1, ?2, strftime('%s', 'now'), ?3, ?4, ?5, ?6)",
                           -1, &rec, NULL) != SQLITE_OK) {
        db_err(db, buf, len, "recording the import");
        goto out;
    }
    sqlite3_bind_text(rec, 1, table, -1, SQLITE_STATIC);
    sqlite3_bind_text(rec, 2, renamed, -1, SQLITE_STATIC);
    sqlite3_bind_int64(rec, 3, jobs);
    sqlite3_bind_int64(rec, 4, skipped);
    if (jobs) {
        sqlite3_bind_int64(rec, 5, first);
        sqlite3_bind_int64(rec, 6, last);
    }
    if (!step_ok(step_once(rec))) {
        db_err(db, buf, len, "recording the import");
        goto out;
    }
    sqlite3_free(sql);
    sql = sqlite3_mprintf("ALTER TABLE \"%w\" RENAME TO \"%w\"; "
                          "UPDATE spur_meta SET value = max(value, %lld) WHERE key = 'max_id'",
                          table, renamed, (long long)last);
    if (sql == NULL)
        goto oom;
    if (exec(db, sql, buf, len) != 0)
        goto out;
    s->note = sqlite3_mprintf("imported %lld jobs from gearmand's table %s (ids %lld..%lld, %lld rows "
                              "without a function skipped); the table is now %s",
                              (long long)jobs, table, (long long)first, (long long)last, (long long)skipped,
                              renamed);
    ret = 0;
    goto out;
oom:
    set_err(buf, len, "import: out of memory");
out:
    sqlite3_finalize(sel);
    sqlite3_finalize(ins);
    sqlite3_finalize(rec);
    sqlite3_free(sql);
    sqlite3_free(renamed);
    return ret;
}

/* ---------------------------------------------------------------- open and close */

/* prepare prepares sql into *st for repeated use. Returns 0 or -1 with the text in buf. */
static int prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st, char *buf, size_t len)
{
    if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL) != SQLITE_OK) {
        db_err(db, buf, len, sql);
        return -1;
    }
    return 0;
}

/* finalize_all finalizes every prepared statement of s. */
static void finalize_all(struct store_sqlite *s)
{
    sqlite3_stmt **all[] = {&s->st_begin, &s->st_commit, &s->st_insert, &s->st_delete,
                            &s->st_rec_put, &s->st_rec_del,
                            &s->st_hwm,   &s->st_free,   &s->st_pages,  &s->st_vacuum};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        sqlite3_finalize(*all[i]);
        *all[i] = NULL;
    }
}

/* setup does everything open does once the connection exists. Returns 0 or -1 with the text in
 * buf. */
static int setup(struct store_sqlite *s, const char *import_table, uint64_t *next_id, char *buf, size_t len)
{
    sqlite3 *db = s->db;
    int64_t pages = 0, version = 0, max_id = 0, row_max = 0, av = 0;
    char mode[16] = "";

    sqlite3_extended_result_codes(db, 1);
    sqlite3_busy_timeout(db, BUSY_MS);
    if (query_int(db, "PRAGMA page_count", &pages, buf, len) != 0)
        return -1;
    /* auto_vacuum must be chosen before the first table exists. */
    if (pages == 0 && exec(db, "PRAGMA auto_vacuum = INCREMENTAL", buf, len) != 0)
        return -1;

    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "PRAGMA journal_mode = WAL", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        snprintf(mode, sizeof mode, "%s", (const char *)sqlite3_column_text(st, 0));
    else
        db_err(db, buf, len, "PRAGMA journal_mode = WAL");
    sqlite3_finalize(st);
    if (sqlite3_stricmp(mode, "wal") != 0) {
        if (mode[0] != '\0')
            set_err(buf, len, "cannot switch to WAL mode (journal mode is %s)", mode);
        return -1;
    }
    if (exec(db, "PRAGMA synchronous = FULL", buf, len) != 0 ||
        exec(db, "PRAGMA journal_size_limit = " WAL_SIZE_LIMIT, buf, len) != 0)
        return -1;
    sqlite3_wal_hook(db, wal_hook, s);

    /* Schema, version check, high-water mark and the one-time import: one transaction. */
    if (exec(db, "BEGIN IMMEDIATE", buf, len) != 0)
        return -1;
    if (exec(db, schema_sql, buf, len) != 0 ||
        query_int(db, "SELECT value FROM spur_meta WHERE key = 'schema'", &version, buf, len) != 0 ||
        query_int(db, "SELECT value FROM spur_meta WHERE key = 'max_id'", &max_id, buf, len) != 0 ||
        query_int(db, "SELECT coalesce((SELECT max(id) FROM spur_jobs WHERE id <= " ID_MAX_SQL "), 0)",
                  &row_max, buf, len) != 0)
        goto rollback;
    if (version == 1) {
        if (exec(db, migrate_sql, buf, len) != 0)
            goto rollback;
        version = 2;
    }
    if (version != SCHEMA_VERSION) {
        set_err(buf, len, "store schema version %lld is not supported (this Spur reads version %d)",
                (long long)version, SCHEMA_VERSION);
        goto rollback;
    }
    if (max_id < 0 || (uint64_t)max_id > STORE_ID_MAX) {
        /* an insane high-water mark would make every new id invalid: fall back to the stored ids
         * (replay moves rows with ids out of range aside) */
        s->note = sqlite3_mprintf("the stored high-water mark %lld is out of range (1..%llu); reset "
                                  "to %lld, the largest valid stored id",
                                  (long long)max_id, (unsigned long long)STORE_ID_MAX,
                                  (long long)row_max);
        char *sql = sqlite3_mprintf("UPDATE spur_meta SET value = %lld WHERE key = 'max_id'",
                                    (long long)row_max);
        int bad = sql == NULL || exec(db, sql, buf, len) != 0;
        sqlite3_free(sql);
        if (bad)
            goto rollback;
        max_id = row_max;
    }
    if (row_max > max_id)
        max_id = row_max;
    uint64_t next = next_id != NULL ? *next_id : 1;
    if (next <= (uint64_t)max_id)
        next = (uint64_t)max_id + 1;
    uint64_t first_free = next;
    if (import_table != NULL && import_table[0] != '\0' && import_gearmand(s, import_table, &next, buf, len) != 0)
        goto rollback;
    if (exec(db, "COMMIT", buf, len) != 0)
        goto rollback;
    s->hwm = next != first_free ? next - 1 : (uint64_t)max_id; /* as stored */

    /* A file made by gearmand (or an old SQLite) has no auto-vacuum: convert it once. */
    if (query_int(db, "PRAGMA auto_vacuum", &av, buf, len) != 0)
        return -1;
    if (av != 2 && (exec(db, "PRAGMA auto_vacuum = INCREMENTAL", buf, len) != 0 || exec(db, "VACUUM", buf, len) != 0))
        return -1;

    if (prepare(db, "BEGIN IMMEDIATE", &s->st_begin, buf, len) != 0 ||
        prepare(db, "COMMIT", &s->st_commit, buf, len) != 0 ||
        prepare(db, "INSERT OR REPLACE INTO spur_jobs (id, prio, run_at, func, uniq, reducer, data, "
                    "meta) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                &s->st_insert, buf, len) != 0 ||
        prepare(db, "DELETE FROM spur_jobs WHERE id = ?1", &s->st_delete, buf, len) != 0 ||
        prepare(db, "INSERT OR REPLACE INTO spur_records (kind, key, value) VALUES (?1, ?2, ?3)",
                &s->st_rec_put, buf, len) != 0 ||
        prepare(db, "DELETE FROM spur_records WHERE kind = ?1 AND key = ?2", &s->st_rec_del, buf,
                len) != 0 ||
        prepare(db, "UPDATE spur_meta SET value = ?1 WHERE key = 'max_id' AND value < ?1", &s->st_hwm, buf, len) != 0 ||
        prepare(db, "PRAGMA freelist_count", &s->st_free, buf, len) != 0 ||
        prepare(db, "PRAGMA page_count", &s->st_pages, buf, len) != 0 ||
        prepare(db, "PRAGMA incremental_vacuum(" VACUUM_STEP ")", &s->st_vacuum, buf, len) != 0)
        return -1;
    if (next_id != NULL)
        *next_id = next;
    s->maint_dirty = 1; /* look at the WAL and the free pages once */
    s->maint_freed = 1;
    return 0;
rollback:
    if (!sqlite3_get_autocommit(db))
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return -1;
}

struct store_sqlite *store_sqlite_open(const char *path, const char *import_table, uint64_t *next_id,
                                       char *err, size_t errlen)
{
    struct store_sqlite *s = calloc(1, sizeof *s);
    char buf[512] = "";
    if (s == NULL) {
        set_err(err, errlen, "store %s: out of memory", path);
        return NULL;
    }
    s->max_func = MAX_FUNC_DEFAULT;
    if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
        set_err(err, errlen, "store %s: %s", path, s->db ? sqlite3_errmsg(s->db) : "out of memory");
        sqlite3_close(s->db);
        free(s);
        return NULL;
    }
    if (setup(s, import_table, next_id, buf, sizeof buf) != 0) {
        set_err(err, errlen, "store %s: %s", path, buf);
        finalize_all(s);
        sqlite3_close(s->db);
        sqlite3_free(s->note);
        free(s);
        return NULL;
    }
    return s;
}

const char *store_sqlite_note(const struct store_sqlite *s) { return s->note; }

void store_sqlite_set_max_function(struct store_sqlite *s, size_t max) { s->max_func = max; }

uint64_t store_sqlite_quarantined(const struct store_sqlite *s, const char **note)
{
    if (note != NULL)
        *note = s->qnote;
    return s->quarantined;
}

struct sqlite3 *store_sqlite_handle(struct store_sqlite *s) { return s->db; }

const char *store_sqlite_error(const struct store_sqlite *s) { return s->err; }

void store_sqlite_close(struct store_sqlite *s)
{
    if (s == NULL)
        return;
    /* best effort: a failure leaves the dones to a later replay. The final batch also records
     * the largest id of batches that cancelled out. */
    struct store_batch *b = store_queue_take_final(&s->q);
    if (b != NULL)
        store_sqlite_write_batch(s, b);
    store_batch_free(b);
    store_queue_clear(&s->q);
    finalize_all(s);
    sqlite3_close(s->db);
    sqlite3_free(s->note);
    free(s);
}

/* ---------------------------------------------------------------- batches (loop side) */

int store_sqlite_add(struct store_sqlite *s, const struct store_rec *r) { return store_queue_add(&s->q, r); }

int store_sqlite_done(struct store_sqlite *s, uint64_t id) { return store_queue_done(&s->q, id); }

size_t store_sqlite_pending(const struct store_sqlite *s) { return store_queue_pending(&s->q); }

struct store_batch *store_sqlite_take_batch(struct store_sqlite *s) { return store_queue_take(&s->q); }

int store_sqlite_retry_dones(struct store_sqlite *s, const struct store_batch *b)
{
    return store_queue_retry_dones(&s->q, b);
}

void store_sqlite_free_batch(struct store_batch *b) { store_batch_free(b); }

/* ---------------------------------------------------------------- writing (connection side) */

/* bind_add binds the job a to the insert statement. Returns the SQLite result code. */
static int bind_add(sqlite3_stmt *st, const struct store_rec *a)
{
    int rc = sqlite3_bind_int64(st, 1, (int64_t)a->id);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(st, 2, a->prio);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 3, a->when);
    if (rc == SQLITE_OK)
        rc = bind_bytes(st, 4, a->func, a->func_len);
    if (rc == SQLITE_OK)
        rc = bind_bytes(st, 5, a->unique, a->unique_len);
    if (rc == SQLITE_OK)
        rc = bind_bytes(st, 6, a->reducer, a->reducer_len);
    if (rc == SQLITE_OK)
        rc = bind_bytes(st, 7, a->data, a->data_len);
    if (rc == SQLITE_OK)
        rc = a->meta_len ? bind_bytes(st, 8, a->meta, a->meta_len) : sqlite3_bind_null(st, 8);
    return rc;
}

/* write_record writes or deletes record r with the prepared statements of s. Returns 1 when done,
 * 0 on failure. */
static int write_record(struct store_sqlite *s, const struct store_record *r)
{
    sqlite3_stmt *st = r->value != NULL ? s->st_rec_put : s->st_rec_del;
    int rc = sqlite3_bind_int(st, 1, r->kind);
    if (rc == SQLITE_OK)
        rc = bind_bytes(st, 2, r->key, r->key_len);
    if (rc == SQLITE_OK && r->value != NULL)
        rc = bind_bytes(st, 3, r->value, r->value_len);
    int ok = rc == SQLITE_OK && step_ok(step_once(st));
    sqlite3_clear_bindings(st); /* the bound bytes belong to the batch */
    return ok;
}

int store_sqlite_write_batch(struct store_sqlite *s, struct store_batch *b)
{
    sqlite3 *db = s->db;
    const char *what = "BEGIN";
    size_t ops = store_batch_ops(b);
    uint64_t max_id = store_batch_max_id(b);
    store_batch_set_error(b, NULL);
    if (ops == 0 && max_id <= s->hwm)
        return 0;
    if (!step_ok(step_once(s->st_begin)))
        goto fail;
    what = "storing a job";
    for (size_t i = 0, n = store_batch_nadds(b); i < n; i++) {
        struct store_rec a;
        if (store_batch_add_at(b, i, &a) != 0)
            continue; /* cancelled */
        if (bind_add(s->st_insert, &a) != SQLITE_OK || !step_ok(step_once(s->st_insert)))
            goto fail;
    }
    what = "deleting a job";
    for (size_t i = 0, n = store_batch_ndones(b); i < n; i++) {
        sqlite3_bind_int64(s->st_delete, 1, (int64_t)store_batch_done_at(b, i));
        if (!step_ok(step_once(s->st_delete)))
            goto fail;
    }
    what = "writing a record";
    for (size_t i = 0, n = store_batch_nrecords(b); i < n; i++) {
        struct store_record r;
        store_batch_record_at(b, i, &r);
        if (!write_record(s, &r))
            goto fail;
    }
    what = "raising the high-water mark";
    if (max_id > s->hwm) {
        sqlite3_bind_int64(s->st_hwm, 1, (int64_t)max_id);
        if (!step_ok(step_once(s->st_hwm)))
            goto fail;
    }
    what = "COMMIT";
    if (!step_ok(step_once(s->st_commit)))
        goto fail;
    sqlite3_clear_bindings(s->st_insert); /* the bound bytes belong to b */
    if (max_id > s->hwm)
        s->hwm = max_id;
    s->maint_dirty = 1;
    if (store_batch_ndones(b))
        s->maint_freed = 1;
    s->err[0] = '\0';
    return 0;
fail: {
    char ctx[96];
    snprintf(ctx, sizeof ctx, "%s (batch of %zu ops)", what, ops);
    db_err(db, s->err, sizeof s->err, ctx);
    sqlite3_clear_bindings(s->st_insert);
    if (!sqlite3_get_autocommit(db) && sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL) != SQLITE_OK) {
        size_t n = strlen(s->err);
        snprintf(s->err + n, sizeof s->err - n, "; ROLLBACK failed: %s", sqlite3_errmsg(db));
    }
    store_batch_set_error(b, s->err);
    return -1;
}
}

int store_sqlite_commit(struct store_sqlite *s)
{
    struct store_batch *b = store_sqlite_take_batch(s);
    if (b == NULL)
        return 0;
    int rc = store_sqlite_write_batch(s, b);
    if (rc != 0)
        store_sqlite_retry_dones(s, b);
    store_sqlite_free_batch(b);
    return rc;
}

/* ---------------------------------------------------------------- replay and maintenance */

/* struct bad_row is a stored row that is not a job, kept during replay to be moved aside. */
struct bad_row {
    int64_t id;         /* its rowid */
    const char *reason; /* static text from store_row_decode */
};

/* column reads column k of st as a store_col (bytes valid until the next step). */
static void column(sqlite3_stmt *st, int k, struct store_col *c)
{
    switch (sqlite3_column_type(st, k)) {
    case SQLITE_INTEGER:
        *c = (struct store_col){STORE_COL_INT, sqlite3_column_int64(st, k), NULL, 0};
        break;
    case SQLITE_FLOAT:
        *c = (struct store_col){STORE_COL_FLOAT, 0, NULL, 0};
        break;
    case SQLITE_TEXT:
    case SQLITE_BLOB: {
        int type = sqlite3_column_type(st, k) == SQLITE_TEXT ? STORE_COL_TEXT : STORE_COL_BLOB;
        const void *p = sqlite3_column_blob(st, k);
        *c = (struct store_col){(enum store_col_type)type, 0, p, (size_t)sqlite3_column_bytes(st, k)};
        break;
    }
    default:
        *c = (struct store_col){STORE_COL_NULL, 0, NULL, 0};
    }
}

/* quarantine moves the rows bad[0..n) from spur_jobs to spur_quarantine, with their reasons, in
 * one transaction. Returns 0 or -1 with the text in s->err (the rows then stay where they are, and
 * are skipped again by the next replay). */
static int quarantine(struct store_sqlite *s, const struct bad_row *bad, size_t n)
{
    sqlite3_stmt *ins = NULL, *del = NULL;
    int ok = sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK &&
             sqlite3_prepare_v2(s->db,
                                "INSERT INTO spur_quarantine (id, prio, run_at, func, uniq, reducer, "
                                "data, reason, moved_at) SELECT id, prio, run_at, func, uniq, reducer, "
                                "data, ?2, ?3 FROM spur_jobs WHERE id = ?1",
                                -1, &ins, NULL) == SQLITE_OK &&
             sqlite3_prepare_v2(s->db, "DELETE FROM spur_jobs WHERE id = ?1", -1, &del, NULL) == SQLITE_OK;
    for (size_t i = 0; ok && i < n; i++) {
        sqlite3_bind_int64(ins, 1, bad[i].id);
        sqlite3_bind_text(ins, 2, bad[i].reason, -1, SQLITE_STATIC);
        sqlite3_bind_int64(ins, 3, (int64_t)time(NULL));
        sqlite3_bind_int64(del, 1, bad[i].id);
        ok = step_ok(step_once(ins)) && step_ok(step_once(del));
    }
    ok = ok && sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK;
    if (!ok) {
        db_err(s->db, s->err, sizeof s->err, "moving invalid rows to spur_quarantine");
        if (!sqlite3_get_autocommit(s->db))
            sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    }
    sqlite3_finalize(ins);
    sqlite3_finalize(del);
    return ok ? 0 : -1;
}

int store_sqlite_replay(struct store_sqlite *s, int (*cb)(void *ctx, const struct store_rec *r), void *ctx,
                        uint64_t *max_id)
{
    sqlite3_stmt *st = NULL;
    int ret = 0, rc;
    struct bad_row *bad = NULL;
    size_t nbad = 0, capbad = 0;
    s->quarantined = 0;
    s->qnote[0] = '\0';
    if (max_id != NULL) {
        int64_t m = 0;
        if (query_int(s->db, "SELECT max((SELECT value FROM spur_meta WHERE key = 'max_id'), "
                             "coalesce((SELECT max(id) FROM spur_jobs WHERE id <= " ID_MAX_SQL "), 0))",
                      &m, s->err, sizeof s->err) != 0)
            return -1;
        *max_id = (uint64_t)m;
    }
    if (sqlite3_prepare_v2(s->db, "SELECT id, prio, run_at, func, uniq, reducer, data, meta FROM spur_jobs "
                           "ORDER BY id", -1, &st, NULL) != SQLITE_OK) {
        db_err(s->db, s->err, sizeof s->err, "replay");
        return -1;
    }
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct store_col cols[STORE_ROW_NCOLS];
        for (int k = 0; k < STORE_ROW_NCOLS; k++)
            column(st, k, &cols[k]);
        struct store_rec r;
        const char *why = store_row_decode(cols, s->max_func, &r);
        if (why == NULL) {
            struct store_col m;
            column(st, STORE_ROW_NCOLS, &m);
            if (m.type == STORE_COL_BLOB || m.type == STORE_COL_TEXT) {
                if (m.n > STORE_META_MAX)
                    why = "meta longer than 65536 bytes";
                r.meta = m.n ? m.p : NULL;
                r.meta_len = m.n;
            } else if (m.type != STORE_COL_NULL) {
                why = "meta is not bytes";
            }
        }
        if (why != NULL) { /* not a job: keep it aside, never hand it to the engine */
            if (nbad == capbad) {
                size_t ncap = capbad ? capbad * 2 : 16;
                struct bad_row *nb = realloc(bad, ncap * sizeof *nb);
                if (nb == NULL) {
                    set_err(s->err, sizeof s->err, "replay: out of memory");
                    ret = -1;
                    break;
                }
                bad = nb;
                capbad = ncap;
            }
            bad[nbad++] = (struct bad_row){sqlite3_column_int64(st, 0), why};
            continue;
        }
        if ((ret = cb(ctx, &r)) != 0)
            break;
    }
    if (ret == 0 && rc != SQLITE_DONE) {
        db_err(s->db, s->err, sizeof s->err, "replay");
        ret = -1;
    }
    sqlite3_finalize(st);
    if (nbad > 0) {
        s->quarantined = nbad;
        int moved = quarantine(s, bad, nbad) == 0;
        snprintf(s->qnote, sizeof s->qnote, "%zu invalid stored rows %s (the first: id %lld, %s)",
                 nbad, moved ? "moved to table spur_quarantine" : "skipped (could not be moved aside)",
                 (long long)bad[0].id, bad[0].reason);
    }
    free(bad);
    return ret;
}

int store_sqlite_replay_records(struct store_sqlite *s,
                                int (*cb)(void *ctx, const struct store_record *r), void *ctx)
{
    sqlite3_stmt *st = NULL;
    int ret = 0, rc;
    if (sqlite3_prepare_v2(s->db, "SELECT kind, key, value FROM spur_records ORDER BY kind, key", -1,
                           &st, NULL) != SQLITE_OK) {
        db_err(s->db, s->err, sizeof s->err, "replaying the records");
        return -1;
    }
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct store_record r = {0};
        r.kind = sqlite3_column_int(st, 0);
        r.key = blob_or_empty(st, 1, &r.key_len);
        r.value = blob_or_empty(st, 2, &r.value_len);
        if ((ret = cb(ctx, &r)) != 0)
            break;
    }
    if (ret == 0 && rc != SQLITE_DONE) {
        db_err(s->db, s->err, sizeof s->err, "replaying the records");
        ret = -1;
    }
    sqlite3_finalize(st);
    return ret;
}

/* pragma_int steps a prepared one-integer pragma. Returns the value, or -1 on error. */
static int64_t pragma_int(sqlite3_stmt *st)
{
    int64_t v = -1;
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    return v;
}

void store_sqlite_maintain(struct store_sqlite *s)
{
    if (!s->maint_dirty)
        return;
    s->maint_dirty = 0;
    sqlite3_busy_timeout(s->db, 0); /* never wait for another connection here */
    int vacuumed = 0;
    if (s->maint_freed) {
        s->maint_freed = 0;
        int64_t free_pages = pragma_int(s->st_free), pages = pragma_int(s->st_pages);
        if (free_pages >= FREE_MIN_PAGES && free_pages * FREE_MIN_SHARE >= pages) {
            int rc;
            while ((rc = sqlite3_step(s->st_vacuum)) == SQLITE_ROW)
                ;
            sqlite3_reset(s->st_vacuum);
            if (rc == SQLITE_DONE) {
                vacuumed = 1;
                if (free_pages > VACUUM_STEP_PAGES) /* more to free on the next call */
                    s->maint_freed = s->maint_dirty = 1;
            } else {
                db_err(s->db, s->err, sizeof s->err, "incremental vacuum");
                s->maint_freed = s->maint_dirty = 1;
            }
        }
    }
    if (s->wal_frames >= WAL_CKPT_FRAMES || vacuumed) {
        int rc = sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
        if (rc == SQLITE_OK)
            s->wal_frames = 0;
        else {
            if (rc != SQLITE_BUSY && rc != SQLITE_LOCKED)
                db_err(s->db, s->err, sizeof s->err, "checkpoint");
            s->maint_dirty = 1; /* try again next time */
        }
    }
    sqlite3_busy_timeout(s->db, BUSY_MS);
}

/* ---------------------------------------------------------------- integrity check and recovery */

#define WALK_MAX_REGIONS 100000 /* give up listing damaged regions after this many */

/* struct walk is the state of reading every readable row of a damaged spur_jobs. */
struct walk {
    sqlite3_stmt *scan;    /* the rows after ?1, in id order */
    sqlite3_stmt *probe;   /* does a seek past ?1 read without error? */
    sqlite3_stmt *copy;    /* insert into the fresh file, or NULL when only counting */
    uint64_t readable;     /* rows read */
    uint64_t copied;       /* rows written to the fresh file */
    uint64_t lost;         /* ids in the damaged regions whose bounds are known */
    uint64_t regions;      /* damaged regions */
    int64_t max_seen;      /* largest id read, or bound of a damaged region */
    int lost_head;         /* rows before the first readable one may be lost (count unknown) */
    int lost_tail;         /* rows after the last readable one are unreadable */
    int64_t tail_from;     /* ... after this id */
    int64_t first_lost;    /* smallest id of a damaged region (its exclusive lower bound) */
};

/* probe_ok tells whether a seek for the first row after x reads without error. */
static int probe_ok(sqlite3_stmt *probe, int64_t x)
{
    sqlite3_bind_int64(probe, 1, x);
    int rc = sqlite3_step(probe);
    sqlite3_reset(probe);
    return rc == SQLITE_ROW || rc == SQLITE_DONE;
}

/* skip_damage finds where readable rows start again after x, whose seek fails: the smallest y > x
 * (to the precision of a binary search) whose seek succeeds, i.e. the divider key above the damaged
 * pages. Returns 0 with *y, or -1 when no seek up to INT64_MAX succeeds. */
static int skip_damage(sqlite3_stmt *probe, int64_t x, int64_t *y)
{
    int64_t lo = x, hi;
    uint64_t step = 1;
    for (;;) {
        uint64_t room = (uint64_t)INT64_MAX - (uint64_t)lo; /* modular: exact for every lo */
        if (room == 0)
            return -1;
        hi = step >= room ? INT64_MAX : (int64_t)((uint64_t)lo + step);
        if (probe_ok(probe, hi))
            break;
        lo = hi;
        step = step < ((uint64_t)1 << 62) ? step * 2 : step;
    }
    while ((uint64_t)hi - (uint64_t)lo > 1) { /* lo fails, hi succeeds */
        int64_t mid = (int64_t)((uint64_t)lo + ((uint64_t)hi - (uint64_t)lo) / 2);
        if (probe_ok(probe, mid))
            hi = mid;
        else
            lo = mid;
    }
    *y = hi;
    return 0;
}

/* walk_rows reads every readable row of spur_jobs in id order, skipping damaged pages by seeking
 * past them, and copies each row with w->copy when set. Returns 0, or -1 when copying fails (text
 * in buf). */
static int walk_rows(struct walk *w, sqlite3 *fdb, char *buf, size_t len)
{
    int64_t after = INT64_MIN;
    int started = 0;
    for (;;) {
        int rc;
        sqlite3_bind_int64(w->scan, 1, after);
        while ((rc = sqlite3_step(w->scan)) == SQLITE_ROW) {
            after = sqlite3_column_int64(w->scan, 0);
            started = 1;
            w->readable++;
            if (after > w->max_seen)
                w->max_seen = after;
            if (w->copy != NULL) {
                for (int k = 0; k < 8; k++)
                    sqlite3_bind_value(w->copy, k + 1, sqlite3_column_value(w->scan, k));
                int crc = sqlite3_step(w->copy);
                sqlite3_reset(w->copy);
                if (crc != SQLITE_DONE) {
                    db_err(fdb, buf, len, "copying a readable job");
                    sqlite3_reset(w->scan);
                    return -1;
                }
                w->copied += (uint64_t)sqlite3_changes(fdb);
            }
        }
        sqlite3_reset(w->scan);
        if (rc == SQLITE_DONE)
            return 0;
        /* damaged pages right after `after` */
        int64_t y;
        if (w->regions == 0 || after < w->first_lost)
            w->first_lost = after;
        w->regions++;
        if (!started)
            w->lost_head = 1;
        if (w->regions > WALK_MAX_REGIONS || skip_damage(w->probe, after, &y) != 0) {
            w->lost_tail = 1;
            w->tail_from = after;
            return 0;
        }
        if (started)
            w->lost += (uint64_t)y - (uint64_t)after;
        if (y > w->max_seen)
            w->max_seen = y;
        after = y;
        started = 1;
    }
}

/* copy_records copies the readable records of a damaged store (db) into the recovered one (fdb),
 * inside fdb's open transaction; best effort: a damaged records table loses what cannot be read. */
static void copy_records(sqlite3 *db, sqlite3 *fdb)
{
    sqlite3_stmt *sel = NULL, *ins = NULL;
    if (sqlite3_prepare_v2(db, "SELECT kind, key, value FROM spur_records", -1, &sel, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(fdb, "INSERT OR REPLACE INTO spur_records (kind, key, value) VALUES (?1, ?2, ?3)",
                           -1, &ins, NULL) == SQLITE_OK) {
        while (sqlite3_step(sel) == SQLITE_ROW) {
            for (int k = 0; k < 3; k++)
                sqlite3_bind_value(ins, k + 1, sqlite3_column_value(sel, k));
            sqlite3_step(ins);
            sqlite3_reset(ins);
        }
    }
    sqlite3_finalize(sel);
    sqlite3_finalize(ins);
}

/* check_text runs PRAGMA quick_check and puts its first line in out: "ok" for a sound file.
 * Returns 0, or -1 when it cannot run at all (the text then says why). */
static int check_text(sqlite3 *db, char *out, size_t len)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, "PRAGMA quick_check(1)", -1, &st, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(st, 0);
        set_err(out, len, "%s", t ? t : "?");
    } else {
        set_err(out, len, "%s", sqlite3_errmsg(db));
    }
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 0 : -1;
}

/* lost_text describes what a walk could not read. */
static void lost_text(const struct walk *w, int64_t hwm, char *out, size_t len)
{
    uint64_t lost = w->lost;
    int unknown = w->lost_head;
    if (w->lost_tail) {
        if (hwm > w->tail_from && w->tail_from != INT64_MIN)
            lost += (uint64_t)hwm - (uint64_t)w->tail_from;
        else
            unknown = 1;
    }
    set_err(out, len, "%llu jobs readable, up to %llu jobs lost%s in %llu damaged region%s of ids "
            "(from id %lld)",
            (unsigned long long)w->readable, (unsigned long long)lost,
            unknown ? " and an unknown number more" : "", (unsigned long long)w->regions,
            w->regions == 1 ? "" : "s", (long long)(w->regions ? w->first_lost + 1 : 0));
}

/* fresh_store creates an empty store with Spur's schema at path (removing what is there). Returns 0
 * or -1 with the text in buf. */
static int fresh_store(const char *path, char *buf, size_t len)
{
    char side[4200];
    unlink(path);
    if (snprintf(side, sizeof side, "%s-wal", path) < (int)sizeof side)
        unlink(side);
    if (snprintf(side, sizeof side, "%s-shm", path) < (int)sizeof side)
        unlink(side);
    sqlite3 *db = NULL;
    int ok = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) == SQLITE_OK &&
             exec(db, "PRAGMA auto_vacuum = INCREMENTAL", buf, len) == 0 &&
             exec(db, "BEGIN", buf, len) == 0 && exec(db, schema_sql, buf, len) == 0 &&
             exec(db, "COMMIT", buf, len) == 0;
    if (!ok && db != NULL && buf[0] == '\0')
        db_err(db, buf, len, "creating the recovered store");
    sqlite3_close(db);
    return ok ? 0 : -1;
}

/* swap_in keeps the damaged file at path as damaged (its WAL beside it) and moves the recovered
 * file tmp to path. path always names a complete store: the damaged one, then the recovered one.
 * Returns 0 or -1 with the text in buf. */
static int swap_in(const char *path, const char *tmp, const char *damaged, char *buf, size_t len)
{
    char side[4200], side2[4200];
    if (link(path, damaged) != 0) {
        set_err(buf, len, "keeping the damaged file as %s: %s", damaged, strerror(errno));
        return -1;
    }
    if (snprintf(side, sizeof side, "%s-wal", path) >= (int)sizeof side ||
        snprintf(side2, sizeof side2, "%s-wal", damaged) >= (int)sizeof side2) {
        set_err(buf, len, "path too long");
        return -1;
    }
    if (rename(side, side2) != 0 && errno != ENOENT) {
        set_err(buf, len, "moving %s aside: %s", side, strerror(errno));
        return -1;
    }
    if (snprintf(side, sizeof side, "%s-shm", path) < (int)sizeof side)
        unlink(side);
    if (rename(tmp, path) != 0) {
        set_err(buf, len, "moving %s to %s: %s", tmp, path, strerror(errno));
        return -1;
    }
    /* make the renames durable */
    char dir[4200];
    if (file_dirname(path, dir, sizeof dir) != 0)
        return 0;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    return 0;
}

/* one_line turns the newlines of a message into spaces, in place. */
static void one_line(char *t)
{
    for (char *p = t; *p; p++)
        if (*p == '\n')
            *p = ' ';
}

int store_sqlite_check(const char *path, int recover, char *report, size_t len)
{
    struct stat sb;
    char q[200] = "", lost[300] = "", buf[512] = "";
    report[0] = '\0';
    if (stat(path, &sb) != 0 || sb.st_size == 0)
        return 0; /* a new store */
    sqlite3 *db = NULL, *fdb = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return 0; /* store_sqlite_open reports it */
    }
    sqlite3_busy_timeout(db, BUSY_MS);
    if (check_text(db, q, sizeof q) != 0 || strcmp(q, "ok") == 0) {
        sqlite3_close(db); /* sound, or not a database at all: store_sqlite_open reports that */
        return 0;
    }
    one_line(q);
    int64_t hwm = 0;
    char tmp[4200], damaged[4200], stamp[32];
    time_t now = time(NULL);
    struct tm tmv;
    gmtime_r(&now, &tmv);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tmv);
    if (snprintf(tmp, sizeof tmp, "%s.recover-tmp", path) >= (int)sizeof tmp ||
        snprintf(damaged, sizeof damaged, "%s.damaged-%s", path, stamp) >= (int)sizeof damaged) {
        set_err(report, len, "store %s is damaged (quick_check: %s); its path is too long to recover",
                path, q);
        sqlite3_close(db);
        return -1;
    }
    query_int(db, "SELECT value FROM spur_meta WHERE key = 'max_id'", &hwm, buf, sizeof buf);
    buf[0] = '\0';

    /* the rows are read on the damaged file's connection and written on the fresh file's own
     * connection: a corruption error on one connection must not poison the other's transaction */
    struct walk w = {0};
    int ret = -1;
    int64_t has_meta = 0;
    if (recover) {
        if (fresh_store(tmp, buf, sizeof buf) != 0)
            goto out;
        if (sqlite3_open_v2(tmp, &fdb, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
            db_err(fdb, buf, sizeof buf, "opening the recovered store");
            goto out;
        }
        if (exec(fdb, "BEGIN", buf, sizeof buf) != 0 ||
            prepare(fdb, "INSERT OR IGNORE INTO spur_jobs (id, prio, run_at, func, uniq, reducer, "
                         "data, meta) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)", &w.copy, buf,
                    sizeof buf) != 0)
            goto out;
    }
    /* a schema-1 file has no meta column; the records of a schema-2 file are copied after */
    if (query_int(db, "SELECT count(*) FROM pragma_table_info('spur_jobs') WHERE name = 'meta'",
                  &has_meta, buf, sizeof buf) != 0)
        has_meta = 0;
    buf[0] = '\0';
    if (prepare(db, has_meta ? "SELECT id, prio, run_at, func, uniq, reducer, data, meta FROM spur_jobs "
                               "WHERE id > ?1 ORDER BY id"
                             : "SELECT id, prio, run_at, func, uniq, reducer, data, NULL FROM spur_jobs "
                               "WHERE id > ?1 ORDER BY id", &w.scan, buf, sizeof buf) != 0 ||
        prepare(db, "SELECT id FROM spur_jobs WHERE id > ?1 ORDER BY id LIMIT 1", &w.probe, buf,
                sizeof buf) != 0 ||
        walk_rows(&w, fdb, buf, sizeof buf) != 0)
        goto out;
    lost_text(&w, hwm, lost, sizeof lost);
    if (recover)
        copy_records(db, fdb);
    if (!recover) {
        set_err(report, len, "store %s is damaged (quick_check: %s): %s; start with --store-recover "
                "to rewrite it with the readable jobs (the damaged file is kept beside it)",
                path, q, lost);
        goto out;
    }
    /* the high-water mark stays above every id that was or may have been used */
    int64_t mark = hwm > w.max_seen ? hwm : w.max_seen;
    if (mark < 0 || (uint64_t)mark > STORE_ID_MAX)
        mark = (int64_t)STORE_ID_MAX; /* replay's checks deal with it */
    char *sql = sqlite3_mprintf("UPDATE spur_meta SET value = %lld WHERE key = 'max_id'", (long long)mark);
    int ok = sql != NULL && exec(fdb, sql, buf, sizeof buf) == 0;
    sqlite3_free(sql);
    sqlite3_finalize(w.copy);
    w.copy = NULL;
    if (!ok || exec(fdb, "COMMIT", buf, sizeof buf) != 0)
        goto out;
    sqlite3_finalize(w.scan);
    sqlite3_finalize(w.probe);
    w.scan = w.probe = NULL;
    sqlite3_close(db);
    db = NULL;
    /* what else can be read comes along, best effort, one statement each */
    sql = sqlite3_mprintf("ATTACH DATABASE %Q AS old", path);
    if (sql != NULL && sqlite3_exec(fdb, sql, NULL, NULL, NULL) == SQLITE_OK) {
        sqlite3_exec(fdb, "INSERT OR IGNORE INTO spur_import SELECT * FROM old.spur_import", NULL, NULL,
                     NULL);
        sqlite3_exec(fdb, "INSERT INTO spur_quarantine SELECT * FROM old.spur_quarantine", NULL, NULL,
                     NULL);
        sqlite3_exec(fdb, "DETACH DATABASE old", NULL, NULL, NULL);
    }
    sqlite3_free(sql);
    sqlite3_close(fdb);
    fdb = NULL;
    if (swap_in(path, tmp, damaged, buf, sizeof buf) != 0)
        goto out;
    set_err(report, len, "--store-recover: store %s was damaged (quick_check: %s); rewritten with "
            "%llu jobs: %s; the damaged file is kept as %s",
            path, q, (unsigned long long)w.copied, lost, damaged);
    ret = 1;
out:
    if (ret < 0 && report[0] == '\0')
        set_err(report, len, "store %s is damaged (quick_check: %s) and could not be recovered: %s",
                path, q, buf);
    sqlite3_finalize(w.copy);
    sqlite3_finalize(w.scan);
    sqlite3_finalize(w.probe);
    sqlite3_close(db);
    sqlite3_close(fdb);
    if (ret < 0 && recover)
        unlink(tmp);
    return ret;
}

/* ---------------------------------------------------------------- the store_backend interface */

/* lock_holder returns the pid that holds a flock on the file open at fd, from /proc/locks, or 0
 * when it cannot tell. */
static long lock_holder(int fd)
{
    struct stat sb;
    if (fstat(fd, &sb) != 0)
        return 0;
    FILE *f = fopen("/proc/locks", "re");
    if (f == NULL)
        return 0;
    char line[256], kind[16];
    long pid, found = 0;
    unsigned maj, min;
    unsigned long long ino;
    while (found == 0 && fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "%*d: %15s %*s %*s %ld %x:%x:%llu", kind, &pid, &maj, &min, &ino) == 5 &&
            strcmp(kind, "FLOCK") == 0 && maj == major(sb.st_dev) && min == minor(sb.st_dev) &&
            ino == (unsigned long long)sb.st_ino)
            found = pid;
    fclose(f);
    return found;
}

/* lock_store opens the database file at path, creating it empty and private (0600) if it does not
 * exist, and takes an exclusive flock on it: two servers on one store would both run its jobs.
 * SQLite locks the file with POSIX (fcntl) locks, which are independent of flock on a local file
 * system, and this fd stays open until the store is closed, so closing it never drops SQLite's
 * locks. Unlike a side file, the lock cannot be removed while the database exists. Returns the fd,
 * or -1 with the real cause in err. */
static int lock_store(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "store %s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        snprintf(err, errlen, "store %s: not a regular file", path);
        close(fd);
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        long pid = e == EWOULDBLOCK ? lock_holder(fd) : 0;
        if (pid > 0)
            snprintf(err, errlen, "store %s is in use by another server (locked by pid %ld)", path, pid);
        else if (e == EWOULDBLOCK)
            snprintf(err, errlen, "store %s is in use by another server (locked)", path);
        else
            snprintf(err, errlen, "store %s: cannot lock: %s", path, strerror(e));
        close(fd);
        return -1;
    }
    return fd;
}

/* struct sqlite_backend is an open store behind the backend interface: the store and the lock. */
struct sqlite_backend {
    struct store_sqlite *s; /* the store */
    int lock_fd;            /* the database file itself, flock'd: one server per store */
};

static void *be_open(const struct store_params *p, uint64_t *next_id, char *err, size_t errlen)
{
    const char *path = p->location;
    const char *import = p->gearmand ? (p->import_table ? p->import_table : "gearman_queue") : NULL;
    struct sqlite_backend *b = calloc(1, sizeof *b);
    if (b == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    b->lock_fd = lock_store(path, err, errlen);
    if (b->lock_fd < 0) {
        free(b);
        return NULL;
    }
    /* a damaged file is refused, or with --store-recover rewritten from its readable rows */
    const struct store_sqlite_params *own = p->own;
    int checked = store_sqlite_check(path, own != NULL && own->recover, err, errlen);
    if (checked < 0) {
        close(b->lock_fd);
        free(b);
        return NULL;
    }
    if (checked > 0) {
        log_error("store: %s", err);
        /* PATH is a new file now: the lock moves to it */
        int fd = lock_store(path, err, errlen);
        close(b->lock_fd);
        b->lock_fd = fd;
        if (fd < 0) {
            free(b);
            return NULL;
        }
    }
    b->s = store_sqlite_open(path, import, next_id, err, errlen);
    if (b->s == NULL) {
        close(b->lock_fd);
        free(b);
        return NULL;
    }
    if (p->max_function > 0)
        store_sqlite_set_max_function(b->s, p->max_function);
    if (p->sync_normal)
        sqlite3_exec(b->s->db, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL);
    if (own != NULL && own->max_pages > 0) {
        char sql[64];
        snprintf(sql, sizeof sql, "PRAGMA max_page_count=%ld", own->max_pages);
        sqlite3_exec(b->s->db, sql, NULL, NULL, NULL);
    }
    return b;
}

static int be_replay(void *db, int (*cb)(void *ctx, const struct store_rec *r), void *ctx)
{
    return store_sqlite_replay(((struct sqlite_backend *)db)->s, cb, ctx, NULL);
}

static int be_replay_records(void *db, int (*cb)(void *ctx, const struct store_record *r), void *ctx)
{
    return store_sqlite_replay_records(((struct sqlite_backend *)db)->s, cb, ctx);
}

static int be_write_batch(void *db, struct store_batch *b)
{
    return store_sqlite_write_batch(((struct sqlite_backend *)db)->s, b);
}

static void be_maintain(void *db) { store_sqlite_maintain(((struct sqlite_backend *)db)->s); }

static const char *be_error(const void *db)
{
    return store_sqlite_error(((const struct sqlite_backend *)db)->s);
}

static const char *be_note(const void *db)
{
    return store_sqlite_note(((const struct sqlite_backend *)db)->s);
}

static uint64_t be_quarantined(const void *db, const char **note)
{
    return store_sqlite_quarantined(((const struct sqlite_backend *)db)->s, note);
}

static void be_close(void *db)
{
    struct sqlite_backend *b = db;
    if (b == NULL)
        return;
    store_sqlite_close(b->s);
    close(b->lock_fd);
    free(b);
}

/* be_params reads the SQLite options of c (--store-recover, --store-max-pages). */
static const void *be_params(const struct config *c, struct store_params *p)
{
    static struct store_sqlite_params own; /* one store per process */
    (void)p;
    own = (struct store_sqlite_params){c->store_recover, c->store_max_pages};
    return &own;
}

const struct store_backend store_sqlite_backend = {
    .name = "sqlite",
    .params = be_params,
    .open = be_open,
    .replay = be_replay,
    .replay_records = be_replay_records,
    .write_batch = be_write_batch,
    .maintain = be_maintain,
    .error = be_error,
    .note = be_note,
    .quarantined = be_quarantined,
    .close = be_close,
};
