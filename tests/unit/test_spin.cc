/* SPDX-License-Identifier: BSD-3-Clause */
// Unit tests for adaptive busy polling (spin.c): the window follows the gaps between the moment
// the loop runs dry and the next input.
#include <gtest/gtest.h>

#include <vector>

extern "C" {
#include "spin.h"
}

namespace {

const double MAX = 0.00005; // 50 us, the default --busy-poll

// gap runs one idle period: dry at t, input at t + g. Returns whether the loop spun at first.
int gap(spin &s, double &t, double g)
{
    int spun = spin_dry(&s, t);
    spin_input(&s, t + g);
    t += g + 0.001;
    return spun;
}

} // namespace

TEST(Spin, StartsWithoutSpinning)
{
    spin s;
    spin_init(&s, MAX);
    EXPECT_EQ(spin_dry(&s, 1.0), 0);
    EXPECT_EQ(s.until, 0);
}

TEST(Spin, ShortGapsGrowTheWindowUpToTheLimit)
{
    spin s;
    spin_init(&s, MAX);
    double t = 1.0;
    EXPECT_EQ(gap(s, t, 0.00003), 0);
    EXPECT_DOUBLE_EQ(s.window, SPIN_START);
    std::vector<double> seen;
    for (int i = 0; i < 8; i++) {
        gap(s, t, 0.00004);
        seen.push_back(s.window);
    }
    EXPECT_DOUBLE_EQ(seen[0], 2 * SPIN_START);
    EXPECT_DOUBLE_EQ(seen[1], 4 * SPIN_START);
    EXPECT_DOUBLE_EQ(seen.back(), MAX) << "capped at --busy-poll";
    EXPECT_EQ(spin_dry(&s, t), 1);
    EXPECT_DOUBLE_EQ(s.until, t + MAX);
}

TEST(Spin, GapsTheWindowCoversKeepIt)
{
    spin s;
    spin_init(&s, MAX);
    s.window = 0.00002;
    double t = 1.0;
    EXPECT_EQ(gap(s, t, 0.00001), 1);
    EXPECT_DOUBLE_EQ(s.window, 0.00002);
}

TEST(Spin, LongGapsShrinkTheWindowToNothing)
{
    spin s;
    spin_init(&s, MAX);
    s.window = MAX;
    double t = 1.0;
    int periods = 0;
    while (s.window > 0 && periods < 100) {
        gap(s, t, 0.5); // an idle server: input every half second
        periods++;
    }
    EXPECT_EQ(s.window, 0);
    EXPECT_LE(periods, 5) << "halving from 50 us reaches 0 within a few idle periods";
    EXPECT_EQ(spin_dry(&s, t), 0) << "an idle server sleeps at once";
}

TEST(Spin, SpinEndsWhenTheWindowCloses)
{
    spin s;
    spin_init(&s, MAX);
    s.window = 0.00002;
    ASSERT_EQ(spin_dry(&s, 1.0), 1);
    EXPECT_EQ(spin_more(&s, 1.00001), 1);
    EXPECT_EQ(spin_dry(&s, 1.000015), 1) << "still dry, still spinning";
    EXPECT_EQ(spin_more(&s, 1.00002), 0);
    EXPECT_EQ(spin_dry(&s, 1.00003), 0) << "the same idle period does not spin again";
    spin_input(&s, 1.01); // a long gap measured from the first moment the loop ran dry
    EXPECT_DOUBLE_EQ(s.window, 0.00001);
}

TEST(Spin, InputWhileBusyChangesNothing)
{
    spin s;
    spin_init(&s, MAX);
    s.window = 0.00002;
    spin_input(&s, 5.0);
    EXPECT_DOUBLE_EQ(s.window, 0.00002);
    EXPECT_EQ(s.idle_since, 0);
}

TEST(Spin, ZeroLimitNeverSpins)
{
    spin s;
    spin_init(&s, 0);
    double t = 1.0;
    for (int i = 0; i < 10; i++)
        EXPECT_EQ(gap(s, t, 0.000001), 0);
    EXPECT_EQ(s.window, 0);
}

// ---------------------------------------------------------------- stopping when it stops paying

