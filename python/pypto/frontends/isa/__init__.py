"""pypto.isa: the PTO tile instructions on numpy arrays, running the C++ implementations.

Every instruction is a lower-case function (``tadd``, ``trowsum``, ``tmatmul``, ``tcvt``, ...).
A tile is a 2-D array (1-D arrays are taken as one row). ``valid_shape=(rows, cols)`` restricts
an instruction to the top-left valid region of its main input, as on the NPU: a new result is
zero outside that region, an ``out=`` array keeps its values there.

numpy has no bfloat16, so bf16 tiles are ``np.uint16`` arrays of bf16 bit patterns (uint16 is not
a PTO dtype, so there is no ambiguity): ``tcvt(x, "bf16")`` makes them, ``tcvt(b, np.float32)``
reads them.

``instructions()`` lists the instruction names, ``describe(name)`` their operands and dtypes,
``run(text, **bindings)`` executes a PTO assembly (.pto) module; ``python -m pypto.isa`` runs
files from the command line. See docs/isa.md for the semantics of every instruction.
"""

from __future__ import annotations

import numpy as _np

import pypto._isa as _isa

__all__ = ["instructions", "describe", "run", "canonical", "isa", "dtype"]

# ---- dtypes ------------------------------------------------------------------------------------

_NAMES = {
    "f32": _np.float32, "fp32": _np.float32, "float32": _np.float32,
    "f16": _np.float16, "fp16": _np.float16, "float16": _np.float16,
    "bf16": _np.uint16, "bfloat16": _np.uint16,
    "i8": _np.int8, "int8": _np.int8, "i16": _np.int16, "int16": _np.int16,
    "i32": _np.int32, "int32": _np.int32, "i64": _np.int64, "int64": _np.int64,
    "u8": _np.uint8, "uint8": _np.uint8, "i1": _np.bool_, "bool": _np.bool_,
    "u32": _np.uint32, "uint32": _np.uint32, "u64": _np.uint64, "uint64": _np.uint64,
}


def dtype(d) -> _np.dtype:
    """The numpy dtype of a PTO dtype given as a name ('f16', 'bf16', ...) or a numpy dtype."""
    if isinstance(d, str):
        if d not in _NAMES:
            raise ValueError(f"unknown dtype {d!r}")
        return _np.dtype(_NAMES[d])
    d = _np.dtype(d)
    if d not in [_np.dtype(t) for t in set(_NAMES.values())]:
        raise ValueError(f"dtype {d} is not a PTO dtype")
    return d


def _is_float(d) -> bool:
    return d in (_np.dtype(_np.float32), _np.dtype(_np.float16), _np.dtype(_np.uint16))


# ---- operands ----------------------------------------------------------------------------------

def _arr(a) -> _np.ndarray:
    a = _np.asarray(a)
    if a.ndim == 1:
        a = a.reshape(1, -1)
    if a.ndim != 2:
        raise ValueError(f"tiles are 2-D arrays, got shape {a.shape}")
    if a.strides[1] != a.itemsize or a.strides[0] % a.itemsize:
        a = _np.ascontiguousarray(a)
    return a


def _t(a, valid):
    return ("tile", a, int(valid[0]), int(valid[1]))


def _s(x, like_float: bool):
    if isinstance(x, (bool, _np.bool_)):
        return ("int", int(x))
    if isinstance(x, (int, _np.integer)) and not like_float:
        return ("int", int(x))
    return ("float", float(x))


def _valid(a, valid_shape):
    if valid_shape is None:
        return a.shape
    vr, vc = valid_shape
    if not (0 <= vr <= a.shape[0] and 0 <= vc <= a.shape[1]):
        raise ValueError(f"valid_shape {valid_shape} exceeds the tile {a.shape}")
    return (vr, vc)


def _out(out, shape, dt):
    if out is None:
        return _np.zeros(shape, dt)
    out = _np.asarray(out)
    if out.shape != tuple(shape) or out.dtype != dt:
        raise ValueError(f"out must be {dt} {tuple(shape)}, got {out.dtype} {out.shape}")
    if not out.flags.c_contiguous:
        raise ValueError("out must be C-contiguous")
    return out


