// lrrt_formats' NVIDIA readers: cubin / fatbin / PTX parsing and the
// architecture checks, on nvcc-built kernels when the build made them
// (LRRT_TEST_NVIDIA_KERNELS) and on synthetic images everywhere, including
// fatbins and cubins whose sizes lie.
#include <doctest/doctest.h>
#include <elf.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "formats_test_util.hpp"
#include "lrrt/formats/container.hpp"
#include "lrrt/formats/format.hpp"
#include "lrrt/formats/inspect.hpp"
#include "lrrt/formats/nvidia.hpp"

using namespace lrrt::formats;
using namespace lrrt::formats::nvidia;
using namespace formats_test;

namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

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

// A cubin with one entry kernel "k" whose .nv.info.k records two
// parameters, and .nv.info with its register count.
ElfWriter::Built cubin_with_params() {
  ElfWriter w;
  w.machine = 190;
  w.type = ET_EXEC;
  w.abi_version = 8;
  w.flags = 0x06005a04u;
  std::vector<uint32_t> names;
  auto strings = ElfWriter::strtab({"k"}, &names);
  uint32_t text = w.add({".text.k", SHT_PROGBITS, std::vector<std::byte>(16), 0, 0, 0, 0, 4});
  uint32_t strtab = w.add({".strtab", SHT_STRTAB, strings});
  Elf64_Sym k = symbol(names[0], STT_FUNC, uint16_t(text), 0, 16);
  k.st_other = 0x10;  // STO_CUDA_ENTRY
  w.add({".symtab", SHT_SYMTAB, symtab({k}), 0, strtab, 1, sizeof(Elf64_Sym), 8});
  std::vector<std::byte> info;  // EIFMT_SVAL, EIATTR_REGCOUNT: symbol 1, 40 registers
  append<uint8_t>(info, 0x04);
  append<uint8_t>(info, 0x2f);
  append<uint16_t>(info, 8);
  append<uint32_t>(info, 1);
  append<uint32_t>(info, 40);
  w.add({".nv.info", 0x70000000, info, 0, 0, 0, 0, 4});
  std::vector<std::byte> kinfo;
  auto kparam = [&](uint16_t ordinal, uint16_t offset, uint32_t size) {
    append<uint8_t>(kinfo, 0x04);
    append<uint8_t>(kinfo, 0x17);
    append<uint16_t>(kinfo, 12);
    append<uint32_t>(kinfo, 0);
    append<uint16_t>(kinfo, ordinal);
    append<uint16_t>(kinfo, offset);
    append<uint32_t>(kinfo, (size << 18) | 0x1f000);
  };
  kparam(1, 8, 8);
  kparam(0, 0, 4);
  append<uint8_t>(kinfo, 0x03);  // EIFMT_HVAL, EIATTR_CBANK_PARAM_SIZE 16
  append<uint8_t>(kinfo, 0x19);
  append<uint16_t>(kinfo, 16);
  w.add({".nv.info.k", 0x70000000, kinfo, 0, 0, 0, 0, 4});
  w.add({".nv.shared.k", SHT_NOBITS, {}, 0, 0, 0, 0, 4});
  return w.build();
}

// A fatbin with the given entries: {kind, sm, payload}.
std::vector<std::byte> fatbin(const std::vector<std::tuple<uint16_t, uint32_t, std::vector<std::byte>>>& entries) {
  std::vector<std::byte> body;
  for (const auto& [kind, sm, payload] : entries) {
    std::vector<std::byte> h(64);
    put<uint16_t>(h, 0, kind);
    put<uint32_t>(h, 4, 64);
    put<uint64_t>(h, 8, payload.size());
    put<uint32_t>(h, 28, sm);
    body.insert(body.end(), h.begin(), h.end());
    body.insert(body.end(), payload.begin(), payload.end());
  }
  std::vector<std::byte> out;
  append<uint32_t>(out, 0xBA55ED50u);
  append<uint16_t>(out, 1);
  append<uint16_t>(out, 16);
  append<uint64_t>(out, body.size());
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

const char* kPtx = R"(//
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

}  // namespace

TEST_CASE("formats nvidia: architecture rules") {
  CHECK(cubin_runs_on(90, 90));
  CHECK(cubin_runs_on(80, 86));
  CHECK_FALSE(cubin_runs_on(86, 80));
  CHECK_FALSE(cubin_runs_on(80, 90));
  CHECK_FALSE(cubin_runs_on(90, 100));
  CHECK(ptx_runs_on(80, 90));
  CHECK_FALSE(ptx_runs_on(100, 90));
}

