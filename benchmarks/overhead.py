"""Runtime overheads: the warm call of a tiny function from Python (with its stages beside torch
eager and numpy), and the runtime's cost per launch over a runtime loop of 4,096 tiny launches,
two ways: independent iterations (run as batches of iterations) and a running sum (one launch
per iteration, each waiting for the last). Warm calls replay the first call's plan; the first
call's walk of the control program is reported per launch too.

    python benchmarks/overhead.py
"""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable, List

import numpy as np

import pypto


def per_call_us(fn: Callable[..., Any], args: List[Any], n: int) -> List[float]:
    for _ in range(50):
        fn(*args)
    samples = []
    for _ in range(7):
        t0 = time.perf_counter()
        for _ in range(n):
            fn(*args)
        samples.append((time.perf_counter() - t0) / n * 1e6)
    return samples


def same_run_references(x: np.ndarray) -> None:
    """The same one-op call in torch eager and numpy, in this run (what the call is compared with)."""
    xn = x.copy()
    print(f"  numpy x + 1: median {statistics.median(per_call_us(lambda a: a + np.float32(1), [xn], 5000)):.1f} us")
    try:
        import torch
    except ImportError:
        print("  torch: not installed")
        return
    torch.set_num_threads(2)
    xt = torch.from_numpy(xn)
    print(f"  torch eager x + 1: median {statistics.median(per_call_us(lambda a: a + 1.0, [xt], 5000)):.1f} us")


def main() -> None:
    @pypto.jit
    def tiny(x: pypto.Tensor((8, 64), pypto.DT_FP32)) -> pypto.Tensor((8, 64), pypto.DT_FP32):
        pypto.set_vec_tile_shapes(8, 64)
        return x + 1.0

    x = np.ones((8, 64), np.float32)
    warm = per_call_us(tiny, [x], 2000)
    run = per_call_us(lambda a: tiny.last.program.run([a], 0, "fifo", False, "cpu"), [x], 2000)
    print(f"warm call from Python (8x64 add, 1 task): median {statistics.median(warm):.1f} us "
          f"(min {min(warm):.1f}, max {max(warm):.1f})")
    print(f"  of which the C++ run (bind, allocate, build, execute): median {statistics.median(run):.1f} us")
    stages = [tiny(x) is not None and tiny.last_stats for _ in range(500)]
    bind_build = statistics.median(st["build_ms"] for st in stages) * 1e3
    execute = statistics.median(st["exec_ms"] for st in stages) * 1e3
    print(f"  stages: Python wrapper {statistics.median(warm) - statistics.median(run):.1f} us, binding and "
          f"outputs {statistics.median(run) - bind_build - execute:.1f} us, bind + control program "
          f"{bind_build:.1f} us, execute (the task on a worker, its wake-up included) {execute:.1f} us")
    same_run_references(x)

    n = 4096

    def independent():
        @pypto.jit
        def many(x: pypto.Tensor((n, 8), pypto.DT_FP32)) -> pypto.Tensor((n, 8), pypto.DT_FP32):
            out = pypto.tensor((n, 8), pypto.DT_FP32)
            pypto.set_vec_tile_shapes(1, 8)
            for i in pypto.loop(0, n, 1, name="L", idx_name="i"):
                out[i:i + 1, :] = x[i:i + 1, :] * 2.0
            return out
        return many

    def running_sum():
        @pypto.jit
        def chain(x: pypto.Tensor((n, 8), pypto.DT_FP32), acc: pypto.Tensor((1, 8), pypto.DT_FP32)) -> None:
            pypto.set_vec_tile_shapes(1, 8)
            for i in pypto.loop(0, n, 1, name="L", idx_name="i"):
                acc[:] = acc + x[i:i + 1, :]
        return chain

    xs = np.ones((n, 8), np.float32)
    acc = np.zeros((1, 8), np.float32)
    for what, make, args in (("iterations of a one-launch loop (independent: run as batches)", independent, [xs]),
                             ("launches of a running sum (each waits for the last)", running_sum, [xs, acc])):
        for workers in (1, 2):
            pypto.set_runtime_options(workers=workers)
            fn = make()
            fn(*args)  # compiles (or loads) the kernel, walks the control program, records the plan
            walk = fn.last_stats
            samples = per_call_us(fn, args, 20)  # warm calls replay the plan
            per = [s / n for s in samples]
            print(f"{n} {what}, {workers} worker(s): warm median {statistics.median(per):.3f} us each "
                  f"(min {min(per):.3f}, max {max(per):.3f}; {fn.last_stats['launches']} instances, "
                  f"{fn.last_stats['tasks']} tasks); the first call's walk {walk['control_ms'] * 1e3 / n:.2f} us each")
    pypto.set_runtime_options(workers=0)


if __name__ == "__main__":
    main()
