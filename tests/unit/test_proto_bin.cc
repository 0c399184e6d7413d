/* SPDX-License-Identifier: BSD-3-Clause */
// Unit tests for the binary framing parser: every edge of pb_parse.
#include <gtest/gtest.h>

#include <string>

extern "C" {
#include "proto_bin.h"
}

static std::string pkt(uint32_t cmd, const std::string &body, const char *magic = "\0REQ")
{
    std::string s(magic, 4);
    unsigned char h[8];
    proto_put32(h, cmd);
    proto_put32(h + 4, (uint32_t)body.size());
    s.append((char *)h, 8);
    s += body;
    return s;
}

static pb_status parse(const std::string &s, pb_packet *p, size_t *used, uint32_t max = 1 << 20)
{
    return pb_parse(s.data(), s.size(), PROTO_MAGIC_REQ, max, p, used);
}

TEST(ProtoBin, SubmitSplitsFunctionUniqueData)
{
    pb_packet p;
    size_t used = 0;
    std::string s = pkt(CMD_SUBMIT_JOB, std::string("fn\0uq\0pay\0load", 14));
    ASSERT_EQ(parse(s, &p, &used), PB_OK);
    EXPECT_EQ(used, s.size());
    EXPECT_EQ(p.argc, 2);
    EXPECT_EQ(std::string(p.arg[0], p.len[0]), "fn");
    EXPECT_EQ(std::string(p.arg[1], p.len[1]), "uq");
    EXPECT_EQ(std::string(p.data, p.data_len), std::string("pay\0load", 8));
}

TEST(ProtoBin, NoDataCommandLastArgumentKeepsNuls)
{
    pb_packet p;
    size_t used;
    std::string s = pkt(CMD_CAN_DO, std::string("a\0b", 3));
    ASSERT_EQ(parse(s, &p, &used), PB_OK);
    EXPECT_EQ(p.argc, 1);
    EXPECT_EQ(std::string(p.arg[0], p.len[0]), std::string("a\0b", 3));
}

TEST(ProtoBin, WorkStatusThreeArguments)
{
    pb_packet p;
    size_t used;
    std::string s = pkt(CMD_WORK_STATUS, std::string("H:1\0" "3\0" "10", 8));
    ASSERT_EQ(parse(s, &p, &used), PB_OK);
    EXPECT_EQ(std::string(p.arg[0], p.len[0]), "H:1");
    EXPECT_EQ(std::string(p.arg[1], p.len[1]), "3");
    EXPECT_EQ(std::string(p.arg[2], p.len[2]), "10");
}

TEST(ProtoBin, EmptyDataTail)
{
    pb_packet p;
    size_t used;
    std::string s = pkt(CMD_SUBMIT_JOB_BG, std::string("f\0\0", 3));
    ASSERT_EQ(parse(s, &p, &used), PB_OK);
    EXPECT_EQ(p.len[1], 0u);
    EXPECT_EQ(p.data_len, 0u);
}

TEST(ProtoBin, EveryPrefixNeedsMore)
{
    std::string s = pkt(CMD_SUBMIT_JOB, std::string("fn\0u\0data", 9));
    for (size_t n = 0; n < s.size(); n++) {
        pb_packet p;
        size_t used = 12345;
        EXPECT_EQ(pb_parse(s.data(), n, PROTO_MAGIC_REQ, 1 << 20, &p, &used), PB_NEED_MORE) << n;
        EXPECT_EQ(used, 12345u) << "nothing consumed at " << n;
    }
}

TEST(ProtoBin, ManyPacketsOneAtATime)
{
    std::string s;
    for (int i = 0; i < 100; i++)
        s += pkt(CMD_ECHO_REQ, std::to_string(i));
    size_t off = 0;
    int count = 0;
    while (off < s.size()) {
        pb_packet p;
        size_t used;
        ASSERT_EQ(pb_parse(s.data() + off, s.size() - off, PROTO_MAGIC_REQ, 1 << 20, &p, &used),
                  PB_OK);
        EXPECT_EQ(std::string(p.data, p.data_len), std::to_string(count));
        off += used;
        count++;
    }
    EXPECT_EQ(count, 100);
}

TEST(ProtoBin, MissingNulsAreBadArgs)
{
    pb_packet p;
    size_t used = 0;
    std::string s = pkt(CMD_SUBMIT_JOB, "fn-no-nul");
    ASSERT_EQ(parse(s, &p, &used), PB_BAD_ARGS);
    EXPECT_EQ(used, s.size()) << "the whole bad frame is skipped, the stream continues";
    EXPECT_EQ(parse(pkt(CMD_SUBMIT_JOB, std::string("fn\0uq", 5)), &p, &used), PB_BAD_ARGS);
    EXPECT_EQ(parse(pkt(CMD_WORK_STATUS, std::string("H\0" "1", 3)), &p, &used), PB_BAD_ARGS);
    EXPECT_EQ(parse(pkt(CMD_WORK_COMPLETE, "H"), &p, &used), PB_BAD_ARGS);
}

