/* SPDX-License-Identifier: BSD-3-Clause */
// conn driven through the in-memory loopback transport (transport_loop.h) on a real libev loop,
// with the real protocol handling behind it: partial reads and writes resume, "would block" in
// either direction parks the right watcher, end of input and errors close only that connection.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

extern "C" {
#include "admin.h"
#include "cmd.h"
#include "config.h"
#include "conn.h"
#include "engine.h"
#include "listen.h"
#include "options.h"
#include "peer.h"
#include "proto.h"
#include "transport.h"
#include "transport_loop.h"
}

namespace {

std::string req(uint32_t cmd, const std::string &body)
{
    std::string s("\0REQ", 4);
    unsigned char h[8];
    proto_put32(h, cmd);
    proto_put32(h + 4, (uint32_t)body.size());
    s.append((char *)h, 8);
    return s + body;
}

std::string res(uint32_t cmd, const std::string &body)
{
    std::string s = req(cmd, body);
    s[3] = 'S';
    return s;
}

// Shell is the smallest server: a loop, an engine whose callbacks go to the peers' own ops (conn's),
// a conn_ctx, and a
// prepare watcher doing what server.c's does with connections before the loop sleeps.
struct Shell {
    config cfg;
    engine eng;
    conn_ctx conns;
    struct ev_loop *loop;
    ev_prepare prep;

    Shell()
    {
        options_defaults(&cfg);
        loop = ev_loop_new(EVFLAG_AUTO);
        static const engine_ops ops = {
            [](engine *, peer *p) { p->ops->output(p); },
            [](engine *, peer *p) { p->ops->close(p); },
            [](engine *, int) {},
            [](engine *e) { return ev_now(static_cast<Shell *>(e->shell)->loop); },
            [](engine *, peer *p) { p->ops->resume(p); },
        };
        EXPECT_EQ(engine_init(&eng, &cfg, &ops, this), 0);
        engine_set_sink(&eng, &cmd_sink);
        EXPECT_EQ(conn_ctx_init(&conns, loop, &eng, &cfg, nullptr), 0);
        ev_prepare_init(&prep, [](struct ev_loop *, ev_prepare *w, int) {
            auto *sh = static_cast<Shell *>(w->data);
            conn_ctx *x = &sh->conns;
            conn_run_deferred(x);
            admin_continue(&sh->eng);
            conn_flush_dirty(x);
            conn_flush_lazy(x);
            conn_free_closed(x);
        });
        prep.data = this;
        ev_prepare_start(loop, &prep);
    }

    ~Shell()
    {
        ev_prepare_stop(loop, &prep);
        conn_ctx_destroy(&conns);
        engine_destroy(&eng);
        ev_loop_destroy(loop);
        config_free(&cfg);
        for (auto &lp : pipes)
            loop_pipe_destroy(lp.get());
    }

    std::vector<std::unique_ptr<loop_pipe>> pipes;

    // connect makes a connection through the loop transport, from the table, as accept_cb does
    // through its listener's kind.
    conn *connect(loop_pipe **out)
    {
        pipes.emplace_back(new loop_pipe());
        loop_pipe *lp = pipes.back().get();
        EXPECT_EQ(loop_pipe_init(lp), 0);
        transport t;
        EXPECT_EQ(transport_kinds[TRANSPORT_LOOP]->wrap(&t, -1, lp), 0);
        *out = lp;
        return conn_new(&conns, &t);
    }

    // turn runs one loop iteration without blocking: the fed events, then the prepare watcher.
    void turn()
    {
        ev_run(loop, EVRUN_NOWAIT);
        ev_run(loop, EVRUN_NOWAIT);
    }

    // send puts bytes on lp for c and tells c its transport is readable.
    void send(conn *c, loop_pipe *lp, const std::string &bytes)
    {
        buf_append(&lp->to_server, bytes.data(), bytes.size());
        readable(c);
    }

    void readable(conn *c)
    {
        ev_feed_event(loop, &c->rio, EV_READ);
        turn();
    }

    void writable(conn *c)
    {
        ev_feed_event(loop, &c->wio, EV_WRITE);
        turn();
    }

