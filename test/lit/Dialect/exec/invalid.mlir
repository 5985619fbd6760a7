// RUN: tg-opt %s --split-input-file --verify-diagnostics

// Each verifier of the exec dialect, one case each.

// A program's mesh names one size per axis.
// expected-error @+1 {{'exec.program' op has 2 mesh axes but 1 mesh sizes}}
exec.program @p attributes {batch_size = 1 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data", "tensor"], mesh_shape = array<i64: 2>} {
}

// -----

// Mesh axes have at least one device.
// expected-error @+1 {{'exec.program' op mesh axis 'data' has size 0; sizes must be >= 1}}
exec.program @p attributes {batch_size = 1 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 0>} {
}

// -----

// Only resources, views and commands run in a program.
exec.program @p attributes {batch_size = 1 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>} {
  // expected-error @+1 {{'arith.constant' op cannot be in an exec.program}}
  %c = arith.constant 1 : index
}

// -----

// Resources have static shapes.
// expected-error @+1 {{'exec.resource' op needs a static, identity-layout memref}}
%r = exec.resource scratch : memref<?xf32>

// -----

// State resources are named.
// expected-error @+1 {{'exec.resource' op of kind 'parameter' needs a name}}
%r = exec.resource parameter : memref<4xf32>

// -----

// Only parameters are initialised.
// expected-error @+1 {{'exec.resource' op has an init rule but is not a parameter}}
%r = exec.resource input "x" {init = #tg.init<zeros>} : memref<4xf32>

// -----

// A constant carries its value...
// expected-error @+1 {{'exec.resource' op of kind 'constant' needs a value}}
%r = exec.resource constant : memref<4xf32>

// -----

// ... of the buffer's type.
// expected-error @+1 {{'exec.resource' op value of type 'tensor<3xf32>' does not match the buffer 'memref<4xf32>'}}
%r = exec.resource constant {value = dense<1.0> : tensor<3xf32>} : memref<4xf32>

// -----

// Only constants have values.
// expected-error @+1 {{'exec.resource' op has a value but is not a constant}}
%r = exec.resource scratch {value = dense<1.0> : tensor<4xf32>} : memref<4xf32>

// -----

// New state replaces state, not scratch...
%s = exec.resource scratch : memref<4xf32>
// expected-error @+1 {{'exec.resource' op updates a buffer that is not a state resource}}
%r = exec.resource scratch updates(%s : memref<4xf32>) : memref<4xf32>

// -----

// ... of the same type.
%p = exec.resource parameter "w" : memref<4xf32>
// expected-error @+1 {{'exec.resource' op updates 'memref<4xf32>' with a buffer of type 'memref<4xf64>'}}
%r = exec.resource scratch updates(%p : memref<4xf32>) : memref<4xf64>

// -----

// Offsets are bytes into the arena.
// expected-error @+1 {{'exec.resource' op has a negative offset}}
%r = exec.resource scratch at -64 : memref<4xf32>

// -----

// A view without an offset keeps the element count.
%r = exec.resource scratch : memref<4x2xf32>
// expected-error @+1 {{'exec.view' op cannot view 'memref<4x2xf32>' as 'memref<6xf32>': element counts differ (a part of a buffer needs an offset)}}
%v = exec.view %r : memref<4x2xf32> to memref<6xf32>

// -----

// ... and the element type.
%r = exec.resource scratch : memref<4x2xf32>
// expected-error @+1 {{'exec.view' op cannot view 'memref<4x2xf32>' as 'memref<8xi32>': element types differ}}
%v = exec.view %r : memref<4x2xf32> to memref<8xi32>

// -----

// A view at an offset stays inside its source.
%r = exec.resource scratch : memref<4x2xf32>
// expected-error @+1 {{'exec.view' op cannot view 6 elements from element 4 of 'memref<4x2xf32>': it has 8}}
%v = exec.view %r[4] : memref<4x2xf32> to memref<6xf32>

// -----

// A view larger than its source, at offset 0 (the unsigned room check once
// wrapped around and let it through).
%r = exec.resource scratch : memref<4x2xf32>
// expected-error @+1 {{'exec.view' op cannot view 12 elements from element 0 of 'memref<4x2xf32>': it has 8}}
%v = exec.view %r[0] : memref<4x2xf32> to memref<12xf32>

// -----

// A dispatched kernel exists...
%a = exec.resource scratch : memref<4xf32>
// expected-error @+1 {{'exec.dispatch' op kernel @kernels::@missing does not exist}}
%t = exec.dispatch @kernels::@missing(%a) -> (%a) : (memref<4xf32>) -> (memref<4xf32>)
module @kernels {
}

// -----

// ... takes the buffers it is given (memref kernels: inputs then outputs)...
%a = exec.resource scratch : memref<4xf32>
// expected-error @+1 {{'exec.dispatch' op passes 1 inputs and 1 outputs to a kernel of type '(memref<4xf32>) -> ()'}}
%t = exec.dispatch @kernels::@k(%a) -> (%a) : (memref<4xf32>) -> (memref<4xf32>)
module @kernels {
  func.func @k(%x: memref<4xf32>) {
    return
  }
}

// -----

// ... of the types it takes (tensor kernels: inputs -> results).
%a = exec.resource scratch : memref<4xf32>
%b = exec.resource scratch : memref<8xf32>
// expected-error @+1 {{'exec.dispatch' op operand #1 is 'memref<8xf32>' but the kernel takes 'tensor<4xf32>'}}
%t = exec.dispatch @kernels::@k(%a) -> (%b) : (memref<4xf32>) -> (memref<8xf32>)
module @kernels {
  func.func @k(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}

// -----

// A serialized kernel is listed in its binary...
%a = exec.resource scratch : memref<4xf32>
// expected-error @+1 {{'exec.dispatch' op kernel 'k1' is not in @kernels::@k1}}
%t = exec.dispatch @kernels::@k1(%a) -> (%a) : (memref<4xf32>) -> (memref<4xf32>)
exec.binary @kernels elf {image = "\7FELF", kernels = ["k0"], operand_counts = array<i64: 2>, symbols = ["k0_packed"], target_cpu = "x86-64"}

// -----

// ... with the number of buffers it takes.
%a = exec.resource scratch : memref<4xf32>
// expected-error @+1 {{'exec.dispatch' op passes 2 buffers to kernel 'k0', which takes 3}}
%t = exec.dispatch @kernels::@k0(%a) -> (%a) : (memref<4xf32>) -> (memref<4xf32>)
exec.binary @kernels elf {image = "\7FELF", kernels = ["k0"], operand_counts = array<i64: 3>, symbols = ["k0_packed"], target_cpu = "x86-64"}

// -----

// A binary lists a symbol and an operand count per kernel.
// expected-error @+1 {{'exec.binary' op has 1 kernels, 1 symbols and 2 operand counts}}
exec.binary @kernels elf {image = "\7FELF", kernels = ["k0"], operand_counts = array<i64: 3, 2>, symbols = ["k0_packed"], target_cpu = "x86-64"}

// -----

// expected-error @+1 {{'exec.binary' op has an empty image}}
exec.binary @kernels elf {image = "", kernels = [], operand_counts = array<i64>, symbols = [], target_cpu = "x86-64"}

// -----

// A GEMM multiplies one element type...
%a = exec.resource scratch : memref<2x4xf32>
%b = exec.resource scratch : memref<4x8xf64>
%c = exec.resource scratch : memref<2x8xf32>
// expected-error @+1 {{'exec.gemm' op needs a, b and c of one element type}}
%t = exec.gemm(%a, %b) -> %c {m = 2, n = 8, k = 4, batch = 1, stride_a = 8, stride_b = 0, stride_c = 16} : memref<2x4xf32>, memref<4x8xf64> -> memref<2x8xf32>

// -----

// ... of floats...
%a = exec.resource scratch : memref<2x4xi32>
// expected-error @+1 {{'exec.gemm' op supports f16, bf16, f32 and f64, not 'i32'}}
%t = exec.gemm(%a, %a) -> %a {m = 2, n = 2, k = 2, batch = 1, stride_a = 0, stride_b = 0, stride_c = 0} : memref<2x4xi32>, memref<2x4xi32> -> memref<2x4xi32>

// -----

// ... with positive sizes...
%a = exec.resource scratch : memref<2x4xf32>
// expected-error @+1 {{'exec.gemm' op needs m, n, k and batch >= 1}}
%t = exec.gemm(%a, %a) -> %a {m = 0, n = 2, k = 2, batch = 1, stride_a = 0, stride_b = 0, stride_c = 0} : memref<2x4xf32>, memref<2x4xf32> -> memref<2x4xf32>

// -----

// A bias gradient comes with GELU's derivative only...
%a = exec.resource scratch : memref<2x4xf32>
%b = exec.resource scratch : memref<4x8xf32>
%c = exec.resource scratch : memref<2x8xf32>
%g = exec.resource scratch : memref<8xf32>
// expected-error @+1 {{'exec.gemm' op writes a bias gradient only with activation gelu_tanh_grad}}
%t = exec.gemm(%a, %b) -> %c bias_grad(%g : memref<8xf32>) {m = 2, n = 8, k = 4, batch = 1, stride_a = 8, stride_b = 0, stride_c = 16} : memref<2x4xf32>, memref<4x8xf32> -> memref<2x8xf32>

// -----

// ... has n elements...
%a = exec.resource scratch : memref<2x4xf32>
%b = exec.resource scratch : memref<4x8xf32>
%c = exec.resource scratch : memref<2x8xf32>
%x = exec.resource scratch : memref<2x8xf32>
%g = exec.resource scratch : memref<2xf32>
// expected-error @+1 {{'exec.gemm' op needs a bias_grad of n = 8 elements of 'f32', not 'memref<2xf32>'}}
%t = exec.gemm(%a, %b) -> %c aux(%x : memref<2x8xf32>) activation gelu_tanh_grad bias_grad(%g : memref<2xf32>) {m = 2, n = 8, k = 4, batch = 1, stride_a = 8, stride_b = 0, stride_c = 16} : memref<2x4xf32>, memref<4x8xf32> -> memref<2x8xf32>

// -----

// ... of its own storage.
%a = exec.resource scratch : memref<2x4xf32>
%b = exec.resource scratch : memref<4x8xf32>
%c = exec.resource scratch : memref<2x8xf32>
%x = exec.resource scratch : memref<2x8xf32>
%g = exec.view %c[0] : memref<2x8xf32> to memref<8xf32>
// expected-error @+1 {{'exec.gemm' op writes its bias_grad into the storage of a, b, c or aux}}
%t = exec.gemm(%a, %b) -> %c aux(%x : memref<2x8xf32>) activation gelu_tanh_grad bias_grad(%g : memref<8xf32>) {m = 2, n = 8, k = 4, batch = 1, stride_a = 8, stride_b = 0, stride_c = 16} : memref<2x4xf32>, memref<4x8xf32> -> memref<2x8xf32>

// -----

// An addend has c's m x n elements...
%a = exec.resource scratch : memref<2x4xf32>
%b = exec.resource scratch : memref<4x8xf32>
%c = exec.resource scratch : memref<2x8xf32>
%x = exec.resource scratch : memref<8xf32>
// expected-error @+1 {{'exec.gemm' op needs an addend of m x n = 16 elements of 'f32', not 'memref<8xf32>'}}
%t = exec.gemm(%a, %b) -> %c addend(%x : memref<8xf32>) {m = 2, n = 8, k = 4, batch = 1, stride_a = 8, stride_b = 0, stride_c = 16} : memref<2x4xf32>, memref<4x8xf32> -> memref<2x8xf32>

// -----

// ... for one packed product without an activation...
%a = exec.resource scratch : memref<2x4xf32>
%b = exec.resource scratch : memref<4x8xf32>
%c = exec.resource scratch : memref<2x8xf32>
%x = exec.resource scratch : memref<2x8xf32>
%y = exec.resource scratch : memref<2x8xf32>
// expected-error @+1 {{'exec.gemm' op with an addend needs one product (batch 1), a packed c and no activation}}
%t = exec.gemm(%a, %b) -> %c aux(%y : memref<2x8xf32>) activation gelu_tanh addend(%x : memref<2x8xf32>) {m = 2, n = 8, k = 4, batch = 1, stride_a = 8, stride_b = 0, stride_c = 16} : memref<2x4xf32>, memref<4x8xf32> -> memref<2x8xf32>

// -----

// ... in storage apart from c's.
%a = exec.resource scratch : memref<2x4xf32>
%b = exec.resource scratch : memref<4x8xf32>
%c = exec.resource scratch : memref<2x8xf32>
%x = exec.view %c[0] : memref<2x8xf32> to memref<16xf32>
// expected-error @+1 {{'exec.gemm' op adds an addend from the storage of c}}
%t = exec.gemm(%a, %b) -> %c addend(%x : memref<16xf32>) {m = 2, n = 8, k = 4, batch = 1, stride_a = 8, stride_b = 0, stride_c = 16} : memref<2x4xf32>, memref<4x8xf32> -> memref<2x8xf32>

// -----

// ... within its buffers.
%a = exec.resource scratch : memref<3x2x4xf32>
%b = exec.resource scratch : memref<4x8xf32>
%c = exec.resource scratch : memref<3x2x8xf32>
// expected-error @+1 {{'exec.gemm' op operand 'a' has 24 elements; batch 4 (inner 1) with strides 8, 0 and leading dimension 4 needs 32}}
%t = exec.gemm(%a, %b) -> %c {m = 2, n = 8, k = 4, batch = 4, stride_a = 8, stride_b = 0, stride_c = 16} : memref<3x2x4xf32>, memref<4x8xf32> -> memref<3x2x8xf32>

// -----

// A copy moves equal byte counts.
%a = exec.resource scratch : memref<4xf32>
%b = exec.resource scratch : memref<4xf64>
// expected-error @+1 {{'exec.copy' op copies 16 bytes into 32}}
%t = exec.copy %a -> %b : memref<4xf32> -> memref<4xf64>

// -----

exec.program @p attributes {batch_size = 1 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 4>} {
  %a = exec.resource scratch : memref<16xf32>
  %b = exec.resource scratch : memref<8xf32>
  // Collectives run over an axis of the program's mesh...
  // expected-error @+1 {{'exec.all_reduce' op runs over mesh axis 'tensor', which the program's mesh ["data"] does not have}}
  %t0 = exec.all_reduce sum %a -> %a over "tensor" : memref<16xf32> -> memref<16xf32>
}

// -----

exec.program @p attributes {batch_size = 1 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 4>} {
  %a = exec.resource scratch : memref<16xf32>
  %b = exec.resource scratch : memref<8xf32>
  // ... an all-reduce keeps the size...
  // expected-error @+1 {{'exec.all_reduce' op over 'data' (size 4) cannot take 'memref<16xf32>' to 'memref<8xf32>'}}
  %t0 = exec.all_reduce sum %a -> %b over "data" : memref<16xf32> -> memref<8xf32>
}

// -----

exec.program @p attributes {batch_size = 1 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 4>} {
  %a = exec.resource scratch : memref<16xf32>
  %b = exec.resource scratch : memref<8xf32>
  // ... a reduce-scatter keeps 1/size of it...
  // expected-error @+1 {{'exec.reduce_scatter' op over 'data' (size 4) cannot take 'memref<16xf32>' to 'memref<8xf32>'}}
  %t0 = exec.reduce_scatter sum %a -> %b over "data" : memref<16xf32> -> memref<8xf32>
}

// -----

exec.program @p attributes {batch_size = 1 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 4>} {
  %a = exec.resource scratch : memref<16xf32>
  %b = exec.resource scratch : memref<8xf32>
  // ... an all-gather gets size times as much, of the same element type...
  // expected-error @+1 {{'exec.all_gather' op over 'data' (size 4) cannot take 'memref<8xf32>' to 'memref<16xf32>'}}
  %t0 = exec.all_gather %b -> %a over "data" : memref<8xf32> -> memref<16xf32>
}

// -----

exec.program @p attributes {batch_size = 1 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 2>} {
  %a = exec.resource scratch : memref<4xf32>
  %b = exec.resource scratch : memref<8xi32>
  // expected-error @+1 {{'exec.all_gather' op needs one element type, not 'f32' and 'i32'}}
  %t0 = exec.all_gather %a -> %b over "data" : memref<4xf32> -> memref<8xi32>
}

// -----

exec.program @p attributes {batch_size = 1 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 2>} {
  %a = exec.resource scratch : memref<4xi64>
  // ... that the communication libraries can reduce.
  // expected-error @+1 {{'exec.all_reduce' op has element type 'i64'; collectives take f32, f64, bf16, f16 or i32}}
  %t0 = exec.all_reduce sum %a -> %a over "data" : memref<4xi64> -> memref<4xi64>
}

// -----

exec.program @p attributes {batch_size = 1 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["pipe"], mesh_shape = array<i64: 2>} {
  %a = exec.resource scratch : memref<4xf32>
  // ... and a peer is a rank of the axis.
  // expected-error @+1 {{'exec.send' op peer 2 is outside mesh axis 'pipe' of size 2}}
  %t0 = exec.send %a to 2 over "pipe" : memref<4xf32>
}

// -----

exec.program @p attributes {batch_size = 1 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["pipe"], mesh_shape = array<i64: 2>} {
  %a = exec.resource scratch : memref<4xf32>
  // expected-error @+1 {{'exec.recv' op peer -1 is outside mesh axis 'pipe' of size 2}}
  %t0 = exec.recv %a from -1 over "pipe" : memref<4xf32>
}

// -----

// Collectives need a program (and its mesh).
%a = exec.resource scratch : memref<4xf32>
// expected-error @+1 {{'exec.all_reduce' op must be inside an exec.program}}
%t0 = exec.all_reduce sum %a -> %a over "data" : memref<4xf32> -> memref<4xf32>

// -----

// A dispatch region returns what it yields.
func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{'exec.dispatch_region' op yields 'tensor<4xf32>' but returns 'tensor<8xf32>'}}
  %r = exec.dispatch_region -> (tensor<8xf32>) {
    %a = tg.exp %x : tensor<4xf32>
    exec.yield %a : tensor<4xf32>
  }
  return
}

