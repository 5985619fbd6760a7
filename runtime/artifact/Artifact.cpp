// The artifact verifier. FlatBuffers' Verifier makes every accessor safe to
// call; the semantic checks after it make every command safe to execute: a
// backend trusts verified ranges and sizes and checks nothing itself.
#include "tg/runtime/Artifact.h"
#include "tg/runtime/AttentionLayout.h"
#include "tg/runtime/GemmLayout.h"

#include "tg/runtime/Hash.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <vector>

namespace tg::runtime {
namespace {

/// a * b, or false on u64 overflow.
bool mulOverflows(uint64_t a, uint64_t b, uint64_t &out) {
  return __builtin_mul_overflow(a, b, &out);
}

std::string rangeText(const tgx::BufferRange &r) {
  return "(offset " + std::to_string(r.offset()) + ", size " +
         std::to_string(r.size()) + ")";
}

bool isFloat(tgx::DType d) {
  return d == tgx::DType_F32 || d == tgx::DType_F64 || d == tgx::DType_BF16 ||
         d == tgx::DType_F16;
}

bool isScalar(const tgx::Slot &slot) { return slot.shape()->size() == 0; }

template <typename Shape> std::string shapeText(const Shape &shape) {
  std::string text = "[";
  for (auto it = shape.begin(); it != shape.end(); ++it)
    text += (it == shape.begin() ? "" : ", ") + std::to_string(*it);
  return text + "]";
}

bool readsFormatVersion(uint32_t version) {
  return version >= kOldestFormatVersion && version <= kFormatVersion;
}

std::string versionError(const std::string &source, uint32_t version) {
  return source + ": format_version " + std::to_string(version) +
         " is not supported by this runtime, which reads versions " +
         std::to_string(kOldestFormatVersion) + " to " + std::to_string(kFormatVersion) +
         "; re-compile the model with the tgc that matches this runtime";
}

uint64_t readU64(const uint8_t *p) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i)
    value = value << 8 | p[i];
  return value;
}

/// Semantic checks over a structurally valid program. Each check returns
/// false after recording one message via `fail`.
class Checker {
public:
  /// Checks `program`: the training step when `root` is null, otherwise
  /// `root`'s function number `index`.
  Checker(const tgx::Program &program, const std::string &source,
          std::string &error, const tgx::Program *root = nullptr, uint32_t index = 0)
      : program(program), source(source), error(error),
        arenaBytes(program.arena_bytes()), root(root) {
    if (root)
      prefix = "functions[" + std::to_string(index) + "]" +
               (program.name() ? " '" + program.name()->str() + "'" : "") + ".";
  }

  bool run() {
    if (!checkAlignment() || !checkHeader() || !checkSlots() || !checkConstants() ||
        !checkModules() || !checkCommands())
      return false;
    if (root)
      return checkFunctionParameters() && checkFunctionSlots();
    return checkParameters() && checkRequiredSlots() && checkFunctions();
  }

private:
  const tgx::Program &program;
  const std::string &source;
  std::string &error;
  uint64_t arenaBytes;
  const tgx::Program *root; // null for the training step itself
  std::string prefix;       // of field names in a function
  // Per module, per kernel: its first entry in kernel_operand_bytes.
  std::vector<std::vector<uint64_t>> operandBytesStart;

  bool fail(const std::string &field, const std::string &problem) {
    error = source + ": " + prefix + field + " " + problem +
            "; the artifact is corrupt or was written by a different tgc, "
            "re-compile the model with this tgc";
    return false;
  }

  bool checkRange(const tgx::BufferRange &r, const std::string &field) {
    if (r.offset() > arenaBytes || r.size() > arenaBytes - r.offset())
      return fail(field, rangeText(r) + " lies outside the arena of " +
                             std::to_string(arenaBytes) + " bytes");
    return true;
  }

  bool checkHeader() {
    if (!readsFormatVersion(program.format_version())) {
      error = versionError(source, program.format_version());
      return false;
    }
    if (program.target() < tgx::Target_MIN || program.target() > tgx::Target_MAX)
      return fail("target", "has the unknown value " +
                                std::to_string(int(program.target())));
    const tgx::TrainInfo &train = *program.train();
    if (train.batch_size() < 1 || train.seq_len() < 1 || train.vocab_size() < 1 ||
        train.vocab_size() > std::numeric_limits<int32_t>::max())
      return fail("train", "has batch_size " + std::to_string(train.batch_size()) +
                               ", seq_len " + std::to_string(train.seq_len()) +
                               ", vocab_size " + std::to_string(train.vocab_size()) +
                               " (each must be at least 1, vocab_size an int32)");
    const tgx::Mesh &mesh = *program.mesh();
    if (mesh.shape()->size() != mesh.axes()->size())
      return fail("mesh", "has " + std::to_string(mesh.shape()->size()) +
                              " dimensions but " +
                              std::to_string(mesh.axes()->size()) + " axis names");
    // Ranks are ints (MPI); a mesh beyond that is a corrupt field.
    int64_t devices = 1;
    for (int64_t d : *mesh.shape())
      if (d < 1 || (devices *= d) > std::numeric_limits<int32_t>::max())
        return fail("mesh.shape", "has the dimension " + std::to_string(d) +
                                      " (each must be at least 1, the product an int32)");
    std::set<std::string_view> axes;
    for (const flatbuffers::String *axis : *mesh.axes())
      if (axis->size() == 0 || !axes.insert(axis->string_view()).second)
        return fail("mesh.axes", "has an empty or duplicated axis name");
    if (train.batch_size() % dataRanks() != 0)
      return fail("train.batch_size", "is " + std::to_string(train.batch_size()) +
                                          ", which the mesh's " +
                                          std::to_string(dataRanks()) +
                                          " data ranks do not divide");
    return true;
  }

  /// The size of the mesh's "data" axis (1 without one): each data rank
  /// holds batch_size / dataRanks() rows of the batch.
  int64_t dataRanks() const {
    int64_t axis = findMeshAxis(*program.mesh(), kDataAxis);
    return axis < 0 ? 1 : program.mesh()->shape()->Get(uint32_t(axis));
  }

  /// FlatBuffers' verifier checks the alignment of a vector's length, not of
  /// its elements: a vector of 8-byte values 4 bytes off passes it, and
  /// reading it is undefined behaviour. Each is checked before it is read.
  template <typename Vector>
  bool aligned8(const Vector *vector, const std::string &field) {
    if (vector && vector->size() > 0 &&
        reinterpret_cast<uintptr_t>(vector->Data()) % 8 != 0)
      return fail(field, "holds 8-byte values that are not 8-byte aligned");
    return true;
  }

