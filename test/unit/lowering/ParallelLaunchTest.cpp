// The CPU target's parallel launches: a kernel whose large loop
// tg-cpu-parallelize-loops outlined calls its library's
// `tg_parallel_for_hook` with the loop's iteration count, and computes the
// same output whether the hook is unset (the library runs the whole range
// itself) or runs the range in chunks on other threads, in any order.
#include "tg/Targets/CpuTarget.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <algorithm>
#include <thread>
#include <vector>

using namespace mlir;

namespace {

using ChunkFn = void (*)(void *ctx, int64_t begin, int64_t end);
using ParallelForFn = void (*)(int64_t n, ChunkFn chunk, void *ctx);
using KernelFn = void (*)(void **buffers);

constexpr int64_t kRows = 512, kColumns = 256;

// y[i][j] = x[i][j] * s + i: a row loop large enough to be outlined, a
// scalar loaded before it (passed to the body) and the row index (each
// chunk must see its own rows).
const char *kKernels = R"mlir(
func.func @k0_scale(%x: memref<512x256xf32>, %s: memref<f32>, %y: memref<512x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %c512 = arith.constant 512 : index
  %scale = memref.load %s[] : memref<f32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c512, %c256) step (%c1, %c1) {
    %v = memref.load %x[%i, %j] : memref<512x256xf32>
    %row = arith.index_cast %i : index to i32
    %rowf = arith.sitofp %row : i32 to f32
    %w = arith.mulf %v, %scale : f32
    %z = arith.addf %w, %rowf : f32
    memref.store %z, %y[%i, %j] : memref<512x256xf32>
    scf.reduce
  }
  return
}
)mlir";

// The test's stand-in for the runtime's pool: three chunks, last first,
// each on a thread of its own.
int64_t hookedIterations = -1;
void threeThreadsBackwards(int64_t n, ChunkFn chunk, void *ctx) {
  hookedIterations = n;
  std::vector<std::thread> threads;
  for (int64_t part = 2; part >= 0; --part)
    threads.emplace_back([=] { chunk(ctx, n * part / 3, n * (part + 1) / 3); });
  for (std::thread &thread : threads)
    thread.join();
}

class ParallelLaunch : public ::testing::Test {
protected:
  void SetUp() override {
    context.loadDialect<func::FuncDialect, arith::ArithDialect,
                        memref::MemRefDialect, scf::SCFDialect>();
  }
  void TearDown() override {
    if (library)
      dlclose(library);
  }

  /// Compiles kKernels with the CPU target and loads the library.
  void load() {
    OwningOpRef<ModuleOp> kernels = parseSourceString<ModuleOp>(kKernels, &context);
    ASSERT_TRUE(kernels);
    auto compiled = tg::compileHostKernels(*kernels, {"k0_scale"});
    ASSERT_TRUE(bool(compiled)) << llvm::toString(compiled.takeError());
    ASSERT_EQ(compiled->symbols, std::vector<std::string>{"k0_scale_packed"});
    SmallString<128> path;
    ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("tg-parallel-launch", "so", path));
    {
      std::error_code ec;
      llvm::raw_fd_ostream os(path, ec);
      ASSERT_FALSE(ec) << ec.message();
      os.write(reinterpret_cast<const char *>(compiled->sharedObject.data()),
               compiled->sharedObject.size());
    }
    library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    llvm::sys::fs::remove(path);
    ASSERT_NE(library, nullptr) << dlerror();
    kernel = reinterpret_cast<KernelFn>(dlsym(library, "k0_scale_packed"));
    hook = static_cast<ParallelForFn *>(dlsym(library, "tg_parallel_for_hook"));
    ASSERT_NE(kernel, nullptr);
    ASSERT_NE(hook, nullptr);
  }

  std::vector<float> run() {
    std::vector<float> x(kRows * kColumns), y(kRows * kColumns, -1.0f);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = float(i % 97) * 0.25f;
    float scale = 3.0f;
    void *buffers[] = {x.data(), &scale, y.data()};
    kernel(buffers);
    return y;
  }

  static std::vector<float> expected() {
    std::vector<float> y(kRows * kColumns);
    for (int64_t i = 0; i < kRows; ++i)
      for (int64_t j = 0; j < kColumns; ++j)
        y[i * kColumns + j] = float((i * kColumns + j) % 97) * 0.25f * 3.0f + float(i);
    return y;
  }

  MLIRContext context;
  void *library = nullptr;
  KernelFn kernel = nullptr;
  ParallelForFn *hook = nullptr;
};

TEST_F(ParallelLaunch, WithoutAHookTheLibraryRunsTheLoopItself) {
  load();
  ASSERT_EQ(*hook, nullptr);
  EXPECT_EQ(run(), expected());
}

TEST_F(ParallelLaunch, TheHookGetsTheRowsAndAnyChunkingGivesTheSameOutput) {
  load();
  *hook = threeThreadsBackwards;
  hookedIterations = -1;
  EXPECT_EQ(run(), expected());
  // The loop's leading dimension: rows, each chunk running whole rows.
  EXPECT_EQ(hookedIterations, kRows);
}

} // namespace
