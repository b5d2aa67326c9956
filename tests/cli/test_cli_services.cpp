// `lrrt run --backend hsa` on the stand-in libhsa with kernels that ask for
// runtime services (tests/kernels/services): a kernel needing a service lrrt
// does not provide is an input error (exit 2) naming the kernel and the
// service, before anything runs; OpenCL printf output reaches lrrt's stderr.
#if defined(LRRT_CLI_HSA_STANDIN) && defined(LRRT_CLI_HSA_SERVICES_DIR)
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "cli_support.hpp"

using namespace cli_test;

namespace {

const fs::path kServices = LRRT_CLI_HSA_SERVICES_DIR;

// The stand-in for one test, finding the services kernels' host builds.
struct StandinEnv {
  StandinEnv() {
    setenv("LRRT_HSA_LIBRARY", LRRT_CLI_HSA_STANDIN, 1);
    setenv("LRRT_HSA_STANDIN_KERNEL_DIR", (kKernels.string() + ":" + kServices.string()).c_str(), 1);
    setenv("LRRT_WAIT_TIMEOUT_MS", "20000", 1);
  }
  ~StandinEnv() {
    unsetenv("LRRT_HSA_LIBRARY");
    unsetenv("LRRT_HSA_STANDIN_KERNEL_DIR");
    unsetenv("LRRT_WAIT_TIMEOUT_MS");
  }
};

// A manifest running `kernel` of `code_object` with (int* out, int n[, float f]).
json services_manifest(const std::string& code_object, const std::string& kernel, bool with_float) {
  json m = json::parse(R"({
    "lrrt_manifest": 1,
    "kernel": "",
    "buffers": [{"name": "out", "type": "i32", "count": 4, "init": "zeros"}],
    "args": [{"buffer": "out"}, {"type": "i32", "value": 7}],
    "launch": {"workgroup_size": [4], "workgroup_count": [1]},
    "warmup": 0,
    "iterations": 2,
    "verify": [{"buffer": "out", "expected": {"values": [7, 7, 7, 7]}}]
  })");
  m["code_object"] = {{"hsa", (kServices / code_object).string()}};
  m["kernel"] = kernel;
  if (with_float) m["args"].push_back({{"type", "f32"}, {"value", 2.5}});
  return m;
}

Result run_hsa(const TempDir& dir, const json& manifest) {
  write_text(dir / "m.json", manifest.dump());
  return run_lrrt(dir, {"run", "--backend", "hsa", "--format", "json", "-o", (dir / "out.json").string(),
                        (dir / "m.json").string()});
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("run: a kernel that needs a hostcall buffer (hidden_hostcall_buffer, used by HIP printf and hostcall) exits 2 naming it") {
  StandinEnv env;
  TempDir dir;
  const Result r = run_hsa(dir, services_manifest("services_hip.gfx1100.hsaco", "services_hostcall", false));
  CHECK(r.rc == 2);
  CHECK(r.err.find("m.json: /kernel: ") != std::string::npos);
  CHECK(r.err.find("kernel 'services_hostcall' needs a hostcall buffer (hidden_hostcall_buffer, used by HIP printf and "
                   "hostcall); lrrt does not provide it") != std::string::npos);
  CHECK(r.err.find("lrrt: error: ") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "out.json"));
  // The same for a device heap and for an -O0 build, which lists every service.
  const Result heap = run_hsa(dir, services_manifest("services_hip.gfx1100.hsaco", "services_heap", false));
  CHECK(heap.rc == 2);
  CHECK(heap.err.find("needs a device heap (hidden_heap_v1") != std::string::npos);
  const Result o0 = run_hsa(dir, services_manifest("services_hip_o0.gfx1100.hsaco", "services_plain", false));
  CHECK(o0.rc == 2);
  CHECK(o0.err.find("lrrt does not provide them") != std::string::npos);
  CHECK(o0.err.find("-O1 or higher") != std::string::npos);
  // The kernel of the same code object that needs nothing runs and verifies.
  const Result plain = run_hsa(dir, services_manifest("services_hip.gfx1100.hsaco", "services_plain", false));
  CHECK_MESSAGE(plain.rc == 0, plain.err);
}

TEST_CASE("run: an OpenCL printf kernel runs on hsa and its lines reach lrrt's stderr, once per launch") {
  StandinEnv env;
  TempDir dir;
  const Result r = run_hsa(dir, services_manifest("services_printf.gfx1100.hsaco", "services_printf", true));
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const std::string line =
      "services_printf: n=7 f=2.500 hex=0x7 c=Q s=str:a:b wide=7000000049 v=7,8,-7,7 100%\n";
  // The verified launch and two timed ones; nothing on stdout (the results).
  CHECK(count_of(r.err, line) == 3);
  CHECK(r.out.find("n=7 f=2.500") == std::string::npos);
  CHECK(r.err.find("lrrt: warning") == std::string::npos);
  const json out = json::parse(read_text(dir / "out.json"));
  CHECK(out["runs"][0]["verification"]["status"] == "passed");
}

TEST_CASE("run: a sequence of OpenCL printf kernels prints on hsa eagerly and in each replay") {
  StandinEnv env;
  TempDir dir;
  json m = json::parse(R"({
    "lrrt_manifest": 1,
    "kernels": {"hello": {"kernel": "services_printf"}},
    "buffers": [{"name": "out", "type": "i32", "count": 4, "init": "zeros"}],
    "sequence": [
      {"name": "first", "kernel": "hello",
       "args": [{"buffer": "out", "access": "write"}, {"type": "i32", "value": 3}, {"type": "f32", "value": 0.5}],
       "launch": {"workgroup_size": [4], "workgroup_count": [1]}},
      {"name": "second", "kernel": "hello",
       "args": [{"buffer": "out", "access": "write"}, {"type": "i32", "value": 4}, {"type": "f32", "value": 1.5}],
       "launch": {"workgroup_size": [4], "workgroup_count": [1]}}
    ],
    "warmup": 0,
    "iterations": 1,
    "verify": [{"buffer": "out", "expected": {"values": [4, 4, 4, 4]}}]
  })");
  m["kernels"]["hello"]["code_object"] = {{"hsa", (kServices / "services_printf.gfx1100.hsaco").string()}};
  const Result r = run_hsa(dir, m);
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const std::string first = "services_printf: n=3 f=0.500 hex=0x3 c=Q s=str:a:b wide=3000000021 v=3,4,-3,7 100%\n";
  const std::string second = "services_printf: n=4 f=1.500 hex=0x4 c=Q s=str:a:b wide=4000000028 v=4,5,-4,7 100%\n";
  // Every run of the sequence, eager or replayed, prints both lines in order.
  const size_t runs = count_of(r.err, first + second);
  CHECK(runs >= 2);
  CHECK(count_of(r.err, first) == runs);
  CHECK(count_of(r.err, second) == runs);
  CHECK(r.err.find("lrrt: warning") == std::string::npos);
}
#endif
