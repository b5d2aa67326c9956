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

// The entry's <name>.json with one field's text replaced (the JSON as
// Triton wrote it: "num_ctas": 1, ...), for values json.dump cannot write.
void replace_in_file(const fs::path& file, const std::string& from, const std::string& to) {
  std::string t = read_text(file);
  const size_t at = t.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, from);
  t.replace(at, from.size(), to);
  write_text(file, t);
}

TEST_CASE("triton: metadata nested 200,000 levels deep is exit 2 in inspect, init and run, never a crash") {
  TempDir dir;
  const fs::path e = copy_triton_entry(dir, "sm_90", "add_kernel");
  replace_in_file(e / "add_kernel.json", "\"num_ctas\": 1", "\"num_ctas\": " + std::string(200000, '[') + std::string(200000, ']'));
  for (const char* cmd : {"inspect", "init"}) {
    CAPTURE(cmd);
    const Result r = run_lrrt(dir, {cmd, e.string()});
    CHECK(r.rc == 2);
    CHECK(r.err.find("not Triton metadata: nested more than 64 levels deep") != std::string::npos);
    CHECK(r.err.find("add_kernel.json") != std::string::npos);
    CHECK(r.err.size() < 1000);  // described, never dumped
  }
  write_text(dir / "m.json", triton_add_manifest(e).dump());
  const Result r = run_manifest(dir, dir / "m.json");
  CHECK(r.rc == 2);
  CHECK(r.err.find("/code_object") != std::string::npos);
  CHECK(r.err.find("nested more than 64 levels deep") != std::string::npos);
  // A deep value of a field lrrt reads is described by its type and size.
  const fs::path f = copy_triton_entry(dir, "gfx942", "add_kernel");
  replace_in_file(f / "add_kernel.json", "\"shared\": 0", "\"shared\": " + std::string(60, '[') + std::string(60, ']'));
  const Result s = run_lrrt(dir, {"init", f.string()});
  CHECK(s.rc == 2);
  CHECK(s.err.find("field \"shared\" is an array of 1 element(s), expected a non-negative integer") != std::string::npos);
}

TEST_CASE("triton: a 64-bit launch number is range-checked before it is narrowed, exit 2 naming the field") {
  TempDir dir;
  struct Case {
    const char* from;
    const char* to;
    const char* message;
  };
  const Case cases[] = {
      {"\"shared\": 0", "\"shared\": 4294967296", "field \"shared\" is 4294967296, more than 4294967295"},
      {"\"num_ctas\": 1", "\"num_ctas\": 4294967297", "field \"num_ctas\" is 4294967297, more than 4294967295"},
      {"\"num_warps\": 4", "\"num_warps\": 4294967300", "field \"num_warps\" is 4294967300, expected 1 to 32"},
      {"\"arch\": 90", "\"arch\": 4294967386", "field \"target/arch\" is 4294967386, not an SM number"},
      {"\"warp_size\": 32}", "\"warp_size\": 4294967328}", "field \"target/warp_size\" is 4294967328, expected 32 or 64"},
      {"\"global_scratch_size\": 0", "\"global_scratch_size\": 4294967296",
       "field \"global_scratch_size\" is 4294967296, more than 4294967295 bytes per program"},
      {"\"global_scratch_align\": 1", "\"global_scratch_align\": 3", "field \"global_scratch_align\" is 3, expected a power of two"},
      {"\"launch_pdl\": false", "\"launch_pdl\": \"no\"", "field \"launch_pdl\" is the string \"no\", expected true or false"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.to);
    const fs::path e = copy_triton_entry(dir, "sm_90", "add_kernel");
    replace_in_file(e / "add_kernel.json", c.from, c.to);
    for (const char* cmd : {"inspect", "init"}) {
      CAPTURE(cmd);
      const Result r = run_lrrt(dir, {cmd, e.string()});
      CHECK(r.rc == 2);
      CHECK(r.err.find(c.message) != std::string::npos);
      CHECK(r.err.find("add_kernel.json") != std::string::npos);
    }
    write_text(dir / "m.json", triton_add_manifest(e).dump());
    const Result r = run_manifest(dir, dir / "m.json");
    CHECK(r.rc == 2);
    CHECK(r.err.find(c.message) != std::string::npos);
    fs::remove_all(e);
  }
  {  // cluster_dims: each element range-checked.
    const fs::path e = copy_triton_entry(dir, "sm_90", "add_kernel");
    replace_in_file(e / "add_kernel.json", "\"num_ctas\": 1", "\"num_ctas\": 1, \"cluster_dims\": [4294967297, 1, 1]");
    const Result r = run_lrrt(dir, {"init", e.string()});
    CHECK(r.rc == 2);
    CHECK(r.err.find("field \"cluster_dims/0\" is 4294967297, more than 4294967295") != std::string::npos);
  }
}