TEST_CASE("formats nvidia: a cubin for another arch names both targets") {
  auto cubin = fake_cubin(80);
  CHECK(detect_format(cubin) == Format::Cubin);
  CHECK(cubin_sm(cubin) == 80);
  std::string msg = check_image_for_device(cubin, 90, "device 0 (NVIDIA H200, sm_90)");
  CHECK(msg.find("sm_80") != std::string::npos);
  CHECK(msg.find("sm_90") != std::string::npos);
  CHECK(msg.find("NVIDIA H200") != std::string::npos);
  CHECK(check_image_for_device(fake_cubin(90), 90, "d").empty());
  // Older ELF ABI: SM in the low byte.
  auto old = fake_cubin(0);
  auto h = get<Elf64_Ehdr>(old, 0);
  h.e_ident[EI_ABIVERSION] = 7;
  h.e_flags = 0x00500050;  // sm_80 the old way
  put(old, 0, h);
  CHECK(cubin_sm(old) == 80);
}

TEST_CASE("formats nvidia: cubin kernels, parameters and attributes") {
  auto built = cubin_with_params();
  auto info = parse_cubin(built.bytes);
  CHECK(info.sm == 90);
  CHECK(info.elf_abi_version == 8);
  REQUIRE(info.kernels.size() == 1);
  const auto& k = info.kernels[0];
  CHECK(k.name == "k");
  CHECK(k.registers == 40);
  CHECK(k.static_shared_bytes == 0);
  REQUIRE(k.params.size() == 2);
  CHECK(k.params[0].ordinal == 0);  // sorted by ordinal
  CHECK(k.params[0].offset == 0);
  CHECK(k.params[0].size == 4);
  CHECK(k.params[1].offset == 8);
  CHECK(k.params[1].size == 8);
  CHECK(k.param_bytes == 16);
  CHECK(image_kernel_names(built.bytes) == std::vector<std::string>{"k"});
}

TEST_CASE("formats nvidia: cubins that lie are FormatErrors") {
  auto built = cubin_with_params();
  // Every truncation: section headers are last, so each one is rejected.
  for (size_t len = 0; len < built.bytes.size(); ++len) {
    std::span<const std::byte> part(built.bytes.data(), len);
    CAPTURE(len);
    CHECK_THROWS_AS(parse_cubin(part), FormatError);
    CHECK(image_kernel_names(part).empty());  // the runtime's lenient path: no names, no crash
  }
  // An attribute whose 16-bit size runs past its section.
  auto lying = cubin_with_params();
  const auto h = get<Elf64_Shdr>(lying.bytes, lying.shdr(5));  // .nv.info.k
  put<uint16_t>(lying.bytes, h.sh_offset + 2, uint16_t(0xffff));
  CHECK(error_of([&] { parse_cubin(lying.bytes); }).find(".nv.info.k") != std::string::npos);
  // A section offset near 2^64.
  auto b = cubin_with_params();
  put<uint64_t>(b.bytes, b.shdr(4) + offsetof(Elf64_Shdr, sh_offset), kMax - 4);
  CHECK(error_of([&] { parse_cubin(b.bytes); }).find("invalid cubin") == 0);
}

TEST_CASE("formats nvidia: PTX parameters, .ptr marks and target check") {
  auto image = bytes_of(kPtx);
  CHECK(detect_format(image) == Format::Ptx);
  auto info = parse_ptx(kPtx);
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
  CHECK(k.params[2].type == ".b8[12]");
  CHECK(k.params[3].offset == 28);
  CHECK(k.param_bytes == 32);
  CHECK(check_image_for_device(image, 90, "d").empty());
  std::string msg = check_image_for_device(image, 80, "device 0 (A100, sm_80)");
  CHECK(msg.find("sm_90a") != std::string::npos);
  CHECK(msg.find("sm_80") != std::string::npos);
  // Absurd sizes are errors, not wrapped offsets.
  std::string huge = R"(.version 8.4
.target sm_90
.visible .entry k(.param .align 8 .b8 p[99999999999])
{ ret; }
)";
  CHECK_THROWS_AS(parse_ptx(huge), FormatError);
}