TEST(Spin, SpinsThatFindNothingShrinkTheWindow)
{
    spin s;
    spin_init(&s, MAX);
    s.window = MAX;
    double t = 1.0;
    // every idle period: the spin runs out, the input comes just inside --busy-poll would still
    // grow the window by the gap rule; the hit rate must win and shrink it
    int spins = 0;
    while (s.window >= MAX && spins < 100) {
        ASSERT_EQ(spin_dry(&s, t), 1);
        EXPECT_EQ(spin_more(&s, t + MAX + 0.000001), 0) << "the window closed";
        spin_input(&s, t + 10 * MAX); // too late for any window
        t += 0.001;
        spins++;
    }
    EXPECT_LT(s.window, MAX);
    EXPECT_LE(spins, 8) << "a few misses in a row are enough";
}

TEST(Spin, SpinsThatFindInputKeepTheWindow)
{
    spin s;
    spin_init(&s, MAX);
    s.window = MAX;
    double t = 1.0;
    for (int i = 0; i < 100; i++) {
        ASSERT_EQ(spin_dry(&s, t), 1);
        EXPECT_EQ(spin_more(&s, t + 0.000002), 1);
        spin_input(&s, t + 0.000004);
        t += 0.001;
    }
    EXPECT_DOUBLE_EQ(s.window, MAX);
    EXPECT_EQ(s.hit_rate, SPIN_HIT_ONE);
}

// ---------------------------------------------------------------- never while preempted

TEST(Spin, APollThatCameBackLateCalmsTheLoop)
{
    spin s;
    spin_init(&s, MAX);
    s.window = MAX;
    ASSERT_EQ(spin_dry(&s, 1.0), 1);
    EXPECT_EQ(spin_more(&s, 1.000002), 1);
    // the next poll returns 3 ms later: another process ran on our CPU meanwhile
    EXPECT_EQ(spin_more(&s, 1.003002), 0);
    EXPECT_EQ(s.preemptions, 1u);
    spin_input(&s, 1.004);
    double t = 1.005;
    // short gaps while calm: no spinning, whatever the gaps say
    while (t < 1.003002 + SPIN_CALM_MIN - 0.001)
        EXPECT_EQ(gap(s, t, 0.000002), 0) << "still calm at " << t;
    // after the back-off the window is learnt again from short gaps
    t = 1.003002 + SPIN_CALM_MIN;
    EXPECT_EQ(gap(s, t, 0.000002), 0);
    EXPECT_DOUBLE_EQ(s.window, SPIN_START);
    EXPECT_EQ(gap(s, t, 0.000002), 1);
}

TEST(Spin, ACrowdedRunQueueStopsSpinning)
{
    spin s;
    spin_init(&s, MAX);
    spin_cpus(&s, 2);
    s.window = MAX;
    EXPECT_EQ(spin_sample_due(&s, 1.0), 1);
    // quiet: one other runnable thread (the load generator) on 2 cores
    double t = 1.0;
    for (int i = 0; i < 20; i++, t += 0.001)
        spin_runnable(&s, t, 1);
    EXPECT_EQ(s.crowded, 0);
    EXPECT_EQ(spin_sample_due(&s, t - 0.0005), 0) << "at most one sample a millisecond";
    EXPECT_EQ(spin_dry(&s, t), 1);
    spin_input(&s, t + 0.000002);
    // a single busy sample is noise: the average has to get there
    spin_runnable(&s, t += 0.001, 3);
    EXPECT_EQ(s.crowded, 0);
    // busy: a CPU hog per core, plus the load generator now and then
    int samples = 1;
    while (!s.crowded && samples < 100) {
        spin_runnable(&s, t += 0.001, samples % 2 ? 2 : 3);
        samples++;
    }
    EXPECT_EQ(s.crowded, 1);
    EXPECT_LE(samples, 4) << "a few milliseconds of a full run queue are enough";
    EXPECT_EQ(spin_dry(&s, t += 0.0001), 0) << "no spin while crowded";
    // gaps seen while crowded teach nothing
    double w = s.window;
    spin_input(&s, t + 0.00001);
    EXPECT_DOUBLE_EQ(s.window, w);
    // the hogs end: spinning resumes within a few samples, with the window it had
    samples = 0;
    while (s.crowded && samples < 100) {
        spin_runnable(&s, t += 0.001, 0);
        samples++;
    }
    EXPECT_LE(samples, 4);
    EXPECT_EQ(spin_dry(&s, t += 0.0001), 1);
}