TEST_CASE("triton: a wrong-typed field or a parameter name that is not UTF-8 is exit 2 naming the file, no raw JSON error") {
  TempDir dir;
  {  // The top-level warp_size as a string (nlohmann's value() threw type_error.302).
    const fs::path e = copy_triton_entry(dir, "sm_90", "add_kernel");
    replace_in_file(e / "add_kernel.json", "\"warp_size\": 32, \"maxnreg\"", "\"warp_size\": \"32\", \"maxnreg\"");
    for (const char* cmd : {"inspect", "init"}) {
      const Result r = run_lrrt(dir, {cmd, e.string()});
      CHECK(r.rc == 2);
      CHECK(r.err.find("add_kernel.json: field \"warp_size\" is the string \"32\", expected a non-negative integer") !=
            std::string::npos);
      CHECK(r.err.find("json.exception") == std::string::npos);
    }
    fs::remove_all(e);
  }
  {  // A parameter name with the byte ff (json dump threw type_error.316).
    const fs::path e = copy_triton_entry(dir, "sm_90", "add_kernel");
    replace_in_file(e / "add_kernel.ttir", "i32} loc(\"y_ptr\"", "i32} loc(\"y\xff\"");
    for (const char* cmd : {"inspect", "init"}) {
      const Result r = run_lrrt(dir, {cmd, e.string()});
      CHECK(r.rc == 2);
      CHECK(r.err.find("add_kernel.json: parameter 1 of @add_kernel: its name \"y\\xff\" is not valid UTF-8") != std::string::npos);
      CHECK(r.err.find("json.exception") == std::string::npos);
    }
    write_text(dir / "m.json", triton_add_manifest(e).dump());
    const Result r = run_manifest(dir, dir / "m.json");
    CHECK(r.rc == 2);
    CHECK(r.err.find("is not valid UTF-8") != std::string::npos);
    fs::remove_all(e);
  }
  {  // A kernel name that would leave the folder.
    const fs::path e = copy_triton_entry(dir, "sm_90", "add_kernel");
    replace_in_file(e / "add_kernel.json", "\"name\": \"add_kernel\"", "\"name\": \"../add_kernel\"");
    const Result r = run_lrrt(dir, {"init", e.string()});
    CHECK(r.rc == 2);
    CHECK(r.err.find("field \"name\" (\"../add_kernel\") holds '/': not a kernel name") != std::string::npos);
  }
}

TEST_CASE("triton: two parameters of one name are refused by init and run") {
  TempDir dir;
  const fs::path e = copy_triton_entry(dir, "sm_90", "add_kernel");
  replace_in_file(e / "add_kernel.ttir", "i32} loc(\"y_ptr\"", "i32} loc(\"x_ptr\"");
  const Result init = run_lrrt(dir, {"init", e.string()});
  CHECK(init.rc == 2);
  CHECK(init.err.find("parameters 0 and 1 of @add_kernel are both named \"x_ptr\"") != std::string::npos);
  CHECK(init.err.find("lrrt binds arguments by name") != std::string::npos);
  json m = triton_add_manifest(e);
  m["args"].erase("y_ptr");
  write_text(dir / "m.json", m.dump());
  const Result r = run_manifest(dir, dir / "m.json");
  CHECK(r.rc == 2);
  CHECK(r.err.find("parameters 0 and 1 of @add_kernel are both named \"x_ptr\"") != std::string::npos);
}

TEST_CASE("triton: a scratch buffer whose size overflows 64 bits is exit 2 at /launch/grid") {
  TempDir dir;
  const fs::path e = copy_triton_entry(dir, "sm_90", "add_kernel");
  // A 2^31-byte global scratch a program, for 2^48 programs.
  json md = json::parse(read_text(e / "add_kernel.json"));
  md["global_scratch_size"] = uint64_t(1) << 31;
  md["global_scratch_align"] = 8;
  write_text(e / "add_kernel.json", md.dump());
  json m = triton_add_manifest(e);
  m["launch"]["grid"] = {uint64_t(1) << 24, uint64_t(1) << 24, 1};
  write_text(dir / "m.json", m.dump());
  const Result r = run_manifest(dir, dir / "m.json");
  CHECK(r.rc == 2);
  INFO(r.err);
  CHECK(r.err.find("/launch/grid") != std::string::npos);
  CHECK(r.err.find("does not fit in 64 bits") != std::string::npos);
}

