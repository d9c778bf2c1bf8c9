#!/usr/bin/env bash
# The README's keyed-window workload on Apache Flink 2.3 and on this runtime, in one run on one
# machine, as ratios (machines of one kind differ by up to 2.5x, so only ratios from one run
# mean anything). Targets fixed before measuring (issue 28, raised from issue 11's 15x and 8x):
# heap at parallelism 1 at least 20x Flink's heap state backend, RocksDB at parallelism 1 at
# least 15x Flink's RocksDB.
# Exits non-zero when a target is missed.
#
#   benches/vs_flink.sh [EVENTS]        # default 20,000,000 events, 10,000 keys, 1 s windows
#
# The Flink side is not in this repository: FLINK_BENCH names a script that runs the same job
# on Flink 2.3 (its arguments: EVENTS KEYS PARALLELISM hashmap|rocksdb EVENTS_PER_MS WINDOW_MS;
# it prints events_per_s=N); the default, ../shared/flink-bench/run.sh relative to the
# checkout, is the development machine's (Flink's jars from PyPI, java and javac). This script
# is run by hand, not by CI.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
events=${1:-20000000}
keys=10000
per_ms=100
window=1000
flink=${FLINK_BENCH:-$here/../shared/flink-bench/run.sh}
# The build goes where the binary is looked for (cargo alone would use ./target).
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/typeinfo-target}
target=$CARGO_TARGET_DIR
(cd "$here" && cargo build -q --release -p typeinfo-runtime --example window_throughput)
ours_bin="$target/release/examples/window_throughput"

ours() { # parallelism state
  "$ours_bin" --events "$events" --keys "$keys" --events-per-ms "$per_ms" --window-ms "$window" \
    --parallelism "$1" --state "$2" | sed -n 's/^events_per_s=//p'
}
theirs() { # parallelism backend
  bash "$flink" "$events" "$keys" "$1" "$2" "$per_ms" "$window" | sed -n 's/.*events_per_s=//p'
}

status=0
printf '%-8s %3s %14s %14s %8s %8s\n' state p typeinfo flink ratio target
for run in "heap 1 hashmap 20" "rocksdb 1 rocksdb 15" "heap 2 hashmap -" "rocksdb 2 rocksdb -"; do
  set -- $run
  a=$(ours "$2" "$1")
  b=$(theirs "$2" "$3")
  ratio=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.1f", a / b }')
  verdict="$4"
  if [ "$4" != "-" ]; then
    if awk -v r="$ratio" -v t="$4" 'BEGIN { exit !(r >= t) }'; then
      verdict=">=$4x met"
    else
      verdict=">=$4x MISSED"
      status=1
    fi
  fi
  printf '%-8s %3s %14s %14s %7sx %s\n' "$1" "$2" "$a" "$b" "$ratio" "$verdict"
done
exit $status
