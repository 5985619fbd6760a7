#include "AttentionKernels.h"

#include "tg/runtime/AttentionLayout.h"

#include <algorithm>
#include <cmath>

namespace tg::runtime::cuda {

#ifdef TG_HAVE_FLASH_ATTENTION_PTX
/// kernels/FlashAttention.cu as PTX, NUL-terminated (EmbedPtx.cmake).
extern const char kFlashAttentionPtx[];
#endif

std::unique_ptr<AttentionKernels> AttentionKernels::load(const Driver &driver,
                                                         std::string &error) {
#ifndef TG_HAVE_FLASH_ATTENTION_PTX
  (void)driver;
  error = "the program runs attention through the runtime's flash kernels, but this runtime "
          "was built without nvcc and has none: rebuild the runtime where CUDA's nvcc is, or "
          "compile the model with --cuda-attention=decomposed";
  return nullptr;
#else
  std::unique_ptr<AttentionKernels> kernels(new AttentionKernels(driver));
  char log[8192] = {0};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log, reinterpret_cast<void *>(uintptr_t(sizeof(log) - 1))};
  if (CUresult r = driver.cuModuleLoadDataEx(&kernels->module, kFlashAttentionPtx, 2, options,
                                             values)) {
    error = "the driver rejects the runtime's flash attention kernels (" +
            driver.errorText("cuModuleLoadDataEx", r) + ")" + (log[0] ? ": " : "") + log;
    return nullptr;
  }
  for (int d = 0; d < 2; ++d) {
    const int headDim = d == 0 ? 64 : 128;
    for (int k = 0; k < flash::kKernels; ++k) {
      const auto kernel = flash::Kernel(k);
      std::string name = std::string("tg_flash_attention_") + flash::kernelName(kernel) + "_d" +
                         std::to_string(headDim);
      CUfunction &f = kernels->functions[d][k];
      if (CUresult r = driver.cuModuleGetFunction(&f, kernels->module, name.c_str())) {
        error = "the runtime's flash attention kernels have no '" + name + "' (" +
                driver.errorText("cuModuleGetFunction", r) + ")";
        return nullptr;
      }
      // Above 48 KiB a kernel must ask for its dynamic shared memory.
      const unsigned shared = flash::sharedBytes(kernel, headDim);
      if (shared)
        if (CUresult r = driver.cuFuncSetAttribute(
                f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(shared))) {
          error = "cannot give '" + name + "' " + std::to_string(shared) +
                  " bytes of shared memory (" + driver.errorText("cuFuncSetAttribute", r) + ")";
          return nullptr;
        }
    }
  }
  return kernels;
#endif
}

AttentionKernels::~AttentionKernels() {
  if (queryGradSum)
    driver.cuMemFree(queryGradSum);
  for (const RopeTables &t : tables) {
    driver.cuMemFree(t.cosines);
    driver.cuMemFree(t.sines);
  }
  if (module)
    driver.cuModuleUnload(module);
}

const AttentionKernels::RopeTables *
AttentionKernels::ropeTables(const flatbuffers::Vector<double> &frequencies, uint32_t positions,
                             std::string &error) {
  std::vector<double> f(frequencies.begin(), frequencies.end());
  for (const RopeTables &t : tables)
    if (t.frequencies == f && t.positions == positions)
      return &t;
  // A length no arena could hold activations for (a damaged artifact whose
  // operands overlap) is refused before the host tables are made.
  constexpr uint64_t kMaxTableBytes = uint64_t(1) << 30;
  if (uint64_t(positions) * f.size() * 2 * sizeof(float) > kMaxTableBytes) {
    error = "its rotary position embedding over " + std::to_string(positions) +
            " positions would need tables of more than 1 GiB: the lengths are "
            "not a model's";
    return nullptr;
  }
  // Angles in f64, as tg.rope's kernels compute them, rounded to f32.
  std::vector<float> cosines, sines;
  for (uint32_t t = 0; t < positions; ++t)
    for (double frequency : f) {
      cosines.push_back(float(std::cos(t * frequency)));
      sines.push_back(float(std::sin(t * frequency)));
    }
  const size_t bytes = cosines.size() * sizeof(float);
  RopeTables made{std::move(f), positions, 0, 0};
  CUresult r = driver.cuMemAlloc(&made.cosines, bytes);
  if (!r && (r = driver.cuMemAlloc(&made.sines, bytes)) == CUDA_SUCCESS &&
      (r = driver.cuMemcpyHtoD(made.cosines, cosines.data(), bytes)) == CUDA_SUCCESS)
    r = driver.cuMemcpyHtoD(made.sines, sines.data(), bytes);
  if (r) {
    error = "cannot put the rotary position embedding's tables (" + std::to_string(2 * bytes) +
            " bytes) on the GPU (" + driver.errorText("cuMemAlloc/cuMemcpyHtoD", r) + ")";
    if (made.cosines)
      driver.cuMemFree(made.cosines);
    if (made.sines)
      driver.cuMemFree(made.sines);
    return nullptr;
  }
  tables.push_back(std::move(made));
  return &tables.back();
}

