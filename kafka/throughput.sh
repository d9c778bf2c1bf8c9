#!/usr/bin/env bash
# Measures Kafka -> job -> Kafka beside plain librdkafka client loops (the README's Kafka
# throughput table): starts the test broker that kafka/dev-setup.sh installs (noida-db's
# Kafka service) on a free loopback port with its data in a temporary directory, runs the
# `throughput` example in release mode against it, and stops the broker.
#   kafka/throughput.sh [--records N] [--value-bytes B] [--partitions P] [--parallelism N]
# Nothing here is a target: it prints what it measured.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/typeinfo-target}"

TOOLS_DIR="${TYPEINFO_TOOLS_DIR:-$HOME/.cache/typeinfo-tools}"
BROKER="${TYPEINFO_NOIDA_DB:-$TOOLS_DIR/noida-db/bin/noida-db}"
[ -x "$BROKER" ] || { echo "the Kafka test broker is missing at $BROKER: run ./dev setup" >&2; exit 1; }

cargo build --release --quiet -p typeinfo-kafka --example throughput

DATA="$(mktemp -d)"
PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$BROKER" start --only kafka --host 127.0.0.1 --kafka-port "$PORT" --data-dir "$DATA/data" \
  >"$DATA/broker.log" 2>&1 &
BROKER_PID=$!
stop_broker() {
  kill -TERM "$BROKER_PID" 2>/dev/null || true
  wait "$BROKER_PID" 2>/dev/null || true
  rm -rf "$DATA"
}
trap stop_broker EXIT
for _ in $(seq 300); do
  (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
  sleep 0.1
done

echo "broker: $("$BROKER" version) on 127.0.0.1:$PORT; $(nproc) cores; $(date -u '+%Y-%m-%d %H:%M UTC')"
"$CARGO_TARGET_DIR/release/examples/throughput" "127.0.0.1:$PORT" "$@"
