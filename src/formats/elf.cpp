#include "lrrt/formats/elf.hpp"

#include <fmt/format.h>

namespace lrrt::formats {

std::span<const std::byte> checked_subspan(std::span<const std::byte> bytes, uint64_t offset,
                                           uint64_t length, std::string_view what,
                                           std::string_view where) {
  // Written so that nothing wraps: offset <= size first, then compare the
  // length with what is left.
  if (offset > bytes.size() || length > bytes.size() - offset)
    throw FormatError(fmt::format("{} ({} bytes at offset {}) lies outside the {}-byte {}", what,
                                  length, offset, bytes.size(), where));
  return bytes.subspan(offset, length);
}

std::string_view checked_string(std::span<const std::byte> table, uint64_t offset,
                                std::string_view what) {
  if (offset >= table.size())
    throw FormatError(fmt::format("{}: name offset {} lies outside its {}-byte string table", what,
                                  offset, table.size()));
  const char* begin = reinterpret_cast<const char*>(table.data()) + offset;
  const void* nul = std::memchr(begin, 0, table.size() - offset);
  if (!nul)
    throw FormatError(fmt::format("{}: the name at offset {} runs past the end of its string table",
                                  what, offset));
  return std::string_view(begin, static_cast<const char*>(nul) - begin);
}

namespace elf {
namespace {

constexpr uint64_t align_up(uint64_t value, uint64_t align) {
  // Callers pass values far below 2^63 (bounded by a span's size), so the
  // addition cannot wrap.
  return (value + align - 1) / align * align;
}

}  // namespace

std::vector<Note> parse_notes(std::span<const std::byte> bytes, uint64_t align,
                              std::string_view what) {
  if (align != 8) align = 4;  // ELF notes are 4-byte aligned unless the segment says 8
  std::vector<Note> notes;
  uint64_t pos = 0;
  while (pos < bytes.size() && bytes.size() - pos >= 12) {
    uint32_t namesz = checked_read<uint32_t>(bytes, pos, "note header", what);
    uint32_t descsz = checked_read<uint32_t>(bytes, pos + 4, "note header", what);
    uint32_t type = checked_read<uint32_t>(bytes, pos + 8, "note header", what);
    uint64_t name_at = pos + 12;
    auto name = checked_subspan(bytes, name_at, namesz, "note name", what);
    uint64_t desc_at = align_up(name_at + namesz, align);
    Note note;
    note.type = type;
    note.desc = checked_subspan(bytes, desc_at, descsz, "note descriptor", what);
    note.owner = std::string_view(reinterpret_cast<const char*>(name.data()), name.size());
    while (!note.owner.empty() && note.owner.back() == '\0') note.owner.remove_suffix(1);
    notes.push_back(note);
    pos = align_up(desc_at + descsz, align);
  }
  return notes;
}

bool is_elf64(std::span<const std::byte> image) {
  return image.size() >= sizeof(Elf64_Ehdr) && std::memcmp(image.data(), ELFMAG, SELFMAG) == 0 &&
         static_cast<uint8_t>(image[EI_CLASS]) == ELFCLASS64;
}

uint16_t machine_of(std::span<const std::byte> image) {
  if (!is_elf64(image)) return 0;
  return checked_read<Elf64_Ehdr>(image, 0, "ELF header").e_machine;
}

std::string machine_name(uint16_t machine) {
  switch (machine) {
    case EM_X86_64: return "x86_64";
    case EM_AARCH64: return "aarch64";
    case EM_RISCV: return "riscv64";
    case EM_PPC64: return "ppc64";
    case 224: return "amdgpu";
    case 190: return "cuda";
    default: return fmt::format("machine {}", machine);
  }
}

File::File(std::span<const std::byte> image, std::string_view kind) : image_(image), kind_(kind) {
  if (image.size() < SELFMAG || std::memcmp(image.data(), ELFMAG, SELFMAG) != 0)
    fail("not an ELF file (no \\x7fELF magic)");
  if (image.size() < sizeof(Elf64_Ehdr)) {
    fail(fmt::format("the file ends after {} bytes, inside the {}-byte ELF header", image.size(),
                     sizeof(Elf64_Ehdr)));
  }
  std::memcpy(&header_, image.data(), sizeof(header_));
  if (header_.e_ident[EI_CLASS] != ELFCLASS64) fail("not a 64-bit ELF file");
  if (header_.e_ident[EI_DATA] != ELFDATA2LSB) fail("not a little-endian ELF file");
  read_sections();
  // PN_XNUM: the real program header count is section 0's sh_info.
  uint64_t extended = header_.e_phnum == PN_XNUM && !sections_.empty()
                          ? sections_[0].header.sh_info
                          : header_.e_phnum;
  read_segments(extended);
}

void File::fail(const std::string& message) const {
  throw FormatError(fmt::format("invalid {}: {}", kind_, message));
}

void File::read_sections() {
  if (header_.e_shoff == 0) return;
  if (header_.e_shentsize != sizeof(Elf64_Shdr))
    fail(fmt::format("section header size {} (expected {})", header_.e_shentsize,
                     sizeof(Elf64_Shdr)));
  if (header_.e_shoff > image_.size())
    fail(fmt::format("the section header table at offset {} lies outside the {}-byte file",
                     header_.e_shoff, image_.size()));
  uint64_t count = header_.e_shnum;
  Elf64_Shdr first{};
  if (count == 0 || header_.e_shstrndx == SHN_XINDEX) {
    // Extended numbering: section 0 holds the real count and name index.
    first = checked_read<Elf64_Shdr>(image_, header_.e_shoff, "section header 0", "file");
    if (count == 0) count = first.sh_size;
  }
  if (count > (image_.size() - header_.e_shoff) / sizeof(Elf64_Shdr))
    fail(fmt::format("{} section headers at offset {} do not fit in the {}-byte file", count,
                     header_.e_shoff, image_.size()));
  sections_.resize(count);
  for (uint64_t i = 0; i < count; ++i) {
    sections_[i].index = static_cast<uint32_t>(i);
    // Cannot fail after the count check; checked anyway.
    sections_[i].header = checked_read<Elf64_Shdr>(image_, header_.e_shoff + i * sizeof(Elf64_Shdr),
                                                   "section header", "file");
  }
  uint64_t names_index = header_.e_shstrndx == SHN_XINDEX ? first.sh_link : header_.e_shstrndx;
  if (names_index == SHN_UNDEF) return;
  if (names_index >= count)
    fail(fmt::format("section name table index {} but only {} sections", names_index, count));
  auto names = data(sections_[names_index]);
  for (auto& s : sections_) {
    try {
      s.name = checked_string(names, s.header.sh_name, fmt::format("section {}", s.index));
    } catch (const FormatError& e) {
      fail(e.what());
    }
  }
}

void File::read_segments(uint64_t count) {
  if (count == 0 || header_.e_phoff == 0) return;
  if (header_.e_phentsize != sizeof(Elf64_Phdr))
    fail(fmt::format("program header size {} (expected {})", header_.e_phentsize,
                     sizeof(Elf64_Phdr)));
  if (header_.e_phoff > image_.size() ||
      count > (image_.size() - header_.e_phoff) / sizeof(Elf64_Phdr))
    fail(fmt::format("{} program headers at offset {} do not fit in the {}-byte file", count,
                     header_.e_phoff, image_.size()));
  segments_.resize(count);
  for (uint64_t i = 0; i < count; ++i)
    segments_[i] = checked_read<Elf64_Phdr>(image_, header_.e_phoff + i * sizeof(Elf64_Phdr),
                                            "program header", "file");
}

const Section* File::section(std::string_view name) const {
  for (const auto& s : sections_)
    if (s.name == name) return &s;
  return nullptr;
}

const Section* File::section_at(uint64_t index) const {
  return index < sections_.size() ? &sections_[index] : nullptr;
}

std::span<const std::byte> File::data(const Section& s) const {
  if (s.header.sh_type == SHT_NOBITS || s.header.sh_type == SHT_NULL) return {};
  if (s.header.sh_offset > image_.size() || s.header.sh_size > image_.size() - s.header.sh_offset)
    fail(fmt::format("section {} '{}' ({} bytes at offset {}) lies outside the {}-byte file",
                     s.index, s.name, s.header.sh_size, s.header.sh_offset, image_.size()));
  return image_.subspan(s.header.sh_offset, s.header.sh_size);
}

std::span<const std::byte> File::data(const Elf64_Phdr& p) const {
  if (p.p_offset > image_.size() || p.p_filesz > image_.size() - p.p_offset)
    fail(fmt::format("a segment ({} bytes at offset {}) lies outside the {}-byte file", p.p_filesz,
                     p.p_offset, image_.size()));
  return image_.subspan(p.p_offset, p.p_filesz);
}

std::vector<Symbol> File::symbols(const Section& table) const {
  if (table.header.sh_type != SHT_SYMTAB && table.header.sh_type != SHT_DYNSYM)
    fail(fmt::format("section {} '{}' is not a symbol table", table.index, table.name));
  if (table.header.sh_entsize != sizeof(Elf64_Sym))
    fail(fmt::format("symbol table '{}' has entries of {} bytes (expected {})", table.name,
                     table.header.sh_entsize, sizeof(Elf64_Sym)));
  const Section* strings = section_at(table.header.sh_link);
  if (!strings)
    fail(fmt::format("symbol table '{}' links to section {}, which does not exist", table.name,
                     table.header.sh_link));
  auto names = data(*strings);
  auto bytes = data(table);
  std::vector<Symbol> out(bytes.size() / sizeof(Elf64_Sym));
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].index = static_cast<uint32_t>(i);
    out[i].sym = checked_read<Elf64_Sym>(bytes, i * sizeof(Elf64_Sym), "symbol", table.name);
    if (out[i].sym.st_name == 0) continue;
    try {
      out[i].name = checked_string(names, out[i].sym.st_name, fmt::format("symbol {}", i));
    } catch (const FormatError& e) {
      fail(e.what());
    }
  }
  return out;
}