def _call(name, args, **attrs):
    _isa.call(name, args, {k: str(int(v)) if isinstance(v, bool) else str(v)
                           for k, v in attrs.items() if v is not None})


# ---- families ----------------------------------------------------------------------------------
# Each factory makes the Python function of one instruction; the table at the end binds names.

def _binary(name):
    def f(a, b, *, valid_shape=None, out=None):
        a, b = _arr(a), _arr(b)
        v = _valid(a, valid_shape)
        out = _out(out, a.shape, a.dtype)
        _call(name, [_t(out, v), _t(a, v), _t(b, v)])
        return out
    return f


def _unary(name):
    def f(a, *, valid_shape=None, out=None):
        a = _arr(a)
        v = _valid(a, valid_shape)
        out = _out(out, a.shape, a.dtype)
        _call(name, [_t(out, v), _t(a, v)])
        return out
    return f


def _tile_scalar(name):
    def f(a, scalar, *, valid_shape=None, out=None):
        a = _arr(a)
        v = _valid(a, valid_shape)
        out = _out(out, a.shape, a.dtype)
        _call(name, [_t(out, v), _t(a, v), _s(scalar, _is_float(a.dtype))])
        return out
    return f


def _ternary(name):
    def f(a, b, c, *, valid_shape=None, out=None):
        a, b, c = _arr(a), _arr(b), _arr(c)
        v = _valid(a, valid_shape)
        out = _out(out, a.shape, a.dtype)
        _call(name, [_t(out, v), _t(a, v), _t(b, v), _t(c, v)])
        return out
    return f


def _row_reduce(name):
    def f(a, *, valid_shape=None, out=None):
        a = _arr(a)
        v = _valid(a, valid_shape)
        out = _out(out, (a.shape[0], 1), a.dtype)
        _call(name, [_t(out, (v[0], 1)), _t(a, v)])
        return out
    return f


def _col_reduce(name):
    def f(a, *, valid_shape=None, out=None):
        a = _arr(a)
        v = _valid(a, valid_shape)
        out = _out(out, (1, a.shape[1]), a.dtype)
        _call(name, [_t(out, (1, v[1])), _t(a, v)])
        return out
    return f


def _row_arg(name):
    def f(a, *, valid_shape=None, out=None, index_dtype=_np.int32):
        a = _arr(a)
        v = _valid(a, valid_shape)
        out = _out(out, (a.shape[0], 1), dtype(index_dtype))
        _call(name, [_t(out, (v[0], 1)), _t(a, v)])
        return out
    return f


def _col_arg(name):
    def f(a, *, valid_shape=None, out=None, index_dtype=_np.int32):
        a = _arr(a)
        v = _valid(a, valid_shape)
        out = _out(out, (1, a.shape[1]), dtype(index_dtype))
        _call(name, [_t(out, (1, v[1])), _t(a, v)])
        return out
    return f


def _expand_binary(name, row):
    def f(a, b, *, valid_shape=None, out=None):
        a, b = _arr(a), _arr(b)
        v = _valid(a, valid_shape)
        out = _out(out, a.shape, a.dtype)
        _call(name, [_t(out, v), _t(a, v), _t(b, (v[0], 1) if row else (1, v[1]))])
        return out
    return f


def trowexpand(src, cols, *, valid_shape=None, out=None):
    """dst (R x cols) with dst[r, c] = src[r, 0]."""
    src = _arr(src)
    out = _out(out, (src.shape[0], cols), src.dtype)
    v = _valid(out, valid_shape)
    _call("TROWEXPAND", [_t(out, v), _t(src, (v[0], 1))])
    return out


def tcolexpand(src, rows, *, valid_shape=None, out=None):
    """dst (rows x C) with dst[r, c] = src[0, c]."""
    src = _arr(src)
    out = _out(out, (rows, src.shape[1]), src.dtype)
    v = _valid(out, valid_shape)
    _call("TCOLEXPAND", [_t(out, v), _t(src, (1, v[1]))])
    return out


