/* SPDX-License-Identifier: BSD-3-Clause */
// Unit tests for a session (a connection's input side): the protocol table and sniffing at each
// packet boundary, holding input back while replies wait, the held-GRAB release on any input,
// teardown fan-out and session_check. Driven with bytes through the fake shell, no sockets.
#include <gtest/gtest.h>

#include "fake_shell.h"

extern "C" {
#include "func.h"
#include "job.h"
#include "spur_config.h"
#include "worker.h"
}

using std::string;

namespace {

string nul_join(std::initializer_list<string> parts)
{
    string s;
    bool first = true;
    for (const string &p : parts) {
        if (!first)
            s.push_back('\0');
        s += p;
        first = false;
    }
    return s;
}

const char *sniff(const string &bytes, int *need_more)
{
    const session_proto *sp = session_sniff(bytes.data(), bytes.size(), need_more);
    return sp ? sp->name : nullptr;
}

} // namespace

class SessionTest : public ::testing::Test {
  protected:
    FakeShell f;
    void SetUp() override
    {
        f.cfg.job_handle_prefix = strdup("H:t");
        f.start();
    }
    void TearDown() override
    {
        char err[256];
        EXPECT_EQ(engine_check(&f.eng, err, sizeof err), 0) << err;
        EXPECT_EQ(session_check(&f.eng, err, sizeof err), 0) << err;
    }
};

TEST(SessionTable, BinaryFirstThenTextThenEnd)
{
    size_t n = 0;
    while (session_protos[n].name != nullptr) {
        EXPECT_NE(session_protos[n].match, nullptr) << session_protos[n].name;
        EXPECT_NE(session_protos[n].frame, nullptr) << session_protos[n].name;
        n++;
    }
    ASSERT_EQ(n, 2u);
    EXPECT_STREQ(session_protos[0].name, "binary");
    EXPECT_STREQ(session_protos[1].name, "text");
}

TEST(SessionTable, FirstByteChoosesTheProtocol)
{
    int more = -1;
    EXPECT_STREQ(sniff(string("\0", 1), &more), "binary");
    EXPECT_EQ(more, 0);
    EXPECT_STREQ(sniff(string("\0REQ\0\0\0\x10", 8), &more), "binary");
    EXPECT_STREQ(sniff(string("\0RES", 4), &more), "binary") << "wrong magic is binary's answer";
    EXPECT_STREQ(sniff(string("\0XYZ", 4), &more), "binary") << "bad magic is binary's answer";
    EXPECT_STREQ(sniff("v", &more), "text");
    EXPECT_STREQ(sniff("version\r\n", &more), "text");
    EXPECT_STREQ(sniff("GET / HTTP/1.0\r\n", &more), "text") << "no HTTP entry yet";
    EXPECT_STREQ(sniff("\x16\x03\x01", &more), "text") << "no TLS entry yet";
    EXPECT_STREQ(sniff(string("\n", 1), &more), "text");
    EXPECT_EQ(more, 0);
}

TEST_F(SessionTest, ProtocolsMixedOnOneConnectionAnsweredInOrder)
{
    peer *p = f.connect();
    string in = "version\n" + FakeShell::req(CMD_ECHO_REQ, "a") + "version\r\n" +
                FakeShell::req(CMD_ECHO_REQ, "b");
    ASSERT_EQ(FakeShell::feed(p, in), 0);
    EXPECT_EQ(FakeShell::take(p), "OK " PACKAGE_VERSION "\n" + FakeShell::res(CMD_ECHO_RES, "a") +
                                      "OK " PACKAGE_VERSION "\n" +
                                      FakeShell::res(CMD_ECHO_RES, "b"));
    EXPECT_EQ(f.eng.stats.lines, 2u);
    EXPECT_EQ(f.eng.stats.packets, 2u);
}

TEST_F(SessionTest, EverySplitOfAMixedStreamGivesTheSameReplies)
{
    string in = FakeShell::req(CMD_ECHO_REQ, "x") + "version\n" + FakeShell::req(CMD_ECHO_REQ, "");
    string want = FakeShell::res(CMD_ECHO_RES, "x") + "OK " PACKAGE_VERSION "\n" +
                  FakeShell::res(CMD_ECHO_RES, "");
    for (size_t cut = 0; cut <= in.size(); cut++) {
        peer *p = f.connect();
        ASSERT_EQ(FakeShell::feed(p, in.substr(0, cut)), 0);
        ASSERT_EQ(FakeShell::feed(p, in.substr(cut)), 0);
        EXPECT_EQ(FakeShell::take(p), want) << "cut at " << cut;
        EXPECT_EQ(buf_len(&p->in), 0u);
        f.disconnect(p);
    }
}

