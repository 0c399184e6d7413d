# SPDX-License-Identifier: BSD-3-Clause
"""spurd as packagers run it: -d for real, pid files, start-up errors, unix sockets, shutdown."""
import os
import socket
import subprocess

import pytest

from conftest import EXTERNAL

pytestmark = pytest.mark.spur_only


@pytest.fixture
def spurd():
    binary = os.environ.get("SPURD")
    if not binary or EXTERNAL:
        pytest.skip("needs the spurd binary")
    return binary


# ------------------------------------------------------------ --unix never deletes others' files

def unix_version(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(path)
    s.sendall(b"version\n")
    data = s.recv(100)
    s.close()
    return data


def spurd_once(binary, *args):
    return subprocess.run([binary, "--listen=127.0.0.1"] + list(args), capture_output=True,
                          timeout=30)


def test_failed_start_on_a_busy_port_leaves_the_running_servers_socket(spurd, server_factory,
                                                                      tmp_path):
    path = str(tmp_path / "s.sock")
    first = server_factory("--unix=" + path)
    r = spurd_once(spurd, "--port=%d" % first.addr[1], "--unix=" + path)
    assert r.returncode == 1 and b"Address already in use" in r.stderr
    assert unix_version(path).startswith(b"OK ")


def test_live_unix_socket_is_not_taken_over(spurd, server_factory, tmp_path):
    path = str(tmp_path / "s.sock")
    server_factory("--unix=" + path)
    r = spurd_once(spurd, "--port=0", "--unix=" + path)
    assert r.returncode == 1
    assert b"in use by another server" in r.stderr
    assert unix_version(path).startswith(b"OK ")


def test_unix_path_that_is_not_a_socket_is_never_deleted(spurd, tmp_path):
    path = tmp_path / "queue.db"
    path.write_bytes(b"important data")
    r = spurd_once(spurd, "--port=0", "--unix=" + str(path))
    assert r.returncode == 1
    assert b"not a socket" in r.stderr
    assert path.read_bytes() == b"important data"


def test_stale_unix_socket_is_replaced(server_factory, tmp_path):
    path = str(tmp_path / "s.sock")
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(path)
    stale.close()  # the file stays, nobody listens: connecting is refused
    server_factory("--unix=" + path)
    assert unix_version(path).startswith(b"OK ")


def test_socket_replaced_while_running_is_left_alone_at_exit(server_factory, tmp_path):
    path = str(tmp_path / "s.sock")
    s = server_factory("--unix=" + path)
    os.unlink(path)
    other = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    other.bind(path)
    other.listen(1)
    try:
        assert s.stop() == 0
        assert os.path.exists(path), "another process's socket was removed"
    finally:
        other.close()
