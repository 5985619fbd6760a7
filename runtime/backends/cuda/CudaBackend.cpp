#include "CudaBackend.h"

#include "AttentionKernels.h"
#include "CublasLt.h"
#include "CudaDriver.h"
#ifdef TG_HAVE_CUDNN
#include "CudnnAttention.h"
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

namespace tg::runtime {
namespace {

using cuda::Driver;
using cuda::KernelLaunch;

/// cuBLASLt's workspace: enough for its split-K and stream-K kernels.
constexpr size_t kGemmWorkspaceBytes = 32 << 20;
/// TG_CUDA_GEMM_AUTOTUNE=N times up to N of cuBLASLt's algorithms for each
/// GEMM shape at load and keeps the fastest (0 or 1: the heuristic's first).
constexpr int kMaxGemmCandidates = 64;
/// Uploads up to this size (tokens, targets, the step number) go through
/// pinned memory, asynchronously on the compute stream.
constexpr size_t kStagingBytes = 8 << 20;

struct Step {
  tgx::CommandKind kind;
  unsigned stream = 0;
  std::vector<CUdeviceptr> buffers;
  std::vector<void *> params; // cuLaunchKernel's argument list: &buffers[i],
                              // or &*attention
  std::vector<KernelLaunch> launches;
  std::unique_ptr<flash::Params> attention;
#ifdef TG_HAVE_CUDNN
  int cudnnPlan = -1;
  std::unique_ptr<cuda::CudnnAttention::Execution> cudnn;
#endif
  int gemmPlan = -1;
  uint64_t copyBytes = 0;
  std::vector<unsigned> awaitEvents; // of commands on other streams
  bool signals = false;              // a command on another stream awaits it
};

class CudaBackend final : public Backend {
public:
  ~CudaBackend() override {
    if (!driver)
      return;
    for (CUstream s : streams)
      driver->cuStreamSynchronize(s);
    if (graphExec)
      driver->cuGraphExecDestroy(graphExec);
    if (graph)
      driver->cuGraphDestroy(graph);
    for (std::vector<CUevent> *events : {&done, &profileStart, &profileEnd, &joins})
      for (CUevent e : *events)
        if (e)
          driver->cuEventDestroy(e);
    if (fork)
      driver->cuEventDestroy(fork);
    if (stagingFree)
      driver->cuEventDestroy(stagingFree);
    gemms.reset();
    attentionKernels.reset();
#ifdef TG_HAVE_CUDNN
    for (Step &step : steps)
      step.cudnn.reset();
    cudnn.reset();
    if (cudnnWorkspace)
      driver->cuMemFree(cudnnWorkspace);
#endif
    for (CUstream s : streams)
      driver->cuStreamDestroy(s);
    for (CUmodule m : modules)
      driver->cuModuleUnload(m);
    if (staging)
      driver->cuMemFreeHost(staging);
    for (CUdeviceptr workspace : gemmWorkspaces)
      if (workspace)
        driver->cuMemFree(workspace);
    if (arena)
      driver->cuMemFree(arena);
    if (context)
      driver->cuDevicePrimaryCtxRelease(device);
  }

