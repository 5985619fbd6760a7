// tgrun: trains with a compiled .tgx program on a token file.
//
//   tgrun MODEL.tgx --data TOKENS.bin [--steps N] [--init W.safetensors] ...
//   tgrun -n 4 MODEL.tgx ...     (a program compiled with --mesh, on 4 ranks)
//   tgrun generate MODEL.tgx --init W.safetensors --prompt "1 2 3"  (Generate.cpp)
//
// A copy of tgrun with an artifact appended (tgc --emit=exe) runs that
// artifact and takes the same flags without the positional argument.
// Exit codes: 0 done, 1 error, 2 usage error.
#include "tg/runtime/Artifact.h"
#include "tg/runtime/EmbeddedArtifact.h"
#include "tg/runtime/tg_runtime.h"

#include "Cli.h"
#include "Generate.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace tg::tgrun;

namespace {

constexpr int kKeepCheckpoints = 2;
constexpr std::size_t kTopCommands = 15;

struct Options {
  std::string artifact, data, init, metrics, saveWeights, checkpointDir, profile, evalData;
  std::string dataFormat = "auto";
  int64_t evalEvery = 0, evalBatches = 10; // evalEvery 0: after the last step only
  double peakTflops = 0; // 0: the peak tgrun knows for the program, if any
  int64_t steps = 100, checkpointEvery = 0, threads = 0, logEvery = 0, ranks = 1;
  uint64_t maxShardBytes = TG_DEFAULT_MAX_SHARD_BYTES;
  double collectiveTimeout = 60;
  uint64_t seed = 0;
  bool hasSeed = false, resume = false, help = false, version = false;
};

void printHelp(const char *program, bool embedded) {
  std::printf(
      "usage: %s [-n RANKS] %s--data TOKENS.bin [options]\n"
      "       %s generate ... (continue prompts with trained weights; generate --help)\n"
      "\n"
      "Trains with a compiled training program%s on token data (flat\n"
      "little-endian uint16 or uint32 token ids, or a Megatron-LM indexed dataset).\n"
      "\n"
      "A program compiled for several devices (tgc compile --mesh dp=N) runs as N\n"
      "ranks: -n N starts them on this machine (through Open MPI's mpirun); under\n"
      "mpirun or srun --mpi=pmix each rank finds its place itself. Rank 0 prints,\n"
      "and writes metrics, weights and the profile; every rank writes its part of\n"
      "each checkpoint.\n"
      "\n"
      "options:\n"
      "  -n N                   start N ranks of this program on this machine\n"
      "  --version              print the TGC version\n"
      "  --collective-timeout S seconds a collective may wait for the other ranks\n"
      "                         before the run fails, naming the missing ones\n"
      "                         (default 60)\n"
      "  --data FILE            token data (required): a flat token file, or a\n"
      "                         Megatron-LM indexed dataset (PREFIX, PREFIX.bin or\n"
      "                         PREFIX.idx)\n"
      "  --data-format F        auto (default: megatron where PREFIX.idx is there,\n"
      "                         else uint16 if the vocabulary fits, else uint32),\n"
      "                         uint16, uint32 or megatron\n"
      "  --steps N              total steps of the run, counting steps restored by\n"
      "                         --resume (default 100): after a run that stopped at\n"
      "                         step 10, --resume --steps 20 takes 10 more\n"
      "  --init FILE            initial weights (safetensors, Hugging Face names, with\n"
      "                         or without the \"transformer.\" prefix): a file, a\n"
      "                         model.safetensors.index.json, or a directory with\n"
      "                         either; default: random\n"
      "  --peak-tflops T        one device's peak TFLOP/s in the program's dtype, for\n"
      "                         the MFU next to tokens/s (default: the H100's for\n"
      "                         CUDA programs; none for the CPU)\n"
      "  --seed S               seed of the random initialisation (default: the\n"
      "                         program's TRAIN.json seed)\n"
      "  --eval-data FILE       validation data (same formats as --data): the loss\n"
      "                         and perplexity of the parameters on its first\n"
      "                         --eval-batches batches, without an update, after the\n"
      "                         last step and every --eval-every steps\n"
      "  --eval-every N         evaluate every N steps as well\n"
      "  --eval-batches K       batches of each evaluation (default 10)\n"
      "  --metrics FILE         one JSON line per step: step, loss, grad_norm, lr,\n"
      "                         step_ms, tokens_per_s (appended to when resuming);\n"
      "                         and one per evaluation: step, eval_loss,\n"
      "                         eval_perplexity, eval_tokens\n"
      "  --save-weights FILE    final weights as safetensors (FILE.safetensors), or\n"
      "                         above --max-shard-size as Hugging Face shards\n"
      "                         (FILE-0000K-of-0000N.safetensors) with their index\n"
      "                         (FILE.safetensors.index.json)\n"
      "  --max-shard-size SIZE  bytes per weights file, with an optional kB/MB/GB\n"
      "                         suffix (powers of 1000, as transformers; default 5GB)\n"
      "  --checkpoint-dir DIR   write DIR/step-NNNNNNNN.safetensors (several ranks:\n"
      "                         the directory DIR/step-NNNNNNNN, each rank its part)\n"
      "                         at the end of the run (and every --checkpoint-every\n"
      "                         steps), keeping the newest %d\n"
      "  --checkpoint-every N   checkpoint every N steps\n"
      "  --resume               continue from the newest checkpoint in\n"
      "                         --checkpoint-dir (its weights, optimizer state, step\n"
      "                         and data position); starts fresh if there is none\n"
      "  --threads N            threads a step runs on (default: the cores, shared\n"
      "                         between the ranks on this machine; or OPENBLAS_NUM_THREADS)\n"
      "  --log-every N          progress line every N steps when stdout is not a\n"
      "                         terminal (default: about 20 lines per run)\n"
      "  --profile FILE         time every command of every step: FILE is a Chrome\n"
      "                         trace (open it in https://ui.perfetto.dev or\n"
      "                         chrome://tracing), and the end of the run prints the\n"
      "                         %zu commands that took the most time, with their\n"
      "                         achieved GB/s or TFLOP/s\n"
      "  --help                 this text\n",
      program, embedded ? "" : "PROGRAM.tgx ", program,
      embedded ? " (embedded in this executable)" : "", kKeepCheckpoints, kTopCommands);
}

/// "5GB", "500MB", "20kB" (powers of 1000, as transformers' max_shard_size)
/// or plain bytes; > 0.
bool parseSize(const std::string &text, uint64_t &out) {
  static const std::pair<const char *, uint64_t> kUnits[] = {
      {"GB", 1000000000}, {"MB", 1000000}, {"kB", 1000}, {"KB", 1000}};
  std::string digits = text;
  uint64_t unit = 1;
  for (const auto &[suffix, scale] : kUnits)
    if (text.size() > 2 && text.compare(text.size() - 2, 2, suffix) == 0) {
      digits = text.substr(0, text.size() - 2);
      unit = scale;
      break;
    }
  uint64_t value;
  if (!parseUnsigned(digits, value) || value == 0 || value > UINT64_MAX / unit)
    return false;
  out = value * unit;
  return true;
}

/// Fills `o` from the command line; returns 0 or a usage error's exit code.
int parseArguments(int argc, char **argv, bool embedded, Options &o) {
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-n") {
      if (i + 1 >= argc || !parseInteger(argv[i + 1], 1, o.ranks) || o.ranks > 1 << 20)
        return usageError("-n needs a number of ranks >= 1");
      ++i;
      continue;
    }
    if (arg.size() < 2 || arg.compare(0, 2, "--") != 0) {
      positional.push_back(arg);
      continue;
    }
    std::string value;
    bool hasValue = false;
    if (std::size_t eq = arg.find('='); eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg.resize(eq);
      hasValue = true;
    }
    if (arg == "--help" || arg == "--resume" || arg == "--version") {
      if (hasValue)
        return usageError(arg + " takes no value");
      (arg == "--help" ? o.help : arg == "--resume" ? o.resume : o.version) = true;
      continue;
    }
    if (!hasValue) {
      if (i + 1 >= argc)
        return usageError(arg + " needs a value");
      value = argv[++i];
    }
    auto integer = [&](int64_t min, int64_t &out) {
      return parseInteger(value, min, out)
                 ? 0
                 : usageError(arg + " needs an integer >= " + std::to_string(min) +
                              ", not '" + value + "'");
    };
    auto positiveNumber = [&](double &out, const char *unit) {
      char *end = nullptr;
      out = std::strtod(value.c_str(), &end);
      return !value.empty() && !*end && out > 0 && out < 1e9
                 ? 0
                 : usageError(arg + " needs a number of " + unit + " > 0, not '" + value + "'");
    };
    int status = 0;
    if (arg == "--data") o.data = value;
    else if (arg == "--data-format") o.dataFormat = value;
    else if (arg == "--init") o.init = value;
    else if (arg == "--peak-tflops") status = positiveNumber(o.peakTflops, "TFLOP/s");
    else if (arg == "--metrics") o.metrics = value;
    else if (arg == "--save-weights") o.saveWeights = value;
    else if (arg == "--checkpoint-dir") o.checkpointDir = value;
    else if (arg == "--profile") o.profile = value;
    else if (arg == "--steps") status = integer(0, o.steps);
    else if (arg == "--checkpoint-every") status = integer(1, o.checkpointEvery);
    else if (arg == "--threads") status = integer(1, o.threads);
    else if (arg == "--log-every") status = integer(1, o.logEvery);
    else if (arg == "--eval-data") o.evalData = value;
    else if (arg == "--eval-every") status = integer(1, o.evalEvery);
    else if (arg == "--eval-batches") status = integer(1, o.evalBatches);
    else if (arg == "--max-shard-size") {
      if (!parseSize(value, o.maxShardBytes))
        return usageError("--max-shard-size needs a size in bytes > 0 (e.g. 2000000000 or "
                          "2GB), not '" + value + "'");
    } else if (arg == "--collective-timeout")
      status = positiveNumber(o.collectiveTimeout, "seconds");
    else if (arg == "--seed") {
      if (!parseUnsigned(value, o.seed))
        return usageError("--seed needs a non-negative integer, not '" + value + "'");
      o.hasSeed = true;
    } else
      return usageError("unknown option " + arg);
    if (status)
      return status;
  }
  if (o.help || o.version)
    return 0;
  if (embedded && !positional.empty())
    return usageError("this executable carries its own program, so the argument '" +
                      positional[0] + "' is not needed");
  if (!embedded && positional.size() != 1)
    return usageError(positional.empty() ? "no program given (the .tgx file tgc wrote)"
                                         : "more than one program given");
  if (!embedded)
    o.artifact = positional[0];
  if (o.dataFormat != "auto" && o.dataFormat != "uint16" && o.dataFormat != "uint32" &&
      o.dataFormat != "megatron")
    return usageError("--data-format must be auto, uint16, uint32 or megatron, not '" +
                      o.dataFormat + "'");
  if (o.data.empty())
    return usageError("--data TOKENS.bin is required");
  if ((o.checkpointEvery || o.resume) && o.checkpointDir.empty())
    return usageError(std::string(o.resume ? "--resume" : "--checkpoint-every") +
                      " needs --checkpoint-dir");
  if (o.evalData.empty() && (o.evalEvery || o.evalBatches != 10))
    return usageError("--eval-every and --eval-batches need --eval-data");
  if (o.hasSeed && !o.init.empty())
    return usageError("--seed and --init exclude each other (--seed seeds the random "
                      "initialisation)");
  return 0;
}

