// Host emulation of Simt.h, for tests: each thread of a block is a host
// thread; __syncthreads, __syncwarp, the shuffles, ldmatrix and mma.sync are barriers
// over the block or the warp, so a kernel that diverges at one of them
// deadlocks here as on the GPU (reported after 60 s, not hung). An
// asynchronous copy lands in shared memory either as it is issued or only
// at the wait that covers it, each in turn by a fixed pseudo-random choice:
// a tile read before its wait (and the barrier after it) holds stale data
// here, and one copied into while warps still read it changes under them,
// as either may on the GPU; a copy never waited for aborts the test. mma.sync
// gathers the warp's fragments and computes each lane's accumulators from
// PTX's fragment layout for m16n8k16; bf16 rounding is nearest-even as
// cvt.rn.bf16x2.f32's; exp2 and log2 are exact where the GPU approximates
// (relative error below 2^-22).
#ifndef TG_RUNTIME_CUDA_KERNELS_SIMTEMULATOR_H
#define TG_RUNTIME_CUDA_KERNELS_SIMTEMULATOR_H

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#define TG_DEVICE inline
#define TG_KERNEL_128(minBlocks) extern "C" void
#define TG_SHARED_BYTES(name) unsigned char *name = ::tg::simt::emulated::sharedMemory()

namespace tg::simt {
namespace emulated {

class Barrier {
public:
  explicit Barrier(int parties) : parties(parties) {}
  void arriveAndWait() {
    std::unique_lock<std::mutex> lock(mutex);
    uint64_t arrivedIn = generation;
    if (++waiting == parties) {
      waiting = 0;
      ++generation;
      released.notify_all();
      return;
    }
    if (!released.wait_for(lock, std::chrono::seconds(60),
                           [&] { return generation != arrivedIn; })) {
      std::fprintf(stderr, "simt emulator: a barrier of %d threads waited 60 s "
                           "with %d arrived: the kernel diverges at a barrier\n",
                   parties, waiting);
      std::abort();
    }
  }

private:
  std::mutex mutex;
  std::condition_variable released;
  int parties, waiting = 0;
  uint64_t generation = 0;
};

/// What a warp's lanes exchange at a shuffle or an mma.
struct WarpExchange {
  Barrier barrier{32};
  float shuffled[32];
  const void *rows[32];
  uint32_t a[32][4], b[32][2];
};

struct Block {
  Block(int threads, size_t sharedBytes)
      : shared(sharedBytes + 16, 0xff), barrier(threads), warps(threads / 32) {
    for (auto &warp : warps)
      warp = std::make_unique<WarpExchange>();
  }
  /// Filled with 0xff (bf16 and f32 NaNs), as the GPU's is not zeroed: a
  /// tile read before it is written shows.
  std::vector<unsigned char> shared;
  Barrier barrier;
  std::vector<std::unique_ptr<WarpExchange>> warps;
};

/// An asynchronous copy's source bytes, written to `to` when waited for.
struct PendingCopy {
  void *to;
  unsigned char bytes[16];
  size_t size;
};

struct ThreadState {
  Block *block = nullptr;
  int thread = 0, blockX = 0, blockY = 0, gridX = 0;
  /// Copies issued since the last commit, and the committed groups, oldest
  /// first.
  std::vector<PendingCopy> uncommitted;
  std::deque<std::vector<PendingCopy>> committed;
  uint32_t copiesIssued = 0;
};
inline thread_local ThreadState self;

inline unsigned char *sharedMemory() {
  uintptr_t base = reinterpret_cast<uintptr_t>(self.block->shared.data());
  return reinterpret_cast<unsigned char *>((base + 15) & ~uintptr_t(15));
}
inline WarpExchange &warp() { return *self.block->warps[self.thread / 32]; }

} // namespace emulated

inline int threadId() { return emulated::self.thread; }
inline int blockX() { return emulated::self.blockX; }
inline int blockY() { return emulated::self.blockY; }
inline int gridX() { return emulated::self.gridX; }
inline void syncThreads() { emulated::self.block->barrier.arriveAndWait(); }
inline void syncWarp() { emulated::warp().barrier.arriveAndWait(); }

inline float shuffleXor(float value, int laneMask) {
  emulated::WarpExchange &warp = emulated::warp();
  int lane = threadId() % 32;
  warp.shuffled[lane] = value;
  warp.barrier.arriveAndWait();
  float result = warp.shuffled[lane ^ laneMask];
  warp.barrier.arriveAndWait();
  return result;
}

inline float floatFromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}
struct Chunk {
  uint32_t x, y, z, w;
};
inline uint32_t loadWord(const void *p) {
  uint32_t word;
  std::memcpy(&word, p, sizeof word);
  return word;
}
inline void storeWord(void *p, uint32_t word) { std::memcpy(p, &word, sizeof word); }
inline Chunk loadChunk(const void *p) {
  Chunk chunk;
  std::memcpy(&chunk, p, sizeof chunk);
  return chunk;
}
inline void storeChunk(void *p, Chunk chunk) { std::memcpy(p, &chunk, sizeof chunk); }
namespace emulated {
inline void copyAsync(void *dst, const void *src, bool valid, size_t size) {
  PendingCopy copy{dst, {}, size};
  if (valid)
    std::memcpy(copy.bytes, src, size);
  // Land half the copies now (Knuth's multiplicative hash of their count).
  if ((self.copiesIssued++ * 2654435761u) >> 31)
    std::memcpy(dst, copy.bytes, size);
  else
    self.uncommitted.push_back(copy);
}
} // namespace emulated
inline void copyChunkAsync(void *dst, const void *src, bool valid) {
  emulated::copyAsync(dst, src, valid, 16);
}
inline void copyWordAsync(void *dst, const void *src, bool valid) {
  emulated::copyAsync(dst, src, valid, 4);
}
inline void commitAsyncCopies() {
  emulated::self.committed.push_back(std::move(emulated::self.uncommitted));
  emulated::self.uncommitted.clear();
}
template <int Pending>
inline void waitAsyncCopies() {
  auto &groups = emulated::self.committed;
  for (; groups.size() > size_t(Pending); groups.pop_front())
    for (const emulated::PendingCopy &copy : groups.front())
      std::memcpy(copy.to, copy.bytes, copy.size);
}

