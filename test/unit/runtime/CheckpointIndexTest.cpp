// The sharded checkpoint's index (tg/runtime/CheckpointIndex.h): it round
// trips, and every kind of damage is refused by name. Saving and loading
// sharded checkpoints over several ranks, across meshes, is tested in
// test/python/test_tgrun_ranks.py and test_tgrun_zero.py.
#include "tg/runtime/CheckpointIndex.h"
#include "tg/runtime/Hash.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

using namespace tg::runtime;

namespace {

/// A [11, 4] weight split along dim 0 (padded to 12 rows, 2 parts), and its
/// moment, also chunked over 2 ranks (12 x 4 / 2 = 24 elements per part,
/// chunks of 12).
CheckpointIndex sample() {
  CheckpointIndex index;
  index.step = 7;
  index.dataPosition = 56;
  index.program = "0123456789abcdef";
  index.mesh = "dp=2,tp=2";
  index.files = {{"rank-00000.safetensors", "aaaaaaaaaaaaaaaa"},
                 {"rank-00001.safetensors", "bbbbbbbbbbbbbbbb"}};
  CheckpointEntry weight{"w", tg::safetensors::DType::F32, {11, 4}, {}};
  for (int64_t part = 0; part < 2; ++part)
    weight.pieces.push_back(
        {"rank-0000" + std::to_string(part) + ".safetensors", CheckpointSplit{0, 12, 1, 2, part},
         std::nullopt});
  CheckpointEntry moment{"adam_m:w", tg::safetensors::DType::F32, {11, 4}, {}};
  for (int64_t part = 0; part < 2; ++part)
    for (int64_t chunk = 0; chunk < 2; ++chunk)
      moment.pieces.push_back({"rank-0000" + std::to_string(chunk) + ".safetensors",
                               CheckpointSplit{0, 12, 1, 2, part}, CheckpointChunk{12, 2, chunk}});
  index.tensors = {weight, moment};
  return index;
}

/// Parses `text`; the error, or "" when it is accepted.
std::string parseError(const std::string &text) {
  CheckpointIndex parsed;
  std::string error;
  return parseCheckpointIndex(text, "ckpt/checkpoint.index.json", parsed, error) ? "" : error;
}

/// The sample's text after `edit`, resealed with a valid checksum so that
/// the check behind it is reached.
std::string edited(void (*edit)(nlohmann::json &)) {
  nlohmann::json json = nlohmann::json::parse(formatCheckpointIndex(sample()));
  edit(json);
  // The writer's checksum: FNV-1a 64 over the compact text of the rest.
  json.erase("checksum");
  Fnv1a64 hash;
  hash.update(std::string_view(json.dump()));
  json["checksum"] = hexDigits(hash.value());
  return json.dump(1);
}

} // namespace

TEST(CheckpointIndex, RoundTrips) {
  CheckpointIndex parsed;
  std::string error;
  ASSERT_TRUE(parseCheckpointIndex(formatCheckpointIndex(sample()), "index", parsed, error))
      << error;
  EXPECT_EQ(parsed.step, 7);
  EXPECT_EQ(parsed.dataPosition, 56);
  EXPECT_EQ(parsed.program, "0123456789abcdef");
  EXPECT_EQ(parsed.mesh, "dp=2,tp=2");
  EXPECT_EQ(parsed.files, sample().files);
  ASSERT_EQ(parsed.tensors.size(), 2u);
  const CheckpointEntry *moment =
      parsed.tensors[0].name == "adam_m:w" ? &parsed.tensors[0] : &parsed.tensors[1];
  ASSERT_EQ(moment->pieces.size(), 4u);
  EXPECT_EQ(moment->shape, (std::vector<int64_t>{11, 4}));
  EXPECT_EQ(pieceElements(*moment, moment->pieces[3]), 12);
  CheckpointPiece whole = moment->pieces[3];
  whole.chunk.reset();
  EXPECT_EQ(pieceElements(*moment, whole), 24); // 6 padded rows of 4
}

TEST(CheckpointIndex, TheResealingHelperMatchesTheWriter) {
  // The damage tests below rely on edited() computing the writer's checksum.
  EXPECT_EQ(parseError(edited([](nlohmann::json &) {})), "");
}

TEST(CheckpointIndex, RefusesAChangedIndex) {
  std::string text = formatCheckpointIndex(sample());
  text.replace(text.find("\"step\": 7"), 9, "\"step\": 8");
  EXPECT_NE(parseError(text).find("index.checksum does not match"), std::string::npos)
      << parseError(text);
}

