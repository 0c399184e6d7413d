# SPDX-License-Identifier: BSD-3-Clause
"""Function names as gearmand has them.

- A function stays known, listed by `status` with 0 0 0, once its last job is done and its last
  worker left, until `drop function` (monitoring alerts on a queue that vanished); only past
  --max-functions are the least recently used unused functions forgotten, and counted.
- Every byte but NUL may be in a name (Perl's Gearman::Client puts a TAB after its `prefix`).
  The text listings escape what would break a row (%XX: control bytes, space where spaces
  separate columns, a % before two hex digits), JSON carries the name exactly, and the admin
  commands take the escaped form: a name that looks like a row can never forge one.
"""
import json
import os
import re
import subprocess

import pytest

from conftest import EXTERNAL, poll
from gearman_wire import (CAN_DO, CAN_DO_TIMEOUT, CANT_DO, ERROR, GRAB_JOB, JOB_ASSIGN,
                          JOB_CREATED, SET_CLIENT_ID, SUBMIT_JOB, SUBMIT_JOB_BG,
                          SUBMIT_JOB_HIGH, SUBMIT_JOB_HIGH_BG, SUBMIT_JOB_LOW, SUBMIT_JOB_LOW_BG,
                          WORK_COMPLETE)
from gearman_wire import admin_status as status

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENTS = os.path.join(HERE, "clients")


def raw_status(c):
    c.send(b"status\r\n")
    return c.read_until(b".\n")


def stats(c):
    c.send(b"stats\r\n")
    return dict(re.findall(rb"STAT (\S+) (\S+)\r\n", c.read_until(b"END\r\n")))


def run_one_job(server, c, name, payload=b"x"):
    """A worker registers name, a client submits a foreground job of name, the worker gets it
    with the exact name and completes it; returns the worker connection (still registered)."""
    w = server.connect()
    w.send_packet(CAN_DO, name)
    w.echo_roundtrip()
    c.send_packet(SUBMIT_JOB, name, b"", payload)
    h = c.expect(JOB_CREATED)
    w.send_packet(GRAB_JOB)
    assert w.expect(JOB_ASSIGN) == h + b"\0" + name + b"\0" + payload
    w.send_packet(WORK_COMPLETE, h, b"done")
    assert c.expect(WORK_COMPLETE) == h + b"\0done"
    return w


# ------------------------------------------------------------------ functions stay listed

def test_function_stays_listed_until_dropped(both):
    """gearmand 1.1.20 and spurd answer the same bytes: listed with 0 0 0 after its job and its
    worker are gone, `drop function` OK, then gone and `function not found`."""
    c = both.connect()
    w = run_one_job(both, c, b"kept")
    w.close()
    poll(lambda: status(c) == {b"kept": (0, 0, 0)}, "the worker's disconnect")
    assert raw_status(c) == b"kept\t0\t0\t0\n.\n"
    assert c.admin(b"drop function kept\r\n") == b"OK\r\n"
    assert raw_status(c) == b".\n"
    assert c.admin(b"drop function kept\r\n") == b"ERR function not found\r\n"


def test_background_job_and_cant_do_keep_the_function(both):
    c = both.connect()
    c.send_packet(SUBMIT_JOB_BG, b"bgkept", b"", b"p")
    h = c.expect(JOB_CREATED)
    assert c.admin(b"cancel job " + h + b"\r\n") == b"OK\r\n"
    w = both.connect()
    w.send_packet(CAN_DO, b"cdkept")
    w.send_packet(CANT_DO, b"cdkept")
    w.echo_roundtrip()
    poll(lambda: status(c).get(b"cdkept") == (0, 0, 0), "CANT_DO")
    assert status(c)[b"bgkept"][1:] == (0, 0)
    assert c.admin(b"drop function cdkept\r\n") == b"OK\r\n"


@pytest.mark.skipif(EXTERNAL is not None, reason="needs its own spurd")
def test_unused_functions_are_evicted_least_recent_first_past_max_functions(server_factory):
    s = server_factory("--max-functions=100")
    c = s.connect()
    w = s.connect()
    w.send_packet(CAN_DO, b"held")  # in use: never evicted
    w.echo_roundtrip()
    c.send_packet(SUBMIT_JOB_BG, b"queued", b"", b"p")  # in use
    c.expect(JOB_CREATED)
    c.send(b"".join(b"create function k%d\r\n" % i for i in range(500)))
    for _ in range(500):
        assert c.read_line() == b"OK\r\n"
    st = status(c)
    assert len(st) == 100
    assert st[b"held"] == (0, 0, 1) and st[b"queued"] == (1, 0, 0)
    assert sorted(st) == sorted([b"held", b"queued"] + [b"k%d" % i for i in range(402, 500)])
    assert stats(c)[b"functions_evicted"] == b"402"
    c.send(b"stats json\r\n")
    assert json.loads(c.read_until(b"\n"))["functions_evicted"] == 402
    c.send(b"metrics\r\n")
    assert b"\nspur_functions_evicted_total 402\n" in c.read_until(b"\n.\n")
    # a function used again is the most recent: k402 is taken and released, k403 goes next
    w.send_packet(CAN_DO, b"k402")
    w.send_packet(CANT_DO, b"k402")
    w.echo_roundtrip()
    assert c.admin(b"create function new\r\n") == b"OK\r\n"
    st = status(c)
    assert b"k403" not in st and b"k402" in st and b"new" in st
    # nothing unused left: refused, as before
    s2 = server_factory("--max-functions=2")
    c2 = s2.connect()
    c2.send_packet(SUBMIT_JOB_BG, b"a", b"", b"p")
    c2.send_packet(SUBMIT_JOB_BG, b"b", b"", b"p")
    c2.expect(JOB_CREATED)
    c2.expect(JOB_CREATED)
    c2.send_packet(SUBMIT_JOB_BG, b"c", b"", b"p")
    assert c2.expect(ERROR) == b"QUEUE_ERROR\0Too many functions (--max-functions)"
    assert stats(c2)[b"functions_evicted"] == b"0"


