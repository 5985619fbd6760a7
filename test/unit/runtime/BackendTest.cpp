// The CPU backend on its own: Gemm against a naive loop (transposes,
// batches, broadcast operands, both dtypes), and load-time errors.
#include "TestSupport.h"
#include "tg/runtime/Backend.h"
#include "tg/runtime/GemmActivation.h"
#include "tg/runtime/tg_runtime.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace tg;
using tg::test::ProgramSpec;

namespace {

struct GemmCase {
  tgx::DType dtype;
  bool transposeA, transposeB;
  int64_t m, n, k, batch;
  bool broadcastB; // stride_b 0: one b for every batch
};

/// The CPU backend of `spec`'s program, built into `bytes` (which the
/// backend reads, so they must outlive it) and verified first; null, the
/// test failed, where either step fails.
std::unique_ptr<runtime::Backend> cpuBackend(const ProgramSpec &spec, std::vector<uint8_t> &bytes,
                                             const char *name) {
  bytes = test::build(spec);
  std::string error;
  if (!runtime::verifyArtifact(bytes.data(), bytes.size(), name, error)) {
    ADD_FAILURE() << error;
    return nullptr;
  }
  auto backend =
      runtime::createBackend(*tgx::GetProgram(bytes.data()), name, runtime::RankPlacement{}, error);
  if (!backend)
    ADD_FAILURE() << error;
  return backend;
}

template <typename T> void checkGemm(const GemmCase &c) {
  ProgramSpec spec;
  spec.addInterfaceSlots();
  int64_t batchB = c.broadcastB ? 1 : c.batch;
  spec.addSlot("a", c.dtype, {c.batch, c.m * c.k});
  spec.addSlot("b", c.dtype, {batchB, c.k * c.n});
  spec.addSlot("c", c.dtype, {c.batch, c.m * c.n});
  test::CommandSpec command{tgx::CommandKind_Gemm};
  command.hasGemm = true;
  command.gemm = {c.dtype, c.transposeA, c.transposeB, c.m, c.n, c.k, c.batch,
                  c.m * c.k, c.broadcastB ? 0 : c.k * c.n, c.m * c.n};
  command.operands = {spec.slot("a").range, spec.slot("b").range, spec.slot("c").range};
  spec.commands.push_back(command);
  std::vector<uint8_t> bytes;
  std::unique_ptr<runtime::Backend> backend = cpuBackend(spec, bytes, "gemm.tgx");
  ASSERT_TRUE(backend);
  std::string error;

  std::vector<T> a(c.batch * c.m * c.k), b(batchB * c.k * c.n), out(c.batch * c.m * c.n);
  for (std::size_t i = 0; i < a.size(); ++i)
    a[i] = T(std::sin(double(i)));
  for (std::size_t i = 0; i < b.size(); ++i)
    b[i] = T(std::cos(double(i) * 0.7));
  ASSERT_TRUE(backend->write(spec.slot("a").range.offset, a.data(), a.size() * sizeof(T), error));
  ASSERT_TRUE(backend->write(spec.slot("b").range.offset, b.data(), b.size() * sizeof(T), error));
  ASSERT_TRUE(backend->run(error)) << error;
  ASSERT_TRUE(backend->read(spec.slot("c").range.offset, out.data(), out.size() * sizeof(T), error));

  for (int64_t p = 0; p < c.batch; ++p) {
    const T *ap = a.data() + p * c.m * c.k;
    const T *bp = b.data() + (c.broadcastB ? 0 : p * c.k * c.n);
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        double expected = 0;
        for (int64_t l = 0; l < c.k; ++l) {
          // a is m x k, or k x m when transposed; b is k x n, or n x k.
          double av = c.transposeA ? ap[l * c.m + i] : ap[i * c.k + l];
          double bv = c.transposeB ? bp[j * c.k + l] : bp[l * c.n + j];
          expected += av * bv;
        }
        double tolerance = (sizeof(T) == 4 ? 1e-5 : 1e-12) * double(c.k);
        EXPECT_NEAR(out[p * c.m * c.n + i * c.n + j], expected, tolerance)
            << "batch " << p << " element (" << i << ", " << j << ")";
      }
  }
}

