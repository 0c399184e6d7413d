# SPDX-License-Identifier: BSD-3-Clause
"""WORK_* forwarding to attached clients, ownership checks, exceptions, OPTION_REQ."""
import pytest

from engine_wire import (NOT_FOUND_DATA, NOT_FOUND_EXCEPTION, NOT_FOUND_RESULT, expect_assign,
                         expect_error, expect_no_job, fname, status_of, submit, uniq, worker)
from gearman_wire import (ERROR, GET_STATUS, OPTION_REQ, OPTION_RES, STATUS_RES, SUBMIT_JOB_BG,
                          WORK_COMPLETE, WORK_DATA, WORK_EXCEPTION, WORK_FAIL,
                          WORK_STATUS, WORK_WARNING)

# Each WORK_* a worker can send: (command, extra arguments after the handle, error for a job the
# connection does not hold).
WORK_PACKETS = [
    (WORK_DATA, (b"data\0with nul",), NOT_FOUND_DATA),
    (WORK_WARNING, (b"warn",), NOT_FOUND_DATA),
    (WORK_STATUS, (b"3", b"10"), NOT_FOUND_RESULT),
    (WORK_COMPLETE, (b"result",), NOT_FOUND_RESULT),
    (WORK_FAIL, (), NOT_FOUND_RESULT),
    (WORK_EXCEPTION, (b"boom",), NOT_FOUND_EXCEPTION),
]
WORK_IDS = ["WORK_DATA", "WORK_WARNING", "WORK_STATUS", "WORK_COMPLETE", "WORK_FAIL",
            "WORK_EXCEPTION"]


def running_job(server, f=None, unique=b"", clients=1, exceptions=False):
    """Clients submit one foreground job, a worker takes it: returns (handle, worker, clients)."""
    f = f or fname()
    cs = [server.connect() for _ in range(clients)]
    if exceptions:
        for c in cs:
            c.send_packet(OPTION_REQ, b"exceptions")
            assert c.expect(OPTION_RES) == b"exceptions"
    u = unique or (uniq() if clients > 1 else b"")
    h = submit(cs[0], f, b"arg", unique=u)
    for c in cs[1:]:
        assert submit(c, f, b"arg", unique=u) == h
    w = worker(server, f)
    assert expect_assign(w)[0] == h
    return h, w, cs


@pytest.mark.parametrize("cmd,extra,err", WORK_PACKETS, ids=WORK_IDS)
def test_work_packet_forwarded_exactly(server, cmd, extra, err):
    h, w, (c,) = running_job(server, exceptions=True)
    w.send_packet(cmd, h, *extra)
    w.echo_roundtrip()                          # the worker gets no reply of its own
    assert c.expect(cmd) == b"\0".join((h,) + extra)


def test_work_packets_forwarded_to_every_attached_client(server):
    h, w, cs = running_job(server, clients=3)
    w.send_packet(WORK_DATA, h, b"d")
    w.send_packet(WORK_WARNING, h, b"w")
    w.send_packet(WORK_STATUS, h, b"1", b"2")
    w.send_packet(WORK_COMPLETE, h, b"c")
    for c in cs:
        assert c.expect(WORK_DATA) == h + b"\0d"
        assert c.expect(WORK_WARNING) == h + b"\0w"
        assert c.expect(WORK_STATUS) == h + b"\x001\x002"
        assert c.expect(WORK_COMPLETE) == h + b"\0c"


def test_many_work_data_packets_arrive_in_order(server):
    h, w, (c,) = running_job(server)
    for i in range(200):
        w.send_packet(WORK_DATA, h, b"%d" % i)
    w.send_packet(WORK_COMPLETE, h, b"")
    for i in range(200):
        assert c.expect(WORK_DATA) == h + b"\0%d" % i
    assert c.expect(WORK_COMPLETE) == h + b"\0"


