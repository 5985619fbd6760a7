// Tensor-parallel parameters: each rank's slots hold its shard, while
// weights and checkpoints hold full tensors, so that a file written on one
// mesh loads on any other. Rank 0 writes the files; the ranks that share
// its other coordinates send it their shards.
#include "Session.h"

namespace tg::runtime {
namespace {

/// Ranks along the mesh axis that splits `p` (1 when it is replicated).
int64_t shardRanks(const tg_session &session, const tgx::Parameter &p) {
  return p.shard() ? session.program->mesh()->shape()->Get(p.shard()->axis()) : 1;
}

} // namespace

ShardLayout parameterLayout(const tg_session &session, const tgx::Parameter &p) {
  if (!p.shard()) {
    const tgx::Slot &slot = slotAt(session, p.slot());
    return ShardLayout(std::vector<int64_t>(slot.shape()->begin(), slot.shape()->end()));
  }
  uint32_t axis = p.shard()->axis();
  return ShardLayout(*p.shard(), shardRanks(session, p),
                     meshCoordinate(*session.program->mesh(), session.placement.rank, axis));
}

bool writesFiles(const tg_session &session) { return session.placement.rank == 0; }

bool gatherFullTensor(const tg_session &session, const tgx::Parameter &p,
                      const tgx::Slot &slot, std::string name, safetensors::Tensor &out,
                      std::string &error) {
  out = safetensors::Tensor{};
  const bool root = writesFiles(session);
  if (!p.shard())
    return !root || slotTensor(session, slot, std::move(name), out, error);
  int64_t ranks = shardRanks(session, p);
  if (!root && ranks == 1)
    return true;
  std::vector<uint8_t> local, gathered;
  if (!readSlot(session, slot, local, error))
    return false;
  if (ranks == 1) {
    gathered = std::move(local);
  } else {
    // A split over several ranks gave the session a gatherer (createSession).
    gathered.resize(root ? std::size_t(ranks) * local.size() : 0);
    if (!session.gatherer->gatherToRankZero(p.shard()->axis(), local.data(), local.size(),
                                            gathered.data(), "saving tensor '" + name + "'",
                                            error))
      return false;
  }
  if (!root)
    return true;
  std::size_t elementSize = dtypeSize(slot.dtype());
  std::size_t shardBytes = gathered.size() / std::size_t(ranks);
  out.name = std::move(name);
  out.dtype = toSafetensors(slot.dtype());
  out.shape = parameterLayout(session, p).fullShape();
  out.data.resize(std::size_t(out.numElements()) * elementSize);
  for (int64_t c = 0; c < ranks; ++c)
    ShardLayout(*p.shard(), ranks, c)
        .copyLocalToFull(gathered.data() + std::size_t(c) * shardBytes, out.data.data(),
                         elementSize);
  return true;
}

bool writeFullTensor(tg_session &session, const tgx::Parameter &p, const tgx::Slot &slot,
                     const uint8_t *full, std::string &error) {
  if (!p.shard())
    return writeSlot(session, slot, full, slot.range()->size(), 0, error);
  std::vector<uint8_t> local(slot.range()->size());
  parameterLayout(session, p).copyFullToLocal(full, local.data(), dtypeSize(slot.dtype()));
  return writeSlot(session, slot, local.data(), local.size(), 0, error);
}

} // namespace tg::runtime
