/* SPDX-License-Identifier: BSD-3-Clause */
// A fake I/O shell for driving the engine and peers without sockets: it records which peers
// were flushed or closed and lets tests read what a peer would have been sent.
#ifndef SPUR_TEST_FAKE_SHELL_H
#define SPUR_TEST_FAKE_SHELL_H

#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

extern "C" {
#include "cmd.h"
#include "config.h"
#include "dump.h"
#include "engine.h"
#include "feature_set.h"
#include "options.h"
#include "peer.h"
#include "recur.h"
#include "session.h"
}

// Packet helpers the unit suites share.
namespace fake {

// join returns the arguments joined with NUL bytes, as a packet body carries them.
inline std::string join(std::initializer_list<std::string> parts)
{
    std::string s;
    bool first = true;
    for (auto &p : parts) {
        if (!first)
            s += '\0';
        s += p;
        first = false;
    }
    return s;
}

// body_of returns the body of the first packet in s and its command in *cmd ("<none>" when s
// holds no whole header).
inline std::string body_of(const std::string &s, uint32_t *cmd)
{
    if (s.size() < 12)
        return "<none>";
    *cmd = proto_get32(s.data() + 4);
    return s.substr(12, proto_get32(s.data() + 8));
}

} // namespace fake

struct FakeShell {
    config cfg;
    engine eng;
    std::set<peer *> closed;
    int shutdowns = 0;
    int graceful = -1;
    double clock = 1000.0;
    std::vector<std::unique_ptr<peer>> peers;

    FakeShell() { options_defaults(&cfg); }

    void start()
    {
        static const engine_ops ops = {
            [](engine *, peer *) {},
            [](engine *e, peer *p) { static_cast<FakeShell *>(e->shell)->closed.insert(p); },
            [](engine *e, int g) {
                auto *f = static_cast<FakeShell *>(e->shell);
                f->shutdowns++;
                f->graceful = g;
                if (g)
                    engine_begin_shutdown(e);
            },
            [](engine *e) { return static_cast<FakeShell *>(e->shell)->clock; },
            [](engine *, peer *p) { session_process(p); },
        };
        ASSERT_EQ(engine_init(&eng, &cfg, &ops, this), 0);
        engine_set_sink(&eng, &cmd_sink);
        ASSERT_EQ(features_attach(&eng), 0); // the features, as the server attaches them
    }

    ~FakeShell()
    {
        for (auto &p : peers)
            if (p->eng != nullptr)
                session_detach(p.get());
        engine_destroy(&eng);
        config_free(&cfg);
    }

    peer *connect(const char *ip = "127.0.0.1", int local = 1)
    {
        peers.emplace_back(new peer());
        peer *p = peers.back().get();
        peer_init(p, &eng, (int)peers.size() + 10, ip, local);
        peer_attach(p);
        return p;
    }

    void disconnect(peer *p)
    {
        session_detach(p);
        p->eng = nullptr;
    }

    // take returns and removes everything queued for p.
    static std::string take(peer *p)
    {
        std::string out;
        iovec iov[64];
        while (outq_pending(&p->out) > 0) {
            int n = outq_iov(&p->out, iov, 64);
            size_t k = 0;
            for (int i = 0; i < n; i++) {
                out.append((char *)iov[i].iov_base, iov[i].iov_len);
                k += iov[i].iov_len;
            }
            outq_consume(&p->out, k);
        }
        return out;
    }

    static std::string req(uint32_t cmd, const std::string &body)
    {
        std::string s("\0REQ", 4);
        unsigned char h[8];
        proto_put32(h, cmd);
        proto_put32(h + 4, (uint32_t)body.size());
        s.append((char *)h, 8);
        return s + body;
    }

    static std::string res(uint32_t cmd, const std::string &body)
    {
        std::string s = req(cmd, body);
        s[3] = 'S';
        return s;
    }

    // feed hands p the bytes, then, as the shell's next loop iterations would, the input it
    // deferred at a reply quota (PEER_DEFERRED), so a test may feed any amount at once.
    static int feed(peer *p, const std::string &bytes)
    {
        int rc = session_feed(p, bytes.data(), bytes.size());
        while (rc == 0 && (p->flags & PEER_DEFERRED) && !(p->flags & PEER_CLOSING))
            rc = session_process(p);
        return rc;
    }
};

#endif