TEST_F(SessionTest, BadMagicClosesOnlyThatConnection)
{
    peer *bad = f.connect();
    peer *good = f.connect();
    EXPECT_EQ(FakeShell::feed(bad, "version\n" + string("\0XYZ", 4)), -1);
    EXPECT_TRUE(f.closed.count(bad));
    EXPECT_EQ(FakeShell::take(bad), "OK " PACKAGE_VERSION "\n") << "the line before still answered";
    ASSERT_EQ(FakeShell::feed(good, FakeShell::req(CMD_ECHO_REQ, "ok")), 0);
    EXPECT_EQ(FakeShell::take(good), FakeShell::res(CMD_ECHO_RES, "ok"));
    EXPECT_FALSE(f.closed.count(good));
}

// A worker's held GRAB (--grab-wait) is answered with NO_JOB as soon as any input arrives from
// it, binary or text, before that input is handled.
TEST_F(SessionTest, HeldGrabReleasedByAnyInput)
{
    for (const string &next : {string("version\n"), FakeShell::req(CMD_ECHO_REQ, "e")}) {
        peer *w = f.connect();
        ASSERT_EQ(FakeShell::feed(w, FakeShell::req(CMD_CAN_DO, "f")), 0);
        ASSERT_EQ(FakeShell::feed(w, FakeShell::req(CMD_GRAB_JOB, "")), 0);
        ASSERT_EQ(FakeShell::take(w), "") << "the GRAB is held";
        ASSERT_NE(w->worker, nullptr);
        EXPECT_TRUE(w->worker->held);
        ASSERT_EQ(FakeShell::feed(w, next), 0);
        string out = FakeShell::take(w);
        string no_job = FakeShell::res(CMD_NO_JOB, "");
        ASSERT_GE(out.size(), no_job.size());
        EXPECT_EQ(out.substr(0, no_job.size()), no_job) << "NO_JOB first";
        EXPECT_GT(out.size(), no_job.size()) << "then the input's own reply";
        EXPECT_FALSE(w->worker->held);
        f.disconnect(w);
    }
}

// While the store replays, submits wait (PEER_WAIT_REPLAY) but admin lines and other packets
// before them are answered; the submit is handled once the replay is over.
TEST_F(SessionTest, SubmitWaitsForReplayButAdminLinesAnswer)
{
    peer *c = f.connect();
    f.eng.replaying = 1;
    string submit = FakeShell::req(CMD_SUBMIT_JOB_BG, nul_join({"f", "u", "x"}));
    ASSERT_EQ(FakeShell::feed(c, "version\n" + submit + "version\n"), 0);
    EXPECT_EQ(FakeShell::take(c), "OK " PACKAGE_VERSION "\n");
    EXPECT_TRUE(c->flags & PEER_WAIT_REPLAY);
    EXPECT_EQ(buf_len(&c->in), submit.size() + 8) << "the submit and what follows are kept";
    EXPECT_EQ(f.eng.njobs, 0u);
    f.eng.replaying = 0;
    c->flags &= ~PEER_WAIT_REPLAY; // as the store does when its replay ends
    ASSERT_EQ(session_process(c), 0);
    EXPECT_EQ(FakeShell::take(c), FakeShell::res(CMD_JOB_CREATED, "H:t:" +
                                                  std::to_string(f.eng.next_id - 1)) +
                                      "OK " PACKAGE_VERSION "\n");
    EXPECT_EQ(f.eng.njobs, 1u);
    EXPECT_EQ(buf_len(&c->in), 0u);
}

// While replies are held on the store (pending_acks), only background submits go on; anything
// else waits so that replies keep request order.
TEST_F(SessionTest, HeldRepliesLetOnlyDurableSubmitsThrough)
{
    peer *c = f.connect();
    c->pending_acks = 1; // as store_add does for a submit whose batch is not written yet
    string bg = FakeShell::req(CMD_SUBMIT_JOB_BG, nul_join({"f", "u1", "x"}));
    string echo = FakeShell::req(CMD_ECHO_REQ, "later");
    ASSERT_EQ(FakeShell::feed(c, bg + echo + "version\n"), 0);
    string out = FakeShell::take(c);
    EXPECT_EQ(out.substr(0, 12).substr(4, 4), string("\0\0\0\x08", 4)) << "JOB_CREATED";
    EXPECT_EQ(out.find("later"), string::npos) << "the ECHO waits";
    EXPECT_EQ(buf_len(&c->in), echo.size() + 8);
    c->pending_acks = 0; // the batch was written
    ASSERT_EQ(session_process(c), 0);
    EXPECT_EQ(FakeShell::take(c), FakeShell::res(CMD_ECHO_RES, "later") + "OK " PACKAGE_VERSION "\n");
}

