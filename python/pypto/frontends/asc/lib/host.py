"""``asc.lib.host`` of PyAsc: host-side tiling of a multi-core matmul (``MultiCoreMatmulTiling``,
``get_ascendc_platform``, ``MatrixTraverse``), filling an ``asc.adv.TCubeTiling``."""

from __future__ import annotations

import enum
from typing import Any, Optional, Tuple

import pypto._core as _core
from ....core._tracing import _format_loc, user_loc
from ..adv import CubeFormat, TCubeTiling
from .._memory import TPosition

__all__ = ["MultiCoreMatmulTiling", "get_ascendc_platform", "TPosition", "CubeFormat", "DataType", "MatrixTraverse"]


class DataType(enum.Enum):
    DT_FLOAT = "float32"
    DT_FLOAT16 = "float16"
    DT_BF16 = "bfloat16"
    DT_INT8 = "int8"
    DT_INT32 = "int32"


class MatrixTraverse(enum.IntEnum):
    """The order in which ``Matmul.iterate`` walks a core's base blocks: FIRSTM moves along M
    first (the m index changes fastest), FIRSTN along N; NOSET leaves it to the tiling (M first
    here)."""

    NOSET = 0
    FIRSTM = 1
    FIRSTN = 2


# Elements of one 32-byte fractal row (C0) per input type: base_k is a multiple of it.
_C0 = {DataType.DT_FLOAT: 8, DataType.DT_FLOAT16: 16, DataType.DT_BF16: 16, DataType.DT_INT8: 32,
       DataType.DT_INT32: 8}


class _Platform:
    """The chip a tiling is made for: Ascend 910B1 (24 cube cores, 128 KiB of L0C each)."""

    core_num = 24

    def __init__(self) -> None:
        self.l0c_bytes = int(_core.machine_info("a2a3")["l0c_bytes"])


def get_ascendc_platform() -> _Platform:
    return _Platform()


