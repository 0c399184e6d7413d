/* SPDX-License-Identifier: BSD-3-Clause */
// Unit tests for acl: principals (parsing, matching), the policy file (parsing, errors with line
// numbers, first match wins, prefix patterns), the decision cache and its invalidation by a
// reload, and the refusals through the real packet and admin handlers (fake shell).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "fake_shell.h"

extern "C" {
#include "acl.h"
#include "func.h"
}

using std::string;

namespace {

// Who: a peer with only the identity fields set, as the shell sets them.
struct Who {
    peer p{};
    string certs;
    Who(const char *ip, const char *listener, const string &names = string())
    {
        snprintf(p.ip, sizeof p.ip, "%s", ip);
        p.listener = listener;
        certs = names;
        p.cert_names = names.empty() ? nullptr : &certs[0];
    }
};

acl_principal parse_ok(const char *s)
{
    acl_principal pr;
    char err[300] = "";
    EXPECT_EQ(acl_principal_parse(s, strlen(s), &pr, err, sizeof err), 0) << s << ": " << err;
    return pr;
}

bool matches(const char *rule, const peer &p)
{
    acl_principal pr = parse_ok(rule);
    bool m = acl_principal_match(&pr, &p) != 0;
    acl_principal_free(&pr);
    return m;
}

string parse_err(const string &text)
{
    char err[512] = "";
    acl_policy *pol = acl_policy_parse(text.data(), text.size(), "p.conf", err, sizeof err);
    EXPECT_EQ(pol, nullptr) << text;
    acl_policy_free(pol);
    return err;
}

acl_policy *parse(const string &text)
{
    char err[512] = "";
    acl_policy *pol = acl_policy_parse(text.data(), text.size(), "p.conf", err, sizeof err);
    EXPECT_NE(pol, nullptr) << err;
    return pol;
}

} // namespace

TEST(AclPrincipal, EveryKindParses)
{
    for (const char *s : {"any", "unix", "loopback", "local", "LOCAL", "cert:client one",
                          "listener:127.0.0.1:4730", "listener:unix:/run/s.sock", "10.0.0.0/8",
                          "192.168.1.7", "::1/128", "2001:db8::/32", "::", "0.0.0.0/0"}) {
        acl_principal pr = parse_ok(s);
        acl_principal_free(&pr);
    }
}

TEST(AclPrincipal, BadOnesAreRefusedWithAMessage)
{
    for (const char *s : {"", "anyone", "cert:", "listener:", "10.0.0.0/33", "::/129",
                          "10.0.0.1/8", "10.0.0.0/", "10.0.0.0/x", "300.0.0.1", "cert:a\tb",
                          "10.0.0.0/0008"}) {
        acl_principal pr;
        char err[300] = "";
        EXPECT_EQ(acl_principal_parse(s, strlen(s), &pr, err, sizeof err), -1) << s;
        EXPECT_NE(err[0], '\0') << s;
    }
}

TEST(AclPrincipal, CidrV4AndV6AndMapped)
{
    Who a("10.1.2.3", "0.0.0.0:4730"), b("11.0.0.1", "0.0.0.0:4730"),
        m("::ffff:10.9.9.9", "[::]:4730"), v6("2001:db8::5", "[::]:4730"),
        v6b("2001:db9::5", "[::]:4730");
    EXPECT_TRUE(matches("10.0.0.0/8", a.p));
    EXPECT_FALSE(matches("10.0.0.0/8", b.p));
    EXPECT_TRUE(matches("10.1.2.3", a.p));
    EXPECT_FALSE(matches("10.1.2.4", a.p));
    EXPECT_TRUE(matches("10.1.2.0/23", a.p));
    EXPECT_TRUE(matches("0.0.0.0/0", b.p));
    EXPECT_TRUE(matches("10.0.0.0/8", m.p)) << "an IPv4-mapped address is its IPv4 address";
    EXPECT_TRUE(matches("::ffff:0:0/96", a.p)) << "an IPv6 block of mapped addresses";
    EXPECT_TRUE(matches("2001:db8::/32", v6.p));
    EXPECT_FALSE(matches("2001:db8::/32", v6b.p));
    EXPECT_FALSE(matches("10.0.0.0/8", v6.p));
    EXPECT_FALSE(matches("2001:db8::/32", a.p));
    EXPECT_TRUE(matches("2001:db8::4/126", v6.p));
    EXPECT_FALSE(matches("2001:db8::6/127", v6.p));
}

