# SPDX-License-Identifier: BSD-3-Clause
"""Worker loss (disconnect, CANT_DO, RESET_ABILITIES), --job-retries, and CAN_DO_TIMEOUT."""
import time

import pytest

from engine_wire import (NOT_FOUND_DATA, NOT_FOUND_RESULT, expect_assign, expect_error,
                         expect_no_job, expect_noop, fname, grab_until_assign, kill,
                         sleep_worker, status_of, submit, uniq, wait_status, worker)
from gearman_wire import (CAN_DO, CAN_DO_TIMEOUT, CANT_DO, ECHO_REQ, ECHO_RES, ERROR,
                          GET_STATUS, PRE_SLEEP, RESET_ABILITIES, STATUS_RES, SUBMIT_JOB_BG,
                          WORK_COMPLETE, WORK_DATA, WORK_FAIL, WORK_STATUS)

UNKNOWN = b"\x000\x000\x000\x000"


def lose_worker(w, how):
    """Make the server take the worker's running jobs away from it."""
    if how == "kill":
        kill(w)
    elif how == "close":
        w.close()
    elif how == "cant_do":
        w.send_packet(CANT_DO, w.func)
        w.echo_roundtrip()
    elif how == "reset":
        w.send_packet(RESET_ABILITIES)
        w.echo_roundtrip()


LOSSES = ["kill", "close", "cant_do", "reset"]


def running(server, f, payload=b"arg", cmd=None, unique=b"", clients=1):
    """Foreground clients (or one background submit) and a worker holding the job."""
    cs = [server.connect() for _ in range(clients)]
    if cmd is None:
        h = submit(cs[0], f, payload, unique=unique)
        for c in cs[1:]:
            assert submit(c, f, payload, unique=unique) == h
    else:
        h = submit(cs[0], f, payload, unique=unique, cmd=cmd)
    w = worker(server, f)
    w.func = f
    assert expect_assign(w) == [h, f, payload]
    return h, w, cs


@pytest.mark.parametrize("how", LOSSES)
def test_worker_lost_mid_job_job_goes_to_another_worker(server, how):
    f = fname()
    h, w1, (c,) = running(server, f)
    w1.send_packet(WORK_DATA, h, b"partial")
    assert c.expect(WORK_DATA) == h + b"\0partial"
    lose_worker(w1, how)
    w2 = worker(server, f)
    assert grab_until_assign(w2) == [h, f, b"arg"]
    w2.send_packet(WORK_COMPLETE, h, b"from w2")
    assert c.expect(WORK_COMPLETE) == h + b"\0from w2"    # nothing else came before it
    c.echo_roundtrip()


def test_worker_killed_mid_job_sleeping_worker_woken(server):
    f = fname()
    h, w1, (c,) = running(server, f)
    w2 = sleep_worker(server, f)
    kill(w1)
    expect_noop(w2)
    assert expect_assign(w2) == [h, f, b"arg"]
    w2.send_packet(WORK_COMPLETE, h, b"done")
    assert c.expect(WORK_COMPLETE) == h + b"\0done"


def test_worker_killed_two_clients_both_get_new_result(server):
    f = fname()
    h, w1, cs = running(server, f, unique=uniq(), clients=2)
    kill(w1)
    w2 = worker(server, f)
    assert grab_until_assign(w2)[0] == h
    w2.send_packet(WORK_COMPLETE, h, b"r")
    for c in cs:
        assert c.expect(WORK_COMPLETE) == h + b"\0r"


def test_worker_killed_background_job_runs_again(server):
    f = fname()
    h, w1, _ = running(server, f, cmd=SUBMIT_JOB_BG)
    kill(w1)
    w2 = worker(server, f)
    assert grab_until_assign(w2) == [h, f, b"arg"]
    w2.send_packet(WORK_COMPLETE, h, b"")
    w2.echo_roundtrip()
    assert status_of(server, f) == (0, 0, 1)


def test_worker_killed_while_holding_two_jobs_both_requeued(server):
    f = fname()
    c = server.connect()
    hs = [submit(c, f, b"%d" % i) for i in range(2)]
    w1 = worker(server, f)
    assert [expect_assign(w1)[0] for _ in hs] == hs
    kill(w1)
    w2 = worker(server, f)
    got = {grab_until_assign(w2)[0], grab_until_assign(w2)[0]}
    assert got == set(hs)
    for h in hs:
        w2.send_packet(WORK_COMPLETE, h, h)
    results = {c.expect(WORK_COMPLETE) for _ in hs}
    assert results == {h + b"\0" + h for h in hs}


