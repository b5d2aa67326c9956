#include "lrrt/formats/host_library.hpp"

#include <unistd.h>

#include <algorithm>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "lrrt/formats/elf.hpp"
#include "lrrt/formats/error.hpp"
#include "lrrt/formats/format.hpp"

namespace lrrt::formats::host {
namespace {

constexpr std::string_view kQuery = LRRT_HOST_LIBRARY_QUERY_SYMBOL;
constexpr std::string_view kRecordPrefix = LRRT_HOST_KERNEL_RECORD_PREFIX;

// The host ABI knows two kinds: pointers (buffers) and values.
KernelArgInfo host_arg(uint32_t offset, uint32_t size, uint32_t kind, std::string name,
                       std::string type_name) {
  KernelArgInfo arg;
  arg.offset = offset;
  arg.size = size;
  bool pointer = kind == LRRT_HOST_ARG_POINTER;
  arg.kind = pointer ? ArgKind::GlobalBuffer : ArgKind::ByValue;
  arg.value_kind = pointer ? "global_buffer" : "by_value";
  arg.name = std::move(name);
  arg.type_name = std::move(type_name);
  return arg;
}

// Reads one kernel record; every offset in it is checked against the record.
KernelInfo read_record(std::span<const std::byte> bytes, std::string_view symbol) {
  const std::string where = fmt::format("kernel record {}", symbol);
  auto header = checked_read<lrrt_host_kernel_record_t>(bytes, 0, "record header", where);
  if (header.magic != LRRT_HOST_KERNEL_RECORD_MAGIC)
    throw FormatError(fmt::format("{}: magic {:#x} is not {:#x}", where, header.magic,
                                  LRRT_HOST_KERNEL_RECORD_MAGIC));
  if (header.version != LRRT_HOST_KERNEL_RECORD_VERSION)
    throw FormatError(fmt::format("{}: record version {}, this lrrt reads version {}", where,
                                  header.version, LRRT_HOST_KERNEL_RECORD_VERSION));
  if (header.size < sizeof(header) || header.size > bytes.size())
    throw FormatError(fmt::format("{}: claims {} bytes, but the symbol has {} (and the header {})",
                                  where, header.size, bytes.size(), sizeof(header)));
  bytes = bytes.first(header.size);
  if (header.arg_count > (bytes.size() - sizeof(header)) / sizeof(lrrt_host_arg_record_t))
    throw FormatError(fmt::format("{}: {} arguments do not fit in its {} bytes", where,
                                  header.arg_count, bytes.size()));
  KernelInfo k;
  k.name = std::string(checked_string(bytes, header.name, where));
  std::string expected = std::string(kRecordPrefix) + k.name;
  if (symbol != expected)
    throw FormatError(fmt::format("{} describes kernel '{}' (expected symbol {})", where, k.name,
                                  expected));
  k.symbol = k.name;
  k.has_arg_layout = true;
  k.kernarg_size = header.kernarg_size;
  k.kernarg_align = header.kernarg_align;
  k.group_segment_size = header.static_shared_bytes;
  for (uint32_t i = 0; i < header.arg_count; ++i) {
    auto a = checked_read<lrrt_host_arg_record_t>(
        bytes, sizeof(header) + uint64_t(i) * sizeof(lrrt_host_arg_record_t), "argument record",
        where);
    KernelArgInfo arg = host_arg(a.offset, a.size, a.kind, std::string(checked_string(bytes, a.name, where)),
                                 std::string(checked_string(bytes, a.type_name, where)));
    if (a.offset > k.kernarg_size || a.size > k.kernarg_size - a.offset)
      throw FormatError(fmt::format("{}: argument {} ({} bytes at offset {}) exceeds the {}-byte "
                                    "argument struct",
                                    where, arg.name, a.size, a.offset, k.kernarg_size));
    k.args.push_back(std::move(arg));
  }
  return k;
}

std::string segment_type(uint32_t type) {
  switch (type) {
    case PT_LOAD: return "PT_LOAD";
    case PT_DYNAMIC: return "PT_DYNAMIC";
    case PT_INTERP: return "PT_INTERP";
    case PT_NOTE: return "PT_NOTE";
    case PT_PHDR: return "PT_PHDR";
    case PT_TLS: return "PT_TLS";
    case PT_GNU_EH_FRAME: return "PT_GNU_EH_FRAME";
    case PT_GNU_STACK: return "PT_GNU_STACK";
    case PT_GNU_RELRO: return "PT_GNU_RELRO";
    case PT_GNU_PROPERTY: return "PT_GNU_PROPERTY";
    default: return fmt::format("type {:#x}", type);
  }
}

bool power_of_two_or_less(uint64_t v) { return (v & (v - 1)) == 0; }  // 0, 1, 2, 4, ...

// The segments whose bytes the loader reads at their p_vaddr once mapped.
bool read_in_memory(uint32_t type) {
  switch (type) {
    case PT_DYNAMIC:
    case PT_PHDR:
    case PT_TLS:
    case PT_NOTE:
    case PT_GNU_PROPERTY:
    case PT_GNU_EH_FRAME:
    case PT_GNU_RELRO: return true;
    default: return false;
  }
}

constexpr uint64_t kMaxLoadSpan = uint64_t(1) << 40;      // 1 TiB of address space
constexpr uint64_t kMaxLoadAlign = uint64_t(1) << 30;     // what linkers use is 4 KiB to 2 MiB
constexpr uint64_t kMaxOtherAlign = uint64_t(1) << 16;    // notes 4 or 8, TLS up to a page
constexpr uint64_t kMaxTlsBytes = uint64_t(1) << 30;

}  // namespace

void check_loadable(std::span<const std::byte> image) {
  // The ELF header, the section and program header tables in the file.
  elf::File file(image, "host kernel library");
  const Elf64_Ehdr& h = file.header();
  if (detect_format(image) != Format::HostSharedObject)
    file.fail(fmt::format("it is built for {}, this host is {}", elf::machine_name(h.e_machine), host_machine()));
  if (h.e_type != ET_DYN) file.fail(fmt::format("e_type is {}, not ET_DYN (a shared object)", h.e_type));
  if (h.e_phoff == 0 || h.e_phnum == 0)
    file.fail(fmt::format("it has no program headers (e_phoff {}, e_phnum {})", h.e_phoff, h.e_phnum));
  // The loader reads e_phnum headers; PN_XNUM (more in section 0) it does not know.
  if (h.e_phnum > kMaxHostSegments)
    file.fail(fmt::format("e_phnum is {}, more program headers than the {} lrrt accepts", h.e_phnum,
                          kMaxHostSegments));
  const std::vector<Elf64_Phdr>& segments = file.segments();
  if (segments.size() != h.e_phnum)
    file.fail(fmt::format("e_phnum is {}, but {} program headers were read", h.e_phnum, segments.size()));

  const uint64_t size = image.size();
  const long sys_page = sysconf(_SC_PAGESIZE);
  const uint64_t page = sys_page > 4096 ? uint64_t(sys_page) : 4096;
  auto where = [&](size_t i) { return fmt::format("program header {} ({})", i, segment_type(segments[i].p_type)); };
  auto check_file_bytes = [&](size_t i) {
    const Elf64_Phdr& p = segments[i];
    if (p.p_offset > size || p.p_filesz > size - p.p_offset)
      file.fail(fmt::format("{}: p_offset {:#x} + p_filesz {:#x} lies outside the {}-byte file", where(i), p.p_offset,
                            p.p_filesz, size));
    if (p.p_memsz < p.p_filesz)
      file.fail(fmt::format("{}: p_memsz {:#x} is smaller than p_filesz {:#x}", where(i), p.p_memsz, p.p_filesz));
    if (p.p_memsz > UINT64_MAX - p.p_vaddr)
      file.fail(fmt::format("{}: p_vaddr {:#x} + p_memsz {:#x} wraps around", where(i), p.p_vaddr, p.p_memsz));
  };

  std::vector<const Elf64_Phdr*> loads;
  const Elf64_Phdr* dynamic = nullptr;
  for (size_t i = 0; i < segments.size(); ++i) {
    const Elf64_Phdr& p = segments[i];
    if (p.p_type == PT_DYNAMIC) {
      if (dynamic) file.fail(fmt::format("{}: a second PT_DYNAMIC", where(i)));
      dynamic = &p;
    }
    if (p.p_type != PT_LOAD) continue;
    check_file_bytes(i);
    if (!power_of_two_or_less(p.p_align) || p.p_align > kMaxLoadAlign)
      file.fail(fmt::format("{}: p_align {:#x} is not a power of two up to {:#x}", where(i), p.p_align, kMaxLoadAlign));
    // The loader maps whole pages: file page and memory page must match.
    const uint64_t modulus = std::max(page, p.p_align);
    if ((p.p_vaddr - p.p_offset) % modulus != 0)
      file.fail(fmt::format("{}: p_offset {:#x} and p_vaddr {:#x} differ modulo {:#x}", where(i), p.p_offset,
                            p.p_vaddr, modulus));
    if (!loads.empty() && p.p_vaddr < loads.back()->p_vaddr + loads.back()->p_memsz)
      file.fail(fmt::format("{}: p_vaddr {:#x} is inside or before the previous PT_LOAD ({:#x} bytes at {:#x}): "
                            "loads must be in address order and not overlap",
                            where(i), p.p_vaddr, loads.back()->p_memsz, loads.back()->p_vaddr));
    loads.push_back(&p);
  }
  if (loads.empty()) file.fail("it has no PT_LOAD program header");
  if (!dynamic) file.fail("it has no PT_DYNAMIC program header (no dynamic section)");
  const uint64_t first = loads.front()->p_vaddr / page * page;
  if (loads.back()->p_vaddr + loads.back()->p_memsz - first > kMaxLoadSpan)
    file.fail(fmt::format("its PT_LOAD segments span {:#x} bytes, more than {:#x}",
                          loads.back()->p_vaddr + loads.back()->p_memsz - first, kMaxLoadSpan));

  // The load that maps [vaddr, vaddr + bytes), or nullptr; `to_page_end`:
  // up to the end of the load's last page (what mprotect sees).
  auto load_of = [&](uint64_t vaddr, uint64_t bytes, bool to_page_end = false) -> const Elf64_Phdr* {
    for (const Elf64_Phdr* l : loads) {
      uint64_t extent = l->p_memsz;
      if (to_page_end) extent = (l->p_vaddr + extent + page - 1) / page * page - l->p_vaddr;
      if (vaddr >= l->p_vaddr && vaddr - l->p_vaddr <= extent && bytes <= extent - (vaddr - l->p_vaddr)) return l;
    }
    return nullptr;
  };
  for (size_t i = 0; i < segments.size(); ++i) {
    const Elf64_Phdr& p = segments[i];
    if (!read_in_memory(p.p_type)) continue;
    check_file_bytes(i);
    if (!power_of_two_or_less(p.p_align) || p.p_align > kMaxOtherAlign)
      file.fail(fmt::format("{}: p_align {:#x} is not a power of two up to {:#x}", where(i), p.p_align, kMaxOtherAlign));
    // PT_TLS: its image lies in a load; the rest (.tbss) is allocated per thread.
    const uint64_t in_memory = p.p_type == PT_TLS ? p.p_filesz : p.p_memsz;
    if (p.p_type == PT_TLS && p.p_memsz > kMaxTlsBytes)
      file.fail(fmt::format("{}: p_memsz {:#x} is more thread-local storage than {:#x}", where(i), p.p_memsz,
                            kMaxTlsBytes));
    // PT_GNU_RELRO is only made read-only (whole pages), never read.
    const bool relro = p.p_type == PT_GNU_RELRO;
    const Elf64_Phdr* l = load_of(p.p_vaddr, in_memory, relro);
    if (!l)
      file.fail(fmt::format("{}: {:#x} bytes at p_vaddr {:#x} are not inside one PT_LOAD", where(i), in_memory,
                            p.p_vaddr));
    if (relro) {
      // Only data the loader wrote may become read-only (code pages: below).
      if (!(l->p_flags & PF_W))
        file.fail(fmt::format("{}: it lies in the PT_LOAD at p_vaddr {:#x}, which is not writable (p_flags {:#x}): "
                              "RELRO is data written while relocating",
                              where(i), l->p_vaddr, l->p_flags));
      continue;
    }
    // What the loader reads at p_vaddr is what the load maps there from the
    // file: the segment's own file bytes, or zeros past the load's p_filesz.
    const uint64_t into = p.p_vaddr - l->p_vaddr;
    if (p.p_filesz && (p.p_offset < l->p_offset || p.p_offset - l->p_offset != into || into > l->p_filesz ||
                       p.p_filesz > l->p_filesz - into))
      file.fail(fmt::format("{}: p_offset {:#x} is not where its PT_LOAD (p_offset {:#x}, p_vaddr {:#x}) maps p_vaddr "
                            "{:#x} from",
                            where(i), p.p_offset, l->p_offset, l->p_vaddr, p.p_vaddr));
  }

  // The dynamic section, read as the loader reads it: entries up to DT_NULL,
  // addresses inside the loads, names inside the string table.
  const auto bytes = file.data(*dynamic);
  const size_t count = bytes.size() / sizeof(Elf64_Dyn);
  std::vector<Elf64_Dyn> entries;
  bool terminated = false;
  for (size_t i = 0; i < count && !terminated; ++i) {
    const auto d = checked_read<Elf64_Dyn>(bytes, i * sizeof(Elf64_Dyn), "dynamic entry", "dynamic section");
    if (d.d_tag == DT_NULL) terminated = true;
    else entries.push_back(d);
  }
  if (!terminated)
    file.fail(fmt::format("its dynamic section ({} entries) has no DT_NULL entry to end it", count));
  auto value = [&](int64_t tag) -> std::optional<uint64_t> {
    for (const auto& d : entries)
      if (d.d_tag == tag) return d.d_un.d_val;
    return std::nullopt;
  };
  auto tag_name = [](int64_t tag) -> std::string {
    switch (tag) {
      case DT_PLTGOT: return "DT_PLTGOT";
      case DT_HASH: return "DT_HASH";
      case DT_STRTAB: return "DT_STRTAB";
      case DT_SYMTAB: return "DT_SYMTAB";
      case DT_RELA: return "DT_RELA";
      case DT_REL: return "DT_REL";
      case DT_INIT: return "DT_INIT";
      case DT_FINI: return "DT_FINI";
      case DT_JMPREL: return "DT_JMPREL";
      case DT_INIT_ARRAY: return "DT_INIT_ARRAY";
      case DT_FINI_ARRAY: return "DT_FINI_ARRAY";
      case DT_GNU_HASH: return "DT_GNU_HASH";
      case DT_VERSYM: return "DT_VERSYM";
      case DT_VERDEF: return "DT_VERDEF";
      case DT_VERNEED: return "DT_VERNEED";
      default: return fmt::format("tag {:#x}", tag);
    }
  };
  // Address tags, with the tag that gives their size (0: one byte).
  const std::pair<int64_t, int64_t> addresses[] = {
      {DT_PLTGOT, 0},       {DT_HASH, 0},       {DT_STRTAB, DT_STRSZ},         {DT_SYMTAB, 0},
      {DT_RELA, DT_RELASZ}, {DT_REL, DT_RELSZ}, {DT_INIT, 0},                  {DT_FINI, 0},
      {DT_JMPREL, DT_PLTRELSZ}, {DT_INIT_ARRAY, DT_INIT_ARRAYSZ}, {DT_FINI_ARRAY, DT_FINI_ARRAYSZ},
      {DT_GNU_HASH, 0},     {DT_VERSYM, 0},     {DT_VERDEF, 0},                {DT_VERNEED, 0}};
  for (const auto& [tag, size_tag] : addresses) {
    const auto at = value(tag);
    if (!at) continue;
    const uint64_t length = size_tag ? value(size_tag).value_or(0) : 1;
    if (!load_of(*at, length))
      file.fail(fmt::format("dynamic entry {} ({:#x}, {:#x} bytes) lies outside the PT_LOAD segments", tag_name(tag),
                            *at, length));
  }
  const uint64_t strsz = value(DT_STRSZ).value_or(0);
  for (const auto& d : entries)
    if ((d.d_tag == DT_NEEDED || d.d_tag == DT_SONAME || d.d_tag == DT_RPATH || d.d_tag == DT_RUNPATH) &&
        d.d_un.d_val >= strsz)
      file.fail(fmt::format("a dynamic entry's name offset {:#x} lies outside the {}-byte string table (DT_STRSZ)",
                            d.d_un.d_val, strsz));

  // Permissions: the loader reads the dynamic section and the tables it
  // names, writes the relocation targets, calls the constructors. A load
  // without the permission faults (a p_flags byte is part of the headers).
  auto require_flags = [&](const Elf64_Phdr* l, uint32_t flag, const std::string& what) {
    if (!(l->p_flags & flag))
      file.fail(fmt::format("{} lies in the PT_LOAD at p_vaddr {:#x}, which is not {} (p_flags {:#x})", what, l->p_vaddr,
                            flag == PF_R ? "readable" : flag == PF_W ? "writable" : "executable", l->p_flags));
  };
  require_flags(load_of(dynamic->p_vaddr, dynamic->p_memsz), PF_R, "the dynamic section");
  for (const auto& [tag, size_tag] : addresses) {
    const auto at = value(tag);
    if (!at) continue;
    const Elf64_Phdr* l = load_of(*at, size_tag ? value(size_tag).value_or(0) : 1);
    if (tag == DT_INIT || tag == DT_FINI) require_flags(l, PF_X, fmt::format("the {} function", tag_name(tag)));
    else if (tag != DT_PLTGOT) require_flags(l, PF_R, fmt::format("the {} table", tag_name(tag)));
  }
  // The file bytes a load maps at [vaddr, vaddr + length).
  auto mapped_bytes = [&](uint64_t vaddr, uint64_t length, const std::string& what) {
    const Elf64_Phdr* l = load_of(vaddr, length);
    const uint64_t into = l ? vaddr - l->p_vaddr : 0;
    if (!l || into > l->p_filesz || length > l->p_filesz - into)
      file.fail(fmt::format("{} ({:#x} bytes at {:#x}) is not in the file bytes of one PT_LOAD", what, length, vaddr));
    return checked_subspan(image, l->p_offset + into, length, what, "file");
  };
  const bool textrel = value(DT_TEXTREL).has_value() || (value(DT_FLAGS).value_or(0) & DF_TEXTREL);
#if defined(__aarch64__)
  constexpr uint32_t kRelative = R_AARCH64_RELATIVE;
#else
  constexpr uint32_t kRelative = R_X86_64_RELATIVE;
#endif
  auto in_array = [&](uint64_t at, int64_t tag, int64_t size_tag) {
    const auto start = value(tag);
    return start && at >= *start && at - *start < value(size_tag).value_or(0);
  };
  auto check_relocations = [&](int64_t tag, int64_t size_tag, const char* what) {
    const auto at = value(tag);
    if (!at) return;
    const uint64_t length = value(size_tag).value_or(0);
    const auto table = mapped_bytes(*at, length, what);
    for (uint64_t i = 0; i < length / sizeof(Elf64_Rela); ++i) {
      const auto r = checked_read<Elf64_Rela>(table, i * sizeof(Elf64_Rela), "relocation", what);
      const std::string where_r = fmt::format("{} entry {} (r_offset {:#x})", what, i, r.r_offset);
      const Elf64_Phdr* target = load_of(r.r_offset, sizeof(uint64_t));
      if (!target) file.fail(fmt::format("{}: the address it writes is not inside a PT_LOAD", where_r));
      if (!textrel) require_flags(target, PF_W, where_r + ": the address it writes");
      // A constructor or destructor pointer: the loader calls what it points at.
      if (ELF64_R_TYPE(r.r_info) == kRelative &&
          (in_array(r.r_offset, DT_INIT_ARRAY, DT_INIT_ARRAYSZ) || in_array(r.r_offset, DT_FINI_ARRAY, DT_FINI_ARRAYSZ))) {
        const Elf64_Phdr* code = load_of(static_cast<uint64_t>(r.r_addend), 1);
        if (!code) file.fail(fmt::format("{}: the constructor it points at ({:#x}) is not inside a PT_LOAD", where_r, r.r_addend));
        require_flags(code, PF_X, fmt::format("{}: the constructor it points at ({:#x})", where_r, r.r_addend));
      }
    }
  };
  check_relocations(DT_RELA, DT_RELASZ, "DT_RELA");
  if (value(DT_PLTREL).value_or(DT_RELA) == DT_RELA) check_relocations(DT_JMPREL, DT_PLTRELSZ, "DT_JMPREL");

  // Sections against the loads: each allocated one inside one load that
  // maps it from its own file bytes with its permissions. (A p_offset moved
  // by whole pages still satisfies every check above, and maps the wrong
  // bytes: code where data was.)
  if (file.sections().empty())
    file.fail("it has no section headers (lrrt checks a host library's segments against its sections before loading it)");
  for (const auto& section : file.sections()) {
    const Elf64_Shdr& sh = section.header;
    if (!(sh.sh_flags & SHF_ALLOC) || sh.sh_size == 0) continue;
    if ((sh.sh_flags & SHF_TLS) && sh.sh_type == SHT_NOBITS) continue;  // .tbss: per thread, in no load
    const std::string what = fmt::format("section {} '{}' ({:#x} bytes at {:#x})", section.index, section.name,
                                         sh.sh_size, sh.sh_addr);
    const Elf64_Phdr* l = load_of(sh.sh_addr, sh.sh_size);
    if (!l) file.fail(fmt::format("{} is not inside one PT_LOAD", what));
    if (sh.sh_flags & SHF_EXECINSTR) require_flags(l, PF_X, what);
    else require_flags(l, PF_R, what);
    if (sh.sh_flags & SHF_WRITE) require_flags(l, PF_W, what);
    const uint64_t into = sh.sh_addr - l->p_vaddr;
    if (sh.sh_type == SHT_NOBITS) {
      // .bss is the zeros past p_filesz: a p_filesz reaching into it fills
      // it with whatever file bytes follow, and the library's own code then
      // runs on them (a corrupted p_filesz crashed lrrt at exit, in the
      // library's destructors).
      if (into < l->p_filesz)
        file.fail(fmt::format("{}: it holds zeros (SHT_NOBITS), but its PT_LOAD (p_vaddr {:#x}) maps file bytes up to "
                              "{:#x} (p_filesz {:#x})",
                              what, l->p_vaddr, l->p_vaddr + l->p_filesz, l->p_filesz));
      continue;
    }
    if (sh.sh_offset < l->p_offset || sh.sh_offset - l->p_offset != into || into > l->p_filesz ||
        sh.sh_size > l->p_filesz - into)
      file.fail(fmt::format("{}: its file bytes (sh_offset {:#x}) are not what its PT_LOAD (p_offset {:#x}, p_vaddr "
                            "{:#x}) maps there",
                            what, sh.sh_offset, l->p_offset, l->p_vaddr));
  }
  // PT_GNU_RELRO is made read-only after relocation, before the
  // constructors run: it must not cover data written later.
  const bool bind_now = value(DT_BIND_NOW).has_value() || (value(DT_FLAGS).value_or(0) & DF_BIND_NOW) ||
                        (value(DT_FLAGS_1).value_or(0) & DF_1_NOW);
  for (size_t i = 0; i < segments.size(); ++i) {
    const Elf64_Phdr& p = segments[i];
    if (p.p_type != PT_GNU_RELRO) continue;
    const uint64_t lo = p.p_vaddr / page * page, hi = (p.p_vaddr + p.p_memsz) / page * page;  // as the loader rounds
    // None of its pages holds code (a moved p_vaddr made code pages
    // read-only, and the library's first call jumped into them).
    for (const Elf64_Phdr* l : loads) {
      const uint64_t code_lo = l->p_vaddr / page * page, code_hi = (l->p_vaddr + l->p_memsz + page - 1) / page * page;
      if ((l->p_flags & PF_X) && lo < code_hi && code_lo < hi)
        file.fail(fmt::format("{}: it would make code of the PT_LOAD at p_vaddr {:#x} read-only, not executable",
                              where(i), l->p_vaddr));
    }
    for (const auto& section : file.sections()) {
      const Elf64_Shdr& sh = section.header;
      const std::string_view name = section.name;
      const bool written = (name.starts_with(".data") && !name.starts_with(".data.rel.ro")) || name.starts_with(".bss") ||
                           (name == ".got.plt" && !bind_now);
      if (!(sh.sh_flags & SHF_ALLOC) || !(sh.sh_flags & SHF_WRITE) || !written || sh.sh_size == 0) continue;
      // .got.plt's first three entries are the loader's own, written during
      // relocation; GNU ld ends RELRO after them.
      const uint64_t first = name == ".got.plt" ? std::min<uint64_t>(sh.sh_size, 24) : 0;
      if (sh.sh_addr + first < hi && lo < sh.sh_addr + sh.sh_size)
        file.fail(fmt::format("{}: it would make section '{}' ({:#x} bytes at {:#x}) read-only, which the library "
                              "writes",
                              where(i), name, sh.sh_size, sh.sh_addr));
    }
  }
}

HostLibrary read_host_library(std::span<const std::byte> image) {
  elf::File file(image, "host kernel library");
  HostLibrary lib;
  lib.machine = elf::machine_name(file.machine());
  if (detect_format(image) != Format::HostSharedObject)
    file.fail(fmt::format("it is built for {}, this host is {}", lib.machine, host_machine()));
  const elf::Section* dynsym = nullptr;
  for (const auto& s : file.sections())
    if (s.header.sh_type == SHT_DYNSYM) dynsym = &s;
  if (!dynsym)
    file.fail("it has no dynamic symbol table (.dynsym); a host kernel library is a shared object "
              "that exports " + std::string(kQuery));
  for (const auto& sym : file.symbols(*dynsym)) {
    if (!sym.defined()) continue;
    if (sym.name == kQuery && sym.type() == STT_FUNC) lib.has_query = true;
    if (!sym.name.starts_with(kRecordPrefix) || sym.type() != STT_OBJECT) continue;
    auto record = file.symbol_data(sym);
    try {
      lib.kernels.push_back(read_record(record, sym.name));
    } catch (const FormatError& e) {
      file.fail(e.what());
    }
  }
  if (!lib.has_query)
    file.fail(fmt::format("it exports no {} and has no GPU code section (.hip_fatbin, .nv_fatbin, "
                          "__nv_relfatbin): neither an lrrt host kernel library (see "
                          "include/lrrt/host_kernel_abi.h) nor a binary carrying GPU code",
                          kQuery));
  lib.has_records = !lib.kernels.empty();
  std::sort(lib.kernels.begin(), lib.kernels.end(),
            [](const KernelInfo& a, const KernelInfo& b) { return a.name < b.name; });
  return lib;
}

KernelInfo kernel_info(const lrrt_host_kernel_t& desc) {
  KernelInfo info;
  info.name = desc.name ? desc.name : "";
  info.symbol = info.name;
  info.has_arg_layout = true;
  info.kernarg_size = desc.kernarg_size;
  info.kernarg_align = desc.kernarg_align;
  info.group_segment_size = desc.static_shared_bytes;
  info.max_workgroup_size = 0;
  for (uint32_t i = 0; i < desc.arg_count; ++i) {
    const auto& a = desc.args[i];
    info.args.push_back(
        host_arg(a.offset, a.size, a.kind, a.name ? a.name : "", a.type_name ? a.type_name : ""));
  }
  return info;
}

}  // namespace lrrt::formats::host
