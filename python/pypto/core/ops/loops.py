"""Runtime loops of the tensor level: ``pypto.loop`` (the body traced once, the index symbolic)
and ``pypto.loop_unroll`` (traced once per unroll factor), with the check that catches a traced
value carried from one iteration to the next (the body traced once would read its pre-loop
value in every iteration)."""

from __future__ import annotations

import ctypes
import linecache
import sys
from typing import Any, Dict, Iterator, Optional, Sequence, Tuple

import pypto._core as _core
from .._tracing import (SourceLoc, _format_loc, current_recorder, loop_body_exits, loop_carried, runtime_scope,
                        user_frame, user_loc)
from .._dtypes import DT_INT64
from ..tensor import Tensor
from .core import _suffix
from ..control import LoopPaths, register_loop

__all__ = ["loop", "loop_unroll"]


def _set_local(frame: Any, name: str, value: Any) -> None:
    """Rebinds a local of a running frame (the user's loop variable scope): what the body reads
    next. CPython before 3.13 copies f_locals back into the frame only on request."""
    frame.f_locals[name] = value
    if sys.version_info < (3, 13):
        ctypes.pythonapi.PyFrame_LocalsToFast(ctypes.py_object(frame), ctypes.c_int(0))


class ScalarCarry:
    """Scalars a runtime loop carries from one iteration to the next (`m = pl.max(m, n_b)` over
    elements read in the body): each lives in a one-element int64 tensor. Before the loop it
    holds the initial value; the body starts from a read of it and its end writes the new value;
    after the loop the name is a read of it (reads of elements the call writes run once the
    launches before them have: CallState's phases). For ``pl.range``, whose scalars are values of
    the program (a trace-time counter stays a Python int in ``pypto.loop``)."""

    def __init__(self, rec: Any, names: Sequence[str], loc: SourceLoc) -> None:
        from ..control import write_scalar

        self.rec, self.loc = rec, loc
        self.frame = user_frame()
        self.mems: Dict[str, int] = {}
        bound = self.frame.f_locals if self.frame is not None else {}
        for n in names:
            v = bound.get(n)
            if isinstance(v, bool) or not isinstance(v, (int, _core.SymbolicScalar)):
                continue
            mem = rec.create_tensor([1], DT_INT64, f"{n}_carry", loc)
            write_scalar(rec, v, mem, loc)
            self.mems[n] = mem

    def enter(self) -> None:
        for n, mem in self.mems.items():
            _set_local(self.frame, n, self.rec.read_scalar(mem, [0], self.loc))

    def leave(self) -> None:
        from ..control import write_scalar

        now = self.frame.f_locals
        for n, mem in self.mems.items():
            v = now.get(n)
            if isinstance(v, bool) or not isinstance(v, (int, _core.SymbolicScalar)):
                raise _core.UserError(f"`{n}` is carried from one iteration of the loop at line {self.loc[1]} to the "
                                      f"next as a scalar, but the body leaves it {v!r}" + _format_loc(self.loc))
            write_scalar(self.rec, v, mem, self.loc)

    def after(self) -> None:
        for n, mem in self.mems.items():
            _set_local(self.frame, n, self.rec.read_scalar(mem, [0], self.loc))