  bool checkAlignment() {
    if (program.mesh() && !aligned8(program.mesh()->shape(), "mesh.shape"))
      return false;
    if (program.slots())
      for (uint32_t i = 0; i < program.slots()->size(); ++i)
        if (!aligned8(program.slots()->Get(i)->shape(),
                      "slots[" + std::to_string(i) + "].shape"))
          return false;
    if (program.parameters())
      for (uint32_t i = 0; i < program.parameters()->size(); ++i)
        if (const tgx::ParameterShard *shard = program.parameters()->Get(i)->shard())
          if (!aligned8(shard->full_shape(),
                        "parameters[" + std::to_string(i) + "].shard.full_shape"))
            return false;
    if (program.modules())
      for (uint32_t i = 0; i < program.modules()->size(); ++i)
        if (!aligned8(program.modules()->Get(i)->kernel_operand_bytes(),
                      "modules[" + std::to_string(i) + "].kernel_operand_bytes"))
          return false;
    if (program.commands())
      for (uint32_t i = 0; i < program.commands()->size(); ++i)
        if (!aligned8(program.commands()->Get(i)->operands(),
                      "commands[" + std::to_string(i) + "].operands"))
          return false;
    return true;
  }

  bool checkSlots() {
    std::set<std::string_view> names;
    for (uint32_t i = 0; i < program.slots()->size(); ++i) {
      const tgx::Slot &slot = *program.slots()->Get(i);
      std::string field = "slots[" + std::to_string(i) + "] '" +
                          slot.name()->str() + "'";
      if (slot.name()->size() == 0 || !names.insert(slot.name()->string_view()).second)
        return fail(field, "has an empty or duplicated name");
      uint64_t bytes = dtypeSize(slot.dtype());
      if (bytes == 0)
        return fail(field, "has the unknown dtype " + std::to_string(int(slot.dtype())));
      for (int64_t d : *slot.shape())
        if (d < 0 || mulOverflows(bytes, static_cast<uint64_t>(d), bytes))
          return fail(field, "has a negative or too large dimension " + std::to_string(d));
      if (slot.range()->size() != bytes)
        return fail(field, "has a range of " + std::to_string(slot.range()->size()) +
                               " bytes, but its shape and dtype need " +
                               std::to_string(bytes));
      if (!checkRange(*slot.range(), field + ".range"))
        return false;
    }
    return true;
  }

  bool sameShape(const tgx::Slot &a, const tgx::Slot &b) {
    return std::equal(a.shape()->begin(), a.shape()->end(), b.shape()->begin(),
                      b.shape()->end());
  }

  bool checkParameters() {
    std::set<std::string_view> names;
    uint32_t numSlots = program.slots()->size();
    for (uint32_t i = 0; i < program.parameters()->size(); ++i) {
      const tgx::Parameter &p = *program.parameters()->Get(i);
      std::string field = "parameters[" + std::to_string(i) + "] '" + p.name()->str() + "'";
      if (p.name()->size() == 0 || !names.insert(p.name()->string_view()).second)
        return fail(field, "has an empty or duplicated name");
      if (p.init() < tgx::InitKind_MIN || p.init() > tgx::InitKind_MAX)
        return fail(field, "has the unknown init kind " + std::to_string(int(p.init())));
      if (p.init() == tgx::InitKind_Normal && !(std::isfinite(p.init_std()) && p.init_std() >= 0))
        return fail(field, "has init_std " + std::to_string(p.init_std()) +
                               " (must be finite and non-negative)");
      if (p.slot() >= numSlots || p.adam_m_slot() >= numSlots || p.adam_v_slot() >= numSlots)
        return fail(field, "refers to a slot index outside the " +
                               std::to_string(numSlots) + " slots");
      if (p.slot() == p.adam_m_slot() || p.slot() == p.adam_v_slot() ||
          p.adam_m_slot() == p.adam_v_slot())
        return fail(field, "uses one slot for two of the parameter and its AdamW moments");
      const tgx::Slot &value = *program.slots()->Get(p.slot());
      const tgx::Slot &m = *program.slots()->Get(p.adam_m_slot());
      const tgx::Slot &v = *program.slots()->Get(p.adam_v_slot());
      if (!isFloat(value.dtype()) || !isFloat(m.dtype()) || !isFloat(v.dtype()))
        return fail(field, "has a slot of a non-float dtype");
      if (p.optimizer_shard()) {
        if (!checkOptimizerShard(*p.optimizer_shard(), value, m, v,
                                 field + ".optimizer_shard"))
          return false;
        if (p.shard() && p.shard()->axis() == p.optimizer_shard()->axis())
          return fail(field + ".optimizer_shard.axis",
                      "is the axis that splits the parameter itself (shard.axis " +
                          std::to_string(p.shard()->axis()) +
                          "): the moments are split over another axis");
      } else if (!sameShape(value, m) || !sameShape(value, v)) {
        return fail(field, "has AdamW moment slots whose shape differs from the parameter's");
      }
      if (p.shard() && !checkShard(*p.shard(), value, field + ".shard"))
        return false;
      if (p.compute_slot() != -1 && !checkComputeSlot(p, field + ".compute_slot"))
        return false;
    }
    return true;
  }

  /// A parameter's compute-precision copy: its own bf16 or f16 slot of the
  /// f32 parameter's shape, which no other parameter uses.
  bool checkComputeSlot(const tgx::Parameter &p, const std::string &field) {
    uint32_t numSlots = program.slots()->size();
    if (p.compute_slot() < 0 || uint32_t(p.compute_slot()) >= numSlots)
      return fail(field, "is " + std::to_string(p.compute_slot()) +
                             ", neither -1 (no copy) nor a slot index below " +
                             std::to_string(numSlots));
    auto copy = uint32_t(p.compute_slot());
    for (const tgx::Parameter *other : *program.parameters())
      if (copy == other->slot() || copy == other->adam_m_slot() || copy == other->adam_v_slot() ||
          (other != &p && copy == uint32_t(other->compute_slot())))
        return fail(field, "is slot " + std::to_string(copy) + ", which parameter '" +
                               other->name()->str() + "' uses too");
    const tgx::Slot &value = *program.slots()->Get(p.slot());
    const tgx::Slot &slot = *program.slots()->Get(copy);
    if (value.dtype() != tgx::DType_F32 ||
        (slot.dtype() != tgx::DType_BF16 && slot.dtype() != tgx::DType_F16))
      return fail(field, "is slot '" + slot.name()->str() +
                             "': a compute copy is bf16 or f16 of an f32 parameter");
    if (!sameShape(value, slot))
      return fail(field,
                  "is slot '" + slot.name()->str() + "', whose shape differs from the parameter's");
    return true;
  }

  /// ZeRO-1 moments (tgx.fbs): slots of `chunk` elements whose chunks over
  /// the axis's ranks cover the parameter slot's elements.
  bool checkOptimizerShard(const tgx::OptimizerShard &s, const tgx::Slot &value,
                           const tgx::Slot &m, const tgx::Slot &v, const std::string &field) {
    const tgx::Mesh &mesh = *program.mesh();
    if (s.axis() >= mesh.axes()->size())
      return fail(field + ".axis", "is " + std::to_string(s.axis()) + ", but the mesh has " +
                                       std::to_string(mesh.axes()->size()) + " axes");
    if (s.chunk() < 1)
      return fail(field + ".chunk", "is " + std::to_string(s.chunk()) +
                                        " (a chunk has at least 1 element)");
    const std::vector<int64_t> expected = {s.chunk()};
    for (const tgx::Slot *moment : {&m, &v})
      if (!std::equal(moment->shape()->begin(), moment->shape()->end(), expected.begin(),
                      expected.end()))
        return fail(field, "splits the AdamW moments into chunks of " +
                               std::to_string(s.chunk()) + " elements, but slot '" +
                               moment->name()->str() + "' has shape " +
                               shapeText(*moment->shape()));
    // Slot shapes were checked: the element count cannot overflow.
    int64_t elements = 1;
    for (int64_t d : *value.shape())
      elements *= d;
    int64_t ranks = mesh.shape()->Get(s.axis());
    uint64_t covered;
    if (mulOverflows(uint64_t(s.chunk()), uint64_t(ranks), covered) ||
        covered < uint64_t(elements))
      return fail(field + ".chunk",
                  "is " + std::to_string(s.chunk()) + ": its " + std::to_string(ranks) +
                      " chunks over mesh axis '" + mesh.axes()->Get(s.axis())->str() +
                      "' do not cover the parameter's " + std::to_string(elements) +
                      " elements");
    return true;
  }

