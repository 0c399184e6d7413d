/* SPDX-License-Identifier: BSD-3-Clause */
/* The pure parts of `spuradmin top`: rates and percentiles (top_view), the JSON readers
 * (top_json), the order of the table and its layout cut to the terminal. */
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "top_json.h"
#include "top_view.h"

namespace {

top_hist make_hist(std::vector<double> bounds, std::vector<uint64_t> counts)
{
	top_hist h;
	memset(&h, 0, sizeof h);
	h.nbounds = bounds.size();
	for (size_t i = 0; i < bounds.size(); i++)
		h.bounds[i] = bounds[i];
	for (size_t i = 0; i < counts.size(); i++) {
		h.counts[i] = counts[i];
		h.count += counts[i];
	}
	return h;
}

std::vector<std::string> split_lines(const std::string &s)
{
	std::vector<std::string> out;
	size_t start = 0;
	for (;;) {
		size_t nl = s.find('\n', start);
		out.push_back(s.substr(start, nl == std::string::npos ? nl : nl - start));
		if (nl == std::string::npos)
			return out;
		start = nl + 1;
	}
}

size_t utf8_columns(const std::string &s)
{
	size_t n = 0;
	for (unsigned char c : s)
		if ((c & 0xc0) != 0x80)
			n++;
	return n;
}

/* A `stats json` reply shaped like Spur's, with two functions. */
const char *const STATS =
	"{\"version\": \"0.1.0\", \"pid\": 42, \"time\": 1, \"uptime_seconds\": 90061.5,"
	" \"connections\": {\"open\": 5, \"open_by_kind\": {\"client\": 2, \"worker\": 2,"
	" \"admin\": 1, \"all\": 5}},"
	" \"jobs\": {\"live\": 7, \"running\": 2, \"queued\": {\"high\": 1, \"normal\": 4,"
	" \"low\": 0, \"total\": 5}, \"memory_bytes\": 3000,"
	" \"events\": {\"submitted\": {\"total\": 100}, \"completed\": {\"total\": 90},"
	" \"failed\": {\"total\": 1}, \"exception\": {\"total\": 2}, \"timed_out\": {\"total\": 3},"
	" \"lost\": {\"total\": 4}}},"
	" \"store\": {\"enabled\": true, \"commits\": 10, \"commit_failures\": 1, \"replayed\": 0,"
	" \"batch_operations\": {\"bounds\": [1, 2], \"counts\": [0, 10, 0], \"count\": 10,"
	" \"sum\": 20},"
	" \"commit_seconds\": {\"bounds\": [0.001, 0.01], \"counts\": [0, 4, 0], \"count\": 4,"
	" \"sum\": 0.02}},"
	" \"functions_by_name\": {\"zeta\": {\"events\": {\"submitted\": 60, \"completed\": 50,"
	" \"failed\": 1, \"exception\": 1}, \"wait_seconds\": {\"bounds\": [1, 2, 4],"
	" \"counts\": [0, 10, 0, 0], \"count\": 10, \"sum\": 15}, \"run_seconds\": {}},"
	" \"alpha\": {\"events\": {\"submitted\": 40}, \"wait_seconds\": {\"bounds\": [1, 2, 4],"
	" \"counts\": [0, 0, 0, 0], \"count\": 0, \"sum\": 0}}}}\n";

const char *const STATUS =
	"{\"functions\": [{\"function\": \"zeta\", \"total\": 3, \"running\": 1,"
	" \"available_workers\": 2, \"ready\": 2, \"queued\": {\"high\": 0, \"normal\": 2,"
	" \"low\": 0, \"total\": 2}}, {\"function\": \"alpha\", \"total\": 3, \"running\": 0,"
	" \"available_workers\": 0, \"ready\": 3, \"queued\": {\"total\": 3}},"
	" {\"function\": \"mid\", \"total\": 2, \"running\": 1, \"available_workers\": 1,"
	" \"queued\": {\"total\": 1}}]}\n";

void load(top_snap *s, const char *stats = STATS, const char *status = STATUS)
{
	char err[256] = "";
	memset(s, 0, sizeof *s);
	ASSERT_EQ(top_json_stats(stats, strlen(stats), s, err, sizeof err), 0) << err;
	ASSERT_EQ(top_json_status(status, strlen(status), s, err, sizeof err), 0) << err;
}

} // namespace

TEST(TopRate, DifferenceOverTime)
{
	EXPECT_DOUBLE_EQ(top_rate(100, 150, 2.0), 25.0);
	EXPECT_DOUBLE_EQ(top_rate(7, 7, 1.0), 0.0);
}

TEST(TopRate, ACounterThatWentDownCountsFromZero)
{
	EXPECT_DOUBLE_EQ(top_rate(1000, 30, 3.0), 10.0); /* stats reset, then 30 */
}

