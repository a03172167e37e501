"""PyPTO's valid shapes of views that reach past their tensor (the tail tile of a loop): a slice or
pypto.view without valid_shape over a static dim holds the part inside, min(max(dim - offset, 0),
size), one wholly past the end is empty (reads and writes nothing); a pypto.view over a dynamic
dim is checked. Batched matmuls over tail tiles, valid shapes of two inputs' dims unified, the
fixpipe steps of a batched matmul under a 2-D vec tile, a packed uint64 scale_tensor, PyPTO's
Tensor.dim property and cube_l1_reuse_setting's sides."""

import numpy as np
import pytest
import torch

import pypto
from _util import MODES, rng, run_in

F32 = pypto.DT_FP32


@pytest.mark.parametrize("mode", MODES)
def test_tail_slices_hold_the_part_inside(mode):
    @pypto.jit
    def f(x: pypto.Tensor((5, 13), F32), o: pypto.Tensor((5, 13), F32)):
        pypto.set_vec_tile_shapes(4, 8)
        for i in pypto.loop(3):  # the third row tile starts past the end: empty
            for j in pypto.loop(2):
                v = x[i * 4:i * 4 + 4, j * 8:j * 8 + 8]
                o[i * 4:i * 4 + 4, j * 8:j * 8 + 8] = v * 2.0 + 1.0

    x = rng(1).standard_normal((5, 13)).astype(np.float32)
    o = np.zeros_like(x)
    run_in(mode, f, x, o)
    np.testing.assert_array_equal(o, x * 2 + 1)


def test_a_tile_past_a_dynamic_dim_is_checked():
    """In a dim of run-time size the window keeps its static extent (the program's tiles stay
    static; PyPTO keeps the static shape beside the valid one): one past the end is an error at
    the view's line when the call reaches it, never a stray read."""
    @pypto.jit
    def f(x: pypto.Tensor([pypto.DYNAMIC, 16], F32), o: pypto.Tensor([pypto.DYNAMIC, 16], F32)):
        pypto.set_vec_tile_shapes(8, 16)
        for i in pypto.loop(4):
            v = pypto.view(x, [8, 16], [i * 8, 0])
            pypto.assemble(pypto.exp(v), [i * 8, 0], o)

    x = rng(2).standard_normal((32, 16)).astype(np.float32)
    o = np.zeros_like(x)
    f(x, o)
    np.testing.assert_allclose(o, np.exp(x), rtol=2e-7)
    with pytest.raises(pypto.UserError, match="out of bounds"):
        f(x[:19].copy(), o[:19].copy())


def test_a_fixed_slice_of_a_dynamic_dim_is_still_checked():
    """x[:, 0:k] of a [n, DYNAMIC] input states its extent: too small an input is an error, not a
    silently shorter window."""
    @pypto.jit
    def f(x: pypto.Tensor([4, pypto.DYNAMIC], F32)):
        return x[:, 0:16] + 1.0

    np.testing.assert_array_equal(f(np.ones((4, 20), np.float32)), np.full((4, 16), 2.0, np.float32))
    with pytest.raises(pypto.UserError, match="out of bounds"):
        f(np.ones((4, 10), np.float32))


