// Containers users already have (docs/code-objects.md): compressed offload
// bundles (CCOB v1-3, zlib and zstd), compressed fatbin entries (zstd, LZ4),
// host binaries carrying .hip_fatbin / .nv_fatbin, arch-specific NVIDIA
// targets, and the choice of entry for a device. Fixtures come from the real
// toolchains (cmake/binaries.cmake); the CCOB versions clang-19 does not
// write are built here from a real bundle with zlib and zstd.
#include <doctest/doctest.h>
#include <lz4.h>
#include <zlib.h>
#include <zstd.h>

#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <set>

#include "formats_test_util.hpp"
#include "lrrt/formats/compression.hpp"
#include "lrrt/formats/container.hpp"
#include "lrrt/formats/inspect.hpp"
#include "lrrt/formats/nvidia.hpp"
#include "lrrt/formats/offload_bundle.hpp"
#include "lrrt/formats/select.hpp"

using namespace lrrt::formats;
using formats_test::append;
using formats_test::error_of;
using formats_test::read_file;

namespace {

std::string fixture(const std::string& name) { return std::string(LRRT_TEST_BINARY_DIR) + "/" + name; }
bool have(const std::string& path) { return std::filesystem::exists(path); }

std::string hex(const std::array<uint8_t, 16>& d) {
  std::string s;
  for (uint8_t b : d) s += fmt::format("{:02x}", b);
  return s;
}

uint64_t md5_low(std::span<const std::byte> b) {
  auto d = md5(b);
  uint64_t h = 0;
  for (int i = 0; i < 8; ++i) h |= uint64_t(d[i]) << (8 * i);
  return h;
}

std::vector<std::byte> zlib_compress(std::span<const std::byte> in) {
  uLongf size = compressBound(uLong(in.size()));
  std::vector<std::byte> out(size);
  REQUIRE(compress2(reinterpret_cast<Bytef*>(out.data()), &size, reinterpret_cast<const Bytef*>(in.data()),
                    uLong(in.size()), 9) == Z_OK);
  out.resize(size);
  return out;
}

std::vector<std::byte> zstd_compress(std::span<const std::byte> in) {
  std::vector<std::byte> out(ZSTD_compressBound(in.size()));
  size_t n = ZSTD_compress(out.data(), out.size(), in.data(), in.size(), 5);
  REQUIRE(!ZSTD_isError(n));
  out.resize(n);
  return out;
}

// A CCOB of `bundle` in clang's layout for `version` (1-3), zlib (0) or zstd (1).
std::vector<std::byte> ccob(std::span<const std::byte> bundle, uint16_t version, uint16_t method) {
  std::vector<std::byte> data = method == 0 ? zlib_compress(bundle) : zstd_compress(bundle);
  std::vector<std::byte> out = formats_test::bytes_of("CCOB");
  append<uint16_t>(out, version);
  append<uint16_t>(out, method);
  const uint64_t header = version == 1 ? 20 : version == 2 ? 24 : 32;
  if (version == 1) {
    append<uint32_t>(out, uint32_t(bundle.size()));
  } else if (version == 2) {
    append<uint32_t>(out, uint32_t(header + data.size()));
    append<uint32_t>(out, uint32_t(bundle.size()));
  } else {
    append<uint64_t>(out, header + data.size());
    append<uint64_t>(out, bundle.size());
  }
  append<uint64_t>(out, md5_low(bundle));
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

void check_same_entries(const std::vector<CodeObjectEntry>& got, const std::vector<CodeObjectEntry>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CAPTURE(want[i].id);
    CHECK(got[i].id == want[i].id);
    CHECK(got[i].target == want[i].target);
    CHECK(got[i].format == want[i].format);
    REQUIRE(got[i].bytes.size() == want[i].bytes.size());
    CHECK(std::equal(got[i].bytes.begin(), got[i].bytes.end(), want[i].bytes.begin()));
  }
}

void check_same_kernels(const Inspection& got, const Inspection& want) {
  REQUIRE(got.targets.size() == want.targets.size());
  for (size_t i = 0; i < got.targets.size(); ++i) {
    CAPTURE(want.targets[i].entry);
    CHECK(got.targets[i].target == want.targets[i].target);
    REQUIRE(got.targets[i].kernels.size() == want.targets[i].kernels.size());
    for (size_t k = 0; k < got.targets[i].kernels.size(); ++k) {
      const auto &a = got.targets[i].kernels[k], &b = want.targets[i].kernels[k];
      CHECK(a.name == b.name);
      CHECK(a.kernarg_size == b.kernarg_size);
      REQUIRE(a.args.size() == b.args.size());
      for (size_t j = 0; j < a.args.size(); ++j) {
        CHECK(a.args[j].offset == b.args[j].offset);
        CHECK(a.args[j].size == b.args[j].size);
        CHECK(a.args[j].value_kind == b.args[j].value_kind);
      }
    }
  }
}

// Every corruption either reads (the bytes still make sense) or is a
// FormatError: decoded entries included, never a crash or another exception.
void corrupt_and_read(const std::vector<std::byte>& original, std::mt19937& rng, int rounds, size_t from = 0) {
  std::uniform_int_distribution<size_t> at(from, original.size() - 1);
  int errors = 0;
  for (int r = 0; r < rounds; ++r) {
    auto b = original;
    const int kind = r % 3;
    if (kind == 0) {
      for (int k = 0; k < 4; ++k) b[at(rng)] = std::byte(rng());
    } else if (kind == 1) {
      b.resize(at(rng));
    } else {  // a size field near the start of some header: large values
      const size_t p = at(rng) & ~size_t(7);
      if (p + 8 <= b.size()) {
        uint64_t v = rng() % 2 ? ~uint64_t(0) - rng() % 64 : uint64_t(rng()) << (rng() % 32);
        std::memcpy(b.data() + p, &v, 8);
      }
    }
    try {
      for (auto& e : code_object_entries(b)) decode_entry(e);
      (void)inspect_code_object(b);
    } catch (const FormatError&) {
      ++errors;
    }
  }
  CHECK(errors > 0);  // the corruptions were noticed, some of the time at least
}

}  // namespace

