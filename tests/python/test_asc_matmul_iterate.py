"""pypto.asc's Matmul taken block by block, as PyAsc's matmul_leakyrelu tutorial does:
``with mm.iterate() as count:`` runs its body once per base block (in the tiling's traverse
order), ``get_tensor_c`` takes the block into UB or global memory, the host tiling's
``set_traverse`` / ``set_fix_split``; checked against numpy with integer-valued data (exact in
fp32), and the checked mode and the errors."""

import contextlib
import inspect

import numpy as np
import pytest

import pypto
import pypto.asc as asc
import pypto.asc.lib.host as host

FIRSTM, FIRSTN = host.MatrixTraverse.FIRSTM, host.MatrixTraverse.FIRSTN
WORKSPACE = np.zeros(64, np.uint8)


def _tiling(m, n, k, dim, split=(-1, -1, -1), traverse=None, bias=True):
    t = host.MultiCoreMatmulTiling(host.get_ascendc_platform())
    t.set_a_type(host.TPosition.GM, host.CubeFormat.ND, host.DataType.DT_FLOAT16, False)
    t.set_dim(dim)
    t.set_org_shape(m, n, k)
    t.set_shape(m, n, k)
    t.enable_bias(bias)
    if traverse is not None:
        t.set_traverse(traverse)
    if split != (-1, -1, -1):
        t.set_fix_split(*split)
    tiling = asc.adv.TCubeTiling()
    t.get_tiling(tiling)
    return tiling


def _data(m, k, n, seed=0):
    r = np.random.default_rng(seed)
    a = r.integers(-4, 5, (m, k)).astype(np.float16)
    b = r.integers(-4, 5, (k, n)).astype(np.float16)
    bias = r.integers(-8, 9, (1, n)).astype(np.float32)
    return a, b, bias, a.astype(np.float32) @ b.astype(np.float32) + bias


def _leaky(x, alpha):
    return np.where(x >= 0, x, x * np.float32(alpha))


@asc.jit
def core_region(tiling: asc.adv.TCubeTiling):
    """This vector core's block of C: (m index, n index, rows, cols) of its region."""
    idx = asc.get_block_idx()
    mb = tiling.m.ceildiv(tiling.single_core_m)
    mi, ni = idx % mb, idx // mb
    rows = min(int(tiling.single_core_m), tiling.m - mi * tiling.single_core_m)
    cols = min(int(tiling.single_core_n), tiling.n - ni * tiling.single_core_n)
    return mi, ni, rows, cols


def _matmul(mm_c_pos=asc.TPosition.VECCALC, bias=True):
    return asc.adv.Matmul(a=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, asc.float16),
                          b=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, asc.float16),
                          c=asc.adv.MatmulType(mm_c_pos, asc.CubeFormat.ND, asc.float32),
                          bias=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, asc.float32) if bias else None)