//===----------------------------------------------------------------------===//
// Checkpoint directory
//===----------------------------------------------------------------------===//

/// A checkpoint in the checkpoint directory: a file (one rank) or a
/// directory (several ranks, each wrote its part).
struct Checkpoint {
  int64_t step;
  std::string path;
  bool operator<(const Checkpoint &o) const {
    return std::tie(step, path) < std::tie(o.step, o.path);
  }
};

/// DIR/step-NNNNNNNN.safetensors, or DIR/step-NNNNNNNN for a run of several
/// ranks.
std::string checkpointPath(const std::string &dir, int64_t step, bool sharded) {
  char name[64];
  std::snprintf(name, sizeof(name), "/step-%08" PRId64 "%s", step,
                sharded ? "" : ".safetensors");
  return dir + name;
}

/// The step of a file name "step-DIGITS" + `suffix` in a checkpoint
/// directory, or -1.
int64_t stepOf(const std::string &name, const std::string &suffix) {
  const std::string prefix = "step-";
  if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix))
    return -1;
  std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  int64_t step;
  return std::all_of(digits.begin(), digits.end(), ::isdigit) && parseInteger(digits, 0, step)
             ? step
             : -1;
}

/// The entries of `dir` named "step-N" + one of `suffixes`, by step.
/// Checkpoints are "" (a directory) and ".safetensors"; leftovers of an
/// interrupted save ".partial" and ".old".
std::vector<Checkpoint> listSteps(const std::string &dir,
                                  std::initializer_list<const char *> suffixes) {
  std::vector<Checkpoint> found;
  DIR *d = ::opendir(dir.c_str());
  if (!d)
    return found;
  while (dirent *entry = ::readdir(d))
    for (const char *suffix : suffixes)
      if (int64_t step = stepOf(entry->d_name, suffix); step >= 0)
        found.push_back({step, dir + "/" + entry->d_name});
  ::closedir(d);
  std::sort(found.begin(), found.end());
  return found;
}

