"""`y = pl.store(tile, offsets, y)` in a `pl.range` body (the language's SSA-style store) carries
nothing from one iteration to the next: the loop stays a runtime loop (its body compiled once),
while a real carry (`acc = pl.add(acc, t)`) is still unrolled. Results against numpy."""

import json

import numpy as np

import pypto.language as pl


@pl.jit
def _rows_plus_one(x: pl.Tensor[[256, 64], pl.FP32], y: pl.Out[pl.Tensor[[256, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(64):
            t = pl.load(x, [i * 4, 0], [4, 64])
            y = pl.store(pl.add(t, 1.0), [i * 4, 0], y)
    return y


@pl.jit
def _running_sum(x: pl.Tensor[[32, 64], pl.FP32], y: pl.Out[pl.Tensor[[4, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.load(x, [0, 0], [4, 64])
        for i in pl.range(1, 8):
            acc = pl.add(acc, pl.load(x, [i * 4, 0], [4, 64]))
        y = pl.store(acc, [0, 0], y)
    return y


def _loops(fn) -> int:
    exec_graph = json.loads(fn.last.program.to_json("exec_graph"))
    return json.dumps(exec_graph).count('"loop"')


def test_a_self_store_in_a_loop_is_a_runtime_loop():
    x = np.random.default_rng(0).standard_normal((256, 64)).astype(np.float32)
    y = np.zeros_like(x)
    _rows_plus_one(x, y)
    np.testing.assert_array_equal(y, x + 1)
    assert _loops(_rows_plus_one) >= 1  # one loop of launches, not 64 unrolled bodies


def test_a_real_carry_is_still_unrolled_and_right():
    x = np.random.default_rng(1).standard_normal((32, 64)).astype(np.float32)
    y = np.zeros((4, 64), np.float32)
    _running_sum(x, y)
    np.testing.assert_allclose(y, x.reshape(8, 4, 64).sum(0), rtol=1e-5, atol=1e-5)
