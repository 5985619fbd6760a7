// Sessions: loading, information, and the training step.
#include "Session.h"

#include "Status.h"
#include "tg/runtime/RegularFile.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tg::runtime {

const tgx::Slot &slotAt(const tg_session &session, uint32_t index) {
  return *session.program->slots()->Get(index);
}

safetensors::DType toSafetensors(tgx::DType dtype) {
  switch (dtype) {
  case tgx::DType_F32: return safetensors::DType::F32;
  case tgx::DType_F64: return safetensors::DType::F64;
  case tgx::DType_BF16: return safetensors::DType::BF16;
  case tgx::DType_F16: return safetensors::DType::F16;
  case tgx::DType_I32: return safetensors::DType::I32;
  case tgx::DType_I64: return safetensors::DType::I64;
  }
  return safetensors::DType::F32; // unreachable: verified programs
}

bool readSlot(const tg_session &session, const tgx::Slot &slot,
              std::vector<uint8_t> &out, std::string &error) {
  out.resize(slot.range()->size());
  return session.backend->read(slot.range()->offset(), out.data(), out.size(), error);
}

bool slotTensor(const tg_session &session, const tgx::Slot &slot,
                std::string name, safetensors::Tensor &out, std::string &error) {
  out.name = std::move(name);
  out.dtype = toSafetensors(slot.dtype());
  out.shape.assign(slot.shape()->begin(), slot.shape()->end());
  return readSlot(session, slot, out.data, error);
}

bool writeSlot(tg_session &session, const tgx::Slot &slot, const void *data,
               uint64_t size, uint64_t byteOffset, std::string &error) {
  ++session.stateVersion;
  if (&slot != session.stepSlot && &slot != session.tokens && &slot != session.targets)
    session.computeCopiesCurrent = false;
  return session.backend->write(slot.range()->offset() + byteOffset, data, size, error);
}

int64_t findNonFinite(tgx::DType dtype, const uint8_t *data, std::size_t size) {
  switch (dtype) {
  case tgx::DType_F32:
    for (std::size_t i = 0; i < size / 4; ++i) {
      float v;
      std::memcpy(&v, data + 4 * i, 4);
      if (!std::isfinite(v))
        return int64_t(i);
    }
    return -1;
  case tgx::DType_F64:
    for (std::size_t i = 0; i < size / 8; ++i) {
      double v;
      std::memcpy(&v, data + 8 * i, 8);
      if (!std::isfinite(v))
        return int64_t(i);
    }
    return -1;
  case tgx::DType_F16:
  case tgx::DType_BF16: {
    // All-ones exponent: 5 bits for F16, 8 for BF16.
    uint16_t mask = dtype == tgx::DType_F16 ? 0x7c00 : 0x7f80;
    for (std::size_t i = 0; i < size / 2; ++i) {
      uint16_t bits = uint16_t(data[2 * i] | data[2 * i + 1] << 8);
      if ((bits & mask) == mask)
        return int64_t(i);
    }
    return -1;
  }
  default:
    return -1;
  }
}

double elementAt(tgx::DType dtype, const uint8_t *data, int64_t index) {
  safetensors::Tensor t{"", toSafetensors(dtype), {1}, {}};
  std::size_t size = dtypeSize(dtype);
  t.data.assign(data + index * size, data + (index + 1) * size);
  return safetensors::toDoubles(t)[0];
}

std::string valueText(double value) {
  if (std::isnan(value))
    return "nan";
  if (std::isinf(value))
    return value > 0 ? "inf" : "-inf";
  char text[32];
  std::snprintf(text, sizeof(text), "%.9g", value);
  return text;
}

