#include "ThreadPool.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <system_error>

namespace tg::runtime {
namespace {

/// How long an idle thread (a worker between jobs, the caller waiting for
/// the workers) polls before it blocks. A training step hands the pool a
/// job every few tens of microseconds in its parallel stretches (kernels
/// and matrix products back to back), while waking a blocked thread costs
/// a system call on each side, ~10-50 us in a VM; longer serial stretches
/// (small kernels, collectives) leave the other cores idle after this,
/// instead of spinning against whatever else runs there.
constexpr auto kSpin = std::chrono::microseconds(50);

/// Whether this thread is running a chunk of a job: a parallelFor from
/// there runs inline (the pool's threads are all busy with that job).
thread_local bool inJob = false;

inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

/// Polls `ready` for up to kSpin; whether it became true.
template <typename Ready> bool spinUntil(Ready &&ready) {
  auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (unsigned i = 1;; ++i) {
    if (ready())
      return true;
    relax();
    // The clock is read every 64 polls: a read costs about as much.
    if (i % 64 == 0 && std::chrono::steady_clock::now() > deadline)
      return ready();
  }
}

} // namespace

ThreadPool::ThreadPool(int count) : threads(std::max(count, 1)) {}

ThreadPool::~ThreadPool() {
  std::lock_guard<std::mutex> job(jobLock);
  stopWorkers();
}

void ThreadPool::resize(int count) {
  std::lock_guard<std::mutex> job(jobLock);
  stopWorkers();
  threads.store(std::max(count, 1), std::memory_order_relaxed);
}

void ThreadPool::startWorkers() {
  uint64_t now = generation.load(std::memory_order_relaxed);
  try {
    for (int i = 1; i < size(); ++i)
      workers.emplace_back([this, i, now] { work(i, now); });
  } catch (const std::system_error &e) {
    // All or none: a job handed to a pool missing workers would wait for
    // their chunks forever.
    std::string started = std::to_string(workers.size() + 1);
    stopWorkers();
    throw std::runtime_error("cannot start " + std::to_string(size()) +
                             " threads (" + e.what() + " after " + started +
                             "); run with fewer (tgrun --threads, tg_set_num_threads)");
  }
}

void ThreadPool::stopWorkers() {
  if (workers.empty())
    return;
  stopping = true;
  generation.fetch_add(1);
  {
    std::lock_guard<std::mutex> lock(sleepLock);
    wake.notify_all();
  }
  for (std::thread &worker : workers)
    worker.join();
  workers.clear();
  stopping = false;
}

void ThreadPool::runChunk(int index) const {
  // Chunk i: iterations [i*q + min(i, r), ...) for n = q*chunks + r, the
  // first r chunks one longer.
  int64_t quotient = iterations / chunks, remainder = iterations % chunks;
  int64_t begin = index * quotient + std::min<int64_t>(index, remainder);
  int64_t end = begin + quotient + (index < remainder ? 1 : 0);
  if (begin < end)
    chunk(ctx, begin, end);
}

void ThreadPool::parallelFor(int64_t n, ChunkFn body, void *context) {
  if (n <= 0)
    return;
  std::unique_lock<std::mutex> job(jobLock, std::defer_lock);
  if (inJob || size() == 1 || n == 1 || !job.try_lock()) {
    body(context, 0, n);
    return;
  }
  if (workers.empty())
    startWorkers();
  chunk = body;
  ctx = context;
  iterations = n;
  chunks = size();
  // Every worker takes part (those without iterations just report back):
  // then no worker can still be reading this job when the next one is
  // written.
  unfinished.store(int(workers.size()), std::memory_order_relaxed);
  // Sequentially consistent, with the sleepers' count below and in
  // awaitJob: either this caller sees a worker about to block and wakes
  // it, or that worker sees the new generation and does not block.
  generation.fetch_add(1);
  if (sleepers.load() > 0) {
    std::lock_guard<std::mutex> lock(sleepLock);
    wake.notify_all();
  }
  inJob = true;
  runChunk(0);
  inJob = false;
  awaitWorkers();
}

void ThreadPool::awaitWorkers() {
  auto done = [&] { return unfinished.load(std::memory_order_acquire) == 0; };
  if (spinUntil(done))
    return;
  std::unique_lock<std::mutex> lock(sleepLock);
  finished.wait(lock, done);
}

uint64_t ThreadPool::awaitJob(uint64_t seen) {
  uint64_t now = seen;
  auto published = [&] {
    now = generation.load(std::memory_order_acquire);
    return now != seen;
  };
  if (spinUntil(published))
    return now;
  std::unique_lock<std::mutex> lock(sleepLock);
  sleepers.fetch_add(1);
  wake.wait(lock, [&] {
    now = generation.load();
    return now != seen;
  });
  sleepers.fetch_sub(1);
  return now;
}

void ThreadPool::work(int index, uint64_t seen) {
  inJob = true;
  for (;;) {
    seen = awaitJob(seen);
    if (stopping)
      return;
    runChunk(index);
    // The last worker to finish wakes the caller if it blocked; under the
    // lock, so that the caller cannot miss it between its check and its
    // wait.
    if (unfinished.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(sleepLock);
      finished.notify_one();
    }
  }
}

} // namespace tg::runtime