// -----

// A host shared object is called, not launched.
// expected-error @+1 {{'exec.binary' op is a host shared object and cannot have launches}}
exec.binary @kernels elf {image = "\7FELF", kernels = ["k0"], operand_counts = array<i64: 1>, symbols = ["k0_packed"], target_cpu = "x86-64", launch_counts = array<i64: 1>, launch_symbols = ["k0_0"], launch_grid = array<i64: 1>, launch_block = array<i64: 32>, launch_shared_bytes = array<i64: 0>}

// -----

// A PTX binary has a launch count per kernel.
// expected-error @+1 {{'exec.binary' op has 0 launch counts for 1 kernels}}
exec.binary @kernels ptx {image = ".version 8.0", kernels = ["k0"], operand_counts = array<i64: 1>, symbols = ["k0"], target_cpu = "sm_90a"}

// -----

// Every kernel launches at least once.
// expected-error @+1 {{'exec.binary' op has a kernel with no launch}}
exec.binary @kernels ptx {image = ".version 8.0", kernels = ["k0"], operand_counts = array<i64: 1>, symbols = ["k0"], target_cpu = "sm_90a", launch_counts = array<i64: 0>}

// -----

// The launch arrays are parallel.
// expected-error @+1 {{'exec.binary' op has 2 launches by its counts, 2 launch symbols, 1 grids, 2 block sizes and 2 shared-memory sizes}}
exec.binary @kernels ptx {image = ".version 8.0", kernels = ["k0"], operand_counts = array<i64: 1>, symbols = ["k0"], target_cpu = "sm_90a", launch_counts = array<i64: 2>, launch_symbols = ["k0_0", "k0_1"], launch_grid = array<i64: 4>, launch_block = array<i64: 256, 256>, launch_shared_bytes = array<i64: 0, 0>}

