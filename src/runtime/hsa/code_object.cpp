#include "code_object.hpp"

#include <elf.h>

#include <cstring>
#include <optional>

#include <msgpack.hpp>

#include "error.hpp"

namespace lrrt::rt::amdgpu {
namespace {

constexpr uint32_t kNtAmdgpuMetadata = 32;
#ifndef EM_AMDGPU
constexpr uint16_t EM_AMDGPU = 224;
#endif

[[noreturn]] void bad(const std::string& what) {
  throw Error(LR_ERROR_INVALID_IMAGE, "invalid AMDGPU code object: " + what);
}

// Bounds-checked reads from the image.
class Reader {
 public:
  explicit Reader(std::span<const std::byte> b) : b_(b) {}
  template <typename T>
  T read(uint64_t offset, const char* what) const {
    if (offset > b_.size() || b_.size() - offset < sizeof(T))
      bad(fmt::format("{} at offset {} lies outside the {}-byte image", what, offset,
                      b_.size()));
    T v;
    std::memcpy(&v, b_.data() + offset, sizeof(T));
    return v;
  }
  std::span<const std::byte> bytes(uint64_t offset, uint64_t size, const char* what) const {
    if (offset > b_.size() || b_.size() - offset < size)
      bad(fmt::format("{} ({} bytes at offset {}) lies outside the {}-byte image", what,
                      size, offset, b_.size()));
    return b_.subspan(offset, size);
  }

