"""Idioms of CANN PyPTO's model code (models/ of hicann/pypto) that run here as written: windows
of a reshaped tensor, x.reshape([t, h, 1]) under a 2-D tile, scatter_update of an intermediate
result, @pypto.frontend.function helpers with runtime branches, pypto.ceildiv / bytes_of, the
enable_split_k flag, pypto.runtime._device_synchronize, assembles into a reshape of an output, and
the reshape of a padded tile of dequantization scales."""

import numpy as np
import pytest

import pypto
from _util import MODES, assert_close, randn, rng

F32, BF16, I32 = pypto.DT_FP32, pypto.DT_BF16, pypto.DT_INT32


@pytest.mark.parametrize("mode", MODES)
def test_window_of_a_reshaped_input_and_result(mode):
    @pypto.jit(runtime_options={"run_mode": mode})
    def f(x: pypto.Tensor((4, 64), F32), out: pypto.Tensor((4, 4, 8), F32)):
        pypto.set_vec_tile_shapes(2, 4, 16)
        x3 = pypto.reshape(x, [4, 4, 16])            # a reshape of the input
        y3 = pypto.reshape(x * 2.0, [4, 4, 16])      # a reshape of a computed value
        out[:] = x3[:, :, 0:8] + y3[:, :, 8:16]

    x = randn(rng(1), (4, 64))
    out = np.zeros((4, 4, 8), np.float32)
    f(x, out)
    x3 = x.reshape(4, 4, 16)
    assert_close(out, x3[:, :, :8] + 2 * x3[:, :, 8:], rtol=0, atol=0)


