# SPDX-License-Identifier: BSD-3-Clause
"""Admin text protocol: every command and error line, checked byte for byte.

Tests taking the `both` fixture run once against spurd and once against Debian's gearmand, with
the same expected bytes. Where Spur deliberately differs, the test is spurd-only and says why.
"""
import socket

import pytest

from gearman_wire import (CAN_DO, ECHO_REQ, GRAB_JOB, JOB_ASSIGN, JOB_CREATED, NOOP,
                          PRE_SLEEP, SET_CLIENT_ID, SUBMIT_JOB, SUBMIT_JOB_BG, WORK_COMPLETE,
                          WORK_FAIL, packet)

SYNC = packet(ECHO_REQ, b"sync")
SYNC_REPLY = b"\0RES\0\0\0\x11\0\0\0\x04sync"


def ask(conn, line):
    """Send one admin line and return exactly the reply bytes (an ECHO marks the end)."""
    conn.send(line + SYNC)
    return conn.read_until(SYNC_REPLY)[:-len(SYNC_REPLY)]


def setup_state(s):
    """Functions fa (one worker, one background job with unique u1) and fb (one job, no unique)."""
    w = s.connect()
    w.send_packet(CAN_DO, b"fa")
    w.echo_roundtrip()
    c = s.connect()
    c.send_packet(SUBMIT_JOB_BG, b"fa", b"u1", b"x")
    c.expect(JOB_CREATED)
    c.send_packet(SUBMIT_JOB_BG, b"fb", b"", b"y")
    c.expect(JOB_CREATED)
    return c, w


def sorted_listing(data):
    lines = data.split(b"\n")
    assert lines[-2:] == [b".", b""], data
    return sorted(lines[:-2])


@pytest.mark.parametrize("line,reply", [
    (b"show jobs x\n", b"ERR UNKNOWN_SHOW_ARGUMENTS\r\n"),
    (b"show unique\n", b"ERR UNKNOWN_SHOW_ARGUMENTS\r\n"),
    (b"show foo\n", b"ERR UNKNOWN_SHOW_ARGUMENTS\r\n"),
    (b"show\n", b"ERR UNKNOWN_COMMAND Unknown+server+commandshow\r\n"),
    (b"cancel\n", b"ERR UNKNOWN_COMMAND Unknown+server+commandcancel\r\n"),
    (b"cancel job\n", b"ERR UNKNOWN_COMMAND Unknown+server+commandcancel\r\n"),
    (b"cancel foo bar\n", b"ERR UNKNOWN_ERROR\r\n"),
    (b"cancel job a b\n", b"ERR UNKNOWN_ERROR\r\n"),
    (b"cancel job H:nope:1\n", b"ERR UNKNOWN_JOB\r\n"),
    (b"create function\n",
     b"ERR INVALID_ARGUMENTS An+incomplete+set+of+arguments+was+sent+to+this+command+create\r\n"),
    (b"create foo bar\n",
     b"ERR INVALID_ARGUMENTS An+incomplete+set+of+arguments+was+sent+to+this+command+create\r\n"),
    (b"drop x\n",
     b"ERR INVALID_ARGUMENTS An+incomplete+set+of+arguments+was+sent+to+this+command+drop\r\n"),
    (b"drop function nope\n", b"ERR function not found\r\n"),
    (b"maxqueue\n",
     b"ERR INVALID_ARGUMENTS An+incomplete+set+of+arguments+was+sent+to+this+command+maxqueue\r\n"),
    (b"maxqueue nope\n", b"OK\r\n"),
    (b"maxqueue nope 1 2 3\n", b"OK\r\n"),
    (b"a b c d e\n", b"ERR UNKNOWN_COMMAND Unknown+server+commanda\r\n"),
    (b" status\n", b"ERR UNKNOWN_COMMAND Unknown+server+command\r\n"),
    (b"\n", b"ERR UNKNOWN_COMMAND Unknown+server+command\r\n"),
    (b"   \r\n", b"ERR UNKNOWN_COMMAND Unknown+server+command\r\n"),
    (b"create function Baz\r\n", b"OK\r\n"),
])
def test_reply_bytes_match_gearmand(both, line, reply):
    c = both.connect()
    assert ask(c, line) == reply


