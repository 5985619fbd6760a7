#include "tg/Frontend/ModelBuilder.h"
#include "Families.h"
#include "tg/Frontend/JsonFieldReader.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tg::frontend;

std::string mlir::tg::frontend::normalInit(const ModelConfig &config,
                                     bool residualProjection) {
  double std = 0.02;
  if (residualProjection)
    std /= std::sqrt(2.0 * double(config.numLayers));
  return "normal:" + formatNumber(std);
}

std::vector<ParamSpec> mlir::tg::frontend::parameterSpecs(const ModelConfig &config) {
  return config.family == ModelFamily::Gpt2 ? gpt2Parameters(config)
                                            : llamaParameters(config);
}

std::string mlir::tg::frontend::shortParamName(llvm::StringRef hfName) {
  llvm::SmallVector<llvm::StringRef> parts;
  hfName.split(parts, '.');
  std::string name;
  for (size_t i = 0; i < parts.size(); ++i) {
    llvm::StringRef part = parts[i];
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

func::FuncOp mlir::tg::frontend::buildForward(ModuleOp module,
                                        const ModelConfig &config,
                                        int64_t batch, int64_t seqLen,
                                        Type elementType, Location location) {
  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);
  auto named = [&](llvm::StringRef name) {
    return NameLoc::get(StringAttr::get(ctx, name), location);
  };
  auto tokenType = RankedTensorType::get({batch, seqLen}, b.getI32Type());
  std::vector<ParamSpec> specs = parameterSpecs(config);

  SmallVector<Type> argTypes = {tokenType, tokenType};
  SmallVector<Location> argLocs = {named("tokens"), named("targets")};
  SmallVector<DictionaryAttr> argAttrs = {
      b.getDictionaryAttr(b.getNamedAttr(tg::kInputAttr, b.getStringAttr("tokens"))),
      b.getDictionaryAttr(b.getNamedAttr(tg::kInputAttr, b.getStringAttr("targets")))};
  for (const ParamSpec &spec : specs) {
    argTypes.push_back(RankedTensorType::get(spec.shape, elementType));
    argLocs.push_back(named(shortParamName(spec.name)));
    argAttrs.push_back(b.getDictionaryAttr(
        {b.getNamedAttr(tg::kParamAttr, b.getStringAttr(spec.name)),
         b.getNamedAttr(tg::kInitAttr, b.getStringAttr(spec.init))}));
  }
  auto logitsType = RankedTensorType::get({batch, seqLen, config.vocabSize},
                                          elementType);
  Type lossElement = elementType.isF64() ? elementType : b.getF32Type();
  auto lossType = RankedTensorType::get({}, lossElement);
  auto funcType = b.getFunctionType(argTypes, {lossType, logitsType});

  b.setInsertionPointToEnd(module.getBody());
  auto func = func::FuncOp::create(b, location, "forward", funcType);
  func.setAllArgAttrs(argAttrs);
  func.setResultAttr(0, tg::kOutputAttr, b.getStringAttr("loss"));
  func.setResultAttr(1, tg::kOutputAttr, b.getStringAttr("logits"));
  Block *entry = b.createBlock(&func.getBody(), {}, argTypes, argLocs);

  llvm::StringMap<Value> params;
  for (auto [i, spec] : llvm::enumerate(specs))
    params[spec.name] = entry->getArgument(i + 2);
  GraphBuilder g(b, location, params);
  Value tokens = entry->getArgument(0), targets = entry->getArgument(1);
  Value logits = config.family == ModelFamily::Gpt2
                     ? buildGpt2Logits(g, config, tokens)
                     : buildLlamaLogits(g, config, tokens);
  Value loss = g.loss(logits, targets);
  func::ReturnOp::create(b, location, ValueRange{loss, logits});
  return func;
}
