"""CANN PyPTO's and torch_npu's names, over the core and the front doors: npu_compat (the NPU
device on the CPU), pypto_impl, operation, function_block, experimental, runtime, frontend."""
