/* SPDX-License-Identifier: BSD-3-Clause */
// Unit tests for the SQLite store: round trips, batches, the high-water mark, the gearmand import,
// write errors, compaction, threads, and durability across SIGKILL.
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern "C" {
#include "config.h"
#include "options.h"
#include "store_backend.h"
#include "store_mem.h"
#include "store_row.h"
#include "store_sqlite.h"
}

using std::string;

namespace {

// TempDir is a fresh directory under /tmp, removed with its files at the end of the test.
struct TempDir {
    string dir;
    TempDir()
    {
        char tmpl[] = "/tmp/spur-store-test-XXXXXX";
        char *d = mkdtemp(tmpl);
        EXPECT_NE(d, nullptr);
        dir = d ? d : "/tmp";
    }
    ~TempDir()
    {
        DIR *dp = opendir(dir.c_str());
        if (dp) {
            while (struct dirent *e = readdir(dp))
                if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
                    unlink((dir + "/" + e->d_name).c_str());
            closedir(dp);
        }
        rmdir(dir.c_str());
    }
    string path(const char *name = "store.db") const { return dir + "/" + name; }
};

// Job is an owned copy of a store_rec.
struct Job {
    uint64_t id = 0;
    string func, unique, reducer, data;
    int prio = 1;
    int64_t when = 0;
    string meta;
};

store_rec rec_of(const Job &j)
{
    store_rec r = {};
    r.id = j.id;
    r.func = j.func.data();
    r.func_len = j.func.size();
    r.unique = j.unique.data();
    r.unique_len = j.unique.size();
    r.reducer = j.reducer.data();
    r.reducer_len = j.reducer.size();
    r.data = j.data.data();
    r.data_len = j.data.size();
    r.prio = j.prio;
    r.meta = j.meta.empty() ? nullptr : j.meta.data();
    r.meta_len = j.meta.size();
    r.when = j.when;
    return r;
}

Job simple_job(uint64_t id, size_t payload = 64)
{
    Job j;
    j.id = id;
    j.func = "f";
    j.data = string(payload, (char)('a' + id % 26));
    return j;
}

int collect_cb(void *ctx, const store_rec *r)
{
    auto *v = static_cast<std::vector<Job> *>(ctx);
    Job j;
    j.id = r->id;
    j.func.assign(r->func, r->func_len);
    j.unique.assign(r->unique, r->unique_len);
    j.reducer.assign(r->reducer, r->reducer_len);
    j.data.assign(static_cast<const char *>(r->data), r->data_len);
    j.prio = r->prio;
    j.when = r->when;
    if (r->meta != nullptr)
        j.meta.assign(r->meta, r->meta_len);
    v->push_back(j);
    return 0;
}

// replay_all replays s into a vector; max_id receives the high-water mark.
std::vector<Job> replay_all(store_sqlite *s, uint64_t *max_id = nullptr)
{
    std::vector<Job> v;
    uint64_t m = 0;
    EXPECT_EQ(store_sqlite_replay(s, collect_cb, &v, &m), 0) << store_sqlite_error(s);
    if (max_id)
        *max_id = m;
    return v;
}

store_sqlite *open_store(const string &path, const char *import = nullptr, uint64_t *next_id = nullptr)
{
    char err[512] = "";
    store_sqlite *s = store_sqlite_open(path.c_str(), import, next_id, err, sizeof err);
    EXPECT_NE(s, nullptr) << err;
    return s;
}

void add(store_sqlite *s, const Job &j)
{
    store_rec r = rec_of(j);
    ASSERT_EQ(store_sqlite_add(s, &r), 0);
}

off_t file_size(const string &p)
{
    struct stat st;
    return stat(p.c_str(), &st) == 0 ? st.st_size : 0;
}

void expect_same(const Job &a, const Job &b)
{
    EXPECT_EQ(a.id, b.id);
    EXPECT_EQ(a.func, b.func);
    EXPECT_EQ(a.unique, b.unique);
    EXPECT_EQ(a.reducer, b.reducer);
    EXPECT_TRUE(a.data == b.data) << "payload of job " << a.id << " differs (" << a.data.size() << " vs "
                                  << b.data.size() << " bytes)";
    EXPECT_EQ(a.prio, b.prio);
    EXPECT_EQ(a.when, b.when);
}

// exec_sql runs sql on a separate connection to path.
void exec_sql(const string &path, const string &sql)
{
    sqlite3 *db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    char *msg = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &msg), SQLITE_OK) << (msg ? msg : "") << " in " << sql;
    sqlite3_free(msg);
    sqlite3_close(db);
}

// query_int64 runs a one-integer query on a separate connection to path.
int64_t query_int64(const string &path, const string &sql)
{
    sqlite3 *db = nullptr;
    sqlite3_stmt *st = nullptr;
    int64_t v = -1;
    EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

} // namespace

TEST(StoreSqlite, RoundTripBinaryAndLargePayloads)
{
    TempDir t;
    std::vector<Job> jobs;
    Job a;
    a.id = 1;
    a.func = "reverse";
    a.unique = string("u\1ni\xff", 5); // bytes, but no NUL: the wire cannot carry one there
    a.reducer = "sum";
    a.data = string("\0\0payload\0with\0NULs\0", 20);
    a.prio = 0;
    jobs.push_back(a);
    Job big;
    big.id = 2;
    big.func = "big";
    big.data.resize(8u << 20);
    for (size_t i = 0; i < big.data.size(); i++)
        big.data[i] = (char)((i * 2654435761u) >> 13);
    big.prio = 2;
    big.when = 1795647528;
    jobs.push_back(big);
    Job empty;
    empty.id = 3;
    empty.func = "e"; // empty unique, reducer and payload
    jobs.push_back(empty);

    store_sqlite *s = open_store(t.path());
    for (const Job &j : jobs)
        add(s, j);
    EXPECT_EQ(store_sqlite_pending(s), 3u);
    ASSERT_EQ(store_sqlite_commit(s), 0) << store_sqlite_error(s);
    EXPECT_EQ(store_sqlite_pending(s), 0u);
    EXPECT_STREQ(store_sqlite_error(s), "");
    std::vector<Job> got = replay_all(s);
    ASSERT_EQ(got.size(), 3u);
    for (size_t i = 0; i < 3; i++)
        expect_same(got[i], jobs[i]);
    store_sqlite_close(s);

    s = open_store(t.path());
    uint64_t max_id = 0;
    got = replay_all(s, &max_id);
    EXPECT_EQ(max_id, 3u);
    ASSERT_EQ(got.size(), 3u);
    for (size_t i = 0; i < 3; i++)
        expect_same(got[i], jobs[i]);
    store_sqlite_close(s);
}

TEST(StoreSqlite, JobsWithEmptyUniqueAreAllKept)
{
    TempDir t;
    store_sqlite *s = open_store(t.path());
    for (uint64_t id = 1; id <= 100; id++) {
        Job j = simple_job(id);
        j.func = "same";
        j.data = "same-data"; // even identical payloads do not collapse
        add(s, j);
    }
    Job dash = simple_job(101);
    dash.unique = "-";
    add(s, dash);
    dash.id = 102;
    add(s, dash);
    ASSERT_EQ(store_sqlite_commit(s), 0) << store_sqlite_error(s);
    EXPECT_EQ(replay_all(s).size(), 102u);
    store_sqlite_close(s);
}

