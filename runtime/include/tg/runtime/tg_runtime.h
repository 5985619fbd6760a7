/* The TGC runtime C API: load a compiled .tgx training program and run it.
 *
 * Plain C, no LLVM/MLIR. `tgrun` is its first client; Python bindings and
 * framework bridges build on the same calls. Every call that can fail returns
 * a tg_status: NULL on success, otherwise an error the caller must free with
 * tg_status_free. Messages name the file, field or tensor at fault and say
 * how to fix it. No call aborts the process on bad input.
 */
#ifndef TG_RUNTIME_TG_RUNTIME_H
#define TG_RUNTIME_TG_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tg_status_s *tg_status;
const char *tg_status_message(tg_status status);
void tg_status_free(tg_status status);

/* A loaded, verified program with its memory (parameters, optimizer state,
 * activations) and its training position. */
typedef struct tg_session_s tg_session;

/* Loads and verifies an artifact. `source_name` is used in messages. Files
 * (here and below) are read only if they are regular files: a FIFO or
 * device is an error, never a blocked open(). */
tg_status tg_session_create_from_file(const char *path, tg_session **out);
tg_status tg_session_create_from_memory(const void *data, size_t size,
                                        const char *source_name,
                                        tg_session **out);
void tg_session_destroy(tg_session *session);

/* What the program trains on. */
typedef struct {
  int64_t batch_size;
  int64_t seq_len;
  int64_t vocab_size;
  uint64_t seed;          /* from TRAIN.json */
  double flops_per_step;  /* matmul and attention FLOPs of one rank's step */
  int64_t num_parameters; /* elements over all trainable tensors (the
                             model's: full tensors, whatever the mesh) */
  const char *target;     /* "cpu" or "cuda" (static strings) */
  const char *dtype;      /* the matrix products': "f32", "bf16", "f16" or
                             "f64" (a bf16 step keeps f32 master weights) */
} tg_program_info;
void tg_session_info(const tg_session *session, tg_program_info *out);

/* Parameter initialisation, and AdamW state and step reset to zero.
 * Random init: normal(0, std) per the artifact's rules, seeded by `seed` and
 * the parameter's name (so it does not depend on parameter order). A
 * tensor-parallel program's rank gets its part of the values the parameter
 * gets on one device. */
tg_status tg_session_init_random(tg_session *session, uint64_t seed);
/* From safetensors weights with Hugging Face names, with or without the
 * "transformer." prefix; every parameter must be present with its (full,
 * Hugging Face) shape; a tensor-parallel program's rank takes its part.
 * `path`: a .safetensors file, a sharded checkpoint's
 * model.safetensors.index.json, or a model directory holding either. */
tg_status tg_session_init_from_safetensors(tg_session *session,
                                           const char *path);

typedef struct {
  int64_t step;        /* 1-based number of the step just taken */
  double loss;         /* the batch loss before this step's update */
  double grad_norm;    /* before clipping */
  double lr;
} tg_step_result;

/* One optimizer step on `tokens` and `targets`, each rows * seq_len int32
 * values, row-major: this rank's rows of the batch (tg_session_rank; the
 * whole batch, batch_size rows, on a single rank). A non-finite loss or grad_norm fails the step
 * with a message naming it and the first non-finite state tensor; the
 * session is then "diverged": steps, checkpoints and weights are refused
 * until an init_* call or tg_session_load_checkpoint. */
tg_status tg_session_step(tg_session *session, const int32_t *tokens,
                          const int32_t *targets, tg_step_result *out);
/* Number of steps taken so far (restored by tg_session_load_checkpoint). */
int64_t tg_session_steps_done(const tg_session *session);

/* Evaluation: the loss of the current parameters on `tokens` and `targets`
 * (as tg_session_step's: this rank's rows), without gradients or update,
 * by the artifact's eval_step function (tgc writes it into the artifacts it
 * compiles from a model description). It runs on its own memory: the first
 * call allocates the function's arena, with a copy of the parameters that
 * is taken again whenever they have changed. Collective in a multi-rank
 * program: every rank calls it with its rows. The training state is not
 * touched. */
tg_status tg_session_eval(tg_session *session, const int32_t *tokens,
                          const int32_t *targets, double *loss);

/* Logits, for generation: the artifact's logits function maps `rows`
 * sequences of `seq_len` token ids to their rows x seq_len x vocab_size
 * logits (position p's from the tokens up to p). Artifacts for one device
 * have it; an error names what to do otherwise. Like evaluation, it runs on
 * its own memory with a copy of the parameters. */
typedef struct {
  int64_t rows;
  int64_t seq_len;
  int64_t vocab_size;
} tg_logits_shape;
tg_status tg_session_logits_shape(const tg_session *session,
                                  tg_logits_shape *out);
/* `tokens`: rows * seq_len ids; `logits`: rows * seq_len * vocab_size
 * floats, row-major. */
tg_status tg_session_logits(tg_session *session, const int32_t *tokens,
                            float *logits);

