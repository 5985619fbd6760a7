#include "CublasLt.h"

#include "LoadOnce.h"
#include "tg/runtime/GemmLayout.h"

#include <dlfcn.h>

#include <algorithm>
#include <limits>

namespace tg::runtime::cuda {
namespace {
/// Tuning also times K splits of a product summing this many terms or more.
constexpr int64_t kSplitKMinTerms = 2048;
/// ... of the heuristic's first this many algorithms ...
constexpr size_t kSplitKBases = 2;
/// ... into these many parts, each of at least kSplitKMinPartTerms terms.
constexpr int32_t kSplitKParts[] = {2, 4, 8};
constexpr int64_t kSplitKMinPartTerms = 1024;
} // namespace

// clang-format off
#define TG_LT_FUNCTIONS(X)                                                      \
  X(cublasLtCreate) X(cublasLtDestroy) X(cublasLtGetStatusString)              \
  X(cublasLtMatmulDescCreate) X(cublasLtMatmulDescDestroy)                     \
  X(cublasLtMatmulDescSetAttribute) X(cublasLtMatrixLayoutCreate)              \
  X(cublasLtMatrixLayoutDestroy) X(cublasLtMatrixLayoutSetAttribute)           \
  X(cublasLtMatmulPreferenceCreate) X(cublasLtMatmulPreferenceDestroy)         \
  X(cublasLtMatmulPreferenceSetAttribute) X(cublasLtMatmulAlgoGetHeuristic)    \
  X(cublasLtMatmulAlgoCapGetAttribute) X(cublasLtMatmulAlgoConfigGetAttribute) \
  X(cublasLtMatmulAlgoConfigSetAttribute) X(cublasLtMatmulAlgoCheck)           \
  X(cublasLtMatmul)
// clang-format on

struct LtApi {
#define TG_LT_DECLARE(name) decltype(&::name) name = nullptr;
  TG_LT_FUNCTIONS(TG_LT_DECLARE)
#undef TG_LT_DECLARE

