# SPDX-License-Identifier: BSD-3-Clause
"""Flow control (docs/FLOW-CONTROL.md): per-function concurrency and rate limits, per-key limits
with fair share between keys, weights between functions, pause and resume, all enforced by the
server when a worker asks for work, with unmodified workers."""
import base64
import json
import os
import random
import signal
import subprocess
import time

import pytest

from conftest import poll
from gearman_wire import (CAN_DO, CANT_DO, ECHO_REQ, ECHO_RES, GRAB_JOB, GRAB_JOB_UNIQ,
                          JOB_ASSIGN, JOB_ASSIGN_UNIQ, JOB_CREATED, NO_JOB, NOOP, PRE_SLEEP,
                          SUBMIT_JOB_BG, SUBMIT_JOB_LOW_BG, WORK_COMPLETE, WORK_FAIL)


def limit_rows(a):
    """`limit list` as {name: {field: value}}."""
    out = a.admin("limit list\n", b".\n")
    rows = {}
    for line in out.split(b"\n")[:-2]:
        cols = line.decode().split("\t")
        rows[cols[0]] = dict(c.split("=", 1) for c in cols[1:])
    return rows


def submit_bg(c, func, unique, data=b"x", cmd=SUBMIT_JOB_BG):
    c.send_packet(cmd, func, unique, data)
    return c.expect(JOB_CREATED)


def grab(w):
    """GRAB_JOB_UNIQ: (handle, unique) or None for NO_JOB."""
    w.send_packet(GRAB_JOB_UNIQ)
    magic, cmd, body = w.read_packet()
    if cmd == NO_JOB:
        return None
    assert cmd == JOB_ASSIGN_UNIQ, (cmd, body)
    h, _f, u, _d = body.split(b"\0", 3)
    return h, u


def quiet(w):
    """Asserts nothing was queued to w before the reply to an ECHO_REQ sent now (no NOOP)."""
    w.send_packet(ECHO_REQ, b"sync")
    assert w.expect(ECHO_RES) == b"sync"


def worker(server, *funcs):
    w = server.connect()
    for f in funcs:
        w.send_packet(CAN_DO, f)
    return w


# ------------------------------------------------------------ the admin commands

def test_limit_commands_reply_and_list(server):
    a = server.connect()
    assert a.admin("limit list\n", b".\n") == b".\n"
    assert a.admin("limit F concurrency 3\n") == b"OK\r\n"
    assert a.admin("limit F rate 50/s\n") == b"OK\r\n"
    assert a.admin("limit F key-concurrency 1\n") == b"OK\r\n"
    assert a.admin("limit F key-rate 10/m\n") == b"OK\r\n"
    assert a.admin("weight F 3\n") == b"OK\r\n"
    assert a.admin("pause F\n") == b"OK\r\n"
    out = a.admin("limit list\n", b".\n")
    assert out == (b"F\tconcurrency=3\trate=50/s\tkey-concurrency=1\tkey-rate=10/m\tweight=3"
                   b"\tpaused=1\trunning=0\tready=0\theld-paused=0\theld-concurrency=0"
                   b"\theld-rate=0\theld-key=0\tkeys=0\tkeys-waiting=0\n.\n")
    assert a.admin("limit F off\n") == b"OK\r\n"
    assert limit_rows(a)["F"]["concurrency"] == "-" and limit_rows(a)["F"]["paused"] == "1"
    assert a.admin("resume F\n") == b"OK\r\n"
    assert a.admin("weight F 1\n") == b"OK\r\n"
    assert a.admin("limit list\n", b".\n") == b".\n"  # all back to the defaults: forgotten
    assert a.admin("limit F rate 7/h\n") == b"OK\r\n"
    assert limit_rows(a)["F"]["rate"] == "7/h"
    assert a.admin("limit F rate 0\n") == b"OK\r\n"  # 0 clears one limit
    assert a.admin("limit list\n", b".\n") == b".\n"
    usage = (b"ERR INVALID_ARGUMENTS Usage:+limit+FUNC+concurrency+N|rate+R/s|"
             b"key-concurrency+N|key-rate+R/s|off+or+limit+list\r\n")
    for bad in ("limit F", "limit F concurrency", "limit F concurrency x", "limit F rate 5",
                "limit F rate 5/d", "limit F rate 0/s", "limit F speed 3",
                "limit F concurrency 1000001", "limit"):
        assert a.admin(bad + "\n") == usage, bad
    assert a.admin("pause\n") == b"ERR INVALID_ARGUMENTS Usage:+pause+FUNC\r\n"
    assert a.admin("resume a b\n") == b"ERR INVALID_ARGUMENTS Usage:+resume+FUNC\r\n"
    assert a.admin("weight F 0\n") == b"ERR INVALID_ARGUMENTS Usage:+weight+FUNC+W+(1..1000000)\r\n"
    assert a.admin("weight F\n") == b"ERR INVALID_ARGUMENTS Usage:+weight+FUNC+W+(1..1000000)\r\n"
    # a function named "list" can be limited (`limit list` must be the whole line)
    assert a.admin("limit list concurrency 2\n") == b"OK\r\n"
    assert limit_rows(a)["list"]["concurrency"] == "2"
    # a function with settings is not dropped under them
    assert a.admin("drop function list\n") == \
        b"ERR there are still connected workers or executing clients\r\n"


