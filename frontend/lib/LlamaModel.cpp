// Llama (model_type "llama"; "qwen2": the same layers with biases on q/k/v;
// "mistral": the same layers, compiled only for sequences within its
// attention window): RMSNorm, RoPE (optionally scaled: linear or Llama 3.1's bands),
// grouped-query attention, SwiGLU MLP, biases only with attention_bias /
// mlp_bias (Llama) or on q/k/v (Qwen2). nn.Linear weights are [out, in]; the heads are
// head_dim wide, which need not be hidden_size / num_attention_heads.
#include "Families.h"

using namespace mlir;
using namespace mlir::tg::frontend;

std::vector<ParamSpec> mlir::tg::frontend::llamaParameters(const ModelConfig &c) {
  int64_t d = c.hiddenSize, inner = c.intermediateSize;
  int64_t q = c.numHeads * c.headDim(), kv = c.numKvHeads * c.headDim();
  ParamInit normal = normalInit(c, false), residual = normalInit(c, true);
  ParamInit zeros{mlir::tg::InitKind::Zeros};
  std::vector<ParamSpec> specs = {
      {"model.embed_tokens.weight", {c.vocabSize, d}, normal}};
  for (int64_t i = 0; i < c.numLayers; ++i) {
    std::string p = "model.layers." + std::to_string(i) + ".";
    auto linear = [&](const std::string &name, int64_t out, int64_t in,
                      ParamInit init, bool bias) {
      specs.push_back({p + name + ".weight", {out, in}, init});
      if (bias)
        specs.push_back({p + name + ".bias", {out}, zeros});
    };
    specs.push_back({p + "input_layernorm.weight", {d}, ParamInit{mlir::tg::InitKind::Ones}});
    linear("self_attn.q_proj", q, d, normal, c.qkvBias);
    linear("self_attn.k_proj", kv, d, normal, c.qkvBias);
    linear("self_attn.v_proj", kv, d, normal, c.qkvBias);
    linear("self_attn.o_proj", d, q, residual, c.outputBias);
    specs.push_back({p + "post_attention_layernorm.weight", {d}, ParamInit{mlir::tg::InitKind::Ones}});
    linear("mlp.gate_proj", inner, d, normal, c.mlpBias);
    linear("mlp.up_proj", inner, d, normal, c.mlpBias);
    linear("mlp.down_proj", d, inner, residual, c.mlpBias);
  }
  specs.push_back({"model.norm.weight", {d}, ParamInit{mlir::tg::InitKind::Ones}});
  if (!c.tieWordEmbeddings)
    specs.push_back({"lm_head.weight", {c.vocabSize, d}, normal});
  return specs;
}

Value mlir::tg::frontend::buildLlamaLogits(GraphBuilder &g, const ModelConfig &c,
                                     Value tokens) {
  OpBuilder &b = g.builder();
  auto rmsNorm = [&](const Twine &name, Value x, const std::string &weight) {
    return g.create<tg::RmsNormOp>(name, x, g.param(weight),
                                   b.getF64FloatAttr(c.normEpsilon));
  };
  // `weight` names an nn.Linear's weight; its bias, when `bias`, is the
  // sibling ".bias".
  auto proj = [&](const Twine &name, Value x, const std::string &weight,
                  bool bias) {
    Value biasValue =
        bias ? g.param(StringRef(weight).drop_back(6).str() + "bias") : Value();
    return g.linear(name, x, g.param(weight), biasValue,
                    /*weightIsOutIn=*/true);
  };
  FloatAttr factor, low, high, context;
  if (c.ropeScaling != ModelConfig::RopeScaling::None)
    factor = b.getF64FloatAttr(c.ropeFactor);
  if (c.ropeScaling == ModelConfig::RopeScaling::Llama3) {
    low = b.getF64FloatAttr(c.ropeLowFreqFactor);
    high = b.getF64FloatAttr(c.ropeHighFreqFactor);
    context = b.getF64FloatAttr(double(c.ropeOriginalMaxPositions));
  }
  auto rope = [&](const Twine &name, Value x) {
    return g.create<tg::RopeOp>(name, x, b.getF64FloatAttr(c.ropeTheta),
                                /*inverse=*/nullptr, factor, low, high,
                                context);
  };

  Value embed = g.param("model.embed_tokens.weight");
  Value h = g.create<tg::EmbeddingOp>("tok_emb", embed, tokens, Value());
  for (int64_t i = 0; i < c.numLayers; ++i) {
    std::string p = "model.layers." + std::to_string(i) + ".";
    std::string n = "h" + std::to_string(i) + "_";
    Value a = rmsNorm(n + "input_norm", h, p + "input_layernorm.weight");
    bool ab = c.qkvBias, mb = c.mlpBias;
    Value q = g.splitHeads(n + "attn_q", proj(n + "attn_q", a, p + "self_attn.q_proj.weight", ab), c.numHeads);
    Value k = g.splitHeads(n + "attn_k", proj(n + "attn_k", a, p + "self_attn.k_proj.weight", ab), c.numKvHeads);
    Value v = g.splitHeads(n + "attn_v", proj(n + "attn_v", a, p + "self_attn.v_proj.weight", ab), c.numKvHeads);
    q = rope(n + "attn_q_rope", q);
    k = rope(n + "attn_k_rope", k);
    double scale = 1.0 / std::sqrt(double(c.headDim()));
    // Mistral's window masks something only on sequences longer than it.
    int64_t seq = cast<RankedTensorType>(q.getType()).getDimSize(2);
    int64_t window = c.slidingWindow && seq > c.slidingWindow ? c.slidingWindow : 0;
    Value o = g.create<tg::AttentionOp>(n + "attn", q, k, v,
                                        b.getF64FloatAttr(scale),
                                        b.getBoolAttr(true),
                                        b.getI64IntegerAttr(window));
    o = proj(n + "attn_o", g.mergeHeads(n + "attn", o),
             p + "self_attn.o_proj.weight", c.outputBias);
    h = g.create<tg::AddOp>(n + "attn_residual", h, o);
    Value m = rmsNorm(n + "post_norm", h, p + "post_attention_layernorm.weight");
    Value gate = proj(n + "mlp_gate", m, p + "mlp.gate_proj.weight", mb);
    Value up = proj(n + "mlp_up", m, p + "mlp.up_proj.weight", mb);
    Value act = g.create<tg::MulOp>(n + "mlp_swiglu",
                                    g.create<tg::SiluOp>(n + "mlp_silu", gate), up);
    m = proj(n + "mlp_down", act, p + "mlp.down_proj.weight", mb);
    h = g.create<tg::AddOp>(n + "mlp_residual", h, m);
  }
  h = rmsNorm("norm", h, "model.norm.weight");
  Value head = c.tieWordEmbeddings ? embed : g.param("lm_head.weight");
  return g.linear("logits", h, head, Value(), /*weightIsOutIn=*/true);
}
