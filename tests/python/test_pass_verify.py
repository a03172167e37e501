"""PyPTO's precision tool: enable_pass_verify with set_verify_golden_data, pass_verify_print and
pass_verify_save (python/pypto/pass_verify.py, python/pypto/tools/verify.py)."""

import os

import numpy as np
import pytest

import pypto
from pypto.tools import tensor_semantics

F32 = pypto.DT_FP32


def _kernel(save_dir: str, save: bool = True):
    opts = {"enable_pass_verify": True, "pass_verify_save_tensor": save, "pass_verify_save_tensor_dir": save_dir}

    @pypto.jit(verify_options=opts)
    def k(x: pypto.Tensor((8, 16), F32), out: pypto.Tensor((8, 16), F32)):
        pypto.set_vec_tile_shapes(4, 16)
        for i in pypto.loop(2, name="L", idx_name="i"):
            v = x[i * 4:(i + 1) * 4, :] * 2.0
            pypto.pass_verify_print("i=", i, " v:", v, cond=(i == 1))
            pypto.pass_verify_save(v, "v_$idx", idx=i)
            out[i * 4:(i + 1) * 4, :] = v + 1.0

    return k


def test_goldens_pass_and_the_report_folder(tmp_path, capsys):
    k = _kernel(str(tmp_path))
    x = np.arange(128, dtype=np.float32).reshape(8, 16) / 7
    out = np.zeros_like(x)
    pypto.set_verify_golden_data(goldens=[None, x * 2 + 1])
    k(x, out)
    np.testing.assert_allclose(out, x * 2 + 1, rtol=1e-6)
    assert k.last_stats["verify"].startswith("verify_passes: tensor graph == block graph")
    log = open(os.path.join(k.last_stats["verify_dir"], "interpreter.log")).read()
    assert "tensor_graph Verify for 2 data view list index 0 result NO_COMPARE" in log
    assert "tensor_graph Verify for 2 data view list index 1 result PASS" in log
    assert "[ERROR]" not in log
    # pass_verify_print ran once (cond i == 1), with the values of rows 4..7 of the evaluation.
    printed = capsys.readouterr().out
    assert printed.count("i=1 v:") == 1 and "i=0" not in printed
    assert "v:<4x16xFP32>" in printed or ":<4x16xFP32>" in printed
    # pass_verify_save: one file per iteration, its bytes and a csv with dtype and shape.
    for i in range(2):
        data = np.fromfile(tmp_path / "tensor" / f"v_{i}.data", np.float32).reshape(4, 16)
        np.testing.assert_array_equal(data, x[i * 4:(i + 1) * 4] * 2)
        assert "fp32,4x16" in (tmp_path / "tensor" / f"v_{i}.csv").read_text()


def test_a_golden_that_differs_is_a_failed_line_and_a_warning(tmp_path):
    k = _kernel(str(tmp_path))
    x = np.ones((8, 16), np.float32)
    wrong = x * 2 + 1
    wrong[5, 3] = 0.0
    pypto.set_verify_golden_data(goldens=[None, wrong])
    with pytest.warns(RuntimeWarning, match=r"index 1 result FAILED: 'out' \(tensor graph\): 1 of 128 elements "
                                            r"differ .* first at \(5, 3\): 3.0 vs golden 0.0"):
        k(x, np.zeros_like(x))
    log = open(os.path.join(k.last_stats["verify_dir"], "interpreter.log")).read()
    assert "[ERROR]" in log and "result FAILED" in log
    # The goldens are used up by the call: the next one has none to compare.
    k(x, np.zeros_like(x))
    assert "result FAILED" not in k.last_stats["verify"]


def test_goldens_of_the_wrong_shape_and_device(tmp_path):
    k = _kernel(str(tmp_path), save=False)
    x = np.ones((8, 16), np.float32)
    pypto.set_verify_golden_data(goldens=[None, np.ones((4, 4), np.float32)])
    with pytest.warns(RuntimeWarning, match=r"'out' has shape \(8, 16\), the golden \(4, 4\)"):
        k(x, np.zeros_like(x))
    assert "verify_dir" not in k.last_stats  # pass_verify_save_tensor off: no folder


