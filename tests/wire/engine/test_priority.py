# SPDX-License-Identifier: BSD-3-Clause
"""Priorities (high, normal, low), FIFO within a priority, and round-robin across functions."""
import pytest

from engine_wire import expect_assign, expect_no_job, fname, submit, worker
from gearman_wire import (SUBMIT_JOB, SUBMIT_JOB_BG, SUBMIT_JOB_HIGH, SUBMIT_JOB_HIGH_BG,
                          SUBMIT_JOB_LOW, SUBMIT_JOB_LOW_BG, WORK_COMPLETE)

HIGH, NORMAL, LOW = 0, 1, 2
BG_CMD = {HIGH: SUBMIT_JOB_HIGH_BG, NORMAL: SUBMIT_JOB_BG, LOW: SUBMIT_JOB_LOW_BG}
FG_CMD = {HIGH: SUBMIT_JOB_HIGH, NORMAL: SUBMIT_JOB, LOW: SUBMIT_JOB_LOW}


def drain(w, n):
    """Grab n jobs (completing each) and return their handles in assignment order."""
    out = []
    for _ in range(n):
        h = expect_assign(w)[0]
        w.send_packet(WORK_COMPLETE, h, b"")
        out.append(h)
    expect_no_job(w)
    return out


@pytest.mark.parametrize("cmds", [BG_CMD, FG_CMD], ids=["background", "foreground"])
def test_high_then_normal_then_low_fifo_within(server, cmds):
    f = fname()
    c = server.connect()
    plan = [LOW, NORMAL, HIGH, LOW, NORMAL, HIGH, NORMAL]
    jobs = [(p, submit(c, f, b"%d" % i, cmd=cmds[p])) for i, p in enumerate(plan)]
    w = worker(server, f)
    want = [h for p in (HIGH, NORMAL, LOW) for q, h in jobs if q == p]
    assert drain(w, len(jobs)) == want


def test_foreground_and_background_share_one_fifo_per_priority(server):
    f = fname()
    c = server.connect()
    hs = [submit(c, f, b"1", cmd=SUBMIT_JOB_HIGH_BG), submit(c, f, b"2", cmd=SUBMIT_JOB_HIGH),
          submit(c, f, b"3", cmd=SUBMIT_JOB_HIGH_BG)]
    w = worker(server, f)
    assert drain(w, 3) == hs


def test_later_high_job_overtakes_queued_low_jobs(server):
    f = fname()
    c = server.connect()
    lows = [submit(c, f, b"l%d" % i, cmd=SUBMIT_JOB_LOW_BG) for i in range(3)]
    w = worker(server, f)
    assert expect_assign(w)[0] == lows[0]
    high = submit(c, f, b"h", cmd=SUBMIT_JOB_HIGH_BG)
    assert expect_assign(w)[0] == high
    assert [expect_assign(w)[0] for _ in range(2)] == lows[1:]


def check_global_priority_round_robin(order, jobs):
    """order: handles as assigned. jobs: handle -> (function, priority, sequence number).

    - every HIGH before every NORMAL before every LOW, across functions;
    - FIFO within one function and priority;
    - round-robin: within a priority, the same function is not served twice in a row while
      another function still has a job of that priority waiting."""
    prios = [jobs[h][1] for h in order]
    assert prios == sorted(prios), "priority is not global: %r" % [jobs[h] for h in order]
    for f in {v[0] for v in jobs.values()}:
        for p in (HIGH, NORMAL, LOW):
            seqs = [jobs[h][2] for h in order if jobs[h][:2] == (f, p)]
            assert seqs == sorted(seqs), "not FIFO within %r/%d" % (f, p)
    for i in range(1, len(order)):
        prev, cur = jobs[order[i - 1]], jobs[order[i]]
        if prev[1] == cur[1] and prev[0] == cur[0]:
            waiting = [jobs[h] for h in order[i:] if jobs[h][1] == cur[1] and jobs[h][0] != cur[0]]
            assert not waiting, "function %r served twice while %r waits" % (cur[0], waiting[0])


@pytest.mark.spur_only
def test_three_priorities_across_two_functions_are_global(server):
    """gearmand 1.1.20 picks a function first, then its best priority (DIFFERENCES.md)."""
    a, b = fname("a"), fname("b")
    c = server.connect()
    plan = [(a, LOW), (b, NORMAL), (a, HIGH), (b, LOW), (b, HIGH), (a, NORMAL),
            (a, HIGH), (b, HIGH), (b, LOW), (a, LOW), (b, NORMAL), (a, NORMAL)]
    jobs = {}
    for i, (f, p) in enumerate(plan):
        jobs[submit(c, f, b"%d" % i, cmd=BG_CMD[p])] = (f, p, i)
    w = worker(server, a, b)
    check_global_priority_round_robin(drain(w, len(plan)), jobs)