@pytest.mark.parametrize("how", ["cant_do", "reset"])
def test_old_worker_late_result_rejected_after_requeue(server, how):
    f = fname()
    h, w1, (c,) = running(server, f)
    lose_worker(w1, how)
    w2 = worker(server, f)
    assert grab_until_assign(w2)[0] == h
    w1.send_packet(WORK_DATA, h, b"stale")
    expect_error(w1, NOT_FOUND_DATA)
    w1.send_packet(WORK_COMPLETE, h, b"stale")
    expect_error(w1, NOT_FOUND_RESULT)
    w2.send_packet(WORK_COMPLETE, h, b"fresh")
    assert c.expect(WORK_COMPLETE) == h + b"\0fresh"
    c.echo_roundtrip()


def test_cant_do_of_other_function_keeps_running_job(server):
    f, g = fname(), fname()
    c = server.connect()
    h = submit(c, f, b"x")
    w = worker(server, f, g)
    assert expect_assign(w)[0] == h
    w.send_packet(CANT_DO, g)
    w.echo_roundtrip()
    expect_no_job(worker(server, f))
    w.send_packet(WORK_COMPLETE, h, b"ok")
    assert c.expect(WORK_COMPLETE) == h + b"\0ok"


def test_requeued_job_status_is_queued_again(server):
    f = fname()
    h, w1, (c,) = running(server, f)
    w1.send_packet(WORK_STATUS, h, b"1", b"2")
    assert c.expect(WORK_STATUS) == h + b"\x001\x002"
    lose_worker(w1, "cant_do")
    c.send_packet(GET_STATUS, h)
    assert c.expect(STATUS_RES) == h + b"\x001\x000\x000\x000"
    assert status_of(server, f) == (1, 0, 0)


def test_default_retries_unlimited(server):
    f = fname()
    h, w, (c,) = running(server, f)
    for _ in range(5):
        kill(w)
        w = worker(server, f)
        assert grab_until_assign(w)[0] == h
    w.send_packet(WORK_COMPLETE, h, b"survived")
    assert c.expect(WORK_COMPLETE) == h + b"\0survived"


def lose_n_times(server, f, h, w, n, how="kill"):
    """Lose the job's worker n times, re-grabbing after each loss but the last."""
    for i in range(n):
        w.func = f
        lose_worker(w, how)
        if i < n - 1:
            w = worker(server, f)
            assert grab_until_assign(w)[0] == h
    return w


@pytest.mark.parametrize("how", ["kill", "cant_do"])
def test_retries_exhausted_clients_get_work_fail(any_server_factory, how):
    """--job-retries=2: re-queued once, fails on the 2nd loss (as gearmand -j 2)."""
    s = any_server_factory("--job-retries=2")
    f = fname()
    h, w, cs = running(s, f, unique=uniq(), clients=2)
    lose_n_times(s, f, h, w, 2, how)
    for c in cs:
        assert c.expect(WORK_FAIL) == h
    cs[0].send_packet(GET_STATUS, h)
    assert cs[0].expect(STATUS_RES) == h + UNKNOWN
    wait_status(s, f, (0, 0, 0))
    expect_no_job(worker(s, f))


def test_retries_exhausted_background_job_is_removed(any_server_factory):
    s = any_server_factory("--job-retries=0")
    f = fname()
    h, w, (c,) = running(s, f, cmd=SUBMIT_JOB_BG)
    kill(w)
    wait_status(s, f, (0, 0, 0))
    expect_no_job(worker(s, f))
    c.send_packet(GET_STATUS, h)
    assert c.expect(STATUS_RES) == h + UNKNOWN


@pytest.mark.spur_only
@pytest.mark.parametrize("how", LOSSES)
def test_job_retries_zero_fails_on_first_loss(server_factory, how):
    """gearmand 1.1.20 reads 0 as unlimited (DIFFERENCES.md)."""
    s = server_factory("--job-retries=0")
    f = fname()
    h, w, (c,) = running(s, f)
    lose_worker(w, how)
    assert c.expect(WORK_FAIL) == h
    expect_no_job(worker(s, f))


