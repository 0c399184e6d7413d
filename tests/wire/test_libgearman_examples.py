# SPDX-License-Identifier: BSD-3-Clause
"""libgearman's own example programs (Debian's libgearman-doc), built twice and compared.

Every example in /usr/share/doc/libgearman-doc/examples is built in a temporary directory against
the real libgearman (libgearman-dev) and against libgearman-compat, then each scenario below runs
both builds against gearmand and against spurd with the same inputs. The four transcripts (exit
status, stdout, stderr of every program in the scenario) must be the same once run-specific
values (job handles, pids) are normalised: real libgearman on gearmand is the reference.

The examples come from gearmand's source tree and include three of its internal headers; the
stand-ins are in tests/wire/libgearman_doc/. The C examples connect to "localhost" on the default
port: libgearman_doc/example_port.h (forced in with -include) points them at the test's server,
its address as well as its port (where localhost is also ::1, as on a stock Debian, libgearman
would try ::1 first and hang after falling back to the server's 127.0.0.1).

Needs libgearman-doc, libgearman-dev, libboost-program-options-dev and a C++ compiler
(scripts/deps.sh test); skipped otherwise. SPUR_LIBGEARMAN_EXAMPLES overrides the examples' place.
"""
import concurrent.futures
import gzip
import os
import re
import shlex
import shutil
import socket
import subprocess
import tempfile
import threading

import pytest

from gearman_wire import (CAN_DO, GRAB_JOB, JOB_ASSIGN, JOB_CREATED, NO_JOB, NOOP, PRE_SLEEP,
                          SUBMIT_JOB, WORK_COMPLETE)

EXAMPLES_DIR = os.environ.get("SPUR_LIBGEARMAN_EXAMPLES", "/usr/share/doc/libgearman-doc/examples")
HERE = os.path.dirname(os.path.abspath(__file__))
SHIMS = os.path.join(HERE, "libgearman_doc")
BUILDDIR = os.environ.get("SPUR_BUILDDIR")
SRCDIR = os.environ.get("SPUR_SRCDIR", os.path.dirname(os.path.dirname(HERE)))
LIBS = ("libgearman", "compat")
DEADLINE = 30  # seconds any one program may run

# Every example the package ships; the test fails if one is missing or does not build.
EXAMPLES = [
    "echo_client", "echo_worker", "reverse_client", "reverse_client_bg", "reverse_client_cb",
    "reverse_client_epoch", "reverse_worker", "wc_worker",
    "gearman_client_do_example", "gearman_client_do_background_example",
    "gearman_execute_example", "gearman_execute_partition",
]


def _sources(dest):
    """Copy (and gunzip) the examples into dest; returns {name: path}."""
    if not os.path.isdir(EXAMPLES_DIR):
        pytest.skip(f"{EXAMPLES_DIR} is missing (apt-get install libgearman-doc)")
    out = {}
    for entry in sorted(os.listdir(EXAMPLES_DIR)):
        src = os.path.join(EXAMPLES_DIR, entry)
        name = entry[:-3] if entry.endswith(".gz") else entry
        base, ext = os.path.splitext(name)
        if ext not in (".c", ".cc"):
            continue
        path = os.path.join(dest, name)
        opener = gzip.open if entry.endswith(".gz") else open
        with opener(src, "rb") as f, open(path, "wb") as g:
            g.write(f.read())
        out[base] = path
    return out


def _makefile_var(name):
    """A variable's value in the build directory's Makefile, or ""."""
    try:
        with open(os.path.join(BUILDDIR, "Makefile")) as f:
            return next((line.split("=", 1)[1] for line in f
                         if line.startswith(name + " =")), "")
    except OSError:
        return ""


def _build_ldflags():
    """What the static libgearman-compat.a needs at link time: its libraries (OpenSSL, for TLS;
    $OPENSSL_LIBS from the build's Makefile) and the build's sanitizer flags (an ASan build's
    archive needs them): $SPUR_LDFLAGS if set, else SPUR_LDFLAGS from the Makefile."""
    flags = os.environ.get("SPUR_LDFLAGS")
    if flags is None:
        flags = _makefile_var("SPUR_LDFLAGS")
    return shlex.split(_makefile_var("OPENSSL_LIBS") or "-lssl -lcrypto") + shlex.split(flags)


