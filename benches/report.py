#!/usr/bin/env python3
"""Summarize the `serializers` criterion bench as a Markdown table (stdlib only).

Usage (from the repository root, after the bench has run):

    export CARGO_TARGET_DIR=$HOME/.cache/typeinfo-target
    cargo bench -p typeinfo-benches --bench serializers
    python3 benches/report.py [--stat slope|mean|median] [--criterion-dir DIR]

Criterion 0.8 writes one directory per benchmark:
    $CARGO_TARGET_DIR/criterion/<group>/<function>/new/{benchmark.json,estimates.json}
where <group> is the group id made filename-safe ("vec_u64/serialize" becomes
"vec_u64_serialize"). This script reads `benchmark.json` for the real group and function
ids rather than guessing from directory names, and the chosen statistic's point estimate
(nanoseconds per iteration) and 95% confidence interval from `estimates.json`.

The default statistic is `slope` (what criterion prints as "time:"), falling back to
`mean` where a benchmark has no slope (flat sampling).

Requirements checked (from the issue): typeinfo faster than bincode and postcard on every
case and operation; typeinfo within 1.5x of memcpy for the plain-old-data vectors.
"""

import argparse
import json
import os
import signal
import sys

CASES = ["vec_u64", "strings", "vec_f32"]
OPERATIONS = ["serialize", "deserialize"]
MAIN = ["typeinfo", "bincode", "postcard", "memcpy"]
EXTRA = ["bincode_slice", "postcard_extend"]
MEMCPY_LIMIT = 1.5


def load(criterion_dir, stat, with_value=False):
    """{(group_id, function_id): (point, lower, upper)} in nanoseconds; with `with_value`,
    keyed by (group_id, function_id, value_str) (a `BenchmarkId::new(name, value)`'s value)."""
    results = {}
    for root, _dirs, files in os.walk(criterion_dir):
        if os.path.basename(root) != "new" or "benchmark.json" not in files or "estimates.json" not in files:
            continue
        with open(os.path.join(root, "benchmark.json")) as f:
            meta = json.load(f)
        with open(os.path.join(root, "estimates.json")) as f:
            est = json.load(f)
        e = est.get(stat) or est.get("mean")
        if e is None:
            continue
        ci = e["confidence_interval"]
        key = (meta["group_id"], meta["function_id"])
        if with_value:
            key += (meta.get("value_str") or "",)
        results[key] = (
            e["point_estimate"],
            ci["lower_bound"],
            ci["upper_bound"],
        )
    return results


def fmt_ns(v):
    if v is None:
        return "–"
    return f"{v:,.1f}" if v < 1000 else f"{v:,.0f}"


def fmt_ratio(a, b):
    if a is None or b is None:
        return "–"
    return f"{a / b:.2f}x"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stat", default="slope", choices=["slope", "mean", "median"])
    parser.add_argument("--criterion-dir", default=None)
    args = parser.parse_args()

    crit = args.criterion_dir
    if crit is None:
        target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "target")
        crit = os.path.join(target, "criterion")
    if not os.path.isdir(crit):
        sys.exit(f"no criterion results under {crit}; run the bench first (see the top of this file)")

    res = load(crit, args.stat)

    def get(case, op, fn):
        return res.get((f"{case}/{op}", fn))

    def point(case, op, fn):
        r = get(case, op, fn)
        return r[0] if r else None

    print(f"Statistic: `{args.stat}` (ns per iteration; falls back to `mean`). Source: `{crit}`\n")
    print("| case | operation | typeinfo ns | bincode ns | postcard ns | memcpy ns "
          "| bincode/typeinfo | postcard/typeinfo | typeinfo/memcpy |")
    print("|---|---|--:|--:|--:|--:|--:|--:|--:|")
    for case in CASES:
        for op in OPERATIONS:
            t, b, p, m = (point(case, op, fn) for fn in MAIN)
            if t is None:
                continue
            print(f"| {case} | {op} | {fmt_ns(t)} | {fmt_ns(b)} | {fmt_ns(p)} | {fmt_ns(m)} "
                  f"| {fmt_ratio(b, t)} | {fmt_ratio(p, t)} | {fmt_ratio(t, m)} |")

    extra_rows = []
    for case in CASES:
        t = point(case, "serialize", "typeinfo")
        vals = [point(case, "serialize", fn) for fn in EXTRA]
        if t is not None and any(v is not None for v in vals):
            extra_rows.append((case, t, vals))
    if extra_rows:
        print("\nOther writers of the competitors (serialize only):\n")
        print("| case | typeinfo ns | bincode_slice ns | postcard_extend ns | bincode_slice/typeinfo | postcard_extend/typeinfo |")
        print("|---|--:|--:|--:|--:|--:|")
        for case, t, (bs, pe) in extra_rows:
            print(f"| {case} | {fmt_ns(t)} | {fmt_ns(bs)} | {fmt_ns(pe)} | {fmt_ratio(bs, t)} | {fmt_ratio(pe, t)} |")

    # Requirement checks, with the 95% confidence intervals: "clear" means typeinfo's upper
    # bound is below the competitor's lower bound.
    print("\nRequirements:\n")
    failures = 0
    for case in CASES:
        for op in OPERATIONS:
            t = get(case, op, "typeinfo")
            if t is None:
                continue
            for fn in ["bincode", "postcard"] + [e for e in EXTRA if op == "serialize"]:
                o = get(case, op, fn)
                if o is None:
                    continue
                ok = t[0] < o[0]
                clear = t[2] < o[1]
                failures += not ok
                verdict = "PASS" if ok else "FAIL"
                note = "" if clear or not ok else " (confidence intervals overlap)"
                print(f"- {verdict}: {case}/{op} typeinfo {fmt_ns(t[0])} ns < {fn} {fmt_ns(o[0])} ns{note}")
            m = get(case, op, "memcpy")
            if m is not None:
                ratio = t[0] / m[0]
                ok = ratio <= MEMCPY_LIMIT
                failures += not ok
                print(f"- {'PASS' if ok else 'FAIL'}: {case}/{op} typeinfo/memcpy = {ratio:.2f}x (limit {MEMCPY_LIMIT}x)")
    print(f"\n{failures} requirement(s) missed.")
    return 1 if failures else 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet under `| head`
    sys.exit(main())