    static std::string take(loop_pipe *lp)
    {
        std::string s(buf_head(&lp->from_server), buf_len(&lp->from_server));
        buf_consume(&lp->from_server, s.size());
        return s;
    }
};

TEST(Conn, TableHasTheLoopTransport)
{
    EXPECT_EQ(transport_kinds[TRANSPORT_PLAIN], &transport_tcp);
    EXPECT_EQ(transport_kinds[TRANSPORT_LOOP], &transport_loop);
    EXPECT_STREQ(transport_kinds[TRANSPORT_LOOP]->name, "loop");
}

TEST(Conn, TcpListenersSpeakGearmanAndLeaveTheTransportToTheCaller)
{
    listener lis[LISTEN_MAX];
    memset(lis, 0xA5, sizeof lis); // garbage, as on the stack
    char host[] = "127.0.0.1";
    char *hosts[] = {host};
    char err[256];
    int port = 0;
    int n = listen_tcp(hosts, 1, 0, 8, lis, LISTEN_MAX, &port, err, sizeof err);
    ASSERT_EQ(n, 1) << err;
    EXPECT_GT(port, 0);
    EXPECT_EQ(lis[0].proto, LISTEN_GEARMAN);
    EXPECT_EQ(lis[0].transport, nullptr);
    EXPECT_EQ(lis[0].transport_arg, nullptr);
    EXPECT_EQ(std::string(lis[0].name), "127.0.0.1:" + std::to_string(port));
    close(lis[0].fd);
}

// localhost_addresses lists what "localhost" resolves to that this machine can bind (::1 is
// skipped where IPv6 is off), as "ADDR:PORT" names.
static std::set<std::string> localhost_addresses(int port)
{
    std::set<std::string> out;
    addrinfo hints{}, *res = nullptr;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo("localhost", "0", &hints, &res) != 0)
        return out;
    for (addrinfo *ai = res; ai != nullptr; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, SOCK_STREAM, 0);
        if (fd < 0)
            continue;
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
            char host[INET6_ADDRSTRLEN];
            const void *a = ai->ai_family == AF_INET6
                                ? (const void *)&((sockaddr_in6 *)ai->ai_addr)->sin6_addr
                                : (const void *)&((sockaddr_in *)ai->ai_addr)->sin_addr;
            inet_ntop(ai->ai_family, a, host, sizeof host);
            out.insert(ai->ai_family == AF_INET6
                           ? "[" + std::string(host) + "]:" + std::to_string(port)
                           : std::string(host) + ":" + std::to_string(port));
        }
        close(fd);
    }
    freeaddrinfo(res);
    return out;
}

TEST(Conn, LocalhostListensOnEveryAddressItHas)
{
    // --listen=localhost (the quick start's and dist/spurd.conf's) binds 127.0.0.1 and ::1 where
    // /etc/hosts maps localhost to both, as Debian's does: a client that tries ::1 first (the
    // gearman CLI) must find the server there
    listener lis[LISTEN_MAX];
    char host[] = "localhost";
    char *hosts[] = {host};
    char err[256];
    int port = 0;
    int n = listen_tcp(hosts, 1, 0, 8, lis, LISTEN_MAX, &port, err, sizeof err);
    ASSERT_GE(n, 1) << err;
    std::set<std::string> got;
    for (int i = 0; i < n; i++) {
        got.insert(lis[i].name);
        close(lis[i].fd);
    }
    EXPECT_EQ(got, localhost_addresses(port));
}

TEST(Conn, EchoRoundTripAndPeerName)
{
    Shell sh;
    loop_pipe *lp;
    conn *c = sh.connect(&lp);
    ASSERT_NE(c, nullptr);
    EXPECT_STREQ(c->peer.ip, "loop");
    EXPECT_TRUE(c->peer.flags & PEER_LOCAL);
    EXPECT_STREQ(c->peer.listener, "-"); // the shell names it at accept; none here
    EXPECT_EQ(c->peer.cert_names, nullptr);
    EXPECT_EQ(conn_count(&sh.conns), 1u);
    sh.send(c, lp, req(CMD_ECHO_REQ, "hello"));
    EXPECT_EQ(Shell::take(lp), res(CMD_ECHO_RES, "hello"));
    sh.send(c, lp, "version\n");
    EXPECT_EQ(Shell::take(lp).substr(0, 2), "OK");
}

