// Host kernel libraries read from the ELF file alone (lrrt/formats/host_library.hpp):
// the kernel records lrrt_kernel.h generates must say exactly what the
// runtime's loaded kernel table says; records that lie are FormatErrors.
#include <doctest/doctest.h>

#include <cstddef>
#include <string>
#include <vector>

#include "formats_test_util.hpp"
#include "host/host_executable.hpp"
#include "lrrt/formats/format.hpp"
#include "lrrt/formats/host_library.hpp"
#include "lrrt/formats/inspect.hpp"

using namespace lrrt::formats;
using namespace formats_test;

namespace {

struct ArgSpec {
  std::string name, type;
  uint32_t offset, size, kind;
};

// A kernel record laid out as include/lrrt/host_kernel_abi.h documents it,
// written independently of lrrt_kernel.h's generator.
std::vector<std::byte> record(const std::string& kernel, uint32_t kernarg_size, uint32_t align,
                              const std::vector<ArgSpec>& args) {
  std::vector<std::byte> strings;
  uint32_t base = uint32_t(sizeof(lrrt_host_kernel_record_t) + args.size() * sizeof(lrrt_host_arg_record_t));
  auto add = [&](const std::string& s) {
    uint32_t at = base + uint32_t(strings.size());
    auto b = bytes_of(s);
    strings.insert(strings.end(), b.begin(), b.end());
    strings.push_back(std::byte{0});
    return at;
  };
  lrrt_host_kernel_record_t h{LRRT_HOST_KERNEL_RECORD_MAGIC, LRRT_HOST_KERNEL_RECORD_VERSION, 0, add(kernel),
                              kernarg_size, align, 0, uint32_t(args.size())};
  std::vector<lrrt_host_arg_record_t> a;
  for (const auto& s : args) a.push_back({add(s.name), add(s.type), s.offset, s.size, s.kind});
  h.size = base + uint32_t(strings.size());
  std::vector<std::byte> out;
  append(out, h);
  for (const auto& r : a) append(out, r);
  out.insert(out.end(), strings.begin(), strings.end());
  return out;
}

// A shared object for this host with .dynsym: the query function and one
// record symbol (optional), the record in .rodata at address 0x2000.
struct HostSo {
  ElfWriter::Built built;
  uint64_t record_at = 0;  // file offset of the record
  size_t record_symbol = 0;  // file offset of the record's Elf64_Sym
};

HostSo host_so(const std::vector<std::byte>& rec, bool with_query = true, bool with_record = true,
               std::string record_name = "lrrt_host_kernel_record_saxpy") {
  ElfWriter w;
  w.machine = host_machine() == "aarch64" ? EM_AARCH64 : EM_X86_64;
  std::vector<uint32_t> names;
  auto strings = ElfWriter::strtab({LRRT_HOST_LIBRARY_QUERY_SYMBOL, record_name}, &names);
  uint32_t text = w.add({".text", SHT_PROGBITS, std::vector<std::byte>(32), 0x1000, 0, 0, 0, 16});
  uint32_t rodata = w.add({".rodata", SHT_PROGBITS, rec, 0x2000, 0, 0, 0, 8});
  uint32_t dynstr = w.add({".dynstr", SHT_STRTAB, strings});
  std::vector<Elf64_Sym> syms;
  if (with_query) syms.push_back(symbol(names[0], STT_FUNC, uint16_t(text), 0x1000, 32));
  if (with_record) syms.push_back(symbol(names[1], STT_OBJECT, uint16_t(rodata), 0x2000, rec.size()));
  uint32_t dynsym = w.add({".dynsym", SHT_DYNSYM, symtab(syms), 0, dynstr, 1, sizeof(Elf64_Sym), 8});
  HostSo so;
  so.built = w.build();
  so.record_at = so.built.data_offset[rodata];
  so.record_symbol = so.built.data_offset[dynsym] + sizeof(Elf64_Sym) * (with_query ? 2 : 1);
  return so;
}

const std::vector<ArgSpec> kSaxpyArgs = {{"a", "float", 0, 4, LRRT_HOST_ARG_VALUE},
                                         {"x", "const float*", 8, 8, LRRT_HOST_ARG_POINTER},
                                         {"y", "float*", 16, 8, LRRT_HOST_ARG_POINTER},
                                         {"n", "uint32_t", 24, 4, LRRT_HOST_ARG_VALUE}};

}  // namespace

