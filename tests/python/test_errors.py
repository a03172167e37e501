"""User errors: pypto.UserError naming the op, the shapes/dtypes, the user's file:line and a hint."""

import os

import numpy as np
import pytest

import pypto

F32, F16, I32 = pypto.DT_FP32, pypto.DT_FP16, pypto.DT_INT32
THIS_FILE = os.path.basename(__file__)


def line_of(marker):
    """Line number of the source line of this file carrying `# <marker>`."""
    with open(__file__) as fh:
        for n, text in enumerate(fh, 1):
            if text.rstrip().endswith("# " + marker):
                return n
    raise AssertionError(marker)


def raises_at(marker, fn, *args, match=()):
    with pytest.raises(pypto.UserError) as ei:
        fn(*args)
    msg = str(ei.value)
    assert isinstance(ei.value, ValueError)
    assert f'{THIS_FILE}", line {line_of(marker)}' in msg, msg
    for m in match:
        assert m in msg, f"{m!r} not in:\n{msg}"
    return msg


def z(*shape, dtype=np.float32):
    return np.zeros(shape, dtype)


def test_operand_shape_mismatch():
    @pypto.jit
    def f(x: pypto.Tensor((4, 8), F32), y: pypto.Tensor((4, 9), F32), o: pypto.Tensor((4, 8), F32)):
        pypto.set_vec_tile_shapes(4, 8)
        o[:] = x + y  # E:shape

    msg = raises_at("E:shape", f, z(4, 8), z(4, 9), z(4, 8), match=["pypto.add", "(4, 8)", "(4, 9)"])
    assert "hint:" in msg


def test_operand_dtype_mismatch():
    @pypto.jit
    def f(x: pypto.Tensor((4, 8), F32), y: pypto.Tensor((4, 8), F16), o: pypto.Tensor((4, 8), F32)):
        pypto.set_vec_tile_shapes(4, 8)
        o[:] = pypto.maximum(x, y)  # E:dtype

    msg = raises_at("E:dtype", f, z(4, 8), z(4, 8, dtype=np.float16), z(4, 8),
                    match=["pypto.maximum", "fp32", "fp16"])
    assert "pypto.cast" in msg


def test_tile_rank_differs_from_tensor_rank():
    @pypto.jit
    def f(x: pypto.Tensor((4, 8), F32), o: pypto.Tensor((4, 8), F32)):
        pypto.set_vec_tile_shapes(8)
        o[:] = pypto.exp(x)  # E:rank

    raises_at("E:rank", f, z(4, 8), z(4, 8), match=["exp", "(8)", "rank 1", "rank-2", "set_vec_tile_shapes"])


def test_tile_too_large_for_ub():
    @pypto.jit
    def f(x: pypto.Tensor((1024, 1024), F32), o: pypto.Tensor((1024, 1024), F32)):
        pypto.set_vec_tile_shapes(1024, 1024)
        o[:] = pypto.exp(x)  # E:ub

    raises_at("E:ub", f.compile, (1024, 1024), (1024, 1024),
              match=["pypto.exp", "(1024, 1024)", "UB", "set_vec_tile_shapes"])


@pypto.jit
def _ok(x: pypto.Tensor((4, 8), F32), o: pypto.Tensor((4, 8), F32)):
    pypto.set_vec_tile_shapes(4, 8)
    o[:] = x + 1.0


def test_call_wrong_shape_names_parameter():
    with pytest.raises(pypto.UserError) as ei:
        _ok(z(4, 9), z(4, 8))
    msg = str(ei.value)
    assert "'x'" in msg and "(4, 8)" in msg and "(4, 9)" in msg


def test_call_wrong_rank_names_parameter():
    with pytest.raises(pypto.UserError) as ei:
        _ok(z(4, 8), z(4, 8, 1))
    msg = str(ei.value)
    assert "'o'" in msg and "(4, 8)" in msg and "(4, 8, 1)" in msg


def test_call_wrong_dtype_names_parameter():
    with pytest.raises(pypto.UserError) as ei:
        _ok(z(4, 8), z(4, 8, dtype=np.float16))
    msg = str(ei.value)
    assert "'o'" in msg and "fp32" in msg and "fp16" in msg


def test_call_wrong_number_of_arguments():
    with pytest.raises(pypto.UserError, match=r"(?s)missing a required argument: 'o'.*test_errors.py"):
        _ok(z(4, 8))
    with pytest.raises(pypto.UserError, match="too many positional arguments"):
        _ok(z(4, 8), z(4, 8), z(4, 8))
    with pytest.raises(pypto.UserError, match="unexpected keyword argument 'p'"):
        _ok(z(4, 8), z(4, 8), p=1)


