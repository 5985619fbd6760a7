// tgrun end to end on the fixture program: metrics, checkpoints, resuming
// (identical to an uninterrupted run), embedded executables and errors.
#include "TestSupport.h"
#include "tg/runtime/EmbeddedArtifact.h"
#include "tg/runtime/Safetensors.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>

using namespace tg;

namespace {

struct Result {
  int exitCode;
  std::string out, err;
};

std::string readText(const std::string &path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Runs `program` with `args` (shell words, already quoted where needed).
Result run(const std::string &program, const std::string &args) {
  std::string out = test::scratchPath("stdout"), err = test::scratchPath("stderr");
  int status = std::system((program + " " + args + " >" + out + " 2>" + err).c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, readText(out), readText(err)};
}

/// The metrics lines without the timing fields, which differ run to run.
std::vector<std::string> metricsWithoutTimes(const std::string &path) {
  std::vector<std::string> lines;
  std::istringstream in(readText(path));
  for (std::string line; std::getline(in, line);)
    lines.push_back(line.substr(0, line.find(", \"step_ms\"")));
  return lines;
}

std::vector<std::string> listDirectory(const std::string &dir) {
  std::vector<std::string> names;
  if (DIR *d = ::opendir(dir.c_str())) {
    while (dirent *e = ::readdir(d))
      if (e->d_name[0] != '.')
        names.push_back(e->d_name);
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

class Tgrun : public ::testing::Test {
protected:
  void SetUp() override {
    artifact = test::scratchPath("model.tgx");
    std::vector<uint8_t> bytes = test::build(test::fixtureSpec());
    std::ofstream(artifact, std::ios::binary)
        .write(reinterpret_cast<const char *>(bytes.data()), std::streamsize(bytes.size()));
    data = test::scratchPath("tokens.bin");
    std::ofstream tokens(data, std::ios::binary);
    for (int i = 0; i < 50; ++i)
      tokens.put(char(i * 7 % 5)).put(0);
  }
  std::string artifact, data;
};

TEST_F(Tgrun, TrainsAndWritesMetrics) {
  std::string metrics = test::scratchPath("metrics.jsonl"), weights = test::scratchPath("w.safetensors");
  Result r = run(TG_TGRUN, artifact + " --data " + data + " --steps 6 --metrics " + metrics +
                               " --save-weights " + weights);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("step 1/6  loss "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("step 6/6  loss "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tgrun: trained steps 1 to 6 in "), std::string::npos) << r.out;
  std::vector<std::string> lines = metricsWithoutTimes(metrics);
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(lines[0].rfind("{\"step\": 1, \"loss\": ", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find("\"grad_norm\": 2, \"lr\": 0.10000000000000001"), std::string::npos)
      << lines[0];
  EXPECT_EQ(listDirectory(weights.substr(0, weights.rfind('/'))).empty(), false);
}

TEST_F(Tgrun, ResumingMatchesAnUninterruptedRun) {
  std::string straight = test::scratchPath("straight.jsonl"), split = test::scratchPath("split.jsonl");
  std::string dir = test::scratchPath("checkpoints");
  ASSERT_EQ(run(TG_TGRUN, artifact + " --data " + data + " --steps 7 --metrics " + straight)
                .exitCode,
            0);
  Result first = run(TG_TGRUN, artifact + " --data " + data + " --steps 4 --metrics " + split +
                                   " --checkpoint-dir " + dir + " --checkpoint-every 1");
  ASSERT_EQ(first.exitCode, 0) << first.err;
  EXPECT_EQ(listDirectory(dir), (std::vector<std::string>{"step-00000003.safetensors",
                                                           "step-00000004.safetensors"}));
  Result second = run(TG_TGRUN, artifact + " --data " + data + " --steps 7 --metrics " + split +
                                    " --checkpoint-dir " + dir + " --resume");
  ASSERT_EQ(second.exitCode, 0) << second.err;
  EXPECT_NE(second.out.find("resumed from " + dir + "/step-00000004.safetensors (step 4)"),
            std::string::npos)
      << second.out;
  EXPECT_EQ(metricsWithoutTimes(split), metricsWithoutTimes(straight));
  EXPECT_EQ(listDirectory(dir), (std::vector<std::string>{"step-00000004.safetensors",
                                                           "step-00000007.safetensors"}));

  // A corrupt newest checkpoint stops the resume instead of silently using
  // the one before it.
  std::string newest = dir + "/step-00000007.safetensors";
  std::string bytes = readText(newest);
  bytes.back() ^= 1;
  std::ofstream(newest, std::ios::binary) << bytes;
  Result corrupt = run(TG_TGRUN, artifact + " --data " + data + " --steps 9 --checkpoint-dir " +
                                     dir + " --resume");
  EXPECT_EQ(corrupt.exitCode, 1);
  EXPECT_NE(corrupt.err.find("tgrun: error: cannot resume from the newest checkpoint: " + newest +
                             ": checksum mismatch"),
            std::string::npos)
      << corrupt.err;
}

TEST_F(Tgrun, EmbeddedExecutableTakesTheSameFlags) {
  std::vector<uint8_t> bytes = test::build(test::fixtureSpec());
  std::string exe = test::scratchPath("model-exe"), error;
  ASSERT_TRUE(runtime::appendEmbeddedArtifact(TG_TGRUN, bytes, exe, error)) << error;
  Result r = run(exe, "--data " + data + " --steps 2");
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("step 2/2"), std::string::npos) << r.out;
  Result extra = run(exe, artifact + " --data " + data);
  EXPECT_EQ(extra.exitCode, 2);
  EXPECT_NE(extra.err.find("this executable carries its own program"), std::string::npos);
}

TEST_F(Tgrun, ReportsErrors) {
  Result r = run(TG_TGRUN, artifact + " --data /nonexistent.bin");
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_EQ(r.err, "tgrun: error: /nonexistent.bin: cannot open the token file (No such file or "
                   "directory); check the path\n");
  r = run(TG_TGRUN, artifact + " --data " + data + " --steps many");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_EQ(r.err, "tgrun: error: --steps needs an integer >= 0, not 'many'; see --help\n");
  r = run(TG_TGRUN, artifact + " --data " + data + " --resume");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("--resume needs --checkpoint-dir"), std::string::npos);
  r = run(TG_TGRUN, artifact + " --data " + data + " --init /nonexistent.safetensors");
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("tgrun: error: /nonexistent.safetensors: cannot open"), std::string::npos);
  r = run(TG_TGRUN, "--help");
  EXPECT_EQ(r.exitCode, 0);
  EXPECT_NE(r.out.find("--steps N              total steps of the run"), std::string::npos);
}

/// The tensors in which two safetensors files differ ("metadata" if only
/// that does), or "" when the files are identical.
std::string differingTensors(const std::string &a, const std::string &b) {
  if (test::readFile(a) == test::readFile(b))
    return "";
  safetensors::File fileA, fileB;
  std::string error, names;
  if (!safetensors::readFile(a, fileA, error) || !safetensors::readFile(b, fileB, error))
    return error;
  for (const safetensors::Tensor &t : fileA.tensors)
    if (const safetensors::Tensor *u = fileB.find(t.name);
        !u || u->shape != t.shape || u->data != t.data)
      names += (names.empty() ? "" : ", ") + t.name;
  return names.empty() ? "metadata" : names;
}

// Tensor parallelism on 2 ranks (tgrun -n 2, through Open MPI's mpirun)
// against the program of one device: each rank initialises its part of the
// same values, saving gathers the shards to rank 0, which alone writes the
// same weights and checkpoints, and each program resumes from the other's
// checkpoints.
TEST_F(Tgrun, TensorParallelRunMatchesOneDevice) {
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "mpirun (Open MPI) is not installed";
  auto program = [](const test::ProgramSpec &spec, const std::string &name) {
    std::string path = test::scratchPath(name);
    test::writeFile(path, test::build(spec));
    return path;
  };
  const std::string single = program(test::tensorParallelSpec(1, false), "single.tgx");
  const std::string split = "-n 2 " + program(test::tensorParallelSpec(2, true), "tp2.tgx");
  struct Outputs {
    std::string dir, weights, metrics;
  };
  auto train = [&](const std::string &which, const std::string &tag, const std::string &extra) {
    Outputs o{test::scratchPath(tag + "-checkpoints"), test::scratchPath(tag + ".safetensors"),
              test::scratchPath(tag + ".jsonl")};
    Result r = run(TG_TGRUN, which + " --data " + data + " --steps 4 --checkpoint-every 2" +
                                 " --checkpoint-dir " + o.dir + " --save-weights " + o.weights +
                                 " --metrics " + o.metrics + extra);
    EXPECT_EQ(r.exitCode, 0) << tag << ": " << r.err;
    return o;
  };
  Outputs one = train(single, "single", ""), two = train(split, "tp2", "");
  // One rank writes files of full tensors; two ranks write directories in
  // which each wrote its shard, with an index.
  const std::vector<std::string> files = {"step-00000002.safetensors",
                                          "step-00000004.safetensors"};
  const std::vector<std::string> directories = {"step-00000002", "step-00000004"};
  EXPECT_EQ(listDirectory(one.dir), files);
  EXPECT_EQ(listDirectory(two.dir), directories);
  for (const std::string &name : directories)
    EXPECT_EQ(listDirectory(two.dir + "/" + name),
              (std::vector<std::string>{"checkpoint.index.json", "rank-00000.safetensors",
                                        "rank-00001.safetensors"}));
  EXPECT_EQ(differingTensors(two.weights, one.weights), "");
  EXPECT_EQ(metricsWithoutTimes(two.metrics), metricsWithoutTimes(one.metrics));

  // Resuming at step 2 on the other mesh ends in the same state, and the
  // step-4 checkpoint is the one written without the move.
  struct Move {
    std::string which, from, name, to;
  };
  for (const Move &m : {Move{split, one.dir, files[0], directories[1]},
                        Move{single, two.dir, directories[0], files[1]}}) {
    std::string dir = test::scratchPath("resume-checkpoints");
    ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
    std::filesystem::copy(m.from + "/" + m.name, dir + "/" + m.name,
                          std::filesystem::copy_options::recursive);
    std::string weights = test::scratchPath("resumed.safetensors");
    Result r = run(TG_TGRUN, m.which + " --data " + data + " --steps 4 --checkpoint-dir " + dir +
                                 " --resume --save-weights " + weights);
    ASSERT_EQ(r.exitCode, 0) << m.which << ": " << r.err;
    EXPECT_NE(r.out.find("resumed from " + dir + "/" + m.name + " (step 2)"), std::string::npos)
        << r.out;
    EXPECT_EQ(differingTensors(weights, one.weights), "") << m.which;
    const std::string &reference = m.to == files[1] ? one.dir : two.dir;
    if (m.to == files[1]) {
      EXPECT_EQ(differingTensors(dir + "/" + m.to, reference + "/" + m.to), "") << m.which;
    } else {
      for (const std::string &file : listDirectory(reference + "/" + m.to))
        EXPECT_EQ(test::readFile(dir + "/" + m.to + "/" + file),
                  test::readFile(reference + "/" + m.to + "/" + file))
            << m.to << "/" << file;
    }
  }
}

/// Occurrences of `needle` in `text`.
std::size_t countOf(const std::string &text, const std::string &needle) {
  std::size_t n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
    ++n;
  return n;
}

TEST_F(Tgrun, ProfileWritesATraceAndATable) {
  std::string trace = test::scratchPath("trace.json");
  Result r = run(TG_TGRUN, artifact + " --data " + data + " --steps 3 --profile " + trace);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  std::string json = readText(trace);
  EXPECT_EQ(json.rfind("{\"traceEvents\":[", 0), 0u) << json;
  EXPECT_EQ(countOf(json, "\"ph\":\"X\""), 3u * 4u) << json; // 4 commands a step
  EXPECT_EQ(countOf(json, "\"name\":\"matmul\""), 3u) << json;
  EXPECT_NE(json.find("\"displayTimeUnit\":\"ms\"}"), std::string::npos) << json;
  EXPECT_NE(r.out.find("tgrun: profiled steps 1 to 3 (4 commands a step"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("total ms  share %  calls    mean us     GB/s  TFLOP/s  kind    command"),
            std::string::npos)
      << r.out;
}

TEST_F(Tgrun, BadProfilePathFailsBeforeTraining) {
  std::string dir = test::scratchPath("profile-dir");
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  Result r = run(TG_TGRUN, artifact + " --data " + data + " --steps 3 --profile " + dir);
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_EQ(r.err, "tgrun: error: cannot open the profile file (" + dir +
                       "): Is a directory; pass a writable --profile path\n");
  EXPECT_EQ(r.out.find("step 1/3"), std::string::npos) << r.out;
}

} // namespace
