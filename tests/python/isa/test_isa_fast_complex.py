"""pypto.isa (the fast C++ layer) against numpy for the complex, layout and indexed-memory
instructions: TSORT32 TMRGSORT TGATHER TSCATTER TCI TTRI TRESHAPE MGATHER MSCATTER, atomic
TSTORE and int8 / 16-bit TMATMUL, every dtype each supports, random shapes with tails, padded
row strides (views of wider arrays) and ties / NaN / signed zeros."""

import numpy as np
import pytest

import pypto.isa as isa

INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8]
FLOATS = [np.float32, np.float16]
ALL = FLOATS + INTS + [np.bool_]


def values(rng, shape, dt, ties=True):
    dt = np.dtype(dt)
    if dt == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if dt.kind == "f":
        x = (rng.integers(-20, 21, shape) / 4).astype(dt)
        if ties:
            sp = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0], dt)
            m = rng.random(shape) < 0.2
            x[m] = rng.choice(sp, m.sum())
        return x
    info = np.iinfo(dt)
    x = rng.integers(-10, 11, shape).astype(np.int64)
    m = rng.random(shape) < 0.1
    x[m] = rng.choice([info.min, info.max, 0], m.sum())
    return x.astype(dt)


def padded(rng, a, extra=3):
    """a as a view into a wider array (row stride > width)."""
    big = np.zeros((a.shape[0], a.shape[1] + extra), a.dtype)
    big[:, : a.shape[1]] = a
    return big[:, : a.shape[1]]


def desc_order(x, idx):
    """Indices sorting x descending, NaN first, ties by idx (the TSORT32 / TMRGSORT order)."""
    if x.dtype.kind == "f":
        xf = x.astype(np.float64)
        nan = np.isnan(xf)
        key = np.where(nan, 0, -xf)
    else:
        nan = np.zeros(x.shape, bool)
        key = ~x.astype(np.int64)  # decreasing in x, no overflow at the int64 minimum
    return np.lexsort((idx, key, ~nan))


@pytest.mark.parametrize("dt", FLOATS + INTS)
def test_tsort32_and_tmrgsort(dt):
    rng = np.random.default_rng(1)
    for _ in range(6):
        r, c = rng.integers(1, 6), rng.integers(1, 150)
        x = padded(rng, values(rng, (r, c), dt))
        v, i = isa.tsort32(x)
        for row in range(r):
            for b in range(0, c, 32):
                blk = x[row, b:b + 32]
                o = desc_order(blk, np.arange(blk.size))
                np.testing.assert_array_equal(i[row, b:b + 32], b + o)
                got, want = v[row, b:b + 32], blk[o]
                if got.dtype.kind == "f":  # same bits: the sign of zeros matters too
                    got, want = got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}")
                    nan = np.isnan(blk[o])
                    got, want = got[~nan], want[~nan]
                np.testing.assert_array_equal(got, want)
        run = 32
        while run < c:
            v, i = isa.tmrgsort(v, i, run)
            run *= 2
        for row in range(r):  # the whole row is now sorted
            o = desc_order(x[row], np.arange(c))
            np.testing.assert_array_equal(i[row], o)
            np.testing.assert_array_equal(v[row], x[row][o])


