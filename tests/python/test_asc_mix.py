"""pypto.asc MIX kernels (each launched block is one cube core and two vector cores, as PyAsc's
MIX_AIC_1_2: block / sub-block indices, kernel types, the MIX matmul tutorial's coverage) and
Ctrl-C during an interpreted launch. Split from test_asc.py."""

import numpy as np
import pytest

import pypto
import pypto.asc as asc
from test_asc import _rng, make_vadd


# --- MIX kernels: each launched block is a group of one cube and two vector cores (PyAsc's
# MIX_AIC_1_2, chosen because the kernel registers a matmul) -----------------------------------------


def _make_core_probe(**options):
    """A kernel that records, per core, (is_aic, block_idx, block_num, sub_block_idx, task_ratio)
    into row `slot` of `out` (cube cores in rows [0, n), vector cores after them); it registers a
    matmul, so unless told otherwise it is MIX."""

    @asc.jit(**options)
    def probe(out: asc.GlobalAddress, tiling: asc.adv.TCubeTiling, workspace: asc.GlobalAddress, n: int):
        aic = asc.ascend_is_aic()
        slot = asc.get_block_idx() if aic else n + asc.get_block_idx()
        o = asc.GlobalTensor()
        o.set_global_buffer(out + slot * 5, 5)
        for j, v in enumerate((int(aic), asc.get_block_idx(), asc.get_block_num(), asc.get_sub_block_idx(),
                               asc.get_task_ratio())):
            o.set_value(j, v)
        pipe = asc.TPipe()
        mm = asc.adv.Matmul(a=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, asc.float16),
                            b=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, asc.float16),
                            c=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, asc.float32))
        asc.adv.register_matmul(pipe, workspace, mm, tiling)
        o.set_value(0, o.get_value(0) + 10)  # after register_matmul: vector cores only in a MIX kernel
    return probe


@pytest.mark.parametrize("n", [1, 3, 24])
def test_a_mix_kernel_runs_one_cube_and_two_vector_cores_per_block(n):
    out = np.full((3 * n + 1, 5), -1, np.int32)  # one spare row that no core may touch
    _make_core_probe()[n](out, asc.adv.TCubeTiling(), np.zeros(64, np.uint8), n)
    assert _make_core_probe().kernel_type is asc.runtime.config.KernelType.MIX_AIC_1_2
    cube, vec = out[:n], out[n:3 * n]
    # cube cores: indices [0, n), ratio 1, and they stop at register_matmul (no +10)
    np.testing.assert_array_equal(cube, [[1, i, n, 0, 1] for i in range(n)])
    # vector cores: indices [0, 2n), block_num n, sub block i % 2, ratio 2
    np.testing.assert_array_equal(vec, [[10, i, n, i % 2, 2] for i in range(2 * n)])
    np.testing.assert_array_equal(out[3 * n], -1)


def test_kernel_types_cube_only_vector_only_and_the_option():
    n = 4
    out = np.full((3 * n, 5), -1, np.int32)
    _make_core_probe(matmul_cube_only=True)[n](out, asc.adv.TCubeTiling(), np.zeros(64, np.uint8), n)
    # cube-only: n cube cores that go on after register_matmul
    np.testing.assert_array_equal(out[:n], [[11, i, n, 0, 1] for i in range(n)])
    np.testing.assert_array_equal(out[n:], -1)
    out[:] = -1
    kt = asc.runtime.config.KernelType
    _make_core_probe(kernel_type=kt.MIX_AIC_1_1)[n](out, asc.adv.TCubeTiling(), np.zeros(64, np.uint8), n)
    np.testing.assert_array_equal(out[:n], [[1, i, n, 0, 1] for i in range(n)])
    np.testing.assert_array_equal(out[n:2 * n], [[10, i, n, 0, 1] for i in range(n)])
    np.testing.assert_array_equal(out[2 * n:], -1)
    # a kernel that registers no matmul is vector-only: the seed vadd
    assert make_vadd().kernel_type is kt.AIV_ONLY
    with pytest.raises(pypto.UserError, match="KernelType"):
        asc.jit(kernel_type=99)(lambda: None)


