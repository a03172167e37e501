"""The extra ops of pypto.language (hw-native-sys pypto's names): each differential against numpy
(torch for fp16 / bf16) in a small @pl.jit on tiles loaded with a tail (a valid region smaller
than the tile), on both backends; the edge values (NaN, +-inf, +-0, integer bounds for shifts and
bitwise ops); and each error path with its message."""

import math
from types import SimpleNamespace

import numpy as np
import pytest

import pypto
import pypto.language as pl
from _util import MODES, run_in
from _pl_ops import _k1, _k2, _k3, _run, _shape, _edge_floats, _bits_equal, _ints, ERR, INT_DTYPES
from pypto.frontends.language import _ops_extra, _ops_indexed

X = SimpleNamespace(**{**vars(_ops_extra), **vars(_ops_indexed)})  # the two halves of the new ops

# --- partial combines ---------------------------------------------------------------------------------

PART = [(X.part_add, np.add), (X.part_mul, np.multiply), (X.part_max, np.maximum), (X.part_min, np.minimum)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op,ref", PART, ids=[f.__name__ for f, _ in PART])
def test_part_ops_equal_valid_regions_are_the_plain_op(mode, op, ref):
    r = np.random.default_rng(1)
    shape = _shape(r)
    a, b = _edge_floats(r, shape), _edge_floats(r, shape)
    with np.errstate(all="ignore"):
        _bits_equal(_run(mode, _k2(op), a, b), ref(a, b), signed_zero=op in (X.part_add, X.part_mul))


def _part_kernel(op, va, vb):
    @pl.jit
    def k(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            ta = pl.load(a, [0, 0], [16, 32], valid_shape=va)
            tb = pl.load(b, [0, 0], [16, 32], valid_shape=vb)
            pl.store(op(ta, tb), [0, 0], out)
        return out
    return k


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op,ref", PART, ids=[f.__name__ for f, _ in PART])
@pytest.mark.parametrize("va,vb", [([16, 32], [16, 9]), ([16, 32], [5, 32]), ([13, 30], [7, 11]),
                                   ([9, 20], [16, 32])], ids=["cols", "rows", "both", "rhs_larger"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_part_ops_copy_lhs_where_rhs_holds_no_data(mode, op, ref, va, vb, dtype):
    r = np.random.default_rng(2)
    if dtype == np.int32:
        a, b = r.integers(-1000, 1000, (16, 32)).astype(dtype), r.integers(-1000, 1000, (16, 32)).astype(dtype)
    else:
        a, b = _edge_floats(r, (16, 32)), _edge_floats(r, (16, 32))
        a[va[0] - 1, va[1] - 1] = -0.0  # a copied -0.0 keeps its sign
    out = np.full((16, 32), 99, dtype)
    run_in(mode, _part_kernel(op, va, vb), a, b, out)
    want = np.full((16, 32), 99, dtype)
    want[:va[0], :va[1]] = a[:va[0], :va[1]]
    o0, o1 = min(va[0], vb[0]), min(va[1], vb[1])
    with np.errstate(all="ignore"):
        want[:o0, :o1] = ref(a[:o0, :o1], b[:o0, :o1])
    _bits_equal(out, want, signed_zero=op in (X.part_add, X.part_mul))


# --- products and arg-reductions ---------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_row_and_col_prod(mode, dtype):
    r = np.random.default_rng(3)
    shape = _shape(r, 3, 20)
    if dtype == np.float32:
        a = r.uniform(0.8, 1.25, shape).astype(dtype) * r.choice([-1, 1], shape).astype(dtype)
    else:
        a = r.integers(-3, 4, shape).astype(dtype)  # wraps as numpy's int32 product would
    rows = _run(mode, _k1(X.row_prod), a, out_shape=(shape[0], 1))
    cols = _run(mode, _k1(X.col_prod), a, out_shape=(1, shape[1]))
    if dtype == np.float32:
        np.testing.assert_allclose(rows, np.prod(a.astype(np.float64), -1, keepdims=True), rtol=1e-5)
        np.testing.assert_allclose(cols, np.prod(a.astype(np.float64), 0, keepdims=True), rtol=1e-5)
    else:
        np.testing.assert_array_equal(rows, np.prod(a, -1, keepdims=True))
        np.testing.assert_array_equal(cols, np.prod(a, 0, keepdims=True))


def test_row_prod_of_fp16_against_torch():
    torch = pytest.importorskip("torch")
    r = np.random.default_rng(4)
    a = r.uniform(0.9, 1.1, (12, 21)).astype(np.float16)
    got = _run("cpu", _k1(X.row_prod), a, out_shape=(12, 1))
    # Here the product is taken in fp32 and rounded once (within half an fp16 ulp of the exact
    # one); torch rounds its fp16 product differently, within a few ulps.
    exact = np.prod(a.astype(np.float64), -1, keepdims=True)
    np.testing.assert_allclose(got.astype(np.float64), exact, rtol=5e-4)
    want = torch.from_numpy(a).prod(-1, keepdim=True).numpy()
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=5e-3)


ARG = [(X.row_argmax, lambda a: np.argmax(a, -1)[:, None]), (X.row_argmin, lambda a: np.argmin(a, -1)[:, None]),
       (X.col_argmax, lambda a: np.argmax(a, 0)[None, :]), (X.col_argmin, lambda a: np.argmin(a, 0)[None, :])]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op,ref", ARG, ids=[f.__name__ for f, _ in ARG])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int16])
def test_arg_reductions_give_int32_indices_of_the_first_extreme(mode, op, ref, dtype):
    r = np.random.default_rng(5)
    shape = _shape(r, 3, 30)
    if dtype == np.float32:
        a = r.integers(-3, 4, shape).astype(dtype)  # ties
        a[0, 1], a[1, 0], a[2, 2] = np.nan, np.inf, -np.inf
    else:
        a = _ints(r, shape, dtype) // 1000 if dtype == np.int32 else r.integers(-5, 5, shape).astype(dtype)
    want = ref(a).astype(np.int32)
    got = _run(mode, _k1(op), a, out_shape=want.shape, out_dtype=np.int32)
    np.testing.assert_array_equal(got, want)


def test_reductions_accept_the_languages_scratch_tile():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [8, 16])
            tmp = pl.create_tile([8, 16], pl.FP32)
            pl.store(X.row_argmax(t, tmp), [0, 0], out)
        return out
    a = np.random.default_rng(6).standard_normal((8, 16)).astype(np.float32)
    out = np.zeros((8, 1), np.int32)
    k(a, out)
    np.testing.assert_array_equal(out[:, 0], np.argmax(a, -1))


# --- broadcast values ------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype,value", [(np.float32, -2.5), (np.float32, math.inf), (np.int32, -7),
                                         (np.int8, 127), (np.float16, 0.1)])
