"""The compute-bound kernels of the benchmarks (the cube path): matmuls of each dtype, the FFN,
conv2d and the attention examples, each beside torch (and numpy), timed in rounds that take turns,
and their share of the peak of the instruction their dtype runs on."""

from __future__ import annotations

import os
import sys
import time
from typing import Any, Dict, List, Tuple

import numpy as np

import pypto
from machine import HERE, ROUNDS, footprint, footprint_text, measure, peak_key, summary

# --- compute-bound kernels (the cube path): GFLOP/s against the FMA peak -----------------------

COMPUTE = ["matmul_fp32", "matmul_bf16", "matmul_int8", "ffn", "conv2d", "attention", "attention_causal",
           "attention_d128", "tile_attention", "tile_attention_causal"]


def compute_cases(quick: bool, torch: Any) -> Dict[str, Dict[str, Any]]:
    """name -> {flops, args, pypto, torch eager, numpy, check}; torch entries need torch."""
    sys.path.insert(0, os.path.join(HERE, "..", "examples"))
    import flash_attention as fa
    import tile_flash_attention as tfa

    rng = np.random.default_rng(1)
    cases: Dict[str, Dict[str, Any]] = {}
    n = 512 if quick else 2048

    @pypto.jit
    def mm32(a: pypto.Tensor((n, n), pypto.DT_FP32), b: pypto.Tensor((n, n), pypto.DT_FP32)):
        return pypto.matmul(a, b)
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal((n, n)).astype(np.float32)
    cases["matmul_fp32"] = {"what": f"{n}x{n}x{n} fp32", "flops": 2 * n ** 3, "pypto": (mm32, (a, b)),
                            "numpy": (np.matmul, (a, b)), "ref": lambda out: a.astype(np.float64) @ b}
    if torch is not None:
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        cases["matmul_fp32"]["torch eager"] = (torch.matmul, (ta, tb))

        @pypto.jit
        def mm16(a: pypto.Tensor((n, n), pypto.DT_BF16), b: pypto.Tensor((n, n), pypto.DT_BF16)):
            return pypto.matmul(a, b)
        a16, b16 = ta.to(torch.bfloat16), tb.to(torch.bfloat16)
        ref16 = a16.double() @ b16.double()
        cases["matmul_bf16"] = {"what": f"{n}x{n}x{n} bf16 (fp32 accumulation, bf16 out)", "flops": 2 * n ** 3,
                                "pypto": (mm16, (a16, b16)), "torch eager": (torch.matmul, (a16, b16)),
                                "ref": lambda out: ref16.float().to(torch.bfloat16).double().numpy(),
                                "to_np": lambda out: out.double().numpy(), "peak": "bf16"}

        @pypto.jit
        def mm8(a: pypto.Tensor((n, n), pypto.DT_INT8), b: pypto.Tensor((n, n), pypto.DT_INT8)):
            return pypto.matmul(a, b, pypto.DT_INT32)
        a8 = rng.integers(-128, 128, (n, n), dtype=np.int8)
        b8 = rng.integers(-128, 128, (n, n), dtype=np.int8)
        ta8, tb8 = torch.from_numpy(a8), torch.from_numpy(b8)
        cases["matmul_int8"] = {"what": f"{n}x{n}x{n} int8 -> int32 (torch: `torch._int_mm`)", "flops": 2 * n ** 3,
                                "pypto": (mm8, (a8, b8)), "torch eager": (torch._int_mm, (ta8, tb8)),
                                "ref": lambda out: (a8.astype(np.int64) @ b8.astype(np.int64)).astype(np.int32),
                                "exact": True, "peak": "int8"}

    t, d, h = (256, 256, 512) if quick else (2048, 1024, 4096)

    @pypto.jit
    def ffn(x: pypto.Tensor((t, d), pypto.DT_FP32), w1: pypto.Tensor((d, h), pypto.DT_FP32),
            w2: pypto.Tensor((h, d), pypto.DT_FP32)):
        return pypto.matmul(pypto.silu(pypto.matmul(x, w1)), w2)
    x = rng.standard_normal((t, d)).astype(np.float32)
    w1 = (rng.standard_normal((d, h)) / np.sqrt(d)).astype(np.float32)
    w2 = (rng.standard_normal((h, d)) / np.sqrt(h)).astype(np.float32)

    def ffn_np(x, w1, w2):
        y = x @ w1
        return (y / (1 + np.exp(-y))) @ w2
    cases["ffn"] = {"what": f"x[{t},{d}] @ w1[{d},{h}], silu, @ w2[{h},{d}] fp32", "flops": 4 * t * d * h,
                    "pypto": (ffn, (x, w1, w2)), "numpy": (ffn_np, (x, w1, w2)),
                    "ref": lambda out: ffn_np(x.astype(np.float64), w1, w2)}
    if torch is not None:
        tx, tw1, tw2 = (torch.from_numpy(v) for v in (x, w1, w2))
        cases["ffn"]["torch eager"] = (lambda x, a, b: torch.nn.functional.silu(x @ a) @ b, (tx, tw1, tw2))

    # A ResNet-style 3x3 convolution (im2col gather + one matmul here; oneDNN in torch).
    nb, cc, hw = (2, 32, 28) if quick else (8, 64, 56)

    @pypto.jit
    def conv2d(x: pypto.Tensor((nb, cc, hw, hw), pypto.DT_FP32), w: pypto.Tensor((cc, cc, 3, 3), pypto.DT_FP32)):
        return pypto.conv(x, w, pypto.DT_FP32, [1, 1], [1, 1, 1, 1], [1, 1])
    cx = rng.standard_normal((nb, cc, hw, hw)).astype(np.float32)
    cw = (rng.standard_normal((cc, cc, 3, 3)) / np.sqrt(9 * cc)).astype(np.float32)
    if torch is not None:  # the reference is torch's (in float64)
        tcx, tcw = torch.from_numpy(cx), torch.from_numpy(cw)
        conv_t = torch.nn.functional.conv2d
        cases["conv2d"] = {"what": f"[{nb}, {cc}, {hw}, {hw}] * [{cc}, {cc}, 3, 3] fp32, padding 1",
                           "flops": 2 * nb * cc * hw * hw * cc * 9, "pypto": (conv2d, (cx, cw)),
                           "torch eager": (lambda a, b_: conv_t(a, b_, padding=1), (tcx, tcw)),
                           "ref": lambda out: conv_t(tcx.double(), tcw.double(), padding=1).numpy()}

    bh, seq = (4, 512) if quick else (16, 2048)
    for name, causal, dim in (("attention", False, 64), ("attention_causal", True, 64), ("attention_d128", False, 128)):
        q, k, v = (rng.standard_normal((bh, seq, dim)).astype(np.float32) for _ in range(3))
        fn = fa.make_attention(bh, seq, dim, causal)
        out = np.zeros_like(q)
        args = (q, k, v, fa.causal_mask(fa.default_blocks(seq, causal)[0]), out) if causal else (q, k, v, out)
        cases[name] = {"what": f"[{bh}, {seq}, {dim}] fp32{' causal' if causal else ''}, flash (online softmax)",
                       "flops": 4 * bh * seq * seq * dim // (2 if causal else 1), "pypto": (fn, args),
                       "ref": (lambda c, q_, k_, v_: lambda _: fa.reference(q_, k_, v_, c))(causal, q, k, v),
                       "result": out}
        if torch is not None:
            tq, tk, tv = (torch.from_numpy(t_).unsqueeze(0) for t_ in (q, k, v))
            sdpa = torch.nn.functional.scaled_dot_product_attention
            cases[name]["torch eager"] = ((lambda c: lambda a, b_, c_: sdpa(a, b_, c_, is_causal=c))(causal),
                                          (tq, tk, tv))
    # The same attention at the tile level (pypto.language: AIC and AIV functions, tpush / tpop).
    for name, causal in (("tile_attention", False), ("tile_attention_causal", True)):
        dim = 64
        q, k, v = (rng.standard_normal((bh, seq, dim)).astype(np.float32) for _ in range(3))
        fn = tfa.make_attention(bh, seq, dim, causal)
        out = np.zeros((bh * seq, dim), np.float32)
        flat = tuple(t_.reshape(bh * seq, dim) for t_ in (q, k, v))
        args = (*flat, tfa.causal_mask(128), out) if causal else (*flat, out)
        cases[name] = {"what": f"[{bh}, {seq}, {dim}] fp32{' causal' if causal else ''}, pypto.language "
                               "(QK^T on AIC, online softmax on AIV, PV on AIC, tpush/tpop)",
                       "flops": 4 * bh * seq * seq * dim // (2 if causal else 1), "pypto": (fn, args),
                       "ref": (lambda c, q_, k_, v_: lambda _: fa.reference(q_, k_, v_, c).reshape(-1, q_.shape[-1]))(
                           causal, q, k, v),
                       "result": out}
        if torch is not None:
            tq, tk, tv = (torch.from_numpy(t_).unsqueeze(0) for t_ in (q, k, v))
            sdpa = torch.nn.functional.scaled_dot_product_attention
            cases[name]["torch eager"] = ((lambda c: lambda a, b_, c_: sdpa(a, b_, c_, is_causal=c))(causal),
                                          (tq, tk, tv))
    return cases


