"""python/pypto/_isa.pyi matches the compiled pypto._isa: the same public names, each callable,
with the same keyword-usable parameter names as the binding's own signature."""

import ast
import pathlib
import re

import pypto
import pypto._isa as _isa

STUB = pathlib.Path(pypto.__file__).with_name("_isa.pyi")


def stub_functions():
    tree = ast.parse(STUB.read_text())
    return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}


def binding_params(f):
    """Parameter names from nanobind's signature line, e.g. 'call(name: str, ...) -> None';
    names before a '/' are positional-only and left out."""
    first = f.__doc__.splitlines()[0]
    inside = first[first.index("(") + 1:first.rindex(")")]
    depth, parts, cur = 0, [], ""
    for ch in inside:  # split on top-level commas only (types contain brackets)
        depth += ch in "[("
        depth -= ch in "])"
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    if "/" in parts:
        parts = parts[parts.index("/") + 1:]
    return [re.match(r"\*{0,2}(\w+)", p).group(1) for p in parts if p != "*"]


def test_stub_names_exist_in_module():
    funcs = stub_functions()
    assert funcs, "no functions in the stub"
    for name in funcs:
        assert callable(getattr(_isa, name, None)), f"{name} is in _isa.pyi but not in pypto._isa"


def test_module_names_are_in_stub():
    public = {n for n in dir(_isa) if not n.startswith("_")}
    assert public == set(stub_functions()), "pypto._isa and _isa.pyi list different names"


def test_parameter_names_match():
    for name, node in stub_functions().items():
        stub = [a.arg for a in node.args.args + node.args.kwonlyargs]
        assert stub == binding_params(getattr(_isa, name)), name


def test_stub_imports_resolve():
    # The stub's own imports must exist (a type checker would fail on a typo).
    import collections.abc  # noqa: F401
    import typing  # noqa: F401

    import numpy.typing  # noqa: F401

    tree = ast.parse(STUB.read_text())
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            mod = __import__(node.module, fromlist=[a.name for a in node.names])
            for a in node.names:
                assert hasattr(mod, a.name), f"{node.module}.{a.name}"