class CarriedValues:
    """Catches a runtime loop whose body reads a traced value of its previous iteration
    (`t = t + a`): the body is traced once, so every iteration would read the value from before
    the loop. Made before the body is traced (the names the body may carry and their values then);
    `check()` after it raises when one of them was rebound to another traced value (rebinding it
    to the same tensor, `c = pypto.assemble(...)`-style, carries nothing)."""

    def __init__(self, loc: SourceLoc, enabled: bool = True, skip: Sequence[str] = ()) -> None:
        self.loc = loc
        self.before: Dict[str, Tuple[Any, int, int]] = {}
        self.outer: Dict[int, Any] = {}
        carried = [c for c in loop_carried(loc) if c[0] not in skip] if enabled else []
        frame = user_frame() if carried else None
        bound = frame.f_locals if frame is not None else {}
        for var, read_line, assign_line in carried:
            value = bound.get(var)
            # Only traced values: a Python value (a trace-time counter, as CANN PyPTO's loop
            # example keeps) counts trace-time passes, which is what it means in PyPTO too.
            if (isinstance(value, Tensor) and value.is_traced) or (
                    isinstance(value, _core.SymbolicScalar) and not value.is_concrete()):
                self.before[var] = (value, read_line, assign_line)
                if isinstance(value, Tensor) and id(value) not in self.outer:
                    # Whether the body reads it at all: the static reads are only "may read"
                    # (`if k == 0: acc = x` / `else: acc = acc + x` in a Python loop reads acc
                    # only after binding it). An enclosing loop's watch is restored after.
                    self.outer[id(value)] = value._watch
                    value._watch = [False]
        self.read: Dict[int, bool] = {}

    def release(self) -> None:
        """Stops watching (idempotent); a read counts for an enclosing loop's watch too."""
        for value, _, _ in self.before.values():
            if isinstance(value, Tensor) and id(value) in self.outer:
                was_read = bool(value._watch and value._watch[0])
                self.read[id(value)] = was_read
                value._watch = self.outer.pop(id(value))
                if was_read and value._watch is not None:
                    value._watch[0] = True

    def check(self, what: str) -> None:
        self.release()
        if not self.before:
            return
        frame = user_frame()
        now = frame.f_locals if frame is not None else {}
        for var, (value, read_line, assign_line) in self.before.items():
            if var not in now or now[var] is value or (isinstance(value, Tensor) and not self.read.get(id(value))):
                continue
            new = now[var]
            if (isinstance(new, Tensor) and new._reshape_of is value
                    and all(isinstance(d, int) for d in new.shape)):
                continue  # `t = reshape(t, s)`: the next iteration's reshape would give t again
            text = linecache.getline(self.loc[0], read_line).rstrip("\n")
            raise _core.UserError(
                f"`{var}` is carried from one iteration of the {what} at line {self.loc[1]} to the next: it is read at "
                f"line {read_line} and assigned at line {assign_line} of the body. A runtime loop's body is traced "
                f"once, so every iteration would read `{var}` as it was before the loop"
                + _format_loc((self.loc[0], read_line, len(text) - len(text.lstrip()), text))
                + "\nhint: keep a running result in a tensor (write it with out[...] = ... or pypto.assemble in each "
                "iteration and read it back), or use a Python `for` loop over range() to unroll the loop at trace "
                "time")


def _bounds(args: Tuple[Any, ...], op: str) -> Tuple[Any, Any, Any]:
    """(start, stop, step) of range()-style bounds: (stop), (start, stop) or (start, stop, step)."""
    if len(args) == 1:
        return 0, args[0], 1
    if len(args) == 2:
        return args[0], args[1], 1
    if len(args) == 3:
        return args[0], args[1], args[2]
    raise _core.UserError(f"pypto.{op} takes 1 to 3 bounds, got {len(args)}" + _suffix())


