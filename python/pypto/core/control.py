"""Runtime branches: an `if` in the body of a @pypto.jit function whose condition is a symbolic
value (a loop index, a dynamic dim, ``pypto.cond(...)``, ``pypto.is_loop_begin(i)``) runs at run
time; one on a Python value keeps deciding at trace time.

The function's `if` statements are rewritten once, before the first trace, into

    _pypto_b = _pypto_branch(test, <names the then path assigns>, <names the else path assigns>)
    _pypto_b.save(locals())                 # the assigned names' values before the `if`
    for _pypto_ in _pypto_b.then():         # once, or never, or a recorded branch
        <body>
        _pypto_b.end_path(locals())
    if _pypto_b.symbolic: <each name> = _pypto_b.before("<name>")
    for _pypto_ in _pypto_b.otherwise():
        <orelse, or pass>
        _pypto_b.end_path(locals())
    if _pypto_b.symbolic: <each name> = _pypto_b.result("<name>")

A recorded branch is a loop of 0 or 1 iterations over [0, truth(test)), so every level of the
compiler handles it as it handles pypto.loop, and the dumps show both paths. Each path is
traced once, the else path starting from the values before the `if`. **A name assigned in a
runtime branch is merged after it**, as PyPTO programs expect (`if ...: y = a else: y = b`, then
read y): when both paths end with a tensor of one shape and dtype under that name, the first
path makes a tensor and each path copies its value into it at its end, and the name is that
tensor after the `if`; integers and symbolic scalars become the value the condition picks
(`t * a + (1 - t) * b`); equal Python values stay. When the paths disagree (another shape, a
tensor against a number, a name only one path binds), the name is bound to a value that raises a
clear UserError when used. An `if` whose body holds a `break` or `continue` of an enclosing
Python loop is left alone.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import inspect
import os
import textwrap
import types
from typing import Any, Callable, Dict, Iterator, List, Tuple

import pypto._core as _core
from .._core import SymbolicScalar
from ._unavailable import Unavailable as _Unavailable
from ._tracing import (_format_loc, automatic_tiles, current_probes, current_recorder, decide_in_loop,  # noqa: F401
                       maybe_recorder, path_tracers, runtime_scope, user_loc)
from .tensor import Tensor
from ._dtypes import DT_INT64, check_dtype, PackedDType, UnsupportedDType

__all__ = ["cond", "is_loop_begin", "is_loop_end", "sym_min", "sym_max"]


def _symbolic(x: Any) -> bool:
    return isinstance(x, SymbolicScalar) and not x.is_concrete()


def _truth(x: SymbolicScalar) -> SymbolicScalar:
    """1 when x != 0, else 0 (x an integer expression)."""
    return _core.sym_min(_core.sym_max(x, -x), 1)


def cond(condition: Any) -> Any:
    """Marks a runtime condition: ``if pypto.cond(i < n): ... else: ...``. In a @pypto.jit
    function every `if` on a symbolic value is a runtime branch already; this is PyPTO's
    spelling and returns the condition."""
    return condition


# loop index symbol -> (start, stop, step), per function being traced
_LOOPS: Dict[Tuple[int, str], Tuple[Any, Any, Any]] = {}


def register_loop(idx: SymbolicScalar, start: Any, stop: Any, step: Any) -> None:
    _LOOPS[(id(current_recorder("loop")), repr(idx))] = (start, stop, step)


def _bounds(op: str, idx: Any) -> Tuple[Any, Any, Any]:
    key = (id(current_recorder(op)), repr(idx)) if isinstance(idx, SymbolicScalar) else None
    if key is None or key not in _LOOPS:
        raise _core.UserError(f"pypto.{op}: {idx!r} is not the index of a pypto.loop of this function"
                              + _format_loc(user_loc()))
    return _LOOPS[key]


def is_loop_begin(idx: SymbolicScalar) -> Any:
    """True on the first iteration of the pypto.loop whose index is ``idx`` (a runtime condition)."""
    start, _, _ = _bounds("is_loop_begin", idx)
    return idx == start


def is_loop_end(idx: SymbolicScalar) -> Any:
    """True on the last iteration of the pypto.loop whose index is ``idx`` (a runtime condition)."""
    _, stop, step = _bounds("is_loop_end", idx)
    return idx + step >= stop


class LoopPaths:
    """PyPTO's `if pypto.cond(c):` where the `if` is not rewritten (a `with pypto.function` block,
    a helper called from a kernel): bool() of the symbolic condition is asked while a pypto.loop
    body is traced. As in PyPTO, the body is traced once per path through its conditions, each
    path under a runtime guard (the conjunction of its decisions), so one path runs per iteration.

    The loop's generator drives it: a trace that meets a condition no earlier trace decided (each
    such answer is True) is rolled back, and the path it took plus each path turning off at one of
    its new conditions are traced again, each guarded from the start of the body. A body without
    symbolic conditions is traced once, as before."""

    MAX_DECISIONS = 32  # per path: more is a Python loop (`while`) on a run-time value
    MAX_PATHS = 256

    def __init__(self, rec: Any, loc: Any) -> None:
        self.rec, self.loc = rec, loc
        self.pending: List[List[Tuple[Any, bool]]] = [[]]
        self.plan: List[Tuple[Any, bool]] = []
        self.taken: List[Tuple[Any, bool]] = []
        self.new = False
        self.traces = 0

    def decide(self, condition: SymbolicScalar) -> bool:
        k = len(self.taken)
        if k < len(self.plan):
            c, value = self.plan[k]
            if repr(c) != repr(condition):
                raise _core.UserError(
                    f"the runtime condition {condition!r} is met where an earlier trace of this loop body met {c!r}: "
                    "the body is traced once per path of its `if pypto.cond(...)` statements and must meet the same "
                    "conditions in the same order each time" + _format_loc(user_loc()))
            self.taken.append((condition, value))
            return value
        if k >= self.MAX_DECISIONS:
            raise _core.UserError(
                f"more than {self.MAX_DECISIONS} run-time conditions on one path of the pypto.loop body at line "
                f"{self.loc[1]}" + _format_loc(user_loc())
                + "\nhint: a Python `while` on a symbolic value cannot run at trace time; bound a pypto.loop instead")
        self.new = True
        self.taken.append((condition, True))
        return True

    def guard(self, plan: List[Tuple[Any, bool]]) -> Any:
        g: Any = None
        for c, value in plan:
            t = _truth(c) if value else 1 - _truth(c)
            g = t if g is None else _core.sym_min(g, t)
        return g

    def traces_of_body(self) -> Iterator[None]:
        """Yields once per trace of the body; the caller's generator yields the index each time."""
        while self.pending:
            self.traces += 1
            if self.traces > self.MAX_PATHS:
                raise _core.UserError(f"the pypto.loop body at line {self.loc[1]} has more than {self.MAX_PATHS} paths "
                                      "through its run-time conditions" + _format_loc(self.loc))
            self.plan, self.taken, self.new = self.pending.pop(), [], False
            mark = self.rec.checkpoint()
            probes = current_probes()
            n_probes = len(probes)  # pass_verify probes of a dropped trace go with it
            guard = self.guard(self.plan)
            if guard is not None:
                self.rec.begin_branch(guard, False, self.loc)
            path_tracers().append(self)
            try:
                yield None
            finally:
                path_tracers().remove(self)
            if guard is not None:
                self.rec.end_loop()
            if self.new:
                self.rec.rollback(mark)
                del probes[n_probes:]
                taken = self.taken
                for j in range(len(self.plan), len(taken)):  # turning off at each new condition
                    self.pending.append(taken[:j] + [(taken[j][0], False)])
                self.pending.append(taken)  # the path this trace took, next