bool findNonFiniteState(const tg_session &session, std::string &name, int64_t &index,
                        double &value, std::string &error) {
  std::vector<uint32_t> order;
  for (const tgx::Parameter *p : *session.program->parameters())
    order.push_back(p->slot());
  for (const tgx::Parameter *p : *session.program->parameters()) {
    order.push_back(p->adam_m_slot());
    order.push_back(p->adam_v_slot());
  }
  // A finite f32 parameter may round to an infinite f16 copy.
  for (const tgx::Parameter *p : *session.program->parameters())
    if (p->compute_slot() >= 0)
      order.push_back(uint32_t(p->compute_slot()));
  std::vector<uint8_t> bytes;
  for (uint32_t i : order) {
    const tgx::Slot &slot = slotAt(session, i);
    if (!readSlot(session, slot, bytes, error))
      return false;
    index = findNonFinite(slot.dtype(), bytes.data(), bytes.size());
    if (index >= 0) {
      name = slot.name()->str();
      value = elementAt(slot.dtype(), bytes.data(), index);
      return true;
    }
  }
  return false;
}

bool resetTraining(tg_session &session, std::string &error) {
  for (const tgx::Parameter *p : *session.program->parameters())
    for (uint32_t index : {p->adam_m_slot(), p->adam_v_slot()}) {
      const tgx::Slot &slot = slotAt(session, index);
      std::vector<uint8_t> zeros(slot.range()->size(), 0);
      if (!writeSlot(session, slot, zeros.data(), zeros.size(), 0, error))
        return false;
    }
  session.stepsDone = 0;
  session.initialized = true;
  session.divergedAt = 0;
  return true;
}

bool writeMeshCoordinate(const tgx::Program &program, Backend &backend, int rank,
                         std::string &error) {
  // Commands that depend on the rank read its coordinates; nothing else
  // writes this slot, so it stays filled for the backend's life.
  const tgx::Slot *slot = findSlot(program, kMeshCoordinateSlot);
  if (!slot)
    return true;
  const tgx::Mesh &mesh = *program.mesh();
  std::vector<int64_t> coordinate;
  for (uint32_t axis = 0; axis < mesh.shape()->size(); ++axis)
    coordinate.push_back(meshCoordinate(mesh, rank, axis));
  return backend.write(slot->range()->offset(), coordinate.data(),
                       coordinate.size() * sizeof(int64_t), error);
}

bool checkTokens(const tg_session &session, const int32_t *values, int64_t rows,
                 const char *function, const char *what, std::string &error) {
  int64_t vocab = session.program->train()->vocab_size();
  int64_t count = rows * session.program->train()->seq_len();
  for (int64_t i = 0; i < count; ++i)
    if (values[i] < 0 || values[i] >= vocab) {
      error = std::string(function) + ": " + what + "[" + std::to_string(i) + "] is " +
              std::to_string(values[i]) + ", outside the vocabulary [0, " +
              std::to_string(vocab) + ") of " + session.source;
      return false;
    }
  return true;
}

bool requireArgument(const void *pointer, const char *function,
                     const char *argument, std::string &error) {
  if (!pointer)
    error = std::string(function) + ": argument '" + argument + "' is NULL";
  return pointer != nullptr;
}

