/* SPDX-License-Identifier: BSD-3-Clause */
// Unit tests for libgearman-compat's pure parts: buffers, the reply FIFO, server lists, error
// codes and the task state machine. No sockets: packets are built with the project's codec
// (proto_encode) and parsed with pb_parse, as the library does.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "lgc.h"

#include <unistd.h>

namespace {

// Packet is a response packet encoded with proto_encode and parsed back with pb_parse.
struct Packet {
    std::vector<unsigned char> bytes;
    pb_packet pkt;

    Packet(uint32_t cmd, const std::vector<std::string> &args)
    {
        std::vector<proto_arg> a;
        for (const auto &s : args)
            a.push_back(proto_arg{s.data(), s.size()});
        bytes.resize(PROTO_HEADER_SIZE + proto_body_size(a.data(), (int)a.size()));
        proto_encode(bytes.data(), PROTO_MAGIC_RES, cmd, a.data(), (int)a.size());
        size_t used = 0;
        pb_status st = pb_parse((const char *)bytes.data(), bytes.size(), PROTO_MAGIC_RES,
                                UINT32_MAX, &pkt, &used);
        EXPECT_EQ(PB_OK, st) << proto_cmd_name(cmd);
        EXPECT_EQ(bytes.size(), used);
    }
};

// make_task returns a zeroed task in the given state.
lgc_task make_task(lgc_task_kind kind, uint32_t cmd, lgc_task_state state)
{
    lgc_task t;
    memset(&t, 0, sizeof t);
    t.kind = kind;
    t.cmd = cmd;
    t.state = state;
    t.result_rc = GEARMAN_UNKNOWN_STATE;
    t.background = cmd == CMD_SUBMIT_JOB_BG || cmd == CMD_SUBMIT_JOB_EPOCH;
    return t;
}

void free_task(lgc_task *t)
{
    free(t->data);
    lgc_result_free(&t->result);
    lgc_result_free(&t->exception);
    lgc_buf_free(&t->packet);
}

// apply builds a response packet and applies it to t.
lgc_event apply(lgc_task *t, uint32_t cmd, const std::vector<std::string> &args)
{
    Packet p(cmd, args);
    return lgc_task_apply(t, &p.pkt);
}

std::string result_of(const lgc_task &t)
{
    return std::string(t.result.value ? t.result.value : "", t.result.size);
}

} // namespace

TEST(LgcReturn, ValuesMatchLibgearman)
{
    EXPECT_EQ(0, GEARMAN_SUCCESS);
    EXPECT_EQ(1, GEARMAN_IO_WAIT);
    EXPECT_EQ(13, GEARMAN_NO_SERVERS);
    EXPECT_EQ(14, GEARMAN_LOST_CONNECTION);
    EXPECT_EQ(23, GEARMAN_WORK_EXCEPTION);
    EXPECT_EQ(24, GEARMAN_WORK_FAIL);
    EXPECT_EQ(26, GEARMAN_COULD_NOT_CONNECT);
    EXPECT_EQ(35, GEARMAN_NO_JOBS);
    EXPECT_EQ(42, GEARMAN_QUEUE_ERROR);
    EXPECT_EQ(47, GEARMAN_TIMEOUT);
    EXPECT_EQ(52, GEARMAN_JOB_NOT_FOUND);
    EXPECT_EQ(53, GEARMAN_MAX_RETURN);
}

TEST(LgcReturn, EveryCodeHasItsOwnName)
{
    for (int rc = 0; rc < GEARMAN_MAX_RETURN; rc++) {
        std::string name = gearman_strerror((gearman_return_t)rc);
        EXPECT_EQ(0u, name.find("GEARMAN_")) << rc;
        EXPECT_NE("GEARMAN_MAX_RETURN", name) << rc;
        EXPECT_EQ((gearman_return_t)rc, lgc_return_from_server_code(name.c_str() + 8, name.size() - 8));
    }
    EXPECT_STREQ("GEARMAN_MAX_RETURN", gearman_strerror((gearman_return_t)999));
}

