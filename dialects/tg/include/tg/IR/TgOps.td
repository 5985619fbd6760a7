#ifndef TG_OPS_TD
#define TG_OPS_TD

include "tg/IR/TgDialect.td"
include "tg/IR/TgInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

def Tg_Float : AnyTypeOf<[F16, BF16, F32, F64]>;
def Tg_Index : AnyTypeOf<[I32, I64]>;
// Every tg tensor has a static shape with every dimension >= 1: a `?` or a
// 0 dimension has no meaning in a training graph (and breaks autodiff).
def Tg_StaticNonEmptyShapePred : CPred<
    "::llvm::all_of(::llvm::cast<::mlir::ShapedType>($_self).getShape(), " #
    "[](int64_t d) { return d >= 1; })">;
class Tg_TensorOf<list<Type> allowedTypes>
    : RankedTensorOf<allowedTypes, [Tg_StaticNonEmptyShapePred],
                     "statically shaped tensor with every dimension >= 1 " #
                     "(no '?' or 0 dimensions)">;
def Tg_FloatTensor : Tg_TensorOf<[F16, BF16, F32, F64]>;
def Tg_IndexTensor : Tg_TensorOf<[I32, I64]>;
def Tg_AnyTensor : Tg_TensorOf<[F16, BF16, F32, F64, I32, I64]>;
def Tg_Scalar : 0DTensorOf<[F16, BF16, F32, F64]>;

def Differentiable : DeclareOpInterfaceMethods<Tg_DifferentiableOpInterface>;

class Tg_InferredOp<string mnemonic, list<Trait> traits = []>
    : Tg_Op<mnemonic, !listconcat(traits,
        [Pure, InferTypeOpAdaptor])>;

//===----------------------------------------------------------------------===//
// Constants, casts and views
//===----------------------------------------------------------------------===//

def Tg_ConstantOp : Tg_Op<"constant", [Pure, ConstantLike, Differentiable,
    AllTypesMatch<["value", "result"]>]> {
  let summary = "A constant tensor";
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Tg_AnyTensor:$result);
  let assemblyFormat = "$value attr-dict";
  let hasFolder = 1;
}

