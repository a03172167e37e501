"""The softmax of seed 000 pasted as it stands, with b, n1, n2, dim from the enclosing scope."""

import numpy as np
import pytest

import pypto


def numpy_softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def make_seed_softmax(b, n1, n2, dim):
    # --- pasted from seeds/000 (docstring shortened) ---
    @pypto.frontend.jit()
    def softmax(
        input_tensor: pypto.Tensor((b, n1, n2, dim), pypto.DT_FP32),
        ) -> (
        pypto.Tensor((b, n1, n2, dim), pypto.DT_FP32)
    ):
        """
        Softmax implementation with dynamic batch size support.
        """
        output_tensor = pypto.tensor((b, n1, n2, dim), pypto.DT_FP32)
        tile_b = 1 # Process one batch at a time
        b_loop = b // tile_b

        # Tiling shape setting for efficient execution
        pypto.set_vec_tile_shapes(1, 4, 1, 64)

        for idx in pypto.loop(0, b_loop, 1, name="LOOP_L0_bIdx", idx_name="idx"):
            b_offset = idx * tile_b
            b_offset_end = (idx + 1) * tile_b

            # Extract batch slice
            input_view = input_tensor[b_offset:b_offset_end, :, :, :]

            # core softmax formula
            row_max = pypto.amax(input_view, dim=-1, keepdim=True)
            sub = input_view - row_max
            exp = pypto.exp(sub)
            esum = pypto.sum(exp, dim=-1, keepdim=True)
            softmax_out = exp / esum

            # Assemble result back to output tensor
            pypto.assemble(softmax_out, [b_offset, 0, 0, 0], output_tensor)

        return output_tensor
    # --- end of the seed ---
    return softmax


@pytest.mark.parametrize(
    "shape",
    [(2, 4, 8, 64), (1, 4, 1, 64), (3, 5, 7, 64), (2, 4, 3, 100), (2, 3, 2, 200), (4, 8, 16, 32)],
)
def test_seed_softmax_matches_numpy(shape):
    softmax = make_seed_softmax(*shape)
    rng = np.random.default_rng(sum(shape))
    x = (rng.standard_normal(shape) * 4).astype(np.float32)
    y = softmax(x)
    assert y.shape == shape and y.dtype == np.float32
    np.testing.assert_allclose(y, numpy_softmax(x.astype(np.float64)), rtol=1e-5, atol=1e-7)


def test_seed_softmax_fuses_into_one_kernel_when_the_row_fits_a_tile():
    softmax = make_seed_softmax(2, 4, 8, 64)
    softmax(np.zeros((2, 4, 8, 64), np.float32))
    block = softmax.last.program.block_graph()
    assert softmax.last.program.num_kernels == 1, block
    for instr in ("TLOAD", "TROWMAX", "TROWEXPANDEXPDIF", "TROWSUM", "TROWEXPANDDIV", "TSTORE"):
        assert instr in block


def test_seed_softmax_split_row_reduction_is_exact():
    # dim 200 > tile 64: the reductions cross tiles and run in their own kernels.
    softmax = make_seed_softmax(2, 4, 3, 200)
    x = np.random.default_rng(1).standard_normal((2, 4, 3, 200)).astype(np.float32) * 10
    np.testing.assert_allclose(softmax(x), numpy_softmax(x.astype(np.float64)), rtol=1e-5, atol=1e-7)
    assert softmax.last.program.num_kernels > 1
    assert "for $r in range" in softmax.last.program.block_graph()


def make_dynamic_softmax(n1, n2, dim):
    @pypto.frontend.jit()
    def softmax(
        input_tensor: pypto.Tensor((pypto.DYNAMIC, n1, n2, dim), pypto.DT_FP32),
    ) -> pypto.Tensor((pypto.DYNAMIC, n1, n2, dim), pypto.DT_FP32):
        b = input_tensor.shape[0]
        output_tensor = pypto.tensor((b, n1, n2, dim), pypto.DT_FP32)
        tile_b = 1
        b_loop = b // tile_b
        pypto.set_vec_tile_shapes(1, 4, 1, 64)
        for idx in pypto.loop(0, b_loop, 1, name="LOOP_L0_bIdx", idx_name="idx"):
            b_offset = idx * tile_b
            b_offset_end = (idx + 1) * tile_b
            input_view = input_tensor[b_offset:b_offset_end, :, :, :]
            row_max = pypto.amax(input_view, dim=-1, keepdim=True)
            exp = pypto.exp(input_view - row_max)
            softmax_out = exp / pypto.sum(exp, dim=-1, keepdim=True)
            pypto.assemble(softmax_out, [b_offset, 0, 0, 0], output_tensor)
        return output_tensor

    return softmax


def test_dynamic_batch_compiles_once():
    softmax = make_dynamic_softmax(4, 8, 64)
    rng = np.random.default_rng(7)
    for batch in (1, 3, 7):
        x = rng.standard_normal((batch, 4, 8, 64)).astype(np.float32)
        y = softmax(x)
        assert y.shape == x.shape
        np.testing.assert_allclose(y, numpy_softmax(x.astype(np.float64)), rtol=1e-5, atol=1e-7)
    assert len(softmax._cache) == 1
    assert "input_tensor_dim0" in softmax.last.program.tensor_graph()


def test_wrong_shape_at_call_names_the_parameter():
    softmax = make_seed_softmax(2, 4, 8, 64)
    with pytest.raises(pypto.UserError, match=r"parameter 'input_tensor' expects shape fp32\(2, 4, 8, 64\), got \(2, 4, 8, 32\)"):
        softmax(np.zeros((2, 4, 8, 32), np.float32))
    with pytest.raises(pypto.UserError, match=r"parameter 'input_tensor' expects dtype fp32, got a numpy array of dtype float16 \(fp16\)"):
        softmax(np.zeros((2, 4, 8, 64), np.float16))


def test_dumps_every_pass(tmp_path):
    softmax = make_seed_softmax(2, 4, 8, 64)
    pypto.set_debug_options(dump_dir=str(tmp_path), dump_passes=True)
    try:
        softmax(np.ones((2, 4, 8, 64), np.float32))
    finally:
        pypto.set_debug_options(dump_dir="", dump_passes=False)
    files = sorted(p.name for p in (tmp_path / "softmax" / "passes").iterdir() if p.suffix == ".txt")
    assert files == ["00_tensor_graph.txt", "01_infer_shapes.txt", "02_expand_tiles.txt", "03_partition.txt",
                     "04_fuse_instructions.txt", "05_allocate_buffers.txt", "06_build_exec_graph.txt"]
    assert "tile_graph @softmax" in (tmp_path / "softmax" / "passes" / "02_expand_tiles.txt").read_text()
    assert "@ub+" in (tmp_path / "softmax" / "passes" / "05_allocate_buffers.txt").read_text()
