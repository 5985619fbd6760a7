#include "CudnnAttention.h"

#include "LoadOnce.h"
#include "tg/runtime/AttentionLayout.h"

#include <cudnn.h>

#include <dlfcn.h>

#include <cstdlib>
#include <limits>
#include <tuple>
#include <utility>

namespace tg::runtime::cuda {

#define TG_CUDNN_FUNCTIONS(X)                                                                      \
  X(cudnnGetVersion)                                                                               \
  X(cudnnGetErrorString) X(cudnnGetLastErrorString) X(cudnnCreate) X(cudnnDestroy)                 \
      X(cudnnSetStream) X(cudnnBackendCreateDescriptor) X(cudnnBackendDestroyDescriptor)           \
          X(cudnnBackendSetAttribute) X(cudnnBackendGetAttribute) X(cudnnBackendFinalize)          \
              X(cudnnBackendExecute)

struct CudnnApi {
#define TG_CUDNN_DECLARE(name) decltype(&::name) name = nullptr;
  TG_CUDNN_FUNCTIONS(TG_CUDNN_DECLARE)
#undef TG_CUDNN_DECLARE

  /// "WHAT: CUDNN_STATUS_... (cuDNN's own account of the last error)".
  std::string errorText(const std::string &what, cudnnStatus_t status) const {
    char detail[1024] = {0};
    cudnnGetLastErrorString(detail, sizeof(detail) - 1);
    return what + ": " + cudnnGetErrorString(status) +
           (detail[0] ? std::string(" (") + detail + ")" : "");
  }
};

/// cuDNN 9.0 is the first whose fused attention takes the graphs below.
constexpr size_t kOldestCudnn = 90000;
/// Before 9.6 the query gradient's f32 sums must be zeroed by the caller.
constexpr size_t kCudnnZeroesSums = 90600;

static bool loadCudnn(CudnnApi &api, std::string &error) {
  const char *named = std::getenv("TG_CUDNN_LIBRARY");
  const char *path = named && *named ? named : "libcudnn.so.9";
  void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    error = std::string("cuDNN (") + path + ") cannot be loaded (" + dlerror() +
            "): install cuDNN 9, add its lib folder to LD_LIBRARY_PATH or name the library in "
            "TG_CUDNN_LIBRARY";
    return false;
  }
#define TG_CUDNN_RESOLVE(name)                                                                     \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(library, #name));                          \
  if (!api.name) {                                                                                 \
    error = std::string("cuDNN (") + path + ") lacks " #name ": install cuDNN 9";                  \
    return false;                                                                                  \
  }
  TG_CUDNN_FUNCTIONS(TG_CUDNN_RESOLVE)
#undef TG_CUDNN_RESOLVE
  if (size_t version = api.cudnnGetVersion(); version < kOldestCudnn) {
    error = std::string("cuDNN (") + path + ") is version " + std::to_string(version) +
            ", older than 9.0, whose fused attention graphs the runtime builds";
    dlclose(library);
    return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// The problem
//===----------------------------------------------------------------------===//

AttentionProblem AttentionProblem::of(const tgx::Attention &a) {
  AttentionProblem p;
  p.gradient = a.pass() == tgx::AttentionPass_Gradient;
  p.batch = a.batch();
  p.queryHeads = a.query_heads();
  p.keyHeads = a.key_heads();
  p.queryLen = a.query_len();
  p.keyLen = a.key_len();
  p.headDim = a.head_dim();
  p.causal = a.causal();
  p.window = a.window();
  p.scale = a.scale();
  p.strides.assign(a.strides()->begin(), a.strides()->end());
  return p;
}

bool AttentionProblem::operator<(const AttentionProblem &o) const {
  return std::tie(gradient, batch, queryHeads, keyHeads, queryLen, keyLen, headDim, causal, window,
                  scale, strides) < std::tie(o.gradient, o.batch, o.queryHeads, o.keyHeads,
                                             o.queryLen, o.keyLen, o.headDim, o.causal, o.window,
                                             o.scale, o.strides);
}

std::string CudnnAttention::refusal(const tgx::Attention &a) {
  if (a.rope_frequencies())
    return "its rotary position embedding is applied inside the runtime's kernels, not in "
           "cuDNN's graph";
  return "";
}

std::string CudnnAttention::refusal(const AttentionProblem &p, size_t version) {
  const std::string cudnn = "cuDNN " + std::to_string(version / 10000) + "." +
                            std::to_string(version / 100 % 100) + "." +
                            std::to_string(version % 100);
  if (version == 91000 || version == 91001)
    return cudnn + " has known bugs in its bf16 fused attention (cuDNN's frontend refuses it)";
  if (p.window && !p.causal)
    return "a sliding window without the causal mask is not in the runtime's cuDNN graph";
  if (p.window && p.queryLen > p.keyLen)
    return "cuDNN's sliding window needs no more queries than keys";
  if (p.window && version < 90200)
    return cudnn + " has no sliding window (9.2 and later)";
  if (p.gradient && p.queryLen == 1 && p.keyLen == 1)
    return "cuDNN's gradient takes more than one query and key";
  if (!p.gradient && p.causal && p.queryLen == 1 && version < 91000)
    return cudnn + " takes one causal query from 9.10 on";
  // Up to 9.15.0 the gradient needs a padding mask where the keys do not
  // fill its tiles of 128, which cuDNN's frontend adds; this graph has none.
  if (p.gradient && p.keyLen % 128 != 0 && version <= 91500)
    return cudnn + "'s gradient over " + std::to_string(p.keyLen) +
           " keys (not a multiple of 128) needs a padding mask the runtime's graph lacks "
           "(9.15.1 and later do not)";
  return "";
}

//===----------------------------------------------------------------------===//
// Graphs on cuDNN's backend API
//===----------------------------------------------------------------------===//

namespace {

/// A backend descriptor, destroyed with its owner.
class Descriptor {
public:
  Descriptor() = default;
  Descriptor(const CudnnApi *api, cudnnBackendDescriptor_t d) : api(api), d(d) {}
  Descriptor(Descriptor &&o) noexcept : api(o.api), d(o.d) { o.d = nullptr; }
  Descriptor &operator=(Descriptor &&o) noexcept {
    std::swap(api, o.api);
    std::swap(d, o.d);
    return *this;
  }
  ~Descriptor() {
    if (d)
      api->cudnnBackendDestroyDescriptor(d);
  }
  cudnnBackendDescriptor_t get() const { return d; }

private:
  const CudnnApi *api = nullptr;
  cudnnBackendDescriptor_t d = nullptr;
};

/// The operations of one graph and the tensors they read and write. The
/// first failing call is kept in `error` and makes every later one a no-op,
/// so a graph reads as the list of its operations.
class GraphBuilder {
public:
  explicit GraphBuilder(const CudnnApi &api) : api(api) {}

  bool failed() const { return !error.empty(); }

  /// A tensor in memory (bound to an address at run time); its unique id.
  int64_t memory(cudnnDataType_t type, std::vector<int64_t> dims, std::vector<int64_t> strides,
                 const char *name) {
    return tensor(type, std::move(dims), std::move(strides), false, false, name);
  }
  /// A tensor only the fused kernels see, packed unless `strides` is given.
  int64_t intermediate(cudnnDataType_t type, std::vector<int64_t> dims,
                       std::vector<int64_t> strides = {}) {
    if (strides.empty()) {
      strides.assign(dims.size(), 1);
      for (size_t i = dims.size() - 1; i-- > 0;)
        strides[i] = strides[i + 1] * dims[i + 1];
    }
    return tensor(type, std::move(dims), std::move(strides), true, false, "an intermediate");
  }
  /// An f32 scalar passed by value (its address is the host's).
  int64_t scalar(const char *name) {
    return tensor(CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true, name);
  }

  void pointwise(const char *name, cudnnPointwiseMode_t mode, std::vector<int64_t> inputs,
                 int64_t output, cudnnDataType_t precision = CUDNN_DATA_FLOAT, int64_t axis = -1) {
    Descriptor pw = create(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, name);
    set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode, name);
    set(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &precision, name);
    if (mode == CUDNN_POINTWISE_GEN_INDEX)
      set(pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis, name);
    finalize(pw, name);
    Descriptor op = create(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, name);
    link(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw, name);
    const cudnnBackendAttributeName_t ports[] = {CUDNN_ATTR_OPERATION_POINTWISE_XDESC,
                                                 CUDNN_ATTR_OPERATION_POINTWISE_BDESC,
                                                 CUDNN_ATTR_OPERATION_POINTWISE_TDESC};
    for (size_t i = 0; i < inputs.size() && i < 3; ++i)
      link(op, ports[i], tensorOf(inputs[i]), name);
    link(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, tensorOf(output), name);
    const float one = 1;
    set(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1, &one, name);
    set(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1, &one, name);
    finish(std::move(op), name);
    keep(std::move(pw));
  }

  /// c = a x b over the leading (batch, head) dims, in f32.
  void matmul(const char *name, int64_t a, int64_t b, int64_t c) {
    Descriptor mm = inF32(CUDNN_BACKEND_MATMUL_DESCRIPTOR, CUDNN_ATTR_MATMUL_COMP_TYPE, name);
    finalize(mm, name);
    operation(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR,
              {{CUDNN_ATTR_OPERATION_MATMUL_ADESC, &tensorOf(a)},
               {CUDNN_ATTR_OPERATION_MATMUL_BDESC, &tensorOf(b)},
               {CUDNN_ATTR_OPERATION_MATMUL_CDESC, &tensorOf(c)},
               {CUDNN_ATTR_OPERATION_MATMUL_DESC, &mm}},
              name);
    keep(std::move(mm));
  }

  /// y = x reduced (in f32) over the dims where y is 1 (a row's max or
  /// sum) or has fewer heads (the sum over a group's query heads).
  void reduction(const char *name, cudnnReduceTensorOp_t reduce, int64_t x, int64_t y) {
    Descriptor r = inF32(CUDNN_BACKEND_REDUCTION_DESCRIPTOR, CUDNN_ATTR_REDUCTION_COMP_TYPE, name);
    set(r, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &reduce, name);
    // Said explicitly from 9.11 on, as cuDNN's frontend does.
#if CUDNN_VERSION >= 91100 // the attribute's headers
    const bool deterministic = false;
    if (api.cudnnGetVersion() >= 91100)
      set(r, CUDNN_ATTR_REDUCTION_IS_DETERMINISTIC, CUDNN_TYPE_BOOLEAN, 1, &deterministic, name);
#endif
    finalize(r, name);
    operation(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR,
              {{CUDNN_ATTR_OPERATION_REDUCTION_XDESC, &tensorOf(x)},
               {CUDNN_ATTR_OPERATION_REDUCTION_YDESC, &tensorOf(y)},
               {CUDNN_ATTR_OPERATION_REDUCTION_DESC, &r}},
              name);
    keep(std::move(r));
  }

  /// y = x viewed with y's dims and strides (a transpose of the last two).
  void reshape(const char *name, int64_t x, int64_t y) {
    operation(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR,
              {{CUDNN_ATTR_OPERATION_RESHAPE_XDESC, &tensorOf(x)},
               {CUDNN_ATTR_OPERATION_RESHAPE_YDESC, &tensorOf(y)}},
              name);
  }

  const std::vector<Descriptor> &operations() const { return ops; }
  /// Every descriptor of the graph, to keep for as long as a plan of it.
  std::vector<Descriptor> release() {
    std::vector<Descriptor> all = std::move(tensors);
    for (std::vector<Descriptor> *more : {&ops, &parts})
      for (Descriptor &d : *more)
        all.push_back(std::move(d));
    return all;
  }
  std::string error;

private:
  int64_t tensor(cudnnDataType_t type, std::vector<int64_t> dims, std::vector<int64_t> strides,
                 bool isVirtual, bool byValue, const char *name) {
    const int64_t uid = int64_t(tensors.size()) + 1;
    Descriptor t = create(CUDNN_BACKEND_TENSOR_DESCRIPTOR, name);
    const int64_t alignment = 16;
    set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type, name);
    set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, int64_t(dims.size()), dims.data(), name);
    set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, int64_t(strides.size()), strides.data(),
        name);
    set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid, name);
    set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment, name);
    if (isVirtual)
      set(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &isVirtual, name);
    if (byValue)
      set(t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &byValue, name);
    finalize(t, name);
    tensors.push_back(std::move(t));
    return uid;
  }

  const Descriptor &tensorOf(int64_t uid) const { return tensors[size_t(uid - 1)]; }

  Descriptor create(cudnnBackendDescriptorType_t type, const char *name) {
    cudnnBackendDescriptor_t d = nullptr;
    if (!failed())
      if (cudnnStatus_t s = api.cudnnBackendCreateDescriptor(type, &d))
        error = api.errorText(std::string("creating ") + name, s);
    return Descriptor(&api, d);
  }
  void set(const Descriptor &d, cudnnBackendAttributeName_t attribute,
           cudnnBackendAttributeType_t type, int64_t count, const void *value, const char *name) {
    if (!failed())
      if (cudnnStatus_t s = api.cudnnBackendSetAttribute(d.get(), attribute, type, count, value))
        error = api.errorText(
            std::string("setting attribute ") + std::to_string(attribute) + " of " + name, s);
  }
  void link(const Descriptor &d, cudnnBackendAttributeName_t attribute, const Descriptor &to,
            const char *name) {
    cudnnBackendDescriptor_t target = to.get();
    set(d, attribute, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &target, name);
  }
  void finalize(const Descriptor &d, const char *name) {
    if (!failed())
      if (cudnnStatus_t s = api.cudnnBackendFinalize(d.get()))
        error = api.errorText(std::string("cuDNN rejects ") + name, s);
  }
  void finish(Descriptor op, const char *name) {
    finalize(op, name);
    ops.push_back(std::move(op));
  }
  void keep(Descriptor d) { parts.push_back(std::move(d)); }

  /// A descriptor of `type` that computes in f32 (its `computeType`
  /// attribute set), not yet finalized.
  Descriptor inF32(cudnnBackendDescriptorType_t type, cudnnBackendAttributeName_t computeType,
                   const char *name) {
    Descriptor d = create(type, name);
    const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    set(d, computeType, CUDNN_TYPE_DATA_TYPE, 1, &f32, name);
    return d;
  }
  /// An operation of `type` whose attributes name the given descriptors.
  void operation(
      cudnnBackendDescriptorType_t type,
      std::initializer_list<std::pair<cudnnBackendAttributeName_t, const Descriptor *>> links,
      const char *name) {
    Descriptor op = create(type, name);
    for (auto [attribute, to] : links)
      link(op, attribute, *to, name);
    finish(std::move(op), name);
  }

  const CudnnApi &api;
  std::vector<Descriptor> tensors; // [uid - 1]
  std::vector<Descriptor> ops, parts;
};