/// The checkpoints in `dir`, by step.
std::vector<Checkpoint> listCheckpoints(const std::string &dir) {
  return listSteps(dir, {"", ".safetensors"});
}

bool makeDirectories(const std::string &dir) {
  for (std::size_t slash = 1; slash != std::string::npos;) {
    slash = dir.find('/', slash + 1);
    std::string prefix = dir.substr(0, slash);
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST)
      return false;
  }
  struct stat st;
  return ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

/// Why a file cannot be written at `path` (written as a temporary file in
/// its directory, then renamed, like its shards), or "" if it can.
std::string unwritableFile(const std::string &path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return "it is a directory";
  std::size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return "its directory " + dir + " does not exist";
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return "its directory " + dir + " is not writable (" + std::strerror(errno) + ")";
  return "";
}

/// Where tg_session_save_weights_sharded put the weights asked for at
/// `path`: the file, or its shards' index when they did not fit in one.
std::string savedWeightsPath(const std::string &path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0)
    return path;
  std::string stem = path.size() > 12 && path.compare(path.size() - 12, 12, ".safetensors") == 0
                         ? path.substr(0, path.size() - 12)
                         : path;
  return stem + ".safetensors.index.json and its shards";
}

/// Writes the checkpoint of the current step and, on `primary` (rank 0),
/// drops all but the newest (and another form of this step's). Every rank
/// calls it: in a run of several ranks each writes its part.
bool writeCheckpoint(tg_session *session, const std::string &dir, int64_t dataPosition,
                     bool primary, bool sharded, int &exitCode) {
  int64_t step = tg_session_steps_done(session);
  std::string written = checkpointPath(dir, step, sharded);
  if (!check(tg_session_save_checkpoint(session, written.c_str(), dataPosition), exitCode))
    return false;
  if (!primary)
    return true;
  if (!::isatty(STDOUT_FILENO)) // a line between live progress redraws would break them
    std::printf("tgrun: checkpoint of step %" PRId64 " written to %s\n", step, written.c_str());
  std::vector<Checkpoint> checkpoints = listCheckpoints(dir);
  std::set<int64_t> steps;
  for (const Checkpoint &c : checkpoints)
    steps.insert(c.step);
  if (steps.empty()) // the directory cannot be read back: leave it alone
    return true;
  // The kKeepCheckpoints-th newest step (the written one is among them).
  int64_t oldestKept = *std::next(
      steps.rbegin(), std::min<std::ptrdiff_t>(kKeepCheckpoints, std::ptrdiff_t(steps.size())) - 1);
  std::error_code ignored;
  for (const Checkpoint &c : checkpoints)
    if (c.step < oldestKept || (c.step == step && c.path != written))
      std::filesystem::remove_all(c.path, ignored);
  // Leftovers of interrupted saves of earlier steps (ShardedCheckpoint.cpp).
  for (const Checkpoint &c : listSteps(dir, {".partial", ".old"}))
    if (c.step < step)
      std::filesystem::remove_all(c.path, ignored);
  return true;
}

//===----------------------------------------------------------------------===//
// Output
//===----------------------------------------------------------------------===//

/// A JSON number, or null for NaN and infinities (JSON has no spelling).
std::string jsonNumber(double value, const char *format) {
  if (!std::isfinite(value))
    return "null";
  char text[64];
  std::snprintf(text, sizeof(text), format, value);
  return text;
}

std::string duration(double seconds) {
  auto s = static_cast<int64_t>(seconds + 0.5);
  char text[32];
  if (s >= 3600)
    std::snprintf(text, sizeof(text), "%" PRId64 ":%02d:%02d", s / 3600, int(s / 60 % 60),
                  int(s % 60));
  else
    std::snprintf(text, sizeof(text), "%d:%02d", int(s / 60), int(s % 60));
  return text;
}

/// `value` printed with `format` (one number).
std::string formatted(const char *format, double value) {
  char text[64];
  std::snprintf(text, sizeof(text), format, value);
  return text;
}

/// "12345", or "124.4M" from a million on.
std::string count(int64_t n) {
  char text[32];
  if (n < 1000000)
    std::snprintf(text, sizeof(text), "%" PRId64, n);
  else
    std::snprintf(text, sizeof(text), "%.1fM", double(n) / 1e6);
  return text;
}

/// One device's peak for the program, against which MFU is reported.
struct Peak {
  double tflops = 0; // 0: none known
  std::string source;
};

/// --peak-tflops, else for CUDA programs the dense peak of the H100 (the
/// CUDA target compiles for sm_90a; the H200's compute peaks are the same)
/// in the program's dtype, from NVIDIA's datasheet (SXM); none for the CPU.
Peak devicePeak(const Options &o, const tg_program_info &info) {
  if (o.peakTflops > 0)
    return {o.peakTflops, "--peak-tflops"};
  if (std::strcmp(info.target, "cuda") != 0)
    return {};
  if (!std::strcmp(info.dtype, "bf16") || !std::strcmp(info.dtype, "f16"))
    return {989.4, std::string("the H100's dense ") + info.dtype + " tensor-core peak"};
  if (!std::strcmp(info.dtype, "f64"))
    return {66.9, "the H100's f64 tensor-core peak"};
  return {66.9, "the H100's f32 peak (no TF32)"};
}

/// `separator` + "MFU 41.2%" of `flopsPerSecond` against `peak`, or ""
/// without one.
std::string mfuText(double flopsPerSecond, const Peak &peak, const char *separator = "  ") {
  if (peak.tflops <= 0)
    return "";
  char text[48];
  std::snprintf(text, sizeof(text), "%sMFU %.1f%%", separator,
                100 * flopsPerSecond / (peak.tflops * 1e12));
  return text;
}

