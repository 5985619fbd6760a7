// exec-fuse-horizontal: the dispatches of one small kernel over like buffers
// (the cast, gradient square sum and AdamW update that a step runs once per
// parameter) become one dispatch of the kernel batched over a leading
// dimension, reading and writing packs whose rows are the members' buffers.
// A step of GPT-2 medium runs its 146 small parameters' kernels in 9
// launches instead of 438: on a GPU each launch costs microseconds whatever
// it does, and these do almost nothing. With large-rows the layers' own
// (their weights' casts, gradient squares, AdamW updates) pack too, where a
// trial plan says the arena does not grow.
#include "tg/Exec/IR/ExecOps.h"
#include "tg/IR/TgOps.h"
#include "tg/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/InterleavedRange.h"

#include <limits>

namespace mlir::tg {
#define GEN_PASS_DEF_EXECFUSEHORIZONTAL
#include "tg/Passes/Passes.h.inc"

namespace {
using exec::DispatchOp;
using exec::ResourceKind;
using exec::ResourceOp;

/// The most elements a batched reduction sums into one result element
/// (but with large rows).
constexpr int64_t kMaxRowElements = 65536;
/// No limit (large rows).
constexpr int64_t kAnySize = std::numeric_limits<int64_t>::max();

RankedTensorType withRows(Type type, int64_t rows) {
  auto tensor = cast<RankedTensorType>(type);
  SmallVector<int64_t> shape{rows};
  llvm::append_range(shape, tensor.getShape());
  return RankedTensorType::get(shape, tensor.getElementType());
}

/// Whether `kernel`'s body batches over a leading dimension (its rank-0
/// arguments shared by the members, the others each member's own):
/// elementwise ops, where an operand of a member's own has the result's
/// rank (numpy broadcasting aligns trailing dimensions), and reductions; and
/// every result is a member's own.
bool batches(func::FuncOp kernel) {
  if (!kernel.getBody().hasOneBlock())
    return false;
  Block &body = kernel.getBody().front();
  DenseSet<Value> own;
  for (BlockArgument arg : body.getArguments())
    if (cast<RankedTensorType>(arg.getType()).getRank() > 0)
      own.insert(arg);
  for (Operation &op : body.without_terminator()) {
    bool reduction = isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp>(op);
    if (isa<ConstantOp>(op))
      continue;
    if (!reduction && !op.hasTrait<TgOpTrait::Elementwise>())
      return false;
    bool batched = false;
    for (Value operand : op.getOperands()) {
      if (!own.contains(operand))
        continue;
      batched = true;
      if (!reduction &&
          cast<RankedTensorType>(operand.getType()).getRank() !=
              cast<RankedTensorType>(op.getResult(0).getType()).getRank())
        return false;
    }
    if (batched)
      own.insert(op.getResult(0));
  }
  return llvm::all_of(body.getTerminator()->getOperands(),
                      [&](Value result) { return own.contains(result); });
}

/// `kernel` batched over `rows`: each argument of rank > 0, each result and
/// every value computed from them gains a leading dimension of `rows`;
/// reductions reduce the same dimensions of each row. Inserted beside it.
func::FuncOp batchKernel(func::FuncOp kernel, int64_t rows,
                         SymbolTable &table) {
  Block &body = kernel.getBody().front();
  SmallVector<Type> inputs, results;
  for (Type type : kernel.getArgumentTypes())
    inputs.push_back(cast<RankedTensorType>(type).getRank() > 0
                         ? withRows(type, rows)
                         : type);
  for (Type type : kernel.getResultTypes())
    results.push_back(withRows(type, rows));
  OpBuilder b(kernel);
  b.setInsertionPointAfter(kernel);
  auto batched = func::FuncOp::create(
      b, kernel.getLoc(),
      (kernel.getSymName() + "_x" + std::to_string(rows)).str(),
      b.getFunctionType(inputs, results));
  table.insert(batched); // renamed where the name is taken
  Block *entry = batched.addEntryBlock();
  b.setInsertionPointToStart(entry);
  IRMapping mapping;
  DenseSet<Value> own;
  for (auto [from, to] :
       llvm::zip(body.getArguments(), entry->getArguments())) {
    mapping.map(from, to);
    if (to.getType() != from.getType())
      own.insert(to);
  }
  for (Operation &op : body) {
    Operation *copy = b.clone(op, mapping);
    if (isa<func::ReturnOp>(copy) ||
        llvm::none_of(copy->getOperands(),
                      [&](Value v) { return own.contains(v); }))
      continue;
    Value result = copy->getResult(0);
    result.setType(withRows(result.getType(), rows));
    own.insert(result);
    if (auto axes = copy->getAttrOfType<DenseI64ArrayAttr>("axes")) {
      SmallVector<int64_t> shifted;
      for (int64_t axis : axes.asArrayRef())
        shifted.push_back(axis < 0 ? axis : axis + 1); // -1 stays the last
      copy->setAttr("axes", b.getDenseI64ArrayAttr(shifted));
    }
  }
  return batched;
}

/// The resource `buffer` is all of, perhaps through views reshaping it
/// (a gradient's [1, 1, n] column sums read as [n]); null for a part.
ResourceOp wholeResource(Value buffer) {
  while (auto view = buffer.getDefiningOp<exec::ViewOp>()) {
    if (view.getOffset().value_or(0) != 0 ||
        view.getType().getNumElements() !=
            cast<MemRefType>(view.getSource().getType()).getNumElements())
      return {};
    buffer = view.getSource();
  }
  return buffer.getDefiningOp<ResourceOp>();
}

/// The commands other than kernels and GEMMs that touch `resource`
/// (through views too).
SmallVector<Operation *> otherCommands(ResourceOp resource) {
  SmallVector<Operation *> commands;
  SmallVector<Value> buffers{resource.getResult()};
  while (!buffers.empty()) {
    Value buffer = buffers.pop_back_val();
    for (Operation *user : buffer.getUsers()) {
      if (auto view = dyn_cast<exec::ViewOp>(user))
        buffers.push_back(view.getResult());
      else if (exec::isCommand(user) && !isa<DispatchOp, exec::GemmOp>(user) &&
               !llvm::is_contained(commands, user))
        commands.push_back(user);
    }
  }
  return commands;
}

/// `command` if it all-reduces all of `resource` in place (a data-parallel
/// gradient, a tensor-parallel partial sum); null otherwise.
exec::AllReduceOp reducing(Operation *command, ResourceOp resource) {
  auto allReduce = dyn_cast<exec::AllReduceOp>(command);
  if (!allReduce || allReduce.getSource() != allReduce.getTarget() ||
      wholeResource(allReduce.getSource()) != resource)
    return {};
  return allReduce;
}

/// Dispatches of one kernel, on one stream, reading the same rank-0
/// buffers: the members of one batched dispatch.
struct Group {
  SmallVector<DispatchOp> members;
  /// Storages the members read and write.
  DenseSet<Operation *> reads, writes;
};

/// The commands touching each storage, by position in the program.
class Accesses {
public:
  explicit Accesses(exec::ProgramOp program) {
    int64_t position = 0;
    for (Operation &op : program.getBlock()) {
      if (!exec::isCommand(&op))
        continue;
      positions[&op] = position;
      allReduceAt.push_back(isa<exec::AllReduceOp>(op));
      for (Value buffer : exec::getReadBuffers(&op))
        reads[exec::getStorage(buffer)].push_back(position);
      for (Value buffer : exec::getWrittenBuffers(&op))
        writes[exec::getStorage(buffer)].push_back(position);
      ++position;
    }
  }

