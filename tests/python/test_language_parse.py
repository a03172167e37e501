"""pl.parse / pl.loads (a @pl.function or @pl.program from text), the parsed function's fields,
as_python and runs, pypto.ir.serialize / deserialize of it, and pl.transpose (hw-native-sys
pypto's examples/utils/parse_from_text.py uses them all). The names are imported from their
modules, so these tests do not depend on what pypto.language exports."""

import json
import linecache

import numpy as np
import pytest

import pypto
import pypto.language as pl
from _util import MODES, run_in
from pypto.frontends.language._parse import (DeserializationError, ParsedFunction, ParserSyntaxError, deserialize,
                                             deserialize_from_file, loads, loads_program, parse, parse_program,
                                             serialize, serialize_to_file)
from pypto.frontends.language._program_class import Program as PlProgram
from pypto.frontends.language._tensor_ops import transpose


@pytest.fixture
def with_transpose(monkeypatch):
    """pl.transpose bound on the module the texts see (until pypto.language exports it)."""
    monkeypatch.setattr(pl, "transpose", transpose, raising=False)


def _rand(shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


VECTOR_ADD = """
@pl.function
def vector_add(
    x: pl.Tensor[[128], pl.FP32],
    y: pl.Tensor[[128], pl.FP32],
) -> pl.Tensor[[128], pl.FP32]:
    result: pl.Tensor[[128], pl.FP32] = pl.add(x, y)
    return result
"""


# --- parse: the function and its fields --------------------------------------------------------------


def test_parse_gives_an_ir_function_with_name_params_and_return_types():
    f = parse(VECTOR_ADD)
    assert isinstance(f, pypto.ir.Function) and isinstance(f, ParsedFunction)
    assert f.name == "vector_add"
    assert f.func_type is pl.FunctionType.Opaque
    assert f.level is pl.Level.CORE_GROUP  # a bare @pl.function's tensor ops run on chip
    assert [p.name for p in f.params] == ["x", "y"] and f.params[0].name_hint == "x"
    assert [str(p.type) for p in f.params] == ["pl.Tensor[[128], pl.FP32]"] * 2
    assert f.params[0].type.shape == [128] and f.params[0].type.dtype == pl.FP32
    assert all(p.direction is pl.Direction.In for p in f.params)
    assert len(f.return_types) == 1 and f.return_types[0].shape == [128]
    assert f.source == VECTOR_ADD and f.filename == "<string>"


@pytest.mark.parametrize("mode", MODES)
def test_parsed_function_runs_and_gives_numpys_answer(mode):
    f = parse(VECTOR_ADD)
    x, y = _rand(128, seed=1), _rand(128, seed=2)
    np.testing.assert_array_equal(run_in(mode, f, x, y), x + y)


def test_parse_injects_pl_and_pld_without_an_import():
    f = parse("""
SEEN = (pl.__name__, pld.__name__)

@pl.function
def vector_mul(x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
    result: pl.Tensor[[64], pl.FP32] = pl.mul(x, 2.0)
    return result
""")
    assert f.fn.__globals__["SEEN"] == (pl.__name__, pl.__name__ + ".distributed")
    x = _rand(64)
    np.testing.assert_array_equal(f(x), x * 2.0)


def test_parse_with_its_own_import_and_future_annotations():
    f = parse("""
from __future__ import annotations
import pypto.language as pl

N = 32

@pl.function
def f(x: pl.Tensor[[N], pl.FP32], y: pl.Out[pl.Tensor[[N], pl.FP32]]) -> pl.Tensor[[N], pl.FP32]:
    y[:] = pl.exp(x)
    return pl.neg(x)
""")
    assert [str(p.type) for p in f.params] == ["pl.Tensor[[N], pl.FP32]", "pl.Out[pl.Tensor[[N], pl.FP32]]"]
    assert f.params[1].direction is pl.Direction.Out and f.params[1].type.shape == [32]
    x, y = _rand(32), np.zeros(32, np.float32)
    np.testing.assert_array_equal(f(x, y), -x)
    np.testing.assert_allclose(y, np.exp(x), rtol=1e-6)


def test_undefined_dim_names_in_annotations_are_dynamic_dims():
    # upstream's re-parse of printed IR: `M` never assigned pl.dynamic("M")
    f = parse("""
@pl.function
def rows(x: pl.Tensor[[M, 16], pl.FP32]) -> pl.Tensor[[M, 16], pl.FP32]:
    return pl.exp(x)
""")
    assert f.params[0].type.shape[0] is pypto.DYNAMIC
    for m in (3, 40):
        x = _rand((m, 16))
        np.testing.assert_allclose(f(x), np.exp(x), rtol=1e-6)


def test_a_name_the_body_does_not_define_is_a_name_error_when_it_compiles():
    f = parse("""
@pl.function
def bad(x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
    return pl.add(x, undefined_name)
""")
    assert "NameError: name 'undefined_name' is not defined" in f.as_python()
    with pytest.raises(NameError, match="undefined_name"):
        f(np.zeros(64, np.float32))


def test_the_types_of_function_are_kept():
    orch = parse("""
@pl.function(type=pl.FunctionType.Orchestration)
def orch(a: pl.Tensor[[256, 64], pl.FP32], out: pl.Out[pl.Tensor[[256, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(2):
            t = pl.load(a, [i * 128, 0], [128, 64])
            pl.store(pl.exp(t), [i * 128, 0], out)
    return out
""")
    assert orch.func_type is pl.FunctionType.Orchestration and orch.level is None and orch.return_types == []
    a, out = _rand((256, 64)), np.zeros((256, 64), np.float32)
    assert orch(a, out) is out
    np.testing.assert_allclose(out, np.exp(a), rtol=1e-6)

    aiv = parse("""
@pl.function(type=pl.FunctionType.AIV)
def relu_rows(a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    pl.store(pl.relu(pl.load(a, [0, 0], [16, 64])), [0, 0], out)
    return out
""")
    assert aiv.func_type is pl.FunctionType.AIV and aiv.level is pl.Level.AIV

    @pl.jit
    def entry(a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
        aiv(a, out)  # a parsed function called from an entry: a function of its program
        return out

    a, out = _rand((16, 64)), np.zeros((16, 64), np.float32)
    entry(a, out)
    np.testing.assert_array_equal(out, np.maximum(a, 0))


def test_jit_incore_helpers_are_not_counted_as_functions():
    f = parse("""
@pl.jit.incore
def helper(a, out):
    pl.store(pl.neg(pl.load(a, [0, 0], [8, 8])), [0, 0], out)

@pl.function
def only(x: pl.Tensor[[8, 8], pl.FP32]) -> pl.Tensor[[8, 8], pl.FP32]:
    return pl.exp(x)
""")
    assert f.name == "only"


def test_control_flow_with_init_values_and_yield():
    f = parse("""
@pl.function
def accumulate(x: pl.Tensor[[10], pl.FP32]) -> pl.Tensor[[10], pl.FP32]:
    init_sum: pl.Tensor[[10], pl.FP32] = pl.full([10], pl.FP32, 0.0)
    for i, (running_sum,) in pl.range(5, init_values=(init_sum,)):
        new_sum: pl.Tensor[[10], pl.FP32] = pl.add(running_sum, x)
        result = pl.yield_(new_sum)
    return result
""")
    x = _rand(10)
    np.testing.assert_allclose(f(x), 5 * x, rtol=1e-6)


def test_upstream_accumulate_text():
    # The example's text: its pl.create_tensor buffer is read before anything is written to it
    # (upstream: whatever the buffer held; here created tensors start as zeros).
    f = parse("""
@pl.function
def accumulate(
    x: pl.Tensor[[10], pl.FP32],
    iterations: pl.Tensor[[1], pl.INT32],
) -> pl.Tensor[[10], pl.FP32]:
    init_sum: pl.Tensor[[10], pl.FP32] = pl.create_tensor([10], dtype=pl.FP32)
    for i, (running_sum,) in pl.range(5, init_values=(init_sum,)):
        new_sum: pl.Tensor[[10], pl.FP32] = pl.add(running_sum, x)
        result = pl.yield_(new_sum)
    return result
""")
    assert f.name == "accumulate" and [p.name for p in f.params] == ["x", "iterations"]
    assert f.params[1].type.dtype == pl.INT32 and len(f.return_types) == 1
    text = f.as_python()
    assert "    for i, (running_sum,) in pl.range(5, init_values=(init_sum,)):\n" in text
    assert "# compiled for the annotated shapes (x: fp32[10], iterations: int32[1])" in text
    x, it = _rand(10), np.zeros(1, np.int32)
    np.testing.assert_allclose(f(x, it), 5 * x, rtol=1e-6)  # created tensors start zero-filled here


# --- as_python ----------------------------------------------------------------------------------------


def test_as_python_is_the_source_and_the_compilers_levels_as_comments():
    f = parse(VECTOR_ADD)
    text = f.as_python()
    source = VECTOR_ADD.strip("\n")
    assert text.startswith(source + "\n")
    levels = text[len(source) + 1:].splitlines()
    assert levels[0] == "# compiled for the annotated shapes (x: fp32[128], y: fp32[128]): the tensor, tile and " \
                        "block levels"
    assert all(ln.startswith("#") for ln in levels)
    for section in ("# tensor_graph @vector_add(%x: fp32(128,), %y: fp32(128,))", "# tile_graph @vector_add",
                    "# block_graph @vector_add", "TADD("):
        assert section in text
    again = parse(text)  # it is Python: it parses again
    assert again.name == f.name and again.params == f.params and again.return_types == f.return_types


def test_as_python_says_when_the_annotations_give_no_shapes():
    f = parse("""
@pl.function
def g(x: pl.Tensor):
    return pl.exp(x)
""")
    assert "# not compiled from the annotations: parameter 'x' takes its shape or dtype from the argument" \
        in f.as_python()
    x = _rand((4, 8))
    np.testing.assert_allclose(f(x), np.exp(x), rtol=1e-6)
    assert "tensor_graph @g" in f.lower(x).as_python()


# --- sources ------------------------------------------------------------------------------------------------


def test_each_text_keeps_its_own_source_for_the_tracer():
    # Both texts are "<string>" and their loops sit on the same lines; each compiles from its own
    # source (the carried-value loop is unrolled, the other is a runtime loop), after both parsed
    # and after linecache was cleared.
    carried = parse("""
@pl.function
def f(x: pl.Tensor[[8], pl.FP32]) -> pl.Tensor[[8], pl.FP32]:
    acc = pl.mul(x, 1.0)
    for i in pl.range(3):
        acc = pl.add(acc, x)
    return acc
""")
    plain = parse("""
@pl.function
def g(x: pl.Tensor[[8], pl.FP32], out: pl.Out[pl.Tensor[[8], pl.FP32]]):
    acc = pl.mul(x, 3.0)
    for i in pl.range(3):
        out[:] = pl.add(acc, x)
    return out
""")
    linecache.clearcache()
    x = _rand(8)
    out = np.zeros(8, np.float32)
    plain(x, out)  # compiled first: had the texts one name, the tracer would read this text for both
    np.testing.assert_allclose(out, 4 * x, rtol=1e-6)
    np.testing.assert_allclose(carried(x), 4 * x, rtol=1e-6)


def test_the_same_text_parsed_twice_gives_equal_functions():
    a, b = parse(VECTOR_ADD), parse(VECTOR_ADD)
    assert a == b and hash(a) == hash(b) and a is not b
    assert a != parse(VECTOR_ADD.replace("pl.add", "pl.sub"))


# --- loads --------------------------------------------------------------------------------------------------


def test_loads_reads_the_file_and_the_function_outlives_it(tmp_path, with_transpose):
    path = tmp_path / "kernel.py"
    path.write_text("""
import pypto.language as pl

@pl.function
def matrix_transpose(x: pl.Tensor[[64, 128], pl.FP16]) -> pl.Tensor[[128, 64], pl.FP16]:
    result: pl.Tensor[[128, 64], pl.FP16] = pl.transpose(x, 0, 1)
    return result
""")
    f = loads(str(path))
    assert f.name == "matrix_transpose" and len(f.params) == 1 and f.filename == str(path)
    assert loads(path) == f  # an os.PathLike too
    path.unlink()  # the example deletes its file before using the function
    x = _rand((64, 128), np.float16)
    np.testing.assert_array_equal(f(x), x.T)


def test_loads_of_a_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        loads(str(tmp_path / "missing.py"))


# --- parse errors ---------------------------------------------------------------------------------------------


def test_no_function_is_a_value_error():
    with pytest.raises(ValueError, match=r"^No @pl.function or @pl.program found in <string>\. Make sure your code "
                                         r"contains a function decorated with @pl.function or a class decorated with "
                                         r"@pl.program\.$"):
        parse("x = 42\ny = x + 1\n")
    with pytest.raises(pypto.UserError, match=r"found in kernels\.py.*\(@pl.jit \['j'\] are entries, not "
                                              r"@pl.function\)"):
        parse("@pl.jit\ndef j(x: pl.Tensor[[4], pl.FP32]):\n    return x\n", filename="kernels.py")


def test_several_functions_are_a_value_error():
    code = """
@pl.function
def func1(x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
    return x

@pl.function
def func2(x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
    return x
"""
    with pytest.raises(ValueError) as e:
        parse(code)
    assert str(e.value) == ("Multiple functions/programs found in <string>: ['func1', 'func2']. pl.parse() can only "
                            "parse code containing a single function or program. Consider using separate calls or "
                            "parsing from separate files.")


def test_a_syntax_error_propagates_as_syntax_error():
    code = "\n@pl.function\ndef bad_syntax(x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:\n    return x +\n"
    with pytest.raises(SyntaxError) as e:
        parse(code, filename="bad.py")
    assert e.value.filename == "bad.py" and e.value.lineno == 4
    assert str(e.value.msg).startswith("Failed to compile code from bad.py: invalid syntax")
    with pytest.raises(SyntaxError, match="'return' outside function"):  # refused by the compiler step
        parse("return 3\n")


def test_a_failure_while_the_text_runs_is_a_parser_syntax_error_at_its_line():
    with pytest.raises(ParserSyntaxError) as e:
        parse("""
@pl.function
def f(x: pl.Tensor[[64], pl.FP99]) -> pl.Tensor[[64], pl.FP32]:
    return x
""")
    assert isinstance(e.value, pypto.UserError) and isinstance(e.value, pypto.error.ParserError)
    assert str(e.value).startswith("AttributeError: ")
    assert "FP99" in str(e.value) and 'File "<string>", line 3' in str(e.value)


def test_parse_takes_text():
    with pytest.raises(pypto.UserError, match="pl.parse: code must be a str, got bytes"):
        parse(b"x = 1")


# --- @pl.program -----------------------------------------------------------------------------------------------

PROGRAM = """
@pl.program
class Exp:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: pl.Tensor[[32, 32], pl.FP32], out: pl.Out[pl.Tensor[[32, 32], pl.FP32]]):
        pl.store(pl.exp(pl.load(a, [0, 0], [32, 32])), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[32, 32], pl.FP32], out: pl.Out[pl.Tensor[[32, 32], pl.FP32]]):
        return self.kernel(a, out)
"""


def test_parse_of_a_program_gives_the_program():
    p = parse(PROGRAM)
    assert isinstance(p, PlProgram) and p.name == "Exp" and list(p.functions) == ["kernel", "main"]
    q = deserialize(serialize(p))
    assert isinstance(q, PlProgram) and q.name == "Exp" and list(q.functions) == ["kernel", "main"]
    assert parse_program(PROGRAM).name == "Exp"
    with pytest.raises(ValueError, match="Expected @pl.program but found @pl.function in <string>"):
        parse_program(VECTOR_ADD)


def test_loads_program(tmp_path):
    (tmp_path / "prog.py").write_text(PROGRAM)
    assert loads_program(tmp_path / "prog.py").name == "Exp"


# --- serialize / deserialize ---------------------------------------------------------------------------------------


def test_serialize_round_trip_rebuilds_an_equal_function():
    f = parse("""
@pl.function
def simple_add(x: pl.Tensor[[32], pl.FP32]) -> pl.Tensor[[32], pl.FP32]:
    result: pl.Tensor[[32], pl.FP32] = pl.add(x, 1.0)
    return result
""", filename="simple.py")
    data = serialize(f)
    assert isinstance(data, bytes)
    doc = json.loads(data)
    assert doc == {"format": "pypto.language.text", "version": 1, "kind": "function", "name": "simple_add",
                   "func_type": "Opaque", "filename": "simple.py", "source": f.source}
    restored = deserialize(data)
    assert isinstance(restored, pypto.ir.Function)
    assert restored == f and restored is not f
    assert restored.name == "simple_add" and restored.params == f.params and restored.filename == "simple.py"
    assert deserialize(bytearray(data)) == f
    x = _rand(32)
    np.testing.assert_array_equal(restored(x), x + 1.0)
    assert restored.as_python() == f.as_python()


def test_serialize_to_and_from_a_file(tmp_path):
    f = parse(VECTOR_ADD)
    serialize_to_file(f, tmp_path / "f.json")
    assert deserialize_from_file(tmp_path / "f.json") == f


def test_serialize_takes_what_parse_returned():
    @pl.function
    def here(x: pl.Tensor[[4], pl.FP32]) -> pl.Tensor[[4], pl.FP32]:
        return x

    with pytest.raises(pypto.UserError, match="takes a function or program pl.parse / pl.loads returned, got "
                                              "KernelFunction"):
        serialize(here)


@pytest.mark.parametrize("data, match", [
    (b"\x93\xa4junk", "not what pypto.ir.serialize wrote \\(not UTF-8 JSON"),
    (b'{"format": "other"}', 'no "format": "pypto.language.text"'),
    (b'{"format": "pypto.language.text", "version": 2}', "format version 2 is not one this pypto reads"),
    (b'{"format": "pypto.language.text", "version": 1, "kind": "function", "name": "f"}',
     "lacks the text field\\(s\\) \\['func_type', 'filename', 'source'\\]"),
    ("text", "takes bytes, got str"),
])
def test_deserialize_of_other_data_is_a_runtime_error(data, match):
    with pytest.raises(DeserializationError, match=match) as e:
        deserialize(data)
    assert isinstance(e.value, RuntimeError) and isinstance(e.value, pypto.UserError)


def test_deserialize_checks_the_name_against_the_text():
    doc = json.loads(serialize(parse(VECTOR_ADD)))
    doc["name"] = "other"
    with pytest.raises(DeserializationError, match="the data names the function other"):
        deserialize(json.dumps(doc).encode())


# --- pl.transpose -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape, axes", [
    ((64, 128), (0, 1)), ((16, 8), (1, 0)), ((16, 8), (-1, -2)),
    ((2, 3, 4), (0, 2)), ((2, 3, 4), (-1, 1)), ((4, 6, 8), (0, 1)), ((2, 3, 4, 5), (1, 3)),
])
def test_transpose_against_numpy(shape, axes, with_transpose):
    out_shape = list(shape)
    a, b = axes
    out_shape[a], out_shape[b] = out_shape[b], out_shape[a]
    f = parse(f"""
@pl.function
def t(x: pl.Tensor[{list(shape)}, pl.FP32]) -> pl.Tensor[{out_shape}, pl.FP32]:
    return pl.transpose(x, {a}, {b})
""")
    x = _rand(shape)
    np.testing.assert_array_equal(f(x), np.swapaxes(x, a, b))