TEST(CpuBackend, GemmMatchesNaiveLoop) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      checkGemm<float>({tgx::DType_F32, ta, tb, 3, 5, 7, 1, false});
      checkGemm<double>({tgx::DType_F64, ta, tb, 4, 2, 9, 3, false});
      checkGemm<float>({tgx::DType_F32, ta, tb, 5, 3, 2, 4, true});
    }
}

// Strided operands (exec-fuse-gemm-layouts): padded rows (lda, ldb), a
// two-level batch (2 outer x 3 inner products) with b shared by the inner
// ones, and c's products interleaved as attention heads are in a
// [tokens, heads x n + 2] buffer (ldc = 3n + 2, inner stride n), with the bias
// epilogue.
TEST(CpuBackend, StridedGemmMatchesNaiveLoop) {
  constexpr int64_t outer = 2, inner = 3, m = 4, n = 5, k = 6;
  constexpr int64_t lda = k + 3, ldb = k + 1, ldc = n * inner + 2;
  ProgramSpec spec;
  spec.addInterfaceSlots();
  spec.addSlot("a", tgx::DType_F32, {outer * inner * m * lda});
  spec.addSlot("b", tgx::DType_F32, {outer * n * ldb}); // transposed: n x k
  spec.addSlot("c", tgx::DType_F32, {outer * m * ldc});
  spec.addSlot("bias", tgx::DType_F32, {n});
  test::CommandSpec command{tgx::CommandKind_Gemm};
  command.hasGemm = true;
  test::GemmSpec &g = command.gemm;
  g.transposeB = true;
  g.m = m, g.n = n, g.k = k, g.batch = outer * inner;
  g.strideA = inner * m * lda, g.strideB = n * ldb, g.strideC = m * ldc;
  g.lda = lda, g.ldb = ldb, g.ldc = ldc, g.innerBatch = inner;
  g.innerStrideA = m * lda, g.innerStrideB = 0, g.innerStrideC = n;
  g.epilogue = tgx::GemmEpilogue_Bias;
  command.operands = {spec.slot("a").range, spec.slot("b").range, spec.slot("c").range,
                      spec.slot("bias").range};
  spec.commands.push_back(command);
  std::vector<uint8_t> bytes;
  std::unique_ptr<runtime::Backend> backend = cpuBackend(spec, bytes, "gemm.tgx");
  ASSERT_TRUE(backend);
  std::string error;

  std::vector<float> a(outer * inner * m * lda), b(outer * n * ldb), bias(n);
  std::vector<float> out(outer * m * ldc, -7.0f); // the gaps must keep this
  for (std::size_t i = 0; i < a.size(); ++i)
    a[i] = float(std::sin(double(i)));
  for (std::size_t i = 0; i < b.size(); ++i)
    b[i] = float(std::cos(double(i) * 0.7));
  for (int64_t j = 0; j < n; ++j)
    bias[j] = float(j) - 2.0f;
  for (auto [slot, data] : {std::pair{"a", &a}, {"b", &b}, {"c", &out}, {"bias", &bias}})
    ASSERT_TRUE(backend->write(spec.slot(slot).range.offset, data->data(),
                               data->size() * sizeof(float), error));
  ASSERT_TRUE(backend->run(error)) << error;
  std::vector<float> c(out.size());
  ASSERT_TRUE(backend->read(spec.slot("c").range.offset, c.data(), c.size() * sizeof(float), error));

  std::vector<bool> written(c.size(), false);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t h = 0; h < inner; ++h)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double expected = bias[j];
          for (int64_t l = 0; l < k; ++l)
            expected += double(a[o * g.strideA + h * g.innerStrideA + i * lda + l]) *
                        double(b[o * g.strideB + j * ldb + l]);
          int64_t at = o * g.strideC + h * g.innerStrideC + i * ldc + j;
          written[at] = true;
          EXPECT_NEAR(c[at], expected, 1e-5 * k) << "product (" << o << ", " << h << ") element ("
                                                 << i << ", " << j << ")";
        }
  for (std::size_t at = 0; at < c.size(); ++at) {
    if (!written[at]) {
      EXPECT_EQ(c[at], -7.0f) << "element " << at << " lies outside every product";
    }
  }
}

std::string createError(const ProgramSpec &spec) {
  std::vector<uint8_t> bytes = test::build(spec);
  tg_session *session = nullptr;
  std::string error = test::errorOf(
      tg_session_create_from_memory(bytes.data(), bytes.size(), "model.tgx", &session));
  tg_session_destroy(session);
  return error;
}

