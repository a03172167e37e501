"""Point-wise links: launches that touch shared tensors at one and the same window per grid point
wait for each other chunk by chunk, within a run of launches and across loop iterations.
The results must be those of whole-launch ordering; the link counts show which path ran."""

import numpy as np
import pytest

import pypto
from _util import assert_close, randn, rng

F32 = pypto.DT_FP32
T = pypto.Tensor


@pytest.mark.parametrize("workers", [1, 2])
def test_state_updated_across_iterations_links_point_wise(workers):
    heads, rows, cols, steps = 8, 24, 40, 5

    @pypto.jit(runtime_options={"workers": workers})
    def f(x: T((heads, rows, cols), F32), w: T((heads, steps * rows, cols), F32), out: T((heads, rows, cols), F32)):
        state = pypto.tensor((heads, rows, cols), F32, "state")
        pypto.set_vec_tile_shapes(1, rows, cols)
        state[:] = x
        for j in pypto.loop(steps, name="LOOP_steps", idx_name="j"):
            w_j = w[:, j * rows:(j + 1) * rows, :]
            state[:] = state * 0.5 + pypto.exp(w_j * 0.1)
        out[:] = state + 1.0

    x = randn(rng(0), (heads, rows, cols))
    w = randn(rng(1), (heads, steps * rows, cols))
    out = np.zeros_like(x)
    f(x, w, out)
    ref = x.astype(np.float64)
    for j in range(steps):
        ref = ref * 0.5 + np.exp(w[:, j * rows:(j + 1) * rows, :].astype(np.float64) * 0.1)
    assert_close(out, ref + 1.0)
    # Every launch after the first waits point by point for the one before it: the loop's
    # iterations are chained across the loop boundary and from one iteration to the next.
    assert f.last_stats["pointwise_links"] >= steps + 1, f.last_stats


def test_window_that_moves_with_the_loop_index_links_only_the_same_window():
    # Iteration j writes rows block j from rows block j - 1: point p reads what point p wrote
    # one iteration earlier (the windows agree once j is bound), so links are right here.
    heads, blk, n = 6, 8, 5

    @pypto.jit
    def f(buf: T((heads, n * blk, 16), F32)):
        pypto.set_vec_tile_shapes(1, blk, 16)
        for j in pypto.loop(1, n, name="LOOP_b", idx_name="j"):
            buf[:, j * blk:(j + 1) * blk, :] = buf[:, (j - 1) * blk:j * blk, :] * 2.0 + 1.0

    buf = randn(rng(2), (heads, n * blk, 16))
    ref = buf.astype(np.float64).copy()
    for j in range(1, n):
        ref[:, j * blk:(j + 1) * blk] = ref[:, (j - 1) * blk:j * blk] * 2.0 + 1.0
    f(buf)
    assert_close(buf, ref)
    assert f.last_stats["pointwise_links"] >= n - 2, f.last_stats


@pytest.mark.parametrize("workers", [1, 2])
def test_points_that_read_other_points_wait_for_the_whole_launch(workers, tmp_path):
    # The first half of the heads is rebuilt from the second and back: point p of the first
    # launch (k0) reads both halves, which the assembles wrote at other windows per point, so
    # k0 waits for them as a whole (it may wait point-wise for the reuse of its workspace).
    half, rows, cols, steps = 4, 16, 24, 4

    @pypto.jit(runtime_options={"workers": workers},
               debug_options={"dump_dir": str(tmp_path), "swimlane": True})
    def f(s: T((2 * half, rows, cols), F32)):
        pypto.set_vec_tile_shapes(1, rows, cols)
        for _ in pypto.loop(steps, name="LOOP_swap"):
            s[0:half] = s[half:2 * half] + s[0:half]
            s[half:2 * half] = s[0:half] * 0.5

    s = randn(rng(3), (2 * half, rows, cols))
    ref = s.astype(np.float64).copy()
    for _ in range(steps):
        ref[0:half] = ref[half:] + ref[0:half]
        ref[half:] = ref[0:half] * 0.5
    f(s)
    assert_close(s, ref)
    st = f.last_stats
    kernel_of = {e[1]: e[2] for e in st["events"]}
    first = sorted(launch for launch, k in kernel_of.items() if k == 0)  # (events come per worker)
    assert len(first) == steps
    for launch in first[1:]:
        # k1 and k3 assemble into the halves of s; k0 reads both at other windows per point.
        writers = [d for d in st["deps"][launch] if kernel_of[d] in (1, 3)]
        assert writers, "k0 must wait for the previous iteration's writes of s"
        assert not set(writers) & set(st["pointwise_deps"][launch]), (launch, st["pointwise_deps"])
    assert sum(len(d) for d in st["pointwise_deps"]) == st["pointwise_links"]