def write_scalar(rec: Any, value: Any, mem: int, loc: Any) -> None:
    """Records the write of an int or symbolic scalar into element 0 of the one-element int64
    tensor `mem` (how a scalar made from a run-time read leaves a branch or a loop iteration)."""
    v = value if isinstance(value, SymbolicScalar) else SymbolicScalar(int(value))
    with automatic_tiles("scalar"):
        made = rec.op("full", [], {"shape": [1], "value": 0.0, "value_expr": [v], "dtype": DT_INT64}, loc)
        rec.assemble(made, [0], mem, loc)


def _same_shape(a: Any, b: Any) -> bool:
    """Two shapes of ints and symbolic dims, equal as written (str() of a symbolic dim would warn)."""
    def sym(d: Any) -> SymbolicScalar:
        return d if isinstance(d, SymbolicScalar) else SymbolicScalar(int(d))
    return len(a) == len(b) and all(sym(x).same_as(sym(y)) for x, y in zip(a, b))


_MISSING = object()


class _Branch:
    """One rewritten `if`: decides at trace time, or records both paths as runtime branches and
    merges what they assign (see the module doc)."""

    def __init__(self, test: Any, then_names: Tuple[str, ...] = (), else_names: Tuple[str, ...] = ()) -> None:
        self.test = test
        self.symbolic = _symbolic(test)
        self.line = user_loc()[1]
        self.assigns = (set(then_names), set(else_names))
        self.names = sorted(self.assigns[0] | self.assigns[1])
        self.old: Dict[str, Any] = {}
        self.ends: List[Dict[str, Any]] = []
        self.merged: Dict[str, Any] = {}  # name -> the tensor both paths write, or a scalar
        self.failed: set = set()
        # A scalar a path computes from an element it reads (`x = t[i]` inside the path) cannot
        # leave the path as an expression (the read's symbol is bound in the path only): it leaves
        # through memory, a one-element tensor the path writes and the code after the `if` reads.
        self.scalar_mem: Dict[str, Any] = {}
        self.via_memory: set = set()  # (name, path) pairs whose scalar went through memory
        self.open_at_start: set = set()

    def _path(self, negate: bool) -> Iterator[None]:
        if not self.symbolic:
            if bool(self.test) != negate:
                yield None
            return
        rec = current_recorder("if")
        rec.begin_branch(self.test, negate, user_loc())
        self.open_at_start = set(rec.open_symbols())
        try:
            with runtime_scope():
                yield None
        finally:
            rec.end_loop()

    def then(self) -> Iterator[None]:
        return self._path(False)

    def otherwise(self) -> Iterator[None]:
        return self._path(True)

    def save(self, frame_locals: Dict[str, Any]) -> None:
        """Before the paths: the values the assigned names have (the else path starts from them)."""
        if self.symbolic:
            self.old = {n: frame_locals[n] for n in self.names if n in frame_locals}

    def before(self, name: str) -> Any:
        """A name's value before the branch, for the else path (unbound: an error when used)."""
        return self.old.get(name, _Unbound(name, self.line))

    def end_path(self, frame_locals: Dict[str, Any]) -> None:
        """The last statement of each path, inside it: each assigned name's value is written into
        the one tensor both paths write (made by the first), so it can be read after the `if`."""
        if not self.symbolic:
            return
        path = len(self.ends)
        ends = {n: frame_locals.get(n, _MISSING) for n in self.names}
        self.ends.append(ends)
        with automatic_tiles("if"):  # the copies' tiles, whatever the path set last
            rec = current_recorder("if")
            self._merge_path(rec, path, ends)
            self._scalars_through_memory(rec, path, ends)

    def _scalars_through_memory(self, rec: Any, path: int, ends: Dict[str, Any]) -> None:
        inside = set(rec.open_symbols()) - self.open_at_start
        if not inside:
            return
        for n in self.names:
            v = ends[n]
            if not isinstance(v, SymbolicScalar) or not set(v.free_vars()) & inside:
                continue
            mem = self.scalar_mem.get(n)
            if mem is None:
                mem = self.scalar_mem[n] = Tensor(_rec=rec, _id=rec.create_tensor([1], DT_INT64, f"{n}_branch",
                                                                                  user_loc()))
            write_scalar(rec, v, mem._vid, user_loc())
            self.via_memory.add((n, path))

    def _merge_path(self, rec: Any, path: int, ends: Dict[str, Any]) -> None:
        for n in self.names:
            v, old = ends[n], self.old.get(n, _MISSING)
            if isinstance(v, _Unbound):
                v = ends[n] = _MISSING
            if n in self.failed:
                continue
            if path == 0:
                if v is old and n not in self.assigns[1]:
                    continue  # neither path changes it
                if isinstance(v, Tensor) and v.is_traced:
                    try:
                        shape = [d for d in v.shape]
                        merged = self._merged_tensor(rec, shape, v.dtype, n)
                        rec.assemble(v._id, [0] * len(shape), merged._vid, user_loc())
                        self.merged[n] = merged
                    except _core.UserError:
                        self.failed.add(n)  # e.g. a shape that depends on data read in the kernel
                continue
            merged = self.merged.get(n)
            if merged is not None and v is self.ends[0][n]:
                continue  # the same tensor as the first path's: it is the result (see result())
            if merged is not None:
                if (isinstance(v, Tensor) and v.is_traced and v.dtype == merged.dtype
                        and _same_shape(v.shape, merged.shape)):
                    try:
                        rec.assemble(v._id, [0] * len(v.shape), merged._vid, user_loc())
                    except _core.UserError:
                        self.failed.add(n)
                else:
                    self.failed.add(n)

    @staticmethod
    def _merged_tensor(rec: Any, shape: List[Any], dtype: Any, name: str) -> Any:
        """The tensor both paths write: of the value's shape, or, when that moves with a loop
        index (a tail window, min(72 - 64 * i, 64)), a window of that shape at the start of one
        of its largest shape (tensors in memory exist for the whole call)."""
        try:
            return Tensor(_rec=rec, _id=rec.create_tensor(shape, dtype, name, user_loc()))
        except _core.UserError:
            bound = [d if isinstance(d, int) else d.upper_bound() for d in shape]
            if any(b is None for b in bound):
                raise
            whole = rec.create_tensor(bound, dtype, name, user_loc())
            return Tensor(_rec=rec, _id=rec.view(whole, [0] * len(shape), shape, user_loc()))

    def result(self, name: str) -> Any:
        """The name's value after the branch: the merged tensor, the value both paths agree on, a
        scalar chosen by the condition, or (when the paths disagree in kind) an error when used."""
        old = self.old.get(name, _MISSING)
        if len(self.ends) != 2:
            return self.poison(name)
        v0, v1 = self.ends[0][name], self.ends[1][name]
        if isinstance(v0, Tensor) and v0 is v1:
            # The same tensor on both paths (each wrote it in place, `m = pl.store(t, [0, 0], m)`):
            # it is the value after the `if`; the copy into the merged tensor is then never read
            # and the compiler drops it (Function::LiveOps).
            return v0
        if name in self.failed:
            return self.poison(name)
        if name in self.merged:
            return self.merged[name]
        if v0 is _MISSING or v1 is _MISSING:
            return self.poison(name)
        if v0 is v1 or v0 is old and v1 is old:
            return v0
        ints = (int, SymbolicScalar)
        if isinstance(v0, ints) and isinstance(v1, ints) and not isinstance(v0, bool) and not isinstance(v1, bool):
            if isinstance(v0, int) and isinstance(v1, int) and v0 == v1:
                return v0
            if (name, 0) in self.via_memory or (name, 1) in self.via_memory:
                stored = self.scalar_mem[name][0]  # read here, after the path that wrote it ran
                if (name, 0) in self.via_memory and (name, 1) in self.via_memory:
                    return stored
                v0 = stored if (name, 0) in self.via_memory else v0
                v1 = stored if (name, 1) in self.via_memory else v1
            t = _truth(self.test)
            return t * v0 + (1 - t) * v1
        if type(v0) is type(v1) and isinstance(v0, (float, str, bool)) and v0 == v1:
            return v0
        return self.poison(name)

    def poison(self, name: str) -> "_Unavailable":
        return _Unavailable(name, self.line)