def test_expands_fills_the_targets_shape(mode, dtype, value):
    a = np.zeros((11, 19), dtype)
    got = _run(mode, _k1(lambda t: X.expands(t, value)), a)
    _bits_equal(got, np.full((11, 19), value, dtype))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("src_shape", [(1, 19), (11, 1), (1, 1)])
def test_expand_clone_broadcasts_size_one_dims(mode, src_shape):
    r = np.random.default_rng(7)
    src, target = r.standard_normal(src_shape).astype(np.float32), np.zeros((11, 19), np.float32)
    got = _run(mode, _k2(lambda s, t: X.expand_clone(s, t)), src, target, out_shape=(11, 19))
    _bits_equal(got, np.broadcast_to(src, (11, 19)))


# --- comparison and selection -------------------------------------------------------------------------

NP_CMP = [np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("cmp_type", range(6))
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float16])
def test_cmp_then_sel_picks_lhs_where_the_compare_holds(mode, cmp_type, dtype):
    r = np.random.default_rng(10 + cmp_type)
    shape = _shape(r)
    if dtype == np.int32:
        a, b = _ints(r, shape, dtype), _ints(r, shape, dtype)
        b.reshape(-1)[::3] = a.reshape(-1)[::3]
    else:
        a, b = _edge_floats(r, shape, dtype), _edge_floats(r, shape, dtype)
        b.reshape(-1)[::4] = a.reshape(-1)[::4]
    got = _run(mode, _k2(lambda x, y: X.sel(X.cmp(x, y, cmp_type), x, y, None)), a, b)
    _bits_equal(got, np.where(NP_CMP[cmp_type](a, b), a, b))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("cmp_type", range(6))
