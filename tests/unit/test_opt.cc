/* SPDX-License-Identifier: BSD-3-Clause */
// Unit tests for the declarative option tables (opt.h): generic parsing, bounds, error texts,
// defaults and --help, on a small table of their own; and spurd's assembled tables (options.h).
#include <gtest/gtest.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

extern "C" {
#include "config.h"
#include "opt.h"
#include "options.h"
#include "http_opt.h"
#include "jobx_opt.h"
#include "recur_opt.h"
#include "store_backend.h"
#include "store_pg.h"
#include "store_pg_opt.h"
#include "store_sqlite.h"
#include "store_sqlite_opt.h"
#include "transport_tls_opt.h"
}

namespace {

// The fields a test table writes.
struct Cfg {
    int flag;
    int num;
    long big;
    unsigned u;
    uint32_t u32;
    size_t size;
    double secs;
    double usec;
    char *str;
    char *list[2];
    int nlist;
    int mode;
    int custom_calls;
};

int set_custom(struct opt_ctx *x, const char *arg)
{
    Cfg *c = static_cast<Cfg *>(x->cfg);
    c->custom_calls++;
    if (arg != nullptr && strcmp(arg, "stop") == 0)
        return 1;
    if (arg != nullptr && strcmp(arg, "bad") == 0)
        return opt_errf(x, "custom says no to '%s'", arg);
    return 0;
}

int word(struct opt_ctx *x, const char *w)
{
    return opt_errf(x, "unexpected argument '%s'", w);
}

const opt_choice modes[] = {{"off", 0}, {"on", 7}, {nullptr, 0}};

#define F(f) offsetof(Cfg, f)
opt make(const char *name, opt_parse parse, opt_field field, size_t off)
{
    opt o;
    memset(&o, 0, sizeof o);
    o.name = name;
    o.parse = parse;
    o.field = field;
    o.off = off;
    return o;
}

// The table: one row of each kind.
std::vector<opt> rows()
{
    std::vector<opt> r;
    opt o = make("flag", OPT_P_FLAG, OPT_F_INT, F(flag));
    o.short_name = 'f';
    r.push_back(o);
    o = make("num", OPT_P_LONG, OPT_F_INT, F(num));
    o.short_name = 'n', o.lo = -1, o.hi = 9, o.def = 5, o.flags = OPT_NOT_ZERO;
    o.err = "invalid --num value '%s' (-1 or 1..9)";
    r.push_back(o);
    o = make("big", OPT_P_LONG, OPT_F_LONG, F(big));
    o.lo = 0, o.hi = LONG_MAX;
    r.push_back(o);
    o = make("u", OPT_P_LONG, OPT_F_UINT, F(u));
    o.lo = 0, o.hi = 86400, o.def = 60;
    r.push_back(o);
    o = make("u32", OPT_P_SIZE, OPT_F_U32, F(u32));
    o.lo = 1024, o.hi = UINT32_MAX;
    r.push_back(o);
    o = make("size", OPT_P_SIZE, OPT_F_SIZE, F(size));
    o.lo = 64, o.hi = 1 << 30, o.def = 8192;
    r.push_back(o);
    o = make("secs", OPT_P_SECONDS, OPT_F_DOUBLE, F(secs));
    o.dmin = 1, o.dmax = 100, o.flags = OPT_OR_ZERO, o.scale = 1000;
    r.push_back(o);
    o = make("usec", OPT_P_LONG, OPT_F_DOUBLE, F(usec));
    o.lo = 0, o.hi = 1000000, o.scale = 1e6, o.def = 0.0002;
    r.push_back(o);
    o = make("str", OPT_P_STRING, OPT_F_NONE, F(str));
    r.push_back(o);
    o = make("list", OPT_P_LIST, OPT_F_NONE, F(list));
    o.count_off = F(nlist), o.hi = 2, o.err = "too many --list entries (at most %d)";
    r.push_back(o);
    o = make("mode", OPT_P_ENUM, OPT_F_INT, F(mode));
    o.choices = modes, o.err = "invalid --mode '%s' (off, on)";
    r.push_back(o);
    o = make("custom", OPT_P_CUSTOM, OPT_F_NONE, 0);
    o.set = set_custom, o.has_arg = 1;
    r.push_back(o);
    o = make("ignored", OPT_P_LONG, OPT_F_NONE, 0);
    o.lo = 1, o.hi = 5;
    r.push_back(o);
    return r;
}

struct Outcome {
    int rc;
    std::string err;
};

Outcome run(Cfg *c, std::vector<std::string> args)
{
    static std::vector<opt> r = rows();
    static const opt_table t = {r.data(), r.size()};
    static const opt_table *const tables[] = {&t, nullptr};
    args.insert(args.begin(), "prog");
    std::vector<char *> argv;
    for (auto &a : args)
        argv.push_back(&a[0]);
    argv.push_back(nullptr);
    char err[256] = "";
    opt_ctx x = {c, tables, nullptr, 0, stdout, err, sizeof err, nullptr, word};
    Outcome out;
    out.rc = opt_apply(&x, (int)args.size(), argv.data());
    out.err = err;
    return out;
}

Cfg fresh()
{
    static std::vector<opt> r = rows();
    static const opt_table t = {r.data(), r.size()};
    Cfg c;
    memset(&c, 0, sizeof c);
    opt_defaults(&t, &c);
    return c;
}

void release(Cfg *c)
{
    free(c->str);
    for (int i = 0; i < c->nlist; i++)
        free(c->list[i]);
}

} // namespace

