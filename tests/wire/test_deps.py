# SPDX-License-Identifier: BSD-3-Clause
"""Job dependencies (docs/BEYOND-GEARMAN.md): a background job submitted with
`submit FUNC --after H1,H2` (or HTTP X-Spur-After) waits until those jobs complete, then runs as
an ordinary job; when one of them fails for good it fails too, into the dead-letter list. Workers
are ordinary Gearman workers: the real `gearman` CLI and raw-byte ones."""
import os
import signal
import subprocess
import time

import pytest

from conftest import EXTERNAL, KILL_WAIT, poll
from gearman_wire import (CAN_DO, GRAB_JOB_UNIQ, JOB_ASSIGN_UNIQ, JOB_CREATED, NO_JOB,
                          SUBMIT_JOB_BG, WORK_COMPLETE, WORK_FAIL)

pytestmark = [pytest.mark.spur_only,
              pytest.mark.skipif(EXTERNAL is not None, reason="needs its own spurd")]

DEADLINE = 60.0  # generous: CI runs under a CPU hog
SPURADMIN = os.environ.get("SPURADMIN")


def submit(c, line):
    """Run an admin submit; return the handle (bytes)."""
    r = c.admin(line.encode() + b"\n")
    assert r.startswith(b"OK "), r
    return r[3:].rstrip(b"\r\n")


def listing(c, line):
    out = c.admin(line.encode() + b"\n", terminator=b".\n")
    return [r.split(b"\t") for r in out.split(b"\n") if r and r != b"."]


def states(c):
    """{handle: 'waiting' | 'failed' | 'queued'} from show jobs."""
    return {r[0]: (r[4].decode() if len(r) > 4 else "queued") for r in listing(c, "show jobs")}


class Worker:
    """A raw-bytes worker that grabs (polling with GRAB_JOB_UNIQ) and answers jobs."""

    def __init__(self, server, *funcs):
        self.c = server.connect(timeout=DEADLINE)
        for f in funcs:
            self.c.send_packet(CAN_DO, f)

    def grab(self):
        """The next job (handle, function-less unique, payload), or None when there is none."""
        self.c.send_packet(GRAB_JOB_UNIQ)
        _, cmd, body = self.c.read_packet(timeout=DEADLINE)
        if cmd == NO_JOB:
            return None
        assert cmd == JOB_ASSIGN_UNIQ, cmd
        h, _f, u, data = body.split(b"\0", 3)
        return h, u, data

    def finish(self, h, ok=True):
        if ok:
            self.c.send_packet(WORK_COMPLETE, h, b"")
        else:
            self.c.send_packet(WORK_FAIL, h)
        self.c.echo_roundtrip()