TEST_CASE("formats containers: MD5 is RFC 1321's (its test suite)") {
  auto h = [](std::string_view s) { return hex(md5(formats_test::bytes_of(s))); };
  CHECK(h("") == "d41d8cd98f00b204e9800998ecf8427e");
  CHECK(h("a") == "0cc175b9c0f1b6a831c399e269772661");
  CHECK(h("abc") == "900150983cd24fb0d6963f7d28e17f72");
  CHECK(h("message digest") == "f96b697d7cb7938d525a2f31aaf161d0");
  CHECK(h("abcdefghijklmnopqrstuvwxyz") == "c3fcd3d76192e4007dfb496cca67e13b");
  CHECK(h("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") == "d174ab98d277d9f5a5611c2c9f419d9f");
  CHECK(h("12345678901234567890123456789012345678901234567890123456789012345678901234567890") ==
        "57edf4a22be3c955ac49da2e2107b67a");
}

TEST_CASE("formats containers: decompress gives exactly the recorded size or a FormatError") {
  std::mt19937 rng(std::random_device{}());
  std::vector<std::byte> data(1 + rng() % 50000);
  for (auto& b : data) b = std::byte(rng() % 7);  // compressible
  for (Codec codec : {Codec::Zlib, Codec::Zstd, Codec::Lz4Block}) {
    CAPTURE(codec_name(codec));
    std::vector<std::byte> packed;
    if (codec == Codec::Zlib) packed = zlib_compress(data);
    else if (codec == Codec::Zstd) packed = zstd_compress(data);
    else {
      packed.resize(LZ4_compressBound(int(data.size())));
      int n = LZ4_compress_default(reinterpret_cast<const char*>(data.data()), reinterpret_cast<char*>(packed.data()),
                                   int(data.size()), int(packed.size()));
      REQUIRE(n > 0);
      packed.resize(size_t(n));
    }
    auto out = decompress(codec, packed, data.size(), "test");
    CHECK(out == data);
    // A size that lies either way, a truncated stream, a claim no ratio reaches.
    CHECK_THROWS_AS(decompress(codec, packed, data.size() + 1, "test"), FormatError);
    CHECK_THROWS_AS(decompress(codec, packed, data.size() - 1 + (data.size() == 1), "test"), FormatError);
    CHECK_THROWS_AS(decompress(codec, std::span(packed).first(packed.size() / 2), data.size(), "test"), FormatError);
    const std::string huge = error_of([&] { decompress(codec, packed, kMaxDecompressedBytes + 1, "what"); });
    CHECK(huge.find("what: ") == 0);
    CHECK(huge.find("more than any code object") != std::string::npos);
    CHECK_THROWS_AS(decompress(codec, std::span(packed).first(std::min<size_t>(packed.size(), 16)), uint64_t(1) << 30, "t"),
                    FormatError);
  }
}