  /// A tensor-parallel split (tgx.fbs): the slot holds exactly one rank's
  /// part of the padded full tensor, and the full tensor is small enough to
  /// assemble (rank 0 writes it to weights and checkpoints).
  bool checkShard(const tgx::ParameterShard &s, const tgx::Slot &slot, const std::string &field) {
    const tgx::Mesh &mesh = *program.mesh();
    if (s.axis() >= mesh.axes()->size())
      return fail(field + ".axis", "is " + std::to_string(s.axis()) + ", but the mesh has " +
                                       std::to_string(mesh.axes()->size()) + " axes");
    const flatbuffers::Vector<int64_t> &full = *s.full_shape();
    uint64_t bytes = dtypeSize(slot.dtype());
    for (int64_t d : full)
      if (d < 0 || mulOverflows(bytes, static_cast<uint64_t>(d), bytes))
        return fail(field + ".full_shape", "has a negative or too large dimension " +
                                               std::to_string(d));
    if (s.dim() >= full.size())
      return fail(field + ".dim", "is " + std::to_string(s.dim()) + ", but full_shape " +
                                      shapeText(full) + " has " + std::to_string(full.size()) +
                                      " dimensions");
    int64_t rows = full[s.dim()];
    std::string padded = "is " + std::to_string(s.padded_size());
    if (s.blocks() < 1)
      return fail(field + ".blocks", "is 0 (a shard has at least 1 block)");
    if (s.padded_size() < rows)
      return fail(field + ".padded_size", padded + ", less than full_shape[" +
                                              std::to_string(s.dim()) + "] = " +
                                              std::to_string(rows));
    if (s.blocks() > 1 && s.padded_size() != rows)
      return fail(field + ".padded_size",
                  padded + ", but a split into " + std::to_string(s.blocks()) +
                      " blocks is not padded: it must be full_shape[" + std::to_string(s.dim()) +
                      "] = " + std::to_string(rows));
    int64_t ranks = mesh.shape()->Get(s.axis());
    const std::string axis = "mesh axis '" + mesh.axes()->Get(s.axis())->str() + "'";
    if (s.padded_size() % (int64_t(s.blocks()) * ranks) != 0)
      return fail(field + ".padded_size",
                  padded + ", which " + std::to_string(s.blocks()) + " block" +
                      (s.blocks() > 1 ? "s" : "") + " split evenly over the " +
                      std::to_string(ranks) + " ranks of " + axis + " cannot divide");
    std::vector<int64_t> expected(full.begin(), full.end());
    expected[s.dim()] = s.padded_size() / ranks;
    if (!std::equal(slot.shape()->begin(), slot.shape()->end(), expected.begin(),
                    expected.end()))
      return fail(field, "splits full_shape " + shapeText(full) + " over the " +
                             std::to_string(ranks) + " ranks of " + axis +
                             " into slots of shape " + shapeText(expected) +
                             ", but the parameter's slot has shape " +
                             shapeText(*slot.shape()));
    return true;
  }

  bool checkConstants() {
    for (uint32_t i = 0; i < program.constants()->size(); ++i) {
      const tgx::Constant &c = *program.constants()->Get(i);
      std::string field = "constants[" + std::to_string(i) + "]";
      if (!checkRange(*c.range(), field + ".range"))
        return false;
      if (c.data()->size() != c.range()->size())
        return fail(field, "holds " + std::to_string(c.data()->size()) +
                               " bytes for a range of " + std::to_string(c.range()->size()));
    }
    return true;
  }

  bool checkModules() {
    for (uint32_t i = 0; i < program.modules()->size(); ++i) {
      const tgx::KernelModule &m = *program.modules()->Get(i);
      std::string field = "modules[" + std::to_string(i) + "]";
      if (m.format() < tgx::ModuleFormat_MIN || m.format() > tgx::ModuleFormat_MAX)
        return fail(field, "has the unknown format " + std::to_string(int(m.format())));
      for (const flatbuffers::String *name : *m.kernels())
        if (name->size() == 0)
          return fail(field + ".kernels", "has an empty kernel name");
      Fnv1a64 hash;
      hash.update(m.image()->data(), m.image()->size());
      if (hash.value() != m.image_fnv1a64())
        return fail(field + ".image", m.image_fnv1a64() == 0
                                          ? "has no checksum (image_fnv1a64)"
                                          : "does not match its checksum image_fnv1a64");
      if (!m.kernel_operand_counts())
        return fail(field, "has no kernel_operand_counts");
      if (m.kernel_operand_counts()->size() != m.kernels()->size())
        return fail(field + ".kernel_operand_counts", "has " +
                        std::to_string(m.kernel_operand_counts()->size()) +
                        " entries for " + std::to_string(m.kernels()->size()) + " kernels");
      if (!m.kernel_operand_bytes())
        return fail(field, "has no kernel_operand_bytes");
      // Where each kernel's operand sizes start in kernel_operand_bytes.
      std::vector<uint64_t> &starts = operandBytesStart.emplace_back();
      uint64_t total = 0;
      for (uint32_t count : *m.kernel_operand_counts()) {
        starts.push_back(total);
        total += count; // at most 2^32 kernels of < 2^32: no overflow
      }
      if (m.kernel_operand_bytes()->size() != total)
        return fail(field + ".kernel_operand_bytes",
                    "has " + std::to_string(m.kernel_operand_bytes()->size()) +
                        " entries, but kernel_operand_counts add up to " +
                        std::to_string(total));
      bool ptx = m.format() == tgx::ModuleFormat_Ptx;
      if (ptx != (program.target() == tgx::Target_Cuda))
        return fail(field + ".format", std::string("is ") + tgx::EnumNameModuleFormat(m.format()) +
                                           " in a program for the target " +
                                           tgx::EnumNameTarget(program.target()));
      if (ptx && !checkLaunches(m, field))
        return false;
    }
    return true;
  }

