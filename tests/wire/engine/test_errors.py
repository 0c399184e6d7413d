# SPDX-License-Identifier: BSD-3-Clause
"""Packets a server never expects from a peer, ALL_YOURS, and the `maxqueue` limit."""
import pytest

from engine_wire import (INVALID_COMMAND, expect_assign, expect_error, fname, status_of, submit,
                         uniq, worker)
from gearman_wire import (ALL_YOURS, ECHO_RES, ERROR, JOB_ASSIGN, JOB_ASSIGN_ALL,
                          JOB_ASSIGN_UNIQ, JOB_CREATED, NO_JOB, NOOP, OPTION_RES, STATUS_RES,
                          STATUS_RES_UNIQUE, SUBMIT_JOB, SUBMIT_JOB_BG, SUBMIT_JOB_HIGH,
                          SUBMIT_JOB_LOW_BG, WORK_COMPLETE)

QUEUE_FULL = b"QUEUE_ERROR\0Job queue is full"

# Server-to-peer (or unused) commands sent to the server with REQ magic, each with arguments
# shaped as that command's own (so no server can blame the framing).
UNEXPECTED = [
    (5, ()),
    (NOOP, ()),
    (JOB_CREATED, (b"H:x:1",)),
    (NO_JOB, ()),
    (JOB_ASSIGN, (b"H:x:1", b"f", b"data")),
    (ECHO_RES, (b"echo",)),
    (ERROR, (b"CODE", b"text")),
    (STATUS_RES, (b"H:x:1", b"1", b"0", b"0", b"0")),
    (ALL_YOURS, ()),
    (OPTION_RES, (b"exceptions",)),
    (JOB_ASSIGN_UNIQ, (b"H:x:1", b"f", b"u", b"data")),
    (JOB_ASSIGN_ALL, (b"H:x:1", b"f", b"u", b"red", b"data")),
    (STATUS_RES_UNIQUE, (b"u", b"1", b"0", b"0", b"0", b"0")),
]


@pytest.mark.parametrize("cmd,args", UNEXPECTED, ids=[str(c) for c, _ in UNEXPECTED])
def test_unexpected_packet_gets_invalid_command(conn, cmd, args):
    conn.send_packet(cmd, *args)
    expect_error(conn, INVALID_COMMAND)
    conn.echo_roundtrip()


@pytest.mark.parametrize("cmd,args", UNEXPECTED, ids=[str(c) for c, _ in UNEXPECTED])
def test_unexpected_packet_from_worker_leaves_its_job_alone(server, cmd, args):
    f = fname()
    c = server.connect()
    h = submit(c, f, b"x")
    w = worker(server, f)
    assert expect_assign(w)[0] == h
    w.send_packet(cmd, *args)
    expect_error(w, INVALID_COMMAND)
    w.send_packet(WORK_COMPLETE, h, b"ok")
    assert c.expect(WORK_COMPLETE) == h + b"\0ok"


def test_all_yours_from_worker_invalid_command(server):
    w = worker(server, fname())
    w.send_packet(ALL_YOURS)
    expect_error(w, INVALID_COMMAND)
    w.echo_roundtrip()


def test_unexpected_packets_back_to_back_each_answered(conn):
    for cmd, args in UNEXPECTED:
        conn.send_packet(cmd, *args)
    for _ in UNEXPECTED:
        expect_error(conn, INVALID_COMMAND)
    conn.echo_roundtrip()


def maxqueue(server, f, arg):
    """Set a limit. gearmand ignores `maxqueue` for a function it does not know yet, so every
    test creates the function (by a first submit) before setting it."""
    a = server.connect()
    assert a.admin(b"maxqueue " + f + arg + b"\n") == b"OK\r\n"
    a.close()


def test_maxqueue_replies_ok(conn):
    assert conn.admin(b"maxqueue " + fname() + b" 1\n") == b"OK\r\n"