TEST_CASE("formats host: a library's records read from its ELF file") {
  auto so = host_so(record("saxpy", 32, 8, kSaxpyArgs));
  CHECK(detect_format(so.built.bytes) == Format::HostSharedObject);
  auto lib = host::read_host_library(so.built.bytes);
  CHECK(lib.machine == host_machine());
  CHECK(lib.has_query);
  CHECK(lib.has_records);
  REQUIRE(lib.kernels.size() == 1);
  const auto& k = lib.kernels[0];
  CHECK(k.name == "saxpy");
  CHECK(k.symbol == "saxpy");
  CHECK(k.kernarg_size == 32);
  CHECK(k.kernarg_align == 8);
  CHECK(k.explicit_kernarg_size() == 28);
  REQUIRE(k.args.size() == 4);
  for (size_t i = 0; i < 4; ++i) {
    CAPTURE(i);
    CHECK(k.args[i].name == kSaxpyArgs[i].name);
    CHECK(k.args[i].type_name == kSaxpyArgs[i].type);
    CHECK(k.args[i].offset == kSaxpyArgs[i].offset);
    CHECK(k.args[i].size == kSaxpyArgs[i].size);
    CHECK(k.args[i].kind == (kSaxpyArgs[i].kind == LRRT_HOST_ARG_POINTER ? ArgKind::GlobalBuffer : ArgKind::ByValue));
  }

  // Without records: listed, with no kernels; without the query: not a host library.
  auto bare = host::read_host_library(host_so(record("saxpy", 32, 8, kSaxpyArgs), true, false).built.bytes);
  CHECK(bare.has_query);
  CHECK_FALSE(bare.has_records);
  CHECK(bare.kernels.empty());
  CHECK(error_of([&] { host::read_host_library(host_so(record("saxpy", 32, 8, kSaxpyArgs), false).built.bytes); })
            .find("exports no lrrt_host_library_query") != std::string::npos);
}

TEST_CASE("formats host: records that lie are FormatErrors") {
  const auto good = record("saxpy", 32, 8, kSaxpyArgs);
  auto lie = [&](size_t offset, uint32_t value) {
    auto so = host_so(good);
    put<uint32_t>(so.built.bytes, so.record_at + offset, value);
    return error_of([&] { host::read_host_library(so.built.bytes); });
  };
  CHECK(lie(0, 0x12345678).find("magic") != std::string::npos);
  CHECK(lie(4, 2).find("record version 2") != std::string::npos);
  CHECK(lie(8, 0).find("claims 0 bytes") != std::string::npos);                 // smaller than its header
  CHECK(lie(8, uint32_t(good.size() + 1)).find("claims") != std::string::npos);  // larger than the symbol
  CHECK(lie(12, 0xfffffff0u).find("name offset") != std::string::npos);
  CHECK(lie(28, 0xffffffffu).find("arguments do not fit") != std::string::npos);
  // A 5th argument record still fits, over the strings: its name offset is then checked.
  CHECK(lie(28, 5).find("name offset") != std::string::npos);
  CHECK(lie(32 + 8, 30).find("exceeds the 32-byte argument struct") != std::string::npos);  // arg a offset
  CHECK(lie(32 + 20 + 12, 0xfffffffcu).find("exceeds") != std::string::npos);  // x: 8 + size wraps in 32 bits
  CHECK(lie(16, 20).find("exceeds") != std::string::npos);  // kernarg_size below the last argument's end
  // A name without its NUL: the record's last byte made non-zero.
  {
    auto so = host_so(good);
    so.built.bytes[so.record_at + good.size() - 1] = std::byte{'x'};
    CHECK(error_of([&] { host::read_host_library(so.built.bytes); }).find("runs past") != std::string::npos);
  }
  // The symbol's size and address lie about where the record is.
  {
    auto so = host_so(good);
    put<uint64_t>(so.built.bytes, so.record_symbol + offsetof(Elf64_Sym, st_size), uint64_t(-8));
    CHECK(error_of([&] { host::read_host_library(so.built.bytes); }).find("lies outside") != std::string::npos);
    so = host_so(good);
    put<uint64_t>(so.built.bytes, so.record_symbol + offsetof(Elf64_Sym, st_value), uint64_t(-4));
    CHECK(error_of([&] { host::read_host_library(so.built.bytes); }).find("lies outside") != std::string::npos);
  }
  // A record under another kernel's symbol name.
  CHECK(error_of([&] { host::read_host_library(host_so(good, true, true, "lrrt_host_kernel_record_other").built.bytes); })
            .find("describes kernel 'saxpy'") != std::string::npos);
  // Every truncation of the file.
  auto so = host_so(good);
  for (size_t len = 0; len < so.built.bytes.size(); ++len) {
    CAPTURE(len);
    CHECK_THROWS_AS(host::read_host_library(std::span(so.built.bytes).first(len)), FormatError);
  }
}

