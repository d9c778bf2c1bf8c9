#!/usr/bin/env python3
"""Throughput of the `nexmark` binary: every query at parallelism 1 and 2, heap and
RocksDB state, over a 1,000,000-event file, and over the in-process generator.

Usage: python3 nexmark/report.py [--queries q0,q5,...] [--skip-build]

Builds the release binaries first (`cargo build --release --workspace --bins`, target dir
$CARGO_TARGET_DIR or $HOME/.cache/typeinfo-target), generates the event file once into
$HOME/.cache/typeinfo-nexmark/ if it is missing, prints a markdown table, and says per
query whether the per-core target (events/s at parallelism 1, file, heap) was met. Exits 1
when any target is missed, 2 when a run fails.

The targets were fixed before anything was measured: 10x Apache Flink's per-core
throughput as issue 14 states it for Flink SQL 2.3 on this machine (parallelism 1, 1M-event
file): 120k events/s for the stateless queries -> 1.2M events/s; 80k events/s for joins and
aggregations -> 800k events/s. Do not change them after measuring.
"""

import argparse
import os
import subprocess
import sys
from pathlib import Path

# Fixed before measuring (see the module docstring).
STATELESS_TARGET = 1_200_000
STATEFUL_TARGET = 800_000
TARGETS = {
    **{q: STATELESS_TARGET for q in ["q0", "q1", "q2", "q5", "q12", "q13", "q14", "q21", "q22"]},
    **{q: STATEFUL_TARGET for q in ["q3", "q4", "q7", "q8", "q9", "q11",
                                    "q15", "q16", "q17", "q18", "q19", "q20"]},
}
QUERIES = ["q0", "q1", "q2", "q3", "q4", "q5", "q7", "q8", "q9", "q11", "q12", "q13",
           "q14", "q15", "q16", "q17", "q18", "q19", "q20", "q21", "q22"]
EVENTS = 1_000_000
TIMEOUT_S = 1200

ROOT = Path(__file__).resolve().parent.parent
TARGET_DIR = Path(os.environ.get("CARGO_TARGET_DIR",
                                 Path.home() / ".cache" / "typeinfo-target"))
BIN = TARGET_DIR / "release" / "nexmark"
CACHE = Path.home() / ".cache" / "typeinfo-nexmark"
EVENT_FILE = CACHE / "events-1m.jsonl"
SIDE_FILE = CACHE / "side_input.txt"


class RunFailed(Exception):
    pass


def rate_of(text, what):
    for line in reversed(text.splitlines()):
        if line.startswith("events_per_s="):
            return int(line.split("=", 1)[1])
    raise RunFailed("%s: no events_per_s line" % what)


def run(args, what):
    try:
        p = subprocess.run([str(BIN)] + args, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise RunFailed("%s: timed out after %d s" % (what, TIMEOUT_S)) from None
    if p.returncode != 0:
        raise RunFailed("%s: exit %d: %s" % (what, p.returncode,
                                             p.stderr.decode(errors="replace").strip()))
    return p


def file_rate(query, parallelism, state):
    what = "%s file p%d %s" % (query, parallelism, state)
    p = run(["--query", query, "--events", str(EVENT_FILE), "--side-input", str(SIDE_FILE),
             "--parallelism", str(parallelism), "--state", state], what)
    return rate_of(p.stderr.decode(), what)


def generate_rate(query):
    what = "%s generate p1 heap" % query
    p = run(["--query", query, "--generate", str(EVENTS), "--parallelism", "1",
             "--state", "heap"], what)
    return rate_of(p.stdout.decode(), what)


def prepare(skip_build):
    env = dict(os.environ, CARGO_TARGET_DIR=str(TARGET_DIR))
    if not skip_build:
        subprocess.run(["cargo", "build", "--release", "--workspace", "--bins"],
                       cwd=ROOT, env=env, check=True)
    CACHE.mkdir(parents=True, exist_ok=True)
    if not EVENT_FILE.exists():
        run(["--generate", str(EVENTS), "--write-events", str(EVENT_FILE)], "write events")
    if not SIDE_FILE.exists():
        tmp = SIDE_FILE.with_suffix(".tmp")
        tmp.write_text("".join("%d,%d\n" % (k, k) for k in range(10000)))
        tmp.replace(SIDE_FILE)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", help="comma-separated subset (default: all)")
    parser.add_argument("--skip-build", action="store_true")
    opts = parser.parse_args()
    queries = QUERIES if not opts.queries else opts.queries.split(",")
    prepare(opts.skip_build)

    print("| query | p1 heap | p2 heap | p1 rocksdb | p2 rocksdb | generate p1 heap "
          "| target (p1 heap) | |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    missed, failed = [], []
    for q in queries:
        cells = []
        try:
            for parallelism, state in [(1, "heap"), (2, "heap"), (1, "rocksdb"),
                                       (2, "rocksdb")]:
                cells.append(file_rate(q, parallelism, state))
            cells.append(generate_rate(q))
        except RunFailed as e:
            failed.append(str(e))
            cells += [None] * (5 - len(cells))
        target = TARGETS[q]
        met = cells[0] is not None and cells[0] >= target
        if not met:
            missed.append(q)
        print("| %s | %s | %d | %s |" % (
            q, " | ".join("-" if c is None else "{:,}".format(c) for c in cells), target,
            "met" if met else "missed"), flush=True)
    print()
    print("events/s; file = %s (%d events), job time only (process start excluded)"
          % (EVENT_FILE, EVENTS))
    for f in failed:
        print("FAILED: " + f, file=sys.stderr)
    if missed:
        print("targets missed: " + " ".join(missed))
    else:
        print("every target met")
    if failed:
        return 2
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
