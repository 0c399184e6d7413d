# SPDX-License-Identifier: BSD-3-Clause
"""The global buffer budget (--max-buffer-memory) and WORK_STATUS coalescing, over real sockets.

Connections that do not read their replies, and senders of big unfinished packets, are closed
once all connections together hold more than the budget, worst first; a reading probe keeps
being served and no job is lost. A client that does not read holds only the latest
WORK_STATUS of a job. The server reports its peak of buffered bytes in its log when
it stops; that figure, and RSS where the build is not sanitized, show that memory stayed bounded.
"""
import re
import select
import socket
import struct
import time

import pytest

from conftest import EXTERNAL
from gearman_wire import (CAN_DO, ECHO_REQ, GRAB_JOB, JOB_ASSIGN, JOB_CREATED, NOOP, PRE_SLEEP,
                          REQ, RES, SUBMIT_JOB, WORK_COMPLETE, WORK_STATUS, Conn, packet)
from gearman_wire import rss_kib, sanitized

pytestmark = pytest.mark.skipif(EXTERNAL is not None, reason="needs its own spurd (options)")

MIB = 1 << 20


def buffer_report(server):
    """Stop the server and return (peak, shed, replaced) from its closing log line."""
    assert server.stop() == 0
    m = re.search(r"buffers: peak (\d+) bytes held \(--max-buffer-memory \d+\); (\d+) "
                  r"connections shed holding \d+ bytes(?:; (\d+) unsent WORK_STATUS replaced)?",
                  server.stderr_text())
    assert m, server.stderr_text()[-2000:]
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def raw_conn(server, rcvbuf=4096):
    """A socket with a small receive buffer, so the kernel soaks up little of what it is sent."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(10)
    s.connect(server.addr)
    return s


def closed_by_server(sock, timeout=10.0):
    """Read (and drop) until the server closes sock; False if it is still open at the deadline."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            if not sock.recv(1 << 20):
                return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except socket.timeout:
            return False
    return False


def send_ignoring_close(sock, data):
    """Send data; the server may shed the connection meanwhile (that is what is tested)."""
    try:
        sock.sendall(data)
        return True
    except (ConnectionResetError, BrokenPipeError):
        return False


def test_connections_that_do_not_read_are_shed_while_a_reader_is_served(server_factory):
    budget = 8 * MIB
    s = server_factory("--max-packet-size=1M", "--max-buffer-memory=8M")
    probe = s.connect()
    probe.echo_roundtrip()
    base = rss_kib(s.proc.pid)
    echo = packet(ECHO_REQ, b"e" * 1000000)
    hogs = [raw_conn(s) for _ in range(6)]
    for i in range(24):  # 24 MB of replies per hog, none of them read
        for h in hogs:
            send_ignoring_close(h, echo)
        probe.echo_roundtrip(b"probe %d" % i)
    assert all(closed_by_server(h) for h in hogs), "every connection that does not read is shed"
    probe.echo_roundtrip(b"still served")
    rss = rss_kib(s.proc.pid)
    sanit = sanitized(s.proc.pid)
    peak, shed, _ = buffer_report(s)
    assert shed >= len(hogs)
    # the budget, plus what one read and one reply add before the check runs
    assert peak <= budget + 2 * MIB + (128 << 10), peak
    if not sanit:  # (AddressSanitizer's quarantine keeps freed memory resident)
        assert rss - base < (budget + 16 * MIB) // 1024, f"RSS {base} KiB -> {rss} KiB"


def test_sender_of_unfinished_big_packets_is_shed(server_factory):
    budget = 9 * MIB
    s = server_factory("--max-packet-size=4M", "--max-buffer-memory=9M")
    probe = s.connect()
    size = 4 * MIB - 64
    head = REQ + struct.pack(">II", ECHO_REQ, size)
    senders = [raw_conn(s) for _ in range(3)]
    for snd in senders:
        send_ignoring_close(snd, head + b"p" * (size - 512 * 1024))  # never finished
        probe.echo_roundtrip()
    assert any(closed_by_server(snd, timeout=5.0) for snd in senders), \
        "a sender of an unfinished packet is shed once the budget is passed"
    probe.echo_roundtrip(b"still served")
    peak, shed, _ = buffer_report(s)
    assert shed >= 1
    assert peak <= budget + 4 * MIB + (128 << 10), peak


def read_skipping_noops(c):
    while True:
        magic, cmd, body = c.read_packet()
        if cmd != NOOP:
            return cmd, body


