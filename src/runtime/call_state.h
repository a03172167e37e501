// The state of one call of a compiled program: the caller's buffers bound to the program's
// values, the control program walked (runtime loops evaluated, one instance per launch with its
// windows and dependencies) and the scheduling state the workers share (scheduler.cpp runs the
// instances' tasks). Internal to the runtime.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "pypto/kernel_abi.h"
#include "runtime/access_index.h"
#include "runtime/host_memory.h"
#include "runtime/kernel_interpreter.h"
#include "runtime/reshape_strides.h"
#include "runtime/runtime.h"
#include "runtime/small_vec.h"

namespace pypto::rt {

// Shapes as Python prints them: "(3,)" for one dim.
inline std::string Dims(const std::vector<int64_t>& v) { return v.size() == 1 ? IntList(v, "(", ",)") : IntList(v); }

inline std::vector<int64_t> DenseStrides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size());
  int64_t acc = 1;
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
    s[i] = acc;
    acc *= shape[i];
  }
  return s;
}

// Memory a value lives in during one call: a root allocation and a window of it.
struct Storage {
  int alloc = -1;  // unique id of the allocation (dependency tracking key)
  char* data = nullptr;
  DataType dtype = DataType::FP32;
  DimVec shape, strides;
};

struct Instance {
  int id;
  const Kernel* kernel;
  SymEnv env;
  std::vector<BoundParam> params;
  std::vector<int64_t> grid;
  int64_t points = 1;
  // A batch of a loop's iterations (CallState::Batch): `iters` iterations of `iter_points` grid
  // points each, their symbols and views one after another in `sym` and `views`.
  int64_t iters = 1, iter_points = 0;
  int64_t chunk = 1;
  int64_t num_tasks = 0;
  std::vector<int> successors;
  // Point-wise links: chunk i of this instance waits only for chunk i of each `link_from`
  // (plus its other dependencies as a whole); `link_to` are the instances waiting so on it.
  int node = -1;
  std::vector<int> waits;  // instances it waits for as a whole
  std::vector<int> link_to, link_from;
  std::vector<int> source_done;  // per chunk: how many link_from chunks i have finished
  // Native mode: the symbol values and parameter windows the generated kernel reads.
  std::vector<int64_t> sym;
  std::vector<PyptoParamView> views;
  // While a call records its plan: where each view's data lies (allocation, byte offset), so a
  // replay points the views into its own call's memory (CallPlan).
  struct ViewAt {
    int alloc;
    int64_t offset;
  };
  std::vector<ViewAt> view_at;
  // Scheduling state, under the call's mutex once the instance is published.
  int pending = 0;               // unfinished instances in `waits`
  int64_t remaining = 0;         // chunks not yet run
  std::vector<char> chunk_done;  // per chunk: finished (for instances linking to it later)
  bool finished = false;
  // What the native kernel's tasks share (packed operands): released when the last task ends.
  PyptoShared shared{nullptr, nullptr, &SharedAlloc, &FreeHost};
  void ReleaseShared() {
    if (shared.table && shared.release) shared.release(shared.table);
    shared.table = nullptr;
    shared.release = nullptr;
  }
  static void* SharedAlloc(size_t bytes) {
    try {
      return AllocHost(bytes);
    } catch (...) {
      return nullptr;
    }
  }
  Instance() = default;
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;
  ~Instance() { ReleaseShared(); }
};

// A call's instances kept for the next call of the same program with the same dims, strides and
// workers (Runtime::Run): a program without scalar reads or signals makes the same launches,
// windows and dependencies every time, so the next call only points the views into its own
// memory and resets the scheduling state (call_plan.cpp) instead of walking the control program
// (about 1-2.5 us a launch). One call replays a plan at a time (`busy`).
struct CallPlan {
  std::mutex busy;
  std::vector<std::unique_ptr<Instance>> instances;
  struct Alloc {
    size_t bytes;
    bool zero;
  };
  std::vector<Alloc> allocs;  // the call's own allocations, in allocation-id order after the params
  int params = 0;             // allocation ids below this: the bound parameters, in bind order
  int64_t tasks = 0;
};

class CallState {
 public:
  CallState(const CompiledProgram& p, const RunOptions& opts, SymEnv env,
            const std::vector<std::vector<std::string>>* symbols, const std::vector<PyptoKernelFn>* entries)
      : p_(p), opts_(opts), env_(std::move(env)), symbols_(symbols), entries_(entries) {}