TEST(LgcReturn, ServerErrorCodesMap)
{
    EXPECT_EQ(GEARMAN_QUEUE_ERROR, lgc_return_from_server_code("QUEUE_ERROR", 11));
    EXPECT_EQ(GEARMAN_JOB_NOT_FOUND, lgc_return_from_server_code("JOB_NOT_FOUND", 13));
    EXPECT_EQ(GEARMAN_UNKNOWN_OPTION, lgc_return_from_server_code("UNKNOWN_OPTION", 14));
    EXPECT_EQ(GEARMAN_SERVER_ERROR, lgc_return_from_server_code("NO_SUCH_THING", 13));
    EXPECT_EQ(GEARMAN_SERVER_ERROR, lgc_return_from_server_code("", 0));
}

TEST(LgcCore, SubmitCommandByPriority)
{
    EXPECT_EQ((uint32_t)CMD_SUBMIT_JOB, lgc_submit_cmd(GEARMAN_JOB_PRIORITY_NORMAL, false));
    EXPECT_EQ((uint32_t)CMD_SUBMIT_JOB_HIGH, lgc_submit_cmd(GEARMAN_JOB_PRIORITY_HIGH, false));
    EXPECT_EQ((uint32_t)CMD_SUBMIT_JOB_LOW, lgc_submit_cmd(GEARMAN_JOB_PRIORITY_LOW, false));
    EXPECT_EQ((uint32_t)CMD_SUBMIT_JOB_BG, lgc_submit_cmd(GEARMAN_JOB_PRIORITY_NORMAL, true));
    EXPECT_EQ((uint32_t)CMD_SUBMIT_JOB_HIGH_BG, lgc_submit_cmd(GEARMAN_JOB_PRIORITY_HIGH, true));
    EXPECT_EQ((uint32_t)CMD_SUBMIT_JOB_LOW_BG, lgc_submit_cmd(GEARMAN_JOB_PRIORITY_LOW, true));
}

TEST(LgcCore, ParseU32LikeAtoi)
{
    EXPECT_EQ(0u, lgc_parse_u32("", 0));
    EXPECT_EQ(42u, lgc_parse_u32("42", 2));
    EXPECT_EQ(4u, lgc_parse_u32("42", 1));
    EXPECT_EQ(7u, lgc_parse_u32("7x", 2));
    EXPECT_EQ(UINT32_MAX, lgc_parse_u32("99999999999", 11));
}

TEST(LgcCore, UuidIsVersion4AndDiffers)
{
    char a[GEARMAN_MAX_UUID_SIZE + 1], b[GEARMAN_MAX_UUID_SIZE + 1];
    lgc_make_uuid(a);
    lgc_make_uuid(b);
    EXPECT_EQ(36u, strlen(a));
    EXPECT_EQ('4', a[14]);
    EXPECT_EQ('-', a[8]);
    EXPECT_STRNE(a, b);
}

// Servers collects lgc_parse_servers' callbacks.
static gearman_return_t collect(void *ctx, const char *host, in_port_t port)
{
    auto *v = static_cast<std::vector<std::string> *>(ctx);
    v->push_back(std::string(host) + "|" + std::to_string(port));
    return GEARMAN_SUCCESS;
}

