// Names of values, as their locations carry them (NameLoc), and the names of
// what the passes derive from them: "grad_x" for x's gradient, "scores_probs"
// for attention's probabilities. They label kernels, profiles and remarks.
#ifndef TG_IR_VALUENAMES_H
#define TG_IR_VALUENAMES_H

#include "mlir/IR/Location.h"
#include "mlir/IR/Value.h"

namespace mlir::tg {

/// The name a location gives (a NameLoc's), or "".
StringRef locationName(Location loc);

/// The name of `v` (the location of its op, or of the block argument), or "".
StringRef valueName(Value v);

/// The location of a value derived from one named `name`: a NameLoc
/// "<prefix><name><suffix>" wrapping `base`, or `base` itself where `name`
/// is empty (what is derived from an unnamed value stays unnamed).
Location derivedLoc(Location base, StringRef name, const Twine &prefix,
                    const Twine &suffix = "");

} // namespace mlir::tg

#endif
