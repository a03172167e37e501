"""The `pypto` command."""

from __future__ import annotations

import argparse
import sys
from typing import List, Optional


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="pypto", description="PyPTO command-line tools")
    sub = parser.add_subparsers(dest="cmd")
    sub.add_parser("ops", help="list the tensor-level ops of the registry")
    args = parser.parse_args(argv)
    if args.cmd == "ops":
        from . import _core
        print("\n".join(_core.op_names()))
        return 0
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
