// RUN: tg-opt %s --split-input-file --tg-cpu-parallelize-loops | FileCheck %s
// RUN: tg-opt %s --split-input-file --tg-cpu-parallelize-loops=min-work=100 | FileCheck %s --check-prefix=LOW

// A kernel body's row loop (1024 rows of 256, ~1.3M scalar operations) is
// outlined over a range of rows: the body takes [begin, end) and the
// values it cannot recompute (the buffers, a scalar loaded before the
// loop); the views and constants it uses are cloned into it. The kernel
// calls the launch, which the serializer defines, with the row count.
// CHECK-LABEL: func.func @k0_rows
// CHECK-SAME:    (%[[X:.+]]: memref<1024x256xf32>, %[[Y:.+]]: memref<1024x256xf32>, %[[S:.+]]: memref<f32>)
// CHECK:         %[[SCALE:.+]] = memref.load %[[S]][]
// CHECK:         %[[ROWS:.+]] = arith.constant 1024 : index
// CHECK:         call @k0_rows_par0_launch(%[[ROWS]], %[[X]], %[[SCALE]], %[[Y]]) : (index, memref<1024x256xf32>, f32, memref<1024x256xf32>) -> ()
// CHECK-NOT:     scf.parallel
// CHECK:         return
// CHECK:       func.func private @k0_rows_par0(%[[BEGIN:.+]]: index, %[[END:.+]]: index, %[[BX:.+]]: memref<1024x256xf32>, %[[BSCALE:.+]]: f32, %[[BY:.+]]: memref<1024x256xf32>) attributes {llvm.linkage = #llvm.linkage<internal>}
// CHECK-DAG:     %[[FX:.+]] = memref.collapse_shape %[[BX]]
// CHECK-DAG:     %[[FY:.+]] = memref.collapse_shape %[[BY]]
// CHECK-DAG:     %[[C256:.+]] = arith.constant 256 : index
// CHECK:         scf.for %[[ROW:.+]] = %[[BEGIN]] to %[[END]] step
// CHECK:           %[[BASE:.+]] = arith.muli %[[ROW]], %[[C256]]
// CHECK:           scf.for
// CHECK:             memref.load %[[FX]]
// CHECK:             arith.mulf %{{.+}}, %[[BSCALE]]
// CHECK:             memref.store %{{.+}}, %[[FY]]
// CHECK:         return
// CHECK:       func.func private @k0_rows_par0_launch(index, memref<1024x256xf32>, f32, memref<1024x256xf32>)
func.func @k0_rows(%x: memref<1024x256xf32>, %y: memref<1024x256xf32>, %s: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %c1024 = arith.constant 1024 : index
  %flat_x = memref.collapse_shape %x [[0, 1]] : memref<1024x256xf32> into memref<262144xf32>
  %flat_y = memref.collapse_shape %y [[0, 1]] : memref<1024x256xf32> into memref<262144xf32>
  %scale = memref.load %s[] : memref<f32>
  scf.parallel (%r) = (%c0) to (%c1024) step (%c1) {
    %base = arith.muli %r, %c256 : index
    scf.for %i = %c0 to %c256 step %c1 {
      %at = arith.addi %base, %i : index
      %v = memref.load %flat_x[%at] : memref<262144xf32>
      %w = arith.mulf %v, %scale : f32
      memref.store %w, %flat_y[%at] : memref<262144xf32>
    }
    scf.reduce
  }
  return
}

// -----

