// lrrt_formats' ELF reader (lrrt/formats/elf.hpp) on exact files written by
// the test: every field that holds an offset, a size or a count is made to
// lie, including values near 2^64 where `offset + size` would wrap around and
// pass a naive check. A lie must be a FormatError naming the part, never a
// read outside the bytes (the build's sanitizer-free tests rely on the checks
// themselves: every accepted span is compared with the file's bounds).
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "formats_test_util.hpp"
#include "lrrt/formats/elf.hpp"

using lrrt::formats::FormatError;
using lrrt::formats::elf::File;
using namespace formats_test;

namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

// A file with a symbol table, its strings, a note and a data section at
// address 0x1000 that a symbol points into.
struct Sample {
  ElfWriter::Built built;
  uint32_t data_index = 0, symtab_index = 0, strtab_index = 0, note_index = 0;
  std::vector<std::byte>& bytes() { return built.bytes; }
};

Sample sample() {
  ElfWriter w;
  Sample s;
  std::vector<uint32_t> names;
  auto strings = ElfWriter::strtab({"table", "entry"}, &names);
  std::vector<std::byte> data(64);
  for (size_t i = 0; i < data.size(); ++i) data[i] = std::byte(i);
  s.data_index = w.add({".rodata", SHT_PROGBITS, data, 0x1000, 0, 0, 0, 8});
  s.strtab_index = w.add({".strtab", SHT_STRTAB, strings});
  s.symtab_index = w.add({".symtab", SHT_SYMTAB,
                          symtab({symbol(names[0], STT_OBJECT, uint16_t(s.data_index), 0x1010, 16),
                                  symbol(names[1], STT_FUNC, SHN_UNDEF, 0, 0)}),
                          0, s.strtab_index, 1, sizeof(Elf64_Sym), 8});
  s.note_index = w.add({".note", SHT_NOTE, note("AMDGPU", 32, "payload!"), 0, 0, 0, 0, 4});
  s.built = w.build();
  return s;
}

// The section header field at `field` (offsetof(Elf64_Shdr, ...)) of section i.
size_t shdr_field(const Sample& s, uint32_t index, size_t field) { return s.built.shdr(index) + field; }

}  // namespace

TEST_CASE("formats elf: checked_subspan and checked_string never wrap") {
  std::vector<std::byte> b(16);
  std::span<const std::byte> s(b);
  CHECK(lrrt::formats::checked_subspan(s, 16, 0, "x").empty());
  CHECK(lrrt::formats::checked_subspan(s, 4, 12, "x").size() == 12);
  CHECK_THROWS_AS(lrrt::formats::checked_subspan(s, 17, 0, "x"), FormatError);
  CHECK_THROWS_AS(lrrt::formats::checked_subspan(s, 4, 13, "x"), FormatError);
  // offset + length wraps to 1: a check written `offset + length > size` passes.
  CHECK_THROWS_AS(lrrt::formats::checked_subspan(s, kMax, 2, "x"), FormatError);
  CHECK_THROWS_AS(lrrt::formats::checked_subspan(s, 8, kMax - 6, "x"), FormatError);
  std::string m = error_of([&] { lrrt::formats::checked_subspan(s, 8, 100, "the thing", "blob"); });
  CHECK(m == "the thing (100 bytes at offset 8) lies outside the 16-byte blob");

  auto table = bytes_of(std::string_view("\0abc\0de", 7));  // "de" has no NUL
  CHECK(lrrt::formats::checked_string(table, 1, "t") == "abc");
  CHECK(lrrt::formats::checked_string(table, 0, "t").empty());
  CHECK_THROWS_AS(lrrt::formats::checked_string(table, 5, "t"), FormatError);
  CHECK_THROWS_AS(lrrt::formats::checked_string(table, 7, "t"), FormatError);
  CHECK_THROWS_AS(lrrt::formats::checked_string(table, kMax, "t"), FormatError);
}

