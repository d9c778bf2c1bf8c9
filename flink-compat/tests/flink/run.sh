#!/usr/bin/env bash
# Writes the golden files of typeinfo-flink-compat with Apache Flink 2.3 (FlinkGoldens.java next
# to this script) into OUT_DIR:  run.sh OUT_DIR
# The jars come from PyPI's apache-flink-libraries wheel (~330 MB), downloaded once into the cache
# the repository's other Flink references use (runtime/tests/windowed/flink/run.sh):
# $FLINK_BENCH_DIR, default ~/.cache/flink-bench. FLINK_COMPAT_NO_DOWNLOAD=1 makes a missing
# cache an error (exit 3) instead of a download (the Rust test that compares the committed
# goldens with Flink's bytes sets it). Needs java and javac 17 (and pip for the download).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: run.sh OUT_DIR}
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
javac -nowarn -Xlint:none -d "$classes" -cp "$CP" "$here/FlinkGoldens.java" >&2
java -cp "$classes:$CP" FlinkGoldens "$out"