// An element-wise op's parallel dims (8 x 128 x 256, from linalg): the
// leading two are flattened into the 1024 iterations that threads share,
// each split back into its coordinates once; the last stays a whole inner
// loop (vectorized as before). Non-zero lower bounds and steps map back.
// CHECK-LABEL: func.func @k1_add
// CHECK:         %[[N:.+]] = arith.constant 1024 : index
// CHECK:         call @k1_add_par0_launch(%[[N]], %arg0, %arg1, %arg2)
// CHECK:       func.func private @k1_add_par0(%[[BEGIN:.+]]: index, %[[END:.+]]: index, %[[A:.+]]: memref<8x128x256xf32>, %[[B:.+]]: memref<128x256xf32>, %[[C:.+]]: memref<8x128x256xf32>)
// CHECK-DAG:     %[[C128:.+]] = arith.constant 128 : index
// CHECK-DAG:     %[[C256:.+]] = arith.constant 256 : index
// CHECK:         scf.for %[[F:.+]] = %[[BEGIN]] to %[[END]] step
// CHECK:           %[[J:.+]] = arith.remui %[[F]], %[[C128]]
// CHECK:           %[[I:.+]] = arith.divui %[[F]], %[[C128]]
// CHECK:           scf.for %[[K:.+]] = %{{.+}} to %[[C256]] step
// CHECK:             memref.load %[[A]][%[[I]], %[[J]], %[[K]]]
// CHECK:             memref.load %[[B]][%[[J]], %[[K]]]
// CHECK:             memref.store %{{.+}}, %[[C]][%[[I]], %[[J]], %[[K]]]
func.func @k1_add(%a: memref<8x128x256xf32>, %b: memref<128x256xf32>, %c: memref<8x128x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  scf.parallel (%i, %j, %k) = (%c0, %c0, %c0) to (%c8, %c128, %c256) step (%c1, %c1, %c1) {
    %0 = memref.load %a[%i, %j, %k] : memref<8x128x256xf32>
    %1 = memref.load %b[%j, %k] : memref<128x256xf32>
    %2 = arith.addf %0, %1 : f32
    memref.store %2, %c[%i, %j, %k] : memref<8x128x256xf32>
    scf.reduce
  }
  return
}

// -----

// Every second of 131072 elements, from 2: iteration f is element 2f + 2.
// CHECK-LABEL: func.func private @k2_strided_par0
// CHECK-DAG:     %[[TWO:.+]] = arith.constant 2 : index
// CHECK:         scf.for %[[F:.+]] = %arg0 to %arg1
// CHECK:           %[[OFFSET:.+]] = arith.muli %[[F]], %[[TWO]]
// CHECK:           %[[AT:.+]] = arith.addi %[[OFFSET]], %[[TWO]]
// CHECK:           memref.store %{{.+}}, %arg2[%[[AT]]]
func.func @k2_strided(%x: memref<262146xf32>) {
  %c2 = arith.constant 2 : index
  %end = arith.constant 262146 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i) = (%c2) to (%end) step (%c2) {
    memref.store %zero, %x[%i] : memref<262146xf32>
    scf.reduce
  }
  return
}

// -----

// Vector ops count once per lane: 4096 iterations of three 8-lane ops
// (tg-cpu-vectorize-elementwise's loops) are ~100K scalar operations.
// CHECK-LABEL: func.func @k3_vectors
// CHECK:         call @k3_vectors_par0_launch
// CHECK:       func.func private @k3_vectors_par0(
// CHECK:         vector.load
func.func @k3_vectors(%x: memref<32768xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c4096 = arith.constant 4096 : index
  %two = arith.constant dense<2.0> : vector<8xf32>
  scf.parallel (%i) = (%c0) to (%c4096) step (%c1) {
    %at = arith.muli %i, %c8 : index
    %v = vector.load %x[%at] : memref<32768xf32>, vector<8xf32>
    %w = arith.mulf %v, %two : vector<8xf32>
    vector.store %w, %x[%at] : memref<32768xf32>, vector<8xf32>
    scf.reduce
  }
  return
}

// -----

