"""The cube's micro-kernel paths per CPU level (src/runtime/cpu_isa.cpp, include/pypto/cube_*.hpp).

PYPTO_CPU_ISA forces a level at or below what the CPU has, so every path this CPU can run is
checked here: each dtype (fp32, fp16, bf16, int8) against numpy and the reference interpreter,
with tails in M, N and K (not multiples of the tiles, of the panels of 16 columns, of the dot
products' k step of 2 or 4, of AMX's 32 / 64), transposed operands, grids whose points share
packed windows, and the specials the contract names (bf16 inf / NaN / subnormals; int8's
extremes through the unsigned fix-up). A level the CPU lacks is skipped with what it lacks; the
test level amx_emulated runs the AMX code path on any CPU with its tile instructions in C++.
"""

import numpy as np
import pytest

import pypto
from pypto import _core

LEVELS = ["generic", "avx2", "avx2_vnni", "avx512", "avx512_vnni", "avx512_bf16", "amx", "amx_emulated"]
DTYPES = ["fp32", "fp16", "bf16", "int8"]
PDT = {"fp32": pypto.DT_FP32, "fp16": pypto.DT_FP16, "bf16": pypto.DT_BF16, "int8": pypto.DT_INT8}

# (M, K, N, a_trans, b_trans, cube tile shapes): tails everywhere, K odd and not a multiple of
# 4 / 32 / 64, transposes, a grid of 4 x 4 points (shared packings) with a K tail in L1.
CASES = [
    (100, 70, 90, False, False, ([32, 32], [16, 32], [48, 48])),
    (45, 77, 61, True, False, ([16, 16], [16, 32], [32, 32])),
    (37, 129, 53, False, True, ([16, 16], [32, 64], [16, 16])),
    (100, 201, 100, False, False, ([32, 32], [64, 128], [32, 32])),
    (19, 5, 33, True, True, None),
]


def _levels():
    return dict(_core.cpu_paths()["levels"])


@pytest.fixture(params=LEVELS)
def level(request, monkeypatch):
    """Forces the level for the test; skips, saying what is missing, when the CPU lacks it."""
    missing = _levels()[request.param]
    if missing:
        pytest.skip(f"PYPTO_CPU_ISA={request.param}: this CPU lacks {missing}")
    monkeypatch.setenv("PYPTO_CPU_ISA", request.param)
    return request.param


def _path_key():
    """The library key the kernels of the level in force must report (pypto_cube_paths())."""
    p = _core.cpu_paths()
    name = {dt: p[dt].split(":")[0] for dt in DTYPES}
    return f"fp32={name['fp32']};fp16={name['fp16']};bf16={name['bf16']};int8={name['int8']}"


def _inputs(dt, seed):
    r = np.random.default_rng(seed)
    out = []
    for M, K, N, at, bt, _ in CASES:
        ash, bsh = ((K, M) if at else (M, K)), ((N, K) if bt else (K, N))
        if dt == "int8":
            a, b = r.integers(-128, 128, ash, dtype=np.int8), r.integers(-128, 128, bsh, dtype=np.int8)
            a.flat[0], b.flat[0], a.flat[1], b.flat[1] = -128, -128, 127, 127  # the fix-up's extremes
        else:
            a, b = r.standard_normal(ash).astype(np.float32), r.standard_normal(bsh).astype(np.float32)
            if dt == "fp16":
                a, b = a.astype(np.float16), b.astype(np.float16)
        out += [a, b]
    if dt == "bf16":
        torch = pytest.importorskip("torch")
        out = [torch.from_numpy(x).to(torch.bfloat16) for x in out]
    return out