TEST(StoreSqlite, DoneRemovesAcrossBatchesAndReopen)
{
    TempDir t;
    store_sqlite *s = open_store(t.path());
    for (uint64_t id = 1; id <= 10; id++)
        add(s, simple_job(id));
    ASSERT_EQ(store_sqlite_commit(s), 0);
    for (uint64_t id : {2, 5, 9})
        ASSERT_EQ(store_sqlite_done(s, id), 0);
    ASSERT_EQ(store_sqlite_done(s, 12345), 0); // unknown ids are harmless
    EXPECT_EQ(store_sqlite_pending(s), 4u);
    ASSERT_EQ(store_sqlite_commit(s), 0) << store_sqlite_error(s);
    std::vector<uint64_t> ids;
    for (const Job &j : replay_all(s))
        ids.push_back(j.id);
    EXPECT_EQ(ids, (std::vector<uint64_t>{1, 3, 4, 6, 7, 8, 10}));
    store_sqlite_close(s);
    s = open_store(t.path());
    EXPECT_EQ(replay_all(s).size(), 7u);
    store_sqlite_close(s);
}

TEST(StoreSqlite, AddAndDoneInOneBatchCancelOut)
{
    TempDir t;
    store_sqlite *s = open_store(t.path());
    for (uint64_t id = 1; id <= 5; id++)
        add(s, simple_job(id, 1000));
    ASSERT_EQ(store_sqlite_done(s, 2), 0);
    ASSERT_EQ(store_sqlite_done(s, 4), 0);
    ASSERT_EQ(store_sqlite_done(s, 4), 0); // a second done of the same id changes nothing
    EXPECT_EQ(store_sqlite_pending(s), 3u);
    ASSERT_EQ(store_sqlite_commit(s), 0);
    std::vector<uint64_t> ids;
    for (const Job &j : replay_all(s))
        ids.push_back(j.id);
    EXPECT_EQ(ids, (std::vector<uint64_t>{1, 3, 5}));

    // A batch that cancels out completely never reaches the disk.
    sqlite3 *db = store_sqlite_handle(s);
    int changes = sqlite3_total_changes(db);
    add(s, simple_job(50));
    ASSERT_EQ(store_sqlite_done(s, 50), 0);
    EXPECT_EQ(store_sqlite_pending(s), 0u);
    EXPECT_EQ(store_sqlite_take_batch(s), nullptr);
    ASSERT_EQ(store_sqlite_commit(s), 0);
    EXPECT_EQ(sqlite3_total_changes(db), changes);
    // ... but its id still counts for the high-water mark, written at the latest on close.
    store_sqlite_close(s);
    uint64_t next = 1;
    s = open_store(t.path(), nullptr, &next);
    EXPECT_EQ(next, 51u);
    store_sqlite_close(s);
}

namespace {
int stop_at_three(void *ctx, const store_rec *r)
{
    auto *n = static_cast<int *>(ctx);
    return ++*n == 3 ? 77 : 0;
}
} // namespace

TEST(StoreSqlite, ReplayIsInIdOrderAndCanStop)
{
    TempDir t;
    store_sqlite *s = open_store(t.path());
    for (uint64_t id : {50, 10, 30})
        add(s, simple_job(id));
    ASSERT_EQ(store_sqlite_commit(s), 0);
    for (uint64_t id : {40, 20, 60})
        add(s, simple_job(id));
    ASSERT_EQ(store_sqlite_commit(s), 0);
    std::vector<uint64_t> ids;
    uint64_t max_id = 0;
    for (const Job &j : replay_all(s, &max_id))
        ids.push_back(j.id);
    EXPECT_EQ(ids, (std::vector<uint64_t>{10, 20, 30, 40, 50, 60}));
    EXPECT_EQ(max_id, 60u);
    int n = 0;
    EXPECT_EQ(store_sqlite_replay(s, stop_at_three, &n, nullptr), 77);
    EXPECT_EQ(n, 3);
    store_sqlite_close(s);
}

TEST(StoreSqlite, HighWaterMarkSurvivesDeletingEverything)
{
    TempDir t;
    uint64_t next = 1;
    store_sqlite *s = open_store(t.path(), nullptr, &next);
    EXPECT_EQ(next, 1u);
    uint64_t m = 99;
    EXPECT_TRUE(replay_all(s, &m).empty());
    EXPECT_EQ(m, 0u);
    for (uint64_t id = 1000; id < 1100; id++)
        add(s, simple_job(id));
    ASSERT_EQ(store_sqlite_commit(s), 0);
    for (uint64_t id = 1000; id < 1100; id++)
        ASSERT_EQ(store_sqlite_done(s, id), 0);
    ASSERT_EQ(store_sqlite_commit(s), 0);
    store_sqlite_close(s);

    next = 5;
    s = open_store(t.path(), nullptr, &next);
    EXPECT_EQ(next, 1100u);
    EXPECT_TRUE(replay_all(s, &m).empty());
    EXPECT_EQ(m, 1099u);
    store_sqlite_close(s);

    next = 1u << 30; // a larger proposal (time-based handles) is kept
    s = open_store(t.path(), nullptr, &next);
    EXPECT_EQ(next, 1u << 30);
    store_sqlite_close(s);
}

TEST(StoreSqlite, InvalidRecordsAndOpenErrors)
{
    TempDir t;
    store_sqlite *s = open_store(t.path());
    Job j = simple_job(1);
    j.prio = 3;
    store_rec r = rec_of(j);
    EXPECT_EQ(store_sqlite_add(s, &r), -1);
    r.prio = 1;
    r.id = 0;
    EXPECT_EQ(store_sqlite_add(s, &r), -1);
    r.id = (uint64_t)INT64_MAX + 1;
    EXPECT_EQ(store_sqlite_add(s, &r), -1);
    EXPECT_EQ(store_sqlite_pending(s), 0u);
    store_sqlite_close(s);
    store_sqlite_close(nullptr);

    char err[256] = "";
    EXPECT_EQ(store_sqlite_open((t.dir + "/no/such/dir/x.db").c_str(), nullptr, nullptr, err, sizeof err), nullptr);
    EXPECT_NE(strstr(err, "no/such/dir"), nullptr) << err;

    string junk = t.path("junk.db");
    FILE *f = fopen(junk.c_str(), "w");
    ASSERT_NE(f, nullptr);
    for (int i = 0; i < 1000; i++)
        fputs("this is not a database ", f);
    fclose(f);
    err[0] = '\0';
    EXPECT_EQ(store_sqlite_open(junk.c_str(), nullptr, nullptr, err, sizeof err), nullptr);
    EXPECT_NE(strstr(err, "not a database"), nullptr) << err;

    // A newer schema version is refused rather than misread.
    s = open_store(t.path("v.db"));
    store_sqlite_close(s);
    exec_sql(t.path("v.db"), "UPDATE spur_meta SET value = 3 WHERE key = 'schema'");
    err[0] = '\0';
    EXPECT_EQ(store_sqlite_open(t.path("v.db").c_str(), nullptr, nullptr, err, sizeof err), nullptr);
    EXPECT_NE(strstr(err, "schema version 3"), nullptr) << err;
}

