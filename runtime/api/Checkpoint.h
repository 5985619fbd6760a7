// What the two forms of a checkpoint share: one safetensors file
// (Checkpoint.cpp, a single rank's), or a directory in which every rank of a
// multi-rank run wrote its pieces, with an index (ShardedCheckpoint.cpp).
#ifndef TG_RUNTIME_API_CHECKPOINT_H
#define TG_RUNTIME_API_CHECKPOINT_H

#include "Session.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace tg::runtime {

/// The largest step a checkpoint holds (the step slot is an int32) and the
/// largest data position (2^62, far from overflow however many steps
/// follow): checked on save and load.
constexpr int64_t kMaxCheckpointStep = std::numeric_limits<int32_t>::max();
constexpr int64_t kMaxDataPosition = int64_t(1) << 62;

/// Metadata of a checkpoint file (and of each rank's file of a sharded one):
/// the steps taken and the state layout's fingerprint, besides its checksum
/// (kCheckpointChecksumKey).
inline constexpr const char *kCheckpointStepKey = "tg.step";
inline constexpr const char *kCheckpointProgramKey = "tg.program";

/// A tensor of the training state: a parameter or one of its moments.
struct StateTensor {
  const tgx::Parameter *parameter;
  const tgx::Slot *slot;
};

/// The training state, in program order: each parameter, then its moments.
std::vector<StateTensor> stateTensors(const tg_session &session);

/// The state layout's fingerprint (16 hex digits over the slots' names,
/// dtypes and full shapes), not the activations: a checkpoint stays loadable
/// by the same model compiled with another batch size, schedule or mesh.
std::string stateFingerprint(const tg_session &session);

/// Fails, naming `path` and the tensor, with `advice` after the value, when
/// `data` (`size` bytes of `slot`'s dtype) holds a NaN or an infinity.
bool checkFinite(const std::string &path, const tgx::Slot &slot, const uint8_t *data,
                 std::size_t size, const std::string &advice, std::string &error);

/// The problem of a checkpoint whose fingerprint is not `session`'s.
std::string otherProgramProblem(const tg_session &session);

/// After a load: `steps` taken, the data position for the caller, and the
/// state usable again.
void restoreProgress(tg_session &session, int64_t steps, int64_t position,
                     int64_t *dataPosition);

/// The advice of a load that found non-finite state.
inline constexpr const char *kWrittenAfterDivergence =
    "; the checkpoint was written after training diverged, use an older one";
/// The advice of a save that found non-finite state.
std::string divergedAdvice(const tg_session &session);

/// Every rank says whether its part went well, with one more word (a
/// checksum, a flag); `words` gets each rank's. Unless every rank
/// succeeded, fails on every rank: with this rank's `problem`, or naming
/// the ranks that failed (their own messages say why) and `consequence`.
/// For a multi-rank session (one with a state communicator).
bool everyRankSucceeded(const tg_session &session, bool ok, uint64_t word,
                        const std::string &problem, const std::string &what,
                        const std::string &consequence, std::vector<uint64_t> &words,
                        std::string &error);

/// The directory form, for a multi-rank program: a collective, every rank
/// writes its pieces, rank 0 the index. `dir` must not be a file.
bool saveShardedCheckpoint(const tg_session &session, const std::string &dir,
                           int64_t dataPosition, std::string &error);
/// Loads a directory written by saveShardedCheckpoint on any mesh (each
/// rank by itself, no collective).
bool loadShardedCheckpoint(tg_session &session, const std::string &dir,
                           int64_t *dataPosition, std::string &error);

} // namespace tg::runtime

#endif