TEST_CASE("formats nvidia: hostile PTX parameter declarations are FormatErrors naming the declaration, never misread sizes") {
  auto ptx_with = [](const std::string& params) {
    return ".version 8.4\n.target sm_90\n.address_size 64\n.visible .entry k(" + params + ")\n{ ret; }\n";
  };
  // Each was read before as a parameter of a wrong size or alignment (the
  // comment), which moves every later parameter's offset.
  const std::vector<std::pair<std::string, std::string>> bad = {
      {".param .align .b8 p[16], .param .u32 n", ".align \".b8\" is not a number"},  // size 0: .b8 taken as the number
      {".param .align 8x .b8 p[16]", ".align \"8x\" is not a number"},              // read as 8
      {".param .align -8 .b8 p[16]", ".align \"-8\" is not a number"},              // read as 0: the default
      {".param .align 0 .b8 p[16]", ".align 0 is not a power of two"},
      {".param .align 3 .b8 p[16], .param .u32 n", ".align 3 is not a power of two"},  // n at 16, at 3-byte steps
      {".param .b8 p[16] .align", ".align without a number"},
      {".param .u64 .ptr .global .align x p", ".align \"x\" is not a number"},
      {".param .align 8 .b8 p[]", "the array size \"\" is not a number"},            // size 0
      {".param .align 8 .b8 p[abc]", "the array size \"abc\" is not a number"},      // size 0
      {".param .align 8 .b8 p[0]", "an array of 0 elements"},
      {".param .align 8 .b8 p[16", "an array size is not written [N]"},             // read as 16
      {".param .align 8 .b8 p[16]x", "an array size is not written [N]"},
      {".param .align 8 .b8 p]16[", "an array size is not written [N]"},            // name "p]16", size 0
      {".param .align 8 .b8 [16]", "no name"},
      {".param p", "no type"},                                                       // size 0
      {".param", "no type"},
      {".param .u32 a b", "two names, \"a\" and \"b\""},
      {".param .align 8 .b8 p[2][2147483648]", "has 4294967296 elements"},
  };
  for (const auto& [params, expect] : bad) {
    CAPTURE(params);
    try {
      parse_ptx(ptx_with(params));
      FAIL("accepted");
    } catch (const FormatError& e) {
      const std::string m = e.what();
      CHECK_MESSAGE(m.find(expect) != std::string::npos, m);
      CHECK_MESSAGE(m.find("invalid PTX") != std::string::npos, m);
    }
  }
  // A control character in a declaration is escaped in the message.
  try {
    parse_ptx(ptx_with(std::string(".param .align 8\x01 .b8 p[4]")));
    FAIL("accepted");
  } catch (const FormatError& e) {
    CHECK(std::string(e.what()).find("\\x01") != std::string::npos);
  }
  // What PTX writes is still read: a pointee's .align after .ptr, a
  // power-of-two alignment, an array of arrays as the product of its sizes.
  const auto info = parse_ptx(ptx_with(".param .u64 .ptr .global .align 16 p, .param .u32 n, .param .align 16 .b8 s[2][3]"));
  REQUIRE(info.kernels.size() == 1);
  const auto& ps = info.kernels[0].params;
  REQUIRE(ps.size() == 3);
  CHECK(ps[0].pointer);
  CHECK(ps[0].size == 8);
  CHECK(ps[1].offset == 8);
  CHECK(ps[2].offset == 16);
  CHECK(ps[2].size == 6);
  CHECK(ps[2].type == ".b8[6]");
  CHECK(ptx_param_type_name(ps[2]) == ".align 16 .b8[6]");
  CHECK_THROWS_AS(parse_ptx(ptx_with(".param .align 4294967296 .b8 t[1]")), FormatError);
}

