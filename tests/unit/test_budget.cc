/* SPDX-License-Identifier: BSD-3-Clause */
// Unit tests for the global buffer budget (--max-buffer-memory): the running total of what all
// peers' input buffers and output queues hold, shedding the worst connections when it is passed,
// the reply quota that makes pipelined input take turns, and WORK_STATUS coalescing for clients
// that do not read (outq_put_slot).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <unistd.h>

#include "fake_shell.h"
#include "options.h"

extern "C" {
#include "job.h"
#include "outq.h"
}

using std::string;

namespace {

// contents returns everything queued in q without consuming it.
string contents(const outq *q)
{
    string out;
    iovec iov[64];
    int n = outq_iov(q, iov, 64);
    for (int i = 0; i < n; i++)
        out.append((char *)iov[i].iov_base, iov[i].iov_len);
    return out;
}

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

string join3(const string &a, const string &b, const string &c)
{
    return a + string(1, '\0') + b + string(1, '\0') + c;
}

} // namespace

TEST(OutqSlot, ReplacesTheLastUnsentSlotInPlace)
{
    outq q = {};
    uint64_t t = 0;
    ASSERT_EQ(outq_put(&q, "head", 4), 0);
    EXPECT_EQ(outq_put_slot(&q, "s1", 2, &t), 0);
    EXPECT_NE(t, 0u);
    EXPECT_EQ(outq_put_slot(&q, "status2", 7, &t), 1) << "the unsent slot is replaced";
    EXPECT_EQ(outq_pending(&q), 11u);
    EXPECT_EQ(contents(&q), "headstatus2");
    EXPECT_EQ(q.count, 2u) << "replaced in place, no new segment";
    outq_clear(&q);
}

TEST(OutqSlot, EmptiedSlotKeepsOrderOfWhatFollows)
{
    outq q = {};
    uint64_t t = 0;
    ASSERT_EQ(outq_put_slot(&q, "S1", 2, &t), 0);
    ASSERT_EQ(outq_put(&q, "data", 4), 0);
    EXPECT_EQ(outq_put_slot(&q, "S2", 2, &t), 1);
    EXPECT_EQ(contents(&q), "dataS2");
    EXPECT_EQ(outq_pending(&q), 6u);
    outq_consume(&q, 4);
    EXPECT_EQ(contents(&q), "S2");
    outq_consume(&q, 2);
    EXPECT_EQ(q.count, 0u);
    EXPECT_EQ(q.seg, nullptr) << "an empty queue holds no memory";
}

TEST(OutqSlot, PartlyWrittenOrSentSlotIsNotReplaced)
{
    outq q = {};
    uint64_t t = 0;
    ASSERT_EQ(outq_put_slot(&q, "AAAA", 4, &t), 0);
    outq_consume(&q, 1); // the socket took a byte of it: it must be finished
    EXPECT_EQ(outq_put_slot(&q, "BB", 2, &t), 0);
    EXPECT_EQ(contents(&q), "AAABB");
    outq_consume(&q, 5); // all sent: the ticket names nothing queued any more
    ASSERT_EQ(outq_put(&q, "x", 1), 0);
    EXPECT_EQ(outq_put_slot(&q, "CC", 2, &t), 0);
    EXPECT_EQ(contents(&q), "xCC");
    outq_clear(&q);
    ASSERT_EQ(outq_put(&q, "y", 1), 0);
    EXPECT_EQ(outq_put_slot(&q, "DD", 2, &t), 0) << "a ticket from before a clear names nothing";
    EXPECT_EQ(contents(&q), "yDD");
    outq_clear(&q);
}

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