class _Unbound(_Unavailable):
    """A name the else path sees unbound (the then path bound it)."""

    def fail(self) -> None:
        raise _core.UserError(f"`{self._name}` is not bound on this path of the runtime branch at line {self._line} "
                              "(only the other path assigns it)" + _format_loc(user_loc()))


def _and(*thunks: Callable[[], Any]) -> Any:
    """`a and b` of a rewritten `if` test: Python's when every operand is known, else the
    predicate min(truth(a), truth(b))."""
    acc: Any = None
    for th in thunks:
        v = th()
        if not _symbolic(v):
            if not v:
                return v
            continue
        acc = _truth(v) if acc is None else _core.sym_min(acc, _truth(v))
    return acc if acc is not None else v


def _or(*thunks: Callable[[], Any]) -> Any:
    acc: Any = None
    for th in thunks:
        v = th()
        if not _symbolic(v):
            if v:
                return v
            continue
        acc = _truth(v) if acc is None else _core.sym_max(acc, _truth(v))
    return acc if acc is not None else v


def _not(v: Any) -> Any:
    return 1 - _truth(v) if _symbolic(v) else not v


# --- the rewrite ---------------------------------------------------------------------------------

class _TestRewriter(ast.NodeTransformer):
    """`and` / `or` / `not` in an `if` test become _pypto_and / _or / _not (short-circuit kept)."""

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        self.generic_visit(node)
        fn = "_pypto_and" if isinstance(node.op, ast.And) else "_pypto_or"
        thunks = [ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
                             body=v) for v in node.values]
        return ast.copy_location(ast.Call(func=ast.Name(fn, ast.Load()), args=thunks, keywords=[]), node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return ast.copy_location(ast.Call(func=ast.Name("_pypto_not", ast.Load()), args=[node.operand],
                                              keywords=[]), node)
        return node

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        return node


def _walk_scope(stmts: List[ast.stmt], scopes: Tuple[type, ...]) -> Iterator[ast.AST]:
    """The nodes of these statements, not entering nested functions, classes or lambdas."""
    stack: List[ast.AST] = list(stmts)
    while stack:
        n = stack.pop()
        yield n
        if not isinstance(n, scopes):
            stack.extend(ast.iter_child_nodes(n))


def _exits_enclosing_loop(stmts: List[ast.stmt]) -> bool:
    """A return, or a break / continue not inside a loop of their own, in these statements: such
    an `if` is left to bool(), which a pypto.loop body answers once per path (LoopPaths)."""
    scopes = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
    stack: List[ast.AST] = list(stmts)
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Return):
            return True
        if isinstance(n, (ast.Break, ast.Continue)):
            return True
        if isinstance(n, (ast.For, ast.While, ast.AsyncFor)) and any(
                isinstance(m, ast.Return) for m in _walk_scope(n.body, scopes)):
            return True
        if isinstance(n, (ast.For, ast.While, ast.AsyncFor, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                          ast.Lambda)):
            if isinstance(n, (ast.For, ast.While, ast.AsyncFor)):
                stack.extend(n.orelse)  # a break in a loop's else clause leaves the enclosing loop
            continue
        stack.extend(ast.iter_child_nodes(n))
    return False