inline void atomicAddFloat(float *address, float value) {
  static std::mutex adding;
  std::lock_guard<std::mutex> lock(adding);
  *address += value;
}
inline float exp2Fast(float x) { return std::exp2(x); }
inline float log2Fast(float x) { return std::log2(x); }

inline uint16_t roundToBf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return 0x7fff; // NaN
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return uint16_t(bits >> 16);
}
inline uint32_t packBf16(float low, float high) {
  return uint32_t(roundToBf16(low)) | uint32_t(roundToBf16(high)) << 16;
}

inline void loadMatrices(uint32_t r[4], const void *row, bool transposed) {
  emulated::WarpExchange &warp = emulated::warp();
  int lane = threadId() % 32;
  warp.rows[lane] = row;
  warp.barrier.arriveAndWait();
  auto element = [&](int matrix, int row, int col) {
    uint16_t value;
    std::memcpy(&value, static_cast<const uint16_t *>(warp.rows[8 * matrix + row]) + col,
                sizeof value);
    return uint32_t(value);
  };
  int group = lane / 4, inGroup = lane % 4;
  for (int i = 0; i < 4; ++i)
    r[i] = transposed ? element(i, 2 * inGroup, group) | element(i, 2 * inGroup + 1, group) << 16
                      : element(i, group, 2 * inGroup) | element(i, group, 2 * inGroup + 1) << 16;
  warp.barrier.arriveAndWait();
}
inline void loadMatrices(uint32_t r[4], const void *row) { loadMatrices(r, row, false); }
inline void loadMatricesTransposed(uint32_t r[4], const void *row) { loadMatrices(r, row, true); }

inline void mma16816(float c[4], const uint32_t a[4], const uint32_t b[2]) {
  emulated::WarpExchange &warp = emulated::warp();
  int lane = threadId() % 32;
  std::memcpy(warp.a[lane], a, sizeof warp.a[lane]);
  std::memcpy(warp.b[lane], b, sizeof warp.b[lane]);
  warp.barrier.arriveAndWait();
  auto half = [](uint32_t word, int k) {
    return floatFromBits((k % 2 ? word >> 16 : word & 0xffffu) << 16);
  };
  // A(row, k): lane (row % 8) * 4 + (k % 8) / 2, register (row >= 8) +
  // 2 (k >= 8); B(k, n): lane n * 4 + (k % 8) / 2, register (k >= 8).
  auto elementA = [&](int row, int k) {
    return half(warp.a[(row % 8) * 4 + (k % 8) / 2][(row >= 8) + 2 * (k >= 8)], k);
  };
  auto elementB = [&](int k, int n) {
    return half(warp.b[n * 4 + (k % 8) / 2][k >= 8], k);
  };
  int group = lane / 4, inGroup = lane % 4;
  for (int i = 0; i < 4; ++i) {
    int row = group + (i >= 2 ? 8 : 0), col = 2 * inGroup + (i & 1);
    float sum = 0;
    for (int k = 0; k < 16; ++k)
      sum += elementA(row, k) * elementB(k, col);
    c[i] += sum;
  }
  warp.barrier.arriveAndWait();
}

/// Runs `kernel` over a grid of gridX x gridY blocks of `threads` threads
/// (a multiple of 32), one block at a time.
inline void launch(int gridXSize, int gridYSize, int threads, size_t sharedBytes,
                   const std::function<void()> &kernel) {
  for (int y = 0; y < gridYSize; ++y)
    for (int x = 0; x < gridXSize; ++x) {
      emulated::Block block(threads, sharedBytes);
      std::vector<std::thread> team;
      team.reserve(threads);
      for (int t = 0; t < threads; ++t)
        team.emplace_back([&, t] {
          emulated::self = {&block, t, x, y, gridXSize, {}, {}, uint32_t(t)};
          kernel();
          size_t pending = emulated::self.uncommitted.size();
          for (const auto &group : emulated::self.committed)
            pending += group.size();
          if (pending) {
            std::fprintf(stderr, "simt emulator: thread %d of block (%d, %d) ended with %zu "
                                 "asynchronous copies never waited for\n",
                         t, x, y, pending);
            std::abort();
          }
        });
      for (std::thread &thread : team)
        thread.join();
    }
}

} // namespace tg::simt

#endif
