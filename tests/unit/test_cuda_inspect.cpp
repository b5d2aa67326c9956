// The pure parts of the cuda backend: cubin / fatbin / PTX parsing and the
// architecture check, on nvcc-built kernels when the build made them and on
// synthetic images everywhere (cuda_inspect.cpp is in every build).
#include <doctest/doctest.h>

#if defined(LRRT_HAVE_CUDA_INSPECT)

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "code_object_format.hpp"
#include "cuda/cuda_inspect.hpp"

namespace {

using lrrt::rt::cuda::check_image_for_device;

std::vector<std::byte> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(chars.size());
  if (!chars.empty()) std::memcpy(out.data(), chars.data(), chars.size());
  return out;
}

// The nvcc-built kernel, or empty (with a message) when this build has no nvcc.
std::vector<std::byte> built_kernel(const std::string& file) {
  std::string path = std::string(LRRT_TEST_KERNEL_DIR) + "/" + file;
  if (!std::filesystem::exists(path)) {
    MESSAGE("skipped: ", path, " was not built (no nvcc in this build)");
    return {};
  }
  return read_file(path);
}

std::span<const std::byte> bytes(const std::vector<std::byte>& v) { return {v.data(), v.size()}; }

// A minimal cubin header: ELF64, EM_CUDA, ABI version 8, SM in e_flags.
std::vector<std::byte> fake_cubin(uint32_t sm) {
  Elf64_Ehdr h{};
  std::memcpy(h.e_ident, ELFMAG, SELFMAG);
  h.e_ident[EI_CLASS] = ELFCLASS64;
  h.e_ident[EI_DATA] = ELFDATA2LSB;
  h.e_ident[EI_VERSION] = EV_CURRENT;
  h.e_ident[EI_OSABI] = 0x41;
  h.e_ident[EI_ABIVERSION] = 8;
  h.e_type = ET_EXEC;
  h.e_machine = 190;
  h.e_version = EV_CURRENT;
  h.e_ehsize = sizeof(Elf64_Ehdr);
  h.e_flags = 0x06000004u | (sm << 8);
  std::vector<std::byte> out(sizeof(h));
  std::memcpy(out.data(), &h, sizeof(h));
  return out;
}

std::vector<std::byte> text(std::string_view s) {
  std::vector<std::byte> out(s.size());
  std::memcpy(out.data(), s.data(), s.size());
  return out;
}

}  // namespace

TEST_CASE("cuda inspect: architecture rules") {
  using namespace lrrt::rt::cuda;
  CHECK(cubin_runs_on(90, 90));
  CHECK(cubin_runs_on(80, 86));
  CHECK_FALSE(cubin_runs_on(86, 80));
  CHECK_FALSE(cubin_runs_on(80, 90));
  CHECK_FALSE(cubin_runs_on(90, 100));
  CHECK(ptx_runs_on(80, 90));
  CHECK_FALSE(ptx_runs_on(100, 90));
}

TEST_CASE("cuda inspect: a cubin for another arch names both targets") {
  auto cubin = fake_cubin(80);
  CHECK(lrrt::rt::detect_code_object_format(bytes(cubin)) == lrrt::rt::CodeObjectFormat::CudaCubin);
  CHECK(lrrt::rt::cuda::cubin_sm(bytes(cubin)) == 80);
  std::string msg = check_image_for_device(bytes(cubin), 90, "device 0 (NVIDIA H200, sm_90)");
  CHECK(msg.find("sm_80") != std::string::npos);
  CHECK(msg.find("sm_90") != std::string::npos);
  CHECK(msg.find("NVIDIA H200") != std::string::npos);
  CHECK(check_image_for_device(bytes(fake_cubin(90)), 90, "d").empty());
  // Older ELF ABI: SM in the low byte.
  auto old = fake_cubin(0);
  Elf64_Ehdr h;
  std::memcpy(&h, old.data(), sizeof(h));
  h.e_ident[EI_ABIVERSION] = 7;
  h.e_flags = 0x00500050;  // sm_80 the old way
  std::memcpy(old.data(), &h, sizeof(h));
  CHECK(lrrt::rt::cuda::cubin_sm(bytes(old)) == 80);
}

