"""pypto.language (`import pypto.language as pl`): the hw-native-sys language's programs, as its
docs write them, on both backends; tails through valid shapes; cube and vector functions handing
tiles over with tpush / tpop; and the errors of the placement and pipe rules."""

import numpy as np
import pytest

import pypto
import pypto.language as pl
from _util import MODES, run_in
from pypto.runtime import RunConfig

CFG = RunConfig(platform="a2a3sim")


def _rng(seed=0):
    return np.random.default_rng(seed)


def _softmax(a):
    e = np.exp(a - a.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pl.jit
def add_whole(a: pl.Tensor[[128, 128], pl.FP32], b: pl.Tensor[[128, 128], pl.FP32],
              out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, b)
    return out


@pytest.mark.parametrize("mode", MODES)
def test_quickstart_add_writes_out_in_place_and_returns_it(mode):
    r = _rng()
    a, b = r.standard_normal((128, 128), np.float32), r.standard_normal((128, 128), np.float32)
    out = np.zeros_like(a)
    got = run_in(mode, add_whole, a, b, out, config=CFG)
    assert got is out
    np.testing.assert_array_equal(out, a + b)


def test_torch_tensors_in_and_out():
    torch = pytest.importorskip("torch")
    a, b = torch.randn(128, 128), torch.randn(128, 128)
    out = torch.zeros(128, 128)
    assert add_whole(a, b, out) is out
    torch.testing.assert_close(out, a + b)


ROWS, COLS, TILE_ROWS = 512, 128, 128


@pl.jit
def add_chunked(a: pl.Tensor[[512, 128], pl.FP32], b: pl.Tensor[[512, 128], pl.FP32],
                out: pl.Out[pl.Tensor[[512, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(ROWS // TILE_ROWS):
            tile_a = pl.load(a, [i * TILE_ROWS, 0], [TILE_ROWS, COLS])
            tile_b = pl.load(b, [i * TILE_ROWS, 0], [TILE_ROWS, COLS])
            pl.store(pl.add(tile_a, tile_b), [i * TILE_ROWS, 0], out)
    return out


@pytest.mark.parametrize("mode", MODES)
def test_chunked_load_compute_store_is_one_runtime_loop(mode):
    r = _rng(1)
    a, b = r.standard_normal((512, 128), np.float32), r.standard_normal((512, 128), np.float32)
    out = np.zeros_like(a)
    run_in(mode, add_chunked, a, b, out)
    np.testing.assert_array_equal(out, a + b)
    # no carried value: the body is compiled once, as a loop of the program
    assert "pl_range" in add_chunked.last.program.to_json("tensor_graph")


@pl.jit
def softmax_rows(a: pl.Tensor[[pypto.DYNAMIC, 40], pl.FP32], out: pl.Out[pl.Tensor[[pypto.DYNAMIC, 40], pl.FP32]]):
    n = a.shape[0]
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range((n + 15) // 16):
            rows = pypto.min(16, n - i * 16)
            # a 16 x 64 tile of which rows x 40 hold data: the reductions see only those
            t = pl.load(a, [i * 16, 0], [16, 64], valid_shape=[rows, 40])
            t = pl.fillpad(t, pl.PadValue.min)
            m = pl.row_max(t, pl.create_tile([16, 64], dtype=pl.FP32, target_memory=pl.MemorySpace.Vec))
            e = pl.row_expand_expdif(t, m)
            pl.store(pl.row_expand_div(e, pl.row_sum(e)), [i * 16, 0], out)
    return out


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("n", [1, 16, 37])
def test_softmax_tiles_with_valid_shapes_in_both_dims(mode, n):
    a = (_rng(n).standard_normal((n, 40)) * 4 - 3).astype(np.float32)  # all-negative rows are common
    out = np.zeros_like(a)
    run_in(mode, softmax_rows, a, out)
    np.testing.assert_allclose(out, _softmax(a), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_matmul_k_blocked_carries_the_accumulator_by_unrolling(mode):
    @pl.jit
    def mm(a: pl.Tensor[[96, 512], pl.FP16], b: pl.Tensor[[512, 80], pl.FP16],
           c: pl.Out[pl.Tensor[[96, 80], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="k_blocked"):
            acc = pl.matmul(a[:, 0:128], b[0:128, :], out_dtype=pl.FP32)
            for k in pl.range(1, 4):  # acc is carried: unrolled at trace time
                k0 = k * 128
                acc = pl.matmul_acc(acc, a[:, k0:k0 + 128], b[k0:k0 + 128, :])
            c[:] = acc
        return c

    r = _rng(2)
    a = r.standard_normal((96, 512)).astype(np.float16)
    b = r.standard_normal((512, 80)).astype(np.float16)
    c = np.zeros((96, 80), np.float32)
    run_in(mode, mm, a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("mode", MODES)
def test_init_values_and_yield(mode):
    @pl.jit
    def total(a: pl.Tensor[[4, 32, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            acc0 = pl.load(a, [0, 0, 0], [1, 32, 64])
            for i, (acc,) in pl.range(1, 4, init_values=(acc0,)):
                acc = pl.yield_(pl.add(acc, pl.load(a, [i, 0, 0], [1, 32, 64])))
            out[:] = acc.reshape([32, 64])
        return out

    a = _rng(3).standard_normal((4, 32, 64)).astype(np.float32)
    out = np.zeros((32, 64), np.float32)
    run_in(mode, total, a, out)
    np.testing.assert_allclose(out, a.sum(0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", MODES)
def test_parallel_split_k_with_atomic_add(mode):
    @pl.jit
    def split_k(a: pl.Tensor[[64, 256], pl.FP32], b: pl.Tensor[[256, 48], pl.FP32],
                c: pl.Out[pl.Tensor[[64, 48], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="zero_init"):
            c[:] = pl.full([64, 48], dtype=pl.FP32, value=0.0)
        for ks in pl.parallel(4):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="split_k"):
                k0 = ks * 64
                partial = pl.matmul(a[:, k0:k0 + 64], b[k0:k0 + 64, :], out_dtype=pl.FP32)
                c = pl.assemble(c, partial, [0, 0], atomic=pl.AtomicType.Add)
        return c

    r = _rng(4)
    a, b = r.standard_normal((64, 256), np.float32), r.standard_normal((256, 48), np.float32)
    c = np.zeros((64, 48), np.float32)
    run_in(mode, split_k, a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


# --- cube and vector functions handing tiles over ----------------------------------------------------


@pl.jit.incore(level=pl.Level.AIC)
def qk_cube(q, k, row0):
    tq = pl.load(q, [row0, 0], [32, 64], target_memory=pl.MemorySpace.Left)
    tk = pl.load(k, [0, 0], [64, 48], target_memory=pl.MemorySpace.Right)
    pl.tpush_to_aiv(pl.matmul(tq, tk), split=0)


@pl.jit.incore(level=pl.Level.AIV)
def softmax_vector(out, row0):
    s = pl.tpop_from_aic(shape=[32, 48], dtype=pl.FP32, split=0)
    m = pl.row_max(s)
    e = pl.exp(pl.row_expand_sub(s, m))
    pl.store(pl.row_expand_div(e, pl.row_sum(e)), [row0, 0], out)
    pl.tfree_to_aic(s)


@pl.jit
def scores(q: pl.Tensor[[128, 64], pl.FP16], k: pl.Tensor[[64, 48], pl.FP16],
           out: pl.Out[pl.Tensor[[128, 48], pl.FP32]]):
    for i in pl.parallel(4):
        qk_cube(q, k, i * 32)
        softmax_vector(out, i * 32)
    return out


@pytest.mark.parametrize("mode", MODES)
def test_a_cube_function_feeds_a_vector_function_through_the_pipe(mode):
    r = _rng(5)
    q = r.standard_normal((128, 64)).astype(np.float16)
    k = r.standard_normal((64, 48)).astype(np.float16)
    out = np.zeros((128, 48), np.float32)
    run_in(mode, scores, q, k, out)
    ref = _softmax(q.astype(np.float32) @ k.astype(np.float32))
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)
    kinds = {k["core"] for k in __import__("json").loads(scores.last.program.to_json("block_graph"))["kernels"]}
    assert kinds == {"AIC", "AIV"}


def test_an_incore_function_called_with_arrays_is_an_entry():
    @pl.jit.incore
    def scale(x: pl.Tensor[[8, 16], pl.FP32], y: pl.Out[pl.Tensor[[8, 16], pl.FP32]]):
        y[:] = pl.muls(x, 3.0)
        return y

    x = np.arange(128, dtype=np.float32).reshape(8, 16)
    y = np.zeros_like(x)
    assert scale(x, y) is y
    np.testing.assert_array_equal(y, x * 3)


def test_pl_function_with_types_and_roles():
    @pl.function(type=pl.FunctionType.AIV)
    def relu_tile(x, y):
        pl.store(pl.relu(pl.load(x, [0, 0], [8, 16])), [0, 0], y)

    @pl.function(type=pl.FunctionType.Orchestration)
    def entry(x: pl.Tensor[[8, 16], pl.FP32], y: pl.Out[pl.Tensor[[8, 16], pl.FP32]]):
        relu_tile(x, y)
        return y

    x = _rng(6).standard_normal((8, 16)).astype(np.float32)
    y = np.zeros_like(x)
    entry(x, y)
    np.testing.assert_array_equal(y, np.maximum(x, 0))
    assert pl.Role.WORKER is pl.Role.SubWorker and pl.Role.ORCHESTRATOR is pl.Role.Orchestrator


# --- errors -------------------------------------------------------------------------------------------


def _call(fn, *shapes, dtype=np.float32):
    return fn(*[np.zeros(s, dtype) for s in shapes])


def test_an_op_in_the_orchestration_body_is_misplaced():
    @pl.jit
    def bad(x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        out[:] = pl.add(x, x)  # the line reported
        return out

    with pytest.raises(pypto.UserError, match=r"(?s)misplaced op pl.add in the @pl.jit entry bad.*"
                                              r"out\[:\] = pl.add\(x, x\)  # the line reported.*pl.at"):
        _call(bad, (64, 64), (64, 64))


def test_a_cube_instruction_in_an_aiv_function_and_a_vector_one_in_aic():
    @pl.jit
    def cube_in_aiv(x: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
        with pl.at(level=pl.Level.AIV):
            out[:] = pl.matmul(x, x)
        return out

    with pytest.raises(pypto.UserError, match="pl.matmul is a cube instruction, in the AIV"):
        _call(cube_in_aiv, (16, 16), (16, 16))

    @pl.jit
    def vector_in_aic(x: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
        with pl.at(level=pl.Level.AIC):
            out[:] = pl.exp(x)
        return out

    with pytest.raises(pypto.UserError, match="pl.exp is a vector instruction, in the AIC"):
        _call(vector_in_aic, (16, 16), (16, 16))


def test_a_tile_too_big_for_its_memory_space_names_the_buffer_and_the_chip():
    @pl.jit
    def big(x: pl.Tensor[[256, 256], pl.FP32], out: pl.Out[pl.Tensor[[256, 256], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.exp(pl.load(x, [0, 0], [256, 256])), [0, 0], out)
        return out

    x = np.zeros((256, 256), np.float32)
    with pytest.raises(pypto.UserError, match=r"(?s)a \[256, 256\] fp32 tile is 262144 bytes, more than the Vec "
                                              r"\(UB\) buffer of 196608 bytes on a2a3.*pl.load\(x"):
        big(x, np.zeros_like(x), config=CFG)
    big(x, out := np.zeros_like(x))  # this CPU's buffer model holds it
    np.testing.assert_array_equal(out, np.ones_like(x))


def test_load_and_store_out_of_bounds():
    @pl.jit
    def oob_load(x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.load(x, [32, 0], [64, 64]), [0, 0], out)
        return out

    with pytest.raises(pypto.UserError, match=r"pl.load: the window at offsets \[32, 0\].*out of bounds.*"
                                              r"\(32 \+ 64 > 64\)"):
        _call(oob_load, (64, 64), (64, 64))

    @pl.jit
    def oob_store(x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.load(x, [0, 0], [32, 64]), [48, 0], out)
        return out

    with pytest.raises(pypto.UserError, match=r"pl.store: the window at offsets \[48, 0\].*out of bounds"):
        _call(oob_store, (64, 64), (64, 64))


def test_pipe_errors_pop_without_push_push_without_pop_pop_without_free():
    @pl.jit
    def consumer_first(q: pl.Tensor[[32, 64], pl.FP16], k: pl.Tensor[[64, 48], pl.FP16],
                       out: pl.Out[pl.Tensor[[128, 48], pl.FP32]]):
        softmax_vector(out, 0)
        qk_cube(q, k, 0)
        return out

    with pytest.raises(pypto.UserError, match=r"(?s)tpop_from_aic: no tile has been pushed.*"
                                              r"call the producer function before the consumer"):
        consumer_first(*[np.zeros(s, np.float16) for s in ((32, 64), (64, 48))], np.zeros((128, 48), np.float32))

    @pl.jit
    def no_pop(q: pl.Tensor[[32, 64], pl.FP16], k: pl.Tensor[[64, 48], pl.FP16],
               out: pl.Out[pl.Tensor[[32, 48], pl.FP32]]):
        qk_cube(q, k, 0)
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.full([32, 48], dtype=pl.FP32, value=0.0)
        return out

    with pytest.raises(pypto.UserError, match=r"(?s)pl.tpush_to_aiv: a pushed tile \(pipe 0\) is never popped.*"
                                              r"pl.tpush_to_aiv\(pl.matmul"):
        no_pop(*[np.zeros(s, np.float16) for s in ((32, 64), (64, 48))], np.zeros((32, 48), np.float32))

    @pl.jit.incore(level=pl.Level.AIV)
    def no_free(out):
        s = pl.tpop_from_aic(shape=[32, 48], dtype=pl.FP32)
        pl.store(s, [0, 0], out)

    @pl.jit
    def leaks(q: pl.Tensor[[32, 64], pl.FP16], k: pl.Tensor[[64, 48], pl.FP16],
              out: pl.Out[pl.Tensor[[32, 48], pl.FP32]]):
        qk_cube(q, k, 0)
        no_free(out)
        return out

    with pytest.raises(pypto.UserError, match="never released with pl.tfree_to_aic"):
        leaks(*[np.zeros(s, np.float16) for s in ((32, 64), (64, 48))], np.zeros((32, 48), np.float32))


def test_the_ring_of_a_big_crossing_tile_does_not_fit_the_consumer():
    @pl.jit.incore(level=pl.Level.AIC)
    def big_push(a, b):
        pl.tpush_to_aiv(pl.matmul(a, b, out_dtype=pl.FP32), split=0)

    @pl.jit
    def ring(a: pl.Tensor[[128, 64], pl.FP16], b: pl.Tensor[[64, 128], pl.FP16],
             out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.cross_core_slot(slot_num=4)]):
            big_push(a, b)
        return out

    # the hw-native-sys docs' example: a [128, 128] fp32 tile, 4 slots = 256 KiB > the 192 KiB UB
    with pytest.raises(pypto.UserError, match=r"cross-core ring of 4 slots of a \[128, 128\] fp32 tile is 262144 "
                                              r"bytes, more than the consumer's Vec \(UB\) buffer of 196608"):
        ring(np.zeros((128, 64), np.float16), np.zeros((64, 128), np.float16), np.zeros((128, 128), np.float32),
             config=CFG)


def test_directions_an_out_never_written_and_an_in_written():
    @pl.jit
    def rebinds(a: pl.Tensor[[8, 8], pl.FP32], out: pl.Out[pl.Tensor[[8, 8], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out = pl.add(a, a)  # noqa: F841 - the mistake the language's docs warn about
        return a

    with pytest.raises(pypto.UserError, match=r"(?s)pl.Out parameter 'out' is never written.*out\[:\] = "):
        _call(rebinds, (8, 8), (8, 8))

    @pl.jit
    def writes_input(a: pl.Tensor[[8, 8], pl.FP32], b: pl.Tensor[[8, 8], pl.FP32]):
        with pl.at(level=pl.Level.CORE_GROUP):
            b[:] = pl.add(a, a)
        return b

    with pytest.raises(pypto.UserError, match=r"parameter 'b' is written but its direction is In"):
        _call(writes_input, (8, 8), (8, 8))


def test_a_carried_value_in_a_dynamic_range_is_refused():
    @pl.jit
    def dyn(a: pl.Tensor[[pypto.DYNAMIC, 16], pl.FP32], out: pl.Out[pl.Tensor[[1, 16], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            acc = pl.load(a, [0, 0], [1, 16])
            for i in pl.range(1, a.shape[0]):
                acc = pl.add(acc, pl.load(a, [i, 0], [1, 16]))
            out[:] = acc
        return out

    with pytest.raises(pypto.UserError, match="`acc` is carried from one iteration"):
        _call(dyn, (4, 16), (1, 16))


@pl.jit.incore(level=pl.Level.AIV)
def rms_rows(x, out, row0):
    t = pl.load(x, [row0, 0], [8, 64])
    ms = pl.muls(pl.row_sum(pl.mul(t, t)), 1.0 / 64)
    pl.store(pl.row_expand_mul(t, pl.rsqrt(pl.adds(ms, 1e-6))), [row0, 0], out)


@pytest.mark.parametrize("mode", MODES)
def test_a_tensor_level_function_calls_a_tile_level_one_on_views(mode):
    # The levels mix in one program: tensor-level ops before and after, a pl kernel in between.
    @pypto.jit
    def f(x: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32)):
        n = x.shape[0]
        y = pypto.tensor([n, 64], pypto.DT_FP32)
        z = pypto.tensor([n, 64], pypto.DT_FP32)
        pypto.set_vec_tile_shapes(8, 64)
        y[:] = x * 2.0
        for i in pypto.loop(n // 8):
            rms_rows(y, z, i * 8)
        return z + 1.0

    x = _rng(7).standard_normal((48, 64)).astype(np.float32)
    got = run_in(mode, f, x)
    y = x * 2
    ref = y / np.sqrt((y * y).mean(-1, keepdims=True) + 1e-6) + 1
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


def test_dumps_graph_and_verify_passes_work_for_a_pl_program(tmp_path):
    import os
    saved = pypto.get_debug_options()
    pypto.set_debug_options(dump_dir=str(tmp_path), dump_passes=True, graph=True, swimlane=True,
                            verify_passes=True)
    try:
        x = _rng(8).standard_normal((37, 40)).astype(np.float32)
        out = np.zeros_like(x)
        f = pl.jit(softmax_rows.fn)  # a fresh function: a compiled one keeps the options it was compiled with
        f(x, out)
    finally:
        pypto.set_debug_options(**saved)
    np.testing.assert_allclose(out, _softmax(x), rtol=1e-5, atol=1e-6)
    d = tmp_path / "softmax_rows"
    passes = sorted(os.listdir(d / "passes"))
    assert "00_tensor_graph.txt" in passes and any("partition" in p for p in passes)
    assert "pl_range" in (d / "passes" / "00_tensor_graph.txt").read_text()
    assert (d / "graph.html").exists() and (d / "swimlane.json").exists()
    assert f.last_stats["verify"].startswith("verify_passes: tensor graph == block graph")


@pytest.mark.parametrize("mode", MODES)
def test_program_id_is_the_task_index_of_pl_parallel(mode):
    @pl.jit.incore(level=pl.Level.AIV)
    def row_block(x, out):
        i = pl.program_id()
        t = pl.load(x, [i * 4, 0], [4, 32])
        pl.store(pl.adds(t, pl.get_block_num() * 1.0), [i * 4, 0], out)

    @pl.jit
    def f(x: pl.Tensor[[24, 32], pl.FP32], out: pl.Out[pl.Tensor[[24, 32], pl.FP32]]):
        for _ in pl.parallel(6):
            row_block(x, out)
        return out

    x = _rng(9).standard_normal((24, 32)).astype(np.float32)
    out = np.zeros_like(x)
    run_in(mode, f, x, out)
    np.testing.assert_array_equal(out, x + 6)

    @pl.jit
    def outside(x: pl.Tensor[[24, 32], pl.FP32], out: pl.Out[pl.Tensor[[24, 32], pl.FP32]]):
        row_block(x, out)
        return out

    with pytest.raises(pypto.UserError, match="not inside a pl.parallel loop"):
        outside(x, out)


# --- the bare pl.Tensor, pl.move, pl.concat, pl.reshape (hw-native-sys pypto's examples' forms) ---------


@pl.jit
def bare_add(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        rows, cols = a.shape
        for i in pl.range(rows // 16):
            pl.store(pl.add(pl.load(a, [i * 16, 0], [16, cols]), pl.load(b, [i * 16, 0], [16, cols])), [i * 16, 0], c)
    return c


@pytest.mark.parametrize("mode", MODES)
def test_a_bare_tensor_annotation_takes_shape_and_dtype_from_the_argument(mode):
    r = _rng(4)
    for shape, dt in (((32, 64), np.float32), ((48, 32), np.float32), ((32, 64), np.float16)):
        a, b = r.standard_normal(shape).astype(dt), r.standard_normal(shape).astype(dt)
        c = np.zeros_like(a)
        run_in(mode, bare_add, a, b, c, config=CFG)  # one compiled program per shape and dtype
        np.testing.assert_array_equal(c, (a.astype(np.float32) + b.astype(np.float32)).astype(dt))


@pl.jit
def moved_matmul(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.move(pl.load(a, [0, 0], [32, 48], target_memory=pl.MemorySpace.Mat), target_memory=pl.MemorySpace.Left)
        tb = pl.move(pl.load(b, [0, 0], [48, 16], target_memory=pl.MemorySpace.Mat),
                     target_memory=pl.MemorySpace.Right)
        acc = pl.matmul(ta, tb)
        pl.store(pl.move(acc, target_memory=pl.MemorySpace.Vec), [0, 0], c)
    return c


@pytest.mark.parametrize("mode", MODES)
def test_move_mat_to_left_and_right_then_matmul(mode):
    r = _rng(5)
    a, b = r.standard_normal((32, 48), np.float32), r.standard_normal((48, 16), np.float32)
    c = np.zeros((32, 16), np.float32)
    run_in(mode, moved_matmul, a, b, c, config=CFG)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)


def _move_kernel(src_mem, dst_mem, shape=(16, 16)):
    @pl.jit
    def k(a: pl.Tensor, c: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], list(shape), target_memory=src_mem)
            pl.store(pl.move(t, target_memory=dst_mem), [0, 0], c)
        return c
    return k


@pytest.mark.parametrize("src,dst,why", [
    (pl.MemorySpace.Vec, pl.MemorySpace.Left, "no on-chip path from Vec to Left"),
    (pl.MemorySpace.Left, pl.MemorySpace.Vec, "from Left: none: it only feeds the cube"),
    (pl.MemorySpace.Mat, pl.MemorySpace.Acc, "only a matmul writes Acc"),
])
def test_move_refuses_the_paths_the_chip_lacks(src, dst, why):
    a = np.ones((16, 16), np.float32)
    with pytest.raises(pypto.UserError, match=why):
        _move_kernel(src, dst)(a, np.zeros_like(a), config=CFG)


def test_move_checks_the_target_memory_size():
    a = np.ones((128, 256), np.float32)  # 128 KiB: fits L1, not L0A (64 KiB on a2a3)
    with pytest.raises(pypto.UserError, match="Left"):
        _move_kernel(pl.MemorySpace.Mat, pl.MemorySpace.Left, (128, 256))(a, np.zeros_like(a), config=CFG)


@pl.jit
def concat_reshape(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor], d: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [8, 16])
        tb = pl.load(b, [0, 0], [8, 24])
        pl.store(pl.concat(ta, tb), [0, 0], c)
        col = pl.row_sum(ta)  # [8, 1]
        pl.store(pl.reshape(pl.mul(pl.reshape(col, [1, 8]), 2.0), [8, 1]), [0, 0], d)
    return c


@pytest.mark.parametrize("mode", MODES)
def test_concat_joins_columns_and_reshape_keeps_the_elements(mode):
    r = _rng(6)
    a, b = r.standard_normal((8, 16), np.float32), r.standard_normal((8, 24), np.float32)
    c, d = np.zeros((8, 40), np.float32), np.zeros((8, 1), np.float32)
    run_in(mode, concat_reshape, a, b, c, d, config=CFG)
    np.testing.assert_array_equal(c, np.concatenate([a, b], 1))
    np.testing.assert_allclose(d, a.sum(1, keepdims=True) * 2, rtol=1e-6, atol=1e-6)

    @pl.jit
    def uneven(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.concat(pl.load(a, [0, 0], [8, 16]), pl.load(b, [0, 0], [4, 24])), [0, 0], c)
        return c

    with pytest.raises(pypto.UserError, match="same rows"):
        uneven(a, b, c, config=CFG)


@pl.jit
def tile_assemble_slice(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor], d: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 32])
        tb = pl.load(b, [0, 0], [16, 8])
        pl.store(pl.tile.assemble(ta, tb, [0, 16]), [0, 0], c)  # ta's columns 16..23 replaced
        pl.store(pl.slice(ta, [8, 16], [4, 8]), [0, 0], d)      # ta itself unchanged
    return c


@pytest.mark.parametrize("mode", MODES)
def test_tile_assemble_makes_a_new_tile_and_slice_takes_a_window(mode):
    r = _rng(7)
    a, b = r.standard_normal((16, 32), np.float32), r.standard_normal((16, 8), np.float32)
    c, d = np.zeros((16, 32), np.float32), np.zeros((8, 16), np.float32)
    run_in(mode, tile_assemble_slice, a, b, c, d, config=CFG)
    want = a.copy()
    want[:, 16:24] = b
    np.testing.assert_array_equal(c, want)
    np.testing.assert_array_equal(d, a[4:12, 8:24])


def test_lower_gives_the_functions_and_the_levels_without_running():
    import pypto.ir as ir
    from pypto.ir.pass_manager import OptimizationStrategy

    a = np.ones((16, 32), np.float32)
    c = np.full((16, 32), 7.0, np.float32)
    prog = tile_assemble_slice.lower(a, np.ones((16, 8), np.float32), c, np.zeros((8, 16), np.float32))
    assert np.all(c == 7.0)  # nothing ran
    kinds = [f.func_type for f in prog.functions.values()]
    assert kinds[0] is pl.FunctionType.Orchestration and len(kinds) >= 2
    assert all(k in (pl.FunctionType.AIV, pl.FunctionType.AIC, pl.FunctionType.InCore) for k in kinds[1:])
    text = prog.as_python()
    assert "tensor_graph @tile_assemble_slice" in text and "assemble" in text
    assert ir.lower(tile_assemble_slice, a, np.ones((16, 8), np.float32), c,
                    np.zeros((8, 16), np.float32)).functions.keys() == prog.functions.keys()
    assert OptimizationStrategy.Default.name == "Default"


@pl.jit
def read_valid_length(data: pl.Tensor, cfg: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        is_last = pl.read(cfg, [0])
        last_len = pl.cast(pl.read(cfg, [1]), pl.INDEX)
        full_len = pl.cast(pl.read(cfg, [2]), pl.INDEX)
        if is_last == 1:
            vlen = last_len
        else:
            vlen = full_len
        t = pl.load(data, [0, 0], [16, 32], valid_shape=[16, vlen])
        pl.store(pl.muls(t, 2.0), [0, 0], out)
    return out


@pytest.mark.parametrize("mode", MODES)
def test_read_a_length_at_run_time_and_load_that_much(mode):
    r = _rng(8)
    data = r.standard_normal((16, 32), np.float32)
    for cfg, n in (([1, 12, 32], 12), ([0, 12, 32], 32), ([1, 1, 32], 1)):  # one compiled program
        out = np.zeros((16, 32), np.float32)
        run_in(mode, read_valid_length, data, np.array(cfg, np.int64), out, config=CFG)
        np.testing.assert_array_equal(out[:, :n], data[:, :n] * 2)
        np.testing.assert_array_equal(out[:, n:], 0)  # only the valid part is stored
    with pytest.raises(pypto.UserError, match="integer type"):
        @pl.jit
        def bad(cfg: pl.Tensor, out: pl.Out[pl.Tensor]):
            with pl.at(level=pl.Level.CORE_GROUP):
                pl.store(pl.full([1, 8], pl.FP32, pl.cast(pl.read(cfg, [0]), pl.FP32)), [0, 0], out)
            return out
        bad(np.array([3], np.int64), np.zeros((1, 8), np.float32), config=CFG)
