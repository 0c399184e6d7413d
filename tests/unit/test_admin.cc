/* SPDX-License-Identifier: BSD-3-Clause */
// Unit tests for admin commands that need engine state: sliced listings, shutdown policy.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "fake_shell.h"

extern "C" {
#include "admin.h"
#include "func.h"
#include "worker.h"
#include "spur_config.h"
}

using std::string;

#ifndef ADMIN_SLICE_ONE
#define ADMIN_SLICE_ONE 256 // (lets this file build against the code before listings took turns)
#endif

class AdminTest : public ::testing::Test {
  protected:
    FakeShell f;
    void SetUp() override
    {
        f.cfg.job_handle_prefix = strdup("H:t");
        f.start();
    }
    void submit_bg(peer *c, int n)
    {
        string in;
        for (int i = 0; i < n; i++) {
            string body = string("f\0u", 3) + std::to_string(i) + string("\0x", 2);
            in += FakeShell::req(CMD_SUBMIT_JOB_BG, body);
        }
        ASSERT_EQ(FakeShell::feed(c, in), 0);
        FakeShell::take(c);
    }
    static size_t count_lines(const string &s)
    {
        size_t n = 0;
        for (char ch : s)
            n += ch == '\n';
        return n;
    }
};

TEST_F(AdminTest, LongShowJobsIsWrittenInSlices)
{
    peer *c = f.connect();
    submit_bg(c, 3 * ADMIN_SLICE + 10);
    ASSERT_EQ(FakeShell::feed(c, "show jobs\n"), 0);
    string first = FakeShell::take(c);
    EXPECT_EQ(count_lines(first), (size_t)ADMIN_SLICE_ONE) << "one slice per loop iteration";
    EXPECT_EQ(first.find(".\n"), string::npos);
    EXPECT_TRUE(admin_ready(&f.eng));
    string all = first;
    int rounds = 0;
    while (!list_empty(&f.eng.listings) && rounds < 100) {
        admin_continue(&f.eng);
        all += FakeShell::take(c);
        rounds++;
    }
    EXPECT_EQ(rounds, (3 * ADMIN_SLICE + 10 - ADMIN_SLICE_ONE) / ADMIN_SLICE_ONE + 1);
    EXPECT_EQ(count_lines(all), (size_t)(3 * ADMIN_SLICE + 10 + 1));
    EXPECT_EQ(all.substr(all.size() - 2), ".\n");
    EXPECT_EQ(all.find("H:t:"), 0u);
}

// Many listings at once share one budget per loop iteration, round-robin, so other connections
// wait at most one budget's worth of rows; each listing is still complete and in handle order,
// and nothing is copied per request (a marker in the job list keeps each one's place).
TEST_F(AdminTest, ConcurrentListingsShareOneBudgetPerIteration)
{
    peer *c = f.connect();
    submit_bg(c, 2 * ADMIN_SLICE);
    std::vector<peer *> ls;
    std::vector<string> out(50);
    for (int i = 0; i < 50; i++) {
        ls.push_back(f.connect());
        ASSERT_EQ(FakeShell::feed(ls.back(), i % 2 ? "show jobs\n" : "show unique jobs\n"), 0);
        out[i] = FakeShell::take(ls.back());
    }
    // a job submitted now is not listed; one finished now is not listed either
    submit_bg(c, 1);
    int rounds = 0;
    while (!list_empty(&f.eng.listings) && rounds < 10000) {
        admin_continue(&f.eng);
        size_t rows = 0;
        for (int i = 0; i < 50; i++) {
            string more = FakeShell::take(ls[i]);
            rows += count_lines(more);
            out[i] += more;
        }
        EXPECT_LE(rows, (size_t)ADMIN_SLICE + ADMIN_SLICE_ONE) << "round " << rounds;
        rounds++;
    }
    EXPECT_GE(rounds, 50 * 2 * ADMIN_SLICE / (ADMIN_SLICE + ADMIN_SLICE_ONE));
    for (int i = 0; i < 50; i++) {
        EXPECT_EQ(count_lines(out[i]), (size_t)(2 * ADMIN_SLICE + 1)) << i;
        if (i % 2) {
            EXPECT_EQ(out[i].find("H:t:"), 0u);
            // handle numbers strictly increase
            uint64_t last = 0;
            size_t pos = 0;
            while ((pos = out[i].find("H:t:", pos)) != string::npos) {
                uint64_t id = strtoull(out[i].c_str() + pos + 4, nullptr, 10);
                EXPECT_GT(id, last);
                last = id;
                pos += 4;
            }
        } else {
            EXPECT_EQ(out[i].substr(0, 3), "u0\n");
        }
    }
    char err[256];
    EXPECT_EQ(engine_check(&f.eng, err, sizeof err), 0) << err;
    EXPECT_EQ(session_check(&f.eng, err, sizeof err), 0) << err;
}

