//===- Passes.td - TGC's passes, stage by stage ------------------------*-===//
//
// Every stage of tgc's pipeline is one of these passes (see Pipeline.h for
// how tgc strings them together, and docs/architecture.md for the IR between
// stages). Options replace side channels: no pass reads a file.
//
//===----------------------------------------------------------------------===//

#ifndef TG_PASSES_TD
#define TG_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Training step (tg dialect)
//===----------------------------------------------------------------------===//

def TgAutodiff : Pass<"tg-autodiff", "ModuleOp"> {
  let summary = "Add @F_grad: the loss of @F and the gradients of its parameters";
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"forward\"",
           "The function to differentiate">,
  ];
}

def TgPartitionTensorParallel
    : Pass<"tg-partition-tensor-parallel", "ModuleOp"> {
  let summary = "Partition @forward into one rank's program of Megatron-style "
                "tensor parallelism over the mesh axis \"tensor\"";
  let description = [{
    Sharding annotation, propagation and SPMD partitioning in one walk over
    @forward, before autodiff:

    * Annotation (the Megatron strategy, keyed by the Hugging Face names the
      frontend gives parameters): column-parallel q/k/v (GPT-2's fused
      c_attn as three blocks), c_fc, gate_proj and up_proj split their
      output features; row-parallel attention output, c_proj/down_proj
      split their input features; the token embedding and LM head split
      the vocabulary, padded with zero rows to a multiple of the axis size.
      Each split argument gets `tg.shard` and its share's type. Where the
      key/value heads of a grouped-query model are fewer than the ranks,
      k_proj/v_proj stay whole and each rank takes its head of the keys
      and values (tg.shard_slice), as several ranks share one head.
    * Propagation: every value is replicated, split along a dim, or a
      partial sum. A replicated value that feeds rank-dependent work goes
      through tg.grad_all_reduce (its gradient is summed over the ranks);
      a partial sum is all-reduced (sum) where a consumer needs it whole
      (after a row-parallel matmul, before its bias).
    * The vocabulary-parallel loss never gathers the logits: the rank's
      logits are masked past the real vocabulary, and the row maximum, the
      sum of exponentials and the target logit (tg.pick) are all-reduced
      per token.

    * Sequence parallelism (option `sequence-parallel`, Megatron's): the
      activations [batch, sequence, hidden] between the tensor-parallel
      layers (embeddings, residuals, norms, biases of row-parallel layers)
      are split along the sequence over the same ranks. A partial sum is
      reduce-scattered along the sequence in place of the all-reduce, and
      a column-parallel layer all-gathers the sequence it reads (once per
      value); the all-gather's VJP is a reduce-scatter, the
      reduce-scatter's an all-gather. Both run on dim 0, so a sequence
      with batch rows before it moves to the front and back (transposes).
      Norm weights, row-parallel biases and the position embeddings'
      shares see a share of the sequence, so they are marked
      tg.grad_all_reduce. Key/value heads shared by several ranks come
      from each rank's share of the sequence (a whole k_proj/v_proj),
      gathered along the sequence before the rotation. The sequence must
      divide by the axis size.

    The rank's index comes from a new input "mesh_coordinate" (I64, one
    entry per mesh axis). The module's mesh becomes ["data", "tensor"] =
    [data-parallel, tensor-parallel]. Head counts, feature sizes and
    sequence sizes the axis does not divide are rejected naming the
    dimension, its size and the axis; an op the strategy cannot partition
    is rejected by name. The logits result becomes the rank's vocabulary
    share.
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"forward\"",
           "The forward function">,
    Option<"tensorParallel", "tensor-parallel", "int64_t", /*default=*/"2",
           "Ranks along the mesh axis \"tensor\"">,
    Option<"dataParallel", "data-parallel", "int64_t", /*default=*/"1",
           "Ranks along the mesh axis \"data\" (recorded in the mesh)">,
    Option<"sequenceParallel", "sequence-parallel", "bool", /*default=*/"false",
           "Split norms, residuals and embeddings along the sequence">,
  ];
}

def TgBuildTrainStep : Pass<"tg-build-train-step", "ModuleOp"> {
  let summary = "Replace the forward function by the whole training step";
  let description = [{
    Turns `@forward` into `@train_step`: a `tg.micro_batches` loop of forward
    and backward over slices of the batch, global-norm clipping, AdamW
    (torch.optim.AdamW semantics) and the learning-rate schedule, all set by
    the options below (tgc fills them from TRAIN.json and --mesh).

    With `data-parallel=D` > 1 the step is one rank's of D along the mesh
    axis "data" (a mesh the module declares, tg.mesh_axes / tg.mesh_shape,
    must have it with size D; a module without one gets ["data"] = [D]):
    tokens and targets are its batch-size / D rows, and the loss and each
    gradient go through `tg.all_reduce avg over "data"` before clipping and
    AdamW, so every rank applies the single-device update.

    With `zero=1` as well (ZeRO-1, Megatron's distributed optimizer) each
    parameter's AdamW moments are split over "data": a moment is the rank's
    [C] chunk of the parameter's N local elements, flattened and padded
    with zeros to D x C (C = ceil(N / D)), marked `tg.optimizer_shard`.
    Each gradient is flattened, padded and reduce-scattered (`tg.reduce_scatter
    avg`), the global norm sums the chunks' squares over "data" (and over
    "tensor" for split parameters), AdamW updates the rank's chunk of the
    parameter (`tg.shard_slice` by its index along "data"), and
    `tg.all_gather` reassembles the new parameter.
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"forward\"",
           "The forward function">,
    Option<"batchSize", "batch-size", "int64_t", /*default=*/"0",
           "Global batch, in sequences">,
    Option<"seqLen", "seq-len", "int64_t", /*default=*/"0",
           "Sequence length">,
    Option<"microBatches", "micro-batches", "int64_t", /*default=*/"1",
           "Micro-batches each rank's rows of the batch are split into">,
    Option<"dataParallel", "data-parallel", "int64_t", /*default=*/"1",
           "Ranks along the mesh axis \"data\" the batch is split over">,
    Option<"zero", "zero", "int64_t", /*default=*/"0",
           "ZeRO stage: 0, or 1 to split the AdamW moments over the "
           "\"data\" ranks (needs data-parallel > 1)">,
    Option<"lr", "lr", "double", /*default=*/"0.0", "Peak learning rate">,
    Option<"beta1", "beta1", "double", /*default=*/"0.9", "AdamW beta1">,
    Option<"beta2", "beta2", "double", /*default=*/"0.999", "AdamW beta2">,
    Option<"eps", "eps", "double", /*default=*/"1e-8", "AdamW epsilon">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"0.01",
           "Decoupled weight decay (rank >= 2 parameters)">,
    Option<"gradClipNorm", "grad-clip-norm", "double", /*default=*/"0.0",
           "Global gradient-norm clipping threshold; 0 disables clipping">,
    Option<"schedule", "lr-schedule", "std::string", /*default=*/"\"constant\"",
           "Learning-rate schedule: constant | cosine">,
    Option<"warmupSteps", "warmup-steps", "int64_t", /*default=*/"0",
           "Linear warm-up steps (cosine)">,
    Option<"minLr", "min-lr", "double", /*default=*/"0.0",
           "Final learning rate (cosine)">,
    Option<"decaySteps", "decay-steps", "int64_t", /*default=*/"0",
           "Steps from the end of warm-up to min-lr (cosine)">,
  ];
}

def TgBuildEvalStep : Pass<"tg-build-eval-step", "ModuleOp"> {
  let summary = "Add @eval_step, the loss of a batch without an update, "
                "beside the forward function";
  let description = [{
    Adds `@eval_step(params..., tokens, targets) -> loss` beside `@forward`
    (which stays, for tg-build-train-step): the forward of each micro-batch
    of the rank's rows in a `tg.micro_batches` loop, losses averaged, and
    with `data-parallel=D` > 1 averaged over the mesh axis "data". The same
    rows as the training step's, so the same batches and the same memory
    bound; parameters are in the loss's precision (the training step's
    master slots). A partitioned forward (tensor parallelism) keeps its
    collectives.
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"forward\"",
           "The forward function">,
    Option<"batchSize", "batch-size", "int64_t", /*default=*/"0",
           "Global batch, in sequences">,
    Option<"seqLen", "seq-len", "int64_t", /*default=*/"0",
           "Sequence length">,
    Option<"microBatches", "micro-batches", "int64_t", /*default=*/"1",
           "Micro-batches each rank's rows of the batch are split into">,
    Option<"dataParallel", "data-parallel", "int64_t", /*default=*/"1",
           "Ranks along the mesh axis \"data\" the batch is split over">,
  ];
}

def TgBuildLogits : Pass<"tg-build-logits", "ModuleOp"> {
  let summary = "Add @logits, the forward's logits without the loss, beside "
                "the forward function";
  let description = [{
    Adds `@logits(params..., tokens) -> logits` beside `@forward` (which
    stays): the ops the forward's second result depends on, for one
    micro-batch of tokens, with parameters and logits in the loss's
    precision. What generation samples from. The forward must be on one
    device (no mesh): a partitioned forward holds part of the logits.
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"forward\"",
           "The forward function">,
  ];
}

def TgCarryComputeCopies : Pass<"tg-carry-compute-copies", "ModuleOp"> {
  let summary = "Keep each parameter's bf16/f16 copy between steps, written "
                "with the parameter's update, instead of casting the f32 "
                "master at the start of every step";
  let description = [{
    In a mixed-precision step the forward reads each parameter through a
    `tg.cast` of its f32 master to the compute type (bf16 or f16): a pass
    over every parameter (6 bytes an element) before the first GEMM. Here
    that copy becomes training state: an argument `#tg.state<compute,
    "NAME">` the step reads instead of the cast, and a result with
    `tg.updates` of the same state holding the cast of the updated master,
    which tg-fuse-elementwise merges into the parameter's AdamW kernel (2
    bytes an element more there). The step computes the same values: the
    copy is the master rounded once, as the cast was, and the runtime
    writes it from the master whenever the master is written from outside
    (initialisation, weights, a checkpoint).

    Applies to f32 parameters whose function updates them (`tg.updates`)
    with the result of an elementwise op (the AdamW update), so that the
    cast joins its kernel; not under ZeRO-1, where the new value is
    all-gathered and the cast would stay a kernel of its own. Every narrowing
    cast of one parameter must be to one type, else it is left alone, as is
    a parameter that has its copy already. Turned off by
    `tgc --no-fuse=compute-copies` or `--no-fusion`.
  }];
}

def TgUnrollMicroBatches : Pass<"tg-unroll-micro-batches", "ModuleOp"> {
  let summary = "Lower tg.micro_batches loops to one clone of the body per "
                "micro-batch";
}

//===----------------------------------------------------------------------===//
// Target-independent lowering (tg -> exec)
//===----------------------------------------------------------------------===//

def TgFuseAttention : Pass<"tg-fuse-attention", "func::FuncOp"> {
  let summary = "Replace attention and its gradient by flash attention "
                "kernels where the cost model says they are faster";
  let description = [{
    Before tg-decompose-attention: each tg.attention becomes a
    tg.flash_attention (result and log-sum-exp, one kernel that never holds
    the [T, S] scores and skips the keys a causal or windowed query cannot
    see), and the tg.attention_grad of the same query, key and value a
    tg.flash_attention_grad that recomputes the probabilities from the
    forward's result and log-sum-exp. The decision is per op: flash where
    the decomposition's [T, S] score matrices (one per batch row and head)
    would take more than `max-score-mib`, so that activation memory does
    not grow as T^2, and elsewhere where it is estimated faster: the
    decomposition's batched GEMMs over every (query, key) pair at
    `gemm-gflops` plus its passes over the score matrices at `bandwidth-gbs`,
    against the flash kernels' work over the visible pairs only (blocks of
    16 query rows by whole tiles of 16 keys): their head-dim work at `flash-gflops` plus
    `flash-pair-ns` per pair and kernel (defaults: one core of the 2-core
    dev machine, measured in docs/perf.md). What is not fused is decomposed as before. Each
    decision, its reason and estimates as a remark (`remarks`). The fused
    program computes the same values up to rounding: probabilities are
    exponentials of the same scores, sums over keys are in f64.

    With `rope`, where the queries and keys of a fused op are tg.rope
    results read by nothing else (and the gradients' rotations back read
    nothing but the gradient's results), the flash ops take the queries and
    keys before the rotation and apply it themselves: the rotated queries
    and keys are neither written nor kept for the backward pass (with
    `library-kernels`, exec.attention's `rope_frequencies`).
  }];
  let options = [
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "Report each decision, its estimates and the memory it saves "
           "as a remark">,
    Option<"rope", "rope", "bool", /*default=*/"true",
           "The flash kernels apply the rotary position embedding of their "
           "queries and keys themselves">,
    Option<"flashKernels", "flash-kernels", "bool", /*default=*/"true",
           "The target has flash attention kernels (the CUDA target's are "
           "the runtime's, with library-kernels)">,
    Option<"cudnn", "cudnn", "bool", /*default=*/"false",
           "With library-kernels: cuDNN's fused attention computes the ops "
           "the runtime's kernels would (their rotary position embedding "
           "stays outside), marked `cudnn`">,
    Option<"libraryKernels", "library-kernels", "bool", /*default=*/"false",
           "The flash kernels are the CUDA runtime's (exec.attention): they "
           "take bf16 with head dim 64 or 128, and every op they can take is "
           "fused (the cost model's rates are the CPU's); the rest is "
           "decomposed">,
    Option<"maxScoreMib", "max-score-mib", "double", /*default=*/"32.0",
           "Largest score matrix (all heads of a micro-batch) the "
           "decomposition may hold, MiB; above it flash attention is used "
           "whatever its speed">,
    Option<"gemmGflops", "gemm-gflops", "double", /*default=*/"100.0",
           "Library GEMM rate assumed by the cost model, GFLOP/s">,
    Option<"bandwidthGbs", "bandwidth-gbs", "double", /*default=*/"18.0",
           "Bandwidth of the score-matrix kernels (scale, mask, softmax and "
           "its gradient) assumed by the cost model, GB/s">,
    Option<"flashGflops", "flash-gflops", "double", /*default=*/"83.0",
           "Rate of the flash attention kernels' head-dim work (inner "
           "products and weighted sums) assumed by the cost model, GFLOP/s">,
    Option<"flashPairNs", "flash-pair-ns", "double", /*default=*/"0.44",
           "Time of a flash attention kernel per (query, key) pair besides "
           "its head-dim work (its exponential and its share of a tile's "
           "maximum, sums and masks) assumed by the cost model, ns">,
  ];
}

def TgDecomposeAttention : Pass<"tg-decompose-attention", "ModuleOp"> {
  let summary = "Rewrite tg.attention and tg.attention_grad into matmul, "
                "softmax and elementwise tg ops";
  let description = [{
    See tg/Passes/Decompose.h. A gradient reuses its forward's probabilities
    P where the keys per query row are at most `keep-probs-factor` times the
    head dim (P then costs about a block's other saved activations in memory
    and saves a batched GEMM and a softmax) and the function's kept P stays
    within `keep-probs-mib`, and recomputes them otherwise; each decision as
    a remark (`remarks`). A causal op of at least 2 x `min-block-queries`
    queries is decomposed in up to `causal-blocks` blocks of queries, each
    over only the keys its queries see (3/4 of the products' work and memory
    with two blocks).
  }];
  let options = [
    Option<"keepProbsFactor", "keep-probs-factor", "double", /*default=*/"4",
           "Reuse the forward's probabilities where keys <= this x head dim "
           "(0: always recompute them; inf: whatever the keys)">,
    Option<"keepProbsMib", "keep-probs-mib", "double", /*default=*/"0",
           "Keep at most this many MiB of probabilities in a function, the "
           "gradients in program order (0: no limit)">,
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "Report whether each gradient keeps or recomputes the "
           "probabilities, and why, as a remark">,
    Option<"causalBlocks", "causal-blocks", "int64_t", /*default=*/"2",
           "Blocks of queries of a causal attention, each over the keys it "
           "sees (1: the whole op at once)">,
    Option<"minBlockQueries", "min-block-queries", "int64_t",
           /*default=*/"256",
           "The fewest queries of a causal block">,
  ];
}

def TgAlignGemmRows : Pass<"tg-align-gemm-rows", "func::FuncOp"> {
  let summary = "Pad the matrices of a library GEMM whose stored rows are "
                "not 16-byte aligned, and slice its product back";
  let description = [{
    cuBLASLt's tensor-core kernels (TMA, wgmma) need every row of A, B and
    C to start on 16 bytes; with a row of an odd number of bf16 elements
    (GPT-2's vocabulary of 50257: the logits, their gradient, the tied
    embedding) it falls back to kernels 5-7x slower. For each tg.matmul a
    dimension that is the length of a stored row (N always; K where it is
    the rows of lhs or of a transposed rhs; M where lhs is transposed) and
    is not a multiple of 16 bytes is padded with zeros to a multiple of
    `row-bytes`: the operands with tg.pad (one pad per tensor and shape,
    through reshapes that keep the last dim), the product with a tg.slice.
    Zeros add nothing to the products' sums, so the program computes the
    same values; only the library's order of summation may change. Each
    padded product and its extra bytes as a remark (`remarks`).
  }];
  let options = [
    Option<"rowBytes", "row-bytes", "int64_t", /*default=*/"128",
           "Pad a misaligned row to a multiple of this many bytes (a cache "
           "line: also the multiple cuBLASLt's tiles read whole)">,
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "Report each padded product and what the padding costs as a "
           "remark">,
  ];
}

def TgFormDispatchRegions
    : Pass<"tg-form-dispatch-regions", "func::FuncOp"> {
  let summary = "Group the ops of a function into exec.dispatch_region ops on "
                "tensors";
  let description = [{
    Every op that becomes generated code is wrapped in an
    `exec.dispatch_region`; matrix products stay outside when they go to the
    target's GEMM library, and so do views (reshape) and constants. Today a
    region holds one op; the fusion passes grow them. The gradient markers
    tg.grad_all_reduce and tg.stop_gradient, identities once autodiff has
    run, are dropped.
  }];
  let options = [
    Option<"libraryGemm", "library-gemm", "bool", /*default=*/"true",
           "Matrix products are library calls (exec.gemm), not kernels">,
    Option<"libraryAttention", "library-attention", "bool",
           /*default=*/"false",
           "Flash attention and its gradient are the runtime's kernels "
           "(exec.attention), not generated ones">,
  ];
  let dependentDialects = ["::mlir::tg::exec::ExecDialect"];
}

def TgFuseElementwise : Pass<"tg-fuse-elementwise", "func::FuncOp"> {
  let summary = "Merge chains of elementwise dispatch regions into one "
                "region: one kernel, one pass over the elements";
  let description = [{
    After tg-form-dispatch-regions, in program order, a region whose ops are
    all elementwise (an elementwise group: every result of one shape)
    absorbs the elementwise regions producing its operands, so whole chains
    (the forward's and backward's elementwise ops, the AdamW update of a
    parameter: about 15 ops, its new value, first and second moments) become
    one kernel with several outputs. A producer's result that something
    else reads later stays a result of the merged region; rank-0 splat
    constants are compiled into it. Not fused, with the reason as a remark
    (`remarks`): a producer that is not elementwise, one of another shape
    (broadcast into the consumer, it would be recomputed for every element),
    a bias add of a library GEMM's product (exec-fuse-gemm-bias makes it the
    GEMM's epilogue), one read by something that runs before the consumer,
    one that would make the kernel read more than `max-inputs` buffers (the
    sum of every gradient's squares for the global norm would otherwise be
    one kernel of hundreds of inputs).
    Nothing is recomputed, so the fused program computes the same values
    (each op rounds to its own type, as before). Turned off by
    `tgc --no-fusion`.
  }];
  let options = [
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "Report each fusion decision and its reason as a remark">,
    Option<"maxInputs", "max-inputs", "int64_t", /*default=*/"64",
           "Most buffers a fused kernel reads (a CUDA kernel's parameters "
           "are limited to 4 KiB)">,
  ];
}

def TgFuseIntoRows : Pass<"tg-fuse-into-rows", "func::FuncOp"> {
  let summary = "Fuse elementwise regions into the row kernels of norms, "
                "softmax and sums (a prologue computing the row input, an "
                "epilogue consuming a row gradient), and the loss with its "
                "gradient";
  let description = [{
    After tg-fuse-elementwise, in program order:
    - prologue: the elementwise region computing the row input x of a
      tg.layer_norm, tg.rms_norm or tg.softmax (a pre-norm block's residual
      add, attention's scale and causal mask) joins the row op's region. Its
      kernel computes x a row at a time, writes it where something later
      reads it (the residual stream), and normalises the row while it is in
      cache: x is not read back from memory, nor written where nothing
      else reads it.
    - epilogue: the region of a tg.layer_norm_grad, tg.rms_norm_grad or
      tg.softmax_grad joins the first elementwise region reading its dx (the
      residual stream's gradient add, attention's scale): each dx element
      goes through the epilogue as it is computed, and dx is written only if
      something else reads it.
    - column sums: a region that is a tg.reduce_sum over the rows (every
      dim but the last) of a value a tg.layer_norm_grad's or
      tg.rms_norm_grad's region yields in its row space (dx, or the
      residual stream's gradient its epilogue adds: the bias gradient of the
      projection before that add) joins that region, moved up to it (it
      reads nothing else); the kernel's column pass sums those rows beside
      the weight and bias gradients instead of a kernel of its own. Only
      rows something else reads too, which the kernel stores anyway.
    - sums: the elementwise region whose values only a tg.reduce_sum or
      tg.reduce_mean reads (each gradient's squares for the global norm)
      joins the sum's region; the sum computes each element as it reads it.
      Where something else reads some of the region's values, the ops that
      only the sum needs are split off into it (the vocabulary-parallel
      loss's exponentials; the shifted logits stay for the target pick).
    - the heads' transposes around a rope: a tg.transpose [0, 2, 1, 3] whose
      result only a tg.rope reads (Llama's queries and keys into their
      heads), and one that alone reads a rope's result (their gradients back
      into tokens after the inverse rope), join the rope's region. Its
      kernel reads (writes) each plane's row where the transpose would have
      moved it: the heads are not written and read again in the other
      layout.
    Not fused, with the reason as a remark (`remarks`): an elementwise
    region of another shape (broadcast, it would be recomputed), a bias add
    of a library GEMM's product (left to exec-fuse-gemm-bias), an epilogue
    that also reads the weight or bias gradient (column sums, complete only
    after the last row), a value read by something that runs before the
    fused kernel, more than `max-inputs` buffers, transposed heads that
    something else reads too. Nothing is recomputed and
    each op rounds as before: the fused program computes the same values.
    With `loss-with-gradient`, a tg.cross_entropy and the
    tg.cross_entropy_grad of the same logits and targets become one kernel:
    each row's softmax, gradient and loss from one max and one sum of
    exponentials, where the loss alone was a second pass over the logits
    (and a serial one: its rows' losses are summed in order). The kernel
    keeps the rows' losses in a buffer of its own (the CUDA target holds
    it as a device global). `tgc --no-fuse=loss` turns this part off.
    Turned off by `tgc --no-fuse=rows` or `--no-fusion`.
  }];
  let options = [
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "Report each fusion decision and its reason as a remark">,
    Option<"maxInputs", "max-inputs", "int64_t", /*default=*/"64",
           "Most buffers a fused kernel reads (a CUDA kernel's parameters "
           "are limited to 4 KiB)">,
    Option<"lossWithGradient", "loss-with-gradient", "bool",
           /*default=*/"true",
           "Compute cross_entropy and its gradient in one kernel">,
  ];
}

def TgFuseAttentionLayouts : Pass<"tg-fuse-attention-layouts", "func::FuncOp"> {
  let summary = "Flash attention kernels read their operands and write their "
                "results in the layouts around them";
  let description = [{
    After tg-fuse-into-rows. A flash attention kernel addresses each
    operand's rows by strides of their own, so the kernels that only move
    its operands or results between layouts join its region and move
    nothing (tg-bufferize-kernels' flash groups):
    - operands: the chain of slice and transpose regions and reshapes that
      made a q, k, v, result or dO out of another value (GPT-2's q, k and v
      sliced out of the fused projection [B, T, 3 x H x D] and transposed
      into heads; dO from the tokens' layout) is cloned into the flash
      region, which then reads that value in place. The chain's kernels go
      when no other region reads them (the forward and the gradient read
      the same q, k and v). Refused where the chain's root is larger than
      what the region reads of it together (it would be kept alive longer:
      the projection's 3 x H x D for q, k and v is read whole), and where
      the head dim would not be contiguous.
    - results: the transpose regions that alone read a result (the
      forward's result into the tokens' layout; dq, dk and dv), and the
      concatenation that alone reads all of them through reshapes (the
      projection's gradient), join the region, which writes them there.
      Refused where something else reads a value in between, or reads one
      before the merged kernel runs.
    Nothing is recomputed and each op rounds as before: the fused program
    computes the same values. Each decision and reason as a remark
    (`remarks`). Turned off by `tgc --no-fuse=attention-layouts` or
    `--no-fusion`.
  }];
  let options = [
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "Report each fusion decision and its reason as a remark">,
  ];
}

def TgLowerToExec : Pass<"tg-lower-to-exec", "ModuleOp"> {
  let summary = "Turn @train_step (and @eval_step, @logits) into exec.programs: "
                "resources, dispatches of outlined kernels, library GEMMs and "
                "copies";
  let description = [{
    Each argument and result of the step becomes a typed resource (parameter,
    AdamW moment, input, output), constants become constant resources and
    every other value a scratch resource; reshapes become views. Each
    `exec.dispatch_region` is outlined into a kernel function on tensors in
    the program's kernel module (structurally equal regions share one
    kernel) and replaced by an `exec.dispatch`; matmuls become `exec.gemm`,
    flash attention ops outside regions `exec.attention` (bf16, the CUDA
    runtime's kernels; the delta scratch of a gradient gets its buffer),
    `tg.all_reduce` an `exec.all_reduce` (in place over a scratch input that
    nothing else reads, as a gradient is). The program takes the module's
    mesh (tg.mesh_axes / tg.mesh_shape; a single device without one) and
    the global batch: the rows of the "tokens" input, which are one rank's,
    times the size of the mesh axis "data". Results that update a state
    argument are written over it when the planner later proves it safe
    (`exec.resource ... updates`).
  }];
  let options = [
    ListOption<"functions", "functions", "std::string",
               "The functions to lower, each into an exec.program of its "
               "name sharing one kernel module (default: @train_step, and "
               "@eval_step and @logits where the module has them)">,
    Option<"seed", "seed", "uint64_t", /*default=*/"0",
           "Initialisation seed recorded in the program">,
  ];
  let dependentDialects = ["::mlir::tg::exec::ExecDialect",
                           "::mlir::memref::MemRefDialect"];
}

//===----------------------------------------------------------------------===//
// Execution dialect
//===----------------------------------------------------------------------===//

def ExecFuseGemmBias : Pass<"exec-fuse-gemm-bias", "ModuleOp"> {
  let summary = "Fold a bias add that only consumes a GEMM's product into "
                "the GEMM, as its epilogue";
  let description = [{
    Before timepoints and planning: a dispatch of a kernel that is exactly
    `tg.add(product, bias)` (bias rank 1, as long as the product's last dim),
    where the product is a scratch buffer written only by one `exec.gemm`
    and read only by that dispatch, is removed; the GEMM writes the
    dispatch's output with `bias(...)`. Each bias add fused, and each not
    fused and why, as a remark (`remarks`). Turned off by `tgc --no-fusion`
    or `--no-fuse=gemm-bias`.
  }];
  let options = [
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "Report each bias add fused, and each not fused and why, as a "
           "remark">,
  ];
}

def ExecFuseGemmLayouts : Pass<"exec-fuse-gemm-layouts", "ModuleOp"> {
  let summary = "Fold the slices, transposes and concatenations around a "
                "GEMM into its strides";
  let description = [{
    Before timepoints and planning, after exec-fuse-gemm-bias:
    - a GEMM's product read only by a kernel that is exactly one tg.transpose
      or tg.concat (through reshaping views), whose result is a fresh scratch
      buffer, is written straight into that result (ldc, batch strides; the
      chain followed as far as it goes). A concatenation goes only where
      every input is such a product.
    - a GEMM operand written only by a kernel that is exactly one tg.slice or
      tg.transpose (the chain followed back as far as it goes) is read
      where that kernel read it (lda/ldb, batch strides), unless a command
      in between writes that buffer.
    Only layouts a strided batched GEMM takes are folded: unit column
    stride, rows at least their length apart, at most two batch levels
    (exec.gemm's inner_batch).
    - likewise the outputs (result, dq, dk, dv) and the inputs q, k, v and
      dO of an exec.attention (the runtime's flash kernels), which take any
      batch, head and row strides that are multiples of 8 over rows of
      contiguous elements.
    Layout kernels whose results nothing reads any more are removed. Each
    fold, how far it goes and why not further, as a remark (`remarks`).
    Turned off by `tgc --no-fusion` or `--no-fuse=gemm-layouts`.
  }];
  let options = [
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "Report each fold, and why a layout kernel is not folded, as a remark">,
  ];
}

def ExecFuseGemmActivation : Pass<"exec-fuse-gemm-activation", "ModuleOp"> {
  let summary = "Fold GELU (tanh approximation) and its gradient into the "
                "GEMMs that feed them, as cuBLASLt epilogues";
  let description = [{
    Before timepoints and planning, after exec-fuse-gemm-bias and
    exec-fuse-gemm-layouts. Only single packed products (batch 1, packed c),
    of bf16 or f16, and of f32 and f64 only with `wide` (the CPU runtime's
    epilogue takes any type; on CUDA the epilogues serve the 16-bit products
    of mixed precision, and f32 and f64 keep their kernels: cuBLASLt has no
    f64 GELU epilogue, and its f32 ones are not run anywhere yet):
    - a dispatch of a kernel that is exactly tg.gelu (tanh) of a GEMM's
      product (with or without its bias epilogue) goes: the GEMM writes the
      GELU to the dispatch's output and the sum before it to `aux`, the
      buffer it wrote before, which the gradient reads (GELU_AUX(_BIAS));
    - a dispatch of a kernel that is exactly tg.gelu_grad (tanh) of a
      buffer x and a GEMM's product without bias, the product read by
      nothing else, goes: the GEMM multiplies its product by GELU's
      derivative at x (`aux`) and writes the dispatch's output (DGELU);
    - then, with `bias-grad` (off by default), a dispatch of a kernel that is exactly
      tg.reduce_sum of that output over every axis but the last (the
      gradient of the bias the forward GEMM added) into a scratch buffer of
      its own goes too: the GEMM writes those sums (`bias_grad`,
      DGELU_BGRAD).
    Saves a kernel and a pass over the MLP's hidden activation each way, and
    the backward's pass over it for the bias gradient.
    On the CPU the runtime applies the same epilogue as one pass over the
    rows after the BLAS call; the CUDA target runs this pass by default,
    the CPU target only when asked (`tgc --fuse=gemm-activation`). Each
    fold, and why a GELU kernel or a bias gradient's sum is not folded, as a
    remark (`remarks`). SiLU (Llama) has no cuBLASLt epilogue and stays a
    kernel.
  }];
  let options = [
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "Report each fold, and each GELU kernel not folded and why, as a "
           "remark">,
    Option<"wide", "wide", "bool", /*default=*/"false",
           "Fold f32 and f64 products too (the CPU runtime applies the "
           "epilogue in any precision)">,
    Option<"biasGrad", "bias-grad", "bool", /*default=*/"false",
           "Fold the sums of GELU's gradient over its rows (a bias gradient) "
           "into the GEMM that applies GELU's derivative (DGELU_BGRAD; off "
           "until cuBLASLt's epilogue has run on a GPU)">,
  ];
}

def ExecFuseGemmResidual : Pass<"exec-fuse-gemm-residual", "ModuleOp"> {
  let summary = "Fold the residual stream's add after a projection into the "
                "GEMM, as its addend";
  let description = [{
    Before timepoints and planning, after exec-fuse-gemm-activation. Where a
    dispatch's kernel (on tensors) adds two of its arguments of one shape,
    one of them the product of a single packed GEMM (batch 1, packed c, no
    activation) read by that dispatch alone, and returns the sum (the
    residual stream, which a norm kernel with the add as its prologue
    writes), the GEMM adds the other term (`addend`: cuBLASLt's C operand
    with beta = 1 on CUDA, the bias epilogue's pass on the CPU) and writes
    the sum into the dispatch's output for it. The dispatch then runs a copy
    of its kernel without the add, reading the sum in the product's place,
    or goes, where the add was all of it. Per residual add, the kernel reads
    one activation and writes one fewer and the GEMM reads one more; where
    the kernel would read the other term anyway, or does not store the sum,
    that is no saving, and nothing is folded. The other term must hold its
    value from the GEMM on, the sum's buffer be untouched between the two.
    Each fold, and why an add of a GEMM's product is not folded, as a remark
    (`remarks`).
  }];
  let options = [
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "Report each fold, and each add of a GEMM's product not folded "
           "and why, as a remark">,
  ];
}

def ExecFuseHorizontal : Pass<"exec-fuse-horizontal", "ModuleOp"> {
  let summary = "Run the dispatches of one small kernel over like buffers "
                "as one launch over packs of them";
  let description = [{
    Before timepoints and planning, after the GEMM fusions. A training step
    runs a few kernels once per parameter: the cast of each parameter to the
    compute type (with tg-carry-compute-copies, in the update), the square
    sum of each gradient for the global norm, the AdamW update. For the many
    small parameters (biases, norm weights) each such launch is mostly the
    launch's fixed cost. Dispatches of one kernel
    whose buffers have at most `max-elements` elements each, that read the
    same buffers where they read shared ones (rank 0: a clipping factor, a
    learning rate) and like ones elsewhere, become one dispatch of the
    kernel batched over a leading dimension of N: each like operand is a
    pack (`exec.resource ... in %pack[i x size]`) whose row i is member i's
    buffer, so the members keep their names, slots and other readers and
    writers. State packs with state (parameters, moments, compute copies),
    scratch with scratch; the packed update `updates` the packed state: one
    packed already, one the group reads, or state the group only writes
    (the compute copies the AdamW kernels write, which the forward reads),
    which it packs.

    A group forms only where it computes what its dispatches did: the
    kernel's body is elementwise ops (numpy broadcasting of unbatched
    operands) and reductions, which a leading dimension batches; the batched
    dispatch runs where the first member ran (a batched reduction sums each
    member as a row, which a GPU gives one team: only rows of up to 65,536
    elements), and no command between it and
    a member writes what the member reads or touches what it writes; every
    like operand is a whole resource of its own (not a view, not reduced by
    a collective, except an in-place all-reduce of each, which becomes one
    of the pack, where the last one was, with nothing else touching a member
    in between: a data-parallel gradient bucket then holds the pack as one
    gradient) or the same rows of one pack already made; rows are
    64-byte aligned (arena buffers are; kernels load vectors assuming it).
    With `large-rows` (the CUDA target), buffers of any size pack where that
    keeps the planned arena: the rest of the lowering runs on two copies of
    the module, one fused with them and one without, and they pack only
    where no program's arena grows (a trial that fails keeps them apart)
    (a pack of a layer's gradients holds every row from the first one's
    write: no change for GPT-2 medium, which then runs 512 -> 233 launches a
    step; Llama 2 7B at 256 tokens a step would grow 14%).
    With `remarks`, each group formed and each refused, with why, and the
    large-rows decision with both arenas. Turned off
    by `tgc --no-fusion` or `--no-fuse=horizontal`.
  }];
  let options = [
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "Report each group as a remark: formed, or why not">,
    Option<"maxElements", "max-elements", "int64_t", /*default=*/"65536",
           "Largest buffer (elements) of a member: beyond it a launch's "
           "fixed cost is small beside the kernel's own time, and a pack "
           "of gradients, live from the first one's write, could raise the "
           "arena's peak">,
    Option<"largeRows", "large-rows", "bool", /*default=*/"false",
           "Pack buffers over max-elements too (and reductions of any "
           "length), where a trial plan of the lowering that follows "
           "(exec-schedule-collectives to exec-plan-buffers) with them "
           "keeps the arena of one without">,
    Option<"bucketBytes", "bucket-bytes", "int64_t",
           /*default=*/"25 << 20",
           "The gradient bucket size the large-rows trials plan with "
           "(exec-bucket-gradients' bucket-bytes)">,
    Option<"weightGradientStream", "weight-gradient-stream", "bool",
           /*default=*/"false",
           "The large-rows trials plan with exec-stream-weight-gradients, "
           "as the lowering that follows does">,
    Option<"mergeAllReduces", "merge-all-reduces", "bool", /*default=*/"true",
           "Pack buffers that are each all-reduced in place (data-parallel "
           "gradients), reducing the pack once where the last was; off, "
           "such buffers are not packed (tgc --bucket-mb 0: one all-reduce "
           "per gradient)">,
  ];
}

def ExecScheduleCollectives : Pass<"exec-schedule-collectives", "ModuleOp"> {
  let summary = "Issue each collective as early as its buffers allow, and "
                "those over the data axis on the communication stream";
  let description = [{
    Before exec-insert-timepoints: each collective command (all_reduce,
    reduce_scatter, all_gather, send, recv) moves up to just after the last
    earlier command it conflicts with: one that writes a buffer it reads,
    or reads or writes a buffer it writes (views resolved to their storage),
    or whose timepoint it awaits. The resources and views it uses move with
    it. Collectives over the mesh axis "data" (the gradient all-reduces of
    data parallelism) then run on stream `comm-stream`, so each starts as
    soon as its gradient exists and overlaps the rest of the backward pass;
    the commands that read its result await it (exec-insert-timepoints).
    Every rank runs the same program, so all issue the collectives in the
    same order.
  }];
  let options = [
    Option<"commStream", "comm-stream", "int64_t", /*default=*/"1",
           "The stream collectives over the data axis run on">,
  ];
}

def ExecBucketGradients : Pass<"exec-bucket-gradients", "ModuleOp"> {
  let summary = "Gradient all-reduces of consecutive gradients share one "
                "buffer and one collective";
  let description = [{
    After exec-schedule-collectives, before exec-insert-timepoints: walking
    each exec.program in order, consecutive in-place all-reduces over the
    mesh axis "data" of scratch resources (the gradients of data
    parallelism) with one reduction, stream and element type join a bucket
    of at most `bucket-bytes`. The bucket becomes one scratch resource: each
    gradient is an exec.view of it at its offset, so the commands that
    compute the gradients write into it directly, and one all-reduce of the
    whole bucket replaces the members', where the last member's was (just
    after the last gradient is complete). A bucket closes before a command
    that touches one of its gradients, which must see it reduced. Buckets
    fill in the order the backward pass completes gradients, as PyTorch DDP
    and Megatron fill theirs; 0 bytes, or a single member, keeps one
    all-reduce per gradient.
  }];
  let options = [
    Option<"bucketBytes", "bucket-bytes", "int64_t", /*default=*/"26214400",
           "Largest bucket in bytes (PyTorch DDP's 25 MiB by default)">,
  ];
}

def ExecStreamWeightGradients
    : Pass<"exec-stream-weight-gradients", "ModuleOp"> {
  let summary = "Run the GEMMs whose products only the optimizer reads on a "
                "stream of their own, beside the backward pass";
  let description = [{
    After exec-insert-timepoints, which makes every command await all the
    commands it depends on whatever their streams. A single-device step runs
    every kernel and GEMM on stream 0, one after another, though the weight
    gradients' GEMMs (a product of an activation and an output gradient
    that nothing reads before the gradient norm and the optimizer) depend
    on nothing the backward pass computes after them: a GEMM of few tiles
    (a 1024 x 1024 weight's gradient fills a quarter of an H100's SMs)
    leaves the rest of the device idle while the next commands wait. Here
    each GEMM on stream 0 whose results nothing reads or writes before the
    program's last GEMM or attention command moves to stream `stream`, so
    that it runs beside the commands after it. The main stream joins each
    such GEMM at its first command after the next one is issued (the last
    after the last product), so that its operands' bytes return to the
    arena's plan soon after: the planner frees a buffer a side-stream
    command reads only once a command awaits that command. The same
    values: no command moves in program order, and the dependencies stay
    awaited. Before exec-plan-buffers (a planned program is refused).
    Opt-in (`tgc --cuda-weight-gradient-stream`): whether it pays depends
    on how the GEMMs share the device.
  }];
  let options = [
    Option<"stream", "stream", "int64_t", /*default=*/"2",
           "The stream the weight gradients' GEMMs run on (not 0 or 1: the "
           "main and communication streams)">,
  ];
}

def ExecInsertTimepoints : Pass<"exec-insert-timepoints", "ModuleOp"> {
  let summary = "Make every command await the commands it depends on";
  let description = [{
    Computes the dependency graph of each exec.program from the resources
    its commands read and write (read after write, write after write and
    write after read, views resolved to their storage) and records it as
    timepoints: each command awaits exactly the timepoints of the earlier
    commands it conflicts with. After this pass the command order is one
    valid schedule, not the only one.
  }];
}

def ExecPlanBuffers : Pass<"exec-plan-buffers", "ModuleOp"> {
  let summary = "Place every resource of each exec.program in one arena";
  let description = [{
    State resources (parameters, moments, inputs, outputs, constants) get a
    state region; scratch resources are placed first-fit and reused once
    every command that touched the previous occupant has completed. On one
    stream the command order guarantees that; where the reusing command runs
    on another stream, the planner makes it await those commands (and bytes
    a command off stream 0, such as a collective on the communication
    stream, touched are reused only once a command has awaited it). A result
    that updates a state resource is written over it when nothing reads the
    old value afterwards (or only the in-place elementwise op producing the
    update does); otherwise an exec.copy back is appended.
  }];
}

def TgBufferizeKernels : Pass<"tg-bufferize-kernels", "ModuleOp"> {
  let summary = "Lower the outlined kernels from tg ops on tensors to "
                "linalg/scf on memrefs";
  let description = [{
    Each kernel function of a program's kernel module takes tensors and
    returns tensors; after this pass it takes memrefs (operands, then
    results: destination-passing style) and its body is linalg and scf on
    those buffers, intermediate values of multi-op kernels in local buffers.
  }];
  let options = [
    Option<"vectorRows", "vector-rows", "bool", /*default=*/"true",
           "A row of a row loop runs on one thread (the CPU target), so a "
           "row may be computed as whole vectors; off for the CUDA target, "
           "which spreads a row's loops over a warp's lanes">,
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::vector::VectorDialect"];
}

//===----------------------------------------------------------------------===//
// CPU target
//===----------------------------------------------------------------------===//

def TgCpuApproximateMath : Pass<"tg-cpu-approximate-math", "ModuleOp"> {
  let summary = "Replace f32 exp, log, tanh and erf by polynomials so LLVM "
                "can vectorize the loops around them";
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::vector::VectorDialect"];
}

def TgCpuParallelizeLoops : Pass<"tg-cpu-parallelize-loops", "ModuleOp"> {
  let summary = "Outline each kernel's large top-level scf.parallel loops so "
                "that the runtime's thread pool runs them";
  let description = [{
    Runs on a kernel module on memrefs, after linalg has become loops. Each
    `scf.parallel` of a kernel function that no other loop encloses, has
    static bounds and no reductions, and does at least `min-work` scalar
    operations (the ops in it, a vector op once per lane, each loop's body
    counted times its static trip count) has its body outlined into a private function
    `@KERNEL_parN(%begin: index, %end: index, captured...)` that runs
    iterations [begin, end) of its leading dimensions (all but the last,
    flattened; the last stays an inner loop so that it vectorizes).
    Captured side-effect-free values (constants, index arithmetic, memref
    views) are cloned into it; the others are passed. The loop is replaced
    by a call to the declaration `@KERNEL_parN_launch(%iterations,
    captured...)`, which `tg-cpu-serialize-kernels` defines: it hands the
    range to the runtime's thread pool through the kernel library's
    `tg_parallel_for_hook`, or runs it on the calling thread when no pool
    is installed. Smaller loops stay serial: handing work to other threads
    costs microseconds. The kernel bodies guarantee that the iterations of
    a `scf.parallel` touch disjoint elements (`Emitter::rows`), as linalg's
    parallel dimensions do.
  }];
  let options = [
    Option<"minWork", "min-work", "int64_t", "65536",
           "scalar operations below which a loop stays on the calling "
           "thread">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::LLVM::LLVMDialect"];
}

def TgCpuVectorizeElementwise
    : Pass<"tg-cpu-vectorize-elementwise", "func::FuncOp"> {
  let summary = "Rewrite elementwise linalg.generics on whole or "
                "single-element buffers as explicit vector loops";
  let description = [{
    A static, all-parallel linalg.generic whose outputs and inputs are whole
    buffers of the iteration space (identity maps) or single elements
    (scalars, read once), with a body of arith and math ops, becomes an
    `scf.parallel` over vectors of `lanes` elements of the flat buffers
    (vector.load, the body on vectors, vector.store) and a scalar loop over
    the remainder. LLVM's own vectorizer guards its vector loop with a
    runtime overlap check, which a kernel writing state over its input (the
    fused AdamW update) always fails; these vector loops need no check, as
    each iteration reads all its inputs before writing. Other generics
    (broadcasts along some dims, transposes, reductions) are left to LLVM.
  }];
  let options = [
    Option<"lanes", "lanes", "int64_t", /*default=*/"8",
           "Elements per vector (8 x f32: one AVX register)">,
  ];
  let dependentDialects = ["::mlir::vector::VectorDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def TgCpuSerializeKernels : Pass<"tg-cpu-serialize-kernels", "ModuleOp"> {
  let summary = "Compile each program's kernel module (LLVM dialect) into a "
                "host shared object held by an exec.binary";
  let description = [{
    Translates the kernel module to LLVM IR, adds a `NAME_packed(void**)`
    entry per kernel, optimizes at O3 for the host CPU, emits an object and
    links it with the system C compiler driver (`cc`, or $TG_CC).
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def TgCudaMapKernels : Pass<"tg-cuda-map-kernels", "ModuleOp"> {
  let summary = "Turn each kernel on memrefs into GPU kernels with launch "
                "shapes chosen for the device";
  let description = [{
    Runs on a kernel module. Each kernel becomes one GPU kernel per phase
    (`NAME_0`, `NAME_1`, ..., launched in order): element-wise linalg ops as
    grid-stride loops with 16-byte vector accesses where the operands allow,
    reductions with a thread or a block per output, the kernel bodies' row
    loops (`scf.parallel`) with one row per warp and warp-shuffle folds, and
    the rest (loops carrying values across iterations) on one block. The
    kernels land in a `gpu.module` of the module's name; the module attribute
    `tg.cuda_kernels` lists each kernel's operand count and launches.
  }];
  let options = [
    Option<"smCount", "sm-count", "int64_t", "132",
           "streaming multiprocessors of the device (H100 SXM: 132); grids "
           "are capped at 8 blocks of 256 threads per SM">,
    Option<"rowRegisters", "row-registers", "int64_t", "0",
           "at most this many registers a thread in a row phase (a row a "
           "warp), so that more blocks reside on a multiprocessor; 0: what "
           "one block may have">,
    Option<"f32PartialTerms", "f32-partial-terms", "int64_t", "256",
           "a thread adds its share of a float64 sum (the kernel bodies' "
           "wide sums) in float32 where the share is at most this many "
           "terms, then joins the rest in float64; 0: float64 throughout">,
    Option<"columnShare", "column-share", "int64_t", "32",
           "a thread's share of a split column sum (a bias or norm "
           "gradient's column block) is at least this many rows">,
    Option<"lastBlockCombines", "last-block-combines", "bool", "false",
           "where a split column sum's blocks join their shares, the last "
           "block of each group of 32 column blocks to store its partials "
           "combines the group's (a counter in device memory tells it), "
           "instead of a second launch">,
    Option<"columnSumsInRowPass", "column-sums-in-row-pass", "bool", "false",
           "a row phase (a row a warp) followed by column sums over the "
           "same rows (a norm gradient's weight and bias sums) runs as one "
           "launch: a block's warps take 8 rows, then its threads add those "
           "rows' columns, read again from the L1, to sums they keep over "
           "the block's rows; the last block of each 8 joins their sums, "
           "and a second launch combines the groups'">,
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::NVVM::NVVMDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect"];
}

def TgCudaApproximateHalfMath
    : Pass<"tg-cuda-approximate-half-math", "gpu::GPUModuleOp"> {
  let summary = "Compute 16-bit float exp, tanh and division with the GPU's "
                "fast f32 approximations";
  let description = [{
    A bf16 or f16 `math.exp`, `math.exp2`, `math.tanh` or `arith.divf` is
    computed in f32 and rounded to 16 bits. The exact f32 routines (libdevice's
    `__nv_expf`, IEEE `div.rn.f32`) take ten to twenty instructions each; the
    approximations (`__nv_fast_expf`: a multiply and `ex2.approx.f32`;
    `div.approx.f32`, `rcp.approx.f32`) take two or three, and their error
    (a few f32 ulps, plus the exponent's rounding for large arguments: below
    2^-17 relative for |x| < 88) is hundreds of times below the 16-bit
    rounding that follows (2^-9 for bf16, 2^-12 for f16), so a result differs
    from the exact routine's only where the f32 value lies within that error
    of a rounding boundary, and then by one 16-bit ulp. The attention softmax
    of the bf16 GPT-2-medium step was bound by these instructions (72% of
    issue slots busy, 40% of DRAM bandwidth), not by memory. The pass marks
    those ops `afn` (approximate functions), which the NVVM lowering and the
    NVPTX backend honour; so it does f32 ops the kernel bodies marked
    `tg.for_half_floats` (computed in f32 in place of a 16-bit op: a bf16
    softmax row's rescaling exponential, whose approximation error, below
    2^-17 a rescale, stays far below the row's 16-bit rounding; a
    probability's exponential and division where it is written to a 16-bit
    row, the bf16 loss gradient's 50,257 a row). Other f32 and f64 math is
    left exact.
  }];
}

def TgCudaSerializeKernels : Pass<"tg-cuda-serialize-kernels", "ModuleOp"> {
  let summary = "Turn each kernel module compiled to PTX into an exec.binary "
                "with its launches";
  let dependentDialects = ["::mlir::tg::exec::ExecDialect"];
}

#endif // TG_PASSES_TD
