// Kernels on memrefs -> LLVM dialect -> LLVM IR -> host object -> shared
// object. Kernels take bare pointers (static shapes make descriptors
// redundant); each gets a `<name>_packed(void **buffers)` entry so the
// runtime calls every kernel the same way. Loops that
// tg-cpu-parallelize-loops outlined run through the library's
// `tg_parallel_for_hook` (ParallelLaunch.h).
#include "ParallelLaunch.h"
#include "tg/Targets/CpuTarget.h"
#include "tg/Passes/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/IR/Module.h"
#include "llvm/TargetParser/SubtargetFeature.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

namespace mlir::tg {
namespace {

/// Adds `void NAME_packed(void **buffers)` calling NAME(buffers[0], ...), and
/// makes NAME internal so it is inlined into its entry.
std::vector<std::string> addPackedEntries(llvm::Module &module,
                                          ArrayRef<std::string> names) {
  std::vector<std::string> symbols;
  llvm::LLVMContext &ctx = module.getContext();
  auto *ptr = llvm::PointerType::getUnqual(ctx);
  for (const std::string &name : names) {
    llvm::Function *kernel = module.getFunction(name);
    auto *entryType =
        llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr}, false);
    auto *entry = llvm::Function::Create(
        entryType, llvm::Function::ExternalLinkage, name + "_packed", module);
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", entry));
    SmallVector<llvm::Value *> args;
    for (unsigned i = 0; i < kernel->arg_size(); ++i) {
      llvm::Value *slot = b.CreateConstGEP1_64(ptr, entry->getArg(0), i);
      args.push_back(b.CreateLoad(ptr, slot));
    }
    b.CreateCall(kernel, args);
    b.CreateRetVoid();
    kernel->setLinkage(llvm::Function::InternalLinkage);
    symbols.push_back(entry->getName().str());
  }
  return symbols;
}

/// Defines each `<body>_launch(n, captured...)` that tg-cpu-parallelize-loops
/// declared: it stores the captured values in a stack struct and hands the
/// range [0, n) to the runtime's thread pool through the exported global
/// `tg_parallel_for_hook`, whose chunks run `<body>(begin, end,
/// captured...)` through a trampoline; a null hook (no runtime pool, as in
/// a test that dlopens the library itself) runs the whole range here. The
/// hook is a variable the runtime sets, not a function the library
/// imports: the library is dlopened from memory, sometimes in a process
/// where the runtime's own symbols are not global (Python loads it
/// RTLD_LOCAL), so it must not depend on undefined symbols.
void defineParallelLaunches(llvm::Module &module) {
  SmallVector<std::pair<llvm::Function *, llvm::Function *>> launches;
  for (llvm::Function &launch : module) {
    StringRef name = launch.getName();
    if (launch.isDeclaration() && name.consume_back(kParallelLaunchSuffix))
      if (llvm::Function *body = module.getFunction(name))
        launches.push_back({&launch, body});
  }
  if (launches.empty())
    return;
  llvm::LLVMContext &ctx = module.getContext();
  auto *ptr = llvm::PointerType::getUnqual(ctx);
  auto *i64 = llvm::Type::getInt64Ty(ctx);
  auto *voidType = llvm::Type::getVoidTy(ctx);
  auto *chunkType = llvm::FunctionType::get(voidType, {ptr, i64, i64}, false);
  auto *hookType = llvm::FunctionType::get(voidType, {i64, ptr, ptr}, false);
  auto *hook = new llvm::GlobalVariable(
      module, ptr, /*isConstant=*/false, llvm::GlobalValue::ExternalLinkage,
      llvm::ConstantPointerNull::get(ptr), kParallelForHook);
  for (auto [launch, body] : launches) {
    SmallVector<llvm::Type *> fields;
    for (llvm::Argument &arg : llvm::drop_begin(launch->args()))
      fields.push_back(arg.getType());
    auto *captures = llvm::StructType::get(ctx, fields);

    // void <body>_chunk(void *captures, int64_t begin, int64_t end)
    auto *chunk = llvm::Function::Create(chunkType,
                                         llvm::Function::InternalLinkage,
                                         body->getName() + "_chunk", module);
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", chunk));
    SmallVector<llvm::Value *> args = {chunk->getArg(1), chunk->getArg(2)};
    for (auto [i, type] : llvm::enumerate(fields))
      args.push_back(b.CreateLoad(
          type, b.CreateStructGEP(captures, chunk->getArg(0), i)));
    b.CreateCall(body, args);
    b.CreateRetVoid();

    launch->setLinkage(llvm::Function::InternalLinkage);
    b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", launch));
    llvm::Value *stored = b.CreateAlloca(captures);
    for (auto [i, arg] : llvm::enumerate(llvm::drop_begin(launch->args())))
      b.CreateStore(&arg, b.CreateStructGEP(captures, stored, i));
    llvm::Value *iterations = launch->getArg(0);
    llvm::Value *pool = b.CreateLoad(ptr, hook);
    auto *inlineRun = llvm::BasicBlock::Create(ctx, "inline", launch);
    auto *pooledRun = llvm::BasicBlock::Create(ctx, "pooled", launch);
    b.CreateCondBr(b.CreateIsNull(pool), inlineRun, pooledRun);
    b.SetInsertPoint(inlineRun);
    b.CreateCall(chunk, {stored, b.getInt64(0), iterations});
    b.CreateRetVoid();
    b.SetInsertPoint(pooledRun);
    b.CreateCall(hookType, pool, {iterations, chunk, stored});
    b.CreateRetVoid();
  }
}

