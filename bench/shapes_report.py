#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""bench/shapes_report.py: the quiet/busy x shape table of docs/PERFORMANCE.md, and its plot.

Reads one or more results.tsv files written by bench/run.sh (for example one run of the quiet
condition and one of the busy condition), takes the median of every server, shape, condition and
metric, and prints a Markdown table: spurd, gearmand -t 0 and beanstalkd side by side with the
spurd/gearmand ratios and whether each meets the bars of issue 33 (jobs/s >= 1.3x, p50 <= 0.75x,
CPU per job <= 0.75x). With --png=FILE it also draws the three ratios per shape and condition as
bars, with the bars' lines, through gnuplot (Debian gnuplot-nox).

Usage: bench/shapes_report.py [--png=FILE] [--base] RESULTS.tsv...
  --base adds spurd-base and a 'vs base' column (spurd / spurd-base) when the runs had it.
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

SHAPES = ["1x1-w1", "4x4-w1", "4x4-w32", "idle100", "bg-4x64"]
CONDITIONS = ["quiet", "busy"]
METRICS = [("jobs_per_s", "jobs/s", "higher", 1.3), ("p50_us", "p50 µs", "lower", 0.75),
           ("p99_us", "p99 µs", "lower", None), ("cpu_us_per_job", "CPU µs/job", "lower", 0.75)]


def load(paths):
    """Returns {(server, scenario, metric): [values]} from run.sh's results files."""
    vals = {}
    for p in paths:
        with open(p) as f:
            for line in f:
                w = line.split()
                if len(w) != 5:
                    continue
                try:
                    v = float(w[4])
                except ValueError:
                    continue
                vals.setdefault((w[0], w[1], w[3]), []).append(v)
    return vals


def fmt(v):
    if v is None:
        return "n/a"
    if v >= 100:
        return f"{v:,.0f}"
    return f"{v:.1f}"


def median(vals, key):
    return statistics.median(vals[key]) if key in vals else None


def table(vals, base):
    """Prints the Markdown table; returns [(label, jobs ratio, p50 ratio, cpu ratio)]."""
    head = "| shape | condition | metric | spurd | gearmand -t 0 | beanstalkd | spurd/gearmand |"
    sep = "| --- | --- | --- | --- | --- | --- | --- |"
    if base:
        head += " spurd/base |"
        sep += " --- |"
    print(head)
    print(sep)
    bars = []
    for cond in CONDITIONS:
        for shape in SHAPES:
            sc = shape if cond == "quiet" else shape + "@busy"
            if not any(k[1] == sc for k in vals):
                continue
            ratios = {}
            for m, label, better, bar in METRICS:
                sp = median(vals, ("spurd", sc, m))
                gm = median(vals, ("gearmand-t0", sc, m))
                bs = median(vals, ("beanstalkd", sc, m))
                r = sp / gm if sp is not None and gm else None
                ratios[m] = r
                cell = "n/a" if r is None else f"{r:.2f}x"
                if r is not None and bar is not None:
                    ok = r >= bar if better == "higher" else r <= bar
                    cell += "" if ok else " (bar missed)"
                row = f"| {shape} | {cond} | {label} | {fmt(sp)} | {fmt(gm)} | {fmt(bs)} | {cell} |"
                if base:
                    b = median(vals, ("spurd-base", sc, m))
                    row += f" {sp / b:.2f}x |" if sp is not None and b else " n/a |"
                print(row)
            bars.append((f"{shape} {cond}", ratios["jobs_per_s"], ratios["p50_us"],
                         ratios["cpu_us_per_job"]))
    return bars


def plot(bars, png):
    gp = shutil.which("gnuplot")
    if gp is None:
        print("gnuplot not found: no PNG written (Debian: gnuplot-nox)", file=sys.stderr)
        return
    with tempfile.TemporaryDirectory() as d:
        data = os.path.join(d, "ratios.dat")
        with open(data, "w") as f:
            for label, j, p, c in bars:
                f.write('"%s" %s %s %s\n' % (label, *("nan" if v is None else f"{v:.3f}"
                                                      for v in (j, p, c))))
        script = f"""
set terminal pngcairo size 1100,520 font ',10'
set output '{png}'
set title 'spurd / gearmand -t 0 by shape and condition (medians; above 1 = spurd higher)'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set logscale y 2
set yrange [0.01:64]
set ylabel 'ratio (log scale)'
set xtics rotate by -30 noenhanced
set key top left
set grid ytics
plot '{data}' using 2:xtic(1) title 'jobs/s (bar: >= 1.3)', \\
     '' using 3 title 'p50 latency (bar: <= 0.75)', \\
     '' using 4 title 'CPU per job (bar: <= 0.75)', \\
     1.3 with lines dt 2 lc rgb '#1f77b4' notitle, \\
     0.75 with lines dt 2 lc rgb '#d62728' notitle
"""
        r = subprocess.run([gp], input=script, text=True, capture_output=True)
        if r.returncode != 0:
            print(f"gnuplot failed: {r.stderr.strip()}", file=sys.stderr)


def main(argv):
    png = None
    base = False
    paths = []
    for a in argv:
        if a.startswith("--png="):
            png = a.split("=", 1)[1]
        elif a == "--base":
            base = True
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        else:
            paths.append(a)
    if not paths:
        print(__doc__, file=sys.stderr)
        return 2
    bars = table(load(paths), base)
    if png:
        plot(bars, png)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
