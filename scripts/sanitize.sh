#!/usr/bin/env bash
# Builds and runs the C++ tests under sanitizers: `bash scripts/sanitize.sh thread` (TSan, for
# the runtime) or `bash scripts/sanitize.sh address,undefined` (ASan + UBSan). Default: both.
set -euo pipefail
cd "$(dirname "$0")/.."
modes=("$@")
[ ${#modes[@]} -eq 0 ] && modes=(thread address,undefined)
for mode in "${modes[@]}"; do
  dir="build/sanitize-${mode//,/-}"
  echo "[sanitize] $mode -> $dir"
  cmake -S . -B "$dir" -G Ninja -DPYPTO_BUILD_TESTS=ON -DPYPTO_SANITIZE="$mode" \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$dir" -j 2
  TSAN_OPTIONS=halt_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    ctest --test-dir "$dir" --output-on-failure -j 2
done
