"""``pl.parse(code)`` / ``pl.loads(path)``: the ``@pl.function`` a text defines, and
``pypto.ir.serialize`` / ``pypto.ir.deserialize`` of what they return.

The text is executed (trusted input only, as upstream says) in a fresh namespace where ``pl``
and ``pld`` are bound; the one ``@pl.function`` it defines comes back as a ``ParsedFunction``, a
``pypto.ir.Function``: ``name``, ``func_type``, ``params`` and ``return_types`` (from the
annotations), ``as_python()``, and it runs when called with arrays (``compile`` / ``lower`` as a
``@pl.jit`` entry). Its body is traced when it is first compiled, so an error in the body is
reported then (at its line), not by ``parse``.

A bare ``@pl.function`` is upstream's ``Opaque`` function, whose body holds tensor-level ops;
here its body is traced in one ``CORE_GROUP`` scope (the compiler splits it into kernels), so
``pl.add(x, y)`` on whole tensors runs. ``type=Orchestration`` (or ``role=Orchestrator``)
keeps the orchestration rules (ops inside ``pl.at``); ``InCore`` / ``AIC`` / ``AIV`` their core.

A text that defines a ``@pl.program`` class instead gives that program (``pl.program``'s
Program), as upstream's ``parse`` auto-detects.

Deliberate differences from hw-native-sys pypto (docs/porting.md): ``as_python()`` prints the
function's source and, as comments, what this compiler made of it (its tensor, tile and block
levels, compiled for the annotated shapes), not a print of upstream's IR; ``serialize`` writes
the text the function was parsed from (versioned JSON, see ``serialize``), not msgpack of an IR,
and ``deserialize`` parses it again.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import itertools
import json
import linecache
import os
import sys
import textwrap
import threading
import types
import weakref
from typing import Any, Dict, List, Optional, Tuple, Union

import pypto._core as _core
from ...core._tracing import _format_loc, maybe_recorder
from ...core.tensor import DYNAMIC, STATIC, Tensor
from . import distributed as _pld
from ._host import HostFunction
from ._lowered import Function, Program
from ._program import KernelFunction, LanguageFunction
from ._program_class import Program as PlProgram
from ._types import Direction, FunctionType, Level, Role, _Directed, dynamic

__all__ = ["parse", "loads", "parse_program", "loads_program", "serialize", "deserialize", "serialize_to_file",
           "deserialize_from_file", "ParsedFunction", "Param", "TypeInfo", "ParserSyntaxError", "DeserializationError"]

SourceMap = Dict[int, Tuple[str, int, int]]


class ParserSyntaxError(_core.UserError, _core.ParserError):
    """Executing the text failed (a name it does not define, a bad annotation or decorator
    argument): upstream's ``ParserSyntaxError``. A ``pypto.UserError`` and a
    ``pypto.error.ParserError``."""


class DeserializationError(_core.UserError, RuntimeError):
    """``pypto.ir.deserialize`` was given data it did not write; a RuntimeError, as upstream's."""


# --- the texts' sources -------------------------------------------------------------------------

_sources_lock = threading.Lock()
_source_names: Dict[Tuple[str, str], str] = {}  # (filename, text) -> the name its code is compiled under
_counters: Dict[str, "itertools.count[int]"] = {}


def _source_name(filename: str, code: str) -> str:
    """The file name the text's code is compiled under, with the text in ``linecache``.

    The tracer reads a function's source (runtime ``if``s, carried loop values, error lines)
    through ``linecache`` when it compiles, which may be long after ``parse`` (the file of
    ``loads`` may be gone) and caches the parse of each file name for good: so each distinct
    text gets its own name, ``<filename>#<n>``, which no real file has. A text parsed again
    reuses its name. The entries stay for the process (a parsed function may compile any time)."""
    with _sources_lock:
        name = _source_names.get((filename, code))
        if name is None:
            n = next(_counters.setdefault(filename, itertools.count(1)))
            name = _source_names[(filename, code)] = f"{filename}#{n}"
        _cache_source(name, code)
    return name


