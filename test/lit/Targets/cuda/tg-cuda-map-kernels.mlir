// RUN: tg-opt %s --split-input-file --verify-diagnostics --tg-cuda-map-kernels | FileCheck %s
// row-registers caps the registers of row phases only (more resident
// blocks); an elementwise phase keeps what its block allows.
// RUN: tg-opt %s --split-input-file --verify-diagnostics --tg-cuda-map-kernels=row-registers=80 | FileCheck %s --check-prefix=ROWS80
// ROWS80-LABEL: module @add_bias
// ROWS80: nvvm.maxnreg = 255
// ROWS80-LABEL: module @row_max
// ROWS80: gpu.func @k0_0
// ROWS80-SAME: nvvm.maxnreg = 80
// f32-partial-terms bounds the shares a thread sums in float32: 0 keeps
// float64 throughout; a bias gradient's 256-row shares stay float64 under 128.
// RUN: tg-opt %s --split-input-file --verify-diagnostics --tg-cuda-map-kernels=f32-partial-terms=0 | FileCheck %s --check-prefix=F64
// RUN: tg-opt %s --split-input-file --verify-diagnostics --tg-cuda-map-kernels=f32-partial-terms=128 | FileCheck %s --check-prefix=TERMS128
// F64-LABEL: module @bias_gradient_shares
// F64: gpu.func @k0_0(
// F64: scf.for {{.*}} iter_args(%{{.*}} = %cst{{.*}}) -> (f64)
// F64-NOT: f32
// F64: gpu.func @k0_1(
// F64-LABEL: module @whole_sum
// F64: scf.for {{.*}} -> (vector<4xf64>)
// F64: vector.reduction <add>, %{{.*}} : vector<4xf64> into f64
// column-share bounds a thread's share of a split column sum from below:
// 16 rows give @thread_rows_split 256 shares, 32 partials a column.
// RUN: tg-opt %s --split-input-file --verify-diagnostics --tg-cuda-map-kernels=column-share=16 | FileCheck %s --check-prefix=SHARE16
// SHARE16-LABEL: module @thread_rows_split
// SHARE16-SAME: {block = 256 : i64, grid = 32 : i64, shared_bytes = 0 : i64, symbol = "k0_0"}
// SHARE16: memref.global "private" @k0_0_partials0 : memref<1024xf32>
// SHARE16-LABEL: module @thread_rows_split_per_thread
// last-block-combines: a split column sum whose blocks join their shares is
// one launch. Warp 0 stores the block's partials and fences them; thread 0
// counts the block into its row group's arrivals (a zeroed global); the
// group's last block (16 of them: the count was 15) resets the count, and
// after a fence its warps fold the group's 32 rows' partials as launch 2
// would, a row a warp. A split sum whose blocks do not combine keeps its
// second launch.
// RUN: tg-opt %s --split-input-file --verify-diagnostics --tg-cuda-map-kernels=last-block-combines=true | FileCheck %s --check-prefix=LAST
// LAST-LABEL: module @thread_rows_split_per_thread
// LAST-NOT: atomic_rmw
// LAST: gpu.func @k0_1(
// LAST-LABEL: module @column_blocks_combined
// LAST-SAME: tg.cuda_kernels = [{launches = [{block = 256 : i64, grid = 16 : i64, shared_bytes = 0 : i64, symbol = "k0_0"}], name = "k0"
// LAST-DAG: memref.global "private" @k0_0_arrivals : memref<1xi32> = dense<0>
// LAST-DAG: memref.global "private" @k0_0_partials0 : memref<512xf64>
// LAST-DAG: memref.global "private" @k0_0_partials2 : memref<512xf32>
// LAST: gpu.func @k0_0({{.*}}) workgroup({{.*}}, %[[FLAG:.*]] : memref<1xi32, #gpu.address_space<workgroup>>)
// LAST: %[[WARP:.*]] = arith.divui %thread_id_x, %c32
// LAST: %[[GROUP:.*]] = arith.remui %{{.*}}, %c1
// LAST: memref.store {{.*}} : memref<512xf32>
// LAST-NEXT: nvvm.memory.barrier <gpu>
// LAST-NEXT: }
// LAST: gpu.barrier
// LAST: %[[COUNTED:.*]] = memref.atomic_rmw addi %{{.*}}, %[[COUNTS:.*]][%[[GROUP]]] : (i32, memref<1xi32>) -> i32
// LAST: %[[LAST:.*]] = arith.cmpi eq, %[[COUNTED]], %c15_i32
// LAST: memref.store %{{.*}}, %[[FLAG]]
// LAST-NEXT: scf.if %[[LAST]]
// LAST: %[[ZERO:.*]] = arith.constant 0 : i32
// LAST-NEXT: memref.store %[[ZERO]], %[[COUNTS]][%[[GROUP]]] : memref<1xi32>
// LAST: gpu.barrier
// LAST: %{{.*}} = memref.load %[[FLAG]]
// LAST: scf.if
// LAST-NEXT: nvvm.memory.barrier <gpu>
// LAST: scf.for %[[R:.*]] = %[[WARP]] to %c32{{.*}} step %c8
// LAST: %[[GROUP_BASE:.*]] = arith.muli %[[GROUP]], %c32
// LAST-NEXT: %{{.*}} = arith.addi %[[GROUP_BASE]], %[[R]] : index
// LAST: memref.load {{.*}} : memref<512xf64>
// LAST-COUNT-5: gpu.shuffle  xor
// LAST: memref.load {{.*}} : memref<512xf64>
// LAST: memref.load {{.*}} : memref<512xf32>
// LAST: memref.store {{.*}} : memref<64xbf16>
// LAST: memref.store {{.*}} : memref<32xf32>
// LAST-NOT: gpu.func
// LAST-LABEL: module @bias_gradient_shares
// LAST-SAME: tg.cuda_kernels = [{launches = [{block = 256 : i64, grid = 512 : i64, shared_bytes = 0 : i64, symbol = "k0_0"}], name = "k0"
// LAST: memref.global "private" @k0_0_arrivals : memref<128xi32> = dense<0>
// TERMS128-LABEL: module @bias_gradient_shares
// TERMS128: scf.for {{.*}} -> (f64)
// TERMS128: %[[PART:.*]] = scf.for {{.*}} step %c1{{.*}} -> (f64)
// TERMS128: memref.store %[[PART]], %{{.*}}[%thread_id_x] : memref<256xf64, #gpu.address_space<workgroup>>
// TERMS128: memref.store %{{.*}}, %{{.*}} : memref<16384xf64>
// column-sums-in-row-pass: a row phase and the column sums over its rows
// after it are one launch. Each block takes groups of 8 rows in turn (here
// 16 blocks, a group each), a row a warp; after a barrier its threads add
// the group's rows' columns, a column block and a slice of the rows each (32
// column blocks: 8 slices of a row), in f32 carried from group to group; the
// slices join in order through shared memory; slice 0 stores the block's
// partials and fences them; thread 0 counts the block into its group of 8
// (a zeroed global), and the group's last (the count was 7) fences and joins
// their partials in block order for launch 2, which folds 2 a column block.
// A column sum with no row phase before it is split as before.
// RUN: tg-opt %s --split-input-file --verify-diagnostics --tg-cuda-map-kernels=column-sums-in-row-pass=true | FileCheck %s --check-prefix=ROWCOL
// ROWCOL-LABEL: module @thread_rows_split
// ROWCOL-SAME: symbol = "k0_1"
// ROWCOL-LABEL: module @rows_then_column_sums
// ROWCOL-SAME: tg.cuda_kernels = [{launches = [{block = 256 : i64, grid = 16 : i64, shared_bytes = 0 : i64, symbol = "k0_0"}, {block = 256 : i64, grid = 4 : i64, shared_bytes = 0 : i64, symbol = "k0_1"}], name = "k0"
// ROWCOL-DAG: memref.global "private" @k0_0_arrivals : memref<2xi32> = dense<0>
// ROWCOL-DAG: memref.global "private" @k0_0_partials0 : memref<64xf64>
// ROWCOL-DAG: memref.global "private" @k0_0_block_partials0 : memref<512xf64>
// ROWCOL: gpu.func @k0_0(
// ROWCOL-SAME: nvvm.maxnreg = 128
// ROWCOL: %[[SUMS:.*]]:2 = scf.for %[[GROUP:.*]] = %block_id_x to %c16{{.*}} step %c16{{.*}} iter_args({{.*}}) -> (f32, f32)
// ROWCOL: arith.muli %[[GROUP]], %c8
// ROWCOL: vector.store
// ROWCOL: gpu.barrier
// ROWCOL-NEXT: arith.constant 1 : index
// ROWCOL: scf.for {{.*}} -> (f32, f32)
// ROWCOL: memref.load %arg1
// ROWCOL: arith.addf {{.*}} : f32
// ROWCOL: arith.extf %[[SUMS]]#0 : f32 to f64
// ROWCOL: gpu.barrier
// ROWCOL-COUNT-7: memref.load {{.*}}#gpu.address_space<workgroup>>
// ROWCOL: memref.store {{.*}} : memref<512xf64>
// ROWCOL: nvvm.memory.barrier <gpu>
// ROWCOL: memref.atomic_rmw addi
// ROWCOL: arith.cmpi eq, %{{.*}}, %c7_i32
// ROWCOL: nvvm.memory.barrier <gpu>
// ROWCOL-COUNT-8: memref.load {{.*}} : memref<512xf64>
// ROWCOL: memref.store {{.*}} : memref<64xf64>
// ROWCOL: gpu.func @k0_1(
// ROWCOL: memref.load {{.*}} : memref<64xf64>
// ROWCOL-COUNT-5: gpu.shuffle  xor
// ROWCOL: memref.store {{.*}} : memref<256xf32>
// ROWCOL-NOT: gpu.func
// ROWCOL-LABEL: module @unmarked_column_sums
// ROWCOL-SAME: symbol = "k0_2"
// ROWCOL-LABEL: module @column_sums_reading_before
// ROWCOL-SAME: symbol = "k0_2"
// RUN: tg-opt %s --split-input-file --verify-diagnostics "--tg-cuda-map-kernels=column-sums-in-row-pass=true sm-count=4" | FileCheck %s --check-prefix=ROWCOL4
// ROWCOL4-LABEL: module @wide_rows_then_column_sums
// ROWCOL4-SAME: tg.cuda_kernels = [{launches = [{block = 256 : i64, grid = 8 : i64, shared_bytes = 0 : i64, symbol = "k0_0"}, {block = 256 : i64, grid = 16 : i64, shared_bytes = 0 : i64, symbol = "k0_1"}], name = "k0"
// ROWCOL4-DAG: memref.global "private" @k0_0_arrivals : memref<1xi32> = dense<0>
// ROWCOL4-DAG: memref.global "private" @k0_0_partials0 : memref<128xf64>
// ROWCOL4-DAG: memref.global "private" @k0_0_block_partials0 : memref<1024xf64>
// ROWCOL4: gpu.func @k0_0(
// ROWCOL4: %[[COLUMN:.*]] = arith.remui %thread_id_x, %c128
// ROWCOL4: %[[SLICE:.*]] = arith.divui %thread_id_x, %c128
// ROWCOL4: %[[SUMS:.*]]:2 = scf.for %[[GROUP:.*]] = %block_id_x to %c16{{.*}} step %c8{{.*}} iter_args(%[[C0:.*]] = %{{.*}}, %[[C1:.*]] = %{{.*}}) -> (f32, f32)
// ROWCOL4: %[[FIRST:.*]] = arith.muli %[[GROUP]], %c8
// ROWCOL4: gpu.barrier
// ROWCOL4: %[[OFFSET:.*]] = arith.muli %[[SLICE]], %c4
// ROWCOL4: %[[START:.*]] = arith.addi %[[FIRST]], %[[OFFSET]]
// ROWCOL4: %[[END:.*]] = arith.addi %[[START]], %c4
// ROWCOL4: %[[ROWS:.*]]:2 = scf.for %{{.*}} = %[[START]] to %[[END]] step %{{.*}} iter_args(%{{.*}} = %[[C0]], %{{.*}} = %[[C1]]) -> (f32, f32)
// ROWCOL4: scf.yield %[[ROWS]]#0, %[[ROWS]]#1 : f32, f32
// ROWCOL4: arith.extf %[[SUMS]]#0 : f32 to f64
// ROWCOL4-COUNT-1: memref.load {{.*}}#gpu.address_space<workgroup>>
// ROWCOL4: arith.cmpi eq, %{{.*}}, %c7_i32
// ROWCOL4-COUNT-8: memref.load {{.*}} : memref<1024xf64>
// ROWCOL4: gpu.func @k0_1(

