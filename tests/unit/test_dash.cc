/* SPDX-License-Identifier: BSD-3-Clause */
// The web dashboard's pure parts: the one-second history ring and histogram quantiles
// (series.c), and its JSON documents over an engine driven through a fake shell (dash_data.c):
// the sampler's rates and wait p99, the overview's paging, sorting and filtering, names as
// valid UTF-8 text.
#include <gtest/gtest.h>

#include <jansson.h>
#include <string>

#include "fake_shell.h"

extern "C" {
#include "dash_data.h"
#include "hist.h"
#include "series.h"
}

using std::string;

namespace {

series_sample at(double t, double in)
{
    series_sample x{};
    x.t = t;
    x.submitted = in;
    return x;
}

// doc renders with fn and parses the JSON.
template <typename F> json_t *doc(F fn)
{
    buf b{};
    EXPECT_EQ(fn(&b), 0);
    string s(buf_head(&b), buf_len(&b));
    buf_free(&b);
    json_error_t err;
    json_t *v = json_loads(s.c_str(), 0, &err);
    EXPECT_NE(v, nullptr) << err.text << ": " << s;
    return v;
}

} // namespace

TEST(Series, KeepsTheLastCapSamplesOldestFirst)
{
    static series r;
    series_init(&r);
    EXPECT_EQ(series_len(&r), 0u);
    for (int i = 0; i < 3; i++) {
        series_sample x = at(i, i);
        series_push(&r, &x);
    }
    ASSERT_EQ(series_len(&r), 3u);
    EXPECT_EQ(series_at(&r, 0)->t, 0);
    EXPECT_EQ(series_at(&r, 2)->t, 2);
    for (int i = 3; i < SERIES_CAP + 10; i++) {
        series_sample x = at(i, i);
        series_push(&r, &x);
    }
    ASSERT_EQ(series_len(&r), (size_t)SERIES_CAP);
    EXPECT_EQ(series_at(&r, 0)->t, 10); // the 10 oldest were overwritten
    EXPECT_EQ(series_at(&r, SERIES_CAP - 1)->t, SERIES_CAP + 9);
}

TEST(Series, QuantileIsTheUpperBoundOfItsBucket)
{
    const double bounds[3] = {1, 2, 4};
    uint64_t none[4] = {0, 0, 0, 0};
    EXPECT_LT(series_quantile(none, bounds, 3, 0.99), 0);
    uint64_t c[4] = {98, 1, 1, 0}; // 100 values
    EXPECT_EQ(series_quantile(c, bounds, 3, 0.5), 1);
    EXPECT_EQ(series_quantile(c, bounds, 3, 0.98), 1);
    EXPECT_EQ(series_quantile(c, bounds, 3, 0.99), 2);
    EXPECT_EQ(series_quantile(c, bounds, 3, 1.0), 4);
    uint64_t over[4] = {0, 0, 0, 5}; // above every bound: the last bound
    EXPECT_EQ(series_quantile(over, bounds, 3, 0.5), 4);
}

struct DashTest : ::testing::Test {
    FakeShell sh;
    void SetUp() override { sh.start(); }
    void submit(const string &fn, int n)
    {
        peer *c = sh.connect();
        for (int i = 0; i < n; i++)
            FakeShell::feed(c, FakeShell::req(CMD_SUBMIT_JOB_BG, fn + string("\0\0x", 3)));
    }
};

TEST_F(DashTest, SamplerRatesAndWaitP99)
{
    static dash_sampler s;
    dash_sampler_init(&s);
    dash_sample(&s, &sh.eng, sh.clock); // primes: no sample yet
    EXPECT_EQ(series_len(&s.ring), 0u);
    submit("f", 4);
    peer *w = sh.connect();
    FakeShell::feed(w, FakeShell::req(CMD_CAN_DO, "f"));
    sh.clock += 0.3; // the job waited 300 ms
    FakeShell::feed(w, FakeShell::req(CMD_GRAB_JOB, ""));
    sh.clock += 1.7;
    dash_sample(&s, &sh.eng, sh.clock);
    ASSERT_EQ(series_len(&s.ring), 1u);
    const series_sample *x = series_at(&s.ring, 0);
    EXPECT_DOUBLE_EQ(x->submitted, 2.0); // 4 jobs in 2 s
    EXPECT_EQ(x->queued, 3u);
    EXPECT_EQ(x->running, 1u);
    EXPECT_EQ(x->wait_p99, hist_seconds[hist_bucket(hist_seconds, 0.3)]);
    sh.clock += 1;
    dash_sample(&s, &sh.eng, sh.clock);
    EXPECT_LT(series_at(&s.ring, 1)->wait_p99, 0); // nobody assigned in that second
    json_t *v = doc([&](buf *b) { return dash_json_series(&s, b, 0); });
    EXPECT_EQ(json_array_size(json_object_get(v, "samples")), 2u);
    json_decref(v);
}

