"""pypto.info(): the CPU level the kernels compile for and the cube path per dtype, and
PYPTO_CPU_ISA forcing a lower level (checked in a child process: the level is read at start)."""

import json
import os
import subprocess
import sys

import pypto


def test_info_names_the_level_and_the_cube_path_of_each_dtype():
    i = pypto.info()
    assert i["version"] == pypto.__version__
    assert i["isa"] in i["levels"] and i["best"] in i["levels"]
    for dt in ("fp32", "fp16", "bf16", "int8"):
        assert isinstance(i[dt], str) and i[dt], dt


def test_pypto_cpu_isa_forces_a_lower_level():
    env = dict(os.environ, PYPTO_CPU_ISA="avx2")
    out = subprocess.run([sys.executable, "-c", "import json, pypto; print(json.dumps(pypto.info()))"], env=env,
                         capture_output=True, text=True, check=True)
    i = json.loads(out.stdout.strip().splitlines()[-1])
    if "avx2" not in pypto.info()["features"].split():
        assert i["isa"] != "avx2"  # a level the CPU lacks is not taken (the note says why)
        return
    assert i["isa"] == "avx2" and i["requested"] == "avx2"
    assert i["int8"].startswith("avx2") and "zmm" not in i["fp32"]
