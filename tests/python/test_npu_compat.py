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
        torch.testing.assert_close(out.cpu(), torch.exp(x) + y)
        assert out.device.type == "cpu" and x.to("npu:0") is not None
        print("OK", sys.argv[1:])

    if __name__ == "__main__":
        main()
''')


def run(args, cwd):
    env = dict(os.environ, TILE_FWK_DEVICE_ID="0")
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


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


def test_npu_only_kernels_fail_when_used(tmp_path):
    script = tmp_path / "npu_kernel.py"
    script.write_text("import torch, torch_npu\nf = torch_npu.npu_rms_norm\nf(torch.ones(2), torch.ones(2))\n")
    p = run([sys.executable, "-m", "pypto.cli", "run", str(script)], tmp_path)
    assert p.returncode != 0
    assert "torch_npu.npu_rms_norm is an NPU kernel" in p.stderr


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
    print("GRAPH OK")
''')


def test_npu_graph_capture_replays_the_pypto_calls(tmp_path):
    script = tmp_path / "graph_script.py"
    script.write_text(GRAPH_SCRIPT)
    p = run([sys.executable, "-m", "pypto.cli", "run", str(script)], tmp_path)
    assert p.returncode == 0, p.stderr
    assert "GRAPH OK" in p.stdout
