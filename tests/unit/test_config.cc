/* SPDX-License-Identifier: BSD-3-Clause */
// Unit tests for option parsing: gearmand's names, defaults, errors, config files.
#include <gtest/gtest.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include <string>
#include <vector>

extern "C" {
#include "config.h"
#include "options.h"
#include "log.h"
}

struct Parsed {
    config c;
    int rc;
    std::string err;
    std::string out;
};

static Parsed parse(std::vector<std::string> args)
{
    Parsed p;
    options_defaults(&p.c);
    args.insert(args.begin(), "spurd");
    std::vector<char *> argv;
    for (auto &a : args)
        argv.push_back(&a[0]);
    argv.push_back(nullptr);
    char err[512] = "";
    char *outbuf = nullptr;
    size_t outlen = 0;
    FILE *out = open_memstream(&outbuf, &outlen);
    p.rc = options_parse(&p.c, (int)args.size(), argv.data(), err, sizeof err, out);
    fclose(out);
    p.out.assign(outbuf, outlen);
    free(outbuf);
    p.err = err;
    return p;
}

TEST(Config, Defaults)
{
    Parsed p = parse({});
    ASSERT_EQ(p.rc, 0);
    EXPECT_EQ(p.c.port, 4730);
    EXPECT_EQ(p.c.backlog, 0) << "0: the kernel's maximum (listen_backlog)";
    EXPECT_EQ(p.c.job_retries, -1);
    EXPECT_EQ(p.c.verbose, LOG_ERROR);
    EXPECT_EQ(p.c.admin_shutdown, SHUTDOWN_LOCAL);
    EXPECT_DOUBLE_EQ(p.c.grab_wait, 0.002);
    EXPECT_DOUBLE_EQ(p.c.busy_poll, 0.00005);
    EXPECT_DOUBLE_EQ(p.c.reply_batch, 0.0002);
    config_free(&p.c);
}

TEST(Config, GrabWaitAndBusyPoll)
{
    Parsed p = parse({"--grab-wait=0.5", "--busy-poll=200", "--reply-batch=1000"});
    ASSERT_EQ(p.rc, 0) << p.err;
    EXPECT_DOUBLE_EQ(p.c.reply_batch, 0.001);
    EXPECT_DOUBLE_EQ(p.c.grab_wait, 0.0005);
    EXPECT_DOUBLE_EQ(p.c.busy_poll, 0.0002);
    config_free(&p.c);
    p = parse({"--grab-wait=0", "--busy-poll=0"});
    ASSERT_EQ(p.rc, 0) << p.err;
    EXPECT_EQ(p.c.grab_wait, 0);
    EXPECT_EQ(p.c.busy_poll, 0);
    config_free(&p.c);
}

TEST(Config, StoreTimeout)
{
    Parsed p = parse({});
    ASSERT_EQ(p.rc, 0);
    EXPECT_DOUBLE_EQ(p.c.store_timeout, 10.0);
    config_free(&p.c);
    p = parse({"--store-timeout=2.5"});
    ASSERT_EQ(p.rc, 0) << p.err;
    EXPECT_DOUBLE_EQ(p.c.store_timeout, 2.5);
    config_free(&p.c);
    for (const char *bad : {"--store-timeout=0", "--store-timeout=0.05", "--store-timeout=3601",
                            "--store-timeout=x", "--store-timeout=-1"}) {
        p = parse({bad});
        EXPECT_EQ(p.rc, -1) << bad;
        EXPECT_NE(p.err.find("invalid --store-timeout"), std::string::npos) << p.err;
        config_free(&p.c);
    }
}

TEST(Config, CanDoTimeoutFailOrRequeue)
{
    Parsed p = parse({});
    ASSERT_EQ(p.rc, 0) << p.err;
    EXPECT_EQ(p.c.can_do_timeout_requeue, 0);
    config_free(&p.c);
    p = parse({"--can-do-timeout=requeue"});
    ASSERT_EQ(p.rc, 0) << p.err;
    EXPECT_EQ(p.c.can_do_timeout_requeue, 1);
    config_free(&p.c);
    p = parse({"--can-do-timeout=requeue", "--can-do-timeout=fail"});
    ASSERT_EQ(p.rc, 0) << p.err;
    EXPECT_EQ(p.c.can_do_timeout_requeue, 0);
    config_free(&p.c);
}

