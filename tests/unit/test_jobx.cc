/* SPDX-License-Identifier: BSD-3-Clause */
// Unit tests for jobx (retry policies, the dead-letter list), driven through peers with the fake
// shell and its clock (no sockets); engine_check runs after every packet and admin line.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fake_shell.h"
#include "options.h"

extern "C" {
#include "func.h"
#include "job.h"
#include "jobx.h"
#include "jobx_admin.h"
#include "jobx_store.h"
}

using std::string;

namespace {

using fake::join;

// err_of returns the failure text of record r.
string err_of(const engine *e, const jobx_rec *r)
{
    char buf[JOBX_ERROR_BUF];
    size_t n = 0;
    const char *t = jobx_error(e, r, buf, &n);
    return string(t, n);
}

// body_of returns the body of the one packet in s.
string body_of(const string &s, uint32_t *cmd)
{
    if (s.size() < 12)
        return "<none>";
    *cmd = proto_get32(s.data() + 4);
    return s.substr(12);
}

} // namespace

class JobxTest : public ::testing::Test {
  protected:
    FakeShell f;
    peer *c = nullptr, *w = nullptr, *a = nullptr;
    void SetUp() override
    {
        f.cfg.job_handle_prefix = strdup("H:t");
        f.cfg.grab_wait = 0;
    }
    void start()
    {
        f.start(); // attaches jobx with the other features (features_attach)
        c = f.connect();
        w = f.connect();
        a = f.connect();
    }
    void TearDown() override { check(); }
    void check()
    {
        char err[256];
        ASSERT_EQ(engine_check(&f.eng, err, sizeof err), 0) << err;
    }
    void send(peer *p, uint32_t cmd, const string &body)
    {
        ASSERT_EQ(FakeShell::feed(p, FakeShell::req(cmd, body)), 0);
        check();
    }
    string admin(const string &line)
    {
        EXPECT_EQ(FakeShell::feed(a, line + "\n"), 0);
        check();
        return FakeShell::take(a);
    }
    string submit_bg(const string &fn, const string &uq)
    {
        send(c, CMD_SUBMIT_JOB_BG, join({fn, uq, "data"}));
        uint32_t cmd = 0;
        string h = body_of(FakeShell::take(c), &cmd);
        EXPECT_EQ(cmd, (uint32_t)CMD_JOB_CREATED);
        return h;
    }
    // grab returns the handle of the job w is given, "" on NO_JOB.
    string grab()
    {
        send(w, CMD_GRAB_JOB, "");
        uint32_t cmd = 0;
        string b = body_of(FakeShell::take(w), &cmd);
        if (cmd != CMD_JOB_ASSIGN)
            return "";
        return b.substr(0, b.find('\0'));
    }
    void tick(double s)
    {
        f.clock += s;
        engine_run_timers(&f.eng, f.clock);
        check();
    }
};

// Issue 29 (features plug in): the fake shell attaches the features as the server does
// (features_attach), so these tests run the server's assembly: the policies of --retry are
// there from the start, the durable part's hooks are set, schedules are enabled. (Before, the
// fake shell attached none: `retry list` was empty until the first use and `schedule` was
// refused.)
TEST_F(JobxTest, FakeShellAttachesTheServersFeatures)
{
    f.cfg.retry[0] = {strdup("F"), 2, 10, 15};
    f.cfg.nretry = 1;
    start();
    EXPECT_NE(jobx_of(&f.eng), nullptr);
    EXPECT_NE(f.eng.ext.recur, nullptr);
    EXPECT_NE(f.eng.ext.job_failed, nullptr);
    EXPECT_NE(f.eng.ext.job_restored, nullptr) << "jobx_store attached";
    EXPECT_EQ(admin("retry list"), "F\t2\t10\t15\n.\n");
    EXPECT_EQ(admin("schedule list"), ".\n");
}

TEST(JobxDelay, ExponentialCappedWithEqualJitter)
{
    jobx_policy p = {};
    p.count = 10;
    p.backoff = 2;
    p.max = 20;
    EXPECT_DOUBLE_EQ(jobx_delay(&p, 1, 0.0), 1.0);  // d = 2: half fixed
    EXPECT_DOUBLE_EQ(jobx_delay(&p, 1, 1.0), 2.0);  // ... half random
    EXPECT_DOUBLE_EQ(jobx_delay(&p, 3, 0.0), 4.0);  // d = 2 * 2^2 = 8
    EXPECT_DOUBLE_EQ(jobx_delay(&p, 4, 0.5), 12.0); // d = min(20, 16)
    EXPECT_DOUBLE_EQ(jobx_delay(&p, 9, 1.0), 20.0); // capped at MAX
    EXPECT_DOUBLE_EQ(jobx_delay(&p, UINT32_MAX, 0.0), 10.0); // no overflow, no long loop
    p.backoff = 0;
    EXPECT_DOUBLE_EQ(jobx_delay(&p, 5, 1.0), 0.0);
}

