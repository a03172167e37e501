"""PyPTO demo: the softmax of seed 000, compiled through every IR level, checked against
numpy, and timed. Run: python examples/softmax_demo.py ([64, 16, 64, 256], 64 MiB of fp32) or
with --quick ([4, 16, 64, 256], a few seconds).

The output is checked against a float64 numpy softmax with np.allclose(rtol=1e-5, atol=1e-7);
beyond it the demo prints MISMATCH and exits with status 1. PYPTO_EXAMPLE_PERTURB=1 adds 1.0
to one output element before the check, to show that the check can fail.
"""

import argparse
import os
import time

import numpy as np

import pypto

def make_softmax(b: int, n1: int, n2: int, dim: int):
    @pypto.frontend.jit()
    def softmax(
        input_tensor: pypto.Tensor((b, n1, n2, dim), pypto.DT_FP32),
    ) -> pypto.Tensor((b, n1, n2, dim), pypto.DT_FP32):
        output_tensor = pypto.tensor((b, n1, n2, dim), pypto.DT_FP32)
        tile_b = 1  # one batch per loop iteration
        b_loop = b // tile_b
        pypto.set_vec_tile_shapes(1, 1, 32, 256)  # whole rows per tile: the chain fuses into one kernel
        for idx in pypto.loop(0, b_loop, 1, name="LOOP_L0_bIdx", idx_name="idx"):
            b_offset = idx * tile_b
            b_offset_end = (idx + 1) * tile_b
            input_view = input_tensor[b_offset:b_offset_end, :, :, :]
            row_max = pypto.amax(input_view, dim=-1, keepdim=True)
            sub = input_view - row_max
            exp = pypto.exp(sub)
            esum = pypto.sum(exp, dim=-1, keepdim=True)
            softmax_out = exp / esum
            pypto.assemble(softmax_out, [b_offset, 0, 0, 0], output_tensor)
        return output_tensor
    return softmax


def numpy_softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def median_ms(fn, x, reps: int = 9):
    times = []
    fn(x)  # warm-up
    for _ in range(reps):
        t0 = time.perf_counter()
        fn(x)
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    return times[len(times) // 2], times[0], times[-1]


def main() -> None:
    ap = argparse.ArgumentParser(description="the seed softmax, checked against numpy and timed")
    ap.add_argument("--quick", action="store_true", help="small sizes (a few seconds), still checked")
    args = ap.parse_args()
    shape = (4 if args.quick else 64, 16, 64, 256)  # 64 MiB of fp32 at full size
    softmax = make_softmax(*shape)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    t0 = time.perf_counter()
    y = softmax(x)  # first call traces and compiles
    compile_and_run_ms = (time.perf_counter() - t0) * 1e3
    if os.environ.get("PYPTO_EXAMPLE_PERTURB", "") not in ("", "0"):
        y.flat[0] += 1.0
    ref = numpy_softmax(x.astype(np.float64))
    err = np.abs(y - ref).max()
    ok = np.allclose(y, ref, rtol=1e-5, atol=1e-7)
    prog = softmax.last.program
    print(f"softmax {x.shape} fp32: {prog.num_kernels} kernel(s), {softmax.last_stats['tasks']} tasks per call")
    print(f"check vs numpy: {'OK' if ok else 'MISMATCH'} (max abs error {err:.2e})")
    print(f"first call (trace + compile + run): {compile_and_run_ms:.1f} ms")
    mb = x.nbytes * 2 / 1e6
    impls = [("pypto", softmax, x)]
    try:
        import torch

        xt = torch.from_numpy(x)
        impls.append(("torch", lambda t: torch.softmax(t, dim=-1), xt))
    except ImportError:
        print("(torch not installed: pip install torch==2.13.0 to compare)")
    impls.append(("numpy", numpy_softmax, x))
    base = None
    for name, fn, arg in impls:
        med, lo, hi = median_ms(fn, arg)
        base = base or med
        print(f"{name:>6}: median {med:8.3f} ms  (min {lo:.3f}, max {hi:.3f})  {mb / med:6.2f} GB/s"
              f"  {'' if name == 'pypto' else f'pypto is {med / base:.2f}x faster' if med > base else f'pypto is {base / med:.2f}x slower'}")
    print("backend: native kernels generated as C++ over the PTO tile library, on all cores "
          "(runtime_options={'run_mode': 'interp'} runs the reference interpreter)")
    if not ok:
        raise SystemExit("softmax_demo: FAILED: the output is beyond the tolerance against numpy")


if __name__ == "__main__":
    main()