// `status` is written in slices too: 600k functions used to be cut at the output limit.
TEST_F(AdminTest, LongStatusIsWrittenInSlicesAndComplete)
{
    peer *c = f.connect();
    string in;
    int n = 3 * ADMIN_SLICE + 7;
    for (int i = 0; i < n; i++)
        in += "create function fn" + std::to_string(i) + "\n";
    ASSERT_EQ(FakeShell::feed(c, in), 0);
    FakeShell::take(c);
    ASSERT_EQ(FakeShell::feed(c, "status\n"), 0);
    string all = FakeShell::take(c);
    EXPECT_EQ(count_lines(all), (size_t)ADMIN_SLICE_ONE);
    // a function dropped and one created meanwhile are not listed
    peer *a = f.connect();
    ASSERT_EQ(FakeShell::feed(a, "drop function fn" + std::to_string(n - 1) +
                                     "\ncreate function late\n"), 0);
    EXPECT_EQ(FakeShell::take(a), "OK\r\nOK\r\n");
    while (!list_empty(&f.eng.listings)) {
        admin_continue(&f.eng);
        all += FakeShell::take(c);
    }
    string want;
    for (int i = 0; i < n - 1; i++)
        want += "fn" + std::to_string(i) + "\t0\t0\t0\n";
    EXPECT_EQ(all, want + ".\n");
    ASSERT_EQ(FakeShell::feed(c, "prioritystatus\n"), 0);
    string ps = FakeShell::take(c);
    while (!list_empty(&f.eng.listings)) {
        admin_continue(&f.eng);
        ps += FakeShell::take(c);
    }
    EXPECT_EQ(count_lines(ps), (size_t)n + 1);
    EXPECT_EQ(ps.substr(ps.size() - 15), "late\t0\t0\t0\t0\n.\n");
}

TEST_F(AdminTest, JobsFinishedDuringListingAreSkipped)
{
    peer *c = f.connect();
    peer *w = f.connect();
    submit_bg(c, ADMIN_SLICE + 5);
    ASSERT_EQ(FakeShell::feed(c, "show unique jobs\n"), 0);
    string out = FakeShell::take(c);
    // a worker takes and completes jobs while the listing is half written
    FakeShell::feed(w, FakeShell::req(CMD_CAN_DO, "f"));
    for (int i = 0; i < 100; i++) {
        FakeShell::feed(w, FakeShell::req(CMD_GRAB_JOB, ""));
        string a = FakeShell::take(w);
        string handle = a.substr(12, a.find('\0', 12) - 12);
        FakeShell::feed(w, FakeShell::req(CMD_WORK_COMPLETE, handle + string("\0", 1)));
    }
    while (!list_empty(&f.eng.listings)) {
        admin_continue(&f.eng);
        out += FakeShell::take(c);
    }
    size_t lines = count_lines(out);
    EXPECT_GE(lines, (size_t)ADMIN_SLICE + 5 + 1 - 100);
    EXPECT_LE(lines, (size_t)ADMIN_SLICE + 5 + 1);
    char err[256];
    EXPECT_EQ(engine_check(&f.eng, err, sizeof err), 0) << err;
    EXPECT_EQ(session_check(&f.eng, err, sizeof err), 0) << err;
}

