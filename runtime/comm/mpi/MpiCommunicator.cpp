// Collectives between CPU ranks over MPI (Open MPI), with a watchdog.
//
// Every collective is non-blocking (MPI_Iallreduce, ...): a backend starts
// it when the command list reaches it and waits only where a later command
// needs its result, so communication overlaps computation. A wait polls,
// sleeping between polls so that ranks sharing cores do not starve each
// other, and gives up after the collective timeout. Before giving up it asks
// the other ranks of the collective where they are, over a duplicate of
// MPI_COMM_WORLD served by a small responder thread on every rank: a rank
// that does not answer is stopped, hung or dead, and the message says so.
#include "../RunState.h"
#include "tg/runtime/Collectives.h"

#include <mpi.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace tg::runtime {
namespace {

constexpr int kQueryTag = 1, kReplyTag = 2;
/// How long a rank that timed out waits for the others' answers.
constexpr double kQuerySeconds = 3.0;
/// The least time an exchange waits (Communicator::exchange).
constexpr double kStateExchangeSeconds = 600;
/// Bytes per MPI_Igather of gatherToRankZero.
constexpr uint64_t kGatherPiece = 16 << 20;

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

/// The process's membership of the run: MPI, initialised once, and the
/// responder thread that answers other ranks' "where are you" queries.
struct Ranks {
  bool joined = false;
  RankPlacement placement;
  MPI_Comm control = MPI_COMM_NULL;
  std::thread responder;
  std::atomic<bool> stopping{false};

  ~Ranks() { leave(); }

  void respond() {
    int query = 0;
    MPI_Request pending;
    MPI_Irecv(&query, 1, MPI_INT, MPI_ANY_SOURCE, kQueryTag, control, &pending);
    while (!stopping) {
      int done = 0;
      MPI_Status status;
      MPI_Test(&pending, &done, &status);
      if (!done) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        continue;
      }
      RankActivity a = currentActivity();
      long long reply[3] = {a.step, a.collectives, a.waitingFor};
      MPI_Send(reply, 3, MPI_LONG_LONG, status.MPI_SOURCE, kReplyTag, control);
      MPI_Irecv(&query, 1, MPI_INT, MPI_ANY_SOURCE, kQueryTag, control, &pending);
    }
    MPI_Cancel(&pending);
    MPI_Wait(&pending, MPI_STATUS_IGNORE);
  }

  /// After a clean run only: MPI_Finalize waits for every rank, so a failed
  /// run leaves without it and the launcher stops the others.
  void leave() {
    if (!joined)
      return;
    stopping = true;
    if (responder.joinable())
      responder.join();
    joined = false;
  }
};

Ranks &ranks() {
  static Ranks instance;
  return instance;
}

/// A launcher's environment: mpirun (Open MPI), PMIx (srun --mpi=pmix,
/// prterun) or PMI (srun --mpi=pmi2). A process started otherwise, even
/// inside a Slurm allocation, is a single rank and never starts MPI.
bool launchedAsRanks() {
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"})
    if (std::getenv(name))
      return true;
  return false;
}

MPI_Datatype mpiType(tgx::DType dtype) {
  switch (dtype) {
  case tgx::DType_F32: return MPI_FLOAT;
  case tgx::DType_F64: return MPI_DOUBLE;
  case tgx::DType_I32: return MPI_INT;
  case tgx::DType_I64: return MPI_LONG_LONG;
  default: return MPI_DATATYPE_NULL; // bf16/f16: no MPI type (NCCL has them)
  }
}

MPI_Op mpiOp(tgx::Reduction reduction) {
  switch (reduction) {
  case tgx::Reduction_Max: return MPI_MAX;
  case tgx::Reduction_Min: return MPI_MIN;
  default: return MPI_SUM; // Avg is a sum scaled when it completes
  }
}

std::string rankList(const std::vector<int> &list) {
  std::string text;
  for (std::size_t i = 0; i < list.size(); ++i)
    text += (i ? (i + 1 == list.size() ? " and " : ", ") : "") + std::to_string(list[i]);
  return text;
}

