// The data contract: sample i of step s starts at ((s*B + i)*T) mod (N - T).
#include "TestSupport.h"

#include <gtest/gtest.h>

#include <cstdio>

using namespace tg;

namespace {

std::string writeTokens(const std::vector<uint16_t> &tokens, std::size_t extraBytes = 0) {
  std::string path = test::scratchPath("tokens.bin");
  std::FILE *f = std::fopen(path.c_str(), "wb");
  for (uint16_t t : tokens) {
    std::fputc(t & 0xff, f);
    std::fputc(t >> 8, f);
  }
  for (std::size_t i = 0; i < extraBytes; ++i)
    std::fputc(0, f);
  std::fclose(f);
  return path;
}

tg_dataset *open(const std::string &path) {
  tg_dataset *dataset = nullptr;
  EXPECT_OK(tg_dataset_open(path.c_str(), &dataset));
  return dataset;
}

TEST(Dataset, BatchesFollowTheContract) {
  const int64_t n = 23, b = 2, t = 4, vocab = 1000;
  std::vector<uint16_t> tokens(n);
  for (int64_t i = 0; i < n; ++i)
    tokens[i] = uint16_t(300 + i); // little-endian: both bytes matter
  tg_dataset *dataset = open(writeTokens(tokens));
  EXPECT_EQ(tg_dataset_num_tokens(dataset), n);
  for (int64_t s : {0, 1, 2, 7, 1000000007}) {
    std::vector<int32_t> in(b * t), out(b * t);
    EXPECT_OK(tg_dataset_batch(dataset, s, b, t, vocab, in.data(), out.data()));
    for (int64_t i = 0; i < b; ++i) {
      int64_t o = ((s * b + i) * t) % (n - t);
      for (int64_t j = 0; j < t; ++j) {
        EXPECT_EQ(in[i * t + j], tokens[o + j]) << "step " << s << " sample " << i;
        EXPECT_EQ(out[i * t + j], tokens[o + j + 1]) << "step " << s << " sample " << i;
      }
    }
  }
  tg_dataset_close(dataset);
}

TEST(Dataset, RejectsOddShortAndOutOfVocabularyFiles) {
  std::string odd = writeTokens({1, 2, 3}, 1);
  tg_dataset *dataset = nullptr;
  EXPECT_EQ(test::errorOf(tg_dataset_open(odd.c_str(), &dataset)),
            odd + ": has an odd number of bytes (7); a token file is a flat array of "
                  "little-endian uint16, re-write it");
  std::string empty = writeTokens({});
  EXPECT_NE(test::errorOf(tg_dataset_open(empty.c_str(), &dataset)).find("is empty"),
            std::string::npos);
  EXPECT_NE(test::errorOf(tg_dataset_open("/nonexistent.bin", &dataset))
                .find("/nonexistent.bin: cannot open the token file"),
            std::string::npos);

  std::string small = writeTokens({1, 2, 3, 4});
  dataset = open(small);
  int32_t in[4], out[4];
  EXPECT_EQ(test::errorOf(tg_dataset_batch(dataset, 0, 1, 4, 10, in, out)),
            small + ": holds 4 tokens, but a sample needs 5 (seq_len + 1); pass a larger token "
                    "file");
  EXPECT_OK(tg_dataset_batch(dataset, 0, 1, 3, 10, in, out));
  EXPECT_EQ(test::errorOf(tg_dataset_batch(dataset, 0, 1, 3, 4, in, out)),
            small + ": token 4 at position 3 (byte offset 6) is not below the vocabulary size "
                    "4; tokenize the data with the model's tokenizer");
  tg_dataset_close(dataset);
}

/// The number of memory mappings of this process.
int countMappings() {
  std::FILE *f = std::fopen("/proc/self/maps", "r");
  int lines = 0;
  for (int c; f && (c = std::fgetc(f)) != EOF;)
    lines += c == '\n';
  if (f)
    std::fclose(f);
  return lines;
}

// Found by fuzzing (test/fuzz/corpus/tokens): a rejected odd-sized file was
// mapped and never unmapped, one mapping leaked per call.
TEST(Dataset, RejectedFilesLeaveNoMapping) {
  std::string path = writeTokens({1, 2}, /*extraBytes=*/1);
  int before = countMappings();
  for (int i = 0; i < 100; ++i) {
    tg_dataset *dataset = nullptr;
    EXPECT_NE(test::errorOf(tg_dataset_open(path.c_str(), &dataset)).find("odd number of bytes"),
              std::string::npos);
    EXPECT_EQ(dataset, nullptr);
  }
  EXPECT_LT(countMappings(), before + 10);
}

} // namespace
