"""`from __future__ import annotations` (every annotation a string): a @pl.program built in a
function resolves names only its annotations use from the builder's scope."""

from __future__ import annotations

import numpy as np

import pypto.language as pl
from pypto.runtime import run


def _build(rows: int):
    big_m = rows  # used only in annotations: not in any method's closure

    @pl.program
    class Shifted:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[big_m, 16], pl.FP32],
              out: pl.Out[pl.Tensor[[big_m, 16], pl.FP32]]) -> pl.Tensor[[big_m, 16], pl.FP32]:
            return pl.store(pl.adds(pl.load(x, [0, 0], [big_m, 16]), 1.0), [0, 0], out)

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[big_m, 16], pl.FP32],
                 out: pl.Out[pl.Tensor[[big_m, 16], pl.FP32]]) -> pl.Tensor[[big_m, 16], pl.FP32]:
            return self.k(x, out)

    return Shifted


def test_names_used_only_in_annotations_come_from_the_builder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for rows in (32, 48):
        x = np.random.default_rng(rows).standard_normal((rows, 16)).astype(np.float32)
        out = np.zeros_like(x)
        run(_build(rows), x, out)
        np.testing.assert_array_equal(out, x + 1)