TEST(Config, AccessOptions)
{
    Parsed p = parse({});
    ASSERT_EQ(p.rc, 0) << p.err;
    EXPECT_EQ(p.c.nadmin_allow, 0);
    EXPECT_EQ(p.c.admin_read_allowed, 0);
    EXPECT_EQ(p.c.policy, nullptr);
    config_free(&p.c);
    p = parse({"--admin-allow=unix", "--admin-allow=10.0.0.0/8", "--admin-read=allowed",
               "--policy=rel/policy", "--admin-read=all", "--admin-read=allowed"});
    ASSERT_EQ(p.rc, 0) << p.err;
    ASSERT_EQ(p.c.nadmin_allow, 2);
    EXPECT_STREQ(p.c.admin_allow[1], "10.0.0.0/8");
    EXPECT_EQ(p.c.admin_read_allowed, 1);
    ASSERT_EQ(config_make_absolute(&p.c, "/srv"), 0);
    EXPECT_STREQ(p.c.policy, "/srv/rel/policy") << "a daemon re-reads it on SIGHUP from /";
    config_free(&p.c);
    std::vector<std::string> many;
    for (int i = 0; i <= CONFIG_MAX_ADMIN_ALLOW; i++)
        many.push_back("--admin-allow=unix");
    p = parse(many);
    EXPECT_EQ(p.rc, -1);
    EXPECT_NE(p.err.find("too many --admin-allow rules (at most 32)"), std::string::npos) << p.err;
    config_free(&p.c);
}

TEST(Config, GearmandNamesShortAndLong)
{
    Parsed p = parse({"-p", "5000", "-b", "64", "-L", "127.0.0.1", "--listen=::1", "-t", "4",
                      "-j", "3", "-w", "2", "--verbose=INFO", "-l", "none", "-P", "/tmp/x.pid",
                      "--exceptions", "--job-handle-prefix=H:box", "-R", "--keepalive",
                      "--keepalive-idle=60", "--hashtable-buckets=1000003", "--syslog",
                      "--coredump", "-u", "nobody"});
    ASSERT_EQ(p.rc, 0) << p.err;
    EXPECT_EQ(p.c.port, 5000);
    EXPECT_EQ(p.c.backlog, 64);
    ASSERT_EQ(p.c.nlisten, 2);
    EXPECT_STREQ(p.c.listen[1], "::1");
    EXPECT_EQ(p.c.threads, 4);
    EXPECT_EQ(p.c.job_retries, 3);
    EXPECT_EQ(p.c.worker_wakeup, 2);
    EXPECT_EQ(p.c.verbose, LOG_INFO);
    EXPECT_STREQ(p.c.log_file, "none");
    EXPECT_STREQ(p.c.pid_file, "/tmp/x.pid");
    EXPECT_EQ(p.c.exceptions, 1);
    EXPECT_STREQ(p.c.job_handle_prefix, "H:box");
    EXPECT_EQ(p.c.keepalive_idle, 60);
    EXPECT_STREQ(p.c.user, "nobody");
    config_free(&p.c);
}

TEST(Config, UnknownOptionAndPositionalFail)
{
    Parsed a = parse({"--bogus"});
    EXPECT_EQ(a.rc, -1);
    EXPECT_NE(a.err.find("unknown option"), std::string::npos) << a.err;
    config_free(&a.c);
    Parsed b = parse({"stray"});
    EXPECT_EQ(b.rc, -1);
    EXPECT_NE(b.err.find("unexpected argument 'stray'"), std::string::npos) << b.err;
    config_free(&b.c);
    Parsed c = parse({"--port"});
    EXPECT_EQ(c.rc, -1);
    EXPECT_NE(c.err.find("needs a value"), std::string::npos) << c.err;
    config_free(&c.c);
}