TEST_CASE("formats nvidia: fatbin entries, and fatbins that lie") {
  auto ptx = bytes_of(kPtx);
  auto cubin = cubin_with_params().bytes;
  auto f = fatbin({{2, 90, cubin}, {1, 90, ptx}});
  CHECK(detect_format(f) == Format::Fatbin);
  auto info = parse_fatbin(f);
  REQUIRE(info.entries.size() == 2);
  CHECK(info.entries[0].kind == FatbinEntry::Kind::Cubin);
  CHECK(info.entries[0].offset == 16 + 64);
  CHECK(info.entries[0].bytes.size() == cubin.size());
  CHECK(info.entries[1].kind == FatbinEntry::Kind::Ptx);
  CHECK(describe_image_targets(f) == "sm_90 cubin, compute_90 PTX");
  auto names = image_kernel_names(f);
  CHECK(names == std::vector<std::string>{"k", "add_kernel"});
  auto entries = code_object_entries(f);
  REQUIRE(entries.size() == 2);
  CHECK(entries[0].format == Format::Cubin);
  CHECK(entries[0].target == "sm_90");
  CHECK(entries[1].format == Format::Ptx);
  CHECK(entries[1].target == "compute_90");

  // A compressed entry is listed with its target; its bytes are decoded only
  // when read (tests/unit/test_formats_containers.cpp reads real ones).
  auto compressed = f;
  put<uint64_t>(compressed, 16 + 40, 0x8000);
  auto c = parse_fatbin(compressed);
  CHECK(c.entries[0].compression == "zstd");
  CHECK(code_object_entries(compressed)[0].bytes.empty());
  CHECK(image_kernel_names(compressed) == std::vector<std::string>{"add_kernel"});

  // Sizes that lie: the header's payload, an entry's header size near 2^32
  // (`end - p - header` would wrap), an entry's payload near 2^64.
  auto lie = [&](size_t offset, auto value) {
    auto b = f;
    put(b, offset, value);
    return error_of([&] { parse_fatbin(b); });
  };
  CHECK(lie(8, uint64_t(1) << 40).find("promises") != std::string::npos);
  CHECK(lie(8, kMax).find("promises") != std::string::npos);
  CHECK(lie(6, uint16_t(0xffff)).find("header size") != std::string::npos);
  CHECK(lie(16 + 4, uint32_t(0xffffffff)).find("entry 0") != std::string::npos);
  CHECK(lie(16 + 4, uint32_t(8)).find("entry 0") != std::string::npos);
  CHECK(lie(16 + 8, kMax - 32).find("entry 0") != std::string::npos);
  // One byte too many: entry 0 still fits, the next header read from there does not.
  CHECK(lie(16 + 8, uint64_t(cubin.size() + 1)).find("invalid fatbin: entry 1") == 0);
  // inspect: one target per entry; a compressed one that is no zstd frame,
  // or a corrupt one, fails the file, naming the entry.
  auto inspected = inspect_code_object(f);
  REQUIRE(inspected.targets.size() == 2);
  CHECK(inspected.targets[0].entry == "sm_90 cubin");
  CHECK(inspected.targets[0].kernels.at(0).registers == 40u);
  CHECK(inspected.targets[1].kernels.at(0).args.at(0).kind == ArgKind::GlobalBuffer);  // .ptr
  CHECK(error_of([&] { inspect_code_object(compressed); }).find("records no uncompressed size") != std::string::npos);
  put<uint64_t>(compressed, 16 + 56, cubin.size());
  CHECK(error_of([&] { inspect_code_object(compressed); }).find("not a zstd frame") != std::string::npos);
  auto corrupt = f;
  put<uint64_t>(corrupt, 16 + 64 + offsetof(Elf64_Ehdr, e_shoff), kMax - 100);
  std::string m = error_of([&] { inspect_code_object(corrupt); });
  CHECK(m.find("entry 'sm_90 cubin'") == 0);
  CHECK(m.find("invalid cubin") != std::string::npos);
  // Every truncation.
  for (size_t len = 4; len < f.size(); ++len) {
    CAPTURE(len);
    CHECK_THROWS_AS(parse_fatbin(std::span(f).first(len)), FormatError);
  }
  CHECK_THROWS_AS(parse_fatbin(bytes_of("not a fatbin")), FormatError);
}

TEST_CASE("formats nvidia: garbage") {
  auto junk = bytes_of("not a code object at all");
  CHECK(detect_format(junk) == Format::Unknown);
  CHECK_THROWS_AS(parse_cubin(junk), FormatError);
  auto truncated = fake_cubin(90);
  truncated.resize(40);
  // The driver trusts the ELF's offsets (a cubin cut at 100 bytes crashed
  // cuModuleLoadDataEx on the H200): refused here, saying why.
  CHECK(detect_format(truncated) != Format::Cubin);  // the backends refuse it as no code object
  const auto whole = cubin_with_params().bytes;
  CHECK(check_image_for_device(whole, 90, "d").empty());
  for (size_t size : {size_t(64), size_t(100), whole.size() / 2, whole.size() - 1}) {
    CAPTURE(size);
    std::vector<std::byte> cut(whole.begin(), whole.begin() + std::ptrdiff_t(size));
    CHECK(check_image_for_device(cut, 90, "d").find("invalid cubin") != std::string::npos);
  }
}

