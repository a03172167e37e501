"""``asc.adv`` of PyAsc: the high-level Matmul API (``Matmul``, ``MatmulType``,
``register_matmul``, ``TCubeTiling``). A Matmul moves its operands through L1 and L0 and
synchronizes its own pipes, as Ascend C's does. ``iterate_all`` computes the core's
``[tail_m, tail_n]`` output in one step; ``with matmul.iterate() as count:`` runs its body once
per ``base_m x base_n`` block of it (in the tiling's traverse order), each taken out with
``get_tensor_c`` into global memory or a LocalTensor in UB. fp16 / bf16 inputs multiply exactly
and accumulate in fp32. In checked mode each step is recorded as the reads and writes it makes
(global reads on MTE2, writes to global memory on FIX, into UB on MTE2 as the vector core's copy
from the cube)."""

from __future__ import annotations

import enum
import threading
from typing import Any, Iterator, Optional, Tuple

import numpy as np

import pypto._core as _core
from ...core._tracing import SourceLoc, _format_loc, user_loc
from ._memory import DataType, GlobalTensor, Hardware, LocalTensor, TPosition, current_block
from ._checker import record, wait_pipe


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
    ``used_core_num``, ``is_bias``, ``iterate_order`` (the order ``Matmul.iterate`` walks the base
    blocks in)."""

    FIELDS = ("used_core_num", "m", "n", "k_a", "k_b", "single_core_m", "single_core_n", "single_core_k",
              "base_m", "base_n", "base_k", "is_bias", "iterate_order")
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
    iterate_order: TilingInt  # 0: M first (the m index of a core's base blocks changes fastest), 1: N first

    def __init__(self, **fields: Any) -> None:
        for f in self.FIELDS:
            self.set(f, fields.get(f, 0))

    def set(self, name: str, value: Any) -> None:
        setattr(self, name, TilingInt(int(value)))

    def __repr__(self) -> str:
        return "TCubeTiling(" + ", ".join(f"{f}={int(getattr(self, f))}" for f in self.FIELDS) + ")"


# What a Matmul's operands can be here: A, B and bias in global memory; C in global memory or UB
# (VECIN / VECOUT / VECCALC: a MIX kernel's vector cores take C block by block with get_tensor_c).
_UB_POSITIONS = (TPosition.VECIN, TPosition.VECOUT, TPosition.VECCALC)
# get_tensor_c's output types (PyAsc's).
_C_TYPES = ("float32", "float16", "int32", "int8")
# An atomic write into global memory is one read-modify-write even when the cores of a launch
# run on threads at once.
_ATOMIC = threading.Lock()


class MatmulType:
    """Where an operand is, its format, dtype and whether it is transposed
    (``MatmulType(position, format, dtype, is_trans=False)``)."""

    def __init__(self, position: TPosition, format: CubeFormat, dtype: DataType,  # noqa: A002 - PyAsc's name
                 is_trans: bool = False) -> None:
        try:
            self.pos, self.fmt = TPosition(position), CubeFormat(format)
        except ValueError:
            raise _core.UserError(f"asc.adv.MatmulType({position!r}, {format!r}, ...): a TPosition and a CubeFormat"
                                  + _format_loc(user_loc())) from None
        self.dtype, self.is_trans = dtype, bool(is_trans)
        if self.fmt is not CubeFormat.ND or self.pos not in (TPosition.GM, *_UB_POSITIONS):
            raise _core.UserError(f"asc.adv.MatmulType: {self.pos.name} in {self.fmt.name} format; operands in ND "
                                  "format in global memory (GM) are supported here, and C also in UB (VECIN, VECOUT, "
                                  "VECCALC)" + _format_loc(user_loc()))

    @property
    def position(self) -> TPosition:
        return self.pos

    @property
    def format(self) -> CubeFormat:
        return self.fmt


class Matmul:
    """``asc.adv.Matmul(a=MatmulType(...), b=..., c=..., bias=...)``: ``set_tensor_a`` /
    ``set_tensor_b`` / ``set_bias``, ``set_tail(m, n, k)``, then ``iterate_all(c_global)``, or
    ``with matmul.iterate() as count:`` with ``get_tensor_c(tensor)`` in its body; ``end()``."""

    def __init__(self, a: MatmulType, b: MatmulType, c: MatmulType, bias: Optional[MatmulType] = None) -> None:
        for name, t in (("a", a), ("b", b), ("c", c), ("bias", bias)):
            if t is None and name == "bias":
                continue
            if not isinstance(t, MatmulType):
                raise _core.UserError(f"asc.adv.Matmul: {name} must be an asc.adv.MatmulType, got {type(t).__name__}"
                                      + _format_loc(user_loc()))
            if name != "c" and t.pos is not TPosition.GM:
                raise _core.UserError(f"asc.adv.Matmul: {name} in {t.pos.name}; A, B and the bias are read from global "
                                      "memory (TPosition.GM) here" + _format_loc(user_loc()))
        self.types = (a, b, c, bias)
        self.tiling: Optional[TCubeTiling] = None
        self.a: Optional[GlobalTensor] = None
        self.b: Optional[GlobalTensor] = None
        self.bias: Optional[GlobalTensor] = None
        self.trans_a, self.trans_b = a.is_trans, b.is_trans
        self.tail: Optional[tuple] = None
        self.current: Optional[_BaseBlock] = None  # the base block the last iterate step computed

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
            with _ATOMIC:
                root[rows] += out.astype(root.dtype)
        else:
            root[rows] = out.astype(root.dtype)

    def iterate(self, en_partial_sum: bool = False, sync: bool = True, local_c_matrix: Any = None
                ) -> "MatmulIterator":
        """``with matmul.iterate() as count:``: the body runs once per ``base_m x base_n`` block
        of the core's output (``single_core_m x single_core_n``, or ``set_tail``'s), ``count`` =
        0, 1, ...; the tiling's ``iterate_order`` decides the order (0, FIRSTM: the m index
        fastest; 1, FIRSTN: the n index fastest). A block at the matrix edge holds its valid
        part. Each step computes its block (PyAsc's ``while (Iterate())``); ``get_tensor_c``
        takes it out."""
        loc = user_loc()
        if en_partial_sum or not sync or local_c_matrix is not None:
            raise _core.UserError("asc.adv.Matmul.iterate: the synchronous form without partial sums or a "
                                  "user-managed CO1 matrix (iterate()) is supported here" + _format_loc(loc))
        return MatmulIterator(self, loc)

    def _blocks(self, loc: SourceLoc) -> Iterator[int]:
        """The iterate loop: computes each base block in turn and yields its count."""
        t = self.tiling
        if t is None or self.a is None or self.b is None:
            raise _core.UserError("asc.adv.Matmul.iterate: register_matmul and set_tensor_a / set_tensor_b first"
                                  + _format_loc(loc))
        base_m, base_n = int(t.base_m), int(t.base_n)
        if base_m <= 0 or base_n <= 0:
            raise _core.UserError(f"asc.adv.Matmul.iterate: the tiling's base block is {base_m} x {base_n} (fill the "
                                  "tiling with MultiCoreMatmulTiling.get_tiling)" + _format_loc(loc))
        m, n, k = self._region()
        m_iter, n_iter = -(-m // base_m), -(-n // base_n)
        order = int(getattr(t, "iterate_order", 0))
        self.current = None
        for count in range(m_iter * n_iter):
            mi, ni = (count % m_iter, count // m_iter) if order == 0 else (count // n_iter, count % n_iter)
            self.current = self._compute(mi, ni, min(base_m, m - mi * base_m), min(base_n, n - ni * base_n), k)
            yield count
        self.current = None

    def _region(self) -> Tuple[int, int, int]:
        """The core's [m, n] output and k: set_tail's, else the tiling's single-core sizes."""
        t = self.tiling
        assert t is not None
        m, n, k = (self.tail if self.tail is not None else (int(t.single_core_m), int(t.single_core_n), int(t.k_a)))
        return (int(t.single_core_m) if m <= 0 else m, int(t.single_core_n) if n <= 0 else n,
                int(t.k_a) if k <= 0 else k)

    def _compute(self, mi: int, ni: int, vm: int, vn: int, k: int) -> "_BaseBlock":
        """One iterate step: the [vm, vn] block (mi, ni) of the core's output in fp32 (bias
        added), recorded as the global reads it makes."""
        t = self.tiling
        assert t is not None and self.a is not None and self.b is not None
        base_m, base_n = int(t.base_m), int(t.base_n)
        M, N, K = int(t.m), int(t.n), int(t.k_a)
        m0, n0 = mi * base_m, ni * base_n
        a, a_span = _operand(self.a, "a", vm, k, M if self.trans_a else K, self.trans_a, m0, 0)
        b, b_span = _operand(self.b, "b", k, vn, K if self.trans_b else N, self.trans_b, 0, n0)
        out = a.astype(np.float32) @ b.astype(np.float32)
        reads = [a_span, b_span]
        if self.bias is not None:
            root, first, _ = self.bias.window("Matmul.set_bias", n0 + vn)
            out = out + root[first + n0:first + n0 + vn].astype(np.float32)
            reads.append((("gm", id(root)), (first + n0) * root.itemsize, vn * root.itemsize))
        if not current_block("Matmul.iterate").cube:
            wait_pipe("Matmul.iterate", "MTE3")  # the request to the cube core goes out through MTE3
        record("Matmul.iterate", "MTE2", reads, [])
        return _BaseBlock(mi, ni, vm, vn, out)

    def get_tensor_c(self, tensor: Any = None, en_atomic: int = 0, en_sequential_write: bool = False,
                     sync: bool = True, optional_tensor: Optional[LocalTensor] = None) -> None:
        """In the body of ``with matmul.iterate()``: the current base block into `tensor`. A
        GlobalTensor gets it at its place in the core's output (row stride the tiling's ``n``),
        or with `en_sequential_write` contiguously as [rows, cols] from the tensor's start;
        `en_atomic` 1 / 2 / 3 adds / takes the max / the min with what is there. A LocalTensor
        in UB (C's MatmulType in VECIN / VECOUT / VECCALC) gets it with `en_sequential_write`
        as [rows, cols] (a whole block is [base_m, base_n]; a block at the matrix edge its valid
        rows x cols, contiguous), else at its place in a [single_core_m, n] layout.
        ``get_tensor_c(gm, optional_tensor=ub)`` writes both. Synchronous: the block is in UB
        for the vector unit when it returns (or in global memory for every pipe)."""
        op = "Matmul.get_tensor_c"
        loc = user_loc()
        if tensor is None or not sync:
            raise _core.UserError(f"asc.adv.{op}: the synchronous form get_tensor_c(tensor, ...) is supported here "
                                  "(not sync=False, nor the form that returns a GlobalTensor)" + _format_loc(loc))
        if en_atomic not in (0, 1, 2, 3):
            raise _core.UserError(f"asc.adv.{op}: en_atomic is 0 (none), 1 (add), 2 (max) or 3 (min), got "
                                  f"{en_atomic!r}" + _format_loc(loc))
        block = self.current
        if block is None:
            raise _core.UserError(f"asc.adv.{op}: no base block to take (call it in the body of `with matmul.iterate() "
                                  "as count:`)" + _format_loc(loc))
        c_type = self.types[2]
        for t in (tensor, optional_tensor):
            if t is None:
                continue
            if not isinstance(t, (GlobalTensor, LocalTensor)):
                raise _core.UserError(f"asc.adv.{op}: takes a GlobalTensor or a LocalTensor, got {type(t).__name__}"
                                      + _format_loc(loc))
            if t.dtype.name not in _C_TYPES or t.dtype != c_type.dtype:
                raise _core.UserError(f"asc.adv.{op}: a {t.dtype} tensor for C of {c_type.dtype} (C is one of "
                                      f"{', '.join(_C_TYPES)}, as its MatmulType says)" + _format_loc(loc))
        if optional_tensor is not None and not (isinstance(tensor, GlobalTensor)
                                                and isinstance(optional_tensor, LocalTensor)):
            raise _core.UserError(f"asc.adv.{op}(tensor, optional_tensor=...): tensor is the GlobalTensor, "
                                  "optional_tensor the LocalTensor" + _format_loc(loc))
        if isinstance(tensor, GlobalTensor):
            self._c_to_global(tensor, block, int(en_atomic), bool(en_sequential_write), loc)
            if optional_tensor is not None:
                self._c_to_local(optional_tensor, block, bool(en_sequential_write), loc)
            return
        if en_atomic:
            raise _core.UserError(f"asc.adv.{op}: en_atomic is for a GlobalTensor; a LocalTensor takes the block as "
                                  "it is" + _format_loc(loc))
        if c_type.pos not in _UB_POSITIONS:
            raise _core.UserError(f"asc.adv.{op}: into a LocalTensor needs C's MatmulType in UB (TPosition.VECIN, "
                                  f"VECOUT or VECCALC), not {c_type.pos.name}" + _format_loc(loc))
        self._c_to_local(tensor, block, bool(en_sequential_write), loc)

    def _offsets(self, block: "_BaseBlock", sequential: bool) -> np.ndarray:
        """Where each element of the block goes, from the target's start: contiguous [vm, vn], or
        its place in the core's output (row stride the tiling's n)."""
        t = self.tiling
        assert t is not None
        r, c = np.arange(block.vm)[:, None], np.arange(block.vn)[None, :]
        if sequential:
            return r * block.vn + c
        return (block.mi * int(t.base_m) + r) * int(t.n) + block.ni * int(t.base_n) + c

    def _c_to_global(self, tensor: GlobalTensor, block: "_BaseBlock", en_atomic: int, sequential: bool,
                     loc: SourceLoc) -> None:
        op = "Matmul.get_tensor_c"
        offsets = self._offsets(block, sequential)
        root, first, _ = tensor.window(op, int(offsets.max()) + 1)
        if not root.flags.writeable:
            raise _core.UserError(f"asc.adv.{op}: {tensor.addr.name if tensor.addr else 'C'} is a read-only array"
                                  + _format_loc(loc))
        idx = first + offsets
        values = block.out.astype(root.dtype)
        client = not current_block(op).cube
        if client:
            wait_pipe(op, "MTE3")  # the request to the cube core goes out through MTE3
        lo = int(idx.min()) * root.itemsize
        record(op, "FIX", [], [(("gm", id(root)), lo, int(idx.max()) * root.itemsize + root.itemsize - lo)])
        if client:
            wait_pipe(op, "FIX")  # the vector core waits for the cube core's answer: C is there for every pipe
        if not en_atomic:
            root[idx] = values
            return
        with _ATOMIC:
            if en_atomic == 1:
                root[idx] += values
            elif en_atomic == 2:
                root[idx] = np.maximum(root[idx], values)
            else:
                root[idx] = np.minimum(root[idx], values)

    def _c_to_local(self, tensor: LocalTensor, block: "_BaseBlock", sequential: bool, loc: SourceLoc) -> None:
        op = "Matmul.get_tensor_c"
        if tensor.hw is not Hardware.UB:
            raise _core.UserError(f"asc.adv.{op}: the LocalTensor is in {tensor.hw.name} ({tensor.pos.name}); C is "
                                  "taken into UB (VECIN / VECOUT / VECCALC)" + _format_loc(loc))
        if tensor.addr % 32:
            raise _core.UserError(f"asc.adv.{op}: the {tensor.pos.name} tensor starts at byte {tensor.addr}, not on a "
                                  "32-byte block" + _format_loc(loc))
        if current_block(op).cube:
            raise _core.UserError(f"asc.adv.{op}: into a LocalTensor on a cube core (it has no UB: in a MIX kernel the "
                                  "vector cores take C into UB)" + _format_loc(loc))
        offsets = self._offsets(block, sequential)
        extent = int(offsets.max()) + 1
        target = tensor.array(op, extent)
        wait_pipe(op, "MTE3")  # the request to the cube core goes out through MTE3
        record(op, "MTE2", [], [tensor.span(extent)])  # the copy of the block into UB
        wait_pipe(op, "MTE2", ["V"])  # and the API's MTE2 -> V wait: the vector unit may use it at once
        target[offsets] = block.out.astype(target.dtype)

    def end(self) -> None:
        """Ends the matmul (its last base block can no longer be taken)."""
        self.current = None


class _BaseBlock:
    """The base block an iterate step computed: block (mi, ni) of the core's output, its valid
    [vm, vn] part in fp32."""

    def __init__(self, mi: int, ni: int, vm: int, vn: int, out: np.ndarray) -> None:
        self.mi, self.ni, self.vm, self.vn, self.out = mi, ni, vm, vn, out


class MatmulIterator:
    """What ``matmul.iterate()`` returns: ``with matmul.iterate() as count:`` is PyAsc's while
    loop over the base blocks. pypto.asc runs a kernel's Python as it is, so ``@asc.jit``
    rewrites such a ``with`` into a ``for count in matmul.iterate():`` loop over this iterator
    (the same lines); entering it as a plain context manager (a function not compiled through
    @asc.jit, or whose source cannot be read) is an error."""

    _pypto_asc_loop = True  # the rewritten `with` runs its body as a loop over this

    def __init__(self, matmul: Matmul, loc: SourceLoc) -> None:
        self.matmul, self.loc = matmul, loc

    def __iter__(self) -> Iterator[int]:
        return self.matmul._blocks(self.loc)

    def __enter__(self) -> int:
        raise _core.UserError("asc.adv.Matmul.iterate: `with matmul.iterate() as count:` runs its body once per base "
                              "block; pypto.asc does that by rewriting the `with` of an @asc.jit function into a loop, "
                              "and this one was not rewritten (the function is not compiled through @asc.jit, or its "
                              "source could not be read); write `for count in matmul.iterate():` there"
                              + _format_loc(self.loc))

    def __exit__(self, *exc: Any) -> bool:
        return False


def _gm(t: GlobalTensor) -> Any:
    addr = t._need("Matmul")
    return ("gm", id(addr.root)), addr.offset * addr.root.itemsize, 1


def _matrix(t: GlobalTensor, name: str, rows: int, cols: int, stride: int, trans: bool) -> np.ndarray:
    """The [rows, cols] block of operand `t`: element (r, c) at r * stride + c of a row-major
    matrix, or at c * stride + r when it is stored transposed."""
    return _operand(t, name, rows, cols, stride, trans, 0, 0)[0]


def _operand(t: GlobalTensor, name: str, rows: int, cols: int, stride: int, trans: bool, row0: int, col0: int
             ) -> Tuple[np.ndarray, Tuple[Any, int, int]]:
    """The [rows, cols] block at (row0, col0) of operand `t` (element (r, c) at r * stride + c,
    or c * stride + r when stored transposed), and the span of global memory it reads."""
    r, c = np.arange(row0, row0 + rows)[:, None], np.arange(col0, col0 + cols)[None, :]
    offsets = c * stride + r if trans else r * stride + c
    root, first, _ = t.window(f"Matmul.set_tensor_{name}", int(offsets.max()) + 1)
    lo = int(offsets.min())
    span = (("gm", id(root)), (first + lo) * root.itemsize, (int(offsets.max()) - lo + 1) * root.itemsize)
    return root[first + offsets], span


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
