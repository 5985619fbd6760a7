// Flash attention on the tensor cores (mma.sync m16n8k16, bf16 in, f32
// accumulators), FlashAttention-2's schedule: a block of 4 warps owns 64
// rows, each warp 16, and loops over tiles of 64 rows of the other side,
// keeping its scores and probabilities in registers. (32 rows a warp in the
// head-dim-64 forward, FlashAttention-2's forward tiling, ran 1.27x slower
// on an H200: its 251 registers a thread left 2 blocks a multiprocessor
// where 16 rows' 163 leave 3; docs/perf.md.) Causal and windowed tiles no
// query of the block sees are skipped (in the forward, those none of a
// warp's queries sees are skipped by the warp), and only the tiles on the
// diagonal and at the window's edge are masked per element. Keys of head
// h / (queryHeads / keyHeads) serve query head h. Tiles come into shared
// memory by asynchronous copies (cp.async) in two stages: the loop's next
// tile is copied while its warps compute on this one.
//
// Forward: an online softmax over the key tiles; writes the result and the
// log-sum-exp of each query row (natural log, f32).
// Backward: `delta` = rowsum(dO * O), then one kernel of key blocks (dK, dV
// over every query tile that sees them, and every query head of the group)
// and, by default, one of query blocks (dQ over the key tiles), each
// recomputing P = exp(scale * q.k - logsumexp): deterministic, no atomics,
// 7 products a tile. With Params::queryGradSum the key blocks also compute
// dQ's share of their keys (dS K) and add it to an f32 sum atomically, as
// FlashAttention-2 does: 5 products a tile, then a pass writing dQ.
// With a rotary position embedding (Params::ropeCos), each query and key
// tile is rotated in shared memory once it has landed, and the query and
// key gradients are rotated back in registers before they are written.
//
// Compiled by nvcc to PTX for the CUDA backend, and as host C++ over the
// SIMT emulator for its test (Simt.h).
#include "FlashAttention.h"
#include "Simt.h"

