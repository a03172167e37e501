"""The names and behaviours CANN PyPTO's interface unit tests (python/tests/ut/interface) check:
SymbolicScalar's constructors and methods, its enums, bytes_of of every dtype, the list form of
pypto.function, assemble's batched form, a view whose valid shape exceeds it."""

import numpy as np
import pytest

import pypto

torch = pytest.importorskip("torch")


def test_symbolic_scalar_constructors_and_kinds():
    S = pypto.SymbolicScalar
    assert S().concrete() == 0
    ten = S(10)
    assert ten.is_immediate() and ten.is_concrete() and not ten.is_symbol() and not ten.is_expression()
    assert S(ten).concrete() == 10 and S("n", 7).concrete() == 7  # a named value known now
    x = S("x")
    assert x.is_symbol() and not x.is_concrete() and not x.is_immediate() and not x.is_expression()
    e = x + 5
    assert e.is_expression() and not e.is_symbol()
    assert e.eval({"x": 2}) == 7
    with pytest.raises(ValueError, match="Not concrete value"):
        x.concrete()
    # the module is PyPTO's lowercase constructor, and a class for isinstance
    assert isinstance(pypto.symbolic_scalar(3), pypto.symbolic_scalar)
    assert not isinstance(3, pypto.symbolic_scalar)