def _cache_source(name: str, code: str) -> None:
    # mtime None: linecache.checkcache leaves the entry (there is no file to check it against).
    linecache.cache[name] = (len(code), None, code.splitlines(keepends=True), name)


# --- the types of a parsed function ----------------------------------------------------------------


class TypeInfo:
    """The annotated type of a parameter or result: ``text`` (the annotation as written, e.g.
    ``pl.Tensor[[128], pl.FP32]``), ``annotation`` (its value) and, for a tensor, ``shape`` and
    ``dtype``."""

    def __init__(self, text: str, annotation: Any) -> None:
        self.text = text
        self.annotation = annotation

    @property
    def _tensor(self) -> Optional[Tensor]:
        ann = self.annotation.inner if isinstance(self.annotation, _Directed) else self.annotation
        return ann if isinstance(ann, Tensor) and not ann.is_traced else None

    @property
    def shape(self) -> Optional[List[Any]]:
        t = self._tensor
        return list(t.shape) if t is not None and t.shape is not None else None

    @property
    def dtype(self) -> Any:
        t = self._tensor
        return t.dtype if t is not None else None

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"TypeInfo({self.text!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TypeInfo) and self.text == other.text

    def __hash__(self) -> int:
        return hash(self.text)


class Param:
    """A parameter of a parsed function: ``name`` (also ``name_hint``, upstream's ``Var``
    field), ``type`` (a TypeInfo) and ``direction`` (``pl.In`` unless annotated otherwise)."""

    def __init__(self, name: str, type_: TypeInfo, direction: Direction) -> None:
        self.name = name
        self.type = type_
        self.direction = direction

    @property
    def name_hint(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"Param({self.name}: {self.type.text or '?'}, {self.direction.value})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Param) and (self.name, self.type, self.direction) == (
            other.name, other.type, other.direction)

    def __hash__(self) -> int:
        return hash((self.name, self.type, self.direction))


