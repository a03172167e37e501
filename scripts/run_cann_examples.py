#!/usr/bin/env python3
"""Runs CANN PyPTO's own examples and model tests here, unchanged, and counts what passes.

CANN PyPTO (https://github.com/hicann/pypto) is not part of this repository; point this script at
a checkout of it:

    git clone https://github.com/hicann/pypto /tmp/cann-pypto
    python scripts/run_cann_examples.py /tmp/cann-pypto [--models] [--operations] [--st] [--timeout 600] [-k NAME]

Each example script runs as ``pypto run SCRIPT`` (the NPU device mapped to the CPU by
pypto.npu_compat, the kernel code as written, in its NPU run mode, where its checks run); each
model test file runs as ``python -m pytest -p pypto.npu_compat FILE``; ``--operations`` also runs
PyPTO's operation tests (python/tests/st/operation/vector and matmul, the vector ones in its older
``pypto.function`` interface), one pytest run per folder, and counts them test by test (their helpers come
from the checkout's python/tests and framework/tests). The table gives the outcome,
the seconds, the memory (the test process's peak RSS, and pypto's own peak in it as
pypto.memory_stats() reports it at exit: in use, and with its reuse pool) and, for a failure,
the last line of the error; ``--memory-limit GIB`` kills a test whose processes pass that RSS.
Nothing in the checkout is modified: the files are copied to a temporary directory first.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Dict, List, Tuple

SKIP = {"validate_examples.py", "__init__.py"}


def last_error(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if any(w in ln for w in ("Error", "error:", "FAILED", "Exception", "assert")) and not ln.startswith("File "):
            return ln[:200]
    return lines[-1][:200] if lines else ""


def tree_rss(pid: int) -> int:
    """Resident bytes of `pid` and its descendants now (/proc), 0 once it is gone."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/status") as f:
                for ln in f:
                    if ln.startswith("VmRSS:"):
                        total += int(ln.split()[1]) * 1024
                        break
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except (OSError, ValueError):
            continue
    return total


def run(cmd: List[str], cwd: Path, timeout: float, memory_limit: float = 0.0) -> Tuple[str, float, str, Dict[str, float]]:
    """Runs one test process: (outcome, seconds, error, memory) where memory holds the process's
    peak RSS ("rss", bytes: its own, from wait4, or its tree's as polled when that was larger) and
    pypto's own peaks in it ("pypto", "pypto_held": pypto.memory_stats() at exit; absent when the
    process did not exit normally). Past `memory_limit` bytes of RSS in its tree the process is
    killed (outcome "memory cap"), so a test too large for the machine ends before the OOM killer
    takes something else."""
    report = Path(tempfile.mkstemp(prefix="pypto-mem-", suffix=".json")[1])
    env = dict(os.environ, TILE_FWK_DEVICE_ID="0", PYTHONUNBUFFERED="1", PYPTO_MEMORY_REPORT=str(report))
    t0 = time.monotonic()
    polled = [0]
    ended: List[str] = []
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=err, start_new_session=True)

        def watch() -> None:  # the timeout and the memory cap, every 0.2 s
            while p.returncode is None and not ended:
                rss = tree_rss(p.pid)
                polled[0] = max(polled[0], rss)
                why = ("timeout" if time.monotonic() - t0 > timeout
                       else "memory cap" if memory_limit and rss > memory_limit else "")
                if why:
                    ended.append(why)
                    try:
                        os.killpg(p.pid, signal.SIGKILL)
                    except OSError:
                        pass
                    return
                time.sleep(0.2)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        if not ended:
            ended.append("")  # stops the watcher
        watcher.join()
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode(errors="replace")
        stderr = err.read().decode(errors="replace")
    dt = time.monotonic() - t0
    memory: Dict[str, float] = {"rss": max(usage.ru_maxrss * 1024, polled[0])}  # ru_maxrss: KiB on Linux
    try:
        stats = json.loads(report.read_text() or "{}")
        memory.update({"pypto": stats["peak"], "pypto_held": stats["peak_held"]})
    except (OSError, ValueError, KeyError):
        pass
    report.unlink(missing_ok=True)
    if ended[0]:
        return ended[0], dt, f"killed at {polled[0] / 2**30:.1f} GiB of RSS" if ended[0] == "memory cap" else "", memory
    text = stdout + stderr
    if p.returncode == 0:
        last = stdout.strip().splitlines()[-1] if stdout.strip() else ""
        if "skipped" in last and "passed" not in last:
            return "skipped", dt, last, memory
        return "pass", dt, "", memory
    if p.returncode == 5:  # pytest: no tests collected
        return "no tests", dt, last_error(text), memory
    return "fail", dt, last_error(text), memory


