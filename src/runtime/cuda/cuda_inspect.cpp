#include "cuda_inspect.hpp"

#include <elf.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

namespace lrrt::rt::cuda {
namespace {

constexpr uint16_t kEmCuda = 190;
constexpr uint32_t kFatbinMagic = 0xBA55ED50u;
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

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error(what); }

template <typename T>
T read_at(std::span<const std::byte> bytes, uint64_t offset, const char* what) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T))
    fail(fmt::format("truncated image: {} at offset {} lies past its {} bytes", what, offset,
                     bytes.size()));
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

std::span<const std::byte> sub(std::span<const std::byte> bytes, uint64_t offset, uint64_t size,
                               const char* what) {
  if (offset > bytes.size() || bytes.size() - offset < size)
    fail(fmt::format("truncated image: {} ({} bytes at offset {}) lies past its {} bytes", what,
                     size, offset, bytes.size()));
  return bytes.subspan(offset, size);
}

std::string_view cstr_at(std::span<const std::byte> table, uint64_t offset) {
  if (offset >= table.size()) return {};
  const char* begin = reinterpret_cast<const char*>(table.data()) + offset;
  const void* end = std::memchr(begin, 0, table.size() - offset);
  if (!end) return {};
  return std::string_view(begin, static_cast<const char*>(end) - begin);
}

bool is_cubin(std::span<const std::byte> image) {
  if (image.size() < sizeof(Elf64_Ehdr) || std::memcmp(image.data(), ELFMAG, SELFMAG) != 0)
    return false;
  Elf64_Ehdr h;
  std::memcpy(&h, image.data(), sizeof(h));
  return h.e_ident[EI_CLASS] == ELFCLASS64 && h.e_machine == kEmCuda;
}

bool is_fatbin(std::span<const std::byte> image) {
  return image.size() >= 16 && read_at<uint32_t>(image, 0, "magic") == kFatbinMagic;
}

std::string_view as_text(std::span<const std::byte> image) {
  return std::string_view(reinterpret_cast<const char*>(image.data()), image.size());
}

bool is_ptx(std::span<const std::byte> image) {
  std::string_view text = as_text(image.first(std::min<size_t>(image.size(), 8192)));
  return text.find(".version") != std::string_view::npos &&
         text.find(".target") != std::string_view::npos;
}

uint32_t sm_from_flags(uint32_t abi_version, uint32_t e_flags) {
  return abi_version >= 8 ? (e_flags >> 8) & 0xff : e_flags & 0xff;
}

struct Section {
  std::string_view name;
  Elf64_Shdr header;
};

// Walks a .nv.info section: calls fn(attribute, format, value16, payload).
template <typename Fn>
void walk_nv_info(std::span<const std::byte> data, Fn&& fn) {
  uint64_t p = 0;
  while (p + 4 <= data.size()) {
    uint8_t format = static_cast<uint8_t>(data[p]);
    uint8_t attribute = static_cast<uint8_t>(data[p + 1]);
    uint16_t value = read_at<uint16_t>(data, p + 2, "attribute");
    std::span<const std::byte> payload;
    if (format == kEifmtSval) {
      if (p + 4 + value > data.size()) return;  // malformed: stop quietly
      payload = data.subspan(p + 4, value);
      p += 4 + value;
    } else if (format == kEifmtNval || format == kEifmtBval || format == kEifmtHval) {
      p += 4;
    } else {
      return;  // unknown format: the rest cannot be framed
    }
    fn(attribute, format, value, payload);
  }
}

}  // namespace

uint32_t cubin_sm(std::span<const std::byte> image) {
  if (!is_cubin(image)) return 0;
  Elf64_Ehdr h;
  std::memcpy(&h, image.data(), sizeof(h));
  return sm_from_flags(h.e_ident[EI_ABIVERSION], h.e_flags);
}

