/* SPDX-License-Identifier: BSD-3-Clause */
// The admin commands `dump` and `load LINE` against an engine whose extension hooks
// (engine_ext) are test doubles: a dump carries every record and the meta of jobs with extension
// state; a load hands records and meta to their hooks, keeps uniques and issues new handles.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fake_shell.h"

extern "C" {
#include "admin.h"
#include "dumpfmt.h"
#include "job.h"
#include "store_batch.h"
}

using std::string;

namespace {

std::vector<string> g_records;   // record_restored calls: "kind/key/value"
std::vector<string> g_restored;  // job_restored calls: meta
int g_take = 0;                  // job_restored returns this

size_t fake_meta(const engine *, const job *j, char *out, size_t cap)
{
    string m = "{\"state\":\"failed\",\"attempts\":" + std::to_string(j->id % 10) + "}";
    if (m.size() > cap)
        return 0;
    memcpy(out, m.data(), m.size());
    return m.size();
}

void fake_each(const engine *, void (*cb)(void *, const store_record *), void *ctx)
{
    store_record r = {STORE_REC_SCHEDULE, "nightly", 7, "v\0v", 3};
    cb(ctx, &r);
}

int fake_record(engine *, const store_record *r, char *err, size_t errlen)
{
    if (r->value_len == 0) {
        snprintf(err, errlen, "empty value");
        return -1;
    }
    g_records.push_back(std::to_string(r->kind) + "/" + string(r->key, r->key_len) + "/" +
                        string((const char *)r->value, r->value_len));
    return 0;
}

int fake_restored(engine *e, job *j, const char *meta, size_t len, double)
{
    g_restored.emplace_back(meta, len);
    if (g_take) { // its own deferral, far away (no JOB_EXT: engine_check holds jobx to it)
        EXPECT_EQ(job_defer(e, j, 1e9), 0);
    }
    return g_take;
}

void fake_freed(engine *, job *) {}

class DumpTest : public ::testing::Test {
  protected:
    FakeShell f;
    void SetUp() override
    {
        g_records.clear();
        g_restored.clear();
        g_take = 0;
        f.cfg.job_handle_prefix = strdup("H:t");
        f.start();
        f.eng.ext.job_meta = fake_meta;
        f.eng.ext.job_freed = fake_freed;
        f.eng.ext.record_each[STORE_REC_SCHEDULE] = fake_each;
        f.eng.ext.record_restored[STORE_REC_SCHEDULE] = fake_record;
        f.eng.ext.job_restored = fake_restored;
    }
    string admin(peer *c, const string &line)
    {
        EXPECT_EQ(FakeShell::feed(c, line), 0);
        string out = FakeShell::take(c);
        for (int i = 0; i < 1000 && !list_empty(&f.eng.listings); i++) {
            admin_continue(&f.eng);
            out += FakeShell::take(c);
        }
        return out;
    }
    static std::vector<string> lines(const string &s)
    {
        std::vector<string> v;
        size_t a = 0, b;
        while ((b = s.find('\n', a)) != string::npos) {
            v.push_back(s.substr(a, b - a + 1));
            a = b + 1;
        }
        return v;
    }
};

TEST_F(DumpTest, DumpCarriesRecordsAndMetaOfExtensionJobs)
{
    peer *c = f.connect();
    string in;
    for (int i = 0; i < 600; i++) // more than a slice
        in += FakeShell::req(CMD_SUBMIT_JOB_BG, string("f\0u", 3) + std::to_string(i) +
                                                    string("\0x", 2));
    in += FakeShell::req(CMD_SUBMIT_JOB, string("f\0fg\0y", 6)); // foreground: not dumped
    ASSERT_EQ(FakeShell::feed(c, in), 0);
    FakeShell::take(c);
    job *j = job_find_unique_any(&f.eng, "u5", 2);
    ASSERT_NE(j, nullptr);
    j->flags |= JOB_EXT;
    std::vector<string> ls = lines(admin(f.connect(), "dump\n"));
    ASSERT_EQ(ls.size(), 1u + 1u + 600u + 1u + 1u);
    EXPECT_EQ(ls.back(), ".\n");
    dump_line d;
    char err[256];
    ASSERT_EQ(dump_parse(ls[0].data(), ls[0].size(), &d, err, sizeof err), 0) << err;
    EXPECT_EQ(d.type, DUMP_HEADER);
    ASSERT_EQ(dump_parse(ls[1].data(), ls[1].size(), &d, err, sizeof err), 0) << err;
    ASSERT_EQ(d.type, DUMP_RECORD);
    EXPECT_EQ(string((const char *)d.rec.value, d.rec.value_len), string("v\0v", 3));
    dump_line_free(&d);
    int with_meta = 0;
    for (size_t i = 2; i < 602; i++) {
        ASSERT_EQ(dump_parse(ls[i].data(), ls[i].size(), &d, err, sizeof err), 0) << err;
        ASSERT_EQ(d.type, DUMP_JOB);
        EXPECT_EQ(string(d.job.unique, d.job.unique_len), "u" + std::to_string(i - 2));
        if (d.job.meta_len > 0) {
            with_meta++;
            EXPECT_EQ(d.job.id, j->id);
            EXPECT_EQ(string(d.job.meta, d.job.meta_len), "{\"state\":\"failed\",\"attempts\":" +
                                                                  std::to_string(j->id % 10) +
                                                                  "}");
        }
        dump_line_free(&d);
    }
    EXPECT_EQ(with_meta, 1);
    EXPECT_EQ(ls[602], "{\"type\":\"end\",\"jobs\":600,\"records\":1}\n");
}

TEST_F(DumpTest, LoadLinesGoToTheirHooks)
{
    peer *c = f.connect();
    EXPECT_EQ(admin(c, "load {\"type\":\"record\",\"kind\":1,\"key\":\"k\",\"value_b64\":\"eHk=\"}\n"),
              "OK\r\n");
    ASSERT_EQ(g_records.size(), 1u);
    EXPECT_EQ(g_records[0], "1/k/xy");
    EXPECT_EQ(admin(c, "load {\"type\":\"record\",\"kind\":1,\"key\":\"k\",\"value_b64\":\"\"}\n"),
              "ERR BAD_RECORD empty+value\r\n");
    EXPECT_EQ(admin(c, "load {\"type\":\"record\",\"kind\":3,\"key\":\"k\",\"value_b64\":\"\"}\n")
                  .substr(0, 17),
              "ERR UNKNOWN_KIND ");
    // a job with meta: the hook takes it (and defers it, far away)
    g_take = 1;
    string r = admin(c, "load {\"type\":\"job\",\"id\":99,\"func\":\"f\",\"unique\":\"a\","
                        "\"payload_b64\":\"AAE=\",\"meta\":{\"state\":\"failed\"}}\n");
    ASSERT_EQ(r.substr(0, 5), "OK H ");
    uint64_t id = strtoull(r.c_str() + 5, nullptr, 10);
    job *j = job_find_id(&f.eng, id);
    ASSERT_NE(j, nullptr);
    EXPECT_NE(id, 99u) << "a new handle";
    EXPECT_EQ(string(job_payload(j), job_payload_len(j)), string("\0\1", 2));
    EXPECT_EQ(j->state, JOB_FUTURE);
    EXPECT_EQ(f.eng.timers.a[j->timer].at, 1e9);
    ASSERT_EQ(g_restored.size(), 1u);
    EXPECT_EQ(g_restored[0], "{\"state\":\"failed\"}");
    // the same function and unique again: the job there is kept
    EXPECT_EQ(admin(c, "LOAD {\"type\":\"job\",\"id\":100,\"func\":\"f\",\"unique\":\"a\","
                       "\"payload_b64\":\"\"}\n"),
              "OK EXISTS " + std::to_string(id) + "\r\n");
    // not taken: runnable at its time
    g_take = 0;
    r = admin(c, "load {\"type\":\"job\",\"id\":101,\"func\":\"g\",\"unique\":\"b\","
                 "\"priority\":\"high\",\"payload_b64\":\"\",\"meta\":{\"x\":1}}\n");
    ASSERT_EQ(r.substr(0, 5), "OK H ");
    j = job_find_id(&f.eng, strtoull(r.c_str() + 5, nullptr, 10));
    ASSERT_NE(j, nullptr);
    EXPECT_EQ(j->state, JOB_READY);
    EXPECT_EQ(j->prio, PRIO_HIGH);
    r = admin(c, "load {\"type\":\"job\",\"id\":102,\"func\":\"g\",\"when\":5000,"
                 "\"payload_b64\":\"\"}\n");
    ASSERT_EQ(r.substr(0, 5), "OK H ");
    j = job_find_id(&f.eng, strtoull(r.c_str() + 5, nullptr, 10));
    ASSERT_NE(j, nullptr);
    EXPECT_EQ(j->state, JOB_FUTURE) << "the clock is at 1000";
    // bad lines
    EXPECT_EQ(admin(c, "load {\"type\":\"job\"}\n"), "ERR BAD_LINE missing+id\r\n");
    EXPECT_EQ(admin(c, "load {\"type\":\"job\",\"id\":1,\"func\":\"a\\u0000b\",\"payload_b64\":\"\"}\n")
                  .substr(0, 21),
              "ERR BAD_LINE not+JSON") << "a NUL never names a function";
    EXPECT_EQ(admin(c, "load {\"type\":\"job\",\"id\":1,\"func\":\"a\\tb c\",\"payload_b64\":\"\"}\n")
                  .substr(0, 5),
              "OK H ") << "every other byte does, as in gearmand";
    EXPECT_EQ(admin(c, "load {\"type\":\"job\",\"id\":1,\"func\":\"f\",\"unique\":\"" +
                           string(65, 'u') + "\",\"payload_b64\":\"\"}\n"),
              "ERR INVALID_JOB unique+longer+than+64+bytes\r\n");
    EXPECT_EQ(admin(c, "load {\"spur_dump\":1}\n"), "OK\r\n");
    char why[256] = "";
    EXPECT_EQ(engine_check(&f.eng, why, sizeof why), 0) << why;
}

TEST_F(DumpTest, NextIdAndUsage)
{
    peer *c = f.connect();
    EXPECT_EQ(admin(c, "dump next-id\n"), "OK " + std::to_string(f.eng.next_id) + "\n");
    EXPECT_EQ(admin(c, "dump x\n"), "ERR UNKNOWN_ARGS Usage:+dump+[next-id]\r\n");
}

} // namespace