TEST(StoreSqlite, OpensInWalModeWithFullSync)
{
    TempDir t;
    store_sqlite *s = open_store(t.path());
    sqlite3 *db = store_sqlite_handle(s);
    sqlite3_stmt *st = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA synchronous", -1, &st, nullptr), SQLITE_OK);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    EXPECT_EQ(sqlite3_column_int(st, 0), 2); // FULL
    sqlite3_finalize(st);
    store_sqlite_close(s);
    EXPECT_EQ(query_int64(t.path(), "PRAGMA auto_vacuum"), 2); // INCREMENTAL
    sqlite3 *raw = nullptr;
    ASSERT_EQ(sqlite3_open(t.path().c_str(), &raw), SQLITE_OK);
    ASSERT_EQ(sqlite3_prepare_v2(raw, "PRAGMA journal_mode", -1, &st, nullptr), SQLITE_OK);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    EXPECT_STREQ((const char *)sqlite3_column_text(st, 0), "wal");
    sqlite3_finalize(st);
    sqlite3_close(raw);
}

namespace {
// make_gearmand_table creates gearmand's table exactly as its sqlite queue plugin does and fills it
// through gearmand's own INSERT statement.
void make_gearmand_table(const string &path, const char *table, const std::vector<Job> &rows, bool with_when = true)
{
    sqlite3 *db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    string create = string("CREATE TABLE ") + table +
                    " ( unique_key TEXT, function_name TEXT, priority INTEGER, data BLOB" +
                    (with_when ? ", when_to_run INTEGER" : "") + ", PRIMARY KEY (unique_key, function_name))";
    ASSERT_EQ(sqlite3_exec(db, create.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    string ins = string("INSERT OR REPLACE INTO ") + table +
                 (with_when ? " (priority, unique_key, function_name, data, when_to_run) VALUES (?,?,?,?,?)"
                            : " (priority, unique_key, function_name, data) VALUES (?,?,?,?)");
    sqlite3_stmt *st = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, ins.c_str(), -1, &st, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    for (const Job &j : rows) {
        sqlite3_bind_int(st, 1, j.prio);
        sqlite3_bind_text(st, 2, j.unique.data(), (int)j.unique.size(), SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 3, j.func.data(), (int)j.func.size(), SQLITE_TRANSIENT);
        sqlite3_bind_blob(st, 4, j.data.data(), (int)j.data.size(), SQLITE_TRANSIENT);
        if (with_when)
            sqlite3_bind_int64(st, 5, j.when);
        ASSERT_EQ(sqlite3_step(st), SQLITE_DONE) << sqlite3_errmsg(db);
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
}

Job gjob(const char *unique, const char *func, int prio, const string &data, int64_t when = 0)
{
    Job j;
    j.unique = unique;
    j.func = func;
    j.prio = prio;
    j.data = data;
    j.when = when;
    return j;
}
} // namespace

TEST(StoreSqlite, ImportsGearmandTableOnce)
{
    TempDir t;
    std::vector<Job> rows = {
        gjob("u1", "p", 1, "d1"),
        gjob("", "p", 1, "empty2"),
        gjob("h1", "p", 0, "high"),
        gjob("ep", "p", 1, "epoch", 1795647528),
        gjob("-", "p", 1, "dash-data"),
        gjob("lo", "q", 2, string("bin\0ary\0", 8)),
        gjob("bad", "p", 7, "odd priority"),
    };
    make_gearmand_table(t.path(), "gearman_queue", rows);

    uint64_t next = 1000;
    store_sqlite *s = open_store(t.path(), "gearman_queue", &next);
    ASSERT_NE(s, nullptr);
    ASSERT_NE(store_sqlite_note(s), nullptr);
    EXPECT_NE(strstr(store_sqlite_note(s), "imported 7 jobs"), nullptr) << store_sqlite_note(s);
    EXPECT_EQ(next, 1007u);
    uint64_t max_id = 0;
    std::vector<Job> got = replay_all(s, &max_id);
    EXPECT_EQ(max_id, 1006u);
    ASSERT_EQ(got.size(), rows.size());
    for (size_t i = 0; i < rows.size(); i++) {
        Job want = rows[i];
        want.id = 1000 + i;
        if (want.prio > 2)
            want.prio = 1; // unknown priorities become normal
        expect_same(got[i], want);
    }
    // New jobs go after the imported ones.
    add(s, simple_job(next));
    ASSERT_EQ(store_sqlite_commit(s), 0);
    store_sqlite_close(s);

    EXPECT_EQ(query_int64(t.path(), "SELECT count(*) FROM sqlite_master WHERE name = 'gearman_queue'"), 0);
    EXPECT_EQ(query_int64(t.path(), "SELECT count(*) FROM gearman_queue_spur_imported"), 7);
    EXPECT_EQ(query_int64(t.path(), "SELECT jobs FROM spur_import WHERE table_name = 'gearman_queue'"), 7);
    EXPECT_EQ(query_int64(t.path(), "PRAGMA auto_vacuum"), 2); // converted once

    // Reopening does not import again.
    next = 1;
    s = open_store(t.path(), "gearman_queue", &next);
    EXPECT_EQ(store_sqlite_note(s), nullptr);
    EXPECT_EQ(next, 1008u);
    EXPECT_EQ(replay_all(s).size(), 8u);
    store_sqlite_close(s);

    // gearmand ran again on this file and made a new table: left alone, and said so.
    make_gearmand_table(t.path(), "gearman_queue", {gjob("again", "p", 1, "x")});
    s = open_store(t.path(), "gearman_queue", &next);
    ASSERT_NE(store_sqlite_note(s), nullptr);
    EXPECT_NE(strstr(store_sqlite_note(s), "re-appeared with 1 rows"), nullptr) << store_sqlite_note(s);
    EXPECT_EQ(replay_all(s).size(), 8u);
    store_sqlite_close(s);
}

TEST(StoreSqlite, ImportVariants)
{
    TempDir t;
    // An old gearmand table without when_to_run, under another name.
    make_gearmand_table(t.path("old.db"), "q", {gjob("a", "f", 0, "x"), gjob("b", "", 1, "no function")}, false);
    uint64_t next = 1;
    store_sqlite *s = open_store(t.path("old.db"), "q", &next);
    std::vector<Job> got = replay_all(s);
    ASSERT_EQ(got.size(), 1u); // the row without a function is skipped
    EXPECT_EQ(got[0].id, 1u);
    EXPECT_EQ(got[0].func, "f");
    EXPECT_EQ(got[0].when, 0);
    EXPECT_NE(strstr(store_sqlite_note(s), "1 rows without a function skipped"), nullptr);
    store_sqlite_close(s);

    // No such table: nothing to do.
    s = open_store(t.path("none.db"), "gearman_queue", &next);
    EXPECT_EQ(store_sqlite_note(s), nullptr);
    EXPECT_TRUE(replay_all(s).empty());
    store_sqlite_close(s);

    // A table of that name without gearmand's columns is an error, and the file is left as it was.
    exec_sql(t.path("bad.db"), "CREATE TABLE gearman_queue (x INTEGER); INSERT INTO gearman_queue VALUES (1)");
    char err[512] = "";
    EXPECT_EQ(store_sqlite_open(t.path("bad.db").c_str(), "gearman_queue", &next, err, sizeof err), nullptr);
    EXPECT_NE(strstr(err, "gearmand's columns"), nullptr) << err;
    EXPECT_EQ(query_int64(t.path("bad.db"), "SELECT count(*) FROM gearman_queue"), 1);
    EXPECT_EQ(store_sqlite_open(t.path("bad.db").c_str(), "spur_jobs", &next, err, sizeof err), nullptr);
}

TEST(StoreSqlite, DiskFullRollsBackAndStoreRecovers)
{
    TempDir t;
    store_sqlite *s = open_store(t.path());
    for (uint64_t id = 1; id <= 10; id++)
        add(s, simple_job(id));
    ASSERT_EQ(store_sqlite_commit(s), 0);
    sqlite3 *db = store_sqlite_handle(s);
    ASSERT_EQ(sqlite3_exec(db, "PRAGMA max_page_count = 20", nullptr, nullptr, nullptr), SQLITE_OK);

    ASSERT_EQ(store_sqlite_done(s, 3), 0);
    for (uint64_t id = 11; id <= 20; id++)
        add(s, simple_job(id, 100000)); // ~1 MB: far more than 20 pages
    EXPECT_EQ(store_sqlite_commit(s), -1);
    EXPECT_NE(strstr(store_sqlite_error(s), "full"), nullptr) << store_sqlite_error(s);
    RecordProperty("error", store_sqlite_error(s));
    EXPECT_EQ(store_sqlite_pending(s), 1u); // the done is kept for the next commit, the adds are gone
    EXPECT_EQ(replay_all(s).size(), 10u);   // nothing of the failed batch is stored

    // Small batches still fit; the retried done goes with them.
    add(s, simple_job(21));
    EXPECT_EQ(store_sqlite_commit(s), 0) << store_sqlite_error(s);
    EXPECT_STREQ(store_sqlite_error(s), "");
    EXPECT_EQ(replay_all(s).size(), 10u); // 1..10 without 3, plus 21

    // The condition clears.
    ASSERT_EQ(sqlite3_exec(db, "PRAGMA max_page_count = 1073741823", nullptr, nullptr, nullptr), SQLITE_OK);
    for (uint64_t id = 22; id <= 31; id++)
        add(s, simple_job(id, 100000));
    ASSERT_EQ(store_sqlite_commit(s), 0) << store_sqlite_error(s);
    store_sqlite_close(s);
    s = open_store(t.path());
    std::vector<Job> got = replay_all(s);
    EXPECT_EQ(got.size(), 20u);
    EXPECT_EQ(got.back().data.size(), 100000u);
    store_sqlite_close(s);
}

TEST(StoreSqlite, FileWriteErrorRollsBackAndBatchCanBeRetried)
{
    // The OS refuses to grow the WAL (RLIMIT_FSIZE, as a full file system would): a real write error.
    TempDir t;
    store_sqlite *s = open_store(t.path());
    for (uint64_t id = 1; id <= 5; id++)
        add(s, simple_job(id));
    ASSERT_EQ(store_sqlite_commit(s), 0);

    struct rlimit old;
    ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
    void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = old;
    lim.rlim_cur = (rlim_t)(file_size(t.path()) + file_size(t.path() + "-wal") + 64 * 1024);
    ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &lim), 0);

    for (uint64_t id = 6; id <= 25; id++)
        add(s, simple_job(id, 50000));
    store_batch *b = store_sqlite_take_batch(s);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(store_batch_ops(b), 20u);
    int rc = store_sqlite_write_batch(s, b);

    ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, old_handler);

