"""``pypto.ir.distributed_compiled_program``: the ``DistributedConfig`` of hw-native-sys pypto's
host programs (``RunConfig(distributed_config=DistributedConfig(device_ids=[0, 1]))``)."""

from ...frontends.language._host import CompiledHostProgram as DistributedCompiledProgram
from ...frontends.language._host import DistributedConfig

__all__ = ["DistributedConfig", "DistributedCompiledProgram"]
