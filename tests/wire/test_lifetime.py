# SPDX-License-Identifier: BSD-3-Clause
"""Job lifetimes (docs/JOB-LIFETIME.md): a per-job timeout, measured from the job's start on a
worker, fails the job as CAN_DO_TIMEOUT does (WORK_FAIL, or the retry policy then the
dead-letter list); a time to live expires a job no worker started in time (the dead-letter list
with reason `expired`, or dropped with --expired=drop; its foreground clients get WORK_FAIL).
Set per connection with OPTION_REQ job-timeout=MS / job-ttl=S, per admin submit with --timeout
and --ttl, per HTTP POST with X-Spur-Timeout / X-Spur-TTL, per function with --job-timeout and
--job-ttl (or the admin `lifetime`); durable with --store.

Timing checks read a client-side clock taken *before* the request that starts the server's
clock, so "not before the timeout" is exact; the upper bound is generous (ASan under a CPU hog).
"""
import json
import os
import signal
import subprocess
import time

import pytest

from conftest import EXTERNAL
from gearman_wire import (CAN_DO, CAN_DO_TIMEOUT, ERROR, GRAB_JOB, JOB_ASSIGN, JOB_CREATED,
                          NO_JOB, NOOP, OPTION_REQ, OPTION_RES, PRE_SLEEP, SUBMIT_JOB,
                          SUBMIT_JOB_BG, WORK_COMPLETE, WORK_FAIL)

pytestmark = [pytest.mark.spur_only,
              pytest.mark.skipif(EXTERNAL is not None, reason="needs its own spurd")]

SLACK = 15.0  # the most a deadline may be late here: ASan, a CPU hog, a loaded machine


def lines(c, cmd):
    out = c.admin(cmd + "\n", b".\n")
    return [r for r in out.split(b"\n")[:-2]] if out != b".\n" else []


def failed_rows(c):
    return [r.split(b"\t") for r in lines(c, "show failed jobs")]


def stats(c):
    raw = c.admin(b"stats\n", terminator=b"END\r\n")
    return dict(ln.split(b" ")[1:3] for ln in raw.split(b"\r\n")[:-2])


def option(c, text):
    c.send_packet(OPTION_REQ, text)
    return c.read_packet()


def grab(w, handle=None):
    """Grabs a job (waiting for one with PRE_SLEEP/NOOP); returns its handle."""
    w.send_packet(GRAB_JOB)
    _, cmd, body = w.read_packet()
    if cmd == NO_JOB:
        w.send_packet(PRE_SLEEP)
        w.expect(NOOP, timeout=60)
        w.send_packet(GRAB_JOB)
        body = w.expect(JOB_ASSIGN)
    else:
        assert cmd == JOB_ASSIGN, (cmd, body)
    got = body.split(b"\0")[0]
    if handle is not None:
        assert got == handle
    return got


def admin_submit(a, line):
    out = a.admin(line + "\n")
    assert out.startswith(b"OK "), out
    return out[3:].strip()


# ---------------------------------------------------------------- OPTION_REQ and the timeout

def test_option_req_job_timeout_fails_a_silent_job_and_the_worker_goes_on(server):
    c, w, a = server.connect(), server.connect(timeout=60), server.connect()
    assert option(c, b"job-timeout=400")[1:] == (OPTION_RES, b"job-timeout=400")
    w.send_packet(CAN_DO, b"slow")
    t0 = time.monotonic()
    c.send_packet(SUBMIT_JOB, b"slow", b"", b"x")
    h = c.expect(JOB_CREATED)
    grab(w, h)  # ... and never answers
    assert c.expect(WORK_FAIL, timeout=SLACK + 1) == h
    elapsed = time.monotonic() - t0
    assert 0.4 <= elapsed < 0.4 + SLACK, elapsed
    # the worker's late result goes nowhere (ERROR JOB_NOT_FOUND, as for any job it does not
    # hold: COMPATIBILITY.md); its connection keeps working
    w.send_packet(WORK_COMPLETE, h, b"late")
    assert w.expect(ERROR).startswith(b"JOB_NOT_FOUND\0")
    w.echo_roundtrip()
    c.send_packet(SUBMIT_JOB, b"slow", b"", b"y")
    h2 = c.expect(JOB_CREATED)
    grab(w, h2)
    w.send_packet(WORK_COMPLETE, h2, b"done")
    assert c.expect(WORK_COMPLETE) == h2 + b"\0done"
    st = stats(a)
    assert st[b"job_timeouts_total"] == b"1" and st[b"jobs_expired_total"] == b"0"


