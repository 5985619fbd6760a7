#include "tg/Passes/StridedLayout.h"

#include "tg/IR/TgOps.h"

#include "mlir/IR/BuiltinTypes.h"

namespace mlir::tg {

StridedLayout StridedLayout::packed(Value root) {
  StridedLayout layout{root, 0, {}, {}};
  auto type = cast<ShapedType>(root.getType());
  layout.shape.assign(type.getShape().begin(), type.getShape().end());
  layout.strides.assign(layout.shape.size(), 1);
  for (int64_t d = int64_t(layout.shape.size()) - 2; d >= 0; --d)
    layout.strides[d] = layout.strides[d + 1] * layout.shape[d + 1];
  return layout;
}

void StridedLayout::slice(ArrayRef<int64_t> offsets, ArrayRef<int64_t> sizes) {
  for (auto [d, start] : llvm::enumerate(offsets))
    offset += start * strides[d];
  shape.assign(sizes.begin(), sizes.end());
}

void StridedLayout::transpose(ArrayRef<int64_t> perm) {
  StridedLayout from = *this;
  for (auto [i, p] : llvm::enumerate(perm)) {
    shape[i] = from.shape[p];
    strides[i] = from.strides[p];
  }
}

void StridedLayout::untranspose(ArrayRef<int64_t> perm) {
  StridedLayout result = *this;
  for (auto [i, p] : llvm::enumerate(perm)) {
    shape[p] = result.shape[i];
    strides[p] = result.strides[i];
  }
}

bool StridedLayout::reshape(ArrayRef<int64_t> newShape) {
  SmallVector<std::pair<int64_t, int64_t>> old; // (size, stride), no 1s
  for (auto [size, stride] : llvm::zip(shape, strides))
    if (size != 1)
      old.push_back({size, stride});
  SmallVector<int64_t> newStrides(newShape.size(), 0);
  size_t i = 0, j = 0;
  while (i < old.size() || j < newShape.size()) {
    if (j < newShape.size() && newShape[j] == 1) {
      ++j;
      continue;
    }
    if (i >= old.size() || j >= newShape.size())
      return false;
    size_t endOld = i + 1, endNew = j + 1;
    int64_t oldCount = old[i].first, newCount = newShape[j];
    while (oldCount != newCount) {
      if (oldCount < newCount) {
        if (endOld == old.size())
          return false;
        oldCount *= old[endOld++].first;
      } else {
        if (endNew == newShape.size())
          return false;
        newCount *= newShape[endNew++];
      }
    }
    for (size_t k = i; k + 1 < endOld; ++k)
      if (old[k].second != old[k + 1].second * old[k + 1].first)
        return false;
    int64_t stride = old[endOld - 1].second;
    for (size_t k = endNew; k-- > j;) {
      newStrides[k] = stride;
      stride *= newShape[k];
    }
    i = endOld;
    j = endNew;
  }
  shape.assign(newShape.begin(), newShape.end());
  strides = std::move(newStrides);
  return true;
}

int64_t StridedLayout::span() const {
  int64_t last = 0;
  for (auto [size, stride] : llvm::zip(shape, strides))
    last += (size - 1) * stride;
  return last + 1;
}

static ArrayRef<int64_t> shapeOf(Value v) {
  return cast<ShapedType>(v.getType()).getShape();
}

bool isLayoutView(Operation *op) {
  return isa_and_nonnull<SliceOp, TransposeOp, ReshapeOp>(op);
}

bool StridedLayout::applyView(Operation *op) {
  if (auto slice = dyn_cast<SliceOp>(op)) {
    this->slice(slice.getOffsets(), slice.getSizes());
    return true;
  }
  if (auto transpose = dyn_cast<TransposeOp>(op)) {
    this->transpose(transpose.getPermutation());
    return true;
  }
  if (auto reshape = dyn_cast<ReshapeOp>(op))
    return this->reshape(shapeOf(reshape.getResult()));
  return false;
}

bool StridedLayout::applyViewBackward(Operation *op, unsigned input) {
  if (auto transpose = dyn_cast<TransposeOp>(op)) {
    untranspose(transpose.getPermutation());
    return true;
  }
  if (auto reshape = dyn_cast<ReshapeOp>(op))
    return this->reshape(shapeOf(reshape.getInput()));
  auto concat = dyn_cast<ConcatOp>(op);
  if (!concat)
    return false;
  int64_t rank = shape.size();
  // The attribute reads as unsigned: a negative axis counts from the end.
  int64_t axis = int64_t(concat.getAxis());
  if (axis < 0)
    axis += rank;
  int64_t start = 0;
  for (unsigned i = 0; i < input; ++i)
    start += shapeOf(concat.getInputs()[i])[axis];
  SmallVector<int64_t> offsets(rank, 0);
  offsets[axis] = start;
  slice(offsets, shapeOf(concat.getInputs()[input]));
  return true;
}

} // namespace mlir::tg
