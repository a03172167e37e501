"""What a second host costs: the same pld programs on ranks of one host and on ranks spread over
simulated hosts (python/pypto/dist/engine.py: each host its own heap, MPI on loopback TCP, no
shared memory between hosts), in one run, taking turns.

1. allreduce (sum, fp32; benchmarks/distributed.py's `allreduce_host`, HOST form, mesh and ring)
   of 4 KiB and 64 MiB per rank (`--quick`: 4 KiB and 1 MiB) over 2 ranks (1 per host) and 4 ranks
   (2 per host): the warm whole call and one allreduce in steady state ((call with K allreduces -
   call with 1) / (K - 1)), and what the engine sent.
2. The tensor-parallel layer of benchmarks/distributed.py (matmul + allreduce + rmsnorm,
   allgather + matmul) on 2 ranks: one host against two.

    python benchmarks/distributed_hosts.py [--quick]

Every result is checked against numpy. Median [IQR] over rounds that alternate the two set-ups.
"""

import argparse
import datetime
import os
import statistics
import sys
import time
from typing import Any, Dict, List, Optional

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import distributed as d  # noqa: E402  (its pl functions are module-level: the ranks find them there)
from machine import machine_info, summary  # noqa: E402

from pypto.ir.distributed_compiled_program import DistributedConfig  # noqa: E402
from pypto.dist import mpi_pool  # noqa: E402
from pypto.runtime import RunConfig  # noqa: E402


def config(n: int, hosts: int) -> RunConfig:
    return RunConfig(distributed_config=DistributedConfig(device_ids=list(range(n)), timeout=120.0, hosts=hosts))


def timed(fn: Any, *args: Any, **kwargs: Any) -> float:
    t0 = time.perf_counter()
    fn(*args, **kwargs)
    return time.perf_counter() - t0


def med(xs: List[float]) -> str:
    m, q1, q3 = summary(xs)
    return f"{d.fmt_t(m)} [{d.fmt_t(q1)}-{d.fmt_t(q3)}]"


def run_allreduce(P: int, rows: int, reps: int, rounds: int) -> Dict[str, Any]:
    numel = rows * d.COLS
    nbytes = numel * 4
    K = 9 if nbytes >= 16 << 20 else 17
    x = np.stack([d.rank_data(r, numel).reshape(rows, d.COLS) for r in range(P)])
    want = x.sum(0)
    y = np.zeros_like(x)
    res: Dict[str, Any] = {"P": P, "bytes": nbytes}
    for hosts in (1, 2):
        for mode in ("mesh", "ring"):
            cfg = config(P, hosts)
            y[...] = 0
            d.allreduce_host(x, y, mode, 1, config=cfg)
            for r in range(P):
                np.testing.assert_allclose(y[r], want, rtol=1e-5, atol=1e-5)
            d.allreduce_host(x, y, mode, K, config=cfg)  # warm
            res[(hosts, mode, "call")], res[(hosts, mode, "one")] = [], []
    for _ in range(rounds):
        for hosts in (1, 2):
            for mode in ("mesh", "ring"):
                cfg = config(P, hosts)
                for _ in range(reps):
                    t1 = timed(d.allreduce_host, x, y, mode, 1, config=cfg)
                    tk = timed(d.allreduce_host, x, y, mode, K, config=cfg)
                    res[(hosts, mode, "call")].append(t1)
                    res[(hosts, mode, "one")].append((tk - t1) / (K - 1))
    for mode in ("mesh", "ring"):  # what crossed between the hosts in one call with one allreduce
        d.allreduce_host(x, y, mode, 1, config=config(P, 2))
        res[(mode, "sent")] = sum(e.get("bytes_sent", 0) for e in mpi_pool.engine_stats)  # (the run's)
    return res