class MultiCoreMatmulTiling:
    """Splits an [m, k] x [k, n] matmul over up to ``set_dim(n)`` cores: each core takes a
    ``single_core_m x single_core_n`` block of the output (multiples of 16), chosen to use as many
    cores as possible with the least imbalance."""

    def __init__(self, platform: Any = None) -> None:
        self.dim = getattr(platform, "core_num", 24)
        self.l0c_bytes = int(getattr(platform, "l0c_bytes", 0) or _core.machine_info("a2a3")["l0c_bytes"])
        self.m = self.n = self.k = 0
        self.bias = False
        self.a_type: Optional[DataType] = None
        self.traverse = MatrixTraverse.NOSET
        self.fix_split: Tuple[int, int, int] = (-1, -1, -1)

    def set_a_type(self, *args: Any, **kwargs: Any) -> None:
        dtype = args[2] if len(args) > 2 else kwargs.get("data_type", kwargs.get("dtype"))
        self.a_type = dtype if isinstance(dtype, DataType) else None

    def set_b_type(self, *args: Any) -> None: ...

    def set_c_type(self, *args: Any) -> None: ...

    def set_bias_type(self, *args: Any) -> None: ...

    def set_buffer_space(self, *args: Any) -> None: ...

    def set_dim(self, dim: int) -> None:
        self.dim = int(dim)

    def set_org_shape(self, m: int, n: int, k: int, *rest: Any) -> None:
        self.m, self.n, self.k = int(m), int(n), int(k)

    def set_shape(self, m: int, n: int, k: int) -> None:
        self.m, self.n, self.k = int(m), int(n), int(k)

    def enable_bias(self, on: bool) -> None:
        self.bias = bool(on)

    def set_traverse(self, traverse: MatrixTraverse) -> int:
        """The order ``Matmul.iterate`` walks a core's base blocks in (``MatrixTraverse.FIRSTM``:
        the m index fastest; ``FIRSTN``: the n index fastest); the tiling's ``iterate_order``."""
        try:
            self.traverse = MatrixTraverse(traverse)
        except ValueError:
            raise _core.UserError(f"MultiCoreMatmulTiling.set_traverse: {traverse!r} is not an "
                                  "asc.lib.host.MatrixTraverse (FIRSTM, FIRSTN)" + _format_loc(user_loc())) from None
        return 0

    def set_fix_split(self, base_m_in: int = -1, base_n_in: int = -1, base_k_in: int = -1) -> int:
        """Fixes the base block (the L0 tile one ``Matmul.iterate`` step computes) to ``base_m x
        base_n`` (x ``base_k``); -1 leaves that size to the tiling. base_m and base_n are
        multiples of 16, base_k of the input type's C0 (16 for fp16), and a base_m x base_n block
        of fp32 / int32 accumulators fits L0C. Each core's ``single_core_m / n`` is then a
        multiple of them, so its region is whole base blocks except at the matrix edge."""
        sizes = (int(base_m_in), int(base_n_in), int(base_k_in))
        c0 = _C0.get(self.a_type, 16) if self.a_type is not None else 16
        for name, v, unit in zip(("base_m", "base_n", "base_k"), sizes, (16, 16, c0)):
            if v != -1 and (v <= 0 or v % unit):
                raise _core.UserError(f"MultiCoreMatmulTiling.set_fix_split: {name} = {v}; -1 (chosen by the tiling) "
                                      f"or a positive multiple of {unit}" + _format_loc(user_loc()))
        bm, bn, _ = sizes
        if bm > 0 and bn > 0 and bm * bn * 4 > self.l0c_bytes:
            raise _core.UserError(f"MultiCoreMatmulTiling.set_fix_split: a {bm} x {bn} block of 4-byte accumulators "
                                  f"is {bm * bn * 4} bytes, more than L0C's {self.l0c_bytes}" + _format_loc(user_loc()))
        self.fix_split = sizes
        return 0

    def get_tiling(self, tiling: TCubeTiling) -> int:
        """Fills `tiling`: each core's ``single_core_m x single_core_n`` block of the output, as
        many cores as possible (at most ``set_dim``) with the least imbalance. Without
        ``set_fix_split`` the blocks are multiples of 16 and the base block is at most 128 x 256
        x 64; with it, multiples of the fixed base sizes."""
        fm, fn, fk = self.fix_split
        for name, base, size in (("base_m", fm, self.m), ("base_n", fn, self.n)):
            if base > -(-size // 16) * 16:
                raise _core.UserError(f"MultiCoreMatmulTiling.get_tiling: set_fix_split's {name} = {base} is more than "
                                      f"{'M' if name == 'base_m' else 'N'} = {size} rounded up to 16 (the base block "
                                      "must fit the matrix)" + _format_loc(user_loc()))
        unit_m, unit_n = (fm if fm > 0 else 16), (fn if fn > 0 else 16)

        def up(x: int, unit: int) -> int:
            return max(unit, -(-x // unit) * unit)

        best = None
        for mb in range(1, self.dim + 1):
            nb = max(1, self.dim // mb)
            scm, scn = up(-(-self.m // mb), unit_m), up(-(-self.n // nb), unit_n)
            used = -(-self.m // scm) * -(-self.n // scn)
            if used > self.dim:
                continue
            key = (used, -abs(scm - scn))
            if best is None or key > best[0]:
                best = (key, scm, scn, used)
        assert best is not None
        _, scm, scn, used = best
        fit = self.l0c_bytes // 4  # accumulators of a base block in L0C
        base_m = fm if fm > 0 else min(scm, 128, (fit // fn) // 16 * 16 if fn > 0 else 128)
        base_n = fn if fn > 0 else min(scn, 256, (fit // base_m) // 16 * 16)
        if base_m <= 0 or base_n <= 0 or base_m * base_n > fit:
            raise _core.UserError(f"MultiCoreMatmulTiling.get_tiling: no base block fits L0C ({self.l0c_bytes} bytes) "
                                  f"with set_fix_split({fm}, {fn}, {fk})" + _format_loc(user_loc()))
        order = 1 if self.traverse is MatrixTraverse.FIRSTN else 0
        for name, v in (("used_core_num", used), ("m", self.m), ("n", self.n), ("k_a", self.k), ("k_b", self.k),
                        ("single_core_m", scm), ("single_core_n", scn), ("single_core_k", self.k),
                        ("base_m", base_m), ("base_n", base_n), ("base_k", fk if fk > 0 else min(self.k, 64)),
                        ("is_bias", self.bias), ("iterate_order", order)):
            tiling.set(name, v)
        return 0
