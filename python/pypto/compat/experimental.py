"""``pypto.experimental``: CANN PyPTO's custom ops for attention kernels, and its operation options.

PyPTO marks these as custom interfaces with many constraints and no stability promise. Here each
is a composite of the tensor-level ops (so it vectorizes and fuses like them, runs on both
backends, and follows docs/numerics.md), with PyPTO's signature and result dtypes:

* ``online_softmax(scores, scale)`` -> ``(exp_scores_bf16, column_max, column_sum)``;
* ``online_softmax_update(prev_max, prev_sum, prev_out, cur_max, cur_sum, cur_out)`` ->
  ``(max, sum, out)``;
* ``transposed_batchmatmul(a (M, B, K), b (B, K, N), out_dtype)`` -> ``(M, B, N)``;
* ``gather_in_ub(param, indices, block_table, block_size, axis=-2)``: the paged-attention rows
  ``param[block_table[0, i // block_size] * block_size + i % block_size]`` for ``i`` in
  ``indices[0]``. As on the NPU, ``param`` names where the cache starts in memory: when it is a
  ``pypto.view`` (of a cache whose rows are known only at run time, say), the rows are those of
  the viewed tensor from the view's first row on, not only the view's. They are read straight
  from memory (TGATHERND), never loaded whole;
* ``gather_in_l1(src, indices, block_table, block_size, size, is_b_matrix, is_trans)``: the same
  rows, their first ``size`` columns ([n, size]; ``is_trans`` is the L1 layout the NPU's matmul
  reads, not a transpose of the result: the matmul says ``a_trans`` / ``b_trans`` itself).

``set_operation_options(combine_axis=...)`` / ``get_operation_options()`` are accepted and
recorded in ``options.json`` of the dumps: ``combine_axis`` picks how the NPU's code generator
broadcasts a ``[r, 1]`` operand, which has no counterpart here (row broadcasts are always read
in place, see docs/ARCHITECTURE.md).
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

import pypto._core as _core
from ..core._tracing import _format_loc, automatic_tiles, user_loc
from ..core.config import operation_options
from ..core.tensor import Tensor
from ..core._dtypes import DT_BF16, DT_FP32, DT_INT32
from ..core.ops import amax, cast, exp, gather, index_select, matmul, maximum, reshape, sum as sum_, transpose, view

def set_operation_options(*, combine_axis: Optional[bool] = None) -> None:
    """PyPTO's operation options (accepted and recorded; no effect on a CPU)."""
    if combine_axis is not None:
        if not isinstance(combine_axis, bool):
            raise _core.UserError(f"pypto.experimental.set_operation_options: combine_axis={combine_axis!r} "
                                  "must be True or False" + _format_loc(user_loc()))
        operation_options()["combine_axis"] = combine_axis


def get_operation_options() -> Dict[str, Any]:
    return dict(operation_options())


def _err(op: str, msg: str) -> _core.UserError:
    return _core.UserError(f"pypto.experimental.{op}: {msg}" + _format_loc(user_loc()))


def _dt(x: Tensor) -> Any:
    return x.dtype


def _check_fp32_2d(op: str, **tensors: Tensor) -> None:
    for name, t in tensors.items():
        if t.dtype != DT_FP32 or t.ndim != 2:
            raise _err(op, f"{name} must be a 2-D DT_FP32 tensor, got {t.dtype} with shape {list(t.shape)}")


def online_softmax(scores: Tensor, scale: float) -> Tuple[Tensor, Tensor, Tensor]:
    """One block of an online softmax over dim 0 of ``scores`` [k_len, q_len] (fp32): the scaled
    scores' column max ``m`` [1, q_len], ``exp(scale * scores - m)`` as bf16, and its column sum
    [1, q_len] (fp32, from the unrounded exponentials)."""
    _check_fp32_2d("online_softmax", scores=scores)
    s = scores * float(scale)
    column_max = amax(s, 0, keepdim=True)
    e = exp(s - column_max)
    column_sum = sum_(e, 0, keepdim=True)
    return cast(e, DT_BF16), column_max, column_sum