@pytest.mark.parametrize("mode", MODES)
def test_batched_matmul_over_tail_tiles(mode):
    """PyPTO's batch-matmul test: batch tiles of 3 over a batch of 4, m tiles past the end; the
    output window larger than the result keeps its zeros."""
    b, m, k, n = 4, 129, 64, 40

    @pypto.jit
    def f(a: pypto.Tensor([b, m, k], F32), w: pypto.Tensor([b, k, n], F32), out: pypto.Tensor([b, 160, n], F32)):
        pypto.set_cube_tile_shapes([64, 64], [64, 64], [64, 64])
        pypto.set_vec_tile_shapes(64, 64)
        for bi in pypto.loop(2):
            for mi in pypto.loop(2):
                av = a[bi * 3:bi * 3 + 3, mi * 128:mi * 128 + 128, 0:k]
                wv = w[bi * 3:bi * 3 + 3, 0:k, 0:n]
                out[bi * 3:bi * 3 + 3, mi * 128:mi * 128 + 128, 0:n] = pypto.matmul(av, wv, F32)

    r = rng(3)
    a = r.standard_normal((b, m, k)).astype(np.float32)
    w = r.standard_normal((b, k, n)).astype(np.float32)
    out = np.zeros((b, 160, n), np.float32)
    run_in(mode, f, a, w, out)
    want = np.zeros_like(out)
    want[:, :m] = a @ w
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("mode", MODES)
def test_tail_extents_of_two_inputs_dims_are_unified(mode):
    """Valid shapes written over two inputs' dynamic dims (min(4, a_dim0 - 4 i) and the same of
    b_dim0, as PyPTO programs write them): equal when the dims are, which the call checks."""
    @pypto.jit
    def f(a: pypto.Tensor([pypto.DYNAMIC, 8], F32), b: pypto.Tensor([pypto.DYNAMIC, 8], F32),
          o: pypto.Tensor([pypto.DYNAMIC, 8], F32)):
        pypto.set_vec_tile_shapes(4, 8)
        n_a, n_b = a.shape[0], b.shape[0]
        for i in pypto.loop((n_a + 3) // 4):
            va = pypto.view(a, [4, 8], [i * 4, 0], valid_shape=[pypto.min(n_a - i * 4, 4), 8])
            vb = pypto.view(b, [4, 8], [i * 4, 0], valid_shape=[pypto.min(n_b - i * 4, 4), 8])
            pypto.assemble(va * vb, [i * 4, 0], o)

    r = rng(8)
    a, b = r.standard_normal((10, 8)).astype(np.float32), r.standard_normal((10, 8)).astype(np.float32)
    o = np.zeros_like(a)
    run_in(mode, f, a, b, o)
    np.testing.assert_array_equal(o, a * b)
    with pytest.raises(pypto.UserError, match="a_dim0|b_dim0"):
        run_in(mode, f, a, b[:9].copy(), o)


@pytest.mark.parametrize("mode", MODES)
def test_batched_matmul_fixpipe_under_a_matrix_tile(mode):
    @pypto.jit
    def f(a: pypto.Tensor((2, 20, 32), pypto.DT_FP16), w: pypto.Tensor((2, 32, 24), pypto.DT_FP16),
          bias: pypto.Tensor((1, 24), F32)):
        pypto.set_vec_tile_shapes(16, 16)  # PyPTO's 2-D tile: the fixpipe steps take it per matrix
        return pypto.matmul(a, w, pypto.DT_FP16, extend_params={"bias_tensor": bias,
                                                                  "relu_type": pypto.ReLuType.RELU})

    r = rng(4)
    a = torch.from_numpy(r.standard_normal((2, 20, 32)).astype(np.float32)).half()
    w = torch.from_numpy(r.standard_normal((2, 32, 24)).astype(np.float32)).half()
    bias = torch.from_numpy(r.standard_normal((1, 24)).astype(np.float32))
    got = run_in(mode, f, a, w, bias)
    want = torch.relu(a.float() @ w.float() + bias).half()
    torch.testing.assert_close(got, want, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("mode", MODES)
def test_packed_uint64_scale_tensor(mode):
    """scale_tensor in the NPU's packed form (npu_trans_quant_param: fp32 bits in the low word, 13
    low mantissa bits dropped): int8 x int8, scaled per column into int8 with rounding."""
    from pypto.npu_reference import npu_trans_quant_param

    @pypto.jit
    def f(a: pypto.Tensor((16, 64), pypto.DT_INT8), w: pypto.Tensor((64, 24), pypto.DT_INT8),
          scale: pypto.Tensor((1, 24), pypto.DT_INT64)):
        return pypto.matmul(a, w, pypto.DT_INT8, extend_params={"scale_tensor": scale})

    r = rng(5)
    a = r.integers(-8, 8, (16, 64)).astype(np.int8)
    w = r.integers(-8, 8, (64, 24)).astype(np.int8)
    s = torch.from_numpy(r.uniform(0.01, 0.2, (1, 24)).astype(np.float32))
    packed = npu_trans_quant_param(s)
    masked = (s.view(torch.int32) & -8192).view(torch.float32)  # 0xFFFFE000
    got = run_in(mode, f, a, w, packed)
    acc = torch.from_numpy(a.astype(np.int32) @ w.astype(np.int32)).float()
    want = torch.round(acc * masked).clamp(-128, 127).to(torch.int8).numpy()
    np.testing.assert_array_equal(got, want)


def test_dim_is_a_property_and_a_method():
    @pypto.jit
    def f(x: pypto.Tensor((2, 3), F32)):
        assert x.dim == 2 and x.dim() == 2
        return x + 1.0

    np.testing.assert_array_equal(f(np.zeros((2, 3), np.float32)), np.ones((2, 3), np.float32))


def test_cube_l1_reuse_setting_takes_a_side():
    with pypto.options(pass_options={"cube_l1_reuse_setting": {-1: (2, "left")}}):
        pass
    with pytest.raises(pypto.UserError, match="cube_l1_reuse_setting"):
        with pypto.options(pass_options={"cube_l1_reuse_setting": {-1: (2, "top")}}):
            pass


@pytest.mark.parametrize("mode", MODES)
def test_a_smaller_value_fills_the_start_of_a_bounded_window(mode):
    """PyPTO's `out[a:b] = v` is assemble(v, a, out): a 3-row result into an 8-row tile window
    writes 3 rows; `out[:] = v` of a smaller v stays an error (numpy would broadcast)."""
    @pypto.jit
    def f(x: pypto.Tensor((3, 8), F32), o: pypto.Tensor((8, 8), F32)):
        o[0:8, 0:8] = x * 2.0

    x = rng(6).standard_normal((3, 8)).astype(np.float32)
    o = np.full((8, 8), 5.0, np.float32)
    run_in(mode, f, x, o)
    np.testing.assert_array_equal(o[:3], x * 2)
    np.testing.assert_array_equal(o[3:], 5.0)

    @pypto.jit
    def g(x: pypto.Tensor((3, 8), F32), o: pypto.Tensor((8, 8), F32)):
        o[:] = x * 2.0

    with pytest.raises(pypto.UserError, match=r"\(3, 8\).*\(8, 8\)"):
        g(x, o)


@pytest.mark.parametrize("mode", MODES)
def test_a_computed_tile_filled_by_an_inner_loop(mode):
    """PyPTO's test_loop_full_assemble: `t = pypto.full(...)` in a loop, filled by an inner loop,
    then assembled: t becomes a tensor in memory where it is made (once per outer iteration)."""
    @pypto.jit
    def f(x: pypto.Tensor((16, 8), F32), out: pypto.Tensor((16, 8), F32)):
        pypto.set_vec_tile_shapes(4, 8)
        for b in pypto.loop(2):
            t = pypto.full([8, 8], -1.0, F32)
            for s in pypto.loop(2):
                if s == 0:  # a runtime branch on the inner index: only rows 0..3 are written
                    t[s * 4:(s + 1) * 4, :] = x[b * 8 + s * 4:b * 8 + (s + 1) * 4, :] * 3.0
            out[b * 8:(b + 1) * 8, :] = t + 1.0

    x = rng(7).standard_normal((16, 8)).astype(np.float32)
    out = np.zeros((16, 8), np.float32)
    run_in(mode, f, x, out)
    want = np.zeros_like(out)
    for b in range(2):
        want[b * 8:b * 8 + 4] = x[b * 8:b * 8 + 4] * 3 + 1
        want[b * 8 + 4:b * 8 + 8] = 0.0
    np.testing.assert_allclose(out, want, rtol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_reshape_with_a_valid_shape_over_another_inputs_dims(mode):
    """PyPTO's test_reshape_validshape_matmul.py: a tail slice of a [M, B, S] tensor reshaped to
    [M, 5 * 5] with valid_shape [M, valid_b * valid_s], valid_b and valid_s written over the dims
    of the other input: its first elements, which the run time checks are inside the slice."""
    D = pypto.DYNAMIC

    @pypto.jit
    def f(a: pypto.Tensor([16, D, D], F32), b: pypto.Tensor([D, D, 8], F32), out: pypto.Tensor([D, D, 16, 8], F32)):
        nb, ns = b.shape[:2]
        for i in pypto.loop((nb + 4) // 5):
            for j in pypto.loop((ns + 4) // 5):
                pypto.set_vec_tile_shapes(16, 16, 16)
                va = a[:, i * 5:(i + 1) * 5, j * 5:(j + 1) * 5]
                vb = b[i * 5:(i + 1) * 5, j * 5:(j + 1) * 5, :]
                rows = pypto.min(5, nb - i * 5) * pypto.min(5, ns - j * 5)
                a2 = pypto.reshape(va, [16, 25], valid_shape=[16, rows])
                b2 = pypto.reshape(vb, [25, 8], valid_shape=[rows, 8])
                out[i, j, :, :] = pypto.matmul(a2, b2, F32)

    r = rng(9)
    a = r.standard_normal((16, 3, 7)).astype(np.float32)
    b = r.standard_normal((3, 7, 8)).astype(np.float32)
    out = np.zeros((1, 2, 16, 8), np.float32)
    run_in(mode, f, a, b, out)
    for j in range(2):
        s = slice(j * 5, (j + 1) * 5)
        want = a[:, :, s].reshape(16, -1) @ b[:, s, :].reshape(-1, 8)
        np.testing.assert_allclose(out[0, j], want, rtol=1e-5, atol=1e-5)
