// The runtime's own flash attention kernels (kernels/FlashAttention.cu),
// which Attention commands run: nvcc compiles them to PTX when the runtime
// is built, and the driver loads them the first time a program needs them.
#ifndef TG_RUNTIME_CUDA_ATTENTIONKERNELS_H
#define TG_RUNTIME_CUDA_ATTENTIONKERNELS_H

#include "CudaDriver.h"
#include "kernels/FlashAttention.h"

#include "tgx_generated.h"

#include <deque>
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
  /// argument: `params`, which must outlive the launches); none, with
  /// `error` set, where its rotary position embedding's tables cannot be
  /// put on the device.
  std::vector<KernelLaunch> plan(const tgx::Attention &attention,
                                 const std::vector<CUdeviceptr> &operands,
                                 flash::Params &params, std::string &error);

private:
  explicit AttentionKernels(const Driver &driver) : driver(driver) {}

  /// The cosines and sines a rotary position embedding's kernels read
  /// (flash::Params::ropeCos), for `positions` positions, on the device:
  /// made once for each set of frequencies and length, and kept until the
  /// kernels are unloaded.
  struct RopeTables {
    std::vector<double> frequencies;
    uint32_t positions;
    CUdeviceptr cosines, sines;
  };
  const RopeTables *ropeTables(const flatbuffers::Vector<double> &frequencies,
                               uint32_t positions, std::string &error);

  const Driver &driver;
  CUmodule module = nullptr;
  CUfunction functions[2][flash::kKernels] = {}; // [head dim 64, 128][flash::Kernel]
  std::deque<RopeTables> tables; // a deque: what ropeTables returned stays put
};

} // namespace tg::runtime::cuda

#endif
