#!/usr/bin/env bash
# Installs PyPTO and runs the demo: compiles the seed softmax, checks it against numpy and
# prints its speed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
python3 examples/softmax_demo.py
