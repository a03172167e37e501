"""pypto.matmul against numpy (and torch for bf16): tails in M, N and K, L0 splits of K,
transposed operands, batches, every dtype, both backends, epilogues, and the errors."""

import re

import numpy as np
import pytest

import pypto
from _util import assert_close, rng

BACKENDS = ["cpu", "interp"]


def _mm_fn(M, K, N, dt, cube, mode, a_trans=False, b_trans=False, out_dtype=None, batch=None, b_batched=True):
    a_shape = (K, M) if a_trans else (M, K)
    b_shape = (N, K) if b_trans else (K, N)
    if batch is not None:
        a_shape = (batch,) + a_shape
        if b_batched:
            b_shape = (batch,) + b_shape

    @pypto.jit(runtime_options={"run_mode": mode})
    def mm(a: pypto.Tensor(a_shape, dt), b: pypto.Tensor(b_shape, dt)):
        if cube is not None:
            pypto.set_cube_tile_shapes(*cube)
        return pypto.matmul(a, b, out_dtype, a_trans=a_trans, b_trans=b_trans)

    return mm


def _ref(a, b, a_trans, b_trans):
    a64 = np.swapaxes(a, -1, -2).astype(np.float64) if a_trans else a.astype(np.float64)
    b64 = np.swapaxes(b, -1, -2).astype(np.float64) if b_trans else b.astype(np.float64)
    return a64 @ b64