TEST(Config, BadValuesRejected)
{
    for (auto args : std::vector<std::vector<std::string>>{
             {"-p", "70000"}, {"-p", "12x"}, {"-j", "-2"}, {"-j", "256"}, {"--verbose=LOUD"},
             {"--max-packet-size=10"}, {"--admin-shutdown=maybe"}, {"--store=redis:x"},
             {"-q", "mysql"}, {"-q", "libsqlite3"}, {"--ssl"}, {"-r", "websocket"},
             {"--http-port=70000"}, {"--http-max-body=0"}, {"--http-max-body=100M"},
             {"--http-max-header-size=10"}, {"--http-idle-timeout=-1"},
             {"--max-packet-size=1G", "--max-output-buffer=1M"}, {"--grab-wait=1001"},
             {"--grab-wait=-1"}, {"--busy-poll=100001"}, {"--busy-poll=1.5"},
             {"--reply-batch=1000001"}, {"--can-do-timeout=retry"}, {"--can-do-timeout="},
             {"--ssl-listen=127.0.0.1:4731"}, {"--ssl", "--ssl-certificate=c.pem"},
             {"--ssl-verify-client=maybe"}, {"--ssl-listen=nohost"}, {"--ssl-listen=::1:4731"},
             {"--ssl-listen=[::1]4731"}, {"--ssl-listen=h:70000"},
             {"--ssl-handshake-timeout=-1"},
             {"--ssl", "--ssl-certificate=c", "--ssl-key=k", "--ssl-verify-client=optional"},
             {"--admin-read=some"}, {"--admin-read="}}) {
        Parsed p = parse(args);
        EXPECT_EQ(p.rc, -1) << args[0];
        EXPECT_FALSE(p.err.empty());
        config_free(&p.c);
    }
}

TEST(Config, TlsOptions)
{
    Parsed d = parse({});
    ASSERT_EQ(d.rc, 0) << d.err;
    EXPECT_FALSE(config_tls_enabled(&d.c));
    EXPECT_EQ(d.c.ssl_handshake_timeout, 10);
    EXPECT_EQ(d.c.ssl_verify_client, SSL_VERIFY_CLIENT_NONE);
    config_free(&d.c);
    Parsed t = parse({"--ssl-listen=[::1]:4731", "--ssl-listen=*:0", "--ssl-certificate=c.pem",
                      "--ssl-key=k.pem", "--ssl-ca-file=ca.pem", "--ssl-verify-client=require",
                      "--ssl-handshake-timeout=2.5"});
    ASSERT_EQ(t.rc, 0) << t.err;
    EXPECT_TRUE(config_tls_enabled(&t.c));
    EXPECT_FALSE(t.c.ssl);
    ASSERT_EQ(t.c.nssl_listen, 2);
    EXPECT_STREQ(t.c.ssl_listen[0], "[::1]:4731");
    EXPECT_EQ(t.c.ssl_verify_client, SSL_VERIFY_CLIENT_REQUIRE);
    EXPECT_EQ(t.c.ssl_handshake_timeout, 2.5);
    config_free(&t.c);
    char host[64];
    int port = -1;
    ASSERT_EQ(config_split_hostport("[::1]:4731", host, sizeof host, &port), 0);
    EXPECT_STREQ(host, "::1");
    EXPECT_EQ(port, 4731);
    ASSERT_EQ(config_split_hostport("10.0.0.1:0", host, sizeof host, &port), 0);
    EXPECT_STREQ(host, "10.0.0.1");
    EXPECT_EQ(port, 0);
    ASSERT_EQ(config_split_hostport("*:4730", host, sizeof host, &port), 0);
    EXPECT_STREQ(host, "");
    ASSERT_EQ(config_split_hostport(":4730", host, sizeof host, &port), 0);
    EXPECT_STREQ(host, "");
    EXPECT_EQ(config_split_hostport("host", host, sizeof host, &port), -1);
    EXPECT_EQ(config_split_hostport("host:", host, sizeof host, &port), -1);
    EXPECT_EQ(config_split_hostport("a-rather-long-host-name:1", host, 8, &port), -1);
}