def gib(b: float) -> str:
    """GiB with two decimals; "-" when not known (-1)."""
    return "-" if b < 0 else f"{b / 2**30:.2f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("repo", help="a checkout of hicann/pypto")
    ap.add_argument("--models", action="store_true", help="also run the model tests (models/*/test_*.py)")
    ap.add_argument("--operations", action="store_true",
                    help="also run the operation tests (python/tests/st/operation/vector and matmul), counted per test")
    ap.add_argument("--unskip", action="store_true",
                    help="with --operations: also run the tests their files skip unconditionally "
                         "(@pytest.mark.skip: 'only local test', ...), on the copies")
    ap.add_argument("--st", action="store_true",
                    help="also run the tensor-level system tests (python/tests/st: its own files, frontend/, "
                         "interface/, operator/, ir/), file by file, counted per test")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per script or test file")
    ap.add_argument("-k", default="", help="only paths containing this text")
    ap.add_argument("--memory-limit", type=float, default=0.0,
                    help="GiB of RSS (a test process and its children) past which a test is killed; "
                         "default: none")
    args = ap.parse_args()
    src = Path(args.repo).resolve()
    if not (src / "examples").is_dir():
        print(f"{src} has no examples/ folder: is it a checkout of hicann/pypto?", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="cann-pypto-"))
    shutil.copytree(src / "examples", work / "examples")
    jobs: List[Tuple[str, List[str], Path]] = []
    for f in sorted((work / "examples").rglob("*.py")):
        if f.name in SKIP or args.k not in str(f):
            continue
        text = f.read_text(encoding="utf-8", errors="replace")
        if "__main__" not in text:
            continue  # a helper module of another example
        cmd = [sys.executable, "-m", "pypto.cli", "run", str(f)]
        if "--run_mode" in text:
            cmd += ["--run_mode", "npu"]
        jobs.append((str(f.relative_to(work)), cmd, f.parent))
    if args.models and (src / "models").is_dir():
        shutil.copytree(src / "models", work / "models")
        for f in sorted((work / "models").rglob("*.py")):
            if args.k not in str(f) or f.name in SKIP:
                continue
            if f.name.startswith("test_"):  # a pytest file
                cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "pypto.npu_compat", "-p", "no:cacheprovider",
                       str(f)]
            elif "__main__" in f.read_text(encoding="utf-8", errors="replace"):  # a script
                cmd = [sys.executable, "-m", "pypto.cli", "run", str(f)]
            else:
                continue  # a module the others import
            jobs.append((str(f.relative_to(work)), cmd, f.parent))
    counts: dict = {}
    # Memory, GiB: the process's peak RSS, and pypto's own peak in it (pypto.memory_stats(): the
    # outputs, tensors and workspaces pypto allocated, in use at once; then with its reuse pool).
    print(f"{'file':64} {'result':10} {'s':>6} {'RSS':>6} {'pypto':>6} {'+pool':>6}  error")
    for name, cmd, cwd in jobs:
        outcome, dt, err, mem = run(cmd, cwd, args.timeout, args.memory_limit * 2**30)
        counts[outcome] = counts.get(outcome, 0) + 1
        print(f"{name:64} {outcome:10} {dt:6.1f} {gib(mem['rss']):>6} {gib(mem.get('pypto', -1)):>6} "
              f"{gib(mem.get('pypto_held', -1)):>6}  {err}", flush=True)
    print("\n" + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) + f" of {len(jobs)}")
    ok = counts.get("pass", 0) == len(jobs)
    if args.operations:
        ok = run_operations(src, work, args.timeout * 4, args.unskip) and ok
    if args.st:
        ok = run_system_tests(src, work, args.timeout, args.k) and ok
    shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