// -----

// CUDA blocks hold 1 to 1024 threads.
// expected-error @+1 {{'exec.binary' op launch 0 ("k0_0") has grid 4, block 2048 and 0 shared bytes: a CUDA launch needs a grid of at least one block of 1 to 1024 threads}}
exec.binary @kernels ptx {image = ".version 8.0", kernels = ["k0"], operand_counts = array<i64: 1>, symbols = ["k0"], target_cpu = "sm_90a", launch_counts = array<i64: 1>, launch_symbols = ["k0_0"], launch_grid = array<i64: 4>, launch_block = array<i64: 2048>, launch_shared_bytes = array<i64: 0>}

// -----

// A strided operand's rows hold its columns...
%a = exec.resource scratch : memref<64xf32>
%b = exec.resource scratch : memref<4x8xf32>
%c = exec.resource scratch : memref<2x8xf32>
// expected-error @+1 {{'exec.gemm' op operand 'a' has rows of 4 elements but leading dimension 3, or a negative batch stride}}
%t = exec.gemm(%a, %b) -> %c {m = 2, n = 8, k = 4, batch = 1, stride_a = 0, stride_b = 0, stride_c = 0, lda = 3} : memref<64xf32>, memref<4x8xf32> -> memref<2x8xf32>

// -----

// ... and a two-level batch divides the batch.
%a = exec.resource scratch : memref<64xf32>
%b = exec.resource scratch : memref<4x8xf32>
%c = exec.resource scratch : memref<6x8xf32>
// expected-error @+1 {{'exec.gemm' op has inner_batch 2, which does not divide batch 3}}
%t = exec.gemm(%a, %b) -> %c {m = 2, n = 8, k = 4, batch = 3, stride_a = 8, stride_b = 0, stride_c = 16, inner_batch = 2} : memref<64xf32>, memref<4x8xf32> -> memref<6x8xf32>