TEST(TopRate, UnknownWithoutElapsedTime)
{
	EXPECT_LT(top_rate(1, 2, 0.0), 0.0);
	EXPECT_LT(top_rate(1, 2, -1.0), 0.0);
}

TEST(TopQuantile, NoObservation)
{
	top_hist h = make_hist({1, 2, 4}, {0, 0, 0, 0});
	double v = -1;
	EXPECT_EQ(top_quantile(&h, 0.5, &v), TOP_Q_NONE);
}

TEST(TopQuantile, InterpolatesInsideTheBucket)
{
	top_hist h = make_hist({1, 2, 4}, {0, 10, 0, 0});
	double v = 0;
	ASSERT_EQ(top_quantile(&h, 0.5, &v), TOP_Q_VALUE);
	EXPECT_DOUBLE_EQ(v, 1.5);
	ASSERT_EQ(top_quantile(&h, 0.99, &v), TOP_Q_VALUE);
	EXPECT_NEAR(v, 1.99, 1e-9);
}

TEST(TopQuantile, FirstBucketStartsAtZeroAndRankFallsOnABoundary)
{
	top_hist h = make_hist({1, 2, 4}, {50, 0, 50, 0});
	double v = 0;
	ASSERT_EQ(top_quantile(&h, 0.5, &v), TOP_Q_VALUE);
	EXPECT_DOUBLE_EQ(v, 1.0); /* the 50th of 100 is the last of the first bucket */
	ASSERT_EQ(top_quantile(&h, 0.25, &v), TOP_Q_VALUE);
	EXPECT_DOUBLE_EQ(v, 0.5);
	ASSERT_EQ(top_quantile(&h, 0.75, &v), TOP_Q_VALUE);
	EXPECT_DOUBLE_EQ(v, 3.0); /* halfway through (2, 4]; the empty bucket is skipped */
}

TEST(TopQuantile, AboveTheLastBound)
{
	top_hist h = make_hist({1, 2, 4}, {98, 0, 0, 2});
	double v = 0;
	ASSERT_EQ(top_quantile(&h, 0.5, &v), TOP_Q_VALUE);
	ASSERT_EQ(top_quantile(&h, 0.99, &v), TOP_Q_ABOVE);
	EXPECT_DOUBLE_EQ(v, 4.0);
}

TEST(TopHistDelta, SubtractsBucketByBucket)
{
	top_hist old = make_hist({1, 2}, {1, 2, 3});
	old.sum = 10;
	top_hist cur = make_hist({1, 2}, {1, 5, 4});
	cur.sum = 16;
	top_hist d;
	top_hist_delta(&old, &cur, &d);
	EXPECT_EQ(d.counts[0], 0u);
	EXPECT_EQ(d.counts[1], 3u);
	EXPECT_EQ(d.counts[2], 1u);
	EXPECT_EQ(d.count, 4u);
	EXPECT_DOUBLE_EQ(d.sum, 6.0);
}

TEST(TopHistDelta, ResetOrNoBaseMeansTheWholeHistogram)
{
	top_hist old = make_hist({1, 2}, {5, 5, 5});
	top_hist cur = make_hist({1, 2}, {1, 9, 9});
	top_hist d;
	top_hist_delta(&old, &cur, &d);
	EXPECT_EQ(d.counts[0], 1u);
	EXPECT_EQ(d.counts[1], 9u);
	top_hist_delta(nullptr, &cur, &d);
	EXPECT_EQ(d.count, cur.count);
	top_hist other = make_hist({1, 2, 3}, {0, 0, 0, 0});
	top_hist_delta(&other, &cur, &d);
	EXPECT_EQ(d.counts[2], 9u);
}

TEST(TopJson, ReadsStatsAndStatus)
{
	top_snap s;
	load(&s);
	EXPECT_STREQ(s.version, "0.1.0");
	EXPECT_EQ(s.pid, 42);
	EXPECT_EQ(s.conns_open, 5u);
	EXPECT_EQ(s.conns_worker, 2u);
	EXPECT_EQ(s.jobs_queued, 5u);
	EXPECT_EQ(s.submitted, 100u);
	EXPECT_EQ(s.failed, 1u + 2u + 3u + 4u);
	EXPECT_TRUE(s.store_enabled);
	EXPECT_EQ(s.store_commit.count, 4u);
	ASSERT_EQ(s.nfuncs, 3u); /* "mid" came from status json only */
	EXPECT_STREQ(s.funcs[0].name, "alpha");
	EXPECT_STREQ(s.funcs[1].name, "mid");
	EXPECT_STREQ(s.funcs[2].name, "zeta");
	const top_func *z = top_snap_find(&s, "zeta");
	ASSERT_NE(z, nullptr);
	EXPECT_EQ(z->queued, 2u);
	EXPECT_EQ(z->running, 1u);
	EXPECT_EQ(z->workers, 2u);
	EXPECT_EQ(z->submitted, 60u);
	EXPECT_EQ(z->failed, 2u);
	EXPECT_EQ(z->wait.counts[1], 10u);
	EXPECT_EQ(top_snap_find(&s, "nope"), nullptr);
	top_snap_free(&s);
}

