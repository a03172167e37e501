"""PyPTO's enums that select a mode of an op or name a code (its ``pypto_impl`` enums). Their
members convert with ``int()`` as PyPTO's do; members of different enums are never equal."""

import enum


class PyptoEnum(enum.Enum):
    """An enum whose members are also their int value for ``int()``, as PyPTO's C++ enums."""

    def __int__(self) -> int:
        return int(self.value)


class TileOpFormat(PyptoEnum):
    """PyPTO's storage formats of a tensor parameter. Arrays here are row-major (ND); an NZ
    annotation is accepted and recorded (it is the NPU's fractal layout of the same values)."""

    TILEOP_ND = 0
    TILEOP_NZ = 1


class CachePolicy(PyptoEnum):
    """PyPTO's L2 cache policies of a tensor (``Tensor.set_cache_policy``). NONE_CACHEABLE keeps a
    tensor out of the NPU's L2; here the host's caches decide, and the policy is only recorded."""

    NONE_CACHEABLE = 0


class ReduceMode(PyptoEnum):
    """How concurrent writes of one region combine (PyPTO's reduce mode of assemble-like ops)."""

    ATOMIC_ADD = 0


class OpType(PyptoEnum):
    """A comparison (PyPTO's compare op type); ``pypto.eq`` / ``pypto.lt`` / ... are the ops."""

    EQ = 0
    NE = 1
    LT = 2
    LE = 3
    GT = 4
    GE = 5


class AtomicType(PyptoEnum):
    """How a shmem put or signal writes remote memory (``pypto.distributed``): SET overwrites,
    ADD adds atomically (several ranks may add into one place at once)."""

    SET = 0
    ADD = 1


class OutType(PyptoEnum):
    """The output of a comparison: BOOL (DT_BOOL, what the comparison ops give here) or BIT."""

    BOOL = 0
    BIT = 1


class TopKAlgo(PyptoEnum):
    """PyPTO's topk algorithm; both give the same answer here (one selection pass per row)."""

    MERGE_SORT = 0
    RADIX_SELECT = 1


class AtomicRMWMode(PyptoEnum):
    """The combine step of an atomic read-modify-write (``pypto.atomic_add`` is ADD)."""

    ADD = 0
    MAX = 1
    MIN = 2


class ScatterMode(PyptoEnum):
    """PyPTO's scatter modes; ``reduce=None / 'add' / 'multiply'`` of pypto.scatter_ select them."""

    NONE = 0
    ADD = 1
    MULTIPLY = 2


class LogBaseType(PyptoEnum):
    """The base of a logarithm; ``pypto.log`` / ``log2`` / ``log10`` are the ops."""

    LOG_E = 0
    LOG_2 = 1
    LOG_10 = 2


class ExternalError(PyptoEnum):
    """PyPTO's user-facing error codes (``pypto_impl.ExternalError``)."""

    COMMON_EXTERNAL_ERROR = 0x0FFFF
    INVALID_TYPE = 0x00001
    INVALID_VAL = 0x00002
    RUNTIME_ERROR = 0x00003
    NAME_ERROR = 0x00004
    NOT_IMPLEMENTED_ERROR = 0x00005
    KEY_ERROR = 0x00006
    INVALID_OPERATION = 0x00007
    OUT_OF_RANGE = 0x00008
    BAD_FD = 0x00009
    DYNAMIC_SHAPE_COMPUTE_UNSUPPORTED = 0x0000A
    INVALID_SHAPE = 0x0000B
    INVALID_TILE = 0x0000C
    INVALID_FORMAT = 0x0000D
    UNKNOWN = 0x0FFFF  # the same member as COMMON_EXTERNAL_ERROR


__all__ = ["TileOpFormat", "CachePolicy", "ReduceMode", "OpType", "AtomicType", "OutType", "TopKAlgo", "AtomicRMWMode",
           "ScatterMode", "LogBaseType"]
