"""pypto.isa against numpy: every instruction family, the dtypes it supports, valid regions with
tails, rounding and saturation rules, PTO assembly runs and the command line."""

import subprocess
import sys

import numpy as np
import pytest

import pypto.isa as isa

INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8]
FLOATS = [np.float32, np.float16]
SHAPES = [(1, 1), (3, 7), (8, 64), (13, 100)]


def rand(shape, dt, lo=-50, hi=50, seed=0):
    r = np.random.default_rng(seed)
    dt = np.dtype(dt)
    if dt.kind == "f":
        return r.uniform(lo, hi, size=shape).astype(dt)
    if dt == np.bool_:
        return r.integers(0, 2, size=shape).astype(bool)
    info = np.iinfo(dt)
    return r.integers(max(lo, info.min), min(hi, info.max) + 1, size=shape).astype(dt)


def same(got, want):
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def bf16_bits(x):
    """float32 -> bf16 bit patterns, round to nearest even, NaN kept."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(x)
    r[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return r


def bf16_float(bits):
    return (np.asarray(bits).astype(np.uint32) << 16).view(np.float32)


def test_instruction_list():
    names = set(isa.instructions())
    assert {"tadd", "trowsum", "tmatmul", "tcvt", "tload", "tstore", "tsort32", "tpush"} <= names
    for n in names:
        d = isa.describe(n)
        if d["python"]:
            assert callable(getattr(isa, n)), n
    assert isa.isa() in ("avx2", "generic")


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("shape", SHAPES)
def test_binary_float(dt, shape):
    a, b = rand(shape, dt, seed=1), rand(shape, dt, 0.5, 20, seed=2)
    for f, ref in [(isa.tadd, np.add), (isa.tsub, np.subtract), (isa.tmul, np.multiply),
                   (isa.tdiv, np.divide), (isa.tmax, np.maximum), (isa.tmin, np.minimum),
                   (isa.trem, np.fmod)]:
        same(f(a, b), ref(a, b))
    same(isa.tprelu(a, b), np.where(a < 0, a * b, a))
    same(isa.tfusedmuladd(a, b, a), (a.astype(np.float64) * b + a).astype(dt))


@pytest.mark.parametrize("dt", INTS)
def test_binary_int(dt):
    a, b = rand((9, 33), dt, -100, 100, seed=3), rand((9, 33), dt, -7, 7, seed=4)
    with np.errstate(all="ignore"):
        same(isa.tadd(a, b), a + b)  # wraps like numpy
        same(isa.tsub(a, b), a - b)
        same(isa.tmul(a, b), a * b)
        q = np.where(b == 0, 0, np.trunc(a.astype(np.float64) / np.where(b == 0, 1, b)))
        same(isa.tdiv(a, b), q.astype(dt))  # truncates, x / 0 = 0
        same(isa.trem(a, b), np.where(b == 0, 0, np.fmod(a, np.where(b == 0, 1, b))).astype(dt))
    same(isa.tmax(a, b), np.maximum(a, b))
    same(isa.tand(a, b), a & b)
    same(isa.tor(a, b), a | b)
    same(isa.txor(a, b), a ^ b)
    same(isa.tnot(a), ~a)
    n = rand((9, 33), dt, 0, np.dtype(dt).itemsize * 8 - 1, seed=5)
    same(isa.tshl(a, n), np.left_shift(a, n))
    same(isa.tshr(a, n), np.right_shift(a, n))


@pytest.mark.parametrize("dt", FLOATS)
def test_unary_float(dt):
    a = rand((7, 45), dt, -10, 10, seed=6)
    p = np.abs(a) + dt(0.5)
    same(isa.tabs(a), np.abs(a))
    same(isa.tneg(a), -a)
    same(isa.trelu(a), np.maximum(a, 0))
    same(isa.tsqrt(p), np.sqrt(p))
    same(isa.trecip(p), (1 / p.astype(np.float64)).astype(dt))
    tol = 2.5e-7 if dt == np.float32 else 1e-3
    np.testing.assert_allclose(isa.texp(a), np.exp(a.astype(np.float64)), rtol=tol)
    np.testing.assert_allclose(isa.tlog(p), np.log(p.astype(np.float64)), rtol=tol, atol=tol)
    np.testing.assert_allclose(isa.trsqrt(p), 1 / np.sqrt(p.astype(np.float64)), rtol=tol)


@pytest.mark.parametrize("dt", FLOATS + INTS)
def test_tile_scalar(dt):
    a = rand((5, 19), dt, -20, 20, seed=7)
    k = 3
    with np.errstate(all="ignore"):
        same(isa.tadds(a, k), (a + dt(k)).astype(dt))
        same(isa.tsubs(a, k), (a - dt(k)).astype(dt))
        same(isa.tmuls(a, k), (a * dt(k)).astype(dt))
    same(isa.tmaxs(a, k), np.maximum(a, dt(k)))
    same(isa.tmins(a, k), np.minimum(a, dt(k)))
    with np.errstate(all="ignore"):
        same(isa.taddsc(a, k, a), ((a + dt(k)).astype(dt) + a).astype(dt))
        same(isa.tsubsc(a, k, a), ((a - dt(k)).astype(dt) + a).astype(dt))
    same(isa.texpands((2, 3), 7, dt), np.full((2, 3), 7, dt))


def test_valid_shape_leaves_the_rest():
    a, b = rand((6, 10), np.float32, seed=8), rand((6, 10), np.float32, seed=9)
    got = isa.tadd(a, b, valid_shape=(4, 7))
    same(got[:4, :7], a[:4, :7] + b[:4, :7])
    assert not got[4:].any() and not got[:, 7:].any()
    out = np.full((6, 10), -1, np.float32)
    isa.tmul(a, b, valid_shape=(2, 3), out=out)
    same(out[:2, :3], a[:2, :3] * b[:2, :3])
    assert (out[2:] == -1).all() and (out[:, 3:] == -1).all()
    rs = isa.trowsum(a, valid_shape=(5, 7))
    np.testing.assert_allclose(rs[:5, 0], a[:5, :7].sum(axis=1), rtol=1e-6)
    assert rs[5, 0] == 0
    with pytest.raises(ValueError):
        isa.tadd(a, b, valid_shape=(7, 1))


@pytest.mark.parametrize("dt", FLOATS + INTS)
def test_reductions(dt):
    a = rand((11, 77), dt, -9, 9, seed=10)
    tol = 1e-6 if dt == np.float32 else 1e-2
    if np.dtype(dt).kind == "f":
        np.testing.assert_allclose(isa.trowsum(a)[:, 0], a.astype(np.float64).sum(1), rtol=tol,
                                   atol=tol)
        np.testing.assert_allclose(isa.tcolsum(a)[0], a.astype(np.float64).sum(0), rtol=tol,
                                   atol=tol)
    else:
        same(isa.trowsum(a)[:, 0], a.sum(1, dtype=np.int64).astype(dt))
        same(isa.tcolsum(a)[0], a.sum(0, dtype=np.int64).astype(dt))
    same(isa.trowmax(a)[:, 0], a.max(1))
    same(isa.trowmin(a)[:, 0], a.min(1))
    same(isa.tcolmax(a)[0], a.max(0))
    same(isa.tcolmin(a)[0], a.min(0))
    same(isa.trowargmax(a)[:, 0], np.argmax(a, 1))
    same(isa.trowargmin(a)[:, 0], np.argmin(a, 1))


def test_nan_rules():
    a = np.array([[1, np.nan, 3], [-1, -2, -3]], np.float32)
    assert np.isnan(isa.trowmax(a)[0, 0]) and isa.trowmax(a)[1, 0] == -1
    assert isa.trowargmax(a)[0, 0] == 1
    assert np.isnan(isa.tmax(a, np.zeros_like(a))[0, 1])


@pytest.mark.parametrize("dt", FLOATS + [np.int32])
def test_expands(dt):
    a = rand((9, 21), dt, 1, 9, seed=11)
    r = rand((9, 1), dt, 1, 4, seed=12)
    c = rand((1, 21), dt, 1, 4, seed=13)
    same(isa.trowexpand(r, 21), np.broadcast_to(r, (9, 21)))
    same(isa.tcolexpand(c, 9), np.broadcast_to(c, (9, 21)))
    for name, op in [("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
                     ("max", np.maximum), ("min", np.minimum)]:
        same(getattr(isa, "trowexpand" + name)(a, r), op(a, r).astype(dt))
        same(getattr(isa, "tcolexpand" + name)(a, c), op(a, c).astype(dt))
    if np.dtype(dt).kind == "f":
        same(isa.trowexpanddiv(a, r), (a / r).astype(dt))
        m = isa.trowmax(a)
        want = np.exp((a - m).astype(dt).astype(np.float64))
        np.testing.assert_allclose(isa.trowexpandexpdif(a, m), want,
                                   rtol=3e-7 if dt == np.float32 else 1e-3)


@pytest.mark.parametrize("dt", FLOATS + INTS)
def test_compare_select(dt):
    a, b = rand((6, 17), dt, -3, 3, seed=14), rand((6, 17), dt, -3, 3, seed=15)
    for cmp, op in [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less),
                    ("le", np.less_equal), ("gt", np.greater), ("ge", np.greater_equal)]:
        same(isa.tcmp(a, b, cmp), op(a, b))
        same(isa.tcmps(a, 1, cmp), op(a, dt(1)))
    m = isa.tcmp(a, b, "gt")
    same(isa.tsel(m, a, b), np.where(m, a, b))
    same(isa.tsels(a, b, 1), a)
    same(isa.tsels(a, b, 0), b)


def test_convert_rounding_and_saturation():
    x = np.array([[2.5, -2.5, 3.5, -0.5, 1.7, 300.0, -300.0, np.nan, np.inf, 127.5]], np.float32)
    same(isa.tcvt(x, np.int8), np.array([[2, -2, 4, 0, 2, 127, -128, 0, 127, 127]], np.int8))
    same(isa.tcvt(x, np.int8, "round"), [[3, -3, 4, -1, 2, 127, -128, 0, 127, 127]])
    same(isa.tcvt(x, np.int8, "floor"), [[2, -3, 3, -1, 1, 127, -128, 0, 127, 127]])
    same(isa.tcvt(x, np.uint8, "trunc"), [[2, 0, 3, 0, 1, 255, 0, 0, 255, 127]])
    same(isa.tcvt(np.array([[300, -300, 5]], np.int32), np.int8), [[127, -128, 5]])
    same(isa.tcvt(np.array([[0, 3, -1]], np.int32), np.bool_), [[False, True, True]])
    r = np.random.default_rng(16)
    f = r.standard_normal((16, 64)).astype(np.float32) * np.float32(1e4)
    f[0, :8] = [65520, 65519.99, 2.0**-25, 3 * 2.0**-25, 1 + 2.0**-11, np.nan, -0.0, 1e-40]
    with np.errstate(over="ignore"):  # 65520 -> inf is the point
        want16 = f.astype(np.float16)
    same(isa.tcvt(f, np.float16).view(np.uint16), want16.view(np.uint16))
    bits = np.random.default_rng(17).integers(0, 2**32, size=(8, 128), dtype=np.uint64)
    g = bits.astype(np.uint32).view(np.float32)
    got = isa.tcvt(g, "bf16")
    want = bf16_bits(g)
    nan = np.isnan(g)
    same(got[~nan], want[~nan])
    assert np.isnan(bf16_float(got[nan])).all()
    same(isa.tcvt(got, np.float32)[~nan], bf16_float(got)[~nan])


def test_matmul():
    r = np.random.default_rng(18)
    a, b = r.standard_normal((37, 53), np.float32), r.standard_normal((53, 29), np.float32)
    np.testing.assert_allclose(isa.tmatmul(a, b), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    bias = r.standard_normal((1, 29), np.float32)
    np.testing.assert_allclose(isa.tmatmul_bias(a, b, bias), a.astype(np.float64) @ b + bias,
                               rtol=1e-4, atol=1e-4)
    c0 = r.standard_normal((37, 29), np.float32)
    np.testing.assert_allclose(isa.tmatmul_acc(c0, a, b), c0 + a.astype(np.float64) @ b,
                               rtol=1e-4, atol=1e-4)
    h = a.astype(np.float16), b.astype(np.float16)
    got = isa.tmatmul(*h)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, h[0].astype(np.float64) @ h[1], rtol=1e-4, atol=1e-3)
    bh = isa.tcvt(a, "bf16"), isa.tcvt(b, "bf16")
    np.testing.assert_allclose(isa.tmatmul(*bh), bf16_float(bh[0]).astype(np.float64)
                               @ bf16_float(bh[1]), rtol=1e-4, atol=1e-3)
    i = r.integers(-128, 128, (17, 40)).astype(np.int8), r.integers(-128, 128, (40, 9)).astype(np.int8)
    same(isa.tmatmul(*i), i[0].astype(np.int32) @ i[1].astype(np.int32))
    same(isa.tgemv(i[0][:1], i[1]), i[0][:1].astype(np.int32) @ i[1].astype(np.int32))


def test_movement_and_complex():
    a = np.arange(6 * 9, dtype=np.int32).reshape(6, 9)
    same(isa.ttrans(a), a.T)
    same(isa.treshape(a, (9, 6)), a.reshape(9, 6))
    same(isa.textract(a, 2, 3, (3, 4)), a[2:5, 3:7])
    z = np.zeros((6, 9), np.int32)
    same(isa.tinsert(z, a[:2, :2], 3, 4)[3:5, 4:6], a[:2, :2])
    same(isa.tconcat(a, a[:, :2]), np.concatenate([a, a[:, :2]], 1))
    p = isa.tfillpad(a[:2, :3], (3, 5), -1)
    same(p, np.pad(a[:2, :3], ((0, 1), (0, 2)), constant_values=-1))
    idx = np.random.default_rng(19).integers(-3, 60, (6, 5)).astype(np.int32)
    inside = (idx >= 0) & (idx < a.size)
    same(isa.tgather(a, idx), np.where(inside, a.ravel()[np.clip(idx, 0, a.size - 1)], 0))
    sc = isa.tscatter(np.zeros(20, np.int32).reshape(4, 5), np.array([[7, 8]], np.int32),
                      np.array([[19, 3]], np.int32))
    assert sc[3, 4] == 7 and sc[0, 3] == 8 and sc.sum() == 15
    same(isa.tci((2, 4), 10), 10 + np.arange(8).reshape(2, 4))
    same(isa.ttri((4, 4), 0, False), np.tril(np.ones((4, 4), np.float32)))
    same(isa.ttri((4, 5), 1, True), np.triu(np.ones((4, 5), np.float32), 1))
    x = np.random.default_rng(20).standard_normal((3, 70)).astype(np.float32)
    v, i = isa.tsort32(x)
    for blk in range(0, 70, 32):
        same(v[:, blk:blk + 32], -np.sort(-x[:, blk:blk + 32], 1))
    same(np.take_along_axis(x, i, 1), v)
    v, i = isa.tmrgsort(*isa.tmrgsort(v, i, 32), 64)
    same(v, -np.sort(-x, 1))
    same(np.take_along_axis(x, i, 1), v)


def test_quant():
    x = np.random.default_rng(21).uniform(-3, 3, (4, 50)).astype(np.float32)
    scale = np.array([10, 20, 40, 80], np.float32)
    q = isa.tquant(x, scale)
    same(q, np.clip(np.rint(x * scale[:, None]), -128, 127).astype(np.int8))
    d = isa.tdequant(q, 1 / scale)
    same(d, (q.astype(np.float32) * (1 / scale)[:, None]).astype(np.float32))


def test_memory():
    g = np.arange(8 * 10, dtype=np.float32).reshape(8, 10)
    t = isa.tload(g, 2, 3, (4, 5))
    same(t, g[2:6, 3:8])
    isa.tstore(g, -t, 2, 3)
    same(g[2:6, 3:8], -t)
    isa.tstore(g, np.ones((1, 2), np.float32), 0, 0, atomic="add")
    assert g[0, 0] == 1 and g[0, 1] == 2
    idx = np.array([[79, 0, 11]], np.int32)
    same(isa.mgather(g, idx), g.flat[[79, 0, 11]].reshape(1, 3))
    isa.mscatter(g, np.array([[5, 6, 7]], np.float32), idx)
    assert g.flat[79] == 5 and g.flat[11] == 7


def test_errors():
    with pytest.raises(ValueError, match="dtype"):
        isa.texp(np.zeros((2, 2), np.int8))
    with pytest.raises(ValueError):
        isa.tadd(np.zeros((2, 2), np.float32), np.zeros((2, 2), np.float16))
    with pytest.raises(ValueError, match="line 1"):
        isa.run("tadd %a, %b, %c")


SOFTMAX = """
.kernel softmax core=aiv
  .arg %x : !pto.gm<f32, ?x?>
  .arg %y : !pto.gm<f32, ?x?>
  .arg %n : index
  .arg %d : index
  .tile %t : !pto.tile<vec, f32, 8x64, valid=?x?>
  .tile %m : !pto.tile<vec, f32, 8x1, valid=?x1>
  for %i = 0 to %n step 8 {
    %r = sub %n, %i
    %r = min %r, 8
    set_valid %t, %r, %d
    set_valid %m, %r, 1
    tload %t, %x[%i, 0]
    trowmax %m, %t
    trowexpandexpdif %t, %t, %m
    trowsum %m, %t
    trowexpanddiv %t, %t, %m
    tstore %y[%i, 0], %t
  }