  /// A PTX module's launches: counts per kernel adding up to the launches,
  /// each a grid of at least one block of 1 to 1024 threads.
  bool checkLaunches(const tgx::KernelModule &m, const std::string &field) {
    if (!m.kernel_launch_counts() || !m.launches())
      return fail(field, "is PTX without kernel_launch_counts and launches");
    if (m.kernel_launch_counts()->size() != m.kernels()->size())
      return fail(field + ".kernel_launch_counts",
                  "has " + std::to_string(m.kernel_launch_counts()->size()) +
                      " entries for " + std::to_string(m.kernels()->size()) + " kernels");
    uint64_t total = 0;
    for (uint32_t count : *m.kernel_launch_counts()) {
      if (count == 0)
        return fail(field + ".kernel_launch_counts", "has a kernel with no launch");
      total += count;
    }
    if (m.launches()->size() != total)
      return fail(field + ".launches", "has " + std::to_string(m.launches()->size()) +
                                           " entries, but kernel_launch_counts add up to " +
                                           std::to_string(total));
    for (uint32_t j = 0; j < m.launches()->size(); ++j) {
      const tgx::KernelLaunch &l = *m.launches()->Get(j);
      if (l.function()->size() == 0 || l.grid() == 0 || l.block() == 0 || l.block() > 1024)
        return fail(field + ".launches[" + std::to_string(j) + "]",
                    "has function '" + l.function()->str() + "', grid " +
                        std::to_string(l.grid()) + " and block " + std::to_string(l.block()) +
                        " (a named entry on at least one block of 1 to 1024 threads)");
    }
    return true;
  }

  bool checkKernel(const tgx::Command &c, const std::string &field) {
    if (c.module_() >= program.modules()->size())
      return fail(field + ".module", "is " + std::to_string(c.module_()) + " but there are " +
                                         std::to_string(program.modules()->size()) + " modules");
    const tgx::KernelModule &m = *program.modules()->Get(c.module_());
    if (c.kernel() >= m.kernels()->size())
      return fail(field + ".kernel", "is " + std::to_string(c.kernel()) + " but module " +
                                         std::to_string(c.module_()) + " has " +
                                         std::to_string(m.kernels()->size()) + " kernels");
    uint32_t count = m.kernel_operand_counts()->Get(c.kernel());
    if (count != c.operands()->size())
      return fail(field + ".operands", "has " + std::to_string(c.operands()->size()) +
                                           " entries but kernel '" +
                                           m.kernels()->Get(c.kernel())->str() + "' takes " +
                                           std::to_string(count));
    // A kernel indexes its buffers at the sizes it was compiled for: a range
    // of another size (a command pointing at another kernel) would let it
    // read or write outside that range.
    uint64_t start = operandBytesStart[c.module_()][c.kernel()];
    for (uint32_t j = 0; j < count; ++j) {
      uint64_t expected = m.kernel_operand_bytes()->Get(start + j);
      const tgx::BufferRange &r = *c.operands()->Get(j);
      if (r.size() != expected)
        return fail(field + ".operands[" + std::to_string(j) + "]",
                    rangeText(r) + " has " + std::to_string(r.size()) + " bytes but kernel '" +
                        m.kernels()->Get(c.kernel())->str() + "' takes " +
                        std::to_string(expected) + " bytes there");
    }
    return true;
  }

  /// Gemm operand `index` (GemmLayout.h) must lie in its range: its last
  /// product's last element is (outer - 1) * stride + (inner - 1) *
  /// inner_stride + (rows - 1) * ld + cols - 1, computed without overflow.
  bool checkGemmOperand(const tgx::Command &c, uint32_t index, const GemmOperand &o,
                        const std::string &field) {
    const tgx::Gemm &g = *c.gemm();
    std::string where = field + ".operands[" + std::to_string(index) + "]";
    if (o.ld < o.cols || o.ld > std::numeric_limits<int>::max() || o.stride < 0 ||
        o.innerStride < 0)
      return fail(field + ".gemm", "gives operand " + std::to_string(index) + " rows of " +
                                       std::to_string(o.cols) + " elements but leading dimension " +
                                       std::to_string(o.ld) + ", or a negative stride");
    int64_t inner = gemmInnerBatch(g);
    uint64_t outerSpan, innerSpan, rowSpan, elements, bytes;
    bool overflow = mulOverflows(uint64_t(g.batch() / inner - 1), uint64_t(o.stride), outerSpan) ||
                    mulOverflows(uint64_t(inner - 1), uint64_t(o.innerStride), innerSpan) ||
                    mulOverflows(uint64_t(o.rows - 1), uint64_t(o.ld), rowSpan) ||
                    __builtin_add_overflow(outerSpan, innerSpan, &elements) ||
                    __builtin_add_overflow(elements, rowSpan, &elements) ||
                    __builtin_add_overflow(elements, uint64_t(o.cols), &elements) ||
                    mulOverflows(elements, dtypeSize(g.dtype()), bytes);
    const tgx::BufferRange &r = *c.operands()->Get(index);
    if (overflow || r.size() < bytes)
      return fail(where, rangeText(r) + " is too small for the batched " +
                             std::to_string(o.rows) + "x" + std::to_string(o.cols) +
                             " matrix it holds");
    return true;
  }

  /// Whether distinct elements of c's batch are distinct addresses: sorted
  /// by stride, every level (columns, rows, inner and outer batch) steps
  /// over all the elements the smaller ones span. Overlapping outputs would
  /// make the result depend on the order of the products (and would let a
  /// tiny program demand unbounded work).
  static bool outputsDisjoint(const tgx::Gemm &g, const GemmOperand &o) {
    int64_t inner = gemmInnerBatch(g);
    std::pair<int64_t, int64_t> levels[] = {
        {1, o.cols}, {o.ld, o.rows}, {o.innerStride, inner}, {o.stride, g.batch() / inner}};
    std::sort(std::begin(levels), std::end(levels));
    int64_t span = 1; // elements the smaller levels cover (all in the range: no overflow)
    for (auto [stride, count] : levels) {
      if (count == 1)
        continue;
      if (stride < span)
        return false;
      span = (count - 1) * stride + span;
    }
    return true;
  }

