# SPDX-License-Identifier: BSD-3-Clause
"""Cancelling running jobs and telling workers (docs/PROTOCOL-EXTENSIONS.md, ADMIN.md): the
opt-in JOB_CANCELLED notice (OPTION_REQ cancel-notify) on an admin `cancel job` and on a
CAN_DO_TIMEOUT; old workers never see it; a client's CANCEL_JOB of a job it waits on."""
import time

import pytest

from conftest import poll
from gearman_wire import (CAN_DO, CAN_DO_TIMEOUT, CANCEL_JOB, ERROR, GRAB_JOB, JOB_ASSIGN,
                          JOB_CANCELLED, JOB_CREATED, NO_JOB, OPTION_REQ, OPTION_RES, SUBMIT_JOB,
                          SUBMIT_JOB_BG, WORK_COMPLETE, WORK_FAIL, WORK_STATUS)


def worker(server, func=b"f", notify=True, timeout_ms=None):
    """A raw worker of func, opted in to the notice unless notify is False."""
    w = server.connect()
    if notify:
        w.send_packet(OPTION_REQ, b"cancel-notify")
        assert w.expect(OPTION_RES) == b"cancel-notify"
    if timeout_ms is None:
        w.send_packet(CAN_DO, func)
    else:
        w.send_packet(CAN_DO_TIMEOUT, func, str(timeout_ms).encode())
    return w


def start_job(server, w, func=b"f", payload=b"x", background=False):
    """Submit a job from a new client and hand it to w; returns (client, handle)."""
    c = server.connect()
    c.send_packet(SUBMIT_JOB_BG if background else SUBMIT_JOB, func, b"", payload)
    h = c.expect(JOB_CREATED)
    w.send_packet(GRAB_JOB)
    assert w.expect(JOB_ASSIGN) == h + b"\0" + func + b"\0" + payload
    return c, h


def stats(server):
    a = server.connect()
    a.send(b"stats\n")
    out = {}
    for line in a.read_until(b"END\r\n").decode().splitlines():
        if line.startswith("STAT "):
            _, k, v = line.split(" ", 2)
            out[k] = v
    a.close()
    return out


def test_cancel_running_job_fails_client_and_notifies_opted_in_worker(server):
    w = worker(server)
    c, h = start_job(server, w)
    a = server.connect()
    assert a.admin(b"cancel job " + h + b"\n") == b"OK\r\n"
    assert c.expect(WORK_FAIL) == h
    assert w.expect(JOB_CANCELLED) == h
    # the job is gone at once; the worker's late packets are dropped without a reply
    w.send_packet(WORK_STATUS, h, b"1", b"2")
    w.send_packet(WORK_COMPLETE, h, b"late")
    w.echo_roundtrip()
    assert a.admin(b"cancel job " + h + b"\n") == b"ERR UNKNOWN_JOB\r\n"
    # and its next GRAB_JOB works
    c2, h2 = start_job(server, w, payload=b"y")
    w.send_packet(WORK_COMPLETE, h2, b"ok")
    assert c2.expect(WORK_COMPLETE) == h2 + b"\0ok"
    st = stats(server)
    assert st["jobs_cancelled_running"] == "1"
    assert st["jobs_cancelled"] == "1"


def test_old_worker_gets_no_notice_and_its_late_result_is_swallowed(server):
    w = worker(server, notify=False)
    c, h = start_job(server, w)
    a = server.connect()
    assert a.admin(b"cancel job " + h + b"\n") == b"OK\r\n"
    assert c.expect(WORK_FAIL) == h
    w.echo_roundtrip()  # nothing before the echo: no JOB_CANCELLED
    w.send_packet(WORK_COMPLETE, h, b"late")
    w.echo_roundtrip()  # no ERROR either
    c.assert_silent(0.1)
    c2, h2 = start_job(server, w, payload=b"y")
    w.send_packet(WORK_COMPLETE, h2, b"ok")
    assert c2.expect(WORK_COMPLETE) == h2 + b"\0ok"
    assert stats(server)["jobs_cancelled_running"] == "1"


def test_cancel_queued_job_counts_no_running_cancel(server):
    c = server.connect()
    c.send_packet(SUBMIT_JOB, b"q", b"", b"x")
    h = c.expect(JOB_CREATED)
    a = server.connect()
    assert a.admin(b"cancel job " + h + b"\n") == b"OK\r\n"
    assert c.expect(WORK_FAIL) == h
    st = stats(server)
    assert (st["jobs_cancelled"], st["jobs_cancelled_running"]) == ("1", "0")


