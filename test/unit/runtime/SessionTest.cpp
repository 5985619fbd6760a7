// Sessions on the fixture program: the numbers of a step, initialisation
// (random and from safetensors) and the weights file.
#include "TestSupport.h"
#include "tg/runtime/Safetensors.h"
#include "tg/runtime/tg_runtime.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

using namespace tg;
namespace st = tg::safetensors;

namespace {

st::File saved(tg_session *session) {
  std::string path = test::scratchPath("weights.safetensors");
  EXPECT_OK(tg_session_save_weights(session, path.c_str()));
  st::File file;
  std::string error;
  EXPECT_TRUE(st::readFile(path, file, error)) << error;
  return file;
}

const int32_t kTokens[6] = {0, 1, 2, 3, 4, 0};
const int32_t kTargets[6] = {1, 2, 3, 4, 0, 1};

/// Writes initial weights: W[j] = 0.1 (j + 1) as F64 under `wteName`, the
/// gain [1, 2] under its full name, and an lm_head the program lacks.
std::string writeInitialWeights(const std::string &wteName) {
  std::vector<double> w(10);
  for (int j = 0; j < 10; ++j)
    w[j] = 0.1 * (j + 1);
  st::File file;
  file.tensors.push_back(st::fromDoubles(wteName, st::DType::F64, {5, 2}, w));
  file.tensors.push_back(st::fromDoubles("transformer.ln_f.weight", st::DType::BF16, {2}, {1, 2}));
  file.tensors.push_back(st::fromDoubles("lm_head.weight", st::DType::F32, {5, 2}, w));
  std::string path = test::scratchPath("init.safetensors");
  std::string error;
  EXPECT_TRUE(st::writeFile(path, file, error)) << error;
  return path;
}

TEST(Session, InfoDescribesTheProgram) {
  tg_session *session = test::loadSession(test::fixtureSpec());
  tg_program_info info;
  tg_session_info(session, &info);
  EXPECT_EQ(info.batch_size, 2);
  EXPECT_EQ(info.seq_len, 3);
  EXPECT_EQ(info.vocab_size, 5);
  EXPECT_EQ(info.seed, 42u);
  EXPECT_EQ(info.num_parameters, 12);
  tg_session_destroy(session);
}

TEST(Session, StepComputesTheProgram) {
  tg_session *session = test::loadSession(test::fixtureSpec());
  EXPECT_OK(tg_session_init_from_safetensors(session, writeInitialWeights("wte.weight").c_str()));
  std::vector<float> w(10);
  for (int j = 0; j < 10; ++j)
    w[j] = float(0.1 * (j + 1));
  float g[2] = {1, 2};
  for (int step = 0; step < 3; ++step) {
    double expectedLoss = 0;
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j)
        for (int l = 0; l < 5; ++l)
          expectedLoss += 2 * 0.5 * (i * 5 + l) * double(w[l * 2 + j]);
    for (int i = 0; i < 6; ++i)
      expectedLoss += 0.001 * (kTokens[i] * (i + 1) - kTargets[i]);
    tg_step_result r;
    EXPECT_OK(tg_session_step(session, kTokens, kTargets, &r));
    EXPECT_EQ(r.step, step + 1);
    EXPECT_NEAR(r.loss, expectedLoss, 1e-5 * std::fabs(expectedLoss));
    EXPECT_EQ(r.grad_norm, g[0] + g[1]);
    EXPECT_EQ(r.lr, 0.1 / (step + 1));
    for (int j = 0; j < 10; ++j)
      w[j] -= float(r.lr) * 0.01f * float(j + 1);
    g[0] += 0.5f;
    g[1] += 0.5f;
  }
  EXPECT_EQ(tg_session_steps_done(session), 3);
  std::vector<double> savedW = st::toDoubles(*saved(session).find("transformer.wte.weight"));
  for (int j = 0; j < 10; ++j)
    EXPECT_EQ(savedW[j], w[j]);
  tg_session_destroy(session);
}

TEST(Session, StepNeedsInitialisedParametersAndValidTokens) {
  tg_session *session = test::loadSession(test::fixtureSpec());
  EXPECT_NE(test::errorOf(tg_session_step(session, kTokens, kTargets, nullptr))
                .find("are not initialised; call tg_session_init_random"),
            std::string::npos);
  EXPECT_OK(tg_session_init_random(session, 1));
  int32_t bad[6] = {0, 1, 2, 5, 4, 0};
  EXPECT_EQ(test::errorOf(tg_session_step(session, bad, kTargets, nullptr)),
            "tg_session_step: tokens[3] is 5, outside the vocabulary [0, 5) of model.tgx");
  EXPECT_NE(test::errorOf(tg_session_step(session, kTokens, nullptr, nullptr)).find("'targets' is NULL"),
            std::string::npos);
  EXPECT_EQ(tg_session_steps_done(session), 0);
  tg_session_destroy(session);
}

