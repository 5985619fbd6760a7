// GEMMs through cuBLASLt, loaded with dlopen like the driver. Each distinct
// shape is planned once at load time: the heuristic's first algorithm for
// it under the workspace limit, cached and reused by every command of that
// shape and by the captured CUDA graph. Asked for more candidates, the plan
// keeps the heuristic's first few (and, for a weight gradient's long sum,
// their variants split over K), and tune() times them on the GPU and keeps
// the fastest (the heuristic ranks by a model, not by the clock).
#ifndef TG_RUNTIME_CUDA_CUBLASLT_H
#define TG_RUNTIME_CUDA_CUBLASLT_H

#include "tgx_generated.h"

#include <cublasLt.h>
#include <cuda.h>

#include "CudaDriver.h"

#include <array>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

namespace tg::runtime::cuda {

struct LtApi;

class Gemms {
public:
  /// cuBLASLt with a handle, or null with `error` set. Each shape keeps up
  /// to `candidates` of the heuristic's algorithms for tune() (1: its first
  /// alone, nothing to tune).
  static std::unique_ptr<Gemms> create(size_t workspaceBytes, int candidates, std::string &error);
  ~Gemms();

  /// The plan for `gemm`'s shape and its operands' alignment (`operands`:
  /// the command's a, b, c, ...; planned on first sight), or -1 with
  /// `error` set when cuBLASLt has no algorithm for it.
  int plan(const tgx::Gemm &gemm, const std::vector<CUdeviceptr> &operands, std::string &error);
  /// c = op(a) x op(b) (+ bias, with the Bias epilogue; then the
  /// activation) with plan `index` on `stream`. `operands` are the
  /// command's: a, b, c, the bias with the Bias epilogue, aux with an
  /// activation.
  bool run(int index, const std::vector<CUdeviceptr> &operands, CUdeviceptr workspace,
           CUstream stream, std::string &error) const;

  /// What tune() found for one shape: seconds a call with the heuristic's
  /// first algorithm and with the one kept, how many it timed, and the K
  /// splits of the one kept.
  struct Timing {
    double firstSeconds = 0, keptSeconds = 0;
    int timed = 0;
    bool changed = false;
    int keptSplits = 1;
  };
  /// Times plan `index`'s candidates on `operands` (a command's, which it
  /// overwrites: c and aux) and keeps the fastest where it beats the
  /// heuristic's first by more than noise. Candidates cuBLASLt refuses to run
  /// are skipped; an error only where the first cannot run either.
  bool tune(const Driver &driver, int index, const std::vector<CUdeviceptr> &operands,
            CUdeviceptr workspace, CUstream stream, Timing &timing, std::string &error);

private:
  struct Plan;
  // dtype, transposes, m, n, k, batch, epilogue, then per operand
  // (a, b, c): ld, stride, inner stride; then the inner batch, the
  // activation and the alignment of a, b and c (bytes, at most 256).
  using Shape = std::tuple<int, bool, bool, int64_t, int64_t, int64_t, int64_t, int,
                           std::array<int64_t, 9>, int64_t, int, std::array<uint32_t, 3>>;
  Gemms() = default;
  /// Adds to `plan`'s candidates the first few's variants split over K
  /// (kSplitKParts), where the product is a long sum into a small output.
  void addSplitKCandidates(Plan &plan, int64_t m, int64_t n, int64_t k) const;
  bool matmul(const Plan &plan, const cublasLtMatmulAlgo_t &algo,
              const std::vector<CUdeviceptr> &operands, CUdeviceptr workspace, CUstream stream,
              std::string &error) const;

  const LtApi *api = nullptr;
  int candidates = 1;
  cublasLtHandle_t handle = nullptr;
  size_t workspaceBytes = 0;
  std::vector<std::unique_ptr<Plan>> plans;
  std::map<Shape, int> planOf;
};

} // namespace tg::runtime::cuda

#endif