  std::string errorText(const char *call, cublasStatus_t status) const {
    return std::string(call) + " failed: " + cublasLtGetStatusString(status);
  }
};

static bool loadLt(LtApi &api, std::string &error) {
  void *library = nullptr;
  for (const char *name : {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"})
    if ((library = dlopen(name, RTLD_NOW | RTLD_LOCAL)))
      break;
  if (!library) {
    error = "cuBLASLt (libcublasLt.so.13) cannot be loaded: install the CUDA "
            "toolkit's cuBLAS or add its lib64 folder to LD_LIBRARY_PATH";
    return false;
  }
#define TG_LT_RESOLVE(name)                                                     \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(library, #name));     \
  if (!api.name) {                                                             \
    error = "cuBLASLt lacks " #name ": install CUDA 12 or later";              \
    return false;                                                              \
  }
  TG_LT_FUNCTIONS(TG_LT_RESOLVE)
#undef TG_LT_RESOLVE
  return true;
}

struct Gemms::Plan {
  const LtApi *api = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  // The heuristic's algorithms, its first first, then their variants split
  // over K (addSplitKCandidates): what tune() times. splits[i]: candidate
  // i's K splits (1: none).
  std::vector<cublasLtMatmulAlgo_t> candidates;
  std::vector<int32_t> splits;
  bool f64 = false;
  // The command's operands after c (GemmLayout.h): the bias pointer's (a
  // bias or its gradient), the addend (C, with beta = 1), aux; -1: none.
  GemmExtraOperands extra;
  size_t elementBytes = 4;
  // Outer products of a two-level batch: one call each, `callStride`
  // elements apart in a, b and c.
  int64_t calls = 1;
  std::array<int64_t, 3> callStride{};
  ~Plan() {
    if (a) api->cublasLtMatrixLayoutDestroy(a);
    if (b) api->cublasLtMatrixLayoutDestroy(b);
    if (c) api->cublasLtMatrixLayoutDestroy(c);
    if (desc) api->cublasLtMatmulDescDestroy(desc);
  }
};

std::unique_ptr<Gemms> Gemms::create(size_t workspaceBytes, int candidates, std::string &error) {
  const LtApi *api = loadOnce(loadLt, error);
  if (!api)
    return nullptr;
  std::unique_ptr<Gemms> gemms(new Gemms());
  gemms->api = api;
  gemms->workspaceBytes = workspaceBytes;
  gemms->candidates = std::max(candidates, 1);
  if (cublasStatus_t s = api->cublasLtCreate(&gemms->handle)) {
    error = api->errorText("cublasLtCreate", s);
    return nullptr;
  }
  return gemms;
}

Gemms::~Gemms() {
  plans.clear();
  if (handle)
    api->cublasLtDestroy(handle);
}

int Gemms::plan(const tgx::Gemm &g, const std::vector<CUdeviceptr> &operands, std::string &error) {
  GemmOperand la = gemmOperand(g, 0), lb = gemmOperand(g, 1), lc = gemmOperand(g, 2);
  // A two-level batch runs as `outer` calls of `inner` products each
  // (cuBLASLt's batch has one stride); a one-level batch as one call.
  int64_t inner = gemmInnerBatch(g), outer = g.batch() / inner;
  int64_t elementBytes = g.dtype() == tgx::DType_F64 ? 8 : g.dtype() == tgx::DType_F32 ? 4 : 2;
  // The alignment of every address a call starts an operand at (the base
  // and each call's offset), at most 256 bytes: cuBLASLt's heuristic
  // assumes 256 unless told, and an algorithm that needs more than an
  // operand has cannot run on it.
  auto alignment = [&](CUdeviceptr base, int64_t callStride) {
    uint64_t bits = uint64_t(base) | 256;
    if (inner > 1 && outer > 1)
      bits |= uint64_t(callStride * elementBytes);
    return uint32_t(bits & (~bits + 1)); // the lowest set bit
  };
  // The addend (C) is read as c (D) is written, in D's layout: one
  // alignment serves both.
  GemmExtraOperands extra = gemmExtraOperands(g);
  CUdeviceptr cAndAddend = operands[2] | (extra.addend < 0 ? 0 : operands[size_t(extra.addend)]);
  std::array<uint32_t, 3> aligned{alignment(operands[0], la.stride),
                                  alignment(operands[1], lb.stride),
                                  alignment(cAndAddend, lc.stride)};
  Shape shape{int(g.dtype()),
              g.transpose_a(),
              g.transpose_b(),
              g.m(),
              g.n(),
              g.k(),
              g.batch(),
              int(g.epilogue()),
              {la.ld, la.stride, la.innerStride, lb.ld, lb.stride, lb.innerStride, lc.ld, lc.stride,
               lc.innerStride},
              inner,
              int(g.activation()),
              aligned};
  auto found = planOf.find(shape);
  if (found != planOf.end())
    return found->second;

  cudaDataType_t type;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F; // fp32 accumulation, no TF32
  cudaDataType_t scale = CUDA_R_32F;
  switch (g.dtype()) {
  case tgx::DType_F32: type = CUDA_R_32F; break;
  case tgx::DType_BF16: type = CUDA_R_16BF; break;
  case tgx::DType_F16: type = CUDA_R_16F; break;
  case tgx::DType_F64:
    type = CUDA_R_64F;
    compute = CUBLAS_COMPUTE_64F;
    scale = CUDA_R_64F;
    break;
  default:
    error = std::string("a GEMM in ") + tgx::EnumNameDType(g.dtype()) +
            ", which cuBLASLt does not multiply";
    return -1;
  }
  auto p = std::make_unique<Plan>();
  p->api = api;
  p->f64 = g.dtype() == tgx::DType_F64;
  p->elementBytes = size_t(elementBytes);
  auto fail = [&](const char *call, cublasStatus_t s) {
    error = api->errorText(call, s);
    return -1;
  };
  // Row-major C[m,n] = op(A) op(B) is column-major C^T[n,m] = op(B)^T
  // op(A)^T: cuBLASLt's A is our b and its B is our a, transposes kept.
  cublasOperation_t transLtA = g.transpose_b() ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t transLtB = g.transpose_a() ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (cublasStatus_t s = api->cublasLtMatmulDescCreate(&p->desc, compute, scale))
    return fail("cublasLtMatmulDescCreate", s);
  api->cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &transLtA,
                                      sizeof(transLtA));
  api->cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &transLtB,
                                      sizeof(transLtB));
  // The bias runs along our n, the rows of cuBLASLt's column-major D (its
  // pointer is set per command in run()); so does the bias gradient, the
  // sums over D's columns (our rows), which DGELU_BGRAD writes where the
  // bias pointer points, in D's type. GELU's aux (the sum before it) has
  // D's layout: n x m column-major, leading dimension n (a multiple of 8
  // for cuBLASLt; the compiler pads rows to 16 bytes).
  // The addend is cuBLASLt's C, added with beta = 1 before the bias
  // (D = A B + C + bias, rounded once).
  p->extra = extra;
  bool vector = extra.vector >= 0;
  cublasLtEpilogue_t epilogue = vector ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
  if (g.activation() == tgx::GemmActivation_GeluTanh)
    epilogue = vector ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX;
  else if (g.activation() == tgx::GemmActivation_GeluTanhGrad)
    epilogue = vector ? CUBLASLT_EPILOGUE_DGELU_BGRAD : CUBLASLT_EPILOGUE_DGELU;
  if (epilogue != CUBLASLT_EPILOGUE_DEFAULT)
    api->cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                        sizeof(epilogue));
  if (extra.aux >= 0) {
    int64_t auxLd = g.n();
    api->cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &auxLd,
                                        sizeof(auxLd));
  }
  p->calls = inner > 1 ? outer : 1;
  int32_t batch = int32_t(inner > 1 ? inner : g.batch());
  p->callStride = {la.stride, lb.stride, lc.stride};
  // Column-major, cuBLASLt sees each stored row-major rows x cols matrix
  // as its transpose: cols x rows, leading dimension our ld.
  auto layout = [&](cublasLtMatrixLayout_t &out, const GemmOperand &o) -> cublasStatus_t {
    if (cublasStatus_t s = api->cublasLtMatrixLayoutCreate(&out, type, o.cols, o.rows, o.ld))
      return s;
    int64_t stride = inner > 1 ? o.innerStride : o.stride;
    api->cublasLtMatrixLayoutSetAttribute(out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch,
                                          sizeof(batch));
    api->cublasLtMatrixLayoutSetAttribute(out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                          &stride, sizeof(stride));
    return CUBLAS_STATUS_SUCCESS;
  };
  // cuBLASLt's A is our b, its B our a, its C our c ([n,m] column-major).
  if (cublasStatus_t s = layout(p->a, lb))
    return fail("cublasLtMatrixLayoutCreate", s);
  if (cublasStatus_t s = layout(p->b, la))
    return fail("cublasLtMatrixLayoutCreate", s);
  if (cublasStatus_t s = layout(p->c, lc))
    return fail("cublasLtMatrixLayoutCreate", s);

  cublasLtMatmulPreference_t preference = nullptr;
  if (cublasStatus_t s = api->cublasLtMatmulPreferenceCreate(&preference))
    return fail("cublasLtMatmulPreferenceCreate", s);
  uint64_t limit = workspaceBytes;
  api->cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                            &limit, sizeof(limit));
  // cuBLASLt's A is our b, its B our a, its C and D our c.
  for (auto [attribute, bytes] :
       {std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, aligned[1]},
        std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, aligned[0]},
        std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, aligned[2]},
        std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, aligned[2]}})
    api->cublasLtMatmulPreferenceSetAttribute(preference, attribute, &bytes, sizeof(bytes));
  std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<size_t>(candidates));
  int returned = 0;
  cublasStatus_t s = api->cublasLtMatmulAlgoGetHeuristic(
      handle, p->desc, p->a, p->b, p->c, p->c, preference, candidates, results.data(), &returned);
  api->cublasLtMatmulPreferenceDestroy(preference);
  for (int i = 0; s == CUBLAS_STATUS_SUCCESS && i < returned; ++i)
    if (results[size_t(i)].state == CUBLAS_STATUS_SUCCESS) {
      p->candidates.push_back(results[size_t(i)].algo);
      p->splits.push_back(1);
    }
  if (candidates > 1 && p->calls == 1 && batch == 1)
    addSplitKCandidates(*p, g.m(), g.n(), g.k());
  if (p->candidates.empty()) {
    error = "cuBLASLt has no algorithm for a " + std::to_string(g.m()) + "x" +
            std::to_string(g.n()) + "x" + std::to_string(g.k()) + " GEMM (batch " +
            std::to_string(g.batch()) + ", " + tgx::EnumNameDType(g.dtype()) + ", epilogue " +
            tgx::EnumNameGemmEpilogue(g.epilogue()) + ", activation " +
            tgx::EnumNameGemmActivation(g.activation()) + ")" +
            (g.epilogue() == tgx::GemmEpilogue_BiasGrad
                 ? " (recompile with --no-fuse=gemm-bias-grad to keep the bias gradient a "
                   "kernel)"
             : g.activation() != tgx::GemmActivation_None
                 ? " (recompile with --no-fuse=gemm-activation to keep GELU a kernel)"
             : extra.addend >= 0
                 ? " (recompile with --no-fuse=gemm-residual to keep the residual add in a "
                   "kernel)"
                 : "") +
            (s != CUBLAS_STATUS_SUCCESS ? ": " + api->errorText("cublasLtMatmulAlgoGetHeuristic", s)
                                        : "");
    return -1;
  }
  p->algo = p->candidates.front();
  plans.push_back(std::move(p));
  int index = int(plans.size()) - 1;
  planOf.emplace(shape, index);
  return index;
}

