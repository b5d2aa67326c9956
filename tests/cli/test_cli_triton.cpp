// End-to-end tests of `lrrt init` (a manifest from a code object, run as
// written) and of Triton cache entries in `lrrt inspect`, `lrrt init` and
// manifests: the committed Triton 3.6.0 entries (tests/triton/entries), and
// copies of them broken one thing at a time (exit 2 naming the field or file).
#include <doctest/doctest.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "cli_support.hpp"

using namespace cli_test;

namespace {

const fs::path kTritonEntries = kSource / "tests" / "triton" / "entries";

// A copy of a committed entry in `dir`, to break.
fs::path copy_triton_entry(const TempDir& dir, const std::string& target, const std::string& kernel) {
  const fs::path to = dir / (target + "_" + kernel);
  fs::copy(kTritonEntries / target / kernel, to, fs::copy_options::recursive);
  return to;
}

// A manifest on the sm_90 add_kernel entry, args by parameter name.
json triton_add_manifest(const fs::path& entry) {
  json m = json::parse(R"({
    "lrrt_manifest": 1,
    "buffers": [{"name": "x", "type": "f32", "count": 64, "init": "zeros"},
                {"name": "y", "type": "f32", "count": 64, "init": "zeros"},
                {"name": "out", "type": "f32", "count": 64, "init": "zeros"}],
    "args": {"x_ptr": {"buffer": "x"}, "y_ptr": {"buffer": "y"}, "out_ptr": {"buffer": "out"}, "n": {"value": 64}},
    "launch": {"grid": [1]},
    "verify": {"skip": "layout only"}
  })");
  m["code_object"] = entry.string();
  return m;
}

}  // namespace

TEST_CASE("init: the manifest lrrt init writes for a host library runs as written") {
  TempDir dir;
  const Result r = run_lrrt(dir, {"init", (kKernels / "saxpy.host.so").string(), "-o", (dir / "m.json").string()});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const json m = json::parse(read_text(dir / "m.json"));
  CHECK(m.at("kernel") == "saxpy");
  REQUIRE(m.at("args").size() == 4);
  CHECK(m["args"][0].at("type") == "f32");
  CHECK(m["args"][1].at("buffer") == "x");
  CHECK(m["args"][2].at("buffer") == "y");
  CHECK(m["args"][3].at("type") == "u32");
  CHECK(m.at("verify").contains("skip"));
  // The code object is named relative to the manifest's folder.
  CHECK(fs::path(m.at("code_object").get<std::string>()).is_relative());
  const Result run = run_manifest(dir, dir / "m.json");
  CHECK_MESSAGE(run.rc == 0, run.err);
  // Without -o the manifest goes to stdout.
  const Result out = run_lrrt(dir, {"init", (kKernels / "saxpy.host.so").string()});
  REQUIRE(out.rc == 0);
  CHECK(json::parse(out.out).at("kernel") == "saxpy");
}

TEST_CASE("init: several kernels and no --kernel lists them (exit 2), --kernel picks one") {
  TempDir dir;
  const Result r = run_lrrt(dir, {"init", LRRT_CLI_ERROR_KERNELS});
  CHECK(r.rc == 2);
  CHECK(r.err.find("--kernel") != std::string::npos);
  CHECK(r.err.find("spin_forever") != std::string::npos);
  const Result bad = run_lrrt(dir, {"init", LRRT_CLI_ERROR_KERNELS, "--kernel", "no_such_kernel"});
  CHECK(bad.rc == 2);
  CHECK(bad.err.find("no kernel \"no_such_kernel\"") != std::string::npos);
  const Result one = run_lrrt(dir, {"init", LRRT_CLI_ERROR_KERNELS, "--kernel", "spin_forever"});
  REQUIRE_MESSAGE(one.rc == 0, one.err);
  CHECK(json::parse(one.out).at("kernel") == "spin_forever");
  const Result missing = run_lrrt(dir, {"init", (dir / "nothing.so").string()});
  CHECK(missing.rc == 2);
  CHECK(missing.err.find("nothing.so") != std::string::npos);
}

