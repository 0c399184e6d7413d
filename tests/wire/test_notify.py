# SPDX-License-Identifier: BSD-3-Clause
"""systemd readiness (Type=notify): spurd sends READY=1 once it serves (after the store replay),
WATCHDOG=1 at half $WATCHDOG_USEC, and STOPPING=1 when it stops. The test plays systemd: it binds
the datagram socket named by $NOTIFY_SOCKET and reads what spurd sends there."""
import os
import signal
import socket

import pytest

from conftest import EXTERNAL
from gearman_wire import JOB_CREATED, SUBMIT_JOB_BG, packet

pytestmark = pytest.mark.spur_only


def built_with_systemd():
    builddir = os.environ.get("SPUR_BUILDDIR", "")
    try:
        with open(os.path.join(builddir, "spur_config.h")) as f:
            return "#define HAVE_LIBSYSTEMD 1" in f.read()
    except OSError:
        return False


@pytest.fixture
def notify_socket(tmp_path):
    if EXTERNAL:
        pytest.skip("needs its own spurd")
    if not built_with_systemd():
        pytest.skip("spurd built without libsystemd: notify calls are no-ops")
    path = str(tmp_path / "notify")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(path)
    s.settimeout(30)
    yield s, path
    s.close()


def messages_until(sock, want):
    """Read datagrams until one holds the line `want`; return every line seen before it."""
    seen = []
    while True:
        lines = sock.recv(4096).decode().split("\n")
        if want in lines:
            return seen
        seen += lines


def env_with(**kw):
    env = dict(os.environ)
    env.update(kw)
    return env


def test_ready_is_sent_after_the_store_replay_and_stopping_on_sigterm(server_factory, tmp_path,
                                                                      notify_socket):
    sock, path = notify_socket
    store = "--store=sqlite:" + str(tmp_path / "jobs.db")
    first = server_factory(store)
    c = first.connect()
    n = 20000
    c.send(b"".join(packet(SUBMIT_JOB_BG, b"f", b"", b"x") for _ in range(n)))
    for _ in range(n):
        c.expect(JOB_CREATED)
    c.close()
    first.stop()
    s = server_factory(store, env=env_with(NOTIFY_SOCKET=path))
    messages_until(sock, "READY=1")
    # READY comes only once every stored job is back: the replay's last log line is written first
    assert "store: replayed %d jobs" % n in s.stderr_text()
    s.proc.send_signal(signal.SIGTERM)
    messages_until(sock, "STOPPING=1")
    assert s.proc.wait(timeout=30) == 0


def test_watchdog_pings_at_half_the_interval_systemd_sets(server_factory, notify_socket):
    sock, path = notify_socket
    s = server_factory(env=env_with(NOTIFY_SOCKET=path, WATCHDOG_USEC="200000"))
    messages_until(sock, "READY=1")
    for _ in range(3):
        messages_until(sock, "WATCHDOG=1")
    assert s.proc.poll() is None


def test_no_watchdog_pings_for_another_process(server_factory, notify_socket):
    """$WATCHDOG_PID names the process the watchdog is for; spurd started by a wrapper must not
    ping for it."""
    sock, path = notify_socket
    server_factory(env=env_with(NOTIFY_SOCKET=path, WATCHDOG_USEC="200000", WATCHDOG_PID="1"))
    messages_until(sock, "READY=1")
    sock.settimeout(1.0)
    with pytest.raises(socket.timeout):
        messages_until(sock, "WATCHDOG=1")
