# SPDX-License-Identifier: BSD-3-Clause
"""Admin access control (--admin-allow, --admin-read) and function permissions (--policy).

Different principals on one machine: the unix socket (--unix) against TCP, and TCP connections
from the source address 127.0.0.2 against 127.0.0.1 (both are loopback on Linux)."""
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest

from conftest import EXTERNAL
from gearman_wire import (CAN_DO, CAN_DO_TIMEOUT, ERROR, GRAB_JOB, JOB_CREATED, NO_JOB,
                          SUBMIT_JOB, SUBMIT_JOB_BG, SUBMIT_JOB_EPOCH, SUBMIT_JOB_HIGH,
                          SUBMIT_JOB_HIGH_BG, SUBMIT_JOB_LOW, SUBMIT_JOB_LOW_BG,
                          SUBMIT_JOB_SCHED, SUBMIT_REDUCE_JOB, SUBMIT_REDUCE_JOB_BACKGROUND, Conn)

pytestmark = [pytest.mark.spur_only,
              pytest.mark.skipif(EXTERNAL is not None, reason="needs its own spurd")]

DEADLINE = 20.0  # generous: the suite runs under a CPU hog
DENIED_LINE = b"ERR PERMISSION_DENIED Not+allowed+from+this+connection\r\n"

CHANGING = [b"shutdown", b"shutdown graceful", b"cancel job H:x:1", b"create function f",
            b"drop function f", b"maxqueue f 5", b"maxqueue f", b"stats reset"]
READING = [(b"status", b".\n"), (b"workers", b".\n"), (b"version", None), (b"getpid", None),
           (b"verbose", None), (b"show jobs", b".\n"), (b"show unique jobs", b".\n"),
           (b"prioritystatus", b".\n"), (b"stats", b"\r\nSTAT store_commit_failures"),
           (b"stats functions", None), (b"metrics", b"\n.\n")]


class UnixConn(Conn):
    """A Conn over a unix-domain socket."""

    def __init__(self, path, timeout=DEADLINE):
        self.addr = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.timeout = timeout
        self.buf = b""


class SourceConn(Conn):
    """A Conn whose source address is src (127.0.0.2 is loopback too on Linux)."""

    def __init__(self, addr, src, timeout=DEADLINE):
        self.addr = addr
        self.sock = socket.create_connection(addr, timeout=timeout, source_address=(src, 0))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.timeout = timeout
        self.buf = b""


def from_127_0_0_2(s):
    try:
        return SourceConn(s.addr, "127.0.0.2")
    except OSError as e:
        pytest.skip("cannot bind 127.0.0.2: %s" % e)


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def admin(c, line):
    """Send an admin line; return the first reply line (and drain a listing's rest)."""
    c.send(line + b"\n")
    first = c.read_line()
    if first.startswith(b"ERR"):
        return first
    return first


def ask_then_echo(c, line):
    """Send an admin line, then an ECHO: return every byte before the ECHO's answer (so a
    multi-line reply is read whole)."""
    c.send(line + b"\n")
    c.send_packet(16, b"mark")
    out = c.read_until(b"\0RES\0\0\0\x11\0\0\0\x04mark")
    return out[:-16]


def submit_packet(cmd, func):
    if cmd == SUBMIT_JOB_SCHED:
        return (func, b"", b"*", b"*", b"*", b"*", b"*", b"x")
    if cmd == SUBMIT_JOB_EPOCH:
        return (func, b"", str(int(time.time()) + 3600).encode(), b"x")
    if cmd in (SUBMIT_REDUCE_JOB, SUBMIT_REDUCE_JOB_BACKGROUND):
        return (func, b"", b"reducer", b"", b"x")
    return (func, b"", b"x")


SUBMITS = [SUBMIT_JOB, SUBMIT_JOB_BG, SUBMIT_JOB_HIGH, SUBMIT_JOB_HIGH_BG, SUBMIT_JOB_LOW,
           SUBMIT_JOB_LOW_BG, SUBMIT_JOB_SCHED, SUBMIT_JOB_EPOCH, SUBMIT_REDUCE_JOB,
           SUBMIT_REDUCE_JOB_BACKGROUND]


def expect_denied(c):
    body = c.expect(ERROR)
    code, _, text = body.partition(b"\0")
    assert code == b"PERMISSION_DENIED", body
    assert text.startswith(b"Not allowed"), body


def stat(c, name):
    out = ask_then_echo(c, b"stats")
    for line in out.split(b"\r\n"):
        if line.startswith(b"STAT " + name + b" "):
            return int(line.split()[2])
    raise AssertionError("no STAT %s in %r" % (name, out))


def poll(cond, what):
    deadline = time.monotonic() + DEADLINE
    while not cond():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


# ------------------------------------------------------------------ admin access control

