// The compiler as a library (Driver.h): from a model description to the
// compiled module or the .tgx artifact.
#include "tg/Driver/Driver.h"

#include "tg/Artifact/ArtifactWriter.h"
#include "tg/Exec/IR/ExecOps.h"
#include "tg/Frontend/ModelBuilder.h"
#include "tg/IR/TgDialect.h"
#include "tg/IR/TgOps.h"
#include "tg/Passes/Interface.h"
#include "tg/Pipeline/Pipeline.h"
#include "tg/Targets/CudaTarget.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <limits>

namespace mlir::tg::driver {
using namespace frontend;

/// "dp=D[,tp=T]" (either order, each axis at most once, sizes >= 1).
llvm::Expected<MeshSpec> parseMesh(StringRef text) {
  auto error = [&](const Twine &what) {
    return llvm::createStringError("--mesh " + text + ": " + what);
  };
  auto malformed = [&] {
    return error("expected the form dp=D,tp=T (axis sizes as positive "
                 "integers; tp may be left out), e.g. --mesh dp=4");
  };
  MeshSpec mesh;
  bool seenDp = false, seenTp = false;
  SmallVector<StringRef> parts;
  text.split(parts, ',');
  for (StringRef part : parts) {
    auto [key, value] = part.split('=');
    int64_t size;
    if (!part.contains('=') || key.empty() || value.getAsInteger(10, size))
      return malformed();
    bool isDp = key == "dp";
    if (!isDp && key != "tp")
      return error("unknown mesh axis '" + key +
                   "': the axes are dp (data parallel, mesh axis \"data\") "
                   "and tp (tensor parallel)");
    if (size < 1)
      return error(key + "=" + value + ": an axis size must be >= 1");
    bool &seen = isDp ? seenDp : seenTp;
    if (seen)
      return error(key + " is given twice");
    seen = true;
    (isDp ? mesh.dp : mesh.tp) = size;
  }
  return mesh;
}

namespace {
/// A switch's flag in FusionOptions, or, for a switch whose default is the
/// target's, in Options (unset: the target's choice).
struct FusionFlag {
  FusionSwitch sw;
  bool FusionOptions::*flag;
  std::optional<bool> Options::*targetChoice = nullptr;
};
constexpr FusionFlag kFusionFlags[] = {
    {{"elementwise", "tg-fuse-elementwise: elementwise chains, AdamW"},
     &FusionOptions::elementwise},
    {{"rows",
      "tg-fuse-into-rows: residual adds, scales, masks and gradient squares "
      "into "
      "norm, softmax and sum kernels; the heads' transposes into rope kernels"},
     &FusionOptions::rows},
    {{"loss",
      "tg-fuse-into-rows' loss-with-gradient: the loss and its gradient in one "
      "kernel"},
     &FusionOptions::loss},
    {{"gemm-bias", "exec-fuse-gemm-bias: bias adds as GEMM epilogues"},
     &FusionOptions::gemmBias},
    {{"gemm-layouts",
      "exec-fuse-gemm-layouts: slices, transposes and concatenations "
      "around GEMMs as their strides"},
     &FusionOptions::gemmLayouts},
    {{"gemm-activation",
      "exec-fuse-gemm-activation: GELU and its gradient as GEMM "
      "epilogues (on for --target cuda only)"},
     nullptr,
     &Options::gemmActivation},
    {{"gemm-bias-grad",
      "exec-fuse-gemm-activation's bias-grad: the sums of GELU's gradient "
      "(a bias gradient) from the GEMM applying GELU's derivative (off "
      "unless asked: on an H200 the GPT-2-medium step ran 9% slower)"},
     &FusionOptions::gemmBiasGrad},
    {{"gemm-residual",
      "exec-fuse-gemm-residual: the residual stream's add after a "
      "projection as the GEMM's addend (cuBLASLt's C, beta = 1), so the "
      "next norm's kernel reads the sum alone"},
     &FusionOptions::gemmResidual},
    {{"attention", "tg-fuse-attention: flash attention kernels"},
     &FusionOptions::attention},
    {{"attention-rope",
      "tg-fuse-attention's rope: the flash kernels rotate their queries "
      "and keys themselves (RoPE; on for the CPU target only: the CUDA "
      "runtime's kernels rotate each tile once per block that loads it)"},
     nullptr,
     &Options::attentionRope},
    {{"attention-layouts",
      "tg-fuse-attention-layouts: the flash kernels read q, k, v and "
      "dO and write their results in the layouts around them"},
     &FusionOptions::attentionLayouts},
    {{"horizontal",
      "exec-fuse-horizontal: a small kernel's dispatches over like buffers "
      "(each parameter's cast, gradient square, AdamW update) in one launch"},
     &FusionOptions::horizontal},
    {{"compute-copies",
      "tg-carry-compute-copies: each parameter's bf16/f16 copy kept between "
      "steps, written by its AdamW kernel, instead of a cast every step"},
     &FusionOptions::computeCopies},
};
} // namespace

llvm::ArrayRef<FusionSwitch> fusionSwitches() {
  static const SmallVector<FusionSwitch> switches = [] {
    SmallVector<FusionSwitch> all;
    for (const FusionFlag &f : kFusionFlags)
      all.push_back(f.sw);
    return all;
  }();
  return switches;
}

llvm::Error setFusion(Options &options, StringRef name, bool on) {
  for (const FusionFlag &f : kFusionFlags) {
    if (f.sw.name != name)
      continue;
    if (f.flag)
      options.fusion.*f.flag = on;
    else
      options.*f.targetChoice = on;
    return llvm::Error::success();
  }
  std::string names;
  for (const FusionFlag &f : kFusionFlags)
    names += (names.empty() ? "" : ", ") + f.sw.name.str();
  return llvm::createStringError(
      "'" + name + "' is not a fusion pass; use one of: " + names);
}

void disableFusion(Options &options) {
  for (const FusionFlag &f : kFusionFlags)
    cantFail(setFusion(options, f.sw.name, false));
}

namespace {
/// Only regular files are read: open() on a FIFO or a device can block
/// forever.
llvm::Error checkRegularFile(StringRef path) {
  llvm::sys::fs::file_status status;
  if (std::error_code ec = llvm::sys::fs::status(path, status))
    return llvm::createStringError("%s: cannot read (%s); check the path",
                                   path.str().c_str(), ec.message().c_str());
  if (status.type() != llvm::sys::fs::file_type::regular_file)
    return llvm::createStringError(
        "%s: cannot read: not a regular file (a FIFO, device or directory); "
        "give the path of a file",
        path.str().c_str());
  return llvm::Error::success();
}

/// Rejects parallelism options that do not fit together and a mesh without
/// the training step it splits.
llvm::Error checkParallelism(const Options &o) {
  if (o.zero != 0 && o.zero != 1)
    return llvm::createStringError("--zero %lld: the ZeRO stage is 0 or 1",
                                   (long long)o.zero);
  if (o.zero == 1 && (!o.mesh || o.mesh->dp < 2))
    return llvm::createStringError(
        "--zero 1 splits the AdamW state over the data-parallel ranks: it "
        "needs --mesh dp=D with D > 1 (got %s)",
        o.mesh ? ("dp=" + std::to_string(o.mesh->dp)).c_str() : "no --mesh");
  if (o.sequenceParallel && (!o.mesh || o.mesh->tp == 1))
    return llvm::createStringError(
        "--sequence-parallel splits the sequence over the tensor-parallel "
        "ranks: give --mesh ...,tp=T with T > 1");
  if (!o.mesh)
    return llvm::Error::success();
  if (StringRef(o.modelPath).ends_with(".mlir"))
    return llvm::createStringError(
        "--mesh needs a config.json input: a .mlir input is compiled as "
        "written (declare its mesh with the module attributes %s and %s)",
        kMeshAxesAttr.data(), kMeshShapeAttr.data());
  if (o.trainPath.empty())
    return llvm::createStringError(
        "--mesh splits the training step's batch: pass --train TRAIN.json");
  return llvm::Error::success();
}

/// The dp ranks each take batch_size / dp rows, split in turn into
/// micro_batches: both must divide.
llvm::Error checkDataParallelBatch(const Options &o,
                                          const TrainConfig &train, int64_t dp) {
  int64_t batch = train.step.batchSize, micro = train.step.microBatches;
  if (batch % dp != 0)
    return llvm::createStringError(
        "%s: field 'batch_size' (%lld) is not divisible by the mesh axis dp "
        "(\"data\") of size %lld: each data-parallel rank takes an equal "
        "share of the batch; make batch_size a multiple of %lld",
        o.trainPath.c_str(), (long long)batch, (long long)dp, (long long)dp);
  if ((batch / dp) % micro != 0)
    return llvm::createStringError(
        "%s: the rows of one rank, field 'batch_size' / dp = %lld / %lld = "
        "%lld, are not divisible by field 'micro_batches' (%lld); change "
        "batch_size, micro_batches or --mesh dp",
        o.trainPath.c_str(), (long long)batch, (long long)dp,
        (long long)(batch / dp), (long long)micro);
  return llvm::Error::success();
}

/// Tensor parallelism splits heads and features evenly over the tp ranks
/// (a vocabulary is padded instead).
llvm::Error checkTensorParallelModel(const Options &o,
                                            const ModelConfig &model, int64_t tp) {
  auto notDivisible = [&](const char *field, int64_t size,
                          const char *what) {
    return llvm::createStringError(
        "%s: field '%s' (%lld) is not divisible by the mesh axis tp "
        "(\"tensor\") of size %lld: %s; choose tp among its divisors",
        o.modelPath.c_str(), field, (long long)size, (long long)tp, what);
  };
  bool gpt2 = model.family == ModelFamily::Gpt2;
  if (model.numHeads % tp != 0)
    return notDivisible(gpt2 ? "n_head" : "num_attention_heads", model.numHeads,
                        "each tensor-parallel rank computes an equal share "
                        "of the heads");
  if (model.numKvHeads % tp != 0 && tp % model.numKvHeads != 0)
    return llvm::createStringError(
        "%s: field 'num_key_value_heads' (%lld) and the mesh axis tp "
        "(\"tensor\") of size %lld: tp must divide the key/value heads or be "
        "a multiple of them (then ranks share a head)",
        o.modelPath.c_str(), (long long)model.numKvHeads, (long long)tp);
  if (model.intermediateSize % tp != 0)
    return notDivisible(gpt2 ? "n_inner" : "intermediate_size",
                        model.intermediateSize,
                        "each rank holds an equal share of the MLP features");
  return llvm::Error::success();
}

/// Sequence parallelism splits the sequence over the tp ranks.
llvm::Error checkSequenceParallel(const Options &o, const TrainConfig &train,
                                         int64_t tp) {
  if (train.step.seqLen % tp != 0)
    return llvm::createStringError(
        "%s: field 'seq_len' (%lld) is not divisible by the mesh axis tp "
        "(\"tensor\") of size %lld: with --sequence-parallel each "
        "tensor-parallel rank holds an equal share of the sequence; make "
        "seq_len a multiple of %lld",
        o.trainPath.c_str(), (long long)train.step.seqLen, (long long)tp,
        (long long)tp);
  return llvm::Error::success();
}

/// Builds @forward from the config.json (and TRAIN.json when given).
llvm::Error buildFromConfig(MLIRContext &ctx, const Options &o, Compilation &c,
                            llvm::function_ref<void(const std::string &)> warn) {
  auto model = parseModelConfig(o.modelPath, o.modelText);
  if (!model)
    return model.takeError();
  for (const std::string &warning : model->warnings)
    warn(warning);
  c.model = *model;
  c.batch = o.batch;
  c.seqLen = o.seq ? o.seq : model->maxPositions;
  if (!o.trainPath.empty()) {
    auto train = parseTrainConfig(o.trainPath, o.trainText);
    if (!train)
      return train.takeError();
    c.train = *train;
    if (o.mesh) {
      if (llvm::Error error = checkDataParallelBatch(o, *c.train, o.mesh->dp))
        return error;
      if (o.mesh->tp > 1)
        if (llvm::Error error = checkTensorParallelModel(o, *c.model, o.mesh->tp))
          return error;
      if (o.sequenceParallel)
        if (llvm::Error error = checkSequenceParallel(o, *c.train, o.mesh->tp))
          return error;
      c.train->step.sequenceParallel = o.sequenceParallel;
      c.train->step.dataParallel = o.mesh->dp;
      c.train->step.tensorParallel = o.mesh->tp;
      c.train->step.zeroStage = o.zero;
    }
    // The forward graph is one micro-batch of one rank.
    c.batch = c.train->step.microBatchSize();
    c.seqLen = train->step.seqLen;
    if (c.seqLen > model->maxPositions)
      return llvm::createStringError(
          "%s: field 'seq_len': %lld exceeds the model's maximum of %lld "
          "positions (%s)",
          o.trainPath.c_str(), (long long)c.seqLen,
          (long long)model->maxPositions, o.modelPath.c_str());
  } else if (c.batch < 1 || c.seqLen < 1 || c.seqLen > model->maxPositions) {
    return llvm::createStringError(
        "--batch must be >= 1 and --seq within 1..%lld (the model's maximum)",
        (long long)model->maxPositions);
  }
  if (llvm::Error error = checkGraphSizes(*c.model, c.batch, c.seqLen, o.trainPath))
    return error;
  Location loc = FileLineColLoc::get(&ctx, o.modelPath, 0, 0);
  c.module = ModuleOp::create(loc);
  Precision precision = o.precision;
  if (precision == Precision::FromConfig)
    precision = c.train && c.train->precision == frontend::Precision::Bf16
                    ? Precision::Bf16
                    : Precision::F32;
  if (precision == Precision::Bf16 && model->reorderAndUpcastAttn)
    return llvm::createStringError(
        "%s: field 'reorder_and_upcast_attn' is true: Hugging Face then "
        "computes the attention scores and softmax in f32, which a bf16 step "
        "does not; train in f32 (precision fp32) or set it to false",
        o.modelPath.c_str());
  Type element = precision == Precision::Bf16  ? Type(BFloat16Type::get(&ctx))
                 : precision == Precision::F64 ? Type(Float64Type::get(&ctx))
                                               : Type(Float32Type::get(&ctx));
  buildForward(*c.module, *c.model, c.batch, c.seqLen, element, loc);
  (*c.module)->setAttr(kVocabSizeAttr, IntegerAttr::get(IntegerType::get(&ctx, 64),
                                                        c.model->vocabSize));
  // With tensor parallelism, tg-partition-tensor-parallel declares the mesh.
  if (o.mesh && o.mesh->tp == 1)
    setMesh(*c.module, {kDataAxis}, {o.mesh->dp});
  return llvm::Error::success();
}

/// A tg module with @forward and a TRAIN.json: the training step is built
/// from the forward as written (its element types and shapes), which the
/// TRAIN.json must agree with.
llvm::Error readTrainingOfModule(const Options &o, Compilation &c) {
  auto forward = c.module->lookupSymbol<func::FuncOp>("forward");
  if (!forward)
    return llvm::createStringError(
        "%s: a TRAIN.json (%s) builds the training step from @forward, which the "
        "module does not define",
        o.modelPath.c_str(), o.trainPath.c_str());
  auto train = parseTrainConfig(o.trainPath, o.trainText);
  if (!train)
    return train.takeError();
  // The forward's parameters are in its compute precision.
  bool bf16 = false;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i)
    if (forward.getArgAttr(i, kParamAttr))
      bf16 |= getElementTypeOrSelf(forward.getArgumentTypes()[i]).isBF16();
  if (bf16 != (train->precision == frontend::Precision::Bf16))
    return llvm::createStringError(
        "%s: field 'precision' is %s but @forward of %s computes in %s; make them agree",
        o.trainPath.c_str(), bf16 ? "fp32" : "bf16", o.modelPath.c_str(),
        bf16 ? "bf16" : "f32 or f64");
  // The vocabulary sizes the runtime's token checks: the module's
  // tg.vocab_size, else the forward's logits [batch, seq, vocab].
  if (!(*c.module)->hasAttr(kVocabSizeAttr)) {
    auto logits = forward.getNumResults() > 1
                      ? dyn_cast<RankedTensorType>(forward.getResultTypes()[1])
                      : RankedTensorType();
    if (!logits || logits.getRank() != 3)
      return llvm::createStringError(
          "%s: the module declares no %s and @forward returns no [batch, seq, vocab] "
          "logits second; declare the vocabulary size",
          o.modelPath.c_str(), kVocabSizeAttr.data());
    (*c.module)->setAttr(kVocabSizeAttr,
                         IntegerAttr::get(IntegerType::get(c.module->getContext(), 64),
                                          logits.getDimSize(2)));
  }
  c.train = *train;
  return llvm::Error::success();
}

/// The chip --cuda-arch names, with its SM count (which sizes the grids).
llvm::Expected<CudaTargetOptions> cudaOptions(const Options &o) {
  // PTX 8.0 covers all of these chips.
  static const std::pair<StringRef, int64_t> kChips[] = {
      {"sm_90a", 132}, {"sm_90", 132}, {"sm_89", 142}, {"sm_80", 108}};
  auto chip = llvm::find_if(kChips, [&](const auto &c) { return c.first == o.cudaArch; });
  if (chip == std::end(kChips))
    return llvm::createStringError("--cuda-arch=" + o.cudaArch +
                                   " is not supported: use sm_90a (H100, H200), "
                                   "sm_90, sm_89 or sm_80");
  CudaTargetOptions cuda;
  cuda.chip = o.cudaArch;
  cuda.smCount = o.cudaSmCount ? o.cudaSmCount : chip->second;
  cuda.approximateHalfMath = o.cudaApproximateHalfMath;
  cuda.rowRegisters = o.cudaRowRegisters;
  cuda.f32PartialTerms = o.cudaF32PartialTerms;
  cuda.columnShare = o.cudaColumnShare;
  cuda.lastBlockCombines = o.cudaLastBlockCombines;
  cuda.columnSumsInRowPass = o.cudaColumnSumsInRowPass;
  return cuda;
}
} // namespace

