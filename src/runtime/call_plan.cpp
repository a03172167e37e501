// Call plans: a call of a program whose launches depend only on its dims keeps its instances
// (windows, chunks and dependencies) for the next call with the same dims, strides and workers,
// which points the instances' views into its own memory and runs them without walking the
// control program again (CallPlan in call_state.h; Runtime::Run keeps the plans).
#include "runtime/call_state.h"

namespace pypto::rt {

namespace {

bool HasScalarReads(const Region<LaunchNode>& r) {
  for (auto& e : r.entries)
    if (e.loop && (e.loop->info.read || HasScalarReads(*e.loop->body))) return true;
  return false;
}

}  // namespace

// A program makes the same launches whenever its dims are the same unless it reads elements
// (loop bounds or windows from data) or signals other ranks (the distributed engine sees each
// signal kernel's symbols when it runs).
bool CallState::Plannable(const CompiledProgram& p) {
  if (HasScalarReads(p.exec_graph.body)) return false;
  for (auto& k : p.exec_graph.kernels)
    if (k.fence) return false;
  return true;
}

// The instances of this (recording, finished) call as a plan: each instance's full list of
// successors (a call only hooks up those not finished when it publishes), the allocations the
// call made in order, and the views' places in them (Instance::view_at).
std::unique_ptr<CallPlan> CallState::TakePlan() {
  auto plan = std::make_unique<CallPlan>();
  for (auto& in : instances_) {
    in->successors.clear();
    in->ReleaseShared();
  }
  for (auto& in : instances_) {
    if (in->num_tasks == 0) continue;  // (a launch with no points: finished from the start)
    for (int d : in->waits)
      if (instances_[d]->num_tasks > 0) instances_[d]->successors.push_back(in->id);
    plan->tasks += in->num_tasks;
  }
  plan->instances = std::move(instances_);
  plan->allocs = std::move(made_);
  plan->params = static_cast<int>(alloc_base_.size() - plan->allocs.size());
  return plan;
}

// Takes the plan's instances for this call: allocates what the recording call allocated (created
// tensors zeroed, workspaces not), points every view at its place in this call's memory and
// resets the scheduling state. The parameters are bound already (BindParam), in the same order.
bool CallState::Replay(CallPlan& plan) {
  // A plan whose instances went with a call that failed while replaying it (Runtime::Run drops
  // it from its table, but a call may have taken it before): this call walks the program.
  if (plan.instances.empty()) return false;
  if (static_cast<int>(alloc_base_.size()) != plan.params)
    throw InternalError("a call plan replayed with " + std::to_string(alloc_base_.size()) +
                        " parameters, recorded with " + std::to_string(plan.params));
  for (auto& a : plan.allocs) {
    char* p = nullptr;
    try {
      p = static_cast<char*>(a.zero ? AllocHostZeroed(a.bytes) : AllocHost(a.bytes));
    } catch (const std::bad_alloc&) {
      throw OutOfMemory("out of memory allocating " + std::to_string(a.bytes) + " bytes for a call's tensors");
    }
    owned_.push_back({p, a.bytes});
    alloc_base_.push_back(p);
  }
  instances_ = std::move(plan.instances);
  next_instance_ = static_cast<int>(instances_.size());
  for (auto& in : instances_) {
    for (size_t j = 0; j < in->views.size(); ++j)
      in->views[j].data = alloc_base_[in->view_at[j].alloc] + in->view_at[j].offset;
    in->finished = in->num_tasks == 0;
    in->remaining = in->num_tasks;
    in->pending = 0;
    for (int d : in->waits) in->pending += instances_[d]->num_tasks > 0;
    std::fill(in->chunk_done.begin(), in->chunk_done.end(), 0);
    std::fill(in->source_done.begin(), in->source_done.end(), 0);
  }
  total_tasks_ = plan.tasks;
  replay_ = &plan;
  return true;
}

void CallState::ReturnPlan(CallPlan& plan) {
  for (auto& in : instances_) in->ReleaseShared();
  plan.instances = std::move(instances_);
}

}  // namespace pypto::rt
