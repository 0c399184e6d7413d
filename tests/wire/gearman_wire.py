# SPDX-License-Identifier: BSD-3-Clause
"""Raw-bytes helpers for talking to a Gearman server in wire tests.

Everything here is written from the protocol text, independently of spurd's own codec, so a bug
that both sides agreed on would still show up.
"""
import os
import socket
import struct
import time

REQ = b"\0REQ"
RES = b"\0RES"

# Command numbers from the Gearman PROTOCOL document.
CAN_DO = 1
CANT_DO = 2
RESET_ABILITIES = 3
PRE_SLEEP = 4
NOOP = 6
SUBMIT_JOB = 7
JOB_CREATED = 8
GRAB_JOB = 9
NO_JOB = 10
JOB_ASSIGN = 11
WORK_STATUS = 12
WORK_COMPLETE = 13
WORK_FAIL = 14
GET_STATUS = 15
ECHO_REQ = 16
ECHO_RES = 17
SUBMIT_JOB_BG = 18
ERROR = 19
STATUS_RES = 20
SUBMIT_JOB_HIGH = 21
SET_CLIENT_ID = 22
CAN_DO_TIMEOUT = 23
ALL_YOURS = 24
WORK_EXCEPTION = 25
OPTION_REQ = 26
OPTION_RES = 27
WORK_DATA = 28
WORK_WARNING = 29
GRAB_JOB_UNIQ = 30
JOB_ASSIGN_UNIQ = 31
SUBMIT_JOB_HIGH_BG = 32
SUBMIT_JOB_LOW = 33
SUBMIT_JOB_LOW_BG = 34
SUBMIT_JOB_SCHED = 35
SUBMIT_JOB_EPOCH = 36
SUBMIT_REDUCE_JOB = 37
SUBMIT_REDUCE_JOB_BACKGROUND = 38
GRAB_JOB_ALL = 39
JOB_ASSIGN_ALL = 40
GET_STATUS_UNIQUE = 41
STATUS_RES_UNIQUE = 42
CMD_MAX = 43  # one past the last command number (CMD_MAX in src/proto/proto.h)
# Spur's own packets (docs/PROTOCOL-EXTENSIONS.md)
CANCEL_JOB = 0x53500001
JOB_CANCELLED = 0x53500002

DEFAULT_TIMEOUT = 5.0


def packet(cmd, *args, magic=REQ):
    """Encode a packet: arguments joined by NUL, the last one with no NUL after it."""
    body = b"\0".join(a if isinstance(a, bytes) else str(a).encode() for a in args)
    return magic + struct.pack(">II", cmd, len(body)) + body


class Conn:
    """One TCP connection with a receive buffer and bounded waits."""

    def __init__(self, addr, timeout=DEFAULT_TIMEOUT):
        self.addr = addr
        self.sock = socket.create_connection(addr, timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.timeout = timeout
        self.buf = b""

    def close(self):
        self.sock.close()

    def send(self, data):
        self.sock.sendall(data)

    def send_packet(self, cmd, *args):
        self.send(packet(cmd, *args))

    def _fill(self, deadline):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("no data from server within the timeout")
        self.sock.settimeout(remaining)
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise ConnectionError("server closed the connection")
        self.buf += chunk

    def read_exact(self, n, timeout=None):
        deadline = time.monotonic() + (timeout or self.timeout)
        while len(self.buf) < n:
            self._fill(deadline)
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read_packet(self, timeout=None):
        """Return (magic, cmd, body) of the next binary packet."""
        hdr = self.read_exact(12, timeout)
        magic, (cmd, size) = hdr[:4], struct.unpack(">II", hdr[4:])
        body = self.read_exact(size, timeout) if size else b""
        return magic, cmd, body

    def expect(self, cmd, timeout=None):
        """Read the next packet, check it is a response with command cmd, return its arguments
        split on NUL (the raw body for single-argument or data packets is the last element)."""
        magic, got, body = self.read_packet(timeout)
        assert magic == RES, f"bad magic {magic!r}"
        assert got == cmd, f"expected command {cmd}, got {got} with body {body!r}"
        return body

    def read_line(self, timeout=None):
        deadline = time.monotonic() + (timeout or self.timeout)
        while b"\n" not in self.buf:
            self._fill(deadline)
        i = self.buf.index(b"\n") + 1
        out, self.buf = self.buf[:i], self.buf[i:]
        return out

    def read_until(self, terminator, timeout=None):
        deadline = time.monotonic() + (timeout or self.timeout)
        while terminator not in self.buf:
            self._fill(deadline)
        i = self.buf.index(terminator) + len(terminator)
        out, self.buf = self.buf[:i], self.buf[i:]
        return out

    def admin(self, line, terminator=None):
        """Send an admin line and return the reply: one line, or through terminator."""
        self.send(line if isinstance(line, bytes) else line.encode())
        if terminator is None:
            return self.read_line()
        return self.read_until(terminator)

    def expect_closed(self, timeout=None):
        """Assert the server closes the connection (reading anything else fails)."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            remaining = deadline - time.monotonic()
            assert remaining > 0, "connection was not closed"
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(65536)
            except ConnectionResetError:
                return
            if not chunk:
                return
            self.buf += chunk

    def assert_silent(self, wait=0.2):
        """Assert no bytes arrive within wait seconds (used only to check for absence)."""
        self.sock.settimeout(wait)
        try:
            chunk = self.sock.recv(65536)
        except socket.timeout:
            return
        assert False, f"unexpected data {chunk!r}"

    def echo_roundtrip(self, payload=b"ping"):
        """A full round trip: proves the server processed everything sent before it."""
        self.send_packet(ECHO_REQ, payload)
        assert self.expect(ECHO_RES) == payload


# ------------------------------------------------------------------ helpers for admin and memory checks

def admin_status(c):
    """Run admin 'status' on connection c; return {function: (total, running, workers)}."""
    c.send(b"status\n")
    out = {}
    while True:
        line = c.read_line()
        if line == b".\n":
            return out
        name, total, running, workers = line.rstrip(b"\n").split(b"\t")
        out[name] = (int(total), int(running), int(workers))


def foreground_job_runs(server, client, func=b"g"):
    """A foreground job of func, submitted by client, goes to a new worker and its result comes
    back: what must keep working when the store cannot write."""
    w = server.connect()
    w.send_packet(CAN_DO, func)
    client.send_packet(SUBMIT_JOB, func, b"", b"fg")
    h = client.expect(JOB_CREATED)
    w.send_packet(GRAB_JOB_UNIQ)
    w.expect(JOB_ASSIGN_UNIQ)
    w.send_packet(WORK_COMPLETE, h, b"ok")
    assert client.expect(WORK_COMPLETE) == h + b"\0ok"
    w.close()


def rss_kib(pid, field="VmRSS"):
    """The process's resident memory (or another /proc/PID/status field) in KiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def server_cpu(pid):
    """CPU seconds (user + system) process pid has used so far, from /proc/PID/stat. A stall of
    the server's loop shows as CPU it spends while a probe waits; a loaded machine that merely
    deschedules the server adds none, so a bound on it does not depend on machine load."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def sanitized(pid):
    """True if the process runs with AddressSanitizer (its runtime is mapped)."""
    with open(f"/proc/{pid}/maps") as f:
        return any("libasan" in line or "clang_rt.asan" in line for line in f)
