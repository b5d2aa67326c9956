#include "lrrt/formats/container.hpp"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "lrrt/formats/compression.hpp"
#include "lrrt/formats/elf.hpp"
#include "lrrt/formats/nvidia.hpp"
#include "lrrt/formats/offload_bundle.hpp"
#include "lrrt/host_kernel_abi.h"
#include "magic.hpp"

namespace lrrt::formats {
namespace {

// More bundles or fatbins than one section of a real library holds
// (libcublas: a few thousand fatbins); beyond it a small file would make a
// huge listing.
constexpr size_t kMaxContainersPerSection = 1 << 16;

bool all_zero(std::span<const std::byte> bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](std::byte b) { return b == std::byte{0}; });
}

// `base`: where `bundle` starts in the file.
void add_bundle_entries(const OffloadBundle& bundle, Format container, uint64_t base, uint32_t group,
                        std::string_view section, std::span<const std::byte> stored_bundle,
                        std::vector<CodeObjectEntry>& out) {
  for (const auto& b : bundle.entries) {
    CodeObjectEntry e;
    e.container = container;
    e.format = b.image.empty() ? Format::Unknown : detect_format(b.image);
    e.id = b.id;
    e.target = b.is_amdgpu() ? b.target : b.triple;
    e.section = std::string(section);
    e.group = group;
    e.size = b.image.size();
    e.uncompressed_size = b.image.size();
    e.bytes = b.image;
    if (bundle.storage) {
      e.offset = b.offset;
      e.in_compressed_bundle = true;
      e.compression = bundle.compression;
      e.stored = stored_bundle;
      e.storage = bundle.storage;
    } else {
      e.offset = base + b.offset;
      e.stored = b.image;
    }
    out.push_back(std::move(e));
  }
}

// `base`: where `fatbin` starts in the file.
void add_fatbin_entries(const nvidia::FatbinInfo& fatbin, Format container, uint64_t base, uint32_t group,
                        std::string_view section, std::vector<CodeObjectEntry>& out) {
  using Kind = nvidia::FatbinEntry::Kind;
  for (const auto& f : fatbin.entries) {
    CodeObjectEntry e;
    e.container = container;
    // What the entry holds, from the fatbin's header: its bytes may still be
    // compressed.
    e.format = f.kind == Kind::Cubin ? Format::Cubin : f.kind == Kind::Ptx ? Format::Ptx : Format::Unknown;
    e.id = f.describe();
    e.target = nvidia::arch_name(f.sm, f.variant, f.kind == Kind::Ptx);
    e.section = std::string(section);
    e.group = group;
    e.offset = base + f.offset;
    e.size = f.size;
    e.stored = f.bytes;
    e.compression = f.compression;
    e.uncompressed_size = f.uncompressed_size;
    if (e.compression.empty()) {
      e.bytes = f.bytes;
      // A kind-2 entry that is no cubin after all: say what it is.
      if (e.format == Format::Cubin && detect_format(f.bytes) != Format::Cubin) e.format = detect_format(f.bytes);
    }
    out.push_back(std::move(e));
  }
}

// Bytes after a fatbin's declared payload that are part of it: the header's
// payload size covers the entries only.
uint64_t fatbin_stored_size(std::span<const std::byte> bytes) {
  const uint64_t header = checked_read<uint16_t>(bytes, 6, "fatbin header", "fatbin");
  const uint64_t payload = checked_read<uint64_t>(bytes, 8, "fatbin header", "fatbin");
  return header + payload;  // parse_fatbin checked that both lie in `bytes`
}

// A section (or a whole file) holding one or more bundles or fatbins back to
// back, each maybe followed by zero padding to the next one's alignment.
void walk_containers(std::span<const std::byte> bytes, uint64_t base, std::string_view section, Format container,
                     uint32_t& group, std::vector<CodeObjectEntry>& out) {
  uint64_t pos = 0;
  size_t count = 0;
  while (pos < bytes.size()) {
    auto rest = bytes.subspan(pos);
    if (rest[0] == std::byte{0}) {
      auto next = std::find_if(rest.begin(), rest.end(), [](std::byte b) { return b != std::byte{0}; });
      pos += uint64_t(next - rest.begin());
      continue;
    }
    if (++count > kMaxContainersPerSection)
      throw FormatError(fmt::format("{} holds more than {} bundles or fatbins", section.empty() ? "the file" : section,
                                    kMaxContainersPerSection));
    const std::string where = section.empty() ? fmt::format("offset {}", pos)
                                              : fmt::format("offset {} of section {}", pos, section);
    const Format f = detect_format(rest);
    uint64_t stored = 0;
    try {
      if (f == Format::OffloadBundle || f == Format::CompressedOffloadBundle) {
        OffloadBundle bundle = read_offload_bundle(rest);
        stored = bundle.stored_size;
        add_bundle_entries(bundle, container, base + pos, group, section, rest.first(stored), out);
      } else if (f == Format::Fatbin) {
        nvidia::FatbinInfo fatbin = nvidia::parse_fatbin(rest);
        stored = fatbin_stored_size(rest);
        add_fatbin_entries(fatbin, container, base + pos, group, section, out);
      } else {
        throw FormatError(fmt::format("the bytes there are {}, not a clang offload bundle or fatbin",
                                      describe_format(rest.first(std::min<size_t>(rest.size(), 8192)))));
      }
    } catch (const FormatError& e) {
      if (section.empty() && pos == 0) throw;  // a plain container file: its own message
      throw FormatError(fmt::format("at {}: {}", where, e.what()));
    }
    if (stored == 0) throw FormatError(fmt::format("at {}: an empty container", where));
    ++group;
    pos += stored;
  }
}

