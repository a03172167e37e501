"""Differential fuzzing of tensor-level programs against the numeric contract (docs/numerics.md).

Random programs from pypto.fuzz (`python -m pypto.fuzz`) run on both backends (cpu, interp) and
are compared with numpy (fp32, ints) and torch (fp16, bf16). The default batch is a few
parametrized chunks of a fixed seed (compiled kernels are cached, so a rerun is fast); the slow
test runs 5000 programs (--runslow or PYPTO_SLOW=1). A failure prints each mismatching program as
source, with the first bad elements and the command that regenerates it."""

import os
import subprocess
import sys
import zlib
from collections import Counter

import numpy as np
import pytest

from pypto import fuzz as F
from pypto.fuzz import common, oracle_bits, program, run
from pypto.fuzz.oracle import OT
from pypto.fuzz.program import Param, Program, V

SEED = 2024
CHUNK = 40
CHUNKS = 4
JOBS = int(os.environ.get("PYPTO_FUZZ_JOBS", "0") or 0) or max(1, min(2, os.cpu_count() or 1))
DTYPES = ",".join(F.ALL_DTYPES)
MODES = "cpu,interp"


def _check(recs, seed):
    bad = [r for r in recs if r["status"] in ("mismatch", "fuzz_error")]
    if not bad:
        return
    lines = [f"{len(bad)} of {len(recs)} programs (seed {seed}) do not follow the numeric contract:"]
    sigs = {}
    for r in bad:
        sigs.setdefault(r.get("signature", "?"), []).append(r["index"])
    for s, idx in sorted(sigs.items(), key=lambda kv: -len(kv[1])):
        lines.append(f"  {len(idx):4d}  {s}  programs {idx[:10]}")
    for r in bad[:6]:
        lines.append("")
        lines.append(r["report"])
    pytest.fail("\n".join(lines), pytrace=False)


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_fuzz_batch(chunk):
    recs, _ = F.run_batch(SEED, chunk * CHUNK, CHUNK, DTYPES, MODES, JOBS, progress=False)
    assert len(recs) == CHUNK
    _check(recs, SEED)


def test_generation_is_reproducible():
    for i in range(0, 400, 7):
        a, b = F.generate(SEED, i), F.generate(SEED, i)
        assert F.render(a) == F.render(b)
        ia, ib = F.make_inputs(a), F.make_inputs(b)
        assert ia.keys() == ib.keys()
        for k in ia:
            assert ia[k].tobytes() == ib[k].tobytes()


@pytest.mark.parametrize("fault", ["nan", "ulp", "inf"])
def test_oracle_catches_injected_faults(fault, monkeypatch):
    """The comparison is not vacuous: corrupting the cpu results (NaN -> 0, every finite element
    moved by one ulp, +inf -> max) of the first programs of the default batch is reported. A
    one-ulp move passes where the contract allows it (math functions: 2 ulp; all-NaN results), so
    about a third of the programs do not catch it."""
    monkeypatch.setattr(run, "INJECT", fault)
    recs, _ = F.run_batch(SEED, 0, 40, DTYPES, MODES, jobs=0, progress=False)
    assert not [r for r in recs if r["status"] == "fuzz_error"]
    caught = [r for r in recs if r["status"] == "mismatch"]
    assert len(caught) >= {"nan": 3, "ulp": 8, "inf": 1}[fault], [r["index"] for r in caught]


def test_without_torch(monkeypatch):
    """Without torch the 16-bit programs are skipped; the others still run."""
    monkeypatch.setenv("PYPTO_FUZZ_NO_TORCH", "1")
    monkeypatch.setattr(common, "_torch_state", [])
    assert not F.have_torch()
    no16 = ["fp32", "int32", "int8", "uint8", "uint16", "uint32", "uint64", "fp8e4m3", "fp8e5m2", "hf8"]
    assert F.usable_dtypes(F.ALL_DTYPES) == no16
    assert {F.generate(SEED, i).dtype for i in range(60)} <= set(no16)
    recs, _ = F.run_batch(SEED, 0, 4, DTYPES, MODES, jobs=0, progress=False)
    _check(recs, SEED)


