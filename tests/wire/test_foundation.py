# SPDX-License-Identifier: BSD-3-Clause
"""Framing, sniffing, echo and the first admin commands."""
import os
import socket
import struct
import subprocess
import time

import pytest

from conftest import EXTERNAL, start_spurd
from gearman_wire import (ECHO_REQ, ECHO_RES, ERROR, REQ, RES, Conn, packet)


def test_echo_returns_same_bytes(conn):
    conn.send_packet(ECHO_REQ, b"hello\0world")
    assert conn.expect(ECHO_RES) == b"hello\0world"


def test_echo_empty_payload(conn):
    conn.send_packet(ECHO_REQ, b"")
    assert conn.expect(ECHO_RES) == b""


def test_echo_16_mib(conn):
    payload = os.urandom(1 << 16) * 256
    conn.send_packet(ECHO_REQ, payload)
    assert conn.expect(ECHO_RES, timeout=30) == payload


def test_many_packets_in_one_write_all_answered(conn):
    conn.send(b"".join(packet(ECHO_REQ, b"%d" % i) for i in range(10000)))
    for i in range(10000):
        assert conn.expect(ECHO_RES) == b"%d" % i


def test_header_split_across_many_writes(conn):
    data = packet(ECHO_REQ, b"split")
    for b in data:
        conn.send(bytes([b]))
        time.sleep(0.001)
    assert conn.expect(ECHO_RES) == b"split"


def test_version_line(conn):
    line = conn.admin("version\n")
    assert line.startswith(b"OK ") and line.endswith(b"\n") and not line.endswith(b"\r\n")


def test_version_crlf_and_case_insensitive(conn):
    assert conn.admin("VeRsIoN\r\n").startswith(b"OK ")


def test_getpid(server, conn):
    line = conn.admin("getpid\n")
    assert line.startswith(b"OK ") and line.endswith(b"\n")
    if server.proc is not None:
        assert line == b"OK %d\n" % server.proc.pid


def test_unknown_command_exact_reply(conn):
    assert conn.admin("blah x y\n") == b"ERR UNKNOWN_COMMAND Unknown+server+commandblah\r\n"


def test_empty_line_unknown_command(conn):
    assert conn.admin("\r\n") == b"ERR UNKNOWN_COMMAND Unknown+server+command\r\n"


def test_text_and_binary_alternate_on_one_connection(conn):
    conn.send(b"version\n" + packet(ECHO_REQ, b"x") + b"getpid\n")
    assert conn.read_line().startswith(b"OK ")
    assert conn.expect(ECHO_RES) == b"x"
    assert conn.read_line().startswith(b"OK ")


def test_response_magic_gets_invalid_magic_error(conn):
    conn.send(packet(ECHO_REQ, b"x", magic=RES))
    assert conn.expect(ERROR) == b"INVALID_MAGIC\0Request magic expected"
    conn.echo_roundtrip()


def test_bad_magic_closes_only_that_connection(server):
    bad = server.connect()
    good = server.connect()
    bad.send(b"\0XYZ" + struct.pack(">II", 16, 0))
    bad.expect_closed()
    good.echo_roundtrip()


@pytest.mark.spur_only
def test_half_close_still_gets_reply(server):
    s = socket.create_connection(server.addr, timeout=5)
    s.sendall(b"version\n")
    s.shutdown(socket.SHUT_WR)
    data = b""
    while True:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    s.close()
    assert data.startswith(b"OK ") and data.endswith(b"\n")


@pytest.mark.spur_only
def test_half_close_binary_reply_written(server):
    s = socket.create_connection(server.addr, timeout=5)
    s.sendall(packet(ECHO_REQ, b"bye" * 100000))
    s.shutdown(socket.SHUT_WR)
    data = b""
    while True:
        chunk = s.recv(1 << 20)
        if not chunk:
            break
        data += chunk
    s.close()
    assert data == RES + struct.pack(">II", ECHO_RES, 300000) + b"bye" * 100000


@pytest.mark.spur_only
def test_unix_socket_listener(server_factory, tmp_path):
    path = str(tmp_path / "spurd.sock")
    server_factory("--unix=" + path)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(path)
    s.sendall(b"version\n")
    assert s.recv(100).startswith(b"OK ")
    s.close()


def _spurd_binary():
    binary = os.environ.get("SPURD")
    if not binary or EXTERNAL:
        pytest.skip("needs the spurd binary")
    return binary


