// tgc: the TGC compiler driver.
//
//   tgc compile MODEL.json|MODEL.mlir [--train TRAIN.json] [--target cpu]
//       [--emit=tg|summary|tgx|exe] [--stats] [-o OUT] [--batch N] [--seq T]
//       [--mesh dp=D]
#include "tg/Artifact/ArtifactWriter.h"
#include "tg/Driver/Driver.h"
#include "tg/Exec/IR/ExecOps.h"
#include "tg/IR/TgDialect.h"
#include "tg/IR/TgOps.h"
#include "tg/Passes/FlopCount.h"
#include "tg/Passes/Interface.h"
#include "tg/Passes/Passes.h"
#include "tg/Pipeline/Pipeline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Timer.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"
#include "llvm/ADT/TypeSwitch.h"

#include <map>

using namespace mlir;
using namespace mlir::tg::frontend;
namespace cl = llvm::cl;

static cl::SubCommand compileCommand("compile",
                                     "Compile a model description");
static cl::OptionCategory tgcCategory("tgc compile options");

/// The parser of an enum option that, given another value, names the valid
/// ones (LLVM's only says it found no such option).
template <typename T> struct ListingParser : cl::parser<T> {
  using cl::parser<T>::parser;
  bool parse(cl::Option &option, llvm::StringRef name, llvm::StringRef arg, T &value) {
    std::string valid;
    for (const auto &v : this->Values) {
      if (v.Name == arg) {
        value = v.V.getValue();
        return false;
      }
      if (!v.Name.empty()) // the value of a bare --stats
        valid += (valid.empty() ? "" : ", ") + v.Name.str();
    }
    return option.error("'" + arg + "' is not a valid value; use one of: " + valid);
  }
};
template <typename T> using EnumOption = cl::opt<T, false, ListingParser<T>>;
static cl::opt<std::string> inputPath(cl::Positional, cl::Required,
                                      cl::desc("<MODEL.json | MODEL.mlir>"),
                                      cl::sub(compileCommand), cl::cat(tgcCategory));
static cl::opt<std::string> trainPath("train", cl::desc("TRAIN.json: build the training step"),
                                      cl::value_desc("TRAIN.json"),
                                      cl::sub(compileCommand), cl::cat(tgcCategory));
enum class Emit { Auto, Tg, Summary, Kernels, Tgx, Exe, Ptx };
static EnumOption<Emit> emit(
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
               clEnumValN(Emit::Ptx, "ptx",
                          "--target cuda: each kernel module's PTX, as "
                          "DIR/NAME.ptx (-o DIR)"),
               clEnumValN(Emit::Exe, "exe",
                          "a standalone executable: tgrun with the artifact "
                          "embedded, taking tgrun's flags (needs --train)")),
    cl::sub(compileCommand), cl::cat(tgcCategory));
static cl::opt<std::string> outputPath("o", cl::desc("Output file (default: stdout)"),
                                       cl::value_desc("OUT"), cl::init("-"),
                                       cl::sub(compileCommand), cl::cat(tgcCategory));
enum class DType { FromConfig, F32, Bf16, F64 };
static EnumOption<DType> dtypeOpt(
    "dtype", cl::desc("Element type of the graph (default: TRAIN.json's precision)"),
    cl::init(DType::FromConfig),
    cl::values(clEnumValN(DType::F32, "f32", "float32"),
               clEnumValN(DType::Bf16, "bf16", "bfloat16 compute, f32 masters"),
               clEnumValN(DType::F64, "f64",
                          "float64 throughout, to check against a float64 "
                          "reference")),
    cl::sub(compileCommand), cl::cat(tgcCategory));
enum class Target { Cpu, Cuda };
static EnumOption<Target> targetOpt(
    "target", cl::desc("Where the compiled step runs"), cl::init(Target::Cpu),
    cl::values(clEnumValN(Target::Cpu, "cpu", "this machine's CPU"),
               clEnumValN(Target::Cuda, "cuda",
                          "NVIDIA GPUs: PTX kernels and cuBLASLt GEMMs "
                          "(see --cuda-arch)")),
    cl::sub(compileCommand), cl::cat(tgcCategory));
static cl::opt<std::string> cudaArchOpt(
    "cuda-arch",
    cl::desc("GPU architecture of --target cuda: sm_90a (H100, H200; the "
             "default), sm_90, sm_89 or sm_80"),
    cl::init("sm_90a"), cl::sub(compileCommand), cl::cat(tgcCategory));
static cl::opt<int64_t> cudaSmCountOpt(
    "cuda-sm-count",
    cl::desc("The streaming multiprocessors --target cuda sizes the kernels' "
             "grids for, 1 to 1024 (default: --cuda-arch's full part, 132 "
             "for sm_90a; an H100 PCIe has 114)"),
    cl::init(0), cl::sub(compileCommand), cl::cat(tgcCategory));
enum class HalfMath { Approximate, Exact };
static EnumOption<HalfMath> cudaHalfMathOpt(
    "cuda-half-math",
    cl::desc("How --target cuda computes bf16 and f16 exp, tanh and "
             "division (in f32, then rounded to 16 bits)"),
    cl::init(HalfMath::Approximate),
    cl::values(clEnumValN(HalfMath::Approximate, "approximate",
                          "the fast f32 approximations, whose error is "
                          "hundreds of times below the 16-bit rounding (the "
                          "default)"),
               clEnumValN(HalfMath::Exact, "exact",
                          "libdevice's exact f32 routines and IEEE division")),
    cl::sub(compileCommand), cl::cat(tgcCategory));
