// A tensor as strided elements of a buffer it was sliced, reshaped or
// transposed out of: what lets a consumer read (or a producer write) those
// layouts in place instead of a kernel moving the elements. The GEMMs take
// it as their strides (exec-fuse-gemm-layouts), the flash attention kernels
// as their rows' addresses (tg-fuse-attention-layouts).
#ifndef TG_PASSES_STRIDEDLAYOUT_H
#define TG_PASSES_STRIDEDLAYOUT_H

#include "mlir/IR/Operation.h"

namespace mlir::tg {

/// A tensor of `shape` as elements of the buffer `root`: element (i0, ...)
/// is root's element offset + sum(i_d x strides[d]).
struct StridedLayout {
  Value root;
  int64_t offset = 0;
  SmallVector<int64_t> shape, strides;

  /// The whole of `root` (a shaped value), row-major.
  static StridedLayout packed(Value root);

  void slice(ArrayRef<int64_t> offsets, ArrayRef<int64_t> sizes);
  /// The result of tg.transpose: its dim i is this one's dim perm[i].
  void transpose(ArrayRef<int64_t> perm);
  /// The input of a tg.transpose whose result this is.
  void untranspose(ArrayRef<int64_t> perm);
  /// The same elements in another shape without moving them, where the
  /// strides allow (numpy's no-copy reshape): each group of old dims that
  /// becomes a group of new dims must be contiguous within itself.
  bool reshape(ArrayRef<int64_t> newShape);
  /// One past the last element it reaches, from `offset`.
  int64_t span() const;

  /// From the layout of a view op's input to its result's: tg.slice,
  /// tg.transpose, tg.reshape. False for another op, or a reshape the
  /// strides do not allow.
  bool applyView(Operation *op);
  /// From the layout of a result to that of input `input`: tg.transpose,
  /// tg.reshape, tg.concat (the input's slot). False as for applyView.
  bool applyViewBackward(Operation *op, unsigned input);
};

/// Whether `op` is a tg.slice, tg.transpose or tg.reshape: its result is
/// its input's elements in another layout (applyView).
bool isLayoutView(Operation *op);

} // namespace mlir::tg

#endif
