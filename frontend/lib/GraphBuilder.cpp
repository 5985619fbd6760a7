#include "GraphBuilder.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::tg::frontend;

static ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

Location GraphBuilder::loc(const Twine &name) const {
  return NameLoc::get(StringAttr::get(base.getContext(), name), base);
}

Value GraphBuilder::param(StringRef hfName) const {
  Value v = params.lookup(hfName);
  assert(v && "parameter missing from parameterSpecs");
  return v;
}

Value GraphBuilder::linear(const Twine &name, Value x, Value w, Value bias,
                           bool weightIsOutIn) {
  Value y = tg::MatmulOp::create(b, loc(name), x, w, /*transpose_lhs=*/false,
                                   /*transpose_rhs=*/weightIsOutIn);
  if (bias)
    y = create<tg::AddOp>(name + "_b", y, bias);
  return y;
}

Value GraphBuilder::splitHeads(const Twine &name, Value x, int64_t heads) {
  ArrayRef<int64_t> s = shapeOf(x);
  Type element = cast<RankedTensorType>(x.getType()).getElementType();
  auto split = RankedTensorType::get({s[0], s[1], heads, s[2] / heads}, element);
  Value r = create<tg::ReshapeOp>(name + "_split", split, x);
  return create<tg::TransposeOp>(name + "_heads", r,
                                 ArrayRef<int64_t>{0, 2, 1, 3});
}

Value GraphBuilder::mergeHeads(const Twine &name, Value x) {
  ArrayRef<int64_t> s = shapeOf(x);
  Type element = cast<RankedTensorType>(x.getType()).getElementType();
  Value t = create<tg::TransposeOp>(name + "_tokens", x,
                                    ArrayRef<int64_t>{0, 2, 1, 3});
  auto merged = RankedTensorType::get({s[0], s[2], s[1] * s[3]}, element);
  return create<tg::ReshapeOp>(name + "_merge", merged, t);
}

Value GraphBuilder::loss(Value logits, Value targets) {
  auto type = cast<RankedTensorType>(logits.getType());
  Type f32 = b.getF32Type();
  if (type.getElementType().getIntOrFloatBitWidth() < 32)
    logits = create<tg::CastOp>("logits_f32", type.clone(f32), logits);
  return create<tg::CrossEntropyOp>("loss", logits, targets);
}