TEST_F(BudgetTest, StatusToAClientThatDoesNotReadIsCoalesced)
{
    peer *w = f.connect();
    peer *c = f.connect();
    ASSERT_EQ(FakeShell::feed(w, FakeShell::req(CMD_CAN_DO, "f")), 0);
    ASSERT_EQ(FakeShell::feed(c, FakeShell::req(CMD_SUBMIT_JOB, join3("f", "u", "payload"))), 0);
    take(w);
    ASSERT_EQ(FakeShell::feed(w, FakeShell::req(CMD_GRAB_JOB, "")), 0);
    string assign = take(w);
    ASSERT_GT(assign.size(), 12u);
    string created = take(c);
    string handle = created.substr(12);
    // reading client: every status arrives
    for (int i = 1; i <= 3; i++)
        ASSERT_EQ(FakeShell::feed(w, FakeShell::req(CMD_WORK_STATUS,
                                                    join3(handle, std::to_string(i), "1000"))),
                  0);
    string got = take(c);
    EXPECT_EQ(got.size(), 3 * (12 + handle.size() + 2 + 1 + 4));
    // the client stops reading: one WORK_DATA is queued, then 1000 statuses
    c->flags |= PEER_BLOCKED;
    ASSERT_EQ(FakeShell::feed(w, FakeShell::req(CMD_WORK_DATA, handle + string(1, '\0') + "d")),
              0);
    size_t before = outq_pending(&c->out);
    for (int i = 1; i <= 1000; i++)
        ASSERT_EQ(FakeShell::feed(w, FakeShell::req(CMD_WORK_STATUS,
                                                    join3(handle, std::to_string(i), "1000"))),
                  0);
    EXPECT_EQ(outq_pending(&c->out), before + 12 + handle.size() + 2 + 4 + 4)
        << "only the latest status is held";
    EXPECT_LE(c->out.count, 4u);
    EXPECT_EQ(f.eng.stats.status_coalesced, 999u);
    ASSERT_EQ(FakeShell::feed(w, FakeShell::req(CMD_WORK_COMPLETE, handle + string(1, '\0') + "r")),
              0);
    string rest = take(c);
    string expect = FakeShell::res(CMD_WORK_DATA, handle + string(1, '\0') + "d") +
                    FakeShell::res(CMD_WORK_STATUS, join3(handle, "1000", "1000")) +
                    FakeShell::res(CMD_WORK_COMPLETE, handle + string(1, '\0') + "r");
    EXPECT_EQ(rest, expect) << "data, then the latest status, then the result, in order";
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
    options_defaults(c);
    int rc = options_parse(c, (int)args.size(), argv.data(), buf, sizeof buf, stdout);
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
    ASSERT_EQ(session_feed(p, in.data(), in.size()), 0); // (FakeShell::feed would run it all)
    EXPECT_TRUE(p->flags & PEER_DEFERRED) << "input stops once the replies pass the quota";
    size_t first = outq_pending(&p->out);
    EXPECT_GT(first, (size_t)PEER_OUTPUT_QUOTA);
    EXPECT_LE(first, (size_t)PEER_OUTPUT_QUOTA + 10012 + 10012);
    EXPECT_EQ(buf_len(&p->in) + (first / 10012) * e10k.size(), in.size())
        << "the rest is kept, nothing is lost";
    string out = take(p);
    int turns = 1;
    while (p->flags & PEER_DEFERRED) {
        ASSERT_EQ(session_process(p), 0); // the shell's next loop iteration
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

TEST_F(BudgetTest, PipelinedCheapRequestsStopAtTheInputQuotaAndResume)
{
    peer *p = f.connect();
    string echo = FakeShell::req(CMD_ECHO_REQ, "e");
    string reply = FakeShell::res(CMD_ECHO_RES, "e");
    const unsigned n = 3 * PEER_INPUT_QUOTA + 7; // small replies: only the input quota stops it
    string in;
    for (unsigned i = 0; i < n; i++)
        in += echo;
    ASSERT_EQ(session_feed(p, in.data(), in.size()), 0);
    EXPECT_TRUE(p->flags & PEER_DEFERRED) << "one turn handles at most PEER_INPUT_QUOTA requests";
    EXPECT_EQ(outq_pending(&p->out), PEER_INPUT_QUOTA * reply.size());
    EXPECT_EQ(buf_len(&p->in), (n - PEER_INPUT_QUOTA) * echo.size()) << "the rest is kept";
    string out = take(p);
    int turns = 1;
    while (p->flags & PEER_DEFERRED) {
        ASSERT_EQ(session_process(p), 0);
        out += take(p);
        ASSERT_LE(++turns, 10);
    }
    EXPECT_EQ(turns, 4);
    EXPECT_EQ(buf_len(&p->in), 0u);
    string want;
    for (unsigned i = 0; i < n; i++)
        want += reply;
    EXPECT_EQ(out, want) << "every reply, in order";

    // admin lines count the same way
    string lines;
    for (unsigned i = 0; i < PEER_INPUT_QUOTA + 1; i++)
        lines += "version\n";
    ASSERT_EQ(session_feed(p, lines.data(), lines.size()), 0);
    EXPECT_TRUE(p->flags & PEER_DEFERRED);
    EXPECT_EQ(buf_len(&p->in), strlen("version\n"));
    ASSERT_EQ(session_process(p), 0);
    EXPECT_FALSE(p->flags & PEER_DEFERRED);
    EXPECT_EQ(buf_len(&p->in), 0u);
}