def test_an_op_without_numpy_semantics_is_no_compare(tmp_path, monkeypatch):
    real = tensor_semantics.evaluate

    def evaluate(op, *args, **kwargs):
        if op == "mul_scalar":
            raise tensor_semantics.NoSemantics(op)
        return real(op, *args, **kwargs)

    monkeypatch.setattr(tensor_semantics, "evaluate", evaluate)
    k = _kernel(str(tmp_path))
    x = np.ones((8, 16), np.float32)
    out = np.zeros_like(x)
    pypto.set_verify_golden_data(goldens=[None, x * 2 + 1])
    k(x, out)  # no error: the goldens are compared with the reference interpreter instead
    np.testing.assert_array_equal(out, x * 2 + 1)
    log = open(os.path.join(k.last_stats["verify_dir"], "interpreter.log")).read()
    assert "no numpy semantics for mul_scalar (NO_COMPARE)" in log
    assert "index 1 result PASS" in log


def test_without_verify_the_probes_do_nothing(capsys, tmp_path):
    @pypto.jit
    def k(x: pypto.Tensor((4, 16), F32)):
        pypto.pass_verify_print(x)
        pypto.pass_verify_save(x, "never")
        return x + 1.0

    x = np.zeros((4, 16), np.float32)
    np.testing.assert_array_equal(k(x), x + 1)
    assert capsys.readouterr().out == ""


def test_bad_arguments_are_user_errors():
    @pypto.jit
    def k(x: pypto.Tensor((4, 16), F32)):
        pypto.pass_verify_save(x, "t_$step")
        return x + 1.0

    with pytest.raises(pypto.UserError, match=r"placeholder '\$step' of 't_\$step' has no keyword argument"):
        k(np.zeros((4, 16), np.float32))
    with pytest.raises(pypto.UserError, match="goldens\\[0\\] is on device 'meta'"):
        torch = pytest.importorskip("torch")
        pypto.set_verify_golden_data(goldens=[torch.empty(2, device="meta")])


def test_verify_runs_reshapes_scatters_and_negative_zero_scalars(tmp_path):
    # Found by the tensor_semantics tests: a reshape value and scatter (no output: it writes its
    # third input) failed the evaluation, and a -0.0 scalar (printed `-0`) was read as +0.
    @pypto.jit(verify_options={"enable_pass_verify": True})
    def f(x: pypto.Tensor((4, 12), F32), d: pypto.Tensor((4, 8), F32), i: pypto.Tensor((2, 8), pypto.DT_INT64),
          s: pypto.Tensor((2, 8), F32)):
        pypto.scatter_(d, 0, i, s)
        return pypto.reshape(x, [48]) * 2.0, x / -0.0

    x = np.arange(48, dtype=np.float32).reshape(4, 12) - 20
    d = np.zeros((4, 8), np.float32)
    i = np.array([[3, 1, 0, 2, 3, 1, 0, 2], [1, 0, 3, 0, 2, 2, 1, 3]], np.int64)
    s = np.arange(16, dtype=np.float32).reshape(2, 8) + 1
    want_d = d.copy()
    for r in range(2):
        for c in range(8):
            want_d[i[r, c], c] = s[r, c]
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no FAILED line
        r, q = f(x, d, i, s)
    np.testing.assert_array_equal(r, x.reshape(48) * 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_array_equal(q, x / np.float32(-0.0))
    np.testing.assert_array_equal(d, want_d)
    assert f.last_stats["verify"].startswith("verify_passes: tensor graph ==")


@pytest.mark.parametrize("passes,levels", [
    (None, ["tensor graph", "block graph after expand_tiles, partition", "block graph after fuse_instructions",
            "block graph after allocate_buffers", "generated code"]),
    (["all"], None),
    ([], ["tensor graph"]),
    (["fuse_instructions", "CodegenPreproc"], ["tensor graph", "block graph after fuse_instructions"]),
    (["codegen"], ["tensor graph", "generated code"]),
])
def test_pass_filter_picks_the_levels(passes, levels, tmp_path):
    """pass_verify_pass_filter: not given or "all", every level; [], the tensor graph alone; else
    the levels after the passes named (PyPTO's names, such as CodegenPreproc, are ignored)."""
    opts = {"enable_pass_verify": True, "pass_verify_save_tensor_dir": str(tmp_path)}
    if passes is not None:
        opts["pass_verify_pass_filter"] = passes

    @pypto.jit(verify_options=opts)
    def f(x: pypto.Tensor((8, 16), F32)):
        return pypto.exp(x) + 1.0

    x = np.linspace(-2, 2, 128, dtype=np.float32).reshape(8, 16)
    pypto.set_verify_golden_data(goldens=[None, np.exp(x) + 1])
    np.testing.assert_allclose(f(x), np.exp(x) + 1, rtol=1e-6)
    got = f.last_stats["verify"].removeprefix("verify_passes: ").split(" == ")
    if levels is None:
        assert len(got) == 5
    else:
        assert got == levels
