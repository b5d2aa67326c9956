// The one ELF reader of lrrt: bounds-checked, read-only, over bytes in memory
// (no libelf, no mmap, no loader). AMDGPU code objects, cubins and host
// kernel libraries are all read through it.
//
// Every offset and size comes from the file, so every check is written so it
// cannot wrap around: `offset > size || length > size - offset`, never
// `offset + length > size`. Counts are checked by division
// (`count > (size - offset) / entry_size`). Only 64-bit little-endian ELF is
// read (every code object lrrt loads is); anything else is a FormatError.
#pragma once

#include <elf.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "lrrt/formats/error.hpp"

namespace lrrt::formats {

// bytes[offset, offset + length), or FormatError "<what> (<length> bytes at
// offset <offset>) lies outside the <size>-byte <where>".
std::span<const std::byte> checked_subspan(std::span<const std::byte> bytes, uint64_t offset,
                                           uint64_t length, std::string_view what,
                                           std::string_view where = "image");

template <typename T>
T checked_read(std::span<const std::byte> bytes, uint64_t offset, std::string_view what,
               std::string_view where = "image") {
  static_assert(std::is_trivially_copyable_v<T>);
  auto b = checked_subspan(bytes, offset, sizeof(T), what, where);
  T value;
  std::memcpy(&value, b.data(), sizeof(T));
  return value;
}

// The NUL-terminated string at `offset` of a string table; FormatError when
// the offset lies outside the table or no NUL ends the string inside it.
std::string_view checked_string(std::span<const std::byte> table, uint64_t offset,
                                std::string_view what);

namespace elf {

struct Section {
  uint32_t index = 0;
  std::string_view name;  // from the section name table; empty without one
  Elf64_Shdr header{};
};

struct Symbol {
  uint32_t index = 0;
  std::string_view name;
  Elf64_Sym sym{};
  uint8_t type() const { return ELF64_ST_TYPE(sym.st_info); }
  uint8_t binding() const { return ELF64_ST_BIND(sym.st_info); }
  bool defined() const { return sym.st_shndx != SHN_UNDEF; }
};

struct Note {
  std::string_view owner;  // "AMDGPU", "GNU" (trailing NULs removed)
  uint32_t type = 0;
  std::span<const std::byte> desc;
};

// Notes in a PT_NOTE segment or SHT_NOTE section whose entries are aligned
// to `align` (4, or 8 for 8-byte aligned note segments).
std::vector<Note> parse_notes(std::span<const std::byte> bytes, uint64_t align,
                              std::string_view what);

class File {
 public:
  // Checks the ELF header, the program and section header tables and the
  // section names; `kind` names the file in messages ("AMDGPU code object",
  // "cubin", "host kernel library"). Section contents are checked when read.
  explicit File(std::span<const std::byte> image, std::string_view kind = "ELF file");

  std::span<const std::byte> image() const { return image_; }
  const Elf64_Ehdr& header() const { return header_; }
  uint16_t machine() const { return header_.e_machine; }
  const std::vector<Elf64_Phdr>& segments() const { return segments_; }
  const std::vector<Section>& sections() const { return sections_; }
  // The first section with this name, or nullptr.
  const Section* section(std::string_view name) const;
  const Section* section_at(uint64_t index) const;

  // A section's bytes (empty for SHT_NOBITS); a segment's file bytes.
  std::span<const std::byte> data(const Section& section) const;
  std::span<const std::byte> data(const Elf64_Phdr& segment) const;

  // The symbols of a SHT_SYMTAB or SHT_DYNSYM section, names resolved.
  std::vector<Symbol> symbols(const Section& table) const;
  // A defined symbol's bytes: [st_value, st_value + st_size) inside the
  // section it belongs to (st_shndx).
  std::span<const std::byte> symbol_data(const Symbol& symbol) const;

  // Notes of the PT_NOTE segments, else of the SHT_NOTE sections.
  std::vector<Note> notes() const;

  // Throws FormatError("invalid <kind>: <message>").
  [[noreturn]] void fail(const std::string& message) const;
  const std::string& kind() const { return kind_; }

 private:
  void read_sections();
  void read_segments(uint64_t extended_count);

  std::span<const std::byte> image_;
  std::string kind_;
  Elf64_Ehdr header_{};
  std::vector<Elf64_Phdr> segments_;
  std::vector<Section> sections_;
};

// Whether the bytes start with a 64-bit ELF header; its e_machine, else 0.
bool is_elf64(std::span<const std::byte> image);
uint16_t machine_of(std::span<const std::byte> image);
// "x86_64", "aarch64", "amdgpu", "cuda", or "machine <n>".
std::string machine_name(uint16_t machine);

}  // namespace elf
}  // namespace lrrt::formats