def texpands(shape, value, dtype_=_np.float32, *, valid_shape=None, out=None):
    """A tile of `shape` filled with `value`."""
    dt = dtype(dtype_)
    out = _out(out, tuple(shape), dt)
    v = _valid(out, valid_shape)
    _call("TEXPANDS", [_t(out, v), _s(value, _is_float(dt))])
    return out


def trowtopk(a, k, cmp="gt", *, valid_shape=None, out=None):
    """The k largest (cmp='gt') or smallest ('lt') values of each row, in order."""
    a = _arr(a)
    v = _valid(a, valid_shape)
    out = _out(out, (a.shape[0], k), a.dtype)
    _call("TROWTOPK", [_t(out, (v[0], k)), _t(a, v)], cmp=cmp)
    return out


def trowtopkidx(a, k, cmp="gt", *, valid_shape=None, out=None, index_dtype=_np.int32):
    """Their column indices."""
    a = _arr(a)
    v = _valid(a, valid_shape)
    out = _out(out, (a.shape[0], k), dtype(index_dtype))
    _call("TROWTOPKIDX", [_t(out, (v[0], k)), _t(a, v)], cmp=cmp)
    return out


def tcolgather(a, index, *, out=None):
    """dst[i, c] = a[index[i, c], c]; an index outside a's rows raises."""
    a, index = _arr(a), _arr(index)
    out = _out(out, index.shape, a.dtype)
    _call("TCOLGATHER", [_t(out, index.shape), _t(a, a.shape), _t(index, index.shape)])
    return out


def tcmp(a, b, cmp="eq", *, valid_shape=None, out=None):
    """Mask (bool) of a `cmp` b, cmp in eq ne lt le gt ge (NaN compares false except ne)."""
    a, b = _arr(a), _arr(b)
    v = _valid(a, valid_shape)
    out = _out(out, a.shape, _np.dtype(_np.bool_))
    _call("TCMP", [_t(out, v), _t(a, v), _t(b, v)], cmp=cmp)
    return out


def tcmps(a, scalar, cmp="eq", *, valid_shape=None, out=None):
    """Mask (bool) of a `cmp` scalar."""
    a = _arr(a)
    v = _valid(a, valid_shape)
    out = _out(out, a.shape, _np.dtype(_np.bool_))
    _call("TCMPS", [_t(out, v), _t(a, v), _s(scalar, _is_float(a.dtype))], cmp=cmp)
    return out


def tsel(mask, a, b, *, valid_shape=None, out=None):
    """mask ? a : b elementwise."""
    mask, a, b = _arr(mask), _arr(a), _arr(b)
    v = _valid(a, valid_shape)
    out = _out(out, a.shape, a.dtype)
    _call("TSEL", [_t(out, v), _t(mask, v), _t(a, v), _t(b, v)])
    return out


def tsels(a, b, select, *, valid_shape=None, out=None):
    """a if select == 1 else b (one choice for the whole tile)."""
    a, b = _arr(a), _arr(b)
    v = _valid(a, valid_shape)
    out = _out(out, a.shape, a.dtype)
    _call("TSELS", [_t(out, v), _t(a, v), _t(b, v), ("int", int(select))])
    return out


def _scalar_carry(name):
    def f(a, scalar, b, *, valid_shape=None, out=None):
        a, b = _arr(a), _arr(b)
        v = _valid(a, valid_shape)
        out = _out(out, a.shape, a.dtype)
        _call(name, [_t(out, v), _t(a, v), _s(scalar, _is_float(a.dtype)), _t(b, v)])
        return out
    return f


def tcvt(a, to, round="rint", *, valid_shape=None, out=None):
    """a converted to dtype `to` (round: rint round floor ceil trunc; float -> int saturates)."""
    a = _arr(a)
    v = _valid(a, valid_shape)
    out = _out(out, a.shape, dtype(to))
    _call("TCVT", [_t(out, v), _t(a, v)], round=round)
    return out


