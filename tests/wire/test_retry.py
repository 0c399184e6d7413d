# SPDX-License-Identifier: BSD-3-Clause
"""Retry policies and the dead-letter list (jobx): a background job of a function with a policy
that fails (WORK_FAIL, WORK_EXCEPTION, CAN_DO_TIMEOUT) runs again after a backoff, and once its
retries are used up waits in the dead-letter list for `retry job` or `purge failed`."""
import json
import os
import shutil
import signal
import subprocess
import time

import pytest

from gearman_wire import (CAN_DO, CAN_DO_TIMEOUT, GRAB_JOB, JOB_ASSIGN, JOB_CREATED, NO_JOB,
                          NOOP, PRE_SLEEP, SUBMIT_JOB, SUBMIT_JOB_BG, WORK_COMPLETE,
                          WORK_EXCEPTION, WORK_FAIL)

HERE = os.path.dirname(os.path.abspath(__file__))


def lines(c, cmd):
    """Runs a listing command; returns its rows (without the final '.')."""
    out = c.admin(cmd + "\n", b".\n")
    return [r for r in out.split(b"\n")[:-2]] if out != b".\n" else []


def failed_rows(c, func=None):
    rows = lines(c, "show failed jobs" + (" " + func if func else ""))
    return [r.split(b"\t") for r in rows]


def submit_bg(c, func, unique, data=b"x"):
    c.send_packet(SUBMIT_JOB_BG, func, unique, data)
    return c.expect(JOB_CREATED)


def grab(w, handle=None):
    """Waits (PRE_SLEEP until NOOP: a retry becomes due through the timer) and grabs a job;
    checks it is handle when given; returns its handle."""
    w.send_packet(PRE_SLEEP)
    w.expect(NOOP, timeout=30)
    w.send_packet(GRAB_JOB)
    body = w.expect(JOB_ASSIGN)
    got = body.split(b"\0")[0]
    if handle is not None:
        assert got == handle
    return got


def no_job(w):
    w.send_packet(GRAB_JOB)
    w.expect(NO_JOB)


def test_failing_job_is_retried_then_dead_lettered(server):
    a, c, w = server.connect(), server.connect(), server.connect()
    assert a.admin("retry F 2 0 0\n") == b"OK\r\n"
    h = submit_bg(c, b"F", b"u1", b"data")
    w.send_packet(CAN_DO, b"F")
    grab(w, h)
    w.send_packet(WORK_FAIL, h)
    grab(w, h)  # retry 1 (no backoff)
    w.send_packet(WORK_EXCEPTION, h, b"boom")
    grab(w, h)  # retry 2
    w.send_packet(WORK_FAIL, h)
    no_job(w)   # used up: in the dead-letter list, not queued
    rows = failed_rows(a)
    assert len(rows) == 1
    handle, func, unique, attempts, first, last, err = rows[0]
    assert (handle, func, unique, attempts, err) == (h, b"F", b"u1", b"3", b"WORK_FAIL")
    assert float(first) <= float(last)
    assert a.admin("status\n", b".\n") == b"F\t0\t0\t1\n.\n"
    assert lines(a, "show jobs") == [h + b"\t0\t0\t1\tfailed"]


def test_exception_text_is_the_last_error_escaped(server):
    a, c, w = server.connect(), server.connect(), server.connect()
    assert a.admin("retry F 0.. 0\n").startswith(b"ERR INVALID_ARGUMENTS")
    assert a.admin("retry F 1 0\n") == b"OK\r\n"
    h = submit_bg(c, b"F", b"u")
    w.send_packet(CAN_DO, b"F")
    grab(w, h)
    w.send_packet(WORK_FAIL, h)
    grab(w, h)
    w.send_packet(WORK_EXCEPTION, h, b"bad\tinput\n\\")
    w.echo_roundtrip()
    rows = failed_rows(a)
    assert rows[0][3] == b"2" and rows[0][6] == b"bad\\x09input\\x0a\\x5c"


