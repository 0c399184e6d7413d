#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Fails when a function of src/ is longer than the limit (150 lines, signature to closing brace).

The project's style puts a function's opening and closing braces alone at column 0, so a body is
the lines from a "{" line to the next "}" line, and the signature is the run of non-blank lines
just above it (comments excluded).

usage: func_length.py [--max N] DIR...
"""
import os
import sys

def functions(path):
    """(name, first line, length) of every function definition in the C file at path."""
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    out = []
    i = 0
    while i < len(lines):
        if lines[i] == "{" and i > 0:
            start = i
            while start > 0:
                prev = lines[start - 1]
                if (not prev.strip() or prev.startswith(("}", "#", "/*", " *", "//"))
                        or prev.rstrip().endswith((";", "*/"))):
                    break
                start -= 1
            end = i
            while end < len(lines) and lines[end] != "}":
                end += 1
            sig = " ".join(lines[start:i])
            name = sig.split("(", 1)[0].split()[-1].lstrip("*") if "(" in sig else "?"
            out.append((name, start + 1, end - start + 1))
            i = end
        i += 1
    return out


def main():
    args = sys.argv[1:]
    limit = 150
    if len(args) >= 2 and args[0] == "--max":
        limit, args = int(args[1]), args[2:]
    if not args:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    bad, count = 0, 0
    for top in args:
        for root, _dirs, files in os.walk(top):
            for f in sorted(files):
                if not f.endswith(".c"):
                    continue
                for name, line, n in functions(os.path.join(root, f)):
                    count += 1
                    if n <= limit:
                        continue
                    bad += 1
                    print(f"{os.path.join(root, f)}:{line}: {name} is {n} lines (limit {limit})")
    if bad:
        print(f"FAIL: {bad} function(s) over {limit} lines")
        return 1
    print(f"ok: {count} functions, none over {limit} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
