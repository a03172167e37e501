"""PyPTO benchmarks: each kernel with pypto (native CPU backend), torch eager, torch.compile and
numpy in the same process, with medians, spread, and the percentage of this machine's roofline
(STREAM triad bandwidth and the compute peak per dtype, measured here by benchmarks/probes.cpp).

    python benchmarks/run.py                # all kernels, 64 MiB fp32 inputs, writes docs/benchmarks.md
    python benchmarks/run.py --quick        # small sizes, a smoke run
    python benchmarks/run.py --only softmax --reps 15
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

import pypto

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # (compute.py and machine.py beside this file)

from compute import COMPUTE, run_compute  # noqa: E402
from machine import (  # noqa: E402
    ROUNDS, footprint, footprint_text, load_probes, machine_info, measure, measure_peaks, paths_lines, peaks_text,
    summary)


# --- kernels ------------------------------------------------------------------------------------

def pypto_softmax(R: int, C: int, tile_rows: int) -> Callable[..., Any]:
    @pypto.jit
    def softmax(x: pypto.Tensor((R, C), pypto.DT_FP32)) -> pypto.Tensor((R, C), pypto.DT_FP32):
        pypto.set_vec_tile_shapes(tile_rows, C)
        e = pypto.exp(x - pypto.amax(x, dim=-1, keepdim=True))
        return e / pypto.sum(e, dim=-1, keepdim=True)
    return softmax


def pypto_tile_softmax(R: int, C: int, tile_rows: int) -> Callable[..., Any]:
    """The seed's tile function (docs/tile-level.md), mapped over row tiles of `tile_rows`."""
    @pypto.jit(tile_shape=(tile_rows,))
    def softmax(x: pypto.Tile) -> pypto.Tile:
        m = pypto.row_max(x)
        e = pypto.exp(x - m)
        return e / pypto.row_sum(e)
    return softmax


class _WithOutput:
    """Calls a pl function that writes an output parameter; returns the output (and has `.last`)."""

    def __init__(self, fn: Any, out: np.ndarray) -> None:
        self.fn, self.out = fn, out

    @property
    def last(self) -> Any:
        return self.fn.last

    def __call__(self, *args: Any) -> np.ndarray:
        return self.fn(*args, self.out)