// The activation epilogues (exec-fuse-gemm-activation): GELU of the product
// plus bias with the sum kept in aux, then the product of a second GEMM
// times GELU's derivative at that aux, against the double formulas of
// GemmActivation.h (f64 throughout, so only the GEMM's sums round).
TEST(CpuBackend, GeluEpiloguesMatchTheFormulas) {
  constexpr int64_t m = 5, n = 4, k = 3;
  ProgramSpec spec;
  spec.addInterfaceSlots();
  for (auto [name, size] : {std::pair{"a", m * k}, {"b", k * n}, {"bias", n}, {"act", m * n},
                            {"pre", m * n}, {"a2", m * k}, {"dpre", m * n}})
    spec.addSlot(name, tgx::DType_F64, {size});
  auto r = [&](const char *name) { return spec.slot(name).range; };
  test::CommandSpec forward{tgx::CommandKind_Gemm};
  forward.hasGemm = true;
  forward.gemm.dtype = tgx::DType_F64;
  forward.gemm.m = m, forward.gemm.n = n, forward.gemm.k = k;
  forward.gemm.epilogue = tgx::GemmEpilogue_Bias;
  forward.gemm.activation = tgx::GemmActivation_GeluTanh;
  forward.operands = {r("a"), r("b"), r("act"), r("bias"), r("pre")};
  test::CommandSpec backward = forward;
  backward.gemm.epilogue = tgx::GemmEpilogue_None;
  backward.gemm.activation = tgx::GemmActivation_GeluTanhGrad;
  backward.operands = {r("a2"), r("b"), r("dpre"), r("pre")};
  spec.commands = {forward, backward};
  std::vector<uint8_t> bytes;
  std::unique_ptr<runtime::Backend> backend = cpuBackend(spec, bytes, "gelu.tgx");
  ASSERT_TRUE(backend);
  std::string error;

  std::vector<double> a(m * k), b(k * n), bias(n), a2(m * k);
  for (int64_t i = 0; i < m * k; ++i) {
    a[i] = std::sin(double(i));
    a2[i] = std::cos(double(i) * 1.3);
  }
  for (int64_t i = 0; i < k * n; ++i)
    b[i] = std::cos(double(i) * 0.7);
  for (int64_t j = 0; j < n; ++j)
    bias[j] = 0.5 * double(j) - 1.0;
  for (auto [slot, data] : {std::pair{"a", &a}, {"b", &b}, {"bias", &bias}, {"a2", &a2}})
    ASSERT_TRUE(backend->write(spec.slot(slot).range.offset, data->data(),
                               data->size() * sizeof(double), error));
  ASSERT_TRUE(backend->run(error)) << error;
  std::vector<double> act(m * n), pre(m * n), dpre(m * n);
  for (auto [slot, data] : {std::pair{"act", &act}, {"pre", &pre}, {"dpre", &dpre}})
    ASSERT_TRUE(backend->read(spec.slot(slot).range.offset, data->data(),
                              data->size() * sizeof(double), error));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double x = bias[j], g = 0;
      for (int64_t l = 0; l < k; ++l) {
        x += a[i * k + l] * b[l * n + j];
        g += a2[i * k + l] * b[l * n + j];
      }
      int64_t at = i * n + j;
      EXPECT_NEAR(pre[at], x, 1e-14) << at;
      EXPECT_NEAR(act[at], runtime::geluTanh(x), 1e-14) << at;
      EXPECT_NEAR(dpre[at], g * runtime::geluTanhDerivative(x), 1e-14) << at;
      // Not the identity: the values span GELU's curved part.
      EXPECT_GT(std::abs(act[at] - x) + std::abs(dpre[at] - g), 1e-3) << at;
    }
}

/// A program of one f32 Gemm command, m x n x k with `epilogue` and
/// `activation`, over new f32 slots of the given names and element counts,
/// which are its operands in that order.
ProgramSpec oneF32Gemm(int64_t m, int64_t n, int64_t k, tgx::GemmEpilogue epilogue,
                       tgx::GemmActivation activation,
                       const std::vector<std::pair<const char *, int64_t>> &operands) {
  ProgramSpec spec;
  spec.addInterfaceSlots();
  test::CommandSpec command{tgx::CommandKind_Gemm};
  command.hasGemm = true;
  command.gemm.dtype = tgx::DType_F32;
  command.gemm.m = m, command.gemm.n = n, command.gemm.k = k;
  command.gemm.epilogue = epilogue;
  command.gemm.activation = activation;
  for (auto [name, size] : operands) {
    spec.addSlot(name, tgx::DType_F32, {size});
    command.operands.push_back(spec.slot(name).range);
  }
  spec.commands = {command};
  return spec;
}

