# SPDX-License-Identifier: BSD-3-Clause
"""Unique-ID coalescing per (function, unique): joining jobs, `-`, limits, joiners leaving."""
import pytest

from engine_wire import (client, expect_assign, expect_error, expect_no_job, fname, status_of,
                         submit, submit_reduce, uniq, wait_conn_gone, worker)
from gearman_wire import (GET_STATUS, GET_STATUS_UNIQUE, GRAB_JOB_UNIQ, JOB_ASSIGN_UNIQ,
                          JOB_CREATED, STATUS_RES, SUBMIT_JOB, SUBMIT_JOB_BG, SUBMIT_JOB_HIGH,
                          SUBMIT_JOB_LOW, SUBMIT_JOB_LOW_BG, SUBMIT_REDUCE_JOB, WORK_COMPLETE,
                          WORK_DATA, WORK_STATUS)

TOO_LARGE = b"ARGUMENT_TOO_LARGE\0Unique value too large"


def test_two_clients_same_unique_share_job_and_both_get_result(server):
    f, u = fname(), uniq()
    c1, c2 = server.connect(), server.connect()
    h = submit(c1, f, b"first", unique=u)
    assert submit(c2, f, b"second", unique=u) == h
    assert status_of(server, f) == (1, 0, 0)
    w = worker(server, f)
    assert expect_assign(w) == [h, f, b"first"]      # the joiner's payload is discarded
    expect_no_job(w)
    w.send_packet(WORK_DATA, h, b"part")
    w.send_packet(WORK_COMPLETE, h, b"all")
    for c in (c1, c2):
        assert c.expect(WORK_DATA) == h + b"\0part"
        assert c.expect(WORK_COMPLETE) == h + b"\0all"


def test_same_connection_joining_twice_gets_every_packet_twice(server):
    """Each foreground submit is one attachment, even from the same connection."""
    f, u = fname(), uniq()
    c = server.connect()
    h = submit(c, f, b"x", unique=u)
    assert submit(c, f, b"x", unique=u) == h
    w = worker(server, f)
    expect_assign(w)
    w.send_packet(WORK_DATA, h, b"d")
    w.send_packet(WORK_COMPLETE, h, b"r")
    assert [c.expect(WORK_DATA) for _ in range(2)] == [h + b"\0d"] * 2
    assert [c.expect(WORK_COMPLETE) for _ in range(2)] == [h + b"\0r"] * 2
    c.echo_roundtrip()


def test_same_unique_other_function_is_another_job(server):
    f, g, u = fname(), fname(), uniq()
    c = server.connect()
    assert submit(c, f, b"", unique=u) != submit(c, g, b"", unique=u)


def test_empty_unique_never_coalesces(server):
    f = fname()
    c = server.connect()
    hs = {submit(c, f, b"same", unique=b"") for _ in range(3)}
    assert len(hs) == 3
    assert status_of(server, f)[0] == 3


def test_dash_unique_coalesces_equal_payloads(server):
    f = fname()
    c1, c2 = server.connect(), server.connect()
    h = submit(c1, f, b"payload", unique=b"-")
    assert submit(c2, f, b"payload", unique=b"-") == h
    w = worker(server, f)
    assert expect_assign(w, GRAB_JOB_UNIQ) == [h, f, b"-", b"payload"]
    w.send_packet(WORK_COMPLETE, h, b"r")
    assert c1.expect(WORK_COMPLETE) == h + b"\0r"
    assert c2.expect(WORK_COMPLETE) == h + b"\0r"


def test_dash_unique_different_payloads_are_different_jobs(server):
    f = fname()
    c = server.connect()
    assert submit(c, f, b"a", unique=b"-") != submit(c, f, b"b", unique=b"-")


def test_dash_unique_is_not_a_literal_unique(server):
    """`-` keys on the payload, so it does not collide with a job whose unique is the payload."""
    f = fname()
    c = server.connect()
    h1 = submit(c, f, b"p1", unique=b"-")
    h2 = submit(c, f, b"p2", unique=b"-")
    assert h1 != h2 and submit(c, f, b"p1", unique=b"-") == h1


@pytest.mark.parametrize("n", [1, 32, 63])
def test_unique_up_to_63_bytes_coalesces(server, n):
    f = fname()
    u = (uniq() * 8)[:n]
    c = server.connect()
    h = submit(c, f, b"x", unique=u)
    assert submit(c, f, b"y", unique=u, cmd=SUBMIT_JOB_BG) == h
    w = worker(server, f)
    assert expect_assign(w, GRAB_JOB_UNIQ) == [h, f, u, b"x"]


