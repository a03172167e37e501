"""The machine side of the benchmarks: the CPU (its class and flags, the cube paths pypto takes on
it), the roofline probes (benchmarks/probes.cpp: STREAM triad, the compute peak per dtype), and
the timing helpers."""

from __future__ import annotations

import ctypes
import os
import platform
import statistics
import subprocess
import tempfile
import time
from typing import Any, Callable, Dict, List, Tuple

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


# --- machine probes ---------------------------------------------------------------------------

def load_probes() -> ctypes.CDLL:
    out = os.path.join(tempfile.gettempdir(), f"pypto_probes_{os.getuid()}.so")
    src = os.path.join(HERE, "probes.cpp")
    if not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(src):
        subprocess.check_call(["c++", "-O2", "-march=native", "-fopenmp", "-shared", "-fPIC", src, "-o", out])
    lib = ctypes.CDLL(out)
    lib.triad_gbs.restype = ctypes.c_double
    lib.triad_gbs.argtypes = [ctypes.c_int64, ctypes.c_int, ctypes.c_int]
    lib.fma_gflops.restype = ctypes.c_double
    lib.fma_gflops.argtypes = [ctypes.c_int, ctypes.c_int64]
    lib.compute_peak.restype = ctypes.c_double
    lib.compute_peak.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int64, ctypes.c_char_p, ctypes.c_int]
    return lib


PEAKS = ("fp32", "bf16", "int8", "amx_bf16", "amx_int8")


def measure_peaks(probes: ctypes.CDLL, workers: int, quick: bool) -> Dict[str, Tuple[float, float, str]]:
    """The compute peak per dtype with the best instruction this CPU has for it (benchmarks/probes.cpp):
    name -> (1 core, `workers` cores, instruction); AMX only where the CPU has it."""
    iters = 20_000_000 // (10 if quick else 1)
    peaks = {}
    for what in PEAKS:
        isa = ctypes.create_string_buffer(128)
        one = probes.compute_peak(what.encode(), 1, iters, isa, 128)
        if one <= 0:
            continue
        peaks[what] = (one, probes.compute_peak(what.encode(), workers, iters, isa, 128), isa.value.decode())
    return peaks


def peak_key(dtype: str, info: Dict[str, Any]) -> str:
    """The peak a matmul of `dtype` is measured against: its path's instruction (AMX tiles where the
    cube takes them, else the vector dot products, else fp32 FMA: probes.cpp falls back alike)."""
    if dtype in ("bf16", "int8") and info["paths"][dtype].startswith("amx"):
        return "amx_" + dtype
    return dtype


def peaks_text(peaks: Dict[str, Tuple[float, float, str]], workers: int) -> str:
    unit = {"int8": "GOP/s", "amx_int8": "GOP/s"}
    parts = [f"{k} {v[0]:.0f} {unit.get(k, 'GFLOP/s')} on 1 core, {v[1]:.0f} on {workers} ({v[2]})"
             for k, v in peaks.items()]
    if "amx_bf16" not in peaks:
        parts.append("AMX: not on this CPU")
    return "; ".join(parts)


def machine_info() -> Dict[str, Any]:
    model = platform.processor()
    fields: Dict[str, str] = {}
    try:
        for line in open("/proc/cpuinfo"):
            if ":" in line:
                k, v = (x.strip() for x in line.split(":", 1))
                fields.setdefault(k, v)
            if not line.strip() and fields:
                break
    except OSError:
        pass
    model = fields.get("model name", model)
    flags = fields.get("flags", "").split()
    simd = [f for f in ("avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "avx_vnni", "avx512_fp16",
                        "amx_tile", "amx_bf16", "amx_int8") if f in flags]
    vendor, family, mdl = fields.get("vendor_id", "?"), fields.get("cpu family", "?"), fields.get("model", "?")
    return {"cpu": model, "cores": os.cpu_count(), "simd": " ".join(simd), "python": platform.python_version(),
            "numpy": np.__version__, "avx512_bf16": "avx512_bf16" in flags, "paths": cube_paths(),
            "class_key": f"{vendor}-{family}-{mdl}", "class": cpu_class(vendor, family, mdl)}