namespace {

bool createSession(std::vector<uint8_t> bytes, const std::string &source,
                   tg_session **out, std::string &error) {
  if (!verifyArtifact(bytes.data(), bytes.size(), source, error))
    return false;
  auto session = std::make_unique<tg_session>();
  session->source = source;
  session->bytes = std::move(bytes);
  session->program = tgx::GetProgram(session->bytes.data());
  if (!joinRanks(session->placement, error))
    return false;
  session->backend = createBackend(*session->program, source, session->placement, error);
  if (!session->backend)
    return false;
  const tgx::Program &program = *session->program;
  session->stepSlot = findSlot(program, "step");
  session->tokens = findSlot(program, "tokens");
  session->targets = findSlot(program, "targets");
  session->loss = findSlot(program, "loss");
  session->gradNorm = findSlot(program, "grad_norm");
  session->lr = findSlot(program, "lr");
  // Verified: the tokens slot holds one data rank's rows.
  session->rows = session->tokens->shape()->Get(0);
  const tgx::Mesh &mesh = *program.mesh();
  if (int64_t data = findMeshAxis(mesh, kDataAxis); data >= 0)
    session->firstRow =
        meshCoordinate(mesh, session->placement.rank, uint32_t(data)) * session->rows;
  if (!writeMeshCoordinate(program, *session->backend, session->placement.rank, error))
    return false;
  if (session->placement.size > 1) {
    session->stateComm = createMpiCommunicator(program, source, error);
    if (!session->stateComm)
      return false;
  }
  *out = session.release();
  return true;
}

bool readArtifactFile(const char *path, std::vector<uint8_t> &bytes, std::string &error) {
  std::string problem;
  bool opened;
  if (readRegularFile(path, bytes, problem, opened))
    return true;
  error = std::string(path) + ": cannot read the artifact (" + problem + "); check the path";
  return false;
}

bool readScalar(const tg_session &session, const tgx::Slot &slot, double &out,
                std::string &error) {
  std::vector<uint8_t> bytes;
  if (!readSlot(session, slot, bytes, error))
    return false;
  if (slot.dtype() == tgx::DType_F64) {
    std::memcpy(&out, bytes.data(), sizeof(double));
  } else {
    float value;
    std::memcpy(&value, bytes.data(), sizeof(float));
    out = value;
  }
  return true;
}

bool step(tg_session &session, const int32_t *tokens, const int32_t *targets,
          tg_step_result *out, std::string &error) {
  if (!session.initialized) {
    error = "tg_session_step: the parameters of " + session.source +
            " are not initialised; call tg_session_init_random, "
            "tg_session_init_from_safetensors or tg_session_load_checkpoint first";
    return false;
  }
  if (session.divergedAt) {
    error = "tg_session_step: the training state of " + session.source +
            " went non-finite at step " + std::to_string(session.divergedAt) +
            "; load a checkpoint or initialise the parameters again";
    return false;
  }
  if (session.stepsDone >= std::numeric_limits<int32_t>::max()) {
    error = "tg_session_step: the step counter of " + session.source +
            " would overflow its int32 'step' slot";
    return false;
  }
  if (!checkTokens(session, tokens, session.rows, "tg_session_step", "tokens", error) ||
      !checkTokens(session, targets, session.rows, "tg_session_step", "targets", error))
    return false;
  auto step = static_cast<int32_t>(session.stepsDone);
  tg_step_result result;
  result.step = session.stepsDone + 1;
  setCurrentStep(result.step);
  if (!updateComputeCopies(session, error) ||
      !writeSlot(session, *session.stepSlot, &step, sizeof(step), 0, error) ||
      !writeSlot(session, *session.tokens, tokens, session.tokens->range()->size(), 0, error) ||
      !writeSlot(session, *session.targets, targets, session.targets->range()->size(), 0, error) ||
      !runCommands(session, error) || !readScalar(session, *session.loss, result.loss, error) ||
      !readScalar(session, *session.gradNorm, result.grad_norm, error) ||
      !readScalar(session, *session.lr, result.lr, error))
    return false;
  if (!std::isfinite(result.loss) || !std::isfinite(result.grad_norm)) {
    // Training diverged: the step has already updated the state in place,
    // so the session refuses to go on or to checkpoint it.
    session.divergedAt = result.step;
    std::string name, where;
    int64_t index;
    double value;
    if (findNonFiniteState(session, name, index, value, error))
      where = "; the first non-finite tensor is '" + name + "' (element " +
              std::to_string(index) + " is " + valueText(value) + ")";
    else if (error.empty())
      where = "; the parameters are still finite";
    else
      where = "";
    error = "tg_session_step: " + session.source + ": training diverged at step " +
            std::to_string(result.step) + ": the loss is " + valueText(result.loss) +
            " and grad_norm " + valueText(result.grad_norm) + where +
            ". Lower the learning rate or set grad_clip_norm, and resume from the last "
            "checkpoint (written before this step)";
    return false;
  }
  ++session.stepsDone;
  if (out)
    *out = result;
  return true;
}

} // namespace
} // namespace tg::runtime

