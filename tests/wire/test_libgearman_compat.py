# SPDX-License-Identifier: BSD-3-Clause
"""libgearman-compat against a real job server, through small C programs.

Every scenario runs the `lgc_driver` (libgearman-compat/tests/lgc_driver.c), the examples or the
`spur` tool as subprocesses with bounded timeouts. The job server comes from JOB_SERVERS below:
Debian's gearmand today; add "spurd" to run everything against spurd as well.
Binaries come from $SPUR_BUILDDIR (set by `make check`).
"""
import os
import shutil
import socket
import struct
import threading
import subprocess
import tempfile
import time

import pytest

from conftest import free_port

# The job servers every test runs against. Add "spurd" once its job engine lands.
JOB_SERVERS = ["gearmand", "spurd"]

BUILDDIR = os.environ.get("SPUR_BUILDDIR")
SRCDIR = os.environ.get("SPUR_SRCDIR",
                        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
DEADLINE = 30  # seconds any single program may run


def lgc_path(rel):
    """Path of a built program under libgearman-compat/, or skip when it is not built."""
    if not BUILDDIR:
        pytest.skip("SPUR_BUILDDIR is not set (run through `make check`)")
    path = os.path.join(BUILDDIR, "libgearman-compat", rel)
    if not os.path.exists(path):
        pytest.skip(f"{path} is not built (make check builds it)")
    return path


def driver():
    return lgc_path("tests/lgc_driver")


def parse(out):
    """key=value lines -> dict (later keys win)."""
    kv = {}
    for line in out.splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            kv[k] = v
    return kv


def run(args, timeout=DEADLINE, input=None):
    """Run a program to completion; returns (exit status, stdout, stderr)."""
    p = subprocess.run([str(a) for a in args], input=input, capture_output=True, timeout=timeout)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def drive(addrs, *args, timeout=DEADLINE):
    """Run lgc_driver against the given servers and parse its output."""
    rc, out, err = run([driver(), "-s", ",".join(addrs)] + [str(a) for a in args], timeout=timeout)
    assert rc == 0, f"lgc_driver {args} exited {rc}\n{out}\n{err}"
    return parse(out)


class Bg:
    """A background program; stopped (and reaped) at the end of the test."""

    def __init__(self, args):
        self.args = [str(a) for a in args]
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     stdin=subprocess.PIPE)
        self.out = b""
        self.err = b""

    def wait(self, timeout=DEADLINE):
        """Wait for exit; returns (status, parsed stdout)."""
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
            raise AssertionError(f"{self.args} did not exit within {timeout}s:\n{out}\n{err}")
        self.out, self.err = out, err
        return self.proc.returncode, parse(out.decode(errors="replace"))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


@pytest.fixture
def bg():
    started = []

    def make(*args):
        b = Bg(args)
        started.append(b)
        return b

    yield make
    for b in started:
        b.stop()


@pytest.fixture
def jobserver_factory(request, gearmand_factory, server_factory):
    """Start a job server of the kind given by the test's `jobserver` parameter."""
    kind = request.param if hasattr(request, "param") else JOB_SERVERS[0]

    def make():
        if kind == "gearmand":
            return gearmand_factory()
        return server_factory()

    return make


@pytest.fixture
def jobserver(jobserver_factory):
    return jobserver_factory()


def pytest_generate_tests(metafunc):
    if "jobserver_factory" in metafunc.fixturenames:
        metafunc.parametrize("jobserver_factory", JOB_SERVERS, indirect=True)


def addr(server):
    return "%s:%d" % server.addr


def admin(server, line):
    """One admin list command ("status", "workers"): the lines before the closing '.'."""
    c = server.connect()
    try:
        c.send(line.encode())
        lines = []
        while True:
            got = c.read_line().decode(errors="replace")
            if got.rstrip("\r\n") == ".":
                return "".join(lines)
            lines.append(got)
    finally:
        c.close()


