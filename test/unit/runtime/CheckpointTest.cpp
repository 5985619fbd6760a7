// Checkpoints: a bit-for-bit round trip, and rejection of truncated,
// corrupted, foreign and other programs' files.
#include "TestSupport.h"
#include "tg/runtime/Safetensors.h"

#include <gtest/gtest.h>

#include <cstdio>

using namespace tg;

namespace {

const int32_t kTokens[6] = {0, 1, 2, 3, 4, 0};
const int32_t kTargets[6] = {1, 2, 3, 4, 0, 1};

/// A session of the fixture after two steps, and its checkpoint.
struct Trained {
  tg_session *session = test::loadSession(test::fixtureSpec());
  std::string checkpoint = test::scratchPath("step-2.safetensors");
  Trained() {
    EXPECT_OK(tg_session_init_random(session, 3));
    for (int i = 0; i < 2; ++i)
      EXPECT_OK(tg_session_step(session, kTokens, kTargets, nullptr));
    EXPECT_OK(tg_session_save_checkpoint(session, checkpoint.c_str(), 17));
  }
  ~Trained() { tg_session_destroy(session); }
};

TEST(Checkpoint, RoundTripRestoresTheStateBitForBit) {
  Trained trained;
  tg_session *restored = test::loadSession(test::fixtureSpec());
  int64_t dataPosition = -1;
  EXPECT_OK(tg_session_load_checkpoint(restored, trained.checkpoint.c_str(), &dataPosition));
  EXPECT_EQ(dataPosition, 17);
  EXPECT_EQ(tg_session_steps_done(restored), 2);
  // Both continue identically, and their next checkpoints are identical.
  tg_step_result a, b;
  EXPECT_OK(tg_session_step(trained.session, kTokens, kTargets, &a));
  EXPECT_OK(tg_session_step(restored, kTokens, kTargets, &b));
  EXPECT_EQ(a.step, 3);
  EXPECT_EQ(b.step, 3);
  EXPECT_EQ(a.loss, b.loss);
  EXPECT_EQ(a.lr, b.lr);
  std::string pathA = test::scratchPath("a.safetensors"), pathB = test::scratchPath("b.safetensors");
  EXPECT_OK(tg_session_save_checkpoint(trained.session, pathA.c_str(), 18));
  EXPECT_OK(tg_session_save_checkpoint(restored, pathB.c_str(), 18));
  EXPECT_EQ(test::readFile(pathA), test::readFile(pathB));
  tg_session_destroy(restored);
}

TEST(Checkpoint, HoldsParametersMomentsAndMetadata) {
  Trained trained;
  safetensors::File file;
  std::string error;
  ASSERT_TRUE(safetensors::readFile(trained.checkpoint, file, error)) << error;
  EXPECT_EQ(file.tensors.size(), 6u);
  EXPECT_TRUE(file.find("adam_v:transformer.ln_f.weight"));
  EXPECT_EQ(file.metadata.at("tg.step"), "2");
  EXPECT_EQ(file.metadata.at("tg.data_position"), "17");
  EXPECT_EQ(file.metadata.at("tg.program").size(), 16u);
  EXPECT_EQ(file.metadata.at("tg.checksum").size(), 16u);
}

TEST(Checkpoint, RejectsTruncatedAndCorruptedFiles) {
  Trained trained;
  std::vector<uint8_t> bytes = test::readFile(trained.checkpoint);
  std::string path = test::scratchPath("damaged.safetensors");
  auto expectRejected = [&](const std::vector<uint8_t> &damaged) {
    test::writeFile(path, damaged);
    std::string error = test::errorOf(tg_session_load_checkpoint(trained.session, path.c_str(), nullptr));
    EXPECT_EQ(error.rfind(path + ": ", 0), 0u) << error;
  };
  for (std::size_t size = 0; size < bytes.size(); size += 1 + size / 16)
    expectRejected(std::vector<uint8_t>(bytes.begin(), bytes.begin() + size));
  // Every byte but the header's trailing padding, whose spaces the JSON
  // parser reads as the end of input when flipped to NUL: harmless.
  uint64_t headerSize = 0;
  for (int i = 7; i >= 0; --i)
    headerSize = headerSize << 8 | bytes[i];
  std::size_t headerEnd = 8 + headerSize;
  std::size_t paddingBegin = headerEnd;
  while (bytes[paddingBegin - 1] == ' ')
    --paddingBegin;
  for (std::size_t at = 8; at < bytes.size(); at += 7) {
    if (at >= paddingBegin && at < headerEnd)
      continue;
    std::vector<uint8_t> flipped = bytes;
    flipped[at] ^= 0x20;
    expectRejected(flipped);
  }
  std::vector<uint8_t> flipped = bytes;
  flipped[bytes.size() - 1] ^= 1; // the last tensor's data
  test::writeFile(path, flipped);
  EXPECT_EQ(test::errorOf(tg_session_load_checkpoint(trained.session, path.c_str(), nullptr)),
            path + ": checksum mismatch: the checkpoint is corrupt; use an older checkpoint");
  // The failed loads left the session as it was.
  EXPECT_EQ(tg_session_steps_done(trained.session), 2);
}

TEST(Checkpoint, RejectsForeignFilesAndOtherPrograms) {
  Trained trained;
  std::string weights = test::scratchPath("weights.safetensors");
  EXPECT_OK(tg_session_save_weights(trained.session, weights.c_str()));
  EXPECT_NE(test::errorOf(tg_session_load_checkpoint(trained.session, weights.c_str(), nullptr))
                .find(weights + ": not a tgrun checkpoint"),
            std::string::npos);

  test::ProgramSpec other = test::fixtureSpec();
  other.parameters[1].name = "transformer.ln_f.bias";
  other.slots[other.parameters[1].slot].name = "transformer.ln_f.bias";
  tg_session *session = test::loadSession(other);
  EXPECT_NE(test::errorOf(tg_session_load_checkpoint(session, trained.checkpoint.c_str(), nullptr))
                .find("the checkpoint belongs to a different program"),
            std::string::npos);
  tg_session_destroy(session);
}

} // namespace
