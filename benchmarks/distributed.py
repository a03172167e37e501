"""Distributed benchmarks: pypto.language.distributed (pld) on the ranks of this host against
torch.distributed's gloo backend, in one run, and a tensor-parallel layer on 2 ranks against the
same math in one process.

1. allreduce (sum, fp32) of 4 KiB and 64 MiB per rank over 2 and 4 local ranks. pypto: a
   @pl.jit.host program that publishes each rank's data into a window, allreduces it in the HOST
   form (mode="mesh" and "ring") and reads it back. Timed three ways: the first call (cold: rank
   processes started for a new rank count, the ranks' kernels traced and compiled, or taken from
   the disk cache), the warm call (what a user sees each time: staging the arguments into shared
   memory, a fresh heap, the ranks' work, the copy back) and one allreduce in steady state (the
   extra time of a call making K allreduces over one making 1, divided by K - 1). gloo: ranks
   spawned with torch.multiprocessing, init_process_group("gloo", tcp://127.0.0.1:PORT), each
   dist.all_reduce timed inside the ranks (the slowest rank's time per iteration). Bus bandwidth
   is 2 (P - 1) / P * bytes / time.
2. On 2 ranks against one process: matmul + allreduce + rmsnorm (each rank x_r @ W_r on its half
   of K, the partial products summed by an allreduce in the rank's function, a residual added,
   rmsnorm) and allgather + matmul (each rank's rows of x gathered, times the rank's column half
   of W); the one-process version is the same pl code on the whole x and W. Every result is
   checked against numpy.

    python benchmarks/distributed.py            # the sizes above
    python benchmarks/distributed.py --quick    # 4 KiB and 1 MiB, small layer, few iterations (< 2 min)
    python benchmarks/distributed.py --out docs/benchmarks.md   # also write the tables into its section

The pl functions the ranks run are module-level (a rank process finds them by module and name):
one set per shape, made below by `_register` for every size either mode uses.
"""

# (No `from __future__ import annotations`: the pl functions made in the factories below take
# their shapes from the factory's variables, which a string annotation could not see.)
import argparse
import datetime
import os
import queue
import socket
import statistics
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

import pypto.language as pl
import pypto.language.distributed as pld
from pypto.ir.distributed_compiled_program import DistributedConfig
from pypto.runtime import RunConfig

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # (machine.py beside this file)

from machine import ROUNDS, machine_info, summary  # noqa: E402

COLS = 1024                      # the allreduce buffers are [rows, 1024] fp32: 4 KiB per row
FULL_ROWS = (1, 16384)           # 4 KiB and 64 MiB per rank
QUICK_ROWS = (1, 256)            # 4 KiB and 1 MiB
FULL_LAYER = (16, 1536, 5120)    # M, K, N of the 2-rank layer: x [M, K] @ W [K, N]
QUICK_LAYER = (16, 512, 1024)
LAYER_RANKS = 2
EPS = 1e-6
NORM_ROWS = 8                    # rows per tile of the rmsnorm epilogue


def _register(fn: Callable[..., Any], name: str) -> Any:
    """`fn` (made in a factory) as the module-level pl function `name`, which a rank resolves."""
    fn.__name__ = fn.__qualname__ = name
    jitted = pl.jit(fn)
    globals()[name] = jitted
    return jitted


# --- 1. allreduce ---------------------------------------------------------------------------------