TEST(CheckpointIndex, RefusesWhatIsNotAnIndex) {
  EXPECT_NE(parseError("[]").find("is not a JSON object"), std::string::npos);
  EXPECT_NE(parseError("{\"format\": \"other\"}").find("index.format"), std::string::npos);
  EXPECT_NE(parseError(std::string(100, '[')).find("nests deeper"), std::string::npos);
}

TEST(CheckpointIndex, RefusesDamageByName) {
  struct Case {
    void (*edit)(nlohmann::json &);
    const char *message;
  };
  const Case cases[] = {
      {[](nlohmann::json &j) { j["version"] = 2; }, "index.version must be an integer in [1, 1]"},
      {[](nlohmann::json &j) { j["step"] = -1; }, "index.step must be an integer"},
      {[](nlohmann::json &j) { j["files"]["../escape.safetensors"] = "00"; },
       "not a file name beside the index"},
      {[](nlohmann::json &j) { j["tensors"]["w"]["dtype"] = "F33"; },
       "tensors[\"w\"].dtype 'F33' is not a safetensors dtype"},
      {[](nlohmann::json &j) { j["tensors"]["w"]["shape"][0] = 0; },
       "tensors[\"w\"].shape must list"},
      {[](nlohmann::json &j) { j["tensors"]["w"]["pieces"][0]["file"] = "rank-00009.safetensors"; },
       "tensors[\"w\"].pieces[0].file 'rank-00009.safetensors' is not listed in files"},
      {[](nlohmann::json &j) { j["tensors"]["w"]["pieces"][1]["split"]["index"] = 0; },
       "tensors[\"w\"].pieces[1] holds the same part as an earlier piece"},
      {[](nlohmann::json &j) { j["tensors"]["w"]["pieces"].erase(1); },
       "tensors[\"w\"].pieces hold 1 of the 2 parts of the tensor"},
      {[](nlohmann::json &j) { j["tensors"]["w"]["pieces"][1]["split"]["blocks"] = 2; },
       "tensors[\"w\"].pieces[1] is split or chunked unlike pieces[0]"},
      {[](nlohmann::json &j) { j["tensors"]["w"]["pieces"][0]["split"]["padded_size"] = 8; },
       "tensors[\"w\"].pieces[0].split.padded_size must be an integer in [11, 12]"},
      {[](nlohmann::json &j) {
         for (auto &p : j["tensors"]["w"]["pieces"])
           p["split"]["padded_size"] = 1 << 30;
       },
       "tensors[\"w\"].pieces[0].split.padded_size must be an integer in [11, 12]"},
      {[](nlohmann::json &j) {
         for (auto &p : j["tensors"]["w"]["pieces"])
           p["split"]["padded_size"] = 11;
       },
       "padded_size is 11, not a multiple of blocks x parts"},
      {[](nlohmann::json &j) { j["tensors"]["w"]["pieces"][0]["split"]["dim"] = 2; },
       "tensors[\"w\"].pieces[0].split.dim must be an integer in [0, 1]"},
      {[](nlohmann::json &j) {
         for (auto &p : j["tensors"]["adam_m:w"]["pieces"])
           p["chunk"]["size"] = 11;
       },
       "tensors[\"adam_m:w\"].pieces[0].chunk holds 2 chunks of 11, not of ceil(24 / 2)"},
      {[](nlohmann::json &j) {
         for (auto &p : j["tensors"]["adam_m:w"]["pieces"])
           p["chunk"]["size"] = 1 << 30;
       },
       "tensors[\"adam_m:w\"].pieces[0].chunk holds 2 chunks of 1073741824, not of ceil"},
      {[](nlohmann::json &j) { j["tensors"]["w"]["pieces"][0]["chunk"] = 3; },
       "tensors[\"w\"].pieces[0].chunk must be an object"},
      {[](nlohmann::json &j) { j["tensors"]["w"]["pieces"] = nlohmann::json::array(); },
       "tensors[\"w\"].pieces is empty"},
  };
  for (const Case &c : cases) {
    std::string error = parseError(edited(c.edit));
    EXPECT_NE(error.find(c.message), std::string::npos) << "expected: " << c.message
                                                         << "\ngot: " << error;
    if (!error.empty()) {
      EXPECT_EQ(error.rfind("ckpt/checkpoint.index.json: ", 0), 0u) << error;
    }
  }
}
