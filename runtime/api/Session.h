// The session object behind the C API, and the slot I/O that the
// initialisation, weights and checkpoint files share.
#ifndef TG_RUNTIME_API_SESSION_H
#define TG_RUNTIME_API_SESSION_H

#include "tg/runtime/Backend.h"
#include "tg/runtime/Safetensors.h"
#include "tg/runtime/tg_runtime.h"

#include <memory>
#include <string>
#include <vector>

struct tg_session_s {
  std::string source;         // the artifact's name in messages
  std::vector<uint8_t> bytes; // the verified artifact; `program` points into it
  const tg::tgx::Program *program = nullptr;
  std::unique_ptr<tg::runtime::Backend> backend;
  // The interface slots every verified program has.
  const tg::tgx::Slot *stepSlot = nullptr, *tokens = nullptr, *targets = nullptr,
                      *loss = nullptr, *gradNorm = nullptr, *lr = nullptr;
  int64_t stepsDone = 0;
  // Set by init_random, init_from_safetensors and load_checkpoint; a step
  // on uninitialised parameters is refused.
  bool initialized = false;
};

namespace tg::runtime {

const tgx::Slot &slotAt(const tg_session &session, uint32_t index);
safetensors::DType toSafetensors(tgx::DType dtype);

/// The bytes of `slot`.
bool readSlot(const tg_session &session, const tgx::Slot &slot,
              std::vector<uint8_t> &out, std::string &error);
/// `slot` as a safetensors tensor called `name`.
bool slotTensor(const tg_session &session, const tgx::Slot &slot,
                std::string name, safetensors::Tensor &out, std::string &error);
/// Overwrites `slot` with `size` bytes (at most its range) from `data`,
/// starting `byteOffset` bytes into it.
bool writeSlot(tg_session &session, const tgx::Slot &slot, const void *data,
               uint64_t size, uint64_t byteOffset, std::string &error);

/// After new parameters: zero AdamW moments, no steps taken.
bool resetTraining(tg_session &session, std::string &error);

/// Fails with a message naming `function` when `pointer` is null.
bool requireArgument(const void *pointer, const char *function,
                     const char *argument, std::string &error);

} // namespace tg::runtime

#endif