class MpiCommunicator final : public Communicator {
public:
  bool load(const tgx::Program &program, const std::string &sourceName, std::string &error) {
    this->program = &program;
    source = sourceName;
    const tgx::Mesh &mesh = *program.mesh();
    int rank = ranks().placement.rank;
    // One communicator per axis joins the ranks that differ from this one
    // only along that axis: those of its rank with that coordinate at 0.
    for (uint32_t axis = 0; axis < mesh.shape()->size(); ++axis) {
      Axis a;
      int64_t stride = meshAxisStride(mesh, axis);
      int64_t coordinate = meshCoordinate(mesh, rank, axis);
      int64_t color = rank - coordinate * stride;
      // The world ranks of this axis's group, in axis order.
      for (int64_t j = 0; j < mesh.shape()->Get(axis); ++j)
        a.members.push_back(int(color + j * stride));
      if (MPI_Comm_split(MPI_COMM_WORLD, int(color), int(coordinate), &a.comm) !=
          MPI_SUCCESS) {
        error = sourceName + ": cannot form the communicator of mesh axis '" +
                program.mesh()->axes()->Get(axis)->str() + "'";
        return false;
      }
      axes.push_back(std::move(a));
    }
    for (uint32_t i = 0; i < program.commands()->size(); ++i) {
      const tgx::Command &c = *program.commands()->Get(i);
      if (c.kind() == tgx::CommandKind_Collective &&
          mpiType(c.collective()->dtype()) == MPI_DATATYPE_NULL) {
        error = sourceName + ": commands[" + std::to_string(i) + "] is a collective on " +
                tgx::EnumNameDType(c.collective()->dtype()) +
                " values, which MPI cannot reduce; compile the model in f32";
        return false;
      }
    }
    // Every rank, on a communicator of its own: nothing else's collectives
    // can interleave with this object's.
    if (MPI_Comm_dup(MPI_COMM_WORLD, &world.comm) != MPI_SUCCESS) {
      error = sourceName + ": cannot form the communicator of all ranks";
      return false;
    }
    for (int r = 0; r < ranks().placement.size; ++r)
      world.members.push_back(r);
    pending.resize(program.commands()->size());
    return true;
  }

  ~MpiCommunicator() override {
    for (Axis &a : axes)
      MPI_Comm_free(&a.comm);
    if (world.comm != MPI_COMM_NULL)
      MPI_Comm_free(&world.comm);
  }

  bool start(uint32_t command, const void *sourceData, void *target,
             std::string &error) override {
    const tgx::Command &c = *program->commands()->Get(command);
    const tgx::Collective &k = *c.collective();
    const Axis &axis = axes[k.axis()];
    MPI_Datatype type = mpiType(k.dtype());
    int64_t element = int64_t(dtypeSize(k.dtype()));
    int64_t sourceCount = int64_t(c.operands()->Get(0)->size()) / element;
    int64_t targetCount = int64_t(c.operands()->Get(1)->size()) / element;
    if (std::max(sourceCount, targetCount) > INT32_MAX) {
      error = source + ": commands[" + std::to_string(command) + "] moves " +
              std::to_string(std::max(sourceCount, targetCount)) +
              " elements, more than one MPI call takes";
      return false;
    }
    Pending &p = pending[command];
    p = Pending{};
    p.command = command;
    p.target = target;
    p.count = targetCount;
    p.index = countCollectiveStarted();
    int rc = MPI_SUCCESS;
    switch (k.kind()) {
    case tgx::CollectiveKind_AllReduce:
      rc = MPI_Iallreduce(sourceData == target ? MPI_IN_PLACE : sourceData, target,
                          int(sourceCount), type, mpiOp(k.reduction()), axis.comm,
                          &p.request);
      break;
    case tgx::CollectiveKind_ReduceScatter:
      rc = MPI_Ireduce_scatter_block(sourceData, target, int(targetCount), type,
                                     mpiOp(k.reduction()), axis.comm, &p.request);
      break;
    case tgx::CollectiveKind_AllGather:
      rc = MPI_Iallgather(sourceData, int(sourceCount), type, target, int(sourceCount), type,
                          axis.comm, &p.request);
      break;
    }
    if (rc != MPI_SUCCESS) {
      error = source + ": " + describe(command) + " could not start (MPI error " +
              std::to_string(rc) + ")";
      return false;
    }
    p.scale = k.reduction() == tgx::Reduction_Avg && k.kind() != tgx::CollectiveKind_AllGather
                  ? 1.0 / double(axis.members.size())
                  : 1.0;
    inFlight.push_back(command);
    return true;
  }

