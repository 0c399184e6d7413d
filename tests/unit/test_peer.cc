/* SPDX-License-Identifier: BSD-3-Clause */
// Unit tests for a peer's input handling: sniffing, framing errors, limits, replies.
#include <gtest/gtest.h>

#include "fake_shell.h"

extern "C" {
#include "spur_config.h"
}

using std::string;
using namespace std::string_literals;

class PeerTest : public ::testing::Test {
  protected:
    FakeShell f;
    void SetUp() override { f.start(); }
};

TEST_F(PeerTest, EchoAnsweredWithSameBytes)
{
    peer *p = f.connect();
    ASSERT_EQ(FakeShell::feed(p, FakeShell::req(CMD_ECHO_REQ, string("a\0b", 3))), 0);
    EXPECT_EQ(FakeShell::take(p), FakeShell::res(CMD_ECHO_RES, string("a\0b", 3)));
}

TEST_F(PeerTest, ByteAtATimeKeepsPartialPacket)
{
    peer *p = f.connect();
    string in = FakeShell::req(CMD_ECHO_REQ, "slow") + "version\r\n";
    for (char c : in)
        ASSERT_EQ(session_feed(p, &c, 1), 0);
    string out = FakeShell::take(p);
    string want = FakeShell::res(CMD_ECHO_RES, "slow") + "OK " PACKAGE_VERSION "\n";
    EXPECT_EQ(out, want);
    EXPECT_EQ(buf_len(&p->in), 0u);
    EXPECT_EQ(p->in.data, nullptr) << "nothing buffered once every packet is complete";
}

TEST_F(PeerTest, BadMagicClosesConnection)
{
    peer *p = f.connect();
    EXPECT_EQ(FakeShell::feed(p, string("\0XYZ", 4)), -1);
    EXPECT_TRUE(f.closed.count(p));
}

TEST_F(PeerTest, ResponseMagicAnsweredAndStreamContinues)
{
    peer *p = f.connect();
    string in = FakeShell::res(CMD_ECHO_REQ, "x") + FakeShell::req(CMD_ECHO_REQ, "y");
    ASSERT_EQ(FakeShell::feed(p, in), 0);
    EXPECT_EQ(FakeShell::take(p),
              FakeShell::res(CMD_ERROR, string("INVALID_MAGIC\0Request magic expected", 36)) +
                  FakeShell::res(CMD_ECHO_RES, "y"));
}

TEST_F(PeerTest, UnknownCommandsAnsweredAndStreamContinues)
{
    peer *p = f.connect();
    for (uint32_t cmd : {0u, (uint32_t)CMD_MAX, 65535u, 0x80000000u, 0xffffffffu}) {
        ASSERT_EQ(FakeShell::feed(p, FakeShell::req(cmd, "junk")), 0);
        EXPECT_EQ(FakeShell::take(p),
                  FakeShell::res(CMD_ERROR, string("INVALID_COMMAND\0Invalid command expected", 40)))
            << cmd;
    }
    ASSERT_EQ(FakeShell::feed(p, FakeShell::req(CMD_ECHO_REQ, "ok")), 0);
    EXPECT_EQ(FakeShell::take(p), FakeShell::res(CMD_ECHO_RES, "ok"));
    EXPECT_TRUE(f.closed.empty());
}

TEST_F(PeerTest, OversizePacketBodyDiscardedWithoutBuffering)
{
    f.cfg.max_packet = 1024;
    peer *p = f.connect();
    string hdr = FakeShell::req(CMD_ECHO_REQ, "").substr(0, 8);
    unsigned char sz[4];
    proto_put32(sz, 5000);
    hdr.append((char *)sz, 4);
    ASSERT_EQ(FakeShell::feed(p, hdr), 0);
    string err = FakeShell::take(p);
    EXPECT_EQ(err.substr(12, 19), "ARGUMENT_TOO_LARGE\0"s.substr(0, 19));
    for (int i = 0; i < 50; i++) {
        ASSERT_EQ(FakeShell::feed(p, string(100, 'z')), 0);
        EXPECT_EQ(buf_len(&p->in), 0u) << "discarded bytes are never buffered";
    }
    ASSERT_EQ(FakeShell::feed(p, FakeShell::req(CMD_ECHO_REQ, "after")), 0);
    EXPECT_EQ(FakeShell::take(p), FakeShell::res(CMD_ECHO_RES, "after"));
}

TEST_F(PeerTest, OverlongAdminLineGetsErrAndIsSkipped)
{
    f.cfg.max_line = 64;
    peer *p = f.connect();
    ASSERT_EQ(FakeShell::feed(p, string(200, 'v')), 0);
    EXPECT_EQ(FakeShell::take(p), "ERR LINE_TOO_LONG Line+longer+than+max-line-length\r\n");
    ASSERT_EQ(FakeShell::feed(p, string(500, 'v') + "\nversion\n"), 0);
    EXPECT_EQ(FakeShell::take(p), "OK " PACKAGE_VERSION "\n");
    EXPECT_LE(p->in.cap, 1024u) << "the long line was never buffered whole";
}

TEST_F(PeerTest, MissingNulsAnsweredWithError)
{
    peer *p = f.connect();
    ASSERT_EQ(FakeShell::feed(p, FakeShell::req(CMD_SUBMIT_JOB, "")), 0);
    string out = FakeShell::take(p);
    EXPECT_EQ(out.substr(12, 17), "INVALID_ARGUMENT\0"s.substr(0, 17));
    EXPECT_TRUE(f.closed.empty());
}

TEST_F(PeerTest, OutputLimitClosesSlowReader)
{
    f.cfg.max_output = 8192;
    peer *p = f.connect();
    string big(3000, 'x');
    for (int i = 0; i < 2; i++)
        ASSERT_EQ(FakeShell::feed(p, FakeShell::req(CMD_ECHO_REQ, big)), 0);
    EXPECT_TRUE(f.closed.empty());
    FakeShell::feed(p, FakeShell::req(CMD_ECHO_REQ, big));
    EXPECT_TRUE(f.closed.count(p)) << "a peer whose unread replies pass the limit is closed";
}

TEST_F(PeerTest, PeersListedInConnectOrder)
{
    peer *a = f.connect();
    peer *b = f.connect();
    peer *c = f.connect();
    EXPECT_EQ(f.eng.npeers, 3u);
    EXPECT_EQ(peer_of(list_first(&f.eng.peers)), a);
    EXPECT_EQ(peer_of(list_next(&f.eng.peers, &a->node)), b);
    EXPECT_EQ(peer_of(list_next(&f.eng.peers, &b->node)), c);
    EXPECT_EQ(list_next(&f.eng.peers, &c->node), nullptr);
    f.disconnect(b);
    EXPECT_FALSE(list_linked(&b->node));
    EXPECT_EQ(peer_of(list_next(&f.eng.peers, &a->node)), c);
    EXPECT_EQ(f.eng.npeers, 2u);
}

TEST_F(PeerTest, OverlongLineWithNewlineInSameReadDoesNotEatNextLine)
{
    f.cfg.max_line = 64;
    peer *p = f.connect();
    ASSERT_EQ(FakeShell::feed(p, string(80, 'v') + "\n"), 0);
    EXPECT_EQ(FakeShell::take(p), "ERR LINE_TOO_LONG Line+longer+than+max-line-length\r\n");
    ASSERT_EQ(FakeShell::feed(p, "version\n"), 0);
    EXPECT_EQ(FakeShell::take(p), "OK " PACKAGE_VERSION "\n");
}