def test_cli_from_any_directory(tmp_path):
    """`python -m pypto.fuzz` works outside the repository, and `import pypto` (or the fuzzer
    package) does not import torch."""
    probe = "import sys, pypto, pypto.fuzz; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, check=True)
    p = subprocess.run([sys.executable, "-m", "pypto.fuzz", "--count", "2", "--seed", str(SEED), "--jobs", "1",
                        "--quiet"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"fuzz: 2 programs, seed {SEED}, 0 mismatches" in p.stdout


@pytest.mark.slow
def test_fuzz_5000():
    recs, _ = F.run_batch(1, 0, 5000, DTYPES, MODES, JOBS, progress=False)
    assert len(recs) == 5000
    _check(recs, 1)


def test_retile_programs_that_found_the_widened_store_bug():
    """Seed 1's retile programs 164, 413 (bf16), 485, 538, 551 (fp16) caught a widened tile that
    was stored in place and never written (test_row_fusion has the directed test)."""
    recs = [F.run_one(1, i, ["bf16", "fp16"], MODES.split(",")) for i in (164, 413, 485, 538, 551)]
    assert {r["kind"] for r in recs} == {"retile"}, [r["kind"] for r in recs]
    _check(recs, 1)


# --- the newer features: unsigned and FP8 dtypes, bitwise ops, 0-d values, dynamic dims ----------

# Programs of the first fuzzer that use none of the newer features: the same source and inputs
# (zlib.crc32 of both) as it generated, so earlier reports still regenerate.
UNCHANGED = {1: 2170735286, 2: 3423918584, 4: 3311303097, 5: 3453873932, 8: 4197933293, 9: 3454150389,
             10: 509261867, 11: 3883716677, 12: 2599807926, 14: 2245971999, 15: 2170160205, 19: 3316302209,
             20: 1653085347, 21: 3952129145}


def test_first_fuzzer_programs_are_unchanged():
    for i, crc in UNCHANGED.items():
        prog = F.generate(SEED, i, common.OLD_DTYPES)
        ins = F.make_inputs(prog)
        text = F.render(prog) + "".join(ins[k].tobytes().hex() for k in sorted(ins))
        assert zlib.crc32(text.encode()) == crc, i


def test_newer_features_are_generated():
    """Every newer feature shows up within a few hundred programs of the default batch's seed."""
    progs = [F.generate(SEED, i) for i in range(400)]
    cats = Counter(p.category for p in progs)
    for dt in common.UINTS:
        assert sum(n for c, n in cats.items() if c.startswith(dt + "/")) >= 5, dt
    for dt in common.FP8S:
        assert cats[f"{dt}/fp8"] >= 5, dt
    kinds = Counter(p.kind.split("+", 1)[1] for p in progs if "+" in p.kind)
    assert kinds["dyn"] >= 10 and kinds["0d"] >= 10, kinds
    srcs = [F.render(p) for p in progs]
    assert sum("pypto.DYNAMIC" in s for s in srcs) >= 10
    assert sum(0 in p.dyn_sizes for p in progs) >= 1  # an empty call
    assert sum(("<<" in s or ">>" in s or "bitwise_" in s) for s in srcs) >= 10
    assert sum("pypto.Tensor((), " in s for s in srcs) >= 5
    assert sum("[...] = " in s for s in srcs) >= 1  # a 0-d output parameter
    assert any(p.expect for p in progs)  # a reduction refused over a dynamic dim


def test_fp8_reference_rounding_matches_torch():
    """common.fp8_round (written from the formats) is torch's float8 conversion bit for bit, but
    for E4M3 +-inf, which pypto documents as NaN (python/pypto/ops/mx.py; torch 2.13 saturates)."""
    torch = pytest.importorskip("torch")
    r = np.random.default_rng(5)
    edges = [0.0, -0.0, 448.0, 449.0, 464.0, 465.0, 480.0, 57344.0, 61439.0, 61440.0, np.nan, 2.0 ** -10,
             3 * 2.0 ** -11, 2.0 ** -17, 3 * 2.0 ** -18, -2.0 ** -10, 1e-45]
    with np.errstate(invalid="ignore"):  # random bytes: signalling NaNs among them
        vals = np.concatenate([r.standard_normal(4000) * 30, r.standard_normal(2000) * 1e-3,
                               r.standard_normal(2000) * 1e4, np.frombuffer(r.bytes(4 * 4000), np.float32),
                               edges]).astype(np.float32)
    vals = vals[~np.isinf(vals)]
    for dt, tdt in (("fp8e4m3", torch.float8_e4m3fn), ("fp8e5m2", torch.float8_e5m2)):
        want = torch.from_numpy(vals).to(tdt)
        np.testing.assert_array_equal(common.fp8_round(dt, vals), want.float().numpy())
        nan = np.isnan(vals)
        np.testing.assert_array_equal(common.fp8_encode(dt, vals)[~nan], want.view(torch.uint8).numpy()[~nan])
        codes = np.arange(256, dtype=np.uint8)
        np.testing.assert_array_equal(common.fp8_decode(dt, codes), torch.from_numpy(codes).view(tdt).float().numpy())
    assert np.isnan(common.fp8_round("fp8e4m3", np.array([np.inf, -np.inf], np.float32))).all()
    assert (common.fp8_round("fp8e5m2", np.array([np.inf, 1e6], np.float32)) == np.inf).all()


def test_integer_oracle_helpers_every_width():
    """The oracle's exact integer helpers against Python ints, uint64 above 2^63 included."""
    r = np.random.default_rng(3)
    for dt in common.INTS:
        lo, hi = common.IBOUNDS[dt]
        t = common.NP_INT[dt]
        a = np.concatenate([r.integers(lo, hi, 200, dtype=t, endpoint=True), np.array([lo, hi, 0, 1], t)])
        b = np.concatenate([r.integers(lo, hi, 200, dtype=t, endpoint=True), np.array([0, 1, hi, lo], t)])
        mod = 2 ** common.BITS[dt]
        wrap = (lambda v: (v % mod) - (mod if v % mod > hi else 0)) if lo < 0 else (lambda v: v % mod)
        got = oracle_bits.idiv("floor_div", a, b, dt)
        want = [wrap(x // y) if y else 0 for x, y in zip(a.tolist(), b.tolist())]
        assert got.tolist() == want, dt
        small = np.array([0, 1, 2, 3, 7, 31, 64, 65] if lo == 0 else [0, 1, 2, 3, 7, 31, -1, -2], t)
        got = oracle_bits.ipow(a[:8], small, dt)
        want = [wrap(x ** y) if y >= 0 else (1 if x == 1 else (-1) ** y if x == -1 else 0)
                for x, y in zip(a[:8].tolist(), small.tolist())]
        assert got.tolist() == want, dt
        for s in (2.5, -0.5, float(hi), hi, hi - 1, lo, 1e30, float("-inf"), float("nan")):
            for op, f in (("lt", lambda x, y: x < y), ("le", lambda x, y: x <= y), ("eq", lambda x, y: x == y),
                          ("gt", lambda x, y: x > y), ("ne", lambda x, y: x != y)):
                want = [f(x, s) if s == s else op == "ne" for x in a.tolist()]
                assert oracle_bits.int_vs_scalar(op, a, s).tolist() == want, (dt, op, s)
        for to in common.INTS:
            tlo, thi = common.IBOUNDS[to]
            assert oracle_bits.int_to_int(a, to).tolist() == [min(max(x, tlo), thi) for x in a.tolist()], (dt, to)
        n = np.array([0, 1, common.BITS[dt] - 1, common.BITS[dt], common.BITS[dt] + 3] * 2, t)
        x, zero = a[:10], np.zeros(10)
        left = (OT(x, zero, dt) << OT(n, zero, dt)).v.tolist()
        right = (OT(x, zero, dt) >> OT(n, zero, dt)).v.tolist()
        bits = common.BITS[dt]
        assert left == [wrap(v << k) if k < bits else 0 for v, k in zip(x.tolist(), n.tolist())], dt
        assert right == [v >> k if k < bits else (-1 if v < 0 else 0) for v, k in zip(x.tolist(), n.tolist())], dt


def _fp8_program() -> Program:
    """t0 = x0 + x0 on FP8 bytes."""
    x0, t0 = V("x0", (2, 8), "fp8e4m3"), V("t0", (2, 8), "fp8e4m3")
    body = [("tile", (2, 8)), ("op", t0, "add", [x0, x0], {}, "op"), ("return", [t0])]
    return Program(SEED, 10 ** 6, "fp8e4m3", "fp8", [Param("x0", (2, 8), "fp8e4m3", "in")], body)


def test_expected_errors_must_say_why(monkeypatch):
    """An op on an FP8 value is an expected UserError that must name the storage format; a
    UserError that does not say what the oracle expects is a mismatch ("unclear-error")."""
    out = run.evaluate(_fp8_program(), ["cpu", "interp"])[0]
    assert out.status == "expected_error", out.detail
    monkeypatch.setattr(oracle_bits, "STORAGE_PATTERN", "words pypto does not say")
    out = run.evaluate(_fp8_program(), ["cpu", "interp"])[0]
    assert out.status == "mismatch" and out.flags == ["unclear-error"], out


def test_a_second_compile_for_another_size_is_reported(monkeypatch):
    """A dynamic-dim program runs once per size with one compiled kernel; rendered with
    pypto.STATIC instead (a compile per size) the run must report "recompiled"."""
    prog = next(p for p in (F.generate(SEED, i) for i in range(400)) if p.dyn_sizes and not p.expect
                and p.dyn_sizes[-1] != 0)
    out = run.evaluate(prog, ["cpu"])[0]
    assert out.status == "ok", out.detail
    monkeypatch.setattr(program, "_shape_text", lambda p: "(" + ", ".join(
        ["pypto.STATIC" if p.dyn else str(p.shape[0])] + [str(d) for d in p.shape[1:]]) + ("," if len(p.shape) == 1
                                                                                          else "") + ")")
    out = run.evaluate(prog, ["cpu"])[0]
    assert out.status == "mismatch" and "recompiled" in out.flags, out


@pytest.mark.parametrize("mode", ["cpu", "interp"])
def test_pypto_fp8_casts_follow_the_fuzzers_reference(mode):
    """pypto.cast to FP8 of the edge values (ties, saturation, overflow, subnormals, +-inf, NaN)
    gives the bytes of common.fp8_encode: the documented rules the fuzzer's oracle uses. (The edge
    values of tests/python/test_mx_formats.py are cut off with its reshape to rows of 32.)"""
    import pypto
    edges = [0.0, -0.0, 448.0, 449.0, 464.0, 465.0, 480.0, -500.0, 1e6, 57344.0, 61439.0, 61440.0, -7e4, np.inf,
             -np.inf, np.nan, 2.0 ** -9, 2.0 ** -10, 3 * 2.0 ** -11, 2.0 ** -16, 2.0 ** -17, 3 * 2.0 ** -18, 1e-45,
             -2.0 ** -10, 1.0625, 1.1875, 0.9375, 2.0 ** -6, 0.875 * 2 ** -6, 2.0 ** -14, 0.75 * 2 ** -14, 1.3]
    x = np.array(edges + [0.0] * (-len(edges) % 8), np.float32).reshape(-1, 8)

    @pypto.jit
    def f(a: pypto.Tensor(tuple(x.shape), pypto.DT_FP32)):
        return pypto.cast(a, pypto.DT_FP8E4M3), pypto.cast(a, pypto.DT_FP8E5M2)

    pypto.set_runtime_options(run_mode=mode)
    try:
        got = f(x)
    finally:
        pypto.set_runtime_options(run_mode="cpu")
    for dt, g in zip(common.FP8S, got):
        want = common.fp8_encode(dt, x)
        nan = np.isnan(common.fp8_round(dt, x))
        np.testing.assert_array_equal(np.asarray(g).view(np.uint8)[~nan], want[~nan], err_msg=dt)
        assert (common.fp8_decode(dt, np.asarray(g).view(np.uint8)[nan]) != common.fp8_decode(dt, np.asarray(
            g).view(np.uint8)[nan])).all(), dt  # NaN codes (either sign)