@pytest.mark.parametrize("n", [1, 2, 3])
def test_job_retries_n_hands_the_job_out_n_times(both_factory, n):
    """Differential: -j N hands a job out N times and fails it on the N-th loss, on spurd and on
    gearmand 1.1.20 alike (spurd used to hand it out N+1 times)."""
    s = both_factory("--job-retries=%d" % n)
    f = fname()
    h, w, (c,) = running(s, f)                   # handed out once
    for _ in range(n - 1):
        kill(w)
        w = worker(s, f)
        assert grab_until_assign(w)[0] == h      # handed out again
    c.echo_roundtrip()
    kill(w)                                      # the N-th loss
    assert c.expect(WORK_FAIL) == h
    wait_status(s, f, (0, 0, 0))
    expect_no_job(worker(s, f))


@pytest.mark.spur_only
def test_job_retries_minus_one_is_unlimited(server_factory):
    s = server_factory("--job-retries=-1")
    f = fname()
    h, w, (c,) = running(s, f)
    w = lose_n_times(s, f, h, w, 1)
    for _ in range(6):
        w = worker(s, f)
        assert grab_until_assign(w)[0] == h
        kill(w)
    w = worker(s, f)
    assert grab_until_assign(w)[0] == h
    w.send_packet(WORK_COMPLETE, h, b"ok")
    assert c.expect(WORK_COMPLETE) == h + b"\0ok"


@pytest.mark.gearmand_only
def test_gearmand_job_retries_zero_is_unlimited_and_n_fails_on_nth_loss(gearmand_factory):
    g0 = gearmand_factory("--job-retries=0")
    f = fname()
    h, w, (c,) = running(g0, f)
    w = lose_n_times(g0, f, h, w, 3)
    w = worker(g0, f)
    assert grab_until_assign(w)[0] == h
    g2 = gearmand_factory("--job-retries=2")
    h, w, (c,) = running(g2, f)
    lose_n_times(g2, f, h, w, 2)
    assert c.expect(WORK_FAIL) == h


# ---- CAN_DO_TIMEOUT -------------------------------------------------------------------------

def timeout_worker(server, f, ms=1000):
    w = server.connect()
    w.send_packet(CAN_DO_TIMEOUT, f, str(ms).encode())
    w.echo_roundtrip()
    return w


@pytest.mark.spur_only
def test_can_do_timeout_expiry_fails_job(server):
    """gearmand re-queues the job instead (DIFFERENCES.md)."""
    f = fname()
    c = server.connect()
    h = submit(c, f, b"slow")
    w = timeout_worker(server, f, 1000)
    t0 = time.monotonic()
    assert expect_assign(w)[0] == h
    other = sleep_worker(server, f)
    assert c.expect(WORK_FAIL, timeout=15) == h
    # not before the 1 s timeout; the upper bound only says "about a second, not never"
    # (generous: the suite also runs under ASan and a CPU hog per core)
    assert 0.9 <= time.monotonic() - t0 < 10
    assert status_of(server, f) == (0, 0, 2)
    c.send_packet(GET_STATUS, h)
    assert c.expect(STATUS_RES) == h + UNKNOWN
    w.send_packet(WORK_DATA, h, b"late")
    expect_error(w, NOT_FOUND_DATA)
    w.send_packet(WORK_COMPLETE, h, b"late")
    expect_error(w, NOT_FOUND_RESULT)
    w.echo_roundtrip()
    other.assert_silent(0.1)                      # no NOOP: nothing was re-queued
    expect_no_job(other)
    c.assert_silent(0.1)


@pytest.mark.spur_only
def test_can_do_timeout_is_in_milliseconds(server):
    """gearmand rounds 1-999 ms up to a whole second."""
    f = fname()
    c = server.connect()
    h = submit(c, f, b"slow")
    w = timeout_worker(server, f, 300)
    t0 = time.monotonic()
    assert expect_assign(w)[0] == h
    assert c.expect(WORK_FAIL, timeout=5) == h
    assert 0.25 <= time.monotonic() - t0 < 0.9


def test_can_do_timeout_zero_means_no_timeout(server):
    f = fname()
    c = server.connect()
    h = submit(c, f, b"x")
    w = timeout_worker(server, f, 0)
    assert expect_assign(w)[0] == h
    other = sleep_worker(server, f)
    other.assert_silent(1.5)
    c.assert_silent(0.05)
    w.send_packet(WORK_COMPLETE, h, b"ok")
    assert c.expect(WORK_COMPLETE) == h + b"\0ok"