def _real_flags():
    p = subprocess.run(["pkg-config", "--cflags", "--libs", "gearmand"], capture_output=True)
    return p.stdout.decode().split() if p.returncode == 0 else ["-lgearman"]


@pytest.fixture(scope="module")
def examples():
    """{lib: {example: path}}: every example built against both libraries, in parallel."""
    cc, cxx = shutil.which("cc"), shutil.which("g++") or shutil.which("c++")
    if cc is None or cxx is None:
        pytest.skip("no C and C++ compiler")
    if not os.path.exists("/usr/include/libgearman/gearman.h"):
        pytest.skip("libgearman-dev is not installed")
    if not os.path.exists("/usr/include/boost/program_options.hpp"):
        pytest.skip("libboost-program-options-dev is not installed")
    if not BUILDDIR:
        pytest.skip("SPUR_BUILDDIR is not set (run through `make check`)")
    # libtool keeps the static archive in .libs/; a build of the library is part of `make`, so a
    # missing one is an error, never a reason to skip
    candidates = [os.path.join(BUILDDIR, "libgearman-compat", d, "libgearman-compat.a")
                  for d in (".libs", "")]
    compat_lib = next((c for c in candidates if os.path.exists(c)), None)
    assert compat_lib is not None, f"libgearman-compat's static archive is not built: {candidates}"
    tmp = tempfile.mkdtemp(prefix="lgc-doc-examples-")
    srcs = _sources(tmp)
    assert sorted(srcs) == sorted(EXAMPLES), sorted(srcs)
    link = {"libgearman": (["-I", SHIMS], _real_flags()),
            "compat": (["-I", os.path.join(SRCDIR, "libgearman-compat"), "-I", SHIMS],
                       [compat_lib] + _build_ldflags())}
    # Boost.Program_options dominates the C++ compile time: precompile it once for all of them.
    pch = os.path.join(tmp, "pch", "program_options.hpp")
    os.mkdir(os.path.dirname(pch))
    with open(pch, "w") as f:
        f.write("#include <boost/program_options.hpp>\n#include <iostream>\n#include <string>\n")
    subprocess.run([cxx, "-std=gnu++17", "-x", "c++-header", pch, "-o", pch + ".gch"],
                   capture_output=True, timeout=300)  # without the .gch, -include reads the text
    jobs = {}
    for lib in LIBS:
        os.mkdir(os.path.join(tmp, lib))
        for name, src in srcs.items():
            pre, post = link[lib]
            exe = os.path.join(tmp, lib, name)
            if src.endswith(".cc"):
                cmd = ([cxx, "-std=gnu++17", "-include", pch, "-o", exe, src] + pre + post +
                       ["-lboost_program_options"])
            else:
                cmd = [cc, "-std=gnu11", "-include", os.path.join(SHIMS, "example_port.h"),
                       "-o", exe, src] + pre + post
            jobs[(lib, name)] = (exe, cmd)
    built = {lib: {} for lib in LIBS}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        futures = {key: pool.submit(subprocess.run, cmd, capture_output=True, timeout=300)
                   for key, (exe, cmd) in jobs.items()}
        for (lib, name), fut in futures.items():
            p = fut.result()
            assert p.returncode == 0, f"{name} does not build against {lib}:\n{p.stderr.decode()}"
            built[lib][name] = jobs[(lib, name)][0]
    yield built
    shutil.rmtree(tmp, ignore_errors=True)


# ---------------------------------------------------------------- running programs

HANDLE = re.compile(r"H:[^\s:]+:\d+")
PID = re.compile(r"pid\(\d+\)")


def normalise(text):
    return PID.sub("pid(N)", HANDLE.sub("H:<host>:<n>", text))


