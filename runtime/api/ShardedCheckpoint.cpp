// Sharded checkpoints: in a multi-rank run every rank writes the pieces of
// the training state it holds, as it holds them (a tensor-parallel shard
// with its padding, a ZeRO-1 chunk), to DIR/rank-RRRRR.safetensors, in
// parallel, and rank 0 writes DIR/checkpoint.index.json, which says how the
// pieces make up each full tensor (tg/runtime/CheckpointIndex.h). Nothing
// is gathered, so a rank needs memory for its own state only (about twice
// its pieces while it serialises them), and the index does not depend on
// the reader's mesh.
//
// A piece held by several ranks (replicas along the other mesh axes) is
// written by one of them, chosen so that the ranks write about as much
// each. The ranks write into DIR.partial; only once every rank has written
// its file does rank 0 write the index and rename the directory to DIR, so
// DIR is either a complete checkpoint or absent, and a failed save leaves
// the previous checkpoint alone.
#include "Checkpoint.h"
#include "tg/runtime/CheckpointFormat.h"
#include "tg/runtime/CheckpointIndex.h"
#include "tg/runtime/Hash.h"
#include "tg/runtime/RegularFile.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <numeric>

namespace tg::runtime {
namespace {

namespace fs = std::filesystem;

/// An index lists every piece of every tensor; at GPT-3 175B on 64 ranks it
/// takes a few MB. Anything much larger is not one.
constexpr uint64_t kMaxIndexBytes = uint64_t(256) << 20;

constexpr const char *kNotWritten = "the checkpoint was not written, the previous one is kept";

/// One piece of a state tensor: what the ranks with coordinate `split` on
/// its parameter's shard axis and `chunk` on its ZeRO-1 axis hold.
struct Piece {
  int64_t split = 0, chunk = 0;
  int writer = 0;
};

/// A state tensor, how it is split, and who writes each piece.
struct PlannedTensor {
  StateTensor state;
  const tgx::ParameterShard *shard = nullptr;
  const tgx::OptimizerShard *zero = nullptr; // a moment's chunking
  int64_t splitParts = 1, chunkParts = 1;
  std::vector<Piece> pieces; // split-major
};

std::string rankFileName(int rank) {
  char name[32];
  std::snprintf(name, sizeof(name), "rank-%05d.safetensors", rank);
  return name;
}

/// Which piece of `t` rank `rank` holds.
std::size_t pieceOf(const tg_session &session, const PlannedTensor &t, int rank) {
  const tgx::Mesh &mesh = *session.program->mesh();
  int64_t split = t.shard ? meshCoordinate(mesh, rank, t.shard->axis()) : 0;
  int64_t chunk = t.zero ? meshCoordinate(mesh, rank, t.zero->axis()) : 0;
  return std::size_t(split * t.chunkParts + chunk);
}

/// Every rank computes the same plan: each piece goes to the rank, among
/// those holding it, that has the fewest bytes to write so far, the largest
/// tensors first.
std::vector<PlannedTensor> planPieces(const tg_session &session) {
  const tgx::Mesh &mesh = *session.program->mesh();
  std::vector<PlannedTensor> plan;
  for (const StateTensor &s : stateTensors(session)) {
    PlannedTensor t;
    t.state = s;
    t.shard = s.parameter->shard();
    if (s.slot != &slotAt(session, s.parameter->slot()))
      t.zero = s.parameter->optimizer_shard();
    if (t.shard)
      t.splitParts = mesh.shape()->Get(t.shard->axis());
    if (t.zero)
      t.chunkParts = mesh.shape()->Get(t.zero->axis());
    t.pieces.resize(std::size_t(t.splitParts * t.chunkParts));
    for (std::size_t i = 0; i < t.pieces.size(); ++i)
      t.pieces[i] = {int64_t(i) / t.chunkParts, int64_t(i) % t.chunkParts, -1};
    plan.push_back(std::move(t));
  }
  auto bytes = [](const PlannedTensor &t) { return t.state.slot->range()->size(); };
  std::vector<std::size_t> order(plan.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return bytes(plan[a]) > bytes(plan[b]); });
  std::vector<uint64_t> load(std::size_t(session.placement.size), 0);
  for (std::size_t i : order) {
    PlannedTensor &t = plan[i];
    // The pieces' holders are disjoint: each one's least loaded holder.
    for (int rank = 0; rank < session.placement.size; ++rank) {
      int &writer = t.pieces[pieceOf(session, t, rank)].writer;
      if (writer < 0 || load[std::size_t(rank)] < load[std::size_t(writer)])
        writer = rank;
    }
    for (const Piece &piece : t.pieces)
      load[std::size_t(piece.writer)] += bytes(t);
  }
  return plan;
}

/// The index entry of `t`, its pieces in `files`.
CheckpointEntry indexEntry(const tg_session &session, const PlannedTensor &t) {
  CheckpointEntry entry;
  entry.name = t.state.slot->name()->str();
  entry.dtype = toSafetensors(t.state.slot->dtype());
  entry.shape = parameterLayout(session, *t.state.parameter).fullShape();
  for (const Piece &p : t.pieces) {
    CheckpointPiece piece;
    piece.file = rankFileName(p.writer);
    if (t.shard)
      piece.split = CheckpointSplit{t.shard->dim(), t.shard->padded_size(), t.shard->blocks(),
                                    t.splitParts, p.split};
    if (t.zero)
      piece.chunk = CheckpointChunk{t.zero->chunk(), t.chunkParts, p.chunk};
    entry.pieces.push_back(std::move(piece));
  }
  return entry;
}

/// Empties `dir` (a leftover of an interrupted save) or creates it.
bool makeEmptyDirectory(const std::string &dir, std::string &problem) {
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (!ec)
    fs::create_directories(dir, ec);
  if (ec)
    problem = dir + ": cannot create the checkpoint's directory (" + ec.message() +
              "); check the checkpoint directory's permissions and space";
  return !ec;
}

/// Replaces `dir` (a previous checkpoint of the same step, if any) with the
/// complete `partial`. The previous one waits in DIR.old until the new one
/// is in place, and comes back if it cannot be; one left there by a crash
/// between the two renames is put back first.
bool publish(const std::string &partial, const std::string &dir, std::string &problem) {
  std::error_code ec;
  const std::string old = dir + ".old";
  if (fs::exists(old, ec) && !fs::exists(dir, ec))
    fs::rename(old, dir, ec);
  else
    fs::remove_all(old, ec);
  bool moved = false;
  if (!ec && fs::exists(dir, ec)) {
    fs::rename(dir, old, ec);
    moved = !ec;
  }
  if (!ec)
    fs::rename(partial, dir, ec);
  if (ec) {
    problem = dir + ": cannot put the checkpoint in place (" + ec.message() + ")";
    std::error_code ignored;
    if (moved)
      fs::rename(old, dir, ignored);
    return false;
  }
  safetensors::syncParentDirectory(dir);
  fs::remove_all(old, ec);
  return true;
}

uint64_t parseHex(const std::string &text) { return std::strtoull(text.c_str(), nullptr, 16); }

/// Zeroes the padding in `data`, this rank's piece of `t`: whatever a
/// program leaves there is not state, and a checkpoint's files then hold
/// the same bytes for the same state on the same mesh.
void clearPadding(const tg_session &session, const PlannedTensor &t, uint8_t *data) {
  std::size_t elementSize = dtypeSize(t.state.slot->dtype());
  ShardLayout layout = parameterLayout(session, *t.state.parameter);
  int64_t first = 0, count = layout.localElements();
  if (t.zero) {
    OptimizerChunk chunk = chunkOf(session, *t.state.parameter, *t.zero);
    first = chunk.firstElement();
    count = chunk.chunkElements();
  }
  auto clear = [&](int64_t begin, int64_t end) { // local elements
    begin = std::max(begin, first);
    end = std::min(end, first + count);
    if (begin < end)
      std::memset(data + std::size_t(begin - first) * elementSize, 0,
                  std::size_t(end - begin) * elementSize);
  };
  layout.forEachRow([&](int64_t local, int64_t full) {
    if (full < 0)
      clear(local, local + layout.rowElements());
  });
  clear(layout.localElements(), first + count);
}

/// This rank's pieces with their full tensors' metadata, as a safetensors
/// file; `problem` is set when one holds a non-finite value.
bool collectPieces(const tg_session &session, const std::vector<PlannedTensor> &plan,
                   const std::string &path, safetensors::File &file, std::string &problem) {
  const int rank = session.placement.rank;
  for (const PlannedTensor &t : plan) {
    if (t.pieces[pieceOf(session, t, rank)].writer != rank)
      continue;
    file.tensors.emplace_back();
    safetensors::Tensor &tensor = file.tensors.back();
    if (!slotTensor(session, *t.state.slot, t.state.slot->name()->str(), tensor, problem))
      return false;
    clearPadding(session, t, tensor.data.data());
    if (!checkFinite(path, *t.state.slot, tensor.data.data(), tensor.data.size(),
                     divergedAdvice(session), problem))
      return false;
  }
  file.metadata[kCheckpointProgramKey] = stateFingerprint(session);
  file.metadata[kCheckpointStepKey] = std::to_string(session.stepsDone);
  file.metadata[kCheckpointChecksumKey] = checkpointChecksum(file);
  return true;
}

/// The full tensor of `entry` from its pieces' tensors (`data`, in the
/// entry's order, each of pieceElements()).
std::vector<uint8_t> assemble(const CheckpointEntry &entry,
                              const std::vector<const safetensors::Tensor *> &data) {
  std::size_t elementSize = safetensors::dtypeSize(entry.dtype);
  std::vector<uint8_t> full(std::size_t(ShardLayout(entry.shape).fullElements()) * elementSize);
  const CheckpointPiece &first = entry.pieces.front();
  int64_t splitParts = first.split ? first.split->parts : 1;
  for (int64_t part = 0; part < splitParts; ++part) {
    ShardLayout layout =
        first.split ? ShardLayout(entry.shape, first.split->dim, first.split->paddedSize,
                                  first.split->blocks, splitParts, part)
                    : ShardLayout(entry.shape);
    std::vector<uint8_t> local(std::size_t(layout.localElements()) * elementSize);
    for (std::size_t i = 0; i < entry.pieces.size(); ++i) {
      const CheckpointPiece &piece = entry.pieces[i];
      if ((piece.split ? piece.split->index : 0) != part)
        continue;
      if (piece.chunk)
        OptimizerChunk(layout.localElements(), piece.chunk->size, piece.chunk->index)
            .copyChunkToLocal(data[i]->data.data(), local.data(), elementSize);
      else
        local = data[i]->data;
    }
    layout.copyLocalToFull(local.data(), full.data(), elementSize);
  }
  return full;
}

/// Reads every file the index lists, each checked against its own checksum
/// and the index's.
bool readPieceFiles(const std::string &dir, const CheckpointIndex &index,
                    std::map<std::string, safetensors::File> &files, std::string &error) {
  for (const auto &[name, checksum] : index.files) {
    std::string path = dir + "/" + name;
    safetensors::File &file = files[name];
    if (!safetensors::readFile(path, file, error)) {
      error += "; the checkpoint is incomplete or corrupt, use an older one";
      return false;
    }
    auto stored = file.metadata.find(kCheckpointChecksumKey);
    if (stored == file.metadata.end() || stored->second != checkpointChecksum(file) ||
        stored->second != checksum) {
      error = path + ": checksum mismatch (with its contents or with " +
              std::string(kCheckpointIndexName) +
              "): the checkpoint is corrupt or mixed with another; use an older checkpoint";
      return false;
    }
  }
  return true;
}

} // namespace

