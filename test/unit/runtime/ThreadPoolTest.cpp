// The CPU backend's thread pool: every iteration runs exactly once, in
// contiguous chunks with the caller taking the first; workers that blocked
// between jobs wake up; concurrent and nested callers run inline instead of
// deadlocking; resizing between jobs.
#include "ThreadPool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <tuple>
#include <vector>

namespace tg::runtime {
namespace {

/// The chunks one job ran: (begin, end, ran on the calling thread).
struct Chunks {
  std::mutex lock;
  std::vector<std::tuple<int64_t, int64_t, bool>> ran;
  std::thread::id caller = std::this_thread::get_id();

  void operator()(int64_t begin, int64_t end) {
    std::lock_guard<std::mutex> guard(lock);
    ran.emplace_back(begin, end, std::this_thread::get_id() == caller);
  }
};

TEST(ThreadPool, RunsEachIterationOnceInContiguousChunks) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    for (int64_t n : {1, 2, 3, 7, 1000}) {
      Chunks chunks;
      pool.parallelFor(n, chunks);
      std::vector<int> seen(n, 0);
      for (auto [begin, end, onCaller] : chunks.ran) {
        ASSERT_LT(begin, end);
        // Chunks are as even as n allows.
        EXPECT_LE(end - begin, (n + threads - 1) / threads) << n;
        EXPECT_EQ(onCaller, begin == 0) << "the caller runs the first chunk";
        for (int64_t i = begin; i < end; ++i)
          ++seen[i];
      }
      EXPECT_EQ(seen, std::vector<int>(n, 1)) << threads << " threads, n = " << n;
      EXPECT_EQ(int64_t(chunks.ran.size()), std::min<int64_t>(n, threads));
    }
  }
}

TEST(ThreadPool, WorkersThatBlockedBetweenJobsWakeUp) {
  ThreadPool pool(3);
  for (int job = 0; job < 5; ++job) {
    // Longer than the workers poll: they block on the condition variable.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::atomic<int64_t> sum{0};
    auto add = [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        sum += i;
    };
    pool.parallelFor(300, add);
    EXPECT_EQ(sum.load(), 299 * 300 / 2);
  }
}

TEST(ThreadPool, ConcurrentAndNestedCallersRunInline) {
  ThreadPool pool(2);
  std::atomic<int64_t> total{0};
  auto caller = [&] {
    for (int job = 0; job < 2000; ++job) {
      auto outer = [&](int64_t begin, int64_t end) {
        // From inside a chunk: the pool is busy with this very job.
        auto inner = [&](int64_t b, int64_t e) { total += e - b; };
        pool.parallelFor(end - begin, inner);
      };
      pool.parallelFor(10, outer);
    }
  };
  std::thread other(caller);
  caller();
  other.join();
  EXPECT_EQ(total.load(), 2 * 2000 * 10);
}

TEST(ThreadPool, ResizesBetweenJobs) {
  ThreadPool pool(4);
  for (int threads : {4, 1, 3, 2}) {
    pool.resize(threads);
    EXPECT_EQ(pool.size(), threads);
    Chunks chunks;
    pool.parallelFor(12, chunks);
    EXPECT_EQ(int(chunks.ran.size()), threads);
  }
  pool.resize(0);
  EXPECT_EQ(pool.size(), 1) << "at least the calling thread";
}

} // namespace
} // namespace tg::runtime