def wait_until(pred, what, timeout=10.0):
    """Poll pred() until true; fail after timeout seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def status_row(server, func):
    """(total, running, workers) from the admin 'status' list, or None."""
    for line in admin(server, "status\n").splitlines():
        parts = line.split("\t")
        if len(parts) == 4 and parts[0] == func:
            return tuple(int(x) for x in parts[1:])
    return None


def wait_workers(server, func, n=1):
    wait_until(lambda: (status_row(server, func) or (0, 0, 0))[2] >= n, f"{n} worker(s) for {func}")


def refused_addr():
    """An address nothing listens on (connect is refused)."""
    return "127.0.0.1:%d" % free_port()


# ---------------------------------------------------------------- no server needed

def test_selftest_needs_no_server():
    rc, out, err = run([driver(), "selftest"])
    assert rc == 0, out + err
    assert parse(out)["failures"] == "0"


# ---------------------------------------------------------------- client: do

def test_do_returns_reversed_result(jobserver, bg):
    w = bg(driver(), "-s", addr(jobserver), "-c", 1, "worker", "rev")
    r = drive([addr(jobserver)], "do", "rev", "hello world")
    assert r["rc"] == "GEARMAN_SUCCESS"
    assert r["result"] == "dlrow olleh"
    assert r["handle"] != ""
    assert w.wait()[1]["done"] == "1"


@pytest.mark.parametrize("prio", ["high", "low", "normal"])
def test_do_priorities(jobserver, bg, prio):
    w = bg(driver(), "-s", addr(jobserver), "-c", 1, "worker", "rev")
    r = drive([addr(jobserver)], "-P", prio, "do", "rev", "abc")
    assert r["rc"] == "GEARMAN_SUCCESS" and r["result"] == "cba"
    w.wait()


def test_do_with_unique_reaches_worker(jobserver):
    # the job waits in the queue; a one-shot grab shows what the worker received
    c = Bg([driver(), "-s", addr(jobserver), "-u", "my-unique", "do", "uq", "payload"])
    try:
        g = drive([addr(jobserver)], "-t", 10000, "grab", "uq")
        assert g["rc"] == "GEARMAN_SUCCESS"
        assert g["unique"] == "my-unique"
        assert g["workload"] == "payload"
        assert g["function"] == "uq"
        assert g["complete_rc"] == "GEARMAN_SUCCESS"
        assert g["again_rc"] == "GEARMAN_SUCCESS"  # a second terminal packet is not sent
        status, r = c.wait()
        assert r["rc"] == "GEARMAN_SUCCESS" and r["result"] == "daolyap"
    finally:
        c.stop()


def test_do_collects_data_and_complete(jobserver, bg):
    w = bg(driver(), "-s", addr(jobserver), "-m", "chatty", "-c", 1, "worker", "rev")
    r = drive([addr(jobserver)], "do", "rev", "abcdef")
    assert r["rc"] == "GEARMAN_SUCCESS"
    assert r["result"] == "fedcba"  # WORK_DATA "fed" + WORK_COMPLETE "cba"
    assert r["status"] == "2/2"
    w.wait()


def test_do_worker_fail(jobserver, bg):
    w = bg(driver(), "-s", addr(jobserver), "-m", "fail", "-c", 1, "worker", "rev")
    r = drive([addr(jobserver)], "do", "rev", "x")
    assert r["rc"] == "GEARMAN_WORK_FAIL"
    assert r["result_size"] == "0"
    assert w.wait()[1]["rc"] == "GEARMAN_WORK_FAIL"


def test_exception_forwarded_only_with_option(jobserver, bg):
    w = bg(driver(), "-s", addr(jobserver), "-m", "exception", "-c", 2, "worker", "rev")
    r = drive([addr(jobserver)], "-x", "do", "rev", "x")
    assert r["rc"] == "GEARMAN_WORK_EXCEPTION"
    r = drive([addr(jobserver)], "do", "rev", "x")
    assert r["rc"] == "GEARMAN_WORK_FAIL"  # the server turns it into WORK_FAIL
    w.wait()


def test_exception_callback_gets_payload(jobserver, bg):
    w = bg(driver(), "-s", addr(jobserver), "-m", "exception", "-c", 1, "worker", "rev")
    r = drive([addr(jobserver)], "-x", "tasks", "rev", 1)
    assert r["exception"] == "1"
    assert r["exception_data"] == "boom"
    assert r["fail"] == "0"
    w.wait()


def test_v2_worker_function(jobserver, bg):
    w = bg(driver(), "-s", addr(jobserver), "-m", "v2", "-c", 1, "worker", "rev")
    r = drive([addr(jobserver)], "do", "rev", "v2!")
    assert r["rc"] == "GEARMAN_SUCCESS" and r["result"] == "!2v"
    w.wait()


def test_worker_shutdown_return(jobserver, bg):
    w = bg(driver(), "-s", addr(jobserver), "-m", "shutdown", "worker", "rev")
    r = drive([addr(jobserver)], "do", "rev", "bye")
    assert r["rc"] == "GEARMAN_SUCCESS" and r["result"] == "eyb"
    status, wr = w.wait()
    assert wr["rc"] == "GEARMAN_SHUTDOWN" and wr["done"] == "0"


def test_empty_result_is_success(jobserver, bg):
    w = bg(driver(), "-s", addr(jobserver), "-m", "nullresult", "-c", 1, "worker", "rev")
    r = drive([addr(jobserver)], "do", "rev", "x")
    assert r["rc"] == "GEARMAN_SUCCESS" and r["result_size"] == "0"
    w.wait()


# ---------------------------------------------------------------- client: background and status

def test_background_then_status_until_done(jobserver, bg):
    r = drive([addr(jobserver)], "bg", "bgf", "payload")
    assert r["rc"] == "GEARMAN_SUCCESS"
    handle = r["handle"]
    assert handle
    s = drive([addr(jobserver)], "status", handle)
    assert (s["rc"], s["known"], s["running"]) == ("GEARMAN_SUCCESS", "1", "0")
    assert s["rc_summary"] == "GEARMAN_JOB_EXISTS"
    w = bg(driver(), "-s", addr(jobserver), "-c", 1, "worker", "bgf")
    w.wait()
    s = drive([addr(jobserver)], "status", handle)
    assert (s["known"], s["running"]) == ("0", "0")
    assert s["rc_summary"] == "GEARMAN_SUCCESS"


def test_status_of_running_job(jobserver, bg):
    w = bg(driver(), "-s", addr(jobserver), "-m", "hang", "worker", "hang")
    r = drive([addr(jobserver)], "bg", "hang", "x")
    handle = r["handle"]
    wait_until(lambda: drive([addr(jobserver)], "status", handle)["running"] == "1",
               "the job to run")
    s = drive([addr(jobserver)], "status", handle)
    assert s["rc_summary"] == "GEARMAN_IN_PROGRESS"
    assert s["status"] == "0/1"  # the hanging worker sends WORK_STATUS 0/1
    t = drive([addr(jobserver)], "taskstatus", handle)
    assert (t["rc"], t["known"], t["running"], t["callbacks"]) == ("GEARMAN_SUCCESS", "1", "1", "1")
    w.stop()


@pytest.mark.parametrize("prio", ["high", "low"])
def test_background_priorities(jobserver, bg, prio):
    r = drive([addr(jobserver)], "-P", prio, "bg", "bgp", "x")
    assert r["rc"] == "GEARMAN_SUCCESS" and r["handle"]
    assert status_row(jobserver, "bgp")[0] == 1
    w = bg(driver(), "-s", addr(jobserver), "-c", 1, "worker", "bgp")
    w.wait()


# ---------------------------------------------------------------- client: task API

def test_many_tasks_in_one_run(jobserver, bg):
    n = 60
    w = bg(driver(), "-s", addr(jobserver), "-c", n, "worker", "rev")
    r = drive([addr(jobserver)], "tasks", "rev", n)
    assert r["added"] == str(n)
    assert r["rc"] == "GEARMAN_SUCCESS"
    assert r["created"] == str(n)
    assert r["complete"] == str(n)
    assert r["wrong"] == "0"
    assert r["task_success"] == str(n) and r["handles"] == str(n)
    assert r["active"] == "0" and r["has_tasks_after_free"] == "0"
    w.wait()


def test_non_blocking_run_tasks(jobserver, bg):
    # the client submits while no worker exists, so its jobs cannot finish during the first
    # run_tasks calls: a non-blocking run_tasks must return GEARMAN_IO_WAIT rather than block
    fn = b"nbrev"
    client = bg(driver(), "-s", addr(jobserver), "-n", "tasks", fn.decode(), 10)
    admin = jobserver.connect()
    for _ in range(2000):  # bounded poll until the server holds the 10 submitted jobs
        admin.send(b"status\n")
        listing = admin.read_until(b".\n")
        if (fn + b"\t10\t") in listing:
            break
    assert (fn + b"\t10\t") in listing, listing
    w = bg(driver(), "-s", addr(jobserver), "-c", 10, "worker", fn.decode())
    status, r = client.wait()
    assert status == 0, (client.out, client.err)
    assert r["rc"] == "GEARMAN_SUCCESS"
    assert r["complete"] == "10" and r["wrong"] == "0"
    assert int(r["io_waits"]) >= 1  # run_tasks returned GEARMAN_IO_WAIT instead of blocking
    w.wait()


def test_headers_compile_as_cplusplus(tmp_path):
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    src = tmp_path / "t.cc"
    src.write_text('#include <libgearman/gearman.h>\n#include <libgearman-1.0/gearman.h>\n'
                   'int main() { gearman_client_st c; gearman_client_create(&c);\n'
                   '  gearman_return_t rc = GEARMAN_SUCCESS; return gearman_failed(rc); }\n')
    for std in ("c++11", "c++17"):
        p = subprocess.run([cxx, "-std=" + std, "-Wall", "-Wextra", "-Wpedantic", "-Werror",
                            "-fsyntax-only", "-I", os.path.join(SRCDIR, "libgearman-compat"),
                            str(src)], capture_output=True)
        assert p.returncode == 0, p.stderr.decode()
    csrc = tmp_path / "t.c"
    csrc.write_text(src.read_text().replace("int main()", "int main(void)"))
    for std in ("c99", "c11"):
        p = subprocess.run(["cc", "-std=" + std, "-Wall", "-Wextra", "-Wpedantic", "-Werror",
                            "-fsyntax-only", "-I", os.path.join(SRCDIR, "libgearman-compat"),
                            str(csrc)], capture_output=True)
        assert p.returncode == 0, p.stderr.decode()


def test_task_callbacks_data_warning_status(jobserver, bg):
    w = bg(driver(), "-s", addr(jobserver), "-m", "chatty", "-c", 3, "worker", "rev")
    r = drive([addr(jobserver)], "tasks", "rev", 3)
    assert (r["data"], r["warning"], r["status"], r["complete"]) == ("3", "3", "6", "3")
    assert r["wrong"] == "0"  # data chunks + complete payload reassemble the result
    w.wait()


def test_task_fail_callback(jobserver, bg):
    w = bg(driver(), "-s", addr(jobserver), "-m", "fail", "-c", 4, "worker", "rev")
    r = drive([addr(jobserver)], "tasks", "rev", 4)
    assert r["fail"] == "4" and r["complete"] == "0" and r["task_success"] == "0"
    w.wait()


def test_background_tasks(jobserver):
    r = drive([addr(jobserver)], "bgtasks", "bgt", 30)
    assert r["rc"] == "GEARMAN_SUCCESS"
    assert r["created"] == "30" and r["task_success"] == "30" and r["handles"] == "30"
    assert status_row(jobserver, "bgt")[0] == 30


# ---------------------------------------------------------------- echo

@pytest.mark.parametrize("cmd", ["echo", "wecho"])
def test_echo(jobserver, cmd):
    assert drive([addr(jobserver)], cmd, "ping")["rc"] == "GEARMAN_SUCCESS"
    assert drive([addr(jobserver)], "-z", 1 << 20, cmd, "")["rc"] == "GEARMAN_SUCCESS"


def test_echo_refused_server(jobserver):
    r = drive([refused_addr()], "echo", "ping")
    assert r["rc"] == "GEARMAN_COULD_NOT_CONNECT"


# ---------------------------------------------------------------- execute and epoch

def test_execute_foreground_result(jobserver, bg):
    w = bg(driver(), "-s", addr(jobserver), "-m", "chatty", "-c", 1, "worker", "rev")
    r = drive([addr(jobserver)], "execute", "rev", "execute")
    assert r["rc"] == "GEARMAN_SUCCESS" and r["result"] == "etucexe"
    w.wait()


def test_execute_background(jobserver):
    r = drive([addr(jobserver)], "-b", "-P", "high", "execute", "exb", "x")
    assert r["rc"] == "GEARMAN_SUCCESS" and r["handle"]
    assert status_row(jobserver, "exb")[0] == 1


def test_epoch_job_due_now_runs(jobserver, bg):
    r = drive([addr(jobserver)], "-e", 0, "execute", "ep", "epoch")
    assert r["rc"] == "GEARMAN_SUCCESS" and r["handle"]
    w = bg(driver(), "-s", addr(jobserver), "-c", 1, "worker", "ep")
    w.wait()
    assert drive([addr(jobserver)], "status", r["handle"])["known"] == "0"


def test_epoch_job_waits_until_due(jobserver, bg):
    r = drive([addr(jobserver)], "-e", 2, "execute", "ep2", "later")
    handle = r["handle"]
    assert r["rc"] == "GEARMAN_SUCCESS" and handle
    submitted = time.monotonic()
    # A worker that re-grabs every 200 ms (gearmand 1.1.20 never wakes sleepers for epoch jobs).
    w = bg(driver(), "-s", addr(jobserver), "-t", 200, "-c", 1, "worker", "ep2")
    w.wait(timeout=20)
    assert time.monotonic() - submitted >= 1.0  # not before it was due
    assert drive([addr(jobserver)], "status", handle)["known"] == "0"


# ---------------------------------------------------------------- timeouts and failures

def test_client_timeout_when_worker_never_answers(jobserver, bg):
    w = bg(driver(), "-s", addr(jobserver), "-m", "hang", "worker", "slow")
    wait_workers(jobserver, "slow")
    start = time.monotonic()
    r = drive([addr(jobserver)], "-t", 700, "do", "slow", "x")
    elapsed = time.monotonic() - start
    assert r["rc"] == "GEARMAN_TIMEOUT"
    assert 0.6 <= elapsed < 10
    assert r["status"] == "0/1"  # the one WORK_STATUS arrived before the silence


def test_client_timeout_without_worker(jobserver):
    start = time.monotonic()
    r = drive([addr(jobserver)], "-t", 300, "do", "nobody-does-this", "x")
    assert r["rc"] == "GEARMAN_TIMEOUT"
    assert r["handle"] != ""  # JOB_CREATED came; the result did not
    assert 0.25 <= time.monotonic() - start < 10


def test_worker_grab_timeout(jobserver):
    start = time.monotonic()
    r = drive([addr(jobserver)], "-t", 300, "grab", "idle")
    assert r["rc"] == "GEARMAN_TIMEOUT"
    assert 0.25 <= time.monotonic() - start < 10


def test_worker_non_blocking_no_jobs(jobserver):
    r = drive([addr(jobserver)], "-n", "grab", "idle")
    assert r["rc"] == "GEARMAN_NO_JOBS"


def test_could_not_connect(jobserver):
    assert drive([refused_addr()], "do", "f", "x")["rc"] == "GEARMAN_COULD_NOT_CONNECT"
    assert drive([refused_addr()], "bg", "f", "x")["rc"] == "GEARMAN_COULD_NOT_CONNECT"
    assert drive([refused_addr()], "grab", "f")["rc"] == "GEARMAN_COULD_NOT_CONNECT"


def test_server_goes_away_mid_job(jobserver_factory, bg):
    server = jobserver_factory()
    w = bg(driver(), "-s", addr(server), "-m", "hang", "worker", "mid")
    c = bg(driver(), "-s", addr(server), "do", "mid", "x")
    wait_until(lambda: (status_row(server, "mid") or (0, 0, 0))[1] == 1, "the job to run")
    server.stop()
    status, r = c.wait(timeout=20)
    assert r["rc"] == "GEARMAN_LOST_CONNECTION"
    w.stop()


def test_failover_to_second_server(jobserver, bg):
    servers = [refused_addr(), addr(jobserver)]
    w = bg(driver(), "-s", ",".join(servers), "-c", 1, "worker", "fo")
    r = drive(servers, "do", "fo", "failover")
    assert r["rc"] == "GEARMAN_SUCCESS" and r["result"] == "revoliaf"
    r = drive(servers, "bg", "fo2", "x")
    assert r["rc"] == "GEARMAN_SUCCESS"
    assert status_row(jobserver, "fo2")[0] == 1
    assert drive(servers, "echo", "x")["rc"] == "GEARMAN_COULD_NOT_CONNECT"  # echo asks every server
    w.wait()


def test_worker_serves_two_servers(jobserver_factory, bg):
    a, b = jobserver_factory(), jobserver_factory()
    w = bg(driver(), "-s", f"{addr(a)},{addr(b)}", "-c", 2, "worker", "two")
    ra = drive([addr(a)], "do", "two", "on-a")
    rb = drive([addr(b)], "do", "two", "on-b")
    assert ra["result"] == "a-no" and rb["result"] == "b-no"
    w.wait()


# ---------------------------------------------------------------- large payloads

def test_8_mib_round_trip(jobserver, bg):
    size = 8 << 20
    w = bg(driver(), "-s", addr(jobserver), "-c", 1, "worker", "big")
    r = drive([addr(jobserver)], "-z", size, "do", "big", "", timeout=60)
    assert r["rc"] == "GEARMAN_SUCCESS"
    assert r["result_size"] == str(size)
    assert r["reversed"] == "1"
    w.wait(timeout=60)


# ---------------------------------------------------------------- worker registration

def test_register_unregister_and_identifier(jobserver):
    p = Bg([driver(), "-s", addr(jobserver), "-i", "lgc-test-worker", "register", "fa", "fb", "fc"])
    try:
        line = p.proc.stdout.readline()
        got = {}
        while line and line.strip() != b"ready":
            k, _, v = line.decode().strip().partition("=")
            got[k] = v
            line = p.proc.stdout.readline()
        assert got["register_fa"] == "GEARMAN_SUCCESS"
        assert got["exist"] == "1" and got["exist_after"] == "0"
        assert got["unregister_rc"] == "GEARMAN_SUCCESS"
        assert got["unregister_again_rc"] == "GEARMAN_NO_REGISTERED_FUNCTION"
        rows = [l for l in admin(jobserver, "workers\n").splitlines() if "lgc-test-worker" in l]
        assert len(rows) == 1
        funcs = rows[0].split(":", 1)[1].split()
        assert sorted(funcs) == ["fb", "fc"]
        p.proc.stdin.write(b"go\n")
        p.proc.stdin.flush()
        line = p.proc.stdout.readline()
        while line and line.strip() != b"ready2":
            k, _, v = line.decode().strip().partition("=")
            got[k] = v
            line = p.proc.stdout.readline()
        assert got["unregister_all_rc"] == "GEARMAN_SUCCESS"
        assert got["unregister_all_again_rc"] == "GEARMAN_NO_REGISTERED_FUNCTIONS"
        rows = [l for l in admin(jobserver, "workers\n").splitlines() if "lgc-test-worker" in l]
        assert rows[0].split(":", 1)[1].split() == []
        p.proc.stdin.write(b"go\n")
        p.proc.stdin.flush()
        assert p.wait()[0] == 0
    finally:
        p.stop()


class FakeServer:
    """A scripted one-connection-at-a-time Gearman server on a thread, for exact wire checks.
    replies maps a request command to the packets (cmd, payload) sent back."""

    def __init__(self, replies):
        self.replies = replies
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(DEADLINE)
        self.addr = "127.0.0.1:%d" % self.sock.getsockname()[1]
        self.received = []  # (cmd, payload) in arrival order, over all connections
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        try:
            while True:
                conn, _ = self.sock.accept()
                conn.settimeout(DEADLINE)
                with conn:
                    self._talk(conn)
        except OSError:
            return

    def _talk(self, conn):
        buf = b""
        while True:
            while len(buf) < 12 or len(buf) < 12 + struct.unpack(">I", buf[8:12])[0]:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                buf += chunk
            cmd, size = struct.unpack(">II", buf[4:12])
            payload, buf = buf[12:12 + size], buf[12 + size:]
            self.received.append((cmd, payload))
            for rcmd, rpayload in self.replies.get(cmd, []):
                if callable(rpayload):
                    rpayload = rpayload(payload)
                if rcmd is None:  # raw bytes
                    conn.sendall(rpayload)
                else:
                    conn.sendall(b"\0RES" + struct.pack(">II", rcmd, len(rpayload)) + rpayload)

    def close(self):
        self.sock.close()


ECHO = (17, lambda p: p)


@pytest.fixture
def fake():
    made = []

    def make(replies):
        f = FakeServer(replies)
        made.append(f)
        return f

    yield make
    for f in made:
        f.close()


def test_worker_wire_can_do_timeout_identifier_grab_uniq(fake):
    f = fake({16: [ECHO], 9: [(10, b"")], 30: [(10, b"")]})
    r = drive([f.addr], "-T", 1500, "-i", "wid", "-t", 300, "grab", "fx")
    assert r["rc"] == "GEARMAN_TIMEOUT"
    cmds = [c for c, _ in f.received]
    assert (22, b"wid") in f.received                      # SET_CLIENT_ID first
    assert cmds.index(22) < cmds.index(1)
    assert (1, b"fx") in f.received                        # gearman_worker_register: CAN_DO
    assert 30 in cmds and 9 not in cmds                    # GRAB_JOB_UNIQ by default
    assert 4 in cmds                                       # PRE_SLEEP after NO_JOB
    f2 = fake({16: [ECHO]})
    p = Bg([driver(), "-s", f2.addr, "-T", 1500, "register", "fy"])
    p.proc.stdin.write(b"go\ngo\n")
    p.proc.stdin.flush()
    assert p.wait()[0] == 0
    assert (23, b"fy\x001500") in f2.received               # CAN_DO_TIMEOUT "fy\0 1500"
    assert (2, b"fy") in f2.received                       # CANT_DO on unregister
    assert (3, b"") not in f2.received                     # nothing left for RESET_ABILITIES...
    p.stop()


def test_worker_announces_functions_in_libgearman_order(fake, real_examples):
    """Differential: libgearman sends a new connection's CAN_DOs last-registered first, which
    decides where gearmand -R (and spurd) start taking turns; libgearman-compat does the same."""
    orders = []
    for drv in (real_examples["lgc_driver"], driver()):
        f = fake({16: [ECHO], 9: [(10, b"")], 30: [(10, b"")], 39: [(10, b"")]})
        rc, out, err = run([drv, "-s", f.addr, "-t", 300, "grab", "fa", "fb", "fc"])
        assert rc == 0, out + err
        orders.append([p for c, p in f.received if c == 1])
    assert orders[0] == [b"fc", b"fb", b"fa"]
    assert orders[1] == orders[0]


def test_client_wire_exceptions_option_before_submit(fake):
    f = fake({26: [(27, lambda p: p)], 7: [(8, b"H:fake:1"), (13, b"H:fake:1\0done")]})
    r = drive([f.addr], "-x", "do", "fz", "abc")
    assert r["rc"] == "GEARMAN_SUCCESS" and r["result"] == "done"
    assert f.received[0] == (26, b"exceptions")
    assert f.received[1][0] == 7 and f.received[1][1] == b"fz\0\0abc"


def test_client_wire_server_error_fails_the_job(fake):
    f = fake({7: [(19, b"QUEUE_ERROR\0Job queue is full")],
              18: [(19, b"SOMETHING_NEW\0text")]})
    r = drive([f.addr], "do", "fz", "abc")
    assert r["rc"] == "GEARMAN_QUEUE_ERROR"
    assert "Job queue is full" in r["error"]
    r = drive([f.addr], "bg", "fz", "abc")
    assert r["rc"] == "GEARMAN_SERVER_ERROR"


def test_client_wire_garbage_reply_is_invalid_packet(fake):
    # JOB_CREATED, then bytes that are not a packet: the client must give up, not hang
    f = fake({7: [(8, b"H:fake:1"), (None, b"HTTP/1.0 400 Bad Request\r\n\r\n")]})
    r = drive([f.addr], "-t", 5000, "do", "fz", "abc")
    assert r["rc"] == "GEARMAN_INVALID_PACKET"


# ---------------------------------------------------------------- the examples, on both libraries

EXAMPLES = ["reverse_client", "reverse_worker", "background_client", "epoch_client"]


def real_libgearman_cmd():
    """cc arguments to build against Debian's libgearman (pkg-config name `gearmand`), or skip
    when libgearman-dev is absent."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None or not os.path.exists("/usr/include/libgearman/gearman.h"):
        pytest.skip("libgearman-dev is not installed")
    flags = ["-lgearman"]
    if shutil.which("pkg-config"):
        p = subprocess.run(["pkg-config", "--cflags", "--libs", "gearmand"], capture_output=True)
        if p.returncode == 0:
            flags = p.stdout.decode().split()
    return cc, flags


