// One rank's part of a tensor-parallel parameter (tgx.fbs, ParameterShard):
// which elements of the Hugging Face tensor it holds and where, and the
// copies between the two layouts that initialisation, weights and
// checkpoints need. For the runtime, and for tools and tests that build or
// check sharded state.
#ifndef TG_RUNTIME_PARAMETERSHARD_H
#define TG_RUNTIME_PARAMETERSHARD_H

#include "tgx_generated.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tg::runtime {

/// Both tensors, the full one (Hugging Face, `fullShape`) and the rank's
/// (its slot, `localShape`), are read as [outer, rows, rowElements()]:
/// `rows` is the split dimension, `outer` the dimensions before it and
/// `rowElements()` those after it. Each local row is one whole full row, or
/// padding (zeros). A replicated tensor is one row that the rank holds
/// whole.
class ShardLayout {
public:
  /// The rank at index `coordinate` of the `ranks` ranks along the shard's
  /// mesh axis, for a verified shard.
  ShardLayout(const tgx::ParameterShard &shard, int64_t ranks, int64_t coordinate);
  /// The same from the shard's fields (a checkpoint index's description):
  /// `fullShape` split along `dim`, padded to `paddedSize` rows in `blocks`
  /// blocks, each divisible by `ranks`.
  ShardLayout(std::vector<int64_t> fullShape, uint32_t dim, int64_t paddedSize, int64_t blocks,
              int64_t ranks, int64_t coordinate);
  /// A replicated tensor of `shape`.
  explicit ShardLayout(std::vector<int64_t> shape);

  const std::vector<int64_t> &fullShape() const { return full; }
  const std::vector<int64_t> &localShape() const { return local; }
  int64_t fullElements() const { return outer * fullRows * inner; }
  int64_t localElements() const { return outer * localRows * inner; }
  int64_t rowElements() const { return inner; }

  /// The full row that local row `row` (< the local rows) holds, or -1 for
  /// padding.
  int64_t fullRow(int64_t row) const;
  /// The local row holding full row `row` (< the full rows), or -1 when
  /// another rank holds it.
  int64_t localRow(int64_t row) const;

  /// Calls visit(localElement, fullElement) with the first element of each
  /// local row, in order (fullElement is -1 for padding). Rows map in
  /// increasing order, so this is also the order of the full tensor: a
  /// stream over the full tensor's elements can fill the local one.
  template <typename Visit> void forEachRow(Visit &&visit) const {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t row = 0; row < localRows; ++row) {
        int64_t f = fullRow(row);
        visit((o * localRows + row) * inner, f < 0 ? -1 : (o * fullRows + f) * inner);
      }
  }

  /// Fills `localData` (localElements() of `elementSize` bytes, row-major)
  /// with this rank's elements of `fullData` (fullElements(), row-major),
  /// zeros in padding.
  void copyFullToLocal(const uint8_t *fullData, uint8_t *localData,
                       std::size_t elementSize) const;
  /// Writes this rank's elements of `localData` to their places in
  /// `fullData`; padding is dropped, other ranks' elements are left alone.
  void copyLocalToFull(const uint8_t *localData, uint8_t *fullData,
                       std::size_t elementSize) const;

private:
  std::vector<int64_t> full, local;
  int64_t outer = 1, inner = 1, fullRows = 1, localRows = 1;
  // The mapping of tgx.fbs: segments (`blocks` of the constructor) of
  // `blockRows` (P) padded rows, of which this rank holds `rankRows` (L)
  // from `coordinate` x L.
  int64_t blockRows = 1, rankRows = 1, coordinate = 0;
};

/// One rank's chunk of a parameter's AdamW moment under ZeRO-1 (tgx.fbs,
/// OptimizerShard): the rank's part of the moment along the other axes
/// (ShardLayout::localElements(), N elements), flattened and padded with
/// zeros to chunk x ranks, holds elements [coordinate x chunk, +chunk) of it
/// in its slot. Elements >= N are padding.
class OptimizerChunk {
public:
  OptimizerChunk(int64_t localElements, int64_t chunk, int64_t coordinate)
      : local(localElements), chunk(chunk), first(coordinate * chunk) {}

  int64_t chunkElements() const { return chunk; }
  /// The element of the local part the chunk starts at.
  int64_t firstElement() const { return first; }
  /// The elements of the local part this chunk holds; the rest of the
  /// chunk is padding.
  int64_t heldElements() const;

  /// Fills `chunkData` (chunkElements() of `elementSize` bytes) with this
  /// chunk of `localData` (N elements), zeros in padding.
  void copyLocalToChunk(const uint8_t *localData, uint8_t *chunkData,
                        std::size_t elementSize) const;
  /// Writes the chunk's elements of `chunkData` to their places in
  /// `localData`; padding is dropped, other chunks' elements are left alone.
  void copyChunkToLocal(const uint8_t *chunkData, uint8_t *localData,
                        std::size_t elementSize) const;

private:
  int64_t local, chunk, first;
};

} // namespace tg::runtime

#endif
