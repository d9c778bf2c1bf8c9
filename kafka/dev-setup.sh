#!/usr/bin/env bash
# Installs the Kafka-protocol broker the Kafka connector's tests start on loopback: the Kafka
# service of noida-db (PyPI; a prebuilt single binary in its wheel), into
# $TYPEINFO_TOOLS_DIR/noida-db (default $HOME/.cache/typeinfo-tools/noida-db): a virtual
# environment in venv/, and bin/noida-db, a link to the binary itself (the package's
# `noida-db` script is a Python wrapper that runs the binary as its child; the tests start
# and kill the binary directly). Idempotent: a noida-db of the pinned version that runs is
# left alone.
#   kafka/dev-setup.sh            install what is missing
#   kafka/dev-setup.sh --dry-run  only print what is missing
# Why noida-db, pinned to 0.2.2: it serves Kafka transactions whole (InitProducerId with a
# transactional id, AddPartitionsToTxn, EndTxn writing commit and abort markers, fetches
# up to the last stable offset for read_committed), which the exactly-once sink's tests
# need, and it saves its topics to disk, so a test can stop the broker and start it again.
# tansu 0.6.0 (crates.io's newest) lacks EndTxn. noida-db 0.2.3's binary needs glibc 2.39;
# Debian 12 has 2.36, on which 0.2.2 runs.
# The connector's client (librdkafka) is compiled from the sources bundled in `rdkafka-sys`
# by the ordinary cargo build: it needs a C compiler and make, nothing installed here.
# The tests find the broker at $TYPEINFO_NOIDA_DB, else at the path below.
set -euo pipefail

TOOLS_DIR="${TYPEINFO_TOOLS_DIR:-$HOME/.cache/typeinfo-tools}"
NOIDA_VERSION="0.2.2"
NOIDA_ROOT="$TOOLS_DIR/noida-db"
NOIDA="$NOIDA_ROOT/bin/noida-db"

say() { printf '==> %s\n' "$*" >&2; }

noida_missing() {
  ! { [ -x "$NOIDA" ] && "$NOIDA" version 2>/dev/null | grep -qx "noida-db $NOIDA_VERSION"; }
}

missing_system_packages() {
  command -v cc >/dev/null 2>&1 || printf '%s\n' gcc
  command -v make >/dev/null 2>&1 || printf '%s\n' make
  python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || printf '%s\n' python3-venv
  return 0
}

install_noida() {
  say "installing noida-db $NOIDA_VERSION (the Kafka-protocol test broker, PyPI) into $NOIDA_ROOT"
  rm -rf "$NOIDA_ROOT"
  python3 -m venv "$NOIDA_ROOT/venv"
  "$NOIDA_ROOT/venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "noida-db==$NOIDA_VERSION"
  local binary
  binary="$("$NOIDA_ROOT/venv/bin/python" -c \
    'from importlib.resources import files; print(files("noida_db").joinpath("noida-db"))')"
  chmod +x "$binary"
  mkdir -p "$NOIDA_ROOT/bin"
  ln -sf "$binary" "$NOIDA"
  if noida_missing; then
    say "noida-db was installed but does not run: see $NOIDA_ROOT"
    exit 1
  fi
}

main() {
  local dry_run="${1:-}" packages=()
  mapfile -t packages < <(missing_system_packages)
  if [ "$dry_run" = "--dry-run" ]; then
    local missing=("${packages[@]}")
    noida_missing && missing+=("noida-db $NOIDA_VERSION (PyPI, into $NOIDA_ROOT)")
    if [ ${#missing[@]} -eq 0 ]; then echo "nothing to install"; else echo "would install: ${missing[*]}"; fi
    return 0
  fi
  if [ ${#packages[@]} -gt 0 ]; then
    say "installing system packages: ${packages[*]}"
    local sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}" >/dev/null
  fi
  if noida_missing; then
    install_noida
  fi
}

main "$@"