  bool checkAttention(const tgx::Command &c, const std::string &field) {
    const tgx::Attention *a = c.attention();
    if (!a)
      return fail(field, "is an Attention without its 'attention' table");
    if (program.target() != tgx::Target_Cuda)
      return fail(field + ".kind", "is Attention, which only the CUDA target runs");
    if (a->pass() < tgx::AttentionPass_MIN || a->pass() > tgx::AttentionPass_MAX)
      return fail(field + ".attention.pass",
                  "has the unknown value " + std::to_string(int(a->pass())));
    if (a->library() < tgx::AttentionLibrary_MIN || a->library() > tgx::AttentionLibrary_MAX)
      return fail(field + ".attention.library",
                  "has the unknown value " + std::to_string(int(a->library())));
    const bool gradient = a->pass() == tgx::AttentionPass_Gradient;
    const uint32_t limit = std::numeric_limits<int32_t>::max();
    if (!isAttentionHeadDim(a->head_dim()))
      return fail(field + ".attention.head_dim",
                  "is " + std::to_string(a->head_dim()) + ", not 64 or 128");
    if (a->batch() == 0 || a->query_heads() == 0 || a->key_heads() == 0 ||
        a->query_len() == 0 || a->key_len() == 0 || a->query_len() > limit ||
        a->key_len() > limit || a->window() > limit ||
        a->query_heads() % a->key_heads() != 0 ||
        uint64_t(a->batch()) * a->query_heads() > 65535 || !std::isfinite(a->scale()))
      return fail(field + ".attention",
                  "has sizes the kernels cannot run: batch, heads and lengths from 1 (query "
                  "heads a multiple of key heads, batch x query heads up to 65535), lengths "
                  "and window below 2^31, a finite scale");
    if (c.operands()->size() != attentionOperandCount(gradient))
      return fail(field + ".operands", "has " + std::to_string(c.operands()->size()) +
                                           " ranges, not the " +
                                           std::to_string(attentionOperandCount(gradient)) +
                                           " of an attention " + (gradient ? "gradient" : "forward"));
    if (const auto *rope = a->rope_frequencies()) {
      bool bad = rope->size() != a->head_dim() / 2;
      for (double f : *rope)
        bad |= !std::isfinite(f) || f < 0;
      if (bad)
        return fail(field + ".attention.rope_frequencies",
                    "holds " + std::to_string(rope->size()) + " values, not the " +
                        std::to_string(a->head_dim() / 2) +
                        " finite, non-negative frequencies of a rotary position embedding "
                        "(one a pair of the head dim)");
    }
    const unsigned tensors = attentionTensorIndex(attentionOperandCount(gradient));
    if (!a->strides() || a->strides()->size() != 3 * tensors)
      return fail(field + ".attention.strides",
                  "does not hold 3 strides for each of the " + std::to_string(tensors) +
                      " bf16 operands");
    for (unsigned i = 0; i < attentionOperandCount(gradient); ++i) {
      const tgx::BufferRange &r = *c.operands()->Get(i);
      const std::string where = field + ".operands[" + std::to_string(i) + "]";
      uint64_t bytes;
      if (!isAttentionTensor(i)) {
        bytes = uint64_t(a->batch()) * a->query_heads() * a->query_len() * 4;
        if (r.offset() % 4 != 0 || r.size() < bytes)
          return fail(where, rangeText(r) + " does not hold the f32 row statistics of " +
                                 std::to_string(bytes) + " bytes, 4-byte aligned");
        continue;
      }
      const bool query = isQuerySide(i);
      const uint64_t heads = query ? a->query_heads() : a->key_heads();
      const uint64_t rows = query ? a->query_len() : a->key_len();
      const unsigned at = 3 * attentionTensorIndex(i);
      int64_t strides[3] = {a->strides()->Get(at), a->strides()->Get(at + 1),
                            a->strides()->Get(at + 2)};
      uint64_t batchSpan, headSpan, rowSpan, elements;
      bool bad = r.offset() % 16 != 0;
      for (int64_t stride : strides)
        bad |= stride < 0 || stride % 8 != 0;
      bad |= mulOverflows(a->batch() - 1, uint64_t(strides[0]), batchSpan) ||
             mulOverflows(heads - 1, uint64_t(strides[1]), headSpan) ||
             mulOverflows(rows - 1, uint64_t(strides[2]), rowSpan) ||
             __builtin_add_overflow(batchSpan, headSpan, &elements) ||
             __builtin_add_overflow(elements, rowSpan, &elements) ||
             __builtin_add_overflow(elements, uint64_t(a->head_dim()), &elements) ||
             mulOverflows(elements, 2, bytes) || r.size() < bytes;
      if (bad)
        return fail(where, rangeText(r) + " does not hold a bf16 [" +
                               std::to_string(a->batch()) + ", " + std::to_string(heads) +
                               ", " + std::to_string(rows) + ", " +
                               std::to_string(a->head_dim()) + "] tensor at strides " +
                               std::to_string(strides[0]) + ", " + std::to_string(strides[1]) +
                               ", " + std::to_string(strides[2]) +
                               " (non-negative multiples of 8, the offset 16-byte aligned)");
    }
    return true;
  }

