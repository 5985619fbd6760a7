// The runtime's own flash attention kernels (kernels/FlashAttention.cu),
// which Attention commands run: nvcc compiles them to PTX when the runtime
// is built, and the driver loads them the first time a program needs them.
#ifndef TG_RUNTIME_CUDA_ATTENTIONKERNELS_H
#define TG_RUNTIME_CUDA_ATTENTIONKERNELS_H

#include "CudaDriver.h"
#include "kernels/FlashAttention.h"

#include "tgx_generated.h"

#include <memory>
#include <string>
#include <vector>

namespace tg::runtime::cuda {

class AttentionKernels {
public:
  /// Loads the kernel module; null with `error` set when the runtime was
  /// built without them (no nvcc) or the driver rejects them.
  static std::unique_ptr<AttentionKernels> load(const Driver &driver, std::string &error);
  ~AttentionKernels();

  /// The launches of a verified Attention command over its operands'
  /// device addresses, and the parameters every launch takes (one
  /// argument: `params`, which must outlive the launches).
  std::vector<KernelLaunch> plan(const tgx::Attention &attention,
                                 const std::vector<CUdeviceptr> &operands,
                                 flash::Params &params) const;

private:
  explicit AttentionKernels(const Driver &driver) : driver(driver) {}
  const Driver &driver;
  CUmodule module = nullptr;
  CUfunction functions[2][flash::kKernels] = {}; // [head dim 64, 128][flash::Kernel]
};

} // namespace tg::runtime::cuda

#endif
