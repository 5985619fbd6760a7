// Profiling through the C API on the fixture program (Gemm, Kernel, Copy,
// Kernel): one record per command with what it moves and computes, times
// that follow each other, the same step as without profiling, and errors
// (never a crash) when there is no profile to give.
#include "TestSupport.h"

#include <gtest/gtest.h>

using namespace tg;

namespace {

const int32_t kTokens[6] = {0, 1, 2, 3, 4, 0};
const int32_t kTargets[6] = {1, 2, 3, 4, 0, 1};

/// The profile of the session's last step (empty, with a test failure, if
/// there is none).
std::vector<tg_command_profile> lastProfile(tg_session *session) {
  const tg_command_profile *records = nullptr;
  std::size_t count = 0;
  EXPECT_OK(tg_session_profile(session, &records, &count));
  return records ? std::vector<tg_command_profile>(records, records + count)
                 : std::vector<tg_command_profile>();
}

TEST(Profile, OneRecordPerCommand) {
  test::ProgramSpec spec = test::fixtureSpec();
  spec.commands[2].stream = 1; // the copy
  tg_session *session = test::loadSession(spec);
  EXPECT_OK(tg_session_init_random(session, 1));
  EXPECT_OK(tg_session_set_profiling(session, 1));
  EXPECT_OK(tg_session_step(session, kTokens, kTargets, nullptr));
  std::vector<tg_command_profile> profile = lastProfile(session);
  ASSERT_EQ(profile.size(), 4u);

  const tg_command_profile &gemm = profile[0], &add = profile[1], &copy = profile[2];
  EXPECT_EQ(gemm.kind, TG_COMMAND_GEMM);
  EXPECT_STREQ(gemm.label, "matmul");
  EXPECT_EQ(gemm.bytes, 40u + 40u + 16u); // x [2, 5], W [5, 2], y [2, 2], F32
  EXPECT_EQ(gemm.flops, 2.0 * 2 * 2 * 5);
  EXPECT_EQ(add.kind, TG_COMMAND_KERNEL);
  EXPECT_STREQ(add.label, ""); // the fixture's kernels have no label
  EXPECT_EQ(add.bytes, 3u * 16u);
  EXPECT_EQ(add.flops, 0);
  EXPECT_EQ(copy.kind, TG_COMMAND_COPY);
  EXPECT_EQ(copy.bytes, 2u * 16u);
  EXPECT_EQ(copy.stream, 1u);
  EXPECT_EQ(profile[3].kind, TG_COMMAND_KERNEL);
  EXPECT_EQ(profile[3].stream, 0u);

  // The CPU runs the commands one after another, starting the clock at the first.
  EXPECT_EQ(profile[0].start_seconds, 0);
  for (std::size_t i = 0; i < profile.size(); ++i) {
    EXPECT_GE(profile[i].seconds, 0) << "command " << i;
    if (i > 0) {
      EXPECT_GE(profile[i].start_seconds, profile[i - 1].start_seconds + profile[i - 1].seconds)
          << "command " << i;
    }
  }
  tg_session_destroy(session);
}

TEST(Profile, StepIsTheSameWithProfiling) {
  tg_step_result results[2][3];
  for (int profiled = 0; profiled < 2; ++profiled) {
    tg_session *session = test::loadSession(test::fixtureSpec());
    EXPECT_OK(tg_session_init_random(session, 9));
    EXPECT_OK(tg_session_set_profiling(session, profiled));
    for (tg_step_result &r : results[profiled])
      EXPECT_OK(tg_session_step(session, kTokens, kTargets, &r));
    tg_session_destroy(session);
  }
  for (int step = 0; step < 3; ++step) {
    EXPECT_EQ(results[0][step].step, results[1][step].step);
    EXPECT_EQ(results[0][step].loss, results[1][step].loss);
    EXPECT_EQ(results[0][step].grad_norm, results[1][step].grad_norm);
    EXPECT_EQ(results[0][step].lr, results[1][step].lr);
  }
}

TEST(Profile, NoProfileIsAnErrorNotACrash) {
  tg_session *session = test::loadSession(test::fixtureSpec());
  EXPECT_OK(tg_session_init_random(session, 1));
  const tg_command_profile *records = nullptr;
  std::size_t count = 0;
  auto profileError = [&] {
    records = reinterpret_cast<const tg_command_profile *>(&count); // overwritten on errors too
    count = 7;
    std::string message = test::errorOf(tg_session_profile(session, &records, &count));
    EXPECT_EQ(records, nullptr);
    EXPECT_EQ(count, 0u);
    return message;
  };
  const std::string off = "tg_session_profile: model.tgx: profiling is off; call "
                          "tg_session_set_profiling(session, 1) before tg_session_step";
  EXPECT_EQ(profileError(), off);
  EXPECT_OK(tg_session_step(session, kTokens, kTargets, nullptr));
  EXPECT_EQ(profileError(), off);

  EXPECT_OK(tg_session_set_profiling(session, 1));
  EXPECT_EQ(profileError(), "tg_session_profile: model.tgx: no step has run since profiling "
                            "was turned on; call tg_session_step first");
  EXPECT_OK(tg_session_step(session, kTokens, kTargets, nullptr));
  EXPECT_EQ(lastProfile(session).size(), 4u);
  // A step refused before its commands run leaves the last profile as it was.
  int32_t bad[6] = {0, 1, 2, 5, 4, 0};
  EXPECT_NE(test::errorOf(tg_session_step(session, bad, kTargets, nullptr)), "");
  EXPECT_EQ(lastProfile(session).size(), 4u);

  // Turning profiling off drops the profile: it would describe an older step.
  EXPECT_OK(tg_session_set_profiling(session, 0));
  EXPECT_EQ(profileError(), off);
  EXPECT_OK(tg_session_step(session, kTokens, kTargets, nullptr));
  EXPECT_EQ(profileError(), off);

  EXPECT_EQ(test::errorOf(tg_session_set_profiling(nullptr, 1)),
            "tg_session_set_profiling: argument 'session' is NULL");
  EXPECT_EQ(test::errorOf(tg_session_profile(nullptr, &records, &count)),
            "tg_session_profile: argument 'session' is NULL");
  EXPECT_EQ(test::errorOf(tg_session_profile(session, nullptr, &count)),
            "tg_session_profile: argument 'records' is NULL");
  EXPECT_EQ(test::errorOf(tg_session_profile(session, &records, nullptr)),
            "tg_session_profile: argument 'count' is NULL");
  tg_session_destroy(session);
}

} // namespace
