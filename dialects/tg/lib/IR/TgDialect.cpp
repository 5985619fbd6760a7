#include "tg/IR/TgDialect.h"
#include "tg/IR/TgOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace mlir;
using namespace mlir::tg;

#include "tg/IR/TgOpsDialect.cpp.inc"

#include "tg/IR/TgAttrsEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "tg/IR/TgAttrs.cpp.inc"

void TgDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "tg/IR/TgOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "tg/IR/TgAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// The device mesh (module attributes)
//===----------------------------------------------------------------------===//

std::optional<int64_t> Mesh::getAxisSize(StringRef name) const {
  for (auto [axis, size] : llvm::zip(axes, shape))
    if (cast<StringAttr>(axis).getValue() == name)
      return size;
  return std::nullopt;
}

std::optional<Mesh> mlir::tg::getMesh(Operation *op) {
  auto module = dyn_cast<ModuleOp>(op);
  if (!module)
    module = op->getParentOfType<ModuleOp>();
  if (!module)
    return std::nullopt;
  auto axes = module->getAttrOfType<ArrayAttr>(kMeshAxesAttr);
  auto shape = module->getAttrOfType<DenseI64ArrayAttr>(kMeshShapeAttr);
  if (!axes || !shape)
    return std::nullopt;
  return Mesh{axes, shape.asArrayRef()};
}

void mlir::tg::setMesh(Operation *module, ArrayRef<StringRef> axes,
                       ArrayRef<int64_t> shape) {
  Builder b(module->getContext());
  module->setAttr(kMeshAxesAttr, b.getStrArrayAttr(axes));
  module->setAttr(kMeshShapeAttr, b.getDenseI64ArrayAttr(shape));
}

/// tg.mesh_axes and tg.mesh_shape: on a module, both present, as many
/// sizes as axes, unique non-empty names, sizes >= 1. Other tg attributes
/// on operations (tg.vocab_size, ...) are checked where they are read.
LogicalResult TgDialect::verifyOperationAttribute(Operation *op,
                                                  NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name != kMeshAxesAttr && name != kMeshShapeAttr)
    return success();
  if (!isa<ModuleOp>(op))
    return op->emitOpError("has '")
           << name << "', which only a builtin.module can declare";
  auto axes = op->getAttrOfType<ArrayAttr>(kMeshAxesAttr);
  auto shape = op->getAttrOfType<DenseI64ArrayAttr>(kMeshShapeAttr);
  auto expected = [&] {
    return op->emitOpError("declares a device mesh with '")
           << kMeshAxesAttr << "' (axis names, e.g. [\"data\"]) and '"
           << kMeshShapeAttr << "' (their sizes, e.g. array<i64: 4>): ";
  };
  if (!axes || !llvm::all_of(axes, llvm::IsaPred<StringAttr>))
    return expected() << "'" << kMeshAxesAttr
                      << "' is missing or not an array of strings";
  if (!shape)
    return expected() << "'" << kMeshShapeAttr
                      << "' is missing or not an array<i64: ...>";
  // Both attributes are checked together, once: from the axes.
  if (name == kMeshShapeAttr)
    return success();
  if (int64_t(axes.size()) != int64_t(shape.size()))
    return expected() << axes.size() << " axis names but " << shape.size()
                      << " sizes";
  llvm::StringSet<> seen;
  for (auto [axis, size] : llvm::zip(axes, shape.asArrayRef())) {
    StringRef axisName = cast<StringAttr>(axis).getValue();
    if (axisName.empty() || !seen.insert(axisName).second)
      return expected() << "axis name '" << axisName
                        << "' is empty or repeated";
    if (size < 1)
      return expected() << "axis '" << axisName << "' has size " << size
                        << "; sizes must be >= 1";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// InitAttr and StateAttr
//===----------------------------------------------------------------------===//

/// The shortest decimal that reads back as `value`, always with a '.' so
/// MLIR's lexer takes it as a float literal ("0.02", "1.0e-05").
static std::string formatDouble(double value) {
  char buffer[64];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value)
      break;
  }
  std::string text = buffer;
  if (!std::isfinite(value) || text.find('.') != std::string::npos)
    return text;
  size_t e = text.find('e');
  if (e == std::string::npos)
    return text + ".0";
  return text.insert(e, ".0");
}

