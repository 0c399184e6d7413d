# SPDX-License-Identifier: BSD-3-Clause
"""`spuradmin top`, the live view, driven in a real terminal: tmux runs it in a pane against a
spurd with known traffic, the test types keys (send-keys) and reads the screen (capture-pane),
polling with a deadline until the screen shows what the traffic made. Checks the table, the sort
key, the redraw on a resize (SIGWINCH), q, the terminal being restored after every way out (q,
SIGINT, SIGTERM, a lost connection: `stty -a` in the same pane), and the refusal of a server
that is not Spur.
"""
import os
import re
import shutil
import socket
import subprocess
import threading
import time

import pytest

from gearman_wire import CAN_DO, GRAB_JOB, JOB_ASSIGN, JOB_CREATED, SUBMIT_JOB_BG

pytestmark = pytest.mark.skipif(bool(os.environ.get("SPUR_TEST_SERVER")),
                                reason="spuradmin top needs Spur's stats json")

DEADLINE = 30.0  # seconds any screen may take to appear (generous: the suite runs under load)


def spuradmin():
    tool = os.environ.get("SPURADMIN")
    if not tool:
        pytest.skip("SPURADMIN is not set (run through `make check`)")
    return tool


class Pane:
    """A tmux server of our own (its own socket), one session, one pane running sh."""

    def __init__(self, cols=120, rows=40):
        if shutil.which("tmux") is None:
            pytest.fail("tmux is not installed (scripts/deps.sh test)")
        self.sock = f"spurtop-{os.getpid()}-{time.monotonic_ns()}"
        env = dict(os.environ, PS1="$ ", ENV="")
        # tmux runs the command with $SHELL -c: with SHELL=/bin/sh, dash forks for "sh", and
        # child_pid found that sh instead of top. exec: the pane's process is sh whatever $SHELL
        self.tmux("new-session", "-d", "-s", "top", "-x", str(cols), "-y", str(rows), "exec sh",
                  env=env)
        # type nothing before the shell shows its prompt: on a loaded machine, keys sent
        # earlier are echoed first and the prompt lands on the command's first output line
        self.wait("the shell's prompt", lambda s: s.strip() != "")

    def tmux(self, *args, env=None):
        return subprocess.run(["tmux", "-L", self.sock, "-f", "/dev/null"] + list(args),
                              capture_output=True, text=True, timeout=20, env=env, check=True)

    def keys(self, *keys):
        self.tmux("send-keys", "-t", "top", *keys)

    def run(self, command):
        self.keys("-l", command)
        self.keys("Enter")

    def screen(self):
        return self.tmux("capture-pane", "-p", "-t", "top").stdout

    def wait(self, what, pred):
        """Polls the screen until pred(screen) is true; fails with the last screen after
        DEADLINE seconds."""
        end = time.monotonic() + DEADLINE
        while True:
            s = self.screen()
            if pred(s):
                return s
            if time.monotonic() > end:
                pytest.fail(f"the screen never showed {what}:\n{s}")
            time.sleep(0.05)

    def wait_text(self, pattern):
        return self.wait(repr(pattern), lambda s: re.search(pattern, s, re.M) is not None)

    def child_pid(self):
        """The pid of the command the pane's shell runs."""
        shell = int(self.tmux("display-message", "-p", "-t", "top", "#{pane_pid}").stdout)
        end = time.monotonic() + DEADLINE
        while time.monotonic() < end:
            with open(f"/proc/{shell}/task/{shell}/children") as f:
                kids = f.read().split()
            if kids:
                return int(kids[0])
            time.sleep(0.05)
        pytest.fail("the pane runs no command")

    def assert_terminal_restored(self):
        """`stty -a` in the pane shows line editing and echo back on; the alternate screen is
        gone (the table is not on the screen any more)."""
        self.run("clear; stty -a; echo STTY-DONE")
        s = self.wait_text(r"^STTY-DONE$")
        assert re.search(r"(?<![-\w])icanon\b", s), s
        assert re.search(r"(?<![-\w])echo\b", s), s
        assert "FUNCTION" not in s, s

    def close(self):
        subprocess.run(["tmux", "-L", self.sock, "kill-server"], capture_output=True, timeout=20)


@pytest.fixture
def pane():
    p = Pane()
    yield p
    p.close()


def top_cmd(server, *extra):
    return " ".join([spuradmin(), "-h", server.addr[0], "-p", str(server.addr[1])] +
                    list(extra))