  int64_t positionOf(Operation *command) const {
    return positions.lookup(command);
  }
  /// Whether the command at `position` was an all-reduce (fusion may have
  /// erased it since, merged into another).
  bool isAllReduceAt(int64_t position) const { return allReduceAt[position]; }

  /// True if a command strictly between positions `from` and `to` writes
  /// `storage` (or, with `orReads`, reads it).
  bool touchedBetween(Operation *storage, int64_t from, int64_t to,
                      bool orReads) const {
    auto within = [&](const DenseMap<Operation *, SmallVector<int64_t>> &map) {
      auto it = map.find(storage);
      if (it == map.end())
        return false;
      auto next = llvm::upper_bound(it->second, from);
      return next != it->second.end() && *next < to;
    };
    return within(writes) || (orReads && within(reads));
  }

private:
  DenseMap<Operation *, int64_t> positions;
  SmallVector<bool> allReduceAt;
  DenseMap<Operation *, SmallVector<int64_t>> reads, writes;
};

/// How one operand position of a group's members becomes the batched
/// dispatch's operand.
struct PackedOperand {
  /// The shared buffer, or the existing pack (read from element
  /// `viewFrom` with the batched operand's shape, where set).
  Value existing;
  std::optional<int64_t> viewFrom;
  /// Else: a new pack of the members' buffers of this kind, updating the
  /// state pack `updates`, or the new pack of operand `updatesOperand`,
  /// where the members update state.
  ResourceKind kind = ResourceKind::scratch;
  Value updates;
  int updatesOperand = -1;
  /// Or the new pack of these state resources, which no pack holds and no
  /// member reads (a copy of other state, such as a parameter's compute
  /// copy, which the members write from the parameter).
  SmallVector<ResourceOp> stateRows;
  /// The members' in-place all-reduces, which become one of the pack, where
  /// the last of them was (and so a gradient bucket's member).
  SmallVector<exec::AllReduceOp> allReduces;
};

class HorizontalFuser {
public:
  HorizontalFuser(
      exec::ProgramOp program, bool remarks, int64_t maxElements,
      int64_t maxRowElements, bool mergeAllReduces,
      SymbolTableCollection &symbols,
      llvm::SetVector<Operation *> &fusedKernels,
      DenseMap<std::pair<Operation *, int64_t>, func::FuncOp> &batched)
      : program(program), accesses(program), remarks(remarks),
        maxElements(maxElements), maxRowElements(maxRowElements),
        mergeAllReduces(mergeAllReduces), symbols(symbols),
        fusedKernels(fusedKernels), batchedKernels(batched) {}