TEST(AclPrincipal, UnixLoopbackLocal)
{
    Who u("unix", "unix:/tmp/s.sock"), l4("127.0.0.2", "127.0.0.1:4730"),
        l6("::1", "[::1]:4730"), r("192.0.2.1", "0.0.0.0:4730"), h("127.0.0.1", "http");
    EXPECT_TRUE(matches("unix", u.p));
    EXPECT_FALSE(matches("unix", l4.p));
    EXPECT_FALSE(matches("loopback", u.p));
    EXPECT_TRUE(matches("loopback", l4.p));
    EXPECT_TRUE(matches("loopback", l6.p));
    EXPECT_TRUE(matches("loopback", h.p)) << "an HTTP request from loopback";
    EXPECT_FALSE(matches("loopback", r.p));
    EXPECT_TRUE(matches("local", u.p));
    EXPECT_TRUE(matches("local", l6.p));
    EXPECT_FALSE(matches("local", r.p));
    EXPECT_FALSE(matches("127.0.0.0/8", u.p)) << "a unix peer has no address";
    EXPECT_TRUE(matches("any", u.p));
    EXPECT_TRUE(matches("any", r.p));
}

TEST(AclPrincipal, CertNamesListAndListenerNames)
{
    Who t("192.0.2.1", "0.0.0.0:4731", string("client1\0client1.example.com\0ops@example.com\0", 45));
    Who none("192.0.2.1", "0.0.0.0:4730");
    EXPECT_TRUE(matches("cert:client1", t.p));
    EXPECT_TRUE(matches("cert:client1.example.com", t.p)) << "a DNS SAN";
    EXPECT_TRUE(matches("cert:ops@example.com", t.p)) << "an email SAN";
    EXPECT_FALSE(matches("cert:client", t.p)) << "whole names only";
    EXPECT_FALSE(matches("cert:client1", none.p)) << "no certificate";
    EXPECT_TRUE(matches("listener:0.0.0.0:4731", t.p));
    EXPECT_FALSE(matches("listener:0.0.0.0:4731", none.p));
    Who empty("192.0.2.1", "x", string("\0", 1));
    EXPECT_FALSE(matches("cert:client1", empty.p)) << "an empty list";
}

TEST(AclPolicy, ParsesCommentsQuotesAndEveryRuleKind)
{
    acl_policy *pol = parse("# who may do what\n"
                            "\n"
                            "allow submit reports.* loopback 10.0.0.0/8   # trailing comment\n"
                            "allow can_do reports.gen \"cert:Report Worker\" unix\r\n"
                            "deny  all    secret*  any\n"
                            "allow all    * listener:127.0.0.1:4730 loopback\n");
    ASSERT_NE(pol, nullptr);
    EXPECT_EQ(pol->nrules, 4u);
    EXPECT_EQ(pol->npr, 6) << "loopback is named twice but is one principal";
    EXPECT_EQ(pol->rules[0].line, 3);
    EXPECT_TRUE(pol->rules[0].prefix);
    EXPECT_EQ(string(pol->rules[0].pat), "reports.");
    EXPECT_EQ(pol->rules[1].line, 4);
    EXPECT_FALSE(pol->rules[1].prefix);
    EXPECT_EQ(pol->rules[2].allow, 0);
    EXPECT_EQ(pol->rules[3].patlen, 0u);
    EXPECT_EQ(string(pol->pr[2].name), "Report Worker");
    acl_policy_free(pol);
}

TEST(AclPolicy, ErrorsNameFileAndLine)
{
    EXPECT_EQ(parse_err("allow submit a any\npermit submit a any\n"),
              "p.conf:2: 'permit': expected allow or deny");
    EXPECT_EQ(parse_err("\n\nallow grab a any\n"),
              "p.conf:3: 'grab': expected submit, can_do or all");
    EXPECT_EQ(parse_err("allow submit a\n"),
              "p.conf:1: expected: allow|deny submit|can_do|all FUNCTION PRINCIPAL...");
    EXPECT_EQ(parse_err("# x\nallow submit a* nobody\n").substr(0, 36),
              "p.conf:2: unknown principal 'nobody'");
    EXPECT_EQ(parse_err("allow submit a*b any\n"),
              "p.conf:1: '*' may only end a function pattern");
    EXPECT_EQ(parse_err("allow submit a \"cert:x\n"), "p.conf:1: unterminated quote");
    EXPECT_EQ(parse_err(string("allow submit a any\nallow submit a\0 any\n", 39)),
              "p.conf:2: NUL byte");
    EXPECT_EQ(parse_err("allow submit a " + string(ACL_MAX_LINE, 'x') + "\n"),
              "p.conf:1: line longer than 4096 bytes");
    string many;
    for (int i = 0; i <= ACL_MAX_PRINCIPALS; i++)
        many += "allow submit f cert:c" + std::to_string(i) + "\n";
    EXPECT_EQ(parse_err(many), "p.conf:65: too many distinct principals (at most 64)");
}

