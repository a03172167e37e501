"""Trace-time state: the recorder of the function being traced and the user's source lines."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple

import pypto._core as _core

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the package root (python/pypto)
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


@contextlib.contextmanager
def automatic_tiles(op: str) -> Iterator[None]:
    """Within: the automatic vec tile shapes, whatever the program set (a composite op's own
    steps, of another rank than the user's tile); the user's are back after."""
    rec = current_recorder(op)
    saved = list(rec.vec_tile_shapes())
    rec.clear_vec_tile_shapes()
    try:
        yield
    finally:
        if saved:
            rec.set_vec_tile_shapes(saved, user_loc())


@contextlib.contextmanager
def completed_tiles(op: str, shape: Sequence[Any]) -> Iterator[None]:
    """Within: the user's vec tile completed with the trailing dims of `shape` when it has fewer
    (PyPTO's rule for ops such as index_put_: a tile [t1] over values [t, n] is [t1, n]); a
    trailing dim of run-time size leaves the automatic tiles."""
    rec = current_recorder(op)
    saved = list(rec.vec_tile_shapes())
    if not saved or len(saved) >= len(shape):
        yield
        return
    rest = list(shape[len(saved):])
    try:
        if all(isinstance(d, int) for d in rest):
            rec.set_vec_tile_shapes(saved + rest, user_loc())
        else:
            rec.clear_vec_tile_shapes()
        yield
    finally:
        rec.set_vec_tile_shapes(saved, user_loc())


@contextlib.contextmanager
def batched_tiles(op: str, rank: int) -> Iterator[None]:
    """Within: the user's vec tile, when of lower rank than `rank`, with tile 1 on the leading
    dims (a [128, 128] tile set for matrices, over a batch of them: the fixpipe steps of a
    batched matmul)."""
    rec = current_recorder(op)
    saved = list(rec.vec_tile_shapes())
    if not saved or len(saved) >= rank:
        yield
        return
    try:
        rec.set_vec_tile_shapes([1] * (rank - len(saved)) + saved, user_loc())
        yield
    finally:
        rec.set_vec_tile_shapes(saved, user_loc())


@contextlib.contextmanager
def runtime_scope(index: Optional[str] = None) -> Iterator[None]:
    """Marks a runtime loop or branch body being traced (see at_top_level); `index`: the loop's
    index symbol (see open_loop_indices)."""
    _state.scopes = getattr(_state, "scopes", 0) + 1
    _state.scope_count = getattr(_state, "scope_count", 0) + 1
    ids = getattr(_state, "scope_ids", None)
    if ids is None:
        ids = _state.scope_ids = []
    ids.append(_state.scope_count)
    indices = getattr(_state, "indices", None)
    if indices is None:
        indices = _state.indices = []
    if index is not None:
        indices.append(index)
    try:
        yield
    finally:
        _state.scopes -= 1
        ids.pop()
        if index is not None:
            indices.remove(index)


def note_write() -> None:
    """Called for every write into a tensor while tracing (see read_point)."""
    _state.writes = getattr(_state, "writes", 0) + 1


def read_point() -> Tuple[int, int]:
    """Where the trace is, as far as a value read from memory can tell: the innermost runtime
    scope (loop or branch body, each traced entry its own) and the writes recorded so far. A value
    read at one point and used at another with a different key may have changed in between."""
    ids = getattr(_state, "scope_ids", None)
    return (ids[-1] if ids else 0, getattr(_state, "writes", 0))


def open_loop_indices() -> List[str]:
    """The index symbols of the runtime loops open in the trace, outermost first."""
    return list(getattr(_state, "indices", None) or [])


def at_top_level() -> bool:
    """Whether the trace is outside every runtime loop and branch (what it records runs once)."""
    return getattr(_state, "scopes", 0) == 0


def maybe_recorder() -> Optional["_core.Recorder"]:
    return getattr(_state, "recorder", None)


def path_tracers() -> List[Any]:
    """The pypto.loop bodies tracing their paths now (control.LoopPaths), innermost last."""
    stack = getattr(_state, "path_tracers", None)
    if stack is None:
        stack = _state.path_tracers = []
    return stack


def decide_in_loop(condition: Any) -> Any:
    """bool() of a symbolic condition: the path's answer when a pypto.loop body of the function
    being traced is tracing its paths, else None (the caller raises its error)."""
    stack = path_tracers()
    if not stack or stack[-1].rec is not maybe_recorder():
        return None
    return stack[-1].decide(condition)


class Tracing:
    """Context manager making `rec` the current recorder."""

    def __init__(self, rec: "_core.Recorder") -> None:
        self.rec = rec
        self.prev: Any = None
        self.prev_probes: Any = None
        self.probes: List[Dict[str, Any]] = []  # pass_verify_print / _save calls (pypto.pass_verify)
        # Parameters the program adds while it is traced (after the caller's), each with what gives
        # its array at every call: the shared windows of pypto.distributed's shmem tensors.
        self.bound: List[Callable[[], Any]] = []
        self.prev_bound: Any = None

    def __enter__(self) -> "_core.Recorder":
        self.prev = getattr(_state, "recorder", None)
        self.prev_probes = getattr(_state, "probes", None)
        self.prev_bound = getattr(_state, "bound", None)
        _state.recorder = self.rec
        _state.probes = self.probes
        _state.bound = self.bound
        return self.rec

    def __exit__(self, *exc: object) -> None:
        _state.recorder = self.prev
        _state.probes = self.prev_probes
        _state.bound = self.prev_bound


def bind_param(name: str, shape: List[Any], dtype: Any, array: Callable[[], Any]) -> int:
    """A parameter of the function being traced that the caller does not pass: `array()` gives
    its array at each call (after the caller's arrays). Returns its value id."""
    bound = getattr(_state, "bound", None)
    rec = getattr(_state, "recorder", None)
    if bound is None or rec is None:
        raise _core.UserError(f"{name}: made only inside a traced function" + _format_loc(user_loc()))
    vid = rec.add_param(name, shape, dtype, False, NO_LOC)
    bound.append(array)
    return int(vid)


def current_probes() -> List[Dict[str, Any]]:
    """The pass_verify probes of the function being traced (a list the caller appends to)."""
    probes = getattr(_state, "probes", None)
    return probes if probes is not None else []


_DYNAMO_FRAMES = os.sep + os.path.join("torch", "_dynamo") + os.sep


def function_scope(fn: Any, defining: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The names `fn`'s code sees: its module's globals, then `defining` (the locals of the scope
    it was defined in, which string annotations may use), then its closure's cells (a bound
    method's function's). Where string annotations, and the functions a body calls, are
    looked up."""
    raw = getattr(fn, "__func__", fn)
    scope = dict(raw.__globals__)
    scope.update(defining or {})
    for name, cell in zip(raw.__code__.co_freevars, raw.__closure__ or ()):
        try:
            scope[name] = cell.cell_contents
        except ValueError:  # an empty cell
            pass
    return scope


def user_frame() -> Any:
    """The innermost frame outside the pypto package (None when there is none). The frames of
    torch._dynamo's disable wrapper, which a jit call goes through once torch._dynamo is loaded,
    are not the user's either."""
    f = sys._getframe(1)
    while f is not None and (os.path.dirname(os.path.abspath(f.f_code.co_filename)).startswith(_PKG_DIR)
                             or _DYNAMO_FRAMES in f.f_code.co_filename):
        f = f.f_back
    return f


def user_loc() -> SourceLoc:
    """(file, line, column, text) of the innermost frame outside the pypto package."""
    f = user_frame()
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


def _for_at(loc: SourceLoc) -> Any:
    """The `for` statement whose iterator expression holds line loc[1] of file loc[0], or None."""
    import ast

    tree = _parsed(loc[0]) if loc[1] > 0 else None
    if tree is None:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.For) and node.iter.lineno <= loc[1] <= (node.iter.end_lineno or loc[1]):
            return node
    return None


def loop_carried(loc: SourceLoc) -> List[Tuple[str, int, int]]:
    """The names the body of the `for` statement at `loc` carries from one iteration to the next:
    (name, line of a read that may see the previous iteration's value, line of its assignment).
    A runtime loop traces its body once, so such a read would see the value from before the loop
    in every iteration (a silent wrong answer); the caller decides what to do with them."""
    node = _for_at(loc)
    if node is None:
        return []
    assigned = _stores(node.body)
    for name in _rebound_to_itself(node.body):  # `y = pl.store(t, offs, y)`: the same tensor again
        assigned.pop(name, None)
    reads: Dict[str, int] = {}
    _reads_before_writes(node.body, set(_stores([node.target])), reads)
    return [(n, line, assigned[n]) for n, line in sorted(reads.items(), key=lambda x: x[1]) if n in assigned]


# Calls that return one of their arguments, the tensor they write (the language's SSA-style
# `y = pl.store(tile, offsets, y)`): name -> (position, keyword) of that argument.
_RETURNS_ITS_ARGUMENT = {
    "store": (2, "output_tensor"), "assemble": (0, "target"), "barrier": (0, "signal"), "allreduce": (0, "target"),
    "broadcast": (0, "target"), "reduce_scatter": (0, "target"), "allgather": (1, "target"),
    "all_to_all": (1, "target"), "all_to_all_v": (1, "target"),
}


def _rebound_to_itself(stmts: Sequence[Any]) -> List[str]:
    """Names every binding of which in these statements is `x = f(..., x, ...)` with `f` one of
    the calls that return the tensor they write: such a name carries nothing from one iteration to
    the next. (If `f` is another function of that name and returns a new value, the loop's check
    after the body still catches the carry.)"""
    import ast

    same: Dict[str, bool] = {}
    ok_targets = set()
    for n in (x for s in stmts for x in ast.walk(s)):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) \
                and isinstance(n.value, ast.Call):
            f = n.value.func
            fname = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            where = _RETURNS_ITS_ARGUMENT.get(fname)
            name = n.targets[0].id
            if where is not None:
                pos, kw = where
                args = n.value.args
                arg = args[pos] if len(args) > pos else next((k.value for k in n.value.keywords if k.arg == kw), None)
                if isinstance(arg, ast.Name) and arg.id == name:
                    ok_targets.add(id(n.targets[0]))
                    same.setdefault(name, True)
    for n in (x for s in stmts for x in ast.walk(s)):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)) and id(n) not in ok_targets:
            same[n.id] = False
    return [name for name, ok in same.items() if ok]


