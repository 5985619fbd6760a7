"""TGC's Python bindings: train a compiled program (.tgx) from Python.

    import tgc
    program = tgc.compile("config.json", train="train.json")  # or dicts; or
    program = tgc.Program("step.tgx")             # what `tgc compile -o step.tgx` wrote
    trainer = tgc.Trainer(program, init="w.safetensors")   # or init=None: random
    loss = trainer.step(inputs, targets)          # int arrays [batch_size, seq_len]
    weights = trainer.weights()                   # {Hugging Face name: numpy array}
    trainer.save_checkpoint("ckpt.safetensors")

A thin layer over the C APIs of the compiler (tgc_compiler.h,
libtgc_compiler.so) and the runtime (tg_runtime.h, libtg_runtime.so) through
ctypes: a failed compilation raises tgc.CompileError with the diagnostics,
every error the runtime reports tgc.TgcError with its message.
Token arrays are passed without a copy when they already are C-contiguous
int32; weights are read straight into the numpy arrays returned.
"""
import atexit
import ctypes
import json
import os
import sys
import warnings
import weakref

import numpy as np

from tgc import _capi, _compiler
from tgc._capi import TgcError

__all__ = ["compile", "CompileError", "finish_ranks", "Program", "Trainer", "TgcError",
           "version"]

_DTYPES = {0: np.float32, 1: np.float64, 2: None, 3: np.float16, 4: np.int32, 5: np.int64}


def finish_ranks(clean=True):
    """Ends this process's part in a multi-rank run (a no-op on one rank),
    after its trainers are closed: `clean` waits for every rank to finish;
    otherwise the launcher stops the others. Called at exit once a trainer
    of several ranks was created: clean unless an exception ended the
    program."""
    _capi.lib.tg_finish_ranks(1 if clean else 0)


_trainers = weakref.WeakSet()
_exit_state = {"clean": True, "installed": False}


def _end_ranks_at_exit():
    """Once a trainer is one rank of several: at exit, its sessions end and
    then its part in the run, cleanly unless an exception ended the program."""
    if _exit_state["installed"]:
        return
    _exit_state["installed"] = True
    hook = sys.excepthook

    def failed(*exc):
        _exit_state["clean"] = False
        hook(*exc)

    def at_exit():
        for trainer in list(_trainers):
            trainer.close()
        finish_ranks(_exit_state["clean"])

    sys.excepthook = failed
    atexit.register(at_exit)


def version():
    """The TGC version of the runtime library."""
    return _capi.lib.tg_runtime_version().decode()


class CompileError(TgcError):
    """A compilation that failed: `diagnostics` lists every error, warning and
    note (severity, file, line, column, message)."""

    def __init__(self, diagnostics):
        self.diagnostics = diagnostics
        errors = [d for d in diagnostics if d.severity == "error"] or diagnostics
        super().__init__("\n".join(
            (f"{d.file}:{d.line}:{d.column}: " if d.line else "") + d.message for d in errors))


def _source(what, value):
    """(path, text) of a model or TRAIN.json given as a path or a dict."""
    if isinstance(value, dict):
        return f"<{what} dict>".encode(), json.dumps(value).encode()
    return os.fspath(value).encode(), None


def compile(model, train=None, target="cpu", mesh=None, *, sequence_parallel=False, zero=0,
            precision=None, cuda_arch=None, cuda_attention=None, no_fuse=None, fusion_remarks=False, fuse=None):
    """Compiles `model` (a config.json, a Hugging Face model directory or a tg
    module (.mlir), as a path; or a config.json as a dict) with `train` (a
    TRAIN.json path or dict) for `target` ("cpu" or "cuda") on `mesh`
    (None: one device; or "dp=D[,tp=T]"), in this process. `cuda_attention`
    ("cudnn", the default, "flash" or "decomposed") is tgc's --cuda-attention; `no_fuse`
    (a pass name, a list of them, or "all") its --no-fuse, `fuse` (a pass
    name or a list) its --fuse; with
    `fusion_remarks` every fusion decision is a "remark" diagnostic. Returns a
    Program whose `diagnostics` hold the warnings (and remarks); raises
    CompileError."""
    options = _compiler.Options()
    options.model_path, options.model_text = _source("model", model)
    if train is not None:
        options.train_path, options.train_text = _source("train", train)
    options.target = target.encode()
    options.mesh = mesh.encode() if mesh else None
    options.sequence_parallel = int(bool(sequence_parallel))
    options.zero = int(zero)
    options.precision = precision.encode() if precision else None
    options.cuda_arch = cuda_arch.encode() if cuda_arch else None
    options.cuda_attention = cuda_attention.encode() if cuda_attention else None
    if no_fuse:
        options.no_fuse = (no_fuse if isinstance(no_fuse, str) else ",".join(no_fuse)).encode()
    if fuse:
        options.fuse = (fuse if isinstance(fuse, str) else ",".join(fuse)).encode()
    options.fusion_remarks = int(bool(fusion_remarks))
    artifact, diagnostics = _compiler.compile(options)
    if artifact is None:
        raise CompileError(diagnostics)
    program = Program(artifact, name=options.model_path.decode())
    program.diagnostics = diagnostics
    return program