def test_workspace_consumed_point_wise_gets_one_buffer(tmp_path):
    # The cube kernel's result crosses to the vector kernel through a workspace that the vector
    # kernel reads point-wise: the runtime keeps one buffer for it, as the dump says, and the
    # loop's results stay right.
    heads, rows, k, cols, steps = 4, 16, 8, 32, 6

    @pypto.jit(debug_options={"dump_dir": str(tmp_path), "dump_passes": True})
    def f(x: T((heads, steps * rows, k), F32), w: T((heads, k, cols), F32), acc: T((heads, rows, 1), F32)):
        for j in pypto.loop(steps, name="LOOP_s", idx_name="j"):
            pypto.set_cube_tile_shapes([rows, rows], [k, k], [cols, cols])
            s = pypto.matmul(x[:, j * rows:(j + 1) * rows, :], w)
            pypto.set_vec_tile_shapes(1, rows, cols)
            acc[:] = acc + pypto.sum(s * 0.5, dim=-1, keepdim=True)

    r = rng(9)
    x, w = randn(r, (heads, steps * rows, k)), randn(r, (heads, k, cols))
    acc = np.zeros((heads, rows, 1), np.float32)
    f(x, w, acc)
    x64 = x.astype(np.float64)
    ref = sum((x64[:, j * rows:(j + 1) * rows] @ w * 0.5).sum(-1, keepdims=True) for j in range(steps))
    assert_close(acc, ref, rtol=1e-5, atol=1e-4)
    assert f.last_stats["pointwise_links"] >= 2 * steps - 1, f.last_stats
    text = next(tmp_path.rglob("06_build_exec_graph.txt")).read_text()
    assert "one buffer (consumed point-wise)" in text, text


def test_many_launches_build_beside_the_workers_and_errors_stop_them():
    # With many launches the control program runs while the workers already run tasks; a
    # window found out of bounds late in the walk still raises the user's error (no hang), and
    # a correct call gives numpy's answer.
    rows, cols, steps = 8, 16, 12

    @pypto.jit(runtime_options={"workers": 2})
    def f(x: T((steps * rows, cols), F32), out: T((pypto.DYNAMIC, cols), F32)):
        pypto.set_vec_tile_shapes(rows, cols)
        for j in pypto.loop(steps, name="LOOP_rows", idx_name="j"):
            out[j * rows:(j + 1) * rows, :] = pypto.exp(x[j * rows:(j + 1) * rows, :] * 0.5)

    x = randn(rng(10), (steps * rows, cols))
    out = np.zeros((steps * rows, cols), np.float32)
    f(x, out)
    assert_close(out, np.exp(x.astype(np.float64) * 0.5), rtol=1e-6, atol=1e-7)
    assert f.last_stats["control_overlapped"], f.last_stats
    short = np.zeros(((steps - 1) * rows, cols), np.float32)  # the last iteration writes past its end
    with pytest.raises(pypto.UserError, match="out of bounds"):
        f(x, short)
    f(x, out)  # the runtime is usable again
    assert_close(out, np.exp(x.astype(np.float64) * 0.5), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_launch_linked_to_sources_chunked_differently(workers):
    # kimi's block-attention backward: a vector launch consumes a vector launch and a matmul
    # point-wise, and the two were chunked differently (bytes per grid point differ). Chunk i
    # of the consumer counted chunk i of each source: its counts never completed (a hang) and
    # a larger source chunk index wrote past the consumer's counters (heap corruption).
    B, L, D = 64, 32, 512

    @pypto.jit(runtime_options={"workers": workers, "timeout": 60})
    def f(v: T((B, L, D), F32), a: T((B, L, 1), F32), g: T((B, 1, D), F32), out: T((B, L, D), F32)):
        pypto.set_vec_tile_shapes(1, L, D)
        p1 = v * 2.0
        pypto.set_cube_tile_shapes([L, L], [16, 16], [D, D])
        p2 = pypto.matmul(a, g, F32)
        out[:] = p1 * p2 + v

    r = rng(7)
    v, a, g = randn(r, (B, L, D)), randn(r, (B, L, 1)), randn(r, (B, 1, D))
    for _ in range(3):
        out = np.zeros_like(v)
        f(v, a, g, out)
        assert_close(out, v * 2 * (a @ g) + v, rtol=1e-5, atol=1e-5)