.end
"""


def softmax(x):
    e = np.exp(x.astype(np.float64) - x.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def test_run_assembly():
    x = np.random.default_rng(22).standard_normal((19, 50)).astype(np.float32)
    y = np.zeros_like(x)
    isa.run(SOFTMAX, x=x, y=y, n=19, d=50)
    np.testing.assert_allclose(y, softmax(x), rtol=1e-5, atol=1e-7)
    text = isa.canonical(SOFTMAX)
    assert isa.canonical(text) == text


def test_command_line(tmp_path):
    x = np.random.default_rng(23).standard_normal((10, 64)).astype(np.float32)
    (tmp_path / "k.pto").write_text(SOFTMAX)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "y.npy"
    cmd = [sys.executable, "-m", "pypto.isa", "run", str(tmp_path / "k.pto"), f"x={tmp_path / 'x.npy'}",
           "y=zeros:10x64:f32", "n=10", "d=64", "--save", f"y={out}"]
    subprocess.run(cmd, check=True)
    np.testing.assert_allclose(np.load(out), softmax(x), rtol=1e-5, atol=1e-7)
    listing = subprocess.run([sys.executable, "-m", "pypto.isa", "list"], check=True,
                             capture_output=True, text=True).stdout
    assert "tmatmul" in listing and "trowexpandexpdif" in listing
    assert "F = floating" in listing and "A = any dtype" in listing  # the legend of the type codes
    printed = subprocess.run([sys.executable, "-m", "pypto.isa", "print", str(tmp_path / "k.pto")],
                             check=True, capture_output=True, text=True).stdout
    assert printed == isa.canonical(SOFTMAX)