class ParsedFunction(Function):
    """A ``@pl.function`` from ``pl.parse`` / ``pl.loads`` (a ``pypto.ir.Function``).

    ``name``, ``func_type`` (``pl.FunctionType``: ``Opaque`` for a bare ``@pl.function``),
    ``params``, ``return_types`` (from the annotations; an unannotated result gives none),
    ``source`` (the whole text) and ``filename``; ``level`` is the scope its body is traced in
    (a ``pl.Level``, or None for an orchestration). Called with arrays (numpy or torch) it runs;
    ``compile(...)`` / ``lower(...)`` take arrays or shapes. Two parsed functions are equal when
    they have the same name, type and text."""

    def __init__(self, kernel: Union[KernelFunction, HostFunction], func_type: FunctionType, level: Optional[Level],
                 source: str, filename: str, code_name: str, fdef: ast.FunctionDef) -> None:
        super().__init__(kernel.fn.__name__, func_type)
        self.fn = kernel.fn
        self.level = level
        self.source = source
        self.filename = filename
        self._code_name = code_name
        self._fdef = fdef
        self._host = kernel if isinstance(kernel, HostFunction) else None
        self._entry: Optional[LanguageFunction] = None
        self._kernel: Optional[KernelFunction] = None
        if self._host is None:
            self._entry = LanguageFunction(self.fn, level)
            # Its string annotations resolve in the text's namespace, not in parse()'s caller.
            self._entry._def_locals = {}
            # Called while another function is traced: a function of that program, in its scope
            # (for an Opaque function the CORE_GROUP one above, which pl.function does not give).
            if isinstance(kernel, KernelFunction) and (kernel.inline or kernel.level is level):
                self._kernel = kernel
            else:
                self._kernel = KernelFunction(self.fn, level)
                for attr in ("func_type", "declared_level", "role"):
                    setattr(self._kernel, attr, getattr(kernel, attr, None))
        self.params = self._params()
        self.return_types = self._return_types()
        self._levels: Optional[str] = None

    # --- annotations ---------------------------------------------------------------------------

    def _evaluated(self, ann: Any) -> Any:
        if not isinstance(ann, str):
            return ann
        try:  # a string annotation (`from __future__ import annotations` in the text)
            return eval(ann, self.fn.__globals__)  # noqa: S307 - the text's own annotation
        except Exception:  # noqa: BLE001 - kept as text; the tracer reports it when it compiles
            return None

    def _params(self) -> List[Param]:
        a = self._fdef.args
        nodes = {arg.arg: arg.annotation for arg in a.posonlyargs + a.args + a.kwonlyargs}
        out: List[Param] = []
        for name, p in inspect.signature(self.fn).parameters.items():
            node = nodes.get(name)
            ann = self._evaluated(p.annotation) if p.annotation is not inspect.Parameter.empty else None
            direction = ann.direction if isinstance(ann, _Directed) else Direction.In
            out.append(Param(name, TypeInfo(ast.unparse(node) if node is not None else "", ann), direction))
        return out

    def _return_types(self) -> List[TypeInfo]:
        node = self._fdef.returns
        if node is None or (isinstance(node, ast.Constant) and node.value is None):
            return []
        ann = self._evaluated(inspect.signature(self.fn).return_annotation)
        head = node.value if isinstance(node, ast.Subscript) else None
        if (isinstance(head, ast.Name) and head.id in ("tuple", "Tuple")) or (
                isinstance(head, ast.Attribute) and head.attr == "Tuple"):
            assert isinstance(node, ast.Subscript)
            elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            args = list(getattr(ann, "__args__", ()) or ())
            if len(args) != len(elts):
                args = [None] * len(elts)
            return [TypeInfo(ast.unparse(e), v) for e, v in zip(elts, args)]
        return [TypeInfo(ast.unparse(node), ann)]

    # --- running --------------------------------------------------------------------------------

    def _entry_function(self, what: str) -> LanguageFunction:
        if self._entry is None:
            raise _core.UserError(f"{self.name} is a host orchestrator (@pl.function(level=..., role=Orchestrator)): "
                                  f"call it; it has no single program to {what}")
        _cache_source(self._code_name, self.source)  # in case linecache was cleared since parse
        return self._entry

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._host is not None:
            return self._host(*args, **kwargs)
        if maybe_recorder() is not None:
            assert self._kernel is not None
            return self._kernel(*args, **kwargs)
        return self._entry_function("run")(*args, **kwargs)

    def compile(self, *args: Any, **kwargs: Any) -> Any:
        """Traced and compiled for these arguments (arrays, torch tensors, or shapes)."""
        if self._host is not None:
            return self._host.compile(*args, **kwargs)
        return self._entry_function("compile").compile(*args, **kwargs)

    def lower(self, *args: Any, **kwargs: Any) -> Program:
        """``pypto.ir.Program`` of this function compiled for these arguments (arrays or shapes)."""
        return self._entry_function("lower").lower(*args, **kwargs)

    # --- printing ---------------------------------------------------------------------------------

    def _annotated_args(self) -> Tuple[Optional[List[Any]], str]:
        """The arguments the annotations give (a shape per tensor, defaults), and how they read;
        or None and why there are none."""
        assert self._entry is not None
        args: List[Any] = []
        said: List[str] = []
        for p in self._entry.params:
            if p.kind == "tensor" and p.ann is not None:
                dims = list(p.ann.shape) if p.ann.shape is not None else None
                if dims is None or p.ann.dtype is None or any(d is STATIC or d is Ellipsis for d in dims):
                    return None, f"parameter '{p.name}' takes its shape or dtype from the argument"
                # A DYNAMIC dim is symbolic in the program whatever the size handed in.
                args.append([1 if d is DYNAMIC else int(d) for d in dims])
                said.append(f"{p.name}: {_core.dtype_name(p.ann.dtype)}"
                            f"[{', '.join('dynamic' if d is DYNAMIC else str(d) for d in dims)}]")
            elif p.default is not inspect.Parameter.empty:
                args.append(p.default)
                said.append(f"{p.name}={p.default!r}")
            else:
                return None, f"parameter '{p.name}' has no tensor annotation with a shape and no default"
        return args, ", ".join(said)

    def _compiled_levels(self) -> str:
        if self._levels is not None:
            return self._levels
        if self._host is not None:
            self._levels = "a host orchestrator: its rank functions are compiled when it is called"
            return self._levels
        args, said = self._annotated_args()
        if args is None:
            self._levels = f"not compiled from the annotations: {said}; fn.lower(arrays or shapes) compiles it"
            return self._levels
        try:
            program = self.lower(*args)
        except (_core.InternalError, AssertionError):
            raise  # a compiler bug: not the text's
        except Exception as e:  # noqa: BLE001 - the printer shows why the body does not compile
            self._levels = f"not compiled for the annotated shapes ({said}): {type(e).__name__}: {e}"
            return self._levels
        self._levels = (f"compiled for the annotated shapes ({said}): the tensor, tile and block levels\n"
                        + program.as_python().strip())
        return self._levels

    def function_text(self) -> str:
        """The function's own lines of the text (decorators included), dedented."""
        lines = self.source.splitlines()
        first = min([d.lineno for d in self._fdef.decorator_list] + [self._fdef.lineno])
        last = self._fdef.end_lineno or self._fdef.lineno
        return textwrap.dedent("\n".join(lines[first - 1:last]))

    def as_python(self, prefix: str = "pl", concise: bool = False, format: bool = True) -> str:  # noqa: A002
        """The function as Python: its source as written, then, as comments, what this compiler
        made of it (traced and compiled for the annotated shapes: its tensor graph, tile graph
        and kernels), or why it does not compile. A function that uses only ``pl``'s names
        parses again from it with ``pl.parse``. ``prefix``, ``concise`` and ``format``
        (upstream's printer options) are accepted; the source prints as written."""
        comments: List[str] = []
        for ln in self._compiled_levels().splitlines():
            if ln.strip() or (comments and comments[-1] != "#"):  # one blank line between the levels
                comments.append(("# " + ln).rstrip())
        return self.function_text() + "\n" + "\n".join(comments)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ParsedFunction) and (self.name, self.func_type, self.source) == (
            other.name, other.func_type, other.source)

    def __hash__(self) -> int:
        return hash((self.name, self.func_type, self.source))

    def __repr__(self) -> str:
        return f"Function({self.name!r}, {self.func_type.name}, {len(self.params)} params)"


