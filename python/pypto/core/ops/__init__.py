"""Tensor-level operations, one module per family; each op is a thin call into the C++
recorder, which checks shapes and dtypes and records it with the caller's source line.
Each module lists its public ops in ``__all__``; they are all ``pypto.<name>``.

core     arithmetic, reductions, cast, matmul, views, the nn composites
tiles    set_vec_tile_shapes, set_cube_tile_shapes, their getters and defaults
loops    loop, loop_unroll (and the check for values carried between iterations)
math     the elementwise math instructions (tanh, sin, pow, floor_div, ...)
logic    comparisons, logical and bitwise ops, where, clip
reduce   prod, argmax, argmin, var, std, cumsum, cumprod
creation full, zeros, ones, arange
shape    transpose, permute, squeeze, unsqueeze, reshape, expand_clone, clone, concat, pad, tril, triu,
         pack, unpack,
         one_hot, fillpad
random   uniform, normal (PyPTO's Philox generator)
quant    quantize, dequantize
conv     conv (1-D, 2-D, 3-D) and its tile shapes
mx       quant_mx, scaled_mm (the MX formats) and the FP8 conversions of pypto.cast
index    topk, sort, argsort, gather, index_select, scatter_, scatter, index_add_, index_add,
         index_put_, scatter_update
"""

import sys as _sys

from ..tensor import Tensor

from . import conv as _conv_module
from . import mx as _mx_module
from . import cast as _cast_module
from . import matmul as _matmul_module
from . import core, creation, index, logic, loops, math, mx_codec, quant, random, reduce, shape, tiles
from .core import *  # noqa: F401,F403
from .cast import *  # noqa: F401,F403
from .matmul import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .creation import *  # noqa: F401,F403
from .tiles import *  # noqa: F401,F403
from .tiles import _apply_default_tiles, _default_tiles, _restore_default_tiles, _set_default_tiles  # noqa: F401
from .logic import *  # noqa: F401,F403
from .loops import *  # noqa: F401,F403
from .index import *  # noqa: F401,F403
from .math import *  # noqa: F401,F403
from .mx import *  # noqa: F401,F403
from .quant import *  # noqa: F401,F403
from .random import *  # noqa: F401,F403
from .reduce import *  # noqa: F401,F403
from .shape import *  # noqa: F401,F403
from .core import assemble
from .logic import where
from .shape import concat, tril, triu

__all__ = [*core.__all__, *_cast_module.__all__, *_matmul_module.__all__, *tiles.__all__, *loops.__all__, *math.__all__, *logic.__all__, *reduce.__all__,
           *creation.__all__, *shape.__all__, *quant.__all__, *random.__all__, *index.__all__, *_conv_module.__all__,
           *_mx_module.__all__]

# PyPTO's Tensor methods: t.exp() is pypto.exp(t), t.add(y) is pypto.add(t, y).
_TENSOR_METHODS = (
    "add", "sub", "mul", "div", "fmod", "remainder", "hypot", "greater", "maximum", "minimum", "exp", "exp2",
    "expm1", "log", "log1p", "log2", "log10", "sqrt", "rsqrt", "reciprocal", "relu", "sigmoid", "softmax", "sign",
    "signbit", "sin", "cos", "tan", "sinh", "cosh", "tanh", "asinh", "acosh", "erfc", "abs", "neg", "round", "ceil",
    "floor", "trunc", "logical_not", "amax", "amin", "sum", "mean", "matmul", "pow", "clip", "cast", "prod", "argmax",
    "argmin", "cumsum", "cumprod", "var", "std", "transpose", "permute", "reshape", "unsqueeze", "squeeze",
    "clone", "expand_clone", "tril", "triu", "lrelu", "prelu", "gcd", "axpy_", "fillpad", "topk", "gather", "sort",
    "scatter_", "scatter", "index_add_", "index_add", "scatter_update", "pad",
)


def _as_method(fn):  # type: ignore[no-untyped-def]
    def method(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        return fn(self, *args, **kwargs)

    method.__name__ = fn.__name__
    method.__doc__ = fn.__doc__
    return method


def _install_tensor_methods() -> None:
    for name in _TENSOR_METHODS:
        if not hasattr(Tensor, name):
            setattr(Tensor, name, _as_method(globals()[name]))

    # The methods whose receiver is not the first argument of the function (PyPTO's Tensor API).
    def assemble_into(self, input, offsets):  # type: ignore[no-untyped-def]  # noqa: A002
        """``t.assemble(x, offsets)``: ``pypto.assemble(x, offsets, t)``."""
        return assemble(input, offsets, self)

    def where_self(self, condition, y):  # type: ignore[no-untyped-def]
        """``x.where(condition, y)``: ``pypto.where(condition, x, y)``."""
        return where(condition, self, y)

    def tril_(self, diagonal=0):  # type: ignore[no-untyped-def]
        """``t.tril_(diagonal)``: t becomes ``pypto.tril(t, diagonal)``, in place."""
        self[...] = tril(self, diagonal)
        return self

    def triu_(self, diagonal=0):  # type: ignore[no-untyped-def]
        """``t.triu_(diagonal)``: t becomes ``pypto.triu(t, diagonal)``, in place."""
        self[...] = triu(self, diagonal)
        return self

    Tensor.assemble = assemble_into  # type: ignore[attr-defined]
    Tensor.where = where_self  # type: ignore[attr-defined]
    Tensor.tril_ = tril_  # type: ignore[attr-defined]
    Tensor.triu_ = triu_  # type: ignore[attr-defined]
    Tensor.concat = staticmethod(concat)  # type: ignore[attr-defined]


_install_tensor_methods()

from ..tensor import bind_ops  # noqa: E402 - Tensor's operators call the ops bound here

bind_ops(_sys.modules[__name__])
