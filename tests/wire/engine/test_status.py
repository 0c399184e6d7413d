# SPDX-License-Identifier: BSD-3-Clause
"""GET_STATUS / STATUS_RES, GET_STATUS_UNIQUE / STATUS_RES_UNIQUE, and the admin `status` list."""
import pytest

from engine_wire import (admin_lines, expect_assign, fname, status, status_of, submit, uniq,
                         wait_status, worker)
from gearman_wire import (GET_STATUS, GET_STATUS_UNIQUE, STATUS_RES, STATUS_RES_UNIQUE,
                          SUBMIT_JOB_BG, WORK_COMPLETE, WORK_STATUS)


def get_status(c, h):
    c.send_packet(GET_STATUS, h)
    return c.expect(STATUS_RES)


def get_status_unique(c, u):
    c.send_packet(GET_STATUS_UNIQUE, u)
    return c.expect(STATUS_RES_UNIQUE)


@pytest.mark.parametrize("h", [b"H:nohost:99", b"x", b"H:" + b"9" * 60])
def test_get_status_unknown_handle(conn, h):
    assert get_status(conn, h) == h + b"\x000\x000\x000\x000"


def test_get_status_queued_job(server):
    c = server.connect()
    h = submit(c, fname(), b"x")
    assert get_status(c, h) == h + b"\x001\x000\x000\x000"


def test_get_status_running_job(server):
    f = fname()
    c = server.connect()
    h = submit(c, f, b"x", cmd=SUBMIT_JOB_BG)
    w = worker(server, f)
    expect_assign(w)
    assert get_status(c, h) == h + b"\x001\x001\x000\x000"


def test_get_status_after_work_status_from_any_connection(server):
    f = fname()
    c = server.connect()
    h = submit(c, f, b"x", cmd=SUBMIT_JOB_BG)
    w = worker(server, f)
    expect_assign(w)
    w.send_packet(WORK_STATUS, h, b"42", b"100")
    w.echo_roundtrip()
    other = server.connect()
    assert get_status(other, h) == h + b"\x001\x001\x0042\x00100"
    assert get_status(w, h) == h + b"\x001\x001\x0042\x00100"


def test_get_status_after_completion_is_unknown(server):
    f = fname()
    c = server.connect()
    h = submit(c, f, b"x", cmd=SUBMIT_JOB_BG)
    w = worker(server, f)
    expect_assign(w)
    w.send_packet(WORK_COMPLETE, h, b"")
    w.echo_roundtrip()
    assert get_status(c, h) == h + b"\x000\x000\x000\x000"


def test_get_status_unique_unknown(conn):
    u = uniq()
    assert get_status_unique(conn, u) == u + b"\x000\x000\x000\x000\x000"


def test_get_status_unique_queued_foreground(server):
    f, u = fname(), uniq()
    c = server.connect()
    submit(c, f, b"x", unique=u)
    assert get_status_unique(c, u) == u + b"\x001\x000\x000\x000\x001"


def test_get_status_unique_background_has_no_clients(server):
    f, u = fname(), uniq()
    c = server.connect()
    submit(c, f, b"x", unique=u, cmd=SUBMIT_JOB_BG)
    assert get_status_unique(c, u) == u + b"\x001\x000\x000\x000\x000"


def test_get_status_unique_running_with_three_clients(server):
    f, u = fname(), uniq()
    cs = [server.connect() for _ in range(3)]
    h = submit(cs[0], f, b"x", unique=u)
    for c in cs[1:]:
        assert submit(c, f, b"x", unique=u) == h
    w = worker(server, f)
    expect_assign(w)
    w.send_packet(WORK_STATUS, h, b"1", b"3")
    for c in cs:
        assert c.expect(WORK_STATUS) == h + b"\x001\x003"
    assert get_status_unique(cs[0], u) == u + b"\x001\x001\x001\x003\x003"
    other = server.connect()
    assert get_status_unique(other, u) == u + b"\x001\x001\x001\x003\x003"


def test_get_status_unique_after_completion_is_unknown(server):
    f, u = fname(), uniq()
    c = server.connect()
    h = submit(c, f, b"x", unique=u)
    w = worker(server, f)
    expect_assign(w)
    w.send_packet(WORK_COMPLETE, h, b"")
    assert c.expect(WORK_COMPLETE) == h + b"\0"
    assert get_status_unique(c, u) == u + b"\x000\x000\x000\x000\x000"


@pytest.mark.spur_only
def test_get_status_unique_of_64_bytes(server):
    """64-byte uniques work in Spur; gearmand closes the connection here (DIFFERENCES.md)."""
    f = fname()
    u = (uniq() * 8)[:64]
    c = server.connect()
    submit(c, f, b"x", unique=u)
    assert get_status_unique(c, u) == u + b"\x001\x000\x000\x000\x001"
    c.echo_roundtrip()


def test_admin_status_counts_total_running_workers(server):
    f, g = fname(), fname()
    c = server.connect()
    for i in range(3):
        submit(c, f, b"%d" % i, cmd=SUBMIT_JOB_BG)
    submit(c, g, b"g", cmd=SUBMIT_JOB_BG)
    ws = [worker(server, f), worker(server, f, g)]
    expect_assign(ws[0])
    st = status(server)
    assert st[f] == (3, 1, 2)                   # TOTAL counts the running job too
    assert st[g] == (1, 0, 1)


def test_admin_status_line_format(server):
    f = fname()
    c = server.connect()
    submit(c, f, b"x", cmd=SUBMIT_JOB_BG)
    lines = [l for l in admin_lines(server, "status") if l.startswith(f + b"\t")]
    assert lines == [f + b"\t1\t0\t0\n"]


def test_admin_status_after_jobs_finish(server):
    f = fname()
    c = server.connect()
    hs = [submit(c, f, b"%d" % i, cmd=SUBMIT_JOB_BG) for i in range(2)]
    w = worker(server, f)
    for h in hs:
        expect_assign(w)
        w.send_packet(WORK_COMPLETE, h, b"")
    w.echo_roundtrip()
    assert status_of(server, f) == (0, 0, 1)
    w.close()
    wait_status(server, f, (0, 0, 0))


def test_coalesced_submits_count_once(server):
    f, u = fname(), uniq()
    cs = [server.connect() for _ in range(3)]
    for c in cs:
        submit(c, f, b"x", unique=u)
    assert status_of(server, f) == (1, 0, 0)