@pytest.mark.parametrize("scalar", [0.0, -1.5, math.inf])
def test_cmps_then_sels_against_a_scalar(mode, cmp_type, scalar):
    r = np.random.default_rng(20 + cmp_type)
    shape = _shape(r)
    a = _edge_floats(r, shape)
    a.reshape(-1)[::5] = scalar
    got = _run(mode, _k1(lambda x: X.sels(X.cmps(x, scalar, cmp_type), x, None, 42.0)), a)
    _bits_equal(got, np.where(NP_CMP[cmp_type](a, np.float32(scalar)), a, np.float32(42.0)))


@pytest.mark.parametrize("mode", MODES)
def test_sels_on_ints_and_a_zero_one_mask(mode):
    r = np.random.default_rng(21)
    a, m = _ints(r, (9, 17), np.int16), r.integers(0, 2, (9, 17)).astype(np.int16)
    got = _run(mode, _k2(lambda x, mask: X.sels(mask, x, None, -32768)), a, m)
    _bits_equal(got, np.where(m != 0, a, np.int16(-32768)))


@pytest.mark.parametrize("mode", MODES)
def test_cmp_of_global_tensors_is_zero_one_in_lhs_dtype(mode):
    @pl.jit
    def k(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = X.cmp(a, b, 2)
        return out
    r = np.random.default_rng(22)
    a, b = _edge_floats(r, (16, 24)), _edge_floats(r, (16, 24))
    out = np.full((16, 24), 7, np.float32)
    run_in(mode, k, a, b, out)
    _bits_equal(out, (a < b).astype(np.float32))


# --- remainders ----------------------------------------------------------------------------------------------


def _divisors(r, shape, dtype):
    if np.dtype(dtype).kind == "f":
        b = _edge_floats(r, shape, dtype)
        b.reshape(-1)[1::7] = 0.0
        return b
    b = r.integers(-9, 10, shape).astype(dtype)
    b.reshape(-1)[::6] = 0
    return b


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int16])
def test_rem_has_the_divisors_sign(mode, dtype):
    r = np.random.default_rng(30)
    shape = _shape(r)
    a = _edge_floats(r, shape, dtype) * 7 if dtype == np.float32 else _ints(r, shape, dtype)
    b = _divisors(r, shape, dtype)
    with np.errstate(all="ignore"):
        want = np.remainder(a, b)
    got = _run(mode, _k2(lambda x, y: X.rem(x, y, None)), a, b)
    _bits_equal(got, want)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("scalar", [3, -3, 2.5, -0.75])
def test_rems_and_fmods_by_a_scalar(mode, scalar):
    r = np.random.default_rng(31)
    a = _edge_floats(r, _shape(r)) * 5
    with np.errstate(all="ignore"):
        _bits_equal(_run(mode, _k1(lambda x: X.rems(x, scalar, None)), a), np.remainder(a, np.float32(scalar)))
        _bits_equal(_run(mode, _k1(lambda x: X.fmods(x, scalar)), a), np.fmod(a, np.float32(scalar)))


@pytest.mark.parametrize("mode", MODES)
def test_rems_of_ints(mode):
    r = np.random.default_rng(32)
    a = _ints(r, (7, 13), np.int32)
    _bits_equal(_run(mode, _k1(lambda x: X.rems(x, -7, None)), a), np.remainder(a, np.int32(-7)))


# --- bitwise and shifts --------------------------------------------------------------------------------


BITWISE = [(X.and_, np.bitwise_and), (X.or_, np.bitwise_or), (lambda x, y: X.xor(x, y, None), np.bitwise_xor)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("i", range(3), ids=["and_", "or_", "xor"])
def test_bitwise_tile_tile_at_the_int_bounds(mode, dtype, i):
    op, ref = BITWISE[i]
    r = np.random.default_rng(40 + i)
    shape = _shape(r)
    a, b = _ints(r, shape, dtype), _ints(r, shape, dtype)[::-1].copy()
    _bits_equal(_run(mode, _k2(op), a, b), ref(a, b))


SCALAR_BITWISE = [(X.ands, np.bitwise_and), (X.ors, np.bitwise_or), (lambda x, s: X.xors(x, s, None), np.bitwise_xor),
                  (X.and_, np.bitwise_and), (X.or_, np.bitwise_or), (X.xor, np.bitwise_xor)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint16, np.int64])