bool everyRankSucceeded(const tg_session &session, bool ok, uint64_t word,
                        const std::string &problem, const std::string &what,
                        const std::string &consequence, std::vector<uint64_t> &words,
                        std::string &error) {
  std::vector<uint64_t> all;
  if (!session.stateComm->exchange({ok ? 1u : 0u, word}, all, what, error))
    return false;
  std::string failed;
  words.clear();
  for (std::size_t r = 0; r * 2 < all.size(); ++r) {
    if (!all[2 * r])
      failed += (failed.empty() ? "" : ", ") + std::to_string(r);
    words.push_back(all[2 * r + 1]);
  }
  if (failed.empty())
    return true;
  error = ok ? what + ": rank(s) " + failed + " failed (their messages say why); " + consequence
             : problem;
  return false;
}

bool saveShardedCheckpoint(const tg_session &session, const std::string &dir,
                           int64_t dataPosition, std::string &error) {
  if (!session.stateComm) {
    error = dir + ": saving a checkpoint of several ranks needs a communicator, and this "
                  "session has none";
    return false;
  }
  const bool root = session.placement.rank == 0;
  const std::string partial = dir + ".partial";
  const std::string what = "saving checkpoint " + dir;
  std::vector<uint64_t> words;
  std::string problem;

  // Rank 0 prepares the directory; every rank learns whether it could.
  bool ok = !root || makeEmptyDirectory(partial, problem);
  if (!everyRankSucceeded(session, ok, 0, problem, what, kNotWritten, words, error))
    return false;

  // Every rank writes its pieces (a rank may have none).
  std::vector<PlannedTensor> plan = planPieces(session);
  safetensors::File mine;
  ok = collectPieces(session, plan, dir, mine, problem) &&
       (mine.tensors.empty() ||
        safetensors::writeFile(partial + "/" + rankFileName(session.placement.rank), mine,
                               problem));
  uint64_t checksum =
      mine.tensors.empty() ? 0 : parseHex(mine.metadata[kCheckpointChecksumKey]);
  if (!everyRankSucceeded(session, ok, checksum, problem, what, kNotWritten, words, error)) {
    std::error_code ignored;
    if (root)
      fs::remove_all(partial, ignored);
    return false;
  }

  // Rank 0 indexes the pieces and puts the directory in place.
  ok = true;
  if (root) {
    CheckpointIndex index;
    index.step = session.stepsDone;
    index.dataPosition = dataPosition;
    index.program = stateFingerprint(session);
    index.mesh = meshText(*session.program->mesh());
    for (const PlannedTensor &t : plan) {
      index.tensors.push_back(indexEntry(session, t));
      for (const Piece &p : t.pieces)
        index.files[rankFileName(p.writer)] = hexDigits(words[std::size_t(p.writer)]);
    }
    std::string text = formatCheckpointIndex(index);
    ok = safetensors::writeFileAtomically(partial + "/" + kCheckpointIndexName,
                                          std::vector<uint8_t>(text.begin(), text.end()),
                                          problem) &&
         publish(partial, dir, problem);
    std::error_code ignored;
    if (!ok)
      fs::remove_all(partial, ignored);
  }
  return everyRankSucceeded(session, ok, 0, problem, what, kNotWritten, words, error);
}