TEST_CASE("init: a Triton entry gives args by parameter name and the launch as grid") {
  TempDir dir;
  for (const char* target : {"sm_90", "gfx942", "gfx1100"}) {
    CAPTURE(target);
    const Result r = run_lrrt(dir, {"init", (kTritonEntries / target / "matmul_kernel").string()});
    REQUIRE_MESSAGE(r.rc == 0, r.err);
    const json m = json::parse(r.out);
    CHECK(m.at("kernel") == "matmul_kernel");
    CHECK(m.at("launch") == json::parse(R"({"grid": [1]})"));
    // Unit strides were specialised away: three pointers and six integers,
    // no scratch pointers (those are lrrt's).
    REQUIRE(m.at("args").is_object());
    CHECK(m["args"].size() == 9);
    CHECK(m["args"].at("a_ptr").at("buffer") == "a_ptr");
    CHECK(!m["args"].contains("global_scratch"));
    CHECK(m.at("verify").contains("skip"));
    // Each buffer's access, from lrrt's analysis of the entry's IR (docs/access.md).
    std::map<std::string, std::string> access;
    for (const auto& b : m.at("buffers")) access[b.at("name").get<std::string>()] = b.value("access", "");
    CHECK(access == std::map<std::string, std::string>{{"a_ptr", "read"}, {"b_ptr", "read"}, {"c_ptr", "write"}});
  }
}

TEST_CASE("inspect: a Triton entry shows the signature as Triton's launcher calls it") {
  TempDir dir;
  for (const std::string path : {(kTritonEntries / "sm_90" / "add_kernel").string(),
                                 (kTritonEntries / "gfx942" / "add_kernel" / "add_kernel.json").string()}) {
    CAPTURE(path);
    const Result r = run_lrrt(dir, {"inspect", "--format", "json", path});
    REQUIRE_MESSAGE(r.rc == 0, r.err);
    const json o = json::parse(r.out).at("objects").at(0);
    CHECK(o.at("file") == path);
    CHECK(o.at("format").get<std::string>().rfind("triton-", 0) == 0);
    CHECK(o.at("triton").at("signature") == "*fp32:16, *fp32:16, *fp32:16, i32");
    REQUIRE(!o.at("targets").empty());
    const json& t = o["targets"][0];
    CHECK(t.at("triton_call") == "add_kernel[grid](x_ptr, y_ptr, out_ptr, n)");
    CHECK(t.at("triton_access") == "x_ptr read, y_ptr read, out_ptr write (ttir)");
    CHECK(t.at("triton_signature") == "*fp32:16, *fp32:16, *fp32:16, i32");
    CHECK(t.at("triton_version") == "3.6.0");
    CHECK(t.at("num_warps") == 4);
    CHECK(t.at("block") == t.at("warp_size").get<uint64_t>() * 4);
  }
}

TEST_CASE("triton: a broken entry is exit 2 naming the field or the file") {
  TempDir dir;
  {  // An unknown metadata version.
    const fs::path e = copy_triton_entry(dir, "sm_90", "add_kernel");
    json j = json::parse(read_text(e / "add_kernel.json"));
    j["triton_version"] = "3.7.0";
    write_text(e / "add_kernel.json", j.dump());
    for (const char* cmd : {"inspect", "init"}) {
      CAPTURE(cmd);
      const Result r = run_lrrt(dir, {cmd, e.string()});
      CHECK(r.rc == 2);
      CHECK(r.err.find("\"triton_version\" is \"3.7.0\": unknown metadata version") != std::string::npos);
      CHECK(r.err.find("add_kernel.json") != std::string::npos);
    }
  }
  {  // A missing binary.
    const fs::path e = copy_triton_entry(dir, "gfx942", "add_kernel");
    fs::remove(e / "add_kernel.hsaco");
    for (const char* cmd : {"inspect", "init"}) {
      CAPTURE(cmd);
      const Result r = run_lrrt(dir, {cmd, e.string()});
      CHECK(r.rc == 2);
      CHECK(r.err.find("missing binary") != std::string::npos);
      CHECK(r.err.find("add_kernel.hsaco") != std::string::npos);
    }
  }
  {  // No IR, so no signature.
    const fs::path e = copy_triton_entry(dir, "gfx1100", "add_kernel");
    fs::remove(e / "add_kernel.ttir");
    fs::remove(e / "add_kernel.source");
    const Result r = run_lrrt(dir, {"init", e.string()});
    CHECK(r.rc == 2);
    CHECK(r.err.find("no add_kernel.ttir or add_kernel.source") != std::string::npos);
  }
  {  // Cooperative launch.
    const fs::path e = copy_triton_entry(dir, "sm_90", "mixed_kernel");
    json j = json::parse(read_text(e / "mixed_kernel.json"));
    j["launch_cooperative_grid"] = true;
    write_text(e / "mixed_kernel.json", j.dump());
    const Result r = run_lrrt(dir, {"inspect", e.string()});
    CHECK(r.rc == 2);
    CHECK(r.err.find("\"launch_cooperative_grid\" is true") != std::string::npos);
  }
}