@pytest.mark.parametrize("i", range(6), ids=["ands", "ors", "xors", "and_s", "or_s", "xor_s"])
def test_bitwise_with_a_scalar(mode, dtype, i):
    op, ref = SCALAR_BITWISE[i]
    r = np.random.default_rng(50 + i)
    a = _ints(r, _shape(r), dtype)
    for s in (np.iinfo(dtype).max, 0x55 if np.iinfo(dtype).min == 0 else -0x56):
        _bits_equal(_run(mode, _k1(lambda x, s=int(s): op(x, s)), a), ref(a, np.array(s, dtype)))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_not(mode, dtype):
    r = np.random.default_rng(60)
    a = _ints(r, _shape(r), dtype)
    _bits_equal(_run(mode, _k1(X.not_), a), np.invert(a))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("left", [True, False], ids=["shl", "shr"])
def test_shift_by_a_tile_including_overshifts(mode, dtype, left):
    r = np.random.default_rng(70)
    shape = _shape(r)
    bits = np.dtype(dtype).itemsize * 8
    a = _ints(r, shape, dtype)
    b = r.integers(0, bits + 3, shape).astype(dtype)
    b.reshape(-1)[:3] = [0, bits - 1, bits]
    op, ref = (X.shl, np.left_shift) if left else (X.shr, np.right_shift)
    _bits_equal(_run(mode, _k2(op), a, b), ref(a, b))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.uint32, np.int64])
@pytest.mark.parametrize("amount", [0, 1, 7, "width-1", "width"])
def test_shls_and_shrs_by_a_scalar(mode, dtype, amount):
    r = np.random.default_rng(71)
    bits = np.dtype(dtype).itemsize * 8
    s = {"width-1": bits - 1, "width": bits}.get(amount, amount)
    a = _ints(r, _shape(r), dtype)
    _bits_equal(_run(mode, _k1(lambda x: X.shls(x, s)), a), np.left_shift(a, np.array(s, dtype)))
    _bits_equal(_run(mode, _k1(lambda x: X.shrs(x, s)), a), np.right_shift(a, np.array(s, dtype)))


# --- activations and three-operand adds ---------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_prelu_and_lrelu_fp32(mode):
    r = np.random.default_rng(80)
    shape = _shape(r)
    x, s = _edge_floats(r, shape), r.uniform(0, 0.5, shape).astype(np.float32)
    with np.errstate(all="ignore"):
        _bits_equal(_run(mode, _k2(lambda t, sl: X.prelu(t, sl, None)), x, s), np.where(x > 0, x, x * s))
        _bits_equal(_run(mode, _k1(lambda t: X.lrelu(t, 0.2)), x), np.where(x > 0, x, x * np.float32(0.2)))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_prelu_and_lrelu_16_bit_against_torch(dtype):
    torch = pytest.importorskip("torch")
    tdt = getattr(torch, dtype)
    g = torch.Generator().manual_seed(0)
    x, s = torch.randn(13, 27, generator=g).to(tdt), (torch.rand(13, 27, generator=g) * 0.5).to(tdt)
    x[0, :4] = torch.tensor([float("nan"), float("inf"), float("-inf"), -0.0])
    out = torch.zeros_like(x)
    _k2(lambda t, sl: X.prelu(t, sl, None))(x, s, out)
    torch.testing.assert_close(out, torch.where(x > 0, x, x * s), equal_nan=True)
    out = torch.zeros_like(x)
    _k1(lambda t: X.lrelu(t, 0.25))(x, out)
    torch.testing.assert_close(out, torch.nn.functional.leaky_relu(x, 0.25), equal_nan=True)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_addc_subc_addsc_subsc(mode, dtype):
    r = np.random.default_rng(81)
    shape = _shape(r)
    if dtype == np.float32:
        a, b, c = (_edge_floats(r, shape) for _ in range(3))
        s = 1.5
    else:
        a, b, c = (_ints(r, shape, dtype) for _ in range(3))  # wrap around
        s = -123456
    sd = np.array(s, dtype)
    with np.errstate(all="ignore"):
        _bits_equal(_run(mode, _k3(X.addc), a, b, c), (a + b) + c)
        _bits_equal(_run(mode, _k3(X.subc), a, b, c), (a - b) - c)
        _bits_equal(_run(mode, _k2(lambda x, z: X.addsc(x, s, z)), a, c), (a + sd) + c)
        _bits_equal(_run(mode, _k2(lambda x, z: X.subsc(x, s, z)), a, c), (a - sd) - c)