// -----

// exec.attention: the runtime's flash kernels take head dim 64 or 128 ...
%q = exec.resource scratch : memref<1x1x64x32xbf16>
%o = exec.resource scratch : memref<1x1x64x32xbf16>
%l = exec.resource scratch : memref<1x1x64xf32>
// expected-error @+1 {{'exec.attention' op has head dim 32; the kernels take 64 or 128}}
%t = exec.attention(%q, %q, %q) -> (%o, %l) {batch = 1, query_heads = 1, key_heads = 1, query_len = 64, key_len = 64, head_dim = 32, scale = 0.125, causal = true, window = 0, strides = array<i64: 0, 0, 32, 0, 0, 32, 0, 0, 32, 0, 0, 32>} : (memref<1x1x64x32xbf16>, memref<1x1x64x32xbf16>, memref<1x1x64x32xbf16>) -> (memref<1x1x64x32xbf16>, memref<1x1x64xf32>)

// -----

// ... a rotary position embedding has one frequency a pair of the head dim ...
%q = exec.resource scratch : memref<1x1x64x64xbf16>
%o = exec.resource scratch : memref<1x1x64x64xbf16>
%l = exec.resource scratch : memref<1x1x64xf32>
// expected-error @+1 {{'exec.attention' op needs 32 finite, non-negative rope frequencies (one a pair of the head dim), not 2}}
%t = exec.attention(%q, %q, %q) -> (%o, %l) {batch = 1, query_heads = 1, key_heads = 1, query_len = 64, key_len = 64, head_dim = 64, scale = 0.125, causal = true, window = 0, strides = array<i64: 0, 0, 64, 0, 0, 64, 0, 0, 64, 0, 0, 64>, rope_frequencies = array<f64: 1.0, 0.5>} : (memref<1x1x64x64xbf16>, memref<1x1x64x64xbf16>, memref<1x1x64x64xbf16>) -> (memref<1x1x64x64xbf16>, memref<1x1x64xf32>)