TEST(Conn, ShortReadsAssembleOnePacket)
{
    Shell sh;
    loop_pipe *lp;
    conn *c = sh.connect(&lp);
    lp->read_max = 1; // every read returns one byte
    std::string pkt = req(CMD_ECHO_REQ, "abc");
    buf_append(&lp->to_server, pkt.data(), pkt.size());
    for (size_t i = 0; i + 1 < pkt.size(); i++) {
        sh.readable(c);
        EXPECT_EQ(buf_len(&lp->from_server), 0u) << "after byte " << i;
    }
    sh.readable(c);
    EXPECT_EQ(Shell::take(lp), res(CMD_ECHO_RES, "abc"));
}

TEST(Conn, PartialWritesResumeWhenWritable)
{
    Shell sh;
    loop_pipe *lp;
    conn *c = sh.connect(&lp);
    std::string body(1000, 'x');
    std::string want = res(CMD_ECHO_RES, body) + res(CMD_ECHO_RES, "2");
    lp->write_max = 7;    // short writes
    lp->write_room = 100; // then the transport is full
    sh.send(c, lp, req(CMD_ECHO_REQ, body) + req(CMD_ECHO_REQ, "2"));
    EXPECT_EQ(buf_len(&lp->from_server), 100u);
    EXPECT_TRUE(ev_is_active(&c->wio));
    EXPECT_TRUE(c->peer.flags & PEER_BLOCKED);
    sh.writable(c); // still full: nothing more, still waiting
    EXPECT_EQ(buf_len(&lp->from_server), 100u);
    EXPECT_TRUE(ev_is_active(&c->wio));
    lp->write_room = SIZE_MAX;
    sh.writable(c);
    EXPECT_EQ(Shell::take(lp), want);
    EXPECT_FALSE(ev_is_active(&c->wio));
    EXPECT_FALSE(c->peer.flags & PEER_BLOCKED);
}

TEST(Conn, EndOfInputClosesAfterTheReplies)
{
    Shell sh;
    loop_pipe *lp;
    conn *c = sh.connect(&lp);
    lp->eof = 1;
    sh.send(c, lp, req(CMD_ECHO_REQ, "bye"));
    sh.readable(c); // the end of input
    EXPECT_EQ(Shell::take(lp), res(CMD_ECHO_RES, "bye"));
    EXPECT_EQ(lp->closed, 1);
    EXPECT_EQ(conn_count(&sh.conns), 0u);
}

TEST(Conn, EndOfInputWaitsForABlockedWrite)
{
    Shell sh;
    loop_pipe *lp;
    conn *c = sh.connect(&lp);
    lp->write_room = 0;
    sh.send(c, lp, req(CMD_ECHO_REQ, "late"));
    lp->eof = 1;
    sh.readable(c);
    EXPECT_EQ(lp->closed, 0); // the reply is still queued
    lp->write_room = SIZE_MAX;
    sh.writable(c);
    EXPECT_EQ(Shell::take(lp), res(CMD_ECHO_RES, "late"));
    EXPECT_EQ(lp->closed, 1);
    EXPECT_EQ(conn_count(&sh.conns), 0u);
}

TEST(Conn, ReadErrorClosesOnlyThatConnection)
{
    Shell sh;
    loop_pipe *la, *lb;
    conn *a = sh.connect(&la);
    conn *b = sh.connect(&lb);
    la->read_result = TRANSPORT_ERROR;
    sh.readable(a);
    EXPECT_EQ(la->closed, 1);
    EXPECT_EQ(conn_count(&sh.conns), 1u);
    sh.send(b, lb, req(CMD_ECHO_REQ, "still here"));
    EXPECT_EQ(Shell::take(lb), res(CMD_ECHO_RES, "still here"));
    EXPECT_EQ(lb->closed, 0);
}

TEST(Conn, WriteErrorClosesOnlyThatConnection)
{
    Shell sh;
    loop_pipe *la, *lb;
    conn *a = sh.connect(&la);
    conn *b = sh.connect(&lb);
    la->write_result = TRANSPORT_ERROR;
    sh.send(a, la, req(CMD_ECHO_REQ, "lost"));
    EXPECT_EQ(la->closed, 1);
    EXPECT_EQ(buf_len(&la->from_server), 0u);
    sh.send(b, lb, req(CMD_ECHO_REQ, "kept"));
    EXPECT_EQ(Shell::take(lb), res(CMD_ECHO_RES, "kept"));
    EXPECT_EQ(conn_count(&sh.conns), 1u);
}

