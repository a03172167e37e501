"""Command line for PTO assembly files.

    python -m pypto.isa run KERNEL.pto [NAME=VALUE ...] [--save NAME=FILE.npy ...]
    python -m pypto.isa print KERNEL.pto        # canonical text
    python -m pypto.isa list                    # the instructions

NAME=VALUE binds `.arg %NAME`: a .npy file (a tensor), `zeros:SHAPE:DTYPE` (a new tensor, e.g.
zeros:13x64:f32) or a number (a scalar). --save writes a tensor after the run.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from . import canonical, describe, dtype, instructions, run


def _value(text: str):
    if text.endswith(".npy"):
        return np.load(text)
    if text.startswith("zeros:"):
        _, shape, dt = text.split(":")
        return np.zeros(tuple(int(d) for d in shape.split("x")), dtype(dt))
    try:
        return int(text)
    except ValueError:
        return float(text)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m pypto.isa", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run a .pto file")
    r.add_argument("file")
    r.add_argument("bindings", nargs="*", metavar="NAME=VALUE")
    r.add_argument("--save", action="append", default=[], metavar="NAME=FILE.npy")
    pr = sub.add_parser("print", help="print the canonical text of a .pto file")
    pr.add_argument("file")
    sub.add_parser("list", help="list the instructions")
    args = p.parse_args(argv)

    if args.cmd == "list":
        print(f"{'instruction':18s} {'operands':40s} dtypes")
        for name in instructions():
            d = describe(name)
            print(f"{name:18s} {d['operands']:40s} {d['dtypes']}")
        print("\ndtypes: F = floating (fp32 fp16 bf16), I = integer (int8 int16 int32 int64 uint8), "
              "N = numeric (F and I),\n        B = integer or bool (bitwise), A = any dtype; "
              "'index: I' = that operand is an integer tile")
        return 0
    with open(args.file) as f:
        text = f.read()
    if args.cmd == "print":
        sys.stdout.write(canonical(text))
        return 0
    values = {}
    for b in args.bindings:
        name, _, v = b.partition("=")
        if not v:
            p.error(f"binding {b!r} is not NAME=VALUE")
        values[name] = _value(v)
    run(text, **values)
    for s in args.save:
        name, _, path = s.partition("=")
        if name not in values or not isinstance(values[name], np.ndarray):
            p.error(f"--save {name}: no tensor of that name")
        np.save(path, values[name])
    return 0


if __name__ == "__main__":
    sys.exit(main())