// -----

// ... and cuDNN's graph, as the runtime builds it, cannot rotate.
%q = exec.resource scratch : memref<1x1x64x64xbf16>
%o = exec.resource scratch : memref<1x1x64x64xbf16>
%l = exec.resource scratch : memref<1x1x64xf32>
// expected-error @+1 {{'exec.attention' op cudnn with rope frequencies: the runtime's cuDNN graph cannot rotate (drop cudnn)}}
%t = exec.attention(%q, %q, %q) -> (%o, %l) {batch = 1, query_heads = 1, key_heads = 1, query_len = 64, key_len = 64, head_dim = 64, scale = 0.125, causal = true, window = 0, cudnn, rope_frequencies = array<f64: 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0>, strides = array<i64: 0, 0, 64, 0, 0, 64, 0, 0, 64, 0, 0, 64>} : (memref<1x1x64x64xbf16>, memref<1x1x64x64xbf16>, memref<1x1x64x64xbf16>) -> (memref<1x1x64x64xbf16>, memref<1x1x64xf32>)

// -----

// ... and each bf16 operand must hold its [B, H, T, D] at its strides:
// rows 8 elements apart would read past the buffer.
%q = exec.resource scratch : memref<1x1x64x64xbf16>
%o = exec.resource scratch : memref<1x1x64x64xbf16>
%l = exec.resource scratch : memref<1x1x64xf32>
// expected-error @+1 {{'exec.attention' op operand 1 must be a bf16 buffer holding [1, 1, 64, 64] at strides 0, 0, 128 (non-negative multiples of 8)}}
%t = exec.attention(%q, %q, %q) -> (%o, %l) {batch = 1, query_heads = 1, key_heads = 1, query_len = 64, key_len = 64, head_dim = 64, scale = 0.125, causal = true, window = 0, strides = array<i64: 0, 0, 64, 0, 0, 128, 0, 0, 64, 0, 0, 64>} : (memref<1x1x64x64xbf16>, memref<1x1x64x64xbf16>, memref<1x1x64x64xbf16>) -> (memref<1x1x64x64xbf16>, memref<1x1x64xf32>)