def test_version_and_getpid_line_endings(both):
    c = both.connect()
    v = ask(c, b"version\n")
    assert v.startswith(b"OK ") and v.endswith(b"\n") and not v.endswith(b"\r\n")
    assert ask(c, b"getpid\r\n") == b"OK %d\n" % both.proc.pid


@pytest.mark.parametrize("which", ["spurd", "gearmand"])
def test_verbose_reports_log_level(which, server_factory, gearmand_factory):
    s = server_factory("--verbose=INFO") if which == "spurd" else gearmand_factory("--verbose=INFO")
    assert ask(s.connect(), b"verbose\n") == b"OK INFO\n"


def test_status_counts_queued_running_and_workers(both):
    c, w = setup_state(both)
    assert sorted_listing(ask(c, b"status\n")) == [b"fa\t1\t0\t1", b"fb\t1\t0\t0"]
    assert sorted_listing(ask(c, b"STATUS\r\n")) == [b"fa\t1\t0\t1", b"fb\t1\t0\t0"]
    w.send_packet(GRAB_JOB)
    w.expect(JOB_ASSIGN)
    assert sorted_listing(ask(c, b"status\n")) == [b"fa\t1\t1\t1", b"fb\t1\t0\t0"]
    assert sorted_listing(ask(c, b"prioritystatus\n")) == [b"fa\t0\t0\t0\t1", b"fb\t0\t1\t0\t0"]


def test_prioritystatus_per_priority(both):
    c = both.connect()
    for cmd, data in ((SUBMIT_JOB_BG, b"n"), (SUBMIT_JOB_BG, b"n2")):
        c.send_packet(cmd, b"p", b"", data)
        c.expect(JOB_CREATED)
    c.send_packet(32, b"p", b"", b"high")  # SUBMIT_JOB_HIGH_BG
    c.expect(JOB_CREATED)
    c.send_packet(34, b"p", b"", b"low")  # SUBMIT_JOB_LOW_BG
    c.expect(JOB_CREATED)
    assert ask(c, b"prioritystatus\n") == b"p\t1\t2\t1\t0\n.\n"


def test_show_unique_jobs_lists_empty_uniques_as_empty_lines(both):
    c, _ = setup_state(both)
    assert sorted(ask(c, b"show unique jobs\n").split(b"\n")) == sorted([b"", b"u1", b".", b""])


def test_show_jobs_lists_handles(both):
    c = both.connect()
    c.send_packet(SUBMIT_JOB_BG, b"f", b"", b"x")
    h = c.expect(JOB_CREATED)
    assert ask(c, b"show jobs\n") == h + b"\t0\t0\t1\n.\n"


def test_workers_lists_every_connection_with_client_id(both):
    w = both.connect()
    w.send_packet(SET_CLIENT_ID, b"wkr1")
    w.send_packet(CAN_DO, b"fa")
    w.send_packet(CAN_DO, b"fb")
    w.echo_roundtrip()
    c = both.connect()
    lines = sorted_listing(ask(c, b"workers\n"))
    assert len(lines) == 2
    # gearmand lists a worker's functions newest first, spurd in CAN_DO order
    wl = [l for l in lines if b" wkr1 : " in l]
    assert len(wl) == 1 and wl[0].split(b" ")[1:3] == [b"127.0.0.1", b"wkr1"], lines
    assert sorted(wl[0].split(b" : ")[1].split(b" ")) == [b"fa", b"fb"]
    assert any(l.endswith(b" 127.0.0.1 - :") for l in lines), lines
    for l in lines:
        assert int(l.split(b" ")[0]) > 2


def test_cancel_queued_job_fails_its_clients(both):
    c = both.connect()
    c.send_packet(SUBMIT_JOB, b"f", b"", b"x")
    h = c.expect(JOB_CREATED)
    admin = both.connect()
    assert ask(admin, b"cancel job " + h + b"\n") == b"OK\r\n"
    assert c.expect(WORK_FAIL) == h