// session_detach fans the teardown out: a worker's running job goes back to the queue and the
// next worker gets it; its client is still waiting.
TEST_F(SessionTest, DetachRequeuesTheWorkersJobs)
{
    f.cfg.grab_wait = 0;
    peer *c = f.connect();
    peer *w1 = f.connect();
    ASSERT_EQ(FakeShell::feed(w1, FakeShell::req(CMD_CAN_DO, "f")), 0);
    ASSERT_EQ(FakeShell::feed(c, FakeShell::req(CMD_SUBMIT_JOB, nul_join({"f", "", "x"}))), 0);
    FakeShell::take(c);
    FakeShell::take(w1);
    ASSERT_EQ(FakeShell::feed(w1, FakeShell::req(CMD_GRAB_JOB, "")), 0);
    EXPECT_EQ(FakeShell::take(w1).substr(4, 4), string("\0\0\0\x0b", 4)) << "JOB_ASSIGN";
    EXPECT_EQ(f.eng.nrunning, 1u);
    f.disconnect(w1);
    EXPECT_EQ(f.eng.nrunning, 0u);
    EXPECT_EQ(f.eng.npeers, 1u);
    peer *w2 = f.connect();
    ASSERT_EQ(FakeShell::feed(w2, FakeShell::req(CMD_CAN_DO, "f")), 0);
    ASSERT_EQ(FakeShell::feed(w2, FakeShell::req(CMD_GRAB_JOB, "")), 0);
    string out = FakeShell::take(w2);
    ASSERT_GE(out.size(), 12u);
    EXPECT_EQ(out.substr(4, 4), string("\0\0\0\x0b", 4)) << "the same job, assigned again";
    EXPECT_EQ(FakeShell::take(c), "");
}

TEST_F(SessionTest, CheckCatchesAWaiterOfAnotherClient)
{
    peer *c = f.connect();
    peer *other = f.connect();
    ASSERT_EQ(FakeShell::feed(c, FakeShell::req(CMD_SUBMIT_JOB, nul_join({"f", "", "x"}))), 0);
    ASSERT_FALSE(list_empty(&c->waiters));
    char err[256];
    EXPECT_EQ(session_check(&f.eng, err, sizeof err), 0) << err;
    waiter_of_pnode(c->waiters.next)->client = other;
    EXPECT_NE(session_check(&f.eng, err, sizeof err), 0);
    EXPECT_NE(string(err).find("waiter of another client"), string::npos) << err;
    waiter_of_pnode(c->waiters.next)->client = c;
}

// A large packet cut by a read: session_feed keeps what arrived in one allocation with room for
// what the next read brings, session_need says how much completes it (so the shell reads up to
// the packet's end and nothing is left to move), and a header alone never makes it allocate the
// size it declares.
TEST_F(SessionTest, PartialLargePacketIsHeldWithRoomForItsRest)
{
    peer *p = f.connect();
    string big = FakeShell::req(CMD_ECHO_REQ, string(70000, 'z')); // 70,012 bytes
    const size_t first = 65536;
    ASSERT_EQ(session_feed(p, big.data(), first), 0);
    EXPECT_EQ(buf_len(&p->in), first);
    EXPECT_EQ(session_need(p), big.size() - first);
    EXPECT_GE(p->in.cap, big.size()) << "room for the rest, allocated once";
    EXPECT_LT(p->in.cap, big.size() + 64) << "not a power of two";
    // the shell reads what is needed straight behind it, and the packet completes in place
    char *before = p->in.data;
    ASSERT_EQ(buf_reserve(&p->in, session_need(p)), 0);
    EXPECT_EQ(p->in.data, before) << "no reallocation";
    memcpy(buf_tail(&p->in), big.data() + first, big.size() - first);
    buf_commit(&p->in, big.size() - first);
    ASSERT_EQ(session_process(p), 0);
    EXPECT_EQ(FakeShell::take(p), FakeShell::res(CMD_ECHO_RES, string(70000, 'z')));
    EXPECT_EQ(buf_len(&p->in), 0u);
    EXPECT_EQ(session_need(p), 0u);

    // a header declaring a large packet, and nothing else: room for one read ahead only
    string hdr = big.substr(0, 12);
    hdr[8] = 0x01; // 16 MiB + 70,000 declared (under the default --max-packet-size)
    ASSERT_EQ(session_feed(p, hdr.data(), hdr.size()), 0);
    EXPECT_EQ(session_need(p), ((size_t)0x01 << 24) + 70000);
    EXPECT_LE(p->in.cap, 12u + SESSION_READ_AHEAD + 64);
    // an admin line or a short header has no known size
    peer *q = f.connect();
    ASSERT_EQ(session_feed(q, "stat", 4), 0);
    EXPECT_EQ(session_need(q), 0u);
    peer *r = f.connect();
    ASSERT_EQ(session_feed(r, big.data(), 11), 0);
    EXPECT_EQ(session_need(r), 0u);
}
