"""A damaged kernel cache heals itself: a truncated or overwritten library, or a damaged
precompiled header, is detected, compiled again with a warning, and never loaded (dlopen of a
damaged ELF file can crash the process). Each case runs fresh processes, as a user would."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PROGRAM = textwrap.dedent("""
    import sys, numpy as np, pypto
    @pypto.jit
    def f(x: pypto.Tensor((16, 40), pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(8, 40)
        return pypto.exp(x) * SCALE + 1.0
    x = np.linspace(-1, 1, 640, dtype=np.float32).reshape(16, 40)
    ok = np.allclose(f(x), np.exp(x) * SCALE + 1, rtol=1e-5)
    print("OK" if ok else "WRONG")
    sys.exit(0 if ok else 1)
""")


def run(cache: Path, scale: float = 2.0, wait: bool = True, support: "Path | None" = None):
    # The cache's own precompiled header is what these tests damage: no install-time one
    # (`pypto prebuild`) unless `support` names it.
    env = dict(os.environ, PYPTO_CACHE_DIR=str(cache), PYPTO_SUPPORT_DIR=str(support or cache / "no-support"))
    args = [sys.executable, "-c", PROGRAM.replace("SCALE", repr(scale))]
    p = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return p.communicate(timeout=300) + (p.returncode,) if wait else p


def library(cache: Path) -> Path:
    (so,) = (cache / "kernels").glob("*.so")
    return so


@pytest.fixture
def warm(tmp_path):
    out, err, rc = run(tmp_path)
    assert rc == 0 and out.strip() == "OK", err
    return tmp_path


@pytest.mark.parametrize("damage", ["truncate", "random", "empty"])
def test_damaged_library_is_compiled_again(warm, damage):
    so = library(warm)
    size = so.stat().st_size
    if damage == "truncate":
        os.truncate(so, size // 3)
    elif damage == "random":
        so.write_bytes(os.urandom(size))
    else:
        so.write_bytes(b"")
    out, err, rc = run(warm)
    assert rc == 0 and out.strip() == "OK", err
    assert "is damaged; compiling it again" in err
    out, err, rc = run(warm)  # healed: no warning the next time
    assert rc == 0 and "damaged" not in err, err


def test_two_processes_race_on_a_damaged_entry(warm):
    so = library(warm)
    os.truncate(so, so.stat().st_size // 2)
    procs = [run(warm, wait=False) for _ in range(2)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0 and out.strip() == "OK", err
    out, err, rc = run(warm)
    assert rc == 0 and "damaged" not in err


def test_damaged_precompiled_header_is_rebuilt(warm):
    gchs = list(warm.glob("pch-*/pypto/*.gch"))
    if not gchs:
        pytest.skip("the compiler made no precompiled header")
    os.truncate(gchs[0], 1000)
    out, err, rc = run(warm, scale=3.0)  # a new kernel: a compile that would use the header
    assert rc == 0 and out.strip() == "OK", err
    assert "precompiled header" in err and "damaged" in err
    out, err, rc = run(warm, scale=4.0)
    assert rc == 0 and "damaged" not in err, err


def test_no_temporary_files_are_left(warm):
    run(warm, scale=5.0)
    names = [p.name for p in (warm / "kernels").iterdir()]
    # One library and its source per kernel module, nothing with a pid or timestamp.
    assert all(n.count(".") == 1 for n in names), names


WRAPPER = """#!/bin/sh
# A compiler that fails the way the environment says, else the real one. (Sanitizer runs
# preload their runtime into every child; ps and kill need none.)
unset LD_PRELOAD
if [ "$PYPTO_TEST_FAULT" = kill ] && [ "$1" != --version ]; then
  python_pid=$(cut -d' ' -f4 /proc/$PPID/stat)  # the parent of the shell popen started
  kill -9 "$python_pid"; sleep 5; exit 1
fi
if [ "$PYPTO_TEST_FAULT" = full ] && [ "$1" != --version ]; then
  for a in "$@"; do prev_o=$o; o=$a; [ "$prev_o" = -o ] && out=$a; done
  [ -n "$out" ] && head -c 100 /dev/urandom > "$out"
  echo "fatal error: cannot write: No space left on device" >&2; exit 1
fi
exec c++ "$@"
"""


@pytest.mark.parametrize("fault", ["kill", "full"])
def test_a_compile_killed_or_out_of_disk_leaves_nothing_used(tmp_path, fault):
    cxx = tmp_path / "cxx"
    cxx.write_text(WRAPPER)
    cxx.chmod(0o755)
    cache = tmp_path / "cache"
    env = dict(os.environ, PYPTO_CACHE_DIR=str(cache), PYPTO_CXX=str(cxx), PYPTO_TEST_FAULT=fault)
    p = subprocess.run([sys.executable, "-c", PROGRAM.replace("SCALE", "2.0")], env=env, capture_output=True,
                       text=True, timeout=300)
    if fault == "kill":
        assert p.returncode == -9, p.stderr  # the process died mid-compile
    else:
        assert p.returncode != 0 and "No space left on device" in p.stderr, p.stderr
        assert "compiling the generated kernels failed" in p.stderr
    assert not list((cache / "kernels").glob("*.so")) if (cache / "kernels").exists() else True
    env.pop("PYPTO_TEST_FAULT")
    p = subprocess.run([sys.executable, "-c", PROGRAM.replace("SCALE", "2.0")], env=env, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0 and p.stdout.strip() == "OK", p.stderr


def test_prebuilt_kernel_support_serves_an_empty_cache(tmp_path):
    # `pypto prebuild` (scripts/install.sh runs it) compiles what every kernel includes once;
    # a process with an empty kernel cache then compiles its first kernel against it and
    # makes no precompiled header of its own.
    support = tmp_path / "support"
    env = dict(os.environ, PYPTO_SUPPORT_DIR=str(support))
    p = subprocess.run([sys.executable, "-m", "pypto.cli", "prebuild"], env=env, capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0 and "kernel support for this CPU" in p.stdout, p.stderr
    gchs = list(support.glob("pch-*/pypto/kernel_support.hpp.gch"))
    if not gchs:
        pytest.skip("the compiler made no precompiled header")
    cache = tmp_path / "cache"
    out, err, rc = run(cache, support=support)
    assert rc == 0 and out.strip() == "OK", err
    assert not list(cache.glob("pch-*")), "the first kernel built its own precompiled header"
    again = subprocess.run([sys.executable, "-m", "pypto.cli", "prebuild"], env=env, capture_output=True, text=True,
                           timeout=600)
    assert again.returncode == 0 and list(support.glob("pch-*")) == [gchs[0].parent.parent]
