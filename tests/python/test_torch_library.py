"""A @pypto.jit function inside torch: registered through torch.library as a custom op with a
fake (shape) function, it runs inside torch.compile graphs (dynamic shapes included) and inside
torch.npu graph capture under pypto.npu_compat (its replay re-runs the pypto call)."""

import textwrap

import pytest

torch = pytest.importorskip("torch")

import pypto  # noqa: E402
from test_npu_compat import assert_runs  # noqa: E402


@pypto.jit
def _softmax_rows(x: pypto.Tensor((pypto.DYNAMIC, 64), pypto.DT_FP32),
                  out: pypto.Tensor((pypto.DYNAMIC, 64), pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(8, 64)
    n = x.shape[0]
    for i in pypto.loop(0, (n + 7) // 8, 1):
        v = pypto.view(x, [8, 64], [i * 8, 0], valid_shape=[pypto.min(n - i * 8, 8), 64])
        out[i * 8:, :] = pypto.softmax(v, -1)


@torch.library.custom_op("pypto_test::softmax_rows", mutates_args=())
def softmax_rows(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    _softmax_rows(x, out)
    return out


@softmax_rows.register_fake
def _(x):
    return torch.empty_like(x)


class _Net(torch.nn.Module):
    def forward(self, x):
        return softmax_rows(x * 2.0) + 1.0


def _want(x):
    return torch.softmax(x * 2.0, -1) + 1.0


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_a_custom_op_runs_inside_torch_compile_with_dynamic_shapes(backend):
    torch._dynamo.reset()
    net = torch.compile(_Net(), backend=backend, dynamic=True)
    for rows in (37, 8, 50):  # tails; one compiled graph for every size
        x = torch.randn(rows, 64, generator=torch.Generator().manual_seed(rows))
        torch.testing.assert_close(net(x), _want(x), rtol=1e-6, atol=1e-6)
    x = torch.randn(5, 64)
    torch.testing.assert_close(torch.ops.pypto_test.softmax_rows(x), torch.softmax(x, -1), rtol=1e-6, atol=1e-6)


def test_the_fake_function_gives_the_graph_its_shapes():
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        y = softmax_rows(torch.empty(11, 64))
    assert tuple(y.shape) == (11, 64) and y.dtype == torch.float32


GRAPH_SCRIPT = textwrap.dedent('''
    import torch
    import torch_npu
    import pypto

    @pypto.jit
    def double(x: pypto.Tensor((8, 64), pypto.DT_FP32), out: pypto.Tensor((8, 64), pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(8, 64)
        out[:] = x * 2.0

    @torch.library.custom_op("pypto_test::double", mutates_args=())
    def double_op(x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        double(x, out)
        return out

    @double_op.register_fake
    def _(x):
        return torch.empty_like(x)

    net = torch.compile(lambda t: double_op(t), backend="eager", dynamic=True)
    x = torch.ones(8, 64, device="npu:0")
    g = torch.npu.NPUGraph()
    with torch.npu.graph(g):
        y = net(x)
    assert torch.equal(y, torch.full((8, 64), 2.0))
    x.fill_(5.0)
    g.replay()  # the captured pypto call again, into the same output
    assert torch.equal(y, torch.full((8, 64), 10.0)), y
    print("CUSTOM OP GRAPH OK")
''')


def test_a_custom_op_inside_npu_graph_capture_replays(tmp_path):
    assert_runs(tmp_path, "custom_op_graph.py", GRAPH_SCRIPT, "CUSTOM OP GRAPH OK")
