"""Trace-time state: the recorder of the function being traced and the user's source lines."""

from __future__ import annotations

import os
import sys
import threading
from typing import Any, Optional, Tuple

from . import _core

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
_state = threading.local()

SourceLoc = Tuple[str, int, int, str]
NO_LOC: SourceLoc = ("", 0, -1, "")


def current_recorder(op: str) -> "_core.Recorder":
    """The recorder of the @pypto.jit function being traced; a clear error outside one."""
    rec = getattr(_state, "recorder", None)
    if rec is None:
        raise _core.UserError(
            f"pypto.{op} can only be used inside a @pypto.jit function while it is traced"
            + _format_loc(user_loc())
        )
    return rec


def maybe_recorder() -> Optional["_core.Recorder"]:
    return getattr(_state, "recorder", None)


class Tracing:
    """Context manager making `rec` the current recorder."""

    def __init__(self, rec: "_core.Recorder") -> None:
        self.rec = rec
        self.prev: Any = None

    def __enter__(self) -> "_core.Recorder":
        self.prev = getattr(_state, "recorder", None)
        _state.recorder = self.rec
        return self.rec

    def __exit__(self, *exc: object) -> None:
        _state.recorder = self.prev


def user_loc() -> SourceLoc:
    """(file, line, column, text) of the innermost frame outside the pypto package."""
    f = sys._getframe(1)
    while f is not None and os.path.dirname(os.path.abspath(f.f_code.co_filename)).startswith(_PKG_DIR):
        f = f.f_back
    if f is None:
        return NO_LOC
    import linecache

    filename = f.f_code.co_filename
    line = f.f_lineno
    text = linecache.getline(filename, line).rstrip("\n")
    col = -1
    try:  # Python 3.11+: exact column of the call being executed
        import dis

        for instr in dis.get_instructions(f.f_code):
            if instr.offset == f.f_lasti and instr.positions is not None:
                if instr.positions.lineno == line and instr.positions.col_offset is not None:
                    col = instr.positions.col_offset
                break
    except Exception:  # pragma: no cover - positions are best effort
        col = -1
    if col < 0:
        col = len(text) - len(text.lstrip())
    return (filename, line, col, text)


def _format_loc(loc: SourceLoc) -> str:
    if loc is None or loc[1] <= 0:
        return ""
    file, line, col, text = loc
    stripped = text.lstrip()
    indent = len(text) - len(stripped)
    caret = " " * max(0, col - indent) + "^"
    return f'\n  File "{file}", line {line}\n    {stripped}\n    {caret}'


def loop_body_exits(loc: SourceLoc) -> Optional[Tuple[str, int, int, str]]:
    """The first `break` or `return` directly in the body of the `for` statement whose iterator
    is the call at `loc` (a pypto.loop): (kind, line, column, text), or None. A runtime loop is
    traced once, so such an exit cannot take effect; the caller reports it at its line."""
    import ast
    import linecache

    file, line = loc[0], loc[1]
    if line <= 0:
        return None
    tree = _parsed(file)
    if tree is None:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.For) and node.iter.lineno <= line <= (node.iter.end_lineno or line):
            stack = list(node.body)
            while stack:
                n = stack.pop()
                if isinstance(n, (ast.Break, ast.Return)):
                    text = linecache.getline(file, n.lineno).rstrip("\n")
                    return ("break" if isinstance(n, ast.Break) else "return", n.lineno, n.col_offset, text)
                # a break of an inner Python loop, or a return of a nested function, is fine
                if isinstance(n, (ast.For, ast.While, ast.AsyncFor, ast.FunctionDef, ast.AsyncFunctionDef,
                                  ast.ClassDef, ast.Lambda)):
                    if isinstance(n, (ast.For, ast.While, ast.AsyncFor)):
                        stack.extend(s for s in n.body if isinstance(s, ast.Return))
                    continue
                stack.extend(ast.iter_child_nodes(n))
            return None
    return None


_ASTS: dict = {}


def _parsed(file: str) -> Any:
    import ast
    import linecache

    if file not in _ASTS:
        try:
            _ASTS[file] = ast.parse("".join(linecache.getlines(file)))
        except (SyntaxError, ValueError):
            _ASTS[file] = None
    return _ASTS[file]