def test_option_req_names_and_values(server):
    c = server.connect()
    assert option(c, b"job-ttl=5")[1:] == (OPTION_RES, b"job-ttl=5")
    assert option(c, b"JOB-TIMEOUT=0")[1:] == (OPTION_RES, b"JOB-TIMEOUT=0")  # 0: none
    _, cmd, body = option(c, b"job-timeout=abc")
    assert cmd == ERROR and body.startswith(b"INVALID_ARGUMENT\0")
    _, cmd, body = option(c, b"job-ttl=31536001")
    assert cmd == ERROR
    # an unknown option is still gearmand's ERROR, and "exceptions" still works
    _, cmd, body = option(c, b"job-colour=blue")
    assert cmd == ERROR and body.startswith(b"UNKNOWN_OPTION\0")
    assert option(c, b"exceptions")[1:] == (OPTION_RES, b"exceptions")


def test_can_do_timeout_smaller_than_the_job_timeout_wins(server):
    c, w, a = server.connect(), server.connect(timeout=60), server.connect()
    assert option(c, b"job-timeout=600000")[1] == OPTION_RES
    w.send_packet(CAN_DO_TIMEOUT, b"f", b"300")
    c.send_packet(SUBMIT_JOB, b"f", b"", b"x")
    h = c.expect(JOB_CREATED)
    grab(w, h)
    assert c.expect(WORK_FAIL, timeout=SLACK + 1) == h
    assert stats(a)[b"job_timeouts_total"] == b"0"  # the worker's, not the job's


def test_job_timeout_goes_through_the_retry_policy_to_the_dead_letter_list(server):
    a, w = server.connect(), server.connect(timeout=60)
    assert a.admin("retry R 1 0 0\n") == b"OK\r\n"
    w.send_packet(CAN_DO_TIMEOUT, b"R", b"600000")  # larger: the job's own timeout applies
    t0 = time.monotonic()
    h = admin_submit(a, "submit R --timeout 300 payload")
    grab(w, h)
    grab(w, h)  # the retry, after the first timeout
    rows = []

    def dead():
        rows[:] = failed_rows(a)
        return rows
    deadline = time.monotonic() + 2 * SLACK
    while not dead():
        assert time.monotonic() < deadline
        a.echo_roundtrip()
    elapsed = time.monotonic() - t0
    assert elapsed >= 0.6, elapsed  # two runs of 300 ms at least
    handle, func, _, attempts, first, last, err = rows[0]
    assert (handle, func, attempts, err) == (h, b"R", b"2", b"JOB_TIMEOUT")
    assert float(last) - float(first) >= 0.3 - 0.002  # the server's own clock: one run apart
    w.send_packet(WORK_COMPLETE, h, b"late")  # goes nowhere
    assert w.expect(ERROR).startswith(b"JOB_NOT_FOUND\0")
    assert failed_rows(a)[0][0] == h
    assert stats(a)[b"job_timeouts_total"] == b"2"


# ---------------------------------------------------------------- time to live

def wait_failed(a, timeout=2 * SLACK):
    deadline = time.monotonic() + timeout
    while True:
        rows = failed_rows(a)
        if rows:
            return rows
        assert time.monotonic() < deadline, "no job in the dead-letter list"
        a.echo_roundtrip()
        time.sleep(0.02)


