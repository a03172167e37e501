"""pypto.runtime's workers (hw-native-sys's names): ChipWorker runs a compiled @pl.jit program
through a registered handle, exactly that program, in place; DistributedWorker runs several
@pl.jit.host programs on one set of ranks with worker-resident DeviceTensors shared by all of
them. Results against numpy / torch; freed tensors, closed workers and wrong arguments are refused.

The pl functions are module-level: a rank process finds them by module and name."""

from __future__ import annotations

import glob
import os

import numpy as np
import pytest
import torch

import pypto
import pypto.language as pl
from pypto.compat.runtime_worker import ChipWorker, DeviceTensor, RegistrationHandle
from pypto.dist import DistributedError
from pypto.ir.distributed_compiled_program import DistributedCompiledProgram, DistributedConfig
from pypto.runtime import DistributedWorker, RunConfig

R, C = 16, 32


@pl.jit
def _add(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.add(pl.load(a, [0, 0], [R, C]), pl.load(b, [0, 0], [R, C]))
        pl.store(t, [0, 0], c)
    return c


@pl.jit
def _mul(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.mul(pl.load(a, [0, 0], [R, C]), pl.load(b, [0, 0], [R, C]))
        pl.store(t, [0, 0], c)
    return c


@pl.jit
def _scale(x: pl.Tensor[[R, C], pl.FP32], y: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [R, C])
        pl.store(pl.add(t, t), [0, 0], y)
    return y


def _sample():
    return torch.zeros((R, C), dtype=torch.float32)


def _rand(seed: int) -> torch.Tensor:
    return torch.from_numpy(np.random.default_rng(seed).standard_normal((R, C)).astype(np.float32))


# --- ChipWorker ------------------------------------------------------------------------------------

def test_handle_runs_exactly_the_registered_program_in_place(monkeypatch):
    compiled = _add.compile(_sample(), _sample(), _sample())
    with ChipWorker(config=RunConfig()) as w:
        h = w.register(compiled)
        assert isinstance(h, RegistrationHandle) and h.compiled is compiled and not h.closed
        # Nothing is traced or compiled from here on: the handle runs the registered program.
        monkeypatch.setattr(_add, "_compile", lambda *a, **k: pytest.fail("the handle traced again"))
        a, b, out = _rand(1), _rand(2), torch.zeros((R, C))
        assert h(a, b, out) is None  # an in-place call returns nothing (upstream's contract)
        torch.testing.assert_close(out, a + b)
        an, bn, on = a.numpy() * 3, b.numpy() - 1, np.zeros((R, C), np.float32)  # numpy arrays run it too
        h(an, bn, on)
        np.testing.assert_allclose(on, an + bn, rtol=1e-6)
        w.run(compiled, b, b, out)  # run() without a handle: the same program
        torch.testing.assert_close(out, b + b)


def test_device_tensors_as_inputs_and_outputs():
    compiled = _mul.compile(_sample(), _sample(), _sample())
    with ChipWorker() as w:
        weight = _rand(3)
        w_dev = w.alloc_tensor(weight.shape, weight.dtype, init=weight)
        out_dev = w.alloc_tensor((R, C), torch.float32)
        assert isinstance(w_dev, DeviceTensor) and w_dev.shape == (R, C) and w_dev.nbytes == R * C * 4
        weight.zero_()  # init was copied: the resident tensor keeps its own bytes
        h = w.register(compiled)
        for step in range(3):
            x = torch.full((R, C), float(step + 1))
            h(x, w_dev, out_dev)  # a resident input and a resident output
            back = torch.empty((R, C))
            w.copy_from(back.data_ptr(), out_dev.data_ptr, out_dev.nbytes)
            torch.testing.assert_close(back, x * _rand(3))
        # numpy dtypes work as well
        n_dev = w.alloc_tensor((R, C), np.float32, init=np.full((R, C), 2.0, np.float32))
        res = np.zeros((R, C), np.float32)
        _add_c = _add.compile(np.zeros((R, C), np.float32), np.zeros((R, C), np.float32), res)
        w.run(_add_c, n_dev, n_dev, res)
        np.testing.assert_array_equal(res, 4.0)


def test_register_counts_one_load_per_new_program():
    add_c = _add.compile(_sample(), _sample(), _sample())
    mul_c = _mul.compile(_sample(), _sample(), _sample())
    w = ChipWorker(config=RunConfig())
    try:
        assert w.aicpu_dlopen_count == 0
        h1 = w.register(add_c)
        assert w.aicpu_dlopen_count == 1
        h2 = w.register(add_c)  # the same program again: an alias of the registration
        assert w.aicpu_dlopen_count == 1 and h2.cid == h1.cid
        a = _rand(4)
        for _ in range(5):
            h1(a, a, a.clone())
        assert w.aicpu_dlopen_count == 1
        w.run(mul_c, a, a, a.clone())  # a first run registers implicitly
        assert w.aicpu_dlopen_count == 2
        w.register(mul_c)
        assert w.aicpu_dlopen_count == 2
        w.close()
        w.init()  # a worker opened again starts with no registrations
        assert w.aicpu_dlopen_count == 0 and h1.closed
    finally:
        w.close()


def test_freed_tensor_and_closed_worker_are_refused():
    compiled = _add.compile(_sample(), _sample(), _sample())
    w = ChipWorker()
    h = w.register(compiled)
    t = w.alloc_tensor((R, C), torch.float32, init=torch.ones((R, C)))
    w.free_tensor(t)
    w.free_tensor(t)  # a second free does nothing
    with pytest.raises(pypto.UserError, match=r"parameter 'b': DeviceTensor\(.*\) is not a live tensor of this "
                       r"ChipWorker: it was freed"):
        h(torch.ones((R, C)), t, torch.zeros((R, C)))
    other = ChipWorker()
    foreign = other.alloc_tensor((R, C), torch.float32)
    with pytest.raises(pypto.UserError, match="another worker allocated it"):
        h(foreign, foreign, torch.zeros((R, C)))
    other.close()
    w.close()
    assert h.closed and not w.initialized
    with pytest.raises(RuntimeError, match="unregistered"):
        h(torch.ones((R, C)), torch.ones((R, C)), torch.zeros((R, C)))
    with pytest.raises(RuntimeError, match=r"ChipWorker.register\(\) requires an initialized ChipWorker"):
        w.register(compiled)
    with pytest.raises(RuntimeError, match=r"ChipWorker.alloc_tensor\(\) requires an initialized"):
        w.alloc_tensor((R, C), torch.float32)
    with ChipWorker() as w2:
        h2 = w2.register(compiled)
    assert h2.closed and not w2.initialized
    with pytest.raises(ValueError, match="level=2"):
        ChipWorker(level=3)


def test_wrong_arguments_name_the_program_and_the_shapes():
    compiled = _add.compile(_sample(), _sample(), _sample())
    with ChipWorker() as w:
        h = w.register(compiled)
        a = torch.ones((R, C))
        with pytest.raises(pypto.UserError, match=r"(?s)_add.*missing a required argument: 'c'.*the compiled program "
                           r"takes a: fp32\[16, 32\], b: fp32\[16, 32\], c: fp32\[16, 32\]"):
            h(a, a)
        with pytest.raises(pypto.UserError, match=r"@_add: the compiled program takes \(a: fp32\[16, 32\], .*\), "
                           r"called with \(a: int32\[16, 32\], b: fp32\[16, 32\], c: fp32\[16, 32\]\)"):
            h(a.int(), a, a.clone())
        with pytest.raises(pypto.UserError, match=r"(?s)parameter 'a' got a torch tensor of dtype torch.float64 of "
                           r"shape \(16, 32\), a dtype pypto does not support.*the compiled program takes a: fp32"):
            h(a.double(), a, a.clone())
        with pytest.raises(pypto.UserError, match=r"called with \(a: fp32\[8, 8\], b: fp32\[8, 8\], c: fp32\[8, 8\]\)"):
            h(torch.ones((8, 8)), torch.ones((8, 8)), torch.zeros((8, 8)))
        sc = w.register(_scale.compile(_sample(), _sample()))
        with pytest.raises(pypto.UserError, match=r"(?s)@_scale: parameter 'x' expects dtype fp32, got a torch "
                           r"tensor of dtype torch.int32 .* of shape \(16, 32\).*the compiled program takes x: "
                           r"fp32\[16, 32\]"):
            sc(torch.ones((R, C), dtype=torch.int32), torch.zeros((R, C)))
        with pytest.raises(ValueError, match=r"init must have shape=\(16, 32\) dtype=torch.float32"):
            w.alloc_tensor((R, C), torch.float32, init=torch.ones((R, C), dtype=torch.float64))


@pypto.jit
def _plus(a: pypto.Tensor((R, C), pypto.DT_FP32), b: pypto.Tensor((R, C), pypto.DT_FP32)):
    return a + b


def test_a_computed_result_is_returned_and_device_tensors_are_checked():
    compiled = _plus.compile(np.zeros((R, C), np.float32), np.zeros((R, C), np.float32))  # a @pypto.jit program
    with ChipWorker() as w:
        d = w.alloc_tensor((R, C), np.float32, init=np.full((R, C), 2.0, np.float32))
        h = w.register(compiled)
        r = h(np.ones((R, C), np.float32), d)
        assert isinstance(r, np.ndarray)
        np.testing.assert_array_equal(r, 3.0)
        r = h(torch.ones((R, C)), d)  # torch in, torch out
        assert isinstance(r, torch.Tensor) and torch.equal(r, torch.full((R, C), 3.0))
    with pytest.raises(ValueError, match="must be all positive"):
        DeviceTensor(0x1000, (4, 0), torch.float32)
    with pytest.raises(AttributeError, match="immutable"):
        d.shape = (1,)
    with pytest.raises(TypeError, match="made by hand"), ChipWorker() as w:
        w.run(compiled, np.ones((R, C), np.float32), DeviceTensor(0x1000, (R, C), np.float32))


def test_raw_memory_round_trip():
    with ChipWorker() as w:
        src = np.arange(64, dtype=np.int32)
        ptr = w.malloc(src.nbytes)
        w.copy_to(ptr, src.ctypes.data, src.nbytes)
        back = np.zeros_like(src)
        w.copy_from(back.ctypes.data, ptr, src.nbytes)
        np.testing.assert_array_equal(back, src)
        with pytest.raises(ValueError, match="requires an allocation base"):
            w.copy_from(back.ctypes.data, ptr + 4, 4)
        with pytest.raises(ValueError, match="at most the allocation's 256"):
            w.copy_from(back.ctypes.data, ptr, 512)
        w.free(ptr)
        with pytest.raises(ValueError, match="requires an allocation base"):
            w.free(ptr)


# --- DistributedWorker ----------------------------------------------------------------------------

@pl.jit
def _fill_chip(src: pl.Tensor, kv: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(src, [0, 0], [R, C])
        pl.store(pl.add(t, t), [0, 0], kv)
    return kv


@pl.jit
def _read_chip(tok: pl.Tensor, kv: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.add(pl.load(tok, [0, 0], [R, C]), pl.load(kv, [0, 0], [R, C]))
        pl.store(t, [0, 0], out)
    return out


@pl.jit
def _bump_chip(kv: pl.InOut[pl.Tensor], fail: bool):
    if fail:
        raise ValueError("asked to fail")
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(kv, [0, 0], [R, C])
        pl.store(pl.add(t, t), [0, 0], kv)
    return kv


@pl.jit.host
def _prefill(src: pl.Tensor, kv: pl.Out[pl.Tensor]):
    _fill_chip(src, kv)  # no device=: rank 0


@pl.jit.host
def _decode(tok: pl.Tensor, kv: pl.Tensor, out: pl.Out[pl.Tensor]):
    _read_chip(tok, kv, out)


@pl.jit.host
def _bump(kv: pl.InOut[pl.Tensor], fail: bool):
    _bump_chip(kv, fail)


@pl.jit.host
def _prefill_ranks(src: pl.Tensor, kv: pl.Out[pl.Tensor]):
    for r in range(2):
        _fill_chip(src[r], kv[r], device=r)


@pl.jit.host
def _decode_swapped(tok: pl.Tensor, kv: pl.Tensor, out: pl.Out[pl.Tensor]):
    for r in range(2):  # each rank reads the part of the cache the other rank wrote
        _read_chip(tok[r], kv[1 - r], out[r], device=r)


def _cfg(n: int = 1) -> RunConfig:
    return RunConfig(distributed_config=DistributedConfig(device_ids=list(range(n)), num_sub_workers=0))


def _resident_segments() -> list:
    return glob.glob(f"/dev/shm/pypto-{os.getpid()}-resident-*")


def test_resident_kv_cache_survives_across_two_programs():
    src = np.random.default_rng(5).standard_normal((R, C)).astype(np.float32)
    tok, out = np.zeros((R, C), np.float32), np.zeros((R, C), np.float32)
    prefill_c = _prefill.compile(src, np.zeros_like(src), config=_cfg())
    decode_c = _decode.compile(tok, tok, out, config=_cfg())
    assert isinstance(prefill_c, DistributedCompiledProgram)
    with DistributedWorker([prefill_c, decode_c]) as rt:
        kv = rt.alloc_tensor((R, C), torch.float32)
        assert len(_resident_segments()) == 1
        rt.run(prefill_c, src, kv)
        assert not _resident_segments()  # unlinked once the ranks mapped it
        for step in range(3):
            tok[...] = step
            rt.run(decode_c, tok, kv, out)
            np.testing.assert_allclose(out, 2 * src + step, rtol=1e-6)
        back = torch.empty((R, C))
        rt.copy_from(back.data_ptr(), kv.data_ptr, kv.nbytes)
        np.testing.assert_allclose(back.numpy(), 2 * src, rtol=1e-6)
        with pytest.raises(TypeError, match=r"rt\(\*args\) is ambiguous.*rt.run\(compiled, \*args\)"):
            rt(tok, kv, out)
        with pytest.raises(pypto.UserError, match=r"@pl.jit.host _decode\(tok.*missing a required argument: "
                           r"'out' \(called with 2 arguments: float32\[16, 32\], DeviceTensor float32\[16, 32\]\)"):
            rt.run(decode_c, tok, kv)
        with pytest.raises(pypto.UserError, match="runs only on the worker that allocated it"):
            decode_c(tok, kv, out)
        rt.free_tensor(kv)
        with pytest.raises(pypto.UserError, match=r"parameter 'kv': DeviceTensor\(.*\) is not a live tensor of this "
                           "DistributedWorker"):
            rt.run(decode_c, tok, kv, out)
        # the symmetric form: one worker for both programs
    with prefill_c.prepare(extra_compiled=[decode_c]) as rt2:
        kv2 = rt2.alloc_tensor((R, C), np.float32, init=np.full((R, C), 1.5, np.float32))
        tok[...] = 1
        rt2.run(decode_c, tok, kv2, out)
        np.testing.assert_array_equal(out, 2.5)
    assert not _resident_segments()
    with pytest.raises(RuntimeError, match=r"DistributedWorker.run\(\) called after close\(\)"):
        rt2.run(decode_c, tok, kv2, out)
    with pytest.raises(RuntimeError, match=r"DistributedWorker.alloc_tensor\(\) called after close\(\)"):
        rt2.alloc_tensor((R, C), torch.float32)


def test_resident_tensor_is_every_ranks_memory():
    src = np.random.default_rng(6).standard_normal((2, R, C)).astype(np.float32)
    tok = np.random.default_rng(7).standard_normal((2, R, C)).astype(np.float32)
    out = np.zeros_like(tok)
    prefill_c = _prefill_ranks.compile(src, src, config=_cfg(2))
    decode_c = _decode_swapped.compile(tok, src, out, config=_cfg(2))
    with DistributedWorker([prefill_c, decode_c]) as rt:
        kv = rt.alloc_tensor((2, R, C), torch.float32, worker_id=1)
        rt.run(prefill_c, torch.from_numpy(src), kv)  # rank r writes kv[r]
        rt.run(decode_c, tok, kv, out)  # rank r reads kv[1 - r]
        np.testing.assert_allclose(out[0], tok[0] + 2 * src[1], rtol=1e-6)
        np.testing.assert_allclose(out[1], tok[1] + 2 * src[0], rtol=1e-6)
        with pytest.raises(ValueError, match="pass the same worker_id"):
            rt.free_tensor(kv)  # allocated with worker_id=1
        rt.free_tensor(kv, worker_id=1)
        with pytest.raises(ValueError, match=r"worker_id must be in \[0, 2\)"):
            rt.alloc_tensor((R, C), torch.float32, worker_id=2)


def test_resident_tensor_outlives_a_failed_dispatch():
    src = np.full((R, C), 3.0, np.float32)
    out = np.zeros_like(src)
    prefill_c = _prefill.compile(src, src, config=_cfg())
    bump_c = _bump.compile(src, False, config=_cfg())
    decode_c = _decode.compile(src, src, out, config=_cfg())
    with DistributedWorker([prefill_c, bump_c, decode_c]) as rt:
        kv = rt.alloc_tensor((R, C), torch.float32)
        rt.run(prefill_c, src, kv)
        with pytest.raises(DistributedError, match="asked to fail"):
            rt.run(bump_c, kv, True)  # the ranks are stopped; new ones get the cache's bytes
        rt.run(bump_c, kv, False)
        rt.run(decode_c, np.zeros_like(src), kv, out)
        np.testing.assert_array_equal(out, 12.0)
    assert not _resident_segments()


def test_chip_worker_refuses_a_host_program():
    compiled = _prefill.compile(np.zeros((R, C), np.float32), np.zeros((R, C), np.float32), config=_cfg())
    with ChipWorker() as w:
        with pytest.raises(TypeError, match="runs on a DistributedWorker"):
            w.register(compiled)
        with pytest.raises(TypeError, match="takes a compiled program"):
            w.register(print)