TEST_CASE("formats elf: a well-formed file reads back exactly") {
  Sample s = sample();
  File f(s.bytes(), "test file");
  CHECK(f.machine() == EM_X86_64);
  REQUIRE(f.sections().size() == 6);  // null, 4, .shstrtab
  const auto* rodata = f.section(".rodata");
  REQUIRE(rodata);
  CHECK(rodata->index == s.data_index);
  auto data = f.data(*rodata);
  REQUIRE(data.size() == 64);
  CHECK(data.data() == s.bytes().data() + s.built.data_offset[s.data_index]);
  auto symbols = f.symbols(*f.section(".symtab"));
  REQUIRE(symbols.size() == 3);
  CHECK(symbols[1].name == "table");
  CHECK(symbols[1].type() == STT_OBJECT);
  CHECK(symbols[2].name == "entry");
  CHECK_FALSE(symbols[2].defined());
  auto sym = f.symbol_data(symbols[1]);
  REQUIRE(sym.size() == 16);
  for (size_t i = 0; i < 16; ++i) CHECK(sym[i] == std::byte(0x10 + i));
  auto notes = f.notes();
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].owner == "AMDGPU");
  CHECK(notes[0].type == 32);
  CHECK(std::string_view(reinterpret_cast<const char*>(notes[0].desc.data()), notes[0].desc.size()) == "payload!");
  CHECK_THROWS_AS(f.symbol_data(symbols[2]), FormatError);  // undefined
}

TEST_CASE("formats elf: every truncation is a FormatError") {
  Sample s = sample();
  // Section headers are last, so every shorter file loses part of them.
  for (size_t len = 0; len < s.bytes().size(); ++len) {
    CAPTURE(len);
    std::span<const std::byte> part(s.bytes().data(), len);
    CHECK_THROWS_AS(File(part, "t"), FormatError);
  }
}

