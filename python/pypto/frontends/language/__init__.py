"""``import pypto.language as pl``: explicit tile programming, in the hw-native-sys pypto language.

    @pl.jit
    def add(a: pl.Tensor[[512, 128], pl.FP32], b: pl.Tensor[[512, 128], pl.FP32],
            out: pl.Out[pl.Tensor[[512, 128], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(4):
                ta = pl.load(a, [i * 128, 0], [128, 128])
                tb = pl.load(b, [i * 128, 0], [128, 128])
                pl.store(pl.add(ta, tb), [i * 128, 0], out)
        return out

    add(a, b, out)            # numpy arrays or torch tensors; `out` is written in place

The entry (``@pl.jit``) is the control plane; operators run inside ``pl.at(level=...)`` or in
``@pl.jit.incore`` functions (AIC: cube, AIV: vector, CORE_GROUP: both). ``pl.load`` /
``pl.store`` move tiles between global tensors and on-chip memory spaces, ``pl.tpush_to_aiv`` /
``pl.tpop_from_aic`` hand tiles from a cube function to a vector one. Everything is recorded
into the same IR as ``@pypto.jit`` and runs on the same backends
(docs/tile-level.md).
"""

from ._ops import (
    abs, add, adds, concat, assemble, cast, col_expand,
    col_expand_add, col_expand_div, col_expand_expdif, col_expand_max, col_expand_min,
    col_expand_mul, col_expand_sub, col_max, col_min, col_sum, cos, create, create_tensor,
    create_tile, div, divs, exp, fillpad, fmod, full, load, log, matmul, matmul_acc, matmul_bias,
    maximum, maximums, minimum, minimums, move, mul, muls, neg, recip, reshape, relu, row_expand, row_expand_add,
    row_expand_div, row_expand_expdif, row_expand_max, row_expand_min, row_expand_mul,
    read, write, row_expand_sub, row_max, row_min, row_sum, rsqrt, sigmoid, sin, slice, sqrt, store, sub, subs, tanh)
from ._pipe import (aic_initialize_pipe, aiv_initialize_pipe, tfree_to_aic, tfree_to_aiv, tpop_from_aic,
                    tpop_from_aiv, tpush_to_aic, tpush_to_aiv)
from . import tile  # noqa: E402 - pl.tile, the tile-op namespace
from . import tensor  # noqa: E402 - pl.tensor, the tensor-op namespace
from ._scalars import max, min  # noqa: A004 - pl.min / pl.max of scalars
from ._program import (Optimization, RunConfig, at, cluster, const, cross_core_slot, func_attr, function,
                       get_block_idx, get_block_num, jit, parallel, pipeline, program_id, range, split, spmd,
                       static_assert, static_print, unroll, yield_)
from ._program_class import program
from ._parse import loads, loads_program, parse, parse_program
from ._tensor_ops import transpose
from . import array, optimizations, parser, prefetch, system  # noqa: E402 - upstream's module names
from . import arg_direction as adir  # noqa: E402
from ._names_extra import (
    AUTO, MX_A_ZZ, MX_B_NN, RUNTIME, TASK_ID, Array, AsyncEvent, AsyncSession, DynVar, ForKind, InlineFunction,
    IntLike, JITFunction, Mem, MemRef, MemRefType, PipeType, PrefetchAsyncContext, Ptr, PtrType, ScopeMode, TaskId,
    TileView, Tuple, aic_gather, aiv_shard, cond, create_l1, dim, dump_tag, gather_row, gatherb, get_subblock_idx,
    import_peer_buffer, inline, manual_scope, matmul_mx, matmul_mx_acc, matmul_mx_bias, mgather, mscatter, no_dep,
    paged_gather, random, reserve_buffer, scatter_update, scope, spmd_submit, split_aiv, submit, while_)
from ._ops_extra import (CompactMode, DN, FP4, FP8E4M3FN, FP8E5M2, FP8E8M0, HF4, HF8, INT4, ND, NZ,  # noqa: F401
                         TileLayout, UINT4, addc, addsc, and_, ands, cmp, cmps, col_argmax, col_argmin, col_prod,
                         expand_clone, expands, fmods, lrelu, not_, or_, ors, part_add, part_max, part_min, part_mul,
                         prelu, rem, rems, row_argmax, row_argmin, row_prod, sel, sels, shl, shls, shr, shrs, subc,
                         subsc, xor, xors)