TEST(JobxConfig, RetryOptionParsesFromTheRight)
{
    config cfg;
    options_defaults(&cfg);
    char err[256];
    const char *argv[] = {"spurd", "--retry=a:b:3:1.5:60", "--retry=F:1:0:0",
                          "--max-failed-jobs=7"};
    ASSERT_EQ(options_parse(&cfg, 4, (char **)argv, err, sizeof err, nullptr), 0) << err;
    ASSERT_EQ(cfg.nretry, 2);
    EXPECT_STREQ(cfg.retry[0].func, "a:b");
    EXPECT_EQ(cfg.retry[0].count, 3u);
    EXPECT_DOUBLE_EQ(cfg.retry[0].backoff, 1.5);
    EXPECT_DOUBLE_EQ(cfg.retry[0].max, 60);
    EXPECT_EQ(cfg.max_failed_jobs, 7u);
    config_free(&cfg);
    for (const char *bad : {"--retry=F:0:0:0", "--retry=F:1:2:1", "--retry=:1:0:0",
                            "--retry=F:1:0", "--retry=F:1001:0:0", "--retry=F:1:0:2592001"}) {
        options_defaults(&cfg);
        const char *av[] = {"spurd", bad};
        EXPECT_EQ(options_parse(&cfg, 2, (char **)av, err, sizeof err, nullptr), -1) << bad;
        config_free(&cfg);
    }
}

TEST(JobxConfig, RetryOptionNamesTakeTheEscapedForm)
{
    // a name holds every byte but NUL, given as the listings print it (%09 is a TAB)
    config cfg;
    options_defaults(&cfg);
    char err[256];
    const char *argv[] = {"spurd", "--retry=ns%09f G:2:0:0", "--retry=bad%00:2:0:0"};
    ASSERT_EQ(options_parse(&cfg, 3, (char **)argv, err, sizeof err, nullptr), 0) << err;
    engine e;
    engine_ops ops = {};
    ASSERT_EQ(engine_init(&e, &cfg, &ops, nullptr), 0);
    ASSERT_EQ(jobx_attach(&e), 0);
    const jobx_policy *p = jobx_policy_find(&e, "ns\tf G", 6);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->count, 2u);
    EXPECT_EQ(jobx_policy_find(&e, "bad%00", 6), nullptr);
    EXPECT_EQ(jobx_policy_find(&e, "bad\0", 4), nullptr) << "a NUL is refused (logged)";
    engine_destroy(&e);
    config_free(&cfg);
}

TEST_F(JobxTest, RetriesWithBackoffThenDeadLetters)
{
    f.cfg.retry[0] = {strdup("F"), 2, 10, 15};
    f.cfg.nretry = 1;
    start();
    send(w, CMD_CAN_DO, "F");
    string h = submit_bg("F", "u");
    EXPECT_EQ(grab(), h);
    send(w, CMD_WORK_FAIL, h);
    EXPECT_EQ(grab(), "");   // deferred: at least 5 s (half of 10)
    tick(4.9);
    EXPECT_EQ(grab(), "");
    tick(5.2);               // at most 10 s
    EXPECT_EQ(grab(), h);
    send(w, CMD_WORK_EXCEPTION, join({h, "oops"}));
    tick(7.4);               // d = min(15, 20) = 15: at least 7.5 s
    EXPECT_EQ(grab(), "");
    tick(7.7);
    EXPECT_EQ(grab(), h);
    EXPECT_EQ(jobx_retries(&f.eng), 2u);
    send(w, CMD_WORK_FAIL, h);
    EXPECT_EQ(jobx_nfailed(&f.eng), 1u);
    tick(100);
    EXPECT_EQ(grab(), "");
    job *j = job_find_handle(&f.eng, h.data(), h.size());
    ASSERT_NE(j, nullptr);
    EXPECT_EQ(j->state, JOB_FAILED);
    jobx_rec *r = jobx_rec_of(&f.eng, j);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->attempts, 3u);
    EXPECT_EQ(err_of(&f.eng, r), "WORK_FAIL");
    EXPECT_EQ(j->func->parked, 1u);
    EXPECT_EQ(func_total(j->func), 0u);
    // the function is kept by its dead-letter job: drop is refused, cancel frees it
    EXPECT_EQ(admin("drop function F").substr(0, 3), "ERR");
    send(w, CMD_CANT_DO, "F");
    EXPECT_EQ(admin("cancel job " + h), "OK\r\n");
    EXPECT_EQ(jobx_nfailed(&f.eng), 0u);
    EXPECT_EQ(f.eng.njobs, 0u);
    EXPECT_NE(func_get(&f.eng, "F", 1, 0), nullptr) << "kept as gearmand keeps it";
    EXPECT_EQ(admin("drop function F"), "OK\r\n");
    EXPECT_EQ(func_get(&f.eng, "F", 1, 0), nullptr);
}

