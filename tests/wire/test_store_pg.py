# SPDX-License-Identifier: BSD-3-Clause
"""The PostgreSQL store: what only it has. Outages (the database stopped or restarted under load:
background submits get QUEUE_ERROR, foreground work goes on, the store reconnects by itself, no
acknowledged job is lost and no job answered with an error stays stored), gearmand's option names
and its queue table imported once, no SQL built from job data, rows that are not jobs set aside.
The tests every backend passes are parametrized in test_store.py."""
import os
import signal
import subprocess
import tempfile
import threading
import time

import pytest

from conftest import PG_SCRIPT, poll, start_gearmand, start_spurd
from gearman_wire import (CAN_DO, ERROR, GRAB_JOB, GRAB_JOB_UNIQ, JOB_ASSIGN, JOB_ASSIGN_UNIQ,
                          JOB_CREATED, SUBMIT_JOB_BG, SUBMIT_JOB_HIGH_BG, SUBMIT_JOB_LOW_BG,
                          WORK_COMPLETE, WORK_FAIL, foreground_job_runs, packet)
from test_store import PgStore, ask, grab_all, restart, wait_replayed

pytestmark = pytest.mark.spur_only

GEARMAND = os.environ.get("SPUR_GEARMAND", "/usr/sbin/gearmand")


@pytest.fixture
def pg(pg_cluster):
    """A PgStore in a fresh database. The cluster is shared by the session: a test that stops it
    starts it again before it ends."""
    st = PgStore(pg_cluster)
    yield st
    if not pg_cluster.running:
        pg_cluster.ctl("start")


def handle_ids(handles):
    return {int(h.rsplit(b":", 1)[1]) for h in handles}


def stored_ids(pg):
    return {int(x) for x in pg.sql("SELECT id FROM spur_jobs").split()}


def submit_until_stored(c, deadline_s=60):
    """Submits background jobs until one is acknowledged (the store is back); bounded. Returns
    (the acknowledged handle, the number of QUEUE_ERRORs before it)."""
    deadline = time.monotonic() + deadline_s
    errors = 0
    while True:
        c.send_packet(SUBMIT_JOB_BG, b"f", b"", b"probe")
        _, cmd, body = c.read_packet(timeout=30)
        if cmd == JOB_CREATED:
            return body, errors
        assert cmd == ERROR and body.startswith(b"QUEUE_ERROR\0"), (cmd, body)
        errors += 1
        assert time.monotonic() < deadline, "the store did not come back: " + body.decode()


def test_database_down_refuses_background_serves_foreground_and_reconnects(server_factory, pg):
    s = server_factory(pg.arg)
    c = s.connect(timeout=30)
    c.send_packet(SUBMIT_JOB_BG, b"f", b"", b"before")
    before = c.expect(JOB_CREATED)
    pg.cluster.ctl("stop")
    # a background submit is refused with the reason, and is not queued
    c.send_packet(SUBMIT_JOB_BG, b"f", b"", b"during")
    _, cmd, body = c.read_packet(timeout=30)
    assert cmd == ERROR and body.startswith(b"QUEUE_ERROR\0Could not store the job: database "
                                            b"unavailable"), body
    assert ask(c, b"status\n") == b"f\t1\t0\t0\n.\n"
    # foreground jobs work from memory
    foreground_job_runs(s, c)
    pg.cluster.ctl("start")
    after, _ = submit_until_stored(c)
    assert stored_ids(pg) == handle_ids([before, after]), "the refused job was not stored"
    assert "writing works again" in s.stderr_text()


