"""The fuzzer's command line: `python -m pypto.fuzz --count N --seed S --jobs 2` (see
pypto/fuzz/__init__.py for the flags)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import List, Optional

import numpy as np

from . import __doc__ as DOC
from .bounds import OT
from .common import ALL_DTYPES, from_storage
from .generate import generate, usable_dtypes
from .oracle import oracle_eval
from .program import make_inputs, render
from .report import describe, standalone, summarize, write_markdown
from .run import _apply_pass_options, evaluate, run_batch, worker_main


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pypto.fuzz", description=(DOC or "").split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--start", type=int, default=0, help="first program index")
    ap.add_argument("--dtypes", default=",".join(ALL_DTYPES))
    ap.add_argument("--modes", default="cpu,interp")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (0: run in this process)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per program before it counts as a hang")
    ap.add_argument("--shrink", type=int, default=0, help="shrink up to N mismatches (one per signature)")
    ap.add_argument("--max-reports", type=int, default=12)
    ap.add_argument("--report", default="", help="also write the grouped mismatches as markdown here")
    ap.add_argument("--json", default="", help="write all records as JSON here")
    ap.add_argument("--indices", default="", help="run these programs (comma separated) instead of --start/--count")
    ap.add_argument("--index", type=int, default=None, help="with --show / --emit: the program")
    ap.add_argument("--show", action="store_true", help="print program --index, its inputs and results")
    ap.add_argument("--emit", action="store_true", help="print a standalone repro script of program --index")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--pass-option", action="append", default=[], metavar="KEY=VALUE",
                    help="compile with pypto.set_pass_options(KEY=VALUE), e.g. reciprocal_division=1 (the "
                         "documented fast path: expect mismatches for subnormal divisors)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.pass_option:
        os.environ["PYPTO_FUZZ_PASS_OPTIONS"] = ";".join(args.pass_option)
    _apply_pass_options()
    bad = [d for d in args.dtypes.split(",") if d not in ALL_DTYPES]
    if bad:
        ap.error(f"unknown dtypes {bad}; known: {','.join(ALL_DTYPES)}")
    if args.worker:
        worker_main(args)
        return 0
    dtypes = args.dtypes.split(",")
    skipped = [d for d in dtypes if d not in usable_dtypes(dtypes)]
    if skipped:
        print(f"fuzz: torch is not installed: {','.join(skipped)} programs are skipped (torch is their oracle)",
              file=sys.stderr)
        dtypes = usable_dtypes(dtypes)
        if not dtypes:
            return 1
        args.dtypes = ",".join(dtypes)
    modes = args.modes.split(",")
    if args.show or args.emit:
        if args.index is None:
            ap.error("--show/--emit need --index")
        prog = generate(args.seed, args.index, dtypes)
        src = render(prog)
        inputs = make_inputs(prog)
        try:
            oracle: Optional[List[OT]] = oracle_eval(prog, src, inputs)[0]
        except Exception as e:  # noqa: BLE001
            oracle = None
            print(f"# oracle: {type(e).__name__}: {e}", file=sys.stderr)
        if args.emit:
            print(standalone(prog, src, inputs, oracle))
            return 0
        out, src, inputs, _, res = evaluate(prog, modes)
        print(describe(prog, out, src))
        with np.printoptions(threshold=100000, precision=9, linewidth=150):
            for name, a in inputs.items():
                print(f"{name} =\n{a!r}")
            for k, o in enumerate(oracle or []):
                print(f"expected output {k} ({o.dt}) =\n{o.v!r}\ntolerance =\n{o.e!r}")
            for m, st in (res or {}).items():
                if st[0] == "ok":
                    for k, (dt, a) in enumerate(st[1]):
                        dt = oracle[k].dt if oracle and k < len(oracle) else dt
                        print(f"{m} output {k} =\n{from_storage(dt, a) if dt else a!r}")
                else:
                    print(f"{m}: {st[0]}: {st[1]}")
        return 1 if out.status == "mismatch" else 0
    indices = [int(x) for x in args.indices.split(",") if x.strip()] if args.indices else None
    recs, elapsed = run_batch(args.seed, args.start, args.count, args.dtypes, args.modes, args.jobs, args.timeout,
                              args.shrink, progress=not args.quiet, indices=indices)
    nbad, final = summarize(recs, args.seed, elapsed, args.max_reports)
    if args.report:
        write_markdown(args.report, recs, final, ["python", "-m", "pypto.fuzz"] + (argv or sys.argv[1:]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(recs, f)
    return 1 if nbad else 0


if __name__ == "__main__":
    sys.exit(main())
