# SPDX-License-Identifier: BSD-3-Clause
"""Broadcast functions (docs/BROADCAST.md): `broadcast FUNC on|off`, `broadcast list`,
--broadcast. A background job of a broadcast function is delivered once to every worker
registered for it when it is submitted, each copy with its own JOB_ASSIGN and handle; a worker
that registers later does not get it, one that leaves loses its copy; a foreground submit is
refused with an ERROR; every entry point (binary, admin `submit`, HTTP, schedules, load) fans
out; the setting is durable with --store."""
import base64
import json
import os
import signal
import subprocess
import time

import pytest

from conftest import EXTERNAL, poll
from gearman_wire import (packet, CAN_DO, CANT_DO, ERROR, GRAB_JOB, GRAB_JOB_UNIQ, JOB_ASSIGN,
                          JOB_ASSIGN_UNIQ, JOB_CREATED, NO_JOB, NOOP, PRE_SLEEP, SUBMIT_JOB,
                          SUBMIT_JOB_BG, SUBMIT_JOB_EPOCH, SUBMIT_JOB_HIGH, SUBMIT_JOB_HIGH_BG,
                          SUBMIT_JOB_LOW_BG, WORK_COMPLETE)

pytestmark = pytest.mark.spur_only

DEADLINE = 60


@pytest.fixture(autouse=True)
def _needs_own():
    if EXTERNAL:
        pytest.skip("needs its own spurd")


def stats(c):
    out = c.admin("stats\n", b"END\r\n").decode()
    return {l.split()[1]: l.split()[2] for l in out.splitlines() if l.startswith("STAT ")}


def bc_list(c):
    out = c.admin("broadcast list\n", b".\n")
    return [r.split(b"\t") for r in out.split(b"\n")[:-2]]


def worker(server, func=b"flush"):
    w = server.connect(timeout=DEADLINE)
    w.send_packet(CAN_DO, func)
    return w


def registered(a, func, n):
    """Waits until n workers are registered for func (its `broadcast list` line)."""
    def ok():
        rows = [r for r in bc_list(a) if r[0] == func]
        return rows and int(rows[0][2]) == n
    poll(ok, "%d workers of %r" % (n, func), timeout=DEADLINE)


def grab(w, uniq=False):
    """GRAB_JOB (or _UNIQ): returns the JOB_ASSIGN's arguments, or None for NO_JOB."""
    w.send_packet(GRAB_JOB_UNIQ if uniq else GRAB_JOB)
    while True:
        magic, cmd, body = w.read_packet(timeout=DEADLINE)
        if cmd == NOOP:
            continue
        if cmd == NO_JOB:
            return None
        assert cmd in (JOB_ASSIGN, JOB_ASSIGN_UNIQ), (cmd, body)
        return body.split(b"\0", 3 if uniq else 2)


def sleep_until_woken(w):
    w.send_packet(PRE_SLEEP)
    w.expect(NOOP, timeout=DEADLINE)


def submit_bg(c, func, data, cmd=SUBMIT_JOB_BG, unique=b""):
    c.send_packet(cmd, func, unique, data)
    return c.expect(JOB_CREATED)


# ------------------------------------------------------------------ delivery


def test_broadcast_job_reaches_each_of_three_raw_workers_exactly_once(server):
    a, c = server.connect(), server.connect()
    assert a.admin("broadcast flush on\n") == b"OK\r\n"
    ws = [worker(server) for _ in range(3)]
    registered(a, b"flush", 3)
    for w in ws:  # asleep: the submit wakes each of them
        w.send_packet(PRE_SLEEP)
    h = submit_bg(c, b"flush", b"drop caches")
    handles = set()
    for w in ws:
        w.expect(NOOP, timeout=DEADLINE)
        got = grab(w)
        assert got is not None and got[1:] == [b"flush", b"drop caches"]
        handles.add(got[0])
        w.send_packet(WORK_COMPLETE, got[0], b"")
    assert len(handles) == 3 and h not in handles, "each copy has a handle of its own"
    for w in ws:
        assert grab(w) is None, "exactly once"
    st = stats(a)
    assert (st["broadcast_jobs_total"], st["broadcast_copies_delivered_total"],
            st["broadcast_copies_lost_total"], st["broadcast_copies_waiting"]) == \
        ("1", "3", "0", "0")
    # the broadcast's own handle names no job
    assert a.admin("status\n", b".\n") == b"flush\t0\t0\t3\n.\n"


