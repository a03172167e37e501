"""The PyAsc seed's vector add (`import pypto.asc as asc`), as written for the NPU: 8 blocks, each
copying tiles in on MTE2, adding on V and copying out on MTE3, double buffered, with
set_flag / wait_flag between the pipes. Then the same kernel without its MTE3_MTE2 event, which
the checked mode reports as data races (on the chip: a silent, intermittent wrong answer).

Run: python examples/asc_vadd.py [--quick]. The sum is checked against numpy (exactly: one
fp32 add per element); a mismatch, a report on the correct kernel or no report on the broken
one exits 1 (PYPTO_EXAMPLE_PERTURB=1 shows the check failing).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, Callable, List, Optional

import numpy as np

import pypto.asc as asc

USE_CORE_NUM = 8
BUFFER_NUM = 2
TILE_NUM = 8
PERTURB = os.environ.get("PYPTO_EXAMPLE_PERTURB", "") not in ("", "0")


def make_vadd(sync_copy_out: bool = True) -> Any:
    @asc.jit
    def vadd_kernel(x: asc.GlobalAddress, y: asc.GlobalAddress, z: asc.GlobalAddress, block_length: int):
        offset = asc.get_block_idx() * block_length
        x_gm = asc.GlobalTensor()
        y_gm = asc.GlobalTensor()
        z_gm = asc.GlobalTensor()
        x_gm.set_global_buffer(x + offset, block_length)
        y_gm.set_global_buffer(y + offset, block_length)
        z_gm.set_global_buffer(z + offset, block_length)

        tile_length = block_length // TILE_NUM // BUFFER_NUM
        data_type = x.dtype
        buffer_size = tile_length * BUFFER_NUM * data_type.sizeof()

        x_local = asc.LocalTensor(data_type, asc.TPosition.VECIN, 0, tile_length * BUFFER_NUM)
        y_local = asc.LocalTensor(data_type, asc.TPosition.VECIN, buffer_size, tile_length * BUFFER_NUM)
        z_local = asc.LocalTensor(data_type, asc.TPosition.VECOUT, buffer_size + buffer_size, tile_length * BUFFER_NUM)

        for i in range(TILE_NUM * BUFFER_NUM):
            buf_id = i % BUFFER_NUM
            asc.data_copy(x_local[buf_id * tile_length:], x_gm[i * tile_length:], tile_length)
            asc.data_copy(y_local[buf_id * tile_length:], y_gm[i * tile_length:], tile_length)
            asc.set_flag(asc.HardEvent.MTE2_V, buf_id)
            asc.wait_flag(asc.HardEvent.MTE2_V, buf_id)
            asc.add(z_local[buf_id * tile_length:], x_local[buf_id * tile_length:], y_local[buf_id * tile_length:],
                    tile_length)
            asc.set_flag(asc.HardEvent.V_MTE3, buf_id)
            asc.wait_flag(asc.HardEvent.V_MTE3, buf_id)
            asc.data_copy(z_gm[i * tile_length:], z_local[buf_id * tile_length:], tile_length)
            if sync_copy_out:  # the next copy-in into this buffer waits for the copy-out
                asc.set_flag(asc.HardEvent.MTE3_MTE2, buf_id)
                asc.wait_flag(asc.HardEvent.MTE3_MTE2, buf_id)
    return vadd_kernel


def median_ms(fn: Callable[[], Any], reps: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return sorted(times)[reps // 2] * 1e3


def main(argv: Optional[List[str]] = None) -> None:
    ap = argparse.ArgumentParser(description="the PyAsc seed's vadd, checked against numpy and in checked mode")
    ap.add_argument("--quick", action="store_true", help="the seed's size, 8 x 2048 (default 8 x 2^17, the most "
                    "its 16 tiles per block fit in UB)")
    args = ap.parse_args(argv)
    size = 8 * 2048 if args.quick else 8 * (1 << 17)
    rng = np.random.default_rng(0)
    x, y = rng.random(size, dtype=np.float32), rng.random(size, dtype=np.float32)
    z = np.zeros_like(x)
    vadd = make_vadd()
    vadd[USE_CORE_NUM](x, y, z, size // USE_CORE_NUM)
    got = z.copy()
    if PERTURB:
        got[0] += 1.0
    ok = bool(np.array_equal(got, x + y))
    ms = median_ms(lambda: vadd[USE_CORE_NUM](x, y, z, size // USE_CORE_NUM), 3 if args.quick else 5)
    np_ms = median_ms(lambda: np.add(x, y), 5)
    print(f"asc vadd of {size} fp32 on {USE_CORE_NUM} blocks: {'OK' if ok else 'MISMATCH'} against numpy; "
          f"{ms:.2f} ms (numpy x + y: {np_ms:.2f} ms, {ms / np_ms:.1f}x)")
    clean = asc.check(vadd[USE_CORE_NUM], x, y, z, size // USE_CORE_NUM)
    print(f"checked mode, the seed's kernel: {clean}")
    broken = asc.check(make_vadd(sync_copy_out=False)[USE_CORE_NUM], x, y, z, size // USE_CORE_NUM)
    print(f"checked mode, without the MTE3_MTE2 event:\n{broken}")
    if not ok or not clean.clean or broken.clean:
        print("asc_vadd: FAILED", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
