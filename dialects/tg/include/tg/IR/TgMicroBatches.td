//===- TgMicroBatches.td - the micro-batch loop of a training step -----*-===//
//
// Included from TgOps.td (after Tg_AnyTensor and friends).
//
//===----------------------------------------------------------------------===//

#ifndef TG_MICRO_BATCHES_TD
#define TG_MICRO_BATCHES_TD

def Tg_MicroBatchesOp : Tg_Op<"micro_batches", [IsolatedFromAbove,
    SingleBlock, RecursiveMemoryEffects, AttrSizedOperandSegments]> {
  let summary = "The mean of a computation over micro-batches of a batch";
  let description = [{
    Runs the body once per micro-batch `k` in `0 .. count-1`: the block
    arguments are, in order, slice `k` along dim 0 of each `sliced` operand
    (dim 0 divided by `count`), then the `shared` operands unchanged. Result
    `i` is the mean over micro-batches of the `i`-th yielded value: the
    yielded values summed in micro-batch order, then multiplied by
    `1 / count` (with `count = 1`, the yielded value itself). The body is
    isolated from above, so a forward and its backward can live inside it.

    ```mlir
    %loss, %g = tg.micro_batches 2 sliced(%tokens : tensor<4x8xi32>)
        shared(%w : tensor<16x8xf32>) {
    ^bb0(%tok: tensor<2x8xi32>, %w_in: tensor<16x8xf32>):
      ...
      tg.yield %l, %dw : tensor<f32>, tensor<16x8xf32>
    } -> tensor<f32>, tensor<16x8xf32>
    ```

    `tg-unroll-micro-batches` replaces it by one clone of the body per
    micro-batch on `tg.slice`s of the sliced operands.
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntMinValue<1>]>:$count,
                       Variadic<Tg_AnyTensor>:$sliced,
                       Variadic<Tg_AnyTensor>:$shared);
  let results = (outs Variadic<Tg_FloatTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $count (`sliced` `(` $sliced^ `:` type($sliced) `)`)?
    (`shared` `(` $shared^ `:` type($shared) `)`)? $body attr-dict
    (`->` type($results)^)?
  }];
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    /// The terminator of the body.
    YieldOp getYield();
  }];
}

def Tg_YieldOp : Tg_Op<"yield", [Pure, Terminator,
    HasParent<"MicroBatchesOp">]> {
  let summary = "Yields the values of one micro-batch";
  let arguments = (ins Variadic<Tg_AnyTensor>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

#endif // TG_MICRO_BATCHES_TD