@pytest.mark.spur_only
def test_can_do_timeout_every_running_job_has_its_own_deadline(server):
    """gearmand keeps one timer per connection: only the last job assigned is timed."""
    f = fname()
    c1, c2 = server.connect(), server.connect()
    h1, h2 = submit(c1, f, b"1"), submit(c2, f, b"2")
    w = timeout_worker(server, f, 1000)
    assert expect_assign(w)[0] == h1
    assert expect_assign(w)[0] == h2
    assert c1.expect(WORK_FAIL, timeout=5) == h1
    assert c2.expect(WORK_FAIL, timeout=5) == h2
    wait_status(server, f, (0, 0, 1))


@pytest.mark.spur_only
def test_can_do_timeout_background_job_removed(server):
    f = fname()
    c = server.connect()
    h = submit(c, f, b"bg", cmd=SUBMIT_JOB_BG)
    w = timeout_worker(server, f, 1000)
    assert expect_assign(w)[0] == h
    wait_status(server, f, (0, 0, 1), timeout=5)
    expect_no_job(w)
    w.send_packet(WORK_COMPLETE, h, b"late")
    expect_error(w, NOT_FOUND_RESULT)


@pytest.mark.spur_only
def test_can_do_timeout_completed_job_then_silent_worker_nothing_happens(server):
    """gearmand's use-after-free: the timer outlives the completed job and re-queues a ghost."""
    f = fname()
    c = server.connect()
    h = submit(c, f, b"quick")
    w = timeout_worker(server, f, 1000)
    assert expect_assign(w)[0] == h
    w.send_packet(WORK_COMPLETE, h, b"done")
    assert c.expect(WORK_COMPLETE) == h + b"\0done"
    other = sleep_worker(server, f)
    # The worker now stays silent past its timeout (no PRE_SLEEP, no GRAB).
    other.assert_silent(2.0)
    c.assert_silent(0.05)
    w.assert_silent(0.05)
    assert status_of(server, f) == (0, 0, 2)
    expect_no_job(other)
    c.send_packet(GET_STATUS, h)
    assert c.expect(STATUS_RES) == h + UNKNOWN
    w.echo_roundtrip()


def test_can_do_timeout_job_completed_in_time_then_pre_sleep(server):
    f = fname()
    c = server.connect()
    h = submit(c, f, b"quick")
    w = timeout_worker(server, f, 1000)
    assert expect_assign(w)[0] == h
    w.send_packet(WORK_COMPLETE, h, b"done")
    assert c.expect(WORK_COMPLETE) == h + b"\0done"
    expect_no_job(w)
    w.send_packet(PRE_SLEEP)
    other = sleep_worker(server, f)
    other.assert_silent(1.8)
    c.assert_silent(0.05)
    w.assert_silent(0.05)
    assert status_of(server, f) == (0, 0, 2)
    expect_no_job(other)


def test_can_do_timeout_applies_only_to_its_function(server):
    timed, plain = fname(), fname()
    c = server.connect()
    h = submit(c, plain, b"long")
    w = server.connect()
    w.send_packet(CAN_DO_TIMEOUT, timed, b"1000")
    w.send_packet(CAN_DO, plain)
    w.echo_roundtrip()
    assert expect_assign(w)[0] == h
    other = sleep_worker(server, plain)
    other.assert_silent(1.8)                      # no re-queue, no NOOP
    c.assert_silent(0.05)
    w.send_packet(WORK_COMPLETE, h, b"ok")
    assert c.expect(WORK_COMPLETE) == h + b"\0ok"


def test_can_do_timeout_requeue_gives_the_job_to_another_worker(both_factory):
    """Differential: spurd --can-do-timeout=requeue against gearmand, which always re-queues. The
    clients are told nothing; once the other worker has completed the job, a late result from
    the slow worker is refused (the job no longer exists)."""
    s = both_factory("--can-do-timeout=requeue")
    f = fname()
    c = s.connect()
    h = submit(c, f, b"slow")
    w = timeout_worker(s, f, 1000)
    assert expect_assign(w)[0] == h
    wait_status(s, f, (1, 0, 1), timeout=10)      # back in the queue after the deadline
    other = worker(s, f)
    assert grab_until_assign(other) == [h, f, b"slow"]
    c.assert_silent(0.1)                          # no WORK_FAIL, nothing at all
    other.send_packet(WORK_COMPLETE, h, b"ok")
    assert c.expect(WORK_COMPLETE) == h + b"\0ok"
    w.send_packet(WORK_COMPLETE, h, b"late")
    expect_error(w, NOT_FOUND_RESULT)
    c.assert_silent(0.1)
    wait_status(s, f, (0, 0, 2))


