// ZeRO-1 moments (tgx.fbs, OptimizerShard): the rank at index c of the axis
// holds elements [c x chunk, +chunk) of its flattened share, zeros past the
// end; the ranks' chunks reassemble the share; checkpoints hold the full
// moments whatever the chunking. TgrunTest-style runs over several ranks
// are in test/python/test_tgrun_zero.py.
#include "TestSupport.h"
#include "tg/runtime/CheckpointFormat.h"
#include "tg/runtime/ParameterShard.h"
#include "tg/runtime/Safetensors.h"

#include <gtest/gtest.h>

#include <numeric>

using tg::runtime::OptimizerChunk;
namespace st = tg::safetensors;
namespace tgx = tg::tgx;

namespace {

const uint8_t *bytes(const std::vector<float> &v) {
  return reinterpret_cast<const uint8_t *>(v.data());
}
uint8_t *bytes(std::vector<float> &v) { return reinterpret_cast<uint8_t *>(v.data()); }

/// 1, 2, 3, ...: every element distinct.
std::vector<float> numbered(int64_t count) {
  std::vector<float> values(static_cast<std::size_t>(count));
  std::iota(values.begin(), values.end(), 1.0f);
  return values;
}

std::vector<float> chunkOf(const OptimizerChunk &chunk, const std::vector<float> &local) {
  std::vector<float> out(std::size_t(chunk.chunkElements()), -1.0f);
  chunk.copyLocalToChunk(bytes(local), bytes(out), sizeof(float));
  return out;
}

TEST(OptimizerShard, ChunksAreConsecutiveAndPaddedWithZeros) {
  // 5 elements over 2 ranks: chunks of 3, the last one padded.
  std::vector<float> local = numbered(5);
  OptimizerChunk rank0(5, 3, 0), rank1(5, 3, 1);
  EXPECT_EQ(rank0.heldElements(), 3);
  EXPECT_EQ(rank1.heldElements(), 2);
  EXPECT_EQ(chunkOf(rank0, local), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(chunkOf(rank1, local), (std::vector<float>{4, 5, 0}));
}

TEST(OptimizerShard, AChunkMayBeAllPadding) {
  // 2 elements over 3 ranks: chunks of 1; rank 2 holds only padding.
  OptimizerChunk rank2(2, 1, 2);
  EXPECT_EQ(rank2.heldElements(), 0);
  EXPECT_EQ(chunkOf(rank2, numbered(2)), (std::vector<float>{0}));
  std::vector<float> local = {7, 8};
  std::vector<float> chunk = {9};
  rank2.copyChunkToLocal(bytes(chunk), bytes(local), sizeof(float));
  EXPECT_EQ(local, (std::vector<float>{7, 8}));
}

TEST(OptimizerShard, GatheringTheChunksGivesTheShareBack) {
  for (int64_t elements : {1, 5, 6, 7, 64})
    for (int64_t ranks : {1, 2, 3, 4}) {
      int64_t chunk = (elements + ranks - 1) / ranks;
      std::vector<float> local = numbered(elements), back(std::size_t(elements), -1.0f);
      for (int64_t c = 0; c < ranks; ++c) {
        OptimizerChunk part(elements, chunk, c);
        std::vector<float> held = chunkOf(part, local);
        // Padding only past the share's end.
        for (int64_t i = part.heldElements(); i < chunk; ++i)
          EXPECT_EQ(held[std::size_t(i)], 0.0f);
        part.copyChunkToLocal(bytes(held), bytes(back), sizeof(float));
      }
      EXPECT_EQ(back, local) << elements << " elements over " << ranks << " ranks";
    }
}

st::File read(const std::string &path) {
  st::File file;
  std::string error;
  EXPECT_TRUE(st::readFile(path, file, error)) << error;
  return file;
}

// A checkpoint holds the full moments: one written with whole moments loads
// into a program that chunks them (a padded chunk on a data axis of 1) and
// comes back unchanged, and the other way round; random initialisation
// zeroes the chunks.
TEST(OptimizerShard, CheckpointsHoldFullMoments) {
  tg::test::ProgramSpec whole = tg::test::fixtureSpec(), chunked = tg::test::fixtureSpec();
  whole.addParameter("zero.bias", {5}, tgx::InitKind_Zeros);
  chunked.addChunkedParameter("zero.bias", {5}, {0, 6}, tgx::InitKind_Zeros);

  tg_session *session = tg::test::loadSession(whole);
  EXPECT_OK(tg_session_init_random(session, 3));
  std::string path = tg::test::scratchPath("whole.safetensors");
  EXPECT_OK(tg_session_save_checkpoint(session, path.c_str(), 1));
  tg_session_destroy(session);
  // Distinct moments (the fixture's kernels leave these at zero).
  st::File file = read(path);
  for (st::Tensor &t : file.tensors)
    if (t.name == "adam_m:zero.bias" || t.name == "adam_v:zero.bias")
      t = st::fromDoubles(t.name, st::DType::F32, {5},
                          t.name[5] == 'm' ? std::vector<double>{1, 2, 3, 4, 5}
                                           : std::vector<double>{6, 7, 8, 9, 10});
  file.metadata[tg::runtime::kCheckpointChecksumKey] = tg::runtime::checkpointChecksum(file);
  std::string error;
  ASSERT_TRUE(st::writeFile(path, file, error)) << error;

  std::string previous = path;
  for (const tg::test::ProgramSpec *spec : {&chunked, &whole}) {
    session = tg::test::loadSession(*spec);
    EXPECT_OK(tg_session_load_checkpoint(session, previous.c_str(), nullptr));
    std::string saved = tg::test::scratchPath("resaved.safetensors");
    EXPECT_OK(tg_session_save_checkpoint(session, saved.c_str(), 1));
    tg_session_destroy(session);
    st::File back = read(saved);
    EXPECT_EQ(st::toDoubles(*back.find("adam_m:zero.bias")),
              (std::vector<double>{1, 2, 3, 4, 5}));
    EXPECT_EQ(st::toDoubles(*back.find("adam_v:zero.bias")),
              (std::vector<double>{6, 7, 8, 9, 10}));
    EXPECT_EQ(back.find("adam_v:zero.bias")->shape, (std::vector<int64_t>{5}));
    previous = saved;
  }

  // Random initialisation zeroes the moments again.
  session = tg::test::loadSession(chunked);
  EXPECT_OK(tg_session_load_checkpoint(session, path.c_str(), nullptr));
  EXPECT_OK(tg_session_init_random(session, 3));
  std::string initialised = tg::test::scratchPath("init.safetensors");
  EXPECT_OK(tg_session_save_checkpoint(session, initialised.c_str(), 0));
  tg_session_destroy(session);
  EXPECT_EQ(st::toDoubles(*read(initialised).find("adam_m:zero.bias")),
            std::vector<double>(5, 0.0));
}

} // namespace