Attribute InitAttr::parse(AsmParser &parser, Type) {
  MLIRContext *ctx = parser.getContext();
  StringRef keyword;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLess() || parser.parseKeyword(&keyword))
    return {};
  std::optional<InitKind> kind = symbolizeInitKind(keyword);
  if (!kind) {
    parser.emitError(loc) << "expected 'zeros', 'ones' or 'normal', got '"
                          << keyword << "'";
    return {};
  }
  FloatAttr std;
  if (succeeded(parser.parseOptionalComma())) {
    double value = 0;
    if (parser.parseKeyword("std") || parser.parseEqual() ||
        parser.parseFloat(value))
      return {};
    std = FloatAttr::get(Float64Type::get(ctx), value);
  }
  if (parser.parseGreater())
    return {};
  return InitAttr::getChecked([&] { return parser.emitError(loc); }, ctx,
                              *kind, std);
}

void InitAttr::print(AsmPrinter &printer) const {
  printer << "<" << stringifyInitKind(getKind());
  if (getStd())
    printer << ", std = " << formatDouble(getStd().getValueAsDouble());
  printer << ">";
}

LogicalResult InitAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               InitKind kind, FloatAttr std) {
  if (kind != InitKind::Normal) {
    if (std)
      return emitError() << "#tg.init<" << stringifyInitKind(kind)
                         << "> takes no std";
    return success();
  }
  if (!std)
    return emitError() << "#tg.init<normal> needs a std: "
                          "#tg.init<normal, std = S>";
  double value = std.getValueAsDouble();
  if (!std::isfinite(value) || value <= 0)
    return emitError() << "#tg.init<normal> needs a finite std > 0, got "
                       << formatDouble(value);
  return success();
}

LogicalResult StateAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                StateKind kind, StringAttr name) {
  if (!name || name.getValue().empty())
    return emitError() << "#tg.state<" << stringifyStateKind(kind)
                       << ", ...> needs a non-empty parameter name";
  return success();
}

//===----------------------------------------------------------------------===//
// Names
//===----------------------------------------------------------------------===//

std::string mlir::tg::externalStateName(StateAttr state) {
  return (stringifyStateKind(state.getKind()) + ":" +
          state.getName().getValue())
      .str();
}

std::string mlir::tg::externalArgumentName(DictionaryAttr attrs) {
  if (!attrs)
    return "";
  if (auto name = attrs.getAs<StringAttr>(kParamAttr))
    return name.str();
  if (auto name = attrs.getAs<StringAttr>(kInputAttr))
    return name.str();
  if (auto state = attrs.getAs<StateAttr>(kStateAttr))
    return externalStateName(state);
  return "";
}

std::string mlir::tg::externalResultName(DictionaryAttr attrs) {
  if (!attrs)
    return "";
  if (auto state = attrs.getAs<StateAttr>(kUpdatesAttr))
    return externalStateName(state);
  if (auto name = attrs.getAs<StringAttr>(kOutputAttr))
    return name.str();
  return "";
}

std::string mlir::tg::shortParamName(StringRef hfName) {
  SmallVector<StringRef> parts;
  hfName.split(parts, '.');
  std::string name;
  for (size_t i = 0; i < parts.size(); ++i) {
    StringRef part = parts[i];
    if (i == 0 && (part == "transformer" || part == "model"))
      continue;
    // "h.3" / "layers.3" -> "h3"
    if ((part == "h" || part == "layers") && i + 1 < parts.size()) {
      name += (name.empty() ? "" : "_") + ("h" + parts[++i]).str();
      continue;
    }
    if (part == "weight")
      part = "w";
    else if (part == "bias")
      part = "b";
    name += (name.empty() ? "" : "_") + part.str();
  }
  return name;
}

//===----------------------------------------------------------------------===//
// Argument and result attributes
//===----------------------------------------------------------------------===//

static bool hasTgAttr(DictionaryAttr attrs) {
  if (!attrs)
    return false;
  for (NamedAttribute attr : attrs)
    if (attr.getName().getValue().starts_with("tg."))
      return true;
  return false;
}

/// A tensor argument or result with a tg attribute has a static shape with
/// every dimension >= 1, as the tensors of tg ops do (TgOps.td).
static LogicalResult verifyTgTensorType(Operation *op, StringRef what,
                                        unsigned index, Type type) {
  auto tensor = dyn_cast<TensorType>(type);
  if (!tensor || (tensor.hasRank() && llvm::all_of(tensor.getShape(),
                                                   [](int64_t d) {
                                                     return d >= 1;
                                                   })))
    return success();
  return op->emitOpError()
         << what << " #" << index << " has type " << type
         << ": a tensor with a tg attribute needs a static shape with every "
            "dimension >= 1 (no '?' or 0 dimensions)";
}

