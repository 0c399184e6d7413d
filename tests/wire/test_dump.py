# SPDX-License-Identifier: BSD-3-Clause
"""Dump and load (docs/BEYOND-GEARMAN.md): `spuradmin --dump` streams a live server's background
jobs as JSON lines, `spuradmin --load` submits them to another server (handles re-issued, uniques
kept, payloads byte-identical, a unique already there skipped), a cut file loads nothing, and
`spurd --dump/--load` work on a stopped store (sqlite, and sqlite -> postgres)."""
import json
import os
import signal
import subprocess
import time

import pytest

from conftest import EXTERNAL, KILL_WAIT
from gearman_wire import (CAN_DO, GRAB_JOB_ALL, JOB_ASSIGN_ALL, JOB_ASSIGN_UNIQ,
                          JOB_CREATED, NO_JOB, NOOP,
                          PRE_SLEEP, SUBMIT_JOB, SUBMIT_JOB_BG, SUBMIT_JOB_EPOCH,
                          SUBMIT_JOB_HIGH_BG, SUBMIT_JOB_LOW_BG, SUBMIT_REDUCE_JOB_BACKGROUND,
                          WORK_COMPLETE)

pytestmark = pytest.mark.spur_only

SPURADMIN = os.environ.get("SPURADMIN")
SPURD = os.environ.get("SPURD")

NUL_PAYLOAD = b"a\0b\0\xff\xfe\r\n\0"
BIG = bytes((i * 7919 + (i >> 8)) & 0xFF for i in range(1 << 20))  # 1 MiB, every byte value


@pytest.fixture(autouse=True)
def _needs_own():
    if EXTERNAL or not SPURADMIN:
        pytest.skip("needs its own spurd and spuradmin (run through `make check`)")


def admin_tool(server, *args, stdin=None):
    return subprocess.run([SPURADMIN, "-h", server.addr[0], "-p", str(server.addr[1]),
                           "--timeout", "60"] + list(args), capture_output=True, timeout=180,
                          input=stdin)


def submit(c, cmd, *args):
    c.send_packet(cmd, *args)
    return c.expect(JOB_CREATED)


def fill_source(s):
    """Background jobs of every kind on s; returns {unique: (func, reducer, payload)}."""
    c = s.connect()
    jobs = {
        b"nul": (b"fn", b"", NUL_PAYLOAD),
        b"big": (b"fn", b"", BIG),
        b"hi": (b"fn", b"", b"high"),
        b"lo": (b"fn", b"", b"low"),
        b"red": (b"fn", b"sum", b"reduce me"),
        b"\xff\xfeu": (b"fn", b"", b"binary unique"),
        b"": (b"fn", b"", b"no unique"),
    }
    submit(c, SUBMIT_JOB_BG, b"fn", b"nul", NUL_PAYLOAD)
    submit(c, SUBMIT_JOB_BG, b"fn", b"big", BIG)
    submit(c, SUBMIT_JOB_HIGH_BG, b"fn", b"hi", b"high")
    submit(c, SUBMIT_JOB_LOW_BG, b"fn", b"lo", b"low")
    submit(c, SUBMIT_REDUCE_JOB_BACKGROUND, b"fn", b"red", b"sum", b"", b"reduce me")
    submit(c, SUBMIT_JOB_BG, b"fn", b"\xff\xfeu", b"binary unique")
    submit(c, SUBMIT_JOB_BG, b"fn", b"", b"no unique")
    c.close()
    return jobs


def grab_everything(s, func):
    """Grab and complete every job of func on s: [(handle, unique, reducer, payload)]."""
    w = s.connect(timeout=30)
    w.send_packet(CAN_DO, func)
    got = []
    while True:
        w.send_packet(GRAB_JOB_ALL)
        magic, cmd, body = w.read_packet()
        if cmd == NO_JOB:
            break
        if cmd == JOB_ASSIGN_UNIQ:  # what GRAB_JOB_ALL gets for a job without a reducer
            h, f, u, d = body.split(b"\0", 3)
            r = b""
        else:
            assert cmd == JOB_ASSIGN_ALL, cmd
            h, f, u, r, d = body.split(b"\0", 4)
        assert f == func
        got.append((h, u, r, d))
        w.send_packet(WORK_COMPLETE, h, b"")
    w.close()
    return got


def read_dump(path):
    with open(path, "rb") as f:
        return [json.loads(line) for line in f]