/// The tensors of an attention graph that a run binds: operands of the
/// command (-1: not in this pass's graph) and scalars.
struct Bindings {
  int64_t operand[10] = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1};
  // The masks' -inf: one scalar each, as cuDNN's frontend makes them.
  int64_t scale = -1, one = -1, minusInfinity = -1, windowMinusInfinity = -1, window = -1;
  int64_t querySums = -1; // f32 [b, hq, sq, d]: the query gradient's sums
};

/// A graph's command operands: their dims and strides, and their tensors,
/// bound in `b`.
struct Operands {
  GraphBuilder &g;
  const AttentionProblem &p;
  Bindings &b;

  /// Tensor operand `i` as [b, h, rows, d] at its strides, or transposed,
  /// [b, h, d, rows] (the keys and values as cuDNN's products take them).
  std::vector<int64_t> dims(unsigned i, bool transposed = false) const {
    const int64_t heads = isQuerySide(i) ? p.queryHeads : p.keyHeads;
    const int64_t rows = isQuerySide(i) ? p.queryLen : p.keyLen;
    return transposed ? std::vector<int64_t>{p.batch, heads, p.headDim, rows}
                      : std::vector<int64_t>{p.batch, heads, rows, p.headDim};
  }
  std::vector<int64_t> strides(unsigned i, bool transposed = false) const {
    const int64_t *s = p.strides.data() + 3 * attentionTensorIndex(i);
    return transposed ? std::vector<int64_t>{s[0], s[1], 1, s[2]}
                      : std::vector<int64_t>{s[0], s[1], s[2], 1};
  }
  /// The scores [b, hq, sq, skv] and a row's statistics [b, hq, sq, 1].
  std::vector<int64_t> scores() const { return {p.batch, p.queryHeads, p.queryLen, p.keyLen}; }
  std::vector<int64_t> rowStats() const { return {p.batch, p.queryHeads, p.queryLen, 1}; }