  void BindParam(int value, const HostTensor& t) {
    Storage s;
    s.alloc = next_alloc_++;
    s.data = static_cast<char*>(t.data);
    s.dtype = t.dtype;
    s.shape = t.shape;
    s.strides = t.strides.empty() ? DenseStrides(t.shape) : t.strides;
    storage_[value] = s;
    alloc_base_.push_back(s.data);
  }

  // Plans (call_plan.cpp): record this call's instances for the next call, or replay a plan
  // recorded by an earlier one instead of walking the control program.
  static bool Plannable(const CompiledProgram& p);
  void RecordPlan() { recording_ = true; }
  std::unique_ptr<CallPlan> TakePlan();  // after a recording call's Execute
  bool Replay(CallPlan& plan);           // before Execute, the plan busy; false: the plan is spent
  void ReturnPlan(CallPlan& plan);       // after the replaying call's Execute

  // Makes the instances of every launch (and, as they are made, their ready tasks).
  void Build() {
    // Tensors created inside the function live for the call. Their shapes may use elements of
    // the inputs read before any loop or branch (one value per call): those are read first.
    SymEnv at_start = env_;
    BindCallStartReads(p_.exec_graph.body, at_start);
    // A created tensor no kernel reads or writes, no scalar read reads and the call does not
    // return (a `pypto.Tensor(shape, dtype)` left unused, a branch merge's target whose copies
    // were dropped) is not allocated: it would be zeroed and held for nothing. The rule depends on
    // the program only, so a call plan's replay allocates the same list.
    const Function& fn = p_.exec_graph.fn;
    std::vector<char> used(fn.values.size(), 0);
    for (auto& k : p_.exec_graph.kernels)
      for (auto& kp : k.params) used[fn.MemoryRoot(kp.value)] = 1;
    for (int r : fn.returns) used[fn.MemoryRoot(r)] = 1;
    MarkScalarReads(p_.exec_graph.body, used);
    for (auto& v : fn.values)
      if (v.kind == ValueKind::Created && !storage_.count(v.id) && used[v.id]) storage_[v.id] = Allocate(v, at_start);
    Walk(p_.exec_graph.body, env_);
  }

  // Builds and runs the call. With many launches and several workers the workers start at
  // once and run tasks while the calling thread is still building later launches.
  RunStats Execute();
  void RunTask(Instance& in, int64_t first, int64_t count, char* ub);
  void FailLocked(std::exception_ptr e);  // caller holds mu_
  void SpinForWork(uint64_t seen) const;
  std::string StallReport() const;  // caller holds mu_
  void Fail(std::exception_ptr e);
  static int StopRequested(void* self);  // PyptoKernelCall::stop
  ~CallState() {
    for (auto& [p, n] : owned_) FreeHost(p, n);
  }

 private:
  // `dims`: the shape to allocate instead of v's at `env` (a workspace's grown capacity).
  Storage Allocate(const Value& v, const SymEnv& env, bool zero = true, const std::vector<int64_t>* dims = nullptr) {
    Storage s;
    s.alloc = next_alloc_++;
    s.dtype = v.dtype;
    if (dims)
      s.shape = *dims;
    else
      for (auto& d : v.shape) s.shape.push_back(d.Eval(env));
    s.strides = DenseStrides(s.shape);
    // Created tensors start zeroed; workspaces are always written before they are read.
    auto checked = TensorBytes(s.shape, v.dtype);
    if (!checked)
      throw UserError("%" + v.name + " " + DataTypeName(v.dtype) + Dims(s.shape) +
                          " cannot exist: its size overflows or exceeds " + std::to_string(kMaxTensorBytes >> 40) +
                          " TiB",
                      v.loc, "check the shapes of the arguments");
    size_t bytes = static_cast<size_t>(std::max<int64_t>(1, *checked));
    char* p = nullptr;
    try {
      p = static_cast<char*>(zero ? AllocHostZeroed(bytes) : AllocHost(bytes));
    } catch (const std::bad_alloc&) {
      throw OutOfMemory("out of memory allocating " + std::to_string(bytes) + " bytes for %" + v.name + " " +
                        DataTypeName(v.dtype) + Dims(s.shape));
    }
    owned_.push_back({p, bytes});
    alloc_base_.push_back(p);
    made_.push_back({bytes, zero});
    s.data = p;
    return s;
  }

