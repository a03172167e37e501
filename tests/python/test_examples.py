"""Every program in examples/ runs in quick mode (`--quick`: small sizes, still checked against
numpy) as a subprocess and exits 0; with PYPTO_EXAMPLE_PERTURB=1 (one output changed before
the check) each exits non-zero, so the checks can fail."""

import glob
import os
import subprocess
import sys

import pytest

EXAMPLES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")
EXAMPLES = sorted(os.path.basename(p) for p in glob.glob(os.path.join(EXAMPLES_DIR, "*.py")))


def run_example(name, perturb):
    env = dict(os.environ)
    env.pop("PYPTO_EXAMPLE_PERTURB", None)
    if perturb:
        env["PYPTO_EXAMPLE_PERTURB"] = "1"
    return subprocess.run([sys.executable, os.path.join(EXAMPLES_DIR, name), "--quick"], env=env,
                          capture_output=True, text=True, timeout=600)


def test_examples_found():
    assert {"softmax_demo.py", "matmul_ffn.py", "flash_attention.py", "indexer_prolog.py", "tile_softmax.py",
            "tile_flash_attention.py", "asc_vadd.py", "asc_softmax.py",
            "asc_matmul.py"} <= set(EXAMPLES)


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_quick_passes(name):
    r = run_example(name, perturb=False)
    assert r.returncode == 0, f"{name} --quick exited {r.returncode}\n{r.stdout}\n{r.stderr}"
    assert "MISMATCH" not in r.stdout and "OK" in r.stdout, r.stdout


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_check_can_fail(name):
    r = run_example(name, perturb=True)
    assert r.returncode != 0, f"{name} --quick with PYPTO_EXAMPLE_PERTURB=1 exited 0\n{r.stdout}"
    assert "MISMATCH" in r.stdout and "FAILED" in r.stderr, r.stdout + r.stderr
    assert "Traceback" not in r.stderr, r.stderr  # the check failed, not the program