TEST(Conn, ReadThatWantsWriteRetriesWhenWritable)
{
    Shell sh;
    loop_pipe *lp;
    conn *c = sh.connect(&lp);
    lp->read_result = TRANSPORT_WANT_WRITE; // as a TLS read in a renegotiation
    sh.send(c, lp, req(CMD_ECHO_REQ, "tls"));
    EXPECT_TRUE(c->read_wants_write);
    EXPECT_TRUE(ev_is_active(&c->wio));
    EXPECT_EQ(buf_len(&lp->from_server), 0u);
    lp->read_result = 0;
    sh.writable(c);
    EXPECT_EQ(Shell::take(lp), res(CMD_ECHO_RES, "tls"));
    EXPECT_FALSE(c->read_wants_write);
    EXPECT_FALSE(ev_is_active(&c->wio));
}

TEST(Conn, WriteThatWantsReadRetriesWhenReadable)
{
    Shell sh;
    loop_pipe *lp;
    conn *c = sh.connect(&lp);
    lp->write_result = TRANSPORT_WANT_READ;
    sh.send(c, lp, req(CMD_ECHO_REQ, "tls"));
    EXPECT_TRUE(c->write_wants_read);
    EXPECT_FALSE(ev_is_active(&c->wio));
    EXPECT_TRUE(c->peer.flags & PEER_BLOCKED);
    lp->write_result = 0;
    sh.readable(c);
    EXPECT_EQ(Shell::take(lp), res(CMD_ECHO_RES, "tls"));
    EXPECT_FALSE(c->write_wants_read);
    EXPECT_EQ(lp->closed, 0);
}

TEST(Conn, InputWaitsWhileLongRepliesAreWrittenAndKeepsOrder)
{
    Shell sh;
    loop_pipe *lw, *la, *lb;
    conn *w = sh.connect(&lw);
    conn *a = sh.connect(&la);
    conn *b = sh.connect(&lb);
    std::string can;
    for (int i = 0; i < 300; i++) // a 'status' reply of some 60 KB
        can += req(CMD_CAN_DO, std::string(180, 'f') + std::to_string(i));
    sh.send(w, lw, can);
    sh.send(a, la, "status\n");
    std::string one = Shell::take(la);
    ASSERT_GT(one.size(), 40000u);
    std::string in, want;
    for (int i = 0; i < 6; i++) {
        in += "status\n";
        want += one;
    }
    buf_append(&la->to_server, in.data(), in.size());
    ev_feed_event(sh.loop, &a->rio, EV_READ);
    ev_run(sh.loop, EVRUN_NOWAIT);
    ev_feed_event(sh.loop, &a->rio, EV_READ); // more input is said to be there
    ev_run(sh.loop, EVRUN_NOWAIT);
    EXPECT_LT(buf_len(&la->from_server), want.size());
    EXPECT_FALSE(ev_is_active(&a->rio)); // not read while the replies before it are written
    sh.send(b, lb, req(CMD_ECHO_REQ, "b")); // another connection is served meanwhile
    EXPECT_EQ(Shell::take(lb), res(CMD_ECHO_RES, "b"));
    for (int turns = 0; buf_len(&la->from_server) < want.size() && turns < 100; turns++)
        ev_run(sh.loop, EVRUN_NOWAIT);
    EXPECT_FALSE(conn_have_deferred(&sh.conns));
    sh.turn();
    std::string got = Shell::take(la);
    EXPECT_EQ(got.size(), want.size());
    EXPECT_TRUE(got == want);
    EXPECT_TRUE(ev_is_active(&a->rio)); // reading again
}

