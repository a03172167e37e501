"""The rest of hw-native-sys pypto's ``pypto.language.__all__`` (pypto.language._names_extra and
the submodules array, system, prefetch, parser, optimizations, arg_direction): manual task
dependencies run with data-derived order (upstream's phase-fence programs, run and checked
against numpy), pl.while_ / pl.cond, pl.split_aiv, the gather / scatter-update ops, and the names
that are UserErrors here."""

import ast
import os
import subprocess

import numpy as np
import pypto
import pypto.language as pl
import pytest
from pypto import ir

F32 = np.float32
UPSTREAM = "/work/.mirror/hw-native-sys+pypto/repo"

# The names of upstream's pypto.language.__all__ this module set adds.
ADDED = [
    "JITFunction", "inline", "InlineFunction", "parser", "Array", "Tuple", "DynVar", "IntLike", "RUNTIME",
    "while_", "cond", "split_aiv", "optimizations", "adir", "array", "prefetch", "system", "gatherb", "mgather",
    "mscatter", "matmul_mx", "matmul_mx_acc", "matmul_mx_bias", "AUTO", "aiv_shard", "aic_gather",
    "reserve_buffer", "import_peer_buffer", "gather_row", "scatter_update", "dim", "ScopeMode", "scope",
    "manual_scope", "submit", "spmd_submit", "no_dep", "dump_tag", "paged_gather", "random", "create_l1",
    "get_subblock_idx", "ForKind", "MemRef", "Mem", "MemRefType", "PipeType", "Ptr", "PrefetchAsyncContext",
    "AsyncEvent", "AsyncSession", "PtrType", "TileView", "MX_A_ZZ", "MX_B_NN", "TASK_ID", "TaskId",
]


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


# --- the names ----------------------------------------------------------------------------------------


def test_added_names_are_exported():
    missing = [n for n in ADDED if not hasattr(pl, n)]
    assert missing == []
    assert set(ADDED) <= set(pl.__all__)


@pytest.mark.skipif(not os.path.isdir(UPSTREAM), reason="no hw-native-sys pypto mirror")
def test_every_upstream_name_is_here():
    src = subprocess.check_output(["git", "-C", UPSTREAM, "show", "HEAD:python/pypto/language/__init__.py"]).decode()
    tree = ast.parse(src)
    upstream = next(n.value for n in tree.body if isinstance(n, ast.Assign)
                    and getattr(n.targets[0], "id", None) == "__all__")
    names = [e.value for e in upstream.elts]
    assert len(names) == 241
    assert [n for n in names if n not in pl.__all__] == []
    assert [n for n in names if not hasattr(pl, n)] == []


def test_aliases_and_enums():
    assert pl.dim is pl.tensor.dim
    assert pl.Mem is pl.MemorySpace and pl.Mem.Vec is pl.MemorySpace.Vec
    assert pl.Ptr is pl.PtrType and pl.PtrType.get() is pl.PtrType.get()
    assert [m.name for m in pl.ForKind] == ["Sequential", "Parallel", "Unroll", "Pipeline"]
    assert [m.name for m in pl.PipeType] == ["MTE1", "MTE2", "MTE3", "M", "V", "S", "FIX", "ALL"]
    assert [m.name for m in pl.ScopeMode] == ["AUTO", "MANUAL"] and pl.ScopeMode.MANUAL.value == 1
    assert pl.adir.input is pl.adir.ArgDirection.Input and pl.adir.NAME_TO_DIRECTION["no_dep"] is pl.adir.no_dep
    assert pl.AUTO == -1 and pl.system.AUTO == -1
    assert pl.optimizations.split is pl.split and pl.optimizations.cross_core_slot is pl.cross_core_slot
    assert pl.parser.parse is pl.parse and pl.parser.program is pl.program and pl.parser.inline is pl.inline
    assert isinstance(pl.dynamic("N"), pl.DynVar) and not isinstance(3, pl.DynVar)
    with pytest.raises(ValueError):
        pl.DynVar("not a name")
    assert repr(pl.Tuple[pl.Tensor[[4], pl.FP32], pl.Scalar[pl.INT32]]).startswith("pl.Tuple[")
    assert repr(pl.Array[4, pl.INT32]) == "pl.Array[4, " + repr(pl.INT32) + "]"
    assert pl.TaskId.dtype is pl.TASK_ID
    assert isinstance(pl.MemRef(slots=2)[1], pl.MemRef)
    assert pl.TileView(valid_shape=[4, 4]).valid_shape == [4, 4]
    # no_dep / dump_tag hand their tensor back
    marker = object()
    assert pl.no_dep(marker) is marker and pl.dump_tag(marker) is marker