@pytest.mark.spur_only
def test_unknown_option_exits_1():
    r = subprocess.run([_spurd_binary(), "--no-such-option"], capture_output=True, timeout=10)
    assert r.returncode == 1
    assert b"unknown option" in r.stderr


@pytest.mark.spur_only
def test_positional_argument_exits_1():
    r = subprocess.run([_spurd_binary(), "stray"], capture_output=True, timeout=10)
    assert r.returncode == 1
    assert b"unexpected argument" in r.stderr


@pytest.mark.spur_only
def test_help_lists_gearmand_options():
    r = subprocess.run([_spurd_binary(), "--help"], capture_output=True, timeout=10)
    assert r.returncode == 0
    for opt in (b"--backlog", b"--daemon", b"--pid-file", b"--log-file", b"--listen", b"--port",
                b"--verbose", b"--user", b"--threads", b"--config-file", b"--unix",
                b"--port-file", b"--job-retries", b"--worker-wakeup"):
        assert opt in r.stdout


@pytest.mark.spur_only
def test_check_args_exits_0():
    r = subprocess.run([_spurd_binary(), "--check-args", "--port=5000", "-t", "4"],
                       capture_output=True, timeout=10)
    assert r.returncode == 0


@pytest.mark.spur_only
def test_config_file_options_apply(tmp_path):
    binary = _spurd_binary()
    cfg = tmp_path / "spurd.conf"
    port_file = tmp_path / "port"
    cfg.write_text(f"--port=0\n--listen=127.0.0.1 --port-file={port_file}\n")
    proc = subprocess.Popen([binary, "--config-file=" + str(cfg)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while not port_file.exists():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.01)
        c = Conn(("127.0.0.1", int(port_file.read_text())))
        c.echo_roundtrip()
        c.close()
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0


@pytest.mark.spur_only
def test_sigterm_exits_cleanly_with_clients_connected(server_factory):
    s = server_factory()
    c = s.connect()
    c.echo_roundtrip()
    assert s.stop() == 0


@pytest.mark.spur_only
def test_pid_file_written_and_removed(server_factory, tmp_path):
    pid_file = tmp_path / "spurd.pid"
    s = server_factory("--pid-file=" + str(pid_file))
    assert int(pid_file.read_text()) == s.proc.pid
    assert s.stop() == 0
    assert not pid_file.exists()


@pytest.mark.spur_only
def test_port_file_written_after_pid_file(tmp_path):
    spurd = os.environ.get("SPURD")
    if not spurd or EXTERNAL:
        pytest.skip("needs the spurd binary")
    # the port file is the sign that spurd is up, so whoever waits for it may read the pid file:
    # spurd writes it last, and a start that fails on the pid file leaves no port file behind
    port_file = tmp_path / "spurd.port"
    r = subprocess.run([spurd, "--port=0", "--listen=127.0.0.1", "--port-file=" + str(port_file),
                        "--pid-file=" + str(tmp_path / "missing" / "spurd.pid")],
                       capture_output=True, timeout=30)
    assert r.returncode == 1, r.stderr
    assert b"cannot write pid file" in r.stderr
    assert not port_file.exists()


@pytest.mark.spur_only
def test_sighup_reopens_log_file(server_factory, tmp_path):
    import signal
    log = tmp_path / "spurd.log"
    s = server_factory("--log-file=" + str(log))
    c = s.connect()
    c.echo_roundtrip()
    os.rename(log, tmp_path / "old.log")
    s.proc.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + 10
    while not log.exists():
        assert time.monotonic() < deadline, "log file was not reopened"
        time.sleep(0.01)
    c.echo_roundtrip()


@pytest.mark.spur_only
def test_sigusr1_graceful_shutdown_waits_for_running_job(server_factory):
    import signal
    from gearman_wire import CAN_DO, GRAB_JOB, JOB_ASSIGN, JOB_CREATED, SUBMIT_JOB, WORK_COMPLETE
    s = server_factory()
    c = s.connect()
    w = s.connect()
    w.send_packet(CAN_DO, b"f")
    c.send_packet(SUBMIT_JOB, b"f", b"", b"x")
    h = c.expect(JOB_CREATED)
    w.send_packet(GRAB_JOB)
    w.expect(JOB_ASSIGN)
    s.proc.send_signal(signal.SIGUSR1)
    c.echo_roundtrip()  # still serving existing connections
    assert s.proc.poll() is None
    w.send_packet(WORK_COMPLETE, h, b"done")
    assert c.expect(WORK_COMPLETE) == h + b"\0done"
    assert s.proc.wait(timeout=10) == 0