def run_layer(reps: int, rounds: int, quick: bool) -> List[Dict[str, Any]]:
    M, K, N = d.QUICK_LAYER if quick else d.FULL_LAYER
    P = d.LAYER_RANKS
    KP, NP, MR = K // P, N // P, M // P
    rng = np.random.default_rng(5)
    x = rng.standard_normal((M, K)).astype(np.float32)
    w = (rng.standard_normal((K, N)) / np.sqrt(K)).astype(np.float32)
    res = rng.standard_normal((M, N)).astype(np.float32)
    g = rng.standard_normal((1, N)).astype(np.float32)
    x_k = np.ascontiguousarray(np.stack([x[:, r * KP:(r + 1) * KP] for r in range(P)]))
    w_k = np.ascontiguousarray(np.stack([w[r * KP:(r + 1) * KP] for r in range(P)]))
    x_m = np.ascontiguousarray(x.reshape(P, MR, K))
    w_n = np.ascontiguousarray(np.stack([w[:, r * NP:(r + 1) * NP] for r in range(P)]))
    h = x.astype(np.float64) @ w + res
    want_tp = h / np.sqrt((h * h).mean(-1, keepdims=True) + d.EPS) * g
    want_ag = x.astype(np.float64) @ w
    y_tp, y_ag = np.zeros((P, M, N), np.float32), np.zeros((P, M, NP), np.float32)

    def check_tp() -> None:
        for r in range(P):
            np.testing.assert_allclose(y_tp[r], want_tp, rtol=1e-4, atol=1e-4)

    def check_ag() -> None:
        np.testing.assert_allclose(np.concatenate(list(y_ag), axis=1), want_ag, rtol=1e-4, atol=1e-4)

    progs = [("matmul + allreduce + rmsnorm", f"x [{M}, {K}] @ W [{K}, {N}], K split",
              lambda hosts: d.mm_allreduce_norm_host(x_k, w_k, res, g, y_tp, config=config(P, hosts)), check_tp),
             ("allgather + matmul", f"x [{M}, {K}] rows gathered @ W [{K}, {N}] columns split",
              lambda hosts: d.allgather_mm_host(x_m, w_n, y_ag, config=config(P, hosts)), check_ag)]
    out = []
    for name, what, fn, check in progs:
        samples: Dict[int, List[float]] = {1: [], 2: []}
        for hosts in (1, 2):
            y_tp[...] = 0
            y_ag[...] = 0
            fn(hosts)
            check()
        for _ in range(rounds):
            for hosts in (1, 2):
                fn(hosts)
                samples[hosts] += [timed(fn, hosts) for _ in range(reps)]
                check()
        out.append({"name": name, "what": what, **samples})
    return out


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="4 KiB and 1 MiB, a small layer")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", choices=("allreduce", "layer"), default=None)
    ap.add_argument("--out", default=None, help="write the tables into this file's section (docs/benchmarks.md)")
    args = ap.parse_args(argv)
    info = machine_info()
    load = os.getloadavg()
    print(f"machine: {info['cpu']}, {info['class']}, {info['cores']} cores ({info['simd']}); load {load[0]:.2f}")
    rows_list = d.QUICK_ROWS if args.quick else d.FULL_ROWS
    lines = ["| ranks | size per rank | mode | whole call, 1 host | whole call, 2 hosts | 2 / 1 | one allreduce, "
             "1 host | one allreduce, 2 hosts | 2 / 1 | sent between hosts per call |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for P in (2, 4) if args.only != "layer" else ():
        for rows in rows_list:
            r = run_allreduce(P, rows, args.reps, args.rounds)
            for mode in ("mesh", "ring"):
                c1, c2 = r[(1, mode, "call")], r[(2, mode, "call")]
                o1, o2 = r[(1, mode, "one")], r[(2, mode, "one")]
                line = (f"| {P} | {d.size_text(r['bytes'])} | {mode} | {med(c1)} | {med(c2)} | "
                        f"{statistics.median(c2) / statistics.median(c1):.1f}x | {med(o1)} | {med(o2)} | "
                        f"{statistics.median(o2) / max(statistics.median(o1), 1e-9):.1f}x | "
                        f"{r[(mode, 'sent')] / 2**20:.2f} MiB |")
                print(line, flush=True)
                lines.append(line)
    lines += ["", "| program | shapes | 2 ranks on 1 host | 2 ranks on 2 hosts | 2 / 1 |", "|---|---|---|---|---|"]
    for r in run_layer(args.reps, args.rounds, args.quick) if args.only != "allreduce" else []:
        line = (f"| {r['name']} | {r['what']} | {med(r[1])} | {med(r[2])} | "
                f"{statistics.median(r[2]) / statistics.median(r[1]):.1f}x |")
        print(line, flush=True)
        lines.append(line)
    print()
    print("\n".join(lines))
    if args.out:
        from run import merge_class_section  # (benchmarks/run.py: keeps the other sections)
        head = [
            "## Distributed: a second host (benchmarks/distributed_hosts.py)",
            f"<!-- cpu-class: {DOC_KEY} -->",
            "",
            f"`python benchmarks/distributed_hosts.py{' --quick' if args.quick else ''}` on {datetime.date.today()}: "
            "the same pld programs with their ranks on one host and on two simulated hosts (each its own heap, "
            "MPICH over loopback TCP, the engine of python/pypto/dist/engine.py), taking turns in one run. "
            f"Machine: {info['cpu']}, {info['class']}, {info['cores']} cores; load {load[0]:.2f} at the start. "
            "Median [IQR] of the calls of every round. One allreduce: (call with K allreduces - call with 1) / "
            "(K - 1). Sent: the changed bytes the engines sent between the hosts in one call with one allreduce "
            "(twice that went over the link: each changed byte travels with the twin's byte, which the merge "
            "needs). The layer passes its inputs by value to each "
            "rank on every call (across hosts a rank maps none of the orchestrator's memory).",
            "",
        ]
        merge_class_section(args.out, DOC_KEY, "\n".join(head + lines))
        print(f"\nwrote the section '{DOC_KEY}' of {args.out}")
    return 0


DOC_KEY = "benchmarks/distributed_hosts.py"


if __name__ == "__main__":
    sys.exit(main())