/// Progress on stdout: a live line on a terminal, plain lines otherwise.
class Progress {
public:
  Progress(int64_t first, int64_t total, int64_t logEvery, double tokensPerStep,
           double flopsPerStep, Peak peak)
      : first(first), total(total), tokensPerStep(tokensPerStep), flopsPerStep(flopsPerStep),
        peak(std::move(peak)), live(::isatty(STDOUT_FILENO)),
        logEvery(logEvery ? logEvery : std::max<int64_t>(1, (total - first) / 20)) {}

  void report(const tg_step_result &r, double elapsed) {
    elapsed = std::max(elapsed, 1e-9);
    double tokensPerSecond = double(r.step - first) * tokensPerStep / elapsed;
    std::string mfu = mfuText(double(r.step - first) * flopsPerStep / elapsed, peak);
    if (live) {
      // Redrawing costs more than a tiny model's step: at most 10 per second.
      if (r.step != total && elapsed - lastDraw < 0.1)
        return;
      lastDraw = elapsed;
      double eta = elapsed / double(r.step - first) * double(total - r.step);
      std::printf("\rstep %" PRId64 "/%" PRId64 "  loss %.4f  %.0f tok/s%s  ETA %s   ", r.step,
                  total, r.loss, tokensPerSecond, mfu.c_str(), duration(eta).c_str());
      pending = r.step != total;
      if (!pending)
        std::printf("\n");
    } else if (r.step == first + 1 || r.step == total || (r.step - first) % logEvery == 0) {
      std::printf("step %" PRId64 "/%" PRId64 "  loss %.4f  grad_norm %.3g  lr %.1e  %.0f tok/s%s\n",
                  r.step, total, r.loss, r.grad_norm, r.lr, tokensPerSecond, mfu.c_str());
    }
    std::fflush(stdout);
  }

  /// Ends a live line before other output (an evaluation's line).
  void breakLine() {
    if (pending)
      std::printf("\n");
    pending = false;
  }

private:
  int64_t first, total;
  double tokensPerStep, flopsPerStep;
  Peak peak;
  bool live, pending = false;
  int64_t logEvery;
  double lastDraw = -1;
};

struct FileCloser {
  void operator()(std::FILE *f) const { std::fclose(f); }
};

//===----------------------------------------------------------------------===//
// Profile
//===----------------------------------------------------------------------===//

const char *kindName(tg_command_kind kind) {
  switch (kind) {
  case TG_COMMAND_KERNEL: return "kernel";
  case TG_COMMAND_GEMM: return "gemm";
  case TG_COMMAND_COPY: return "copy";
  case TG_COMMAND_COLLECTIVE: return "collective";
  case TG_COMMAND_ATTENTION: return "attention";
  }
  return "unknown";
}

/// Chrome traces count in microseconds; nanoseconds are as fine as any
/// timer here, and rounding to them keeps the numbers short.
double traceMicroseconds(double seconds) { return std::round(seconds * 1e9) / 1e3; }

/// --profile: each step's commands as Chrome trace events ("X": complete
/// events on the command's stream), written as the steps run so that a long
/// run's trace never has to fit in memory, and each command's times summed
/// over the steps for the table at the end.
class Profiler {
public:
  /// A run that fails midway still leaves a readable trace of its steps.
  ~Profiler() {
    if (file)
      writeTraceEnd();
  }

  /// Opens the trace before any step runs: a bad path must not cost a run.
  bool open(const std::string &tracePath, const std::string &program, std::string &error) {
    file.reset(std::fopen(tracePath.c_str(), "w"));
    if (!file) {
      error = "cannot open the profile file (" + tracePath + "): " + std::strerror(errno) +
              "; pass a writable --profile path";
      return false;
    }
    path = tracePath;
    std::fputs("{\"traceEvents\":[\n", file.get());
    writeEvent({{"name", "process_name"}, {"ph", "M"}, {"pid", 0},
                {"args", {{"name", "tgrun " + program}}}});
    return true;
  }

  /// Adds the commands of step `step`, which began `stepStart` seconds into
  /// the run; its events follow the previous step's on the time line.
  void addStep(int64_t step, double stepStart, const tg_command_profile *records,
               std::size_t count) {
    if (profiledSteps++ == 0)
      firstStep = step;
    lastStep = step;
    commandsPerStep = count;
    for (std::size_t i = 0; i < count; ++i) {
      const tg_command_profile &r = records[i];
      writeEvent({{"name", r.label}, {"cat", kindName(r.kind)}, {"ph", "X"},
                  {"ts", traceMicroseconds(stepStart + r.start_seconds)},
                  {"dur", traceMicroseconds(r.seconds)}, {"pid", 0}, {"tid", r.stream},
                  {"args", {{"bytes", r.bytes}, {"flops", r.flops}, {"step", step}}}});
      streams.insert(r.stream);
      Total &total = totals[{r.label, r.kind}];
      total.seconds += r.seconds;
      total.bytes += double(r.bytes);
      total.flops += r.flops;
      ++total.calls;
      commandSeconds += r.seconds;
    }
  }

  /// Ends and closes the trace; false (with `error`) if it could not be
  /// written completely.
  bool finish(std::string &error) {
    writeTraceEnd();
    // ferror does not keep the failed write's errno; fclose's is its own.
    std::string problem = std::ferror(file.get()) ? "a write failed" : "";
    if (std::fclose(file.release()) != 0 && problem.empty())
      problem = std::strerror(errno);
    if (!problem.empty())
      error = "cannot write the profile file (" + path + "): " + problem +
              "; check the free space on its file system";
    return problem.empty();
  }