@pytest.mark.parametrize("cmd", [SUBMIT_JOB, SUBMIT_JOB_BG, SUBMIT_JOB_HIGH, SUBMIT_JOB_LOW_BG])
def test_submit_over_maxqueue_gets_queue_error_and_connection_stays_usable(server, cmd):
    f = fname()
    c = server.connect()
    submit(c, f, b"1", cmd=cmd)
    maxqueue(server, f, b" 1")
    c.send_packet(cmd, f, b"", b"2")
    expect_error(c, QUEUE_FULL)
    c.echo_roundtrip()
    assert status_of(server, f)[0] == 1
    assert submit(c, fname(), b"other function is fine")


def test_maxqueue_two(server):
    f = fname()
    c = server.connect()
    submit(c, f, b"1", cmd=SUBMIT_JOB_BG)
    maxqueue(server, f, b" 2")
    submit(c, f, b"2", cmd=SUBMIT_JOB_BG)
    c.send_packet(SUBMIT_JOB_BG, f, b"", b"3")
    expect_error(c, QUEUE_FULL)
    assert status_of(server, f)[0] == 2


def test_maxqueue_frees_up_when_jobs_finish(server):
    f = fname()
    c = server.connect()
    h = submit(c, f, b"1", cmd=SUBMIT_JOB_BG)
    maxqueue(server, f, b" 1")
    w = worker(server, f)
    assert expect_assign(w)[0] == h
    w.send_packet(WORK_COMPLETE, h, b"")
    w.echo_roundtrip()
    assert submit(c, f, b"2", cmd=SUBMIT_JOB_BG) != h


def test_maxqueue_counts_running_jobs(server):
    f = fname()
    c = server.connect()
    h = submit(c, f, b"1")
    maxqueue(server, f, b" 1")
    w = worker(server, f)
    assert expect_assign(w)[0] == h
    c.send_packet(SUBMIT_JOB, f, b"", b"2")
    expect_error(c, QUEUE_FULL)


def test_maxqueue_does_not_refuse_a_submit_that_joins_a_job(server):
    f, u = fname(), uniq()
    c1, c2 = server.connect(), server.connect()
    h = submit(c1, f, b"x", unique=u)
    maxqueue(server, f, b" 1")
    assert submit(c2, f, b"x", unique=u) == h


@pytest.mark.parametrize("arg", [b"", b" 0", b" -1"], ids=["no-size", "zero", "negative"])
def test_maxqueue_without_positive_size_is_unlimited(server, arg):
    f = fname()
    c = server.connect()
    submit(c, f, b"0", cmd=SUBMIT_JOB_BG)
    maxqueue(server, f, b" 1")
    maxqueue(server, f, arg)
    for i in range(1, 4):
        submit(c, f, b"%d" % i, cmd=SUBMIT_JOB_BG)
    assert status_of(server, f)[0] == 4


def test_maxqueue_error_to_one_client_others_unaffected(server):
    f = fname()
    c1, c2 = server.connect(), server.connect()
    h = submit(c1, f, b"1")
    maxqueue(server, f, b" 1")
    c2.send_packet(SUBMIT_JOB, f, b"", b"2")
    expect_error(c2, QUEUE_FULL)
    w = worker(server, f)
    assert expect_assign(w)[0] == h
    w.send_packet(WORK_COMPLETE, h, b"r")
    assert c1.expect(WORK_COMPLETE) == h + b"\0r"
    c2.echo_roundtrip()


def test_maxqueue_for_function_known_from_can_do(server):
    f = fname()
    w = worker(server, f)
    maxqueue(server, f, b" 1")
    c = server.connect()
    h = submit(c, f, b"1", cmd=SUBMIT_JOB_BG)
    c.send_packet(SUBMIT_JOB_BG, f, b"", b"2")
    expect_error(c, QUEUE_FULL)
    assert expect_assign(w)[0] == h
