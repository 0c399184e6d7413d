# SPDX-License-Identifier: BSD-3-Clause
"""Waking sleeping workers: PRE_SLEEP, NOOP at most once until the next grab, --worker-wakeup."""
import time

import pytest

from engine_wire import (expect_assign, expect_no_job, expect_noop, fname, sleep_worker, submit,
                         submit_epoch, submit_reduce, uniq, worker)
from gearman_wire import (NOOP, PRE_SLEEP, SUBMIT_JOB, SUBMIT_JOB_BG, SUBMIT_JOB_HIGH_BG,
                          SUBMIT_JOB_LOW, WORK_COMPLETE)


def noop_count(ws, quiet=0.3):
    """Which of the workers ws received a NOOP (each at most one, checked), after a quiet wait."""
    got = []
    deadline = time.monotonic() + quiet
    for i, w in enumerate(ws):
        try:
            magic, cmd, body = w.read_packet(timeout=max(0.01, deadline - time.monotonic()))
        except TimeoutError:
            continue
        assert cmd == NOOP and body == b""
        got.append(i)
    for w in ws:
        w.assert_silent(0.05)                 # never a second NOOP
    return got


def test_pre_sleep_with_work_waiting_answers_noop_at_once(server):
    f = fname()
    c = server.connect()
    submit(c, f, b"x")
    w = worker(server, f)
    w.send_packet(PRE_SLEEP)
    expect_noop(w)
    assert expect_assign(w)[1] == f


def test_pre_sleep_with_work_only_for_other_functions_sends_nothing(server):
    f, g = fname(), fname()
    c = server.connect()
    submit(c, g, b"x")
    w = worker(server, f)
    w.send_packet(PRE_SLEEP)
    w.echo_roundtrip()
    w.assert_silent(0.1)


@pytest.mark.parametrize("kind", ["SUBMIT_JOB", "SUBMIT_JOB_BG", "SUBMIT_JOB_HIGH_BG",
                                  "SUBMIT_JOB_LOW", "SUBMIT_REDUCE_JOB", "SUBMIT_JOB_EPOCH_past"])
def test_sleeping_worker_woken_by_new_job(server, kind):
    f = fname()
    w = sleep_worker(server, f)
    c = server.connect()
    cmds = {"SUBMIT_JOB": SUBMIT_JOB, "SUBMIT_JOB_BG": SUBMIT_JOB_BG,
            "SUBMIT_JOB_HIGH_BG": SUBMIT_JOB_HIGH_BG, "SUBMIT_JOB_LOW": SUBMIT_JOB_LOW}
    if kind in cmds:
        h = submit(c, f, b"x", cmd=cmds[kind])
    elif kind == "SUBMIT_REDUCE_JOB":
        h = submit_reduce(c, f, uniq(), b"red", b"x")
    else:
        h = submit_epoch(c, f, int(time.time()) - 10, b"x")
    expect_noop(w)
    assert expect_assign(w)[0] == h


def test_sleeping_worker_gets_one_noop_for_many_jobs(server):
    f = fname()
    w = sleep_worker(server, f)
    c = server.connect()
    for i in range(5):
        submit(c, f, b"%d" % i)
    expect_noop(w)
    w.assert_silent(0.3)


def test_noop_again_only_after_grab_and_pre_sleep(server):
    f = fname()
    w = sleep_worker(server, f)
    c = server.connect()
    h1 = submit(c, f, b"1", cmd=SUBMIT_JOB_BG)
    expect_noop(w)
    assert expect_assign(w)[0] == h1
    w.send_packet(WORK_COMPLETE, h1, b"")
    expect_no_job(w)
    w.send_packet(PRE_SLEEP)
    w.echo_roundtrip()
    h2 = submit(c, f, b"2")
    expect_noop(w)
    assert expect_assign(w)[0] == h2


def test_awake_worker_gets_no_noop(server):
    """A worker that grabbed and has not sent PRE_SLEEP since is not sleeping."""
    f = fname()
    w = worker(server, f)
    expect_no_job(w)
    c = server.connect()
    submit(c, f, b"1")
    w.assert_silent(0.3)
    assert expect_assign(w)[1] == f


def test_worker_woken_then_grabbing_is_awake_until_next_pre_sleep(server):
    f = fname()
    w = sleep_worker(server, f)
    c = server.connect()
    h1 = submit(c, f, b"1")
    expect_noop(w)
    assert expect_assign(w)[0] == h1
    h2 = submit(c, f, b"2")
    w.assert_silent(0.3)
    w.send_packet(PRE_SLEEP)                  # work is waiting: NOOP at once
    expect_noop(w)
    assert expect_assign(w)[0] == h2