  void run() {
    // One open group per kernel, stream and shared (rank-0) buffers.
    using Key = std::tuple<Operation *, uint64_t, SmallVector<Value>>;
    SmallVector<std::pair<Key, Group>> open;
    SmallVector<Group> groups;
    for (Operation &op : program.getBlock()) {
      auto dispatch = dyn_cast<DispatchOp>(op);
      func::FuncOp kernel = dispatch ? kernelOf(dispatch) : func::FuncOp();
      if (!kernel || !candidate(kernel))
        continue;
      Key key{kernel, dispatch.getStream(), {}};
      for (Value input : dispatch.getInputs())
        if (cast<MemRefType>(input.getType()).getRank() == 0)
          std::get<2>(key).push_back(input);
      auto it =
          llvm::find_if(open, [&](auto &entry) { return entry.first == key; });
      if (it == open.end()) {
        open.push_back({key, Group()});
        it = std::prev(open.end());
      }
      Group &group = it->second;
      if (!group.members.empty() && !joins(group, dispatch))
        groups.push_back(std::exchange(group, Group()));
      add(group, dispatch);
    }
    for (auto &entry : open)
      groups.push_back(std::move(entry.second));
    // In program order: the packs a group makes are the next one's.
    llvm::stable_sort(groups, [&](const Group &a, const Group &b) {
      return accesses.positionOf(a.members.front()) <
             accesses.positionOf(b.members.front());
    });
    for (Group &group : groups)
      if (group.members.size() > 1)
        fuse(group);
  }

private:
  func::FuncOp kernelOf(DispatchOp dispatch) {
    auto kernel = symbols.lookupNearestSymbolFrom<func::FuncOp>(
        dispatch, dispatch.getKernel());
    if (!kernel || kernel.isExternal() ||
        !exec::isKernelOnTensors(kernel.getFunctionType()))
      return {};
    return kernel;
  }