// An element-wise op whose operands are contiguous along the inner dim (or
// constant along it) moves 16 bytes per access: 4 floats a thread, in a
// grid-stride loop over 8*64/4 = 128 items, one block of 256 threads.
// CHECK-LABEL: module @add_bias
// CHECK-SAME: tg.cuda_kernels = [{launches = [{block = 256 : i64, grid = 1 : i64, shared_bytes = 0 : i64, symbol = "k0_0"}], name = "k0", operands = 3 : i64}]
// CHECK: gpu.module @add_bias
// CHECK: gpu.func @k0_0(%[[X:.*]]: memref<8x64xf32>, %[[B:.*]]: memref<8xf32>, %[[Y:.*]]: memref<8x64xf32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>, nvvm.maxnreg = 255 : i32}
// CHECK: scf.for %[[ITEM:.*]] = %{{.*}} to %c128 step %c256
// CHECK: %[[XV:.*]] = vector.load %[[X]][%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<8x64xf32>, vector<4xf32>
// CHECK: %[[BS:.*]] = memref.load %[[B]][%{{.*}}] : memref<8xf32>
// CHECK: %[[BV:.*]] = vector.broadcast %[[BS]] : f32 to vector<4xf32>
// CHECK: %[[SUM:.*]] = arith.addf %[[XV]], %[[BV]] : vector<4xf32>
// CHECK: vector.store %[[SUM]], %[[Y]][%{{.*}}, %{{.*}}] {alignment = 16 : i64}
// CHECK-NOT: func.func
module @add_bias {
  func.func @k0(%x: memref<8x64xf32>, %b: memref<8xf32>, %y: memref<8x64xf32>) {
    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %b : memref<8x64xf32>, memref<8xf32>) outs(%y : memref<8x64xf32>) {
    ^bb0(%in: f32, %bias: f32, %out: f32):
      %0 = arith.addf %in, %bias : f32
      linalg.yield %0 : f32
    }
    return
  }
}

// -----

// A transpose reads across the inner dim: one element a thread.
// CHECK-LABEL: module @transpose
// CHECK: gpu.func @k0_0
// CHECK-NOT: vector.
// CHECK: %[[V:.*]] = memref.load %{{.*}}[%{{.*}}, %{{.*}}] : memref<4x8xf32>
// CHECK: memref.store %[[V]], %{{.*}}[%{{.*}}, %{{.*}}] : memref<8x4xf32>
module @transpose {
  func.func @k0(%x: memref<4x8xf32>, %y: memref<8x4xf32>) {
    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : memref<4x8xf32>) outs(%y : memref<8x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    }
    return
  }
}

// -----

// A sum over 4096 rows into 8 columns: too few outputs for a thread each, so
// a block per column folds a strided share of the rows, then warps shuffle
// (xor 16..1) and meet in shared memory; thread 0 adds the total to the
// output. A fill before it is a phase (launch) of its own.
// CHECK-LABEL: module @column_sum
// CHECK-SAME: symbol = "k0_0"
// CHECK-SAME: {block = 256 : i64, grid = 8 : i64, shared_bytes = 0 : i64, symbol = "k0_1"}
// CHECK: gpu.func @k0_0
// CHECK: gpu.func @k0_1(%{{.*}}: memref<4096x8xf32>, %[[OUT:.*]]: memref<8xf32>) workgroup(%[[SLOTS:.*]] : memref<32xf32, #gpu.address_space<workgroup>>)
// CHECK: scf.for %{{.*}} = %block_id_x to %c8{{.*}} step %c8
// CHECK: %[[PART:.*]] = scf.for %{{.*}} = %thread_id_x to %c4096 step %c256 iter_args
// CHECK: gpu.shuffle  xor %[[PART]], %c16_i32, %c32_i32 : f32
// CHECK: gpu.shuffle  xor %{{.*}}, %c1_i32, %c32_i32 : f32
// CHECK: memref.store %{{.*}}, %[[SLOTS]]
// CHECK: gpu.barrier
// CHECK: scf.if
// CHECK: memref.store %{{.*}}, %[[OUT]]
module @column_sum {
  func.func @k0(%x: memref<4096x8xf32>, %y: memref<8xf32>) {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<8xf32>)
    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]} ins(%x : memref<4096x8xf32>) outs(%y : memref<8xf32>) {
    ^bb0(%in: f32, %acc: f32):
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
    return
  }
}

// -----

// Enough outputs: a thread per output, folding its row in order.
// CHECK-LABEL: module @row_sum
// CHECK-SAME: {block = 256 : i64, grid = 32 : i64, shared_bytes = 0 : i64, symbol = "k0_0"}
// CHECK: gpu.func @k0_0
// CHECK-NOT: gpu.shuffle
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c16 step %c1 iter_args
module @row_sum {
  func.func @k0(%x: memref<8192x16xf32>, %y: memref<8192xf32>) {
    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : memref<8192x16xf32>) outs(%y : memref<8192xf32>) {
    ^bb0(%in: f32, %acc: f32):
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
    return
  }
}

// -----

// A row loop of the kernel bodies: one row per warp (8 a block), the row's
// loops strided over the 32 lanes, its max fold shuffled across them (and
// combined with the fold's own start), a warp barrier after each loop; the
// scalar store of the row is made by lane 0. Each lane takes 4 consecutive
// elements at once (a 16-byte vector load, a vector max), reduced to one
// value before the shuffles.
// CHECK-LABEL: module @row_max
// CHECK-SAME: {block = 256 : i64, grid = 13 : i64, shared_bytes = 0 : i64, symbol = "k0_0"}
// CHECK: %[[WARP:.*]] = arith.divui %thread_id_x, %c32
// CHECK: %[[LANE:.*]] = arith.remui %thread_id_x, %c32
// CHECK: scf.for %[[ROW:.*]] = %{{.*}} to %c100 step %c104
// CHECK: %[[VFOLD:.*]] = scf.for %{{.*}} = %{{.*}} to %c64 step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<4xf32>)
// CHECK: vector.load %{{.*}}[%{{.*}}] {alignment = 16 : i64} : memref<6400xf32>, vector<4xf32>
// CHECK: arith.maximumf %{{.*}}, %{{.*}} : vector<4xf32>
// CHECK: %[[FOLD:.*]] = vector.reduction <maximumf>, %[[VFOLD]] : vector<4xf32> into f32
// CHECK: gpu.shuffle  xor %[[FOLD]], %c16_i32, %c32_i32 : f32
// CHECK: nvvm.bar.warp.sync
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[LANE]], %c0
// CHECK: scf.if %[[FIRST]] {
// CHECK-NEXT: memref.store
// CHECK: nvvm.bar.warp.sync
module @row_max {
  func.func @k0(%x: memref<6400xf32>, %y: memref<100xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %c100 = arith.constant 100 : index
    %lowest = arith.constant 0xFF800000 : f32
    scf.parallel (%r) = (%c0) to (%c100) step (%c1) {
      %base = arith.muli %r, %c64 : index
      %max = scf.for %i = %c0 to %c64 step %c1 iter_args(%acc = %lowest) -> (f32) {
        %at = arith.addi %base, %i : index
        %v = memref.load %x[%at] : memref<6400xf32>
        %m = arith.maximumf %acc, %v : f32
        scf.yield %m : f32
      }
      memref.store %max, %y[%r] : memref<100xf32>
      scf.reduce
    }
    return
  }
}

// -----

// A long row (a loop of 16,384 iterations or more, kLongRow: here the
// logits' row of GPT-2's vocabulary): a block of 512 threads a row, rows
// strided over the grid, at most 64 registers a thread (two blocks an SM).
// A lane's loop of vectors makes 12 or 13 trips: unrolled by 4, the trips
// left over after it, then the elements after the last whole vector. Each
// warp's fold is shuffled, then the warps' totals meet in shared memory,
// combined in warp order by every thread between two block barriers, which
// free the slots for the next fold (the sum, which reads the max); thread 0
// stores the row's scalar.
// CHECK-LABEL: module @long_row
// CHECK-SAME: {block = 512 : i64, grid = 1056 : i64, shared_bytes = 0 : i64, symbol = "k0_0"}
// CHECK: gpu.func @k0_0({{.*}}) workgroup(%[[SLOTS:.*]] : memref<32xf32, #gpu.address_space<workgroup>>) {{.*}}nvvm.maxnreg = 64
// CHECK: scf.for %[[ROW:.*]] = %block_id_x to %c2048 step %c1056
// CHECK: %[[FOURS:.*]] = scf.for {{.*}} -> (vector<8xf32>)
// CHECK-COUNT-4: vector.load %{{.*}} : memref<103022592xbf16>, vector<8xbf16>
// CHECK-NOT: vector.load
// CHECK: scf.yield
// CHECK: %[[VECTORS:.*]] = scf.for {{.*}} to %c50256{{.*}} iter_args(%{{.*}} = %[[FOURS]]) -> (vector<8xf32>)
// CHECK: %[[PART:.*]] = vector.reduction <maximumf>, %[[VECTORS]]
// CHECK: %[[LANE:.*]] = scf.for {{.*}} to %c50257 {{.*}} iter_args(%{{.*}} = %[[PART]]) -> (f32)
// CHECK: gpu.shuffle  xor %[[LANE]], %c16_i32, %c32_i32 : f32
// CHECK: %[[WARP:.*]] = arith.divui %thread_id_x, %c32
// CHECK: memref.store %{{.*}}, %[[SLOTS]][%[[WARP]]]
// CHECK: gpu.barrier
// CHECK: memref.load %[[SLOTS]][%c15
// CHECK: gpu.barrier
// CHECK: scf.for {{.*}} -> (vector<8xf32>)
// CHECK: gpu.shuffle  xor
// CHECK: memref.store %{{.*}}, %[[SLOTS]]
// CHECK: gpu.barrier
// CHECK: memref.load %[[SLOTS]][%c15
// CHECK: gpu.barrier
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %thread_id_x, %c0
// CHECK: scf.if %[[FIRST]] {
// CHECK-NEXT: memref.store %{{.*}}, %{{.*}}[%[[ROW]]] : memref<2048xf32>
// CHECK: gpu.barrier
module @long_row {
  func.func @k0(%x: memref<103022592xbf16>, %y: memref<2048xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c50257 = arith.constant 50257 : index
    %c50304 = arith.constant 50304 : index
    %c2048 = arith.constant 2048 : index
    %lowest = arith.constant 0xFF800000 : f32
    %zero = arith.constant 0.0 : f32
    scf.parallel (%r) = (%c0) to (%c2048) step (%c1) {
      %base = arith.muli %r, %c50304 : index
      %max = scf.for %i = %c0 to %c50257 step %c1 iter_args(%acc = %lowest) -> (f32) {
        %at = arith.addi %base, %i : index
        %v = memref.load %x[%at] : memref<103022592xbf16>
        %w = arith.extf %v : bf16 to f32
        %m = arith.maximumf %acc, %w : f32
        scf.yield %m : f32
      }
      %sum = scf.for %i = %c0 to %c50257 step %c1 iter_args(%acc = %zero) -> (f32) {
        %at = arith.addi %base, %i : index
        %v = memref.load %x[%at] : memref<103022592xbf16>
        %w = arith.extf %v : bf16 to f32
        %d = arith.subf %w, %max : f32
        %s = arith.addf %acc, %d : f32
        scf.yield %s : f32
      }
      %both = arith.addf %max, %sum : f32
      memref.store %both, %y[%r] : memref<2048xf32>
      scf.reduce
    }
    return
  }
}

