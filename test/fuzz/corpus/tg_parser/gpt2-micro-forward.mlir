module attributes {tg.vocab_size = 8 : i64} {
  func.func @forward(%tokens: tensor<1x8xi32> {tg.input = "tokens"}, %targets: tensor<1x8xi32> {tg.input = "targets"}, %wte_w: tensor<8x8xf32> {tg.init = #tg.init<normal, std = 0.02>, tg.param = "transformer.wte.weight"}, %wpe_w: tensor<8x8xf32> {tg.init = #tg.init<normal, std = 0.02>, tg.param = "transformer.wpe.weight"}, %h0_ln_1_w: tensor<8xf32> {tg.init = #tg.init<ones>, tg.param = "transformer.h.0.ln_1.weight"}, %h0_ln_1_b: tensor<8xf32> {tg.init = #tg.init<zeros>, tg.param = "transformer.h.0.ln_1.bias"}, %h0_attn_c_attn_w: tensor<8x24xf32> {tg.init = #tg.init<normal, std = 0.02>, tg.param = "transformer.h.0.attn.c_attn.weight"}, %h0_attn_c_attn_b: tensor<24xf32> {tg.init = #tg.init<zeros>, tg.param = "transformer.h.0.attn.c_attn.bias"}, %h0_attn_c_proj_w: tensor<8x8xf32> {tg.init = #tg.init<normal, std = 0.0141421356>, tg.param = "transformer.h.0.attn.c_proj.weight"}, %h0_attn_c_proj_b: tensor<8xf32> {tg.init = #tg.init<zeros>, tg.param = "transformer.h.0.attn.c_proj.bias"}, %h0_ln_2_w: tensor<8xf32> {tg.init = #tg.init<ones>, tg.param = "transformer.h.0.ln_2.weight"}, %h0_ln_2_b: tensor<8xf32> {tg.init = #tg.init<zeros>, tg.param = "transformer.h.0.ln_2.bias"}, %h0_mlp_c_fc_w: tensor<8x32xf32> {tg.init = #tg.init<normal, std = 0.02>, tg.param = "transformer.h.0.mlp.c_fc.weight"}, %h0_mlp_c_fc_b: tensor<32xf32> {tg.init = #tg.init<zeros>, tg.param = "transformer.h.0.mlp.c_fc.bias"}, %h0_mlp_c_proj_w: tensor<32x8xf32> {tg.init = #tg.init<normal, std = 0.0141421356>, tg.param = "transformer.h.0.mlp.c_proj.weight"}, %h0_mlp_c_proj_b: tensor<8xf32> {tg.init = #tg.init<zeros>, tg.param = "transformer.h.0.mlp.c_proj.bias"}, %ln_f_w: tensor<8xf32> {tg.init = #tg.init<ones>, tg.param = "transformer.ln_f.weight"}, %ln_f_b: tensor<8xf32> {tg.init = #tg.init<zeros>, tg.param = "transformer.ln_f.bias"}) -> (tensor<f32> {tg.output = "loss"}, tensor<1x8x8xf32> {tg.output = "logits"}) {
    %tok_emb = tg.embedding %wte_w[%tokens] : tensor<8x8xf32>, tensor<1x8xi32> -> tensor<1x8x8xf32>
    %pos_emb = tg.slice %wpe_w[[0, 0]] [[8, 8]] : tensor<8x8xf32> -> tensor<8x8xf32>
    %h0_in = tg.add %tok_emb, %pos_emb : tensor<1x8x8xf32>, tensor<8x8xf32> -> tensor<1x8x8xf32>
    %h0_ln_1 = tg.layer_norm %h0_in, %h0_ln_1_w, %h0_ln_1_b {epsilon = 1.000000e-05 : f64} : tensor<1x8x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<1x8x8xf32>
    %h0_attn_qkv = tg.matmul %h0_ln_1, %h0_attn_c_attn_w : tensor<1x8x8xf32>, tensor<8x24xf32> -> tensor<1x8x24xf32>
    %h0_attn_qkv_b = tg.add %h0_attn_qkv, %h0_attn_c_attn_b : tensor<1x8x24xf32>, tensor<24xf32> -> tensor<1x8x24xf32>
    %h0_attn_q = tg.slice %h0_attn_qkv_b[[0, 0, 0]] [[1, 8, 8]] : tensor<1x8x24xf32> -> tensor<1x8x8xf32>
    %h0_attn_q_split = tg.reshape %h0_attn_q : tensor<1x8x8xf32> -> tensor<1x8x2x4xf32>
    %h0_attn_q_heads = tg.transpose %h0_attn_q_split [0, 2, 1, 3] : tensor<1x8x2x4xf32> -> tensor<1x2x8x4xf32>
    %h0_attn_k = tg.slice %h0_attn_qkv_b[[0, 0, 8]] [[1, 8, 8]] : tensor<1x8x24xf32> -> tensor<1x8x8xf32>
    %h0_attn_k_split = tg.reshape %h0_attn_k : tensor<1x8x8xf32> -> tensor<1x8x2x4xf32>
    %h0_attn_k_heads = tg.transpose %h0_attn_k_split [0, 2, 1, 3] : tensor<1x8x2x4xf32> -> tensor<1x2x8x4xf32>
    %h0_attn_v = tg.slice %h0_attn_qkv_b[[0, 0, 16]] [[1, 8, 8]] : tensor<1x8x24xf32> -> tensor<1x8x8xf32>
    %h0_attn_v_split = tg.reshape %h0_attn_v : tensor<1x8x8xf32> -> tensor<1x8x2x4xf32>
    %h0_attn_v_heads = tg.transpose %h0_attn_v_split [0, 2, 1, 3] : tensor<1x8x2x4xf32> -> tensor<1x2x8x4xf32>
    %h0_attn = tg.attention %h0_attn_q_heads, %h0_attn_k_heads, %h0_attn_v_heads {scale = 5.000000e-01 : f64} : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf32>
    %h0_attn_tokens = tg.transpose %h0_attn [0, 2, 1, 3] : tensor<1x2x8x4xf32> -> tensor<1x8x2x4xf32>
    %h0_attn_merge = tg.reshape %h0_attn_tokens : tensor<1x8x2x4xf32> -> tensor<1x8x8xf32>
    %h0_attn_proj = tg.matmul %h0_attn_merge, %h0_attn_c_proj_w : tensor<1x8x8xf32>, tensor<8x8xf32> -> tensor<1x8x8xf32>
    %h0_attn_proj_b = tg.add %h0_attn_proj, %h0_attn_c_proj_b : tensor<1x8x8xf32>, tensor<8xf32> -> tensor<1x8x8xf32>
    %h0_attn_residual = tg.add %h0_in, %h0_attn_proj_b : tensor<1x8x8xf32>, tensor<1x8x8xf32> -> tensor<1x8x8xf32>
    %h0_ln_2 = tg.layer_norm %h0_attn_residual, %h0_ln_2_w, %h0_ln_2_b {epsilon = 1.000000e-05 : f64} : tensor<1x8x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<1x8x8xf32>
    %h0_mlp_fc = tg.matmul %h0_ln_2, %h0_mlp_c_fc_w : tensor<1x8x8xf32>, tensor<8x32xf32> -> tensor<1x8x32xf32>
    %h0_mlp_fc_b = tg.add %h0_mlp_fc, %h0_mlp_c_fc_b : tensor<1x8x32xf32>, tensor<32xf32> -> tensor<1x8x32xf32>
    %h0_mlp_gelu = tg.gelu %h0_mlp_fc_b tanh : tensor<1x8x32xf32>
    %h0_mlp_proj = tg.matmul %h0_mlp_gelu, %h0_mlp_c_proj_w : tensor<1x8x32xf32>, tensor<32x8xf32> -> tensor<1x8x8xf32>
    %h0_mlp_proj_b = tg.add %h0_mlp_proj, %h0_mlp_c_proj_b : tensor<1x8x8xf32>, tensor<8xf32> -> tensor<1x8x8xf32>
    %h0_mlp_residual = tg.add %h0_attn_residual, %h0_mlp_proj_b : tensor<1x8x8xf32>, tensor<1x8x8xf32> -> tensor<1x8x8xf32>
    %ln_f = tg.layer_norm %h0_mlp_residual, %ln_f_w, %ln_f_b {epsilon = 1.000000e-05 : f64} : tensor<1x8x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<1x8x8xf32>
    %logits = tg.matmul %ln_f, %wte_w {transpose_rhs = true} : tensor<1x8x8xf32>, tensor<8x8xf32> -> tensor<1x8x8xf32>
    %loss = tg.cross_entropy %logits, %targets : tensor<1x8x8xf32>, tensor<1x8xi32> -> tensor<f32>
    return %loss, %logits : tensor<f32>, tensor<1x8x8xf32>
  }
}

// op counts: tg.add 7; tg.attention 1; tg.cross_entropy 1; tg.embedding 1; tg.gelu 1; tg.layer_norm 3; tg.matmul 5; tg.reshape 4; tg.slice 4; tg.transpose 4; total 31