#ifdef LRRT_TEST_AMD_BUNDLES
TEST_CASE("formats containers: compressed bundles, versions 1-3 with zlib and zstd, read as the plain bundle") {
  const auto plain = formats_test::read_kernel("vector_add.bundle.hsaco");
  const auto want = code_object_entries(plain);
  REQUIRE(want.size() >= 2);
  for (uint16_t version : {1, 2, 3})
    for (uint16_t method : {0, 1}) {
      CAPTURE(version);
      CAPTURE(method);
      const auto c = ccob(plain, version, method);
      CHECK(detect_format(c) == Format::CompressedOffloadBundle);
      auto got = code_object_entries(c);
      check_same_entries(got, want);
      CHECK(got[0].compression == (method ? "zstd" : "zlib"));
      OffloadBundle b = read_offload_bundle(c);
      CHECK(b.compressed_version == version);
      CHECK(b.stored_size == c.size());
      // The hash is checked: one bit of it wrong is an error naming it.
      auto bad_hash = c;
      bad_hash[version == 1 ? 12 : version == 2 ? 16 : 24] ^= std::byte{1};
      CHECK(error_of([&] { code_object_entries(bad_hash); }).find("does not match its") != std::string::npos);
      // Sizes that lie.
      auto bad_size = c;
      if (version == 1) bad_size[8] ^= std::byte{4};
      else if (version == 2) bad_size[12] ^= std::byte{4};
      else bad_size[16] ^= std::byte{4};
      CHECK_THROWS_AS(code_object_entries(bad_size), FormatError);
      if (version >= 2) {
        auto too_long = c;
        too_long[8] = std::byte(uint8_t(too_long[8]) + 1);
        CHECK(error_of([&] { code_object_entries(too_long); }).find("bytes") != std::string::npos);
      }
    }
  // Versions and methods clang does not write.
  auto v4 = ccob(plain, 3, 1);
  v4[4] = std::byte{4};
  CHECK(error_of([&] { code_object_entries(v4); }).find("version 4") != std::string::npos);
  auto m7 = ccob(plain, 2, 1);
  m7[6] = std::byte{7};
  CHECK(error_of([&] { code_object_entries(m7); }).find("method 7") != std::string::npos);
}

TEST_CASE("formats containers: clang-19's --offload-compress bundle holds the same code objects as the plain one") {
  const auto compressed = read_file(fixture("vector_add.bundle.ccob.hsaco"));
  const auto plain = formats_test::read_kernel("vector_add.bundle.hsaco");
  CHECK(detect_format(compressed) == Format::CompressedOffloadBundle);
  // Two compiles differ in a few bytes (clang names each offload unit after
  // its options), so the code is compared as inspect lists it.
  check_same_kernels(inspect_code_object(compressed), inspect_code_object(plain));
  const OffloadBundle b = read_offload_bundle(compressed);
  CHECK(b.compression == "zstd");  // clang-19 picks zstd where it has it
  CHECK(b.compressed_version == 2);
  std::mt19937 rng(std::random_device{}());
  corrupt_and_read(compressed, rng, 300);
}