@pytest.mark.spur_only
def test_low_job_of_one_function_waits_for_high_job_of_other(server):
    a, b = fname("a"), fname("b")
    c = server.connect()
    low_b = submit(c, b, b"low", cmd=SUBMIT_JOB_LOW_BG)
    high_a = submit(c, a, b"high", cmd=SUBMIT_JOB_HIGH_BG)
    norm_b = submit(c, b, b"norm", cmd=SUBMIT_JOB_BG)
    w = worker(server, a, b)
    assert drain(w, 3) == [high_a, norm_b, low_b]


@pytest.mark.spur_only
def test_high_job_submitted_later_for_other_function_goes_first(server):
    a, b = fname("a"), fname("b")
    c = server.connect()
    normals = [submit(c, a, b"%d" % i, cmd=SUBMIT_JOB_BG) for i in range(3)]
    w = worker(server, b, a)
    assert expect_assign(w)[0] == normals[0]
    high_b = submit(c, b, b"h", cmd=SUBMIT_JOB_HIGH_BG)
    assert expect_assign(w)[0] == high_b


def test_round_robin_across_functions_at_same_priority(any_server_factory):
    """Spur always round-robins; gearmand only with -R (which Spur accepts)."""
    s = any_server_factory("--round-robin")
    a, b = fname("a"), fname("b")
    c = s.connect()
    jobs = {}
    for i in range(4):
        jobs[submit(c, a, b"a%d" % i, cmd=SUBMIT_JOB_BG)] = (a, NORMAL, i)
    for i in range(4):
        jobs[submit(c, b, b"b%d" % i, cmd=SUBMIT_JOB_BG)] = (b, NORMAL, i)
    w = worker(s, a, b)
    order = drain(w, 8)
    funcs = [jobs[h][0] for h in order]
    assert all(funcs[i] != funcs[i + 1] for i in range(7)), funcs
    check_global_priority_round_robin(order, jobs)


def test_round_robin_starts_with_the_last_can_do(both_factory):
    """Differential: one worker, four functions with three queued jobs each. gearmand -R serves the
    last-registered function first and then goes backwards through the CAN_DOs; so does spurd."""
    s = both_factory("--round-robin")
    fs = [fname("f%d" % i) for i in range(4)]
    c = s.connect()
    jobs = {}
    for k, f in enumerate(fs):
        for i in range(3):
            jobs[submit(c, f, b"%d" % i, cmd=SUBMIT_JOB_BG)] = (k, i)
    w = worker(s, *fs)
    order = [jobs[h] for h in drain(w, 12)]
    assert order == [(k, i) for i in range(3) for k in (3, 2, 1, 0)]


@pytest.mark.spur_only
def test_round_robin_across_three_functions_without_options(server):
    fs = [fname("f%d" % i) for i in range(3)]
    c = server.connect()
    jobs = {}
    for f in fs:
        for i in range(3):
            jobs[submit(c, f, b"%d" % i, cmd=SUBMIT_JOB_BG)] = (f, NORMAL, i)
    w = worker(server, *fs)
    order = drain(w, 9)
    check_global_priority_round_robin(order, jobs)
    # Each window of three consecutive grabs serves each function once.
    for k in range(0, 9, 3):
        assert {jobs[h][0] for h in order[k:k + 3]} == set(fs)


@pytest.mark.spur_only
def test_function_with_new_jobs_does_not_starve_other(server):
    """A steady stream of jobs for one function does not keep the other waiting."""
    a, b = fname("a"), fname("b")
    c = server.connect()
    submit(c, a, b"a0", cmd=SUBMIT_JOB_BG)
    hb = submit(c, b, b"b0", cmd=SUBMIT_JOB_BG)
    w = worker(server, b, a)     # gearmand 1.1.20 would serve the last-registered `a` forever
    served = []
    for i in range(4):
        h = expect_assign(w)[0]
        served.append(h)
        w.send_packet(WORK_COMPLETE, h, b"")
        submit(c, a, b"a%d" % (i + 1), cmd=SUBMIT_JOB_BG)
    assert hb in served[:2]


@pytest.mark.gearmand_only
def test_gearmand_priority_is_per_function_last_registered_first(gearmand):
    a, b = fname("a"), fname("b")
    c = gearmand.connect()
    high_a = submit(c, a, b"high", cmd=SUBMIT_JOB_HIGH_BG)
    norm_b = submit(c, b, b"norm", cmd=SUBMIT_JOB_BG)
    low_b = submit(c, b, b"low", cmd=SUBMIT_JOB_LOW_BG)
    w = worker(gearmand, a, b)       # b registered last: all of b's jobs go first
    assert drain(w, 3) == [norm_b, low_b, high_a]