std::span<const std::byte> File::symbol_data(const Symbol& symbol) const {
  const Elf64_Sym& s = symbol.sym;
  const Section* section = s.st_shndx < SHN_LORESERVE ? section_at(s.st_shndx) : nullptr;
  if (!section || s.st_shndx == SHN_UNDEF)
    fail(fmt::format("symbol '{}' is not defined in a section (index {})", symbol.name,
                     s.st_shndx));
  if (section->header.sh_type == SHT_NOBITS)
    fail(fmt::format("symbol '{}' lies in '{}', which has no bytes in the file", symbol.name,
                     section->name));
  const Elf64_Shdr& h = section->header;
  // [st_value, st_value + st_size) must lie in [sh_addr, sh_addr + sh_size).
  if (s.st_value < h.sh_addr || s.st_value - h.sh_addr > h.sh_size ||
      s.st_size > h.sh_size - (s.st_value - h.sh_addr))
    fail(fmt::format("symbol '{}' ({} bytes at address {:#x}) lies outside its section '{}' "
                     "({} bytes at address {:#x})",
                     symbol.name, s.st_size, s.st_value, section->name, h.sh_size, h.sh_addr));
  return data(*section).subspan(s.st_value - h.sh_addr, s.st_size);
}

std::vector<Note> File::notes() const {
  auto parse = [this](std::span<const std::byte> bytes, uint64_t align, std::string_view where) {
    try {
      return parse_notes(bytes, align, where);
    } catch (const FormatError& e) {
      fail(e.what());
    }
  };
  std::vector<Note> out;
  for (const auto& p : segments_) {
    if (p.p_type != PT_NOTE) continue;
    auto notes = parse(data(p), p.p_align, "PT_NOTE segment");
    out.insert(out.end(), notes.begin(), notes.end());
  }
  if (!out.empty()) return out;
  for (const auto& s : sections_) {
    if (s.header.sh_type != SHT_NOTE) continue;
    auto notes = parse(data(s), s.header.sh_addralign, s.name);
    out.insert(out.end(), notes.begin(), notes.end());
  }
  return out;
}

}  // namespace elf
}  // namespace lrrt::formats