    EXPECT_EQ(rc, -1);
    EXPECT_STRNE(store_batch_error(b), "");
    EXPECT_STREQ(store_batch_error(b), store_sqlite_error(s));
    RecordProperty("error", store_batch_error(b));
    EXPECT_EQ(replay_all(s).size(), 5u);
    // Retry the same batch now that there is room.
    EXPECT_EQ(store_sqlite_write_batch(s, b), 0) << store_sqlite_error(s);
    EXPECT_STREQ(store_batch_error(b), "");
    store_sqlite_free_batch(b);
    EXPECT_EQ(replay_all(s).size(), 25u);
    store_sqlite_close(s);
    s = open_store(t.path());
    EXPECT_EQ(replay_all(s).size(), 25u);
    store_sqlite_close(s);
}

TEST(StoreSqlite, MaintainTruncatesWalAndIsCheapWhenIdle)
{
    TempDir t;
    store_sqlite *s = open_store(t.path());
    store_sqlite_maintain(s); // the first call looks once
    for (uint64_t id = 1; id <= 100; id++)
        add(s, simple_job(id, 64 * 1024)); // 6.4 MB through the WAL
    ASSERT_EQ(store_sqlite_commit(s), 0);
    EXPECT_GT(file_size(t.path() + "-wal"), 4 << 20);
    store_sqlite_maintain(s);
    EXPECT_EQ(file_size(t.path() + "-wal"), 0);
    EXPECT_STREQ(store_sqlite_error(s), "");

    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < 1000000; i++)
        store_sqlite_maintain(s);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double secs = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
    EXPECT_LT(secs, 0.5) << "a million idle maintain calls took " << secs << " s";
    store_sqlite_close(s);
}

