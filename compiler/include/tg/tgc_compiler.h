/* The TGC compiler C API: compile a model description (a Hugging Face
 * config.json or tg text, from a file or from memory) with a TRAIN.json into
 * a .tgx artifact held in memory, which the runtime's C API (tg_runtime.h)
 * loads with tg_session_create_from_memory.
 *
 * Plain C: the tgc_* functions of libtgc_compiler.so. Nothing is
 * printed: every diagnostic (error, warning, note) comes back as data, with
 * its file, line and column where it has them. No C++ exception crosses the
 * boundary; the caller owns each result and frees it with tgc_result_free.
 */
#ifndef TG_TGC_COMPILER_H
#define TG_TGC_COMPILER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The TGC version of this compiler, e.g. "0.1.0". */
const char *tgc_version(void);

typedef struct {
  /* The model: a config.json, a Hugging Face model directory or a tg module
   * (".mlir"); names it in diagnostics. With model_text NULL the file is
   * read, otherwise model_text is its contents (JSON, or tg text when
   * model_path ends in ".mlir"). */
  const char *model_path;
  const char *model_text;
  /* TRAIN.json: a path, or its contents in train_text (then train_path only
   * names it). An artifact needs the training step: one of them is
   * required unless the tg module already holds @train_step. */
  const char *train_path;
  const char *train_text;
  const char *target;    /* "cpu" (NULL) or "cuda" */
  const char *cuda_arch; /* NULL: "sm_90a" */
  const char *mesh;      /* NULL (one device) or "dp=D[,tp=T]" */
  int sequence_parallel; /* Megatron's sequence parallelism (needs tp > 1) */
  int zero;              /* ZeRO stage, 0 or 1 */
  const char *precision; /* NULL: TRAIN.json's; "f32", "bf16" or "f64" */
  /* How target "cuda" computes attention (tgc --cuda-attention): NULL or
   * "cudnn" (cuDNN's fused attention, the runtime's kernels where cuDNN is
   * missing), "flash" (the runtime's kernels) or "decomposed" (GEMMs and
   * softmax kernels). Refused for the CPU. */
  const char *cuda_attention;
  /* Fusion passes to turn off, comma-separated, by tgc's --no-fuse names
   * ("horizontal, gemm-bias"), or "all" (tgc --no-fusion). NULL or "":
   * none. */
  const char *no_fuse;
  /* Nonzero: every fusion decision, and why, as a TGC_REMARK diagnostic
   * at its op (tgc --fusion-remarks). */
  int fusion_remarks;
  /* Fusion passes the target leaves off to turn on, comma-separated, by
   * tgc's --fuse names ("attention-rope" on CUDA, "gemm-activation" on the
   * CPU, "gemm-bias-grad"); no_fuse wins over it. NULL or "": none. */
  const char *fuse;
} tgc_options;

/* All fields zero: one device, the CPU, TRAIN.json's precision. */
void tgc_options_init(tgc_options *options);
/* sizeof(tgc_options) in this library: a binding that lays the struct out
 * itself (Python's ctypes) checks that it was built against this header. */
size_t tgc_options_size(void);

typedef enum {
  TGC_ERROR = 0,
  TGC_WARNING = 1,
  TGC_NOTE = 2,
  TGC_REMARK = 3
} tgc_severity;

typedef struct {
  tgc_severity severity;
  const char *file; /* "" when it has no location */
  int line;         /* 1-based; 0 when unknown */
  int column;
  const char *message;
} tgc_diagnostic;

typedef struct tgc_result_s tgc_result;

/* Compiles; NULL only when `options` is NULL or memory runs out. A result
 * holds the artifact when tgc_result_ok, and its diagnostics either way. */
tgc_result *tgc_compile(const tgc_options *options);
int tgc_result_ok(const tgc_result *result);
/* The artifact's bytes (owned by the result) and their number; NULL (and 0)
 * after a failed compilation. */
const uint8_t *tgc_result_artifact(const tgc_result *result, size_t *size);
size_t tgc_result_num_diagnostics(const tgc_result *result);
/* Fills `out` with diagnostic `index` (its strings are owned by the
 * result); returns 0, or -1 for an index out of range. */
int tgc_result_diagnostic(const tgc_result *result, size_t index,
                          tgc_diagnostic *out);
void tgc_result_free(tgc_result *result);

#ifdef __cplusplus
}
#endif
#endif
