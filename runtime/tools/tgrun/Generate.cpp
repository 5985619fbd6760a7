// `tgrun generate`: autoregressive decoding through the artifact's logits
// function. Each new token runs the logits of the last seq_len tokens of
// every sequence (no key/value cache: a position's logits depend only on
// the tokens up to it, so a shorter sequence is padded at the end); greedy,
// or sampled with a temperature and top-k from a seeded generator.
#include "Generate.h"

#include "Cli.h"
#include "tg/runtime/Artifact.h"
#include "tg/runtime/RegularFile.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace tg::tgrun {
namespace {

struct GenerateOptions {
  std::string artifact, init, checkpoint, promptsFile;
  std::vector<std::string> prompts;
  int64_t maxNewTokens = 32, topK = 0, stop = -1, threads = 0;
  double temperature = 0; // 0: greedy
  uint64_t seed = 0;
  bool help = false;
};

void printHelp(const char *program, bool embedded) {
  std::printf(
      "usage: %s generate %s(--init W.safetensors | --checkpoint C)\n"
      "           (--prompt \"IDS\" ... | --prompts FILE) [options]\n"
      "\n"
      "Continues prompts of token ids with the program's logits function (artifacts\n"
      "for one device have it) and trained weights. Prints one line per prompt: the\n"
      "new token ids, separated by spaces.\n"
      "\n"
      "options:\n"
      "  --init FILE            weights (safetensors, Hugging Face names; as tgrun's)\n"
      "  --checkpoint PATH      or the parameters of a tgrun checkpoint (a file, or a\n"
      "                         multi-rank run's directory)\n"
      "  --prompt \"IDS\"         a prompt: token ids separated by spaces or commas\n"
      "                         (repeatable)\n"
      "  --prompts FILE         prompts, one per line\n"
      "  --max-new-tokens N     tokens to add to each prompt (default 32)\n"
      "  --temperature T        0 (default): greedy, the most likely token; > 0:\n"
      "                         sample from softmax(logits / T)\n"
      "  --top-k K              with a temperature, sample among the K most likely\n"
      "                         tokens only (default 0: all)\n"
      "  --seed S               seed of the sampling (default 0)\n"
      "  --stop ID              end a sequence after this token\n"
      "  --threads N            threads the forward pass runs on (default: the cores)\n"
      "  --help                 this text\n",
      program, embedded ? "" : "PROGRAM.tgx ");
}

/// "3 1 4" or "3,1,4" -> ids; false on anything else.
bool parseIds(const std::string &text, std::vector<int32_t> &ids) {
  std::string spaced = text;
  std::replace(spaced.begin(), spaced.end(), ',', ' ');
  std::istringstream in(spaced);
  std::string word;
  while (in >> word) {
    int64_t id;
    if (!parseInteger(word, 0, id) || id > INT32_MAX)
      return false;
    ids.push_back(int32_t(id));
  }
  return true;
}

int parseArguments(int argc, char **argv, bool embedded, GenerateOptions &o) {
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.compare(0, 2, "--") != 0) {
      positional.push_back(arg);
      continue;
    }
    if (arg == "--help") {
      o.help = true;
      continue;
    }
    std::string value;
    if (std::size_t eq = arg.find('='); eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg.resize(eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return usageError("generate: " + arg + " needs a value");
    }
    auto integer = [&](int64_t min, int64_t &out) {
      return parseInteger(value, min, out)
                 ? 0
                 : usageError("generate: " + arg + " needs an integer >= " +
                              std::to_string(min) + ", not '" + value + "'");
    };
    int status = 0;
    if (arg == "--init") o.init = value;
    else if (arg == "--checkpoint") o.checkpoint = value;
    else if (arg == "--prompt") o.prompts.push_back(value);
    else if (arg == "--prompts") o.promptsFile = value;
    else if (arg == "--max-new-tokens") status = integer(1, o.maxNewTokens);
    else if (arg == "--top-k") status = integer(0, o.topK);
    else if (arg == "--stop") status = integer(0, o.stop);
    else if (arg == "--threads") status = integer(1, o.threads);
    else if (arg == "--temperature") {
      char *end = nullptr;
      o.temperature = std::strtod(value.c_str(), &end);
      if (value.empty() || *end || !(o.temperature >= 0 && o.temperature < 1e6))
        return usageError("generate: --temperature needs a number >= 0, not '" + value + "'");
    } else if (arg == "--seed") {
      if (!parseUnsigned(value, o.seed))
        return usageError("generate: --seed needs a non-negative integer, not '" + value + "'");
    } else
      return usageError("generate: unknown option " + arg);
    if (status)
      return status;
  }
  if (o.help)
    return 0;
  if (embedded != positional.empty())
    return usageError(embedded ? "generate: this executable carries its own program"
                               : "generate: give one program (the .tgx file tgc wrote)");
  if (!embedded)
    o.artifact = positional[0];
  if (o.init.empty() == o.checkpoint.empty())
    return usageError("generate: give the weights with either --init or --checkpoint");
  if (o.prompts.empty() == o.promptsFile.empty())
    return usageError("generate: give the prompts with --prompt or --prompts FILE");
  if (o.topK && o.temperature == 0)
    return usageError("generate: --top-k samples, so it needs a --temperature > 0");
  return 0;
}