TEST_CASE("cuda inspect: PTX parameters, .ptr marks and target check") {
  const char* ptx = R"(//
// a comment with .entry fake( inside
.version 8.4
.target sm_90a
.address_size 64

.visible .entry add_kernel(
	.param .u64 .ptr.global.align 1 add_kernel_param_0,
	.param .f32 add_kernel_param_1,
	.param .align 8 .b8 add_kernel_param_2[12],
	.param .u32 add_kernel_param_3
)
{ ret; }
)";
  auto image = text(ptx);
  CHECK(lrrt::rt::detect_code_object_format(bytes(image)) == lrrt::rt::CodeObjectFormat::CudaPtx);
  auto info = lrrt::rt::cuda::parse_ptx(ptx);
  CHECK(info.version == "8.4");
  CHECK(info.sm == 90);
  REQUIRE(info.kernels.size() == 1);
  const auto& k = info.kernels[0];
  CHECK(k.name == "add_kernel");
  REQUIRE(k.params.size() == 4);
  CHECK(k.params[0].pointer);
  CHECK(k.params[0].size == 8);
  CHECK(k.params[1].offset == 8);
  CHECK(k.params[1].size == 4);
  CHECK(k.params[2].offset == 16);
  CHECK(k.params[2].size == 12);
  CHECK(k.params[3].offset == 28);
  CHECK(k.param_bytes == 32);
  CHECK(check_image_for_device(bytes(image), 90, "d").empty());
  std::string msg = check_image_for_device(bytes(image), 80, "device 0 (A100, sm_80)");
  CHECK(msg.find("sm_90a") != std::string::npos);
  CHECK(msg.find("sm_80") != std::string::npos);
  auto j = lrrt::rt::inspect_cuda_image(bytes(image));
  CHECK(j["format"] == "ptx");
  CHECK(j["kernels"][0]["params"][0]["pointer"] == true);
}

TEST_CASE("cuda inspect: nvcc-built saxpy cubin") {
  auto cubin = built_kernel("saxpy.sm_90.cubin");
  if (cubin.empty()) return;
  auto info = lrrt::rt::cuda::parse_cubin(bytes(cubin));
  CHECK(info.sm == 90);
  REQUIRE(info.kernels.size() == 1);
  const auto& k = info.kernels[0];
  CHECK(k.name == "saxpy");
  REQUIRE(k.has_params);
  // (float a, const float* x, float* y, uint32_t n)
  REQUIRE(k.params.size() == 4);
  CHECK(k.params[0].offset == 0);
  CHECK(k.params[0].size == 4);
  CHECK(k.params[1].offset == 8);
  CHECK(k.params[1].size == 8);
  CHECK(k.params[2].offset == 16);
  CHECK(k.params[3].offset == 24);
  CHECK(k.params[3].size == 4);
  CHECK(k.param_bytes == 28);
  CHECK(k.registers > 0);
  auto j = lrrt::rt::inspect_cuda_image(bytes(cubin));
  CHECK(j["arch"] == "sm_90");
  CHECK(j["kernels"][0]["name"] == "saxpy");
  CHECK(check_image_for_device(bytes(cubin), 90, "d").empty());
  std::string msg = check_image_for_device(bytes(cubin), 100, "device 0 (B200, sm_100)");
  CHECK(msg.find("built for sm_90") != std::string::npos);
  CHECK(msg.find("sm_100") != std::string::npos);
}

TEST_CASE("cuda inspect: nvcc-built kernels: static shared memory and several kernels") {
  auto reduce = built_kernel("reduce.sm_90.cubin");
  if (reduce.empty()) return;
  auto r = lrrt::rt::cuda::parse_cubin(bytes(reduce));
  REQUIRE(r.kernels.size() == 1);
  CHECK(r.kernels[0].name == "reduce_sum_f32");
  // 4 KiB scratch; sm_90 sections also count the 1 KiB the system reserves.
  CHECK(r.kernels[0].static_shared_bytes >= 4096);
  CHECK(r.kernels[0].static_shared_bytes <= 4096 + 1024);
  auto names = lrrt::rt::cuda::image_kernel_names(bytes(built_kernel("vector_add.sm_90.cubin")));
  CHECK(names.size() == 2);
  CHECK(std::find(names.begin(), names.end(), "vector_add_f32") != names.end());
  CHECK(std::find(names.begin(), names.end(), "vector_add_i32") != names.end());
}