def cpu_class(vendor: str, family: str, model: str) -> str:
    """A name for the CPU's microarchitecture class from its CPUID family and model (a VM's model
    name often hides it)."""
    try:
        fam, mdl = int(family), int(model)
    except ValueError:
        return f"{vendor} family {family} model {model}"
    name = ""
    if vendor == "AuthenticAMD":
        if fam == 0x1A:
            name = "Zen 5"
        elif fam == 0x19:
            name = "Zen 4" if 0x10 <= mdl <= 0x1F or 0x60 <= mdl <= 0x7F or 0xA0 <= mdl <= 0xAF else "Zen 3"
        elif fam == 0x17:
            name = "Zen / Zen 2"
    elif vendor == "GenuineIntel" and fam == 6:
        name = {0x8F: "Sapphire Rapids", 0xCF: "Emerald Rapids", 0xAD: "Granite Rapids", 0xAE: "Granite Rapids",
                0x6A: "Ice Lake-SP", 0x6C: "Ice Lake-SP", 0x55: "Skylake-SP / Cascade Lake / Cooper Lake",
                0x97: "Alder Lake", 0x9A: "Alder Lake", 0xB7: "Raptor Lake", 0xBA: "Raptor Lake"}.get(mdl, "")
    desc = f"{vendor} family {fam} model {mdl}"
    return f"{name} ({desc})" if name else desc


def cube_paths() -> Dict[str, Any]:
    """The CPU level pypto's kernels compile for and the cube's micro-kernel per dtype
    (src/runtime/cpu_isa.cpp; PYPTO_CPU_ISA forces a lower level)."""
    from pypto import _core
    return dict(_core.cpu_paths())


def paths_lines(info: Dict[str, Any]) -> List[str]:
    """The cube paths taken in this run, one line per dtype."""
    p = info["paths"]
    forced = f"forced by PYPTO_CPU_ISA={p['requested']}" if p["requested"] else "the best this CPU has"
    lines = [f"CPU level {p['isa']} ({forced}; compiler flags after -march=native: {p['flags'] or 'none'})"]
    if p["note"]:
        lines.append(p["note"])
    lines += [f"{dt}: {p[dt]}" for dt in ("fp32", "fp16", "bf16", "int8")]
    if p["amx"] != "usable":
        lines.append(f"AMX: {p['amx']}")
    return lines


# --- timing -------------------------------------------------------------------------------------

ROUNDS = 3


def measure(fn: Callable[..., Any], args: Tuple[Any, ...], reps: int, warmup: int = 2) -> List[float]:
    for _ in range(warmup):
        fn(*args)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
    return times


def summary(times: List[float]) -> Tuple[float, float, float]:
    med = statistics.median(times)
    q = statistics.quantiles(times, n=4) if len(times) >= 4 else [min(times), med, max(times)]
    return med, q[0], q[-1]


# --- footprint ----------------------------------------------------------------------------------

def _nbytes(v: Any) -> int:
    if hasattr(v, "nbytes"):
        return int(v.nbytes)
    if hasattr(v, "element_size"):  # a torch tensor
        return int(v.element_size() * v.numel())
    return 0


def footprint(fn: Callable[..., Any], args: Tuple[Any, ...]) -> Tuple[int, int]:
    """(pypto's own peak host memory during one call of `fn`, the bytes of its inputs and outputs).

    The peak is pypto.memory_stats()'s (outputs, created tensors, workspaces, the cube's shared
    packings, dense copies of strided arguments), above what was live before the call: the
    caller's arrays are not in it, so an output the caller passes in (a pl Out) is not either."""
    import pypto

    base = pypto.reset_peak_memory().live
    out = fn(*args)
    peak = pypto.memory_stats().peak - base
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return peak, sum(_nbytes(a) for a in args) + sum(_nbytes(o) for o in outs)


def footprint_text(peak: int, io: int) -> str:
    return f"{peak / 2**20:.1f} MiB ({peak / io:.2f}x in+out)" if io else f"{peak / 2**20:.1f} MiB"
