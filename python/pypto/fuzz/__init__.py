"""Differential fuzzer for PyPTO tensor-level programs: python -m pypto.fuzz.

Program i of seed S is always the same: a random @pypto.jit function, generated as Python source
text (so a report shows the real program), over the tensor-level ops: elementwise + - * /
maximum minimum with tensors, broadcast rows/cols and Python scalars on either side (inf, nan,
subnormal, huge, integer bounds); exp log abs neg sqrt rsqrt reciprocal relu sigmoid silu; the
math ops (tanh sin cos tan asin acos atan sinh cosh asinh acosh atanh exp2 expm1 log2 log10
log1p erf erfc cbrt floor ceil trunc round sign, pow atan2 hypot copysign floor_div remainder
fmod lrelu, as functions, methods and the operators ** // %); masks (eq ne lt le gt ge, isnan
isinf isfinite signbit, logical_and/or/xor/not, & | ~) feeding where or a multiply, clip; amax
amin sum mean prod var (keepdim or not), argmax argmin (and gather at the index), cumsum;
transpose / permute; topk (values, indices, gather at the indices); cast to every dtype and bool;
softmax rms_norm layer_norm; chains of 2-6 ops (fused by the backend), random vec tile shapes
with tails, and pypto.loop loops (nested, default / same / reused idx_names, siblings, slices and
assemble). Program dtypes: fp32 fp16 bf16 int32 int8, the unsigned uint8 uint16 uint32 uint64
(wrapping arithmetic, x // 0 = 0, saturating casts, exact comparisons; integer programs also get
& | ^ ~ << >> with tensors and scalars, shift amounts past the width included) and the FP8 storage
formats fp8e4m3 fp8e5m2 hf8 (cast into them from a float and back, moved, as inputs and outputs; an op
pypto refuses on them must raise a UserError naming the storage format). Results may also be int64,
uint64 or bool. Some programs have a 0-d input broadcast into the chain and 0-d outputs (a value
reduced with keepdim=False) ("+0d"), or parameters with a pypto.DYNAMIC dim 0, run once per size
with one compiled kernel ("+dyn": a second compile is a mismatch, a reduction pypto refuses over a
dynamic dim an expected error).

Each program runs on the native backend (run_mode="cpu") and the interpreter ("interp") and is
compared with an oracle: the same source executed against a shadow `pypto` made of numpy (fp32:
numpy's answer op by op, math functions in float64 rounded once; ints: numpy's wrapping
arithmetic) and torch (fp16/bf16: fp32 inside, one rounding per op; torch's own composites). The
shadow also carries, per element, a bound on how far a conforming implementation may be from the
oracle (first-order propagation of the allowed per-op error: 0 ulp for correctly rounded and
exact ops, 2 ulp for fp32 math functions and 1 ulp of fp16/bf16, n*u*sum|x| for sums), and marks
elements whose class (NaN / inf / finite, a mask bit, an index) is not determined by the
contract ("uncertain": e.g. an overflow decided by an approximate exp, a comparison of values
within their error bounds). NaN positions and infinities must match exactly; -0.0 == +0.0; cpu
and interp must agree bit for bit where the oracle is exact. The contract is docs/numerics.md.

    python -m pypto.fuzz --count 5000 --seed 1 [--dtypes fp32,fp16,bf16,int32,int8,uint8,...,fp8e5m2]
        [--modes cpu,interp] [--jobs 2] [--start 0] [--shrink 20] [--report out.md]
    python -m pypto.fuzz --seed 1 --index 17 --show    # program, inputs, results
    python -m pypto.fuzz --seed 1 --index 17 --emit    # a standalone repro script
    python -m pypto.fuzz --seed 1 --indices 155,989    # just these programs

--shrink N greedily minimizes up to N mismatches (one per signature: drops ops, retargets outputs,
drops edge inputs and edge scalars). Self-tests of the harness: PYPTO_FUZZ_INJECT=nan|ulp|inf
corrupts the cpu results (every such run must report mismatches), --pass-option
reciprocal_division=1 compiles with the documented fast path (mismatches for subnormal divisors),
PYPTO_FUZZ_CRASH_AT=<index> aborts the worker on that program (reported as a crash),
PYPTO_FUZZ_NO_TORCH=1 runs as if torch were not installed (fp16/bf16 programs are skipped, with a
message). Programs run in --jobs worker processes, so a crash or a hang (--timeout) is recorded,
not fatal. torch is imported only when a 16-bit program is checked, never by `import pypto`.
Framework bugs the fuzzer found and that are not fixed yet (common.KNOWN_BUGS, each with a test in
tests/python/test_fuzz_regressions.py) are generated only with PYPTO_FUZZ_KNOWN_BUGS=1.
An expected error may name the words its message must say: a UserError that does not say them is
a mismatch ("unclear-error"). See docs/fuzzing.md.

Exit status: 0 when there is no mismatch (and no crash / hang / fuzzer error), 1 otherwise.

Modules: common (dtypes, FP8 reference rounding, known bugs), program (IR, source, inputs),
generate (random programs: the steps), kinds and kinds_new (program shapes; the newer features),
bounds and oracle / oracle_ops / oracle_bits (the shadow pypto), run (running, comparing, workers,
batches), shrink, report, __main__ (the command line).
"""

from .common import ALL_DTYPES, have_torch
from .generate import generate, usable_dtypes
from .program import Program, make_inputs, render
from .report import summarize
from .run import evaluate, run_batch, run_one

__all__ = ["ALL_DTYPES", "Program", "evaluate", "generate", "have_torch", "make_inputs", "render", "run_batch",
           "run_one", "summarize", "usable_dtypes"]
