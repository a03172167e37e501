"""A cube kernel with PyAsc's high-level Matmul API (`import pypto.asc as asc`), as PyAsc's
matmul_cube_only tutorial writes it: the host splits C = A @ B (+ bias) over up to 24 cube
cores (asc.lib.host.MultiCoreMatmulTiling), each block computes its [single_core_m,
single_core_n] tile of C (tails included) with asc.adv.Matmul. fp16 inputs multiply exactly and
accumulate in fp32.

Run: python examples/asc_matmul.py [--quick]. Each result is checked against numpy in float64
(np.allclose rtol=1e-4, atol=1e-3), plain and with B transposed, and in checked mode; a mismatch
or a report exits 1 (PYPTO_EXAMPLE_PERTURB=1 shows the check failing).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import List, Optional, Tuple

import numpy as np

import pypto.asc as asc
import pypto.asc.lib.host as host
import pypto.asc.lib.runtime as rt

USE_CORE_NUM = 24
PERTURB = os.environ.get("PYPTO_EXAMPLE_PERTURB", "") not in ("", "0")


@asc.jit(matmul_cube_only=True, always_compile=True)
def matmul_kernel(a: asc.GlobalAddress, b: asc.GlobalAddress, c: asc.GlobalAddress, bias: asc.GlobalAddress,
                  tiling: asc.adv.TCubeTiling, workspace: asc.GlobalAddress, is_trans_a: bool = False,
                  is_trans_b: bool = False):
    if asc.ascend_is_aic():
        offset_a, offset_b, offset_c, offset_bias, tail_m, tail_n = calc_offsets(tiling, is_trans_a, is_trans_b)
        a_global = asc.GlobalTensor()
        b_global = asc.GlobalTensor()
        c_global = asc.GlobalTensor()
        bias_global = asc.GlobalTensor()
        a_global.set_global_buffer(a + offset_a)
        b_global.set_global_buffer(b + offset_b)
        c_global.set_global_buffer(c + offset_c)
        bias_global.set_global_buffer(bias + offset_bias)
        pipe = asc.TPipe()
        matmul = asc.adv.Matmul(
            a=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, a_global.dtype, is_trans_a),
            b=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, b_global.dtype, is_trans_b),
            c=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, c_global.dtype),
            bias=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, bias_global.dtype),
        )
        asc.adv.register_matmul(pipe, workspace, matmul, tiling)
        if asc.get_block_idx() < tiling.used_core_num:
            matmul.set_tensor_a(a_global, is_trans_a)
            matmul.set_tensor_b(b_global, is_trans_b)
            if tiling.is_bias:
                matmul.set_bias(bias_global)
            matmul.set_tail(tail_m, tail_n, tiling.k_a)
            matmul.iterate_all(c_global)
            matmul.end()
        asc.pipe_barrier(asc.PipeID.PIPE_ALL)


@asc.jit
def calc_offsets(tiling: asc.adv.TCubeTiling, is_trans_a: bool = False,
                 is_trans_b: bool = False) -> Tuple[int, int, int, int, int, int]:
    block_idx = asc.get_block_idx()
    m_single_blocks = tiling.m.ceildiv(tiling.single_core_m)
    n_index = block_idx // m_single_blocks
    m_index = block_idx % m_single_blocks
    offset_a = m_index * tiling.k_a * tiling.single_core_m
    if is_trans_a:
        offset_a = m_index * tiling.single_core_m
    offset_b = n_index * tiling.single_core_n
    if is_trans_b:
        offset_b = n_index * tiling.k_b * tiling.single_core_n
    offset_c = m_index * tiling.n * tiling.single_core_m + n_index * tiling.single_core_n
    offset_bias = n_index * tiling.single_core_n
    tail_m = tiling.m - m_index * tiling.single_core_m
    if tail_m <= 0 or tail_m >= tiling.single_core_m:
        tail_m = tiling.single_core_m
    tail_n = tiling.n - n_index * tiling.single_core_n
    if tail_n <= 0 or tail_n >= tiling.single_core_n:
        tail_n = tiling.single_core_n
    return offset_a, offset_b, offset_c, offset_bias, tail_m, tail_n


def generate_tiling(m: int, n: int, k: int, bias: bool) -> asc.adv.TCubeTiling:
    matmul_tiling = host.MultiCoreMatmulTiling(host.get_ascendc_platform())
    matmul_tiling.set_a_type(host.TPosition.GM, host.CubeFormat.ND, host.DataType.DT_FLOAT16, False)
    matmul_tiling.set_b_type(host.TPosition.GM, host.CubeFormat.ND, host.DataType.DT_FLOAT16, False)
    matmul_tiling.set_c_type(host.TPosition.GM, host.CubeFormat.ND, host.DataType.DT_FLOAT)
    matmul_tiling.set_bias_type(host.TPosition.GM, host.CubeFormat.ND, host.DataType.DT_FLOAT)
    matmul_tiling.set_dim(USE_CORE_NUM)
    matmul_tiling.set_org_shape(m, n, k)
    matmul_tiling.set_shape(m, n, k)
    matmul_tiling.enable_bias(bias)
    matmul_tiling.set_buffer_space(-1, -1, -1)
    tiling = asc.adv.TCubeTiling()
    matmul_tiling.get_tiling(tiling)
    return tiling


def run(m: int, k: int, n: int, trans_b: bool) -> bool:
    rng = np.random.default_rng(m + n)
    a = rng.integers(-5, 5, (m, k)).astype(np.float16)
    b = rng.integers(-5, 5, (k, n)).astype(np.float16)
    bias = rng.integers(-5, 5, (1, n)).astype(np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64) + bias
    b_arg = np.ascontiguousarray(b.T) if trans_b else b
    tiling = generate_tiling(m, n, k, True)
    c = np.zeros((m, n), np.float32)
    workspace = np.zeros(1024, np.uint8)
    launch = matmul_kernel[int(tiling.used_core_num), rt.current_stream()]
    t0 = time.perf_counter()
    launch(a, b_arg, c, bias, tiling, workspace, False, trans_b)
    ms = (time.perf_counter() - t0) * 1e3
    got = c.copy()
    if PERTURB:
        got[0, 0] += 1.0
    ok = bool(np.allclose(got, ref, rtol=1e-4, atol=1e-3))
    report = asc.check(launch, a, b_arg, c, bias, tiling, workspace, False, trans_b)
    print(f"asc Matmul [{m}, {k}] x [{k}, {n}]{' (B transposed)' if trans_b else ''} + bias on "
          f"{int(tiling.used_core_num)} cores ({int(tiling.single_core_m)} x {int(tiling.single_core_n)} per core): "
          f"{'OK' if ok else 'MISMATCH'}, {ms:.1f} ms; {report}")
    return ok and report.clean


def main(argv: Optional[List[str]] = None) -> None:
    ap = argparse.ArgumentParser(description="PyAsc's Matmul API on cube cores, checked against numpy")
    ap.add_argument("--quick", action="store_true", help="small sizes")
    args = ap.parse_args(argv)
    shapes = [(100, 72, 300)] if args.quick else [(128, 64, 30720), (1000, 512, 1000)]
    ok = all([run(m, k, n, trans_b) for (m, k, n) in shapes for trans_b in (False, True)])
    if not ok:
        print("asc_matmul: FAILED", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