  bool checkGemm(const tgx::Command &c, const std::string &field) {
    const tgx::Gemm *g = c.gemm();
    if (!g)
      return fail(field, "is a Gemm without its 'gemm' table");
    // OpenBLAS multiplies f32 and f64; cuBLASLt also bf16 and f16.
    bool wide = g->dtype() == tgx::DType_F32 || g->dtype() == tgx::DType_F64;
    bool half = g->dtype() == tgx::DType_BF16 || g->dtype() == tgx::DType_F16;
    if (!wide && !(half && program.target() == tgx::Target_Cuda))
      return fail(field + ".gemm.dtype",
                  std::string("is ") + tgx::EnumNameDType(g->dtype()) +
                      (program.target() == tgx::Target_Cuda
                           ? ", not one of F32, F64, BF16 and F16"
                           : ", but the CPU target multiplies F32 and F64 only"));
    if (g->epilogue() < tgx::GemmEpilogue_MIN || g->epilogue() > tgx::GemmEpilogue_MAX)
      return fail(field + ".gemm.epilogue",
                  "has the unknown value " + std::to_string(int(g->epilogue())));
    if (g->activation() < tgx::GemmActivation_MIN || g->activation() > tgx::GemmActivation_MAX)
      return fail(field + ".gemm.activation",
                  "has the unknown value " + std::to_string(int(g->activation())));
    // After [a, b, c]: the bias or the bias gradient the GEMM writes, the
    // addend, aux.
    GemmExtraOperands extra = gemmExtraOperands(*g);
    bool biasGrad = g->epilogue() == tgx::GemmEpilogue_BiasGrad;
    bool aux = extra.aux >= 0, addend = extra.addend >= 0;
    if (biasGrad && g->activation() != tgx::GemmActivation_GeluTanhGrad)
      return fail(field + ".gemm.epilogue",
                  std::string("is BiasGrad, which needs the activation GeluTanhGrad, not ") +
                      tgx::EnumNameGemmActivation(g->activation()));
    if (addend && aux)
      return fail(field + ".gemm.epilogue", std::string("is ") +
                                                tgx::EnumNameGemmEpilogue(g->epilogue()) +
                                                ", which takes no activation, not " +
                                                tgx::EnumNameGemmActivation(g->activation()));
    if (c.operands()->size() != uint32_t(extra.count)) {
      std::string expected = "[a, b, c";
      if (extra.vector >= 0)
        expected += biasGrad ? ", bias_grad" : ", bias";
      if (addend)
        expected += ", addend";
      expected += aux ? ", aux]" : "]";
      return fail(field + ".operands", "has " + std::to_string(c.operands()->size()) +
                                           " entries instead of " + expected);
    }
    constexpr int64_t kMaxDim = std::numeric_limits<int>::max(); // BLAS ints
    for (int64_t v : {g->m(), g->n(), g->k(), g->batch()})
      if (v < 1 || v > kMaxDim)
        return fail(field + ".gemm", "has m, n, k or batch " + std::to_string(v) +
                                         " outside [1, " + std::to_string(kMaxDim) + "]");
    if (g->inner_batch() < 0 || g->batch() % gemmInnerBatch(*g) != 0)
      return fail(field + ".gemm.inner_batch",
                  "is " + std::to_string(g->inner_batch()) + ", which does not divide batch " +
                      std::to_string(g->batch()));
    GemmOperand a = gemmOperand(*g, 0), b = gemmOperand(*g, 1), out = gemmOperand(*g, 2);
    if (!checkGemmOperand(c, 0, a, field) || !checkGemmOperand(c, 1, b, field) ||
        !checkGemmOperand(c, 2, out, field) ||
        (extra.vector >= 0 &&
         !checkGemmOperand(c, uint32_t(extra.vector), GemmOperand{1, g->n(), g->n(), 0, 0}, field)))
      return false;
    if (addend) {
      if (g->batch() != 1 || out.ld != g->n())
        return fail(field + ".gemm.epilogue", std::string("is ") +
                                                  tgx::EnumNameGemmEpilogue(g->epilogue()) +
                                                  ", which needs batch 1 and a packed c");
      if (!checkGemmOperand(c, uint32_t(extra.addend), GemmOperand{g->m(), g->n(), g->n(), 0, 0},
                            field))
        return false;
      // Apart: the CPU's BLAS call overwrites c before its epilogue reads the
      // addend, and cuBLASLt's kernels would race on a partial overlap.
      const tgx::BufferRange &rc = *c.operands()->Get(2), &rd = *c.operands()->Get(extra.addend);
      if (rc.offset() < rd.offset() + rd.size() && rd.offset() < rc.offset() + rc.size())
        return fail(field + ".operands",
                    "has c " + rangeText(rc) + " and addend " + rangeText(rd) + ", which overlap");
    }
    if (aux) {
      const char *name = tgx::EnumNameGemmActivation(g->activation());
      if (g->batch() != 1 || out.ld != g->n())
        return fail(field + ".gemm.activation",
                    std::string("is ") + name + ", which needs batch 1 and a packed c");
      if (g->dtype() == tgx::DType_F64 && program.target() == tgx::Target_Cuda)
        return fail(field + ".gemm.activation",
                    std::string("is ") + name + ", which cuBLASLt does not apply to F64");
      if (extra.vector >= 0 && !biasGrad && g->activation() == tgx::GemmActivation_GeluTanhGrad)
        return fail(field + ".gemm.activation", "is GeluTanhGrad, which takes no bias");
      if (!checkGemmOperand(c, uint32_t(extra.aux), GemmOperand{g->m(), g->n(), g->n(), 0, 0},
                            field))
        return false;
      // GeluTanh writes both c and aux.
      const tgx::BufferRange &rc = *c.operands()->Get(2), &ra = *c.operands()->Get(extra.aux);
      if (g->activation() == tgx::GemmActivation_GeluTanh &&
          rc.offset() < ra.offset() + ra.size() && ra.offset() < rc.offset() + rc.size())
        return fail(field + ".operands", "has c " + rangeText(rc) + " and aux " +
                                             rangeText(ra) + ", which overlap");
    }
    // The bias gradient is written while a, b and aux are read and c is
    // written (operand 4 is aux: BiasGrad comes with GeluTanhGrad).
    if (biasGrad) {
      static constexpr const char *kNames[] = {"a ", "b ", "c ", "", "aux "};
      const tgx::BufferRange &rb = *c.operands()->Get(3);
      for (unsigned other : {0u, 1u, 2u, 4u}) {
        const tgx::BufferRange &ro = *c.operands()->Get(other);
        if (rb.offset() < ro.offset() + ro.size() && ro.offset() < rb.offset() + rb.size())
          return fail(field + ".operands", std::string("has ") + kNames[other] + rangeText(ro) +
                                               " and bias_grad " + rangeText(rb) +
                                               ", which overlap");
      }
    }
    if (!outputsDisjoint(*g, out))
      return fail(field + ".gemm", "has c strides " + std::to_string(out.stride) + ", " +
                                       std::to_string(out.innerStride) + " and ldc " +
                                       std::to_string(out.ld) + ", so the batch's " +
                                       std::to_string(g->m()) + "x" + std::to_string(g->n()) +
                                       " outputs overlap");
    return true;
  }

  bool checkCollective(const tgx::Command &c, const std::string &field) {
    const tgx::Collective *k = c.collective();
    if (!k)
      return fail(field, "is a Collective command without its collective");
    if (k->kind() < tgx::CollectiveKind_MIN || k->kind() > tgx::CollectiveKind_MAX ||
        k->reduction() < tgx::Reduction_MIN || k->reduction() > tgx::Reduction_MAX)
      return fail(field + ".collective", "has an unknown kind or reduction");
    const tgx::Mesh &mesh = *program.mesh();
    if (k->axis() >= mesh.axes()->size())
      return fail(field + ".collective.axis", "is " + std::to_string(k->axis()) +
                                                  ", but the mesh has " +
                                                  std::to_string(mesh.axes()->size()) +
                                                  " axes");
    uint64_t element = dtypeSize(k->dtype());
    if (element == 0)
      return fail(field + ".collective.dtype",
                  "has the unknown value " + std::to_string(int(k->dtype())));
    if (c.operands()->size() != 2)
      return fail(field + ".operands", "is not [source, target]");
    const tgx::BufferRange &source = *c.operands()->Get(0), &target = *c.operands()->Get(1);
    uint64_t ranks = uint64_t(mesh.shape()->Get(k->axis()));
    if (ranks < 2)
      return fail(field + ".collective.axis",
                  "is mesh axis '" + mesh.axes()->Get(k->axis())->str() +
                      "' of size 1: a collective there has nothing to exchange");
    uint64_t expected = source.size();
    if (k->kind() == tgx::CollectiveKind_ReduceScatter)
      expected = source.size() % ranks == 0 ? source.size() / ranks : 0;
    else if (k->kind() == tgx::CollectiveKind_AllGather)
      expected = source.size() * ranks;
    if (source.size() == 0 || source.size() % element != 0 || expected % element != 0 ||
        target.size() != expected)
      return fail(field + ".operands",
                  "has a source of " + std::to_string(source.size()) + " bytes and a target of " +
                      std::to_string(target.size()) + ", which a " +
                      tgx::EnumNameCollectiveKind(k->kind()) + " of " +
                      tgx::EnumNameDType(k->dtype()) + " over " + std::to_string(ranks) +
                      " ranks cannot have");
    // In place (an all-reduce over its own buffer) or apart: a partial
    // overlap would be read while it is written.
    bool inPlace = k->kind() == tgx::CollectiveKind_AllReduce &&
                   source.offset() == target.offset();
    if (!inPlace && source.offset() < target.offset() + target.size() &&
        target.offset() < source.offset() + source.size())
      return fail(field + ".operands", "has a source and a target that overlap");
    return true;
  }