@pytest.fixture(scope="module")
def real_examples():
    """The examples (and the driver) built against the real libgearman, in a temp dir."""
    cc, flags = real_libgearman_cmd()
    out = tempfile.mkdtemp(prefix="lgc-real-")
    srcs = {name: os.path.join(SRCDIR, "libgearman-compat", "examples", name + ".c")
            for name in EXAMPLES}
    srcs["lgc_driver"] = os.path.join(SRCDIR, "libgearman-compat", "tests", "lgc_driver.c")
    built = {}
    for name, src in srcs.items():
        exe = os.path.join(out, name)
        p = subprocess.run([cc, "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-o", exe, src] + flags,
                           capture_output=True, timeout=120)
        assert p.returncode == 0, f"{name} does not build against libgearman:\n{p.stderr.decode()}"
        built[name] = exe
    yield built
    shutil.rmtree(out, ignore_errors=True)


def lgc_examples():
    return {name: lgc_path("examples/" + name) for name in EXAMPLES}


def host_port(server):
    return ["-h", server.addr[0], "-p", str(server.addr[1])]


def run_examples(server, bg, ex_client, ex_worker):
    """The four examples against one server: reverse (plain and streaming), background, epoch."""
    hp = host_port(server)
    w = bg(ex_worker["reverse_worker"], *hp, "-c", 4, "-v")
    rc, out, err = run([ex_client["reverse_client"]] + hp + ["Hello, world"])
    assert rc == 0, err
    assert out == "Result=dlrow ,olleH\n"
    rc, out, err = run([ex_client["background_client"]] + hp + ["-n", 200, "background"])
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("Background Job Handle=") and len(lines[0]) > 22
    assert lines[-1].startswith("Known=false")
    rc, out, err = run([ex_client["epoch_client"]] + hp + ["-n", 200, "epoch"])
    assert rc == 0, err
    assert out.splitlines()[0].startswith("Epoch Job Handle=")
    assert out.splitlines()[-1] == "Known=false Running=false"
    rc, out, err = run([ex_client["background_client"]] + hp + ["-P", "high", "-n", 200, "high"])
    assert rc == 0, err
    status, _ = w.wait()
    assert status == 0
    seen = w.out.decode()
    for text in ("Workload=Hello, world", "Workload=background", "Workload=epoch", "Workload=high"):
        assert text in seen
    # streaming worker: WORK_DATA per byte, gearman_client_do gathers them
    w = bg(ex_worker["reverse_worker"], *hp, "-c", 1, "-s")
    rc, out, err = run([ex_client["reverse_client"]] + hp + ["stream"])
    assert rc == 0 and out == "Result=maerts\n", err
    assert w.wait()[0] == 0


