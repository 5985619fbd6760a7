// Safetensors I/O: round trips, the dtype conversions, and rejection of every
// kind of corrupt file with a message naming the file and the culprit.
#include "tg/runtime/Safetensors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <unistd.h>

using namespace tg::safetensors;

namespace {

std::string tempPath(const std::string &name) {
  return ::testing::TempDir() + "/" + name + "." + std::to_string(::getpid());
}

File sampleFile() {
  File file;
  file.metadata["format"] = "pt";
  file.tensors.push_back(fromDoubles("w.f32", DType::F32, {2, 3}, {1, -2, 3.5, 4, 5, 6}));
  file.tensors.push_back(fromDoubles("w.bf16", DType::BF16, {3}, {0.5, -1.25, 3}));
  file.tensors.push_back(fromDoubles("w.f16", DType::F16, {2}, {65504, -0.125}));
  file.tensors.push_back(fromDoubles("w.f64", DType::F64, {}, {0.1}));
  file.tensors.push_back(fromDoubles("ids.i64", DType::I64, {2, 2}, {0, -1, 1e15, 7}));
  file.tensors.push_back(fromDoubles("ids.i32", DType::I32, {1}, {-5}));
  file.tensors.push_back(fromDoubles("ids.u16", DType::U16, {2}, {65535, 3}));
  file.tensors.push_back(fromDoubles("empty", DType::F32, {0, 4}, {}));
  return file;
}

std::vector<uint8_t> sampleImage() {
  std::vector<uint8_t> bytes;
  std::string error;
  EXPECT_TRUE(serialize(sampleFile(), bytes, error)) << error;
  return bytes;
}

/// A file image with the given JSON header and `dataBytes` zero bytes.
std::vector<uint8_t> image(const std::string &header, size_t dataBytes) {
  std::vector<uint8_t> bytes(8);
  for (int i = 0; i < 8; ++i)
    bytes[i] = static_cast<uint8_t>(uint64_t(header.size()) >> (8 * i));
  bytes.insert(bytes.end(), header.begin(), header.end());
  bytes.resize(bytes.size() + dataBytes, 0);
  return bytes;
}

/// The error of parsing `bytes` as "bad.safetensors" (empty if it parsed).
std::string parseError(const std::vector<uint8_t> &bytes) {
  File file;
  std::string error;
  if (parse(bytes.data(), bytes.size(), "bad.safetensors", file, error))
    return "";
  EXPECT_EQ(error.rfind("bad.safetensors: ", 0), 0u) << error;
  return error;
}

void expectRejected(const std::vector<uint8_t> &bytes, const std::string &part) {
  std::string error = parseError(bytes);
  EXPECT_NE(error.find(part), std::string::npos)
      << "error '" << error << "' lacks '" << part << "'";
}

} // namespace

TEST(Safetensors, RoundTripThroughAFile) {
  File original = sampleFile();
  std::string path = tempPath("roundtrip.safetensors"), error;
  ASSERT_TRUE(writeFile(path, original, error)) << error;
  File read;
  ASSERT_TRUE(readFile(path, read, error)) << error;
  std::remove(path.c_str());

  EXPECT_EQ(read.metadata, original.metadata);
  ASSERT_EQ(read.tensors.size(), original.tensors.size());
  for (const Tensor &expected : original.tensors) {
    const Tensor *t = read.find(expected.name);
    ASSERT_NE(t, nullptr) << expected.name;
    EXPECT_EQ(t->dtype, expected.dtype) << expected.name;
    EXPECT_EQ(t->shape, expected.shape) << expected.name;
    EXPECT_EQ(t->data, expected.data) << expected.name;
  }
  EXPECT_EQ(toDoubles(*read.find("w.bf16")), (std::vector<double>{0.5, -1.25, 3}));
  EXPECT_EQ(toDoubles(*read.find("ids.i64")), (std::vector<double>{0, -1, 1e15, 7}));
  EXPECT_EQ(toDoubles(*read.find("w.f16")), (std::vector<double>{65504, -0.125}));
  EXPECT_EQ(toDoubles(*read.find("ids.u16")), (std::vector<double>{65535, 3}));
}

TEST(Safetensors, HeaderIsAlignedAndTheDataFollows) {
  std::vector<uint8_t> bytes = sampleImage();
  uint64_t headerSize = 0;
  std::memcpy(&headerSize, bytes.data(), 8);
  EXPECT_EQ(headerSize % 8, 0u);
  EXPECT_EQ(bytes[8], '{');
}

