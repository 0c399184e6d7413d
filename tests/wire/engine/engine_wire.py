# SPDX-License-Identifier: BSD-3-Clause
"""Helpers shared by the job-engine wire tests: submitting, working, reading admin `status`.

Everything is raw bytes on top of gearman_wire. Every test uses its own function names
(fname()), so the suite can run against one long-lived external server (gearmand) whose
functions and queues outlive each test.
"""
import socket
import struct
import time
import uuid

from gearman_wire import (CAN_DO, ERROR, GRAB_JOB, GRAB_JOB_ALL, GRAB_JOB_UNIQ,
                          JOB_ASSIGN, JOB_ASSIGN_ALL, JOB_ASSIGN_UNIQ,
                          JOB_CREATED, NO_JOB, NOOP, PRE_SLEEP, RES, SET_CLIENT_ID,
                          SUBMIT_JOB, SUBMIT_JOB_EPOCH, SUBMIT_REDUCE_JOB)

# gearmand's error texts for results about jobs the connection does not hold (§1.3).
NOT_FOUND_DATA = b"JOB_NOT_FOUND\0Job does not exist on server"           # WORK_DATA, WORK_WARNING
NOT_FOUND_RESULT = b"JOB_NOT_FOUND\0Job given in work result not found"   # STATUS, COMPLETE, FAIL
NOT_FOUND_EXCEPTION = (b"JOB_NOT_FOUND\0An exception was received for a job that does not exist")
INVALID_COMMAND = b"INVALID_COMMAND\0Command not expected"

ASSIGN_FOR = {GRAB_JOB: JOB_ASSIGN, GRAB_JOB_UNIQ: JOB_ASSIGN_UNIQ, GRAB_JOB_ALL: None}


def fname(tag="f"):
    """A function name no other test (or earlier run against the same server) uses."""
    return ("%s-%s" % (tag, uuid.uuid4().hex[:12])).encode()


def uniq(tag="u"):
    return fname(tag)


def submit(c, func, data=b"", unique=b"", cmd=SUBMIT_JOB):
    """Send a SUBMIT_JOB* (function, unique, data) and return the handle from JOB_CREATED."""
    c.send_packet(cmd, func, unique, data)
    handle = c.expect(JOB_CREATED)
    assert handle and b"\0" not in handle
    return handle


def submit_reduce(c, func, unique, reducer, data=b"", cmd=SUBMIT_REDUCE_JOB, aggregator=b""):
    c.send_packet(cmd, func, unique, reducer, aggregator, data)
    return c.expect(JOB_CREATED)


def submit_epoch(c, func, when, data=b"", unique=b""):
    c.send_packet(SUBMIT_JOB_EPOCH, func, unique, str(int(when)).encode(), data)
    return c.expect(JOB_CREATED)


def worker(server, *funcs, client_id=None):
    """Connect, register funcs with CAN_DO, and make sure the server has processed them."""
    w = server.connect()
    if client_id is not None:
        w.send_packet(SET_CLIENT_ID, client_id)
    for f in funcs:
        w.send_packet(CAN_DO, f)
    w.echo_roundtrip()
    return w


def client(server, client_id):
    """A connection that names itself (visible in admin `workers`) so its loss can be awaited
    with wait_conn_gone()."""
    c = server.connect()
    c.send_packet(SET_CLIENT_ID, client_id)
    c.echo_roundtrip()
    lines = workers_lines(server)
    if lines is not None:
        assert any(b" " + client_id + b" :" in line for line in lines), lines
    return c


def workers_lines(server):
    """Admin `workers` lines (without the final `.`), or None if the server has no `workers`."""
    a = server.connect()
    try:
        a.send(b"workers\n")
        lines = [a.read_line()]
        if lines[0].startswith(b"ERR"):
            return None
        while lines[-1] != b".\n":
            lines.append(a.read_line())
        return lines[:-1]
    finally:
        a.close()


def grab(w, cmd=GRAB_JOB):
    """Send one GRAB_* and return (command, body) of the reply."""
    w.send_packet(cmd)
    magic, got, body = w.read_packet()
    assert magic == RES, magic
    return got, body