// -----

// The gradient has six inputs and four outputs.
%q = exec.resource scratch : memref<1x1x64x64xbf16>
%o = exec.resource scratch : memref<1x1x64x64xbf16>
%l = exec.resource scratch : memref<1x1x64xf32>
// expected-error @+1 {{'exec.attention' op needs 6 inputs and 4 outputs with `gradient`}}
%t = exec.attention(%q, %q, %q) -> (%o, %l) {gradient, batch = 1, query_heads = 1, key_heads = 1, query_len = 64, key_len = 64, head_dim = 64, scale = 0.125, causal = true, window = 0, strides = array<i64>} : (memref<1x1x64x64xbf16>, memref<1x1x64x64xbf16>, memref<1x1x64x64xbf16>) -> (memref<1x1x64x64xbf16>, memref<1x1x64xf32>)

// -----

// Packs (exec-fuse-horizontal): a member lives in a resource of its kind and
// element type, inside its elements, and leaves updates and placement to
// the pack; a pack is unnamed, its members disjoint.
exec.program @p attributes {batch_size = 1 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>} {
  %p = exec.resource scratch : memref<2x16xf32>
  %m = exec.resource scratch in %p[0] : memref<2x16xf32> : memref<16xf32>
  // expected-error @+1 {{'exec.resource' op is packed into a buffer that is not a resource outside any pack, or a view of one}}
  %n = exec.resource scratch in %m[0] : memref<16xf32> : memref<8xf32>
}

