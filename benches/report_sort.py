#!/usr/bin/env python3
"""Summarize the `sort` criterion bench as a Markdown table (stdlib only).

Usage (after the bench has run):

    export CARGO_TARGET_DIR=$HOME/.cache/typeinfo-target
    cargo bench -p typeinfo-benches --bench sort
    python3 benches/report_sort.py

Checks the issue's target: the sorter at least 3x faster than `slice::sort_unstable_by`
over the deserialized records (string keys), on the sort alone and on adding and sorting.
Exits 1 when it is missed.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import load  # noqa: E402  (shared criterion reader)

TARGET = 3.0


def main():
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(os.path.dirname(__file__), "..", "target"))
    results = load(os.path.join(target, "criterion"), "slope")
    rows = {f.split("/")[0]: v[0] for (g, f), v in results.items() if g == "sort"}
    base = rows.get("sort_unstable_by")
    if base is None:
        print("no criterion results; run `cargo bench -p typeinfo-benches --bench sort` first")
        return 2
    print("| 1M string-keyed records | time | vs `sort_unstable_by` |")
    print("|---|--:|--:|")
    failures = []
    for name in ["normalized_key_sorter", "normalized_key_sorter_add_and_sort",
                 "serialized_key_sorter", "sort_unstable_by"]:
        t = rows.get(name)
        if t is None:
            failures.append(f"{name}: no result")
            continue
        speedup = base / t
        print(f"| {name} | {t / 1e6:,.0f} ms | {speedup:.2f}x |")
        if name.startswith("normalized_key_sorter") and speedup < TARGET:
            failures.append(f"{name}: {speedup:.2f}x faster than sort_unstable_by < {TARGET}x")
    if "normalized_key_sorter" in rows and "serialized_key_sorter" in rows:
        print(f"\nnormalized keys make the sort {rows['serialized_key_sorter'] / rows['normalized_key_sorter']:.1f}x faster")
    print()
    for f in failures:
        print(f"- MISSED: {f}")
    if not failures:
        print("- PASS: the sorter is at least 3x faster than sort_unstable_by")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
