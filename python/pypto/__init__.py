"""PyPTO: tile-based kernel programming with a multi-level IR, the PTO tile ISA and an MPMD
runtime. See README.md and docs/ARCHITECTURE.md."""

import os as _os

# An installed wheel ships the headers generated kernels include; an editable build uses the
# source tree's (compiled into the core).
_inc = _os.path.join(_os.path.dirname(__file__), "include")
if _os.path.isdir(_os.path.join(_inc, "pto")):
    _os.environ.setdefault("PYPTO_INCLUDE_DIR", _inc)

from . import _paths  # noqa: E402 - the module paths of before the layers

_paths.install()

from .compat import frontend  # noqa: E402
from ._core import DataType, InternalError, SymbolicScalar, UserError, release_memory
from .core._dtypes import (DT_BF16, DT_BOOL, DT_FP16, DT_FP32, DT_INT8, DT_INT16, DT_INT32, DT_INT64, DT_UINT8,
                           as_dtype, from_bf16, from_torch, to_bf16, to_numpy_dtype)
from .core._dtypes import (DT_BOTTOM, DT_DOUBLE, DT_FP4_E1M2, DT_FP4_E1M2X2, DT_FP4_E2M1, DT_FP4_E2M1X2, DT_FP8,
                           DT_FP8E4M3, DT_FP8E5M2, DT_FP8E8M0, DT_HF4, DT_HF8, DT_INT4, DT_UINT16, DT_UINT32,
                           DT_UINT64)  # noqa: F401
from .frontends.jit import CompiledFunction, JitFunction, jit
from .core.ops import *  # noqa: F401,F403 - every tensor op
from .core.ops import __all__ as _OPS
from .core.config import (CompStage, RunMode, get_codegen_options, get_debug_options, get_host_options,
                          get_matrix_size, get_pass_options, get_runtime_options, get_verify_options, options,
                          reset_options, set_codegen_options, set_debug_options, set_host_options, set_matrix_size,
                          set_pass_options, set_runtime_options, set_verify_options)
from .core.tensor import DYN, DYNAMIC, STATIC, CachePolicy, Tensor, TileOpFormat
from .core.tensor_factory import tensor
from .core.control import bytes_of, ceildiv, cond, is_loop_begin, is_loop_end
from .core.control import sym_max as max  # noqa: A004 - PyPTO's pypto.max of symbolic scalars
from .core.control import sym_min as min  # noqa: A004
from .core.tensor import SymbolicPrintWarning
from .frontends import tile  # noqa: E402 - the tile level
from .frontends.tile import *  # noqa: F401,F403 - Tile and the tile ops
from .frontends.tile import __all__ as _TILE
from .compat import experimental  # noqa: E402 - PyPTO's custom attention ops and operation options
from .compat import runtime  # noqa: E402 - PyPTO's runtime module names (RunMode, _device_synchronize)
from .compat import ir, backend  # noqa: E402,F401 - hw-native-sys pypto's pypto.ir / pypto.backend (bound on import pypto)
from .compat import distributed  # noqa: E402 - PyPTO's shmem ops (pypto.distributed), on the ranks of a host
from .compat.distributed import ShmemTensor  # noqa: E402
from .core import error  # noqa: E402 - PyPTO's exception classes (a UserError is an FeError and a PyptoRtError)
from .tools import sim  # noqa: E402 - the NPU machine model (run_mode "sim")
from .core.element import Element  # noqa: E402 - PyPTO's typed scalar
from .core._enums import AtomicRMWMode, AtomicType, LogBaseType, OpType, OutType, ReduceMode, ScatterMode, TopKAlgo  # noqa: E402
from .compat import pypto_impl  # noqa: E402 - names of PyPTO's internal module its model code uses
from .compat import operation  # noqa: E402 - PyPTO's pypto.operation (the ops, op_wrapper)
from .compat.npu_platform import platform  # noqa: E402 - pypto.platform.npuarch
from .compat.function_block import function  # noqa: E402 - PyPTO's older `with pypto.function(name, *tensors)` block
from .core.pass_config import (PassConfigKey, PassConfigs, get_pass_config, get_pass_configs,
                               get_pass_default_config, set_pass_config, set_pass_default_config)  # noqa: E402

from .core import symbolic_scalar  # noqa: E402 - PyPTO's module, callable: pypto.symbolic_scalar(value)
from .core.symbolic_scalar import SymInt  # noqa: E402
from .tools.tune import tune  # noqa: E402 - tile-shape search on the model or the CPU
from .whitebox.pass_verify import (pass_verify_print, pass_verify_save, set_verify_golden_data)  # noqa: E402 - precision tool

from .core.machine_info import VERSION as __version__  # noqa: E402
from .core.machine_info import info  # noqa: E402 - the CPU level and the cube path per dtype
from .core.memory import MemoryStats, memory_stats, reset_peak_memory  # noqa: E402 - pypto's own host memory

_paths.alias_loaded()

__all__ = [
    "info", "platform", "symbolic_scalar", "SymInt", "DataType", "SymbolicScalar", "UserError", "InternalError", "Tensor", "tensor", "DYNAMIC", "DYN", "STATIC",
    "DT_FP32", "DT_FP16", "DT_BF16", "DT_INT8", "DT_INT16", "DT_INT32", "DT_INT64", "DT_UINT8", "DT_BOOL",
    "DT_UINT16", "DT_UINT32", "DT_UINT64", "DT_DOUBLE", "DT_INT4", "DT_FP8", "DT_HF8", "DT_HF4", "DT_FP8E4M3",
    "DT_FP8E5M2", "DT_FP8E8M0", "DT_FP4_E2M1", "DT_FP4_E2M1X2", "DT_FP4_E1M2", "DT_FP4_E1M2X2", "DT_BOTTOM",
    "jit", "frontend", "JitFunction", "CompiledFunction", "set_debug_options", "set_pass_options",
    "set_runtime_options", "get_debug_options", "get_pass_options", "get_runtime_options", "as_dtype",
    "to_numpy_dtype", "to_bf16", "from_bf16", "from_torch", "release_memory", "memory_stats",
    "reset_peak_memory", "MemoryStats", "RunMode", "CompStage", "TileOpFormat", "CachePolicy", "options",
    "reset_options", "set_host_options", "set_codegen_options", "set_verify_options", "get_host_options",
    "get_codegen_options", "get_verify_options", "set_matrix_size", "get_matrix_size", "cond", "is_loop_begin",
    "is_loop_end", "ceildiv", "bytes_of", "min", "max", "SymbolicPrintWarning", "tile", "experimental", "runtime", "sim", "tune", "Element",
    "function", "PassConfigKey", "PassConfigs", "get_pass_config", "get_pass_configs", "get_pass_default_config", "set_pass_config",
    "set_pass_default_config", "pass_verify_print", "pass_verify_save", "set_verify_golden_data", "AtomicRMWMode",
    "LogBaseType", "OpType", "OutType", "ReduceMode", "ScatterMode", "TopKAlgo", "AtomicType", "distributed",
    "ShmemTensor", *_OPS, *_TILE,
]