TEST(AclPolicy, EmptyFileDeniesEverything)
{
    acl_policy *pol = parse("# nothing\n");
    Who w("127.0.0.1", "127.0.0.1:4730");
    EXPECT_FALSE(acl_policy_allows(pol, &w.p, ACL_SUBMIT, "f", 1));
    EXPECT_FALSE(acl_policy_allows(pol, &w.p, ACL_CAN_DO, "f", 1));
    acl_policy_free(pol);
}

TEST(AclPolicy, FirstMatchWinsPrefixesAndOps)
{
    acl_policy *pol = parse("deny   submit reports.secret loopback\n"
                            "allow  submit reports.*      loopback\n"
                            "allow  can_do work           unix\n"
                            "allow  all    exact          10.0.0.0/8\n");
    Who lo("127.0.0.1", "127.0.0.1:4730"), u("unix", "unix:/s"), net("10.2.3.4", "x");
    auto ok = [&](Who &w, acl_op op, const char *f) {
        return acl_policy_allows(pol, &w.p, op, f, strlen(f)) != 0;
    };
    EXPECT_FALSE(ok(lo, ACL_SUBMIT, "reports.secret")) << "the earlier deny wins";
    EXPECT_TRUE(ok(lo, ACL_SUBMIT, "reports.secretive")) << "deny is exact, allow a prefix";
    EXPECT_TRUE(ok(lo, ACL_SUBMIT, "reports."));
    EXPECT_TRUE(ok(lo, ACL_SUBMIT, "reports.daily"));
    EXPECT_FALSE(ok(lo, ACL_SUBMIT, "reports")) << "the prefix includes the dot";
    EXPECT_FALSE(ok(lo, ACL_CAN_DO, "reports.daily")) << "a submit rule says nothing of CAN_DO";
    EXPECT_TRUE(ok(u, ACL_CAN_DO, "work"));
    EXPECT_FALSE(ok(u, ACL_SUBMIT, "work"));
    EXPECT_FALSE(ok(u, ACL_CAN_DO, "work2"));
    EXPECT_TRUE(ok(net, ACL_CAN_DO, "exact"));
    EXPECT_TRUE(ok(net, ACL_SUBMIT, "exact"));
    EXPECT_FALSE(ok(net, ACL_SUBMIT, "exac"));
    // asked again: the cached answers are the same
    EXPECT_FALSE(ok(lo, ACL_SUBMIT, "reports.secret"));
    EXPECT_TRUE(ok(lo, ACL_SUBMIT, "reports.daily"));
    EXPECT_TRUE(ok(net, ACL_SUBMIT, "exact"));
    EXPECT_FALSE(ok(u, ACL_SUBMIT, "work"));
    acl_policy_free(pol);
}

TEST(AclPolicy, FunctionPatternsTakeTheEscapedFormOfTheListings)
{
    // Perl's Gearman::Client prefix puts a TAB after the namespace: written %09 in the file
    acl_policy *pol = parse("allow submit ns1%09*  loopback\n"
                            "allow can_do a%20b    loopback\n");
    Who lo("127.0.0.1", "127.0.0.1:4730");
    EXPECT_TRUE(acl_policy_allows(pol, &lo.p, ACL_SUBMIT, "ns1\treverse", 11));
    EXPECT_FALSE(acl_policy_allows(pol, &lo.p, ACL_SUBMIT, "ns1%09reverse", 13));
    EXPECT_TRUE(acl_policy_allows(pol, &lo.p, ACL_CAN_DO, "a b", 3));
    EXPECT_FALSE(acl_policy_allows(pol, &lo.p, ACL_CAN_DO, "a%20b", 5));
    acl_policy_free(pol);
    // a %00 would decode to a NUL, which no name has (found by fuzz_policy)
    EXPECT_EQ(parse_err("allow submit a%00b* loopback\n"),
              "p.conf:1: a NUL byte (%00) in a function pattern: no name has one");
}

