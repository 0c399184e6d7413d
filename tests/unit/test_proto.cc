/* SPDX-License-Identifier: BSD-3-Clause */
// Unit tests for the command table and the header/packet encoder.
#include <gtest/gtest.h>

#include <string>

extern "C" {
#include "proto.h"
}

TEST(ProtoTable, EveryCommandHasItsNumber)
{
    for (uint32_t id = 0; id < CMD_MAX; id++) {
        const proto_cmd *c = proto_cmd_info(id);
        ASSERT_NE(c, nullptr) << id;
        EXPECT_EQ(c->id, id);
        EXPECT_LE(c->argc, PROTO_MAX_ARGS);
    }
}

TEST(ProtoTable, OutOfRangeIsNullForAny32BitValue)
{
    const uint32_t bad[] = {43, 64, 65535, 0x7fffffffu, 0x80000000u, 0xffffffffu};
    for (uint32_t id : bad) {
        EXPECT_EQ(proto_cmd_info(id), nullptr) << id;
        EXPECT_STREQ(proto_cmd_name(id), "UNKNOWN");
    }
}

TEST(ProtoTable, ArgumentShapesMatchGearmand)
{
    struct { uint32_t id; int argc; int data; } want[] = {
        {CMD_CAN_DO, 1, 0},          {CMD_SUBMIT_JOB, 2, 1},        {CMD_JOB_ASSIGN, 2, 1},
        {CMD_WORK_STATUS, 3, 0},     {CMD_WORK_COMPLETE, 1, 1},     {CMD_WORK_FAIL, 1, 0},
        {CMD_ECHO_REQ, 0, 1},        {CMD_ERROR, 2, 0},             {CMD_STATUS_RES, 5, 0},
        {CMD_CAN_DO_TIMEOUT, 2, 0},  {CMD_JOB_ASSIGN_UNIQ, 3, 1},   {CMD_SUBMIT_JOB_SCHED, 7, 1},
        {CMD_SUBMIT_JOB_EPOCH, 3, 1}, {CMD_SUBMIT_REDUCE_JOB, 4, 1}, {CMD_JOB_ASSIGN_ALL, 4, 1},
        {CMD_GET_STATUS_UNIQUE, 1, 0}, {CMD_STATUS_RES_UNIQUE, 6, 0}, {CMD_GRAB_JOB_ALL, 0, 0},
    };
    for (auto &w : want) {
        const proto_cmd *c = proto_cmd_info(w.id);
        EXPECT_EQ(c->argc, w.argc) << c->name;
        EXPECT_EQ(c->has_data, w.data) << c->name;
    }
    EXPECT_STREQ(proto_cmd_name(CMD_SUBMIT_REDUCE_JOB_BACKGROUND), "SUBMIT_REDUCE_JOB_BACKGROUND");
}

TEST(ProtoEncode, HeaderIsBigEndian)
{
    unsigned char h[12];
    proto_header(h, PROTO_MAGIC_RES, 0x01020304, 0xa0b0c0d0);
    EXPECT_EQ(std::string((char *)h, 12), std::string("\0RES\x01\x02\x03\x04\xa0\xb0\xc0\xd0", 12));
    EXPECT_EQ(proto_get32(h + 8), 0xa0b0c0d0u);
}

TEST(ProtoEncode, ArgumentsSeparatedByNulLastHasNone)
{
    proto_arg a[3] = {{"H:x:1", 5}, {"fn", 2}, {"data", 4}};
    size_t body = proto_body_size(a, 3);
    EXPECT_EQ(body, 5u + 1 + 2 + 1 + 4);
    unsigned char out[64];
    size_t n = proto_encode(out, PROTO_MAGIC_REQ, CMD_JOB_ASSIGN, a, 3);
    EXPECT_EQ(n, 12 + body);
    EXPECT_EQ(std::string((char *)out + 12, body), std::string("H:x:1\0fn\0data", body));
    EXPECT_EQ(proto_get32(out + 4), (uint32_t)CMD_JOB_ASSIGN);
}

TEST(ProtoEncode, OversizeBodyReported)
{
    proto_arg a[2] = {{nullptr, 0xffffffffu}, {nullptr, 1}};
    EXPECT_EQ(proto_body_size(a, 2), SIZE_MAX);
}