def test_interleaved_jobs_each_client_gets_its_own(server):
    f = fname()
    c1, c2 = server.connect(), server.connect()
    h1, h2 = submit(c1, f, b"1"), submit(c2, f, b"2")
    w = worker(server, f)
    assert [expect_assign(w)[0] for _ in range(2)] == [h1, h2]
    w.send_packet(WORK_DATA, h2, b"to2")
    w.send_packet(WORK_DATA, h1, b"to1")
    w.send_packet(WORK_COMPLETE, h1, b"end1")
    w.send_packet(WORK_COMPLETE, h2, b"end2")
    assert c1.expect(WORK_DATA) == h1 + b"\0to1"
    assert c1.expect(WORK_COMPLETE) == h1 + b"\0end1"
    assert c2.expect(WORK_DATA) == h2 + b"\0to2"
    assert c2.expect(WORK_COMPLETE) == h2 + b"\0end2"
    c1.echo_roundtrip()
    c2.echo_roundtrip()


@pytest.mark.parametrize("cmd", [WORK_COMPLETE, WORK_FAIL, WORK_EXCEPTION],
                         ids=["WORK_COMPLETE", "WORK_FAIL", "WORK_EXCEPTION"])
def test_terminal_packet_ends_job(server, cmd):
    f = fname()
    h, w, (c,) = running_job(server, f=f, exceptions=True)
    w.send_packet(cmd, h, *((b"x",) if cmd != WORK_FAIL else ()))
    c.expect(cmd)
    c.send_packet(GET_STATUS, h)
    assert c.expect(STATUS_RES) == h + b"\x000\x000\x000\x000"
    expect_no_job(w)
    assert status_of(server, f) == (0, 0, 1)


def test_background_job_results_go_nowhere_and_worker_gets_no_error(server):
    f = fname()
    c = server.connect()
    h = submit(c, f, b"x", cmd=SUBMIT_JOB_BG)
    w = worker(server, f)
    expect_assign(w)
    w.send_packet(WORK_DATA, h, b"d")
    w.send_packet(WORK_WARNING, h, b"w")
    w.send_packet(WORK_STATUS, h, b"1", b"2")
    w.send_packet(WORK_COMPLETE, h, b"c")
    w.echo_roundtrip()
    c.echo_roundtrip()
    assert status_of(server, f) == (0, 0, 1)


@pytest.mark.parametrize("cmd,extra,err", WORK_PACKETS, ids=WORK_IDS)
def test_work_packet_for_unknown_handle_job_not_found(server, cmd, extra, err):
    w = worker(server, fname())
    w.send_packet(cmd, b"H:nohost:4294967295", *extra)
    expect_error(w, err)
    w.echo_roundtrip()


@pytest.mark.parametrize("cmd,extra,err", WORK_PACKETS, ids=WORK_IDS)
def test_work_packet_from_other_worker_job_not_found(server, cmd, extra, err):
    h, w, (c,) = running_job(server)
    other = worker(server, fname())
    other.send_packet(cmd, h, *extra)
    expect_error(other, err)
    other.echo_roundtrip()
    # The job is untouched: its worker can still finish it.
    w.send_packet(WORK_COMPLETE, h, b"real")
    assert c.expect(WORK_COMPLETE) == h + b"\0real"


@pytest.mark.parametrize("cmd,extra,err", WORK_PACKETS, ids=WORK_IDS)
def test_work_packet_for_queued_job_job_not_found(server, cmd, extra, err):
    f = fname()
    c = server.connect()
    h = submit(c, f, b"x")
    w = worker(server, f)       # can do f but has not grabbed the job
    w.send_packet(cmd, h, *extra)
    expect_error(w, err)
    assert expect_assign(w)[0] == h


@pytest.mark.parametrize("cmd,extra,err", WORK_PACKETS, ids=WORK_IDS)
def test_result_for_finished_job_job_not_found_and_connection_usable(server, cmd, extra, err):
    h, w, (c,) = running_job(server)
    w.send_packet(WORK_COMPLETE, h, b"first")
    assert c.expect(WORK_COMPLETE) == h + b"\0first"
    w.send_packet(cmd, h, *extra)
    expect_error(w, err)
    w.echo_roundtrip()
    c.echo_roundtrip()                         # the client hears nothing more


def test_work_exception_goes_to_client_with_option(server):
    h, w, (c,) = running_job(server, exceptions=True)
    w.send_packet(WORK_EXCEPTION, h, b"trace\0back")
    assert c.expect(WORK_EXCEPTION) == h + b"\0trace\0back"
    c.echo_roundtrip()