  /// bf16 tensor operand `i`.
  int64_t tensor(unsigned i, const char *name, bool transposed = false) {
    return b.operand[i] =
               g.memory(CUDNN_DATA_BFLOAT16, dims(i, transposed), strides(i, transposed), name);
  }
  /// f32 row statistics operand `i` (log-sum-exp, delta), packed.
  int64_t rowStatistics(unsigned i, const char *name) {
    return b.operand[i] = g.memory(CUDNN_DATA_FLOAT, rowStats(),
                                   {p.queryHeads * p.queryLen, p.queryLen, 1, 1}, name);
  }
};

/// The scaled scores with the causal mask and the sliding window (masked
/// scores -inf): what the forward and the backward graphs share. The masks
/// are cuDNN's frontend's diagonal bands: key index <= query index, then key
/// index + window > query index.
int64_t maskedScores(GraphBuilder &g, const AttentionProblem &p, int64_t scores, Bindings &b) {
  if (!p.causal)
    return scores;
  const std::vector<int64_t> dims{p.batch, p.queryHeads, p.queryLen, p.keyLen};
  auto indices = [&](int64_t of) {
    int64_t row = g.intermediate(CUDNN_DATA_INT32, dims);
    g.pointwise("the query index", CUDNN_POINTWISE_GEN_INDEX, {of}, row, CUDNN_DATA_FLOAT, 2);
    int64_t column = g.intermediate(CUDNN_DATA_INT32, dims);
    g.pointwise("the key index", CUDNN_POINTWISE_GEN_INDEX, {of}, column, CUDNN_DATA_FLOAT, 3);
    return std::pair(row, column);
  };
  auto select = [&](const char *name, int64_t of, int64_t visible, int64_t &minusInfinity) {
    minusInfinity = g.scalar("-inf");
    int64_t masked = g.intermediate(CUDNN_DATA_FLOAT, dims);
    g.pointwise(name, CUDNN_POINTWISE_BINARY_SELECT, {of, minusInfinity, visible}, masked);
    return masked;
  };
  auto [row, column] = indices(scores);
  int64_t visible = g.intermediate(CUDNN_DATA_BOOLEAN, dims);
  g.pointwise("the causal comparison", CUDNN_POINTWISE_CMP_GE, {row, column}, visible,
              CUDNN_DATA_BOOLEAN);
  int64_t masked = select("the causal mask", scores, visible, b.minusInfinity);
  if (p.window == 0 || p.window >= p.queryLen) // then it hides no key the causal mask shows
    return masked;
  auto [windowRow, windowColumn] = indices(masked);
  b.window = g.scalar("the window");
  int64_t shifted = g.intermediate(CUDNN_DATA_FLOAT, dims);
  g.pointwise("the key index plus the window", CUDNN_POINTWISE_ADD, {windowColumn, b.window},
              shifted);
  int64_t inside = g.intermediate(CUDNN_DATA_BOOLEAN, dims);
  g.pointwise("the window comparison", CUDNN_POINTWISE_CMP_GT, {shifted, windowRow}, inside,
              CUDNN_DATA_BOOLEAN);
  return select("the window mask", masked, inside, b.windowMinusInfinity);
}