TEST_F(AdminTest, ListingWaitsForSlowReader)
{
    peer *c = f.connect();
    submit_bg(c, 40 * ADMIN_SLICE);
    ASSERT_EQ(FakeShell::feed(c, "show jobs\n"), 0);
    for (int i = 0; i < 100; i++)
        admin_continue(&f.eng); // nobody reads c's output
    EXPECT_LE(outq_pending(&c->out), (size_t)ADMIN_SLICE_BACKLOG + 200 * ADMIN_SLICE);
    EXPECT_FALSE(admin_ready(&f.eng)) << "a blocked listing does not keep the loop spinning";
    EXPECT_FALSE(list_empty(&f.eng.listings));
}

TEST_F(AdminTest, DisconnectDuringListingFreesIt)
{
    peer *c = f.connect();
    submit_bg(c, 2 * ADMIN_SLICE);
    ASSERT_EQ(FakeShell::feed(c, "show jobs\n"), 0);
    EXPECT_FALSE(list_empty(&f.eng.listings));
    f.disconnect(c);
    EXPECT_TRUE(list_empty(&f.eng.listings));
}

TEST_F(AdminTest, ShutdownPolicy)
{
    peer *remote = f.connect("10.1.2.3", 0);
    ASSERT_EQ(FakeShell::feed(remote, "shutdown\n"), 0);
    EXPECT_EQ(FakeShell::take(remote),
              "ERR PERMISSION_DENIED Shutdown+is+not+allowed+from+this+connection\r\n");
    EXPECT_EQ(f.shutdowns, 0);
    peer *local = f.connect();
    ASSERT_EQ(FakeShell::feed(local, "shutdown graceful\r\n"), 0);
    EXPECT_EQ(FakeShell::take(local), "OK\r\n");
    EXPECT_EQ(f.shutdowns, 1);
    EXPECT_EQ(f.graceful, 1);
    f.cfg.admin_shutdown = SHUTDOWN_ANY;
    ASSERT_EQ(FakeShell::feed(remote, "shutdown\n"), 0);
    EXPECT_EQ(FakeShell::take(remote), "OK\r\n");
    EXPECT_EQ(f.graceful, 0);
}

TEST_F(AdminTest, RequestsAfterAListingAreAnsweredAfterIt)
{
    peer *c = f.connect();
    submit_bg(c, ADMIN_SLICE + 1);
    ASSERT_EQ(FakeShell::feed(c, "show jobs\nversion\n" + FakeShell::req(CMD_ECHO_REQ, "e")), 0);
    string out = FakeShell::take(c);
    EXPECT_EQ(out.find("OK "), string::npos) << "version waits for the listing";
    while (!list_empty(&f.eng.listings)) {
        admin_continue(&f.eng);
        out += FakeShell::take(c);
    }
    size_t dot = out.find("\n.\n");
    ASSERT_NE(dot, string::npos);
    EXPECT_EQ(out.substr(dot + 3), "OK " PACKAGE_VERSION "\n" + FakeShell::res(CMD_ECHO_RES, "e"));
}

// A function name argument that is too long, has a NUL (%00) or an undecodable escape gets each
// command's own reply: the core commands say ARGUMENT_TOO_LARGE for a long one, `retry` (as the
// submit paths) INVALID_FUNCTION_NAME; both say INVALID_FUNCTION_NAME for a NUL.
TEST_F(AdminTest, FunctionNameArgumentsKeepEachCommandsErrorText)
{
    peer *c = f.connect();
    const string lng(f.cfg.max_function + 1, 'n');
    const string too_large = "ERR ARGUMENT_TOO_LARGE Function+name+too+long\r\n";
    const string bad = "ERR INVALID_FUNCTION_NAME NUL+byte+in+function+name\r\n";
    const std::pair<string, string> cases[] = {
        {"create function " + lng, too_large}, {"drop function " + lng, too_large},
        {"maxqueue " + lng + " 1", too_large}, {"retry " + lng + " 1 1", bad},
        {"create function a%00b", bad},        {"drop function a%00b", bad},
        {"maxqueue a%00b", bad},               {"retry a%00b 1 1", bad},
    };
    for (const auto &k : cases) {
        ASSERT_EQ(FakeShell::feed(c, k.first + "\n"), 0);
        EXPECT_EQ(FakeShell::take(c), k.second) << k.first.substr(0, 20);
    }
    const string fits(f.cfg.max_function, 'n');
    ASSERT_EQ(FakeShell::feed(c, "create function " + fits + "\nretry " + fits + " 1 1\n"), 0);
    EXPECT_EQ(FakeShell::take(c), "OK\r\nOK\r\n") << "a name of --max-function-name bytes fits";
}

