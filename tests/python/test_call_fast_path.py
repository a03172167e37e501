"""A warm call goes straight to the compiled program's run (JitFunction._fast_call) only while
nothing it skips could matter: every option change, a function's own option dicts filled in
later, another dtype, a debug output or a simulation take the full path again."""

import numpy as np
import pytest

import pypto
from pypto import _core

F32 = pypto.DT_FP32
T = pypto.Tensor


def _fresh():
    opts = {}

    @pypto.jit(runtime_options=opts)
    def f(x: T((4, 32), F32)) -> T((4, 32), F32):
        pypto.set_vec_tile_shapes(4, 32)
        return x * 2.0 + 1.0

    return f, opts


def test_warm_calls_take_the_fast_path_and_give_the_same_results():
    f, _ = _fresh()
    x = np.arange(128, dtype=np.float32).reshape(4, 32)
    first = f(x)  # (compiles; the second call sets the fast path up)
    np.testing.assert_array_equal(f(x), first)
    assert f._fast is not None
    for _ in range(3):
        np.testing.assert_array_equal(f(x), first)
    np.testing.assert_array_equal(first, x * np.float32(2) + np.float32(1))
    assert f.last_stats["tasks"] >= 1


def test_an_option_changed_between_calls_takes_effect():
    f, opts = _fresh()
    x = np.ones((4, 32), np.float32)
    f(x)
    f(x)
    pypto.set_runtime_options(run_mode="interp")
    try:
        f(x)
        assert f._fast.run_args[3] == "interp"
    finally:
        pypto.set_runtime_options(run_mode="cpu")
    f(x)
    assert f._fast.run_args[3] == "cpu"
    opts["workers"] = 1  # the function's own dict, filled in after the decorator
    f(x)
    assert f._fast.run_args[0] == 1


def test_errors_on_the_fast_path_name_the_callers_line():
    f, _ = _fresh()
    f(np.ones((4, 32), np.float32))
    with pytest.raises(_core.UserError) as ei:
        f(np.ones((4, 33), np.float32))
    assert "test_call_fast_path.py" in str(ei.value)


def test_another_dtype_or_a_scope_takes_the_full_path():
    f, _ = _fresh()
    f(np.ones((4, 32), np.float32))
    with pytest.raises(_core.UserError):
        f(np.ones((4, 32), np.float64))  # refused by the full path, naming the parameter
    with pypto.options(vec_tile_shapes=[2, 32]):
        np.testing.assert_array_equal(f(np.ones((4, 32), np.float32)), np.full((4, 32), 3, np.float32))


def test_a_simulation_or_swimlane_request_takes_the_full_path(tmp_path):
    f, _ = _fresh()
    x = np.ones((4, 32), np.float32)
    f(x)
    f(x)
    assert f._fast is not None
    report = pypto.sim.simulate(f, x)  # a warm function: the request must still be seen
    assert report is not None and f.last_sim is report
    from pypto.frontends.jit import swimlane_to
    path = tmp_path / "swimlane.json"
    with swimlane_to(str(path)):
        f(x)
    assert path.exists()
    np.testing.assert_array_equal(f(x), np.full((4, 32), 3, np.float32))
