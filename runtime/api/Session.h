// The session object behind the C API, and the slot I/O that the
// initialisation, weights and checkpoint files share.
#ifndef TG_RUNTIME_API_SESSION_H
#define TG_RUNTIME_API_SESSION_H

#include "tg/runtime/Backend.h"
#include "tg/runtime/ParameterShard.h"
#include "tg/runtime/Safetensors.h"
#include "tg/runtime/tg_runtime.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

struct tg_session_s {
  std::string source;         // the artifact's name in messages
  std::vector<uint8_t> bytes; // the verified artifact; `program` points into it
  const tg::tgx::Program *program = nullptr;
  std::unique_ptr<tg::runtime::Backend> backend;
  tg::runtime::RankPlacement placement;
  // Saving state in a multi-rank program: gathers split parameters to rank
  // 0 for the weights it writes (ShardedState.cpp), and lets the ranks
  // agree on a checkpoint each wrote part of (ShardedCheckpoint.cpp). The
  // session's own communicator: it moves host memory whatever the
  // backend's device. Null on a single rank.
  std::unique_ptr<tg::runtime::Communicator> stateComm;
  int64_t firstRow = 0, rows = 0; // this rank's rows of the batch
  // The interface slots every verified program has.
  const tg::tgx::Slot *stepSlot = nullptr, *tokens = nullptr, *targets = nullptr,
                      *loss = nullptr, *gradNorm = nullptr, *lr = nullptr;
  int64_t stepsDone = 0;
  // Set by init_random, init_from_safetensors and load_checkpoint; a step
  // on uninitialised parameters is refused.
  bool initialized = false;
  // The step (1-based) after which the state went non-finite, 0 if it has
  // not: further steps and checkpoints are refused until the state is
  // re-initialised or a checkpoint is loaded.
  int64_t divergedAt = 0;
  // Profiling (Profile.cpp): whether steps time their commands, and one
  // record per command, whose times are those of the last step that ran its
  // commands if `profileValid` (that step was profiled).
  bool profiling = false;
  bool profileValid = false;
  std::vector<tg_command_profile> profile;
  // Bumped by every write to the training step's arena and every run of
  // it: the functions below copy the parameters again when it moved on.
  uint64_t stateVersion = 1;
  // Whether the parameters' compute-precision copies (Parameter.compute_slot)
  // hold the parameters rounded: a step keeps them so, a write of any slot
  // but the step's inputs clears it, and the next step writes them first
  // (ComputeCopies.cpp).
  bool computeCopiesCurrent = false;
  // The artifact's functions beside the training step (Program.functions:
  // "eval_step", "logits"), by name; each runs on its own backend, made at
  // first use, with a copy of the parameters (Functions.cpp).
  struct Function {
    const tg::tgx::Program *program = nullptr;
    std::unique_ptr<tg::runtime::Backend> backend;
    uint64_t copiedVersion = 0; // the stateVersion its parameters are from
  };
  std::map<std::string, Function> functions;
};

namespace tg::runtime {

const tgx::Slot &slotAt(const tg_session &session, uint32_t index);
safetensors::DType toSafetensors(tgx::DType dtype);

/// The bytes of `slot`.
bool readSlot(const tg_session &session, const tgx::Slot &slot,
              std::vector<uint8_t> &out, std::string &error);
/// `slot` as a safetensors tensor called `name`.
bool slotTensor(const tg_session &session, const tgx::Slot &slot,
                std::string name, safetensors::Tensor &out, std::string &error);
/// Overwrites `slot` with `size` bytes (at most its range) from `data`,
/// starting `byteOffset` bytes into it.
bool writeSlot(tg_session &session, const tgx::Slot &slot, const void *data,
               uint64_t size, uint64_t byteOffset, std::string &error);

/// Sharded parameters (ShardedState.cpp). Files hold full tensors, the
/// Hugging Face shapes without padding, whatever the mesh.
///
/// This rank's part of parameter `p` and of its AdamW moments: its shard,
/// or the whole tensor when `p` is replicated.
ShardLayout parameterLayout(const tg_session &session, const tgx::Parameter &p);
/// This rank's chunk of `p`'s moments, split by `zero` (ZeRO-1).
OptimizerChunk chunkOf(const tg_session &session, const tgx::Parameter &p,
                       const tgx::OptimizerShard &zero);
/// Whether this rank writes the run's weights: rank 0.
bool writesFiles(const tg_session &session);
/// The full tensor of `slot` (`p`'s value or one of its moments) as
/// `name`, on rank 0; `out` is left empty on the other ranks. A replicated
/// tensor is rank 0's copy; a sharded one is gathered along its mesh axis
/// and assembled. A collective: every rank calls it for the same tensors in
/// the same order.
bool gatherFullTensor(const tg_session &session, const tgx::Parameter &p,
                      const tgx::Slot &slot, std::string name, safetensors::Tensor &out,
                      std::string &error);
/// Writes this rank's part of `full`, the full tensor of `slot` (`p`'s
/// value or one of its moments, in the slot's dtype), into `slot`.
bool writeFullTensor(tg_session &session, const tgx::Parameter &p, const tgx::Slot &slot,
                     const uint8_t *full, std::string &error);

/// The index of the first NaN or infinite element of `size` bytes of
/// `dtype` values, or -1 if all are finite (and for integer dtypes).
int64_t findNonFinite(tgx::DType dtype, const uint8_t *data, std::size_t size);
/// The element at `index` as a double, for messages.
double elementAt(tgx::DType dtype, const uint8_t *data, int64_t index);
/// "nan", "inf", "-inf" or the value.
std::string valueText(double value);

/// The first state slot (parameters in program order, then each one's AdamW
/// moments, then the compute copies) holding a non-finite value: its name,
/// element index and value.
/// Returns false when every state slot is finite (or on a read error, which
/// sets `error`).
bool findNonFiniteState(const tg_session &session, std::string &name, int64_t &index,
                        double &value, std::string &error);

/// After new parameters: zero AdamW moments, no steps taken.
bool resetTraining(tg_session &session, std::string &error);

/// Writes the rank's index along each mesh axis into `program`'s
/// mesh_coordinate slot, if it has one, on `backend`.
bool writeMeshCoordinate(const tgx::Program &program, Backend &backend, int rank,
                         std::string &error);

/// Kernels index embeddings with the tokens, so an out-of-range one must
/// never reach them: `rows` x the program's seq_len values of `values` must
/// lie in the vocabulary. `function` and `what` name them in the message.
bool checkTokens(const tg_session &session, const int32_t *values, int64_t rows,
                 const char *function, const char *what, std::string &error);

/// Writes each parameter's compute-precision copy from the parameter (its
/// value rounded to nearest, ties to even), unless they are current.
bool updateComputeCopies(tg_session &session, std::string &error);

/// Runs every command of the program: timed into `session.profile` when
/// profiling is on, untimed otherwise.
bool runCommands(tg_session &session, std::string &error);

/// Fails with a message naming `function` when `pointer` is null.
bool requireArgument(const void *pointer, const char *function,
                     const char *argument, std::string &error);

} // namespace tg::runtime

#endif