TEST_F(JobxTest, LastErrorIsTheExceptionTextCut)
{
    start();
    EXPECT_EQ(admin("retry F 1 0 0"), "OK\r\n");
    send(w, CMD_CAN_DO, "F");
    string h = submit_bg("F", "u");
    EXPECT_EQ(grab(), h);
    send(w, CMD_WORK_FAIL, h);
    tick(0);
    EXPECT_EQ(grab(), h);
    send(w, CMD_WORK_EXCEPTION, join({h, string(5000, 'e')}));
    job *j = job_find_handle(&f.eng, h.data(), h.size());
    ASSERT_NE(j, nullptr);
    jobx_rec *r = jobx_rec_of(&f.eng, j);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(err_of(&f.eng, r).size(), (size_t)JOBX_ERROR_MAX);
    EXPECT_EQ(admin("purge failed F"), "OK 1\r\n");
    EXPECT_EQ(f.eng.njobs, 0u);
}

TEST_F(JobxTest, CapZeroDropsAtOnceAndCounts)
{
    f.cfg.max_failed_jobs = 0;
    start();
    EXPECT_EQ(admin("retry F 1 0 0"), "OK\r\n");
    send(w, CMD_CAN_DO, "F");
    string h = submit_bg("F", "u");
    EXPECT_EQ(grab(), h);
    send(w, CMD_WORK_FAIL, h);
    tick(0);
    EXPECT_EQ(grab(), h);
    send(w, CMD_WORK_FAIL, h);
    EXPECT_EQ(jobx_nfailed(&f.eng), 0u);
    EXPECT_EQ(jobx_dropped(&f.eng), 1u);
    EXPECT_EQ(f.eng.njobs, 0u);
}

TEST_F(JobxTest, TimeoutIsAFailureAndCompletionForgetsTheRecord)
{
    start();
    EXPECT_EQ(admin("retry F 3 1 1"), "OK\r\n");
    send(w, CMD_CAN_DO_TIMEOUT, join({"F", "2"}));
    string h = submit_bg("F", "u");
    EXPECT_EQ(grab(), h);
    tick(2.1); // past CAN_DO_TIMEOUT: deferred 0.5..1 s
    EXPECT_EQ(grab(), "");
    tick(1.0);
    EXPECT_EQ(grab(), h);
    job *j = job_find_handle(&f.eng, h.data(), h.size());
    ASSERT_NE(j, nullptr);
    jobx_rec *r = jobx_rec_of(&f.eng, j);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(err_of(&f.eng, r), "CAN_DO_TIMEOUT");
    send(w, CMD_WORK_COMPLETE, join({h, "ok"}));
    EXPECT_EQ(f.eng.njobs, 0u);
    EXPECT_EQ(jobx_of(&f.eng)->recs.count, 0u);
}

TEST_F(JobxTest, CheckCatchesABrokenSideState)
{
    start();
    EXPECT_EQ(admin("retry F 1 0 0"), "OK\r\n");
    send(w, CMD_CAN_DO, "F");
    string h = submit_bg("F", "u");
    EXPECT_EQ(grab(), h);
    send(w, CMD_WORK_FAIL, h);
    job *j = job_find_handle(&f.eng, h.data(), h.size());
    ASSERT_NE(j, nullptr);
    char err[256];
    j->flags &= (uint8_t)~JOB_EXT; // the record is no longer found
    EXPECT_NE(engine_check(&f.eng, err, sizeof err), 0);
    j->flags |= JOB_EXT;
    j->func->parked++;
    EXPECT_NE(engine_check(&f.eng, err, sizeof err), 0);
    j->func->parked--;
    jobx_of(&f.eng)->nfailed++;
    EXPECT_NE(engine_check(&f.eng, err, sizeof err), 0);
    jobx_of(&f.eng)->nfailed--;
    EXPECT_EQ(engine_check(&f.eng, err, sizeof err), 0) << err;
}

