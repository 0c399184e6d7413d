# SPDX-License-Identifier: BSD-3-Clause
"""Worker side: abilities, grabbing, the ASSIGN variants, SET_CLIENT_ID, several jobs at once."""
from engine_wire import (admin_lines, expect_assign, expect_no_job, fname, grab, status_of,
                         submit, uniq, wait_status, worker)
from gearman_wire import (CAN_DO, CAN_DO_TIMEOUT, CANT_DO, GRAB_JOB, GRAB_JOB_ALL, GRAB_JOB_UNIQ,
                          NO_JOB, PRE_SLEEP, RESET_ABILITIES, SET_CLIENT_ID, SUBMIT_JOB_BG,
                          WORK_COMPLETE, WORK_STATUS)


def test_grab_job_without_abilities_answers_no_job(conn):
    expect_no_job(conn)


def test_grab_job_uniq_without_abilities_answers_no_job(conn):
    expect_no_job(conn, GRAB_JOB_UNIQ)


def test_grab_job_all_without_abilities_answers_no_job(conn):
    expect_no_job(conn, GRAB_JOB_ALL)


def test_grab_job_empty_queue_answers_no_job(server):
    w = worker(server, fname())
    expect_no_job(w)
    expect_no_job(w, GRAB_JOB_UNIQ)
    expect_no_job(w, GRAB_JOB_ALL)


def test_can_do_sends_no_reply(conn):
    conn.send_packet(CAN_DO, fname())
    conn.echo_roundtrip()


def test_grab_job_returns_job_assign(server):
    f = fname()
    c = server.connect()
    h = submit(c, f, b"arg")
    w = worker(server, f)
    assert expect_assign(w) == [h, f, b"arg"]


def test_grab_job_uniq_returns_unique(server):
    f = fname()
    u = uniq()
    c = server.connect()
    h = submit(c, f, b"arg", unique=u)
    w = worker(server, f)
    assert expect_assign(w, GRAB_JOB_UNIQ) == [h, f, u, b"arg"]


def test_grab_job_uniq_with_empty_unique(server):
    f = fname()
    c = server.connect()
    h = submit(c, f, b"arg")
    w = worker(server, f)
    assert expect_assign(w, GRAB_JOB_UNIQ) == [h, f, b"", b"arg"]


def test_grab_job_uniq_with_dash_unique_returns_dash(server):
    f = fname()
    c = server.connect()
    h = submit(c, f, b"arg", unique=b"-")
    w = worker(server, f)
    assert expect_assign(w, GRAB_JOB_UNIQ) == [h, f, b"-", b"arg"]


def test_grabbed_job_is_not_given_twice(server):
    f = fname()
    c = server.connect()
    submit(c, f, b"only")
    w1 = worker(server, f)
    w2 = worker(server, f)
    expect_assign(w1)
    expect_no_job(w2)
    expect_no_job(w1)


def test_two_workers_get_distinct_jobs(server):
    f = fname()
    c = server.connect()
    hs = {submit(c, f, b"%d" % i) for i in range(2)}
    w1, w2 = worker(server, f), worker(server, f)
    assert {expect_assign(w1)[0], expect_assign(w2)[0]} == hs


def test_worker_only_gets_its_functions(server):
    f, g = fname(), fname()
    c = server.connect()
    hg = submit(c, g, b"g")
    hf = submit(c, f, b"f")
    w = worker(server, f)
    assert expect_assign(w)[0] == hf
    expect_no_job(w)
    assert status_of(server, g)[0] == 1 and hg


def test_cant_do_removes_ability(server):
    f = fname()
    w = worker(server, f)
    w.send_packet(CANT_DO, f)
    w.echo_roundtrip()
    c = server.connect()
    submit(c, f, b"x")
    expect_no_job(w)


def test_cant_do_keeps_other_abilities(server):
    f, g = fname(), fname()
    w = worker(server, f, g)
    w.send_packet(CANT_DO, f)
    c = server.connect()
    submit(c, f, b"x")
    hg = submit(c, g, b"y")
    assert expect_assign(w)[0] == hg
    expect_no_job(w)


def test_cant_do_unknown_function_is_harmless(server):
    w = worker(server, fname())
    w.send_packet(CANT_DO, fname())
    w.echo_roundtrip()
    expect_no_job(w)