# ------------------------------------------------------------------ names with any byte

# name: (as `status`, `prioritystatus`, `show unique jobs` print it; as `workers` prints it)
NAMES = {
    b"ns\treverse": (b"ns%09reverse", b"ns%09reverse"),
    b"a\nb": (b"a%0Ab", b"a%0Ab"),
    b"a\rb": (b"a%0Db", b"a%0Db"),
    b"a b": (b"a b", b"a%20b"),
    b"\x01\x1b[2J": (b"%01%1B[2J", b"%01%1B[2J"),
    b"a\x7f": (b"a%7F", b"a%7F"),
    b"f\t1\t0\t0\nforged": (b"f%091%090%090%0Aforged", b"f%091%090%090%0Aforged"),
    b"50%41": (b"50%2541", b"50%2541"),
    b"100%": (b"100%", b"100%"),
    b"App\\Mail": (b"App\\Mail", b"App\\Mail"),
}


@pytest.mark.skipif(EXTERNAL is not None, reason="needs its own spurd")
@pytest.mark.parametrize("name", list(NAMES), ids=[repr(n) for n in NAMES])
def test_any_name_works_and_listings_cannot_be_forged(server, name):
    listed, in_workers = NAMES[name]
    c = server.connect()
    w = run_one_job(server, c, name)
    # status: one row, the name escaped; JSON: the name exactly
    assert raw_status(c) == listed + b"\t0\t0\t1\n.\n"
    c.send(b"prioritystatus\r\n")
    assert c.read_until(b".\n") == listed + b"\t0\t0\t0\t1\n.\n"
    c.send(b"status json\r\n")
    doc = json.loads(c.read_until(b"\n"))
    assert [f["function"].encode() for f in doc["functions"]] == [name]
    c.send(b"workers json\r\n")
    doc = json.loads(c.read_until(b"\n"))
    assert [x["functions"] for x in doc["workers"] if x["functions"]] == [[name.decode()]]
    # workers: one row per connection, the function one space-separated field
    c.send(b"workers\r\n")
    rows = c.read_until(b".\n").split(b"\n")[:-2]
    assert len(rows) == 2, rows
    assert [r for r in rows if r.endswith(b" :")] != []
    assert [r.split(b" : ")[1] for r in rows if b" : " in r] == [in_workers]
    # stats functions: NAME:field VALUE, the name without spaces
    c.send(b"stats functions\r\n")
    lines = c.read_until(b"END\r\n").split(b"\r\n")
    assert (b"STAT " + in_workers + b":total 0") in lines
    assert all(len(x.split(b" ")) == 3 for x in lines if x.startswith(b"STAT "))
    # the admin commands take the escaped form (the workers one: no space in a token)
    assert c.admin(b"drop function " + in_workers + b"\r\n") == \
        b"ERR there are still connected workers or executing clients\r\n"
    w.send_packet(CANT_DO, name)
    w.echo_roundtrip()
    assert c.admin(b"maxqueue " + in_workers + b" 3\r\n") == b"OK\r\n"
    assert c.admin(b"maxqueue " + in_workers + b"\r\n") == b"OK\r\n"
    assert c.admin(b"drop function " + in_workers + b"\r\n") == b"OK\r\n"
    assert raw_status(c) == b".\n"
    assert c.admin(b"create function " + in_workers + b"\r\n") == b"OK\r\n"
    assert raw_status(c) == listed + b"\t0\t0\t0\n.\n"