def test_a_chain_runs_in_order_with_the_gearman_cli_worker(server_factory, tmp_path):
    s = server_factory()
    c = s.connect(timeout=DEADLINE)
    a = submit(c, "submit dep_a first")
    b = submit(c, "submit dep_b --after %s second" % a.decode())
    d = submit(c, "submit dep_c --after %s,%s --priority high third part" % (a.decode(), b.decode()))
    assert states(c) == {a: "queued", b: "waiting", d: "waiting"}
    # waiting jobs are in no queue: status counts only the runnable one
    st = {r[0]: r[1] for r in listing(c, "status")}
    assert (st[b"dep_a"], st[b"dep_b"], st[b"dep_c"]) == (b"1", b"0", b"0")
    stats = dict(ln.split(b" ")[1:3] for ln in c.admin(b"stats\n", terminator=b"END\r\n")
                 .split(b"\r\n") if ln.startswith(b"STAT "))
    assert stats[b"waiting_jobs"] == b"2"
    out = tmp_path / "ran"
    host, port = s.addr
    worker = subprocess.Popen(["gearman", "-h", host, "-p", str(port), "-w", "-f", "dep_a",
                               "-f", "dep_b", "-f", "dep_c", "--", "sh", "-c",
                               "cat >> %s; echo >> %s" % (out, out)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        poll(lambda: out.exists() and out.read_text().count("\n") == 3, "three jobs to run")
        assert out.read_text().splitlines() == ["first", "second", "third part"]
        poll(lambda: states(c) == {}, "the queue to empty")
    finally:
        worker.kill()
        worker.wait()


def test_errors_name_what_is_wrong(server):
    c = server.connect(timeout=DEADLINE)
    assert c.admin(b"submit f --after H:nohost:1 x\n").startswith(b"ERR UNKNOWN_JOB ")
    assert c.admin(b"submit\n").startswith(b"ERR INVALID_ARGUMENTS ")
    assert c.admin(b"submit f --priority urgent x\n").startswith(b"ERR INVALID_ARGUMENTS ")
    a = submit(c, "submit f x")
    many = ",".join([a.decode()] * 65)
    assert c.admin(b"submit g --after " + many.encode() + b" x\n") == \
        b"ERR TOO_MANY_DEPENDENCIES At+most+64+jobs+after+--after\r\n"
    # a unique already there: joined, as any background submit with that unique
    u = submit(c, "submit g --unique one x")
    assert submit(c, "submit g --unique one y") == u


def test_a_failure_cascades_into_the_dead_letter_list(server):
    c = server.connect(timeout=DEADLINE)
    a = submit(c, "submit cas_a x")
    b = submit(c, "submit cas_b --after %s y" % a.decode())
    d = submit(c, "submit cas_c --after %s z" % b.decode())
    w = Worker(server, b"cas_a", b"cas_b", b"cas_c")
    h, _, _ = w.grab()
    assert h == a
    w.finish(a, ok=False)  # no retry policy: a fails for good
    failed = {r[0]: r for r in listing(c, "show failed jobs")}
    assert set(failed) == {b, d}
    assert failed[b][6] == b"dependency " + a + b" failed"
    assert failed[d][6] == b"dependency " + b + b" failed"
    assert w.grab() is None, "nothing runs"
    # a job may not wait for one in the dead-letter list
    assert c.admin(b"submit cas_d --after " + b + b" q\n").startswith(b"ERR DEPENDENCY_FAILED")
    # cancelling a job that others wait for fails them too
    e = submit(c, "submit cas_e x")
    f = submit(c, "submit cas_f --after %s y" % e.decode())
    assert c.admin(b"cancel job " + e + b"\n") == b"OK\r\n"
    assert f in {r[0] for r in listing(c, "show failed jobs")}
    assert c.admin(b"purge failed\n") == b"OK 3\r\n"
    assert states(c) == {}


def test_http_x_spur_after(server_factory, tmp_path):
    pf = str(tmp_path / "http-port")
    s = server_factory("--http-port=0", "--http-listen=127.0.0.1", "--http-port-file=" + pf)
    url = "http://127.0.0.1:%s/" % open(pf).read().strip()
    c = s.connect(timeout=DEADLINE)
    a = submit(c, "submit ha x")

    def post(fn, data, *headers):
        args = ["curl", "-sS", "--max-time", "30", "-D", "-", "--data-binary", "@-"]
        for h in headers:
            args += ["-H", h]
        r = subprocess.run(args + [url + fn], input=data, capture_output=True, timeout=60)
        assert r.returncode == 0, r.stderr
        return r.stdout

    out = post("hb", b"bin\0body", "X-Gearman-Background: true", "X-Spur-After: " + a.decode())
    assert out.startswith(b"HTTP/1.1 200") and b"X-Gearman-Command: JOB_CREATED" in out
    hb = out.split(b"X-Gearman-Job-Handle: ")[1].split(b"\r\n")[0]
    assert states(c)[hb] == "waiting"
    assert post("hc", b"x", "X-Spur-After: " + a.decode()).startswith(b"HTTP/1.1 400")
    assert post("hc", b"x", "X-Gearman-Background: true",
                "X-Spur-After: H:nohost:9").startswith(b"HTTP/1.1 400")
    w = Worker(s, b"ha", b"hb")
    h, _, _ = w.grab()
    w.finish(h)
    h, _, data = w.grab()
    assert (h, data) == (hb, b"bin\0body")


def start_replayed(factory, *args):
    """A spurd with a store, once the store's replay has ended: until then an admin submit gets
    `ERR BUSY` (docs/ADMIN.md), even for an empty store, and under load the replay can outlast
    the first request."""
    n = factory(*args)
    deadline = time.monotonic() + KILL_WAIT
    while "store: replayed" not in n.stderr_text():
        assert time.monotonic() < deadline, "replay did not finish"
        time.sleep(0.01)
    return n


def restart(factory, s, *args):
    s.stop(signal.SIGKILL)
    s.proc = None  # killed on purpose
    return start_replayed(factory, *args)


def durable(c):
    """Everything queued for the store before it is durable once a background submit's
    JOB_CREATED is back (it waits for its batch; batches commit in order)."""
    c.send_packet(SUBMIT_JOB_BG, b"sync", b"", b"")
    c.expect(JOB_CREATED)


def test_a_chain_survives_kill_9_and_runs_each_job_once(server_factory, tmp_path):
    arg = "--store=sqlite:" + str(tmp_path / "s.db")
    s = start_replayed(server_factory, arg)
    c = s.connect(timeout=DEADLINE)
    a = submit(c, "submit k_a 1")
    b = submit(c, "submit k_b --after %s 2" % a.decode())
    d = submit(c, "submit k_c --after %s 3" % b.decode())
    durable(c)
    s = restart(server_factory, s, arg)
    c = s.connect(timeout=DEADLINE)
    assert {h: st for h, st in states(c).items() if h in (a, b, d)} == \
        {a: "queued", b: "waiting", d: "waiting"}
    w = Worker(s, b"k_a", b"k_b", b"k_c")
    h, _, data = w.grab()
    assert (h, data) == (a, b"1")
    w.finish(h)
    durable(c)
    s = restart(server_factory, s, arg)  # a done; b runnable now, c still waits
    c = s.connect(timeout=DEADLINE)
    assert {h: st for h, st in states(c).items() if h in (a, b, d)} == \
        {b: "queued", d: "waiting"}
    w = Worker(s, b"k_a", b"k_b", b"k_c")
    ran = []
    for _ in range(2):
        h, _, data = w.grab()
        ran.append((h, data))
        w.finish(h)
    assert ran == [(b, b"2"), (d, b"3")]
    assert w.grab() is None, "each ran once"


def test_dump_and_load_keep_a_dependency(server_factory, tmp_path):
    if not SPURADMIN:
        pytest.skip("needs spuradmin")
    src = server_factory()
    c = src.connect(timeout=DEADLINE)
    a = submit(c, "submit l_a one")
    submit(c, "submit l_b --after %s two" % a.decode())
    path = str(tmp_path / "d.jsonl")

    def tool(s, *args):
        r = subprocess.run([SPURADMIN, "-h", s.addr[0], "-p", str(s.addr[1])] + list(args),
                           capture_output=True, timeout=120)
        assert r.returncode == 0, r.stderr
    tool(src, "--dump", path)
    dst = server_factory()
    tool(dst, "--load", path)
    d = dst.connect(timeout=DEADLINE)
    st = states(d)
    assert sorted(st.values()) == ["queued", "waiting"]
    w = Worker(dst, b"l_a", b"l_b")
    h, _, data = w.grab()
    assert data == b"one" and st[h] == "queued"
    assert w.grab() is None, "the dependent waits"
    w.finish(h)
    h2, _, data = w.grab()
    assert data == b"two" and st[h2] == "waiting"
