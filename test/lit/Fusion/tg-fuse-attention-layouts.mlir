// RUN: tg-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(tg-fuse-attention-layouts))' | FileCheck %s
// RUN: tg-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(tg-fuse-attention-layouts{remarks=true}))' -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// GPT-2's attention (2 heads of 8): q, k and v sliced out of the fused
// projection and transposed into heads, read by the forward and the
// gradient; the result transposed back into tokens; dO transposed into
// heads; dq, dk and dv transposed and concatenated into the projection's
// gradient. Both flash regions read the projection and dO where they are,
// the forward writes its result in the tokens' layout, the gradient writes
// dq, dk and dv into their slots: no layout region is left.
// CHECK-LABEL: func.func @gpt2_attention
// CHECK: %[[F:.*]]:2 = exec.dispatch_region -> (tensor<1x2x4xf32>, tensor<1x4x2x8xf32>) {
// CHECK-NEXT: %[[QS:.*]] = tg.slice %arg0{{\[\[0, 0, 0\]\]}} {{\[\[1, 4, 16\]\]}}
// CHECK-NEXT: %[[QR:.*]] = tg.reshape %[[QS]] : tensor<1x4x16xf32> -> tensor<1x4x2x8xf32>
// CHECK-NEXT: %[[Q:.*]] = tg.transpose %[[QR]] [0, 2, 1, 3]
// CHECK-NEXT: tg.slice %arg0{{\[\[0, 0, 16\]\]}} {{\[\[1, 4, 16\]\]}}
// CHECK-NEXT: tg.reshape
// CHECK-NEXT: %[[K:.*]] = tg.transpose
// CHECK-NEXT: tg.slice %arg0{{\[\[0, 0, 32\]\]}} {{\[\[1, 4, 16\]\]}}
// CHECK-NEXT: tg.reshape
// CHECK-NEXT: %[[V:.*]] = tg.transpose
// CHECK-NEXT: %[[O:.*]], %[[L:.*]] = tg.flash_attention %[[Q]], %[[K]], %[[V]]
// CHECK-NEXT: %[[OT:.*]] = tg.transpose %[[O]] [0, 2, 1, 3]
// CHECK-NEXT: exec.yield %[[L]], %[[OT]]
// CHECK-NEXT: }
// CHECK-NEXT: %[[OUT:.*]] = tg.reshape %[[F]]#1 : tensor<1x4x2x8xf32> -> tensor<1x4x16xf32>
// CHECK-NEXT: %[[G:.*]] = exec.dispatch_region -> (tensor<1x4x48xf32>) {
// CHECK-COUNT-3: tg.transpose
// CHECK-NEXT: %[[GR:.*]] = tg.reshape %arg1 : tensor<1x4x16xf32> -> tensor<1x4x2x8xf32>
// CHECK-NEXT: %[[DO:.*]] = tg.transpose %[[GR]] [0, 2, 1, 3]
// CHECK-NEXT: %[[DQ:.*]], %[[DK:.*]], %[[DV:.*]] = tg.flash_attention_grad {{.*}}, %[[F]]#1, %[[F]]#0, %[[DO]] {result_tokens
// CHECK-NEXT: %[[DVT:.*]] = tg.transpose %[[DV]] [0, 2, 1, 3]
// CHECK-NEXT: %[[DVR:.*]] = tg.reshape %[[DVT]]
// CHECK-NEXT: %[[DKT:.*]] = tg.transpose %[[DK]] [0, 2, 1, 3]
// CHECK-NEXT: %[[DKR:.*]] = tg.reshape %[[DKT]]
// CHECK-NEXT: %[[DQT:.*]] = tg.transpose %[[DQ]] [0, 2, 1, 3]
// CHECK-NEXT: %[[DQR:.*]] = tg.reshape %[[DQT]]
// CHECK-NEXT: %[[D:.*]] = tg.concat %[[DQR]], %[[DKR]], %[[DVR]] {axis = 2 : i64}
// CHECK-NEXT: exec.yield %[[D]]
// CHECK-NEXT: }
// CHECK-NEXT: return %[[OUT]], %[[G]]
// REMARK: remark: q read in place through 3 views of a 768-byte value: 2 layout kernel(s) fewer once nothing else reads them
// REMARK: remark: k read in place through 3 views of a 768-byte value
// REMARK: remark: v read in place through 3 views of a 768-byte value
// REMARK: remark: results written in place through their views: 1 layout kernel(s) fewer, 256 bytes not written and read back
// REMARK: remark: q read in place
// REMARK: remark: k read in place
// REMARK: remark: v read in place
// REMARK: remark: dO read in place through 2 views of a 256-byte value: 1 layout kernel(s) fewer once nothing else reads them
// REMARK: remark: results written in place through their views: 4 layout kernel(s) fewer, 1536 bytes not written and read back
func.func @gpt2_attention(%qkv: tensor<1x4x48xf32>, %g: tensor<1x4x16xf32>) -> (tensor<1x4x16xf32>, tensor<1x4x48xf32>) {
  %qs = exec.dispatch_region -> (tensor<1x4x16xf32>) {
    %0 = tg.slice %qkv[[0, 0, 0]] [[1, 4, 16]] : tensor<1x4x48xf32> -> tensor<1x4x16xf32>
    exec.yield %0 : tensor<1x4x16xf32>
  }
  %qr = tg.reshape %qs : tensor<1x4x16xf32> -> tensor<1x4x2x8xf32>
  %q = exec.dispatch_region -> (tensor<1x2x4x8xf32>) {
    %0 = tg.transpose %qr [0, 2, 1, 3] : tensor<1x4x2x8xf32> -> tensor<1x2x4x8xf32>
    exec.yield %0 : tensor<1x2x4x8xf32>
  }
  %ks = exec.dispatch_region -> (tensor<1x4x16xf32>) {
    %0 = tg.slice %qkv[[0, 0, 16]] [[1, 4, 16]] : tensor<1x4x48xf32> -> tensor<1x4x16xf32>
    exec.yield %0 : tensor<1x4x16xf32>
  }
  %kr = tg.reshape %ks : tensor<1x4x16xf32> -> tensor<1x4x2x8xf32>
  %k = exec.dispatch_region -> (tensor<1x2x4x8xf32>) {
    %0 = tg.transpose %kr [0, 2, 1, 3] : tensor<1x4x2x8xf32> -> tensor<1x2x4x8xf32>
    exec.yield %0 : tensor<1x2x4x8xf32>
  }
  %vs = exec.dispatch_region -> (tensor<1x4x16xf32>) {
    %0 = tg.slice %qkv[[0, 0, 32]] [[1, 4, 16]] : tensor<1x4x48xf32> -> tensor<1x4x16xf32>
    exec.yield %0 : tensor<1x4x16xf32>
  }
  %vr = tg.reshape %vs : tensor<1x4x16xf32> -> tensor<1x4x2x8xf32>
  %v = exec.dispatch_region -> (tensor<1x2x4x8xf32>) {
    %0 = tg.transpose %vr [0, 2, 1, 3] : tensor<1x4x2x8xf32> -> tensor<1x2x4x8xf32>
    exec.yield %0 : tensor<1x2x4x8xf32>
  }
  %f:2 = exec.dispatch_region -> (tensor<1x2x4x8xf32>, tensor<1x2x4xf32>) {
    %o, %l = tg.flash_attention %q, %k, %v {scale = 0.35 : f64} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>, tensor<1x2x4xf32>
    exec.yield %o, %l : tensor<1x2x4x8xf32>, tensor<1x2x4xf32>
  }
  %ot = exec.dispatch_region -> (tensor<1x4x2x8xf32>) {
    %0 = tg.transpose %f#0 [0, 2, 1, 3] : tensor<1x2x4x8xf32> -> tensor<1x4x2x8xf32>
    exec.yield %0 : tensor<1x4x2x8xf32>
  }
  %or = tg.reshape %ot : tensor<1x4x2x8xf32> -> tensor<1x4x16xf32>
  %gr = tg.reshape %g : tensor<1x4x16xf32> -> tensor<1x4x2x8xf32>
  %dO = exec.dispatch_region -> (tensor<1x2x4x8xf32>) {
    %0 = tg.transpose %gr [0, 2, 1, 3] : tensor<1x4x2x8xf32> -> tensor<1x2x4x8xf32>
    exec.yield %0 : tensor<1x2x4x8xf32>
  }
  %d:3 = exec.dispatch_region -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) {
    %dq, %dk, %dv = tg.flash_attention_grad %q, %k, %v, %ot, %f#1, %dO {result_tokens, scale = 0.35 : f64} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x4x2x8xf32>, tensor<1x2x4xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
    exec.yield %dq, %dk, %dv : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
  }
  %dvt = exec.dispatch_region -> (tensor<1x4x2x8xf32>) {
    %0 = tg.transpose %d#2 [0, 2, 1, 3] : tensor<1x2x4x8xf32> -> tensor<1x4x2x8xf32>
    exec.yield %0 : tensor<1x4x2x8xf32>
  }
  %dvr = tg.reshape %dvt : tensor<1x4x2x8xf32> -> tensor<1x4x16xf32>
  %dkt = exec.dispatch_region -> (tensor<1x4x2x8xf32>) {
    %0 = tg.transpose %d#1 [0, 2, 1, 3] : tensor<1x2x4x8xf32> -> tensor<1x4x2x8xf32>
    exec.yield %0 : tensor<1x4x2x8xf32>
  }
  %dkr = tg.reshape %dkt : tensor<1x4x2x8xf32> -> tensor<1x4x16xf32>
  %dqt = exec.dispatch_region -> (tensor<1x4x2x8xf32>) {
    %0 = tg.transpose %d#0 [0, 2, 1, 3] : tensor<1x2x4x8xf32> -> tensor<1x4x2x8xf32>
    exec.yield %0 : tensor<1x4x2x8xf32>
  }
  %dqr = tg.reshape %dqt : tensor<1x4x2x8xf32> -> tensor<1x4x16xf32>
  %dqkv = exec.dispatch_region -> (tensor<1x4x48xf32>) {
    %0 = tg.concat %dqr, %dkr, %dvr {axis = 2 : i64} : (tensor<1x4x16xf32>, tensor<1x4x16xf32>, tensor<1x4x16xf32>) -> tensor<1x4x48xf32>
    exec.yield %0 : tensor<1x4x48xf32>
  }
  return %or, %dqkv : tensor<1x4x16xf32>, tensor<1x4x48xf32>
}


