// tgc: the TGC compiler driver.
//
//   tgc compile MODEL.json|MODEL.mlir [--train TRAIN.json] [--target cpu]
//       [--emit=tg|summary|tgx|exe] [--stats] [-o OUT] [--batch N] [--seq T]
#include "tg/Artifact/ArtifactWriter.h"
#include "tg/Frontend/ModelBuilder.h"
#include "tg/Frontend/TrainConfig.h"
#include "tg/IR/TgDialect.h"
#include "tg/IR/TgOps.h"
#include "tg/Passes/Decompose.h"
#include "tg/Passes/FlopCount.h"
#include "tg/Passes/Program.h"
#include "tg/Passes/TrainStep.h"
#include "tg/Targets/CpuTarget.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Timer.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

#include <map>

using namespace mlir;
using namespace mlir::tg::frontend;
namespace cl = llvm::cl;

static cl::SubCommand compileCommand("compile",
                                     "Compile a model description");
static cl::OptionCategory tgcCategory("tgc compile options");
static cl::opt<std::string> inputPath(cl::Positional, cl::Required,
                                      cl::desc("<MODEL.json | MODEL.mlir>"),
                                      cl::sub(compileCommand), cl::cat(tgcCategory));
static cl::opt<std::string> trainPath("train", cl::desc("TRAIN.json: build the training step"),
                                      cl::value_desc("TRAIN.json"),
                                      cl::sub(compileCommand), cl::cat(tgcCategory));
enum class Emit { Auto, Tg, Summary, Kernels, Tgx, Exe };
static cl::opt<Emit> emit(
    "emit",
    cl::desc("What to write (default: a .tgx artifact when -o ends in .tgx, "
             "else the tg graph)"),
    cl::init(Emit::Auto),
    cl::values(clEnumValN(Emit::Tg, "tg", "the graph in the tg dialect"),
               clEnumValN(Emit::Summary, "summary",
                          "parameters and FLOPs per token"),
               clEnumValN(Emit::Kernels, "kernels",
                          "the outlined kernels on memrefs, before LLVM (needs "
                          "--train)"),
               clEnumValN(Emit::Tgx, "tgx",
                          "the compiled training step, for tgrun (needs --train)"),
               clEnumValN(Emit::Exe, "exe",
                          "a standalone executable: tgrun with the artifact "
                          "embedded, taking tgrun's flags (needs --train)")),
    cl::sub(compileCommand), cl::cat(tgcCategory));
static cl::opt<std::string> outputPath("o", cl::desc("Output file (default: stdout)"),
                                       cl::value_desc("OUT"), cl::init("-"),
                                       cl::sub(compileCommand), cl::cat(tgcCategory));
enum class DType { FromConfig, F32, Bf16, F64 };
static cl::opt<DType> dtypeOpt(
    "dtype", cl::desc("Element type of the graph (default: TRAIN.json's precision)"),
    cl::init(DType::FromConfig),
    cl::values(clEnumValN(DType::F32, "f32", "float32"),
               clEnumValN(DType::Bf16, "bf16", "bfloat16 compute, f32 masters"),
               clEnumValN(DType::F64, "f64",
                          "float64 throughout, to check against a float64 "
                          "reference")),
    cl::sub(compileCommand), cl::cat(tgcCategory));
enum class Target { Cpu };
static cl::opt<Target> targetOpt(
    "target", cl::desc("Where the compiled step runs"), cl::init(Target::Cpu),
    cl::values(clEnumValN(Target::Cpu, "cpu", "this machine's CPU")),
    cl::sub(compileCommand), cl::cat(tgcCategory));
static cl::opt<bool> statsOpt(
    "stats",
    cl::desc("Print one JSON object with the memory plan, kernel and library "
             "call counts and FLOPs per step (needs --train); without -o "
             "nothing else is written"),
    cl::sub(compileCommand), cl::cat(tgcCategory));
static cl::opt<tg::GemmLowering> gemmOpt(
    "gemm", cl::desc("How matrix products run"), cl::init(tg::GemmLowering::Library),
    cl::values(clEnumValN(tg::GemmLowering::Library, "blas",
                          "calls to the target's BLAS (OpenBLAS on the CPU)"),
               clEnumValN(tg::GemmLowering::Generated, "generated",
                          "loop kernels generated like every other op")),
    cl::sub(compileCommand), cl::cat(tgcCategory));