TEST(Config, HttpOffByDefaultAndGearmandNamesTurnItOn)
{
    Parsed d = parse({});
    ASSERT_EQ(d.rc, 0) << d.err;
    EXPECT_FALSE(config_http_enabled(&d.c));
    EXPECT_EQ(config_http_max_body(&d.c), (size_t)d.c.max_packet);
    config_free(&d.c);
    Parsed r = parse({"-r", "http"});
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_TRUE(config_http_enabled(&r.c));
    EXPECT_EQ(config_http_port(&r.c), 8080); /* gearmand's default */
    config_free(&r.c);
    Parsed p = parse({"--protocol=http", "--http-port=9090", "--http-listen=127.0.0.1",
                      "--http-max-body=1M", "--http-max-connections=7",
                      "--http-max-header-size=4k", "--http-idle-timeout=5",
                      "--http-request-timeout=2.5"});
    ASSERT_EQ(p.rc, 0) << p.err;
    EXPECT_EQ(config_http_port(&p.c), 9090);
    EXPECT_EQ(p.c.nhttp_listen, 1);
    EXPECT_EQ(config_http_max_body(&p.c), (size_t)1 << 20);
    EXPECT_EQ(p.c.http_max_connections, 7u);
    EXPECT_EQ(p.c.http_max_header, 4096u);
    EXPECT_EQ(p.c.http_idle_timeout, 5u);
    EXPECT_DOUBLE_EQ(p.c.http_request_timeout, 2.5);
    config_free(&p.c);
    Parsed q = parse({"--http-port=0"}); /* the port alone turns it on */
    ASSERT_EQ(q.rc, 0) << q.err;
    EXPECT_TRUE(config_http_enabled(&q.c));
    EXPECT_EQ(config_http_port(&q.c), 0);
    config_free(&q.c);
}

TEST(Config, SizesWithSuffixes)
{
    Parsed p = parse({"--max-packet-size=16M", "--max-line-length=4k", "--max-output-buffer=1G"});
    ASSERT_EQ(p.rc, 0) << p.err;
    EXPECT_EQ(p.c.max_packet, 16u << 20);
    EXPECT_EQ(p.c.max_line, 4096u);
    EXPECT_EQ(p.c.max_output, (size_t)1 << 30);
    config_free(&p.c);
}

TEST(Config, HelpAndVersionPrint)
{
    Parsed h = parse({"--help"});
    EXPECT_EQ(h.rc, 1);
    EXPECT_NE(h.out.find("--job-retries"), std::string::npos);
    config_free(&h.c);
    Parsed v = parse({"-V"});
    EXPECT_EQ(v.rc, 1);
    EXPECT_EQ(v.out.rfind("spurd ", 0), 0u);
    config_free(&v.c);
}

TEST(Config, ConfigFileWordsThenCommandLineWins)
{
    char path[] = "/tmp/spur-config-XXXXXX";
    int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    std::string text = "--port=4000\r\n--backlog=7  -j 5\n";
    ASSERT_EQ(write(fd, text.data(), text.size()), (ssize_t)text.size());
    close(fd);
    Parsed p = parse({std::string("--config-file=") + path, "--port=4100"});
    unlink(path);
    ASSERT_EQ(p.rc, 0) << p.err;
    EXPECT_EQ(p.c.port, 4100);
    EXPECT_EQ(p.c.backlog, 7);
    EXPECT_EQ(p.c.job_retries, 5);
    config_free(&p.c);
}

TEST(Config, MissingConfigFileIsAnError)
{
    Parsed p = parse({"--config-file=/nonexistent/spurd.conf"});
    EXPECT_EQ(p.rc, -1);
    EXPECT_EQ(p.err, "cannot read config file /nonexistent/spurd.conf: No such file or directory");
    config_free(&p.c);
    Parsed d = parse({"--config-file=/"});
    EXPECT_EQ(d.rc, -1);
    EXPECT_EQ(d.err, "cannot read config file /: Is a directory");
    config_free(&d.c);
}

// TempFile is a config file with the given text, removed at the end of the test.
struct TempFile {
    std::string path;
    explicit TempFile(const std::string &text)
    {
        char p[] = "/tmp/spur-config-XXXXXX";
        int fd = mkstemp(p);
        EXPECT_GE(fd, 0);
        EXPECT_EQ(write(fd, text.data(), text.size()), (ssize_t)text.size());
        close(fd);
        path = p;
    }
    ~TempFile() { unlink(path.c_str()); }
};

