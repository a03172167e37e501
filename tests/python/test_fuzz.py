"""Differential fuzzing of tensor-level programs against the numeric contract (docs/numerics.md).

Random programs from tests/python/fuzz_programs.py run on both backends (cpu, interp) and are
compared with numpy (fp32, ints) and torch (fp16, bf16). The default batch is a few parametrized
chunks of a fixed seed (compiled kernels are cached, so a rerun is fast); the slow test runs
5000 programs (--runslow or PYPTO_SLOW=1). A failure prints each mismatching program as source,
with the first bad elements and the command that regenerates it."""

import os

import pytest

import fuzz_programs as F

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
    """The comparison is not vacuous: corrupting the cpu results (NaN -> 0, one element moved by
    one ulp, +inf -> max) of the first programs of the default batch is reported."""
    monkeypatch.setattr(F, "INJECT", fault)
    recs, _ = F.run_batch(SEED, 0, 30, DTYPES, MODES, jobs=0, progress=False)
    assert not [r for r in recs if r["status"] == "fuzz_error"]
    caught = [r for r in recs if r["status"] == "mismatch"]
    assert len(caught) >= {"nan": 3, "ulp": 10, "inf": 1}[fault], [r["index"] for r in caught]


@pytest.mark.slow
def test_fuzz_5000():
    recs, _ = F.run_batch(1, 0, 5000, DTYPES, MODES, JOBS, progress=False)
    assert len(recs) == 5000
    _check(recs, 1)