  bool wait(uint32_t command, std::string &error) override {
    Pending &p = pending[command];
    if (p.request != MPI_REQUEST_NULL &&
        !await(p.request, axes[program->commands()->Get(command)->collective()->axis()],
               p.index, describe(command), error))
      return false;
    applyScale(p);
    inFlight.erase(std::remove(inFlight.begin(), inFlight.end(), command), inFlight.end());
    return true;
  }

  bool gatherToRankZero(uint32_t axisIndex, const void *data, uint64_t bytes, void *out,
                        const std::string &what, std::string &error) override {
    return gather(axisIndex, data, bytes, out, /*everyGroup=*/false, what, error);
  }

  bool gatherAlongAxis(uint32_t axisIndex, const void *data, uint64_t bytes, void *out,
                       const std::string &what, std::string &error) override {
    return gather(axisIndex, data, bytes, out, /*everyGroup=*/true, what, error);
  }

  bool exchange(const std::vector<uint64_t> &mine, std::vector<uint64_t> &all,
                const std::string &what, std::string &error) override {
    int64_t index = countCollectiveStarted();
    all.assign(mine.size() * world.members.size(), 0);
    std::string described = what + " (an exchange among all ranks)";
    MPI_Request request = MPI_REQUEST_NULL;
    if (MPI_Iallgather(mine.data(), int(mine.size()), MPI_UINT64_T, all.data(),
                       int(mine.size()), MPI_UINT64_T, world.comm, &request) != MPI_SUCCESS) {
      error = source + ": " + described + " could not start";
      return false;
    }
    // The ranks meet here after writing or reading their parts of a
    // checkpoint, which takes some longer than others.
    return await(request, world, index, described, error,
                 std::max(collectiveTimeout(), kStateExchangeSeconds));
  }

  void progress() override {
    for (uint32_t command : inFlight) {
      Pending &p = pending[command];
      int done = 0;
      if (p.request != MPI_REQUEST_NULL)
        MPI_Test(&p.request, &done, MPI_STATUS_IGNORE);
    }
  }

private:
  /// Gathers to the member with coordinate 0 on the axis, in every group of
  /// the axis or only in rank 0's (the others only count the collective).
  bool gather(uint32_t axisIndex, const void *data, uint64_t bytes, void *out,
              bool everyGroup, const std::string &what, std::string &error) {
    int64_t index = countCollectiveStarted();
    const Axis &axis = axes[axisIndex];
    // Each group's first member is its rank with coordinate 0 on this
    // axis: rank 0 only in rank 0's group.
    if (!everyGroup && axis.members[0] != 0)
      return true;
    const bool root = ranks().placement.rank == axis.members[0];
    const std::size_t members = axis.members.size();
    std::string described = what + " (a gather over mesh axis '" +
                            program->mesh()->axes()->Get(axisIndex)->str() + "' to rank " +
                            std::to_string(axis.members[0]) + ")";
    // In pieces: MPI counts are ints, and the group's root stages one piece
    // from every member before placing it.
    std::vector<uint8_t> staging(root ? members * std::min<uint64_t>(bytes, kGatherPiece) : 0);
    for (uint64_t done = 0; done < bytes; done += kGatherPiece) {
      int piece = int(std::min<uint64_t>(bytes - done, kGatherPiece));
      MPI_Request request = MPI_REQUEST_NULL;
      int rc = MPI_Igather(static_cast<const uint8_t *>(data) + done, piece, MPI_BYTE,
                           staging.data(), piece, MPI_BYTE, 0, axis.comm, &request);
      if (rc != MPI_SUCCESS) {
        error = source + ": " + described + " could not start (MPI error " +
                std::to_string(rc) + ")";
        return false;
      }
      if (!await(request, axis, index, described, error))
        return false;
      if (root)
        for (std::size_t j = 0; j < members; ++j)
          std::memcpy(static_cast<uint8_t *>(out) + j * bytes + done,
                      staging.data() + j * std::size_t(piece), std::size_t(piece));
    }
    return true;
  }