TEST_CASE("formats containers: host libraries with .hip_fatbin, as clang -x hip builds them, read without loading") {
  for (std::string name : {"scale.hip.so", "scale.hip.ccob.so"}) {
    CAPTURE(name);
    const auto lib = read_file(fixture(name));
    CHECK(detect_format(lib) == Format::HostSharedObject);
    CHECK(file_format(lib) == Format::HostBinary);
    const auto entries = code_object_entries(lib);
    std::set<std::string> targets;
    for (const auto& e : entries) {
      CHECK(e.section == ".hip_fatbin");
      CHECK(e.container == Format::HostBinary);
      if (e.format == Format::Hsaco) targets.insert(e.target);
    }
    CHECK(targets == std::set<std::string>{"gfx90a", "gfx1100"});
    const Inspection in = inspect_code_object(lib);
    CHECK(in.format == Format::HostBinary);
    size_t with_kernels = 0;
    for (const auto& t : in.targets) {
      if (t.format != Format::Hsaco) continue;
      ++with_kernels;
      std::set<std::string> names;
      for (const auto& k : t.kernels) names.insert(k.name);
      CHECK(names == std::set<std::string>{"scale_f32", "offset_i32"});
      for (const auto& k : t.kernels)
        if (k.name == "scale_f32") {
          REQUIRE(k.explicit_kernarg_size);
          CHECK(*k.explicit_kernarg_size == 16);  // float*, float, unsigned
        }
    }
    CHECK(with_kernels == 2);
    // The device's entry, and why.
    const Selection s = select_for_amdgpu(lib, amdgpu::parse_target_id("gfx90a:xnack+"));
    CHECK(s.entry.target == "gfx90a");
    CHECK(s.description.find("section .hip_fatbin") != std::string::npos);
    CHECK(s.description.find("runs on the device's gfx90a:xnack+") != std::string::npos);
    const std::string none = error_of([&] { select_for_amdgpu(lib, amdgpu::parse_target_id("gfx942")); });
    CHECK(none.find("gfx942") != std::string::npos);
    CHECK(none.find("gfx90a") != std::string::npos);
    CHECK(none.find("gfx1100") != std::string::npos);
    std::mt19937 rng(std::random_device{}());
    corrupt_and_read(lib, rng, 150);
  }
}

TEST_CASE("formats containers: a .hip_fatbin holding lrrt's bundle, plain or compressed, selects as the bundle does") {
  const auto plain = formats_test::read_kernel("vector_add.bundle.hsaco");
  const auto agent = amdgpu::parse_target_id("gfx1100");
  const Selection want = select_for_amdgpu(plain, agent);
  CHECK(want.description.find("exact ISA") != std::string::npos);
  for (std::string name : {"vector_add.hipfatbin.so", "vector_add.hipfatbin.ccob.so"}) {
    CAPTURE(name);
    const auto lib = read_file(fixture(name));
    const Selection s = select_for_amdgpu(lib, agent);
    CHECK(s.entry.target == want.entry.target);
    check_same_kernels(inspect_code_object(s.entry.bytes), inspect_code_object(want.entry.bytes));
    if (name.find("ccob") == std::string::npos) {  // the very bundle lrrt built: the very bytes
      REQUIRE(s.entry.bytes.size() == want.entry.bytes.size());
      CHECK(std::equal(s.entry.bytes.begin(), s.entry.bytes.end(), want.entry.bytes.begin()));
    }
    CHECK(s.description.find(name.find("ccob") != std::string::npos ? "compressed bundle 0 in section .hip_fatbin"
                                                                     : "bundle 0 in section .hip_fatbin") !=
          std::string::npos);
  }
}
#endif