TEST(Session, WeightsFileHasTheArtifactsNames) {
  tg_session *session = test::loadSession(test::fixtureSpec());
  EXPECT_OK(tg_session_init_random(session, 7));
  st::File file = saved(session);
  EXPECT_EQ(file.metadata.at("format"), "pt");
  ASSERT_EQ(file.tensors.size(), 2u);
  const st::Tensor *wte = file.find("transformer.wte.weight");
  ASSERT_TRUE(wte);
  EXPECT_EQ(wte->dtype, st::DType::F32);
  EXPECT_EQ(wte->shape, (std::vector<int64_t>{5, 2}));
  EXPECT_EQ(st::toDoubles(*file.find("transformer.ln_f.weight")), (std::vector<double>{1, 1}));
  tg_session_destroy(session);
}

TEST(Session, RandomInitIsDeterministicAndIndependentOfParameterOrder) {
  test::ProgramSpec forward = test::fixtureSpec();
  test::ProgramSpec reversed = forward;
  std::reverse(reversed.parameters.begin(), reversed.parameters.end());
  std::vector<std::vector<double>> weights;
  for (const test::ProgramSpec *spec : {&forward, &forward, &reversed}) {
    tg_session *session = test::loadSession(*spec);
    EXPECT_OK(tg_session_init_random(session, 1234));
    weights.push_back(st::toDoubles(*saved(session).find("transformer.wte.weight")));
    tg_session_destroy(session);
  }
  EXPECT_EQ(weights[0], weights[1]);
  EXPECT_EQ(weights[0], weights[2]);
  double sumSquares = 0;
  for (double v : weights[0])
    sumSquares += v * v;
  double std = std::sqrt(sumSquares / 10);
  EXPECT_GT(std, 0.005); // normal(0, 0.02), loosely: ten samples
  EXPECT_LT(std, 0.05);

  tg_session *session = test::loadSession(forward);
  EXPECT_OK(tg_session_init_random(session, 1235));
  EXPECT_NE(st::toDoubles(*saved(session).find("transformer.wte.weight")), weights[0]);
  tg_session_destroy(session);
}

TEST(Session, InitFromSafetensorsAcceptsEitherPrefix) {
  for (const char *name : {"wte.weight", "transformer.wte.weight"}) {
    tg_session *session = test::loadSession(test::fixtureSpec());
    EXPECT_OK(tg_session_init_from_safetensors(session, writeInitialWeights(name).c_str()));
    std::vector<double> w = st::toDoubles(*saved(session).find("transformer.wte.weight"));
    EXPECT_EQ(w[3], double(float(0.4)));
    tg_session_destroy(session);
  }
}

TEST(Session, InitFromSafetensorsNamesMissingAndMisshapenTensors) {
  tg_session *session = test::loadSession(test::fixtureSpec());
  std::string error;
  st::File file;
  file.tensors.push_back(st::fromDoubles("wte.weight", st::DType::F32, {2, 5}, std::vector<double>(10)));
  std::string path = test::scratchPath("bad.safetensors");
  ASSERT_TRUE(st::writeFile(path, file, error));
  EXPECT_EQ(test::errorOf(tg_session_init_from_safetensors(session, path.c_str())),
            path + ": tensor 'wte.weight' is F32 [2, 5] but the program needs a float [5, 2]; "
                   "pass weights of the model this program was compiled from");
  file.tensors[0].shape = {5, 2};
  ASSERT_TRUE(st::writeFile(path, file, error));
  EXPECT_EQ(test::errorOf(tg_session_init_from_safetensors(session, path.c_str())),
            path + ": tensor 'transformer.ln_f.weight' is missing; pass weights of the model "
                   "this program was compiled from");
  EXPECT_NE(test::errorOf(tg_session_init_from_safetensors(session, "/nonexistent.safetensors"))
                .find("/nonexistent.safetensors: cannot open"),
            std::string::npos);
  tg_session_destroy(session);
}

TEST(Session, CreateFromFileNamesTheFile) {
  std::string path = test::scratchPath("model.tgx");
  std::vector<uint8_t> bytes = test::build(test::fixtureSpec());
  std::FILE *f = std::fopen(path.c_str(), "wb");
  std::fwrite(bytes.data(), 1, bytes.size() / 16 * 8, f); // half, in whole words
  std::fclose(f);
  tg_session *session = nullptr;
  EXPECT_EQ(test::errorOf(tg_session_create_from_file(path.c_str(), &session)),
            path + ": the artifact is truncated (its checksum trailer is missing); "
                   "re-compile the model with this tgc");
  EXPECT_NE(test::errorOf(tg_session_create_from_file("/nonexistent.tgx", &session))
                .find("/nonexistent.tgx: cannot read the artifact (No such file"),
            std::string::npos);
}

} // namespace