TEST_CASE("formats elf: header fields that lie") {
  SUBCASE("not ELF, 32-bit, big-endian") {
    Sample s = sample();
    s.bytes()[0] = std::byte{0};
    CHECK(error_of([&] { File(s.bytes(), "t"); }).find("not an ELF file") != std::string::npos);
    s = sample();
    s.bytes()[EI_CLASS] = std::byte{ELFCLASS32};
    CHECK(error_of([&] { File(s.bytes(), "t"); }).find("64-bit") != std::string::npos);
    s = sample();
    s.bytes()[EI_DATA] = std::byte{ELFDATA2MSB};
    CHECK(error_of([&] { File(s.bytes(), "t"); }).find("little-endian") != std::string::npos);
  }
  SUBCASE("section header table offset near 2^64") {
    for (uint64_t off : {kMax, kMax - 63, kMax - 64 * 5, uint64_t(1) << 63}) {
      Sample s = sample();
      put<uint64_t>(s.bytes(), offsetof(Elf64_Ehdr, e_shoff), off);
      std::string m = error_of([&] { File(s.bytes(), "test file"); });
      CHECK(m.find("invalid test file") == 0);
      CHECK(m.find("section header") != std::string::npos);
    }
  }
  SUBCASE("more section headers than the file holds") {
    Sample s = sample();
    put<uint16_t>(s.bytes(), offsetof(Elf64_Ehdr, e_shnum), 0xfeff);
    CHECK(error_of([&] { File(s.bytes(), "t"); }).find("65279 section headers") != std::string::npos);
  }
  SUBCASE("extended section count in section 0 that lies") {
    Sample s = sample();
    put<uint16_t>(s.bytes(), offsetof(Elf64_Ehdr, e_shnum), 0);
    put<uint64_t>(s.bytes(), shdr_field(s, 0, offsetof(Elf64_Shdr, sh_size)), kMax);
    CHECK_THROWS_AS(File(s.bytes(), "t"), FormatError);
    // ... and the same count told honestly reads the file.
    put<uint64_t>(s.bytes(), shdr_field(s, 0, offsetof(Elf64_Shdr, sh_size)), 6);
    CHECK(File(s.bytes(), "t").sections().size() == 6);
  }
  SUBCASE("section header size and name table index") {
    Sample s = sample();
    put<uint16_t>(s.bytes(), offsetof(Elf64_Ehdr, e_shentsize), 40);
    CHECK_THROWS_AS(File(s.bytes(), "t"), FormatError);
    s = sample();
    put<uint16_t>(s.bytes(), offsetof(Elf64_Ehdr, e_shstrndx), 6);
    CHECK(error_of([&] { File(s.bytes(), "t"); }).find("name table index 6") != std::string::npos);
  }
  SUBCASE("program headers near 2^64 and lying segments") {
    Sample s = sample();
    put<uint64_t>(s.bytes(), offsetof(Elf64_Ehdr, e_phoff), kMax - 10);
    put<uint16_t>(s.bytes(), offsetof(Elf64_Ehdr, e_phnum), 1);
    put<uint16_t>(s.bytes(), offsetof(Elf64_Ehdr, e_phentsize), sizeof(Elf64_Phdr));
    CHECK(error_of([&] { File(s.bytes(), "t"); }).find("program headers") != std::string::npos);
    // One program header placed over the (zeroed) start of .rodata, then made to lie.
    s = sample();
    uint64_t at = s.built.data_offset[s.data_index];
    put<uint64_t>(s.bytes(), offsetof(Elf64_Ehdr, e_phoff), at);
    put<uint16_t>(s.bytes(), offsetof(Elf64_Ehdr, e_phnum), 1);
    put<uint16_t>(s.bytes(), offsetof(Elf64_Ehdr, e_phentsize), sizeof(Elf64_Phdr));
    Elf64_Phdr p{};
    p.p_type = PT_NOTE;
    p.p_offset = kMax - 3;
    p.p_filesz = 8;  // p_offset + p_filesz wraps to 4
    put(s.bytes(), at, p);
    File f(s.bytes(), "t");
    REQUIRE(f.segments().size() == 1);
    CHECK_THROWS_AS(f.data(f.segments()[0]), FormatError);
    CHECK_THROWS_AS(f.notes(), FormatError);
  }
}