bool AttentionKernels::shareQueryGradSum(flash::Params &params, uint64_t bytes,
                                         std::string &error) {
  if (bytes > queryGradSumBytes) {
    CUdeviceptr grown = 0;
    if (CUresult r = driver.cuMemAlloc(&grown, bytes)) {
      error = "cannot put the query gradients' f32 sum (" + std::to_string(bytes) +
              " bytes) on the GPU (" + driver.errorText("cuMemAlloc", r) +
              "); unset TG_CUDA_FLASH_BACKWARD for the backward without it";
      return false;
    }
    if (queryGradSum)
      driver.cuMemFree(queryGradSum);
    queryGradSum = grown;
    queryGradSumBytes = bytes;
    for (flash::Params *planned : summing)
      planned->queryGradSum = queryGradSum;
  }
  params.queryGradSum = queryGradSum;
  summing.push_back(&params);
  return true;
}

std::vector<KernelLaunch> AttentionKernels::plan(const tgx::Attention &a,
                                                 const std::vector<CUdeviceptr> &operands,
                                                 bool sumQueryGrads, flash::Params &params,
                                                 std::string &error) {
  const bool gradient = a.pass() == tgx::AttentionPass_Gradient;
  params = flash::Params{};
  flash::Tensor *tensors[] = {&params.query,  &params.key,        &params.value,
                              &params.result, nullptr,            &params.resultGrad,
                              nullptr,        &params.queryGrad,  &params.keyGrad,
                              &params.valueGrad};
  for (unsigned i = 0; i < attentionOperandCount(gradient); ++i) {
    if (!isAttentionTensor(i))
      continue;
    const unsigned at = 3 * attentionTensorIndex(i);
    *tensors[i] = {operands[i], a.strides()->Get(at), a.strides()->Get(at + 1),
                   a.strides()->Get(at + 2)};
  }
  params.logsumexp = operands[kAttentionLogsumexp];
  if (gradient)
    params.delta = operands[kAttentionDelta];
  params.batch = int32_t(a.batch());
  params.queryHeads = int32_t(a.query_heads());
  params.keyHeads = int32_t(a.key_heads());
  params.queryLen = int32_t(a.query_len());
  params.keyLen = int32_t(a.key_len());
  params.causal = a.causal();
  params.window = int32_t(a.window());
  params.scale = a.scale();
  if (a.rope_frequencies()) {
    const RopeTables *rope =
        ropeTables(*a.rope_frequencies(), std::max(a.query_len(), a.key_len()), error);
    if (!rope)
      return {};
    params.ropeCos = rope->cosines;
    params.ropeSin = rope->sines;
  }

  const int headDim = int(a.head_dim());
  const unsigned queryPlanes = a.batch() * a.query_heads(), keyPlanes = a.batch() * a.key_heads();
  // A block a flash::blockRows of the queries of a plane (a batch row and a
  // head), or of its keys for the key and value gradients.
  auto launch = [&](flash::Kernel kernel, uint32_t rows, unsigned planes) {
    const unsigned per = unsigned(flash::blockRows(kernel));
    return KernelLaunch{functions[headDim == 64 ? 0 : 1][int(kernel)], (rows + per - 1) / per,
                        planes, unsigned(flash::kThreads), flash::sharedBytes(kernel, headDim)};
  };
  const uint32_t queries = a.query_len(), keys = a.key_len();
  if (!gradient)
    return {launch(flash::Kernel::Forward, queries, queryPlanes)};
  // delta first: the others read it (and it zeroes the query gradients' sum).
  const KernelLaunch delta = launch(flash::Kernel::Delta, queries, queryPlanes);
  if (!sumQueryGrads)
    return {delta, launch(flash::Kernel::KeyValueGrads, keys, keyPlanes),
            launch(flash::Kernel::QueryGrads, queries, queryPlanes)};
  if (!shareQueryGradSum(
          params, uint64_t(queryPlanes) * a.query_len() * a.head_dim() * sizeof(float), error))
    return {};
  return {delta, launch(flash::Kernel::KeyValueGradsAddingQuery, keys, keyPlanes),
          launch(flash::Kernel::QueryGradsFromSum, queries, queryPlanes)};
}

} // namespace tg::runtime::cuda