// -----

// The same with the gradients' concatenation along axis -1 (the last, as 2
// above): the slot of each gradient is found from the end (the axis was read
// as unsigned, and indexed its shapes at -1).
// CHECK-LABEL: func.func @gpt2_attention_negative_axis
// CHECK: exec.dispatch_region
// CHECK: %[[G:.*]] = exec.dispatch_region -> (tensor<1x4x48xf32>) {
// CHECK: tg.flash_attention_grad
// CHECK: %[[D:.*]] = tg.concat {{.*}} {axis = -1 : i64}
// CHECK-NEXT: exec.yield %[[D]]
// CHECK-NEXT: }
// CHECK-NEXT: return
// REMARK: remark: results written in place through their views: 4 layout kernel(s) fewer, 1536 bytes not written and read back
func.func @gpt2_attention_negative_axis(%qkv: tensor<1x4x48xf32>, %g: tensor<1x4x16xf32>) -> (tensor<1x4x16xf32>, tensor<1x4x48xf32>) {
  %qs = exec.dispatch_region -> (tensor<1x4x16xf32>) {
    %0 = tg.slice %qkv[[0, 0, 0]] [[1, 4, 16]] : tensor<1x4x48xf32> -> tensor<1x4x16xf32>
    exec.yield %0 : tensor<1x4x16xf32>
  }
  %qr = tg.reshape %qs : tensor<1x4x16xf32> -> tensor<1x4x2x8xf32>
  %q = exec.dispatch_region -> (tensor<1x2x4x8xf32>) {
    %0 = tg.transpose %qr [0, 2, 1, 3] : tensor<1x4x2x8xf32> -> tensor<1x2x4x8xf32>
    exec.yield %0 : tensor<1x2x4x8xf32>
  }
  %ks = exec.dispatch_region -> (tensor<1x4x16xf32>) {
    %0 = tg.slice %qkv[[0, 0, 16]] [[1, 4, 16]] : tensor<1x4x48xf32> -> tensor<1x4x16xf32>
    exec.yield %0 : tensor<1x4x16xf32>
  }
  %kr = tg.reshape %ks : tensor<1x4x16xf32> -> tensor<1x4x2x8xf32>
  %k = exec.dispatch_region -> (tensor<1x2x4x8xf32>) {
    %0 = tg.transpose %kr [0, 2, 1, 3] : tensor<1x4x2x8xf32> -> tensor<1x2x4x8xf32>
    exec.yield %0 : tensor<1x2x4x8xf32>
  }
  %vs = exec.dispatch_region -> (tensor<1x4x16xf32>) {
    %0 = tg.slice %qkv[[0, 0, 32]] [[1, 4, 16]] : tensor<1x4x48xf32> -> tensor<1x4x16xf32>
    exec.yield %0 : tensor<1x4x16xf32>
  }
  %vr = tg.reshape %vs : tensor<1x4x16xf32> -> tensor<1x4x2x8xf32>
  %v = exec.dispatch_region -> (tensor<1x2x4x8xf32>) {
    %0 = tg.transpose %vr [0, 2, 1, 3] : tensor<1x4x2x8xf32> -> tensor<1x2x4x8xf32>
    exec.yield %0 : tensor<1x2x4x8xf32>
  }
  %f:2 = exec.dispatch_region -> (tensor<1x2x4x8xf32>, tensor<1x2x4xf32>) {
    %o, %l = tg.flash_attention %q, %k, %v {scale = 0.35 : f64} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>, tensor<1x2x4xf32>
    exec.yield %o, %l : tensor<1x2x4x8xf32>, tensor<1x2x4xf32>
  }
  %ot = exec.dispatch_region -> (tensor<1x4x2x8xf32>) {
    %0 = tg.transpose %f#0 [0, 2, 1, 3] : tensor<1x2x4x8xf32> -> tensor<1x4x2x8xf32>
    exec.yield %0 : tensor<1x4x2x8xf32>
  }
  %or = tg.reshape %ot : tensor<1x4x2x8xf32> -> tensor<1x4x16xf32>
  %gr = tg.reshape %g : tensor<1x4x16xf32> -> tensor<1x4x2x8xf32>
  %dO = exec.dispatch_region -> (tensor<1x2x4x8xf32>) {
    %0 = tg.transpose %gr [0, 2, 1, 3] : tensor<1x4x2x8xf32> -> tensor<1x2x4x8xf32>
    exec.yield %0 : tensor<1x2x4x8xf32>
  }
  %d:3 = exec.dispatch_region -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) {
    %dq, %dk, %dv = tg.flash_attention_grad %q, %k, %v, %ot, %f#1, %dO {result_tokens, scale = 0.35 : f64} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x4x2x8xf32>, tensor<1x2x4xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
    exec.yield %dq, %dk, %dv : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
  }
  %dvt = exec.dispatch_region -> (tensor<1x4x2x8xf32>) {
    %0 = tg.transpose %d#2 [0, 2, 1, 3] : tensor<1x2x4x8xf32> -> tensor<1x4x2x8xf32>
    exec.yield %0 : tensor<1x4x2x8xf32>
  }
  %dvr = tg.reshape %dvt : tensor<1x4x2x8xf32> -> tensor<1x4x16xf32>
  %dkt = exec.dispatch_region -> (tensor<1x4x2x8xf32>) {
    %0 = tg.transpose %d#1 [0, 2, 1, 3] : tensor<1x2x4x8xf32> -> tensor<1x4x2x8xf32>
    exec.yield %0 : tensor<1x4x2x8xf32>
  }
  %dkr = tg.reshape %dkt : tensor<1x4x2x8xf32> -> tensor<1x4x16xf32>
  %dqt = exec.dispatch_region -> (tensor<1x4x2x8xf32>) {
    %0 = tg.transpose %d#0 [0, 2, 1, 3] : tensor<1x2x4x8xf32> -> tensor<1x4x2x8xf32>
    exec.yield %0 : tensor<1x4x2x8xf32>
  }
  %dqr = tg.reshape %dqt : tensor<1x4x2x8xf32> -> tensor<1x4x16xf32>
  %dqkv = exec.dispatch_region -> (tensor<1x4x48xf32>) {
    %0 = tg.concat %dqr, %dkr, %dvr {axis = -1 : i64} : (tensor<1x4x16xf32>, tensor<1x4x16xf32>, tensor<1x4x16xf32>) -> tensor<1x4x48xf32>
    exec.yield %0 : tensor<1x4x48xf32>
  }
  return %or, %dqkv : tensor<1x4x16xf32>, tensor<1x4x48xf32>
}