static cl::opt<int64_t> batchOpt("batch", cl::desc("Forward graph batch size without --train"),
                                 cl::init(1), cl::sub(compileCommand), cl::cat(tgcCategory));
static cl::opt<int64_t> seqOpt("seq", cl::desc("Forward graph sequence length without --train "
                                               "(default: the model's maximum)"),
                               cl::init(0), cl::sub(compileCommand), cl::cat(tgcCategory));

namespace {
/// What the driver knows about the model it compiles.
struct Compilation {
  OwningOpRef<ModuleOp> module;
  std::optional<ModelConfig> model;
  std::optional<TrainConfig> train;
  int64_t batch = 0, seqLen = 0;
};
} // namespace

static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "tgc") << message << "\n";
  return 1;
}

/// Builds the module from a config.json (and TRAIN.json when given).
static llvm::Error buildFromConfig(MLIRContext &ctx, Compilation &c) {
  auto model = parseModelConfig(inputPath);
  if (!model)
    return model.takeError();
  c.model = *model;
  c.batch = batchOpt;
  c.seqLen = seqOpt ? int64_t(seqOpt) : model->maxPositions;
  if (!trainPath.empty()) {
    auto train = parseTrainConfig(trainPath);
    if (!train)
      return train.takeError();
    c.train = *train;
    c.batch = train->microBatchSize();
    c.seqLen = train->seqLen;
    if (c.seqLen > model->maxPositions)
      return llvm::createStringError(
          "%s: field 'seq_len': %lld exceeds the model's maximum of %lld "
          "positions (%s)",
          trainPath.c_str(), (long long)c.seqLen,
          (long long)model->maxPositions, inputPath.c_str());
  } else if (c.batch < 1 || c.seqLen < 1 || c.seqLen > model->maxPositions) {
    return llvm::createStringError(
        "--batch must be >= 1 and --seq within 1..%lld (the model's maximum)",
        (long long)model->maxPositions);
  }
  Location loc = FileLineColLoc::get(&ctx, inputPath, 0, 0);
  c.module = ModuleOp::create(loc);
  DType dtype = dtypeOpt;
  if (dtype == DType::FromConfig)
    dtype = c.train && c.train->precision == Precision::Bf16 ? DType::Bf16
                                                              : DType::F32;
  Type element = dtype == DType::Bf16  ? Type(BFloat16Type::get(&ctx))
                 : dtype == DType::F64 ? Type(Float64Type::get(&ctx))
                                       : Type(Float32Type::get(&ctx));
  func::FuncOp forward =
      buildForward(*c.module, *c.model, c.batch, c.seqLen, element, loc);
  if (c.train && failed(tg::buildTrainStep(forward, *c.train)))
    return llvm::createStringError("building the training step failed");
  return llvm::Error::success();
}

static void printSummary(Compilation &c, llvm::raw_ostream &os) {
  for (auto func : c.module->getOps<func::FuncOp>()) {
    int64_t params = 0, paramArgs = 0, tokens = 0;
    for (auto [i, arg] : llvm::enumerate(func.getArguments())) {
      if (!func.getArgAttr(i, tg::kParamAttr))
        continue;
      ++paramArgs;
      params += cast<RankedTensorType>(arg.getType()).getNumElements();
    }
    for (auto [i, arg] : llvm::enumerate(func.getArguments()))
      if (auto name = func.getArgAttrOfType<StringAttr>(i, tg::kInputAttr);
          name && name.getValue() == "tokens")
        tokens = cast<RankedTensorType>(arg.getType()).getNumElements();
    int64_t flops = tg::countMatmulFlops(func);
    os << "function @" << func.getSymName() << "\n";
    os << llvm::formatv("  parameters:       {0} in {1} tensors ({2:f1} MiB as f32)\n",
                        params, paramArgs, params * 4.0 / (1 << 20));
    os << llvm::formatv("  matmul FLOPs:     {0:e3} per call", double(flops));
    if (tokens)
      os << llvm::formatv(", {0:e3} per token ({1} tokens)",
                          double(flops) / double(tokens), tokens);
    os << "\n";
  }
}