TEST_CASE("formats elf: section, symbol and note fields that lie") {
  SUBCASE("section offset and size that wrap") {
    for (auto [off, size] : {std::pair{kMax - 3, uint64_t(8)}, std::pair{uint64_t(8), kMax - 4},
                             std::pair{kMax, kMax}, std::pair{uint64_t(64), uint64_t(1) << 40}}) {
      Sample s = sample();
      put<uint64_t>(s.bytes(), shdr_field(s, s.data_index, offsetof(Elf64_Shdr, sh_offset)), off);
      put<uint64_t>(s.bytes(), shdr_field(s, s.data_index, offsetof(Elf64_Shdr, sh_size)), size);
      File f(s.bytes(), "t");  // contents are checked when read
      std::string m = error_of([&] { f.data(*f.section(".rodata")); });
      CHECK(m.find(".rodata") != std::string::npos);
      CHECK(m.find("lies outside") != std::string::npos);
    }
  }
  SUBCASE("a NOBITS section has no bytes, whatever its offset") {
    Sample s = sample();
    put<uint32_t>(s.bytes(), shdr_field(s, s.data_index, offsetof(Elf64_Shdr, sh_type)), SHT_NOBITS);
    put<uint64_t>(s.bytes(), shdr_field(s, s.data_index, offsetof(Elf64_Shdr, sh_offset)), kMax);
    File f(s.bytes(), "t");
    CHECK(f.data(*f.section(".rodata")).empty());
    auto symbols = f.symbols(*f.section(".symtab"));
    CHECK_THROWS_AS(f.symbol_data(symbols[1]), FormatError);  // lies in a section without bytes
  }
  SUBCASE("section names outside the name table") {
    Sample s = sample();
    put<uint32_t>(s.bytes(), shdr_field(s, s.data_index, offsetof(Elf64_Shdr, sh_name)), 0xfffffff0u);
    CHECK(error_of([&] { File(s.bytes(), "t"); }).find("section 1") != std::string::npos);
  }
  SUBCASE("symbol table entry size, link and names") {
    Sample s = sample();
    put<uint64_t>(s.bytes(), shdr_field(s, s.symtab_index, offsetof(Elf64_Shdr, sh_entsize)), 16);
    File f1(s.bytes(), "t");
    CHECK_THROWS_AS(f1.symbols(*f1.section(".symtab")), FormatError);
    s = sample();
    put<uint32_t>(s.bytes(), shdr_field(s, s.symtab_index, offsetof(Elf64_Shdr, sh_link)), 99);
    File f2(s.bytes(), "t");
    CHECK(error_of([&] { f2.symbols(*f2.section(".symtab")); }).find("section 99") != std::string::npos);
    s = sample();
    size_t sym1 = s.built.data_offset[s.symtab_index] + sizeof(Elf64_Sym);
    put<uint32_t>(s.bytes(), sym1 + offsetof(Elf64_Sym, st_name), 0x7fffffffu);
    File f3(s.bytes(), "t");
    CHECK_THROWS_AS(f3.symbols(*f3.section(".symtab")), FormatError);
  }
  SUBCASE("symbol value and size that wrap or leave the section") {
    for (auto [value, size] : {std::pair{uint64_t(0x1018), kMax - 4}, std::pair{kMax, uint64_t(16)},
                               std::pair{uint64_t(0x0ff0), uint64_t(16)}, std::pair{uint64_t(0x1038), uint64_t(9)},
                               std::pair{uint64_t(0x1000), uint64_t(65)}}) {
      Sample s = sample();
      size_t sym1 = s.built.data_offset[s.symtab_index] + sizeof(Elf64_Sym);
      put<uint64_t>(s.bytes(), sym1 + offsetof(Elf64_Sym, st_value), value);
      put<uint64_t>(s.bytes(), sym1 + offsetof(Elf64_Sym, st_size), size);
      File f(s.bytes(), "t");
      auto symbols = f.symbols(*f.section(".symtab"));
      CAPTURE(value);
      CAPTURE(size);
      CHECK(error_of([&] { f.symbol_data(symbols[1]); }).find("'table'") != std::string::npos);
    }
    // The last byte of the section is still inside.
    Sample s = sample();
    size_t sym1 = s.built.data_offset[s.symtab_index] + sizeof(Elf64_Sym);
    put<uint64_t>(s.bytes(), sym1 + offsetof(Elf64_Sym, st_value), 0x103f);
    put<uint64_t>(s.bytes(), sym1 + offsetof(Elf64_Sym, st_size), 1);
    File f(s.bytes(), "t");
    auto last = f.symbol_data(f.symbols(*f.section(".symtab"))[1]);
    REQUIRE(last.size() == 1);
    CHECK(last[0] == std::byte{63});
  }
  SUBCASE("note name and descriptor sizes") {
    for (auto [namesz, descsz] : {std::pair{0xffffffffu, 8u}, std::pair{7u, 0xfffffffcu}, std::pair{7u, 9u},
                                  std::pair{100u, 0u}}) {
      Sample s = sample();
      size_t at = s.built.data_offset[s.note_index];
      put<uint32_t>(s.bytes(), at, namesz);
      put<uint32_t>(s.bytes(), at + 4, descsz);
      File f(s.bytes(), "t");
      CAPTURE(namesz);
      CAPTURE(descsz);
      CHECK(error_of([&] { f.notes(); }).find("note") != std::string::npos);
    }
  }
}