llvm::Error load(MLIRContext &ctx, const Options &options, Compilation &c,
                 llvm::function_ref<void(const std::string &)> warn) {
  Options o = options;
  // A Hugging Face model directory: its config.json.
  if (!o.modelText && llvm::sys::fs::is_directory(o.modelPath))
    o.modelPath += "/config.json";
  if (!o.modelText)
    if (llvm::Error error = checkRegularFile(o.modelPath))
      return error;
  if (!o.trainPath.empty() && !o.trainText)
    if (llvm::Error error = checkRegularFile(o.trainPath))
      return error;
  if (llvm::Error error = checkParallelism(o))
    return error;
  if (!StringRef(o.modelPath).ends_with(".mlir"))
    return buildFromConfig(ctx, o, c, warn);
  llvm::SourceMgr sources;
  std::unique_ptr<llvm::MemoryBuffer> buffer =
      o.modelText ? llvm::MemoryBuffer::getMemBufferCopy(*o.modelText, o.modelPath)
                  : nullptr;
  if (!buffer) {
    auto file = llvm::MemoryBuffer::getFile(o.modelPath);
    if (!file)
      return llvm::createStringError("%s: cannot read (%s)", o.modelPath.c_str(),
                                     file.getError().message().c_str());
    buffer = std::move(*file);
  }
  sources.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  // Parse errors reach the context's diagnostic handler.
  c.module = parseSourceFile<ModuleOp>(sources, &ctx);
  if (!c.module)
    return llvm::createStringError("%s: not a valid tg module (see the errors above)",
                                   o.modelPath.c_str());
  if (o.trainPath.empty())
    return llvm::Error::success();
  return readTrainingOfModule(o, c);
}

