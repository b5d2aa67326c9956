// Helpers of the end-to-end tests: run `lrrt` as a child process in a fresh
// temporary folder and check exit codes, messages and left-over files.
#pragma once

#include <doctest/doctest.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace fs = std::filesystem;
using nlohmann::json;

namespace cli_test {

const fs::path kBinary = LRRT_CLI_BINARY;
const fs::path kKernels = LRRT_CLI_KERNEL_DIR;
const fs::path kSource = LRRT_CLI_SOURCE_DIR;

struct TempDir {
  fs::path path;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "lrrt-cli-XXXXXX").string();
    REQUIRE(::mkdtemp(t.data()) != nullptr);
    path = t;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  fs::path operator/(const std::string& name) const { return path / name; }
  // Names in the folder, for "nothing was left behind" checks.
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path)) out.push_back(e.path().filename().string());
    return out;
  }
};

inline std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_text(const fs::path& p, const std::string& s) {
  std::ofstream out(p, std::ios::binary);
  out << s;
}

// The version-1 .npy header numpy writes for `dict` (any text: the hostile
// tests pass bad ones): magic, version, the header's length, the dict padded
// with spaces so that the data starts at a multiple of 64 bytes, a newline.
inline std::string npy_header(const std::string& dict) {
  std::string h = dict;
  while ((10 + h.size() + 1) % 64) h += ' ';
  h += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(h.size() & 0xff);
  out += static_cast<char>(h.size() >> 8);
  return out + h;
}

// A .npy file of one dimension: count elements of dtype `descr`, `bytes` of `data`.
inline void write_npy(const fs::path& p, const std::string& descr, size_t count, const void* data, size_t bytes) {
  std::string out =
      npy_header("{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + std::to_string(count) + ",), }");
  out.append(static_cast<const char*>(data), bytes);
  write_text(p, out);
}

inline void write_npy(const fs::path& p, const std::vector<float>& v) { write_npy(p, "<f4", v.size(), v.data(), v.size() * 4); }

struct Result {
  int rc = -1;
  std::string out, err;
};

// Runs lrrt with args; stdout and stderr go to files in dir.
inline Result run_lrrt(const TempDir& dir, const std::vector<std::string>& args) {
  std::vector<std::string> argv_s = {kBinary.string()};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  const fs::path out = dir / ".stdout", err = dir / ".stderr";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  REQUIRE_MESSAGE(rc == 0, "cannot start " << kBinary);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  Result r;
  REQUIRE_MESSAGE(WIFEXITED(status), "lrrt did not exit normally (crashed?)");
  r.rc = WEXITSTATUS(status);
  r.out = read_text(out);
  r.err = read_text(err);
  fs::remove(out);
  fs::remove(err);
  return r;
}

// `lrrt run` on host with short timing, results to dir/out.json.
inline Result run_manifest(const TempDir& dir, const fs::path& manifest, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"run",         "--backend", "host", "--kernel-dir", kKernels.string(), "--iterations", "2",
                                   "--warmup",    "1",         "-q",   "-o",           (dir / "out.json").string()};
  args.insert(args.end(), extra.begin(), extra.end());
  args.push_back(manifest.string());
  return run_lrrt(dir, args);
}

// A host kernel that never returns (tests/kernels/error_kernels): the
// timeout tests' hang.
inline json hang_manifest() {
  return json::parse(R"({
    "lrrt_manifest": 1,
    "code_object": {"host": ")" + std::string(LRRT_CLI_ERROR_KERNELS) + R"("},
    "kernel": "spin_forever",
    "buffers": [{"name": "flag", "type": "u32", "count": 1, "init": "zeros"}],
    "args": [{"buffer": "flag"}],
    "launch": {"workgroup_size": [1], "workgroup_count": [1]},
    "verify": {"skip": "the kernel never returns"}
  })");
}

// A small valid saxpy manifest; tests break one thing at a time. The
// tolerance is manifests/saxpy.json's: the kernel rounds a*x+y in float, the
// reference is exact, so results near 0 differ by about an ulp of the inputs.
inline json saxpy_manifest(uint32_t n = 1000) {
  return json::parse(R"({
    "lrrt_manifest": 1,
    "code_object": {"host": "@kernels/saxpy.host.so", "hsa": "@kernels/saxpy.{arch}.hsaco"},
    "kernel": "saxpy",
    "buffers": [
      {"name": "x", "type": "f32", "count": 1000, "init": {"random": {"min": -1, "max": 1}}},
      {"name": "y", "type": "f32", "count": 1000, "init": {"random": {"min": -1, "max": 1}}}
    ],
    "args": [
      {"type": "f32", "value": 2.5},
      {"buffer": "x"},
      {"buffer": "y"},
      {"type": "u32", "value": {"count_of": "y"}}
    ],
    "launch": {"workgroup_size": [64], "global_size": [{"count_of": "y"}]},
    "verify": [{"buffer": "y", "expected": {"reference": "saxpy"}, "rtol": 1e-5, "atol": 1e-6}]
  })")
      .patch(json::array({{{"op", "replace"}, {"path", "/buffers/0/count"}, {"value", n}},
                          {{"op", "replace"}, {"path", "/buffers/1/count"}, {"value", n}}}));
}

inline fs::path write_manifest(const TempDir& dir, const std::string& name, const json& m) {
  fs::path p = dir / name;
  write_text(p, m.dump(2));
  return p;
}

// Checks an error run: exit code, message fragments, and no result file or
// temporary left in the folder.
inline void expect_error(const TempDir& dir, const Result& r, int rc, const std::vector<std::string>& fragments) {
  INFO("stderr: " << r.err);
  CHECK(r.rc == rc);
  for (const auto& f : fragments) CHECK_MESSAGE(r.err.find(f) != std::string::npos, "missing \"" << f << "\"");
  CHECK_FALSE(fs::exists(dir / "out.json"));
  for (const auto& e : dir.entries()) CHECK_MESSAGE(e.find(".tmp.") == std::string::npos, "temporary left: " << e);
}

}  // namespace cli_test