TEST(StoreSqlite, OnlineBackupAndMaintainDoNotBlockEachOther)
{
    TempDir t;
    store_sqlite *s = open_store(t.path());
    for (uint64_t id = 1; id <= 2000; id++)
        add(s, simple_job(id, 3000)); // ~6 MB, all still in the WAL
    ASSERT_EQ(store_sqlite_commit(s), 0);
    EXPECT_GT(file_size(t.path() + "-wal"), 4 << 20);

    // A reader holds a snapshot (as `sqlite3 PATH .backup` does while it copies).
    sqlite3 *reader = nullptr;
    ASSERT_EQ(sqlite3_open(t.path().c_str(), &reader), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(reader, "BEGIN; SELECT count(*) FROM spur_jobs;", nullptr, nullptr, nullptr), SQLITE_OK);
    for (uint64_t id = 2001; id <= 2010; id++)
        add(s, simple_job(id));
    ASSERT_EQ(store_sqlite_commit(s), 0); // the writer is not blocked by the reader
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    store_sqlite_maintain(s); // the checkpoint cannot finish: postponed, without waiting
    clock_gettime(CLOCK_MONOTONIC, &b);
    EXPECT_LT((double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9, 1.0);
    EXPECT_STREQ(store_sqlite_error(s), "");
    EXPECT_GT(file_size(t.path() + "-wal"), 0);
    sqlite3_exec(reader, "COMMIT", nullptr, nullptr, nullptr);

    // An online backup (the API behind the shell's .backup) while the store is open.
    sqlite3 *copy = nullptr;
    ASSERT_EQ(sqlite3_open(t.path("backup.db").c_str(), &copy), SQLITE_OK);
    sqlite3_backup *bk = sqlite3_backup_init(copy, "main", reader, "main");
    ASSERT_NE(bk, nullptr);
    EXPECT_EQ(sqlite3_backup_step(bk, -1), SQLITE_DONE);
    sqlite3_backup_finish(bk);
    sqlite3_close(copy);
    sqlite3_close(reader);

    store_sqlite_maintain(s); // retried now that nobody reads
    EXPECT_EQ(file_size(t.path() + "-wal"), 0);
    store_sqlite_close(s);

    s = open_store(t.path("backup.db"));
    std::vector<Job> got = replay_all(s);
    EXPECT_EQ(got.size(), 2010u);
    store_sqlite_close(s);
}

TEST(StoreSqlite, FileStaysBoundedWhileAddingAndDeleting200000Jobs)
{
    TempDir t;
    string path = t.path();
    store_sqlite *s = open_store(path);
    const uint64_t total = 200000, batch = 2000, window = 10000;
    off_t peak = 0;
    // Phase 1: a rolling queue (at most `window` jobs live) while 200,000 jobs pass through.
    for (uint64_t next = 1; next <= total; next += batch) {
        for (uint64_t id = next; id < next + batch; id++) {
            add(s, simple_job(id, 100));
            if (id > window) {
                ASSERT_EQ(store_sqlite_done(s, id - window), 0);
            }
        }
        ASSERT_EQ(store_sqlite_commit(s), 0) << store_sqlite_error(s);
        store_sqlite_maintain(s);
        peak = std::max(peak, file_size(path) + file_size(path + "-wal"));
    }
    EXPECT_LT(peak, 12 << 20) << "peak db+wal bytes";
    // Phase 2: 200,000 jobs stored at once, then all deleted.
    for (uint64_t id = total - window + 1; id <= total; id++)
        ASSERT_EQ(store_sqlite_done(s, id), 0);
    for (uint64_t next = total + 1; next <= 2 * total; next += batch) {
        for (uint64_t id = next; id < next + batch; id++)
            add(s, simple_job(id, 100));
        ASSERT_EQ(store_sqlite_commit(s), 0);
        store_sqlite_maintain(s);
    }
    off_t full = file_size(path);
    EXPECT_GT(full, 20 << 20);
    for (uint64_t next = total + 1; next <= 2 * total; next += batch) {
        for (uint64_t id = next; id < next + batch; id++)
            ASSERT_EQ(store_sqlite_done(s, id), 0);
        ASSERT_EQ(store_sqlite_commit(s), 0);
        store_sqlite_maintain(s);
    }
    for (int i = 0; i < 10; i++)
        store_sqlite_maintain(s);
    EXPECT_STREQ(store_sqlite_error(s), "");
    // What may stay: fewer free pages than the vacuum threshold (4 MiB), and a WAL below the
    // checkpoint threshold (4 MiB).
    off_t after = file_size(path) + file_size(path + "-wal");
    EXPECT_LT(file_size(path), 5 << 20) << "bytes after deleting everything (was " << full << ")";
    EXPECT_LT(file_size(path + "-wal"), (4 << 20) + 65536);
    RecordProperty("peak_rolling_bytes", (int)peak);
    RecordProperty("full_bytes", (int)full);
    RecordProperty("after_bytes", (int)after);
    EXPECT_TRUE(replay_all(s).empty());
    store_sqlite_close(s);
}

TEST(StoreSqlite, CommitterThreadWhileLoopFillsNextBatch)
{
    TempDir t;
    store_sqlite *s = open_store(t.path());
    std::mutex mu;
    std::condition_variable cv;
    std::deque<store_batch *> q;
    bool finished = false;
    int failures = 0;
    std::thread committer([&] {
        for (;;) {
            std::unique_lock<std::mutex> lk(mu);
            cv.wait(lk, [&] { return finished || !q.empty(); });
            if (q.empty())
                return;
            store_batch *b = q.front();
            q.pop_front();
            lk.unlock();
            if (store_sqlite_write_batch(s, b) != 0)
                failures++;
            store_sqlite_maintain(s);
            store_sqlite_free_batch(b);
        }
    });
    std::set<uint64_t> live;
    for (uint64_t id = 1; id <= 20000; id++) {
        add(s, simple_job(id, id % 300));
        live.insert(id);
        if (id % 3 == 0 && id > 50) { // done of a job whose add may be in flight on the other thread
            ASSERT_EQ(store_sqlite_done(s, id - 50), 0);
            live.erase(id - 50);
        }
        if (id % 97 == 0) {
            store_batch *b = store_sqlite_take_batch(s);
            if (b) {
                std::lock_guard<std::mutex> lk(mu);
                q.push_back(b);
                cv.notify_one();
            }
        }
    }
    store_batch *b = store_sqlite_take_batch(s);
    {
        std::lock_guard<std::mutex> lk(mu);
        if (b)
            q.push_back(b);
        finished = true;
        cv.notify_one();
    }
    committer.join();
    EXPECT_EQ(failures, 0);
    std::set<uint64_t> got;
    for (const Job &j : replay_all(s))
        got.insert(j.id);
    EXPECT_TRUE(got == live) << got.size() << " stored, " << live.size() << " expected";
    store_sqlite_close(s);
}

namespace {
// crash_job builds job id's fields from the id alone, so the parent can check what it reads back.
Job crash_job(uint64_t id)
{
    Job j;
    j.id = id;
    j.func = "f" + std::to_string(id % 3);
    if (id % 2)
        j.unique = "u" + std::to_string(id);
    j.prio = (int)(id % 3);
    j.when = id % 5 == 0 ? (int64_t)id : 0;
    j.data.resize(id % 1500);
    for (size_t i = 0; i < j.data.size(); i++)
        j.data[i] = (char)(id * 31 + i);
    return j;
}

void write_all(int fd, const string &s)
{
    size_t off = 0;
    while (off < s.size()) {
        ssize_t n = write(fd, s.data() + off, s.size() - off);
        if (n <= 0)
            _exit(3);
        off += (size_t)n;
    }
}

// crash_child adds and deletes jobs in batches until it is killed. Before each commit it writes
// "B lo hi dlo dhi" (ids lo..hi added, dlo..dhi deleted; 0 0 for none), after it "C".
[[noreturn]] void crash_child(const string &path, int fd, unsigned seed)
{
    char err[512];
    uint64_t next = 1;
    store_sqlite *s = store_sqlite_open(path.c_str(), nullptr, &next, err, sizeof err);
    if (!s) {
        write_all(fd, string("E ") + err + "\n");
        _exit(2);
    }
    std::mt19937 rng(seed);
    std::deque<std::pair<uint64_t, uint64_t>> committed;
    for (;;) {
        uint64_t lo = next, hi = next + rng() % 200;
        uint64_t dlo = 0, dhi = 0;
        if (committed.size() > 2 && rng() % 3 == 0) {
            dlo = committed.front().first;
            dhi = committed.front().second;
            committed.pop_front();
        }
        std::ostringstream os;
        os << "B " << lo << ' ' << hi << ' ' << dlo << ' ' << dhi << '\n';
        write_all(fd, os.str());
        for (uint64_t id = lo; id <= hi; id++) {
            Job j = crash_job(id);
            store_rec r = rec_of(j);
            if (store_sqlite_add(s, &r) != 0)
                _exit(4);
        }
        for (uint64_t id = dlo; dlo && id <= dhi; id++)
            if (store_sqlite_done(s, id) != 0)
                _exit(4);
        if (store_sqlite_commit(s) != 0) {
            write_all(fd, string("E ") + store_sqlite_error(s) + "\n");
            _exit(5);
        }
        write_all(fd, "C\n");
        committed.emplace_back(lo, hi);
        next = hi + 1;
    }
}
} // namespace

TEST(StoreSqlite, CommittedBatchesSurviveSigkill)
{
    TempDir t;
    string path = t.path();
    unsigned seed = (unsigned)time(nullptr);
    std::mt19937 rng(seed);
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::set<uint64_t> expect; // ids that must be stored
    size_t committed_batches = 0, uncertain_applied = 0;
    for (int round = 0; round < 20; round++) {
        int p[2];
        ASSERT_EQ(pipe(p), 0);
        pid_t pid = fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            close(p[0]);
            crash_child(path, p[1], seed + (unsigned)round);
        }
        close(p[1]);
        fcntl(p[0], F_SETFL, O_NONBLOCK);
        string out;
        char buf[65536];
        struct timespec start, now;
        clock_gettime(CLOCK_MONOTONIC, &start);
        double deadline = 0.02 + (rng() % 130) / 1000.0;
        for (;;) {
            clock_gettime(CLOCK_MONOTONIC, &now);
            double el = (double)(now.tv_sec - start.tv_sec) + (double)(now.tv_nsec - start.tv_nsec) / 1e9;
            if (el >= deadline)
                break;
            struct pollfd pfd = {p[0], POLLIN, 0};
            poll(&pfd, 1, 5);
            ssize_t n = read(p[0], buf, sizeof buf);
            if (n > 0)
                out.append(buf, (size_t)n);
        }
        kill(pid, SIGKILL);
        int status = 0;
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        ASSERT_TRUE(WIFSIGNALED(status)) << "child exited by itself: " << out.substr(out.rfind('\n', out.size() - 2) + 1);
        ssize_t n;
        while ((n = read(p[0], buf, sizeof buf)) > 0)
            out.append(buf, (size_t)n);
        close(p[0]);

        // Apply every confirmed batch; keep the last unconfirmed one aside.
        std::istringstream in(out);
        string tag;
        bool pending = false;
        uint64_t lo = 0, hi = 0, dlo = 0, dhi = 0;
        while (in >> tag) {
            if (tag == "B") {
                ASSERT_FALSE(pending);
                in >> lo >> hi >> dlo >> dhi;
                pending = true;
            } else if (tag == "C") {
                ASSERT_TRUE(pending);
                for (uint64_t id = lo; id <= hi; id++)
                    expect.insert(id);
                for (uint64_t id = dlo; dlo && id <= dhi; id++)
                    expect.erase(id);
                pending = false;
                committed_batches++;
            } else {
                FAIL() << "child: " << out;
            }
        }

        char err[512];
        store_sqlite *s = store_sqlite_open(path.c_str(), nullptr, nullptr, err, sizeof err);
        ASSERT_NE(s, nullptr) << err;
        std::vector<Job> got = replay_all(s);
        store_sqlite_close(s);
        std::set<uint64_t> ids;
        for (size_t i = 0; i < got.size(); i++) {
            if (i > 0) {
                ASSERT_LT(got[i - 1].id, got[i].id) << "replay order or duplicate";
            }
            ids.insert(got[i].id);
            if (got[i].id % 97 == 0)
                expect_same(got[i], crash_job(got[i].id));
        }
        // The unconfirmed batch is all or nothing.
        if (pending) {
            bool any = false, all = true;
            for (uint64_t id = lo; id <= hi; id++) {
                bool in_store = ids.count(id) > 0;
                any |= in_store;
                all &= in_store;
            }
            ASSERT_EQ(any, all) << "batch " << lo << ".." << hi << " stored partially";
            if (all) {
                for (uint64_t id = lo; id <= hi; id++)
                    expect.insert(id);
                for (uint64_t id = dlo; dlo && id <= dhi; id++)
                    expect.erase(id);
                uncertain_applied++;
            }
        }
        ASSERT_TRUE(ids == expect) << "round " << round << ": " << ids.size() << " stored, " << expect.size()
                                   << " confirmed";
    }
    EXPECT_GT(committed_batches, 20u);
    RecordProperty("committed_batches", (int)committed_batches);
    RecordProperty("uncertain_applied", (int)uncertain_applied);
}

