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
work=${FLINK_BENCH_DIR:-$HOME/.cache/flink-bench}
if [ ! -f "$work/x/pyflink/lib/flink-dist-2.3.0.jar" ]; then
  if [ "${FLINK_COMPAT_NO_DOWNLOAD:-}" = 1 ]; then
    echo "Flink 2.3's jars are not in $work/x/pyflink/lib" >&2
    exit 3
  fi
  mkdir -p "$work"
  (cd "$work" && pip download -q --no-deps -d . apache-flink-libraries==2.3.0 >&2 && mkdir -p x && cd x && unzip -q -o ../apache_flink_libraries-2.3.0-*.whl)
fi
L="$work/x/pyflink/lib"
CP="$L/flink-dist-2.3.0.jar:$L/log4j-api-2.25.3.jar:$L/log4j-core-2.25.3.jar:$L/log4j-slf4j-impl-2.25.3.jar"
classes=$(mktemp -d)
trap 'rm -rf "$classes"' EXIT
javac -nowarn -Xlint:none -d "$classes" -cp "$CP" "$here/FlinkSavepoints.java" >&2
mkdir -p "$out"
for spec in "hashmap hashmap false" "rocksdb rocksdb false" "hashmap_snappy hashmap true" "rocksdb_snappy rocksdb true"; do
  set -- $spec
  rm -rf "${out:?}/$1" "$out/$1.expected"
  java -Dlog4j2.level=WARN -cp "$classes:$CP" FlinkSavepoints "$out" "$1" "$2" "$3" >&2
done
