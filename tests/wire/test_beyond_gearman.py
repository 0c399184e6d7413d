# SPDX-License-Identifier: BSD-3-Clause
"""The features beyond Gearman together (docs/BEYOND-GEARMAN.md): a retry policy, a recurring
schedule and a dead-letter job of one server are dumped and loaded into another server, where
all three come back; and with --store they all survive a kill -9 of that server."""
import os
import signal
import subprocess
import time

import pytest

from conftest import EXTERNAL, KILL_WAIT
from gearman_wire import (CAN_DO, GRAB_JOB_UNIQ, JOB_ASSIGN_UNIQ, JOB_CREATED, NO_JOB,
                          SUBMIT_JOB_BG, WORK_FAIL)

pytestmark = pytest.mark.spur_only

SPURADMIN = os.environ.get("SPURADMIN")
DEADLINE = 60.0  # generous: CI runs under a CPU hog


@pytest.fixture(autouse=True)
def _needs_own():
    if EXTERNAL or not SPURADMIN:
        pytest.skip("needs its own spurd and spuradmin (run through `make check`)")


def admin_tool(server, *args):
    return subprocess.run([SPURADMIN, "-h", server.addr[0], "-p", str(server.addr[1]),
                           "--timeout", "60"] + list(args), capture_output=True, timeout=180)


def listing(c, line):
    """The rows of an admin listing (through "."), as lists of fields. Every listing ends its
    lines with LF alone, as gearmand's `status` does."""
    out = c.admin(line.encode() + b"\n", terminator=b".\n").decode()
    rows = [r.rstrip("\r") for r in out.split("\n")]
    return [r.split("\t") for r in rows if r and r != "."]


def fail_once(server, func):
    """A worker grabs the next job of func (polling until one is due) and fails it."""
    w = server.connect(timeout=DEADLINE)
    w.send_packet(CAN_DO, func)
    deadline = time.monotonic() + DEADLINE
    while True:
        w.send_packet(GRAB_JOB_UNIQ)
        _, cmd, body = w.read_packet(timeout=DEADLINE)
        if cmd == JOB_ASSIGN_UNIQ:
            w.send_packet(WORK_FAIL, body.split(b"\0")[0])
            w.echo_roundtrip()
            w.close()
            return
        assert cmd == NO_JOB, cmd
        assert time.monotonic() < deadline, "the job never came back for its retry"
        time.sleep(0.05)  # polling a queue: not synchronisation, the deadline bounds it


def populate(server):
    """A retry policy, a schedule and a dead-letter job on server."""
    c = server.connect(timeout=DEADLINE)
    assert c.admin(b"retry flaky 1 0 0\n") == b"OK\r\n"
    assert c.admin(b"schedule add nightly 0 3 * * * report --priority low {\"day\": 1}\n") == \
        b"OK\r\n"
    c.send_packet(SUBMIT_JOB_BG, b"flaky", b"dl-1", b"pay\0load")
    c.expect(JOB_CREATED)
    fail_once(server, b"flaky")  # retried at once (backoff 0)
    fail_once(server, b"flaky")  # its one retry used up: the dead-letter list
    failed = listing(c, "show failed jobs")
    assert [(r[1], r[2], r[3]) for r in failed] == [("flaky", "dl-1", "2")]
    return c


def check_all_there(c):
    assert [r[:4] for r in listing(c, "retry list")] == [["flaky", "1", "0", "0"]]
    sched = listing(c, "schedule list")
    assert [(r[0], r[1], r[2], r[7]) for r in sched] == [("nightly", "0 3 * * *", "report", "low")]
    failed = listing(c, "show failed jobs")
    assert [(r[1], r[2], r[3]) for r in failed] == [("flaky", "dl-1", "2")]
    return failed[0][0]


def test_dump_and_load_carry_policies_schedules_and_dead_letters(server_factory, tmp_path):
    src = server_factory()
    c = populate(src)
    path = str(tmp_path / "all.jsonl")
    r = admin_tool(src, "--dump", path)
    assert r.returncode == 0, r.stderr
    dst = server_factory()
    r = admin_tool(dst, "--load", path)
    assert r.returncode == 0, r.stderr
    d = dst.connect(timeout=DEADLINE)
    handle = check_all_there(d)
    # the dead-letter job loaded with its payload, and a retry sends it to a worker again
    assert d.admin(b"retry job " + handle.encode() + b"\n") == b"OK\r\n"
    w = dst.connect(timeout=DEADLINE)
    w.send_packet(CAN_DO, b"flaky")
    w.send_packet(GRAB_JOB_UNIQ)
    _, _, unique, payload = w.expect(JOB_ASSIGN_UNIQ).split(b"\0", 3)
    assert (unique, payload) == (b"dl-1", b"pay\0load")
    c.close()


def test_everything_new_survives_kill_9_with_a_store(server_factory, tmp_path):
    store = "--store=sqlite:" + str(tmp_path / "s.db")
    s = server_factory(store)
    c = populate(s)
    # what the admin answered is queued for the store's next batch: once a later background
    # submit's JOB_CREATED is back (held until its batch is durable), all of it is on disk
    c.send_packet(SUBMIT_JOB_BG, b"marker", b"", b"x")
    c.expect(JOB_CREATED)
    s.stop(signal.SIGKILL)
    s.proc = None
    s2 = server_factory(store)
    deadline = time.monotonic() + KILL_WAIT
    while "store: replayed" not in s2.stderr_text():  # bounded wait for the replay's end
        assert time.monotonic() < deadline, "replay did not finish"
        time.sleep(0.01)
    check_all_there(s2.connect(timeout=DEADLINE))


def test_spur_listings_end_lines_like_gearmand_status(server_factory):
    """Every Spur-only listing ends each line with LF alone and its last line with ".\\n", byte
    for byte like gearmand's `status` and `workers` (docs/ADMIN.md); `schedule list` used CR LF
    while `retry list` used LF."""
    c = populate(server_factory())
    for line in ("schedule list", "retry list", "show failed jobs", "dump", "metrics", "status"):
        out = c.admin(line.encode() + b"\n", terminator=b"\n.\n")  # CR LF: never found
        assert b"\r" not in out, (line, out[-200:])