TEST(Safetensors, WriteErrors) {
  std::string error;
  EXPECT_FALSE(writeFile("/nonexistent-dir/x.safetensors", sampleFile(), error));
  EXPECT_NE(error.find("/nonexistent-dir/x.safetensors"), std::string::npos) << error;

  File duplicate;
  duplicate.tensors = {fromDoubles("a", DType::F32, {1}, {1}),
                       fromDoubles("a", DType::F32, {1}, {2})};
  std::vector<uint8_t> bytes;
  EXPECT_FALSE(serialize(duplicate, bytes, error));
  EXPECT_NE(error.find("'a'"), std::string::npos) << error;

  File mismatched;
  mismatched.tensors = {fromDoubles("b", DType::F32, {3}, {1, 2})};
  EXPECT_FALSE(serialize(mismatched, bytes, error));
  EXPECT_NE(error.find("'b'"), std::string::npos) << error;
}

TEST(Safetensors, ReadErrorsNameTheFile) {
  File file;
  std::string error;
  EXPECT_FALSE(readFile("/nonexistent/in.safetensors", file, error));
  EXPECT_NE(error.find("/nonexistent/in.safetensors"), std::string::npos) << error;
}

TEST(Safetensors, RejectsStructuralCorruption) {
  std::vector<uint8_t> valid = sampleImage();
  expectRejected(std::vector<uint8_t>(valid.begin(), valid.begin() + 5), "too short");

  std::vector<uint8_t> huge = valid;
  huge[6] = 0xff;
  expectRejected(huge, "beyond the end of the file");

  std::vector<uint8_t> truncated(valid.begin(), valid.end() - 1);
  expectRejected(truncated, "outside the data region");

  expectRejected(image("{\"a\": {\"dtype\": \"F32\", ", 0), "not valid JSON");
  expectRejected(image("[1, 2]", 0), "not a JSON object");
}

TEST(Safetensors, RejectsBadEntries) {
  auto entry = [](const std::string &dtype, const std::string &shape,
                  const std::string &offsets) {
    return "{\"t\": {\"dtype\": \"" + dtype + "\", \"shape\": " + shape +
           ", \"data_offsets\": " + offsets + "}}";
  };
  expectRejected(image(entry("F8", "[2]", "[0, 2]"), 2), "tensor 't': unknown dtype 'F8'");
  expectRejected(image(entry("F32", "[2]", "[4, 0]"), 8), "tensor 't': data_offsets [4, 0]");
  expectRejected(image(entry("F32", "[2]", "[0, 16]"), 8), "outside the data region");
  expectRejected(image(entry("F32", "[2]", "[0, 4]"), 8), "expected 8 for shape [2]");
  expectRejected(image(entry("F32", "[-2]", "[0, 8]"), 8), "tensor 't': field 'shape'");
  expectRejected(image(entry("F32", "[2.5]", "[0, 8]"), 8), "tensor 't': field 'shape'");
  expectRejected(image(entry("F32", "[4294967296, 4294967296, 4294967296]", "[0, 8]"), 8),
                 "too large");
  expectRejected(image(entry("F32", "[2]", "[0]"), 8), "tensor 't': field 'data_offsets'");
  expectRejected(image(entry("F32", "[2]", "[0, -8]"), 8), "tensor 't': field 'data_offsets'");
  expectRejected(image(entry("F32", "2", "[0, 8]"), 8), "tensor 't': field 'shape'");
  expectRejected(image("{\"t\": {\"shape\": [1], \"data_offsets\": [0, 4]}}", 4),
                 "tensor 't': field 'dtype'");
  expectRejected(image("{\"t\": {\"dtype\": \"F32\", \"shape\": [1], "
                       "\"data_offsets\": [0, 4], \"extra\": 1}}",
                       4),
                 "tensor 't': unknown field 'extra'");
  expectRejected(image("{\"t\": 3}", 0), "tensor 't': entry is not");
  expectRejected(image("{\"__metadata__\": {\"k\": 1}}", 0), "__metadata__ entry 'k'");
  expectRejected(image("{\"__metadata__\": []}", 0), "'__metadata__'");
  expectRejected(image("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]},"
                       " \"b\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 8]}}",
                       8),
                 "tensors 'a' and 'b' overlap");
}

TEST(Safetensors, AcceptsMetadataAndEmptyHeader) {
  File file;
  std::string error;
  std::vector<uint8_t> bytes = image("{\"__metadata__\": {\"format\": \"pt\"}}  ", 0);
  ASSERT_TRUE(parse(bytes.data(), bytes.size(), "m", file, error)) << error;
  EXPECT_EQ(file.metadata.at("format"), "pt");
  EXPECT_TRUE(file.tensors.empty());
}

