#ifndef TG_IR_ATTENTIONVISIBILITY_H
#define TG_IR_ATTENTIONVISIBILITY_H

#include <algorithm>
#include <cstdint>
#include <utility>

namespace mlir::tg {
/// The keys [first, end) that query position t sees in attention over
/// `keyLen` keys (tg.attention's semantics): all of them, or with `causal`
/// those up to t, and with a `window` W > 0 only t - W < s <= t. Empty when
/// first >= end. Shared by the float64 evaluator and tg-fuse-attention's
/// cost model; the flash kernels emit the same rule as IR.
inline std::pair<int64_t, int64_t> visibleKeyRange(int64_t t, int64_t keyLen,
                                                   bool causal, int64_t window) {
  int64_t end = causal ? std::min(t + 1, keyLen) : keyLen;
  int64_t first = window > 0 ? std::max<int64_t>(0, t - window + 1) : 0;
  return {first, end};
}
} // namespace mlir::tg

#endif
