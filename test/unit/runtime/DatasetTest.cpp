// The data contract: sample i of step s starts at ((s*B + i)*T) mod (N - T)
// of the token stream: a flat uint16 or uint32 file, or the sequences of a
// Megatron-LM indexed dataset in order.
#include "TestSupport.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

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
            odd + ": holds 7 bytes, not a whole number of 2-byte tokens; a token file is a "
                  "flat array of little-endian uint16 token ids, re-write it");
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
            small + ": token 4 at position 3 (byte offset 6) is not a token id below the "
                    "vocabulary size 4; tokenize the data with the model's tokenizer");
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
    EXPECT_NE(test::errorOf(tg_dataset_open(path.c_str(), &dataset))
                  .find("not a whole number of 2-byte tokens"),
              std::string::npos);
    EXPECT_EQ(dataset, nullptr);
  }
  EXPECT_LT(countMappings(), before + 10);
}

/// Little-endian bytes of `value`'s low `bytes` bytes.
void put(std::string &out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out.push_back(char(value >> (8 * i)));
}

void writeBytes(const std::string &path, const std::string &bytes) {
  std::FILE *f = std::fopen(path.c_str(), "wb");
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
}

/// A Megatron-LM indexed dataset, PREFIX.bin + PREFIX.idx, laid out as its
/// _IndexWriter writes it: one sequence per document, tokens of `code` (8
/// uint16, 4 int32). `edit` may damage the index before it is written.
std::string writeMegatron(const std::vector<std::vector<int64_t>> &documents, uint8_t code = 8,
                          void (*edit)(std::string &index) = nullptr) {
  std::string prefix = test::scratchPath("megatron");
  const int width = code == 8 ? 2 : 4;
  std::string bin, idx("MMIDIDX\0\0", 9);
  put(idx, 1, 8); // version
  idx.push_back(char(code));
  put(idx, documents.size(), 8);     // sequences
  put(idx, documents.size() + 1, 8); // document index entries
  std::string sizes, pointers, docs;
  put(docs, 0, 8);
  for (std::size_t d = 0; d < documents.size(); ++d) {
    put(sizes, documents[d].size(), 4);
    put(pointers, bin.size(), 8);
    for (int64_t token : documents[d])
      put(bin, uint64_t(token), width);
    put(docs, d + 1, 8);
  }
  idx += sizes + pointers + docs;
  if (edit)
    edit(idx);
  writeBytes(prefix + ".bin", bin);
  writeBytes(prefix + ".idx", idx);
  return prefix;
}

tg_dataset *openFormat(const std::string &path, tg_data_format format) {
  tg_dataset *dataset = nullptr;
  EXPECT_OK(tg_dataset_open_format(path.c_str(), format, &dataset));
  return dataset;
}

/// Every batch of `b` x `t` up to step 20 from the two datasets.
void expectSameBatches(tg_dataset *a, tg_dataset *b, int64_t batch, int64_t t,
                       int64_t vocab) {
  for (int64_t s = 0; s < 20; ++s) {
    std::vector<int32_t> inA(batch * t), outA(batch * t), inB(batch * t), outB(batch * t);
    EXPECT_OK(tg_dataset_batch(a, s, batch, t, vocab, inA.data(), outA.data()));
    EXPECT_OK(tg_dataset_batch(b, s, batch, t, vocab, inB.data(), outB.data()));
    EXPECT_EQ(inA, inB) << "step " << s;
    EXPECT_EQ(outA, outB) << "step " << s;
  }
}

TEST(Dataset, MegatronDocumentsAreOneStreamInOrder) {
  std::vector<std::vector<int64_t>> documents = {{301, 302, 303}, {304, 305, 306, 307, 308},
                                                 {}, {309, 310}};
  std::vector<uint16_t> stream;
  for (const auto &d : documents)
    stream.insert(stream.end(), d.begin(), d.end());
  std::string prefix = writeMegatron(documents);
  tg_dataset *flat = open(writeTokens(stream));
  // PREFIX, PREFIX.bin and PREFIX.idx name the same dataset.
  for (const std::string &path : {prefix, prefix + ".bin", prefix + ".idx"}) {
    tg_dataset *megatron = openFormat(path, TG_DATA_MEGATRON);
    EXPECT_EQ(tg_dataset_num_tokens(megatron), 10);
    EXPECT_EQ(tg_dataset_num_documents(megatron), 4);
    EXPECT_EQ(tg_dataset_token_bytes(megatron), 2);
    expectSameBatches(megatron, flat, 2, 3, 1000);
    tg_dataset_close(megatron);
  }
  tg_dataset_close(flat);
}

