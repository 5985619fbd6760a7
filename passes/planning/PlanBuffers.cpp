// exec-plan-buffers: every resource of a program gets a byte offset in one
// arena. State first, in program order; scratch first-fit in command order,
// reused after the last command touching its previous occupant; results
// that update state written over it when nothing reads the old value later.
#include "tg/Exec/IR/ExecOps.h"
#include "tg/IR/TgOps.h"
#include "tg/Passes/KernelBodies.h"
#include "tg/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"

#include <map>

namespace mlir::tg {
#define GEN_PASS_DEF_EXECPLANBUFFERS
#include "tg/Passes/Passes.h.inc"

namespace {
using exec::ResourceOp;

uint64_t alignUp(uint64_t bytes) {
  constexpr uint64_t alignment = exec::kBufferAlignment;
  return (bytes + alignment - 1) / alignment * alignment;
}

/// First-fit allocation with coalescing of freed neighbours.
class FreeListAllocator {
public:
  uint64_t allocate(uint64_t size) {
    size = alignUp(size);
    for (auto it = free.begin(); it != free.end(); ++it) {
      if (it->second < size)
        continue;
      uint64_t offset = it->first, remaining = it->second - size;
      free.erase(it);
      if (remaining)
        free[offset + size] = remaining;
      return offset;
    }
    // Grow the arena, reusing a free block that ends at the top.
    uint64_t offset = top;
    if (!free.empty()) {
      auto last = std::prev(free.end());
      if (last->first + last->second == top) {
        offset = last->first;
        free.erase(last);
      }
    }
    top = offset + size;
    return offset;
  }

  void release(uint64_t offset, uint64_t size) {
    size = alignUp(size);
    if (!size)
      return;
    auto next = free.lower_bound(offset);
    if (next != free.end() && offset + size == next->first) {
      size += next->second;
      next = free.erase(next);
    }
    if (next != free.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == offset) {
        prev->second += size;
        return;
      }
    }
    free[offset] = size;
  }

  uint64_t peak() const { return top; }

private:
  std::map<uint64_t, uint64_t> free; // offset -> size
  uint64_t top = 0;
};

/// The commands touching one resource, in program order.
struct Uses {
  int64_t first = -1, last = -1;
  int64_t firstWrite = -1;
  SmallVector<Operation *> commands;
};

class Planner {
public:
  Planner(exec::ProgramOp program) : program(program) {}

  LogicalResult run() {
    if (program.getArenaSize())
      return program.emitOpError("is already planned");
    collectUses();
    placeState();
    placeUpdates();
    placeScratch();
    program.setStateSizeAttr(i64(stateTop));
    program.setArenaSizeAttr(i64(stateTop + scratch.peak()));
    appendCopiesBack();
    return success();
  }

private:
  IntegerAttr i64(uint64_t v) {
    return IntegerAttr::get(IntegerType::get(program.getContext(), 64), v);
  }

  void collectUses() {
    int64_t position = 0;
    bool multiStream = false;
    for (Operation &op : program.getBlock()) {
      if (!exec::isCommand(&op))
        continue;
      commands.push_back(&op);
      multiStream |= exec::getStream(&op) != 0;
      auto note = [&](Value buffer, bool write) {
        ResourceOp storage = exec::getStorage(buffer);
        touches[storage].push_back({position, exec::getByteRange(buffer)});
        Uses &u = uses[storage];
        if (u.first < 0)
          u.first = position;
        if (write && u.firstWrite < 0)
          u.firstWrite = position;
        u.last = position;
        if (u.commands.empty() || u.commands.back() != &op)
          u.commands.push_back(&op);
      };
      for (Value buffer : exec::getReadBuffers(&op))
        note(buffer, false);
      for (Value buffer : exec::getWrittenBuffers(&op))
        note(buffer, true);
      for (Value timepoint : exec::getAwaits(&op))
        firstAwaiter.try_emplace(timepoint.getDefiningOp(), position);
      ++position;
    }
    hasSeveralStreams = multiStream;
  }

  void setOffset(ResourceOp resource, uint64_t offset) {
    resource.setOffsetAttr(i64(offset));
  }

  /// Parameters, moments, inputs, outputs and constants, in program order.
  /// (A packed resource is placed with its pack: exec::getByteOffset.)
  void placeState() {
    for (auto resource : program.getBlock().getOps<ResourceOp>())
      if (resource.isState() && !resource.getPack()) {
        setOffset(resource, stateTop);
        stateTop += alignUp(resource.getByteSize());
      }
  }