  /// A kernel small enough that its launch's fixed cost matters, whose
  /// body batches (decided once a kernel; not a group's refusal, so not a
  /// remark).
  bool candidate(func::FuncOp kernel) {
    auto known = candidates.find(kernel);
    if (known != candidates.end())
      return known->second;
    bool small = llvm::all_of(
        llvm::concat<const Type>(kernel.getArgumentTypes(),
                                 kernel.getResultTypes()),
        [&](Type type) {
          return cast<RankedTensorType>(type).getNumElements() <= maxElements;
        });
    // A batched reduction sums each member's elements as one row, which a
    // GPU gives one team: short rows only (an unbatched sum of a long
    // tensor is split over many blocks instead), but with large rows, where
    // the CUDA target splits each row over warps too.
    bool shortRows = true;
    kernel.walk([&](Operation *op) {
      if (!isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp>(op))
        return;
      auto from = cast<RankedTensorType>(op->getOperand(0).getType());
      auto to = cast<RankedTensorType>(op->getResult(0).getType());
      shortRows &=
          from.getNumElements() / to.getNumElements() <= maxRowElements;
    });
    bool ok =
        small && shortRows && kernel.getNumResults() > 0 && batches(kernel);
    candidates[kernel] = ok;
    return ok;
  }

  void add(Group &group, DispatchOp dispatch) {
    group.members.push_back(dispatch);
    for (Value input : dispatch.getInputs())
      group.reads.insert(exec::getStorage(input));
    for (Value output : dispatch.getOutputs())
      group.writes.insert(exec::getStorage(output));
  }

  /// `dispatch` may run with the group's members, where the first ran: it
  /// does not read what they write or write what they touch, and no command
  /// in between writes what it reads or touches what it writes.
  bool joins(const Group &group, DispatchOp dispatch) {
    int64_t first = accesses.positionOf(group.members.front());
    int64_t at = accesses.positionOf(dispatch);
    for (Value input : dispatch.getInputs()) {
      Operation *storage = exec::getStorage(input);
      if (group.writes.contains(storage) ||
          accesses.touchedBetween(storage, first, at, /*orReads=*/false))
        return false;
      // A buffer of a member's own is one row of a pack: not two.
      if (cast<MemRefType>(input.getType()).getRank() > 0 &&
          group.reads.contains(storage))
        return false;
    }
    for (Value output : dispatch.getOutputs()) {
      Operation *storage = exec::getStorage(output);
      if (group.reads.contains(storage) || group.writes.contains(storage) ||
          accesses.touchedBetween(storage, first, at, /*orReads=*/true))
        return false;
    }
    return true;
  }

  /// The buffers at operand `index` of every member.
  static SmallVector<Value> column(const Group &group, unsigned index) {
    SmallVector<Value> buffers;
    for (DispatchOp member : group.members)
      buffers.push_back(member->getOperand(index));
    return buffers;
  }

  /// The batched operand's type for `buffers`: a leading dimension of them.
  static MemRefType packType(ArrayRef<Value> buffers) {
    auto type = cast<MemRefType>(buffers.front().getType());
    SmallVector<int64_t> shape{int64_t(buffers.size())};
    llvm::append_range(shape, type.getShape());
    return MemRefType::get(shape, type.getElementType());
  }