// -----

exec.program @p attributes {batch_size = 1 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>} {
  %p = exec.resource scratch : memref<2x16xf32>
  // expected-error @+1 {{'exec.resource' op of kind 'parameter' is packed into a resource of kind 'scratch'}}
  %m = exec.resource parameter "w" in %p[0] : memref<2x16xf32> : memref<16xf32>
}

// -----

exec.program @p attributes {batch_size = 1 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>} {
  %p = exec.resource scratch : memref<2x16xf32>
  // expected-error @+1 {{'exec.resource' op cannot be packed into 'memref<2x16xf32>': element types differ}}
  %m = exec.resource scratch in %p[0] : memref<2x16xf32> : memref<16xbf16>
}

// -----

exec.program @p attributes {batch_size = 1 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>} {
  %p = exec.resource scratch : memref<2x16xf32>
  // expected-error @+1 {{'exec.resource' op cannot take 16 elements from element 24 of 'memref<2x16xf32>'}}
  %m = exec.resource scratch in %p[24] : memref<2x16xf32> : memref<16xf32>
}

// -----

exec.program @p attributes {batch_size = 1 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>} {
  %w = exec.resource parameter "w" : memref<16xf32>
  %p = exec.resource scratch : memref<2x16xf32>
  // expected-error @+1 {{'exec.resource' op is packed, so its pack, not the member, updates state and is placed}}
  %m = exec.resource scratch in %p[0] : memref<2x16xf32> updates(%w : memref<16xf32>) : memref<16xf32>
}

// -----

exec.program @p attributes {batch_size = 1 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>} {
  // expected-error @+1 {{'exec.resource' op packs resources, so it has no name or init rule of its own (its members have)}}
  %p = exec.resource parameter "all" : memref<2x16xf32>
  %m = exec.resource parameter "w" in %p[0] : memref<2x16xf32> : memref<16xf32>
}

// -----

exec.program @p attributes {batch_size = 1 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>} {
  // expected-error @+1 {{'exec.resource' op has members overlapping at element 8}}
  %p = exec.resource scratch : memref<2x16xf32>
  %a = exec.resource scratch in %p[0] : memref<2x16xf32> : memref<16xf32>
  %b = exec.resource scratch in %p[8] : memref<2x16xf32> : memref<16xf32>
}

// -----

exec.program @p attributes {batch_size = 1 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>} {
  %p = exec.resource input : memref<2x16xf32>
  // expected-error @+1 {{'exec.resource' op of kind 'input' cannot be packed (only parameters, moments, compute copies and scratch)}}
  %m = exec.resource input "x" in %p[0] : memref<2x16xf32> : memref<16xf32>
}

// -----

exec.program @p attributes {batch_size = 1 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>} {
  %p = exec.resource scratch : memref<40xf32>
  // expected-error @+1 {{'exec.resource' op starts at byte 8 of its pack, not a multiple of 64}}
  %m = exec.resource scratch in %p[2] : memref<40xf32> : memref<16xf32>
}