def run_compute(names: List[str], quick: bool, reps: int, torch: Any, peaks: Dict[str, Tuple[float, float, str]],
                info: Dict[str, Any]) -> List[Any]:
    rows = []
    cases = compute_cases(quick, torch)
    for name in names:
        if name not in cases:
            print(f"\n{name}: skipped (needs torch)")
            continue
        c = cases[name]
        fn, args = c["pypto"]
        got = fn(*args)
        got = c.get("result", got)
        got = c["to_np"](got) if "to_np" in c else np.asarray(got, dtype=np.float64)
        ref = c["ref"](got)
        if c.get("exact"):
            ok = bool(np.array_equal(got, ref))
        else:
            ok = bool(np.allclose(got, ref, rtol=2e-2 if "bf16" in name else 1e-3, atol=1e-3))
        impls = [impl for impl in ("pypto", "torch eager", "numpy") if impl in c]
        samples: Dict[str, List[float]] = {impl: [] for impl in impls}
        per_round: Dict[str, int] = {}
        for impl in impls:
            f, a = c[impl]
            t0 = time.perf_counter()
            f(*a)
            once = time.perf_counter() - t0
            # A very slow baseline (torch's bf16 matmul on the CPU can take
            # a minute) is timed over fewer runs.
            per_round[impl] = max(1, (reps if once < 2.0 else max(1, min(reps, int(20 / once)))) // ROUNDS)
        # The implementations take turns, ROUNDS times, so that a noisy stretch of the machine
        # (a VM) falls on all of them; medians and quartiles pool the rounds.
        for r in range(ROUNDS):
            for impl in impls:
                f, a = c[impl]
                samples[impl] += measure(f, a, per_round[impl], warmup=2 if r == 0 else 0)
        results = {impl: summary(t) for impl, t in samples.items()}
        mem = footprint(*c["pypto"])
        p_med = results["pypto"][0]
        gflops = c["flops"] / p_med / 1e9
        pk = peak_key(c.get("peak", "fp32"), info)
        peak = peaks.get(pk, peaks.get("fp32", (0.0, 0.0, "")))
        unit = "GOP/s" if pk.endswith("int8") else "GFLOP/s"
        print(f"\n{name} ({c['what']}) check={'OK' if ok else 'MISMATCH'}")
        for impl, (med, q1, q3) in results.items():
            print(f"  {impl:>14}: {med * 1e3:8.2f} ms  [IQR {q1 * 1e3:.2f}-{q3 * 1e3:.2f}]  "
                  f"{c['flops'] / med / 1e9:7.1f} {unit}  pypto speedup x{med / p_med:5.2f}")
        if peak[1] > 0:
            print(f"  pypto at {100 * gflops / peak[1]:.0f}% of the {pk} peak ({peak[1]:.0f} {unit}: {peak[2]})")
        print(f"  pypto's own peak memory {footprint_text(*mem)}")
        rows.append((name, c["what"], ok, results, gflops, pk, peak[1], mem))
    return rows
