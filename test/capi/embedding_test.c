/* The C APIs of the compiler (tgc_compiler.h) and the runtime
 * (tg_runtime.h) from plain C11, as a framework embeds them: compile a
 * model held in memory, train it from the artifact bytes, read and write a
 * parameter, and misuse both, which must give errors as data (never a crash
 * or a leak: CI runs this under AddressSanitizer). */
#include "tg/runtime/tg_runtime.h"
#include "tg/tgc_compiler.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;
#define EXPECT(cond, ...)                                                      \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: expected %s: ", __FILE__, __LINE__, #cond);      \
      fprintf(stderr, __VA_ARGS__);                                            \
      fprintf(stderr, "\n");                                                   \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

static const char *kModel =
    "{\"model_type\": \"gpt2\", \"vocab_size\": 16, \"n_positions\": 8, \"n_embd\": 16,"
    " \"n_layer\": 1, \"n_head\": 2, \"tie_word_embeddings\": true}";
static const char *kTrain =
    "{\"batch_size\": 2, \"seq_len\": 8, \"seed\": 7, \"precision\": \"fp32\","
    " \"optimizer\": {\"type\": \"adamw\", \"lr\": 0.01, \"betas\": [0.9, 0.95],"
    " \"eps\": 1e-8, \"weight_decay\": 0.0}}";

/* The diagnostic of `result` whose message contains `text`, or -1. */
static long find_diagnostic(const tgc_result *result, tgc_severity severity,
                            const char *text, tgc_diagnostic *out) {
  for (size_t i = 0; i < tgc_result_num_diagnostics(result); ++i)
    if (tgc_result_diagnostic(result, i, out) == 0 && out->severity == severity &&
        strstr(out->message, text))
      return (long)i;
  return -1;
}

/* Compiles `options`, expecting a refusal whose error contains `text`. */
static void expect_refused(const tgc_options *options, const char *text, const char *what) {
  tgc_diagnostic d;
  tgc_result *r = tgc_compile(options);
  EXPECT(r && !tgc_result_ok(r), "%s fails", what);
  EXPECT(find_diagnostic(r, TGC_ERROR, text, &d) >= 0, "%s: an error with '%s'", what, text);
  tgc_result_free(r);
}

static tgc_result *compile_text(const char *model, const char *model_path, const char *train,
                                const char *mesh) {
  tgc_options options;
  tgc_options_init(&options);
  options.model_path = model_path;
  options.model_text = model;
  options.train_path = train ? "train.json" : NULL;
  options.train_text = train;
  options.mesh = mesh;
  return tgc_compile(&options);
}

static int check_ok(tg_status status, const char *what) {
  if (!status)
    return 1;
  fprintf(stderr, "%s failed: %s\n", what, tg_status_message(status));
  tg_status_free(status);
  ++failures;
  return 0;
}

static void expect_error(tg_status status, const char *text, const char *what) {
  EXPECT(status != NULL, "%s should fail", what);
  if (status) {
    EXPECT(strstr(tg_status_message(status), text) != NULL, "%s: '%s' lacks '%s'", what,
           tg_status_message(status), text);
    tg_status_free(status);
  }
}