TEST(LgcCore, ParseServers)
{
    std::vector<std::string> v;
    EXPECT_EQ(GEARMAN_SUCCESS, lgc_parse_servers("h1:1,h2, h3:33 ,,[::1]:44,[fe80::1]", collect, &v));
    ASSERT_EQ(5u, v.size());
    EXPECT_EQ("h1|1", v[0]);
    EXPECT_EQ("h2|0", v[1]);
    EXPECT_EQ("h3|33", v[2]);
    EXPECT_EQ("::1|44", v[3]);
    EXPECT_EQ("fe80::1|0", v[4]);
    EXPECT_EQ(GEARMAN_INVALID_ARGUMENT, lgc_parse_servers("h:70000", collect, &v));
    EXPECT_EQ(GEARMAN_INVALID_ARGUMENT, lgc_parse_servers("h:x", collect, &v));
    EXPECT_EQ(GEARMAN_INVALID_ARGUMENT, lgc_parse_servers("[::1", collect, &v));
    EXPECT_EQ(GEARMAN_SUCCESS, lgc_parse_servers(NULL, collect, &v));
}

TEST(LgcCore, AddServerDefaults)
{
    lgc_universal u;
    lgc_universal_init(&u);
    EXPECT_EQ(-1, u.timeout);
    EXPECT_EQ(GEARMAN_SUCCESS, lgc_add_server(&u, NULL, 0));
    EXPECT_EQ(GEARMAN_SUCCESS, lgc_add_server(&u, "example", 1234));
    ASSERT_NE(nullptr, u.conns);
    EXPECT_STREQ("localhost", u.conns->host);
    EXPECT_STREQ("4730", u.conns->port);
    EXPECT_EQ(-1, u.conns->fd);
    ASSERT_NE(nullptr, u.conns->next);
    EXPECT_STREQ("1234", u.conns->next->port);
    lgc_universal_free(&u);
}

TEST(LgcCore, TimeoutTextIsLibgearmans)
{
    lgc_universal u;
    lgc_universal_init(&u);
    EXPECT_EQ(GEARMAN_TIMEOUT, lgc_set_timeout(&u, 2));
    EXPECT_EQ(GEARMAN_TIMEOUT, u.error_code);
    std::string pid = "pid(" + std::to_string((long)getpid()) + ")";
    EXPECT_EQ("gearman_wait(GEARMAN_TIMEOUT) timeout reached, 2 servers were poll(), no servers "
              "were available, pipe:false -> libgearman/universal.cc:346: " + pid,
              std::string(u.error));
    u.is_worker = true;
    lgc_set_timeout(&u, 1);
    EXPECT_NE(nullptr, strstr(u.error, " 1 servers were poll(), no servers were available, pipe:true"));
    lgc_universal_free(&u);
}

TEST(LgcBuf, ReserveConsumeAndCompact)
{
    lgc_buf b;
    memset(&b, 0, sizeof b);
    char *p = lgc_buf_reserve(&b, 10);
    ASSERT_NE(nullptr, p);
    memcpy(p, "0123456789", 10);
    b.end += 10;
    lgc_buf_consume(&b, 4);
    EXPECT_EQ(6u, lgc_buf_len(&b));
    EXPECT_EQ(0, memcmp(lgc_buf_head(&b), "456789", 6));
    p = lgc_buf_reserve(&b, 100000);
    ASSERT_NE(nullptr, p);
    EXPECT_EQ(0, memcmp(lgc_buf_head(&b), "456789", 6));
    lgc_buf_consume(&b, 6);
    EXPECT_EQ(0u, lgc_buf_len(&b));
    lgc_buf_free(&b);
}

TEST(LgcBuf, AppendPacketUsesTheCodec)
{
    lgc_buf b;
    memset(&b, 0, sizeof b);
    proto_arg args[3] = {{"reverse", 7}, {"", 0}, {"test", 4}};
    ASSERT_EQ(0, lgc_buf_append_packet(&b, CMD_SUBMIT_JOB, args, 3));
    const unsigned char want[] = {0, 'R', 'E', 'Q', 0, 0, 0, 7, 0, 0, 0, 13, 'r', 'e', 'v', 'e',
                                  'r', 's', 'e', 0, 0, 't', 'e', 's', 't'};
    ASSERT_EQ(sizeof want, lgc_buf_len(&b));
    EXPECT_EQ(0, memcmp(want, lgc_buf_head(&b), sizeof want));
    lgc_buf_free(&b);
}

