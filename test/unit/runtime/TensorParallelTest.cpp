// Tensor-parallel parameters in sessions of one rank (a tensor axis of 1:
// padding, no gathers): initialisation, weights and checkpoints see full
// tensors, the same as the replicated program's, and checkpoints move
// between the two. TgrunTest.cpp runs the split over two ranks.
#include "TestSupport.h"
#include "tg/runtime/Safetensors.h"

#include <gtest/gtest.h>

using namespace tg;
namespace st = tg::safetensors;

namespace {

const int32_t kTokens[6] = {0, 1, 2, 3, 4, 0};
const int32_t kTargets[6] = {1, 2, 3, 4, 0, 1};

/// The program of one device, and the one that splits its parameters
/// over a tensor axis of 1 (the padded vocabulary included).
struct Programs {
  test::ProgramSpec replicated = test::tensorParallelSpec(1, false);
  test::ProgramSpec sharded = test::tensorParallelSpec(1, true);
};

std::string savedWeights(tg_session *session) {
  std::string path = test::scratchPath("weights.safetensors");
  EXPECT_OK(tg_session_save_weights(session, path.c_str()));
  return path;
}

st::File read(const std::string &path) {
  st::File file;
  std::string error;
  EXPECT_TRUE(st::readFile(path, file, error)) << error;
  return file;
}

TEST(TensorParallel, InfoCountsTheFullTensors) {
  Programs programs;
  for (const test::ProgramSpec *spec : {&programs.replicated, &programs.sharded}) {
    tg_session *session = test::loadSession(*spec);
    tg_program_info info;
    tg_session_info(session, &info);
    EXPECT_EQ(info.num_parameters, 10 + 2 + 12 + 5 + 12 + 2);
    tg_session_destroy(session);
  }
}

// The same values as on one device, in files of the full (unpadded) shapes,
// before and after steps.
TEST(TensorParallel, RandomInitGivesTheValuesOfOneDevice) {
  Programs programs;
  std::vector<std::vector<uint8_t>> initial, trained;
  for (const test::ProgramSpec *spec : {&programs.replicated, &programs.sharded}) {
    tg_session *session = test::loadSession(*spec);
    EXPECT_OK(tg_session_init_random(session, 77));
    initial.push_back(test::readFile(savedWeights(session)));
    for (int i = 0; i < 2; ++i)
      EXPECT_OK(tg_session_step(session, kTokens, kTargets, nullptr));
    std::string path = savedWeights(session);
    trained.push_back(test::readFile(path));
    st::File file = read(path);
    EXPECT_EQ(file.find("transformer.h.0.mlp.c_fc.bias")->shape, (std::vector<int64_t>{5}));
    EXPECT_EQ(st::toDoubles(*file.find("stamp")), (std::vector<double>{1, 2}));
    tg_session_destroy(session);
  }
  EXPECT_EQ(initial[0], initial[1]);
  EXPECT_EQ(trained[0], trained[1]);
  EXPECT_NE(initial[0], trained[0]);
}

TEST(TensorParallel, InitFromSafetensorsTakesFullTensors) {
  Programs programs;
  // Weights with distinct values, from the replicated program.
  tg_session *source = test::loadSession(programs.replicated);
  EXPECT_OK(tg_session_init_random(source, 5));
  std::string weights = savedWeights(source);
  tg_session_destroy(source);
  tg_session *session = test::loadSession(programs.sharded);
  EXPECT_OK(tg_session_init_from_safetensors(session, weights.c_str()));
  EXPECT_EQ(test::readFile(savedWeights(session)), test::readFile(weights));

  // The padded shard's shape is not the model's.
  st::File file = read(weights);
  for (st::Tensor &t : file.tensors)
    if (t.name == "transformer.h.0.mlp.c_fc.bias")
      t = st::fromDoubles(t.name, st::DType::F32, {6}, std::vector<double>(6, 0.5));
  std::string padded = test::scratchPath("padded.safetensors"), error;
  ASSERT_TRUE(st::writeFile(padded, file, error)) << error;
  EXPECT_EQ(test::errorOf(tg_session_init_from_safetensors(session, padded.c_str())),
            padded + ": tensor 'transformer.h.0.mlp.c_fc.bias' is F32 [6] but the program "
                     "needs a float [5]; pass weights of the model this program was compiled "
                     "from");
  tg_session_destroy(session);
}

// A checkpoint holds full tensors and the fingerprint of full shapes: it
// resumes on the other program, and both continue alike.
TEST(TensorParallel, CheckpointsMoveBetweenMeshes) {
  Programs programs;
  std::vector<std::string> checkpoints;
  for (const test::ProgramSpec *spec : {&programs.replicated, &programs.sharded}) {
    tg_session *session = test::loadSession(*spec);
    EXPECT_OK(tg_session_init_random(session, 9));
    for (int i = 0; i < 2; ++i)
      EXPECT_OK(tg_session_step(session, kTokens, kTargets, nullptr));
    checkpoints.push_back(test::scratchPath("step-2.safetensors"));
    EXPECT_OK(tg_session_save_checkpoint(session, checkpoints.back().c_str(), 2));
    tg_session_destroy(session);
  }
  EXPECT_EQ(test::readFile(checkpoints[0]), test::readFile(checkpoints[1]));
  st::File file = read(checkpoints[1]);
  EXPECT_EQ(file.find("adam_v:transformer.h.0.mlp.c_fc.bias")->shape, (std::vector<int64_t>{5}));
  EXPECT_EQ(file.find("adam_m:transformer.h.0.attn.c_attn.weight")->shape,
            (std::vector<int64_t>{2, 6}));

  // Each program resumes from the other's checkpoint.
  std::vector<std::vector<uint8_t>> resumed;
  for (int i = 0; i < 2; ++i) {
    tg_session *session = test::loadSession(i ? programs.sharded : programs.replicated);
    int64_t position = -1;
    EXPECT_OK(tg_session_load_checkpoint(session, checkpoints[1 - i].c_str(), &position));
    EXPECT_EQ(position, 2);
    EXPECT_OK(tg_session_step(session, kTokens, kTargets, nullptr));
    std::string path = test::scratchPath("step-3.safetensors");
    EXPECT_OK(tg_session_save_checkpoint(session, path.c_str(), 3));
    resumed.push_back(test::readFile(path));
    tg_session_destroy(session);
  }
  EXPECT_EQ(resumed[0], resumed[1]);
}

} // namespace
