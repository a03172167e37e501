"""pypto.asc: PyAsc-style kernels on the CPU against numpy (count and repeat forms, queues,
reductions, compare / select, cast), and the checked mode: races it must find (missing wait,
wrong event, a buffer reused before its copy-out finished, a scalar read without V_S) and
correct kernels it must pass."""

import numpy as np
import pytest

import pypto
import pypto.asc as asc


def _rng(seed=0):
    return np.random.default_rng(seed)


def make_vadd(events=("MTE2_V", "V_MTE3", "MTE3_MTE2"), tile=128):
    ev = {e: getattr(asc.HardEvent, e) for e in events}

    @asc.jit
    def vadd(x: asc.GlobalAddress, y: asc.GlobalAddress, z: asc.GlobalAddress, block_length: int):
        offset = asc.get_block_idx() * block_length
        x_gm, y_gm, z_gm = asc.GlobalTensor(), asc.GlobalTensor(), asc.GlobalTensor()
        x_gm.set_global_buffer(x + offset, block_length)
        y_gm.set_global_buffer(y + offset, block_length)
        z_gm.set_global_buffer(z + offset, block_length)
        size = tile * 2 * x.dtype.sizeof()
        xl = asc.LocalTensor(x.dtype, asc.TPosition.VECIN, 0, 2 * tile)
        yl = asc.LocalTensor(x.dtype, asc.TPosition.VECIN, size, 2 * tile)
        zl = asc.LocalTensor(x.dtype, asc.TPosition.VECOUT, 2 * size, 2 * tile)
        for i in range(block_length // tile):
            b = i % 2
            asc.data_copy(xl[b * tile:], x_gm[i * tile:], tile)
            asc.data_copy(yl[b * tile:], y_gm[i * tile:], tile)
            for name in ("MTE2_V", "V_MTE2"):  # the right event, or (wrong) one in the other direction
                if name in ev:
                    asc.set_flag(ev[name], b)
                    asc.wait_flag(ev[name], b)
            asc.add(zl[b * tile:], xl[b * tile:], yl[b * tile:], tile)
            if "V_MTE3" in ev:
                asc.set_flag(ev["V_MTE3"], b)
                asc.wait_flag(ev["V_MTE3"], b)
            asc.data_copy(z_gm[i * tile:], zl[b * tile:], tile)
            if "MTE3_MTE2" in ev:
                asc.set_flag(ev["MTE3_MTE2"], b)
                asc.wait_flag(ev["MTE3_MTE2"], b)
    return vadd


@pytest.mark.parametrize("dtype,cores", [(np.float32, 8), (np.float16, 4), (np.int32, 2)])
def test_the_seed_vadd_against_numpy_and_clean_in_checked_mode(dtype, cores):
    n = cores * 1024
    r = _rng(1)
    x = (r.standard_normal(n) * 100).astype(dtype)
    y = (r.standard_normal(n) * 100).astype(dtype)
    z = np.zeros_like(x)
    make_vadd()[cores](x, y, z, n // cores)
    np.testing.assert_array_equal(z, x + y)
    assert asc.check(make_vadd()[cores], x, y, z, n // cores).clean


def test_torch_tensors_are_global_memory():
    torch = pytest.importorskip("torch")
    x, y = torch.rand(2048), torch.rand(2048)
    z = torch.zeros(2048)
    make_vadd()[2](x, y, z, 1024)
    assert torch.equal(z, x + y)


@pytest.mark.parametrize("missing,first,second,event", [
    ("MTE2_V", "data_copy on MTE2 (write)", "add on V (read)", "HardEvent.MTE2_V"),
    ("V_MTE3", "add on V (write)", "data_copy on MTE3 (read)", "HardEvent.V_MTE3"),
    ("MTE3_MTE2", "add on V (read)", "data_copy on MTE2 (write)", "HardEvent.V_MTE2"),
])
def test_a_missing_event_is_a_race_naming_both_instructions_and_the_event(missing, first, second, event):
    kernel = make_vadd(events=tuple(e for e in ("MTE2_V", "V_MTE3", "MTE3_MTE2") if e != missing))
    x = np.ones(1024, np.float32)
    z = np.zeros_like(x)
    report = asc.check(kernel[1], x, x, z, 1024)
    assert report.races, "the race must be found"
    text = str(report)
    assert first in text and second in text and event in text and "test_asc.py:" in text
    assert "block 0's UB bytes" in text
    with pytest.raises(pypto.UserError, match="data race"):
        asc.jit(kernel.fn, checked=True)[1](x, x, z, 1024)
    kernel[1](x, x, z, 1024)  # unchecked, the instructions run in program order: the sum is right
    np.testing.assert_array_equal(z, x + x)


def test_the_wrong_event_is_a_race():
    kernel = make_vadd(events=("V_MTE2", "V_MTE3", "MTE3_MTE2"))  # V_MTE2 where MTE2_V is needed
    x = np.ones(512, np.float32)
    report = asc.check(kernel[1], x, x, np.zeros_like(x), 512)
    assert any(r.event == "HardEvent.MTE2_V" for r in report.races)


def test_wait_without_set_is_reported():
    @asc.jit
    def k(x: asc.GlobalAddress):
        asc.wait_flag(asc.HardEvent.MTE2_V, 3)

    report = asc.check(k[1], np.zeros(8, np.float32))
    assert "wait_flag(HardEvent.MTE2_V, 3) with no set_flag" in str(report) and "waits for ever" in str(report)


BUFFER_NUM = 2


@asc.jit
def softmax_q(x: asc.GlobalAddress, z: asc.GlobalAddress, rows: int, cols: asc.ConstExpr[int], sync_s: bool = True):
    row0 = asc.get_block_idx() * rows
    x_gm, z_gm = asc.GlobalTensor(), asc.GlobalTensor()
    x_gm.set_global_buffer(x + row0 * cols, rows * cols)
    z_gm.set_global_buffer(z + row0 * cols, rows * cols)
    pipe = asc.TPipe()
    in_q, out_q = asc.TQue(asc.TPosition.VECIN, BUFFER_NUM), asc.TQue(asc.TPosition.VECOUT, BUFFER_NUM)
    work, stat = asc.TBuf(asc.TPosition.VECCALC), asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(in_q, BUFFER_NUM, cols * 4)
    pipe.init_buffer(out_q, BUFFER_NUM, cols * 4)
    pipe.init_buffer(work, cols * 4)
    pipe.init_buffer(stat, 64)
    for r in range(rows):
        xl = in_q.alloc_tensor(asc.float32)
        asc.data_copy(xl, x_gm[r * cols:], cols)
        in_q.enque(xl)
        xl = in_q.deque(asc.float32)
        zl = out_q.alloc_tensor(asc.float32)
        s = stat.get(asc.float32)
        asc.reduce_max(s, xl, work.get(asc.float32), cols)
        if sync_s:
            asc.set_flag(asc.HardEvent.V_S, 0)
            asc.wait_flag(asc.HardEvent.V_S, 0)
        m = s.get_value(0)
        asc.adds(zl, xl, -m, cols)
        asc.exp(zl, zl, cols)
        asc.reduce_sum(s, zl, work.get(asc.float32), cols)
        asc.set_flag(asc.HardEvent.V_S, 0)
        asc.wait_flag(asc.HardEvent.V_S, 0)
        asc.muls(zl, zl, 1.0 / s.get_value(0), cols)
        out_q.enque(zl)
        in_q.free_tensor(xl)
        zl = out_q.deque(asc.float32)
        asc.data_copy(z_gm[r * cols:], zl, cols)
        out_q.free_tensor(zl)


def test_softmax_with_queues_is_right_and_clean_and_a_missing_v_s_is_found():
    x = _rng(2).standard_normal((16, 256)).astype(np.float32)
    z = np.zeros_like(x)
    softmax_q[4](x, z, 4, 256)
    e = np.exp(x.astype(np.float64) - x.max(-1, keepdims=True))
    np.testing.assert_allclose(z, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)
    assert asc.check(softmax_q[4], x, z, 4, 256).clean
    report = asc.check(softmax_q[1], x, z, 16, 256, False)
    assert any("reduce_max on V (write)" in str(r) and "LocalTensor.get_value on S (read)" in str(r)
               and r.event == "HardEvent.V_S" for r in report.races)


def test_queue_misuse_is_a_clear_error():
    @asc.jit
    def empty_deque(x: asc.GlobalAddress):
        pipe = asc.TPipe()
        q = asc.TQue(asc.TPosition.VECIN, 1)
        pipe.init_buffer(q, 1, 256)
        q.deque(asc.float32)

    with pytest.raises(pypto.UserError, match=r"(?s)the VECIN queue is empty.*waits for ever.*q.deque"):
        empty_deque[1](np.zeros(8, np.float32))

    @asc.jit
    def too_many(x: asc.GlobalAddress):
        pipe = asc.TPipe()
        q = asc.TQue(asc.TPosition.VECIN, 2)
        pipe.init_buffer(q, 2, 256)
        q.alloc_tensor(asc.float32)
        q.alloc_tensor(asc.float32)
        q.alloc_tensor(asc.float32)

    with pytest.raises(pypto.UserError, match="all 2 buffer"):
        too_many[1](np.zeros(8, np.float32))

    @asc.jit
    def too_big(x: asc.GlobalAddress):
        pipe = asc.TPipe()
        q = asc.TQue(asc.TPosition.VECIN, 2)
        pipe.init_buffer(q, 2, 128 * 1024)

    with pytest.raises(pypto.UserError, match="more than its 196608 on a2a3"):
        too_big[1](np.zeros(8, np.float32))


def test_local_tensor_outside_ub_unaligned_overlapping_and_gm_out_of_bounds():
    @asc.jit
    def outside(x: asc.GlobalAddress):
        asc.LocalTensor(asc.float32, asc.TPosition.VECIN, 196608 - 64, 32)

    with pytest.raises(pypto.UserError, match=r"bytes \[196544, 196672\) of UB are outside it"):
        outside[1](np.zeros(8, np.float32))

    @asc.jit
    def unaligned(x: asc.GlobalAddress):
        asc.LocalTensor(asc.float32, asc.TPosition.VECIN, 16, 8)

    with pytest.raises(pypto.UserError, match="not 32-byte aligned"):
        unaligned[1](np.zeros(8, np.float32))

    @asc.jit
    def overlap(x: asc.GlobalAddress):
        asc.LocalTensor(asc.float32, asc.TPosition.VECIN, 0, 64)
        asc.LocalTensor(asc.float32, asc.TPosition.VECOUT, 128, 64)

    assert "overlap the LocalTensor made at" in str(asc.check(overlap[1], np.zeros(8, np.float32)))

    @asc.jit
    def gm_oob(x: asc.GlobalAddress, n: int):
        g = asc.GlobalTensor()
        g.set_global_buffer(x, n)
        t = asc.LocalTensor(asc.float32, asc.TPosition.VECIN, 0, 64)
        asc.data_copy(t, g[8:], 64)

    with pytest.raises(pypto.UserError, match=r"64 elements of x from element 8 leave the buffer given to "
                                              r"set_global_buffer \(56 elements"):
        gm_oob[1](np.zeros(128, np.float32), 64)

    @asc.jit
    def odd_copy(x: asc.GlobalAddress):
        g = asc.GlobalTensor()
        g.set_global_buffer(x)
        asc.data_copy(asc.LocalTensor(asc.float32, asc.TPosition.VECIN, 0, 64), g, 10)

    with pytest.raises(pypto.UserError, match="(?s)not a whole number of 32-byte blocks.*data_copy_pad"):
        odd_copy[1](np.zeros(64, np.float32))


@asc.jit
def ops_kernel(a: asc.GlobalAddress, b: asc.GlobalAddress, out: asc.GlobalAddress, n: int, which: str):
    ga, gb, go = asc.GlobalTensor(), asc.GlobalTensor(), asc.GlobalTensor()
    ga.set_global_buffer(a)
    gb.set_global_buffer(b)
    go.set_global_buffer(out)
    dt = a.dtype
    la = asc.LocalTensor(dt, asc.TPosition.VECIN, 0, n)
    lb = asc.LocalTensor(dt, asc.TPosition.VECIN, 32768, n)
    lo = asc.LocalTensor(out.dtype, asc.TPosition.VECOUT, 65536, n)
    asc.data_copy(la, ga, n)
    asc.data_copy(lb, gb, n)
    asc.pipe_barrier(asc.PipeID.PIPE_ALL)
    if which == "repeat_add":  # 2 repeats of 64 fp32 with a mask of 48, src1 read with a repeat stride of 0
        asc.duplicate(lo, 0.0, n)
        asc.add(lo, la, lb, 48, 2, asc.BinaryRepeatParams(1, 1, 1, 8, 8, 0))
    elif which == "bitmask_mul":
        asc.duplicate(lo, 0.0, n)
        asc.mul(lo, la, lb, [0xF0F0F0F0F0F0F0F0], 1, asc.BinaryRepeatParams())
    elif which == "unary_chain":
        asc.exp(lo, la, n)
        asc.muls(lo, lo, 0.5, n)
        asc.maxs(lo, lo, 0.25, n)
        asc.rsqrt(lo, lo, n)
    elif which == "whole_reduce":
        asc.duplicate(lo, 0.0, n)
        asc.whole_reduce_sum(lo, la, 64, n // 64, 1, 1, 8)
    elif which == "reduce_max_index":
        asc.reduce_max(lo, la, lb, n, cal_index=True)
    elif which == "compare_select":
        mask = asc.LocalTensor(asc.uint8, asc.TPosition.VECCALC, 98304, n)
        asc.compare(mask, la, lb, asc.CMPMODE.GT, n)
        asc.select(lo, mask, la, lb, asc.SelMode.VSEL_TENSOR_TENSOR_MODE, n)
    elif which == "cast_round":
        asc.cast(lo, la, asc.RoundMode.CAST_ROUND, n)
    elif which == "cast_rint":
        asc.cast(lo, la, asc.RoundMode.CAST_RINT, n)
    asc.pipe_barrier(asc.PipeID.PIPE_ALL)
    asc.data_copy(go, lo, n)


@pytest.mark.parametrize("which", ["repeat_add", "bitmask_mul", "unary_chain", "whole_reduce", "reduce_max_index",
                                   "compare_select", "cast_round", "cast_rint"])
def test_instructions_against_numpy(which):
    n = 128
    r = _rng(3)
    a = r.standard_normal(n).astype(np.float32) * 3
    b = r.standard_normal(n).astype(np.float32)
    out_dtype = np.int32 if which.startswith("cast") else np.float32
    if which.startswith("cast"):
        a[:6] = [0.5, 1.5, 2.5, -0.5, -1.5, 1e10]
    if which == "compare_select":
        a[:4], b[:4] = [np.nan, 1.0, np.inf, -0.0], [1.0, np.nan, np.inf, 0.0]
    out = np.zeros(n, out_dtype)
    ops_kernel[1](a, b, out, n, which)
    again = np.zeros(n, out_dtype)
    ops_kernel[1](a, b, again, n, which)  # every instruction here runs natively on the second launch
    assert ops_kernel.last_native
    np.testing.assert_array_equal(again, out)
    ref = np.zeros(n, out_dtype)
    if which == "repeat_add":
        for rep in range(2):
            ref[rep * 64:rep * 64 + 48] = a[rep * 64:rep * 64 + 48] + b[:48]
    elif which == "bitmask_mul":
        sel = [j for j in range(64) if (0xF0F0F0F0F0F0F0F0 >> j) & 1]
        ref[sel] = a[sel] * b[sel]
    elif which == "unary_chain":
        ref = 1 / np.sqrt(np.maximum(np.exp(a) * np.float32(0.5), np.float32(0.25)))
    elif which == "whole_reduce":
        ref[:2] = a.reshape(2, 64).sum(-1)
    elif which == "reduce_max_index":
        ref[0] = a.max()
        ref[1:2] = np.array([a.argmax()], np.int32).view(np.float32)
        out, ref = out[:2], ref[:2]
    elif which == "compare_select":
        ref = np.where(a > b, a, b)
    elif which == "cast_round":
        ref = np.clip(np.sign(a) * np.floor(np.abs(a.astype(np.float64)) + 0.5), -2**31, 2**31 - 1).astype(np.int32)
    elif which == "cast_rint":
        ref = np.clip(np.rint(a.astype(np.float64)), -2**31, 2**31 - 1).astype(np.int32)
    np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-6, equal_nan=True)


def test_fp16_arithmetic_rounds_once_per_instruction_and_sums_in_fp32():
    n = 256
    a = (_rng(4).standard_normal(n) * 10).astype(np.float16)
    b = np.full(n, 1e-3, np.float16)
    out = np.zeros(n, np.float16)
    ops_kernel[1](a, b, out, n, "unary_chain")
    torch = pytest.importorskip("torch")
    ta = torch.from_numpy(a)
    ref = torch.rsqrt(torch.clamp_min(torch.exp(ta) * 0.5, 0.25)).numpy()
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("m,k,n,trans_a,trans_b,bias", [(100, 72, 300, False, False, True),
                                                        (64, 48, 80, True, False, False),
                                                        (33, 40, 50, True, True, True)])
def test_the_matmul_api_against_numpy_with_tails_and_transposes(m, k, n, trans_a, trans_b, bias):
    import sys
    import os
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
    import asc_matmul as ex

    rng = _rng(m)
    a = rng.integers(-8, 8, (m, k)).astype(np.float16)
    b = rng.integers(-8, 8, (k, n)).astype(np.float16)
    bv = rng.standard_normal((1, n)).astype(np.float32)
    tiling = ex.generate_tiling(m, n, k, bias)
    assert int(tiling.used_core_num) <= 24
    c = np.zeros((m, n), np.float32)
    a_arg = np.ascontiguousarray(a.T) if trans_a else a
    b_arg = np.ascontiguousarray(b.T) if trans_b else b
    ex.matmul_kernel[int(tiling.used_core_num)](a_arg, b_arg, c, bv, tiling, np.zeros(64, np.uint8), trans_a, trans_b)
    ref = a.astype(np.float64) @ b.astype(np.float64) + (bv if bias else 0)
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
def test_the_native_path_replays_a_recorded_stream_with_the_interpreters_answer(dtype):
    # The first launch interprets and records each block's stream; later launches with the same
    # signature run it natively (no Python per instruction), bit for bit the same.
    kernel = make_vadd()
    n = 4 * 1024
    r = _rng(5)
    for trial in range(3):
        x = (r.standard_normal(n) * 50).astype(dtype)
        y = (r.standard_normal(n) * 50).astype(dtype)
        z = np.full_like(x, 7)
        kernel[4](x, y, z, n // 4)
        np.testing.assert_array_equal(z, x + y)
        assert kernel.last_native == (trial > 0)


@asc.jit
def chain_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, n: int, scale: float):
    gx, gz = asc.GlobalTensor(), asc.GlobalTensor()
    gx.set_global_buffer(x + asc.get_block_idx() * n, n)
    gz.set_global_buffer(z + asc.get_block_idx() * n, n)
    a = asc.LocalTensor(x.dtype, asc.TPosition.VECIN, 0, n)
    b = asc.LocalTensor(x.dtype, asc.TPosition.VECOUT, 4 * n, n)
    asc.data_copy(a, gx, n)
    asc.set_flag(asc.HardEvent.MTE2_V, 0)
    asc.wait_flag(asc.HardEvent.MTE2_V, 0)
    asc.muls(b, a, scale, n)
    asc.adds(b, b, -1.5, n)
    asc.maxs(b, b, -2.0, n)
    asc.mins(b, b, 3.0, n)
    asc.abs(b, b, n)
    asc.sqrt(b, b, n)
    asc.relu(b, b, n)
    asc.mul(b, b, a, n)
    asc.sub(b, b, a, n)
    asc.div(b, b, a, n)
    asc.max(b, b, a, n)
    asc.min(b, b, a, n)
    asc.duplicate(a, 0.5, 8)
    asc.add(b, b, a, 8)
    asc.set_flag(asc.HardEvent.V_MTE3, 0)
    asc.wait_flag(asc.HardEvent.V_MTE3, 0)
    asc.data_copy(gz, b, n)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_native_and_interpreted_agree_bit_for_bit_with_nan_inf_and_zeros(dtype):
    n = 256
    x = (_rng(6).standard_normal(2 * n) * 4).astype(dtype)
    x[:6] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-8]
    first, second = np.zeros_like(x), np.zeros_like(x)
    chain_kernel[2](x, first, n, 0.75)
    assert not chain_kernel.last_native
    chain_kernel[2](x, second, n, 0.75)
    assert chain_kernel.last_native
    np.testing.assert_array_equal(first.view(np.uint16 if dtype == np.float16 else np.uint32),
                                  second.view(np.uint16 if dtype == np.float16 else np.uint32))
    chain_kernel[2](x, second, n, 0.5)  # another scalar: recorded again
    assert not chain_kernel.last_native


def _softmax_ref(x):
    e = np.exp(x.astype(np.float64) - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_scalar_reads_replay_with_the_values_of_the_new_data():
    # get_value's results feed adds / muls through Python arithmetic (-m, 1.0 / s): the replay
    # recomputes them from its own data, so a second launch on other data is still right.
    for trial in range(3):
        x = (_rng(7 + trial).standard_normal((8, 256)) * (trial + 1)).astype(np.float32)
        z = np.zeros_like(x)
        softmax_q[2](x, z, 4, 256)
        assert softmax_q.last_native == (trial > 0)
        np.testing.assert_allclose(z, _softmax_ref(x), rtol=1e-5, atol=1e-7)


def test_a_scalar_that_steers_python_keeps_the_kernel_interpreted():
    @asc.jit
    def clamp_by_sign(x: asc.GlobalAddress, z: asc.GlobalAddress, n: int):
        gx, gz = asc.GlobalTensor(), asc.GlobalTensor()
        gx.set_global_buffer(x)
        gz.set_global_buffer(z)
        a = asc.LocalTensor(asc.float32, asc.TPosition.VECIN, 0, n)
        asc.data_copy(a, gx, n)
        asc.set_flag(asc.HardEvent.MTE2_S, 0)
        asc.wait_flag(asc.HardEvent.MTE2_S, 0)
        if a.get_value(0) > 0:  # a branch on data: a replay could not follow it
            asc.muls(a, a, 2.0, n)
        else:
            asc.muls(a, a, -1.0, n)
        asc.pipe_barrier(asc.PipeID.PIPE_ALL)
        asc.data_copy(gz, a, n)

    for first in (1.0, -1.0, 3.0):
        x = np.full(64, first, np.float32)
        z = np.zeros_like(x)
        clamp_by_sign[1](x, z, 64)
        assert not clamp_by_sign.last_native
        np.testing.assert_array_equal(z, x * (2.0 if first > 0 else -1.0))


@asc.jit
def wide_kernel(x: asc.GlobalAddress, y: asc.GlobalAddress, z: asc.GlobalAddress, n: int, which: str):
    gx, gy, gz = asc.GlobalTensor(), asc.GlobalTensor(), asc.GlobalTensor()
    gx.set_global_buffer(x)
    gy.set_global_buffer(y)
    gz.set_global_buffer(z)
    a = asc.LocalTensor(x.dtype, asc.TPosition.VECIN, 0, n)
    b = asc.LocalTensor(x.dtype, asc.TPosition.VECIN, 32768, n)
    o = asc.LocalTensor(z.dtype, asc.TPosition.VECOUT, 65536, n)
    asc.data_copy(a, gx, n)
    asc.data_copy(b, gy, n)
    asc.pipe_barrier(asc.PipeID.PIPE_ALL)
    if which == "math":
        asc.exp(o, a, n)
        asc.add(o, o, b, n)
        asc.abs(o, o, n)
        asc.ln(o, o, n)
        asc.reciprocal(b, b, n)
        asc.mul(o, o, b, n)
        asc.leaky_relu(o, o, 0.25, n)
    elif which == "repeat":  # mask 40 of 64, strided source blocks, a repeat stride of 0 on src1
        asc.duplicate(o, 0.0, n)
        asc.sub(o, a, b, 40, 2, asc.BinaryRepeatParams(1, 2, 1, 8, 16, 0))
        asc.exp(o, o, 40, 2, asc.UnaryRepeatParams(1, 1, 8, 8))
    elif which == "reduce":
        asc.duplicate(o, 0.0, n)
        asc.reduce_sum(o, a, b, n)
        asc.set_flag(asc.HardEvent.V_S, 0)
        asc.wait_flag(asc.HardEvent.V_S, 0)
        total = o.get_value(0)
        asc.set_flag(asc.HardEvent.S_V, 0)
        asc.wait_flag(asc.HardEvent.S_V, 0)
        asc.whole_reduce_max(o[8:], a, 64, n // 64, 1, 1, 8)
        asc.set_flag(asc.HardEvent.V_S, 0)
        asc.wait_flag(asc.HardEvent.V_S, 0)
        o.set_value(1, total * 2 - 1)
    elif which == "cast":
        asc.cast(o, a, asc.RoundMode.CAST_FLOOR, n)
    elif which == "pad":
        asc.duplicate(o, 0.0, n)
        asc.pipe_barrier(asc.PipeID.PIPE_ALL)
        asc.data_copy_pad(o, gx, asc.DataCopyExtParams(2, 20, 4, 0),
                          asc.DataCopyPadExtParams(True, 0, 3, -7.0))
    asc.pipe_barrier(asc.PipeID.PIPE_ALL)
    asc.data_copy(gz, o, n)


def _wide_ref(which, x, y):
    f = np.float32
    if which == "math":
        o = np.log(np.abs(np.exp(x) + y)) * (f(1) / y)
        return np.where(o >= 0, o, o * f(0.25))
    o = np.zeros_like(x)
    if which == "repeat":
        j = np.arange(40)
        for r in range(2):  # src0 blocks of 8 fp32 two blocks apart, repeats 16 blocks apart
            o[r * 64 + j] = np.exp(x[r * 128 + (j // 8) * 16 + j % 8] - y[j])
        return o
    if which == "reduce":
        o[0] = x.astype(np.float64).sum()
        o[1] = f(o[0]) * 2 - 1
        o[8:8 + len(x) // 64] = x.reshape(-1, 64).max(-1)
        return o
    if which == "pad":
        o[:5], o[5:8] = x[:5], -7.0
        o[8:13], o[13:16] = x[6:11], -7.0
        return o
    raise AssertionError(which)


@pytest.mark.parametrize("which", ["math", "repeat", "reduce", "pad"])
def test_the_native_path_covers_math_repeat_forms_reductions_scalars_and_padding(which):
    n = 256
    for trial in range(2):
        r = _rng(20 + trial)
        x = (r.standard_normal(n) * 2).astype(np.float32)
        y = (r.uniform(0.5, 2.0, n)).astype(np.float32)
        z = np.full(n, 9.0, np.float32)
        wide_kernel[1](x, y, z, n, which)
        assert wide_kernel.last_native == (trial > 0), which
        ref = _wide_ref(which, x, y)
        if which == "pad":
            z, ref = z[:16], ref[:16]
        np.testing.assert_allclose(z, ref, rtol=3e-6, atol=1e-6)


def test_native_cast_floor_into_int32_saturates():
    x = np.array([1.5, -1.5, 2.0, -0.0, np.nan, np.inf, -np.inf, 3e9] * 8, np.float32)
    z = np.zeros(64, np.int32)
    for _ in range(2):
        wide_kernel[1](x, x, z, 64, "cast")
        np.testing.assert_array_equal(z, np.array([1, -2, 2, 0, 0, 2**31 - 1, -2**31, 2**31 - 1] * 8, np.int32))
    assert wide_kernel.last_native


def test_bfloat16_kernels_compute_in_fp32_and_round_once_as_torch():
    torch = pytest.importorskip("torch")
    g = torch.Generator().manual_seed(0)
    n = 4 * 1024
    for trial in range(2):
        x = (torch.randn(n, generator=g) * 30).to(torch.bfloat16)
        y = (torch.randn(n, generator=g) * 30).to(torch.bfloat16)
        z = torch.zeros(n, dtype=torch.bfloat16)
        kernel = make_vadd()
        kernel[4](x, y, z, n // 4)
        assert torch.equal(z, x + y)
    xs = torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1e-40] + [1.0] * 250).to(torch.bfloat16)
    ys = torch.zeros(256, dtype=torch.bfloat16)
    zs = torch.zeros(256, dtype=torch.bfloat16)
    wide_kernel[1](xs, ys + 1, zs, 256, "math")
    ref = torch.nn.functional.leaky_relu(torch.log(torch.abs(torch.exp(xs.float()).bfloat16().float() + 1)).bfloat16()
                                         .float(), 0.25)
    torch.testing.assert_close(zs.float(), ref, rtol=1e-2, atol=1e-6, equal_nan=True)


def test_native_int32_wraps_as_numpy_and_integer_division_stays_interpreted():
    @asc.jit
    def k(x: asc.GlobalAddress, z: asc.GlobalAddress, n: int, op: str):
        gx, gz = asc.GlobalTensor(), asc.GlobalTensor()
        gx.set_global_buffer(x)
        gz.set_global_buffer(z)
        a = asc.LocalTensor(asc.int32, asc.TPosition.VECIN, 0, n)
        b = asc.LocalTensor(asc.int32, asc.TPosition.VECOUT, 4 * n, n)
        asc.data_copy(a, gx, n)
        asc.pipe_barrier(asc.PipeID.PIPE_ALL)
        if op == "mul":
            asc.mul(b, a, a, n)
            asc.adds(b, b, 2**31 - 1, n)
        else:
            asc.div(b, a, a, n)
        asc.pipe_barrier(asc.PipeID.PIPE_ALL)
        asc.data_copy(gz, b, n)

    x = np.array([0, 1, -1, 46341, -46341, 2**31 - 1, -2**31, 7] * 8, np.int32)
    z1, z2 = np.zeros_like(x), np.zeros_like(x)
    with np.errstate(over="ignore"):
        ref = (x * x + np.int32(2**31 - 1)).astype(np.int32)
    k[1](x, z1, 64, "mul")
    k[1](x, z2, 64, "mul")
    assert k.last_native
    np.testing.assert_array_equal(z1, ref)
    np.testing.assert_array_equal(z2, ref)
    k[1](x, z1, 64, "div")
    k[1](x, z1, 64, "div")  # x / 0 for the zeros: interpreted (numpy's float division), never a SIGFPE
    assert not k.last_native