// -----

// q is a quarter of a larger value that nothing else of the kernel reads:
// read through its views, it would keep the whole value alive until the
// kernel runs. Left as it is.
// CHECK-LABEL: func.func @root_larger_than_read
// CHECK: exec.dispatch_region
// CHECK-NEXT: tg.slice
// CHECK: tg.reshape
// CHECK: exec.dispatch_region
// CHECK-NEXT: tg.transpose
// CHECK: exec.dispatch_region
// CHECK-NEXT: tg.flash_attention
// REMARK: remark: q not read through its views: their root (1024 bytes) is larger than what the kernel reads of it (256 bytes) and would be kept alive longer
func.func @root_larger_than_read(%x: tensor<1x4x64xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %qs = exec.dispatch_region -> (tensor<1x4x16xf32>) {
    %0 = tg.slice %x[[0, 0, 0]] [[1, 4, 16]] : tensor<1x4x64xf32> -> tensor<1x4x16xf32>
    exec.yield %0 : tensor<1x4x16xf32>
  }
  %qr = tg.reshape %qs : tensor<1x4x16xf32> -> tensor<1x4x2x8xf32>
  %q = exec.dispatch_region -> (tensor<1x2x4x8xf32>) {
    %0 = tg.transpose %qr [0, 2, 1, 3] : tensor<1x4x2x8xf32> -> tensor<1x2x4x8xf32>
    exec.yield %0 : tensor<1x2x4x8xf32>
  }
  %f:2 = exec.dispatch_region -> (tensor<1x2x4x8xf32>, tensor<1x2x4xf32>) {
    %o, %l = tg.flash_attention %q, %k, %v {scale = 0.35 : f64} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>, tensor<1x2x4xf32>
    exec.yield %o, %l : tensor<1x2x4x8xf32>, tensor<1x2x4xf32>
  }
  return %f#0 : tensor<1x2x4x8xf32>
}