// -----

// Where every lane makes the same few trips round a row's loop (512 floats:
// 4 vectors of 4 a lane), the lane's loop has a constant trip count (LLVM
// unrolls it: the loads issue together), its index the strided loop's; a row
// of 4096 floats (32 vectors a lane) keeps the strided loop, unrolled by 4,
// and a loop of the trips left after it (here none).
// CHECK-LABEL: module @row_sums_uniform
// CHECK: %[[LANE:.*]] = arith.remui %thread_id_x, %c32
// CHECK: %[[START:.*]] = arith.addi %c0{{.*}}, %{{.*}} : index
// CHECK: %[[STRIDE:.*]] = arith.muli %{{.*}}, %c32{{.*}} : index
// CHECK: scf.for %[[K:.*]] = %c0{{.*}} to %c4{{.*}} step %c1{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<4xf32>)
// CHECK: %[[JUMP:.*]] = arith.muli %[[K]], %[[STRIDE]] : index
// CHECK: %[[I:.*]] = arith.addi %[[START]], %[[JUMP]] : index
// CHECK: arith.addi %{{.*}}, %[[I]] : index
// CHECK: vector.load
// CHECK: %[[FOURS:.*]] = scf.for {{.*}} -> (vector<4xf32>)
// CHECK-COUNT-4: vector.load %{{.*}} : memref<409600xf32>, vector<4xf32>
// CHECK-NOT: vector.load
// CHECK: scf.yield
// CHECK: scf.for %{{.*}} = %{{.*}} to %c4096{{.*}} step %{{.*}} iter_args(%{{.*}} = %[[FOURS]]) -> (vector<4xf32>)
module @row_sums_uniform {
  func.func @k0(%x: memref<51200xf32>, %y: memref<100xf32>, %z: memref<409600xf32>, %w: memref<100xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c512 = arith.constant 512 : index
    %c4096 = arith.constant 4096 : index
    %c100 = arith.constant 100 : index
    %zero = arith.constant 0.0 : f32
    scf.parallel (%r) = (%c0) to (%c100) step (%c1) {
      %base = arith.muli %r, %c512 : index
      %sum = scf.for %i = %c0 to %c512 step %c1 iter_args(%acc = %zero) -> (f32) {
        %at = arith.addi %base, %i : index
        %v = memref.load %x[%at] : memref<51200xf32>
        %s = arith.addf %acc, %v : f32
        scf.yield %s : f32
      }
      memref.store %sum, %y[%r] : memref<100xf32>
      %longBase = arith.muli %r, %c4096 : index
      %long = scf.for %i = %c0 to %c4096 step %c1 iter_args(%acc = %zero) -> (f32) {
        %at = arith.addi %longBase, %i : index
        %v = memref.load %z[%at] : memref<409600xf32>
        %s = arith.addf %acc, %v : f32
        scf.yield %s : f32
      }
      memref.store %long, %w[%r] : memref<100xf32>
      scf.reduce
    }
    return
  }
}

// -----

// A row loop marked tg.thread_rows (column sums: a column a row) gives each
// row a thread, not a warp: the fold runs whole on its thread (no lanes, no
// shuffles), and the thread stores its own sum. 64 rows are too few to split.
// CHECK-LABEL: module @thread_rows
// CHECK-SAME: {block = 256 : i64, grid = 1 : i64, shared_bytes = 0 : i64, symbol = "k0_0"}
// CHECK: %[[FIRST:.*]] = arith.addi %{{.*}}, %thread_id_x : index
// CHECK: scf.for %[[COL:.*]] = %[[FIRST]] to %c32{{.*}} step %c256
// CHECK: %[[SUM:.*]] = scf.for %{{.*}} = %c0{{.*}} to %c64{{.*}} step %c1{{.*}} iter_args
// CHECK-NOT: gpu.shuffle
// CHECK-NOT: scf.if
// CHECK: memref.store %[[SUM]], %{{.*}}[%[[COL]]]
// CHECK-NOT: gpu.func
module @thread_rows {
  func.func @k0(%x: memref<2048xf32>, %y: memref<32xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0.0 : f32
    scf.parallel (%c) = (%c0) to (%c32) step (%c1) {
      %sum = scf.for %r = %c0 to %c64 step %c1 iter_args(%acc = %zero) -> (f32) {
        %base = arith.muli %r, %c32 : index
        %at = arith.addi %base, %c : index
        %v = memref.load %x[%at] : memref<2048xf32>
        %s = arith.addf %acc, %v : f32
        scf.yield %s : f32
      }
      memref.store %sum, %y[%c] : memref<32xf32>
      scf.reduce
    } {tg.thread_rows}
    return
  }
}

// -----

// Over 4096 rows a column's fold is split into 128 shares of 32 rows, a
// thread each. A block's 8 warps take the same 32 columns (a lane each),
// each warp one of 8 consecutive shares, so that the block combines its
// threads' partials in shared memory, warp by warp in order, and warp 0
// stores one partial a column, at column * 16 + share / 8. A thread's share
// is unrolled by 4 (its loads in flight together), the rows left over after.
// Launch 2 folds a column's 16 partials on a warp, as for warp rows.
// CHECK-LABEL: module @thread_rows_split
// CHECK-SAME: {block = 256 : i64, grid = 16 : i64, shared_bytes = 0 : i64, symbol = "k0_0"}
// CHECK-SAME: {block = 256 : i64, grid = 4 : i64, shared_bytes = 0 : i64, symbol = "k0_1"}
// CHECK: memref.global "private" @k0_0_partials0 : memref<512xf32>
// CHECK: gpu.func @k0_0({{.*}}) workgroup(%[[SCRATCH:.*]] : memref<256xf32, #gpu.address_space<workgroup>>)
// CHECK: scf.for %[[BLOCK:.*]] = %block_id_x to %c16{{.*}} step %c16
// CHECK: %[[WARP:.*]] = arith.divui %thread_id_x, %c32
// CHECK: %[[LANE:.*]] = arith.remui %thread_id_x, %c32
// CHECK: %[[GROUP:.*]] = arith.remui %[[BLOCK]]
// CHECK: %[[FIRSTCOL:.*]] = arith.muli %[[GROUP]], %c32
// CHECK: %[[COL:.*]] = arith.addi %[[FIRSTCOL]], %[[LANE]]
// CHECK: %[[FIRSTSHARE:.*]] = arith.muli %{{.*}}, %c8
// CHECK: %[[SHARE:.*]] = arith.addi %[[FIRSTSHARE]], %[[WARP]]
// CHECK: %[[MAIN:.*]] = scf.for {{.*}} step %{{.*}} iter_args
// CHECK-COUNT-4: memref.load %arg0
// CHECK: %[[PART:.*]] = scf.for {{.*}} step %c1{{.*}} iter_args(%{{.*}} = %[[MAIN]])
// CHECK-NOT: gpu.shuffle
// CHECK: %[[ISFIRST:.*]] = arith.cmpi eq, %[[WARP]], %c0
// CHECK: memref.store %[[PART]], %[[SCRATCH]][%thread_id_x]
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: %[[BLOCKPART:.*]] = scf.if %[[ISFIRST]] -> (f32)
// CHECK: %[[AT1:.*]] = arith.addi %c32{{.*}}, %[[LANE]]
// CHECK-NEXT: %[[W1:.*]] = memref.load %[[SCRATCH]][%[[AT1]]]
// CHECK-NEXT: %[[J1:.*]] = arith.addf %[[PART]], %[[W1]] : f32
// CHECK: %[[AT2:.*]] = arith.addi %c64{{.*}}, %[[LANE]]
// CHECK-NEXT: %[[W2:.*]] = memref.load %[[SCRATCH]][%[[AT2]]]
// CHECK-NEXT: arith.addf %[[J1]], %[[W2]] : f32
// CHECK-COUNT-5: memref.load %[[SCRATCH]]
// CHECK: } else {
// CHECK-NEXT: scf.yield %[[PART]] : f32
// CHECK: gpu.barrier
// CHECK: %[[SHAREGROUP:.*]] = arith.divui %[[SHARE]], %c8
// CHECK: %[[BASE:.*]] = arith.muli %[[COL]], %c16
// CHECK: %[[SLOT:.*]] = arith.addi %[[BASE]], %[[SHAREGROUP]]
// CHECK: scf.if %[[ISFIRST]]
// CHECK: memref.store %[[BLOCKPART]], %{{.*}}[%[[SLOT]]]
// CHECK: gpu.func @k0_1(
// CHECK: %[[ROWBASE:.*]] = arith.muli %{{.*}}, %c16{{.*}} : index
// CHECK: %[[ROWEND:.*]] = arith.addi %[[ROWBASE]], %c16{{.*}} : index
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[ROWEND]] step %c32
// CHECK: memref.load %{{.*}} : memref<512xf32>
// CHECK: gpu.shuffle  xor
// CHECK: scf.if
// CHECK: memref.store
module @thread_rows_split {
  func.func @k0(%x: memref<131072xf32>, %y: memref<32xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %c4096 = arith.constant 4096 : index
    %zero = arith.constant 0.0 : f32
    scf.parallel (%c) = (%c0) to (%c32) step (%c1) {
      %sum = scf.for %r = %c0 to %c4096 step %c1 iter_args(%acc = %zero) -> (f32) {
        %base = arith.muli %r, %c32 : index
        %at = arith.addi %base, %c : index
        %v = memref.load %x[%at] : memref<131072xf32>
        %s = arith.addf %acc, %v : f32
        scf.yield %s : f32
      }
      memref.store %sum, %y[%c] : memref<32xf32>
      scf.reduce
    } {tg.thread_rows}
    return
  }
}

// -----

// 24 columns are not a warp's 32: each thread stores its own partial (at
// column * 128 + share), adjacent threads adjacent columns of one share.
// CHECK-LABEL: module @thread_rows_split_per_thread
// CHECK-SAME: {block = 256 : i64, grid = 12 : i64, shared_bytes = 0 : i64, symbol = "k0_0"}
// CHECK: memref.global "private" @k0_0_partials0 : memref<3072xf32>
// CHECK: gpu.func @k0_0(
// CHECK-NOT: workgroup
// CHECK: scf.for %[[TASK:.*]] = %{{.*}} to %c3072{{.*}} step
// CHECK: %[[COL:.*]] = arith.remui %[[TASK]], %c24
// CHECK: %[[SHARE:.*]] = arith.divui %[[TASK]], %c24
// CHECK: %[[MAIN:.*]] = scf.for {{.*}} iter_args
// CHECK-COUNT-4: memref.load %arg0
// CHECK: scf.for {{.*}} step %c1{{.*}} iter_args(%{{.*}} = %[[MAIN]])
// CHECK-NOT: gpu.barrier
// CHECK: %[[BASE:.*]] = arith.muli %[[COL]], %c128
// CHECK: %[[SLOT:.*]] = arith.addi %[[BASE]], %[[SHARE]]
// CHECK-NOT: scf.if
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[SLOT]]]
// CHECK: gpu.func @k0_1(
module @thread_rows_split_per_thread {
  func.func @k0(%x: memref<98304xf32>, %y: memref<24xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c24 = arith.constant 24 : index
    %c4096 = arith.constant 4096 : index
    %zero = arith.constant 0.0 : f32
    scf.parallel (%c) = (%c0) to (%c24) step (%c1) {
      %sum = scf.for %r = %c0 to %c4096 step %c1 iter_args(%acc = %zero) -> (f32) {
        %base = arith.muli %r, %c24 : index
        %at = arith.addi %base, %c : index
        %v = memref.load %x[%at] : memref<98304xf32>
        %s = arith.addf %acc, %v : f32
        scf.yield %s : f32
      }
      memref.store %sum, %y[%c] : memref<24xf32>
      scf.reduce
    } {tg.thread_rows}
    return
  }
}

