"""PyPTO's front-end surface: annotation forms, compile-time parameters, RunMode and the option
groups, as CANN PyPTO programs write them (issue 12, part 0)."""

import dataclasses
import json
import os

import numpy as np
import pytest

import pypto
from _util import MODES, run_in

F32 = pypto.DT_FP32


def arr(*shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


ANNOTATIONS = {
    "call": lambda: pypto.Tensor([6, 40], F32),
    "subscript": lambda: pypto.Tensor[[6, 40], F32],
    "subscript_ellipsis": lambda: pypto.Tensor[...],
    "list_ellipsis": lambda: pypto.Tensor[[...], F32],
    "empty_list": lambda: pypto.Tensor([], F32),
    "no_args": lambda: pypto.Tensor(),
    "lower_case": lambda: pypto.tensor(),
    "dynamic_then_rest": lambda: pypto.Tensor([pypto.DYNAMIC, ...], F32),
    "dynamic_static": lambda: pypto.Tensor([pypto.DYNAMIC, pypto.STATIC], F32),
    "with_format": lambda: pypto.Tensor([6, 40], F32, format=pypto.TileOpFormat.TILEOP_ND),
    "subscript_format": lambda: pypto.Tensor[[6, pypto.DYN], F32, pypto.TileOpFormat.TILEOP_NZ],
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("form", sorted(ANNOTATIONS))
def test_annotation_forms(mode, form):
    ann = ANNOTATIONS[form]()

    @pypto.jit
    def f(x: ann, out: ann):
        pypto.set_vec_tile_shapes(4, 16)
        out[:] = x * 2.0 + 1.0

    x = arr(6, 40)
    out = np.zeros_like(x)
    run_in(mode, f, x, out)
    np.testing.assert_array_equal(out, x * np.float32(2) + np.float32(1))


def test_inferred_shape_and_dtype_compile_per_signature():
    traces = []

    @pypto.jit
    def f(x: pypto.Tensor(), out: pypto.Tensor()):
        traces.append(tuple(x.shape))
        pypto.set_vec_tile_shapes(*([8] * len(x.shape)))
        out[:] = x + x

    for shape, dt in [((5, 9), np.float32), ((5, 9), np.float32), ((3, 4, 5), np.float32), ((5, 9), np.float16),
                      ((7,), np.int32)]:
        x = (arr(*shape) * 10).astype(dt)
        out = np.zeros_like(x)
        f(x, out)
        np.testing.assert_array_equal(out, x + x)
    assert traces == [(5, 9), (3, 4, 5), (5, 9), (7,)]  # one trace per shape and dtype


def test_inferred_dtype_from_torch_bf16_and_fp16():
    torch = pytest.importorskip("torch")

    @pypto.jit
    def f(x: pypto.Tensor[...], out: pypto.Tensor[...]):
        pypto.set_vec_tile_shapes(8, 32)
        out[:] = x * 3.0

    for dt in (torch.float16, torch.bfloat16):
        x = torch.randn(8, 32).to(dt)
        out = torch.zeros_like(x)
        f(x, out)
        torch.testing.assert_close(out, x * 3, rtol=0, atol=0)


def test_annotated_rank_is_checked_against_the_argument():
    @pypto.jit
    def f(x: pypto.Tensor([pypto.DYNAMIC, pypto.STATIC, ...], F32), out: pypto.Tensor([pypto.DYNAMIC, ...], F32)):
        out[:] = x + 1.0

    x = arr(3, 5, 2)
    out = np.zeros_like(x)
    f(x, out)  # ... stands for the remaining dims, none or several
    np.testing.assert_array_equal(out, x + np.float32(1))
    with pytest.raises(pypto.UserError, match=r"(?s)'x' is annotated with rank 2.*shape \(3,\)"):
        f(np.zeros(3, np.float32), np.zeros(3, np.float32))


@pytest.mark.parametrize("mode", MODES)
def test_dynamic_dims_of_different_parameters_are_checked_equal_at_the_call(mode):
    @pypto.jit
    def f(x: pypto.Tensor([pypto.DYNAMIC, 16], F32), out: pypto.Tensor([pypto.DYNAMIC, 16], F32)):
        pypto.set_vec_tile_shapes(4, 16)
        out[:] = pypto.exp(x)

    for n in (1, 7, 20):
        x = arr(n, 16)
        out = np.zeros_like(x)
        run_in(mode, f, x, out)
        np.testing.assert_allclose(out, np.exp(x), rtol=2e-7)
    assert "# assume" in f.last.program.tensor_graph()
    with pytest.raises(pypto.UserError, match=r"(?s)dim 0 of the tensor assigned to %out.*= 7 but .*= 8.*line"):
        run_in(mode, f, arr(7, 16), np.zeros((8, 16), np.float32))


@dataclasses.dataclass(frozen=True)
class Config:
    scale: float
    shift: int


@pytest.mark.parametrize("mode", MODES)
def test_compile_time_parameters(mode):
    traces = []

    @pypto.jit
    def f(x: pypto.Tensor([6, 40], F32), out: pypto.Tensor([6, 40], F32), scale: float, shift: int = 1,
          flip=False, cfg: Config = Config(1.0, 0), dims=(4, 8)):
        traces.append((scale, shift, flip, cfg, dims))
        pypto.set_vec_tile_shapes(*dims)
        y = x * scale + (shift + cfg.shift)
        out[:] = y * cfg.scale if not flip else -y

    x = arr(6, 40)
    cases = [((2.0,), {}), ((2.0,), {}), ((2.0, 3), {}), ((2.0,), {"flip": True}), ((2.0,), {"shift": True}),
             ((0.5,), {"cfg": Config(4.0, 2), "dims": [2, 16]})]
    for args, kw in cases:
        out = np.zeros_like(x)
        run_in(mode, f, x, out, *args, **kw)
        scale = args[0]
        shift = args[1] if len(args) > 1 else kw.get("shift", 1)
        cfg = kw.get("cfg", Config(1.0, 0))
        y = x * np.float32(scale) + np.float32(int(shift) + cfg.shift)
        want = -y if kw.get("flip") else y * np.float32(cfg.scale)
        np.testing.assert_array_equal(out, want)
    # Equal values share a compilation; True is not 1; lists and tuples are values too.
    assert len(traces) == 5, traces


def test_unannotated_parameters_take_arrays_or_values():
    @pypto.jit
    def f(x, out, k):
        pypto.set_vec_tile_shapes(4, 8)
        out[:] = x + k

    x = arr(4, 8)
    out = np.zeros_like(x)
    f(x, out, 3)
    np.testing.assert_array_equal(out, x + np.float32(3))


def test_runtime_options_dict_filled_after_the_decorator():
    # PyPTO's examples pick the run mode in main(), after the kernels were decorated.
    runtime_options = {}

    @pypto.jit(runtime_options=runtime_options)
    def f(x: pypto.Tensor[...], out: pypto.Tensor[...]):
        out[:] = x + 1.0

    x = arr(4, 8)
    out = np.zeros_like(x)
    runtime_options["run_mode"] = pypto.RunMode.NPU
    f(x, out)
    np.testing.assert_array_equal(out, x + np.float32(1))
    runtime_options["run_mode"] = "interp"
    f(x, out)
    assert f._options()["runtime"]["run_mode"] == "interp"
    runtime_options["run_mode"] = "no such mode"
    with pytest.raises(pypto.UserError, match="run_mode"):
        f(x, out)


def test_run_mode_values():
    assert int(pypto.RunMode.NPU) == 0 and int(pypto.RunMode.SIM) == 1
    pypto.set_runtime_options(run_mode=pypto.RunMode.NPU)
    try:
        @pypto.jit
        def f(x: pypto.Tensor([4, 8], F32)):
            return x + 1.0

        np.testing.assert_array_equal(f(np.ones((4, 8), np.float32)), np.full((4, 8), 2, np.float32))
        assert f._options()["runtime"]["run_mode"] == "cpu"  # NPU programs run natively here
    finally:
        pypto.reset_options()
    # SIM runs the NPU machine model (tests/python/test_sim.py): a valid value now.
    pypto.set_runtime_options(run_mode=pypto.RunMode.SIM)
    try:
        @pypto.jit
        def g(x: pypto.Tensor([4, 8], F32)):
            return x + 1.0

        assert g._options()["runtime"]["run_mode"] == "sim"
    finally:
        pypto.reset_options()
    with pytest.raises(pypto.UserError, match="run_mode"):
        pypto.set_runtime_options(run_mode="npu-sim")


PYPTO_KEYS = {
    "pass": {"vec_nbuffer_setting": {"DEFAULT": 2}, "cube_l1_reuse_setting": {-1: 4},
             "cube_nbuffer_setting": {"DEFAULT": 1}, "sg_set_scope": (1, True, False), "auto_mix_partition": 1,
             "sg_set_ooo_scope": 7, "ooo_sched_mode": "HLF", "sg_set_tunevf_mode": 2, "enable_slice": True},
    "runtime": {"device_sched_mode": 3, "stitch_function_max_num": 1024, "max_workspace_kb": 1 << 20,
                "valid_shape_optimize": 1, "ready_on_host_tensors": ["x"], "device_sched_parallelism": 8,
                "launch_sched_aicpu_num": 1, "launch_early_mode": 2},
    "host": {"compile_stage": pypto.CompStage.TILE_GRAPH, "compile_monitor_enable": 2, "compile_timeout": 10,
             "compile_timeout_stage": 5, "compile_monitor_print_interval": 30},
    "codegen": {"support_dynamic_aligned": True, "enable_pmu_trace": True},
    "verify": {"enable_pass_verify": True, "pass_verify_save_tensor": True, "pass_verify_save_tensor_dir": "/tmp",
               "pass_verify_pass_filter": ["all"], "pass_verify_error_tol": [1e-2, 1e-3]},
    "debug": {"compile_debug_mode": 0, "runtime_debug_mode": 4, "dump_pass_graph": []},
}

BAD = {
    "pass": {"ooo_sched_mode": "FAST", "sg_set_tunevf_mode": 3, "enable_slice": 1, "vec_nbuffer_setting": {"a": 0}},
    "runtime": {"device_sched_mode": 4, "stitch_function_max_num": 0, "launch_sched_aicpu_num": 8},
    "host": {"compile_stage": "ALL", "compile_monitor_enable": 3},
    "codegen": {"enable_pmu_trace": "yes"},
    "verify": {"pass_verify_error_tol": [1e-3], "enable_pass_verify": 1},
    "debug": {"runtime_debug_mode": 5},
}


@pytest.mark.parametrize("group", sorted(PYPTO_KEYS))
def test_every_documented_option_is_accepted_and_read_back(group):
    setter = getattr(pypto, f"set_{group}_options")
    getter = getattr(pypto, f"get_{group}_options")
    default = getter()
    try:
        setter(**PYPTO_KEYS[group])
        got = getter()
        for k, v in PYPTO_KEYS[group].items():
            assert got[k] == v, k
        for k, v in BAD[group].items():
            with pytest.raises(pypto.UserError, match=f"{group} option {k}="):
                setter(**{k: v})
        with pytest.raises(pypto.UserError, match=f"unknown {group} option 'no_such_key'"):
            setter(no_such_key=1)
    finally:
        pypto.reset_options()
    assert getter() == default


def test_options_without_effect_are_recorded_in_the_dump(tmp_path):
    @pypto.jit(pass_options={"vec_nbuffer_setting": {"DEFAULT": 4}}, host_options={"compile_timeout": 9},
               debug_options={"dump_dir": str(tmp_path)}, new_ir=True)
    def f(x: pypto.Tensor([4, 8], F32)):
        return x + 1.0

    pypto.set_codegen_options(enable_pmu_trace=True)
    pypto.set_matrix_size([16, 32, 64])
    try:
        f(np.ones((4, 8), np.float32))
    finally:
        pypto.reset_options()
    rec = json.loads((tmp_path / "f" / "options.json").read_text())
    assert rec["pass"]["vec_nbuffer_setting"] == {"DEFAULT": 4}
    assert rec["host"]["compile_timeout"] == 9 and rec["codegen"]["enable_pmu_trace"] is True
    assert rec["host"]["compile_stage"] == "ALL_COMPLETE"
    assert rec["matrix_size"] == [16, 32, 64]
    assert "vec_nbuffer_setting" in rec["no_effect_on_cpu"]["pass"]
    assert "reciprocal_division" not in rec["no_effect_on_cpu"]["pass"]


def test_pypto_debug_and_verify_keys_act(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    @pypto.jit(debug_options={"compile_debug_mode": 1, "runtime_debug_mode": 1},
               verify_options={"enable_pass_verify": True})
    def f(x: pypto.Tensor([4, 8], F32)):
        return x * 2.0

    f(np.ones((4, 8), np.float32))
    dumps = tmp_path / "pypto_dumps" / "f"
    assert (dumps / "options.json").exists()
    assert (dumps / "passes" / "03_partition.txt").exists()
    assert (dumps / "swimlane.json").exists()
    assert f.last_stats["verify"].startswith("verify_passes")


def test_options_as_context_manager_and_decorator():
    base = pypto.get_pass_options()
    with pypto.options(pass_options={"enable_slice": True}, runtime_options={"workers": 1}):
        assert pypto.get_pass_options()["enable_slice"] is True
        assert pypto.get_runtime_options()["workers"] == 1
        with pypto.options("inner", runtime_options={"workers": 2}):
            assert pypto.get_runtime_options()["workers"] == 2
        assert pypto.get_runtime_options()["workers"] == 1
    assert pypto.get_pass_options() == base and pypto.get_runtime_options()["workers"] == 0

    @pypto.options(pass_options={"enable_slice": True})
    def test_body():
        return pypto.get_pass_options()["enable_slice"]

    assert test_body() is True and pypto.get_pass_options()["enable_slice"] is False
    with pytest.raises(pypto.UserError, match="unknown pass option 'enable_slices'"):
        pypto.options(pass_options={"enable_slices": True})
    with pytest.raises(RuntimeError):
        with pypto.options(runtime_options={"workers": 3}):
            raise RuntimeError("boom")
    assert pypto.get_runtime_options()["workers"] == 0  # restored on an exception too


def test_options_tile_shapes_are_defaults_of_traced_functions():
    seen = []

    @pypto.jit
    def f(x: pypto.Tensor([8, 64], F32)):
        seen.append(pypto.get_vec_tile_shapes())
        return x + 1.0

    x = np.ones((8, 64), np.float32)
    with pypto.options(vec_tile_shapes=[2, 32]):
        f(x)
    f(x)  # outside the scope: another compilation, with the default tile
    assert seen[0] == [2, 32] and seen[1] != [2, 32]


def test_set_matrix_size_is_checked():
    pypto.set_matrix_size([128, 256, 64])
    assert pypto.get_matrix_size() == [128, 256, 64]
    pypto.reset_options()
    assert pypto.get_matrix_size() == []
    for bad in ([1, 2], [1, 2, -1], "128"):  # 0 is "not given" (PyPTO's page attention)
        with pytest.raises(pypto.UserError, match="set_matrix_size"):
            pypto.set_matrix_size(bad)


def test_frontend_jit_alias_takes_pypto_arguments():
    @pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU}, create_new_logical_tensor=False)
    def f(x: pypto.Tensor[[4, 8], F32], out: pypto.Tensor[[4, 8], F32]):
        out[:] = pypto.add(x, 1.0)

    x = arr(4, 8)
    out = np.zeros_like(x)
    f(x, out)
    np.testing.assert_array_equal(out, x + np.float32(1))
    assert os.path.basename(__file__) == "test_frontend_compat.py"


# --- PyPTO's own examples, as written there (only the device lines differ) ------------------------

def ceildiv(a, b):
    return (a + b - 1) // b


@pytest.mark.parametrize("mode", MODES)
def test_example_dynamic_add_with_view_and_assemble(mode):
    # examples/01_beginner/basic/basic_ops.py
    @pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
    def dynamic_add_kernel(x: pypto.Tensor[[pypto.DYNAMIC, pypto.DYNAMIC], pypto.DT_FP16],
                           output: pypto.Tensor[[pypto.DYNAMIC, pypto.DYNAMIC], pypto.DT_FP16],
                           block_m: int, block_n: int, tile_m: int, tile_n: int):
        pypto.set_vec_tile_shapes(tile_m, tile_n)
        for m in pypto.loop(ceildiv(x.shape[0], block_m)):
            for n in pypto.loop(ceildiv(x.shape[1], block_n)):
                tile = pypto.view(x, shape=[block_m, block_n], offsets=[m * block_m, n * block_n])
                tile = tile * 2
                pypto.assemble(tile, [m * block_m, n * block_n], output)

    x = arr(256, 384, dtype=np.float16)
    out = np.zeros_like(x)
    run_in(mode, dynamic_add_kernel, x, out, 128, 128, 32, 32)
    np.testing.assert_array_equal(out, x * np.float16(2))


@pytest.mark.parametrize("mode", MODES)
def test_example_softmax_with_open_ended_assignment(mode):
    # examples/02_intermediate/operators/softmax/softmax.py
    def softmax_core(x: pypto.Tensor) -> pypto.Tensor:
        row_max = pypto.amax(x, dim=-1, keepdim=True)
        exp = pypto.exp(x - row_max)
        esum = pypto.sum(exp, dim=-1, keepdim=True)
        return exp / esum

    @pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
    def softmax_kernel(input_tensor: pypto.Tensor([pypto.DYNAMIC, ...], pypto.DT_FP32),
                       output_tensor: pypto.Tensor([pypto.DYNAMIC, ...], pypto.DT_FP32)):
        bs, seqlen, head, dim = input_tensor.shape
        pypto.set_vec_tile_shapes(1, 4, 1, 64)
        for idx in pypto.loop(0, bs, 1, name="LOOP_L0_bIdx", idx_name="idx"):
            input_view = input_tensor[idx:idx + 1, :seqlen, :head, :dim]
            output_tensor[idx:, ...] = softmax_core(input_view)

    x = arr(3, 8, 2, 64)
    out = np.zeros_like(x)
    run_in(mode, softmax_kernel, x, out)
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("mode", MODES)
def test_example_matmul_with_move(mode):
    torch = pytest.importorskip("torch")

    # examples/01_beginner/basic/basic_ops.py
    @pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
    def matmul_kernel(a: pypto.Tensor[[...], pypto.DT_BF16], b: pypto.Tensor[[...], pypto.DT_BF16],
                      out: pypto.Tensor[[...], pypto.DT_BF16]):
        pypto.set_cube_tile_shapes([32, 32], [64, 64], [64, 64])
        out.move(pypto.matmul(a, b, a.dtype))

    a = torch.randn(64, 128).to(torch.bfloat16)
    b = torch.randn(128, 96).to(torch.bfloat16)
    out = torch.zeros(64, 96, dtype=torch.bfloat16)
    run_in(mode, matmul_kernel, a, b, out)
    torch.testing.assert_close(out, (a.float() @ b.float()).to(torch.bfloat16), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("mode", MODES)
def test_view_with_valid_shape_on_the_last_block(mode):
    @pypto.jit
    def f(x: pypto.Tensor([pypto.DYNAMIC, 64], F32), out: pypto.Tensor([pypto.DYNAMIC, 64], F32)):
        pypto.set_vec_tile_shapes(32, 64)
        n = x.shape[0]
        for i in pypto.loop(ceildiv(n, 32)):
            blk = pypto.view(x, [32, 64], [i * 32, 0], valid_shape=[(n - i * 32).min(32), 64])
            out[i * 32:, :] = blk + 1.0

    for n in (32, 45, 100):
        x = arr(n, 64)
        out = np.zeros_like(x)
        run_in(mode, f, x, out)
        np.testing.assert_array_equal(out, x + np.float32(1))


@pytest.mark.parametrize("mode", MODES)
def test_matmul_extend_params(mode):
    @pypto.jit
    def f(a: pypto.Tensor([32, 64], F32), b: pypto.Tensor([64, 48], F32), bias: pypto.Tensor([1, 48], F32)):
        pypto.set_cube_tile_shapes([16, 16], [32, 64], [16, 16])
        pypto.set_vec_tile_shapes(16, 48)
        return pypto.matmul(a, b, pypto.DT_FP32,
                            extend_params={"bias_tensor": bias, "scale": 0.25, "relu_type": pypto.ReLuType.RELU})

    a, b, bias = arr(32, 64), arr(64, 48, seed=1), arr(1, 48, seed=2)
    want = np.maximum((a.astype(np.float64) @ b + bias) * 0.25, 0)
    np.testing.assert_allclose(run_in(mode, f, a, b, bias), want, rtol=1e-5, atol=1e-5)

    @pypto.jit
    def q(a: pypto.Tensor([16, 32], pypto.DT_INT8), b: pypto.Tensor([32, 16], pypto.DT_INT8),
          s: pypto.Tensor([1, 16], F32)):
        pypto.set_cube_tile_shapes([16, 16], [32, 32], [16, 16])
        pypto.set_vec_tile_shapes(16, 16)
        return pypto.matmul(a, b, pypto.DT_FP16, extend_params={"scale_tensor": s})

    ai = np.random.default_rng(3).integers(-128, 128, (16, 32)).astype(np.int8)
    bi = np.random.default_rng(4).integers(-128, 128, (32, 16)).astype(np.int8)
    s = (arr(1, 16, seed=5) * 0.01).astype(np.float32)
    want = ((ai.astype(np.int32) @ bi.astype(np.int32)).astype(np.float32) * s).astype(np.float16)
    np.testing.assert_array_equal(run_in(mode, q, ai, bi, s), want)

    for bad, match in [({"bias": 1}, "unknown extend_params key 'bias'"),
                       ({"trans_mode": 1}, "trans_mode must be a pypto.TransMode"),
                       ({"relu_type": 1}, "relu_type must be a pypto.ReLuType")]:
        @pypto.jit
        def g(a: pypto.Tensor([16, 16], F32)):
            return pypto.matmul(a, a, pypto.DT_FP32, extend_params=bad)

        with pytest.raises(pypto.UserError, match=match):
            g(arr(16, 16))


def test_model_code_names_platform_operation_dtype_members_matmul_operator_and_valid_shape():
    # Names CANN PyPTO's model code uses (DeepSeek, GLM, Qwen blocks).
    assert pypto.platform.npuarch == "DAV_2201"
    assert pypto.pypto_impl.GetNPUArch() == "DAV_2201"
    with pytest.raises(pypto.UserError, match="npuarch"):
        pypto.platform.npuarch = "DAV_9999"
    assert pypto.DataType.DT_FP32 == pypto.DT_FP32 and pypto.DataType.DT_BF16 == pypto.DT_BF16
    from pypto.operation import add, op_wrapper

    @op_wrapper
    def twice(t):
        """doc"""
        return add(t, t)
    assert twice.__doc__ == "doc"

    @pypto.jit
    def f(a: pypto.Tensor((8, 16), pypto.DT_FP32), b: pypto.Tensor((16, 4), pypto.DT_FP32)):
        assert [int(d) for d in a.valid_shape] == [8, 16]
        return twice(a @ b)

    a = np.random.default_rng(0).standard_normal((8, 16)).astype(np.float32)
    b = np.random.default_rng(1).standard_normal((16, 4)).astype(np.float32)
    np.testing.assert_allclose(f(a, b), 2 * (a.astype(np.float64) @ b), rtol=1e-5, atol=1e-5)


def test_elementwise_ops_take_the_valid_part_of_a_static_operand():
    # qwen3_next: a [min(s - i, 128), 128] valid view times a static [128, 128] mask.
    @pypto.jit
    def f(x: pypto.Tensor((10, 8), pypto.DT_FP32), mask: pypto.Tensor((4, 8), pypto.DT_FP32),
          out: pypto.Tensor((10, 8), pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(4, 8)
        for i in pypto.loop(0, 10, 4):
            n = (10 - i).min(4)
            v = pypto.view(x, [4, 8], [i, 0], valid_shape=[n, 8])
            out[i:i + 4, :] = v * mask  # rows of mask beyond n take no part

    x = np.random.default_rng(2).standard_normal((10, 8)).astype(np.float32)
    mask = np.random.default_rng(3).standard_normal((4, 8)).astype(np.float32)
    out = np.zeros_like(x)
    f(x, mask, out)
    ref = x * np.concatenate([mask, mask, mask[:2]])
    np.testing.assert_allclose(out, ref, rtol=1e-6)


def test_an_all_static_annotation_takes_the_arguments_rank_and_loop_unroll_takes_idx():
    # kimi: gamma annotated Tensor([STATIC, STATIC]) and passed as [1, 1, d];
    # pypto.loop_unroll(..., idx="bt_idx").
    @pypto.jit
    def f(x: pypto.Tensor([pypto.STATIC, pypto.STATIC]), out: pypto.Tensor([pypto.STATIC, pypto.STATIC, pypto.STATIC])):
        pypto.set_vec_tile_shapes(1, 1, 8)
        for i, k in pypto.loop_unroll(0, 4, 1, name="L", idx="i", unroll_list=[2, 1]):
            out[i:i + k, :, :] = x[i:i + k, :, :] * 2.0

    x = np.arange(32, dtype=np.float32).reshape(4, 1, 8)
    out = np.zeros_like(x)
    f(x, out)
    np.testing.assert_array_equal(out, x * 2)


def test_where_takes_the_valid_part_of_static_operands():
    # DeepSeek's win_attention: where(mask [256, n] static, scores [valid, n], -inf).
    @pypto.jit
    def f(x: pypto.Tensor((10, 8), pypto.DT_FP32), keep: pypto.Tensor((4, 8), pypto.DT_FP32),
          out: pypto.Tensor((10, 8), pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(4, 8)
        for i in pypto.loop(0, 10, 4):
            n = (10 - i).min(4)
            v = pypto.view(x, [4, 8], [i, 0], valid_shape=[n, 8])
            out[i:i + 4, :] = pypto.where(keep > 0.0, v, float("-inf"))

    x = np.random.default_rng(7).standard_normal((10, 8)).astype(np.float32)
    keep = np.random.default_rng(8).standard_normal((4, 8)).astype(np.float32)
    out = np.zeros_like(x)
    f(x, keep, out)
    k = np.concatenate([keep, keep, keep[:2]])
    np.testing.assert_array_equal(out, np.where(k > 0, x, -np.inf))


def test_pypto_error_classes_catch_our_errors():
    """PyPTO's programs catch pypto.error.FeError (and PyptoRtError) around a call with bad
    arguments; a UserError is both (and still a ValueError), with PyPTO's wording."""
    from pypto.error import FeError, PyptoError, PyptoRtError

    @pypto.jit
    def f(a: pypto.Tensor((4, 8), pypto.DT_INT32), b: pypto.Tensor((4, 8), pypto.DT_INT32)):
        return a + b

    a = np.zeros((4, 8), np.int32)
    with pytest.raises(FeError, match=r"expects shape int32\(4, 8\), got \(4, 7\), which does not match the shape"):
        f(a, np.zeros((4, 7), np.int32))
    with pytest.raises(PyptoRtError, match=r"expects dtype int32, got .*, which does not match the dtype"):
        f(a, np.zeros((4, 8), np.float32))
    with pytest.raises(FeError, match=r"missing a required argument: 'b'"):
        f(a)
    assert issubclass(pypto.UserError, (PyptoError, ValueError)) and pypto.error.UserError is pypto.UserError


def test_tensor_format_positional_and_matrix_size_zero():
    """PyPTO's page attention: pypto.tensor(shape, dtype, name, format) and
    set_matrix_size([m, 0, n]) (0: k not given)."""
    @pypto.jit
    def f(x: pypto.Tensor((4, 8), pypto.DT_FP32)):
        t = pypto.tensor([4, 8], pypto.DT_FP32, "t", pypto.TileOpFormat.TILEOP_ND)
        pypto.set_matrix_size([4, 0, 8])
        t[:] = x * 3.0
        return t

    np.testing.assert_array_equal(f(np.ones((4, 8), np.float32)), np.full((4, 8), 3.0, np.float32))
    with pytest.raises(pypto.UserError, match="three non-negative ints"):
        pypto.set_matrix_size([4, -1, 8])
    pypto.reset_options()


def test_status_shape_annotation_takes_an_argument_of_more_dims():
    """PyPTO's status shapes ([DYNAMIC, STATIC]) accept an argument of more dims: the extra
    trailing dims are static (its mxfp8 indexer annotates [t, k / 32] scales, passes [t, k / 64, 2]
    and views them so)."""
    @pypto.jit
    def f(s: pypto.Tensor([pypto.DYNAMIC, pypto.STATIC], pypto.DT_FP32)):
        assert len(s.shape) == 3 and s.shape[1:] == [4, 2]
        return pypto.view(s, [2, 4, 2], [0, 0, 0]) * 2.0

    x = np.arange(48, dtype=np.float32).reshape(6, 4, 2)
    np.testing.assert_array_equal(f(x), x[:2] * 2)
    with pytest.raises(pypto.UserError, match="rank 2"):
        f(np.zeros((6,), np.float32))