TEST_CASE("triton: a manifest's bad Triton arguments or launch are exit 2 naming the field") {
  TempDir dir;
  const fs::path entry = kTritonEntries / "sm_90" / "add_kernel";
  auto run_bad = [&](const json& m) {
    write_text(dir / "m.json", m.dump());
    return run_manifest(dir, dir / "m.json");
  };
  {
    json m = triton_add_manifest(entry);
    m["args"]["bogus"] = {{"value", 1}};
    const Result r = run_bad(m);
    CHECK(r.rc == 2);
    CHECK(r.err.find("/args/bogus") != std::string::npos);
    CHECK(r.err.find("has no parameter \"bogus\"") != std::string::npos);
  }
  {
    json m = triton_add_manifest(entry);
    m["args"].erase("n");
    const Result r = run_bad(m);
    CHECK(r.rc == 2);
    CHECK(r.err.find("missing parameter \"n\"") != std::string::npos);
  }
  {
    json m = triton_add_manifest(entry);
    m["args"]["x_ptr"] = {{"value", 1}};
    const Result r = run_bad(m);
    CHECK(r.rc == 2);
    CHECK(r.err.find("/args/x_ptr") != std::string::npos);
    CHECK(r.err.find("is a pointer") != std::string::npos);
  }
  {
    json m = triton_add_manifest(entry);
    m["launch"] = {{"grid", {1}}, {"workgroup_size", {128}}};
    const Result r = run_bad(m);
    CHECK(r.rc == 2);
    CHECK(r.err.find("/launch/workgroup_size") != std::string::npos);
    CHECK(r.err.find("derives the block (128 = warp_size 32 x num_warps 4)") != std::string::npos);
  }
  {
    json m = triton_add_manifest(entry);
    m["kernel"] = "other_kernel";
    const Result r = run_bad(m);
    CHECK(r.rc == 2);
    CHECK(r.err.find("/kernel") != std::string::npos);
  }
  {
    json m = triton_add_manifest(entry);
    m["code_object"] = (dir / "no_such_entry.json").string();
    const Result r = run_bad(m);
    CHECK(r.rc == 2);
    CHECK(r.err.find("no_such_entry.json") != std::string::npos);
  }
}

#if defined(LRRT_CLI_HSA_STANDIN)
TEST_CASE("init: a Triton AMD entry's manifest runs as written on the hsa stand-in, layout checked") {
  // gfx1100 add_kernel (wave32, fp32); gfx942 mixed_kernel (wave64, an fp16
  // and an fp64 scalar): the stand-in runs tests/kernels/triton_standin.cpp.
  struct Case {
    const char* target;
    const char* kernel;
    uint64_t kernarg_bytes;  // the hsaco's explicit arguments plus the two scratch pointers
    uint32_t block;
  };
  for (const Case& c : {Case{"gfx1100", "add_kernel", 48, 128}, Case{"gfx942", "mixed_kernel", 56, 128}}) {
    CAPTURE(c.kernel);
    TempDir dir;
    setenv("LRRT_HSA_LIBRARY", LRRT_CLI_HSA_STANDIN, 1);
    setenv("LRRT_HSA_STANDIN_ISA", c.target, 1);
    setenv("LRRT_HSA_STANDIN_KERNEL_DIR", LRRT_CLI_TEST_KERNEL_DIR, 1);  // triton_standin.host.so
    const Result init =
        run_lrrt(dir, {"init", (kTritonEntries / c.target / c.kernel).string(), "-o", (dir / "m.json").string()});
    const Result r = run_lrrt(dir, {"run", "--backend", "hsa", "--format", "json", "-q", "-o",
                                    (dir / "out.json").string(), (dir / "m.json").string()});
    unsetenv("LRRT_HSA_LIBRARY");
    unsetenv("LRRT_HSA_STANDIN_ISA");
    unsetenv("LRRT_HSA_STANDIN_KERNEL_DIR");
    REQUIRE_MESSAGE(init.rc == 0, init.err);
    REQUIRE_MESSAGE(r.rc == 0, r.err);
    const json run = json::parse(read_text(dir / "out.json")).at("runs").at(0);
    CHECK(run.at("kernargs").at("layout_checked") == true);
    CHECK(run.at("kernargs").at("bytes") == c.kernarg_bytes);
    CHECK(run.at("launch").at("workgroup_size").at(0) == c.block);
  }
}
#endif