def _assigned(stmts: List[ast.stmt]) -> List[str]:
    names: List[str] = []
    stack: List[ast.AST] = list(stmts)
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and not n.id.startswith("_pypto"):
            if n.id not in names:
                names.append(n.id)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if n.name not in names:
                names.append(n.name)
            continue
        if isinstance(n, ast.Lambda):
            continue
        stack.extend(ast.iter_child_nodes(n))
    return sorted(names)


class _IfRewriter(ast.NodeTransformer):
    def __init__(self, root: ast.AST) -> None:
        self.root = root
        self.count = 0

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        if node is self.root:
            self.generic_visit(node)
        return node  # a nested function keeps its own ifs

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> ast.AST:
        return node

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        return node

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        return node

    def visit_If(self, node: ast.If) -> Any:
        self.generic_visit(node)
        if _exits_enclosing_loop(node.body + node.orelse):
            return node
        b = f"_pypto_b{self.count}"
        self.count += 1

        def name(n: str, store: bool = False) -> ast.Name:
            return ast.Name(n, ast.Store() if store else ast.Load())

        def path(method: str, body: List[ast.stmt]) -> ast.For:
            it = ast.Call(func=ast.Attribute(name(b), method, ast.Load()), args=[], keywords=[])
            return ast.For(target=name("_pypto_", True), iter=it, body=body, orelse=[])

        test = _TestRewriter().visit(node.test)
        then_names, else_names = _assigned(node.body), _assigned(node.orelse)
        names = sorted(set(then_names) | set(else_names))

        def call(method: str, *args: ast.expr) -> ast.Call:
            return ast.Call(func=ast.Attribute(name(b), method, ast.Load()), args=list(args), keywords=[])

        def strs(ns: List[str]) -> ast.Tuple:
            return ast.Tuple([ast.Constant(n) for n in ns], ast.Load())

        def at_end(body: List[ast.stmt]) -> List[ast.stmt]:
            return body + [ast.Expr(call("end_path", ast.Call(name("locals"), [], [])))] if names else body

        def bind_all(method: str) -> ast.If:
            return ast.If(test=ast.Attribute(name(b), "symbolic", ast.Load()),
                          body=[ast.Assign(targets=[name(n, True)], value=call(method, ast.Constant(n)))
                                for n in names], orelse=[])

        out: List[ast.stmt] = [
            ast.Assign(targets=[name(b, True)],
                       value=ast.Call(func=name("_pypto_branch"), args=[test, strs(then_names), strs(else_names)],
                                      keywords=[]))]
        if names:
            out.append(ast.Expr(call("save", ast.Call(name("locals"), [], []))))
        out.append(path("then", at_end(node.body)))
        if names:
            out.append(bind_all("before"))  # the else path starts from the values before the `if`
        if node.orelse or names:
            out.append(path("otherwise", at_end(node.orelse or [ast.Pass()])))
        if names:
            out.append(bind_all("result"))
        for s in out:
            ast.copy_location(s, node)
            for sub in ast.walk(s):
                if not hasattr(sub, "lineno"):
                    ast.copy_location(sub, node)
        return out


