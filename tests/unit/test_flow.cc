// SPDX-License-Identifier: BSD-3-Clause
// flow: flow control without sockets. The settings' text, and a property test: random submits,
// grabs, completions, failures, disconnects, cancels, clock steps and limit changes, with the
// engine's invariant check (flow's own included: a function held back exactly when its limits
// say, never more running than its concurrency limit, keys' queues and rings consistent) after
// every step.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "fake_shell.h"

extern "C" {
#include "flow.h"
#include "func.h"
#include "job.h"
#include "proto.h"
}

namespace {

TEST(FlowSpec, ParsesAndFormatsTheSettings)
{
    flow_settings s;
    flow_defaults(&s);
    char err[256], out[256];
    const std::string spec = "concurrency=3,rate=50/s,key-concurrency=1,key-rate=10/m,weight=2,paused=1";
    ASSERT_EQ(flow_parse_spec(spec.data(), spec.size(), &s, err, sizeof err), 0) << err;
    EXPECT_EQ(s.concurrency, 3u);
    EXPECT_EQ(s.rate.count, 50u);
    EXPECT_EQ(s.rate.unit, 1u);
    EXPECT_EQ(s.key_rate.unit, 60u);
    EXPECT_EQ(s.weight, 2u);
    EXPECT_EQ(s.paused, 1);
    flow_format_spec(&s, out, sizeof out);
    EXPECT_EQ(std::string(out), spec);
    for (const char *bad : {"concurrency", "concurrency=x", "rate=5", "rate=5/d", "rate=0/s",
                            "weight=0", "speed=1", "concurrency=1000001", "paused=2"}) {
        flow_settings t;
        flow_defaults(&t);
        EXPECT_EQ(flow_parse_spec(bad, strlen(bad), &t, err, sizeof err), -1) << bad;
    }
    flow_defaults(&s);
    EXPECT_EQ(flow_format_spec(&s, out, sizeof out), 0u);
}

struct FlowShell : FakeShell {
    void check(int step)
    {
        char err[256] = "";
        ASSERT_EQ(engine_check(&eng, err, sizeof err), 0) << "step " << step << ": " << err;
    }
    std::string admin(peer *p, const std::string &line)
    {
        feed(p, line + "\r\n");
        return take(p);
    }
};

// job handles assigned to a worker, read from its output
std::vector<std::string> assigned(const std::string &out)
{
    std::vector<std::string> hs;
    size_t i = 0;
    while (i + 12 <= out.size()) {
        uint32_t cmd = proto_get32((const unsigned char *)out.data() + i + 4);
        uint32_t len = proto_get32((const unsigned char *)out.data() + i + 8);
        if (cmd == 31 /* JOB_ASSIGN_UNIQ */) {
            std::string body = out.substr(i + 12, len);
            hs.push_back(body.substr(0, body.find('\0')));
        }
        i += 12 + len;
    }
    return hs;
}

TEST(Flow, RandomTrafficKeepsTheLimitsAndTheInvariants)
{
    FlowShell s;
    s.start();
    std::mt19937 rnd(getenv("FLOW_SEED") ? (unsigned)atoi(getenv("FLOW_SEED")) : 30u);
    peer *a = s.connect(), *c = s.connect();
    ASSERT_EQ(s.admin(a, "limit F concurrency 2"), "OK\r\n");
    ASSERT_EQ(s.admin(a, "limit K key-concurrency 1"), "OK\r\n");
    ASSERT_EQ(s.admin(a, "limit K key-rate 5/s"), "OK\r\n");
    ASSERT_EQ(s.admin(a, "limit R rate 3/s"), "OK\r\n");
    ASSERT_EQ(s.admin(a, "weight F 3"), "OK\r\n");
    const char *funcs[] = {"F", "K", "R", "P"};
    std::vector<peer *> ws;
    std::map<peer *, std::vector<std::string>> held;
    auto new_worker = [&]() {
        peer *w = s.connect();
        for (const char *f : funcs)
            FakeShell::feed(w, FakeShell::req(1 /* CAN_DO */, f));
        return w;
    };
    for (int i = 0; i < 6; i++)
        ws.push_back(new_worker());
    for (int step = 0; step < 4000; step++) {
        int act = (int)(rnd() % 100);
        peer *w = ws[rnd() % ws.size()];
        if (getenv("FLOW_TRACE"))
            fprintf(stderr, "step %d act %d\n", step, act);
        if (act < 30) {
            std::string f = funcs[rnd() % 4];
            std::string u = "k" + std::to_string(rnd() % 7) + ":" + std::to_string(step);
            uint32_t cmd = (rnd() % 3) == 0 ? 34 /* SUBMIT_JOB_LOW_BG */ : 18 /* _BG */;
            FakeShell::feed(c, FakeShell::req(cmd, f + std::string(1, '\0') + u +
                                                   std::string(1, '\0') + "x"));
        } else if (act < 60) {
            FakeShell::feed(w, FakeShell::req(30 /* GRAB_JOB_UNIQ */, ""));
            for (auto &h : assigned(FakeShell::take(w)))
                held[w].push_back(h);
        } else if (act < 75 && !held[w].empty()) {
            std::string h = held[w].back();
            held[w].pop_back();
            uint32_t cmd = (rnd() % 4) == 0 ? 14 /* WORK_FAIL */ : 13 /* WORK_COMPLETE */;
            FakeShell::feed(w, FakeShell::req(cmd, cmd == 14 ? h : h + std::string(1, '\0')));
        } else if (act < 79) {
            s.disconnect(w); // its jobs go back to their queues
            held.erase(w);
            for (auto &x : ws)
                if (x == w)
                    x = new_worker();
        } else if (act < 82 && !held[w].empty()) {
            s.admin(a, "cancel job " + held[w].back());
        } else if (act < 90) {
            s.clock += (rnd() % 500) / 1000.0;
            engine_run_timers(&s.eng, s.clock);
        } else if (act < 92) {
            s.admin(a, (rnd() % 2) ? "pause P" : "resume P");
        } else if (act < 95) {
            s.admin(a, "limit F concurrency " + std::to_string(rnd() % 4));
        } else if (act < 97) {
            s.admin(a, (rnd() % 2) ? "limit K key-concurrency " + std::to_string(rnd() % 3)
                                   : "limit K off");
        } else {
            s.admin(a, "limit R rate " + std::to_string(rnd() % 5) + "/s");
        }
        engine_drain_ready(&s.eng);
        for (peer *x : ws)
            FakeShell::take(x);
        FakeShell::take(c);
        s.check(step);
        if (::testing::Test::HasFatalFailure())
            return;
    }
}

TEST(Flow, KeysTakeTurnsWithinAPriority)
{
    FlowShell s;
    s.start();
    peer *a = s.connect(), *c = s.connect(), *w = s.connect();
    ASSERT_EQ(s.admin(a, "limit K key-concurrency 5"), "OK\r\n");
    for (int i = 0; i < 6; i++)
        FakeShell::feed(c, FakeShell::req(18, std::string("K\0big:", 6) + std::to_string(i) +
                                                  std::string(1, '\0') + "x"));
    for (int i = 0; i < 2; i++)
        FakeShell::feed(c, FakeShell::req(18, std::string("K\0small:", 8) + std::to_string(i) +
                                                  std::string(1, '\0') + "x"));
    FakeShell::feed(w, FakeShell::req(1, "K"));
    std::vector<std::string> order;
    for (int i = 0; i < 8; i++) {
        FakeShell::feed(w, FakeShell::req(30, ""));
        std::string out = FakeShell::take(w);
        auto hs = assigned(out);
        ASSERT_EQ(hs.size(), 1u) << i;
        size_t u = out.find("K", 12 + hs[0].size()) + 2;
        order.push_back(out.substr(u, out.find('\0', u) - u));
        std::string h = hs[0];
        FakeShell::feed(w, FakeShell::req(13, h + std::string(1, '\0')));
        s.check(i);
    }
    EXPECT_EQ(order, (std::vector<std::string>{"big:0", "small:0", "big:1", "small:1", "big:2",
                                               "big:3", "big:4", "big:5"}));
}

} // namespace
