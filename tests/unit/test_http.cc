/* SPDX-License-Identifier: BSD-3-Clause */
// http: the HTTP front-end driven without libev: libmicrohttpd gets one end of a socketpair, a
// small shell forwards the engine_ops to the peers' own peer_ops and pumps http_run /
// http_flush as server.c's loop would. Covers what a wire test cannot set up: /healthz during
// the store's replay, and a submit that waits for the replay and is resumed by its end.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

extern "C" {
#include "cmd.h"
#include "config.h"
#include "engine.h"
#include "http.h"
#include "options.h"
#include "peer.h"
#include "proto.h"
#include "session.h"
#include "store.h"
}

namespace {

struct Shell {
    config cfg;
    engine eng;
    http *h = nullptr;

    Shell()
    {
        options_defaults(&cfg);
        cfg.http_port = 0;
        static const engine_ops ops = {
            [](engine *, peer *p) {
                if (p->ops != nullptr)
                    p->ops->output(p);
            },
            [](engine *, peer *p) {
                if (p->ops != nullptr)
                    p->ops->close(p);
            },
            [](engine *, int) {},
            [](engine *) { return 1000.0; },
            [](engine *, peer *p) {
                if (p->ops != nullptr)
                    p->ops->resume(p);
                else
                    session_process(p);
            },
        };
        EXPECT_EQ(engine_init(&eng, &cfg, &ops, this), 0);
        engine_set_sink(&eng, &cmd_sink);
        char err[256] = "";
        h = http_new(&eng, &cfg, err, sizeof err);
        EXPECT_NE(h, nullptr) << err;
    }

    ~Shell()
    {
        http_destroy(h);
        engine_destroy(&eng);
        config_free(&cfg);
    }

    // connect hands one end of a socketpair to the HTTP engine and returns the other.
    int connect()
    {
        int sv[2];
        EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
        sockaddr_in sa{};
        sa.sin_family = AF_INET;
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        EXPECT_EQ(http_add(h, sv[0], (sockaddr *)&sa, sizeof sa), 0);
        return sv[1];
    }

    // pump runs the HTTP engine as the loop would, until fd has a whole response with a
    // Content-Length body or rounds run out; returns what fd received.
    std::string pump(int fd, int rounds = 200)
    {
        std::string got;
        for (int i = 0; i < rounds; i++) {
            http_run(h);
            http_flush(h);
            char buf[65536];
            ssize_t n;
            while ((n = recv(fd, buf, sizeof buf, 0)) > 0)
                got.append(buf, (size_t)n);
            size_t end = got.find("\r\n\r\n");
            if (end != std::string::npos) {
                size_t cl = got.find("Content-Length: ");
                size_t len = cl != std::string::npos ? std::stoul(got.substr(cl + 16)) : 0;
                if (got.size() >= end + 4 + len)
                    return got;
            }
            pollfd pf = {fd, POLLIN, 0};
            poll(&pf, 1, 5);
        }
        return got;
    }

