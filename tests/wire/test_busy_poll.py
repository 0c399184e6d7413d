# SPDX-License-Identifier: BSD-3-Clause
"""--busy-poll: the loop may poll a little before sleeping while input keeps arriving soon, but an
idle server goes back to sleep (spin.h)."""
import os
import time

import pytest

from gearman_wire import (CAN_DO, ECHO_REQ, ECHO_RES, GRAB_JOB, JOB_ASSIGN, JOB_CREATED,
                          SUBMIT_JOB, WORK_COMPLETE)


def cpu_seconds(pid):
    """utime + stime of a process, from /proc."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def busy_traffic(srv, rounds=3000):
    """Back-to-back echo round trips: gaps far below any window, so the window grows."""
    c = srv.connect()
    for i in range(rounds):
        c.send_packet(ECHO_REQ, b"%d" % i)
        assert c.expect(ECHO_RES) == b"%d" % i
    return c


@pytest.mark.parametrize("window", ["0", "50", "100000"])
def test_jobs_run_with_any_window(server_factory, window):
    srv = server_factory("--busy-poll=" + window)
    c, w = srv.connect(), srv.connect()
    w.send_packet(CAN_DO, b"bp")
    for i in range(50):
        c.send_packet(SUBMIT_JOB, b"bp", b"", b"%d" % i)
        h = c.expect(JOB_CREATED)
        w.send_packet(GRAB_JOB)
        assert w.expect(JOB_ASSIGN) == h + b"\0bp\0" + b"%d" % i
        w.send_packet(WORK_COMPLETE, h, b"ok")
        assert c.expect(WORK_COMPLETE) == h + b"\0ok"


def test_idle_server_stops_polling(server_factory):
    # the largest window, 100 ms: were the loop to keep polling, an idle second would cost a
    # second of CPU; adapting, it costs at most a few windows
    srv = server_factory("--busy-poll=100000")
    c = busy_traffic(srv)
    before = cpu_seconds(srv.proc.pid)
    time.sleep(1.0)  # measuring idle CPU: the wait is the measurement, not synchronisation
    used = cpu_seconds(srv.proc.pid) - before
    assert used < 0.4, "spurd used %.2f s of CPU in an idle second" % used
    c.send_packet(ECHO_REQ, b"still there")
    assert c.expect(ECHO_RES) == b"still there"


def test_no_polling_when_turned_off(server_factory):
    srv = server_factory("--busy-poll=0")
    c = busy_traffic(srv, rounds=500)
    before = cpu_seconds(srv.proc.pid)
    time.sleep(0.5)  # measuring idle CPU: the wait is the measurement, not synchronisation
    assert cpu_seconds(srv.proc.pid) - before < 0.05
    c.send_packet(ECHO_REQ, b"x")
    assert c.expect(ECHO_RES) == b"x"


@pytest.mark.parametrize("value", ["100001", "-1", "1.5", "x"])
def test_bad_busy_poll_is_refused(server_factory, value):
    with pytest.raises(RuntimeError, match="busy-poll"):
        server_factory("--busy-poll=" + value)