from ._ops_indexed import (arange, batch_matmul, fillpad_expand, gather, gemv, gemv_acc, gemv_bias,  # noqa: F401
                           mrgsort, reinterpret_view, scatter, set_validshape, sort32, tri)
from ._types import (BF16, BOOL, FP16, FP32, INDEX, INT8, INT16, INT32, INT64, UINT8, UINT16, UINT32, UINT64,
                     AtomicType, Direction, FunctionType, dynamic, In, InOut, Level, MemorySpace, Out, PadValue, Role, Scalar,
                     SplitMode, Tensor, TensorLayout, TensorView, Tile)

__all__ = [
    "jit", "function", "program", "at", "range", "parallel", "yield_", "RunConfig", "split", "cross_core_slot", "Optimization",
    "get_block_idx", "get_block_num", "program_id", "spmd", "cluster", "pipeline", "unroll", "const",
    "static_print", "static_assert", "func_attr", "parse", "loads", "parse_program", "loads_program", "transpose",
    "INDEX", "read", "write", "FP32", "FP16", "BF16", "INT8", "INT16", "INT32", "INT64", "UINT8", "UINT16", "UINT32", "UINT64", "BOOL",
    "Tensor", "TensorView", "TensorLayout", "Tile", "Scalar", "In", "Out", "InOut", "Direction", "MemorySpace", "Level", "Role", "FunctionType",
    "PadValue", "SplitMode", "AtomicType", "dynamic",
    "load", "store", "assemble", "create_tile", "create", "create_tensor", "full", "fillpad",
    "add", "sub", "mul", "div", "adds", "subs", "muls", "divs", "maximum", "minimum", "maximums", "minimums", "fmod",
    "neg", "exp", "log", "sqrt", "rsqrt", "recip", "abs", "relu", "sin", "cos", "tanh", "sigmoid", "cast",
    "row_max", "row_min", "row_sum", "col_max", "col_min", "col_sum",
    "row_expand", "row_expand_add", "row_expand_sub", "row_expand_mul", "row_expand_div", "row_expand_max",
    "row_expand_min", "row_expand_expdif", "col_expand", "col_expand_add", "col_expand_sub", "col_expand_mul",
    "col_expand_div", "col_expand_max", "col_expand_min", "col_expand_expdif",
    "matmul", "matmul_acc", "matmul_bias", "move", "concat", "reshape", "slice",
    "tpush_to_aiv", "tpush_to_aic", "tpop_from_aic", "tpop_from_aiv", "tfree_to_aic", "tfree_to_aiv",
    "aic_initialize_pipe", "aiv_initialize_pipe", "tile", "tensor", "min", "max",
    "FP4", "FP8E4M3FN", "FP8E5M2", "FP8E8M0", "HF4", "HF8", "INT4", "UINT4", "ND", "DN", "NZ", "TileLayout", "CompactMode",
    "part_add", "part_mul", "part_max", "part_min", "row_prod", "col_prod", "row_argmax", "row_argmin", "col_argmax",
    "col_argmin", "expands", "expand_clone", "cmp", "cmps", "sel", "sels", "rem", "rems", "fmods", "and_", "ands", "or_",
    "ors", "xor", "xors", "not_", "shl", "shls", "shr", "shrs", "prelu", "lrelu", "addc", "subc", "addsc", "subsc",
    "arange", "gather", "scatter", "batch_matmul", "gemv", "gemv_acc", "gemv_bias", "set_validshape", "fillpad_expand",
    "reinterpret_view", "mrgsort", "sort32", "tri",
    "JITFunction", "inline", "InlineFunction", "parser", "Array", "Tuple", "DynVar", "IntLike", "RUNTIME",
    "while_", "cond", "split_aiv", "optimizations", "adir", "array", "prefetch", "system", "gatherb", "mgather",
    "mscatter", "matmul_mx", "matmul_mx_acc", "matmul_mx_bias", "AUTO", "aiv_shard", "aic_gather",
    "reserve_buffer", "import_peer_buffer", "gather_row", "scatter_update", "dim", "ScopeMode", "scope",
    "manual_scope", "submit", "spmd_submit", "no_dep", "dump_tag", "paged_gather", "random", "create_l1",
    "get_subblock_idx", "ForKind", "MemRef", "Mem", "MemRefType", "PipeType", "Ptr", "PrefetchAsyncContext",
    "AsyncEvent", "AsyncSession", "PtrType", "TileView", "MX_A_ZZ", "MX_B_NN", "TASK_ID", "TaskId",
]