  struct Axis {
    MPI_Comm comm = MPI_COMM_NULL;
    std::vector<int> members; // world ranks, in axis order
  };
  struct Pending {
    MPI_Request request = MPI_REQUEST_NULL;
    uint32_t command = 0;
    int64_t index = 0; // collectives started by this rank, counting this one
    void *target = nullptr;
    int64_t count = 0;
    double scale = 1.0;
  };

  /// Waits for `request`, this rank's collective number `index` among
  /// `axis`'s ranks; past `timeout` seconds (default: the collective
  /// timeout) fails with a message saying where the others are.
  bool await(MPI_Request &request, const Axis &axis, int64_t index, const std::string &what,
             std::string &error, double timeout = collectiveTimeout()) {
    noteWaiting(index, what);
    Clock::time_point begin = Clock::now();
    for (int polls = 0;; ++polls) {
      int done = 0;
      MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      if (done)
        break;
      if (secondsSince(begin) > timeout) {
        error = timedOut(axis, index, what, timeout);
        return false;
      }
      // Spin briefly (collectives between ranks of one host finish in
      // microseconds), then yield the core to ranks still computing.
      if (polls > 64)
        std::this_thread::sleep_for(std::chrono::microseconds(polls > 1024 ? 1000 : 50));
    }
    noteWaitDone();
    return true;
  }

  void applyScale(Pending &p) {
    if (p.scale == 1.0)
      return;
    tgx::DType dtype = program->commands()->Get(p.command)->collective()->dtype();
    if (dtype == tgx::DType_F32)
      for (float *v = static_cast<float *>(p.target), *end = v + p.count; v != end; ++v)
        *v = float(*v * p.scale);
    else if (dtype == tgx::DType_F64)
      for (double *v = static_cast<double *>(p.target), *end = v + p.count; v != end; ++v)
        *v *= p.scale;
    p.scale = 1.0;
  }

  std::string describe(uint32_t command) const {
    const tgx::Command &c = *program->commands()->Get(command);
    std::string text = "collective '" + (c.label() ? c.label()->str() : std::string()) +
                       "' (commands[" + std::to_string(command) + "], " +
                       tgx::EnumNameCollectiveKind(c.collective()->kind()) + " over mesh axis '" +
                       program->mesh()->axes()->Get(c.collective()->axis())->str() + "')";
    return text;
  }

