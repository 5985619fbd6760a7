// Llama (model_type "llama"): RMSNorm, RoPE, grouped-query attention, SwiGLU
// MLP, no biases. nn.Linear weights are [out, in].
#include "Families.h"

using namespace mlir;
using namespace mlir::tg::frontend;

std::vector<ParamSpec> mlir::tg::frontend::llamaParameters(const ModelConfig &c) {
  int64_t d = c.hiddenSize, inner = c.intermediateSize;
  int64_t kv = c.numKvHeads * c.headDim();
  ParamInit normal = normalInit(c, false), residual = normalInit(c, true);
  std::vector<ParamSpec> specs = {
      {"model.embed_tokens.weight", {c.vocabSize, d}, normal}};
  for (int64_t i = 0; i < c.numLayers; ++i) {
    std::string p = "model.layers." + std::to_string(i) + ".";
    std::vector<ParamSpec> layer = {
        {p + "input_layernorm.weight", {d}, ParamInit{mlir::tg::InitKind::Ones}},
        {p + "self_attn.q_proj.weight", {d, d}, normal},
        {p + "self_attn.k_proj.weight", {kv, d}, normal},
        {p + "self_attn.v_proj.weight", {kv, d}, normal},
        {p + "self_attn.o_proj.weight", {d, d}, residual},
        {p + "post_attention_layernorm.weight", {d}, ParamInit{mlir::tg::InitKind::Ones}},
        {p + "mlp.gate_proj.weight", {inner, d}, normal},
        {p + "mlp.up_proj.weight", {inner, d}, normal},
        {p + "mlp.down_proj.weight", {d, inner}, residual}};
    specs.insert(specs.end(), layer.begin(), layer.end());
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
  auto proj = [&](const Twine &name, Value x, const std::string &weight) {
    return g.linear(name, x, g.param(weight), Value(), /*weightIsOutIn=*/true);
  };
  auto rope = [&](const Twine &name, Value x) {
    return g.create<tg::RopeOp>(name, x, b.getF64FloatAttr(c.ropeTheta),
                                /*inverse=*/nullptr);
  };

  Value embed = g.param("model.embed_tokens.weight");
  Value h = g.create<tg::EmbeddingOp>("tok_emb", embed, tokens, Value());
  for (int64_t i = 0; i < c.numLayers; ++i) {
    std::string p = "model.layers." + std::to_string(i) + ".";
    std::string n = "h" + std::to_string(i) + "_";
    Value a = rmsNorm(n + "input_norm", h, p + "input_layernorm.weight");
    Value q = g.splitHeads(n + "attn_q", proj(n + "attn_q", a, p + "self_attn.q_proj.weight"), c.numHeads);
    Value k = g.splitHeads(n + "attn_k", proj(n + "attn_k", a, p + "self_attn.k_proj.weight"), c.numKvHeads);
    Value v = g.splitHeads(n + "attn_v", proj(n + "attn_v", a, p + "self_attn.v_proj.weight"), c.numKvHeads);
    q = rope(n + "attn_q_rope", q);
    k = rope(n + "attn_k_rope", k);
    double scale = 1.0 / std::sqrt(double(c.headDim()));
    Value o = g.create<tg::AttentionOp>(n + "attn", q, k, v,
                                        b.getF64FloatAttr(scale),
                                        b.getBoolAttr(true));
    o = proj(n + "attn_o", g.mergeHeads(n + "attn", o),
             p + "self_attn.o_proj.weight");
    h = g.create<tg::AddOp>(n + "attn_residual", h, o);
    Value m = rmsNorm(n + "post_norm", h, p + "post_attention_layernorm.weight");
    Value gate = proj(n + "mlp_gate", m, p + "mlp.gate_proj.weight");
    Value up = proj(n + "mlp_up", m, p + "mlp.up_proj.weight");
    Value act = g.create<tg::MulOp>(n + "mlp_swiglu",
                                    g.create<tg::SiluOp>(n + "mlp_silu", gate), up);
    m = proj(n + "mlp_down", act, p + "mlp.down_proj.weight");
    h = g.create<tg::AddOp>(n + "mlp_residual", h, m);
  }
  h = rmsNorm("norm", h, "model.norm.weight");
  Value head = c.tieWordEmbeddings ? embed : g.param("lm_head.weight");
  return g.linear("logits", h, head, Value(), /*weightIsOutIn=*/true);
}
