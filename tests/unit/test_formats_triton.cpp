// Triton cache entries (lrrt/formats/triton.hpp): the committed Triton 3.6.0
// entries (tests/triton/entries), their parameter layout checked against the
// binaries' own records (AMDGPU metadata, PTX .entry, cubin param info), and
// the 3.3-3.5 metadata shapes from copies of the committed json edited to match.
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "formats_test_util.hpp"
#include "lrrt/formats/amdgpu.hpp"
#include "lrrt/formats/nvidia.hpp"
#include "lrrt/formats/triton.hpp"

using namespace lrrt::formats;

namespace {

std::string triton_fixture(const std::string& target, const std::string& kernel) {
  return std::string(LRRT_TEST_SOURCE_DIR) + "/tests/triton/entries/" + target + "/" + kernel;
}

std::string triton_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Natural-alignment offsets of params + hidden pointers, as lrrt packs them.
std::vector<std::pair<uint32_t, uint32_t>> triton_packed_layout(const TritonEntry& e) {
  std::vector<std::pair<uint32_t, uint32_t>> out;
  uint32_t cursor = 0;
  auto put = [&](uint32_t size) {
    cursor = (cursor + size - 1) / size * size;
    out.emplace_back(cursor, size);
    cursor += size;
  };
  for (const auto& p : e.params) put(p.size());
  for (size_t i = 0; i < e.hidden.size(); ++i) put(8);
  return out;
}

}  // namespace

TEST_CASE("triton: the committed 3.6.0 entries read as Triton wrote them") {
  struct Expect {
    const char* kernel;
    const char* signature;
    uint32_t num_warps;
    bool shared_positive;
  };
  const Expect expects[] = {
      {"add_kernel", "*fp32:16, *fp32:16, *fp32:16, i32", 4, false},
      {"matmul_kernel", "*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, i32:16, i32:16", 8, true},
  };
  for (const char* target : {"sm_90", "gfx942", "gfx1100"})
    for (const auto& x : expects) {
      CAPTURE(target);
      CAPTURE(x.kernel);
      // Folder and .json name the same entry.
      const TritonEntry e = read_triton_entry(triton_fixture(target, x.kernel));
      const TritonEntry j = read_triton_entry(triton_fixture(target, x.kernel) + "/" + x.kernel + ".json");
      CHECK(e.signature() == j.signature());
      CHECK(is_triton_entry(triton_fixture(target, x.kernel)));
      CHECK(e.name == x.kernel);
      CHECK(e.triton_version == "3.6.0");
      CHECK(e.signature() == x.signature);
      CHECK(e.num_warps == x.num_warps);
      CHECK((e.shared > 0) == x.shared_positive);
      CHECK(e.arch == target);
      CHECK(e.warp_size == (std::string(target) == "gfx942" ? 64u : 32u));
      CHECK(e.block() == e.warp_size * x.num_warps);
      CHECK(e.lrrt_backend == (std::string(target) == "sm_90" ? "cuda" : "hsa"));
      REQUIRE(e.hidden.size() == 2);
      CHECK(e.hidden[0].name == "global_scratch");
      CHECK(e.hidden[1].name == "profile_scratch");
      CHECK(e.scratch_bytes(e.hidden[0], 100) == 0);
      CHECK(e.binary_path.filename().string() == std::string(x.kernel) + (e.lrrt_backend == "cuda" ? ".cubin" : ".hsaco"));
    }
  // mixed_kernel: on sm_90 Triton's JIT typed the Python floats fp32; on the
  // AMD targets triton.compile was told fp16 and fp64.
  CHECK(read_triton_entry(triton_fixture("sm_90", "mixed_kernel")).signature() == "*fp16:16, *fp16:16, fp32, fp32, i32");
  const TritonEntry m = read_triton_entry(triton_fixture("gfx942", "mixed_kernel"));
  CHECK(m.signature() == "*fp16:16, *fp16:16, fp16, fp64, i32");
  CHECK(m.num_warps == 2);
  REQUIRE(m.params.size() == 5);
  CHECK(m.params[2].name == "scale");
  CHECK(m.params[3].name == "bias");
  CHECK(m.params[2].size() == 2);
  CHECK(m.params[3].size() == 8);
}

