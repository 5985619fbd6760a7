// tg-bufferize-kernels: kernel functions on tensors (tg ops, outlined from
// dispatch regions) become functions on memrefs in destination-passing
// style, each tg op's loops emitted by emitKernelBody.
#include "tg/Exec/IR/ExecOps.h"
#include "tg/IR/TgDialect.h"
#include "tg/IR/TgOps.h"
#include "tg/Passes/KernelBodies.h"
#include "tg/Passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::tg {
#define GEN_PASS_DEF_TGBUFFERIZEKERNELS
#include "tg/Passes/Passes.h.inc"

namespace {

/// Emits each op of `body` in turn, into the buffers of the values it
/// defines: outputs where `buffers` has them, else new local buffers.
LogicalResult emitOpByOp(OpBuilder &b, Block &body,
                         DenseMap<Value, Value> &buffers,
                         SmallVector<Value> &locals, bool vectorRows) {
  for (Operation &op : body.without_terminator()) {
    if (!isa<TgDialect>(op.getDialect()))
      return op.emitOpError("cannot be in a kernel: only tg ops can");
    SmallVector<Value> operands, results;
    for (Value v : op.getOperands())
      operands.push_back(buffers.lookup(v));
    for (Value v : op.getResults()) {
      if (!buffers.count(v)) {
        Value local = memref::AllocOp::create(b, op.getLoc(),
                                              exec::getBufferType(v.getType()));
        locals.push_back(local);
        buffers[v] = local;
      }
      results.push_back(buffers[v]);
    }
    if (failed(emitKernelBody(b, &op, operands, results, vectorRows)))
      return failure();
  }
  return success();
}

/// Rewrites `kernel` (tensors in, tensors out) on memrefs (inputs, then one
/// output per result). Values that are not results live in local buffers.
LogicalResult bufferize(func::FuncOp kernel, bool vectorRows) {
  FunctionType type = kernel.getFunctionType();
  SmallVector<Type> argTypes;
  for (Type t : type.getInputs())
    argTypes.push_back(exec::getBufferType(t));
  for (Type t : type.getResults())
    argTypes.push_back(exec::getBufferType(t));
  OpBuilder b(kernel);
  auto lowered = func::FuncOp::create(b, kernel.getLoc(), kernel.getSymName(),
                                      b.getFunctionType(argTypes, {}));
  Block *entry = lowered.addEntryBlock();
  b.setInsertionPointToStart(entry);

  Block &body = kernel.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  unsigned numInputs = type.getNumInputs();
  DenseMap<Value, Value> buffers;
  for (auto [arg, buffer] :
       llvm::zip(body.getArguments(), entry->getArguments()))
    buffers[arg] = buffer;
  // Each returned value is computed straight into its output (the first
  // output it is returned in; later ones are copies).
  SmallVector<std::pair<Value, Value>> copiesAtEnd;
  for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
    Value output = entry->getArgument(numInputs + i);
    if (buffers.count(value))
      copiesAtEnd.push_back({value, output});
    else
      buffers[value] = output;
  }
  SmallVector<Value> locals;
  // A group is one loop nest, each returned value written once, no
  // intermediate buffers.
  SmallVector<Value> yielded, outputs;
  for (auto [i, value] : llvm::enumerate(ret.getOperands()))
    if (!isa<BlockArgument>(value) &&
        buffers[value] == entry->getArgument(numInputs + i)) {
      yielded.push_back(value);
      outputs.push_back(buffers[value]);
    }
  ValueRange inputs = entry->getArguments().take_front(numInputs);
  if (elementwiseGroupShape(body)) {
    if (failed(emitElementwiseGroup(b, body, inputs, yielded, outputs)))
      return failure();
  } else if (rowGroupOp(body)) {
    if (failed(emitRowGroup(b, body, inputs, yielded, outputs, vectorRows)))
      return failure();
  } else if (ropeGroup(body)) {
    if (failed(emitRopeGroup(b, body, inputs, yielded, outputs, vectorRows)))
      return failure();
  } else if (isFlashGroup(body)) {
    if (failed(emitFlashGroup(b, body, inputs, yielded, outputs)))
      return failure();
  } else if (lossWithGradient(body)) {
    if (failed(emitLossWithGradient(b, body, inputs, yielded, outputs, vectorRows)))
      return failure();
  } else if (failed(emitOpByOp(b, body, buffers, locals, vectorRows))) {
    return failure();
  }
  for (auto [value, output] : copiesAtEnd)
    linalg::CopyOp::create(b, kernel.getLoc(), buffers[value], output);
  for (Value local : locals)
    memref::DeallocOp::create(b, kernel.getLoc(), local);
  func::ReturnOp::create(b, kernel.getLoc());
  kernel.erase();
  return success();
}

struct BufferizeKernelsPass
    : impl::TgBufferizeKernelsBase<BufferizeKernelsPass> {
  using Base::Base;

  void runOnOperation() override {
    // Kernel modules are named: the ones nested in the program's module, or
    // the module this pass runs on.
    SmallVector<ModuleOp> modules;
    if (getOperation().getSymName())
      modules.push_back(getOperation());
    llvm::append_range(modules, getOperation().getOps<ModuleOp>());
    SmallVector<func::FuncOp> kernels;
    for (ModuleOp module : modules)
      for (auto kernel : module.getOps<func::FuncOp>())
        if (exec::isKernelOnTensors(kernel.getFunctionType()))
          kernels.push_back(kernel);
    for (func::FuncOp kernel : kernels)
      if (failed(bufferize(kernel, vectorRows)))
        return signalPassFailure();
  }
};
} // namespace
} // namespace mlir::tg