// -----

// Column blocks of 2 as the kernel bodies give a thread (here with a max
// beside the two sums): the block combines each fold in turn through a
// shared slot a thread of the fold's type (f64 for the sums, widened from
// their f32 shares; f32 for the max), by the fold's own combiner, warp by
// warp in order, a barrier before warp 0 reads and one after.
// CHECK-LABEL: module @column_blocks_combined
// CHECK-SAME: {block = 256 : i64, grid = 16 : i64, shared_bytes = 0 : i64, symbol = "k0_0"}
// CHECK-DAG: memref.global "private" @k0_0_partials0 : memref<512xf64>
// CHECK-DAG: memref.global "private" @k0_0_partials1 : memref<512xf64>
// CHECK-DAG: memref.global "private" @k0_0_partials2 : memref<512xf32>
// CHECK: gpu.func @k0_0({{.*}}) workgroup(%[[WIDE:.*]] : memref<256xf64, #gpu.address_space<workgroup>>, %[[NARROW:.*]] : memref<256xf32, #gpu.address_space<workgroup>>)
// CHECK: memref.store %{{.*}}, %[[WIDE]][%thread_id_x]
// CHECK-NEXT: gpu.barrier
// CHECK-COUNT-7: arith.addf {{.*}} : f64
// CHECK: gpu.barrier
// CHECK-NEXT: memref.store %{{.*}}, %[[WIDE]][%thread_id_x]
// CHECK-NEXT: gpu.barrier
// CHECK-COUNT-7: arith.addf {{.*}} : f64
// CHECK: gpu.barrier
// CHECK-NEXT: memref.store %[[MAX:.*]], %[[NARROW]][%thread_id_x]
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: scf.if
// CHECK: memref.load %[[NARROW]]
// CHECK-NEXT: arith.maximumf %[[MAX]], %{{.*}} : f32
// CHECK-COUNT-6: arith.maximumf
// CHECK: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK: gpu.func @k0_1(
module @column_blocks_combined {
  func.func @k0(%x: memref<262144xbf16>, %y: memref<64xbf16>, %z: memref<32xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    %c4096 = arith.constant 4096 : index
    %zero = arith.constant 0.0 : f64
    %ninf = arith.constant 0xFF800000 : f32
    scf.parallel (%c) = (%c0) to (%c32) step (%c1) {
      %first = arith.muli %c, %c2 : index
      %second = arith.addi %first, %c1 : index
      %r:3 = scf.for %i = %c0 to %c4096 step %c1 iter_args(%a = %zero, %b = %zero, %m = %ninf) -> (f64, f64, f32) {
        %base = arith.muli %i, %c64 : index
        %at0 = arith.addi %base, %first : index
        %at1 = arith.addi %base, %second : index
        %v0 = memref.load %x[%at0] : memref<262144xbf16>
        %v1 = memref.load %x[%at1] : memref<262144xbf16>
        %w0 = arith.extf %v0 : bf16 to f64
        %w1 = arith.extf %v1 : bf16 to f64
        %s0 = arith.addf %a, %w0 : f64
        %s1 = arith.addf %b, %w1 : f64
        %f0 = arith.extf %v0 : bf16 to f32
        %mm = arith.maximumf %m, %f0 : f32
        scf.yield %s0, %s1, %mm : f64, f64, f32
      }
      %n0 = arith.truncf %r#0 : f64 to bf16
      %n1 = arith.truncf %r#1 : f64 to bf16
      memref.store %n0, %y[%first] : memref<64xbf16>
      memref.store %n1, %y[%second] : memref<64xbf16>
      memref.store %r#2, %z[%c] : memref<32xf32>
      scf.reduce
    } {tg.thread_rows}
    return
  }
}

// -----

// A bias gradient's column sums, a column a thread (bf16 terms, f64 sums;
// 4096 columns of 8192 rows; the kernel bodies now give a thread 8 columns,
// @column_blocks_combined below) split into 32 shares of
// 256 rows, a thread each: each thread sums its share in f32 (256 terms, at
// most f32-partial-terms) and widens it to f64, and its block joins its 8
// shares in f64 (4 partials a column stored). The shares fill half the
// device (512 blocks, 4 an SM), so launch 1 may use 64 registers a thread,
// not the 76 ptxas took, and the device holds the grid at once.
// CHECK-LABEL: module @bias_gradient_shares
// CHECK-SAME: {block = 256 : i64, grid = 512 : i64, shared_bytes = 0 : i64, symbol = "k0_0"}
// CHECK: memref.global "private" @k0_0_partials0 : memref<16384xf64>
// CHECK: gpu.func @k0_0(
// CHECK-SAME: workgroup(%[[SCRATCH:.*]] : memref<256xf64, #gpu.address_space<workgroup>>)
// CHECK-SAME: nvvm.maxnreg = 64 : i32
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %[[ZERO]]) -> (f32)
// CHECK: %[[PART:.*]] = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c1{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32)
// CHECK: %[[TERM:.*]] = arith.extf %{{.*}} : bf16 to f32
// CHECK-NEXT: %[[NEXT:.*]] = arith.addf %[[ACC]], %[[TERM]] fastmath<reassoc> : f32
// CHECK-NEXT: scf.yield %[[NEXT]] : f32
// CHECK: %[[WIDE:.*]] = arith.extf %[[PART]] : f32 to f64
// CHECK: memref.store %[[WIDE]], %[[SCRATCH]]
// CHECK: arith.addf %[[WIDE]], %{{.*}} : f64
// CHECK: memref.store %{{.*}}, %{{.*}} : memref<16384xf64>
// CHECK: gpu.func @k0_1(
// CHECK-SAME: nvvm.maxnreg = 255 : i32
module @bias_gradient_shares {
  func.func @k0(%x: memref<33554432xbf16>, %y: memref<4096xbf16>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4096 = arith.constant 4096 : index
    %c8192 = arith.constant 8192 : index
    %zero = arith.constant 0.0 : f64
    scf.parallel (%c) = (%c0) to (%c4096) step (%c1) {
      %sum = scf.for %r = %c0 to %c8192 step %c1 iter_args(%acc = %zero) -> (f64) {
        %base = arith.muli %r, %c4096 : index
        %at = arith.addi %base, %c : index
        %v = memref.load %x[%at] : memref<33554432xbf16>
        %w = arith.extf %v : bf16 to f64
        %s = arith.addf %acc, %w fastmath<reassoc> : f64
        scf.yield %s : f64
      }
      %n = arith.truncf %sum : f64 to bf16
      memref.store %n, %y[%c] : memref<4096xbf16>
      scf.reduce
    } {tg.thread_rows}
    return
  }
}

// -----

// A row of 12288 f32 a warp: a lane's share is 96 vectors of 4, 384 terms,
// more than f32-partial-terms (256): it stays f64. A row of 8192 (256
// terms a lane) is summed in f32.
// CHECK-LABEL: module @lane_shares_at_the_limit
// CHECK: gpu.func @k0_0(
// CHECK: scf.for {{.*}} -> (vector<4xf64>)
// CHECK: gpu.func @k0_1(
// CHECK: scf.for {{.*}} -> (vector<4xf32>)
module @lane_shares_at_the_limit {
  func.func @k0(%x: memref<100663296xf32>, %y: memref<8192xf32>, %u: memref<67108864xf32>, %v: memref<8192xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8192 = arith.constant 8192 : index
    %c12288 = arith.constant 12288 : index
    %zero = arith.constant 0.0 : f64
    scf.parallel (%r) = (%c0) to (%c8192) step (%c1) {
      %base = arith.muli %r, %c12288 : index
      %sum = scf.for %i = %c0 to %c12288 step %c1 iter_args(%acc = %zero) -> (f64) {
        %at = arith.addi %base, %i : index
        %e = memref.load %x[%at] : memref<100663296xf32>
        %w = arith.extf %e : f32 to f64
        %s = arith.addf %acc, %w fastmath<reassoc> : f64
        scf.yield %s : f64
      }
      %n = arith.truncf %sum : f64 to f32
      memref.store %n, %y[%r] : memref<8192xf32>
      scf.reduce
    }
    scf.parallel (%r) = (%c0) to (%c8192) step (%c1) {
      %base = arith.muli %r, %c8192 : index
      %sum = scf.for %i = %c0 to %c8192 step %c1 iter_args(%acc = %zero) -> (f64) {
        %at = arith.addi %base, %i : index
        %e = memref.load %u[%at] : memref<67108864xf32>
        %w = arith.extf %e : f32 to f64
        %s = arith.addf %acc, %w fastmath<reassoc> : f64
        scf.yield %s : f64
      }
      %n = arith.truncf %sum : f64 to f32
      memref.store %n, %v[%r] : memref<8192xf32>
      scf.reduce
    }
    return
  }
}

// -----

// A split sum of 16385 elements: a share's vectors of 4, then what is left
// of it (one element, in the last share), strided over the lanes. The
// lane's part of the vectors, widened, is what the remainder's fold starts
// from: the remainder sums in f32 from 0.0 and is added to it in f64.
// CHECK-LABEL: module @split_sum_remainder
// CHECK: gpu.func @k0_0(
// CHECK: %[[VPART:.*]] = scf.for {{.*}} -> (vector<4xf32>)
// CHECK: %[[SUM:.*]] = vector.reduction <add>, %[[VPART]] : vector<4xf32> into f32
// CHECK-NEXT: %[[PART:.*]] = arith.extf %[[SUM]] : f32 to f64
// CHECK: %[[REST:.*]] = scf.for {{.*}} iter_args(%{{.*}} = %cst{{.*}}) -> (f32)
// CHECK: %[[WIDE:.*]] = arith.extf %[[REST]] : f32 to f64
// CHECK-NEXT: arith.addf %[[PART]], %[[WIDE]] : f64
module @split_sum_remainder {
  func.func @k0(%x: memref<16385xf32>, %y: memref<f32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16385 = arith.constant 16385 : index
    %zero = arith.constant 0.0 : f64
    %sum = scf.for %i = %c0 to %c16385 step %c1 iter_args(%acc = %zero) -> (f64) {
      %v = memref.load %x[%i] : memref<16385xf32>
      %w = arith.extf %v : f32 to f64
      %s = arith.addf %acc, %w fastmath<reassoc> : f64
      scf.yield %s : f64
    }
    %n = arith.truncf %sum : f64 to f32
    memref.store %n, %y[] : memref<f32>
    return
  }
}

// -----

// Iterations that depend on each other (a running total over rows) run on
// one block of 512 threads: the outer loop in order, the row's loop strided
// over the threads and folded through shared memory.
// CHECK-LABEL: module @running_total
// CHECK-SAME: {block = 512 : i64, grid = 1 : i64, shared_bytes = 0 : i64, symbol = "k0_0"}
// CHECK: gpu.func @k0_0(%{{.*}}: memref<256xf32>, %{{.*}}: memref<f32>) workgroup(%{{.*}} : memref<32xf32, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 512, 1, 1>, nvvm.maxnreg = 128 : i32}
// CHECK: scf.for %{{.*}} = %c0 to %c4 step %c1 iter_args
// CHECK: scf.for %{{.*}} = %{{.*}} to %c64 step %{{.*}} iter_args
// CHECK: gpu.barrier
module @running_total {
  func.func @k0(%x: memref<256xf32>, %y: memref<f32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0.0 : f32
    %total = scf.for %r = %c0 to %c4 step %c1 iter_args(%t = %zero) -> (f32) {
      %base = arith.muli %r, %c64 : index
      %row = scf.for %i = %c0 to %c64 step %c1 iter_args(%acc = %zero) -> (f32) {
        %at = arith.addi %base, %i : index
        %v = memref.load %x[%at] : memref<256xf32>
        %s = arith.addf %acc, %v : f32
        scf.yield %s : f32
      }
      %next = arith.addf %t, %row : f32
      scf.yield %next : f32
    }
    memref.store %total, %y[] : memref<f32>
    return
  }
}