static std::vector<std::string> split(const char *line, int *rc, std::string *err = nullptr)
{
    char **words = nullptr;
    int n = 0;
    char e[256] = "";
    *rc = config_split_line(line, &words, &n, e, sizeof e);
    std::vector<std::string> v;
    for (int i = 0; i < n; i++) {
        v.push_back(words[i]);
        free(words[i]);
    }
    free(words);
    if (err)
        *err = e;
    return v;
}

TEST(Config, SplitLineCommentsAndQuotes)
{
    using V = std::vector<std::string>;
    int rc;
    EXPECT_EQ(split("", &rc), V{});
    EXPECT_EQ(split("   \t\r\n", &rc), V{});
    EXPECT_EQ(split("# all comment --port=1\n", &rc), V{});
    EXPECT_EQ(split("   # indented comment\n", &rc), V{});
    EXPECT_EQ(split("--port=1 # trailing --port=2\n", &rc), (V{"--port=1"}));
    EXPECT_EQ(split("--port=1\t#tab then comment\n", &rc), (V{"--port=1"}));
    EXPECT_EQ(split("--job-handle-prefix=a#b\n", &rc), (V{"--job-handle-prefix=a#b"}))
        << "a '#' inside a word is part of it";
    EXPECT_EQ(split("-j 5  --backlog=7\r\n", &rc), (V{"-j", "5", "--backlog=7"}));
    EXPECT_EQ(split("--log-file='/var/log/my spur/x.log'", &rc), (V{"--log-file=/var/log/my spur/x.log"}));
    EXPECT_EQ(split("--log-file=\"/a b\"/c \"#not a comment\"", &rc),
              (V{"--log-file=/a b/c", "#not a comment"}));
    EXPECT_EQ(split("'it''s' \"say \\\"hi\\\" \\\\ \\n\"", &rc), (V{"its", "say \"hi\" \\ \\n"}));
    EXPECT_EQ(split("'a\\b' a\\ b \\#c", &rc), (V{"a\\b", "a b", "#c"}));
    EXPECT_EQ(split("\"\" ''", &rc), (V{"", ""})) << "empty quoted words are words";
    EXPECT_EQ(rc, 0);
    std::string err;
    split("--log-file=\"abc\n", &rc, &err);
    EXPECT_EQ(rc, -1);
    EXPECT_EQ(err, "unterminated double quote");
    split("--log-file='abc", &rc, &err);
    EXPECT_EQ(rc, -1);
    EXPECT_EQ(err, "unterminated single quote");
    split("--port=1 \\\n", &rc, &err);
    EXPECT_EQ(rc, -1);
    EXPECT_EQ(err, "backslash at the end of the line");
}

TEST(Config, ConfigFileCommentsQuotingBlankLines)
{
    TempFile f("# spurd.conf\n"
               "\n"
               "   \n"
               "--port=4100   # the port\n"
               "#--backlog=9\n"
               "--job-handle-prefix=\"H:my host\"\n"
               "--log-file='/var/log/my spur/spurd.log'\n"
               "\t--listen=127.0.0.1 -L ::1\n");
    Parsed p = parse({"--config-file=" + f.path});
    ASSERT_EQ(p.rc, 0) << p.err;
    EXPECT_EQ(p.c.port, 4100);
    EXPECT_EQ(p.c.backlog, 0) << "a commented option stays at its default";
    EXPECT_STREQ(p.c.job_handle_prefix, "H:my host");
    EXPECT_STREQ(p.c.log_file, "/var/log/my spur/spurd.log");
    ASSERT_EQ(p.c.nlisten, 2);
    EXPECT_STREQ(p.c.listen[0], "127.0.0.1");
    EXPECT_STREQ(p.c.listen[1], "::1");
    config_free(&p.c);
}

TEST(Config, AtFileIsConfigFile)
{
    TempFile f("--port=4200\n--backlog=8\n");
    Parsed p = parse({"@" + f.path, "--backlog=9"});
    ASSERT_EQ(p.rc, 0) << p.err;
    EXPECT_EQ(p.c.port, 4200);
    EXPECT_EQ(p.c.backlog, 9) << "the command line wins over the file";
    config_free(&p.c);
    Parsed m = parse({"@/nonexistent/x.conf"});
    EXPECT_EQ(m.rc, -1);
    EXPECT_EQ(m.err, "cannot read config file /nonexistent/x.conf: No such file or directory");
    config_free(&m.c);
}