static void train_compiled_model(void) {
  tgc_result *result = compile_text(kModel, "tiny-gpt2.json", kTrain, NULL);
  EXPECT(result && tgc_result_ok(result), "the model compiles");
  if (!result || !tgc_result_ok(result)) {
    for (size_t i = 0; result && i < tgc_result_num_diagnostics(result); ++i) {
      tgc_diagnostic d;
      tgc_result_diagnostic(result, i, &d);
      fprintf(stderr, "  diagnostic: %s\n", d.message);
    }
    tgc_result_free(result);
    return;
  }
  size_t size = 0;
  const uint8_t *artifact = tgc_result_artifact(result, &size);
  EXPECT(artifact && size > 1000, "an artifact of %zu bytes", size);

  tg_session *session = NULL;
  if (!check_ok(tg_session_create_from_memory(artifact, size, "tiny.tgx", &session), "load")) {
    tgc_result_free(result);
    return;
  }
  /* The session copied the bytes: the result may go. */
  tgc_result_free(result);
  tg_program_info info;
  tg_session_info(session, &info);
  EXPECT(info.batch_size == 2 && info.seq_len == 8 && info.vocab_size == 16, "the shape");
  check_ok(tg_session_init_random(session, info.seed), "init");

  /* A sequence that repeats: the loss must fall. */
  int32_t tokens[16], targets[16];
  for (int i = 0; i < 16; ++i) {
    tokens[i] = (i * 3) % 16;
    targets[i] = ((i + 1) * 3) % 16;
  }
  double first = 0, last = 0;
  for (int step = 0; step < 20; ++step) {
    tg_step_result r;
    if (!check_ok(tg_session_step(session, tokens, targets, &r), "step"))
      break;
    EXPECT(isfinite(r.loss) && r.step == step + 1, "step %d: loss %g", step + 1, r.loss);
    if (step == 0)
      first = r.loss;
    last = r.loss;
  }
  EXPECT(last < 0.5 * first, "the loss falls: %g then %g", first, last);
  double eval_loss = 0;
  check_ok(tg_session_eval(session, tokens, targets, &eval_loss), "eval");
  EXPECT(isfinite(eval_loss) && eval_loss < first, "eval loss %g", eval_loss);

  /* Parameters by name. */
  tg_parameter_info p;
  check_ok(tg_session_parameter_info(session, 0, &p), "parameter_info");
  EXPECT(p.dtype == TG_F32 && p.bytes == (size_t)p.num_elements * 4, "parameter 0");
  float *values = malloc(p.bytes);
  check_ok(tg_session_get_parameter(session, p.name, values, p.bytes), "get_parameter");
  values[0] = 0.25f;
  check_ok(tg_session_set_parameter(session, p.name, values, p.bytes), "set_parameter");
  float *again = malloc(p.bytes);
  check_ok(tg_session_get_parameter(session, p.name, again, p.bytes), "get_parameter");
  EXPECT(again[0] == 0.25f, "the value written is read back");
  expect_error(tg_session_get_parameter(session, "no.such.weight", again, p.bytes),
               "has no parameter 'no.such.weight'", "an unknown name");
  expect_error(tg_session_set_parameter(session, p.name, values, p.bytes - 4), "takes",
               "a short buffer");
  values[1] = NAN;
  expect_error(tg_session_set_parameter(session, p.name, values, p.bytes), "non-finite",
               "a NaN");
  expect_error(tg_session_parameter_info(session, 1000, &p), "is not below", "an index");
  expect_error(tg_session_step(session, NULL, targets, NULL), "argument 'tokens' is NULL",
               "NULL tokens");
  tokens[3] = 99;
  expect_error(tg_session_step(session, tokens, targets, NULL), "outside the vocabulary",
               "an out-of-range token");
  free(values);
  free(again);
  tg_session_destroy(session);
}