  bool load(const tgx::Program &program, const std::string &sourceName, std::string &error) {
    source = sourceName;
    if (!readGemmCandidates(error) || !readFlashBackward(error))
      return false;
    std::string chip = program.target_cpu() ? program.target_cpu()->str() : "";
    if (chip.rfind("sm_", 0) != 0 || std::atoi(chip.c_str() + 3) < 10) {
      error = source + ": the program was compiled for CUDA but names the chip '" + chip +
              "' (target_cpu), not sm_NN: the artifact is corrupt; recompile it";
      return false;
    }
    for (uint32_t i = 0; i < program.modules()->size(); ++i)
      if (program.modules()->Get(i)->format() != tgx::ModuleFormat_Ptx) {
        error = source + ": modules[" + std::to_string(i) + "] holds " +
                tgx::EnumNameModuleFormat(program.modules()->Get(i)->format()) +
                " code, which the CUDA backend cannot run";
        return false;
      }
    driver = Driver::get(error);
    if (!driver) {
      error = source + ": the program was compiled for CUDA (" + chip +
              ") and needs an NVIDIA GPU with its driver, but " + error +
              ". Run it on a GPU machine, or compile the model for the CPU "
              "(tgc compile ... --target cpu)";
      return false;
    }
    if (CUresult r = driver->cuInit(0)) {
      error = source + ": the program was compiled for CUDA (" + chip +
              ") but the CUDA driver does not start (" + driver->errorText("cuInit", r) + ")" +
              (r == CUDA_ERROR_STUB_LIBRARY
                   ? ": the CUDA toolkit's stub libcuda was loaded instead of the "
                     "driver's; remove its folder (lib64/stubs) from LD_LIBRARY_PATH"
                   : ": check that nvidia-smi sees the GPU");
      return false;
    }
    int count = 0;
    if (!check("cuDeviceGetCount", driver->cuDeviceGetCount(&count), error))
      return false;
    int ordinal = 0;
    if (const char *env = std::getenv("TG_CUDA_DEVICE"))
      ordinal = std::atoi(env);
    if (count == 0 || ordinal < 0 || ordinal >= count) {
      error = source + ": the program was compiled for CUDA (" + chip + ") but " +
              (count == 0 ? "this machine has no CUDA device"
                          : "TG_CUDA_DEVICE=" + std::to_string(ordinal) + " is not one of its " +
                                std::to_string(count) + " devices");
      return false;
    }
    if (!check("cuDeviceGet", driver->cuDeviceGet(&device, ordinal), error) ||
        !checkChip(chip, error) ||
        !check("cuDevicePrimaryCtxRetain", driver->cuDevicePrimaryCtxRetain(&context, device),
               error) ||
        !check("cuCtxSetCurrent", driver->cuCtxSetCurrent(context), error))
      return false;
    if (!allocate(program, error) || !loadModules(program, error) ||
        !planCommands(program, error))
      return false;
    if (gemmCandidates > 1 && gemms && !tuneGemms(program, error))
      return false;
    // cuDNN's trial runs and the GEMM tuning wrote into the arena.
    if (arenaWritten && !(synchronize(error) && clearArena(program, error)))
      return false;
    const char *graphs = std::getenv("TG_CUDA_GRAPHS");
    useGraph = !(graphs && std::strcmp(graphs, "0") == 0);
    return true;
  }

  bool write(uint64_t offset, const void *src, uint64_t size, std::string &error) override {
    if (size <= kStagingBytes) {
      // The previous upload from the staging buffer must have left it.
      if (!check("cuEventSynchronize", driver->cuEventSynchronize(stagingFree), error))
        return false;
      std::memcpy(staging, src, size);
      return check("cuMemcpyHtoDAsync",
                   driver->cuMemcpyHtoDAsync(arena + offset, staging, size, streams[0]),
                   error) &&
             check("cuEventRecord", driver->cuEventRecord(stagingFree, streams[0]), error);
    }
    // From pageable memory the copy may return before its DMA has landed;
    // the step's streams do not wait for the legacy stream it runs on.
    return synchronize(error) &&
           check("cuMemcpyHtoD", driver->cuMemcpyHtoD(arena + offset, src, size), error) &&
           check("cuStreamSynchronize", driver->cuStreamSynchronize(nullptr), error);
  }

  bool read(uint64_t offset, void *dst, uint64_t size, std::string &error) const override {
    return synchronize(error) &&
           check("cuMemcpyDtoH", driver->cuMemcpyDtoH(dst, arena + offset, size), error);
  }

  bool run(std::string &error) override {
    // The first step runs command by command, so that libraries finish their
    // lazy set-up (cuDNN's first execution of a plan) outside a capture;
    // later steps replay the captured graph.
    if (!useGraph || !ranOnce) {
      ranOnce = true;
      return enqueue(false, error) && synchronize(error);
    }
    if (!graphExec && !capture(error))
      return false;
    return check("cuGraphLaunch", driver->cuGraphLaunch(graphExec, streams[0]), error) &&
           synchronize(error);
  }