/// Forward: O = softmax(scale * Q K^T, masked) V, and the rows'
/// log-sum-exp (cuDNN's "stats": the max plus the log of the sum).
Bindings forwardGraph(GraphBuilder &g, const AttentionProblem &p) {
  Bindings b;
  Operands in{g, p, b};
  const std::vector<int64_t> scores = in.scores(), rowStats = in.rowStats();
  int64_t q = in.tensor(kAttentionQuery, "the query");
  int64_t kT = in.tensor(kAttentionKey, "the key", true);
  int64_t v = in.tensor(kAttentionValue, "the value");
  b.scale = g.scalar("the scale");

  int64_t s = g.intermediate(CUDNN_DATA_FLOAT, scores);
  g.matmul("Q K^T", q, kT, s);
  int64_t scaled = g.intermediate(CUDNN_DATA_FLOAT, scores);
  g.pointwise("the scaling", CUDNN_POINTWISE_MUL, {s, b.scale}, scaled);
  int64_t masked = maskedScores(g, p, scaled, b);

  int64_t max = g.intermediate(CUDNN_DATA_FLOAT, rowStats);
  g.reduction("the rows' max", CUDNN_REDUCE_TENSOR_MAX, masked, max);
  int64_t shifted = g.intermediate(CUDNN_DATA_FLOAT, scores);
  g.pointwise("the max's subtraction", CUDNN_POINTWISE_SUB, {masked, max}, shifted);
  int64_t exps = g.intermediate(CUDNN_DATA_FLOAT, scores);
  g.pointwise("the exponentials", CUDNN_POINTWISE_EXP, {shifted}, exps);
  int64_t sum = g.intermediate(CUDNN_DATA_FLOAT, rowStats);
  g.reduction("the rows' sum", CUDNN_REDUCE_TENSOR_ADD, exps, sum);
  int64_t logSum = g.intermediate(CUDNN_DATA_FLOAT, rowStats);
  g.pointwise("the sum's log", CUDNN_POINTWISE_LOG, {sum}, logSum);
  int64_t lse = in.rowStatistics(kAttentionLogsumexp, "the log-sum-exp");
  g.pointwise("the log-sum-exp", CUDNN_POINTWISE_ADD, {max, logSum}, lse);
  int64_t probs = g.intermediate(CUDNN_DATA_BFLOAT16, scores);
  g.pointwise("the probabilities", CUDNN_POINTWISE_DIV, {exps, sum}, probs);
  g.matmul("P V", probs, v, in.tensor(kAttentionResult, "the result"));
  return b;
}