// ---------------------------------------------------------------- untrusted rows

namespace {

store_col int_col(int64_t v) { return store_col{STORE_COL_INT, v, nullptr, 0}; }
store_col blob_col(const string &b) { return store_col{STORE_COL_BLOB, 0, b.data(), b.size()}; }

} // namespace

TEST(StoreRow, DecodesOnlyWhatASubmitCouldHaveCreated)
{
    string f = "reverse", u = "u1", red = "", d = string("pay\0load", 8), empty;
    store_col c[STORE_ROW_NCOLS] = {int_col(7), int_col(2), int_col(-3), blob_col(f), blob_col(u),
                                    blob_col(red), blob_col(d)};
    store_rec r;
    ASSERT_EQ(store_row_decode(c, 512, &r), nullptr);
    EXPECT_EQ(r.id, 7u);
    EXPECT_EQ(r.prio, 2);
    EXPECT_EQ(r.when, 0) << "a negative run_at means now";
    EXPECT_EQ(string(r.func, r.func_len), f);
    EXPECT_EQ(string(static_cast<const char *>(r.data), r.data_len), d);
    EXPECT_STREQ(r.reducer, "");

    auto reject = [&](int col, store_col v, size_t max_func, const char *why) {
        store_col bad[STORE_ROW_NCOLS];
        std::copy(c, c + STORE_ROW_NCOLS, bad);
        bad[col] = v;
        store_rec out;
        const char *got = store_row_decode(bad, max_func, &out);
        ASSERT_NE(got, nullptr) << why;
        EXPECT_NE(strstr(got, why), nullptr) << got;
    };
    string longu(65, 'u'), nul = string("a\0b", 3), func600(600, 'h');
    reject(STORE_ROW_ID, int_col(0), 512, "id out of range");
    reject(STORE_ROW_ID, int_col(-1), 512, "id out of range");
    reject(STORE_ROW_ID, int_col((int64_t)STORE_ID_MAX + 1), 512, "id out of range");
    reject(STORE_ROW_ID, int_col(INT64_MAX), 512, "id out of range");
    reject(STORE_ROW_PRIO, int_col(3), 512, "priority out of range");
    reject(STORE_ROW_PRIO, int_col(-1), 512, "priority out of range");
    reject(STORE_ROW_PRIO, blob_col(f), 512, "priority is not an integer");
    reject(STORE_ROW_PRIO, store_col{STORE_COL_FLOAT, 0, nullptr, 0}, 512, "priority is not");
    reject(STORE_ROW_RUN_AT, int_col(STORE_RUN_AT_MAX + 1), 512, "run_at out of range");
    reject(STORE_ROW_FUNC, blob_col(empty), 512, "function name is empty");
    reject(STORE_ROW_FUNC, blob_col(nul), 512, "function name contains NUL");
    reject(STORE_ROW_FUNC, blob_col(func600), 512, "function name longer");
    reject(STORE_ROW_FUNC, blob_col(f), 6, "function name longer");
    reject(STORE_ROW_FUNC, store_col{STORE_COL_NULL, 0, nullptr, 0}, 512, "function name is not");
    reject(STORE_ROW_FUNC, int_col(5), 512, "function name is not");
    reject(STORE_ROW_UNIQUE, blob_col(longu), 512, "unique longer than 64");
    reject(STORE_ROW_UNIQUE, blob_col(nul), 512, "unique contains NUL");
    reject(STORE_ROW_REDUCER, blob_col(func600), 512, "reducer longer");
    reject(STORE_ROW_DATA, store_col{STORE_COL_NULL, 0, nullptr, 0}, 512, "payload is not");
    reject(STORE_ROW_DATA, store_col{(store_col_type)0, 0, nullptr, 0}, 512, "payload is not");
    string tabs = "a\tb\nc"; // the wire accepts these names, so the store keeps them
    c[STORE_ROW_FUNC] = blob_col(tabs);
    EXPECT_EQ(store_row_decode(c, 512, &r), nullptr);
    c[STORE_ROW_FUNC] = store_col{STORE_COL_TEXT, 0, f.data(), f.size()};
    EXPECT_EQ(store_row_decode(c, 512, &r), nullptr) << "text columns are bytes too";
}