def test_examples_with_libgearman_compat(jobserver, bg):
    ex = lgc_examples()
    run_examples(jobserver, bg, ex, ex)


def test_examples_with_real_libgearman(jobserver, bg, real_examples):
    run_examples(jobserver, bg, real_examples, real_examples)


def test_examples_mixed_libraries(jobserver, bg, real_examples):
    """A libgearman-compat client with a libgearman worker, and the other way round."""
    run_examples(jobserver, bg, lgc_examples(), real_examples)
    run_examples(jobserver, bg, real_examples, lgc_examples())


def test_driver_selftest_with_real_libgearman(real_examples):
    rc, out, err = run([real_examples["lgc_driver"], "selftest"])
    assert rc == 0 and parse(out)["failures"] == "0", out + err


@pytest.mark.parametrize("args", [
    ["do", "dr", "same"],
    ["-P", "high", "do", "dr", "same"],
    ["tasks", "dr", "5"],
])
def test_driver_outputs_match_real_libgearman(jobserver, bg, real_examples, args):
    """Differential: the same scenario gives the same outcome with either library."""
    results = []
    for drv in (driver(), real_examples["lgc_driver"]):
        w = bg(drv, "-s", addr(jobserver), "-c", 5 if "tasks" in args else 1, "worker", "dr")
        rc, out, err = run([drv, "-s", addr(jobserver)] + args)
        assert rc == 0, err
        w.wait()
        r = parse(out)
        r.pop("handle", None)  # libgearman 1.1.20 forgets the do handle
        r.pop("error", None)
        results.append(r)
    assert results[0] == results[1]


