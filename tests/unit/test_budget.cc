/* SPDX-License-Identifier: BSD-3-Clause */
// Unit tests for the global buffer budget (--max-buffer-memory): the running total of what all
// peers' input buffers and output queues hold, shedding the worst connections when it is passed,
// and the reply quota that makes pipelined input take turns.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <unistd.h>

#include "fake_shell.h"

extern "C" {
#include "outq.h"
}

using std::string;

namespace {

// held_sum adds up every peer's share, which must equal the engine's total.
size_t held_sum(FakeShell &f)
{
    size_t sum = 0;
    for (auto &p : f.peers)
        if (p->eng != nullptr)
            sum += p->held;
    return sum;
}

// take reads everything queued for p, as a flush would, and accounts for it as conn_flush does.
string take(peer *p)
{
    string out = FakeShell::take(p);
    peer_account(p);
    return out;
}

} // namespace

class BudgetTest : public ::testing::Test {
  protected:
    FakeShell f;
    void SetUp() override
    {
        f.cfg.job_handle_prefix = strdup("H:t");
        f.cfg.grab_wait = 0;
        f.start();
    }
    void TearDown() override { EXPECT_EQ(held_sum(f), f.eng.buffered); }
};

TEST_F(BudgetTest, TotalFollowsInputAndOutput)
{
    peer *a = f.connect();
    peer *b = f.connect();
    string echo = FakeShell::req(CMD_ECHO_REQ, string(5000, 'e'));
    ASSERT_EQ(FakeShell::feed(a, echo), 0);
    EXPECT_EQ(f.eng.buffered, outq_pending(&a->out));
    ASSERT_EQ(FakeShell::feed(b, echo.substr(0, 100)), 0); // a partial packet is held
    EXPECT_EQ(b->held, b->in.cap);
    EXPECT_GE(b->held, 100u);
    EXPECT_EQ(f.eng.buffered, a->held + b->held);
    take(a);
    EXPECT_EQ(f.eng.buffered, b->held);
    ASSERT_EQ(FakeShell::feed(b, echo.substr(100)), 0);
    EXPECT_EQ(b->in.cap, 0u) << "the finished packet's buffer is freed";
    EXPECT_EQ(f.eng.buffered, outq_pending(&b->out));
    f.disconnect(b);
    EXPECT_EQ(f.eng.buffered, 0u);
    EXPECT_EQ(f.eng.stats.shed, 0u);
}

TEST_F(BudgetTest, OverBudgetShedsTheLargestAndKeepsServingTheRest)
{
    f.cfg.max_buffer_memory = 64 * 1024;
    peer *big = f.connect();
    peer *small = f.connect();
    peer *probe = f.connect();
    string e10k = FakeShell::req(CMD_ECHO_REQ, string(10000, 'b'));
    for (int i = 0; i < 4; i++)
        ASSERT_EQ(FakeShell::feed(big, e10k), 0); // 40 KB unread
    ASSERT_EQ(FakeShell::feed(small, e10k), 0);   // 10 KB unread
    EXPECT_TRUE(f.closed.empty());
    ASSERT_EQ(FakeShell::feed(small, e10k), 0);   // 20 KB
    EXPECT_TRUE(f.closed.empty());
    ASSERT_EQ(FakeShell::feed(probe, e10k), 0);   // 70 KB in all: over
    EXPECT_EQ(f.closed.count(big), 1u) << "the largest holder is shed";
    EXPECT_EQ(f.closed.count(small), 0u);
    EXPECT_EQ(f.closed.count(probe), 0u);
    EXPECT_EQ(f.eng.stats.shed, 1u);
    EXPECT_GE(f.eng.stats.shed_bytes, 40000u);
    EXPECT_LE(f.eng.buffered, f.cfg.max_buffer_memory);
    EXPECT_EQ(big->held, 0u) << "a closing peer no longer counts";
    take(probe);
    ASSERT_EQ(FakeShell::feed(probe, FakeShell::req(CMD_ECHO_REQ, "ok")), 0);
    EXPECT_EQ(take(probe), FakeShell::res(CMD_ECHO_RES, "ok"));
}

TEST_F(BudgetTest, ConnectionThatDoesNotReadIsShedBeforeALargerReader)
{
    f.cfg.max_buffer_memory = 64 * 1024;
    peer *stuck = f.connect();
    peer *reader = f.connect();
    string e10k = FakeShell::req(CMD_ECHO_REQ, string(10000, 's'));
    ASSERT_EQ(FakeShell::feed(stuck, e10k), 0);
    stuck->flags |= PEER_BLOCKED; // its socket refused more output
    for (int i = 0; i < 5; i++)
        ASSERT_EQ(FakeShell::feed(reader, e10k), 0);
    ASSERT_EQ(FakeShell::feed(reader, e10k), 0); // 70 KB: over
    EXPECT_EQ(f.closed.count(stuck), 1u);
    EXPECT_EQ(f.closed.count(reader), 0u) << "not while a connection that does not read exists";
}