// What stays on the calling thread: a small loop (16 x 16: handing it to
// other threads would cost more than it runs), a large parallel loop
// nested in a serial one (the outer loop carries its order), and a loop
// with a reduction. With min-work=100 the small loop is outlined too.
// CHECK-LABEL: func.func @k4_serial
// CHECK-NOT:     call
// CHECK:         scf.parallel (%{{.+}}, %{{.+}}) =
// CHECK:         scf.for
// CHECK:           scf.parallel
// CHECK:         scf.parallel {{.+}} -> f32
// CHECK-NOT:   func.func private @k4_serial_par
// LOW-LABEL:   func.func @k4_serial
// LOW:           call @k4_serial_par0_launch
// LOW:           scf.for
// LOW:             scf.parallel
// LOW:           scf.parallel {{.+}} -> f32
// LOW:         func.func private @k4_serial_par0(
// LOW-NOT:     func.func private @k4_serial_par1(
func.func @k4_serial(%small: memref<16x16xf32>, %big: memref<1024x1024xf32>, %sum: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c1024 = arith.constant 1024 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%c16, %c16) step (%c1, %c1) {
    memref.store %zero, %small[%i, %j] : memref<16x16xf32>
    scf.reduce
  }
  scf.for %r = %c0 to %c1024 step %c1 {
    scf.parallel (%c) = (%c0) to (%c1024) step (%c1) {
      memref.store %zero, %big[%r, %c] : memref<1024x1024xf32>
      scf.reduce
    }
  }
  %total = scf.parallel (%r) = (%c0) to (%c1024) step (%c1) init (%zero) -> f32 {
    %v = memref.load %big[%r, %c0] : memref<1024x1024xf32>
    scf.reduce(%v : f32) {
    ^bb0(%lhs: f32, %rhs: f32):
      %s = arith.addf %lhs, %rhs : f32
      scf.reduce.return %s : f32
    }
  }
  memref.store %total, %sum[] : memref<f32>
  return
}

// -----

// Stack scratch at the top of a row loop's body (a static memref.alloca,
// written before it is read in each row) is allocated once per chunk, at
// the outlined body's entry, not in its loop, where the stack would grow by
// it every row.
// CHECK-LABEL: func.func private @k5_scratch_par0
// CHECK-SAME:    (%[[BEGIN:.+]]: index, %[[END:.+]]: index
// CHECK:         %[[SCRATCH:.+]] = memref.alloca() : memref<256xf32>
// CHECK:         scf.for %{{.+}} = %[[BEGIN]] to %[[END]]
// CHECK-NOT:       memref.alloca
// CHECK:           memref.store %{{.+}}, %[[SCRATCH]]
// CHECK:           memref.load %[[SCRATCH]]
// CHECK:         return
func.func @k5_scratch(%x: memref<1024x256xf32>, %y: memref<1024xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %c1024 = arith.constant 1024 : index
  scf.parallel (%r) = (%c0) to (%c1024) step (%c1) {
    %scratch = memref.alloca() : memref<256xf32>
    scf.for %i = %c0 to %c256 step %c1 {
      %v = memref.load %x[%r, %i] : memref<1024x256xf32>
      %w = arith.mulf %v, %v : f32
      memref.store %w, %scratch[%i] : memref<256xf32>
    }
    %last = memref.load %scratch[%c0] : memref<256xf32>
    memref.store %last, %y[%r] : memref<1024xf32>
    scf.reduce
  }
  return
}

// -----

// A row loop too small to split keeps running serially; its scratch is
// allocated once, before it.
// CHECK-LABEL: func.func @k6_serial_scratch
// CHECK:         %[[SCRATCH:.+]] = memref.alloca() : memref<4xf32>
// CHECK-NEXT:    scf.parallel
// CHECK-NOT:       memref.alloca
// CHECK:           memref.store %{{.+}}, %[[SCRATCH]]
func.func @k6_serial_scratch(%x: memref<4xf32>, %y: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.parallel (%r) = (%c0) to (%c4) step (%c1) {
    %scratch = memref.alloca() : memref<4xf32>
    %v = memref.load %x[%r] : memref<4xf32>
    memref.store %v, %scratch[%r] : memref<4xf32>
    %w = memref.load %scratch[%r] : memref<4xf32>
    memref.store %w, %y[%r] : memref<4xf32>
    scf.reduce
  }
  return
}