def test_call_unsupported_numpy_dtype_names_parameter():
    with pytest.raises(pypto.UserError) as ei:
        _ok(z(4, 8, dtype=np.float64), z(4, 8))
    msg = str(ei.value)
    assert "'x'" in msg and "fp32" in msg and "float64" in msg


def test_call_wrong_shape_points_at_call_line():
    raises_at("E:call", lambda: _ok(z(4, 9), z(4, 8)))  # E:call


def test_unknown_runtime_option():
    before = pypto.get_runtime_options()
    with pytest.raises(pypto.UserError) as ei:
        pypto.set_runtime_options(wokers=2)
    msg = str(ei.value)
    assert "'wokers'" in msg and "workers" in msg and "hint" in msg
    assert pypto.get_runtime_options() == before


def test_unknown_option_in_jit_decorator():
    with pytest.raises(pypto.UserError, match="unknown pass option 'machne'"):
        @pypto.jit(pass_options={"machne": "a2a3"})
        def f(x: pypto.Tensor((4, 8), F32)):
            return x


def test_bad_option_values():
    with pytest.raises(pypto.UserError, match=r"machine='nope' is not valid: it takes one of .*'a2a3'"):
        pypto.set_pass_options(machine="nope")
    with pytest.raises(pypto.UserError, match="sched_mode"):
        pypto.set_runtime_options(sched_mode="random")


def _sym_fn(use):
    @pypto.jit
    def f(x: pypto.Tensor((pypto.DYNAMIC, 8), F32), o: pypto.Tensor((pypto.DYNAMIC, 8), F32)):
        pypto.set_vec_tile_shapes(4, 8)
        use(x.shape[0])
        o[:] = x[:, :] * 1.0
    return f


def test_int_of_symbolic_value():
    f = _sym_fn(lambda n: int(n))
    with pytest.raises(pypto.UserError) as ei:
        f(z(4, 8), z(4, 8))
    msg = str(ei.value)
    assert "int()" in msg and "x_dim0" in msg and "hint" in msg


def test_print_of_symbolic_value_warns_at_line(capsys):
    """As in PyPTO, print() while tracing shows the expression (once, at trace time); a warning
    at the user's line says that is not the run-time value."""
    @pypto.jit
    def f(x: pypto.Tensor((pypto.DYNAMIC, 8), F32), o: pypto.Tensor((pypto.DYNAMIC, 8), F32)):
        pypto.set_vec_tile_shapes(4, 8)
        print(x.shape[0])  # E:print
        o[:] = x * 1.0

    x, o = np.arange(32, dtype=np.float32).reshape(4, 8), z(4, 8)
    with pytest.warns(pypto.SymbolicPrintWarning, match="x_dim0") as rec:
        f(x, o)
    assert rec[0].filename == __file__ and rec[0].lineno == line_of("E:print")
    assert "x_dim0" in capsys.readouterr().out
    np.testing.assert_array_equal(o, x)


def test_fstring_of_symbolic_value_warns():
    f = _sym_fn(lambda n: f"rows={n}")
    with pytest.warns(pypto.SymbolicPrintWarning, match="printing the symbolic value"):
        f(z(4, 8), z(4, 8))


def test_symbolic_text_outside_tracing():
    n = pypto.SymbolicScalar.var("n") * 2 + 1
    assert str(n) == "(2*n + 1)" or "n" in str(n)
    assert "n" in repr(n)


def test_bool_of_symbolic_value():
    f = _sym_fn(lambda n: bool(n))
    with pytest.raises(pypto.UserError) as ei:
        f(z(4, 8), z(4, 8))
    msg = str(ei.value)
    assert "truth value" in msg and "x_dim0" in msg and "pypto.cond" in msg


def test_int_of_symbolic_value_points_at_line():
    @pypto.jit
    def f(x: pypto.Tensor((pypto.DYNAMIC, 8), F32), o: pypto.Tensor((pypto.DYNAMIC, 8), F32)):
        pypto.set_vec_tile_shapes(4, 8)
        n = int(x.shape[0])  # E:int
        o[:] = x * float(n)

    raises_at("E:int", f, z(4, 8), z(4, 8), match=["x_dim0"])


def test_bool_of_tensor():
    @pypto.jit
    def f(x: pypto.Tensor((4, 8), F32), o: pypto.Tensor((4, 8), F32)):
        pypto.set_vec_tile_shapes(4, 8)
        if x:  # E:tbool
            o[:] = x * 1.0

    raises_at("E:tbool", f, z(4, 8), z(4, 8), match=["truth value"])