def expect_assign(w, cmd=GRAB_JOB):
    """GRAB and check a job is assigned; return its fields split on NUL (data last, intact).

    JOB_ASSIGN: [handle, func, data]; JOB_ASSIGN_UNIQ: [handle, func, unique, data];
    JOB_ASSIGN_ALL: [handle, func, unique, reducer, data]."""
    got, body = grab(w, cmd)
    nfields = {JOB_ASSIGN: 3, JOB_ASSIGN_UNIQ: 4, JOB_ASSIGN_ALL: 5}
    want = ASSIGN_FOR[cmd]
    if want is None:
        assert got in (JOB_ASSIGN_UNIQ, JOB_ASSIGN_ALL), (got, body)
    else:
        assert got == want, (got, body)
    return body.split(b"\0", nfields[got] - 1)


def expect_no_job(w, cmd=GRAB_JOB):
    got, body = grab(w, cmd)
    assert (got, body) == (NO_JOB, b""), (got, body)


def grab_until_assign(w, timeout=5.0, cmd=GRAB_JOB):
    """Poll GRAB until a job is assigned (bounded): for jobs that become runnable later."""
    deadline = time.monotonic() + timeout
    while True:
        w.send_packet(cmd)
        magic, got, body = w.read_packet()
        if got != NO_JOB:
            assert got == (ASSIGN_FOR[cmd] or got), (got, body)
            return body.split(b"\0", {JOB_ASSIGN: 2, JOB_ASSIGN_UNIQ: 3,
                                      JOB_ASSIGN_ALL: 4}[got])
        assert time.monotonic() < deadline, "no job became available"
        time.sleep(0.05)


def sleep_worker(server, *funcs, client_id=None):
    """A worker that registered funcs, found nothing to grab, and sent PRE_SLEEP."""
    w = worker(server, *funcs, client_id=client_id)
    expect_no_job(w)
    w.send_packet(PRE_SLEEP)
    w.echo_roundtrip()
    return w


def expect_noop(w, timeout=None):
    assert w.expect(NOOP, timeout) == b""


def expect_error(c, body):
    assert c.expect(ERROR) == body


def admin_lines(server, command):
    """Send an admin list command on a fresh connection; return its lines up to the `.` line."""
    a = server.connect()
    try:
        a.send(command.encode() + b"\n")
        lines = []
        while True:
            line = a.read_line()
            if line == b".\n":
                return lines
            assert not line.startswith(b"ERR"), line
            lines.append(line)
    finally:
        a.close()


def status(server):
    """Admin `status` as {func: (total, running, workers)} (lines come in any order)."""
    out = {}
    for line in admin_lines(server, "status"):
        f, total, running, workers = line.rstrip(b"\n").split(b"\t")
        out[f] = (int(total), int(running), int(workers))
    return out


def status_of(server, func):
    """(total, running, workers) of one function; (0, 0, 0) when the server does not list it."""
    return status(server).get(func, (0, 0, 0))


def wait_status(server, func, want, timeout=5.0):
    """Bounded wait until status_of(func) == want (for effects of another connection's loss)."""
    deadline = time.monotonic() + timeout
    while True:
        got = status_of(server, func)
        if got == want:
            return
        assert time.monotonic() < deadline, "status of %r is %r, expected %r" % (func, got, want)
        time.sleep(0.02)


def wait_conn_gone(server, client_id, timeout=5.0):
    """Bounded wait until admin `workers` no longer lists the connection named client_id, i.e.
    the server has processed its disconnect.

    gearmand's `workers` lists every connection (clients too) as `FD IP ID : FUNCS`. A server
    without `workers` gets a best-effort barrier instead: a round trip on a new connection,
    which a single event loop handles after the earlier FIN."""
    deadline = time.monotonic() + timeout
    needle = b" " + client_id + b" :"
    while True:
        lines = workers_lines(server)
        if lines is None:
            server.connect().echo_roundtrip()
            return
        if not any(needle in line for line in lines):
            return
        assert time.monotonic() < deadline, "%r still connected" % client_id
        time.sleep(0.02)


def kill(c):
    """Drop a connection abruptly (RST, as when a process dies) rather than a polite FIN."""
    c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    c.close()