// `workers` is written in slices too (50,000 connected workers used to be listed in one go on the
// loop), and its output is the same as when it was written at once.
class AdminWorkersTest : public AdminTest {
  protected:
    // worker connects a peer with a client id and two abilities.
    peer *worker(int i)
    {
        peer *w = f.connect(i % 2 ? "10.0.0.1" : "127.0.0.1");
        string in = FakeShell::req(CMD_SET_CLIENT_ID, "id" + std::to_string(i)) +
                    FakeShell::req(CMD_CAN_DO, "fa" + std::to_string(i)) +
                    FakeShell::req(CMD_CAN_DO, "fb");
        EXPECT_EQ(FakeShell::feed(w, in), 0);
        return w;
    }
    // row is p's expected line, formatted here independently of admin.c.
    static string row(const peer *p)
    {
        string s = std::to_string(p->fd) + " " + p->ip + " " +
                   (p->client_id ? p->client_id : "-") + " :";
        if (p->worker != nullptr)
            list_for_each(n, &p->worker->abilities) {
                const ability *a = ability_of_wnode(n);
                s += " " + string(a->func->name, a->func->name_len);
            }
        return s + "\n";
    }
    // rows lists the expected lines of the given peers.
    static string rows(const std::vector<peer *> &ps)
    {
        string s;
        for (peer *p : ps)
            s += row(p);
        return s;
    }
    // drop disconnects p and frees it, so ASan sees any later use.
    void drop(peer *p)
    {
        f.disconnect(p);
        for (auto it = f.peers.begin(); it != f.peers.end(); ++it)
            if (it->get() == p) {
                f.peers.erase(it);
                break;
            }
    }
    // finish runs loop iterations until no listing is left; returns how many it took.
    int finish(const std::vector<std::pair<peer *, string *>> &outs)
    {
        int rounds = 0;
        while (!list_empty(&f.eng.listings) && rounds < 10000) {
            admin_continue(&f.eng);
            for (auto &o : outs)
                *o.second += FakeShell::take(o.first);
            rounds++;
        }
        return rounds;
    }
};

TEST_F(AdminWorkersTest, LongWorkersIsWrittenInSlicesAndIdentical)
{
    peer *c = f.connect();
    std::vector<peer *> all{c};
    int n = 3 * ADMIN_SLICE + 7;
    for (int i = 0; i < n; i++)
        all.push_back(worker(i));
    for (size_t i = 1; i < all.size(); i++)
        FakeShell::take(all[i]);
    ASSERT_EQ(FakeShell::feed(c, "workers\n"), 0);
    string out = FakeShell::take(c);
    EXPECT_EQ(count_lines(out), (size_t)ADMIN_SLICE_ONE) << "one slice per loop iteration";
    EXPECT_EQ(out.find(".\n"), string::npos);
    EXPECT_EQ(out.substr(0, 18), "11 127.0.0.1 - :\n1");
    // a peer connected meanwhile is not listed
    peer *late = worker(n);
    int rounds = finish({{c, &out}});
    EXPECT_EQ(rounds, (n + 1 - ADMIN_SLICE_ONE) / ADMIN_SLICE_ONE + 1);
    EXPECT_EQ(out, rows(all) + ".\n");
    // the next request is answered in full (from the newest peer on) after the listing
    ASSERT_EQ(FakeShell::feed(c, "workers\n"), 0);
    out = FakeShell::take(c);
    finish({{c, &out}});
    all.push_back(late);
    EXPECT_EQ(out, rows(all) + ".\n");
    char err[256];
    EXPECT_EQ(engine_check(&f.eng, err, sizeof err), 0) << err;
    EXPECT_EQ(session_check(&f.eng, err, sizeof err), 0) << err;
}