def _acc_dtype(a):
    return _np.dtype(_np.int32) if a.dtype in (_np.int8, _np.uint8) else _np.dtype(_np.float32)


def tmatmul(a, b, *, out=None):
    """a @ b; fp32 / fp16 / bf16 inputs accumulate in fp32, int8 / uint8 in int32."""
    a, b = _arr(a), _arr(b)
    out = _out(out, (a.shape[0], b.shape[1]), _acc_dtype(a))
    _call("TMATMUL", [_t(out, out.shape), _t(a, a.shape), _t(b, b.shape)])
    return out


def tmatmul_acc(acc, a, b):
    """acc + a @ b (a new array; acc is not modified)."""
    a, b = _arr(a), _arr(b)
    out = _np.array(_arr(acc), copy=True)
    _call("TMATMUL_ACC", [_t(out, out.shape), _t(a, a.shape), _t(b, b.shape)])
    return out


def tmatmul_bias(a, b, bias, *, out=None):
    """a @ b + bias (bias: one row of the accumulator dtype)."""
    a, b, bias = _arr(a), _arr(b), _arr(bias)
    out = _out(out, (a.shape[0], b.shape[1]), _acc_dtype(a))
    _call("TMATMUL_BIAS", [_t(out, out.shape), _t(a, a.shape), _t(b, b.shape),
                           _t(bias, bias.shape)])
    return out


def tgemv(a, b, *, out=None):
    """a (1 x K) @ b (K x N)."""
    a, b = _arr(a), _arr(b)
    out = _out(out, (1, b.shape[1]), _acc_dtype(a))
    _call("TGEMV", [_t(out, out.shape), _t(a, a.shape), _t(b, b.shape)])
    return out


def ttrans(a, *, valid_shape=None, out=None):
    """a transposed (valid_shape is a's)."""
    a = _arr(a)
    v = _valid(a, valid_shape)
    out = _out(out, (a.shape[1], a.shape[0]), a.dtype)
    _call("TTRANS", [_t(out, (v[1], v[0])), _t(a, v)])
    return out


def treshape(a, shape, *, out=None):
    """The elements of a in row-major order, as a `shape` tile."""
    a = _arr(a)
    out = _out(out, tuple(shape), a.dtype)
    _call("TRESHAPE", [_t(out, out.shape), _t(a, a.shape)])
    return out


def textract(a, row, col, shape, *, out=None):
    """a[row : row + shape[0], col : col + shape[1]]."""
    a = _arr(a)
    out = _out(out, tuple(shape), a.dtype)
    _call("TEXTRACT", [_t(out, out.shape), _t(a, a.shape), ("int", row), ("int", col)])
    return out


def tinsert(dst, src, row, col):
    """A copy of dst with src written at (row, col)."""
    out = _np.array(_arr(dst), copy=True)
    src = _arr(src)
    _call("TINSERT", [_t(out, out.shape), _t(src, src.shape), ("int", row), ("int", col)])
    return out


def tfillpad(a, shape, pad, *, out=None):
    """A `shape` tile holding a in its top-left corner and `pad` elsewhere."""
    a = _arr(a)
    out = _out(out, tuple(shape), a.dtype)
    _call("TFILLPAD", [_t(out, out.shape), _t(a, a.shape), _s(pad, _is_float(a.dtype))])
    return out


def tconcat(a, b, *, out=None):
    """[a | b] along columns."""
    a, b = _arr(a), _arr(b)
    out = _out(out, (a.shape[0], a.shape[1] + b.shape[1]), a.dtype)
    _call("TCONCAT", [_t(out, out.shape), _t(a, a.shape), _t(b, b.shape)])
    return out


def tgather(a, index, *, out=None):
    """dst[r, c] = a.flat[index[r, c]]; an index outside a gives 0."""
    a, index = _arr(a), _arr(index)
    out = _out(out, index.shape, a.dtype)
    _call("TGATHER", [_t(out, out.shape), _t(a, a.shape), _t(index, index.shape)])
    return out