TEST(TopJson, GearmandsReplyIsNotSpur)
{
	const char *err_line = "ERR UNKNOWN_COMMAND Unknown+server+commandstats\r\n";
	top_snap s;
	memset(&s, 0, sizeof s);
	char err[256];
	EXPECT_EQ(top_json_stats(err_line, strlen(err_line), &s, err, sizeof err), -1);
	EXPECT_NE(strstr(err, "ERR UNKNOWN_COMMAND"), nullptr) << err;
	const char *other = "{\"hello\": 1}\n";
	EXPECT_EQ(top_json_stats(other, strlen(other), &s, err, sizeof err), -1);
	top_snap_free(&s);
}

TEST(TopJson, MalformedHistogramReadsAsEmpty)
{
	const char *stats = "{\"uptime_seconds\": 1, \"functions_by_name\": {\"f\": "
			    "{\"wait_seconds\": {\"bounds\": [2, 1], \"counts\": [1, 1, 1]}}}}";
	top_snap s;
	load(&s, stats, "{\"functions\": []}");
	ASSERT_EQ(s.nfuncs, 1u);
	EXPECT_EQ(s.funcs[0].wait.nbounds, 0u);
	EXPECT_EQ(s.funcs[0].wait.counts[0], 0u);
	top_snap_free(&s);
}

TEST(TopView, RatesFromThePreviousSnapshotAndWindowFromTheBase)
{
	top_snap prev, cur;
	load(&prev);
	load(&cur);
	prev.at_ms = 1000;
	cur.at_ms = 3000;
	cur.submitted += 50;
	top_func *z = const_cast<top_func *>(top_snap_find(&cur, "zeta"));
	z->submitted += 20;
	z->completed += 10;
	top_view v;
	ASSERT_EQ(top_view_build(&v, &cur, &prev, &prev, TOP_SORT_NAME), 0);
	EXPECT_DOUBLE_EQ(v.submit_rate, 25.0);
	ASSERT_EQ(v.nrows, 3u);
	EXPECT_STREQ(v.rows[2].name, "zeta");
	EXPECT_DOUBLE_EQ(v.rows[2].submit_rate, 10.0);
	EXPECT_DOUBLE_EQ(v.rows[2].done_rate, 5.0);
	/* the base has the same histogram: no wait in the window */
	EXPECT_EQ(v.rows[2].p50_kind, TOP_Q_NONE);
	top_view_free(&v);
	/* without a base the window is since the start */
	ASSERT_EQ(top_view_build(&v, &cur, nullptr, nullptr, TOP_SORT_NAME), 0);
	EXPECT_LT(v.rows[2].submit_rate, 0.0);
	ASSERT_EQ(v.rows[2].p50_kind, TOP_Q_VALUE);
	EXPECT_DOUBLE_EQ(v.rows[2].p50, 1.5);
	top_view_free(&v);
	top_snap_free(&prev);
	top_snap_free(&cur);
}

TEST(TopView, SortKeysLargestFirstTiesByName)
{
	top_snap s;
	load(&s);
	top_view v;
	ASSERT_EQ(top_view_build(&v, &s, nullptr, nullptr, TOP_SORT_QUEUED), 0);
	EXPECT_STREQ(v.rows[0].name, "alpha"); /* 3 queued */
	EXPECT_STREQ(v.rows[1].name, "zeta");  /* 2 */
	EXPECT_STREQ(v.rows[2].name, "mid");   /* 1 */
	top_view_sort(&v, TOP_SORT_RUNNING);   /* mid and zeta run 1: by name */
	EXPECT_STREQ(v.rows[0].name, "mid");
	EXPECT_STREQ(v.rows[1].name, "zeta");
	EXPECT_STREQ(v.rows[2].name, "alpha");
	top_view_sort(&v, TOP_SORT_WAIT_P99);
	EXPECT_STREQ(v.rows[0].name, "zeta");
	top_view_free(&v);
	top_snap_free(&s);
}

