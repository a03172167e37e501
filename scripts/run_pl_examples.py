#!/usr/bin/env python3
"""Runs hw-native-sys pypto's examples (seed 002's ``pypto.language`` programs) here, unchanged,
and counts what passes.

hw-native-sys pypto is not part of this repository; point this script at a checkout of it (a
work tree, or a bare git directory such as the search tool's mirror):

    python scripts/run_pl_examples.py /tmp/hw-pypto [--timeout 600] [-k NAME]

Every script under ``examples/`` with a ``__main__`` block (``distributed/`` included: its ranks are
processes of this host, docs/distributed.md) runs as
``python SCRIPT`` from the checkout's root (copied to a temporary directory first; nothing is
modified), with this installation's ``pypto``. A script passes when it exits 0 without printing
upstream's own SKIP notice; the table gives each outcome and, for a failure, the last error line,
then a count per folder.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Dict, List, Tuple


def checkout_copy(src: Path, dst: Path) -> Path:
    """The checkout's examples/ (and what they import beside it) in `dst`."""
    if (src / "examples").is_dir():
        subprocess.run(["cp", "-r", str(src / "examples"), str(dst / "examples")], check=True)
    else:
        archive = subprocess.run(["git", "-C", str(src), "archive", "HEAD", "examples"], capture_output=True,
                                 check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dst)], input=archive, check=True)
    return dst


def last_error(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if any(w in ln for w in ("Error", "error:", "Exception", "assert")) and not ln.startswith("File "):
            return ln[:160]
    return lines[-1][:160] if lines else ""


def run_one(root: Path, script: Path, timeout: float) -> Tuple[str, float, str]:
    env = dict(os.environ, PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               PYTHONUNBUFFERED="1")
    t0 = time.monotonic()
    try:
        text = script.read_text(errors="replace")
        if "\nfrom ." in text or "\nimport ." in text:  # a package's module: run it as one (python -m)
            module = ".".join(script.relative_to(root).with_suffix("").parts)
            cmd = [sys.executable, "-m", module]
        else:
            cmd = [sys.executable, str(script)]
        p = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", time.monotonic() - t0, ""
    dt = time.monotonic() - t0
    out = p.stdout + p.stderr
    if p.returncode != 0:
        return "fail", dt, last_error(out)
    if "SKIP" in out.upper():
        return "skipped", dt, last_error(p.stdout)
    return "pass", dt, ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkout", type=Path)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("-k", default="", help="run only scripts whose path contains this")
    args = ap.parse_args()
    results: List[Tuple[str, str, float, str]] = []
    with tempfile.TemporaryDirectory(prefix="pl-examples-") as tmp:
        root = checkout_copy(args.checkout, Path(tmp))
        scripts = sorted(p for p in (root / "examples").rglob("*.py")
                         if p.name != "__init__.py"
                         and "__main__" in p.read_text(errors="replace"))
        for s in scripts:
            rel = str(s.relative_to(root / "examples"))
            if args.k and args.k not in rel:
                continue
            outcome, dt, err = run_one(root, s, args.timeout)
            results.append((rel, outcome, dt, err))
            print(f"{rel:55s} {outcome:8s} {dt:6.1f}s  {err}", flush=True)
    per: Dict[str, Dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for rel, outcome, _, _ in results:
        per[rel.split("/")[0]][outcome] += 1
    print()
    for folder, counts in sorted(per.items()):
        print(f"{folder:14s} " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    passed = sum(1 for r in results if r[1] == "pass")
    print(f"\n{passed}/{len(results)} examples passed")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