def tscatter(dst, src, index):
    """A copy of dst with dst.flat[index[r, c]] = src[r, c] (later wins; outside indices skipped)."""
    out = _np.array(_arr(dst), copy=True)
    src, index = _arr(src), _arr(index)
    _call("TSCATTER", [_t(out, out.shape), _t(src, src.shape), _t(index, index.shape)])
    return out


def tci(shape, start=0, dtype_=_np.int32, descending=False, *, out=None):
    """dst[r, c] = start +/- (r * cols + c)."""
    out = _out(out, tuple(shape), dtype(dtype_))
    _call("TCI", [_t(out, out.shape), ("int", start)], descending=descending)
    return out


def ttri(shape, diagonal=0, upper=False, dtype_=_np.float32, *, out=None):
    """Ones on and below (upper: on and above) `diagonal`, zeros elsewhere."""
    out = _out(out, tuple(shape), dtype(dtype_))
    _call("TTRI", [_t(out, out.shape), ("int", diagonal)], upper=upper)
    return out


def tsort32(a, *, index_dtype=_np.int32):
    """(values, indices): each 32-column block of each row sorted in descending order."""
    a = _arr(a)
    vals = _np.zeros_like(a)
    idx = _np.zeros(a.shape, dtype(index_dtype))
    _call("TSORT32", [_t(vals, a.shape), _t(a, a.shape), _t(idx, a.shape)])
    return vals, idx


def tmrgsort(values, index, run):
    """(values, indices) with adjacent descending runs of length `run` merged pairwise."""
    values, index = _arr(values), _arr(index)
    v2, i2 = _np.zeros_like(values), _np.zeros_like(index)
    _call("TMRGSORT", [_t(v2, values.shape), _t(i2, values.shape), _t(values, values.shape),
                       _t(index, values.shape), ("int", run)])
    return v2, i2


def tquant(a, scale, offset=0.0, to=_np.int8, round="rint", *, out=None):
    """saturate(round(a * scale[r] + offset)) with a per-row fp32 scale (R x 1)."""
    a, scale = _arr(a), _arr(_np.asarray(scale, _np.float32).reshape(-1, 1))
    out = _out(out, a.shape, dtype(to))
    _call("TQUANT", [_t(out, a.shape), _t(a, a.shape), _t(scale, scale.shape),
                     ("float", offset)], round=round)
    return out


def tdequant(q, scale, offset=0.0, to=_np.float32, *, out=None):
    """(q - offset) * scale[r], in float, rounded to `to`."""
    q, scale = _arr(q), _arr(_np.asarray(scale, _np.float32).reshape(-1, 1))
    out = _out(out, q.shape, dtype(to))
    _call("TDEQUANT", [_t(out, q.shape), _t(q, q.shape), _t(scale, scale.shape),
                       ("float", offset)])
    return out


def taxpy(y, x, alpha, *, valid_shape=None):
    """alpha * x + y (fused), a new array."""
    y, x = _arr(y), _arr(x)
    v = _valid(y, valid_shape)
    out = _np.array(y, copy=True)
    _call("TAXPY", [_t(out, v), _t(x, v), _s(alpha, _is_float(y.dtype))])
    return out


def tload(gm, row=0, col=0, shape=None):
    """A tile copied from a 2-D global array at (row, col)."""
    gm = _np.asarray(gm)
    shape = tuple(shape) if shape is not None else (gm.shape[0] - row, gm.shape[1] - col)
    out = _np.zeros(shape, gm.dtype)
    window = gm[row:row + shape[0], col:col + shape[1]]
    _call("TLOAD", [_t(out, shape), ("gm", window)])
    return out


def tstore(gm, tile, row=0, col=0, atomic=None):
    """Writes (or with atomic='add' accumulates) a tile into a 2-D global array, in place."""
    tile = _arr(tile)
    window = gm[row:row + tile.shape[0], col:col + tile.shape[1]]
    if not isinstance(gm, _np.ndarray) or not window.flags.writeable:
        raise ValueError("tstore needs a writeable numpy array")
    _call("TSTORE", [("gm", window), _t(tile, tile.shape)], atomic=atomic)
    return gm