TEST(StoreSqlite, ReplayMovesInvalidRowsToQuarantine)
{
    TempDir d;
    string p = d.path();
    store_sqlite *s = open_store(p);
    add(s, simple_job(1));
    add(s, simple_job(5));
    ASSERT_EQ(store_sqlite_commit(s), 0);
    store_sqlite_close(s);
    exec_sql(p, "INSERT INTO spur_jobs VALUES (2, 9, 0, x'66', x'', x'', x'00', NULL);"
                "INSERT INTO spur_jobs VALUES (3, 1, 0, x'', x'', x'', x'00', NULL);"
                "INSERT INTO spur_jobs VALUES (4, 1, 0, x'66', zeroblob(70000), x'', x'01', NULL);");
    s = open_store(p);
    store_sqlite_set_max_function(s, 512);
    std::vector<Job> got = replay_all(s);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].id, 1u);
    EXPECT_EQ(got[1].id, 5u);
    const char *note = nullptr;
    EXPECT_EQ(store_sqlite_quarantined(s, &note), 3u);
    EXPECT_NE(strstr(note, "3 invalid stored rows moved to table spur_quarantine"), nullptr) << note;
    EXPECT_NE(strstr(note, "id 2, priority out of range"), nullptr) << note;
    got = replay_all(s);
    EXPECT_EQ(got.size(), 2u);
    EXPECT_EQ(store_sqlite_quarantined(s, &note), 0u) << "moved once";
    store_sqlite_close(s);
    EXPECT_EQ(query_int64(p, "SELECT count(*) FROM spur_quarantine"), 3);
    EXPECT_EQ(query_int64(p, "SELECT length(uniq) FROM spur_quarantine WHERE id = 4"), 70000);
    EXPECT_EQ(query_int64(p, "SELECT count(*) FROM spur_jobs"), 2);
}

// write_queue writes what q holds as one batch.
int write_queue(store_sqlite *s, store_queue *q)
{
    store_batch *b = store_queue_take(q);
    int rc = b ? store_sqlite_write_batch(s, b) : 0;
    store_batch_free(b);
    return rc;
}

int collect_records(void *ctx, const store_record *r)
{
    auto *v = static_cast<std::vector<string> *>(ctx);
    v->push_back(std::to_string(r->kind) + ":" + string(r->key, r->key_len) + "=" +
                 string(static_cast<const char *>(r->value), r->value_len));
    return 0;
}

TEST(StoreSqlite, MetaUpdatesAndRecordsAreDurable)
{
    TempDir d;
    string p = d.path();
    store_sqlite *s = open_store(p);
    store_queue q = {};
    Job a = simple_job(1), b = simple_job(2);
    a.meta = string("{\"attempts\":1}\0x", 16); // bytes, NUL included
    store_rec ra = rec_of(a), rb = rec_of(b);
    ASSERT_EQ(store_queue_add(&q, &ra), 0);
    ASSERT_EQ(store_queue_add(&q, &rb), 0);
    store_record r1 = {STORE_REC_RETRY, "f", 1, "3 1 60", 6};
    store_record r2 = {STORE_REC_SCHEDULE, "n", 1, "x", 1};
    ASSERT_EQ(store_queue_record(&q, &r1), 0);
    ASSERT_EQ(store_queue_record(&q, &r2), 0);
    ASSERT_EQ(write_queue(s, &q), 0) << store_sqlite_error(s);
    // a new version of job 2 replaces the stored row; job 1 is updated then deleted in one batch
    b.meta = "{\"attempts\":2}";
    b.when = 1234;
    rb = rec_of(b);
    ASSERT_EQ(store_queue_update(&q, &rb), 0);
    ASSERT_EQ(store_queue_update(&q, &ra), 0);
    ASSERT_EQ(store_queue_done(&q, 1), 0);
    store_record del = {STORE_REC_SCHEDULE, "n", 1, nullptr, 0};
    r1.value = "5 2 60";
    ASSERT_EQ(store_queue_record(&q, &del), 0);
    ASSERT_EQ(store_queue_record(&q, &r1), 0);
    ASSERT_EQ(write_queue(s, &q), 0) << store_sqlite_error(s);
    store_sqlite_close(s);

    s = open_store(p);
    std::vector<Job> got = replay_all(s);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].id, 2u);
    EXPECT_EQ(got[0].meta, b.meta);
    EXPECT_EQ(got[0].when, 1234);
    std::vector<string> recs;
    ASSERT_EQ(store_sqlite_replay_records(s, collect_records, &recs), 0);
    EXPECT_EQ(recs, std::vector<string>{"2:f=5 2 60"});
    store_sqlite_close(s);
    store_queue_clear(&q);
    // meta that is not bytes is not a job
    exec_sql(p, "INSERT INTO spur_jobs VALUES (9, 1, 0, x'66', x'', x'', x'00', 42)");
    s = open_store(p);
    got = replay_all(s);
    EXPECT_EQ(got.size(), 1u);
    const char *note = nullptr;
    EXPECT_EQ(store_sqlite_quarantined(s, &note), 1u);
    EXPECT_NE(strstr(note, "meta is not bytes"), nullptr) << note;
    store_sqlite_close(s);
}

TEST(StoreSqlite, SchemaOneIsMigrated)
{
    TempDir d;
    string p = d.path();
    // a store written by an earlier spurd: no meta column, no records table
    exec_sql(p, "CREATE TABLE spur_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);"
                "CREATE TABLE spur_jobs (id INTEGER PRIMARY KEY, prio INTEGER NOT NULL,"
                " run_at INTEGER NOT NULL, func BLOB NOT NULL, uniq BLOB NOT NULL,"
                " reducer BLOB NOT NULL, data BLOB NOT NULL);"
                "INSERT INTO spur_meta VALUES ('schema', 1), ('max_id', 3);"
                "INSERT INTO spur_jobs VALUES (3, 1, 0, x'66', x'', x'', x'6f6c64');");
    store_sqlite *s = open_store(p);
    ASSERT_NE(s, nullptr);
    std::vector<Job> got = replay_all(s);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].data, "old");
    EXPECT_EQ(got[0].meta, "");
    Job j = simple_job(4);
    j.meta = "m";
    add(s, j);
    ASSERT_EQ(store_sqlite_commit(s), 0) << store_sqlite_error(s);
    store_sqlite_close(s);
    EXPECT_EQ(query_int64(p, "SELECT value FROM spur_meta WHERE key = 'schema'"), 2);
    s = open_store(p);
    got = replay_all(s);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[1].meta, "m");
    store_sqlite_close(s);
}