// Peers that go while a `workers` listing is in progress: the one it would list next, one
// further on, the last one, and the listing's own peer. None is touched after it is freed.
TEST_F(AdminWorkersTest, PeersClosingMidListingAreSafe)
{
    peer *a = f.connect();
    std::vector<peer *> all{a};
    int n = 2 * ADMIN_SLICE_ONE + 10;
    for (int i = 0; i < n; i++)
        all.push_back(worker(i));
    for (peer *p : all)
        FakeShell::take(p);
    // b lists too, and is the peer right after the slice of a's listing
    peer *b = all[ADMIN_SLICE_ONE];
    ASSERT_EQ(FakeShell::feed(a, "workers\n"), 0);
    ASSERT_EQ(FakeShell::feed(b, "workers\n"), 0);
    string outa = FakeShell::take(a), outb = FakeShell::take(b);
    ASSERT_EQ(count_lines(outa), (size_t)ADMIN_SLICE_ONE);
    ASSERT_FALSE(list_empty(&f.eng.listings));
    // a's next row is b's: b goes (with its own listing), and so do one later and the last
    peer *later = all[ADMIN_SLICE_ONE + 5], *last = all.back();
    drop(b);
    drop(later);
    drop(last);
    std::vector<peer *> want;
    for (peer *p : all)
        if (p != b && p != later && p != last)
            want.push_back(p);
    finish({{a, &outa}});
    EXPECT_EQ(outa, rows(want) + ".\n");
    // a listing whose own peer goes mid-listing is dropped; another's next peer goes
    ASSERT_EQ(FakeShell::feed(a, "workers\n"), 0);
    peer *d = want[ADMIN_SLICE_ONE];
    ASSERT_EQ(FakeShell::feed(d, "workers\n"), 0);
    peer *tail = f.connect();
    ASSERT_EQ(FakeShell::feed(tail, "workers\n"), 0);
    string outt = FakeShell::take(tail);
    EXPECT_EQ(count_lines(outt), (size_t)ADMIN_SLICE_ONE);
    want.push_back(tail);
    std::vector<peer *> rest; // what tail's listing has still to write: after d
    for (size_t i = ADMIN_SLICE_ONE + 1; i < want.size(); i++)
        rest.push_back(want[i]);
    string expect = rows(std::vector<peer *>(want.begin(), want.begin() + ADMIN_SLICE_ONE)) +
                    rows(rest) + ".\n";
    drop(d);
    drop(a);
    finish({{tail, &outt}});
    EXPECT_TRUE(list_empty(&f.eng.listings));
    EXPECT_EQ(outt, expect);
    // with no peer left to list, a listing ends at once
    for (size_t i = 1; i < ADMIN_SLICE_ONE; i++)
        drop(want[i]);
    for (size_t i = 0; i + 1 < rest.size(); i++)
        drop(rest[i]);
    ASSERT_EQ(FakeShell::feed(tail, "workers\n"), 0);
    EXPECT_EQ(FakeShell::take(tail), row(tail) + ".\n");
    EXPECT_TRUE(list_empty(&f.eng.listings));
    char err[256];
    EXPECT_EQ(engine_check(&f.eng, err, sizeof err), 0) << err;
    EXPECT_EQ(session_check(&f.eng, err, sizeof err), 0) << err;
}

// ------------------------------------------------------------ the command table