def test_queued_job_expires_into_the_dead_letter_list(server):
    a = server.connect()
    t0 = time.time()
    h = admin_submit(a, "submit E --ttl 1 payload")
    keep = admin_submit(a, "submit E --unique k other")  # no TTL: stays queued
    rows = wait_failed(a)
    assert time.time() - t0 >= 1.0
    handle, func, unique, attempts, first, last, err = rows[0]
    assert (handle, func, err) == (h, b"E", b"expired")
    assert float(first) >= t0 + 1.0 - 0.01  # the server's clock: not before its TTL
    assert lines(a, "show jobs") == [h + b"\t0\t0\t1\tfailed", keep + b"\t0\t0\t1"]
    assert stats(a)[b"jobs_expired_total"] == b"1"
    # retried from the list, it runs: its TTL is over
    assert a.admin(b"retry job " + h + b"\n") == b"OK\r\n"
    w = server.connect()
    w.send_packet(CAN_DO, b"E")
    got = {grab(w), grab(w)}
    assert got == {h, keep}


def test_foreground_client_of_an_expired_job_gets_work_fail(server):
    c, a = server.connect(timeout=60), server.connect()
    assert option(c, b"job-ttl=1")[1] == OPTION_RES
    t0 = time.monotonic()
    c.send_packet(SUBMIT_JOB, b"fg", b"", b"x")
    h = c.expect(JOB_CREATED)
    assert c.expect(WORK_FAIL, timeout=SLACK + 1) == h
    assert time.monotonic() - t0 >= 1.0
    assert failed_rows(a) == [] and lines(a, "show jobs") == []
    assert stats(a)[b"jobs_expired_total"] == b"1"


def test_expired_drop_drops_background_jobs(server_factory):
    s = server_factory("--expired=drop")
    a = s.connect()
    admin_submit(a, "submit D --ttl 1 x")
    deadline = time.monotonic() + 2 * SLACK
    while stats(a)[b"jobs_expired_total"] != b"1":
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert failed_rows(a) == [] and lines(a, "show jobs") == []


def test_a_started_job_does_not_expire(server):
    a, w = server.connect(), server.connect()
    w.send_packet(CAN_DO, b"S")
    h = admin_submit(a, "submit S --ttl 1 first")
    grab(w, h)  # started within its TTL
    witness = admin_submit(a, "submit S2 --ttl 1 witness")  # no worker: it expires
    rows = wait_failed(a)  # the witness expired: past h's TTL too
    assert [r[0] for r in rows] == [witness]
    w.send_packet(WORK_COMPLETE, h, b"ok")
    w.echo_roundtrip()
    assert lines(a, "show jobs") == [witness + b"\t0\t0\t1\tfailed"]
    assert stats(a)[b"jobs_expired_total"] == b"1"


def test_function_defaults_from_options_and_admin(server_factory):
    s = server_factory("--job-ttl=T:1", "--job-timeout=T:300")
    a, w = s.connect(), s.connect(timeout=60)
    assert lines(a, "lifetime list") == [b"T\t300\t1"]
    h = admin_submit(a, "submit T x")
    assert wait_failed(a)[0][6] == b"expired"
    # the admin sets another function's defaults; 0 0 removes them
    assert a.admin("lifetime U 250 0\n") == b"OK\r\n"
    assert a.admin("lifetime U x 0\n").startswith(b"ERR INVALID_ARGUMENTS")
    assert sorted(lines(a, "lifetime list")) == [b"T\t300\t1", b"U\t250\t0"]
    c = s.connect(timeout=60)
    w.send_packet(CAN_DO, b"U")
    c.send_packet(SUBMIT_JOB, b"U", b"", b"y")
    h = c.expect(JOB_CREATED)
    grab(w, h)
    assert c.expect(WORK_FAIL, timeout=SLACK + 1) == h
    assert stats(a)[b"job_timeouts_total"] == b"1"
    assert a.admin("lifetime U 0 0\n") == b"OK\r\n"
    assert lines(a, "lifetime list") == [b"T\t300\t1"]
    # a submit's own value wins over the function's default
    c2 = s.connect(timeout=60)
    assert option(c2, b"job-ttl=600")[1] == OPTION_RES
    c2.send_packet(SUBMIT_JOB_BG, b"T", b"", b"z")
    h3 = c2.expect(JOB_CREATED)
    w.send_packet(CAN_DO, b"T")
    grab(w, h3)  # not expired after T's default of 1 s: it had 600
    w.send_packet(WORK_COMPLETE, h3, b"")
    w.echo_roundtrip()


