// Checkpoints of a single rank: a safetensors file with every state slot
// (parameters and AdamW moments, under their slot names) as full tensors
// (without padding), so that a checkpoint loads on any mesh, and metadata
//   tg.step           steps taken, in [0, 2^31 - 1] (the int32 step slot)
//   tg.data_position  the caller's position in its data (tgrun: next batch),
//                     in [0, 2^62]
//   tg.program        fingerprint of the state layout (names, dtypes, full
//                     shapes)
//   tg.checksum       FNV-1a 64 over the tensors and the other metadata
// written atomically by safetensors::writeFile (temporary file, fsync,
// rename, directory fsync). A multi-rank run writes a directory instead
// (ShardedCheckpoint.cpp); loading takes either.
#include "Checkpoint.h"
#include "tg/runtime/CheckpointFormat.h"
#include "tg/runtime/Hash.h"
#include "Session.h"
#include "Status.h"
#include "tg/runtime/RegularFile.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace tg::runtime {
namespace {

constexpr const char *kStep = kCheckpointStepKey;
constexpr const char *kDataPosition = "tg.data_position";
constexpr const char *kProgram = kCheckpointProgramKey;
constexpr const char *kChecksum = kCheckpointChecksumKey;

/// Metadata `key` as an integer in [0, max]; otherwise sets `error` to a
/// message naming the field and `path`.
bool parseCount(const safetensors::File &file, const std::string &path, const char *key,
                int64_t max, int64_t &out, std::string &error) {
  auto it = file.metadata.find(key);
  std::string text = it == file.metadata.end() ? "" : it->second;
  char *end = nullptr;
  errno = 0;
  long long value = text.empty() ? -1 : std::strtoll(text.c_str(), &end, 10);
  out = value;
  if (!text.empty() && errno == 0 && *end == '\0' && value >= 0 && value <= max)
    return true;
  if (it == file.metadata.end())
    error = path + ": metadata " + key + " is missing; the checkpoint is corrupt";
  else
    error = path + ": metadata " + key + " is '" + text.substr(0, 40) +
            "', not an integer in [0, " + std::to_string(max) +
            "]; the checkpoint is corrupt, use an older one";
  return false;
}

/// A collective in multi-rank programs: every rank checks alike, then
/// writes its part of a sharded checkpoint.
bool save(const tg_session &session, const std::string &path, int64_t dataPosition,
          std::string &error) {
  if (dataPosition < 0 || dataPosition > kMaxDataPosition) {
    error = path + ": data position " + std::to_string(dataPosition) + " is outside [0, " +
            std::to_string(kMaxDataPosition) + "]";
    return false;
  }
  // Never replace a good checkpoint with a diverged state.
  if (session.divergedAt) {
    error = path + ": not written: the training state of " + session.source +
            " went non-finite at step " + std::to_string(session.divergedAt) +
            "; the previous checkpoint is kept";
    return false;
  }
  if (session.placement.size > 1)
    return saveShardedCheckpoint(session, path, dataPosition, error);
  safetensors::File file;
  for (const StateTensor &s : stateTensors(session)) {
    file.tensors.emplace_back();
    safetensors::Tensor &t = file.tensors.back();
    // One rank holds everything, but a padded or chunked slot still needs
    // its full tensor assembled.
    if (!gatherFullTensor(session, *s.parameter, *s.slot, s.slot->name()->str(), t, error) ||
        !checkFinite(path, *s.slot, t.data.data(), t.data.size(), divergedAdvice(session),
                     error))
      return false;
  }
  file.metadata[kStep] = std::to_string(session.stepsDone);
  file.metadata[kDataPosition] = std::to_string(dataPosition);
  file.metadata[kProgram] = stateFingerprint(session);
  file.metadata[kChecksum] = checkpointChecksum(file);
  return safetensors::writeFile(path, file, error);
}

bool load(tg_session &session, const std::string &path, int64_t *dataPosition,
          std::string &error) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return loadShardedCheckpoint(session, path, dataPosition, error);
  // A path that cannot be opened (missing, a FIFO or device) is not a
  // corrupt checkpoint: say so.
  std::string problem;
  int fd = openRegularFile(path, st, problem);
  if (fd < 0) {
    error = path + ": cannot read the checkpoint (" + problem +
            "); pass a checkpoint written by tg_session_save_checkpoint or tgrun";
    return false;
  }
  ::close(fd);
  safetensors::File file;
  if (!safetensors::readFile(path, file, error)) {
    error += "; the checkpoint is truncated or corrupt";
    return false;
  }
  auto fail = [&](const std::string &problem) {
    error = path + ": " + problem;
    return false;
  };
  auto stored = file.metadata.find(kChecksum);
  if (stored == file.metadata.end())
    return fail("not a tgrun checkpoint (no tg.checksum metadata); pass a file written by "
                "tg_session_save_checkpoint or tgrun --checkpoint-dir");
  if (stored->second != checkpointChecksum(file))
    return fail("checksum mismatch: the checkpoint is corrupt; use an older checkpoint");
  auto program = file.metadata.find(kProgram);
  if (program == file.metadata.end() || program->second != stateFingerprint(session))
    return fail(otherProgramProblem(session));
  int64_t steps, position;
  if (!parseCount(file, path, kStep, kMaxCheckpointStep, steps, error) ||
      !parseCount(file, path, kDataPosition, kMaxDataPosition, position, error))
    return false;
  // The fingerprint matched, so every state tensor is present with its
  // dtype and full shape; look each one up and check its size all the same
  // before touching the session. Each rank takes its part of each.
  std::vector<std::pair<StateTensor, const safetensors::Tensor *>> writes;
  for (const StateTensor &s : stateTensors(session)) {
    const safetensors::Tensor *t = file.find(s.slot->name()->string_view());
    uint64_t bytes = uint64_t(parameterLayout(session, *s.parameter).fullElements()) *
                     dtypeSize(s.slot->dtype());
    if (!t || t->dtype != toSafetensors(s.slot->dtype()) || t->data.size() != bytes)
      return fail("tensor '" + s.slot->name()->str() + "' is missing or has the wrong dtype or "
                  "shape; the checkpoint is corrupt");
    if (!checkFinite(path, *s.slot, t->data.data(), t->data.size(),
                     kWrittenAfterDivergence, error))
      return false;
    writes.emplace_back(s, t);
  }
  for (auto &[s, tensor] : writes)
    if (!writeFullTensor(session, *s.parameter, *s.slot, tensor->data.data(), error))
      return false;
  restoreProgress(session, steps, position, dataPosition);
  return true;
}

} // namespace