@pytest.mark.skipif(EXTERNAL is not None, reason="needs its own spurd")
def test_every_entry_point_takes_control_bytes_and_refuses_nul(server):
    c = server.connect()
    name = b"p\tf"
    for i, cmd in enumerate([SUBMIT_JOB_BG, SUBMIT_JOB_HIGH_BG, SUBMIT_JOB_LOW_BG]):
        c.send_packet(cmd, name, b"u%d" % i, b"x")
        c.expect(JOB_CREATED)
    for cmd in (SUBMIT_JOB, SUBMIT_JOB_HIGH, SUBMIT_JOB_LOW):
        c2 = server.connect()
        c2.send_packet(cmd, name, b"", b"x")
        c2.expect(JOB_CREATED)
        c2.close()
    w = server.connect()
    w.send_packet(CAN_DO_TIMEOUT, name, b"10")
    w.echo_roundtrip()
    # the admin submit, retry policies and schedules name it escaped
    assert c.admin(b"submit p%09f --unique adm payload\r\n").startswith(b"OK ")
    assert c.admin(b"retry p%09f 3 1\r\n") == b"OK\r\n"
    c.send(b"retry list\r\n")
    assert c.read_until(b".\n").startswith(b"p%09f\t3\t1\t")
    # 3 background jobs and the admin one (the foreground ones went with their clients)
    poll(lambda: status(c)[b"p%09f"][0] == 4, "the foreground clients' disconnect")
    # a unique with a newline is one line of `show unique jobs`
    c.send_packet(SUBMIT_JOB_BG, name, b"u\nforged", b"x")
    c.expect(JOB_CREATED)
    c.send_packet(SUBMIT_JOB_BG, name, b".", b"x")  # not the end line
    c.expect(JOB_CREATED)
    c.send(b"show unique jobs\r\n")
    uniques = c.read_until(b"\n.\n").split(b"\n")[:-2]
    assert sorted(uniques) == [b"%2E", b"adm", b"u%0Aforged", b"u0", b"u1", b"u2"]
    # NUL (only a no-data last argument can carry one, and %00 in the escaped form) is refused
    w.send_packet(CAN_DO, b"a\0b")
    assert w.expect(ERROR) == b"INVALID_ARGUMENT\0Function name has a NUL byte"
    bad = b"ERR INVALID_FUNCTION_NAME NUL+byte+in+function+name\r\n"
    for line in (b"create function a%00b\r\n", b"drop function a%00b\r\n",
                 b"maxqueue a%00b 1\r\n", b"retry a%00b 1 1\r\n", b"submit a%00b x\r\n"):
        assert c.admin(line) == bad, line
    assert b"a\0b" not in raw_status(c)


@pytest.mark.skipif(EXTERNAL is not None, reason="needs its own spurd")
def test_schedule_names_its_function_escaped(server):
    c = server.connect()
    reply = c.admin(b"schedule add tick @every 1h p%09f hello\r\n")
    if reply.startswith(b"ERR UNKNOWN_COMMAND"):
        pytest.skip("schedules are not enabled")
    assert reply == b"OK\r\n"
    c.send(b"schedule list\r\n")
    row = c.read_until(b".\n").split(b"\n")[0].split(b"\t")
    assert row[0] == b"tick" and row[2] == b"p%09f", row


@pytest.mark.skipif(EXTERNAL is not None, reason="needs its own spurd")
def test_client_id_with_spaces_and_newlines_stays_one_field(server):
    c = server.connect()
    c.send_packet(SET_CLIENT_ID, b"my id\nforged 1.2.3.4 x :")
    c.echo_roundtrip()
    c.send(b"workers\r\n")
    rows = c.read_until(b".\n").split(b"\n")[:-2]
    assert len(rows) == 1, rows
    assert rows[0].split(b" ")[2:] == [b"my%20id%0Aforged%201.2.3.4%20x%20:", b":"]
    c.send(b"workers json\r\n")
    doc = json.loads(c.read_until(b"\n"))
    assert doc["workers"][0]["client_id"] == "my id\nforged 1.2.3.4 x :"


def test_names_with_tab_and_space_run_on_both_servers(both):
    """The bytes gearmand takes in a name spurd takes too (the listings differ: escaped)."""
    c = both.connect()
    for name in (b"ns\tf", b"a b", b"x\ry"):
        w = run_one_job(both, c, name)
        w.close()


def test_perl_prefix_namespaces(both):
    """Perl's Gearman::Client/Worker `prefix` (a TAB between the prefix and the name)."""
    if subprocess.run(["perl", "-MGearman::Client", "-MGearman::Worker", "-e", "1"],
                      capture_output=True).returncode != 0:
        pytest.skip("libgearman-client-perl is not installed")
    server = "%s:%d" % both.addr
    worker = subprocess.Popen(["perl", os.path.join(CLIENTS, "worker_prefix.pl"), server, "ns1",
                               "2"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        out = subprocess.run(["perl", os.path.join(CLIENTS, "client_prefix.pl"), server, "ns1",
                              "abc", "hello"], capture_output=True, timeout=30)
        assert out.returncode == 0, out.stderr
        assert out.stdout == b"cba\nolleh\n"
        assert worker.wait(timeout=30) == 0, worker.stderr.read()
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    c = both.connect()
    # spurd escapes the TAB; gearmand prints it as it is (a row of five columns)
    assert raw_status(c) in (b"ns1%09reverse\t0\t0\t0\n.\n", b"ns1\treverse\t0\t0\t0\n.\n")
