// Runs a call's instances on the worker pool: tasks are chunks of grid points, ready when the
// instances they wait for have finished (or, point-wise, their same chunks); each worker keeps
// the linked continuations it makes ready and steals when idle.
#include <chrono>
#include <cstdlib>
#include <thread>

#include "runtime/call_state.h"
#include "runtime/signal_hook.h"
#include "runtime/worker_pool.h"

namespace pypto::rt {

// Runs the instances' tasks on worker threads. A task is a chunk of one instance's grid points;
// an instance's tasks become ready when the instances it waits for have finished and, chunk by
// chunk, when the same chunks of the instances it is linked to point-wise have.
RunStats CallState::Execute() {
  RunStats stats;
  // (hardware_concurrency reads sysfs on every call: once per process is enough)
  static const int kHardwareThreads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  workers_ = opts_.workers > 0 ? opts_.workers : kHardwareThreads;
  const bool lifo = opts_.sched_mode == SchedMode::Lifo;
  int64_t launches = 0;
  if (replay_) {  // the instances are made (Replay): queue the ready ones
    launches = static_cast<int64_t>(instances_.size());
    for (auto& in : instances_) {
      if (in->finished) continue;
      ++outstanding_;
      if (in->pending == 0) PushReady(*in);
    }
  } else {
    phased_ = ReadsWrittenElements(p_.exec_graph.body);
    if (!phased_) {  // (a phased call cannot count ahead: a count may depend on an element not written yet)
      SymEnv count_env = env_;
      launches = CountLaunches(p_.exec_graph.body, count_env);
      instances_.resize(launches);
      outstanding_ = launches;
    }
  }
  // Few launches: build first, then wake only as many workers as there are tasks.
  streaming_ = !replay_ && !phased_ && workers_ > 1 && launches >= 8;
  auto build = [&] {
    if (replay_) return;
    auto b0 = std::chrono::steady_clock::now();
    Build();
    stats.control_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - b0).count();
  };
  if (!streaming_ && !phased_) {
    build();
    stats.build_ms = stats.control_ms;
    workers_ = static_cast<int>(std::min<int64_t>(workers_, std::max<int64_t>(total_tasks_, 1)));
  }
  stats.control_overlapped = streaming_;
  auto t0 = std::chrono::steady_clock::now();  // trace times count from here
  int64_t max_ub = 64;
  for (auto& k : p_.exec_graph.kernels) max_ub = std::max(max_ub, k.ub_bytes);
  std::vector<std::vector<TaskEvent>> events(std::max(workers_, 1));

  // Each worker's own continuations (linked chunks it made ready) come first, then the shared
  // queue, then the oldest continuation of another worker (work stealing keeps cores busy).
  std::vector<std::deque<Task>> local(std::max(workers_, 1));
  auto pop = [&](int wid, Task& t) {  // caller holds mu_; queued_ > 0
    --queued_;
    if (!local[wid].empty()) {
      t = local[wid].front();
      local[wid].pop_front();
      return;
    }
    if (!queue_.empty()) {
      t = lifo ? queue_.back() : queue_.front();
      if (lifo)
        queue_.pop_back();
      else
        queue_.pop_front();
      return;
    }
    for (int o = 1; o < workers_; ++o) {
      auto& d = local[(wid + o) % workers_];
      if (!d.empty()) {
        t = d.back();
        d.pop_back();
        return;
      }
    }
  };

