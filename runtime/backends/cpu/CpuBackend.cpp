// The CPU backend. Commands are resolved once, at load time, into a plan of
// raw pointers into the arena, so a step is a tight loop over the plan.
#include "CpuBackend.h"

#include "KernelLibrary.h"
#include "ThreadPool.h"
#include "tg/runtime/GemmActivation.h"
#include "tg/runtime/GemmLayout.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

#include <sys/mman.h>

namespace tg::runtime {
namespace {

/// Anonymous pages: zeroed by the kernel, touched (and committed) only as
/// the program uses them, page-aligned (kernels assume 64 bytes).
class Arena {
public:
  ~Arena() {
    if (base)
      ::munmap(base, bytes);
  }
  bool allocate(uint64_t size) {
    bytes = size ? size : 1;
    void *p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    base = p == MAP_FAILED ? nullptr : static_cast<uint8_t *>(p);
    return base != nullptr;
  }
  uint8_t *get() const { return base; }

private:
  uint8_t *base = nullptr;
  uint64_t bytes = 0;
};

/// One command with its operands resolved to arena addresses.
struct Step {
  tgx::CommandKind kind;
  uint32_t command = 0;           // index in Program.commands
  KernelFn kernel = nullptr;      // Kernel
  const tgx::Gemm *gemm = nullptr; // Gemm
  std::size_t copyBytes = 0;      // Copy
  // Collective: off stream 0, it runs in the background until a command
  // awaiting it (or the end of the step) needs its result.
  bool background = false;
  std::vector<void *> buffers;
  // The background collectives this command awaits.
  std::vector<uint32_t> awaitedCollectives;
};

/// Whether the matrix products run on the pool: OpenBLAS's pthread build
/// (Debian's default) takes concurrent calls from several threads when
/// it is set to one thread of its own (its buffers are locked, at most
/// 2 x MAX_THREADS = 128 in use at once in Debian's 0.3.21). Its OpenMP
/// build re-reads its thread count from OpenMP at every call, so there it
/// keeps its own threads (sized by setCpuThreads) and a product runs as
/// one call.
bool blasOnPool() {
  static const bool pthreads = openblas_get_parallel() == 1;
  return pthreads;
}

/// Threads the pool starts with: OpenBLAS's own count where the user set
/// one (OPENBLAS_NUM_THREADS, or OMP_NUM_THREADS it also reads), otherwise
/// this machine's cores shared between the ranks Open MPI started on it,
/// so that `tgrun -n 4` on 8 cores runs 4 x 2 threads, not 4 x 8 spinning
/// against each other.
int defaultCpuThreads() {
  for (const char *name : {"OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"})
    if (const char *set = std::getenv(name); set && std::atoi(set) > 0)
      return openblas_get_num_threads();
  int localRanks = 1;
  if (const char *size = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE"))
    localRanks = std::max(1, std::atoi(size));
  int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / localRanks);
}

/// The process's pool, of defaultCpuThreads() until setCpuThreads says
/// otherwise. OpenBLAS then runs single-threaded on the pool's threads, so
/// its own threads never wake up. Leaked: kernels may still run while
/// static destructors do.
ThreadPool &cpuThreads() {
  static ThreadPool *pool = [] {
    auto *threads = new ThreadPool(defaultCpuThreads());
    openblas_set_num_threads(blasOnPool() ? 1 : threads->size());
    return threads;
  }();
  return *pool;
}

/// The kernel libraries' tg_parallel_for_hook.
void runOnCpuThreads(int64_t n, ChunkFn chunk, void *ctx) {
  cpuThreads().parallelFor(n, chunk, ctx);
}

/// Fewer FLOPs than this (a few microseconds of sgemm) are not worth
/// handing to other threads.
constexpr double kMinPooledGemmFlops = 1 << 21;
/// The most single-threaded OpenBLAS calls in flight at once: well within
/// its table of buffers (blasOnPool).
constexpr int kMaxConcurrentBlasCalls = 64;
/// A product cut into bands of rows gives the same bits as in one call
/// only where OpenBLAS runs the same kernels on the same tiles. Rows of our
/// row-major C are OpenBLAS's N dimension (it computes the column-major
/// transpose), which 0.3.21's x86 kernels tile in 2, 4, 8 or 12 (f32 and
/// f64; measured on its Haswell and SkylakeX kernels, Zen runs Haswell's):
/// bands start at multiples of 24 rows, the nearest to an even cut. Bands
/// of fewer than 2^20 multiply-adds are avoided, because below 100^3
/// OpenBLAS's AVX-512 cores switch to small-matrix kernels. (Cuts between
/// columns would not do: the M dimension's tiling follows its cache
/// blocking.)
constexpr int64_t kBandRows = 24;
constexpr double kMinBandMultiplyAdds = 1 << 20;

template <typename T>
using GemmFn = void (*)(CBLAS_ORDER, CBLAS_TRANSPOSE, CBLAS_TRANSPOSE, blasint, blasint,
                        blasint, T, const T *, blasint, const T *, blasint, T, T *, blasint);

/// A Gemm command's `batch` products, each cut into `bands` bands of rows of
/// C. A block (one band of one product) is one single-threaded BLAS call and
/// its bias epilogue.
template <typename T> struct GemmBlocks {
  const tgx::Gemm &g;
  void *const *buffers;
  GemmFn<T> gemm;
  int64_t bands = 1;

  int64_t count() const { return g.batch() * bands; }

  /// The bands a product can be cut into (see kBandRows).
  int64_t mostBands() const {
    double multiplyAdds = double(g.m()) * double(g.n()) * double(g.k());
    return std::max<int64_t>(
        1, std::min<int64_t>(g.m() / kBandRows, int64_t(multiplyAdds / kMinBandMultiplyAdds)));
  }

  /// Bands are at least kBandRows long (mostBands), so rounding to the
  /// nearest multiple keeps every band non-empty.
  int64_t bandStart(int64_t band) const {
    if (band == bands)
      return g.m();
    return (g.m() * band / bands + kBandRows / 2) / kBandRows * kBandRows;
  }

  void run(int64_t block) const {
    int64_t i = block / bands, band = block % bands;
    int64_t first = bandStart(band), rows = bandStart(band + 1) - first;
    GemmOperand la = gemmOperand(g, 0), lb = gemmOperand(g, 1), lc = gemmOperand(g, 2);
    // Row-major: op(a) is m x k, stored k x m when transposed; likewise b.
    auto *a = static_cast<const T *>(buffers[0]) + gemmOffset(g, la, i) +
              (g.transpose_a() ? first : first * la.ld);
    auto *b = static_cast<const T *>(buffers[1]) + gemmOffset(g, lb, i);
    auto *c = static_cast<T *>(buffers[2]) + gemmOffset(g, lc, i) + first * lc.ld;
    gemm(CblasRowMajor, g.transpose_a() ? CblasTrans : CblasNoTrans,
         g.transpose_b() ? CblasTrans : CblasNoTrans, blasint(rows), blasint(g.n()),
         blasint(g.k()), T(1), a, blasint(la.ld), b, blasint(lb.ld), T(0), c, blasint(lc.ld));
    // The bias and addend epilogue: one pass over the rows just written
    // (still in cache for small ones), rounding after each add as separate
    // add kernels would.
    GemmExtraOperands extra = gemmExtraOperands(g);
    const T *bias = g.epilogue() == tgx::GemmEpilogue_BiasGrad || extra.vector < 0
                        ? nullptr
                        : static_cast<const T *>(buffers[extra.vector]);
    if (g.activation() != tgx::GemmActivation_None) {
      applyActivation(c, first, rows, bias, static_cast<T *>(buffers[extra.aux]));
      return;
    }
    const T *addend =
        extra.addend < 0 ? nullptr : static_cast<const T *>(buffers[extra.addend]) + first * g.n();
    for (int64_t row = 0; row < rows && (bias || addend); ++row) {
      T *out = c + row * lc.ld;
      if (bias && addend) // (product + bias) + addend, each sum rounded to T
        for (int64_t j = 0; j < g.n(); ++j)
          out[j] = T(out[j] + bias[j]) + addend[row * g.n() + j];
      else if (bias)
        for (int64_t j = 0; j < g.n(); ++j)
          out[j] += bias[j];
      else
        for (int64_t j = 0; j < g.n(); ++j)
          out[j] += addend[row * g.n() + j];
    }
  }

  /// The activation epilogue over `rows` rows of c from row `first` (batch
  /// 1, c packed; GemmActivation.h): in the same pass as the bias, each
  /// value rounded to T once.
  void applyActivation(T *c, int64_t first, int64_t rows, const T *bias, T *aux) const {
    int64_t n = g.n();
    aux += first * n;
    if (g.activation() == tgx::GemmActivation_GeluTanh) {
      for (int64_t i = 0; i < rows * n; ++i) {
        T x = bias ? T(c[i] + bias[i % n]) : c[i];
        aux[i] = x;
        c[i] = T(geluTanh(double(x)));
      }
      return;
    }
    for (int64_t i = 0; i < rows * n; ++i)
      c[i] = T(double(c[i]) * geluTanhDerivative(double(aux[i])));
  }
};

/// Rows a block of the BiasGrad epilogue's column sums adds up before the
/// block's sums join the total (blockwise summation).
constexpr int64_t kSumBlockRows = 64;
/// Columns one task of those sums takes.
constexpr int64_t kSumChunkColumns = 64;

/// The BiasGrad epilogue: the sums of c's m rows (batch 1, packed, as
/// written) into operand 3, in double, blockwise. The columns are split
/// between the pool's threads, each summed in the same order: the same
/// bits for any thread count.
template <typename T> void sumRows(const tgx::Gemm &g, void *const *buffers) {
  const T *c = static_cast<const T *>(buffers[2]);
  T *sums = static_cast<T *>(buffers[3]);
  int64_t m = g.m(), n = g.n();
  auto sumColumns = [&](int64_t firstChunk, int64_t endChunk) {
    int64_t first = firstChunk * kSumChunkColumns;
    int64_t end = std::min(n, endChunk * kSumChunkColumns);
    std::vector<double> total(size_t(end - first), 0.0), block(total.size());
    for (int64_t r0 = 0; r0 < m; r0 += kSumBlockRows) {
      std::fill(block.begin(), block.end(), 0.0);
      for (int64_t r = r0; r < std::min(m, r0 + kSumBlockRows); ++r)
        for (int64_t j = first; j < end; ++j)
          block[size_t(j - first)] += double(c[r * n + j]);
      for (size_t j = 0; j < total.size(); ++j)
        total[j] += block[j];
    }
    for (int64_t j = first; j < end; ++j)
      sums[j] = T(total[size_t(j - first)]);
  };
  cpuThreads().parallelFor((n + kSumChunkColumns - 1) / kSumChunkColumns, sumColumns);
}

/// Runs a Gemm command on the pool: whole products per thread where the
/// batch divides evenly between the threads or has 4 or more products per
/// thread, otherwise each product cut into bands of rows so that the
/// blocks divide evenly (as far as the bands allow). Either way every
/// element of C comes out as in one call over the whole product.
template <typename T> void runGemm(const tgx::Gemm &g, void *const *buffers, GemmFn<T> gemm) {
  GemmBlocks<T> blocks{g, buffers, gemm};
  ThreadPool &pool = cpuThreads();
  int64_t groups = blasOnPool() ? std::min(pool.size(), kMaxConcurrentBlasCalls) : 1;
  int64_t batch = g.batch();
  if (groups > 1 && batch % groups != 0 && batch < 4 * groups)
    blocks.bands = std::min(groups / std::gcd(batch, groups), blocks.mostBands());
  double flops = 2.0 * double(g.m()) * double(g.n()) * double(g.k()) * double(batch);
  if (groups == 1 || blocks.count() == 1 || flops < kMinPooledGemmFlops) {
    for (int64_t block = 0; block < blocks.count(); ++block)
      blocks.run(block);
  } else {
    // One group of consecutive blocks per thread, so that at most `groups`
    // BLAS calls are in flight.
    auto runGroups = [&](int64_t begin, int64_t end) {
      int64_t count = blocks.count();
      for (int64_t block = count * begin / groups; block < count * end / groups; ++block)
        blocks.run(block);
    };
    pool.parallelFor(groups, runGroups);
  }
  if (g.epilogue() == tgx::GemmEpilogue_BiasGrad)
    sumRows<T>(g, buffers);
}

class CpuBackend final : public Backend {
public:
  bool write(uint64_t offset, const void *src, uint64_t size, std::string &) override {
    std::memcpy(arena.get() + offset, src, size);
    return true;
  }
  bool read(uint64_t offset, void *dst, uint64_t size, std::string &) const override {
    std::memcpy(dst, arena.get() + offset, size);
    return true;
  }

