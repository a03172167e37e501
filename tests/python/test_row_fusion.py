"""Row fusion in generated kernels: a stretch of row-local instructions (loads, elementwise,
row broadcasts, row reductions, R x 1 row values, stores) runs as one loop over the rows.
Results must equal the interpreter's (bit for bit without exp) and numpy's, with tails in
rows and columns, several leading tile dims, strided inputs and in-place updates."""

import numpy as np
import pytest

import pypto
from _util import assert_close, randn, rng, run_both

F32 = pypto.DT_FP32
T = pypto.Tensor



@pytest.mark.parametrize("shape,tile", [((3, 7, 45), (2, 3, 16)), ((2, 16, 128), (1, 16, 128)),
                                        ((5, 9, 10), (2, 4, 8))])
def test_row_stats_chain_matches_interpreter(shape, tile):
    # A centred, rescaled row with its max kept: two reductions, row values and stores, and
    # tiles whose rows span two leading dims with tails in both. The max is exact; the sum is
    # taken in 8 lanes, so it may differ from the sequential reference by an ulp.
    @pypto.jit
    def f(x: T(shape, F32), m: T(shape[:-1] + (1,), F32), out: T(shape, F32)):
        pypto.set_vec_tile_shapes(*tile)
        y = x * 0.5 + 1.0
        mx = pypto.maximum(pypto.amax(y, dim=-1, keepdim=True), m)
        m[:] = mx
        z = y - mx
        out[:] = z / (pypto.sum(pypto.abs(z), dim=-1, keepdim=True) + 1.0)

    r = rng(5)
    x = randn(r, shape)
    m0 = randn(r, shape[:-1] + (1,))
    outs = {}
    for mode in ("interp", "cpu"):
        pypto.set_runtime_options(run_mode=mode)
        try:
            m, out = m0.copy(), np.zeros(shape, np.float32)
            f(x, m, out)
            outs[mode] = (m, out)
        finally:
            pypto.set_runtime_options(run_mode="cpu")
    np.testing.assert_array_equal(outs["cpu"][0], outs["interp"][0])
    assert_close(outs["cpu"][1], outs["interp"][1], rtol=1e-6, atol=1e-7)
    y = x.astype(np.float64) * 0.5 + 1.0
    mx = np.maximum(y.max(-1, keepdims=True), m0)
    z = y - mx
    assert_close(outs["cpu"][0], mx)
    assert_close(outs["cpu"][1], z / (np.abs(z).sum(-1, keepdims=True) + 1.0), rtol=1e-5, atol=1e-5)
    assert "row-fused:" in f.last.program.native_source()


@pytest.mark.parametrize("rows,cols,tile", [(64, 200, (16, 64)), (33, 77, (8, 40))])
def test_online_softmax_step_against_numpy(rows, cols, tile):
    # The flash-attention state update on its own: new max, exp of the difference, row sums.
    @pypto.jit
    def step(s: T((rows, cols), F32), m: T((rows, 1), F32), l: T((rows, 1), F32), p: T((rows, cols), F32)):
        pypto.set_vec_tile_shapes(*tile)
        s = s * 0.125
        m_new = pypto.maximum(m, pypto.amax(s, dim=-1, keepdim=True))
        e = pypto.exp(s - m_new)
        alpha = pypto.exp(m - m_new)
        l[:] = l * alpha + pypto.sum(e, dim=-1, keepdim=True)
        m[:] = m_new
        p[:] = e

    r = rng(6)
    s = randn(r, (rows, cols)) * 4
    m, l = randn(r, (rows, 1)), np.abs(randn(r, (rows, 1))) + 1
    m0, l0 = m.copy(), l.copy()
    p = np.zeros((rows, cols), np.float32)
    step(s, m, l, p)
    s64 = s.astype(np.float64) * 0.125
    m_new = np.maximum(m0, s64.max(-1, keepdims=True))
    e = np.exp(s64 - m_new)
    assert_close(m, m_new)
    assert_close(p, e, rtol=1e-5, atol=1e-6)
    assert_close(l, l0 * np.exp(m0 - m_new) + e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-5)
    assert "row-fused:" in step.last.program.native_source()


def test_strided_input_rows_are_gathered():
    # A column-strided parameter: its rows can not be read in place, LoadRow gathers them.
    @pypto.jit
    def f(x: T((24, 40), F32)) -> T((24, 40), F32):
        pypto.set_vec_tile_shapes(8, 40)
        y = x * 2.0
        return y - pypto.amax(y, dim=-1, keepdim=True)

    base = randn(rng(7), (24, 80))
    x = base[:, ::2]
    ref, nat = run_both(f, x)
    np.testing.assert_array_equal(nat, ref)
    assert_close(nat, x * 2.0 - (x * 2.0).max(-1, keepdims=True))
    assert "row-fused:" in f.last.program.native_source()


