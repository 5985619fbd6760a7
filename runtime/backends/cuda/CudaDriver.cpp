#include "CudaDriver.h"

#include "LoadOnce.h"

#include <dlfcn.h>

namespace tg::runtime::cuda {

#define TG_CUDA_STRINGIFY_EXPANDED(name) TG_CUDA_STRINGIFY(name)
#define TG_CUDA_STRINGIFY(name) #name

static bool loadDriver(Driver &driver, std::string &error) {
  void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *reason = dlerror();
    error = std::string("libcuda.so.1 (the NVIDIA driver) cannot be loaded: ") +
            (reason ? reason : "not found");
    return false;
  }
#define TG_CUDA_RESOLVE(name)                                                   \
  driver.name = reinterpret_cast<decltype(driver.name)>(                       \
      dlsym(library, TG_CUDA_STRINGIFY_EXPANDED(name)));                       \
  if (!driver.name) {                                                          \
    error = "the NVIDIA driver lacks " TG_CUDA_STRINGIFY_EXPANDED(             \
        name) ": update the driver (CUDA 12.8 or later is needed)";            \
    return false;                                                              \
  }
  TG_CUDA_DRIVER_FUNCTIONS(TG_CUDA_RESOLVE)
#undef TG_CUDA_RESOLVE
  return true;
}

const Driver *Driver::get(std::string &error) { return loadOnce(loadDriver, error); }

std::string Driver::errorText(const char *call, CUresult result) const {
  const char *name = nullptr, *text = nullptr;
  cuGetErrorName(result, &name);
  cuGetErrorString(result, &text);
  return std::string(call) + " failed: " + (name ? name : "CUDA error " + std::to_string(result)) +
         (text ? std::string(" (") + text + ")" : "");
}

} // namespace tg::runtime::cuda