TEST(Config, SeveralConfigFilesInOrderAndAbbreviated)
{
    TempFile a("--port=4300\n--backlog=5\n");
    TempFile b("--port=4301\n");
    Parsed p = parse({"--config=" + a.path, "--config-file", b.path});
    ASSERT_EQ(p.rc, 0) << p.err;
    EXPECT_EQ(p.c.port, 4301) << "the later file wins";
    EXPECT_EQ(p.c.backlog, 5) << "an abbreviated --config-file is read too";
    config_free(&p.c);
}

TEST(Config, ConfigFileErrorsNameFileAndLine)
{
    struct Case {
        const char *text;
        const char *err;
    } cases[] = {
        {"--port=1\n\n# c\n--foo\n", ":4: unknown option '--foo'"},
        {"--port=99999\n", ":1: invalid --port value '99999'"},
        {"--port\n4730\n", ":1: option '--port' needs a value"},
        {"port=4730\n", ":1: unexpected word 'port=4730' (write --port=4730)"},
        {"--port=1 extra\n", ":1: unexpected argument 'extra'"},
        {"\n--log-file=\"x\n", ":2: unterminated double quote"},
        {"--config-file=/etc/other.conf\n", ":1: --config-file cannot be used in a config file"},
        {"@/etc/other.conf\n", ":1: unexpected argument '@/etc/other.conf'"},
        {"--port=1\n--port=\0\n", ":2: NUL byte in the line"},
    };
    for (const Case &k : cases) {
        TempFile f(std::string(k.text, strlen(k.text) + (strstr(k.err, "NUL") ? 2 : 0)));
        Parsed p = parse({"--config-file=" + f.path});
        EXPECT_EQ(p.rc, -1) << k.text;
        EXPECT_EQ(p.err, f.path + k.err) << k.text;
        config_free(&p.c);
    }
    TempFile longline("--port=1 " + std::string(CONFIG_MAX_FILE_LINE, ' ') + "\n");
    Parsed p = parse({"--config-file=" + longline.path});
    EXPECT_EQ(p.rc, -1);
    EXPECT_EQ(p.err, longline.path + ":1: line longer than 4096 bytes");
    config_free(&p.c);
    TempFile fits("--port=1" + std::string(CONFIG_MAX_FILE_LINE - 9, ' ') + "\n");
    Parsed q = parse({"--config-file=" + fits.path});
    EXPECT_EQ(q.rc, 0) << q.err;
    EXPECT_EQ(q.c.port, 1);
    config_free(&q.c);
}

TEST(Config, ReparseIsIndependent)
{
    Parsed a = parse({"-p", "1"});
    Parsed b = parse({"-p", "2"});
    EXPECT_EQ(a.c.port, 1);
    EXPECT_EQ(b.c.port, 2);
    config_free(&a.c);
    config_free(&b.c);
}

TEST(Config, TcpUserTimeoutDerivedFromKeepalive)
{
    Parsed p = parse({});
    ASSERT_EQ(p.rc, 0) << p.err;
    EXPECT_EQ(p.c.tcp_user_timeout, -1);
    EXPECT_EQ(config_tcp_user_timeout_ms(&p.c), 0u) << "nothing set: the OS default";
    config_free(&p.c);

    p = parse({"--keepalive-idle=60", "--keepalive-interval=10", "--keepalive-count=6"});
    ASSERT_EQ(p.rc, 0) << p.err;
    EXPECT_EQ(config_tcp_user_timeout_ms(&p.c), 120000u) << "60 + 10 * 6 seconds";
    config_free(&p.c);

    p = parse({"--keepalive-idle=60"});
    ASSERT_EQ(p.rc, 0) << p.err;
    EXPECT_EQ(config_tcp_user_timeout_ms(&p.c), (60u + 75u * 9u) * 1000u)
        << "Linux defaults for the unset ones";
    config_free(&p.c);

    p = parse({"--keepalive-idle=60", "--keepalive-interval=10", "--tcp-user-timeout=30"});
    ASSERT_EQ(p.rc, 0) << p.err;
    EXPECT_EQ(config_tcp_user_timeout_ms(&p.c), 30000u) << "the explicit option wins";
    config_free(&p.c);

    p = parse({"--keepalive-idle=60", "--tcp-user-timeout=0"});
    ASSERT_EQ(p.rc, 0) << p.err;
    EXPECT_EQ(config_tcp_user_timeout_ms(&p.c), 0u) << "0: leave the OS default";
    config_free(&p.c);

    p = parse({"--keepalive-idle=32767", "--keepalive-interval=32767", "--keepalive-count=32767"});
    ASSERT_EQ(p.rc, 0) << p.err;
    EXPECT_EQ(config_tcp_user_timeout_ms(&p.c), UINT_MAX) << "saturates, never wraps";
    config_free(&p.c);

    for (const char *bad : {"--tcp-user-timeout=-1", "--tcp-user-timeout=x",
                            "--tcp-user-timeout=4000001"}) {
        p = parse({bad});
        EXPECT_EQ(p.rc, -1) << bad;
        config_free(&p.c);
    }
}