TEST(Spin, OneCoreSpinsOnlyWhenNothingElseRuns)
{
    spin s;
    spin_init(&s, MAX);
    spin_cpus(&s, 1);
    s.window = MAX;
    double t = 1.0;
    for (int i = 0; i < 10; i++)
        spin_runnable(&s, t += 0.001, 1);
    EXPECT_EQ(s.crowded, 1) << "on one core a spin always takes it from the other thread";
    for (int i = 0; i < 10; i++)
        spin_runnable(&s, t += 0.001, 0);
    EXPECT_EQ(s.crowded, 0);
}

TEST(Spin, PreemptedAgainAndAgainTheBackOffGrowsThenShrinks)
{
    spin s;
    spin_init(&s, MAX);
    spin_cpus(&s, 2);
    double t = 1.0;
    // every spin is cut short by a lost time slice: the back-off doubles up to SPIN_CALM_MAX
    for (int i = 0; i < 20; i++) {
        s.window = MAX;
        t = s.calm_until > t ? s.calm_until : t;
        ASSERT_EQ(spin_dry(&s, t), 1);
        EXPECT_EQ(spin_more(&s, t + 0.004), 0);
        spin_input(&s, t + 0.0041);
        t += 0.005;
    }
    EXPECT_EQ(s.preemptions, 20u);
    EXPECT_DOUBLE_EQ(s.calm, SPIN_CALM_MAX);
    // undisturbed: one halving per stretch as long as the back-off, down to SPIN_CALM_MIN
    double calm_before = s.calm;
    t = s.calm_until;
    const double stretch_end = s.calm_until + calm_before;
    while (t + 0.001 < stretch_end - 0.0005)
        spin_runnable(&s, t += 0.001, 0);
    EXPECT_DOUBLE_EQ(s.calm, calm_before) << "not yet: undisturbed for less than the back-off";
    spin_runnable(&s, t = stretch_end + 0.0001, 0);
    EXPECT_DOUBLE_EQ(s.calm, calm_before / 2);
    for (int i = 0; i < 200000 && s.calm > SPIN_CALM_MIN; i++)
        spin_runnable(&s, t += 0.001, 0);
    EXPECT_DOUBLE_EQ(s.calm, SPIN_CALM_MIN);
}

TEST(Spin, OffNeverSamples)
{
    spin s;
    spin_init(&s, 0);
    EXPECT_EQ(spin_sample_due(&s, 5.0), 0);
}

TEST(Spin, RepliesWaitLongerWhileCrowded)
{
    spin s;
    spin_init(&s, MAX);
    spin_cpus(&s, 2);
    double t = 1.0;
    for (int i = 0; i < 20; i++, t += 0.001)
        spin_runnable(&s, t, 1);
    ASSERT_EQ(s.crowded, 0);
    EXPECT_DOUBLE_EQ(spin_batch(&s, 0.0002), 0.0002) << "quiet: --reply-batch as given";
    for (int i = 0; i < 20; i++, t += 0.001)
        spin_runnable(&s, t, 3);
    ASSERT_EQ(s.crowded, 1);
    EXPECT_DOUBLE_EQ(spin_batch(&s, 0.0002), SPIN_CROWDED_BATCH) << "crowded: at least 1 ms";
    EXPECT_DOUBLE_EQ(spin_batch(&s, 0.5), 0.5) << "a longer batch is kept";
    EXPECT_DOUBLE_EQ(spin_batch(&s, 0), 0) << "--reply-batch=0 stays off";
    for (int i = 0; i < 40; i++, t += 0.001)
        spin_runnable(&s, t, 0);
    ASSERT_EQ(s.crowded, 0);
    EXPECT_DOUBLE_EQ(spin_batch(&s, 0.0002), 0.0002) << "back to the given batch once quiet";
}
