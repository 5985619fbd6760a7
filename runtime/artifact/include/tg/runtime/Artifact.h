// The .tgx artifact (schema: runtime/artifact/tgx.fbs, generated header
// tgx_generated.h): the format version, the verifier every consumer runs
// before touching a program, and small helpers over verified programs.
#ifndef TG_RUNTIME_ARTIFACT_H
#define TG_RUNTIME_ARTIFACT_H

#include "tgx_generated.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tg::runtime {

/// The format version this runtime reads and tgc writes. Bump it on any
/// incompatible change of tgx.fbs or of the meaning of its fields.
constexpr uint32_t kFormatVersion = 1;

/// Bytes per element of `dtype`; 0 for a value outside the enum.
std::size_t dtypeSize(tgx::DType dtype);

/// Checks that `bytes` is a well-formed artifact this runtime can execute
/// without reading or writing outside its arena: the FlatBuffers structure
/// (with the "TGX1" identifier), the format version, every range, slot,
/// parameter, constant and command, and the slots every program must have
/// (step, tokens, targets, loss, grad_norm, lr). On failure returns false and
/// sets `error` to one sentence naming `sourceName`, the field at fault and
/// what to do.
bool verifyArtifact(const uint8_t *bytes, std::size_t size,
                    const std::string &sourceName, std::string &error);

/// The slot called `name`, or nullptr. Slot names are unique in verified
/// programs.
const tgx::Slot *findSlot(const tgx::Program &program, std::string_view name);

/// Elements of a verified slot's shape.
int64_t numElements(const tgx::Slot &slot);

} // namespace tg::runtime

#endif
