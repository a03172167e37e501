"""The types and enums of ``pypto.language``: dtypes, ``Tensor`` / ``Tile`` / ``Scalar``
annotations, parameter directions, memory spaces, levels, roles."""

from __future__ import annotations

import enum
from typing import Any, Dict, Optional

import pypto._core as _core
from ...core import _dtypes
from ...core._tracing import function_scope
from ...core.tensor import DYNAMIC, Tensor

# The hw-native-sys language's dtype names, as pypto dtypes.
FP32 = _dtypes.DT_FP32
FP16 = _dtypes.DT_FP16
BF16 = _dtypes.DT_BF16
INT8 = _dtypes.DT_INT8
INT16 = _dtypes.DT_INT16
INT32 = _dtypes.DT_INT32
INT64 = _dtypes.DT_INT64
UINT8 = _dtypes.DT_UINT8
UINT16 = _dtypes.DT_UINT16
UINT32 = _dtypes.DT_UINT32
UINT64 = _dtypes.DT_UINT64
BOOL = _dtypes.DT_BOOL
# The language's index type (loop indices, lengths, offsets): a 64-bit integer here.
INDEX = _dtypes.DT_INT64

__all__ = ["INDEX", "FP32", "FP16", "BF16", "INT8", "INT16", "INT32", "INT64", "UINT8", "UINT16", "UINT32", "UINT64", "BOOL",
           "Tensor", "Tile", "Scalar", "In", "Out", "InOut", "MemorySpace", "Level", "Role", "FunctionType",
           "PadValue", "SplitMode", "AtomicType", "Direction", "dynamic", "TensorView", "TensorLayout"]


class Direction(enum.Enum):
    """A tensor parameter's direction (hw-native-sys ``ParamDirection``)."""

    In = "In"
    Out = "Out"
    InOut = "InOut"


class _Directed:
    """``pl.Out[pl.Tensor[...]]``: an annotation with its direction."""

    def __init__(self, direction: Direction, inner: Any) -> None:
        self.direction = direction
        self.inner = inner

    def __repr__(self) -> str:
        return f"pl.{self.direction.value}[{self.inner!r}]"


class In:
    """``pl.In[pl.Tensor[...]]``: read only (the default direction)."""

    def __class_getitem__(cls, inner: Any) -> _Directed:
        return _Directed(Direction.In, inner)


class Out:
    """``pl.Out[pl.Tensor[...]]``: the function writes this parameter (``out[:] = ...``,
    ``pl.store``, ``pl.assemble``) and does not read it first."""

    def __class_getitem__(cls, inner: Any) -> _Directed:
        return _Directed(Direction.Out, inner)


class InOut:
    """``pl.InOut[pl.Tensor[...]]``: read and written."""

    def __class_getitem__(cls, inner: Any) -> _Directed:
        return _Directed(Direction.InOut, inner)


class _TileSpec:
    def __init__(self, shape: Any, dtype: Any) -> None:
        self.shape, self.dtype = shape, dtype

    def __repr__(self) -> str:
        return f"pl.Tile[{self.shape!r}, {self.dtype!r}]"


class Tile:
    """``pl.Tile[[64, 1], pl.FP32]``: the annotation of a tile variable (documentation only: a
    tile is what ``pl.load``, ``pl.create_tile`` and the tile ops return)."""

    def __init__(self) -> None:
        raise TypeError("pl.Tile is an annotation; tiles come from pl.load, pl.create_tile and the tile ops")

    def __class_getitem__(cls, item: Any) -> _TileSpec:
        shape, dtype = (item[0], item[1]) if isinstance(item, tuple) and len(item) == 2 else (item, None)
        return _TileSpec(shape, dtype)


class _ScalarSpec:
    def __init__(self, dtype: Optional[Any]) -> None:
        self.dtype = dtype

    def __repr__(self) -> str:
        return f"pl.Scalar[{self.dtype!r}]"


class Scalar:
    """``pl.Scalar[pl.INT32]``: a scalar parameter. Here it is a compile-time value (part of the
    compile cache key), as any non-tensor parameter of a jit function."""

    def __init__(self) -> None:
        raise TypeError("pl.Scalar is an annotation: write `n: pl.Scalar[pl.INT32]`")

    def __class_getitem__(cls, dtype: Any) -> _ScalarSpec:
        return _ScalarSpec(dtype)


class MemorySpace(enum.Enum):
    """Where a tile lives: global memory (DDR), the vector unit's buffer (Vec, UB), the cube's
    L1 (Mat), its L0A / L0B inputs (Left, Right) and its L0C accumulator (Acc)."""

    DDR = "DDR"
    Vec = "Vec"
    Mat = "Mat"
    Left = "Left"
    Right = "Right"
    Acc = "Acc"


class Level(enum.Enum):
    """The hierarchy level a function or ``pl.at`` scope runs at. AIV, AIC and CORE_GROUP run
    tile and tensor ops (a core group pairs a cube core with vector cores); the levels above
    orchestrate."""

    AIV = "AIV"
    AIC = "AIC"
    CORE_GROUP = "CORE_GROUP"
    CHIP_DIE = "CHIP_DIE"
    CHIP = "CHIP"
    HOST = "HOST"
    CLUSTER_0 = "CLUSTER_0"
    CLUSTER_1 = "CLUSTER_1"
    CLUSTER_2 = "CLUSTER_2"
    GLOBAL = "GLOBAL"
    # Upstream's readability aliases (the same members).
    L2CACHE = "CHIP_DIE"
    PROCESSOR = "CHIP"
    UMA = "CHIP"
    NODE = "HOST"
    POD = "CLUSTER_0"
    CLOS1 = "CLUSTER_1"
    CLOS2 = "CLUSTER_2"