def test_symbolic_scalar_operators():
    S = pypto.SymbolicScalar
    a, b = S(6), S(4)
    assert [v.concrete() for v in (a + b, a - b, a * b, a / b, a // b, a % b, a.max(b), a.min(b))] == \
        [10, 2, 24, 1, 1, 2, 6, 4]
    assert [v.concrete() for v in (4 + a, 4 - a, 4 * a, 4 / a, 4 // a, 4 % a)] == [10, -2, 24, 0, 0, 4]
    assert (S(-7) / 2).concrete() == -4  # `/` floors, as PyPTO's
    assert [(+a).concrete(), (-a).concrete(), (~a).concrete(), (~S(0)).concrete()] == [6, -6, 0, 1]
    # comparisons of known values are concrete SymbolicScalars (0 / 1) that `if` reads
    for expr, want in ((a == b, 0), (a != b, 1), (a < b, 0), (a <= 6, 1), (6 > a, 0), (6 >= a, 1)):
        assert isinstance(expr, S) and expr.concrete() == want and bool(expr) == bool(want)
    # & and | are logical
    zero = S(0)
    assert [(a & b).concrete(), (zero & a).concrete(), (zero | a).concrete(), (0 | zero).concrete()] == [1, 0, 1, 0]
    y = S("y")
    p = (y >= 2) & (y < 8)
    assert [p.eval({"y": v}) for v in (1, 2, 7, 8)] == [0, 1, 1, 0]
    q = (y < 0) | (y > 5)
    assert [q.eval({"y": v}) for v in (-1, 0, 5, 6)] == [1, 0, 0, 1]
    assert [(~y).eval({"y": v}) for v in (0, 3)] == [1, 0]
    with pytest.raises(TypeError):
        a / 2.0  # a float is not a dim


def test_enums_convert_to_int():
    assert int(pypto.AtomicRMWMode.ADD) == 0 and int(pypto.AtomicRMWMode.MAX) == 1 and int(pypto.AtomicRMWMode.MIN) == 2
    assert int(pypto.PrecisionType.HIGH_PRECISION) == 1 and pypto.PrecisionType.INTRINSIC.name == "INTRINSIC"
    assert int(pypto.CastMode.CAST_TRUNC) == 5
    assert str(pypto.TopKAlgo.RADIX_SELECT) == "TopKAlgo.RADIX_SELECT"
    assert str(pypto.OpType.GE) == "OpType.GE" and str(pypto.OutType.BIT) == "OutType.BIT"
    assert str(pypto.ReduceMode.ATOMIC_ADD) == "ReduceMode.ATOMIC_ADD"
    assert pypto.CastMode.CAST_RINT != pypto.SaturationMode.ON  # members of different enums differ
    err = pypto.pypto_impl.ExternalError
    assert int(err.COMMON_EXTERNAL_ERROR) == 0xFFFF and err.UNKNOWN is err.COMMON_EXTERNAL_ERROR
    assert int(err.DYNAMIC_SHAPE_COMPUTE_UNSUPPORTED) == 10 and err.INVALID_TYPE.value == 1


def test_bytes_of_every_dtype():
    want = {"DT_INT4": 1, "DT_INT8": 1, "DT_INT16": 2, "DT_INT32": 4, "DT_INT64": 8, "DT_FP8": 1, "DT_FP16": 2,
            "DT_FP32": 4, "DT_BF16": 2, "DT_HF4": 1, "DT_HF8": 1, "DT_FP8E4M3": 1, "DT_FP8E5M2": 1,
            "DT_FP8E8M0": 1, "DT_UINT8": 1, "DT_UINT16": 2, "DT_UINT32": 4, "DT_UINT64": 8, "DT_BOOL": 1,
            "DT_DOUBLE": 8, "DT_FP4_E2M1X2": 1, "DT_FP4_E1M2X2": 1}
    assert {n: pypto.bytes_of(getattr(pypto, n)) for n in want} == want
    assert str(pypto.DT_INT4) == "DataType.DT_INT4"
    with pytest.raises(pypto.UserError, match="bytes_of"):
        pypto.bytes_of("fp32")


def test_element_is_callable_and_declared_shapes_are_lists():
    e = pypto.element(pypto.DT_INT32, 3)
    assert isinstance(e, pypto.Element) and isinstance(e, pypto.element) and e.dtype == pypto.DT_INT32
    t = pypto.tensor([32, 1], pypto.DT_FP16, "a")
    assert t.shape == [32, 1] and t.shape == (32, 1) and not t.shape != [32, 1]


def test_function_takes_lists_and_assemble_its_batched_form():
    a = pypto.tensor((4, 4), pypto.DT_FP32, "a")
    b = pypto.tensor((4, 4), pypto.DT_FP32, "b")
    c = pypto.tensor((4, 8), pypto.DT_FP32, "c")
    pypto.set_vec_tile_shapes(4, 4)
    try:
        with pypto.function("BATCH", [a, b], [c]):
            pypto.assemble([(a * 2.0, (0, 0)), (b + 1.0, [0, 4])], c, parallel=True)
        x, y = torch.randn(4, 4), torch.randn(4, 4)
        out = torch.zeros(4, 8)
        pypto.runtime._device_run_once_data_from_host(x, y, out)
    finally:
        pypto.reset_options()
    np.testing.assert_array_equal(out.numpy(), np.concatenate([x.numpy() * 2, y.numpy() + 1], axis=1))


def test_assemble_errors():
    @pypto.jit
    def bad(x: pypto.Tensor((4, 4), pypto.DT_FP32), out: pypto.Tensor((4, 8), pypto.DT_FP32)):
        pypto.assemble([(x, (0, 0)), x], out)

    with pytest.raises(pypto.UserError, match=r"(?s)\(tensor, offsets\) pair.*test_cann_interface.py"):
        bad(torch.zeros(4, 4), torch.zeros(4, 8))

    @pypto.jit
    def flag(x: pypto.Tensor((4, 4), pypto.DT_FP32), out: pypto.Tensor((4, 8), pypto.DT_FP32)):
        pypto.assemble(x, [0, 0], out, parallel="yes")

    with pytest.raises(pypto.UserError, match="parallel must be a bool"):
        flag(torch.zeros(4, 4), torch.zeros(4, 8))


def test_a_valid_shape_past_the_view_is_refused():
    @pypto.jit
    def f(x: pypto.Tensor((4, 8), pypto.DT_FP32), out: pypto.Tensor((4, 8), pypto.DT_FP32)):
        out[:] = pypto.view(x, [4, 8], [0, 0], valid_shape=[5, 8])

    with pytest.raises(pypto.UserError, match=r"valid_shape \[5, 8\] exceeds the view's shape \[4, 8\] in dim 0"):
        f(torch.zeros(4, 8), torch.zeros(4, 8))


def test_a_double_element_is_a_python_float_operand():
    e = pypto.Element(pypto.DT_DOUBLE, 2.0)  # PyPTO's pow passes its scalar exponent so
    assert e.dtype is pypto.DT_DOUBLE and e.value == 2.0 and isinstance(e.value, float)

    @pypto.jit
    def f(x: pypto.Tensor((4, 8), pypto.DT_FP32), out: pypto.Tensor((4, 8), pypto.DT_FP32)):
        out[:] = pypto.pow(x, pypto.Element(pypto.DT_DOUBLE, 2.0)) + pypto.Element(pypto.DT_DOUBLE, 0.5)

    x = torch.rand(4, 8)
    out = torch.zeros(4, 8)
    f(x, out)
    np.testing.assert_allclose(out.numpy(), x.numpy() ** 2 + 0.5, rtol=1e-6)
    with pytest.raises(pypto.UserError, match="DT_DOUBLE"):
        pypto.tensor((4,), pypto.DT_DOUBLE)  # a double tensor is still not supported
