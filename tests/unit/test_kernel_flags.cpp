// LR_KERNEL_WAITS_FOR_PRODUCER (programmatic dependent launch, cuda sm_90+):
// set and read through the C ABI, unknown bits refused; on host and the hsa
// stand-in accepted with no effect (a chain of flagged rmw kernels is exact,
// no edge is programmatic, a replay bound is reported where kept); the
// manifest field, per sequence kernel, and from a Triton entry's launch_pdl.
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lrrt/bundle.hpp"
#include "lrrt/lrrt.hpp"
#include "replay_test_support.hpp"

namespace {

using namespace lrrt::test;

struct FlagRmwArgs {
  uint32_t* counter;
  uint32_t n;
  uint32_t spin;
};

nlohmann::json flags_manifest() {
  return nlohmann::json::parse(R"({
    "lrrt_manifest": 1, "code_object": "k.so", "kernel": "k",
    "buffers": [{"name": "x", "type": "u32", "count": 64}],
    "args": [{"buffer": "x"}], "launch": {"workgroup_size": [64], "global_size": [64]}
  })");
}

}  // namespace

TEST_CASE("kernel flags: waits_for_producer is accepted on host and hsa, and changes nothing there") {
  point_hsa_at_standin();
  lrrt::Runtime runtime;
  std::vector<std::string> backends{"host"};
#if defined(LRRT_TEST_HSA) && defined(LRRT_TEST_AMD_KERNELS)
  backends.push_back("hsa");
#endif
  for (const auto& backend : backends) {
    CAPTURE(backend);
    lrrt::Device device = lrrt::Device::select(backend);
    lrrt::Module module(device, read_file(kernel_file(backend, "rmw")));
    lrrt::Kernel k = module.kernel("rmw_wait");
    CHECK(k.flags() == 0);
    k.set_flags(LR_KERNEL_WAITS_FOR_PRODUCER);
    CHECK(k.flags() == uint32_t(LR_KERNEL_WAITS_FOR_PRODUCER));
    CHECK(lr_kernel_set_flags(k.get(), 2) == LR_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(lr_last_error_message()).find("unknown kernel flags") != std::string::npos);
    CHECK(k.flags() == uint32_t(LR_KERNEL_WAITS_FOR_PRODUCER));

    const uint32_t n = 512, steps = 24;
    lrrt::DeviceBuffer counters(device, n * 4);
    std::vector<uint32_t> start(n), got(n, 0xDEADBEEFu);
    for (auto& v : start) v = uint32_t(rng()() % 100000);
    lrrt::copy_to_device(counters, start);
    lrrt::Graph g(device);
    for (uint32_t i = 0; i < steps; ++i)
      g.add_kernel(k, config_for(n, 64), FlagRmwArgs{static_cast<uint32_t*>(counters.data()), n, 3},
                   {lrrt::read_write_access(counters)});
    lrrt::GraphExec exec = g.instantiate();
    auto plan = nlohmann::json::parse(exec.plan_json());
    for (const auto& e : plan["edges"]) CHECK_FALSE(e.value("programmatic", false));
    CHECK(plan["max_in_flight"] == (backend == "hsa" ? LR_GRAPH_DEFAULT_MAX_IN_FLIGHT : 0));
    exec.launch();
    exec.launch();
    exec.synchronize();
    // Eager launches of the flagged kernel too.
    for (uint32_t i = 0; i < steps; ++i)
      lrrt::launch(k, config_for(n, 64), FlagRmwArgs{static_cast<uint32_t*>(counters.data()), n, 3});
    device.synchronize();
    lrrt::copy_to_host(got, counters);
    for (uint32_t i = 0; i < n; ++i) REQUIRE_MESSAGE(got[i] == start[i] + 3 * steps, "counter ", i);
  }
}

TEST_CASE("kernel flags: the manifest's waits_for_producer, per sequence kernel, and from Triton's launch_pdl") {
  using lrrt::bundle::parse_manifest;
  auto j = flags_manifest();
  CHECK_FALSE(parse_manifest(j, ".").waits_for_producer);
  j["waits_for_producer"] = true;
  CHECK(parse_manifest(j, ".").waits_for_producer);
  j["waits_for_producer"] = 1;
  CHECK_THROWS_AS(parse_manifest(j, "."), lrrt::bundle::ManifestError);

  auto seq = nlohmann::json::parse(R"({
    "lrrt_manifest": 1,
    "kernels": {"a": {"code_object": "k.so", "kernel": "k", "waits_for_producer": true}, "b": {"code_object": "k.so"}},
    "buffers": [{"name": "x", "type": "u32", "count": 64}],
    "sequence": [
      {"kernel": "a", "args": [{"buffer": "x", "access": "read_write"}], "launch": {"workgroup_size": [64], "global_size": [64]}},
      {"kernel": "b", "args": [{"buffer": "x", "access": "read_write"}], "launch": {"workgroup_size": [64], "global_size": [64]}}
    ]
  })");
  auto m = parse_manifest(seq, ".");
  REQUIRE(m.sequence);
  CHECK(m.sequence->kernels[0].waits_for_producer);
  CHECK_FALSE(m.sequence->kernels[1].waits_for_producer);
  CHECK(lrrt::bundle::kernel_step_manifest(m, m.sequence->steps[0]).waits_for_producer);
  CHECK_FALSE(lrrt::bundle::kernel_step_manifest(m, m.sequence->steps[1]).waits_for_producer);
  seq["waits_for_producer"] = true;
  try {
    parse_manifest(seq, ".");
    FAIL("a top-level waits_for_producer in a sequence was accepted");
  } catch (const lrrt::bundle::ManifestError& e) {
    CHECK(e.pointer() == "/waits_for_producer");
    CHECK(std::string(e.what()).find("sets waits_for_producer per kernel") != std::string::npos);
  }
}

TEST_CASE("kernel flags: a Triton entry whose metadata says launch_pdl waits for its producer") {
  namespace fs = std::filesystem;
  const fs::path from = fs::path(LRRT_TEST_SOURCE_DIR) / "tests/triton/entries/sm_90/add_kernel";
  const fs::path dir = fs::temp_directory_path() / ("lrrt-pdl-entry-" + std::to_string(rng()()));
  fs::copy(from, dir, fs::copy_options::recursive);
  struct Remove {
    fs::path p;
    ~Remove() {
      std::error_code ec;
      fs::remove_all(p, ec);
    }
  } remove{dir};
  auto manifest = nlohmann::json::parse(R"({
    "lrrt_manifest": 1,
    "buffers": [{"name": "x", "type": "f32", "count": 64}, {"name": "y", "type": "f32", "count": 64},
                {"name": "out", "type": "f32", "count": 64}],
    "args": {"x_ptr": {"buffer": "x"}, "y_ptr": {"buffer": "y"}, "out_ptr": {"buffer": "out"}, "n": {"value": 64}},
    "launch": {"grid": [1]}
  })");
  manifest["code_object"] = (dir / "add_kernel.json").string();
  CHECK_FALSE(lrrt::bundle::parse_manifest(manifest, ".").waits_for_producer);  // launch_pdl: false
  nlohmann::json meta;
  {
    std::ifstream in(dir / "add_kernel.json");
    meta = nlohmann::json::parse(in);
  }
  meta["launch_pdl"] = true;
  std::ofstream(dir / "add_kernel.json") << meta.dump();
  CHECK(lrrt::bundle::parse_manifest(manifest, ".").waits_for_producer);
}