  /// The commands (by label and kind) that took the most time, summed over
  /// the profiled steps, with the rate each achieved: GB/s moved (its
  /// operands' sizes over its time) for kernels and copies, TFLOP/s for
  /// GEMMs and attention.
  void printTopCommands() const {
    if (!profiledSteps) {
      std::printf("tgrun: no step ran, so the profile in %s is empty\n", path.c_str());
      return;
    }
    std::printf("tgrun: profiled steps %" PRId64 " to %" PRId64 " (%zu commands a step, "
                "%.3f ms of command time); trace in %s\n",
                firstStep, lastStep, commandsPerStep, commandSeconds * 1e3, path.c_str());
    std::vector<std::pair<const Key *, const Total *>> ranked;
    for (const auto &[key, total] : totals)
      ranked.emplace_back(&key, &total);
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto &a, const auto &b) {
      return a.second->seconds > b.second->seconds;
    });
    ranked.resize(std::min(ranked.size(), kTopCommands));
    std::printf("tgrun: the %zu of %zu commands that took the most time:\n", ranked.size(),
                totals.size());
    std::printf("  %10s %8s %6s %10s %8s %8s  %-6s  %s\n", "total ms", "share %", "calls",
                "mean us", "GB/s", "TFLOP/s", "kind", "command");
    for (const auto &[key, total] : ranked) {
      std::string bandwidth, flopRate;
      if (total->seconds > 0 &&
          (key->second == TG_COMMAND_GEMM || key->second == TG_COMMAND_ATTENTION))
        flopRate = formatted("%.4f", total->flops / total->seconds / 1e12);
      else if (total->seconds > 0)
        bandwidth = formatted("%.2f", total->bytes / total->seconds / 1e9);
      std::printf("  %10.3f %8.1f %6" PRId64 " %10.1f %8s %8s  %-6s  %s\n", total->seconds * 1e3,
                  commandSeconds > 0 ? 100 * total->seconds / commandSeconds : 0.0, total->calls,
                  total->seconds / double(total->calls) * 1e6, bandwidth.c_str(),
                  flopRate.c_str(), kindName(key->second),
                  key->first.empty() ? "(no label)" : key->first.c_str());
    }
  }

private:
  using Key = std::pair<std::string, tg_command_kind>; // label, kind
  struct Total {
    double seconds = 0, bytes = 0, flops = 0;
    int64_t calls = 0;
  };

  void writeEvent(const nlohmann::json &event) {
    if (wroteEvent)
      std::fputs(",\n", file.get());
    wroteEvent = true;
    // Labels come from the artifact: replace invalid UTF-8 rather than
    // throw, since a label must never cost the trace.
    std::fputs(event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str(),
               file.get());
  }

  /// Names the streams' tracks and closes the JSON document.
  void writeTraceEnd() {
    for (uint32_t stream : streams)
      writeEvent({{"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", stream},
                  {"args", {{"name", "stream " + std::to_string(stream)}}}});
    std::fputs("\n],\"displayTimeUnit\":\"ms\"}\n", file.get());
  }

  std::unique_ptr<std::FILE, FileCloser> file;
  std::string path;
  bool wroteEvent = false;
  std::set<uint32_t> streams;
  std::map<Key, Total> totals;
  int64_t profiledSteps = 0, firstStep = 0, lastStep = 0;
  std::size_t commandsPerStep = 0;
  double commandSeconds = 0; // over all profiled steps
};

//===----------------------------------------------------------------------===//
// The run
//===----------------------------------------------------------------------===//

struct DatasetCloser {
  void operator()(tg_dataset *d) const { tg_dataset_close(d); }
};

/// --data-format, or for `auto` a Megatron dataset where its index is
/// there, else flat uint16 tokens where the vocabulary fits, uint32 where
/// it does not.
tg_data_format dataFormat(const Options &o, const std::string &path, int64_t vocabSize) {
  if (o.dataFormat == "uint16")
    return TG_DATA_UINT16;
  if (o.dataFormat == "uint32")
    return TG_DATA_UINT32;
  if (o.dataFormat == "megatron")
    return TG_DATA_MEGATRON;
  auto endsWith = [&](const char *suffix) {
    std::size_t n = std::strlen(suffix);
    return path.size() > n && path.compare(path.size() - n, n, suffix) == 0;
  };
  struct stat st;
  std::string prefix = endsWith(".bin") || endsWith(".idx") ? path.substr(0, path.size() - 4)
                                                            : path;
  if (endsWith(".idx") || ::stat((prefix + ".idx").c_str(), &st) == 0)
    return TG_DATA_MEGATRON;
  return vocabSize > 65535 ? TG_DATA_UINT32 : TG_DATA_UINT16;
}

/// Warns when the run reads its data more than once: the steps up to
/// data position `end` need more samples than one pass holds.
void warnIfWrapping(const tg_dataset *dataset, const std::string &path,
                    const tg_program_info &info, int64_t end) {
  int64_t n = tg_dataset_num_tokens(dataset), t = info.seq_len, b = info.batch_size;
  if (n <= t)
    return; // the first batch says why
  // Sample k starts at k*T mod (N - T): the first pass holds ceil((N-T)/T).
  int64_t samples = (n - t + t - 1) / t, steps = samples / b;
  if (end <= steps)
    return;
  std::fprintf(stderr,
               "tgrun: warning: %s holds %" PRId64 " tokens: one pass over it is %" PRId64
               " steps of %" PRId64 " x %" PRId64 " tokens, and this run reads up to step %" PRId64
               " of it, so it trains on the same tokens again (%.1f passes); pass more data or "
               "fewer --steps to avoid it\n",
               path.c_str(), n, steps, b, t, end, double(end) * double(b) / double(samples));
}

/// Restores the newest checkpoint of `dir`, if any. A corrupt newest one is
/// an error: silently training from an older state would lose work unseen.
bool resume(tg_session *session, const std::string &dir, bool &resumed, int64_t &dataPosition,
            int &exitCode) {
  std::vector<Checkpoint> checkpoints = listCheckpoints(dir);
  if (checkpoints.empty()) {
    std::printf("tgrun: no checkpoint in %s, starting from step 0\n", dir.c_str());
    return true;
  }
  std::string path = checkpoints.back().path;
  if (tg_status status = tg_session_load_checkpoint(session, path.c_str(), &dataPosition)) {
    exitCode = error(std::string("cannot resume from the newest checkpoint: ") +
                     tg_status_message(status) + " (delete " + path +
                     " to resume from the one before it)");
    tg_status_free(status);
    return false;
  }
  std::printf("tgrun: resumed from %s (step %" PRId64 ")\n", path.c_str(),
              tg_session_steps_done(session));
  resumed = true;
  return true;
}