def test_can_do_timeout_notifies_opted_in_worker(server):
    w = worker(server, timeout_ms=100)
    c, h = start_job(server, w)
    assert c.expect(WORK_FAIL, timeout=30) == h
    assert w.expect(JOB_CANCELLED, timeout=30) == h
    w.send_packet(WORK_COMPLETE, h, b"late")  # dropped without a reply
    w.echo_roundtrip()
    old = worker(server, func=b"g", notify=False, timeout_ms=100)
    c2, h2 = start_job(server, old, func=b"g")
    assert c2.expect(WORK_FAIL, timeout=30) == h2
    old.echo_roundtrip()  # no notice for a worker that did not opt in


def test_a_jobs_own_timeout_notifies_opted_in_worker(server):
    # the per-job timeout (OPTION_REQ job-timeout, JOB-LIFETIME.md) fails the job through the
    # same path as CAN_DO_TIMEOUT, so an opted-in worker hears of it too
    w = worker(server)
    c = server.connect()
    c.send_packet(OPTION_REQ, b"job-timeout=100")
    assert c.expect(OPTION_RES) == b"job-timeout=100"
    c.send_packet(SUBMIT_JOB, b"f", b"", b"x")
    h = c.expect(JOB_CREATED)
    w.send_packet(GRAB_JOB)
    assert w.expect(JOB_ASSIGN) == h + b"\0f\0x"
    assert c.expect(WORK_FAIL, timeout=30) == h
    assert w.expect(JOB_CANCELLED, timeout=30) == h
    w.send_packet(WORK_COMPLETE, h, b"late")  # dropped without a reply
    w.echo_roundtrip()


def test_option_names_are_answered_and_unknown_ones_refused(server):
    c = server.connect()
    for name in (b"cancel-job", b"CANCEL-NOTIFY"):
        c.send_packet(OPTION_REQ, name)
        assert c.expect(OPTION_RES) == name
    c.send_packet(OPTION_REQ, b"cancel")
    assert c.expect(ERROR).startswith(b"UNKNOWN_OPTION\0")


def test_client_cancels_a_job_it_waits_on(server):
    w = worker(server)
    c, h = start_job(server, w)
    c.send_packet(OPTION_REQ, b"cancel-job")
    assert c.expect(OPTION_RES) == b"cancel-job"
    c.send_packet(CANCEL_JOB, h)
    assert c.expect(WORK_FAIL) == h
    assert c.expect(JOB_CANCELLED) == h
    assert w.expect(JOB_CANCELLED) == h
    assert stats(server)["jobs_cancelled_running"] == "1"
    # a queued job too
    c.send_packet(SUBMIT_JOB, b"q", b"", b"x")
    hq = c.expect(JOB_CREATED)
    c.send_packet(CANCEL_JOB, hq)
    assert c.expect(WORK_FAIL) == hq
    assert c.expect(JOB_CANCELLED) == hq


def test_client_cannot_cancel_someone_elses_job(server):
    w = worker(server)
    c, h = start_job(server, w)
    other = server.connect()
    other.send_packet(CANCEL_JOB, h)
    assert other.expect(ERROR).startswith(b"JOB_NOT_FOUND\0")
    # nor a background job (nobody waits on it), nor an unknown handle
    bc = server.connect()
    bc.send_packet(SUBMIT_JOB_BG, b"q", b"", b"x")
    hb = bc.expect(JOB_CREATED)
    bc.send_packet(CANCEL_JOB, hb)
    assert bc.expect(ERROR).startswith(b"JOB_NOT_FOUND\0")
    bc.send_packet(CANCEL_JOB, b"H:nope:1")
    assert bc.expect(ERROR).startswith(b"JOB_NOT_FOUND\0")
    # the job still runs and completes for its own client
    w.echo_roundtrip()
    w.send_packet(WORK_COMPLETE, h, b"ok")
    assert c.expect(WORK_COMPLETE) == h + b"\0ok"


def test_gearmand_refuses_the_options(gearmand):
    """How a client detects support: gearmand answers the options with ERROR."""
    c = gearmand.connect()
    for name in (b"cancel-notify", b"cancel-job"):
        c.send_packet(OPTION_REQ, name)
        assert c.expect(ERROR).startswith(b"UNKNOWN_OPTION\0")


