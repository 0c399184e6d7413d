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