TEST_CASE("triton: AMD entries' layout is the hsaco's own AMDGPU metadata") {
  if (!amdgpu::can_read_metadata()) return;
  for (const char* target : {"gfx942", "gfx1100"})
    for (const char* kernel : {"add_kernel", "mixed_kernel", "matmul_kernel"}) {
      CAPTURE(target);
      CAPTURE(kernel);
      const TritonEntry e = read_triton_entry(triton_fixture(target, kernel));
      const auto image = formats_test::read_file(e.binary_path.string());
      const auto co = amdgpu::parse_code_object(image);
      REQUIRE(co.kernels.size() == 1);
      const KernelInfo& k = co.kernels[0];
      CHECK(k.name == kernel);
      std::vector<KernelArgInfo> expl;
      for (const auto& a : k.args)
        if (a.kind != ArgKind::Hidden) expl.push_back(a);
      const auto packed = triton_packed_layout(e);
      REQUIRE(expl.size() == packed.size());
      for (size_t i = 0; i < packed.size(); ++i) {
        CAPTURE(i);
        CHECK(expl[i].offset == packed[i].first);
        CHECK(expl[i].size == packed[i].second);
        const bool pointer = i >= e.params.size() || e.params[i].pointer;
        CHECK((expl[i].kind == ArgKind::GlobalBuffer) == pointer);
      }
      CHECK(k.wavefront_size == e.warp_size);
      CHECK(k.max_workgroup_size >= e.block());
    }
}

TEST_CASE("triton: sm_90 entries' layout is the PTX .entry's and the cubin's") {
  for (const char* kernel : {"add_kernel", "mixed_kernel", "matmul_kernel"}) {
    CAPTURE(kernel);
    const TritonEntry e = read_triton_entry(triton_fixture("sm_90", kernel));
    const auto packed = triton_packed_layout(e);
    const auto ptx = nvidia::parse_ptx(triton_text(triton_fixture("sm_90", kernel) + "/" + kernel + ".ptx"));
    REQUIRE(ptx.kernels.size() == 1);
    const auto& pk = ptx.kernels[0];
    REQUIRE(pk.params.size() == packed.size());
    for (size_t i = 0; i < packed.size(); ++i) {
      CAPTURE(i);
      CHECK(pk.params[i].size == packed[i].second);
      CHECK(pk.params[i].offset == packed[i].first);
      CHECK(pk.params[i].pointer == (i >= e.params.size() || e.params[i].pointer));
    }
    const auto cubin = nvidia::image_kernel(formats_test::read_file(e.binary_path.string()), kernel);
    REQUIRE(cubin);
    REQUIRE(cubin->has_params);
    REQUIRE(cubin->params.size() == packed.size());
    for (size_t i = 0; i < packed.size(); ++i) {
      CHECK(cubin->params[i].offset == packed[i].first);
      CHECK(cubin->params[i].size == packed[i].second);
    }
  }
}