CubinInfo parse_cubin(std::span<const std::byte> image) {
  if (!is_cubin(image)) fail("not a cubin: no 64-bit ELF header with e_machine EM_CUDA (190)");
  Elf64_Ehdr h = read_at<Elf64_Ehdr>(image, 0, "ELF header");
  CubinInfo info;
  info.elf_abi_version = h.e_ident[EI_ABIVERSION];
  info.e_flags = h.e_flags;
  info.sm = sm_from_flags(info.elf_abi_version, h.e_flags);

  if (h.e_shentsize != sizeof(Elf64_Shdr) || h.e_shnum == 0) return info;
  std::vector<Section> sections(h.e_shnum);
  for (uint32_t i = 0; i < h.e_shnum; ++i)
    sections[i].header =
        read_at<Elf64_Shdr>(image, h.e_shoff + uint64_t(i) * sizeof(Elf64_Shdr), "section header");
  if (h.e_shstrndx < sections.size()) {
    const Elf64_Shdr& s = sections[h.e_shstrndx].header;
    auto names = sub(image, s.sh_offset, s.sh_size, "section names");
    for (auto& section : sections) section.name = cstr_at(names, section.header.sh_name);
  }
  auto section_bytes = [&](const Section& s) {
    if (s.header.sh_type == SHT_NOBITS) return std::span<const std::byte>();
    return sub(image, s.header.sh_offset, s.header.sh_size, "section");
  };

  // Kernels: entry symbols of .symtab; their index also keys .nv.info.
  std::map<uint32_t, size_t> kernel_by_symbol;
  for (const auto& s : sections) {
    if (s.header.sh_type != SHT_SYMTAB || s.header.sh_entsize != sizeof(Elf64_Sym)) continue;
    if (s.header.sh_link >= sections.size()) continue;
    auto strings = section_bytes(sections[s.header.sh_link]);
    auto symbols = section_bytes(s);
    for (uint64_t i = 0; i < symbols.size() / sizeof(Elf64_Sym); ++i) {
      Elf64_Sym sym = read_at<Elf64_Sym>(symbols, i * sizeof(Elf64_Sym), "symbol");
      if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || !(sym.st_other & kStoCudaEntry)) continue;
      ImageKernel k;
      k.name = std::string(cstr_at(strings, sym.st_name));
      kernel_by_symbol[static_cast<uint32_t>(i)] = info.kernels.size();
      info.kernels.push_back(std::move(k));
    }
  }
  auto find_kernel = [&](std::string_view name) -> ImageKernel* {
    for (auto& k : info.kernels)
      if (k.name == name) return &k;
    return nullptr;
  };

  for (const auto& s : sections) {
    if (s.name == ".nv.info") {
      walk_nv_info(section_bytes(s), [&](uint8_t attr, uint8_t, uint16_t, auto payload) {
        if ((attr != kEiattrRegcount && attr != kEiattrFrameSize) || payload.size() < 8) return;
        uint32_t symbol = read_at<uint32_t>(payload, 0, "attribute");
        uint32_t value = read_at<uint32_t>(payload, 4, "attribute");
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
        info.kernels.push_back(ImageKernel{std::string(s.name.substr(9))});
        k = &info.kernels.back();
      }
      walk_nv_info(section_bytes(s), [&](uint8_t attr, uint8_t format, uint16_t value,
                                         auto payload) {
        if (attr == kEiattrKparamInfo && payload.size() >= 12) {
          ImageParam p;
          p.ordinal = read_at<uint16_t>(payload, 4, "parameter");
          p.offset = read_at<uint16_t>(payload, 6, "parameter");
          uint32_t bits = read_at<uint32_t>(payload, 8, "parameter");
          p.size = bits >> 18;
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
  return info;
}

FatbinInfo parse_fatbin(std::span<const std::byte> image) {
  if (!is_fatbin(image)) fail("not a fatbin: no 0xBA55ED50 magic");
  FatbinInfo info;
  info.version = read_at<uint16_t>(image, 4, "fatbin header");
  uint16_t header_size = read_at<uint16_t>(image, 6, "fatbin header");
  uint64_t payload = read_at<uint64_t>(image, 8, "fatbin header");
  uint64_t end = std::min<uint64_t>(uint64_t(header_size) + payload, image.size());
  uint64_t p = header_size;
  while (p + 64 <= end) {
    FatbinEntry e;
    uint16_t kind = read_at<uint16_t>(image, p, "fatbin entry");
    uint32_t entry_header = read_at<uint32_t>(image, p + 4, "fatbin entry");
    uint64_t size = read_at<uint64_t>(image, p + 8, "fatbin entry");
    uint32_t compressed_size = read_at<uint32_t>(image, p + 16, "fatbin entry");
    e.sm = read_at<uint32_t>(image, p + 28, "fatbin entry");
    e.flags = read_at<uint64_t>(image, p + 40, "fatbin entry");
    e.uncompressed_size = read_at<uint64_t>(image, p + 56, "fatbin entry");
    e.kind = kind == 1 ? "ptx" : kind == 2 ? "cubin" : fmt::format("kind {}", kind);
    if (entry_header < 64 || size > end - p - entry_header) break;  // not a sane entry
    e.offset = p + entry_header;
    e.size = size;
    if (e.flags & 0x8000) e.compression = "zstd";
    else if (e.flags & 0x2000) e.compression = "lz4";
    if (e.compression.empty()) {
      e.uncompressed_size = size;
      auto bytes = image.subspan(e.offset, size);
      try {
        if (kind == 2 && is_cubin(bytes)) e.cubin = parse_cubin(bytes);
        else if (kind == 1) e.ptx = parse_ptx(as_text(bytes));
      } catch (const std::exception&) {
        // An unreadable entry stays listed without its contents.
      }
    } else if (compressed_size != 0) {
      e.size = compressed_size;
    }
    info.entries.push_back(std::move(e));
    p += entry_header + size;
  }
  return info;
}

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

uint32_t ptx_type_size(std::string_view type) {
  // "u32", "f64", "b8" (no dot)
  if (type.size() < 2) return 0;
  std::string_view bits = type.substr(1);
  if (bits == "8") return 1;
  if (bits == "16") return 2;
  if (bits == "32") return 4;
  if (bits == "64") return 8;
  return 0;
}

// Strips // and /* */ comments so the scanner sees directives only.
std::string strip_comments(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      while (i < text.size() && text[i] != '\n') ++i;
      out.push_back('\n');
    } else if (text[i] == '/' && i + 1 < text.size() && text[i + 1] == '*') {
      size_t end = text.find("*/", i + 2);
      i = end == std::string_view::npos ? text.size() : end + 1;
      out.push_back(' ');
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

// One ".param ..." declaration: ".param .u64 .ptr.global.align 1 name" or
// ".param .align 8 .b8 name[16]".
ImageParam parse_ptx_param(std::string_view decl) {
  ImageParam p;
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < decl.size()) {
    while (i < decl.size() && std::isspace(static_cast<unsigned char>(decl[i]))) ++i;
    size_t j = i;
    while (j < decl.size() && !std::isspace(static_cast<unsigned char>(decl[j]))) ++j;
    if (j > i) words.push_back(decl.substr(i, j - i));
    i = j;
  }
  uint32_t elem = 0;
  for (size_t w = 0; w < words.size(); ++w) {
    std::string_view word = words[w];
    if (word == ".param") continue;
    if (word == ".align" && w + 1 < words.size()) {
      p.align = static_cast<uint32_t>(std::strtoul(std::string(words[w + 1]).c_str(), nullptr, 10));
      ++w;
    } else if (word.starts_with(".ptr")) {
      p.pointer = true;
      if (size_t a = word.find(".align"); a != std::string_view::npos && w + 1 < words.size()) ++w;
    } else if (word.starts_with(".") && ptx_type_size(word.substr(1)) && elem == 0) {
      elem = ptx_type_size(word.substr(1));
      p.type = std::string(word);
    } else if (!word.starts_with(".")) {
      p.name = std::string(word);
    }
  }
  p.size = elem;
  if (auto open = p.name.find('['); open != std::string::npos) {
    uint32_t count = static_cast<uint32_t>(std::strtoul(p.name.c_str() + open + 1, nullptr, 10));
    p.type += fmt::format("[{}]", count);
    p.size = elem * count;
    p.name.resize(open);
  }
  if (p.align == 0) p.align = elem ? elem : 1;
  return p;
}

}  // namespace

PtxInfo parse_ptx(std::string_view raw) {
  std::string text = strip_comments(raw);
  std::string_view t(text);
  PtxInfo info;
  auto directive_value = [&](std::string_view directive) -> std::string_view {
    size_t pos = t.find(directive);
    while (pos != std::string_view::npos) {
      bool starts_line = pos == 0 || std::isspace(static_cast<unsigned char>(t[pos - 1]));
      size_t after = pos + directive.size();
      if (starts_line && after < t.size() && std::isspace(static_cast<unsigned char>(t[after]))) {
        size_t eol = t.find('\n', after);
        return trim(t.substr(after, eol == std::string_view::npos ? t.npos : eol - after));
      }
      pos = t.find(directive, pos + 1);
    }
    return {};
  };
  info.version = std::string(directive_value(".version"));
  info.target = std::string(directive_value(".target"));
  if (info.version.empty() || info.target.empty())
    fail("not PTX: no .version and .target directives");
  if (size_t sm = info.target.find("sm_"); sm != std::string::npos)
    info.sm = static_cast<uint32_t>(std::strtoul(info.target.c_str() + sm + 3, nullptr, 10));

  size_t pos = 0;
  while ((pos = t.find(".entry", pos)) != std::string_view::npos) {
    size_t after = pos + 6;
    pos = after;
    if (after >= t.size() || !std::isspace(static_cast<unsigned char>(t[after]))) continue;
    size_t name_begin = t.find_first_not_of(" \t\r\n", after);
    if (name_begin == std::string_view::npos) break;
    size_t name_end = t.find_first_of(" \t\r\n(", name_begin);
    if (name_end == std::string_view::npos) break;
    ImageKernel k;
    k.name = std::string(t.substr(name_begin, name_end - name_begin));
    size_t open = t.find_first_not_of(" \t\r\n", name_end);
    if (open != std::string_view::npos && t[open] == '(') {
      size_t close = t.find(')', open);
      if (close == std::string_view::npos) break;
      std::string_view list = t.substr(open + 1, close - open - 1);
      uint32_t offset = 0, ordinal = 0;
      size_t start = 0;
      while (start < list.size()) {
        size_t comma = list.find(',', start);
        std::string_view decl = trim(list.substr(start, comma == list.npos ? list.npos : comma - start));
        start = comma == list.npos ? list.size() : comma + 1;
        if (decl.empty()) continue;
        ImageParam p = parse_ptx_param(decl);
        p.ordinal = ordinal++;
        offset = (offset + p.align - 1) / p.align * p.align;
        p.offset = offset;
        offset += p.size;
        k.params.push_back(std::move(p));
      }
      k.param_bytes = offset;
      k.has_params = true;
      pos = close;
    }
    info.kernels.push_back(std::move(k));
  }
  return info;
}

bool cubin_runs_on(uint32_t image_sm, uint32_t device_sm) {
  return image_sm / 10 == device_sm / 10 && image_sm % 10 <= device_sm % 10;
}

bool ptx_runs_on(uint32_t ptx_sm, uint32_t device_sm) { return ptx_sm <= device_sm; }

std::string describe_image_targets(std::span<const std::byte> image) {
  if (is_cubin(image)) return fmt::format("sm_{} cubin", cubin_sm(image));
  if (is_fatbin(image)) {
    FatbinInfo f = parse_fatbin(image);
    std::string out;
    for (const auto& e : f.entries) {
      if (!out.empty()) out += ", ";
      if (e.kind == "ptx") out += fmt::format("compute_{} PTX", e.sm);
      else out += fmt::format("sm_{} {}", e.sm, e.kind);
    }
    return out.empty() ? "no entries" : out;
  }
  if (is_ptx(image)) {
    PtxInfo p = parse_ptx(as_text(image));
    return fmt::format("PTX for {}", p.target);
  }
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
      uint32_t sm = cubin_sm(image);
      if (cubin_runs_on(sm, device_sm)) return {};
      return fmt::format("the cubin is built for sm_{} but {} is sm_{}; {}", sm, device, device_sm,
                         fix);
    }
    if (is_fatbin(image)) {
      FatbinInfo f = parse_fatbin(image);
      for (const auto& e : f.entries) {
        if (e.kind == "cubin" && cubin_runs_on(e.sm, device_sm)) return {};
        if (e.kind == "ptx" && ptx_runs_on(e.sm, device_sm)) return {};
      }
      return fmt::format("the fatbin holds {} but {} is sm_{}; none of it runs there; {}",
                         describe_image_targets(image), device, device_sm, fix);
    }
    if (is_ptx(image)) {
      PtxInfo p = parse_ptx(as_text(image));
      if (p.sm == 0 || ptx_runs_on(p.sm, device_sm)) return {};
      return fmt::format("the PTX targets {} but {} is sm_{}; PTX runs only on its target or newer; {}",
                         p.target, device, device_sm, fix);
    }
  } catch (const std::exception&) {
    return {};  // unreadable: let the driver judge it
  }
  return {};
}

std::vector<std::string> image_kernel_names(std::span<const std::byte> image) {
  std::vector<std::string> names;
  auto add = [&](const std::vector<ImageKernel>& kernels) {
    for (const auto& k : kernels)
      if (std::find(names.begin(), names.end(), k.name) == names.end()) names.push_back(k.name);
  };
  try {
    if (is_cubin(image)) add(parse_cubin(image).kernels);
    else if (is_fatbin(image)) {
      for (const auto& e : parse_fatbin(image).entries) {
        if (e.cubin) add(e.cubin->kernels);
        if (e.ptx) add(e.ptx->kernels);
      }
    } else if (is_ptx(image)) add(parse_ptx(as_text(image)).kernels);
  } catch (const std::exception&) {
  }
  return names;
}

std::optional<ImageKernel> image_kernel(std::span<const std::byte> image, std::string_view name) {
  auto find = [&](const std::vector<ImageKernel>& kernels) -> std::optional<ImageKernel> {
    for (const auto& k : kernels)
      if (k.name == name && k.has_params) return k;
    return std::nullopt;
  };
  try {
    if (is_cubin(image)) return find(parse_cubin(image).kernels);
    if (is_fatbin(image)) {
      for (const auto& e : parse_fatbin(image).entries) {
        if (e.cubin)
          if (auto k = find(e.cubin->kernels)) return k;
        if (e.ptx)
          if (auto k = find(e.ptx->kernels)) return k;
      }
      return std::nullopt;
    }
    if (is_ptx(image)) return find(parse_ptx(as_text(image)).kernels);
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

}  // namespace lrrt::rt::cuda

namespace lrrt::rt {
namespace {

using nlohmann::json;
using namespace lrrt::rt::cuda;

json kernels_json(const std::vector<ImageKernel>& kernels) {
  json out = json::array();
  for (const auto& k : kernels) {
    json j{{"name", k.name}};
    if (k.has_params) {
      j["param_bytes"] = k.param_bytes;
      json params = json::array();
      for (const auto& p : k.params) {
        json pj{{"index", p.ordinal}, {"offset", p.offset}, {"size", p.size}};
        if (!p.type.empty()) pj["type"] = p.type;
        if (!p.name.empty()) pj["name"] = p.name;
        if (p.pointer) pj["pointer"] = true;
        params.push_back(std::move(pj));
      }
      j["params"] = std::move(params);
    }
    if (k.registers >= 0) j["registers"] = k.registers;
    if (k.frame_bytes >= 0) j["frame_bytes"] = k.frame_bytes;
    if (k.static_shared_bytes >= 0) j["static_shared_bytes"] = k.static_shared_bytes;
    out.push_back(std::move(j));
  }
  return out;
}

json cubin_json(const CubinInfo& c) {
  return json{{"format", "cubin"},
              {"arch", fmt::format("sm_{}", c.sm)},
              {"elf_abi_version", c.elf_abi_version},
              {"e_flags", fmt::format("{:#x}", c.e_flags)},
              {"kernels", kernels_json(c.kernels)}};
}

json ptx_json(const PtxInfo& p) {
  return json{{"format", "ptx"},
              {"arch", p.sm ? fmt::format("compute_{}", p.sm) : p.target},
              {"ptx_version", p.version},
              {"target", p.target},
              {"kernels", kernels_json(p.kernels)}};
}

}  // namespace

json inspect_cuda_image(std::span<const std::byte> image) {
  if (is_cubin(image)) return cubin_json(parse_cubin(image));
  if (is_fatbin(image)) {
    FatbinInfo f = parse_fatbin(image);
    json entries = json::array();
    std::vector<std::string> names;
    for (const auto& e : f.entries) {
      json j{{"kind", e.kind},
             {"arch", fmt::format("{}_{}", e.kind == "ptx" ? "compute" : "sm", e.sm)},
             {"offset", e.offset},
             {"size", e.size},
             {"compressed", !e.compression.empty()}};
      if (!e.compression.empty()) {
        j["compression"] = e.compression;
        j["uncompressed_size"] = e.uncompressed_size;
      }
      const std::vector<ImageKernel>* kernels = nullptr;
      if (e.cubin) {
        j["elf_abi_version"] = e.cubin->elf_abi_version;
        kernels = &e.cubin->kernels;
      } else if (e.ptx) {
        j["ptx_version"] = e.ptx->version;
        kernels = &e.ptx->kernels;
      }
      if (kernels) {
        j["kernels"] = kernels_json(*kernels);
        for (const auto& k : *kernels)
          if (std::find(names.begin(), names.end(), k.name) == names.end()) names.push_back(k.name);
      }
      entries.push_back(std::move(j));
    }
    return json{{"format", "fatbin"},
                {"fatbin_version", f.version},
                {"targets", describe_image_targets(image)},
                {"entries", std::move(entries)},
                {"kernel_names", names}};
  }
  if (is_ptx(image)) return ptx_json(parse_ptx(as_text(image)));
  throw std::runtime_error("not a CUDA code object: neither a cubin, a fatbin nor PTX text");
}

}  // namespace lrrt::rt
