# SPDX-License-Identifier: BSD-3-Clause
"""Several spurds on one PostgreSQL database (docs/HA.md): each owns its rows under its server id
and holds a lease; a standby takes over a dead server's jobs (--takeover at start, or
--takeover-after at run time), never a live server's; an outage is logged once, not per job.
Real PostgreSQL (conftest.pg_cluster), no mocks."""
import json
import os
import signal
import subprocess
import threading
import time

import pytest

from conftest import KILL_WAIT, start_spurd
from gearman_wire import (CAN_DO, ERROR, GRAB_JOB_UNIQ, JOB_ASSIGN_UNIQ, JOB_CREATED, NO_JOB,
                          SUBMIT_JOB_BG, WORK_COMPLETE, packet)
from test_store import PgStore, ask, wait_replayed

pytestmark = pytest.mark.spur_only


@pytest.fixture
def pg(pg_cluster):
    st = PgStore(pg_cluster)
    yield st
    if not pg_cluster.running:
        pg_cluster.ctl("start")


def kill9(s):
    s.proc.kill()
    s.proc.wait(timeout=KILL_WAIT)
    s.proc = None  # killed on purpose: the factory does not check its exit code


def submit(s, payloads, func=b"ha"):
    """Submits one background job per payload; returns their handles (all acknowledged)."""
    c = s.connect(timeout=60)
    c.send(b"".join(packet(SUBMIT_JOB_BG, func, b"", p) for p in payloads))
    return [c.expect(JOB_CREATED, timeout=60) for _ in payloads]


def listed(s):
    """The handles of the jobs a server holds ("show jobs")."""
    lines = ask(s.connect(timeout=60), b"show jobs\n").split(b"\n")[:-2]
    return [l.split(b"\t")[0] for l in lines]


def drain(servers, func=b"ha"):
    """One worker connected to every server grabs and completes jobs until none has one left.
    Returns [(handle, payload)] in the order run."""
    ws = []
    for s in servers:
        w = s.connect(timeout=60)
        w.send_packet(CAN_DO, func)
        ws.append(w)
    got = []
    idle = 0
    while idle < len(ws):
        idle = 0
        for w in ws:
            w.send_packet(GRAB_JOB_UNIQ)
            _, cmd, body = w.read_packet(timeout=60)
            if cmd == NO_JOB:
                idle += 1
                continue
            assert cmd == JOB_ASSIGN_UNIQ, cmd
            h, _, _, d = body.split(b"\0", 3)
            got.append((h, d))
            w.send_packet(WORK_COMPLETE, h, b"")
    return got


def owners(pg):
    rows = pg.sql("SELECT owner, count(*) FROM spur_jobs GROUP BY owner ORDER BY owner").split()
    return dict((r.split("|")[0], int(r.split("|")[1])) for r in rows)


def poll(what, cond, timeout=120):
    """Bounded wait for cond() (a result, not a time): returns its value."""
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        assert time.monotonic() < deadline, "timed out waiting for " + what
        time.sleep(0.05)


def test_two_servers_share_a_database_and_each_runs_only_its_own(server_factory, pg):
    a = server_factory(pg.arg, "--server-id=a")
    b = server_factory(pg.arg, "--server-id=b")
    ha = submit(a, [b"a%d" % i for i in range(200)])
    hb = submit(b, [b"b%d" % i for i in range(200)])
    assert not set(ha) & set(hb)
    ida = {h.rsplit(b":", 1)[1] for h in ha}
    assert not ida & {h.rsplit(b":", 1)[1] for h in hb}, "ids never collide across servers"
    assert owners(pg) == {"a": 200, "b": 200}
    # each replays only its own rows after a kill -9
    kill9(a)
    kill9(b)
    a = server_factory(pg.arg, "--server-id=a")
    b = server_factory(pg.arg, "--server-id=b")
    wait_replayed(a)
    wait_replayed(b)
    assert sorted(listed(a)) == sorted(ha)
    assert sorted(listed(b)) == sorted(hb)
    # a worker connected to both gets every job exactly once
    got = drain([a, b])
    payloads = [d for _, d in got]
    assert len(payloads) == 400 and len(set(payloads)) == 400, "no job twice, none lost"
    assert sorted(h for h, _ in got) == sorted(ha + hb)
    poll("the deletions", lambda: owners(pg) == {})


