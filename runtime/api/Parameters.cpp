// Parameters by Hugging Face name: their shapes, and reading and writing a
// whole tensor (what an embedding framework exchanges with the session).
#include "Session.h"

#include "Status.h"

#include <cstring>

namespace tg::runtime {
namespace {

constexpr std::string_view kPrefix = "transformer.";

/// The parameter called `name`, with or without the "transformer." prefix
/// GPT-2's Hugging Face names carry, or an error naming it.
const tgx::Parameter *findParameter(const tg_session &session, const char *api,
                                    std::string_view name, std::string &error) {
  for (const tgx::Parameter *p : *session.program->parameters()) {
    std::string_view own = p->name()->string_view();
    if (own == name || (own.substr(0, kPrefix.size()) == kPrefix &&
                        own.substr(kPrefix.size()) == name))
      return p;
  }
  error = std::string(api) + ": " + session.source + " has no parameter '" +
          std::string(name) + "'; tg_session_parameter_info lists them";
  return nullptr;
}

void describe(const tg_session &session, const tgx::Parameter &p, tg_parameter_info &out) {
  const tgx::Slot &slot = slotAt(session, p.slot());
  std::vector<int64_t> shape = parameterLayout(session, p).fullShape();
  out.name = p.name()->c_str();
  out.dtype = tg_dtype(slot.dtype());
  out.rank = int(shape.size());
  out.num_elements = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    out.shape[i] = shape[i];
    out.num_elements *= shape[i];
  }
  out.bytes = std::size_t(out.num_elements) * dtypeSize(slot.dtype());
}

/// The parameter `name`, when `bytes` is the size of its full tensor.
const tgx::Parameter *checked(const tg_session &session, const char *api, const char *name,
                              std::size_t bytes, std::string &error) {
  const tgx::Parameter *p = findParameter(session, api, name, error);
  if (!p)
    return nullptr;
  tg_parameter_info info;
  describe(session, *p, info);
  if (bytes != info.bytes) {
    error = std::string(api) + ": parameter '" + info.name + "' takes " +
            std::to_string(info.bytes) + " bytes (" + std::to_string(info.num_elements) +
            " elements of " + tgx::EnumNameDType(tgx::DType(info.dtype)) + "), not " +
            std::to_string(bytes);
    return nullptr;
  }
  return p;
}

bool getParameter(const tg_session &session, const char *name, void *out, std::size_t bytes,
                  std::string &error) {
  const tgx::Parameter *p = checked(session, "tg_session_get_parameter", name, bytes, error);
  if (!p)
    return false;
  safetensors::Tensor full;
  if (!gatherFullTensor(session, *p, slotAt(session, p->slot()), p->name()->str(), full, error))
    return false;
  if (writesFiles(session))
    std::memcpy(out, full.data.data(), bytes);
  return true;
}

bool setParameter(tg_session &session, const char *name, const void *data, std::size_t bytes,
                  std::string &error) {
  const char *api = "tg_session_set_parameter";
  const tgx::Parameter *p = checked(session, api, name, bytes, error);
  if (!p)
    return false;
  if (!session.initialized) {
    error = std::string(api) + ": initialise the parameters of " + session.source +
            " first (tg_session_init_random, tg_session_init_from_safetensors or "
            "tg_session_load_checkpoint), then replace some";
    return false;
  }
  const tgx::Slot &slot = slotAt(session, p->slot());
  auto *full = static_cast<const uint8_t *>(data);
  int64_t index = findNonFinite(slot.dtype(), full, bytes);
  if (index >= 0) {
    error = std::string(api) + ": parameter '" + p->name()->str() +
            "' would hold a non-finite value (" + valueText(elementAt(slot.dtype(), full, index)) +
            " at element " + std::to_string(index) + ")";
    return false;
  }
  return writeFullTensor(session, *p, slot, full, error);
}

} // namespace
} // namespace tg::runtime

using namespace tg::runtime;

extern "C" {

const char *tg_runtime_version(void) { return TG_VERSION; }

size_t tg_session_num_parameters(const tg_session *session) {
  return session ? session->program->parameters()->size() : 0;
}

tg_status tg_session_parameter_info(const tg_session *session, size_t index,
                                    tg_parameter_info *out) {
  return guarded("tg_session_parameter_info", [&](std::string &error) {
    if (!requireArgument(session, "tg_session_parameter_info", "session", error) ||
        !requireArgument(out, "tg_session_parameter_info", "out", error))
      return false;
    std::size_t count = session->program->parameters()->size();
    if (index >= count) {
      error = "tg_session_parameter_info: index " + std::to_string(index) + " is not below the " +
              std::to_string(count) + " parameters of " + session->source;
      return false;
    }
    describe(*session, *session->program->parameters()->Get(uint32_t(index)), *out);
    return true;
  });
}

tg_status tg_session_get_parameter(const tg_session *session, const char *name, void *out,
                                   size_t bytes) {
  return guarded("tg_session_get_parameter", [&](std::string &error) {
    return requireArgument(session, "tg_session_get_parameter", "session", error) &&
           requireArgument(name, "tg_session_get_parameter", "name", error) &&
           requireArgument(out, "tg_session_get_parameter", "out", error) &&
           getParameter(*session, name, out, bytes, error);
  });
}

tg_status tg_session_set_parameter(tg_session *session, const char *name, const void *data,
                                   size_t bytes) {
  return guarded("tg_session_set_parameter", [&](std::string &error) {
    return requireArgument(session, "tg_session_set_parameter", "session", error) &&
           requireArgument(name, "tg_session_set_parameter", "name", error) &&
           requireArgument(data, "tg_session_set_parameter", "data", error) &&
           setParameter(*session, name, data, bytes, error);
  });
}
}
