// Tensor-parallel parameters and ZeRO-1 moments: each rank's slots hold its
// shard (and of a moment only its chunk of that), while weights files and
// single-file checkpoints hold full tensors, so that a file written on one
// mesh loads on any other. Rank 0 writes weights; the ranks that share its
// other coordinates send it their shards, each assembled first from the
// chunks of the ranks along the moment's axis. (A multi-rank checkpoint is
// written without gathering: ShardedCheckpoint.cpp.)
#include "Session.h"

namespace tg::runtime {
namespace {

/// createSession gives a multi-rank session a communicator; a session
/// without one cannot assemble a tensor split over several ranks.
bool hasCommunicator(const tg_session &session, const std::string &name, std::string &error) {
  if (session.stateComm)
    return true;
  error = "saving tensor '" + name +
          "' needs the other ranks' parts, but this session has no communicator";
  return false;
}

int64_t axisSize(const tg_session &session, uint32_t axis) {
  return session.program->mesh()->shape()->Get(axis);
}

/// Ranks along the mesh axis that splits `p` (1 when it is replicated).
int64_t shardRanks(const tg_session &session, const tgx::Parameter &p) {
  return p.shard() ? axisSize(session, p.shard()->axis()) : 1;
}

/// The ZeRO-1 chunking of `slot` when it is a moment of `p` split over a
/// mesh axis, else null.
const tgx::OptimizerShard *optimizerShardOf(const tg_session &session, const tgx::Parameter &p,
                                            const tgx::Slot &slot) {
  return &slot == &slotAt(session, p.slot()) ? nullptr : p.optimizer_shard();
}

/// This rank's shard of `slot` (`p`'s value or one of its moments) in
/// `local`. A ZeRO-1 moment's shard is assembled from the chunks of the
/// ranks along its axis on the one with coordinate 0 there; `local` is left
/// empty on the others. A collective, like gatherFullTensor.
bool readShard(const tg_session &session, const tgx::Parameter &p, const tgx::Slot &slot,
               const std::string &name, std::vector<uint8_t> &local, std::string &error) {
  if (!readSlot(session, slot, local, error))
    return false;
  const tgx::OptimizerShard *zero = optimizerShardOf(session, p, slot);
  if (!zero)
    return true;
  int64_t ranks = axisSize(session, zero->axis());
  bool groupRoot =
      meshCoordinate(*session.program->mesh(), session.placement.rank, zero->axis()) == 0;
  std::vector<uint8_t> chunks(groupRoot ? std::size_t(ranks) * local.size() : 0);
  if (ranks > 1 &&
      (!hasCommunicator(session, name, error) ||
       !session.stateComm->gatherAlongAxis(zero->axis(), local.data(), local.size(),
                                         chunks.data(), "saving tensor '" + name + "'", error)))
    return false;
  if (ranks == 1)
    chunks = std::move(local);
  local.clear();
  if (!groupRoot)
    return true;
  std::size_t elementSize = dtypeSize(slot.dtype());
  std::size_t chunkBytes = chunks.size() / std::size_t(ranks);
  int64_t elements = parameterLayout(session, p).localElements();
  local.resize(std::size_t(elements) * elementSize);
  for (int64_t c = 0; c < ranks; ++c)
    OptimizerChunk(elements, zero->chunk(), c)
        .copyChunkToLocal(chunks.data() + std::size_t(c) * chunkBytes, local.data(),
                          elementSize);
  return true;
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

OptimizerChunk chunkOf(const tg_session &session, const tgx::Parameter &p,
                       const tgx::OptimizerShard &zero) {
  return OptimizerChunk(parameterLayout(session, p).localElements(), zero.chunk(),
                        meshCoordinate(*session.program->mesh(), session.placement.rank,
                                       zero.axis()));
}

bool writesFiles(const tg_session &session) { return session.placement.rank == 0; }

bool gatherFullTensor(const tg_session &session, const tgx::Parameter &p,
                      const tgx::Slot &slot, std::string name, safetensors::Tensor &out,
                      std::string &error) {
  out = safetensors::Tensor{};
  const bool root = writesFiles(session);
  const bool chunked = optimizerShardOf(session, p, slot) != nullptr;
  if (!p.shard() && !chunked)
    return !root || slotTensor(session, slot, std::move(name), out, error);
  int64_t ranks = shardRanks(session, p);
  if (!root && ranks == 1 && !chunked)
    return true;
  std::vector<uint8_t> local, gathered;
  if (!readShard(session, p, slot, name, local, error))
    return false;
  if (ranks == 1) {
    gathered = std::move(local);
  } else {
    gathered.resize(root ? std::size_t(ranks) * local.size() : 0);
    if (!hasCommunicator(session, name, error) ||
        !session.stateComm->gatherToRankZero(p.shard()->axis(), local.data(), local.size(),
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
  if (!p.shard()) {
    out.data = std::move(gathered);
    return true;
  }
  out.data.resize(std::size_t(out.numElements()) * elementSize);
  for (int64_t c = 0; c < ranks; ++c)
    ShardLayout(*p.shard(), ranks, c)
        .copyLocalToFull(gathered.data() + std::size_t(c) * shardBytes, out.data.data(),
                         elementSize);
  return true;
}

bool writeFullTensor(tg_session &session, const tgx::Parameter &p, const tgx::Slot &slot,
                     const uint8_t *full, std::string &error) {
  const tgx::OptimizerShard *zero = optimizerShardOf(session, p, slot);
  if (!p.shard() && !zero)
    return writeSlot(session, slot, full, slot.range()->size(), 0, error);
  std::size_t elementSize = dtypeSize(slot.dtype());
  ShardLayout layout = parameterLayout(session, p);
  std::vector<uint8_t> local(std::size_t(layout.localElements()) * elementSize);
  layout.copyFullToLocal(full, local.data(), elementSize);
  if (zero) {
    std::vector<uint8_t> chunk(slot.range()->size());
    chunkOf(session, p, *zero).copyLocalToChunk(local.data(), chunk.data(), elementSize);
    local = std::move(chunk);
  }
  return writeSlot(session, slot, local.data(), local.size(), 0, error);
}

} // namespace tg::runtime
