"""PyPTO's per-pass configuration (set_pass_config / get_pass_config(s) and the defaults):
KEY_DUMP_GRAPH dumps the named passes of this compiler, PyPTO's own pass names are recorded."""

import json
import os

import numpy as np
import pytest

import pypto
from pypto import pass_config

KEY = pypto.PassConfigKey.KEY_DUMP_GRAPH


@pytest.fixture(autouse=True)
def _clean():
    pass_config._configs.clear()
    pass_config._defaults.clear()
    yield
    pass_config._configs.clear()
    pass_config._defaults.clear()
    pypto.reset_options()


def _compile_into(tmp_path):
    pypto.set_debug_options(dump_dir=str(tmp_path))

    @pypto.jit
    def kernel(x: pypto.Tensor((4, 8), pypto.DT_FP32)):
        return x * 2.0

    np.testing.assert_array_equal(kernel(np.ones((4, 8), np.float32)), np.full((4, 8), 2.0, np.float32))
    return tmp_path / "kernel"


def test_named_passes_are_dumped_and_pypto_names_recorded(tmp_path):
    pypto.set_pass_config("PVC2_OOO", "ExpandTiles", KEY, True)
    pypto.set_pass_config("PVC2_OOO", "fuse_instructions", KEY, True)
    pypto.set_pass_config("PVC2_OOO", "RemoveRedundantReshape", KEY, True)  # PyPTO's pass: recorded
    out = _compile_into(tmp_path)
    dumped = sorted(os.listdir(out / "passes"))
    assert [f for f in dumped if f.endswith(".txt")] == ["02_expand_tiles.txt", "04_fuse_instructions.txt"]
    recorded = json.loads((out / "options.json").read_text())["pass_config"]["passes"]
    assert {"strategy": "PVC2_OOO", "identifier": "RemoveRedundantReshape", "key": "KEY_DUMP_GRAPH",
            "value": True} in recorded


def test_the_default_dumps_every_pass(tmp_path):
    assert pypto.get_pass_default_config(KEY, False) is False
    pypto.set_pass_default_config(KEY, True)
    assert pypto.get_pass_default_config(KEY, False) is True
    out = _compile_into(tmp_path)
    assert len([f for f in os.listdir(out / "passes") if f.endswith(".txt")]) == len(pass_config.PASSES)


def test_getters_and_errors():
    assert pypto.get_pass_config("PVC2_OOO", "ExpandTiles", KEY, True) is True  # not set: the default given
    pypto.set_pass_config("PVC2_OOO", "ExpandTiles", KEY, False)
    assert pypto.get_pass_config("PVC2_OOO", "ExpandTiles", KEY, True) is False
    cfg = pypto.get_pass_configs("PVC2_OOO", "ExpandTiles")
    assert (cfg.dumpGraph, cfg.printGraph, cfg.disablePass, cfg.preCheck) == (False, False, False, False)
    with pytest.raises(pypto.UserError, match="PassConfigKey"):
        pypto.set_pass_config("PVC2_OOO", "ExpandTiles", "KEY_DUMP_GRAPH", True)
    with pytest.raises(pypto.UserError, match="True or False"):
        pypto.set_pass_default_config(KEY, 1)
    with pytest.raises(pypto.UserError, match="strings"):
        pypto.get_pass_configs("PVC2_OOO", None)
