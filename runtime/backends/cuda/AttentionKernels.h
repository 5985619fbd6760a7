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
  /// `error` set, where its rotary position embedding's tables or the
  /// query gradients' sum cannot be put on the device. With
  /// `sumQueryGrads`, a gradient's key blocks add dQ to an f32 sum
  /// (flash::Params::queryGradSum): one for every command so planned,
  /// which must therefore run one at a time, on one stream. The kernels
  /// keep `params`' address to repoint it should a later plan grow the
  /// sum: plan each command once, into params that stay put until the
  /// kernels go, and launch nothing before the last plan.
  std::vector<KernelLaunch> plan(const tgx::Attention &attention,
                                 const std::vector<CUdeviceptr> &operands, bool sumQueryGrads,
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

  /// Points `params` at a query-gradient sum of at least `bytes`, growing
  /// the one all commands share (and repointing those planned before).
  bool shareQueryGradSum(flash::Params &params, uint64_t bytes, std::string &error);

  const Driver &driver;
  CUmodule module = nullptr;
  CUfunction functions[2][flash::kKernels] = {}; // [head dim 64, 128][flash::Kernel]
  std::deque<RopeTables> tables; // a deque: what ropeTables returned stays put
  CUdeviceptr queryGradSum = 0;
  uint64_t queryGradSumBytes = 0;
  std::vector<flash::Params *> summing; // the plans that use it
};

} // namespace tg::runtime::cuda

#endif