/// c = a x b, summed over each group of query heads where the keys' heads
/// are fewer (grouped-query attention): through a full-heads product.
void productToKeyHeads(GraphBuilder &g, const AttentionProblem &p, const char *name, int64_t a,
                       int64_t b, int64_t c) {
  if (p.queryHeads == p.keyHeads) {
    g.matmul(name, a, b, c);
    return;
  }
  int64_t full = g.intermediate(CUDNN_DATA_BFLOAT16, {p.batch, p.queryHeads, p.keyLen, p.headDim});
  g.matmul(name, a, b, full);
  g.reduction("the sum over a group's query heads", CUDNN_REDUCE_TENSOR_ADD, full, c);
}

/// Backward: dQ, dK, dV from Q, K, V, O, dO and the log-sum-exp,
/// recomputing P; rowsum(dO * O) goes to the command's delta.
Bindings backwardGraph(GraphBuilder &g, const AttentionProblem &p) {
  Bindings b;
  Operands in{g, p, b};
  const std::vector<int64_t> scores = in.scores(), rowStats = in.rowStats();
  const std::vector<int64_t> transposedScores{p.batch, p.queryHeads, p.keyLen, p.queryLen};
  const std::vector<int64_t> transposedStrides{p.queryHeads * p.queryLen * p.keyLen,
                                               p.queryLen * p.keyLen, 1, p.keyLen};
  int64_t q = in.tensor(kAttentionQuery, "the query");
  int64_t kT = in.tensor(kAttentionKey, "the key", true);
  int64_t vT = in.tensor(kAttentionValue, "the value", true);
  int64_t o = in.tensor(kAttentionResult, "the result");
  int64_t dO = in.tensor(kAttentionResultGrad, "the result's gradient");
  int64_t lse = in.rowStatistics(kAttentionLogsumexp, "the log-sum-exp");
  b.scale = g.scalar("the scale");
  b.one = g.scalar("one");

  // delta = rowsum(dO * O) (the products' strides are those cuDNN's
  // frontend gives them: the graph is matched as the frontend builds it)
  int64_t products = g.intermediate(
      CUDNN_DATA_FLOAT, in.dims(kAttentionResult),
      {p.queryHeads * p.queryLen * p.headDim, p.queryLen * p.headDim, p.queryHeads * p.headDim, 1});
  g.pointwise("dO * O", CUDNN_POINTWISE_MUL, {dO, o}, products);
  int64_t rowSums = g.intermediate(CUDNN_DATA_FLOAT, rowStats);
  g.reduction("rowsum(dO * O)", CUDNN_REDUCE_TENSOR_ADD, products, rowSums);
  int64_t delta = in.rowStatistics(kAttentionDelta, "delta");
  g.pointwise("delta", CUDNN_POINTWISE_MUL, {rowSums, b.one}, delta);

  // P = exp(scale * Q K^T - lse), masked
  int64_t s = g.intermediate(CUDNN_DATA_FLOAT, scores);
  g.matmul("Q K^T", q, kT, s);
  int64_t scaled = g.intermediate(CUDNN_DATA_FLOAT, scores);
  g.pointwise("the scaling", CUDNN_POINTWISE_MUL, {s, b.scale}, scaled);
  int64_t shifted = g.intermediate(CUDNN_DATA_FLOAT, scores);
  g.pointwise("the log-sum-exp's subtraction", CUDNN_POINTWISE_SUB, {scaled, lse}, shifted);
  int64_t masked = maskedScores(g, p, shifted, b);
  int64_t probs = g.intermediate(CUDNN_DATA_FLOAT, scores);
  g.pointwise("the probabilities", CUDNN_POINTWISE_EXP, {masked}, probs);

  // dV = P^T dO
  int64_t probsT = g.intermediate(CUDNN_DATA_BFLOAT16, transposedScores, transposedStrides);
  g.reshape("P^T", probs, probsT);
  productToKeyHeads(g, p, "P^T dO", probsT, dO,
                    in.tensor(kAttentionValueGrad, "the value's gradient"));

  // dS = scale * P * (dO V^T - delta)
  int64_t dP = g.intermediate(CUDNN_DATA_FLOAT, scores);
  g.matmul("dO V^T", dO, vT, dP);
  int64_t centred = g.intermediate(CUDNN_DATA_FLOAT, scores);
  g.pointwise("delta's subtraction", CUDNN_POINTWISE_SUB, {dP, delta}, centred);
  int64_t weighted = g.intermediate(CUDNN_DATA_FLOAT, scores);
  g.pointwise("the product with P", CUDNN_POINTWISE_MUL, {centred, probs}, weighted);
  int64_t dS = g.intermediate(CUDNN_DATA_FLOAT, scores);
  g.pointwise("the gradient's scaling", CUDNN_POINTWISE_MUL, {weighted, b.scale}, dS);

  // dK = dS^T Q
  int64_t dST = g.intermediate(CUDNN_DATA_BFLOAT16, transposedScores, transposedStrides);
  g.reshape("dS^T", dS, dST);
  productToKeyHeads(g, p, "dS^T Q", dST, q, in.tensor(kAttentionKeyGrad, "the key's gradient"));

  // dQ = dS K, summed in f32, then rounded (K's view is f32, as the
  // frontend's reshape leaves it)
  int64_t k = g.intermediate(CUDNN_DATA_FLOAT, in.dims(kAttentionKey), in.strides(kAttentionKey));
  g.reshape("K", kT, k);
  b.querySums =
      g.memory(CUDNN_DATA_FLOAT, in.dims(kAttentionQueryGrad),
               {p.queryHeads * p.queryLen * p.headDim, p.queryLen * p.headDim, p.headDim, 1},
               "the query gradient's sums");
  g.matmul("dS K", dS, k, b.querySums);
  g.pointwise("the query gradient's rounding", CUDNN_POINTWISE_IDENTITY, {b.querySums},
              in.tensor(kAttentionQueryGrad, "the query's gradient"));
  return b;
}