def pypto_pl_softmax(R: int, C: int, tile_rows: int) -> Callable[..., Any]:
    """The same softmax in pypto.language: load a tile, reduce, broadcast, store, in a pl.range."""
    import pypto.language as pl

    @pl.jit
    def softmax_pl(x: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> Any:
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(R // tile_rows):
                t = pl.load(x, [i * tile_rows, 0], [tile_rows, C])
                e = pl.row_expand_expdif(t, pl.row_max(t))
                pl.store(pl.row_expand_div(e, pl.row_sum(e)), [i * tile_rows, 0], out)
        return out
    return _WithOutput(softmax_pl, np.empty((R, C), np.float32))


def pypto_rmsnorm(R: int, C: int, tile_rows: int) -> Callable[..., Any]:
    @pypto.jit
    def rmsnorm(x: pypto.Tensor((R, C), pypto.DT_FP32), g: pypto.Tensor((1, C), pypto.DT_FP32)) \
            -> pypto.Tensor((R, C), pypto.DT_FP32):
        pypto.set_vec_tile_shapes(tile_rows, C)
        ms = pypto.sum(x * x, dim=-1, keepdim=True) * (1.0 / C)
        return x * pypto.rsqrt(ms + 1e-6) * g
    return rmsnorm


def pypto_layernorm(R: int, C: int, tile_rows: int) -> Callable[..., Any]:
    @pypto.jit
    def layernorm(x: pypto.Tensor((R, C), pypto.DT_FP32), g: pypto.Tensor((1, C), pypto.DT_FP32),
                  b: pypto.Tensor((1, C), pypto.DT_FP32)) -> pypto.Tensor((R, C), pypto.DT_FP32):
        pypto.set_vec_tile_shapes(tile_rows, C)
        mean = pypto.sum(x, dim=-1, keepdim=True) * (1.0 / C)
        xc = x - mean
        var = pypto.sum(xc * xc, dim=-1, keepdim=True) * (1.0 / C)
        return xc * pypto.rsqrt(var + 1e-5) * g + b
    return layernorm


def pypto_chain(R: int, C: int, tile_rows: int) -> Callable[..., Any]:
    @pypto.jit
    def chain(x: pypto.Tensor((R, C), pypto.DT_FP32)) -> pypto.Tensor((R, C), pypto.DT_FP32):
        pypto.set_vec_tile_shapes(tile_rows, C)
        return pypto.maximum(x * 2.0 + 1.0, 0.0) * pypto.exp(pypto.neg(pypto.abs(x))) - 0.5
    return chain


GELU_C = float(np.sqrt(2.0 / np.pi))


def pypto_gelu(R: int, C: int, tile_rows: int) -> Callable[..., Any]:
    @pypto.jit
    def gelu(x: pypto.Tensor((R, C), pypto.DT_FP32)) -> pypto.Tensor((R, C), pypto.DT_FP32):
        pypto.set_vec_tile_shapes(tile_rows, C)
        return x * 0.5 * (pypto.tanh((x + x * x * x * 0.044715) * GELU_C) + 1.0)
    return gelu


def pypto_transpose(R: int, C: int, tile_rows: int) -> Callable[..., Any]:
    @pypto.jit
    def transpose(x: pypto.Tensor((R, C), pypto.DT_FP32)) -> pypto.Tensor((C, R), pypto.DT_FP32):
        pypto.set_vec_tile_shapes(tile_rows, 256)
        return pypto.transpose(x, 0, 1)
    return transpose


TOPK = 8


def pypto_topk(R: int, C: int, tile_rows: int) -> Callable[..., Any]:
    @pypto.jit
    def topk(x: pypto.Tensor((R, C), pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(tile_rows, C)
        return pypto.topk(x, TOPK)
    return topk


def pypto_gather_rows(R: int, C: int, tile_rows: int) -> Callable[..., Any]:
    # The cache's row count is known only at run time (a paged KV cache): the rows the indices
    # name are read straight from memory (TGATHERND), one row copy per index.
    @pypto.jit
    def gather_rows(x: pypto.Tensor([pypto.DYNAMIC, C], pypto.DT_FP32), idx: pypto.Tensor((R,), pypto.DT_INT32)):
        pypto.set_vec_tile_shapes(tile_rows, C)
        return pypto.index_select(x, 0, idx)
    return gather_rows


def numpy_impls() -> Dict[str, Callable[..., Any]]:
    def softmax(x):
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    def rmsnorm(x, g):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + np.float32(1e-6)) * g

    def layernorm(x, g, b):
        m = x.mean(-1, keepdims=True)
        xc = x - m
        return xc / np.sqrt((xc * xc).mean(-1, keepdims=True) + np.float32(1e-5)) * g + b

    def chain(x):
        return np.maximum(x * np.float32(2) + np.float32(1), 0) * np.exp(-np.abs(x)) - np.float32(0.5)

    def gelu(x):
        return x * np.float32(0.5) * (np.tanh((x + x * x * x * np.float32(0.044715)) * np.float32(GELU_C)) + 1)

    def transpose(x):
        return np.ascontiguousarray(x.T)

    def gather_rows(x, idx):
        return np.take(x, idx.astype(np.int64), 0)

    def topk(x):
        part = np.argpartition(-x, TOPK - 1, axis=-1)[:, :TOPK]
        vals = np.take_along_axis(x, part, -1)
        order = np.argsort(-vals, axis=-1, kind="stable")
        return np.take_along_axis(vals, order, -1), np.take_along_axis(part, order, -1)

    return {"softmax": softmax, "tile_softmax": softmax, "pl_softmax": softmax, "rmsnorm": rmsnorm,
            "layernorm": layernorm, "chain": chain, "gelu_tanh": gelu, "transpose": transpose, "topk": topk,
            "gather_rows": gather_rows}


def torch_impls(torch: Any) -> Dict[str, Callable[..., Any]]:
    F = torch.nn.functional

    def softmax(x):
        return torch.softmax(x, dim=-1)

    def rmsnorm(x, g):
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6) * g

    def layernorm(x, g, b):
        return F.layer_norm(x, (x.shape[-1],), g.reshape(-1), b.reshape(-1), 1e-5)

    def chain(x):
        return torch.clamp_min(x * 2 + 1, 0) * torch.exp(-torch.abs(x)) - 0.5

    def gelu(x):
        return F.gelu(x, approximate="tanh")

    def transpose(x):
        return x.t().contiguous()

    def topk(x):
        return torch.topk(x, TOPK, dim=-1)

    def gather_rows(x, idx):
        return torch.index_select(x, 0, idx)

    return {"softmax": softmax, "tile_softmax": softmax, "pl_softmax": softmax, "rmsnorm": rmsnorm,
            "layernorm": layernorm, "chain": chain, "gelu_tanh": gelu, "transpose": transpose, "topk": topk,
            "gather_rows": gather_rows}


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes and few repetitions")
    ap.add_argument("--only", nargs="*", default=None, help="kernels to run")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--no-torch-compile", action="store_true")
    ap.add_argument("--out", default=None,
                    help="the report to write (default docs/benchmarks.md; a --quick run writes only this)")
    ap.add_argument("--note", default="", help="a line about the conditions of this run, for the report")
    args = ap.parse_args(argv)

    R, C = (512, 1024) if args.quick else (8192, 2048)  # 64 MiB of fp32 at full size
    reps = 3 if args.quick else args.reps
    memory_bound = ["softmax", "tile_softmax", "pl_softmax", "rmsnorm", "layernorm", "chain", "gelu_tanh",
                    "transpose", "topk", "gather_rows"]
    names = args.only or memory_bound + COMPUTE
    unknown = [nm for nm in names if nm not in memory_bound + COMPUTE + ["asc_vadd"]]
    if unknown:
        ap.error(f"--only: no kernel named {', '.join(unknown)}; the kernels are "
                 f"{', '.join(memory_bound + COMPUTE + ['asc_vadd'])}")
    compute_names = [nm for nm in names if nm in COMPUTE]
    names = [nm for nm in names if nm not in COMPUTE and nm != "asc_vadd"]
    info = machine_info()
    probes = load_probes()
    n = 1 << (22 if args.quick else 25)
    triad1 = probes.triad_gbs(n, 1, 5)
    triadN = probes.triad_gbs(n, args.workers, 5)
    peaks = measure_peaks(probes, args.workers, args.quick)
    print(f"machine: {info['cpu']}, {info['cores']} cores, {info['simd']}")
    print("cube paths:\n  " + "\n  ".join(paths_lines(info)))
    print(f"measured: triad {triad1:.1f} GB/s (1 core), {triadN:.1f} GB/s ({args.workers} cores)")
    print("compute peaks: " + peaks_text(peaks, args.workers))

    try:
        # torch.compile otherwise compiles in a pool of worker processes that stay busy after
        # the memory kernels and slow every later measurement (matmul fp32 measured at half
        # speed, torch's own included).
        os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
        import torch
        torch.set_num_threads(args.workers)
        timpl: Optional[Dict[str, Callable[..., Any]]] = torch_impls(torch)
    except ImportError:
        torch, timpl = None, None
        print("torch not installed: torch columns skipped (pip install torch==2.13.0)")
    nimpl = numpy_impls()
    pypto.set_runtime_options(workers=args.workers, run_mode="cpu")
    makers = {"softmax": (pypto_softmax, 8), "tile_softmax": (pypto_tile_softmax, 8),
              "pl_softmax": (pypto_pl_softmax, 8), "rmsnorm": (pypto_rmsnorm, 8), "layernorm": (pypto_layernorm, 4),
              "chain": (pypto_chain, 8), "gelu_tanh": (pypto_gelu, 8), "transpose": (pypto_transpose, 32),
              "topk": (pypto_topk, 8), "gather_rows": (pypto_gather_rows, 8)}
    rng = np.random.default_rng(0)
    x = rng.standard_normal((R, C)).astype(np.float32)
    g = rng.standard_normal((1, C)).astype(np.float32)
    b = rng.standard_normal((1, C)).astype(np.float32)
    inputs = {"softmax": (x,), "tile_softmax": (x,), "pl_softmax": (x,), "rmsnorm": (x, g), "layernorm": (x, g, b), "chain": (x,), "gelu_tanh": (x,),
              "transpose": (x,), "topk": (x,), "gather_rows": (x, rng.permutation(R).astype(np.int32))}
    rows = []
    for name in names:
        maker, tile_rows = makers[name]
        fn = maker(R, C, tile_rows)
        a = inputs[name]
        ref = nimpl[name](*[v.astype(np.float64) for v in a])
        got = fn(*a)
        if isinstance(got, tuple):  # (values, indices)
            ok = all(np.allclose(g, r, rtol=1e-4, atol=1e-5) for g, r in zip(got, ref))
            bytes_moved = sum(v.nbytes for v in a) + sum(g.nbytes for g in got)
        else:
            ok = np.allclose(got, ref, rtol=1e-4, atol=1e-5)
            bytes_moved = sum(v.nbytes for v in a) + got.nbytes
        results: Dict[str, Tuple[float, float, float]] = {}
        results["pypto"] = summary(measure(fn, a, reps))
        mem = footprint(fn, a)  # pypto's own peak in a warm call, and the bytes of its inputs and outputs
        if timpl is not None:
            ta = tuple(torch.from_numpy(v) for v in a)
            results["torch eager"] = summary(measure(timpl[name], ta, reps))
            if not args.no_torch_compile:
                try:
                    cfn = torch.compile(timpl[name])
                    results["torch.compile"] = summary(measure(cfn, ta, reps, warmup=3))
                except Exception as e:  # noqa: BLE001 - report and go on
                    print(f"torch.compile failed for {name}: {type(e).__name__}: {e}")
        results["numpy"] = summary(measure(nimpl[name], a, reps))
        p_med = results["pypto"][0]
        gbs = bytes_moved / p_med / 1e9
        print(f"\n{name} ({R}x{C} fp32, {bytes_moved / 2**20:.0f} MiB moved) check={'OK' if ok else 'MISMATCH'}; "
              f"pypto {num_kernels(fn)} kernel(s)")
        for impl, (med, q1, q3) in results.items():
            print(f"  {impl:>14}: {med * 1e3:8.2f} ms  [IQR {q1 * 1e3:.2f}-{q3 * 1e3:.2f}]  "
                  f"{bytes_moved / med / 1e9:6.1f} GB/s  pypto speedup x{med / p_med:5.2f}")
        print(f"  pypto at {100 * gbs / triadN:.0f}% of the {args.workers}-core triad bandwidth; "
              f"pypto's own peak memory {footprint_text(*mem)}")
        rows.append((name, ok, bytes_moved, results, gbs, mem))

    compute_rows = run_compute(compute_names, args.quick, reps, torch, peaks, info) if compute_names else []
    asc_rows = run_asc(args.quick, reps, triadN) if "asc_vadd" in (args.only or ["asc_vadd"]) else []
    if not args.quick or args.out:
        args.out = args.out or os.path.join(HERE, "..", "docs", "benchmarks.md")
        write_markdown(args.out, info, triad1, triadN, peaks, args.workers, R, C, reps, rows, args.note,
                       compute_rows, asc_rows)
        print(f"\nwrote {os.path.relpath(args.out)}")
    return 0


def run_asc(quick: bool, reps: int, triad: float) -> List[Any]:
    """The element-level vadd (pypto.asc) beside numpy."""
    import pypto.asc as asc

    tile = 8192

    @asc.jit
    def vadd(x: asc.GlobalAddress, y: asc.GlobalAddress, z: asc.GlobalAddress, block_length: int) -> None:
        offset = asc.get_block_idx() * block_length
        x_gm, y_gm, z_gm = asc.GlobalTensor(), asc.GlobalTensor(), asc.GlobalTensor()
        x_gm.set_global_buffer(x + offset, block_length)
        y_gm.set_global_buffer(y + offset, block_length)
        z_gm.set_global_buffer(z + offset, block_length)
        pipe = asc.TPipe()
        qx, qy = asc.TQue(asc.TPosition.VECIN, 2), asc.TQue(asc.TPosition.VECIN, 2)
        qz = asc.TQue(asc.TPosition.VECOUT, 2)
        for q in (qx, qy, qz):
            pipe.init_buffer(q, 2, tile * 4)
        for i in range(block_length // tile):
            xl, yl = qx.alloc_tensor(asc.float32), qy.alloc_tensor(asc.float32)
            asc.data_copy(xl, x_gm[i * tile:], tile)
            asc.data_copy(yl, y_gm[i * tile:], tile)
            qx.enque(xl)
            qy.enque(yl)
            xl, yl, zl = qx.deque(asc.float32), qy.deque(asc.float32), qz.alloc_tensor(asc.float32)
            asc.add(zl, xl, yl, tile)
            qz.enque(zl)
            qx.free_tensor(xl)
            qy.free_tensor(yl)
            zl = qz.deque(asc.float32)
            asc.data_copy(z_gm[i * tile:], zl, tile)
            qz.free_tensor(zl)

    n = (1 << 20) if quick else (16 << 20)  # 64 MiB of fp32 per operand at full size
    rng = np.random.default_rng(2)
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    z = np.zeros_like(x)
    vadd[8](x, y, z, n // 8)
    ok = bool(np.array_equal(z, x + y))
    res = {"pypto.asc": summary(measure(lambda: vadd[8](x, y, z, n // 8), (), reps)),
           "numpy": summary(measure(lambda: np.add(x, y, out=z), (), reps))}
    gbs = 3 * x.nbytes / res["pypto.asc"][0] / 1e9
    print(f"\nasc_vadd ({n} fp32, {3 * x.nbytes / 2**20:.0f} MiB moved) check={'OK' if ok else 'MISMATCH'}")
    for impl, (med, q1, q3) in res.items():
        print(f"  {impl:>14}: {med * 1e3:8.2f} ms  [IQR {q1 * 1e3:.2f}-{q3 * 1e3:.2f}]")
    ratio = res["pypto.asc"][0] / res["numpy"][0]
    print(f"  pypto.asc at {100 * gbs / triad:.0f}% of the triad bandwidth, {ratio:.1f}x numpy's time")
    rows = [(f"asc_vadd ({n * 4 // 2**20} MiB operands)", ok, res, gbs)]
    return rows + [run_asc_softmax(quick, reps, triad)]


def run_asc_softmax(quick: bool, reps: int, triad: float) -> Any:
    """The TQue row softmax of examples/asc_softmax.py beside numpy and torch eager."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
    from asc_softmax import softmax_kernel  # type: ignore[import-not-found]

    rows, cols, blocks = (512, 1024, 8) if quick else (4096, 1024, 8)
    x = np.random.default_rng(3).standard_normal((rows, cols)).astype(np.float32)
    z = np.zeros_like(x)

    def np_softmax() -> None:
        e = np.exp(x - x.max(-1, keepdims=True))
        np.divide(e, e.sum(-1, keepdims=True), out=z)

    softmax_kernel[blocks](x, z, rows // blocks, cols)
    e = np.exp(x.astype(np.float64) - x.max(-1, keepdims=True))
    ok = bool(np.allclose(z, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7))
    res = {"pypto.asc": summary(measure(lambda: softmax_kernel[blocks](x, z, rows // blocks, cols), (), reps)),
           "numpy": summary(measure(np_softmax, (), reps))}
    try:
        import torch
        tx = torch.from_numpy(x)
        res["torch eager"] = summary(measure(lambda: torch.softmax(tx, -1), (), reps))
    except ImportError:
        pass
    gbs = 2 * x.nbytes / res["pypto.asc"][0] / 1e9
    print(f"\nasc_softmax ([{rows}, {cols}] fp32) check={'OK' if ok else 'MISMATCH'} native={softmax_kernel.last_native}")
    for impl, (med, q1, q3) in res.items():
        print(f"  {impl:>14}: {med * 1e3:8.2f} ms  [IQR {q1 * 1e3:.2f}-{q3 * 1e3:.2f}]")
    return (f"asc_softmax (TQue, [{rows}, {cols}] fp32)", ok, res, gbs)


def num_kernels(fn: Any) -> int:
    last = fn.last
    if not hasattr(last, "program"):  # a tile function: .last is its tensor-level function
        last = last.last
    return int(last.program.num_kernels)


def _cell(res: Dict[str, Tuple[float, float, float]], impl: str) -> str:
    """'median ms [IQR]' of one implementation, or n/a."""
    if impl not in res:
        return "n/a"
    med, q1, q3 = res[impl]
    return f"{med * 1e3:.1f} ms [{q1 * 1e3:.1f}-{q3 * 1e3:.1f}]"


def write_markdown(path: str, info: Dict[str, Any], triad1: float, triadN: float,
                   peaks: Dict[str, Tuple[float, float, str]],
                   workers: int, R: int, C: int, reps: int, rows: List[Any], note: str = "",
                   compute_rows: Optional[List[Any]] = None, asc_rows: Optional[List[Any]] = None) -> None:
    impls = ["pypto", "torch eager", "torch.compile", "numpy"]
    lines = [
        f"## {info['cpu']}: {info['class']}",
        f"<!-- cpu-class: {info['class_key']} -->",
        "",
        f"Generated by `python benchmarks/run.py` on {datetime.date.today()}.",
        "",
        f"- Machine: {info['cpu']}, {info['class']}, {info['cores']} cores ({info['simd']}), "
        f"Python {info['python']}, numpy {info['numpy']}.",
        "- Cube paths (`pypto._core.cpu_paths()`): " + "; ".join(paths_lines(info)) + ".",
        f"- Measured by the suite: STREAM triad {triad1:.1f} GB/s on 1 core, {triadN:.1f} GB/s on {workers}.",
        f"- Compute peaks (benchmarks/probes.cpp): {peaks_text(peaks, workers)}.",
        f"- Inputs {R}x{C} fp32 ({R * C * 4 / 2**20:.0f} MiB); pypto with {workers} workers on the native "
        f"backend, torch with {workers} threads; median of {reps} runs after warm-up (compute-bound kernels: "
        f"{ROUNDS} rounds taking turns), IQR in brackets.",
        "- GB/s counts the bytes each kernel must move (inputs read once, output written once).",
        "- pypto reuses its output buffers across calls (a pool of huge-page blocks); torch and numpy "
        "allocate a fresh 64 MiB output per call and pay its page faults, which is part of the gap.",
        "- pypto memory: pypto's own peak host memory in one warm call (`pypto.memory_stats()`: outputs, created "
        "tensors, workspaces, the cube's shared packings, dense copies of strided arguments; not the caller's "
        "arrays) and its ratio to the bytes of the call's inputs and outputs.",
    ] + ([f"- Conditions: {note}"] if note else []) + ([
        "",
        "| kernel | " + " | ".join(impls) + " | pypto GB/s | % of triad | pypto memory |",
        "|---|" + "---|" * (len(impls) + 3),
    ] if rows else [])
    for name, ok, moved, res, gbs, mem in rows:
        cells = [_cell(res, impl) for impl in impls]
        lines.append(f"| {name}{'' if ok else ' (MISMATCH)'} | " + " | ".join(cells) +
                     f" | {gbs:.1f} | {100 * gbs / triadN:.0f}% | {footprint_text(*mem)} |")
    if compute_rows:
        lines += [
            "",
            "### Compute-bound kernels (the cube path)",
            "",
            f"GFLOP/s (GOP/s for int8) of the useful work (2*M*N*K per matmul) and its share of the {workers}-core "
            "peak of the instruction the row's dtype runs on (the compute peaks above: fp32 FMA for fp32, the bf16 "
            "and int8 dot products, AMX tiles where the cube takes them). The implementations take turns "
            f"({ROUNDS} rounds), so a noisy stretch of the machine falls on all of them. torch: `torch.matmul`, "
            "`torch._int_mm`, `scaled_dot_product_attention`; numpy: OpenBLAS.",
            "",
            "| kernel | shape | pypto | torch eager | numpy | pypto speed vs torch (torch time / pypto time) "
            "| pypto GFLOP/s | % of peak | pypto memory |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for name, what, ok, res, gflops, pk, peak, mem in compute_rows:
            cells = [_cell(res, impl) for impl in ("pypto", "torch eager", "numpy")]
            ratio = f"{res['torch eager'][0] / res['pypto'][0]:.2f}x" if "torch eager" in res else "n/a"
            share = f"{100 * gflops / peak:.0f}% of {pk}" if peak > 0 else "n/a"
            lines.append(f"| {name}{'' if ok else ' (MISMATCH)'} | {what} | " + " | ".join(cells) +
                         f" | {ratio} | {gflops:.1f} | {share} | {footprint_text(*mem)} |")
    if asc_rows:
        lines += [
            "",
            "### The element level (pypto.asc)",
            "",
            "A PyAsc-style vadd (8 blocks, TQue double buffering, 8192-element tiles; GM -> UB -> add -> GM) against "
            "numpy's `np.add(x, y, out=z)` on the same 64 MiB operands, and the TQue row softmax of "
            "examples/asc_softmax.py (reduce_max, get_value, adds, exp, reduce_sum, muls per row) against numpy and "
            "torch. Both replay their recorded instruction streams natively (the first launch interpreted them); "
            "every tile goes through UB as on the chip, so the vadd makes three passes over the data where numpy "
            "makes one. GB/s counts the operands read and the result written once.",
            "",
            "| kernel | pypto.asc | numpy | torch eager | pypto.asc / numpy | pypto.asc GB/s | % of triad |",
            "|---|---|---|---|---|---|---|",
        ]
        for name, ok, res, gbs in asc_rows:
            lines.append(f"| {name}{'' if ok else ' (MISMATCH)'} | {_cell(res, 'pypto.asc')} | {_cell(res, 'numpy')} | "
                         f"{_cell(res, 'torch eager')} | {res['pypto.asc'][0] / res['numpy'][0]:.2f}x | {gbs:.1f} | "
                         f"{100 * gbs / triadN:.0f}% |")
    lines.append("")
    merge_class_section(path, info["class_key"], "\n".join(lines))


HEADER = """# Benchmarks

Generated by `python benchmarks/run.py`: one section per CPU class it ran on (CPUID vendor,
family and model, named in the heading with the CPU's flags below it); a run replaces the
section of its own class and keeps the others. Do not edit by hand. Figures of one class say
nothing of another: each was measured on the machine its section names.
"""


def merge_class_section(path: str, key: str, section: str) -> None:
    """Writes `section` into the file at `path` in place of the section of CPU class `key`,
    keeping the sections of the other classes (a file from before the sections is replaced)."""
    marker = "<!-- cpu-class: "
    sections: Dict[str, str] = {}
    order: List[str] = []
    try:
        text = open(path).read()
    except OSError:
        text = ""
    chunks = text.split("\n## ")
    for chunk in chunks[1:]:
        body = "## " + chunk
        if marker in body:
            k = body.split(marker, 1)[1].split(" -->", 1)[0]
            sections[k] = body.rstrip("\n") + "\n"
            order.append(k)
    if key not in sections:
        order.append(key)
    sections[key] = section.rstrip("\n") + "\n"
    with open(path, "w") as f:
        f.write(HEADER + "\n" + "\n".join(sections[k] for k in order))


if __name__ == "__main__":
    sys.exit(main())
