// Tensor map arguments in manifests (src/bundle/manifest_tensor_map.cpp) and
// Triton 3.6 tensor descriptors desugared into a tensor map plus the shape
// and stride scalars Triton's launcher passes: parsed without a device, the
// layout checked against the fixture cubin's and PTX's own parameter layout.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iterator>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "lrrt/bundle/kernargs.hpp"
#include "lrrt/bundle/manifest.hpp"
#include "lrrt/formats/nvidia.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using lrrt::bundle::ArgSpec;
using lrrt::bundle::ManifestError;

namespace {

const fs::path kTritonDir = fs::path(LRRT_TEST_SOURCE_DIR) / "tests/triton";

std::vector<std::byte> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::vector<char> c((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return std::vector<std::byte>(reinterpret_cast<const std::byte*>(c.data()), reinterpret_cast<const std::byte*>(c.data()) + c.size());
}

json base_manifest(const json& shape, const json& arg) {
  return {{"lrrt_manifest", 1},
          {"code_object", "k.cubin"},
          {"kernel", "k"},
          {"buffers", json::array({{{"name", "a"}, {"type", "f16"}, {"shape", shape}}})},
          {"args", json::array({arg, {{"type", "u32"}, {"value", 1}}})},
          {"launch", {{"workgroup_size", {128}}, {"workgroup_count", {1}}}}};
}

std::string error_pointer(const json& doc) {
  try {
    (void)lrrt::bundle::parse_manifest(doc, ".");
  } catch (const ManifestError& e) {
    return e.pointer();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("tensor_map argument: random shapes parse into CUDA's order, 128 bytes at 64-byte alignment") {
  const uint64_t seed = std::random_device{}();
  INFO("seed ", seed);
  std::mt19937_64 rng(seed);
  for (int n = 0; n < 200; ++n) {
    const size_t rank = 1 + rng() % 5;
    json shape = json::array(), box = json::array();
    std::vector<uint64_t> dims(rank);
    for (size_t i = 0; i < rank; ++i) {
      dims[i] = i + 1 == rank ? 8 * (1 + rng() % 32) : 1 + rng() % 6;  // rows of 16-byte multiples
      shape.push_back(dims[i]);
      box.push_back(i + 1 == rank ? 8 * (1 + rng() % 8) : 1 + rng() % 4);  // inner box: 16..128 bytes
    }
    const json tm = {{"buffer", "a"}, {"box", box}, {"swizzle", "128B"}};
    const auto m = lrrt::bundle::parse_manifest(base_manifest(shape, {{"name", "desc"}, {"tensor_map", tm}}), ".");
    REQUIRE(m.args.size() == 2);
    const ArgSpec& a = m.args[0];
    CHECK(a.kind == ArgSpec::Kind::TensorMap);
    CHECK(a.access == lrrt::bundle::Access::Read);
    REQUIRE(a.tensor_map);
    const auto& d = a.tensor_map->desc;
    CHECK(d.rank == rank);
    CHECK(d.dtype == LR_TENSOR_MAP_F16);
    CHECK(d.swizzle == LR_TENSOR_MAP_SWIZZLE_128B);
    CHECK(d.global_address == nullptr);
    uint64_t stride = 2;  // bytes, dense
    for (size_t i = 0; i < rank; ++i) {
      CHECK(d.global_dims[i] == dims[rank - 1 - i]);
      CHECK(d.box_dims[i] == box[rank - 1 - i].get<uint32_t>());
      CHECK(d.element_strides[i] == 1);
      if (i > 0) CHECK(d.global_strides[i - 1] == stride);
      stride *= dims[rank - 1 - i];
    }
    const auto layout = lrrt::bundle::layout_kernargs(m.args);
    CHECK(layout.slots[0].offset == 0);
    CHECK(layout.slots[0].size == 128);
    CHECK_FALSE(layout.slots[0].pointer);
    CHECK(layout.slots[1].offset == 128);
    CHECK(layout.size == 136);  // padded to 8, as the cuda queue accepts (not to 64)
  }
}

TEST_CASE("tensor_map argument: each error is exit 2 naming the field") {
  const json shape = {64, 256};
  auto with = [&](const json& patch) {
    json tm = {{"buffer", "a"}, {"box", {8, 64}}};
    tm.merge_patch(patch);
    return error_pointer(base_manifest(shape, {{"tensor_map", tm}}));
  };
  CHECK(with(json::object()) == "(accepted)");
  CHECK(with({{"buffer", "nope"}}) == "/args/0/tensor_map/buffer");
  CHECK(with({{"box", nullptr}}) == "/args/0/tensor_map");                 // missing
  CHECK(with({{"box", {8, 64, 1}}}) == "/args/0/tensor_map/box");          // rank mismatch
  CHECK(with({{"box", {8, 257}}}) == "/args/0/tensor_map/box/1");          // > 256
  CHECK(with({{"box", {8, 12}}}) == "/args/0/tensor_map/box/1");           // 24 bytes: not a multiple of 16
  CHECK(with({{"swizzle", "32B"}}) == "/args/0/tensor_map/box/1");         // 128 bytes > the 32B span
  CHECK(with({{"swizzle", "16B"}}) == "/args/0/tensor_map/swizzle");
  CHECK(with({{"interleave", "32B"}}) == "/args/0/tensor_map/dims");       // rank 2 < 3
  CHECK(with({{"oob_fill", "inf"}}) == "/args/0/tensor_map/oob_fill");
  CHECK(with({{"l2_promotion", "512B"}}) == "/args/0/tensor_map/l2_promotion");
  CHECK(with({{"element_strides", {1, 9}}}) == "/args/0/tensor_map/element_strides/1");
  CHECK(with({{"dims", {65, 256}}}) == "/args/0/tensor_map/dims");         // past the buffer
  CHECK(with({{"dims", {32, 100}}, {"strides", {100, 1}}}) == "/args/0/tensor_map/strides/0");  // 200 bytes: not 16-aligned
  CHECK(with({{"dims", {32, 128}}, {"strides", {256, 2}}}) == "/args/0/tensor_map/strides/1");  // inner stride not 1
  CHECK(with({{"dims", {32, 128}}, {"strides", {256, 1}}}) == "(accepted)");
  CHECK(with({{"access", "sideways"}}) == "/args/0/tensor_map/access");
  CHECK(with({{"colour", 1}}) == "/args/0/tensor_map/colour");
}

TEST_CASE("Triton tensor descriptors: desugared into tensor maps and Triton's shape and stride scalars, laid out as the cubin") {
  const auto m = lrrt::bundle::load_manifest(kTritonDir / "tma_add/manifest.json");
  // a_desc, 2 shapes, 2 strides; b_desc, ...; out_ptr, M, N; global and profile scratch.
  REQUIRE(m.args.size() == 15);
  const json params = m.triton["params"];
  for (size_t d : {size_t(0), size_t(5)}) {
    const ArgSpec& t = m.args[d];
    CHECK(t.kind == ArgSpec::Kind::TensorMap);
    REQUIRE(t.tensor_map);
    const auto& desc = t.tensor_map->desc;
    CHECK(desc.rank == 2);
    // From tensordesc_meta: Triton's launcher encodes exactly these.
    const json& meta = params[d]["tensordesc"];
    CHECK(desc.swizzle == meta["swizzle"].get<uint32_t>());
    CHECK(desc.box_dims[0] == meta["box"][1].get<uint32_t>());
    CHECK(desc.box_dims[1] == meta["box"][0].get<uint32_t>());
    CHECK(desc.l2_promotion == LR_TENSOR_MAP_L2_PROMOTION_128B);
    CHECK(desc.dtype == LR_TENSOR_MAP_F32);
    CHECK(desc.global_dims[0] == 200);
    CHECK(desc.global_dims[1] == 100);
    CHECK(desc.global_strides[0] == 800);
    // shape (i32, outermost first), strides (i64, elements).
    CHECK(m.args[d + 1].type == lrrt::bundle::DType::i32);
    CHECK(m.args[d + 1].value == 100);
    CHECK(m.args[d + 2].value == 200);
    CHECK(m.args[d + 3].type == lrrt::bundle::DType::i64);
    CHECK(m.args[d + 3].value == 200);
    CHECK(m.args[d + 4].value == 1);
  }
  CHECK(m.buffers[m.args[0].buffer].name == "a");
  CHECK(m.buffers[m.args[5].buffer].name == "b");
  // The cubin's and the PTX's own parameter layout.
  const fs::path entry = kTritonDir / "entries/sm_90/tma_add_kernel";
  const auto cubin = lrrt::formats::nvidia::parse_cubin(read_bytes(entry / "tma_add_kernel.cubin"));
  REQUIRE(cubin.kernels.size() == 1);
  const auto& k = cubin.kernels[0];
  REQUIRE(k.has_params);
  std::ifstream ptx_in(entry / "tma_add_kernel.ptx");
  const std::string ptx_text((std::istreambuf_iterator<char>(ptx_in)), std::istreambuf_iterator<char>());
  const auto ptx = lrrt::formats::nvidia::parse_ptx(ptx_text);
  REQUIRE(ptx.kernels.size() == 1);
  REQUIRE(k.params.size() == m.args.size());
  REQUIRE(ptx.kernels[0].params.size() == m.args.size());
  // Natural alignment is the PTX's layout; the cubin puts its first 64-byte
  // aligned parameter past offset 0, and the arguments follow the cubin's
  // offsets there (at_kernel_offsets), checked like any declared layout.
  const auto natural = lrrt::bundle::layout_kernargs(m.args);
  std::vector<lrrt::bundle::KernelArg> declared;
  for (const auto& p : k.params) declared.push_back({p.offset, p.size, false, "", false, ""});
  const auto placed = lrrt::bundle::at_kernel_offsets(m.args, declared);
  const auto layout = lrrt::bundle::layout_kernargs(placed);
  CHECK_NOTHROW(lrrt::bundle::check_kernargs(placed, layout, declared, "tma_add_kernel"));
  // The cuda queue takes the kernel's parameter bytes plus at most 8-byte padding.
  CHECK(layout.size >= k.param_bytes);
  CHECK(layout.size <= (k.param_bytes + 7) / 8 * 8);
  for (size_t i = 0; i < m.args.size(); ++i) {
    INFO("argument ", i, " (", m.args[i].name, ")");
    CHECK(natural.slots[i].offset == ptx.kernels[0].params[i].offset);
    CHECK(natural.slots[i].size == ptx.kernels[0].params[i].size);
    CHECK(layout.slots[i].offset == k.params[i].offset);
    CHECK(layout.slots[i].size == k.params[i].size);
    CHECK(natural.slots[i].size == k.params[i].size);
    if (m.args[i].kind == ArgSpec::Kind::TensorMap) {
      CHECK(ptx.kernels[0].params[i].align == 64);
      CHECK((layout.slots[i].offset + 0x210) % 64 == 0);  // sm_90 parameters start at c[0x0][0x210]
    }
  }
}

TEST_CASE("Triton tensor descriptors: the manifest's errors name the parameter") {
  const fs::path dir = kTritonDir / "tma_add";
  std::ifstream in(dir / "manifest.json");
  const json doc = json::parse(in);
  auto pointer_of = [&](const std::function<void(json&)>& change) {
    json d = doc;
    change(d);
    try {
      (void)lrrt::bundle::parse_manifest(d, dir);
    } catch (const ManifestError& e) {
      return e.pointer();
    }
    return std::string("(accepted)");
  };
  CHECK(pointer_of([](json&) {}) == "(accepted)");
  CHECK(pointer_of([](json& d) { d["args"]["a_desc"] = {{"buffer", "a"}}; }) == "/args/a_desc");
  CHECK(pointer_of([](json& d) { d["args"]["a_desc"]["tensor_map"]["box"] = {32, 32}; }) == "/args/a_desc/tensor_map/box");
  CHECK(pointer_of([](json& d) { d["args"]["a_desc"]["tensor_map"]["buffer"] = "out"; d["buffers"][2]["type"] = "f16"; }) ==
        "/args/a_desc/tensor_map/buffer");
  CHECK(pointer_of([](json& d) { d["args"]["b_desc"]["tensor_map"]["dims"] = {101, 200}; }) == "/args/b_desc/tensor_map/dims");
  CHECK(pointer_of([](json& d) { d["args"]["a_desc.shape0"] = {{"value", 1}}; }) == "/args/a_desc.shape0");
}

TEST_CASE("tensor map: the CUDA C++ TMA copy's manifest packs at its cubin's offsets and size") {
  const fs::path cubin_path = fs::path(LRRT_TEST_KERNEL_DIR).parent_path() / "tests/cuda/tma/tma_copy.sm_90.cubin";
  if (!fs::exists(cubin_path)) return;  // built only with nvcc
  const auto m = lrrt::bundle::load_manifest(kTritonDir.parent_path() / "cuda/tma_copy/manifest.json");
  REQUIRE(m.args.size() == 4);
  CHECK(m.args[0].kind == ArgSpec::Kind::TensorMap);
  const auto& d = m.args[0].tensor_map->desc;
  CHECK(d.global_dims[0] == 160);
  CHECK(d.global_dims[1] == 300);
  CHECK(d.global_strides[0] == 800);  // the view's rows are the matrix's (200 f32)
  const auto cubin = lrrt::formats::nvidia::parse_cubin(read_bytes(cubin_path));
  const auto it = std::find_if(cubin.kernels.begin(), cubin.kernels.end(), [](const auto& k) { return k.name == "tma_copy"; });
  REQUIRE(it != cubin.kernels.end());  // beside it: tma_store (tests/cuda/tma_copy/sequence.json)
  const auto& k = *it;
  REQUIRE(k.params.size() == 4);
  std::vector<lrrt::bundle::KernelArg> declared;
  for (const auto& p : k.params) declared.push_back({p.offset, p.size, false, "", false, ""});
  const auto placed = lrrt::bundle::at_kernel_offsets(m.args, declared);
  const auto layout = lrrt::bundle::layout_kernargs(placed);
  CHECK_NOTHROW(lrrt::bundle::check_kernargs(placed, layout, declared, "tma_copy"));
  CHECK(layout.size >= k.param_bytes);
  CHECK(layout.size <= (k.param_bytes + 7) / 8 * 8);
  for (size_t i = 0; i < 4; ++i) CHECK(layout.slots[i].offset == k.params[i].offset);
}

TEST_CASE("Triton tensor descriptors: a tensor map's default access is the IR analysis's for the descriptor") {
  // The fixture reads both descriptors; a copy of it whose IR also stores
  // through b_desc must get b_desc's buffer written (read-write), with no
  // "access" in the manifest, and an explicit "access" still wins.
  const fs::path src = kTritonDir / "entries/sm_90/tma_add_kernel";
  const fs::path tmp = fs::temp_directory_path() / fmt::format("lrrt_tdesc_access_{}", std::random_device{}());
  fs::create_directories(tmp / "tma_add_kernel");
  for (const auto& f : fs::directory_iterator(src)) fs::copy_file(f.path(), tmp / "tma_add_kernel" / f.path().filename());
  const fs::path ttir = tmp / "tma_add_kernel" / "tma_add_kernel.ttir";
  std::string ir;
  {
    std::ifstream in(ttir);
    ir.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::ifstream in(kTritonDir / "tma_add/manifest.json");
  json doc = json::parse(in);
  doc["code_object"] = (tmp / "tma_add_kernel").string();
  auto access_of = [&](const json& d, size_t arg) { return lrrt::bundle::parse_manifest(d, kTritonDir / "tma_add").args.at(arg).access; };
  CHECK(access_of(doc, 0) == lrrt::bundle::Access::Read);
  CHECK(access_of(doc, 5) == lrrt::bundle::Access::Read);

  const std::string store = "    tt.store %6, %7, %mask_21";
  const size_t at = ir.find(store);
  REQUIRE(at != std::string::npos);
  ir.insert(at, "    tt.descriptor_store %b_desc[%a, %a_8], %7 : !tt.tensordesc<tensor<32x64xf32>>, tensor<32x64xf32>\n");
  std::ofstream(ttir, std::ios::binary | std::ios::trunc) << ir;
  CHECK(access_of(doc, 0) == lrrt::bundle::Access::Read);
  CHECK(access_of(doc, 5) == lrrt::bundle::Access::ReadWrite);  // loaded and stored
  json declared = doc;
  declared["args"]["b_desc"]["tensor_map"]["access"] = "read";
  CHECK(access_of(declared, 5) == lrrt::bundle::Access::Read);

  // IR the analysis cannot read: read-write, never the narrower read.
  const size_t func = ir.find("%pid_m = tt.get_program_id");
  REQUIRE(func != std::string::npos);
  ir.insert(func, "    %undefined_use = arith.addi %nowhere, %nowhere : i32\n");
  std::ofstream(ttir, std::ios::binary | std::ios::trunc) << ir;
  CHECK(access_of(doc, 0) == lrrt::bundle::Access::ReadWrite);
  fs::remove_all(tmp);
}

TEST_CASE("tensor map: in a sequence step it parses, undeclared, and a declared access stays") {
  // The committed GPU sequence (tests/cuda/tma_copy/sequence.json): the
  // store's map declares no access (the runner's fences take it as read and
  // written), the copy's is declared read; its negative control declares the
  // store's read. A malformed map in a step names the step's field.
  const fs::path dir = kTritonDir.parent_path() / "cuda/tma_copy";
  const auto m = lrrt::bundle::load_manifest(dir / "sequence.json");
  REQUIRE(m.sequence);
  const auto& steps = m.sequence->steps;
  REQUIRE(steps.size() == 2);
  REQUIRE(steps[0].args.size() == 4);
  CHECK(steps[0].args[3].kind == ArgSpec::Kind::TensorMap);
  CHECK(steps[0].args[3].access == lrrt::bundle::Access::None);
  CHECK(steps[1].args[0].kind == ArgSpec::Kind::TensorMap);
  CHECK(steps[1].args[0].access == lrrt::bundle::Access::Read);
  const auto uses = lrrt::bundle::buffer_uses(steps[0].args);
  CHECK(std::any_of(uses.begin(), uses.end(), [&](const auto& u) {
    return u.arg == 3 && m.buffers[u.buffer].name == "mid" && u.access == lrrt::bundle::Access::None;
  }));
  const auto lie = lrrt::bundle::load_manifest(dir / "sequence_declared_read.json");
  CHECK(lie.sequence->steps[0].args[3].access == lrrt::bundle::Access::Read);

  std::ifstream in(dir / "sequence.json");
  json doc = json::parse(in);
  doc["sequence"][0]["args"][3]["tensor_map"]["box"] = {32, 300};
  CHECK_THROWS_WITH_AS(lrrt::bundle::parse_manifest(doc, dir), doctest::Contains("/sequence/0/args/3/tensor_map/box/1"),
                       ManifestError);
}