  // The memory bound to `value` (a parameter, a created tensor, or a workspace some launch wrote).
  const Storage& StorageOf(int value) const {
    auto it = storage_.find(value);
    if (it == storage_.end()) {
      const Value& v = p_.exec_graph.fn.value(value);
      throw InternalError("no memory is bound to %" + v.name + " (" + ValueKindName(v.kind) +
                          ") when a launch reads it: no earlier launch writes it");
    }
    return it->second;
  }

  // The window of memory `value` denotes now; checks views against their root's bounds.
  Storage Resolve(int value, const SymEnv& env, bool writer) {
    const Value& v = p_.exec_graph.fn.value(value);
    if (v.kind == ValueKind::View) {
      // A window of a reshape is a window of the reshape's dense memory.
      Storage root =
          p_.exec_graph.fn.value(v.base).kind == ValueKind::Reshape ? Resolve(v.base, env, writer) : StorageOf(v.base);
      Storage s = root;
      DimVec off, shape;
      for (size_t d = 0; d < v.shape.size(); ++d) {
        off.push_back(v.offsets[d].Eval(env));
        shape.push_back(v.shape[d].Eval(env));
      }
      // An empty window (a tail view past the end: PyPTO's valid extent max(n - offset, 0)) reads
      // and writes nothing, wherever it starts.
      bool empty = false;
      for (int64_t e : shape) empty = empty || e == 0;
      for (size_t d = 0; d < shape.size() && !empty; ++d)
        if (off[d] < 0 || shape[d] < 0 || off[d] + shape[d] > root.shape[d])
          throw UserError("the window %" + v.name + " at offsets " + Dims(off) + " with shape " + Dims(shape) +
                              " is out of bounds of %" + p_.exec_graph.fn.value(v.base).name + " " + Dims(root.shape) +
                              " (dim " + std::to_string(d) + ")",
                          v.loc, "check the slice or assemble offsets against the tensor's shape");
      int64_t elem = 0;
      for (size_t d = 0; d < off.size() && !empty; ++d) elem += off[d] * root.strides[d];
      s.data = root.data + elem * DataTypeBytes(root.dtype);
      s.shape = shape;
      view_origin_[value] = off;
      return s;
    }
    if (v.kind == ValueKind::Reshape) {  // the base's memory in the new shape
      Storage s = StorageOf(v.base);
      std::vector<int64_t> shape;
      int64_t n = 1, m = 1;  // bytes (a reshape may read them as another dtype: view(x, dtype=))
      for (auto& d : v.shape) n *= shape.emplace_back(d.Eval(env));
      for (auto d : s.shape) m *= d;
      n *= DataTypeBytes(v.dtype);
      m *= DataTypeBytes(s.dtype);
      if (n != m)
        throw UserError("the reshape %" + v.name + " " + Dims(shape) + " " + DataTypeName(v.dtype) + " of %" +
                            p_.exec_graph.fn.value(v.base).name + " " + Dims(s.shape) + " " + DataTypeName(s.dtype) +
                            " holds " + std::to_string(n) + " bytes, the tensor " + std::to_string(m),
                        v.loc, "the new shape must hold the same number of elements");
      std::vector<int64_t> dense = DenseStrides(s.shape);
      bool contiguous = true;  // (the stride of a dim of size 1 does not matter)
      for (size_t d = 0; d < s.shape.size(); ++d)
        contiguous = contiguous && (s.shape[d] == 1 || s.strides[d] == dense[d]);
      // A strided argument (a cache with its last dim cut, passed as it is) keeps its layout when
      // each new dim falls within a run of old ones contiguous with each other (numpy's in-place
      // reshape): no dense copy of it (frontends/jit.py stages one only where this cannot).
      std::vector<int64_t> strides = contiguous           ? DenseStrides(shape)
                                     : v.dtype == s.dtype ? ReshapeStrides(s.shape, s.strides, shape)
                                                          : std::vector<int64_t>{};
      if (!contiguous && strides.empty())
        throw UserError("the reshape %" + v.name + " of %" + p_.exec_graph.fn.value(v.base).name +
                            ": the array passed for it is not contiguous",
                        v.loc, "pass a contiguous array (numpy.ascontiguousarray / torch .contiguous())");
      s.shape = shape;
      s.strides = strides;
      s.dtype = v.dtype;
      return s;
    }
    if (v.kind == ValueKind::Temp) {
      // A workspace: each writing launch takes the next of two buffers of the value (double
      // buffering), or always the same one when its readers consume it point-wise. Reusing one adds the dependencies on
      // its earlier readers and writer (same allocation id), so the next iteration of a loop can overlap the previous
      // one, and a loop of N iterations touches two buffers instead of N fresh ones (page faults).
      if (writer) {
        std::vector<int64_t> shape;
        for (auto& d : v.shape) shape.push_back(d.Eval(env));
        const auto key = std::make_pair(value, WorkspaceSet(v, shape));
        std::vector<Storage>& ring = workspaces_[key];
        const size_t buffers = p_.exec_graph.single_buffer.count(value) ? 1 : 2;
        size_t next = ring.size() < buffers ? ring.size() : workspace_turn_[key]++ % buffers;
        const bool reshaped = Reshaped(value);
        if (next == ring.size()) {
          ring.push_back(Allocate(v, env, /*zero=*/false));
        } else if (reshaped ? ring[next].shape != shape : !Holds(ring[next].shape, shape)) {
          // An extent the buffer cannot hold (a causal row's length, a per-batch length): a larger
          // one, each grown dim at least doubled, so a loop whose extent grows every iteration
          // allocates log2(n) buffers per slot, not n (each is held until the call ends). A
          // reshaped workspace is read densely in another shape: its exact shape.
          std::vector<int64_t> cap = shape;
          if (!reshaped)
            for (size_t d = 0; d < cap.size(); ++d)
              cap[d] =
                  shape[d] > ring[next].shape[d] ? std::max(shape[d], 2 * ring[next].shape[d]) : ring[next].shape[d];
          ring[next] = Allocate(v, env, /*zero=*/false, &cap);
        }
        // The extent written now: a window at the origin of the slot's buffer, in its strides, so
        // the accesses of every extent compare in one coordinate system (one allocation id: the
        // write is ordered after the buffer's earlier readers and writer).
        Storage s = ring[next];
        s.shape = shape;
        storage_[value] = s;
      }
      return StorageOf(value);
    }
    return StorageOf(value);
  }

