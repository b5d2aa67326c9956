// `lrrt run --backend hsa` on the stand-in when the device fails: a
// dispatch that never completes, a hardware exception (at the end).
//
// `lrrt run --backend hsa --timeout 1` on a dispatch that never completes:
// the stand-in runs the kernel but never decrements its completion signal
// (LRRT_HSA_STANDIN_FAULT=lost_signal:<kernel>). The user's limit must bound
// the hsa backend's waits like every other backend's (issue 9: it used its
// own 2-minute limit): exit 3 naming the kernel, no result file, and back
// well before the old limit. ctest passes the stand-in's environment.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Run {
  int rc = -1;
  std::string err;
  double seconds = 0;
};

// Runs lrrt with `args` and `extra_env` added to this process's environment;
// stderr is captured in `dir`.
Run run_lrrt(const fs::path& dir, std::vector<std::string> args, const std::vector<std::string>& extra_env) {
  args.insert(args.begin(), LRRT_CLI_BINARY);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings(extra_env);
  for (char** e = environ; *e; ++e) env_strings.emplace_back(*e);
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);

  const fs::path err = dir / ".stderr";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const auto start = std::chrono::steady_clock::now();
  pid_t pid = 0;
  int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  REQUIRE_MESSAGE(rc == 0, "cannot start " << LRRT_CLI_BINARY);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  Run r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  REQUIRE_MESSAGE(WIFEXITED(status), "lrrt did not exit normally (crashed?)");
  r.rc = WEXITSTATUS(status);
  r.err = read_text(err);
  fs::remove(err);
  return r;
}

struct TempDir {
  fs::path path;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "lrrt-hsa-timeout-XXXXXX").string();
    REQUIRE(::mkdtemp(t.data()) != nullptr);
    path = t;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

}  // namespace

TEST_CASE("hsa: a dispatch that never completes exits 3 after --timeout, naming the kernel") {
  REQUIRE_MESSAGE(std::getenv("LRRT_HSA_LIBRARY"), "run through ctest: it sets the stand-in's environment");
  TempDir dir;
  const fs::path out = dir.path / "out.json";
  Run r = run_lrrt(dir.path,
                   {"run", LRRT_SOURCE_DIR "/manifests/saxpy.json", "--backend", "hsa", "--timeout", "1",
                    "--iterations", "2", "--warmup", "1", "-q", "-o", out.string()},
                   {"LRRT_HSA_STANDIN_FAULT=lost_signal:saxpy"});
  INFO("stderr: " << r.err);
  CHECK(r.rc == 3);
  CHECK(r.err.find("'saxpy'") != std::string::npos);
  CHECK(r.err.find("did not finish within 1000 ms") != std::string::npos);
  CHECK_FALSE(fs::exists(out));
  CHECK(fs::is_empty(dir.path));  // no temporary left behind either
  // Generous: the point is that it returns, long before the old 2-minute limit.
  CHECK(r.seconds < 30);
}

TEST_CASE("hsa: the same manifest without the fault passes (the fault is what hangs)") {
  REQUIRE(std::getenv("LRRT_HSA_LIBRARY"));
  TempDir dir;
  const fs::path out = dir.path / "out.json";
  // A limit that only says "it returned": under ThreadSanitizer, beside
  // other tests, one launch of 1M elements on the stand-in can take over 1 s.
  Run r = run_lrrt(dir.path,
                   {"run", LRRT_SOURCE_DIR "/manifests/saxpy.json", "--backend", "hsa", "--timeout", "120",
                    "--iterations", "2", "--warmup", "1", "-q", "-o", out.string()},
                   {"LRRT_HSA_STANDIN_FAULT="});
  INFO("stderr: " << r.err);
  CHECK(r.rc == 0);
  CHECK(fs::exists(out));
}

// Issue 38: ROCr aborts the process on HSA_AMD_GPU_HW_EXCEPTION_EVENT (a GPU
// reset after a hang, an ECC error) unless a system event handler claims it.
// The stand-in raises one instead of running saxpy (and, like ROCr, aborts
// when no handler claims it): lrrt claims it, and the run ends with exit 3
// saying the device is lost, no result file, no abort.
TEST_CASE("hsa: a hardware exception (GPU hang reset) exits 3 saying the device is lost") {
  REQUIRE(std::getenv("LRRT_HSA_LIBRARY"));
  TempDir dir;
  const fs::path out = dir.path / "out.json";
  Run r = run_lrrt(dir.path,
                   {"run", LRRT_SOURCE_DIR "/manifests/saxpy.json", "--backend", "hsa", "--timeout", "60",
                    "--iterations", "2", "--warmup", "1", "-q", "-o", out.string()},
                   {"LRRT_HSA_STANDIN_FAULT=hw_exception:saxpy"});
  INFO("stderr: " << r.err);
  CHECK(r.rc == 3);
  CHECK(r.err.find("is lost") != std::string::npos);
  CHECK(r.err.find("GPU hang") != std::string::npos);
  CHECK(r.err.find("HSA_AMD_GPU_HW_EXCEPTION_EVENT") != std::string::npos);
  CHECK_FALSE(fs::exists(out));
  CHECK(fs::is_empty(dir.path));
}