  /// How the members' buffers `buffers` become one operand, or why they
  /// cannot: rows [first, first + N) of a pack made already, or whole
  /// resources of one kind of their own, each 64-byte aligned in a pack.
  /// `planned` and `columns`: the operands before it.
  FailureOr<PackedOperand> packing(ArrayRef<Value> buffers,
                                   ArrayRef<PackedOperand> planned,
                                   ArrayRef<SmallVector<Value>> columns,
                                   std::string &why) {
    auto type = cast<MemRefType>(buffers.front().getType());
    int64_t size = type.getNumElements();
    SmallVector<ResourceOp> resources;
    for (Value buffer : buffers) {
      ResourceOp resource = wholeResource(buffer);
      if (!resource) {
        why = "a buffer is a part of another";
        return failure();
      }
      resources.push_back(resource);
    }
    if (Value pack = resources.front().getPack()) {
      int64_t first = *resources.front().getPackElement();
      for (auto [i, resource] : llvm::enumerate(resources))
        if (resource.getPack() != pack ||
            int64_t(*resource.getPackElement()) != first + int64_t(i) * size) {
          why = "its buffers are rows of another group's pack, not in order";
          return failure();
        }
      PackedOperand packed;
      packed.existing = pack;
      if (pack.getType() != packType(buffers)) {
        int64_t byte = first * exec::getElementByteSize(type.getElementType());
        if (byte % exec::kBufferAlignment) {
          why = "its buffers are rows of another group's pack from an "
                "unaligned byte, " +
                std::to_string(byte);
          return failure();
        }
        packed.viewFrom = first;
      }
      return packed;
    }
    int64_t bytes = exec::getByteSize(type);
    if (type.getRank() > 0 && bytes % exec::kBufferAlignment) {
      why = "a row of " + std::to_string(bytes) +
            " bytes would leave the next unaligned";
      return failure();
    }
    PackedOperand packed;
    packed.kind = resources.front().getKind();
    SmallVector<Value> updated;
    for (ResourceOp resource : resources) {
      if (resource.getPack() || !exec::getPackMembers(resource).empty() ||
          resource.getKind() != packed.kind ||
          !exec::isPackableKind(resource.getKind())) {
        why = "its buffers are not resources of one kind a pack holds";
        return failure();
      }
      SmallVector<Operation *> others = otherCommands(resource);
      if (mergeAllReduces && others.size() == 1 &&
          reducing(others.front(), resource)) {
        packed.allReduces.push_back(reducing(others.front(), resource));
      } else if (!others.empty()) {
        why = "a buffer is also read or written by " +
              others.front()->getName().getStringRef().str();
        return failure();
      }
      if (resource.getUpdates())
        updated.push_back(resource.getUpdates());
    }
    if (!packed.allReduces.empty() &&
        !oneAllReduce(packed.allReduces, resources.size(), why))
      return failure();
    if (updated.empty())
      return packed;
    // The new values of state rows update the state's pack, whole: one
    // made already, or the one this group makes of an input.
    if (updated.size() == buffers.size()) {
      auto state = updated.front().getDefiningOp<ResourceOp>();
      Value statePack = state ? state.getPack() : Value();
      bool whole =
          statePack && cast<MemRefType>(statePack.getType()).getNumElements() ==
                           size * int64_t(buffers.size());
      for (auto [i, value] : llvm::enumerate(updated)) {
        auto row = value.getDefiningOp<ResourceOp>();
        whole &= row && row.getPack() == statePack &&
                 int64_t(*row.getPackElement()) == int64_t(i) * size;
      }
      if (whole) {
        packed.updates = statePack;
        return packed;
      }
      auto rowsOf = [](ArrayRef<Value> buffers) {
        return llvm::map_to_vector(buffers, wholeResource);
      };
      for (auto [j, other] : llvm::enumerate(planned))
        if (!other.existing && rowsOf(columns[j]) == rowsOf(updated)) {
          packed.updatesOperand = j;
          return packed;
        }
      SmallVector<ResourceOp> rows = llvm::map_to_vector(
          updated, [](Value v) { return v.getDefiningOp<ResourceOp>(); });
      bool unpacked = llvm::all_of(rows, [&](ResourceOp r) {
        return r && !r.getPack() && exec::getPackMembers(r).empty() &&
               r.getKind() == rows.front().getKind() &&
               exec::isPackableKind(r.getKind()) && otherCommands(r).empty();
      });
      if (unpacked && llvm::none_of(columns, [&](ArrayRef<Value> column) {
            return llvm::any_of(rows, [&](ResourceOp r) {
              return llvm::is_contained(rowsOf(column), r);
            });
          })) {
        packed.stateRows = std::move(rows);
        return packed;
      }
    }
    why = "its buffers update state that is not one pack of their rows";
    return failure();
  }

