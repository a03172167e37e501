"""The installed C++ package: `python -m pypto --cmake-dir` points at pyptoConfig.cmake, and the
C++ examples (examples/cpp/*, each a CMake project using find_package(pypto)) configure, build
and run against it, checking their own results."""

import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = sorted(d for d in os.listdir(os.path.join(ROOT, "examples", "cpp"))
                  if os.path.isfile(os.path.join(ROOT, "examples", "cpp", d, "CMakeLists.txt")))


def pypto_dir(flag):
    out = subprocess.run([sys.executable, "-m", "pypto", flag], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_the_package_has_its_cmake_config_headers_and_library():
    cmake_dir = pypto_dir("--cmake-dir")
    assert os.path.isfile(os.path.join(cmake_dir, "pyptoConfig.cmake"))
    assert os.path.isfile(os.path.join(pypto_dir("--include-dir"), "pypto", "pypto.h"))
    assert os.path.isfile(os.path.join(pypto_dir("--lib-dir"), "libpypto_core.a"))


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is not installed")
@pytest.mark.skipif(bool(os.environ.get("PYPTO_SANITIZED")),
                    reason="the sanitizer build's library needs the sanitizer runtime linked into the example")
@pytest.mark.parametrize("name", EXAMPLES)
def test_cpp_example_builds_and_passes_its_check(name, tmp_path):
    src = os.path.join(ROOT, "examples", "cpp", name)
    gen = ["-G", "Ninja"] if shutil.which("ninja") else []
    subprocess.run(["cmake", "-S", src, "-B", str(tmp_path), *gen, f"-Dpypto_DIR={pypto_dir('--cmake-dir')}",
                    "-DCMAKE_BUILD_TYPE=Release"], check=True, capture_output=True, text=True)
    build = subprocess.run(["cmake", "--build", str(tmp_path)], capture_output=True, text=True)
    assert build.returncode == 0, build.stdout + build.stderr
    run = subprocess.run([os.path.join(str(tmp_path), name)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "OK" in run.stdout