TEST(Opt, DefaultsComeFromTheRows)
{
    Cfg c = fresh();
    EXPECT_EQ(c.num, 5);
    EXPECT_EQ(c.u, 60u);
    EXPECT_EQ(c.size, 8192u);
    EXPECT_DOUBLE_EQ(c.usec, 0.0002) << "a DOUBLE default is the stored value, not scaled";
    EXPECT_EQ(c.flag, 0);
}

TEST(Opt, EachKindParsesIntoItsField)
{
    Cfg c = fresh();
    Outcome r = run(&c, {"-f", "-n", "9", "--big=123456789012", "--u=86400", "--u32=4M", "--size=1k",
                     "--secs=50", "--usec=250", "--str=a", "--str=b", "--list=x", "--list=y",
                     "--mode=on", "--custom=go", "--ignored=3", "--nu=-1"});
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(c.flag, 1);
    EXPECT_EQ(c.num, -1) << "an unambiguous abbreviation (--nu) works as getopt_long's";
    EXPECT_EQ(c.big, 123456789012L);
    EXPECT_EQ(c.u, 86400u);
    EXPECT_EQ(c.u32, 4u << 20);
    EXPECT_EQ(c.size, 1024u);
    EXPECT_DOUBLE_EQ(c.secs, 0.05) << "value / scale";
    EXPECT_DOUBLE_EQ(c.usec, 0.00025);
    EXPECT_STREQ(c.str, "b") << "a later string replaces the earlier";
    ASSERT_EQ(c.nlist, 2);
    EXPECT_STREQ(c.list[0], "x");
    EXPECT_STREQ(c.list[1], "y");
    EXPECT_EQ(c.mode, 7);
    EXPECT_EQ(c.custom_calls, 1);
    release(&c);
}

TEST(Opt, BoundsAndErrorTexts)
{
    struct Case {
        std::vector<std::string> args;
        const char *err;
    } cases[] = {
        {{"--num=0"}, "invalid --num value '0' (-1 or 1..9)"},      // OPT_NOT_ZERO
        {{"--num=10"}, "invalid --num value '10' (-1 or 1..9)"},
        {{"-n", "x"}, "invalid --num value 'x' (-1 or 1..9)"},
        {{"--big=-1"}, "invalid --big '-1'"},                        // the generated text
        {{"--u=86401"}, "invalid --u '86401'"},
        {{"--u32=1023"}, "invalid --u32 '1023'"},
        {{"--u32=4G"}, "invalid --u32 '4G'"},
        {{"--size=2G"}, "invalid --size '2G'"},
        {{"--size=-5"}, "invalid --size '-5'"},
        {{"--secs=0.5"}, "invalid --secs '0.5'"},                    // below dmin, not 0
        {{"--secs=101"}, "invalid --secs '101'"},
        {{"--secs=nan"}, "invalid --secs 'nan'"},
        {{"--usec=1.5"}, "invalid --usec '1.5'"},
        {{"--list=a", "--list=b", "--list=c"}, "too many --list entries (at most 2)"},
        {{"--mode=ON"}, "invalid --mode 'ON' (off, on)"},            // names are case-sensitive
        {{"--custom=bad"}, "custom says no to 'bad'"},
        {{"--ignored=6"}, "invalid --ignored '6'"},
        {{"--str"}, "option '--str' needs a value"},
        {{"--nope"}, "unknown option '--nope'"},
        {{"--s=1"}, "unknown option '--s=1'"},                       // ambiguous: str, size, secs
        {{"-x"}, "unknown option '-x'"},
        {{"word"}, "unexpected argument 'word'"},
    };
    for (auto &k : cases) {
        Cfg c = fresh();
        Outcome r = run(&c, k.args);
        EXPECT_EQ(r.rc, -1) << k.args[0];
        EXPECT_EQ(r.err, k.err) << k.args[0];
        release(&c);
    }
    Cfg c = fresh();
    Outcome r = run(&c, {"--secs=0"});
    EXPECT_EQ(r.rc, 0) << "OPT_OR_ZERO: 0 is accepted below dmin: " << r.err;
    r = run(&c, {"--custom=stop", "--num=0"});
    EXPECT_EQ(r.rc, 1) << "a custom row's 1 stops the parse before the bad --num";
    release(&c);
}

