# SPDX-License-Identifier: BSD-3-Clause
"""Client submissions: every SUBMIT_* variant, JOB_CREATED and handles, the full job round trip."""
import re
import struct
import time

import pytest

from engine_wire import (expect_assign, expect_no_job, fname, status_of, submit, submit_epoch,
                         submit_reduce, uniq, worker)
from gearman_wire import (GRAB_JOB, GRAB_JOB_ALL, GRAB_JOB_UNIQ, JOB_ASSIGN, JOB_CREATED,
                          RES, SUBMIT_JOB, SUBMIT_JOB_BG, SUBMIT_JOB_HIGH, SUBMIT_JOB_HIGH_BG,
                          SUBMIT_JOB_LOW, SUBMIT_JOB_LOW_BG, SUBMIT_REDUCE_JOB_BACKGROUND,
                          WORK_COMPLETE, packet)

PLAIN_SUBMITS = [SUBMIT_JOB, SUBMIT_JOB_BG, SUBMIT_JOB_HIGH, SUBMIT_JOB_HIGH_BG, SUBMIT_JOB_LOW,
                 SUBMIT_JOB_LOW_BG]
FOREGROUND = {SUBMIT_JOB, SUBMIT_JOB_HIGH, SUBMIT_JOB_LOW}
HANDLE_RE = re.compile(rb"^H:[^:\0]+:[0-9]+$")


@pytest.mark.parametrize("cmd", PLAIN_SUBMITS)
def test_every_submit_variant_returns_job_created_and_runs(server, cmd):
    f = fname()
    c = server.connect()
    h = submit(c, f, b"payload-%d" % cmd, cmd=cmd)
    assert HANDLE_RE.match(h), h
    w = worker(server, f)
    assert expect_assign(w) == [h, f, b"payload-%d" % cmd]
    w.send_packet(WORK_COMPLETE, h, b"done")
    w.echo_roundtrip()
    if cmd in FOREGROUND:
        assert c.expect(WORK_COMPLETE) == h + b"\0done"
    c.echo_roundtrip()   # a background client gets nothing but the echo


def test_job_created_exact_frame(server):
    c = server.connect()
    c.send_packet(SUBMIT_JOB, fname(), b"", b"x")
    magic, cmd, body = c.read_packet()
    assert (magic, cmd) == (RES, JOB_CREATED)
    assert HANDLE_RE.match(body) and len(body) < 64


def test_foreground_round_trip_exact_bytes(server):
    """The PROTOCOL example, byte for byte (handle aside)."""
    f = fname("reverse")
    w = worker(server, f)
    c = server.connect()
    h = submit(c, f, b"test")
    w.send(packet(GRAB_JOB))
    assign = w.read_exact(12 + len(h) + 1 + len(f) + 1 + 4)
    assert assign == (RES + struct.pack(">II", JOB_ASSIGN, len(h) + len(f) + 6)
                      + h + b"\0" + f + b"\0test")
    w.send_packet(WORK_COMPLETE, h, b"tset")
    reply = c.read_exact(12 + len(h) + 5)
    assert reply == RES + struct.pack(">II", WORK_COMPLETE, len(h) + 5) + h + b"\0tset"


def test_handles_are_distinct(server):
    c = server.connect()
    f, g = fname(), fname()
    handles = [submit(c, f, b"%d" % i, cmd=SUBMIT_JOB_BG) for i in range(50)]
    handles += [submit(c, g, b"%d" % i) for i in range(50)]
    assert len(set(handles)) == 100
    assert all(HANDLE_RE.match(h) and len(h) < 64 for h in handles)


def test_handle_not_reused_after_job_finishes(server):
    f = fname()
    c = server.connect()
    w = worker(server, f)
    seen = set()
    for i in range(5):
        h = submit(c, f, b"x", unique=b"same-unique")
        assert h not in seen
        seen.add(h)
        assert expect_assign(w)[0] == h
        w.send_packet(WORK_COMPLETE, h, b"")
        assert c.expect(WORK_COMPLETE) == h + b"\0"


def test_handle_prefix_option(any_server_factory):
    s = any_server_factory("--job-handle-prefix=spur-test")
    c = s.connect()
    hs = [submit(c, fname(), b"") for _ in range(3)]
    for h in hs:
        assert re.match(rb"^spur-test:[0-9]+$", h), h
    assert len(set(hs)) == 3


