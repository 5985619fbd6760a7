//===- ExecOps.td - the execution dialect -------------------------------*-===//
//
// What a compiled training step does at run time: typed resources in one
// arena, kernel dispatches, library GEMMs, copies and collectives, each on a
// stream, returning a timepoint that later commands await. The order of the
// commands in the block is one valid schedule; the timepoints are the
// dependency graph that passes may reschedule by.
//
//===----------------------------------------------------------------------===//

#ifndef TG_EXEC_OPS_TD
#define TG_EXEC_OPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"

def Exec_Dialect : Dialect {
  let name = "exec";
  let summary = "Resources, streams and commands of a compiled training step";
  let description = [{
    An `exec.program` is what the runtime executes: resources (slices of one
    arena, typed by role), and commands over them (`dispatch` of a generated
    kernel, `gemm` through the target's library, `copy`, collectives over a
    named mesh axis). Every command runs on a stream and returns an
    `!exec.timepoint`; it starts only after the timepoints it awaits. Before
    planning, dispatch regions on tensors (`exec.dispatch_region`) group the
    ops that one kernel will compute.
  }];
  let cppNamespace = "::mlir::tg::exec";
  let useDefaultTypePrinterParser = 1;
}

class Exec_Op<string mnemonic, list<Trait> traits = []>
    : Op<Exec_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Types and enums
//===----------------------------------------------------------------------===//

def Exec_Timepoint : TypeDef<Exec_Dialect, "Timepoint"> {
  let mnemonic = "timepoint";
  let summary = "The completion of a command";
}

def Exec_ResourceKind : I32EnumAttr<"ResourceKind", "the role of a resource", [
    I32EnumAttrCase<"parameter", 0>, // trainable weights (fp32 masters)
    I32EnumAttrCase<"adam_m", 1>,    // AdamW first moment of a parameter
    I32EnumAttrCase<"adam_v", 2>,    // AdamW second moment of a parameter
    I32EnumAttrCase<"input", 3>,     // written by the host before a step
    I32EnumAttrCase<"output", 4>,    // read by the host after a step
    I32EnumAttrCase<"constant", 5>,  // loaded once with the program
    I32EnumAttrCase<"scratch", 6>,   // lives within one step
    // a parameter rounded to the compute precision, kept between steps
    I32EnumAttrCase<"compute_copy", 7>,
  ]> {
  let cppNamespace = "::mlir::tg::exec";
}

def Exec_Reduction : I32EnumAttr<"Reduction", "how a collective combines", [
    I32EnumAttrCase<"sum", 0>, I32EnumAttrCase<"avg", 1>,
    I32EnumAttrCase<"max", 2>, I32EnumAttrCase<"min", 3>,
  ]> {
  let cppNamespace = "::mlir::tg::exec";
}

def Exec_GemmActivation : I32EnumAttr<"GemmActivation",
    "what a GEMM's epilogue applies after the bias", [
      I32EnumAttrCase<"none", 0>,
      // c = gelu(product + bias) with the tanh approximation; aux = the
      // sum before it (what the gradient reads).
      I32EnumAttrCase<"gelu_tanh", 1>,
      // c = product * gelu'(aux), the tanh approximation's derivative.
      I32EnumAttrCase<"gelu_tanh_grad", 2>,
    ]> {
  let cppNamespace = "::mlir::tg::exec";
}

def Exec_BinaryFormat : I32EnumAttr<"BinaryFormat", "kernel image format", [
    I32EnumAttrCase<"elf", 0>, // host shared object, NAME_packed(void**)
    I32EnumAttrCase<"ptx", 1>,
  ]> {
  let cppNamespace = "::mlir::tg::exec";
}

def Exec_Buffer : MemRefRankOf<[AnyType], [0, 1, 2, 3, 4, 5, 6]>;

//===----------------------------------------------------------------------===//
// Programs and resources
//===----------------------------------------------------------------------===//

