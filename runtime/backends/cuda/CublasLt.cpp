#include "CublasLt.h"

#include "LoadOnce.h"

#include <dlfcn.h>

namespace tg::runtime::cuda {

#define TG_LT_FUNCTIONS(X)                                                      \
  X(cublasLtCreate) X(cublasLtDestroy) X(cublasLtGetStatusString)              \
  X(cublasLtMatmulDescCreate) X(cublasLtMatmulDescDestroy)                     \
  X(cublasLtMatmulDescSetAttribute) X(cublasLtMatrixLayoutCreate)              \
  X(cublasLtMatrixLayoutDestroy) X(cublasLtMatrixLayoutSetAttribute)           \
  X(cublasLtMatmulPreferenceCreate) X(cublasLtMatmulPreferenceDestroy)         \
  X(cublasLtMatmulPreferenceSetAttribute) X(cublasLtMatmulAlgoGetHeuristic)    \
  X(cublasLtMatmul)

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
  bool f64 = false;
  bool bias = false;
  ~Plan() {
    if (a) api->cublasLtMatrixLayoutDestroy(a);
    if (b) api->cublasLtMatrixLayoutDestroy(b);
    if (c) api->cublasLtMatrixLayoutDestroy(c);
    if (desc) api->cublasLtMatmulDescDestroy(desc);
  }
};

std::unique_ptr<Gemms> Gemms::create(size_t workspaceBytes, std::string &error) {
  const LtApi *api = loadOnce(loadLt, error);
  if (!api)
    return nullptr;
  std::unique_ptr<Gemms> gemms(new Gemms());
  gemms->api = api;
  gemms->workspaceBytes = workspaceBytes;
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

int Gemms::plan(const tgx::Gemm &g, std::string &error) {
  Shape shape{int(g.dtype()), g.transpose_a(), g.transpose_b(), g.m(), g.n(), g.k(),
              g.batch(),      g.stride_a(),    g.stride_b(),    g.stride_c(), int(g.epilogue())};
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
  // pointer is set per command in run()).
  if (g.epilogue() == tgx::GemmEpilogue_Bias) {
    cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    api->cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                        sizeof(epilogue));
    p->bias = true;
  }
  auto layout = [&](cublasLtMatrixLayout_t &out, uint64_t rows, uint64_t cols,
                    int64_t stride) -> cublasStatus_t {
    if (cublasStatus_t s = api->cublasLtMatrixLayoutCreate(&out, type, rows, cols, int64_t(rows)))
      return s;
    int32_t batch = int32_t(g.batch());
    api->cublasLtMatrixLayoutSetAttribute(out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch,
                                          sizeof(batch));
    api->cublasLtMatrixLayoutSetAttribute(out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                          &stride, sizeof(stride));
    return CUBLAS_STATUS_SUCCESS;
  };
  // Stored column-major: cuBLASLt's A is [n,k] (ld n) or, transposed, [k,n];
  // its B is [k,m] or [m,k]; C is [n,m].
  if (cublasStatus_t s = layout(p->a, g.transpose_b() ? g.k() : g.n(),
                                g.transpose_b() ? g.n() : g.k(), g.stride_b()))
    return fail("cublasLtMatrixLayoutCreate", s);
  if (cublasStatus_t s = layout(p->b, g.transpose_a() ? g.m() : g.k(),
                                g.transpose_a() ? g.k() : g.m(), g.stride_a()))
    return fail("cublasLtMatrixLayoutCreate", s);
  if (cublasStatus_t s = layout(p->c, g.n(), g.m(), g.stride_c()))
    return fail("cublasLtMatrixLayoutCreate", s);

  cublasLtMatmulPreference_t preference = nullptr;
  if (cublasStatus_t s = api->cublasLtMatmulPreferenceCreate(&preference))
    return fail("cublasLtMatmulPreferenceCreate", s);
  uint64_t limit = workspaceBytes;
  api->cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                            &limit, sizeof(limit));
  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  cublasStatus_t s = api->cublasLtMatmulAlgoGetHeuristic(handle, p->desc, p->a, p->b, p->c,
                                                         p->c, preference, 1, &result, &returned);
  api->cublasLtMatmulPreferenceDestroy(preference);
  if (s != CUBLAS_STATUS_SUCCESS || returned == 0) {
    error = "cuBLASLt has no algorithm for a " + std::to_string(g.m()) + "x" +
            std::to_string(g.n()) + "x" + std::to_string(g.k()) + " GEMM (batch " +
            std::to_string(g.batch()) + ", " + tgx::EnumNameDType(g.dtype()) + ")" +
            (s != CUBLAS_STATUS_SUCCESS ? ": " + api->errorText("cublasLtMatmulAlgoGetHeuristic", s)
                                        : "");
    return -1;
  }
  p->algo = result.algo;
  plans.push_back(std::move(p));
  int index = int(plans.size()) - 1;
  planOf.emplace(shape, index);
  return index;
}

bool Gemms::run(int index, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, CUdeviceptr bias,
                CUdeviceptr workspace, CUstream stream, std::string &error) const {
  const Plan &p = *plans[index];
  if (p.bias) {
    // Commands of one shape share the plan: the pointer is the command's.
    // (cuBLASLt reads it when the matmul is issued or captured.)
    const void *pointer = reinterpret_cast<const void *>(bias);
    api->cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &pointer,
                                        sizeof(pointer));
  }
  float oneF = 1, zeroF = 0;
  double oneD = 1, zeroD = 0;
  const void *alpha = p.f64 ? static_cast<const void *>(&oneD) : &oneF;
  const void *beta = p.f64 ? static_cast<const void *>(&zeroD) : &zeroF;
  // Our b is cuBLASLt's A, our a its B (see plan()).
  cublasStatus_t s = api->cublasLtMatmul(
      handle, p.desc, alpha, reinterpret_cast<const void *>(b), p.a,
      reinterpret_cast<const void *>(a), p.b, beta, reinterpret_cast<void *>(c), p.c,
      reinterpret_cast<void *>(c), p.c, &p.algo, reinterpret_cast<void *>(workspace),
      workspaceBytes, stream);
  if (s != CUBLAS_STATUS_SUCCESS) {
    error = api->errorText("cublasLtMatmul", s);
    return false;
  }
  return true;
}

} // namespace tg::runtime::cuda
