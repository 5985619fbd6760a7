#include "tg/Frontend/ModelBuilder.h"
#include "Families.h"
#include "tg/Frontend/JsonFieldReader.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringExtras.h"

#include <cmath>
#include <cstdlib>

using namespace mlir;
using namespace mlir::tg::frontend;

ParamInit mlir::tg::frontend::normalInit(const ModelConfig &config,
                                         bool residualProjection) {
  double std = config.initializerRange;
  if (residualProjection)
    std /= std::sqrt(2.0 * double(config.numLayers));
  // Rounded to the 9 significant digits the former "normal:STD" string
  // carried, so initial weights stay what they were.
  return {InitKind::Normal, std::strtod(formatNumber(std).c_str(), nullptr)};
}

/// The tg.init attribute of `init`.
static Attribute initAttr(MLIRContext *ctx, const ParamInit &init) {
  using tg::InitAttr, tg::InitKind;
  if (init.kind == InitKind::Normal)
    return InitAttr::get(ctx, init.std);
  return InitAttr::get(ctx, init.kind);
}

std::vector<ParamSpec> mlir::tg::frontend::parameterSpecs(const ModelConfig &config) {
  return config.family == ModelFamily::Gpt2 ? gpt2Parameters(config)
                                            : llamaParameters(config);
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
         b.getNamedAttr(tg::kInitAttr, initAttr(ctx, spec.init))}));
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