/// A prompts file larger than this is refused (prompts are token ids of
/// sequences the program's length bounds, one a line).
constexpr uint64_t kMaxPromptsFileBytes = uint64_t(1) << 30;

/// The prompts as token ids, each non-empty and in the vocabulary.
int readPrompts(const GenerateOptions &o, int64_t vocab,
                std::vector<std::vector<int32_t>> &prompts) {
  std::vector<std::string> lines = o.prompts;
  std::string source = "--prompt";
  if (!o.promptsFile.empty()) {
    // A regular file only (a FIFO would block the read), as every input.
    std::vector<uint8_t> bytes;
    std::string problem;
    bool opened = false;
    if (!runtime::readRegularFile(o.promptsFile, bytes, problem, opened, kMaxPromptsFileBytes))
      return error("generate: cannot read the prompts file " + o.promptsFile + " (" + problem +
                   "); pass a text file of token ids, one prompt a line");
    std::istringstream in(std::string(bytes.begin(), bytes.end()));
    for (std::string line; std::getline(in, line);)
      if (line.find_first_not_of(" \t\r") != std::string::npos)
        lines.push_back(line);
    source = o.promptsFile;
  }
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::vector<int32_t> ids;
    std::string where = source + (o.promptsFile.empty() ? " #" : " line ") + std::to_string(i + 1);
    if (!parseIds(lines[i], ids) || ids.empty())
      return error("generate: " + where + " is not a list of token ids ('" + lines[i] + "')");
    for (int32_t id : ids)
      if (id >= vocab)
        return error("generate: " + where + " has the token id " + std::to_string(id) +
                     ", outside the program's vocabulary of " + std::to_string(vocab));
    prompts.push_back(std::move(ids));
  }
  if (prompts.empty())
    return error("generate: " + source + " holds no prompt");
  return 0;
}

/// Picks the next token from one position's logits.
class Sampler {
public:
  Sampler(double temperature, int64_t topK, uint64_t seed)
      : temperature(temperature), topK(topK), random(seed) {}

  int32_t next(const float *logits, int64_t vocab) {
    if (temperature == 0)
      return int32_t(std::max_element(logits, logits + vocab) - logits);
    std::vector<int32_t> order(vocab);
    for (int64_t i = 0; i < vocab; ++i)
      order[i] = int32_t(i);
    int64_t kept = topK > 0 ? std::min(topK, vocab) : vocab;
    // The `kept` most likely first; ties by id, so the result does not
    // depend on the sort's implementation.
    std::partial_sort(order.begin(), order.begin() + kept, order.end(),
                      [&](int32_t a, int32_t b) {
                        return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
                      });
    double top = logits[order[0]];
    std::vector<double> weights(kept);
    double total = 0;
    for (int64_t i = 0; i < kept; ++i)
      total += weights[i] = std::exp((double(logits[order[i]]) - top) / temperature);
    // 53 random bits: the same draw from the same seed on every platform.
    double u = double(random() >> 11) * 0x1p-53 * total;
    for (int64_t i = 0; i < kept; ++i)
      if ((u -= weights[i]) < 0)
        return order[i];
    return order[kept - 1];
  }

private:
  double temperature;
  int64_t topK;
  std::mt19937_64 random;
};

/// Only artifacts for one device have the logits function: said before a
/// session tries to join the ranks such a program needs.
int checkHasLogits(const GenerateOptions &o, std::vector<uint8_t> bytes) {
  std::string source;
  if (int status = readVerifiedArtifact(o.artifact, bytes, source))
    return status;
  const tg::tgx::Program &program = *tg::tgx::GetProgram(bytes.data());
  if (tg::runtime::findFunction(program, "logits"))
    return 0;
  return error("generate: " + source + " (for " + tg::runtime::meshText(*program.mesh()) +
               ") has no 'logits' function; " + tg::runtime::kNoLogitsHint);
}

} // namespace