  auto work = [&](int wid) {
    if (streaming_ && wid == 0) {
      try {
        build();
      } catch (...) {
        Fail(std::current_exception());
        return;
      }
    }
    char* ub = WorkerScratch(max_ub);
    Task kept{};  // a linked continuation this worker made ready and runs next itself
    bool have_kept = false;
    for (;;) {
      Task t{};
      if (have_kept) {
        t = kept;
        have_kept = false;
        std::lock_guard<std::mutex> lock(mu_);
        if (error_) return;
      } else {
        std::unique_lock<std::mutex> lock(mu_);
        auto ready = [&] { return queued_ > 0 || outstanding_ == 0 || error_; };
        if (!ready() && workers_ > 1) {
          const uint64_t seen = wake_seq_.load(std::memory_order_relaxed);  // (read under mu_)
          lock.unlock();
          SpinForWork(seen);
          lock.lock();
        }
        const bool waits = !ready();
        if (waits && --busy_ == 0) {
          // Every worker would wait: nothing runs, nothing is queued, and launches remain (their
          // dependencies can never finish). A compiler bug; an error, never a hang.
          FailLocked(std::make_exception_ptr(InternalError(StallReport())));
          return;
        }
        if (wid == 0 && (opts_.interrupted || opts_.timeout_s > 0)) {
          // The calling thread wakes every 50 ms to check for cancellation.
          while (!cv_.wait_for(lock, std::chrono::milliseconds(50), ready)) {
            try {
              PollCancel(true);
            } catch (...) {
              FailLocked(std::current_exception());
              return;
            }
          }
        } else {
          cv_.wait(lock, ready);
        }
        if (error_ || (queued_ == 0 && outstanding_ == 0)) return;
        if (waits) ++busy_;
        pop(wid, t);
      }
      if (wid == 0) {
        try {
          PollCancel();
        } catch (...) {
          Fail(std::current_exception());
          return;
        }
      }
      Instance& in = *instances_[t.inst];
      auto ts = std::chrono::steady_clock::now();
      try {
        RunTask(in, t.first, t.count, ub);
      } catch (...) {
        Fail(std::current_exception());
        return;
      }
      if (opts_.trace) {
        auto te = std::chrono::steady_clock::now();
        events[wid].push_back({wid, in.id, in.kernel->id, t.first, t.count,
                               std::chrono::duration_cast<std::chrono::nanoseconds>(ts - t0).count(),
                               std::chrono::duration_cast<std::chrono::nanoseconds>(te - t0).count()});
      }
      std::lock_guard<std::mutex> lock(mu_);
      const int64_t i = t.first / in.chunk;
      in.chunk_done[i] = 1;
      // Depth first: a linked launch's same chunk, once ready, runs next on this worker, with
      // the data it needs still in this core's cache; further ready ones go to the front of its
      // own deque (another worker may steal them).
      for (int id : in.link_to) {
        Instance& next = *instances_[id];
        if (++next.source_done[i] == static_cast<int>(next.link_from.size()) && next.pending == 0) {
          if (!have_kept) {
            kept = {next.id, t.first, t.count};
            have_kept = true;
            continue;
          }
          local[wid].push_front({next.id, t.first, t.count});
          ++queued_;
          WakeLocked(false);
        }
      }
      if (--in.remaining == 0) {
        in.finished = true;
        in.ReleaseShared();  // (no task of it runs any more)
        --outstanding_;
        bool more = false;
        for (int s : in.successors)
          if (--instances_[s]->pending == 0) more = PushReady(*instances_[s]) || more;
        if (more || outstanding_ == 0) WakeLocked(true);
      }
    }
  };
  if (phased_) {
    // Build on this thread; at each read of an element the kernels write, and at the end, run
    // what is made so far on the workers until it has all finished.
    drain_ = [&] {
      if (outstanding_ == 0) return;
      busy_ = workers_;
      WorkerPool::Get().Run(workers_, work);
      if (error_) std::rethrow_exception(error_);
    };
    build();
    stats.build_ms = stats.control_ms;
    drain_();
    drain_ = nullptr;
  } else {
    busy_ = workers_;
    if (launches > 0) WorkerPool::Get().Run(workers_, work);
  }
  if (error_) std::rethrow_exception(error_);
  instances_.resize(next_instance_);
  stats.tasks = total_tasks_;
  stats.launches = static_cast<int64_t>(instances_.size());
  for (auto& in : instances_) stats.pointwise_links += static_cast<int64_t>(in->link_from.size());
  stats.exec_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  for (auto& e : events) stats.events.insert(stats.events.end(), e.begin(), e.end());
  if (opts_.trace) {
    stats.deps.resize(instances_.size());
    stats.pointwise_deps.resize(instances_.size());
    for (auto& in : instances_) {  // (waits also lists those finished before it was made)
      stats.deps[in->id] = in->waits;
      stats.deps[in->id].insert(stats.deps[in->id].end(), in->link_from.begin(), in->link_from.end());
      std::sort(stats.deps[in->id].begin(), stats.deps[in->id].end());
      stats.pointwise_deps[in->id] = in->link_from;
    }
    stats.launch_records = std::move(launch_records_);
  }
  return stats;
}

// Waits a short while for WakeLocked to bump wake_seq_ past `seen`, without sleeping: in a call of
// many small dependent launches the next task is usually ready within microseconds, and a futex
// sleep and wake-up costs the waiter and the waker more than that (12 % of the tile-level flash
// attention's time went to them). Bounded, so an idle worker soon sleeps and leaves its core to
// the rest of the process.
void CallState::SpinForWork(uint64_t seen) const {
  static const int64_t kSpinNs = [] {
    const char* e = std::getenv("PYPTO_SPIN_US");
    return static_cast<int64_t>((e ? std::atof(e) : 50.0) * 1000);
  }();
  if (kSpinNs <= 0) return;
  const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(kSpinNs);
  for (int i = 1;; ++i) {
    if (wake_seq_.load(std::memory_order_acquire) != seen) return;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    if ((i & 15) == 0 && std::chrono::steady_clock::now() >= until) return;
  }
}