  /// Whether `allReduces` (one a member, in place) can be one all-reduce of
  /// the pack where the last of them is: they reduce alike, and between the
  /// first and the last there are only all-reduces (of other buffers), so
  /// no command reads a member before it is reduced, and no group's
  /// dispatch, which runs where its first member ran, moves in between.
  bool oneAllReduce(ArrayRef<exec::AllReduceOp> allReduces, size_t members,
                    std::string &why) {
    if (allReduces.size() != members) {
      why = "some of its buffers are all-reduced, others not";
      return false;
    }
    exec::AllReduceOp front = allReduces.front();
    int64_t first = accesses.positionOf(front), last = first;
    for (exec::AllReduceOp allReduce : allReduces) {
      if (allReduce.getAxis() != front.getAxis() ||
          allReduce.getReduction() != front.getReduction() ||
          allReduce.getStream() != front.getStream()) {
        why = "its buffers are all-reduced differently";
        return false;
      }
      first = std::min(first, accesses.positionOf(allReduce));
      last = std::max(last, accesses.positionOf(allReduce));
    }
    for (int64_t at = first + 1; at < last; ++at)
      if (!accesses.isAllReduceAt(at)) {
        why = "a command other than an all-reduce runs between its "
              "buffers' all-reduces";
        return false;
      }
    return true;
  }

  /// The members' all-reduces as one of `pack`, where the last of them was.
  void reduceAsOne(ArrayRef<exec::AllReduceOp> allReduces, Value pack) {
    exec::AllReduceOp last = allReduces.front();
    SmallVector<Value> awaits;
    for (exec::AllReduceOp allReduce : allReduces) {
      if (last->isBeforeInBlock(allReduce))
        last = allReduce;
      llvm::append_range(awaits, allReduce.getAwaits());
    }
    OpBuilder b(last);
    auto merged = exec::AllReduceOp::create(
        b, last.getLoc(), last.getType(), pack, pack, last.getAxis(),
        last.getReduction(), ValueRange{}, last.getStream());
    exec::addAwaits(merged, awaits);
    for (exec::AllReduceOp allReduce : allReduces) {
      allReduce.getDone().replaceAllUsesWith(merged.getDone());
      allReduce.erase();
    }
  }

  /// A new pack of `buffers` (resources), row i holding buffers[i].
  Value pack(ArrayRef<Value> buffers, const PackedOperand &how) {
    auto type = cast<MemRefType>(buffers.front().getType());
    OpBuilder b(program.getContext());
    // Packs first, in the order made: a pack of new state values follows
    // the state's pack it updates.
    if (lastPack)
      b.setInsertionPointAfter(lastPack);
    else
      b.setInsertionPointToStart(&program.getBlock());
    auto packOp = ResourceOp::create(b, buffers.front().getLoc(),
                                     packType(buffers), how.kind, StringAttr(),
                                     how.updates, Attribute(), ElementsAttr(),
                                     IntegerAttr(), Value(), IntegerAttr());
    lastPack = packOp;
    for (auto [i, buffer] : llvm::enumerate(buffers)) {
      ResourceOp member = wholeResource(buffer);
      member.getUpdatesMutable().clear();
      member.getPackMutable().assign(packOp.getResult());
      member.setPackElementAttr(
          b.getI64IntegerAttr(int64_t(i) * type.getNumElements()));
    }
    if (!how.allReduces.empty())
      reduceAsOne(how.allReduces, packOp.getResult());
    return packOp.getResult();
  }

