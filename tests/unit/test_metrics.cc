/* SPDX-License-Identifier: BSD-3-Clause */
// metrics and hist: the renderers over an engine driven through a fake shell (no sockets), and
// the histogram buckets.
#include <gtest/gtest.h>
#include <jansson.h>

#include <string>

#include "fake_shell.h"

extern "C" {
#include "hist.h"
#include "job.h"
#include "metrics.h"
#include "proto.h"
}

using std::string;

static string render(int (*fn)(const engine *, buf *, size_t), const engine *e)
{
    buf b = {};
    EXPECT_EQ(fn(e, &b, 0), 0);
    string s(buf_head(&b), buf_len(&b));
    buf_free(&b);
    return s;
}

static string render_now(int (*fn)(const engine *, double, buf *, size_t), const engine *e,
                         double now)
{
    buf b = {};
    EXPECT_EQ(fn(e, now, &b, 0), 0);
    string s(buf_head(&b), buf_len(&b));
    buf_free(&b);
    return s;
}

TEST(Hist, BucketsAreUpperBoundsInclusive)
{
    EXPECT_EQ(hist_bucket(hist_seconds, 0), 0u);
    EXPECT_EQ(hist_bucket(hist_seconds, 0.0001), 0u);
    EXPECT_EQ(hist_bucket(hist_seconds, 0.00011), 1u);
    EXPECT_EQ(hist_bucket(hist_seconds, 1), 12u);
    EXPECT_EQ(hist_bucket(hist_seconds, 1000), (size_t)HIST_BOUNDS - 1);
    EXPECT_EQ(hist_bucket(hist_seconds, 1e9), (size_t)HIST_BOUNDS);
    for (size_t i = 0; i < HIST_BOUNDS; i++) {
        EXPECT_EQ(hist_bucket(hist_sizes, hist_sizes[i]), i);
        if (i > 0) {
            EXPECT_LT(hist_seconds[i - 1], hist_seconds[i]);
        }
    }
    hist h = {};
    hist_observe(&h, hist_seconds, -1); // a clock step counts as 0
    hist_observe(&h, hist_seconds, 2);
    EXPECT_EQ(hist_total(&h), 2u);
    EXPECT_EQ(h.count[0], 1u);
    EXPECT_DOUBLE_EQ(h.sum, 2.0);
}

TEST(Metrics, SanitizeKeepsUtf8AndEscapesOtherBytes)
{
    char out[64];
    const char in[] = "a\xc3\xa9" "b\xff\xc3";
    size_t n = metrics_sanitize(in, sizeof in - 1, out);
    EXPECT_EQ(string(out, n), "a\xc3\xa9" "b\\xff\\xc3");
    n = metrics_sanitize("\xed\xa0\x80", 3, out); // a surrogate is not valid UTF-8
    EXPECT_EQ(string(out, n), "\\xed\\xa0\\x80");
}

struct MetricsTest : ::testing::Test {
    FakeShell sh;
    void SetUp() override { sh.start(); }
};

