"""Faults at the runtime's edges, on both backends: Ctrl-C and timeouts cancel a running call
(and the runtime stays usable), read-only and overlapping arguments, bad runtime options."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pypto
from _util import run_in

F32 = pypto.DT_FP32
MODES = ["cpu", "interp"]


@pypto.jit
def forever(x: pypto.Tensor((8, 8), F32), y: pypto.Tensor((8, 8), F32)):
    pypto.set_vec_tile_shapes(8, 8)
    for _ in pypto.loop(2 ** 40):
        y[:] = x + 1.0


@pypto.jit
def triple(x: pypto.Tensor((8, 8), F32)):
    return x * 3.0


CTRL_C = textwrap.dedent("""
    import os, signal, sys, threading, time
    # A process started in the background by a shell without job control inherits SIGINT ignored,
    # and Python then installs no handler: restore the interactive default that Ctrl-C meets.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    import numpy as np, pypto
    pypto.set_runtime_options(run_mode=sys.argv[1])
    @pypto.jit
    def long(x: pypto.Tensor((64, 256), pypto.DT_FP32), y: pypto.Tensor((64, 256), pypto.DT_FP32),
             n: pypto.Tensor((pypto.DYNAMIC,), pypto.DT_INT8)):
        pypto.set_vec_tile_shapes(64, 256)
        for i in pypto.loop(n.shape[0]):
            y[:] = pypto.exp(x) + y
    @pypto.jit
    def triple(x: pypto.Tensor((8, 8), pypto.DT_FP32)):
        return x * 3.0
    x = np.ones((64, 256), np.float32)
    triple(np.ones((8, 8), np.float32))
    count = lambda k: np.broadcast_to(np.int8(0), (k,))  # read-only, no memory
    long(x, np.zeros_like(x), count(1))  # kernels compiled before the signal
    signalled = []
    def interrupt():
        signalled.append(time.time())
        os.kill(os.getpid(), signal.SIGINT)
    threading.Timer(0.5, interrupt).start()
    try:
        long(x, np.zeros_like(x), count(int(sys.argv[2])))
        print("finished")
    except KeyboardInterrupt:
        print("interrupted %.2f" % (time.time() - signalled[0]))
    print("after", triple(np.ones((8, 8), np.float32))[0, 0])
