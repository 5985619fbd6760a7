// Weights in Hugging Face safetensors form: initialisation from a file and
// the final weights of a run.
#include "Session.h"
#include "Status.h"

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
  if (!safetensors::readFile(path, file, error))
    return false;
  // Check every tensor before writing any, so a failure leaves the session
  // as it was.
  std::vector<safetensors::Tensor> converted;
  for (const tgx::Parameter *p : *session.program->parameters()) {
    const tgx::Slot &slot = slotAt(session, p->slot());
    std::string name = p->name()->str();
    const safetensors::Tensor *t = findParameter(file, name);
    std::vector<int64_t> shape(slot.shape()->begin(), slot.shape()->end());
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
  }
  for (std::size_t i = 0; i < converted.size(); ++i) {
    const tgx::Slot &slot = slotAt(session, session.program->parameters()->Get(i)->slot());
    if (!writeSlot(session, slot, converted[i].data.data(), converted[i].data.size(), 0, error))
      return false;
  }
  return resetTraining(session, error);
}

bool saveWeights(const tg_session &session, const std::string &path, std::string &error) {
  safetensors::File file;
  file.metadata["format"] = "pt";
  for (const tgx::Parameter *p : *session.program->parameters()) {
    file.tensors.emplace_back();
    if (!slotTensor(session, slotAt(session, p->slot()), p->name()->str(),
                    file.tensors.back(), error))
      return false;
  }
  return safetensors::writeFile(path, file, error);
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
           saveWeights(*session, path, error);
  });
}

}
