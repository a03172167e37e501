"""``pypto.runtime``: the names of CANN PyPTO's runtime module that programs use. Every call here
runs to completion before it returns (the outputs are written), so a device synchronization has
nothing to wait for."""

from ...core.config import RunMode
from ..function_block import run_once
from ...frontends.language import RunConfig
from ...frontends.language._host import DistributedWorker
from ...frontends.language._program_class import CompiledProgram, compile_program, run
from ..tensor_spec import ScalarSpec, TensorSpec
from ..runtime_worker import ChipWorker, DeviceTensor, RegistrationHandle

__all__ = ["RunMode", "RunConfig", "DistributedWorker", "run", "compile_program", "CompiledProgram", "TensorSpec",
           "ScalarSpec", "ChipWorker", "RegistrationHandle", "DeviceTensor"]


def _device_synchronize() -> None:
    """PyPTO's (internal) device synchronization: a no-op, calls here are synchronous."""


def _device_init() -> None:
    """PyPTO's device set-up before a ``pypto.function`` block: nothing to set up on the CPU."""


def _device_fini() -> None:
    """PyPTO's device tear-down: a no-op."""


def _device_run_once_data_from_host(*tensors: object) -> None:
    """Runs the program the last ``pypto.function`` block compiled on ``tensors`` (torch
    tensors or numpy arrays, in the block's order), writing its outputs into them."""
    run_once(*tensors)


def __getattr__(name: str) -> object:
    # RunConfig belongs to pypto.language (the hw-native-sys runtime's config, `from
    # pypto.runtime import RunConfig`); imported on first use to keep this module light.
    if name == "RunConfig":
        return RunConfig
    raise AttributeError(f"module 'pypto.runtime' has no attribute {name!r}")