def mgather(gm, index):
    """dst[r, c] = gm.flat[index[r, c]]."""
    gm, index = _np.asarray(gm), _arr(index)
    out = _np.zeros(index.shape, gm.dtype)
    _call("MGATHER", [_t(out, out.shape), ("gm", gm), _t(index, index.shape)])
    return out


def mscatter(gm, src, index):
    """gm.flat[index[r, c]] = src[r, c], in place."""
    src, index = _arr(src), _arr(index)
    _call("MSCATTER", [("gm", gm), _t(src, src.shape), _t(index, index.shape)])
    return gm


def tprefetch(gm):
    """A hint; no effect on values."""
    _call("TPREFETCH", [("gm", _np.asarray(gm))])


# The Python function of every instruction of a regular form comes from the one ISA list
# (include/pto/isa_list.hpp): its form picks the factory. Special forms are written out above.
_BY_FORM = {
    "Binary": _binary,
    "Unary": _unary,
    "Move": _unary,
    "Scalar": _tile_scalar,
    "Ternary": _ternary,
    "RowReduce": _row_reduce,
    "ColReduce": _col_reduce,
    "RowExpandBinary": lambda n: _expand_binary(n, True),
    "ColExpandBinary": lambda n: _expand_binary(n, False),
}
_BY_NAME = {"TROWARGMAX": _row_arg, "TROWARGMIN": _row_arg, "TCOLARGMAX": _col_arg, "TCOLARGMIN": _col_arg,
            "TROWCUMSUM": _unary, "TROWCUMPROD": _unary, "TCOLCUMSUM": _unary, "TCOLCUMPROD": _unary,
            "TADDSC": _scalar_carry, "TSUBSC": _scalar_carry}
for _n, _operands, _dtypes, _form in _isa.instructions():
    _factory = _BY_NAME.get(_n) or _BY_FORM.get(_form)
    if _factory is None or _n.lower() in globals():
        continue
    _f = _factory(_n)
    _f.__name__ = _f.__qualname__ = _n.lower()
    _f.__doc__ = f"{_n}({_operands}), dtypes {_dtypes}: see docs/isa.md."
    globals()[_n.lower()] = _f

# Instructions that only make sense between concurrent programs (run them from .pto modules).
_ASM_ONLY = {"TPUSH", "TPOP"}


def instructions() -> list:
    """The PTO instruction names, lower case (as functions of this module and .pto mnemonics)."""
    return sorted(n.lower() for n, _, _, _ in _isa.instructions())


def describe(name: str) -> dict:
    """Operands and dtypes of one instruction."""
    for n, operands, dtypes, _ in _isa.instructions():
        if n == name.upper():
            return {"name": n.lower(), "operands": operands, "dtypes": dtypes,
                    "python": n not in _ASM_ONLY}
    raise ValueError(f"unknown instruction {name!r}")


def canonical(text: str) -> str:
    """The canonical text of a PTO assembly module (parse, then print)."""
    return _isa.parse_print(text)


def run(text: str, **bindings):
    """Runs a PTO assembly module. Keyword names bind `.arg %name` declarations: numpy arrays
    (global tensors, written in place) or Python ints / floats (scalars)."""
    tensors, scalars = {}, {}
    for name, value in bindings.items():
        if isinstance(value, (int, float, _np.integer, _np.floating)) and not isinstance(value, bool):
            scalars["%" + name] = value.item() if hasattr(value, "item") else value
        else:
            a = _np.asarray(value)
            if not isinstance(value, _np.ndarray) or not a.flags.writeable:
                raise ValueError(f"{name}: tensors must be writeable numpy arrays")
            tensors["%" + name] = value
    _isa.run(text, tensors, scalars)


def isa() -> str:
    """The instruction set of the compiled fast layer in use ('avx2' or 'generic')."""
    return _isa.isa()


__all__ += sorted(k for k in list(globals()) if k.startswith(("t", "m")) and k[1:2].isalpha()
                  and k not in ("tuple",))