void Gemms::addSplitKCandidates(Plan &p, int64_t m, int64_t n, int64_t k) const {
  // Only a product whose sum is at least as long as either side of its
  // output and 2048 terms or more: a weight gradient, which sums over every
  // token into a weight-sized output. (GPT-2 medium's attention projection:
  // 1024 x 1024, 32 of cuBLASLt's 128 x 256 tiles for 132 SMs, ran at 0.64 of
  // the GEMM ceiling on an H200.) Its K splits fill the SMs that its tiles
  // leave idle; the forward's and the input gradients' products, thousands of
  // rows long, have tiles enough.
  if (k < kSplitKMinTerms || k < std::max(m, n))
    return;
  size_t bases = std::min(p.candidates.size(), kSplitKBases);
  for (size_t i = 0; i < bases; ++i) {
    cublasLtMatmulAlgo_t base = p.candidates[i];
    int32_t supported = 0, splits = 1;
    uint32_t schemes = 0;
    size_t written = 0;
    if (api->cublasLtMatmulAlgoCapGetAttribute(&base, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT, &supported,
                                               sizeof(supported), &written) ||
        api->cublasLtMatmulAlgoCapGetAttribute(&base, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK,
                                               &schemes, sizeof(schemes), &written) ||
        api->cublasLtMatmulAlgoConfigGetAttribute(&base, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splits,
                                                  sizeof(splits), &written))
      continue;
    // The parts are added in float32 in the workspace (the compute type),
    // never in place in the bf16 output, which would round each part.
    if (!supported || splits != 1 || !(schemes & CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE))
      continue;
    for (int32_t parts : kSplitKParts) {
      if (k / parts < kSplitKMinPartTerms)
        break;
      cublasLtMatmulAlgo_t split = base;
      uint32_t scheme = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
      cublasLtMatmulHeuristicResult_t checked{};
      if (api->cublasLtMatmulAlgoConfigSetAttribute(&split, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &parts,
                                                    sizeof(parts)) ||
          api->cublasLtMatmulAlgoConfigSetAttribute(&split, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME,
                                                    &scheme, sizeof(scheme)) ||
          api->cublasLtMatmulAlgoCheck(handle, p.desc, p.a, p.b, p.c, p.c, &split, &checked) ||
          checked.workspaceSize > workspaceBytes)
        continue;
      p.candidates.push_back(split);
      p.splits.push_back(parts);
    }
  }
}

