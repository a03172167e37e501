#!/usr/bin/env bash
# Builds and runs the tests under sanitizers:
#   bash scripts/sanitize.sh thread              TSan over the C++ tests (the runtime's threads)
#   bash scripts/sanitize.sh address,undefined   ASan + UBSan over the C++ tests
#   bash scripts/sanitize.sh python [pytest args] the Python extension built with ASan + UBSan,
#                                                 (test files among the args: only those run)
#                                                 and the Python tests run against it (not the
#                                                 browser tests: Chromium does not run with the
#                                                 ASan runtime preloaded)
# Default: thread, then address,undefined.
set -euo pipefail
cd "$(dirname "$0")/.."
modes=("$@")
[ ${#modes[@]} -eq 0 ] && modes=(thread address,undefined)

if [ "${modes[0]}" = python ]; then
  shift || true
  # The extension with ASan + UBSan, unpacked beside the tree; the tests import it instead of
  # the installed pypto (sitecustomize drops the editable install's finder).
  dir=build/sanitize-python
  rm -rf "$dir/dist" "$dir/pkg" && mkdir -p "$dir/dist" "$dir/pkg" "$dir/site"
  python3 -m pip wheel . --no-build-isolation --no-deps -q -w "$dir/dist" \
    -C cmake.define.PYPTO_SANITIZE=address,undefined -C cmake.build-type=RelWithDebInfo \
    -C build-dir="$dir/build"
  python3 -m zipfile -e "$dir"/dist/*.whl "$dir/pkg"
  cat > "$dir/site/sitecustomize.py" <<PY
import sys
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
sys.path.insert(0, "$PWD/$dir/pkg")
PY
  asan=$(gcc -print-file-name=libasan.so)
  # libstdc++ preloaded too: ASan's __cxa_throw interceptor needs it at start-up (Python itself
  # does not link it). Python is not instrumented: its allocations are not leaks of ours.
  # Reports go to files too: pytest captures the stderr of a test that aborts, so a report on
  # stderr alone can vanish with it.
  reports="$dir/reports"
  rm -rf "$reports" && mkdir -p "$reports"
  status=0
  # Test files or folders among the arguments are what runs; else the whole Python suite.
  where=(tests/python)
  for a in "$@"; do [[ "$a" == tests/* ]] && where=() && break; done
  LD_PRELOAD="$asan $(gcc -print-file-name=libstdc++.so)" PYTHONPATH="$PWD/$dir/site" PYPTO_INCLUDE_DIR="$PWD/include" PYPTO_SANITIZED=1 \
    ASAN_OPTIONS=detect_leaks=0:halt_on_error=1:log_path="$PWD/$reports/asan" \
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:log_path="$PWD/$reports/ubsan" \
    python3 -m pytest "${where[@]}" -q -p no:cacheprovider --ignore=tests/python/test_tools_browser.py "$@" || status=$?
  if compgen -G "$reports/*" >/dev/null; then
    echo "[sanitize] reports:"
    for f in "$reports"/*; do echo "== $f"; head -40 "$f"; done
    status=1
  fi
  exit $status
fi

for mode in "${modes[@]}"; do
  dir="build/sanitize-${mode//,/-}"
  echo "[sanitize] $mode -> $dir"
  cmake -S . -B "$dir" -G Ninja -DPYPTO_BUILD_TESTS=ON -DPYPTO_SANITIZE="$mode" \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$dir" -j 2
  TSAN_OPTIONS=halt_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    ctest --test-dir "$dir" --output-on-failure -j 2
done