enum class CudaAttention { Decomposed, Flash, Cudnn };
static EnumOption<CudaAttention> cudaAttentionOpt(
    "cuda-attention",
    cl::desc("How --target cuda computes bf16 attention of head dim 64 or "
             "128 (with fusion)"),
    cl::init(CudaAttention::Cudnn),
    cl::values(clEnumValN(CudaAttention::Decomposed, "decomposed",
                          "batched GEMMs (cuBLASLt) and softmax kernels over "
                          "the score matrices"),
               clEnumValN(CudaAttention::Flash, "flash",
                          "the runtime's flash attention kernels (tensor "
                          "cores, no score matrix in memory; the GPT-2-medium "
                          "step 1.25x faster than decomposed on an H100)"),
               clEnumValN(CudaAttention::Cudnn, "cudnn",
                          "cuDNN's fused attention (the runtime loads cuDNN "
                          "9) where flash would use the runtime's kernels, "
                          "a rotary embedding applied outside; the runtime's "
                          "kernels where cuDNN is missing or refuses at load "
                          "(the default: the GPT-2-medium step 1.21x faster "
                          "than flash on an H200, docs/perf.md)")),
    cl::sub(compileCommand), cl::cat(tgcCategory));
static cl::opt<int64_t> cudaRowRegistersOpt(
    "cuda-row-registers",
    cl::desc("Registers a thread of a --target cuda row kernel (norms, "
             "softmax, the loss: a row a warp) may use at most, 32 to 255, so "
             "that more blocks reside on a multiprocessor (ptxas spills what "
             "does not fit); 0, the default: what one block may have"),
    cl::init(0), cl::sub(compileCommand), cl::cat(tgcCategory));
static cl::opt<int64_t> cudaF32PartialTermsOpt(
    "cuda-f32-partial-terms",
    cl::desc("A --target cuda thread adds its share of a float64 sum (norms, "
             "the loss, bias gradients) in float32 where the share is at "
             "most N terms, 0 to 65536, then joins the rest in float64; 0: "
             "float64 throughout"),
    cl::init(256), cl::sub(compileCommand), cl::cat(tgcCategory));
static cl::opt<int64_t> cudaColumnShareOpt(
    "cuda-column-share",
    cl::desc("A --target cuda thread's share of a split column sum (a bias "
             "or norm gradient's block of 8 columns) is at least N rows, 16 "
             "to 4096: fewer rows a share, more threads"),
    cl::init(32), cl::sub(compileCommand), cl::cat(tgcCategory));
static cl::opt<bool> cudaLastBlockCombinesOpt(
    "cuda-last-block-combines",
    cl::desc("Where a --target cuda split column sum's blocks join their "
             "shares, the last block of each group of 32 column blocks to "
             "store its partials combines the group's, instead of a second "
             "launch"),
    cl::init(false), cl::sub(compileCommand), cl::cat(tgcCategory));
static cl::opt<bool> cudaColumnSumsInRowPassOpt(
    "cuda-column-sums-in-row-pass",
    cl::desc("Run a --target cuda row pass (a norm gradient's, a row a warp) "
             "and the column sums over its rows after it (the norm's weight "
             "and bias gradients) as one launch, the columns read again from "
             "the L1 rather than device memory"),
    cl::init(false), cl::sub(compileCommand), cl::cat(tgcCategory));
static cl::opt<bool> cudaWeightGradientStreamOpt(
    "cuda-weight-gradient-stream",
    cl::desc("Run the --target cuda GEMMs whose products only the optimizer "
             "reads (the weight gradients) on a stream of their own, beside "
             "the backward pass; opt-in: the GPT-2-medium step ran 1% slower "
             "with it on an H200"),
    cl::init(false), cl::sub(compileCommand), cl::cat(tgcCategory));
enum class Stats { None, Table, Json };
static EnumOption<Stats> statsOpt(
    "stats",
    cl::desc("Print the memory plan per device (and whether it fits in "
             "--device-memory), kernel and library call counts, FLOPs and "
             "communication per step (needs --train); without -o nothing "
             "else is written"),
    cl::ValueOptional, cl::init(Stats::None),
    cl::values(clEnumValN(Stats::Table, "", "a table with units (--stats)"),
               clEnumValN(Stats::Table, "table", "the same"),
               clEnumValN(Stats::Json, "json", "one JSON object")),
    cl::sub(compileCommand), cl::cat(tgcCategory));
static cl::opt<double> deviceMemoryOpt(
    "device-memory",
    cl::desc("Memory of one device in GB (10^9 bytes), against which "
             "--stats says whether the step fits, and a tenth of which "
             "--target cuda gives to the attention probabilities kept for "
             "the gradient (default 80, an H100's)"),
    cl::init(80), cl::value_desc("GB"), cl::sub(compileCommand),
    cl::cat(tgcCategory));
static cl::opt<int64_t> causalBlocksOpt(
    "causal-blocks",
    cl::desc("Blocks of queries a decomposed causal attention of at least "
             "512 queries is computed in, each over only the keys its "
             "queries see: 2 (the default) does 3/4 of the score products' "
             "work and memory, for a few more kernels; 1: the whole "
             "attention at once"),
    cl::init(2), cl::value_desc("N"), cl::sub(compileCommand),
    cl::cat(tgcCategory));