TEST_F(JobxTest, MetaRoundTripsAndReadsReformattedJson)
{
    start();
    EXPECT_EQ(admin("retry F 1 0 0"), "OK\r\n");
    send(w, CMD_CAN_DO, "F");
    string h = submit_bg("F", "u");
    EXPECT_EQ(grab(), h);
    send(w, CMD_WORK_FAIL, h);
    tick(0);
    EXPECT_EQ(grab(), h);
    string text("a\"b\\c\n\x01\xff", 9);
    send(w, CMD_WORK_EXCEPTION, join({h, text}));
    job *j = job_find_handle(&f.eng, h.data(), h.size());
    ASSERT_NE(j, nullptr);
    char meta[8192];
    size_t n = jobx_meta_write(&f.eng, j, meta, sizeof meta);
    ASSERT_GT(n, 0u);
    string m(meta, n);
    EXPECT_EQ(m.find('\n'), string::npos);
    EXPECT_EQ(m.rfind("{\"state\":\"failed\",\"attempts\":2,", 0), 0u) << m;
    int failed = 0;
    uint32_t attempts = 0;
    double first = 0, last = 0;
    char err[JOBX_ERROR_MAX];
    size_t el = 0;
    ASSERT_EQ(jobx_meta_read(meta, n, &failed, &attempts, &first, &last, err, sizeof err, &el), 0);
    EXPECT_EQ(failed, 1);
    EXPECT_EQ(attempts, 2u);
    EXPECT_DOUBLE_EQ(first, 1000.0);
    EXPECT_EQ(string(err, el), text);
    EXPECT_EQ(jobx_meta_write(&f.eng, j, meta, 40), 0u); // too small: none rather than cut
    // as a JSON library may write it back (a dump and load): spaces, other order, \" escapes
    string other = "{ \"error\" : \"x\\\"y\\u0001\", \"attempts\" : 7, \"state\" : \"retrying\","
                   " \"after\": [1, 2] }";
    ASSERT_EQ(jobx_meta_read(other.data(), other.size(), &failed, &attempts, &first, &last, err,
                             sizeof err, &el), 0);
    EXPECT_EQ(failed, 0);
    EXPECT_EQ(attempts, 7u);
    EXPECT_EQ(first, 0.0);
    EXPECT_EQ(string(err, el), string("x\"y\x01", 4));
    string foreign = "{\"after\":[1]}";
    EXPECT_EQ(jobx_meta_read(foreign.data(), foreign.size(), &failed, &attempts, &first, &last,
                             err, sizeof err, &el), -1);
}

// Dependencies: a chain waits, runs in order as each job completes, and the check holds the
// waiting place and its index together.
// jobx_submit (admin `submit`, HTTP X-Spur-After) takes a function name exactly when a binary
// SUBMIT_JOB would: the one check, func_name_ok, and the length limit.
TEST_F(JobxTest, SubmitChecksTheFunctionNameLikeABinarySubmit)
{
    start();
    const string names[] = {"ok", string("a\0b", 3), "a\nb", "a\tb", "a b", "x\x7f",
                            string(f.cfg.max_function, 'f'), string(f.cfg.max_function + 1, 'f'),
                            ""};
    for (const string &n : names) {
        uint64_t id = 0;
        const char *why = nullptr;
        int rc = jobx_submit(&f.eng, n.data(), n.size(), "", 0, PRIO_NORMAL, "d", 1, nullptr, 0,
                             nullptr, nullptr, &id, &why);
        bool ok = !n.empty() && n.size() <= f.cfg.max_function && func_name_ok(n.data(), n.size());
        EXPECT_EQ(rc == 0, ok) << n;
        if (!ok) {
            // the admin's codes: a NUL is INVALID_FUNCTION_NAME (as every admin command names
            // it), a name too long ARGUMENT_TOO_LARGE (as a binary submit), empty INVALID_ARGUMENT
            const string w(why);
            const char *code = n.size() > f.cfg.max_function ? "ARGUMENT_TOO_LARGE "
                               : n.empty()                   ? "INVALID_ARGUMENT "
                                                             : "INVALID_FUNCTION_NAME ";
            EXPECT_EQ(w.rfind(code, 0), 0u) << n << ": " << w;
        }
        check();
    }
}

