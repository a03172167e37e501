"""``asc.lib.host`` of PyAsc: host-side tiling of a multi-core matmul (``MultiCoreMatmulTiling``,
``get_ascendc_platform``), filling an ``asc.adv.TCubeTiling``."""

from __future__ import annotations

import enum
from typing import Any

from ..adv import CubeFormat, TCubeTiling
from .._memory import TPosition

__all__ = ["MultiCoreMatmulTiling", "get_ascendc_platform", "TPosition", "CubeFormat", "DataType"]


class DataType(enum.Enum):
    DT_FLOAT = "float32"
    DT_FLOAT16 = "float16"
    DT_BF16 = "bfloat16"
    DT_INT8 = "int8"
    DT_INT32 = "int32"


class _Platform:
    """The chip a tiling is made for: Ascend 910B1 (24 cube cores)."""

    core_num = 24


def get_ascendc_platform() -> _Platform:
    return _Platform()


class MultiCoreMatmulTiling:
    """Splits an [m, k] x [k, n] matmul over up to ``set_dim(n)`` cores: each core takes a
    ``single_core_m x single_core_n`` block of the output (multiples of 16), chosen to use as many
    cores as possible with the least imbalance."""

    def __init__(self, platform: Any = None) -> None:
        self.dim = getattr(platform, "core_num", 24)
        self.m = self.n = self.k = 0
        self.bias = False

    def set_a_type(self, *args: Any) -> None: ...

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

    def get_tiling(self, tiling: TCubeTiling) -> int:
        def up16(x: int) -> int:
            return max(16, -(-x // 16) * 16)

        best = None
        for mb in range(1, self.dim + 1):
            nb = max(1, self.dim // mb)
            scm, scn = up16(-(-self.m // mb)), up16(-(-self.n // nb))
            used = -(-self.m // scm) * -(-self.n // scn)
            if used > self.dim:
                continue
            key = (used, -abs(scm - scn))
            if best is None or key > best[0]:
                best = (key, scm, scn, used)
        assert best is not None
        _, scm, scn, used = best
        for name, v in (("used_core_num", used), ("m", self.m), ("n", self.n), ("k_a", self.k), ("k_b", self.k),
                        ("single_core_m", scm), ("single_core_n", scn), ("single_core_k", self.k),
                        ("base_m", min(scm, 128)), ("base_n", min(scn, 256)), ("base_k", min(self.k, 64)),
                        ("is_bias", self.bias)):
            tiling.set(name, v)
        return 0