// The --help layout: "  -S, --NAME=ARG" or "      --NAME=ARG" up to column 29, one space at
// least; at column 29 or past it two spaces; further lines indented to column 29.
TEST(Opt, UsageLayoutSectionsAndRanks)
{
    opt r[5];
    memset(r, 0, sizeof r);
    r[0] = make("a", OPT_P_FLAG, OPT_F_NONE, 0);
    r[0].short_name = 'a', r[0].help = "first\nsecond", r[0].section = 1, r[0].rank = 20;
    r[1] = make("exactly-twenty-chars", OPT_P_FLAG, OPT_F_NONE, 0); // 6 + 2 + 20 = 28 columns
    r[1].help = "one space", r[1].rank = 10;
    r[2] = make("twenty-three-columns-x", OPT_P_LONG, OPT_F_NONE, 0); // 6 + 2 + 22 = 30
    r[2].arg = nullptr, r[2].help = "two spaces", r[2].rank = 20;
    r[3] = make("b", OPT_P_USAGE, OPT_F_NONE, 0);
    r[3].arg = "FORM", r[3].help = "a second form", r[3].section = 1, r[3].rank = 10;
    r[4] = make("hidden", OPT_P_FLAG, OPT_F_NONE, 0);
    opt_table t = {r, 5};
    const opt_table *const tables[] = {&t, nullptr};
    const char *const headers[] = {"H0\n", "H1\n", nullptr};
    char *buf = nullptr;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    opt_usage(tables, headers, out);
    fclose(out);
    EXPECT_EQ(std::string(buf, len),
              "H0\n"
              "      --exactly-twenty-chars one space\n"
              "      --twenty-three-columns-x  two spaces\n"
              "H1\n"
              "      --b=FORM               a second form\n"
              "  -a, --a                    first\n"
              "                             second\n");
    free(buf);
}

// spurd's tables: the backends own their rows, every row is reachable once, and the --help
// text holds every option the parser accepts.
TEST(Opt, SpurdTablesBackendsOwnTheirRows)
{
    auto owns = [](const opt_table *t, const char *name) {
        for (size_t i = 0; i < t->n; i++)
            if (strcmp(t->rows[i].name, name) == 0 && t->rows[i].parse != OPT_P_USAGE)
                return true;
        return false;
    };
    for (const char *n : {"libpq-conninfo", "libpq-table", "server-id", "takeover", "takeover-after"})
        EXPECT_TRUE(owns(&store_pg_options, n)) << n;
    for (const char *n : {"libsqlite3-db", "libsqlite3-table", "store-max-pages", "store-recover"})
        EXPECT_TRUE(owns(&store_sqlite_options, n)) << n;
    EXPECT_FALSE(owns(&config_options, "server-id"));
    EXPECT_TRUE(owns(&config_options, "store"));
    // the transports and features own theirs too (review 5.3)
    for (const char *n : {"ssl", "ssl-certificate", "ssl-key", "ssl-ca-file", "ssl-listen",
                          "ssl-verify-client", "ssl-handshake-timeout"})
        EXPECT_TRUE(owns(&transport_tls_options, n) && !owns(&config_options, n)) << n;
    for (const char *n : {"protocol", "http-port", "http-listen", "http-port-file",
                          "http-max-connections", "http-max-header-size", "http-max-body",
                          "http-idle-timeout", "http-request-timeout", "http-admin"})
        EXPECT_TRUE(owns(&http_options, n) && !owns(&config_options, n)) << n;
    for (const char *n : {"retry", "max-failed-jobs", "max-waiting-jobs", "max-dependents"})
        EXPECT_TRUE(owns(&jobx_options, n) && !owns(&config_options, n)) << n;
    for (const char *n : {"schedule-tz", "schedule-catchup", "max-schedules"})
        EXPECT_TRUE(owns(&recur_options, n) && !owns(&config_options, n)) << n;

    char *buf = nullptr;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    options_usage(out);
    fclose(out);
    std::string help(buf, len);
    free(buf);
    std::set<std::string> seen;
    int n = 0;
    for (const opt_table *const *t = options_tables; *t != nullptr; t++)
        for (size_t i = 0; i < (*t)->n; i++) {
            const opt &o = (*t)->rows[i];
            if (o.parse == OPT_P_USAGE)
                continue;
            n++;
            EXPECT_TRUE(seen.insert(o.name).second) << "two rows named --" << o.name;
            EXPECT_NE(help.find(std::string("--") + o.name), std::string::npos) << o.name;
            if (o.parse != OPT_P_LONG && o.parse != OPT_P_SIZE && o.parse != OPT_P_SECONDS) {
                EXPECT_EQ(o.def, 0) << "a default only a numeric row applies: --" << o.name;
            }
        }
    EXPECT_LE(n, OPT_MAX_ROWS);
    EXPECT_EQ(help.find("  -h, --help                 print this help and exit\n") != std::string::npos,
              true);
    EXPECT_NE(help.find("      --keepalive-interval=S TCP_KEEPINTVL"), std::string::npos);
    EXPECT_NE(help.find("      --store=postgres:CONNINFO  keep them in PostgreSQL"), std::string::npos)
        << "the second form of --store, a usage row of store_pg.c, after the first";
    EXPECT_LT(help.find("--store=sqlite:PATH"), help.find("--store=postgres:CONNINFO"));
}

