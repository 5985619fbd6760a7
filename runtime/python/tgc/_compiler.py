"""ctypes declarations of the compiler's C API (tgc_compiler.h), loaded at
the first compilation: importing tgc does not load MLIR."""
import collections
import ctypes
import os

from tgc import _library

Diagnostic = collections.namedtuple("Diagnostic", "severity file line column message")
SEVERITIES = {0: "error", 1: "warning", 2: "note", 3: "remark"}


class Options(ctypes.Structure):
    _fields_ = [("model_path", ctypes.c_char_p), ("model_text", ctypes.c_char_p),
                ("train_path", ctypes.c_char_p), ("train_text", ctypes.c_char_p),
                ("target", ctypes.c_char_p), ("cuda_arch", ctypes.c_char_p),
                ("mesh", ctypes.c_char_p), ("sequence_parallel", ctypes.c_int),
                ("zero", ctypes.c_int), ("precision", ctypes.c_char_p),
                ("cuda_attention", ctypes.c_char_p), ("no_fuse", ctypes.c_char_p),
                ("fusion_remarks", ctypes.c_int), ("fuse", ctypes.c_char_p)]


class CDiagnostic(ctypes.Structure):
    _fields_ = [("severity", ctypes.c_int), ("file", ctypes.c_char_p), ("line", ctypes.c_int),
                ("column", ctypes.c_int), ("message", ctypes.c_char_p)]


_lib = None


def library():
    global _lib
    if _lib is None:
        path = os.environ.get("TGC_COMPILER_LIBRARY", _library.COMPILER)
        if not path:
            raise ImportError("tgc.compile: this build has no compiler library "
                              "(libtgc_compiler.so); build TGC with MLIR, or set "
                              "TGC_COMPILER_LIBRARY")
        lib = ctypes.CDLL(path)
        result = ctypes.c_void_p
        for name, args, restype in [
                ("tgc_compile", [ctypes.POINTER(Options)], result),
                ("tgc_result_ok", [result], ctypes.c_int),
                ("tgc_result_artifact", [result, ctypes.POINTER(ctypes.c_size_t)],
                 ctypes.POINTER(ctypes.c_uint8)),
                ("tgc_result_num_diagnostics", [result], ctypes.c_size_t),
                ("tgc_result_diagnostic", [result, ctypes.c_size_t,
                                           ctypes.POINTER(CDiagnostic)], ctypes.c_int),
                ("tgc_result_free", [result], None),
                ("tgc_options_size", [], ctypes.c_size_t)]:
            function = getattr(lib, name, None)
            if function is None:
                raise ImportError(f"tgc.compile: {path} has no {name}: it is another version's "
                                  "compiler library; rebuild TGC (ninja -C build)")
            function.argtypes, function.restype = args, restype
        # The struct is laid out here by hand: another build's would be read
        # past its end (or short of it).
        if lib.tgc_options_size() != ctypes.sizeof(Options):
            raise ImportError(f"tgc.compile: {path} takes options of {lib.tgc_options_size()} bytes, "
                              f"this package's are {ctypes.sizeof(Options)}: they are of different "
                              "builds; rebuild TGC (ninja -C build)")
        _lib = lib
    return _lib


def compile(options):
    """(artifact bytes or None, [Diagnostic]) of `options`."""
    lib = library()
    result = lib.tgc_compile(ctypes.byref(options))
    if not result:
        raise MemoryError("tgc.compile: out of memory")
    try:
        diagnostics = []
        for i in range(lib.tgc_result_num_diagnostics(result)):
            d = CDiagnostic()
            lib.tgc_result_diagnostic(result, i, ctypes.byref(d))
            diagnostics.append(Diagnostic(SEVERITIES.get(d.severity, "error"), d.file.decode(),
                                          d.line, d.column, d.message.decode(errors="replace")))
        artifact = None
        if lib.tgc_result_ok(result):
            size = ctypes.c_size_t()
            data = lib.tgc_result_artifact(result, ctypes.byref(size))
            artifact = ctypes.string_at(data, size.value)
        return artifact, diagnostics
    finally:
        lib.tgc_result_free(result)