TEST(ProtoBin, ZeroSizeSubmitIsBadArgs)
{
    pb_packet p;
    size_t used = 0;
    std::string s = pkt(CMD_SUBMIT_JOB, "");
    EXPECT_EQ(parse(s, &p, &used), PB_BAD_ARGS);
    EXPECT_EQ(used, 12u);
}

TEST(ProtoBin, NulsBeyondThePacketAreNotUsed)
{
    // the next packet's bytes hold NULs; they must not complete this one (gearmand's bug)
    std::string s = pkt(CMD_SUBMIT_JOB, "fn") + pkt(CMD_ECHO_REQ, std::string("\0\0", 2));
    pb_packet p;
    size_t used;
    EXPECT_EQ(parse(s, &p, &used), PB_BAD_ARGS);
    EXPECT_EQ(used, 14u);
}

TEST(ProtoBin, TooLargeDetectedFromHeaderAlone)
{
    std::string hdr = pkt(CMD_SUBMIT_JOB, "").substr(0, 8);
    unsigned char sz[4];
    proto_put32(sz, 0xffffffffu);
    hdr.append((char *)sz, 4);
    pb_packet p;
    size_t used = 0;
    EXPECT_EQ(parse(hdr, &p, &used, 1 << 20), PB_TOO_LARGE);
    EXPECT_EQ(used, 12u);
    EXPECT_EQ(p.size, 0xffffffffu);
}

TEST(ProtoBin, SizeAtLimitAccepted)
{
    pb_packet p;
    size_t used;
    EXPECT_EQ(parse(pkt(CMD_ECHO_REQ, std::string(1024, 'x')), &p, &used, 1024), PB_OK);
    EXPECT_EQ(parse(pkt(CMD_ECHO_REQ, std::string(1025, 'x')), &p, &used, 1024), PB_TOO_LARGE);
}

TEST(ProtoBin, ResponseMagicIsWrongMagicWithFrameSkipped)
{
    pb_packet p;
    size_t used = 0;
    std::string s = pkt(CMD_ECHO_REQ, "abc", "\0RES");
    EXPECT_EQ(parse(s, &p, &used), PB_WRONG_MAGIC);
    EXPECT_EQ(used, s.size());
}

TEST(ProtoBin, ClientSideAcceptsResponseMagic)
{
    pb_packet p;
    size_t used;
    std::string s = pkt(CMD_JOB_CREATED, "H:x:1", "\0RES");
    ASSERT_EQ(pb_parse(s.data(), s.size(), PROTO_MAGIC_RES, 1 << 20, &p, &used), PB_OK);
    EXPECT_EQ(std::string(p.arg[0], p.len[0]), "H:x:1");
}

TEST(ProtoBin, GarbageMagicDetectedEarly)
{
    pb_packet p;
    size_t used;
    EXPECT_EQ(pb_parse("\0X", 2, PROTO_MAGIC_REQ, 100, &p, &used), PB_BAD_MAGIC);
    EXPECT_EQ(pb_parse("\0RZ", 3, PROTO_MAGIC_REQ, 100, &p, &used), PB_BAD_MAGIC);
    EXPECT_EQ(pb_parse("\0RE", 3, PROTO_MAGIC_REQ, 100, &p, &used), PB_NEED_MORE);
    std::string s("\0REX\0\0\0\x10\0\0\0\0", 12);
    EXPECT_EQ(parse(s, &p, &used), PB_BAD_MAGIC);
}

TEST(ProtoBin, UnknownCommandNumbersAreSafe)
{
    const uint32_t bad[] = {0, CMD_MAX, 65535, 0x80000000u, 0xffffffffu};
    for (uint32_t cmd : bad) {
        pb_packet p;
        size_t used = 0;
        std::string s = pkt(cmd, "xyz");
        EXPECT_EQ(parse(s, &p, &used), PB_BAD_COMMAND) << cmd;
        EXPECT_EQ(used, s.size());
        EXPECT_EQ(p.info, nullptr);
    }
}

TEST(ProtoBin, StatusNames)
{
    EXPECT_STREQ(pb_status_name(PB_OK), "OK");
    EXPECT_STREQ(pb_status_name(PB_TOO_LARGE), "TOO_LARGE");
}