  /// Asks the other ranks of `axis` where they are, and says which did
  /// not arrive in this rank's collective `index`, described as `what`.
  std::string timedOut(const Axis &axis, int64_t index, const std::string &what,
                       double timeout) {
    int self = ranks().placement.rank;
    std::string text = what + " at step " + std::to_string(currentActivity().step) +
                       " (this rank's collective " + std::to_string(index) +
                       ") waited " + std::to_string(int(timeout)) + " s for the other ranks";
    const char *advice = ". --collective-timeout sets how long a collective may wait";
    if (!ranks().responder.joinable())
      return text + " (this MPI has no MPI_THREAD_MULTIPLE, so no rank can say where it "
                    "is)" + advice;
    std::vector<int> peers;
    for (int member : axis.members)
      if (member != self)
        peers.push_back(member);
    std::vector<std::array<long long, 3>> replies(peers.size());
    std::vector<MPI_Request> queries(peers.size()), answers(peers.size());
    int query = 1;
    for (std::size_t i = 0; i < peers.size(); ++i) {
      MPI_Isend(&query, 1, MPI_INT, peers[i], kQueryTag, ranks().control, &queries[i]);
      MPI_Irecv(replies[i].data(), 3, MPI_LONG_LONG, peers[i], kReplyTag, ranks().control,
                &answers[i]);
    }
    std::vector<bool> answered(peers.size(), false);
    Clock::time_point asked = Clock::now();
    while (secondsSince(asked) < kQuerySeconds &&
           std::count(answered.begin(), answered.end(), true) < long(peers.size())) {
      for (std::size_t i = 0; i < peers.size(); ++i)
        if (!answered[i]) {
          int done = 0;
          MPI_Test(&answers[i], &done, MPI_STATUS_IGNORE);
          answered[i] = done;
        }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::vector<int> silent, sameCollective;
    std::string elsewhere;
    for (std::size_t i = 0; i < peers.size(); ++i) {
      if (!answered[i]) {
        silent.push_back(peers[i]);
        continue;
      }
      const auto &r = replies[i];
      if (r[2] == index)
        sameCollective.push_back(peers[i]);
      else
        elsewhere += "; rank " + std::to_string(peers[i]) + " is at step " +
                     std::to_string(r[0]) +
                     (r[2] >= 0 ? ", waiting in its collective " + std::to_string(r[2])
                                : ", computing after its collective " + std::to_string(r[1]));
    }
    if (!silent.empty())
      text += "; rank" + std::string(silent.size() > 1 ? "s " : " ") + rankList(silent) +
              (silent.size() > 1 ? " do" : " does") +
              " not answer (stopped, hung or dead: check that process and its host)";
    if (!sameCollective.empty())
      text += "; rank" + std::string(sameCollective.size() > 1 ? "s " : " ") +
              rankList(sameCollective) + (sameCollective.size() > 1 ? " wait" : " waits") +
              " in the same collective";
    return text + elsewhere + advice;
  }

  const tgx::Program *program = nullptr;
  std::string source;
  std::vector<Axis> axes; // one per mesh axis
  Axis world;             // every rank
  std::vector<Pending> pending; // by command index
  std::vector<uint32_t> inFlight; // started, not yet waited for
};

} // namespace

bool joinRanks(RankPlacement &out, std::string &error) {
  Ranks &r = ranks();
  if (!r.joined) {
    if (!launchedAsRanks()) {
      out = RankPlacement{};
      return true;
    }
    int initialized = 0;
    MPI_Initialized(&initialized);
    int provided = MPI_THREAD_SINGLE;
    if (!initialized &&
        MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
      error = "cannot join the run's ranks: MPI_Init_thread failed";
      return false;
    }
    if (initialized)
      MPI_Query_thread(&provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &r.placement.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &r.placement.size);
    r.joined = true;
    if (r.placement.size > 1) {
      MPI_Comm_dup(MPI_COMM_WORLD, &r.control);
      // The watchdog's questions need a thread that answers them while the
      // main thread computes; without MPI_THREAD_MULTIPLE a timeout can
      // still fail the run, only without naming the missing ranks.
      if (provided == MPI_THREAD_MULTIPLE)
        r.responder = std::thread([&r] { r.respond(); });
      installStopMessage(r.placement.rank);
    }
  }
  out = r.placement;
  return true;
}

void finishRanks(bool clean) {
  Ranks &r = ranks();
  if (!r.joined)
    return;
  r.leave();
  if (clean)
    MPI_Finalize();
}

std::unique_ptr<Communicator> createMpiCommunicator(const tgx::Program &program,
                                                    const std::string &sourceName,
                                                    std::string &error) {
  auto communicator = std::make_unique<MpiCommunicator>();
  if (!communicator->load(program, sourceName, error))
    return nullptr;
  return communicator;
}

} // namespace tg::runtime