enum class GemmLowering { Library, Generated };
static EnumOption<GemmLowering> gemmOpt(
    "gemm", cl::desc("How matrix products run"), cl::init(GemmLowering::Library),
    cl::values(clEnumValN(GemmLowering::Library, "blas",
                          "calls to the target's BLAS (OpenBLAS on the CPU)"),
               clEnumValN(GemmLowering::Generated, "generated",
                          "loop kernels generated like every other op")),
    cl::sub(compileCommand), cl::cat(tgcCategory));
static cl::opt<cl::boolOrDefault> alignGemmRowsOpt(
    "align-gemm-rows",
    cl::desc("Pad the operands of library GEMMs whose stored rows are not "
             "16-byte aligned (=true or =false; default: on for --target "
             "cuda, whose cuBLASLt tensor-core kernels need it, off on the "
             "CPU)"),
    cl::sub(compileCommand), cl::cat(tgcCategory));
static cl::opt<bool> noFusionOpt(
    "no-fusion",
    cl::desc("Turn off every fusion pass, to compare or to find a fusion at "
             "fault"),
    cl::sub(compileCommand), cl::cat(tgcCategory));
/// A fusion pass by its index in tg::driver::fusionSwitches(), the values
/// of --no-fuse and --fuse (added from that table in main).
enum class Fusion : unsigned {};
static cl::list<Fusion, bool, ListingParser<Fusion>> noFuseOpt(
    "no-fuse", cl::desc("Turn off one fusion pass (comma-separated list)"),
    cl::CommaSeparated, cl::sub(compileCommand), cl::cat(tgcCategory));
static cl::list<Fusion, bool, ListingParser<Fusion>> fuseOpt(
    "fuse",
    cl::desc("Turn on a fusion pass the target leaves off (comma-separated "
             "list): gemm-activation on the CPU, to check it there; "
             "attention-rope on CUDA; gemm-bias-grad on either"),
    cl::CommaSeparated, cl::sub(compileCommand), cl::cat(tgcCategory));
static cl::opt<double> maxScoreMibOpt(
    "max-score-mib",
    cl::desc("Flash attention wherever the decomposed attention's score "
             "matrix (all heads of a micro-batch) would exceed this many MiB "
             "(default 32; 0: everywhere); below it, where estimated faster"),
    cl::init(32), cl::sub(compileCommand), cl::cat(tgcCategory));
static cl::opt<bool> fusionRemarksOpt(
    "fusion-remarks",
    cl::desc("Report every fusion decision, and why, as a remark at the op"),
    cl::sub(compileCommand), cl::cat(tgcCategory));
static cl::opt<double> bucketMbOpt(
    "bucket-mb",
    cl::desc("Largest bucket of data-parallel gradient all-reduces, in MiB "
             "(default 25, PyTorch DDP's; 0: one all-reduce per gradient)"),
    cl::init(25), cl::value_desc("MiB"), cl::sub(compileCommand),
    cl::cat(tgcCategory));
static cl::opt<bool> verifyEachOpt(
    "verify-each",
    cl::desc("Verify the IR after every pass, not only before and after the "
             "pipeline (slower; finds the pass that breaks it)"),
    cl::sub(compileCommand), cl::cat(tgcCategory));
static cl::opt<std::string> meshOpt(
    "mesh",
    cl::desc("Device mesh of the training step: dp=D splits the batch over D "
             "data-parallel ranks (mesh axis \"data\"); tp=T splits heads, MLP "
             "features and the vocabulary over T tensor-parallel ranks "
             "(Megatron style, mesh axis \"tensor\"); ranks = D x T"),
    cl::value_desc("dp=D[,tp=T]"), cl::sub(compileCommand),
    cl::cat(tgcCategory));
static cl::opt<bool> sequenceParallelOpt(
    "sequence-parallel",
    cl::desc("Split norms, residuals and embeddings along the sequence "
             "over the tp ranks (Megatron's sequence parallelism; needs "
             "tp > 1)"),
    cl::sub(compileCommand), cl::cat(tgcCategory));
static cl::opt<int64_t> zeroOpt(
    "zero",
    cl::desc("ZeRO stage: 0 (default: every dp rank holds the whole AdamW "
             "state) or 1 (each dp rank holds 1/dp of it; needs --mesh dp=D "
             "with D > 1)"),
    cl::init(0), cl::value_desc("N"), cl::sub(compileCommand),
    cl::cat(tgcCategory));
static cl::opt<int64_t> batchOpt("batch", cl::desc("Forward graph batch size without --train"),
                                 cl::init(1), cl::sub(compileCommand), cl::cat(tgcCategory));
static cl::opt<int64_t> seqOpt("seq", cl::desc("Forward graph sequence length without --train "
                                               "(default: the model's maximum)"),
                               cl::init(0), cl::sub(compileCommand), cl::cat(tgcCategory));

static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "tgc") << message << "\n";
  return 1;
}

