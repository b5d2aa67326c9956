// Cubins (.nv.info, the kernels and their parameters), fatbins and which image
// runs on which device. PTX text is read in nvidia_ptx.cpp.
#include "lrrt/formats/nvidia.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "lrrt/formats/elf.hpp"
#include "lrrt/formats/error.hpp"
#include "magic.hpp"

namespace lrrt::formats::nvidia {
namespace {

constexpr uint8_t kStoCudaEntry = 0x10;

// .nv.info attribute formats and the attributes read here.
constexpr uint8_t kEifmtNval = 0x01;
constexpr uint8_t kEifmtBval = 0x02;
constexpr uint8_t kEifmtHval = 0x03;
constexpr uint8_t kEifmtSval = 0x04;
constexpr uint8_t kEiattrFrameSize = 0x11;
constexpr uint8_t kEiattrKparamInfo = 0x17;
constexpr uint8_t kEiattrCbankParamSize = 0x19;
constexpr uint8_t kEiattrRegcount = 0x2f;
constexpr uint8_t kNvCompatArchSpecific = 0x09;  // in .nv.compat

// Fatbin entry kinds and flags.
constexpr uint16_t kFatbinKindPtx = 1;
constexpr uint16_t kFatbinKindElf = 2;
constexpr uint64_t kFatbinFlagLz4 = 0x2000;
constexpr uint64_t kFatbinFlagZstd = 0x8000;
constexpr uint64_t kFatbinFlagArchSpecific = 0x100000;    // sm_90a
constexpr uint64_t kFatbinFlagFamilySpecific = 0x200000;  // sm_100f
constexpr uint64_t kFatbinHeaderSize = 16;
constexpr uint64_t kFatbinEntryHeaderSize = 64;

bool is_cubin(std::span<const std::byte> image) { return elf::machine_of(image) == kEmCuda; }

bool is_fatbin(std::span<const std::byte> image) {
  if (image.size() < 4) return false;
  uint32_t magic;
  std::memcpy(&magic, image.data(), 4);
  return magic == kFatbinMagic;
}

std::string_view as_text(std::span<const std::byte> image) {
  return std::string_view(reinterpret_cast<const char*>(image.data()), image.size());
}

uint32_t sm_from_flags(uint32_t abi_version, uint32_t e_flags) {
  return abi_version >= 8 ? (e_flags >> 8) & 0xff : e_flags & 0xff;
}

// Walks a .nv.info section: calls fn(attribute, format, value16, payload).
template <typename Fn>
void walk_nv_info(const elf::File& file, const elf::Section& section, Fn&& fn) {
  auto data = file.data(section);
  uint64_t p = 0;
  while (p < data.size() && data.size() - p >= 4) {
    uint8_t format = static_cast<uint8_t>(data[p]);
    uint8_t attribute = static_cast<uint8_t>(data[p + 1]);
    uint16_t value;
    std::memcpy(&value, data.data() + p + 2, 2);
    std::span<const std::byte> payload;
    if (format == kEifmtSval) {
      if (value > data.size() - p - 4)
        file.fail(fmt::format("{}: attribute 0x{:02x} at offset {} has {} bytes, past the "
                              "section's {} bytes",
                              section.name, attribute, p, value, data.size()));
      payload = data.subspan(p + 4, value);
      p += 4 + uint64_t(value);
    } else if (format == kEifmtNval || format == kEifmtBval || format == kEifmtHval) {
      p += 4;
    } else {
      return;  // an attribute format of a newer toolkit: the rest cannot be framed
    }
    fn(attribute, format, value, payload);
  }
}

template <typename T>
T payload_read(std::span<const std::byte> payload, uint64_t offset) {
  return checked_read<T>(payload, offset, "attribute field", "attribute");
}

}  // namespace

uint32_t cubin_sm(std::span<const std::byte> image) {
  if (!is_cubin(image)) return 0;
  auto h = checked_read<Elf64_Ehdr>(image, 0, "ELF header");
  return sm_from_flags(h.e_ident[EI_ABIVERSION], h.e_flags);
}

namespace {

// An arch-specific (sm_90a) or family-specific (sm_100f) cubin has the same
// e_flags as a plain one (nvcc 13.0). What tells them apart, as read from
// nvcc's output: .nv.compat attribute 0x09 is 1 for "a" targets, and the
// tool options in .note.nv.tkinfo name the target ("-arch sm_100f").
char cubin_variant(const elf::File& file) {
  char variant = 0;
  if (const elf::Section* tk = file.section(".note.nv.tkinfo")) {
    const auto data = file.data(*tk);
    const std::string_view text(reinterpret_cast<const char*>(data.data()), data.size());
    for (std::string_view key : {"-arch sm_", "-arch=sm_"}) {
      const size_t at = text.find(key);
      if (at == std::string_view::npos) continue;
      size_t p = at + key.size();
      while (p < text.size() && std::isdigit(static_cast<unsigned char>(text[p]))) ++p;
      if (p < text.size() && (text[p] == 'a' || text[p] == 'f')) variant = text[p];
      break;
    }
  }
  if (const elf::Section* compat = file.section(".nv.compat"))
    walk_nv_info(file, *compat, [&](uint8_t attr, uint8_t format, uint16_t value, auto) {
      if (attr == kNvCompatArchSpecific && format == kEifmtBval && (value & 0xff) == 1) variant = 'a';
    });
  return variant;
}

}  // namespace

CubinInfo parse_cubin(std::span<const std::byte> image) {
  if (!is_cubin(image)) throw FormatError("not a cubin: no 64-bit ELF header with e_machine EM_CUDA (190)");
  elf::File file(image, "cubin");
  const Elf64_Ehdr& h = file.header();
  CubinInfo info;
  info.elf_abi_version = h.e_ident[EI_ABIVERSION];
  info.e_flags = h.e_flags;
  info.sm = sm_from_flags(info.elf_abi_version, h.e_flags);

  // Kernels: entry symbols of .symtab; their index also keys .nv.info.
  std::map<uint32_t, size_t> kernel_by_symbol;
  for (const auto& s : file.sections()) {
    if (s.header.sh_type != SHT_SYMTAB) continue;
    for (const auto& sym : file.symbols(s)) {
      if (sym.type() != STT_FUNC || !(sym.sym.st_other & kStoCudaEntry)) continue;
      ImageKernel k;
      k.name = std::string(sym.name);
      kernel_by_symbol[sym.index] = info.kernels.size();
      info.kernels.push_back(std::move(k));
    }
  }
  auto find_kernel = [&](std::string_view name) -> ImageKernel* {
    for (auto& k : info.kernels)
      if (k.name == name) return &k;
    return nullptr;
  };

  for (const auto& s : file.sections()) {
    if (s.name == ".nv.info") {
      walk_nv_info(file, s, [&](uint8_t attr, uint8_t, uint16_t, auto payload) {
        if ((attr != kEiattrRegcount && attr != kEiattrFrameSize) || payload.size() < 8) return;
        uint32_t symbol = payload_read<uint32_t>(payload, 0);
        uint32_t value = payload_read<uint32_t>(payload, 4);
        auto it = kernel_by_symbol.find(symbol);
        if (it == kernel_by_symbol.end()) return;
        ImageKernel& k = info.kernels[it->second];
        if (attr == kEiattrRegcount) k.registers = static_cast<int32_t>(value);
        else k.frame_bytes = static_cast<int32_t>(value);
      });
    } else if (s.name.starts_with(".nv.info.")) {
      ImageKernel* k = find_kernel(s.name.substr(9));
      if (!k) {
        // Names only from section names (stripped symbol table).
        ImageKernel unnamed;
        unnamed.name = std::string(s.name.substr(9));
        info.kernels.push_back(std::move(unnamed));
        k = &info.kernels.back();
      }
      walk_nv_info(file, s, [&](uint8_t attr, uint8_t format, uint16_t value, auto payload) {
        if (attr == kEiattrKparamInfo && payload.size() >= 12) {
          ImageParam p;
          p.ordinal = payload_read<uint16_t>(payload, 4);
          p.offset = payload_read<uint16_t>(payload, 6);
          p.size = payload_read<uint32_t>(payload, 8) >> 18;
          k->params.push_back(p);
          k->has_params = true;
        } else if (attr == kEiattrCbankParamSize && format == kEifmtHval) {
          k->param_bytes = value;
          k->has_params = true;
        }
      });
      std::sort(k->params.begin(), k->params.end(),
                [](const ImageParam& a, const ImageParam& b) { return a.ordinal < b.ordinal; });
      if (k->param_bytes == 0)
        for (const auto& p : k->params) k->param_bytes = std::max(k->param_bytes, p.offset + p.size);
    } else if (s.name.starts_with(".nv.shared.")) {
      if (ImageKernel* k = find_kernel(s.name.substr(11)))
        k->static_shared_bytes = static_cast<int64_t>(s.header.sh_size);
    }
  }
  for (auto& k : info.kernels)
    if (k.static_shared_bytes < 0) k.static_shared_bytes = 0;
  info.variant = cubin_variant(file);
  return info;
}

std::string FatbinEntry::describe() const {
  switch (kind) {
    case Kind::Ptx: return arch_name(sm, variant, true) + " PTX";
    case Kind::Cubin: return arch_name(sm, variant, false) + " cubin";
    case Kind::Other: break;
  }
  return fmt::format("sm_{} kind {}", sm, raw_kind);
}

FatbinInfo parse_fatbin(std::span<const std::byte> image) {
  if (!is_fatbin(image)) throw FormatError("not a fatbin: no 0xBA55ED50 magic");
  auto fail = [&](const std::string& what) -> void {
    throw FormatError(fmt::format("invalid fatbin: {}", what));
  };
  if (image.size() < kFatbinHeaderSize)
    fail(fmt::format("the file ends after {} bytes, inside the {}-byte header", image.size(),
                     kFatbinHeaderSize));
  FatbinInfo info;
  info.version = checked_read<uint16_t>(image, 4, "fatbin header");
  uint64_t header_size = checked_read<uint16_t>(image, 6, "fatbin header");
  uint64_t payload = checked_read<uint64_t>(image, 8, "fatbin header");
  if (header_size < kFatbinHeaderSize || header_size > image.size())
    fail(fmt::format("header size {} (the file has {} bytes)", header_size, image.size()));
  if (payload > image.size() - header_size)
    fail(fmt::format("the header promises {} bytes of entries after its {} bytes, but the file "
                     "has {} bytes",
                     payload, header_size, image.size()));
  const uint64_t end = header_size + payload;
  uint64_t p = header_size;
  while (p < end && end - p >= kFatbinEntryHeaderSize) {
    auto header = image.subspan(p, kFatbinEntryHeaderSize);
    if (std::all_of(header.begin(), header.end(), [](std::byte b) { return b == std::byte{0}; }))
      break;  // zero padding after the last entry
    FatbinEntry e;
    e.raw_kind = checked_read<uint16_t>(header, 0, "fatbin entry");
    uint64_t entry_header = checked_read<uint32_t>(header, 4, "fatbin entry");
    uint64_t size = checked_read<uint64_t>(header, 8, "fatbin entry");
    uint64_t compressed_size = checked_read<uint32_t>(header, 16, "fatbin entry");
    e.sm = checked_read<uint32_t>(header, 28, "fatbin entry");
    e.flags = checked_read<uint64_t>(header, 40, "fatbin entry");
    e.uncompressed_size = checked_read<uint64_t>(header, 56, "fatbin entry");
    e.kind = e.raw_kind == kFatbinKindPtx   ? FatbinEntry::Kind::Ptx
             : e.raw_kind == kFatbinKindElf ? FatbinEntry::Kind::Cubin
                                            : FatbinEntry::Kind::Other;
    // Both sizes come from the file: compare each with what is left.
    if (entry_header < kFatbinEntryHeaderSize || entry_header > end - p ||
        size > end - p - entry_header)
      fail(fmt::format("entry {} at offset {} ({}-byte header, {} bytes of payload) lies outside "
                       "the {} bytes of entries",
                       info.entries.size(), p, entry_header, size, payload));
    e.offset = p + entry_header;
    e.size = size;
    if (e.flags & kFatbinFlagArchSpecific) e.variant = 'a';
    else if (e.flags & kFatbinFlagFamilySpecific) e.variant = 'f';
    if (e.flags & kFatbinFlagZstd) e.compression = "zstd";
    else if (e.flags & kFatbinFlagLz4) e.compression = "lz4";
    if (e.compression.empty()) {
      e.uncompressed_size = size;
      e.bytes = image.subspan(e.offset, size);
    } else if (compressed_size != 0 && compressed_size <= size) {
      e.size = compressed_size;
      e.bytes = image.subspan(e.offset, compressed_size);
    } else {
      e.bytes = image.subspan(e.offset, size);
    }
    info.entries.push_back(std::move(e));
    p += entry_header + size;
  }
  return info;
}

bool cubin_runs_on(uint32_t image_sm, uint32_t device_sm) {
  return image_sm / 10 == device_sm / 10 && image_sm % 10 <= device_sm % 10;
}

bool ptx_runs_on(uint32_t ptx_sm, uint32_t device_sm) { return ptx_sm <= device_sm; }

bool sass_runs_on(uint32_t sm, char variant, uint32_t device_sm) {
  if (variant == 'a') return sm == device_sm;
  return cubin_runs_on(sm, device_sm);  // plain and family-specific: same major, minor no higher
}

bool ptx_runs_on(uint32_t sm, char variant, uint32_t device_sm) {
  if (variant == 'a') return sm == device_sm;
  if (variant == 'f') return cubin_runs_on(sm, device_sm);
  return ptx_runs_on(sm, device_sm);
}

std::string variant_note(uint32_t sm, char variant) {
  if (variant == 'a') return fmt::format(" (arch-specific: it runs only on sm_{})", sm);
  if (variant == 'f') return fmt::format(" (family-specific: it runs on sm_{}x devices from sm_{})", sm / 10, sm);
  return "";
}

std::string arch_name(uint32_t sm, char variant, bool ptx) {
  std::string name = fmt::format("{}_{}", ptx ? "compute" : "sm", sm);
  if (variant) name += variant;
  return name;
}

std::string describe_image_targets(std::span<const std::byte> image) {
  if (is_cubin(image)) return fmt::format("sm_{} cubin", cubin_sm(image));
  if (is_fatbin(image)) {
    FatbinInfo f = parse_fatbin(image);
    std::string out;
    for (const auto& e : f.entries) out += (out.empty() ? "" : ", ") + e.describe();
    return out.empty() ? "no entries" : out;
  }
  if (looks_like_ptx(image)) return fmt::format("PTX for {}", parse_ptx(as_text(image)).target);
  return "unknown code";
}

std::string check_image_for_device(std::span<const std::byte> image, uint32_t device_sm,
                                   std::string_view device) {
  const std::string fix = fmt::format(
      "rebuild it for the device (nvcc -arch=sm_{0}, or add PTX with "
      "-gencode=arch=compute_{0},code=compute_{0})",
      device_sm);
  try {
    if (is_cubin(image)) {
      // The driver trusts an ELF's offsets: a truncated or lying cubin must be
      // refused here, or cuModuleLoadDataEx reads past the image (SIGSEGV).
      const CubinInfo c = parse_cubin(image);
      if (sass_runs_on(c.sm, c.variant, device_sm)) return {};
      return fmt::format("the cubin is built for {}{} but {} is sm_{}; {}", arch_name(c.sm, c.variant, false),
                         variant_note(c.sm, c.variant), device, device_sm, fix);
    }
    if (is_fatbin(image)) {
      FatbinInfo f = parse_fatbin(image);
      for (const auto& e : f.entries)  // the same for every cubin the driver may pick
        if (e.kind == FatbinEntry::Kind::Cubin && e.compression.empty()) (void)parse_cubin(e.bytes);
      for (const auto& e : f.entries) {
        if (e.kind == FatbinEntry::Kind::Cubin && sass_runs_on(e.sm, e.variant, device_sm)) return {};
        if (e.kind == FatbinEntry::Kind::Ptx && ptx_runs_on(e.sm, e.variant, device_sm)) return {};
      }
      return fmt::format("the fatbin holds {} but {} is sm_{}; none of it runs there; {}",
                         describe_image_targets(image), device, device_sm, fix);
    }
    if (looks_like_ptx(image)) {
      PtxInfo p = parse_ptx(as_text(image));
      if (p.sm == 0 || ptx_runs_on(p.sm, p.variant, device_sm)) return {};
      return fmt::format(
          "the PTX targets {} but {} is sm_{}; PTX runs only on its target or newer; {}", p.target,
          device, device_sm, fix);
    }
  } catch (const FormatError& e) {
    if (looks_like_ptx(image)) return {};  // PTX is text: the driver's JIT log explains it better
    return e.what();
  }
  return {};
}

namespace {

// Calls fn(kernels) for the cubin, each readable fatbin entry, or the PTX.
template <typename Fn>
void for_each_kernel_list(std::span<const std::byte> image, Fn&& fn) {
  if (is_cubin(image)) return fn(parse_cubin(image).kernels);
  if (is_fatbin(image)) {
    for (const auto& e : parse_fatbin(image).entries) {
      if (!e.compression.empty()) continue;
      if (e.kind == FatbinEntry::Kind::Cubin && is_cubin(e.bytes))
        fn(parse_cubin(e.bytes).kernels);
      else if (e.kind == FatbinEntry::Kind::Ptx)
        fn(parse_ptx(as_text(e.bytes)).kernels);
    }
    return;
  }
  if (looks_like_ptx(image)) fn(parse_ptx(as_text(image)).kernels);
}

}  // namespace

std::vector<std::string> image_kernel_names(std::span<const std::byte> image) {
  std::vector<std::string> names;
  try {
    for_each_kernel_list(image, [&](const std::vector<ImageKernel>& kernels) {
      for (const auto& k : kernels)
        if (std::find(names.begin(), names.end(), k.name) == names.end()) names.push_back(k.name);
    });
  } catch (const FormatError&) {
  }
  return names;
}

std::optional<ImageKernel> image_kernel(std::span<const std::byte> image, std::string_view name) {
  std::optional<ImageKernel> found;
  try {
    for_each_kernel_list(image, [&](const std::vector<ImageKernel>& kernels) {
      if (found) return;
      for (const auto& k : kernels)
        if (k.name == name && k.has_params) {
          found = k;
          return;
        }
    });
  } catch (const FormatError&) {
  }
  return found;
}

}  // namespace lrrt::formats::nvidia
