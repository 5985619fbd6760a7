// The CPU backend. Commands are resolved once, at load time, into a plan of
// raw pointers into the arena, so a step is a tight loop over the plan.
#include "CpuBackend.h"

#include "KernelLibrary.h"

#include <cblas.h>

#include <chrono>
#include <cstring>

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

template <typename T>
void runGemm(const tgx::Gemm &g, void *const *buffers,
             void (*gemm)(CBLAS_ORDER, CBLAS_TRANSPOSE, CBLAS_TRANSPOSE, blasint,
                          blasint, blasint, T, const T *, blasint, const T *,
                          blasint, T, T *, blasint)) {
  auto *a = static_cast<const T *>(buffers[0]);
  auto *b = static_cast<const T *>(buffers[1]);
  auto *c = static_cast<T *>(buffers[2]);
  // Row-major: op(a) is m x k, stored k x m when transposed; likewise b.
  auto m = blasint(g.m()), n = blasint(g.n()), k = blasint(g.k());
  blasint lda = g.transpose_a() ? m : k;
  blasint ldb = g.transpose_b() ? k : n;
  for (int64_t i = 0; i < g.batch(); ++i) {
    T *out = c + i * g.stride_c();
    gemm(CblasRowMajor, g.transpose_a() ? CblasTrans : CblasNoTrans,
         g.transpose_b() ? CblasTrans : CblasNoTrans, m, n, k, T(1),
         a + i * g.stride_a(), lda, b + i * g.stride_b(), ldb, T(0), out, n);
    // The bias epilogue: one pass over the rows just written (still in
    // cache for small ones), rounding as a separate add kernel would.
    if (g.epilogue() == tgx::GemmEpilogue_Bias) {
      auto *bias = static_cast<const T *>(buffers[3]);
      for (blasint row = 0; row < m; ++row)
        for (blasint j = 0; j < n; ++j)
          out[int64_t(row) * n + j] += bias[j];
    }
  }
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
                                         error);
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

void setCpuThreads(int threads) { openblas_set_num_threads(threads); }

} // namespace tg::runtime