def test_maxqueue_limits_and_resets(both):
    c = both.connect()
    assert ask(c, b"create function mq\r\n") == b"OK\r\n"
    assert ask(c, b"maxqueue mq 1\n") == b"OK\r\n"
    c.send_packet(SUBMIT_JOB_BG, b"mq", b"", b"1")
    c.expect(JOB_CREATED)
    c.send_packet(SUBMIT_JOB_BG, b"mq", b"", b"2")
    assert c.expect(19) == b"QUEUE_ERROR\0Job queue is full"
    assert ask(c, b"maxqueue mq\n") == b"OK\r\n"
    c.send_packet(SUBMIT_JOB_BG, b"mq", b"", b"3")
    c.expect(JOB_CREATED)


def test_drop_function_refused_with_workers_then_allowed(both):
    w = both.connect()
    w.send_packet(CAN_DO, b"dropme")
    w.echo_roundtrip()
    c = both.connect()
    assert ask(c, b"drop function dropme\n") == \
        b"ERR there are still connected workers or executing clients\r\n"
    w.close()
    # the worker's disconnect is processed before this admin line only eventually; poll bounded.
    # gearmand keeps the function until it is dropped; spurd forgets it with its last worker.
    for _ in range(200):
        r = ask(c, b"drop function dropme\n")
        if r in (b"OK\r\n", b"ERR function not found\r\n"):
            break
    assert r in (b"OK\r\n", b"ERR function not found\r\n")
    assert ask(c, b"drop function dropme\n") == b"ERR function not found\r\n"


# ---------------------------------------------------------------- where Spur differs


@pytest.mark.spur_only
def test_drop_function_refused_while_jobs_queued(server):
    c = server.connect()
    c.send_packet(SUBMIT_JOB_BG, b"q", b"", b"x")
    c.expect(JOB_CREATED)
    assert ask(c, b"drop function q\n") == \
        b"ERR there are still connected workers or executing clients\r\n"


@pytest.mark.spur_only
def test_create_function_with_bare_lf_keeps_whole_name(server):
    c = server.connect()
    assert ask(c, b"create function Baz\n") == b"OK\r\n"
    assert ask(c, b"status\n") == b"Baz\t0\t0\t0\n.\n"


@pytest.mark.spur_only
def test_too_many_tokens_gets_err_and_connection_stays(server):
    c = server.connect()
    assert ask(c, b"maxqueue fn 1 2 3 4\n") == b"ERR TOO_MANY_ARGS Too+many+arguments\r\n"
    assert ask(c, b"getpid\n") == b"OK %d\n" % server.proc.pid


@pytest.mark.spur_only
def test_overlong_line_gets_err_and_next_line_served(server):
    c = server.connect()
    c.send(b"version " + b"a" * (1 << 20) + b"\n")
    assert c.read_line() == b"ERR LINE_TOO_LONG Line+longer+than+max-line-length\r\n"
    assert ask(c, b"getpid\n") == b"OK %d\n" % server.proc.pid


@pytest.mark.spur_only
def test_max_line_length_option(server_factory):
    s = server_factory("--max-line-length=64")
    c = s.connect()
    c.send(b"v" * 80 + b"\n")
    assert c.read_line() == b"ERR LINE_TOO_LONG Line+longer+than+max-line-length\r\n"
    assert ask(c, b"version " + b"y" * 40 + b"\n").startswith(b"OK ")


@pytest.mark.spur_only
def test_duplicate_can_do_listed_once(server):
    w = server.connect()
    w.send_packet(CAN_DO, b"f")
    w.send_packet(CAN_DO, b"f")
    w.echo_roundtrip()
    c = server.connect()
    lines = sorted_listing(ask(c, b"workers\n"))
    assert any(l.endswith(b": f") for l in lines), lines
    assert ask(c, b"status\n") == b"f\t0\t0\t1\n.\n"


@pytest.mark.spur_only
def test_cancel_running_job_fails_clients_once(server):
    c = server.connect()
    w = server.connect()
    w.send_packet(CAN_DO, b"f")
    c.send_packet(SUBMIT_JOB, b"f", b"", b"x")
    h = c.expect(JOB_CREATED)
    w.send_packet(GRAB_JOB)
    w.expect(JOB_ASSIGN)
    admin = server.connect()
    assert ask(admin, b"cancel job " + h + b"\n") == b"OK\r\n"
    assert c.expect(WORK_FAIL) == h
    w.send_packet(WORK_COMPLETE, h, b"late")
    w.echo_roundtrip()  # no ERROR for the worker: the echo comes back first
    c.echo_roundtrip()  # and nothing more for the client
    assert ask(admin, b"status\n") == b"f\t0\t0\t1\n.\n"