  void fuse(Group &group) {
    DispatchOp first = group.members.front();
    func::FuncOp kernel = kernelOf(first);
    int64_t rows = group.members.size();
    auto refuse = [&](const Twine &why) {
      if (remarks)
        first.emitRemark() << "not fused horizontally with the " << rows - 1
                           << " other dispatches of " << kernel.getSymName()
                           << ": " << why;
    };
    // A buffer is one row of one pack: not two operands of a member.
    DenseSet<Operation *> seen;
    for (DispatchOp member : group.members)
      for (Value buffer :
           llvm::concat<Value>(member.getInputs(), member.getOutputs()))
        if (cast<MemRefType>(buffer.getType()).getRank() > 0 ||
            llvm::is_contained(member.getOutputs(), buffer))
          if (ResourceOp resource = wholeResource(buffer);
              resource && !seen.insert(resource).second)
            return refuse("a buffer is two operands of a dispatch");
    // Plan every operand before changing anything.
    unsigned inputs = first.getInputs().size();
    unsigned operands = inputs + first.getOutputs().size();
    SmallVector<SmallVector<Value>> columns;
    SmallVector<PackedOperand> plan;
    for (unsigned i = 0; i < operands; ++i) {
      columns.push_back(column(group, i));
      ArrayRef<Value> buffers = columns.back();
      if (i < inputs &&
          cast<MemRefType>(buffers.front().getType()).getRank() == 0) {
        plan.push_back(PackedOperand{buffers.front()});
        continue;
      }
      std::string why;
      FailureOr<PackedOperand> packed =
          packing(buffers, plan, ArrayRef(columns).drop_back(), why);
      if (failed(packed))
        return refuse("operand " + Twine(i) + ": " + why);
      plan.push_back(*packed);
    }
    SmallVector<Value> packed;
    for (auto [i, how] : llvm::enumerate(plan)) {
      if (how.updatesOperand >= 0)
        how.updates = packed[how.updatesOperand];
      if (!how.stateRows.empty()) {
        PackedOperand state;
        state.kind = how.stateRows.front().getKind();
        SmallVector<Value> rows = llvm::map_to_vector(
            how.stateRows, [](ResourceOp r) -> Value { return r.getResult(); });
        how.updates = pack(rows, state);
      }
      if (!how.existing) {
        packed.push_back(pack(columns[i], how));
        continue;
      }
      if (!how.viewFrom) {
        packed.push_back(how.existing);
        continue;
      }
      OpBuilder b(program.getContext());
      b.setInsertionPointAfterValue(how.existing);
      packed.push_back(exec::ViewOp::create(
          b, how.existing.getLoc(), packType(columns[i]), how.existing,
          b.getI64IntegerAttr(*how.viewFrom)));
    }
    func::FuncOp batched = batchedKernels[{kernel, rows}];
    if (!batched) {
      SymbolTable &table =
          symbols.getSymbolTable(kernel->getParentOfType<ModuleOp>());
      batched = batchKernel(kernel, rows, table);
      batchedKernels[{kernel, rows}] = batched;
    }
    OpBuilder b(first);
    auto symbol =
        SymbolRefAttr::get(first.getKernel().getRootReference(),
                           {FlatSymbolRefAttr::get(batched.getSymNameAttr())});
    auto dispatch = DispatchOp::create(
        b, first.getLoc(), first.getDone().getType(), symbol,
        ArrayRef(packed).take_front(inputs),
        ArrayRef(packed).drop_front(inputs), ValueRange{}, first.getStream());
    for (DispatchOp member : group.members)
      exec::addAwaits(dispatch, member.getAwaits());
    if (remarks)
      dispatch.emitRemark() << "fused horizontally: " << rows
                            << " dispatches of " << kernel.getSymName()
                            << " in one, over packs of " << rows << " rows";
    for (DispatchOp member : group.members) {
      member.getDone().replaceAllUsesWith(dispatch.getDone());
      member.erase();
    }
    fusedKernels.insert(kernel);
  }

  exec::ProgramOp program;
  Accesses accesses;
  bool remarks;
  int64_t maxElements, maxRowElements;
  bool mergeAllReduces;
  SymbolTableCollection &symbols;
  llvm::SetVector<Operation *> &fusedKernels;
  DenseMap<std::pair<Operation *, int64_t>, func::FuncOp> &batchedKernels;
  DenseMap<Operation *, bool> candidates;
  Operation *lastPack = nullptr;
};

/// Fuses every program of `module` (they share the kernel module, and so
/// the batched kernels), packing buffers of up to `maxElements` elements.
void fuseHorizontally(ModuleOp module, bool remarks, int64_t maxElements,
                      int64_t maxRowElements, bool mergeAllReduces) {
  SymbolTableCollection symbols;
  llvm::SetVector<Operation *> fusedKernels;
  DenseMap<std::pair<Operation *, int64_t>, func::FuncOp> batched;
  module.walk([&](exec::ProgramOp program) {
    HorizontalFuser(program, remarks, maxElements, maxRowElements,
                    mergeAllReduces, symbols, fusedKernels, batched)
        .run();
  });
  exec::eraseUndispatchedKernels(module, fusedKernels.getArrayRef());
}

/// The dispatches a module's programs run.
int64_t dispatchCount(ModuleOp module) {
  int64_t count = 0;
  module.walk([&](DispatchOp) { ++count; });
  return count;
}

struct FuseHorizontalPass : impl::ExecFuseHorizontalBase<FuseHorizontalPass> {
  using Base::Base;