@pytest.mark.parametrize("mode", MODES)
def test_transpose_of_a_tile_and_of_a_tensor_in_the_orchestration(mode):
    @pl.jit
    def of_tile(a: pl.Tensor[[16, 32], pl.FP32], out: pl.Out[pl.Tensor[[32, 16], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = transpose(pl.load(a, [0, 0], [16, 32]), 0, 1)
            pl.store(pl.exp(t), [0, 0], out)
        return out

    a, out = _rand((16, 32)), np.zeros((32, 16), np.float32)
    run_in(mode, of_tile, a, out)
    np.testing.assert_allclose(out, np.exp(a.T), rtol=1e-6)

    @pl.jit
    def of_tensor(a: pl.Tensor[[64, 32], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
        at = transpose(a, 1, 0)  # upstream's orchestration-level view
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(2):
                pl.store(pl.neg(pl.load(at, [i * 16, 0], [16, 64])), [i * 16, 0], out)
        return out

    a, out = _rand((64, 32)), np.zeros((32, 64), np.float32)
    run_in(mode, of_tensor, a, out)
    np.testing.assert_array_equal(out, -a.T)


@pytest.mark.parametrize("shape, axes, match", [
    ((4, 8), (0, 0), r"axis1 and axis2 must be different, but got axis1=0, axis2=0 \(both axis 0 of the 2-D "
                     r"operand \[4, 8\]\)"),
    ((4, 8), (1, -1), "axis1 and axis2 must be different, but got axis1=1, axis2=-1"),
    ((4, 8), (0, 2), r"axis2=2 is out of range for the 2-D operand \[4, 8\]"),
    ((2, 3, 4), (-4, 0), r"axis1=-4 is out of range for the 3-D operand \[2, 3, 4\]"),
    ((4, 8), (0.0, 1), "axis1 must be an int known when the function is traced, got 0.0"),
    ((4, 8), (0, True), "axis2 must be an int known when the function is traced, got True"),
    ((8,), (0, 0), r"needs an operand of at least 2 dims, got the 1-D \[8\]"),
])
def test_transpose_of_bad_axes_is_a_user_error(shape, axes, match):
    @pl.jit
    def bad(a: pl.Tensor[list(shape), pl.FP32]):
        with pl.at(level=pl.Level.CORE_GROUP):
            r = transpose(a, *axes)
        return r

    with pytest.raises(pypto.UserError, match="pl.transpose: " + match) as e:
        bad(np.zeros(shape, np.float32))
    assert "test_language_parse.py" in str(e.value)  # at the user's line


def test_transpose_takes_a_traced_tensor():
    with pytest.raises(pypto.UserError, match="pl.transpose can only be used in a @pl.jit function"):
        transpose(np.zeros((2, 2), np.float32), 0, 1)

    @pl.jit
    def scalar(a: pl.Tensor[[4, 4], pl.FP32]):
        with pl.at(level=pl.Level.CORE_GROUP):
            transpose(3.0, 0, 1)
        return a

    with pytest.raises(pypto.UserError, match="pl.transpose: expected a tensor or tile of the function, got float"):
        scalar(np.zeros((4, 4), np.float32))
