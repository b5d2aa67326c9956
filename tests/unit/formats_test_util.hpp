// Helpers for the lrrt_formats tests: reading built kernels, and a small ELF
// writer that lays out sections (data first, section headers last) so tests
// can build exact files and then break one field at a time.
#pragma once

#include <doctest/doctest.h>
#include <elf.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "lrrt/formats/error.hpp"

namespace formats_test {

inline std::vector<std::byte> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "missing file ", path);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(chars.size());
  if (!chars.empty()) std::memcpy(out.data(), chars.data(), chars.size());
  return out;
}

// The message of the FormatError f() throws; fails the test when it throws none.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const lrrt::formats::FormatError& e) {
    return e.what();
  }
  FAIL("no FormatError");
  return {};
}

inline std::vector<std::byte> read_kernel(const std::string& name) {
  return read_file(std::string(LRRT_TEST_KERNEL_DIR) + "/" + name);
}

inline std::vector<std::byte> bytes_of(std::string_view s) {
  std::vector<std::byte> out(s.size());
  if (!s.empty()) std::memcpy(out.data(), s.data(), s.size());
  return out;
}

template <typename T>
void append(std::vector<std::byte>& out, const T& value) {
  size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &value, sizeof(T));
}

template <typename T>
T get(const std::vector<std::byte>& bytes, size_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

template <typename T>
void put(std::vector<std::byte>& bytes, size_t offset, const T& value) {
  std::memcpy(bytes.data() + offset, &value, sizeof(T));
}

// One ELF note (4-byte aligned).
inline std::vector<std::byte> note(std::string_view owner, uint32_t type, std::string_view desc) {
  std::vector<std::byte> out;
  append<uint32_t>(out, uint32_t(owner.size() + 1));
  append<uint32_t>(out, uint32_t(desc.size()));
  append<uint32_t>(out, type);
  auto pad = [&] { while (out.size() % 4) out.push_back(std::byte{0}); };
  auto o = bytes_of(owner);
  out.insert(out.end(), o.begin(), o.end());
  out.push_back(std::byte{0});
  pad();
  auto d = bytes_of(desc);
  out.insert(out.end(), d.begin(), d.end());
  pad();
  return out;
}

struct ElfWriter {
  struct Section {
    std::string name;
    uint32_t type = SHT_PROGBITS;
    std::vector<std::byte> data;
    uint64_t addr = 0;
    uint32_t link = 0;
    uint32_t info = 0;
    uint64_t entsize = 0;
    uint64_t align = 1;
  };
  uint16_t machine = EM_X86_64;
  uint16_t type = ET_DYN;
  uint8_t osabi = 0;
  uint8_t abi_version = 0;
  uint32_t flags = 0;
  std::vector<Section> sections;  // index 1.. (0 is the null section)

  // Adds a section; returns its index.
  uint32_t add(Section s) {
    sections.push_back(std::move(s));
    return static_cast<uint32_t>(sections.size());
  }

  // A string table with these strings; offsets[i] is where strings[i] starts.
  static std::vector<std::byte> strtab(const std::vector<std::string>& strings,
                                       std::vector<uint32_t>* offsets = nullptr) {
    std::vector<std::byte> out{std::byte{0}};
    for (const auto& s : strings) {
      if (offsets) offsets->push_back(static_cast<uint32_t>(out.size()));
      auto b = bytes_of(s);
      out.insert(out.end(), b.begin(), b.end());
      out.push_back(std::byte{0});
    }
    return out;
  }

  struct Built {
    std::vector<std::byte> bytes;
    uint64_t shoff = 0;
    std::vector<uint64_t> data_offset;  // per section index (0 = null)
    size_t shdr(uint32_t index) const { return shoff + uint64_t(index) * sizeof(Elf64_Shdr); }
  };

  Built build() const {
    Built b;
    std::vector<std::string> names;
    for (const auto& s : sections) names.push_back(s.name);
    names.push_back(".shstrtab");
    std::vector<uint32_t> name_offsets;
    auto shstrtab = strtab(names, &name_offsets);

    b.bytes.resize(sizeof(Elf64_Ehdr));
    b.data_offset.push_back(0);
    auto place = [&](const std::vector<std::byte>& data, uint64_t align) {
      while (b.bytes.size() % std::max<uint64_t>(align, 1)) b.bytes.push_back(std::byte{0});
      uint64_t at = b.bytes.size();
      b.bytes.insert(b.bytes.end(), data.begin(), data.end());
      return at;
    };
    for (const auto& s : sections) b.data_offset.push_back(place(s.data, s.align));
    uint64_t shstrtab_at = place(shstrtab, 1);
    while (b.bytes.size() % 8) b.bytes.push_back(std::byte{0});
    b.shoff = b.bytes.size();

    std::vector<Elf64_Shdr> headers(1);  // the null section
    for (size_t i = 0; i < sections.size(); ++i) {
      const auto& s = sections[i];
      Elf64_Shdr h{};
      h.sh_name = name_offsets[i];
      h.sh_type = s.type;
      h.sh_flags = SHF_ALLOC;
      h.sh_addr = s.addr;
      h.sh_offset = b.data_offset[i + 1];
      h.sh_size = s.data.size();
      h.sh_link = s.link;
      h.sh_info = s.info;
      h.sh_addralign = s.align;
      h.sh_entsize = s.entsize;
      headers.push_back(h);
    }
    Elf64_Shdr names_header{};
    names_header.sh_name = name_offsets.back();
    names_header.sh_type = SHT_STRTAB;
    names_header.sh_offset = shstrtab_at;
    names_header.sh_size = shstrtab.size();
    names_header.sh_addralign = 1;
    headers.push_back(names_header);
    for (const auto& h : headers) append(b.bytes, h);

    Elf64_Ehdr e{};
    std::memcpy(e.e_ident, ELFMAG, SELFMAG);
    e.e_ident[EI_CLASS] = ELFCLASS64;
    e.e_ident[EI_DATA] = ELFDATA2LSB;
    e.e_ident[EI_VERSION] = EV_CURRENT;
    e.e_ident[EI_OSABI] = osabi;
    e.e_ident[EI_ABIVERSION] = abi_version;
    e.e_type = type;
    e.e_machine = machine;
    e.e_version = EV_CURRENT;
    e.e_flags = flags;
    e.e_ehsize = sizeof(Elf64_Ehdr);
    e.e_shoff = b.shoff;
    e.e_shentsize = sizeof(Elf64_Shdr);
    e.e_shnum = static_cast<uint16_t>(headers.size());
    e.e_shstrndx = static_cast<uint16_t>(headers.size() - 1);
    std::memcpy(b.bytes.data(), &e, sizeof(e));
    return b;
  }
};

// A symbol table section's bytes (the null symbol first).
inline std::vector<std::byte> symtab(const std::vector<Elf64_Sym>& symbols) {
  std::vector<std::byte> out;
  append(out, Elf64_Sym{});
  for (const auto& s : symbols) append(out, s);
  return out;
}

inline Elf64_Sym symbol(uint32_t name, uint8_t type, uint16_t section, uint64_t value, uint64_t size) {
  Elf64_Sym s{};
  s.st_name = name;
  s.st_info = ELF64_ST_INFO(STB_GLOBAL, type);
  s.st_shndx = section;
  s.st_value = value;
  s.st_size = size;
  return s;
}

}  // namespace formats_test
