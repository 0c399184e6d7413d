/* SPDX-License-Identifier: BSD-3-Clause */
/* dumpfmt: the dump file's JSON lines round-trip bytes exactly; bad lines are refused. */
#include <gtest/gtest.h>

#include <string>

extern "C" {
#include "buf.h"
#include "dumpfmt.h"
}

namespace {

std::string take(struct buf *b)
{
    std::string s(buf_head(b), buf_len(b));
    buf_free(b);
    return s;
}

std::string job_line(const struct dump_job &j)
{
    struct buf b = {};
    EXPECT_EQ(dump_write_job(&b, &j), 0);
    return take(&b);
}

int parse(const std::string &s, struct dump_line *l, std::string *why = nullptr)
{
    char err[256] = "";
    int rc = dump_parse(s.data(), s.size(), l, err, sizeof err);
    if (why)
        *why = err;
    return rc;
}

TEST(DumpFmt, Base64RoundTripsEveryLength)
{
    std::string in;
    for (int n = 0; n < 300; n++) {
        std::string enc(dump_b64_len(in.size()), '\0');
        dump_b64_encode(in.data(), in.size(), &enc[0]);
        std::string out(in.size() + 3, '\0');
        long m = dump_b64_decode(enc.data(), enc.size(), &out[0]);
        ASSERT_EQ(m, (long)in.size());
        out.resize((size_t)m);
        EXPECT_EQ(out, in);
        in.push_back((char)(n * 37 + 11));
    }
    char out[8];
    EXPECT_EQ(dump_b64_decode("QQ==", 4, out), 1);
    EXPECT_EQ(out[0], 'A');
    EXPECT_EQ(dump_b64_decode("QR==", 4, out), -1) << "not canonical";
    EXPECT_EQ(dump_b64_decode("QQ=", 3, out), -1);
    EXPECT_EQ(dump_b64_decode("Q=Q=", 4, out), -1);
    EXPECT_EQ(dump_b64_decode("QQ==QQ==", 8, out), -1) << "padding only at the end";
}

TEST(DumpFmt, JobRoundTripsBytes)
{
    std::string func("f\xc3\xa9n", 4), uniq("u\0\xff", 3), red("r\"\\\n", 4);
    std::string data;
    for (int i = 0; i < 1000; i++)
        data.push_back((char)i);
    struct dump_job j = {};
    j.id = 12345678901234ull;
    j.func = func.data();
    j.func_len = func.size();
    j.unique = uniq.data();
    j.unique_len = uniq.size();
    j.reducer = red.data();
    j.reducer_len = red.size();
    j.data = data.data();
    j.data_len = data.size();
    j.prio = 2;
    j.when = 1700000000;
    j.meta = "{\"after\":[1,2],\"x\":\"y\"}";
    j.meta_len = strlen(j.meta);
    std::string line = job_line(j);
    EXPECT_LE(line.size(), dump_job_line_max(&j));
    EXPECT_EQ(line.back(), '\n');
    EXPECT_EQ(line.find('\n'), line.size() - 1) << "one line";
    EXPECT_NE(line.find("\"func\":\"f\xc3\xa9n\""), std::string::npos) << "UTF-8 kept as text";
    EXPECT_NE(line.find("\"unique_b64\":"), std::string::npos) << "NUL and 0xff: base64";
    EXPECT_NE(line.find("\"reducer\":\"r\\\"\\\\\\u000a\""), std::string::npos) << line;
    struct dump_line l;
    ASSERT_EQ(parse(line, &l), 0);
    EXPECT_EQ(l.type, DUMP_JOB);
    EXPECT_EQ(l.job.id, j.id);
    EXPECT_EQ(std::string(l.job.func, l.job.func_len), func);
    EXPECT_EQ(std::string(l.job.unique, l.job.unique_len), uniq);
    EXPECT_EQ(std::string(l.job.reducer, l.job.reducer_len), red);
    EXPECT_EQ(std::string((const char *)l.job.data, l.job.data_len), data);
    EXPECT_EQ(l.job.prio, 2);
    EXPECT_EQ(l.job.when, 1700000000);
    EXPECT_EQ(std::string(l.job.meta, l.job.meta_len), std::string(j.meta));
    dump_line_free(&l);
}

TEST(DumpFmt, EmptyFieldsAndDefaults)
{
    struct dump_line l;
    ASSERT_EQ(parse("{\"type\":\"job\",\"id\":7,\"func\":\"f\",\"payload_b64\":\"\"}\r\n", &l), 0);
    EXPECT_EQ(l.job.unique_len, 0u);
    EXPECT_EQ(l.job.reducer_len, 0u);
    EXPECT_EQ(l.job.data_len, 0u);
    EXPECT_EQ(l.job.meta_len, 0u);
    EXPECT_EQ(l.job.prio, 1);
    EXPECT_EQ(l.job.when, 0);
    dump_line_free(&l);
}

TEST(DumpFmt, HeaderRecordEnd)
{
    struct buf b = {};
    ASSERT_EQ(dump_write_header(&b, 99, "H:host"), 0);
    std::string rk("sched\xff", 6), rv("v\0v", 3);
    struct dump_record r = {1, rk.data(), rk.size(), rv.data(), rv.size()};
    ASSERT_EQ(dump_write_record(&b, &r), 0);
    ASSERT_EQ(dump_write_end(&b, 3, 1), 0);
    std::string all = take(&b);
    size_t a = all.find('\n'), c = all.find('\n', a + 1);
    struct dump_line l;
    ASSERT_EQ(parse(all.substr(0, a + 1), &l), 0);
    EXPECT_EQ(l.type, DUMP_HEADER);
    dump_line_free(&l);
    ASSERT_EQ(parse(all.substr(a + 1, c - a), &l), 0);
    EXPECT_EQ(l.type, DUMP_RECORD);
    EXPECT_EQ(l.rec.kind, 1);
    EXPECT_EQ(std::string(l.rec.key, l.rec.key_len), rk);
    EXPECT_EQ(std::string((const char *)l.rec.value, l.rec.value_len), rv);
    dump_line_free(&l);
    ASSERT_EQ(parse(all.substr(c + 1), &l), 0);
    EXPECT_EQ(l.type, DUMP_END);
    EXPECT_EQ(l.njobs, 3u);
    EXPECT_EQ(l.nrecords, 1u);
    dump_line_free(&l);
}

TEST(DumpFmt, BadLinesRefused)
{
    const char *bad[] = {
        "",
        "{",
        "[1]",
        "{\"spur_dump\":2}",
        "{\"type\":\"nope\"}",
        "{\"type\":\"job\",\"func\":\"f\",\"payload_b64\":\"\"}",            /* no id */
        "{\"type\":\"job\",\"id\":-1,\"func\":\"f\",\"payload_b64\":\"\"}",
        "{\"type\":\"job\",\"id\":1,\"payload_b64\":\"\"}",                  /* no func */
        "{\"type\":\"job\",\"id\":1,\"func\":\"\",\"payload_b64\":\"\"}",    /* empty func */
        "{\"type\":\"job\",\"id\":1,\"func\":\"f\"}",                        /* no payload */
        "{\"type\":\"job\",\"id\":1,\"func\":\"f\",\"payload_b64\":\"abc\"}",
        "{\"type\":\"job\",\"id\":1,\"func\":\"f\",\"payload_b64\":\"\",\"priority\":\"top\"}",
        "{\"type\":\"job\",\"id\":1,\"func\":\"f\",\"payload_b64\":\"\",\"meta\":[1]}",
        "{\"type\":\"job\",\"id\":1,\"func\":\"f\",\"func_b64\":\"Zg==\",\"payload_b64\":\"\"}",
        "{\"type\":\"job\",\"id\":1,\"id\":2,\"func\":\"f\",\"payload_b64\":\"\"}",
        "{\"type\":\"job\",\"id\":1,\"func\":\"f\",\"payload_b64\":\"\",\"when\":1.5}",
        "{\"type\":\"record\",\"kind\":8,\"key\":\"k\",\"value_b64\":\"\"}",
        "{\"type\":\"record\",\"kind\":0,\"key\":\"k\",\"value_b64\":\"\"}",
        "{\"type\":\"record\",\"kind\":1,\"key\":\"\",\"value_b64\":\"\"}",
        "{\"type\":\"record\",\"kind\":1,\"value_b64\":\"\"}",
        "{\"type\":\"record\",\"kind\":1,\"key\":\"k\"}",
        "{\"type\":\"end\",\"jobs\":1}",
    };
    for (const char *s : bad) {
        struct dump_line l;
        std::string why;
        EXPECT_EQ(parse(s, &l, &why), -1) << s;
        EXPECT_FALSE(why.empty()) << s;
        EXPECT_EQ(l.mem, nullptr);
    }
}

TEST(DumpFmt, MetaAfterRenumbered)
{
    const uint64_t olds[] = {10, 20, 30}, news[] = {100, 200, 300};
    const char *meta = "{\"state\":\"waiting\",\"after\":[20,15,10]}";
    char *out = nullptr;
    size_t n = 0;
    ASSERT_EQ(dump_meta_renumber(meta, strlen(meta), olds, news, 3, &out, &n), 0);
    EXPECT_EQ(std::string(out, n), "{\"state\":\"waiting\",\"after\":[200,100]}")
        << "known ids mapped, a gone one dropped";
    free(out);
    EXPECT_EQ(dump_meta_renumber("{\"after\":\"x\"}", 13, olds, news, 3, &out, &n), -1);
    EXPECT_EQ(dump_meta_renumber("nope", 4, olds, news, 3, &out, &n), -1);
}

} // namespace

TEST(DumpFmt, IdMapKeepsAscendingPairsForRenumbering)
{
    struct dump_idmap m = {};
    for (uint64_t i = 1; i <= 300; i++) // past the first allocation
        ASSERT_EQ(dump_idmap_add(&m, i * 10, i + 1000), 0);
    ASSERT_EQ(dump_idmap_add(&m, 15, 1), 0); // out of order: ignored
    EXPECT_EQ(m.n, 300u);
    char *out = nullptr;
    size_t len = 0;
    const char meta[] = "{\"after\":[3000,20,15]}";
    ASSERT_EQ(dump_meta_renumber(meta, sizeof meta - 1, m.olds, m.news, m.n, &out, &len), 0);
    EXPECT_EQ(std::string(out, len), "{\"after\":[1300,1002]}");
    free(out);
    dump_idmap_free(&m);
    EXPECT_EQ(m.olds, nullptr);
}
