"""``asc.adv`` of PyAsc: the high-level Matmul API of a cube kernel (``Matmul``, ``MatmulType``,
``register_matmul``, ``TCubeTiling``). A Matmul moves its operands through L1 and L0 and
synchronizes its own pipes, as Ascend C's does; here ``iterate_all`` computes the block's
``[tail_m, tail_n]`` output in one step (fp16 / bf16 inputs multiply exactly, accumulate in fp32),
recorded in checked mode as the global reads (MTE2) and writes (FIX) it makes."""

from __future__ import annotations

import enum
from typing import Any, Optional

import numpy as np

from .. import _core
from .._tracing import _format_loc, user_loc
from ._memory import DataType, GlobalTensor, TPosition, current_block
from ._sync import record


class CubeFormat(enum.IntEnum):
    ND = 0
    NZ = 1


class TilingInt(int):
    """An int of a tiling with PyAsc's ``ceildiv``."""

    def ceildiv(self, d: int) -> int:
        return -(-int(self) // int(d))


class TCubeTiling:
    """The tiling of a matmul (``MultiCoreMatmulTiling.get_tiling`` fills it): the org shape
    ``m, n, k_a, k_b``, each block's ``single_core_m / n / k``, ``base_m / n / k`` (its L0 tile),
    ``used_core_num``, ``is_bias``."""

    FIELDS = ("used_core_num", "m", "n", "k_a", "k_b", "single_core_m", "single_core_n", "single_core_k",
              "base_m", "base_n", "base_k", "is_bias")
    used_core_num: TilingInt
    m: TilingInt
    n: TilingInt
    k_a: TilingInt
    k_b: TilingInt
    single_core_m: TilingInt
    single_core_n: TilingInt
    single_core_k: TilingInt
    base_m: TilingInt
    base_n: TilingInt
    base_k: TilingInt
    is_bias: TilingInt

    def __init__(self, **fields: Any) -> None:
        for f in self.FIELDS:
            self.set(f, fields.get(f, 0))

    def set(self, name: str, value: Any) -> None:
        setattr(self, name, TilingInt(int(value)))

    def __repr__(self) -> str:
        return "TCubeTiling(" + ", ".join(f"{f}={int(getattr(self, f))}" for f in self.FIELDS) + ")"


class MatmulType:
    """Where an operand is, its format, dtype and whether it is transposed."""

    def __init__(self, pos: TPosition, fmt: CubeFormat, dtype: DataType, is_trans: bool = False) -> None:
        self.pos, self.fmt, self.dtype, self.is_trans = TPosition(pos), CubeFormat(fmt), dtype, bool(is_trans)
        if self.pos is not TPosition.GM or self.fmt is not CubeFormat.ND:
            raise _core.UserError("asc.adv.MatmulType: operands in global memory in ND format are supported here"
                                  + _format_loc(user_loc()))


class Matmul:
    """``asc.adv.Matmul(a=MatmulType(...), b=..., c=..., bias=...)``: ``set_tensor_a`` /
    ``set_tensor_b`` / ``set_bias``, ``set_tail(m, n, k)``, ``iterate_all(c_global)``, ``end()``."""

    def __init__(self, a: MatmulType, b: MatmulType, c: MatmulType, bias: Optional[MatmulType] = None) -> None:
        self.types = (a, b, c, bias)
        self.tiling: Optional[TCubeTiling] = None
        self.a: Optional[GlobalTensor] = None
        self.b: Optional[GlobalTensor] = None
        self.bias: Optional[GlobalTensor] = None
        self.trans_a, self.trans_b = a.is_trans, b.is_trans
        self.tail: Optional[tuple] = None

    def set_tensor_a(self, a: GlobalTensor, is_trans: bool = False) -> None:
        self.a, self.trans_a = a, bool(is_trans)

    def set_tensor_b(self, b: GlobalTensor, is_trans: bool = False) -> None:
        self.b, self.trans_b = b, bool(is_trans)

    def set_bias(self, bias: GlobalTensor) -> None:
        self.bias = bias

    def disable_bias(self) -> None:
        self.bias = None

    def set_tail(self, tail_m: int = -1, tail_n: int = -1, tail_k: int = -1) -> None:
        self.tail = (int(tail_m), int(tail_n), int(tail_k))

    def set_org_shape(self, m: int, n: int, k: int) -> None:
        if self.tiling is None:
            self.tiling = TCubeTiling()
        self.tiling.set("m", m)
        self.tiling.set("n", n)
        self.tiling.set("k_a", k)
        self.tiling.set("k_b", k)

    def iterate_all(self, c: GlobalTensor, en_atomic: int = 0) -> None:
        t = self.tiling
        if t is None or self.a is None or self.b is None:
            raise _core.UserError("asc.adv.Matmul.iterate_all: register_matmul and set_tensor_a / set_tensor_b first"
                                  + _format_loc(user_loc()))
        m, n, k = (self.tail if self.tail is not None else (int(t.single_core_m), int(t.single_core_n), int(t.k_a)))
        m = int(t.single_core_m) if m <= 0 else m
        n = int(t.single_core_n) if n <= 0 else n
        k = int(t.k_a) if k <= 0 else k
        M, N, K = int(t.m), int(t.n), int(t.k_a)
        a = _matrix(self.a, "a", m, k, M if self.trans_a else K, self.trans_a)
        b = _matrix(self.b, "b", k, n, K if self.trans_b else N, self.trans_b)
        out = a.astype(np.float32) @ b.astype(np.float32)
        if self.bias is not None:
            root, first, _ = self.bias.window("Matmul.set_bias", n)
            out = out + root[first:first + n].astype(np.float32)
        root, first, _ = c.window("Matmul.iterate_all", (m - 1) * N + n)
        rows = np.arange(m)[:, None] * N + np.arange(n)[None, :] + first
        key = ("gm", id(root))
        record("Matmul.iterate_all", "MTE2", [_gm(self.a), _gm(self.b)], [])
        record("Matmul.iterate_all", "FIX", [], [(key, int(rows.min()) * root.itemsize,
                                                  (int(rows.max()) - int(rows.min()) + 1) * root.itemsize)])
        if en_atomic:
            root[rows] += out.astype(root.dtype)
        else:
            root[rows] = out.astype(root.dtype)

    def end(self) -> None:
        """Releases the matmul's resources (nothing to release here)."""


def _gm(t: GlobalTensor) -> Any:
    addr = t._need("Matmul")
    return ("gm", id(addr.root)), addr.offset * addr.root.itemsize, 1


def _matrix(t: GlobalTensor, name: str, rows: int, cols: int, stride: int, trans: bool) -> np.ndarray:
    """The [rows, cols] block of operand `t`: element (r, c) at r * stride + c of a row-major
    matrix, or at c * stride + r when it is stored transposed."""
    r, c = np.arange(rows)[:, None], np.arange(cols)[None, :]
    offsets = c * stride + r if trans else r * stride + c
    root, first, _ = t.window(f"Matmul.set_tensor_{name}", int(offsets.max()) + 1)
    return root[first + offsets]


def register_matmul(pipe: Any, workspace: Any, matmul: Matmul, tiling: Optional[TCubeTiling] = None) -> None:
    """Binds the matmul to the block and its tiling. In a MIX kernel the group's cube core turns
    into the matmul server here: it serves its vector cores' requests and runs none of the code
    after this call, as Ascend C's REGIST_MATMUL_OBJ does."""
    block = current_block("register_matmul")
    if tiling is not None:
        matmul.tiling = tiling
    if block.mix and block.cube:
        raise MatmulServer()


class MatmulServer(BaseException):
    """Ends a MIX kernel's cube block at register_matmul (caught by the launch; a BaseException
    so that a kernel's own ``except Exception`` does not swallow it)."""
