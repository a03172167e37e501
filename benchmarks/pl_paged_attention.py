"""hw-native-sys pypto's paged-attention example (`examples/models/04_paged_attention.py`, a
`@pl.program` of four in-core kernels and an orchestration over KV blocks), run here unchanged,
beside the example's own torch reference (its `golden`: eager torch, one bmm per block) in the
same process, taking turns. The example comes from a checkout of hw-native-sys pypto (a work tree
or a bare git directory); nothing of it is copied into this repository.

    python benchmarks/pl_paged_attention.py /path/to/hw-native-sys-pypto
    python benchmarks/pl_paged_attention.py CHECKOUT --batch 8 --context 2048 --rounds 5

Prints the warm run's median [min, max] over the rounds, the torch reference's, their ratio, the
launches and tasks of one run, and the largest difference between the two outputs.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, List

EXAMPLE = "examples/models/04_paged_attention.py"


def load_example(checkout: Path) -> Any:
    src = checkout / EXAMPLE
    if not src.is_file():  # a bare git directory
        text = subprocess.run(["git", "-C", str(checkout), "show", f"HEAD:{EXAMPLE}"], capture_output=True,
                              check=True, text=True).stdout
        src = Path(tempfile.mkdtemp()) / "paged_attention.py"
        src.write_text(text)
    spec = importlib.util.spec_from_file_location("paged_attention_example", src)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def timed(fn: Any) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def stats(ts: List[float]) -> str:
    return f"{statistics.median(ts) * 1e3:.1f} ms [{min(ts) * 1e3:.1f}, {max(ts) * 1e3:.1f}]"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkout", type=Path)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--context", type=int, default=8192)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    os.chdir(tempfile.mkdtemp())  # run() writes build_output/ in the working directory, as upstream
    pa = load_example(args.checkout)
    from pypto.runtime import run

    head_dim, block_size, max_model_len = 128, 128, 32768
    blocks = max_model_len // block_size
    prog = pa.build_paged_attention_program(batch=args.batch, num_heads=args.heads, head_dim=head_dim,
                                            block_size=block_size, max_num_blocks_per_req=blocks)
    q, k, v, table, lens, out, config = pa.build_tensors(batch=args.batch, num_heads=args.heads, head_dim=head_dim,
                                                         block_size=block_size, max_num_blocks_per_req=blocks,
                                                         context_len=args.context, scale=1.0)
    first = timed(lambda: run(prog, q, k, v, table, lens, out, config))
    compiled = run(prog)
    ref = out.clone()
    tensors = {"query": q, "key_cache": k, "value_cache": v, "block_table": table, "context_lens": lens,
               "out": ref, "config": config}
    ours: List[float] = []
    theirs: List[float] = []
    for _ in range(args.rounds):  # turns: a round of each
        ours.append(timed(lambda: compiled(q, k, v, table, lens, out, config)))
        theirs.append(timed(lambda: pa.golden(tensors)))
    st = compiled.entry.last_stats
    print(f"paged attention (hw-native-sys {EXAMPLE}): batch {args.batch}, {args.heads} heads, head dim {head_dim}, "
          f"context {args.context}, bf16 in / fp32 out; {args.rounds} rounds")
    print(f"  pypto (warm)            {stats(ours)}   first call {first * 1e3:.0f} ms (compile + run)")
    print(f"  torch reference (eager) {stats(theirs)}")
    print(f"  ratio torch / pypto     {statistics.median(theirs) / statistics.median(ours):.2f}x")
    print(f"  one run: {st.get('launches')} launches, {st.get('tasks')} tasks; "
          f"max |pypto - torch| {(out - ref).abs().max().item():.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