def Exec_ProgramOp : Exec_Op<"program", [Symbol, IsolatedFromAbove,
    SingleBlock, NoTerminator, NoRegionArguments]> {
  let summary = "A compiled training step: resources and commands";
  let description = [{
    `mesh_axes` / `mesh_shape` name the device mesh collectives run over (a
    single device is `["data"]`, `[1]`). `batch_size`, `seq_len`,
    `vocab_size`, `seed` and `flops_per_step` describe the step for the
    runtime. `arena_size` and `state_size` are set by exec-plan-buffers: the
    arena holds the state region (bytes [0, state_size)) then scratch.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
      StrArrayAttr:$mesh_axes, DenseI64ArrayAttr:$mesh_shape,
      I64Attr:$batch_size, I64Attr:$seq_len, I64Attr:$vocab_size,
      I64Attr:$seed, F64Attr:$flops_per_step,
      OptionalAttr<I64Attr>:$arena_size, OptionalAttr<I64Attr>:$state_size);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::Block &getBlock() { return getBody().front(); }
    /// The size of mesh axis `axis`, or std::nullopt if there is none.
    std::optional<int64_t> getAxisSize(::llvm::StringRef axis);
  }];
}

def Exec_ResourceOp : Exec_Op<"resource", [Pure, AttrSizedOperandSegments]> {
  let summary = "A buffer of the arena with a role";
  let description = [{
    `name` is the interface name of state (the Hugging Face name of a
    parameter and of the moments that belong to it, "tokens", "loss", ...).
    A parameter carries its initialisation rule (`init`), a constant its
    `value`. `updates(%state)` marks the new value of a state resource: after
    the step it must be in `%state`'s place (exec-plan-buffers writes it there
    directly when it can, or copies it back). `at OFFSET` is the byte offset
    in the arena, set by exec-plan-buffers.

    `in %pack[ELEMENT]` places the resource inside another of its kind (a
    pack), from that element on: one kernel then reads or writes the
    resources of a pack at once as the pack's rows (exec-fuse-horizontal).
    The member keeps its name and role (its slot is its bytes of the pack);
    the pack, unnamed, is what the planner places, and the pack, not its
    members, `updates` state. Members of one pack do not overlap.

    ```mlir
    %p = exec.resource parameter : memref<2x128xf32>
    %b = exec.resource parameter "h.0.ln_1.bias" in %p[128] : memref<2x128xf32> {init = #tg.init<zeros>} : memref<128xf32>
    ```
  }];
  let arguments = (ins Exec_ResourceKind:$kind, OptionalAttr<StrAttr>:$name,
      Optional<Exec_Buffer>:$updates, OptionalAttr<AnyAttr>:$init,
      OptionalAttr<ElementsAttr>:$value, OptionalAttr<I64Attr>:$offset,
      Optional<Exec_Buffer>:$pack,
      OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$pack_element);
  let results = (outs Exec_Buffer:$result);
  let assemblyFormat = [{
    $kind ($name^)? (`in` $pack^ `[` $pack_element `]` `:` type($pack))?
    (`updates` `(` $updates^ `:` type($updates) `)`)?
    (`at` $offset^)? attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Bytes the resource occupies (elements x element size).
    int64_t getByteSize();
    bool isState() { return getKind() != ResourceKind::scratch; }
  }];
}

