// tg_status objects, and the wrapper that turns an internal call's failure
// (or an escaping C++ exception) into one, so nothing but a status crosses
// the C API.
#ifndef TG_RUNTIME_API_STATUS_H
#define TG_RUNTIME_API_STATUS_H

#include "tg/runtime/tg_runtime.h"

#include <new>
#include <stdexcept>
#include <string>

struct tg_status_s {
  std::string message;
};

namespace tg::runtime {

/// A status carrying `message`; never null (falls back to a static
/// out-of-memory status when even that cannot be allocated).
tg_status makeStatus(std::string message) noexcept;

/// Runs `body(std::string &error) -> bool`: null when it succeeds, otherwise
/// a status with its error. `function` names the API call for failures that
/// carry no message of their own.
template <typename Body>
tg_status guarded(const char *function, Body &&body) noexcept {
  try {
    std::string error;
    if (body(error))
      return nullptr;
    return makeStatus(error.empty() ? std::string(function) + " failed" : error);
  } catch (const std::bad_alloc &) {
    return makeStatus(std::string(function) + ": out of memory");
  } catch (const std::exception &e) {
    return makeStatus(std::string(function) + ": " + e.what());
  }
}

} // namespace tg::runtime

#endif