// What a stalled call waits for: the first unfinished launches and what each still needs.
std::string CallState::StallReport() const {
  std::ostringstream os;
  os << "the runtime stalled: " << outstanding_ << " launch(es) cannot start, their dependencies never finish";
  int shown = 0;
  for (int i = 0; i < next_instance_ && shown < 4; ++i) {
    const Instance* in = instances_[i].get();
    if (!in || in->finished) continue;
    ++shown;
    os << "\n  launch #" << in->id << " of " << in->kernel->name << ": waits for " << in->pending << " launch(es)";
    for (int w : in->waits)
      if (w < next_instance_ && instances_[w] && !instances_[w]->finished) os << " #" << w;
    if (!in->link_from.empty()) os << ", chunk-linked to " << in->link_from.size();
  }
  return os.str();
}

// The first error (a task's exception, a cancellation) stops every worker; it is rethrown.
void CallState::FailLocked(std::exception_ptr e) {
  if (!error_) error_ = e;
  stop_.store(true, std::memory_order_relaxed);
  WakeLocked(true);
}

void CallState::Fail(std::exception_ptr e) {
  std::lock_guard<std::mutex> lock(mu_);
  FailLocked(e);
}

// PyptoKernelCall::stop: true once the call has failed; on the calling thread it also polls for
// Ctrl-C and the timeout (every 16th step), so a long task of worker 0 is cancelled from inside.
int CallState::StopRequested(void* self) {
  auto* cs = static_cast<CallState*>(self);
  if (cs->stop_.load(std::memory_order_relaxed)) return 1;
  if (std::this_thread::get_id() != cs->caller_) return 0;
  if ((++cs->stop_polls_ & 15) != 0) return 0;  // a clock read every 16th step is plenty
  try {
    cs->PollCancel(true);
  } catch (...) {
    cs->Fail(std::current_exception());
    return 1;
  }
  return 0;
}

// One task: grid points [first, first + count) of an instance, native or interpreted.
void CallState::RunTask(Instance& in, int64_t first, int64_t count, char* ub) {
  const bool cancellable = workers_ > 1 || opts_.interrupted || opts_.timeout_s > 0;
  int (*stop)(void*) = cancellable ? &CallState::StopRequested : nullptr;
  // A distributed engine may carry a signal itself (a rank of another host: signal_hook.h).
  if (in.kernel->fence && HasSignalHook() && RunSignalHook(*in.kernel, in.params, in.env)) return;
  if (entries_) {
    PyptoKernelCall call{in.sym.data(), in.views.data(), in.grid.data(), first, count, ub, stop, this, &in.shared};
    try {
      if (in.iters == 1) {
        (*entries_)[in.kernel->id](&call);
        return;
      }
      // A batch of iterations: each iteration's points with its own symbols and views. (No shared
      // table: a cube kernel's shared packings are one launch's operands.)
      const size_t nsym = in.sym.size() / in.iters, nviews = in.views.size() / in.iters;
      call.shared = nullptr;
      for (int64_t p = first, end = first + count; p < end;) {
        const int64_t it = p / in.iter_points, local = p - it * in.iter_points;
        call.sym = in.sym.data() + it * nsym;
        call.params = in.views.data() + it * nviews;
        call.first = local;
        call.count = std::min(end - p, in.iter_points - local);
        (*entries_)[in.kernel->id](&call);
        p += call.count;
      }
    } catch (const std::invalid_argument& e) {
      // An index outside its tensor (pypto/index_nd.hpp; the message names the op and the line):
      // the user's error, as the interpreter reports it.
      throw UserError(e.what());
    }
    return;
  }
  SymEnv env = in.env;
  std::vector<int64_t> coord(in.grid.size());
  for (int64_t p = first; p < first + count; ++p) {
    int64_t rest = p;
    for (int d = static_cast<int>(in.grid.size()) - 1; d >= 0; --d) {
      coord[d] = rest % in.grid[d];
      rest /= in.grid[d];
    }
    if (stop && stop(this)) return;
    InterpretKernel(*in.kernel, in.params, coord, env, ub, stop, this);
  }
}

}  // namespace pypto::rt