struct HostElfScan {
  bool has_query = false;
  std::vector<const elf::Section*> gpu_sections;
};

HostElfScan scan_host_elf(const elf::File& file) {
  HostElfScan scan;
  for (const auto& s : file.sections()) {
    if (s.header.sh_type == SHT_NOBITS) continue;
    for (const char* name : kGpuCodeSections)
      if (s.name == name && s.header.sh_size) scan.gpu_sections.push_back(&s);
    if (s.header.sh_type == SHT_DYNSYM)
      for (const auto& sym : file.symbols(s))
        if (sym.defined() && sym.name == LRRT_HOST_LIBRARY_QUERY_SYMBOL) scan.has_query = true;
  }
  return scan;
}

CodeObjectEntry whole_file(std::span<const std::byte> image, Format format) {
  CodeObjectEntry e;
  e.container = format;
  e.format = format;
  e.size = image.size();
  e.uncompressed_size = image.size();
  e.stored = image;
  e.bytes = image;
  return e;
}

}  // namespace

std::string CodeObjectEntry::where() const {
  if (id.empty()) return "the whole file";
  std::string out = fmt::format("entry '{}'", id);
  if (!section.empty()) out += fmt::format(" of {} {} in section {}", container_kind(), group, section);
  return out;
}

std::string CodeObjectEntry::container_kind() const {
  if (section == ".hip_fatbin" || container == Format::OffloadBundle || container == Format::CompressedOffloadBundle)
    return in_compressed_bundle ? "compressed bundle" : "bundle";
  return "fatbin";
}

Format file_format(std::span<const std::byte> image) {
  const Format format = detect_format(image);
  if (format != Format::HostSharedObject) return format;
  try {
    elf::File file(image, "host binary");
    const HostElfScan scan = scan_host_elf(file);
    if (!scan.gpu_sections.empty() && !scan.has_query) return Format::HostBinary;
  } catch (const FormatError&) {
    // A malformed ELF: the reader that opens it says why.
  }
  return format;
}

std::vector<CodeObjectEntry> code_object_entries(std::span<const std::byte> image) {
  const Format format = detect_format(image);
  std::vector<CodeObjectEntry> out;
  uint32_t group = 0;
  switch (format) {
    case Format::OffloadBundle:
    case Format::CompressedOffloadBundle:
    case Format::Fatbin: {
      // One container per file; bytes after it are refused like a section's.
      walk_containers(image, 0, "", format, group, out);
      return out;
    }
    case Format::HostSharedObject: {
      // A host ELF the reader cannot open is left to the host library
      // reader, which says what is wrong with it as a host kernel library.
      std::optional<elf::File> opened;
      try {
        opened.emplace(image, "host binary");
      } catch (const FormatError&) {
        out.push_back(whole_file(image, Format::HostSharedObject));
        return out;
      }
      const elf::File& file = *opened;
      const HostElfScan scan = scan_host_elf(file);
      const Format container = scan.gpu_sections.empty() || scan.has_query ? Format::HostSharedObject : Format::HostBinary;
      for (const elf::Section* s : scan.gpu_sections)
        walk_containers(file.data(*s), s->header.sh_offset, s->name, container, group, out);
      if (scan.has_query || scan.gpu_sections.empty()) out.push_back(whole_file(image, Format::HostSharedObject));
      return out;
    }
    default: break;
  }
  out.push_back(whole_file(image, format));
  return out;
}

void decode_entry(CodeObjectEntry& e) {
  if (!e.pending()) return;
  const Codec codec = e.compression == "zstd"  ? Codec::Zstd
                      : e.compression == "lz4" ? Codec::Lz4Block
                                               : Codec::Zlib;
  if (e.uncompressed_size == 0)
    throw FormatError(fmt::format("{} is compressed ({}) but records no uncompressed size", e.where(), e.compression));
  auto storage = std::make_shared<std::vector<std::byte>>(
      decompress(codec, e.stored, e.uncompressed_size, fmt::format("{} ({}-compressed)", e.where(), e.compression)));
  e.bytes = *storage;
  e.storage = std::move(storage);
  const Format decoded = detect_format(e.bytes);
  if (e.format == Format::Cubin && decoded != Format::Cubin) e.format = decoded;
  if (e.format == Format::Ptx && decoded != Format::Ptx) e.format = decoded;
}

}  // namespace lrrt::formats
