"""Workspaces written inside a loop nest take a set of buffers per iteration of the loop around
the innermost one (CallState::WorkspaceSet), so the chains of independent outer iterations do
not wait for each other through a shared workspace buffer. Checked on the dependency graph of
the tile-level flash attention (examples/tile_flash_attention.py): the result against numpy,
and which launches each chain's key-block steps wait for."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Dict, List

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
import tile_flash_attention as tfa  # noqa: E402

BH, SEQ, DIM, BLOCK = 2, 512, 32, 64  # 2 x 8 query blocks: 16 chains of 8 key-block steps


def _run(workers: int, dump: Path, causal: bool = False) -> Dict[str, Any]:
    fn = tfa.make_attention(BH, SEQ, DIM, causal, block=BLOCK, block_q=BLOCK)
    fn.group_options["runtime"]["workers"] = workers
    fn.group_options["debug"].update(dump_dir=str(dump), swimlane=True)
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((BH * SEQ, DIM)).astype(np.float32) for _ in range(3))
    out = np.zeros_like(q)
    args = (q, k, v, tfa.causal_mask(BLOCK), out) if causal else (q, k, v, out)
    fn(*args)
    ref = tfa_reference(q, k, v, causal)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)
    return fn.last_stats


def tfa_reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool) -> np.ndarray:
    q3, k3, v3 = (t.astype(np.float64).reshape(BH, SEQ, DIM) for t in (q, k, v))
    s = q3 @ k3.transpose(0, 2, 1) / np.sqrt(DIM)
    if causal:
        s = s + np.triu(np.full((SEQ, SEQ), -np.inf), k=1)
    p = np.exp(s - s.max(-1, keepdims=True))
    return ((p / p.sum(-1, keepdims=True)) @ v3).reshape(BH * SEQ, DIM)


def _chains(stats: Dict[str, Any]) -> List[List[int]]:
    """The launches of each (batch-head, query block) chain, in the order the walk made them:
    the chains are consecutive runs of the same length."""
    n = stats["launches"]
    chains = BH * (SEQ // BLOCK)
    assert n % chains == 0, n
    per = n // chains
    return [list(range(c * per, (c + 1) * per)) for c in range(chains)]


@pytest.mark.parametrize("workers", [2, 3])
def test_chains_of_a_parallel_loop_do_not_wait_for_their_neighbours(workers: int, tmp_path: Path) -> None:
    stats = _run(workers, tmp_path)
    chains = _chains(stats)
    sets = min(2 * workers, 16)
    chain_of = {i: c for c, ids in enumerate(chains) for i in ids}
    per = len(chains[0])
    for c, ids in enumerate(chains):
        # The key-block steps (the inner loop: the first step's 4 launches and the finish are
        # outside it) reuse buffers only of the chain `sets` before them.
        for i in ids[4:per - 1]:
            others = {chain_of[d] for d in stats["deps"][i]} - {c}
            assert all(c - o >= sets for o in others), (c, i, sorted(others))


def test_one_worker_keeps_one_set_and_the_same_answer(tmp_path: Path) -> None:
    # One worker runs the chains one after another: more buffers would only cost memory.
    stats = _run(1, tmp_path)
    chains = _chains(stats)
    chain_of = {i: c for c, ids in enumerate(chains) for i in ids}
    waits_on_previous = [any(chain_of[d] == c - 1 for i in ids for d in stats["deps"][i])
                         for c, ids in enumerate(chains) if c]
    assert all(waits_on_previous)


def test_causal_chains_give_the_reference_answer(tmp_path: Path) -> None:
    _run(2, tmp_path, causal=True)
