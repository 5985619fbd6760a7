// GPT-2 / GPT-3 (model_type "gpt2"): pre-LN blocks, learned positions, biases,
// GELU MLP, final LN, tied or separate LM head. Conv1D weights are [in, out].
#include "Families.h"

using namespace mlir;
using namespace mlir::tg::frontend;

std::vector<ParamSpec> mlir::tg::frontend::gpt2Parameters(const ModelConfig &c) {
  int64_t d = c.hiddenSize, inner = c.intermediateSize;
  ParamInit normal = normalInit(c, false), residual = normalInit(c, true);
  std::vector<ParamSpec> specs = {
      {"transformer.wte.weight", {c.vocabSize, d}, normal},
      {"transformer.wpe.weight", {c.maxPositions, d}, normal}};
  for (int64_t i = 0; i < c.numLayers; ++i) {
    std::string p = "transformer.h." + std::to_string(i) + ".";
    std::vector<ParamSpec> layer = {
        {p + "ln_1.weight", {d}, ParamInit{mlir::tg::InitKind::Ones}},
        {p + "ln_1.bias", {d}, ParamInit{mlir::tg::InitKind::Zeros}},
        {p + "attn.c_attn.weight", {d, 3 * d}, normal},
        {p + "attn.c_attn.bias", {3 * d}, ParamInit{mlir::tg::InitKind::Zeros}},
        {p + "attn.c_proj.weight", {d, d}, residual},
        {p + "attn.c_proj.bias", {d}, ParamInit{mlir::tg::InitKind::Zeros}},
        {p + "ln_2.weight", {d}, ParamInit{mlir::tg::InitKind::Ones}},
        {p + "ln_2.bias", {d}, ParamInit{mlir::tg::InitKind::Zeros}},
        {p + "mlp.c_fc.weight", {d, inner}, normal},
        {p + "mlp.c_fc.bias", {inner}, ParamInit{mlir::tg::InitKind::Zeros}},
        {p + "mlp.c_proj.weight", {inner, d}, residual},
        {p + "mlp.c_proj.bias", {d}, ParamInit{mlir::tg::InitKind::Zeros}}};
    specs.insert(specs.end(), layer.begin(), layer.end());
  }
  specs.push_back({"transformer.ln_f.weight", {d}, ParamInit{mlir::tg::InitKind::Ones}});
  specs.push_back({"transformer.ln_f.bias", {d}, ParamInit{mlir::tg::InitKind::Zeros}});
  if (!c.tieWordEmbeddings)
    specs.push_back({"lm_head.weight", {c.vocabSize, d}, normal});
  return specs;
}

Value mlir::tg::frontend::buildGpt2Logits(GraphBuilder &g, const ModelConfig &c,
                                    Value tokens) {
  auto tokenShape = cast<RankedTensorType>(tokens.getType()).getShape();
  int64_t seq = tokenShape[1], d = c.hiddenSize;
  double eps = c.normEpsilon;
  auto approx = c.geluTanh ? tg::GeluApproximation::tanh
                           : tg::GeluApproximation::none;
  auto layerNorm = [&](const Twine &name, Value x, const std::string &p) {
    return g.create<tg::LayerNormOp>(name, x, g.param(p + ".weight"),
                                     g.param(p + ".bias"),
                                     g.builder().getF64FloatAttr(eps));
  };
  auto conv1d = [&](const Twine &name, Value x, const std::string &p) {
    return g.linear(name, x, g.param(p + ".weight"), g.param(p + ".bias"),
                    /*weightIsOutIn=*/false);
  };

  Value wte = g.param("transformer.wte.weight");
  Value tok = g.create<tg::EmbeddingOp>("tok_emb", wte, tokens, Value());
  Value pos = g.create<tg::SliceOp>("pos_emb", g.param("transformer.wpe.weight"),
                                    ArrayRef<int64_t>{0, 0},
                                    ArrayRef<int64_t>{seq, d});
  Value h = g.create<tg::AddOp>("h0_in", tok, pos);
  for (int64_t i = 0; i < c.numLayers; ++i) {
    std::string p = "transformer.h." + std::to_string(i) + ".";
    std::string n = "h" + std::to_string(i) + "_";
    Value a = layerNorm(n + "ln_1", h, p + "ln_1");
    Value qkv = conv1d(n + "attn_qkv", a, p + "attn.c_attn");
    auto slice = [&](const char *what, int64_t k) {
      Value part = g.create<tg::SliceOp>(
          n + "attn_" + what, qkv, ArrayRef<int64_t>{0, 0, k * d},
          ArrayRef<int64_t>{tokenShape[0], seq, d});
      return g.splitHeads(n + "attn_" + what, part, c.numHeads);
    };
    Value q = slice("q", 0), k = slice("k", 1), v = slice("v", 2);
    // Hugging Face's GPT2Attention: scores / sqrt(head dim) unless
    // scale_attn_weights is false, and / (layer index + 1) with
    // scale_attn_by_inverse_layer_idx. reorder_and_upcast_attn only moves
    // the scaling before the product and computes it in f32: the same
    // function in an f32 or f64 step (tgc refuses it under bf16).
    double scale = c.scaleAttnWeights ? 1.0 / std::sqrt(double(c.headDim())) : 1.0;
    if (c.scaleAttnByInverseLayerIdx)
      scale /= double(i + 1);
    Value o = g.create<tg::AttentionOp>(n + "attn", q, k, v,
                                        g.builder().getF64FloatAttr(scale),
                                        g.builder().getBoolAttr(true),
                                        g.builder().getI64IntegerAttr(0));
    o = g.mergeHeads(n + "attn", o);
    o = conv1d(n + "attn_proj", o, p + "attn.c_proj");
    h = g.create<tg::AddOp>(n + "attn_residual", h, o);
    Value m = layerNorm(n + "ln_2", h, p + "ln_2");
    m = conv1d(n + "mlp_fc", m, p + "mlp.c_fc");
    m = g.create<tg::GeluOp>(n + "mlp_gelu", m, approx);
    m = conv1d(n + "mlp_proj", m, p + "mlp.c_proj");
    h = g.create<tg::AddOp>(n + "mlp_residual", h, m);
  }
  h = layerNorm("ln_f", h, "transformer.ln_f");
  Value head = c.tieWordEmbeddings ? wte : g.param("lm_head.weight");
  return g.linear("logits", h, head, Value(), /*weightIsOutIn=*/true);
}