def test_store_into_a_window_the_kernel_reads_elsewhere_keeps_numpy_semantics():
    # x[1:9] = x[0:8] * 2 + 1 in one tile: every row must be read before any is written.
    @pypto.jit
    def f(x: T((9, 16), F32)):
        pypto.set_vec_tile_shapes(8, 16)
        x[1:9] = x[0:8] * 2.0 + pypto.amax(x[0:8], dim=-1, keepdim=True)

    x = randn(rng(8), (9, 16))
    ref = x.astype(np.float64).copy()
    ref[1:9] = ref[0:8] * 2.0 + ref[0:8].max(-1, keepdims=True)
    f(x)
    assert_close(x, ref)


@pytest.mark.parametrize("shape,tile", [((2, 100, 48), (1, 32, 48)), ((3, 7, 20), (2, 4, 16))])
def test_row_values_are_computed_for_all_rows_before_the_row_loop(shape, tile):
    # The flash-attention rescale: alpha = exp(m - m_new) and l * alpha + rs need only R x 1
    # tiles, so they run as one column loop before the rows (and their stores after them);
    # the rows then only rescale acc. Tails in the rows (100 = 3 x 32 + 4) and in two leading
    # dims. (A multiply-add may become one FMA in the compiled kernel: an ulp from the
    # interpreter.)
    col = shape[:-1] + (1,)

    @pypto.jit
    def f(m: T(col, F32), m_new: T(col, F32), l: T(col, F32), rs: T(col, F32), acc: T(shape, F32),
          pv: T(shape, F32)):
        pypto.set_vec_tile_shapes(*tile)
        alpha = pypto.exp(m - m_new)
        l[:] = l * alpha + rs
        acc[:] = acc * alpha + pv
        m[:] = m_new

    r = rng(9)
    ins = [randn(r, col), randn(r, col), np.abs(randn(r, col)) + 1, randn(r, col), randn(r, shape), randn(r, shape)]
    outs = {}
    for mode in ("interp", "cpu"):
        pypto.set_runtime_options(run_mode=mode)
        try:
            args = [a.copy() for a in ins]
            f(*args)
            outs[mode] = args
        finally:
            pypto.set_runtime_options(run_mode="cpu")
    np.testing.assert_array_equal(outs["cpu"][0], outs["interp"][0])
    for got, ref in zip(outs["cpu"][1:], outs["interp"][1:]):
        assert_close(got, ref, rtol=1e-6, atol=1e-6)
    m, m_new, l, rs, acc, pv = (a.astype(np.float64) for a in ins)
    alpha = np.exp(m - m_new)
    assert_close(outs["cpu"][0], m_new)
    assert_close(outs["cpu"][2], l * alpha + rs, rtol=1e-5, atol=1e-6)
    assert_close(outs["cpu"][4], acc * alpha + pv, rtol=1e-5, atol=1e-6)
    src = f.last.program.native_source()
    assert "row-fused:" in src and "R x 1 values of all rows" in src and "StoreColumn" in src


@pytest.mark.parametrize("dt", ["fp16", "bf16"])
@pytest.mark.parametrize("kind", ["rms_norm", "softmax"])
@pytest.mark.parametrize("shape,tile", [((40, 200), (8, 200)), ((3, 9, 70), (2, 4, 70))])
def test_16bit_composite_is_one_row_loop_with_converting_loads_and_stores(dt, kind, shape, tile):
    # The fp16/bf16 composites widen to fp32 inside: the loads widen and the stores narrow in
    # the row loop (no 16-bit tiles, no passes over them); rms_norm's TRSQRT and gamma
    # broadcast (TCOLEXPANDMUL of a 1 x C row) run in it too. Same bits as the interpreter.
    torch = pytest.importorskip("torch")
    tdt, pdt = {"fp16": (torch.float16, pypto.DT_FP16), "bf16": (torch.bfloat16, pypto.DT_BF16)}[dt]
    C = shape[-1]
    gshape = (1,) * (len(shape) - 1) + (C,)

    @pypto.jit
    def norm(x: T(shape, pdt), g: T(gshape, pdt)):
        pypto.set_vec_tile_shapes(*tile)
        return pypto.rms_norm(x, g)

    @pypto.jit
    def softmax(x: T(shape, pdt)):
        pypto.set_vec_tile_shapes(*tile)
        return pypto.softmax(x)

    gen = torch.Generator().manual_seed(21)
    x = (torch.randn(*shape, generator=gen) * 3).to(tdt)
    g = (torch.rand(1, C, generator=gen) + 0.5).to(tdt).reshape(gshape)
    if kind == "rms_norm":
        f, targs = norm, (x, g)
        want = torch.nn.functional.rms_norm(x, (C,), g.reshape(C), 1e-6)
    else:
        f, targs = softmax, (x,)
        want = torch.softmax(x, -1)
    args = targs if dt == "bf16" else tuple(t.numpy() for t in targs)
    interp, cpu = run_both(f, *args)
    as_np = (lambda t: t.float().numpy()) if dt == "bf16" else (lambda t: np.asarray(t, np.float32))
    if kind == "rms_norm":
        np.testing.assert_array_equal(as_np(cpu), as_np(interp))
    ulp = 2 ** -10 if dt == "fp16" else 2 ** -7
    np.testing.assert_allclose(as_np(cpu), want.float().numpy(), rtol=ulp, atol=1e-6)
    src = f.last.program.native_source()
    assert "LoadRowWiden<" in src and "StoreRowNarrow<" in src, src
    if kind == "rms_norm":
        assert any("TRSQRT" in line and "TCOLEXPANDMUL" in line for line in src.splitlines() if "row-fused:" in line)