def _program(dt, mode):
    """One program of every case (one compile per level and dtype): o_i = a_i @ b_i."""
    ptype = PDT[dt]
    otype = pypto.DT_INT32 if dt == "int8" else pypto.DT_FP32
    params = []
    for M, K, N, at, bt, _ in CASES:
        params += [((K, M) if at else (M, K)), ((N, K) if bt else (K, N))]

    @pypto.jit(runtime_options={"run_mode": mode})
    def mm(a0: pypto.Tensor(params[0], ptype), b0: pypto.Tensor(params[1], ptype),
           a1: pypto.Tensor(params[2], ptype), b1: pypto.Tensor(params[3], ptype),
           a2: pypto.Tensor(params[4], ptype), b2: pypto.Tensor(params[5], ptype),
           a3: pypto.Tensor(params[6], ptype), b3: pypto.Tensor(params[7], ptype),
           a4: pypto.Tensor(params[8], ptype), b4: pypto.Tensor(params[9], ptype)):
        ops = [(a0, b0), (a1, b1), (a2, b2), (a3, b3), (a4, b4)]
        outs = []
        for (a, b), (_, _, _, at, bt, cube) in zip(ops, CASES):
            if cube is not None:
                pypto.set_cube_tile_shapes(*cube)
            outs.append(pypto.matmul(a, b, otype, a_trans=at, b_trans=bt))
        return tuple(outs)

    return mm


def _as_np(x):
    return x.double().numpy() if hasattr(x, "double") else np.asarray(x)


def _reference(dt, ins):
    refs = []
    for i, (_, _, _, at, bt, _) in enumerate(CASES):
        a, b = _as_np(ins[2 * i]), _as_np(ins[2 * i + 1])
        a, b = (a.T if at else a), (b.T if bt else b)
        if dt == "int8":
            refs.append((a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32))
        else:
            refs.append(a.astype(np.float64) @ b.astype(np.float64))
    return refs


@pytest.mark.parametrize("dt", DTYPES)
def test_every_dtype_on_every_level(level, dt):
    ins = _inputs(dt, DTYPES.index(dt))
    fn = _program(dt, "cpu")
    got = fn(*ins)
    assert fn.last.program.native_cube_paths == _path_key()
    refs = _reference(dt, ins)
    interp = _program(dt, "interp")(*ins) if dt == "int8" else None
    for i, (g, want) in enumerate(zip(got, refs)):
        g = _as_np(g)
        if dt == "int8":  # exact, as the interpreter
            np.testing.assert_array_equal(g, want, err_msg=f"case {i}")
            np.testing.assert_array_equal(g, _as_np(interp[i]), err_msg=f"case {i}")
        else:  # exact products (fp32: FMAs), sums in fp32
            np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-4, err_msg=f"case {i} at {level}")