def online_softmax_update(previous_max: Tensor, previous_sum: Tensor, previous_output: Tensor, current_max: Tensor,
                          current_sum: Tensor, current_output: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    """Merges two online-softmax states (fp32; max and sum [1, q_len], outputs [head_dim, q_len]):
    ``m = max(pm, cm)``, ``sum = ps * exp(pm - m) + cs * exp(cm - m)``, ``out = po * exp(pm - m) +
    co * exp(cm - m)`` (unnormalized)."""
    _check_fp32_2d("online_softmax_update", previous_max=previous_max, previous_sum=previous_sum,
                   previous_output=previous_output, current_max=current_max, current_sum=current_sum,
                   current_output=current_output)
    if list(previous_output.shape) != list(current_output.shape):
        raise _err("online_softmax_update", f"previous_output {list(previous_output.shape)} and current_output "
                   f"{list(current_output.shape)} must have the same shape")
    m = maximum(previous_max, current_max)
    a = exp(previous_max - m)
    b = exp(current_max - m)
    return m, previous_sum * a + current_sum * b, previous_output * a + current_output * b


def transposed_batchmatmul(tensor_a: Tensor, tensor_b: Tensor, out_dtype: Any) -> Tensor:
    """(M, B, K) x (B, K, N) -> (M, B, N): a batch matmul over dim 1 of ``tensor_a``."""
    if tensor_a.ndim != 3 or tensor_b.ndim != 3:
        raise _err("transposed_batchmatmul", f"takes (M, B, K) and (B, K, N), got {list(tensor_a.shape)} and "
                   f"{list(tensor_b.shape)}")
    with automatic_tiles("experimental.transposed_batchmatmul"):  # one op in PyPTO: its own tiles
        return transpose(matmul(transpose(tensor_a, 0, 1), tensor_b, out_dtype), 0, 1)


def _paged_rows(op: str, indices: Tensor, block_table: Tensor, block_size: int) -> Tensor:
    """The physical rows [k] of logical token positions indices[0, :] through the page table."""
    if not isinstance(block_size, int) or block_size <= 0:
        raise _err(op, f"block_size must be a positive int, got {block_size!r}")
    if indices.ndim != 2 or block_table.ndim != 2 or block_table.dtype != DT_INT32:
        raise _err(op, f"indices [1, k] and block_table [1, n] (DT_INT32) are 2-D, got {list(indices.shape)} and "
                   f"{list(block_table.shape)} {block_table.dtype}")
    idx = indices if indices.dtype == DT_INT32 else _cast_index(indices)
    page = gather(block_table, 1, idx // block_size)
    rows = page * block_size + idx % block_size
    return reshape(rows, [indices.shape[1]])


def _cast_index(t: Tensor) -> Tensor:
    return cast(t, DT_INT32)


def gather_in_ub(param: Tensor, indices: Tensor, block_table: Tensor, block_size: int, axis: int = -2) -> Tensor:
    """The rows of ``param`` [tokens, hidden] at the paged positions ``indices`` [1, k]: [k, hidden]."""
    if axis != -2:
        raise _err("gather_in_ub", f"axis must be -2, got {axis}")
    if param.ndim != 2:
        raise _err("gather_in_ub", f"param must be 2-D [tokens, hidden], got {list(param.shape)}")
    out = index_select(_cache_from(param), 0, _paged_rows("gather_in_ub", indices, block_table, block_size))
    padded = getattr(param, "_padded_shape", None)
    if padded is not None and len(padded) == 2:  # PyPTO's tile: the indices' padded length by param's
        rows = getattr(indices, "_padded_shape", None) or list(indices.shape)
        out._padded_shape = [rows[-1], padded[-1]]
    return out


def _cache_from(param: Tensor) -> Tensor:
    """The rows a paged gather addresses: those of ``param``'s tensor from ``param``'s first row on
    (its columns), as the NPU reads from ``param``'s address."""
    of = getattr(param, "_view_of", None)
    if of is None:
        return param
    base, offsets = of
    if base.ndim != 2:
        return param
    return view(base, [base.shape[0] - offsets[0], param.shape[1]], [offsets[0], offsets[1]])


def gather_in_l1(src: Tensor, indices: Tensor, block_table: Tensor, block_size: int, size: int,
                 is_b_matrix: bool, is_trans: bool) -> Tensor:
    """The first ``size`` columns of the paged rows of ``src`` (as gather_in_ub): [n, size].
    ``is_b_matrix`` and ``is_trans`` describe the NPU's L1 layout for the matmul that takes the
    result (which says ``a_trans`` / ``b_trans`` itself, as PyPTO's gather_in_l1 tests do); the
    result's shape is [n, size] either way, and neither changes anything here."""
    if src.ndim != 2:
        raise _err("gather_in_l1", f"src must be 2-D, got {list(src.shape)}")
    if not isinstance(size, int) or size <= 0 or (isinstance(src.shape[1], int) and size > src.shape[1]):
        raise _err("gather_in_l1", f"size={size!r} must be a positive int no larger than the columns of src "
                   f"{list(src.shape)}")
    return index_select(_cache_from(src)[:, 0:size], 0, _paged_rows("gather_in_l1", indices, block_table, block_size))


from .distributed import shmem_load, shmem_store  # noqa: E402 - PyPTO's experimental shmem tile ops

__all__ = ["set_operation_options", "get_operation_options", "online_softmax", "online_softmax_update",
           "transposed_batchmatmul", "gather_in_ub", "gather_in_l1", "shmem_load", "shmem_store"]
