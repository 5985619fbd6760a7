#include "RunState.h"

#include "tg/runtime/Collectives.h"

#include <csignal>
#include <cstdio>
#include <cstring>

#include <unistd.h>

namespace tg::runtime {
namespace {

std::atomic<double> timeoutSeconds{60.0};
std::atomic<int64_t> stepNow{0}, collectivesStarted{0}, waitingIn{-1};

// The line the SIGTERM handler writes. A handler may only write() bytes that
// are already formatted, and must never see a half-written line: the main
// thread formats into the buffer the handler is not pointed at, then flips
// the index.
char stopLines[2][512];
std::atomic<int> stopLine{0};
int rankForMessages = 0;
std::string waitingLabel;

void formatStopLine() {
  int next = 1 - stopLine.load(std::memory_order_relaxed);
  if (waitingIn.load() >= 0)
    std::snprintf(stopLines[next], sizeof(stopLines[next]),
                  "tgrun: rank %d: stopped by the launcher at step %lld while waiting in "
                  "%s, because another rank failed (the launcher's message names it)\n",
                  rankForMessages, (long long)stepNow.load(), waitingLabel.c_str());
  else
    std::snprintf(stopLines[next], sizeof(stopLines[next]),
                  "tgrun: rank %d: stopped by the launcher at step %lld, because another "
                  "rank failed (the launcher's message names it)\n",
                  rankForMessages, (long long)stepNow.load());
  stopLine.store(next);
}

void onStop(int) {
  const char *line = stopLines[stopLine.load()];
  ssize_t ignored = ::write(STDERR_FILENO, line, std::strlen(line));
  (void)ignored;
  _exit(143);
}

} // namespace

void setCollectiveTimeout(double seconds) { timeoutSeconds = seconds; }
double collectiveTimeout() { return timeoutSeconds; }

void setCurrentStep(int64_t step) {
  stepNow = step;
  formatStopLine();
}

RankActivity currentActivity() {
  return {stepNow.load(), collectivesStarted.load(), waitingIn.load()};
}

int64_t countCollectiveStarted() { return ++collectivesStarted; }

void noteWaiting(int64_t index, const std::string &label) {
  waitingLabel = label;
  waitingIn = index;
  formatStopLine();
}

void noteWaitDone() {
  waitingIn = -1;
  formatStopLine();
}

void installStopMessage(int rank) {
  rankForMessages = rank;
  formatStopLine();
  struct sigaction current;
  if (sigaction(SIGTERM, nullptr, &current) != 0 || current.sa_handler != SIG_DFL)
    return;
  struct sigaction action = {};
  action.sa_handler = onStop;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
}

} // namespace tg::runtime
