// The executable trailer that `tgc --emit=exe` appends.
#include "TestSupport.h"
#include "tg/runtime/EmbeddedArtifact.h"

#include <gtest/gtest.h>

#include <cstdio>

#include <sys/stat.h>

using namespace tg;

namespace {

TEST(EmbeddedArtifact, RoundTripAndReEmbedding) {
  std::string exe = test::scratchPath("exe"), out = test::scratchPath("exe-with-artifact"),
              again = test::scratchPath("exe-again");
  std::vector<uint8_t> program(1000, 0x7f), other = {1, 2, 3};
  std::FILE *f = std::fopen(exe.c_str(), "wb");
  std::fwrite(program.data(), 1, program.size(), f);
  std::fclose(f);

  std::vector<uint8_t> found;
  EXPECT_FALSE(runtime::findEmbeddedArtifact(exe, found));
  std::vector<uint8_t> artifact = test::build(test::fixtureSpec());
  std::string error;
  ASSERT_TRUE(runtime::appendEmbeddedArtifact(exe, artifact, out, error)) << error;
  ASSERT_TRUE(runtime::findEmbeddedArtifact(out, found));
  EXPECT_EQ(found, artifact);
  struct stat st;
  ASSERT_EQ(::stat(out.c_str(), &st), 0);
  EXPECT_TRUE(st.st_mode & S_IXUSR);

  // Embedding into an executable that carries an artifact replaces it.
  ASSERT_TRUE(runtime::appendEmbeddedArtifact(out, other, again, error)) << error;
  ASSERT_TRUE(runtime::findEmbeddedArtifact(again, found));
  EXPECT_EQ(found, other);
  ASSERT_EQ(::stat(again.c_str(), &st), 0);
  EXPECT_EQ(std::size_t(st.st_size), program.size() + other.size() + 16);

  EXPECT_FALSE(runtime::appendEmbeddedArtifact("/nonexistent", other, again, error));
  EXPECT_NE(error.find("/nonexistent: cannot read the runtime executable"), std::string::npos);
}

} // namespace