/// Checks what needs the whole signature: names unique per function
/// (tg.param, tg.input, tg.state among arguments; tg.output, tg.updates
/// among results), every compute copy the 16-bit shape of a parameter
/// argument and every tg.updates naming an argument of its type.
static LogicalResult verifyFunctionAttrs(FunctionOpInterface func) {
  Operation *op = func.getOperation();
  llvm::StringMap<unsigned> params, inputs, outputs;
  llvm::DenseMap<Attribute, unsigned> states, updates;
  ArrayRef<Type> argTypes = func.getArgumentTypes();
  ArrayRef<Type> resultTypes = func.getResultTypes();
  auto duplicate = [&](StringRef what, unsigned index, StringRef key,
                       Attribute value, unsigned first) {
    return op->emitOpError()
           << what << " #" << index << ": duplicate '" << key << "' " << value
           << " (also on " << what << " #" << first << ")";
  };
  for (unsigned i = 0; i < argTypes.size(); ++i) {
    DictionaryAttr attrs = func.getArgAttrDict(i);
    if (!attrs)
      continue;
    if (hasTgAttr(attrs) &&
        failed(verifyTgTensorType(op, "argument", i, argTypes[i])))
      return failure();
    for (auto [key, map] : {std::pair<StringRef, llvm::StringMap<unsigned> *>{
                                kParamAttr, &params},
                            {kInputAttr, &inputs}})
      if (auto name = attrs.getAs<StringAttr>(key)) {
        auto [it, inserted] = map->try_emplace(name.getValue(), i);
        if (!inserted)
          return duplicate("argument", i, key, name, it->second);
      }
    if (auto state = attrs.getAs<StateAttr>(kStateAttr)) {
      auto [it, inserted] = states.try_emplace(state, i);
      if (!inserted)
        return duplicate("argument", i, kStateAttr, state, it->second);
    }
  }
  for (unsigned i = 0; i < argTypes.size(); ++i) {
    auto copy = func.getArgAttrOfType<StateAttr>(i, kStateAttr);
    if (!copy || copy.getKind() != StateKind::Compute)
      continue;
    auto param = params.find(copy.getName().getValue());
    auto type = dyn_cast<RankedTensorType>(argTypes[i]);
    if (param == params.end() || !type ||
        !isa<BFloat16Type, Float16Type>(type.getElementType()) ||
        cast<ShapedType>(argTypes[param->second]).getShape() != type.getShape())
      return op->emitOpError()
             << "argument #" << i << ": the compute copy " << copy
             << " needs an argument with tg.param = \""
             << copy.getName().getValue()
             << "\" of its shape, and a bf16 or f16 element type (has "
             << argTypes[i] << ")";
  }
  for (unsigned i = 0; i < resultTypes.size(); ++i) {
    DictionaryAttr attrs = func.getResultAttrDict(i);
    if (!attrs)
      continue;
    if (hasTgAttr(attrs) &&
        failed(verifyTgTensorType(op, "result", i, resultTypes[i])))
      return failure();
    if (auto name = attrs.getAs<StringAttr>(kOutputAttr)) {
      auto [it, inserted] = outputs.try_emplace(name.getValue(), i);
      if (!inserted)
        return duplicate("result", i, kOutputAttr, name, it->second);
    }
    auto state = attrs.getAs<StateAttr>(kUpdatesAttr);
    if (!state)
      continue;
    auto [it, inserted] = updates.try_emplace(state, i);
    if (!inserted)
      return duplicate("result", i, kUpdatesAttr, state, it->second);
    std::optional<unsigned> arg;
    if (state.getKind() == StateKind::Param) {
      auto found = params.find(state.getName().getValue());
      if (found != params.end())
        arg = found->second;
    } else if (auto found = states.find(state); found != states.end()) {
      arg = found->second;
    }
    if (!arg)
      return op->emitOpError()
             << "result #" << i << ": '" << kUpdatesAttr << "' " << state
             << " names no argument of the function (expected one with "
             << (state.getKind() == StateKind::Param
                     ? "tg.param = " + state.getName().str()
                     : "tg.state = the same state")
             << ")";
    if (argTypes[*arg] != resultTypes[i])
      return op->emitOpError()
             << "result #" << i << ": '" << kUpdatesAttr << "' " << state
             << " has type " << resultTypes[i] << " but argument #" << *arg
             << " has type " << argTypes[*arg];
  }
  return success();
}