class Programs:
    """Runs one library's builds against one server; records a transcript."""

    def __init__(self, exes, server):
        self.exes = exes
        self.host, self.port = server.addr if server is not None else ("127.0.0.1", 0)
        self.env = dict(os.environ, SPUR_EXAMPLE_PORT=str(self.port), SPUR_EXAMPLE_HOST=self.host)
        self.transcript = []
        self.background = []

    def _args(self, name, args, hp):
        extra = ["-h", self.host, "-p", str(self.port)] if hp else []
        return [name] + extra + [str(a) for a in args]

    def run(self, name, *args, hp=True, stdin=None, leaks=False):
        """leaks=True: the program itself never frees what it allocated, so LeakSanitizer (an
        ASan build of libgearman-compat) must not count that as a failure."""
        env = self.env
        if leaks:
            env = dict(env, ASAN_OPTIONS=(env.get("ASAN_OPTIONS", "") + ":detect_leaks=0").lstrip(":"))
        p = subprocess.run(self._args(name, args, hp), executable=self.exes[name], env=env,
                           input=stdin, capture_output=True, timeout=DEADLINE)
        self.transcript.append((name, p.returncode, normalise(p.stdout.decode(errors="replace")),
                                normalise(p.stderr.decode(errors="replace"))))
        return p

    def start(self, name, *args):
        """A program that runs alongside (a worker); wait() records its transcript."""
        p = subprocess.Popen(self._args(name, args, True), executable=self.exes[name],
                             env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.background.append((name, p))
        return p

    def wait(self):
        for name, p in self.background:
            try:
                out, err = p.communicate(timeout=DEADLINE)
            except subprocess.TimeoutExpired:
                p.kill()
                out, err = p.communicate()
                raise AssertionError(f"{name} did not finish:\n{out!r}\n{err!r}")
            self.transcript.append((name, p.returncode, normalise(out.decode(errors="replace")),
                                    normalise(err.decode(errors="replace"))))
        self.background = []

    def kill(self):
        for _, p in self.background:
            p.kill()
            p.communicate()
        self.background = []


def raw_worker(server, reply, jobs, *funcs):
    """A worker in raw bytes (for the functions no example serves): answers `jobs` jobs with
    WORK_COMPLETE reply(function, data). Returns the thread; join it to collect failures."""
    errors = []

    def work():
        try:
            w = server.connect(timeout=DEADLINE)
            for f in funcs:
                w.send_packet(CAN_DO, f)
            done = 0
            while done < jobs:
                w.send_packet(GRAB_JOB)
                _, cmd, body = w.read_packet()
                if cmd == NO_JOB:
                    w.send_packet(PRE_SLEEP)
                    w.expect(NOOP)
                    continue
                assert cmd == JOB_ASSIGN, (cmd, body)
                handle, func, data = body.split(b"\0", 2)
                w.send_packet(WORK_COMPLETE, handle, reply(func, data))
                done += 1
            w.echo_roundtrip()
            w.close()
        except Exception as e:  # reported by join()
            errors.append(e)

    t = threading.Thread(target=work, daemon=True)
    t.start()
    t.errors = errors
    return t


def join(t):
    t.join(DEADLINE)
    assert not t.is_alive(), "raw worker did not finish"
    assert not t.errors, t.errors


def submit_and_wait(server, func, data):
    c = server.connect(timeout=DEADLINE)
    c.send_packet(SUBMIT_JOB, func, b"", data)
    h = c.expect(JOB_CREATED)
    body = c.expect(WORK_COMPLETE)
    c.close()
    assert body.startswith(h + b"\0")
    return body[len(h) + 1:]


# ---------------------------------------------------------------- scenarios

def sc_echo(p, server):
    p.run("echo_client", "hello from echo_client")
    p.run("echo_worker", "hello from echo_worker")


def sc_reverse(p, server):
    p.start("reverse_worker", "-c", 2)
    p.run("reverse_client", "--verbose", "Hello, world")
    p.run("reverse_client", "--verbose", "--count", 1, "again")
    p.wait()


def sc_reverse_chunked_with_status(p, server):
    p.start("reverse_worker", "-c", 1, "--chunk", "--status")
    p.run("reverse_client", "--verbose", "chunks")
    p.wait()


def sc_reverse_cb(p, server):
    """Callbacks set after the tasks were added do not fire for them (libgearman keeps those
    in force at add time): the client prints nothing, even with --verbose."""
    p.start("reverse_worker", "-c", 10)
    p.run("reverse_client_cb", "--verbose", "callbacks")
    p.wait()


def sc_reverse_bg(p, server):
    # Without --wait (which it cannot see: it checks for "wait_for_result"), reverse_client_bg
    # returns without gearman_client_free().
    p.run("reverse_client_bg", "--verbose", "background", leaks=True)
    p.start("reverse_worker", "-c", 1)
    p.wait()


def sc_reverse_epoch(p, server):
    """An epoch job due at once. The client polls GET_STATUS in a tight loop until the job is
    gone, so only its first and last lines are compared."""
    p.start("reverse_worker", "-c", 1)
    p.run("reverse_client_epoch", "--verbose", "--epoch", 0, "epoch")
    name, rc, out, err = p.transcript[-1]
    lines = out.splitlines()
    p.transcript[-1] = (name, rc, lines[:1] + lines[-1:], err)
    p.wait()


def sc_execute(p, server):
    p.start("reverse_worker", "-c", 1)
    p.run("gearman_execute_example", hp=False)
    p.wait()


def sc_execute_partition(p, server):
    """gearman_execute_by_partition: one SUBMIT_REDUCE_JOB to word_split, reducer count."""
    t = raw_worker(server, lambda f, d: b"%s:%d" % (f, len(d.split())), 1, b"word_split")
    p.run("gearman_execute_partition", hp=False)
    join(t)


def sc_client_do(p, server):
    t = raw_worker(server, lambda f, d: d[::-1], 1, b"reverse_function")
    p.run("gearman_client_do_example", hp=False)
    join(t)
    p.run("gearman_client_do_background_example", hp=False)
    t = raw_worker(server, lambda f, d: d[::-1], 1, b"reverse_function")
    join(t)


def sc_wc_worker(p, server):
    p.start("wc_worker", "-c", 1)
    result = submit_and_wait(server, b"wc", b"this dog does not hunt")
    p.wait()
    p.transcript.append(("wc result", result))


SCENARIOS = {
    "echo": sc_echo,
    "reverse": sc_reverse,
    "reverse_chunked_with_status": sc_reverse_chunked_with_status,
    "reverse_cb": sc_reverse_cb,
    "reverse_bg": sc_reverse_bg,
    "reverse_epoch": sc_reverse_epoch,
    "execute": sc_execute,
    "execute_partition": sc_execute_partition,
    "client_do": sc_client_do,
    "wc_worker": sc_wc_worker,
}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_example_programs_agree(examples, server_factory, gearmand_factory, scenario):
    """The same scenario with each library on each server gives the same transcript as the
    real libgearman on gearmand."""
    results = {}
    for kind, start in (("gearmand", gearmand_factory), ("spurd", server_factory)):
        for lib in LIBS:
            server = start()
            p = Programs(examples[lib], server)
            try:
                SCENARIOS[scenario](p, server)
            finally:
                p.kill()
            results[(kind, lib)] = p.transcript
    reference = results[("gearmand", "libgearman")]
    assert reference, "the scenario recorded nothing"
    for key, got in results.items():
        assert got == reference, f"{key} differs from libgearman on gearmand:\n{got}\n{reference}"


def test_timeout_message_matches_libgearman(examples):
    """A server that accepts and never answers: reverse_client -u 300 prints libgearman's own
    timeout text (gearman_wait(GEARMAN_TIMEOUT) timeout reached, ...) with either library."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)  # connections complete in the backlog; nothing is ever read or sent
    try:
        port = silent.getsockname()[1]
        got = {}
        for lib in LIBS:
            p = subprocess.run(["reverse_client", "-h", "127.0.0.1", "-p", str(port), "-u", "300",
                                "hello"], executable=examples[lib]["reverse_client"],
                               capture_output=True, timeout=DEADLINE)
            got[lib] = (p.returncode, normalise(p.stderr.decode(errors="replace")))
        assert got["libgearman"][0] == 1
        assert "gearman_wait(GEARMAN_TIMEOUT) timeout reached" in got["libgearman"][1]
        assert got["compat"] == got["libgearman"]
    finally:
        silent.close()