TEST_CASE("init: an fp8 pointer becomes a u8 buffer the manifest reader accepts") {
  TempDir dir;
  const fs::path e = copy_triton_entry(dir, "sm_90", "add_kernel");
  replace_in_file(e / "add_kernel.ttir", "%x_ptr: !tt.ptr<f32>", "%x_ptr: !tt.ptr<f8E4M3FN>");
  const Result r = run_lrrt(dir, {"init", e.string(), "-o", (dir / "m.json").string()});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const json m = json::parse(read_text(dir / "m.json"));
  CHECK(m.at("buffers").at(0).at("name") == "x_ptr");
  CHECK(m["buffers"][0].at("type") == "u8");
  CHECK(m["buffers"][0].at("init") == "zeros");
  CHECK(m["buffers"][1].at("type") == "f32");
  CHECK(m.at("description").get<std::string>().find("x_ptr points to f8E4M3FN (fp8)") != std::string::npos);
  // The manifest parses: `lrrt plan` reads it whole, then says it is no sequence.
  const Result plan = run_lrrt(dir, {"plan", (dir / "m.json").string()});
  CHECK(plan.rc == 2);
  CHECK_MESSAGE(plan.err.find("not a sequence manifest (it runs kernel \"add_kernel\")") != std::string::npos, plan.err);
  // An element type lrrt has no buffer type for is refused at init.
  replace_in_file(e / "add_kernel.ttir", "%y_ptr: !tt.ptr<f32>", "%y_ptr: !tt.ptr<i128>");
  const Result bad = run_lrrt(dir, {"init", e.string()});
  CHECK(bad.rc == 2);
  CHECK(bad.err.find("parameter 1 (y_ptr) of Triton kernel add_kernel points to i128, an element type lrrt has no buffer type for") !=
        std::string::npos);
}

TEST_CASE("init: -o onto the entry's files or the code object is refused, an existing file only with --force") {
  TempDir dir;
  const fs::path e = copy_triton_entry(dir, "sm_90", "add_kernel");
  const std::string metadata = read_text(e / "add_kernel.json"), cubin = read_text(e / "add_kernel.cubin");
  for (const fs::path& out : {e / "add_kernel.json", e / "." / "add_kernel.cubin", e / "add_kernel.ttir"}) {
    CAPTURE(out);
    const Result r = run_lrrt(dir, {"init", e.string(), "-o", out.string()});
    CHECK(r.rc == 2);
    CHECK(r.err.find("which lrrt init reads: writing the manifest there would replace it") != std::string::npos);
  }
  const Result in_folder = run_lrrt(dir, {"init", e.string(), "-o", (e / "manifest.json").string()});
  CHECK(in_folder.rc == 2);
  CHECK(in_folder.err.find("a second .json there would make the folder hold two metadata files") != std::string::npos);
  CHECK(!fs::exists(e / "manifest.json"));
  CHECK(read_text(e / "add_kernel.json") == metadata);
  CHECK(read_text(e / "add_kernel.cubin") == cubin);
  // A code object file.
  fs::copy_file(kKernels / "saxpy.host.so", dir / "saxpy.host.so");
  const std::string so = read_text(dir / "saxpy.host.so");
  const Result onto = run_lrrt(dir, {"init", (dir / "saxpy.host.so").string(), "-o", (dir / "saxpy.host.so").string()});
  CHECK(onto.rc == 2);
  CHECK(onto.err.find("which lrrt init reads") != std::string::npos);
  CHECK(read_text(dir / "saxpy.host.so") == so);
  // An existing file: refused, then replaced with --force.
  write_text(dir / "old.json", "keep me");
  const Result exists = run_lrrt(dir, {"init", e.string(), "-o", (dir / "old.json").string()});
  CHECK(exists.rc == 2);
  CHECK(exists.err.find("old.json exists; lrrt init does not replace a file unless --force is given") != std::string::npos);
  CHECK(read_text(dir / "old.json") == "keep me");
  const Result forced = run_lrrt(dir, {"init", e.string(), "-o", (dir / "old.json").string(), "--force"});
  REQUIRE_MESSAGE(forced.rc == 0, forced.err);
  CHECK(json::parse(read_text(dir / "old.json")).at("kernel") == "add_kernel");
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