@pytest.mark.parametrize("dt", ALL)
def test_gather_scatter_reshape(dt):
    rng = np.random.default_rng(2)
    for _ in range(5):
        a = values(rng, (rng.integers(1, 9), rng.integers(1, 40)), dt, ties=False)
        for src in (a, padded(rng, a)):
            idx = rng.integers(-4, a.size + 4, (rng.integers(1, 6), rng.integers(1, 30))).astype(np.int32)
            inside = (idx >= 0) & (idx < a.size)
            want = np.where(inside, a.ravel()[np.clip(idx, 0, a.size - 1)], np.zeros((), a.dtype))
            np.testing.assert_array_equal(isa.tgather(src, idx), want)
            # scatter: later elements win, outside indices skipped
            s = values(rng, idx.shape, dt, ties=False)
            want = a.copy().ravel()
            for k, j in zip(s.ravel(), idx.ravel()):
                if 0 <= j < a.size:
                    want[j] = k
            np.testing.assert_array_equal(isa.tscatter(src, s, idx), want.reshape(a.shape))
            # global forms (numpy arrays as GM tensors) need in-range indices
            g = a.copy()
            gi = np.clip(idx, 0, a.size - 1)
            np.testing.assert_array_equal(isa.mgather(g, gi), a.ravel()[gi])
            want = a.copy().ravel()
            for k, j in zip(s.ravel(), gi.ravel()):
                want[j] = k
            np.testing.assert_array_equal(isa.mscatter(g, s, gi), want.reshape(a.shape))
        n = a.size
        rows = [d for d in range(1, n + 1) if n % d == 0]
        nr = rows[rng.integers(len(rows))]
        np.testing.assert_array_equal(isa.treshape(padded(rng, a), (nr, n // nr)), a.reshape(nr, n // nr))


@pytest.mark.parametrize("dt", INTS)
def test_tci(dt):
    for shape in [(1, 1), (3, 7), (5, 70)]:
        for desc in (False, True):
            start = 100 if dt != np.int8 else 100
            k = np.arange(shape[0] * shape[1], dtype=np.int64).reshape(shape)
            want = (start - k if desc else start + k).astype(np.int64).astype(dt)  # wraps
            np.testing.assert_array_equal(isa.tci(shape, start, dt, descending=desc), want)


@pytest.mark.parametrize("dt", ALL)
def test_ttri(dt):
    for shape in [(1, 1), (5, 9), (13, 4)]:
        for diag in range(-shape[0] - 1, shape[1] + 2):
            np.testing.assert_array_equal(isa.ttri(shape, diag, False, dt),
                                          np.tril(np.ones(shape), diag).astype(dt))
            np.testing.assert_array_equal(isa.ttri(shape, diag, True, dt),
                                          np.triu(np.ones(shape), diag).astype(dt))


@pytest.mark.parametrize("dt", FLOATS + INTS)
def test_atomic_store_add(dt):
    rng = np.random.default_rng(3)
    for _ in range(5):
        g = values(rng, (9, 50), dt, ties=False)
        r0, c0 = rng.integers(0, 4), rng.integers(0, 9)  # windows at every alignment
        t = values(rng, (rng.integers(1, 6), rng.integers(1, 40)), dt, ties=False)
        want = g.copy()
        w = want[r0:r0 + t.shape[0], c0:c0 + t.shape[1]]
        if dt in (np.float32, np.float16):
            w[...] = (w.astype(np.float64) + t).astype(dt)
        else:
            w[...] = (w.astype(np.int64) + t).astype(dt)  # wraps
        isa.tstore(g, t, r0, c0, atomic="add")
        np.testing.assert_array_equal(g, want)


@pytest.mark.parametrize("dt", [np.int8, np.uint8])
def test_int8_matmul_extremes(dt):
    rng = np.random.default_rng(4)
    info = np.iinfo(dt)
    for m, k, n in [(1, 1, 1), (7, 33, 17), (13, 300, 40), (6, 513, 16)]:
        a = rng.choice([info.min, info.max, 1], (m, k)).astype(dt)
        b = rng.choice([info.min, info.max, 3], (k, n)).astype(dt)
        want = a.astype(np.int64) @ b.astype(np.int64)
        np.testing.assert_array_equal(isa.tmatmul(a, b), want.astype(np.int32))
        acc = rng.integers(-1000, 1000, (m, n)).astype(np.int32)
        np.testing.assert_array_equal(isa.tmatmul_acc(acc, a, b), (acc + want).astype(np.int32))


def test_half_matmul_padded():
    rng = np.random.default_rng(5)
    a = rng.integers(-8, 9, (19, 45)).astype(np.float16)
    b = rng.integers(-8, 9, (45, 37)).astype(np.float16)
    want = a.astype(np.float64) @ b.astype(np.float64)  # small integers: exact in fp32
    np.testing.assert_array_equal(isa.tmatmul(padded(rng, a), padded(rng, b)), want.astype(np.float32))


NZ_KERNEL = """
.kernel mm core=aic
  .arg %x : !pto.gm<{dt}, 32x64>
  .arg %w : !pto.gm<{dt}, 64x32>
  .arg %y : !pto.gm<{acc}, 32x32>
  .tile %xv : !pto.tile<vec, {dt}, 32x64>
  .tile %wv : !pto.tile<vec, {dt}, 64x32>
  .tile %a : !pto.tile<left, {dt}, 32x64, layout={la}>
  .tile %b : !pto.tile<right, {dt}, 64x32, layout={lb}>
  .tile %c : !pto.tile<acc, {acc}, 32x32>
  tload %xv, %x[0, 0]
  tload %wv, %w[0, 0]
  tmov %a, %xv
  tmov %b, %wv
  tmatmul %c, %a, %b
  tstore %y[0, 0], %c
.end
"""


@pytest.mark.parametrize("dt", ["f32", "f16", "i8"])
@pytest.mark.parametrize("layouts", [("nz", "nz"), ("col_major", "nz"), ("nz", "row_major")])
def test_pto_matmul_on_nz_tiles(dt, layouts):
    rng = np.random.default_rng(6)
    npdt = {"f32": np.float32, "f16": np.float16, "i8": np.int8}[dt]
    x = rng.integers(-8, 9, (32, 64)).astype(npdt)
    w = rng.integers(-8, 9, (64, 32)).astype(npdt)
    acc = "i32" if dt == "i8" else "f32"
    y = np.zeros((32, 32), np.int32 if dt == "i8" else np.float32)
    isa.run(NZ_KERNEL.format(dt=dt, acc=acc, la=layouts[0], lb=layouts[1]), x=x, w=w, y=y)
    np.testing.assert_array_equal(y, (x.astype(np.int64) @ w.astype(np.int64)).astype(y.dtype))
