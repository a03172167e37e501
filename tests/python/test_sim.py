"""The NPU machine model (pypto.sim, run_mode "sim") and the tuner (pypto.tune): the sanity the
model must show (streaming kernels at the memory bound, twice the data twice the time, a large
fp16 matmul cube-bound near peak, reuse visible in the traffic, PyPTO's recommended matmul
tiling ahead of a smaller one), its outputs equal to the CPU run, its errors, its swimlane."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import pypto
from _util import assert_close, randn, rng

F32, F16 = pypto.DT_FP32, pypto.DT_FP16


def softmax_fn(rows, cols=2048, tile_rows=8):
    @pypto.jit
    def softmax(x: pypto.Tensor((rows, cols), F32)):
        pypto.set_vec_tile_shapes(tile_rows, cols)
        return pypto.softmax(x, -1)
    return softmax


def rmsnorm_fn(rows, cols=2048, tile_rows=8):
    @pypto.jit
    def rmsnorm(x: pypto.Tensor((rows, cols), F32), g: pypto.Tensor((1, cols), F32)):
        pypto.set_vec_tile_shapes(tile_rows, cols)
        return pypto.rms_norm(x, g, 1e-6)
    return rmsnorm


def matmul_fn(n, m_t, k_t, n_t):
    @pypto.jit
    def mm(a: pypto.Tensor((n, n), F16), b: pypto.Tensor((n, n), F16)):
        pypto.set_cube_tile_shapes(m_t, k_t, n_t)
        return pypto.matmul(a, b, F32)
    return mm


def test_streaming_kernels_predict_at_the_memory_bound_and_scale_with_the_data():
    x = randn(rng(1), (8192, 2048))
    g = randn(rng(2), (1, 2048))
    for make, extra in ((softmax_fn, ()), (rmsnorm_fn, (g,))):
        half = pypto.sim.simulate(make(4096), x[:4096], *extra)
        full = pypto.sim.simulate(make(8192), x, *extra)
        for r in (half, full):
            assert r.bound == "memory", r.summary()
            mem = r.bounds_us["memory"]
            assert mem <= r.total_us <= 1.3 * mem, r.summary()  # at or above the bound, and close
            assert r.utilization["AIV"] > 0.8 and r.utilization["AIC"] == 0
        assert 1.8 <= full.total_us / half.total_us <= 2.2
        # 64 MiB read once from HBM and written once
        assert full.hbm_read_bytes == pytest.approx(8192 * 2048 * 4, rel=0.01)
        assert full.write_bytes == pytest.approx(8192 * 2048 * 4, rel=0.01)


def test_outputs_are_the_cpu_results():
    x = randn(rng(3), (256, 2048))
    r = pypto.sim.simulate(softmax_fn(256), x)
    e = np.exp(x.astype(np.float64) - x.max(1, keepdims=True))
    assert_close(r.outputs[0], e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_large_fp16_matmul_predicts_close_to_the_cube_peak():
    n = 2048
    a = (randn(rng(4), (n, n)) * 0.1).astype(np.float16)
    b = (randn(rng(5), (n, n)) * 0.1).astype(np.float16)
    r = pypto.sim.simulate(matmul_fn(n, [128, 128], [64, 256], [256, 256]), a, b)
    # With a2a3's L0C an output block is at most 128 x 256 fp32, so each block re-reads its A and
    # B panels from L2: at the L2 bandwidth the feed is just slower than the cube (pto-isa's
    # published profile of this GEMM: TLOAD 91-98% busy, TMATMUL 79-87%), hence "memory".
    assert r.bound == "memory", r.summary()
    assert r.bounds_us["cube"] <= r.bounds_us["memory"] <= 1.3 * r.bounds_us["cube"]
    peak_us = 2 * n ** 3 / (r.machine.cube_fp16_tflops * 1e12) * 1e6
    assert r.bounds_us["cube"] == pytest.approx(peak_us, rel=0.03)  # (+ each instruction's fixed cycles)
    assert peak_us <= r.total_us <= 1.6 * peak_us, r.summary()  # pto-isa measures ~65-80% of peak here
    assert r.cube_flops == pytest.approx(2 * n ** 3)
    assert r.utilization["AIC"] > 0.7 and r.utilization["AIV"] == 0
    want = a.astype(np.float64) @ b.astype(np.float64)
    assert_close(r.outputs[0], want, rtol=2e-3, atol=2e-3)


def test_fp32_matmul_is_cube_bound():
    # fp32 runs the cube at a quarter of the fp16 rate: the same traffic, four times the cube time.
    n = 2048  # 128 output blocks: 5.3 waves over 24 cores
    a = randn(rng(9), (n, n))
    r = pypto.sim.simulate(matmul_fn32(n), a, a)
    assert r.bound == "cube", r.summary()
    assert r.bounds_us["cube"] <= r.total_us <= 1.3 * r.bounds_us["cube"]


def matmul_fn32(n):
    @pypto.jit
    def mm32(a: pypto.Tensor((n, n), F32), b: pypto.Tensor((n, n), F32)):
        pypto.set_cube_tile_shapes([128, 128], [32, 128], [256, 256])
        return pypto.matmul(a, b, F32)
    return mm32


def test_tilings_order_as_the_tuning_guide_says_and_reuse_shows_in_traffic():
    # PyPTO's matmul guide recommends m=[128,128], k=[64,256], n=[256,256] for large fp16 GEMMs;
    # halving the L1 block along m and n halves the reuse of each loaded tile.
    n = 1024
    a = np.zeros((n, n), np.float16)
    big = pypto.sim.simulate(matmul_fn(n, [128, 128], [64, 256], [256, 256]), a, a)
    small = pypto.sim.simulate(matmul_fn(n, [64, 64], [64, 256], [128, 128]), a, a)
    assert big.total_us < small.total_us
    assert small.gm_bytes > 1.5 * big.gm_bytes  # more tiles loaded for the same work


def test_l0_tiles_that_do_not_fit_are_a_clear_error():
    a = np.zeros((512, 512), np.float16)
    with pytest.raises(pypto.UserError, match="L0"):
        pypto.sim.simulate(matmul_fn(512, [256, 256], [256, 256], [256, 256]), a, a)


def test_ub_overflow_on_the_npu_model_is_a_clear_error():
    x = np.zeros((64, 2048), np.float32)
    with pytest.raises(pypto.UserError, match="UB 192 KiB on a2a3"):
        pypto.sim.simulate(softmax_fn(64, tile_rows=32), x)


def test_machine_descriptions():
    m = pypto.sim.machine("a2a3")
    assert (m.aic_cores, m.aiv_cores) == (24, 48)
    assert m.gm_bandwidth_gbps == 1600
    assert m.cube_fp16_tflops == pytest.approx(2 * 4096 * 1.85e9 * 24 / 1e12)
    assert m.ub_bytes == 192 * 1024 and m.l0c_bytes == 128 * 1024
    assert "a5" in pypto.sim.machines() and "cpu" not in pypto.sim.machines()
    with pytest.raises(pypto.UserError, match="no performance model"):
        pypto.sim.machine("cpu")
    x = np.zeros((64, 2048), np.float32)
    with pytest.raises(pypto.UserError, match="no performance model"):
        pypto.sim.simulate(softmax_fn(64), x, machine="cpu")
    r5 = pypto.sim.simulate(softmax_fn(64), x, machine="a5")
    assert r5.machine.name == "a5" and r5.total_us > 0


def test_run_mode_sim_on_an_ordinary_call(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    @pypto.jit(runtime_options={"run_mode": pypto.RunMode.SIM})
    def f(x: pypto.Tensor((64, 256), F32)):
        pypto.set_vec_tile_shapes(16, 256)
        return pypto.exp(x) * 2.0

    x = randn(rng(6), (64, 256))
    assert_close(f(x), np.exp(x.astype(np.float64)) * 2, rtol=1e-6, atol=0)
    assert f.last_sim.total_us > 0 and f.last_sim.bound in ("memory", "vector", "dispatch")
    outs = list((tmp_path / "output").iterdir())
    assert len(outs) == 1 and str(os.getpid()) in outs[0].name  # CANN PyPTO's layout
    swim = outs[0] / "CostModelSimulationOutput" / "merged_swimlane.json"
    trace = json.loads(swim.read_text())
    assert trace["otherData"]["format"] == "pypto-sim-swimlane-1"
    lanes = {e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "thread_name"}
    assert "AIV 0" in lanes and "AIV 0 MTE2" in lanes and "AIV 0 V" in lanes
    # the same call with "sim" spelled as a string, and pypto summary reads the trace
    f2 = pypto.jit(runtime_options={"run_mode": "sim"})(f.fn)
    f2(x)
    out = subprocess.run([sys.executable, "-m", "pypto.cli", "summary", str(swim)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "simulated on a2a3" in out.stdout and "bound" in out.stdout


def test_write_swimlane_has_core_and_pipe_lanes(tmp_path):
    n = 512
    a = np.zeros((n, n), np.float16)
    r = pypto.sim.simulate(matmul_fn(n, [128, 128], [64, 256], [256, 256]), a, a)
    path = r.write_swimlane(str(tmp_path / "mm.json"))
    trace = json.loads(open(path).read())
    lanes = {e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "thread_name"}
    assert {"AIC 0", "AIC 0 MTE2", "AIC 0 MTE1", "AIC 0 M", "AIC 0 FIX"} <= lanes
    tasks = [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("pid") == 1]
    assert len(tasks) == (n // 128) * (n // 256)
    assert max(e["ts"] + e["dur"] for e in tasks) == pytest.approx(r.total_us)
    assert "k0_matmul" in r.summary()


def test_tune_on_the_model_ranks_candidates_and_reports_the_ones_that_do_not_fit(tmp_path, capsys):
    @pypto.jit
    def softmax(x: pypto.Tensor((2048, 2048), F32), tile_rows: int = 8):
        pypto.set_vec_tile_shapes(tile_rows, 2048)
        return pypto.softmax(x, -1)

    x = randn(rng(7), (2048, 2048))
    res = pypto.tune(softmax, x, space={"tile_rows": [1, 8, 32]}, target="sim", out_dir=str(tmp_path))
    assert res.best.config == {"tile_rows": 8}
    errors = [c for c in res.candidates if c.error]
    assert len(errors) == 1 and "UB" in errors[0].error
    table = capsys.readouterr().out
    assert "tile_rows': 8" in table and "error" in table
    assert os.path.isfile(res.swimlanes["best"]) and os.path.isfile(res.swimlanes["first"])
    with pytest.raises(pypto.UserError, match="neither a parameter"):
        pypto.tune(softmax, x, space={"rows": [1]})


def test_tune_on_the_cpu_measures(tmp_path):
    @pypto.jit
    def scale(x: pypto.Tensor((256, 512), F32), tile_rows: int = 8):
        pypto.set_vec_tile_shapes(tile_rows, 512)
        return x * 3.0

    x = randn(rng(8), (256, 512))
    res = pypto.tune(scale, x, space={"tile_rows": [8, 32]}, target="cpu", repeat=3, out_dir=str(tmp_path),
                     verbose=False)
    assert all(c.time_us > 0 and not c.error for c in res.candidates)
    trace = json.loads(open(res.swimlanes["best"]).read())
    assert trace["otherData"]["format"] == "pypto-swimlane-1"


def test_tune_apply_makes_the_best_default_tile_the_functions_own(tmp_path):
    @pypto.jit
    def f(x: pypto.Tensor((512, 1024), F32)):
        return pypto.softmax(x, -1)  # no tile shape of its own

    x = randn(rng(10), (512, 1024))
    res = pypto.tune(f, x, space={"vec_tile_shapes": [(1, 1024), (16, 1024)]}, target="cpu", repeat=3,
                     out_dir=str(tmp_path), verbose=False, apply=True)
    assert f.tuned_tiles[0] == tuple(res.best.config["vec_tile_shapes"])
    f(x)
    rows = res.best.config["vec_tile_shapes"][0]
    assert f"tile=[{rows}, 1024]" in f.last.program.tile_graph()
    e = np.exp(x.astype(np.float64) - x.max(1, keepdims=True))
    assert_close(f(x), e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_run_mode_sim_says_where_it_wrote_the_swimlane(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    @pypto.jit(runtime_options={"run_mode": "sim"})
    def double(x: pypto.Tensor((64, 128), pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(8, 128)
        return x * 2.0

    x = np.ones((64, 128), np.float32)
    np.testing.assert_array_equal(double(x), x * 2)
    path = double.last_sim.output_path
    assert path.startswith(str(tmp_path)) and path.endswith("merged_swimlane.json") and os.path.isfile(path)
    assert "summed over all cores" in double.last_sim.summary()