namespace {

// tokens splits a command as docs write it ("retry job HANDLE") into admin words.
struct Words {
    std::vector<string> w;
    std::vector<pa_token> t;
    explicit Words(const string &s)
    {
        size_t i = 0;
        while (i < s.size()) {
            size_t j = s.find(' ', i);
            if (j == string::npos)
                j = s.size();
            if (j > i)
                w.push_back(s.substr(i, j - i));
            i = j + 1;
        }
        for (const string &x : w)
            t.push_back(pa_token{x.data(), x.size()});
    }
};

const admin_cmd *find(const engine *e, const string &cmd)
{
    Words w(cmd);
    return admin_find(e, w.t.data(), w.t.size());
}

// backticked returns the `...` items of text.
std::vector<string> backticked(const string &text)
{
    std::vector<string> out;
    for (size_t i = text.find('`'); i != string::npos; i = text.find('`', i)) {
        size_t j = text.find('`', i + 1);
        if (j == string::npos)
            break;
        out.push_back(text.substr(i + 1, j - i - 1));
        i = j + 1;
    }
    return out;
}

// security_md returns docs/SECURITY.md's lines.
std::vector<string> security_md()
{
    const char *top = getenv("SPUR_SRCDIR");
    string path = string(top != nullptr && *top != '\0' ? top : SPUR_TOP_SRCDIR) +
                  "/docs/SECURITY.md";
    std::vector<string> lines;
    FILE *fp = fopen(path.c_str(), "r");
    if (fp == nullptr)
        return lines;
    char buf[4096];
    while (fgets(buf, sizeof buf, fp) != nullptr) {
        string l(buf);
        if (!l.empty() && l.back() == '\n')
            l.pop_back();
        lines.push_back(l);
    }
    fclose(fp);
    return lines;
}

// DocCommands is what SECURITY.md says of the admin commands: the first column of the table of
// state-changing ones (under "admin commands that **change state**"), and the read-only list
// (the paragraph "The **read-only** commands are ...", options left out).
struct DocCommands {
    std::vector<string> changes, reads;
    DocCommands()
    {
        std::vector<string> lines = security_md();
        size_t i = 0;
        while (i < lines.size() && lines[i].find("admin commands that **change state**") ==
                                       string::npos)
            i++;
        for (i++; i < lines.size() && (lines[i].empty() || lines[i][0] != '|'); i++)
            ;
        for (i += 2; i < lines.size() && !lines[i].empty() && lines[i][0] == '|'; i++) {
            string first = lines[i].substr(1, lines[i].find(" | ") - 1);
            for (const string &c : backticked(first))
                changes.push_back(c);
        }
        while (i < lines.size() && lines[i].rfind("The **read-only** commands are", 0) != 0)
            i++;
        string para;
        for (; i < lines.size() && !lines[i].empty(); i++)
            para += lines[i] + " ";
        for (const string &c : backticked(para))
            if (c.rfind("--", 0) != 0)
                reads.push_back(c);
    }
};

} // namespace

// SECURITY.md's table of the commands --admin-allow governs is the table's ADM_CHANGES rows,
// both ways: every command it lists runs a row flagged ADM_CHANGES, and every such row is what
// one of its lines runs; every command of its read-only list runs a row that is not flagged.
TEST_F(AdminTest, SecurityMdListsExactlyTheStateChangingCommands)
{
    DocCommands doc;
    ASSERT_GE(doc.changes.size(), 10u) << "SECURITY.md's table of state-changing commands";
    ASSERT_GE(doc.reads.size(), 10u) << "SECURITY.md's list of read-only commands";
    std::set<const admin_cmd *> documented;
    for (const string &c : doc.changes) {
        const admin_cmd *r = find(&f.eng, c);
        ASSERT_NE(r, nullptr) << "SECURITY.md lists `" << c << "`, which is no command";
        EXPECT_TRUE(r->flags & ADM_CHANGES)
            << "SECURITY.md says `" << c << "` changes state; its row '" << r->name
            << "' is not flagged ADM_CHANGES";
        documented.insert(r);
    }
    size_t rows = 0;
    for (const admin_cmd *r; (r = admin_cmd_at(&f.eng, rows)) != nullptr; rows++) {
        if (r->flags & ADM_CHANGES) {
            EXPECT_TRUE(documented.count(r))
                << "the command '" << r->name << "' changes state (ADM_CHANGES) but "
                << "SECURITY.md's table does not list it";
        }
    }
    EXPECT_GE(rows, 25u) << "the core rows and the three features' ones";
    for (const string &c : doc.reads) {
        const admin_cmd *r = find(&f.eng, c);
        ASSERT_NE(r, nullptr) << "SECURITY.md lists `" << c << "`, which is no command";
        EXPECT_FALSE(r->flags & ADM_CHANGES)
            << "SECURITY.md says `" << c << "` only reads; its row '" << r->name << "' is "
            << "flagged ADM_CHANGES";
    }
}

static void nop_run(peer *, const pa_token *, size_t) {}
static void nop_raw(peer *, const char *, size_t) {}