Bindings buildGraph(GraphBuilder &g, const AttentionProblem &p) {
  return p.gradient ? backwardGraph(g, p) : forwardGraph(g, p);
}

} // namespace

bool CudnnAttention::describe(const AttentionProblem &problem, std::string &error) {
  const CudnnApi *api = loadOnce(loadCudnn, error);
  if (!api)
    return false;
  GraphBuilder g(*api);
  buildGraph(g, problem);
  error = g.error;
  return !g.failed();
}

//===----------------------------------------------------------------------===//
// Plans and runs
//===----------------------------------------------------------------------===//

/// One problem's graph on the engine that takes it (and every descriptor
/// the plan was made from, kept with it as cuDNN's frontend keeps them).
struct CudnnPlan {
  std::vector<Descriptor> graph;
  Descriptor plan;
  Bindings bindings;
  float scale = 1, window = 0;
  uint64_t cudnnWorkspace = 0, querySumsBytes = 0;
};

CudnnAttention::Execution::~Execution() {
  if (pack)
    api->cudnnBackendDestroyDescriptor(static_cast<cudnnBackendDescriptor_t>(pack));
}

std::unique_ptr<CudnnAttention> CudnnAttention::load(const Driver &driver, std::string &error) {
  const CudnnApi *api = loadOnce(loadCudnn, error);
  if (!api)
    return nullptr;
  std::unique_ptr<CudnnAttention> cudnn(new CudnnAttention(driver));
  cudnn->api = api;
  cudnnHandle_t handle = nullptr;
  if (cudnnStatus_t s = api->cudnnCreate(&handle)) {
    error = api->errorText("cudnnCreate", s);
    return nullptr;
  }
  cudnn->handle = handle;
  return cudnn;
}

CudnnAttention::CudnnAttention(const Driver &driver) : driver(driver) {}

CudnnAttention::~CudnnAttention() {
  plans.clear();
  if (handle)
    api->cudnnDestroy(static_cast<cudnnHandle_t>(handle));
}

int CudnnAttention::plan(const AttentionProblem &problem, std::string &error) {
  if (auto it = planOf.find(problem); it != planOf.end())
    return it->second;
  if (auto it = refusedOf.find(problem); it != refusedOf.end()) {
    error = it->second;
    return -1;
  }
  int index = planNew(problem, error);
  if (index < 0)
    refusedOf.emplace(problem, error);
  return index;
}

