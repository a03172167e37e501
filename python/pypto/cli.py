"""The `pypto` command.

  pypto ops                         the tensor-level ops of the registry
  pypto summary swimlane.json       the text summary of a swimlane trace (as in swimlane.txt)
  pypto view DIR [--serve SECONDS]  the debug pages under DIR; with --serve, serves DIR on
                                    127.0.0.1 for that many seconds (Ctrl-C ends it sooner)
  pypto run SCRIPT [ARGS...]        a script written for CANN PyPTO on an NPU, run here with the
                                    NPU device mapped to the CPU (pypto.npu_compat)
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import List, Optional
from .whitebox import graph_html, swimlane
from .compat import npu_compat
import pypto._core as _core

PAGES = ("graph.html", "swimlane.html", "swimlane.json", "swimlane.txt")


def _find_pages(root: str) -> List[str]:
    """Debug outputs under root (the dump dir or one function's dir), sorted."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        if os.path.relpath(dirpath, root).count(os.sep) > 2:
            continue
        for f in sorted(filenames):
            if f in PAGES:
                found.append(os.path.join(dirpath, f))
        if os.path.basename(dirpath) == "passes":
            n = sum(1 for f in filenames if f.endswith(".json"))
            if n:
                found.append(os.path.join(dirpath, f"({n} pass dumps, .txt and .json)"))
    return found


def _ensure_graphs(root: str) -> List[str]:
    """Writes graph.html for function dirs that have JSON pass dumps but no page yet."""
    made = []
    for dirpath, dirnames, _ in os.walk(root):
        if "passes" in dirnames and not os.path.exists(os.path.join(dirpath, "graph.html")):
            levels = graph_html.from_dump_dir(dirpath)
            if levels:
                made.append(graph_html.write(levels, dirpath))
    return made


def serve(root: str, port: int, seconds: float, out=sys.stdout) -> int:
    """Serves root over HTTP on 127.0.0.1 until `seconds` pass; returns the port used."""
    import functools
    import http.server
    import threading
    import time

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, fmt, *args):  # noqa: D401 - keep the terminal for the URLs
            pass

    handler = functools.partial(Quiet, directory=root)
    with http.server.ThreadingHTTPServer(("127.0.0.1", port), handler) as httpd:
        actual = httpd.server_address[1]
        print(f"serving {root} at http://127.0.0.1:{actual}/ for {seconds:g} s", file=out, flush=True)
        t = threading.Thread(target=httpd.serve_forever, daemon=True)
        t.start()
        try:
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))
        except KeyboardInterrupt:
            pass
        finally:
            httpd.shutdown()
        return actual


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="pypto", description="PyPTO command-line tools")
    sub = parser.add_subparsers(dest="cmd")
    sub.add_parser("ops", help="list the tensor-level ops of the registry")
    sub.add_parser("prebuild", help="build what every generated kernel shares (scripts/install.sh runs it: the first "
                                     "kernel of a process then compiles in well under a second)")
    p_sum = sub.add_parser("summary", help="text summary of a swimlane.json (as in swimlane.txt)")
    p_sum.add_argument("trace", help="a swimlane.json written with set_debug_options(swimlane=True)")
    p_sum.add_argument("--top", type=int, default=10, help="kernels and critical-path entries to show")
    p_view = sub.add_parser("view", help="list the debug pages under DIR, optionally serve them")
    p_view.add_argument("dir", help="a dump_dir, or one function's directory in it")
    p_view.add_argument("--serve", type=float, default=0, metavar="SECONDS",
                        help="serve DIR on 127.0.0.1 for this many seconds (0: only list the pages)")
    p_view.add_argument("--port", type=int, default=0, help="port for --serve (0: any free port)")
    p_run = sub.add_parser("run", help="run a CANN PyPTO script with the NPU device mapped to the CPU")
    p_run.add_argument("script", help="a Python script written for CANN PyPTO")
    p_run.add_argument("args", nargs=argparse.REMAINDER, help="the script's own arguments")
    args = parser.parse_args(argv)
    if args.cmd == "run":
        if not os.path.isfile(args.script):
            print(f"pypto run: {args.script} is not a file", file=sys.stderr)
            return 2
        try:
            npu_compat.run_script(args.script, args.args)
        except SystemExit as e:
            code = e.code
            if code is None:
                return 0
            if isinstance(code, int):
                return code
            print(code, file=sys.stderr)
            return 1
        return 0
    if args.cmd == "prebuild":
        t0 = time.perf_counter()
        try:
            where = _core.build_kernel_support()
        except _core.UserError as e:
            print(f"pypto prebuild: {e}", file=sys.stderr)
            return 1
        print(f"pypto prebuild: kernel support for this CPU in {where} ({time.perf_counter() - t0:.1f} s)")
        return 0
    if args.cmd == "ops":
        print("\n".join(_core.op_names()))
        return 0
    if args.cmd == "summary":
        try:
            trace = swimlane.load(args.trace)
        except (OSError, ValueError) as e:
            print(f"pypto summary: cannot read {args.trace}: {e}", file=sys.stderr)
            return 2
        sys.stdout.write(swimlane.summarize(trace, top=args.top))
        return 0
    if args.cmd == "view":
        root = os.path.abspath(args.dir)
        if not os.path.isdir(root):
            print(f"pypto view: {args.dir} is not a directory", file=sys.stderr)
            return 2
        for p in _ensure_graphs(root):
            print(f"wrote {p}")
        pages = _find_pages(root)
        if not pages:
            print(f"no debug outputs under {root}\nhint: pypto.set_debug_options(dump_dir=..., dump_passes=True, "
                  "swimlane=True, graph=True)")
        for p in pages:
            print(p)
        print("open graph.html / swimlane.html in a browser; swimlane.json also opens in https://ui.perfetto.dev "
              "or chrome://tracing")
        if args.serve > 0:
            serve(root, args.port, args.serve)
        return 0
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
