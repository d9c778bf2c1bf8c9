#!/usr/bin/env bash
# Tests of `./dev setup`'s detection of what the build needs (run by `./dev test`): it must
# install libclang where only the C++ interface library (libclang-cpp.so.N) is present, and
# install nothing where a loadable libclang.so.1 is.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
passed=0
failed=0
check() {
  local name="$1" want="$2" got="$3"
  if [[ "$got" == *"$want"* ]]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    printf 'FAILED %s: expected output containing "%s", got "%s"\n' "$name" "$want" "$got"
  fi
}
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

# An ELF shared library of this machine's word size: the real libclang when the machine has
# one, else the compiler's own runtime library (any real 64-bit ELF passes the same check).
real_elf() {
  local f
  for f in /usr/lib/llvm-*/lib/libclang.so.1 /usr/lib/*-linux-gnu/libclang-*.so.1 \
           /lib/*-linux-gnu/libc.so.6 /usr/lib/*-linux-gnu/libc.so.6; do
    [ -e "$f" ] && { readlink -f "$f"; return 0; }
  done
  return 1
}

# 1. Only the C++ interface library: libclang must be installed.
mkdir -p "$scratch/cpp-only"
cp "$(real_elf)" "$scratch/cpp-only/libclang-cpp.so.14"
check "libclang-cpp only" "would install: libclang-dev" \
  "$(DEV_LIBCLANG_DIRS="$scratch/cpp-only" ./dev setup --dry-run)"

# 2. A real, loadable libclang.so.1: nothing to install.
mkdir -p "$scratch/real"
ln -s "$(real_elf)" "$scratch/real/libclang.so.1"
check "real libclang.so.1" "nothing to install" \
  "$(DEV_LIBCLANG_DIRS="$scratch/real" ./dev setup --dry-run)"

# 3. A file with libclang's name that is no loadable library (a broken download): install.
mkdir -p "$scratch/fake"
printf 'not an ELF file' >"$scratch/fake/libclang.so"
check "not an ELF file" "would install: libclang-dev" \
  "$(DEV_LIBCLANG_DIRS="$scratch/fake" ./dev setup --dry-run)"

# 4. An empty library folder: install.
mkdir -p "$scratch/empty"
check "no library" "would install: libclang-dev" \
  "$(DEV_LIBCLANG_DIRS="$scratch/empty" ./dev setup --dry-run)"

# 5. No C++ compiler: g++ is installed.
check "no C++ compiler" "g++" \
  "$(DEV_LIBCLANG_DIRS="$scratch/real" DEV_CXX=no-such-compiler-here ./dev setup --dry-run)"

# 6. No Prometheus server (the metrics endpoint's test needs one): Debian's is installed.
check "no prometheus" "prometheus" \
  "$(DEV_LIBCLANG_DIRS="$scratch/real" DEV_PROMETHEUS=no-such-prometheus-here ./dev setup --dry-run)"

# 7. No headless browser (the dashboard's test needs one): Debian's chromium is installed.
check "no chromium" "chromium" \
  "$(DEV_LIBCLANG_DIRS="$scratch/real" DEV_CHROMIUM=no-such-chromium-here ./dev setup --dry-run)"

# 8. No JDK (typeinfo-flink-compat's goldens are compared with what Flink writes): Debian's.
check "no javac" "openjdk-17-jdk-headless" \
  "$(DEV_LIBCLANG_DIRS="$scratch/real" DEV_JAVAC=no-such-javac-here ./dev setup --dry-run)"

# 9. No Flink jars: the wheel is named (downloaded by the set-up, not at test time).
check "no flink jars" "apache-flink-libraries" \
  "$(DEV_LIBCLANG_DIRS="$scratch/real" FLINK_BENCH_DIR="$scratch/no-flink" ./dev setup --dry-run)"

# 10. This machine after set-up: nothing to install (the real search folders).
check "this machine" "nothing to install" "$(./dev setup --dry-run)"

echo "dev setup: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