llvm::Expected<std::unique_ptr<llvm::TargetMachine>> hostMachine() {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(llvm::sys::getProcessTriple());
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return llvm::createStringError("no LLVM target for this host: " + error);
  llvm::SubtargetFeatures features;
  for (auto &feature : llvm::sys::getHostCPUFeatures())
    features.AddFeature(feature.first(), feature.second);
  llvm::TargetOptions options;
  return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
      triple, llvm::sys::getHostCPUName(), features.getString(), options,
      llvm::Reloc::PIC_, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
}

/// Links `object` into a shared object with the C compiler driver.
llvm::Expected<std::vector<uint8_t>> linkSharedObject(ArrayRef<char> object) {
  SmallString<128> dir;
  if (auto ec = llvm::sys::fs::createUniqueDirectory("tgc-link", dir))
    return llvm::createStringError("cannot create a temporary directory: " +
                                   ec.message());
  llvm::scope_exit cleanup([&] { llvm::sys::fs::remove_directories(dir); });
  SmallString<128> objectPath(dir), libraryPath(dir);
  llvm::sys::path::append(objectPath, "kernels.o");
  llvm::sys::path::append(libraryPath, "kernels.so");
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(objectPath, ec);
    if (ec)
      return llvm::createStringError("cannot write " + objectPath + ": " +
                                     ec.message());
    os.write(object.data(), object.size());
  }
  const char *fromEnv = std::getenv("TG_CC");
  std::string driverName = fromEnv && *fromEnv ? fromEnv : "cc";
  auto driver = llvm::sys::findProgramByName(driverName);
  if (!driver)
    return llvm::createStringError(
        "the CPU target links kernels with a C compiler driver, and '" +
        driverName + "' was not found on PATH: install gcc or clang, or set "
                     "TG_CC to one");
  std::string message;
  SmallVector<StringRef> argv = {*driver, "-shared", "-o", libraryPath,
                                 objectPath, "-lm"};
#ifdef TG_CLANG_RT_BUILTINS
  // bf16 and f16 conversions (see CMakeLists.txt).
  argv.insert(argv.end() - 1, TG_CLANG_RT_BUILTINS);
#endif
  if (llvm::sys::ExecuteAndWait(*driver, argv, std::nullopt, {}, 0, 0,
                                &message) != 0)
    return llvm::createStringError("linking the kernels with '" + *driver +
                                   "' failed" +
                                   (message.empty() ? "" : ": " + message));
  auto library = llvm::MemoryBuffer::getFile(libraryPath);
  if (!library)
    return llvm::createStringError("cannot read the linked kernels: " +
                                   library.getError().message());
  StringRef bytes = (*library)->getBuffer();
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

} // namespace

void addCpuKernelLoweringPasses(OpPassManager &pm) {
  pm.addPass(createTgCpuApproximateMath());
  pm.addNestedPass<func::FuncOp>(createTgCpuVectorizeElementwise());
  // Parallel loops, so that tg-cpu-parallelize-loops can split linalg's
  // parallel dimensions between threads like the kernel bodies' row loops
  // (those it leaves serial lower to the same nested loops as before).
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  pm.addPass(createTgCpuParallelizeLoops());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertMathToLLVMPass());
  // After math-to-libm, which unrolls vector math without an LLVM
  // intrinsic (tanh, pow) into vector.extract / insert of scalar calls.
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  ConvertFuncToLLVMPassOptions funcOptions;
  funcOptions.useBarePtrCallConv = true;
  pm.addPass(createConvertFuncToLLVMPass(funcOptions));
  pm.addPass(createReconcileUnrealizedCastsPass());
}

llvm::Expected<HostKernels> serializeHostKernels(ModuleOp kernels,
                                                 ArrayRef<std::string> names) {
  MLIRContext *ctx = kernels.getContext();
  registerBuiltinDialectTranslation(*ctx);
  registerLLVMDialectTranslation(*ctx);
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> module =
      translateModuleToLLVMIR(kernels, llvmContext, "tg_kernels");
  if (!module)
    return llvm::createStringError("translating the kernels to LLVM IR failed");
  auto machine = hostMachine();
  if (!machine)
    return machine.takeError();
  module->setDataLayout((*machine)->createDataLayout());
  module->setTargetTriple((*machine)->getTargetTriple());

  HostKernels result;
  result.symbols = addPackedEntries(*module, names);
  defineParallelLaunches(*module);
  result.cpu = (*machine)->getTargetCPU().str();
  auto optimize = makeOptimizingTransformer(3, 0, machine->get());
  if (llvm::Error error = optimize(module.get()))
    return std::move(error);

  SmallVector<char, 0> object;
  {
    llvm::raw_svector_ostream os(object);
    llvm::legacy::PassManager codegen;
    if ((*machine)->addPassesToEmitFile(codegen, os, nullptr,
                                        llvm::CodeGenFileType::ObjectFile))
      return llvm::createStringError("LLVM cannot emit objects for this host");
    codegen.run(*module);
  }
  auto library = linkSharedObject(object);
  if (!library)
    return library.takeError();
  result.sharedObject = std::move(*library);
  return result;
}

llvm::Expected<HostKernels> compileHostKernels(ModuleOp kernels,
                                               ArrayRef<std::string> names) {
  PassManager pm(kernels.getContext());
  addCpuKernelLoweringPasses(pm);
  if (failed(pm.run(kernels)))
    return llvm::createStringError(
        "lowering the kernels to LLVM failed (a tgc bug: please report it)");
  return serializeHostKernels(kernels, names);
}

} // namespace mlir::tg