TEST_CASE("triton: the 3.3-3.5 metadata shapes and what lrrt refuses") {
  const std::string dir = triton_fixture("sm_90", "add_kernel");
  const std::string ir = triton_text(dir + "/add_kernel.ttir");
  const nlohmann::json base = nlohmann::json::parse(triton_text(dir + "/add_kernel.json"));
  auto parse = [&](const nlohmann::json& j) { return parse_triton_entry(j.dump(), ir, "edited add_kernel.json"); };
  auto refuses = [&](const nlohmann::json& j, const std::string& needle) {
    CAPTURE(needle);
    try {
      parse(j);
      FAIL("accepted");
    } catch (const FormatError& e) {
      CHECK(std::string(e.what()).find(needle) != std::string::npos);
      CHECK(std::string(e.what()).find("edited add_kernel.json") != std::string::npos);
    }
  };
  {  // 3.3: cluster_dims, no profile scratch, no launch_pdl, no tensordesc_meta.
    nlohmann::json j = base;
    j["triton_version"] = "3.3.1";
    for (const char* f : {"profile_scratch_size", "profile_scratch_align", "launch_pdl", "tensordesc_meta", "tmem_size"}) j.erase(f);
    j["cluster_dims"] = {1, 1, 1};
    j["global_scratch_size"] = 96;
    j["global_scratch_align"] = 16;
    const TritonEntry e = parse(j);
    REQUIRE(e.hidden.size() == 1);
    CHECK(e.hidden[0].name == "global_scratch");
    CHECK(e.scratch_bytes(e.hidden[0], 7) == 7u * 96u);  // 3.3 omits num_ctas
    j["cluster_dims"] = {2, 1, 1};
    refuses(j, "cluster_dims");
  }
  {  // 3.4: launch_pdl, tensordesc_meta, still no profile scratch.
    nlohmann::json j = base;
    j["triton_version"] = "3.4.0";
    j.erase("profile_scratch_size");
    j.erase("profile_scratch_align");
    j["cluster_dims"] = {1, 1, 1};
    j["launch_pdl"] = true;
    const TritonEntry e = parse(j);
    CHECK(e.hidden.size() == 1);
    CHECK(e.launch_pdl);
    j["tensordesc_meta"] = nlohmann::json::array({nlohmann::json::object()});
    refuses(j, "tensordesc_meta");
  }
  {  // 3.5: profile scratch appears.
    nlohmann::json j = base;
    j["triton_version"] = "3.5.1";
    j["cluster_dims"] = {1, 1, 1};
    j["profile_scratch_size"] = 40;
    const TritonEntry e = parse(j);
    REQUIRE(e.hidden.size() == 2);
    CHECK(e.hidden[1].name == "profile_scratch");
    CHECK(e.scratch_bytes(e.hidden[1], 3) == 120u);
    j.erase("profile_scratch_size");
    refuses(j, "profile_scratch_size");
  }
  {
    nlohmann::json j = base;
    j.erase("triton_version");
    refuses(j, "unknown metadata version");
    j["triton_version"] = "3.7.0";
    refuses(j, "unknown metadata version");
    j["triton_version"] = "3.2.0";
    refuses(j, "triton_version");
  }
  {
    nlohmann::json j = base;
    j["launch_cooperative_grid"] = true;
    refuses(j, "launch_cooperative_grid");
    j = base;
    j["num_ctas"] = 2;
    refuses(j, "num_ctas");
    j = base;
    j["target"]["backend"] = "xpu";
    refuses(j, "target/backend");
  }
  // A tensor-descriptor parameter in the IR.
  std::string tma = ir;
  const auto at = tma.find("!tt.ptr<f32>");
  REQUIRE(at != std::string::npos);
  tma.replace(at, 12, "!tt.tensordesc<tensor<16x16xf32>>");
  try {
    parse_triton_entry(base.dump(), tma, "tma.ttir");
    FAIL("accepted");
  } catch (const FormatError& e) {
    CHECK(std::string(e.what()).find("tensor descriptor") != std::string::npos);
  }
  CHECK_THROWS_AS(parse_triton_signature("module {}", "add_kernel", "x.ttir"), FormatError);
}

TEST_CASE("triton: a missing binary and a missing signature name the file") {
  const std::string tmp = std::string(LRRT_TEST_BINARY_DIR) + "/triton_missing_binary";
  std::filesystem::remove_all(tmp);
  std::filesystem::create_directories(tmp);
  const std::string src = triton_fixture("gfx942", "add_kernel");
  std::filesystem::copy_file(src + "/add_kernel.json", tmp + "/add_kernel.json");
  try {
    read_triton_entry(tmp);
    FAIL("accepted");
  } catch (const FormatError& e) {
    CHECK(std::string(e.what()).find("add_kernel.ttir") != std::string::npos);
  }
  std::filesystem::copy_file(src + "/add_kernel.ttir", tmp + "/add_kernel.ttir");
  try {
    read_triton_entry(tmp + "/add_kernel.json");
    FAIL("accepted");
  } catch (const FormatError& e) {
    CHECK(std::string(e.what()).find("missing binary") != std::string::npos);
    CHECK(std::string(e.what()).find("add_kernel.hsaco") != std::string::npos);
  }
  std::filesystem::remove_all(tmp);
}
