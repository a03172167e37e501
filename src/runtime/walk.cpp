// The control program of a call: the walk over the execution graph's regions (runtime loops
// evaluated, input elements read), one instance per launch with its windows bound and its
// dependencies on earlier instances found, and batches of a loop's iterations made as one
// instance when the loop's body is one launch.
#include <algorithm>

#include "runtime/call_state.h"

namespace pypto::rt {

namespace {
constexpr int64_t kMaxBatch = 64;  // iterations per batch instance (see CallState::Batch)
}  // namespace

int CallState::NewInstanceId() {
  int id = next_instance_++;
  if (phased_) {  // launches are not counted ahead: the instance list grows as they are made
    instances_.resize(next_instance_);
    ++outstanding_;
  }
  return id;
}

void CallState::Walk(const Region<LaunchNode>& r, SymEnv& env) {
  for (auto& e : r.entries) {
    if (e.loop && e.loop->info.read) {
      // An element the call's kernels write: every launch made so far runs to its end first.
      if (drain_ && p_.exec_graph.fn.value(e.loop->info.read->value).kind != ValueKind::Input) drain_();
      env[e.loop->info.var] = ReadElement(e.loop->info, env);
      Walk(*e.loop->body, env);  // the read continues the run of launches it sits in
      env.erase(e.loop->info.var);
      continue;
    }
    if (e.loop) {
      run_.clear();  // point-wise links stay within a run of launches
      const LoopInfo& l = e.loop->info;
      int64_t start = l.start.Eval(env), stop = l.stop.Eval(env), step = l.step.Eval(env);
      if (step <= 0) throw UserError("pypto.loop \"" + l.name + "\": step evaluates to " + std::to_string(step), l.loc);
      loop_iters_.push_back(0);
      if (const LaunchNode* only = BatchableBody(*e.loop, start, stop, step)) {
        Batch(*only, l, start, stop, step, env);
      } else {
        for (int64_t i = start; i < stop; i += step, ++loop_iters_.back()) {
          env[l.var] = i;
          PollCancel();
          Walk(*e.loop->body, env);
        }
      }
      loop_iters_.pop_back();
      env.erase(l.var);
      run_.clear();
      continue;
    }
    Launch(*e.item, env);
  }
  run_.clear();
}

void CallState::Launch(const LaunchNode& n, const SymEnv& env) {
  std::vector<Access> accesses;
  std::unique_ptr<Instance> inst = Bind(n, env, accesses);
  inst->id = NewInstanceId();
  if (inst->points == 0) {
    Skip(std::move(inst));
    return;
  }
  Connect(n, std::move(inst), accesses);
}

// A launch's instance at `env` (no id yet): its grid, its parameters' windows (bounds checked),
// the accesses they make, and in native mode the symbols and views the kernel reads.
std::unique_ptr<Instance> CallState::Bind(const LaunchNode& n, const SymEnv& env, std::vector<Access>& accesses) {
  auto inst = std::make_unique<Instance>();
  inst->env = env;
  BindInto(n, env, *inst, accesses);
  return inst;
}

// Bind's work into `inst` (its grid, parameters, symbols and views replaced; its env left as it
// is): a batch binds each iteration into one scratch instance.
void CallState::BindInto(const LaunchNode& n, const SymEnv& env, Instance& inst, std::vector<Access>& accesses) {
  const Kernel& k = p_.exec_graph.kernels[n.kernel];
  inst.kernel = &k;
  inst.grid.clear();
  inst.params.clear();
  inst.sym.clear();
  inst.views.clear();
  inst.view_at.clear();
  inst.points = 1;
  inst.grid.reserve(k.grid.size());
  for (auto& g : k.grid) {
    inst.grid.push_back(g.Eval(env));
    inst.points *= inst.grid.back();
  }
  accesses.reserve(2 * k.params.size());
  inst.params.reserve(k.params.size());
  // Reads resolve before writes so that a kernel reading and rewriting a workspace is fine.
  std::vector<Storage>& bound = bound_;
  bound.resize(k.params.size());
  for (int pass = 0; pass < 2; ++pass)
    for (size_t i = 0; i < k.params.size(); ++i) {
      const KernelParam& kp = k.params[i];
      bool is_write_pass = pass == 1;
      if (kp.write != is_write_pass && !(kp.read && kp.write)) continue;
      if (pass == 1 && kp.read && kp.write) continue;
      bound[i] = Resolve(kp.value, env, kp.write);
    }
  for (size_t i = 0; i < k.params.size(); ++i) {
    const KernelParam& kp = k.params[i];
    const Storage& s = bound[i];
    BoundParam bp;
    bp.data = s.data;
    bp.dtype = s.dtype;
    for (int m : kp.dim_map) {
      bp.shape.push_back(m < 0 ? 1 : s.shape[m]);
      bp.strides.push_back(m < 0 ? 0 : s.strides[m]);
    }
    inst.params.push_back(bp);
    Access a;
    a.alloc = s.alloc;
    a.write = kp.write;
    const Function& fn = p_.exec_graph.fn;
    const Value& kv = fn.value(kp.value);
    int mem = fn.MemoryRoot(kp.value);
    if (kv.kind == ValueKind::Reshape || fn.value(fn.Root(kp.value)).kind == ValueKind::Reshape) {
      // Memory read in another shape: the base's whole box (accesses compare in its shape).
      for (int64_t d : StorageOf(mem).shape) {
        a.lo.push_back(0);
        a.hi.push_back(d);
      }
    } else {
      DimVec origin = Origin(kp.value);
      for (size_t d = 0; d < s.shape.size(); ++d) {
        a.lo.push_back(origin[d]);
        a.hi.push_back(origin[d] + s.shape[d]);
      }
    }
    if (a.lo.empty()) {  // a 0-d tensor: its one element
      a.lo = {0};
      a.hi = {1};
    }
    if (kp.read) accesses.push_back({a.alloc, a.lo, a.hi, false});
    if (kp.write) accesses.push_back(std::move(a));
  }
  if (symbols_) {
    for (auto& name : (*symbols_)[k.id]) {
      auto it = env.find(name);
      PYPTO_CHECK(it != env.end(), "symbol ", name, " unbound at launch of ", k.name);
      inst.sym.push_back(it->second);
    }
    for (auto& bp : inst.params) {
      PyptoParamView v{};
      v.data = bp.data;
      if (bp.shape.size() > PYPTO_MAX_RANK) throw UserError("tensors of rank > 8 are not supported");
      for (size_t d = 0; d < bp.shape.size(); ++d) {
        v.shape[d] = bp.shape[d];
        v.stride[d] = bp.strides[d];
      }
      inst.views.push_back(v);
    }
    if (recording_)
      for (size_t i = 0; i < k.params.size(); ++i)
        inst.view_at.push_back({bound[i].alloc, bound[i].data - alloc_base_[bound[i].alloc]});
  }
  inst.node = n.id;
}

// Hooks a new instance to the earlier ones whose accesses conflict with `accesses` and publishes
// it. A batch of iterations (iters > 1) waits for them as a whole: its grid points are not one
// launch's, so no point-wise link is made to or from it.
void CallState::Connect(const LaunchNode& n, std::unique_ptr<Instance> inst, const std::vector<Access>& accesses) {
  const Kernel& k = *inst->kernel;
  const SymEnv& env = inst->env;
  run_[n.id] = inst->id;
  // Dependencies: earlier instances whose accesses overlap, one of the two writing.
  std::vector<int> deps;
  for (auto& a : accesses) index_.Conflicts(a, deps);
  for (auto& a : accesses) index_.Add(a, inst->id);
  std::sort(deps.begin(), deps.end());
  deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
  // Point-wise dependencies (point p needs only their point p) are waited for chunk by
  // chunk instead of as a whole: in a run of launches the compiler proved them; across loop
  // iterations the windows are compared with both launches' loop indices bound.
  for (int d : deps) {
    if (d == inst->id) continue;
    Instance& dep = *instances_[d];
    auto r = run_.find(dep.node);
    bool pointwise = false;
    if (dep.grid == inst->grid && dep.iters == 1 && inst->iters == 1) {
      if (r != run_.end() && r->second == d)
        pointwise = std::find(n.pointwise_after.begin(), n.pointwise_after.end(), dep.node) != n.pointwise_after.end();
      else
        pointwise = PointwiseBlocker(p_.exec_graph.fn, p_.exec_graph.point_access[dep.kernel->id],
                                     p_.exec_graph.point_access[k.id], &inst->grid, &dep.env, &inst->env)
                        .empty();
    }
    (pointwise ? inst->link_from : inst->waits).push_back(d);
  }
  // A signal kernel (Kernel::fence) waits for every launch made before it, and every later
  // launch waits for it: the program order other ranks see through the signals.
  if (k.fence) {
    for (int d : since_fence_) inst->waits.push_back(d);
    since_fence_.clear();
  }
  if (last_fence_ >= 0) inst->waits.push_back(last_fence_);
  std::sort(inst->waits.begin(), inst->waits.end());
  inst->waits.erase(std::unique(inst->waits.begin(), inst->waits.end()), inst->waits.end());
  for (int d : inst->waits)  // (a point-wise link to a waited-for instance is redundant)
    inst->link_from.erase(std::remove(inst->link_from.begin(), inst->link_from.end(), d), inst->link_from.end());
  if (k.fence)
    last_fence_ = inst->id;
  else
    since_fence_.push_back(inst->id);
  if (opts_.trace) {
    if (launch_records_.size() <= static_cast<size_t>(inst->id)) launch_records_.resize(inst->id + 1);
    launch_records_[inst->id] = LaunchRecord{k.id, inst->grid, env};
  }
  Publish(std::move(inst));
}

// Counts the launches the control program will make (loop bounds evaluated as Walk does).
// The body of `loop` when its iterations can be made as batches (Batch): one launch, of a kernel
// that is not a signal, in native mode (the generated kernel reads each iteration's symbols and
// views; the interpreter binds a whole symbol table per launch), not traced (the swimlane and
// pypto.sim show every launch the program makes), and at least two iterations.
const LaunchNode* CallState::BatchableBody(const LoopRegion<LaunchNode>& loop, int64_t start, int64_t stop,
                                           int64_t step) const {
  if (!entries_ || !symbols_ || opts_.trace || stop - start <= step) return nullptr;
  const auto& body = loop.body->entries;
  if (body.size() != 1 || !body[0].item || p_.exec_graph.kernels[body[0].item->kernel].fence) return nullptr;
  return body[0].item.get();
}

// The iterations of a loop whose body is one launch (`pl.range` over row tiles, each a
// `pl.load` ... `pl.store` of one tile) as batches: runs of consecutive iterations with the same
// grid whose accesses do not conflict (no window an iteration writes is touched by another of the
// run), each published as one instance whose grid points are its iterations' points in turn. An
// iteration then costs the binding of its windows, not a launch: no instance, dependency search,
// queueing and wake-up of its own (about 1 us each; pl_softmax makes 1024). An iteration that
// conflicts with the batch (a running sum, a reused workspace buffer) starts the next one, so a
// loop of dependent iterations runs as before, one instance each. Batches grow from 8 to
// kMaxBatch iterations, so the first starts the workers early.
void CallState::Batch(const LaunchNode& n, const LoopInfo& l, int64_t start, int64_t stop, int64_t step, SymEnv& env) {
  std::unique_ptr<Instance> batch;  // the batch being gathered
  std::vector<Access> accesses;     // its iterations' accesses
  AccessIndex within;               // the same, to find an iteration that conflicts with them
  int64_t limit = 8;
  auto flush = [&] {
    if (!batch) return;
    batch->id = NewInstanceId();
    if (batch->iters > 1 && !phased_) {  // (counted ahead as one launch per iteration)
      std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
      if (streaming_) lock.lock();
      outstanding_ -= batch->iters - 1;
    }
    Connect(n, std::move(batch), accesses);
    batch.reset();
    accesses.clear();
    within = AccessIndex();
    limit = std::min(2 * limit, kMaxBatch);
  };
  std::vector<Access> mine;
  std::vector<int> clash;
  Instance one;  // each iteration is bound here (no instance and no copy of env of its own)
  for (int64_t i = start; i < stop; i += step, ++loop_iters_.back()) {
    env[l.var] = i;
    PollCancel();
    mine.clear();
    BindInto(n, env, one, mine);
    if (batch) {
      clash.clear();
      for (auto& a : mine) within.Conflicts(a, clash);
      if (!clash.empty() || one.grid != batch->grid || batch->iters == limit || one.points == 0) flush();
    }
    if (one.points == 0) {  // nothing to run: kept finished, as Launch does
      auto empty = std::make_unique<Instance>();
      empty->kernel = one.kernel;
      empty->node = one.node;
      empty->env = env;
      empty->id = NewInstanceId();
      Skip(std::move(empty));
      continue;
    }
    for (auto& a : mine) within.Add(a, 0);
    accesses.insert(accesses.end(), mine.begin(), mine.end());
    if (!batch) {
      batch = std::make_unique<Instance>();
      batch->kernel = one.kernel;
      batch->node = one.node;
      batch->env = env;
      batch->grid = one.grid;
      batch->params = one.params;
      batch->points = batch->iter_points = one.points;
    } else {
      batch->points += batch->iter_points;
      ++batch->iters;
    }
    batch->sym.insert(batch->sym.end(), one.sym.begin(), one.sym.end());
    batch->views.insert(batch->views.end(), one.views.begin(), one.views.end());
    batch->view_at.insert(batch->view_at.end(), one.view_at.begin(), one.view_at.end());
  }
  flush();
}

int64_t CallState::CountLaunches(const Region<LaunchNode>& r, SymEnv& env) const {
  int64_t n = 0;
  for (auto& e : r.entries) {
    if (!e.loop) {
      ++n;
      continue;
    }
    const LoopInfo& l = e.loop->info;
    if (l.read) {
      env[l.var] = ReadElement(l, env);
      n += CountLaunches(*e.loop->body, env);
      env.erase(l.var);
      continue;
    }
    int64_t start = l.start.Eval(env), stop = l.stop.Eval(env), step = l.step.Eval(env);
    if (step <= 0) return n + 1;  // (Walk reports it)
    for (int64_t i = start; i < stop; i += step) {
      env[l.var] = i;
      PollCancel();
      n += CountLaunches(*e.loop->body, env);
    }
    env.erase(l.var);
  }
  return n;
}

}  // namespace pypto::rt