TEST_F(JobxTest, DependenciesWaitRunInOrderAndCascadeFailures)
{
    start();
    string ra = admin("submit fa one");
    ASSERT_EQ(ra.substr(0, 7), "OK H:t:");
    string ha = ra.substr(3, ra.size() - 5);
    string rb = admin("submit fb --after " + ha + " two");
    string hb = rb.substr(3, rb.size() - 5);
    string rc = admin("submit fc --after " + ha + "," + hb + " three");
    string hc = rc.substr(3, rc.size() - 5);
    EXPECT_EQ(jobx_nwaiting(&f.eng), 2u);
    EXPECT_EQ(jobx_of(&f.eng)->nedges, 3u);
    EXPECT_EQ(jobx_of(&f.eng)->deps.count, 2u) << "one entry per job waited for";
    job *jb = job_find_handle(&f.eng, hb.data(), hb.size());
    ASSERT_NE(jb, nullptr);
    EXPECT_EQ(jb->state, JOB_WAITING);
    // the check sees an edge gone from the index
    jobx_rec *r = jobx_rec_of(&f.eng, jb);
    ASSERT_NE(r, nullptr);
    uint64_t saved = r->edges[0].pre->id;
    r->edges[0].pre->id = 12345;
    char err[256];
    EXPECT_NE(engine_check(&f.eng, err, sizeof err), 0);
    EXPECT_NE(string(err).find("off the index"), string::npos) << err;
    r->edges[0].pre->id = saved;
    check();
    // a completes: b runs (c still waits for b)
    send(w, CMD_CAN_DO, "fa");
    send(w, CMD_CAN_DO, "fb");
    send(w, CMD_CAN_DO, "fc");
    FakeShell::take(w);
    send(w, CMD_GRAB_JOB, "");
    uint32_t cmd = 0;
    EXPECT_EQ(body_of(FakeShell::take(w), &cmd), join({ha, "fa", "one"}));
    send(w, CMD_WORK_COMPLETE, join({ha, ""}));
    EXPECT_EQ(jb->state, JOB_READY);
    EXPECT_EQ(jobx_nwaiting(&f.eng), 1u);
    EXPECT_FALSE(jb->flags & JOB_EXT) << "nothing left to keep for b";
    FakeShell::take(w);
    send(w, CMD_GRAB_JOB, "");
    EXPECT_EQ(body_of(FakeShell::take(w), &cmd), join({hb, "fb", "two"}));
    // b fails for good (no retry policy): c fails too, into the dead-letter list
    send(w, CMD_WORK_FAIL, hb);
    job *jc = job_find_handle(&f.eng, hc.data(), hc.size());
    ASSERT_NE(jc, nullptr);
    EXPECT_EQ(jc->state, JOB_FAILED);
    EXPECT_EQ(jobx_nwaiting(&f.eng), 0u);
    EXPECT_EQ(jobx_of(&f.eng)->deps.count, 0u);
    EXPECT_EQ(jobx_of(&f.eng)->nedges, 0u);
    jobx_rec *rcr = jobx_rec_of(&f.eng, jc);
    ASSERT_NE(rcr, nullptr);
    EXPECT_EQ(err_of(&f.eng, rcr), "dependency " + hb + " failed");
}

