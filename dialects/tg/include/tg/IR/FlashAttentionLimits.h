#ifndef TG_IR_FLASHATTENTIONLIMITS_H
#define TG_IR_FLASHATTENTIONLIMITS_H

#include <cstdint>

namespace mlir::tg {
/// The largest head dim of tg.flash_attention and its gradient. A kernel
/// task holds its block's rows transposed on the stack (up to four buffers
/// of 16 x D elements, f64 for the sums: 256 KiB at 512), which must fit a
/// thread's stack whatever its size; tg-fuse-attention leaves larger heads
/// to the decomposition. (Models use 64 to 256.)
constexpr int64_t kFlashAttentionMaxHeadDim = 512;
} // namespace mlir::tg

#endif