TEST_F(MetricsTest, CountersFollowAJobsLife)
{
    peer *w = sh.connect();
    peer *c = sh.connect();
    FakeShell::feed(w, FakeShell::req(CMD_CAN_DO, "f"));
    FakeShell::feed(c, FakeShell::req(CMD_SUBMIT_JOB_HIGH, string("f\0u\0x", 5)));
    sh.clock += 0.003; // waits 3 ms
    FakeShell::feed(w, FakeShell::req(CMD_GRAB_JOB, ""));
    string assign = FakeShell::take(w);
    ASSERT_GT(assign.size(), 12u);
    string handle = assign.substr(12, assign.find('\0', 12) - 12);
    sh.clock += 2; // runs 2 s
    FakeShell::feed(w, FakeShell::req(CMD_WORK_COMPLETE, handle + string("\0r", 2)));

    engine_snapshot s;
    engine_stats_get(&sh.eng, &s);
    EXPECT_EQ(s.stats.jobs[JOB_EV_SUBMITTED][PRIO_HIGH], 1u);
    EXPECT_EQ(s.stats.jobs[JOB_EV_ASSIGNED][PRIO_HIGH], 1u);
    EXPECT_EQ(s.stats.jobs[JOB_EV_COMPLETED][PRIO_HIGH], 1u);
    EXPECT_EQ(s.conn_now[PEER_KIND_WORKER], 1u);
    EXPECT_EQ(s.conn_now[PEER_KIND_CLIENT], 1u);
    EXPECT_EQ(s.job_bytes, 0u);

    string prom = render_now(metrics_prometheus, &sh.eng, sh.clock);
    EXPECT_NE(prom.find("gearman_workers{function=\"f\"} 1\n"), string::npos) << prom;
    EXPECT_NE(prom.find("spur_jobs_total{event=\"completed\",priority=\"high\"} 1\n"),
              string::npos);
    // 3 ms of queue wait: in the 0.005 bucket, not in 0.0025
    EXPECT_NE(prom.find("spur_job_queue_wait_seconds_bucket{function=\"f\",le=\"0.0025\"} 0\n"),
              string::npos);
    EXPECT_NE(prom.find("spur_job_queue_wait_seconds_bucket{function=\"f\",le=\"0.005\"} 1\n"),
              string::npos);
    EXPECT_NE(prom.find("spur_job_run_seconds_bucket{function=\"f\",le=\"1\"} 0\n"),
              string::npos);
    EXPECT_NE(prom.find("spur_job_run_seconds_bucket{function=\"f\",le=\"2.5\"} 1\n"),
              string::npos);
    EXPECT_NE(prom.find("spur_job_run_seconds_count{function=\"f\"} 1\n"), string::npos);

    string js = render_now(metrics_json_stats, &sh.eng, sh.clock);
    json_error_t err;
    json_t *doc = json_loads(js.c_str(), 0, &err);
    ASSERT_NE(doc, nullptr) << err.text;
    json_t *run = json_object_get(
        json_object_get(json_object_get(doc, "functions_by_name"), "f"), "run_seconds");
    EXPECT_EQ(json_integer_value(json_object_get(run, "count")), 1);
    EXPECT_NEAR(json_real_value(json_object_get(run, "sum")), 2.0, 1e-6);
    json_decref(doc);

    engine_stats_reset(&sh.eng);
    engine_stats_get(&sh.eng, &s);
    EXPECT_EQ(s.stats.jobs[JOB_EV_COMPLETED][PRIO_HIGH], 0u);
    EXPECT_EQ(s.conn_now[PEER_KIND_WORKER], 1u); // a gauge
    prom = render_now(metrics_prometheus, &sh.eng, sh.clock);
    EXPECT_NE(prom.find("spur_job_run_seconds_count{function=\"f\"} 0\n"), string::npos);
}

TEST_F(MetricsTest, StatusJsonEscapesNames)
{
    peer *w = sh.connect();
    FakeShell::feed(w, FakeShell::req(CMD_CAN_DO, "a\"b\xff"));
    string js = render(metrics_json_status, &sh.eng);
    ASSERT_FALSE(js.empty());
    EXPECT_EQ(js.back(), '\n');
    json_error_t err;
    json_t *doc = json_loads(js.c_str(), 0, &err);
    ASSERT_NE(doc, nullptr) << err.text << js;
    json_t *row = json_array_get(json_object_get(doc, "functions"), 0);
    EXPECT_STREQ(json_string_value(json_object_get(row, "function")), "a\"b\\xff");
    EXPECT_EQ(json_integer_value(json_object_get(row, "available_workers")), 1);
    json_decref(doc);
    string prom = render_now(metrics_prometheus, &sh.eng, sh.clock);
    EXPECT_NE(prom.find("gearman_workers{function=\"a\\\"b\\\\xff\"} 1\n"), string::npos) << prom;
}