def make_leaky_kernel(sync="queue"):
    """The tutorial's kernel for any shape: each block into a VECOUT queue tensor (sequential
    write), leaky_relu, copied to its place in C (row by row, tails included). `sync` "queue"
    (enque / deque), "none" (nothing between the vector op and the copy-out), "direct" (the
    copy-out right after get_tensor_c, no vector op, no sync) or "fill" (the queue's, and a
    vector fill of the buffer just before get_tensor_c)."""

    @asc.jit
    def leaky_kernel(a: asc.GlobalAddress, b: asc.GlobalAddress, c: asc.GlobalAddress, bias: asc.GlobalAddress,
                     alpha: float, tiling: asc.adv.TCubeTiling, workspace: asc.GlobalAddress):
        mi, ni, rows, cols = core_region(tiling)
        a_g, b_g, c_g, bias_g = asc.GlobalTensor(), asc.GlobalTensor(), asc.GlobalTensor(), asc.GlobalTensor()
        if asc.get_block_idx() < tiling.used_core_num:
            a_g.set_global_buffer(a + mi * tiling.single_core_m * tiling.k_a)
            b_g.set_global_buffer(b + ni * tiling.single_core_n)
            c_g.set_global_buffer(c + mi * tiling.single_core_m * tiling.n + ni * tiling.single_core_n)
            bias_g.set_global_buffer(bias + ni * tiling.single_core_n)
        pipe = asc.TPipe()
        que = asc.TQue(asc.TPosition.VECOUT, 1)
        pipe.init_buffer(que=que, num=1, len=tiling.base_m * tiling.base_n * c.dtype.sizeof())
        mm = _matmul()
        asc.adv.register_matmul(pipe, workspace, mm, tiling)
        if asc.get_block_idx() < tiling.used_core_num:
            mm.set_tensor_a(a_g)
            mm.set_tensor_b(b_g)
            mm.set_bias(bias_g)
            mm.set_tail(rows, cols)
            round_m, round_n = -(-rows // tiling.base_m), -(-cols // tiling.base_n)
            c0 = asc.property(asc.DEFAULT_C0_SIZE)
            with mm.iterate() as count:
                t = que.alloc_tensor(asc.float32)
                if sync == "fill":
                    asc.duplicate(t, 0.0, tiling.base_m * tiling.base_n)
                mm.get_tensor_c(t, en_sequential_write=True)
                if sync != "direct":
                    asc.leaky_relu(t, t, alpha, count=tiling.base_m * tiling.base_n)
                if sync in ("queue", "fill"):
                    que.enque(t)
                    t = que.deque(asc.float32)
                if tiling.iterate_order == 0:
                    bi, bj = count % round_m, count // round_m
                else:
                    bi, bj = count // round_n, count % round_n
                vm = min(int(tiling.base_m), rows - bi * tiling.base_m)
                vn = min(int(tiling.base_n), cols - bj * tiling.base_n)
                params = asc.DataCopyParams(block_count=vm, block_len=vn * 4 // c0, src_stride=0,
                                            dst_stride=(tiling.n - vn) * 4 // c0)
                asc.data_copy(c_g[bi * tiling.base_m * tiling.n + bj * tiling.base_n:], t, repeat_params=params)
                que.free_tensor(t)
            mm.end()
        asc.pipe_barrier(asc.PipeID.PIPE_ALL)
    return leaky_kernel


LEAKY = make_leaky_kernel()

# (m, k, n, vector cores, set_fix_split): whole blocks (8 per core); tails in m and n with several
# blocks per core; the tutorial's shape; one core with 6 x 5 blocks.
SHAPES = [(256, 64, 256, 2, (64, 64, -1)), (200, 32, 144, 2, (48, 64, -1)), (1024, 256, 640, 2, (256, 128, -1)),
          (96, 48, 80, 1, (16, 16, 16))]


@pytest.mark.parametrize("traverse", [FIRSTM, FIRSTN], ids=["FIRSTM", "FIRSTN"])
@pytest.mark.parametrize("m,k,n,dim,split", SHAPES)
def test_iterate_get_tensor_c_into_ub_leaky_relu_and_copy_out_against_numpy(m, k, n, dim, split, traverse):
    tiling = _tiling(m, n, k, dim, split, traverse)
    assert (int(tiling.base_m), int(tiling.base_n)) == split[:2]
    assert int(tiling.iterate_order) == (0 if traverse is FIRSTM else 1)
    a, b, bias, ref = _data(m, k, n)
    c = np.full((m, n), -7.0, np.float32)
    LEAKY[-(-int(tiling.used_core_num) // 2)](a, b, c, bias, 0.25, tiling, WORKSPACE)
    np.testing.assert_array_equal(c, _leaky(ref, 0.25))


def test_the_traverse_order_is_the_order_of_the_blocks():
    # Each block into global memory contiguously at count * base_m * base_n: the order the body
    # sees the blocks in, FIRSTM (m index fastest) or FIRSTN.
    m, k, n = 96, 32, 64
    a, b, bias, ref = _data(m, k, n, 1)

    @asc.jit
    def order_kernel(a: asc.GlobalAddress, b: asc.GlobalAddress, bias: asc.GlobalAddress, out: asc.GlobalAddress,
                     tiling: asc.adv.TCubeTiling, workspace: asc.GlobalAddress):
        a_g, b_g, bias_g, out_g = asc.GlobalTensor(), asc.GlobalTensor(), asc.GlobalTensor(), asc.GlobalTensor()
        a_g.set_global_buffer(a)
        b_g.set_global_buffer(b)
        bias_g.set_global_buffer(bias)
        out_g.set_global_buffer(out)
        pipe = asc.TPipe()
        mm = _matmul(asc.TPosition.GM)
        asc.adv.register_matmul(pipe, workspace, mm, tiling)
        if asc.get_block_idx() == 0:
            mm.set_tensor_a(a_g)
            mm.set_tensor_b(b_g)
            mm.set_bias(bias_g)
            with mm.iterate() as count:
                mm.get_tensor_c(out_g[count * tiling.base_m * tiling.base_n:], en_sequential_write=True)
            mm.end()

    for traverse, blocks in ((FIRSTM, [(i, j) for j in range(2) for i in range(3)]),
                             (FIRSTN, [(i, j) for i in range(3) for j in range(2)])):
        tiling = _tiling(m, n, k, 1, (32, 32, -1), traverse)
        out = np.zeros((6, 32, 32), np.float32)
        assert asc.check(order_kernel[1], a, b, bias, out, tiling, WORKSPACE).clean
        for count, (i, j) in enumerate(blocks):
            np.testing.assert_array_equal(out[count], ref[i * 32:(i + 1) * 32, j * 32:(j + 1) * 32],
                                          err_msg=f"{traverse.name} block {count}")


@asc.jit(matmul_cube_only=True)
def gm_kernel(a: asc.GlobalAddress, b: asc.GlobalAddress, c: asc.GlobalAddress, tiling: asc.adv.TCubeTiling,
              workspace: asc.GlobalAddress, en_atomic: int, tail_m: int, tail_n: int):
    a_g, b_g, c_g = asc.GlobalTensor(), asc.GlobalTensor(), asc.GlobalTensor()
    a_g.set_global_buffer(a)
    b_g.set_global_buffer(b)
    c_g.set_global_buffer(c)
    pipe = asc.TPipe()
    mm = _matmul(asc.TPosition.GM, bias=False)
    asc.adv.register_matmul(pipe, workspace, mm, tiling)
    mm.set_tensor_a(a_g)
    mm.set_tensor_b(b_g)
    mm.set_tail(tail_m, tail_n)
    with mm.iterate():
        mm.get_tensor_c(c_g, en_atomic=en_atomic)
    mm.end()


@pytest.mark.parametrize("traverse", [FIRSTM, FIRSTN], ids=["FIRSTM", "FIRSTN"])
def test_get_tensor_c_into_global_memory_with_tails_and_atomic_add_on_a_cube_core(traverse):
    # One cube core, a 72 x 40 region in 32 x 32 blocks: the edge blocks hold their valid part
    # and nothing outside the region is written.
    m, k, n = 72, 48, 40
    a, b, _, _ = _data(m, k, n, 2)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    tiling = _tiling(m, n, k, 1, (32, 32, -1), traverse, bias=False)
    assert (int(tiling.single_core_m), int(tiling.single_core_n)) == (96, 64)
    c = np.zeros((m, n), np.float32)
    assert asc.check(gm_kernel[1], a, b, c, tiling, WORKSPACE, 0, m, n).clean
    np.testing.assert_array_equal(c, ref)
    gm_kernel[1](a, b, c, tiling, WORKSPACE, 1, m, n)  # en_atomic=1 adds
    np.testing.assert_array_equal(c, 2 * ref)
    c[:] = 5.0
    gm_kernel[1](a, b, c, tiling, WORKSPACE, 3, m, n)  # 3: the min
    np.testing.assert_array_equal(c, np.minimum(ref, 5.0))
    c[:] = -1.0
    gm_kernel[1](a, b, c, tiling, WORKSPACE, 0, 40, 24)  # a smaller tail: only that part
    expect = np.full((m, n), -1.0, np.float32)
    expect[:40, :24] = ref[:40, :24]
    np.testing.assert_array_equal(c, expect)


def test_get_tensor_c_into_ub_without_sequential_write_places_the_block_in_the_region():
    # Without en_sequential_write a block goes to its place in a [single_core_m, n] layout (row
    # stride the tiling's n): a UB tensor of the whole region is C after the loop.
    m, k, n = 48, 32, 64
    a, b, bias, ref = _data(m, k, n, 3)
    tiling = _tiling(m, n, k, 1, (16, 32, -1), FIRSTN)

    @asc.jit
    def place_kernel(a: asc.GlobalAddress, b: asc.GlobalAddress, c: asc.GlobalAddress, bias: asc.GlobalAddress,
                     tiling: asc.adv.TCubeTiling, workspace: asc.GlobalAddress):
        a_g, b_g, c_g, bias_g = asc.GlobalTensor(), asc.GlobalTensor(), asc.GlobalTensor(), asc.GlobalTensor()
        a_g.set_global_buffer(a)
        b_g.set_global_buffer(b)
        c_g.set_global_buffer(c)
        bias_g.set_global_buffer(bias)
        pipe = asc.TPipe()
        buf = asc.TBuf(asc.TPosition.VECCALC)
        pipe.init_buffer(buf, tiling.m * tiling.n * 4)
        mm = _matmul(asc.TPosition.VECIN)
        asc.adv.register_matmul(pipe, workspace, mm, tiling)
        if asc.get_block_idx() == 0:
            mm.set_tensor_a(a_g)
            mm.set_tensor_b(b_g)
            mm.set_bias(bias_g)
            whole = buf.get(asc.float32)
            with mm.iterate():
                mm.get_tensor_c(whole)
            mm.end()
            asc.set_flag(asc.HardEvent.MTE2_MTE3, 0)
            asc.wait_flag(asc.HardEvent.MTE2_MTE3, 0)
            asc.data_copy(c_g, whole, count=tiling.m * tiling.n)

    c = np.zeros((m, n), np.float32)
    assert asc.check(place_kernel[1], a, b, c, bias, tiling, WORKSPACE).clean
    np.testing.assert_array_equal(c, ref)


def test_a_tail_block_in_ub_is_its_valid_rows_and_columns_contiguous():
    # m = 40, n = 24 in 32 x 16 blocks (FIRSTM): blocks [32, 16], [8, 16], [32, 8], [8, 8], each
    # copied out whole from UB to out[count]: its first rows * cols elements are the block.
    m, k, n = 40, 16, 24
    a, b, bias, ref = _data(m, k, n, 4)
    tiling = _tiling(m, n, k, 1, (32, 16, -1), FIRSTM)

    @asc.jit
    def tail_kernel(a: asc.GlobalAddress, b: asc.GlobalAddress, bias: asc.GlobalAddress, out: asc.GlobalAddress,
                    tiling: asc.adv.TCubeTiling, workspace: asc.GlobalAddress):
        a_g, b_g, bias_g, out_g = asc.GlobalTensor(), asc.GlobalTensor(), asc.GlobalTensor(), asc.GlobalTensor()
        a_g.set_global_buffer(a)
        b_g.set_global_buffer(b)
        bias_g.set_global_buffer(bias)
        out_g.set_global_buffer(out)
        pipe = asc.TPipe()
        que = asc.TQue(asc.TPosition.VECOUT, 2)
        pipe.init_buffer(que, 2, tiling.base_m * tiling.base_n * 4)
        mm = _matmul(asc.TPosition.VECCALC)
        asc.adv.register_matmul(pipe, workspace, mm, tiling)
        if asc.get_block_idx() == 0:
            mm.set_tensor_a(a_g)
            mm.set_tensor_b(b_g)
            mm.set_bias(bias_g)
            mm.set_tail(tiling.m, tiling.n)
            with mm.iterate() as count:
                t = que.alloc_tensor(asc.float32)
                asc.duplicate(t, 0.0, tiling.base_m * tiling.base_n)
                asc.set_flag(asc.HardEvent.V_MTE2, 0)  # the block's copy into UB (MTE2) after the fill
                asc.wait_flag(asc.HardEvent.V_MTE2, 0)
                mm.get_tensor_c(t, en_sequential_write=True)
                que.enque(t)
                t = que.deque(asc.float32)
                asc.data_copy(out_g[count * tiling.base_m * tiling.base_n:], t, tiling.base_m * tiling.base_n)
                que.free_tensor(t)
            mm.end()

    out = np.full((4, 32 * 16), np.nan, np.float32)
    assert asc.check(tail_kernel[1], a, b, bias, out, tiling, WORKSPACE).clean
    for count, (i, j) in enumerate([(0, 0), (1, 0), (0, 1), (1, 1)]):
        block = ref[i * 32:(i + 1) * 32, j * 16:(j + 1) * 16]
        vm, vn = block.shape
        np.testing.assert_array_equal(out[count, :vm * vn].reshape(vm, vn), block)
        np.testing.assert_array_equal(out[count, vm * vn:], 0.0)  # the rest of the buffer is untouched


def test_the_tutorial_kernel_is_clean_in_checked_mode_and_the_missing_syncs_are_races():
    m, k, n = 256, 64, 256
    tiling = _tiling(m, n, k, 2, (64, 64, -1), FIRSTM)
    a, b, bias, ref = _data(m, k, n, 5)
    c = np.zeros((m, n), np.float32)
    report = asc.check(LEAKY[1], a, b, c, bias, 0.5, tiling, WORKSPACE)
    assert report.clean, str(report)
    np.testing.assert_array_equal(c, _leaky(ref, 0.5))
    # leaky_relu (V) then the copy-out (MTE3) with no enque / deque between them
    report = asc.check(make_leaky_kernel("none")[1], a, b, c, bias, 0.5, tiling, WORKSPACE)
    assert any(r.first.op == "leaky_relu" and r.second.op == "data_copy" for r in report.races), str(report)
    # the copy-out right after get_tensor_c: its copy into UB (MTE2) is not ordered before MTE3
    report = asc.check(make_leaky_kernel("direct")[1], a, b, c, bias, 0.5, tiling, WORKSPACE)
    assert any(r.first.op == "Matmul.get_tensor_c" and r.second.op == "data_copy" for r in report.races), str(report)
    assert all(r.event.endswith("MTE2_MTE3") for r in report.races)
    # a vector write into the buffer just before get_tensor_c copies the block into it (MTE2)
    report = asc.check(make_leaky_kernel("fill")[1], a, b, c, bias, 0.5, tiling, WORKSPACE)
    assert [(r.first.op, r.second.op) for r in report.races] == [("duplicate", "Matmul.get_tensor_c")], str(report)
    np.testing.assert_array_equal(c, _leaky(ref, 0.5))


def test_fixed_split_tilings_use_the_base_sizes_and_whole_blocks_per_core():
    for m, n, k, dim, split in [(1024, 640, 256, 2, (256, 128, -1)), (300, 200, 64, 8, (64, 32, 32)),
                                (4096, 4096, 512, 48, (128, 256, -1)), (500, 70, 16, 3, (48, -1, -1))]:
        t = _tiling(m, n, k, dim, split, FIRSTN)
        bm, bn, bk = int(t.base_m), int(t.base_n), int(t.base_k)
        assert bm == split[0] and (split[1] < 0 or bn == split[1]) and (split[2] < 0 or bk == split[2])
        assert int(t.single_core_m) % bm == 0 and (split[1] < 0 or int(t.single_core_n) % bn == 0)
        assert bm * bn * 4 <= 128 * 1024
        used = -(-m // int(t.single_core_m)) * -(-n // int(t.single_core_n))
        assert 0 < used == int(t.used_core_num) <= dim
        assert int(t.iterate_order) == 1
    # the tutorial's own numbers: two cores of 512 x 640, 2 x 5 blocks each
    t = _tiling(1024, 640, 256, 2, (256, 128, -1), FIRSTM)
    assert [int(getattr(t, f)) for f in ("used_core_num", "single_core_m", "single_core_n", "base_m", "base_n",
                                          "iterate_order")] == [2, 512, 640, 256, 128, 0]


def test_tilings_without_a_fixed_split_are_unchanged():
    # (m, n, k, dim) -> used_core_num, single_core_m / n, base_m / n / k, as before set_fix_split existed
    for (m, n, k, dim), expect in [((256, 512, 64, 48), (48, 48, 64, 48, 64, 64)),
                                   ((100, 300, 72, 24), (21, 48, 48, 48, 48, 64)),
                                   ((1024, 640, 256, 2), (2, 512, 640, 128, 256, 64)),
                                   ((4096, 4096, 1024, 24), (24, 1024, 688, 128, 256, 64)),
                                   ((33, 17, 5, 7), (6, 16, 16, 16, 16, 5))]:
        for traverse in (None, FIRSTM):
            t = _tiling(m, n, k, dim, traverse=traverse)
            got = tuple(int(getattr(t, f)) for f in ("used_core_num", "single_core_m", "single_core_n", "base_m",
                                                     "base_n", "base_k"))
            assert got == expect and int(t.iterate_order) == 0


def test_host_tiling_errors():
    t = host.MultiCoreMatmulTiling(host.get_ascendc_platform())
    with pytest.raises(pypto.UserError, match="positive multiple of 16"):
        t.set_fix_split(100, -1, -1)
    with pytest.raises(pypto.UserError, match="more than L0C"):
        t.set_fix_split(512, 256, -1)
    with pytest.raises(pypto.UserError, match="MatrixTraverse"):
        t.set_traverse(7)
    assert t.set_fix_split(256, 128, -1) == 0 and t.set_traverse(FIRSTN) == 0
    t.set_shape(100, 640, 64)
    with pytest.raises(pypto.UserError, match="base_m = 256 is more than M = 100"):
        t.get_tiling(asc.adv.TCubeTiling())


def test_init_buffer_takes_pyasc_len_keyword_and_length():
    @asc.jit
    def copy_kernel(x: asc.GlobalAddress, y: asc.GlobalAddress, n: int, how: str):
        pipe = asc.TPipe()
        que = asc.TQue(asc.TPosition.VECIN, 1)
        buf = asc.TBuf(asc.TPosition.VECCALC)
        if how == "len":
            pipe.init_buffer(que=que, num=1, len=n * 4)
            pipe.init_buffer(buf=buf, num=64)
        elif how == "length":
            pipe.init_buffer(que, 1, length=n * 4)
            pipe.init_buffer(buf, 64)
        else:
            pipe.init_buffer(que=que, num=1, len=n * 4, length=n * 8)
        xg, yg = asc.GlobalTensor(), asc.GlobalTensor()
        xg.set_global_buffer(x)
        yg.set_global_buffer(y)
        t = que.alloc_tensor(asc.float32)
        assert t.get_size() == n and buf.get(asc.float32).get_size() == 16
        asc.data_copy(t, xg, count=n)
        que.enque(t)
        t = que.deque(asc.float32)
        asc.set_flag(asc.HardEvent.MTE2_MTE3, 0)
        asc.wait_flag(asc.HardEvent.MTE2_MTE3, 0)
        asc.data_copy(yg, t, n)

    x = np.arange(64, dtype=np.float32)
    for how in ("len", "length"):
        y = np.zeros_like(x)
        copy_kernel[1](x, y, 64, how)
        np.testing.assert_array_equal(y, x)
    with pytest.raises(pypto.UserError, match="disagree"):
        copy_kernel[1](x, np.zeros_like(x), 64, "both")


def test_property_reads_the_chip_constants():
    @asc.jit
    def prop_kernel(out: asc.GlobalAddress):
        g = asc.GlobalTensor()
        g.set_global_buffer(out)
        for i, p in enumerate((asc.DEFAULT_C0_SIZE, asc.ONE_BLK_SIZE, asc.TOTAL_L1_SIZE, asc.TOTAL_L0C_SIZE)):
            g.set_value(i, asc.property(p))

    out = np.zeros(4, np.int64)
    prop_kernel[1](out)
    np.testing.assert_array_equal(out, [32, 32, 512 * 1024, 128 * 1024])
    with pytest.raises(pypto.UserError, match="@asc.jit kernel"):
        asc.property(asc.DEFAULT_C0_SIZE)


def _line_of(fn, marker):
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, ln in enumerate(lines) if marker in ln)


def make_error_kernel(case):
    @asc.jit
    def error_kernel(a: asc.GlobalAddress, b: asc.GlobalAddress, c: asc.GlobalAddress, tiling: asc.adv.TCubeTiling,
                     workspace: asc.GlobalAddress):
        a_g, b_g, c_g = asc.GlobalTensor(), asc.GlobalTensor(), asc.GlobalTensor()
        a_g.set_global_buffer(a)
        b_g.set_global_buffer(b)
        c_g.set_global_buffer(c)
        pipe = asc.TPipe()
        que = asc.TQue(asc.TPosition.VECOUT, 1)
        pipe.init_buffer(que=que, num=1, len=tiling.base_m * tiling.base_n * 4)
        mm = _matmul(asc.TPosition.GM if case == "c in gm" else asc.TPosition.VECCALC, bias=False)
        asc.adv.register_matmul(pipe, workspace, mm, tiling)
        if asc.get_block_idx() == 0:
            mm.set_tensor_a(a_g)
            mm.set_tensor_b(b_g)
            if case == "outside":
                mm.get_tensor_c(c_g)  # marker: outside
            with mm.iterate() as count:  # marker: iterate
                if case == "dtype":
                    t = que.alloc_tensor(asc.int32)
                    mm.get_tensor_c(t)  # marker: dtype
                elif case == "c in gm":
                    t = que.alloc_tensor(asc.float32)
                    mm.get_tensor_c(t)  # marker: c in gm
                elif case == "raise":
                    count = count // 0  # marker: raise
                else:
                    mm.get_tensor_c(c_g)
            mm.end()
    return error_kernel


@pytest.mark.parametrize("case,message", [
    ("outside", "no base block to take"),
    ("dtype", "a asc.int32 tensor for C of asc.float32"),
    ("c in gm", "needs C's MatmulType in UB"),
    ("overrun", "leave the argument"),
])
def test_iterate_errors_name_the_users_line(case, message):
    m, k, n = 64, 16, 64
    a, b, _, _ = _data(m, k, n)
    # "overrun": the tiling's region is 96 rows, A has 64 and no set_tail: an error, not garbage
    tiling = _tiling(96 if case == "overrun" else m, n, k, 1, (32, 32, -1), bias=False)
    kernel = make_error_kernel(case)
    with pytest.raises(pypto.UserError, match=message) as err:
        kernel[1](a, b, np.zeros((m, n), np.float32), tiling, WORKSPACE)
    marker = "iterate" if case == "overrun" else case
    assert f'{__file__}", line {_line_of(make_error_kernel, "marker: " + marker)}' in str(err.value)


def test_the_rewritten_body_keeps_its_lines():
    m, k, n = 64, 16, 64
    a, b, _, _ = _data(m, k, n)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    tiling = _tiling(m, n, k, 1, (32, 32, -1), bias=False)
    with pytest.raises(ZeroDivisionError) as err:
        make_error_kernel("raise")[1](a, b, np.zeros((m, n), np.float32), tiling, WORKSPACE)
    frame = err.traceback[-1]
    assert frame.path == __import__("pathlib").Path(__file__)
    assert frame.lineno + 1 == _line_of(make_error_kernel, "marker: raise")  # pytest's lineno is 0-based
    c = np.zeros((m, n), np.float32)
    make_error_kernel("all")[1](a, b, c, tiling, WORKSPACE)
    np.testing.assert_array_equal(c, ref)


def test_a_with_of_two_items_runs_the_iterate_loop_around_the_other():
    m, k, n = 64, 16, 96
    a, b, _, _ = _data(m, k, n, 6)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    tiling = _tiling(m, n, k, 1, (32, 32, -1), FIRSTN, bias=False)
    seen = []

    @asc.jit
    def two_items_kernel(a: asc.GlobalAddress, b: asc.GlobalAddress, c: asc.GlobalAddress,
                         tiling: asc.adv.TCubeTiling, workspace: asc.GlobalAddress):
        a_g, b_g, c_g = asc.GlobalTensor(), asc.GlobalTensor(), asc.GlobalTensor()
        a_g.set_global_buffer(a)
        b_g.set_global_buffer(b)
        c_g.set_global_buffer(c)
        pipe = asc.TPipe()
        mm = _matmul(asc.TPosition.GM, bias=False)
        asc.adv.register_matmul(pipe, workspace, mm, tiling)
        if asc.get_block_idx() == 0:
            mm.set_tensor_a(a_g)
            mm.set_tensor_b(b_g)
            with mm.iterate() as count, contextlib.nullcontext("entered") as other:
                seen.append((count, other))
                mm.get_tensor_c(c_g)
            mm.end()

    c = np.zeros((m, n), np.float32)
    two_items_kernel[1](a, b, c, tiling, WORKSPACE)
    np.testing.assert_array_equal(c, ref)
    assert seen == [(i, "entered") for i in range(6)]


def test_iterate_in_a_function_whose_source_cannot_be_read_is_a_clear_error():
    src = ("def no_source_kernel(a, b, tiling, workspace):\n"
           "    pipe = asc.TPipe()\n"
           "    mm = make()\n"
           "    asc.adv.register_matmul(pipe, workspace, mm, tiling)\n"
           "    with mm.iterate() as count:\n"
           "        pass\n")
    env = {"asc": asc, "make": lambda: _matmul(asc.TPosition.GM, bias=False)}
    exec(compile(src, "<no source>", "exec"), env)
    kernel = asc.jit(env["no_source_kernel"])
    tiling = _tiling(32, 32, 16, 1, bias=False)
    with pytest.raises(pypto.UserError, match="was not rewritten"):
        kernel[1](np.zeros((32, 16), np.float16), np.zeros((16, 32), np.float16), tiling, WORKSPACE)


def test_an_iterate_that_is_not_a_matmul_keeps_its_with():
    events = []

    class Ctx:
        def __enter__(self):
            events.append("enter")
            return 41

        def __exit__(self, *exc):
            events.append("exit")
            return False

    class Other:
        def iterate(self):
            return Ctx()

    @asc.jit
    def other_kernel(out: asc.GlobalAddress):
        g = asc.GlobalTensor()
        g.set_global_buffer(out)
        with Other().iterate() as value:
            events.append("body")
            g.set_value(0, value + 1)

    out = np.zeros(1, np.int32)
    other_kernel[1](out)
    assert events == ["enter", "body", "exit"] and out[0] == 42