// The row with the most words wins, an exact row over another of its name when the line has
// no arguments; matching ignores case; a line is looked at by its first ADMIN_CMD_WORDS words.
TEST_F(AdminTest, CommandLookupPrefersTheLongestThenTheExactRow)
{
    EXPECT_STREQ(find(&f.eng, "stats")->name, "stats");
    EXPECT_STREQ(find(&f.eng, "STATS Reset x")->name, "stats reset");
    EXPECT_STREQ(find(&f.eng, "retry list")->name, "retry list");
    EXPECT_STREQ(find(&f.eng, "retry list x")->name, "retry");
    EXPECT_STREQ(find(&f.eng, "show failed jobs f")->name, "show failed jobs");
    EXPECT_STREQ(find(&f.eng, "show failed")->name, "show");
    const admin_cmd *bare = find(&f.eng, "schedule");
    ASSERT_NE(bare, nullptr);
    EXPECT_TRUE((bare->flags & ADM_EXACT) && !(bare->flags & ADM_CHANGES));
    EXPECT_TRUE(find(&f.eng, "schedule add x")->flags & ADM_CHANGES);
    EXPECT_EQ(find(&f.eng, "bogus"), nullptr);
    EXPECT_EQ(find(&f.eng, "statsx"), nullptr);
    EXPECT_EQ(find(&f.eng, ""), nullptr);
}

// admin_register takes well-formed rows only, never a command the engine has, and at most
// ENGINE_ADMIN_TABLES tables; a registered row runs like a core one.
TEST_F(AdminTest, RegisterRefusesMalformedAndRepeatedRows)
{
    static const admin_cmd bad[][2] = {
        {{"Upper", 0, nop_run, nullptr}, {}},
        {{"two  spaces", 0, nop_run, nullptr}, {}},
        {{" lead", 0, nop_run, nullptr}, {}},
        {{"trail ", 0, nop_run, nullptr}, {}},
        {{"a b c d", 0, nop_run, nullptr}, {}},
        {{"", 0, nop_run, nullptr}, {}},
        {{"xyzzy", ADM_RAW, nop_run, nullptr}, {}},
        {{"xyzzy", 0, nullptr, nop_raw}, {}},
        {{"xyzzy", 0, nop_run, nop_raw}, {}},
        {{"xyzzy", 1u << 7, nop_run, nullptr}, {}},
        {{"status", 0, nop_run, nullptr}, {}},                  // a core command
        {{"retry list", ADM_EXACT, nop_run, nullptr}, {}},      // a feature's
        {{"xyzzy", 0, nop_run, nullptr}, {"xyzzy", 0, nop_run, nullptr}}, // twice in one table
    };
    for (const auto &t : bad)
        EXPECT_EQ(admin_register(&f.eng, t), -1) << t[0].name;
    static const admin_cmd long_word[] = {{"0123456789012345678901234567890x", 0, nop_run,
                                           nullptr},
                                          {}};
    EXPECT_EQ(admin_register(&f.eng, long_word), -1) << "a word of ADMIN_CMD_WORD_MAX + 1";
    static int runs = 0;
    static const admin_cmd ok[] = {
        {"xyzzy", ADM_CHANGES, [](peer *p, const pa_token *, size_t n) {
             runs++;
             peer_printf(p, "XYZZY %zu\n", n);
         }, nullptr},
        {"status now", 0, nop_run, nullptr}, // a longer name beside a core one
        {}};
    ASSERT_EQ(admin_register(&f.eng, ok), 0);
    EXPECT_EQ(admin_register(&f.eng, ok), -1) << "the same commands again";
    peer *c = f.connect();
    ASSERT_EQ(FakeShell::feed(c, "XyZzy a b\n"), 0);
    EXPECT_EQ(FakeShell::take(c), "XYZZY 3\n");
    EXPECT_EQ(runs, 1);
    static const admin_cmd empty[] = {{}};
    size_t tables = f.eng.admin_tables;
    for (; tables < ENGINE_ADMIN_TABLES; tables++)
        ASSERT_EQ(admin_register(&f.eng, empty), 0);
    EXPECT_EQ(admin_register(&f.eng, empty), -1) << "ENGINE_ADMIN_TABLES tables at most";
}