def Exec_ViewOp : Exec_Op<"view", [Pure]> {
  let summary = "Bytes of a buffer with another static shape";
  let description = [{
    The result's elements are the source's from element `offset` (0 when
    absent) on, in another shape of the same element type; without an
    offset it covers the whole source. A gradient bucket holds its
    gradients this way (exec-bucket-gradients).

    ```mlir
    %g = exec.view %bucket[64] : memref<256xf32> to memref<8x8xf32>
    ```
  }];
  let arguments = (ins Exec_Buffer:$source,
      OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$offset);
  let results = (outs Exec_Buffer:$result);
  let assemblyFormat = [{
    $source (`[` $offset^ `]`)? attr-dict `:` type($source) `to` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Commands
//===----------------------------------------------------------------------===//

/// Every command runs on `stream` after the timepoints it awaits.
class Exec_CommandOp<string mnemonic, list<Trait> traits = []>
    : Exec_Op<mnemonic, traits> {
  let results = (outs Exec_Timepoint:$done);
}

def Exec_DispatchOp : Exec_CommandOp<"dispatch",
    [AttrSizedOperandSegments,
     DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Run a generated kernel";
  let description = [{
    `kernel` is a function of the program's kernel module (on tensors before
    tg-bufferize-kernels: inputs -> results; on memrefs after it: inputs then
    outputs), or a kernel of an `exec.binary` once serialized.
  }];
  let arguments = (ins SymbolRefAttr:$kernel, Variadic<Exec_Buffer>:$inputs,
      Variadic<Exec_Buffer>:$outputs, Variadic<Exec_Timepoint>:$awaits,
      DefaultValuedAttr<I64Attr, "0">:$stream);
  let assemblyFormat = [{
    $kernel `(` $inputs `)` `->` `(` $outputs `)`
    (`await` `(` $awaits^ `)`)? (`on` $stream^)? attr-dict
    `:` functional-type($inputs, $outputs)
  }];
}

def Exec_GemmOp : Exec_CommandOp<"gemm", [AttrSizedOperandSegments]> {
  let summary = "c[i] = op(a[i]) x op(b[i]) (+ bias) (+ addend) for i < batch, through "
                "a library";
  let description = [{
    Row-major m x k times k x n matrices (op = transpose when `transpose_a` /
    `transpose_b`); strides in elements between the batch's matrices, 0 when
    all share one. Element types must match. With `bias` (n elements), the
    library adds it to every row of c as it writes c (an epilogue: cuBLASLt's
    on CUDA, a pass over each row right after the BLAS call on the CPU).

    `activation` (exec-fuse-gemm-activation; one packed product, batch 1;
    not f64 on CUDA):
    `gelu_tanh` writes GELU (tanh approximation) of the product plus bias to
    c and the sum before it to `aux` (m x n, packed), which the gradient
    reads; `gelu_tanh_grad` (no bias) writes the product times GELU's
    derivative at `aux` to c. cuBLASLt's GELU_AUX(_BIAS) and DGELU epilogues
    on CUDA, the same pass over the rows on the CPU.

    `bias_grad` (with `gelu_tanh_grad` only; exec-fuse-gemm-activation's
    `bias-grad`): n elements the GEMM writes, apart from its other operands:
    the sums of c's m rows (of the values it writes to c, rounded to c's
    type or not), i.e. the gradient of the bias the forward GEMM added
    before GELU. cuBLASLt's DGELU_BGRAD on CUDA; on the CPU a blockwise
    pass over c after the BLAS call.

    `addend` (exec-fuse-gemm-residual; one packed product, batch 1, no
    activation): m x n packed elements of c's type, in storage apart from
    c's, that the GEMM adds as it writes c: c = (product + bias) + addend,
    the residual stream's add after a projection. cuBLASLt's C operand with
    beta = 1 on CUDA (one rounding); on the CPU the same pass as the bias,
    rounding after each add as the separate kernels would.

    Strided operands (exec-fuse-gemm-layouts): a stored matrix's rows are
    `lda` / `ldb` / `ldc` elements apart (0: packed, as many as its columns),
    and the batch may be two-level: product i is (i / inner_batch,
    i % inner_batch), its matrix at outer index x stride + inner index x
    inner_stride. So a GEMM reads attention heads straight out of a
    [batch, tokens, heads, head dim] buffer and writes them back into one.
  }];
  let arguments = (ins Exec_Buffer:$a, Exec_Buffer:$b, Exec_Buffer:$c,
      Optional<Exec_Buffer>:$bias, Optional<Exec_Buffer>:$aux,
      Optional<Exec_Buffer>:$bias_grad, Optional<Exec_Buffer>:$addend,
      Variadic<Exec_Timepoint>:$awaits, UnitAttr:$transpose_a,
      UnitAttr:$transpose_b, I64Attr:$m, I64Attr:$n, I64Attr:$k,
      I64Attr:$batch, I64Attr:$stride_a, I64Attr:$stride_b,
      I64Attr:$stride_c, DefaultValuedAttr<I64Attr, "0">:$lda,
      DefaultValuedAttr<I64Attr, "0">:$ldb,
      DefaultValuedAttr<I64Attr, "0">:$ldc,
      DefaultValuedAttr<I64Attr, "1">:$inner_batch,
      DefaultValuedAttr<I64Attr, "0">:$inner_stride_a,
      DefaultValuedAttr<I64Attr, "0">:$inner_stride_b,
      DefaultValuedAttr<I64Attr, "0">:$inner_stride_c,
      DefaultValuedAttr<Exec_GemmActivation, "::mlir::tg::exec::GemmActivation::none">:$activation,
      DefaultValuedAttr<I64Attr, "0">:$stream);
  let assemblyFormat = [{
    `(` $a `,` $b `)` `->` $c (`bias` `(` $bias^ `:` type($bias) `)`)?
    (`aux` `(` $aux^ `:` type($aux) `)`)? (`activation` $activation^)?
    (`bias_grad` `(` $bias_grad^ `:` type($bias_grad) `)`)?
    (`addend` `(` $addend^ `:` type($addend) `)`)?
    (`await` `(` $awaits^ `)`)? (`on` $stream^)?
    attr-dict `:` type($a) `,` type($b) `->` type($c)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Operand 0 (a), 1 (b) or 2 (c) as stored: rows x columns, the
    /// distance between its rows, and its outer and inner batch strides.
    struct Operand {
      int64_t rows, cols, ld, stride, innerStride;
    };
    Operand getOperandLayout(unsigned operand);
    /// The buffer of operand 0 (a), 1 (b) or 2 (c).
    Value getOperandBuffer(unsigned operand) {
      return operand == 0 ? getA() : operand == 1 ? getB() : getC();
    }
    /// Operand 0 (a), 1 (b) or 2 (c) becomes `buffer`, its rows `ld` apart
    /// and its outer and inner batches `stride` and `innerStride` apart.
    void setOperand(unsigned operand, Value buffer, int64_t ld,
                    int64_t stride, int64_t innerStride);
  }];
}

def Exec_AttentionOp : Exec_CommandOp<"attention", [AttrSizedOperandSegments]> {
  let summary = "Flash attention or its gradient by the runtime's kernels (CUDA)";
  let description = [{
    What tg.flash_attention computes (inputs query, key, value; outputs
    result, logsumexp) or, with `gradient`, tg.flash_attention_grad (inputs
    query, key, value, result, logsumexp, result_grad; outputs delta,
    query_grad, key_grad, value_grad), by the CUDA backend's own flash
    attention kernels: bf16 tensors [batch, heads, rows, head_dim] (head dim
    64 or 128), logsumexp and delta f32 [batch, query_heads, query_len]
    (delta is scratch: rowsum(dO * O), which the gradient writes, then
    reads). `strides` lists the batch, head and row strides (elements) of
    each bf16 operand in operand order, so a [B, T, H, D] buffer is read as
    [B, H, T, D] at strides T*H*D, D and H*D. With `rope_frequencies` (the
    head_dim / 2 frequencies of a rotary position embedding: pair
    (i, i + D/2) of position t turns by t * f_i), query and key are given
    before the rotation, which the kernels apply (and the query and key
    gradients are rotated back): tg.flash_attention's `rope_*`. With
    `cudnn`, the runtime computes it by cuDNN's fused attention where it has
    cuDNN and cuDNN takes the problem (its own kernels otherwise): never
    with `rope_frequencies`.
  }];
  let arguments = (ins Variadic<Exec_Buffer>:$inputs,
      Variadic<Exec_Buffer>:$outputs, Variadic<Exec_Timepoint>:$awaits,
      UnitAttr:$gradient, I64Attr:$batch, I64Attr:$query_heads,
      I64Attr:$key_heads, I64Attr:$query_len, I64Attr:$key_len,
      I64Attr:$head_dim, F64Attr:$scale, BoolAttr:$causal, I64Attr:$window,
      DenseI64ArrayAttr:$strides, OptionalAttr<DenseF64ArrayAttr>:$rope_frequencies,
      UnitAttr:$cudnn, DefaultValuedAttr<I64Attr, "0">:$stream);
  let assemblyFormat = [{
    `(` $inputs `)` `->` `(` $outputs `)` (`await` `(` $awaits^ `)`)?
    (`on` $stream^)? attr-dict `:` functional-type($inputs, $outputs)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Operand i of inputs then outputs (the artifact's order).
    Value getAttentionOperand(unsigned i) {
      return i < getInputs().size() ? getInputs()[i]
                                    : getOutputs()[i - getInputs().size()];
    }
    unsigned getNumAttentionOperands() {
      return getInputs().size() + getOutputs().size();
    }
    /// Whether operand i is a strided bf16 tensor (else f32 row statistics).
    bool isTensorOperand(unsigned i) { return i != 4 && i != 6; }
    /// Whether tensor operand i has the queries' heads and rows.
    bool isQuerySide(unsigned i) { return i == 0 || i == 3 || i == 5 || i == 7; }
    /// Tensor operand i as [batch, heads, rows, head dim].
    SmallVector<int64_t, 4> getTensorShape(unsigned i);
    /// Where operand i's batch, head and row strides start in `strides`
    /// (3 x the bf16 operands before it); for i past the last operand,
    /// how many strides there are.
    unsigned getStridesStart(unsigned i);
  }];
}

def Exec_CopyOp : Exec_CommandOp<"copy"> {
  let summary = "Copy the bytes of one buffer to another of the same size";
  let arguments = (ins Exec_Buffer:$source, Exec_Buffer:$target,
      Variadic<Exec_Timepoint>:$awaits,
      DefaultValuedAttr<I64Attr, "0">:$stream);
  let assemblyFormat = [{
    $source `->` $target (`await` `(` $awaits^ `)`)? (`on` $stream^)?
    attr-dict `:` type($source) `->` type($target)
  }];
  let hasVerifier = 1;
}

/// A collective over one named axis of the program's mesh.
class Exec_CollectiveOp<string mnemonic, string what>
    : Exec_CommandOp<mnemonic> {
  let summary = what # " over a mesh axis";
  let hasVerifier = 1;
}

def Exec_AllReduceOp : Exec_CollectiveOp<"all_reduce",
    "Every rank gets the reduction of all ranks' buffers"> {
  let arguments = (ins Exec_Buffer:$source, Exec_Buffer:$target,
      StrAttr:$axis, Exec_Reduction:$reduction,
      Variadic<Exec_Timepoint>:$awaits,
      DefaultValuedAttr<I64Attr, "0">:$stream);
  let assemblyFormat = [{
    $reduction $source `->` $target `over` $axis (`await` `(` $awaits^ `)`)?
    (`on` $stream^)? attr-dict `:` type($source) `->` type($target)
  }];
}

def Exec_ReduceScatterOp : Exec_CollectiveOp<"reduce_scatter",
    "Rank i gets block i of the reduction (dim 0 split by the axis size)"> {
  let arguments = (ins Exec_Buffer:$source, Exec_Buffer:$target,
      StrAttr:$axis, Exec_Reduction:$reduction,
      Variadic<Exec_Timepoint>:$awaits,
      DefaultValuedAttr<I64Attr, "0">:$stream);
  let assemblyFormat = [{
    $reduction $source `->` $target `over` $axis (`await` `(` $awaits^ `)`)?
    (`on` $stream^)? attr-dict `:` type($source) `->` type($target)
  }];
}

def Exec_AllGatherOp : Exec_CollectiveOp<"all_gather",
    "Every rank gets all ranks' buffers, concatenated along dim 0"> {
  let arguments = (ins Exec_Buffer:$source, Exec_Buffer:$target,
      StrAttr:$axis, Variadic<Exec_Timepoint>:$awaits,
      DefaultValuedAttr<I64Attr, "0">:$stream);
  let assemblyFormat = [{
    $source `->` $target `over` $axis (`await` `(` $awaits^ `)`)?
    (`on` $stream^)? attr-dict `:` type($source) `->` type($target)
  }];
}

def Exec_SendOp : Exec_CollectiveOp<"send",
    "Send a buffer to the rank at index `peer` along the axis"> {
  let arguments = (ins Exec_Buffer:$source, StrAttr:$axis, I64Attr:$peer,
      Variadic<Exec_Timepoint>:$awaits,
      DefaultValuedAttr<I64Attr, "0">:$stream);
  let assemblyFormat = [{
    $source `to` $peer `over` $axis (`await` `(` $awaits^ `)`)?
    (`on` $stream^)? attr-dict `:` type($source)
  }];
}

def Exec_RecvOp : Exec_CollectiveOp<"recv",
    "Receive a buffer from the rank at index `peer` along the axis"> {
  let arguments = (ins Exec_Buffer:$target, StrAttr:$axis, I64Attr:$peer,
      Variadic<Exec_Timepoint>:$awaits,
      DefaultValuedAttr<I64Attr, "0">:$stream);
  let assemblyFormat = [{
    $target `from` $peer `over` $axis (`await` `(` $awaits^ `)`)?
    (`on` $stream^)? attr-dict `:` type($target)
  }];
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

def Exec_DispatchRegionOp : Exec_Op<"dispatch_region",
    [SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "Ops on tensors that one generated kernel will compute";
  let description = [{
    Formed on tensors before bufferization; values from above are the
    kernel's inputs, the yielded values its outputs. tg-lower-to-exec
    outlines each region into a kernel function.
  }];
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "(`->` `(` type($results)^ `)`)? attr-dict-with-keyword $body";
  let hasVerifier = 1;
}

def Exec_YieldOp : Exec_Op<"yield", [Pure, Terminator,
    HasParent<"DispatchRegionOp">, ReturnLike]> {
  let summary = "The values a dispatch region produces";
  let arguments = (ins Variadic<AnyRankedTensor>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
  let builders = [OpBuilder<(ins), [{ /* empty */ }]>];
}

def Exec_BinaryOp : Exec_Op<"binary", [Symbol]> {
  let summary = "Compiled kernels of a program, serialized for the target";
  let description = [{
    `kernels[i]` (the name dispatches use) takes `operand_counts[i]` buffers
    and is entered at `symbols[i]` in the image. For `elf`, `image` is a host
    shared object whose symbols have the C type void(void **buffers);
    `target_cpu` is the CPU it was tuned for.

    For `ptx`, `image` is PTX text for the chip `target_cpu` (sm_90a) and a
    kernel is a sequence of GPU launches, in order on one stream: kernel i
    runs launches [sum(launch_counts[0..i)), +launch_counts[i]), each the
    entry `launch_symbols[j]` on a 1-D grid of `launch_grid[j]` blocks of
    `launch_block[j]` threads with `launch_shared_bytes[j]` bytes of dynamic
    shared memory, every launch taking all the kernel's buffers as pointers.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, Exec_BinaryFormat:$format,
      StrArrayAttr:$kernels, StrArrayAttr:$symbols,
      DenseI64ArrayAttr:$operand_counts,
      StrAttr:$target_cpu, StrAttr:$image,
      DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$launch_counts,
      DefaultValuedAttr<StrArrayAttr, "{}">:$launch_symbols,
      DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$launch_grid,
      DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$launch_block,
      DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$launch_shared_bytes);
  let assemblyFormat = "$sym_name $format attr-dict";
  let hasVerifier = 1;
}

#endif // TG_EXEC_OPS_TD