TEST(TopRender, CutToTheTerminalWithAMoreLine)
{
	top_snap s;
	load(&s);
	top_view v;
	ASSERT_EQ(top_view_build(&v, &s, nullptr, nullptr, TOP_SORT_QUEUED), 0);
	top_frame_info info = {"h:1", 1.0, 0.0};
	char out[8192];
	/* 7 lines of head, room for 2 more: one function and the "more" line */
	ASSERT_EQ(top_view_render(&v, &info, 9, 40, out, sizeof out), 9u);
	std::vector<std::string> lines = split_lines(out);
	ASSERT_EQ(lines.size(), 9u);
	for (const std::string &l : lines)
		EXPECT_LE(utf8_columns(l), 40u) << l;
	EXPECT_EQ(lines[0].substr(0, 24), "spuradmin top - h:1 - Sp");
	EXPECT_EQ(lines[6].substr(0, 8), "FUNCTION");
	EXPECT_EQ(lines[7].substr(0, 5), "alpha");
	EXPECT_EQ(lines[8].substr(0, 20), "... 2 more functions");
	/* everything fits in a big terminal */
	ASSERT_EQ(top_view_render(&v, &info, 50, 200, out, sizeof out), 10u);
	lines = split_lines(out);
	EXPECT_EQ(lines[0], "spuradmin top - h:1 - Spur 0.1.0 pid 42 - up 1d 01:01:01");
	EXPECT_EQ(lines[3], "store: - commits/s, commit latency p50 5.5ms p99 9.9ms, "
			    "2.0 ops/batch, 1 failed");
	EXPECT_EQ(lines[8].substr(0, 4), "zeta");
	EXPECT_NE(lines[8].find(" 1.50s    1.99s"), std::string::npos) << lines[8];
	EXPECT_EQ(lines[9].substr(0, 3), "mid");
	/* fewer rows than the head: only the first lines */
	EXPECT_EQ(top_view_render(&v, &info, 2, 80, out, sizeof out), 2u);
	EXPECT_EQ(top_view_render(&v, &info, 0, 80, out, sizeof out), 0u);
	EXPECT_STREQ(out, "");
	/* a tiny buffer is cut, never overrun */
	char tiny[16];
	top_view_render(&v, &info, 50, 200, tiny, sizeof tiny);
	EXPECT_EQ(strlen(tiny), 15u);
	top_view_free(&v);
	top_snap_free(&s);
}

TEST(TopRender, FlowControlLineOnlyWhereItIsInUse)
{
	std::string stats = STATS;
	size_t at = stats.find(" \"functions_by_name\"");
	ASSERT_NE(at, std::string::npos);
	stats.insert(at, " \"flow\": {\"functions_paused\": 1, \"functions_limited\": 2,"
			 " \"held\": {\"paused\": 3, \"concurrency\": 4, \"rate\": 0, \"key\": 5},"
			 " \"keys\": 9, \"keys_waiting\": 6},");
	top_snap s;
	load(&s, stats.c_str());
	top_view v;
	ASSERT_EQ(top_view_build(&v, &s, nullptr, nullptr, TOP_SORT_QUEUED), 0);
	top_frame_info info = {"h:1", 1.0, 0.0};
	char out[8192];
	ASSERT_EQ(top_view_render(&v, &info, 50, 200, out, sizeof out), 11u);
	std::vector<std::string> lines = split_lines(out);
	EXPECT_EQ(lines[4], "flow control: 1 paused, 2 limited, 12 jobs held back, 6 keys waiting");
	top_view_free(&v);
	top_snap_free(&s);
}

TEST(TopRender, NamesAreCutAndControlCharactersShownAsQuestionMarks)
{
	const char *status = "{\"functions\": [{\"function\": \"a\\u001b[2Jb\\u0085c\", "
			     "\"queued\": {\"total\": 9}}, {\"function\": "
			     "\"\\u00e9t\\u00e9_very_long_name_for_a_function_0123456789\", "
			     "\"queued\": {\"total\": 1}}]}";
	top_snap s;
	load(&s, "{\"uptime_seconds\": 1, \"functions_by_name\": {}}", status);
	top_view v;
	ASSERT_EQ(top_view_build(&v, &s, nullptr, nullptr, TOP_SORT_QUEUED), 0);
	top_frame_info info = {"h:1", 1.0, 10.0};
	char out[8192];
	ASSERT_EQ(top_view_render(&v, &info, 20, 90, out, sizeof out), 9u);
	std::vector<std::string> lines = split_lines(out);
	EXPECT_EQ(lines[7].substr(0, 8), "a?[2Jb?c");
	EXPECT_EQ(std::string(out).find('\x1b'), std::string::npos);
	/* 90 columns leave 18 for the name: 17 characters and '~' */
	EXPECT_EQ(lines[8].substr(0, 20), "\u00e9t\u00e9_very_long_nam~");
	EXPECT_EQ(utf8_columns(lines[8]), 90u);
	EXPECT_NE(lines[4].find("wait percentiles: last 10s"), std::string::npos) << lines[4];
	top_view_free(&v);
	top_snap_free(&s);
}