/* Parameters by their Hugging Face names, as full tensors whatever the mesh
 * (Hugging Face shapes and layouts, row-major). */
typedef enum {
  TG_F32 = 0, TG_F64 = 1, TG_BF16 = 2, TG_F16 = 3, TG_I32 = 4, TG_I64 = 5
} tg_dtype;
#define TG_MAX_RANK 8
typedef struct {
  const char *name;      /* valid while the session lives */
  tg_dtype dtype;        /* the element type the session holds it in */
  int rank;
  int64_t shape[TG_MAX_RANK];
  int64_t num_elements;
  size_t bytes;          /* num_elements * the dtype's size */
} tg_parameter_info;
size_t tg_session_num_parameters(const tg_session *session);
tg_status tg_session_parameter_info(const tg_session *session, size_t index,
                                    tg_parameter_info *out);
/* Copies parameter `name` (with or without GPT-2's "transformer." prefix)
 * into `out`, `bytes` = its info.bytes, in its dtype. Collective in a
 * multi-rank program: every rank calls it; rank 0 gets the tensor (a split
 * parameter is gathered), the others' `out` is left as it was. */
tg_status tg_session_get_parameter(const tg_session *session, const char *name,
                                   void *out, size_t bytes);
/* Replaces parameter `name` with `bytes` (= its info.bytes) of its dtype,
 * after an init_* call or a loaded checkpoint; the AdamW moments and the
 * step count stay. Non-finite values are refused. In a multi-rank program
 * every rank passes the whole tensor and keeps its part. */
tg_status tg_session_set_parameter(tg_session *session, const char *name,
                                   const void *data, size_t bytes);
/* The TGC version of this runtime, e.g. "0.1.0". */
const char *tg_runtime_version(void);

/* Profiling: with it on, tg_session_step times each command of the program
 * (wall time on the CPU, device time on a GPU) and keeps one record per
 * command, in program order, for tg_session_profile. Off by default; the
 * step is otherwise the same. */
tg_status tg_session_set_profiling(tg_session *session, int enabled);

typedef enum {
  TG_COMMAND_KERNEL = 0, /* a compiled kernel */
  TG_COMMAND_GEMM = 1,   /* a library matrix product */
  TG_COMMAND_COPY = 2,
  TG_COMMAND_COLLECTIVE = 3, /* communication between ranks: its time is
                                what this rank waited for the others */
  TG_COMMAND_ATTENTION = 4   /* the runtime's flash attention kernels (CUDA) */
} tg_command_kind;

typedef struct {
  const char *label;     /* the op it came from ("" if the artifact has none);
                            valid while the session lives */
  tg_command_kind kind;
  uint32_t stream;       /* commands of different streams may overlap */
  double start_seconds;  /* from the start of the step's first command */
  double seconds;
  uint64_t bytes;        /* the sizes of its operands (for a GEMM: a, b, c) */
  double flops;          /* GEMM: 2 m n k batch; 0 for other commands */
} tg_command_profile;

/* The records of the last step that ran its commands, when it ran with
 * profiling on: `*records` (owned by the session, valid until the next step,
 * tg_session_set_profiling or tg_session_destroy) and `*count`, one per
 * command. An error when that step was not profiled or no step ran yet. */
tg_status tg_session_profile(const tg_session *session,
                             const tg_command_profile **records,
                             size_t *count);

/* Saving weights and checkpoints is collective in a multi-rank program:
 * every rank must call tg_session_save_weights(_sharded) and
 * tg_session_save_checkpoint with the same arguments, in the same order.
 * Both load on any mesh.
 *
 * Weights hold full tensors: a tensor-parallel parameter's shards are
 * gathered to rank 0, which alone writes them. The other ranks return once
 * they have sent their part, and their status says nothing of rank 0's
 * writing.
 *
 * Final weights as safetensors, Hugging Face names and layouts: `path`
 * (STEM.safetensors) when they take at most `max_shard_bytes`, otherwise
 * Hugging Face's shards STEM-0000K-of-0000N.safetensors beside it and their
 * index STEM.safetensors.index.json. tg_session_save_weights shards above
 * TG_DEFAULT_MAX_SHARD_BYTES (5 GB, transformers' default). */
#define TG_DEFAULT_MAX_SHARD_BYTES 5000000000ull
tg_status tg_session_save_weights(const tg_session *session, const char *path);
tg_status tg_session_save_weights_sharded(const tg_session *session, const char *path,
                                          uint64_t max_shard_bytes);