TEST(LgcFifo, OrderWrapAndForget)
{
    lgc_fifo f;
    memset(&f, 0, sizeof f);
    lgc_task tasks[40];
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 40; i++)
            ASSERT_EQ(0, lgc_fifo_push(&f, LGC_PEND_SUBMIT, &tasks[i]));
        lgc_fifo_forget(&f, &tasks[3]);
        for (int i = 0; i < 40; i++) {
            lgc_pend *p = lgc_fifo_peek(&f);
            ASSERT_NE(nullptr, p);
            EXPECT_EQ(i == 3 ? nullptr : &tasks[i], p->task);
            lgc_fifo_pop(&f);
        }
        EXPECT_EQ(nullptr, lgc_fifo_peek(&f));
        ASSERT_EQ(0, lgc_fifo_push(&f, LGC_PEND_ECHO, NULL)); // shift the ring's head
        EXPECT_EQ(LGC_PEND_ECHO, lgc_fifo_peek(&f)->kind);
        lgc_fifo_pop(&f);
    }
    lgc_fifo_free(&f);
}

TEST(LgcTask, ForegroundLifecycleAccumulatesResult)
{
    lgc_task t = make_task(LGC_KIND_DO, CMD_SUBMIT_JOB, LGC_TASK_SUBMITTED);
    EXPECT_EQ(LGC_EV_CREATED, apply(&t, CMD_JOB_CREATED, {"H:x:1"}));
    EXPECT_STREQ("H:x:1", t.handle);
    EXPECT_EQ(LGC_TASK_WORKING, t.state);
    EXPECT_TRUE(t.is_known);
    EXPECT_EQ(LGC_EV_DATA, apply(&t, CMD_WORK_DATA, {"H:x:1", "ab"}));
    EXPECT_TRUE(t.is_running);
    EXPECT_EQ(LGC_EV_WARNING, apply(&t, CMD_WORK_WARNING, {"H:x:1", "w"}));
    EXPECT_EQ(LGC_EV_STATUS, apply(&t, CMD_WORK_STATUS, {"H:x:1", "3", "4"}));
    EXPECT_EQ(3u, t.numerator);
    EXPECT_EQ(4u, t.denominator);
    EXPECT_EQ(LGC_EV_COMPLETE, apply(&t, CMD_WORK_COMPLETE, {"H:x:1", "cd"}));
    EXPECT_EQ(LGC_TASK_FINISHED, t.state);
    EXPECT_EQ(GEARMAN_SUCCESS, t.result_rc);
    EXPECT_EQ("abcd", result_of(t)); // warnings are not part of the result
    EXPECT_EQ(std::string("cd"), std::string(t.data, t.data_size));
    EXPECT_FALSE(t.is_running);
    // a finished task ignores later packets
    EXPECT_EQ(LGC_EV_NONE, apply(&t, CMD_WORK_FAIL, {"H:x:1"}));
    EXPECT_EQ(GEARMAN_SUCCESS, t.result_rc);
    free_task(&t);
}

TEST(LgcTask, AddTaskDoesNotAccumulate)
{
    lgc_task t = make_task(LGC_KIND_ADD_TASK, CMD_SUBMIT_JOB, LGC_TASK_WORKING);
    strcpy(t.handle, "H:x:2");
    EXPECT_EQ(LGC_EV_DATA, apply(&t, CMD_WORK_DATA, {"H:x:2", "ab"}));
    EXPECT_EQ(LGC_EV_COMPLETE, apply(&t, CMD_WORK_COMPLETE, {"H:x:2", "cd"}));
    EXPECT_EQ(0u, t.result.size);
    EXPECT_EQ(std::string("cd"), std::string(t.data, t.data_size));
    free_task(&t);
}