// -----

// The log-sum-exp is read before the result's transpose runs: the merged
// kernel runs where the flash kernel did, so the reader still comes after
// it (the gradient's dq, dk and dv transposes are read so, one by one).
// CHECK-LABEL: func.func @read_before_the_consumer
// CHECK: %[[F:.*]]:2 = exec.dispatch_region
// CHECK-NEXT: %[[O:.*]], %[[L:.*]] = tg.flash_attention
// CHECK-NEXT: %[[T:.*]] = tg.transpose %[[O]]
// CHECK-NEXT: exec.yield %[[L]], %[[T]]
// CHECK: exec.dispatch_region
// CHECK-NEXT: tg.exp %[[F]]#0
// CHECK: return %[[F]]#1
// REMARK: remark: results written in place through their views: 1 layout kernel(s) fewer
func.func @read_before_the_consumer(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x4xf32>) {
  %f:2 = exec.dispatch_region -> (tensor<1x2x4x8xf32>, tensor<1x2x4xf32>) {
    %o, %l = tg.flash_attention %q, %k, %v {scale = 0.35 : f64} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>, tensor<1x2x4xf32>
    exec.yield %o, %l : tensor<1x2x4x8xf32>, tensor<1x2x4xf32>
  }
  %e = exec.dispatch_region -> (tensor<1x2x4xf32>) {
    %0 = tg.exp %f#1 : tensor<1x2x4xf32>
    exec.yield %0 : tensor<1x2x4xf32>
  }
  %ot = exec.dispatch_region -> (tensor<1x4x2x8xf32>) {
    %0 = tg.transpose %f#0 [0, 2, 1, 3] : tensor<1x2x4x8xf32> -> tensor<1x4x2x8xf32>
    exec.yield %0 : tensor<1x4x2x8xf32>
  }
  return %ot, %e : tensor<1x4x2x8xf32>, tensor<1x2x4xf32>
}