Parsed = Union[ParsedFunction, PlProgram]
# The programs parse returned, with (filename, text): what serialize writes for them.
_parsed_programs: "weakref.WeakKeyDictionary[PlProgram, Tuple[str, str]]" = weakref.WeakKeyDictionary()


# --- parse / loads ----------------------------------------------------------------------------------


class _Namespace(dict):  # type: ignore[type-arg]
    """The text's globals. While its module body runs, a name it never defines is a dynamic dim,
    as upstream (``pl.Tensor[[M, 64], pl.FP32]`` without ``M = pl.dynamic("M")``: its printed
    IR parses again); builtins are found first. Afterwards a missing name is a NameError."""

    resolving = False

    def __missing__(self, key: str) -> Any:
        if key in builtins.__dict__:
            return builtins.__dict__[key]
        if self.resolving and isinstance(key, str) and key.isidentifier() and not (
                key.startswith("__") and key.endswith("__")):
            self[key] = dynamic(key)
            return self[key]
        raise KeyError(key)


_module_ids = itertools.count(1)


def _syntax_error(e: SyntaxError, filename: str, code: str) -> SyntaxError:
    """`e` as upstream words it, at the text's `filename` (and with its line's text)."""
    lines = code.splitlines()
    text = e.text if e.text is not None or not e.lineno or e.lineno > len(lines) else lines[e.lineno - 1]
    err = SyntaxError(f"Failed to compile code from {filename}: {e.msg}", (filename, e.lineno, e.offset, text))
    err.end_lineno, err.end_offset = getattr(e, "end_lineno", None), getattr(e, "end_offset", None)  # 3.10+
    return err