def requeued_by_timeout(s, f, ms=200):
    """A client's job of f whose worker passed its CAN_DO_TIMEOUT (--can-do-timeout=requeue): the
    job is back in the queue (polled with `status`, not slept for). Returns (client, handle,
    slow worker)."""
    c = s.connect()
    h = submit(c, f, b"slow")
    w = timeout_worker(s, f, ms)
    assert expect_assign(w)[0] == h
    wait_status(s, f, (1, 0, 1), timeout=30)
    return c, h, w


@pytest.mark.spur_only
def test_can_do_timeout_requeue_late_result_completes_the_queued_job(server_factory):
    """Issue 27 item 12: in requeue mode a worker that passed its CAN_DO_TIMEOUT and then sends
    its results completes the job (gearmand refuses them and runs the job again, so a job that
    always takes longer than its timeout never ends: its own gearman_worker_timeout test)."""
    s = server_factory("--can-do-timeout=requeue")
    f = fname()
    c, h, w = requeued_by_timeout(s, f)
    w.send_packet(WORK_DATA, h, b"slept")
    assert c.expect(WORK_DATA) == h + b"\0slept"
    wait_status(s, f, (1, 1, 1))                  # the slow worker has it back: no one else
    w.send_packet(WORK_COMPLETE, h, b"done")
    assert c.expect(WORK_COMPLETE) == h + b"\0done"
    wait_status(s, f, (0, 0, 1))
    c.send_packet(GET_STATUS, h)
    assert c.expect(STATUS_RES) == h + UNKNOWN
    expect_no_job(w)                              # it is not handed out again


@pytest.mark.spur_only
def test_can_do_timeout_requeue_late_result_wins_over_the_new_worker(server_factory):
    """Issue 27 item 12: the job was handed to another worker after the timeout; the slow worker's
    late WORK_COMPLETE still completes it, and the other worker's result then gets the answer
    for a job that no longer exists."""
    s = server_factory("--can-do-timeout=requeue")
    f = fname()
    c, h, w = requeued_by_timeout(s, f)
    other = worker(s, f)
    assert grab_until_assign(other) == [h, f, b"slow"]
    w.send_packet(WORK_COMPLETE, h, b"late")
    assert c.expect(WORK_COMPLETE) == h + b"\0late"
    wait_status(s, f, (0, 0, 2))
    other.send_packet(WORK_DATA, h, b"more")
    expect_error(other, NOT_FOUND_DATA)
    other.send_packet(WORK_COMPLETE, h, b"ok")
    expect_error(other, NOT_FOUND_RESULT)
    c.assert_silent(0.1)


@pytest.mark.spur_only
def test_can_do_timeout_requeue_late_data_takes_the_job_back(server_factory):
    """A late WORK_DATA (or WORK_STATUS) shows the slow worker is still at it: it takes the job
    back from the worker it was handed to, whose packets about it are refused from then on."""
    s = server_factory("--can-do-timeout=requeue")
    f = fname()
    c, h, w = requeued_by_timeout(s, f)
    other = worker(s, f)
    assert grab_until_assign(other) == [h, f, b"slow"]
    w.send_packet(WORK_STATUS, h, b"1", b"2")
    assert c.expect(WORK_STATUS) == h + b"\x001\x002"
    other.send_packet(WORK_DATA, h, b"other")
    expect_error(other, NOT_FOUND_DATA)
    w.send_packet(WORK_COMPLETE, h, b"late")
    assert c.expect(WORK_COMPLETE) == h + b"\0late"
    c.assert_silent(0.1)
    wait_status(s, f, (0, 0, 2))


@pytest.mark.spur_only
def test_can_do_timeout_fail_mode_refuses_late_results(server_factory):
    """Without requeue the job failed at its deadline: a late result is refused, as before."""
    s = server_factory("--can-do-timeout=fail")
    f = fname()
    c = s.connect()
    h = submit(c, f, b"slow")
    w = timeout_worker(s, f, 200)
    assert expect_assign(w)[0] == h
    assert c.expect(WORK_FAIL, timeout=30) == h
    w.send_packet(WORK_COMPLETE, h, b"late")
    expect_error(w, NOT_FOUND_RESULT)
    c.assert_silent(0.1)


