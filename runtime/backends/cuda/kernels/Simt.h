// The few SIMT primitives the runtime's hand-written CUDA kernels use, so
// that one kernel source compiles two ways: by nvcc for the GPU (PTX), and
// as plain C++ over SimtEmulator.h, which runs a block's threads as host
// threads and gives mma.sync and the warp shuffles their PTX semantics. The
// second way is how the kernels' tiling, masking and fragment layouts are
// tested on machines without a GPU (test/unit/runtime).
#ifndef TG_RUNTIME_CUDA_KERNELS_SIMT_H
#define TG_RUNTIME_CUDA_KERNELS_SIMT_H

#include <cstdint>

#ifdef __CUDACC__

#define TG_DEVICE __device__ __forceinline__
/// An entry point of the kernel module, launched with 128 threads a block,
/// with registers for `minBlocks` blocks on a multiprocessor (ptxas's own
/// choice spilled, or left too few blocks for the loads' latency).
#define TG_KERNEL_128(minBlocks) extern "C" __global__ void __launch_bounds__(128, minBlocks)
#define TG_SHARED_BYTES(name) extern __shared__ __align__(16) unsigned char name[]

namespace tg::simt {
TG_DEVICE int threadId() { return threadIdx.x; }
TG_DEVICE int blockX() { return blockIdx.x; }
TG_DEVICE int blockY() { return blockIdx.y; }
TG_DEVICE int gridX() { return gridDim.x; }
TG_DEVICE void syncThreads() { __syncthreads(); }
TG_DEVICE void syncWarp() { __syncwarp(); }
TG_DEVICE float shuffleXor(float value, int laneMask) {
  return __shfl_xor_sync(0xffffffffu, value, laneMask);
}
TG_DEVICE float floatFromBits(uint32_t bits) { return __uint_as_float(bits); }
/// Aligned loads and stores of 4 and 16 bytes.
using Chunk = uint4;
TG_DEVICE uint32_t loadWord(const void *p) { return *static_cast<const uint32_t *>(p); }
TG_DEVICE void storeWord(void *p, uint32_t word) { *static_cast<uint32_t *>(p) = word; }
TG_DEVICE Chunk loadChunk(const void *p) { return *static_cast<const Chunk *>(p); }
TG_DEVICE void storeChunk(void *p, Chunk chunk) { *static_cast<Chunk *>(p) = chunk; }
TG_DEVICE float exp2Fast(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
TG_DEVICE float log2Fast(float x) {
  float y;
  asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
/// Two floats rounded to nearest-even bf16: `low` in bits 0-15.
TG_DEVICE uint32_t packBf16(float low, float high) {
  uint32_t packed;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(packed) : "f"(high), "f"(low));
  return packed;
}
/// ldmatrix.sync.aligned.m8n8.x4.shared.b16 over one warp: lane l gives the
/// address of row l % 8 (16 bytes, 16-byte aligned, shared memory) of 8 x 8
/// matrix l / 8, and gets in register i matrix i's elements (row lane / 4,
/// columns 2 (lane % 4) and + 1); `.trans`: (rows 2 (lane % 4) and + 1,
/// column lane / 4).
TG_DEVICE void loadMatrices(uint32_t r[4], const void *row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(uint32_t(__cvta_generic_to_shared(row)))
               : "memory");
}
TG_DEVICE void loadMatricesTransposed(uint32_t r[4], const void *row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(uint32_t(__cvta_generic_to_shared(row)))
               : "memory");
}
/// cp.async: 16 bytes from global `src` to shared `dst` (both 16-byte
/// aligned), or 16 zero bytes where not `valid` (`src` is then not read,
/// but must still be a global address). The copy runs beside what the
/// thread does next and has landed only after waitAsyncCopies: so a block
/// copies its next tile while its warps compute on this one.
TG_DEVICE void copyChunkAsync(void *dst, const void *src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
               :
               : "r"(uint32_t(__cvta_generic_to_shared(dst))), "l"(src), "r"(valid ? 16 : 0)
               : "memory");
}
/// The same for 4 bytes (4-byte aligned).
TG_DEVICE void copyWordAsync(void *dst, const void *src, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;"
               :
               : "r"(uint32_t(__cvta_generic_to_shared(dst))), "l"(src), "r"(valid ? 4 : 0)
               : "memory");
}
/// Closes the thread's copies issued since the last commit into a group.
TG_DEVICE void commitAsyncCopies() { asm volatile("cp.async.commit_group;" ::: "memory"); }
/// Waits until the thread's copies have landed, but for those of its
/// `Pending` most recent groups. Other threads' copies are seen after a
/// barrier that follows their own wait.
template <int Pending>
TG_DEVICE void waitAsyncCopies() {
  asm volatile("cp.async.wait_group %0;" : : "n"(Pending) : "memory");
}
/// *address += value, atomically (red.global.add.f32: in no fixed order).
TG_DEVICE void atomicAddFloat(float *address, float value) { atomicAdd(address, value); }
/// c += a x b over one warp: a 16 x 16 (row), b 16 x 8 (col), bf16 in, f32
/// accumulators; the fragments are PTX's for mma.m16n8k16.
TG_DEVICE void mma16816(float c[4], const uint32_t a[4], const uint32_t b[2]) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
               "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
} // namespace tg::simt

#else
#include "SimtEmulator.h"
#endif

namespace tg::simt {
TG_DEVICE int laneId() { return threadId() % 32; }
TG_DEVICE int warpId() { return threadId() / 32; }
TG_DEVICE float bf16ToFloat(uint16_t bits) { return floatFromBits(uint32_t(bits) << 16); }
} // namespace tg::simt

#endif
