#!/usr/bin/env bash
# Checks every golden case in runtime/tests/windowed/ against Apache Flink 2.3 (run.sh):
# each NAME.args case runs at parallelism 1 (and at parallelism 2 for the cases in P2), its
# output is sorted bytewise and diffed with NAME.expected. Exits non-zero on any difference.
# For maintainers only (the Rust tests do not run Flink). One JVM at a time, ~7 s per run.
#   check.sh              all cases
#   check.sh NAME...      only these cases
#   P2=all check.sh       parallelism 2 for every case as well
#   MODE=batch check.sh   Flink's BATCH execution mode, against NAME.batch.expected
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=$(cd "$here/.." && pwd)
P2=${P2:-"random_tumbling random_session session_lateness sliding_lateness trigger_count_session trigger_continuous_event_session random_count_sliding random_trigger_count count_sliding"}
if [ $# -gt 0 ]; then names=("$@"); else names=(); for f in "$dir"/*.args; do n=$(basename "$f" .args); names+=("$n"); done; fi
MODE=${MODE:-streaming}
suffix=expected
[ "$MODE" = batch ] && suffix=batch.expected
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail=0
for n in "${names[@]}"; do
  ps="1"
  if [ "$P2" = all ] || [[ " $P2 " == *" $n "* ]]; then ps="1 2"; fi
  for p in $ps; do
    # shellcheck disable=SC2046
    if ! "$here/run.sh" --input "$dir/$n.csv" $(cat "$dir/$n.args") --parallelism "$p" --mode "$MODE" > "$out"; then
      echo "FAIL $n p=$p: Flink run failed"; fail=1; continue
    fi
    if LC_ALL=C sort "$out" | diff -u --label "$n.$suffix" --label "flink p=$p" "$dir/$n.$suffix" -; then
      echo "ok   $n p=$p ($(wc -l < "$out") lines)"
    else
      echo "FAIL $n p=$p: Flink's output differs from $n.$suffix (diff above: - expected, + Flink)"; fail=1
    fi
  done
done
[ $fail = 0 ] && echo "all cases agree with Flink" || echo "SOME CASES DIFFER"
exit $fail