def traffic(server):
    """alpha: 5 queued, no worker; beta: one worker running one job, 2 queued; f00..f14: one
    queued job each. Returns the connections to keep them open."""
    c = server.connect()
    for i in range(5):
        c.send_packet(SUBMIT_JOB_BG, b"alpha", b"a%d" % i, b"x")
        c.expect(JOB_CREATED)
    for i in range(3):
        c.send_packet(SUBMIT_JOB_BG, b"beta", b"b%d" % i, b"x")
        c.expect(JOB_CREATED)
    for i in range(15):
        c.send_packet(SUBMIT_JOB_BG, b"f%02d" % i, b"", b"x")
        c.expect(JOB_CREATED)
    w = server.connect()
    w.send_packet(CAN_DO, b"beta")
    w.send_packet(GRAB_JOB)
    w.expect(JOB_ASSIGN)
    return c, w


def table(screen):
    """The rows of the function table: the lines after the FUNCTION header."""
    lines = screen.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("FUNCTION"))
    return [line for line in lines[head + 1:] if line.strip()]


def test_top_shows_the_traffic_sorts_resizes_and_quits(server, pane):
    conns = traffic(server)
    # a refresh an hour away: every change of the screen below is a redraw on a key or SIGWINCH
    pane.run(top_cmd(server, "top", "--interval=3600") + "; echo EXIT=$?")
    s = pane.wait_text(r"^f14\s")
    rows = table(s)
    assert re.match(r"alpha\s+5\s+0\s+0\s+-\s+-\s+-\s+-\s+-$", rows[0]), s
    # beta: 2 queued, 1 running, 1 worker; one job waited, so p50 and p99 have a value
    assert re.match(r"beta\s+2\s+1\s+1\s+-\s+-\s+-\s+\d\S*s\s+\d\S*s$", rows[1]), s
    assert [r.split()[0] for r in rows[2:]] == ["f%02d" % i for i in range(15)], s
    assert re.search(r"connections 3: 1 client, 1 worker, 1 admin", s), s
    assert re.search(r"jobs 23: 22 queued, 1 running", s), s
    assert "sort: queued" in s and "store: off" in s, s
    # s: sort by running, beta first
    pane.keys("s")
    # the frame is drawn top to bottom: wait for its table, not just for the sort line
    s = pane.wait("the table sorted by running",
                  lambda s: re.search(r"^sort: running", s, re.M) and re.search(r"^f14\s", s, re.M)
                  and table(s)[0].startswith("beta"))
    # a smaller window: SIGWINCH redraws at once, the table is cut and says what is left out
    pane.tmux("resize-window", "-t", "top", "-x", "70", "-y", "15")
    s = pane.wait_text(r"^\.\.\. \d+ more functions")
    lines = s.rstrip("\n").split("\n")
    assert len(lines) <= 15 and max(len(x.rstrip()) for x in lines) <= 70, s
    assert len(table(s)) == 15 - 7 and "... 10 more functions" in s, s
    pane.keys("q")
    pane.wait_text(r"EXIT=0$")  # after the resize, the shell's screen may have reflowed
    pane.assert_terminal_restored()
    for c in conns:
        c.close()


def test_top_rates_after_the_second_refresh(server, pane):
    c = server.connect()
    c.send_packet(SUBMIT_JOB_BG, b"gamma", b"", b"x")
    c.expect(JOB_CREATED)
    pane.run(top_cmd(server, "--top", "--interval=0.2") + "; echo EXIT=$?")
    # rates need two snapshots: "-" on the first frame, numbers after
    s = pane.wait_text(r"^gamma\s+1\s+0\s+0\s+\d+\.\d\s+\d+\.\d\s+\d+\.\d\s")
    assert re.search(r"^jobs/s: \d+\.\d submitted, \d+\.\d completed, \d+\.\d failed", s, re.M), s
    pane.keys("q")
    pane.wait_text(r"^EXIT=0$")
    pane.assert_terminal_restored()


def test_top_lost_connection_shows_error_and_restores_terminal(server_factory, pane):
    s = server_factory()
    pane.run(top_cmd(s, "top") + "; echo EXIT=$?")
    pane.wait_text(r"^FUNCTION")
    assert s.stop() == 0
    screen = pane.wait_text(r"^EXIT=1$")
    assert re.search(r"^Error: lost the connection to 127\.0\.0\.1:\d+: the server closed it",
                     screen, re.M), screen
    pane.assert_terminal_restored()