def _exec_error_line(tb: Any, code_name: str) -> Optional[int]:
    """The last line of the text the traceback passes through."""
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == code_name:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _defined(ns: Dict[str, Any], code_name: str, module_name: str) -> Tuple[List[Any], List[Tuple[str, Any]]]:
    """The @pl.function objects and the (name, @pl.program) the text itself defines, in the
    order it binds them (``pl.function`` records ``func_type``: @pl.jit.incore helpers have none)."""
    functions: Dict[int, Any] = {}
    programs: Dict[int, Tuple[str, Any]] = {}
    for name, v in list(ns.items()):
        if isinstance(v, (KernelFunction, HostFunction)) and getattr(v, "func_type", None) is not None and \
                getattr(getattr(v.fn, "__code__", None), "co_filename", None) == code_name:
            functions.setdefault(id(v), v)
        elif isinstance(v, PlProgram) and getattr(v.cls, "__module__", None) == module_name:
            programs.setdefault(id(v), (name, v))
    return list(functions.values()), list(programs.values())


def _function_def(tree: ast.Module, fn: Any) -> ast.FunctionDef:
    first = fn.__code__.co_firstlineno  # the first decorator's line
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == fn.__name__ and \
                min([d.lineno for d in node.decorator_list] + [node.lineno]) == first:
            return node
    raise _core.InternalError(f"pl.parse: the definition of {fn.__name__} (line {first}) is not in the text")


def _placement(kernel: Union[KernelFunction, HostFunction]) -> Tuple[FunctionType, Optional[Level]]:
    """The function's type (as ``pl.function`` recorded it) and the scope its body is traced in."""
    ftype = getattr(kernel, "func_type", None) or FunctionType.Opaque
    if isinstance(kernel, HostFunction):
        return ftype, Level.HOST
    if kernel.level is not None:
        return ftype, kernel.level
    if ftype is FunctionType.Orchestration or getattr(kernel, "role", None) is Role.Orchestrator:
        return ftype, None
    # Opaque (a bare @pl.function), Inline, ...: upstream's tensor-level function body; its ops
    # run on chip, one CORE_GROUP scope for the compiler to split into kernels.
    return ftype, Level.CORE_GROUP


