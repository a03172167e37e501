"""Call plans (src/runtime/call_plan.cpp): the second call of a program with the same dims,
strides and workers replays the first call's instances, pointing their views into its own
memory, instead of walking the control program again. Every replayed call must give the answer
a fresh walk gives: new input and output arrays, created tensors zeroed again, workspaces, other
dims and strides (their own plans), two threads at once, a failing call, and programs whose
launches depend on data (never planned)."""

from __future__ import annotations

import os
import sys
import threading
from typing import Any, List

import numpy as np
import pytest

import pypto
from _util import rng

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
import tile_flash_attention as tfa  # noqa: E402

F32 = pypto.DT_FP32
T = pypto.Tensor
DYN = pypto.DYNAMIC


def _replayed(f: Any) -> bool:
    """The last call made no launch itself: its control program did not run."""
    return f.last_stats["control_ms"] == 0.0


def _softmax_rows(x: np.ndarray) -> np.ndarray:
    e = np.exp(x.astype(np.float64) - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("workers", [1, 2])
def test_replays_use_each_calls_own_arrays(workers: int) -> None:
    @pypto.jit(runtime_options={"workers": workers})
    def f(x: T((64, 48), F32), out: T((64, 48), F32)) -> None:
        pypto.set_vec_tile_shapes(8, 48)
        for i in pypto.loop(4, name="LOOP_i", idx_name="i"):  # a loop of launches, batched
            v = x[i * 16:(i + 1) * 16, :]
            e = pypto.exp(v - pypto.amax(v, dim=-1, keepdim=True))
            out[i * 16:(i + 1) * 16, :] = e / pypto.sum(e, dim=-1, keepdim=True)

    for call in range(4):
        x = rng(call).standard_normal((64, 48)).astype(np.float32)
        out = np.full((64, 48), np.nan, np.float32)
        f(x, out)
        np.testing.assert_allclose(out, _softmax_rows(x), rtol=2e-6, atol=1e-8)
        assert _replayed(f) == (call > 0), call


def test_created_tensors_start_zeroed_in_every_replay() -> None:
    # A created accumulator only partly written: the rows no launch writes must read 0 in every
    # call, although the pooled block it gets may hold the previous call's values.
    @pypto.jit
    def f(x: T((32, 16), F32)) -> T((32, 16), F32):
        pypto.set_vec_tile_shapes(8, 16)
        acc = pypto.tensor((32, 16), F32, "acc")
        acc[8:24, :] = x[8:24, :] * 2.0
        return acc + 1.0

    for call in range(3):
        x = rng(10 + call).standard_normal((32, 16)).astype(np.float32)
        want = np.ones((32, 16), np.float32)
        want[8:24] = x[8:24] * np.float32(2) + np.float32(1)
        np.testing.assert_array_equal(f(x), want)
        assert _replayed(f) == (call > 0)


def test_each_set_of_dims_and_strides_has_its_own_plan() -> None:
    @pypto.jit
    def f(x: T((DYN, 24), F32)) -> T((DYN, 24), F32):
        pypto.set_vec_tile_shapes(4, 24)
        out = pypto.tensor((x.shape[0], 24), F32)
        out[:] = pypto.exp(x) - x
        return out

    base = rng(20).standard_normal((40, 48)).astype(np.float32)
    cases = [base[:5, :24], base[:13, :24], base[:5, :24].copy(), base[:13, ::2], base[3:16, 24:]]
    for rounds in range(2):
        for x in cases:
            got = f(x)
            np.testing.assert_allclose(got, np.exp(x.astype(np.float64)) - x, rtol=2e-6)
            if rounds:
                assert _replayed(f)


def test_tile_attention_workspaces_replayed() -> None:
    bh, seq, dim, block = 2, 256, 32, 64
    f = tfa.make_attention(bh, seq, dim, False, block=block, block_q=block)
    for call in range(3):
        r = rng(30 + call)
        q, k, v = (r.standard_normal((bh * seq, dim)).astype(np.float32) for _ in range(3))
        out = np.zeros_like(q)
        f(q, k, v, out)
        q3, k3, v3 = (t.astype(np.float64).reshape(bh, seq, dim) for t in (q, k, v))
        s = q3 @ k3.transpose(0, 2, 1) / np.sqrt(dim)
        p = np.exp(s - s.max(-1, keepdims=True))
        np.testing.assert_allclose(out, ((p / p.sum(-1, keepdims=True)) @ v3).reshape(-1, dim), rtol=1e-4, atol=1e-5)
        assert _replayed(f) == (call > 0)


def test_two_threads_calling_at_once() -> None:
    # One call replays the plan, another walks the program meanwhile (the plan is one call's at a
    # time); each gets its own answer.
    @pypto.jit
    def f(x: T((256, 64), F32)) -> T((256, 64), F32):
        pypto.set_vec_tile_shapes(8, 64)
        return pypto.exp(x) * 0.5 + x

    xs = [rng(40 + i).standard_normal((256, 64)).astype(np.float32) for i in range(4)]
    alone = [f(x).copy() for x in xs]  # one call at a time: the bits every concurrent call must give
    np.testing.assert_allclose(alone[0], np.exp(xs[0].astype(np.float64)) * 0.5 + xs[0], rtol=2e-6, atol=1e-6)
    errors: List[BaseException] = []

    def worker(i: int) -> None:
        try:
            for _ in range(30):
                np.testing.assert_array_equal(f(xs[i]), alone[i])
        except BaseException as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_a_call_that_fails_does_not_spoil_the_next() -> None:
    # A gather index out of range fails inside a kernel of a replayed call; the next call (a new
    # plan) is right.
    @pypto.jit
    def g(x: T((16, 8), F32), idx: T((4,), pypto.DT_INT32)) -> T((4, 8), F32):
        pypto.set_vec_tile_shapes(4, 8)
        return pypto.index_select(x, 0, idx) * 2.0

    x = rng(50).standard_normal((16, 8)).astype(np.float32)
    good = np.array([3, 0, 15, 7], np.int32)
    for _ in range(2):
        np.testing.assert_array_equal(g(x, good), x[good] * np.float32(2))
    with pytest.raises(pypto.UserError):
        g(x, np.array([3, 0, 16, 7], np.int32))
    for _ in range(2):
        np.testing.assert_array_equal(g(x, good), x[good] * np.float32(2))


def test_launches_that_depend_on_data_are_never_planned() -> None:
    @pypto.jit
    def f(x: T((32, 8), F32), n: T((1,), pypto.DT_INT32), out: T((32, 8), F32)) -> None:
        pypto.set_vec_tile_shapes(4, 8)
        for i in pypto.loop(n[0], name="LOOP_i", idx_name="i"):
            out[i * 4:(i + 1) * 4, :] = x[i * 4:(i + 1) * 4, :] + 1.0

    x = rng(60).standard_normal((32, 8)).astype(np.float32)
    for n in (2, 5, 8, 3):
        out = np.zeros_like(x)
        f(x, np.array([n], np.int32), out)
        want = np.zeros_like(x)
        want[:n * 4] = x[:n * 4] + np.float32(1)
        np.testing.assert_array_equal(out, want)
        assert not _replayed(f)
