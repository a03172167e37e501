"""Shared helpers for the PyPTO Python tests (not a test module)."""

import numpy as np

RTOL = 1e-5
ATOL = 1e-6


def rng(seed=0):
    return np.random.default_rng(seed)


def randn(r, shape, dtype=np.float32):
    return r.standard_normal(shape).astype(dtype)


def uniform(r, shape, lo, hi, dtype=np.float32):
    return r.uniform(lo, hi, size=shape).astype(dtype)


def assert_close(got, ref, rtol=RTOL, atol=ATOL):
    got = np.asarray(got)
    ref = np.asarray(ref)
    assert got.shape == ref.shape, f"shape {got.shape} != {ref.shape}"
    np.testing.assert_allclose(got.astype(np.float64), ref.astype(np.float64), rtol=rtol, atol=atol)


def run_both(fn, *args):
    """fn(*args) with the interpreter and with the native backend: (interp, cpu)."""
    import pypto
    outs = {}
    for mode in ("interp", "cpu"):
        pypto.set_runtime_options(run_mode=mode)
        try:
            outs[mode] = fn(*args)
        finally:
            pypto.set_runtime_options(run_mode="cpu")
    return outs["interp"], outs["cpu"]


MODES = ["cpu", "interp"]


def run_in(mode, fn, *args, **kwargs):
    """fn(*args, **kwargs) with run_mode `mode` ("interp" or "cpu")."""
    import pypto
    pypto.set_runtime_options(run_mode=mode)
    try:
        return fn(*args, **kwargs)
    finally:
        pypto.set_runtime_options(run_mode="cpu")