@pytest.mark.spur_only
def test_shutdown_from_loopback_exits_zero(server_factory):
    s = server_factory()
    c = s.connect()
    assert ask(c, b"shutdown\n")[:4] == b"OK\r\n"
    assert s.proc.wait(timeout=10) == 0


@pytest.mark.spur_only
def test_shutdown_refused_when_policy_none(server_factory):
    s = server_factory("--admin-shutdown=none")
    c = s.connect()
    assert ask(c, b"shutdown\n") == \
        b"ERR PERMISSION_DENIED Shutdown+is+not+allowed+from+this+connection\r\n"
    assert ask(c, b"shutdown now\n") == b"ERR UNKNOWN_ARGS Usage:+shutdown+[graceful]\r\n"
    assert s.proc.poll() is None


@pytest.mark.spur_only
def test_shutdown_refused_from_non_loopback(server_factory):
    """Connect from a non-loopback address of this machine, if it has one."""
    try:
        probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        probe.connect(("192.0.2.1", 9))  # no packet is sent: this only picks a source address
        addr = probe.getsockname()[0]
        probe.close()
    except OSError:
        pytest.skip("no non-loopback IPv4 address")
    if addr.startswith("127."):
        pytest.skip("no non-loopback IPv4 address")
    s = server_factory("--listen=" + addr)
    from gearman_wire import Conn
    c = Conn((addr, s.addr[1]))
    assert ask(c, b"shutdown\n") == \
        b"ERR PERMISSION_DENIED Shutdown+is+not+allowed+from+this+connection\r\n"
    assert s.proc.poll() is None


@pytest.mark.spur_only
def test_shutdown_graceful_waits_for_running_job(server_factory):
    s = server_factory()
    c = s.connect()
    w = s.connect()
    w.send_packet(CAN_DO, b"f")
    c.send_packet(SUBMIT_JOB, b"f", b"", b"x")
    h = c.expect(JOB_CREATED)
    c.send_packet(SUBMIT_JOB, b"f", b"", b"queued")
    c.expect(JOB_CREATED)
    w.send_packet(GRAB_JOB)
    w.expect(JOB_ASSIGN)
    admin = s.connect()
    assert ask(admin, b"shutdown graceful\n") == b"OK\r\n"
    w.send_packet(PRE_SLEEP)
    w.send_packet(GRAB_JOB)
    assert w.expect(10) == b""  # NO_JOB: nothing new is handed out
    assert s.proc.poll() is None
    w.send_packet(WORK_COMPLETE, h, b"result")
    assert c.expect(WORK_COMPLETE) == h + b"\0result"
    assert s.proc.wait(timeout=10) == 0


@pytest.mark.slow
@pytest.mark.spur_only
def test_listings_on_100k_jobs_and_1000_functions_are_complete(server):
    """Every listing is complete and exact on a big server, and another client is served while a
    long `show jobs` is still being written (it is produced in slices)."""
    c = server.connect(timeout=60)
    batch = []
    for i in range(100000):
        batch.append(packet(SUBMIT_JOB_BG, b"fn%d" % (i % 1000), b"u%d" % i, b"x"))
    c.send(b"".join(batch))
    handles = set()
    for _ in range(100000):
        handles.add(c.expect(JOB_CREATED, timeout=60))
    lister = server.connect(timeout=60)
    other = server.connect()
    lister.send(b"show jobs\n")
    other.echo_roundtrip()
    listing = lister.read_until(b"\n.\n", timeout=60)
    rows = listing.split(b"\n")[:-2]
    assert len(rows) == 100000
    assert {r.split(b"\t")[0] for r in rows} == handles
    status = ask(lister, b"status\n")
    assert len(status.split(b"\n")) == 1000 + 2
    assert sum(int(l.split(b"\t")[1]) for l in status.split(b"\n")[:-2]) == 100000
    uniques = ask(lister, b"show unique jobs\n").split(b"\n")[:-2]
    assert sorted(uniques) == sorted(b"u%d" % i for i in range(100000))