// -----

// A row loop marked tg.in_order (the embedding gradient: a task scans every
// token in order and adds the rows of those in its span) runs in order on
// the row's warp, the loop inside it strided over the lanes; a warp sync
// after each. Without the mark a row's loop is strided itself. However many
// tokens it scans, the row keeps a warp (kLongRow counts the loops a row's
// lanes share).
// CHECK-LABEL: module @in_order
// CHECK-SAME: block = 256
// CHECK: gpu.func @k0_0(
// CHECK: scf.for %[[TASK:.*]] = %{{.*}} to %c4 step
// CHECK-NEXT: scf.for %[[T:.*]] = %c0 to %c20000 step %c1 {
// CHECK: %[[N:.*]] = arith.select %{{.*}}, %c8, %c0
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[N]] step %{{.*}} {
// CHECK: memref.store
// CHECK: nvvm.bar.warp.sync
module @in_order {
  func.func @k0(%tok: memref<20000xi32>, %g: memref<160000xf32>, %w: memref<32xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c20000 = arith.constant 20000 : index
    scf.parallel (%r) = (%c0) to (%c4) step (%c1) {
      scf.for %t = %c0 to %c20000 step %c1 {
        %id = memref.load %tok[%t] : memref<20000xi32>
        %v = arith.index_cast %id : i32 to index
        %mine = arith.cmpi eq, %v, %r : index
        %n = arith.select %mine, %c8, %c0 : index
        %row = arith.muli %v, %c8 : index
        %grow = arith.muli %t, %c8 : index
        scf.for %d = %c0 to %n step %c1 {
          %at = arith.addi %row, %d : index
          %from = arith.addi %grow, %d : index
          %x = memref.load %g[%from] : memref<160000xf32>
          %y = memref.load %w[%at] : memref<32xf32>
          %s = arith.addf %y, %x : f32
          memref.store %s, %w[%at] : memref<32xf32>
        }
      } {tg.in_order}
      scf.reduce
    }
    return
  }
}

// -----

// A fold that is not an add, mul, max or min cannot be split over lanes.
module @bad_fold {
  func.func @k0(%x: memref<64xf32>, %y: memref<1xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %one = arith.constant 1.0 : f32
    scf.parallel (%r) = (%c0) to (%c1) step (%c1) {
      // expected-error @+1 {{'scf.for' op folds a value the CUDA target cannot combine across the lanes of a warp (an add, mul, max or min is needed)}}
      %q = scf.for %i = %c0 to %c64 step %c1 iter_args(%acc = %one) -> (f32) {
        %v = memref.load %x[%i] : memref<64xf32>
        %d = arith.divf %acc, %v : f32
        scf.yield %d : f32
      }
      memref.store %q, %y[%r] : memref<1xf32>
      scf.reduce
    }
    return
  }
}

// -----

// A buffer the kernel keeps between its ops is a device global of the GPU
// module, which each phase that uses it takes by name.
// CHECK-LABEL: module @local_buffer
// CHECK: gpu.module @local_buffer
// CHECK: memref.global "private" @k0_local0 : memref<4xf32> = uninitialized
// CHECK: gpu.func @k0_0
// CHECK: %[[T0:.*]] = memref.get_global @k0_local0 : memref<4xf32>
// CHECK: vector.store %{{.*}}, %[[T0]]
// CHECK: gpu.func @k0_1
// CHECK: %[[T1:.*]] = memref.get_global @k0_local0 : memref<4xf32>
// CHECK: vector.load %[[T1]]
module @local_buffer {
  func.func @k0(%x: memref<4xf32>, %y: memref<4xf32>) {
    %t = memref.alloc() : memref<4xf32>
    linalg.copy ins(%x : memref<4xf32>) outs(%t : memref<4xf32>)
    linalg.copy ins(%t : memref<4xf32>) outs(%y : memref<4xf32>)
    memref.dealloc %t : memref<4xf32>
    return
  }
}

// -----

// A buffer allocated inside a loop would need one global per iteration.
module @loop_buffer {
  // expected-error @+1 {{'func.func' op allocates a buffer inside a loop or of a dynamic shape or layout; the CUDA target maps a kernel's local buffers, allocated at its top level, to device globals}}
  func.func @k0(%x: memref<4xf32>, %y: memref<4xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    scf.parallel (%r) = (%c0) to (%c4) step (%c1) {
      %t = memref.alloca() : memref<1xf32>
      %v = memref.load %x[%r] : memref<4xf32>
      memref.store %v, %t[%c0] : memref<1xf32>
      %w = memref.load %t[%c0] : memref<1xf32>
      memref.store %w, %y[%r] : memref<4xf32>
      scf.reduce
    }
    return
  }
}

// -----

// A short sum over a whole tensor in f64 (the kernel bodies' wide sums): a
// single fold loop is spread over the block's 512 threads and combined
// through shuffles and shared memory, in f64, before one thread stores it.
// A thread's share (a vector of 4 elements) is summed in f32 from 0.0 and
// widened once (f32-partial-terms).
// CHECK-LABEL: module @whole_sum
// CHECK-SAME: {block = 512 : i64, grid = 1 : i64, shared_bytes = 0 : i64, symbol = "k0_0"}
// CHECK: workgroup(%{{.*}} : memref<32xf64, #gpu.address_space<workgroup>>)
// CHECK: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : vector<4xf32>
// CHECK: %[[VPART:.*]] = scf.for %{{.*}} = %{{.*}} to %c512 step %{{.*}} iter_args(%[[ACC:.*]] = %[[ZERO]]) -> (vector<4xf32>)
// CHECK-NOT: arith.extf
// CHECK: arith.addf %[[ACC]], %{{.*}} fastmath<reassoc> : vector<4xf32>
// CHECK: %[[SUM:.*]] = vector.reduction <add>, %[[VPART]] : vector<4xf32> into f32
// CHECK-NEXT: %[[PART:.*]] = arith.extf %[[SUM]] : f32 to f64
// CHECK: gpu.shuffle  xor %[[PART]], %c16_i32, %c32_i32 : f64
// CHECK: gpu.barrier
// CHECK: scf.if
// CHECK-NEXT: memref.store
module @whole_sum {
  func.func @k0(%x: memref<512xf32>, %y: memref<f32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c512 = arith.constant 512 : index
    %zero = arith.constant 0.0 : f64
    %sum = scf.for %i = %c0 to %c512 step %c1 iter_args(%acc = %zero) -> (f64) {
      %v = memref.load %x[%i] : memref<512xf32>
      %w = arith.extf %v : f32 to f64
      %s = arith.addf %acc, %w fastmath<reassoc> : f64
      scf.yield %s : f64
    }
    %n = arith.truncf %sum : f64 to f32
    memref.store %n, %y[] : memref<f32>
    return
  }
}

// -----

// A long sum over a whole tensor (16384 elements; from 8192 on, a sequential
// block's 16 a thread) is split into shares of 256 elements, a warp each (64
// warps: 8 blocks of 256 threads), whose partial sums go to a
// device global; a second launch folds them in share order over one block,
// adds the fold's start and stores the total. Each launch may use every
// register its block allows (nvvm.maxnreg).
// CHECK-LABEL: module @split_whole_sum
// CHECK-SAME: launches = [{block = 256 : i64, grid = 8 : i64, shared_bytes = 0 : i64, symbol = "k0_0"}, {block = 512 : i64, grid = 1 : i64, shared_bytes = 0 : i64, symbol = "k0_1"}]
// CHECK: memref.global "private" @k0_0_partials0 : memref<64xf64> = uninitialized
// CHECK: gpu.func @k0_0
// CHECK-SAME: nvvm.maxnreg = 255 : i32
// CHECK: %[[LANE:.*]] = arith.remui %thread_id_x, %c32
// CHECK: scf.for %[[TASK:.*]] = %{{.*}} to %c64{{.*}} step %c64
// CHECK: %[[SHARE:.*]] = arith.remui %[[TASK]], %c64
// CHECK: %[[FROM:.*]] = arith.addi %c0, %{{.*}} : index
// CHECK: %[[TO:.*]] = arith.minui %{{.*}}, %c16384 : index
// CHECK: %[[VPART:.*]] = scf.for %{{.*}} = %{{.*}} to %[[TO]] step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<4xf32>)
// CHECK: %[[SUM:.*]] = vector.reduction <add>, %[[VPART]] : vector<4xf32> into f32
// CHECK-NEXT: %[[PART:.*]] = arith.extf %[[SUM]] : f32 to f64
// CHECK: gpu.shuffle  xor %[[PART]], %c16_i32, %c32_i32 : f64
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[LANE]], %c0
// CHECK: scf.if %[[FIRST]] {
// CHECK-NEXT: %[[SLOTS:.*]] = memref.get_global @k0_0_partials0
// CHECK-NEXT: memref.store %{{.*}}, %[[SLOTS]][%[[TASK]]]
// CHECK: gpu.func @k0_1
// CHECK-SAME: nvvm.maxnreg = 128 : i32
// CHECK: %[[PARTS:.*]] = memref.get_global @k0_0_partials0
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %c512 iter_args
// CHECK-NEXT: memref.load %[[PARTS]][%[[J]]]
// CHECK: gpu.barrier
// CHECK: gpu.barrier
// CHECK-NEXT: %[[TOTAL:.*]] = arith.addf %cst, %{{.*}} : f64
// CHECK: arith.truncf %[[TOTAL]]
// CHECK: scf.if
// CHECK-NEXT: memref.store
module @split_whole_sum {
  func.func @k0(%x: memref<16384xf32>, %y: memref<f32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16384 = arith.constant 16384 : index
    %zero = arith.constant 0.0 : f64
    %sum = scf.for %i = %c0 to %c16384 step %c1 iter_args(%acc = %zero) -> (f64) {
      %v = memref.load %x[%i] : memref<16384xf32>
      %w = arith.extf %v : f32 to f64
      %s = arith.addf %acc, %w fastmath<reassoc> : f64
      scf.yield %s : f64
    }
    %n = arith.truncf %sum : f64 to f32
    memref.store %n, %y[] : memref<f32>
    return
  }
}

// -----

// A row loop of 4 long rows (column blocks of a bias gradient, say) would
// keep 4 warps busy: each row's fold is split into 32 shares (128 warps),
// and a second launch gives each row a warp that folds its shares (lanes
// strided over them, then shuffled) and stores the row's sum.
// CHECK-LABEL: module @split_rows
// CHECK-SAME: launches = [{block = 256 : i64, grid = 16 : i64, shared_bytes = 0 : i64, symbol = "k0_0"}, {block = 256 : i64, grid = 1 : i64, shared_bytes = 0 : i64, symbol = "k0_1"}]
// CHECK: memref.global "private" @k0_0_partials0 : memref<128xf64> = uninitialized
// CHECK: gpu.func @k0_0
// CHECK: scf.for %[[TASK:.*]] = %{{.*}} to %c128{{.*}} step %c128
// CHECK-DAG: %[[SHARE:.*]] = arith.remui %[[TASK]], %c32
// CHECK-DAG: %[[ROW:.*]] = arith.divui %[[TASK]], %c32
// CHECK: arith.muli %[[ROW]], %c8192
// CHECK: scf.for %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<4xf32>)
// CHECK: vector.reduction <add>
// CHECK: gpu.shuffle  xor
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[TASK]]] : memref<128xf64>
// CHECK: gpu.func @k0_1
// CHECK: scf.for %[[ROW1:.*]] = %{{.*}} to %c4{{.*}} step %c8
// CHECK: %[[BASE:.*]] = arith.muli %[[ROW1]], %c32
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c32{{.*}} iter_args
// CHECK: gpu.shuffle  xor
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[ROW1]]] : memref<4xf32>
module @split_rows {
  func.func @k0(%x: memref<32768xf32>, %y: memref<4xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c8192 = arith.constant 8192 : index
    %zero = arith.constant 0.0 : f64
    scf.parallel (%r) = (%c0) to (%c4) step (%c1) {
      %base = arith.muli %r, %c8192 : index
      %sum = scf.for %i = %c0 to %c8192 step %c1 iter_args(%acc = %zero) -> (f64) {
        %at = arith.addi %base, %i : index
        %v = memref.load %x[%at] : memref<32768xf32>
        %w = arith.extf %v : f32 to f64
        %s = arith.addf %acc, %w fastmath<reassoc> : f64
        scf.yield %s : f64
      }
      %n = arith.truncf %sum : f64 to f32
      memref.store %n, %y[%r] : memref<4xf32>
      scf.reduce
    }
    return
  }
}