def test_limit_commands_are_state_changing(server_factory):
    s = server_factory("--admin-allow=unix")  # TCP admin connections only read
    a = s.connect()
    assert a.admin("limit F concurrency 1\n").startswith(b"ERR PERMISSION_DENIED")
    assert a.admin("pause F\n").startswith(b"ERR PERMISSION_DENIED")
    assert a.admin("resume F\n").startswith(b"ERR PERMISSION_DENIED")
    assert a.admin("weight F 2\n").startswith(b"ERR PERMISSION_DENIED")
    assert a.admin("limit list concurrency 2\n").startswith(b"ERR PERMISSION_DENIED")
    assert a.admin("limit list\n", b".\n") == b".\n"


# ------------------------------------------------------------ concurrency

def test_concurrency_limit_holds_and_wakes_one_worker(server):
    a, c = server.connect(), server.connect()
    assert a.admin("limit F concurrency 2\n") == b"OK\r\n"
    for i in range(6):
        submit_bg(c, b"F", b"u%d" % i)
    ws = [worker(server, b"F") for _ in range(5)]
    got = [grab(w) for w in ws]
    running = [(w, g) for w, g in zip(ws, got) if g is not None]
    assert len(running) == 2, got  # the others got NO_JOB although 4 jobs are ready
    rows = limit_rows(a)["F"]
    assert rows["running"] == "2" and rows["ready"] == "4" and rows["held-concurrency"] == "4"
    idle = [w for w in ws if w not in [r[0] for r in running]]
    for w in idle:
        w.send_packet(PRE_SLEEP)
    for w in idle:
        quiet(w)  # asleep: nothing for them while F is at its limit
    w0, (h0, _u) = running[0]
    w0.send_packet(WORK_COMPLETE, h0, b"done")
    # exactly one sleeper is woken (NOOP), no storm
    woken = None
    deadline = time.monotonic() + 30
    while woken is None and time.monotonic() < deadline:
        for w in idle:
            w.send_packet(ECHO_REQ, b"sync")
            _m, cmd, _b = w.read_packet()
            if cmd == NOOP:
                assert woken is None, "two workers woken for one free slot"
                woken = w
                assert w.expect(ECHO_RES) == b"sync"
    assert woken is not None
    for w in idle:
        if w is not woken:
            quiet(w)
    assert grab(woken) is not None
    assert limit_rows(a)["F"]["running"] == "2"