def test_dump_and_load_live_byte_identical(server_factory, tmp_path):
    src = server_factory()
    expected = fill_source(src)
    future = int(time.time()) + 3600
    c = src.connect()
    submit(c, SUBMIT_JOB_EPOCH, b"later", b"fut", str(future).encode(), b"future\0payload")
    # a foreground job belongs to its waiting client: not dumped
    c.send_packet(SUBMIT_JOB, b"fg", b"fgu", b"foreground")
    c.expect(JOB_CREATED)
    path = str(tmp_path / "d.jsonl")
    r = admin_tool(src, "--dump", path)
    assert r.returncode == 0, r.stderr
    lines = read_dump(path)
    assert lines[0]["spur_dump"] == 1
    assert lines[-1] == {"type": "end", "jobs": 8, "records": 0}
    jobs = [l for l in lines if l.get("type") == "job"]
    assert len(jobs) == 8
    assert not any(j.get("func") == "fg" for j in jobs)
    by_unique = {j.get("unique"): j for j in jobs}
    assert by_unique["hi"]["priority"] == "high" and by_unique["lo"]["priority"] == "low"
    assert by_unique["fut"]["when"] == future
    assert "unique_b64" in [k for j in jobs for k in j], "a non-UTF-8 unique goes as base64"

    dst = server_factory("--job-handle-prefix=H:target")
    r = admin_tool(dst, "--load", path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"loaded 8 jobs, skipped 0 (unique already there), failed 0, 0 records\n"
    got = grab_everything(dst, b"fn")
    assert sorted((u, (b"fn", rd, d)) for h, u, rd, d in got) == sorted(expected.items())
    assert all(h.startswith(b"H:target:") for h, u, rd, d in got), "handles re-issued"
    # priorities kept: the high job first, the low one last
    assert got[0][1] == b"hi" and got[-1][1] == b"lo"
    # the future job waits on the target too, at the same time
    r = admin_tool(dst, "--dump", "-")
    assert r.returncode == 0, r.stderr
    left = [json.loads(l) for l in r.stdout.splitlines()]
    assert [(j["func"], j["unique"], j["when"]) for j in left if j.get("type") == "job"] == \
        [("later", "fut", future)]


def test_load_skips_a_unique_already_there(server_factory, tmp_path):
    src = server_factory()
    fill_source(src)
    path = str(tmp_path / "d.jsonl")
    assert admin_tool(src, "--dump", path).returncode == 0
    dst = server_factory()
    c = dst.connect()
    submit(c, SUBMIT_JOB_BG, b"fn", b"nul", b"the target's own")
    r = admin_tool(dst, "--load", path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"loaded 6 jobs, skipped 1 (unique already there), failed 0, 0 records\n"
    got = {u: d for h, u, rd, d in grab_everything(dst, b"fn")}
    assert got[b"nul"] == b"the target's own"
    assert len(got) == 7
    # loading again: every job with a unique is there already; the one without is new
    r = admin_tool(dst, "--load", path)
    assert r.returncode == 0, r.stderr


def test_cut_file_loads_nothing(server_factory, tmp_path):
    src = server_factory()
    fill_source(src)
    path = str(tmp_path / "d.jsonl")
    assert admin_tool(src, "--dump", path).returncode == 0
    data = open(path, "rb").read()
    no_end = data[:data.rindex(b"{\"type\":\"end\"")]
    mid_line = data[:len(data) // 2]
    wrong_count = no_end + b'{"type":"end","jobs":3,"records":0}\n'
    dst = server_factory()
    for i, cut in enumerate((no_end, mid_line, wrong_count, b"")):
        p = tmp_path / ("cut%d" % i)
        p.write_bytes(cut)
        r = admin_tool(dst, "--load", str(p))
        assert r.returncode == 1, cut[-100:]
        assert b"nothing loaded" in r.stderr
    # stdin too
    r = admin_tool(dst, "--load", "-", stdin=no_end)
    assert r.returncode == 1 and b"cut short" in r.stderr
    c = dst.connect()
    assert c.admin("show jobs\n", b".\n") == b".\n", "nothing was loaded"


def test_dump_cut_by_the_server_fails_and_leaves_no_file(server_factory, tmp_path):
    # a dump line longer than --max-output-buffer closes the connection mid-stream
    src = server_factory("--max-packet-size=100000", "--max-output-buffer=110000")
    c = src.connect()
    submit(c, SUBMIT_JOB_BG, b"fn", b"a", b"small")
    submit(c, SUBMIT_JOB_BG, b"fn", b"b", b"x" * 99000)
    path = tmp_path / "d.jsonl"
    r = admin_tool(src, "--dump", str(path))
    assert r.returncode == 1
    assert not path.exists(), "a cut dump must not be left to pass for a backup"
    c.echo_roundtrip()  # the server serves on


def test_dump_is_sliced_and_complete(server_factory, tmp_path):
    # more jobs than a slice (ADMIN_SLICE_ONE): the marker walk lists each once
    s = server_factory()
    c = s.connect()
    n = 3000
    c.send(b"".join(__import__("gearman_wire").packet(SUBMIT_JOB_BG, b"f", b"u%d" % i, b"p%d" % i)
                    for i in range(n)))
    for _ in range(n):
        c.expect(JOB_CREATED)
    r = admin_tool(s, "--dump", "-")
    assert r.returncode == 0, r.stderr
    lines = [json.loads(l) for l in r.stdout.splitlines()]
    uniques = [l["unique"] for l in lines if l.get("type") == "job"]
    assert uniques == ["u%d" % i for i in range(n)]
    assert lines[-1] == {"type": "end", "jobs": n, "records": 0}


def test_load_while_the_target_serves(server_factory, tmp_path):
    src = server_factory()
    expected = fill_source(src)
    path = str(tmp_path / "d.jsonl")
    assert admin_tool(src, "--dump", path).returncode == 0
    store = str(tmp_path / "t.db")
    dst = server_factory("--store=sqlite:" + store)
    w = dst.connect()
    w.send_packet(CAN_DO, b"fn")
    w.send_packet(PRE_SLEEP)
    r = admin_tool(dst, "--load", path)
    assert r.returncode == 0, r.stderr
    w.expect(NOOP)  # the sleeping worker is woken by the loaded jobs
    w.close()
    # JOB_CREATED came once stored: a kill -9 right after the load loses nothing
    dst.stop(signal.SIGKILL)
    dst.proc = None
    again = server_factory("--store=sqlite:" + store)
    wait_replayed(again)
    deadline = time.monotonic() + KILL_WAIT
    got = []
    while len(got) < len(expected) and time.monotonic() < deadline:
        got += grab_everything(again, b"fn")
    assert sorted((u, (b"fn", rd, d)) for h, u, rd, d in got) == sorted(expected.items())


def wait_replayed(s, timeout=60):
    """Bounded wait until spurd logs that its replay finished."""
    deadline = time.monotonic() + timeout
    while "store: replayed" not in s.stderr_text():
        assert time.monotonic() < deadline, "replay did not finish"
        time.sleep(0.01)


def spurd_tool(*args):
    return subprocess.run([SPURD] + list(args), capture_output=True, timeout=300)


def stopped_store_with_jobs(server_factory, store_arg):
    s = server_factory(store_arg)
    expected = fill_source(s)
    s.stop()
    s.proc = None
    return expected


def test_stopped_sqlite_dump_and_load(server_factory, tmp_path):
    a = "--store=sqlite:" + str(tmp_path / "a.db")
    b = "--store=sqlite:" + str(tmp_path / "b.db")
    expected = stopped_store_with_jobs(server_factory, a)
    path = str(tmp_path / "d.jsonl")
    r = spurd_tool("--dump=" + path, a)
    assert r.returncode == 0, r.stderr
    assert read_dump(path)[-1] == {"type": "end", "jobs": 7, "records": 0}
    r = spurd_tool("--load=" + path, b)
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"loaded 7 jobs, skipped 0 (unique already there), failed 0, 0 records\n"
    r = spurd_tool("--load=" + path, b)
    assert r.stdout == b"loaded 1 jobs, skipped 6 (unique already there), failed 0, 0 records\n"
    # a cut file changes nothing
    cut = tmp_path / "cut"
    cut.write_bytes(open(path, "rb").read()[:-10])
    r = spurd_tool("--load=" + str(cut), b)
    assert r.returncode == 1
    s = server_factory(b)
    wait_replayed(s)
    got = grab_everything(s, b"fn")
    exp = sorted(expected.items()) + [(b"", (b"fn", b"", b"no unique"))]
    assert sorted((u, (b"fn", rd, d)) for h, u, rd, d in got) == sorted(exp)


def test_stopped_sqlite_to_postgres(server_factory, tmp_path, pg_db):
    cluster, conninfo = pg_db
    a = "--store=sqlite:" + str(tmp_path / "a.db")
    expected = stopped_store_with_jobs(server_factory, a)
    path = str(tmp_path / "d.jsonl")
    assert spurd_tool("--dump=" + path, a).returncode == 0
    pg = "--store=postgres:" + conninfo
    r = spurd_tool("--load=" + path, pg, "--server-id=mig")
    assert r.returncode == 0, r.stderr
    s = server_factory(pg, "--server-id=mig")
    wait_replayed(s)
    got = grab_everything(s, b"fn")
    assert sorted((u, (b"fn", rd, d)) for h, u, rd, d in got) == sorted(expected.items())


def test_dump_and_load_need_a_store():
    r = spurd_tool("--dump=-")
    assert r.returncode == 1 and b"need a store" in r.stderr
    r = spurd_tool("--dump=-", "--load=x", "--store=sqlite:/nonexistent/x.db")
    assert r.returncode == 1


def test_spuradmin_dump_options_stand_alone(server):
    r = admin_tool(server, "--dump", "-", "--status")
    assert r.returncode == 1 and b"cannot be used with other commands" in r.stdout


def ext_dump(tmp_path):
    """A dump with a record and a job whose meta waits for the job before it (handle 11)."""
    lines = [
        {"spur_dump": 1, "created": 1, "server": "elsewhere"},
        {"type": "record", "kind": 1, "key": "nightly", "value_b64": "e30="},
        {"type": "job", "id": 11, "func": "fn", "unique": "first", "priority": "normal",
         "when": 0, "payload_b64": "AAE="},
        {"type": "job", "id": 12, "func": "fn", "unique": "second", "priority": "normal",
         "when": 0, "payload_b64": "AgM=", "meta": {"after": [11, 5], "state": "waiting"}},
        {"type": "end", "jobs": 2, "records": 1},
    ]
    p = tmp_path / "ext.jsonl"
    p.write_text("".join(json.dumps(l, separators=(",", ":")) + "\n" for l in lines))
    return str(p)


def stored_meta(path):
    import sqlite3
    db = sqlite3.connect(path)
    try:
        return {bytes(u): (i, m and bytes(m)) for i, u, m in
                db.execute("SELECT id, uniq, meta FROM spur_jobs")}
    finally:
        db.close()


def test_stopped_store_keeps_records_and_renumbers_after(tmp_path):
    path = ext_dump(tmp_path)
    a = "--store=sqlite:" + str(tmp_path / "a.db")
    r = spurd_tool("--load=" + path, a)
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"loaded 2 jobs, skipped 0 (unique already there), failed 0, 1 records\n"
    rows = stored_meta(str(tmp_path / "a.db"))
    first_id = rows[b"first"][0]
    assert json.loads(rows[b"second"][1]) == {"after": [first_id], "state": "waiting"}, \
        "11 becomes the new handle of the first job; 5 (not in the dump) is dropped"
    r = spurd_tool("--dump=-", a)
    assert r.returncode == 0, r.stderr
    out = [json.loads(l) for l in r.stdout.splitlines()]
    assert out[1] == {"type": "record", "kind": 1, "key": "nightly", "value_b64": "e30="}
    assert out[3]["meta"] == {"after": [first_id], "state": "waiting"}
    assert out[-1] == {"type": "end", "jobs": 2, "records": 1}


def test_live_load_of_meta_jobs_and_records(server_factory, tmp_path):
    path = ext_dump(tmp_path)
    store = str(tmp_path / "t.db")
    dst = server_factory("--store=sqlite:" + store)
    r = admin_tool(dst, "--load", path)
    # the record of kind 1 (a schedule) holds no schedule: its feature refuses it, the jobs load
    assert r.returncode == 1
    assert r.stdout == b"loaded 2 jobs, skipped 0 (unique already there), failed 1, 0 records\n"
    assert b"ERR BAD_RECORD" in r.stderr
    c = dst.connect()
    c.echo_roundtrip()
    # the meta job is durable with the next batch: a batch after it proves it is written
    submit(c, SUBMIT_JOB_BG, b"other", b"sync", b"")
    rows = stored_meta(store)
    assert json.loads(rows[b"second"][1]) == {"after": [rows[b"first"][0]], "state": "waiting"}
    got = {u: d for h, u, rd, d in grab_everything(dst, b"fn")}
    assert got == {b"first": b"\0\1", b"second": b"\2\3"}, "no feature took it: it runs"


def test_a_meta_job_longer_than_the_admin_line_fails_alone(server_factory, tmp_path):
    lines = [
        {"spur_dump": 1, "created": 1, "server": "x"},
        {"type": "job", "id": 1, "func": "fn", "unique": "big", "payload_b64": "QUFB" * 3000,
         "meta": {"state": "waiting"}},
        {"type": "job", "id": 2, "func": "fn", "unique": "small", "payload_b64": "QUFB",
         "meta": {"state": "waiting"}},
        {"type": "end", "jobs": 2, "records": 0},
    ]
    p = tmp_path / "d.jsonl"
    p.write_text("".join(json.dumps(l) + "\n" for l in lines))
    dst = server_factory()
    r = admin_tool(dst, "--load", str(p))
    assert r.returncode == 1
    assert r.stdout == b"loaded 1 jobs, skipped 0 (unique already there), failed 1, 0 records\n"
    assert b"LINE_TOO_LONG" in r.stderr
    got = {u: d for h, u, rd, d in grab_everything(dst, b"fn")}
    assert got == {b"small": b"AAA"}
