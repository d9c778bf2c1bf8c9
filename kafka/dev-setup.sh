#!/usr/bin/env bash
# Installs the Kafka-protocol broker the Kafka connector's tests start on loopback: tansu
# (crates.io), built with its `libsql` feature (SQLite storage: its memory:// storage lists
# offsets per batch, not per record), into
# $TYPEINFO_TOOLS_DIR/tansu (default $HOME/.cache/typeinfo-tools/tansu). Idempotent: a
# tansu of the pinned version that runs is left alone.
#   kafka/dev-setup.sh            install what is missing
#   kafka/dev-setup.sh --dry-run  only print what is missing
# The connector's client (librdkafka) is compiled from the sources bundled in `rdkafka-sys`
# by the ordinary cargo build: it needs a C compiler and make, nothing installed here.
# The tests find the broker at $TYPEINFO_TANSU, else at the path below.
set -euo pipefail

TOOLS_DIR="${TYPEINFO_TOOLS_DIR:-$HOME/.cache/typeinfo-tools}"
TANSU_VERSION="0.6.0"
TANSU_ROOT="$TOOLS_DIR/tansu"
TANSU="$TANSU_ROOT/bin/tansu"
TANSU_FEATURES="libsql"
# Written after a successful install: the version and features installed.
TANSU_STAMP="$TANSU_ROOT/installed"

say() { printf '==> %s\n' "$*" >&2; }

tansu_missing() {
  ! { [ -x "$TANSU" ] && "$TANSU" --version 2>/dev/null | grep -q "$TANSU_VERSION" &&
      [ "$(cat "$TANSU_STAMP" 2>/dev/null)" = "$TANSU_VERSION $TANSU_FEATURES" ]; }
}

missing_build_tools() {
  command -v cc >/dev/null 2>&1 || printf '%s\n' gcc
  command -v make >/dev/null 2>&1 || printf '%s\n' make
  return 0
}

main() {
  local dry_run="${1:-}" tools=()
  mapfile -t tools < <(missing_build_tools)
  if [ "$dry_run" = "--dry-run" ]; then
    local missing=("${tools[@]}")
    tansu_missing && missing+=("tansu $TANSU_VERSION (crates.io, into $TANSU_ROOT)")
    if [ ${#missing[@]} -eq 0 ]; then echo "nothing to install"; else echo "would install: ${missing[*]}"; fi
    return 0
  fi
  if [ ${#tools[@]} -gt 0 ]; then
    say "installing system packages: ${tools[*]}"
    local sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${tools[@]}" >/dev/null
  fi
  if tansu_missing; then
    say "installing tansu $TANSU_VERSION (the Kafka-protocol test broker) into $TANSU_ROOT; this takes a while"
    mkdir -p "$TANSU_ROOT"
    # Its own target directory (kept, so that a second install is incremental), not the
    # workspace's: the broker's dependencies have nothing to share with it.
    CARGO_TARGET_DIR="$TOOLS_DIR/tansu-build" cargo install tansu --version "$TANSU_VERSION" \
      --locked --features "$TANSU_FEATURES" --root "$TANSU_ROOT" --force --quiet
    echo "$TANSU_VERSION $TANSU_FEATURES" >"$TANSU_STAMP"
    if tansu_missing; then
      say "tansu was installed but does not run: see $TANSU_ROOT"
      exit 1
    fi
  fi
}

main "$@"