// Fan-in: many jobs waiting for one job are one entry of the index (keys never repeat, so no
// lookup walks a cluster of equal keys) holding a list of edges; completing that job releases
// them in the order they were submitted, touching each once. The caps refuse more.
TEST_F(JobxTest, FanInIsOneIndexEntryReleasedInOrder)
{
    const size_t n = 2000;
    f.cfg.max_dependents = n;
    f.cfg.max_waiting_jobs = n + 1;
    start();
    string ra = admin("submit fa one");
    string ha = ra.substr(3, ra.size() - 5);
    std::vector<string> hs;
    for (size_t i = 0; i < n; i++) {
        EXPECT_EQ(FakeShell::feed(a, "submit fw --after " + ha + " " + std::to_string(i) + "\n"), 0);
        string r = FakeShell::take(a);
        ASSERT_EQ(r.substr(0, 3), "OK ") << r;
        hs.push_back(r.substr(3, r.size() - 5));
    }
    check();
    job *ja = job_find_handle(&f.eng, ha.data(), ha.size());
    ASSERT_NE(ja, nullptr);
    EXPECT_EQ(jobx_of(&f.eng)->deps.count, 1u) << "one entry, not one per edge";
    EXPECT_EQ(jobx_of(&f.eng)->nedges, n);
    EXPECT_EQ(jobx_ndependents(&f.eng, ja->id), n);
    // the entry's list is the waiters in submission order, each edge inline in its record
    jobx_rec *first = jobx_rec_of(&f.eng, job_find_handle(&f.eng, hs[0].data(), hs[0].size()));
    ASSERT_NE(first, nullptr);
    EXPECT_EQ(first->edges, &first->one) << "one dependency: no allocation beside the record";
    jobx_pre *p = first->one.pre;
    ASSERT_NE(p, nullptr);
    size_t k = 0;
    list_for_each(it, &p->waiters) {
        jobx_edge *ed = container_of(it, jobx_edge, node);
        string h(JOB_HANDLE_BUF, '\0');
        h.resize(job_handle(&f.eng, ed->r->job, &h[0]));
        ASSERT_LT(k, n);
        EXPECT_EQ(h, hs[k++]);
    }
    EXPECT_EQ(k, n);
    // the caps: this job has --max-dependents waiting; another may take one more
    EXPECT_EQ(admin("submit fw --after " + ha + " x").substr(0, 24), "ERR TOO_MANY_DEPENDENTS ");
    string rb = admin("submit fb two");
    string hb = rb.substr(3, rb.size() - 5);
    EXPECT_EQ(admin("submit fw --after " + hb + " x").substr(0, 3), "OK ");
    EXPECT_EQ(admin("submit fw --after " + hb + " x").substr(0, 17), "ERR WAITING_FULL ");
    // a completes: all n become runnable, in order
    send(w, CMD_CAN_DO, "fa");
    send(w, CMD_GRAB_JOB, "");
    FakeShell::take(w);
    send(w, CMD_WORK_COMPLETE, join({ha, ""}));
    EXPECT_EQ(jobx_nwaiting(&f.eng), 1u);
    EXPECT_EQ(jobx_of(&f.eng)->deps.count, 1u) << "b's entry only";
    send(w, CMD_CANT_DO, "fa");
    send(w, CMD_CAN_DO, "fw");
    for (size_t i = 0; i < 3; i++) {
        send(w, CMD_GRAB_JOB, "");
        uint32_t cmd = 0;
        string b = body_of(FakeShell::take(w), &cmd);
        ASSERT_EQ(cmd, (uint32_t)CMD_JOB_ASSIGN);
        EXPECT_EQ(b, join({hs[i], "fw", std::to_string(i)}));
    }
}

// A record is small, and the common failure texts are not copied into it: a waiting or
// dead-letter job costs at most twice a queued one (docs/LIMITS.md).
TEST_F(JobxTest, RecordIsSmallAndCommonErrorsAreNotCopied)
{
    EXPECT_LE(sizeof(jobx_rec), 104u);
    start();
    EXPECT_EQ(admin("retry F 1 0 0"), "OK\r\n");
    send(w, CMD_CAN_DO, "F");
    string h = submit_bg("F", "u");
    EXPECT_EQ(grab(), h);
    send(w, CMD_WORK_FAIL, h);
    job *j = job_find_handle(&f.eng, h.data(), h.size());
    ASSERT_NE(j, nullptr);
    jobx_rec *r = jobx_rec_of(&f.eng, j);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->error_kind, JOBX_ERR_STATIC);
    tick(0);
    EXPECT_EQ(grab(), h);
    send(w, CMD_WORK_EXCEPTION, join({h, "boom"}));
    EXPECT_EQ(r->error_kind, JOBX_ERR_OWNED);
    EXPECT_EQ(err_of(&f.eng, r), "boom");
    // a failed dependency's text is made when asked, and read back as such from a row
    char hb[JOB_HANDLE_BUF];
    string dep = "dependency " + string(hb, job_handle_id(&f.eng, 77, hb)) + " failed";
    jobx_set_error(&f.eng, r, dep.data(), dep.size());
    EXPECT_EQ(r->error_kind, JOBX_ERR_DEP);
    EXPECT_EQ(err_of(&f.eng, r), dep);
    string other = "dependency H:elsewhere:77 failed";
    jobx_set_error(&f.eng, r, other.data(), other.size());
    EXPECT_EQ(r->error_kind, JOBX_ERR_OWNED);
    EXPECT_EQ(err_of(&f.eng, r), other);
    EXPECT_EQ(admin("purge failed F"), "OK 1\r\n");
}
