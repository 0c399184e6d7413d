# SPDX-License-Identifier: BSD-3-Clause
"""Client disconnects: queued foreground jobs nobody waits for are dropped, running ones finish."""
import pytest

from engine_wire import (client, expect_assign, expect_no_job, fname, status_of, submit, uniq,
                         wait_conn_gone, wait_status, worker)
from gearman_wire import (CAN_DO, GET_STATUS, STATUS_RES, SUBMIT_JOB_BG, SUBMIT_JOB_HIGH,
                          SUBMIT_JOB_LOW, WORK_COMPLETE, WORK_DATA, WORK_STATUS)


def leave(server, c, cid):
    """Close the named client and wait until the server has processed it."""
    c.close()
    wait_conn_gone(server, cid)


def test_queued_foreground_jobs_of_departed_client_are_not_run(server):
    f, cid = fname(), fname("cid")
    c = client(server, cid)
    for cmd in (SUBMIT_JOB_HIGH, SUBMIT_JOB_LOW):
        submit(c, f, b"orphan", cmd=cmd)
    submit(c, f, b"orphan")
    leave(server, c, cid)
    w = worker(server, f)
    expect_no_job(w)
    expect_no_job(w)


def test_only_the_departed_clients_jobs_are_dropped(server):
    f, cid = fname(), fname("cid")
    stay = server.connect()
    go = client(server, cid)
    submit(go, f, b"drop me")
    h = submit(stay, f, b"keep me")
    leave(server, go, cid)
    w = worker(server, f)
    assert expect_assign(w) == [h, f, b"keep me"]
    expect_no_job(w)


def test_background_job_survives_its_submitter(server):
    f, cid = fname(), fname("cid")
    c = client(server, cid)
    h = submit(c, f, b"bg", cmd=SUBMIT_JOB_BG)
    leave(server, c, cid)
    w = worker(server, f)
    assert expect_assign(w) == [h, f, b"bg"]


def test_running_job_of_departed_client_finishes_quietly(server):
    f, cid = fname(), fname("cid")
    c = client(server, cid)
    h = submit(c, f, b"x")
    w = worker(server, f)
    assert expect_assign(w)[0] == h
    leave(server, c, cid)
    w.send_packet(WORK_DATA, h, b"d")
    w.send_packet(WORK_STATUS, h, b"1", b"2")
    w.send_packet(WORK_COMPLETE, h, b"nobody listens")
    w.echo_roundtrip()                           # no ERROR for any of them
    expect_no_job(w)
    assert status_of(server, f) == (0, 0, 1)


def test_joined_job_kept_while_another_client_waits(server):
    f, u, cid = fname(), uniq(), fname("cid")
    go, stay = client(server, cid), server.connect()
    h = submit(go, f, b"x", unique=u)
    assert submit(stay, f, b"x", unique=u) == h
    leave(server, go, cid)
    w = worker(server, f)
    assert expect_assign(w)[0] == h
    w.send_packet(WORK_COMPLETE, h, b"r")
    assert stay.expect(WORK_COMPLETE) == h + b"\0r"


def test_worker_that_was_also_the_client_leaving_requeue_nothing(server):
    """A connection that submitted (foreground) and grabbed its own job, then left: nothing
    is left behind for other workers."""
    f, cid = fname(), fname("cid")
    cw = client(server, cid)
    cw.send_packet(CAN_DO, f)
    h = submit(cw, f, b"self")
    assert expect_assign(cw)[0] == h
    leave(server, cw, cid)
    expect_no_job(worker(server, f))


@pytest.mark.spur_only
def test_dropped_job_leaves_status_at_once(server):
    """gearmand keeps dropped jobs (known=1, in `status`) until a worker's grab reaps them."""
    f, cid = fname(), fname("cid")
    c = client(server, cid)
    h = submit(c, f, b"x")
    leave(server, c, cid)
    wait_status(server, f, (0, 0, 0))
    other = server.connect()
    other.send_packet(GET_STATUS, h)
    assert other.expect(STATUS_RES) == h + b"\x000\x000\x000\x000"


@pytest.mark.spur_only
def test_same_unique_after_drop_is_a_new_job_that_runs(server):
    """gearmand attaches the new client to the dropped job, which then never runs."""
    f, u, cid = fname(), uniq(), fname("cid")
    c1 = client(server, cid)
    h1 = submit(c1, f, b"old", unique=u)
    leave(server, c1, cid)
    c2 = server.connect()
    h2 = submit(c2, f, b"new", unique=u)
    assert h2 != h1
    w = worker(server, f)
    assert expect_assign(w) == [h2, f, b"new"]
    w.send_packet(WORK_COMPLETE, h2, b"r")
    assert c2.expect(WORK_COMPLETE) == h2 + b"\0r"


@pytest.mark.gearmand_only
def test_gearmand_same_unique_after_drop_joins_dead_job(gearmand):
    f, u, cid = fname(), uniq(), fname("cid")
    c1 = client(gearmand, cid)
    h1 = submit(c1, f, b"old", unique=u)
    leave(gearmand, c1, cid)
    assert status_of(gearmand, f) == (1, 0, 0)      # still listed
    c2 = gearmand.connect()
    assert submit(c2, f, b"new", unique=u) == h1    # joins the dropped job...
    w = worker(gearmand, f)
    expect_no_job(w)                                # ...which is reaped, never run
    c2.assert_silent(0.3)                           # and c2 waits forever
    assert status_of(gearmand, f) == (0, 0, 1)