def test_broadcast_reaches_each_of_three_gearman_cli_workers_exactly_once(server, tmp_path):
    a, c = server.connect(), server.connect()
    assert a.admin("broadcast flush on\n") == b"OK\r\n"
    procs, files = [], []
    for i in range(3):
        f = tmp_path / ("w%d" % i)
        files.append(f)
        # each job's payload is appended to the worker's own file, one line a job
        procs.append(subprocess.Popen(
            ["gearman", "-h", server.addr[0], "-p", str(server.addr[1]), "-w", "-f", "flush",
             "--", "sh", "-c", "cat >> %s; echo >> %s" % (f, f)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    try:
        registered(a, b"flush", 3)
        submit_bg(c, b"flush", b"one")
        submit_bg(c, b"flush", b"two", cmd=SUBMIT_JOB_HIGH_BG)

        def done():
            return all(f.exists() and f.read_bytes().count(b"\n") >= 2 for f in files)
        poll(done, "both broadcasts at each CLI worker", timeout=DEADLINE)
        poll(lambda: stats(a)["broadcast_copies_waiting"] == "0" and
             a.admin("status\n", b".\n") == b"flush\t0\t0\t3\n.\n", "copies finished")
        for f in files:
            assert sorted(f.read_bytes().split(b"\n")[:-1]) == [b"one", b"two"], f
        st = stats(a)
        assert (st["broadcast_jobs_total"], st["broadcast_copies_delivered_total"]) == ("2", "6")
    finally:
        for p in procs:
            p.kill()
            p.wait(timeout=DEADLINE)


def test_worker_registering_after_the_submit_does_not_get_it(server):
    a, c = server.connect(), server.connect()
    assert a.admin("broadcast flush on\n") == b"OK\r\n"
    early = worker(server)
    registered(a, b"flush", 1)
    submit_bg(c, b"flush", b"before")
    late = worker(server)
    registered(a, b"flush", 2)
    assert grab(late) is None
    got = grab(early)
    assert got[1:] == [b"flush", b"before"]
    early.send_packet(WORK_COMPLETE, got[0], b"")
    # a broadcast after both registered reaches both
    submit_bg(c, b"flush", b"after")
    assert grab(late)[2] == b"after" and grab(early)[2] == b"after"


def test_no_worker_registered_drops_the_broadcast_and_counts_it(server):
    a, c = server.connect(), server.connect()
    assert a.admin("broadcast flush on\n") == b"OK\r\n"
    h = submit_bg(c, b"flush", b"nobody")
    assert h.startswith(b"H:")
    w = worker(server)
    registered(a, b"flush", 1)
    assert grab(w) is None, "not kept for a worker that comes later"
    st = stats(a)
    assert (st["broadcast_jobs_total"], st["broadcast_unheard_total"]) == ("1", "1")


def test_a_broadcast_function_is_not_dropped_under_its_setting(server):
    # found by the connection fuzzer: `drop function` of a broadcast function left the setting
    # without its function (engine_check: "broadcast: f0 is not flagged")
    a = server.connect()
    assert a.admin("broadcast dropme on\n") == b"OK\r\n"
    assert a.admin("drop function dropme\n") == \
        b"ERR there are still connected workers or executing clients\r\n"
    assert b"dropme\ton\t" in a.admin("broadcast list\n", b".\n")
    assert a.admin("broadcast dropme off\n") == b"OK\r\n"
    assert a.admin("drop function dropme\n") == b"OK\r\n"


def test_foreground_submit_to_a_broadcast_function_is_an_error(server):
    a, c = server.connect(), server.connect()
    assert a.admin("broadcast flush on\n") == b"OK\r\n"
    w = worker(server)
    registered(a, b"flush", 1)
    for cmd in (SUBMIT_JOB, SUBMIT_JOB_HIGH):
        c.send_packet(cmd, b"flush", b"", b"fg")
        assert c.expect(ERROR) == \
            b"BROADCAST_FUNCTION\0A broadcast function takes background jobs only"
    future = str(int(time.time()) + 3600).encode()
    c.send_packet(SUBMIT_JOB_EPOCH, b"flush", b"", future, b"later")
    assert c.expect(ERROR).startswith(b"BROADCAST_FUNCTION\0A broadcast job runs at once")
    assert grab(w) is None, "nothing was delivered"
    # an ordinary function next to it is unaffected
    other = submit_bg(c, b"other", b"x")
    assert a.admin(b"submit flush --after " + other + b" p\n") == \
        b"ERR BROADCAST_FUNCTION A+broadcast+job+cannot+wait+for+other+jobs\r\n"
    assert int(stats(a)["broadcast_jobs_total"]) == 0


def test_worker_that_leaves_before_its_copy_loses_it_the_others_get_theirs(server):
    a, c = server.connect(), server.connect()
    assert a.admin("broadcast flush on\n") == b"OK\r\n"
    ws = [worker(server) for _ in range(3)]
    registered(a, b"flush", 3)
    submit_bg(c, b"flush", b"bye")
    ws[2].close()  # its copy still waits in its inbox: lost
    registered(a, b"flush", 2)
    for w in ws[:2]:
        got = grab(w)
        assert got[2] == b"bye"
        w.send_packet(WORK_COMPLETE, got[0], b"")
    st = stats(a)
    assert (st["broadcast_copies_delivered_total"], st["broadcast_copies_lost_total"]) == \
        ("2", "1")
    # a worker that took its copy and leaves before finishing loses it too: never re-queued
    submit_bg(c, b"flush", b"again")
    got = grab(ws[0])
    assert got[2] == b"again"
    ws[0].close()
    registered(a, b"flush", 1)
    got1 = grab(ws[1])
    assert got1[2] == b"again"
    ws[1].send_packet(WORK_COMPLETE, got1[0], b"")
    assert grab(ws[1]) is None, "the lost copy is not handed to another worker"
    poll(lambda: stats(a)["broadcast_copies_lost_total"] == "2", "the running copy lost")
    assert a.admin("status\n", b".\n") == b"flush\t0\t0\t1\n.\n"


def test_cant_do_drops_the_waiting_copies_of_that_function(server):
    a, c = server.connect(), server.connect()
    assert a.admin("broadcast flush on\n") == b"OK\r\n"
    w = worker(server)
    w.send_packet(CAN_DO, b"plain")
    registered(a, b"flush", 1)
    submit_bg(c, b"flush", b"x")
    submit_bg(c, b"plain", b"ordinary")
    w.send_packet(CANT_DO, b"flush")
    got = grab(w)
    assert got[1:] == [b"plain", b"ordinary"]
    assert stats(a)["broadcast_copies_lost_total"] == "1"


def test_running_copy_counts_in_status_and_waiting_copies_in_broadcast_list(server):
    a, c = server.connect(), server.connect()
    assert a.admin("broadcast flush on\n") == b"OK\r\n"
    w1, w2 = worker(server), worker(server)
    registered(a, b"flush", 2)
    submit_bg(c, b"flush", b"x")
    assert bc_list(a) == [[b"flush", b"on", b"2", b"2"]]
    assert a.admin("status\n", b".\n") == b"flush\t0\t0\t2\n.\n", "waiting copies: not in status"
    got = grab(w1, uniq=True)
    assert got[2] == b"", "a copy carries no unique"
    assert a.admin("status\n", b".\n") == b"flush\t1\t1\t2\n.\n", "a taken copy runs"
    assert bc_list(a) == [[b"flush", b"on", b"2", b"1"]]
    # turned off: copies already waiting are still delivered; new submits are ordinary
    assert a.admin("broadcast flush off\n") == b"OK\r\n"
    assert bc_list(a) == [[b"flush", b"off", b"2", b"1"]]
    assert grab(w2)[2] == b"x"
    assert bc_list(a) == []
    submit_bg(c, b"flush", b"one job")
    w1.send_packet(WORK_COMPLETE, got[0], b"")
    n = [grab(w) for w in (w1, w2)]
    assert sorted(x is None for x in n) == [False, True], "an ordinary job: one worker"


def test_broadcast_admin_usage_and_names(server):
    a = server.connect()
    assert a.admin("broadcast\n").startswith(b"ERR INVALID_ARGUMENTS")
    assert a.admin("broadcast f maybe\n").startswith(b"ERR INVALID_ARGUMENTS")
    assert a.admin("broadcast f%00x on\n").startswith(b"ERR INVALID_FUNCTION_NAME")
    assert a.admin("broadcast f%09tab on\n") == b"OK\r\n"
    assert bc_list(a) == [[b"f%09tab", b"on", b"0", b"0"]]
    assert a.admin("broadcast list\n", b".\n").endswith(b".\n")
    assert a.admin("broadcast f%09tab off\n") == b"OK\r\n"
    assert a.admin("broadcast nothere off\n") == b"OK\r\n"
    assert bc_list(a) == []


# ------------------------------------------------------------------ entry points


def test_admin_submit_fans_out_and_answers_the_broadcast_handle(server):
    a = server.connect()
    assert a.admin("broadcast flush on\n") == b"OK\r\n"
    ws = [worker(server) for _ in range(3)]
    registered(a, b"flush", 3)
    reply = a.admin("submit flush via+admin\n")
    assert reply.startswith(b"OK H:")
    for w in ws:
        got = grab(w)
        assert got[2] == b"via+admin" and got[0] != reply[3:-2]


def test_http_post_fans_out_and_a_foreground_post_is_refused(server_factory, tmp_path):
    pf = str(tmp_path / "http-port")
    s = server_factory("--http-port=0", "--http-listen=127.0.0.1", "--http-port-file=" + pf,
                       "--broadcast=flush")
    poll(lambda: os.path.exists(pf) and open(pf).read().strip(), "the HTTP port file")
    url = "http://127.0.0.1:%s/flush" % open(pf).read().strip()
    a = s.connect()
    ws = [worker(s) for _ in range(3)]
    registered(a, b"flush", 3)

    def curl(*headers):
        args = ["curl", "-sS", "--max-time", str(DEADLINE), "-D", "-",
                "--data-binary", "from http"]
        for h in headers:
            args += ["-H", h]
        r = subprocess.run(args + [url], capture_output=True, timeout=DEADLINE + 10)
        assert r.returncode == 0, r.stderr
        return r.stdout.decode()

    head = curl("X-Gearman-Background: true")
    assert head.startswith("HTTP/1.1 200") and "JOB_CREATED" in head
    for w in ws:
        assert grab(w)[2] == b"from http"
    head = curl()
    assert head.startswith("HTTP/1.1 400") and "X-Gearman-Command: ERROR" in head, head
    assert head.endswith("\r\n\r\nERROR BROADCAST_FUNCTION: A broadcast function takes "
                         "background jobs only\n"), head


def test_schedule_firing_a_broadcast_function_reaches_every_worker(server):
    a = server.connect()
    assert a.admin("broadcast tick on\n") == b"OK\r\n"
    ws = [worker(server, b"tick") for _ in range(3)]
    registered(a, b"tick", 3)
    for w in ws:
        w.send_packet(PRE_SLEEP)
    assert a.admin("schedule add t2 @every 1s tick ping\r\n") == b"OK\r\n"
    for w in ws:
        w.expect(NOOP, timeout=DEADLINE)
        assert grab(w)[1:] == [b"tick", b"ping"]
    assert a.admin("schedule remove t2\r\n") == b"OK\r\n"
    assert int(stats(a)["schedule_fired"]) >= 1


def test_load_of_a_job_of_a_broadcast_function_fans_out(server):
    a = server.connect()
    assert a.admin("broadcast flush on\n") == b"OK\r\n"
    ws = [worker(server) for _ in range(2)]
    registered(a, b"flush", 2)
    line = json.dumps({"type": "job", "id": 5, "func": "flush", "unique": "u",
                       "priority": "normal", "when": 0,
                       "payload_b64": base64.b64encode(b"loaded").decode()})
    assert a.admin("load " + line + "\n").startswith(b"OK H ")
    for w in ws:
        assert grab(w)[1:] == [b"flush", b"loaded"]


def test_dump_carries_the_setting_and_load_restores_it(server_factory, tmp_path):
    spuradmin = os.environ.get("SPURADMIN")
    if not spuradmin:
        pytest.skip("SPURADMIN is not set")
    src = server_factory("--broadcast=cfg")
    a = src.connect()
    assert a.admin("broadcast flush on\n") == b"OK\r\n"
    path = str(tmp_path / "d.jsonl")

    def tool(s, *args):
        r = subprocess.run([spuradmin, "-h", s.addr[0], "-p", str(s.addr[1]), "--timeout", "60"]
                           + list(args), capture_output=True, timeout=180)
        assert r.returncode == 0, r.stderr
        return r.stdout
    tool(src, "--dump", path)
    recs = [json.loads(l) for l in open(path) if '"record"' in l]
    assert sorted(r["key"] for r in recs if r["kind"] == 5) == ["cfg", "flush"]
    dst = server_factory()
    assert tool(dst, "--load", path).endswith(b"2 records\n")
    d = dst.connect()
    assert sorted(r[0] for r in bc_list(d)) == [b"cfg", b"flush"]


def test_config_file_key_and_the_stats_outputs(server_factory, tmp_path):
    conf = tmp_path / "spurd.conf"
    conf.write_text("--broadcast=flush\n--broadcast other  # a second one\n--broadcast-backlog=1\n")
    s = server_factory("--config-file=" + str(conf))
    a, c = s.connect(), s.connect()
    assert sorted(r[0] for r in bc_list(a)) == [b"flush", b"other"]
    w = worker(s)
    registered(a, b"flush", 1)
    submit_bg(c, b"flush", b"1")
    submit_bg(c, b"flush", b"2", cmd=SUBMIT_JOB_LOW_BG)  # past --broadcast-backlog=1: lost
    assert grab(w)[2] == b"1"
    js = json.loads(a.admin("stats json\n", b"\n"))
    assert js["broadcast"] == {"jobs_total": 2, "unheard_total": 0, "copies_delivered_total": 1,
                               "copies_lost_total": 1, "refused_total": 0, "copies_waiting": 0,
                               "functions": 2}
    m = a.admin(b"metrics\n", terminator=b"\n.\n").decode()
    for line in ("spur_broadcast_jobs_total 2", "spur_broadcast_copies_delivered_total 1",
                 "spur_broadcast_copies_lost_total 1", "spur_broadcast_functions 2"):
        assert "\n" + line + "\n" in m, line
    st = stats(a)
    assert (st["broadcast_jobs_total"], st["broadcast_copies_lost_total"]) == ("2", "1")


# ------------------------------------------------------------------ durability and access


def restart(s, factory, *args):
    s.stop(signal.SIGKILL)
    s.proc = None  # killed on purpose
    s2 = factory(*args)
    deadline = time.monotonic() + DEADLINE
    while "store: replayed" not in s2.stderr_text():
        assert time.monotonic() < deadline, "replay did not finish"
        time.sleep(0.01)
    return s2


def test_broadcast_setting_survives_kill_9_with_a_store(server_factory, tmp_path):
    arg = "--store=sqlite:" + str(tmp_path / "j.db")
    s = server_factory(arg)
    a, c = s.connect(), s.connect()
    assert a.admin("broadcast flush on\n") == b"OK\r\n"
    assert a.admin("broadcast gone on\n") == b"OK\r\n"
    assert a.admin("broadcast gone off\n") == b"OK\r\n"
    submit_bg(c, b"sync", b"")  # its JOB_CREATED comes once the batch with the records is durable
    s2 = restart(s, server_factory, arg)
    a2, c2 = s2.connect(), s2.connect()
    assert bc_list(a2) == [[b"flush", b"on", b"0", b"0"]]
    ws = [worker(s2) for _ in range(3)]
    registered(a2, b"flush", 3)
    submit_bg(c2, b"flush", b"after restart")
    for w in ws:
        assert grab(w)[2] == b"after restart"
    # copies are not stored: a kill -9 with copies waiting brings none back
    w4 = worker(s2)
    registered(a2, b"flush", 4)
    submit_bg(c2, b"flush", b"unstored")
    submit_bg(c2, b"sync", b"")
    s3 = restart(s2, server_factory, arg)
    a3 = s3.connect()
    w5 = worker(s3)
    registered(a3, b"flush", 1)
    assert grab(w5) is None
    del w4


def test_admin_allow_refuses_broadcast_to_a_read_only_connection(server_factory):
    s = server_factory("--admin-allow=127.0.0.2/32")
    a = s.connect()
    assert a.admin("broadcast flush on\n") == b"ERR PERMISSION_DENIED Not+allowed+from+this+connection\r\n"
    assert a.admin("broadcast list\n", b".\n") == b".\n", "reading stays allowed"
    import socket
    raw = socket.socket()
    raw.bind(("127.0.0.2", 0))
    raw.connect(s.addr)
    raw.sendall(b"broadcast flush on\n")
    assert raw.recv(100) == b"OK\r\n"
    raw.close()
    assert bc_list(a) == [[b"flush", b"on", b"0", b"0"]]


def test_broadcast_reply_waits_behind_a_reply_held_for_the_store(server_factory, tmp_path):
    """With --store, a background JOB_CREATED waits until its job is durable; a broadcast
    submitted right after it on the same connection is answered after it, in request order."""
    s = server_factory("--store=sqlite:" + str(tmp_path / "j.db"), "--broadcast=flush")
    a, c = s.connect(), s.connect()
    w = worker(s)
    registered(a, b"flush", 1)
    c.send(packet(SUBMIT_JOB_BG, b"plain", b"", b"stored") +
           packet(SUBMIT_JOB_BG, b"flush", b"", b"fanned"))
    first, second = c.expect(JOB_CREATED), c.expect(JOB_CREATED)
    number = lambda h: int(h.rsplit(b":", 1)[1])
    assert number(first) < number(second), (first, second)
    assert grab(w)[2] == b"fanned"