@pytest.mark.spur_only
def test_can_do_timeout_requeue_remembers_the_last_8_late_jobs_per_worker(server_factory):
    """The limit (LIMITS.md): a worker's late results are taken for the last 8 jobs it passed the
    timeout on; for an older one it gets JOB_NOT_FOUND, as gearmand answers."""
    s = server_factory("--can-do-timeout=requeue")
    f = fname()
    c = s.connect()
    handles = [submit(c, f, b"job%d" % i, unique=uniq()) for i in range(9)]
    w = timeout_worker(s, f, 200)
    assert sorted(expect_assign(w)[0] for _ in handles) == sorted(handles)
    wait_status(s, f, (9, 0, 1), timeout=30)      # all nine passed their deadline
    refused = []
    for h in handles:
        w.send_packet(WORK_COMPLETE, h, b"late")
        w.send_packet(ECHO_REQ, h)
        magic, cmd, body = w.read_packet()
        if cmd == ERROR:
            assert body == NOT_FOUND_RESULT
            refused.append(h)
            assert w.expect(ECHO_RES) == h
        else:
            assert (cmd, body) == (ECHO_RES, h)
            assert c.expect(WORK_COMPLETE) == h + b"\0late"
    # the first to pass its deadline is forgotten (the deadlines are a round trip apart)
    assert refused == [handles[0]]
    wait_status(s, f, (1, 0, 1))


@pytest.mark.parametrize("cmd", [None, SUBMIT_JOB_BG])
def test_can_do_timeout_requeue_counts_against_job_retries(both_factory, cmd):
    """Differential: with -j 2, the first expiry re-queues the job and the second fails it."""
    s = both_factory("--can-do-timeout=requeue", "--job-retries=2")
    f = fname()
    c = s.connect()
    h = submit(c, f, b"slow", cmd=cmd) if cmd else submit(c, f, b"slow")
    w = timeout_worker(s, f, 1000)
    assert expect_assign(w)[0] == h
    wait_status(s, f, (1, 0, 1), timeout=10)      # the first expiry: re-queued
    assert grab_until_assign(w)[0] == h           # the same worker takes it again
    # The second expiry fails it. gearmand sends the WORK_FAIL only when something else makes its
    # loop run (as for its NOOP, DIFFERENCES.md C), so poll `status` first.
    wait_status(s, f, (0, 0, 1), timeout=10)
    if cmd is None:
        assert c.expect(WORK_FAIL, timeout=5) == h
    expect_no_job(w)
    c.send_packet(GET_STATUS, h)
    assert c.expect(STATUS_RES) == h + UNKNOWN


@pytest.mark.spur_only
def test_can_do_timeout_requeue_wakes_a_sleeper_at_once(server_factory):
    """gearmand queues this NOOP but sends it only when something else wakes its loop."""
    s = server_factory("--can-do-timeout=requeue")
    f = fname()
    c = s.connect()
    h = submit(c, f, b"slow")
    w = timeout_worker(s, f, 300)
    assert expect_assign(w)[0] == h
    other = sleep_worker(s, f)
    expect_noop(other, timeout=10)
    assert grab_until_assign(other)[0] == h
    c.assert_silent(0.05)


@pytest.mark.spur_only
def test_can_do_timeout_fail_option_is_the_default(server_factory):
    """--can-do-timeout=fail (the default, spelled out) fails the job at its deadline."""
    s = server_factory("--can-do-timeout=fail", "--job-retries=-1")
    f = fname()
    c = s.connect()
    h = submit(c, f, b"slow")
    w = timeout_worker(s, f, 300)
    assert expect_assign(w)[0] == h
    assert c.expect(WORK_FAIL, timeout=5) == h
    wait_status(s, f, (0, 0, 1))


@pytest.mark.gearmand_only
def test_gearmand_can_do_timeout_requeues_without_telling_clients(gearmand):
    f = fname()
    c = gearmand.connect()
    h = submit(c, f, b"slow")
    w = timeout_worker(gearmand, f, 1000)
    assert expect_assign(w)[0] == h
    other = sleep_worker(gearmand, f)
    # The timer re-queues the job at 1 s, but the NOOP it queues for the sleeper is not flushed
    # until something else makes the server loop run (here: the admin `status` connection).
    other.assert_silent(2.5)
    assert status_of(gearmand, f) == (1, 0, 2)
    expect_noop(other)
    assert expect_assign(other)[0] == h
    c.assert_silent(0.1)
    w.send_packet(WORK_COMPLETE, h, b"late")
    expect_error(w, NOT_FOUND_RESULT)
    other.send_packet(WORK_COMPLETE, h, b"ok")
    assert c.expect(WORK_COMPLETE) == h + b"\0ok"