TEST_CASE("cuda inspect: nvcc-built fatbin lists its cubin and PTX") {
  auto fatbin = built_kernel("saxpy.fatbin");
  if (fatbin.empty()) return;
  CHECK(lrrt::rt::detect_code_object_format(bytes(fatbin)) ==
        lrrt::rt::CodeObjectFormat::CudaFatbin);
  auto f = lrrt::rt::cuda::parse_fatbin(bytes(fatbin));
  REQUIRE(f.entries.size() == 2);
  bool cubin = false, ptx = false;
  for (const auto& e : f.entries) {
    CHECK(e.sm == 90);
    CHECK(e.compression.empty());  // built with -no-compress
    if (e.kind == "cubin") {
      cubin = true;
      REQUIRE(e.cubin.has_value());
      CHECK(e.cubin->kernels.at(0).name == "saxpy");
      CHECK(e.cubin->kernels.at(0).param_bytes == 28);
    }
    if (e.kind == "ptx") {
      ptx = true;
      REQUIRE(e.ptx.has_value());
      CHECK(e.ptx->kernels.at(0).params.size() == 4);
    }
  }
  CHECK(cubin);
  CHECK(ptx);
  auto j = lrrt::rt::inspect_cuda_image(bytes(fatbin));
  CHECK(j["format"] == "fatbin");
  CHECK(j["entries"].size() == 2);
  CHECK(lrrt::rt::cuda::describe_image_targets(bytes(fatbin)) == "sm_90 cubin, compute_90 PTX");
  std::string msg = check_image_for_device(bytes(fatbin), 80, "device 0 (A100, sm_80)");
  CHECK(msg.find("sm_90 cubin, compute_90 PTX") != std::string::npos);
  CHECK(check_image_for_device(bytes(fatbin), 100, "d").empty());  // PTX JITs forward

  auto ptx_image = built_kernel("saxpy.ptx");
  auto p = lrrt::rt::cuda::parse_ptx(
      std::string_view(reinterpret_cast<const char*>(ptx_image.data()), ptx_image.size()));
  REQUIRE(p.kernels.size() == 1);
  CHECK(p.kernels[0].param_bytes == 28);
}

TEST_CASE("cuda inspect: garbage is rejected with a sentence") {
  auto junk = text("not a code object at all");
  CHECK_THROWS_AS(lrrt::rt::inspect_cuda_image(bytes(junk)), std::runtime_error);
  auto truncated = fake_cubin(90);
  truncated.resize(40);
  CHECK(check_image_for_device(bytes(truncated), 90, "d").empty());
  std::vector<std::byte> bad_fatbin(16);
  uint32_t magic = 0xBA55ED50u;
  std::memcpy(bad_fatbin.data(), &magic, 4);
  uint64_t huge = 1ull << 40;
  std::memcpy(bad_fatbin.data() + 8, &huge, 8);
  auto f = lrrt::rt::cuda::parse_fatbin(bytes(bad_fatbin));
  CHECK(f.entries.empty());
}

#endif  // LRRT_HAVE_CUDA_INSPECT

#if defined(LRRT_HAVE_CUDA)
#include <cstdlib>

#include "backend.hpp"

namespace lrrt::rt {
std::unique_ptr<Backend> make_cuda_backend();
}

TEST_CASE("cuda backend: initialize never throws and says why when unusable") {
  auto backend = lrrt::rt::make_cuda_backend();
  auto status = backend->initialize();
  if (status.usable) {
    CHECK(backend->device_count() > 0);
  } else {
    MESSAGE("cuda backend unusable here: ", status.message);
    CHECK_FALSE(status.message.empty());
    CHECK(status.message.find('\n') == std::string::npos);
    CHECK(backend->device_count() == 0);
  }
}
#endif