static void printSummary(tg::driver::Compilation &c, llvm::raw_ostream &os) {
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

/// `bytes` with a binary unit: "3.99 GiB".
static std::string bytesText(int64_t bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = double(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  return llvm::formatv(unit ? "{0:f2} {1}" : "{0:f0} {1}", value, units[unit]).str();
}

/// How the step's attention ops are computed, and why, grouped by kernel
/// and reason (the numbers after a reason's ':' aside).
template <typename Row>
static void printAttentionRows(const llvm::json::Array *plan, Row &row) {
  if (!plan) {
    row("attention", "decomposed",
        "tg-fuse-attention off (--no-fuse=attention or --no-fusion)");
    return;
  }
  int64_t flash = 0;
  SmallVector<std::pair<std::string, int64_t>> reasons; // in first-seen order
  for (const llvm::json::Value &entry : *plan) {
    const llvm::json::Object &op = *entry.getAsObject();
    llvm::StringRef kernel = *op.getString("kernel");
    flash += kernel == "flash" || kernel == "cudnn";
    std::string reason =
        (kernel + ": " + op.getString("reason")->split(':').first).str();
    auto it = llvm::find_if(reasons, [&](auto &r) { return r.first == reason; });
    if (it == reasons.end())
      reasons.push_back({reason, 1});
    else
      ++it->second;
  }
  // Flash counts cuDNN's fused attention: its own rows say which is which.
  llvm::StringRef what = "attention flash/decomposed";
  std::string value =
      llvm::formatv("{0} / {1}", flash, int64_t(plan->size()) - flash);
  for (auto [i, reason] : llvm::enumerate(reasons))
    row(i == 0 ? what : "", i == 0 ? value : "",
        llvm::formatv("{0} ({1} ops)", reason.first, reason.second).str());
  if (reasons.empty())
    row(what, value);
}

/// The stats as a table with units, for people (--stats=json has the same
/// figures for programs).
static void printStatsTable(const llvm::json::Object &stats, llvm::StringRef mesh,
                            int64_t devices, llvm::raw_ostream &os) {
  auto number = [&](llvm::StringRef key) { return *stats.getInteger(key); };
  const llvm::json::Object &comm = *stats.getObject("communication");
  int64_t total = number("arena_bytes");
  double limit = deviceMemoryOpt * 1e9;
  os << "tgc: the step on " << devices << (devices == 1 ? " device" : " devices") << " ("
     << mesh << "), per device:\n";
  auto row = [&](llvm::StringRef what, const std::string &value, llvm::StringRef note = "") {
    os << llvm::formatv("  {0,-26} {1,14}", what, value);
    if (!note.empty())
      os << "  " << note;
    os << "\n";
  };
  row("parameters", bytesText(number("param_bytes")));
  row("optimizer state (AdamW)", bytesText(number("optimizer_bytes")));
  if (number("compute_copy_bytes"))
    row("compute copies", bytesText(number("compute_copy_bytes")),
        "the parameters in the compute precision, kept between steps");
  row("activations (peak)", bytesText(number("peak_activation_bytes")),
      "gradients and temporaries at the plan's peak");
  std::string device = llvm::formatv("{0} GB", llvm::format("%g", double(deviceMemoryOpt)));
  row("total (the arena)", bytesText(total),
      double(total) <= limit
          ? llvm::formatv("fits in {0} ({1:f1}%)", device, 100 * total / limit).str()
          : llvm::formatv("does NOT fit in {0}: {1:f1} GB over", device, (total - limit) / 1e9)
                .str());
  row("FLOPs per step", llvm::formatv("{0:e3}", double(number("flops_per_step"))).str(),
      "matmul and attention");
  row("kernels / launches",
      std::to_string(number("kernels")) + " / " +
          std::to_string(number("kernel_launches")),
      "a step's; a CUDA kernel's phases are launches of their own once "
      "compiled (with -o)");
  row("kernel bytes per step", bytesText(number("kernel_bytes")),
      "read and written by the kernels (GEMMs aside)");
  row("library calls (GEMMs)", std::to_string(number("library_calls")));
  row("library bytes per step", bytesText(number("library_bytes")),
      "read and written by the GEMMs and attention calls (each matrix once)");
  if (number("attention_calls"))
    row("attention calls", std::to_string(number("attention_calls")),
        "Attention commands: the runtime's flash kernels or cuDNN's");
  printAttentionRows(stats.getArray("attention"), row);
  row("commands", std::to_string(number("commands")));
  if (devices > 1) {
    row("all-reduce per step", bytesText(*comm.getInteger("all_reduce_bytes")));
    row("reduce-scatter per step", bytesText(*comm.getInteger("reduce_scatter_bytes")));
    row("all-gather per step", bytesText(*comm.getInteger("all_gather_bytes")));
    row("collectives", std::to_string(*comm.getInteger("collectives")));
  }
  row("planned in", llvm::formatv("{0:f2} s", *stats.getNumber("plan_seconds")).str());
}

/// What a GEMM or attention call reads and writes: each matrix of a GEMM
/// once (one a or b for the products its zero strides share) with its bias,
/// addend, aux or bias gradient, an attention call's operands whole; 0 for
/// other commands.
static int64_t libraryCallBytes(Operation *op) {
  auto bytesOf = [](Value buffer) {
    return tg::exec::getByteSize(cast<MemRefType>(buffer.getType()));
  };
  if (auto attention = dyn_cast<tg::exec::AttentionOp>(op)) {
    int64_t bytes = 0;
    for (Value buffer : llvm::concat<Value>(attention.getInputs(), attention.getOutputs()))
      bytes += bytesOf(buffer);
    return bytes;
  }
  auto gemm = dyn_cast<tg::exec::GemmOp>(op);
  if (!gemm)
    return 0;
  int64_t element = tg::exec::getElementByteSize(gemm.getC().getType().getElementType());
  int64_t bytes = 0;
  int64_t inner = gemm.getInnerBatch(), outer = gemm.getBatch() / inner;
  for (unsigned operand = 0; operand < 3; ++operand) {
    tg::exec::GemmOp::Operand o = gemm.getOperandLayout(operand);
    int64_t copies = (o.stride == 0 ? 1 : outer) * (o.innerStride == 0 ? 1 : inner);
    bytes += o.rows * o.cols * copies * element;
  }
  for (Value extra : {gemm.getBias(), gemm.getAddend(), gemm.getAux(), gemm.getBiasGrad()})
    if (extra)
      bytes += bytesOf(extra);
  return bytes;
}

/// The memory plan and command counts of the compiled program, as JSON.
static void printStats(ModuleOp module, double planSeconds,
                       llvm::raw_ostream &os) {
  auto program = module.lookupSymbol<tg::exec::ProgramOp>("train_step");
  int64_t params = 0, moments = 0, copies = 0, commands = 0, launches = 0,
          gemms = 0, attentionCalls = 0, kernelBytes = 0, libraryBytes = 0;
  for (auto r : program.getBlock().getOps<tg::exec::ResourceOp>()) {
    using tg::exec::ResourceKind;
    if (!tg::exec::getPackMembers(r).empty()) // counted as its members
      continue;
    if (r.getKind() == ResourceKind::parameter)
      params += r.getByteSize();
    if (r.getKind() == ResourceKind::adam_m ||
        r.getKind() == ResourceKind::adam_v)
      moments += r.getByteSize();
    if (r.getKind() == ResourceKind::compute_copy)
      copies += r.getByteSize();
  }
  // GPU launches of each kernel (its phases; a CPU kernel is one call).
  llvm::StringMap<int64_t> launchesOf;
  for (auto binary : module.getOps<tg::exec::BinaryOp>())
    for (auto [kernel, count] :
         llvm::zip(binary.getKernels(), binary.getLaunchCounts()))
      launchesOf[(binary.getSymName() +
                  "::" + cast<StringAttr>(kernel).getValue())
                     .str()] = count;
  for (Operation &op : program.getBlock()) {
    commands += tg::exec::isCommand(&op);
    // What a kernel moves: each buffer it reads or writes, once (a lower
    // bound where it reads one several times; exact for elementwise ones).
    if (auto dispatch = dyn_cast<tg::exec::DispatchOp>(op)) {
      SymbolRefAttr kernel = dispatch.getKernel();
      auto count = launchesOf.find((kernel.getRootReference().getValue() +
                                    "::" + kernel.getLeafReference().getValue())
                                       .str());
      launches += count == launchesOf.end() ? 1 : count->second;
      for (Value buffer : llvm::concat<Value>(dispatch.getInputs(),
                                              dispatch.getOutputs()))
        kernelBytes +=
            tg::exec::getByteSize(cast<MemRefType>(buffer.getType()));
    }
    gemms += isa<tg::exec::GemmOp>(op);
    attentionCalls += isa<tg::exec::AttentionOp>(op);
    libraryBytes += libraryCallBytes(&op);
  }
  int64_t kernels = 0;
  for (auto kernelModule : module.getOps<ModuleOp>())
    kernels += llvm::range_size(kernelModule.getOps<func::FuncOp>());
  for (auto binary : module.getOps<tg::exec::BinaryOp>())
    kernels += binary.getKernels().size();
  // Bytes each rank contributes to the collectives of one step, by kind.
  int64_t allReduceBytes = 0, reduceScatterBytes = 0, allGatherBytes = 0,
          collectives = 0;
  for (Operation &op : program.getBlock()) {
    int64_t *bytes =
        llvm::TypeSwitch<Operation *, int64_t *>(&op)
            .Case([&](tg::exec::AllReduceOp) { return &allReduceBytes; })
            .Case([&](tg::exec::ReduceScatterOp) { return &reduceScatterBytes; })
            .Case([&](tg::exec::AllGatherOp) { return &allGatherBytes; })
            .Default([](Operation *) { return nullptr; });
    if (!bytes)
      continue;
    *bytes += tg::exec::getByteSize(
        cast<MemRefType>(op.getOperand(0).getType()));
    ++collectives;
  }
  llvm::json::Object mesh;
  std::string meshText; // in the program's axis order, which JSON loses
  int64_t devices = 1;
  for (auto [axis, size] :
       llvm::zip(program.getMeshAxes().getAsValueRange<StringAttr>(),
                 program.getMeshShape())) {
    mesh[axis] = size;
    meshText += (meshText.empty() ? "" : " x ") + axis.str() + "=" + std::to_string(size);
    devices *= size;
  }
  int64_t arena = program.getArenaSize().value_or(0);
  // How each attention op is computed and why (tg-fuse-attention's plan;
  // absent where that pass did not run).
  std::optional<llvm::json::Array> attention;
  if (auto plan = program->getAttrOfType<ArrayAttr>(tg::kAttentionPlanAttr)) {
    attention.emplace();
    for (auto entry : plan.getAsRange<DictionaryAttr>()) {
      llvm::json::Object op;
      for (NamedAttribute field : entry)
        op[field.getName().getValue()] = cast<StringAttr>(field.getValue()).getValue();
      attention->push_back(std::move(op));
    }
  }
  llvm::json::Object stats{
      {"param_bytes", params},
      {"optimizer_bytes", moments},
      {"compute_copy_bytes", copies},
      {"peak_activation_bytes", arena - program.getStateSize().value_or(0)},
      {"arena_bytes", arena},
      {"kernels", kernels},
      {"kernel_launches", launches},
      {"kernel_bytes", kernelBytes},
      {"library_calls", gemms},
      {"library_bytes", libraryBytes},
      {"attention_calls", attentionCalls},
      {"commands", commands},
      {"flops_per_step", (int64_t)program.getFlopsPerStep().convertToDouble()},
      {"plan_seconds", planSeconds},
      {"mesh", std::move(mesh)},
      {"communication",
       llvm::json::Object{{"all_reduce_bytes", allReduceBytes},
                          {"reduce_scatter_bytes", reduceScatterBytes},
                          {"all_gather_bytes", allGatherBytes},
                          {"collectives", collectives}}}};
  if (attention)
    stats["attention"] = std::move(*attention);
  if (statsOpt == Stats::Json)
    os << llvm::json::Value(std::move(stats)) << "\n";
  else
    printStatsTable(stats, meshText, devices, os);
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

/// Records the wall time from the start of the pipeline to the end of the
/// target-independent lowering (--stats' plan_seconds).
class PlanClock : public PassInstrumentation {
public:
  explicit PlanClock(double &seconds) : seconds(seconds) {}
  void runBeforePipeline(std::optional<OperationName>,
                         const PipelineParentInfo &) override {
    if (!started) {
      start = llvm::TimeRecord::getCurrentTime();
      started = true;
    }
  }
  void runAfterPass(Pass *pass, Operation *) override {
    if (pass->getArgument() == "tg-bufferize-kernels")
      seconds = llvm::TimeRecord::getCurrentTime().getWallTime() -
                start.getWallTime();
  }

private:
  double &seconds;
  bool started = false;
  llvm::TimeRecord start;
};

/// Writes the artifact (or the executable embedding it) of a module the
/// whole pipeline has run on.
static int writeArtifact(ModuleOp module, const tg::driver::Options &options, Emit what,
                         const char *argv0) {
  auto artifact = tg::driver::translate(module, options);
  if (!artifact)
    return fail(llvm::toString(artifact.takeError()));
  if (what == Emit::Tgx)
    return writeOutput([&](llvm::raw_ostream &os) {
      os.write(reinterpret_cast<const char *>(artifact->data()), artifact->size());
    });
  auto tgrun = findTgrun(argv0);
  if (!tgrun)
    return fail(llvm::toString(tgrun.takeError()));
  std::string error;
  if (!tg::writeExecutable(*tgrun, *artifact, outputPath, error))
    return fail(error);
  return 0;
}

/// Writes each PTX kernel module of a compiled module to -o DIR as NAME.ptx.
static int writePtx(ModuleOp module) {
  if (std::error_code ec = llvm::sys::fs::create_directories(outputPath))
    return fail(outputPath + ": cannot create the directory (" + ec.message() +
                ")");
  for (auto binary : module.getOps<tg::exec::BinaryOp>()) {
    SmallString<128> path(outputPath);
    llvm::sys::path::append(path, binary.getSymName() + ".ptx");
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    if (ec)
      return fail(path + ": cannot write (" + ec.message() + ")");
    os << binary.getImage();
    llvm::outs() << path << ": " << binary.getKernels().size() << " kernels, "
                 << binary.getLaunchSymbols().size() << " GPU entries for "
                 << binary.getTargetCpu() << "\n";
  }
  return 0;
}

/// The driver's options from the command line.
static llvm::Expected<tg::driver::Options> driverOptions() {
  tg::driver::Options o;
  o.modelPath = inputPath;
  o.trainPath = trainPath;
  if (meshOpt.getNumOccurrences()) {
    auto mesh = tg::driver::parseMesh(meshOpt);
    if (!mesh)
      return mesh.takeError();
    o.mesh = *mesh;
  }
  o.sequenceParallel = sequenceParallelOpt;
  o.zero = zeroOpt;
  o.precision = dtypeOpt == DType::Bf16  ? tg::driver::Precision::Bf16
                : dtypeOpt == DType::F32 ? tg::driver::Precision::F32
                : dtypeOpt == DType::F64 ? tg::driver::Precision::F64
                                         : tg::driver::Precision::FromConfig;
  // With --train, TRAIN.json sizes the step: --batch and --seq would be
  // ignored, so they are refused.
  if (!trainPath.empty() &&
      (batchOpt.getNumOccurrences() || seqOpt.getNumOccurrences()))
    return llvm::createStringError(
        "--batch and --seq size the forward graph without --train; with "
        "--train, " +
        trainPath + "'s batch_size and seq_len size the step: drop them, or "
                    "edit " +
        trainPath);
  o.batch = batchOpt;
  o.seq = seqOpt;
  o.target = targetOpt == Target::Cuda ? tg::driver::Target::Cuda : tg::driver::Target::Cpu;
  o.cudaArch = cudaArchOpt;
  o.cudaSmCount = cudaSmCountOpt;
  o.cudaApproximateHalfMath = cudaHalfMathOpt == HalfMath::Approximate;
  o.cudaFlashAttention = cudaAttentionOpt != CudaAttention::Decomposed;
  o.cudaCudnnAttention = cudaAttentionOpt == CudaAttention::Cudnn;
  o.cudaRowRegisters = cudaRowRegistersOpt;
  o.cudaF32PartialTerms = cudaF32PartialTermsOpt;
  o.cudaColumnShare = cudaColumnShareOpt;
  o.cudaLastBlockCombines = cudaLastBlockCombinesOpt;
  o.cudaColumnSumsInRowPass = cudaColumnSumsInRowPassOpt;
  o.cudaWeightGradientStream = cudaWeightGradientStreamOpt;
  o.libraryGemm = gemmOpt == GemmLowering::Library;
  if (alignGemmRowsOpt != cl::BOU_UNSET)
    o.alignGemmRows = alignGemmRowsOpt == cl::BOU_TRUE;
  // --fuse first: --no-fuse and --no-fusion win.
  auto fusionName = [](Fusion f) {
    return tg::driver::fusionSwitches()[unsigned(f)].name;
  };
  for (Fusion f : fuseOpt)
    cantFail(tg::driver::setFusion(o, fusionName(f), true));
  for (Fusion f : noFuseOpt)
    cantFail(tg::driver::setFusion(o, fusionName(f), false));
  if (noFusionOpt)
    tg::driver::disableFusion(o);
  o.fusion.maxScoreMib = maxScoreMibOpt;
  o.fusion.remarks = fusionRemarksOpt;
  o.bucketMb = bucketMbOpt;
  o.deviceMemoryGB = deviceMemoryOpt;
  o.causalBlocks = causalBlocksOpt;
  return o;
}

static int compile(MLIRContext &ctx, const char *argv0) {
  if (!(deviceMemoryOpt > 0))
    return fail("--device-memory must be a number of GB > 0");
  if (causalBlocksOpt < 1)
    return fail("--causal-blocks must be 1 (the whole attention at once) or "
                "more");
  auto options = driverOptions();
  if (!options)
    return fail(llvm::toString(options.takeError()));
  tg::driver::Compilation c;
  llvm::SourceMgr sources;
  // A remark or error names its op by the model's location and says why; the
  // op itself, printed as a note, numbered every value of the module for each
  // one (--fusion-remarks on GPT-2 medium: 48 s instead of 0.5). Unless
  // --mlir-print-op-on-diagnostic asks for it.
  llvm::cl::Option *printOp =
      llvm::cl::getRegisteredOptions().lookup("mlir-print-op-on-diagnostic");
  if (!printOp || !printOp->getNumOccurrences())
    ctx.printOpOnDiagnostic(false);
  SourceMgrDiagnosticHandler handler(sources, &ctx);
  if (llvm::Error error = tg::driver::load(ctx, *options, c, [](const std::string &warning) {
        llvm::WithColor::warning(llvm::errs(), "tgc") << warning << "\n";
      }))
    return fail(llvm::toString(std::move(error)));
  if (failed(verify(*c.module)))
    return fail("the generated graph failed verification (a tgc bug: please "
                "report it with the input file)");

  Emit what = emit;
  if (what == Emit::Auto)
    what = StringRef(outputPath).ends_with(".tgx") ? Emit::Tgx : Emit::Tg;
  bool writesArtifact = what == Emit::Tgx || what == Emit::Exe;
  bool compilesKernels = writesArtifact || what == Emit::Ptx;
  bool lowers = statsOpt != Stats::None || what == Emit::Kernels || compilesKernels;
  // With --stats the graph is not printed: an -o for it would be ignored.
  if (statsOpt != Stats::None && outputPath != "-" &&
      (what == Emit::Tg || what == Emit::Summary))
    return fail("--stats prints to the standard output, and beside it -o "
                "writes only an artifact, kernels or PTX (-o OUT.tgx, --emit=exe, "
                "--emit=kernels, --emit=ptx): to keep the stats in " +
                outputPath + ", redirect the output (> " + outputPath + ")");
  if (what == Emit::Ptx && targetOpt != Target::Cuda)
    return fail("--emit=ptx writes GPU kernels: add --target cuda");
  // Flags that mean something only for the GPU, refused without --target
  // cuda, naming what each does (in this order: the first given is named).
  struct CudaFlag {
    const cl::Option &option;
    bool given;
    const char *does;
  };
  const CudaFlag cudaFlags[] = {
      {cudaHalfMathOpt, cudaHalfMathOpt.getNumOccurrences() > 0,
       "chooses how GPU kernels compute"},
      {cudaAttentionOpt, cudaAttentionOpt.getNumOccurrences() > 0,
       "chooses how the GPU computes attention"},
      {cudaRowRegistersOpt, cudaRowRegistersOpt.getNumOccurrences() > 0,
       "caps GPU kernels' registers"},
      {cudaF32PartialTermsOpt, cudaF32PartialTermsOpt.getNumOccurrences() > 0,
       "chooses how GPU kernels sum"},
      {cudaColumnShareOpt, cudaColumnShareOpt.getNumOccurrences() > 0,
       "chooses how GPU kernels sum columns"},
      {cudaLastBlockCombinesOpt, cudaLastBlockCombinesOpt,
       "chooses how GPU kernels combine column sums"},
      {cudaSmCountOpt, cudaSmCountOpt.getNumOccurrences() > 0,
       "sizes GPU kernels' grids"},
      {cudaColumnSumsInRowPassOpt, cudaColumnSumsInRowPassOpt,
       "chooses how GPU kernels sum columns"},
      {cudaWeightGradientStreamOpt, cudaWeightGradientStreamOpt,
       "schedules GPU streams"}};
  for (const CudaFlag &flag : cudaFlags)
    if (flag.given && targetOpt != Target::Cuda)
      return fail("--" + flag.option.ArgStr + " " + flag.does +
                  ": add --target cuda, or drop it");
  if (cudaRowRegistersOpt != 0 &&
      (cudaRowRegistersOpt < 32 || cudaRowRegistersOpt > 255))
    return fail("--cuda-row-registers=" +
                std::to_string(cudaRowRegistersOpt) +
                " is out of range: give 32 to 255 (a GPU thread has at most "
                "255), or 0 for what one block may have");
  if (cudaColumnShareOpt < 16 || cudaColumnShareOpt > 4096)
    return fail("--cuda-column-share=" + std::to_string(cudaColumnShareOpt) +
                " is out of range: give 16 to 4096 rows");
  if (cudaSmCountOpt.getNumOccurrences() &&
      (cudaSmCountOpt < 1 || cudaSmCountOpt > 1024))
    return fail("--cuda-sm-count=" + std::to_string(cudaSmCountOpt) +
                " is out of range: give 1 to 1024 SMs");
  if (cudaF32PartialTermsOpt < 0 || cudaF32PartialTermsOpt > 65536)
    return fail(
        "--cuda-f32-partial-terms=" + std::to_string(cudaF32PartialTermsOpt) +
        " is out of range: give 0 (float64 throughout) to 65536");
  if (what == Emit::Ptx && outputPath == "-")
    return fail("--emit=ptx writes one file per kernel module: give a "
                "directory with -o DIR");
  if (writesArtifact && outputPath == "-")
    return fail("--emit=tgx and --emit=exe write a binary file: give it a "
                "name with -o OUT.tgx");
  if (lowers && !c.train && !c.module->lookupSymbol("train_step"))
    return fail("--stats, --emit=kernels, --emit=ptx, --emit=tgx and "
                "--emit=exe compile "
                "the training step: pass --train TRAIN.json (or an .mlir "
                "input with @train_step)");

  // One pipeline: training step, target-independent lowering, target.
  PassManager pm(&ctx);
  if (failed(applyPassManagerCLOptions(pm)))
    return fail("bad pass manager options");
  DefaultTimingManager timing;
  applyDefaultTimingManagerCLOptions(timing);
  // Verifying after every pass is half the compile time at GPT-3 175B's
  // scale: by default the IR is verified before and after the pipeline.
  pm.enableVerifier(verifyEachOpt);
  TimingScope timingScope = timing.getRootScope();
  pm.enableTiming(timingScope);
  tg::driver::Stage stage = compilesKernels ? tg::driver::Stage::Kernels
                            : lowers        ? tg::driver::Stage::Lowering
                                            : tg::driver::Stage::Training;
  if (llvm::Error error = tg::driver::buildPipeline(pm, *options, c, stage, writesArtifact))
    return fail(llvm::toString(std::move(error)));
  double planSeconds = 0;
  if (lowers)
    pm.addInstrumentation(std::make_unique<PlanClock>(planSeconds));
  if (failed(pm.run(*c.module)))
    return 1;
  if (failed(verify(*c.module)))
    return fail("the compiled program failed verification (a tgc bug: "
                "please report it with the input file; --verify-each finds "
                "the pass at fault)");

  if (statsOpt != Stats::None)
    printStats(*c.module, planSeconds, llvm::outs());
  if (what == Emit::Kernels)
    return writeOutput([&](llvm::raw_ostream &os) {
      for (auto kernels : c.module->getOps<ModuleOp>())
        kernels.print(os);
    });
  if (what == Emit::Ptx)
    return writePtx(*c.module);
  if (writesArtifact)
    return writeArtifact(*c.module, *options, what, argv0);
  if (lowers)
    return 0;
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
  // --mlir-print-ir-after-all, --mlir-timing, crash reproducers, ... on the
  // compile subcommand too.
  tg::registerTgPasses(); // first: --mlir-print-ir-after=PASS names them
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
  for (auto &entry : cl::getRegisteredOptions(cl::SubCommand::getTopLevel()))
    if (entry.first.starts_with("mlir-"))
      entry.second->addSubCommand(compileCommand);
  cl::HideUnrelatedOptions(tgcCategory, compileCommand);
  cl::HideUnrelatedOptions(tgcCategory, cl::SubCommand::getTopLevel());
  for (auto [index, pass] : llvm::enumerate(tg::driver::fusionSwitches())) {
    noFuseOpt.getParser().addLiteralOption(pass.name, Fusion(index),
                                           pass.description);
    fuseOpt.getParser().addLiteralOption(pass.name, Fusion(index),
                                         pass.description);
  }
  cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "tgc " TG_VERSION " (MLIR/LLVM " LLVM_VERSION_STRING ")\n";
  });
  cl::ParseCommandLineOptions(
      argc, argv,
      "tgc: the TGC training-graph compiler\n\n"
      "  tgc compile MODEL.json --train TRAIN.json -o OUT.tgx   (then: tgrun "
      "OUT.tgx --data TOKENS.bin)\n"
      "  tgc compile HF_MODEL_DIR ...                           (its config.json)\n"
      "  tgc compile MODEL.json --train TRAIN.json --emit=exe -o NAME\n"
      "  tgc compile MODEL.json --train TRAIN.json --stats\n"
      "  tgc compile MODEL.json [--train TRAIN.json] --emit=tg|summary\n");
  DialectRegistry registry;
  tg::driver::registerDialects(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  if (compileCommand)
    return compile(ctx, argv[0]);
  cl::PrintHelpMessage();
  return 1;
}
