// Weights in Hugging Face safetensors form: initialisation from a file and
// the final weights of a run.
#include "Session.h"
#include "Status.h"

#include <cmath>

namespace tg::runtime {
namespace {

constexpr std::string_view kPrefix = "transformer.";

/// The tensor for parameter `name` in `file`: HF GPT-2 files name it with or
/// without the "transformer." prefix (GPT2Model vs GPT2LMHeadModel).
const safetensors::Tensor *findParameter(const safetensors::File &file,
                                         std::string_view name) {
  if (const safetensors::Tensor *t = file.find(name))
    return t;
  if (name.substr(0, kPrefix.size()) == kPrefix)
    return file.find(name.substr(kPrefix.size()));
  return file.find(std::string(kPrefix) + std::string(name));
}

bool initFromFile(tg_session &session, const std::string &path, std::string &error) {
  safetensors::File file;
  if (!safetensors::readWeights(path, file, error))
    return false;
  // Check every tensor before writing any, so a failure leaves the session
  // as it was. The file holds full tensors; a sharded parameter takes this
  // rank's part. Every rank reads the same file, so all fail alike.
  std::vector<safetensors::Tensor> converted;
  for (const tgx::Parameter *p : *session.program->parameters()) {
    const tgx::Slot &slot = slotAt(session, p->slot());
    std::string name = p->name()->str();
    const safetensors::Tensor *t = findParameter(file, name);
    std::vector<int64_t> shape = parameterLayout(session, *p).fullShape();
    if (!t) {
      error = path + ": tensor '" + name +
              "' is missing; pass weights of the model this program was compiled from";
      return false;
    }
    if (t->shape != shape || !safetensors::isFloat(t->dtype)) {
      error = path + ": tensor '" + t->name + "' is " + safetensors::dtypeName(t->dtype) +
              " " + safetensors::shapeToString(t->shape) + " but the program needs a float " +
              safetensors::shapeToString(shape) +
              "; pass weights of the model this program was compiled from";
      return false;
    }
    safetensors::DType dtype = toSafetensors(slot.dtype());
    converted.push_back(t->dtype == dtype
                            ? *t
                            : safetensors::fromDoubles(name, dtype, shape,
                                                       safetensors::toDoubles(*t)));
    // NaN or infinite weights would train to NaN without a word.
    const std::vector<uint8_t> &data = converted.back().data;
    int64_t index = findNonFinite(slot.dtype(), data.data(), data.size());
    if (index >= 0) {
      double original = safetensors::toDoubles(*t)[std::size_t(index)];
      error = path + ": tensor '" + t->name + "' holds a non-finite value (" +
              valueText(original) + " at element " + std::to_string(index) + ")";
      if (std::isfinite(original))
        error += std::string(", which overflows ") + safetensors::dtypeName(dtype);
      error += "; pass weights with finite values";
      return false;
    }
  }
  for (std::size_t i = 0; i < converted.size(); ++i) {
    const tgx::Parameter &p = *session.program->parameters()->Get(uint32_t(i));
    if (!writeFullTensor(session, p, slotAt(session, p.slot()), converted[i].data.data(), error))
      return false;
  }
  return resetTraining(session, error);
}

/// A collective in multi-rank programs: rank 0 writes the full tensors,
/// which the other ranks help gather (they return once they have).
bool saveWeights(const tg_session &session, const std::string &path, uint64_t maxShardBytes,
                 std::string &error) {
  safetensors::File file;
  file.metadata["format"] = "pt";
  // The loss is the run's, so every rank knows and all stop here alike.
  if (session.divergedAt) {
    error = path + ": not written: the training state of " + session.source +
            " went non-finite at step " + std::to_string(session.divergedAt);
    return false;
  }
  for (const tgx::Parameter *p : *session.program->parameters()) {
    file.tensors.emplace_back();
    if (!gatherFullTensor(session, *p, slotAt(session, p->slot()), p->name()->str(),
                          file.tensors.back(), error))
      return false;
  }
  if (!writesFiles(session))
    return true;
  for (uint32_t i = 0; i < file.tensors.size(); ++i) {
    tgx::DType dtype = slotAt(session, session.program->parameters()->Get(i)->slot()).dtype();
    const safetensors::Tensor &t = file.tensors[i];
    int64_t index = findNonFinite(dtype, t.data.data(), t.data.size());
    if (index >= 0) {
      error = path + ": not written: parameter '" + t.name + "' holds a non-finite value (" +
              valueText(elementAt(dtype, t.data.data(), index)) + " at element " +
              std::to_string(index) + "); training diverged";
      return false;
    }
  }
  std::vector<std::string> written;
  return safetensors::writeWeights(path, file, maxShardBytes, written, error);
}

} // namespace
} // namespace tg::runtime

using namespace tg::runtime;

extern "C" {

tg_status tg_session_init_from_safetensors(tg_session *session, const char *path) {
  return guarded("tg_session_init_from_safetensors", [&](std::string &error) {
    return requireArgument(session, "tg_session_init_from_safetensors", "session", error) &&
           requireArgument(path, "tg_session_init_from_safetensors", "path", error) &&
           initFromFile(*session, path, error);
  });
}

tg_status tg_session_save_weights(const tg_session *session, const char *path) {
  return guarded("tg_session_save_weights", [&](std::string &error) {
    return requireArgument(session, "tg_session_save_weights", "session", error) &&
           requireArgument(path, "tg_session_save_weights", "path", error) &&
           saveWeights(*session, path, TG_DEFAULT_MAX_SHARD_BYTES, error);
  });
}

tg_status tg_session_save_weights_sharded(const tg_session *session, const char *path,
                                          uint64_t max_shard_bytes) {
  return guarded("tg_session_save_weights_sharded", [&](std::string &error) {
    if (!requireArgument(session, "tg_session_save_weights_sharded", "session", error) ||
        !requireArgument(path, "tg_session_save_weights_sharded", "path", error))
      return false;
    if (max_shard_bytes == 0) {
      error = "tg_session_save_weights_sharded: max_shard_bytes must be > 0";
      return false;
    }
    return saveWeights(*session, path, max_shard_bytes, error);
  });
}

}