static void compile_errors_are_data(void) {
  tgc_diagnostic d;
  tgc_result *r = compile_text("{\"model_type\": \"gpt2\",", "broken.json", kTrain, NULL);
  EXPECT(r && !tgc_result_ok(r), "malformed JSON fails");
  EXPECT(find_diagnostic(r, TGC_ERROR, "broken.json: malformed JSON", &d) >= 0,
         "the error names the file");
  size_t size = 1;
  EXPECT(tgc_result_artifact(r, &size) == NULL && size == 0, "no artifact");
  tgc_result_free(r);

  r = compile_text("{\"model_type\": \"gpt2\", \"vocab_size\": 16, \"n_positions\": 8,"
                   " \"n_embd\": 15, \"n_layer\": 1, \"n_head\": 2}",
                   "heads.json", kTrain, NULL);
  EXPECT(r && !tgc_result_ok(r), "indivisible heads fail");
  EXPECT(find_diagnostic(r, TGC_ERROR, "n_embd", &d) >= 0, "the error names the field");
  tgc_result_free(r);

  r = compile_text(kModel, "tiny-gpt2.json", kTrain, "dp=2,pp=2");
  EXPECT(r && !tgc_result_ok(r), "an unknown mesh axis fails");
  EXPECT(find_diagnostic(r, TGC_ERROR, "unknown mesh axis 'pp'", &d) >= 0, "names the axis");
  tgc_result_free(r);

  /* An unknown key: a warning, and the compilation still succeeds. */
  r = compile_text("{\"model_type\": \"gpt2\", \"vocab_size\": 16, \"n_positions\": 8,"
                   " \"n_embd\": 16, \"n_layer\": 1, \"n_head\": 2, \"new_knob\": 1}",
                   "knob.json", kTrain, NULL);
  EXPECT(r && tgc_result_ok(r), "an unknown key only warns");
  EXPECT(find_diagnostic(r, TGC_WARNING, "new_knob", &d) >= 0, "the warning names the key");
  tgc_result_free(r);

  /* tg text with an error: a located diagnostic. */
  r = compile_text("module {\n  func.func @train_step() {\n    %0 = tg.bogus\n  }\n}\n",
                   "bad.mlir", NULL, NULL);
  EXPECT(r && !tgc_result_ok(r), "bad tg text fails");
  EXPECT(find_diagnostic(r, TGC_ERROR, "custom op 'tg.bogus' is unknown", &d) >= 0,
         "the parser's error");
  EXPECT(strcmp(d.file, "bad.mlir") == 0 && d.line == 3 && d.column == 10,
         "located at bad.mlir:3:10, not %s:%d:%d", d.file, d.line, d.column);
  EXPECT(tgc_result_diagnostic(r, 1000, &d) == -1, "an index out of range");
  tgc_result_free(r);

  tgc_options options;
  tgc_options_init(&options);
  expect_refused(&options, "tgc_options.model_path", "no model");
  options.model_text = kModel;
  options.train_text = kTrain;
  options.target = "tpu";
  expect_refused(&options, "'tpu' is not a target", "a bad target");
  options.target = NULL;
  options.no_fuse = "horizontal,bogus";
  expect_refused(&options, "tgc_options.no_fuse: 'bogus' is not a fusion pass",
                 "an unknown fusion pass");
  options.no_fuse = " horizontal, ,gemm-bias,";
  r = tgc_compile(&options);
  EXPECT(r && tgc_result_ok(r), "no_fuse's names trimmed, empty ones skipped");
  tgc_result_free(r);
  options.fuse = "gemm-activation,bogus";
  expect_refused(&options, "tgc_options.fuse: 'bogus' is not a fusion pass",
                 "an unknown fusion pass to turn on");
  options.fuse = NULL;
  options.no_fuse = "all";
  options.cuda_attention = "cudnn";
  expect_refused(&options, "tgc_options.cuda_attention chooses how the GPU",
                 "cuda_attention without the CUDA target");
  options.cuda_attention = NULL;
  r = tgc_compile(&options);
  EXPECT(r && tgc_result_ok(r), "every fusion pass off compiles");
  tgc_result_free(r);
  EXPECT(tgc_options_size() == sizeof(tgc_options), "the library's options are this header's");
  EXPECT(tgc_compile(NULL) == NULL, "NULL options");
  tgc_result_free(NULL);

  tg_session *session = NULL;
  expect_error(tg_session_create_from_memory("junk", 4, "junk.tgx", &session), "junk.tgx",
               "junk bytes");
}

int main(void) {
  EXPECT(strcmp(tgc_version(), tg_runtime_version()) == 0, "one version: %s and %s",
         tgc_version(), tg_runtime_version());
  train_compiled_model();
  compile_errors_are_data();
  if (failures)
    fprintf(stderr, "%d failures\n", failures);
  else
    printf("embedding_test: all checks passed\n");
  return failures ? 1 : 0;
}