class SilentAfterFirst:
    """A fake Spur admin port: answers the first `stats json` and `status json`, then reads and
    never answers again."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.addr = self.sock.getsockname()
        self.conns = []
        self.unanswered = threading.Event()  # a request came after the first two
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        c, _ = self.sock.accept()
        self.conns.append(c)
        replies = [b'{"uptime_seconds": 1, "functions_by_name": {}}\n',
                   b'{"functions": [{"function": "silent", "queued": {"total": 4}}]}\n']
        buf = b""
        while True:
            data = c.recv(4096)
            if not data:
                return
            buf += data
            while b"\n" in buf:
                _, buf = buf.split(b"\n", 1)
                if replies:
                    c.sendall(replies.pop(0))
                else:
                    self.unanswered.set()

    def close(self):
        for c in self.conns:
            c.close()
        self.sock.close()


def test_top_reply_timeout_shows_error_and_restores_terminal(pane):
    fake = SilentAfterFirst()
    try:
        pane.run(top_cmd(fake, "top", "--interval=0.1", "--timeout=5") + "; echo EXIT=$?")
        s = pane.wait_text(r"EXIT=1$")
        assert re.search(r"^Error: no reply from 127\.0\.0\.1:\d+ within 5 seconds", s, re.M), s
        # the view was running: only its refreshes (after the first) go unanswered
        assert fake.unanswered.is_set()
        pane.assert_terminal_restored()
    finally:
        fake.close()


@pytest.mark.parametrize("how,status", [("C-c", 130), ("SIGTERM", 143)])
def test_top_signal_restores_terminal(server, pane, how, status):
    # no "; echo" after the command: the shell drops the rest of a line interrupted by ^C
    pane.run(top_cmd(server, "top"))
    pane.wait_text(r"^FUNCTION")
    if how == "C-c":
        pane.keys("C-c")
    else:
        os.kill(pane.child_pid(), 15)
    pane.wait("the view to end", lambda s: "FUNCTION" not in s)
    pane.run("echo EXIT=$?")
    # not anchored at the line's start: the view can clear the screen before spuradmin has
    # exited, so the echo may be typed ahead and its output follow the next prompt ("# EXIT=143")
    pane.wait_text(rf"EXIT={status}$")
    pane.assert_terminal_restored()


def test_top_exits_at_end_of_input(server):
    p = subprocess.run([spuradmin(), "-h", server.addr[0], "-p", str(server.addr[1]), "top"],
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr
    # one frame on the alternate screen, left again
    assert p.stdout.startswith(b"\033[?1049h") and p.stdout.endswith(b"\033[?25h\033[?1049l")
    assert b"FUNCTION" in p.stdout and p.stderr == b""


def test_top_refuses_gearmand(gearmand):
    p = subprocess.run([spuradmin(), "-h", gearmand.addr[0], "-p", str(gearmand.addr[1]),
                        "top"], stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    assert p.returncode == 1
    assert p.stdout == b""  # the terminal was never touched
    assert b"is not a Spur server" in p.stderr and b"ERR UNKNOWN_COMMAND" in p.stderr, p.stderr


@pytest.mark.parametrize("args,msg", [
    (["--interval=2"], b"option '--interval' needs '--top'"),
    (["--top", "--status"], b"option '--top' cannot be used with other commands"),
    (["--top", "--json"], b"option '--top' cannot be used with other commands"),
    (["--top", "--interval=0"], b"the argument ('0') for option '--interval' is invalid"),
    (["--top", "--interval=x"], b"the argument ('x') for option '--interval' is invalid"),
])
def test_top_usage_errors(args, msg):
    p = subprocess.run([spuradmin()] + args, stdin=subprocess.DEVNULL, capture_output=True,
                       timeout=60)
    assert p.returncode == 1 and msg in p.stdout, p.stdout


def test_top_options_match_exact_names_only(server):
    # Spur's own options match only their exact names, as --stats and --json do
    for word in ["--to", "--inter=2"]:
        p = subprocess.run([spuradmin(), word, "--top"], stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=60)
        assert p.returncode == 1 and f"unrecognised option '{word}'".encode() in p.stdout, p
    # the word "top" is --top wherever it stands (other words are still ignored)
    p = subprocess.run([spuradmin(), "-h", server.addr[0], "-p", str(server.addr[1]), "--status",
                        "top"], stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    assert p.returncode == 1 and b"'--top' cannot be used with other commands" in p.stdout, p
    p = subprocess.run([spuradmin(), "-h", server.addr[0], "-p", str(server.addr[1]), "--status",
                        "toppings"], stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    assert p.returncode == 0 and p.stdout == b".\n", p