def test_backoff_defers_the_retry(server):
    a, c, w = server.connect(), server.connect(), server.connect()
    assert a.admin("retry F 1 3600\n") == b"OK\r\n"
    h = submit_bg(c, b"F", b"u")
    w.send_packet(CAN_DO, b"F")
    grab(w, h)
    w.send_packet(WORK_FAIL, h)
    no_job(w)  # at least 1800 s away (equal jitter: half the delay is fixed)
    assert a.admin("status\n", b".\n") == b"F\t1\t0\t1\n.\n"  # queued as a future job
    assert failed_rows(a) == []


def test_short_backoff_runs_again(server):
    a, c, w = server.connect(), server.connect(), server.connect()
    assert a.admin("retry F 1 0.2 0.2\n") == b"OK\r\n"
    h = submit_bg(c, b"F", b"u")
    w.send_packet(CAN_DO, b"F")
    grab(w, h)
    w.send_packet(WORK_FAIL, h)
    w.send_packet(PRE_SLEEP)
    w.expect(NOOP, timeout=30)  # woken when the retry is due
    grab(w, h)
    w.send_packet(WORK_COMPLETE, h, b"ok")
    w.echo_roundtrip()
    assert failed_rows(a) == [] and lines(a, "show jobs") == []


def test_foreground_and_unpolicied_jobs_keep_gearman_semantics(server):
    a, c, w = server.connect(), server.connect(), server.connect()
    assert a.admin("retry F 3 0 0\n") == b"OK\r\n"
    c.send_packet(SUBMIT_JOB, b"F", b"fg", b"x")
    h = c.expect(JOB_CREATED)
    w.send_packet(CAN_DO, b"F")
    grab(w, h)
    w.send_packet(WORK_FAIL, h)
    assert c.expect(WORK_FAIL) == h
    no_job(w)
    h2 = submit_bg(c, b"G", b"bg")  # no policy for G: dropped on failure
    w.send_packet(CAN_DO, b"G")
    grab(w, h2)
    w.send_packet(WORK_FAIL, h2)
    no_job(w)
    assert failed_rows(a) == [] and lines(a, "show jobs") == []


def test_retry_job_purge_and_policy_admin(server):
    a, c, w = server.connect(), server.connect(), server.connect()
    assert a.admin("retry F 1 0 0\n") == b"OK\r\n"
    assert a.admin("retry G 1 0 0\n") == b"OK\r\n"
    assert a.admin("retry H 5 1.5\n") == b"OK\r\n"
    assert sorted(lines(a, "retry list")) == [b"F\t1\t0\t0", b"G\t1\t0\t0", b"H\t5\t1.5\t3600"]
    assert a.admin("retry H 0 0\n") == b"OK\r\n"  # COUNT 0 removes
    assert sorted(lines(a, "retry list")) == [b"F\t1\t0\t0", b"G\t1\t0\t0"]
    w.send_packet(CAN_DO, b"F")
    w.send_packet(CAN_DO, b"G")
    hs = [submit_bg(c, f, u) for f, u in ((b"F", b"1"), (b"F", b"2"), (b"G", b"3"))]
    for _ in range(6):
        w.send_packet(WORK_FAIL, grab(w))
    no_job(w)
    assert sorted(r[0] for r in failed_rows(a)) == sorted(hs)
    assert [r[0] for r in failed_rows(a, "G")] == [hs[2]]
    assert a.admin("retry job H:nosuch:1\n") == b"ERR UNKNOWN_JOB\r\n"
    assert a.admin(b"retry job " + hs[2] + b"\n") == b"OK\r\n"
    assert a.admin(b"retry job " + hs[2] + b"\n") == b"ERR UNKNOWN_JOB\r\n"  # not failed now
    grab(w, hs[2])
    w.send_packet(WORK_COMPLETE, hs[2], b"")
    assert a.admin("retry job all F\n") == b"OK 2\r\n"
    for _ in range(4):  # attempts were reset: one retry again each
        w.send_packet(WORK_FAIL, grab(w))
    no_job(w)
    assert sorted(r[0] for r in failed_rows(a)) == sorted(hs[:2])
    assert a.admin("purge failed G\n") == b"OK 0\r\n"
    assert a.admin("purge failed\n") == b"OK 2\r\n"
    assert failed_rows(a) == [] and lines(a, "show jobs") == []
    assert a.admin("purge\n").startswith(b"ERR INVALID_ARGUMENTS")
    assert a.admin("retry\n").startswith(b"ERR INVALID_ARGUMENTS")
    assert a.admin("retry F 1001 0\n").startswith(b"ERR INVALID_ARGUMENTS")
    assert a.admin("retry F 1 5 4\n").startswith(b"ERR INVALID_ARGUMENTS")  # MAX < BACKOFF
    # the functions live on while only dead-letter jobs hold them, and can be dropped after
    assert a.admin("show failed jobs G\n") == b".\n"


