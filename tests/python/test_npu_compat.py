"""pypto.npu_compat: a script written for CANN PyPTO on an NPU runs here unchanged (`pypto run`),
and so does a pytest file (`-p pypto.npu_compat`); NPU-only torch_npu kernels fail clearly."""

import os
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")

SCRIPT = textwrap.dedent('''
    import os
    import sys
    import torch
    import torch_npu
    import pypto

    torch_npu.npu.config.allow_internal_format = True

    @pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
    def add_kernel(x: pypto.Tensor([], pypto.DT_FP32), y: pypto.Tensor([], pypto.DT_FP32),
                   out: pypto.Tensor([], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(16, 16)
        out[:] = pypto.exp(x) + y

    def main():
        device_id = int(os.environ.get("TILE_FWK_DEVICE_ID", 0))
        torch.npu.set_device(device_id)
        device = f"npu:{device_id}"
        x = torch.randn(20, 33, dtype=torch.float, device=device)
        y = torch.rand((20, 33), device=torch.device(device)).npu()
        out = torch.empty(x.shape, dtype=x.dtype, device=device)
        add_kernel(x, y, out)
        torch.npu.synchronize()
        torch.testing.assert_close(out.cpu(), (torch.exp(x) + y).cpu())
        # Tensors made for the NPU say so (models check it before asking torch_npu for a format);
        # so do those computed from them; .cpu() is a CPU tensor.
        assert out.device.type == "npu" and (x + 1).device.type == "npu" and out.is_npu
        assert out.cpu().device.type == "cpu" and x.to("cpu").device.type == "cpu"
        assert torch.ones(2).device.type == "cpu" and torch.ones(2).npu().device == torch.device("npu:0")
        w = torch_npu.npu_format_cast(torch.ones(4, 4, device=device), 29)
        assert w.device.type == "npu" and torch_npu.get_npu_format(w) == 29
        assert x.to("npu:0").device.type == "npu"
        print("OK", sys.argv[1:])

    if __name__ == "__main__":
        main()
''')


def run(args, cwd):
    env = dict(os.environ, TILE_FWK_DEVICE_ID="0")
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def pypto_run(tmp_path, name, text):
    """Writes a script and runs it with `pypto run` (the NPU device mapped to the CPU)."""
    script = tmp_path / name
    script.write_text(text)
    return run([sys.executable, "-m", "pypto.cli", "run", str(script)], tmp_path)


def assert_runs(tmp_path, name, text, marker):
    p = pypto_run(tmp_path, name, text)
    assert p.returncode == 0, p.stderr
    assert marker in p.stdout


def test_pypto_run_maps_the_npu_device_to_the_cpu(tmp_path):
    script = tmp_path / "npu_script.py"
    script.write_text(SCRIPT)
    p = run([sys.executable, "-m", "pypto.cli", "run", str(script), "--run_mode", "npu"], tmp_path)
    assert p.returncode == 0, p.stderr
    assert "OK ['--run_mode', 'npu']" in p.stdout


def test_pypto_run_passes_the_exit_status(tmp_path):
    script = tmp_path / "fails.py"
    script.write_text("import sys\nsys.exit(3)\n")
    assert run([sys.executable, "-m", "pypto.cli", "run", str(script)], tmp_path).returncode == 3
    script.write_text("raise ValueError('boom')\n")
    p = run([sys.executable, "-m", "pypto.cli", "run", str(script)], tmp_path)
    assert p.returncode != 0 and "ValueError: boom" in p.stderr


