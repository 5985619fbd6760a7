#include "tg/runtime/ParameterShard.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace tg::runtime {

ShardLayout::ShardLayout(const tgx::ParameterShard &shard, int64_t ranks, int64_t coordinate)
    : ShardLayout(std::vector<int64_t>(shard.full_shape()->begin(), shard.full_shape()->end()),
                  shard.dim(), shard.padded_size(), shard.blocks(), ranks, coordinate) {}

ShardLayout::ShardLayout(std::vector<int64_t> fullShape, uint32_t dim, int64_t paddedSize,
                         int64_t blocks, int64_t ranks, int64_t coordinate)
    : full(std::move(fullShape)), local(full), coordinate(coordinate) {
  for (uint32_t i = 0; i < dim; ++i)
    outer *= full[i];
  for (uint32_t i = dim + 1; i < full.size(); ++i)
    inner *= full[i];
  fullRows = full[dim];
  blockRows = paddedSize / blocks;
  rankRows = blockRows / ranks;
  localRows = blocks * rankRows;
  local[dim] = localRows;
}

ShardLayout::ShardLayout(std::vector<int64_t> shape) : full(std::move(shape)), local(full) {
  for (int64_t d : full)
    inner *= d;
}

int64_t ShardLayout::fullRow(int64_t row) const {
  int64_t f = row / rankRows * blockRows + coordinate * rankRows + row % rankRows;
  return f < fullRows ? f : -1;
}

int64_t ShardLayout::localRow(int64_t row) const {
  int64_t inBlock = row % blockRows;
  if (inBlock / rankRows != coordinate)
    return -1;
  return row / blockRows * rankRows + inBlock % rankRows;
}

void ShardLayout::copyFullToLocal(const uint8_t *fullData, uint8_t *localData,
                                  std::size_t elementSize) const {
  std::size_t rowBytes = std::size_t(inner) * elementSize;
  forEachRow([&](int64_t l, int64_t f) {
    uint8_t *to = localData + std::size_t(l) * elementSize;
    if (f < 0)
      std::memset(to, 0, rowBytes);
    else
      std::memcpy(to, fullData + std::size_t(f) * elementSize, rowBytes);
  });
}

void ShardLayout::copyLocalToFull(const uint8_t *localData, uint8_t *fullData,
                                  std::size_t elementSize) const {
  std::size_t rowBytes = std::size_t(inner) * elementSize;
  forEachRow([&](int64_t l, int64_t f) {
    if (f >= 0)
      std::memcpy(fullData + std::size_t(f) * elementSize,
                  localData + std::size_t(l) * elementSize, rowBytes);
  });
}

int64_t OptimizerChunk::heldElements() const {
  return std::max<int64_t>(0, std::min(chunk, local - first));
}

void OptimizerChunk::copyLocalToChunk(const uint8_t *localData, uint8_t *chunkData,
                                      std::size_t elementSize) const {
  std::size_t held = std::size_t(heldElements()) * elementSize;
  if (held)
    std::memcpy(chunkData, localData + std::size_t(first) * elementSize, held);
  std::memset(chunkData + held, 0, std::size_t(chunk) * elementSize - held);
}

void OptimizerChunk::copyChunkToLocal(const uint8_t *chunkData, uint8_t *localData,
                                      std::size_t elementSize) const {
  if (int64_t held = heldElements())
    std::memcpy(localData + std::size_t(first) * elementSize, chunkData,
                std::size_t(held) * elementSize);
}

} // namespace tg::runtime