// A backend's own options reach its parameters only through its params hook (store_open.c
// names no backend): SQLite's recover and page cap, PostgreSQL's server id (default
// HOSTNAME:PORT), takeovers and the location shown without its password.
TEST(Opt, BackendParamsComeFromTheBackend)
{
    config c;
    options_defaults(&c);
    char *argv[] = {(char *)"spurd", (char *)"--store=sqlite:/tmp/x.db", (char *)"--store-recover",
                    (char *)"--store-max-pages=9", nullptr};
    char err[256] = "";
    ASSERT_EQ(options_parse(&c, 4, argv, err, sizeof err, stdout), 0) << err;
    store_params p;
    ASSERT_EQ(store_backend_params(&c, &p), &store_sqlite_backend);
    ASSERT_NE(p.own, nullptr);
    auto *sq = static_cast<const store_sqlite_params *>(p.own);
    EXPECT_EQ(sq->recover, 1);
    EXPECT_EQ(sq->max_pages, 9);
    config_free(&c);

    options_defaults(&c);
    char *argv2[] = {(char *)"spurd", (char *)"--store=postgres:host=db password=s3cret",
                     (char *)"--takeover=old:1", (char *)"--takeover-after=30", (char *)"-p",
                     (char *)"4999", nullptr};
    ASSERT_EQ(options_parse(&c, 6, argv2, err, sizeof err, stdout), 0) << err;
    ASSERT_EQ(store_backend_params(&c, &p), &store_pg_backend);
    ASSERT_NE(p.own, nullptr);
    auto *pg = static_cast<const store_pg_params *>(p.own);
    ASSERT_NE(pg->server_id, nullptr);
    std::string id = pg->server_id;
    EXPECT_EQ(id.substr(id.size() - 5), ":4999") << id;
    ASSERT_EQ(pg->ntakeover, 1);
    EXPECT_STREQ(pg->takeover[0], "old:1");
    EXPECT_DOUBLE_EQ(pg->takeover_after, 30);
    ASSERT_NE(p.shown, nullptr);
    EXPECT_EQ(std::string(p.shown).find("s3cret"), std::string::npos) << p.shown;
    config_free(&c);
}

// row_default_held reports whether the field of the numeric row o in c holds o's default.
static bool row_default_held(const config &c, const opt &o)
{
    const char *f = reinterpret_cast<const char *>(&c) + o.off;
    long long want = (long long)o.def;
    switch (o.field) {
    case OPT_F_INT: return *reinterpret_cast<const int *>(f) == want;
    case OPT_F_LONG: return *reinterpret_cast<const long *>(f) == want;
    case OPT_F_UINT: return *reinterpret_cast<const unsigned *>(f) == (unsigned)want;
    case OPT_F_U32: return *reinterpret_cast<const uint32_t *>(f) == (uint32_t)want;
    case OPT_F_SIZE: return *reinterpret_cast<const size_t *>(f) == (size_t)want;
    case OPT_F_DOUBLE: return *reinterpret_cast<const double *>(f) == o.def;
    case OPT_F_NONE: return true;
    }
    return false;
}

