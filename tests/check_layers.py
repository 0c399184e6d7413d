#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Fails when src/ modules depend on each other in a cycle, at link time or through includes.

A module is a file name without its extension (engine.c + engine.h = engine). Link edges come from
`nm` over libspur.a: module A depends on B when A's object uses a symbol B's object defines.
Include edges come from `#include "b.h"` lines in A's .c and .h. The only cycle allowed is inside
the core (engine, job, func, worker, and jobx: the side state of jobs beyond Gearman); every other
dependency must point one way, so the store, protocol and shell layers can be tested and replaced
on their own.

usage: check_layers.py SRCDIR LIBSPUR_A
"""
import os
import re
import subprocess
import sys

CORE = {"engine", "job", "func", "worker", "jobx"}


def module_of_object(name):
    base = os.path.basename(name)
    base = re.sub(r"^libspur_a-", "", base)
    return re.sub(r"\.o$", "", base)


def link_edges(lib):
    out = subprocess.run(["nm", "-A", lib], check=True, capture_output=True, text=True).stdout
    defs, uses = {}, []
    for line in out.splitlines():
        # "lib.a:obj.o:0000000000000000 T name" or "lib.a:obj.o:                 U name"
        m = re.match(r"^[^:]+:([^:]+):\s*(?:[0-9a-fA-F]+\s+)?([A-Za-z])\s+(\S+)$", line)
        if not m:
            continue
        obj, kind, sym = m.groups()
        mod = module_of_object(obj)
        if kind == "U":
            uses.append((mod, sym))
        elif kind.isupper():
            defs[sym] = mod
    edges = {}
    for mod, sym in uses:
        to = defs.get(sym)
        if to is not None and to != mod:
            edges.setdefault(mod, {}).setdefault(to, set()).add(sym)
    return edges


def include_edges(srcdir):
    edges = {}
    for f in sorted(os.listdir(srcdir)):
        if not f.endswith((".c", ".h")):
            continue
        mod = f.rsplit(".", 1)[0]
        with open(os.path.join(srcdir, f), encoding="utf-8") as fh:
            for line in fh:
                m = re.match(r'\s*#\s*include\s+"([^"]+)\.h"', line)
                if m and m.group(1) != mod:
                    edges.setdefault(mod, {}).setdefault(m.group(1), set()).add(f)
    return edges


def cycles(edges):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, on, stack, comps, counter = {}, {}, set(), [], [], [0]
    nodes = set(edges) | {t for v in edges.values() for t in v}

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, {})):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(comp)

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return comps


def report(kind, edges):
    bad = 0
    for comp in cycles(edges):
        if comp <= CORE:
            continue
        bad += 1
        print(f"{kind} cycle among: {' '.join(sorted(comp))}")
        for a in sorted(comp):
            for b in sorted(edges.get(a, {})):
                if b in comp:
                    why = sorted(edges[a][b])
                    more = f" (+{len(why) - 4} more)" if len(why) > 4 else ""
                    print(f"  {a} -> {b}: {', '.join(why[:4])}{more}")
    return bad


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    srcdir, lib = sys.argv[1], sys.argv[2]
    bad = report("link", link_edges(lib)) + report("include", include_edges(srcdir))
    if bad:
        print(f"FAIL: {bad} dependency cycle(s) outside the core ({', '.join(sorted(CORE))})")
        return 1
    print("ok: no include or link cycle among src/ modules outside the core")
    return 0


if __name__ == "__main__":
    sys.exit(main())