def test_jit_and_inline_function_classes():
    @pl.jit
    def f(a: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(twice(pl.load(a, [0, 0], [16, 16])), [0, 0], out)
        return out

    @pl.inline
    def twice(t):
        return pl.add(t, t)

    assert isinstance(f, pl.JITFunction)
    assert isinstance(twice, pl.InlineFunction)
    a = _rng().standard_normal((16, 16)).astype(F32)
    out = np.zeros_like(a)
    f(a, out)
    np.testing.assert_allclose(out, a + a, rtol=1e-6)


def test_dynvar_in_annotations():
    M = pl.DynVar("M")

    @pl.jit
    def f(a: pl.Tensor[[M, 32], pl.FP32], out: pl.Out[pl.Tensor[[M, 32], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(pl.dim(a, 0) // 16):
                pl.store(pl.exp(pl.load(a, [i * 16, 0], [16, 32])), [i * 16, 0], out)
        return out

    for rows in (32, 64):
        a = _rng(rows).standard_normal((rows, 32)).astype(F32)
        out = np.zeros_like(a)
        f(a, out)
        np.testing.assert_allclose(out, np.exp(a), rtol=1e-5)


# --- manual dependencies: upstream's phase-fence programs ---------------------------------------------------

TILE_M, BIG_N = 32, 32


def _phase_fence(branches: int, dummy: bool):
    """Upstream's examples/utils/phase_fence_dep_compression.py programs: four flattened stages of
    `branches` stripes; each stage depends on the previous stage's task ids (directly, or through
    a pl.system.task_dummy barrier)."""
    big_m, big_n, tile_m = 4 * branches * TILE_M, BIG_N, TILE_M

    @pl.program
    class PhaseFence:
        @pl.function(type=pl.FunctionType.InCore)
        def kernel_stripe(self, data: pl.Tensor[[big_m, big_n], pl.FP32], row_offset: pl.Scalar[pl.INDEX],
                          bias: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor[[big_m, big_n], pl.FP32]]
                          ) -> pl.Tensor[[big_m, big_n], pl.FP32]:
            tile: pl.Tile[[tile_m, big_n], pl.FP32] = pl.load(data, [row_offset, 0], [tile_m, big_n])
            result: pl.Tile[[tile_m, big_n], pl.FP32] = pl.add(tile, bias)
            ret: pl.Tensor[[big_m, big_n], pl.FP32] = pl.store(result, [row_offset, 0], out)
            return ret

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, data: pl.Tensor[[big_m, big_n], pl.FP32],
                 out: pl.Out[pl.Tensor[[big_m, big_n], pl.FP32]]) -> pl.Tensor[[big_m, big_n], pl.FP32]:
            with pl.manual_scope():
                tids = pl.array.create(branches, pl.TASK_ID)
                for a_phase, (tids_a,) in pl.range(2, init_values=(tids,)):
                    tids_next = pl.array.create(branches, pl.TASK_ID)
                    deps = pl.system.task_dummy(deps=[tids_a]) if dummy else tids_a
                    for branch in pl.parallel(branches):
                        row: pl.Scalar[pl.INDEX] = (a_phase * branches + branch) * tile_m
                        out, tid = pl.submit(self.kernel_stripe, data, row, 1.0, out, deps=[deps])
                        tids_next[branch] = tid
                    tids = pl.yield_(tids_next)
                for b_phase, (tids_b,) in pl.range(2, init_values=(tids,)):
                    tids_next = pl.array.create(branches, pl.TASK_ID)
                    deps = pl.system.task_dummy(deps=[tids_b]) if dummy else tids_b
                    for branch in pl.parallel(branches):
                        row: pl.Scalar[pl.INDEX] = ((2 + b_phase) * branches + branch) * tile_m
                        out, tid = pl.submit(self.kernel_stripe, data, row, 1.0, out, deps=[deps])
                        tids_next[branch] = tid
                    tids = pl.yield_(tids_next)
            return out

    return PhaseFence, (big_m, big_n)


@pytest.mark.parametrize("dummy", [False, True], ids=["array_deps", "task_dummy"])
@pytest.mark.parametrize("branches", [2, 4])
def test_phase_fence_programs_run(tmp_path, dummy, branches):
    prog, shape = _phase_fence(branches, dummy)
    assert set(prog.functions) == {"kernel_stripe", "main"}
    compiled = ir.compile(prog, output_dir=str(tmp_path))
    data = _rng(branches).standard_normal(shape).astype(F32)
    out = np.full(shape, -7.0, F32)
    compiled(data, out)
    # every stripe of TILE_M rows: data + bias (1.0); the four stages cover all rows
    for s in range(4 * branches):
        np.testing.assert_array_equal(out[s * TILE_M:(s + 1) * TILE_M], data[s * TILE_M:(s + 1) * TILE_M] + F32(1.0))


def test_submit_returns_outputs_and_task_id():
    seen = []

    @pl.jit.incore
    def two(a: pl.Tensor[[32, 32], pl.FP32], x: pl.Out[pl.Tensor[[32, 32], pl.FP32]],
            y: pl.Out[pl.Tensor[[32, 32], pl.FP32]]):
        t = pl.load(a, [0, 0], [32, 32])
        pl.store(pl.exp(t), [0, 0], x)
        pl.store(pl.neg(t), [0, 0], y)
        return x, y

    @pl.jit
    def f(a: pl.Tensor[[32, 32], pl.FP32], x: pl.Out[pl.Tensor[[32, 32], pl.FP32]],
          y: pl.Out[pl.Tensor[[32, 32], pl.FP32]]):
        with pl.scope(mode=pl.ScopeMode.MANUAL):
            (x, y), tid = pl.submit(two, a, x, y, deps=[None, pl.system.task_invalid()], dumps=[a],
                                    allow_early_resolve=True)
            barrier = pl.system.task_dummy(deps=[tid, None])
            seen.extend([tid, barrier])
        return x, y

    a = _rng(3).standard_normal((32, 32)).astype(F32)
    x, y = np.zeros_like(a), np.zeros_like(a)
    f(a, x, y)
    np.testing.assert_allclose(x, np.exp(a), rtol=1e-5)
    np.testing.assert_array_equal(y, -a)
    from pypto.language._names_extra import TaskIdValue
    assert len(seen) == 2 and all(isinstance(t, TaskIdValue) for t in seen) and seen[0].id != seen[1].id


def test_spmd_submit_runs_blocks():
    @pl.jit.incore
    def blk(a: pl.Tensor[[64, 32], pl.FP32], out: pl.Out[pl.Tensor[[64, 32], pl.FP32]]):
        i = pl.tile.get_block_idx()
        pl.store(pl.muls(pl.load(a, [i * 16, 0], [16, 32]), 3.0), [i * 16, 0], out)
        return out

    @pl.jit
    def f(a: pl.Tensor[[64, 32], pl.FP32], out: pl.Out[pl.Tensor[[64, 32], pl.FP32]]):
        with pl.manual_scope():
            out, _tid = pl.spmd_submit(blk, a, out, core_num=4)
        return out

    a = _rng(4).standard_normal((64, 32)).astype(F32)
    out = np.zeros_like(a)
    f(a, out)
    np.testing.assert_allclose(out, a * 3.0, rtol=1e-6)


def _kernel_and_entry(body):
    @pl.jit.incore
    def k(a: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
        pl.store(pl.load(a, [0, 0], [16, 16]), [0, 0], out)
        return out

    @pl.jit
    def f(a: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
        body(k, a, out)
        return out

    return f


@pytest.mark.parametrize("body, message", [
    (lambda k, a, out: pl.submit(k, a, out, deps=[3]), "deps takes task ids"),
    (lambda k, a, out: pl.submit(k, a, out, deps=pl.system.task_invalid()), "deps must be a list"),
    (lambda k, a, out: pl.submit(k, a, out, predicate=True), "predicate="),
    (lambda k, a, out: pl.submit(lambda *x: x, a, out), "submits an in-core function"),
    (lambda k, a, out: pl.spmd_submit(k, a, out), "core_num"),
], ids=["bad_dep", "deps_not_list", "predicate", "not_kernel", "no_core_num"])
def test_submit_refusals(body, message):
    f = _kernel_and_entry(body)
    a = np.zeros((16, 16), F32)
    with pytest.raises(pypto.UserError, match=message):
        f(a, np.zeros_like(a))


def test_scope_nesting_rules():
    with pl.scope():
        with pl.scope(mode=pl.ScopeMode.AUTO):
            pass
    with pl.manual_scope():
        with pytest.raises(pypto.UserError, match="cannot be nested inside a manual scope"):
            with pl.manual_scope():
                pass
        with pytest.raises(pypto.UserError, match="AUTO scope"):
            with pl.scope():
                pass
    with pl.manual_scope():  # the stack unwound
        pass


# --- pl.array ---------------------------------------------------------------------------------------------------


def test_array_of_ints():
    arr = pl.array.create(4, pl.INT32)
    assert [arr[i] for i in range(4)] == [0, 0, 0, 0]
    arr[2] = 7
    arr2 = pl.array.update_element(arr, 0, 5)
    assert pl.array.get_element(arr2, 0) == 5 and arr[0] == 0 and arr2[2] == 7 and arr[-2] == 7
    with pytest.raises(pypto.UserError, match="out of range"):
        arr[4]
    with pytest.raises(pypto.UserError, match="integer dtype"):
        pl.array.create(4, pl.FP32)
    with pytest.raises(pypto.UserError, match="positive int"):
        pl.array.create(0, pl.INT32)
    with pytest.raises(pypto.UserError, match="annotation"):
        pl.Array[4, pl.INT32][0]


def test_array_runtime_index_refused_for_ints():
    @pl.jit
    def f(a: pl.Tensor[[64, 16], pl.FP32], out: pl.Out[pl.Tensor[[64, 16], pl.FP32]]):
        arr = pl.array.create(4, pl.INT32)
        for i in pl.parallel(4):
            arr[i] = 1
            with pl.at(level=pl.Level.CORE_GROUP):
                pl.store(pl.load(a, [i * 16, 0], [16, 16]), [i * 16, 0], out)
        return out

    a = np.zeros((64, 16), F32)
    with pytest.raises(pypto.UserError, match="known only when the program runs"):
        f(a, np.zeros_like(a))


# --- while loops ---------------------------------------------------------------------------------------------------


def test_while_with_trace_time_condition_is_unrolled():
    @pl.jit
    def f(a: pl.Tensor[[16, 32], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t0 = pl.load(a, [0, 0], [16, 32])
            for (k, t) in pl.while_(init_values=(0, t0)):
                pl.cond(k < 3)
                k_out, t_out = pl.yield_(k + 1, pl.muls(t, 2.0))
            pl.store(t_out, [0, 0], out)
        assert k_out == 3
        return out

    a = _rng(5).standard_normal((16, 32)).astype(F32)
    out = np.zeros_like(a)
    f(a, out)
    np.testing.assert_allclose(out, a * 8.0, rtol=1e-6)


def test_while_with_runtime_condition_is_refused():
    @pl.jit
    def f(n: pl.Tensor[[1], pl.INT32], a: pl.Tensor[[16, 32], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
        limit = pl.tensor.read(n, [0])
        for (k,) in pl.while_(init_values=(0,)):
            pl.cond(k < limit)
            _k2 = pl.yield_(k + 1)
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.load(a, [0, 0], [16, 32]), [0, 0], out)
        return out

    a = np.zeros((16, 32), F32)
    with pytest.raises(pypto.UserError, match=r"for \(k,\) in pl.while_\(init_values=\(0,\)\).*run-time while loop"):
        f(np.array([3], np.int32), a, np.zeros_like(a))


def test_while_requires_init_values_and_leading_cond():
    with pytest.raises(pypto.UserError, match="requires init_values"):
        pl.while_()

    @pl.jit
    def f(a: pl.Tensor[[16, 32], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
        for (k,) in pl.while_(init_values=(0,)):
            _k2 = k + 1
            pl.cond(k < 3)
        return out

    a = np.zeros((16, 32), F32)
    with pytest.raises(pypto.UserError, match="first statement of the loop body must be pl.cond"):
        f(a, np.zeros_like(a))


# --- AIV lanes ---------------------------------------------------------------------------------------------------


def test_split_aiv_none_runs_both_lanes():
    lanes = []

    @pl.jit
    def f(a: pl.Tensor[[128, 64], pl.FP32], out: pl.Out[pl.Tensor[[128, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.NONE):
                lanes.append((aiv_id, pl.get_subblock_idx()))
                base = aiv_id * 64
                t = pl.aiv_shard(pl.load(a, [base, 0], [64, 64]))
                pl.store(pl.aic_gather(pl.exp(t)), [base, 0], out)
        return out

    a = _rng(6).standard_normal((128, 64)).astype(F32)
    out = np.zeros_like(a)
    f(a, out)
    np.testing.assert_allclose(out, np.exp(a), rtol=1e-5)
    assert lanes == [(0, 0), (1, 1)]


@pytest.mark.parametrize("body, message", [
    (lambda a, out: list(pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN)), "data-parallel modes"),
    (lambda a, out: pl.get_subblock_idx(), "outside a pl.split_aiv region"),
    (lambda a, out: pl.aiv_shard(a), "inside a `for aiv_id in pl.split_aiv"),
], ids=["up_down", "subblock_outside", "shard_outside"])
def test_split_aiv_refusals(body, message):
    @pl.jit
    def f(a: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            body(a, out)
            pl.store(pl.load(a, [0, 0], [16, 16]), [0, 0], out)
        return out

    a = np.zeros((16, 16), F32)
    with pytest.raises(pypto.UserError, match=message):
        f(a, np.zeros_like(a))
    with pytest.raises(ValueError):
        pl.split_aiv(4, mode=pl.SplitMode.NONE)


# --- gather / scatter-update ops ---------------------------------------------------------------------------------


def test_scatter_update_matches_numpy():
    @pl.jit
    def f(cache: pl.InOut[pl.Tensor[[64, 32], pl.FP32]], idx: pl.Tensor[[2, 4], pl.INT32],
          src: pl.Tensor[[8, 32], pl.FP32]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.scatter_update(cache, -2, idx, src)
        return cache

    @pl.jit
    def g(cache: pl.InOut[pl.Tensor[[64, 32], pl.FP32]], idx: pl.Tensor[[2, 4], pl.INT32],
          src: pl.Tensor[[8, 32], pl.FP32]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.scatter_update(cache, idx, src, dim=-2)
        return cache

    rng = _rng(7)
    idx = rng.permutation(64)[:8].astype(np.int32).reshape(2, 4)
    src = rng.standard_normal((8, 32)).astype(F32)
    for fn in (f, g):
        cache = rng.standard_normal((64, 32)).astype(F32)
        want = cache.copy()
        want[idx.reshape(-1)] = src
        fn(cache, idx, src)
        np.testing.assert_array_equal(cache, want)


def test_gather_row_into_vec_and_transposed():
    @pl.jit
    def f(pool: pl.Tensor[[64, 32], pl.FP32], idx: pl.Tensor[[8], pl.INT32],
          out: pl.Out[pl.Tensor[[8, 32], pl.FP32]], out_t: pl.Out[pl.Tensor[[32, 8], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            acc = pl.full([8, 32], pl.FP32, 0.0)
            acc_t = pl.full([32, 8], pl.FP32, 0.0)
            for r in pl.unroll(8):
                src = pl.read(idx, [r])
                acc = pl.gather_row(acc, pool, [r, 0], [src, 0], [1, 32])
                acc_t = pl.gather_row(acc_t, pool, [0, r], [src, 0], [1, 32], transpose=True)
            pl.store(acc, [0, 0], out)
            pl.store(acc_t, [0, 0], out_t)
        return out, out_t

    rng = _rng(8)
    pool = rng.standard_normal((64, 32)).astype(F32)
    idx = rng.integers(0, 64, 8).astype(np.int32)
    out, out_t = np.zeros((8, 32), F32), np.zeros((32, 8), F32)
    f(pool, idx, out, out_t)
    np.testing.assert_array_equal(out, pool[idx])
    np.testing.assert_array_equal(out_t, pool[idx].T)


def test_create_l1_gather_row_feeds_matmul():
    @pl.jit
    def f(q: pl.Tensor[[16, 8], pl.FP32], pool: pl.Tensor[[64, 32], pl.FP32], idx: pl.Tensor[[8], pl.INT32],
          out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            kv = pl.create_l1([8, 32], pl.FP32)
            for r in pl.unroll(8):
                kv = pl.gather_row(kv, pool, [r, 0], [pl.read(idx, [r]), 0], [1, 32])
            qt = pl.load(q, [0, 0], [16, 8], target_memory=pl.MemorySpace.Mat)
            pl.store(pl.matmul(qt, kv), [0, 0], out)
        return out

    rng = _rng(9)
    q = rng.standard_normal((16, 8)).astype(F32)
    pool = rng.standard_normal((64, 32)).astype(F32)
    idx = rng.integers(0, 64, 8).astype(np.int32)
    out = np.zeros((16, 32), F32)
    f(q, pool, idx, out)
    np.testing.assert_allclose(out, q @ pool[idx], rtol=1e-4, atol=1e-5)


def test_paged_gather_matches_numpy():
    block_size = 4

    @pl.jit
    def f(pool: pl.Tensor[[32, 16], pl.FP32], idx: pl.Tensor[[6], pl.INT32], table: pl.Tensor[[8], pl.INT32],
          out: pl.Out[pl.Tensor[[8, 8], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            rows = pl.paged_gather(pool, idx, table, block_size, 8, 8, space=pl.MemorySpace.Vec, col_off=4)
            pl.store(rows, [0, 0], out)
        return out

    rng = _rng(10)
    pool = rng.standard_normal((32, 16)).astype(F32)
    table = rng.permutation(8).astype(np.int32)
    idx = rng.integers(0, 32, 6).astype(np.int32)
    out = np.full((8, 8), 5.0, F32)
    f(pool, idx, table, out)
    phys = table[idx // block_size] * block_size + idx % block_size
    want = np.zeros((8, 8), F32)
    want[:6] = pool[phys, 4:12]
    np.testing.assert_array_equal(out, want)


# --- prefetch ----------------------------------------------------------------------------------------------------


def test_prefetch_changes_no_values():
    @pl.jit
    def f(x: pl.Tensor[[1, 256], pl.FP32], out: pl.Out[pl.Tensor[[1, 256], pl.FP32]]):
        ctx = pl.prefetch.make_context()
        evt = pl.prefetch.async_prefetch(x, ctx)
        s = pl.prefetch.session(ctx)
        assert pl.prefetch.wait(evt, s) is True
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.exp(pl.load(x, [0, 0], [1, 256])), [0, 0], out)
        return out

    x = _rng(11).standard_normal((1, 256)).astype(F32)
    out = np.zeros_like(x)
    f(x, out)
    np.testing.assert_allclose(out, np.exp(x), rtol=1e-5)
    assert isinstance(pl.prefetch.make_context(), pl.PrefetchAsyncContext)


def test_prefetch_shape_checked():
    @pl.jit
    def f(x: pl.Tensor[[4, 64], pl.FP32], out: pl.Out[pl.Tensor[[4, 64], pl.FP32]]):
        pl.prefetch.async_prefetch(x, pl.prefetch.make_context())
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.load(x, [0, 0], [4, 64]), [0, 0], out)
        return out

    x = np.zeros((4, 64), F32)
    with pytest.raises(pypto.UserError, match=r"static shape \[N\]"):
        f(x, np.zeros_like(x))


# --- what is refused here ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("call, message", [
    (lambda: pl.random(1, 2, 0, 0, 0, 0, [16, 16]), "counter-based generator"),
    (lambda: pl.gatherb(None, None), "32-byte blocks"),
    (lambda: pl.mgather(None, None), "gather-load of a global tensor"),
    (lambda: pl.mscatter(None, None, None), "scatter-store"),
    (lambda: pl.matmul_mx(None, None, None, None), "MX block-scaled matmul"),
    (lambda: pl.matmul_mx_acc(None, None, None, None, None), "MX block-scaled matmul"),
    (lambda: pl.matmul_mx_bias(None, None, None, None, None), "MX block-scaled matmul"),
    (lambda: pl.reserve_buffer(name="buf", size=512), "local SRAM"),
    (lambda: pl.import_peer_buffer(name="buf", peer_func="peer"), "peer core"),
    (lambda: pl.system.syncall(), "synchronizes the chip's cores"),
    (lambda: pl.system.bar_v(), "synchronizes the chip's cores"),
    (lambda: pl.system.available_cluster_count(), "cluster count"),
    (lambda: pl.MemRef("base", 0, 512), "on-chip memory is chip-only"),
    (lambda: pl.RUNTIME + 1, "compile-time values"),
    (lambda: pl.cond(True), "first statement of a pl.while_"),
], ids=["random", "gatherb", "mgather", "mscatter", "matmul_mx", "matmul_mx_acc", "matmul_mx_bias",
        "reserve_buffer", "import_peer_buffer", "syncall", "bar_v", "cluster_count", "memref_address", "runtime",
        "cond_outside"])
def test_refused_names_raise_user_error_at_the_users_line(call, message):
    with pytest.raises(pypto.UserError, match=message) as info:
        call()
    assert os.path.basename(__file__) in str(info.value)


def test_memref_declaration_places_tiles_only():
    scratch = pl.MemRef(slots=2)

    @pl.jit
    def f(a: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t: pl.Tile[[16, 16], pl.FP32, scratch[0], pl.Mem.Vec] = pl.load(a, [0, 0], [16, 16])
            u: pl.Tile[[16, 16], pl.FP32, scratch[1], pl.Mem.Vec] = pl.add(t, 1.0)
            pl.store(u, [0, 0], out)
        return out

    a = _rng(12).standard_normal((16, 16)).astype(F32)
    out = np.zeros_like(a)
    f(a, out)
    np.testing.assert_array_equal(out, a + F32(1.0))
    with pytest.raises(pypto.UserError, match="out of range"):
        scratch[2]