TEST_F(DashTest, OverviewPagesSortsAndFilters)
{
    for (int i = 0; i < 30; i++) {
        char name[16];
        snprintf(name, sizeof name, "fn%02d", i);
        submit(name, i % 7 + 1);
    }
    submit("odd\xff<b>", 1); // not UTF-8, and markup: text in the JSON
    dash_query q{};
    q.offset = 10;
    q.limit = 5;
    json_t *v = doc([&](buf *b) { return dash_json_overview(&sh.eng, sh.clock, &q, b, 0); });
    json_t *fs = json_object_get(v, "functions");
    ASSERT_EQ(json_array_size(fs), 5u);
    EXPECT_STREQ(json_string_value(json_object_get(json_array_get(fs, 0), "name")), "fn10");
    EXPECT_EQ(json_integer_value(json_object_get(json_object_get(v, "page"), "total")), 31);
    json_decref(v);

    q = dash_query{};
    q.limit = 3;
    q.sort = dash_sort_parse("queued");
    q.desc = 1;
    v = doc([&](buf *b) { return dash_json_overview(&sh.eng, sh.clock, &q, b, 0); });
    fs = json_object_get(v, "functions");
    EXPECT_STREQ(json_string_value(json_object_get(json_array_get(fs, 0), "name")), "fn06");
    EXPECT_STREQ(json_string_value(json_object_get(json_array_get(fs, 1), "name")), "fn13");
    json_decref(v);

    q = dash_query{};
    q.limit = 500;
    q.filter = "ODD";
    v = doc([&](buf *b) { return dash_json_overview(&sh.eng, sh.clock, &q, b, 0); });
    fs = json_object_get(v, "functions");
    ASSERT_EQ(json_array_size(fs), 1u);
    EXPECT_STREQ(json_string_value(json_object_get(json_array_get(fs, 0), "name")),
                 "odd\\xff<b>");
    json_decref(v);

    buf b{};
    q = dash_query{};
    q.limit = 50;
    EXPECT_EQ(dash_json_overview(&sh.eng, sh.clock, &q, &b, 100), METRICS_TOO_LARGE);
    buf_free(&b);
}

TEST_F(DashTest, FunctionDetailAndMissingThings)
{
    submit("f", 2);
    json_t *v = doc([&](buf *b) { return dash_json_function(&sh.eng, sh.clock, "f", 1, b, 0); });
    EXPECT_TRUE(json_is_true(json_object_get(v, "found")));
    EXPECT_EQ(json_array_size(json_object_get(v, "queue_head")), 2u);
    json_decref(v);
    v = doc([&](buf *b) { return dash_json_function(&sh.eng, sh.clock, "g", 1, b, 0); });
    EXPECT_TRUE(json_is_false(json_object_get(v, "found")));
    json_decref(v);
    v = doc([&](buf *b) { return dash_json_job(&sh.eng, sh.clock, "H:x:1", 5, 0, b, 0); });
    EXPECT_TRUE(json_is_false(json_object_get(v, "found")));
    json_decref(v);
    v = doc([&](buf *b) { return dash_json_failed(&sh.eng, 0, 10, b, 0); });
    EXPECT_EQ(json_integer_value(json_object_get(v, "total")), 0);
    json_decref(v);
    v = doc([&](buf *b) { return dash_json_schedules(&sh.eng, b, 0); });
    EXPECT_EQ(json_array_size(json_object_get(v, "schedules")), 0u);
    json_decref(v);
    char err[256];
    const char *text = "s<1> @every 1h f\xff p";
    ASSERT_EQ(recur_add(&sh.eng, text, strlen(text), 0, err, sizeof err), RECUR_ADDED) << err;
    v = doc([&](buf *b) { return dash_json_schedules(&sh.eng, b, 0); });
    json_t *s0 = json_array_get(json_object_get(v, "schedules"), 0);
    EXPECT_STREQ(json_string_value(json_object_get(s0, "name")), "s<1>");
    EXPECT_STREQ(json_string_value(json_object_get(s0, "spec")), "@every 1h");
    EXPECT_STREQ(json_string_value(json_object_get(s0, "function")), "f\\xff");
    EXPECT_EQ(json_integer_value(json_object_get(s0, "runs")), 0);
    json_decref(v);
}