int CudnnAttention::planNew(const AttentionProblem &problem, std::string &error) {
  error = refusal(problem, api->cudnnGetVersion());
  if (!error.empty())
    return -1;
  GraphBuilder g(*api);
  Bindings bindings = buildGraph(g, problem);
  if (g.failed()) {
    error = g.error;
    return -1;
  }
  auto check = [&](const char *what, cudnnStatus_t s) {
    if (s)
      error = api->errorText(what, s);
    return s == CUDNN_STATUS_SUCCESS;
  };
  auto create = [&](cudnnBackendDescriptorType_t type, Descriptor &d, const char *what) {
    cudnnBackendDescriptor_t raw = nullptr;
    bool ok = check(what, api->cudnnBackendCreateDescriptor(type, &raw));
    d = Descriptor(api, raw);
    return ok;
  };
  cudnnHandle_t h = static_cast<cudnnHandle_t>(handle);
  std::vector<cudnnBackendDescriptor_t> ops;
  for (const Descriptor &op : g.operations())
    ops.push_back(op.get());
// The handle attributes are deprecated from cuDNN 9.x on in favour of device
// properties, which the older cuDNN 9 releases lack.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  Descriptor graph;
  if (!create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, graph, "creating the operation graph") ||
      !check("setting the graph's handle",
             api->cudnnBackendSetAttribute(graph.get(), CUDNN_ATTR_OPERATIONGRAPH_HANDLE,
                                           CUDNN_TYPE_HANDLE, 1, &h)) ||
      !check("setting the graph's operations",
             api->cudnnBackendSetAttribute(graph.get(), CUDNN_ATTR_OPERATIONGRAPH_OPS,
                                           CUDNN_TYPE_BACKEND_DESCRIPTOR, int64_t(ops.size()),
                                           ops.data())) ||
      !check("cuDNN rejects the attention graph", api->cudnnBackendFinalize(graph.get())))
    return -1;

  // The engines cuDNN's heuristics propose for the graph, in their order:
  // false (with `error`) where the heuristics cannot be asked.
  auto propose = [&](cudnnBackendHeurMode_t mode, Descriptor &heuristics,
                     std::vector<Descriptor> &configs) {
    cudnnBackendDescriptor_t graphRaw = graph.get();
    if (!create(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, heuristics, "creating the heuristics") ||
        !check("setting the heuristics' graph",
               api->cudnnBackendSetAttribute(heuristics.get(),
                                             CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                                             CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graphRaw)) ||
        !check("setting the heuristics' mode",
               api->cudnnBackendSetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_MODE,
                                             CUDNN_TYPE_HEUR_MODE, 1, &mode)) ||
        !check("cuDNN has no heuristics for the attention graph",
               api->cudnnBackendFinalize(heuristics.get())))
      return false;
    int64_t count = 0;
    if (!check("counting the engines",
               api->cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                             CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr)))
      return false;
    configs.resize(size_t(std::max<int64_t>(count, 0)));
    std::vector<cudnnBackendDescriptor_t> configsRaw;
    for (Descriptor &c : configs) {
      if (!create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, c, "creating an engine configuration"))
        return false;
      configsRaw.push_back(c.get());
    }
    int64_t returned = 0;
    if (count > 0 &&
        !check("reading the engines",
               api->cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                             CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &returned,
                                             configsRaw.data())))
      return false;
    configs.resize(size_t(std::max<int64_t>(returned, 0)));
    return true;
  };
  // The first engine that takes the graph: of mode A's list (what cuDNN's
  // frontend asks for), then of the fallback list should none of those.
  // The plan refers to its engine configuration: what the heuristics gave
  // lives as long as the plan.
  auto made = std::make_unique<CudnnPlan>();
  std::vector<Descriptor> proposals;
  std::string rejections;
  int64_t proposed = 0;
  for (auto [mode, list] :
       {std::pair{CUDNN_HEUR_MODE_A, "mode A"}, std::pair{CUDNN_HEUR_MODE_FALLBACK, "fallback"}}) {
    Descriptor heuristics;
    std::vector<Descriptor> configs;
    bool asked = propose(mode, heuristics, configs);
    proposals.push_back(std::move(heuristics));
    if (!asked) {
      if (mode == CUDNN_HEUR_MODE_A)
        return -1;
      rejections += (rejections.empty() ? "" : "; ") + std::string(list) + ": " + error;
      break;
    }
    proposed += int64_t(configs.size());
    for (size_t i = 0; i < configs.size() && !made->plan.get(); ++i) {
      Descriptor candidate;
      if (!create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, candidate, "creating a plan"))
        return -1;
      cudnnBackendDescriptor_t config = configs[i].get();
      cudnnStatus_t s = api->cudnnBackendSetAttribute(
          candidate.get(), CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
      if (!s)
        s = api->cudnnBackendSetAttribute(candidate.get(), CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                          CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &config);
      if (!s)
        s = api->cudnnBackendFinalize(candidate.get());
      if (s) {
        rejections += (rejections.empty() ? "" : "; ") +
                      api->errorText(std::string(list) + " engine " + std::to_string(i), s);
        continue;
      }
      made->plan = std::move(candidate);
    }
    for (Descriptor &c : configs)
      proposals.push_back(std::move(c));
    if (made->plan.get())
      break;
  }
