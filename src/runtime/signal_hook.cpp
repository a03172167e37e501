#include "runtime/signal_hook.h"

#include <atomic>
#include <memory>
#include <mutex>

namespace pypto::rt {
namespace {

std::mutex hook_mu;
std::shared_ptr<const SignalHook> hook;
std::atomic<bool> has_hook{false};

const Instr* FindSignal(const std::vector<Instr>& body) {
  for (const Instr& in : body) {
    if (in.opcode == Opcode::TNOTIFY || in.opcode == Opcode::TWAIT) return &in;
    if (const Instr* inner = FindSignal(in.body)) return inner;
  }
  return nullptr;
}

}  // namespace

void SetSignalHook(SignalHook h) {
  std::lock_guard<std::mutex> lock(hook_mu);
  hook = h ? std::make_shared<const SignalHook>(std::move(h)) : nullptr;
  has_hook.store(hook != nullptr, std::memory_order_release);
}

bool HasSignalHook() { return has_hook.load(std::memory_order_acquire); }

bool RunSignalHook(const Kernel& k, const std::vector<BoundParam>& params, const SymEnv& env) {
  std::shared_ptr<const SignalHook> h;
  {
    std::lock_guard<std::mutex> lock(hook_mu);
    h = hook;
  }
  const Instr* in = h ? FindSignal(k.body) : nullptr;
  if (!in) return false;
  // The cell as the kernel computes it (kernel_interpreter.cpp), at grid point 0: a signal
  // kernel has one point.
  SymEnv e = env;
  for (size_t d = 0; d < k.grid.size(); ++d) e[GridVar(static_cast<int>(d))] = 0;
  e[kReduceVar] = 0;
  e[kInnerKVar] = 0;
  const BoundParam& p = params[in->param];
  int64_t off = 0;
  for (size_t d = 0; d < in->coord.size(); ++d) off += in->coord[d].Eval(e) * p.strides[d];
  SignalEvent ev;
  ev.kind = in->opcode == Opcode::TNOTIFY ? SignalKind::Notify : SignalKind::Wait;
  ev.cell = reinterpret_cast<int32_t*>(p.data) + off;
  ev.value = in->IntScalar();
  ev.op = static_cast<int>(in->notify);
  ev.cmp = static_cast<int>(in->cmp);
  return (*h)(ev);
}

}  // namespace pypto::rt