TEST_F(BudgetTest, PartialBigPacketCountsAndIsShed)
{
    f.cfg.max_buffer_memory = 256 * 1024;
    peer *partial = f.connect();
    peer *probe = f.connect();
    string big = FakeShell::req(CMD_ECHO_REQ, string(1 << 20, 'p'));
    size_t off = 0;
    while (off < big.size() && f.closed.empty()) {
        size_t n = std::min<size_t>(65536, big.size() - off);
        FakeShell::feed(partial, big.substr(off, n));
        off += n;
        ASSERT_EQ(FakeShell::feed(probe, FakeShell::req(CMD_ECHO_REQ, "x")), 0);
        take(probe);
    }
    EXPECT_EQ(f.closed.count(partial), 1u) << "the holder of the partial packet is shed";
    EXPECT_LT(off, big.size());
    EXPECT_EQ(f.closed.count(probe), 0u);
    EXPECT_EQ(f.eng.stats.shed, 1u);
}

TEST_F(BudgetTest, BudgetZeroIsOff)
{
    f.cfg.max_buffer_memory = 0;
    peer *a = f.connect();
    string e10k = FakeShell::req(CMD_ECHO_REQ, string(10000, 'z'));
    for (int i = 0; i < 20; i++)
        ASSERT_EQ(FakeShell::feed(a, e10k), 0);
    EXPECT_TRUE(f.closed.empty());
    EXPECT_EQ(f.eng.buffered, outq_pending(&a->out));
}

namespace {

// parse_args runs config_parse on the arguments; returns its result, the error in *err.
int parse_args(config *c, std::vector<string> args, string *err)
{
    args.insert(args.begin(), "spurd");
    std::vector<char *> argv;
    for (auto &a : args)
        argv.push_back(&a[0]);
    argv.push_back(nullptr);
    char buf[512] = "";
    config_defaults(c);
    int rc = config_parse(c, (int)args.size(), argv.data(), buf, sizeof buf, stdout);
    *err = buf;
    return rc;
}

} // namespace

TEST(BudgetConfig, DefaultIsAQuarterOfMemoryAtLeast256M)
{
    config c;
    string err;
    ASSERT_EQ(parse_args(&c, {}, &err), 0) << err;
    EXPECT_EQ(c.max_buffer_memory, config_default_buffer_memory());
    EXPECT_GE(c.max_buffer_memory, (size_t)256 << 20);
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0 && (size_t)pages * (size_t)page / 4 > ((size_t)256 << 20)) {
        EXPECT_EQ(c.max_buffer_memory, (size_t)pages * (size_t)page / 4);
    }
    config_free(&c);
}

TEST(BudgetConfig, SuffixesZeroAndTheMinimum)
{
    config c;
    string err;
    ASSERT_EQ(parse_args(&c, {"--max-packet-size=1M", "--max-buffer-memory=8M"}, &err), 0) << err;
    EXPECT_EQ(c.max_buffer_memory, (size_t)8 << 20);
    config_free(&c);
    ASSERT_EQ(parse_args(&c, {"--max-buffer-memory=0"}, &err), 0) << err;
    EXPECT_EQ(c.max_buffer_memory, 0u) << "0 turns the global bound off";
    config_free(&c);
    EXPECT_EQ(parse_args(&c, {"--max-packet-size=1M", "--max-buffer-memory=2M"}, &err), -1);
    EXPECT_NE(err.find("--max-buffer-memory"), string::npos) << err;
    config_free(&c);
    EXPECT_EQ(parse_args(&c, {"--max-buffer-memory=lots"}, &err), -1);
    config_free(&c);
    // the default follows a packet size that needs more
    ASSERT_EQ(parse_args(&c, {"--max-packet-size=4G"}, &err), -1) << "max-output is too small";
    config_free(&c);
    ASSERT_EQ(parse_args(&c, {"--max-packet-size=1G", "--max-output-buffer=2G"}, &err), 0) << err;
    EXPECT_GE(c.max_buffer_memory, (size_t)2 << 30);
    config_free(&c);
}

TEST_F(BudgetTest, PipelinedRequestsStopAtTheOutputQuotaAndResume)
{
    peer *p = f.connect();
    string e10k = FakeShell::req(CMD_ECHO_REQ, string(10000, 'q'));
    string in;
    for (int i = 0; i < 60; i++) // 600 KB of replies asked for in one read: several turns
        in += e10k;
    ASSERT_EQ(peer_feed(p, in.data(), in.size()), 0); // (FakeShell::feed would run it all)
    EXPECT_TRUE(p->flags & PEER_DEFERRED) << "input stops once the replies pass the quota";
    size_t first = outq_pending(&p->out);
    EXPECT_GT(first, (size_t)PEER_OUTPUT_QUOTA);
    EXPECT_LE(first, (size_t)PEER_OUTPUT_QUOTA + 10012 + 10012);
    EXPECT_EQ(buf_len(&p->in) + (first / 10012) * e10k.size(), in.size())
        << "the rest is kept, nothing is lost";
    string out = take(p);
    int turns = 1;
    while (p->flags & PEER_DEFERRED) {
        ASSERT_EQ(peer_process(p), 0); // the shell's next loop iteration
        out += take(p);
        turns++;
        ASSERT_LE(turns, 60); // at least one request per turn
    }
    EXPECT_GE(turns, 3);
    EXPECT_EQ(buf_len(&p->in), 0u);
    string want;
    for (int i = 0; i < 60; i++)
        want += FakeShell::res(CMD_ECHO_RES, string(10000, 'q'));
    EXPECT_EQ(out, want) << "every reply, in order";
}