  /// The last command touching `bytes` of `storage`, or -1.
  int64_t lastTouch(ResourceOp storage, exec::ByteRange bytes) {
    int64_t last = -1;
    for (const Touch &touch : touches.lookup(storage))
      if (touch.bytes.overlaps(bytes))
        last = std::max(last, touch.position);
    return last;
  }

  /// The commands before `position` touching the bytes of `buffer` (in
  /// `storage`): what a command at `position` overwriting them must follow.
  /// Not the whole storage's: a pack's later commands may touch its other
  /// members, and the writer cannot await a command after it.
  SmallVector<Operation *> touchesBefore(ResourceOp storage, Value buffer,
                                         int64_t position) {
    exec::ByteRange bytes = exec::getByteRange(buffer);
    SmallVector<Operation *> before;
    for (const Touch &touch : touches.lookup(storage))
      if (touch.position < position && touch.bytes.overlaps(bytes) &&
          !llvm::is_contained(before, commands[touch.position]))
        before.push_back(commands[touch.position]);
    return before;
  }

  /// The new value of state buffer `stateBuffer` (in storage `state`: a
  /// pack's member lives in its pack), first written by `writer`, may be
  /// written over it: nothing reads the old value's bytes afterwards, or
  /// only the writer does, as an elementwise group reading it at the index
  /// it writes (emitElementwiseGroup reads every input of an iteration
  /// first).
  bool canOverwrite(ResourceOp state, Value stateBuffer, ResourceOp update,
                    Operation *writer) {
    int64_t last = lastTouch(state, exec::getByteRange(stateBuffer));
    int64_t at = uses[update].firstWrite;
    if (last < at)
      return true;
    if (last != at)
      return false;
    auto dispatch = dyn_cast<exec::DispatchOp>(writer);
    if (!dispatch)
      return false;
    auto kernel = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
        dispatch, dispatch.getKernel());
    if (!kernel || kernel.isExternal())
      return false;
    std::optional<ArrayRef<int64_t>> space =
        elementwiseGroupShape(kernel.getBody().front());
    if (!space)
      return false;
    for (auto [input, arg] :
         llvm::zip(dispatch.getInputs(), kernel.getArguments()))
      if (exec::getStorage(input) == state &&
          cast<ShapedType>(arg.getType()).getShape() != *space)
        return false;
    return true;
  }

  void placeUpdates() {
    for (auto update : program.getBlock().getOps<ResourceOp>()) {
      Value stateBuffer = update.getUpdates();
      if (!stateBuffer)
        continue;
      ResourceOp state = exec::getStorage(stateBuffer);
      const Uses &u = uses[update];
      Operation *writer = u.firstWrite >= 0 ? commands[u.firstWrite] : nullptr;
      if (writer && canOverwrite(state, stateBuffer, update, writer)) {
        setOffset(update,
                  *state.getOffset() + exec::getByteOffset(stateBuffer));
        awaitOthers(writer, touchesBefore(state, stateBuffer, u.firstWrite));
        continue;
      }
      copiesBack.push_back({update, stateBuffer});
      setOffset(update, stateTop);
      stateTop += alignUp(update.getByteSize());
    }
  }

  /// The position after which a resource's range is free again: its last
  /// use, and for a use on a stream other than the main one (a collective
  /// on the communication stream, a weight gradient's GEMM on its own) no
  /// earlier than the first command that awaits it. A reuse before that
  /// would be correct (the reusing command awaits it, below) but would
  /// stall the main stream until that command completes, which is the
  /// overlap lost.
  int64_t releasePosition(const Uses &u) {
    int64_t at = u.last;
    for (Operation *command : u.commands)
      if (exec::getStream(command) != 0) {
        auto awaiter = firstAwaiter.find(command);
        at = std::max<int64_t>(at, awaiter == firstAwaiter.end()
                                       ? int64_t(commands.size())
                                       : awaiter->second);
      }
    return at;
  }