    static void send_all(int fd, const std::string &s)
    {
        ASSERT_EQ(send(fd, s.data(), s.size(), 0), (ssize_t)s.size());
    }
};

TEST(Http, HealthzIs503WhileTheStoreReplaysAnd200After)
{
    Shell s;
    int fd = s.connect();
    s.eng.replaying = 1;
    Shell::send_all(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    std::string r = s.pump(fd);
    EXPECT_EQ(r.rfind("HTTP/1.1 503 ", 0), 0u) << r;
    s.eng.replaying = 0;
    Shell::send_all(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); // same connection
    r = s.pump(fd);
    EXPECT_EQ(r.rfind("HTTP/1.1 200 ", 0), 0u) << r;
    EXPECT_NE(r.find("\r\n\r\nok\n"), std::string::npos) << r;
    close(fd);
    s.pump(-1, 3);
}

TEST(Http, SubmitDuringTheReplayWaitsAndIsAnsweredWhenItEnds)
{
    Shell s;
    int fd = s.connect();
    s.eng.replaying = 1;
    Shell::send_all(fd, "POST /f HTTP/1.1\r\nHost: x\r\nX-Gearman-Background: true\r\n"
                        "Content-Length: 2\r\n\r\nhi");
    std::string r = s.pump(fd, 20);
    EXPECT_EQ(r, "");           // held: the submit waits for the replay
    EXPECT_EQ(s.eng.njobs, 0u); // and made no job yet
    EXPECT_EQ(http_requests(s.h), 1u);
    s.eng.replaying = 0;
    cmd_store_sink.replay_done(&s.eng); // what the store calls when its replay is over
    r = s.pump(fd);
    EXPECT_EQ(r.rfind("HTTP/1.1 200 ", 0), 0u) << r;
    EXPECT_NE(r.find("X-Gearman-Command: JOB_CREATED"), std::string::npos) << r;
    EXPECT_EQ(s.eng.njobs, 1u);
    close(fd);
    s.pump(-1, 3);
    EXPECT_EQ(http_requests(s.h), 0u);
}

TEST(Http, ForegroundResultFromAWorkerBecomesTheBody)
{
    Shell s;
    // a worker as a plain peer of the engine
    peer w;
    peer_init(&w, &s.eng, 99, "127.0.0.1", 1);
    peer_attach(&w);
    auto pkt = [](uint32_t cmd, const std::string &body) {
        std::string p("\0REQ", 4);
        unsigned char hdr[8];
        proto_put32(hdr, cmd);
        proto_put32(hdr + 4, (uint32_t)body.size());
        p.append((char *)hdr, 8);
        return p + body;
    };
    std::string can = pkt(CMD_CAN_DO, "f");
    ASSERT_EQ(session_feed(&w, can.data(), can.size()), 0);
    int fd = s.connect();
    Shell::send_all(fd, "POST /f HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc");
    EXPECT_EQ(s.pump(fd, 20), "");
    ASSERT_EQ(s.eng.njobs, 1u);
    outq_clear(&w.out);
    std::string grab = pkt(CMD_GRAB_JOB, "");
    ASSERT_EQ(session_feed(&w, grab.data(), grab.size()), 0);
    std::string assigned;
    iovec iov[8];
    int n = outq_iov(&w.out, iov, 8);
    for (int i = 0; i < n; i++)
        assigned.append((char *)iov[i].iov_base, iov[i].iov_len);
    outq_clear(&w.out);
    ASSERT_GT(assigned.size(), 12u);
    std::string handle = assigned.substr(12, assigned.find('\0', 12) - 12);
    std::string data = pkt(CMD_WORK_DATA, handle + std::string("\0x", 2)) +
                       pkt(CMD_WORK_COMPLETE, handle + std::string("\0yz", 3));
    ASSERT_EQ(session_feed(&w, data.data(), data.size()), 0);
    std::string r = s.pump(fd);
    EXPECT_EQ(r.rfind("HTTP/1.1 200 ", 0), 0u) << r;
    EXPECT_NE(r.find("X-Gearman-Job-Handle: " + handle + "\r\n"), std::string::npos) << r;
    EXPECT_EQ(r.substr(r.size() - 3), "xyz");
    close(fd);
    s.pump(-1, 3);
    session_detach(&w);
    char err[256];
    EXPECT_EQ(engine_check(&s.eng, err, sizeof err), 0) << err;
}

// A %00 anywhere in the path (before the query) would cut the decoded function name.
TEST(HttpHead, PathWithAnEncodedNulIsFound)
{
    EXPECT_TRUE(http_path_has_nul("/fn%00rest"));
    EXPECT_TRUE(http_path_has_nul("/fn%00"));
    EXPECT_TRUE(http_path_has_nul("%00"));
    EXPECT_FALSE(http_path_has_nul("/fn"));
    EXPECT_FALSE(http_path_has_nul("/fn%0A%20"));
    EXPECT_FALSE(http_path_has_nul("/fn%0"));
    EXPECT_FALSE(http_path_has_nul("/fn?x=%00")); // the query is ignored
}

// Only an Origin naming the Host the request was sent to is this server's own page.
TEST(HttpHead, SameOriginComparesTheOriginWithHost)
{
    EXPECT_TRUE(http_same_origin("http://127.0.0.1:8080", "127.0.0.1:8080"));
    EXPECT_TRUE(http_same_origin("https://Spur.example", "spur.example"));
    EXPECT_FALSE(http_same_origin("http://evil.example", "127.0.0.1:8080"));
    EXPECT_FALSE(http_same_origin("http://127.0.0.1:9999", "127.0.0.1:8080"));
    EXPECT_FALSE(http_same_origin("null", "null"));
    EXPECT_FALSE(http_same_origin("http://127.0.0.1:8080", nullptr));
}

} // namespace
