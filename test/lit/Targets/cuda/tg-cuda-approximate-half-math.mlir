// RUN: tg-opt %s --split-input-file --pass-pipeline='builtin.module(gpu.module(tg-cuda-approximate-half-math))' | FileCheck %s

// 16-bit exp, exp2, tanh and division (scalars and lane vectors) take the
// fast approximations; flags already there are kept.
// CHECK-LABEL: gpu.func @half
// CHECK: math.exp %{{.*}} fastmath<afn> : bf16
// CHECK: math.exp2 %{{.*}} fastmath<afn> : f16
// CHECK: math.tanh %{{.*}} fastmath<afn> : vector<8xbf16>
// CHECK: arith.divf %{{.*}}, %{{.*}} fastmath<reassoc,afn> : bf16
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @half(%x: bf16, %h: f16, %v: vector<8xbf16>, %m: memref<4xbf16>, %n: memref<4xf16>, %w: memref<4xvector<8xbf16>>) kernel {
      %c0 = arith.constant 0 : index
      %e = math.exp %x : bf16
      %e2 = math.exp2 %h : f16
      %t = math.tanh %v : vector<8xbf16>
      %d = arith.divf %e, %x fastmath<reassoc> : bf16
      memref.store %d, %m[%c0] : memref<4xbf16>
      memref.store %e2, %n[%c0] : memref<4xf16>
      memref.store %t, %w[%c0] : memref<4xvector<8xbf16>>
      gpu.return
    }
  }
}

// -----

// f32 and f64 math stays exact, and 16-bit ops other than these are left
// alone.
// CHECK-LABEL: gpu.func @wide
// CHECK-NOT: afn
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @wide(%x: f32, %y: f64, %b: bf16, %m: memref<4xf32>, %n: memref<4xf64>, %o: memref<4xbf16>) kernel {
      %c0 = arith.constant 0 : index
      %e = math.exp %x : f32
      %d = arith.divf %e, %x : f32
      %t = math.tanh %y : f64
      %s = math.sqrt %b : bf16
      %p = arith.mulf %s, %b : bf16
      memref.store %d, %m[%c0] : memref<4xf32>
      memref.store %t, %n[%c0] : memref<4xf64>
      memref.store %p, %o[%c0] : memref<4xbf16>
      gpu.return
    }
  }
}

// -----

// An f32 exp the kernel bodies compute in place of a bf16 one (a bf16 softmax
// row's rescaling, tg.for_half_floats) is approximated too; its unmarked
// neighbour stays exact.
// CHECK-LABEL: gpu.func @for_half_floats
// CHECK: math.exp %{{.*}} fastmath<afn> {tg.for_half_floats} : vector<8xf32>
// CHECK-NOT: afn
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @for_half_floats(%v: vector<8xf32>, %x: f32, %m: memref<4xvector<8xf32>>, %n: memref<4xf32>) kernel {
      %c0 = arith.constant 0 : index
      %s = math.exp %v {tg.for_half_floats} : vector<8xf32>
      %e = math.exp %x : f32
      memref.store %s, %m[%c0] : memref<4xvector<8xf32>>
      memref.store %e, %n[%c0] : memref<4xf32>
      gpu.return
    }
  }
}