/// Appends "// op counts: tg.add 12, ..." so a reader sees the graph's size.
static void printOpCounts(ModuleOp module, llvm::raw_ostream &os) {
  std::map<std::string, int64_t> counts;
  module.walk([&](Operation *op) {
    if (isa<tg::TgDialect>(op->getDialect()))
      ++counts[op->getName().getStringRef().str()];
  });
  int64_t total = 0;
  os << "\n// op counts:";
  for (auto &[name, count] : counts) {
    os << " " << name << " " << count << ";";
    total += count;
  }
  os << " total " << total << "\n";
}

/// The vocabulary size: rows of the table the tokens are looked up in.
static int64_t vocabSizeOf(func::FuncOp step) {
  int64_t vocab = 0;
  step.walk([&](tg::EmbeddingOp op) {
    if (!vocab)
      vocab = cast<RankedTensorType>(op.getTable().getType()).getDimSize(0);
  });
  return vocab;
}

static void printStats(const tg::Program &program, int64_t flops,
                       double compileSeconds, llvm::raw_ostream &os) {
  int64_t gemms = 0, launches = 0;
  for (const tg::ProgramCommand &command : program.commands) {
    gemms += command.kind == tg::ProgramCommand::Kind::Gemm;
    launches += command.kind == tg::ProgramCommand::Kind::Kernel;
  }
  llvm::json::Object stats{
      {"param_bytes", (int64_t)program.paramBytes},
      {"optimizer_bytes", (int64_t)program.optimizerBytes},
      {"peak_activation_bytes", (int64_t)program.peakWorkingBytes},
      {"arena_bytes", (int64_t)program.arenaBytes},
      {"kernels", (int64_t)program.kernelNames.size()},
      {"kernel_launches", launches},
      {"library_calls", gemms},
      {"commands", (int64_t)program.commands.size()},
      {"flops_per_step", flops},
      {"plan_seconds", compileSeconds}};
  os << llvm::json::Value(std::move(stats)) << "\n";
}

/// The tgrun binary that --emit=exe embeds the artifact into: $TG_TGRUN, or
/// tgrun next to tgc, or on PATH.
static llvm::Expected<std::string> findTgrun(const char *argv0) {
  if (const char *fromEnv = std::getenv("TG_TGRUN"); fromEnv && *fromEnv)
    return std::string(fromEnv);
  std::string self = llvm::sys::fs::getMainExecutable(
      argv0, reinterpret_cast<void *>(&findTgrun));
  SmallString<256> sibling(llvm::sys::path::parent_path(self));
  llvm::sys::path::append(sibling, "tgrun");
  if (llvm::sys::fs::can_execute(sibling))
    return std::string(sibling);
  if (auto onPath = llvm::sys::findProgramByName("tgrun"))
    return *onPath;
  return llvm::createStringError(
      "--emit=exe needs the tgrun binary: build it, put it next to tgc or on "
      "PATH, or set TG_TGRUN");
}

/// Writes -o (or stdout) with `write`, keeping the file only when done.
static int writeOutput(llvm::function_ref<void(llvm::raw_ostream &)> write) {
  std::string error;
  auto output = openOutputFile(outputPath, &error);
  if (!output)
    return fail(error);
  write(output->os());
  output->keep();
  return 0;
}