# ---------------------------------------------------------------- the spur tool

def spur():
    return lgc_path("../admin/spur")  # built from admin/spur.c


def gearman_tool():
    path = shutil.which("gearman")
    if path is None:
        pytest.skip("gearman (gearman-tools) is not installed")
    return path


def tool_run(tool, server, *args, input=b""):
    rc, out, err = run([tool, "-h", server.addr[0], "-p", server.addr[1]] + list(args),
                       input=input)
    return rc, out, err


def test_spur_worker_runs_a_command(jobserver, bg):
    w = bg(spur(), "-h", jobserver.addr[0], "-p", jobserver.addr[1], "-w", "-c", 2, "-f", "srev",
           "--", "rev")
    rc, out, err = tool_run(spur(), jobserver, "-f", "srev", input=b"hello\nworld\n")
    assert (rc, out) == (0, "olleh\ndlrow\n"), err
    rc, out, err = tool_run(spur(), jobserver, "-f", "srev", "abc")
    assert (rc, out) == (0, "cba"), err
    assert w.wait()[0] == 0


def test_spur_matches_gearman_tool(jobserver, bg):
    """The same jobs through gearman(1) and spur, against a worker of the other tool."""
    g = gearman_tool()
    outputs = []
    for client, worker in ((g, spur()), (spur(), g)):
        w = bg(worker, "-h", jobserver.addr[0], "-p", jobserver.addr[1], "-w", "-c", 4,
               "-f", "cmp", "--", "tr", "a-z", "A-Z")
        res = []
        res.append(tool_run(client, jobserver, "-f", "cmp", input=b"from stdin\n")[:2])
        res.append(tool_run(client, jobserver, "-f", "cmp", "one", "two")[:2])
        res.append(tool_run(client, jobserver, "-P", "-f", "cmp", "x")[:2])
        assert w.wait()[0] == 0
        outputs.append(res)
    assert outputs[0] == outputs[1]
    assert outputs[0][0] == (0, "FROM STDIN\n")
    assert outputs[0][1] == (0, "ONETWO")
    assert outputs[0][2] == (0, "cmp: X")