  static bool Holds(const DimVec& cap, const std::vector<int64_t>& shape) {
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d] > cap[d]) return false;
    return cap.size() == shape.size();
  }
  // Whether some reshape reads `value`'s memory in another shape (then it stays dense).
  bool Reshaped(int value) {
    if (reshaped_.empty()) {
      reshaped_.push_back(-1);  // (computed once per call)
      const Function& fn = p_.exec_graph.fn;
      for (auto& r : fn.values)
        if (r.kind == ValueKind::Reshape) reshaped_.push_back(fn.MemoryRoot(r.id));
    }
    return std::find(reshaped_.begin(), reshaped_.end(), value) != reshaped_.end();
  }

  // Which set of buffers a small workspace written inside a loop nest takes: one per iteration of
  // the loop around the innermost one, in turn over 2 x workers sets. With one set for all, the
  // chains of an outer loop's iterations (the tile-level flash attention: one chain of steps per
  // query block) would reuse each other's buffers in the order the control program made them,
  // so each chain would wait for the previous one to almost finish; with a set per outer
  // iteration they run side by side. Large workspaces keep one set (memory, page faults).
  int WorkspaceSet(const Value& v, const std::vector<int64_t>& shape) const {
    constexpr int64_t kSmallWorkspace = 1 << 20;
    if (loop_iters_.size() < 2 || workers_ < 2) return 0;
    auto bytes = TensorBytes(shape, v.dtype);
    if (!bytes || *bytes > kSmallWorkspace) return 0;
    return static_cast<int>(loop_iters_[loop_iters_.size() - 2] % std::min(2 * workers_, 16));
  }

  DimVec Origin(int value) const {
    const Value& v = p_.exec_graph.fn.value(value);
    if (v.kind == ValueKind::View) return view_origin_.at(value);
    return DimVec(v.shape.size(), 0);
  }

  // The element a scalar read binds (PyPTO's `seq_lens[b]`): inputs are never written by the
  // call's kernels, so the control program reads it directly.
  int64_t ReadElement(const LoopInfo& l, const SymEnv& env) const {
    const ScalarRead& r = *l.read;
    const Storage& s = storage_.at(r.value);
    int64_t elem = 0;
    std::vector<int64_t> at;
    for (size_t d = 0; d < r.index.size(); ++d) at.push_back(r.index[d].Eval(env));
    for (size_t d = 0; d < at.size(); ++d) {
      if (at[d] < 0 || at[d] >= s.shape[d])
        throw UserError("reading %" + r.tensor + Dims(at) + " as a scalar: index " + std::to_string(at[d]) +
                            " is out of bounds of dim " + std::to_string(d) + " of %" + r.tensor + " " + Dims(s.shape),
                        l.loc, "check the index against the tensor's shape");
      elem += at[d] * s.strides[d];
    }
    const char* p = s.data + elem * DataTypeBytes(s.dtype);
    auto load = [p](auto zero) {
      decltype(zero) x;
      std::memcpy(&x, p, sizeof x);
      return static_cast<int64_t>(x);
    };
    switch (s.dtype) {
      case DataType::INT8:
        return load(int8_t{});
      case DataType::UINT8:
        return load(uint8_t{});
      case DataType::INT16:
        return load(int16_t{});
      case DataType::INT32:
        return load(int32_t{});
      case DataType::INT64:
        return load(int64_t{});
      case DataType::UINT16:
        return load(uint16_t{});
      case DataType::UINT32:
        return load(uint32_t{});
      case DataType::UINT64:
        return load(uint64_t{});  // a size or index: below 2^63
      default:
        throw InternalError("scalar read of a " + std::string(DataTypeName(s.dtype)) + " tensor");
    }
  }

  // Binds the reads of input elements that no loop or branch encloses (the chain of read scopes
  // from the body down), as Walk will bind them: inputs are not written by the call.
  void BindCallStartReads(const Region<LaunchNode>& r, SymEnv& env) const {
    for (auto& e : r.entries)
      if (e.loop && e.loop->info.read && p_.exec_graph.fn.value(e.loop->info.read->value).kind == ValueKind::Input) {
        env[e.loop->info.var] = ReadElement(e.loop->info, env);
        BindCallStartReads(*e.loop->body, env);
      }
  }

  // Marks the tensors whose elements the control program reads as scalars (Build).
  void MarkScalarReads(const Region<LaunchNode>& r, std::vector<char>& used) const {
    for (auto& e : r.entries)
      if (e.loop) {
        if (e.loop->info.read) used[p_.exec_graph.fn.MemoryRoot(e.loop->info.read->value)] = 1;
        MarkScalarReads(*e.loop->body, used);
      }
  }

  // Whether `r` reads an element of a tensor the call writes (CANN's `cumsum[i, e]` of a table
  // the kernel computed): such a call runs in phases (see Execute).
  bool ReadsWrittenElements(const Region<LaunchNode>& r) const {
    for (auto& e : r.entries)
      if (e.loop && ((e.loop->info.read && p_.exec_graph.fn.value(e.loop->info.read->value).kind != ValueKind::Input) ||
                     ReadsWrittenElements(*e.loop->body)))
        return true;
    return false;
  }

  // The control program (walk.cpp): evaluates runtime loops and makes one instance per launch,
  // or one per run of a loop's iterations when the loop body is one launch (Batch).
  void Walk(const Region<LaunchNode>& r, SymEnv& env);
  void Launch(const LaunchNode& n, const SymEnv& env);
  std::unique_ptr<Instance> Bind(const LaunchNode& n, const SymEnv& env, std::vector<Access>& accesses);
  void BindInto(const LaunchNode& n, const SymEnv& env, Instance& inst, std::vector<Access>& accesses);
  void Connect(const LaunchNode& n, std::unique_ptr<Instance> inst, const std::vector<Access>& accesses);
  const LaunchNode* BatchableBody(const LoopRegion<LaunchNode>& loop, int64_t start, int64_t stop, int64_t step) const;
  void Batch(const LaunchNode& n, const LoopInfo& l, int64_t start, int64_t stop, int64_t step, SymEnv& env);
  int NewInstanceId();  // the next instance's id (and its slot, in a phased call)
  // Counts the launches the control program will make (loop bounds evaluated as Walk does).
  int64_t CountLaunches(const Region<LaunchNode>& r, SymEnv& env) const;

  // Chunks a new instance, hooks it to the instances it depends on (those finished already
  // count as done) and queues its ready chunks.
  void Publish(std::unique_ptr<Instance> owned) {
    Instance& in = *owned;
    // A task is a run of grid points: at least 4 tasks per worker (to balance), and no more
    // points than move about kTaskBytes of tiles. A point-wise linked successor, which the
    // same worker runs next, then finds its inputs in L2 instead of L3. A linked pair is
    // chunked alike, so chunk i of one needs chunk i of the other.
    constexpr int64_t kTaskBytes = 256 << 10;
    int64_t target = std::max<int64_t>(1, std::min<int64_t>(in.points, workers_ * 4));
    int64_t by_bytes = std::max<int64_t>(1, kTaskBytes / std::max<int64_t>(1, TileBytesPerPoint(*in.kernel, in.env)));
    // A cube kernel's consecutive points read the same A windows (one row of output blocks):
    // up to 4 in a task find them in L2 (measured on 2048^3 bf16 / int8: 2-4% faster than 1).
    if (in.kernel->core == CoreKind::AIC) by_bytes = std::max<int64_t>(by_bytes, 4);
    in.chunk = !in.link_from.empty() ? instances_[in.link_from[0]]->chunk
                                     : std::min((in.points + target - 1) / target, by_bytes);
    // Chunk i of a link means chunk i of every source: a source chunked otherwise (made with
    // other links, or none) is waited for as a whole.
    for (size_t j = in.link_from.size(); j-- > 1;)
      if (instances_[in.link_from[j]]->chunk != in.chunk) {
        in.waits.push_back(in.link_from[j]);
        in.link_from.erase(in.link_from.begin() + static_cast<std::ptrdiff_t>(j));
      }
    in.num_tasks = (in.points + in.chunk - 1) / in.chunk;
    in.remaining = in.num_tasks;
    in.source_done.assign(in.link_from.empty() ? 0 : in.num_tasks, 0);
    in.chunk_done.assign(in.num_tasks, 0);
    std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
    if (streaming_) lock.lock();
    instances_[in.id] = std::move(owned);
    for (int d : in.waits)
      if (!instances_[d]->finished) {
        instances_[d]->successors.push_back(in.id);
        ++in.pending;
      }
    for (int d : in.link_from) {
      Instance& dep = *instances_[d];
      dep.link_to.push_back(in.id);
      for (int64_t i = 0; i < in.num_tasks; ++i) in.source_done[i] += dep.chunk_done[i];
    }
    total_tasks_ += in.num_tasks;
    if (in.pending == 0 && PushReady(in) && streaming_) WakeLocked(true);
  }

  // Bytes one grid point of `k` loads and stores (tiles times the trips of their loops).
  int64_t TileBytesPerPoint(const Kernel& k, const SymEnv& env) {
    auto it = tile_bytes_.find(k.id);
    if (it != tile_bytes_.end()) return it->second;
    std::function<int64_t(const std::vector<Instr>&)> sum = [&](const std::vector<Instr>& body) {
      int64_t n = 0;
      for (auto& in : body) {
        if (in.opcode == Opcode::TLOAD) n += k.bufs[in.dst].bytes();
        if (in.opcode == Opcode::TSTORE) n += k.bufs[in.srcs[0]].bytes();
        if (in.opcode == Opcode::LOOP) {
          int64_t trip = 1;
          try {
            trip = in.trip.Eval(env);
          } catch (const std::exception&) {  // (a trip over a loop index of another launch)
          }
          n += std::max<int64_t>(1, trip) * sum(in.body);
        }
      }
      return n;
    };
    return tile_bytes_[k.id] = sum(k.body);
  }

  // A launch with no grid points (an empty tensor, a tail view past the end): nothing to run;
  // it is kept, finished, so every slot of instances_ holds one.
  void Skip(std::unique_ptr<Instance> inst) {
    std::lock_guard<std::mutex> lock(mu_);
    inst->finished = true;
    instances_[inst->id] = std::move(inst);
    if (--outstanding_ == 0) WakeLocked(true);
  }

  // Every change a waiting worker may be waiting for (tasks queued, the last launch finished, an
  // error) goes through here, under mu_: it bumps wake_seq_, which a worker spins on for a short
  // while before it sleeps on cv_ (SpinForWork). A worker that finds work while spinning costs
  // the notifier nothing (no sleeper: no futex call) and itself no sleep and wake-up.
  void WakeLocked(bool all) {
    wake_seq_.fetch_add(1, std::memory_order_release);
    if (all)
      cv_.notify_all();
    else
      cv_.notify_one();
  }

  struct Task {
    int inst;
    int64_t first, count;
  };
  // Queues the chunks of `in` whose linked chunks are done; caller holds mu_ (if streaming).
  bool PushReady(Instance& in) {
    bool any = false;
    for (int64_t f = 0, i = 0; f < in.points; f += in.chunk, ++i)
      if (in.source_done.empty() || in.source_done[i] == static_cast<int>(in.link_from.size())) {
        queue_.push_back({in.id, f, std::min(in.chunk, in.points - f)});
        ++queued_;
        any = true;
      }
    return any;
  }

  // Cancellation, on the calling thread (worker 0): throws UserError past the timeout, and
  // Interrupted when opts_.interrupted says so (checked at most every 50 ms). Cheap to call
  // often: the clock is read every 256th call.
  void PollCancel(bool now = false) const {
    if (!opts_.interrupted && opts_.timeout_s <= 0) return;
    if (!now && (++poll_calls_ & 255) != 0) return;
    auto t = std::chrono::steady_clock::now();
    if (opts_.timeout_s > 0 && std::chrono::duration<double>(t - started_).count() > opts_.timeout_s) {
      std::ostringstream s;
      s << "the call ran longer than its timeout of " << opts_.timeout_s << " s and was cancelled";
      throw UserError(s.str(), {}, "raise runtime_options={\"timeout\": seconds} (0 = none), or make the call smaller");
    }
    if (opts_.interrupted && t - last_poll_ > std::chrono::milliseconds(50)) {
      last_poll_ = t;
      if (opts_.interrupted()) throw Interrupted();
    }
  }

  const CompiledProgram& p_;
  const RunOptions& opts_;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  mutable std::chrono::steady_clock::time_point last_poll_ = started_;
  mutable uint64_t poll_calls_ = 0;
  SymEnv env_;
  const std::vector<std::vector<std::string>>* symbols_;  // native mode only
  const std::vector<PyptoKernelFn>* entries_;
  std::map<int, Storage> storage_;
  std::unordered_map<int, DimVec> view_origin_;
  // The two buffers of each (workspace value, set: WorkspaceSet), and whose turn is next.
  std::map<std::pair<int, int>, std::vector<Storage>> workspaces_;
  std::map<std::pair<int, int>, size_t> workspace_turn_;
  std::vector<int> reshaped_;        // memory roots of the reshapes (Reshaped), after a -1
  std::vector<int64_t> loop_iters_;  // Walk's iteration count of each enclosing runtime loop
  std::vector<Storage> bound_;       // BindInto's parameter windows (kept: no allocation per launch)
  AccessIndex index_;
  std::vector<std::pair<char*, size_t>> owned_;       // blocks this call allocated
  std::vector<std::unique_ptr<Instance>> instances_;  // slots for every launch, filled in order
  int next_instance_ = 0;
  std::vector<LaunchRecord> launch_records_;  // with opts_.trace (the control program's thread)
  int next_alloc_ = 0;
  std::vector<char*> alloc_base_;      // each allocation's start, by id
  std::vector<CallPlan::Alloc> made_;  // the call's own allocations (after the params)
  bool recording_ = false;             // fill Instance::view_at (RecordPlan)
  CallPlan* replay_ = nullptr;         // the plan this call replays (Replay)
  // Scheduling (see Execute); guarded by mu_ while workers run.
  int workers_ = 1;
  std::map<int, int64_t> tile_bytes_;  // by kernel id (see TileBytesPerPoint)
  bool streaming_ = false;             // workers run while the calling thread still builds
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<uint64_t> wake_seq_{0};  // bumped by WakeLocked
  std::deque<Task> queue_;
  int64_t queued_ = 0;            // tasks waiting in queue_ and in the workers' own deques
  int last_fence_ = -1;           // the latest signal kernel's instance (Kernel::fence)
  std::vector<int> since_fence_;  // instances made after it
  int64_t outstanding_ = 0;       // launches not yet finished (or skipped)
  // A call that reads elements its kernels write runs in phases: the control program stops at
  // such a read, drain_ runs every launch made so far to its end, and the walk goes on.
  bool phased_ = false;
  std::function<void()> drain_;
  int busy_ = 0;  // workers not waiting for a task (running, building, or deciding)
  int64_t total_tasks_ = 0;
  std::exception_ptr error_;
  std::atomic<bool> stop_{false};                              // error_ is set: running tasks return early
  const std::thread::id caller_ = std::this_thread::get_id();  // worker 0
  uint64_t stop_polls_ = 0;                                    // StopRequested calls on caller_
  std::map<int, int> run_;  // launch node -> its instance, for the launches since the last loop
};

}  // namespace pypto::rt