/// Plans, lowers and (for --emit=tgx|exe) compiles the training step.
static int compileProgram(Compilation &c, Emit what, const char *argv0) {
  auto step = c.module->lookupSymbol<func::FuncOp>("train_step");
  if (!step)
    return fail("--stats, --emit=tgx and --emit=exe compile the training "
                "step: pass --train TRAIN.json (or an .mlir input with "
                "@train_step)");
  bool writesArtifact = what == Emit::Tgx || what == Emit::Exe;
  if (writesArtifact && outputPath == "-")
    return fail("--emit=tgx and --emit=exe write a binary file: give it a "
                "name with -o OUT.tgx");
  llvm::TimeRecord start = llvm::TimeRecord::getCurrentTime();
  int64_t flops = tg::countMatmulFlops(step);
  if (failed(tg::decomposeAttention(step)))
    return 1;
  auto program = tg::lowerToProgram(step, {gemmOpt});
  if (failed(program))
    return 1;
  double seconds = llvm::TimeRecord::getCurrentTime().getWallTime() -
                   start.getWallTime();
  if (statsOpt)
    printStats(*program, flops, seconds, llvm::outs());
  if (what == Emit::Kernels)
    return writeOutput(
        [&](llvm::raw_ostream &os) { program->kernels->print(os); });
  if (!writesArtifact)
    return 0;

  for (const tg::ProgramCommand &command : program->commands)
    if (command.kind == tg::ProgramCommand::Kind::Gemm &&
        !command.gemm.elementType.isF32() && !command.gemm.elementType.isF64())
      return fail("the CPU target runs matrix products in f32 or f64 only, "
                  "and '" + command.label + "' is in bf16: compile with "
                  "--dtype=f32 (or precision \"fp32\" in TRAIN.json)");
  auto kernels = tg::compileHostKernels(*program->kernels, program->kernelNames);
  if (!kernels)
    return fail(llvm::toString(kernels.takeError()));
  tg::ArtifactInfo info;
  info.producer = "tgc 0.1";
  if (auto text = llvm::MemoryBuffer::getFile(inputPath))
    info.modelJson = (*text)->getBuffer().str();
  for (const tg::ProgramSlot &slot : program->slots)
    if (slot.name == "tokens" && slot.shape.size() == 2) {
      info.batchSize = slot.shape[0];
      info.seqLen = slot.shape[1];
    }
  info.vocabSize = vocabSizeOf(step);
  info.seed = c.train ? (uint64_t)c.train->seed : 0;
  info.flopsPerStep = (double)flops;
  std::vector<uint8_t> artifact = tg::writeArtifact(*program, *kernels, info);
  if (what == Emit::Tgx)
    return writeOutput([&](llvm::raw_ostream &os) {
      os.write(reinterpret_cast<const char *>(artifact.data()), artifact.size());
    });
  auto tgrun = findTgrun(argv0);
  if (!tgrun)
    return fail(llvm::toString(tgrun.takeError()));
  std::string error;
  if (!tg::writeExecutable(*tgrun, artifact, outputPath, error))
    return fail(error);
  return 0;
}

static int compile(MLIRContext &ctx, const char *argv0) {
  Compilation c;
  if (llvm::StringRef(inputPath).ends_with(".mlir")) {
    llvm::SourceMgr sources;
    SourceMgrDiagnosticHandler handler(sources, &ctx);
    c.module = parseSourceFile<ModuleOp>(inputPath, sources, &ctx);
    if (!c.module)
      return 1;
  } else if (llvm::Error error = buildFromConfig(ctx, c)) {
    return fail(llvm::toString(std::move(error)));
  }
  if (failed(verify(*c.module)))
    return fail("the generated graph failed verification (a tgc bug: please "
                "report it with the input file)");

  Emit what = emit;
  if (what == Emit::Auto)
    what = StringRef(outputPath).ends_with(".tgx") ? Emit::Tgx : Emit::Tg;
  if (statsOpt || what == Emit::Kernels || what == Emit::Tgx ||
      what == Emit::Exe)
    return compileProgram(c, what, argv0);

  return writeOutput([&](llvm::raw_ostream &os) {
    if (what == Emit::Summary) {
      printSummary(c, os);
      return;
    }
    c.module->print(os, OpPrintingFlags().printNameLocAsPrefix());
    printOpCounts(*c.module, os);
  });
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(tgcCategory, compileCommand);
  cl::ParseCommandLineOptions(
      argc, argv,
      "tgc: the TGC training-graph compiler\n\n"
      "  tgc compile MODEL.json --train TRAIN.json -o OUT.tgx   (then: tgrun "
      "OUT.tgx --data TOKENS.bin)\n"
      "  tgc compile MODEL.json --train TRAIN.json --emit=exe -o NAME\n"
      "  tgc compile MODEL.json --train TRAIN.json --stats\n"
      "  tgc compile MODEL.json [--train TRAIN.json] --emit=tg|summary\n");
  MLIRContext ctx;
  ctx.loadDialect<tg::TgDialect, func::FuncDialect>();
  if (compileCommand)
    return compile(ctx, argv[0]);
  cl::PrintHelpMessage();
  return 1;
}