def test_admin_allow_refuses_every_changing_command_and_allows_reads(server_factory, tmp_path):
    sock = str(tmp_path / "s.sock")
    s = server_factory("--unix=" + sock, "--admin-allow=unix")
    c = s.connect()
    for line in CHANGING:
        assert admin(c, line) == DENIED_LINE, line
    for line, tail in READING:
        out = ask_then_echo(c, line)
        assert b"PERMISSION_DENIED" not in out, line
        if tail:
            assert tail in out, (line, out)
    assert s.proc.poll() is None
    assert stat(c, b"permission_denied_admin") == len(CHANGING)
    u = UnixConn(sock)
    assert admin(u, b"create function f") == b"OK\r\n"
    assert admin(u, b"maxqueue f 5") == b"OK\r\n"
    assert admin(u, b"drop function f") == b"OK\r\n"
    assert admin(u, b"stats reset") == b"RESET\r\n"
    assert b"permission denied: admin 'shutdown' from 127.0.0.1 (listener 127.0.0.1:" \
        in open(os.path.join(s.tmpdir, "spurd.log"), "rb").read()
    assert admin(u, b"shutdown") == b"OK\r\n"
    assert s.proc.wait(timeout=DEADLINE) == 0


def test_admin_allow_cidr_by_source_address(server_factory):
    s = server_factory("--admin-allow=127.0.0.2/32")
    assert admin(s.connect(), b"create function f") == DENIED_LINE
    assert admin(from_127_0_0_2(s), b"create function f") == b"OK\r\n"


def test_without_admin_allow_changes_are_allowed_as_before(server_factory):
    s = server_factory()
    c = from_127_0_0_2(s)
    assert admin(c, b"create function f") == b"OK\r\n"
    assert admin(c, b"stats reset") == b"RESET\r\n"


def test_admin_read_allowed_refuses_reads_to_others(server_factory):
    s = server_factory("--admin-read=allowed", "--admin-allow=127.0.0.2")
    c = s.connect()
    for line, _ in READING:
        assert admin(c, line) == DENIED_LINE, line
    assert admin(c, b"create function f") == DENIED_LINE
    c.echo_roundtrip()  # binary packets are not admin commands
    ok = from_127_0_0_2(s)
    assert ask_then_echo(ok, b"status") == b".\n"


# ------------------------------------------------------------------ function permissions

def test_policy_refuses_each_packet_kind_and_the_connection_goes_on(server_factory, tmp_path):
    pol = str(tmp_path / "policy")
    write(pol, "# test\nallow all ok.* loopback\n")
    s = server_factory("--policy=" + pol)
    c = s.connect()
    for cmd in SUBMITS:
        c.send_packet(cmd, *submit_packet(cmd, b"no"))
        expect_denied(c)
        c.echo_roundtrip()
        c.send_packet(cmd, *submit_packet(cmd, b"ok.f%d" % cmd))
        c.expect(JOB_CREATED)
    w = s.connect()
    w.send_packet(CAN_DO, b"no")
    expect_denied(w)
    w.send_packet(CAN_DO_TIMEOUT, b"no", b"100")
    expect_denied(w)
    w.send_packet(CAN_DO, b"ok.w")
    w.send_packet(CAN_DO_TIMEOUT, b"ok.w2", b"100")
    w.echo_roundtrip()  # no reply to an allowed CAN_DO: the ECHO comes back first
    assert stat(w, b"permission_denied_submit") == len(SUBMITS)
    assert stat(w, b"permission_denied_can_do") == 2
    log = open(os.path.join(s.tmpdir, "spurd.log"), "rb").read()
    assert b"permission denied: submit 'no' from 127.0.0.1 (listener 127.0.0.1:" in log
    assert b"permission denied: can_do 'no' from 127.0.0.1" in log


def test_worker_refused_can_do_never_grabs_that_job(server_factory, tmp_path):
    pol = str(tmp_path / "policy")
    write(pol, "allow submit * any\nallow can_do mine loopback\n")
    s = server_factory("--policy=" + pol)
    c = s.connect()
    c.send_packet(SUBMIT_JOB_BG, b"theirs", b"", b"x")
    c.expect(JOB_CREATED)
    w = s.connect()
    w.send_packet(CAN_DO, b"theirs")
    expect_denied(w)
    w.send_packet(CAN_DO, b"mine")
    w.send_packet(GRAB_JOB)
    w.expect(NO_JOB)


def test_policy_unix_listener_and_cidr_principals(server_factory, tmp_path):
    sock = str(tmp_path / "s.sock")
    pol = str(tmp_path / "policy")
    write(pol, "allow submit u unix\n"
               "allow submit l \"listener:unix:%s\"\n"
               "allow submit n 127.0.0.2/32\n" % sock)
    s = server_factory("--unix=" + sock, "--policy=" + pol)
    tcp, u, two = s.connect(), UnixConn(sock), from_127_0_0_2(s)
    for conn, allowed in ((tcp, ()), (u, (b"u", b"l")), (two, (b"n",))):
        for f in (b"u", b"l", b"n"):
            conn.send_packet(SUBMIT_JOB_BG, f, b"", b"x")
            if f in allowed:
                conn.expect(JOB_CREATED)
            else:
                expect_denied(conn)