#ifdef LRRT_TEST_NVIDIA_KERNELS
TEST_CASE("formats containers: nvcc -shared libraries, plain, zstd- and LZ4-compressed, hold the same code") {
  const auto plain = read_file(fixture("vector_add.cuda.so"));
  CHECK(file_format(plain) == Format::HostBinary);
  auto want = code_object_entries(plain);
  for (auto& e : want) decode_entry(e);
  std::set<std::string> targets;
  for (const auto& e : want) {
    CHECK(e.section == ".nv_fatbin");
    if (!e.bytes.empty()) targets.insert(e.target);
  }
  CHECK(targets.count("sm_90"));
  CHECK(targets.count("compute_90"));
  for (auto [name, codec] : {std::pair{"vector_add.cuda.zstd.so", "zstd"}, std::pair{"vector_add.cuda.lz4.so", "lz4"}}) {
    CAPTURE(name);
    const auto lib = read_file(fixture(name));
    auto got = code_object_entries(lib);
    bool any_compressed = false;
    for (auto& e : got) {
      any_compressed |= e.compression == codec;
      if (!e.compression.empty()) CHECK(e.pending());
      decode_entry(e);
    }
    CHECK(any_compressed);
    // The decoded cubin of each compressed library lists the kernels the
    // plain one does, with the same parameter layout.
    const Inspection in = inspect_code_object(lib), ref = inspect_code_object(plain);
    auto kernels = [](const Inspection& i, const std::string& target) {
      std::map<std::string, std::vector<std::pair<uint32_t, uint32_t>>> out;
      for (const auto& t : i.targets)
        if (t.target == target)
          for (const auto& k : t.kernels) {
            auto& args = out[k.name];
            for (const auto& a : k.args) args.emplace_back(a.offset, a.size);
          }
      return out;
    };
    CHECK(kernels(in, "sm_90") == kernels(ref, "sm_90"));
    CHECK(kernels(in, "sm_90").count("vector_add_f32"));
    CHECK(kernels(in, "compute_90") == kernels(ref, "compute_90"));
    std::mt19937 rng(std::random_device{}());
    corrupt_and_read(lib, rng, 100);
  }
}

TEST_CASE("formats containers: the cuda entry for a device: exact SASS, compatible SASS, then PTX, and why") {
  // nvcc -shared writes a second fatbin with no kernels: the part chosen is
  // the one holding them.
  for (std::string name : {"vector_add.cuda.so", "vector_add.cuda.zstd.so", "vector_add.cuda.lz4.so"}) {
    CAPTURE(name);
    const auto file = read_file(fixture(name));  // uncompressed entries are views of it
    const auto parts = select_parts_for_cuda(file, 90, "device 0 (H200)");
    REQUIRE(parts.size() == 1);
    const auto names = nvidia::image_kernel_names(parts[0].entry.bytes);
    CHECK(std::set<std::string>(names.begin(), names.end()) == std::set<std::string>{"vector_add_f32", "vector_add_i32"});
  }
  const auto lib = read_file(fixture("vector_add.cuda.zstd.so"));
  Selection s = select_for_cuda(lib, 90, "device 0 (H200)");
  CHECK(s.entry.format == Format::Cubin);
  CHECK(s.description.find("exact SASS") != std::string::npos);
  CHECK(s.description.find("section .nv_fatbin") != std::string::npos);
  CHECK(detect_format(s.entry.bytes) == Format::Cubin);  // decoded
  s = select_for_cuda(lib, 100, "device 0 (B200)");
  CHECK(s.entry.format == Format::Ptx);
  CHECK(s.description.find("PTX compute_90, JIT-compiled") != std::string::npos);
  const std::string none = error_of([&] { select_for_cuda(lib, 89, "device 0 (L4)"); });
  CHECK(none.find("nothing in the file runs on device 0 (L4) (sm_89)") != std::string::npos);
  CHECK(none.find("sm_90, compute_90") != std::string::npos);

  const auto ptx80 = read_file(fixture("vector_add.ptx80.fatbin"));
  s = select_for_cuda(ptx80, 86, "device 0 (A40)");
  CHECK(s.entry.target == "sm_80");
  CHECK(s.description.find("compatible SASS") != std::string::npos);
  s = select_for_cuda(ptx80, 90, "device 0 (H200)");
  CHECK(s.entry.target == "compute_80");
  CHECK(s.description.find("PTX") != std::string::npos);
}