INCORE_LEVELS = (Level.AIV, Level.AIC, Level.CORE_GROUP)


class Role(enum.Enum):
    """Orchestrators build the task graph; sub-workers run the tasks. ``ORCHESTRATOR`` and
    ``WORKER`` are accepted as aliases."""

    Orchestrator = "Orchestrator"
    SubWorker = "SubWorker"
    ORCHESTRATOR = "Orchestrator"
    WORKER = "SubWorker"


class FunctionType(enum.Enum):
    """What a ``@pl.function`` is: an orchestration (control plane), an in-core kernel (InCore,
    or specialized to one core type: AIC, AIV), or an inline helper."""

    Opaque = "Opaque"
    Orchestration = "Orchestration"
    InCore = "InCore"
    AIC = "AIC"
    AIV = "AIV"
    Group = "Group"
    Spmd = "Spmd"
    Inline = "Inline"


class PadValue(enum.Enum):
    """What ``pl.fillpad`` writes beyond a tile's valid shape."""

    null = "null"
    zero = "zero"
    max = "max"
    min = "min"


class SplitMode(enum.Enum):
    """``pl.split(mode)``: how a mixed scope's vector work is halved over the two AIV lanes."""

    NONE = "NONE"
    UP_DOWN = "UP_DOWN"
    LEFT_RIGHT = "LEFT_RIGHT"


class AtomicType(enum.Enum):
    """How ``pl.store`` / ``pl.assemble`` combine with global memory."""

    None_ = "None"
    Add = "Add"


def is_pl_tensor_annotation(ann: Any) -> bool:
    return isinstance(ann, Tensor) and not ann.is_traced


def dynamic(name: str) -> Any:
    """``N = pl.dynamic("N")``: a dim of run-time size in annotations (``pl.Tensor[[N, 64], ...]``),
    compiled once for every size. Each parameter's dim is bound from its own argument (the name
    does not tie two parameters' dims together here; the ops check the sizes they combine)."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"pl.dynamic: the name must be an identifier, got {name!r}")
    return DYNAMIC


class TensorLayout(enum.Enum):
    """A tensor's layout in memory (upstream's ``pl.TensorLayout``): row-major ND here; DN and NZ
    (the chip's column-major and fractal layouts) are accepted in annotations and describe the
    chip's layout only."""

    ND = "ND"
    DN = "DN"
    NZ = "NZ"


class TensorView:
    """``pl.Tensor[[M, N], pl.FP32, pl.TensorView(valid_shape=[M, n], layout=pl.TensorLayout.ND)]``:
    the part of a parameter that holds data and its layout (hw-native-sys's tensor view). Kept on
    the annotation: here a parameter's shape is its argument's (a view passed in is its valid
    part), so the kernel's loads give their valid_shape themselves."""

    is_tensor_view = True

    def __init__(self, valid_shape: Any = None, layout: TensorLayout = TensorLayout.ND, stride: Any = None,
                 **kwargs: Any) -> None:
        if not isinstance(layout, TensorLayout):
            raise _core.UserError(f"pl.TensorView: layout must be a pl.TensorLayout, got {layout!r}")
        self.valid_shape, self.layout, self.stride = valid_shape, layout, stride

    def __repr__(self) -> str:
        return f"pl.TensorView(valid_shape={self.valid_shape!r}, layout=pl.TensorLayout.{self.layout.name})"


class BackendType(enum.Enum):
    """The chip generation a program is compiled for (hw-native-sys pypto's
    ``pypto.backend.BackendType``). Programs run on this CPU; the backend names the chip whose
    machine model the tile checks and the simulator use: Ascend910B -> "a2a3", Ascend950 -> "a5"
    (the names ``RunConfig(platform=...)`` takes)."""

    Ascend910B = 0
    Ascend950 = 1


_BACKEND_MACHINES = {BackendType.Ascend910B: "a2a3", BackendType.Ascend950: "a5"}


def machine_of(backend_type: Any) -> Optional[str]:
    """The machine model of a backend type (None for None); a UserError for anything else."""
    if backend_type is None:
        return None
    if not isinstance(backend_type, BackendType):
        raise _core.UserError(f"backend_type must be a pypto.backend.BackendType, got {backend_type!r}")
    return _BACKEND_MACHINES[backend_type]


def declared_directions(fn: Any) -> Dict[str, Direction]:
    """The directions a function's parameters are annotated with (``pl.Out[...]``,
    ``pl.InOut[...]``, ``pl.In[...]``); string annotations (``from __future__ import
    annotations``) are evaluated where the function was defined. Others are left out."""
    raw = getattr(fn, "__func__", fn)
    anns = getattr(raw, "__annotations__", None) or {}
    scope: Dict[str, Any] = {}
    out: Dict[str, Direction] = {}
    for name, ann in anns.items():
        if isinstance(ann, str):
            if not scope:
                scope = function_scope(raw, getattr(fn, "_def_locals", None))
            try:
                ann = eval(ann, scope)  # noqa: S307 - the user's own annotation
            except Exception:  # noqa: BLE001 - one we cannot read has no direction
                continue
        if isinstance(ann, _Directed):
            out[name] = ann.direction
    return out
