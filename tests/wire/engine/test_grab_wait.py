# SPDX-License-Identifier: BSD-3-Clause
"""--grab-wait: a GRAB that finds no job is held for a while, and a job that arrives meanwhile is
assigned at once (no NO_JOB / PRE_SLEEP / NOOP / GRAB round trip). gearmand answers NO_JOB at
once, so these are spur_only (DIFFERENCES.md, A.14)."""
import time

import pytest

from conftest import poll
from engine_wire import expect_assign, fname, sleep_worker, submit, worker
from gearman_wire import (ECHO_REQ, ECHO_RES, GRAB_JOB, GRAB_JOB_ALL, GRAB_JOB_UNIQ, JOB_ASSIGN,
                          JOB_ASSIGN_ALL, JOB_ASSIGN_UNIQ, JOB_CREATED, NO_JOB, NOOP, PRE_SLEEP,
                          SUBMIT_JOB, SUBMIT_JOB_BG, SUBMIT_JOB_HIGH, SUBMIT_JOB_LOW, WORK_COMPLETE,
                          packet)

pytestmark = pytest.mark.spur_only


def held_worker(server, f, cmd=GRAB_JOB_UNIQ, silent=0.3):
    """A worker whose GRAB found nothing and is being held (nothing comes back for `silent` s)."""
    w = worker(server, f)
    w.send_packet(cmd)
    w.assert_silent(silent)
    return w


def test_job_arriving_during_the_wait_answers_the_grab(server_factory):
    srv = server_factory("--grab-wait=1000")
    f = fname()
    w = held_worker(srv, f)
    c = srv.connect()
    h = submit(c, f, b"payload", unique=b"u1")
    magic, cmd, body = w.read_packet(timeout=0.5)
    assert cmd == JOB_ASSIGN_UNIQ, (cmd, body)
    assert body == h + b"\0" + f + b"\0u1\0payload"
    w.send_packet(WORK_COMPLETE, h, b"done")
    assert c.expect(WORK_COMPLETE) == h + b"\0done"
    # the next GRAB is held again, and the next job answers it the same way
    w.send_packet(GRAB_JOB_UNIQ)
    w.assert_silent(0.2)
    h2 = submit(c, f, b"second")
    magic, cmd, body = w.read_packet(timeout=0.5)
    assert (cmd, body.split(b"\0")[0]) == (JOB_ASSIGN_UNIQ, h2)


def test_held_grab_job_assign_is_the_form_asked_for(server_factory):
    srv = server_factory("--grab-wait=1000")
    f = fname()
    w = held_worker(srv, f, cmd=GRAB_JOB)
    h = submit(srv.connect(), f, b"x", cmd=SUBMIT_JOB_BG)
    assert w.expect(JOB_ASSIGN, timeout=0.5) == h + b"\0" + f + b"\0x"


def test_wait_ends_with_no_job(server_factory):
    srv = server_factory("--grab-wait=150")
    f = fname()
    w = worker(srv, f)
    start = time.monotonic()
    w.send_packet(GRAB_JOB)
    magic, cmd, body = w.read_packet(timeout=2)
    assert (cmd, body) == (NO_JOB, b"")
    assert time.monotonic() - start >= 0.14, "NO_JOB only when the wait is over"
    # then the usual cycle: PRE_SLEEP, a job brings a NOOP, the GRAB gets it
    w.send_packet(PRE_SLEEP)
    w.echo_roundtrip()
    h = submit(srv.connect(), f, b"x", cmd=SUBMIT_JOB_BG)
    assert w.expect(NOOP) == b""
    assert expect_assign(w)[0] == h


def test_any_other_packet_ends_the_wait_with_no_job_first(server_factory):
    srv = server_factory("--grab-wait=1000")
    w = held_worker(srv, fname())
    w.send_packet(ECHO_REQ, b"ping")
    assert w.read_packet(timeout=0.5)[1:] == (NO_JOB, b"")
    assert w.read_packet(timeout=0.5)[1:] == (ECHO_RES, b"ping")


def test_held_worker_is_preferred_over_a_sleeping_one(server_factory):
    srv = server_factory("--grab-wait=1000")
    f = fname()
    sleeper = sleep_worker(srv, f)
    w = held_worker(srv, f)
    c = srv.connect()
    h = submit(c, f, b"x", cmd=SUBMIT_JOB_BG)
    assert w.expect(JOB_ASSIGN_UNIQ, timeout=0.5).split(b"\0")[0] == h
    sleeper.assert_silent(0.2)


