// What this rank is doing, kept where a watchdog reply, a timeout message
// and a signal handler can all read it.
#ifndef TG_RUNTIME_COMM_RUNSTATE_H
#define TG_RUNTIME_COMM_RUNSTATE_H

#include <atomic>
#include <cstdint>
#include <string>

namespace tg::runtime {

/// Where a rank is in its run, as other ranks are told when they ask.
struct RankActivity {
  int64_t step = 0;         // 1-based step being run, 0 before the first
  int64_t collectives = 0;  // collectives this rank has started in all
  int64_t waitingFor = -1;  // the collective (by count) it waits in, or -1
};

/// Seconds a collective may wait (setCollectiveTimeout).
double collectiveTimeout();

RankActivity currentActivity();

/// The rank starts a collective: its number, counting from 1 over the run.
int64_t countCollectiveStarted();
/// The rank waits in its collective number `index`, described as `what`;
/// it is done waiting.
void noteWaiting(int64_t index, const std::string &what);
void noteWaitDone();

/// On a launcher's SIGTERM (another rank failed, so mpirun or srun stops
/// the rest), print what this rank was doing and exit 143. Installed only
/// for multi-rank runs, and only where the process keeps SIGTERM's default
/// action (an embedding application's own handler is left alone).
void installStopMessage(int rank);

} // namespace tg::runtime

#endif