TEST(AclPolicy, PeersOfOneClassShareTheCache)
{
    acl_policy *pol = parse("allow submit f loopback\n");
    Who a("127.0.0.1", "x"), b("127.0.0.9", "y"), c("192.0.2.1", "x");
    EXPECT_TRUE(acl_policy_allows(pol, &a.p, ACL_SUBMIT, "f", 1));
    EXPECT_TRUE(acl_policy_allows(pol, &b.p, ACL_SUBMIT, "f", 1));
    EXPECT_FALSE(acl_policy_allows(pol, &c.p, ACL_SUBMIT, "f", 1));
    EXPECT_EQ(a.p.acl_class, b.p.acl_class);
    EXPECT_NE(a.p.acl_class, c.p.acl_class);
    EXPECT_EQ(pol->ncls, 2);
    EXPECT_EQ(pol->cache.count, 1u) << "one function name cached";
    EXPECT_EQ(a.p.acl_gen, pol->gen);
    acl_policy_free(pol);
}

TEST(AclPolicy, AReloadInvalidatesPeersAndCache)
{
    char path[] = "/tmp/spur-acl-XXXXXX";
    int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    auto write_file = [&](const string &s) {
        FILE *w = fopen(path, "w");
        ASSERT_NE(w, nullptr);
        fputs(s.c_str(), w);
        fclose(w);
    };
    write_file("allow submit f loopback\n");
    config cfg;
    options_defaults(&cfg);
    cfg.policy = strdup(path);
    acl *a = nullptr;
    char err[512] = "";
    ASSERT_EQ(acl_new(&cfg, &a, err, sizeof err), 0) << err;
    ASSERT_NE(a, nullptr);
    Who w("127.0.0.1", "127.0.0.1:4730");
    EXPECT_TRUE(acl_policy_allows(a->policy, &w.p, ACL_SUBMIT, "f", 1));
    uint32_t gen = a->policy->gen;

    write_file("deny submit f loopback\n");
    ASSERT_EQ(acl_reload(a, err, sizeof err), 0) << err;
    EXPECT_NE(a->policy->gen, gen);
    EXPECT_FALSE(acl_policy_allows(a->policy, &w.p, ACL_SUBMIT, "f", 1))
        << "the peer's class and the cached decision belong to the old policy";

    write_file("allow submit f loopback\nallow bogus f any\n");
    EXPECT_EQ(acl_reload(a, err, sizeof err), -1);
    EXPECT_EQ(string(err), string(path) + ":2: 'bogus': expected submit, can_do or all");
    EXPECT_FALSE(acl_policy_allows(a->policy, &w.p, ACL_SUBMIT, "f", 1)) << "the old one stays";

    unlink(path);
    EXPECT_EQ(acl_reload(a, err, sizeof err), -1);
    EXPECT_NE(string(err).find("cannot read policy file"), string::npos);
    EXPECT_NE(a->policy, nullptr);
    acl_free(a);
    config_free(&cfg);
    close(fd);
}

TEST(AclPolicy, NothingConfiguredMeansNoState)
{
    config cfg;
    options_defaults(&cfg);
    acl *a = reinterpret_cast<acl *>(1);
    char err[128];
    ASSERT_EQ(acl_new(&cfg, &a, err, sizeof err), 0);
    EXPECT_EQ(a, nullptr) << "the hot path tests only engine.acl";
    cfg.admin_allow[0] = strdup("bogus");
    cfg.nadmin_allow = 1;
    EXPECT_EQ(acl_new(&cfg, &a, err, sizeof err), -1);
    EXPECT_EQ(string(err).substr(0, 48), "invalid --admin-allow: unknown principal 'bogus'");
    config_free(&cfg);
}

// ------------------------------------------------------------ through the handlers

