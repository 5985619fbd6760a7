// The index mapping of tensor-parallel parameters (tgx.fbs, ParameterShard):
// local index b x L + i is full index b x P + c x L + i; padding is zero and
// never written back; the ranks' shards reassemble the full tensor.
#include "tg/runtime/ParameterShard.h"

#include <gtest/gtest.h>

#include <numeric>

using tg::runtime::ShardLayout;
namespace tgx = tg::tgx;

namespace {

/// A tgx::ParameterShard in a buffer of its own.
class ShardTable {
public:
  ShardTable(uint32_t dim, std::vector<int64_t> fullShape, int64_t paddedSize,
             uint32_t blocks) {
    builder.Finish(tgx::CreateParameterShard(builder, 0, dim, builder.CreateVector(fullShape),
                                             paddedSize, blocks));
  }
  const tgx::ParameterShard &operator*() const {
    return *flatbuffers::GetRoot<tgx::ParameterShard>(builder.GetBufferPointer());
  }

private:
  flatbuffers::FlatBufferBuilder builder;
};

/// The full rows of `layout`'s local rows, in order (-1: padding).
std::vector<int64_t> heldRows(const ShardLayout &layout, int64_t localRows) {
  std::vector<int64_t> rows;
  for (int64_t row = 0; row < localRows; ++row)
    rows.push_back(layout.fullRow(row));
  return rows;
}

/// 1, 2, 3, ... as floats: every element of the full tensor distinct.
std::vector<float> numbered(int64_t count) {
  std::vector<float> values(static_cast<std::size_t>(count));
  std::iota(values.begin(), values.end(), 1.0f);
  return values;
}

std::vector<float> localOf(const ShardLayout &layout, const std::vector<float> &full) {
  std::vector<float> local(std::size_t(layout.localElements()), -1.0f);
  layout.copyFullToLocal(reinterpret_cast<const uint8_t *>(full.data()),
                         reinterpret_cast<uint8_t *>(local.data()), sizeof(float));
  return local;
}

TEST(ParameterShard, SplitsOneBlockEvenly) {
  // A column-parallel weight: [4, 6] split along dim 1 over 2 ranks.
  ShardTable shard(1, {4, 6}, 6, 1);
  ShardLayout rank1(*shard, 2, 1);
  EXPECT_EQ(rank1.fullShape(), (std::vector<int64_t>{4, 6}));
  EXPECT_EQ(rank1.localShape(), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(rank1.fullElements(), 24);
  EXPECT_EQ(rank1.localElements(), 12);
  EXPECT_EQ(rank1.rowElements(), 1);
  EXPECT_EQ(heldRows(rank1, 3), (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ(rank1.localRow(4), 1);
  EXPECT_EQ(rank1.localRow(2), -1); // rank 0's
  // local[r][i] = full[r][3 + i]
  std::vector<float> full = numbered(24), local = localOf(rank1, full);
  for (int r = 0; r < 4; ++r)
    for (int i = 0; i < 3; ++i)
      EXPECT_EQ(local[std::size_t(r * 3 + i)], full[std::size_t(r * 6 + 3 + i)]);
}

TEST(ParameterShard, SplitsEachBlock) {
  // GPT-2's fused q|k|v bias: 12 = 3 blocks of 4, each split over 2 ranks
  // (P = 4, L = 2): rank 1 holds 2, 3 of q, 6, 7 of k and 10, 11 of v.
  ShardTable shard(0, {12}, 12, 3);
  ShardLayout rank0(*shard, 2, 0), rank1(*shard, 2, 1);
  EXPECT_EQ(rank1.localShape(), (std::vector<int64_t>{6}));
  EXPECT_EQ(heldRows(rank0, 6), (std::vector<int64_t>{0, 1, 4, 5, 8, 9}));
  EXPECT_EQ(heldRows(rank1, 6), (std::vector<int64_t>{2, 3, 6, 7, 10, 11}));
  EXPECT_EQ(rank1.localRow(7), 3);
  EXPECT_EQ(rank1.localRow(8), -1);
  EXPECT_EQ(localOf(rank1, numbered(12)), (std::vector<float>{3, 4, 7, 8, 11, 12}));
  // The c_attn weight [2, 12], split along dim 1: whole rows of 1 element,
  // the same columns in every row.
  ShardTable weight(1, {2, 12}, 12, 3);
  EXPECT_EQ(localOf(ShardLayout(*weight, 2, 1), numbered(24)),
            (std::vector<float>{3, 4, 7, 8, 11, 12, 15, 16, 19, 20, 23, 24}));
}

TEST(ParameterShard, PadsAVocabularyTheAxisDoesNotDivide) {
  // An embedding [5, 2] padded to 6 rows over 2 ranks: rank 1 holds rows 3
  // and 4, then a row of padding.
  ShardTable shard(0, {5, 2}, 6, 1);
  ShardLayout rank1(*shard, 2, 1);
  EXPECT_EQ(rank1.localShape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(rank1.rowElements(), 2);
  EXPECT_EQ(heldRows(rank1, 3), (std::vector<int64_t>{3, 4, -1}));
  std::vector<float> full = numbered(10);
  EXPECT_EQ(localOf(rank1, full), (std::vector<float>{7, 8, 9, 10, 0, 0}));
  // Padding is dropped on the way back; other ranks' rows are untouched.
  std::vector<float> back(10, -1.0f), local = {1, 2, 3, 4, 99, 99};
  rank1.copyLocalToFull(reinterpret_cast<const uint8_t *>(local.data()),
                        reinterpret_cast<uint8_t *>(back.data()), sizeof(float));
  EXPECT_EQ(back, (std::vector<float>{-1, -1, -1, -1, -1, -1, 1, 2, 3, 4}));
  // Over 4 ranks (padded to 8) the last rank holds padding only.
  ShardTable wide(0, {5}, 8, 1);
  EXPECT_EQ(heldRows(ShardLayout(*wide, 4, 2), 2), (std::vector<int64_t>{4, -1}));
  EXPECT_EQ(heldRows(ShardLayout(*wide, 4, 3), 2), (std::vector<int64_t>{-1, -1}));
  EXPECT_EQ(localOf(ShardLayout(*wide, 4, 3), numbered(5)), (std::vector<float>{0, 0}));
}

// Every full element belongs to exactly one rank, local and full indices
// map back and forth, and the shards reassemble the full tensor.
TEST(ParameterShard, ShardsReassembleTheFullTensor) {
  struct Case {
    uint32_t dim;
    std::vector<int64_t> fullShape;
    int64_t padded;
    uint32_t blocks;
    int64_t ranks;
  };
  for (const Case &c : {Case{0, {5, 2}, 6, 1, 2}, Case{0, {7, 3}, 8, 1, 4},
                        Case{1, {3, 6, 2}, 6, 3, 2}, Case{2, {2, 3, 12}, 12, 3, 4},
                        Case{1, {4, 8}, 8, 1, 1}, Case{0, {3}, 4, 1, 1}}) {
    ShardTable shard(c.dim, c.fullShape, c.padded, c.blocks);
    ShardLayout any(*shard, c.ranks, 0);
    std::vector<float> full = numbered(any.fullElements()), assembled(full.size(), 0.0f);
    std::vector<int> holders(std::size_t(c.fullShape[c.dim]), 0);
    for (int64_t r = 0; r < c.ranks; ++r) {
      ShardLayout layout(*shard, c.ranks, r);
      int64_t localRows = layout.localShape()[c.dim];
      EXPECT_EQ(localRows, c.padded / c.ranks);
      for (int64_t row = 0; row < localRows; ++row)
        if (int64_t f = layout.fullRow(row); f >= 0) {
          ++holders[std::size_t(f)];
          EXPECT_EQ(layout.localRow(f), row);
        }
      std::vector<float> local = localOf(layout, full);
      layout.copyLocalToFull(reinterpret_cast<const uint8_t *>(local.data()),
                             reinterpret_cast<uint8_t *>(assembled.data()), sizeof(float));
    }
    EXPECT_EQ(holders, std::vector<int>(holders.size(), 1)) << "dim " << c.dim;
    EXPECT_EQ(assembled, full) << "dim " << c.dim;
  }
}

TEST(ParameterShard, ReplicatedTensorsAreHeldWhole) {
  ShardLayout layout(std::vector<int64_t>{3, 2});
  EXPECT_EQ(layout.localShape(), layout.fullShape());
  EXPECT_EQ(layout.localElements(), 6);
  EXPECT_EQ(layout.rowElements(), 6);
  EXPECT_EQ(layout.fullRow(0), 0);
  std::vector<float> full = numbered(6);
  EXPECT_EQ(localOf(layout, full), full);
  ShardLayout scalar(std::vector<int64_t>{});
  EXPECT_EQ(scalar.localElements(), 1);
}

} // namespace