namespace tg::flash {
namespace {
using namespace tg::simt;

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;
constexpr float kMinusInfinity = -__builtin_huge_valf();

TG_DEVICE float maxOf(float a, float b) { return a > b ? a : b; }
TG_DEVICE int minOf(int a, int b) { return a < b ? a : b; }
TG_DEVICE int maxOf(int a, int b) { return a > b ? a : b; }

TG_DEVICE uint16_t *rowOf(const Tensor &t, int b, int h, int row) {
  return reinterpret_cast<uint16_t *>(t.base) + b * t.batchStride + h * t.headStride +
         int64_t(row) * t.rowStride;
}

/// Whether query t sees key s (tg.attention's rule).
TG_DEVICE bool visible(const Params &p, int t, int s) {
  return s < p.keyLen && (!p.causal || s <= t) && (p.window <= 0 || s > t - p.window);
}

/// Whether every query of [q0, q0 + queries) sees every key of
/// [k0, k0 + keys): a tile none of whose elements needs the mask (all but
/// the diagonal and the edges of a causal or windowed attention).
TG_DEVICE bool allVisible(const Params &p, int q0, int queries, int k0, int keys) {
  const int lastQuery = q0 + queries - 1, lastKey = k0 + keys - 1;
  return lastQuery < p.queryLen && lastKey < p.keyLen && (!p.causal || lastKey <= q0) &&
         (p.window <= 0 || k0 > lastQuery - p.window);
}

/// The keys [first, end) that some query of [firstQuery, lastQuery] sees.
struct Range {
  int first, end;
};
TG_DEVICE Range keysSeenBy(const Params &p, int firstQuery, int lastQuery) {
  return {p.window > 0 ? maxOf(0, firstQuery - p.window + 1) : 0,
          p.causal ? minOf(lastQuery + 1, p.keyLen) : p.keyLen};
}
/// The queries [first, end) that see some key of [firstKey, lastKey].
TG_DEVICE Range queriesSeeing(const Params &p, int firstKey, int lastKey) {
  return {p.causal ? firstKey : 0,
          p.window > 0 ? minOf(p.queryLen, lastKey + p.window) : p.queryLen};
}

/// Copies rows [row0, row0 + Rows) of head (b, h) into a shared tile of
/// padded rows, asynchronously (they land at waitAsyncCopies); rows from
/// `rows` on read as zeros.
template <int D, int Rows = kTileRows>
TG_DEVICE void loadTile(uint16_t *tile, const Tensor &t, int b, int h, int row0, int rows) {
  constexpr int chunks = D / 8;
  for (int i = threadId(); i < Rows * chunks; i += kThreads) {
    const int r = i / chunks, c = i % chunks;
    const bool inside = row0 + r < rows;
    copyChunkAsync(tile + r * paddedRow(D) + 8 * c, rowOf(t, b, h, inside ? row0 + r : 0) + 8 * c,
                   inside);
  }
}

/// Whether the kernels apply a rotary position embedding.
TG_DEVICE bool rotates(const Params &p) { return p.ropeCos != 0; }

/// Rows [0, Rows) of a shared tile of padded rows, positions row0.., turned
/// in place by the rotary position embedding: pair (i, i + D/2) of position
/// t by the angle of table row t, in f32, then rounded to bf16 (as tg.rope
/// rounds its result). Rows from `rows` on (zeros) are left as they are.
template <int D, int Rows = kTileRows>
TG_DEVICE void rotateTile(uint16_t *tile, const Params &p, int row0, int rows) {
  constexpr int half = D / 2, words = half / 2;
  const float *cosines = reinterpret_cast<const float *>(p.ropeCos);
  const float *sines = reinterpret_cast<const float *>(p.ropeSin);
  for (int i = threadId(); i < Rows * words; i += kThreads) {
    const int r = i / words, c = 2 * (i % words);
    if (row0 + r >= rows)
      continue;
    uint16_t *x = tile + r * paddedRow(D) + c;
    const uint32_t first = loadWord(x), second = loadWord(x + half);
    const int64_t at = int64_t(row0 + r) * half + c;
    float y1[2], y2[2];
    for (int j = 0; j < 2; ++j) {
      const float x1 = bf16ToFloat(uint16_t(first >> 16 * j));
      const float x2 = bf16ToFloat(uint16_t(second >> 16 * j));
      const float cs = cosines[at + j], sn = sines[at + j];
      y1[j] = x1 * cs - x2 * sn;
      y2[j] = x2 * cs + x1 * sn;
    }
    storeWord(x, packBf16(y1[0], y1[1]));
    storeWord(x + half, packBf16(y2[0], y2[1]));
  }
}

/// A warp's accumulators (16 rows x D of positions row0 + lane / 4 and + 8)
/// turned back by the rotary position embedding: the gradients of the
/// rows before their rotation. Columns d and d + D/2 of a row lie with the
/// same lane (fragments dt and dt + D/16). Rows from `rows` on are left.
template <int D>
TG_DEVICE void rotateBack(float (&acc)[D / 8][4], const Params &p, int row0, int rows) {
  constexpr int half = D / 2;
  const float *cosines = reinterpret_cast<const float *>(p.ropeCos);
  const float *sines = reinterpret_cast<const float *>(p.ropeSin);
  const int group = laneId() / 4, inGroup = laneId() % 4;
  for (int h = 0; h < 2; ++h) {
    const int t = row0 + group + 8 * h;
    if (t >= rows)
      continue;
    for (int dt = 0; dt < D / 16; ++dt)
      for (int j = 0; j < 2; ++j) {
        const int64_t at = int64_t(t) * half + dt * 8 + 2 * inGroup + j;
        const float cs = cosines[at], sn = sines[at];
        float &x1 = acc[dt][2 * h + j], &x2 = acc[dt + D / 16][2 * h + j];
        const float y1 = x1 * cs + x2 * sn, y2 = x2 * cs - x1 * sn;
        x1 = y1;
        x2 = y2;
      }
  }
}

/// A query block's tiles (forward, query gradients) rotated once they have
/// landed, where the kernels apply a rotary position embedding: its query
/// tile with the first key tile, and each key tile; then the barrier before
/// its warps read them.
template <int D>
TG_DEVICE void rotateLandedTiles(const Params &p, uint16_t *queryTile, int q0, bool firstKeyTile,
                                 uint16_t *keyTile, int k0) {
  if (!rotates(p))
    return;
  if (firstKeyTile)
    rotateTile<D>(queryTile, p, q0, p.queryLen);
  rotateTile<D>(keyTile, p, k0, p.keyLen);
  syncThreads();
}

/// Waits for this thread's copies, then for the block: the tiles copied
/// last are in, and every warp is done with what it computed before.
TG_DEVICE void awaitTiles() {
  waitAsyncCopies<0>();
  syncThreads();
}

/// A warp's 16 rows of a shared tile (`tile` at the warp's first row) to rows
/// [row0, row0 + 16) of head (b, h); rows from `rows` on are not written.
template <int D>
TG_DEVICE void storeWarpRows(const Tensor &t, int b, int h, int row0, int rows,
                             const uint16_t *tile) {
  constexpr int chunks = D / 8;
  for (int i = laneId(); i < 16 * chunks; i += 32) {
    int r = i / chunks, c = i % chunks;
    if (row0 + r < rows)
      storeChunk(rowOf(t, b, h, row0 + r) + 8 * c, loadChunk(tile + r * paddedRow(D) + 8 * c));
  }
}

/// Accumulator fragments (16 rows x D, f32) times `scale`, rounded to bf16
/// into the warp's 16 rows of a shared tile (`tile` at its first row), then
/// to rows [row0, row0 + 16) of head (b, h).
template <int D>
TG_DEVICE void writeWarpRows(float (&acc)[D / 8][4], float scale, uint16_t *tile,
                             const Tensor &t, int b, int h, int row0, int rows) {
  const int group = laneId() / 4, inGroup = laneId() % 4;
  for (int dt = 0; dt < D / 8; ++dt)
    for (int half = 0; half < 2; ++half)
      storeWord(tile + (group + 8 * half) * paddedRow(D) + dt * 8 + 2 * inGroup,
                packBf16(acc[dt][2 * half] * scale, acc[dt][2 * half + 1] * scale));
  syncWarp();
  storeWarpRows<D>(t, b, h, row0, rows, tile);
}

// Fragments of mma.m16n8k16 from shared tiles of padded rows (`ld` elements
// apart), four 8 x 8 matrices at a time (ldmatrix): lane l names row l % 8
// of matrix l / 8.

/// A (16 x 16): rows r0.. and columns k0.. of the tile; the matrices are
/// (rows, columns) (r0, k0), (r0 + 8, k0), (r0, k0 + 8), (r0 + 8, k0 + 8).
TG_DEVICE void loadA(uint32_t a[4], const uint16_t *tile, int ld, int r0, int k0) {
  const int lane = laneId();
  loadMatrices(a, tile + (r0 + lane % 8 + 8 * (lane / 8 % 2)) * ld + k0 + 8 * (lane / 16));
}
/// A (16 x 16) of a tile stored transposed: A's rows r0.. are the tile's
/// columns, A's columns k0.. its rows (ldmatrix .trans of the same four
/// matrices as loadA).
TG_DEVICE void loadATransposed(uint32_t a[4], const uint16_t *tile, int ld, int r0, int k0) {
  const int lane = laneId();
  loadMatricesTransposed(a,
                         tile + (k0 + lane % 8 + 8 * (lane / 16)) * ld + r0 + 8 * (lane / 8 % 2));
}
/// Two B (16 x 8) fragments, b[0..1] and b[2..3]: the transposes of rows
/// n0.. and n0 + 8.. (8 each), columns k0.. of the tile; column n of B is a
/// row of the tile (keys against queries).
TG_DEVICE void loadTwoBTransposed(uint32_t b[4], const uint16_t *tile, int ld, int n0, int k0) {
  const int lane = laneId();
  loadMatrices(b, tile + (n0 + lane % 8 + 8 * (lane / 16)) * ld + k0 + 8 * (lane / 8 % 2));
}
/// Two B (16 x 8) fragments, b[0..1] and b[2..3]: rows k0.. (16) and
/// columns n0.. and n0 + 8.. of the tile itself, transposed as loaded.
TG_DEVICE void loadTwoB(uint32_t b[4], const uint16_t *tile, int ld, int k0, int n0) {
  const int lane = laneId();
  loadMatricesTransposed(b, tile + (k0 + lane % 8 + 8 * (lane / 8 % 2)) * ld + n0 + 8 * (lane / 16));
}
/// The A fragment of columns 16 kc.. of 16 x Cols accumulators: a warp's
/// products become the next product's left operand without leaving
/// registers (the accumulator and A layouts line up).
template <int Cols>
TG_DEVICE void accumulatorsAsA(uint32_t a[4], const float (&acc)[Cols / 8][4], int kc) {
  a[0] = packBf16(acc[2 * kc][0], acc[2 * kc][1]);
  a[1] = packBf16(acc[2 * kc][2], acc[2 * kc][3]);
  a[2] = packBf16(acc[2 * kc + 1][0], acc[2 * kc + 1][1]);
  a[3] = packBf16(acc[2 * kc + 1][2], acc[2 * kc + 1][3]);
}

/// acc (16 x Cols) = rows r0.. of `left` (16 x D) times the transpose of
/// the Cols rows of `right` (Cols x D): a warp's scores.
template <int D, int Cols>
TG_DEVICE void rowsTimesTransposed(float (&acc)[Cols / 8][4], const uint16_t *left, int r0,
                                   const uint16_t *right) {
  for (int nt = 0; nt < Cols / 8; ++nt)
    for (int i = 0; i < 4; ++i)
      acc[nt][i] = 0;
  for (int kc = 0; kc < D / 16; ++kc) {
    uint32_t a[4];
    loadA(a, left, paddedRow(D), r0, kc * 16);
    for (int nt = 0; nt < Cols / 8; nt += 2) {
      uint32_t b[4];
      loadTwoBTransposed(b, right, paddedRow(D), nt * 8, kc * 16);
      mma16816(acc[nt], a, b);
      mma16816(acc[nt + 1], a, b + 2);
    }
  }
}

/// acc (16 x D) += lhs (16 x Inner, accumulators rounded to bf16) times the
/// Inner rows of `tile` (Inner x D).
template <int D, int Inner>
TG_DEVICE void accumulateTimesTile(float (&acc)[D / 8][4], const float (&lhs)[Inner / 8][4],
                                   const uint16_t *tile) {
  for (int kc = 0; kc < Inner / 16; ++kc) {
    uint32_t a[4];
    accumulatorsAsA<Inner>(a, lhs, kc);
    for (int dt = 0; dt < D / 8; dt += 2) {
      uint32_t b[4];
      loadTwoB(b, tile, paddedRow(D), kc * 16, dt * 8);
      mma16816(acc[dt], a, b);
      mma16816(acc[dt + 1], a, b + 2);
    }
  }
}

/// A block of the forward or of the query gradients: batch row b, query
/// head h and its key head kh, its first query q0, and the keys its queries
/// see.
struct QueryBlock {
  int b, h, kh, q0;
  Range keys;

