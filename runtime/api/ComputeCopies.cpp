// The parameters' compute-precision copies (Parameter.compute_slot): the
// step reads a bf16 or f16 copy of each f32 parameter and rewrites it with
// the parameter, so only writes from outside the step (initialisation,
// weights, checkpoints, the embedding API) leave the copies stale. The
// first step after them writes the copies from the parameters here, rounded
// to nearest, ties to even, as the step's own cast rounds.
#include "Session.h"

#include <cstring>

namespace tg::runtime {

bool updateComputeCopies(tg_session &session, std::string &error) {
  if (session.computeCopiesCurrent)
    return true;
  std::vector<uint8_t> master;
  std::vector<uint16_t> copy;
  for (const tgx::Parameter *p : *session.program->parameters()) {
    if (p->compute_slot() < 0)
      continue;
    // Verified: an f32 parameter slot and a bf16 or f16 copy of its shape.
    const tgx::Slot &copySlot = slotAt(session, uint32_t(p->compute_slot()));
    if (!readSlot(session, slotAt(session, p->slot()), master, error))
      return false;
    bool bf16 = copySlot.dtype() == tgx::DType_BF16;
    copy.resize(master.size() / sizeof(float));
    for (std::size_t i = 0; i < copy.size(); ++i) {
      float value;
      std::memcpy(&value, master.data() + i * sizeof(float), sizeof(float));
      copy[i] = bf16 ? safetensors::doubleToBf16(value) : safetensors::doubleToF16(value);
    }
    if (!writeSlot(session, copySlot, copy.data(), copy.size() * sizeof(uint16_t), 0, error))
      return false;
  }
  session.computeCopiesCurrent = true;
  return true;
}

} // namespace tg::runtime
