// tgc: the TGC compiler driver.
//
//   tgc compile MODEL.json|MODEL.mlir [--train TRAIN.json] [--emit=tg|summary]
//                                     [-o OUT] [--batch N] [--seq T]
#include "tg/Frontend/ModelBuilder.h"
#include "tg/Frontend/TrainConfig.h"
#include "tg/IR/TgDialect.h"
#include "tg/IR/TgOps.h"
#include "tg/Passes/FlopCount.h"
#include "tg/Passes/TrainStep.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
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
static cl::opt<std::string> inputPath(cl::Positional, cl::Required,
                                      cl::desc("<MODEL.json | MODEL.mlir>"),
                                      cl::sub(compileCommand));
static cl::opt<std::string> trainPath("train", cl::desc("TRAIN.json: build the training step"),
                                      cl::value_desc("TRAIN.json"),
                                      cl::sub(compileCommand));
enum class Emit { Tg, Summary };
static cl::opt<Emit> emit(
    "emit", cl::desc("What to write"), cl::init(Emit::Tg),
    cl::values(clEnumValN(Emit::Tg, "tg", "the graph in the tg dialect"),
               clEnumValN(Emit::Summary, "summary",
                          "parameters and FLOPs per token")),
    cl::sub(compileCommand));
static cl::opt<std::string> outputPath("o", cl::desc("Output file (default: stdout)"),
                                       cl::value_desc("OUT"), cl::init("-"),
                                       cl::sub(compileCommand));
enum class DType { FromConfig, F32, Bf16, F64 };
static cl::opt<DType> dtypeOpt(
    "dtype", cl::desc("Element type of the graph (default: TRAIN.json's precision)"),
    cl::init(DType::FromConfig),
    cl::values(clEnumValN(DType::F32, "f32", "float32"),
               clEnumValN(DType::Bf16, "bf16", "bfloat16 compute, f32 masters"),
               clEnumValN(DType::F64, "f64",
                          "float64 throughout, to check against a float64 "
                          "reference")),
    cl::sub(compileCommand));
static cl::opt<int64_t> batchOpt("batch", cl::desc("Forward graph batch size without --train"),
                                 cl::init(1), cl::sub(compileCommand));
static cl::opt<int64_t> seqOpt("seq", cl::desc("Forward graph sequence length without --train "
                                               "(default: the model's maximum)"),
                               cl::init(0), cl::sub(compileCommand));

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

static int compile(MLIRContext &ctx) {
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

  std::string error;
  auto output = openOutputFile(outputPath, &error);
  if (!output)
    return fail(error);
  if (emit == Emit::Summary) {
    printSummary(c, output->os());
  } else {
    c.module->print(output->os(), OpPrintingFlags().printNameLocAsPrefix());
    printOpCounts(*c.module, output->os());
  }
  output->keep();
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv,
                              "tgc: the TGC training-graph compiler\n\n"
                              "  tgc compile MODEL.json --emit=tg\n");
  MLIRContext ctx;
  ctx.loadDialect<tg::TgDialect, func::FuncDialect>();
  if (compileCommand)
    return compile(ctx);
  cl::PrintHelpMessage();
  return 1;
}
