# SPDX-License-Identifier: BSD-3-Clause
"""Hostile input against a real spurd: every attack gets a clear answer (an ERROR packet or an ERR
line), or the connection is closed where framing is lost; and in every case a client connected
before the attack is still served and a background job queued before it is not lost.

Each test is bounded in time. Round trips (ECHO, admin lines) are the barriers; bounded polling is
used only for effects on the server side (a close, memory, a log line).
"""
import errno
import os
import re
import select
import shutil
import signal
import socket
import struct
import subprocess
import time

import pytest

from conftest import EXTERNAL
from gearman_wire import (CAN_DO, CAN_DO_TIMEOUT, CMD_MAX, ECHO_REQ, ECHO_RES, ERROR, GRAB_JOB,
                          JOB_ASSIGN, JOB_CREATED, NO_JOB, REQ, RES, SUBMIT_JOB,
                          SUBMIT_JOB_BG, WORK_COMPLETE, Conn, packet)
from gearman_wire import admin_status as status, rss_kib

pytestmark = pytest.mark.skipif(
    EXTERNAL is not None, reason="pins spurd's answers to hostile input (gearmand crashes or "
    "closes silently, see gearmand-behaviour.md section 1.4)")

GIB = 1 << 30


# ------------------------------------------------------------------ helpers

def header(cmd, size, magic=REQ):
    return magic + struct.pack(">II", cmd, size)


def expect_error(c, code):
    """Read one packet: an ERROR whose code is code. Returns its text."""
    body = c.expect(ERROR)
    got, _, text = body.partition(b"\0")
    assert got == code, f"ERROR {body!r}, wanted code {code!r}"
    assert text, "ERROR without a text"
    return text


