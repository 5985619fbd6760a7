// A pool of threads that run a range of loop iterations in contiguous
// chunks, the calling thread taking a share. The CPU backend has one per
// process: the generated kernels' parallel loops (through each kernel
// library's `tg_parallel_for_hook`) and the blocks of the matrix products
// (single-threaded OpenBLAS calls) both run on it, so no second pool
// competes for the cores.
#ifndef TG_RUNTIME_CPU_THREADPOOL_H
#define TG_RUNTIME_CPU_THREADPOOL_H

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace tg::runtime {

/// Runs iterations [begin, end) of a loop; `ctx` holds what it needs. The
/// C type of the kernel libraries' chunks (ParallelLaunch.h in the
/// compiler's CPU target).
using ChunkFn = void (*)(void *ctx, int64_t begin, int64_t end);

class ThreadPool {
public:
  /// A pool of `threads` threads, the caller of parallelFor included; the
  /// other threads start with the first job.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  /// Threads that share a job, the caller included.
  int size() const { return threads.load(std::memory_order_relaxed); }
  /// Waits for the running job, if any, then stops the threads; the next
  /// job starts `count` (at least 1).
  void resize(int count);

  /// Runs chunk(ctx, begin, end) over [0, n) split into size() contiguous
  /// chunks of nearly equal length, the caller running the first, and
  /// returns when every chunk has run. Called while the pool runs another
  /// job (a second thread stepping another session, or a chunk itself), it
  /// runs the whole range on the calling thread instead of waiting.
  void parallelFor(int64_t n, ChunkFn chunk, void *ctx);

  /// parallelFor over a callable f(begin, end).
  template <typename F> void parallelFor(int64_t n, F &f) {
    parallelFor(
        n,
        [](void *ctx, int64_t begin, int64_t end) {
          (*static_cast<F *>(ctx))(begin, end);
        },
        &f);
  }

private:
  void startWorkers();
  void stopWorkers();
  void work(int index, uint64_t seen);
  uint64_t awaitJob(uint64_t seen);
  void awaitWorkers();
  void runChunk(int index) const;

  std::atomic<int> threads;
  /// Held by the thread whose job the pool runs, for the whole job.
  std::mutex jobLock;
  std::vector<std::thread> workers;

  // The current job: written by its caller before it bumps `generation`,
  // read by the workers after they see the new generation, unchanged
  // until all of them have finished it.
  ChunkFn chunk = nullptr;
  void *ctx = nullptr;
  int64_t iterations = 0;
  int chunks = 1;
  bool stopping = false;

  std::atomic<uint64_t> generation{0};
  std::atomic<int> unfinished{0};
  /// Workers blocked on `wake` (or about to be): a caller that sees none
  /// publishes its job without a system call.
  std::atomic<int> sleepers{0};
  std::mutex sleepLock;
  std::condition_variable wake, finished;
};

} // namespace tg::runtime

#endif
