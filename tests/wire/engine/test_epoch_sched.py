# SPDX-License-Identifier: BSD-3-Clause
"""SUBMIT_JOB_EPOCH (run at or after a time, wake sleepers when due) and SUBMIT_JOB_SCHED."""
import time

import pytest

from engine_wire import (INVALID_COMMAND, expect_assign, expect_error, expect_no_job, fname,
                         grab, grab_until_assign, sleep_worker, status_of, submit, submit_epoch,
                         uniq, worker)
from gearman_wire import (GET_STATUS, GRAB_JOB, JOB_ASSIGN, JOB_CREATED, NO_JOB, NOOP,
                          PRE_SLEEP, STATUS_RES, SUBMIT_JOB_LOW_BG, SUBMIT_JOB_SCHED,
                          WORK_COMPLETE)


def due_in(seconds):
    """An epoch `seconds` (at least) from now, on a whole second as the protocol requires."""
    return int(time.time()) + 1 + seconds


@pytest.mark.parametrize("when", [1, 1000000000, -1], ids=["1970", "2001", "now-1s"])
def test_epoch_in_the_past_runs_at_once(server, when):
    f = fname()
    if when < 0:
        when = int(time.time()) + when
    c = server.connect()
    h = submit_epoch(c, f, when, b"past")
    w = worker(server, f)
    assert expect_assign(w) == [h, f, b"past"]


def test_epoch_job_is_background(server):
    f = fname()
    c = server.connect()
    h = submit_epoch(c, f, 1, b"x")
    w = worker(server, f)
    assert expect_assign(w)[0] == h
    w.send_packet(WORK_COMPLETE, h, b"done")
    w.echo_roundtrip()
    c.echo_roundtrip()
    assert status_of(server, f) == (0, 0, 1)


def test_future_epoch_job_waits_then_runs_at_or_after_its_time(server):
    f = fname()
    when = due_in(1)
    c = server.connect()
    h = submit_epoch(c, f, when, b"later")
    w = worker(server, f)
    expect_no_job(w)
    assert status_of(server, f) == (1, 0, 1)
    c.send_packet(GET_STATUS, h)
    assert c.expect(STATUS_RES) == h + b"\x001\x000\x000\x000"
    assert grab_until_assign(w, timeout=when - time.time() + 3) == [h, f, b"later"]
    assert time.time() >= when


def test_future_epoch_job_does_not_block_later_jobs(server):
    f = fname()
    c = server.connect()
    submit_epoch(c, f, due_in(60), b"future")
    h = submit(c, f, b"now")
    w = worker(server, f)
    assert expect_assign(w)[0] == h
    expect_no_job(w)
    assert status_of(server, f) == (2, 1, 1)


@pytest.mark.spur_only
def test_future_epoch_job_does_not_block_low_priority_jobs(server):
    """gearmand 1.1.20 only looks at the best non-empty priority list (DIFFERENCES.md)."""
    f = fname()
    c = server.connect()
    submit_epoch(c, f, due_in(60), b"future")
    h = submit(c, f, b"low", cmd=SUBMIT_JOB_LOW_BG)
    w = worker(server, f)
    assert expect_assign(w)[0] == h


def test_foreground_submit_joins_future_epoch_job(server):
    f, u = fname(), uniq()
    c, fg = server.connect(), server.connect()
    h = submit_epoch(c, f, due_in(60), b"future", unique=u)
    assert submit(fg, f, b"now", unique=u) == h
    expect_no_job(worker(server, f))


def run_sleeper_until_assigned(w, when, limit):
    """Act as a well-behaved worker (NOOP -> GRAB -> NO_JOB -> PRE_SLEEP) until a job arrives or
    `limit` (a time.time() value) passes. Returns (NOOPs received before `when`, assignment body
    or None, time.time() at assignment)."""
    early = 0
    while True:
        remaining = limit - time.time()
        if remaining <= 0:
            return early, None, None
        try:
            magic, cmd, body = w.read_packet(timeout=remaining)
        except TimeoutError:
            return early, None, None
        assert cmd == NOOP, (cmd, body)
        if time.time() < when:
            early += 1
        got, body = grab(w, GRAB_JOB)
        if got == JOB_ASSIGN:
            return early, body, time.time()
        assert got == NO_JOB
        w.send_packet(PRE_SLEEP)


