#!/usr/bin/env python3
"""Runs PyAsc's tutorials here with only their imports changed, and counts what passes.

PyAsc (https://github.com/hicann/pyasc) is not part of this repository; point this script at a
checkout of it, a work tree or a bare git directory (then its HEAD is read with ``git archive``):

    git clone https://github.com/hicann/pyasc /tmp/pyasc
    python scripts/run_pyasc_tutorials.py /tmp/pyasc [--timeout 600] [-k NAME]

The tutorials (python/tutorials/*/*.py) are copied to a temporary directory, where their imports
of PyAsc become imports of ``pypto.asc`` (``import asc`` -> ``import pypto.asc as asc``,
``import asc.X as Y`` -> ``import pypto.asc.X as Y``, ``from asc.X import Y`` -> ``from
pypto.asc.X import Y``) on the same lines, and nothing else changes. Each script then runs as
``python SCRIPT`` in its folder (its default backend, checked by its own asserts), one line per
tutorial with the outcome, the time and, for a failure, the last line of the error; then the
count (``5/5 passed``). The exit status is 1 when any fails, 2 when the checkout has no
tutorials.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import List, Tuple

TUTORIALS = Path("python") / "tutorials"

# PyAsc's imports and their pypto.asc spelling, line by line (the line count stays the same).
_IMPORTS: List[Tuple[re.Pattern, str]] = [
    (re.compile(r"^(\s*)import asc(\s*(?:#.*)?)$"), r"\1import pypto.asc as asc\2"),
    (re.compile(r"^(\s*)import asc as (\w+)"), r"\1import pypto.asc as \2"),
    (re.compile(r"^(\s*)import asc\.([\w.]+) as (\w+)"), r"\1import pypto.asc.\2 as \3"),
    (re.compile(r"^(\s*)import asc\.([\w.]+)(\s*(?:#.*)?)$"), r"\1import pypto.asc.\2; import pypto.asc as asc\3"),
    (re.compile(r"^(\s*)from asc((?:\.[\w.]+)?) import "), r"\1from pypto.asc\2 import "),
]


def rewrite_imports(text: str) -> str:
    """`text` with each import of PyAsc's ``asc`` package made an import of ``pypto.asc``."""
    out = []
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        end = line[len(body):]
        for pattern, repl in _IMPORTS:
            new, n = pattern.subn(repl, body)
            if n:
                body = new
                break
        out.append(body + end)
    return "".join(out)


def copy_tutorials(src: Path, dest: Path) -> bool:
    """The checkout's python/tutorials into dest/python/tutorials: copied from a work tree, or
    from HEAD of a git directory (a bare one too). False when there are none."""
    if (src / TUTORIALS).is_dir():
        shutil.copytree(src / TUTORIALS, dest / TUTORIALS)
        return True
    try:
        p = subprocess.run(["git", "--git-dir" if _is_git_dir(src) else "-C", str(src), "archive", "--format=tar",
                            "HEAD", TUTORIALS.as_posix()], capture_output=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired):
        return False
    if p.returncode != 0:
        return False
    with tarfile.open(fileobj=io.BytesIO(p.stdout)) as tar:
        if sys.version_info >= (3, 12) or hasattr(tarfile, "data_filter"):
            tar.extractall(dest, filter="data")
        else:  # pragma: no cover - old Pythons without extraction filters
            tar.extractall(dest)
    return (dest / TUTORIALS).is_dir()


def _is_git_dir(path: Path) -> bool:
    """Whether `path` is a git directory itself (a bare repository, or a .git folder)."""
    return (path / "HEAD").is_file() and (path / "objects").is_dir()


def last_error(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if any(w in ln for w in ("Error", "error:", "Exception", "assert")) and not ln.startswith("File "):
            return ln[:200]
    return lines[-1][:200] if lines else ""


def run(script: Path, timeout: float) -> Tuple[str, float, str]:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    t0 = time.monotonic()
    try:
        p = subprocess.run([sys.executable, script.name], cwd=script.parent, env=env, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", time.monotonic() - t0, f"more than {timeout:g} s"
    dt = time.monotonic() - t0
    if p.returncode == 0:
        return "pass", dt, ""
    return "fail", dt, last_error(p.stdout + p.stderr)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkout", help="a checkout of hicann/pyasc (a work tree or a git directory)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per tutorial")
    ap.add_argument("-k", default="", help="only tutorials whose path contains this text")
    ap.add_argument("--keep", action="store_true", help="keep the rewritten copies (their folder is printed)")
    args = ap.parse_args()
    src = Path(args.checkout).resolve()
    work = Path(tempfile.mkdtemp(prefix="pyasc-tutorials-"))
    try:
        if not copy_tutorials(src, work):
            print(f"{src} has no {TUTORIALS.as_posix()}/ (in its work tree or at HEAD): is it a checkout of "
                  "hicann/pyasc?", file=sys.stderr)
            return 2
        scripts = []
        for f in sorted((work / TUTORIALS).rglob("*.py")):
            text = f.read_text(encoding="utf-8")
            f.write_text(rewrite_imports(text), encoding="utf-8")
            if "__main__" in text and args.k in str(f.relative_to(work)):
                scripts.append(f)
        if not scripts:
            print(f"no tutorial script in {src / TUTORIALS}" + (f" matching {args.k!r}" if args.k else ""),
                  file=sys.stderr)
            return 2
        print(f"{'tutorial':56} {'result':8} {'s':>6}  error")
        passed = 0
        for f in scripts:
            outcome, dt, err = run(f, args.timeout)
            passed += outcome == "pass"
            print(f"{f.relative_to(work / TUTORIALS).as_posix():56} {outcome:8} {dt:6.1f}  {err}", flush=True)
        print(f"\n{passed}/{len(scripts)} passed")
        if args.keep:
            print(f"the rewritten tutorials: {work / TUTORIALS}")
        return 0 if passed == len(scripts) else 1
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