std::vector<StateTensor> stateTensors(const tg_session &session) {
  std::vector<StateTensor> state;
  for (const tgx::Parameter *p : *session.program->parameters())
    for (uint32_t index : {p->slot(), p->adam_m_slot(), p->adam_v_slot()})
      state.push_back({p, &slotAt(session, index)});
  return state;
}

std::string stateFingerprint(const tg_session &session) {
  Fnv1a64 hash;
  for (const StateTensor &t : stateTensors(session)) {
    std::vector<int64_t> shape = parameterLayout(session, *t.parameter).fullShape();
    hash.update(t.slot->name()->string_view());
    hash.update(uint64_t(t.slot->dtype()));
    hash.update(uint64_t(shape.size()));
    for (int64_t d : shape)
      hash.update(uint64_t(d));
  }
  return hexDigits(hash.value());
}

bool checkFinite(const std::string &path, const tgx::Slot &slot, const uint8_t *data,
                 std::size_t size, const std::string &advice, std::string &error) {
  int64_t index = findNonFinite(slot.dtype(), data, size);
  if (index < 0)
    return true;
  error = path + ": tensor '" + slot.name()->str() + "' holds a non-finite value (" +
          valueText(elementAt(slot.dtype(), data, index)) + " at element " +
          std::to_string(index) + ")" + advice;
  return false;
}

std::string otherProgramProblem(const tg_session &session) {
  return "the checkpoint belongs to a different program (other parameter names, dtypes or "
         "shapes than " + session.source + "); resume with the artifact that wrote it";
}

void restoreProgress(tg_session &session, int64_t steps, int64_t position,
                     int64_t *dataPosition) {
  session.stepsDone = steps;
  session.initialized = true;
  session.divergedAt = 0;
  if (dataPosition)
    *dataPosition = position;
}

std::string divergedAdvice(const tg_session &session) {
  return "; not written: training diverged after step " + std::to_string(session.stepsDone) +
         ", the previous checkpoint is kept";
}

std::string checkpointChecksum(const safetensors::File &file) {
  std::vector<const safetensors::Tensor *> tensors;
  for (const safetensors::Tensor &t : file.tensors)
    tensors.push_back(&t);
  std::sort(tensors.begin(), tensors.end(),
            [](auto *a, auto *b) { return a->name < b->name; });
  Fnv1a64 hash;
  for (const safetensors::Tensor *t : tensors) {
    hash.update(t->name);
    hash.update(safetensors::dtypeName(t->dtype));
    hash.update(uint64_t(t->shape.size()));
    for (int64_t d : t->shape)
      hash.update(uint64_t(d));
    hash.update(t->data.data(), t->data.size());
  }
  for (const auto &[key, value] : file.metadata)
    if (key != kChecksum) {
      hash.update(key);
      hash.update(value);
    }
  return hexDigits(hash.value());
}
} // namespace tg::runtime

using namespace tg::runtime;

extern "C" {

tg_status tg_session_save_checkpoint(const tg_session *session, const char *path,
                                     int64_t data_position) {
  return guarded("tg_session_save_checkpoint", [&](std::string &error) {
    return requireArgument(session, "tg_session_save_checkpoint", "session", error) &&
           requireArgument(path, "tg_session_save_checkpoint", "path", error) &&
           save(*session, path, data_position, error);
  });
}

tg_status tg_session_load_checkpoint(tg_session *session, const char *path,
                                     int64_t *data_position) {
  return guarded("tg_session_load_checkpoint", [&](std::string &error) {
    if (!requireArgument(session, "tg_session_load_checkpoint", "session", error) ||
        !requireArgument(path, "tg_session_load_checkpoint", "path", error))
      return false;
    bool ok = load(*session, path, data_position, error);
    if (!session->stateComm)
      return ok;
    // Each rank loads by itself; they agree before training on, so that a
    // rank that could not load stops them all here, named, rather than in
    // the first step's collective.
    std::string problem = error;
    std::vector<uint64_t> words;
    return everyRankSucceeded(*session, ok, 0, problem, std::string("loading checkpoint ") + path,
                              "no rank trains on from it", words, error);
  });
}

}
