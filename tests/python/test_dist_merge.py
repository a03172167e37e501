"""The engine's merge of another host's changes (src/bindings/dist_bindings.cpp `_merge_span`,
`_changed_rows`), element by element, for every window dtype: an element the sender changed takes
its value where this host still holds what the sender's twin held, else gains the sender's
difference (both hosts added into it: the sum); an element the sender left alone is not touched.
Against numpy, with edge values."""

from __future__ import annotations

import numpy as np
import pytest

import pypto._core as _core

torch = pytest.importorskip("torch")


def _addr(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def _merge(heap: np.ndarray, twin: np.ndarray, fresh: np.ndarray, before: np.ndarray, name: str) -> None:
    _core._merge_span(_addr(heap), _addr(twin), fresh.view(np.uint8), before.view(np.uint8), name)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int8, np.int16, np.int32, np.int64,
                                   np.uint8, np.uint16, np.uint32, np.uint64])
def test_merge_every_dtype(dtype):
    rng = np.random.default_rng(abs(hash(np.dtype(dtype).name)) % 1000)
    n = 203  # a tail past the 64-byte rows
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        draw = lambda: rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)  # noqa: E731
    else:
        draw = lambda: rng.standard_normal(n).astype(dtype)  # noqa: E731
    before = draw()
    fresh = before.copy()
    sent = rng.random(n) < 0.6  # what the sender changed
    fresh[sent] = draw()[sent]
    heap = before.copy()
    local = rng.random(n) < 0.3  # what this host changed too (added into)
    heap[local] = draw()[local]
    twin = heap.copy()
    want = heap.copy()
    with np.errstate(over="ignore"):
        both = sent & (heap != before)
        want[sent & ~both] = fresh[sent & ~both]
        if np.issubdtype(dtype, np.integer):  # two's complement: wraps
            want[both] = (heap[both] + (fresh[both] - before[both])).astype(dtype)
        elif dtype == np.float16:  # in fp32, one rounding
            want[both] = (heap[both].astype(np.float32) + (fresh[both].astype(np.float32)
                                                           - before[both].astype(np.float32))).astype(dtype)
        else:
            want[both] = heap[both] + (fresh[both] - before[both])
    _merge(heap, twin, fresh, before, np.dtype(dtype).name)
    np.testing.assert_array_equal(heap, want)
    np.testing.assert_array_equal(twin, want)  # (the twin was the heap: the same rule)


def test_merge_bf16_in_fp32_one_rounding():
    before = torch.tensor([1.0, 2.5, -3.0, 0.0, 7.0], dtype=torch.bfloat16)
    fresh = torch.tensor([1.5, 2.5, -2.0, 4.0, 7.0], dtype=torch.bfloat16)
    heap = torch.tensor([1.0, 9.0, 10.0, 0.0, 3.0], dtype=torch.bfloat16)  # elements 1, 2, 4 changed here
    want = heap.clone()
    want[0] = fresh[0]  # unchanged here: the sender's value
    want[2] = (heap[2].float() + (fresh[2].float() - before[2].float())).to(torch.bfloat16)  # both: the sum
    want[3] = fresh[3]
    h = heap.view(torch.int16).numpy().copy()
    t = h.copy()
    _core._merge_span(_addr(h), _addr(t), fresh.view(torch.int16).numpy().view(np.uint8),
                      before.view(torch.int16).numpy().view(np.uint8), "bfloat16")
    assert torch.equal(torch.from_numpy(h).view(torch.bfloat16), want)


def test_merge_edge_values_bit_for_bit():
    """NaN, infinities and signed zeros travel as bits: an element whose bits the sender changed
    (-0.0 over +0.0, another NaN payload) takes them."""
    before = np.array([0.0, np.nan, 1.0, np.inf, 5.0], np.float32)
    fresh = np.array([-0.0, np.float32(np.nan) * -1, np.inf, -np.inf, 5.0], np.float32)
    heap = before.copy()
    twin = heap.copy()
    _merge(heap, twin, fresh, before, "float32")
    np.testing.assert_array_equal(heap.view(np.uint32), fresh.view(np.uint32))


def test_changed_rows_are_runs_of_64_byte_rows():
    heap = np.zeros(64 * 10 + 17, np.uint8)
    twin = heap.copy()
    heap[5] = 1            # row 0
    heap[64 * 3 + 63] = 2  # row 3
    heap[64 * 4] = 3       # row 4: a run of rows 3-4
    heap[-1] = 4           # the tail row (17 bytes)
    runs = _core._changed_rows(_addr(heap), _addr(twin), heap.size)
    assert runs == [0, 1, 3, 5, 10, 11]
    assert _core._changed_rows(_addr(twin), _addr(twin), twin.size) == []