 private:
  std::span<const std::byte> b_;
};

uint64_t align4(uint64_t v) { return (v + 3) & ~uint64_t(3); }

// Finds the NT_AMDGPU_METADATA payload in PT_NOTE segments, else SHT_NOTE
// sections.
std::optional<std::span<const std::byte>> find_metadata(const Reader& r,
                                                        std::span<const std::byte> notes) {
  Reader n(notes);
  uint64_t pos = 0;
  while (pos + 12 <= notes.size()) {
    uint32_t namesz = n.read<uint32_t>(pos, "note header");
    uint32_t descsz = n.read<uint32_t>(pos + 4, "note header");
    uint32_t type = n.read<uint32_t>(pos + 8, "note header");
    uint64_t name_off = pos + 12;
    uint64_t desc_off = name_off + align4(namesz);
    auto name = n.bytes(name_off, namesz, "note name");
    auto desc = n.bytes(desc_off, descsz, "note descriptor");
    std::string_view owner(reinterpret_cast<const char*>(name.data()), name.size());
    while (!owner.empty() && owner.back() == '\0') owner.remove_suffix(1);
    if (owner == "AMDGPU" && type == kNtAmdgpuMetadata) return desc;
    pos = desc_off + align4(descsz);
  }
  (void)r;
  return std::nullopt;
}

// msgpack helpers.
using Obj = msgpack::object;
std::string_view as_str(const Obj& o) {
  if (o.type == msgpack::type::STR) return {o.via.str.ptr, o.via.str.size};
  if (o.type == msgpack::type::BIN) return {o.via.bin.ptr, o.via.bin.size};
  return {};
}
std::optional<uint64_t> as_uint(const Obj& o) {
  if (o.type == msgpack::type::POSITIVE_INTEGER) return o.via.u64;
  if (o.type == msgpack::type::NEGATIVE_INTEGER) return uint64_t(o.via.i64);
  return std::nullopt;
}
const Obj* map_get(const Obj& map, std::string_view key) {
  if (map.type != msgpack::type::MAP) return nullptr;
  for (uint32_t i = 0; i < map.via.map.size; ++i)
    if (as_str(map.via.map.ptr[i].key) == key) return &map.via.map.ptr[i].val;
  return nullptr;
}
uint32_t get_u32(const Obj& map, std::string_view key, uint32_t fallback = 0) {
  const Obj* v = map_get(map, key);
  if (!v) return fallback;
  auto u = as_uint(*v);
  if (!u) bad(fmt::format("metadata field {} is not an integer", key));
  return uint32_t(*u);
}
std::string get_str(const Obj& map, std::string_view key) {
  const Obj* v = map_get(map, key);
  return v ? std::string(as_str(*v)) : std::string();
}

std::string processor_from_eflags(uint32_t flags) {
  struct M { uint32_t mach; const char* name; };
  static constexpr M table[] = {
      {0x2f, "gfx906"},  {0x30, "gfx908"},  {0x3f, "gfx90a"},  {0x40, "gfx940"},
      {0x4b, "gfx941"},  {0x4c, "gfx942"},  {0x36, "gfx1030"}, {0x41, "gfx1100"},
      {0x42, "gfx1101"}, {0x43, "gfx1102"}, {0x48, "gfx1200"}, {0x4e, "gfx1201"}};
  for (const auto& m : table)
    if ((flags & 0xff) == m.mach) return m.name;
  return fmt::format("gfx?(mach 0x{:x})", flags & 0xff);
}

KernelInfo parse_kernel(const Obj& k) {
  if (k.type != msgpack::type::MAP) bad("amdhsa.kernels entry is not a map");
  KernelInfo info;
  info.name = get_str(k, ".name");
  info.symbol = get_str(k, ".symbol");
  if (info.name.empty()) bad("a kernel in amdhsa.kernels has no .name");
  info.kernarg_size = get_u32(k, ".kernarg_segment_size");
  info.kernarg_align = get_u32(k, ".kernarg_segment_align", 8);
  info.group_segment_size = get_u32(k, ".group_segment_fixed_size");
  info.private_segment_size = get_u32(k, ".private_segment_fixed_size");
  info.max_workgroup_size = get_u32(k, ".max_flat_workgroup_size");
  info.wavefront_size = get_u32(k, ".wavefront_size");
  info.sgpr_count = get_u32(k, ".sgpr_count");
  info.vgpr_count = get_u32(k, ".vgpr_count");
  info.has_arg_layout = true;
  if (const Obj* args = map_get(k, ".args")) {
    if (args->type != msgpack::type::ARRAY) bad(info.name + ": .args is not an array");
    for (uint32_t i = 0; i < args->via.array.size; ++i) {
      const Obj& a = args->via.array.ptr[i];
      if (a.type != msgpack::type::MAP) bad(info.name + ": an .args entry is not a map");
      KernelArgInfo arg;
      arg.offset = get_u32(a, ".offset");
      arg.size = get_u32(a, ".size");
      arg.value_kind = get_str(a, ".value_kind");
      arg.kind = arg_kind_from_value_kind(arg.value_kind);
      arg.name = get_str(a, ".name");
      arg.type_name = get_str(a, ".type_name");
      arg.address_space = get_str(a, ".address_space");
      if (uint64_t(arg.offset) + arg.size > info.kernarg_size)
        bad(fmt::format("{}: argument {} ({} bytes at offset {}) exceeds the {}-byte kernarg segment",
                        info.name, i, arg.size, arg.offset, info.kernarg_size));
      info.args.push_back(std::move(arg));
    }
  }
  return info;
}

}  // namespace

std::string TargetId::str() const {
  std::string s = processor;
  if (sramecc) s += std::string(":sramecc") + sramecc;
  if (xnack) s += std::string(":xnack") + xnack;
  return s;
}

TargetId parse_target_id(std::string_view text) {
  // Strip "amdgcn-amd-amdhsa--" (the triple and empty environment).
  if (auto p = text.rfind("--"); p != std::string_view::npos) text = text.substr(p + 2);
  TargetId t;
  size_t colon = text.find(':');
  t.processor = std::string(text.substr(0, colon));
  while (colon != std::string_view::npos) {
    size_t next = text.find(':', colon + 1);
    std::string_view f = text.substr(colon + 1, next == std::string_view::npos
                                                    ? std::string_view::npos
                                                    : next - colon - 1);
    if (!f.empty()) {
      char sign = f.back();
      std::string_view feat = f.substr(0, f.size() - 1);
      if (sign == '+' || sign == '-') {
        if (feat == "xnack") t.xnack = sign;
        if (feat == "sramecc") t.sramecc = sign;
      }
    }
    colon = next;
  }
  return t;
}

bool target_compatible(const TargetId& code, const TargetId& agent) {
  if (code.processor != agent.processor) return false;
  if (code.xnack && agent.xnack && code.xnack != agent.xnack) return false;
  if (code.sramecc && agent.sramecc && code.sramecc != agent.sramecc) return false;
  return true;
}

int target_match_score(const TargetId& code, const TargetId& agent) {
  if (!target_compatible(code, agent)) return -1;
  return (code.xnack != 0) + (code.sramecc != 0);
}

lr_arg_kind_t arg_kind_from_value_kind(std::string_view vk) {
  if (vk == "by_value") return LR_ARG_BY_VALUE;
  if (vk == "global_buffer") return LR_ARG_GLOBAL_BUFFER;
  if (vk == "dynamic_shared_pointer") return LR_ARG_DYNAMIC_SHARED;
  if (vk.rfind("hidden_", 0) == 0) return LR_ARG_HIDDEN;
  return LR_ARG_OTHER;
}

CodeObjectInfo parse_code_object(std::span<const std::byte> elf) {
  Reader r(elf);
  if (elf.size() < sizeof(Elf64_Ehdr) || std::memcmp(elf.data(), ELFMAG, SELFMAG) != 0)
    bad("not an ELF file");
  auto eh = r.read<Elf64_Ehdr>(0, "ELF header");
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
    bad("not a 64-bit little-endian ELF");
  if (eh.e_machine != EM_AMDGPU)
    bad(fmt::format("ELF machine {} is not AMDGPU ({})", eh.e_machine, EM_AMDGPU));

  std::optional<std::span<const std::byte>> md;
  if (eh.e_phoff && eh.e_phnum) {
    if (eh.e_phentsize != sizeof(Elf64_Phdr)) bad("unexpected program header size");
    for (uint32_t i = 0; i < eh.e_phnum && !md; ++i) {
      auto ph = r.read<Elf64_Phdr>(eh.e_phoff + uint64_t(i) * sizeof(Elf64_Phdr),
                                   "program header");
      if (ph.p_type != PT_NOTE) continue;
      md = find_metadata(r, r.bytes(ph.p_offset, ph.p_filesz, "PT_NOTE segment"));
    }
  }
  if (!md && eh.e_shoff && eh.e_shnum) {
    if (eh.e_shentsize != sizeof(Elf64_Shdr)) bad("unexpected section header size");
    for (uint32_t i = 0; i < eh.e_shnum && !md; ++i) {
      auto sh = r.read<Elf64_Shdr>(eh.e_shoff + uint64_t(i) * sizeof(Elf64_Shdr),
                                   "section header");
      if (sh.sh_type != SHT_NOTE) continue;
      md = find_metadata(r, r.bytes(sh.sh_offset, sh.sh_size, "SHT_NOTE section"));
    }
  }

  CodeObjectInfo info;
  if (!md) bad("no NT_AMDGPU_METADATA note (code object v2/v3 or stripped)");

  msgpack::object_handle oh;
  try {
    oh = msgpack::unpack(reinterpret_cast<const char*>(md->data()), md->size());
  } catch (const std::exception& e) {
    bad(std::string("metadata note is not valid msgpack: ") + e.what());
  }
  const Obj& root = oh.get();
  if (root.type != msgpack::type::MAP) bad("metadata note is not a msgpack map");

  if (const Obj* v = map_get(root, "amdhsa.version"); v && v->type == msgpack::type::ARRAY)
    for (uint32_t i = 0; i < v->via.array.size; ++i)
      if (auto u = as_uint(v->via.array.ptr[i])) info.metadata_version.push_back(*u);
  // The ELF header says which code object version (v6 keeps metadata 1.2).
  constexpr uint8_t kOsAbiAmdgpuHsa = 64;
  if (eh.e_ident[EI_OSABI] == kOsAbiAmdgpuHsa && eh.e_ident[EI_ABIVERSION] >= 2)
    info.code_object_version = uint32_t(eh.e_ident[EI_ABIVERSION]) + 2;  // 2 = v4, 3 = v5, 4 = v6
  else if (info.metadata_version.size() >= 2 && info.metadata_version[0] == 1)
    info.code_object_version = uint32_t(info.metadata_version[1]) + 3;  // [1,1] = v4
  info.target = get_str(root, "amdhsa.target");
  if (info.target.empty()) {
    info.target = "amdgcn-amd-amdhsa--" + processor_from_eflags(eh.e_flags);
  }
  info.target_id = parse_target_id(info.target);

  const Obj* kernels = map_get(root, "amdhsa.kernels");
  if (kernels) {
    if (kernels->type != msgpack::type::ARRAY) bad("amdhsa.kernels is not an array");
    for (uint32_t i = 0; i < kernels->via.array.size; ++i)
      info.kernels.push_back(parse_kernel(kernels->via.array.ptr[i]));
  }
  return info;
}

}  // namespace lrrt::rt::amdgpu