TEST(Config, ListenRetryAndSyslog)
{
    Parsed p = parse({});
    ASSERT_EQ(p.rc, 0) << p.err;
    EXPECT_EQ(p.c.listen_retry, 0) << "fail fast by default";
    EXPECT_EQ(p.c.syslog, 0);
    config_free(&p.c);
    p = parse({"--listen-retry=20", "--syslog"});
    ASSERT_EQ(p.rc, 0) << p.err;
    EXPECT_EQ(p.c.listen_retry, 20);
    EXPECT_EQ(p.c.syslog, 1);
    config_free(&p.c);
    for (const char *bad : {"--listen-retry=-1", "--listen-retry=1.5", "--listen-retry=86401"}) {
        p = parse({bad});
        EXPECT_EQ(p.rc, -1) << bad;
        config_free(&p.c);
    }
}

TEST(Config, MakeAbsoluteResolvesRelativePathsOnly)
{
    Parsed p = parse({"-P", "run/s.pid", "-l", "s.log", "--port-file=/abs/port", "--unix=s.sock",
                      "--store=sqlite:data/q.db", "--libsqlite3-db=q3.db"});
    ASSERT_EQ(p.rc, 0) << p.err;
    ASSERT_EQ(config_make_absolute(&p.c, "/home/op"), 0);
    EXPECT_STREQ(p.c.pid_file, "/home/op/run/s.pid");
    EXPECT_STREQ(p.c.log_file, "/home/op/s.log");
    EXPECT_STREQ(p.c.port_file, "/abs/port");
    EXPECT_STREQ(p.c.unix_path, "/home/op/s.sock");
    EXPECT_STREQ(p.c.store, "sqlite:/home/op/data/q.db");
    EXPECT_STREQ(p.c.sqlite_db, "/home/op/q3.db");
    config_free(&p.c);

    for (const char *special : {"stderr", "none"}) {
        p = parse({"-l", special});
        ASSERT_EQ(p.rc, 0) << p.err;
        ASSERT_EQ(config_make_absolute(&p.c, "/"), 0);
        EXPECT_STREQ(p.c.log_file, special);
        config_free(&p.c);
    }
    p = parse({"-P", "x.pid"});
    ASSERT_EQ(config_make_absolute(&p.c, "/"), 0);
    EXPECT_STREQ(p.c.pid_file, "/x.pid") << "no doubled slash";
    config_free(&p.c);
}

TEST(Config, MaxFunctions)
{
    Parsed p = parse({});
    ASSERT_EQ(p.rc, 0) << p.err;
    EXPECT_EQ(p.c.max_functions, 1000000u);
    config_free(&p.c);
    p = parse({"--max-functions=5"});
    ASSERT_EQ(p.rc, 0) << p.err;
    EXPECT_EQ(p.c.max_functions, 5u);
    config_free(&p.c);
    for (const char *bad : {"--max-functions=0", "--max-functions=x", "--max-functions=-1"}) {
        p = parse({bad});
        EXPECT_EQ(p.rc, -1) << bad;
        EXPECT_NE(std::string(p.err).find("--max-functions"), std::string::npos) << p.err;
        config_free(&p.c);
    }
}