""")



@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("iterations", [2 ** 40, 4_000_000])  # in the control program; while tasks run
def test_ctrl_c_cancels_a_running_call(mode, iterations):
    p = subprocess.run([sys.executable, "-c", CTRL_C, mode, str(iterations)], capture_output=True, text=True,
                       timeout=120)
    lines = p.stdout.split()
    assert p.returncode == 0, p.stderr
    assert lines[0] == "interrupted", p.stdout
    assert float(lines[1]) < 1.0  # raised within 1 s of the signal
    assert lines[2:] == ["after", "3.0"]  # the runtime works for the next call


# One task that runs for seconds: a row sum whose reduction loop walks 2**34 (cpu) or 2**30
# (interp) elements of a zero-stride input (no memory), all at one grid point. The kernel asks
# the runtime between steps of its loop whether to stop (PyptoKernelCall::stop).
LONG_TASK = textwrap.dedent("""
    import os, signal, sys, threading, time
    # A process started in the background by a shell without job control inherits SIGINT ignored,
    # and Python then installs no handler: restore the interactive default that Ctrl-C meets.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    import numpy as np, pypto
    mode, how = sys.argv[1], sys.argv[2]
    pypto.set_runtime_options(run_mode=mode)
    @pypto.jit
    def total(x: pypto.Tensor((1, pypto.DYNAMIC), pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(1, 8192)
        return pypto.sum(x, dim=-1, keepdim=True)
    print("warm", total(np.ones((1, 100), np.float32))[0, 0])
    x = np.broadcast_to(np.float32(1), (1, 1 << (34 if mode == "cpu" else 30)))
    t0 = time.time()
    if how == "signal":
        threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
    else:
        pypto.set_runtime_options(timeout=0.5)
    try:
        total(x)
        print("finished")
    except KeyboardInterrupt:
        print("interrupted %.2f" % (time.time() - t0 - 0.5))
    except pypto.UserError as e:
        print("timeout %.2f" % (time.time() - t0 - 0.5) if "timeout" in str(e) else e)
    pypto.set_runtime_options(timeout=0)
    print("after", total(np.ones((1, 100), np.float32))[0, 0])
""")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("how", ["signal", "timeout"])
def test_cancel_ends_one_long_kernel_task(mode, how):
    p = subprocess.run([sys.executable, "-c", LONG_TASK, mode, how], capture_output=True, text=True, timeout=120)
    lines = p.stdout.split()
    assert p.returncode == 0, p.stderr
    assert lines[:2] == ["warm", "100.0"], p.stdout
    assert lines[2] == ("interrupted" if how == "signal" else "timeout"), p.stdout
    assert float(lines[3]) < 1.0  # within 1 s, though the task alone runs for seconds
    assert lines[4:] == ["after", "100.0"]  # the runtime works for the next call


@pytest.mark.parametrize("mode", MODES)
def test_timeout_option_cancels_and_the_runtime_stays_usable(mode):
    x = np.ones((8, 8), np.float32)
    pypto.set_runtime_options(timeout=0.3)
    try:
        with pytest.raises(pypto.UserError, match=r"(?s)longer than its timeout of 0.3 s.*hint"):
            run_in(mode, forever, x, np.zeros_like(x))
    finally:
        pypto.set_runtime_options(timeout=0)
    np.testing.assert_array_equal(run_in(mode, triple, x), x * 3.0)


@pytest.mark.parametrize("bad", [{"workers": -1}, {"workers": 1.5}, {"timeout": -2}, {"timeout": "1"},
                                 {"sched_mode": "random"}, {"run_mode": "npu_typo"}, {"workers": True}])
def test_bad_runtime_options_are_refused(bad):
    with pytest.raises(pypto.UserError, match="runtime option"):
        pypto.set_runtime_options(**bad)
    with pytest.raises(pypto.UserError, match="runtime option"):
        pypto.jit(runtime_options=bad)(triple.fn)


@pypto.jit
def affine(x: pypto.Tensor((8, 4), F32), out: pypto.Tensor((8, 4), F32)):
    pypto.set_vec_tile_shapes(8, 4)
    out[:] = x * 2 + 1


@pytest.mark.parametrize("mode", MODES)
def test_read_only_inputs_work(mode):
    x = np.broadcast_to(np.float32(3), (8, 4))  # read-only, zero strides
    out = np.zeros((8, 4), np.float32)
    run_in(mode, affine, x, out)
    np.testing.assert_array_equal(out, np.full((8, 4), 7, np.float32))
    w = np.frombuffer(np.arange(32, dtype=np.float32).tobytes(), np.float32).reshape(8, 4)  # read-only
    np.testing.assert_array_equal(run_in(mode, triple, np.ascontiguousarray(w[:8, :4].repeat(2, 1))), 
                                  w.repeat(2, 1) * 3)


def test_read_only_output_is_a_user_error_naming_the_parameter():
    out = np.zeros((8, 4), np.float32)
    out.flags.writeable = False
    with pytest.raises(pypto.UserError, match=r"(?s)parameter 'out' is written.*read-only.*test_faults.py"):
        affine(np.ones((8, 4), np.float32), out)


@pytest.mark.parametrize("mode", MODES)
def test_overlapping_input_and_output_read_the_input_first(mode):
    # numpy's ufuncs copy an input that overlaps the output; so does pypto.
    buf = np.arange(40, dtype=np.float32).reshape(10, 4)
    want = buf[0:8] * 2 + 1
    run_in(mode, affine, buf[0:8], buf[1:9])
    np.testing.assert_array_equal(buf[1:9], want)
    same = np.arange(32, dtype=np.float32).reshape(8, 4)  # the very same array: in place
    run_in(mode, affine, same, same)
    np.testing.assert_array_equal(same, np.arange(32, dtype=np.float32).reshape(8, 4) * 2 + 1)


def test_outputs_side_by_side_in_cache_rows_of_other_dtypes_are_separate():
    """Two outputs in column ranges of one uint8 cache's rows, one fp32 (PyPTO's indexer keeps
    fp8 keys and fp32 scales so): they share no byte, so both are written; outputs whose writes
    change the same bytes are refused."""
    @pypto.jit
    def f(x: pypto.Tensor((4, 16), F32), k: pypto.Tensor((4, 16), pypto.DT_UINT8), s: pypto.Tensor((4, 2), F32)):
        k[:] = pypto.cast(x, pypto.DT_UINT8)
        s[:] = pypto.amax(x, -1, keepdim=True) * pypto.full([4, 2], 1.0, F32)

    buf = np.zeros((4, 40), np.uint8)
    x = np.arange(64, dtype=np.float32).reshape(4, 16)
    k, s = buf[:, 8:24], buf[:, 24:32].view(np.float32)
    f(x, k, s)
    np.testing.assert_array_equal(k, x.astype(np.uint8))
    np.testing.assert_array_equal(s, np.repeat(x.max(-1, keepdims=True), 2, 1))
    assert not buf[:, :8].any() and not buf[:, 32:].any()
    with pytest.raises(pypto.UserError, match="the outputs 'k' and 's' share memory and the function changed the same "
                                              "elements through both"):
        buf = np.zeros((4, 40), np.uint8)
        f(x, buf[:, 8:24], buf[:, 20:28].view(np.float32))


@pytest.mark.parametrize("mode", MODES)
def test_outputs_that_are_two_views_of_one_cache_both_land(mode):
    """PyPTO's HiFloat8 / MXFP8 indexers pass one uint8 cache twice, as bytes and as fp32 (full
    rows of the same memory), and write keys and scales at different offsets of it: each output
    runs on its own copy and the elements it changed are merged back, so both writes land and
    the rest of the cache keeps its bytes."""
    @pypto.jit
    def f(x: pypto.Tensor((4, 16), F32), k: pypto.Tensor((4, 40), pypto.DT_UINT8), s: pypto.Tensor((4, 10), F32)):
        k[0:4, 0:16] = pypto.cast(x, pypto.DT_UINT8)
        s[0:4, 6:8] = pypto.amax(x, -1, keepdim=True) * pypto.full([4, 2], 1.0, F32)

    rng = np.random.default_rng(0)
    buf = rng.integers(0, 256, (4, 40), dtype=np.uint8)
    want = buf.copy()
    x = rng.integers(1, 200, (4, 16)).astype(np.float32)
    want[:, 0:16] = x.astype(np.uint8)
    want.view(np.float32)[:, 6:8] = x.max(-1, keepdims=True)
    run_in(mode, f, x, buf, buf.view(np.float32))
    np.testing.assert_array_equal(buf, want)


@pytest.mark.parametrize("shape", [(1 << 40, 1 << 30), (1 << 61, 8), ((1 << 59) | 1, 8), (1 << 62, 1 << 62)])
def test_a_shape_that_cannot_exist_is_a_user_error_at_its_line(shape):
    # Sizes used to wrap: a segfault, or a tiny buffer written far past its end.
    @pypto.jit
    def f(x: pypto.Tensor((2, 8), F32)):
        t = pypto.tensor(shape, F32)
        t[0:2, :] = x
        return t

    with pytest.raises(pypto.UserError, match=r"(?s)cannot exist: its size overflows.*test_faults.py"):
        f(np.ones((2, 8), np.float32))


@pytest.mark.parametrize("mode", MODES)
def test_out_of_memory_names_the_size_and_the_tensor(mode):
    @pypto.jit
    def f(x: pypto.Tensor((pypto.DYNAMIC, 8), F32)):
        t = pypto.tensor((x.shape[0], 1 << 12), F32)
        pypto.set_vec_tile_shapes(1, 8)
        t[0:1, 0:8] = x[0:1, :]
        return t

    huge = np.broadcast_to(np.float32(1), (1 << 28, 8))  # 4 TiB of output; no memory used here
    with pytest.raises(MemoryError, match=r"allocating 4398046511104 bytes for the returned %\w+ fp32\(268435456, 4096\)"):
        run_in(mode, f, huge)
    assert run_in(mode, f, np.ones((2, 8), np.float32)).shape == (2, 4096)  # still usable


def test_release_memory_frees_the_pool():
    big = np.ones((1024, 1024), np.float32)  # 4 MiB results are pooled between calls
    for _ in range(3):
        triple_big(big)
    assert pypto.release_memory() >= 0
    assert pypto.release_memory() == 0  # nothing left to release


@pypto.jit
def triple_big(x: pypto.Tensor((1024, 1024), F32)):
    pypto.set_vec_tile_shapes(8, 1024)
    return x * 3.0
