# SPDX-License-Identifier: BSD-3-Clause
"""spurd as packagers run it: -d for real, pid files, start-up errors, unix sockets, shutdown."""
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from conftest import free_port, poll, EXTERNAL
from gearman_wire import (CAN_DO, GRAB_JOB, JOB_ASSIGN, JOB_CREATED, NO_JOB,
                          SUBMIT_JOB_BG, WORK_COMPLETE, Conn)

pytestmark = pytest.mark.spur_only


@pytest.fixture
def spurd():
    binary = os.environ.get("SPURD")
    if not binary or EXTERNAL:
        pytest.skip("needs the spurd binary")
    return binary


def alive(pid):
    """Whether pid runs (a zombie nobody reaped counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):  # reaped before or after the open
        return False


def wait_gone(pid, timeout=20):
    deadline = time.monotonic() + timeout
    while alive(pid):
        assert time.monotonic() < deadline, f"process {pid} still running"
        time.sleep(0.01)


def wait_for(cond, what, timeout=20):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


@pytest.fixture
def daemons():
    """Pids of daemons started by the test; any still running afterwards is killed (and fails)."""
    pids = []
    yield pids
    left = [p for p in pids if alive(p)]
    for p in left:
        os.kill(p, signal.SIGKILL)
    assert not left, f"daemons left running: {left}"


def run_daemon(binary, cwd, *args):
    """Run `spurd -d ARGS` in cwd with pipes on stdout and stderr: it must return at once (the
    daemon lets go of them), so a hang here is a failure."""
    try:
        return subprocess.run([binary, "-d", "--listen=127.0.0.1", "--verbose=NOTICE"]
                              + list(args), cwd=str(cwd), capture_output=True, timeout=30)
    except subprocess.TimeoutExpired:
        if (cwd / "d.pid").exists():  # a daemon that kept our pipes: do not leave it behind
            os.kill(int((cwd / "d.pid").read_text()), signal.SIGKILL)
        raise


def start_daemon(binary, cwd, daemons, *args):
    """Start a daemon with relative pid, log and port files in cwd; return (pid, port)."""
    r = run_daemon(binary, cwd, "--port=0", "-P", "d.pid", "-l", "d.log",
                   "--port-file=d.port", *args)
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"" and r.stderr == b""
    with open(cwd / "d.pid") as f:
        pid = int(f.read())
    daemons.append(pid)
    assert alive(pid)
    with open(cwd / "d.port") as f:
        port = int(f.read())
    return pid, port


def stop_daemon(pid, cwd):
    """SIGTERM: the daemon exits promptly, removes its pid file and logs a last line."""
    os.kill(pid, signal.SIGTERM)
    wait_gone(pid)
    assert not (cwd / "d.pid").exists()
    assert "spurd stopped" in (cwd / "d.log").read_text().splitlines()[-1]


def echo(port):
    c = Conn(("127.0.0.1", port))
    c.echo_roundtrip(b"hello")
    c.close()


def test_daemon_detaches_writes_files_relative_to_its_start_directory(spurd, tmp_path, daemons):
    pid, port = start_daemon(spurd, tmp_path, daemons)
    echo(port)
    assert os.readlink(f"/proc/{pid}/cwd") == "/"
    assert "spurd listening" in (tmp_path / "d.log").read_text()
    stop_daemon(pid, tmp_path)


STORES = {
    "store": ["--store=sqlite:jobs.db"],
    "libsqlite3": ["-q", "libsqlite3", "--libsqlite3-db=jobs.db"],
}


def wait_replayed(cwd, count):
    wait_for(lambda: (cwd / "d.log").read_text().count("store: replayed") >= count,
             "the store replay")


@pytest.mark.parametrize("store", sorted(STORES))
def test_daemon_with_a_store_keeps_and_replays_background_jobs(spurd, tmp_path, daemons, store):
    pid, port = start_daemon(spurd, tmp_path, daemons, *STORES[store])
    wait_replayed(tmp_path, 1)
    assert (tmp_path / "jobs.db").exists(), "a relative store path is the start directory's"
    c = Conn(("127.0.0.1", port))
    c.send_packet(SUBMIT_JOB_BG, b"daemon_f", b"u1", b"payload")
    handle = c.expect(JOB_CREATED)
    c.close()
    stop_daemon(pid, tmp_path)

    pid, port = start_daemon(spurd, tmp_path, daemons, *STORES[store])
    wait_replayed(tmp_path, 2)
    w = Conn(("127.0.0.1", port))
    w.send_packet(CAN_DO, b"daemon_f")
    w.send_packet(GRAB_JOB)
    assert w.expect(JOB_ASSIGN) == handle + b"\0daemon_f\0payload"
    w.send_packet(WORK_COMPLETE, handle, b"")
    w.send_packet(GRAB_JOB)
    assert w.expect(NO_JOB) == b""
    w.close()
    stop_daemon(pid, tmp_path)


def test_daemon_on_a_relative_unix_socket(spurd, tmp_path, daemons):
    pid, _ = start_daemon(spurd, tmp_path, daemons, "--unix=d.sock")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(str(tmp_path / "d.sock"))
    s.sendall(b"version\n")
    assert s.recv(100).startswith(b"OK ")
    s.close()
    stop_daemon(pid, tmp_path)
    assert not (tmp_path / "d.sock").exists()


def test_daemon_pid_file_in_a_missing_directory_fails_with_exit_1(spurd, tmp_path, daemons):
    port = free_port()
    r = run_daemon(spurd, tmp_path, "--port=%d" % port, "--port-file=d.port", "-l", "d.log",
                   "-P", "missing/d.pid")
    assert r.returncode == 1
    assert b"cannot write pid file" in r.stderr and b"missing/d.pid" in r.stderr
    # the port file is written last, as the sign that spurd is up: a failed start leaves none
    assert not (tmp_path / "d.port").exists()
    # the daemon that bound the port is gone: nobody listens there any more
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5)


def test_daemon_store_that_cannot_open_fails_with_exit_1(spurd, tmp_path, daemons):
    (tmp_path / "jobs.db").write_bytes(b"this is not an SQLite database" * 100)
    r = run_daemon(spurd, tmp_path, "--port=0", "-l", "d.log", "-P", "d.pid",
                   "--store=sqlite:jobs.db")
    assert r.returncode == 1
    assert b"spurd: " in r.stderr
    assert not (tmp_path / "d.pid").exists()


def test_daemon_unknown_user_fails_with_exit_1(spurd, tmp_path, daemons):
    r = run_daemon(spurd, tmp_path, "--port=0", "-l", "d.log", "-P", "d.pid",
                   "--user=no-such-user-here")
    assert r.returncode == 1
    assert b"unknown user 'no-such-user-here'" in r.stderr
    assert not (tmp_path / "d.pid").exists()


def test_daemon_on_a_busy_port_fails_with_exit_1(spurd, tmp_path, daemons):
    busy = socket.socket()
    busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    port = busy.getsockname()[1]
    try:
        r = run_daemon(spurd, tmp_path, "--port=%d" % port, "-l", "d.log", "-P", "d.pid")
    finally:
        busy.close()
    assert r.returncode == 1
    assert b"Address already in use" in r.stderr
    assert not (tmp_path / "d.pid").exists()


def test_pid_and_port_files_replace_a_symlink_instead_of_following_it(spurd, tmp_path, daemons):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    os.symlink(victim, tmp_path / "d.pid")
    os.symlink(victim, tmp_path / "d.port")
    pid, port = start_daemon(spurd, tmp_path, daemons)
    assert victim.read_text() == "precious\n"
    assert not os.path.islink(tmp_path / "d.pid") and not os.path.islink(tmp_path / "d.port")
    assert oct(os.stat(tmp_path / "d.pid").st_mode & 0o777) == oct(0o644)
    echo(port)
    stop_daemon(pid, tmp_path)
    assert victim.read_text() == "precious\n"


# ------------------------------------------------------------ shutdown paths log a last line

def admin_line(addr, line):
    c = Conn(addr)
    c.send(line)
    return c


SHUTDOWNS = {
    "SIGTERM": lambda s: s.proc.send_signal(signal.SIGTERM),
    "SIGINT": lambda s: s.proc.send_signal(signal.SIGINT),
    "SIGUSR1": lambda s: s.proc.send_signal(signal.SIGUSR1),
    "admin": lambda s: admin_line(s.addr, b"shutdown\n"),
    "admin-graceful": lambda s: admin_line(s.addr, b"shutdown graceful\n"),
}


@pytest.mark.parametrize("how", sorted(SHUTDOWNS))
def test_every_shutdown_path_logs_a_last_line(server_factory, how):
    s = server_factory()
    s.connect().echo_roundtrip()
    SHUTDOWNS[how](s)
    assert s.proc.wait(timeout=20) == 0
    assert "spurd stopped (exit code 0)" in s.stderr_text().splitlines()[-1]


# ------------------------------------------------------------ --unix never deletes others' files

def unix_version(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(path)
    s.sendall(b"version\n")
    data = s.recv(100)
    s.close()
    return data


def spurd_once(binary, *args):
    return subprocess.run([binary, "--listen=127.0.0.1"] + list(args), capture_output=True,
                          timeout=30)


def test_failed_start_on_a_busy_port_leaves_the_running_servers_socket(spurd, server_factory,
                                                                      tmp_path):
    path = str(tmp_path / "s.sock")
    first = server_factory("--unix=" + path)
    r = spurd_once(spurd, "--port=%d" % first.addr[1], "--unix=" + path)
    assert r.returncode == 1 and b"Address already in use" in r.stderr
    assert unix_version(path).startswith(b"OK ")


def test_live_unix_socket_is_not_taken_over(spurd, server_factory, tmp_path):
    path = str(tmp_path / "s.sock")
    server_factory("--unix=" + path)
    r = spurd_once(spurd, "--port=0", "--unix=" + path)
    assert r.returncode == 1
    assert b"in use by another server" in r.stderr
    assert unix_version(path).startswith(b"OK ")


def test_unix_path_that_is_not_a_socket_is_never_deleted(spurd, tmp_path):
    path = tmp_path / "queue.db"
    path.write_bytes(b"important data")
    r = spurd_once(spurd, "--port=0", "--unix=" + str(path))
    assert r.returncode == 1
    assert b"not a socket" in r.stderr
    assert path.read_bytes() == b"important data"


def test_stale_unix_socket_is_replaced(server_factory, tmp_path):
    path = str(tmp_path / "s.sock")
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(path)
    stale.close()  # the file stays, nobody listens: connecting is refused
    server_factory("--unix=" + path)
    assert unix_version(path).startswith(b"OK ")


def test_socket_replaced_while_running_is_left_alone_at_exit(server_factory, tmp_path):
    path = str(tmp_path / "s.sock")
    s = server_factory("--unix=" + path)
    os.unlink(path)
    other = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    other.bind(path)
    other.listen(1)
    try:
        assert s.stop() == 0
        assert os.path.exists(path), "another process's socket was removed"
    finally:
        other.close()


# ------------------------------------------------------------ --listen-retry

def test_listen_retry_waits_for_a_busy_port_to_be_freed(spurd, tmp_path):
    busy = socket.socket()
    busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    port = busy.getsockname()[1]
    log = tmp_path / "s.log"
    proc = subprocess.Popen([spurd, "--listen=127.0.0.1", "--port=%d" % port, "--verbose=NOTICE",
                             "--listen-retry=120", "-l", str(log),
                             "--port-file=" + str(tmp_path / "s.port")])
    try:
        wait_for(lambda: log.exists() and "retrying" in log.read_text(), "the retry log line")
        assert proc.poll() is None, "exited instead of retrying"
        busy.close()
        wait_for(lambda: (tmp_path / "s.port").exists(), "the server to come up", timeout=60)
        echo(port)
        assert log.read_text().count("retrying") == 1, "logged once"
    finally:
        busy.close()
        proc.terminate()
        assert proc.wait(timeout=20) == 0


def test_busy_port_without_listen_retry_fails_at_once(spurd):
    busy = socket.socket()
    busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    try:
        r = spurd_once(spurd, "--port=%d" % busy.getsockname()[1])
    finally:
        busy.close()
    assert r.returncode == 1 and b"Address already in use" in r.stderr


# ------------------------------------------------------------ syslog

def test_daemon_without_log_file_logs_to_syslog(spurd, tmp_path):
    """In a private mount namespace, /dev is replaced by a directory holding a null device and
    a datagram socket the test reads: that is where syslog(3) sends its lines."""
    dev = tmp_path / "dev"
    dev.mkdir()
    (dev / "null").touch()
    log = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    log.bind(str(dev / "log"))
    log.settimeout(20)
    script = ("mount --bind /dev/null {d}/null && mount --bind {d} /dev && exec {s} -d "
              "--listen=127.0.0.1 --port=0 --port-file={t}/s.port -P {t}/s.pid "
              "--verbose=NOTICE").format(d=dev, s=spurd, t=tmp_path)
    try:
        r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                           capture_output=True, timeout=30)
    except subprocess.TimeoutExpired:
        if (tmp_path / "s.pid").exists():
            os.kill(int((tmp_path / "s.pid").read_text()), signal.SIGKILL)
        raise
    if r.returncode != 0 and not (tmp_path / "s.pid").exists():
        log.close()
        pytest.skip("cannot make a private mount namespace here: %r" % r.stderr)
    assert r.stdout == b"" and r.stderr == b"", "a daemon without -l writes nothing on the terminal"
    pid = int((tmp_path / "s.pid").read_text())
    lines = []
    try:
        while not any(b"spurd listening" in x for x in lines):
            lines.append(log.recv(4096))
        os.kill(pid, signal.SIGTERM)
        while not any(b"spurd stopped" in x for x in lines):
            lines.append(log.recv(4096))
    finally:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)
        log.close()
    wait_gone(pid)
    assert all(x.startswith(b"<") and b"spurd[" in x for x in lines)
    assert any(x.startswith(b"<29>") for x in lines), "daemon.notice is priority 29"


# ------------------------------------------------------------ TCP_USER_TIMEOUT

def server_side_socket(pid, client):
    """A duplicate of the server's accepted socket for our client connection, taken with
    pidfd_getfd(2) (x86_64 only; root or ptrace rights needed), or None if that is impossible."""
    import ctypes
    if os.uname().machine != "x86_64" or not hasattr(os, "pidfd_open"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    pidfd = os.pidfd_open(pid)
    try:
        want = client.getsockname()
        for name in os.listdir(f"/proc/{pid}/fd"):
            if not os.readlink(f"/proc/{pid}/fd/{name}").startswith("socket:"):
                continue
            fd = libc.syscall(438, pidfd, int(name), 0)  # pidfd_getfd
            if fd < 0:
                return None
            s = socket.socket(fileno=fd)
            try:
                if s.family == socket.AF_INET and s.getpeername() == want:
                    return s
            except OSError:
                pass
            s.close()
    finally:
        os.close(pidfd)
    return None


@pytest.mark.parametrize("args,want_ms", [
    ((), 0),
    (("--keepalive-idle=60", "--keepalive-interval=10", "--keepalive-count=6"), 120000),
    (("--keepalive-idle=60", "--tcp-user-timeout=7"), 7000),
])
def test_accepted_sockets_get_tcp_user_timeout(server_factory, args, want_ms):
    s = server_factory(*args)
    c = s.connect()
    c.echo_roundtrip()  # accepted and tuned
    mine = server_side_socket(s.proc.pid, c.sock)
    if mine is None:
        pytest.skip("cannot look at the server's socket (pidfd_getfd)")
    try:
        assert mine.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT) == want_ms
    finally:
        mine.close()
        c.close()


DEAD_PEER = r'''
import os, socket, struct, subprocess, sys, time
sys.path.insert(0, sys.argv[1])
from gearman_wire import CAN_DO, JOB_CREATED, PRE_SLEEP, SUBMIT_JOB_BG, Conn, packet
spurd, d, bound = sys.argv[2], sys.argv[3], float(sys.argv[4])
subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
p = subprocess.Popen([spurd, "--listen=127.0.0.1", "--port=0", "--port-file=" + d + "/port",
                      "--unix=" + d + "/sock"] + sys.argv[5:], stderr=subprocess.DEVNULL)
try:
    deadline = time.monotonic() + 30
    while not os.path.exists(d + "/port"):
        assert time.monotonic() < deadline and p.poll() is None, "spurd did not start"
        time.sleep(0.01)
    w = Conn(("127.0.0.1", int(open(d + "/port").read())))
    w.send_packet(CAN_DO, b"dead_f")
    w.send_packet(PRE_SLEEP)
    u = socket.socket(socket.AF_UNIX)
    u.settimeout(30)
    u.connect(d + "/sock")
    def workers():
        u.sendall(b"workers\n")
        buf = b""
        while not buf.endswith(b".\n"):
            buf += u.recv(65536)
        return buf
    while b"dead_f" not in workers():  # the worker is registered and asleep
        time.sleep(0.01)
    # the worker's host vanishes: nothing sent to it is acknowledged any more
    subprocess.run(["ip", "link", "set", "lo", "down"], check=True)
    t0 = time.monotonic()
    u.sendall(packet(SUBMIT_JOB_BG, b"dead_f", b"", b"x"))  # spurd sends the worker a NOOP
    hdr = b""
    while len(hdr) < 12:
        hdr += u.recv(12 - len(hdr))
    assert struct.unpack(">II", hdr[4:])[0] == JOB_CREATED
    u.recv(struct.unpack(">II", hdr[4:])[1], socket.MSG_WAITALL)
    while b"dead_f" in workers():
        if time.monotonic() - t0 > bound:
            print("STILL-CONNECTED")
            sys.exit(1)
        time.sleep(0.05)
    print("CLOSED")
finally:
    p.kill()
    p.wait()
'''


@pytest.mark.parametrize("args", [
    ("--keepalive-idle=1", "--keepalive-interval=1", "--keepalive-count=1"),
    ("--tcp-user-timeout=2",),
])
def test_worker_that_vanished_with_unacknowledged_data_is_closed(spurd, tmp_path, args):
    """In a private network namespace, loopback goes down while spurd has a NOOP for a sleeping
    worker: keepalive alone never probes (data is in flight) and the OS default keeps
    retransmitting for about 15 minutes; TCP_USER_TIMEOUT (2 s here) closes the connection.
    The bound of 60 s is far from both."""
    wire_dir = os.path.dirname(os.path.abspath(__file__))
    try:
        r = subprocess.run(["unshare", "-n", sys.executable, "-c", DEAD_PEER, wire_dir, spurd,
                            str(tmp_path), "60"] + list(args), capture_output=True, timeout=120)
    except FileNotFoundError:
        pytest.skip("unshare is not installed")
    if b"unshare" in r.stderr and r.returncode != 0 and not r.stdout:
        pytest.skip("cannot make a private network namespace here: %r" % r.stderr)
    assert r.stdout.strip() == b"CLOSED", r.stdout + r.stderr


def test_daemon_log_file_that_cannot_be_opened_fails_with_exit_1(spurd, tmp_path, daemons):
    r = run_daemon(spurd, tmp_path, "--port=0", "-P", "d.pid", "-l", "missing/d.log")
    assert r.returncode == 1
    assert b"cannot open log file" in r.stderr
    assert not (tmp_path / "d.pid").exists()


def test_start_up_error_is_printed_once(spurd, tmp_path):
    """Logging to stderr (no -l), a start-up error used to show twice: the ERROR log line and
    the "spurd:" line. It is printed once; with a log file the file gets the log line."""
    busy = socket.socket()
    busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    port = busy.getsockname()[1]
    try:
        r = spurd_once(spurd, "--port=%d" % port)
        log = tmp_path / "s.log"
        r2 = spurd_once(spurd, "--port=%d" % port, "-l", str(log))
    finally:
        busy.close()
    assert r.returncode == 1
    assert r.stderr.count(b"Address already in use") == 1, r.stderr
    assert r.stderr.startswith(b"spurd: cannot listen on "), r.stderr
    assert r2.returncode == 1 and r2.stderr.count(b"Address already in use") == 1, r2.stderr
    # (a debug build puts file:line between the level and the text)
    logged = log.read_bytes()
    assert logged.count(b"cannot listen on ") == 1 and b" ERROR " in logged, logged


def test_log_file_that_cannot_be_opened_gives_the_reason(spurd, tmp_path):
    # not a daemon: spurd goes on, logging to stderr, and says why the file failed
    p = subprocess.Popen([spurd, "--listen=127.0.0.1", "--port=0", "--port-file",
                          str(tmp_path / "port"), "-l", str(tmp_path / "missing" / "s.log")],
                         stderr=subprocess.PIPE)
    try:
        poll(lambda: (tmp_path / "port").exists(), "the port file")
    finally:
        p.terminate()
        _, err = p.communicate(timeout=30)
    assert (b"spurd: cannot open log file '%s': No such file or directory; logging to stderr\n"
            % str(tmp_path / "missing" / "s.log").encode()) in err, err
