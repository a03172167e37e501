"""Runtime branches: an `if` in the body of a @pypto.jit function whose condition is a symbolic
value (a loop index, a dynamic dim, ``pypto.cond(...)``, ``pypto.is_loop_begin(i)``) runs at run
time; one on a Python value keeps deciding at trace time.

The function's `if` statements are rewritten once, before the first trace, into

    _pypto_b = _pypto_branch(test)
    for _pypto_ in _pypto_b.then():      # once, or never, or a recorded branch
        <body>
    for _pypto_ in _pypto_b.otherwise():
        <orelse>
    if _pypto_b.symbolic: <each name assigned in the branches> = _pypto_b.poison("<name>")

A recorded branch is a loop of 0 or 1 iterations over [0, truth(test)), so every level of the
compiler handles it as it handles pypto.loop, and the dumps show both paths. Each path is
traced once. A name assigned in a runtime branch cannot be used after it (it holds the value
of whichever path ran): it is bound to a value that raises a clear UserError when used, and a
tensor computed in a branch and read outside is refused by the recorder. An `if` whose body
holds a `break` or `continue` of an enclosing Python loop is left alone.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import textwrap
from typing import Any, Callable, Dict, Iterator, List, Tuple

from . import _core
from ._core import SymbolicScalar
from ._tracing import _format_loc, current_recorder, user_loc

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


class _Unavailable:
    """A name assigned in a runtime branch, after the branch: any use is an error."""

    def __init__(self, name: str, line: int) -> None:
        self._name, self._line = name, line

    def fail(self) -> None:
        raise _core.UserError(
            f"`{self._name}` is assigned in the runtime branch at line {self._line} (an `if` on a value known only "
            "when the kernel runs), so after it its value depends on the branch taken" + _format_loc(user_loc())
            + "\nhint: write the result into a tensor in each branch (out[...] = value) and read that tensor")

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        self.fail()

    def __repr__(self) -> str:
        return f"<{self._name}: assigned in a runtime branch>"


def _poison_dunder(name: str) -> Callable[..., Any]:
    def method(self: _Unavailable, *args: Any) -> Any:
        self.fail()
    method.__name__ = name
    return method


for _m in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__",
           "__floordiv__", "__mod__", "__pow__", "__neg__", "__bool__", "__getitem__", "__setitem__", "__lt__",
           "__le__", "__gt__", "__ge__", "__int__", "__index__", "__iter__", "__len__", "__call__", "__and__",
           "__or__"):
    setattr(_Unavailable, _m, _poison_dunder(_m))


class _Branch:
    """One rewritten `if`: decides at trace time, or records both paths as runtime branches."""

    def __init__(self, test: Any) -> None:
        self.test = test
        self.symbolic = _symbolic(test)
        self.line = user_loc()[1]

    def _path(self, negate: bool) -> Iterator[None]:
        if not self.symbolic:
            if bool(self.test) != negate:
                yield None
            return
        rec = current_recorder("if")
        rec.begin_branch(self.test, negate, user_loc())
        try:
            yield None
        finally:
            rec.end_loop()

    def then(self) -> Iterator[None]:
        return self._path(False)

    def otherwise(self) -> Iterator[None]:
        return self._path(True)

    def poison(self, name: str) -> _Unavailable:
        return _Unavailable(name, self.line)


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


def _exits_enclosing_loop(stmts: List[ast.stmt]) -> bool:
    """A break / continue in these statements that is not inside a loop of their own."""
    stack: List[ast.AST] = list(stmts)
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.Break, ast.Continue)):
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
        out: List[ast.stmt] = [
            ast.Assign(targets=[name(b, True)],
                       value=ast.Call(func=name("_pypto_branch"), args=[test], keywords=[])),
            path("then", node.body)]
        if node.orelse:
            out.append(path("otherwise", node.orelse))
        names = _assigned(node.body + node.orelse)
        if names:
            poison = [ast.Assign(targets=[name(n, True)],
                                 value=ast.Call(func=ast.Attribute(name(b), "poison", ast.Load()),
                                                args=[ast.Constant(n)], keywords=[])) for n in names]
            out.append(ast.If(test=ast.Attribute(name(b), "symbolic", ast.Load()), body=poison, orelse=[]))
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
    """``pypto.bytes_of(dtype)``: the bytes of one element of ``dtype``."""
    from ._dtypes import check_dtype
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


def with_runtime_branches(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` with its `if` statements rewritten (see the module doc), or `fn` itself when it has
    none or its source is not available."""
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

