#!/usr/bin/env bash
# Installs PyPTO and runs every test: the C++ suites (GoogleTest via ctest) and the Python
# suite (pytest).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh

echo "[test] C++ (GoogleTest via ctest)"
cmake -S . -B build/cpp-tests -G Ninja -DPYPTO_BUILD_TESTS=ON -DPYPTO_WERROR=ON -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/cpp-tests -j 2
ctest --test-dir build/cpp-tests --output-on-failure -j 2

# Two processes: a fresh machine compiles every kernel once, and two compilers at a time halve
# that on 2 cores (the kernel cache is safe across processes: atomic renames).
echo "[test] Python (pytest, 2 processes)"
python3 -m pytest tests/python -q -n 2
