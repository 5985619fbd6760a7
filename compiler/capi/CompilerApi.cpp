// The compiler's C API (tgc_compiler.h) over the driver library: one
// MLIRContext per compilation, every diagnostic captured as data.
#include "tg/tgc_compiler.h"

#include "tg/Driver/Driver.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <new>
#include <string>
#include <vector>

namespace {
struct CapturedDiagnostic {
  tgc_severity severity;
  std::string file;
  int line = 0, column = 0;
  std::string message;
};
} // namespace

struct tgc_result_s {
  bool ok = false;
  std::vector<uint8_t> artifact;
  std::vector<CapturedDiagnostic> diagnostics;
};

namespace {
using namespace mlir;

tgc_severity severityOf(DiagnosticSeverity severity) {
  switch (severity) {
  case DiagnosticSeverity::Error: return TGC_ERROR;
  case DiagnosticSeverity::Warning: return TGC_WARNING;
  case DiagnosticSeverity::Note: return TGC_NOTE;
  case DiagnosticSeverity::Remark: return TGC_REMARK;
  }
  return TGC_ERROR;
}

/// A diagnostic without a location (its message names the file).
void record(tgc_result &result, tgc_severity severity, std::string message) {
  result.diagnostics.push_back({severity, "", 0, 0, std::move(message)});
}

void record(tgc_result &result, tgc_severity severity, Location loc, std::string message) {
  record(result, severity, std::move(message));
  if (auto file = loc->findInstanceOf<FileLineColLoc>()) {
    CapturedDiagnostic &d = result.diagnostics.back();
    d.file = file.getFilename().str();
    d.line = int(file.getLine());
    d.column = int(file.getColumn());
  }
}

/// The driver's options from the C ones; an error names the field.
llvm::Expected<tg::driver::Options> driverOptions(const tgc_options &in) {
  tg::driver::Options o;
  if (!in.model_path && !in.model_text)
    return llvm::createStringError("tgc_options.model_path: give the model's path (or a name "
                                   "for model_text)");
  o.modelPath = in.model_path ? in.model_path : "model.json";
  if (in.model_text)
    o.modelText = in.model_text;
  if (in.train_path || in.train_text) {
    o.trainPath = in.train_path ? in.train_path : "train.json";
    if (in.train_text)
      o.trainText = in.train_text;
  }
  std::string target = in.target ? in.target : "cpu";
  if (target != "cpu" && target != "cuda")
    return llvm::createStringError("tgc_options.target: '" + target +
                                   "' is not a target; use \"cpu\" or \"cuda\"");
  o.target = target == "cuda" ? tg::driver::Target::Cuda : tg::driver::Target::Cpu;
  if (in.cuda_arch)
    o.cudaArch = in.cuda_arch;
  if (in.mesh) {
    auto mesh = tg::driver::parseMesh(in.mesh);
    if (!mesh)
      return mesh.takeError();
    o.mesh = *mesh;
  }
  o.sequenceParallel = in.sequence_parallel != 0;
  o.zero = in.zero;
  if (in.precision) {
    std::string p = in.precision;
    if (p == "f32")
      o.precision = tg::driver::Precision::F32;
    else if (p == "bf16")
      o.precision = tg::driver::Precision::Bf16;
    else if (p == "f64")
      o.precision = tg::driver::Precision::F64;
    else
      return llvm::createStringError("tgc_options.precision: '" + p +
                                     "' is not a precision; use \"f32\", \"bf16\" or \"f64\"");
  }
  if (in.cuda_attention) {
    std::string attention = in.cuda_attention;
    if (attention != "flash" && attention != "cudnn" && attention != "decomposed")
      return llvm::createStringError("tgc_options.cuda_attention: '" + attention +
                                     "' is not a way to compute attention; use \"flash\", "
                                     "\"cudnn\" or \"decomposed\"");
    if (o.target != tg::driver::Target::Cuda)
      return llvm::createStringError("tgc_options.cuda_attention chooses how the GPU computes "
                                     "attention: set target to \"cuda\", or leave it NULL");
    o.cudaFlashAttention = attention != "decomposed";
    o.cudaCudnnAttention = attention == "cudnn";
  }
  // fuse first: no_fuse wins, as tgc's --no-fuse wins over --fuse.
  auto switchFusion = [&](const char *list, llvm::StringRef field, bool on) -> llvm::Error {
    llvm::SmallVector<llvm::StringRef> names;
    llvm::StringRef(list ? list : "").split(names, ',', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
    for (llvm::StringRef name : names) {
      name = name.trim();
      if (name.empty())
        continue;
      if (!on && name == "all") {
        tg::driver::disableFusion(o);
      } else if (llvm::Error e = tg::driver::setFusion(o, name, on)) {
        return llvm::createStringError("tgc_options." + field + ": " +
                                       llvm::toString(std::move(e)) + (on ? "" : ", or \"all\""));
      }
    }
    return llvm::Error::success();
  };
  if (llvm::Error e = switchFusion(in.fuse, "fuse", true))
    return std::move(e);
  if (llvm::Error e = switchFusion(in.no_fuse, "no_fuse", false))
    return std::move(e);
  o.fusion.remarks = in.fusion_remarks != 0;
  return o;
}

void compile(const tgc_options &in, tgc_result &result) {
  auto options = driverOptions(in);
  if (!options) {
    record(result, TGC_ERROR, llvm::toString(options.takeError()));
    return;
  }
  DialectRegistry registry;
  tg::driver::registerDialects(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  ctx.printOpOnDiagnostic(false); // as tgc: no op printed with each remark
  ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &d) {
    record(result, severityOf(d.getSeverity()), d.getLocation(), d.str());
    for (mlir::Diagnostic &note : d.getNotes())
      record(result, TGC_NOTE, note.getLocation(), note.str());
    return success();
  });
  auto artifact = tg::driver::compileArtifact(ctx, *options, [&](const std::string &warning) {
    record(result, TGC_WARNING, warning);
  });
  if (!artifact) {
    record(result, TGC_ERROR, llvm::toString(artifact.takeError()));
    return;
  }
  result.artifact = std::move(*artifact);
  result.ok = true;
}
} // namespace

extern "C" {

const char *tgc_version(void) { return TG_VERSION; }

void tgc_options_init(tgc_options *options) {
  if (options)
    *options = tgc_options{};
}

size_t tgc_options_size(void) { return sizeof(tgc_options); }

tgc_result *tgc_compile(const tgc_options *options) {
  if (!options)
    return nullptr;
  auto *result = new (std::nothrow) tgc_result;
  if (result)
    compile(*options, *result);
  return result;
}

int tgc_result_ok(const tgc_result *result) { return result && result->ok; }

const uint8_t *tgc_result_artifact(const tgc_result *result, size_t *size) {
  bool has = result && result->ok;
  if (size)
    *size = has ? result->artifact.size() : 0;
  return has ? result->artifact.data() : nullptr;
}

size_t tgc_result_num_diagnostics(const tgc_result *result) {
  return result ? result->diagnostics.size() : 0;
}

int tgc_result_diagnostic(const tgc_result *result, size_t index, tgc_diagnostic *out) {
  if (!result || !out || index >= result->diagnostics.size())
    return -1;
  const CapturedDiagnostic &d = result->diagnostics[index];
  *out = tgc_diagnostic{d.severity, d.file.c_str(), d.line, d.column, d.message.c_str()};
  return 0;
}

void tgc_result_free(tgc_result *result) { delete result; }
}
