#include "runtime/worker_pool.h"

#include <cstdlib>
#include <memory>

namespace pypto {

WorkerPool& WorkerPool::Get() {
  // Never destroyed: its threads sleep until the process exits.
  static WorkerPool* pool = new WorkerPool;
  return *pool;
}

void WorkerPool::Run(int workers, const std::function<void(int)>& body) {
  if (workers <= 1) {
    body(0);
    return;
  }
  std::lock_guard<std::mutex> run_lock(run_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    while (static_cast<int>(threads_.size()) < workers - 1) {
      int id = static_cast<int>(threads_.size()) + 1;
      threads_.emplace_back([this, id] { HelperLoop(id); });
      threads_.back().detach();
    }
    job_ = &body;
    wanted_ = workers - 1;
    ++generation_;
  }
  wake_cv_.notify_all();
  body(0);
  std::unique_lock<std::mutex> lock(mu_);
  job_ = nullptr;  // helpers that wake from now on skip this job
  done_cv_.wait(lock, [&] { return active_ == 0; });
}

void WorkerPool::HelperLoop(int id) {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_cv_.wait(lock, [&] { return generation_ != seen; });
    seen = generation_;
    if (!job_ || id > wanted_) continue;
    const std::function<void(int)>* job = job_;
    ++active_;
    lock.unlock();
    (*job)(id);
    lock.lock();
    if (--active_ == 0) done_cv_.notify_all();
  }
}

char* WorkerScratch(int64_t bytes) {
  struct Scratch {
    char* p = nullptr;
    int64_t size = 0;
    ~Scratch() { std::free(p); }
  };
  thread_local Scratch s;
  if (s.size < bytes) {
    std::free(s.p);
    int64_t size = (bytes + 4095) / 4096 * 4096;
    s.p = static_cast<char*>(std::aligned_alloc(64, size));
    s.size = size;
  }
  return s.p;
}

}  // namespace pypto