def test_pre_sleep_twice_still_one_noop(server):
    f = fname()
    w = sleep_worker(server, f)
    w.send_packet(PRE_SLEEP)
    w.echo_roundtrip()
    c = server.connect()
    submit(c, f, b"x")
    submit(c, f, b"y")
    expect_noop(w)
    w.assert_silent(0.3)


def test_sleeper_not_woken_for_other_function(server):
    f, g = fname(), fname()
    w = sleep_worker(server, f)
    c = server.connect()
    submit(c, g, b"x")
    w.assert_silent(0.3)


def test_sleeper_with_two_functions_gets_one_noop(server):
    f, g = fname(), fname()
    w = sleep_worker(server, f, g)
    c = server.connect()
    submit(c, f, b"x")
    submit(c, g, b"y")
    expect_noop(w)
    w.assert_silent(0.3)


def test_every_sleeper_woken_with_worker_wakeup_zero(any_server_factory):
    """-w 0 is gearmand's default: every sleeper gets a NOOP for one job."""
    s = any_server_factory("--worker-wakeup=0")
    f = fname()
    ws = [sleep_worker(s, f) for _ in range(3)]
    c = s.connect()
    submit(c, f, b"x")
    assert noop_count(ws) == [0, 1, 2]


@pytest.mark.spur_only
def test_default_wakes_one_sleeper_per_ready_job(server):
    """Spur's default (no -w): one NOOP per job that no woken worker is coming for, so one job
    does not wake every sleeper into a GRAB / NO_JOB / PRE_SLEEP storm (gearmand wakes all).
    A woken worker that sends no GRAB within 2 ms stops counting: the job goes on to the next
    sleeper (so a worker that ignores its NOOP holds up no job), one at a time, each once."""
    f = fname()
    ws = [sleep_worker(server, f) for _ in range(3)]
    c = server.connect()
    submit(c, f, b"x")
    first = ws[0].read_packet(timeout=5)
    assert first[1] == NOOP, "the sleeper that waited longest is woken first"
    # nobody grabs: x passes from sleeper to sleeper, each woken once
    assert noop_count(ws[1:]) == [0, 1]
    ws[0].assert_silent(0.05)
    submit(c, f, b"y")
    assert noop_count(ws) == [], "nobody is left asleep"


@pytest.mark.spur_only
def test_default_wakes_another_sleeper_when_woken_worker_takes_other_work(server):
    """A woken worker that grabs a job of another function leaves this one's job waiting: the
    next sleeper is woken for it."""
    f, g = fname(), fname()
    both = sleep_worker(server, f, g)
    only_f = sleep_worker(server, f)
    c = server.connect()
    submit(c, g, b"g-job", cmd=SUBMIT_JOB_HIGH_BG)
    assert noop_count([both, only_f]) == [0]
    submit(c, f, b"f-job")
    assert noop_count([both, only_f]) == [1]


def test_worker_wakeup_one_wakes_one_sleeper_per_job(any_server_factory):
    s = any_server_factory("--worker-wakeup=1")
    f = fname()
    ws = [sleep_worker(s, f) for _ in range(3)]
    c = s.connect()
    woken = []
    for i in range(3):
        submit(c, f, b"%d" % i)
        got = noop_count(ws)
        assert len(got) == 1 and got[0] not in woken
        woken += got
    submit(c, f, b"3")                          # everyone has been woken and not grabbed yet
    assert noop_count(ws) == []


def test_worker_wakeup_one_rotates_between_sleepers(any_server_factory):
    s = any_server_factory("--worker-wakeup=1")
    f = fname()
    ws = [sleep_worker(s, f) for _ in range(2)]
    c = s.connect()
    h = submit(c, f, b"first", cmd=SUBMIT_JOB_BG)
    (first,) = noop_count(ws)
    w = ws[first]
    assert expect_assign(w)[0] == h
    w.send_packet(WORK_COMPLETE, h, b"")
    expect_no_job(w)
    w.send_packet(PRE_SLEEP)
    w.echo_roundtrip()                         # both sleep again; `first` was woken last time
    submit(c, f, b"second")
    assert noop_count(ws) == [1 - first]


def test_worker_wakeup_two_wakes_two_of_three(any_server_factory):
    s = any_server_factory("--worker-wakeup=2")
    f = fname()
    ws = [sleep_worker(s, f) for _ in range(3)]
    c = s.connect()
    submit(c, f, b"x")
    assert len(noop_count(ws)) == 2
