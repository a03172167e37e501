// What a distributed engine sees of the signals: before a signal kernel (Kernel::fence) runs,
// the runtime hands its cell, value and kind to the hook the engine set, which may carry the
// signal itself (a notify to a rank of another host travels through the engine, and the data
// written before it travel first: python/pypto/dist/engine.py). With no hook set, the kernel
// runs as it is (ranks of one host share the memory, docs/ARCHITECTURE.md "Distributed").
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "ir/block_graph.h"
#include "runtime/kernel_interpreter.h"

namespace pypto::rt {

enum class SignalKind { Notify = 0, Wait = 1 };

struct SignalEvent {
  SignalKind kind = SignalKind::Notify;
  int32_t* cell = nullptr;  // the signal's int32 cell in this process's memory
  int64_t value = 0;
  int op = 0;   // NotifyOp: 0 set, 1 add (a wait: 1 consumes what it waited for)
  int cmp = 0;  // CmpMode of a wait
};

/// Answers true when it carried the signal itself (the kernel is then skipped); throws to fail
/// the call.
using SignalHook = std::function<bool(const SignalEvent&)>;

/// Sets the process's hook (an empty function removes it).
void SetSignalHook(SignalHook hook);
bool HasSignalHook();

/// Runs the hook for fence kernel `k` (its one signal instruction, at its one grid point) with
/// the launch's parameters and symbols. True: the kernel must not run.
bool RunSignalHook(const Kernel& k, const std::vector<BoundParam>& params, const SymEnv& env);

}  // namespace pypto::rt