bool Gemms::run(int index, const std::vector<CUdeviceptr> &operands, CUdeviceptr workspace,
                CUstream stream, std::string &error) const {
  const Plan &p = *plans[size_t(index)];
  return matmul(p, p.algo, operands, workspace, stream, error);
}

bool Gemms::matmul(const Plan &p, const cublasLtMatmulAlgo_t &algo,
                   const std::vector<CUdeviceptr> &operands, CUdeviceptr workspace, CUstream stream,
                   std::string &error) const {
  CUdeviceptr a = operands[0], b = operands[1], c = operands[2];
  // Commands of one shape share the plan: the epilogue's pointers are the
  // command's. (cuBLASLt reads them when the matmul is issued or captured.)
  auto setPointer = [&](cublasLtMatmulDescAttributes_t attribute, CUdeviceptr at) {
    const void *pointer = reinterpret_cast<const void *>(at);
    api->cublasLtMatmulDescSetAttribute(p.desc, attribute, &pointer, sizeof(pointer));
  };
  if (p.extra.vector >= 0)
    setPointer(CUBLASLT_MATMUL_DESC_BIAS_POINTER, operands[size_t(p.extra.vector)]);
  if (p.extra.aux >= 0)
    setPointer(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, operands[size_t(p.extra.aux)]);
  float oneF = 1, zeroF = 0;
  double oneD = 1, zeroD = 0;
  bool adds = p.extra.addend >= 0;
  const void *alpha = p.f64 ? static_cast<const void *>(&oneD) : &oneF;
  const void *beta = p.f64 ? static_cast<const void *>(adds ? &oneD : &zeroD)
                           : static_cast<const void *>(adds ? &oneF : &zeroF);
  // C: the addend (one call: batch 1), else c itself, read with beta = 0.
  CUdeviceptr addend = adds ? operands[size_t(p.extra.addend)] : c;
  for (int64_t call = 0; call < p.calls; ++call) {
    auto at = [&](CUdeviceptr base, int operand) {
      return reinterpret_cast<void *>(base + call * p.callStride[operand] * p.elementBytes);
    };
    // Our b is cuBLASLt's A, our a its B (see plan()).
    cublasStatus_t s = api->cublasLtMatmul(
        handle, p.desc, alpha, at(b, 1), p.a, at(a, 0), p.b, beta, at(addend, 2), p.c, at(c, 2),
        p.c, &algo, reinterpret_cast<void *>(workspace), workspaceBytes, stream);
    if (s != CUBLAS_STATUS_SUCCESS) {
      error = api->errorText("cublasLtMatmul", s);
      return false;
    }
  }
  return true;
}