  TG_DEVICE explicit QueryBlock(const Params &p)
      : b(blockY() / p.queryHeads), h(blockY() % p.queryHeads), kh(h / (p.queryHeads / p.keyHeads)),
        // A causal block of later queries sees more keys: those start first.
        q0((p.causal ? gridX() - 1 - blockX() : blockX()) * kBlockRows),
        keys(keysSeenBy(p, q0, minOf(q0 + kBlockRows, p.queryLen) - 1)) {}
};

/// Two stages of a pair of tiles of `Rows` padded rows (k and v, or q and
/// dO) that a loop runs over: stage 0's two tiles, then stage 1's.
/// Addressed by arithmetic: an array of pointers indexed by the stage would
/// live in local memory.
template <int D, int Rows>
struct TileStages {
  static constexpr int kTile = Rows * paddedRow(D);
  uint16_t *tiles;

  TG_DEVICE uint16_t *first(int stage) const { return tiles + 2 * stage * kTile; }
  TG_DEVICE uint16_t *second(int stage) const { return first(stage) + kTile; }
  /// Where the shared memory after them starts.
  TG_DEVICE uint16_t *end() const { return tiles + 4 * kTile; }
};

/// The forward's and the query gradients' stages: keys, then values.
template <int D>
using KeyValueStages = TileStages<D, kTileRows>;

/// Copies the key and value tiles of keys k0.. of head (b, kh) into `stage`
/// where k0 is before `end`, and commits the copies (none, past the end).
template <int D>
TG_DEVICE void loadKeyValueStage(const KeyValueStages<D> &stages, const Params &p, int b, int kh,
                                 int k0, int end, int stage) {
  if (k0 < end) {
    loadTile<D>(stages.first(stage), p.key, b, kh, k0, p.keyLen);
    loadTile<D>(stages.second(stage), p.value, b, kh, k0, p.keyLen);
  }
  commitAsyncCopies();
}

/// A forward warp's 16 rows t0.. against the key tile k0..: `score` (their
/// raw scores) becomes the tile's exponentials against the rows' running
/// maxima, which it raises, rescaling the running sums and the result's
/// accumulators `out` to them (FlashAttention's online softmax, in log2
/// units). Keys a row does not see score -inf (unless `wholeTile`).
template <int D>
TG_DEVICE void softmaxOnline(float (&score)[kTileRows / 8][4], float (&out)[D / 8][4],
                             float (&runningMax)[2], float (&runningSum)[2], const Params &p,
                             int t0, int k0, bool wholeTile) {
  const int group = laneId() / 4, inGroup = laneId() % 4;
  const float scaleLog2 = p.scale * kLog2e;
  for (int half = 0; half < 2; ++half) {
    const int t = t0 + group + 8 * half;
    float rowMax = kMinusInfinity;
    for (int nt = 0; nt < kTileRows / 8; ++nt)
      for (int j = 0; j < 2; ++j) {
        float &x = score[nt][2 * half + j];
        x = wholeTile || visible(p, t, k0 + nt * 8 + 2 * inGroup + j) ? x * scaleLog2
                                                                      : kMinusInfinity;
        rowMax = maxOf(rowMax, x);
      }
    // A row's scores of the tile lie with the 4 lanes of its group.
    rowMax = maxOf(rowMax, shuffleXor(rowMax, 1));
    rowMax = maxOf(rowMax, shuffleXor(rowMax, 2));
    const float newMax = maxOf(runningMax[half], rowMax);
    // While a row has seen no key, exp2(-inf - 0) keeps everything 0.
    const float base = newMax == kMinusInfinity ? 0.f : newMax;
    const float rescale = exp2Fast(runningMax[half] - base);
    runningMax[half] = newMax;
    runningSum[half] *= rescale;
    for (int dt = 0; dt < D / 8; ++dt) {
      out[dt][2 * half] *= rescale;
      out[dt][2 * half + 1] *= rescale;
    }
    // The tile's 16 exponentials are summed apart, then added: blockwise.
    float tileSum = 0;
    for (int nt = 0; nt < kTileRows / 8; ++nt)
      for (int j = 0; j < 2; ++j) {
        float &x = score[nt][2 * half + j];
        x = exp2Fast(x - base);
        tileSum += x;
      }
    runningSum[half] += tileSum;
  }
}

template <int D>
TG_DEVICE void forward(const Params &p) {
  TG_SHARED_BYTES(shared);
  constexpr int ld = paddedRow(D);
  uint16_t *queryTile = reinterpret_cast<uint16_t *>(shared);
  const KeyValueStages<D> stages{queryTile + kBlockRows * ld};
  const auto [b, h, kh, q0, keys] = QueryBlock(p);
  const int group = laneId() / 4, inGroup = laneId() % 4, r0 = warpId() * 16;
  const int t0 = q0 + r0; // the warp's first query
  // The keys the warp's queries see: none where all its rows are past the
  // last query (the last block's).
  const Range warpKeys =
      t0 < p.queryLen ? keysSeenBy(p, t0, minOf(t0 + 16, p.queryLen) - 1) : Range{0, 0};

  loadTile<D>(queryTile, p.query, b, h, q0, p.queryLen);
  const int firstKey = keys.first / kTileRows * kTileRows;
  loadKeyValueStage<D>(stages, p, b, kh, firstKey, keys.end, 0);
  float out[D / 8][4] = {};
  float runningMax[2] = {kMinusInfinity, kMinusInfinity}, runningSum[2] = {0, 0};
  for (int k0 = firstKey, stage = 0; k0 < keys.end; k0 += kTileRows, stage ^= 1) {
    awaitTiles();
    loadKeyValueStage<D>(stages, p, b, kh, k0 + kTileRows, keys.end, stage ^ 1);
    rotateLandedTiles<D>(p, queryTile, q0, k0 == firstKey, stages.first(stage), k0);
    // A tile none of the warp's queries sees would leave its rows as they
    // are (a window's first tiles for a block's later warps, every tile for
    // warps past the last query).
    if (k0 >= warpKeys.end || k0 + kTileRows <= warpKeys.first)
      continue;
    const uint16_t *keyTile = stages.first(stage), *valueTile = stages.second(stage);
    float score[kTileRows / 8][4];
    rowsTimesTransposed<D, kTileRows>(score, queryTile, r0, keyTile);
    softmaxOnline<D>(score, out, runningMax, runningSum, p, t0, k0,
                     allVisible(p, t0, 16, k0, kTileRows));
    accumulateTimesTile<D, kTileRows>(out, score, valueTile);
  }

  for (int half = 0; half < 2; ++half) {
    float sum = runningSum[half];
    sum += shuffleXor(sum, 1);
    sum += shuffleXor(sum, 2);
    const float inverse = sum > 0 ? 1.f / sum : 0.f; // a row that sees no key is 0
    const int t = t0 + group + 8 * half;
    if (inGroup == 0 && t < p.queryLen)
      reinterpret_cast<float *>(p.logsumexp)[(int64_t(blockY()) * p.queryLen) + t] =
          sum > 0 ? (runningMax[half] + log2Fast(sum)) * kLn2 : kMinusInfinity;
    for (int dt = 0; dt < D / 8; ++dt) {
      out[dt][2 * half] *= inverse;
      out[dt][2 * half + 1] *= inverse;
    }
  }
  // The warp's rows of the query tile are its own (no other warp reads them)
  // once every copy into it has landed and every warp is done with it.
  awaitTiles();
  writeWarpRows<D>(out, 1.f, queryTile + r0 * ld, p.result, b, h, t0, p.queryLen);
}

/// delta = rowsum(dO * O), a warp a row.
template <int D>
TG_DEVICE void delta(const Params &p) {
  const int b = blockY() / p.queryHeads, h = blockY() % p.queryHeads;
  const int t = blockX() * 4 + warpId();
  float sum = 0;
  if (t < p.queryLen) {
    const uint16_t *o = rowOf(p.result, b, h, t), *g = rowOf(p.resultGrad, b, h, t);
    for (int d = 2 * laneId(); d < D; d += 64) {
      uint32_t ow = loadWord(o + d), gw = loadWord(g + d);
      sum += bf16ToFloat(uint16_t(ow)) * bf16ToFloat(uint16_t(gw)) +
             bf16ToFloat(uint16_t(ow >> 16)) * bf16ToFloat(uint16_t(gw >> 16));
    }
  }
  for (int mask = 16; mask >= 1; mask /= 2)
    sum += shuffleXor(sum, mask);
  if (laneId() == 0 && t < p.queryLen)
    reinterpret_cast<float *>(p.delta)[int64_t(blockY()) * p.queryLen + t] = sum;
  // The row's dQ sum starts from zero: the key blocks add to it next.
  if (p.queryGradSum && t < p.queryLen) {
    float *row =
        reinterpret_cast<float *>(p.queryGradSum) + (int64_t(blockY()) * p.queryLen + t) * D;
    for (int d = laneId(); d < D; d += 32)
      row[d] = 0;
  }
}

/// Copies the per-row f32s of `count` query rows of plane `bh` (log-sum-exp,
/// delta) into shared memory, asynchronously; rows from queryLen on get 0
/// (they see no key).
TG_DEVICE void loadRowStats(float *lse, float *rowDelta, const Params &p, int bh, int t0,
                            int count) {
  for (int i = threadId(); i < count; i += kThreads) {
    const bool inside = t0 + i < p.queryLen;
    const int64_t at = int64_t(bh) * p.queryLen + (inside ? t0 + i : 0);
    copyWordAsync(lse + i, reinterpret_cast<const float *>(p.logsumexp) + at, inside);
    copyWordAsync(rowDelta + i, reinterpret_cast<const float *>(p.delta) + at, inside);
  }
}

/// A tile's dS (`dsTransposed`: its keys x queries, bf16) times the key
/// tile, added to the query gradients' f32 sum of queries t0.. of plane
/// `bh`. Each warp takes 16 queries x 64 columns of the tile's dQ share.
template <int D, int Queries>
TG_DEVICE void addQueryGrads(const Params &p, const uint16_t *dsTransposed, const uint16_t *keyTile,
                             int bh, int t0) {
  constexpr int rowGroups = Queries / 16;
  static_assert(rowGroups * (D / 64) * 32 == kThreads, "a warp for each 16 x 64 of dQ");
  const int q0 = warpId() % rowGroups * 16, c0 = warpId() / rowGroups * 64;
  float acc[8][4] = {};
  for (int kc = 0; kc < kBlockRows / 16; ++kc) {
    uint32_t a[4];
    loadATransposed(a, dsTransposed, dsTransposedRow(D), q0, kc * 16);
    for (int dt = 0; dt < 8; dt += 2) {
      uint32_t b[4];
      loadTwoB(b, keyTile, paddedRow(D), kc * 16, c0 + dt * 8);
      mma16816(acc[dt], a, b);
      mma16816(acc[dt + 1], a, b + 2);
    }
  }
  const int group = laneId() / 4, inGroup = laneId() % 4;
  float *sum = reinterpret_cast<float *>(p.queryGradSum);
  for (int half = 0; half < 2; ++half) {
    const int t = t0 + q0 + group + 8 * half;
    if (t >= p.queryLen)
      continue;
    float *row = sum + (int64_t(bh) * p.queryLen + t) * D + c0 + 2 * inGroup;
    for (int dt = 0; dt < 8; ++dt)
      for (int j = 0; j < 2; ++j)
        atomicAddFloat(row + dt * 8 + j, acc[dt][2 * half + j]);
  }
}

/// dK and dV of 64 keys of head (b, kh), over the tiles of queries of every
/// query head of its group that see them; with `AddQuery`, each tile's
/// share of dQ too (addQueryGrads).
template <int D, bool AddQuery>
TG_DEVICE void keyValueGrads(const Params &p) {
  constexpr int Queries = keyGradQueryRows(D);
  TG_SHARED_BYTES(shared);
  constexpr int ld = paddedRow(D);
  // k and v; two stages of q and dO; two of log-sum-exp and delta (a
  // stage's at `stage` times rowsStage).
  uint16_t *keyTile = reinterpret_cast<uint16_t *>(shared);
  uint16_t *valueTile = keyTile + kBlockRows * ld;
  const TileStages<D, Queries> queryStages{valueTile + kBlockRows * ld};
  float *lseRows = reinterpret_cast<float *>(queryStages.end());
  float *deltaRows = lseRows + Queries;
  constexpr int rowsStage = 2 * Queries;
  uint16_t *dsTransposed = reinterpret_cast<uint16_t *>(lseRows + 2 * rowsStage);
  const int b = blockY() / p.keyHeads, kh = blockY() % p.keyHeads;
  const int groupSize = p.queryHeads / p.keyHeads;
  const int k0 = blockX() * kBlockRows; // causal: earlier keys, more queries, first
  const int group = laneId() / 4, inGroup = laneId() % 4, r0 = warpId() * 16;
  const float scaleLog2 = p.scale * kLog2e;

  // The loop's tiles: those of the queries that see the block's keys, for
  // each query head of the group in turn.
  const Range queries = queriesSeeing(p, k0, minOf(k0 + kBlockRows, p.keyLen) - 1);
  const int firstTile = queries.first / Queries;
  const int tilesPerHead = maxOf(0, (queries.end + Queries - 1) / Queries - firstTile);
  const int tiles = groupSize * tilesPerHead;
  auto firstQueryOf = [&](int tile) { return (firstTile + tile % tilesPerHead) * Queries; };
  auto headOf = [&](int tile) { return kh * groupSize + tile / tilesPerHead; };
  auto loadQueries = [&](int tile, int stage) {
    if (tile < tiles) {
      const int h = headOf(tile), t0 = firstQueryOf(tile);
      loadTile<D, Queries>(queryStages.first(stage), p.query, b, h, t0, p.queryLen);
      loadTile<D, Queries>(queryStages.second(stage), p.resultGrad, b, h, t0, p.queryLen);
      loadRowStats(lseRows + stage * rowsStage, deltaRows + stage * rowsStage, p,
                   b * p.queryHeads + h, t0, Queries);
    }
    commitAsyncCopies();
  };

  loadTile<D>(keyTile, p.key, b, kh, k0, p.keyLen);
  loadTile<D>(valueTile, p.value, b, kh, k0, p.keyLen);
  loadQueries(0, 0);
  float keyGrad[D / 8][4] = {}, valueGrad[D / 8][4] = {};
  for (int tile = 0, stage = 0; tile < tiles; ++tile, stage ^= 1) {
    awaitTiles();
    loadQueries(tile + 1, stage ^ 1);
    const int t0 = firstQueryOf(tile);
    if (rotates(p)) {
      if (tile == 0)
        rotateTile<D>(keyTile, p, k0, p.keyLen);
      rotateTile<D, Queries>(queryStages.first(stage), p, t0, p.queryLen);
      syncThreads();
    }
    const uint16_t *queryTile = queryStages.first(stage), *gradTile = queryStages.second(stage);
    const float *lse = lseRows + stage * rowsStage, *rowDelta = deltaRows + stage * rowsStage;
    // P^T: the warp's 16 keys against the tile's queries.
    float probs[Queries / 8][4];
    rowsTimesTransposed<D, Queries>(probs, keyTile, r0, queryTile);
    const bool wholeTile = allVisible(p, t0, Queries, k0, kBlockRows);
    for (int nt = 0; nt < Queries / 8; ++nt)
      for (int i = 0; i < 4; ++i) {
        const int s = k0 + r0 + group + (i >= 2 ? 8 : 0);
        const int col = nt * 8 + 2 * inGroup + (i & 1);
        probs[nt][i] = wholeTile || (t0 + col < p.queryLen && visible(p, t0 + col, s))
                           ? exp2Fast(probs[nt][i] * scaleLog2 - lse[col] * kLog2e)
                           : 0.f;
      }
    accumulateTimesTile<D, Queries>(valueGrad, probs, gradTile); // dV += P^T dO
    float dprobs[Queries / 8][4];
    rowsTimesTransposed<D, Queries>(dprobs, valueTile, r0, gradTile); // dP^T = V dO^T
    for (int nt = 0; nt < Queries / 8; ++nt)
      for (int i = 0; i < 4; ++i)
        dprobs[nt][i] = probs[nt][i] * (dprobs[nt][i] - rowDelta[nt * 8 + 2 * inGroup + (i & 1)]);
    if constexpr (AddQuery) // the warp's 16 keys of dS^T, for every warp's dQ
      for (int nt = 0; nt < Queries / 8; ++nt)
        for (int half = 0; half < 2; ++half)
          storeWord(dsTransposed + (r0 + group + 8 * half) * dsTransposedRow(D) + nt * 8 +
                        2 * inGroup,
                    packBf16(dprobs[nt][2 * half], dprobs[nt][2 * half + 1]));
    accumulateTimesTile<D, Queries>(keyGrad, dprobs, queryTile); // dK += dS^T Q
    if constexpr (AddQuery) {
      syncThreads(); // the next tile's first barrier keeps dS until all have read it
      addQueryGrads<D, Queries>(p, dsTransposed, keyTile, b * p.queryHeads + headOf(tile), t0);
    }
  }
  // The warp's rows of the key and value tiles are its own once every copy
  // has landed (a block no query sees has not waited yet).
  awaitTiles();
  if (rotates(p))
    rotateBack<D>(keyGrad, p, k0 + r0, p.keyLen);
  writeWarpRows<D>(keyGrad, p.scale, keyTile + r0 * ld, p.keyGrad, b, kh, k0 + r0, p.keyLen);
  writeWarpRows<D>(valueGrad, 1.f, valueTile + r0 * ld, p.valueGrad, b, kh, k0 + r0, p.keyLen);
}

/// dQ of 64 queries of head (b, h).
template <int D>
TG_DEVICE void queryGrads(const Params &p) {
  TG_SHARED_BYTES(shared);
  constexpr int ld = paddedRow(D);
  // q, dO, log-sum-exp and delta; then k and v in two stages.
  uint16_t *queryTile = reinterpret_cast<uint16_t *>(shared);
  uint16_t *gradTile = queryTile + kBlockRows * ld;
  float *lse = reinterpret_cast<float *>(gradTile + kBlockRows * ld);
  float *rowDelta = lse + kBlockRows;
  const KeyValueStages<D> stages{reinterpret_cast<uint16_t *>(rowDelta + kBlockRows)};
  const auto [b, h, kh, q0, keys] = QueryBlock(p);
  const int group = laneId() / 4, inGroup = laneId() % 4, r0 = warpId() * 16;
  const float scaleLog2 = p.scale * kLog2e;

  loadTile<D>(queryTile, p.query, b, h, q0, p.queryLen);
  loadTile<D>(gradTile, p.resultGrad, b, h, q0, p.queryLen);
  loadRowStats(lse, rowDelta, p, blockY(), q0, kBlockRows);
  const int firstKey = keys.first / kTileRows * kTileRows;
  loadKeyValueStage<D>(stages, p, b, kh, firstKey, keys.end, 0);
  float queryGrad[D / 8][4] = {};
  for (int k0 = firstKey, stage = 0; k0 < keys.end; k0 += kTileRows, stage ^= 1) {
    awaitTiles();
    loadKeyValueStage<D>(stages, p, b, kh, k0 + kTileRows, keys.end, stage ^ 1);
    rotateLandedTiles<D>(p, queryTile, q0, k0 == firstKey, stages.first(stage), k0);
    const uint16_t *keyTile = stages.first(stage), *valueTile = stages.second(stage);
    float probs[8][4], dprobs[8][4];
    rowsTimesTransposed<D, kTileRows>(probs, queryTile, r0, keyTile);
    rowsTimesTransposed<D, kTileRows>(dprobs, gradTile, r0, valueTile); // dP = dO V^T
    const bool wholeTile = allVisible(p, q0, kBlockRows, k0, kTileRows);
    for (int nt = 0; nt < 8; ++nt)
      for (int i = 0; i < 4; ++i) {
        const int row = r0 + group + (i >= 2 ? 8 : 0);
        const int s = k0 + nt * 8 + 2 * inGroup + (i & 1);
        const float prob = wholeTile || (q0 + row < p.queryLen && visible(p, q0 + row, s))
                               ? exp2Fast(probs[nt][i] * scaleLog2 - lse[row] * kLog2e)
                               : 0.f;
        dprobs[nt][i] = prob * (dprobs[nt][i] - rowDelta[row]);
      }
    accumulateTimesTile<D, kTileRows>(queryGrad, dprobs, keyTile); // dQ += dS K
  }
  awaitTiles();
  if (rotates(p))
    rotateBack<D>(queryGrad, p, q0 + r0, p.queryLen);
  writeWarpRows<D>(queryGrad, p.scale, queryTile + r0 * ld, p.queryGrad, b, h, q0 + r0,
                   p.queryLen);
}

/// dQ of 64 queries of head (b, h) from the sum the key blocks added it to
/// (Params::queryGradSum): scaled, rotated back, rounded to bf16.
template <int D>
TG_DEVICE void queryGradsFromSum(const Params &p) {
  TG_SHARED_BYTES(shared);
  uint16_t *rows = reinterpret_cast<uint16_t *>(shared);
  const int b = blockY() / p.queryHeads, h = blockY() % p.queryHeads;
  const int q0 = blockX() * kBlockRows, r0 = warpId() * 16;
  const int group = laneId() / 4, inGroup = laneId() % 4;
  const float *sum = reinterpret_cast<const float *>(p.queryGradSum);
  float queryGrad[D / 8][4] = {};
  for (int half = 0; half < 2; ++half) {
    const int t = q0 + r0 + group + 8 * half;
    if (t >= p.queryLen)
      continue;
    const float *row = sum + (int64_t(blockY()) * p.queryLen + t) * D + 2 * inGroup;
    for (int dt = 0; dt < D / 8; ++dt)
      for (int j = 0; j < 2; ++j)
        queryGrad[dt][2 * half + j] = row[dt * 8 + j];
  }
  if (rotates(p))
    rotateBack<D>(queryGrad, p, q0 + r0, p.queryLen);
  writeWarpRows<D>(queryGrad, p.scale, rows + r0 * paddedRow(D), p.queryGrad, b, h, q0 + r0,
                   p.queryLen);
}

} // namespace
} // namespace tg::flash