/* Full training state: parameters, AdamW moments, step count and the data
 * position (in [0, 2^62]; non-finite state is never written), with
 * checksums over the contents. On one rank `path` is a safetensors file of
 * full tensors, written to a temporary file, fsynced and renamed. In a
 * multi-rank program `path` is a directory: every rank writes the pieces of
 * the state it holds (each piece by one of the ranks holding it) to
 * path/rank-RRRRR.safetensors, in parallel, and rank 0 writes
 * path/checkpoint.index.json, which describes how the pieces make up each
 * full tensor; the files are gathered in path.partial and the directory
 * renamed to `path` only once every rank has written its part, and every
 * rank's status says whether the whole checkpoint was written. Loading
 * takes either form, on any mesh (the same model), verifies the checksums
 * and that the checkpoint belongs to this program. Loading is collective
 * too: every rank reads the whole checkpoint and takes its part, then the
 * ranks agree, so that all fail (naming the rank) if one could not. */
tg_status tg_session_save_checkpoint(const tg_session *session,
                                     const char *path, int64_t data_position);
tg_status tg_session_load_checkpoint(tg_session *session, const char *path,
                                     int64_t *data_position);

/* Multi-rank runs. A program compiled for a mesh of N devices (tgc compile
 * --mesh dp=N) runs as N ranks, one process each, started by `tgrun -n N`,
 * mpirun or srun (--mpi=pmix); creating a session joins the run's ranks
 * (MPI), and fails, saying how to start it, when their number is not the
 * mesh's. Every rank calls tg_session_step with its own rows of each batch:
 * rows [first_row, first_row + rows) of the batch_size rows. */
typedef struct {
  int rank;          /* this process, in [0, num_ranks) */
  int num_ranks;
  int64_t first_row; /* this rank's rows of the global batch */
  int64_t rows;
} tg_rank_info;
void tg_session_rank(const tg_session *session, tg_rank_info *out);
/* Seconds a collective may wait for the other ranks (default 60): past it
 * the step fails with a message naming the collective, the step and the
 * ranks that did not arrive. Process-wide. */
void tg_set_collective_timeout(double seconds);
/* Ends this process's part in a multi-rank run, after its sessions are
 * destroyed; a no-op on a single rank. `clean` (the run succeeded): wait
 * for every rank to finish. Otherwise leave at once, and the launcher stops
 * the other ranks. */
void tg_finish_ranks(int clean);

/* Threads the CPU backend runs a step on (its kernels' parallel loops and its
 * matrix products), process-wide. Without a call, OPENBLAS_NUM_THREADS (or
 * OMP_NUM_THREADS) where set, otherwise the machine's cores divided between
 * the ranks Open MPI started on it. OpenBLAS's pthreads build (Debian's) is
 * then set to one thread of its own, process-wide: the products run on this
 * pool instead. */
void tg_set_num_threads(int threads);
/* The CPU backend's matrix products run on OpenBLAS, which picks its kernels
 * for the CPU as it loads. An OpenBLAS older than the CPU (Debian 12's
 * 0.3.21 on Intel's Emerald Rapids) falls back to kernels without AVX2,
 * several times slower than the ones the CPU can run. Then this returns the
 * core type to start the process with (the value of OPENBLAS_CORETYPE,
 * which OpenBLAS reads only as it loads: tgrun re-executes itself with it);
 * otherwise, or where OPENBLAS_CORETYPE is set, NULL. The string is
 * static. */
const char *tg_better_blas_core(void);

/* Token data (the data contract): a stream of N token ids. Sample i of step
 * s (0-based) starts at o = ((s*B + i)*T) mod (N - T); its inputs are
 * tokens[o : o+T] and its targets tokens[o+1 : o+T+1]. */
typedef enum {
  TG_DATA_UINT16 = 0,   /* a flat array of little-endian uint16 ids */
  TG_DATA_UINT32 = 1,   /* a flat array of little-endian uint32 ids */
  TG_DATA_MEGATRON = 2, /* Megatron-LM's indexed dataset, PREFIX.bin and
                         * PREFIX.idx (`path`: PREFIX, or either file; uint16
                         * or int32 ids): its sequences, concatenated in
                         * order, are the stream */
} tg_data_format;
typedef struct tg_dataset_s tg_dataset;
/* A flat uint16 token file. */
tg_status tg_dataset_open(const char *path, tg_dataset **out);
tg_status tg_dataset_open_format(const char *path, tg_data_format format,
                                 tg_dataset **out);
void tg_dataset_close(tg_dataset *dataset);
int64_t tg_dataset_num_tokens(const tg_dataset *dataset);
/* Bytes per token id: 2 or 4. */
int tg_dataset_token_bytes(const tg_dataset *dataset);
/* Documents of a Megatron dataset; 0 for flat files. */
int64_t tg_dataset_num_documents(const tg_dataset *dataset);
/* Fills `tokens` and `targets` (batch_size * seq_len each) for 0-based step
 * `step`; fails if a token is negative or >= vocab_size, if the data holds
 * fewer than seq_len + 1 tokens, or if its ids are uint16 and vocab_size is
 * above 65,535 (such ids cannot be stored in it). */
tg_status tg_dataset_batch(const tg_dataset *dataset, int64_t step,
                           int64_t batch_size, int64_t seq_len,
                           int64_t vocab_size, int32_t *tokens,
                           int32_t *targets);

#ifdef __cplusplus
}
#endif
#endif
