"""Reports: the signature grouping mismatches, a mismatch's description, a standalone reproducer
script, the batch summary and the markdown report."""

from __future__ import annotations

import base64
import re
import sys
from collections import Counter, defaultdict
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from .bounds import OT
from .common import np_dtype, to_storage
from .program import Program, call_params, make_inputs

def signature(prog: Program, out: Any) -> str:
    """Groups mismatches: failing modes, what went wrong, the output dtype(s)."""
    if out.status == "mismatch" and "exception" in out.flags:
        short = out.message.split(":")[0]
        return f"{'+'.join(out.modes)}|exception:{short}|{prog.dtype}"
    return f"{'+'.join(out.modes) or 'cpu-vs-interp'}|{','.join(out.flags)}|{prog.dtype}"



def standalone(prog: Program, src: str, inputs: Dict[str, np.ndarray], oracle: Optional[List[OT]]) -> str:
    """A self-contained script: the program, its inputs (exact bytes) and the oracle's outputs; a
    program with a dynamic dim is called once per size (its later calls' inputs are regenerated)."""
    lines = ["# Reproducer from python -m pypto.fuzz "
             f"(seed {prog.seed}, program {prog.index}{', shrunk' if prog.shrunk else ''})",
             "import base64, numpy as np", src.replace("import pypto\n", "import pypto\n", 1), ""]
    lines.append("def arr(b64, dtype, shape):")
    lines.append("    return np.frombuffer(base64.b64decode(b64), dtype).reshape(shape).copy()")
    lines.append("")
    calls = []
    for c in range(1 + len(prog.dyn_sizes)):
        ins = inputs if c == 0 else make_inputs(prog, c)
        suffix = f"_{c + 1}" if c else ""
        args = []
        for p in call_params(prog, c):
            if p.role == "in":
                st = to_storage(p.dt, ins[p.name])
                lines.append(f"{p.name}{suffix} = arr({base64.b64encode(st.tobytes()).decode()!r}, np.{st.dtype.name}, "
                             f"{tuple(st.shape)!r})  # {p.dt}")
            else:
                st = to_storage(p.dt, np.zeros(p.shape, np_dtype(p.dt)))
                lines.append(f"{p.name}{suffix} = np.zeros({tuple(st.shape)!r}, np.{st.dtype.name})  # {p.dt} output")
            args.append(p.name + suffix)
        calls.append(args)
    # the outputs holding bf16 bits (numpy uint16; a DT_UINT16 output is uint16 too)
    if oracle is not None:
        bf16 = [k for k, o in enumerate(oracle[:len(oracle) // len(calls)]) if o.dt == "bf16"]
    else:
        bf16 = [k for k, p in enumerate(p for p in prog.params if p.role == "out") if p.dt == "bf16"]
    lines.append("for mode in ('cpu', 'interp'):")
    lines.append("    pypto.set_runtime_options(run_mode=mode)")
    for args in calls:
        lines.append(f"    res = fuzz({', '.join(args)})")
        outs = [a for a, p in zip(args, prog.params) if p.role == "out"]
        if outs:
            lines.append(f"    res = ({', '.join(outs)},)")
        else:
            lines.append("    res = res if isinstance(res, tuple) else (res,)")
        lines.append("    for k, r in enumerate(res):")
        lines.append(f"        r = (r.astype(np.uint32) << 16).view(np.float32) if k in {bf16!r} else r")
        lines.append("        print(mode, k, np.array2string(np.asarray(r), threshold=64, precision=9))")
    if oracle is not None:
        for k, o in enumerate(oracle):
            vals = " ".join(np.array2string(o.v.reshape(-1)[:16], precision=9).split())
            lines.append(f"# expected output {k} ({o.dt}), first values: {vals}")
    return "\n".join(lines) + "\n"


def describe(prog: Program, out: Any, src: str) -> str:
    head = (f"=== {out.status.upper()} seed {prog.seed} program {prog.index} [{prog.category}] "
            f"flags={','.join(out.flags)} modes={','.join(out.modes)}")
    regen = (f"regenerate: python -m pypto.fuzz --seed {prog.seed} --index {prog.index} "
             f"--dtypes {prog.dtypes} --show")
    data = ", ".join(f"{p.name}: {p.dt}{list(p.shape)} {p.style}{' +edges' if p.edges else ''}"
                     for p in prog.params if p.role == "in")
    return "\n".join([head, src.rstrip(), f"# inputs: {data}", out.detail, regen if not prog.shrunk else
                      "(shrunk program; inputs are those of the original with the same parameter names; "
                      "use --emit on the original or the repro script)", ""])


# --------------------------------------------------------------------------------------------
# workers and the driver


def summarize(recs: List[Dict[str, Any]], seed: int, elapsed: float, max_reports: int,
              out: Any = sys.stdout) -> Tuple[int, str]:
    """Prints the per-category summary, the reports, and the final line; returns (mismatches, md)."""
    by_cat: Dict[str, Counter] = defaultdict(Counter)
    for r in recs:
        by_cat[r["category"]][r["status"]] += 1
        by_cat[r["category"]]["_checked"] += r["checked"]
        by_cat[r["category"]]["_uncertain"] += r["uncertain"]
    p = lambda s="": print(s, file=out)  # noqa: E731
    p("per category (dtype/kind): ok, mismatches, expected errors, unsupported, fuzzer errors; "
      "elements checked / uncertain")
    for cat in sorted(by_cat):
        c = by_cat[cat]
        p(f"  {cat:<22} {c['ok']:5d} ok {c['mismatch']:4d} mismatch {c['expected_error']:4d} expected-error "
          f"{c['unsupported']:4d} unsupported {c['fuzz_error']:3d} fuzz-error   {c['_checked']:8d} / {c['_uncertain']}")
    mism = [r for r in recs if r["status"] == "mismatch"]
    ferr = [r for r in recs if r["status"] == "fuzz_error"]
    exp = [r for r in recs if r["status"] == "expected_error"]
    uns = [r for r in recs if r["status"] == "unsupported"]
    amb = sum(r.get("ambiguous", 0) for r in recs)
    groups: Dict[str, List[Dict[str, Any]]] = defaultdict(list)
    for r in mism + ferr:
        groups[r.get("signature", "?")].append(r)
    if groups:
        p("\nmismatches by signature (failing modes | flags | program dtype): count, programs")
        for sig, rs in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            ops = Counter(o for r in rs for o in r["ops"])
            common = ",".join(o for o, n in ops.most_common(6))
            p(f"  {len(rs):5d}  {sig}  e.g. {', '.join(str(r['index']) for r in rs[:8])}  (ops: {common})")
    if uns:
        p("\nunsupported (pypto.UserError on every mode, no error expected):")
        for msg, n in Counter(r["signature"] for r in uns).most_common(20):
            p(f"  {n:5d}  {msg}")
    if exp:
        no_line = sum(1 for r in exp if "error-without-line" in r["flags"])
        p(f"\nexpected errors (UserErrors the contract requires, each raised by every mode): {len(exp)}"
          + (f" ({no_line} without the program's line in the message)" if no_line else ""))
        why = Counter(re.sub(r"pypto\.\w+(?=:| on| over)", "pypto.<op>",
                             re.sub(r"(?<![\w.])-?\d[\d.e+]*", "N", r["signature"])) for r in exp)
        for msg, n in why.most_common(12):
            p(f"  {n:5d}  {msg}")
    shown = 0
    for sig, rs in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        for r in rs[:2]:
            if shown >= max_reports:
                break
            p("")
            p(r["report"])
            if r.get("shrunk"):
                p("--- shrunk:")
                p(r["shrunk"])
            shown += 1
    cov: Counter = Counter()
    for r in recs:
        cov.update(r.get("coverage") or {})
    tot_checked = sum(r["checked"] for r in recs)
    tot_unc = sum(r["uncertain"] for r in recs)
    p(f"\nelements compared: {tot_checked} (of them NaN {cov['nan']}, +-inf {cov['inf']}, subnormal "
      f"{cov['subnormal']}, zero {cov['zero']}); not determined by the contract (skipped): {tot_unc}")
    n = len(recs)
    times = [r["time"] for r in recs]
    p(f"\nelapsed {elapsed:.1f} s, {n / max(elapsed, 1e-9) * 60:.0f} programs/minute "
      f"(per program: median {np.median(times) if times else 0:.2f} s); ambiguous oracle elements: {amb}")
    final = (f"fuzz: {n} programs, seed {seed}, {len(mism)} mismatches, {len(exp)} expected errors, "
             f"{len(uns)} unsupported" + (f", {len(ferr)} fuzzer errors" if ferr else ""))
    p(final)
    return len(mism) + len(ferr), final



def write_markdown(path: str, recs: List[Dict[str, Any]], final: str, argv: List[str]) -> None:
    groups: Dict[str, List[Dict[str, Any]]] = defaultdict(list)
    for r in recs:
        if r["status"] in ("mismatch", "fuzz_error"):
            groups[r.get("signature", "?")].append(r)
    with open(path, "w") as f:
        f.write(f"# fuzz run\n\n`{' '.join(argv)}`\n\n{final}\n\n")
        for sig, rs in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            f.write(f"## {sig} ({len(rs)} programs: {', '.join(str(r['index']) for r in rs[:30])})\n\n")
            r = next((x for x in rs if x.get("shrunk")), rs[0])
            f.write("```\n" + r["report"] + "```\n\n")
            if r.get("shrunk"):
                f.write("shrunk:\n\n```\n" + r["shrunk"] + "```\n\n")

