// A library API table (function pointers filled from dlopen) loaded once per
// process: the first caller runs `load`, every later one gets the same table
// or the same error.
#ifndef TG_RUNTIME_CUDA_LOADONCE_H
#define TG_RUNTIME_CUDA_LOADONCE_H

#include <mutex>
#include <string>

namespace tg::runtime::cuda {

template <typename Api>
const Api *loadOnce(bool (*load)(Api &api, std::string &error), std::string &error) {
  static Api api;
  static std::string loadError;
  static std::once_flag once;
  static bool loaded = false;
  std::call_once(once, [&] { loaded = load(api, loadError); });
  if (!loaded) {
    error = loadError;
    return nullptr;
  }
  return &api;
}

} // namespace tg::runtime::cuda

#endif
