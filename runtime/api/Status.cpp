#include "Status.h"

namespace tg::runtime {
namespace {
// Returned when allocating a status fails; tg_status_free leaves it alone.
tg_status_s outOfMemory{"out of memory"};
} // namespace

tg_status makeStatus(std::string message) noexcept {
  try {
    return new tg_status_s{std::move(message)};
  } catch (...) {
    return &outOfMemory;
  }
}

} // namespace tg::runtime

extern "C" {

const char *tg_status_message(tg_status status) {
  return status ? status->message.c_str() : "ok";
}

void tg_status_free(tg_status status) {
  if (status != &tg::runtime::outOfMemory)
    delete status;
}

}
