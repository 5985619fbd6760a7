// tg_session_init_random: each parameter filled per its InitKind from its
// own random stream, seeded by (seed, parameter name), so adding, removing
// or reordering parameters leaves the others' values unchanged.
#include "tg/runtime/Hash.h"
#include "Random.h"
#include "Session.h"
#include "Status.h"

#include <algorithm>

namespace tg::runtime {
namespace {

/// Elements generated and converted per write: bounds the temporary memory
/// for large embeddings.
constexpr int64_t kChunk = 1 << 20;

uint64_t streamSeed(uint64_t seed, std::string_view name) {
  Fnv1a64 hash;
  hash.update(name);
  uint64_t state = seed;
  return splitmix64(state) ^ hash.value();
}

bool initParameter(tg_session &session, const tgx::Parameter &p, uint64_t seed,
                   std::string &error) {
  const tgx::Slot &slot = slotAt(session, p.slot());
  safetensors::DType dtype = toSafetensors(slot.dtype());
  std::size_t elementSize = safetensors::dtypeSize(dtype);
  NormalSampler normal(streamSeed(seed, p.name()->string_view()));
  int64_t total = numElements(slot);
  std::vector<double> values;
  for (int64_t begin = 0; begin < total; begin += kChunk) {
    int64_t count = std::min(kChunk, total - begin);
    values.resize(static_cast<std::size_t>(count));
    for (double &v : values) {
      switch (p.init()) {
      case tgx::InitKind_Zeros: v = 0; break;
      case tgx::InitKind_Ones: v = 1; break;
      case tgx::InitKind_Normal: v = p.init_std() * normal.next(); break;
      }
    }
    safetensors::Tensor chunk = safetensors::fromDoubles("", dtype, {count}, values);
    if (!writeSlot(session, slot, chunk.data.data(), chunk.data.size(),
                   uint64_t(begin) * elementSize, error))
      return false;
  }
  return true;
}

} // namespace
} // namespace tg::runtime

using namespace tg::runtime;
namespace tgx = tg::tgx;

extern "C" tg_status tg_session_init_random(tg_session *session, uint64_t seed) {
  return guarded("tg_session_init_random", [&](std::string &error) {
    if (!requireArgument(session, "tg_session_init_random", "session", error))
      return false;
    for (const tgx::Parameter *p : *session->program->parameters())
      if (!initParameter(*session, *p, seed, error))
        return false;
    return resetTraining(*session, error);
  });
}
