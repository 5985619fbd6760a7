"""ctypes declarations of the runtime's C API (tg_runtime.h)."""
import ctypes
import os

from tgc import _library


class TgcError(RuntimeError):
    """An error reported by the TGC runtime; its message names the file, field
    or tensor at fault and what to do."""


def _load():
    path = os.environ.get("TG_RUNTIME_LIBRARY", _library.RUNTIME)
    try:
        return ctypes.CDLL(path)
    except OSError as e:
        raise ImportError(f"tgc: cannot load the runtime library {path} ({e}); build it "
                          "(ninja -C build tg_runtime_shared) or set TG_RUNTIME_LIBRARY") from e


class ProgramInfo(ctypes.Structure):
    _fields_ = [("batch_size", ctypes.c_int64), ("seq_len", ctypes.c_int64),
                ("vocab_size", ctypes.c_int64), ("seed", ctypes.c_uint64),
                ("flops_per_step", ctypes.c_double), ("num_parameters", ctypes.c_int64),
                ("target", ctypes.c_char_p), ("dtype", ctypes.c_char_p)]


class StepResult(ctypes.Structure):
    _fields_ = [("step", ctypes.c_int64), ("loss", ctypes.c_double),
                ("grad_norm", ctypes.c_double), ("lr", ctypes.c_double)]


class RankInfo(ctypes.Structure):
    _fields_ = [("rank", ctypes.c_int), ("num_ranks", ctypes.c_int),
                ("first_row", ctypes.c_int64), ("rows", ctypes.c_int64)]


class LogitsShape(ctypes.Structure):
    _fields_ = [("rows", ctypes.c_int64), ("seq_len", ctypes.c_int64),
                ("vocab_size", ctypes.c_int64)]


class ParameterInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_int),
                ("shape", ctypes.c_int64 * 8), ("num_elements", ctypes.c_int64),
                ("bytes", ctypes.c_size_t)]


lib = _load()
_status = ctypes.c_void_p
_session = ctypes.c_void_p
_i32p = ctypes.POINTER(ctypes.c_int32)
for name, args, result in [
        ("tg_status_message", [_status], ctypes.c_char_p),
        ("tg_status_free", [_status], None),
        ("tg_runtime_version", [], ctypes.c_char_p),
        ("tg_finish_ranks", [ctypes.c_int], None),
        ("tg_better_blas_core", [], ctypes.c_char_p),
        ("tg_session_create_from_memory", [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p,
                                           ctypes.POINTER(_session)], _status),
        ("tg_session_destroy", [_session], None),
        ("tg_session_info", [_session, ctypes.POINTER(ProgramInfo)], None),
        ("tg_session_rank", [_session, ctypes.POINTER(RankInfo)], None),
        ("tg_session_init_random", [_session, ctypes.c_uint64], _status),
        ("tg_session_init_from_safetensors", [_session, ctypes.c_char_p], _status),
        ("tg_session_step", [_session, _i32p, _i32p, ctypes.POINTER(StepResult)], _status),
        ("tg_session_steps_done", [_session], ctypes.c_int64),
        ("tg_session_eval", [_session, _i32p, _i32p, ctypes.POINTER(ctypes.c_double)], _status),
        ("tg_session_logits_shape", [_session, ctypes.POINTER(LogitsShape)], _status),
        ("tg_session_logits", [_session, _i32p, ctypes.POINTER(ctypes.c_float)], _status),
        ("tg_session_num_parameters", [_session], ctypes.c_size_t),
        ("tg_session_parameter_info", [_session, ctypes.c_size_t,
                                       ctypes.POINTER(ParameterInfo)], _status),
        ("tg_session_get_parameter", [_session, ctypes.c_char_p, ctypes.c_void_p,
                                      ctypes.c_size_t], _status),
        ("tg_session_set_parameter", [_session, ctypes.c_char_p, ctypes.c_void_p,
                                      ctypes.c_size_t], _status),
        ("tg_session_save_weights", [_session, ctypes.c_char_p], _status),
        ("tg_session_save_checkpoint", [_session, ctypes.c_char_p, ctypes.c_int64], _status),
        ("tg_session_load_checkpoint", [_session, ctypes.c_char_p,
                                        ctypes.POINTER(ctypes.c_int64)], _status)]:
    function = getattr(lib, name)
    function.argtypes, function.restype = args, result


def check(status):
    """Raises TgcError with the runtime's message for a failed status."""
    if status:
        message = lib.tg_status_message(status).decode(errors="replace")
        lib.tg_status_free(status)
        raise TgcError(message)


def int32_pointer(array):
    return array.ctypes.data_as(_i32p)