TEST(LgcTask, BackgroundFinishesAtJobCreated)
{
    lgc_task t = make_task(LGC_KIND_ADD_TASK, CMD_SUBMIT_JOB_BG, LGC_TASK_SUBMITTED);
    EXPECT_EQ(LGC_EV_CREATED, apply(&t, CMD_JOB_CREATED, {"H:x:3"}));
    EXPECT_EQ(LGC_TASK_FINISHED, t.state);
    EXPECT_EQ(GEARMAN_SUCCESS, t.result_rc);
    free_task(&t);
}

TEST(LgcTask, JobCreatedOnlyWhileSubmitted)
{
    lgc_task t = make_task(LGC_KIND_ADD_TASK, CMD_SUBMIT_JOB, LGC_TASK_NEW);
    EXPECT_EQ(LGC_EV_NONE, apply(&t, CMD_JOB_CREATED, {"H:x:3"}));
    EXPECT_STREQ("", t.handle);
    free_task(&t);
}

TEST(LgcTask, FailDropsResult)
{
    lgc_task t = make_task(LGC_KIND_EXECUTE, CMD_SUBMIT_JOB, LGC_TASK_WORKING);
    strcpy(t.handle, "H:x:4");
    apply(&t, CMD_WORK_DATA, {"H:x:4", "partial"});
    EXPECT_EQ(LGC_EV_FAIL, apply(&t, CMD_WORK_FAIL, {"H:x:4"}));
    EXPECT_EQ(GEARMAN_WORK_FAIL, t.result_rc);
    EXPECT_EQ(0u, t.result.size);
    free_task(&t);
}

TEST(LgcTask, ExceptionKeepsPayload)
{
    lgc_task t = make_task(LGC_KIND_EXECUTE, CMD_SUBMIT_JOB, LGC_TASK_WORKING);
    strcpy(t.handle, "H:x:5");
    EXPECT_EQ(LGC_EV_EXCEPTION, apply(&t, CMD_WORK_EXCEPTION, {"H:x:5", "boom"}));
    EXPECT_EQ(GEARMAN_WORK_EXCEPTION, t.result_rc);
    EXPECT_EQ(std::string("boom"), std::string(t.exception.value, t.exception.size));
    free_task(&t);
}

TEST(LgcTask, StatusResFinishesAStatusTask)
{
    lgc_task t = make_task(LGC_KIND_DO, CMD_GET_STATUS, LGC_TASK_SUBMITTED);
    EXPECT_EQ(LGC_EV_STATUS,
              apply(&t, CMD_STATUS_RES, {"H:x:6", "1", "1", "5", "10"}));
    EXPECT_TRUE(t.is_known);
    EXPECT_TRUE(t.is_running);
    EXPECT_EQ(5u, t.numerator);
    EXPECT_EQ(10u, t.denominator);
    EXPECT_EQ(GEARMAN_SUCCESS, t.result_rc);
    lgc_task u = make_task(LGC_KIND_DO, CMD_GET_STATUS, LGC_TASK_SUBMITTED);
    apply(&u, CMD_STATUS_RES, {"H:x:7", "0", "0", "0", "0"});
    EXPECT_FALSE(u.is_known);
    EXPECT_FALSE(u.is_running);
    free_task(&t);
    free_task(&u);
}

TEST(LgcTask, FailAfterLostConnection)
{
    lgc_task t = make_task(LGC_KIND_DO, CMD_SUBMIT_JOB, LGC_TASK_WORKING);
    lgc_task_fail(&t, GEARMAN_LOST_CONNECTION);
    EXPECT_EQ(LGC_TASK_FINISHED, t.state);
    EXPECT_EQ(GEARMAN_LOST_CONNECTION, t.result_rc);
    lgc_task_fail(&t, GEARMAN_TIMEOUT); // first outcome wins
    EXPECT_EQ(GEARMAN_LOST_CONNECTION, t.result_rc);
}

