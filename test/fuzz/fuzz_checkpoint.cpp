// Fuzz target: checkpoint loading (runtime/api/Checkpoint.cpp, through the C
// API) into a session of a small GPT-2 step (data/micro.tgx,
// whose path CMake passes as TG_FUZZ_ARTIFACT; TG_FUZZ_ARTIFACT in the
// environment overrides it). The input is a checkpoint file. Almost every
// mutation breaks the checkpoint's checksum, so an input that parses as
// safetensors is loaded a second time with its tg.checksum recomputed (as
// the runtime computes it: checkpointChecksum, CheckpointFormat.h), to reach
// the checks behind the checksum.
#include "FuzzSupport.h"

#include "tg/runtime/CheckpointFormat.h"
#include "tg/runtime/Safetensors.h"
#include "tg/runtime/tg_runtime.h"

#include <fstream>
#include <iterator>
#include <vector>

namespace {

tg_session *createSession() {
  const char *path = std::getenv("TG_FUZZ_ARTIFACT");
  if (!path || !*path)
    path = TG_FUZZ_ARTIFACT;
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  tg_session *session = nullptr;
  tg_status status = tg_session_create_from_memory(bytes.data(), bytes.size(), path, &session);
  if (!status)
    status = tg_session_init_random(session, 1);
  if (status) {
    std::fprintf(stderr,
                 "fuzz_checkpoint: cannot load the program %s: %s\n"
                 "Regenerate the artifact seed with test/fuzz/make-corpus (after the .tgx "
                 "format changed).\n",
                 path, tg_status_message(status));
    std::exit(1);
  }
  return session;
}

void load(tg_session *session, tg::fuzz::MemFile &file) {
  int64_t position = -1;
  tg_status status = tg_session_load_checkpoint(session, file.filePath().c_str(), &position);
  if (status) {
    if (!tg_status_message(status) || !*tg_status_message(status))
      tg::fuzz::invariantFailed("a rejected checkpoint without a message");
    tg_status_free(status);
    return;
  }
  if (position < 0 || tg_session_steps_done(session) < 0)
    tg::fuzz::invariantFailed("a loaded checkpoint has a negative step or data position");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static tg_session *session = createSession();
  static tg::fuzz::MemFile file("checkpoint.safetensors");
  file.write(data, size);
  load(session, file);

  tg::safetensors::File parsed;
  std::string error;
  const std::string key = tg::runtime::kCheckpointChecksumKey;
  if (!tg::safetensors::parse(data, size, "fuzz", parsed, error) || !parsed.metadata.count(key))
    return 0;
  std::string sum = tg::runtime::checkpointChecksum(parsed);
  if (parsed.metadata[key] == sum)
    return 0; // already loaded as it is
  parsed.metadata[key] = sum;
  std::vector<uint8_t> resealed;
  if (!tg::safetensors::serialize(parsed, resealed, error))
    return 0;
  file.write(resealed.data(), resealed.size());
  load(session, file);
  return 0;
}
