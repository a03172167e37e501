// A process-wide pool of persistent worker threads. A call runs one job on N workers: the
// calling thread is worker 0 and N-1 pool threads join it, so a small call never waits for a
// thread to start, and a tiny one (one task) never wakes anybody.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace pypto {

class WorkerPool {
 public:
  static WorkerPool& Get();

  /// Runs body(worker_id) for worker_id in [0, workers) and returns when all have returned.
  /// Calls from several threads take turns.
  void Run(int workers, const std::function<void(int)>& body);

 private:
  WorkerPool() = default;
  void HelperLoop(int id);

  std::mutex run_mu_;
  std::mutex mu_;
  std::condition_variable wake_cv_, done_cv_;
  std::vector<std::thread> threads_;
  const std::function<void(int)>* job_ = nullptr;
  uint64_t generation_ = 0;
  int wanted_ = 0;  // pool threads 1..wanted_ take part in the current job
  int active_ = 0;  // pool threads inside the current job
};

/// This thread's scratch buffer standing in for UB: at least `bytes`, 64-byte aligned.
char* WorkerScratch(int64_t bytes);

}  // namespace pypto