// The bias gradient with GELU's derivative (BiasGrad): the sums of the rows
// the epilogue wrote, against double sums of them, over more rows than a
// block of the blockwise sum (64) and columns split between threads.
TEST(CpuBackend, BiasGradSumsTheRowsWritten) {
  constexpr int64_t m = 150, n = 70, k = 3;
  ProgramSpec spec = oneF32Gemm(
      m, n, k, tgx::GemmEpilogue_BiasGrad, tgx::GemmActivation_GeluTanhGrad,
      {{"a", m * k}, {"b", k * n}, {"dpre", m * n}, {"sums", n}, {"pre", m * n}});
  std::vector<uint8_t> bytes;
  std::unique_ptr<runtime::Backend> backend = cpuBackend(spec, bytes, "bgrad.tgx");
  ASSERT_TRUE(backend);
  std::string error;

  std::vector<float> a(m * k), b(k * n), pre(m * n);
  for (std::size_t i = 0; i < a.size(); ++i)
    a[i] = float(std::sin(double(i)));
  for (std::size_t i = 0; i < b.size(); ++i)
    b[i] = float(std::cos(double(i) * 0.7));
  for (std::size_t i = 0; i < pre.size(); ++i)
    pre[i] = float(std::sin(double(i) * 0.3) * 2);
  for (auto [slot, data] : {std::pair{"a", &a}, {"b", &b}, {"pre", &pre}})
    ASSERT_TRUE(backend->write(spec.slot(slot).range.offset, data->data(),
                               data->size() * sizeof(float), error));
  ASSERT_TRUE(backend->run(error)) << error;
  std::vector<float> dpre(m * n), sums(n);
  for (auto [slot, data] : {std::pair{"dpre", &dpre}, {"sums", &sums}})
    ASSERT_TRUE(backend->read(spec.slot(slot).range.offset, data->data(),
                              data->size() * sizeof(float), error));
  for (int64_t j = 0; j < n; ++j) {
    double sum = 0, magnitude = 0;
    for (int64_t i = 0; i < m; ++i) {
      sum += double(dpre[i * n + j]);
      magnitude += std::abs(double(dpre[i * n + j]));
    }
    // Each f32 sum rounds once from double sums of the same f32 values.
    EXPECT_NEAR(sums[j], sum, 1e-7 * magnitude) << "column " << j;
  }
}

// The addend (exec-fuse-gemm-residual): c = (product + bias) + addend, each
// sum rounded to f32 as the separate add kernels it replaces would (Addend:
// product + addend), in each of the bands of rows two threads cut the
// product into (where OpenBLAS runs on the pool: its pthreads build,
// Debian's). Small integers in a and b make every product exact, so c is
// compared bit for bit.
void checkAddendEpilogue(bool withBias) {
  constexpr int64_t m = 96, n = 128, k = 256;
  std::vector<std::pair<const char *, int64_t>> operands{
      {"a", m * k}, {"b", k * n}, {"c", m * n}, {"bias", n}, {"addend", m * n}};
  if (!withBias)
    operands.erase(operands.begin() + 3);
  ProgramSpec spec = oneF32Gemm(
      m, n, k, withBias ? tgx::GemmEpilogue_BiasAddend : tgx::GemmEpilogue_Addend,
      tgx::GemmActivation_None, operands);
  std::vector<uint8_t> bytes;
  std::unique_ptr<runtime::Backend> backend = cpuBackend(spec, bytes, "addend.tgx");
  ASSERT_TRUE(backend);
  std::string error;

  std::vector<float> a(m * k), b(k * n), bias(n, 0.0f), addend(m * n);
  for (std::size_t i = 0; i < a.size(); ++i)
    a[i] = float(int(i % 5) - 2);
  for (std::size_t i = 0; i < b.size(); ++i)
    b[i] = float(int(i % 7) - 3);
  for (int64_t j = 0; withBias && j < n; ++j)
    bias[j] = float(std::sin(double(j))) * 3.3f;
  for (std::size_t i = 0; i < addend.size(); ++i)
    addend[i] = float(std::cos(double(i) * 0.1)) * 7.1f;
  for (auto [slot, data] : {std::pair{"a", &a}, {"b", &b}, {"bias", &bias}, {"addend", &addend}}) {
    if (withBias || std::string(slot) != "bias") {
      ASSERT_TRUE(backend->write(spec.slot(slot).range.offset, data->data(),
                                 data->size() * sizeof(float), error));
    }
  }
  ASSERT_TRUE(backend->run(error)) << error;
  std::vector<float> c(m * n);
  ASSERT_TRUE(
      backend->read(spec.slot("c").range.offset, c.data(), c.size() * sizeof(float), error));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double product = 0;
      for (int64_t l = 0; l < k; ++l)
        product += double(a[i * k + l]) * double(b[l * n + j]);
      float withBiasAdded = float(product) + bias[j];
      EXPECT_EQ(c[i * n + j], withBiasAdded + addend[i * n + j])
          << "element (" << i << ", " << j << ")";
    }
}