TEST(LgcTask, HandleMatchingIgnoresTrailingNul)
{
    EXPECT_TRUE(lgc_handle_matches("H:x:1", "H:x:1", 5));
    EXPECT_TRUE(lgc_handle_matches("H:x:1", "H:x:1\0", 6)); // gearmand's forwarded WORK_FAIL
    EXPECT_FALSE(lgc_handle_matches("H:x:1", "H:x:10", 6));
    EXPECT_FALSE(lgc_handle_matches("H:x:10", "H:x:1", 5));
    EXPECT_FALSE(lgc_handle_matches("", "", 0));
}

TEST(LgcResult, AppendKeepsNul)
{
    gearman_result_st r;
    memset(&r, 0, sizeof r);
    EXPECT_TRUE(gearman_result_is_null(&r));
    ASSERT_EQ(0, lgc_result_append(&r, "12", 2));
    ASSERT_EQ(0, lgc_result_append(&r, "34", 2));
    EXPECT_STREQ("1234", gearman_result_value(&r));
    EXPECT_EQ(4u, gearman_result_size(&r));
    EXPECT_EQ(1234, gearman_result_integer(&r));
    EXPECT_TRUE(gearman_result_boolean(&r));
    lgc_result_free(&r);
}

// TLS settings: the SSL option flag, set_ssl's files, clones, and a file that cannot be loaded
// (reported as GEARMAN_INVALID_ARGUMENT at connect, naming the file, before any socket I/O).
TEST(LgcTls, OptionsFilesAndClone)
{
    gearman_client_st *c = gearman_client_create(NULL);
    ASSERT_NE(nullptr, c);
    EXPECT_FALSE(gearman_client_has_option(c, GEARMAN_CLIENT_SSL));
    gearman_client_add_options(c, GEARMAN_CLIENT_SSL);
    EXPECT_TRUE(gearman_client_has_option(c, GEARMAN_CLIENT_SSL));
    gearman_client_remove_options(c, GEARMAN_CLIENT_SSL);
    EXPECT_FALSE(gearman_client_has_option(c, GEARMAN_CLIENT_SSL));
    gearman_client_set_ssl(c, true, "/nonexistent/ca.pem", "", NULL);
    EXPECT_TRUE(gearman_client_has_option(c, GEARMAN_CLIENT_SSL));
    gearman_client_st *c2 = gearman_client_clone(NULL, c);
    ASSERT_NE(nullptr, c2);
    EXPECT_TRUE(gearman_client_has_option(c2, GEARMAN_CLIENT_SSL));
    gearman_client_free(c2);
    gearman_client_free(c);

    struct lgc_universal u;
    lgc_universal_init(&u);
    ASSERT_EQ(0, lgc_tls_set(&u, true, "/nonexistent/ca.pem", NULL, ""));
    EXPECT_STREQ("/nonexistent/ca.pem", u.ssl_ca_file);
    EXPECT_EQ(nullptr, u.ssl_cert_file);
    EXPECT_EQ(nullptr, u.ssl_key_file);
    struct lgc_universal u2;
    lgc_universal_init(&u2);
    ASSERT_EQ(0, lgc_universal_copy(&u2, &u));
    EXPECT_TRUE(u2.ssl);
    EXPECT_STREQ("/nonexistent/ca.pem", u2.ssl_ca_file);
    struct lgc_conn conn;
    memset(&conn, 0, sizeof conn);
    conn.fd = -1;
    conn.host = (char *)"127.0.0.1";
    EXPECT_EQ(GEARMAN_INVALID_ARGUMENT, lgc_tls_handshake(&u, &conn, 1000));
    EXPECT_NE(nullptr, strstr(u.error, "/nonexistent/ca.pem")) << u.error;
    EXPECT_EQ(nullptr, conn.ssl);
    EXPECT_EQ(nullptr, u.ssl_ctx);
    lgc_universal_free(&u2);
    lgc_universal_free(&u);
}
