#!/usr/bin/env python3
"""Splits a CANN PyPTO model test's memory into its phases: the golden data, pypto's call, the
comparisons (docs/footprint.md). For each: the process's peak RSS during it (VmHWM, reset before
it through /proc/self/clear_refs), RSS before and after, pypto's own peak (pypto.memory_stats()),
and the dense copies pypto makes of strided arguments.

    python scripts/cann_memory_phases.py CHECKOUT "deepseekv32_mla_prolog_quant.py::test_b64_s64k2_pa_nd_bf16_d" \\
        --s2 8192 --memory-limit 14 --npuarch DAV_3510

`--s2 N` runs at a KV length of N instead of the test's 65536 (the mla test's s2 and actual_seq,
the sparse attention case's lengths times N / 65536). The test runs in a copy of
models/deepseek_v32_exp, as a subprocess killed past `--memory-limit` GiB of RSS. This file is
also the pytest plugin the subprocess loads (-p cann_memory_phases).
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, Callable, Dict

OUT = os.environ.get("CANN_PHASES_OUT", "")
S2 = int(os.environ.get("CANN_PHASES_S2", "0"))
PHASES = {"gen_mla_prolog_quant_v32_data": "golden", "gen_gather_select_attention_golden_aq": "golden",
          "gen_gather_select_attention_golden_aq_950": "golden", "mla_prolog_quant_d": "pypto",
          "mla_prolog_quant_p": "pypto", "sparse_attention_antiquant_d": "pypto",
          "sparse_attention_antiquant_d_950": "pypto", "sparse_attention_antiquant_p": "pypto", "compare": "compare"}


def _status(key: str) -> int:
    with open("/proc/self/status") as f:
        for ln in f:
            if ln.startswith(key + ":"):
                return int(ln.split()[1]) * 1024
    return 0


def _log(rec: Dict[str, Any]) -> None:
    if OUT:
        with open(OUT, "a") as f:
            f.write(json.dumps(rec) + "\n")


def _wrap(mod: Any, name: str, phase: str) -> None:
    fn = getattr(mod, name, None)
    if fn is None or getattr(fn, "_phases", False):
        return
    import pypto

    def wrapped(*a: Any, **k: Any) -> Any:
        if S2 and name == "gen_mla_prolog_quant_v32_data":  # params is shared with the pypto call
            import torch
            a[0]["s2"] = S2
            a = (a[0], a[1], torch.tensor([S2] * a[0]["b"], dtype=torch.int32).unsqueeze(-1)) + tuple(a[3:])
        rss0 = _status("VmRSS")
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM
        base = pypto.reset_peak_memory().live
        t0 = time.time()
        r = fn(*a, **k)
        _log({"phase": phase, "fn": name, "rss_before": rss0, "hwm": _status("VmHWM"), "rss_after": _status("VmRSS"),
              "pypto_peak": pypto.memory_stats().peak - base, "seconds": time.time() - t0})
        return r

    wrapped._phases = True  # type: ignore[attr-defined]
    setattr(mod, name, wrapped)


def pytest_configure(config: Any) -> None:
    from pypto.core import memory

    init: Callable[..., None] = memory._Counted.__init__

    def counted(self: Any, nbytes: int) -> None:
        init(self, nbytes)
        _log({"phase": "staged", "fn": "dense copy of a strided argument", "bytes": int(nbytes)})

    memory._Counted.__init__ = counted  # type: ignore[method-assign]


def pytest_collection_modifyitems(session: Any, config: Any, items: Any) -> None:
    for item in items:
        mod = item.module
        for name, phase in PHASES.items():
            _wrap(mod, name, phase)
        if S2 and hasattr(mod, "get_case_config") and not getattr(mod.get_case_config, "_phases", False):
            orig = mod.get_case_config

            def scaled(case_name: str, _orig: Any = orig) -> Any:
                bn, quant, seq = _orig(case_name)
                return bn, quant, [max(1, s * S2 // 65536) for s in seq]

            scaled._phases = True  # type: ignore[attr-defined]
            mod.get_case_config = scaled


def main() -> int:
    import argparse
    import shutil
    import tempfile
    from pathlib import Path

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import run_cann_examples

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("repo", help="a checkout of hicann/pypto")
    ap.add_argument("test", help="FILE::TEST in models/deepseek_v32_exp")
    ap.add_argument("--s2", type=int, default=0, help="the KV length to run at (default: the test's)")
    ap.add_argument("--memory-limit", type=float, default=14.0, help="GiB of RSS past which the test is killed")
    ap.add_argument("--npuarch", default="", help="PYPTO_NPUARCH (DAV_3510: the 950 tests)")
    ap.add_argument("--timeout", type=float, default=3000)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cann-phases-"))
    shutil.copytree(Path(args.repo) / "models" / "deepseek_v32_exp", work / "models")
    out = work / "phases.jsonl"
    os.environ.update(CANN_PHASES_OUT=str(out), CANN_PHASES_S2=str(args.s2),
                      PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.abspath(__file__)),
                                                  os.environ.get("PYTHONPATH", "")]))
    if args.npuarch:
        os.environ["PYPTO_NPUARCH"] = args.npuarch
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "pypto.npu_compat", "-p", "cann_memory_phases", "-p",
           "no:cacheprovider", args.test]
    outcome, dt, err, mem = run_cann_examples.run(cmd, work / "models", args.timeout, args.memory_limit * 2**30)
    print(f"{args.test}: {outcome} in {dt:.0f} s, peak RSS {mem['rss'] / 2**30:.2f} GiB  {err}")
    for ln in out.read_text().splitlines() if out.exists() else []:
        r = json.loads(ln)
        if r["phase"] == "staged":
            print(f"  {'staged':8} {r['fn']:44} {r['bytes'] / 2**20:9.1f} MiB")
        else:
            print(f"  {r['phase']:8} {r['fn']:44} RSS {r['rss_before'] / 2**30:6.2f} -> {r['rss_after'] / 2**30:6.2f} "
                  f"GiB, peak {r['hwm'] / 2**30:6.2f} GiB, pypto peak {r['pypto_peak'] / 2**30:6.3f} GiB, "
                  f"{r['seconds']:.0f} s")
    shutil.rmtree(work, ignore_errors=True)
    return 0 if outcome == "pass" else 1


if __name__ == "__main__":
    sys.exit(main())