def sym_min(a: Any, b: Any) -> Any:
    """``pypto.min(a, b)``: the smaller of two ints or symbolic scalars (symbolic if either is)."""
    if isinstance(a, SymbolicScalar) or isinstance(b, SymbolicScalar):
        return _core.sym_min(a, b)
    return builtins.min(a, b)


def sym_max(a: Any, b: Any) -> Any:
    """``pypto.max(a, b)``: the larger of two ints or symbolic scalars (symbolic if either is)."""
    if isinstance(a, SymbolicScalar) or isinstance(b, SymbolicScalar):
        return _core.sym_max(a, b)
    return builtins.max(a, b)


def ceildiv(a: Any, b: Any) -> Any:
    """``pypto.ceildiv(a, b)``: ceil(a / b) of ints or symbolic scalars (b > 0)."""
    return (a + b - 1) // b


def bytes_of(dtype: Any) -> int:
    """``pypto.bytes_of(dtype)``: the bytes of one element of ``dtype`` (PyPTO's figure for the
    dtypes with no CPU arithmetic here too: 1 for the 4-bit ones, whose elements are bytes)."""
    if isinstance(dtype, UnsupportedDType):
        return dtype.nbytes
    if isinstance(dtype, PackedDType):
        return 1
    return int(_core.dtype_bytes(check_dtype(dtype, "pypto.bytes_of")))