/// Warns when the evaluation's batches hold fewer distinct samples than
/// they read: its data then repeats within each evaluation.
void warnIfEvalRepeats(const tg_dataset *dataset, const std::string &path,
                       const tg_program_info &info, int64_t batches) {
  int64_t n = tg_dataset_num_tokens(dataset), t = info.seq_len, b = info.batch_size;
  if (n <= t)
    return; // the first batch says why
  int64_t samples = (n - t + t - 1) / t;
  if (batches * b <= samples)
    return;
  std::fprintf(stderr,
               "tgrun: warning: %s holds %" PRId64 " tokens, %" PRId64 " samples of %" PRId64
               ", fewer than the %" PRId64 " of --eval-batches %" PRId64
               ": each evaluation reads some of them twice; pass more data or fewer batches\n",
               path.c_str(), n, samples, t, batches * b, batches);
}

/// The loss and perplexity of the parameters on the first `batches`
/// batches of `dataset` (the same ones each time), without an update:
/// logged, and a metrics line. Collective: every rank evaluates its rows.
bool evaluate(tg_session *session, const tg_dataset *dataset, int64_t batches,
              const tg_program_info &info, const tg_rank_info &rank, int64_t step,
              std::FILE *metrics, int &exitCode) {
  std::size_t elements = std::size_t(info.batch_size * info.seq_len);
  std::vector<int32_t> tokens(elements), targets(elements);
  std::size_t rows = std::size_t(rank.first_row * info.seq_len);
  // Every batch has as many tokens: the mean of the batches' mean losses is
  // the mean over all their tokens.
  double sum = 0;
  for (int64_t b = 0; b < batches; ++b) {
    double loss;
    if (!check(tg_dataset_batch(dataset, b, info.batch_size, info.seq_len, info.vocab_size,
                                tokens.data(), targets.data()),
               exitCode) ||
        !check(tg_session_eval(session, tokens.data() + rows, targets.data() + rows, &loss),
               exitCode))
      return false;
    sum += loss;
  }
  double loss = sum / double(batches), perplexity = std::exp(loss);
  int64_t evalTokens = batches * int64_t(elements);
  std::printf("eval at step %" PRId64 ": loss %.4f  perplexity %.4g  (%" PRId64
              " batches, %" PRId64 " tokens)\n",
              step, loss, perplexity, batches, evalTokens);
  if (metrics) {
    std::fprintf(metrics, "{\"step\": %" PRId64 ", \"eval_loss\": %s, \"eval_perplexity\": %s, "
                          "\"eval_tokens\": %" PRId64 "}\n",
                 step, jsonNumber(loss, "%.17g").c_str(), jsonNumber(perplexity, "%.17g").c_str(),
                 evalTokens);
    std::fflush(metrics);
  }
  return true;
}