  bool run(std::string &error) override {
    for (Step &step : plan)
      if (!execute(step, error))
        return false;
    return finishCollectives(error);
  }

  bool runProfiled(std::vector<double> &start, std::vector<double> &seconds,
                   std::string &error) override {
    using Clock = std::chrono::steady_clock;
    start.resize(plan.size());
    seconds.resize(plan.size());
    Clock::time_point first;
    for (std::size_t i = 0; i < plan.size(); ++i) {
      Clock::time_point begin = Clock::now();
      if (i == 0)
        first = begin;
      if (!execute(plan[i], error))
        return false;
      Clock::time_point end = Clock::now();
      start[i] = std::chrono::duration<double>(begin - first).count();
      seconds[i] = std::chrono::duration<double>(end - begin).count();
    }
    return finishCollectives(error);
  }

  bool load(const tgx::Program &program, const std::string &sourceName,
            std::unique_ptr<Communicator> collectives, std::string &error) {
    communicator = std::move(collectives);
    if (!arena.allocate(program.arena_bytes())) {
      error = sourceName + ": cannot allocate the arena of " +
              std::to_string(program.arena_bytes()) +
              " bytes; free memory or use a smaller batch";
      return false;
    }
    for (const tgx::Constant *c : *program.constants())
      std::memcpy(arena.get() + c->range()->offset(), c->data()->data(), c->data()->size());

    for (uint32_t i = 0; i < program.modules()->size(); ++i) {
      auto library = KernelLibrary::load(*program.modules()->Get(i),
                                         sourceName + ": modules[" + std::to_string(i) + "]",
                                         runOnCpuThreads, error);
      if (!library)
        return false;
      libraries.push_back(std::move(library));
    }
    for (uint32_t i = 0; i < program.commands()->size(); ++i) {
      const tgx::Command *c = program.commands()->Get(i);
      Step step;
      step.kind = c->kind();
      step.command = i;
      for (const tgx::BufferRange *r : *c->operands())
        step.buffers.push_back(arena.get() + r->offset());
      if (c->kind() == tgx::CommandKind_Kernel)
        step.kernel = libraries[c->module_()]->kernels()[c->kernel()];
      else if (c->kind() == tgx::CommandKind_Gemm)
        step.gemm = c->gemm();
      else if (c->kind() == tgx::CommandKind_Copy)
        step.copyBytes = c->operands()->Get(0)->size();
      // Verified: collectives run over mesh axes of 2 or more ranks, so
      // the program has a communicator.
      if (c->kind() == tgx::CommandKind_Collective) {
        step.background = c->stream() != 0;
        if (step.background)
          backgroundCollectives.push_back(i);
      }
      // Verified: a command awaits earlier ones, already in the plan.
      if (c->awaits())
        for (uint32_t awaited : *c->awaits())
          if (plan[awaited].background)
            step.awaitedCollectives.push_back(awaited);
      plan.push_back(std::move(step));
    }
    return true;
  }

private:
  bool execute(Step &step, std::string &error) {
    for (uint32_t awaited : step.awaitedCollectives)
      if (!communicator->wait(awaited, error))
        return false;
    switch (step.kind) {
    case tgx::CommandKind_Kernel:
      step.kernel(step.buffers.data());
      break;
    case tgx::CommandKind_Gemm:
      if (step.gemm->dtype() == tgx::DType_F32)
        runGemm<float>(*step.gemm, step.buffers.data(), cblas_sgemm);
      else
        runGemm<double>(*step.gemm, step.buffers.data(), cblas_dgemm);
      break;
    case tgx::CommandKind_Copy:
      std::memmove(step.buffers[1], step.buffers[0], step.copyBytes);
      break;
    case tgx::CommandKind_Collective:
      if (!communicator->start(step.command, step.buffers[0], step.buffers[1], error))
        return false;
      return step.background || communicator->wait(step.command, error);
    case tgx::CommandKind_Attention: // the verifier keeps them to CUDA programs
      error = "an attention command reached the CPU backend, which has no kernels for it";
      return false;
    }
    if (!backgroundCollectives.empty())
      communicator->progress();
    return true;
  }

  /// A step ends when its last background collective has.
  bool finishCollectives(std::string &error) {
    for (uint32_t command : backgroundCollectives)
      if (!communicator->wait(command, error))
        return false;
    return true;
  }

  Arena arena;
  std::unique_ptr<Communicator> communicator;
  std::vector<uint32_t> backgroundCollectives;
  std::vector<std::unique_ptr<KernelLibrary>> libraries;
  std::vector<Step> plan;
};

} // namespace

std::unique_ptr<Backend> createCpuBackend(const tgx::Program &program,
                                          const std::string &sourceName,
                                          std::unique_ptr<Communicator> communicator,
                                          std::string &error) {
  auto backend = std::make_unique<CpuBackend>();
  if (!backend->load(program, sourceName, std::move(communicator), error))
    return nullptr;
  return backend;
}

void setCpuThreads(int threads) {
  cpuThreads().resize(threads);
  if (!blasOnPool())
    openblas_set_num_threads(threads);
}

int getCpuThreads() { return int(cpuThreads().size()); }

} // namespace tg::runtime