@pytest.mark.parametrize("shape,tile", [((16, 1024), (4, 1024)), ((10, 70), (4, 70))])
def test_a_widened_tile_that_is_stored_and_reduced_reaches_its_tensor(shape, tile):
    # glm_moe_fusion_mix: x_fp32 = cast(bf16 x) is stored (a later kernel reads a slice of it)
    # and reduced in the same row loop (amax of abs). The widening load went to a scratch row
    # while the store, made in place, was skipped: the slice read garbage (a silent wrong answer).
    torch = pytest.importorskip("torch")
    R, C = shape
    half = C // 2

    @pypto.jit
    def f(x: T(shape, pypto.DT_BF16), m: T((R, 1), F32), o: T((R, C - half), F32)):
        pypto.set_vec_tile_shapes(*tile)
        xf = pypto.cast(x, F32)
        m[:] = pypto.amax(pypto.abs(xf), -1, True)
        pypto.set_vec_tile_shapes(R, C - half)
        o[:] = xf[:, half:C] + 1.0

    x = (torch.randn(*shape, generator=torch.Generator().manual_seed(4)) * 3).to(torch.bfloat16)
    xf = x.float().numpy()
    for mode in ("interp", "cpu"):
        pypto.set_runtime_options(run_mode=mode)
        try:
            m, o = np.zeros((R, 1), np.float32), np.zeros((R, C - half), np.float32)
            f(x, m, o)
        finally:
            pypto.set_runtime_options(run_mode="cpu")
        np.testing.assert_array_equal(o, xf[:, half:] + 1, err_msg=mode)
        np.testing.assert_array_equal(m, np.abs(xf).max(-1, keepdims=True), err_msg=mode)


def _at_alignment(n: int, offset: int) -> tuple:
    """A NaN-filled buffer and the n floats of it that start `offset` floats past a 64-byte line."""
    buf = np.full(n + offset + 32, np.nan, np.float32)
    start = (-(buf.ctypes.data % 64) // 4) % 16 + offset
    return buf, start


@pytest.mark.parametrize("offset", [0, 1, 3, 4, 15])
@pytest.mark.parametrize("cols", [64, 45, 2048, 17])
def test_rows_streamed_into_an_output_at_any_alignment(offset, cols):
    # Rows made in place in an output no kernel reads stream past the cache: in place when the
    # row is vector-aligned, else made in a scratch row and streamed in (StreamRowTo: plain
    # stores for the head and tail). An output that starts `offset` floats past a cache line (4:
    # numpy's own large arrays), one instruction and a softmax, must give the bits the aligned
    # output gets, and touch nothing outside it.
    rows = 37

    @pypto.jit
    def f(x: T((rows, cols), F32), one: T((rows, cols), F32), sm: T((rows, cols), F32)):
        pypto.set_vec_tile_shapes(8, cols)
        one[:] = x * 3.0
        e = pypto.exp(x - pypto.amax(x, dim=-1, keepdim=True))
        sm[:] = e / pypto.sum(e, dim=-1, keepdim=True)

    x = randn(rng(offset + cols), (rows, cols))
    got = []
    for off in (0, offset):
        (b1, s1), (b2, s2) = (_at_alignment(rows * cols, off) for _ in range(2))
        one, sm = b1[s1:s1 + rows * cols].reshape(rows, cols), b2[s2:s2 + rows * cols].reshape(rows, cols)
        f(x, one, sm)
        for b, s in ((b1, s1), (b2, s2)):
            assert np.isnan(b[:s]).all() and np.isnan(b[s + rows * cols:]).all()
        got.append((one.copy(), sm.copy()))
    np.testing.assert_array_equal(got[1][0], x * np.float32(3))
    e = np.exp(x - x.max(-1, keepdims=True))
    assert_close(got[1][1], e / e.sum(-1, keepdims=True), rtol=2e-6)
    np.testing.assert_array_equal(got[1][1], got[0][1])