def test_slice_past_the_end_holds_the_part_inside():
    # As numpy's slicing and PyPTO's view: x[0:5] of 4 rows is those 4 rows, and assigned to a
    # window of 5 it writes them (the fifth row keeps its value).
    @pypto.jit
    def f(x: pypto.Tensor((4, 8), F32), o: pypto.Tensor((5, 8), F32)):
        pypto.set_vec_tile_shapes(4, 8)
        o[0:5, :] = x[0:5, :] * 1.0

    x, o = np.arange(32, dtype=np.float32).reshape(4, 8), np.full((5, 8), -1.0, np.float32)
    f(x, o)
    np.testing.assert_array_equal(o[:4], x)
    np.testing.assert_array_equal(o[4], -1.0)


def test_slice_wholly_past_the_end():
    @pypto.jit
    def f(x: pypto.Tensor((4, 8), F32)):
        return x[4:6, :] * 1.0  # E:empty

    raises_at("E:empty", f, z(4, 8), match=["empty"])


def test_integer_index_drops_the_dim():
    # x[1] is a row (8,), as in numpy and PyPTO: assigning it to a (1, 8) window names both shapes.
    @pypto.jit
    def f(x: pypto.Tensor((4, 8), F32), o: pypto.Tensor((1, 8), F32)):
        pypto.set_vec_tile_shapes(4, 8)
        o[:] = x[1] * 1.0  # E:intidx

    raises_at("E:intidx", f, z(4, 8), z(1, 8), match=["shape (8,)", "window of shape (1, 8)"])


def test_exp_on_int_tensor():
    @pypto.jit
    def f(x: pypto.Tensor((4, 8), I32), o: pypto.Tensor((4, 8), I32)):
        pypto.set_vec_tile_shapes(4, 8)
        o[:] = pypto.exp(x)  # E:iexp

    raises_at("E:iexp", f, z(4, 8, dtype=np.int32), z(4, 8, dtype=np.int32),
              match=["pypto.exp", "int32", "(4, 8)", "pypto.cast"])


def test_reduction_dim_out_of_range():
    @pypto.jit
    def f(x: pypto.Tensor((4, 8), F32), o: pypto.Tensor((4, 1), F32)):
        pypto.set_vec_tile_shapes(4, 8)
        o[:] = pypto.sum(x, dim=2, keepdim=True)  # E:dim

    raises_at("E:dim", f, z(4, 8), z(4, 1), match=["pypto.sum", "dim 2", "rank 2"])


def test_assign_shape_mismatch():
    @pypto.jit
    def f(x: pypto.Tensor((4, 8), F32), o: pypto.Tensor((4, 8), F32)):
        pypto.set_vec_tile_shapes(4, 8)
        o[:] = pypto.amax(x, dim=-1, keepdim=True)  # E:assign

    raises_at("E:assign", f, z(4, 8), z(4, 8), match=["(4, 1)", "(4, 8)"])


def test_assemble_dtype_mismatch():
    @pypto.jit
    def f(x: pypto.Tensor((4, 8), F32), o: pypto.Tensor((4, 8), F32)):
        pypto.set_vec_tile_shapes(4, 8)
        pypto.assemble(pypto.cast(x, F16), [0, 0], o)  # E:asmdt

    raises_at("E:asmdt", f, z(4, 8), z(4, 8), match=["pypto.assemble", "fp16", "fp32"])


def test_assemble_does_not_fit():
    @pypto.jit
    def f(x: pypto.Tensor((4, 8), F32), o: pypto.Tensor((4, 8), F32)):
        pypto.set_vec_tile_shapes(4, 8)
        pypto.assemble(x * 1.0, [1, 0], o)  # E:fit

    raises_at("E:fit", f, z(4, 8), z(4, 8), match=["pypto.assemble", "(1, 0)", "does not fit"])


def test_loop_step_zero():
    @pypto.jit
    def f(x: pypto.Tensor((4, 8), F32), o: pypto.Tensor((4, 8), F32)):
        pypto.set_vec_tile_shapes(4, 8)
        for _ in pypto.loop(0, 4, 0):  # E:step
            o[:] = x * 1.0

    raises_at("E:step", f, z(4, 8), z(4, 8), match=["step must be positive"])


def test_bad_tile_dims():
    @pypto.jit
    def f(x: pypto.Tensor((4, 8), F32), o: pypto.Tensor((4, 8), F32)):
        pypto.set_vec_tile_shapes(0, 8)  # E:tile0
        o[:] = x * 1.0

    raises_at("E:tile0", f, z(4, 8), z(4, 8), match=["set_vec_tile_shapes", "positive"])


def test_op_outside_jit():
    with pytest.raises(pypto.UserError, match="only be used inside a @pypto.jit"):
        pypto.exp(z(4, 8))  # E:outside