  void runOnOperation() override {
    if (maxElements < 1) {
      getOperation().emitError()
          << "exec-fuse-horizontal: option 'max-elements' must be >= 1, got "
          << int64_t(maxElements);
      return signalPassFailure();
    }
    fuse(getOperation(), largeRows && largeRowsKeepTheArena(), remarks);
  }

  /// Fuses `module`, packing buffers of up to max-elements, or of any size
  /// (`large`).
  void fuse(ModuleOp module, bool large, bool withRemarks) {
    fuseHorizontally(module, withRemarks, large ? kAnySize : maxElements,
                     large ? kAnySize : kMaxRowElements, mergeAllReduces);
  }

  /// Each program's arena (in program order) once `module` is scheduled
  /// and planned as the rest of the lowering does (exec-schedule-
  /// collectives to exec-plan-buffers); none if that fails, its diagnostics
  /// kept from the user (the module is a trial's copy: the real one is planned
  /// later).
  std::optional<SmallVector<uint64_t>> plannedArenas(ModuleOp module) {
    PassManager pm(&getContext());
    addSchedulingAndPlanningPasses(pm, bucketBytes, weightGradientStream);
    ScopedDiagnosticHandler quiet(&getContext(),
                                  [](Diagnostic &) { return success(); });
    if (failed(pm.run(module)))
      return std::nullopt;
    SmallVector<uint64_t> arenas;
    module.walk([&](exec::ProgramOp program) {
      arenas.push_back(program.getArenaSize().value_or(0));
    });
    return arenas;
  }

  /// Whether packing buffers of any size saves dispatches and keeps every
  /// program's planned arena (the training step's, the evaluation's): a
  /// pack of a layer's gradients holds every row from the first one's
  /// write, which may raise the peak (Llama 2 7B at 256 tokens a step:
  /// 95 -> 109 GB) or not at all (GPT-2 medium, whose peak lies elsewhere).
  /// Two copies of the module are fused, with and without, and planned; the
  /// decision, with the arenas, is a remark. A trial plan that fails keeps
  /// the rows apart.
  bool largeRowsKeepTheArena() {
    OwningOpRef<ModuleOp> with = getOperation().clone(),
                          without = getOperation().clone();
    fuse(*with, /*large=*/true, /*withRemarks=*/false);
    fuse(*without, /*large=*/false, /*withRemarks=*/false);
    int64_t fewer = dispatchCount(*without) - dispatchCount(*with);
    if (fewer <= 0)
      return false;
    std::optional<SmallVector<uint64_t>> arenasWith = plannedArenas(*with),
                                         arenasWithout =
                                             plannedArenas(*without);
    if (!arenasWith || !arenasWithout ||
        arenasWith->size() != arenasWithout->size()) {
      if (remarks)
        getOperation().emitRemark()
            << "not fused horizontally with rows of more than "
            << int64_t(maxElements)
            << " elements: a trial plan of the module failed";
      return false;
    }
    bool keeps = llvm::all_of(
        llvm::zip_equal(*arenasWith, *arenasWithout),
        [](auto pair) { return std::get<0>(pair) <= std::get<1>(pair); });
    if (remarks)
      getOperation().emitRemark()
          << (keeps ? "" : "not ")
          << "fused horizontally with rows of more than "
          << int64_t(maxElements) << " elements: " << fewer
          << " dispatches fewer, the programs' arenas "
          << llvm::interleaved(*arenasWithout) << " bytes without them and "
          << llvm::interleaved(*arenasWith) << " with";
    return keeps;
  }
};
} // namespace
} // namespace mlir::tg