// -----

// A transpose that moves the head dim: its rows would not be contiguous,
// which the flash kernels need. Left as it is.
// CHECK-LABEL: func.func @head_dim_not_contiguous
// CHECK: exec.dispatch_region
// CHECK-NEXT: tg.transpose %arg0 [0, 1, 3, 2]
// CHECK: exec.dispatch_region
// CHECK-NEXT: tg.flash_attention
// REMARK: remark: layouts around it not fused: the flash kernels could not read or write them in place (a view would leave the head dim strided, or reshape elements that are not contiguous)
func.func @head_dim_not_contiguous(%x: tensor<1x2x8x4xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %q = exec.dispatch_region -> (tensor<1x2x4x8xf32>) {
    %0 = tg.transpose %x [0, 1, 3, 2] : tensor<1x2x8x4xf32> -> tensor<1x2x4x8xf32>
    exec.yield %0 : tensor<1x2x4x8xf32>
  }
  %f:2 = exec.dispatch_region -> (tensor<1x2x4x8xf32>, tensor<1x2x4xf32>) {
    %o, %l = tg.flash_attention %q, %k, %v {scale = 0.35 : f64} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>, tensor<1x2x4xf32>
    exec.yield %o, %l : tensor<1x2x4x8xf32>, tensor<1x2x4xf32>
  }
  return %f#0 : tensor<1x2x4x8xf32>
}