# ------------------------------------------------------------------ spuradmin --cancel, HTTP DELETE

def test_spuradmin_cancel_stops_a_running_job(server):
    import os
    import subprocess
    tool = os.environ.get("SPURADMIN") or os.path.join(os.environ.get("SPUR_BUILDDIR", ""),
                                                       "admin", "spuradmin")
    if not os.access(tool, os.X_OK):
        pytest.skip("spuradmin not built")
    w = worker(server)
    c, h = start_job(server, w)
    host, port = server.addr
    r = subprocess.run([tool, "-h", host, "-p", str(port), "--cancel", h.decode()],
                       capture_output=True, timeout=60)
    assert (r.returncode, r.stdout, r.stderr) == (0, b"OK\n", b"")
    assert c.expect(WORK_FAIL) == h
    assert w.expect(JOB_CANCELLED) == h
    r = subprocess.run([tool, "-h", host, "-p", str(port), "--cancel-job=" + h.decode()],
                       capture_output=True, timeout=60)
    assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"Error: UNKNOWN_JOB\r\n")


from test_http import ADMIN, http_factory_real  # noqa: E402,F401  (the HTTP listener fixture)
from test_store import wait_replayed  # noqa: E402


def test_http_delete_job_cancels_it(http_factory_real):
    h = http_factory_real("--http-admin")
    w = worker(h.server)
    c, handle = start_job(h.server, w)
    status, _, body = h.curl("/jobs/" + handle.decode(), method="DELETE", headers=ADMIN)
    assert (status, body) == (200, b"OK\r\n")
    assert c.expect(WORK_FAIL) == handle
    assert w.expect(JOB_CANCELLED) == handle
    status, _, body = h.curl("/jobs/" + handle.decode(), method="DELETE", headers=ADMIN)
    assert (status, body) == (404, b"ERR UNKNOWN_JOB\r\n")
    # the rules of POST /admin: the header a cross-site form cannot send
    status, _, body = h.curl("/jobs/H:x:1", method="DELETE")
    assert status == 403 and b"X-Spur-Admin" in body
    status, _, body = h.curl("/jobs/", method="DELETE", headers=ADMIN)
    assert status == 400
    status, _, body = h.curl("/jobs/H:x:1", method="DELETE", headers=ADMIN, data=b"body")
    assert status == 413
    assert stats(h.server)["jobs_cancelled_running"] == "1"


def test_http_delete_job_follows_admin_access_rules(http_factory_real):
    off = http_factory_real()
    status, _, body = off.curl("/jobs/H:x:1", method="DELETE", headers=ADMIN)
    assert status == 404 and b"--http-admin" in body
    h = http_factory_real("--http-admin", "--admin-allow=unix")
    c = h.server.connect()
    c.send_packet(SUBMIT_JOB, b"q", b"", b"x")
    handle = c.expect(JOB_CREATED)
    status, _, body = h.curl("/jobs/" + handle.decode(), method="DELETE", headers=ADMIN)
    assert status == 403 and body.startswith(b"ERR PERMISSION_DENIED"), (status, body)
    c.echo_roundtrip()  # not cancelled: no WORK_FAIL came first


# ------------------------------------------------------------------ old workers, the store