using namespace tg::runtime;
namespace tgx = tg::tgx;

extern "C" {

tg_status tg_session_create_from_file(const char *path, tg_session **out) {
  return guarded("tg_session_create_from_file", [&](std::string &error) {
    if (!requireArgument(path, "tg_session_create_from_file", "path", error) ||
        !requireArgument(out, "tg_session_create_from_file", "out", error))
      return false;
    std::vector<uint8_t> bytes;
    if (!readArtifactFile(path, bytes, error))
      return false;
    return createSession(std::move(bytes), path, out, error);
  });
}

tg_status tg_session_create_from_memory(const void *data, size_t size,
                                        const char *source_name, tg_session **out) {
  return guarded("tg_session_create_from_memory", [&](std::string &error) {
    if (!requireArgument(data, "tg_session_create_from_memory", "data", error) ||
        !requireArgument(out, "tg_session_create_from_memory", "out", error))
      return false;
    // A copy: the session outlives the caller's buffer, and FlatBuffers
    // needs the alignment a fresh allocation has.
    auto *begin = static_cast<const uint8_t *>(data);
    return createSession(std::vector<uint8_t>(begin, begin + size),
                         source_name ? source_name : "<memory>", out, error);
  });
}

void tg_session_destroy(tg_session *session) { delete session; }

void tg_session_info(const tg_session *session, tg_program_info *out) {
  const tgx::TrainInfo &train = *session->program->train();
  out->batch_size = train.batch_size();
  out->seq_len = train.seq_len();
  out->vocab_size = train.vocab_size();
  out->seed = train.seed();
  out->flops_per_step = train.flops_per_step();
  out->num_parameters = 0;
  for (const tgx::Parameter *p : *session->program->parameters())
    out->num_parameters += parameterLayout(*session, *p).fullElements();
  out->target = session->program->target() == tgx::Target_Cuda ? "cuda" : "cpu";
  // The matrix products' dtype, which the peak depends on: a bf16 step
  // keeps f32 master parameters.
  out->dtype = "f32";
  for (const tgx::Command *c : *session->program->commands())
    if (c->kind() == tgx::CommandKind_Gemm) {
      switch (c->gemm()->dtype()) {
      case tgx::DType_BF16: out->dtype = "bf16"; break;
      case tgx::DType_F16: out->dtype = "f16"; break;
      case tgx::DType_F64: out->dtype = "f64"; break;
      default: break;
      }
      break;
    }
}

tg_status tg_session_step(tg_session *session, const int32_t *tokens,
                          const int32_t *targets, tg_step_result *out) {
  return guarded("tg_session_step", [&](std::string &error) {
    return requireArgument(session, "tg_session_step", "session", error) &&
           requireArgument(tokens, "tg_session_step", "tokens", error) &&
           requireArgument(targets, "tg_session_step", "targets", error) &&
           step(*session, tokens, targets, out, error);
  });
}

int64_t tg_session_steps_done(const tg_session *session) { return session->stepsDone; }

void tg_session_rank(const tg_session *session, tg_rank_info *out) {
  out->rank = session->placement.rank;
  out->num_ranks = session->placement.size;
  out->first_row = session->firstRow;
  out->rows = session->rows;
}

void tg_set_collective_timeout(double seconds) { setCollectiveTimeout(seconds); }

void tg_finish_ranks(int clean) { finishRanks(clean != 0); }

void tg_set_num_threads(int threads) { setCpuThreads(threads); }

const char *tg_better_blas_core(void) {
  static const std::string core = betterBlasCore();
  return core.empty() ? nullptr : core.c_str();
}

}