  /// Scratch: first fit at the first command touching it, released after
  /// the last (releasePosition).
  void placeScratch() {
    DenseMap<int64_t, SmallVector<ResourceOp>> startingAt, endingAt;
    for (auto resource : program.getBlock().getOps<ResourceOp>()) {
      if (resource.getOffset() || resource.getPack())
        continue;
      const Uses &u = uses[resource];
      if (u.first < 0) { // never touched: still gets a place
        setOffset(resource, stateTop + scratch.allocate(resource.getByteSize()));
        continue;
      }
      startingAt[u.first].push_back(resource);
      endingAt[releasePosition(u)].push_back(resource);
    }
    for (int64_t position = 0; position < (int64_t)commands.size();
         ++position) {
      for (ResourceOp resource : startingAt.lookup(position)) {
        uint64_t size = resource.getByteSize();
        uint64_t offset = scratch.allocate(size);
        setOffset(resource, stateTop + offset);
        if (hasSeveralStreams)
          for (ResourceOp previous :
               lastOccupantsOf(offset, offset + alignUp(size)))
            awaitOthers(commands[position], uses[previous].commands);
      }
      for (ResourceOp resource : endingAt.lookup(position)) {
        uint64_t offset = *resource.getOffset() - stateTop;
        scratch.release(offset, resource.getByteSize());
        if (hasSeveralStreams)
          setLastOccupant(resource, offset,
                          offset + alignUp(resource.getByteSize()));
      }
    }
  }

  /// Records `resource` as the last occupant of scratch bytes [begin, end).
  /// Earlier occupants of those bytes need no await from a later reuser:
  /// `resource`'s first command awaited them (or followed them on their
  /// stream), and the reuser awaits `resource`'s commands (or follows them).
  void setLastOccupant(ResourceOp resource, uint64_t begin, uint64_t end) {
    auto it = lastOccupant.lower_bound(begin);
    if (it != lastOccupant.begin()) {
      auto before = std::prev(it);
      auto [beforeEnd, beforeResource] = before->second;
      if (beforeEnd > begin) {
        before->second.first = begin;
        if (beforeEnd > end)
          lastOccupant[end] = {beforeEnd, beforeResource};
      }
    }
    while (it != lastOccupant.end() && it->first < end) {
      if (it->second.first > end)
        lastOccupant[end] = it->second;
      it = lastOccupant.erase(it);
    }
    lastOccupant[begin] = {end, resource};
  }

  /// The last occupants of scratch bytes [begin, end).
  SmallVector<ResourceOp> lastOccupantsOf(uint64_t begin, uint64_t end) {
    SmallVector<ResourceOp> occupants;
    auto it = lastOccupant.lower_bound(begin);
    if (it != lastOccupant.begin() && std::prev(it)->second.first > begin)
      --it;
    for (; it != lastOccupant.end() && it->first < end; ++it)
      occupants.push_back(it->second.second);
    return occupants;
  }

  /// `command` awaits those of `others` that run on another stream (the
  /// stream's own order covers the rest).
  void awaitOthers(Operation *command, ArrayRef<Operation *> others) {
    SmallVector<Value> timepoints;
    for (Operation *other : others)
      if (other != command &&
          exec::getStream(other) != exec::getStream(command))
        timepoints.push_back(other->getResult(0));
    exec::addAwaits(command, timepoints);
  }

  /// New state that could not be written in place is copied over the old
  /// value once every command touching either has completed.
  void appendCopiesBack() {
    OpBuilder b = OpBuilder::atBlockEnd(&program.getBlock());
    for (auto [update, state] : copiesBack) {
      SmallVector<Value> awaits;
      for (Operation *command : uses[update].commands)
        awaits.push_back(command->getResult(0));
      for (Operation *command : uses[exec::getStorage(state)].commands)
        if (!llvm::is_contained(awaits, command->getResult(0)))
          awaits.push_back(command->getResult(0));
      exec::CopyOp::create(b, update.getLoc(),
                           exec::TimepointType::get(b.getContext()), update,
                           state, awaits, 0);
    }
  }

  exec::ProgramOp program;
  SmallVector<Operation *> commands;
  DenseMap<Operation *, Uses> uses; // by resource
  /// Each command's bytes of each resource it touches.
  struct Touch {
    int64_t position;
    exec::ByteRange bytes;
  };
  DenseMap<Operation *, SmallVector<Touch>> touches; // by resource
  DenseMap<Operation *, int64_t> firstAwaiter; // command -> position
  /// Scratch offset -> (end, resource): disjoint segments (several streams).
  std::map<uint64_t, std::pair<uint64_t, ResourceOp>> lastOccupant;
  bool hasSeveralStreams = false;
  uint64_t stateTop = 0;
  FreeListAllocator scratch;
  SmallVector<std::pair<ResourceOp, Value>> copiesBack;
};

struct PlanBuffersPass : impl::ExecPlanBuffersBase<PlanBuffersPass> {
  void runOnOperation() override {
    auto result = getOperation().walk([](exec::ProgramOp program) {
      return failed(Planner(program).run()) ? WalkResult::interrupt()
                                            : WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
} // namespace mlir::tg