TEST(Safetensors, RandomCorruptionNeverCrashes) {
  std::vector<uint8_t> valid = sampleImage();
  uint64_t headerSize = 0;
  std::memcpy(&headerSize, valid.data(), 8);
  std::mt19937 rng(42);
  int rejected = 0;
  for (int iteration = 0; iteration < 1000; ++iteration) {
    std::vector<uint8_t> bytes = valid;
    switch (iteration % 3) {
    case 0: // truncate anywhere
      bytes.resize(rng() % bytes.size());
      break;
    case 1: // flip bits in the size field or the header
      for (int flips = 1 + rng() % 3; flips > 0; --flips)
        bytes[rng() % (8 + headerSize)] ^= static_cast<uint8_t>(1u << (rng() % 8));
      break;
    default: // overwrite header bytes with JSON-significant characters
      for (int edits = 1 + rng() % 3; edits > 0; --edits)
        bytes[8 + rng() % headerSize] = "{}[]\",:0123456789-e"[rng() % 19];
    }
    File file;
    std::string error;
    if (!parse(bytes.data(), bytes.size(), "fuzz", file, error)) {
      ++rejected;
      EXPECT_FALSE(error.empty());
      continue;
    }
    for (const Tensor &t : file.tensors)
      EXPECT_EQ(t.data.size(), t.numElements() * dtypeSize(t.dtype)) << t.name;
  }
  EXPECT_GT(rejected, 500);
}

TEST(Conversions, Bf16RoundsToNearestEven) {
  EXPECT_EQ(doubleToBf16(1.0), 0x3f80);
  EXPECT_EQ(doubleToBf16(1.0 / 3), 0x3eab);
  EXPECT_EQ(doubleToBf16(1 + std::ldexp(1, -8)), 0x3f80);     // tie -> even
  EXPECT_EQ(doubleToBf16(1 + 3 * std::ldexp(1, -8)), 0x3f82); // tie -> even
  // Just above a tie, but below float precision: rounding through float
  // first would give the tie and round down.
  EXPECT_EQ(doubleToBf16(1 + std::ldexp(1, -8) + std::ldexp(1, -30)), 0x3f81);
  EXPECT_EQ(doubleToBf16(-2.0), 0xc000);
  EXPECT_EQ(doubleToBf16(3.4e38), 0x7f80); // overflow -> inf
  EXPECT_EQ(doubleToBf16(-INFINITY), 0xff80);
  EXPECT_EQ(doubleToBf16(std::ldexp(1, -133)), 0x0001); // smallest subnormal
  EXPECT_EQ(doubleToBf16(std::ldexp(1, -134)), 0x0000); // tie -> even (zero)
  EXPECT_TRUE(std::isnan(bf16ToDouble(doubleToBf16(NAN))));
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    double v = bf16ToDouble(static_cast<uint16_t>(bits));
    if (!std::isnan(v)) {
      ASSERT_EQ(doubleToBf16(v), bits) << std::hex << bits;
    }
  }
}

TEST(Conversions, F16RoundsToNearestEven) {
  EXPECT_EQ(doubleToF16(1.0), 0x3c00);
  EXPECT_EQ(doubleToF16(65504), 0x7bff);
  EXPECT_EQ(doubleToF16(65519), 0x7bff);
  EXPECT_EQ(doubleToF16(65520), 0x7c00); // tie rounds to even -> overflow
  EXPECT_EQ(doubleToF16(1 + std::ldexp(1, -11)), 0x3c00);     // tie -> even
  EXPECT_EQ(doubleToF16(1 + 3 * std::ldexp(1, -11)), 0x3c02); // tie -> even
  EXPECT_EQ(doubleToF16(std::ldexp(1, -24)), 0x0001);
  EXPECT_EQ(doubleToF16(std::ldexp(1, -25)), 0x0000);
  EXPECT_EQ(doubleToF16(3 * std::ldexp(1, -26)), 0x0001);
  EXPECT_EQ(doubleToF16(-0.0), 0x8000);
  EXPECT_EQ(f16ToDouble(0x0001), std::ldexp(1, -24));
  EXPECT_EQ(f16ToDouble(0xfc00), -INFINITY);
  EXPECT_TRUE(std::isnan(f16ToDouble(doubleToF16(NAN))));
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    double v = f16ToDouble(static_cast<uint16_t>(bits));
    if (!std::isnan(v)) {
      ASSERT_EQ(doubleToF16(v), bits) << std::hex << bits;
    }
  }
}

TEST(Conversions, RoundToAndIntegers) {
  EXPECT_EQ(roundTo(DType::F32, 0.1), static_cast<double>(0.1f));
  EXPECT_EQ(roundTo(DType::F64, 0.1), 0.1);
  EXPECT_EQ(roundTo(DType::BF16, 1.0 / 3), 0.333984375);
  EXPECT_EQ(roundTo(DType::I32, 1e20), std::numeric_limits<int32_t>::max());
  EXPECT_EQ(roundTo(DType::I8, -1e3), -128);
  EXPECT_EQ(roundTo(DType::U8, 2.5), 2); // nearest even
  EXPECT_EQ(roundTo(DType::I64, NAN), 0);
  EXPECT_EQ(parseDType("BF16"), DType::BF16);
  EXPECT_FALSE(parseDType("F8_E4M3").has_value());
  EXPECT_STREQ(dtypeName(DType::U16), "U16");
}