def test_concurrency_limit_with_real_gearman_workers(server):
    """Four `gearman -w` workers of a function limited to 1: the jobs run one at a time (each
    job's shell command checks and holds a lock file)."""
    a, c = server.connect(), server.connect()
    host, port = server.addr
    assert a.admin("limit slow concurrency 1\n") == b"OK\r\n"
    lock = os.path.join(server.tmpdir, "lock")
    bad = os.path.join(server.tmpdir, "overlap")
    script = f"if ! mkdir {lock} 2>/dev/null; then touch {bad}; fi; sleep 0.05; rmdir {lock}; cat"
    procs = [subprocess.Popen(["gearman", "-h", host, "-p", str(port), "-w", "-f", "slow", "--",
                               "sh", "-c", script], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL) for _ in range(4)]
    try:
        for i in range(12):
            submit_bg(c, b"slow", b"s%d" % i)
        poll(lambda: a.admin("status\n", b".\n").startswith(b"slow\t0\t0\t4\n"),
             "all 12 jobs done", timeout=120)
        assert not os.path.exists(bad), "two jobs of slow ran at once"
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_concurrency_never_exceeded_while_workers_fail_leave_and_jobs_are_cancelled(server):
    """A random mix of grabs, completions, failures, disconnects and cancels: the jobs held by
    live workers never pass the limit, and the server's count agrees."""
    rnd = random.Random(30)
    a, c = server.connect(), server.connect()
    assert a.admin("limit P concurrency 3\n") == b"OK\r\n"
    handles = [submit_bg(c, b"P", b"p%d" % i) for i in range(60)]
    ws = {i: worker(server, b"P") for i in range(8)}
    held = {}  # worker index -> list of handles
    for step in range(300):
        i = rnd.choice(list(ws))
        w = ws[i]
        act = rnd.random()
        if act < 0.45:
            g = grab(w)
            if g is not None:
                held.setdefault(i, []).append(g[0])
        elif act < 0.65 and held.get(i):
            w.send_packet(WORK_COMPLETE, held[i].pop(), b"")
        elif act < 0.75 and held.get(i):
            w.send_packet(WORK_FAIL, held[i].pop())
        elif act < 0.85:
            w.close()  # its jobs go back to the queue
            held.pop(i, None)
            ws[i] = w = worker(server, b"P")
        elif act < 0.92 and held.get(i):
            h = held[i].pop()
            a.admin("cancel job %s\n" % h.decode())
            w.send_packet(WORK_COMPLETE, h, b"")  # it finishes; nobody hears
        else:
            if step % 5 == 0:
                submit_bg(c, b"P", b"q%d" % step)
        live = sum(len(v) for v in held.values())
        assert live <= 3, (step, held)
        quiet(w)
        running = int(limit_rows(a)["P"]["running"])
        assert running <= 3 and running >= live, (step, running, held)


# ------------------------------------------------------------ pause