class Program:
    """A compiled training program: the bytes of a .tgx artifact, verified when
    a Trainer loads them."""

    diagnostics = []

    def __init__(self, artifact, name=None):
        if isinstance(artifact, (bytes, bytearray)):
            self.data, self.name = bytes(artifact), name or "<memory>"
        else:
            path = os.fspath(artifact)
            with open(path, "rb") as f:
                self.data, self.name = f.read(), name or path

    def __repr__(self):
        return f"tgc.Program({self.name!r}, {len(self.data)} bytes)"


def _warn_if_blas_misses_cpu():
    """Once: OpenBLAS, loaded with this process, did not know its CPU and runs
    kernels without AVX2; it reads OPENBLAS_CORETYPE only as it loads."""
    global _blas_warned
    core = _capi.lib.tg_better_blas_core()
    if core and not _blas_warned:
        _blas_warned = True
        warnings.warn(f"OpenBLAS does not know this CPU and chose kernels without AVX2: the "
                      f"matrix products run several times slower than they could; start "
                      f"Python with OPENBLAS_CORETYPE={core.decode()}", RuntimeWarning,
                      stacklevel=3)


_blas_warned = False


class Trainer:
    """One session of `program`: its parameters, AdamW state and step count.

    init: None (random initialisation, seeded by `seed` or the program's
    TRAIN.json seed) or the path of Hugging Face safetensors weights (a file,
    a sharded index, or a directory holding either)."""

    def __init__(self, program, init=None, seed=None):
        if not isinstance(program, Program):
            raise TypeError(f"tgc.Trainer takes a tgc.Program, not {type(program).__name__}")
        self.program = program  # keeps the artifact alive as long as the trainer
        session = ctypes.c_void_p()
        _capi.check(_capi.lib.tg_session_create_from_memory(
            program.data, len(program.data), program.name.encode(), ctypes.byref(session)))
        self._session = session
        _trainers.add(self)
        info = _capi.ProgramInfo()
        _capi.lib.tg_session_info(self._session, ctypes.byref(info))
        if info.target == b"cpu":
            _warn_if_blas_misses_cpu()
        self.batch_size, self.seq_len, self.vocab_size = info.batch_size, info.seq_len, info.vocab_size
        rank = _capi.RankInfo()
        _capi.lib.tg_session_rank(self._session, ctypes.byref(rank))
        # Under a launcher (mpirun, srun) the session is one rank of the run.
        self.rank, self.num_ranks = rank.rank, rank.num_ranks
        self.first_row, self.rows = rank.first_row, rank.rows
        # The program's parameters, {name: (shape, numpy dtype)} in order.
        self._parameters = {}
        for i in range(_capi.lib.tg_session_num_parameters(self._session)):
            p = _capi.ParameterInfo()
            _capi.check(_capi.lib.tg_session_parameter_info(self._session, i, ctypes.byref(p)))
            self._parameters[p.name.decode()] = (tuple(p.shape[:p.rank]), _DTYPES[p.dtype])
        if self.num_ranks > 1:
            _end_ranks_at_exit()
        if init is None:
            _capi.check(_capi.lib.tg_session_init_random(
                self._session, info.seed if seed is None else int(seed)))
        elif seed is not None:
            raise ValueError("tgc.Trainer: seed seeds the random initialisation; it excludes init")
        else:
            _capi.check(_capi.lib.tg_session_init_from_safetensors(
                self._session, os.fspath(init).encode()))

    # -- lifetime ---------------------------------------------------------
    def close(self):
        """Frees the session; the trainer cannot be used afterwards."""
        if self._session:
            _capi.lib.tg_session_destroy(self._session)
            self._session = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_session", None):
            self.close()

    def _live(self, what):
        if not self._session:
            raise TgcError(f"tgc.Trainer.{what}: the trainer is closed")
        return self._session

    # -- training ---------------------------------------------------------
    def _tokens(self, what, array, rows):
        a = np.asarray(array)
        if a.dtype.kind not in "iu":
            raise TypeError(f"{what} must hold integer token ids, not {a.dtype}")
        if a.shape != (rows, self.seq_len):
            raise ValueError(f"{what} has shape {a.shape}, expected ({rows}, {self.seq_len})"
                             " (rows of the batch, seq_len)")
        return np.ascontiguousarray(a, dtype=np.int32)

    def step(self, inputs, targets):
        """One optimizer step on this rank's rows of the batch; returns the
        batch loss before the update (grad_norm and lr in self.last)."""
        session = self._live("step")
        x = self._tokens("inputs", inputs, self.rows)
        y = self._tokens("targets", targets, self.rows)
        result = _capi.StepResult()
        _capi.check(_capi.lib.tg_session_step(session, _capi.int32_pointer(x),
                                              _capi.int32_pointer(y), ctypes.byref(result)))
        self.last = {"step": result.step, "loss": result.loss, "grad_norm": result.grad_norm,
                     "lr": result.lr}
        return result.loss

    @property
    def steps_done(self):
        return _capi.lib.tg_session_steps_done(self._live("steps_done"))

    def eval(self, inputs, targets):
        """The loss of the current parameters on a batch, without an update."""
        session = self._live("eval")
        x = self._tokens("inputs", inputs, self.rows)
        y = self._tokens("targets", targets, self.rows)
        loss = ctypes.c_double()
        _capi.check(_capi.lib.tg_session_eval(session, _capi.int32_pointer(x),
                                              _capi.int32_pointer(y), ctypes.byref(loss)))
        return loss.value

    def logits(self, tokens):
        """The logits [rows, seq_len, vocab_size] of a micro-batch of token
        sequences (single-device programs)."""
        session = self._live("logits")
        shape = _capi.LogitsShape()
        _capi.check(_capi.lib.tg_session_logits_shape(session, ctypes.byref(shape)))
        x = self._tokens("tokens", tokens, shape.rows)
        out = np.empty((shape.rows, shape.seq_len, shape.vocab_size), dtype=np.float32)
        _capi.check(_capi.lib.tg_session_logits(
            session, _capi.int32_pointer(x), out.ctypes.data_as(ctypes.POINTER(ctypes.c_float))))
        return out

    # -- parameters -------------------------------------------------------
    def parameters(self):
        """[(Hugging Face name, shape, numpy dtype)] in program order."""
        self._live("parameters")
        return [(name, shape, dtype) for name, (shape, dtype) in self._parameters.items()]

    def _parameter(self, name, api):
        """(its full name, shape, dtype) of parameter `name`, with or without
        GPT-2's "transformer." prefix."""
        for full in (name, "transformer." + name):
            if full in self._parameters:
                return (full,) + self._parameters[full]
        raise KeyError(f"tgc.Trainer.{api}: no parameter '{name}'")

    def weights(self):
        """{Hugging Face name: numpy array}, full tensors in Hugging Face
        layouts (in a multi-rank program: on rank 0; every rank must call)."""
        return {name: self.weight(name) for name in self._parameters}

    def weight(self, name):
        """Parameter `name` (with or without GPT-2's "transformer." prefix)
        as a numpy array, read straight into it."""
        session = self._live("weight")
        full, shape, dtype = self._parameter(name, "weight")
        if dtype is None:
            raise TgcError(f"tgc.Trainer.weight: parameter '{full}' is bf16, which numpy "
                           "cannot hold")
        array = np.empty(shape, dtype=dtype)
        _capi.check(_capi.lib.tg_session_get_parameter(
            session, full.encode(), array.ctypes.data_as(ctypes.c_void_p), array.nbytes))
        return array

    def set_weight(self, name, value):
        """Replaces one parameter (full tensor, its shape) with `value`."""
        session = self._live("set_weight")
        key, shape, dtype = self._parameter(name, "set_weight")
        a = np.ascontiguousarray(value, dtype=dtype)
        if a.shape != shape:
            raise ValueError(f"tgc.Trainer.set_weight: '{name}' has shape {shape}, "
                             f"the value {a.shape}")
        _capi.check(_capi.lib.tg_session_set_parameter(
            session, key.encode(), a.ctypes.data_as(ctypes.c_void_p), a.nbytes))

    # -- files ------------------------------------------------------------
    def save_weights(self, path):
        _capi.check(_capi.lib.tg_session_save_weights(self._live("save_weights"),
                                                      os.fspath(path).encode()))

    def save_checkpoint(self, path, data_position=0):
        _capi.check(_capi.lib.tg_session_save_checkpoint(
            self._live("save_checkpoint"), os.fspath(path).encode(), int(data_position)))

    def load_checkpoint(self, path):
        """Restores a checkpoint; returns its data position."""
        position = ctypes.c_int64()
        _capi.check(_capi.lib.tg_session_load_checkpoint(
            self._live("load_checkpoint"), os.fspath(path).encode(), ctypes.byref(position)))
        return position.value
