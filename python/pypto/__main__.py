"""``python -m pypto``: where the C++ package is.

    python -m pypto --cmake-dir     the directory holding pyptoConfig.cmake (for
                                    cmake -Dpypto_DIR=... or CMAKE_PREFIX_PATH)
    python -m pypto --include-dir   the C++ headers (pypto/pypto.h, pto/...)
    python -m pypto --lib-dir       the core library (libpypto_core.a)
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import List, Optional
import pypto._core as _core


def package_dir() -> str:
    """The installed package's directory: where the compiled modules, headers and library are (an
    editable install keeps its Python files elsewhere)."""
    return os.path.dirname(os.path.abspath(_core.__file__))


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pypto", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--cmake-dir", action="store_true", help="the directory holding pyptoConfig.cmake")
    g.add_argument("--include-dir", action="store_true", help="the C++ include directory")
    g.add_argument("--lib-dir", action="store_true", help="the directory of libpypto_core.a")
    args = ap.parse_args(argv)
    root = package_dir()
    path = os.path.join(root, "lib", "cmake", "pypto") if args.cmake_dir else \
        os.path.join(root, "include") if args.include_dir else os.path.join(root, "lib")
    if not os.path.isdir(path):
        print(f"python -m pypto: {path} does not exist: this pypto was built without its C++ package "
              "(reinstall with pip install .)", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