/// Runs verifyFunctionAttrs once per function: from the first argument with
/// a tg attribute, or, when no argument has one, from the first result with
/// one.
static LogicalResult verifyFunctionOnce(Operation *op, bool isArg,
                                        unsigned index) {
  auto func = dyn_cast<FunctionOpInterface>(op);
  if (!func)
    return success();
  unsigned numArgs = func.getNumArguments();
  unsigned firstArg = numArgs;
  for (unsigned i = 0; i < numArgs && firstArg == numArgs; ++i)
    if (hasTgAttr(func.getArgAttrDict(i)))
      firstArg = i;
  if (isArg)
    return index == firstArg ? verifyFunctionAttrs(func) : success();
  if (firstArg != numArgs)
    return success();
  for (unsigned i = 0; i < index; ++i)
    if (hasTgAttr(func.getResultAttrDict(i)))
      return success();
  return verifyFunctionAttrs(func);
}

/// `tg.param`, `tg.input` and `tg.output` must be non-empty strings.
static LogicalResult verifyName(Operation *op, StringRef what, unsigned index,
                                NamedAttribute attr, StringRef meaning = "") {
  auto name = dyn_cast<StringAttr>(attr.getValue());
  if (!name || name.getValue().empty())
    return op->emitOpError() << what << " #" << index << ": '"
                             << attr.getName().getValue()
                             << "' must be a non-empty string" << meaning
                             << ", got " << attr.getValue();
  return success();
}

/// A parameter's tg.shard: its share's type is the whole shape with the
/// split dim padded and divided by the axis's ranks.
static LogicalResult verifyShard(Operation *op, unsigned argIndex,
                                 Attribute value) {
  auto shard = dyn_cast<ShardAttr>(value);
  auto fail = [&]() {
    return op->emitOpError() << "argument #" << argIndex << ": '" << kShardAttr
                             << "' ";
  };
  if (!shard)
    return fail() << "must be a #tg.shard<...>, got " << value;
  auto func = dyn_cast<FunctionOpInterface>(op);
  if (!func)
    return success();
  auto type = dyn_cast<RankedTensorType>(func.getArgumentTypes()[argIndex]);
  ArrayRef<int64_t> full = shard.getFullShape().asArrayRef();
  int64_t dim = shard.getDim();
  if (!type || type.getRank() != (int64_t)full.size() || dim < 0 ||
      dim >= type.getRank() || shard.getBlocks() < 1 ||
      shard.getPaddedSize() < full[dim] ||
      (shard.getBlocks() > 1 && shard.getPaddedSize() != full[dim]))
    return fail() << value << " does not describe a share of the argument "
                  << func.getArgumentTypes()[argIndex];
  for (int64_t i = 0; i < type.getRank(); ++i)
    if (i != dim && type.getDimSize(i) != full[i])
      return fail() << value << ": the argument " << type
                    << " differs from the whole tensor outside dim " << dim;
  std::optional<Mesh> mesh = getMesh(op);
  std::optional<int64_t> ranks =
      mesh ? mesh->getAxisSize(shard.getAxis()) : std::nullopt;
  if (!ranks)
    return fail() << "splits over mesh axis '" << shard.getAxis()
                  << "', which the module's mesh does not have";
  if (shard.getPaddedSize() % (*ranks * shard.getBlocks()) != 0 ||
      type.getDimSize(dim) * *ranks != shard.getPaddedSize())
    return fail() << value << ": dim " << dim << " of the argument " << type
                  << " is not 1/" << *ranks << " of the padded size";
  return success();
}

