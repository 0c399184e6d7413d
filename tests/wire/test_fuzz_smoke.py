# SPDX-License-Identifier: BSD-3-Clause
"""Runs fuzz/run.sh: builds the libFuzzer targets from src/ with clang and runs each for a
short time (FUZZ_SECONDS=15) on its seed corpus. A crash, leak, hang or broken engine invariant
fails the test; the fuzzer's log is printed.

Runs only when SPUR_FUZZ=1 (once per CI run, in the normal build: the ASan build would only repeat
it), and skips when clang or its libFuzzer runtime (libclang-rt-14-dev) is missing.
"""
import glob
import os
import shutil
import subprocess
import tempfile

import pytest

pytestmark = pytest.mark.slow

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
RUN = os.path.join(TOP, "fuzz", "run.sh")


def fuzzer_runtime_present(cc):
    """True if cc can link -fsanitize=fuzzer (the libFuzzer runtime library is installed)."""
    d = tempfile.mkdtemp(prefix="spur-fuzz-probe-")
    try:
        src = os.path.join(d, "t.c")
        with open(src, "w") as f:
            f.write("#include <stddef.h>\n#include <stdint.h>\n"
                    "int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)"
                    "{ (void)d; (void)n; return 0; }\n")
        r = subprocess.run([cc, "-fsanitize=fuzzer", src, "-o", os.path.join(d, "t")],
                           capture_output=True, timeout=120)
        return r.returncode == 0
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_fuzz_targets_run_clean():
    if os.environ.get("SPUR_FUZZ") != "1":
        pytest.skip("set SPUR_FUZZ=1 to build and run the fuzz targets")
    if not os.path.exists(RUN):
        pytest.skip("fuzz/ is not in this tree (a dist tarball without it)")
    cc = os.environ.get("CC_FUZZ", "clang")
    if shutil.which(cc) is None:
        pytest.skip(f"{cc} is not installed")
    if not fuzzer_runtime_present(cc):
        pytest.skip("the libFuzzer runtime is missing (apt-get install libclang-rt-14-dev)")
    build = tempfile.mkdtemp(prefix="spur-fuzz-")
    env = dict(os.environ, FUZZ_SECONDS=os.environ.get("FUZZ_SECONDS", "15"), CC=cc)
    try:
        r = subprocess.run(["sh", RUN, build], env=env, capture_output=True, text=True,
                           timeout=900)
        print(r.stdout)
        print(r.stderr[-5000:])
        for art in glob.glob(os.path.join(build, "artifacts", "*")):
            print("artifact kept:", art)
        assert r.returncode == 0, "a fuzz target failed:\n" + r.stdout[-8000:]
        for target in ("fuzz_proto_bin", "fuzz_proto_admin", "fuzz_connection", "fuzz_store_row",
                       "fuzz_store", "fuzz_http", "fuzz_tls",
                       "fuzz_policy", "fuzz_dump_line"):
            assert f"{target}: " in r.stdout and "executions" in r.stdout
    finally:
        if no_artifacts(build):
            shutil.rmtree(build, ignore_errors=True)


def no_artifacts(build):
    """Keep the build directory (and its crash artifacts) when a target failed."""
    return not glob.glob(os.path.join(build, "artifacts", "*"))