def submit_under_load_then_kill(s, seconds=0.5):
    """Three clients submit as fast as they can; s is SIGKILLed mid-load. Returns the payloads of
    every job whose JOB_CREATED reached a client."""
    acked, lock, stop = set(), threading.Lock(), threading.Event()

    def submitter(k):
        try:
            cc = s.connect(timeout=30)
            n = 0
            while not stop.is_set():
                ps = [b"c%dn%d" % (k, n + i) for i in range(32)]
                cc.send(b"".join(packet(SUBMIT_JOB_BG, b"ha", b"", p) for p in ps))
                for p in ps:
                    cc.expect(JOB_CREATED)
                    with lock:
                        acked.add(p)
                n += 32
        except (ConnectionError, OSError, AssertionError, TimeoutError):
            return

    threads = [threading.Thread(target=submitter, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    c = s.connect(timeout=60)
    poll("load", lambda: len(acked) > 500 or not all(t.is_alive() for t in threads))
    kill9(s)
    stop.set()
    for t in threads:
        t.join(timeout=60)
    assert acked, "some submits were acknowledged"
    return acked


def test_standby_takes_over_a_killed_server_and_loses_nothing(server_factory, pg):
    a = server_factory(pg.arg, "--server-id=a")
    # jobs the dead server had assigned to a worker but not finished run again on the standby
    assigned = submit(a, [b"assigned"])
    w = a.connect(timeout=60)
    w.send_packet(CAN_DO, b"ha")
    w.send_packet(GRAB_JOB_UNIQ)
    assert w.expect(JOB_ASSIGN_UNIQ).split(b"\0")[0] == assigned[0]
    acked = submit_under_load_then_kill(a)
    standby = server_factory(pg.arg, "--server-id=standby", "--takeover=a")
    wait_replayed(standby)
    assert "took over" in standby.stderr_text() and "jobs of server a" in standby.stderr_text()
    assert set(owners(pg)) == {"standby"}
    got = drain([standby])
    ran = [d for _, d in got]
    assert len(ran) == len(set(ran)), "no job twice"
    lost = (acked | {b"assigned"}) - set(ran)
    assert not lost, f"{len(lost)} of {len(acked)} acknowledged jobs lost"
    print(f"takeover: {len(acked)} acknowledged, {len(ran)} run on the standby")


def test_takeover_of_a_live_server_is_refused(server_factory, pg):
    a = server_factory(pg.arg, "--server-id=a")
    submit(a, [b"x"])
    r = subprocess.run([os.environ["SPURD"], "--port=0", "--listen=127.0.0.1", pg.arg,
                        "--server-id=thief", "--takeover=a"], capture_output=True, timeout=120)
    assert r.returncode == 1
    assert b"--takeover=a refused: that server is alive" in r.stderr, r.stderr
    assert owners(pg) == {"a": 1}
    r = subprocess.run([os.environ["SPURD"], "--port=0", "--listen=127.0.0.1", pg.arg,
                        "--server-id=thief", "--takeover=nobody"], capture_output=True, timeout=120)
    assert r.returncode == 1 and b"no server with that id" in r.stderr, r.stderr


def test_automatic_takeover_after_the_lease_expires(server_factory, pg):
    standby = server_factory(pg.arg, "--server-id=standby", "--takeover-after=1")
    a = server_factory(pg.arg, "--server-id=a")
    sent = [b"j%d" % i for i in range(50)]
    submit(a, sent)
    # a live server renews its lease (and holds its lock): its jobs stay its own
    first = pg.sql("SELECT renewed_at FROM spur_servers WHERE server_id = 'a'")
    poll("a lease renewal",
         lambda: pg.sql("SELECT renewed_at FROM spur_servers WHERE server_id = 'a'") != first)
    assert owners(pg) == {"a": 50}
    kill9(a)
    poll("the takeover", lambda: owners(pg) == {"standby": 50})
    poll("the jobs in the standby's queue", lambda: len(listed(standby)) == 50)
    assert "store: took over 50 jobs (of server a" in standby.stderr_text()
    # the jobs were renumbered into the standby's ids (a's were above them): rows too
    poll("the renumbered rows", lambda: int(pg.sql(
        "SELECT count(*) FROM spur_jobs j JOIN spur_servers s ON s.server_id = 'standby'"
        " WHERE j.id >> 56 = s.slot")) == 50)
    got = drain([standby])
    assert sorted(d for _, d in got) == sorted(sent), "each job once"
    poll("the deletions", lambda: owners(pg) == {})


def test_two_standbys_racing_exactly_one_gets_the_rows(server_factory, pg):
    a = server_factory(pg.arg, "--server-id=a")
    sent = [b"r%d" % i for i in range(100)]
    submit(a, sent)
    kill9(a)
    procs = []
    tmp = []
    for k in range(2):
        d = os.path.join(a.tmpdir, "standby%d" % k)
        os.makedirs(d)
        tmp.append(d)
    results = [None, None]

    def start(k):
        results[k] = server_factory(pg.arg, "--server-id=s%d" % k, "--takeover=a", tmpdir=tmp[k])

    threads = [threading.Thread(target=start, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    s0, s1 = results
    assert s0 is not None and s1 is not None
    wait_replayed(s0)
    wait_replayed(s1)
    counts = sorted([len(listed(s0)), len(listed(s1))])
    assert counts == [0, 100], counts
    assert sorted(owners(pg).values()) == [100]
    got = drain([s0, s1])
    assert sorted(d for _, d in got) == sorted(sent), "each job once"


def test_rows_of_a_one_server_database_are_migrated_and_kept(server_factory, pg):
    """A database written before servers shared it (schema 1: spur_jobs without an owner)."""
    pg.sql("CREATE TABLE spur_meta (key text PRIMARY KEY, value bigint NOT NULL);"
           "CREATE TABLE spur_jobs (id bigint PRIMARY KEY, prio smallint NOT NULL,"
           " run_at bigint NOT NULL, func bytea NOT NULL, uniq bytea NOT NULL,"
           " reducer bytea NOT NULL, data bytea NOT NULL);"
           "INSERT INTO spur_meta VALUES ('schema', 1), ('max_id', 7);"
           "INSERT INTO spur_jobs VALUES (5, 1, 0, 'ha'::bytea, 'u5'::bytea, ''::bytea, 'five'),"
           " (7, 0, 0, 'ha'::bytea, ''::bytea, ''::bytea, 'seven')")
    s = server_factory(pg.arg, "--server-id=new")
    wait_replayed(s)
    assert "2 stored jobs without an owner" in s.stderr_text()
    assert pg.sql("SELECT value FROM spur_meta WHERE key = 'schema'").strip() == "3"
    assert owners(pg) == {"new": 2}
    h = submit(s, [b"later"])
    assert int(h[0].rsplit(b":", 1)[1]) > 7
    got = drain([s])
    assert [d for _, d in got] == [b"seven", b"five", b"later"]


def test_a_database_outage_is_logged_once_and_its_end_once(server_factory, pg):
    s = server_factory(pg.arg, "--server-id=a")
    c = s.connect(timeout=60)
    c.send_packet(SUBMIT_JOB_BG, b"f", b"", b"before")
    c.expect(JOB_CREATED)
    pg.cluster.ctl("stop")
    # submits keep coming for a while (under load: many failed commits, several seconds)
    refused = 0
    t0 = time.monotonic()
    while refused < 50 or time.monotonic() - t0 < 3:
        c.send(b"".join(packet(SUBMIT_JOB_BG, b"f", b"", b"during") for _ in range(10)))
        for _ in range(10):
            _, cmd, body = c.read_packet(timeout=60)
            assert cmd == ERROR and body.startswith(b"QUEUE_ERROR\0"), body
            refused += 1
    pg.cluster.ctl("start")
    deadline = time.monotonic() + 120
    while True:
        c.send_packet(SUBMIT_JOB_BG, b"f", b"", b"after")
        _, cmd, body = c.read_packet(timeout=60)
        if cmd == JOB_CREATED:
            break
        refused += 1
        assert time.monotonic() < deadline, body
    log = s.stderr_text()
    down = [l for l in log.splitlines() if "store: writing" in l and "operations failed" in l]
    back = [l for l in log.splitlines() if "writing works again" in l]
    assert len(down) == 1, down
    assert len(back) == 1, back
    assert "%d background submits refused meanwhile" % refused in back[0], (refused, back[0])


def test_a_server_taken_over_while_cut_off_stops_when_it_comes_back(server_factory, pg):
    """A network partition: a's session is cut and it cannot reconnect; a standby takes its jobs
    over; when a reaches the database again it finds its lease's epoch bumped (fenced) and stops
    rather than run the jobs the standby now runs."""
    pg.sql("CREATE ROLE ra LOGIN SUPERUSER")
    try:
        a = server_factory("--store=postgres:" + pg.conninfo.replace("user=spur", "user=ra"),
                           "--server-id=a")
        sent = [b"p%d" % i for i in range(20)]
        submit(a, sent)
        pg.sql("ALTER ROLE ra NOLOGIN")
        pg.sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'ra'")
        standby = server_factory(pg.arg, "--server-id=standby", "--takeover=a")
        wait_replayed(standby)
        assert owners(pg) == {"standby": 20}
        pg.sql("ALTER ROLE ra LOGIN")
        poll("a to stop", lambda: a.proc.poll() is not None)
        a.proc = None
        assert "fenced: server standby took over" in a.stderr_text(), a.stderr_text()[-2000:]
        got = drain([standby])
        assert sorted(d for _, d in got) == sorted(sent)
    finally:
        pg.sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'ra'")
        pg.sql("DROP OWNED BY ra; DROP ROLE ra")


@pytest.mark.parametrize("opt", ["--server-id=", "--server-id=a b", "--server-id=" + "x" * 64,
                                 "--takeover=it's", "--takeover-after=0.5",
                                 "--takeover-after=-1", "--takeover-after=86401"])
def test_ha_options_are_checked(opt):
    binary = os.environ.get("SPURD")
    if not binary:
        pytest.skip("SPURD is not set")
    r = subprocess.run([binary, opt, "--check-args"], capture_output=True, timeout=60)
    assert r.returncode == 1, r
    assert b"invalid --" + opt.split("=")[0][2:].encode() in r.stderr, r.stderr


def test_too_many_takeover_ids_are_refused():
    binary = os.environ.get("SPURD")
    if not binary:
        pytest.skip("SPURD is not set")
    r = subprocess.run([binary, "--check-args"] + ["--takeover=s%d" % i for i in range(17)],
                       capture_output=True, timeout=60)
    assert r.returncode == 1 and b"too many --takeover ids (at most 16)" in r.stderr, r.stderr


def show_jobs(s):
    """{function: (handle, state)} from "show jobs json"."""
    c = s.connect(timeout=60)
    out = c.admin(b"show jobs json\n", terminator=b"\n")
    return {j["function"].encode(): (j["handle"].encode(), j["state"])
            for j in json.loads(out)["jobs"]}


def admin_submit(c, line):
    r = c.admin(line.encode() + b"\n")
    assert r.startswith(b"OK "), r
    return r[3:].rstrip(b"\r\n")


@pytest.mark.parametrize("how", ["run-time", "at-start"])
def test_takeover_keeps_the_dependencies_of_waiting_jobs(server_factory, pg, how):
    """Server a holds Y (no worker), X --after Y and Z --after X; a is killed and b takes its rows
    over. b registered first, so its ids are below a's and a's jobs are renumbered into b's: the
    ids they wait for must be renumbered with them (and in their rows, so that a restart of b
    still knows them). X never runs before Y has completed, nor Z before X."""
    opts = ["--takeover-after=1"] if how == "run-time" else []
    b = server_factory(pg.arg, "--server-id=b", *opts)
    if how == "at-start":
        b.stop()
    a = server_factory(pg.arg, "--server-id=a")
    wait_replayed(a)
    c = a.connect(timeout=60)
    y = admin_submit(c, "submit dep_y first")
    x = admin_submit(c, "submit dep_x --after %s second" % y.decode())
    admin_submit(c, "submit dep_z --after %s third" % x.decode())
    poll("the rows", lambda: owners(pg) == {"a": 3})  # (an admin submit is not acknowledged)
    kill9(a)
    if how == "at-start":
        b = server_factory(pg.arg, "--server-id=b", "--takeover=a")
        wait_replayed(b)
    poll("the takeover", lambda: len(show_jobs(b)) == 3)
    poll("the renumbered rows", lambda: int(pg.sql(
        "SELECT count(*) FROM spur_jobs j JOIN spur_servers s ON s.server_id = 'b'"
        " WHERE j.id >> 56 = s.slot")) == 3)
    st = show_jobs(b)
    assert {f: s for f, (_, s) in st.items()} == \
        {b"dep_y": "queued", b"dep_x": "waiting", b"dep_z": "waiting"}, st
    # the rows too: b restarted (kill -9) still waits
    kill9(b)
    b = server_factory(pg.arg, "--server-id=b")
    wait_replayed(b)
    st = show_jobs(b)
    assert {f: s for f, (_, s) in st.items()} == \
        {b"dep_y": "queued", b"dep_x": "waiting", b"dep_z": "waiting"}, st
    w = b.connect(timeout=60)
    for f in (b"dep_y", b"dep_x", b"dep_z"):
        w.send_packet(CAN_DO, f)
    for want in (b"first", b"second", b"third"):
        w.send_packet(GRAB_JOB_UNIQ)
        h, _, _, d = w.expect(JOB_ASSIGN_UNIQ).split(b"\0", 3)
        assert d == want, "ran %r before %r completed" % (d, want)
        w.send_packet(GRAB_JOB_UNIQ)
        _, cmd, _ = w.read_packet(timeout=60)
        assert cmd == NO_JOB, "a job ran before its dependency completed"
        w.send_packet(WORK_COMPLETE, h, b"")
    poll("the deletions", lambda: owners(pg) == {})