llvm::Error buildPipeline(OpPassManager &pm, const Options &o, const Compilation &c,
                          Stage stage, bool artifact) {
  if (!(o.bucketMb >= 0 && o.bucketMb <= 1 << 20))
    return llvm::createStringError(
        "--bucket-mb " + llvm::formatv("{0}", o.bucketMb).str() +
        ": give a size in MiB from 0 (one all-reduce per gradient) to 1048576");
  if (!(o.fusion.maxScoreMib >= 0 && o.fusion.maxScoreMib <= 1e12))
    return llvm::createStringError(
        "--max-score-mib " + llvm::formatv("{0}", o.fusion.maxScoreMib).str() +
        ": give a size in MiB from 0 (flash attention everywhere) up");
  std::optional<CudaTargetOptions> cuda;
  if (o.target == Target::Cuda) {
    auto chip = cudaOptions(o);
    if (!chip)
      return chip.takeError();
    cuda = *chip;
  }
  if (c.train) {
    // The artifact's evaluation functions; logits only for one device.
    EvaluationFunctions functions;
    functions.evalStep = artifact;
    functions.logits = artifact && c.train->step.dataParallel == 1 &&
                       c.train->step.tensorParallel == 1;
    buildTrainingStage(pm, c.train->step, functions);
  }
  if (stage == Stage::Training)
    return llvm::Error::success();
  LoweringOptions lowering{o.libraryGemm, c.train ? uint64_t(c.train->seed) : 0,
                           o.fusion, int64_t(o.bucketMb * (1 << 20)),
                           /*flashKernels=*/!cuda || o.cudaFlashAttention,
                           /*vectorRows=*/!cuda,
                           /*alignGemmRows=*/o.alignGemmRows.value_or(bool(cuda))};
  lowering.fusion.gemmActivation = o.gemmActivation.value_or(bool(cuda));
  lowering.fusion.attentionRope = o.attentionRope.value_or(!cuda);
  lowering.fusion.gemmActivationWide = !cuda;
  lowering.fusion.horizontalLargeRows = bool(cuda);
  lowering.libraryAttention = cuda && o.cudaFlashAttention;
  lowering.cudnnAttention = lowering.libraryAttention && o.cudaCudnnAttention;
  lowering.weightGradientStream = cuda && o.cudaWeightGradientStream;
  if (cuda) {
    // Attention is decomposed unless the runtime's flash kernels take it; its
    // gradient recomputing P costs a batched GEMM and a softmax (~11% of a
    // GPT-2-medium step on an H200), keeping it only memory. Keep P whatever
    // the sequence, up to a tenth of the device's memory.
    lowering.keepProbsFactor = std::numeric_limits<double>::infinity();
    lowering.keepProbsMib = o.deviceMemoryGB * 1e9 / 10 / (1 << 20);
  }
  lowering.causalBlocks = o.causalBlocks;
  buildLoweringStage(pm, lowering);
  if (stage == Stage::Lowering)
    return llvm::Error::success();
  if (cuda)
    buildCudaTargetStage(pm, *cuda);
  else
    buildCpuTargetStage(pm);
  return llvm::Error::success();
}