// options_defaults applies the defaults of every table, wherever a row lives: no numeric row
// (with a field) of any module's table is left at an unset default. A table left out of
// options_tables, or a defaults function that takes config_options alone, fails here.
TEST(Opt, OptionsDefaultsEveryTablesRows)
{
    config c;
    options_defaults(&c);
    int numeric = 0, outside = 0;
    for (const opt_table *const *t = options_tables; *t != nullptr; t++)
        for (size_t i = 0; i < (*t)->n; i++) {
            const opt &o = (*t)->rows[i];
            if (o.field == OPT_F_NONE ||
                (o.parse != OPT_P_LONG && o.parse != OPT_P_SIZE && o.parse != OPT_P_SECONDS))
                continue;
            if (strcmp(o.name, "max-buffer-memory") == 0)
                continue; // its default depends on the RAM: config_defaults_with sets it
            numeric++;
            if (*t != &config_options && o.def != 0)
                outside++;
            EXPECT_TRUE(row_default_held(c, o)) << "--" << o.name << " is not at its default "
                                                << o.def;
        }
    EXPECT_GT(numeric, 30);
    EXPECT_GE(outside, 9) << "the TLS, HTTP, jobx and recur rows with a default";
    // and by value, the moved rows with a default
    EXPECT_EQ(c.http_port, -1);
    EXPECT_EQ(c.http_max_connections, 1024u);
    EXPECT_EQ(c.http_idle_timeout, 60u);
    EXPECT_DOUBLE_EQ(c.http_request_timeout, 30);
    EXPECT_DOUBLE_EQ(c.ssl_handshake_timeout, 10);
    EXPECT_EQ(c.max_schedules, 10000u);
    EXPECT_EQ(c.max_dependents, 100000u);
    config_free(&c);
}

// options_defaults takes the numeric defaults from the rows: every one is what the
// hand-written config_defaults set before the tables.
TEST(Opt, ConfigDefaultsFromRowsAsBefore)
{
    config c;
    options_defaults(&c);
    EXPECT_EQ(c.port, 4730);
    EXPECT_EQ(c.backlog, 0);
    EXPECT_EQ(c.threads, 0);
    EXPECT_EQ(c.job_retries, -1);
    EXPECT_EQ(c.worker_wakeup, -1);
    EXPECT_DOUBLE_EQ(c.grab_wait, 0.002);
    EXPECT_DOUBLE_EQ(c.busy_poll, 0.00005);
    EXPECT_DOUBLE_EQ(c.reply_batch, 0.0002);
    EXPECT_DOUBLE_EQ(c.store_timeout, STORE_TIMEOUT_DEFAULT);
    EXPECT_EQ(c.keepalive_idle, -1);
    EXPECT_EQ(c.keepalive_interval, -1);
    EXPECT_EQ(c.keepalive_count, -1);
    EXPECT_EQ(c.tcp_user_timeout, -1);
    EXPECT_EQ(c.max_packet, 64u << 20);
    EXPECT_EQ(c.max_line, 8192u);
    EXPECT_EQ(c.max_output, (size_t)256 << 20);
    EXPECT_EQ(c.max_buffer_memory, config_default_buffer_memory());
    EXPECT_EQ(c.max_connections, 100000u);
    EXPECT_EQ(c.max_function, 512u);
    EXPECT_EQ(c.max_functions, 1000000u);
    EXPECT_EQ(c.max_failed_jobs, 10000u);
    EXPECT_EQ(c.max_waiting_jobs, 1000000u);
    EXPECT_EQ(c.max_dependents, 100000u);
    EXPECT_EQ(c.max_client_id, 127u);
    EXPECT_DOUBLE_EQ(c.idle_timeout, 0);
    EXPECT_EQ(c.admin_shutdown, SHUTDOWN_LOCAL);
    EXPECT_DOUBLE_EQ(c.shutdown_timeout, 30);
    EXPECT_EQ(c.http_port, -1);
    EXPECT_DOUBLE_EQ(c.ssl_handshake_timeout, 10);
    EXPECT_EQ(c.http_max_connections, 1024u);
    EXPECT_EQ(c.http_max_header, 16u << 10);
    EXPECT_EQ(c.http_max_body, 0u);
    EXPECT_EQ(c.http_idle_timeout, 60u);
    EXPECT_DOUBLE_EQ(c.http_request_timeout, 30);
    EXPECT_EQ(c.max_schedules, 10000u);
    EXPECT_EQ(c.store_max_pages, 0);
    EXPECT_DOUBLE_EQ(c.takeover_after, 0);
    EXPECT_DOUBLE_EQ(c.store_wait, 0);
    config_free(&c);
}
