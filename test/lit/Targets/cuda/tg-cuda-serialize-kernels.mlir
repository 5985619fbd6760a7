// RUN: tg-opt %s --split-input-file --verify-diagnostics --tg-cuda-serialize-kernels | FileCheck %s

// The PTX of a compiled kernel module and the launches tg-cuda-map-kernels
// recorded become one exec.binary: kernel k0 runs k0_0 then k0_1, k1 runs
// k1_0; the chip comes from the NVVM target.
// CHECK-NOT: module @kernels
// CHECK: exec.binary @kernels ptx {image = ".version 8.0\0A.target sm_90a\0A", kernels = ["k0", "k1"], launch_block = array<i64: 256, 512, 256>, launch_counts = array<i64: 2, 1>, launch_grid = array<i64: 1056, 1, 4>, launch_shared_bytes = array<i64: 0, 0, 0>, launch_symbols = ["k0_0", "k0_1", "k1_0"], operand_counts = array<i64: 2, 3>, symbols = ["k0", "k1"], target_cpu = "sm_90a"}
module {
  module @kernels attributes {gpu.container_module, tg.cuda_kernels = [
      {name = "k0", operands = 2 : i64, launches = [
        {symbol = "k0_0", grid = 1056 : i64, block = 256 : i64, shared_bytes = 0 : i64},
        {symbol = "k0_1", grid = 1 : i64, block = 512 : i64, shared_bytes = 0 : i64}]},
      {name = "k1", operands = 3 : i64, launches = [
        {symbol = "k1_0", grid = 4 : i64, block = 256 : i64, shared_bytes = 0 : i64}]}]} {
    gpu.binary @kernels [#gpu.object<#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx80">, assembly = ".version 8.0\0A.target sm_90a\0A">]
  }
}

// -----

module {
  // expected-error @+1 {{expected the kernels compiled to one gpu.binary (run the CUDA kernel lowering first)}}
  module @kernels attributes {gpu.container_module, tg.cuda_kernels = []} {
  }
}
