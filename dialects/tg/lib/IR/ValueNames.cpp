#include "tg/IR/ValueNames.h"

#include "mlir/IR/Block.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"

namespace mlir::tg {

StringRef locationName(Location loc) {
  if (auto named = dyn_cast<NameLoc>(loc))
    return named.getName().getValue();
  return "";
}

StringRef valueName(Value v) {
  return locationName(v.getDefiningOp() ? v.getDefiningOp()->getLoc()
                                        : cast<BlockArgument>(v).getLoc());
}

Location derivedLoc(Location base, StringRef name, const Twine &prefix,
                    const Twine &suffix) {
  if (name.empty())
    return base;
  return NameLoc::get(
      StringAttr::get(base.getContext(), prefix + name + suffix), base);
}

} // namespace mlir::tg
