#!/usr/bin/env bash
# Writes the golden files of typeinfo-flink-compat's "migrate a Flink job's state to Rust" test
# with Apache Flink 2.3 (FlinkMigration.java next to this script) into OUT_DIR (default:
# ../migration next to this script): run_migration.sh [OUT_DIR]
# full.output: every line of the job run to its end (hashmap backend); half_hashmap/ and
# half_rocksdb/: a savepoint taken after half of the input (no drain: windows and timers stay
# pending), with beside each NAME.output the lines the job had emitted by then.
# The jars come from PyPI's apache-flink-libraries wheel, as for run.sh (same cache,
# $FLINK_BENCH_DIR, default ~/.cache/flink-bench). Needs java and javac 17.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../migration}
# shellcheck source=jars.sh
. "$here/jars.sh"
classes=$(mktemp -d)
trap 'rm -rf "$classes"' EXIT
javac -nowarn -Xlint:none -d "$classes" -cp "$CP" "$here/FlinkMigration.java" "$here/SavepointJobs.java" >&2
mkdir -p "$out"
# Flink writes the absolute path of every state file into `_metadata`: the savepoints are
# written under a fixed scratch folder, the same on every machine, so that the committed
# files name no folder of the machine that wrote them, then copied to OUT_DIR.
gen=/tmp/typeinfo-flink-migration
rm -rf "$gen"
mkdir -p "$gen"
for spec in "full hashmap" "half hashmap" "half rocksdb"; do
  set -- $spec
  if [ "$1" = full ]; then name=full; else name="half_$2"; fi
  rm -rf "${out:?}/$name" "$out/$name.output"
  java -Dlog4j2.level=WARN -cp "$classes:$CP" FlinkMigration "$gen" "$1" "$2" >&2
  if [ "$1" = full ]; then
    cp "$gen/full.output" "$out/"
  else
    cp -r "$gen/$name" "$gen/$name.output" "$out/"
  fi
done
rm -rf "$gen"