def test_addc_fp16_against_torch():
    torch = pytest.importorskip("torch")
    g = torch.Generator().manual_seed(1)
    a, b, c = (torch.randn(9, 30, generator=g).to(torch.float16) for _ in range(3))
    out = torch.zeros_like(a)
    _k3(X.addc)(a, b, c, out)
    torch.testing.assert_close(out, (a + b) + c)


# --- names -----------------------------------------------------------------------------------------------


def test_dtype_and_layout_names():
    assert X.FP8E4M3FN is pypto.DT_FP8E4M3 and X.FP8E5M2 is pypto.DT_FP8E5M2 and X.FP8E8M0 is pypto.DT_FP8E8M0
    assert X.HF8 is pypto.DT_HF8 and X.FP4 is pypto.DT_FP4_E2M1
    assert X.HF4 is pypto.DT_HF4 and X.INT4 is pypto.DT_INT4
    assert (X.ND, X.DN, X.NZ) == (pl.TensorLayout.ND, pl.TensorLayout.DN, pl.TensorLayout.NZ)
    assert [m.name for m in X.TileLayout] == ["none_box", "row_major", "col_major"]
    assert [m.name for m in X.CompactMode] == ["null", "normal"]
    from pypto.core._dtypes import check_dtype
    with pytest.raises(ERR, match="DT_UINT4 is an NPU storage format"):
        check_dtype(X.UINT4, "x")


# --- errors ------------------------------------------------------------------------------------------


def test_ops_outside_an_incore_scope_are_misplaced():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        X.cmp(a, a, 0)
        return out
    with pytest.raises(ERR, match=r"misplaced op pl.cmp in the @pl.jit entry k"):
        k(np.zeros((8, 8), np.float32), np.zeros((8, 8), np.float32))


def test_placement_of_cube_and_vector_ops():
    @pl.jit
    def aiv(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.AIV):
            t = pl.load(a, [0, 0], [1, 8])
            X.gemv(t, t)
        return out

    @pl.jit
    def aic(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.AIC):
            t = pl.load(a, [0, 0], [8, 8], target_memory=pl.MemorySpace.Mat)
            X.shls(t, 1)
        return out
    with pytest.raises(ERR, match="pl.gemv is a cube instruction, in the AIV"):
        aiv(np.zeros((8, 8), np.float32), np.zeros((8, 8), np.float32))
    with pytest.raises(ERR, match="pl.shls is a vector instruction, in the AIC"):
        aic(np.zeros((8, 8), np.int32), np.zeros((8, 8), np.int32))


F32, I32 = np.zeros((8, 16), np.float32), np.zeros((8, 16), np.int32)