int run(const Options &o, const std::vector<uint8_t> &embedded, const char *programName) {
  int exitCode = 0;
  tg_session *rawSession = nullptr;
  tg_status status =
      embedded.empty()
          ? tg_session_create_from_file(o.artifact.c_str(), &rawSession)
          : tg_session_create_from_memory(embedded.data(), embedded.size(), programName,
                                          &rawSession);
  if (!check(status, exitCode))
    return exitCode;
  std::unique_ptr<tg_session, SessionCloser> session(rawSession);
  tg_program_info info;
  tg_session_info(session.get(), &info);
  tg_rank_info rank;
  tg_session_rank(session.get(), &rank);
  // The ranks train one model: rank 0 speaks and writes files for all.
  const bool primary = rank.rank == 0;
  if (rank.num_ranks > 1) {
    rankPrefix = "rank " + std::to_string(rank.rank) + ": ";
    if (!primary)
      std::freopen("/dev/null", "w", stdout);
  }
  if (o.threads)
    tg_set_num_threads(int(std::min<int64_t>(o.threads, 1 << 16)));

  tg_dataset *rawDataset = nullptr;
  if (!check(tg_dataset_open_format(o.data.c_str(), dataFormat(o, o.data, info.vocab_size),
                                    &rawDataset),
             exitCode))
    return exitCode;
  std::unique_ptr<tg_dataset, DatasetCloser> dataset(rawDataset);
  std::unique_ptr<tg_dataset, DatasetCloser> evalDataset;
  if (!o.evalData.empty()) {
    if (!check(tg_dataset_open_format(o.evalData.c_str(),
                                      dataFormat(o, o.evalData, info.vocab_size), &rawDataset),
               exitCode))
      return exitCode;
    evalDataset.reset(rawDataset);
    if (primary)
      warnIfEvalRepeats(evalDataset.get(), o.evalData, info, o.evalBatches);
  }

  if (!o.checkpointDir.empty() && !makeDirectories(o.checkpointDir))
    return error("cannot create the checkpoint directory (" + o.checkpointDir +
                 "): " + std::strerror(errno) + "; pass a writable --checkpoint-dir");
  // The weights are written after the last step: a path that cannot take
  // them is refused now, not after the training it would lose.
  if (primary && !o.saveWeights.empty())
    if (std::string problem = unwritableFile(o.saveWeights); !problem.empty())
      return error("cannot write the weights to " + o.saveWeights + ": " + problem +
                   "; pass a writable --save-weights path");
  bool resumed = false;
  int64_t dataPosition = 0;
  if (o.resume && !resume(session.get(), o.checkpointDir, resumed, dataPosition, exitCode))
    return exitCode;
  if (!resumed) {
    uint64_t seed = o.hasSeed ? o.seed : info.seed;
    status = o.init.empty() ? tg_session_init_random(session.get(), seed)
                            : tg_session_init_from_safetensors(session.get(), o.init.c_str());
    if (!check(status, exitCode))
      return exitCode;
    if (o.init.empty())
      std::printf("tgrun: random initial weights (seed %" PRIu64 ")\n", seed);
    else
      std::printf("tgrun: initial weights from %s\n", o.init.c_str());
  }

  std::unique_ptr<std::FILE, FileCloser> metrics;
  if (primary && !o.metrics.empty()) {
    metrics.reset(std::fopen(o.metrics.c_str(), resumed ? "a" : "w"));
    if (!metrics)
      return error("cannot open the metrics file (" + o.metrics + "): " +
                   std::strerror(errno) + "; pass a writable --metrics path");
  }
  const std::string program = embedded.empty() ? o.artifact : programName;
  Profiler profiler;
  const bool profiling = primary && !o.profile.empty();
  // Saving is collective (each rank writes its part of a checkpoint; the
  // session gathers shards of weights to rank 0, which alone writes them),
  // so every rank checkpoints and saves the weights.
  const bool checkpointing = !o.checkpointDir.empty();
  const bool sharded = rank.num_ranks > 1;
  if (profiling) {
    std::string problem;
    if (!profiler.open(o.profile, program, problem))
      return error(problem);
    if (!check(tg_session_set_profiling(session.get(), 1), exitCode))
      return exitCode;
  }

  int64_t first = tg_session_steps_done(session.get());
  int64_t documents = tg_dataset_num_documents(dataset.get());
  std::string data = std::to_string(tg_dataset_num_tokens(dataset.get())) + " tokens of data (" +
                     (documents ? "Megatron, " + std::to_string(documents) + " documents, " : "") +
                     (tg_dataset_token_bytes(dataset.get()) == 2 ? "uint16" : "32-bit") + ")";
  std::printf("tgrun: %s: %s parameters, batch %" PRId64 " x %" PRId64
              " tokens, %s, steps %" PRId64 " to %" PRId64 "\n",
              program.c_str(), count(info.num_parameters).c_str(), info.batch_size, info.seq_len,
              data.c_str(), std::min(first + 1, o.steps), o.steps);
  if (rank.num_ranks > 1)
    std::printf("tgrun: %d ranks, %" PRId64 " rows of each batch per data rank\n",
                rank.num_ranks, rank.rows);
  if (first >= o.steps)
    std::printf("tgrun: already at step %" PRId64 ", nothing to train (raise --steps)\n", first);
  else if (primary)
    warnIfWrapping(dataset.get(), o.data, info, dataPosition + (o.steps - first));

  std::size_t batchElements = std::size_t(info.batch_size * info.seq_len);
  std::vector<int32_t> tokens(batchElements), targets(batchElements);
  double tokensPerStep = double(batchElements);
  const Peak peak = devicePeak(o, info);
  if (peak.tflops > 0)
    std::printf("tgrun: MFU: %.3g GFLOP a step per device (the artifact's matmul and attention "
                "FLOPs) against %.4g TFLOP/s, %s\n",
                info.flops_per_step / 1e9, peak.tflops, peak.source.c_str());
  else
    std::printf("tgrun: MFU not reported: tgrun knows no peak for the %s; pass --peak-tflops\n",
                info.target);
  Progress progress(first, o.steps, o.logEvery, tokensPerStep, info.flops_per_step, peak);
  using Clock = std::chrono::steady_clock;
  Clock::time_point start = Clock::now();
  int64_t lastCheckpoint = resumed ? first : -1;
  double evalSeconds = 0;
  tg_step_result r{first, NAN, NAN, NAN};
  while (tg_session_steps_done(session.get()) < o.steps) {
    Clock::time_point stepStart = Clock::now();
    // Every rank reads the whole batch (the data order does not depend on
    // the mesh) and trains on its rows.
    std::size_t rows = std::size_t(rank.first_row * info.seq_len);
    if (!check(tg_dataset_batch(dataset.get(), dataPosition, info.batch_size, info.seq_len,
                                info.vocab_size, tokens.data(), targets.data()),
               exitCode) ||
        !check(tg_session_step(session.get(), tokens.data() + rows, targets.data() + rows, &r),
               exitCode))
      return exitCode;
    ++dataPosition;
    Clock::time_point stepEnd = Clock::now();
    if (profiling) {
      const tg_command_profile *records = nullptr;
      std::size_t commands = 0;
      if (!check(tg_session_profile(session.get(), &records, &commands), exitCode))
        return exitCode;
      profiler.addStep(r.step, std::chrono::duration<double>(stepStart - start).count(),
                       records, commands);
    }
    double stepSeconds = std::chrono::duration<double>(stepEnd - stepStart).count();
    if (metrics) {
      std::fprintf(metrics.get(),
                   "{\"step\": %" PRId64 ", \"loss\": %s, \"grad_norm\": %s, \"lr\": %s, "
                   "\"step_ms\": %s, \"tokens_per_s\": %s%s}\n",
                   r.step, jsonNumber(r.loss, "%.17g").c_str(),
                   jsonNumber(r.grad_norm, "%.17g").c_str(), jsonNumber(r.lr, "%.17g").c_str(),
                   jsonNumber(stepSeconds * 1e3, "%.3f").c_str(),
                   jsonNumber(tokensPerStep / stepSeconds, "%.1f").c_str(),
                   peak.tflops > 0
                       ? (", \"mfu\": " +
                          jsonNumber(info.flops_per_step / stepSeconds / (peak.tflops * 1e12),
                                     "%.4f"))
                             .c_str()
                       : "");
      std::fflush(metrics.get());
    }
    // Throughput and ETA count training time only, not evaluations.
    progress.report(r, std::chrono::duration<double>(stepEnd - start).count() - evalSeconds);
    if (evalDataset && (r.step == o.steps || (o.evalEvery && r.step % o.evalEvery == 0))) {
      progress.breakLine();
      Clock::time_point evalStart = Clock::now();
      if (!evaluate(session.get(), evalDataset.get(), o.evalBatches, info, rank, r.step,
                    metrics.get(), exitCode))
        return exitCode;
      evalSeconds += std::chrono::duration<double>(Clock::now() - evalStart).count();
    }
    if (checkpointing && o.checkpointEvery && r.step % o.checkpointEvery == 0) {
      if (!writeCheckpoint(session.get(), o.checkpointDir, dataPosition, primary, sharded, exitCode))
        return exitCode;
      lastCheckpoint = r.step;
    }
  }
  int64_t last = tg_session_steps_done(session.get());
  // A run with nothing left to train still evaluates what it loaded.
  if (evalDataset && last == first &&
      !evaluate(session.get(), evalDataset.get(), o.evalBatches, info, rank, last,
                metrics.get(), exitCode))
    return exitCode;
  if (checkpointing && lastCheckpoint != last &&
      !writeCheckpoint(session.get(), o.checkpointDir, dataPosition, primary, sharded, exitCode))
    return exitCode;
  if (!o.saveWeights.empty()) {
    if (!check(tg_session_save_weights_sharded(session.get(), o.saveWeights.c_str(),
                                               o.maxShardBytes),
               exitCode))
      return exitCode;
    std::printf("tgrun: saved the weights of step %" PRId64 " to %s\n", last,
                savedWeightsPath(o.saveWeights).c_str());
  }
  if (profiling) {
    std::string problem;
    if (!profiler.finish(problem))
      return error(problem);
  }

  double seconds = std::chrono::duration<double>(Clock::now() - start).count() - evalSeconds;
  if (last > first)
    std::printf("tgrun: trained steps %" PRId64 " to %" PRId64 " in %.2f s (%.0f tok/s%s), "
                "final loss %.4f%s\n",
                first + 1, last, seconds, double(last - first) * tokensPerStep / seconds,
                mfuText(double(last - first) * info.flops_per_step / seconds, peak, ", ").c_str(),
                r.loss,
                evalSeconds > 0 ? formatted(", and %.2f s of evaluation", evalSeconds).c_str()
                                : "");
  if (profiling)
    profiler.printTopCommands();
  return 0;
}