def _min(*args: Any, **kwargs: Any) -> Any:
    if len(args) == 2 and not kwargs and any(_symbolic(a) for a in args):
        return _core.sym_min(*args)
    return builtins.min(*args, **kwargs)


def _max(*args: Any, **kwargs: Any) -> Any:
    if len(args) == 2 and not kwargs and any(_symbolic(a) for a in args):
        return _core.sym_max(*args)
    return builtins.max(*args, **kwargs)


_HELPERS = {"_pypto_branch": _Branch, "_pypto_and": _and, "_pypto_or": _or, "_pypto_not": _not, "_pypto_min": _min,
            "_pypto_max": _max}


def _builtin_minmax(fn: Callable[..., Any], fdef: ast.FunctionDef) -> List[ast.Name]:
    """The loads of Python's own min / max in `fdef` (not a global, local or parameter of that name)."""
    shadowed = {n.id for n in ast.walk(fdef) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    a = fdef.args
    shadowed |= {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
    return [n for n in ast.walk(fdef) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
            and n.id in ("min", "max") and n.id not in shadowed and n.id not in fn.__globals__
            and n.id not in fn.__code__.co_freevars]


_REWRITTEN: Dict[Any, Callable[..., Any]] = {}  # helper function -> its rewritten version


@contextlib.contextmanager
def helpers_with_runtime_branches(fn: Callable[..., Any]) -> Iterator[None]:
    """While a jit function traces: the plain functions of its module (and of modules in its
    directory) that its globals name run rewritten, so an `if pypto.cond(...)` in a helper the
    kernel calls (`compute(...)` defined beside it) is a runtime branch too. An `if` on a Python
    value still decides at trace time, so the helpers mean the same; the module's names are
    restored after the trace."""
    g = getattr(fn, "__globals__", None)
    home = os.path.dirname(getattr(getattr(fn, "__code__", None), "co_filename", "") or "")
    swapped: List[Tuple[str, Any]] = []
    if g is not None and home:
        for name, obj in list(g.items()):
            if (not isinstance(obj, types.FunctionType) or obj is fn or name.startswith("_pypto")
                    or os.path.dirname(obj.__code__.co_filename) != home):
                continue
            new = _REWRITTEN.get(obj)  # the function, not its code: two closures share one code
            if new is None:
                new = _REWRITTEN[obj] = with_runtime_branches(obj)
            if new is not obj:
                swapped.append((name, obj))
                g[name] = new
    try:
        yield
    finally:
        for name, obj in swapped:
            g[name] = obj  # type: ignore[index]


def with_runtime_branches(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` with its `if` statements rewritten (see the module doc), or `fn` itself when it has
    none or its source is not available. A bound method (a ``@pl.program``'s function, bound to
    the program) is rewritten as its function and bound again."""
    if inspect.ismethod(fn):
        new_fn = with_runtime_branches(fn.__func__)
        return fn if new_fn is fn.__func__ else types.MethodType(new_fn, fn.__self__)
    try:
        src = textwrap.dedent(inspect.getsource(fn))
        tree = ast.parse(src)
    except (OSError, TypeError, SyntaxError, IndentationError):
        return fn
    fdef = tree.body[0] if tree.body else None
    if not isinstance(fdef, ast.FunctionDef):
        return fn
    minmax = _builtin_minmax(fn, fdef)
    if not minmax and not any(isinstance(n, ast.If) for n in ast.walk(fdef)):
        return fn
    for n in minmax:
        n.id = "_pypto_" + n.id
    # Annotations and defaults stay those of `fn` (evaluated where it was defined).
    fdef.decorator_list = []
    fdef.returns = None
    a = fdef.args
    for arg in a.posonlyargs + a.args + a.kwonlyargs + ([a.vararg] if a.vararg else []) + (
            [a.kwarg] if a.kwarg else []):
        arg.annotation = None
    a.defaults, a.kw_defaults = [], [None] * len(a.kwonlyargs)
    _IfRewriter(fdef).visit(fdef)
    free = list(fn.__code__.co_freevars)
    params = [ast.arg(arg=n) for n in list(_HELPERS) + free]
    factory = ast.FunctionDef(name="_pypto_factory", args=ast.arguments(posonlyargs=[], args=params, kwonlyargs=[],
                                                                        kw_defaults=[], defaults=[]),
                              body=[fdef, ast.Return(ast.Name(fdef.name, ast.Load()))], decorator_list=[])
    for node in (factory, factory.body[1]):
        ast.copy_location(node, fdef)
    module = ast.Module(body=[factory], type_ignores=[])
    ast.increment_lineno(module, fn.__code__.co_firstlineno - 1)
    ast.fix_missing_locations(module)
    try:
        code = compile(module, fn.__code__.co_filename, "exec", dont_inherit=True)
        cells = [c.cell_contents for c in (fn.__closure__ or ())]
        ns: Dict[str, Any] = {}
        exec(code, fn.__globals__, ns)  # noqa: S102 - the user's own function, rewritten
        new = ns["_pypto_factory"](*_HELPERS.values(), *cells)
    except Exception:  # noqa: BLE001 - an unusual function (empty cells, ...): trace it as written
        return fn
    new.__defaults__ = fn.__defaults__
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__annotations__ = dict(getattr(fn, "__annotations__", {}))
    return new

