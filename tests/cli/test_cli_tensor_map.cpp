// `lrrt run` with tensor map arguments off cuda: exit 2 naming the argument
// (a tensor map needs the cuda backend on sm_90+), for a plain manifest, a
// sequence step and the Triton TMA fixture; a malformed tensor map is exit 2
// naming its field.
#include <doctest/doctest.h>

#include <string>

#include "cli_support.hpp"

using namespace cli_test;

namespace {

json tensor_map_manifest() {
  return json::parse(R"({
    "lrrt_manifest": 1,
    "code_object": "@kernels/saxpy.*",
    "kernel": "saxpy",
    "buffers": [{"name": "a", "type": "f32", "shape": [64, 64], "init": "zeros"},
                {"name": "y", "type": "f32", "count": 64, "init": "zeros"}],
    "args": [{"name": "scale", "type": "f32", "value": 1},
             {"buffer": "y"},
             {"name": "desc", "tensor_map": {"buffer": "a", "box": [8, 32]}}],
    "launch": {"workgroup_size": [64], "global_size": [64]},
    "verify": {"skip": "refused before it runs"}
  })");
}

}  // namespace

TEST_CASE("lrrt run: a tensor map on host is exit 2 naming the argument") {
  TempDir dir;
  write_text(dir / "m.json", tensor_map_manifest().dump());
  const Result r = run_manifest(dir, dir / "m.json");
  CHECK(r.rc == 2);
  CHECK(r.err.find("/args/2") != std::string::npos);
  CHECK(r.err.find("'desc': a tensor map needs the cuda backend on sm_90+") != std::string::npos);
}

TEST_CASE("lrrt run: a malformed tensor map is exit 2 naming its field") {
  TempDir dir;
  json m = tensor_map_manifest();
  m["args"][2]["tensor_map"]["box"] = {8, 300};
  write_text(dir / "m.json", m.dump());
  const Result r = run_manifest(dir, dir / "m.json");
  CHECK(r.rc == 2);
  CHECK(r.err.find("/args/2/tensor_map/box/1") != std::string::npos);
}

TEST_CASE("lrrt run: the Triton TMA fixture on host is exit 2 naming the descriptor") {
  TempDir dir;
  const Result r = run_manifest(dir, kSource / "tests/triton/tma_add/manifest.json");
  CHECK(r.rc == 2);
  CHECK(r.err.find("/args/a_desc") != std::string::npos);
  CHECK(r.err.find("a tensor map needs the cuda backend on sm_90+") != std::string::npos);
}

TEST_CASE("lrrt init: a Triton TMA entry gives tensor_map arguments and leaves the shape and stride parameters to lrrt") {
  TempDir dir;
  const Result init = run_lrrt(dir, {"init", (kSource / "tests/triton/entries/sm_90/tma_add_kernel").string(), "-o",
                                     (dir / "m.json").string()});
  REQUIRE(init.rc == 0);
  const json m = json::parse(read_text(dir / "m.json"));
  CHECK(m["args"]["a_desc"]["tensor_map"]["buffer"].is_string());
  CHECK(m["args"]["b_desc"]["tensor_map"]["buffer"].is_string());
  CHECK_FALSE(m["args"].contains("a_desc.shape0"));
  // It parses: the only refusal on host is the backend's.
  const Result r = run_manifest(dir, dir / "m.json");
  CHECK(r.rc == 2);
  CHECK(r.err.find("a tensor map needs the cuda backend on sm_90+") != std::string::npos);
}

TEST_CASE("lrrt run and plan: a tensor map in a sequence step on host is exit 2 naming the step's argument") {
  TempDir dir;
  json m = json::parse(R"({
    "lrrt_manifest": 1,
    "kernels": {"k": {"code_object": "@kernels/saxpy.*", "kernel": "saxpy"}},
    "buffers": [{"name": "a", "type": "f32", "shape": [64, 64], "init": "zeros"},
                {"name": "y", "type": "f32", "count": 64, "init": "zeros"}],
    "sequence": [{"name": "first", "kernel": "k",
                  "args": [{"name": "scale", "type": "f32", "value": 1}, {"buffer": "y"},
                           {"name": "desc", "tensor_map": {"buffer": "a", "box": [8, 32]}}],
                  "launch": {"workgroup_size": [64], "global_size": [64]}}],
    "verify": {"skip": "refused before it runs"}
  })");
  write_text(dir / "m.json", m.dump());
  for (const char* command : {"run", "plan"}) {
    CAPTURE(command);
    const Result r = run_lrrt(dir, {command, "--backend", "host", "--kernel-dir", kKernels.string(), "-q", (dir / "m.json").string()});
    CHECK(r.rc == 2);
    CHECK(r.err.find("/sequence/0/args/2") != std::string::npos);
    CHECK(r.err.find("step \"first\"") != std::string::npos);
    CHECK(r.err.find("'desc': a tensor map needs the cuda backend on sm_90+") != std::string::npos);
  }
}