def test_resubmitting_a_dead_letter_job_runs_it_again(server):
    a, c, w = server.connect(), server.connect(), server.connect()
    assert a.admin("retry F 1 0 0\n") == b"OK\r\n"
    h = submit_bg(c, b"F", b"same")
    w.send_packet(CAN_DO, b"F")
    for _ in range(2):
        grab(w, h)
        w.send_packet(WORK_FAIL, h)
    no_job(w)
    c.send_packet(SUBMIT_JOB, b"F", b"same", b"x")  # a foreground client joins it
    assert c.expect(JOB_CREATED) == h
    grab(w, h)
    w.send_packet(WORK_COMPLETE, h, b"done")
    assert c.expect(WORK_COMPLETE) == h + b"\0done"
    assert failed_rows(a) == []


@pytest.mark.parametrize("store", [False, True], ids=["memory", "sqlite"])
@pytest.mark.parametrize("entry", ["admin", "binary"])
def test_every_submit_of_a_dead_letter_unique_brings_it_back(server_factory, tmp_path, entry,
                                                              store):
    """docs/BEYOND-GEARMAN.md: a submit with the unique of a dead-letter job brings it back as
    `retry job` does and joins it, whatever the entry point (one core submit): it leaves `show
    failed jobs` and runs again, under the same handle."""
    args = ["--retry=f:1:0:0"] + (["--store=sqlite:" + str(tmp_path / "j.db")] if store else [])
    s = server_factory(*args)
    a, c, w = s.connect(), s.connect(), s.connect()
    h = submit_bg(c, b"f", b"U1")
    w.send_packet(CAN_DO, b"f")
    for _ in range(2):
        grab(w, h)
        w.send_packet(WORK_FAIL, h)
    no_job(w)
    assert [r[0] for r in failed_rows(a)] == [h]
    if entry == "admin":
        assert a.admin("submit f --unique U1 x\n") == b"OK " + h + b"\r\n"
    else:
        assert submit_bg(c, b"f", b"U1") == h
    assert failed_rows(a) == []
    grab(w, h)  # it runs again
    w.send_packet(WORK_COMPLETE, h, b"done")
    w.echo_roundtrip()
    assert lines(a, "show jobs") == []


def test_max_failed_jobs_drops_the_oldest(server_factory):
    s = server_factory("--max-failed-jobs=2", "--retry=F:1:0:0")
    a, c, w = s.connect(), s.connect(), s.connect()
    w.send_packet(CAN_DO, b"F")
    hs = []
    for i in range(3):  # one after the other, so the dead-letter order is known
        hs.append(submit_bg(c, b"F", str(i).encode()))
        for _ in range(2):
            grab(w, hs[-1])
            w.send_packet(WORK_FAIL, hs[-1])
        no_job(w)
    assert [r[0] for r in failed_rows(a)] == hs[1:]
    assert lines(a, "show jobs") == [h + b"\t0\t0\t1\tfailed" for h in hs[1:]]
    stats = a.admin("stats\n", b"END\r\n")
    for line in (b"STAT retries_total 3\r\n", b"STAT failed_jobs 2\r\n",
                 b"STAT failed_dropped_total 1\r\n"):
        assert line in stats
    doc = json.loads(a.admin("stats json\n"))
    assert doc["retry"] == {"retries_total": 3, "failed_jobs": 2, "failed_dropped_total": 1,
                            "waiting_jobs": 0}
    metrics = a.admin("metrics\n", b"\n.\n")
    for line in (b"\nspur_retries_total 3\n", b"\nspur_failed_jobs 2\n",
                 b"\nspur_failed_dropped_total 1\n"):
        assert line in metrics
    assert a.admin("stats reset\n") == b"RESET\r\n"
    stats = a.admin("stats\n", b"END\r\n")
    assert b"STAT retries_total 0\r\n" in stats and b"STAT failed_jobs 2\r\n" in stats


