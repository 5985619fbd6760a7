// The artifact's functions beside the training step: evaluation (the loss
// without an update) and logits (for generation). Each is a whole program
// (Program.functions) run on its own backend, created at first use, with a
// copy of the training step's parameters taken whenever they changed.
#include "Session.h"

#include "Status.h"

#include <cstring>

namespace tg::runtime {
namespace {

/// The function `name`, ready to run on the current parameters.
tg_session::Function *prepare(tg_session &session, const char *api, const char *name,
                              std::string &error) {
  if (!session.initialized) {
    error = std::string(api) + ": the parameters of " + session.source +
            " are not initialised; call tg_session_init_random, "
            "tg_session_init_from_safetensors or tg_session_load_checkpoint first";
    return nullptr;
  }
  tg_session::Function &function = session.functions[name];
  if (!function.backend) {
    function.program = findFunction(*session.program, name);
    if (!function.program) {
      error = std::string(api) + ": " + session.source + " has no '" + name +
              "' function; " +
              (std::string_view(name) == "logits"
                   ? kNoLogitsHint
                   : "re-compile the model from its config with this tgc");
      return nullptr;
    }
    function.backend = createBackend(*function.program,
                                     session.source + " (" + name + ")",
                                     session.placement, error);
    if (!function.backend ||
        !writeMeshCoordinate(*function.program, *function.backend,
                             session.placement.rank, error))
      return nullptr;
    function.copiedVersion = 0;
  }
  if (function.copiedVersion != session.stateVersion) {
    // Verified: the function has the training step's parameters, with
    // slots of the same sizes.
    std::vector<uint8_t> bytes;
    for (const tgx::Parameter *p : *session.program->parameters()) {
      const tgx::Slot &from = slotAt(session, p->slot());
      const tgx::Slot &to = *findSlot(*function.program, from.name()->string_view());
      if (!readSlot(session, from, bytes, error) ||
          !function.backend->write(to.range()->offset(), bytes.data(), bytes.size(), error))
        return nullptr;
    }
    function.copiedVersion = session.stateVersion;
  }
  return &function;
}

bool evaluate(tg_session &session, const int32_t *tokens, const int32_t *targets,
              double *loss, std::string &error) {
  const char *api = "tg_session_eval";
  // Collective in a multi-rank program (the function's backend is created
  // on first use): every rank gets here before any can refuse its rows.
  tg_session::Function *function = prepare(session, api, "eval_step", error);
  if (!function || !checkTokens(session, tokens, session.rows, api, "tokens", error) ||
      !checkTokens(session, targets, session.rows, api, "targets", error))
    return false;
  const tgx::Program &program = *function->program;
  const tgx::Slot &tokenSlot = *findSlot(program, "tokens");
  const tgx::Slot &targetSlot = *findSlot(program, "targets");
  const tgx::Slot &lossSlot = *findSlot(program, "loss");
  Backend &backend = *function->backend;
  uint8_t value[8];
  if (!backend.write(tokenSlot.range()->offset(), tokens, tokenSlot.range()->size(), error) ||
      !backend.write(targetSlot.range()->offset(), targets, targetSlot.range()->size(),
                     error) ||
      !backend.run(error) ||
      !backend.read(lossSlot.range()->offset(), value, lossSlot.range()->size(), error))
    return false;
  *loss = elementAt(lossSlot.dtype(), value, 0);
  return true;
}

bool logitsShape(const tg_session &session, tg_logits_shape &out, std::string &error) {
  const tgx::Program *function = findFunction(*session.program, "logits");
  if (!function) {
    error = "tg_session_logits_shape: " + session.source + " has no 'logits' function; " +
            kNoLogitsHint;
    return false;
  }
  // Verified: [rows, seq_len, vocab_size].
  const auto &shape = *findSlot(*function, "logits")->shape();
  out.rows = shape[0];
  out.seq_len = shape[1];
  out.vocab_size = shape[2];
  return true;
}

bool computeLogits(tg_session &session, const int32_t *tokens, float *logits,
                   std::string &error) {
  const char *api = "tg_session_logits";
  tg_logits_shape shape;
  if (!logitsShape(session, shape, error) ||
      !checkTokens(session, tokens, shape.rows, api, "tokens", error))
    return false;
  tg_session::Function *function = prepare(session, api, "logits", error);
  if (!function)
    return false;
  const tgx::Program &program = *function->program;
  const tgx::Slot &tokenSlot = *findSlot(program, "tokens");
  const tgx::Slot &logitsSlot = *findSlot(program, "logits");
  Backend &backend = *function->backend;
  if (!backend.write(tokenSlot.range()->offset(), tokens, tokenSlot.range()->size(), error) ||
      !backend.run(error))
    return false;
  if (logitsSlot.dtype() == tgx::DType_F32)
    return backend.read(logitsSlot.range()->offset(), logits, logitsSlot.range()->size(),
                        error);
  std::vector<double> wide(logitsSlot.range()->size() / sizeof(double));
  if (!backend.read(logitsSlot.range()->offset(), wide.data(), logitsSlot.range()->size(),
                    error))
    return false;
  for (std::size_t i = 0; i < wide.size(); ++i)
    logits[i] = float(wide[i]);
  return true;
}

} // namespace
} // namespace tg::runtime

using namespace tg::runtime;

extern "C" {

tg_status tg_session_eval(tg_session *session, const int32_t *tokens, const int32_t *targets,
                          double *loss) {
  return guarded("tg_session_eval", [&](std::string &error) {
    return requireArgument(session, "tg_session_eval", "session", error) &&
           requireArgument(tokens, "tg_session_eval", "tokens", error) &&
           requireArgument(targets, "tg_session_eval", "targets", error) &&
           requireArgument(loss, "tg_session_eval", "loss", error) &&
           evaluate(*session, tokens, targets, loss, error);
  });
}

tg_status tg_session_logits_shape(const tg_session *session, tg_logits_shape *out) {
  return guarded("tg_session_logits_shape", [&](std::string &error) {
    return requireArgument(session, "tg_session_logits_shape", "session", error) &&
           requireArgument(out, "tg_session_logits_shape", "out", error) &&
           logitsShape(*session, *out, error);
  });
}

tg_status tg_session_logits(tg_session *session, const int32_t *tokens, float *logits) {
  return guarded("tg_session_logits", [&](std::string &error) {
    return requireArgument(session, "tg_session_logits", "session", error) &&
           requireArgument(tokens, "tg_session_logits", "tokens", error) &&
           requireArgument(logits, "tg_session_logits", "logits", error) &&
           computeLogits(*session, tokens, logits, error);
  });
}
}