def test_pytest_plugin_runs_a_model_test_file(tmp_path):
    (tmp_path / "test_model.py").write_text(SCRIPT.replace("def main():", "def test_main():"))
    p = run([sys.executable, "-m", "pytest", "-q", "-p", "pypto.npu_compat", "-p", "no:cacheprovider",
             str(tmp_path / "test_model.py")], tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "1 passed" in p.stdout


def test_pytest_plugin_runs_the_tests_of_the_chip_stood_in_for(tmp_path):
    """As CANN PyPTO's conftest on a device: @pytest.mark.soc(...) names the chips a test is for
    (none: "910"); the others are skipped, with the reason. PYPTO_NPUARCH picks the chip."""
    (tmp_path / "test_socs.py").write_text(
        "import pytest\nimport pypto\n\n"
        "def test_any():\n    pass\n\n"
        "@pytest.mark.soc('910', '950')\ndef test_both():\n    pass\n\n"
        "@pytest.mark.soc('950')\ndef test_950():\n    assert pypto.platform.npuarch == 'DAV_3510'\n\n"
        "@pytest.mark.soc(['910'])\ndef test_910():\n    assert pypto.platform.npuarch == 'DAV_2201'\n")
    args = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "pypto.npu_compat", "-p", "no:cacheprovider",
            str(tmp_path / "test_socs.py")]
    p = run(args, tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "3 passed, 1 skipped" in p.stdout and "for NPU chips ['950']; pypto.npu_compat stands in for a 910" \
        in p.stdout
    env = dict(os.environ, TILE_FWK_DEVICE_ID="0", PYPTO_NPUARCH="DAV_3510")
    p = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "2 passed, 2 skipped" in p.stdout


def test_npu_only_kernels_fail_when_used(tmp_path):
    p = pypto_run(tmp_path, "npu_kernel.py",
                  "import torch, torch_npu\nf = torch_npu.npu_moe_gating_top_k\nf(torch.ones(2), torch.ones(2))\n")
    assert p.returncode != 0
    assert "torch_npu.npu_moe_gating_top_k is an NPU kernel" in p.stderr


GRAPH_SCRIPT = textwrap.dedent('''
    import torch
    import torch_npu
    import pypto

    @pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
    def scale(x: pypto.Tensor([], pypto.DT_FP32), out: pypto.Tensor([], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(8, 8)
        out[:] = x * 2.0

    x = torch.ones(8, 8, device="npu:0")
    out = torch.zeros(8, 8, device="npu:0")
    g = torch.npu.NPUGraph()
    with torch.npu.graph(g):
        scale(x, out)
    assert torch.equal(out, x * 2)
    x.fill_(3.0)  # new values in the captured input: the replay computes with them
    g.replay()
    assert torch.equal(out, torch.full((8, 8), 6.0))

    # PyPTO's aclgraph test: capture_begin / capture_end on a side stream, a Module moved with .npu()
    class Net(torch.nn.Module):
        def forward(self, a):
            res = torch.zeros(8, 8, device=a.device)
            scale(a + 1, res)
            return res

    net = Net().npu()
    assert isinstance(net, Net)
    assert not torch_npu.npu.is_current_stream_capturing()
    s = torch.npu.Stream()
    with torch.npu.stream(s):
        assert torch.npu.current_stream() is s
        g2 = torch_npu.npu.NPUGraph()
        g2.capture_begin()
        y = net(x)
        assert torch_npu.npu.is_current_stream_capturing()
        g2.capture_end()
    assert not torch_npu.npu.is_current_stream_capturing()
    torch_npu.npu.current_stream().wait_stream(s)
    assert torch.equal(y, torch.full((8, 8), 8.0)) and len(g2.calls) == 1
    y.zero_()
    g2.replay()  # the pypto call again, into the same buffer
    torch_npu.npu.current_stream().synchronize()
    assert torch.equal(y, torch.full((8, 8), 8.0))
    g2.reset()
    print("GRAPH OK")
''')


def test_npu_graph_capture_replays_the_pypto_calls(tmp_path):
    assert_runs(tmp_path, "graph_script.py", GRAPH_SCRIPT, "GRAPH OK")


def test_reference_npu_kernels_follow_their_formulas():
    """The torch_npu kernels model tests compute goldens with (pypto.npu_reference)."""
    from pypto import npu_reference as ref
    g = torch.Generator().manual_seed(3)
    x = (torch.randn(5, 64, generator=g) * 2).to(torch.bfloat16)
    x[2] = 0  # an all-zero token: scale 0, y 0 (no NaN)
    y, scale = ref.npu_dynamic_quant(x)
    assert y.dtype == torch.int8 and scale.shape == (5,) and scale.dtype == torch.float32
    xf = x.float()
    torch.testing.assert_close(scale, xf.abs().amax(-1) / 127)
    assert torch.equal(y[2], torch.zeros(64, dtype=torch.int8))
    nz = scale > 0
    want = torch.round(xf[nz] / scale[nz, None]).to(torch.int8)
    assert torch.equal(y[nz], want) and int(y.abs().max()) == 127
    with pytest.raises(NotImplementedError, match="group_index"):
        ref.npu_dynamic_quant(x, group_index=torch.zeros(1, dtype=torch.int32))

    w = torch.randint(-128, 128, (64, 24), generator=g, dtype=torch.int8)
    ws = torch.rand(24, generator=g) * 0.01
    bias = torch.randint(-1000, 1000, (24,), generator=g, dtype=torch.int32)
    out = ref.npu_quant_matmul(y, w, ws, pertoken_scale=scale, bias=bias, output_dtype=torch.bfloat16)
    acc = y.double() @ w.double() + bias.double()
    want = ((acc.float() * ws) * scale[:, None]).to(torch.bfloat16)
    assert out.dtype == torch.bfloat16 and torch.equal(out, want)

    h = torch.randn(3, 10, generator=g).to(torch.bfloat16)
    a, b = h.float().chunk(2, -1)
    assert torch.equal(ref.npu_swiglu(h), (torch.nn.functional.silu(a) * b).to(torch.bfloat16))

    s = torch.rand(10, generator=g) + 0.5
    zp = torch.full((10,), 3.0)
    q = ref.npu_quantize(h, s, zp, torch.qint8, -1, False)
    assert q.dtype == torch.int8
    assert torch.equal(q, torch.round(h.float() * s + zp).clamp(-128, 127).to(torch.int8))
    q = ref.npu_quantize(h * 100, s, None, torch.quint8, -1, True)
    assert q.dtype == torch.uint8 and int(q.min()) >= 0


TOPK_SCRIPT = textwrap.dedent('''
    import torch
    import torch_npu

    x = torch.tensor([[0.5, 1.0, 0.25, 1.0, 0.75, 1.0]], device="npu:0")
    v, i = torch.topk(x, 4, dim=-1, sorted=False)
    assert i.tolist() == [[1, 3, 5, 4]], i  # in order, equal values by index, as the NPU gives them
    assert v.device.type == "npu"
    v, i = x.topk(2, largest=False)
    assert i.tolist() == [[2, 0]], i
    print("TOPK OK")
''')


def test_topk_of_npu_tensors_orders_as_the_npu(tmp_path):
    assert_runs(tmp_path, "topk_script.py", TOPK_SCRIPT, "TOPK OK")


COMPILE_SCRIPT = textwrap.dedent('''
    import torch
    import torch_npu
    from torch._subclasses.fake_tensor import FakeTensor
    import pypto

    @pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
    def twice(x: pypto.Tensor([], pypto.DT_FP32), out: pypto.Tensor([], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(8, 8)
        out[:] = x * 2.0

    @torch.compiler.allow_in_graph
    def op(x):
        if isinstance(x, FakeTensor):  # dynamo's trace: only the shape matters
            return torch.zeros(x.shape, dtype=x.dtype, device=f"{x.device}")
        out = torch.empty(x.shape, dtype=x.dtype, device=f"{x.device}")
        twice(x, out)
        return out

    # The NPU device is the CPU: torch.compile must not look for its streams.
    assert not torch.accelerator.is_available()
    x = torch.rand(8, 8, device="npu:0")
    y = torch.compile(lambda t: op(t) + 1.0, backend="eager")(x)
    assert torch.equal(y.cpu(), (x * 2 + 1).cpu())
    print("COMPILE OK")
''')


def test_torch_compile_with_npu_tensors(tmp_path):
    # CANN's aclgraph example compiles a module that launches a pypto kernel on NPU tensors.
    assert_runs(tmp_path, "compile_script.py", COMPILE_SCRIPT, "COMPILE OK")


def test_a_child_process_that_imports_torch_npu_gets_the_mapping(tmp_path):
    """PyPTO's test_onboard_dump.py runs its kernel in a subprocess that imports torch_npu."""
    child = tmp_path / "child.py"
    child.write_text(textwrap.dedent('''\
        import torch
        import torch_npu
        import pypto

        @pypto.jit
        def f(x: pypto.Tensor((4, 8), pypto.DT_FP32)):
            return x * 2.0

        torch.npu.set_device(0)
        x = torch.ones(4, 8, device="npu:0")
        assert x.device.type == "npu" and torch_npu.__version__.startswith("cpu")
        assert torch.equal(f(x).cpu(), torch.full((4, 8), 2.0))
        print("CHILD_OK")
        '''))
    assert_runs(tmp_path, "parent.py", textwrap.dedent(f'''\
        import subprocess
        import sys
        p = subprocess.run([sys.executable, {str(child)!r}], capture_output=True, text=True)
        print(p.stdout, p.stderr)
        sys.exit(p.returncode)
        '''), "CHILD_OK")
