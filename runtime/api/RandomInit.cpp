// tg_session_init_random: each parameter filled per its InitKind from its
// own random stream, seeded by (seed, parameter name), so adding, removing
// or reordering parameters leaves the others' values unchanged. A sharded
// parameter gets the values of the same parameter on one device.
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

/// Streams the full tensor's values in row-major order, as one device
/// draws them, and keeps this rank's (zeros in padding): a parameter gets
/// the same values on every mesh.
bool initParameter(tg_session &session, const tgx::Parameter &p, uint64_t seed,
                   std::string &error) {
  const tgx::Slot &slot = slotAt(session, p.slot());
  safetensors::DType dtype = toSafetensors(slot.dtype());
  ShardLayout layout = parameterLayout(session, p);
  NormalSampler normal(streamSeed(seed, p.name()->string_view()));
  int64_t drawn = 0; // full elements the stream has passed
  std::vector<double> values;
  values.reserve(std::size_t(std::min(kChunk, layout.localElements())));
  uint64_t written = 0; // bytes of the slot
  auto flush = [&] {
    safetensors::Tensor chunk = safetensors::fromDoubles("", dtype, {int64_t(values.size())},
                                                         values);
    values.clear();
    uint64_t offset = written;
    written += chunk.data.size();
    return writeSlot(session, slot, chunk.data.data(), chunk.data.size(), offset, error);
  };
  bool ok = true;
  layout.forEachRow([&](int64_t, int64_t full) {
    for (int64_t j = 0; ok && j < layout.rowElements();) {
      int64_t count = std::min(layout.rowElements() - j, kChunk - int64_t(values.size()));
      if (full < 0 || p.init() == tgx::InitKind_Zeros) {
        values.insert(values.end(), std::size_t(count), 0.0);
      } else if (p.init() == tgx::InitKind_Ones) {
        values.insert(values.end(), std::size_t(count), 1.0);
      } else {
        normal.skip(uint64_t(full + j - drawn)); // other ranks' elements
        for (int64_t k = 0; k < count; ++k)
          values.push_back(p.init_std() * normal.next());
        drawn = full + j + count;
      }
      j += count;
      if (int64_t(values.size()) == kChunk)
        ok = flush();
    }
  });
  return ok && (values.empty() || flush());
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