/// A moment's tg.optimizer_shard: the argument is a [chunk] tensor of
/// optimizer state, split over an axis of the module's mesh.
static LogicalResult verifyOptimizerShard(Operation *op, unsigned argIndex,
                                          Attribute value) {
  auto shard = dyn_cast<OptimizerShardAttr>(value);
  auto fail = [&]() {
    return op->emitOpError() << "argument #" << argIndex << ": '"
                             << kOptimizerShardAttr << "' ";
  };
  if (!shard)
    return fail() << "must be a #tg.optimizer_shard<...>, got " << value;
  auto func = dyn_cast<FunctionOpInterface>(op);
  if (!func)
    return success();
  if (!func.getArgAttr(argIndex, kStateAttr))
    return fail() << "is only for AdamW moments (arguments with "
                  << kStateAttr << ")";
  auto type = dyn_cast<RankedTensorType>(func.getArgumentTypes()[argIndex]);
  if (shard.getChunk() < 1 || !type || type.getRank() != 1 ||
      type.getDimSize(0) != shard.getChunk())
    return fail() << value << " needs a 1-D argument of " << shard.getChunk()
                  << " elements, got " << func.getArgumentTypes()[argIndex];
  std::optional<Mesh> mesh = getMesh(op);
  if (!mesh || !mesh->getAxisSize(shard.getAxis()))
    return fail() << "splits over mesh axis '" << shard.getAxis()
                  << "', which the module's mesh does not have";
  return success();
}

LogicalResult TgDialect::verifyRegionArgAttribute(Operation *op,
                                                  unsigned regionIndex,
                                                  unsigned argIndex,
                                                  NamedAttribute attr) {
  StringAttr key = attr.getName();
  if (key == kParamAttr) {
    if (failed(verifyName(op, "argument", argIndex, attr,
                          " (the parameter's Hugging Face name)")))
      return failure();
  } else if (key == kInputAttr) {
    if (failed(verifyName(op, "argument", argIndex, attr)))
      return failure();
  } else if (key == kInitAttr) {
    if (!isa<InitAttr>(attr.getValue()))
      return op->emitOpError()
             << "argument #" << argIndex << ": '" << kInitAttr
             << "' must be #tg.init<zeros>, #tg.init<ones> or "
                "#tg.init<normal, std = S>, got "
             << attr.getValue();
  } else if (key == kShardAttr) {
    if (failed(verifyShard(op, argIndex, attr.getValue())))
      return failure();
  } else if (key == kOptimizerShardAttr) {
    if (failed(verifyOptimizerShard(op, argIndex, attr.getValue())))
      return failure();
  } else if (key == kStateAttr) {
    auto state = dyn_cast<StateAttr>(attr.getValue());
    if (!state || state.getKind() == StateKind::Param)
      return op->emitOpError()
             << "argument #" << argIndex << ": '" << kStateAttr
             << "' must be #tg.state<adam_m, \"NAME\">, "
                "#tg.state<adam_v, \"NAME\"> or #tg.state<compute, \"NAME\"> "
                "(parameters carry tg.param), got "
             << attr.getValue();
  } else {
    return op->emitOpError() << "argument #" << argIndex
                             << ": unknown tg argument attribute '"
                             << key.getValue() << "'";
  }
  // Only the first tg attribute of the first such argument: the whole
  // function is checked once.
  auto func = dyn_cast<FunctionOpInterface>(op);
  if (!func)
    return success();
  DictionaryAttr attrs = func.getArgAttrDict(argIndex);
  for (NamedAttribute other : attrs)
    if (other.getName().getValue().starts_with("tg."))
      return other.getName() == key
                 ? verifyFunctionOnce(op, /*isArg=*/true, argIndex)
                 : success();
  return success();
}

LogicalResult TgDialect::verifyRegionResultAttribute(Operation *op,
                                                     unsigned regionIndex,
                                                     unsigned resultIndex,
                                                     NamedAttribute attr) {
  StringAttr key = attr.getName();
  if (key == kOutputAttr) {
    if (failed(verifyName(op, "result", resultIndex, attr)))
      return failure();
  } else if (key == kUpdatesAttr) {
    if (!isa<StateAttr>(attr.getValue()))
      return op->emitOpError()
             << "result #" << resultIndex << ": '" << kUpdatesAttr
             << "' must be a #tg.state<KIND, \"NAME\">, got "
             << attr.getValue();
  } else {
    return op->emitOpError() << "result #" << resultIndex
                             << ": unknown tg result attribute '"
                             << key.getValue() << "'";
  }
  auto func = dyn_cast<FunctionOpInterface>(op);
  if (!func)
    return success();
  for (NamedAttribute other : func.getResultAttrDict(resultIndex))
    if (other.getName().getValue().starts_with("tg."))
      return other.getName() == key
                 ? verifyFunctionOnce(op, /*isArg=*/false, resultIndex)
                 : success();
  return success();
}
