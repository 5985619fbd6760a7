#ifndef TG_ARTIFACT_ARTIFACTWRITER_H
#define TG_ARTIFACT_ARTIFACTWRITER_H

#include "tg/Passes/Program.h"
#include "tg/Targets/CpuTarget.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::tg {

/// What the artifact records besides the program itself.
struct ArtifactInfo {
  std::string producer;  // "tgc <version>"
  std::string modelJson; // the model description, verbatim
  int64_t batchSize = 0, seqLen = 0, vocabSize = 0;
  uint64_t seed = 0;
  double flopsPerStep = 0;
};

/// Serialises a program and its host kernels as a .tgx file image
/// (runtime/artifact/tgx.fbs).
std::vector<uint8_t> writeArtifact(const Program &program,
                                   const HostKernels &kernels,
                                   const ArtifactInfo &info);

/// Writes `exeOut`: a copy of the tgrun binary `tgrun` with `artifact`
/// embedded, so it runs that program with tgrun's flags.
bool writeExecutable(const std::string &tgrun,
                     const std::vector<uint8_t> &artifact,
                     const std::string &exeOut, std::string &error);

} // namespace mlir::tg

#endif