def test_postgres_restarted_mid_load_loses_nothing_and_service_resumes(server_factory, pg):
    """Three clients submit while PostgreSQL is restarted twice. Every acknowledged job is stored,
    and nothing that was answered with an error is (not even from a batch whose commit the restart
    cut off), without restarting spurd."""
    s = server_factory(pg.arg)
    acked, lock, stop = set(), threading.Lock(), threading.Event()
    errors = [0]
    failures = []

    def submitter(k):
        try:
            submit(k)
        except Exception as e:  # reported by the main thread
            failures.append(repr(e))

    def submit(k):
        cc = s.connect(timeout=60)
        n = 0
        while not stop.is_set():
            cc.send(b"".join(packet(SUBMIT_JOB_BG, b"load", b"", b"c%dn%d" % (k, n + i))
                             for i in range(16)))
            for _ in range(16):
                _, cmd, body = cc.read_packet(timeout=60)
                with lock:
                    if cmd == JOB_CREATED:
                        acked.add(body)
                    else:
                        assert cmd == ERROR and body.startswith(b"QUEUE_ERROR\0"), body
                        errors[0] += 1
            n += 16

    threads = [threading.Thread(target=submitter, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    c = s.connect(timeout=60)
    try:
        for _ in range(2):
            with lock:
                seen = len(acked)
            deadline = time.monotonic() + 300
            while True:  # load is flowing
                c.echo_roundtrip()
                with lock:
                    if len(acked) > seen + 100 or not all(t.is_alive() for t in threads):
                        break
                assert time.monotonic() < deadline, "no submit was acknowledged for 300 s"
            pg.cluster.ctl("restart")
            submit_until_stored(c)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    assert all(not t.is_alive() for t in threads)
    assert failures == []
    probe, _ = submit_until_stored(c)  # one more batch: it deletes the doubtful ids
    acked.add(probe)
    c.echo_roundtrip()
    assert handle_ids([probe]) <= stored_ids(pg)
    load = {int(x) for x in pg.sql("SELECT id FROM spur_jobs WHERE func = 'load'::bytea").split()}
    acked_load = handle_ids(h for h in acked if h != probe)
    assert acked_load <= load, f"{len(acked_load - load)} acknowledged jobs lost"
    assert load <= acked_load, f"{len(load - acked_load)} jobs stored that were answered ERROR"
    print(f"restart test: {len(acked)} acknowledged, {errors[0]} refused while PostgreSQL was down")


def test_gearmand_option_names(server_factory, pg):
    args = ("-q", "Postgres", "--libpq-conninfo=" + pg.conninfo)
    s = server_factory(*args)
    c = s.connect()
    c.send_packet(SUBMIT_JOB_HIGH_BG, b"f", b"u", b"x")
    h = c.expect(JOB_CREATED)
    s2 = restart(server_factory, s, *args)
    assert [g[0] for g in grab_all(s2, b"f", 1)] == [h]


def test_gearmand_postgres_queue_is_imported_once(pg):
    if not os.path.exists(GEARMAND):
        pytest.skip("needs gearmand")
    g = start_gearmand(["-q", "Postgres", "--libpq-conninfo=" + pg.conninfo])
    c = g.connect()
    for cmd, u, d in [(SUBMIT_JOB_BG, b"u1", b"one"), (SUBMIT_JOB_HIGH_BG, b"u2", b"two"),
                      (SUBMIT_JOB_LOW_BG, b"u3", b"three\0bytes")]:
        c.send_packet(cmd, b"f", u, d)
        c.expect(JOB_CREATED)
    g.stop()
    args = ["-q", "Postgres", "--libpq-conninfo=" + pg.conninfo, "--libpq-table=queue"]
    s = start_spurd(args)
    try:
        wait_replayed(s)
        assert "imported 3 jobs from gearmand's table queue" in s.stderr_text()
        got = grab_all(s, b"f", 3)
        assert [(u, d) for _, u, d in got] == [(b"u2", b"two"), (b"u1", b"one"),
                                               (b"u3", b"three\0bytes")]
    finally:
        s.stop()
    assert pg.sql("SELECT table_name, renamed_to, jobs FROM spur_import").strip() == \
        "queue|queue_spur_imported|3"
    s = start_spurd(args)
    try:
        wait_replayed(s)
        assert ask(s.connect(), b"status\n") == b".\n", "imported only once"
    finally:
        s.stop()


@pytest.mark.parametrize("table", ['queue"; DROP TABLE spur_jobs; --', "1queue", "q" * 64, ""])
def test_libpq_table_must_be_an_identifier(table):
    binary = os.environ.get("SPURD")
    if not binary:
        pytest.skip("SPURD is not set")
    r = subprocess.run([binary, "-q", "Postgres", "--libpq-table=" + table, "--check-args"],
                       capture_output=True, timeout=60)
    assert r.returncode == 1
    assert b"invalid --libpq-table" in r.stderr


def test_job_bytes_never_become_sql(server_factory, pg):
    """Function names, uniques and payloads with quotes, backslashes and SQL are stored and
    replayed byte for byte (prepared statements, binary parameters)."""
    s = server_factory(pg.arg)
    c = s.connect()
    func = b"f');DROP/**/TABLE/**/spur_jobs;--\\x"
    uniq = b"u'||pg_sleep(5)||'"
    data = bytes(range(256))
    c.send_packet(SUBMIT_JOB_BG, func, uniq, data)
    h = c.expect(JOB_CREATED)
    s2 = restart(server_factory, s, pg.arg)
    w = s2.connect()
    w.send_packet(CAN_DO, func)
    w.send_packet(GRAB_JOB_UNIQ)
    assert w.expect(JOB_ASSIGN_UNIQ) == h + b"\0" + func + b"\0" + uniq + b"\0" + data


def test_password_is_not_logged(server_factory, pg):
    s = server_factory(pg.arg + " password=s3cr3t")
    wait_replayed(s)
    log = s.stderr_text()
    assert "postgres:" in log and "password=***" in log
    assert "s3cr3t" not in log


def test_stored_rows_that_are_not_jobs_are_quarantined(server_factory, pg):
    s = server_factory(pg.arg)
    c = s.connect()
    c.send_packet(SUBMIT_JOB_BG, b"f", b"", b"good")
    h = c.expect(JOB_CREATED)
    s.stop()
    pg.sql("INSERT INTO spur_jobs VALUES (1, 7, 0, 'f'::bytea, ''::bytea, ''::bytea, 'bad prio'),"
           " (2, 1, 0, ''::bytea, ''::bytea, ''::bytea, 'no function'),"
           " (3, 1, 0, 'f'::bytea, decode(repeat('75', 65), 'hex'), ''::bytea, 'long unique')")
    s2 = server_factory(pg.arg)
    wait_replayed(s2)
    assert "3 invalid stored rows moved to table spur_quarantine" in s2.stderr_text()
    assert [g[0] for g in grab_all(s2, b"f", 1)] == [h]
    assert pg.sql("SELECT id FROM spur_quarantine ORDER BY id").split() == ["1", "2", "3"]


def test_unreachable_database_at_start_is_a_clear_error(tmp_path):
    binary = os.environ.get("SPURD")
    if not binary:
        pytest.skip("SPURD is not set")
    r = subprocess.run([binary, "--port=0", "--listen=127.0.0.1",
                        "--store=postgres:host=%s dbname=x password=hidden" % tmp_path],
                       capture_output=True, timeout=60)
    assert r.returncode == 1
    assert b"store postgres:host=" in r.stderr and b"database unavailable" in r.stderr
    assert b"hidden" not in r.stderr


def test_store_wait_holds_submits_until_the_database_is_back(server_factory, pg):
    s = server_factory(pg.arg, "--store-wait=300")
    c = s.connect(timeout=300)
    c.send_packet(SUBMIT_JOB_BG, b"f", b"", b"before")
    first = c.expect(JOB_CREATED)
    pg.cluster.ctl("stop")
    c.send_packet(SUBMIT_JOB_BG, b"f", b"", b"waits")
    other = s.connect()
    other.echo_roundtrip()  # the loop serves others meanwhile
    c.sock.setblocking(False)
    try:
        got = c.sock.recv(1)
        pytest.fail(f"a reply ({got!r}) came while the database was down")
    except BlockingIOError:
        pass  # nothing to read: the JOB_CREATED is held
    finally:
        c.sock.setblocking(True)
        c.sock.settimeout(300)
    pg.cluster.ctl("start")
    h = c.expect(JOB_CREATED)
    assert stored_ids(pg) == handle_ids([first, h])


def test_store_wait_is_bounded(server_factory, pg):
    s = server_factory(pg.arg, "--store-wait=0.2")
    c = s.connect(timeout=60)
    pg.cluster.ctl("stop")
    c.send_packet(SUBMIT_JOB_BG, b"f", b"", b"refused")
    _, cmd, body = c.read_packet(timeout=60)
    assert cmd == ERROR and b"database unavailable" in body, body
    pg.cluster.ctl("start")
    h, _ = submit_until_stored(c)
    assert stored_ids(pg) == handle_ids([h])


def test_gearmand_table_rules_skipped_rows_and_defaults(server_factory, pg):
    """gearmand's table as an old version left it (no when_to_run): rows without a function name
    are skipped and counted, an unknown priority becomes normal, NULL data is empty."""
    pg.sql("CREATE TABLE gq (unique_key varchar(64), function_name varchar(255), priority integer,"
           " data bytea)")
    pg.sql("INSERT INTO gq VALUES ('a', 'f', 7, 'x'), ('b', '', 0, 'skipped'),"
           " ('c', NULL, 0, 'skipped'), ('d', 'f', 0, NULL)")
    s = server_factory("-q", "Postgres", "--libpq-conninfo=" + pg.conninfo, "--libpq-table=gq")
    wait_replayed(s)
    assert "imported 2 jobs from gearmand's table gq" in s.stderr_text()
    assert "2 rows skipped" in s.stderr_text()
    got = grab_all(s, b"f", 2)
    assert [(u, d) for _, u, d in got] == [(b"d", b""), (b"a", b"x")], "d is high, a normal"


def test_table_without_gearmands_columns_stops_the_start_and_changes_nothing(pg):
    pg.sql("CREATE TABLE queue (id integer, payload text)")
    pg.sql("INSERT INTO queue VALUES (1, 'mine')")
    binary = os.environ.get("SPURD")
    if not binary:
        pytest.skip("SPURD is not set")
    r = subprocess.run([binary, "--port=0", "--listen=127.0.0.1", "-q", "Postgres",
                        "--libpq-conninfo=" + pg.conninfo], capture_output=True, timeout=120)
    assert r.returncode == 1
    assert b"table queue exists but is not gearmand's queue table" in r.stderr, r.stderr
    assert pg.sql("SELECT payload FROM queue").strip() == "mine"
    assert pg.sql("SELECT count(*) FROM spur_import").strip() == "0"


def test_pg_cluster_script_is_silent_from_a_directory_its_owner_cannot_enter(tmp_path):
    """As root the cluster runs as `postgres`, which cannot enter a checkout in /root: initdb
    and pg_ctl printed a stray "could not change directory ...: Permission denied"."""
    if os.geteuid() != 0:
        pytest.skip("the cluster changes user only when run as root")
    if subprocess.run([PG_SCRIPT, "bindir"], capture_output=True, timeout=30).returncode != 0:
        pytest.skip("postgresql is not installed")
    cwd = tmp_path / "private"
    cwd.mkdir(mode=0o700)
    d = tempfile.mkdtemp(prefix="spur-pg-quiet-")
    try:
        for cmd in ("start", "restart", "stop"):
            r = subprocess.run([PG_SCRIPT, cmd, d], capture_output=True, timeout=300, cwd=cwd)
            assert (r.returncode, r.stderr) == (0, b""), (cmd, r.stderr)
    finally:
        subprocess.run([PG_SCRIPT, "destroy", d], capture_output=True, timeout=300)


def spurd_backend(pg):
    """The pid of the PostgreSQL backend serving spurd's session (bounded wait: it reconnects)."""
    def pid():
        out = pg.sql("SELECT pid FROM pg_stat_activity WHERE application_name = 'spurd'"
                     " AND datname = current_database()").split()
        return int(out[0]) if len(out) == 1 else None
    return poll(pid, "spurd's database session")


@pytest.mark.slow
def test_hung_database_session_bounds_submits_and_the_stop(server_factory, pg):
    """The backend serving spurd is stopped (SIGSTOP: the session hangs without closing, the kernel
    still acknowledges). ECHO answers; each background submit gets QUEUE_ERROR within
    --store-timeout (never JOB_CREATED for a job that may not be stored); once the backend goes on,
    submits are stored again; a SIGTERM during a hang stops spurd within --store-timeout; after a
    restart every acknowledged job is there and no refused one."""
    timeout, margin = 2, 20  # margin: ASan and a CPU hog
    s = server_factory(pg.arg, "--store-timeout=%d" % timeout)
    c = s.connect(timeout=60)
    c.send_packet(SUBMIT_JOB_BG, b"f", b"", b"before")
    acked = [c.expect(JOB_CREATED)]
    pid = spurd_backend(pg)
    os.kill(pid, signal.SIGSTOP)
    try:
        s.connect().echo_roundtrip()
        for what in (b"in flight", b"behind it"):  # the batch written, then one waiting behind
            t0 = time.monotonic()
            c.send_packet(SUBMIT_JOB_BG, b"f", b"", what)
            _, cmd, body = c.read_packet(timeout=timeout + margin)
            waited = time.monotonic() - t0
            assert cmd == ERROR and body.startswith(b"QUEUE_ERROR\0"), (cmd, body)
            assert b"no answer from the store within" in body, body
            assert waited < timeout + margin, waited
        c.echo_roundtrip()
    finally:
        os.kill(pid, signal.SIGCONT)
    h, _ = submit_until_stored(c)
    acked.append(h)
    assert stored_ids(pg) == handle_ids(acked), "refused jobs stored, or acknowledged ones lost"
    log = s.stderr_text()
    assert "no answer from the store within" in log and "writing works again" in log, log

    # a stop during a hang ends within --store-timeout, saying what may not be written
    pid = spurd_backend(pg)
    os.kill(pid, signal.SIGSTOP)
    try:
        c.send_packet(SUBMIT_JOB_BG, b"f", b"", b"at the stop")
        admin = s.connect()
        want = b"f\t%d\t0\t0\n.\n" % (len(acked) + 1)  # its batch is with the store's thread
        poll(lambda: ask(admin, b"status\n") == want, "the submit reached the store")
        t0 = time.monotonic()
        s.proc.terminate()
        rc = s.proc.wait(timeout=timeout + margin)
        stopped = time.monotonic() - t0
    finally:
        os.kill(pid, signal.SIGCONT)
    assert rc == 1 and stopped < timeout + margin, (rc, stopped)
    assert "did not finish within" in s.stderr_text()
    s.proc = None  # checked here
    s2 = server_factory(pg.arg, "--store-timeout=%d" % timeout)
    wait_replayed(s2)
    stored = stored_ids(pg)
    assert handle_ids(acked) <= stored, "an acknowledged job was lost"
    # the submit that was never answered may or may not have been stored; nothing else was
    extra = stored - handle_ids(acked)
    for i in extra:
        assert pg.sql("SELECT convert_from(data, 'UTF8') FROM spur_jobs WHERE id = %d" % i) \
            .strip() == "at the stop", i
    assert {h for h, _, _ in grab_all(s2, b"f", len(stored))} >= set(acked)


@pytest.mark.slow
def test_a_stored_jobs_update_cut_off_by_a_hung_database_is_not_deleted(server_factory, pg):
    """A retried job's new version (its backoff) is in a batch that the hung database never
    answers: the outcome is unknown, the update is written again by the next batch, and the
    deletion of the batch's doubtful ids must not take that live, stored job with it."""
    timeout = 2
    s = server_factory(pg.arg, "--store-timeout=%d" % timeout, "--retry=F:3:3600:3600")
    c, w = s.connect(timeout=60), s.connect(timeout=60)
    c.send_packet(SUBMIT_JOB_BG, b"F", b"", b"x")
    h = c.expect(JOB_CREATED)
    w.send_packet(CAN_DO, b"F")
    w.send_packet(GRAB_JOB)
    assert w.expect(JOB_ASSIGN).split(b"\0")[0] == h
    pid = spurd_backend(pg)
    os.kill(pid, signal.SIGSTOP)
    try:
        w.send_packet(WORK_FAIL, h)  # retried in an hour: its row is rewritten (store_update)
        w.echo_roundtrip()
        poll(lambda: "no answer from the server within" in s.stderr_text(),
             "the hung batch given up", timeout=120)
    finally:
        os.kill(pid, signal.SIGCONT)
    submit_until_stored(c)
    assert handle_ids([h]) <= stored_ids(pg), "the retried job's row was deleted"


# ------------------------------------------------------------ how a batch is written
# A batch's new jobs go in one plain INSERT ... SELECT FROM unnest(binary arrays) per chunk of
# about 1 MiB (store_pg_rows.h), the new versions of stored jobs in upserts of the same shape.


def stats(c):
    """The numeric rows of admin stats."""
    out = c.admin("stats\n", b"END\r\n").decode()
    rows = [l.split() for l in out.splitlines() if l.startswith("STAT ")]
    return {r[1]: float(r[2]) for r in rows if r[2].replace(".", "", 1).isdigit()}


class RowLock:
    """Holds the rows of spur_servers FOR UPDATE in a psql session of its own: the high-water
    mark update of every batch (spur_hwm) waits behind it, so a batch stays in flight and what is
    submitted meanwhile gathers into the next batch."""

    def __init__(self, pg):
        self.pg = pg
        self.p = subprocess.Popen([os.path.join(pg.cluster.bindir, "psql"), "-X", "-q", "-A", "-t",
                                   "-v", "ON_ERROR_STOP=1", "-d", pg.conninfo],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        self.p.stdin.write(b"BEGIN; SELECT 'locked' FROM spur_servers FOR UPDATE;\n")
        self.p.stdin.flush()
        assert self.p.stdout.readline() == b"locked\n"  # psql ends (EOF) if it fails

    def batch_waits(self):
        return int(self.pg.sql("SELECT count(*) FROM pg_stat_activity WHERE datname ="
                               " current_database() AND application_name = 'spurd' AND"
                               " wait_event_type = 'Lock'")) > 0

    def release(self):
        self.p.stdin.write(b"ROLLBACK;\n")
        self.p.stdin.close()
        self.p.wait(timeout=60)


def test_one_batch_of_several_statements_keeps_every_byte_across_kill_9(server_factory, pg):
    """Jobs that gather while a batch is in flight are written by the next batch, in statements
    of about 1 MiB each: three 600 KiB payloads (with every byte value) need two, then 200 small
    jobs, empty payloads and uniques. Every job comes back byte for byte after kill -9."""
    s = server_factory(pg.arg, "--store-timeout=300")
    wait_replayed(s)
    c, adm = s.connect(timeout=120), s.connect(timeout=120)
    big = [bytes(range(256)) * 2400 + b"%d" % i for i in range(3)]
    jobs = [(b"u%d" % i, d) for i, d in enumerate(big)]
    jobs += [(b"", b""), (b"", b"\0"), (b"e", b""), (b"\xff'\\", b"x\0y\0")]
    jobs += [(b"s%d" % i, b"small %d" % i) for i in range(200)]
    lock = RowLock(pg)
    try:
        c.send_packet(SUBMIT_JOB_BG, b"f", b"first", b"first")
        poll(lock.batch_waits, "the first batch to wait for the lock")
        before = stats(adm)
        c.send(b"".join(packet(SUBMIT_JOB_BG, b"f", u, d) for u, d in jobs))
        poll(lambda: stats(adm)["packets_in"] >= before["packets_in"] + len(jobs),
             "the submits to be read")
    finally:
        lock.release()
    handles = [c.expect(JOB_CREATED, timeout=120) for _ in range(len(jobs) + 1)]
    after = stats(adm)
    assert after["store_commits"] == before["store_commits"] + 2, \
        "the batch that waited, then one batch with every other job"
    assert after["store_commit_failures"] == 0
    s2 = restart(server_factory, s, pg.arg)
    got = grab_all(s2, b"f", len(jobs) + 1)
    want = list(zip(handles, [b"first"] + [u for u, _ in jobs], [b"first"] + [d for _, d in jobs]))
    assert sorted(got) == sorted(want)
    assert stored_ids(pg) == set()


def test_a_job_added_and_rewritten_in_one_batch_is_one_row(server_factory, pg):
    """A job submitted to wait for another, whose prerequisite completes before the batch is
    written, is rewritten (one dependency fewer) in the batch that adds it: the batch holds its
    id once (the second version replaces the first), as the upsert requires (PostgreSQL refuses
    to touch a row twice in one statement). It is stored once, as it is now: runnable."""
    s = server_factory(pg.arg, "--store-timeout=300")
    wait_replayed(s)
    c, adm, cl = s.connect(timeout=120), s.connect(timeout=120), s.connect(timeout=120)
    c.send_packet(SUBMIT_JOB_BG, b"pre", b"", b"a")
    a = c.expect(JOB_CREATED)
    w = s.connect(timeout=120)
    w.send_packet(CAN_DO, b"pre")
    w.send_packet(GRAB_JOB)
    assert w.expect(JOB_ASSIGN).startswith(a + b"\0")
    lock = RowLock(pg)
    try:
        c.send_packet(SUBMIT_JOB_BG, b"other", b"", b"in flight")
        poll(lock.batch_waits, "a batch to wait for the lock")
        cl.send(b"submit then --after " + a + b" payload\n")
        poll(lambda: b"\twaiting" in adm.admin("show jobs\n", b".\n"), "the waiting job")
        w.send_packet(WORK_COMPLETE, a, b"")
        poll(lambda: a not in adm.admin("show jobs\n", b".\n"), "the completion")
    finally:
        lock.release()
    line = cl.read_line(timeout=120)
    assert line.startswith(b"OK "), line
    b = line[3:].rstrip(b"\r\n")
    other = c.expect(JOB_CREATED, timeout=120)
    assert stats(adm)["store_commit_failures"] == 0
    assert stored_ids(pg) == handle_ids([b, other])
    s2 = restart(server_factory, s, pg.arg)
    assert [g[0] for g in grab_all(s2, b"then", 1)] == [b]


def test_a_row_in_the_way_of_a_new_job_is_replaced_as_before(server_factory, pg):
    """New jobs are written with plain inserts: their ids were never used (the high-water mark).
    Should a row be in the way all the same (written by hand), the batch is written again at once
    with upserts: the job is acknowledged and stored, its row replaced, as every add did before."""
    s = server_factory(pg.arg)
    c = s.connect(timeout=60)
    c.send_packet(SUBMIT_JOB_BG, b"f", b"", b"a")
    ha = c.expect(JOB_CREATED)
    (a,) = handle_ids([ha])
    pg.sql(f"INSERT INTO spur_jobs (id, prio, run_at, func, uniq, reducer, data, owner)"
           f" SELECT {a + 1}, 1, 0, func, 'stale', '', 'stale', owner FROM spur_jobs WHERE id = {a}")
    c.send_packet(SUBMIT_JOB_BG, b"f", b"", b"b")
    hb = c.expect(JOB_CREATED)
    assert handle_ids([hb]) == {a + 1}, "the test means the next id"
    assert pg.sql(f"SELECT encode(uniq || data, 'escape') FROM spur_jobs WHERE id = {a + 1}") \
        == "b\n"
    assert stats(c)["store_commit_failures"] == 0
    s2 = restart(server_factory, s, pg.arg)
    assert grab_all(s2, b"f", 2) == [(ha, b"", b"a"), (hb, b"", b"b")]