TEST_F(MetricsTest, RenderersStopAtTheirLimit)
{
    peer *w = sh.connect();
    for (int i = 0; i < 50; i++)
        FakeShell::feed(w, FakeShell::req(CMD_CAN_DO, "function" + std::to_string(i)));
    string whole = render_now(metrics_prometheus, &sh.eng, sh.clock);
    buf b = {};
    EXPECT_EQ(metrics_prometheus(&sh.eng, sh.clock, &b, whole.size()), 0);
    EXPECT_EQ(buf_len(&b), whole.size());
    buf_free(&b);
    EXPECT_EQ(metrics_prometheus(&sh.eng, sh.clock, &b, whole.size() - 1), METRICS_TOO_LARGE);
    EXPECT_LT(buf_len(&b), whole.size());
    buf_free(&b);
    int (*json[])(const engine *, buf *, size_t) = {metrics_json_status, metrics_json_workers};
    for (auto fn : json) {
        string doc = render(fn, &sh.eng);
        EXPECT_EQ(fn(&sh.eng, &b, doc.size()), 0);
        buf_free(&b);
        EXPECT_EQ(fn(&sh.eng, &b, doc.size() - 1), METRICS_TOO_LARGE);
        EXPECT_LE(buf_len(&b), doc.size() - 1);
        buf_free(&b);
    }
    string st = render_now(metrics_json_stats, &sh.eng, sh.clock);
    json_error_t err;
    json_t *doc = json_loads(st.c_str(), 0, &err);
    ASSERT_NE(doc, nullptr) << err.text;
    EXPECT_EQ(json_object_size(json_object_get(doc, "functions_by_name")), 50u);
    json_decref(doc);
    EXPECT_EQ(metrics_json_stats(&sh.eng, sh.clock, &b, st.size() - 1), METRICS_TOO_LARGE);
    EXPECT_LE(buf_len(&b), st.size() - 1);
    buf_free(&b);
    st = render_now(metrics_stats_text, &sh.eng, sh.clock);
    EXPECT_EQ(metrics_stats_text(&sh.eng, sh.clock, &b, 100), METRICS_TOO_LARGE);
    buf_free(&b);
    st = render(metrics_stats_functions, &sh.eng);
    EXPECT_EQ(metrics_stats_functions(&sh.eng, &b, st.size() / 2), METRICS_TOO_LARGE);
    buf_free(&b);
}

static void get_widgets(const metrics_src *, metrics_value *v) { v->u = 4242; }
static void get_widgets_b(const metrics_src *, metrics_value *v) { v->u = 7; }

// widget_rows: a counter family of two labelled rows without places (so after every placed
// row), and a gauge placed between the core's first two rows of each output.
static const metrics_row *widget_rows()
{
    static metrics_row rows[3];
    rows[0].text = "test_widgets";
    rows[0].json = "test.widgets";
    rows[0].prom = "spur_test_widgets_total{kind=\"a\"}";
    rows[0].help = "Widgets made.";
    rows[0].kind = METRICS_COUNTER;
    rows[0].get = get_widgets;
    rows[1] = rows[0];
    rows[1].text = "test_widgets_b";
    rows[1].json = "test.widgets_b";
    rows[1].prom = "spur_test_widgets_total{kind=\"b\"}";
    rows[1].get = get_widgets_b;
    rows[2].text = "test_gauge";
    rows[2].json = "test_gauge";
    rows[2].prom = "spur_test_gauge";
    rows[2].help = "A gauge.";
    rows[2].kind = METRICS_GAUGE;
    rows[2].offset = offsetof(engine_snapshot, workers);
    rows[2].size = sizeof(size_t);
    rows[2].at[METRICS_AT_TEXT] = 15;  // between pid and uptime
    rows[2].at[METRICS_AT_JSON] = 15;  // between version and pid
    rows[2].at[METRICS_AT_PROM] = 15;  // between spur_start_time_seconds and spur_uptime_seconds
    return rows;
}