TEST(Conn, JobFlowsBetweenTwoConnections)
{
    Shell sh;
    loop_pipe *lw, *lc;
    conn *w = sh.connect(&lw);
    conn *cl = sh.connect(&lc);
    sh.send(w, lw, req(CMD_CAN_DO, "f") + req(CMD_PRE_SLEEP, ""));
    EXPECT_EQ(Shell::take(lw), "");
    sh.send(cl, lc, req(CMD_SUBMIT_JOB, std::string("f\0u\0data", 8)));
    std::string created = Shell::take(lc);
    ASSERT_EQ(created.substr(0, 12), res(CMD_JOB_CREATED, "").substr(0, 8) + created.substr(8, 4));
    std::string handle = created.substr(12);
    EXPECT_EQ(Shell::take(lw), res(CMD_NOOP, "")); // the sleeping worker is woken
    sh.send(w, lw, req(CMD_GRAB_JOB, ""));
    EXPECT_EQ(Shell::take(lw), res(CMD_JOB_ASSIGN, handle + std::string("\0f\0data", 7)));
    sh.send(w, lw, req(CMD_WORK_COMPLETE, handle + std::string("\0done", 5)));
    EXPECT_EQ(Shell::take(lc), res(CMD_WORK_COMPLETE, handle + std::string("\0done", 5)));
    // the worker leaves; the client is unaffected
    lw->eof = 1;
    sh.readable(w);
    EXPECT_EQ(lw->closed, 1);
    EXPECT_EQ(conn_count(&sh.conns), 1u);
    sh.send(cl, lc, req(CMD_ECHO_REQ, "x"));
    EXPECT_EQ(Shell::take(lc), res(CMD_ECHO_RES, "x"));
}

// A transport may hold input that no fd event will announce (TLS records already decrypted):
// conn reads it without waiting for the fd, here when a read stops short of what is held.
TEST(Conn, InputHeldInsideTheTransportIsReadWithoutAnFdEvent)
{
    Shell sh;
    loop_pipe *lp;
    conn *c = sh.connect(&lp);
    lp->held = 1;
    lp->read_max = 5; // each read takes 5 bytes of what the transport holds
    std::string in = req(CMD_ECHO_REQ, "held") + req(CMD_ECHO_REQ, "again");
    sh.send(c, lp, in); // one fd event only
    for (int turns = 0; buf_len(&lp->to_server) > 0 && turns < 100; turns++)
        sh.turn();
    sh.turn();
    EXPECT_EQ(Shell::take(lp), res(CMD_ECHO_RES, "held") + res(CMD_ECHO_RES, "again"));
    EXPECT_FALSE(conn_have_deferred(&sh.conns));
}

// Held input also waits out a pause in reading (replies over the quota) and is read when the
// connection resumes, although no fd event comes.
TEST(Conn, InputHeldInsideTheTransportIsReadAfterAPause)
{
    Shell sh;
    loop_pipe *lw, *la;
    conn *w = sh.connect(&lw);
    conn *a = sh.connect(&la);
    std::string can;
    for (int i = 0; i < 300; i++) // a 'status' reply of some 60 KB
        can += req(CMD_CAN_DO, std::string(180, 'f') + std::to_string(i));
    sh.send(w, lw, can);
    sh.send(a, la, "status\n");
    std::string one = Shell::take(la);
    ASSERT_GT(one.size(), 40000u);
    la->held = 1;
    la->read_max = 10; // a read takes one line and a little more
    std::string in, want;
    for (int i = 0; i < 6; i++) {
        in += "status\n";
        want += one;
    }
    in += req(CMD_ECHO_REQ, "last");
    want += res(CMD_ECHO_RES, "last");
    sh.send(a, la, in); // one fd event only
    for (int turns = 0; buf_len(&la->from_server) < want.size() && turns < 200; turns++)
        ev_run(sh.loop, EVRUN_NOWAIT);
    sh.turn();
    std::string got = Shell::take(la);
    EXPECT_EQ(got.size(), want.size());
    EXPECT_TRUE(got == want);
}