// -----

// A split fold of several sums (a bias gradient's column block of 4 columns)
// combines them across the warp by halving: at lane bit 16 a lane keeps two
// of its four sums and trades the other two with its partner, at bit 8 one
// of two, then the rest is a butterfly over bits 4, 2 and 1 (2 + 1 + 3
// shuffles, not 4 x 5). Sum k ends on lane 16 * (k / 2) + 8 * (k % 2),
// which stores it.
// CHECK-LABEL: module @split_column_block
// CHECK: gpu.func @k0_0
// CHECK: %[[LANE:.*]] = arith.remui %thread_id_x, %c32
// CHECK: %[[BIT16:.*]] = arith.andi %[[LANE]], %c16
// CHECK: %[[UPPER16:.*]] = arith.cmpi ne, %[[BIT16]], %c0
// CHECK: %[[KEEP:.*]] = arith.select %[[UPPER16]], %[[S2:.*]], %[[S0:.*]] : f64
// CHECK: %[[GIVE:.*]] = arith.select %[[UPPER16]], %[[S0]], %[[S2]] : f64
// CHECK: %[[GOT:.*]], %{{.*}} = gpu.shuffle  xor %[[GIVE]], %c16_i32, %c32_i32 : f64
// CHECK: arith.addf %[[KEEP]], %[[GOT]] : f64
// CHECK: gpu.shuffle  xor %{{.*}}, %c16_i32{{.*}}, %c32_i32 : f64
// CHECK: arith.andi %[[LANE]], %c8
// CHECK: gpu.shuffle  xor %{{.*}}, %c8_i32, %c32_i32 : f64
// CHECK-NOT: gpu.shuffle  xor %{{.*}}, %c8_i32
// CHECK: gpu.shuffle  xor %{{.*}}, %c4_i32, %c32_i32 : f64
// CHECK: gpu.shuffle  xor %{{.*}}, %c2_i32, %c32_i32 : f64
// CHECK: %[[TOTAL:.*]], %{{.*}} = gpu.shuffle  xor %{{.*}}, %c1_i32, %c32_i32 : f64
// CHECK-NOT: gpu.shuffle
// CHECK: arith.cmpi eq, %[[LANE]], %c0
// CHECK: memref.get_global @k0_0_partials0
// CHECK: arith.cmpi eq, %[[LANE]], %c8
// CHECK: memref.get_global @k0_0_partials1
// CHECK: arith.cmpi eq, %[[LANE]], %c16
// CHECK: memref.get_global @k0_0_partials2
// CHECK: arith.cmpi eq, %[[LANE]], %c24
// CHECK: memref.get_global @k0_0_partials3
// CHECK: gpu.func @k0_1
module @split_column_block {
  func.func @k0(%x: memref<131072xf32>, %y: memref<16xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c16 = arith.constant 16 : index
    %c8192 = arith.constant 8192 : index
    %zero = arith.constant 0.0 : f64
    scf.parallel (%r) = (%c0) to (%c4) step (%c1) {
      %col = arith.muli %r, %c4 : index
      %sums:4 = scf.for %i = %c0 to %c8192 step %c1
          iter_args(%a0 = %zero, %a1 = %zero, %a2 = %zero, %a3 = %zero) -> (f64, f64, f64, f64) {
        %row = arith.muli %i, %c16 : index
        %at0 = arith.addi %row, %col : index
        %at1 = arith.addi %at0, %c1 : index
        %at2 = arith.addi %at0, %c2 : index
        %at3 = arith.addi %at0, %c3 : index
        %v0 = memref.load %x[%at0] : memref<131072xf32>
        %v1 = memref.load %x[%at1] : memref<131072xf32>
        %v2 = memref.load %x[%at2] : memref<131072xf32>
        %v3 = memref.load %x[%at3] : memref<131072xf32>
        %w0 = arith.extf %v0 : f32 to f64
        %w1 = arith.extf %v1 : f32 to f64
        %w2 = arith.extf %v2 : f32 to f64
        %w3 = arith.extf %v3 : f32 to f64
        %s0 = arith.addf %a0, %w0 fastmath<reassoc> : f64
        %s1 = arith.addf %a1, %w1 fastmath<reassoc> : f64
        %s2 = arith.addf %a2, %w2 fastmath<reassoc> : f64
        %s3 = arith.addf %a3, %w3 fastmath<reassoc> : f64
        scf.yield %s0, %s1, %s2, %s3 : f64, f64, f64, f64
      }
      %n0 = arith.truncf %sums#0 : f64 to f32
      %n1 = arith.truncf %sums#1 : f64 to f32
      %n2 = arith.truncf %sums#2 : f64 to f32
      %n3 = arith.truncf %sums#3 : f64 to f32
      %col1 = arith.addi %col, %c1 : index
      %col2 = arith.addi %col, %c2 : index
      %col3 = arith.addi %col, %c3 : index
      memref.store %n0, %y[%col] : memref<16xf32>
      memref.store %n1, %y[%col1] : memref<16xf32>
      memref.store %n2, %y[%col2] : memref<16xf32>
      memref.store %n3, %y[%col3] : memref<16xf32>
      scf.reduce
    }
    return
  }
}

// -----

// A fold followed by a store in a row loop must not be split when something
// before it writes: the shares would run it again.
// CHECK-LABEL: module @no_split_after_store
// CHECK-SAME: launches = [{block = 256 : i64, grid = 1 : i64, shared_bytes = 0 : i64, symbol = "k0_0"}]
module @no_split_after_store {
  func.func @k0(%x: memref<32768xf32>, %y: memref<4xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c8192 = arith.constant 8192 : index
    %zero = arith.constant 0.0 : f64
    %one = arith.constant 1.0 : f32
    scf.parallel (%r) = (%c0) to (%c4) step (%c1) {
      %base = arith.muli %r, %c8192 : index
      memref.store %one, %x[%base] : memref<32768xf32>
      %sum = scf.for %i = %c0 to %c8192 step %c1 iter_args(%acc = %zero) -> (f64) {
        %at = arith.addi %base, %i : index
        %v = memref.load %x[%at] : memref<32768xf32>
        %w = arith.extf %v : f32 to f64
        %s = arith.addf %acc, %w fastmath<reassoc> : f64
        scf.yield %s : f64
      }
      %n = arith.truncf %sum : f64 to f32
      memref.store %n, %y[%r] : memref<4xf32>
      scf.reduce
    }
    return
  }
}

// -----

// A lane takes one element at a time where the index is used otherwise than
// as an element's (here: every other element).
// CHECK-LABEL: module @scalar_lanes
// CHECK-NOT: vector.
// CHECK: scf.for %{{.*}} iter_args(%{{.*}} = %cst{{.*}}) -> (f32)
// CHECK-NOT: vector.
module @scalar_lanes {
  func.func @k0(%x: memref<6400xf32>, %y: memref<100xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    %c100 = arith.constant 100 : index
    %zero = arith.constant 0.0 : f32
    scf.parallel (%r) = (%c0) to (%c100) step (%c1) {
      %base = arith.muli %r, %c64 : index
      %even = scf.for %i = %c0 to %c32 step %c1 iter_args(%acc = %zero) -> (f32) {
        %twice = arith.muli %i, %c2 : index
        %at = arith.addi %base, %twice : index
        %v = memref.load %x[%at] : memref<6400xf32>
        %s = arith.addf %acc, %v : f32
        scf.yield %s : f32
      }
      memref.store %even, %y[%r] : memref<100xf32>
      scf.reduce
    }
    return
  }
}

// -----

// A row of 51 floats (the logits' rows of an odd vocabulary): a lane takes
// vectors of 4 up to the last whole vector (48 = 51 / 4 * 4), then the
// remaining 3 elements one at a time, continuing its vector's fold.
// CHECK-LABEL: module @vector_remainder
// CHECK: %[[VECTORS:.*]] = scf.for %{{.*}} to %c48{{.*}} -> (vector<4xf32>)
// CHECK: vector.load %{{.*}} : memref<6400xf32>, vector<4xf32>
// CHECK: %[[PART:.*]] = vector.reduction <add>, %[[VECTORS]] : vector<4xf32> into f32
// CHECK: %[[START:.*]] = arith.addi %c48{{.*}}, %{{.*}} : index
// CHECK: %[[LANE:.*]] = scf.for %{{.*}} = %[[START]] to %c51 {{.*}} iter_args(%{{.*}} = %[[PART]]) -> (f32)
// CHECK: memref.load %{{.*}} : memref<6400xf32>
// CHECK: gpu.shuffle xor %[[LANE]]
module @vector_remainder {
  func.func @k0(%x: memref<6400xf32>, %z: memref<100xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c51 = arith.constant 51 : index
    %c64 = arith.constant 64 : index
    %c100 = arith.constant 100 : index
    %zero = arith.constant 0.0 : f32
    scf.parallel (%r) = (%c0) to (%c100) step (%c1) {
      %base = arith.muli %r, %c64 : index
      %head = scf.for %i = %c0 to %c51 step %c1 iter_args(%acc = %zero) -> (f32) {
        %at = arith.addi %base, %i : index
        %v = memref.load %x[%at] : memref<6400xf32>
        %s = arith.addf %acc, %v : f32
        scf.yield %s : f32
      }
      memref.store %head, %z[%r] : memref<100xf32>
      scf.reduce
    }
    return
  }
}

// -----