int generate(int argc, char **argv, const std::vector<uint8_t> &embedded,
             const char *programName) {
  GenerateOptions o;
  if (int status = parseArguments(argc, argv, !embedded.empty(), o))
    return status;
  if (o.help) {
    printHelp(programName, !embedded.empty());
    return 0;
  }
  if (int status = checkHasLogits(o, embedded))
    return status;
  int exitCode = 0;
  tg_session *raw = nullptr;
  if (!check(embedded.empty()
                 ? tg_session_create_from_file(o.artifact.c_str(), &raw)
                 : tg_session_create_from_memory(embedded.data(), embedded.size(),
                                                 programName, &raw),
             exitCode))
    return exitCode;
  std::unique_ptr<tg_session, SessionCloser> session(raw);
  if (o.threads)
    tg_set_num_threads(int(std::min<int64_t>(o.threads, 1 << 16)));
  tg_logits_shape shape;
  if (!check(tg_session_logits_shape(session.get(), &shape), exitCode))
    return exitCode;
  if (o.stop >= shape.vocab_size)
    return usageError("generate: --stop " + std::to_string(o.stop) +
                      " is outside the program's vocabulary of " +
                      std::to_string(shape.vocab_size));
  std::vector<std::vector<int32_t>> prompts;
  if (int status = readPrompts(o, shape.vocab_size, prompts))
    return status;
  int64_t position = 0;
  if (!check(o.init.empty()
                 ? tg_session_load_checkpoint(session.get(), o.checkpoint.c_str(), &position)
                 : tg_session_init_from_safetensors(session.get(), o.init.c_str()),
             exitCode))
    return exitCode;
  std::fprintf(stderr,
               "tgrun: generating %" PRId64 " tokens for %zu prompts (%s), %" PRId64
               " at a time, from %s\n",
               o.maxNewTokens, prompts.size(),
               o.temperature == 0 ? "greedy" : "sampled", shape.rows,
               (o.init.empty() ? o.checkpoint : o.init).c_str());

  Sampler sampler(o.temperature, o.topK, o.seed);
  const int64_t rows = shape.rows, seq = shape.seq_len, vocab = shape.vocab_size;
  std::vector<int32_t> tokens(std::size_t(rows * seq));
  std::vector<float> logits(std::size_t(rows * seq * vocab));
  for (std::size_t first = 0; first < prompts.size(); first += std::size_t(rows)) {
    std::size_t count = std::min<std::size_t>(std::size_t(rows), prompts.size() - first);
    std::vector<std::vector<int32_t>> sequences(prompts.begin() + first,
                                                prompts.begin() + first + count);
    std::vector<std::size_t> promptLength(count);
    std::vector<bool> done(count, false);
    for (std::size_t r = 0; r < count; ++r)
      promptLength[r] = sequences[r].size();
    for (int64_t n = 0; n < o.maxNewTokens; ++n) {
      // Each sequence's last `seq` tokens, from position 0, padded with 0.
      std::fill(tokens.begin(), tokens.end(), 0);
      std::vector<int64_t> last(count);
      for (std::size_t r = 0; r < count; ++r) {
        const std::vector<int32_t> &s = sequences[r];
        std::size_t window = std::min<std::size_t>(s.size(), std::size_t(seq));
        std::copy(s.end() - std::ptrdiff_t(window), s.end(), tokens.begin() + r * seq);
        last[r] = int64_t(window) - 1;
      }
      if (!check(tg_session_logits(session.get(), tokens.data(), logits.data()), exitCode))
        return exitCode;
      bool any = false;
      for (std::size_t r = 0; r < count; ++r) {
        if (done[r])
          continue;
        int32_t id = sampler.next(&logits[std::size_t((int64_t(r) * seq + last[r]) * vocab)],
                                  vocab);
        sequences[r].push_back(id);
        done[r] = id == o.stop;
        any |= !done[r];
      }
      if (!any)
        break;
    }
    for (std::size_t r = 0; r < count; ++r) {
      for (std::size_t i = promptLength[r]; i < sequences[r].size(); ++i)
        std::printf(i == promptLength[r] ? "%d" : " %d", sequences[r][i]);
      std::printf("\n");
    }
  }
  return 0;
}

} // namespace tg::tgrun