def test_paused_function_waits_then_runs_on_resume(server):
    a, c = server.connect(), server.connect()
    host, port = server.addr
    assert a.admin("pause echo\n") == b"OK\r\n"
    for i in range(5):
        submit_bg(c, b"echo", b"e%d" % i)
    w = worker(server, b"echo", b"other")
    submit_bg(c, b"other", b"o1")
    assert grab(w)[1] == b"o1"  # another function's job still comes
    assert grab(w) is None
    proc = subprocess.Popen(["gearman", "-h", host, "-p", str(port), "-w", "-f", "echo", "--",
                             "cat"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        poll(lambda: b"\techo\n" in a.admin("workers\n", b".\n") or
             b" echo\n" in a.admin("workers\n", b".\n"), "the gearman worker registered")
        assert a.admin("status\n", b".\n").count(b"echo\t5\t0\t") == 1
        assert limit_rows(a)["echo"]["held-paused"] == "5"
        assert a.admin("resume echo\n") == b"OK\r\n"
        poll(lambda: b"echo\t0\t0\t" in a.admin("status\n", b".\n"), "the jobs ran on resume",
             timeout=60)
    finally:
        proc.kill()
        proc.wait()


# ------------------------------------------------------------ rate

def test_rate_limit_spaces_job_starts_and_a_timer_wakes_the_sleeper(server):
    a, c = server.connect(), server.connect()
    assert a.admin("limit R rate 5/s\n") == b"OK\r\n"
    for i in range(11):
        submit_bg(c, b"R", b"r%d" % i)
    w = worker(server, b"R")
    t0 = time.monotonic()
    started = 0
    deadline = t0 + 60
    while started < 11 and time.monotonic() < deadline:
        g = grab(w)
        if g is None:
            w.send_packet(PRE_SLEEP)
            w.expect(NOOP, timeout=30)  # the bucket's timer, not a poll from us
            continue
        started += 1
        w.send_packet(WORK_COMPLETE, g[0], b"")
    elapsed = time.monotonic() - t0
    assert started == 11
    # a burst of at most 5, then 5 a second: the 11th start is at least 1.2 s after the first
    assert elapsed >= 1.0, elapsed


# ------------------------------------------------------------ keys and fair share

def test_key_with_1000_jobs_does_not_delay_another_keys_5(server):
    a, c = server.connect(), server.connect()
    assert a.admin("limit K key-concurrency 1\n") == b"OK\r\n"
    for i in range(1000):
        c.send_packet(SUBMIT_JOB_BG, b"K", b"big:%d" % i, b"x")
    for i in range(1000):
        c.expect(JOB_CREATED)
    for i in range(5):
        submit_bg(c, b"K", b"small:%d" % i)
    rows = limit_rows(a)["K"]
    assert rows["keys"] == "2" and rows["ready"] == "1005"
    ws = [worker(server, b"K") for _ in range(4)]
    order = []
    while len([u for u in order if u.startswith(b"small:")]) < 5:
        for w in ws:
            g = grab(w)
            if g is None:
                continue
            order.append(g[1])
            w.send_packet(WORK_COMPLETE, g[0], b"")
            quiet(w)
        assert len(order) <= 20, order
    # the keys took turns: the five small jobs ran among the first ten, in their order
    assert order.index(b"small:4") < 10, order
    assert [u for u in order if u.startswith(b"small:")] == [b"small:%d" % i for i in range(5)]
    assert limit_rows(a)["K"]["keys"] == "1"


def test_key_concurrency_holds_per_key_and_counts_waiting_keys(server):
    a, c = server.connect(), server.connect()
    assert a.admin("limit K key-concurrency 2\n") == b"OK\r\n"
    for k in (b"a", b"b"):
        for i in range(4):
            submit_bg(c, b"K", k + b":%d" % i)
    submit_bg(c, b"K", b"nosep")  # a unique without ':' is its own key
    ws = [worker(server, b"K") for _ in range(8)]
    got = [g for g in (grab(w) for w in ws) if g is not None]
    keys = sorted(g[1].split(b":")[0] for g in got)
    assert keys == [b"a", b"a", b"b", b"b", b"nosep"], keys
    rows = limit_rows(a)["K"]
    assert rows["keys-waiting"] == "2" and rows["held-key"] == "4" and rows["keys"] == "3"
    stats = a.admin("stats\n", b"END\r\n")
    assert b"STAT flow_keys_waiting 2\r\n" in stats and b"STAT flow_held_key 4\r\n" in stats
    # turning the key limit off puts the jobs back in one queue: all of them may start
    assert a.admin("limit K off\n") == b"OK\r\n"
    assert limit_rows(a) == {}
    more = [g for g in (grab(w) for w in ws) if g is not None]
    assert sorted(g[1] for g in more) == [b"a:2", b"a:3", b"b:2", b"b:3"], more


def test_key_separator_option(server_factory):
    s = server_factory("--limit-key-separator=/", "--limit=K:key-concurrency=1")
    a, c = s.connect(), s.connect()
    for u in (b"t1/x", b"t1/y", b"t2/x"):
        submit_bg(c, b"K", u)
    ws = [worker(s, b"K") for _ in range(3)]
    got = sorted(g[1] for g in (grab(w) for w in ws) if g is not None)
    assert got == [b"t1/x", b"t2/x"], got


# ------------------------------------------------------------ weights

def test_weights_3_to_1_split_the_grabs(server):
    a, c = server.connect(), server.connect()
    assert a.admin("weight A 3\n") == b"OK\r\n"
    for i in range(300):
        c.send_packet(SUBMIT_JOB_BG, b"A", b"a%d" % i, b"x")
        c.send_packet(SUBMIT_JOB_BG, b"B", b"b%d" % i, b"x")
    for i in range(600):
        c.expect(JOB_CREATED)
    w = worker(server, b"A", b"B")
    counts = {b"A": 0, b"B": 0}
    for _ in range(200):
        h, u = grab(w)
        counts[b"A" if u.startswith(b"a") else b"B"] += 1
        w.send_packet(WORK_COMPLETE, h, b"")
    ratio = counts[b"A"] / counts[b"B"]
    assert 3 * 0.8 <= ratio <= 3 * 1.2, counts


# ------------------------------------------------------------ configuration, durability

def test_limit_option_and_config_file(server_factory, tmp_path):
    conf = tmp_path / "spurd.conf"
    conf.write_text("--limit=G:concurrency=2,rate=10/m\n--limit=H:weight=4\n")
    s = server_factory("--config-file=" + str(conf), "--limit=I:key-concurrency=3,key-rate=2/s")
    rows = limit_rows(s.connect())
    assert rows["G"]["concurrency"] == "2" and rows["G"]["rate"] == "10/m"
    assert rows["H"]["weight"] == "4"
    assert rows["I"]["key-concurrency"] == "3" and rows["I"]["key-rate"] == "2/s"


def test_bad_limit_option_is_refused():
    binary = os.environ.get("SPURD")
    if not binary:
        pytest.skip("SPURD is not set")
    for bad in ("--limit=F", "--limit=F:concurrency=x", "--limit=F:rate=3", "--limit=:rate=3/s",
                "--limit-key-separator=ab"):
        r = subprocess.run([binary, "--port=0", bad], capture_output=True, timeout=30)
        assert r.returncode != 0 and b"--limit" in r.stderr, (bad, r.stderr)


@pytest.fixture(params=["sqlite", "postgres"])
def store_arg(request, tmp_path):
    """spurd's --store over each backend (postgres skips without Debian's postgresql)."""
    if request.param == "sqlite":
        return "--store=sqlite:" + str(tmp_path / "jobs.db")
    cluster = request.getfixturevalue("pg_cluster")
    return "--store=postgres:" + cluster.conninfo(cluster.new_database())


def test_flow_settings_survive_kill_9_with_a_store(server_factory, store_arg):
    s = server_factory(store_arg)
    a, c = s.connect(), s.connect()
    for line in ("limit D concurrency 4", "limit D rate 20/m", "limit D key-concurrency 2",
                 "weight E 5", "pause E", "limit X concurrency 1", "limit X off"):
        assert a.admin(line + "\n") == b"OK\r\n", line
    submit_bg(c, b"E", b"e1")  # durable once created: the records went in this batch or before
    before = limit_rows(a)
    s.stop(signal.SIGKILL)
    s.proc = None  # killed on purpose: the factory does not check its exit code
    s2 = server_factory(store_arg)
    poll(lambda: "store: replayed" in s2.stderr_text(), "the replay")
    a2 = s2.connect()
    after = limit_rows(a2)
    assert set(after) == {"D", "E"}
    for f in ("D", "E"):
        for k in ("concurrency", "rate", "key-concurrency", "key-rate", "weight", "paused"):
            assert after[f][k] == before[f][k], (f, k)
    assert after["E"]["held-paused"] == "1"  # its job is back and still held
    w = worker(s2, b"E")
    assert grab(w) is None
    assert a2.admin("resume E\n") == b"OK\r\n"
    assert grab(w)[1] == b"e1"


def test_dump_and_load_carry_the_settings(server_factory):
    s = server_factory()
    a = s.connect()
    assert a.admin("limit D concurrency 4\n") == b"OK\r\n"
    assert a.admin("pause D\n") == b"OK\r\n"
    dump = a.admin("dump\n", b"\n.\n")
    rec = [l for l in dump.split(b"\n") if l.startswith(b"{") and json.loads(l).get("kind") == 6]
    assert len(rec) == 1, dump
    assert base64.b64decode(json.loads(rec[0])["value_b64"]) == b"concurrency=4,paused=1"
    s2 = server_factory()
    a2 = s2.connect()
    reply = a2.admin(b"load " + rec[0] + b"\n")
    assert reply == b"OK\r\n", reply
    rows = limit_rows(a2)
    assert rows["D"]["concurrency"] == "4" and rows["D"]["paused"] == "1"


# ------------------------------------------------------------ counters

def test_counters_in_stats_json_and_metrics(server):
    a, c = server.connect(), server.connect()
    assert a.admin("pause M\n") == b"OK\r\n"
    assert a.admin("limit N concurrency 1\n") == b"OK\r\n"
    submit_bg(c, b"M", b"m1")
    submit_bg(c, b"M", b"m2")
    stats = a.admin("stats\n", b"END\r\n")
    assert b"STAT flow_functions_paused 1\r\n" in stats
    assert b"STAT flow_functions_limited 1\r\n" in stats
    assert b"STAT flow_held_paused 2\r\n" in stats
    js = a.admin("stats json\n", b"\n")
    assert b'"flow":{"functions_paused":1,"functions_limited":1,"held":{"paused":2,' in js
    m = a.admin("metrics\n", b"\n.\n")
    assert b'spur_flow_jobs_held{reason="paused"} 2\n' in m
    assert b"spur_flow_functions_paused 1\n" in m


def test_post_admin_and_spuradmin_command_reach_the_commands(server_factory, tmp_path):
    pf = str(tmp_path / "http-port")
    s = server_factory("--http-port=0", "--http-listen=127.0.0.1", "--http-port-file=" + pf,
                       "--http-admin")
    poll(lambda: os.path.exists(pf) and open(pf).read().strip() != "", "the HTTP port file")
    url = "http://127.0.0.1:%s/admin" % open(pf).read().strip()
    r = subprocess.run(["curl", "-sS", "--max-time", "30", "-H", "X-Spur-Admin: 1",
                        "--data-binary", "limit H concurrency 2", url],
                       capture_output=True, timeout=40)
    assert r.returncode == 0 and r.stdout == b"OK\r\n", r
    tool = os.environ.get("SPURADMIN")
    if not tool:
        pytest.skip("SPURADMIN is not set")
    r = subprocess.run([tool, "-h", s.addr[0], "-p", str(s.addr[1]), "--command", "pause H"],
                       capture_output=True, timeout=40)
    assert r.returncode == 0, r
    r = subprocess.run([tool, "-h", s.addr[0], "-p", str(s.addr[1]), "--command", "limit list"],
                       capture_output=True, timeout=40)
    assert r.returncode == 0 and r.stdout.startswith(b"H\tconcurrency=2\t"), r
    assert b"\tpaused=1\t" in r.stdout


def test_limit_option_wins_over_the_stored_limits_after_the_replay(server_factory, store_arg):
    s = server_factory(store_arg)
    a, c = s.connect(), s.connect()
    assert a.admin("limit G concurrency 5\n") == b"OK\r\n"
    assert a.admin("limit G rate 9/s\n") == b"OK\r\n"
    assert a.admin("pause G\n") == b"OK\r\n"
    submit_bg(c, b"G", b"g1")  # durable: the records went in this batch or before
    s.stop(signal.SIGKILL)
    s.proc = None
    s2 = server_factory(store_arg, "--limit=G:concurrency=2")
    poll(lambda: "store: replayed" in s2.stderr_text(), "the replay")
    g = limit_rows(s2.connect())["G"]
    # the option's limits replace the stored ones (rate too); the stored pause stays
    assert (g["concurrency"], g["rate"], g["paused"]) == ("2", "-", "1"), g