def test_array_for_a_non_tensor_parameter():
    @pypto.jit
    def f(x: int, o: pypto.Tensor((4, 8), F32)):
        o[:] = o + x

    with pytest.raises(pypto.UserError, match=r"(?s)parameter 'x' is annotated int.*test_errors.py.*pypto.Tensor"):
        f(z(4, 8), z(4, 8))  # E:value
    with pytest.raises(pypto.UserError, match="parameter 'x': a set cannot be a compile-time argument"):
        f({1}, z(4, 8))


def test_result_annotation_mismatch():
    @pypto.jit
    def f(x: pypto.Tensor((4, 8), F32)) -> pypto.Tensor((4, 9), F32):
        pypto.set_vec_tile_shapes(4, 8)
        o = pypto.tensor((4, 8), F32)
        o[:] = x + 1.0
        return o

    with pytest.raises(pypto.UserError, match=r"result 0 has shape \(4, 8\), annotated \(4, 9\)"):
        f(z(4, 8))


def test_non_tensor_operand():
    @pypto.jit
    def f(x: pypto.Tensor((4, 8), F32), o: pypto.Tensor((4, 8), F32)):
        pypto.set_vec_tile_shapes(4, 8)
        o[:] = x + "a"  # E:str

    raises_at("E:str", f, z(4, 8), z(4, 8), match=["pypto.add", "str"])


def test_error_does_not_poison_later_compiles():
    """After a failed trace, the next function compiles and runs normally."""
    @pypto.jit
    def bad(x: pypto.Tensor((4, 8), F32), o: pypto.Tensor((4, 8), F32)):
        pypto.set_vec_tile_shapes(4, 8)
        o[:] = pypto.exp(x[0:2, :])

    with pytest.raises(pypto.UserError):
        bad(z(4, 8), z(4, 8))
    x = np.ones((4, 8), np.float32)
    o = z(4, 8)
    _ok(x, o)
    np.testing.assert_array_equal(o, 2.0)


def test_every_option_takes_none_as_its_default():
    defaults = {g: getattr(pypto, f"get_{g}_options")() for g in ("debug", "runtime", "pass", "host", "codegen",
                                                                     "verify")}
    try:
        pypto.set_debug_options(dump_dir="/tmp/pypto-none-test", compile_debug_mode=1)
        pypto.set_runtime_options(run_mode="interp")
        assert pypto.get_debug_options()["dump_dir"] == "/tmp/pypto-none-test"
        pypto.set_debug_options(dump_dir=None, compile_debug_mode=None)
        pypto.set_runtime_options(run_mode=None)
        assert pypto.get_debug_options() == defaults["debug"]
        assert pypto.get_runtime_options() == defaults["runtime"]
        for g, d in defaults.items():  # each key of each group back to its default with None
            getattr(pypto, f"set_{g}_options")(**{k: None for k in d})
            assert getattr(pypto, f"get_{g}_options")() == d, g
    finally:
        pypto.reset_options()


def test_error_names_the_callers_line_with_torch_dynamo_loaded():
    # Once torch._dynamo is imported a jit call goes through its disable wrapper; the error
    # must still name the caller's line, not the wrapper's.
    pytest.importorskip("torch._dynamo")
    with pytest.raises(pypto.UserError) as ei:
        _ok(z(4, 9), z(4, 8))
    assert "test_errors.py" in str(ei.value) and "eval_frame.py" not in str(ei.value)


@pytest.mark.parametrize("mode", ["cpu", "interp"])
def test_a_run_time_index_error_is_a_user_error_naming_the_users_op(mode):
    """An index outside its dim found while the kernel runs: a UserError in every run mode (the
    generated kernel's std::invalid_argument is mapped), naming the op the user called."""
    @pypto.jit
    def put(x: pypto.Tensor([21, 9], pypto.DT_FP32), i0: pypto.Tensor([4], pypto.DT_INT32),
            i1: pypto.Tensor([4], pypto.DT_INT32), v: pypto.Tensor([4], pypto.DT_FP32)):
        pypto.index_put_(x, (i0, i1), v)
        return x

    pypto.set_runtime_options(run_mode=mode)
    try:
        x = np.zeros((21, 9), np.float32)
        ok = np.array([0, 1, 2, 3], np.int32)
        put(x, ok, np.array([0, 1, 8, 3], np.int32), np.ones(4, np.float32))
        assert x[2, 8] == 1 and x.sum() == 4
        with pytest.raises(pypto.UserError, match=r"(?s)pypto.index_put_ \(the index tuples of its 2 index tensors "
                                                  r"address the leading dims \[21, 9\].*pypto.index_put_\(x, \(i0, i1\)"):
            put(x, ok, np.array([0, 1, 9, 3], np.int32), np.ones(4, np.float32))
    finally:
        pypto.reset_options()