def test_bad_options_are_refused():
    if not os.environ.get("SPURD"):
        pytest.skip("SPURD is not set")
    for bad in ("--job-timeout=F", "--job-timeout=F:0", "--job-timeout=:5", "--job-ttl=F:x",
                "--job-ttl=F:31536001", "--expired=keep"):
        r = subprocess.run([os.environ["SPURD"], bad, "--port=0"], capture_output=True,
                           timeout=30)
        assert r.returncode != 0, bad
        assert bad.split("=")[0].encode() in r.stderr, r.stderr


# ---------------------------------------------------------------- admin and HTTP submits

def test_admin_submit_flags(server):
    a = server.connect()
    assert a.admin("submit F --timeout x p\n").startswith(b"ERR INVALID_ARGUMENTS")
    assert a.admin("submit F --ttl 31536001 p\n").startswith(b"ERR INVALID_ARGUMENTS")
    h = admin_submit(a, "submit F --timeout 5000 --ttl 1 --priority high payload")
    assert wait_failed(a)[0][0] == h


def test_http_headers(server_factory, tmp_path):
    pf = str(tmp_path / "http-port")
    s = server_factory("--http-port=0", "--http-listen=127.0.0.1", "--http-port-file=" + pf)
    url = "http://127.0.0.1:%s/" % open(pf).read().strip()

    def post(fn, data, *headers):
        args = ["curl", "-sS", "--max-time", str(2 * SLACK), "-D", "-", "--data-binary", "@-"]
        for h in headers:
            args += ["-H", h]
        r = subprocess.run(args + [url + fn], input=data, capture_output=True,
                           timeout=4 * SLACK)
        assert r.returncode == 0, r.stderr
        return r.stdout

    assert post("h", b"x", "X-Spur-TTL: soon").startswith(b"HTTP/1.1 400")
    assert post("h", b"x", "X-Spur-Timeout: -1").startswith(b"HTTP/1.1 400")
    a, w = s.connect(), s.connect(timeout=60)
    # background with a TTL: expires into the dead-letter list
    out = post("hb", b"x", "X-Gearman-Background: true", "X-Spur-TTL: 1")
    assert out.startswith(b"HTTP/1.1 200")
    hb = out.split(b"X-Gearman-Job-Handle: ")[1].split(b"\r\n")[0]
    assert wait_failed(a)[0][0] == hb
    # foreground with a timeout: the worker never answers, the POST gets the failure
    w.send_packet(CAN_DO, b"ht")
    t0 = time.monotonic()
    p = subprocess.Popen(["curl", "-sS", "--max-time", str(2 * SLACK), "-D", "-",
                          "--data-binary", "x", "-H", "X-Spur-Timeout: 300", url + "ht"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    h = grab(w)
    out, err = p.communicate(timeout=4 * SLACK)
    assert time.monotonic() - t0 >= 0.3
    assert b"X-Gearman-Command: WORK_FAIL" in out, out + err
    assert h in out
    # with X-Spur-After too (the jobx path)
    keep = admin_submit(a, "submit hk x")
    out = post("ha", b"x", "X-Gearman-Background: true", "X-Spur-After: " + keep.decode(),
               "X-Spur-TTL: 1")
    assert out.startswith(b"HTTP/1.1 200")


# ---------------------------------------------------------------- durability

def replayed(s):
    deadline = time.monotonic() + 60
    while "store: replayed" not in s.stderr_text():
        assert time.monotonic() < deadline, "replay did not finish"
        time.sleep(0.01)
    return s


def killed_and_restarted(factory, s, *args):
    s.stop(signal.SIGKILL)
    s.proc = None  # killed on purpose: the factory does not check its exit code
    return replayed(factory(*args))


def durable(c):
    c.send_packet(SUBMIT_JOB_BG, b"sync", b"", b"")
    c.expect(JOB_CREATED)


def test_kill_9_keeps_timeouts_and_ttls(server_factory, tmp_path):
    arg = "--store=sqlite:" + str(tmp_path / "jobs.db")
    s = replayed(server_factory(arg))
    a, c, w = s.connect(), s.connect(), s.connect()
    t0 = time.time()
    gone = admin_submit(a, "submit K --ttl 1 expires-while-down")
    later = admin_submit(a, "submit K --ttl 3600 --unique l stays")
    slow = admin_submit(a, "submit KT --timeout 300 never-answered")
    started = admin_submit(a, "submit KS --ttl 1 started-before-the-kill")
    w.send_packet(CAN_DO, b"KS")
    grab(w, started)  # started: its TTL is over, and the row says so
    durable(c)
    s = killed_and_restarted(server_factory, s, arg, "--retry=KT:1:0:0")
    assert time.time() >= t0  # (the restart itself may take longer than the TTL)
    a, w = s.connect(), s.connect(timeout=60)
    while time.time() < t0 + 1.05:  # the first TTL passes (while down, or just after)
        time.sleep(0.05)
    rows = wait_failed(a)
    assert [(r[0], r[6]) for r in rows] == [(gone, b"expired")]
    # the job that had started before the kill is queued again, not expired
    states = {r.split(b"\t")[0]: r.split(b"\t")[4:] for r in lines(a, "show jobs")}
    assert states[later] == [] and states[started] == []  # queued
    # the timeout came back too: through the retry policy to the dead-letter list
    w.send_packet(CAN_DO, b"KT")
    grab(w, slow)
    grab(w, slow)
    deadline = time.monotonic() + 2 * SLACK
    while len(failed_rows(a)) < 2:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert {(r[0], r[6]) for r in failed_rows(a)} == {(gone, b"expired"),
                                                      (slow, b"JOB_TIMEOUT")}
    # and the dead-letter state is durable in turn
    c = s.connect()
    durable(c)
    s = killed_and_restarted(server_factory, s, arg)
    a = s.connect()
    assert {(r[0], r[6]) for r in failed_rows(a)} == {(gone, b"expired"),
                                                      (slow, b"JOB_TIMEOUT")}


def test_dump_and_load_carry_the_lifetime(server_factory):
    spuradmin = os.environ.get("SPURADMIN")
    if not spuradmin:
        pytest.skip("SPURADMIN is not set")

    def tool(srv, *args, stdin=None):
        r = subprocess.run([spuradmin, "-h", srv.addr[0], "-p", str(srv.addr[1]), "--timeout",
                            "60"] + list(args), capture_output=True, timeout=180, input=stdin)
        assert r.returncode == 0, r.stderr
        return r.stdout

    s = server_factory()
    a = s.connect()
    admin_submit(a, "submit DL --timeout 1234 --ttl 3600 --unique u x")
    dump = tool(s, "--dump", "-")
    row = [json.loads(ln) for ln in dump.split(b"\n") if b'"DL"' in ln]
    assert len(row) == 1 and "timeout_ms" in row[0]["meta"] and "expires_at" in row[0]["meta"]
    s2 = server_factory()
    tool(s2, "--load", "-", stdin=dump)
    row2 = [json.loads(ln) for ln in tool(s2, "--dump", "-").split(b"\n") if b'"DL"' in ln]
    assert row2[0]["meta"] == row[0]["meta"], (row, row2)


def test_spur_cli_timeout_and_ttl(server):
    build = os.environ.get("SPUR_BUILDDIR")
    if not build:
        pytest.skip("SPUR_BUILDDIR is not set")
    spur = [os.path.join(build, "admin", "spur"), "-h", server.addr[0], "-p",
            str(server.addr[1])]
    a, w = server.connect(), server.connect(timeout=60)
    r = subprocess.run(spur + ["-f", "cb", "-b", "-v", "--ttl", "1", "-s"], capture_output=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert wait_failed(a)[0][6] == b"expired"
    assert subprocess.run(spur + ["-f", "cb", "--ttl", "x", "-s"], capture_output=True,
                          timeout=60).returncode == 2
    w.send_packet(CAN_DO, b"cf")
    p = subprocess.Popen(spur + ["-f", "cf", "--timeout", "300", "-s"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    grab(w)  # never answered
    out, err = p.communicate(timeout=4 * SLACK)
    assert p.returncode == 1, (out, err)
    assert stats(a)[b"job_timeouts_total"] == b"1"