/// Before starting N ranks: the program must be one for N devices, said
/// once here rather than by every rank. Returns 0 or an exit code.
int checkRanksFitProgram(const Options &o, std::vector<uint8_t> bytes) {
  std::string source;
  if (int status = readVerifiedArtifact(o.artifact, bytes, source))
    return status;
  const tg::tgx::Mesh &mesh = *tg::tgx::GetProgram(bytes.data())->mesh();
  int64_t devices = tg::runtime::meshDevices(mesh);
  if (devices == o.ranks)
    return 0;
  return usageError(source + " is compiled for " + std::to_string(devices) + " rank" +
                    (devices > 1 ? "s" : "") + " (mesh " + tg::runtime::meshText(mesh) +
                    "), not the " + std::to_string(o.ranks) + " of -n " +
                    std::to_string(o.ranks) + ": pass -n " + std::to_string(devices) +
                    ", or compile it for these ranks (tgc compile ... --mesh dp=" +
                    std::to_string(o.ranks) + ")");
}

/// `tgrun -n N ...`: this process becomes Open MPI's mpirun, which starts N
/// copies of this executable (an --emit=exe binary included) with the same
/// arguments but -n. Returns only on failure.
int launchRanks(int argc, char **argv, int64_t ranks) {
  const char *mpirun = std::getenv("TG_MPIRUN");
  if (!mpirun || !*mpirun)
    mpirun = "mpirun";
  std::vector<std::string> args = {mpirun, "-n", std::to_string(ranks),
                                   // Ranks may outnumber cores (tests, laptops),
                                   // and pinning would stack them on one core.
                                   "--oversubscribe", "--bind-to", "none"};
  if (::geteuid() == 0)
    args.push_back("--allow-run-as-root"); // containers
  char self[4096];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0)
    return error("cannot find this executable to start its ranks (/proc/self/exe)");
  self[n] = '\0';
  args.push_back(self);
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "-n") {
      ++i;
      continue;
    }
    args.push_back(argv[i]);
  }
  std::vector<char *> pointers;
  for (std::string &arg : args)
    pointers.push_back(arg.data());
  pointers.push_back(nullptr);
  std::fflush(stdout);
  ::execvp(mpirun, pointers.data());
  return error(std::string("cannot start ") + mpirun + " for -n " + std::to_string(ranks) +
               " (" + std::strerror(errno) +
               "): install Open MPI (openmpi-bin), or set TG_MPIRUN to its mpirun");
}

/// Set by tgrun to the core it restarted itself with (restartWithBlasCore):
/// `--version` names it.
constexpr const char *kRestartedFor = "TGRUN_OPENBLAS_CORETYPE";

/// Starts this program again with OPENBLAS_CORETYPE=`core`
/// (tg_better_blas_core): OpenBLAS reads it only as it loads, which was
/// before main. Says so on a terminal (stderr), where it cannot mix with
/// output a caller parses. Returns only where the restart fails; the run
/// then goes on with OpenBLAS's own choice.
void restartWithBlasCore(const char *core, char **argv, const char *programName) {
  if (::isatty(STDERR_FILENO))
    std::fprintf(stderr,
                 "%s: OpenBLAS does not know this CPU and chose kernels without AVX2; "
                 "restarting with OPENBLAS_CORETYPE=%s (set OPENBLAS_CORETYPE to choose)\n",
                 programName, core);
  setenv("OPENBLAS_CORETYPE", core, 1);
  setenv(kRestartedFor, core, 1);
  execv("/proc/self/exe", argv);
  const int failure = errno;
  // This process keeps OpenBLAS's choice, and so do the ranks it may start.
  unsetenv("OPENBLAS_CORETYPE");
  unsetenv(kRestartedFor);
  std::fprintf(stderr, "%s: warning: cannot restart (%s): the matrix products run on "
                       "OpenBLAS's slower kernels\n",
               programName, std::strerror(failure));
}

} // namespace

int main(int argc, char **argv) {
  const char *slash = std::strrchr(argv[0], '/');
  const char *programName = slash ? slash + 1 : argv[0];
  if (const char *core = tg_better_blas_core())
    restartWithBlasCore(core, argv, programName);
  // A --emit=exe binary carries its program; plain tgrun does not.
  std::vector<uint8_t> embedded;
  tg::runtime::findEmbeddedArtifact("/proc/self/exe", embedded);

  if (argc > 1 && std::string(argv[1]) == "generate")
    return generate(argc - 1, argv + 1, embedded, programName);
  if (argc > 3 && std::string(argv[1]) == "-n" && std::string(argv[3]) == "generate")
    return usageError("generate runs as one process: tgrun generate PROGRAM.tgx ... "
                      "(without -n)");
  Options options;
  if (int status = parseArguments(argc, argv, !embedded.empty(), options))
    return status;
  if (options.help) {
    printHelp(programName, !embedded.empty());
    return 0;
  }
  if (options.version) {
    std::printf("%s (TGC " TG_VERSION " runtime)\n", programName);
    if (const char *core = std::getenv(kRestartedFor))
      std::printf("OpenBLAS: OPENBLAS_CORETYPE=%s, set by %s: OpenBLAS did not know this CPU "
                  "and chose kernels without AVX2\n",
                  core, programName);
    return 0;
  }
  // -n N starts the ranks, unless this process already is one of them.
  if (options.ranks > 1 && !std::getenv("OMPI_COMM_WORLD_SIZE")) {
    if (int status = checkRanksFitProgram(options, embedded))
      return status;
    return launchRanks(argc, argv, options.ranks);
  }
  tg_set_collective_timeout(options.collectiveTimeout);
  int status = run(options, embedded, programName);
  tg_finish_ranks(status == 0);
  return status;
}