def test_gearman_cli_worker_keeps_working_after_its_late_result_is_dropped(server, tmp_path):
    """The real `gearman -w` (libgearman, no notice): a job cancelled while it runs; its result
    comes later and is dropped; the worker's next job works."""
    import shutil
    import subprocess
    if shutil.which("gearman") is None:
        pytest.skip("gearman CLI not installed")
    go = tmp_path / "go"
    host, port = server.addr
    cmd = "cat >/dev/null; while [ ! -e %s ]; do sleep 0.01; done; printf done" % go
    w = subprocess.Popen(["gearman", "-h", host, "-p", str(port), "-w", "-f", "slow", "--",
                          "sh", "-c", cmd], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        a = server.connect()
        poll(lambda: b" slow" in a.admin(b"workers\n", terminator=b".\n"), "the worker")
        c = server.connect(timeout=60)
        c.send_packet(SUBMIT_JOB, b"slow", b"", b"one")
        h = c.expect(JOB_CREATED)
        poll(lambda: b"slow\t1\t1\t1" in a.admin(b"status\n", terminator=b".\n"), "it runs")
        assert a.admin(b"cancel job " + h + b"\n") == b"OK\r\n"
        assert c.expect(WORK_FAIL) == h
        go.touch()  # the worker's late WORK_COMPLETE goes nowhere
        c.send_packet(SUBMIT_JOB, b"slow", b"", b"two")
        h2 = c.expect(JOB_CREATED)
        assert c.expect(WORK_COMPLETE, timeout=60) == h2 + b"\0done"
        assert w.poll() is None, "the worker is still running"
        assert stats(server)["jobs_cancelled_running"] == "1"
    finally:
        w.kill()
        w.wait()


def test_cancelled_running_job_is_gone_after_kill_9_with_a_store(server_factory, tmp_path):
    import signal
    db = "--store=sqlite:" + str(tmp_path / "q.db")
    s = server_factory(db)
    for notify in (True, False):
        w = worker(s, notify=notify)
        c, h = start_job(s, w, background=True)
        a = s.connect()
        assert a.admin(b"cancel job " + h + b"\n") == b"OK\r\n"
        if notify:
            assert w.expect(JOB_CANCELLED) == h
        w.echo_roundtrip()
    c = s.connect()
    c.send_packet(SUBMIT_JOB_BG, b"other", b"", b"kept")
    kept = c.expect(JOB_CREATED)
    s.stop(signal.SIGKILL)
    s.proc = None  # killed on purpose
    s2 = server_factory(db)
    wait_replayed(s2)
    a = s2.connect()
    jobs = a.admin(b"show jobs\n", terminator=b".\n")
    assert jobs.count(b"\n") == 2 and jobs.startswith(kept + b"\t"), jobs


# ------------------------------------------------------------------ libgearman-compat's calls and examples

def example(name):
    import os
    builddir = os.environ.get("SPUR_BUILDDIR")
    if not builddir:
        pytest.skip("SPUR_BUILDDIR is not set (run through `make check`)")
    path = os.path.join(builddir, "libgearman-compat", "examples", name)
    assert os.access(path, os.X_OK), f"{name} not built: {path}"
    return path


def wait_worker(server, func=b"long"):
    """Bounded wait until a worker has registered func (admin status: its workers column)."""
    a = server.connect()

    def ready():
        for line in a.admin(b"status\n", terminator=b".\n").split(b"\n"):
            f = line.split(b"\t")
            if f[0] == func and len(f) == 4 and int(f[3]) > 0:
                return True
        return False
    poll(ready, "a worker of " + func.decode())
    a.close()


class NoticeTap:
    """A TCP relay between one worker and the server that notes when the JOB_CANCELLED packet
    passes towards the worker: the notice's arrival, to compare with the worker's stop."""

    def __init__(self, upstream):
        import socket
        import threading
        self.upstream = upstream
        self.lsock = socket.socket()
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(1)
        self.addr = self.lsock.getsockname()
        self.notice_at = None
        self.socks = []
        threading.Thread(target=self._run, daemon=True).start()

    def _pipe(self, src, dst, watch):
        import struct
        buf = b""
        try:
            while True:
                chunk = src.recv(65536)
                if not chunk:
                    break
                if watch:
                    buf += chunk
                    while len(buf) >= 12:
                        cmd, size = struct.unpack(">II", buf[4:12])
                        if len(buf) < 12 + size:
                            break
                        if cmd == JOB_CANCELLED and self.notice_at is None:
                            self.notice_at = time.time()
                        buf = buf[12 + size:]
                dst.sendall(chunk)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(2)
            except OSError:
                pass

    def _run(self):
        import socket
        import threading
        w, _ = self.lsock.accept()
        s = socket.create_connection(self.upstream)
        self.socks = [w, s]
        threading.Thread(target=self._pipe, args=(w, s, False), daemon=True).start()
        self._pipe(s, w, True)

    def close(self):
        for s in self.socks + [self.lsock]:
            s.close()


def test_example_worker_stops_a_long_job_soon_after_spuradmin_cancels_it(server):
    """docs/LIBGEARMAN-COMPAT.md's example: a one-minute job stops within 100 ms of the notice
    (measured from the notice passing the relay to the worker's own stop time; the bound has
    slack for ASan and a loaded machine, the job's natural end is a minute away)."""
    import os
    import subprocess
    tap = NoticeTap(server.addr)
    w = subprocess.Popen([example("cancel_worker"), "-h", tap.addr[0], "-p", str(tap.addr[1]),
                          "-c", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        a = server.connect()
        c = server.connect(timeout=60)
        c.send_packet(SUBMIT_JOB, b"long", b"", b"6000")
        h = c.expect(JOB_CREATED)
        poll(lambda: b"long\t1\t1\t1" in a.admin(b"status\n", terminator=b".\n"), "it runs")
        tool = os.environ.get("SPURADMIN") or os.path.join(os.environ["SPUR_BUILDDIR"], "admin",
                                                           "spuradmin")
        r = subprocess.run([tool, "-h", server.addr[0], "-p", str(server.addr[1]),
                            "--cancel", h.decode()], capture_output=True, timeout=60)
        assert r.stdout == b"OK\n", r
        assert c.expect(WORK_FAIL) == h
        out, err = w.communicate(timeout=60)
        assert w.returncode == 0, err
        word, handle, chunks, stopped = out.decode().split()
        assert (word, handle.encode()) == ("cancelled", h), out
        assert tap.notice_at is not None
        latency = float(stopped) - tap.notice_at
        print("notice to stop: %.1f ms after %s chunks" % (latency * 1000, chunks))
        assert -0.05 < latency < 0.5, latency
        assert int(chunks) < 6000
    finally:
        if w.poll() is None:
            w.kill()
            w.wait()
        tap.close()


def test_example_client_gives_up_and_cancels_its_job(server):
    import subprocess
    hp = ["-h", server.addr[0], "-p", str(server.addr[1])]
    w = subprocess.Popen([example("cancel_worker")] + hp + ["-c", "2"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    try:
        wait_worker(server)
        r = subprocess.run([example("cancel_client")] + hp + ["-w", "300", "6000"],
                           capture_output=True, timeout=60)
        assert r.returncode == 0, r.stderr
        word, handle = r.stdout.decode().split()
        assert word == "cancelled"
        # a job that ends in time gives its result; the worker is still fine
        r = subprocess.run([example("cancel_client")] + hp + ["-w", "30000", "2"],
                           capture_output=True, timeout=60)
        assert (r.returncode, r.stdout) == (0, b"result done\n"), r.stderr
        out, err = w.communicate(timeout=60)
        lines = out.decode().splitlines()
        assert lines[0].startswith("cancelled " + handle + " "), lines
        assert lines[1].startswith("done "), lines
        assert stats(server)["jobs_cancelled_running"] == "1"
    finally:
        if w.poll() is None:
            w.kill()
            w.wait()


def test_example_client_cannot_cancel_on_gearmand(gearmand):
    """Against gearmand the probe is refused: the call fails cleanly, the job runs on."""
    import subprocess
    hp = ["-h", gearmand.addr[0], "-p", str(gearmand.addr[1])]
    w = subprocess.Popen([example("cancel_worker")] + hp + ["-c", "1"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    try:
        wait_worker(gearmand)
        r = subprocess.run([example("cancel_client")] + hp + ["-w", "100", "50"],
                           capture_output=True, timeout=60)
        assert r.returncode == 1
        assert b"cannot cancel jobs" in r.stderr, r.stderr
        out, err = w.communicate(timeout=60)
        assert out.startswith(b"done "), (out, err)
    finally:
        if w.poll() is None:
            w.kill()
            w.wait()


def test_client_job_timeout_and_ttl_options_are_sent_first():
    """gearman_client_set_job_timeout / _ttl: OPTION_REQ job-timeout=MS and job-ttl=S on the
    connection before the submit (the server side is the per-job timeout's, issue 31)."""
    import subprocess
    from test_libgearman_compat import FakeServer
    h = b"H:fake:1"
    f = FakeServer({26: [(27, lambda p: p)], 7: [(8, h), (13, h + b"\0done")]})
    try:
        host, port = f.addr.split(":")
        r = subprocess.run([example("cancel_client"), "-h", host, "-p", port, "-w", "30000",
                            "-t", "500", "-l", "9", "2"], capture_output=True,
                           timeout=60)
        assert (r.returncode, r.stdout) == (0, b"result done\n"), r.stderr
        assert f.received == [(26, b"job-timeout=500"), (26, b"job-ttl=9"), (7, b"long\0\0002")]
    finally:
        f.close()