TEST_CASE("formats host: built libraries' records match the loaded kernel tables") {
  for (const char* src : {"saxpy", "vector_add", "transpose", "reduce", "empty"}) {
    CAPTURE(src);
    auto image = read_kernel(std::string(src) + ".host.so");
    auto lib = host::read_host_library(image);
    CHECK(lib.has_records);
    // The runtime's path: load the library, take the table the query returns.
    lrrt::rt::host::HostModule module(image);
    auto names = module.kernel_names();  // sorted, as the records are
    REQUIRE(lib.kernels.size() == names.size());
    for (size_t i = 0; i < names.size(); ++i) {
      const auto& loaded = module.kernel(names[i]).info();
      const auto& read = lib.kernels[i];
      CAPTURE(names[i]);
      CHECK(read.name == loaded.name);
      CHECK(read.symbol == loaded.symbol);
      CHECK(read.kernarg_size == loaded.kernarg_size);
      CHECK(read.kernarg_align == loaded.kernarg_align);
      CHECK(read.group_segment_size == loaded.group_segment_size);
      REQUIRE(read.args.size() == loaded.args.size());
      for (size_t a = 0; a < read.args.size(); ++a) {
        CAPTURE(a);
        CHECK(read.args[a].offset == loaded.args[a].offset);
        CHECK(read.args[a].size == loaded.args[a].size);
        CHECK(read.args[a].kind == loaded.args[a].kind);
        CHECK(read.args[a].value_kind == loaded.args[a].value_kind);
        CHECK(read.args[a].name == loaded.args[a].name);
        CHECK(read.args[a].type_name == loaded.args[a].type_name);
      }
    }
    // inspect reports the same, without loading anything.
    auto inspected = inspect_code_object(image);
    CHECK(inspected.format == Format::HostSharedObject);
    REQUIRE(inspected.targets.size() == 1);
    CHECK(inspected.targets[0].target == host_machine());
    CHECK(inspected.targets[0].kernels.size() == names.size());
  }
}

namespace {

// The program header of `type` (the `nth` of them), as an offset into the image.
size_t phdr_offset(const std::vector<std::byte>& image, uint32_t type, int nth = 0) {
  const auto h = get<Elf64_Ehdr>(image, 0);
  for (uint16_t i = 0; i < h.e_phnum; ++i) {
    const size_t at = h.e_phoff + size_t(i) * sizeof(Elf64_Phdr);
    if (get<Elf64_Phdr>(image, at).p_type == type && nth-- == 0) return at;
  }
  FAIL("no program header of type ", type);
  return 0;
}

template <typename F>
std::string loadable_error(std::vector<std::byte> image, F&& corrupt) {
  corrupt(image);
  return error_of([&] { host::check_loadable(image); });
}

}  // namespace