class AclShell : public ::testing::Test {
  protected:
    FakeShell f;
    void SetUp() override { f.start(); }
    void TearDown() override { acl_free(f.eng.acl); f.eng.acl = nullptr; }
    void policy(const string &text)
    {
        ASSERT_EQ(f.eng.acl, nullptr);
        f.eng.acl = static_cast<acl *>(calloc(1, sizeof(acl)));
        f.eng.acl->policy = parse(text);
    }
    void admin(std::initializer_list<const char *> rules, int read_allowed = 0)
    {
        if (f.eng.acl == nullptr)
            f.eng.acl = static_cast<acl *>(calloc(1, sizeof(acl)));
        for (const char *r : rules)
            f.eng.acl->admin[f.eng.acl->nadmin++] = parse_ok(r);
        f.eng.acl->admin_read_allowed = read_allowed;
    }
    static string denied(const char *text)
    {
        return FakeShell::res(CMD_ERROR, string("PERMISSION_DENIED") + '\0' + text);
    }
};

TEST_F(AclShell, RefusedSubmitAndCanDoGetAnErrorAndTheConnectionGoesOn)
{
    policy("allow submit ok loopback\nallow can_do ok loopback\n");
    peer *p = f.connect("127.0.0.1", 1);
    p->listener = "127.0.0.1:4730";
    string no = string("no") + '\0' + "u" + '\0' + "x";
    FakeShell::feed(p, FakeShell::req(CMD_SUBMIT_JOB_BG, no) + FakeShell::req(CMD_CAN_DO, "no") +
                           FakeShell::req(CMD_ECHO_REQ, "after"));
    EXPECT_EQ(FakeShell::take(p), denied("Not allowed to submit this function") +
                                      denied("Not allowed to do this function") +
                                      FakeShell::res(CMD_ECHO_RES, "after"));
    EXPECT_EQ(f.eng.stats.permission_denied[DENIED_SUBMIT], 1u);
    EXPECT_EQ(f.eng.stats.permission_denied[DENIED_CAN_DO], 1u);
    EXPECT_EQ(func_get(&f.eng, "no", 2, 0), nullptr) << "a refused name creates no function";
    FakeShell::feed(p, FakeShell::req(CMD_SUBMIT_JOB_BG, string("ok") + '\0' + "u" + '\0' + "x"));
    string out = FakeShell::take(p);
    EXPECT_EQ(out.substr(0, 8), FakeShell::res(CMD_JOB_CREATED, "").substr(0, 8)) << out;
}

TEST_F(AclShell, AdminChangesNeedARuleWhenRulesAreGiven)
{
    admin({"10.0.0.0/8"});
    peer *p = f.connect("127.0.0.1", 1);
    p->listener = "127.0.0.1:4730";
    const string no = "ERR PERMISSION_DENIED Not+allowed+from+this+connection\r\n";
    for (const char *line : {"shutdown\n", "cancel job H:x:1\n", "create function f\n",
                             "drop function f\n", "maxqueue f 1\n", "maxqueue f\n",
                             "stats reset\n"}) {
        FakeShell::feed(p, line);
        EXPECT_EQ(FakeShell::take(p), no) << line;
    }
    EXPECT_EQ(f.shutdowns, 0);
    EXPECT_EQ(f.eng.stats.permission_denied[DENIED_ADMIN], 7u);
    FakeShell::feed(p, "version\n");
    EXPECT_EQ(FakeShell::take(p).substr(0, 3), "OK ");
    peer *q = f.connect("10.1.1.1", 0);
    FakeShell::feed(q, "create function f\n");
    EXPECT_EQ(FakeShell::take(q), "OK\r\n");
    FakeShell::feed(q, "shutdown\n");
    EXPECT_EQ(FakeShell::take(q), "OK\r\n") << "--admin-allow decides shutdown, not PEER_LOCAL";
    EXPECT_EQ(f.shutdowns, 1);
}

TEST_F(AclShell, AdminReadAllowedRefusesReadsToOthers)
{
    admin({"unix"}, 1);
    peer *p = f.connect("127.0.0.1", 1);
    p->listener = "127.0.0.1:4730";
    FakeShell::feed(p, "version\nstatus\n");
    EXPECT_EQ(FakeShell::take(p), "ERR PERMISSION_DENIED Not+allowed+from+this+connection\r\n"
                                  "ERR PERMISSION_DENIED Not+allowed+from+this+connection\r\n");
    peer *u = f.connect("unix", 1);
    u->listener = "unix:/s";
    FakeShell::feed(u, "status\n");
    EXPECT_EQ(FakeShell::take(u), ".\n");
}