def run_operations(src: Path, work: Path, timeout: float, unskip: bool = False) -> bool:
    """PyPTO's operation tests (the vector and the matmul folders), one pytest run per folder;
    prints the failed tests and the counts. With `unskip`, the unconditional skip marks of the
    copied files are dropped first."""
    import re
    ok = True
    for kind in ("vector", "matmul"):
        folder = src / "python" / "tests" / "st" / "operation" / kind
        if not folder.is_dir():
            print(f"{folder} is missing: no {kind} operation tests", file=sys.stderr)
            ok = False
            continue
        dest = work / "operation" / kind
        shutil.copytree(folder, dest)
        if unskip:
            for f in dest.glob("test_*.py"):
                text = f.read_text(encoding="utf-8")
                f.write_text(re.sub(r"(?m)^@pytest\.mark\.skip\(.*\)\s*$", "", text), encoding="utf-8")
        # The matmul tests import their case tables as `testcase` from their own folder.
        helpers = [dest, src / "python" / "tests", src, src / "framework" / "tests" / "cmake" / "scripts" / "helper"]
        env = dict(os.environ, TILE_FWK_DEVICE_ID="0",
                   PYTHONPATH=os.pathsep.join([*map(str, helpers), os.environ.get("PYTHONPATH", "")]))
        # --noconftest: the checkout's conftest needs pytest-xdist hooks; the harness file
        # test_case_class_vector_operations.py needs its C++ test-case tables (not here).
        cmd = [sys.executable, "-m", "pytest", "-q", "-rf", "--noconftest", "-p", "pypto.npu_compat", "-p",
               "no:cacheprovider", "--continue-on-collection-errors", "--ignore=test_case_class_vector_operations.py",
               "."]
        try:
            p = subprocess.run(cmd, cwd=dest, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            print(f"\n{kind} operation tests: timeout")
            ok = False
            continue
        lines = p.stdout.strip().splitlines()
        print(f"\noperation tests (python/tests/st/operation/{kind}):")
        for ln in lines:
            if ln.startswith(("FAILED", "ERROR")):
                print("  " + ln[:200])
        print("  " + (lines[-1] if lines else p.stderr.strip()[-200:]))
        ok = ok and p.returncode == 0
    return ok


ST_FOLDERS = (".", "frontend", "interface", "operator", "operator/flash_attention_mha",
              "operator/flash_attention_mha_grad", "operator/pg", "operator/distributed", "ir")


def run_system_tests(src: Path, work: Path, timeout: float, only: str) -> bool:
    """PyPTO's system tests of the tensor level (python/tests/st), one pytest run per file, in the
    checkout (their helpers are found by paths relative to it; nothing is written there: no
    bytecode, no cache, the output folders go to a temporary directory), once for each chip the
    tests name (their @pytest.mark.soc: the 910 by default, then PYPTO_NPUARCH=DAV_3510 for the
    950). A test counts as passed or failed on the chips it ran for, skipped when it ran for
    none. operation/ is --operations; pypto_pro/ is the element level. Prints a line per file
    and the totals."""
    import xml.etree.ElementTree as ET

    st = src / "python" / "tests" / "st"
    if not st.is_dir():
        print(f"{st} is missing: no system tests", file=sys.stderr)
        return False
    files = [f for d in ST_FOLDERS for f in sorted((st / d).glob("test_*.py")) if only in str(f)]
    totals: dict = {}
    print(f"\nsystem tests (python/tests/st), per file:\n{'file':64} result")
    for f in files:
        outcome: dict = {}  # test -> passed / failed / skipped, over the chips
        note = ""
        for chip in ("910", "950"):
            env = dict(os.environ, TILE_FWK_DEVICE_ID="0", PYTHONDONTWRITEBYTECODE="1",
                       PYTHONPATH=os.pathsep.join([str(src / "python" / "tests"), str(src),
                                                   os.environ.get("PYTHONPATH", "")]))
            if chip == "950":
                env["PYPTO_NPUARCH"] = "DAV_3510"
            xml = work / "st-result.xml"
            cmd = [sys.executable, "-m", "pytest", "-q", "--noconftest", "-p", "pypto.npu_compat", "-p",
                   "no:cacheprovider", f"--rootdir={work}", f"--junitxml={xml}", str(f)]
            try:
                p = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=timeout)
            except subprocess.TimeoutExpired:
                note = "timeout"
                continue
            if not xml.exists():
                note = last_error(p.stdout + p.stderr)
                continue
            cases = list(ET.parse(xml).getroot().iter("testcase"))
            xml.unlink()
            if not cases and p.returncode not in (0, 5):
                note = last_error(p.stdout + p.stderr)
            for c in cases:
                key = c.get("classname", "") + "." + c.get("name", "")
                got = ("failed" if c.find("failure") is not None or c.find("error") is not None
                       else "skipped" if c.find("skipped") is not None else "passed")
                if got == "failed":
                    note = note or (c.find("failure") if c.find("failure") is not None
                                    else c.find("error")).get("message", "")[:110].replace("\n", " ")
                if outcome.get(key) in (None, "skipped") or got == "failed":
                    outcome[key] = got
        counts: dict = {}
        for v in outcome.values():
            counts[v] = counts.get(v, 0) + 1
            totals[v] = totals.get(v, 0) + 1
        line = ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "no tests"
        print(f"{str(f.relative_to(st)):64} {line}  {note}", flush=True)
    print("  " + ", ".join(f"{v} {k}" for k, v in sorted(totals.items())))
    return not totals.get("failed")


if __name__ == "__main__":
    sys.exit(main())