ERRORS = [
    ("cmp_type", lambda t: X.cmp(t, t, 6), F32, r"pl.cmp: cmp_type must be 0..5 \(0=eq, 1=ne, 2=lt, 3=le, 4=gt, 5=ge\)"),
    ("cmps_tile", lambda t: X.cmps(t, t, 0), F32, "pl.cmps compares with a scalar, got a tile"),
    ("rems_tile", lambda t: X.rems(t, t), F32, "pl.rems takes a scalar right-hand side, got a tile"),
    ("bitwise_float", lambda t: X.and_(t, t), F32, "pl.and_ is a bitwise op on integer tiles, got fp32"),
    ("shift_float_scalar", lambda t: X.shls(t, 1.5), I32, "pl.shls: the scalar must be an integer, got 1.5"),
    ("shift_negative", lambda t: X.shrs(t, -1), I32, "pl.shrs: the shift amount must be >= 0, got -1"),
    ("dtype_mismatch", lambda t: X.xor(t, X.expands(pl.cast(t, pl.INT16), 1)), I32,
     r"pl.xor: the operands' dtypes differ \(int32 and int16\)"),
    ("packed_mask", lambda t: X.sel(pl.slice(X.cmp(t, t, 0), [8, 4], [0, 0]), t, t), F32,
     "pl.sel: the mask .8, 4. does not cover the operand .8, 16.; a bit-packed mask"),
    ("sels_no_scalar", lambda t: X.sels(X.cmps(t, 0.0), t, None), F32, "pl.sels: give the scalar"),
    ("sels_bad_scalar", lambda t: X.sels(X.cmps(t, 0), t, None, 2**40), I32, "pl.sels: 1099511627776 is not a value"),
    ("prelu_int", lambda t: X.prelu(t, t, None), I32, "pl.prelu takes float tiles, got int32"),
    ("addsc_tile", lambda t: X.addsc(t, t, t), F32, "pl.addsc takes a scalar as its second operand, got a tile"),
    ("part_rank", lambda t: X.part_add(t, pl.reshape(t, [128])), F32, "pl.part_add: the operands have ranks 2 and 1"),
    ("expand_clone", lambda t: X.expand_clone(t, X.fillpad_expand(t, [8, 32])), F32,
     r"pl.expand_clone: src \[8, 16\] does not broadcast to \[8, 32\] \(dim 1\)"),
    ("arange_dtype", lambda t: X.arange(0, [1, 8], pl.FP32), F32, "pl.arange: dtype must be pl.INT16 or pl.INT32"),
    ("arange_rows", lambda t: X.arange(0, [2, 8]), F32, r"pl.arange: the shape \[2, 8\] must have leading dims of 1"),
    ("arange_range", lambda t: X.arange(32760, [1, 16], pl.INT16), F32, "pl.arange: 16 values from 32760 leave int16"),
    ("tri_valid", lambda t: X.tri(0, [8, 8], valid_shape=[9, 8]), F32, r"pl.tri: valid_shape \[9, 8\] must have"),
    ("gather_compare", lambda t: X.gather(t, kvalue=1.0, cmp_mode="eq", out_cols=8), F32,
     "pl.gather: the compare form .* is not supported here yet"),
    ("gather_index_dtype", lambda t: X.gather(t, -1, t), F32, "pl.gather: the index must be INT32 .or INT16., got fp32"),
    ("gather_mask_pattern", lambda t: X.gather(t, mask_pattern=9), F32, "pl.gather: mask_pattern must be 1..7"),
    ("scatter_mask", lambda t: X.scatter(t, mask_pattern=1, dst=t), F32,
     r"pl.scatter: the mask form \(mask_pattern=, dst=\) is not supported here yet"),
    ("gemv_rows", lambda t: X.gemv(t, pl.reshape(t, [16, 8])), F32, r"pl.gemv: lhs must be a row vector \[1, K\]"),
    ("gemv_phase", lambda t: X.gemv(t, t, acc_phase="early"), F32, "pl.gemv: acc_phase must be one of"),
    ("gemv_bias_dtype", lambda t: X.gemv_bias(pl.slice(t, [1, 16], [0, 0]), pl.reshape(t, [16, 8]),
                                              pl.cast(pl.slice(t, [1, 8], [0, 0]), pl.FP16)), F32,
     "pl.gemv_bias: bias must be fp32 .the accumulator dtype., got fp16"),
    ("batch_k", lambda t: X.batch_matmul(t, t), F32, r"pl.batch_matmul: lhs \[8, 16\] and rhs \[8, 16\] disagree on K"),
    ("validshape_grow", lambda t: X.set_validshape(t, 9, 16), F32, r"pl.set_validshape: valid_rows 9 is outside 0..8"),
    ("validshape_rank", lambda t: X.set_validshape(pl.reshape(t, [128]), 1, 1), F32,
     r"pl.set_validshape takes a 2-D tile"),
    ("fillpad_value", lambda t: X.fillpad_expand(t, [16, 16], 5), F32,
     r"pl.fillpad_expand: pad_value must be a pl.PadValue or 0, math.inf, -math.inf"),
    ("fillpad_null", lambda t: X.fillpad_expand(t, [16, 16], pl.PadValue.null), F32,
     "pl.fillpad_expand: pad_value PadValue.null leaves the padding undefined"),
    ("fillpad_small", lambda t: X.fillpad_expand(t, [4, 16]), F32,
     r"pl.fillpad_expand: the shape \[4, 16\] must have x's rank and cover x's shape \[8, 16\]"),
    ("reinterpret_same", lambda t: X.reinterpret_view(t, pl.FP32), F32,
     "pl.reinterpret_view: the target dtype must differ"),
    ("reinterpret_bytes", lambda t: X.reinterpret_view(pl.slice(t, [8, 3], [0, 0]), pl.INT32), np.zeros((8, 16), np.int8),
     "pl.reinterpret_view: a last dim of 3 int8 is 3 bytes, not a whole number of int32"),
    ("reinterpret_shape", lambda t: X.reinterpret_view(t, pl.INT32, shape=[4, 4]), F32,
     r"pl.reinterpret_view: the shape \[4, 4\] is 64 bytes, the data 512"),
    ("sort32", lambda t: X.sort32(t, t), F32, "pl.sort32 is not supported here yet"),
    ("mrgsort", lambda t: X.mrgsort(t, block_len=64), F32, "pl.mrgsort is not supported here yet"),
]