TEST_F(AclShell, AdminReadAllowedWithoutRulesMeansLocal)
{
    admin({}, 1);
    peer *remote = f.connect("192.0.2.7", 0);
    FakeShell::feed(remote, "status\ncreate function f\n");
    EXPECT_EQ(FakeShell::take(remote),
              "ERR PERMISSION_DENIED Not+allowed+from+this+connection\r\nOK\r\n")
        << "reads are refused to non-local connections; changes keep today's rules";
    peer *local = f.connect("127.0.0.1", 1);
    FakeShell::feed(local, "status\n");
    EXPECT_EQ(FakeShell::take(local), "f\t0\t0\t0\n.\n");
}

// Which admin lines --admin-allow governs follows the first words of the line, command by
// command, with the edges kept as they were before the command table: `retry list` and
// `schedule list` only read, a bare `schedule` only reads (its usage reply), every other
// `schedule` or `retry` line changes, `stats reset` with anything after it changes, a bare
// `load` is refused before it is unknown, and an unknown word only reads.
TEST_F(AclShell, AdminGatingByCommandWordsAndTheirEdges)
{
    admin({"10.0.0.0/8"});
    peer *p = f.connect("127.0.0.1", 1);
    p->listener = "127.0.0.1:4730";
    const string no = "ERR PERMISSION_DENIED Not+allowed+from+this+connection\r\n";
    const char *changes[] = {"shutdown graceful\n", "cancel job H:x:1\n", "cancel\n",
                             "create function f\n", "drop function f\n", "maxqueue f\n",
                             "stats reset\n", "STATS Reset x\n", "retry f 1 1\n", "retry\n",
                             "retry list x\n", "retry job H:x:1\n", "purge failed\n",
                             "load x\n", "LOAD {}\n", "load\n", "load \n", "dump\n",
                             "dump next-id\n", "submit f x\n", "schedule add t @every 1h f x\n",
                             "schedule remove t\n", "schedule foo\n", "Schedule List\n",
                             "schedule a b c d e f g\n", "submit f a b c d e f g\n"};
    uint64_t refused = 0;
    for (const char *line : changes) {
        if (string(line) == "Schedule List\n")
            continue; // (listed below: it reads)
        FakeShell::feed(p, line);
        EXPECT_EQ(FakeShell::take(p), no) << line;
        refused++;
    }
    EXPECT_EQ(f.eng.stats.permission_denied[DENIED_ADMIN], refused);
    const std::pair<const char *, const char *> reads[] = {
        {"schedule\n", "ERR "}, // (usage, or schedules not enabled without recur)
        {"schedule list\n", ""},
        {"Schedule List\n", ""},
        {"schedule list x\n", "ERR "},
        {"retry list\n", ".\n"},
        {"RETRY LIST\n", ".\n"},
        {"show failed jobs\n", ".\n"},
        {"show failed\n", "ERR UNKNOWN_SHOW_ARGUMENTS\r\n"},
        {"stats x\n", "ERR UNKNOWN_STATS_ARGUMENTS\r\n"},
        {"status\n", ".\n"},
        {"bogus\n", "ERR UNKNOWN_COMMAND Unknown+server+commandbogus\r\n"},
        {"loadx y\n", "ERR UNKNOWN_COMMAND Unknown+server+commandloadx\r\n"},
        {"shutdownx\n", "ERR UNKNOWN_COMMAND Unknown+server+commandshutdownx\r\n"},
        {"version a b c d e f\n", "ERR TOO_MANY_ARGS Too+many+arguments\r\n"},
        {"load\ta b c d e f\n", "ERR TOO_MANY_ARGS Too+many+arguments\r\n"},
    };
    for (const auto &r : reads) {
        FakeShell::feed(p, r.first);
        string out = FakeShell::take(p);
        EXPECT_EQ(out.substr(0, strlen(r.second)), r.second) << r.first;
        EXPECT_EQ(out.find("PERMISSION_DENIED"), string::npos) << r.first;
    }
    EXPECT_EQ(f.eng.stats.permission_denied[DENIED_ADMIN], refused) << "reads are not counted";
    peer *q = f.connect("10.1.1.1", 0);
    FakeShell::feed(q, "load\n");
    EXPECT_EQ(FakeShell::take(q), "ERR UNKNOWN_COMMAND Unknown+server+commandload\r\n")
        << "a bare load, allowed, is an unknown command";
}