@pytest.mark.spur_only
def test_unique_of_64_bytes_coalesces_and_is_returned_whole(server):
    """gearmand truncates a 64-byte unique to 63 bytes and never coalesces it (DIFFERENCES.md)."""
    f = fname()
    u = (uniq() * 8)[:64]
    c = server.connect()
    h = submit(c, f, b"x", unique=u)
    assert submit(c, f, b"y", unique=u) == h
    w = worker(server, f)
    assert expect_assign(w, GRAB_JOB_UNIQ) == [h, f, u, b"x"]


@pytest.mark.gearmand_only
def test_gearmand_64_byte_unique_is_truncated_and_never_coalesces(gearmand):
    f = fname()
    u = (uniq() * 8)[:64]
    c = gearmand.connect()
    h1 = submit(c, f, b"x", unique=u)
    h2 = submit(c, f, b"y", unique=u)
    assert h1 != h2
    w = worker(gearmand, f)
    # The stored unique is 63 bytes plus its NUL, and both go out: the payload gains a leading NUL.
    w.send_packet(GRAB_JOB_UNIQ)
    assert w.expect(JOB_ASSIGN_UNIQ) == h1 + b"\0" + f + b"\0" + u[:63] + b"\0\0x"
    # Asking for the status of that unique closes the connection (-t 0) instead of answering.
    c.send_packet(GET_STATUS_UNIQUE, u)
    c.expect_closed()


@pytest.mark.parametrize("cmd", [SUBMIT_JOB, SUBMIT_JOB_BG, SUBMIT_JOB_HIGH, SUBMIT_JOB_LOW_BG])
def test_unique_over_64_bytes_argument_too_large(server, cmd):
    f = fname()
    c = server.connect()
    c.send_packet(cmd, f, b"u" * 65, b"x")
    expect_error(c, TOO_LARGE)
    c.echo_roundtrip()
    assert status_of(server, f)[0] == 0
    assert submit(c, f, b"x", unique=b"u" * 63)


def test_very_long_unique_argument_too_large(server):
    c = server.connect()
    c.send_packet(SUBMIT_JOB, fname(), b"u" * 1000, b"x")
    expect_error(c, TOO_LARGE)
    c.echo_roundtrip()


@pytest.mark.spur_only
def test_reduce_submit_checks_unique_length_not_reducer(server):
    """gearmand checks the REDUCER length against 64 instead of the unique's (DIFFERENCES.md)."""
    f = fname()
    c = server.connect()
    c.send_packet(SUBMIT_REDUCE_JOB, f, b"u" * 65, b"red", b"", b"x")
    expect_error(c, TOO_LARGE)
    c.echo_roundtrip()
    h = submit_reduce(c, f, uniq(), b"r" * 100, b"x")
    assert h


def test_joiner_gets_only_later_work_packets(server):
    f, u = fname(), uniq()
    c1, c2 = server.connect(), server.connect()
    h = submit(c1, f, b"x", unique=u)
    w = worker(server, f)
    expect_assign(w)
    w.send_packet(WORK_DATA, h, b"early")
    w.send_packet(WORK_STATUS, h, b"1", b"4")
    assert c1.expect(WORK_DATA) == h + b"\0early"
    assert c1.expect(WORK_STATUS) == h + b"\x001\x004"
    assert submit(c2, f, b"x", unique=u) == h         # joins the running job
    w.send_packet(WORK_DATA, h, b"late")
    w.send_packet(WORK_COMPLETE, h, b"end")
    for c in (c1, c2):
        assert c.expect(WORK_DATA) == h + b"\0late"
        assert c.expect(WORK_COMPLETE) == h + b"\0end"
    c2.echo_roundtrip()


def test_joined_job_status_is_that_of_running_job(server):
    f, u = fname(), uniq()
    c1, c2 = server.connect(), server.connect()
    h = submit(c1, f, b"x", unique=u)
    w = worker(server, f)
    expect_assign(w)
    w.send_packet(WORK_STATUS, h, b"2", b"3")
    w.echo_roundtrip()
    assert submit(c2, f, b"", unique=u) == h
    c2.send_packet(GET_STATUS, h)
    assert c2.expect(STATUS_RES) == h + b"\x001\x001\x002\x003"


def test_foreground_joins_background_job_and_gets_result(server):
    f, u = fname(), uniq()
    bg, fg = server.connect(), server.connect()
    h = submit(bg, f, b"bgdata", unique=u, cmd=SUBMIT_JOB_BG)
    assert submit(fg, f, b"fgdata", unique=u) == h
    w = worker(server, f)
    assert expect_assign(w) == [h, f, b"bgdata"]
    w.send_packet(WORK_COMPLETE, h, b"res")
    assert fg.expect(WORK_COMPLETE) == h + b"\0res"
    bg.echo_roundtrip()                                  # the background submitter gets nothing