  bool runProfiled(std::vector<double> &start, std::vector<double> &seconds,
                   std::string &error) override {
    if (profileStart.empty()) {
      profileStart.resize(steps.size());
      profileEnd.resize(steps.size());
      for (size_t i = 0; i < steps.size(); ++i)
        if (!check("cuEventCreate", driver->cuEventCreate(&profileStart[i], CU_EVENT_DEFAULT),
                   error) ||
            !check("cuEventCreate", driver->cuEventCreate(&profileEnd[i], CU_EVENT_DEFAULT),
                   error))
          return false;
    }
    // Profiled steps are issued command by command (events in a replayed
    // graph would time the graph, not the commands).
    if (!enqueue(true, error) || !synchronize(error))
      return false;
    start.assign(steps.size(), 0);
    seconds.assign(steps.size(), 0);
    for (size_t i = 0; i < steps.size(); ++i) {
      float fromFirst = 0, duration = 0;
      if (!check("cuEventElapsedTime",
                 driver->cuEventElapsedTime(&fromFirst, profileStart[0], profileStart[i]),
                 error) ||
          !check("cuEventElapsedTime",
                 driver->cuEventElapsedTime(&duration, profileStart[i], profileEnd[i]), error))
        return false;
      start[i] = fromFirst * 1e-3;
      seconds[i] = duration * 1e-3;
    }
    return true;
  }

private:
  /// "SOURCE: commands[I] (LABEL)", which an error about command `index`
  /// starts with.
  std::string commandName(const tgx::Program &program, size_t index, const char *kind) const {
    const tgx::Command &c = *program.commands()->Get(uint32_t(index));
    return source + ": commands[" + std::to_string(index) + "] (" +
           (c.label() ? c.label()->str() : kind) + ")";
  }

  bool check(const char *call, CUresult result, std::string &error) const {
    if (result == CUDA_SUCCESS)
      return true;
    error = source + ": " + driver->errorText(call, result);
    return false;
  }

  /// PTX for sm_90a uses Hopper-only instructions: it runs on compute
  /// capability 9.0 exactly; plain sm_XY PTX runs on XY and later.
  bool checkChip(const std::string &chip, std::string &error) {
    int major = 0, minor = 0;
    if (!check("cuDeviceGetAttribute",
               driver->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                            device),
               error) ||
        !check("cuDeviceGetAttribute",
               driver->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                            device),
               error))
      return false;
    int have = major * 10 + minor;
    int want = chip.size() > 3 ? std::atoi(chip.c_str() + 3) : 0;
    bool archSpecific = !chip.empty() && chip.back() == 'a';
    if (want == 0 || (archSpecific ? have != want : have < want)) {
      char name[256] = {0};
      driver->cuDeviceGetName(name, sizeof(name) - 1, device);
      error = source + ": the program was compiled for " + chip + " but the GPU is a " + name +
              " (sm_" + std::to_string(have) + "); recompile with tgc compile ... --target cuda "
              "--cuda-arch sm_" + std::to_string(have);
      return false;
    }
    return true;
  }

