# Sourced by run.sh and run_savepoints.sh: sets CP to Apache Flink 2.3's jars, from PyPI's
# apache-flink-libraries wheel (~330 MB), downloaded once into the cache the repository's
# Flink programs share ($FLINK_BENCH_DIR, default ~/.cache/flink-bench; `./dev setup` fetches
# it). FLINK_COMPAT_NO_DOWNLOAD=1 makes a missing cache an error (exit 3) instead of a
# download (the Rust tests that compare the committed goldens with Flink's set it).
work=${FLINK_BENCH_DIR:-$HOME/.cache/flink-bench}
if [ ! -f "$work/x/pyflink/lib/flink-dist-2.3.0.jar" ]; then
  if [ "${FLINK_COMPAT_NO_DOWNLOAD:-}" = 1 ]; then
    echo "Flink 2.3's jars are not in $work/x/pyflink/lib" >&2
    exit 3
  fi
  mkdir -p "$work"
  (cd "$work" && python3 -m pip download -q --no-deps -d . apache-flink-libraries==2.3.0 >&2 \
    && mkdir -p x && cd x && python3 -m zipfile -e ../apache_flink_libraries-2.3.0-*.whl .)
fi
L="$work/x/pyflink/lib"
CP="$L/flink-dist-2.3.0.jar:$L/log4j-api-2.25.3.jar:$L/log4j-core-2.25.3.jar:$L/log4j-slf4j-impl-2.25.3.jar"