def test_shed_worker_job_is_requeued_and_completed_by_another(server_factory):
    s = server_factory("--max-packet-size=1M", "--max-buffer-memory=3M")
    client = s.connect()
    w1 = Conn(s.addr)
    w1.send_packet(CAN_DO, b"f")
    client.send_packet(SUBMIT_JOB, b"f", b"u1", b"payload")
    handle = client.expect(JOB_CREATED)
    w1.send_packet(GRAB_JOB)
    cmd, body = read_skipping_noops(w1)
    assert cmd == JOB_ASSIGN and body.split(b"\0")[0] == handle
    w2 = s.connect()
    w2.send_packet(CAN_DO, b"f")
    w2.send_packet(PRE_SLEEP)
    w2.echo_roundtrip()  # w2 sleeps on f
    # w1 now asks for replies it never reads, until the budget sheds it
    hog = w1.sock
    hog.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    echo = packet(ECHO_REQ, b"w" * 1000000)
    for _ in range(12):
        if not send_ignoring_close(hog, echo):
            break
    assert w2.expect(NOOP) == b"", "the shed worker's job is ready again"
    w2.send_packet(GRAB_JOB)
    cmd, body = read_skipping_noops(w2)
    assert cmd == JOB_ASSIGN and body.split(b"\0")[0] == handle
    w2.send_packet(WORK_COMPLETE, handle, b"done")
    assert client.expect(WORK_COMPLETE) == handle + b"\0done"
    _, shed, _ = buffer_report(s)
    assert shed >= 1


def small_conns(server, n):
    """n Conns whose receive buffers are set small before they connect (shrinking one later can
    stall the TCP window on Linux); connected all at once, as each handshake takes a while."""
    socks = []
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.setblocking(False)
        s.connect_ex(server.addr)
        socks.append(s)
    conns = []
    for s in socks:
        _, writable, _ = select.select([], [s], [], 10.0)
        assert writable and s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0
        s.setblocking(True)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        c = Conn.__new__(Conn)
        c.addr, c.timeout, c.buf, c.sock = server.addr, 10.0, b"", s
        conns.append(c)
    return conns


def read_to_end_with(sock, tail, timeout=20.0):
    """Read until the bytes received end with tail; return everything read."""
    got = bytearray()
    deadline = time.monotonic() + timeout
    while not got.endswith(tail):
        left = deadline - time.monotonic()
        assert left > 0, f"{tail!r} did not arrive; last bytes {bytes(got[-200:])!r}"
        sock.settimeout(left)
        chunk = sock.recv(1 << 20)
        assert chunk, "server closed the connection"
        got += chunk
    return bytes(got)


def status_packet(handle, i, n):
    # wide numbers (the protocol forwards them as sent) make each packet 237 bytes, so the
    # kernel's socket buffers fill after some 12,000 of them and the rest is up to the server
    return packet(WORK_STATUS, handle, b"%0100d" % i, b"%0100d" % n).replace(REQ, RES, 1)


def test_waiters_that_do_not_read_hold_only_the_latest_status(server_factory):
    n_waiters, n_status = 200, 16000
    s = server_factory("--max-buffer-memory=0")  # coalescing alone keeps this bounded
    worker = s.connect()
    worker.send_packet(CAN_DO, b"st")
    waiters = small_conns(s, n_waiters)
    for c in waiters:
        c.send_packet(SUBMIT_JOB, b"st", b"same", b"x")
    handles = {c.expect(JOB_CREATED) for c in waiters}
    assert len(handles) == 1, "every waiter joined the one job"
    handle = handles.pop()
    worker.send_packet(GRAB_JOB)
    cmd, body = read_skipping_noops(worker)
    assert cmd == JOB_ASSIGN
    base = rss_kib(s.proc.pid)
    burst = b"".join(status_packet(handle, i, n_status).replace(RES, REQ, 1)
                     for i in range(1, n_status + 1))
    t0 = time.monotonic()
    worker.send(burst)
    worker.echo_roundtrip()  # every status was forwarded
    t1 = time.monotonic()
    grown = rss_kib(s.proc.pid) - base
    worker.send_packet(WORK_COMPLETE, handle, b"result")
    worker.echo_roundtrip()
    last = status_packet(handle, n_status, n_status)
    done = packet(WORK_COMPLETE, handle, b"result").replace(REQ, RES, 1)
    for c in waiters:  # now they read (with room to): the latest status, then the result
        c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 * MIB)
    for c in waiters:
        received = len(read_to_end_with(c.sock, last + done))
        assert received < len(burst), "statuses the client did not read were replaced"
    sanit = sanitized(s.proc.pid)
    peak, _, replaced = buffer_report(s)
    print(f"status: forwarded in {t1 - t0:.2f}s, peak {peak} bytes buffered, {replaced} replaced, "
          f"RSS +{grown} KiB")
    # without coalescing, each waiter would hold some 4,000 unsent statuses (about 1 MB)
    assert peak < 64 * MIB, peak
    assert replaced > 0
    if not sanit:
        assert grown < 64 * 1024, f"RSS grew {grown} KiB"