def test_can_do_timeout_counts_as_a_failure(server):
    a, c, w = server.connect(), server.connect(), server.connect()
    assert a.admin("retry F 1 0 0\n") == b"OK\r\n"
    h = submit_bg(c, b"F", b"t")
    w.send_packet(CAN_DO_TIMEOUT, b"F\x001")  # one second
    grab(w, h)
    w2 = server.connect()
    w2.send_packet(CAN_DO, b"F")
    w2.send_packet(PRE_SLEEP)
    w2.expect(NOOP, timeout=30)  # the timed-out job is due again at once
    grab(w2, h)
    w2.send_packet(WORK_FAIL, h)
    w2.echo_roundtrip()
    rows = failed_rows(a)
    assert [(r[0], r[3], r[6]) for r in rows] == [(h, b"2", b"WORK_FAIL")]


def test_bad_retry_options_are_refused(tmp_path):
    binary = os.environ.get("SPURD")
    if not binary:
        pytest.skip("SPURD is not set")
    for bad in ("--retry=F:0:1:1", "--retry=F:1:2:1", "--retry=:1:0:0", "--retry=F:1:0",
                "--retry=F:x:0:0", "--max-failed-jobs=-1"):
        out = subprocess.run([binary, bad, "--port=0"], capture_output=True, timeout=20)
        assert out.returncode != 0, bad
        assert b"invalid" in out.stderr, (bad, out.stderr)


