// Fuzz target: the index of a sharded checkpoint (checkpoint.index.json,
// tg/runtime/CheckpointIndex.h). Almost every mutation breaks the index's
// checksum, so an input that parses as a JSON object is parsed a second
// time with its checksum recomputed (as the writer computes it), to reach
// the checks behind it. A rejected index has a message naming it; an
// accepted one names only plain files, and formats to a text that parses
// to the same index.
#include "FuzzSupport.h"

#include "tg/runtime/CheckpointIndex.h"
#include "tg/runtime/Hash.h"

#include <nlohmann/json.hpp>

namespace {

using tg::runtime::CheckpointIndex;

void check(const std::string &text) {
  CheckpointIndex index;
  std::string error;
  if (!tg::runtime::parseCheckpointIndex(text, "fuzz.json", index, error)) {
    if (error.rfind("fuzz.json: ", 0) != 0)
      tg::fuzz::invariantFailed("a rejected index without a message naming it");
    return;
  }
  for (const auto &[name, checksum] : index.files)
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
      tg::fuzz::invariantFailed("an accepted index names a file outside its directory");
  for (const tg::runtime::CheckpointEntry &entry : index.tensors)
    for (const tg::runtime::CheckpointPiece &piece : entry.pieces)
      if (tg::runtime::pieceElements(entry, piece) <= 0)
        tg::fuzz::invariantFailed("an accepted piece holds no elements");
  CheckpointIndex again;
  if (!tg::runtime::parseCheckpointIndex(tg::runtime::formatCheckpointIndex(index), "fuzz.json",
                                         again, error) ||
      tg::runtime::formatCheckpointIndex(again) != tg::runtime::formatCheckpointIndex(index))
    tg::fuzz::invariantFailed("an accepted index does not round trip");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  check(text);
  if (size > 1 << 16)
    return 0;
  nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object())
    return 0;
  json.erase("checksum");
  tg::runtime::Fnv1a64 hash;
  hash.update(std::string_view(json.dump()));
  json["checksum"] = tg::runtime::hexDigits(hash.value());
  check(json.dump());
  return 0;
}