def test_future_epoch_job_wakes_a_sleeper_at_most_once_before_due(server):
    f = fname()
    w = sleep_worker(server, f)
    when = due_in(1)
    c = server.connect()
    for i in range(3):
        submit_epoch(c, f, when, b"%d" % i)
    early, _, _ = run_sleeper_until_assigned(w, when, when - 0.2)
    assert early <= 1


@pytest.mark.spur_only
def test_sleeping_worker_woken_when_epoch_job_becomes_due(server):
    """gearmand 1.1.20 has no epoch timer: the sleeper is never woken (DIFFERENCES.md)."""
    f = fname()
    w = sleep_worker(server, f)
    when = due_in(1)
    c = server.connect()
    h = submit_epoch(c, f, when, b"wake me")
    early, body, at = run_sleeper_until_assigned(w, when, when + 3)
    assert body == h + b"\0" + f + b"\0wake me"
    assert when <= at < when + 2
    assert early <= 1


@pytest.mark.spur_only
def test_no_noop_storm_while_epoch_jobs_wait(server):
    """Many future jobs and two sleepers: at most one NOOP each before due, then all jobs run."""
    f = fname()
    ws = [sleep_worker(server, f) for _ in range(2)]
    when = due_in(1)
    c = server.connect()
    hs = {submit_epoch(c, f, when, b"%d" % i) for i in range(5)}
    got = set()
    for w in ws:
        early, body, at = run_sleeper_until_assigned(w, when, when + 3)
        assert early <= 1
        assert body is not None and at >= when
        got.add(body.split(b"\0")[0])
    while len(got) < len(hs):
        got.add(grab_until_assign(ws[0], timeout=1)[0])
    assert got == hs


@pytest.mark.gearmand_only
def test_gearmand_never_wakes_sleeper_for_due_epoch_job(gearmand):
    f = fname()
    w = sleep_worker(gearmand, f)
    when = due_in(1)
    c = gearmand.connect()
    submit_epoch(c, f, when, b"x")
    early, body, _ = run_sleeper_until_assigned(w, when, when + 2)
    assert early == 1 and body is None          # one NOOP at submit, then silence
    assert grab_until_assign(w, timeout=1)[1] == f


# ---- SUBMIT_JOB_SCHED -----------------------------------------------------------------------

def sched_fields_far_away():
    """minute, hour, day of month, month, weekday: a month six months from now (any time zone)."""
    month = (time.gmtime().tm_mon + 5) % 12 + 1
    return [b"", b"", b"", str(month).encode(), b""]


@pytest.mark.gearmand_only
def test_gearmand_rejects_submit_job_sched(gearmand):
    c = gearmand.connect()
    c.send_packet(SUBMIT_JOB_SCHED, fname(), b"", *sched_fields_far_away(), b"data")
    expect_error(c, INVALID_COMMAND)
    c.echo_roundtrip()


@pytest.mark.spur_only
def test_submit_job_sched_queued_until_its_time(server):
    f = fname()
    c = server.connect()
    c.send_packet(SUBMIT_JOB_SCHED, f, b"", *sched_fields_far_away(), b"data")
    h = c.expect(JOB_CREATED)
    assert h.startswith(b"H:")
    assert status_of(server, f) == (1, 0, 0)
    w = worker(server, f)
    expect_no_job(w)
    assert status_of(server, f) == (1, 0, 1)
    c.send_packet(GET_STATUS, h)
    assert c.expect(STATUS_RES) == h + b"\x001\x000\x000\x000"
    c.echo_roundtrip()                          # background: nothing else for the client


@pytest.mark.spur_only
def test_submit_job_sched_with_unique_coalesces(server):
    f, u = fname(), uniq()
    c = server.connect()
    c.send_packet(SUBMIT_JOB_SCHED, f, u, *sched_fields_far_away(), b"data")
    h = c.expect(JOB_CREATED)
    c.send_packet(SUBMIT_JOB_SCHED, f, u, *sched_fields_far_away(), b"data")
    assert c.expect(JOB_CREATED) == h
    assert status_of(server, f) == (1, 0, 0)
