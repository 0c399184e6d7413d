/* SPDX-License-Identifier: BSD-3-Clause */
// Unit tests for the command table and the header/packet encoder.
#include <gtest/gtest.h>

#include <cstring>
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
    const uint32_t bad[] = {CMD_MAX, 64, 65535, 0x7fffffffu, 0x80000000u, 0xffffffffu,
                            CMD_SPUR_BASE, CMD_SPUR_END};
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

static bool starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static bool has(uint32_t id, uint32_t flag) { return (proto_cmd_flags(id) & flag) != 0; }

TEST(ProtoFlags, SubmitsAreExactlyTheSubmitCommands)
{
    for (uint32_t id = 0; id < CMD_MAX; id++) {
        const proto_cmd *c = proto_cmd_info(id);
        EXPECT_EQ(has(id, PROTO_F_SUBMIT), starts_with(c->name, "SUBMIT_")) << c->name;
        const uint32_t submit_only = PROTO_F_DURABLE | PROTO_F_HIGH | PROTO_F_LOW |
                                     PROTO_F_EPOCH | PROTO_F_SCHED | PROTO_F_REDUCE;
        if (!has(id, PROTO_F_SUBMIT)) {
            EXPECT_EQ(proto_cmd_flags(id) & submit_only, 0u) << c->name;
        }
        EXPECT_FALSE(has(id, PROTO_F_HIGH) && has(id, PROTO_F_LOW)) << c->name;
        EXPECT_EQ(c->flags, proto_cmd_flags(id)) << c->name;
    }
}

// What each submit's reply needs: a background one (JOB_CREATED may wait on the store, no
// client waits on the job) is DURABLE; the arguments the handler reads are in the table's argc.
TEST(ProtoFlags, EverySubmitHasTheFlagsItsReplyNeeds)
{
    struct { uint32_t id; uint32_t flags; int argc; } want[] = {
        {CMD_SUBMIT_JOB, 0, 2},
        {CMD_SUBMIT_JOB_BG, PROTO_F_DURABLE, 2},
        {CMD_SUBMIT_JOB_HIGH, PROTO_F_HIGH, 2},
        {CMD_SUBMIT_JOB_HIGH_BG, PROTO_F_HIGH | PROTO_F_DURABLE, 2},
        {CMD_SUBMIT_JOB_LOW, PROTO_F_LOW, 2},
        {CMD_SUBMIT_JOB_LOW_BG, PROTO_F_LOW | PROTO_F_DURABLE, 2},
        {CMD_SUBMIT_JOB_EPOCH, PROTO_F_EPOCH | PROTO_F_DURABLE, 3},
        {CMD_SUBMIT_JOB_SCHED, PROTO_F_SCHED | PROTO_F_DURABLE, 7},
        {CMD_SUBMIT_REDUCE_JOB, PROTO_F_REDUCE, 4},
        {CMD_SUBMIT_REDUCE_JOB_BACKGROUND, PROTO_F_REDUCE | PROTO_F_DURABLE, 4},
    };
    int submits = 0;
    for (uint32_t id = 0; id < CMD_MAX; id++)
        submits += has(id, PROTO_F_SUBMIT);
    EXPECT_EQ(submits, (int)(sizeof want / sizeof want[0])) << "a submit missing below";
    for (auto &w : want) {
        const proto_cmd *c = proto_cmd_info(w.id);
        EXPECT_EQ(proto_cmd_flags(w.id), PROTO_F_SUBMIT | w.flags) << c->name;
        EXPECT_EQ(c->argc, w.argc) << c->name;
        EXPECT_EQ(c->has_data, 1) << c->name;
        bool bg = strstr(c->name, "_BG") != nullptr || strstr(c->name, "BACKGROUND") != nullptr ||
                  w.id == CMD_SUBMIT_JOB_EPOCH || w.id == CMD_SUBMIT_JOB_SCHED;
        EXPECT_EQ(has(w.id, PROTO_F_DURABLE), bg) << c->name;
    }
}

// Reply urgency (put_packet): a worker's wake-up and next job, and a client's result, go first.
TEST(ProtoFlags, RepliesToWorkersAndResultsAreMarked)
{
    for (uint32_t id = 0; id < CMD_MAX; id++) {
        const proto_cmd *c = proto_cmd_info(id);
        bool assign = starts_with(c->name, "JOB_ASSIGN");
        bool to_worker = assign || id == CMD_NOOP || id == CMD_NO_JOB;
        bool result = id == CMD_WORK_COMPLETE || id == CMD_WORK_FAIL || id == CMD_WORK_EXCEPTION;
        EXPECT_EQ(has(id, PROTO_F_TO_WORKER), to_worker) << c->name;
        EXPECT_EQ(has(id, PROTO_F_RESULT), result) << c->name;
        EXPECT_EQ(has(id, PROTO_F_URGENT), assign || id == CMD_NOOP || result) << c->name;
        EXPECT_FALSE(has(id, PROTO_F_SUBMIT) && (to_worker || result)) << c->name;
    }
}

TEST(ProtoFlags, OutOfRangeHasNoFlags)
{
    for (uint32_t id : {(uint32_t)CMD_MAX, 65535u, 0x80000000u, 0xffffffffu,
                        (uint32_t)CMD_SPUR_BASE, (uint32_t)CMD_SPUR_END})
        EXPECT_EQ(proto_cmd_flags(id), 0u) << id;
}

// Spur's own commands (docs/PROTOCOL-EXTENSIONS.md) are found by number like gearmand's.
TEST(ProtoTable, SpurCommandsAreInTheExtensionTable)
{
    for (uint32_t id = CMD_SPUR_BASE + 1; id < CMD_SPUR_END; id++) {
        const proto_cmd *c = proto_cmd_info(id);
        ASSERT_NE(c, nullptr) << id;
        EXPECT_EQ(c->id, id);
    }
    EXPECT_STREQ(proto_cmd_name(CMD_CANCEL_JOB), "CANCEL_JOB");
    EXPECT_EQ(proto_cmd_info(CMD_CANCEL_JOB)->argc, 1);
    EXPECT_EQ(proto_cmd_flags(CMD_CANCEL_JOB), 0u);
    EXPECT_STREQ(proto_cmd_name(CMD_JOB_CANCELLED), "JOB_CANCELLED");
    EXPECT_EQ(proto_cmd_flags(CMD_JOB_CANCELLED), (uint32_t)(PROTO_F_TO_WORKER | PROTO_F_URGENT));
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