  bool allocate(const tgx::Program &program, std::string &error) {
    uint64_t bytes = std::max<uint64_t>(program.arena_bytes(), 1);
    if (CUresult r = driver->cuMemAlloc(&arena, bytes)) {
      error = source + ": cannot allocate the arena of " + std::to_string(bytes) +
              " bytes on the GPU (" + driver->errorText("cuMemAlloc", r) +
              "); use a smaller batch or a larger GPU";
      return false;
    }
    if (!clearArena(program, error))
      return false;
    unsigned streamCount = 1;
    for (const tgx::Command *c : *program.commands())
      streamCount = std::max(streamCount, c->stream() + 1);
    streams.resize(streamCount);
    for (CUstream &s : streams)
      if (!check("cuStreamCreate", driver->cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), error))
        return false;
    return check("cuMemAllocHost", driver->cuMemAllocHost(&staging, kStagingBytes), error) &&
           check("cuEventCreate", driver->cuEventCreate(&stagingFree, CU_EVENT_DISABLE_TIMING),
                 error) &&
           check("cuEventRecord", driver->cuEventRecord(stagingFree, streams[0]), error);
  }

  /// The arena as a run starts it: zeros, and the program's constants.
  bool clearArena(const tgx::Program &program, std::string &error) {
    uint64_t bytes = std::max<uint64_t>(program.arena_bytes(), 1);
    if (!check("cuMemsetD8", driver->cuMemsetD8(arena, 0, bytes), error))
      return false;
    for (const tgx::Constant *c : *program.constants())
      if (!check("cuMemcpyHtoD",
                 driver->cuMemcpyHtoD(arena + c->range()->offset(), c->data()->data(),
                                      c->data()->size()),
                 error))
        return false;
    // Both ran on the legacy default stream and may still be running; the
    // backend's streams do not wait for it, so an upload on one of them could
    // land before the memset passes over it.
    return check("cuStreamSynchronize", driver->cuStreamSynchronize(nullptr), error);
  }

  bool readGemmCandidates(std::string &error) {
    const char *env = std::getenv("TG_CUDA_GEMM_AUTOTUNE");
    if (!env || !*env)
      return true;
    char *end = nullptr;
    long n = std::strtol(env, &end, 10);
    if (*end || n < 0 || n > kMaxGemmCandidates) {
      error = source + ": TG_CUDA_GEMM_AUTOTUNE is '" + env +
              "': set it to how many of cuBLASLt's algorithms to time for each GEMM shape, "
              "a whole number from 0 to " +
              std::to_string(kMaxGemmCandidates) + " (8, say; 0 or 1: no tuning)";
      return false;
    }
    gemmCandidates = int(std::max(n, 1L));
    return true;
  }

  /// TG_CUDA_FLASH_BACKWARD: `summed` has the flash kernels' backward add
  /// dQ to an f32 sum from its key blocks (one kernel fewer, 5 products a
  /// tile instead of 7, atomics); unset or `deterministic`, dQ is a kernel
  /// of its own and every run gives the same bits.
  bool readFlashBackward(std::string &error) {
    const char *env = std::getenv("TG_CUDA_FLASH_BACKWARD");
    if (!env || !*env || std::strcmp(env, "deterministic") == 0)
      return true;
    if (std::strcmp(env, "summed") != 0) {
      error = source + ": TG_CUDA_FLASH_BACKWARD is '" + env +
              "': set it to 'summed' (the query gradients added up atomically by the key "
              "blocks: fewer matrix products, not bitwise reproducible) or 'deterministic' "
              "(the default)";
      return false;
    }
    sumQueryGrads = true;
    return true;
  }

  /// Times each GEMM shape's candidate algorithms on the buffers of its
  /// first command and keeps the fastest (the arena the calls wrote into is
  /// cleared by load). Says what it found on stderr: tuning is opt-in, and
  /// a run tuned anew may round differently from the last.
  bool tuneGemms(const tgx::Program &program, std::string &error) {
    std::map<int, std::pair<size_t, int>> commandsOf; // plan: its first step, its count
    for (size_t i = 0; i < steps.size(); ++i)
      if (steps[i].kind == tgx::CommandKind_Gemm && steps[i].gemmPlan >= 0) {
        auto [at, added] = commandsOf.try_emplace(steps[i].gemmPlan, i, 0);
        ++at->second.second;
      }
    auto began = std::chrono::steady_clock::now();
    int timed = 0, changed = 0, changedCommands = 0, split = 0;
    double savedSeconds = 0, stepSeconds = 0;
    for (auto [plan, first] : commandsOf) {
      auto [step, count] = first;
      cuda::Gemms::Timing timing;
      // Timed alone, on stream 0, with the workspace of the stream it runs on.
      if (!gemms->tune(*driver, plan, steps[step].buffers, gemmWorkspaces[steps[step].stream],
                       streams[0], timing, error)) {
        error = commandName(program, step, "gemm") + ": " + error;
        return false;
      }
      timed += timing.timed > 1;
      stepSeconds += timing.firstSeconds * count;
      if (timing.changed) {
        ++changed;
        split += timing.keptSplits > 1;
        changedCommands += count;
        savedSeconds += (timing.firstSeconds - timing.keptSeconds) * count;
      }
    }
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    std::fprintf(stderr,
                 "%s: GEMM autotuning (TG_CUDA_GEMM_AUTOTUNE=%d): %zu shapes, %d with more than "
                 "one algorithm to time; %d now run another than cuBLASLt's first choice "
                 "(%d of them split over K): %.3f ms less a step over their %d commands, of "
                 "%.3f ms in all GEMMs timed (tuning took %.2f s)\n",
                 source.c_str(), gemmCandidates, commandsOf.size(), timed, changed, split,
                 savedSeconds * 1e3, changedCommands, stepSeconds * 1e3, took);
    arenaWritten = true;
    return true;
  }

  bool loadModules(const tgx::Program &program, std::string &error) {
    for (uint32_t i = 0; i < program.modules()->size(); ++i) {
      const tgx::KernelModule &m = *program.modules()->Get(i);
      // The driver reads PTX as a NUL-terminated string.
      std::string ptx(reinterpret_cast<const char *>(m.image()->data()), m.image()->size());
      char log[8192] = {0};
      CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
      void *values[] = {log, reinterpret_cast<void *>(uintptr_t(sizeof(log) - 1))};
      CUmodule module = nullptr;
      if (CUresult r = driver->cuModuleLoadDataEx(&module, ptx.c_str(), 2, options, values)) {
        error = source + ": modules[" + std::to_string(i) + "]: the driver rejects the PTX (" +
                driver->errorText("cuModuleLoadDataEx", r) + ")" + (log[0] ? ": " : "") + log;
        return false;
      }
      modules.push_back(module);
      std::vector<std::vector<KernelLaunch>> &kernels = launchesOf.emplace_back();
      uint32_t next = 0;
      for (uint32_t count : *m.kernel_launch_counts()) {
        std::vector<KernelLaunch> &launches = kernels.emplace_back();
        for (uint32_t j = 0; j < count; ++j, ++next) {
          const tgx::KernelLaunch &l = *m.launches()->Get(next);
          KernelLaunch launch{nullptr, l.grid(), 1, l.block(), l.shared_bytes()};
          if (CUresult r = driver->cuModuleGetFunction(&launch.function, module,
                                                       l.function()->c_str())) {
            error = source + ": modules[" + std::to_string(i) + "] has no entry '" +
                    l.function()->str() + "' (" + driver->errorText("cuModuleGetFunction", r) +
                    ")";
            return false;
          }
          launches.push_back(launch);
        }
      }
    }
    return true;
  }

  bool planCommands(const tgx::Program &program, std::string &error) {
    auto commands = program.commands();
    steps.resize(commands->size());
    done.assign(commands->size(), nullptr);
    for (uint32_t i = 0; i < commands->size(); ++i) {
      const tgx::Command &c = *commands->Get(i);
      Step &step = steps[i];
      step.kind = c.kind();
      step.stream = c.stream();
      for (const tgx::BufferRange *r : *c.operands())
        step.buffers.push_back(arena + r->offset());
      for (CUdeviceptr &b : step.buffers)
        step.params.push_back(&b);
      if (c.awaits())
        for (uint32_t awaited : *c.awaits())
          if (steps[awaited].stream != step.stream) {
            step.awaitEvents.push_back(awaited);
            steps[awaited].signals = true;
          }
      switch (c.kind()) {
      case tgx::CommandKind_Kernel:
        step.launches = launchesOf[c.module_()][c.kernel()];
        break;
      case tgx::CommandKind_Gemm:
        if (!gemms) {
          gemms = cuda::Gemms::create(kGemmWorkspaceBytes, gemmCandidates, error);
          if (!gemms) {
            error = source + ": " + error;
            return false;
          }
        }
        // A workspace for each stream GEMMs run on: GEMMs of two streams
        // may run at once (exec-stream-weight-gradients).
        gemmWorkspaces.resize(streams.size(), 0);
        if (!gemmWorkspaces[step.stream] &&
            !check("cuMemAlloc",
                   driver->cuMemAlloc(&gemmWorkspaces[step.stream], kGemmWorkspaceBytes), error))
          return false;
        step.gemmPlan = gemms->plan(*c.gemm(), step.buffers, error);
        if (step.gemmPlan < 0) {
          error = commandName(program, i, "gemm") + ": " + error;
          return false;
        }
        break;
      case tgx::CommandKind_Copy:
        step.copyBytes = c.operands()->Get(0)->size();
        break;
      case tgx::CommandKind_Attention:
        if (c.attention()->library() == tgx::AttentionLibrary_Cudnn && planCudnn(c, step))
          break;
        if (!planOwnAttention(program, i, step, error))
          return false;
        break;
      default: // Collective: multi-GPU programs are refused in createBackend
        error = source + ": commands[" + std::to_string(i) +
                "] is a collective, which the CUDA backend cannot run yet (no NCCL)";
        return false;
      }
    }
    if (!bindCudnn(program, error))
      return false;
    for (size_t i = 0; i < steps.size(); ++i)
      if (steps[i].signals &&
          !check("cuEventCreate", driver->cuEventCreate(&done[i], CU_EVENT_DISABLE_TIMING), error))
        return false;
    joins.assign(streams.size(), nullptr);
    for (CUevent &e : joins)
      if (!check("cuEventCreate", driver->cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), error))
        return false;
    return check("cuEventCreate", driver->cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING), error);
  }

  /// Plans Attention command `index` on the runtime's own flash kernels.
  bool planOwnAttention(const tgx::Program &program, size_t index, Step &step, std::string &error) {
    const tgx::Command &c = *program.commands()->Get(uint32_t(index));
    auto fail = [&] {
      error = commandName(program, index, "attention") + ": " + error;
      return false;
    };
    if (!attentionKernels && !(attentionKernels = cuda::AttentionKernels::load(*driver, error)))
      return fail();
    step.attention = std::make_unique<flash::Params>();
    // The query gradients' sum is one for all commands: those of stream 0,
    // which run one at a time.
    step.launches = attentionKernels->plan(
        *c.attention(), step.buffers, sumQueryGrads && c.stream() == 0, *step.attention, error);
    if (step.launches.empty())
      return fail();
    step.params = {step.attention.get()};
    return true;
  }

  /// Plans an Attention command compiled for cuDNN's fused attention; false
  /// where cuDNN cannot take it (not installed, a graph no engine takes), the
  /// reason kept for the warning bindCudnn prints: the runtime's own kernels
  /// compute it then.
  bool planCudnn(const tgx::Command &c, Step &step) {
    std::string why;
#ifdef TG_HAVE_CUDNN
    why = cuda::CudnnAttention::refusal(*c.attention());
    // One workspace, used in command order: stream 0's.
    if (why.empty() && c.stream() != 0)
      why = "it runs on stream " + std::to_string(c.stream()) + ", not cuDNN's stream 0";
    // cuDNN's tensors are declared 16-byte aligned.
    for (CUdeviceptr address : step.buffers)
      if (why.empty() && address % 16 != 0)
        why = "an operand is not 16-byte aligned";
    if (why.empty() && !cudnn && cudnnUnavailable.empty()) // loaded once, or not at all
      cudnn = cuda::CudnnAttention::load(*driver, cudnnUnavailable);
    if (why.empty() && !cudnn)
      why = cudnnUnavailable;
    if (why.empty()) {
      step.cudnnPlan = cudnn->plan(cuda::AttentionProblem::of(*c.attention()), why);
      if (step.cudnnPlan >= 0)
        return true;
    }
#else
    (void)step;
    why = "this runtime was built without cuDNN's headers";
#endif
    cudnnRefusals.push_back((c.label() ? c.label()->str() : "attention") + ": " + why);
    return false;
  }

  /// Gives the cuDNN commands their workspace and buffers and runs each
  /// once on the arena as it starts (which load clears again): a command
  /// cuDNN will not bind or run takes the runtime's kernels. Then says which
  /// commands compiled for cuDNN run on the runtime's kernels, and why (a
  /// warning: the result is the same, the speed is not).
  bool bindCudnn(const tgx::Program &program, std::string &error) {
#ifdef TG_HAVE_CUDNN
    if (cudnn && cudnn->workspaceBytes() &&
        !check("cuMemAlloc", driver->cuMemAlloc(&cudnnWorkspace, cudnn->workspaceBytes()), error))
      return false;
    bool ran = false;
    for (size_t i = 0; cudnn && i < steps.size(); ++i) {
      if (steps[i].cudnnPlan < 0)
        continue;
      std::string why;
      steps[i].cudnn = cudnn->bind(steps[i].cudnnPlan, steps[i].buffers, cudnnWorkspace, why);
      if (steps[i].cudnn) {
        ran = true;
        if (cudnn->run(*steps[i].cudnn, streams[0], why) && synchronize(why))
          continue;
        why = "cuDNN cannot run it: " + why;
        steps[i].cudnn.reset();
      } else {
        why = "cuDNN cannot bind its buffers: " + why;
      }
      const tgx::Command &c = *program.commands()->Get(uint32_t(i));
      cudnnRefusals.push_back((c.label() ? c.label()->str() : "attention") + ": " + why);
      steps[i].cudnnPlan = -1;
      if (!planOwnAttention(program, i, steps[i], error))
        return false;
    }
    arenaWritten |= ran;
#else
    (void)program;
    (void)error;
#endif
    if (!cudnnRefusals.empty())
      std::fprintf(stderr,
                   "%s: warning: %zu attention command(s) compiled for cuDNN run on the "
                   "runtime's flash kernels instead; the first, %s\n",
                   source.c_str(), cudnnRefusals.size(), cudnnRefusals.front().c_str());
    return true;
  }

  /// Issues the step: other streams fork from stream 0 and join it at the
  /// end (which also lets a graph capture follow them).
  bool enqueue(bool profiled, std::string &error) {
    if (!check("cuEventRecord", driver->cuEventRecord(fork, streams[0]), error))
      return false;
    for (size_t s = 1; s < streams.size(); ++s)
      if (!check("cuStreamWaitEvent", driver->cuStreamWaitEvent(streams[s], fork, 0), error))
        return false;
    for (size_t i = 0; i < steps.size(); ++i) {
      Step &step = steps[i];
      CUstream stream = streams[step.stream];
      for (unsigned awaited : step.awaitEvents)
        if (!check("cuStreamWaitEvent", driver->cuStreamWaitEvent(stream, done[awaited], 0),
                   error))
          return false;
      if (profiled && !check("cuEventRecord", driver->cuEventRecord(profileStart[i], stream), error))
        return false;
      if (!issue(step, stream, error))
        return false;
      if (profiled && !check("cuEventRecord", driver->cuEventRecord(profileEnd[i], stream), error))
        return false;
      if (step.signals && !check("cuEventRecord", driver->cuEventRecord(done[i], stream), error))
        return false;
    }
    for (size_t s = 1; s < streams.size(); ++s)
      if (!check("cuEventRecord", driver->cuEventRecord(joins[s], streams[s]), error) ||
          !check("cuStreamWaitEvent", driver->cuStreamWaitEvent(streams[0], joins[s], 0), error))
        return false;
    return true;
  }

  bool issue(Step &step, CUstream stream, std::string &error) {
#ifdef TG_HAVE_CUDNN
    if (step.cudnn) {
      if (!cudnn->run(*step.cudnn, stream, error)) {
        error = source + ": " + error;
        return false;
      }
      return true;
    }
#endif
    switch (step.kind) {
    case tgx::CommandKind_Kernel:
    case tgx::CommandKind_Attention:
      for (const KernelLaunch &l : step.launches)
        if (!check("cuLaunchKernel",
                   driver->cuLaunchKernel(l.function, l.gridX, l.gridY, 1, l.block, 1, 1,
                                          l.sharedBytes, stream, step.params.data(), nullptr),
                   error))
          return false;
      return true;
    case tgx::CommandKind_Gemm:
      if (!gemms->run(step.gemmPlan, step.buffers, gemmWorkspaces[step.stream], stream, error)) {
        error = source + ": " + error;
        return false;
      }
      return true;
    case tgx::CommandKind_Copy:
      return check("cuMemcpyDtoDAsync",
                   driver->cuMemcpyDtoDAsync(step.buffers[1], step.buffers[0], step.copyBytes,
                                             stream),
                   error);
    default: // refused by load()
      return true;
    }
  }

  /// Records the whole step once into a CUDA graph: later steps replay it
  /// with one launch instead of one per command.
  bool capture(std::string &error) {
    if (!check("cuStreamBeginCapture",
               driver->cuStreamBeginCapture(streams[0], CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
               error))
      return false;
    std::string enqueueError;
    bool enqueued = enqueue(false, enqueueError);
    CUresult ended = driver->cuStreamEndCapture(streams[0], &graph);
    if (enqueued && check("cuStreamEndCapture", ended, error) &&
        check("cuGraphInstantiate", driver->cuGraphInstantiate(&graphExec, graph, 0), error))
      return true;
    if (!enqueued)
      error = enqueueError;
    if (graph)
      driver->cuGraphDestroy(graph);
    graph = nullptr;
    return false;
  }

  bool synchronize(std::string &error) const {
    for (CUstream s : streams)
      if (!check("cuStreamSynchronize", driver->cuStreamSynchronize(s), error))
        return false;
    return true;
  }

  const Driver *driver = nullptr;
  std::string source;
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUdeviceptr arena = 0;
  std::vector<CUdeviceptr> gemmWorkspaces; // cuBLASLt's, one a stream ([stream])
  void *staging = nullptr;
  CUevent stagingFree = nullptr, fork = nullptr;
  std::vector<CUstream> streams;
  std::vector<CUmodule> modules;
  std::vector<std::vector<std::vector<KernelLaunch>>> launchesOf; // [module][kernel]
  std::unique_ptr<cuda::Gemms> gemms;
  std::unique_ptr<cuda::AttentionKernels> attentionKernels;
#ifdef TG_HAVE_CUDNN
  std::unique_ptr<cuda::CudnnAttention> cudnn;
  std::string cudnnUnavailable;   // why cuDNN did not load, once
  CUdeviceptr cudnnWorkspace = 0; // one for all commands: they run in order
#endif
  std::vector<std::string> cudnnRefusals; // "label: why", for the warning
  std::vector<Step> steps;
  std::vector<CUevent> done, joins, profileStart, profileEnd;
  bool useGraph = true, ranOnce = false;
  int gemmCandidates = 1; // TG_CUDA_GEMM_AUTOTUNE
  bool sumQueryGrads = false; // TG_CUDA_FLASH_BACKWARD=summed
  bool arenaWritten = false; // by commands run at load: cleared before training
  CUgraph graph = nullptr;
  CUgraphExec graphExec = nullptr;
};

} // namespace

std::unique_ptr<Backend> createCudaBackend(const tgx::Program &program,
                                           const std::string &sourceName,
                                           std::string &error) {
  auto backend = std::make_unique<CudaBackend>();
  if (!backend->load(program, sourceName, error))
    return nullptr;
  return backend;
}

} // namespace tg::runtime
