// Issue 8's runtime items, each reproducer with the message it must print:
// FIFOs and devices are never opened, checkpoint counts are bounded,
// safetensors files follow the format strictly, --init weights are finite,
// and a diverging run stops at its step without overwriting a checkpoint.
#include "TestSupport.h"
#include "tg/runtime/CheckpointFormat.h"
#include "tg/runtime/Safetensors.h"

#include <gtest/gtest.h>

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <limits>

#include <sys/stat.h>

using namespace tg;

namespace {

const int32_t kTokens[6] = {0, 1, 2, 3, 4, 0};
const int32_t kTargets[6] = {1, 2, 3, 4, 0, 1};

//===----------------------------------------------------------------------===//
// FIFOs and devices
//===----------------------------------------------------------------------===//

// open() on a FIFO blocks until a writer comes: without the check these
// calls never return.
TEST(Robustness, FifosAndDevicesAreNotOpened) {
  std::string pipe = test::scratchPath("pipe");
  ASSERT_EQ(::mkfifo(pipe.c_str(), 0600), 0);
  const std::string fifo = "a FIFO, not a regular file";

  tg_session *none = nullptr;
  EXPECT_EQ(test::errorOf(tg_session_create_from_file(pipe.c_str(), &none)),
            pipe + ": cannot read the artifact (" + fifo + "); check the path");
  EXPECT_EQ(test::errorOf(tg_session_create_from_file("/dev/zero", &none)),
            "/dev/zero: cannot read the artifact (a character device, not a regular file); "
            "check the path");
  std::string dir = ::testing::TempDir();
  EXPECT_NE(test::errorOf(tg_session_create_from_file(dir.c_str(), &none))
                .find("(a directory, not a regular file)"),
            std::string::npos);

  tg_dataset *dataset = nullptr;
  EXPECT_EQ(test::errorOf(tg_dataset_open(pipe.c_str(), &dataset)),
            pipe + ": cannot open the token file (" + fifo + "); check the path");
  EXPECT_EQ(test::errorOf(tg_dataset_open("/dev/zero", &dataset)),
            "/dev/zero: cannot open the token file (a character device, not a regular file); "
            "check the path");

  tg_session *session = test::loadSession(test::fixtureSpec());
  ASSERT_TRUE(session);
  EXPECT_EQ(test::errorOf(tg_session_init_from_safetensors(session, pipe.c_str())),
            pipe + ": cannot open: " + fifo + "; pass a safetensors file");
  EXPECT_EQ(test::errorOf(tg_session_load_checkpoint(session, pipe.c_str(), nullptr)),
            pipe + ": cannot read the checkpoint (" + fifo +
                "); pass a checkpoint written by tg_session_save_checkpoint or tgrun");
  tg_session_destroy(session);
  std::remove(pipe.c_str());
}

//===----------------------------------------------------------------------===//
// Checkpoint metadata bounds
//===----------------------------------------------------------------------===//

TEST(Robustness, CheckpointCountsAreBounded) {
  tg_session *session = test::loadSession(test::fixtureSpec());
  ASSERT_TRUE(session);
  EXPECT_OK(tg_session_init_random(session, 3));
  EXPECT_OK(tg_session_step(session, kTokens, kTargets, nullptr));
  std::string good = test::scratchPath("good.safetensors");
  EXPECT_OK(tg_session_save_checkpoint(session, good.c_str(), 5));

  auto loadWith = [&](const std::string &key, const std::string &value) {
    safetensors::File file;
    std::string error;
    EXPECT_TRUE(safetensors::readFile(good, file, error)) << error;
    file.metadata[key] = value;
    file.metadata[runtime::kCheckpointChecksumKey] = runtime::checkpointChecksum(file);
    std::string path = test::scratchPath("bounded.safetensors");
    EXPECT_TRUE(safetensors::writeFile(path, file, error)) << error;
    return std::make_pair(path, test::errorOf(tg_session_load_checkpoint(session, path.c_str(),
                                                                         nullptr)));
  };
  auto [path, error] = loadWith("tg.step", "9223372036854775807");
  EXPECT_EQ(error, path + ": metadata tg.step is '9223372036854775807', not an integer in "
                          "[0, 2147483647]; the checkpoint is corrupt, use an older one");
  std::tie(path, error) = loadWith("tg.data_position", "9223372036854775807");
  EXPECT_EQ(error, path + ": metadata tg.data_position is '9223372036854775807', not an "
                          "integer in [0, 4611686018427387904]; the checkpoint is corrupt, "
                          "use an older one");
  std::tie(path, error) = loadWith("tg.step", "-1");
  EXPECT_NE(error.find("metadata tg.step is '-1', not an integer"), std::string::npos) << error;
  std::tie(path, error) = loadWith("tg.step", "2147483647"); // the largest: accepted
  EXPECT_EQ(error, "");
  EXPECT_EQ(tg_session_steps_done(session), std::numeric_limits<int32_t>::max());
  EXPECT_NE(test::errorOf(tg_session_step(session, kTokens, kTargets, nullptr))
                .find("would overflow its int32 'step' slot"),
            std::string::npos);

  std::string out = test::scratchPath("out.safetensors");
  EXPECT_EQ(test::errorOf(tg_session_save_checkpoint(session, out.c_str(),
                                                     std::numeric_limits<int64_t>::max())),
            out + ": data position 9223372036854775807 is outside [0, 4611686018427387904]");
  tg_session_destroy(session);
}

//===----------------------------------------------------------------------===//
// Strict safetensors
//===----------------------------------------------------------------------===//

/// A file image: the 8-byte size, `header` verbatim, `dataBytes` zeros.
std::vector<uint8_t> image(const std::string &header, std::size_t dataBytes,
                           int64_t sizeDelta = 0) {
  std::vector<uint8_t> bytes(8);
  uint64_t size = uint64_t(int64_t(header.size()) + sizeDelta);
  for (int i = 0; i < 8; ++i)
    bytes[i] = uint8_t(size >> (8 * i));
  bytes.insert(bytes.end(), header.begin(), header.end());
  bytes.resize(bytes.size() + dataBytes);
  return bytes;
}

std::string parseError(const std::vector<uint8_t> &bytes) {
  safetensors::File file;
  std::string error;
  bool ok = safetensors::parse(bytes.data(), bytes.size(), "w.safetensors", file, error);
  EXPECT_EQ(ok, error.empty()) << error;
  return error;
}

std::string entry(const std::string &name, const std::string &shape, int begin, int end) {
  return "\"" + name + "\": {\"dtype\": \"F32\", \"shape\": " + shape +
         ", \"data_offsets\": [" + std::to_string(begin) + ", " + std::to_string(end) + "]}";
}

TEST(Robustness, SafetensorsHeaderSizeOneByteShort) {
  // Padded as writers pad it: one byte short moves a space into the data
  // region and shifts every tensor by one byte.
  std::string padded = "{" + entry("a", "[2]", 0, 8) + "}  ";
  std::vector<uint8_t> bytes = image(padded, 8, -1);
  EXPECT_EQ(parseError(bytes),
            "w.safetensors: the data region has 9 bytes but the tensors cover 8 (trailing "
            "bytes, or a wrong header size " + std::to_string(padded.size() - 1) +
                "); the file is corrupt");
  // Unpadded: the header loses its closing brace.
  std::string tight = "{" + entry("a", "[2]", 0, 8) + "}";
  EXPECT_EQ(parseError(image(tight, 8, -1)),
            "w.safetensors: header is not valid JSON (is the header size " +
                std::to_string(tight.size() - 1) + " right?)");
  // And a real file written by the runtime's own writer.
  safetensors::File file;
  file.tensors = {safetensors::fromDoubles("w", safetensors::DType::F32, {3}, {1, 2, 3})};
  std::vector<uint8_t> written;
  std::string error;
  ASSERT_TRUE(safetensors::serialize(file, written, error)) << error;
  ASSERT_EQ(parseError(written), "");
  written[0] -= 1;
  EXPECT_NE(parseError(written), "");
}

TEST(Robustness, SafetensorsTensorsCoverTheDataRegionExactly) {
  EXPECT_EQ(parseError(image("{" + entry("a", "[2]", 0, 8) + ", " + entry("b", "[1]", 12, 16) +
                                 "}",
                             16)),
            "w.safetensors: tensor 'b' starts at byte 12 of the data region, but the tensors "
            "before it end at byte 8 (a gap: the tensors must cover the data region exactly)");
  EXPECT_EQ(parseError(image("{" + entry("a", "[2]", 4, 12) + "}", 12)),
            "w.safetensors: tensor 'a' starts at byte 4 of the data region, but the tensors "
            "before it end at byte 0 (a gap: the tensors must cover the data region exactly)");
  std::string header = "{" + entry("a", "[2]", 0, 8) + "}";
  EXPECT_EQ(parseError(image(header, 10)),
            "w.safetensors: the data region has 10 bytes but the tensors cover 8 (trailing "
            "bytes, or a wrong header size " + std::to_string(header.size()) +
                "); the file is corrupt");
  EXPECT_EQ(parseError(image("{" + entry("a", "[2]", 0, 8) + ", " + entry("b", "[2]", 4, 12) +
                                 "}",
                             12)),
            "w.safetensors: tensors 'a' and 'b' overlap in the data region");
  // Empty tensors take no bytes, wherever the others leave off.
  EXPECT_EQ(parseError(image("{" + entry("a", "[2]", 0, 8) + ", " + entry("e", "[0]", 8, 8) +
                                 ", " + entry("b", "[1]", 8, 12) + "}",
                             12)),
            "");
  std::string metadata = "{\"__metadata__\": {\"k\": \"v\"}}";
  EXPECT_EQ(parseError(image(metadata, 0)), "");
  EXPECT_EQ(parseError(image(metadata, 1)),
            "w.safetensors: the data region has 1 bytes but the tensors cover 0 (trailing "
            "bytes, or a wrong header size " + std::to_string(metadata.size()) +
                "); the file is corrupt");
}

TEST(Robustness, SafetensorsHeaderShape) {
  EXPECT_EQ(parseError(image("{" + entry("a", "[2]", 0, 8) + ", " + entry("a", "[2]", 0, 8) +
                                 "}",
                             8)),
            "w.safetensors: header has the key 'a' more than once");
  EXPECT_EQ(parseError(image("{\"__metadata__\": {\"k\": \"1\", \"k\": \"2\"}}", 0)),
            "w.safetensors: header has the key 'k' more than once");
  EXPECT_EQ(parseError(image("{\"a\": {\"dtype\": \"F32\", \"dtype\": \"F64\", \"shape\": [2], "
                             "\"data_offsets\": [0, 8]}}",
                             8)),
            "w.safetensors: header has the key 'dtype' more than once");
  EXPECT_EQ(parseError(image("{" + entry("", "[2]", 0, 8) + "}", 8)),
            "w.safetensors: header has a tensor with an empty name");
  std::string deep(100000, '[');
  EXPECT_EQ(parseError(image(deep + std::string(100000, ']'), 0)),
            "w.safetensors: header nests deeper than 3 levels (at byte 11), which a "
            "safetensors header never does");
  // Brackets in strings do not count.
  EXPECT_EQ(parseError(image("{\"__metadata__\": {\"k\": \"[[[[{{{{\\\"\"}}", 0)), "");
}

//===----------------------------------------------------------------------===//
// Non-finite --init weights
//===----------------------------------------------------------------------===//

/// The fixture's two parameters as a safetensors file; `wte` and `lnF` hold
/// their values (10 and 2).
std::string weightsFile(const std::vector<double> &wte, const std::vector<double> &lnF,
                        safetensors::DType dtype = safetensors::DType::F32) {
  safetensors::File file;
  file.tensors = {safetensors::fromDoubles("transformer.wte.weight", dtype, {5, 2}, wte),
                  safetensors::fromDoubles("transformer.ln_f.weight", dtype, {2}, lnF)};
  std::string path = test::scratchPath("init.safetensors"), error;
  EXPECT_TRUE(safetensors::writeFile(path, file, error)) << error;
  return path;
}

TEST(Robustness, InitWeightsMustBeFinite) {
  tg_session *session = test::loadSession(test::fixtureSpec());
  ASSERT_TRUE(session);
  std::vector<double> wte(10, 0.01), ones(2, 1.0);
  EXPECT_OK(tg_session_init_from_safetensors(session, weightsFile(wte, ones).c_str()));

  std::vector<double> nan = wte;
  nan[3] = std::nan("");
  std::string path = weightsFile(nan, ones);
  EXPECT_EQ(test::errorOf(tg_session_init_from_safetensors(session, path.c_str())),
            path + ": tensor 'transformer.wte.weight' holds a non-finite value (nan at element "
                   "3); pass weights with finite values");
  path = weightsFile(wte, {1.0, -INFINITY});
  EXPECT_EQ(test::errorOf(tg_session_init_from_safetensors(session, path.c_str())),
            path + ": tensor 'transformer.ln_f.weight' holds a non-finite value (-inf at "
                   "element 1); pass weights with finite values");
  // Finite in the file, infinite in the program's F32.
  std::vector<double> huge = wte;
  huge[9] = 1e300;
  path = weightsFile(huge, ones, safetensors::DType::F64);
  EXPECT_EQ(test::errorOf(tg_session_init_from_safetensors(session, path.c_str())),
            path + ": tensor 'transformer.wte.weight' holds a non-finite value (1e+300 at "
                   "element 9), which overflows F32; pass weights with finite values");
  tg_session_destroy(session);
}

//===----------------------------------------------------------------------===//
// Divergence
//===----------------------------------------------------------------------===//

// Weights of 3e38 are finite but make the fixture's loss infinite at step 1.
TEST(Robustness, DivergenceStopsAtTheStepAndKeepsTheCheckpoint) {
  tg_session *session = test::loadSession(test::fixtureSpec());
  ASSERT_TRUE(session);
  EXPECT_OK(tg_session_init_from_safetensors(
      session, weightsFile(std::vector<double>(10, 3e38), {1.0, 1.0}).c_str()));
  std::string checkpoint = test::scratchPath("step-0.safetensors");
  EXPECT_OK(tg_session_save_checkpoint(session, checkpoint.c_str(), 0));
  std::vector<uint8_t> good = test::readFile(checkpoint);

  EXPECT_EQ(test::errorOf(tg_session_step(session, kTokens, kTargets, nullptr)),
            "tg_session_step: model.tgx: training diverged at step 1: the loss is inf and "
            "grad_norm 2; the first non-finite tensor is 'adam_v:transformer.wte.weight' "
            "(element 0 is inf). Lower the learning rate or set grad_clip_norm, and resume from "
            "the last checkpoint (written before this step)");
  EXPECT_EQ(tg_session_steps_done(session), 0);
  // The diverged state is never written over a checkpoint, nor trained on.
  EXPECT_EQ(test::errorOf(tg_session_save_checkpoint(session, checkpoint.c_str(), 1)),
            checkpoint + ": not written: the training state of model.tgx went non-finite at "
                         "step 1; the previous checkpoint is kept");
  EXPECT_EQ(test::readFile(checkpoint), good);
  std::string weights = test::scratchPath("final.safetensors");
  EXPECT_EQ(test::errorOf(tg_session_save_weights(session, weights.c_str())),
            weights + ": not written: the training state of model.tgx went non-finite at "
                      "step 1");
  EXPECT_EQ(test::errorOf(tg_session_step(session, kTokens, kTargets, nullptr)),
            "tg_session_step: the training state of model.tgx went non-finite at step 1; load "
            "a checkpoint or initialise the parameters again");
  // Loading the last good checkpoint makes the session usable again.
  EXPECT_OK(tg_session_load_checkpoint(session, checkpoint.c_str(), nullptr));
  EXPECT_OK(tg_session_init_random(session, 1));
  EXPECT_OK(tg_session_step(session, kTokens, kTargets, nullptr));
  tg_session_destroy(session);
}

} // namespace
