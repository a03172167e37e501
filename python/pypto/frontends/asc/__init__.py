"""``import pypto.asc as asc``: element-level kernels in PyAsc's language (Python that maps one
to one onto Ascend C), run on the CPU, with a checked mode that finds missing pipe
synchronization.

    @asc.jit
    def vadd_kernel(x: asc.GlobalAddress, y: asc.GlobalAddress, z: asc.GlobalAddress, block_length: int):
        offset = asc.get_block_idx() * block_length
        x_gm = asc.GlobalTensor()
        x_gm.set_global_buffer(x + offset, block_length)
        ...
        asc.data_copy(x_local, x_gm[i * tile:], tile)
        asc.set_flag(asc.HardEvent.MTE2_V, 0)
        asc.wait_flag(asc.HardEvent.MTE2_V, 0)
        asc.add(z_local, x_local, y_local, tile)
        ...

    vadd_kernel[8](x, y, z, n // 8)            # numpy arrays or torch tensors, z written in place
    report = asc.check(vadd_kernel[8], x, y, z, n // 8)   # data races, as a report

Each block runs the kernel's instructions in program order on its own local memory (UB, L1,
L0A/B/C of the chip named by ``machine=``, default a2a3); the first launch of a signature
interprets and records each block's stream, later ones replay it natively on the runtime's
worker pool.
``@asc.jit(checked=True)`` (or ``asc.check``) models the pipes as concurrent and reports every
pair of conflicting accesses that no event, barrier or queue orders (docs/element-level.md).
"""

from . import adv, lib, runtime
from .adv import CubeFormat
from ._jit import ConstExpr, Kernel, Launch, check, jit
from ._memory import (DataType, GlobalAddress, GlobalTensor, Hardware, LocalTensor, TPosition, bfloat16, bool_, double,
                      float16, float32, float64, float_, half, int8, int16, int32, int64, int_, uint8, uint16,
                      uint32, uint64)
from ._ops import (CMPMODE, BinaryRepeatParams, DataCopyExtParams, DataCopyPadExtParams, DataCopyParams, RoundMode,
                   SelMode, UnaryRepeatParams, abs, add, add_relu, adds, bitwise_and, bitwise_not, bitwise_or, cast,
                   compare, compare_scalar, data_copy, data_copy_pad, div, duplicate, exp, get_block_idx,
                   get_block_num, get_sub_block_idx, get_task_ratio, leaky_relu, ln, max, maxs, min, mins, mul, muls, reciprocal,
                   reduce_max, reduce_min, reduce_sum, relu, rsqrt, select, sqrt, sub, whole_reduce_max,
                   whole_reduce_min, whole_reduce_sum)
from ._properties import DEFAULT_C0_SIZE, ONE_BLK_SIZE, TOTAL_L0C_SIZE, TOTAL_L1_SIZE, property
from ._block import current_block
from ._checker import CheckReport, HardEvent, PipeID, Race
from ._sync import TBuf, TPipe, TQue, pipe_barrier, set_flag, wait_flag


def ascend_is_aic() -> bool:
    """Whether this block runs on a cube core: every block of a cube-only kernel
    (``@asc.jit(matmul_cube_only=True)``), the first core of each group of a MIX kernel (one
    that registers a matmul), none of a vector-only kernel."""
    return bool(current_block("ascend_is_aic").cube)


def ascend_is_aiv() -> bool:
    """Whether this block runs on a vector core (see ascend_is_aic)."""
    return not ascend_is_aic()

__all__ = [
    "jit", "check", "ConstExpr", "Kernel", "Launch", "CheckReport", "Race", "lib", "runtime", "adv", "CubeFormat",
    "ascend_is_aic", "ascend_is_aiv",
    "DataType", "GlobalAddress", "GlobalTensor", "LocalTensor", "TPosition", "Hardware", "HardEvent", "PipeID",
    "TPipe", "TQue", "TBuf", "set_flag", "wait_flag", "pipe_barrier", "get_block_idx", "get_block_num",
    "get_sub_block_idx", "get_task_ratio", "property", "DEFAULT_C0_SIZE", "ONE_BLK_SIZE", "TOTAL_L1_SIZE",
    "TOTAL_L0C_SIZE",
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32", "float64",
    "bfloat16", "half", "float_", "double", "int_", "bool_",
    "BinaryRepeatParams", "UnaryRepeatParams", "DataCopyParams", "DataCopyExtParams", "DataCopyPadExtParams",
    "RoundMode", "CMPMODE", "SelMode",
    "data_copy", "data_copy_pad", "duplicate", "add", "sub", "mul", "div", "max", "min", "bitwise_and", "bitwise_or",
    "bitwise_not", "add_relu", "adds", "muls", "maxs", "mins", "leaky_relu", "exp", "ln", "abs", "sqrt", "rsqrt",
    "reciprocal", "relu", "cast", "compare", "compare_scalar", "select", "reduce_sum", "reduce_max", "reduce_min",
    "whole_reduce_sum", "whole_reduce_max", "whole_reduce_min",
]