def test_work_exception_without_option_becomes_work_fail(server):
    """Shared part: the client gets WORK_FAIL for the handle (see the spur_only exact test)."""
    h, w, (c,) = running_job(server)
    w.send_packet(WORK_EXCEPTION, h, b"boom")
    assert c.expect(WORK_FAIL).rstrip(b"\0") == h
    c.echo_roundtrip()


@pytest.mark.spur_only
def test_work_exception_without_option_work_fail_is_exactly_the_handle(server):
    """gearmand appends a stray NUL to this WORK_FAIL (DIFFERENCES.md)."""
    h, w, (c,) = running_job(server)
    w.send_packet(WORK_EXCEPTION, h, b"boom")
    assert c.expect(WORK_FAIL) == h


@pytest.mark.gearmand_only
def test_gearmand_work_fail_for_exception_has_trailing_nul(gearmand):
    h, w, (c,) = running_job(gearmand)
    w.send_packet(WORK_EXCEPTION, h, b"boom")
    assert c.expect(WORK_FAIL) == h + b"\0"


def test_work_exception_mixed_clients(server):
    f, u = fname(), uniq()
    plain, wants = server.connect(), server.connect()
    wants.send_packet(OPTION_REQ, b"exceptions")
    assert wants.expect(OPTION_RES) == b"exceptions"
    h = submit(plain, f, b"x", unique=u)
    assert submit(wants, f, b"x", unique=u) == h
    w = worker(server, f)
    expect_assign(w)
    w.send_packet(WORK_EXCEPTION, h, b"boom")
    assert wants.expect(WORK_EXCEPTION) == h + b"\0boom"
    assert plain.expect(WORK_FAIL).rstrip(b"\0") == h


def test_worker_own_work_fail_forwarded_without_extra_bytes(server):
    h, w, (c,) = running_job(server, exceptions=True)
    w.send_packet(WORK_FAIL, h)
    assert c.expect(WORK_FAIL) == h


def test_server_exceptions_option_forwards_to_every_client(any_server_factory):
    s = any_server_factory("--exceptions")
    h, w, (c,) = running_job(s)
    w.send_packet(WORK_EXCEPTION, h, b"boom")
    assert c.expect(WORK_EXCEPTION) == h + b"\0boom"


@pytest.mark.parametrize("name", [b"exceptions", b"EXCEPTIONS", b"Exceptions"])
def test_option_req_exceptions_echoes_name_as_sent(conn, name):
    conn.send_packet(OPTION_REQ, name)
    assert conn.expect(OPTION_RES) == name


def test_option_exceptions_is_per_connection(server):
    f = fname()
    a, b = server.connect(), server.connect()
    a.send_packet(OPTION_REQ, b"exceptions")
    assert a.expect(OPTION_RES) == b"exceptions"
    h = submit(b, f, b"x")
    w = worker(server, f)
    expect_assign(w)
    w.send_packet(WORK_EXCEPTION, h, b"e")
    assert b.expect(WORK_FAIL).rstrip(b"\0") == h


@pytest.mark.parametrize("name", [b"foo", b"exception", b"exceptions2", b""])
def test_option_req_unknown_option_error(conn, name):
    conn.send_packet(OPTION_REQ, name)
    expect_error(conn, b"UNKNOWN_OPTION\0Server does not recognize given option")
    conn.echo_roundtrip()


def test_work_status_stored_for_get_status(server):
    h, w, (c,) = running_job(server)
    w.send_packet(WORK_STATUS, h, b"7", b"9")
    assert c.expect(WORK_STATUS) == h + b"\x007\x009"
    other = server.connect()
    other.send_packet(GET_STATUS, h)
    assert other.expect(STATUS_RES) == h + b"\x001\x001\x007\x009"
    w.send_packet(WORK_STATUS, h, b"8", b"9")
    w.echo_roundtrip()
    other.send_packet(GET_STATUS, h)
    assert other.expect(STATUS_RES) == h + b"\x001\x001\x008\x009"


def test_error_reply_does_not_disturb_client_stream(server):
    """A bad result from the worker side never reaches the clients of other jobs."""
    h, w, (c,) = running_job(server)
    w.send_packet(WORK_DATA, b"H:nohost:1", b"x")
    assert w.expect(ERROR) == NOT_FOUND_DATA
    w.send_packet(WORK_COMPLETE, h, b"ok")
    assert c.expect(WORK_COMPLETE) == h + b"\0ok"
    c.echo_roundtrip()