def test_can_do_twice_then_cant_do_removes_it(server):
    f = fname()
    w = worker(server, f, f)
    w.send_packet(CANT_DO, f)
    w.echo_roundtrip()
    c = server.connect()
    submit(c, f, b"x")
    expect_no_job(w)


def test_reset_abilities_removes_all(server):
    f, g = fname(), fname()
    w = worker(server, f, g)
    w.send_packet(RESET_ABILITIES)
    w.echo_roundtrip()
    c = server.connect()
    submit(c, f, b"x")
    submit(c, g, b"y")
    expect_no_job(w)


def test_can_do_after_reset_abilities(server):
    f = fname()
    w = worker(server, f)
    w.send_packet(RESET_ABILITIES)
    w.send_packet(CAN_DO, f)
    c = server.connect()
    h = submit(c, f, b"x")
    assert expect_assign(w)[0] == h


def test_can_do_timeout_registers_ability(server):
    f = fname()
    w = server.connect()
    w.send_packet(CAN_DO_TIMEOUT, f, b"60000")
    w.echo_roundtrip()
    c = server.connect()
    h = submit(c, f, b"x")
    assert expect_assign(w) == [h, f, b"x"]
    w.send_packet(WORK_COMPLETE, h, b"ok")
    assert c.expect(WORK_COMPLETE) == h + b"\0ok"


def test_status_counts_workers(server):
    f = fname()
    ws = [worker(server, f) for _ in range(3)]
    assert status_of(server, f)[2] == 3
    ws[0].send_packet(CANT_DO, f)
    ws[0].echo_roundtrip()
    assert status_of(server, f)[2] == 2
    ws[1].close()
    ws[2].send_packet(RESET_ABILITIES)
    ws[2].echo_roundtrip()
    wait_status(server, f, (0, 0, 0))


def test_set_client_id_no_reply_and_shown_in_workers(server):
    f = fname()
    wid = fname("wid")
    w = server.connect()
    w.send_packet(SET_CLIENT_ID, wid)
    w.send_packet(CAN_DO, f)
    w.echo_roundtrip()
    lines = [l for l in admin_lines(server, "workers") if b" " + wid + b" :" in l]
    assert len(lines) == 1
    assert lines[0].endswith(b" : " + f + b"\n")


def test_pre_sleep_with_nothing_queued_sends_nothing(server):
    w = worker(server, fname())
    w.send_packet(PRE_SLEEP)
    w.echo_roundtrip()


def test_worker_runs_two_jobs_at_once(server):
    f = fname()
    c = server.connect()
    h1, h2 = submit(c, f, b"1"), submit(c, f, b"2")
    w = worker(server, f)
    assert expect_assign(w)[0] == h1
    assert expect_assign(w)[0] == h2
    w.send_packet(WORK_COMPLETE, h2, b"two")
    w.send_packet(WORK_COMPLETE, h1, b"one")
    assert c.expect(WORK_COMPLETE) == h2 + b"\0two"
    assert c.expect(WORK_COMPLETE) == h1 + b"\0one"
    assert status_of(server, f)[:2] == (0, 0)


def test_one_connection_is_client_and_worker(server):
    f = fname()
    cw = worker(server, f)
    h = submit(cw, f, b"self")
    assert expect_assign(cw) == [h, f, b"self"]
    cw.send_packet(WORK_COMPLETE, h, b"mine")
    assert cw.expect(WORK_COMPLETE) == h + b"\0mine"


def test_worker_grabs_next_job_after_complete(server):
    f = fname()
    c = server.connect()
    hs = [submit(c, f, b"%d" % i, cmd=SUBMIT_JOB_BG) for i in range(3)]
    w = worker(server, f)
    for h in hs:
        assert expect_assign(w)[0] == h
        w.send_packet(WORK_STATUS, h, b"1", b"1")
        w.send_packet(WORK_COMPLETE, h, b"")
    expect_no_job(w)
    assert status_of(server, f) == (0, 0, 1)


def test_running_job_counted_in_status(server):
    f = fname()
    c = server.connect()
    submit(c, f, b"1")
    submit(c, f, b"2")
    w = worker(server, f)
    expect_assign(w)
    assert status_of(server, f) == (2, 1, 1)


def test_no_job_is_exactly_an_empty_res_packet(server):
    w = worker(server, fname())
    w.send_packet(GRAB_JOB)
    assert w.read_exact(12) == b"\0RES" + NO_JOB.to_bytes(4, "big") + b"\0\0\0\0"
    assert grab(w) == (NO_JOB, b"")