TEST(Dataset, Int32MegatronAndUint32FilesHoldLargeIds) {
  std::vector<int64_t> ids = {70000, 1, 127999, 65536, 5, 99999, 3};
  tg_dataset *megatron = openFormat(writeMegatron({ids}, /*code=*/4), TG_DATA_MEGATRON);
  std::string words;
  for (int64_t id : ids)
    put(words, uint64_t(id), 4);
  std::string path = test::scratchPath("tokens32.bin");
  writeBytes(path, words);
  tg_dataset *flat = openFormat(path, TG_DATA_UINT32);
  EXPECT_EQ(tg_dataset_token_bytes(flat), 4);
  EXPECT_EQ(tg_dataset_num_documents(flat), 0);
  expectSameBatches(megatron, flat, 1, 3, 128256);
  int32_t in[3], out[3];
  EXPECT_OK(tg_dataset_batch(flat, 0, 1, 3, 128256, in, out));
  EXPECT_EQ(std::vector<int32_t>(in, in + 3), (std::vector<int32_t>{70000, 1, 127999}));
  tg_dataset_close(megatron);
  tg_dataset_close(flat);

  writeBytes(path, words + "xy");
  tg_dataset *dataset = nullptr;
  EXPECT_NE(test::errorOf(tg_dataset_open_format(path.c_str(), TG_DATA_UINT32, &dataset))
                .find("holds 30 bytes, not a whole number of 4-byte tokens"),
            std::string::npos);
  // A negative int32 id is not a token.
  megatron = openFormat(writeMegatron({{1, -5, 2, 3}}, 4), TG_DATA_MEGATRON);
  EXPECT_NE(test::errorOf(tg_dataset_batch(megatron, 0, 1, 3, 10, in, out))
                .find("token -5 at position 1 (byte offset 4) is not a token id"),
            std::string::npos);
  tg_dataset_close(megatron);
}

TEST(Dataset, Uint16DataCannotServeALargeVocabulary) {
  std::string path = writeTokens({1, 2, 3, 4, 5});
  tg_dataset *dataset = open(path);
  int32_t in[2], out[2];
  EXPECT_OK(tg_dataset_batch(dataset, 0, 1, 2, 65535, in, out));
  EXPECT_EQ(test::errorOf(tg_dataset_batch(dataset, 0, 1, 2, 65536, in, out)),
            path + ": holds uint16 token ids, but the vocabulary has 65536 tokens (above "
                   "65,535, the most 16 bits can address); write the tokens as uint32 "
                   "(scripts/pack-tokens --format uint32, or Megatron's int32)");
  tg_dataset_close(dataset);
}

TEST(Dataset, RefusesDamagedMegatronDatasets) {
  struct Case {
    void (*edit)(std::string &);
    const char *message;
  };
  const Case cases[] = {
      {[](std::string &i) { i[0] = 'X'; }, "is not a Megatron-LM index (no MMIDIDX header)"},
      {[](std::string &i) { i[9] = 2; }, "index version 2 is not supported"},
      {[](std::string &i) { i[17] = 5; }, "dtype code 5 (int64) holds no token ids"},
      {[](std::string &i) { i.pop_back(); }, "which do not match its 2 sequences"},
      // Sizes at byte 34, pointers at 42, the document index at 58.
      {[](std::string &i) { i[37] = char(0x80); }, "sequence 0 has -2147483645 tokens"},
      {[](std::string &i) { i[50] = 7; }, "sequence 1 starts at byte 7 of the .bin, not right "
                                          "after the one before it (6)"},
      {[](std::string &i) { i[i.size() - 8] = 1; },
       "the document index must run from 0 to the sequence count (2)"},
  };
  for (const Case &c : cases) {
    std::string prefix = writeMegatron({{1, 2, 3}, {4, 5}}, 8, c.edit);
    tg_dataset *dataset = nullptr;
    std::string error = test::errorOf(tg_dataset_open_format(prefix.c_str(), TG_DATA_MEGATRON,
                                                              &dataset));
    EXPECT_NE(error.find(prefix + ".idx: "), std::string::npos) << error;
    EXPECT_NE(error.find(c.message), std::string::npos) << "expected: " << c.message
                                                        << "\ngot: " << error;
  }
  // A .bin that does not match its index.
  std::string prefix = writeMegatron({{1, 2, 3}, {4, 5}});
  writeBytes(prefix + ".bin", std::string(8, '\0'));
  tg_dataset *dataset = nullptr;
  EXPECT_EQ(test::errorOf(tg_dataset_open_format(prefix.c_str(), TG_DATA_MEGATRON, &dataset)),
            prefix + ".bin: holds 8 bytes, but " + prefix + ".idx describes 5 tokens of 2 bytes "
            "(10); the two files do not belong together, or one is truncated");
  EXPECT_NE(test::errorOf(tg_dataset_open_format((prefix + "-missing").c_str(), TG_DATA_MEGATRON,
                                                 &dataset))
                .find("-missing.idx: cannot open the Megatron index"),
            std::string::npos);
}

} // namespace