  bool checkCommands() {
    for (uint32_t i = 0; i < program.commands()->size(); ++i) {
      const tgx::Command &c = *program.commands()->Get(i);
      std::string field = "commands[" + std::to_string(i) + "]";
      if (c.label())
        field += " ('" + c.label()->str() + "')";
      for (uint32_t j = 0; j < c.operands()->size(); ++j)
        if (!checkRange(*c.operands()->Get(j), field + ".operands[" + std::to_string(j) + "]"))
          return false;
      // The dependency graph: a command waits only for earlier ones, so the
      // list order is a valid schedule.
      if (c.awaits())
        for (uint32_t j = 0; j < c.awaits()->size(); ++j)
          if (c.awaits()->Get(j) >= i)
            return fail(field + ".awaits[" + std::to_string(j) + "]",
                        "is command " + std::to_string(c.awaits()->Get(j)) +
                            ", not an earlier one");
      switch (c.kind()) {
      case tgx::CommandKind_Kernel:
        if (!checkKernel(c, field))
          return false;
        break;
      case tgx::CommandKind_Gemm:
        if (!checkGemm(c, field))
          return false;
        break;
      case tgx::CommandKind_Copy:
        if (c.operands()->size() != 2 ||
            c.operands()->Get(0)->size() != c.operands()->Get(1)->size())
          return fail(field + ".operands", "is not [source, destination] of equal size");
        break;
      case tgx::CommandKind_Collective:
        if (!checkCollective(c, field))
          return false;
        break;
      case tgx::CommandKind_Attention:
        if (!checkAttention(c, field))
          return false;
        break;
      default:
        return fail(field + ".kind", "has the unknown value " + std::to_string(int(c.kind())));
      }
    }
    return true;
  }

  bool checkRequiredSlot(const char *name, bool (*dtypeOk)(tgx::DType),
                         const char *expected, bool tokenShape) {
    const tgx::Slot *slot = findSlot(program, name);
    if (!slot)
      return fail("slots", std::string("has no '") + name + "' slot");
    bool shapeOk;
    if (tokenShape) {
      const auto &s = *slot->shape();
      shapeOk = s.size() == 2 && s[0] == program.train()->batch_size() / dataRanks() &&
                s[1] == program.train()->seq_len();
    } else {
      shapeOk = isScalar(*slot);
    }
    if (!dtypeOk(slot->dtype()) || !shapeOk)
      return fail(std::string("slot '") + name + "'", std::string("is not ") + expected);
    return true;
  }

  static bool isI32(tgx::DType d) { return d == tgx::DType_I32; }
  static bool isF32OrF64(tgx::DType d) { return d == tgx::DType_F32 || d == tgx::DType_F64; }
  /// A data rank's rows of the batch; all of it on one rank.
  static constexpr const char *kRows = "I32 of shape [batch_size / data ranks, seq_len]";

  bool checkRequiredSlots() {
    return checkRequiredSlot("step", isI32, "an I32 scalar", false) &&
           checkRequiredSlot("tokens", isI32, kRows, true) &&
           checkRequiredSlot("targets", isI32, kRows, true) &&
           checkRequiredSlot("loss", isF32OrF64, "an F32 or F64 scalar", false) &&
           checkRequiredSlot("grad_norm", isF32OrF64, "an F32 or F64 scalar", false) &&
           checkRequiredSlot("lr", isF32OrF64, "an F32 or F64 scalar", false) &&
           checkMeshCoordinateSlot();
  }

  /// The functions beside the training step, each checked as a program
  /// against it.
  bool checkFunctions() {
    if (!program.functions())
      return true;
    std::set<std::string_view> names;
    for (uint32_t i = 0; i < program.functions()->size(); ++i) {
      const tgx::Program &function = *program.functions()->Get(i);
      std::string_view name = function.name() ? function.name()->string_view() : "";
      if (!names.insert(name).second)
        return fail("functions[" + std::to_string(i) + "].name",
                    "is '" + std::string(name) + "', which another function has");
      if (!Checker(function, source, error, &program, i).run())
        return false;
    }
    return true;
  }

  /// A function runs on the training step's devices with copies of its
  /// parameters: the same target, mesh and parameters (names, slot dtypes
  /// and shapes, shards).
  bool checkFunctionParameters() {
    if (program.target() != root->target())
      return fail("target", "differs from the training step's");
    const tgx::Mesh &mesh = *program.mesh(), &rootMesh = *root->mesh();
    if (meshText(mesh) != meshText(rootMesh))
      return fail("mesh", "is " + meshText(mesh) + ", not the training step's " +
                              meshText(rootMesh));
    if (program.functions() && program.functions()->size() > 0)
      return fail("functions", "is not empty: only the training step has functions");
    if (program.parameters()->size() != root->parameters()->size())
      return fail("parameters", "has " + std::to_string(program.parameters()->size()) +
                                    " entries, the training step " +
                                    std::to_string(root->parameters()->size()));
    for (uint32_t i = 0; i < program.parameters()->size(); ++i) {
      const tgx::Parameter &p = *program.parameters()->Get(i);
      const tgx::Parameter &r = *root->parameters()->Get(i);
      std::string field = "parameters[" + std::to_string(i) + "]";
      if (p.name()->string_view() != r.name()->string_view())
        return fail(field, "is not the training step's parameter '" + r.name()->str() +
                               "', its parameter at that place");
      if (p.slot() >= program.slots()->size())
        return fail(field, "refers to a slot index outside the " +
                               std::to_string(program.slots()->size()) + " slots");
      const tgx::Slot &slot = *program.slots()->Get(p.slot());
      const tgx::Slot &rootSlot = *root->slots()->Get(r.slot());
      if (slot.name()->string_view() != rootSlot.name()->string_view() ||
          slot.dtype() != rootSlot.dtype() || !sameShape(slot, rootSlot))
        return fail(field, "has a slot other than the training step's (name, dtype or shape)");
      // Only the training step rewrites a copy with its parameter, so only
      // its copies are written by the runtime.
      if (p.compute_slot() != -1)
        return fail(field + ".compute_slot",
                    "is " + std::to_string(p.compute_slot()) +
                        ": a function casts the parameters it reads itself (-1)");
      auto sameShard = [](const tgx::ParameterShard *a, const tgx::ParameterShard *b) {
        if (!a || !b)
          return a == b;
        return a->axis() == b->axis() && a->dim() == b->dim() &&
               a->padded_size() == b->padded_size() && a->blocks() == b->blocks() &&
               std::equal(a->full_shape()->begin(), a->full_shape()->end(),
                          b->full_shape()->begin(), b->full_shape()->end());
      };
      if (!sameShard(p.shard(), r.shard()))
        return fail(field + ".shard", "differs from the training step's");
    }
    return true;
  }

  /// The interface of each function this runtime runs. The runtime checks
  /// a function's tokens against the training step's shape and vocabulary,
  /// so they must agree: the same seq_len and vocab_size, eval_step the same
  /// rows, logits at most as many (a micro-batch).
  bool checkFunctionSlots() {
    std::string_view name = program.name() ? program.name()->string_view() : "";
    const tgx::TrainInfo &train = *program.train(), &rootTrain = *root->train();
    if (train.seq_len() != rootTrain.seq_len() || train.vocab_size() != rootTrain.vocab_size())
      return fail("train", "has seq_len " + std::to_string(train.seq_len()) + " and vocab_size " +
                               std::to_string(train.vocab_size()) + ", the training step " +
                               std::to_string(rootTrain.seq_len()) + " and " +
                               std::to_string(rootTrain.vocab_size()));
    if (name == "eval_step") {
      if (train.batch_size() != rootTrain.batch_size())
        return fail("train.batch_size", "differs from the training step's");
      return checkRequiredSlot("tokens", isI32, kRows, true) &&
             checkRequiredSlot("targets", isI32, kRows, true) &&
             checkRequiredSlot("loss", isF32OrF64, "an F32 or F64 scalar", false) &&
             checkMeshCoordinateSlot();
    }
    if (name == "logits") {
      if (meshDevices(*program.mesh()) != 1)
        return fail("mesh", "is " + meshText(*program.mesh()) +
                                ": the logits function runs on one device");
      if (train.batch_size() > rootTrain.batch_size())
        return fail("train.batch_size", "exceeds the training step's");
      if (!checkRequiredSlot("tokens", isI32, kRows, true) || !checkMeshCoordinateSlot())
        return false;
      const tgx::Slot *logits = findSlot(program, "logits");
      const std::vector<int64_t> expected = {train.batch_size(), train.seq_len(),
                                             train.vocab_size()};
      if (!logits || !isF32OrF64(logits->dtype()) ||
          !std::equal(logits->shape()->begin(), logits->shape()->end(), expected.begin(),
                      expected.end()))
        return fail("slot 'logits'", "is missing or not F32/F64 of shape [batch_size, "
                                     "seq_len, vocab_size]");
      return true;
    }
    return fail("name", "is '" + std::string(name) +
                            "', not a function this runtime runs (eval_step, logits)");
  }