@pytest.mark.parametrize("dt", ["fp32", "fp16", "bf16"])
def test_specials_and_subnormals_on_every_level(level, dt):
    # inf and NaN propagate as fp32 FMAs propagate them (inf * 0 is NaN). VDPBF16PS / TDPBF16PS
    # flush subnormal inputs and results: bf16 operands that could make one take the fp32 FMA
    # path, so every level answers what the interpreter does.
    torch = pytest.importorskip("torch")
    tdt = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[dt]
    M, K, N = 9, 37, 20
    cube = ([16, 16], [16, 32], [32, 32])

    def run(mode, a, b):
        @pypto.jit(runtime_options={"run_mode": mode})
        def f(x: pypto.Tensor((M, K), PDT[dt]), y: pypto.Tensor((K, N), PDT[dt])):
            pypto.set_cube_tile_shapes(*cube)
            return pypto.matmul(x, y, pypto.DT_FP32)
        return np.asarray(f(a, b).float())

    g = torch.Generator().manual_seed(5)
    b = torch.randn(K, N, generator=g).to(tdt)
    if dt == "bf16":
        sub = torch.full((M, K), 1e-39).to(tdt)  # subnormal in bf16 and fp32
        got = run("cpu", sub, b)
        assert np.count_nonzero(got) == got.size  # not flushed to zero
        np.testing.assert_allclose(got, run("interp", sub, b), rtol=1e-5, atol=1e-44)
    a = torch.randn(M, K, generator=g).to(tdt)
    a[0, 3], a[1, 4], a[2, 5] = float("inf"), float("nan"), float("-inf")
    bz = b.clone()
    bz[3, 0] = 0.0  # inf * 0: NaN in column 0 of row 0
    got, want = run("cpu", a, bz), run("interp", a, bz)
    assert np.isnan(got[0, 0]) and np.isnan(got[1]).all()
    assert np.array_equal(np.isnan(got), np.isnan(want)) and np.array_equal(np.isinf(got), np.isinf(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-5, atol=1e-5)
    assert np.array_equal(np.signbit(got[~finite & ~np.isnan(want)]), np.signbit(want[~finite & ~np.isnan(want)]))


@pytest.mark.parametrize("out", ["bf16", "fp16"])
def test_16bit_outputs_round_the_fp32_sums_once(level, out):
    # The fp32 -> bf16 / fp16 epilogue converts straight into the output (CvtStoreNDStream): the
    # same sums as with an fp32 output, rounded to nearest even as TCVT (and torch) round them,
    # bit for bit, also where rows start unaligned (N = 45) and past fp16's range (inf).
    torch = pytest.importorskip("torch")
    tdt = torch.bfloat16 if out == "bf16" else torch.float16
    M, K, N = 70, 33, 45
    g = torch.Generator().manual_seed(9)
    a = torch.randn(M, K, generator=g).to(tdt)
    b = (torch.randn(K, N, generator=g) * (5e3 if out == "fp16" else 1.0)).to(tdt)

    def run(mode, odt):
        @pypto.jit(runtime_options={"run_mode": mode})
        def f(x: pypto.Tensor((M, K), PDT[out]), y: pypto.Tensor((K, N), PDT[out])):
            pypto.set_cube_tile_shapes([32, 32], [16, 32], [48, 48])
            return pypto.matmul(x, y, odt)
        return f(a, b)

    got, sums = run("cpu", PDT[out]), run("cpu", pypto.DT_FP32)
    assert got.dtype == tdt
    assert torch.equal(got.view(torch.int16), sums.to(tdt).view(torch.int16))
    want = run("interp", PDT[out])
    torch.testing.assert_close(got.float(), want.float(), rtol=1e-2, atol=1e-2)
    if out == "fp16":
        assert torch.isinf(got).any()  # some sums pass fp16's largest


def test_level_change_reloads_the_kernels(monkeypatch):
    # The same function run at two levels (every CPU has these two; the cache key holds the
    # flags): the runtime loads the kernels compiled for each, which report their own paths.
    M = 40
    a = np.arange(M * M, dtype=np.int8).reshape(M, M)

    @pypto.jit
    def f(x: pypto.Tensor((M, M), pypto.DT_INT8)):
        return pypto.matmul(x, x, pypto.DT_INT32)

    want = (a.astype(np.int64) @ a.astype(np.int64)).astype(np.int32)
    seen = set()
    for lv in ("generic", "amx_emulated"):
        monkeypatch.setenv("PYPTO_CPU_ISA", lv)
        np.testing.assert_array_equal(f(a), want)
        assert f.last.program.native_cube_paths == _path_key()
        seen.add(f.last.program.native_cube_paths)
    assert len(seen) == 2


def test_default_level_is_the_best_and_a_missing_one_falls_back(monkeypatch):
    monkeypatch.delenv("PYPTO_CPU_ISA", raising=False)
    p = _core.cpu_paths()
    assert p["isa"] == p["best"] and p["requested"] == "" and p["note"] == ""
    assert p["levels"][p["best"]] == ""
    missing = [lv for lv, m in p["levels"].items() if m]
    if not missing:
        pytest.skip("this CPU runs every level")
    monkeypatch.setenv("PYPTO_CPU_ISA", missing[0])
    q = _core.cpu_paths()
    assert q["isa"] != missing[0] and q["levels"][q["isa"]] == "" and "lacks" in q["note"]
    print(q["note"])


def test_unknown_level_is_a_user_error(monkeypatch):
    monkeypatch.setenv("PYPTO_CPU_ISA", "avx1024")
    with pytest.raises(pypto.UserError, match="avx1024.*not a CPU level"):
        _core.cpu_paths()

    @pypto.jit
    def f(x: pypto.Tensor((8, 8), pypto.DT_FP32)):
        return pypto.matmul(x, x)

    with pytest.raises(pypto.UserError, match="avx512_vnni"):
        f(np.ones((8, 8), np.float32))