def test_listener_rule_names_a_unix_socket_of_the_longest_path(server_factory, tmp_path):
    # a unix socket path may have 107 bytes; the listener's name must keep all of it
    d = tempfile.mkdtemp(prefix="spur-long-")
    sock = os.path.join(d, "s" * (107 - len(d) - 1))
    assert len(sock) == 107
    pol = str(tmp_path / "policy")
    write(pol, "allow submit l \"listener:unix:%s\"\n" % sock)
    try:
        s = server_factory("--unix=" + sock, "--policy=" + pol)
        u = UnixConn(sock)
        u.send_packet(SUBMIT_JOB_BG, b"l", b"", b"x")
        u.expect(JOB_CREATED)
        tcp = s.connect()
        tcp.send_packet(SUBMIT_JOB_BG, b"l", b"", b"x")
        expect_denied(tcp)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_http_post_follows_the_policy(server_factory, tmp_path):
    if subprocess.run(["which", "curl"], capture_output=True).returncode != 0:
        pytest.skip("no curl")
    pol = str(tmp_path / "policy")
    write(pol, "allow submit ok listener:http\n")
    pf = str(tmp_path / "http-port")
    s = server_factory("--http-port=0", "--http-listen=127.0.0.1", "--http-port-file=" + pf,
                       "--policy=" + pol)
    port = int(open(pf).read())

    def post(func):
        r = subprocess.run(["curl", "-sS", "--max-time", str(DEADLINE), "-o", "/dev/null",
                            "-w", "%{http_code}", "-H", "X-Gearman-Background: true",
                            "--data-binary", "x", "http://127.0.0.1:%d/%s" % (port, func)],
                           capture_output=True, timeout=DEADLINE + 10)
        assert r.returncode == 0, r.stderr
        return int(r.stdout)

    assert post("no") == 403
    assert post("ok") == 200
    c = s.connect()
    c.send_packet(SUBMIT_JOB_BG, b"ok", b"", b"x")
    expect_denied(c)  # the TCP listener is not "http"


def test_sighup_reloads_the_policy_and_a_bad_file_keeps_the_old(server_factory, tmp_path):
    pol = str(tmp_path / "policy")
    write(pol, "allow submit f loopback\n")
    s = server_factory("--policy=" + pol)
    c = s.connect()
    c.send_packet(SUBMIT_JOB_BG, b"f", b"", b"x")
    c.expect(JOB_CREATED)

    write(pol, "deny submit f loopback\nallow submit g loopback\n")
    s.proc.send_signal(signal.SIGHUP)

    def refused_now():
        c.send_packet(SUBMIT_JOB_BG, b"f", b"", b"x")
        magic, cmd, body = c.read_packet()
        return cmd == ERROR and body.startswith(b"PERMISSION_DENIED\0")
    poll(refused_now, "the new policy never applied")
    c.send_packet(SUBMIT_JOB_BG, b"g", b"", b"x")
    c.expect(JOB_CREATED)

    write(pol, "allow submit f loopback\nallow sumbit g loopback\n")
    s.proc.send_signal(signal.SIGHUP)
    logf = os.path.join(s.tmpdir, "spurd.log")
    poll(lambda: b"policy not reloaded" in open(logf, "rb").read(), "no reload error logged")
    log = open(logf, "rb").read()
    assert ("%s:2: 'sumbit': expected submit, can_do or all" % pol).encode() in log
    c.send_packet(SUBMIT_JOB_BG, b"f", b"", b"x")
    expect_denied(c)  # the old (second) policy stays
    c.send_packet(SUBMIT_JOB_BG, b"g", b"", b"x")
    c.expect(JOB_CREATED)


def test_bad_policy_at_start_exits_1_with_file_and_line(tmp_path):
    binary = os.environ.get("SPURD")
    if not binary:
        pytest.skip("SPURD is not set")
    pol = str(tmp_path / "policy")
    write(pol, "# ok\nallow submit f loopback\nallow submit g 10.0.0.1/8\n")
    r = subprocess.run([binary, "--port=0", "--listen=127.0.0.1", "--policy=" + pol],
                       capture_output=True, timeout=DEADLINE)
    assert r.returncode == 1
    assert ("%s:3: '10.0.0.1/8' has address bits set past /8" % pol).encode() in r.stderr
    r = subprocess.run([binary, "--policy=" + str(tmp_path / "absent")], capture_output=True,
                       timeout=DEADLINE)
    assert r.returncode == 1
    assert b"cannot read policy file" in r.stderr
    r = subprocess.run([binary, "--check-policy=" + pol], capture_output=True, timeout=DEADLINE)
    assert r.returncode == 1 and b":3: " in r.stderr
    write(pol, "allow submit f loopback\n")
    r = subprocess.run([binary, "--check-policy=" + pol], capture_output=True, timeout=DEADLINE)
    assert r.returncode == 0 and r.stdout == ("%s: OK (1 rules)\n" % pol).encode()
    r = subprocess.run([binary, "--admin-allow=nobody", "--check-args"], capture_output=True,
                       timeout=DEADLINE)
    assert r.returncode == 1 and b"invalid --admin-allow" in r.stderr