@pytest.mark.parametrize("mode", MODES)
def test_reshape_adding_a_unit_dim_under_a_2d_tile(mode):
    # hc_pre: pre.reshape([t, hc, 1]) then a 3-D multiply with its own tile.
    t, hc, d = 8, 4, 32

    @pypto.jit(runtime_options={"run_mode": mode})
    def f(p: pypto.Tensor((t, hc), F32), x: pypto.Tensor((t, hc * d), F32)) -> pypto.Tensor((t, d), F32):
        pypto.set_vec_tile_shapes(4, 32)
        pre = pypto.sigmoid(p)
        pre3 = pre.reshape([t, hc, 1], inplace=True)
        x3 = x.reshape([t, hc, d])
        pypto.set_vec_tile_shapes(4, 4, 8)
        return pypto.sum(pre3 * x3, dim=-2)

    p, x = randn(rng(2), (t, hc)), randn(rng(3), (t, hc * d))
    s = 1 / (1 + np.exp(-p.astype(np.float64)))
    assert_close(f(p, x), (s[:, :, None] * x.reshape(t, hc, d)).sum(1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", MODES)
def test_scatter_update_of_an_intermediate_returns_the_updated_copy(mode):
    @pypto.jit(runtime_options={"run_mode": mode})
    def f(cache: pypto.Tensor((8, 16), F32), idx: pypto.Tensor((1, 2), I32), src: pypto.Tensor((2, 16), F32)):
        pypto.set_vec_tile_shapes(8, 16)
        base = cache * 1.0 + 1.0
        return pypto.scatter_update(base, -2, idx, src)

    cache, src = randn(rng(4), (8, 16)), randn(rng(5), (2, 16))
    idx = np.array([[6, 1]], np.int32)
    want = cache + 1.0
    want[[6, 1]] = src
    assert_close(f(cache, idx, src), want, rtol=0, atol=0)


@pytest.mark.parametrize("mode", MODES)
def test_frontend_function_helper_with_a_runtime_branch(mode):
    @pypto.frontend.function
    def step(x: pypto.Tensor, i: pypto.SymbolicScalar, out: pypto.Tensor):
        if i == 0:
            out[i:, :] = x[i:i + 1, :] * 10.0
        else:
            out[i:, :] = x[i:i + 1, :] + out[i - 1:i, :]

    @pypto.jit(runtime_options={"run_mode": mode})
    def f(x: pypto.Tensor((5, 8), F32), out: pypto.Tensor((5, 8), F32)):
        pypto.set_vec_tile_shapes(1, 8)
        for i in pypto.loop(0, 5, 1, name="L", idx_name="i"):
            step(x, i, out)

    x = randn(rng(6), (5, 8))
    out = np.zeros_like(x)
    f(x, out)
    want = np.cumsum(np.concatenate([x[:1] * 10, x[1:]]), axis=0)
    assert_close(out, want, rtol=1e-5, atol=1e-5)


def test_ceildiv_bytes_of_split_k_and_runtime_sync():
    assert pypto.ceildiv(7, 2) == 4 and pypto.ceildiv(8, 2) == 4
    assert pypto.bytes_of(pypto.DT_BF16) == 2 and pypto.bytes_of(pypto.DT_INT64) == 8
    pypto.runtime._device_synchronize()
    assert pypto.runtime.RunMode.NPU == pypto.RunMode.NPU

    @pypto.jit
    def f(a: pypto.Tensor((32, 64), F32), b: pypto.Tensor((64, 16), F32), n: pypto.Tensor((3,), I32)):
        pypto.set_cube_tile_shapes([16, 16], [32, 32], [16, 16], True)   # enable_split_k, positional
        pypto.set_vec_tile_shapes(16, 16)
        c = pypto.matmul(a, b, F32)
        k = pypto.ceildiv(n[0], 4)       # a symbolic ceildiv of a scalar read
        out = pypto.tensor((32, 16), F32)
        out[:] = pypto.full([32, 16], 0.0, F32)
        out[0:k, :] = c[0:k, :] * 1.0
        return out

    a, b = randn(rng(7), (32, 64)), randn(rng(8), (64, 16))
    got = f(a, b, np.array([10, 0, 0], np.int32))
    want = np.zeros((32, 16))
    want[0:3] = (a.astype(np.float64) @ b)[0:3]
    assert_close(got, want, rtol=1e-5, atol=1e-5)

    @pypto.jit
    def h(a: pypto.Tensor((32, 64), F32), n: pypto.Tensor((3,), I32)):
        pypto.set_vec_tile_shapes(16, 16)
        k = n[0]
        return a[0:k, :] * 1.0

    with pytest.raises(pypto.UserError, match="depends on n_at, an element read at line"):
        h(a, np.array([10, 0, 0], np.int32))

    @pypto.jit
    def g(a: pypto.Tensor((32, 64), F32)):
        pypto.set_cube_tile_shapes([16, 16], [32, 32], [16, 16], enable_split_k=1)
        return a * 1.0

    with pytest.raises(pypto.UserError, match="enable_split_k=1 must be True or False"):
        g(a)


def test_semantic_labels_precision_types_and_as_variable(tmp_path):
    @pypto.jit(debug_options={"dump_dir": str(tmp_path), "dump_passes": True})
    def f(x: pypto.Tensor((8, 32), F32), n: pypto.Tensor((2,), I32)):
        pypto.set_vec_tile_shapes(8, 32)
        pypto.set_semantic_label("rms-denominator")
        d = pypto.sqrt(pypto.sum(x * x, -1, keepdim=True), pypto.PrecisionType.HIGH_PRECISION)
        pypto.set_semantic_label("normalize")
        k = n[0] + n[1]
        k.as_variable()  # a hint for PyPTO's expression CSE: nothing to do here
        return pypto.div(x, d, pypto.PrecisionType.INTRINSIC) * 1.0

    x = randn(rng(11), (8, 32))
    got = f(x, np.array([1, 2], np.int32))
    assert_close(got, x / np.sqrt((x.astype(np.float64) ** 2).sum(-1, keepdims=True)), rtol=2e-6, atol=0)
    text = (tmp_path / "f" / "passes" / "00_tensor_graph.txt").read_text()
    assert 'label="rms-denominator"' in text and 'label="normalize"' in text

    @pypto.jit
    def g(x: pypto.Tensor((8, 32), F32)):
        return pypto.exp(x, "fast")

    with pytest.raises(pypto.UserError, match="precision_type must be a pypto.PrecisionType"):
        g(x)


@pytest.mark.parametrize("mode", MODES)
def test_element_and_the_pypto_impl_names_model_code_uses(mode):
    from pypto import pypto_impl

    @pypto.jit(runtime_options={"run_mode": mode})
    def f(x: pypto.Tensor((4, 8), F32), n: pypto.Tensor((4, 8), I32)):
        pypto.set_vec_tile_shapes(4, 8)
        inv = pypto_impl.ScalarDivS(x, pypto_impl.Element(x.dtype, 2.0), True)  # 2 / x
        return inv, x + pypto.Element(pypto.DT_FP32, 0.5), n * pypto.Element(pypto.DT_INT32, 3)

    x = randn(rng(12), (4, 8))
    n = np.arange(32, dtype=np.int32).reshape(4, 8)
    a, b, c = f(x, n)
    assert_close(a, 2.0 / x.astype(np.float64), rtol=1e-6, atol=0)
    assert_close(b, x + 0.5, rtol=0, atol=0)
    np.testing.assert_array_equal(c, n * 3)
    assert pypto_impl.GetCompilerMonitorTotalElapsed() > 0
    e = pypto.Element(pypto.DT_INT32, 3)
    assert e.value == 3 and e.dtype == pypto.DT_INT32 and repr(e) == "pypto.Element(int32, 3)"
    with pytest.raises(pypto.UserError, match="not a value of int32"):
        pypto.Element(pypto.DT_INT32, 2.5)


@pytest.mark.parametrize("mode", MODES)
def test_assigning_a_fresh_tensor_is_an_allocation_idiom(mode):
    # glm_attention: `oi[:] = pypto.tensor(shape, dtype)` before oi is written for real.
    @pypto.jit(runtime_options={"run_mode": mode})
    def f(x: pypto.Tensor((4, 16), F32)):
        pypto.set_vec_tile_shapes(4, 16)
        acc = pypto.tensor((4, 16), F32, "acc")
        acc[:] = pypto.tensor((4, 16), F32, "fresh")  # defines nothing
        acc[:] = x * 2.0
        return acc + 1.0

    x = randn(rng(13), (4, 16))
    assert_close(f(x), x * 2 + 1, rtol=0, atol=0)


@pytest.mark.parametrize("mode", MODES)
def test_assemble_into_a_reshape_of_an_output(mode):
    """sparse_flash_attention_quant: `o2 = reshape(out, [b * s * n, d], inplace=True)`, then
    blocks of rows assembled into o2 (a block may cross a boundary of out's leading dims); out
    is read after the writes."""
    @pypto.jit(runtime_options={"run_mode": mode})
    def f(x: pypto.Tensor((12, 8), F32), out: pypto.Tensor((4, 3, 8), F32), after: pypto.Tensor((4, 3, 8), F32)):
        pypto.set_vec_tile_shapes(4, 8)
        o2 = pypto.reshape(out, [12, 8], inplace=True)
        for i in pypto.loop(0, 3, 1, name="rows", idx_name="i"):
            pypto.assemble(pypto.view(x, [4, 8], [i * 4, 0]) * 2.0, [i * 4, 0], o2)
        pypto.set_vec_tile_shapes(2, 3, 8)
        after[:] = out + 1.0

    x = randn(rng(2), (12, 8))
    out = np.zeros((4, 3, 8), np.float32)
    after = np.zeros((4, 3, 8), np.float32)
    f(x, out, after)
    np.testing.assert_array_equal(out, (x * 2).reshape(4, 3, 8))
    np.testing.assert_array_equal(after, (x * 2).reshape(4, 3, 8) + 1)


def test_assemble_into_a_reshape_of_a_computed_value_is_an_error():
    @pypto.jit
    def f(x: pypto.Tensor((4, 8), F32)):
        y = pypto.reshape(x * 2.0, [2, 16])
        pypto.assemble(pypto.full([1, 16], 1.0, F32), [0, 0], y)
        return y

    with pytest.raises(pypto.UserError, match=r"a reshape of an intermediate result"):
        f(np.zeros((4, 8), np.float32))


@pytest.mark.parametrize("mode", MODES)
def test_dequantization_reshape_of_a_padded_tile_of_scales(mode):
    """sparse_flash_attention_quant's int8 dequantization: 4 scales per row gathered into PyPTO's
    [16, 8] tile (4 valid columns) and reshaped to [16 * 8, 1]: each 128-column block of the
    duplicated rows [16 * 8, 128] meets its scale, the padding meets the duplicate (dropped)."""
    bs, k_pad = 4, 16

    @pypto.jit(runtime_options={"run_mode": mode})
    def f(scales: pypto.Tensor([pypto.DYNAMIC, 4], F32), data: pypto.Tensor([pypto.DYNAMIC, 512], F32),
          ind: pypto.Tensor((1, k_pad), I32), table: pypto.Tensor((1, 6), I32),
          out: pypto.Tensor((k_pad, 512), F32), lens: pypto.Tensor((1,), I32)):
        import pypto.experimental as X
        pypto.set_vec_tile_shapes(16, 1024)
        k = lens[0].min(k_pad)  # known when the kernel runs, as the model's valid lengths
        sel = pypto.view(ind, [1, k_pad], [0, 0], valid_shape=[1, k])
        sv = pypto.view(scales, [scales.shape[0], 8], [0, 0], valid_shape=[scales.shape[0], 4])
        s = X.gather_in_ub(sv, sel, table, bs, -2)
        dv = pypto.view(data, [data.shape[0], 512], [0, 0], valid_shape=[data.shape[0], 512])
        d = X.gather_in_ub(dv, sel, table, bs, -2)
        d2 = pypto.concat([d, d], -1)
        prod = pypto.mul(pypto.reshape(d2, [k_pad * 8, 128]), pypto.reshape(s, [k_pad * 8, 1]))
        back = pypto.reshape(prod, [k_pad, 1024])
        pypto.set_vec_tile_shapes(16, 512)
        pypto.assemble(pypto.view(back, [k_pad, 512], [0, 0], valid_shape=[k, 512]), [0, 0], out)

    r = rng(3)
    scales = r.uniform(0.5, 2, (24, 4)).astype(np.float32)
    data = r.integers(-127, 128, (24, 512)).astype(np.float32)
    ind = np.zeros((1, k_pad), np.int32)
    ind[0, :11] = [0, 5, 23, 9, 14, 3, 20, 17, 1, 12, 8]
    table = np.array([[5, 1, 0, 3, 2, 4]], np.int32)
    out = np.full((k_pad, 512), -1, np.float32)
    f(scales, data, ind, table, out, np.array([11], np.int32))
    pos = ind[0, :11]
    rows = table[0, pos // bs] * bs + pos % bs
    want = data[rows] * np.repeat(scales[rows], 128, axis=1)
    np.testing.assert_array_equal(out[:11], want)
    np.testing.assert_array_equal(out[11:], -1)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_atomic_add_accumulates_overlapping_windows_in_a_loop(dtype, mode):
    import torch
    pdt, tdt = {"fp32": (F32, torch.float32), "bf16": (BF16, torch.bfloat16)}[dtype]

    @pypto.jit(runtime_options={"run_mode": mode})
    def f(x: pypto.Tensor((6, 4, 8), pdt), out: pypto.Tensor((9, 8), pdt)):
        pypto.set_vec_tile_shapes(4, 8)
        for i in pypto.loop(0, 6, 1, name="acc", idx_name="i"):
            pypto.atomic_add(pypto.view(x, [1, 4, 8], [i, 0, 0]).reshape([4, 8]), [i % 3 * 2, 0], out)

    x = torch.randn(6, 4, 8).to(tdt)
    out = torch.randn(9, 8).to(tdt)
    want = out.clone()
    for i in range(6):
        r = i % 3 * 2
        want[r:r + 4] = (want[r:r + 4].float() + x[i].float()).to(tdt)  # one rounding per update
    f(x, out)
    assert torch.equal(out, want)


def test_atomic_add_checks_ranks_and_dtypes():
    @pypto.jit
    def f(x: pypto.Tensor((2, 2), F32), out: pypto.Tensor((4, 4), I32)):
        pypto.atomic_add(x, [0, 0], out)

    with pytest.raises(pypto.UserError, match=r"pypto.atomic_add: src .* differ in dtype"):
        f(np.zeros((2, 2), np.float32), np.zeros((4, 4), np.int32))

    @pypto.jit
    def g(x: pypto.Tensor((2, 2), F32), out: pypto.Tensor((4, 4), F32)):
        pypto.atomic_add(x, [0], out)

    with pytest.raises(pypto.UserError, match=r"must have the same rank"):
        g(np.zeros((2, 2), np.float32), np.zeros((4, 4), np.float32))