def test_real_cli_worker_fails_and_perl_client_submits(server_factory):
    if shutil.which("gearman") is None or shutil.which("perl") is None:
        pytest.skip("gearman or perl missing")
    if subprocess.run(["perl", "-MGearman::Client", "-e1"], capture_output=True).returncode:
        pytest.skip("Gearman::Client (libgearman-client-perl) missing")
    s = server_factory("--retry=cli:2:0:0")
    host, port = s.addr
    script = ("use Gearman::Client; my $c = Gearman::Client->new; "
              f"$c->job_servers('{host}:{port}'); "
              "my $h = $c->dispatch_background('cli', 'payload', {uniq => 'perl1'}) "
              "or die 'no handle'; print $h;")
    out = subprocess.run(["perl", "-e", script], capture_output=True, timeout=30)
    assert out.returncode == 0, out.stderr
    worker = subprocess.Popen(["gearman", "-h", host, "-p", str(port), "-w", "-f", "cli",
                               "--", "false"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        a = s.connect()
        for _ in range(300):  # the worker fails it three times; then it waits in the list
            rows = failed_rows(a)
            if rows:
                break
            a.echo_roundtrip()
            time.sleep(0.05)
        assert len(rows) == 1
        assert rows[0][1:4] == [b"cli", b"perl1", b"3"] and rows[0][6] == b"WORK_FAIL"
    finally:
        worker.kill()
        worker.wait()


# ---------------------------------------------------------------- durability (--store)

def killed_and_restarted(factory, s, *args):
    """kill -9 s and start a new spurd with args (the same store); wait for its replay."""
    s.stop(signal.SIGKILL)
    s.proc = None  # killed on purpose: the factory does not check its exit code
    s2 = factory(*args)
    deadline = time.monotonic() + 60
    while "store: replayed" not in s2.stderr_text():
        assert time.monotonic() < deadline, "replay did not finish"
        time.sleep(0.01)
    return s2


@pytest.fixture(params=["sqlite", "postgres"])
def store_arg(request, tmp_path):
    """spurd's --store option, over each durable backend (postgres skips without Debian's
    postgresql)."""
    if request.param == "sqlite":
        return "--store=sqlite:" + str(tmp_path / "jobs.db")
    cluster = request.getfixturevalue("pg_cluster")
    return "--store=postgres:" + cluster.conninfo(cluster.new_database())


def durable(c):
    """Returns once everything queued for the store before it is durable: a background submit's
    JOB_CREATED waits for its batch, and batches commit in order."""
    c.send_packet(SUBMIT_JOB_BG, b"sync", b"", b"")
    c.expect(JOB_CREATED)


def test_kill_9_in_a_backoff_keeps_the_retry_and_the_policy(server_factory, store_arg):
    arg = store_arg
    s = server_factory(arg)
    a, c, w = s.connect(), s.connect(), s.connect()
    assert a.admin("retry F 3 3600 7200\n") == b"OK\r\n"  # set at run time: stored
    h = submit_bg(c, b"F", b"u", b"payload")
    w.send_packet(CAN_DO, b"F")
    grab(w, h)
    w.send_packet(WORK_EXCEPTION, h, b"disk \"full\"\n\xff")
    w.echo_roundtrip()
    durable(c)
    s = killed_and_restarted(server_factory, s, arg)
    a, w = s.connect(), s.connect()
    assert lines(a, "retry list") == [b"F\t3\t3600\t7200"]
    w.send_packet(CAN_DO, b"F")
    no_job(w)  # still in its backoff (1800 s at least): not run again by the restart
    assert a.admin("status\n", b".\n").startswith(b"F\t1\t0\t1\n")  # (then the sync jobs)
    assert a.admin("retry F 0 0\n") == b"OK\r\n"  # removed: stored too
    c = s.connect()
    durable(c)
    s = killed_and_restarted(server_factory, s, arg)
    a = s.connect()
    assert lines(a, "retry list") == []


def test_kill_9_keeps_the_dead_letter_list_and_runs_nothing_twice(server_factory, store_arg):
    arg = store_arg
    s = server_factory(arg, "--retry=F:1:0:0")
    a, c, w = s.connect(), s.connect(), s.connect()
    h = submit_bg(c, b"F", b"u1", b"payload")
    w.send_packet(CAN_DO, b"F")
    grab(w, h)
    w.send_packet(WORK_FAIL, h)
    grab(w, h)
    w.send_packet(WORK_EXCEPTION, h, b"bad\tthing \\ \"q\"")
    w.echo_roundtrip()
    durable(c)
    before = failed_rows(a)
    s = killed_and_restarted(server_factory, s, arg, "--retry=F:1:0:0")
    a, w = s.connect(), s.connect()
    w.send_packet(CAN_DO, b"F")
    w.send_packet(CAN_DO, b"sync")
    w.send_packet(GRAB_JOB)
    body = w.expect(JOB_ASSIGN)  # only the sync jobs run: the dead-letter job does not
    assert body.split(b"\0")[1] == b"sync"
    w.send_packet(WORK_COMPLETE, body.split(b"\0")[0], b"")
    no_job(w)
    after = failed_rows(a)
    assert after == before and after[0][3] == b"2"
    assert after[0][6] == b"bad\\x09thing \\x5c \"q\""
    assert lines(a, "show jobs") == [h + b"\t0\t0\t1\tfailed"]
    assert a.admin(b"retry job " + h + b"\n") == b"OK\r\n"
    grab(w, h)
    w.send_packet(WORK_COMPLETE, h, b"")
    w.echo_roundtrip()
    c = s.connect()
    durable(c)
    s = killed_and_restarted(server_factory, s, arg, "--retry=F:1:0:0")
    a, w = s.connect(), s.connect()
    w.send_packet(CAN_DO, b"F")
    assert failed_rows(a) == []
    no_job(w)  # completed once: never run again