TEST_F(MetricsTest, AnAddedRowIsInAllThreeOutputs)
{
    static const metrics_table table = {widget_rows(), 3};
    ASSERT_EQ(metrics_add(&sh.eng, &table), 0);
    ASSERT_EQ(metrics_add(&sh.eng, &table), 0); // once
    peer *w = sh.connect();
    FakeShell::feed(w, FakeShell::req(CMD_CAN_DO, "f")); // one worker: test_gauge 1

    string st = render_now(metrics_stats_text, &sh.eng, sh.clock);
    EXPECT_NE(st.find("STAT test_widgets 4242\r\nSTAT test_widgets_b 7\r\nEND\r\n"), string::npos)
        << st;
    EXPECT_NE(st.find("\r\nSTAT test_gauge 1\r\nSTAT uptime "), string::npos) << st;
    EXPECT_EQ(st.find("test_widgets 4242"), st.rfind("test_widgets 4242"));

    string js = render_now(metrics_json_stats, &sh.eng, sh.clock);
    EXPECT_NE(js.find(",\"test\":{\"widgets\":4242,\"widgets_b\":7},\"functions_by_name\":"),
              string::npos) << js;
    EXPECT_NE(js.find(",\"test_gauge\":1,\"pid\":"), string::npos) << js;
    json_error_t err;
    json_t *doc = json_loads(js.c_str(), 0, &err);
    ASSERT_NE(doc, nullptr) << err.text;
    json_decref(doc);

    string prom = render_now(metrics_prometheus, &sh.eng, sh.clock);
    EXPECT_NE(prom.find("# HELP spur_test_widgets_total Widgets made.\n"
                        "# TYPE spur_test_widgets_total counter\n"
                        "spur_test_widgets_total{kind=\"a\"} 4242\n"
                        "spur_test_widgets_total{kind=\"b\"} 7\n"),
              string::npos) << prom;
    EXPECT_EQ(prom.size() - prom.find("spur_test_widgets_total{kind=\"b\"} 7\n"),
              sizeof "spur_test_widgets_total{kind=\"b\"} 7\n" - 1); // the last sample
    EXPECT_NE(prom.find("\n# HELP spur_test_gauge A gauge.\n# TYPE spur_test_gauge gauge\n"
                        "spur_test_gauge 1\n# HELP spur_uptime_seconds "),
              string::npos) << prom;
}

TEST_F(MetricsTest, MetricsAddRefusesPastItsTables)
{
    static metrics_table tables[ENGINE_EXT_COUNTERS];
    size_t added = 0;
    while (added < ENGINE_EXT_COUNTERS && metrics_add(&sh.eng, &tables[added]) == 0)
        added++;
    EXPECT_EQ(added, (size_t)ENGINE_EXT_COUNTERS - 3); // FakeShell added jobx's, recur's and
                                                       // broadcast's
    EXPECT_EQ(metrics_add(&sh.eng, &tables[added]), -1);
}

// The features' rows (jobx_counters.c, recur.c) keep their places among the core's.
TEST_F(MetricsTest, FeatureRowsKeepTheirPlaces)
{
    string st = render_now(metrics_stats_text, &sh.eng, sh.clock);
    EXPECT_NE(st.find("STAT store_replayed 0\r\nSTAT retries_total 0\r\nSTAT failed_jobs 0\r\n"
                      "STAT failed_dropped_total 0\r\nSTAT schedules 0\r\n"
                      "STAT schedule_fired 0\r\nSTAT schedule_coalesced 0\r\n"
                      "STAT schedule_refused 0\r\nSTAT waiting_jobs 0\r\n"),
              string::npos) << st;
    string js = render_now(metrics_json_stats, &sh.eng, sh.clock);
    EXPECT_NE(js.find("\"functions_evicted\":0,\"retry\":{\"retries_total\":0,\"failed_jobs\":0,"
                      "\"failed_dropped_total\":0,\"waiting_jobs\":0},\"schedules\":{\"count\":0,"
                      "\"fired\":0,\"coalesced\":0,\"refused\":0},\"functions_by_name\":{}}\n"),
              string::npos) << js;
    string prom = render_now(metrics_prometheus, &sh.eng, sh.clock);
    EXPECT_NE(prom.find("\nspur_waiting_jobs 0\n# HELP spur_permission_denied_total "),
              string::npos) << prom;
    EXPECT_NE(prom.find("\nspur_permission_denied_total{what=\"admin\"} 0\n"
                        "# HELP spur_schedules Recurring schedules defined.\n"),
              string::npos) << prom;
}