TEST_CASE("formats containers: sm_90a is reported as sm_90a and runs only on sm_90") {
  const auto cubin = read_file(fixture("vector_add.sm_90a.cubin"));
  const auto plain = formats_test::read_kernel("vector_add.sm_90.cubin");
  CHECK(nvidia::parse_cubin(cubin).variant == 'a');
  CHECK(nvidia::parse_cubin(plain).variant == 0);
  const Inspection in = inspect_code_object(cubin);
  REQUIRE(in.targets.size() == 1);
  CHECK(in.targets[0].target == "sm_90a");
  CHECK(select_for_cuda(cubin, 90, "device 0 (H200)").entry.format == Format::Cubin);
  const std::string msg = error_of([&] { select_for_cuda(cubin, 100, "device 0 (B200)"); });
  CHECK(msg.find("sm_90a") != std::string::npos);
  CHECK(msg.find("sm_100") != std::string::npos);
  CHECK(msg.find("arch-specific: it runs only on sm_90") != std::string::npos);
  // The plain sm_90 cubin runs on a later minor version of the same major.
  CHECK(select_for_cuda(plain, 90, "d").entry.format == Format::Cubin);
  // Family-specific: sm_100f, from the tool options nvcc records.
  const auto family = read_file(fixture("vector_add.sm_100f.cubin"));
  CHECK(nvidia::parse_cubin(family).variant == 'f');
  CHECK(inspect_code_object(family).targets.at(0).target == "sm_100f");
  CHECK(select_for_cuda(family, 103, "device 0 (B300)").entry.format == Format::Cubin);
  const std::string other = error_of([&] { select_for_cuda(family, 90, "device 0 (H200)"); });
  CHECK(other.find("sm_100f") != std::string::npos);
  CHECK(other.find("family-specific") != std::string::npos);
  CHECK(nvidia::sass_runs_on(90, 'a', 90));
  CHECK(!nvidia::sass_runs_on(90, 'a', 91));
  CHECK(nvidia::sass_runs_on(100, 'f', 103));
  CHECK(!nvidia::sass_runs_on(100, 'f', 110));
  CHECK(nvidia::ptx_runs_on(90, 0, 120));
  CHECK(!nvidia::ptx_runs_on(90, 'a', 100));
}
TEST_CASE("formats containers: runs_on is the entry choice's rule, entry by entry (inspect --runs-on)") {
  // What each NVIDIA target runs on, as the entry choice decides it: exact
  // and arch-specific SASS, compatible SASS, PTX for the JIT.
  const DeviceTarget sm90 = parse_device_target("sm_90"), sm86 = parse_device_target("sm_86"),
                     sm103 = parse_device_target("sm_103"), sm120 = parse_device_target("sm_120");
  CHECK(sm90.cuda_sm == 90);
  CHECK_FALSE(sm90.agent);
  struct Expect {
    Format format;
    const char* target;
    bool on90, on86, on103, on120;
  };
  const Expect table[] = {
      {Format::Cubin, "sm_90", true, false, false, false},   {Format::Cubin, "sm_90a", true, false, false, false},
      {Format::Cubin, "sm_80", false, true, false, false},   {Format::Cubin, "sm_86", false, true, false, false},
      {Format::Cubin, "sm_100f", false, false, true, false}, {Format::Cubin, "sm_100a", false, false, false, false},
      {Format::Ptx, "compute_90", true, false, true, true},  {Format::Ptx, "compute_80", true, true, true, true},
      {Format::Ptx, "compute_90a", true, false, false, false}, {Format::Ptx, "compute_100", false, false, true, true},
      {Format::HostSharedObject, "x86_64", false, false, false, false},
      {Format::Hsaco, "gfx90a", false, false, false, false},
  };
  for (const auto& e : table) {
    CAPTURE(e.target);
    CHECK(runs_on(e.format, e.target, sm90) == e.on90);
    CHECK(runs_on(e.format, e.target, sm86) == e.on86);
    CHECK(runs_on(e.format, e.target, sm103) == e.on103);
    CHECK(runs_on(e.format, e.target, sm120) == e.on120);
  }
  // AMD: the target-ID rules (a feature left open matches either).
  const DeviceTarget minus = parse_device_target("gfx90a:xnack-"), any = parse_device_target("gfx90a"),
                     both = parse_device_target("gfx90a:sramecc+:xnack+");
  REQUIRE(minus.agent);
  CHECK(minus.agent->processor == "gfx90a");
  CHECK(runs_on(Format::Hsaco, "gfx90a", minus));
  CHECK(runs_on(Format::Hsaco, "gfx90a:xnack-", minus));
  CHECK_FALSE(runs_on(Format::Hsaco, "gfx90a:xnack+", minus));
  CHECK(runs_on(Format::Hsaco, "gfx90a:sramecc+", minus));
  CHECK(runs_on(Format::Hsaco, "gfx90a:xnack+", any));
  CHECK(runs_on(Format::Hsaco, "gfx90a:xnack-", any));
  CHECK_FALSE(runs_on(Format::Hsaco, "gfx90a:sramecc-", both));
  CHECK_FALSE(runs_on(Format::Hsaco, "gfx1100", any));
  CHECK_FALSE(runs_on(Format::Cubin, "sm_90", any));
  // Not devices: code targets and junk, each saying what it takes.
  for (const char* bad : {"sm_90a", "sm_100f", "compute_90", "sm_", "sm_9", "gfx", "gfx90a:xnack", "gfx90a:foo+",
                          "gfx90a:xnack+:", "x86_64", "", "gfxZZ"}) {
    CAPTURE(bad);
    const std::string msg = error_of([&] { (void)parse_device_target(bad); });
    CHECK_MESSAGE(msg.find("names no device") != std::string::npos, msg);
  }
  CHECK(error_of([&] { (void)parse_device_target("sm_90a"); }).find("name the device, sm_90") != std::string::npos);

  // The same rule as the choice: across the fixtures and devices, the entry
  // select_for_cuda takes is one runs_on accepts, and when nothing is taken
  // runs_on accepts no entry.
  std::vector<std::string> files = {fixture("vector_add.cuda.so"), fixture("vector_add.ptx80.fatbin"),
                                    fixture("vector_add.sm_90a.cubin"), fixture("vector_add.sm_100f.cubin")};
  for (const char* name : {"saxpy.fatbin", "saxpy.sm_90.cubin", "saxpy.ptx"})
    files.push_back(std::string(LRRT_TEST_KERNEL_DIR) + "/" + name);
  for (const auto& file : files) {
    const auto image = read_file(file);
    for (const uint32_t sm : {50u, 75u, 80u, 86u, 89u, 90u, 100u, 103u, 120u}) {
      CAPTURE(file);
      CAPTURE(sm);
      const DeviceTarget device = parse_device_target("sm_" + std::to_string(sm));
      InspectFilter filter;
      filter.runs_on = device;
      const Inspection listed = inspect_code_object(image, filter);
      for (const auto& t : listed.targets) CHECK(runs_on(t.format, t.target, device));
      std::optional<Selection> chosen;
      try {
        chosen = select_for_cuda(image, sm, "device");
      } catch (const FormatError&) {
      }
      if (!chosen) {
        CHECK(listed.targets.empty());
        continue;
      }
      const std::string target =
          chosen->entry.target.empty() ? inspect_code_object(image).targets.at(0).target : chosen->entry.target;
      CHECK(runs_on(chosen->entry.format, target, device));
      bool listed_chosen = false;
      for (const auto& t : listed.targets) listed_chosen |= t.target == target && t.offset == chosen->entry.offset;
      CHECK(listed_chosen);
      // Everything the file holds that runs_on refuses is left out.
      for (const auto& t : inspect_code_object(image).targets)
        if (!runs_on(t.format, t.target, device))
          for (const auto& l : listed.targets) CHECK_FALSE((l.target == t.target && l.offset == t.offset));
    }
  }
}
#endif


TEST_CASE("formats containers: a host ELF that is neither lrrt's nor carrying GPU code says so") {
  // lrrt's own host kernel library still reads as one.
  const auto host = formats_test::read_kernel("vector_add.host.so");
  CHECK(file_format(host) == Format::HostSharedObject);
  CHECK(inspect_code_object(host).targets.at(0).kernels.size() == 2);
  // This test binary's libc: an ordinary library.
  const auto libc = read_file("/lib/x86_64-linux-gnu/libc.so.6");
  const std::string msg = error_of([&] { inspect_code_object(libc); });
  CHECK(msg.find("no GPU code section") != std::string::npos);
  CHECK(msg.find("lrrt_host_library_query") != std::string::npos);
}