#if defined(LRRT_TEST_NVIDIA_KERNELS)
TEST_CASE("formats nvidia: nvcc-built saxpy cubin") {
  auto cubin = read_kernel("saxpy.sm_90.cubin");
  auto info = parse_cubin(cubin);
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
  CHECK(check_image_for_device(cubin, 90, "d").empty());
  std::string msg = check_image_for_device(cubin, 100, "device 0 (B200, sm_100)");
  CHECK(msg.find("the cubin is built for sm_90 but") != std::string::npos);
  CHECK(msg.find("sm_100") != std::string::npos);
  for (size_t len = 0; len < cubin.size(); len += 41) {
    try {
      parse_cubin(std::span(cubin).first(len));
    } catch (const FormatError&) {
    }
  }
}

TEST_CASE("formats nvidia: nvcc-built kernels: static shared memory and several kernels") {
  auto r = parse_cubin(read_kernel("reduce.sm_90.cubin"));
  REQUIRE(r.kernels.size() == 1);
  CHECK(r.kernels[0].name == "reduce_sum_f32");
  // 4 KiB scratch; sm_90 sections also count the 1 KiB the system reserves.
  CHECK(r.kernels[0].static_shared_bytes >= 4096);
  CHECK(r.kernels[0].static_shared_bytes <= 4096 + 1024);
  auto names = image_kernel_names(read_kernel("vector_add.sm_90.cubin"));
  CHECK(names.size() == 2);
  CHECK(std::find(names.begin(), names.end(), "vector_add_f32") != names.end());
  CHECK(std::find(names.begin(), names.end(), "vector_add_i32") != names.end());
}

TEST_CASE("formats nvidia: nvcc-built fatbin and PTX agree with the cubin") {
  auto fatbin_image = read_kernel("saxpy.fatbin");
  CHECK(detect_format(fatbin_image) == Format::Fatbin);
  auto f = parse_fatbin(fatbin_image);
  REQUIRE(f.entries.size() == 2);
  bool cubin = false, ptx = false;
  for (const auto& e : f.entries) {
    CHECK(e.sm == 90);
    CHECK(e.compression.empty());  // built with -no-compress
    if (e.kind == FatbinEntry::Kind::Cubin) {
      cubin = true;
      auto c = parse_cubin(e.bytes);
      CHECK(c.kernels.at(0).name == "saxpy");
      CHECK(c.kernels.at(0).param_bytes == 28);
    }
    if (e.kind == FatbinEntry::Kind::Ptx) {
      ptx = true;
      auto p = parse_ptx(std::string_view(reinterpret_cast<const char*>(e.bytes.data()), e.bytes.size()));
      CHECK(p.kernels.at(0).params.size() == 4);
    }
  }
  CHECK(cubin);
  CHECK(ptx);
  CHECK(describe_image_targets(fatbin_image) == "sm_90 cubin, compute_90 PTX");
  std::string msg = check_image_for_device(fatbin_image, 80, "device 0 (A100, sm_80)");
  CHECK(msg.find("sm_90 cubin, compute_90 PTX") != std::string::npos);
  CHECK(check_image_for_device(fatbin_image, 100, "d").empty());  // PTX JITs forward

  // The PTX file and the cubin record the same parameter layout.
  for (const char* src : {"saxpy", "vector_add", "transpose", "reduce", "empty"}) {
    CAPTURE(src);
    auto text = read_kernel(std::string(src) + ".ptx");
    auto p = parse_ptx(std::string_view(reinterpret_cast<const char*>(text.data()), text.size()));
    auto c = parse_cubin(read_kernel(std::string(src) + ".sm_90.cubin"));
    REQUIRE(p.kernels.size() == c.kernels.size());
    for (const auto& pk : p.kernels) {
      CAPTURE(pk.name);
      auto ck = std::find_if(c.kernels.begin(), c.kernels.end(), [&](const auto& k) { return k.name == pk.name; });
      REQUIRE(ck != c.kernels.end());
      CHECK(pk.param_bytes == ck->param_bytes);
      REQUIRE(pk.params.size() == ck->params.size());
      for (size_t i = 0; i < pk.params.size(); ++i) {
        CHECK(pk.params[i].offset == ck->params[i].offset);
        CHECK(pk.params[i].size == ck->params[i].size);
      }
    }
  }
}
#endif