llvm::Expected<std::vector<uint8_t>>
compileArtifact(MLIRContext &ctx, const Options &o,
                llvm::function_ref<void(const std::string &)> warn) {
  Compilation c;
  if (llvm::Error error = load(ctx, o, c, warn))
    return std::move(error);
  if (!c.train && !c.module->lookupSymbol("train_step"))
    return llvm::createStringError(
        "an artifact holds the training step: give a TRAIN.json (or a tg "
        "module with @train_step)");
  PassManager pm(&ctx);
  if (llvm::Error error = buildPipeline(pm, o, c, Stage::Kernels, /*artifact=*/true))
    return std::move(error);
  if (failed(verify(*c.module)) || failed(pm.run(*c.module)) || failed(verify(*c.module)))
    return llvm::createStringError("%s: compilation failed (see the errors above)",
                                   o.modelPath.c_str());
  return translate(*c.module, o);
}

llvm::Expected<std::vector<uint8_t>> translate(ModuleOp module, const Options &o) {
  ArtifactInfo info;
  info.producer = "tgc " TG_VERSION;
  if (o.modelText) {
    info.modelJson = *o.modelText;
  } else if (auto text = llvm::MemoryBuffer::getFile(o.modelPath)) {
    info.modelJson = (*text)->getBuffer().str();
  }
  FailureOr<std::vector<uint8_t>> artifact = translateToTgx(module, info);
  if (failed(artifact))
    return llvm::createStringError("%s: the artifact could not be written (see the errors "
                                   "above)",
                                   o.modelPath.c_str());
  return std::move(*artifact);
}

void registerDialects(DialectRegistry &registry) {
  registry.insert<TgDialect, exec::ExecDialect, func::FuncDialect, memref::MemRefDialect,
                  linalg::LinalgDialect, scf::SCFDialect, arith::ArithDialect,
                  math::MathDialect, LLVM::LLVMDialect>();
  registerCudaTarget(registry);
}

} // namespace mlir::tg::driver