// A column block's fold reads 8 neighbours of a row (a bias gradient's
// columns): the loads of elements 0..3 and 4..7 past an offset known to be a
// multiple of 8 become two 16-byte vector loads, and each value an extract.
// Where the offset's multiple is unknown (the row times an index argument)
// the loads stay scalar.
// CHECK-LABEL: module @consecutive_loads
// CHECK: gpu.func @k0_0
// CHECK-COUNT-2: vector.load %{{.*}}[%{{.*}}] {alignment = 16 : i64} : memref<8192xf32>, vector<4xf32>
// CHECK-NOT: memref.load %{{.*}} : memref<8192xf32>
// CHECK: gpu.func @k1_0
// CHECK-NOT: vector.load
// CHECK-COUNT-8: memref.load %{{.*}} : memref<8192xf32>
module @consecutive_loads {
  func.func @k0(%x: memref<8192xf32>, %y: memref<8xf32>, %k: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c5 = arith.constant 5 : index
    %c6 = arith.constant 6 : index
    %c7 = arith.constant 7 : index
    %c8 = arith.constant 8 : index
    %c1024 = arith.constant 1024 : index
    %zero = arith.constant 0.0 : f64
    scf.parallel (%b) = (%c0) to (%c1) step (%c1) {
      %first = arith.muli %b, %c8 : index
      %s:8 = scf.for %r = %c0 to %c1024 step %c1 iter_args(%a0 = %zero, %a1 = %zero, %a2 = %zero, %a3 = %zero, %a4 = %zero, %a5 = %zero, %a6 = %zero, %a7 = %zero) -> (f64, f64, f64, f64, f64, f64, f64, f64) {
        %row = arith.muli %r, %c8 : index
        %at = arith.addi %first, %row : index
        %i0 = arith.addi %at, %c0 : index
        %v0 = memref.load %x[%i0] : memref<8192xf32>
        %w0 = arith.extf %v0 : f32 to f64
        %t0 = arith.addf %a0, %w0 : f64
        %i1 = arith.addi %at, %c1 : index
        %v1 = memref.load %x[%i1] : memref<8192xf32>
        %w1 = arith.extf %v1 : f32 to f64
        %t1 = arith.addf %a1, %w1 : f64
        %i2 = arith.addi %at, %c2 : index
        %v2 = memref.load %x[%i2] : memref<8192xf32>
        %w2 = arith.extf %v2 : f32 to f64
        %t2 = arith.addf %a2, %w2 : f64
        %i3 = arith.addi %at, %c3 : index
        %v3 = memref.load %x[%i3] : memref<8192xf32>
        %w3 = arith.extf %v3 : f32 to f64
        %t3 = arith.addf %a3, %w3 : f64
        %i4 = arith.addi %at, %c4 : index
        %v4 = memref.load %x[%i4] : memref<8192xf32>
        %w4 = arith.extf %v4 : f32 to f64
        %t4 = arith.addf %a4, %w4 : f64
        %i5 = arith.addi %at, %c5 : index
        %v5 = memref.load %x[%i5] : memref<8192xf32>
        %w5 = arith.extf %v5 : f32 to f64
        %t5 = arith.addf %a5, %w5 : f64
        %i6 = arith.addi %at, %c6 : index
        %v6 = memref.load %x[%i6] : memref<8192xf32>
        %w6 = arith.extf %v6 : f32 to f64
        %t6 = arith.addf %a6, %w6 : f64
        %i7 = arith.addi %at, %c7 : index
        %v7 = memref.load %x[%i7] : memref<8192xf32>
        %w7 = arith.extf %v7 : f32 to f64
        %t7 = arith.addf %a7, %w7 : f64
        scf.yield %t0, %t1, %t2, %t3, %t4, %t5, %t6, %t7 : f64, f64, f64, f64, f64, f64, f64, f64
      }
      %n0 = arith.truncf %s#0 : f64 to f32
      memref.store %n0, %y[%c0] : memref<8xf32>
      %n1 = arith.truncf %s#1 : f64 to f32
      memref.store %n1, %y[%c1] : memref<8xf32>
      %n2 = arith.truncf %s#2 : f64 to f32
      memref.store %n2, %y[%c2] : memref<8xf32>
      %n3 = arith.truncf %s#3 : f64 to f32
      memref.store %n3, %y[%c3] : memref<8xf32>
      %n4 = arith.truncf %s#4 : f64 to f32
      memref.store %n4, %y[%c4] : memref<8xf32>
      %n5 = arith.truncf %s#5 : f64 to f32
      memref.store %n5, %y[%c5] : memref<8xf32>
      %n6 = arith.truncf %s#6 : f64 to f32
      memref.store %n6, %y[%c6] : memref<8xf32>
      %n7 = arith.truncf %s#7 : f64 to f32
      memref.store %n7, %y[%c7] : memref<8xf32>
      scf.reduce
    }
    return
  }
  func.func @k1(%x: memref<8192xf32>, %y: memref<8xf32>, %k: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c5 = arith.constant 5 : index
    %c6 = arith.constant 6 : index
    %c7 = arith.constant 7 : index
    %c8 = arith.constant 8 : index
    %c1024 = arith.constant 1024 : index
    %zero = arith.constant 0.0 : f64
    scf.parallel (%b) = (%c0) to (%c1) step (%c1) {
      %first = arith.muli %b, %c8 : index
      %s:8 = scf.for %r = %c0 to %c1024 step %c1 iter_args(%a0 = %zero, %a1 = %zero, %a2 = %zero, %a3 = %zero, %a4 = %zero, %a5 = %zero, %a6 = %zero, %a7 = %zero) -> (f64, f64, f64, f64, f64, f64, f64, f64) {
        %row = arith.muli %r, %k : index
        %at = arith.addi %first, %row : index
        %i0 = arith.addi %at, %c0 : index
        %v0 = memref.load %x[%i0] : memref<8192xf32>
        %w0 = arith.extf %v0 : f32 to f64
        %t0 = arith.addf %a0, %w0 : f64
        %i1 = arith.addi %at, %c1 : index
        %v1 = memref.load %x[%i1] : memref<8192xf32>
        %w1 = arith.extf %v1 : f32 to f64
        %t1 = arith.addf %a1, %w1 : f64
        %i2 = arith.addi %at, %c2 : index
        %v2 = memref.load %x[%i2] : memref<8192xf32>
        %w2 = arith.extf %v2 : f32 to f64
        %t2 = arith.addf %a2, %w2 : f64
        %i3 = arith.addi %at, %c3 : index
        %v3 = memref.load %x[%i3] : memref<8192xf32>
        %w3 = arith.extf %v3 : f32 to f64
        %t3 = arith.addf %a3, %w3 : f64
        %i4 = arith.addi %at, %c4 : index
        %v4 = memref.load %x[%i4] : memref<8192xf32>
        %w4 = arith.extf %v4 : f32 to f64
        %t4 = arith.addf %a4, %w4 : f64
        %i5 = arith.addi %at, %c5 : index
        %v5 = memref.load %x[%i5] : memref<8192xf32>
        %w5 = arith.extf %v5 : f32 to f64
        %t5 = arith.addf %a5, %w5 : f64
        %i6 = arith.addi %at, %c6 : index
        %v6 = memref.load %x[%i6] : memref<8192xf32>
        %w6 = arith.extf %v6 : f32 to f64
        %t6 = arith.addf %a6, %w6 : f64
        %i7 = arith.addi %at, %c7 : index
        %v7 = memref.load %x[%i7] : memref<8192xf32>
        %w7 = arith.extf %v7 : f32 to f64
        %t7 = arith.addf %a7, %w7 : f64
        scf.yield %t0, %t1, %t2, %t3, %t4, %t5, %t6, %t7 : f64, f64, f64, f64, f64, f64, f64, f64
      }
      %n0 = arith.truncf %s#0 : f64 to f32
      memref.store %n0, %y[%c0] : memref<8xf32>
      %n1 = arith.truncf %s#1 : f64 to f32
      memref.store %n1, %y[%c1] : memref<8xf32>
      %n2 = arith.truncf %s#2 : f64 to f32
      memref.store %n2, %y[%c2] : memref<8xf32>
      %n3 = arith.truncf %s#3 : f64 to f32
      memref.store %n3, %y[%c3] : memref<8xf32>
      %n4 = arith.truncf %s#4 : f64 to f32
      memref.store %n4, %y[%c4] : memref<8xf32>
      %n5 = arith.truncf %s#5 : f64 to f32
      memref.store %n5, %y[%c5] : memref<8xf32>
      %n6 = arith.truncf %s#6 : f64 to f32
      memref.store %n6, %y[%c6] : memref<8xf32>
      %n7 = arith.truncf %s#7 : f64 to f32
      memref.store %n7, %y[%c7] : memref<8xf32>
      scf.reduce
    }
    return
  }
}

// -----

// A row's maximum and sum of exponentials in one fold (tg.max_sum_exp, the
// CUDA form of a softmax or loss row): each lane folds its vectors of 4
// elements as pairs (the sum narrowed to f32: 32 terms a lane), joins its
// vector's pairs in order (no per-fold vector.reduction: the two folds
// combine together), widens the sum, and the lanes join their pairs by a
// butterfly shuffling both values at each step, with one exponential a join.
// CHECK-LABEL: module @row_max_sum_exp
// CHECK: gpu.func @k0_0
// CHECK: %[[FOLD:.*]]:2 = scf.for %{{.*}} = %c0{{.*}} to %c8{{.*}} step %c1{{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %cst{{.*}}) -> (vector<4xf32>, vector<4xf32>)
// CHECK: vector.load %{{.*}} : memref<65536xf32>, vector<4xf32>
// CHECK: math.exp %{{.*}} : vector<4xf32>
// CHECK: arith.select %{{.*}} : vector<4xi1>, vector<4xf32>
// CHECK-NOT: vector.reduction
// CHECK: vector.extract %[[FOLD]]#0[3]
// CHECK: %[[WIDE:.*]] = arith.extf %{{.*}} : f32 to f64
// CHECK: gpu.shuffle  xor %{{.*}}, %c16_i32, %c32_i32 : f32
// CHECK: gpu.shuffle  xor %[[WIDE]], %c16_i32{{.*}}, %c32_i32 : f64
// CHECK: math.exp
// CHECK: gpu.shuffle  xor %{{.*}}, %c1_i32, %c32_i32 : f32
// CHECK: gpu.shuffle  xor %{{.*}}, %c1_i32{{.*}}, %c32_i32 : f64
// CHECK: nvvm.bar.warp.sync
// F64-LABEL: module @row_max_sum_exp
// F64: scf.for {{.*}} -> (vector<4xf32>, vector<4xf64>)
module @row_max_sum_exp {
  func.func @k0(%x: memref<65536xf32>, %y: memref<128xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c64 = arith.constant 64 : index
    %c1024 = arith.constant 1024 : index
    scf.parallel (%r) = (%c0) to (%c64) step (%c1) {
      %base = arith.muli %r, %c1024 : index
      %ninf = arith.constant 0xFF800000 : f32
      %zero = arith.constant 0.0 : f64
      %one = arith.constant 1.0 : f32
      %oned = arith.constant 1.0 : f64
      %fold:2 = scf.for %i = %c0 to %c1024 step %c1 iter_args(%m = %ninf, %s = %zero) -> (f32, f64) {
        %at = arith.addi %base, %i : index
        %v = memref.load %x[%at] : memref<65536xf32>
        %larger = arith.cmpf ogt, %v, %m : f32
        %same = arith.cmpf oeq, %m, %v : f32
        %d = arith.subf %m, %v : f32
        %a = math.absf %d : f32
        %n = arith.negf %a : f32
        %e = math.exp %n : f32
        %scale = arith.select %same, %one, %e : f32
        %wide = arith.extf %scale : f32 to f64
        %shrunk = arith.mulf %s, %wide : f64
        %ifLarger = arith.addf %shrunk, %oned : f64
        %ifNot = arith.addf %s, %wide : f64
        %m2 = arith.maximumf %m, %v : f32
        %s2 = arith.select %larger, %ifLarger, %ifNot : f64
        scf.yield %m2, %s2 : f32, f64
      } {tg.max_sum_exp}
      %sum = arith.truncf %fold#1 : f64 to f32
      %at0 = arith.muli %r, %c2 : index
      %at1 = arith.addi %at0, %c1 : index
      memref.store %fold#0, %y[%at0] : memref<128xf32>
      memref.store %sum, %y[%at1] : memref<128xf32>
      scf.reduce
    }
    return
  }
}

// -----