TEST_CASE("formats host: check_loadable passes built libraries and names the header field that would crash dlopen") {
  for (const std::string path : {std::string(LRRT_TEST_KERNEL_DIR) + "/saxpy.host.so",
                                 std::string(LRRT_TEST_KERNEL_DIR) + "/vector_add.host.so",
                                 std::string(LRRT_TEST_KERNEL_DIR) + "/transpose.host.so",
                                 std::string(LRRT_TEST_KERNEL_DIR) + "/reduce.host.so",
                                 std::string(LRRT_TEST_KERNEL_DIR) + "/empty.host.so",
                                 std::string(LRRT_TEST_KERNEL_DIR) + "/spin.host.so",
                                 std::string(LRRT_TEST_ERROR_KERNELS)}) {
    CAPTURE(path);
    CHECK_NOTHROW(host::check_loadable(read_file(path)));
  }
  const auto image = read_kernel("empty.host.so");
  using Image = std::vector<std::byte>;
  auto mutate_phdr = [](uint32_t type, auto&& change, int nth = 0) {
    return [=](Image& b) {
      const size_t at = phdr_offset(b, type, nth);
      auto p = get<Elf64_Phdr>(b, at);
      change(p);
      put(b, at, p);
    };
  };
  auto has = [](const std::string& message, const std::string& part) {
    CHECK_MESSAGE(message.find(part) != std::string::npos, message, " lacks ", part);
  };
  // A load past the end of the file: mapped, then SIGBUS on the first touch.
  has(loadable_error(image, mutate_phdr(PT_LOAD, [](Elf64_Phdr& p) { p.p_filesz += 1 << 20; }, 1)), "p_filesz");
  has(loadable_error(image, mutate_phdr(PT_LOAD, [](Elf64_Phdr& p) { p.p_offset = ~uint64_t(0) - 8; }, 1)),
      "lies outside the");
  has(loadable_error(image, mutate_phdr(PT_LOAD, [](Elf64_Phdr& p) { p.p_memsz = p.p_filesz - 1; })), "p_memsz");
  has(loadable_error(image, mutate_phdr(PT_LOAD, [](Elf64_Phdr& p) { p.p_align = 0x1800; })), "p_align");
  has(loadable_error(image, mutate_phdr(PT_LOAD, [](Elf64_Phdr& p) { p.p_vaddr += 0x10; }, 1)), "differ modulo");
  has(loadable_error(image, mutate_phdr(PT_LOAD, [](Elf64_Phdr& p) { p.p_vaddr = 0; p.p_offset = 0; }, 2)),
      "address order");
  // The dynamic section anywhere but where a load maps it from the file.
  has(loadable_error(image, mutate_phdr(PT_DYNAMIC, [](Elf64_Phdr& p) { p.p_vaddr += 0x100000; })),
      "(PT_DYNAMIC)");
  has(loadable_error(image, mutate_phdr(PT_DYNAMIC, [](Elf64_Phdr& p) { p.p_vaddr += 8; })), "maps p_vaddr");
  has(loadable_error(image, mutate_phdr(PT_DYNAMIC, [](Elf64_Phdr& p) { p.p_type = PT_NULL; })), "no PT_DYNAMIC");
  has(loadable_error(image, mutate_phdr(PT_GNU_EH_FRAME, [](Elf64_Phdr& p) { p.p_vaddr = uint64_t(1) << 44; })),
      "PT_GNU_EH_FRAME");
  // Permissions and contents the loader relies on: code in an executable
  // load, relocation targets in a writable one, each load mapping its own
  // sections' bytes (a p_offset moved by a whole page passes every check
  // on the segments alone), RELRO not over data written later.
  has(loadable_error(image, mutate_phdr(PT_LOAD, [](Elf64_Phdr& p) { p.p_flags &= ~PF_X; }, 1)), "not executable");
  has(loadable_error(image, mutate_phdr(PT_LOAD, [](Elf64_Phdr& p) { p.p_flags &= ~PF_W; }, 3)), "not writable");
  has(loadable_error(image, mutate_phdr(PT_LOAD, [](Elf64_Phdr& p) { p.p_flags = 0; }, 0)), "not readable");
  has(loadable_error(image, mutate_phdr(PT_LOAD, [](Elf64_Phdr& p) { p.p_offset += 0x1000; }, 1)), "sh_offset");
  has(loadable_error(image, mutate_phdr(PT_GNU_RELRO, [](Elf64_Phdr& p) { p.p_memsz += 0x1000; })), "read-only");
  // A p_filesz grown over .bss fills it with the file bytes that follow:
  // the library's destructors then ran on them (CI's random-header test,
  // seed 2126252248, died at exit).
  has(loadable_error(image, mutate_phdr(PT_LOAD, [](Elf64_Phdr& p) { p.p_filesz = p.p_memsz; }, 3)), "SHT_NOBITS");
  // PT_GNU_RELRO moved over code: the loader made those pages read-only and
  // the first call into them faulted (seed 130 of the same test).
  has(loadable_error(image, [](Image& b) {
        const auto code = get<Elf64_Phdr>(b, phdr_offset(b, PT_LOAD, 1));
        const size_t at = phdr_offset(b, PT_GNU_RELRO, 0);
        auto p = get<Elf64_Phdr>(b, at);
        p.p_vaddr = code.p_vaddr;
        p.p_memsz = 0x1000;
        put(b, at, p);
      }),
      "not writable");
  has(loadable_error(image, [](Image& b) { put<uint64_t>(b, offsetof(Elf64_Ehdr, e_shoff), 0); }), "no section headers");
  // The ELF header.
  has(loadable_error(image, [](Image& b) { put<uint16_t>(b, offsetof(Elf64_Ehdr, e_type), ET_EXEC); }), "ET_DYN");
  has(loadable_error(image, [](Image& b) { put<uint16_t>(b, offsetof(Elf64_Ehdr, e_phnum), 0xffff); }), "e_phnum");
  has(loadable_error(image, [](Image& b) { put<uint16_t>(b, offsetof(Elf64_Ehdr, e_phnum), 0); }),
      "no program headers");
  has(loadable_error(image, [](Image& b) { put<uint64_t>(b, offsetof(Elf64_Ehdr, e_phoff), b.size() - 8); }),
      "program headers");
  has(loadable_error(image, [](Image& b) { put<uint16_t>(b, offsetof(Elf64_Ehdr, e_phentsize), 32); }),
      "program header size");
  has(loadable_error(image, [](Image& b) { put<uint64_t>(b, offsetof(Elf64_Ehdr, e_shoff), b.size() + 64); }),
      "section header table");
  // The runtime's load path refuses before it loads (the same message).
  auto bad = image;
  mutate_phdr(PT_LOAD, [](Elf64_Phdr& p) { p.p_filesz += 1 << 20; }, 1)(bad);
  has(error_of([&] { lrrt::rt::host::HostModule module(bad); }), "p_filesz");
}