@pytest.mark.parametrize("fn,arr,msg", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_error_paths(fn, arr, msg):
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            fn(pl.load(a, [0, 0], list(a.shape)))
            pl.store(pl.load(a, [0, 0], list(a.shape)), [0, 0], out)
        return out
    with pytest.raises(ERR, match=msg):
        k(arr, np.zeros_like(arr))


# --- run-time tails: a loop over row tiles, the last one clamped to the tensor ----------------------------


def _rows(fn, tr=8):
    @pl.jit
    def k(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        n, c = a.shape
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range((n + tr - 1) // tr):
                ta = pl.load(a, [i * tr, 0], [tr, c], clamp=True)
                tb = pl.load(b, [i * tr, 0], [tr, c], clamp=True)
                pl.store(fn(ta, tb), [i * tr, 0], out)
        return out
    return k


ROW_CASES = [
    ("sel_cmp", lambda x, y: X.sel(X.cmp(x, y, 4), x, y), lambda a, b: np.where(a > b, a, b), None),
    ("part_add", lambda x, y: X.part_add(x, X.set_validshape(y, 3, 5)), None, None),
    ("expands", lambda x, y: X.expands(x, 2.5), lambda a, b: np.full_like(a, 2.5), None),
    ("row_argmax", lambda x, y: X.row_argmax(x), lambda a, b: np.argmax(a, -1)[:, None].astype(np.int32), 1),
    ("prelu", lambda x, y: X.prelu(x, y), lambda a, b: np.where(a > 0, a, a * b), None),
    ("addsc", lambda x, y: X.addsc(x, 1.25, y), lambda a, b: (a + np.float32(1.25)) + b, None),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("n", [29, 32])
@pytest.mark.parametrize("name,fn,ref,cols", ROW_CASES, ids=[c[0] for c in ROW_CASES])
def test_ops_on_tiles_with_run_time_tails(mode, n, name, fn, ref, cols):
    r = np.random.default_rng(120)
    a, b = _edge_floats(r, (n, 21)), _edge_floats(r, (n, 21))
    if name == "part_add":
        want = a.copy()
        for i in range(0, n, 8):
            want[i:i + 3, :5] = a[i:i + 3, :5] + b[i:i + 3, :5]
    else:
        with np.errstate(all="ignore"):
            want = ref(a, b)
    out = np.zeros(want.shape, want.dtype)
    run_in(mode, _rows(fn), a, b, out)
    _bits_equal(out, want)


@pytest.mark.parametrize("mode", MODES)
def test_arange_start_and_tri_diagonal_known_at_run_time(mode):
    @pl.jit
    def k(out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(4):
                pl.store(X.arange(i * 8, [1, 8]), [i, 0], out)
                pl.store(X.tri(i - 1, [8, 8], upper=True), [4 + i * 8, 0], out)
        return out
    out = np.zeros((36, 8), np.int32)
    run_in(mode, k, out)
    np.testing.assert_array_equal(out[:4], np.arange(32, dtype=np.int32).reshape(4, 8))
    for i in range(4):
        np.testing.assert_array_equal(out[4 + i * 8:12 + i * 8], np.triu(np.ones((8, 8), np.int32), i - 1))
