# SPDX-License-Identifier: BSD-3-Clause
"""When replies are written: a client waiting on several jobs gets its replies batched while more
input is ready or jobs are running, never longer than --reply-batch (conn.h)."""
import time

import pytest

from gearman_wire import (CAN_DO, GRAB_JOB, JOB_ASSIGN, JOB_CREATED, NOOP, PRE_SLEEP, SUBMIT_JOB,
                          WORK_COMPLETE, packet)


def test_result_reaches_a_client_with_more_jobs_in_flight(server):
    c = server.connect()
    c.send(b"".join(packet(SUBMIT_JOB, b"flush-f", b"", b"%d" % i) for i in range(3)))
    handles = [c.expect(JOB_CREATED) for _ in range(3)]
    w = server.connect()
    w.send_packet(CAN_DO, b"flush-f")
    w.send_packet(GRAB_JOB)
    h, _, data = w.expect(JOB_ASSIGN).split(b"\0", 2)
    assert (h, data) == (handles[0], b"0")
    w.send_packet(WORK_COMPLETE, h, b"r0")
    # two jobs still in flight, and nothing else to read: the result must not wait for them
    assert c.expect(WORK_COMPLETE, timeout=1) == h + b"\0r0"
    c.assert_silent(0.1)


def test_every_reply_arrives_once_and_in_order_per_job(server):
    jobs = 500
    c = server.connect()
    w = server.connect()
    w.send_packet(CAN_DO, b"flush-g")
    c.send(b"".join(packet(SUBMIT_JOB, b"flush-g", b"", b"%d" % i) for i in range(jobs)))
    # the worker pipelines: each completion carries the next GRAB
    w.send_packet(GRAB_JOB)
    for i in range(jobs):
        h, _, data = w.expect(JOB_ASSIGN).split(b"\0", 2)
        assert data == b"%d" % i
        w.send(packet(WORK_COMPLETE, h, b"r" + data) + packet(GRAB_JOB))
    created, done = {}, {}
    for n in range(2 * jobs):
        magic, cmd, body = c.read_packet()
        if cmd == JOB_CREATED:
            assert body not in created
            created[body] = n
        else:
            assert cmd == WORK_COMPLETE
            h, result = body.split(b"\0", 1)
            assert h in created, "JOB_CREATED comes before the job's result"
            assert h not in done
            done[h] = result
    assert len(done) == jobs
    assert sorted(done.values()) == sorted(b"r%d" % i for i in range(jobs))


def test_batched_result_waits_at_most_the_reply_batch_while_jobs_run(server_factory):
    # --reply-batch=1000000 (1 s): a result held for batching while another job runs arrives
    # when that time is up
    srv = server_factory("--reply-batch=1000000")
    c = srv.connect()
    c.send(b"".join(packet(SUBMIT_JOB, b"flush-h", b"", b"%d" % i) for i in range(3)))
    handles = [c.expect(JOB_CREATED) for _ in range(3)]
    w1, w2 = srv.connect(), srv.connect()
    for w in (w1, w2):
        w.send_packet(CAN_DO, b"flush-h")
        w.send_packet(GRAB_JOB)
    h1 = w1.expect(JOB_ASSIGN).split(b"\0")[0]
    h2 = w2.expect(JOB_ASSIGN).split(b"\0")[0]
    assert sorted([h1, h2]) == sorted(handles[:2])
    w1.send_packet(WORK_COMPLETE, h1, b"r1")   # w2's job is still running
    start = time.monotonic()
    assert c.expect(WORK_COMPLETE, timeout=5) == h1 + b"\0r1"
    assert 0.8 <= time.monotonic() - start < 4.0, "held for batching, then written"
    w2.send_packet(WORK_COMPLETE, h2, b"r2")   # nothing runs now: written when the input runs dry
    assert c.expect(WORK_COMPLETE, timeout=0.5) == h2 + b"\0r2"


def test_job_created_of_a_foreground_job_comes_with_its_result(server_factory):
    # --reply-batch=1000000 (1 s): the JOB_CREATED of the client's one job waits while the job
    # runs, and goes out with its result, long before the second is up
    srv = server_factory("--reply-batch=1000000")
    c, w = srv.connect(), srv.connect()
    w.send_packet(CAN_DO, b"flush-j")
    w.send_packet(PRE_SLEEP)
    c.send_packet(SUBMIT_JOB, b"flush-j", b"", b"x")
    w.expect(NOOP)                     # the submit was handled
    c.assert_silent(0.1)               # its JOB_CREATED is held
    w.send_packet(GRAB_JOB)
    h = w.expect(JOB_ASSIGN).split(b"\0")[0]
    start = time.monotonic()
    w.send_packet(WORK_COMPLETE, h, b"r")
    assert c.expect(JOB_CREATED, timeout=5) == h
    assert c.expect(WORK_COMPLETE, timeout=5) == h + b"\0r"
    assert time.monotonic() - start < 0.8, "written with the result, not when the batch ended"


def test_job_created_of_a_long_job_waits_at_most_the_reply_batch(server_factory):
    srv = server_factory("--reply-batch=300000")
    c, w = srv.connect(), srv.connect()
    w.send_packet(CAN_DO, b"flush-k")
    w.send_packet(PRE_SLEEP)
    start = time.monotonic()
    c.send_packet(SUBMIT_JOB, b"flush-k", b"", b"x")
    w.expect(NOOP)
    h = c.expect(JOB_CREATED, timeout=5)       # no result comes: the batch's time is up
    assert time.monotonic() - start >= 0.25
    w.send_packet(GRAB_JOB)
    assert w.expect(JOB_ASSIGN).split(b"\0")[0] == h


@pytest.mark.parametrize("batch", ["0", "200", "100000"])
def test_pipelined_client_gets_everything_with_any_reply_batch(server_factory, batch):
    srv = server_factory("--reply-batch=" + batch)
    c, w = srv.connect(), srv.connect()
    w.send_packet(CAN_DO, b"flush-i")
    c.send(b"".join(packet(SUBMIT_JOB, b"flush-i", b"", b"%d" % i) for i in range(50)))
    w.send_packet(GRAB_JOB)
    for i in range(50):
        h, _, data = w.expect(JOB_ASSIGN).split(b"\0", 2)
        w.send(packet(WORK_COMPLETE, h, b"r" + data) + packet(GRAB_JOB))
    got = [c.read_packet()[1] for _ in range(100)]
    assert got.count(JOB_CREATED) == 50 and got.count(WORK_COMPLETE) == 50


@pytest.mark.parametrize("value", ["1000001", "-1", "2.5", "x"])
def test_bad_reply_batch_is_refused(server_factory, value):
    with pytest.raises(RuntimeError, match="reply-batch"):
        server_factory("--reply-batch=" + value)