def test_graceful_shutdown_answers_held_grab(server_factory):
    srv = server_factory("--grab-wait=1000")
    w = held_worker(srv, fname())
    a = srv.connect()
    a.send(b"shutdown graceful\n")
    assert a.read_line() == b"OK\r\n"
    assert w.read_packet(timeout=0.5)[1:] == (NO_JOB, b"")
    # nothing is running, so the server exits; wait for it, or the fixture's SIGTERM may land
    # after the signal watchers are gone and kill it (exit -15)
    assert srv.proc.wait(timeout=10) == 0


def test_worker_leaving_during_the_wait_loses_nothing(server_factory):
    srv = server_factory("--grab-wait=1000")
    f = fname()
    gone = held_worker(srv, f)
    gone.close()
    c = srv.connect()
    # the job is not handed to the departed worker: the next worker gets it
    h = submit(c, f, b"x", cmd=SUBMIT_JOB_BG)
    w = worker(srv, f)
    assert expect_assign(w)[0] == h


def test_grab_wait_zero_answers_no_job_at_once(server_factory):
    srv = server_factory("--grab-wait=0")
    w = worker(srv, fname())
    w.send_packet(GRAB_JOB)
    assert w.read_packet(timeout=0.5)[1:] == (NO_JOB, b"")


@pytest.mark.parametrize("value", ["1001", "-1", "x", ""])
def test_bad_grab_wait_is_refused(server_factory, value):
    with pytest.raises(RuntimeError, match="grab-wait"):
        server_factory("--grab-wait=" + value)


def held_grabs(srv):
    """The held_grabs counter of admin `stats`."""
    a = srv.connect()
    try:
        raw = a.admin(b"stats\n", terminator=b"END\r\n")
    finally:
        a.close()
    for line in raw.split(b"\r\n"):
        if line.startswith(b"STAT held_grabs "):
            return int(line.split()[2])
    raise AssertionError("no held_grabs in stats: %r" % raw)


# One write of six submits, lowest priority first (libgearman runTasks, PHP's addTask*).
BURST = [(SUBMIT_JOB_LOW, b"low1"), (SUBMIT_JOB, b"normal1"), (SUBMIT_JOB_HIGH, b"high1"),
         (SUBMIT_JOB_LOW, b"low2"), (SUBMIT_JOB, b"normal2"), (SUBMIT_JOB_HIGH, b"high2")]
BY_PRIORITY = [b"high1", b"high2", b"normal1", b"normal2", b"low1", b"low2"]


@pytest.mark.parametrize("grab_cmd", [GRAB_JOB, GRAB_JOB_UNIQ, GRAB_JOB_ALL],
                         ids=["GRAB_JOB", "GRAB_JOB_UNIQ", "GRAB_JOB_ALL"])
def test_burst_in_one_write_answers_a_held_grab_by_priority(server_factory, grab_cmd):
    """Issue 27 item 11: a held GRAB is answered after the whole read is handled, so the first
    job the worker gets from a pipelined burst is its HIGH job, not the first submit read."""
    srv = server_factory("--grab-wait=1000")
    payload_at = {JOB_ASSIGN: 2, JOB_ASSIGN_UNIQ: 3, JOB_ASSIGN_ALL: 4}
    for attempt in range(20):
        f = fname()
        w = worker(srv, f)
        w.send_packet(grab_cmd)
        poll(lambda: held_grabs(srv) == 1, "the GRAB to be held", timeout=30)
        c = srv.connect()
        c.send(b"".join(packet(cmd, f, b"", data) for cmd, data in BURST))
        handles = [c.expect(JOB_CREATED) for _ in BURST]
        assert len(set(handles)) == len(BURST)
        magic, cmd, body = w.read_packet(timeout=10)
        if cmd == NO_JOB:  # the hold (1 s) ran out before the burst came: try again
            w.close()
            c.close()
            continue
        assert cmd in payload_at, (cmd, body)
        first = body.split(b"\0", payload_at[cmd])[-1]
        assert first == b"high1", "a held GRAB took %r out of a burst before its HIGH jobs" % first
        rest = [expect_assign(w, GRAB_JOB)[-1] for _ in BURST[1:]]
        assert [first] + rest == BY_PRIORITY
        return
    pytest.fail("the GRAB was never still held when the burst arrived")