// Registers: at most 128 a thread for `delta` and the summed dQ's last pass
// (4 blocks a multiprocessor), 168 for the head-dim-64 forward (3), 255 for
// the rest (2), none spilling (ptxas -v).
#define TG_FLASH_ATTENTION_KERNELS(D)                                                              \
  TG_KERNEL_128(D == 64 ? 3 : 2) tg_flash_attention_forward_d##D(tg::flash::Params p) {            \
    tg::flash::forward<D>(p);                                                                      \
  }                                                                                                \
  TG_KERNEL_128(4) tg_flash_attention_delta_d##D(tg::flash::Params p) { tg::flash::delta<D>(p); }  \
  TG_KERNEL_128(2) tg_flash_attention_key_value_grads_d##D(tg::flash::Params p) {                  \
    tg::flash::keyValueGrads<D, false>(p);                                                         \
  }                                                                                                \
  TG_KERNEL_128(2) tg_flash_attention_query_grads_d##D(tg::flash::Params p) {                      \
    tg::flash::queryGrads<D>(p);                                                                   \
  }                                                                                                \
  TG_KERNEL_128(2) tg_flash_attention_key_value_grads_adding_query_d##D(tg::flash::Params p) {     \
    tg::flash::keyValueGrads<D, true>(p);                                                          \
  }                                                                                                \
  TG_KERNEL_128(4) tg_flash_attention_query_grads_from_sum_d##D(tg::flash::Params p) {             \
    tg::flash::queryGradsFromSum<D>(p);                                                            \
  }
TG_FLASH_ATTENTION_KERNELS(64)
TG_FLASH_ATTENTION_KERNELS(128)