def test_background_submit_onto_foreground_job_only_gets_job_created(server):
    f, u = fname(), uniq()
    fg, bg = server.connect(), server.connect()
    h = submit(fg, f, b"x", unique=u)
    assert submit(bg, f, b"y", unique=u, cmd=SUBMIT_JOB_BG) == h
    w = worker(server, f)
    expect_assign(w)
    w.send_packet(WORK_DATA, h, b"d")
    w.send_packet(WORK_COMPLETE, h, b"c")
    assert fg.expect(WORK_DATA) == h + b"\0d"
    assert fg.expect(WORK_COMPLETE) == h + b"\0c"
    bg.echo_roundtrip()


def test_joiner_priority_is_ignored(server):
    """A HIGH submit that joins a LOW job does not move it ahead of other jobs."""
    f, u = fname(), uniq()
    c = server.connect()
    hlow = submit(c, f, b"low", unique=u, cmd=SUBMIT_JOB_LOW)
    hnorm = submit(c, f, b"normal")
    assert submit(c, f, b"high", unique=u, cmd=SUBMIT_JOB_HIGH) == hlow
    w = worker(server, f)
    assert expect_assign(w)[0] == hnorm
    assert expect_assign(w) == [hlow, f, b"low"]


def test_first_client_leaving_does_not_cancel_shared_job(server):
    f, u = fname(), uniq()
    cid = fname("cid")
    c1, c2 = client(server, cid), server.connect()
    h = submit(c1, f, b"x", unique=u)
    assert submit(c2, f, b"x", unique=u) == h
    c1.close()
    wait_conn_gone(server, cid)
    w = worker(server, f)
    assert expect_assign(w)[0] == h
    w.send_packet(WORK_COMPLETE, h, b"r")
    assert c2.expect(WORK_COMPLETE) == h + b"\0r"


def test_unique_reusable_after_job_completes(server):
    f, u = fname(), uniq()
    c = server.connect()
    h1 = submit(c, f, b"1", unique=u)
    w = worker(server, f)
    expect_assign(w)
    w.send_packet(WORK_COMPLETE, h1, b"")
    assert c.expect(WORK_COMPLETE) == h1 + b"\0"
    h2 = submit(c, f, b"2", unique=u)
    assert h2 != h1
    assert expect_assign(w) == [h2, f, b"2"]


@pytest.mark.spur_only
def test_foreground_joiner_leaving_does_not_cancel_background_job(server):
    """gearmand marks the background job ignored and never runs it (DIFFERENCES.md)."""
    f, u = fname(), uniq()
    cid = fname("cid")
    bg, fg = server.connect(), client(server, cid)
    h = submit(bg, f, b"bg", unique=u, cmd=SUBMIT_JOB_BG)
    assert submit(fg, f, b"fg", unique=u) == h
    fg.close()
    wait_conn_gone(server, cid)
    assert status_of(server, f)[0] == 1
    w = worker(server, f)
    assert expect_assign(w) == [h, f, b"bg"]


@pytest.mark.gearmand_only
def test_gearmand_foreground_joiner_leaving_cancels_background_job(gearmand):
    f, u = fname(), uniq()
    cid = fname("cid")
    bg, fg = gearmand.connect(), client(gearmand, cid)
    h = submit(bg, f, b"bg", unique=u, cmd=SUBMIT_JOB_BG)
    assert submit(fg, f, b"fg", unique=u) == h
    fg.close()
    wait_conn_gone(gearmand, cid)
    w = worker(gearmand, f)
    expect_no_job(w)


@pytest.mark.gearmand_only
def test_gearmand_dash_unique_with_empty_payload_never_coalesces(gearmand):
    f = fname()
    c = gearmand.connect()
    assert submit(c, f, b"", unique=b"-") != submit(c, f, b"", unique=b"-")


@pytest.mark.gearmand_only
def test_gearmand_reduce_submit_checks_reducer_length(gearmand):
    f = fname()
    c = gearmand.connect()
    c.send_packet(SUBMIT_REDUCE_JOB, f, uniq(), b"r" * 65, b"", b"x")
    expect_error(c, TOO_LARGE)
    c.send_packet(SUBMIT_REDUCE_JOB, f, b"u" * 65, b"red", b"", b"x")
    assert c.expect(JOB_CREATED)
