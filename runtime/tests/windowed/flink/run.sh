#!/usr/bin/env bash
# Apache Flink 2.3 running the `windowed_aggregate` contract (WindowedAggregate.java next to
# this script): the reference for the golden files in runtime/tests/windowed/.
#   run.sh --input FILE --window SPEC --out-of-orderness MS --allowed-lateness MS \
#          [--parallelism N] [--trigger TSPEC] [--evictor ESPEC]
# Prints only the program's lines (unordered); Flink's own log goes to a temporary file that is
# shown on stderr only if the run fails. The jars come from PyPI's apache-flink-libraries wheel
# (~330 MB), downloaded once into the cache the flink-bench script uses (../shared/flink-bench/run.sh
# next to the repository): $FLINK_BENCH_DIR, default ~/.cache/flink-bench. The class is compiled
# into $FLINK_BENCH_DIR/windowed-aggregate-classes when stale. Needs java and javac 17 and pip.
# FLINK_REF_JAVA_OPTS overrides the JVM heap options (default -Xmx1g).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${FLINK_BENCH_DIR:-$HOME/.cache/flink-bench}
mkdir -p "$work"
if [ ! -f "$work/x/pyflink/lib/flink-dist-2.3.0.jar" ]; then
  (cd "$work" && pip download -q --no-deps -d . apache-flink-libraries==2.3.0 >&2 && mkdir -p x && cd x && unzip -q -o ../apache_flink_libraries-2.3.0-*.whl)
fi
L="$work/x/pyflink/lib"
CP="$L/flink-dist-2.3.0.jar:$L/log4j-api-2.25.3.jar:$L/log4j-core-2.25.3.jar:$L/log4j-slf4j-impl-2.25.3.jar:$L/log4j-1.2-api-2.25.3.jar"
classes="$work/windowed-aggregate-classes"
mkdir -p "$classes"
if [ ! -f "$classes/WindowedAggregate.class" ] || [ "$here/WindowedAggregate.java" -nt "$classes/WindowedAggregate.class" ]; then
  rm -f "$classes"/WindowedAggregate*.class
  javac -nowarn -Xlint:none -d "$classes" -cp "$CP" "$here/WindowedAggregate.java" >&2
fi
# Flink's log: WARN and above to stderr (never stdout).
log4j="$classes/log4j2.properties"
if [ ! -f "$log4j" ]; then
  cat > "$log4j" <<'PROPS'
rootLogger.level = WARN
rootLogger.appenderRef.console.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss,SSS} %-5p %c{1} - %m%n
PROPS
fi
OPENS=""
for p in java.util java.lang java.lang.reflect java.io java.nio sun.nio.ch java.net java.text java.time java.util.concurrent java.util.concurrent.atomic; do
  OPENS="$OPENS --add-opens=java.base/$p=ALL-UNNAMED"
done
err=$(mktemp)
trap 'rm -f "$err"' EXIT
# shellcheck disable=SC2086
if ! java $OPENS ${FLINK_REF_JAVA_OPTS:--Xmx1g -XX:+UseSerialGC} -Dlog4j2.configurationFile="$log4j" \
    -cp "$classes:$CP" WindowedAggregate "$@" 2>"$err"; then
  cat "$err" >&2
  exit 1
fi
