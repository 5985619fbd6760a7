// RUN: tg-opt %s --split-input-file --pass-pipeline='builtin.module(builtin.module(tg-cpu-approximate-math,func.func(convert-linalg-to-loops),expand-strided-metadata,lower-affine,convert-scf-to-cf,convert-math-to-llvm,finalize-memref-to-llvm,convert-arith-to-llvm,convert-cf-to-llvm,convert-func-to-llvm{use-bare-ptr-memref-call-conv},reconcile-unrealized-casts),tg-cpu-serialize-kernels)' --verify-diagnostics | FileCheck %s
// RUN: tg-opt %s --split-input-file --pass-pipeline='builtin.module(builtin.module(func.func(convert-linalg-to-parallel-loops),tg-cpu-parallelize-loops,expand-strided-metadata,lower-affine,convert-scf-to-cf,convert-math-to-llvm,finalize-memref-to-llvm,convert-arith-to-llvm,convert-cf-to-llvm,convert-func-to-llvm{use-bare-ptr-memref-call-conv},reconcile-unrealized-casts),tg-cpu-serialize-kernels)' --verify-diagnostics | FileCheck %s --check-prefix=PAR

// The kernel module, lowered to LLVM, becomes a host shared object in an
// exec.binary of the same name: each kernel with its NAME_packed entry and
// its buffer count; dispatches now refer to the binary.
// CHECK-LABEL: exec.program @step
// CHECK:         exec.dispatch @kernels::@k0_neg
// CHECK:       exec.binary @kernels elf {image = "\7FELF{{.*}}", kernels = ["k0_neg", "k1_copy"], operand_counts = array<i64: 2, 3>, symbols = ["k0_neg_packed", "k1_copy_packed"], target_cpu = "{{.+}}"}
// CHECK-NOT:   module @kernels
exec.program @step attributes {batch_size = 1 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>} {
  %a = exec.resource input "a" at 0 : memref<4xf32>
  %b = exec.resource output "b" at 64 : memref<4xf32>
  %t = exec.dispatch @kernels::@k0_neg(%a) -> (%b) : (memref<4xf32>) -> (memref<4xf32>)
}
module @kernels {
  func.func @k0_neg(%x: memref<4xf32>, %y: memref<4xf32>) {
    linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : memref<4xf32>) outs(%y : memref<4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %n = arith.negf %in : f32
      linalg.yield %n : f32
    }
    return
  }
  func.func @k1_copy(%x: memref<4xf32>, %y: memref<4xf32>, %z: memref<4xf32>) {
    linalg.copy ins(%x : memref<4xf32>) outs(%z : memref<4xf32>)
    return
  }
}

// -----

// The CPU's GEMMs are OpenBLAS sgemm/dgemm: a bf16 program is refused.
exec.program @step attributes {batch_size = 1 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>} {
  %a = exec.resource input "a" at 0 : memref<2x2xbf16>
  // expected-error @+1 {{'exec.gemm' op is in 'bf16', but the CPU target runs matrix products in f32 or f64 only: compile with --dtype=f32 (or precision "fp32" in TRAIN.json), or with --gemm=generated (slow)}}
  %t = exec.gemm(%a, %a) -> %a {m = 2, n = 2, k = 2, batch = 1, stride_a = 4, stride_b = 4, stride_c = 4} : memref<2x2xbf16>, memref<2x2xbf16> -> memref<2x2xbf16>
}

// -----

// A loop that tg-cpu-parallelize-loops outlined: its body and launch are not
// kernels (the body is internal, the launch defined in LLVM IR), and the
// library exports the hook the runtime sets to its thread pool.
// PAR-LABEL: exec.program @step
// PAR:       exec.binary @kernels elf {image = "\7FELF{{.*}}tg_parallel_for_hook{{.*}}", kernels = ["k0_fill"], operand_counts = array<i64: 1>, symbols = ["k0_fill_packed"], target_cpu = "{{.+}}"}
exec.program @step attributes {batch_size = 1 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>} {
  %a = exec.resource output "a" at 0 : memref<512x512xf32>
  %t = exec.dispatch @kernels::@k0_fill() -> (%a) : () -> (memref<512x512xf32>)
}
module @kernels {
  func.func @k0_fill(%x: memref<512x512xf32>) {
    %one = arith.constant 1.0 : f32
    linalg.fill ins(%one : f32) outs(%x : memref<512x512xf32>)
    return
  }
}
