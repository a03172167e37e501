"""The numpy meaning of each tensor-graph op, for verify_passes and PyPTO's pass verify.

`evaluate(op, ins, attrs, out_dtype, in_dtypes, env)` computes one op of the tensor graph (the
JSON of `Program.to_json("tensor_graph")`) from numpy arrays in the arrays' storage form: bf16
values are their uint16 bit patterns, as the runtime takes them. An op without numpy semantics
here raises NoSemantics; the caller then skips the tensor-graph level (PyPTO's NO_COMPARE)
rather than failing the call.
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence

import numpy as np

NP_DTYPES = {"fp32": np.float32, "fp16": np.float16, "int8": np.int8, "int16": np.int16, "int32": np.int32,
             "int64": np.int64, "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
             "bool": np.bool_}


def storage_dtype(name: str) -> Any:
    """The numpy dtype of a tensor of dtype `name` as the runtime stores it (bf16: uint16 bits;
    the 8-bit float formats: uint8 bytes)."""
    if name in NP_DTYPES:
        return NP_DTYPES[name]
    return np.uint16 if name == "bf16" else np.uint8


class NoSemantics(Exception):
    """The op has no numpy semantics here."""


def eval_sym(text: str, env: Dict[str, int]) -> int:
    """A symbolic dim or offset as the tensor graph prints it, with the loop indices and dims bound."""
    return int(eval(str(text), {"min": min, "max": max, "__builtins__": {}}, env))  # noqa: S307 - our own printer


_UNARY = {"exp": np.exp, "log": np.log, "abs": np.abs, "neg": np.negative, "sqrt": np.sqrt,
          "rsqrt": lambda x: (1 / np.sqrt(x)).astype(x.dtype), "reciprocal": lambda x: (1 / x).astype(x.dtype),
          "relu": lambda x: np.maximum(x, 0).astype(x.dtype)}
_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "maximum": np.maximum,
           "minimum": np.minimum}
_REDUCE = {"sum": np.sum, "amax": np.max, "amin": np.min}


def evaluate(op: str, ins: List[np.ndarray], attrs: Dict[str, Any], out_dtype: str, in_dtypes: Sequence[str],
             env: Dict[str, int]) -> np.ndarray:
    if out_dtype not in NP_DTYPES or any(d not in NP_DTYPES for d in in_dtypes):
        raise NoSemantics(f"{op} on {', '.join(list(in_dtypes) + [out_dtype])}")
    out_dt = NP_DTYPES[out_dtype]
    if op == "full":  # no inputs: a constant tensor
        shape = [eval_sym(str(d), env) for d in attrs["shape"]]
        return np.full(shape, attrs.get("value_int", attrs["value"])).astype(out_dt)
    x = ins[0]
    with np.errstate(all="ignore"):
        if op in _UNARY:
            r = _UNARY[op](x)
        elif op in _BINARY:
            r = _BINARY[op](x, ins[1])
        elif op.endswith("_scalar") and op[:-7] in _BINARY:
            r = _BINARY[op[:-7]](x, np.asarray(attrs.get("scalar_int", attrs["scalar"])).astype(x.dtype))
        elif op in _REDUCE:
            r = _REDUCE[op](x, axis=int(attrs["dim"]), keepdims=bool(attrs["keepdim"]))
        elif op == "cast":  # PTO rounds by the mode (RINT when absent) and saturates into integers
            if np.issubdtype(out_dt, np.integer) and np.issubdtype(x.dtype, np.floating):
                info = np.iinfo(out_dt)
                v = x.astype(np.float64)
                rounded = [np.rint(v), np.sign(v) * np.floor(np.abs(v) + 0.5), np.floor(v), np.ceil(v),
                           np.trunc(v)][int(attrs.get("round_mode", 0))]
                r = np.clip(np.nan_to_num(rounded, nan=0.0), info.min, info.max)
            else:
                r = x
        elif op == "matmul":  # exact products, summed in float64 (int8: exactly in int64)
            a, b = ins[0], ins[1]
            if int(attrs["a_trans"]):
                a = np.swapaxes(a, -1, -2)
            if int(attrs["b_trans"]):
                b = np.swapaxes(b, -1, -2)
            wide = np.int64 if np.issubdtype(a.dtype, np.integer) else np.float64
            r = a.astype(wide) @ b.astype(wide)
        else:
            raise NoSemantics(op)
    return np.asarray(r).astype(out_dt)