def _stores(stmts: Sequence[Any]) -> Dict[str, int]:
    """Name -> first line where these statements (nested blocks included, nested scopes not)
    bind it."""
    import ast

    out: Dict[str, int] = {}
    stack: List[Any] = list(stmts)
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out[n.id] = min(out.get(n.id, n.lineno), n.lineno)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out[n.name] = min(out.get(n.name, n.lineno), n.lineno)
            continue
        if isinstance(n, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue
        stack.extend(ast.iter_child_nodes(n))
    return out


def _loads(node: Any) -> List[Tuple[str, int]]:
    """(name, line) of every name this expression or simple statement reads (an augmented
    assignment reads its target), in the scope it runs in."""
    import ast

    out: List[Tuple[str, int]] = []
    stack: List[Any] = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            out.append((n.id, n.lineno))
        elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
            out.append((n.target.id, n.lineno))
        if isinstance(n, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            own = {t.id for g in n.generators for t in ast.walk(g.target) if isinstance(t, ast.Name)}
            out.extend((name, line) for name, line in _loads_of_children(n) if name not in own)
            continue
        if isinstance(n, ast.Lambda):
            own = {a.arg for a in n.args.args + n.args.kwonlyargs + n.args.posonlyargs}
            out.extend((name, line) for name, line in _loads(n.body) if name not in own)
            continue
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue  # a nested definition reads its free names when it is called
        stack.extend(ast.iter_child_nodes(n))
    return out


def _loads_of_children(n: Any) -> List[Tuple[str, int]]:
    import ast

    out: List[Tuple[str, int]] = []
    for c in ast.iter_child_nodes(n):
        out.extend(_loads(c))
    return out


def _reads_before_writes(stmts: Sequence[Any], defined: Set[str], reads: Dict[str, int]) -> Set[str]:
    """Walks statements in order: records in `reads` each name read while not yet bound in this
    pass through them (`defined`: bound for sure so far); returns the names bound for sure after."""
    import ast

    defined = set(defined)

    def read(node: Any) -> None:
        for name, line in _loads(node):
            if name not in defined and name not in reads:
                reads[name] = line

    for s in stmts:
        if isinstance(s, ast.If):
            read(s.test)
            a = _reads_before_writes(s.body, defined, reads)
            b = _reads_before_writes(s.orelse, defined, reads)
            defined |= a & b
        elif isinstance(s, (ast.For, ast.AsyncFor)):
            read(s.iter)
            _reads_before_writes(s.body, defined | set(_stores([s.target])), reads)
            _reads_before_writes(s.orelse, defined, reads)
        elif isinstance(s, ast.While):
            read(s.test)
            _reads_before_writes(s.body, defined, reads)
            _reads_before_writes(s.orelse, defined, reads)
        elif isinstance(s, (ast.With, ast.AsyncWith)):
            for item in s.items:
                read(item.context_expr)
                if item.optional_vars is not None:
                    defined |= set(_stores([item.optional_vars]))
            defined = _reads_before_writes(s.body, defined, reads)
        elif isinstance(s, ast.Try):
            after = _reads_before_writes(s.body, defined, reads)
            for h in s.handlers:
                _reads_before_writes(h.body, defined | ({h.name} if h.name else set()), reads)
            _reads_before_writes(s.orelse, after, reads)
            _reads_before_writes(s.finalbody, defined, reads)
            defined = after
        elif isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for d in s.decorator_list:
                read(d)
            defined.add(s.name)
        else:  # a simple statement: its reads happen before its stores
            read(s)
            defined |= set(_stores([s]))
    return defined


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