def test_spur_lines_background_and_priorities(jobserver, bg):
    rc, out, err = tool_run(spur(), jobserver, "-v", "-b", "-N", "-f", "lines", input=b"a\nb\nc\n")
    assert rc == 0, err
    assert out.count("Task created: ") == 3
    assert status_row(jobserver, "lines")[0] == 3
    rc, out, err = tool_run(spur(), jobserver, "-b", "-I", "-f", "lines", "hi")
    rc2, out2, err2 = tool_run(spur(), jobserver, "-b", "-L", "-f", "lines", "lo")
    assert rc == 0 and rc2 == 0 and out == "" and out2 == ""
    assert status_row(jobserver, "lines")[0] == 5
    # a worker without a command echoes each workload back; -N stripped the newlines
    w = bg(spur(), "-h", jobserver.addr[0], "-p", jobserver.addr[1], "-w", "-c", 5, "-f", "lines")
    status, _ = w.wait()
    assert status == 0
    assert sorted(w.out.decode()) == sorted("abchilo")


def test_spur_failing_command_fails_the_job(jobserver, bg):
    w = bg(spur(), "-h", jobserver.addr[0], "-p", jobserver.addr[1], "-w", "-c", 1, "-f", "bad",
           "--", "false")
    rc, out, err = tool_run(spur(), jobserver, "-f", "bad", "x")
    assert rc == 1
    assert "Job failed" in err
    assert w.wait()[0] == 0


def test_spur_streams_lines_as_data(jobserver, bg):
    w = bg(spur(), "-h", jobserver.addr[0], "-p", jobserver.addr[1], "-w", "-c", 1, "-n",
           "-f", "stream", "--", "cat")
    rc, out, err = tool_run(spur(), jobserver, "-f", "stream", input=b"l1\nl2\nl3")
    assert (rc, out) == (0, "l1\nl2\nl3"), err
    assert w.wait()[0] == 0


def test_spur_usage_and_errors(jobserver):
    rc, out, err = run([spur()])
    assert rc == 2 and "no function" in err
    rc, out, err = run([spur(), "-H"])
    assert rc == 0 and "Client mode" in out
    rc, out, err = run([spur(), "-h", "127.0.0.1", "-p", refused_addr().split(":")[1], "-f", "f", "x"])
    assert rc == 1 and "GEARMAN_COULD_NOT_CONNECT" in err
    rc, out, err = run([spur(), "-t", 300, "-h", jobserver.addr[0], "-p", jobserver.addr[1],
                        "-f", "nobody", "x"])
    assert rc == 1 and "GEARMAN_TIMEOUT" in err