TEST(StoreSqlite, InsaneHighWaterMarkIsReset)
{
    TempDir d;
    string p = d.path();
    store_sqlite *s = open_store(p);
    add(s, simple_job(40));
    ASSERT_EQ(store_sqlite_commit(s), 0);
    store_sqlite_close(s);
    exec_sql(p, "UPDATE spur_meta SET value = 9223372036854775807 WHERE key = 'max_id'");
    uint64_t next = 1;
    s = open_store(p, nullptr, &next);
    EXPECT_EQ(next, 41u);
    ASSERT_NE(store_sqlite_note(s), nullptr);
    EXPECT_NE(strstr(store_sqlite_note(s), "out of range"), nullptr);
    store_sqlite_close(s);
    EXPECT_EQ(query_int64(p, "SELECT value FROM spur_meta WHERE key = 'max_id'"), 40);
}

TEST(StoreSqlite, DamagedPagesCostOnlyTheirRowsAndRecoverRewritesTheRest)
{
    TempDir d;
    string p = d.path();
    const uint64_t n = 6000;
    store_sqlite *s = open_store(p);
    for (uint64_t id = 1; id <= n; id++)
        add(s, simple_job(id, 100));
    ASSERT_EQ(store_sqlite_commit(s), 0);
    store_sqlite_close(s);
    char report[1024];
    ASSERT_EQ(store_sqlite_check(p.c_str(), 0, report, sizeof report), 0) << report;

    // the leaf pages of spur_jobs, from SQLite's dbstat table
    std::vector<int64_t> leaves;
    {
        sqlite3 *db = nullptr;
        sqlite3_stmt *st = nullptr;
        ASSERT_EQ(sqlite3_open(p.c_str(), &db), SQLITE_OK);
        if (sqlite3_prepare_v2(db, "SELECT pageno FROM dbstat WHERE name = 'spur_jobs' AND pagetype = 'leaf' "
                                   "ORDER BY pageno", -1, &st, nullptr) != SQLITE_OK) {
            sqlite3_close(db);
            GTEST_SKIP() << "SQLite without the dbstat table";
        }
        while (sqlite3_step(st) == SQLITE_ROW)
            leaves.push_back(sqlite3_column_int64(st, 0));
        sqlite3_finalize(st);
        sqlite3_close(db);
    }
    ASSERT_GT(leaves.size(), 30u);
    int64_t page = query_int64(p, "PRAGMA page_size");
    int fd = open(p.c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    string zeros((size_t)page, '\0');
    // two in the middle and the one holding the highest ids (rows are stored in id order)
    for (int64_t pg : {leaves[leaves.size() / 3], leaves[2 * leaves.size() / 3], leaves.back()})
        ASSERT_EQ(pwrite(fd, zeros.data(), zeros.size(), (pg - 1) * page), (ssize_t)zeros.size());
    close(fd);
    off_t size_before = file_size(p);

    ASSERT_EQ(store_sqlite_check(p.c_str(), 0, report, sizeof report), -1);
    string rep = report;
    EXPECT_NE(rep.find("is damaged"), string::npos) << rep;
    EXPECT_NE(rep.find("in 3 damaged regions"), string::npos) << rep;
    unsigned long long readable = 0, lost = 0;
    ASSERT_EQ(sscanf(strstr(report, "): ") + 3, "%llu jobs readable, up to %llu jobs lost", &readable, &lost), 2)
        << rep;
    EXPECT_EQ(readable + lost, n) << "ids are dense here, so the count of lost jobs is exact";
    EXPECT_LE(lost, 3 * 2 * n / leaves.size()) << "three pages' worth, not everything after them";
    EXPECT_EQ(file_size(p), size_before) << "refusing changes nothing";

    ASSERT_EQ(store_sqlite_check(p.c_str(), 1, report, sizeof report), 1);
    rep = report;
    EXPECT_NE(rep.find("rewritten with " + std::to_string(readable) + " jobs"), string::npos) << rep;
    string kept = rep.substr(rep.find("kept as ") + 8);
    EXPECT_EQ(kept.rfind(p + ".damaged-", 0), 0u) << kept;
    EXPECT_GT(file_size(kept), 0);
    ASSERT_EQ(store_sqlite_check(p.c_str(), 0, report, sizeof report), 0) << "the new file is sound: " << report;

    uint64_t next = 1;
    s = open_store(p, nullptr, &next);
    EXPECT_GT(next, n - lost) << "no id below the high-water mark is reused";
    EXPECT_EQ(next, n + 1);
    std::vector<Job> got = replay_all(s);
    store_sqlite_close(s);
    ASSERT_EQ(got.size(), readable);
    for (const Job &j : got)
        expect_same(j, simple_job(j.id, 100));
}

// The scheme table picks the backend and its parameters from the configuration.
TEST(StoreBackendTable, ChoosesFromStoreAndQueueType)
{
    config c;
    options_defaults(&c);
    store_params p;
    EXPECT_EQ(store_backend_choose(&c, &p), nullptr) << "no store configured";
    c.store = strdup("sqlite:/var/lib/spur/q.db");
    c.store_max_pages = 7;
    c.store_sync_normal = 1;
    EXPECT_EQ(store_backend_choose(&c, &p), &store_sqlite_backend);
    EXPECT_STREQ(p.location, "/var/lib/spur/q.db");
    EXPECT_EQ(p.gearmand, 0);
    EXPECT_EQ(p.import_table, nullptr);
    EXPECT_EQ(p.own, nullptr) << "choose leaves the backend's own parameters to params";
    EXPECT_EQ(store_backend_params(&c, &p), &store_sqlite_backend);
    ASSERT_NE(p.own, nullptr);
    EXPECT_EQ(static_cast<const store_sqlite_params *>(p.own)->max_pages, 7);
    EXPECT_EQ(p.sync_normal, 1);
    EXPECT_EQ(p.max_function, c.max_function);
    free(c.store);
    c.store = strdup("mem:t");
    EXPECT_EQ(store_backend_choose(&c, &p), &store_mem_backend);
    EXPECT_STREQ(p.location, "t");
    free(c.store);
    c.store = nullptr;
    c.queue_type = strdup("LibSQLite3");
    c.sqlite_db = strdup("/tmp/g.db");
    EXPECT_EQ(store_backend_choose(&c, &p), &store_sqlite_backend);
    EXPECT_STREQ(p.location, "/tmp/g.db");
    EXPECT_EQ(p.gearmand, 1);
    EXPECT_EQ(p.import_table, nullptr) << "the backend's default table (gearman_queue)";
    c.sqlite_table = strdup("jobs");
    EXPECT_EQ(store_backend_choose(&c, &p), &store_sqlite_backend);
    EXPECT_STREQ(p.import_table, "jobs");
    free(c.queue_type);
    c.queue_type = strdup("builtin");
    EXPECT_EQ(store_backend_choose(&c, &p), nullptr);
    config_free(&c);
}
