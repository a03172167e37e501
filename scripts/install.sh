#!/usr/bin/env bash
# Installs everything PyPTO needs on a fresh Debian machine with Python 3.9+, then builds and
# installs the package in editable mode. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null; then SUDO="sudo"; fi

need_apt=()
command -v g++ >/dev/null || need_apt+=(g++)
dpkg -s libgtest-dev >/dev/null 2>&1 || need_apt+=(libgtest-dev)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "[install] apt-get install ${need_apt[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

# Headless Chromium renders graph.html / swimlane.html in tests/python/test_tools_browser.py
# (those tests are skipped without it, so a failure here is not fatal).
if ! command -v chromium >/dev/null; then
  echo "[install] apt-get install chromium (browser tests of the debug pages)"
  $SUDO apt-get update -qq >/dev/null 2>&1 || true
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null \
    || echo "[install] chromium unavailable: the browser tests will be skipped"
fi

echo "[install] pip packages"
python3 -m pip install -q "scikit-build-core>=0.10" "nanobind>=2.0" "numpy>=1.22" "pytest>=7" "pytest-xdist>=3" cmake ninja
# PyTorch (CPU build) is the baseline of the demo and benchmarks and is used by the interop
# tests. Pin the version: an unpinned `torch` pulls a multi-GB CUDA build.
if ! python3 -c "import torch" >/dev/null 2>&1; then
  python3 -m pip install -q "torch==2.13.0" || echo "[install] torch unavailable: torch comparisons will be skipped"
fi

# MPI for ranks that span hosts (python/pypto/dist/engine.py): mpi4py and the MPICH wheel (its
# mpiexec and libmpi), both from PyPI.
python3 -m pip install -q "mpi4py>=4.0" "mpich>=4.2" || echo "[install] MPI unavailable: the multi-host tests will be skipped"

echo "[install] building pypto (pip install -e .)"
python3 -m pip install -q --no-build-isolation -e .
# What every generated kernel includes, precompiled once here instead of at the first call.
python3 -m pypto.cli prebuild || echo "[install] prebuild failed: the first kernel of each new cache builds it"
python3 -c "import pypto; print('[install] pypto', pypto.__version__, 'ready')"
