"""The rest of PyPTO's Tensor API that model code calls: set_cache_policy / get_cache_policy,
format, id, assemble / where / tril_ / triu_ / concat as methods, SymbolicScalar's kind
predicates, and pypto.from_torch."""

import numpy as np
import pytest
import torch

import pypto
from _util import MODES, rng, run_in

F32 = pypto.DT_FP32


@pytest.mark.parametrize("mode", MODES)
def test_tensor_methods_whose_receiver_is_not_the_first_argument(mode):
    @pypto.jit
    def f(x: pypto.Tensor((6, 6), F32), out: pypto.Tensor((6, 12), F32), low: pypto.Tensor((6, 6), F32)):
        x.set_cache_policy(pypto.CachePolicy.NONE_CACHEABLE, True)
        assert x.get_cache_policy(pypto.CachePolicy.NONE_CACHEABLE) and x.format == pypto.TileOpFormat.TILEOP_ND
        assert isinstance(x.id, int) and x.id != out.id
        y = x.where(x > 0, 0.0)                   # pypto.where(x > 0, x, 0.0)
        out.assemble(y, [0, 0])                   # pypto.assemble(y, [0, 0], out)
        out.assemble(pypto.Tensor.concat([x, x], 1)[:, 0:6] * 2.0, [0, 6])
        low[:] = x
        low.tril_(-1)
        return pypto.triu(x, 1) * 1.0

    x = rng(5).standard_normal((6, 6)).astype(np.float32)
    out, low = np.zeros((6, 12), np.float32), np.zeros((6, 6), np.float32)
    up = run_in(mode, f, x, out, low)
    np.testing.assert_array_equal(out[:, :6], np.where(x > 0, x, 0))
    np.testing.assert_array_equal(out[:, 6:], x * 2)
    np.testing.assert_array_equal(low, np.tril(x, -1))
    np.testing.assert_array_equal(up, np.triu(x, 1))


def test_symbolic_scalar_kinds():
    seen = {}

    @pypto.jit
    def f(x: pypto.Tensor([pypto.DYNAMIC, 4], F32)):
        n = x.shape[0]
        seen["symbol"] = (n.is_symbol(), n.is_expression(), n.is_immediate())
        e = n * 2 + 1
        seen["expression"] = (e.is_symbol(), e.is_expression(), e.is_immediate())
        return x + 1.0

    f(np.zeros((3, 4), np.float32))
    assert seen == {"symbol": (True, False, False), "expression": (False, True, False)}
    c = pypto.symbolic_scalar(7)
    assert (c.is_symbol(), c.is_expression(), c.is_immediate()) == (False, False, True)


def test_from_torch_passes_the_tensor_and_checks_it():
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    assert pypto.from_torch(t, "x", dynamic_axis=[0]) is t

    @pypto.jit
    def f(x: pypto.Tensor([pypto.DYNAMIC, 4], F32)):
        return x * 2.0

    assert torch.equal(torch.as_tensor(np.asarray(f(pypto.from_torch(t)))), t * 2)
    with pytest.raises(pypto.UserError, match="not contiguous"):
        pypto.from_torch(t.t())
    with pytest.raises(pypto.UserError, match="dtype .* differs"):
        pypto.from_torch(t, dtype=pypto.DT_FP16)
    with pytest.raises(pypto.UserError, match="dynamic_axis"):
        pypto.from_torch(t, dynamic_axis=[2])