def parse(code: str, filename: str = "<string>", source_map: Optional[SourceMap] = None) -> Parsed:
    """``pl.parse(code)``: the ``@pl.function`` the text defines, as a ``pypto.ir.Function``
    (a ``ParsedFunction``), or the ``@pl.program`` class it defines (its ``pl`` Program).

    The text runs (trusted input only: it is executed) with ``pl`` (``pypto.language``) and
    ``pld`` (``pypto.language.distributed``) bound, whether or not it imports them. ``filename``
    names it in messages; ``source_map`` (``{line: (file, line, column)}``) points an error while
    the text runs at the original place instead.

    Raises SyntaxError when the text is not Python, a ``ValueError`` (a ``pypto.UserError``)
    when it defines no ``@pl.function`` or ``@pl.program``, or several, and ``ParserSyntaxError`` when running it
    fails (a name it does not define, a bad annotation)."""
    if not isinstance(code, str):
        raise _core.UserError(f"pl.parse: code must be a str, got {type(code).__name__}")
    if not isinstance(filename, str):
        raise _core.UserError(f"pl.parse: filename must be a str, got {type(filename).__name__}")
    try:
        tree = ast.parse(code, filename)
    except SyntaxError as e:
        raise _syntax_error(e, filename, code) from e
    code_name = _source_name(filename, code)
    try:
        compiled = compile(tree, code_name, "exec", dont_inherit=True)
    except SyntaxError as e:  # what the compiler, not the parser, refuses (`return` outside a function)
        raise _syntax_error(e, filename, code) from e

    pl = sys.modules[__package__]  # this package: `pypto.language`
    module_name = f"__pypto_parse_{next(_module_ids)}__"
    ns = _Namespace(__name__=module_name, __file__=code_name, __builtins__=builtins, pl=pl, pld=_pld)
    # A module of that name while the text runs: what looks a definition's module up finds it.
    module = types.ModuleType(module_name)
    module.__file__ = code_name
    sys.modules[module_name] = module
    ns.resolving = True
    try:
        exec(compiled, ns)  # noqa: S102 - pl.parse runs the text, as upstream
    except (_core.UserError, _core.ParserError, _core.InternalError, AssertionError):
        raise  # located already (a pl error at the text's line), or a compiler bug
    except Exception as e:  # noqa: BLE001 - any other failure of the text: at its line
        line = _exec_error_line(e.__traceback__, code_name)
        where = ""
        if line is not None:
            file, at, text = filename, line, code.splitlines()[line - 1] if line <= len(code.splitlines()) else ""
            if source_map and line in source_map:
                file, at, _col = source_map[line]
                text = linecache.getline(file, at).rstrip("\n")
            where = _format_loc((file, at, len(text) - len(text.lstrip()), text))
        raise ParserSyntaxError(f"{type(e).__name__}: {e}" + where) from e
    finally:
        ns.resolving = False
        sys.modules.pop(module_name, None)

    functions, programs = _defined(ns, code_name, module_name)
    if not functions and not programs:
        jit = [v.fn.__name__ for v in ns.values() if isinstance(v, LanguageFunction)]
        raise _core.UserError(
            f"No @pl.function or @pl.program found in {filename}. Make sure your code contains a function decorated "
            "with @pl.function or a class decorated with @pl.program."
            + (f" (@pl.jit {jit} are entries, not @pl.function)" if jit else ""))
    if len(functions) + len(programs) > 1:
        names = [k.fn.__name__ for k in functions] + [n for n, _ in programs]
        raise _core.UserError(
            f"Multiple functions/programs found in {filename}: {names}. pl.parse() can only parse code containing a "
            "single function or program. Consider using separate calls or parsing from separate files.")
    if programs:
        program = programs[0][1]
        _parsed_programs[program] = (filename, code)
        return program
    kernel = functions[0]
    ftype, level = _placement(kernel)
    return ParsedFunction(kernel, ftype, level, code, filename, code_name, _function_def(tree, kernel.fn))


def loads(filepath: Union[str, "os.PathLike[str]"]) -> Parsed:
    """``pl.loads(path)``: the ``@pl.function`` (or ``@pl.program``) the file defines (read as UTF-8; see ``parse``).
    FileNotFoundError when there is no such file."""
    path = os.fspath(filepath)
    with open(path, encoding="utf-8") as f:
        code = f.read()
    return parse(code, filename=path)


def parse_program(code: str, filename: str = "<string>") -> PlProgram:
    """``pl.parse_program(code)`` (upstream deprecates it for ``parse``): the ``@pl.program`` the
    text defines; a ValueError when it defines a function instead."""
    made = parse(code, filename)
    if not isinstance(made, PlProgram):
        raise _core.UserError(f"Expected @pl.program but found @pl.function in {filename}. Use pl.parse() for "
                              "auto-detection or ensure your code contains @pl.program.")
    return made


def loads_program(filepath: Union[str, "os.PathLike[str]"]) -> PlProgram:
    """``pl.loads_program(path)`` (upstream deprecates it for ``loads``): ``parse_program`` of the
    file."""
    path = os.fspath(filepath)
    with open(path, encoding="utf-8") as f:
        return parse_program(f.read(), filename=path)


# --- serialize / deserialize ----------------------------------------------------------------------------

_FORMAT = "pypto.language.text"
_VERSION = 1