def test_handles_with_40_byte_prefix_fit_in_64_bytes(any_server_factory):
    prefix = "P" * 40
    s = any_server_factory("--job-handle-prefix=" + prefix)
    c = s.connect()
    for _ in range(20):
        h = submit(c, fname(), b"", cmd=SUBMIT_JOB_BG)
        assert h.startswith(prefix.encode() + b":")
        assert len(h) + 1 <= 64       # with its NUL terminator, as PROTOCOL requires


def test_payload_with_nul_bytes_is_opaque(server):
    f = fname()
    payload = b"\0a\0\0b\0"
    c = server.connect()
    h = submit(c, f, payload, unique=b"")
    w = worker(server, f)
    assert expect_assign(w) == [h, f, payload]
    w.send_packet(WORK_COMPLETE, h, b"\0r\0")
    assert c.expect(WORK_COMPLETE) == h + b"\0\0r\0"


def test_empty_payload(server):
    f = fname()
    c = server.connect()
    h = submit(c, f, b"")
    w = worker(server, f)
    assert expect_assign(w) == [h, f, b""]


def test_large_payload_round_trip(server):
    f = fname()
    payload = bytes(range(256)) * 8192   # 2 MiB
    c = server.connect()
    h = submit(c, f, payload)
    w = worker(server, f)
    assert expect_assign(w) == [h, f, payload]
    w.send_packet(WORK_COMPLETE, h, payload[::-1])
    assert c.expect(WORK_COMPLETE, timeout=20) == h + b"\0" + payload[::-1]


def test_submit_without_worker_waits_in_queue(server):
    f = fname()
    c = server.connect()
    submit(c, f, b"a")
    submit(c, f, b"b", cmd=SUBMIT_JOB_BG)
    assert status_of(server, f) == (2, 0, 0)


def test_job_for_other_function_not_assigned(server):
    f, g = fname(), fname()
    c = server.connect()
    submit(c, g, b"x")
    w = worker(server, f)
    expect_no_job(w)


def test_one_client_many_jobs_results_in_any_order(server):
    f = fname()
    c = server.connect()
    hs = [submit(c, f, b"%d" % i) for i in range(3)]
    w = worker(server, f)
    assigned = [expect_assign(w) for _ in hs]
    assert [a[0] for a in assigned] == hs
    for h in reversed(hs):
        w.send_packet(WORK_COMPLETE, h, b"r" + h)
    for h in reversed(hs):
        assert c.expect(WORK_COMPLETE) == h + b"\0r" + h


def test_submit_reduce_job_grab_all_carries_reducer(server):
    f = fname()
    c = server.connect()
    u = uniq()
    h = submit_reduce(c, f, u, b"myreducer", b"payload", aggregator=b"ignored")
    w = worker(server, f)
    assert expect_assign(w, GRAB_JOB_ALL) == [h, f, u, b"myreducer", b"payload"]
    w.send_packet(WORK_COMPLETE, h, b"r")
    assert c.expect(WORK_COMPLETE) == h + b"\0r"


def test_submit_reduce_job_background_grab_all_carries_reducer(server):
    f = fname()
    c = server.connect()
    u = uniq()
    h = submit_reduce(c, f, u, b"red", b"data", cmd=SUBMIT_REDUCE_JOB_BACKGROUND)
    w = worker(server, f)
    assert expect_assign(w, GRAB_JOB_ALL) == [h, f, u, b"red", b"data"]
    w.send_packet(WORK_COMPLETE, h, b"r")
    w.echo_roundtrip()
    c.echo_roundtrip()


def test_grab_job_all_without_reducer_answers_job_assign_uniq(server):
    f = fname()
    c = server.connect()
    u = uniq()
    h = submit(c, f, b"data", unique=u)
    w = worker(server, f)
    assert expect_assign(w, GRAB_JOB_ALL) == [h, f, u, b"data"]


def test_plain_grab_of_reduce_job_gives_job_assign(server):
    f = fname()
    c = server.connect()
    h = submit_reduce(c, f, uniq(), b"red", b"data")
    w = worker(server, f)
    assert expect_assign(w, GRAB_JOB) == [h, f, b"data"]


def test_grab_job_uniq_of_reduce_job_gives_unique_without_reducer(server):
    f = fname()
    c = server.connect()
    u = uniq()
    h = submit_reduce(c, f, u, b"red", b"data")
    w = worker(server, f)
    assert expect_assign(w, GRAB_JOB_UNIQ) == [h, f, u, b"data"]


def test_submit_epoch_returns_job_created(server):
    c = server.connect()
    h = submit_epoch(c, fname(), time.time() - 5, b"x")
    assert HANDLE_RE.match(h)