def Tg_CastOp : Tg_Op<"cast", [Pure, SameOperandsAndResultShape, Differentiable,
    Tg_Elementwise]> {
  let summary = "Converts the element type (float <-> float, int -> float)";
  let arguments = (ins Tg_AnyTensor:$input);
  let results = (outs Tg_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Tg_ReshapeOp : Tg_Op<"reshape", [Pure, Differentiable]> {
  let summary = "Reinterprets a tensor with a new static shape (row-major)";
  let arguments = (ins Tg_AnyTensor:$input);
  let results = (outs Tg_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Tg_TransposeOp : Tg_InferredOp<"transpose", [Differentiable, Tg_HasKernelBody]> {
  let summary = "Permutes dimensions: result dim i is input dim permutation[i]";
  let arguments = (ins Tg_AnyTensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs Tg_AnyTensor:$result);
  let assemblyFormat = "$input $permutation attr-dict `:` type($input) `->` type($result)";
}

def Tg_BroadcastOp : Tg_Op<"broadcast", [Pure, Differentiable, Tg_Elementwise]> {
  let summary = "Broadcasts to the result shape (numpy rules, trailing alignment)";
  let arguments = (ins Tg_AnyTensor:$input);
  let results = (outs Tg_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Tg_SliceOp : Tg_InferredOp<"slice", [Differentiable, Tg_HasKernelBody]> {
  let summary = "A static slice: `sizes` elements from `offsets` in each dim";
  let arguments = (ins Tg_AnyTensor:$input, DenseI64ArrayAttr:$offsets,
                       DenseI64ArrayAttr:$sizes);
  let results = (outs Tg_AnyTensor:$result);
  let assemblyFormat = "$input `[` $offsets `]` `[` $sizes `]` attr-dict `:` type($input) `->` type($result)";
}

def Tg_PadOp : Tg_InferredOp<"pad", [Differentiable, Tg_HasKernelBody]> {
  let summary = "Zero padding: `low` and `high` elements around each dim";
  let arguments = (ins Tg_FloatTensor:$input, DenseI64ArrayAttr:$low,
                       DenseI64ArrayAttr:$high);
  let results = (outs Tg_FloatTensor:$result);
  let assemblyFormat = "$input `low` $low `high` $high attr-dict `:` type($input) `->` type($result)";
}

def Tg_ConcatOp : Tg_InferredOp<"concat", [Differentiable, Tg_HasKernelBody]> {
  let summary = "Concatenates along `axis`";
  let arguments = (ins Variadic<Tg_AnyTensor>:$inputs, I64Attr:$axis);
  let results = (outs Tg_AnyTensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` functional-type($inputs, $result)";
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class Tg_BinaryOp<string mnemonic, list<Trait> traits = []>
    : Tg_InferredOp<mnemonic, !listconcat(traits, [Tg_Elementwise])> {
  let summary = "Elementwise " # mnemonic # " with numpy broadcasting";
  let arguments = (ins Tg_FloatTensor:$lhs, Tg_FloatTensor:$rhs);
  let results = (outs Tg_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)";
}

def Tg_AddOp : Tg_BinaryOp<"add", [Differentiable]>;
def Tg_SubOp : Tg_BinaryOp<"sub", [Differentiable]>;
def Tg_MulOp : Tg_BinaryOp<"mul", [Differentiable]>;
def Tg_DivOp : Tg_BinaryOp<"div", [Differentiable]>;
// max, min and reduce_max have no gradient yet (they need a comparison mask);
// the optimizer uses them outside the differentiated region.
def Tg_MaxOp : Tg_BinaryOp<"max">;
def Tg_MinOp : Tg_BinaryOp<"min">;
def Tg_PowOp : Tg_BinaryOp<"pow", [Differentiable]>;

class Tg_UnaryOp<string mnemonic, string what> : Tg_Op<mnemonic,
    [Pure, SameOperandsAndResultType, Differentiable, Tg_Elementwise]> {
  let summary = "Elementwise " # what;
  let arguments = (ins Tg_FloatTensor:$input);
  let results = (outs Tg_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Tg_NegOp : Tg_UnaryOp<"neg", "negation">;
def Tg_ExpOp : Tg_UnaryOp<"exp", "exponential">;
def Tg_LogOp : Tg_UnaryOp<"log", "natural logarithm">;
def Tg_TanhOp : Tg_UnaryOp<"tanh", "hyperbolic tangent">;
def Tg_SqrtOp : Tg_UnaryOp<"sqrt", "square root">;
def Tg_RsqrtOp : Tg_UnaryOp<"rsqrt", "reciprocal square root">;
def Tg_CosOp : Tg_UnaryOp<"cos", "cosine">;
def Tg_SinOp : Tg_UnaryOp<"sin", "sine">;
def Tg_SiluOp : Tg_UnaryOp<"silu", "SiLU, x * sigmoid(x)">;

def Tg_GeluApproximation : I32EnumAttr<"GeluApproximation",
    "how GELU is evaluated", [
      I32EnumAttrCase<"none", 0>,  // exact: 0.5 x (1 + erf(x / sqrt 2))
      I32EnumAttrCase<"tanh", 1>,  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    ]> {
  let cppNamespace = "::mlir::tg";
}

def Tg_GeluOp : Tg_Op<"gelu", [Pure, SameOperandsAndResultType, Differentiable,
    Tg_Elementwise]> {
  let summary = "GELU, exact (erf) or with the tanh approximation";
  let arguments = (ins Tg_FloatTensor:$input, Tg_GeluApproximation:$approximate);
  let results = (outs Tg_FloatTensor:$result);
  let assemblyFormat = "$input $approximate attr-dict `:` type($input)";
}

def Tg_GeluGradOp : Tg_Op<"gelu_grad", [Pure, SameOperandsAndResultType,
    Tg_Elementwise]> {
  let summary = "d/dx GELU(x) * result_grad";
  let arguments = (ins Tg_FloatTensor:$input, Tg_FloatTensor:$result_grad,
                       Tg_GeluApproximation:$approximate);
  let results = (outs Tg_FloatTensor:$input_grad);
  let assemblyFormat = "$input `,` $result_grad $approximate attr-dict `:` type($input)";
}

def Tg_SiluGradOp : Tg_Op<"silu_grad", [Pure, SameOperandsAndResultType,
    Tg_Elementwise]> {
  let summary = "d/dx SiLU(x) * result_grad";
  let arguments = (ins Tg_FloatTensor:$input, Tg_FloatTensor:$result_grad);
  let results = (outs Tg_FloatTensor:$input_grad);
  let assemblyFormat = "$input `,` $result_grad attr-dict `:` type($input)";
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

class Tg_ReduceOp<string mnemonic, string what, list<Trait> traits = []>
    : Tg_InferredOp<mnemonic, !listconcat(traits, [Tg_HasKernelBody])> {
  let summary = what # " over `axes`; `keep_dims` keeps them with size 1";
  let arguments = (ins Tg_FloatTensor:$input, DenseI64ArrayAttr:$axes,
                       DefaultValuedAttr<BoolAttr, "false">:$keep_dims);
  let results = (outs Tg_FloatTensor:$result);
  let assemblyFormat = "$input $axes attr-dict `:` type($input) `->` type($result)";
  let extraClassDeclaration = [{
    /// The axes it reduces, each in [0, rank) (`axes` may count from the
    /// end: the verifier allows [-rank, rank)).
    llvm::SmallDenseSet<int64_t> getReducedAxes();
  }];
}

def Tg_ReduceSumOp : Tg_ReduceOp<"reduce_sum", "Sum", [Differentiable]>;
def Tg_ReduceMeanOp : Tg_ReduceOp<"reduce_mean", "Mean", [Differentiable]>;
def Tg_ReduceMaxOp : Tg_ReduceOp<"reduce_max", "Maximum">;

//===----------------------------------------------------------------------===//
// Transformer ops
//===----------------------------------------------------------------------===//

def Tg_EmbeddingOp : Tg_InferredOp<"embedding", [Differentiable, Tg_HasKernelBody]> {
  let summary = "Gathers rows of `table` [V, D] at `indices` [...] -> [..., D]";
  let description = [{
    With `offset` (a [1] index tensor), `table` holds rows
    [offset, offset + V) of a larger table (one rank's share of a
    vocabulary-parallel embedding): index i reads row i - offset, and an
    index outside that range gives a row of zeros.
  }];
  let arguments = (ins Tg_FloatTensor:$table, Tg_IndexTensor:$indices,
                       Optional<Tg_IndexTensor>:$offset);
  let results = (outs Tg_FloatTensor:$result);
  let assemblyFormat = "$table `[` $indices `]` (`offset` $offset^ `:` type($offset))? attr-dict `:` type($table) `,` type($indices) `->` type($result)";
}

def Tg_EmbeddingGradOp : Tg_Op<"embedding_grad", [Pure, Tg_HasKernelBody]> {
  let summary = "Scatter-adds `result_grad` [..., D] rows into a zero [V, D] table";
  let description = [{
    With `offset`, as tg.embedding: index i adds into row i - offset, and
    indices outside [offset, offset + V) add nothing.
  }];
  let arguments = (ins Tg_IndexTensor:$indices, Tg_FloatTensor:$result_grad,
                       Optional<Tg_IndexTensor>:$offset);
  let results = (outs Tg_FloatTensor:$table_grad);
  let assemblyFormat = "$indices `,` $result_grad (`offset` $offset^ `:` type($offset))? attr-dict `:` type($indices) `,` type($result_grad) `->` type($table_grad)";
  let hasVerifier = 1;
}

def Tg_MatmulOp : Tg_InferredOp<"matmul", [Differentiable, Tg_HasKernelBody,
    Tg_FlopCount]> {
  let summary = "Batched matrix product with optional transposes";
  let description = [{
    `lhs` is [batch..., M, K] ([batch..., K, M] with `transpose_lhs`); `rhs` is
    [batch..., K, N] ([batch..., N, K] with `transpose_rhs`) or a rank-2 matrix
    shared by every batch. The result is [batch..., M, N].
  }];
  let arguments = (ins Tg_FloatTensor:$lhs, Tg_FloatTensor:$rhs,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_lhs,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_rhs);
  let results = (outs Tg_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)";
}

def Tg_LayerNormOp : Tg_InferredOp<"layer_norm", [Differentiable, Tg_HasKernelBody]> {
  let summary = "Layer norm over the last dim, with weight and bias";
  let arguments = (ins Tg_FloatTensor:$input, Tg_FloatTensor:$weight,
                       Tg_FloatTensor:$bias, F64Attr:$epsilon);
  let results = (outs Tg_FloatTensor:$result);
  let assemblyFormat = "$input `,` $weight `,` $bias attr-dict `:` type($input) `,` type($weight) `,` type($bias) `->` type($result)";
}

def Tg_LayerNormGradOp : Tg_InferredOp<"layer_norm_grad", [Tg_HasKernelBody]> {
  let summary = "Gradients of layer_norm for input, weight and bias";
  let arguments = (ins Tg_FloatTensor:$input, Tg_FloatTensor:$weight,
                       Tg_FloatTensor:$result_grad, F64Attr:$epsilon);
  let results = (outs Tg_FloatTensor:$input_grad, Tg_FloatTensor:$weight_grad,
                      Tg_FloatTensor:$bias_grad);
  let assemblyFormat = "$input `,` $weight `,` $result_grad attr-dict `:` type($input) `,` type($weight) `,` type($result_grad) `->` type(results)";
}

def Tg_RmsNormOp : Tg_InferredOp<"rms_norm", [Differentiable, Tg_HasKernelBody]> {
  let summary = "RMS norm over the last dim, with weight";
  let arguments = (ins Tg_FloatTensor:$input, Tg_FloatTensor:$weight, F64Attr:$epsilon);
  let results = (outs Tg_FloatTensor:$result);
  let assemblyFormat = "$input `,` $weight attr-dict `:` type($input) `,` type($weight) `->` type($result)";
}

def Tg_RmsNormGradOp : Tg_InferredOp<"rms_norm_grad", [Tg_HasKernelBody]> {
  let summary = "Gradients of rms_norm for input and weight";
  let arguments = (ins Tg_FloatTensor:$input, Tg_FloatTensor:$weight,
                       Tg_FloatTensor:$result_grad, F64Attr:$epsilon);
  let results = (outs Tg_FloatTensor:$input_grad, Tg_FloatTensor:$weight_grad);
  let assemblyFormat = "$input `,` $weight `,` $result_grad attr-dict `:` type($input) `,` type($weight) `,` type($result_grad) `->` type(results)";
}

def Tg_SoftmaxOp : Tg_Op<"softmax", [Pure, SameOperandsAndResultType, Differentiable,
    Tg_HasKernelBody]> {
  let summary = "Softmax over the last dim";
  let arguments = (ins Tg_FloatTensor:$input);
  let results = (outs Tg_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Tg_SoftmaxGradOp : Tg_Op<"softmax_grad", [Pure, SameOperandsAndResultType,
    Tg_HasKernelBody]> {
  let summary = "Input gradient of softmax given its result and result gradient";
  let arguments = (ins Tg_FloatTensor:$result, Tg_FloatTensor:$result_grad);
  let results = (outs Tg_FloatTensor:$input_grad);
  let assemblyFormat = "$result `,` $result_grad attr-dict `:` type($result)";
}

def Tg_AttentionOp : Tg_InferredOp<"attention", [Differentiable, Tg_FlopCount]> {
  let summary = "Scaled dot-product self-attention with grouped-query heads";
  let description = [{
    `query` is [B, Hq, T, D]; `key` and `value` are [B, Hkv, S, D] with Hq a
    multiple of Hkv (query head h reads key/value head h / (Hq / Hkv)).
    Computes softmax(scale * Q K^T + causal mask) V; `causal` masks key
    positions after the query position. A `window` W > 0 (causal only:
    Mistral's sliding window) also masks those W or more positions before
    it: query t sees keys t - W < s <= t.
  }];
  let arguments = (ins Tg_FloatTensor:$query, Tg_FloatTensor:$key,
                       Tg_FloatTensor:$value, F64Attr:$scale,
                       DefaultValuedAttr<BoolAttr, "true">:$causal,
                       DefaultValuedAttr<I64Attr, "0">:$window);
  let results = (outs Tg_FloatTensor:$result);
  let assemblyFormat = "$query `,` $key `,` $value attr-dict `:` type($query) `,` type($key) `,` type($value) `->` type($result)";
}

def Tg_AttentionGradOp : Tg_InferredOp<"attention_grad", [Tg_FlopCount]> {
  let summary = "Gradients of attention for query, key and value";
  let arguments = (ins Tg_FloatTensor:$query, Tg_FloatTensor:$key,
                       Tg_FloatTensor:$value, Tg_FloatTensor:$result_grad,
                       F64Attr:$scale, DefaultValuedAttr<BoolAttr, "true">:$causal,
                       DefaultValuedAttr<I64Attr, "0">:$window);
  let results = (outs Tg_FloatTensor:$query_grad, Tg_FloatTensor:$key_grad,
                      Tg_FloatTensor:$value_grad);
  let assemblyFormat = "$query `,` $key `,` $value `,` $result_grad attr-dict `:` type($query) `,` type($key) `,` type($value) `,` type($result_grad) `->` type(results)";
}

/// A flash op's rotary position embedding of its queries and keys, if any:
/// tg.rope's attributes with a `rope_` prefix.
defvar Tg_FlashRopeArguments = (ins OptionalAttr<F64Attr>:$rope_theta,
    OptionalAttr<F64Attr>:$rope_scaling_factor,
    OptionalAttr<F64Attr>:$rope_low_freq_factor,
    OptionalAttr<F64Attr>:$rope_high_freq_factor,
    OptionalAttr<F64Attr>:$rope_original_max_positions);
defvar Tg_FlashRopeDeclarations = [{
    /// The rotation it applies to its queries and keys, if any.
    std::optional<RopeFrequencies> getRope() {
      if (!getRopeThetaAttr())
        return std::nullopt;
      return RopeFrequencies::of(getRopeThetaAttr(), getRopeScalingFactorAttr(),
                                 getRopeLowFreqFactorAttr(),
                                 getRopeHighFreqFactorAttr(),
                                 getRopeOriginalMaxPositionsAttr());
    }
    /// Makes it apply `rope` to its queries and keys.
    void setRope(const RopeFrequencies &rope) {
      Builder b(getContext());
      RopeFrequencies::Attributes a = rope.attributes(b);
      setRopeThetaAttr(a.theta);
      setRopeScalingFactorAttr(a.scalingFactor);
      setRopeLowFreqFactorAttr(a.lowFreqFactor);
      setRopeHighFreqFactorAttr(a.highFreqFactor);
      setRopeOriginalMaxPositionsAttr(a.originalMaxPositions);
    }
}];

def Tg_FlashAttentionOp
    : Tg_InferredOp<"flash_attention", [Tg_HasKernelBody, Tg_FlopCount]> {
  let summary = "Attention computed flash style, with its log-sum-exp";
  let description = [{
    What `tg.attention` computes, by one kernel that never holds the
    [T, S] scores: per query row, an online softmax over the visible keys
    only (the causal and windowed ones outside are skipped, not masked).
    `logsumexp` [B, Hq, T] is log(sum_s exp(scale * q . k_s)) over the
    visible keys, what `tg.flash_attention_grad` needs to recompute the
    probabilities; f32 (f64 for f64 queries). Made by tg-fuse-attention.

    With `rope_theta` (and tg.rope's scalings as `rope_*`), `query` and
    `key` are given before their rotary position embedding, which the op
    applies itself: what it computes is this op over tg.rope's results.

    With `cudnn` (tg-fuse-attention's cudnn option, --cuda-attention=cudnn),
    the CUDA target computes it by cuDNN's fused attention, not by the
    runtime's kernels; what it computes is the same. cuDNN's graph has no
    rotation: not with `rope_theta`.
  }];
  let arguments = !con((ins Tg_FloatTensor:$query, Tg_FloatTensor:$key,
                            Tg_FloatTensor:$value, F64Attr:$scale,
                            DefaultValuedAttr<BoolAttr, "true">:$causal,
                            DefaultValuedAttr<I64Attr, "0">:$window,
                            UnitAttr:$cudnn),
                       Tg_FlashRopeArguments);
  let results = (outs Tg_FloatTensor:$result, Tg_FloatTensor:$logsumexp);
  let extraClassDeclaration = Tg_FlashRopeDeclarations;
  let assemblyFormat = "$query `,` $key `,` $value attr-dict `:` type($query) `,` type($key) `,` type($value) `->` type(results)";
}

def Tg_FlashAttentionGradOp
    : Tg_InferredOp<"flash_attention_grad", [Tg_HasKernelBody, Tg_FlopCount]> {
  let summary = "Gradients of flash_attention from its result and log-sum-exp";
  let description = [{
    What `tg.attention_grad` computes, from the forward's `result` and
    `logsumexp` as well: the probabilities are recomputed tile by tile
    (p = exp(scale * q . k - logsumexp)), never stored, and
    dS = P (dP - rowsum(dO * O)). Query gradients go by query row, key and
    value gradients by key row (summing the query heads of a group), over
    the visible pairs only. With `result_tokens`, `result` is given as
    [B, T, Hq, D] (the forward's result transposed for the output
    projection, which the step keeps anyway, so the result itself need not
    be kept): only its rows are read, and a row is the same D values.
    With `rope_theta`, `query` and `key` are given before their rotary
    position embedding (as to tg.flash_attention), and `query_grad` and
    `key_grad` are the gradients of those: rotated back. `cudnn` as on
    tg.flash_attention.
  }];
  let arguments = !con((ins Tg_FloatTensor:$query, Tg_FloatTensor:$key,
                            Tg_FloatTensor:$value, Tg_FloatTensor:$result,
                            Tg_FloatTensor:$logsumexp,
                            Tg_FloatTensor:$result_grad, F64Attr:$scale,
                            DefaultValuedAttr<BoolAttr, "true">:$causal,
                            DefaultValuedAttr<I64Attr, "0">:$window,
                            UnitAttr:$result_tokens, UnitAttr:$cudnn),
                       Tg_FlashRopeArguments);
  let results = (outs Tg_FloatTensor:$query_grad, Tg_FloatTensor:$key_grad,
                      Tg_FloatTensor:$value_grad);
  let assemblyFormat = "$query `,` $key `,` $value `,` $result `,` $logsumexp `,` $result_grad attr-dict `:` type($query) `,` type($key) `,` type($value) `,` type($result) `,` type($logsumexp) `,` type($result_grad) `->` type(results)";
  let extraClassDeclaration = Tg_FlashRopeDeclarations;
}

def Tg_RopeOp : Tg_Op<"rope", [Pure, SameOperandsAndResultType, Differentiable,
    Tg_HasKernelBody]> {
  let summary = "Rotary position embedding, Hugging Face rotate_half convention";
  let description = [{
    `input` is [B, H, T, D] with D even; position t rotates pair (i, i + D/2)
    by t * f_i, f_i = theta^(-2i/D). `inverse` rotates by the negated angle,
    which is the transpose of the rotation and so the op's own
    vector-Jacobian product.

    Hugging Face's frequency scalings (`rope_scaling`): with
    `scaling_factor` alone ("linear"), f_i / scaling_factor; with
    `low_freq_factor`, `high_freq_factor` and `original_max_positions` too
    ("llama3", `_compute_llama3_parameters`): for the wavelength
    w = 2 pi / f_i, f_i where w < original_max_positions / high_freq_factor,
    f_i / scaling_factor where w > original_max_positions / low_freq_factor,
    and in between (1 - s) f_i / scaling_factor + s f_i with
    s = (original_max_positions / w - low_freq_factor) /
    (high_freq_factor - low_freq_factor).
  }];
  let arguments = (ins Tg_FloatTensor:$input, F64Attr:$theta,
                       UnitAttr:$inverse,
                       OptionalAttr<F64Attr>:$scaling_factor,
                       OptionalAttr<F64Attr>:$low_freq_factor,
                       OptionalAttr<F64Attr>:$high_freq_factor,
                       OptionalAttr<F64Attr>:$original_max_positions);
  let results = (outs Tg_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Its rotation frequencies, scaling included.
    RopeFrequencies getFrequencies() {
      return RopeFrequencies::of(getThetaAttr(), getScalingFactorAttr(),
                                 getLowFreqFactorAttr(), getHighFreqFactorAttr(),
                                 getOriginalMaxPositionsAttr());
    }
  }];
}

def Tg_CrossEntropyOp : Tg_InferredOp<"cross_entropy", [Differentiable, Tg_HasKernelBody]> {
  let summary = "Mean token cross-entropy of `logits` [..., V] against `targets` [...]";
  let arguments = (ins Tg_FloatTensor:$logits, Tg_IndexTensor:$targets);
  let results = (outs Tg_Scalar:$loss);
  let assemblyFormat = "$logits `,` $targets attr-dict `:` type($logits) `,` type($targets) `->` type($loss)";
}

def Tg_CrossEntropyGradOp : Tg_Op<"cross_entropy_grad", [Pure, Tg_HasKernelBody,
    AllTypesMatch<["logits", "logits_grad"]>]> {
  let summary = "Gradient of cross_entropy for logits, scaled by `loss_grad`";
  let arguments = (ins Tg_FloatTensor:$logits, Tg_IndexTensor:$targets,
                       Tg_Scalar:$loss_grad);
  let results = (outs Tg_FloatTensor:$logits_grad);
  let assemblyFormat = "$logits `,` $targets `,` $loss_grad attr-dict `:` type($logits) `,` type($targets) `,` type($loss_grad)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

def Tg_CollectiveReduction : I32EnumAttr<"CollectiveReduction",
    "how a collective combines the ranks' values", [
      I32EnumAttrCase<"sum", 0>, I32EnumAttrCase<"avg", 1>,
      I32EnumAttrCase<"max", 2>, I32EnumAttrCase<"min", 3>,
    ]> {
  let cppNamespace = "::mlir::tg";
}

// Its VJP (sum only) is the identity: in a partitioned program the loss is
// the same on every rank of the axis, so the gradient of each rank's
// contribution is the result's gradient (Megatron's "g"). Data parallelism
// inserts it after autodiff; the other reductions have no VJP.
def Tg_AllReduceOp : Tg_Op<"all_reduce", [Pure, SameOperandsAndResultType,
    DeclareOpInterfaceMethods<Tg_DifferentiableOpInterface, ["hasVjp"]>]> {
  let summary = "Every rank along a mesh axis gets the reduction of all "
                "their tensors";
  let description = [{
    The ranks that share every mesh coordinate but the one along `axis`
    each contribute `input`; each gets the element-wise `reduction` (sum,
    avg, max, min) of all contributions. `axis` names an axis of the
    module's mesh (`tg.mesh_axes`); a module without a mesh runs on one
    device, where the op is the identity.

    ```mlir
    %g = tg.all_reduce avg %grad over "data" : tensor<64x64xf32>
    ```
  }];
  let arguments = (ins Tg_FloatTensor:$input,
                       Tg_CollectiveReduction:$reduction, StrAttr:$axis);
  let results = (outs Tg_FloatTensor:$result);
  let assemblyFormat = "$reduction $input `over` $axis attr-dict `:` type($input)";
  let hasVerifier = 1;
}

// The rank keeps one block of the reduction. Its VJP (sum only) gathers the
// result's gradient: each rank's input reached every block's owner.
def Tg_ReduceScatterOp : Tg_Op<"reduce_scatter", [Pure,
    DeclareOpInterfaceMethods<Tg_DifferentiableOpInterface, ["hasVjp"]>]> {
  let summary = "Every rank along a mesh axis gets its block of the "
                "reduction of all their tensors";
  let description = [{
    The ranks that share every mesh coordinate but the one along `axis`
    each contribute `input`; dim 0 of the element-wise `reduction` is cut
    into as many blocks as the axis has ranks, and the rank at index i gets
    block i. Without a mesh (one device) it is the identity.

    ```mlir
    %g = tg.reduce_scatter avg %grad over "data" : tensor<64xf32> -> tensor<32xf32>
    ```
  }];
  let arguments = (ins Tg_FloatTensor:$input,
                       Tg_CollectiveReduction:$reduction, StrAttr:$axis);
  let results = (outs Tg_FloatTensor:$result);
  let assemblyFormat = "$reduction $input `over` $axis attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

// Its VJP sums the ranks' gradients of the whole result and keeps the
// rank's block (reduce_scatter sum): the gathered value feeds
// rank-dependent work, as Megatron's sequence-parallel all-gather does.
def Tg_AllGatherOp : Tg_Op<"all_gather", [Pure, Differentiable]> {
  let summary = "Every rank along a mesh axis gets all their tensors, "
                "concatenated along dim 0";
  let description = [{
    The ranks that share every mesh coordinate but the one along `axis`
    each contribute `input`; each gets the contributions concatenated along
    dim 0 in the order of their indices on the axis.

    ```mlir
    %p = tg.all_gather %share over "data" : tensor<32xf32> -> tensor<64xf32>
    ```
  }];
  let arguments = (ins Tg_FloatTensor:$input, StrAttr:$axis);
  let results = (outs Tg_FloatTensor:$result);
  let assemblyFormat = "$input `over` $axis attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Partitioned programs (tg-partition-tensor-parallel)
//===----------------------------------------------------------------------===//

def Tg_GradAllReduceOp : Tg_Op<"grad_all_reduce", [Pure,
    SameOperandsAndResultType, Differentiable]> {
  let summary = "Identity whose gradient is all-reduced (sum) over a mesh axis";
  let description = [{
    Marks a value every rank of `axis` holds whole (replicated) where
    rank-dependent computation starts from it, as the input of a
    column-parallel matmul (Megatron's "f"): each rank's gradient of it is
    only its share, and the VJP sums the shares. After autodiff it is the
    identity (tg-form-dispatch-regions drops it).

    ```mlir
    %x_tp = tg.grad_all_reduce %x over "tensor" : tensor<2x8x64xf32>
    ```
  }];
  let arguments = (ins Tg_FloatTensor:$input, StrAttr:$axis);
  let results = (outs Tg_FloatTensor:$result);
  let assemblyFormat = "$input `over` $axis attr-dict `:` type($input)";
}

def Tg_StopGradientOp : Tg_Op<"stop_gradient", [Pure,
    SameOperandsAndResultType, Differentiable]> {
  let summary = "Identity through which no gradient flows";
  let description = [{
    For values whose gradient cancels out of the loss, such as the maximum
    a softmax subtracts for stability. After autodiff it is the identity
    (tg-form-dispatch-regions drops it).
  }];
  let arguments = (ins Tg_FloatTensor:$input);
  let results = (outs Tg_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Tg_ShardSliceOp : Tg_Op<"shard_slice", [Pure, Differentiable,
    Tg_HasKernelBody]> {
  let summary = "The rank's block of a tensor that every rank holds whole";
  let description = [{
    `input`'s dim `dim` is cut into blocks of the result's size; the rank
    reads block `index[0] / replicas`, where `index` ([1] i64) is its index
    along a mesh axis (a slice of the input "mesh_coordinate"). With
    `replicas` > 1 that many consecutive ranks read the same block, as the
    tensor-parallel ranks sharing one key/value head of a grouped-query
    model do. The VJP puts the gradient back in place (tg.shard_unslice).

    ```mlir
    %k = tg.shard_slice %k_all[%tp_index] {dim = 1, replicas = 2}
        : tensor<2x2x8x16xf32>, tensor<1xi64> -> tensor<2x1x8x16xf32>
    ```
  }];
  let arguments = (ins Tg_AnyTensor:$input, Tg_IndexTensor:$index,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$dim,
                       DefaultValuedAttr<ConfinedAttr<I64Attr, [IntMinValue<1>]>, "1">:$replicas);
  let results = (outs Tg_AnyTensor:$result);
  let assemblyFormat = "$input `[` $index `]` attr-dict `:` type($input) `,` type($index) `->` type($result)";
  let hasVerifier = 1;
}

def Tg_ShardUnsliceOp : Tg_Op<"shard_unslice", [Pure, Tg_HasKernelBody]> {
  let summary = "Zeros with `input` at the rank's block (tg.shard_slice's VJP)";
  let arguments = (ins Tg_FloatTensor:$input, Tg_IndexTensor:$index,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$dim,
                       DefaultValuedAttr<ConfinedAttr<I64Attr, [IntMinValue<1>]>, "1">:$replicas);
  let results = (outs Tg_FloatTensor:$result);
  let assemblyFormat = "$input `[` $index `]` attr-dict `:` type($input) `,` type($index) `->` type($result)";
  let hasVerifier = 1;
}

def Tg_PickOp : Tg_Op<"pick", [Pure, Differentiable, Tg_HasKernelBody]> {
  let summary = "`input` [..., V] at `indices` [...] along the last dim -> [...]";
  let description = [{
    The target logit of a cross-entropy. With `offset` ([1] index tensor),
    `input` holds columns [offset, offset + V) (one rank's share of a
    vocabulary-parallel logit tensor): index i reads column i - offset and
    an index outside that range gives 0.
  }];
  let arguments = (ins Tg_FloatTensor:$input, Tg_IndexTensor:$indices,
                       Optional<Tg_IndexTensor>:$offset);
  let results = (outs Tg_FloatTensor:$result);
  let assemblyFormat = "$input `[` $indices `]` (`offset` $offset^ `:` type($offset))? attr-dict `:` type($input) `,` type($indices) `->` type($result)";
  let hasVerifier = 1;
}

def Tg_PickGradOp : Tg_Op<"pick_grad", [Pure, Tg_HasKernelBody]> {
  let summary = "Zeros [..., V] with `result_grad` [...] at `indices` (tg.pick's VJP)";
  let arguments = (ins Tg_IndexTensor:$indices, Tg_FloatTensor:$result_grad,
                       Optional<Tg_IndexTensor>:$offset);
  let results = (outs Tg_FloatTensor:$input_grad);
  let assemblyFormat = "$indices `,` $result_grad (`offset` $offset^ `:` type($offset))? attr-dict `:` type($indices) `,` type($result_grad) `->` type($input_grad)";
  let hasVerifier = 1;
}

// The micro-batch loop (tg.micro_batches) and its terminator.
include "tg/IR/TgMicroBatches.td"

#endif // TG_OPS_TD