def serialize(node: Parsed) -> bytes:
    """``pypto.ir.serialize(func)``: bytes ``deserialize`` rebuilds the function (or program) from.

    Upstream writes msgpack of its IR; this compiler has no IR reader, so the bytes are the text
    the function was parsed from, which rebuilds it exactly, as UTF-8 JSON (keys sorted)::

        {"format": "pypto.language.text", "version": 1,
         "kind": "function" or "program", "name": <its name>,
         "func_type": <a function's pl.FunctionType value; absent for a program>,
         "filename": <the name parse gave the text>, "source": <the whole text>}

    Only what ``pl.parse`` / ``pl.loads`` returned can be serialized (its text is all it needs);
    for a function of a module, ``pl.parse`` its source first."""
    doc: Dict[str, Any] = {"format": _FORMAT, "version": _VERSION}
    if isinstance(node, ParsedFunction):
        doc.update(kind="function", name=node.name, func_type=node.func_type.value, filename=node.filename,
                   source=node.source)
    elif isinstance(node, PlProgram) and node in _parsed_programs:
        filename, source = _parsed_programs[node]
        doc.update(kind="program", name=node.name, filename=filename, source=source)
    else:
        raise _core.UserError(f"pypto.ir.serialize: takes a function or program pl.parse / pl.loads returned, got "
                              f"{type(node).__name__}\nhint: pl.parse the function's source, then serialize that")
    return json.dumps(doc, ensure_ascii=False, sort_keys=True).encode("utf-8")


def deserialize(data: Union[bytes, bytearray, memoryview]) -> Parsed:
    """``pypto.ir.deserialize(data)``: what ``serialize`` wrote, parsed again from its text (a
    function equal to the one serialized). A DeserializationError (a RuntimeError and a
    ``pypto.UserError``) for data it did not write or a newer version of the format."""
    if isinstance(data, (bytearray, memoryview)):
        data = bytes(data)
    if not isinstance(data, bytes):
        raise DeserializationError(f"pypto.ir.deserialize: takes bytes, got {type(data).__name__}")
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise DeserializationError(f"pypto.ir.deserialize: the data is not what pypto.ir.serialize wrote (not UTF-8 "
                                   f"JSON: {e})") from None
    if not isinstance(doc, dict) or doc.get("format") != _FORMAT:
        raise DeserializationError("pypto.ir.deserialize: the data is not what pypto.ir.serialize wrote (no "
                                   f"\"format\": \"{_FORMAT}\")")
    version = doc.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= _VERSION:
        raise DeserializationError(f"pypto.ir.deserialize: format version {version!r} is not one this pypto reads "
                                   f"(1 to {_VERSION})")
    kind = doc.get("kind")
    keys = ("name", "func_type", "filename", "source") if kind == "function" else ("name", "filename", "source")
    fields = {k: doc.get(k) for k in keys}
    bad = [k for k, v in fields.items() if not isinstance(v, str)]
    if kind not in ("function", "program") or bad:
        raise DeserializationError(f"pypto.ir.deserialize: the data has kind {kind!r} (a function or program) "
                                   f"and lacks the text field(s) {bad}")
    made = parse(fields["source"], filename=fields["filename"])
    if kind == "function":
        if not isinstance(made, ParsedFunction) or made.name != fields["name"] or \
                made.func_type.value != fields["func_type"]:
            raise DeserializationError(f"pypto.ir.deserialize: the text defines {made!r}, the data names the "
                                       f"function {fields['name']} ({fields['func_type']})")
    elif not isinstance(made, PlProgram) or made.name != fields["name"]:
        raise DeserializationError(f"pypto.ir.deserialize: the text defines {made!r}, the data names the program "
                                   f"{fields['name']}")
    return made


def serialize_to_file(node: Parsed, path: Union[str, "os.PathLike[str]"]) -> None:
    """``pypto.ir.serialize_to_file(func, path)``: ``serialize(func)`` written to `path`."""
    data = serialize(node)
    with open(os.fspath(path), "wb") as f:
        f.write(data)


def deserialize_from_file(path: Union[str, "os.PathLike[str]"]) -> Parsed:
    """``pypto.ir.deserialize_from_file(path)``: ``deserialize`` of the file's bytes."""
    with open(os.fspath(path), "rb") as f:
        return deserialize(f.read())
