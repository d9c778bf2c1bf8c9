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
# shellcheck source=jars.sh
. "$here/jars.sh"
classes=$(mktemp -d)
trap 'rm -rf "$classes"' EXIT
javac -nowarn -Xlint:none -d "$classes" -cp "$CP" "$here/FlinkGoldens.java" >&2
java -cp "$classes:$CP" FlinkGoldens "$out"
