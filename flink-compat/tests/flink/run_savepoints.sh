#!/usr/bin/env bash
# Writes the Flink savepoint golden files of typeinfo-flink-compat with Apache Flink 2.3
# (FlinkSavepoints.java next to this script) into OUT_DIR (default: ../savepoints next to this
# script): run_savepoints.sh [OUT_DIR]
# Four savepoints: the hashmap and RocksDB backends, each uncompressed and with snapshot
# compression (snappy), and beside each NAME.expected (what its states hold for sampled keys).
# The jars come from PyPI's apache-flink-libraries wheel, as for run.sh (same cache,
# $FLINK_BENCH_DIR, default ~/.cache/flink-bench). Needs java and javac 17.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../savepoints}
# shellcheck source=jars.sh
. "$here/jars.sh"
classes=$(mktemp -d)
trap 'rm -rf "$classes"' EXIT
javac -nowarn -Xlint:none -d "$classes" -cp "$CP" "$here/FlinkSavepoints.java" "$here/SavepointJobs.java" >&2
mkdir -p "$out"
# Flink writes the absolute path of every state file into `_metadata`: the savepoints are
# written under a fixed scratch folder, the same on every machine, so that the committed
# files name no folder of the machine that wrote them, then copied to OUT_DIR.
gen=/tmp/typeinfo-flink-savepoints
rm -rf "$gen"
mkdir -p "$gen"
for spec in "hashmap hashmap false" "rocksdb rocksdb false" "hashmap_snappy hashmap true" "rocksdb_snappy rocksdb true"; do
  set -- $spec
  rm -rf "${out:?}/$1" "$out/$1.expected"
  java -Dlog4j2.level=WARN -cp "$classes:$CP" FlinkSavepoints "$gen" "$1" "$2" "$3" >&2
  cp -r "$gen/$1" "$gen/$1.expected" "$out/"
done
rm -rf "$gen"
