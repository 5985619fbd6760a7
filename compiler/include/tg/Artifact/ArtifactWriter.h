#ifndef TG_ARTIFACT_ARTIFACTWRITER_H
#define TG_ARTIFACT_ARTIFACTWRITER_H

#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::tg {

/// What the artifact records besides the program itself.
struct ArtifactInfo {
  std::string producer;  // "tgc <version>"
  std::string modelJson; // the model description, verbatim
};

/// Translates a planned, serialized exec.program (exec-plan-buffers and a
/// target's serialize pass have run) into a .tgx file image
/// (runtime/artifact/tgx.fbs). Emits an error on the op the format cannot
/// express (an unplanned resource, a collective, an unsupported dtype).
FailureOr<std::vector<uint8_t>> translateToTgx(ModuleOp module,
                                               const ArtifactInfo &info);

/// Writes `exeOut`: a copy of the tgrun binary `tgrun` with `artifact`
/// embedded, so it runs that program with tgrun's flags.
bool writeExecutable(const std::string &tgrun,
                     const std::vector<uint8_t> &artifact,
                     const std::string &exeOut, std::string &error);

} // namespace mlir::tg

#endif