#pragma GCC diagnostic pop
  if (!made->plan.get()) {
    error = "cuDNN has no engine for the attention graph (" + std::to_string(proposed) +
            " proposed" + (rejections.empty() ? "" : ": " + rejections) + ")";
    return -1;
  }
  int64_t cudnnWorkspace = 0, got = 0;
  if (!check("reading the plan's workspace",
             api->cudnnBackendGetAttribute(made->plan.get(),
                                           CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                           CUDNN_TYPE_INT64, 1, &got, &cudnnWorkspace)))
    return -1;
  made->graph = g.release();
  made->graph.push_back(std::move(graph));
  for (Descriptor &d : proposals)
    made->graph.push_back(std::move(d));
  made->bindings = bindings;
  made->scale = problem.scale;
  made->window = float(problem.window);
  // cuDNN's workspace, then the sums 256-byte aligned.
  made->cudnnWorkspace = (uint64_t(cudnnWorkspace) + 255) / 256 * 256;
  if (problem.gradient)
    made->querySumsBytes =
        uint64_t(problem.batch * problem.queryHeads * problem.queryLen * problem.headDim) * 4;
  workspace = std::max(workspace, made->cudnnWorkspace + made->querySumsBytes);
  plans.push_back(std::move(made));
  planOf.emplace(problem, int(plans.size() - 1));
  return int(plans.size() - 1);
}

namespace {
const float kOne = 1;
/// The masked scores: -inf, or the lowest float before cuDNN 9.1, whose
/// softmax preferred it (as cuDNN's frontend does).
const float kMinusInfinity = -std::numeric_limits<float>::infinity();
const float kLowest = std::numeric_limits<float>::lowest();
constexpr size_t kCudnnTakesInfinity = 91000;
} // namespace

std::unique_ptr<CudnnAttention::Execution>
CudnnAttention::bind(int index, const std::vector<CUdeviceptr> &operands, CUdeviceptr scratch,
                     std::string &error) const {
  const CudnnPlan &plan = *plans[size_t(index)];
  std::unique_ptr<Execution> execution(new Execution());
  execution->api = api;
  execution->plan = &plan;
  std::vector<int64_t> uids;
  std::vector<void *> pointers;
  for (unsigned i = 0; i < 10; ++i)
    if (plan.bindings.operand[i] >= 0) {
      uids.push_back(plan.bindings.operand[i]);
      pointers.push_back(reinterpret_cast<void *>(operands[i]));
    }
  auto scalar = [&](int64_t uid, const float *value) {
    if (uid >= 0) {
      uids.push_back(uid);
      pointers.push_back(const_cast<float *>(value));
    }
  };
  scalar(plan.bindings.scale, &plan.scale);
  scalar(plan.bindings.window, &plan.window);
  scalar(plan.bindings.one, &kOne);
  const float *minusInfinity =
      api->cudnnGetVersion() < kCudnnTakesInfinity ? &kLowest : &kMinusInfinity;
  scalar(plan.bindings.minusInfinity, minusInfinity);
  scalar(plan.bindings.windowMinusInfinity, minusInfinity);
  if (plan.bindings.querySums >= 0) {
    execution->querySums = scratch + plan.cudnnWorkspace;
    uids.push_back(plan.bindings.querySums);
    pointers.push_back(reinterpret_cast<void *>(execution->querySums));
  }
  void *workspacePointer = reinterpret_cast<void *>(scratch);
  cudnnBackendDescriptor_t pack = nullptr;
  cudnnStatus_t s = api->cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack);
  execution->pack = pack;
  if (!s)
    s = api->cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64,
                                      int64_t(uids.size()), uids.data());
  if (!s)
    s = api->cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
                                      CUDNN_TYPE_VOID_PTR, int64_t(pointers.size()),
                                      pointers.data());
  if (!s)
    s = api->cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR,
                                      1, &workspacePointer);
  if (!s)
    s = api->cudnnBackendFinalize(pack);
  if (s) {
    error = api->errorText("binding the attention's buffers", s);
    return nullptr;
  }
  return execution;
}

bool CudnnAttention::run(const Execution &execution, CUstream stream, std::string &error) const {
  cudnnHandle_t h = static_cast<cudnnHandle_t>(handle);
  if (execution.querySums && api->cudnnGetVersion() < kCudnnZeroesSums)
    if (CUresult r = driver.cuMemsetD32Async(execution.querySums, 0,
                                             execution.plan->querySumsBytes / 4, stream)) {
      error = driver.errorText("cuMemsetD32Async", r);
      return false;
    }
  cudnnStatus_t s = api->cudnnSetStream(h, reinterpret_cast<cudaStream_t>(stream));
  if (!s)
    s = api->cudnnBackendExecute(h, execution.plan->plan.get(),
                                 static_cast<cudnnBackendDescriptor_t>(execution.pack));
  if (s) {
    error = api->errorText("cuDNN's attention", s);
    return false;
  }
  return true;
}

} // namespace tg::runtime::cuda