def poll(cond, timeout=5.0, what="condition"):
    """Bounded polling for a server-side effect."""
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def closed_by_server(sock, timeout=5.0):
    """Read (and drop) whatever is left until the server closes sock; True if it did in time."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            chunk = sock.recv(1 << 20)
        except (ConnectionResetError, BrokenPipeError):
            return True
        except socket.timeout:
            return False
        if not chunk:
            return True
    return False


class Bystander:
    """A client connected before the attack, with a background job queued through it.

    check() proves afterwards that the client is still served (an ECHO round trip), that the job
    is still listed by 'status', and that a worker is handed it with its payload intact."""

    def __init__(self, server, func=b"precious"):
        self.server = server
        self.func = func
        self.payload = b"payload-" + os.urandom(8).hex().encode()
        self.client = server.connect()
        self.client.send_packet(SUBMIT_JOB_BG, func, b"", self.payload)
        self.handle = self.client.expect(JOB_CREATED)

    def check(self):
        self.client.echo_roundtrip(b"still here")
        assert status(self.client).get(self.func) == (1, 0, 0), "the queued job was lost"
        w = self.server.connect()
        try:
            w.send_packet(CAN_DO, self.func)
            w.send_packet(GRAB_JOB)
            assert w.expect(JOB_ASSIGN) == self.handle + b"\0" + self.func + b"\0" + self.payload
            w.send_packet(WORK_COMPLETE, self.handle, b"")
            w.echo_roundtrip()
        finally:
            w.close()
        assert status(self.client).get(self.func, (0, 0, 0))[:2] == (0, 0)
        self.client.close()


@pytest.fixture
def bystander(server):
    return Bystander(server)


# ------------------------------------------------------------------ framing kept: ERROR packets

@pytest.mark.parametrize("cmd", [0, CMD_MAX, 65535, 1 << 31, (1 << 32) - 1])
def test_unknown_command_number_gets_error_and_stream_continues(server, bystander, cmd):
    c = server.connect()
    c.send(packet(cmd, b"junk\0more") + packet(ECHO_REQ, b"next"))
    assert expect_error(c, b"INVALID_COMMAND")
    assert c.expect(ECHO_RES) == b"next"
    bystander.check()


def test_response_magic_gets_invalid_magic_and_stream_continues(server, bystander):
    c = server.connect()
    c.send(packet(ECHO_REQ, b"x", magic=RES) + packet(ECHO_REQ, b"y"))
    assert expect_error(c, b"INVALID_MAGIC") == b"Request magic expected"
    assert c.expect(ECHO_RES) == b"y"
    bystander.check()


def test_missing_nuls_answered_inside_the_frame(server, bystander):
    c = server.connect()
    # SUBMIT_JOB needs two NUL-terminated arguments; this body has none. The bytes after the frame
    # must not be taken as its missing arguments.
    c.send(packet(SUBMIT_JOB, b"only-a-function") + packet(ECHO_REQ, b"framed"))
    assert expect_error(c, b"INVALID_ARGUMENT")
    assert c.expect(ECHO_RES) == b"framed"
    c.send(packet(CAN_DO_TIMEOUT, b"no-separator") + packet(ECHO_REQ, b"again"))
    assert expect_error(c, b"INVALID_ARGUMENT")
    assert c.expect(ECHO_RES) == b"again"
    bystander.check()


def test_zero_size_submit_is_an_error_not_a_read_into_the_next_packet(server, bystander):
    c = server.connect()
    c.send(header(SUBMIT_JOB, 0) + header(SUBMIT_JOB_BG, 0) + packet(ECHO_REQ, b"after"))
    assert expect_error(c, b"INVALID_ARGUMENT")
    assert expect_error(c, b"INVALID_ARGUMENT")
    assert c.expect(ECHO_RES) == b"after"
    bystander.check()


def test_header_split_across_many_reads(server, bystander):
    c = server.connect()
    barrier = server.connect()
    data = packet(SUBMIT_JOB_BG, b"split", b"", b"body")
    for i in range(len(data)):
        c.send(data[i:i + 1])
        # another connection's round trip between the bytes, so they arrive in separate reads
        barrier.echo_roundtrip()
    h = c.expect(JOB_CREATED)
    assert status(c)[b"split"] == (1, 0, 0)
    c.send(b"cancel job " + h + b"\n")
    assert c.read_line() == b"OK\r\n"
    bystander.check()


def test_ten_thousand_packets_in_one_write(server, bystander):
    c = server.connect()
    c.send(b"".join(packet(ECHO_REQ, b"%d" % i) for i in range(10000)))
    for i in range(10000):
        assert c.expect(ECHO_RES, timeout=20) == b"%d" % i
    bystander.check()


def test_oversize_body_discarded_as_it_arrives(server_factory):
    server = server_factory("--max-packet-size=1024")
    by = Bystander(server)
    c = server.connect()
    c.send(packet(ECHO_REQ, b"x" * 5000) + packet(ECHO_REQ, b"in-step"))
    assert expect_error(c, b"ARGUMENT_TOO_LARGE")
    assert c.expect(ECHO_RES) == b"in-step"
    by.check()


# ------------------------------------------------------------------ memory

def test_huge_declared_bodies_never_sent_use_no_memory(server_factory):
    server = server_factory("--max-packet-size=1048576")
    by = Bystander(server)
    pid = server.proc.pid
    warm = server.connect()
    warm.echo_roundtrip()
    before = rss_kib(pid)
    conns = []
    for _ in range(50):
        c = server.connect()
        c.send(header(SUBMIT_JOB, GIB))
        conns.append(c)
    for c in conns:
        # the answer comes from the 12-byte header alone: the body is never waited for
        assert expect_error(c, b"ARGUMENT_TOO_LARGE")
    # part of one body does arrive: it is dropped, not kept
    conns[0].send(b"\0" * (4 << 20))
    conns[0].send(header(ECHO_REQ, 0))  # still inside the discarded body: no reply
    warm.echo_roundtrip()
    during = rss_kib(pid)
    by.check()
    for c in conns:
        c.close()
    warm.echo_roundtrip()
    grown = during - before
    print(f"RSS before {before} KiB, with 50 x 1 GiB declared {during} KiB (+{grown} KiB)")
    assert grown < 8 * 1024, f"RSS grew by {grown} KiB for bodies that were never accepted"


def test_declared_body_under_the_limit_is_not_preallocated(server_factory):
    server = server_factory("--max-packet-size=67108864")
    pid = server.proc.pid
    warm = server.connect()
    warm.echo_roundtrip()
    before = rss_kib(pid)
    conns = []
    for _ in range(50):
        c = server.connect()
        c.send(header(ECHO_REQ, 60 << 20) + b"abc")
        conns.append(c)
    # no reply can act as a barrier here (the frames are incomplete): a round trip on a connection
    # opened after all of them, then a bounded look at the memory
    late = server.connect()
    late.echo_roundtrip()
    during = rss_kib(pid)
    assert during - before < 8 * 1024, f"RSS grew by {during - before} KiB"
    for c in conns:
        c.close()
    late.echo_roundtrip()


# ------------------------------------------------------------------ framing lost: closed

def test_garbage_magic_closes_only_that_connection(server, bystander):
    c = server.connect()
    c.send(b"\0XYZ" + struct.pack(">II", ECHO_REQ, 1) + b"x" + packet(ECHO_REQ, b"never"))
    c.expect_closed()
    assert b"ECHO" not in c.buf and ECHO_RES.to_bytes(4, "big") not in c.buf
    bystander.check()


def test_nul_then_garbage_closes_even_before_a_whole_header(server, bystander):
    c = server.connect()
    c.send(b"\0Q")
    c.expect_closed()
    bystander.check()


# ------------------------------------------------------------------ admin text

def test_admin_line_of_one_mebibyte(server, bystander):
    c = server.connect()
    c.send(b"status " + b"x" * (1 << 20) + b"\nversion\n")
    assert c.read_line(timeout=20).startswith(b"ERR LINE_TOO_LONG")
    assert c.read_line().startswith(b"OK ")
    c.echo_roundtrip()
    bystander.check()


def test_binary_garbage_starting_with_a_non_nul_byte(server, bystander):
    c = server.connect()
    garbage = bytes(range(1, 256)) * 64 + b"\xff\xfe\x00\x01"  # 16 KiB, newlines inside
    c.send(garbage + b"\r\nversion\r\n")
    # each newline-terminated piece is an (unknown) admin line; what matters: ERR lines only, in
    # step, and the version line after them is answered
    deadline = time.monotonic() + 10
    while True:
        assert time.monotonic() < deadline
        line = c.read_line()
        if line.startswith(b"OK "):
            break
        assert line.startswith(b"ERR "), line[:80]
    c.echo_roundtrip()
    bystander.check()


# ------------------------------------------------------------------ job engine sequences

def test_can_do_timeout_after_work_complete_does_not_resurrect_the_job(server, bystander):
    # gearmand 1.1.20: the timer of a completed job fires later on freed memory (section 0.2)
    w = server.connect()
    w.send_packet(CAN_DO_TIMEOUT, b"quick", b"100")
    c = server.connect()
    c.send_packet(SUBMIT_JOB_BG, b"quick", b"", b"x")
    h = c.expect(JOB_CREATED)
    w.send_packet(GRAB_JOB)
    assert w.expect(JOB_ASSIGN).startswith(h + b"\0")
    w.send_packet(WORK_COMPLETE, h, b"done")
    w.send_packet(CAN_DO_TIMEOUT, b"quick", b"1")
    w.echo_roundtrip()
    time.sleep(0.3)  # the behaviour under test: the old deadline passes with no job left
    c.echo_roundtrip()
    assert status(c)[b"quick"] == (0, 0, 1)
    w.send_packet(GRAB_JOB)
    assert w.expect(NO_JOB) == b""
    w2 = server.connect()
    w2.send_packet(CAN_DO, b"quick")
    w2.send_packet(GRAB_JOB)
    assert w2.expect(NO_JOB) == b""
    bystander.check()


def test_drop_function_with_queued_jobs_is_refused(server, bystander):
    c = server.connect()
    c.send(b"drop function " + bystander.func + b"\n")
    assert c.read_line() == b"ERR there are still connected workers or executing clients\r\n"
    c.send_packet(SUBMIT_JOB_BG, b"other", b"", b"y")
    h = c.expect(JOB_CREATED)
    c.send(b"drop function other\n")
    assert c.read_line().startswith(b"ERR there are still")
    c.send(b"cancel job " + h + b"\ndrop function other\n")
    assert c.read_line() == b"OK\r\n"
    # kept with its last job gone until dropped, as in gearmand
    assert c.read_line() == b"OK\r\n"
    assert b"other" not in status(c)
    bystander.check()


# ------------------------------------------------------------------ slow readers and limits

def test_client_that_never_reads_is_closed_past_max_output(server_factory, tmp_path):
    log = tmp_path / "spurd.log"
    server = server_factory("--max-output-buffer=262144", "--max-packet-size=65536",
                            "--log-file=" + str(log),
                            "--verbose=WARNING")
    by = Bystander(server)
    sleeper = socket.socket()
    sleeper.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sleeper.connect(server.addr)
    sleeper.settimeout(0.5)
    submitter = server.connect()
    payload = b"e" * 65536
    sent = 0
    closed = False
    deadline = time.monotonic() + 20
    while not closed and time.monotonic() < deadline:
        try:
            # the sleeper asks for replies it never reads
            sleeper.sendall(packet(ECHO_REQ, payload))
            sent += 1
        except (socket.timeout, BrokenPipeError, ConnectionResetError):
            pass  # our send buffer is full too, or the server closed us
        # meanwhile another client keeps submitting, and is answered at once
        submitter.send_packet(SUBMIT_JOB_BG, b"steady", b"", b"%d" % sent)
        submitter.expect(JOB_CREATED, timeout=2)
        closed = "--max-output-buffer" in (log.read_text() if log.exists() else "")
    assert closed, f"no close after {sent} unread 64 KiB replies"
    assert closed_by_server(sleeper), "the non-reading client was not disconnected"
    sleeper.close()
    total = status(submitter)[b"steady"][0]
    assert total >= 1
    submitter.echo_roundtrip()
    by.check()


def test_max_connections_waits_for_a_free_slot(server_factory):
    n = 5
    server = server_factory("--max-connections=%d" % n)
    by = Bystander(server)  # one of the n
    first = [server.connect() for _ in range(n - 1)]
    for c in first:
        c.echo_roundtrip()
    extra = server.connect()  # completes the TCP handshake in the backlog, not accepted yet
    extra.send_packet(ECHO_REQ, b"waiting")
    extra.assert_silent(0.5)
    by.client.echo_roundtrip(b"served while the limit is reached")
    first[0].close()
    assert extra.expect(ECHO_RES, timeout=5) == b"waiting"
    for c in first[1:]:
        c.echo_roundtrip()
        c.close()
    extra.close()
    by.check()  # its worker connection needs a free slot again


def listen_queue(port):
    """The backlog of the socket listening on port, as the kernel reports it: `ss` shows it as
    the Send-Q of a listening socket."""
    out = subprocess.run(["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True,
                         timeout=30, check=True).stdout
    rows = [line.split() for line in out.splitlines() if line.strip()]
    assert len(rows) == 1, out
    return int(rows[0][2])


@pytest.mark.skipif(shutil.which("ss") is None, reason="ss (iproute2) is not installed")
def test_default_backlog_is_the_kernel_maximum(server_factory):
    with open("/proc/sys/net/core/somaxconn") as f:
        somaxconn = int(f.read())
    assert listen_queue(server_factory().addr[1]) == somaxconn
    assert listen_queue(server_factory("--backlog=50").addr[1]) == 50  # the option still works


def test_a_burst_of_connections_waits_in_the_listen_queue(server_factory):
    """200 clients connect at once while spurd cannot accept (stopped): every handshake completes
    in the listen queue (gearmand's backlog of 32 dropped all but 33), and all are served."""
    server = server_factory()
    n = 200
    socks = []
    os.kill(server.proc.pid, signal.SIGSTOP)
    try:
        for _ in range(n):
            s = socket.socket()
            s.setblocking(False)
            assert s.connect_ex(server.addr) in (0, errno.EINPROGRESS)
            socks.append(s)
        pending = list(socks)

        def all_connected():
            _, ready, _ = select.select([], pending, [], 0.1)
            for s in ready:
                assert s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0
                pending.remove(s)
            return not pending
        poll(all_connected, timeout=30, what=f"{n} connections in the listen queue")
    finally:
        os.kill(server.proc.pid, signal.SIGCONT)
    for i, s in enumerate(socks):
        s.setblocking(True)
        s.settimeout(30)
        s.sendall(packet(ECHO_REQ, b"%d" % i))
    for i, s in enumerate(socks):
        c = Conn.__new__(Conn)
        c.sock, c.addr, c.timeout, c.buf = s, server.addr, 30, b""
        assert c.expect(ECHO_RES) == b"%d" % i
        s.close()


def test_file_descriptor_exhaustion_backs_off_and_recovers(server_factory, tmp_path):
    log = tmp_path / "spurd.log"
    server = server_factory("--file-descriptors=64", "--backlog=256", "--log-file=" + str(log),
                            "--verbose=WARNING")
    by = Bystander(server)
    start = time.monotonic()
    attempts = []
    for _ in range(100):
        s = socket.socket()
        s.settimeout(5)
        s.connect(server.addr)  # the kernel completes it; spurd accepts while it has fds
        attempts.append(s)
    # the connection made before the flood is still served during it
    by.client.echo_roundtrip(b"during the flood")
    emfile = poll(lambda: [l for l in log.read_text().splitlines() if "accept:" in l],
                  what="the EMFILE back-off in the log")
    by.client.echo_roundtrip(b"after the back-off")
    assert "Too many open files" in emfile[0]
    # the flood goes on (the backlog still holds connections): spurd retries every second and
    # hits EMFILE again, but logs it once per 5 s interval, counting what it suppressed
    again = poll(lambda: [l for l in log.read_text().splitlines()
                          if "accept:" in l and "suppressed" in l],
                 timeout=12, what="a second, rate-limited back-off line")
    assert int(re.search(r"\((\d+) similar suppressed\)", again[0]).group(1)) >= 2, again
    by.client.echo_roundtrip(b"still served during the flood")
    for s in attempts:
        s.close()
    # fds free up: a new connection is accepted and served (the pause lasts about a second)
    late = Conn(server.addr, timeout=10)
    late.echo_roundtrip(b"accepted again")
    late.close()
    elapsed = time.monotonic() - start
    lines = [l for l in log.read_text().splitlines() if "accept:" in l]
    # rate-limited: at most one line per 5 s interval (plus the first)
    print(f"{len(lines)} back-off line(s) in {elapsed:.1f}s: {lines}")
    assert len(lines) <= 1 + int(elapsed / 5), lines
    by.check()


def test_idle_timeout_closes_a_half_sent_packet(server_factory):
    server = server_factory("--idle-timeout=1")
    by = Bystander(server)
    c = server.connect()
    c.send(packet(SUBMIT_JOB_BG, b"f", b"", b"abc")[:7])
    idle = server.connect()  # an idle connection with nothing half-sent stays open
    idle.echo_roundtrip()
    assert closed_by_server(c.sock, timeout=6), "the half-sent packet kept the connection open"
    idle.echo_roundtrip()
    by.check()


def test_keepalive_options_applied_to_accepted_sockets(server_factory):
    if shutil.which("ss") is None:
        pytest.skip("ss (iproute2) is not installed")
    server = server_factory("--keepalive-idle=77", "--keepalive-interval=11",
                            "--keepalive-count=3")
    by = Bystander(server)
    c = server.connect()
    c.echo_roundtrip()
    port = server.addr[1]
    out = subprocess.run(["ss", "-tnoi", "state", "established", f"( sport = :{port} )"],
                         capture_output=True, text=True, timeout=10).stdout
    m = re.search(r"timer:\(keepalive,(?:(\d+)min)?(?:(\d+)(?:\.\d+)?sec|(\d+)ms)?", out)
    assert m, f"no keepalive timer on the accepted socket:\n{out}"
    secs = int(m.group(1) or 0) * 60 + int(m.group(2) or 0)
    assert 60 < secs <= 77, f"keepalive timer {secs}s does not match --keepalive-idle=77:\n{out}"
    c.close()
    by.check()