def _allreduce_fns(rows: int) -> Tuple[Any, Any]:
    """publish (a rank's data into its copy of the window) and consume (the window into the rank's
    output), for [rows, COLS] fp32. The stores do not reassign: the pl.range stays a runtime loop
    (a carried value would unroll it)."""
    tr = min(rows, 64)

    def publish(x: pl.Tensor[[rows, COLS], pl.FP32], data: pld.DistributedTensor[[rows, COLS], pl.FP32]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="publish"):
            for i in pl.range(rows // tr):
                pl.store(pl.load(x, [i * tr, 0], [tr, COLS]), [i * tr, 0], data)
        return data

    def consume(y: pl.Out[pl.Tensor[[rows, COLS], pl.FP32]], data: pld.DistributedTensor[[rows, COLS], pl.FP32]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="consume"):
            for i in pl.range(rows // tr):
                pl.store(pl.load(data, [i * tr, 0], [tr, COLS]), [i * tr, 0], y)
        return y

    return _register(publish, f"_publish_{rows}"), _register(consume, f"_consume_{rows}")


ALLREDUCE_FNS = {rows: _allreduce_fns(rows) for rows in sorted(set(FULL_ROWS + QUICK_ROWS))}


@pl.jit.host
def allreduce_host(x: pl.Tensor, y: pl.Out[pl.Tensor], mode: str, rounds: int):
    """x, y: [P, rows, COLS]; every y[r] becomes the sum over r of x[r] (times P ** (rounds - 1))."""
    n = pld.world_size()
    rows = x.shape[1]
    publish, consume = ALLREDUCE_FNS[rows]
    buf = pld.alloc_window_buffer([rows, COLS], dtype=pl.FP32)
    sig = pld.alloc_window_buffer([n, 1], dtype=pl.INT32)
    for r in pl.range(n):
        publish(x[r], pld.window(buf, [rows, COLS], dtype=pl.FP32), device=r)
    data = pld.window(buf, [rows, COLS], dtype=pl.FP32)
    signal = pld.window(sig, [n, 1], dtype=pl.INT32)
    for _ in range(rounds):  # the HOST form: one built-in call on every rank
        data = pld.tensor.allreduce(data, signal, op=pld.ReduceOp.Sum, mode=mode)
    for r in pl.range(n):
        consume(y[r], data, device=r)


def rank_data(rank: int, numel: int) -> np.ndarray:
    """Rank `rank`'s allreduce input (the same for pypto and gloo)."""
    return np.random.default_rng(1000 + rank).standard_normal(numel, dtype=np.float32)


# --- 2. a tensor-parallel layer on 2 ranks against one process -------------------------------------

def _rmsnorm_rows(h: Any, gt: Any, n: int) -> Any:
    ms = pl.muls(pl.row_sum(pl.mul(h, h)), 1.0 / n)
    return pl.col_expand_mul(pl.row_expand_mul(h, pl.rsqrt(pl.adds(ms, EPS))), gt)


def _layer_fns(M: int, K: int, N: int, P: int) -> Dict[str, Any]:
    KP, NP, MR, tr = K // P, N // P, M // P, min(M, NORM_ROWS)
    tag = f"{M}x{K}x{N}_p{P}"

    def mm_allreduce_norm_rank(x: pl.Tensor[[M, KP], pl.FP32], w: pl.Tensor[[KP, N], pl.FP32],
                               res: pl.Tensor[[M, N], pl.FP32], g: pl.Tensor[[1, N], pl.FP32],
                               y: pl.Out[pl.Tensor[[M, N], pl.FP32]],
                               part: pld.DistributedTensor[[M, N], pl.FP32],
                               sig: pld.DistributedTensor[[P, 1], pl.INT32]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="matmul"):
            part = pl.assemble(part, pl.matmul(x, w), [0, 0])
        part = pld.tensor.allreduce(part, sig, op=pld.ReduceOp.Sum, mode="mesh")
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="residual_rmsnorm"):
            gt = pl.load(g, [0, 0], [1, N])
            for i in pl.range(M // tr):
                h = pl.add(pl.load(part, [i * tr, 0], [tr, N]), pl.load(res, [i * tr, 0], [tr, N]))
                pl.store(_rmsnorm_rows(h, gt, N), [i * tr, 0], y)
        return y

    def mm_norm_single(x: pl.Tensor[[M, K], pl.FP32], w: pl.Tensor[[K, N], pl.FP32],
                       res: pl.Tensor[[M, N], pl.FP32], g: pl.Tensor[[1, N], pl.FP32],
                       y: pl.Out[pl.Tensor[[M, N], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="matmul_residual_rmsnorm"):
            mm = pl.matmul(x, w)
            gt = pl.load(g, [0, 0], [1, N])
            for i in pl.range(M // tr):
                h = pl.add(pl.load(mm, [i * tr, 0], [tr, N]), pl.load(res, [i * tr, 0], [tr, N]))
                pl.store(_rmsnorm_rows(h, gt, N), [i * tr, 0], y)
        return y

    def allgather_mm_rank(x: pl.Tensor[[1, MR, K], pl.FP32], w: pl.Tensor[[K, NP], pl.FP32],
                          y: pl.Out[pl.Tensor[[M, NP], pl.FP32]],
                          xg: pld.DistributedTensor[[P, MR, K], pl.FP32],
                          sig: pld.DistributedTensor[[P, 1], pl.INT32]):
        xg = pld.tensor.allgather(x, xg, sig)
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="matmul"):
            y[:] = pl.matmul(pl.reshape(xg, [M, K]), w)
        return y

    def mm_single(x: pl.Tensor[[M, K], pl.FP32], w: pl.Tensor[[K, N], pl.FP32],
                  y: pl.Out[pl.Tensor[[M, N], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="matmul"):
            y[:] = pl.matmul(x, w)
        return y

    return {"tp_rank": _register(mm_allreduce_norm_rank, f"_mm_allreduce_norm_rank_{tag}"),
            "tp_single": _register(mm_norm_single, f"_mm_norm_single_{tag}"),
            "ag_rank": _register(allgather_mm_rank, f"_allgather_mm_rank_{tag}"),
            "ag_single": _register(mm_single, f"_mm_single_{tag}")}


LAYER_FNS = {shape: _layer_fns(*shape, LAYER_RANKS) for shape in (FULL_LAYER, QUICK_LAYER)}


@pl.jit.host
def mm_allreduce_norm_host(x: pl.Tensor, w: pl.Tensor, res: pl.Tensor, g: pl.Tensor, y: pl.Out[pl.Tensor]):
    """x: [P, M, K/P] (rank r: columns r of x), w: [P, K/P, N] (rows r of W); y: [P, M, N]."""
    n = pld.world_size()
    M, N = res.shape
    fn = LAYER_FNS[(M, x.shape[2] * n, N)]["tp_rank"]
    part = pld.alloc_window_buffer([M, N], dtype=pl.FP32)
    sig = pld.alloc_window_buffer([n, 1], dtype=pl.INT32)
    for r in pl.range(n):
        fn(x[r], w[r], res, g, y[r], pld.window(part, [M, N], dtype=pl.FP32), pld.window(sig, [n, 1], dtype=pl.INT32),
           device=r)


@pl.jit.host
def allgather_mm_host(x: pl.Tensor, w: pl.Tensor, y: pl.Out[pl.Tensor]):
    """x: [P, M/P, K] (rank r: rows r of x), w: [P, K, N/P] (columns r of W); y: [P, M, N/P]."""
    n = pld.world_size()
    _, MR, K = x.shape
    fn = LAYER_FNS[(MR * n, K, w.shape[2] * n)]["ag_rank"]
    xg = pld.alloc_window_buffer([n, MR, K], dtype=pl.FP32)
    sig = pld.alloc_window_buffer([n, 1], dtype=pl.INT32)
    for r in pl.range(n):
        fn(x[r:r + 1], w[r], y[r], pld.window(xg, [n, MR, K], dtype=pl.FP32), pld.window(sig, [n, 1], dtype=pl.INT32),
           device=r)


# --- gloo: persistent ranks taking commands --------------------------------------------------------

def _gloo_rank(rank: int, n: int, port: int, commands: List[Any], results: Any) -> None:
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=n)
    try:
        while True:
            cmd = commands[rank].get()
            if cmd is None:
                break
            numel, iters, warmup, stride = cmd
            t = torch.from_numpy(rank_data(rank, numel))
            dist.barrier()
            t0 = time.perf_counter()
            dist.all_reduce(t)  # checked by the orchestrator (a strided sample)
            first = time.perf_counter() - t0
            sample = t[::stride].numpy().copy()
            t.div_(n)  # (P is a power of two: exact) keeps the values in range over the iterations
            times = []
            for i in range(warmup + iters):
                dist.barrier()
                t0 = time.perf_counter()
                dist.all_reduce(t)
                dt = time.perf_counter() - t0
                t.div_(n)
                if i >= warmup:
                    times.append(dt)
            results.put((rank, first, sample, times))
    finally:
        dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class GlooRanks:
    """`n` gloo ranks (torch.multiprocessing.spawn), kept for every size so the turns of gloo and
    pypto can alternate."""

    def __init__(self, n: int) -> None:
        import torch.multiprocessing as tmp

        self.n = n
        ctx = tmp.get_context("spawn")
        self.commands = [ctx.SimpleQueue() for _ in range(n)]
        self.results = ctx.Queue()
        t0 = time.perf_counter()
        self.procs = tmp.spawn(_gloo_rank, args=(n, _free_port(), self.commands, self.results), nprocs=n,
                               join=False)
        self.run(1, 1, 0, 1)  # every rank up and connected
        self.start_s = time.perf_counter() - t0

    def run(self, numel: int, iters: int, warmup: int, stride: int) -> Tuple[float, np.ndarray, List[float]]:
        """(first allreduce s, rank 0's strided sample of the result, per-iteration s: the slowest rank's)."""
        for q in self.commands:
            q.put((numel, iters, warmup, stride))
        got = []
        while len(got) < self.n:
            try:
                got.append(self.results.get(timeout=5))
            except queue.Empty:
                self.procs.join(timeout=0)  # raises if a gloo rank failed
        got.sort(key=lambda r: r[0])
        first = max(r[1] for r in got)
        times = [max(r[3][i] for r in got) for i in range(iters)]
        for r in got[1:]:
            np.testing.assert_array_equal(r[2], got[0][2])  # every rank holds the same result
        return first, got[0][2], times

    def close(self) -> None:
        for q in self.commands:
            q.put(None)
        deadline = time.monotonic() + 60
        while not self.procs.join(timeout=5) and time.monotonic() < deadline:
            pass
        for p in self.procs.processes:
            if p.is_alive():
                p.kill()


# --- measurement ------------------------------------------------------------------------------------

def _config(n: int) -> RunConfig:
    return RunConfig(distributed_config=DistributedConfig(device_ids=list(range(n)), timeout=120.0))


def _timed(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> float:
    t0 = time.perf_counter()
    fn(*args, **kwargs)
    return time.perf_counter() - t0


def fmt_t(s: float) -> str:
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} us"


def fmt_med(samples: Sequence[float]) -> str:
    med, q1, q3 = summary(list(samples))
    return f"{fmt_t(med)} [{fmt_t(q1)}-{fmt_t(q3)}]"


def size_text(nbytes: int) -> str:
    return f"{nbytes >> 20} MiB" if nbytes >= 1 << 20 else f"{nbytes >> 10} KiB"


def bus_gbs(P: int, nbytes: int, s: float) -> float:
    return 2 * (P - 1) / P * nbytes / s / 1e9


def run_allreduce(P: int, rows_list: Sequence[int], quick: bool, reps: int, log: Callable[[str], None]) -> List[Dict]:
    """Every size for P ranks; gloo and the pypto modes take turns (ROUNDS rounds)."""
    cfg = _config(P)
    gloo = GlooRanks(P)
    log(f"  gloo: {P} ranks up in {gloo.start_s:.1f} s")
    out = []
    try:
        for rows in rows_list:
            numel = rows * COLS
            nbytes = numel * 4
            big = nbytes >= 1 << 20
            # allreduces in the steady-state call: enough that they take about as long as the rest of
            # the call, so their difference stands above the call's noise
            K = 17 if nbytes >= 16 << 20 else 33
            gloo_iters = (4 if quick else 6) if big else (20 if quick else 100)  # per round
            stride = max(1, numel // 4096)
            x = np.stack([rank_data(r, numel).reshape(rows, COLS) for r in range(P)])
            want = x[0].copy()
            for r in range(1, P):
                want += x[r]
            y = np.zeros_like(x)
            res: Dict[str, Any] = {"P": P, "bytes": nbytes, "K": K}
            for mode in ("mesh", "ring"):
                y[...] = 0
                res[mode + " first"] = _timed(allreduce_host, x, y, mode, 1, config=cfg)
                for r in range(P):
                    np.testing.assert_allclose(y[r], want, rtol=1e-5, atol=1e-5)
                y[...] = 0
                _timed(allreduce_host, x, y, mode, K, config=cfg)  # warm-up of the K-round call
                for r in range(P):
                    np.testing.assert_allclose(y[r], want * float(P) ** (K - 1), rtol=1e-4,
                                               atol=1e-5 * float(P) ** (K - 1))
                res[mode + " call"], res[mode + " one"] = [], []
            res["gloo"] = []
            for rnd in range(ROUNDS):
                first, sample, times = gloo.run(numel, gloo_iters, 2 if rnd == 0 else 1, stride)
                if rnd == 0:
                    res["gloo first"] = first
                    np.testing.assert_allclose(sample, want.reshape(-1)[::stride], rtol=1e-5, atol=1e-5)
                res["gloo"] += times
                for mode in ("mesh", "ring"):
                    for _ in range(reps):
                        t1 = _timed(allreduce_host, x, y, mode, 1, config=cfg)
                        tk = _timed(allreduce_host, x, y, mode, K, config=cfg)
                        res[mode + " call"].append(t1)
                        res[mode + " one"].append((tk - t1) / (K - 1))
            log(f"  {P} ranks, {size_text(nbytes)}: gloo {fmt_med(res['gloo'])}, pypto mesh call "
                f"{fmt_med(res['mesh call'])}, ring call {fmt_med(res['ring call'])}")
            out.append(res)
    finally:
        gloo.close()
    return out


def run_layer(shape: Tuple[int, int, int], reps: int, log: Callable[[str], None]) -> List[Dict]:
    M, K, N = shape
    P = LAYER_RANKS
    fns = LAYER_FNS[shape]
    cfg = _config(P)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((M, K)).astype(np.float32)
    w = (rng.standard_normal((K, N)) / np.sqrt(K)).astype(np.float32)
    res = rng.standard_normal((M, N)).astype(np.float32)
    g = rng.standard_normal((1, N)).astype(np.float32)
    KP, NP, MR = K // P, N // P, M // P

    # matmul + allreduce + rmsnorm: K split over the ranks
    x_k = np.ascontiguousarray(np.stack([x[:, r * KP:(r + 1) * KP] for r in range(P)]))
    w_k = np.ascontiguousarray(np.stack([w[r * KP:(r + 1) * KP] for r in range(P)]))
    y_tp = np.zeros((P, M, N), np.float32)
    y_1 = np.zeros((M, N), np.float32)

    def np_tp() -> np.ndarray:
        h = x @ w + res
        return h / np.sqrt((h * h).mean(-1, keepdims=True) + np.float32(EPS)) * g

    h64 = x.astype(np.float64) @ w.astype(np.float64) + res
    want_tp = h64 / np.sqrt((h64 * h64).mean(-1, keepdims=True) + EPS) * g

    # allgather + matmul: the rows of x over the ranks, W's columns over the ranks
    x_m = np.ascontiguousarray(x.reshape(P, MR, K))
    w_n = np.ascontiguousarray(np.stack([w[:, r * NP:(r + 1) * NP] for r in range(P)]))
    y_ag = np.zeros((P, M, NP), np.float32)
    y_2 = np.zeros((M, N), np.float32)
    want_ag = x.astype(np.float64) @ w.astype(np.float64)

    def check_tp() -> None:
        for r in range(P):
            np.testing.assert_allclose(y_tp[r], want_tp, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(y_1, want_tp, rtol=1e-4, atol=1e-4)

    def check_ag() -> None:
        np.testing.assert_allclose(np.concatenate(list(y_ag), axis=1), want_ag, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(y_2, want_ag, rtol=1e-4, atol=1e-4)

    progs = [
        ("matmul + allreduce + rmsnorm", f"x [{M}, {K}] @ W [{K}, {N}] + residual, rmsnorm; K split over {P} ranks",
         lambda: mm_allreduce_norm_host(x_k, w_k, res, g, y_tp, config=cfg),
         lambda: fns["tp_single"](x, w, res, g, y_1), np_tp, check_tp),
        ("allgather + matmul", f"x [{M}, {K}] (rows over {P} ranks, gathered) @ W [{K}, {N}] (columns over the ranks)",
         lambda: allgather_mm_host(x_m, w_n, y_ag, config=cfg),
         lambda: fns["ag_single"](x, w, y_2), lambda: x @ w, check_ag),
    ]
    out = []
    for name, what, dist_fn, single_fn, np_fn, check in progs:
        r: Dict[str, Any] = {"name": name, "what": what}
        r["dist first"] = _timed(dist_fn)
        r["single first"] = _timed(single_fn)
        check()
        r["dist"], r["single"], r["numpy"] = [], [], []
        # Blocks of calls taking turns, each after an untimed one (call by call, numpy's OpenBLAS
        # threads and pypto's workers would meet on the same cores).
        for _ in range(ROUNDS):
            for key, fn in (("dist", dist_fn), ("single", single_fn), ("numpy", np_fn)):
                fn()
                r[key] += [_timed(fn) for _ in range(reps)]
        check()
        log(f"  {name}: {P} ranks {fmt_med(r['dist'])}, one process {fmt_med(r['single'])}")
        out.append(r)
    return out


# --- report -----------------------------------------------------------------------------------------

def report(info: Dict[str, Any], ranks: Sequence[int], ar: List[Dict], layer: List[Dict], reps: int,
           layer_reps: int, load: Tuple[float, float, float], note: str) -> str:
    cores = info["cores"] or 1
    lines = [
        f"- Machine: {info['cpu']}, {info['class']}, {cores} cores ({info['simd']}), Python {info['python']}, "
        f"numpy {info['numpy']}, torch {_torch_version()}. Load average at the start: "
        f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}.",
        f"- Each rank is a process of this host: pypto's ranks (pypto.dist) each run the native backend with its "
        f"own worker pool ({cores} threads), gloo's ranks use 1 torch thread. "
        + (f"With {max(ranks)} ranks on {cores} cores the ranks oversubscribe the CPU: those figures measure "
           "time-sharing as much as the collective." if max(ranks) > cores else ""),
        f"- Median [IQR]; pypto: {ROUNDS * reps} calls, gloo: the iterations of {ROUNDS} rounds, taking turns "
        "with pypto's modes. pypto's first call is cold: the rank processes start when a rank count is new "
        "(the first size's mesh row), every rank traces and compiles its kernels (the kernel disk cache may hold "
        "them from an earlier run); gloo's first call is its first all_reduce of that size (after "
        "init_process_group).",
        "- pypto call: the whole `allreduce_host(x, y, mode, 1)` (publish into the window, allreduce, read "
        "back), as a user calls it: the arguments x and y ([P, size]) are copied into the program's shared-memory "
        "arena every call and y (the pl.Out argument) back; the arena and heap are kept from call to call. "
        "One allreduce: (call with K allreduces - call "
        "with 1) / (K - 1), over pairs of adjacent calls (K = 33 up to 1 MiB, 17 for 64 MiB): the collective "
        "with the rank pool warm, its kernels compiled and the pages of the window mapped (each HOST-form "
        "allreduce is one more call on every rank: three barriers and the reduction).",
        "- gloo: `dist.all_reduce` of a torch tensor inside the ranks, after a `dist.barrier()`, the slowest "
        "rank's time per iteration.",
        "- Bus GB/s = 2 (P - 1) / P x bytes per rank / time. pypto / gloo: time ratio (above 1: pypto slower).",
    ] + ([f"- Conditions: {note}"] if note else []) + [
        "",
        "| ranks | size per rank | implementation | first call | whole call | one allreduce | bus GB/s "
        "(call / one) | pypto / gloo (call / one) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in ar:
        P, nbytes = r["P"], r["bytes"]
        g_med = statistics.median(r["gloo"])
        for mode in ("mesh", "ring"):
            c_med, o_med = statistics.median(r[mode + " call"]), statistics.median(r[mode + " one"])
            lines.append(
                f"| {P} | {size_text(nbytes)} | pypto {mode} | {fmt_t(r[mode + ' first'])} | "
                f"{fmt_med(r[mode + ' call'])} | {fmt_med(r[mode + ' one'])} | "
                f"{bus_gbs(P, nbytes, c_med):.3g} / {_gbs(P, nbytes, o_med)} | "
                f"{c_med / g_med:.1f}x / {_ratio(o_med, g_med)} |")
        lines.append(f"| {P} | {size_text(nbytes)} | torch gloo | {fmt_t(r['gloo first'])} | n/a | "
                     f"{fmt_med(r['gloo'])} | n/a / {bus_gbs(P, nbytes, g_med):.3g} | |")
    if layer:
        lines += [
            "",
            f"On {LAYER_RANKS} ranks against one process (fp32; the same pl code, the one-process version on the "
            f"whole x and W with {cores} workers; numpy: the same math with OpenBLAS, for scale). Median [IQR] of "
            f"{ROUNDS * layer_reps} calls each, in blocks of {layer_reps} taking turns. The 2-rank call "
            "includes the staging of every argument (W included) into shared memory and back; every result is "
            "checked against numpy (float64).",
            "",
            "| program | shapes | pypto 2 ranks (whole call) | pypto 1 process | numpy | 2 ranks / 1 process "
            "| first call (2 ranks / 1 process) |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in layer:
            d, s = statistics.median(r["dist"]), statistics.median(r["single"])
            lines.append(f"| {r['name']} | {r['what']} | {fmt_med(r['dist'])} | {fmt_med(r['single'])} | "
                         f"{fmt_med(r['numpy'])} | {d / s:.1f}x | {fmt_t(r['dist first'])} / "
                         f"{fmt_t(r['single first'])} |")
    return "\n".join(lines)


def _gbs(P: int, nbytes: int, s: float) -> str:
    return f"{bus_gbs(P, nbytes, s):.3g}" if s > 0 else "n/a"


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if a > 0 else "n/a"


def _torch_version() -> str:
    try:
        import torch
        return torch.__version__
    except ImportError:
        return "absent"


DOC_KEY = "benchmarks/distributed.py"


def doc_section(body: Optional[str], quick: bool) -> str:
    """The section of docs/benchmarks.md (its marker keeps it through run.py's merge)."""
    lines = [
        "## Distributed: ranks of one host (benchmarks/distributed.py)",
        f"<!-- cpu-class: {DOC_KEY} -->",
        "",
        "`python benchmarks/distributed.py [--quick] [--out docs/benchmarks.md]`: pypto.language.distributed "
        "(pld; each rank a process of this host, windows in a shared-memory heap) against torch.distributed's "
        "gloo backend, in one run. With `--out` the tables of the run replace this section (its marker keeps it "
        "when run.py rewrites the file; its figures are of the machine it names).",
        "",
        "- allreduce (sum, fp32) of 4 KiB and 64 MiB per rank over 2 and 4 ranks. pypto: a `@pl.jit.host` "
        "program publishes each rank's data into a window, allreduces it (the HOST form, `mode=\"mesh\"` and "
        "`\"ring\"`) and reads it back, timed as the first call (cold), the warm whole call (what a user sees; "
        "the arguments go through shared memory on every call) and one allreduce in steady state (the extra "
        "time of K allreduces in one call). gloo: ranks from `torch.multiprocessing.spawn`, "
        "`init_process_group(\"gloo\", \"tcp://127.0.0.1:PORT\")`, each `dist.all_reduce` timed inside the "
        "ranks. Bus bandwidth 2 (P - 1) / P x bytes / time, and the pypto / gloo time ratio.",
        "- 2 ranks against one process: matmul + allreduce + rmsnorm (K split over the ranks; the partial "
        "products summed by an allreduce in the ranks' function, a residual added, rmsnorm) and allgather + "
        "matmul (x's rows gathered, W's columns split), against the same pl code in one process on the whole x "
        "and W; every result checked against numpy.",
        "- The layer is x [{0}, {1}] @ W [{1}, {2}]; `--quick`: 4 KiB and 1 MiB, x [{3}, {4}] @ W [{4}, {5}], few "
        "iterations (under two minutes). ".format(*FULL_LAYER, *QUICK_LAYER) +
        "With more ranks than cores the ranks oversubscribe the CPU; the notes of the table say so.",
    ]
    if body is None:
        lines += ["", "No figures yet: they are taken with `--out` on a quiet machine."]
    else:
        lines += ["", f"Generated by `python benchmarks/distributed.py{' --quick' if quick else ''}` on "
                  f"{datetime.date.today()}.", "", body]
    return "\n".join(lines) + "\n"


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="4 KiB and 1 MiB, a small layer, few iterations")
    ap.add_argument("--ranks", default="2,4", help="rank counts of the allreduce, comma-separated")
    ap.add_argument("--reps", type=int, default=0, help="pypto calls per round (default 2 quick, 5 full)")
    ap.add_argument("--only", choices=("allreduce", "layer"), default=None)
    ap.add_argument("--out", default=None, help="write the tables into this file's section (docs/benchmarks.md)")
    ap.add_argument("--note", default="", help="a line about the conditions of this run, for the report")
    args = ap.parse_args(argv)
    ranks = [int(v) for v in args.ranks.split(",") if v]
    reps = args.reps or (2 if args.quick else 5)
    layer_reps = 3 if args.quick else 10
    rows_list = QUICK_ROWS if args.quick else FULL_ROWS
    layer_shape = QUICK_LAYER if args.quick else FULL_LAYER
    load = os.getloadavg()
    info = machine_info()
    print(f"machine: {info['cpu']}, {info['class']}, {info['cores']} cores ({info['simd']}); load {load[0]:.2f}")
    t_start = time.perf_counter()

    def log(s: str) -> None:
        print(f"[{time.perf_counter() - t_start:6.1f} s] {s}", flush=True)

    ar: List[Dict] = []
    if args.only in (None, "allreduce"):
        for P in ranks:
            log(f"allreduce, {P} ranks")
            ar += run_allreduce(P, rows_list, args.quick, reps, log)
    layer: List[Dict] = []
    if args.only in (None, "layer"):
        log(f"layer {layer_shape} on {LAYER_RANKS} ranks and on one process")
        layer = run_layer(layer_shape, layer_reps, log)
    log("done")
    body = report(info, ranks, ar, layer, reps, layer_reps, load, args.note)
    print()
    print(body)
    if args.out:
        from run import merge_class_section  # (benchmarks/run.py: keeps the other sections)
        merge_class_section(args.out, DOC_KEY, doc_section(body, args.quick))
        print(f"\nwrote the section '{DOC_KEY}' of {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
