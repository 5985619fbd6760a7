// Whether OpenBLAS runs the kernels this CPU can run. OpenBLAS's
// DYNAMIC_ARCH build picks its kernels for the CPU as it loads, by model
// number; a build older than the CPU does not know the model and falls back
// to its SSE3 kernels ("Prescott"): Debian 12's 0.3.21 on Intel's Emerald
// Rapids multiplies matrices 4-5x more slowly that way than with its AVX-512 kernels
// (docs/perf.md). OpenBLAS reads OPENBLAS_CORETYPE only as it loads, so the
// remedy is a process started with it set: tgrun re-executes itself so.
#include "tg/runtime/Backend.h"

#include <cblas.h>

#include <cstdlib>
#include <strings.h>

namespace tg::runtime {

namespace {
/// OpenBLAS's x86-64 cores without AVX2 (no 256-bit FMA): kernels a CPU
/// with AVX2 or AVX-512 outruns several times over.
bool lacksAvx2(const char *core) {
  for (const char *name : {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Atom",
                           "Nano", "Sandybridge", "Bobcat", "Barcelona", "Opteron",
                           "Opteron_SSE3", "Athlon", "Katmai", "Coppermine", "Northwood",
                           "Banias", "Unknown"})
    if (strcasecmp(core, name) == 0)
      return true;
  return false;
}
} // namespace

std::string betterBlasCore() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (std::getenv("OPENBLAS_CORETYPE"))
    return ""; // the user chose
  const char *core = openblas_get_corename();
  if (!core || !lacksAvx2(core))
    return "";
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    // What OpenBLAS itself falls back to for an AVX-512 CPU it does not know.
    return __builtin_cpu_supports("avx512bf16") ? "Cooperlake" : "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return "Haswell";
#endif
  return "";
}

} // namespace tg::runtime