bool Gemms::tune(const Driver &driver, int index, const std::vector<CUdeviceptr> &operands,
                 CUdeviceptr workspace, CUstream stream, Timing &timing, std::string &error) {
  Plan &p = *plans[size_t(index)];
  timing = Timing{};
  if (p.candidates.size() < 2)
    return true;
  CUevent start = nullptr, end = nullptr;
  auto check = [&](const char *call, CUresult r) {
    if (r != CUDA_SUCCESS)
      error = driver.errorText(call, r);
    return r == CUDA_SUCCESS;
  };
  // Seconds a call of candidate i: the fastest of kRounds rounds of
  // kRepeats calls, the candidates interleaved so that the clock's drift
  // falls on all alike; infinity for one cuBLASLt refuses to run.
  constexpr int kRounds = 3, kRepeats = 5;
  constexpr double kRefused = std::numeric_limits<double>::infinity();
  std::vector<double> seconds(p.candidates.size(), kRefused);
  std::vector<bool> refused(p.candidates.size(), false);
  auto timeCandidate = [&](size_t i) {
    std::string ignored;
    float ms = 0;
    if (!check("cuEventRecord", driver.cuEventRecord(start, stream)))
      return false;
    for (int r = 0; r < kRepeats && !refused[i]; ++r)
      refused[i] = !matmul(p, p.candidates[i], operands, workspace, stream, ignored);
    if (refused[i]) // in any round: never chosen
      seconds[i] = kRefused;
    if (!check("cuEventRecord", driver.cuEventRecord(end, stream)) ||
        !check("cuEventSynchronize", driver.cuEventSynchronize(end)) ||
        !check("cuEventElapsedTime", driver.cuEventElapsedTime(&ms, start, end)))
      return false;
    if (!refused[i])
      seconds[i] = std::min(seconds[i], double(ms) * 1e-3 / kRepeats);
    return true;
  };
  bool ok = check("cuEventCreate", driver.cuEventCreate(&start, CU_EVENT_DEFAULT)) &&
            check("cuEventCreate", driver.cuEventCreate(&end, CU_EVENT_DEFAULT));
  // One call each first: kernels load on their first launch.
  for (size_t i = 0; ok && i < p.candidates.size(); ++i) {
    std::string ignored;
    refused[i] = !matmul(p, p.candidates[i], operands, workspace, stream, ignored);
  }
  ok = ok && check("cuStreamSynchronize", driver.cuStreamSynchronize(stream));
  for (int round = 0; ok && round < kRounds; ++round)
    for (size_t i = 0; ok && i < p.candidates.size(); ++i)
      if (!refused[i])
        ok = timeCandidate(i);
  if (start)
    driver.cuEventDestroy(start);
  if (end)
    driver.cuEventDestroy(end);
  if (!ok)
    return false;
  if (refused[0]) // what the step would run untuned
    return matmul(p, p.algo, operands, workspace, stream, error);
  size_t fastest = size_t(std::min_element(seconds.begin(), seconds.end()) - seconds.begin());
  // Another algorithm only where it is clearly faster: within 3% the
  // rounds' noise could have chosen, and the heuristic's first stays.
  if (seconds[fastest] > 0.97 * seconds[0])
    fastest = 0;
  p.algo = p.candidates[fastest];
  timing.firstSeconds = seconds[0];
  timing.keptSeconds = seconds[fastest];
  timing.timed = int(std::count(refused.begin(), refused.end(), false));
  timing.changed = fastest != 0;
  timing.keptSplits = p.splits[fastest];
  return true;
}

} // namespace tg::runtime::cuda
