"""hw-native-sys pypto's ``@pl.program`` classes and the language around them: ``pypto.runtime.run``
/ ``ir.compile``, orchestration over elements read at run time (loop bounds, tensor shapes),
``pl.yield_`` in branches, loops over run-time bounds that carry tiles and scalars, ``pl.spmd``,
float scalars read from tensors, ``pl.tile.transpose_view``, HOST SubWorker callbacks. Results
against numpy / torch; the programs here are small versions of upstream's paged attention.

Program classes are at module level where a rank process must find them by name."""

from __future__ import annotations

import os

import numpy as np
import pytest

import pypto
import pypto.language as pl
from pypto import ir
from pypto.backend import BackendType
from pypto.backend.pto_backend import PartialCodegenError
from pypto.ir.distributed_compiled_program import DistributedConfig
from pypto.runtime import RunConfig, TensorSpec, run

torch = pytest.importorskip("torch")

ROWS, COLS = 64, 128


@pytest.fixture(autouse=True)
def _in_tmp_dir(tmp_path, monkeypatch):
    """run() / ir.compile without an output_dir write build_output/ in the working directory (as
    upstream): keep it out of the checkout."""
    monkeypatch.chdir(tmp_path)


@pl.program
class AddProgram:
    """c = a + b, in 16-row tiles from an orchestration loop."""

    @pl.function(type=pl.FunctionType.InCore)
    def tile_add(self, a: pl.Tensor[[ROWS, COLS], pl.FP32], b: pl.Tensor[[ROWS, COLS], pl.FP32],
                 r: pl.Scalar[pl.INDEX], c: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]]
                 ) -> pl.Tensor[[ROWS, COLS], pl.FP32]:
        ta = pl.load(a, [r, 0], [16, COLS])
        tb = pl.load(b, [r, 0], [16, COLS])
        return pl.store(pl.add(ta, tb), [r, 0], c)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[ROWS, COLS], pl.FP32], b: pl.Tensor[[ROWS, COLS], pl.FP32],
             c: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]]) -> pl.Tensor[[ROWS, COLS], pl.FP32]:
        for i in pl.range(ROWS // 16):
            c = self.tile_add(a, b, i * 16, c)
        return c


def test_a_program_class_runs_and_lists_its_functions(tmp_path):
    a = torch.randn(ROWS, COLS)
    b = torch.randn(ROWS, COLS)
    c = torch.zeros(ROWS, COLS)
    compiled = run(AddProgram, a, b, c, config=RunConfig(platform="a2a3sim", save_kernels_dir=str(tmp_path / "out"),
                                                         dump_passes=True))
    np.testing.assert_array_equal(c.numpy(), (a + b).numpy())
    # Called with its inputs only, the compiled program makes its pl.Out tensor and returns it.
    a2, b2 = torch.randn(ROWS, COLS), torch.randn(ROWS, COLS)
    out = compiled(a2, b2)
    assert isinstance(out, torch.Tensor)
    np.testing.assert_array_equal(out.numpy(), (a2 + b2).numpy())
    assert [(f.name, f.func_type) for f in AddProgram.functions.values()] == [
        ("tile_add", pl.FunctionType.InCore), ("main", pl.FunctionType.Orchestration)]
    assert AddProgram.get_function("main").params == ["a", "b", "c"]
    assert AddProgram.get_function("nope") is None
    assert "def tile_add" in AddProgram.as_python()
    # The compiled program is the path of its output directory.
    out_dir = os.fspath(compiled)
    assert out_dir == str(tmp_path / "out")
    files = {os.path.relpath(os.path.join(d, f), out_dir) for d, _, fs in os.walk(compiled) for f in fs}
    assert "program.py" in files and "kernels/AddProgram.cpp" in files
    assert any(f.startswith("passes" + os.sep) for f in files)


def test_ir_compile_takes_upstream_options_and_the_backend(tmp_path):
    compiled = ir.compile(AddProgram, output_dir=str(tmp_path), strategy=ir.OptimizationStrategy.Default,
                          backend_type=BackendType.Ascend950)
    assert compiled.machine == "a5"
    a, b = np.ones((ROWS, COLS), np.float32), np.full((ROWS, COLS), 2, np.float32)
    c = np.zeros_like(a)
    compiled(a, b, c)
    np.testing.assert_array_equal(c, 3.0)
    with pytest.raises(pypto.UserError, match="unknown platform 'b9'"):
        ir.compile(AddProgram, platform="b9")
    with pytest.raises(pypto.UserError, match="take a @pl.program class"):
        ir.compile(object())


# --- an orchestration over values read at run time (upstream's paged attention, small) ---------

Q, D, BS = 16, 32, 16  # query rows, head dim, kv block size


@pl.function(type=pl.FunctionType.InCore)
def _qk(qi: pl.Tensor[[Q, D], pl.BF16], kj: pl.Tensor[[BS, D], pl.BF16],
        out: pl.Out[pl.Tensor[[Q, BS], pl.FP32]]) -> pl.Tensor[[Q, BS], pl.FP32]:
    q_l1 = pl.load(qi, [0, 0], [Q, D], target_memory=pl.MemorySpace.Mat)
    k_l1 = pl.tile.transpose_view(pl.load(kj, [0, 0], [BS, D], target_memory=pl.MemorySpace.Mat))
    s = pl.matmul(pl.move(q_l1, target_memory=pl.MemorySpace.Left),
                  pl.move(k_l1, target_memory=pl.MemorySpace.Right))
    return pl.store(s, [0, 0], out)


@pl.function(type=pl.FunctionType.InCore)
def _accumulate(s: pl.Tensor[[Q, BS], pl.FP32], scale: pl.Scalar[pl.FP32], acc: pl.InOut[pl.Tensor[[Q, BS], pl.FP32]],
                is_first: pl.Scalar[pl.INDEX]) -> pl.Tensor[[Q, BS], pl.FP32]:
    t = pl.mul(pl.load(s, [0, 0], [Q, BS]), scale)
    if is_first:
        out = pl.store(t, [0, 0], acc)
    else:
        out = pl.store(pl.add(t, pl.load(acc, [0, 0], [Q, BS])), [0, 0], acc)
    return out


@pl.program
class BlockSumProgram:
    """out = sum over the first n_blocks blocks (block_table order) of scale * q @ k_block^T."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, q: pl.Tensor[[Q, D], pl.BF16], k: pl.Tensor[[8 * BS, D], pl.BF16],
             block_table: pl.Tensor[[8], pl.INT32], config: pl.Tensor[[2], pl.INT64],
             scale_t: pl.Tensor[[1], pl.FP32], out: pl.Out[pl.Tensor[[Q, BS], pl.FP32]]
             ) -> pl.Tensor[[Q, BS], pl.FP32]:
        n_blocks = pl.tensor.read(config, [0])
        bs_cfg = pl.tensor.read(config, [1])
        scale = pl.tensor.read(scale_t, [0])  # a float element: broadcast as a scalar
        for bn in pl.range(n_blocks):
            s_buf = pl.create_tensor([Q, bs_cfg], dtype=pl.FP32)  # its shape from a value read at run time
            row = pl.tensor.read(block_table, [bn]) * bs_cfg
            kj = pl.slice(k, [BS, D], [row, 0])
            s = _qk(q, kj, s_buf)
            if bn == 0:
                first = pl.yield_(1)
            else:
                first = pl.yield_(0)
            out = _accumulate(s, scale, out, first)
        return out


@pytest.mark.parametrize("n_blocks", [1, 3, 8])
def test_an_orchestration_over_elements_read_at_run_time(n_blocks):
    rng = np.random.default_rng(n_blocks)
    q = torch.randn(Q, D).to(torch.bfloat16)
    k = torch.randn(8 * BS, D).to(torch.bfloat16)
    table = torch.tensor(rng.permutation(8), dtype=torch.int32)
    config = torch.tensor([n_blocks, BS], dtype=torch.int64)
    scale = torch.tensor([0.5], dtype=torch.float32)
    out = torch.zeros(Q, BS)
    compiled = run(BlockSumProgram, q, k, table, config, scale, out)
    want = torch.zeros(Q, BS)
    for bn in range(n_blocks):
        r = int(table[bn]) * BS
        want += 0.5 * (q.float() @ k[r:r + BS].float().T)
    np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=1e-5, atol=1e-4)
    # The same compiled program for another count: the loop and the reads are the run's.
    config2 = torch.tensor([2, BS], dtype=torch.int64)
    out2 = compiled(q, k, table, config2, scale)
    want2 = sum(0.5 * (q.float() @ k[int(table[b]) * BS:int(table[b]) * BS + BS].float().T) for b in range(2))
    np.testing.assert_allclose(out2.numpy(), want2.numpy(), rtol=1e-5, atol=1e-4)


# --- loops over run-time bounds that carry values -------------------------------------------------

@pl.jit
def _row_block_sum(x: pl.Tensor[[64, 32], pl.FP32], n_t: pl.Tensor[[1], pl.INT32],
                   out: pl.Out[pl.Tensor[[8, 32], pl.FP32]]):
    n = pl.read(n_t, [0])
    with pl.at(level=pl.Level.CORE_GROUP):
        acc0 = pl.full([8, 32], dtype=pl.FP32, value=0.0)
        for i, (acc,) in pl.range(n, init_values=(acc0,)):  # a tile carried through memory
            nxt = pl.add(acc, pl.load(x, [i * 8, 0], [8, 32]))
            (total,) = pl.yield_(nxt)
        pl.store(total, [0, 0], out)
    return out


@pytest.mark.parametrize("n", [1, 2, 8])
def test_a_tile_carried_by_a_loop_over_run_time_bounds(n):
    x = np.random.default_rng(n).standard_normal((64, 32)).astype(np.float32)
    out = np.zeros((8, 32), np.float32)
    _row_block_sum(x, np.array([n], np.int32), out)
    np.testing.assert_allclose(out, x[:8 * n].reshape(n, 8, 32).sum(0), rtol=1e-5, atol=1e-5)


@pl.jit
def _max_len_rows(lens: pl.Tensor[[6], pl.INT32], nb_t: pl.Tensor[[1], pl.INT32], x: pl.Tensor[[64, 16], pl.FP32],
                  out: pl.Out[pl.Tensor[[64, 16], pl.FP32]]):
    nb = pl.read(nb_t, [0])
    longest: pl.Scalar[pl.INT64] = 0
    for b in pl.range(nb):  # a scalar carried from one iteration to the next
        longest = pl.max(longest, pl.read(lens, [b]))
    for r in pl.range(longest):  # ... and used after the loop
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.muls(pl.load(x, [r, 0], [1, 16]), 2.0), [r, 0], out)
    return out


@pytest.mark.parametrize("nb", [1, 4, 6])
def test_a_scalar_carried_by_a_loop_over_run_time_bounds(nb):
    lens = np.array([3, 9, 2, 17, 5, 30], np.int32)
    x = np.random.default_rng(nb).standard_normal((64, 16)).astype(np.float32)
    out = np.zeros_like(x)
    _max_len_rows(lens, np.array([nb], np.int32), x, out)
    m = int(lens[:nb].max())
    np.testing.assert_array_equal(out[:m], 2 * x[:m])
    np.testing.assert_array_equal(out[m:], 0)


def test_a_yield_of_another_shape_in_a_run_time_loop_is_refused():
    @pl.jit
    def bad(x: pl.Tensor[[16, 16], pl.FP32], n_t: pl.Tensor[[1], pl.INT32], out: pl.Out[pl.Tensor[[8, 16], pl.FP32]]):
        n = pl.read(n_t, [0])
        with pl.at(level=pl.Level.CORE_GROUP):
            t0 = pl.load(x, [0, 0], [8, 16])
            for i, (acc,) in pl.range(n, init_values=(t0,)):
                res = pl.yield_(pl.load(x, [0, 0], [4, 16]))
            pl.store(res, [0, 0], out)
        return out

    with pytest.raises(pypto.UserError, match=r"pl.yield_ gives .* for a carried value of shape \[8, 16\]"):
        bad(np.zeros((16, 16), np.float32), np.array([2], np.int32), np.zeros((8, 16), np.float32))


# --- pl.spmd --------------------------------------------------------------------------------------

@pl.program
class SpmdProgram:
    @pl.function(type=pl.FunctionType.InCore)
    def scale_rows(self, x: pl.Tensor[[64, 32], pl.FP32], n: pl.Scalar[pl.INDEX],
                   out: pl.Out[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        idx = pl.tile.get_block_idx()
        num = pl.tile.get_block_num()
        for b in pl.range(idx, n, num):  # block b's rows, strided over the blocks
            t = pl.load(x, [b * 8, 0], [8, 32])
            out = pl.store(pl.muls(t, 3.0), [b * 8, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 32], pl.FP32], out: pl.Out[pl.Tensor[[64, 32], pl.FP32]]
             ) -> pl.Tensor[[64, 32], pl.FP32]:
        with pl.cluster():
            with pl.spmd(3, sync_start=True):
                out = self.scale_rows(x, 8, out)
        return out


def test_spmd_runs_a_kernel_as_blocks():
    x = np.random.default_rng(0).standard_normal((64, 32)).astype(np.float32)
    out = np.zeros_like(x)
    run(SpmdProgram, x, out)
    np.testing.assert_array_equal(out, 3 * x)


def test_spmd_loop_form_and_its_errors():
    @pl.jit
    def blocks(x: pl.Tensor[[32, 16], pl.FP32], out: pl.Out[pl.Tensor[[32, 16], pl.FP32]]):
        for i in pl.spmd(4):
            pl.store(pl.adds(pl.load(x, [i * 8, 0], [8, 16]), 1.0), [i * 8, 0], out)
        return out

    x = np.arange(32 * 16, dtype=np.float32).reshape(32, 16)
    out = np.zeros_like(x)
    blocks(x, out)
    np.testing.assert_array_equal(out, x + 1)

    @pl.jit
    def nothing(x: pl.Tensor[[32, 16], pl.FP32], out: pl.Out[pl.Tensor[[32, 16], pl.FP32]]):
        with pl.spmd(4):
            y = x  # noqa: F841 - no in-core call: every block would do the same
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.load(x, [0, 0], [32, 16]), [0, 0], out)
        return out

    with pytest.raises(pypto.UserError, match=r"calls no in-core function"):
        nothing(x, out)
    with pytest.raises(pypto.UserError, match="core_num must be a positive int"):
        pl.spmd(0)


# --- names of the language ------------------------------------------------------------------------

def test_scalar_min_max_and_the_tensor_namespace():
    assert pl.min(3, 5) == 3 and pl.max(3, 5) == 5
    with pytest.raises(pypto.UserError, match=r"(?s)pl.min takes two scalars.*hint: pl.minimum"):
        pl.min(np.zeros(2), 1)

    @pl.jit
    def f(x: pl.Tensor[[4, 8], pl.INT32], out: pl.Out[pl.Tensor[[4, 8], pl.INT32]]):
        rows = pl.tensor.dim(x, 0)
        cols = pl.tensor.dim(x, -1)
        v = pl.tensor.view(x, [rows, cols], [0, 0])
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.load(v, [0, 0], [4, 8]), [0, 0], out)
        return out

    x = np.arange(32, dtype=np.int32).reshape(4, 8)
    out = np.zeros_like(x)
    f(x, out)
    np.testing.assert_array_equal(out, x)


def test_pipeline_unroll_const_and_static_checks():
    @pl.jit
    def f(x: pl.Tensor[[32, 16], pl.FP32], out: pl.Out[pl.Tensor[[32, 16], pl.FP32]]):
        pl.static_assert(pl.const(4, pl.INT32) == 4, "four")
        pl.func_attr({"note": 1})
        for i in pl.pipeline(4, stage=2):
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.load(x, [i * 8, 0], [8, 16])
                for _ in pl.unroll(3):
                    t = pl.adds(t, 1.0)
                pl.store(t, [i * 8, 0], out)
        return out

    x = np.random.default_rng(1).standard_normal((32, 16)).astype(np.float32)
    out = np.zeros_like(x)
    f(x, out)
    np.testing.assert_allclose(out, x + 3, rtol=1e-6)
    with pytest.raises(pypto.UserError, match="stage must be a positive int"):
        pl.pipeline(4, stage=0)

    @pl.jit
    def failing(x: pl.Tensor[[8, 8], pl.FP32], out: pl.Out[pl.Tensor[[8, 8], pl.FP32]]):
        pl.static_assert(False, "not this one")
        return out

    with pytest.raises(pypto.UserError, match="pl.static_assert failed: not this one"):
        failing(np.zeros((8, 8), np.float32), np.zeros((8, 8), np.float32))


def test_created_tensors_read_as_zeros_and_tensor_views_in_annotations():
    view = pl.TensorView(valid_shape=[16, 8], layout=pl.TensorLayout.ND)

    @pl.jit
    def f(x: pl.Tensor[[16, 16], pl.FP32, view], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
        scratch = pl.create_tensor([16, 16], dtype=pl.FP32)  # never written: zeros
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.add(pl.load(x, [0, 0], [16, 16]), pl.load(scratch, [0, 0], [16, 16])), [0, 0], out)
        return out

    x = np.random.default_rng(2).standard_normal((16, 16)).astype(np.float32)
    out = np.zeros_like(x)
    f(x, out)
    np.testing.assert_array_equal(out, x)
    with pytest.raises(pypto.UserError, match="layout must be a pl.TensorLayout"):
        pl.TensorView(layout="ND")


@pl.jit.inline
def _fill_cache(src: pl.Tensor, cache: pl.InOut[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.load(src, [0, 0], [8, 8]), [0, 0], cache)
    return cache


def test_a_parameter_a_callee_writes_takes_its_direction_from_the_callee():
    @pl.jit
    def f(src: pl.Tensor, cache: pl.Tensor):  # no direction of its own: _fill_cache's InOut writes it
        cache = _fill_cache(src, cache)
        return cache

    src = np.random.default_rng(3).standard_normal((8, 8)).astype(np.float32)
    cache = np.zeros((8, 8), np.float32)
    f(src, cache)
    np.testing.assert_array_equal(cache, src)

    @pl.jit
    def g(src: pl.Tensor, cache: pl.In[pl.Tensor]):  # an explicit In stays refused
        cache = _fill_cache(src, cache)
        return cache

    with pytest.raises(pypto.UserError, match="parameter 'cache' is written but its direction is In"):
        g(src, np.zeros((8, 8), np.float32))


def test_an_out_parameter_never_written_is_a_partial_codegen_error():
    @pl.jit
    def f(x: pl.Tensor, result: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            result = pl.mul(x, 2.0)  # noqa: F841 - rebinds the name; the parameter stays unwritten
        return x

    with pytest.raises(PartialCodegenError, match="pl.Out parameter 'result' is never written"):
        f(np.zeros(64, np.float32), np.zeros(64, np.float32))


def test_tensor_spec_makes_the_tensors_it_describes():
    assert torch.equal(TensorSpec("a", [2, 3], torch.float32).create_tensor(), torch.zeros(2, 3))
    assert torch.equal(TensorSpec("a", [2], torch.int32, init_value=7).create_tensor(),
                       torch.tensor([7, 7], dtype=torch.int32))
    r = TensorSpec("a", [4, 4], torch.bfloat16, init_value=torch.randn).create_tensor()
    assert r.dtype == torch.bfloat16 and r.shape == (4, 4)
    assert torch.equal(TensorSpec("a", [2], torch.int64, init_value=lambda: [1, 2]).create_tensor(),
                       torch.tensor([1, 2]))
    with pytest.raises(TypeError, match="init_value"):
        TensorSpec("a", [2], torch.int64, init_value="x").create_tensor()


# --- HOST SubWorker callbacks --------------------------------------------------------------------

@pl.program
class InspectProgram:
    @pl.function(type=pl.FunctionType.InCore)
    def tile_add(self, a: pl.Tensor[[32, 32], pl.FP32], b: pl.Tensor[[32, 32], pl.FP32],
                 f: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
        return pl.store(pl.add(pl.load(a, [0, 0], [32, 32]), pl.load(b, [0, 0], [32, 32])), [0, 0], f)

    @pl.function(type=pl.FunctionType.Orchestration)
    def chip_orch(self, a: pl.Tensor[[32, 32], pl.FP32], b: pl.Tensor[[32, 32], pl.FP32],
                  f: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
        return self.tile_add(a, b, f)

    @pl.function(level=pl.Level.HOST, role=pl.Role.SubWorker)
    def inspect(f: pl.Tensor[[32, 32], pl.FP32]):
        ...

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host_orch(self, a: pl.Tensor[[32, 32], pl.FP32], b: pl.Tensor[[32, 32], pl.FP32],
                  f: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
        out = self.chip_orch(a, b, f)
        self.inspect(out)
        return out


def test_a_host_subworker_is_bound_at_prepare_and_sees_the_results():
    from pypto.runtime.distributed_runner import _tensor_from_continuous

    assert InspectProgram.get_function("inspect").requires_runtime_binding
    compiled = ir.compile(InspectProgram, platform="a2a3sim", distributed_config=DistributedConfig(device_ids=[0]))
    a = torch.full((32, 32), 2.0)
    b = torch.arange(32 * 32, dtype=torch.float32).reshape(32, 32)
    f = torch.zeros(32, 32)
    seen = []

    def inspect(args):
        t = _tensor_from_continuous(args[0])
        seen.append(t.clone())
        t.mul_(10)  # a SubWorker's write reaches the caller's tensor

    with compiled.prepare(callbacks={"inspect": inspect}) as rt:
        rt(a, b, f)
    assert len(seen) == 1
    np.testing.assert_array_equal(seen[0].numpy(), (a + b).numpy())
    np.testing.assert_array_equal(f.numpy(), 10 * (a + b).numpy())
    with pytest.raises(ValueError, match=r"SubWorker\(s\) \['inspect'\] have no implementation"):
        compiled.prepare()
    with pytest.raises(ValueError, match=r"no HOST SubWorker function is named \['other'\]"):
        compiled.prepare(callbacks={"inspect": inspect, "other": inspect})


def test_a_call_with_upstreams_printed_attrs_runs_as_the_plain_call():
    @pl.program
    class WithAttrs:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]
              ) -> pl.Tensor[[16, 16], pl.FP32]:
            return pl.store(pl.muls(pl.load(x, [0, 0], [16, 16]), 2.0), [0, 0], out)

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]
                 ) -> pl.Tensor[[16, 16], pl.FP32]:
            return self.k(x, out, attrs={"arg_directions": [pl.adir.input, pl.adir.output_existing]})

    x = np.random.default_rng(9).standard_normal((16, 16)).astype(np.float32)
    out = np.zeros_like(x)
    run(WithAttrs, x, out)
    np.testing.assert_array_equal(out, 2 * x)