// The same fold over rows of 20,000 elements (kLongRow): a block of 512
// threads a row, whose warps' pairs meet in shared memory, the maxima's
// slots (f32) apart from the sums' (f64), joined in warp order.
// CHECK-LABEL: module @long_row_max_sum_exp
// CHECK: gpu.func @k0_0(%{{.*}}) workgroup(%[[MAXES:.*]] : memref<32xf32, #gpu.address_space<workgroup>>, %[[SUMS:.*]] : memref<32xf64, #gpu.address_space<workgroup>>)
// CHECK-SAME: known_block_size = array<i32: 512, 1, 1>
// CHECK: gpu.shuffle  xor %{{.*}}, %c1_i32{{.*}}, %c32_i32 : f32
// CHECK: scf.if
// CHECK: memref.store %{{.*}}, %[[MAXES]]
// CHECK: memref.store %{{.*}}, %[[SUMS]]
// CHECK: gpu.barrier
// CHECK-COUNT-16: memref.load %[[SUMS]]
// CHECK: gpu.barrier
module @long_row_max_sum_exp {
  func.func @k0(%x: memref<80000xf32>, %y: memref<8xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c20000 = arith.constant 20000 : index
    scf.parallel (%r) = (%c0) to (%c4) step (%c1) {
      %base = arith.muli %r, %c20000 : index
      %ninf = arith.constant 0xFF800000 : f32
      %zero = arith.constant 0.0 : f64
      %one = arith.constant 1.0 : f32
      %oned = arith.constant 1.0 : f64
      %fold:2 = scf.for %i = %c0 to %c20000 step %c1 iter_args(%m = %ninf, %s = %zero) -> (f32, f64) {
        %at = arith.addi %base, %i : index
        %v = memref.load %x[%at] : memref<80000xf32>
        %larger = arith.cmpf ogt, %v, %m : f32
        %same = arith.cmpf oeq, %m, %v : f32
        %d = arith.subf %m, %v : f32
        %a = math.absf %d : f32
        %n = arith.negf %a : f32
        %e = math.exp %n : f32
        %scale = arith.select %same, %one, %e : f32
        %wide = arith.extf %scale : f32 to f64
        %shrunk = arith.mulf %s, %wide : f64
        %ifLarger = arith.addf %shrunk, %oned : f64
        %ifNot = arith.addf %s, %wide : f64
        %m2 = arith.maximumf %m, %v : f32
        %s2 = arith.select %larger, %ifLarger, %ifNot : f64
        scf.yield %m2, %s2 : f32, f64
      } {tg.max_sum_exp}
      %sum = arith.truncf %fold#1 : f64 to f32
      %at0 = arith.muli %r, %c2 : index
      %at1 = arith.addi %at0, %c1 : index
      memref.store %fold#0, %y[%at0] : memref<8xf32>
      memref.store %sum, %y[%at1] : memref<8xf32>
      scf.reduce
    }
    return
  }
}

// -----

// A row phase (x doubled into y) and the column sums of y over its rows
// after it (the shape of a norm gradient's row pass and weight sums): by
// default the row launch, the split sums' and their combine's.
// CHECK-LABEL: module @rows_then_column_sums
// CHECK-SAME: tg.cuda_kernels = [{launches = [{block = 256 : i64, grid = 16 : i64, shared_bytes = 0 : i64, symbol = "k0_0"}, {block = 256 : i64, grid = 1 : i64, shared_bytes = 0 : i64, symbol = "k0_1"}, {block = 256 : i64, grid = 4 : i64, shared_bytes = 0 : i64, symbol = "k0_2"}], name = "k0"
module @rows_then_column_sums {
  func.func @k0(%x: memref<32768xf32>, %y: memref<32768xf32>, %w: memref<256xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c5 = arith.constant 5 : index
    %c6 = arith.constant 6 : index
    %c7 = arith.constant 7 : index
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    %c128 = arith.constant 128 : index
    %c256 = arith.constant 256 : index
    %two = arith.constant 2.0 : f32
    %zero = arith.constant 0.0 : f64
    scf.parallel (%r) = (%c0) to (%c128) step (%c1) {
      %base = arith.muli %r, %c256 : index
      scf.for %i = %c0 to %c256 step %c1 {
        %at = arith.addi %base, %i : index
        %v = memref.load %x[%at] : memref<32768xf32>
        %d = arith.mulf %v, %two : f32
        memref.store %d, %y[%at] : memref<32768xf32>
      }
      scf.reduce
    }
    scf.parallel (%c) = (%c0) to (%c32) step (%c1) {
      %first = arith.muli %c, %c8 : index
      %col1 = arith.addi %first, %c1 : index
      %sums:2 = scf.for %i = %c0 to %c128 step %c1 iter_args(%a0 = %zero, %a1 = %zero) -> (f64, f64) {
        %row = arith.muli %i, %c256 : index
        %at0 = arith.addi %row, %first : index
        %at1 = arith.addi %row, %col1 : index
        %v0 = memref.load %y[%at0] : memref<32768xf32>
        %v1 = memref.load %y[%at1] : memref<32768xf32>
        %w0 = arith.extf %v0 : f32 to f64
        %w1 = arith.extf %v1 : f32 to f64
        %s0 = arith.addf %a0, %w0 : f64
        %s1 = arith.addf %a1, %w1 : f64
        scf.yield %s0, %s1 : f64, f64
      }
      %n0 = arith.truncf %sums#0 : f64 to f32
      %n1 = arith.truncf %sums#1 : f64 to f32
      memref.store %n0, %w[%first] : memref<256xf32>
      memref.store %n1, %w[%col1] : memref<256xf32>
      scf.reduce
    } {tg.thread_rows, tg.row_local_columns}
    return
  }
}

// -----

// The same column sums without tg.row_local_columns (nothing says their
// iteration r reads only row r) keep their own launches.
module @unmarked_column_sums {
  func.func @k0(%x: memref<32768xf32>, %y: memref<32768xf32>, %w: memref<256xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c5 = arith.constant 5 : index
    %c6 = arith.constant 6 : index
    %c7 = arith.constant 7 : index
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    %c128 = arith.constant 128 : index
    %c256 = arith.constant 256 : index
    %two = arith.constant 2.0 : f32
    %zero = arith.constant 0.0 : f64
    scf.parallel (%r) = (%c0) to (%c128) step (%c1) {
      %base = arith.muli %r, %c256 : index
      scf.for %i = %c0 to %c256 step %c1 {
        %at = arith.addi %base, %i : index
        %v = memref.load %x[%at] : memref<32768xf32>
        %d = arith.mulf %v, %two : f32
        memref.store %d, %y[%at] : memref<32768xf32>
      }
      scf.reduce
    }
    scf.parallel (%c) = (%c0) to (%c32) step (%c1) {
      %first = arith.muli %c, %c8 : index
      %col1 = arith.addi %first, %c1 : index
      %sums:2 = scf.for %i = %c0 to %c128 step %c1 iter_args(%a0 = %zero, %a1 = %zero) -> (f64, f64) {
        %row = arith.muli %i, %c256 : index
        %at0 = arith.addi %row, %first : index
        %at1 = arith.addi %row, %col1 : index
        %v0 = memref.load %y[%at0] : memref<32768xf32>
        %v1 = memref.load %y[%at1] : memref<32768xf32>
        %w0 = arith.extf %v0 : f32 to f64
        %w1 = arith.extf %v1 : f32 to f64
        %s0 = arith.addf %a0, %w0 : f64
        %s1 = arith.addf %a1, %w1 : f64
        scf.yield %s0, %s1 : f64, f64
      }
      %n0 = arith.truncf %sums#0 : f64 to f32
      %n1 = arith.truncf %sums#1 : f64 to f32
      memref.store %n0, %w[%first] : memref<256xf32>
      memref.store %n1, %w[%col1] : memref<256xf32>
      scf.reduce
    } {tg.thread_rows}
    return
  }
}

// -----

// A column sum whose fold starts from a value read before it (its `before`
// would run once, before any row is written) keeps its own launches.
module @column_sums_reading_before {
  func.func @k0(%x: memref<32768xf32>, %y: memref<32768xf32>, %w: memref<256xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c5 = arith.constant 5 : index
    %c6 = arith.constant 6 : index
    %c7 = arith.constant 7 : index
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    %c128 = arith.constant 128 : index
    %c256 = arith.constant 256 : index
    %two = arith.constant 2.0 : f32
    %zero = arith.constant 0.0 : f64
    scf.parallel (%r) = (%c0) to (%c128) step (%c1) {
      %base = arith.muli %r, %c256 : index
      scf.for %i = %c0 to %c256 step %c1 {
        %at = arith.addi %base, %i : index
        %v = memref.load %x[%at] : memref<32768xf32>
        %d = arith.mulf %v, %two : f32
        memref.store %d, %y[%at] : memref<32768xf32>
      }
      scf.reduce
    }
    scf.parallel (%c) = (%c0) to (%c32) step (%c1) {
      %first = arith.muli %c, %c8 : index
      %col1 = arith.addi %first, %c1 : index
      %seen = memref.load %y[%first] : memref<32768xf32>
      %seenw = arith.extf %seen : f32 to f64
      %sums:2 = scf.for %i = %c0 to %c128 step %c1 iter_args(%a0 = %seenw, %a1 = %zero) -> (f64, f64) {
        %row = arith.muli %i, %c256 : index
        %at0 = arith.addi %row, %first : index
        %at1 = arith.addi %row, %col1 : index
        %v0 = memref.load %y[%at0] : memref<32768xf32>
        %v1 = memref.load %y[%at1] : memref<32768xf32>
        %w0 = arith.extf %v0 : f32 to f64
        %w1 = arith.extf %v1 : f32 to f64
        %s0 = arith.addf %a0, %w0 : f64
        %s1 = arith.addf %a1, %w1 : f64
        scf.yield %s0, %s1 : f64, f64
      }
      %n0 = arith.truncf %sums#0 : f64 to f32
      %n1 = arith.truncf %sums#1 : f64 to f32
      memref.store %n0, %w[%first] : memref<256xf32>
      memref.store %n1, %w[%col1] : memref<256xf32>
      scf.reduce
    } {tg.thread_rows, tg.row_local_columns}
    return
  }
}

// -----

// 1024 columns (128 column blocks: two threads each, 4 of a group's 8 rows
// a thread) over 128 rows, on 4 SMs: 8 blocks, 2 groups each, the sums
// carried from the first to the second.
module @wide_rows_then_column_sums {
  func.func @k0(%x: memref<131072xf32>, %y: memref<131072xf32>, %w: memref<1024xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c5 = arith.constant 5 : index
    %c6 = arith.constant 6 : index
    %c7 = arith.constant 7 : index
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    %c128 = arith.constant 128 : index
    %c256 = arith.constant 256 : index
    %c1024 = arith.constant 1024 : index
    %two = arith.constant 2.0 : f32
    %zero = arith.constant 0.0 : f64
    scf.parallel (%r) = (%c0) to (%c128) step (%c1) {
      %base = arith.muli %r, %c1024 : index
      scf.for %i = %c0 to %c1024 step %c1 {
        %at = arith.addi %base, %i : index
        %v = memref.load %x[%at] : memref<131072xf32>
        %d = arith.mulf %v, %two : f32
        memref.store %d, %y[%at] : memref<131072xf32>
      }
      scf.reduce
    }
    scf.parallel (%c) = (%c0) to (%c128) step (%c1) {
      %first = arith.muli %c, %c8 : index
      %col1 = arith.addi %first, %c1 : index
      %sums:2 = scf.for %i = %c0 to %c128 step %c1 iter_args(%a0 = %zero, %a1 = %zero) -> (f64, f64) {
        %row = arith.muli %i, %c1024 : index
        %at0 = arith.addi %row, %first : index
        %at1 = arith.addi %row, %col1 : index
        %v0 = memref.load %y[%at0] : memref<131072xf32>
        %v1 = memref.load %y[%at1] : memref<131072xf32>
        %w0 = arith.extf %v0 : f32 to f64
        %w1 = arith.extf %v1 : f32 to f64
        %s0 = arith.addf %a0, %w0 : f64
        %s1 = arith.addf %a1, %w1 : f64
        scf.yield %s0, %s1 : f64, f64
      }
      %n0 = arith.truncf %sums#0 : f64 to f32
      %n1 = arith.truncf %sums#1 : f64 to f32
      memref.store %n0, %w[%first] : memref<1024xf32>
      memref.store %n1, %w[%col1] : memref<1024xf32>
      scf.reduce
    } {tg.thread_rows, tg.row_local_columns}
    return
  }
}