// While the transport's handshake runs nothing reaches the session; when it ends the verified
// names go to the peer before the first request is handled.
TEST(Conn, HandshakeEndsWithTheCertificateNamesOnThePeer)
{
    Shell sh;
    loop_pipe *lp;
    static const char names[] = "worker-1\0w1.example\0"; // + the final empty string
    transport t;
    sh.pipes.emplace_back(new loop_pipe());
    lp = sh.pipes.back().get();
    ASSERT_EQ(loop_pipe_init(lp), 0);
    lp->handshaking = 1;
    lp->names = names;
    lp->names_len = sizeof names;
    ASSERT_EQ(transport_kinds[TRANSPORT_LOOP]->wrap(&t, -1, lp), 0);
    conn *c = conn_new(&sh.conns, &t);
    ASSERT_NE(c, nullptr);
    EXPECT_TRUE(c->handshaking);
    sh.send(c, lp, req(CMD_ECHO_REQ, "x"));
    EXPECT_EQ(Shell::take(lp), "");
    EXPECT_EQ(c->peer.cert_names, nullptr);
    lp->handshaking = 0;
    sh.readable(c);
    EXPECT_FALSE(c->handshaking);
    ASSERT_NE(c->peer.cert_names, nullptr);
    EXPECT_EQ(std::string(c->peer.cert_names, sizeof names), std::string(names, sizeof names));
    EXPECT_EQ(Shell::take(lp), res(CMD_ECHO_RES, "x"));
    EXPECT_EQ(sh.eng.stats.tls_handshakes, 1u);
}

// A handshake still running after --ssl-handshake-timeout closes that connection only.
TEST(Conn, HandshakeTimeoutClosesOnlyTheStalledConnection)
{
    Shell sh;
    sh.cfg.ssl_handshake_timeout = 5;
    loop_pipe *slow, *ok;
    conn *fine = sh.connect(&ok);
    transport t;
    sh.pipes.emplace_back(new loop_pipe());
    slow = sh.pipes.back().get();
    ASSERT_EQ(loop_pipe_init(slow), 0);
    slow->handshaking = 1;
    ASSERT_EQ(transport_kinds[TRANSPORT_LOOP]->wrap(&t, -1, slow), 0);
    conn *c = conn_new(&sh.conns, &t);
    ASSERT_NE(c, nullptr);
    double t0 = c->opened;
    conn_handshake_sweep(&sh.conns, t0 + 4.9);
    sh.turn();
    EXPECT_EQ(slow->closed, 0);
    conn_handshake_sweep(&sh.conns, t0 + 5.0);
    sh.turn();
    EXPECT_EQ(slow->closed, 1);
    EXPECT_EQ(sh.eng.stats.tls_handshake_timeouts, 1u);
    EXPECT_EQ(conn_count(&sh.conns), 1u);
    sh.send(fine, ok, req(CMD_ECHO_REQ, "y"));
    EXPECT_EQ(Shell::take(ok), res(CMD_ECHO_RES, "y"));
}

// The idle sweep walks the connections only. It used to walk every peer of the engine as a conn,
// so another kind of peer (an HTTP request) whose bytes at conn's partial_since looked like an
// old unfinished packet was "closed" as a conn.
TEST(Conn, IdleSweepLeavesPeersThatAreNotConnectionsAlone)
{
    Shell sh;
    sh.cfg.idle_timeout = 1;
    static const peer_ops other_ops = {[](peer *) {}, [](peer *) {}, [](peer *) {}, nullptr};
    // another owner's peer, followed by bytes that read as partial_since = 1.0 through a conn
    alignas(conn) unsigned char mem[sizeof(conn)] = {};
    peer *other = reinterpret_cast<peer *>(mem);
    peer_init(other, &sh.eng, -1, "other", 0);
    other->ops = &other_ops;
    peer_attach(other);
    double old = 1.0;
    memcpy(mem + offsetof(conn, partial_since), &old, sizeof old);
    loop_pipe *lp;
    conn *c = sh.connect(&lp);
    ASSERT_NE(c, nullptr);
    sh.send(c, lp, req(CMD_ECHO_REQ, "x").substr(0, 5)); // an unfinished packet
    ASSERT_GT(c->partial_since, 0.0);
    double since = c->partial_since;
    conn_idle_sweep(&sh.conns, since + 0.5); // neither waited past the limit
    sh.turn();
    EXPECT_FALSE(other->flags & PEER_CLOSING);
    EXPECT_EQ(lp->closed, 0);
    conn_idle_sweep(&sh.conns, since + 1.0); // the conn's packet did
    sh.turn();
    EXPECT_FALSE(other->flags & PEER_CLOSING);
    EXPECT_EQ(lp->closed, 1);
    EXPECT_EQ(conn_count(&sh.conns), 0u);
    peer_unlink(other);
}

} // namespace
