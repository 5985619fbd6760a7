// Profiling: per-command times of a step, with what each command moves and
// computes so that a client can turn times into achieved bandwidth and FLOP
// rates.
#include "Session.h"

#include "Status.h"

#include <algorithm>

namespace tg::runtime {
namespace {

/// The (query, key) pairs of one head that see each other.
double attentionVisiblePairs(const tgx::Attention &a) {
  double pairs = 0;
  for (int64_t t = 0; t < int64_t(a.query_len()); ++t) {
    int64_t end = a.causal() ? std::min<int64_t>(t + 1, a.key_len()) : a.key_len();
    int64_t first = a.window() > 0 ? std::max<int64_t>(0, t - a.window() + 1) : 0;
    pairs += double(std::max<int64_t>(0, end - first));
  }
  return pairs;
}

/// The model's FLOPs of the command, as FlashAttention's figures count them:
/// 4 per visible pair and head-dim element forward (q.k and p v), 2.5 times
/// that for the gradient; the kernels' recomputation is not counted.
double attentionModelFlops(const tgx::Attention &a) {
  double forward = 4.0 * a.batch() * a.query_heads() * a.head_dim() * attentionVisiblePairs(a);
  return a.pass() == tgx::AttentionPass_Gradient ? 2.5 * forward : forward;
}

tg_command_kind toCommandKind(tgx::CommandKind kind) {
  switch (kind) {
  case tgx::CommandKind_Kernel: return TG_COMMAND_KERNEL;
  case tgx::CommandKind_Gemm: return TG_COMMAND_GEMM;
  case tgx::CommandKind_Copy: return TG_COMMAND_COPY;
  case tgx::CommandKind_Collective: return TG_COMMAND_COLLECTIVE;
  case tgx::CommandKind_Attention: return TG_COMMAND_ATTENTION;
  }
  return TG_COMMAND_KERNEL; // unreachable: verified programs
}

/// The records of `program`'s commands without times: what does not change
/// from step to step.
std::vector<tg_command_profile> describeCommands(const tgx::Program &program) {
  std::vector<tg_command_profile> records;
  records.reserve(program.commands()->size());
  for (const tgx::Command *c : *program.commands()) {
    tg_command_profile r{};
    // FlatBuffers strings are NUL-terminated inside the session's copy of
    // the artifact, so the label needs no copy of its own.
    r.label = c->label() ? c->label()->c_str() : "";
    r.kind = toCommandKind(c->kind());
    r.stream = c->stream();
    for (const tgx::BufferRange *operand : *c->operands())
      r.bytes += operand->size();
    if (c->kind() == tgx::CommandKind_Gemm) {
      const tgx::Gemm &g = *c->gemm(); // the verifier requires it
      r.flops = 2.0 * double(g.m()) * double(g.n()) * double(g.k()) * double(g.batch());
    } else if (c->kind() == tgx::CommandKind_Attention) {
      r.flops = attentionModelFlops(*c->attention());
    }
    records.push_back(r);
  }
  return records;
}

} // namespace

bool runCommands(tg_session &session, std::string &error) {
  ++session.stateVersion;
  session.profileValid = false;
  if (!session.profiling)
    return session.backend->run(error);
  std::vector<double> start, seconds;
  if (!session.backend->runProfiled(start, seconds, error))
    return false;
  std::size_t count = session.profile.size();
  if (start.size() != count || seconds.size() != count) {
    error = session.source + ": the backend timed " + std::to_string(seconds.size()) +
            " commands of a program of " + std::to_string(count);
    return false;
  }
  for (std::size_t i = 0; i < count; ++i) {
    session.profile[i].start_seconds = start[i];
    session.profile[i].seconds = seconds[i];
  }
  session.profileValid = true;
  return true;
}

} // namespace tg::runtime

using namespace tg::runtime;

extern "C" {

tg_status tg_session_set_profiling(tg_session *session, int enabled) {
  return guarded("tg_session_set_profiling", [&](std::string &error) {
    if (!requireArgument(session, "tg_session_set_profiling", "session", error))
      return false;
    session->profiling = enabled != 0;
    session->profileValid = false;
    if (session->profiling)
      session->profile = describeCommands(*session->program);
    return true;
  });
}

tg_status tg_session_profile(const tg_session *session, const tg_command_profile **records,
                             size_t *count) {
  return guarded("tg_session_profile", [&](std::string &error) {
    if (!requireArgument(session, "tg_session_profile", "session", error) ||
        !requireArgument(records, "tg_session_profile", "records", error) ||
        !requireArgument(count, "tg_session_profile", "count", error))
      return false;
    *records = nullptr;
    *count = 0;
    if (!session->profileValid) {
      error = "tg_session_profile: " + session->source +
              (session->profiling
                   ? ": no step has run since profiling was turned on; call tg_session_step first"
                   : ": profiling is off; call tg_session_set_profiling(session, 1) before "
                     "tg_session_step");
      return false;
    }
    *records = session->profile.data();
    *count = session->profile.size();
    return true;
  });
}

}
