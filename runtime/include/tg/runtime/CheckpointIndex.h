// The index of a sharded checkpoint (docs/runtime.md, "Checkpoints"): a
// multi-rank run's checkpoint is a directory in which each rank wrote its
// part of the training state, as it holds it, to a safetensors file of its
// own, and `checkpoint.index.json` says how those pieces make up each full
// (Hugging Face) tensor. The description does not depend on the reader's
// mesh, so a checkpoint written on one mesh loads on any other.
//
// For the runtime, and for tools and tests that build or damage checkpoints
// on purpose.
#ifndef TG_RUNTIME_CHECKPOINTINDEX_H
#define TG_RUNTIME_CHECKPOINTINDEX_H

#include "tg/runtime/Safetensors.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tg::runtime {

/// The index's file name inside the checkpoint directory.
inline constexpr const char *kCheckpointIndexName = "checkpoint.index.json";

/// A piece holding the rows of one rank along a tensor-parallel axis
/// (ShardLayout): the full tensor's dimension `dim`, padded to `paddedSize`
/// rows in `blocks` blocks, each cut into `parts` equal parts; this piece is
/// part `index` of every block.
struct CheckpointSplit {
  uint32_t dim = 0;
  int64_t paddedSize = 0, blocks = 1, parts = 1, index = 0;
};

/// A piece holding one ZeRO-1 chunk (OptimizerChunk): the split part (or
/// the whole tensor), flattened and padded to `size` x `parts` elements,
/// holds elements [index x size, +size) here.
struct CheckpointChunk {
  int64_t size = 0, parts = 1, index = 0;
};

/// One piece of a tensor: the tensor of the same name in `file`.
struct CheckpointPiece {
  std::string file;
  std::optional<CheckpointSplit> split;
  std::optional<CheckpointChunk> chunk;
};

/// A state tensor (a parameter or an AdamW moment, by slot name), its full
/// dtype and shape, and the pieces that make it up: one per (split part,
/// chunk) pair, every pair once.
struct CheckpointEntry {
  std::string name;
  safetensors::DType dtype = safetensors::DType::F32;
  std::vector<int64_t> shape;
  std::vector<CheckpointPiece> pieces;
};

struct CheckpointIndex {
  int64_t step = 0, dataPosition = 0;
  std::string program; // the state layout's fingerprint (as tg.program)
  std::string mesh;    // the writers' mesh, for people ("dp=2,tp=2")
  std::map<std::string, std::string> files; // file name -> its tg.checksum
  std::vector<CheckpointEntry> tensors;
};

/// The index as JSON text, with its own checksum.
std::string formatCheckpointIndex(const CheckpointIndex &index);

/// Parses and checks an index's text: its checksum, every field's type and
/// range, file names without a directory, pieces that only name listed
/// files, and for every tensor pieces that share one split and one chunking
/// and cover each part once. Fails with a message that starts with
/// `sourceName` and names the field.
bool parseCheckpointIndex(const std::string &text, const std::string &sourceName,
                          CheckpointIndex &out, std::string &error);

/// Elements in a piece (its tensor in its file): of the split part, or the
/// whole tensor, then of the chunk. For an entry that parseCheckpointIndex
/// accepted.
int64_t pieceElements(const CheckpointEntry &entry, const CheckpointPiece &piece);

} // namespace tg::runtime

#endif