TEST(CpuBackend, AddendEpilogueAddsAfterTheBias) {
  int threads = runtime::getCpuThreads();
  runtime::setCpuThreads(2);
  checkAddendEpilogue(/*withBias=*/true);
  checkAddendEpilogue(/*withBias=*/false);
  runtime::setCpuThreads(threads);
}

TEST(CpuBackend, MissingKernelSymbolIsNamed) {
  ProgramSpec spec = test::fixtureSpec();
  spec.modules[0].kernels[1] = "train_update_v2";
  std::string error = createError(spec);
  EXPECT_NE(error.find("model.tgx: modules[0]: the kernel library has no symbol "
                       "'train_update_v2'"),
            std::string::npos)
      << error;
}

// glibc finds loaded libraries by path, and /proc/self/fd/N paths repeat. A
// library that stays loaded after its session (-z nodelete) must not be
// handed to a later session whose image is loaded under the same path.
TEST(CpuBackend, ResidentLibrariesDoNotShadowLaterOnes) {
  ProgramSpec resident = test::fixtureSpec();
  resident.modules[0].image = test::fixtureKernels(/*resident=*/true);
  const int32_t tokens[6] = {0, 1, 2, 3, 4, 0};
  std::vector<double> losses;
  for (const ProgramSpec &spec : {resident, test::fixtureSpec(), resident, test::fixtureSpec()}) {
    tg_session *session = test::loadSession(spec);
    EXPECT_OK(tg_session_init_random(session, 5));
    tg_step_result r;
    EXPECT_OK(tg_session_step(session, tokens, tokens, &r));
    losses.push_back(r.loss);
    tg_session_destroy(session);
  }
  EXPECT_NE(losses[0], losses[1]);
  EXPECT_EQ(losses[0], losses[2]);
  EXPECT_EQ(losses[1], losses[3]);
}

// A program for several ranks is refused by a run of another size, saying
// how to start it.
TEST(Backend, RejectsAMeshOfAnotherSize) {
  ProgramSpec spec = test::fixtureSpec();
  spec.mesh = {{"d", 2}};
  std::string error = createError(spec);
  EXPECT_NE(error.find("model.tgx: the program is compiled for 2 ranks (mesh d=2), but this "
                       "run has 1; start it with tgrun -n 2"),
            std::string::npos)
      << error;
}

TEST(CpuBackend, RejectsImagesItCannotLoad) {
  ProgramSpec spec = test::fixtureSpec();
  spec.modules[0].image.resize(100);
  EXPECT_NE(createError(spec).find("model.tgx: modules[0]: the kernel library does not load"),
            std::string::npos);
  // A module whose format is not the program's target's is refused by the
  // verifier, before any backend sees it.
  spec = test::fixtureSpec();
  spec.modules[0].format = tgx::ModuleFormat_Ptx;
  std::string error = createError(spec);
  EXPECT_NE(error.find("model.tgx: modules[0].format is Ptx in a program for the target Cpu"),
            std::string::npos)
      << error;
  spec = test::fixtureSpec();
  spec.target = tgx::Target_Cuda;
  error = createError(spec);
  EXPECT_NE(error.find("model.tgx: modules[0].format is ElfSharedObject in a program for "
                       "the target Cuda"),
            std::string::npos)
      << error;
}

} // namespace