def loop(*args: Any, name: str = "", idx_name: str = "", unroll_list: Optional[Sequence[int]] = None,
         submit_before_loop: bool = False, parallel: bool = False, carry_scalars: bool = False,
         **unknown: Any) -> Iterator[_core.SymbolicScalar]:
    """A runtime loop: ``for i in pypto.loop(start, stop, step, name=..., idx_name=...)``.

    The body is traced once with ``i`` symbolic; bounds may be symbolic (dynamic shapes).
    PyPTO's scheduling hints are accepted: ``unroll_list`` (the NPU backend unrolls the body by
    these factors; each iteration still sees one index, so nothing changes here),
    ``submit_before_loop`` and ``parallel`` (iterations are independent: the runtime here finds
    that from the data each launch touches). PyPTO ignores other keywords; here they are
    ignored with a warning that names them (a misspelt ``unroll_List`` in PyPTO's own tests)."""
    if unknown:
        import warnings
        warnings.warn(f"pypto.loop: unknown keyword argument(s) {', '.join(sorted(unknown))} ignored (as PyPTO "
                      "does); the keywords are name, idx_name, unroll_list, submit_before_loop and parallel"
                      + _suffix(), UserWarning, stacklevel=2)
    for key, flag in (("submit_before_loop", submit_before_loop), ("parallel", parallel)):
        if not isinstance(flag, bool):
            raise _core.UserError(f"pypto.loop: {key}={flag!r} must be True or False" + _suffix())
    if unroll_list is not None and (not isinstance(unroll_list, (list, tuple)) or not all(
            isinstance(k, int) and not isinstance(k, bool) and k > 0 for k in unroll_list)):
        raise _core.UserError(f"pypto.loop: unroll_list={unroll_list!r} must be a list of positive ints" + _suffix())
    start, stop, step = _bounds(args, "loop")
    rec = current_recorder("loop")
    loc = user_loc()
    exit_ = loop_body_exits(loc)
    if exit_ is not None:
        kind, line, col, text = exit_
        raise _core.UserError(f"`{kind}` inside a pypto.loop: the loop runs at run time and its body is traced "
                              f"once, so `{kind}` cannot end it" + _format_loc((loc[0], line, col, text))
                              + "\nhint: bound the loop instead (pypto.loop(start, stop)), or use a Python `for` "
                              "loop over range() for a loop unrolled at trace time")
    one_trip = all(isinstance(b, int) for b in (start, stop, step)) and step != 0 and len(range(start, stop, step)) <= 1
    if one_trip and len(range(start, stop, step)) == 1:
        # One iteration: the index is the constant start (PyPTO's tests loop over one view of a
        # whole tensor; the extents computed from the index are then static).
        idx = _core.SymbolicScalar(start)
        register_loop(idx, start, stop, step)
        yield idx
        return
    scalars = ScalarCarry(rec, [c[0] for c in loop_carried(loc)], loc) if carry_scalars and not one_trip else None
    carried = CarriedValues(loc, enabled=not one_trip, skip=list(scalars.mems) if scalars else ())
    idx = rec.begin_loop(idx_name or "i", name, start, stop, step, loc)
    register_loop(idx, start, stop, step)
    ended = False
    try:
        first = True
        for _ in LoopPaths(rec, loc).traces_of_body():  # once, or once per path of `if pypto.cond`
            if scalars is not None:
                scalars.enter()
            with runtime_scope(idx.free_vars()[0] if idx.free_vars() else None):
                yield idx
            if scalars is not None:
                scalars.leave()
            if first:
                carried.check("pypto.loop")
                first = False
        carried.release()
        rec.end_loop()
        ended = True
        if scalars is not None:
            scalars.after()
    finally:
        if not ended:
            carried.release()
            rec.end_loop()


def loop_unroll(*args: Any, name: str = "", idx_name: str = "", unroll_list: Optional[Sequence[int]] = None,
                submit_before_loop: bool = False, idx: str = "") -> Iterator[Tuple[_core.SymbolicScalar, int]]:
    """A runtime loop unrolled by factors: ``for i, k in pypto.loop_unroll(start, stop, step,
    unroll_list=[8, 4, 1])`` yields ``(i, k)``: the body handles iterations i, i + step, ...,
    i + (k - 1) * step. The body is traced once per factor; at run time the largest factor
    covers as much of the range as it can, then the next takes the rest, down to 1 (always
    added). ``submit_before_loop`` is accepted (it steers the NPU's task submission); ``idx=`` is
    taken as ``idx_name=`` (PyPTO's loops accept their keywords loosely, and model code uses it)."""
    idx_name = idx_name or idx
    start, stop, step = _bounds(args, "loop_unroll")
    factors = list(unroll_list) if unroll_list is not None else [1]
    for k in factors:
        if not isinstance(k, int) or isinstance(k, bool) or k <= 0:
            raise _core.UserError(f"pypto.loop_unroll: unroll factors must be positive ints, got {k!r}" + _suffix())
    if isinstance(step, int) and step <= 0:
        raise _core.UserError(f"pypto.loop_unroll: step must be positive, got {step}" + _suffix())
    factors = sorted(set(factors) | {1}, reverse=True)
    base = name or "loop"
    begin = start
    for k in factors:
        chunk = step * k
        left = (stop - begin) % chunk if not (isinstance(stop, int) and isinstance(begin, int)) else \
            max(0, stop - begin) % chunk
        end = stop - left
        if isinstance(begin, int) and isinstance(end, int) and end <= begin:
            continue  # nothing for this factor (known at trace time)
        for i in loop(begin, end, chunk, name=f"{base}_LoopUnroll{k}", idx_name=idx_name):
            yield i, k
        begin = end


# --- composites: built from the primitives above, so they lower and fuse like user code -------
#
# 16-bit inputs are widened to fp32 inside a composite and rounded once at the end, as torch
# computes them: exp(-x) of sigmoid overflows fp16 for x < -11, and x * x of a norm for |x| > 256.
