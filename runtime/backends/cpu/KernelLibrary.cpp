// Loading a shared object from memory. dlopen needs a path, so the image is
// written to an anonymous memfd and opened as /proc/self/fd/N; where memfds
// are unavailable, to an unlinked temporary file instead.
#include "KernelLibrary.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace tg::runtime {
namespace {

bool writeAll(int fd, const uint8_t *data, std::size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

/// dlopens `image` via a memfd, whose path it returns in `path`. The fd
/// stays open while the library is loaded: glibc finds loaded libraries by
/// path, so the fd number must not name another image meanwhile.
void *openViaMemfd(const flatbuffers::Vector<uint8_t> &image, int &memfd, std::string &path) {
  int fd = ::memfd_create("tg-kernels", MFD_CLOEXEC);
  if (fd < 0)
    return nullptr;
  if (!writeAll(fd, image.data(), image.size())) {
    ::close(fd);
    return nullptr;
  }
  path = "/proc/self/fd/" + std::to_string(fd);
  void *handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    ::close(fd);
    return nullptr;
  }
  memfd = fd;
  return handle;
}

/// dlopens `image` via a temporary file, removed again once loaded (the
/// unique name keeps glibc from confusing two images).
void *openViaTempFile(const flatbuffers::Vector<uint8_t> &image, std::string &error) {
  const char *dir = std::getenv("TMPDIR");
  std::string path = std::string(dir && *dir ? dir : "/tmp") + "/tg-kernels-XXXXXX";
  int fd = ::mkstemp(path.data());
  if (fd < 0) {
    error = "cannot create a temporary file in " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  bool written = writeAll(fd, image.data(), image.size());
  ::close(fd);
  void *handle = written ? ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL) : nullptr;
  if (!written)
    error = "cannot write " + path + ": " + std::strerror(errno);
  else if (!handle)
    error = std::string("the kernel library does not load: ") + ::dlerror();
  ::unlink(path.c_str());
  return handle;
}

} // namespace

std::unique_ptr<KernelLibrary> KernelLibrary::load(const tgx::KernelModule &module,
                                                   const std::string &what,
                                                   ParallelForFn parallelFor,
                                                   std::string &error) {
  if (module.format() != tgx::ModuleFormat_ElfSharedObject) {
    error = what + " holds " + tgx::EnumNameModuleFormat(module.format()) +
            " code, which the CPU backend cannot run; compile the model for the CPU";
    return nullptr;
  }
  std::unique_ptr<KernelLibrary> library(new KernelLibrary);
  library->handle = openViaMemfd(*module.image(), library->memfd, library->memfdPath);
  if (!library->handle) {
    std::string reason;
    library->handle = openViaTempFile(*module.image(), reason);
    if (!library->handle) {
      error = what + ": " + reason +
              "; the artifact is corrupt or was compiled for another system, "
              "re-compile the model with this tgc";
      return nullptr;
    }
  }
  for (const flatbuffers::String *name : *module.kernels()) {
    void *symbol = ::dlsym(library->handle, name->c_str());
    if (!symbol) {
      error = what + ": the kernel library has no symbol '" + name->str() +
              "'; the artifact is corrupt or inconsistent, re-compile the model with this tgc";
      return nullptr;
    }
    library->fns.push_back(reinterpret_cast<KernelFn>(symbol));
  }
  // A variable the library defines and the runtime sets, rather than a
  // runtime function the library imports: the image is loaded from memory,
  // sometimes where the runtime's symbols are not global (Python loads
  // libtg_runtime RTLD_LOCAL). The name is the compiler's kParallelForHook.
  if (void *hook = ::dlsym(library->handle, "tg_parallel_for_hook"))
    *static_cast<ParallelForFn *>(hook) = parallelFor;
  return library;
}

KernelLibrary::~KernelLibrary() {
  if (handle)
    ::dlclose(handle);
  if (memfd < 0)
    return;
  // A library linked with -z nodelete stays loaded after dlclose. Its fd
  // then stays open too (leaked, like the mapping): closed, its number could
  // be reused for a later image, which dlopen would resolve to this one.
  if (void *resident = ::dlopen(memfdPath.c_str(), RTLD_NOW | RTLD_NOLOAD)) {
    ::dlclose(resident);
    return;
  }
  ::close(memfd);
}

} // namespace tg::runtime
