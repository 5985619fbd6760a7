// The roles of a training step's arguments and results, from its tg
// attributes.
#include "tg/Passes/Interface.h"

#include "tg/IR/TgDialect.h"

namespace mlir::tg {

namespace {
exec::ResourceKind resourceKindOf(StateKind kind) {
  switch (kind) {
  case StateKind::Param:
    return exec::ResourceKind::parameter;
  case StateKind::AdamM:
    return exec::ResourceKind::adam_m;
  case StateKind::AdamV:
    return exec::ResourceKind::adam_v;
  case StateKind::Compute:
    return exec::ResourceKind::compute_copy;
  }
  llvm_unreachable("unknown state kind");
}
} // namespace

FailureOr<StepInterface> readStepInterface(func::FuncOp step) {
  StepInterface interface;
  for (unsigned i = 0; i < step.getNumArguments(); ++i) {
    InterfaceRole role;
    if (auto param = step.getArgAttrOfType<StringAttr>(i, kParamAttr)) {
      role.kind = exec::ResourceKind::parameter;
      role.name = param.str();
      role.init = step.getArgAttrOfType<InitAttr>(i, kInitAttr);
      role.shard = step.getArgAttrOfType<ShardAttr>(i, kShardAttr);
    } else if (auto state = step.getArgAttrOfType<StateAttr>(i, kStateAttr)) {
      role.kind = resourceKindOf(state.getKind());
      role.name = state.getName().str();
      role.optimizerShard =
          step.getArgAttrOfType<OptimizerShardAttr>(i, kOptimizerShardAttr);
    } else if (auto input = step.getArgAttrOfType<StringAttr>(i, kInputAttr)) {
      role.kind = exec::ResourceKind::input;
      role.name = input.str();
    } else {
      return step.emitOpError("argument #")
             << i << " is neither a parameter (" << kParamAttr
             << "), optimizer state (" << kStateAttr << ") nor an input ("
             << kInputAttr << ")";
    }
    interface.args.push_back(role);
  }
  for (unsigned i = 0; i < step.getNumResults(); ++i) {
    InterfaceRole role;
    if (auto state = step.getResultAttrOfType<StateAttr>(i, kUpdatesAttr)) {
      role.kind = resourceKindOf(state.getKind());
      role.name = state.getName().str();
      role.updates = true;
    } else if (auto output =
                   step.getResultAttrOfType<StringAttr>(i, kOutputAttr)) {
      role.kind = exec::ResourceKind::output;
      role.name = output.str();
    } else {
      return step.emitOpError("result #")
             << i << " has neither " << kUpdatesAttr << " nor " << kOutputAttr;
    }
    interface.results.push_back(role);
  }
  return interface;
}

} // namespace mlir::tg