def test_a_matmul_registered_in_a_called_function_makes_the_kernel_mix():
    @asc.jit
    def setup(pipe, workspace, mm, tiling):
        asc.adv.register_matmul(pipe, workspace, mm, tiling)

    @asc.jit
    def kernel(workspace: asc.GlobalAddress):
        pass

    assert kernel.kernel_type is asc.runtime.config.KernelType.AIV_ONLY
    g = {"asc": asc, "setup": setup}
    exec("def k2(workspace):\n    setup(None, workspace, None, None)\n", g)
    assert asc.jit(g["k2"]).kernel_type is asc.runtime.config.KernelType.MIX_AIC_1_2


def test_the_mix_matmul_tutorial_covers_all_of_c_with_48_vector_blocks():
    # PyAsc's 03_matmul_mix: a tiling for 48 vector cores launched as 24 groups. Each vector core
    # computes its tile of C; with only 24 cores running, half of C would stay zero.
    import pypto.asc.lib.host as host

    m, k, n = 256, 64, 512
    t = host.MultiCoreMatmulTiling(host.get_ascendc_platform())
    t.set_dim(48)
    t.set_org_shape(m, n, k)
    t.set_shape(m, n, k)
    tiling = asc.adv.TCubeTiling()
    t.get_tiling(tiling)
    assert int(tiling.used_core_num) > 24

    @asc.jit
    def mm_kernel(a: asc.GlobalAddress, b: asc.GlobalAddress, c: asc.GlobalAddress, tiling: asc.adv.TCubeTiling,
                  workspace: asc.GlobalAddress):
        i = asc.get_block_idx()
        mb = tiling.m.ceildiv(tiling.single_core_m)
        mi, ni = i % mb, i // mb
        ag, bg, cg = asc.GlobalTensor(), asc.GlobalTensor(), asc.GlobalTensor()
        ag.set_global_buffer(a + mi * tiling.k_a * tiling.single_core_m)
        bg.set_global_buffer(b + ni * tiling.single_core_n)
        cg.set_global_buffer(c + mi * tiling.n * tiling.single_core_m + ni * tiling.single_core_n)
        pipe = asc.TPipe()
        mm = asc.adv.Matmul(a=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, asc.float16),
                            b=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, asc.float16),
                            c=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, asc.float32))
        asc.adv.register_matmul(pipe, workspace, mm, tiling)
        if i < tiling.used_core_num:
            mm.set_tensor_a(ag)
            mm.set_tensor_b(bg)
            mm.set_tail(min(tiling.single_core_m, tiling.m - mi * tiling.single_core_m),
                        min(tiling.single_core_n, tiling.n - ni * tiling.single_core_n))
            mm.iterate_all(cg)
            mm.end()

    rng = _rng(3)
    a = rng.integers(-5, 5, (m, k)).astype(np.float16)
    b = rng.integers(-5, 5, (k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float32)
    mm_kernel[24](a, b, c, tiling, np.zeros(64, np.uint8))
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))


def test_ctrl_c_stops_an_interpreted_launch_within_a_second():
    # A launch of 4 blocks on 2 threads that would take minutes: Ctrl-C (interrupt_main, as the
    # terminal's SIGINT) raises KeyboardInterrupt in the caller at once, the blocks end at their next
    # instruction, and the kernel launches again afterwards.
    import _thread
    import threading
    import time

    @asc.jit(workers=2)
    def spin(x: asc.GlobalAddress, n: int):
        xl = asc.LocalTensor(asc.float32, asc.TPosition.VECCALC, 0, 64)
        for _ in range(n):
            asc.adds(xl, xl, 1.0, 64)

    x = np.zeros(64, np.float32)
    timer = threading.Timer(0.5, _thread.interrupt_main)
    timer.start()
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        spin[4](x, 4 * 10 ** 5)  # some 10 s uninterrupted
    assert time.monotonic() - t0 < 3.0
    timer.cancel()
    spin[4](x, 3)  # usable again
