// tg-eval: runs the reference evaluator on one function of an MLIR file.
// Arguments are bound by name from a safetensors file, results are written by
// name: the external names of mlir::tg::externalArgumentName and
// externalResultName ("NAME" for tg.param / tg.input, "adam_m:NAME" for a
// tg.state moment; "param:NAME" / "adam_m:NAME" for tg.updates, the
// tg.output name otherwise). tg.micro_batches ops are unrolled first.
#include "tg/Evaluator/Evaluator.h"
#include "tg/IR/TgDialect.h"
#include "tg/Passes/TrainStep.h"
#include "tg/runtime/Safetensors.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

using namespace mlir;
namespace st = ::tg::safetensors;
namespace ev = mlir::tg::eval;
namespace cl = llvm::cl;

static cl::OptionCategory category("tg-eval options");
static cl::opt<std::string> inputFile(cl::Positional, cl::Required,
                                      cl::desc("<input.mlir>"),
                                      cl::cat(category));
static cl::opt<std::string>
    inputsPath("inputs", cl::value_desc("file.safetensors"),
               cl::desc("Tensors bound to the function arguments by their "
                        "tg.param or tg.input name"),
               cl::cat(category));
static cl::opt<std::string> outputPath("o", cl::Required,
                                       cl::value_desc("file.safetensors"),
                                       cl::desc("Where to write the results"),
                                       cl::cat(category));
static cl::opt<std::string>
    functionName("function", cl::value_desc("name"),
                 cl::desc("The function to evaluate (default: the first "
                          "function with a body)"),
                 cl::cat(category));
static cl::opt<ev::Arithmetic> arithmetic(
    "arith", cl::desc("Arithmetic mode"),
    cl::values(clEnumValN(ev::Arithmetic::Float64, "f64",
                          "compute everything in double, write F64 results"),
               clEnumValN(ev::Arithmetic::Declared, "declared",
                          "round every result to its declared element type "
                          "and write it in that dtype")),
    cl::init(ev::Arithmetic::Float64), cl::cat(category));

static int fail(const std::string &message) {
  llvm::errs() << "tg-eval: error: " << message << "\n";
  return 1;
}

static std::string shapeString(ArrayRef<int64_t> shape) {
  return st::shapeToString(std::vector<int64_t>(shape.begin(), shape.end()));
}

/// The safetensors dtype that holds `type` exactly.
static st::DType dtypeFor(Type type) {
  if (type.isF32())
    return st::DType::F32;
  if (type.isBF16())
    return st::DType::BF16;
  if (type.isF16())
    return st::DType::F16;
  if (type.isInteger(32))
    return st::DType::I32;
  if (type.isInteger(64))
    return st::DType::I64;
  return st::DType::F64;
}

static func::FuncOp findFunction(ModuleOp module) {
  if (!functionName.empty())
    return module.lookupSymbol<func::FuncOp>(functionName);
  for (func::FuncOp func : module.getOps<func::FuncOp>())
    if (!func.isExternal())
      return func;
  return nullptr;
}

/// Binds argument `index` of `func` from `inputs`; returns an error message
/// on failure.
static std::optional<std::string> bindArgument(func::FuncOp func,
                                               unsigned index,
                                               const st::File &inputs,
                                               std::vector<ev::Tensor> &args) {
  std::string where = "argument #" + std::to_string(index) + " of @" +
                      func.getSymName().str();
  std::string name =
      mlir::tg::externalArgumentName(func.getArgAttrDict(index));
  if (name.empty())
    return where + " has no tg.param, tg.input or tg.state attribute";
  auto type = dyn_cast<RankedTensorType>(func.getArgument(index).getType());
  if (!type || !type.hasStaticShape())
    return where + " is not a static-shaped ranked tensor";
  if (inputsPath.empty())
    return where + " ('" + name + "') needs a value: pass --inputs";
  const st::Tensor *tensor = inputs.find(name);
  std::string what = inputsPath + ": tensor '" + name + "'";
  if (!tensor)
    return inputsPath + ": no tensor '" + name + "' for " + where;
  if (ArrayRef<int64_t>(tensor->shape) != type.getShape())
    return what + " has shape " + st::shapeToString(tensor->shape) +
           ", expected " + shapeString(type.getShape()) + " for " + where;
  bool wantFloat = isa<FloatType>(type.getElementType());
  if (st::isFloat(tensor->dtype) != wantFloat)
    return what + " has dtype " + st::dtypeName(tensor->dtype) +
           ", expected " + (wantFloat ? "a float" : "an integer") +
           " dtype for " + where;
  args.push_back({tensor->shape, st::toDoubles(*tensor)});
  return std::nullopt;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "TGC reference evaluator: evaluates a tg function on host tensors\n\n"
      "  tg-eval FILE.mlir --inputs IN.safetensors -o OUT.safetensors\n"
      "          [--function NAME] [--arith=f64|declared]\n");

  DialectRegistry registry;
  registry.insert<mlir::tg::TgDialect, func::FuncDialect>();
  MLIRContext context(registry);
  context.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(inputFile, sourceMgr, ParserConfig(&context));
  if (!module)
    return 1;

  func::FuncOp func = findFunction(*module);
  if (!func)
    return fail(inputFile + ": " +
                (functionName.empty()
                     ? std::string("no function with a body")
                     : "no function @" + functionName));

  // The evaluator runs straight-line tg code: micro-batch loops become one
  // clone of their body per micro-batch (the same arithmetic).
  if (failed(mlir::tg::unrollMicroBatches(func)))
    return 1;

  st::File inputs;
  std::string error;
  if (!inputsPath.empty() && !st::readFile(inputsPath, inputs, error))
    return fail(error);
  std::vector<ev::Tensor> args;
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (auto message = bindArgument(func, i, inputs, args))
      return fail(*message);

  FailureOr<std::vector<ev::Tensor>> results =
      ev::evaluate(func, args, arithmetic);
  if (failed(results))
    return 1;

  st::File output;
  for (auto [i, result] : llvm::enumerate(*results)) {
    std::string name =
        mlir::tg::externalResultName(func.getResultAttrDict(i));
    Type elementType =
        cast<RankedTensorType>(func.getResultTypes()[i]).getElementType();
    st::DType dtype = arithmetic == ev::Arithmetic::Float64
                          ? st::DType::F64
                          : dtypeFor(elementType);
    output.tensors.push_back(st::fromDoubles(
        name.empty() ? "result" + std::to_string(i) : name, dtype, result.shape,
        result.data));
  }
  if (!st::writeFile(outputPath, output, error))
    return fail(error);
  return 0;
}