bool loadShardedCheckpoint(tg_session &session, const std::string &dir, int64_t *dataPosition,
                           std::string &error) {
  const std::string indexPath = dir + "/" + kCheckpointIndexName;
  std::vector<uint8_t> bytes;
  std::string problem;
  bool opened;
  if (!readRegularFile(indexPath, bytes, problem, opened, kMaxIndexBytes)) {
    error = indexPath + ": cannot read the checkpoint index (" + problem +
            "); pass a checkpoint file or directory written by tg_session_save_checkpoint "
            "or tgrun";
    return false;
  }
  CheckpointIndex index;
  if (!parseCheckpointIndex(std::string(bytes.begin(), bytes.end()), indexPath, index, error))
    return false;
  auto fail = [&](const std::string &problem) {
    error = indexPath + ": " + problem;
    return false;
  };
  if (index.program != stateFingerprint(session))
    return fail(otherProgramProblem(session));
  if (index.step > kMaxCheckpointStep || index.dataPosition > kMaxDataPosition)
    return fail("step or data_position out of range; the checkpoint is corrupt");
  std::vector<StateTensor> state = stateTensors(session);
  std::map<std::string, const CheckpointEntry *> entries;
  for (const CheckpointEntry &e : index.tensors)
    entries[e.name] = &e;
  if (entries.size() != state.size())
    return fail("lists " + std::to_string(entries.size()) + " tensors, not the program's " +
                std::to_string(state.size()) + "; the checkpoint is corrupt");
  std::map<std::string, safetensors::File> files;
  if (!readPieceFiles(dir, index, files, error))
    return false;

  // Check every piece before touching the session.
  std::vector<std::pair<StateTensor, std::vector<const safetensors::Tensor *>>> writes;
  for (const StateTensor &s : state) {
    auto it = entries.find(s.slot->name()->str());
    if (it == entries.end())
      return fail("tensor '" + s.slot->name()->str() + "' is missing; the checkpoint is corrupt");
    const CheckpointEntry &entry = *it->second;
    if (entry.dtype != toSafetensors(s.slot->dtype()) ||
        entry.shape != parameterLayout(session, *s.parameter).fullShape())
      return fail("tensor '" + entry.name + "' has the wrong dtype or shape; the checkpoint "
                  "is corrupt");
    std::vector<const safetensors::Tensor *> data;
    for (const CheckpointPiece &piece : entry.pieces) {
      std::string path = dir + "/" + piece.file;
      const safetensors::Tensor *t = files[piece.file].find(entry.name);
      if (!t || t->dtype != entry.dtype || t->numElements() != pieceElements(entry, piece)) {
        error = path + ": its piece of tensor '" + entry.name + "' is missing or has the wrong "
                "dtype or size; the checkpoint is corrupt";
        return false;
      }
      if (!checkFinite(path, *s.slot, t->data.data(), t->data.size(), kWrittenAfterDivergence,
                       error))
        return false;
      data.push_back(t);
    }
    writes.emplace_back(s, std::move(data));
  }
  for (auto &[s, data] : writes) {
    std::vector<uint8_t> full = assemble(*entries[s.slot->name()->str()], data);
    if (!writeFullTensor(session, *s.parameter, *s.slot, full.data(), error))
      return false;
  }
  restoreProgress(session, index.step, index.dataPosition, dataPosition);
  return true;
}

} // namespace tg::runtime
