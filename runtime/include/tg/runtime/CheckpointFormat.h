// The checkpoint file's integrity check, for the runtime and for tools and
// tests that build or damage checkpoints on purpose (docs/runtime.md).
#ifndef TG_RUNTIME_CHECKPOINTFORMAT_H
#define TG_RUNTIME_CHECKPOINTFORMAT_H

#include "tg/runtime/Safetensors.h"

#include <string>

namespace tg::runtime {

/// The metadata key holding checkpointChecksum(file).
inline constexpr const char *kCheckpointChecksumKey = "tg.checksum";

/// FNV-1a 64 (16 hex digits) over every tensor (name, dtype, shape, bytes;
/// in name order, so independent of their order in the file) and every
/// metadata entry but the checksum itself.
std::string checkpointChecksum(const safetensors::File &file);

} // namespace tg::runtime

#endif