@pytest.mark.parametrize("mode", BACKENDS)
@pytest.mark.parametrize(
    "M,K,N,cube",
    [
        (100, 70, 90, ([32, 32], [16, 32], [48, 48])),  # tails in M, N and K (K tail inside an L1 step)
        (64, 64, 64, ([32, 32], [32, 32], [32, 32])),  # exact tiles, no L0 split
        (37, 129, 53, ([16, 16], [32, 64], [16, 16])),  # odd sizes, micro-kernel edges in both dims
        (1, 300, 7, None),  # a row vector, automatic tiles
        (200, 33, 300, None),  # automatic tiles clipped to K
    ],
)
def test_matmul_fp32_tails(mode, M, K, N, cube):
    r = rng(M * 1000 + K * 10 + N)
    a = r.standard_normal((M, K)).astype(np.float32)
    b = r.standard_normal((K, N)).astype(np.float32)
    got = _mm_fn(M, K, N, pypto.DT_FP32, cube, mode)(a, b)
    assert got.dtype == np.float32
    assert_close(got, _ref(a, b, False, False), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mode", BACKENDS)
@pytest.mark.parametrize("a_trans,b_trans", [(True, False), (False, True), (True, True)])
def test_matmul_transposed(mode, a_trans, b_trans):
    M, K, N = 45, 77, 61
    r = rng(7)
    a = r.standard_normal((K, M) if a_trans else (M, K)).astype(np.float32)
    b = r.standard_normal((N, K) if b_trans else (K, N)).astype(np.float32)
    fn = _mm_fn(M, K, N, pypto.DT_FP32, ([16, 16], [16, 32], [32, 32]), mode, a_trans, b_trans)
    assert_close(fn(a, b), _ref(a, b, a_trans, b_trans), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mode", BACKENDS)
@pytest.mark.parametrize("b_batched", [True, False])
def test_matmul_batched(mode, b_batched):
    B, M, K, N = 3, 20, 50, 30
    r = rng(11)
    a = r.standard_normal((B, M, K)).astype(np.float32)
    b = r.standard_normal((B, K, N) if b_batched else (K, N)).astype(np.float32)
    fn = _mm_fn(M, K, N, pypto.DT_FP32, ([16, 16], [16, 32], [16, 16]), mode, batch=B, b_batched=b_batched)
    got = fn(a, b)
    assert got.shape == (B, M, N)
    assert_close(got, _ref(a, b, False, False), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mode", BACKENDS)
def test_matmul_int8_exact(mode):
    M, K, N = 70, 301, 45  # odd K: the last int16 pair is half padding
    r = rng(3)
    a = r.integers(-128, 128, size=(M, K), dtype=np.int8)
    b = r.integers(-128, 128, size=(K, N), dtype=np.int8)
    fn = _mm_fn(M, K, N, pypto.DT_INT8, ([32, 32], [32, 128], [32, 32]), mode)
    got = fn(a, b)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, a.astype(np.int32) @ b.astype(np.int32))


@pytest.mark.parametrize("mode", BACKENDS)
def test_matmul_int8_transposed_b_exact(mode):
    M, K, N = 33, 64, 50
    r = rng(4)
    a = r.integers(-128, 128, size=(M, K), dtype=np.int8)
    b = r.integers(-128, 128, size=(N, K), dtype=np.int8)
    fn = _mm_fn(M, K, N, pypto.DT_INT8, ([16, 16], [32, 64], [32, 32]), mode, b_trans=True)
    np.testing.assert_array_equal(fn(a, b), a.astype(np.int32) @ b.astype(np.int32).T)


@pytest.mark.parametrize("mode", BACKENDS)
def test_matmul_fp16_in_fp32_out(mode):
    M, K, N = 50, 90, 40
    r = rng(5)
    a = r.standard_normal((M, K)).astype(np.float16)
    b = r.standard_normal((K, N)).astype(np.float16)
    fn = _mm_fn(M, K, N, pypto.DT_FP16, ([16, 16], [32, 64], [16, 16]), mode, out_dtype=pypto.DT_FP32)
    got = fn(a, b)
    assert got.dtype == np.float32
    assert_close(got, _ref(a, b, False, False), rtol=1e-4, atol=1e-3)  # fp32 accumulation of exact products


@pytest.mark.parametrize("mode", BACKENDS)
def test_matmul_fp16_out(mode):
    M, K, N = 24, 40, 24
    r = rng(6)
    a = r.standard_normal((M, K)).astype(np.float16)
    b = r.standard_normal((K, N)).astype(np.float16)
    got = _mm_fn(M, K, N, pypto.DT_FP16, None, mode)(a, b)
    assert got.dtype == np.float16
    # fp32 accumulation rounded once to fp16
    np.testing.assert_array_equal(got, _ref(a, b, False, False).astype(np.float32).astype(np.float16))


@pytest.mark.parametrize("mode", BACKENDS)
def test_matmul_bf16_torch(mode):
    torch = pytest.importorskip("torch")
    M, K, N = 40, 100, 36
    g = torch.Generator().manual_seed(0)
    a = torch.randn(M, K, generator=g).to(torch.bfloat16)
    b = torch.randn(K, N, generator=g).to(torch.bfloat16)
    fn = _mm_fn(M, K, N, pypto.DT_BF16, ([16, 16], [32, 64], [32, 32]), mode, out_dtype=pypto.DT_FP32)
    got = fn(a, b)
    ref = a.double() @ b.double()
    assert_close(got.numpy() if hasattr(got, "numpy") else got, ref.numpy(), rtol=1e-4, atol=1e-3)
    fn16 = _mm_fn(M, K, N, pypto.DT_BF16, ([16, 16], [32, 64], [32, 32]), mode)
    got16 = fn16(a, b)
    assert got16.dtype == torch.bfloat16
    # fp32 accumulation rounded once to bf16
    torch.testing.assert_close(got16, ref.float().to(torch.bfloat16), rtol=0, atol=0)


@pytest.mark.parametrize("dt", [pypto.DT_FP16, pypto.DT_FP32])
@pytest.mark.parametrize("a_trans", [False, True])
def test_matmul_points_sharing_an_operand(dt, a_trans):
    # Consecutive grid points of a task share A (column blocks of one row block) or B (a B
    # without batch): their packed Left/Right is kept from point to point. The tails in M and N
    # give the last points other valid extents, which must be packed again.
    M, K, N = 70, 48, 300
    r = rng(11)
    npdt = np.float16 if dt == pypto.DT_FP16 else np.float32
    a = r.standard_normal((K, M) if a_trans else (M, K)).astype(npdt)
    b = r.standard_normal((K, N)).astype(npdt)
    fn = _mm_fn(M, K, N, dt, ([32, 32], [48, 48], [32, 32]), "cpu", a_trans=a_trans, out_dtype=pypto.DT_FP32)
    assert_close(fn(a, b), _ref(a, b, a_trans, False), rtol=1e-3, atol=1e-3)
    assert re.search(r"L\d+w\.Changes\(", fn.last.program.native_source())  # A's packing kept
    batch = 5
    ab = r.standard_normal((batch, M, K)).astype(npdt)
    fnb = _mm_fn(M, K, N, dt, ([32, 32], [48, 48], [32, 32]), "cpu", out_dtype=pypto.DT_FP32, batch=batch,
                 b_batched=False)
    assert_close(fnb(ab, b), _ref(ab, b, False, False), rtol=1e-3, atol=1e-3)
    assert re.search(r"R\d+w\.Changes\(", fnb.last.program.native_source())  # B's packing kept


@pytest.mark.parametrize("dt", [pypto.DT_FP32, pypto.DT_INT8])
def test_matmul_output_rows_4k_apart(dt):
    # Output rows a multiple of 4 KiB apart: the accumulator stays in its Acc tile (C rows in
    # one L1 set would slow the micro-kernel) and is stored once, with tails in M and K.
    M, K, N = 70, 40, 1024
    r = rng(5)
    if dt == pypto.DT_INT8:
        a = r.integers(-128, 128, (M, K), dtype=np.int8)
        b = r.integers(-128, 128, (K, N), dtype=np.int8)
        got = _mm_fn(M, K, N, dt, ([32, 32], [32, 32], [256, 256]), "cpu", out_dtype=pypto.DT_INT32)(a, b)
        np.testing.assert_array_equal(got, a.astype(np.int64) @ b.astype(np.int64))
    else:
        a = r.standard_normal((M, K)).astype(np.float32)
        b = r.standard_normal((K, N)).astype(np.float32)
        got = _mm_fn(M, K, N, dt, ([32, 32], [32, 32], [256, 256]), "cpu")(a, b)
        assert_close(got, _ref(a, b, False, False), rtol=1e-4, atol=1e-4)


def test_matmul_dynamic_m():
    K, N = 64, 48

    @pypto.jit
    def mm(a: pypto.Tensor((pypto.DYNAMIC, K), pypto.DT_FP32), b: pypto.Tensor((K, N), pypto.DT_FP32)):
        pypto.set_cube_tile_shapes([32, 32], [32, 64], [48, 48])
        return pypto.matmul(a, b)

    r = rng(8)
    b = r.standard_normal((K, N)).astype(np.float32)
    for M in (1, 33, 100):
        a = r.standard_normal((M, K)).astype(np.float32)
        assert_close(mm(a, b), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mode", BACKENDS)
def test_matmul_epilogue_bias_relu_cast(mode):
    M, K, N = 70, 96, 80

    @pypto.jit(runtime_options={"run_mode": mode})
    def linear(x: pypto.Tensor((M, K), pypto.DT_FP32), w: pypto.Tensor((K, N), pypto.DT_FP32),
               bias: pypto.Tensor((1, N), pypto.DT_FP32)):
        pypto.set_cube_tile_shapes([32, 32], [32, 64], [80, 80])
        y = pypto.matmul(x, w)
        pypto.set_vec_tile_shapes(32, 80)
        return pypto.cast(pypto.relu(pypto.add(y, bias)), pypto.DT_FP16)

    r = rng(9)
    x = r.standard_normal((M, K)).astype(np.float32)
    w = r.standard_normal((K, N)).astype(np.float32)
    bias = r.standard_normal((1, N)).astype(np.float32)
    got = linear(x, w, bias)
    ref = np.maximum(x.astype(np.float64) @ w + bias, 0)
    assert got.dtype == np.float16
    assert_close(got, ref, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("mode", BACKENDS)
def test_ffn_silu(mode):
    T, D, H = 48, 64, 160

    @pypto.jit(runtime_options={"run_mode": mode})
    def ffn(x: pypto.Tensor((T, D), pypto.DT_FP32), w1: pypto.Tensor((D, H), pypto.DT_FP32),
            w2: pypto.Tensor((H, D), pypto.DT_FP32)):
        pypto.set_cube_tile_shapes([16, 16], [32, 64], [32, 32])
        h = pypto.silu(pypto.matmul(x, w1))
        return pypto.matmul(h, w2)

    r = rng(10)
    x = r.standard_normal((T, D)).astype(np.float32)
    w1 = (r.standard_normal((D, H)) / 8).astype(np.float32)
    w2 = (r.standard_normal((H, D)) / 8).astype(np.float32)
    h = x.astype(np.float64) @ w1
    h = h / (1 + np.exp(-h))
    assert_close(ffn(x, w1, w2), h @ w2, rtol=1e-4, atol=1e-4)


def test_matmul_in_loop_over_views():
    """A matmul per block row inside pypto.loop, assembled into the output."""
    M, K, N, BM = 96, 40, 24, 32

    @pypto.jit
    def blocked(a: pypto.Tensor((M, K), pypto.DT_FP32), b: pypto.Tensor((K, N), pypto.DT_FP32),
                out: pypto.Tensor((M, N), pypto.DT_FP32)):
        for i in pypto.loop(M // BM):
            blk = a[i * BM:(i + 1) * BM, :]
            pypto.assemble(pypto.matmul(blk, b), [i * BM, 0], out)

    r = rng(12)
    a = r.standard_normal((M, K)).astype(np.float32)
    b = r.standard_normal((K, N)).astype(np.float32)
    out = np.zeros((M, N), np.float32)
    blocked(a, b, out)
    assert_close(out, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("out_kind", ["window", "strided", "in_place"])
def test_matmul_stored_into_windows_strides_and_its_own_operand(out_kind):
    """The accumulator lives in the output when it can (rows contiguous there, the output not
    an operand); a window with tails, an output with a column stride and x[:] = x @ w must all
    give numpy's answer."""
    M, K, N = 75, 48, 37
    cube = ([32, 32], [16, 48], [32, 32])
    r = rng(31)
    a = r.standard_normal((M, K)).astype(np.float32)
    b = r.standard_normal((K, N)).astype(np.float32)
    if out_kind == "in_place":
        w = r.standard_normal((K, K)).astype(np.float32)

        @pypto.jit
        def f(x: pypto.Tensor((M, K), pypto.DT_FP32), w_: pypto.Tensor((K, K), pypto.DT_FP32)):
            pypto.set_cube_tile_shapes(*cube)
            x[:] = pypto.matmul(x, w_)

        ref = a.astype(np.float64) @ w
        f(a, w)
        assert_close(a, ref, rtol=1e-4, atol=1e-4)
        return

    @pypto.jit
    def g(a_: pypto.Tensor((M, K), pypto.DT_FP32), b_: pypto.Tensor((K, N), pypto.DT_FP32),
          out: pypto.Tensor((M + 5, N + 9), pypto.DT_FP32)):
        pypto.set_cube_tile_shapes(*cube)
        out[2:2 + M, 4:4 + N] = pypto.matmul(a_, b_)

    base = r.standard_normal((M + 5, 2 * (N + 9))).astype(np.float32)
    out = base[:, ::2] if out_kind == "strided" else base[:, :N + 9].copy()
    before, between = out.copy(), base[:, 1::2].copy()
    g(a, b, out)
    ref = before.astype(np.float64)
    ref[2:2 + M, 4:4 + N] = a.astype(np.float64) @ b
    assert_close(out, ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(base[:, 1::2], between)  # the columns between are not touched


def test_cube_and_vector_kernels_are_separate(tmp_path):
    M, K, N = 64, 64, 64

    @pypto.jit(debug_options={"dump_dir": str(tmp_path), "dump_passes": True})
    def lin(x: pypto.Tensor((M, K), pypto.DT_FP32), w: pypto.Tensor((K, N), pypto.DT_FP32)):
        return pypto.exp(pypto.matmul(x, w))

    x = np.full((M, K), 0.01, np.float32)
    w = np.full((K, N), 0.01, np.float32)
    assert_close(lin(x, w), np.exp(x.astype(np.float64) @ w), rtol=1e-5)
    text = (tmp_path / "lin" / "passes").glob("*allocate_buffers.txt")
    dump = next(iter(text)).read_text()
    assert "[AIC]" in dump and "[AIV]" in dump
    assert "TMATMUL_ACC" in dump and "TEXTRACT" in dump and "Left" in dump and "Acc" in dump
    aic = dump.split("kernel ")[1]
    assert "TEXP" not in aic, "vector work must not run in the cube kernel"


def test_get_cube_tile_shapes():
    seen = []

    @pypto.jit
    def f(a: pypto.Tensor((16, 16), pypto.DT_FP32)):
        seen.append(pypto.get_cube_tile_shapes())
        pypto.set_cube_tile_shapes([16, 16], [8, 16], [16, 16])
        seen.append(pypto.get_cube_tile_shapes())
        return pypto.matmul(a, a)

    a = np.eye(16, dtype=np.float32)
    assert_close(f(a), a)
    assert seen == [[], [[16, 16], [8, 16], [16, 16]]]


def test_cube_tile_k_with_separate_l1_sizes_for_a_and_b():
    """PyPTO's k = [kL0, kL1 of A, kL1 of B] (DeepSeek's MLA prolog): K steps by the smaller."""
    seen = []

    @pypto.jit
    def f(a: pypto.Tensor((32, 96), pypto.DT_FP32), b: pypto.Tensor((96, 32), pypto.DT_FP32)):
        pypto.set_cube_tile_shapes([16, 16], [16, 64, 32], [16, 32])
        seen.append(pypto.get_cube_tile_shapes())
        return pypto.matmul(a, b)

    r = rng(40)
    a, b = r.standard_normal((32, 96)).astype(np.float32), r.standard_normal((96, 32)).astype(np.float32)
    assert_close(f(a, b), a.astype(np.float64) @ b, rtol=1e-5, atol=1e-4)
    assert seen == [[[16, 16], [16, 32], [16, 32]]]


# ---- errors ------------------------------------------------------------------------------------


def _expect_error(fn, args, *needles):
    with pytest.raises(pypto.UserError) as e:
        fn(*args)
    msg = str(e.value)
    for n in needles:
        assert n in msg, msg
    return msg


def test_error_inner_dim_mismatch():
    @pypto.jit
    def f(a: pypto.Tensor((8, 5), pypto.DT_FP32), b: pypto.Tensor((6, 4), pypto.DT_FP32)):
        return pypto.matmul(a, b)

    msg = _expect_error(f, (np.zeros((8, 5), np.float32), np.zeros((6, 4), np.float32)),
                        "pypto.matmul", "inner dims differ", "(8, 5)", "(6, 4)", "test_matmul.py")
    assert "^" in msg


def test_error_dtype_mismatch():
    @pypto.jit
    def f(a: pypto.Tensor((8, 8), pypto.DT_FP32), b: pypto.Tensor((8, 8), pypto.DT_FP16)):
        return pypto.matmul(a, b)

    _expect_error(f, (np.zeros((8, 8), np.float32), np.zeros((8, 8), np.float16)), "dtypes differ", "pypto.cast")


def test_error_int8_out_dtype():
    @pypto.jit
    def f(a: pypto.Tensor((8, 8), pypto.DT_INT8)):
        return pypto.matmul(a, a, pypto.DT_FP32)

    _expect_error(f, (np.zeros((8, 8), np.int8),), "out_dtype fp32", "int32")


def test_error_bad_cube_tile_shapes():
    @pypto.jit
    def f(a: pypto.Tensor((8, 8), pypto.DT_FP32)):
        pypto.set_cube_tile_shapes([16, 24], [8, 8], [8, 8])
        return pypto.matmul(a, a)

    _expect_error(f, (np.zeros((8, 8), np.float32),), "set_cube_tile_shapes", "multiple of L0")


def test_error_cube_tile_too_big_for_npu():
    @pypto.jit(pass_options={"machine": "a2a3"})
    def f(a: pypto.Tensor((512, 512), pypto.DT_FP32)):
        pypto.set_cube_tile_shapes([256, 256], [64, 64], [256, 256])
        return pypto.matmul(a, a)

    _expect_error(f, (np.zeros((512, 512), np.float32),), "L0C accumulator", "a2a3", "set_cube_tile_shapes")


def test_error_batch_mismatch():
    @pypto.jit
    def f(a: pypto.Tensor((2, 8, 8), pypto.DT_FP32), b: pypto.Tensor((3, 8, 8), pypto.DT_FP32)):
        return pypto.matmul(a, b)

    _expect_error(f, (np.zeros((2, 8, 8), np.float32), np.zeros((3, 8, 8), np.float32)), "batch dims do not broadcast")


@pytest.mark.parametrize("mode", BACKENDS)
def test_matmul_symbolic_k_in_a_loop(mode):
    """K grows with the loop index (a prefix of A's columns and B's rows): the K loop's trip
    count and tails are only known at run time."""
    M, K, N, STEP, T = 20, 70, 24, 24, 3

    @pypto.jit(runtime_options={"run_mode": mode})
    def prefix(a: pypto.Tensor((M, K), pypto.DT_FP32), b: pypto.Tensor((K, N), pypto.DT_FP32),
               out: pypto.Tensor((T * M, N), pypto.DT_FP32)):
        pypto.set_cube_tile_shapes([16, 16], [8, 16], [16, 16])
        for i in pypto.loop(T):
            kk = (i + 1) * STEP - 2
            pypto.assemble(pypto.matmul(a[:, 0:kk], b[0:kk, :]), [i * M, 0], out)

    r = rng(13)
    a = r.standard_normal((M, K)).astype(np.float32)
    b = r.standard_normal((K, N)).astype(np.float32)
    out = np.zeros((T * M, N), np.float32)
    prefix(a, b, out)
    for i in range(T):
        kk = (i + 1) * STEP - 2
        assert_close(out[i * M:(i + 1) * M], a[:, :kk].astype(np.float64) @ b[:kk], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mode", BACKENDS)
def test_matmul_dynamic_n(mode):
    M, K = 24, 40

    @pypto.jit(runtime_options={"run_mode": mode})
    def mm(a: pypto.Tensor((M, K), pypto.DT_FP32), b: pypto.Tensor((K, pypto.DYNAMIC), pypto.DT_FP32)):
        pypto.set_cube_tile_shapes([16, 16], [16, 32], [16, 16])
        return pypto.matmul(a, b)

    r = rng(14)
    a = r.standard_normal((M, K)).astype(np.float32)
    for N in (7, 33, 16):
        b = r.standard_normal((K, N)).astype(np.float32)
        assert_close(mm(a, b), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mode", ["cpu", "interp"])
def test_l0_smaller_than_l1_along_m_and_n(mode):
    """PyPTO's set_cube_tile_shapes(m=[32, 64], k=[64, 128], n=[32, 64]): accepted, the same
    product, and the NPU model checks each L0 tile (not the L1 block) against L0A/L0B/L0C."""
    import pypto
    from _util import run_in

    @pypto.jit
    def f(a: pypto.Tensor((100, 200), pypto.DT_FP32), b: pypto.Tensor((200, 150), pypto.DT_FP32)):
        pypto.set_cube_tile_shapes(m=[32, 64], k=[64, 128], n=[32, 64])
        return pypto.matmul(a, b, pypto.DT_FP32)

    rng = np.random.default_rng(0)
    a = rng.standard_normal((100, 200)).astype(np.float32)
    b = rng.standard_normal((200, 150)).astype(np.float32)
    np.testing.assert_allclose(run_in(mode, f, a, b), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    assert "L0 tiles: 2 x 2 per L1 block" in f.last.program.block_graph()

    @pypto.jit(pass_options={"machine": "a2a3"})
    def g(a: pypto.Tensor((256, 256), pypto.DT_FP16), b: pypto.Tensor((256, 256), pypto.DT_FP16)):
        # the L1 block's fp32 accumulator (256 x 128: 128 KiB) fills L0C; each L0 tile fits
        pypto.set_cube_tile_shapes(m=[64, 256], k=[64, 128], n=[128, 128])
        return pypto.matmul(a, b, pypto.DT_FP16)

    torch = pytest.importorskip("torch")
    x = torch.randn(256, 256).to(torch.float16)
    y = torch.randn(256, 256).to(torch.float16)
    want = (x.double() @ y.double()).numpy()
    np.testing.assert_allclose(g(x, y).double().numpy(), want, rtol=2e-3, atol=5e-2)
    assert "L0 tiles: 4 x 1 per L1 block" in g.last.program.block_graph()

    @pypto.jit(pass_options={"machine": "a2a3"})
    def h(a: pypto.Tensor((256, 256), pypto.DT_FP16), b: pypto.Tensor((256, 256), pypto.DT_FP16)):
        pypto.set_cube_tile_shapes(m=[256, 256], k=[64, 128], n=[256, 256])
        return pypto.matmul(a, b, pypto.DT_FP32)

    with pytest.raises(pypto.UserError, match=r"L0C accumulator"):
        h(x, y)


@pytest.mark.parametrize("mode", BACKENDS)
def test_matmul_bf16_subnormals_tiny_products_and_specials(mode):
    # On a CPU with AVX512_BF16 the cube multiplies bf16 pairs with VDPBF16PS, which reads
    # subnormals as zero and flushes subnormal results; operands that could make one take the
    # fp32 path, so the answers are fp32 FMA's (numpy's up to the order of the sums) on every CPU.
    torch = pytest.importorskip("torch")
    M, K, N = 9, 37, 20  # tails: a pair of K left half empty, a partial panel, 6 + 3 rows
    cube = ([16, 16], [16, 32], [32, 32])  # K split across L0: the accumulating calls too

    def run(a, b, out_dtype=pypto.DT_FP32):
        fn = _mm_fn(M, K, N, pypto.DT_BF16, cube, mode, out_dtype=out_dtype)
        return np.asarray(fn(a, b).float())

    def ref(a, b):
        return a.double().numpy() @ b.double().numpy()

    g = torch.Generator().manual_seed(5)
    b = torch.randn(K, N, generator=g).to(torch.bfloat16)
    sub = torch.full((M, K), 1e-39).to(torch.bfloat16)  # subnormal in bf16 and fp32
    assert 0 < float(sub[0, 0]) < 1.18e-38
    got = run(sub, b)
    assert np.count_nonzero(got) == got.size  # not flushed to zero
    np.testing.assert_allclose(got, ref(sub, b), rtol=1e-5, atol=1e-44)

    tiny = (torch.randn(M, K, generator=g) * 1e-20).to(torch.bfloat16)  # normal, products subnormal
    btiny = (b.float() * 1e-20).to(torch.bfloat16)
    got = run(tiny, btiny)
    want = ref(tiny, btiny)
    assert np.count_nonzero(got) > got.size * 0.9
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-43)

    a = torch.randn(M, K, generator=g).to(torch.bfloat16)
    a[0, 3] = float("inf")
    a[1, 4] = float("nan")
    bz = b.clone()
    bz[3, 0] = 0.0  # inf * 0: NaN in column 0 of row 0
    got = run(a, bz)
    want = ref(a, bz)
    assert np.isnan(got[0, 0]) and np.isnan(got[1]).all()
    assert np.array_equal(np.isinf(got), np.isinf(want)) and np.array_equal(np.isnan(got), np.isnan(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-4, atol=1e-3)

    # ordinary values, bf16 out: the fp32 sum rounded once
    a = torch.randn(M, K, generator=g).to(torch.bfloat16)
    got16 = _mm_fn(M, K, N, pypto.DT_BF16, cube, mode)(a, b)
    torch.testing.assert_close(got16, torch.from_numpy(ref(a, b)).float().to(torch.bfloat16), rtol=0, atol=0)


def _tf32(a, ties_to_even):
    """fp32 -> TF32 by its bits (numpy): 13 low bits rounded off; inf and NaN kept."""
    b = a.view(np.int32).astype(np.int64)
    half = ((b >> 13) & 1) + 0xFFF if ties_to_even else 0x1000
    r = ((b + half) & -0x2000).astype(np.int32).view(np.float32)
    return np.where((b & 0x7F800000) == 0x7F800000, a, r)


@pytest.mark.parametrize("mode", ["cpu", "interp"])
def test_matmul_trans_mode_rounds_fp32_operands_to_tf32(mode):
    # PyPTO's extend_params={"trans_mode": ...} (the 950): both operands rounded to TF32, then
    # exact products summed in fp32. Against the identity the result is the rounded operand.
    F32 = pypto.DT_FP32
    gen = np.random.default_rng(11)
    m, k, n = 37, 72, 45
    a = gen.standard_normal((m, k)).astype(np.float32) * np.float32(1e3)
    ties = np.array([1.0 + 2 ** -11, 1.0 + 3 * 2 ** -11, -(1.0 + 2 ** -11), 1.0 + 2 ** -11 + 2 ** -23], np.float32)
    a[0, :10] = np.concatenate([ties, np.array([3.3e38, 1e-40, 5e-39, -2.5e-39, 0.0, 6.0], np.float32)])
    b = gen.standard_normal((k, n)).astype(np.float32)
    eye = np.eye(k, dtype=np.float32)
    for trans, even in ((pypto.TransMode.CAST_RINT, True), (pypto.TransMode.CAST_ROUND, False)):
        @pypto.jit(runtime_options={"run_mode": mode})
        def f(x: pypto.Tensor((m, k), F32), y: pypto.Tensor((k, k), F32), z: pypto.Tensor((k, n), F32),
              o1: pypto.Tensor((m, k), F32), o2: pypto.Tensor((m, n), F32)):
            pypto.set_cube_tile_shapes([16, 32], [32, 64], [32, 32])
            o1[:] = pypto.matmul(x, y, F32, extend_params={"trans_mode": trans})
            o2[:] = pypto.matmul(x, z, F32, extend_params={"trans_mode": trans})

        o1, o2 = np.zeros((m, k), np.float32), np.zeros((m, n), np.float32)
        f(a, eye, b, o1, o2)
        ra, rb = _tf32(a, even), _tf32(b, even)
        np.testing.assert_array_equal(o1, ra)
        assert (o1[0, :4] != a[0, :4]).any() and (ra != a).mean() > 0.99
        with np.errstate(over="ignore"):  # row 0 holds 3.3e38: its sums overflow fp32, as the result's
            want = (ra.astype(np.float64) @ rb.astype(np.float64)).astype(np.float32)  # exact products
        np.testing.assert_allclose(o2, want, rtol=2e-5, atol=1e-2)
    assert _tf32(ties, True).tolist() == [1.0, 1.0 + 2 ** -9, -1.0, 1.0 + 2 ** -10]
    assert _tf32(ties, False).tolist() == [1.0 + 2 ** -10, 1.0 + 2 ** -9, -(1.0 + 2 ** -10), 1.0 + 2 ** -10]
    assert np.isinf(_tf32(np.array([3.4028235e38], np.float32), True)[0])  # past TF32's largest

    @pypto.jit
    def bad(x: pypto.Tensor((16, 16), pypto.DT_BF16)):
        return pypto.matmul(x, x, F32, extend_params={"trans_mode": pypto.TransMode.CAST_RINT})

    with pytest.raises(pypto.UserError, match="trans_mode TransMode.CAST_RINT needs fp32 operands"):
        bad(pytest.importorskip("torch").zeros(16, 16, dtype=pytest.importorskip("torch").bfloat16))


@pytest.mark.parametrize("n", [48, 64, 80, 112, 208, 272])
def test_bf16_matmul_panel_groups(n):
    # The bf16 cube (AVX512_BF16) takes full 16-column panels in threes (up to 8 rows), then
    # twos, then one at a time: widths whose panel counts leave each remainder; rows past 8.
    torch = pytest.importorskip("torch")
    m, k = 19, 150
    g = torch.Generator().manual_seed(n)
    a = torch.randn(m, k, generator=g).bfloat16()
    b = torch.randn(k, n, generator=g).bfloat16()

    @pypto.jit
    def f(x: pypto.Tensor((m, k), pypto.DT_BF16), y: pypto.Tensor((k, n), pypto.DT_BF16)):
        pypto.set_cube_tile_shapes([32, 32], [64, 256], [n, n])
        return pypto.matmul(x, y, pypto.DT_FP32)

    want = a.double() @ b.double()  # exact products; only the fp32 sums round
    np.testing.assert_allclose(f(a, b).double().numpy(), want.numpy(), rtol=1e-5, atol=1e-4)
