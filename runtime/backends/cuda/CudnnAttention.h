// Attention commands through cuDNN's fused flash attention: cuDNN 9 (loaded
// with dlopen, like the driver and cuBLASLt) recognises a graph of matrix
// products, pointwise operations and reductions as scaled dot-product
// attention and runs it with its own Hopper kernels. The graphs are the ones
// cuDNN's frontend builds for SDPA forward and backward, built here on the
// backend API (the frontend is not packaged). Each distinct problem is
// planned once at load time.
#ifndef TG_RUNTIME_CUDA_CUDNNATTENTION_H
#define TG_RUNTIME_CUDA_CUDNNATTENTION_H

#include "CudaDriver.h"

#include "tgx_generated.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tg::runtime::cuda {

struct CudnnApi;
struct CudnnPlan;

/// One Attention command's problem: what a cuDNN graph is built from.
struct AttentionProblem {
  bool gradient = false;
  int64_t batch = 0, queryHeads = 0, keyHeads = 0, queryLen = 0, keyLen = 0, headDim = 0;
  bool causal = false;
  int64_t window = 0; // > 0: query t sees keys s > t - window
  float scale = 1;
  /// Batch, head and row strides (elements) of each bf16 operand, in
  /// operand order (tgx.fbs, table Attention).
  std::vector<int64_t> strides;

  static AttentionProblem of(const tgx::Attention &attention);
  bool operator<(const AttentionProblem &other) const;
};

class CudnnAttention {
public:
  /// Why cuDNN's graph, as built here, cannot compute `attention` ("" where
  /// it can): a rotary position embedding inside is not in it.
  static std::string refusal(const tgx::Attention &attention);
  /// Why cuDNN `version` should not compute `problem` ("" where it may): the
  /// problems and versions cuDNN's frontend refuses or works around.
  static std::string refusal(const AttentionProblem &problem, size_t version);

  /// Builds `problem`'s graph up to its finalized operations, which needs
  /// cuDNN but no GPU (what the tests check); false with `error` set where
  /// cuDNN cannot be loaded or rejects an operation.
  static bool describe(const AttentionProblem &problem, std::string &error);

  /// cuDNN with a handle on the current CUDA context, or null with `error`
  /// set (no libcudnn.so.9: TG_CUDNN_LIBRARY may name it).
  static std::unique_ptr<CudnnAttention> load(const Driver &driver, std::string &error);
  ~CudnnAttention();

  /// The plan for `problem` (planned on first sight), or -1 with `error`
  /// set where refusal() refuses it or cuDNN has no engine for its graph
  /// (kept: the same problem is refused at once).
  int plan(const AttentionProblem &problem, std::string &error);
  /// Device scratch any plan needs: cuDNN's workspace, then the query
  /// gradient's f32 sums.
  uint64_t workspaceBytes() const { return workspace; }

  /// Plan `index` over one command's operands (the arena addresses, in the
  /// command's order) and a workspace of workspaceBytes(): made once, run
  /// every step.
  class Execution {
  public:
    ~Execution();

  private:
    friend class CudnnAttention;
    Execution() = default;
    const CudnnApi *api = nullptr;
    const CudnnPlan *plan = nullptr;
    void *pack = nullptr; // the variant pack (cudnnBackendDescriptor_t)
    CUdeviceptr querySums = 0;
  };
  std::unique_ptr<Execution> bind(int index, const std::vector<CUdeviceptr> &operands,
                                  CUdeviceptr workspace, std::string &error) const;
  bool run(const Execution &execution, CUstream stream, std::string &error) const;

private:
  explicit CudnnAttention(const Driver &driver);
  int planNew(const AttentionProblem &problem, std::string &error);

  const Driver &driver;
  const CudnnApi *api = nullptr;
  void *handle = nullptr; // cudnnHandle_t
  std::vector<std::unique_ptr<CudnnPlan>> plans;
  std::map<AttentionProblem, int> planOf;
  std::map<AttentionProblem, std::string> refusedOf;
  uint64_t workspace = 0;
};

} // namespace tg::runtime::cuda

#endif