  /// Optional: the runtime writes one int64 per mesh axis there.
  bool checkMeshCoordinateSlot() {
    const tgx::Slot *slot = findSlot(program, kMeshCoordinateSlot);
    uint32_t axes = program.mesh()->axes()->size();
    if (slot && (slot->dtype() != tgx::DType_I64 || slot->shape()->size() != 1 ||
                 slot->shape()->Get(0) != int64_t(axes)))
      return fail(std::string("slot '") + kMeshCoordinateSlot + "'",
                  "is " + std::string(tgx::EnumNameDType(slot->dtype())) + " of shape " +
                      shapeText(*slot->shape()) + ", not I64 of shape [" +
                      std::to_string(axes) + "] (one index per mesh axis)");
    return true;
  }
};

} // namespace

std::size_t dtypeSize(tgx::DType dtype) {
  switch (dtype) {
  case tgx::DType_F32: return 4;
  case tgx::DType_F64: return 8;
  case tgx::DType_BF16: return 2;
  case tgx::DType_F16: return 2;
  case tgx::DType_I32: return 4;
  case tgx::DType_I64: return 8;
  }
  return 0;
}

uint64_t artifactChecksum(const uint8_t *bytes, std::size_t size) {
  Fnv1a64 hash;
  hash.update(bytes, size < 8 ? 0 : size - 8);
  return hash.value();
}

void sealArtifact(std::vector<uint8_t> &image) {
  image.insert(image.end(), kTrailerMagic, kTrailerMagic + sizeof(kTrailerMagic));
  image.resize(image.size() + 8);
  uint64_t sum = artifactChecksum(image.data(), image.size());
  for (int i = 0; i < 8; ++i)
    image[image.size() - 8 + i] = static_cast<uint8_t>(sum >> (8 * i));
}

bool verifyArtifact(const uint8_t *bytes, std::size_t size,
                    const std::string &sourceName, std::string &error) {
  if (size < 8 || !tgx::ProgramBufferHasIdentifier(bytes)) {
    error = sourceName + ": not a .tgx artifact (the 'TGX1' identifier is missing); "
                         "pass the file that tgc --emit=tgx wrote";
    return false;
  }
  // Large models have many commands; the default table limit (1M) is for
  // untrusted network input, not for programs.
  auto verifies = [&](std::size_t imageSize) {
    flatbuffers::Verifier verifier(bytes, imageSize, /*max_depth=*/64,
                                   /*max_tables=*/1u << 28);
    return tgx::VerifyProgramBuffer(verifier);
  };
  bool sealed = size >= kTrailerSize + 8 &&
                std::memcmp(bytes + size - kTrailerSize, kTrailerMagic,
                            sizeof(kTrailerMagic)) == 0;
  if (!sealed) {
    // An artifact of an older format (version 1 had no trailer) gets the
    // version message, which says what to do; anything else is damaged.
    if (size % 8 == 0 && verifies(size) &&
        !readsFormatVersion(tgx::GetProgram(bytes)->format_version())) {
      error = versionError(sourceName, tgx::GetProgram(bytes)->format_version());
      return false;
    }
    error = sourceName + ": the artifact is truncated (its checksum trailer is missing); "
                         "re-compile the model with this tgc";
    return false;
  }
  uint64_t stored = readU64(bytes + size - 8);
  if (stored != artifactChecksum(bytes, size)) {
    error = sourceName + ": the artifact is corrupt (its contents do not match the "
                         "checksum in its trailer); re-compile the model with this tgc";
    return false;
  }
  std::size_t imageSize = size - kTrailerSize;
  // FlatBuffers pads a finished buffer to its largest scalar (8 bytes here),
  // so this catches the truncations the Verifier cannot see: those that cut
  // only padding after the last object.
  if (imageSize % 8 != 0) {
    error = sourceName + ": the artifact is truncated (" + std::to_string(imageSize) +
            " bytes before the trailer, not a multiple of 8 as tgc writes them); "
            "re-compile the model with this tgc";
    return false;
  }
  if (!verifies(imageSize)) {
    error = sourceName + ": the artifact is truncated or corrupt (its FlatBuffers "
                         "structure does not verify); re-compile the model with this tgc";
    return false;
  }
  return Checker(*tgx::GetProgram(bytes), sourceName, error).run();
}

const tgx::Program *findFunction(const tgx::Program &program, std::string_view name) {
  if (program.functions())
    for (const tgx::Program *function : *program.functions())
      if (function->name() && function->name()->string_view() == name)
        return function;
  return nullptr;
}

const tgx::Slot *findSlot(const tgx::Program &program, std::string_view name) {
  for (const tgx::Slot *slot : *program.slots())
    if (slot->name()->string_view() == name)
      return slot;
  return nullptr;
}

int64_t numElements(const tgx::Slot &slot) {
  int64_t n = 1;
  for (int64_t d : *slot.shape())
    n *= d;
  return n;
}

int64_t meshDevices(const tgx::Mesh &mesh) {
  int64_t n = 1;
  for (int64_t d : *mesh.shape())
    n *= d;
  return n;
}

std::string meshText(const tgx::Mesh &mesh) {
  std::string text;
  for (uint32_t i = 0; i < mesh.axes()->size(); ++i)
    text += (i ? " x " : "") + mesh.axes()->Get(i)->str() + "=" +
            std::to_string(mesh.shape()->Get(i));
  return text;
}

int64_t findMeshAxis(const tgx::Mesh &mesh, std::string_view name) {
  for (uint32_t i = 0; i < mesh.axes()->size(); ++i)
    if (mesh.axes()->Get(i)->string_view() == name)
      return i;
  return -1;
}

int64_t meshAxisStride(const tgx::Mesh &mesh, uint32_t axis) {
  int64_t stride = 1;
  for (uint32_t i = axis + 1; i < mesh.shape()->size(); ++i)
    stride *= mesh.shape()->Get(i);
  return stride;
}

int64_t meshCoordinate(const tgx::Mesh &mesh, int64_t rank, uint32_t axis) {
  return rank / meshAxisStride(mesh, axis) % mesh.shape()->Get(axis);
}

} // namespace tg::runtime
