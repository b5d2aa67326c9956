#include "lrrt/formats/amdgpu.hpp"

#include <algorithm>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "lrrt/formats/elf.hpp"
#include "magic.hpp"

#if defined(LRRT_FORMATS_HAVE_MSGPACK)
#include <msgpack.hpp>
#endif

namespace lrrt::formats {

std::string_view arg_kind_name(ArgKind kind) {
  switch (kind) {
    case ArgKind::ByValue: return "by_value";
    case ArgKind::GlobalBuffer: return "global_buffer";
    case ArgKind::DynamicShared: return "dynamic_shared";
    case ArgKind::Hidden: return "hidden";
    case ArgKind::Other: break;
  }
  return "other";
}

std::string_view access_mode_name(AccessMode mode) {
  switch (mode) {
    case AccessMode::Read: return "read";
    case AccessMode::Write: return "write";
    case AccessMode::ReadWrite: break;
  }
  return "read_write";
}

std::string_view access_source_name(AccessSource source) {
  switch (source) {
    case AccessSource::Declared: return "declared";
    case AccessSource::ActualAccess: return "actual_access";
    case AccessSource::Access: return "access";
    case AccessSource::Ttir: return "ttir";
    case AccessSource::Default: break;
  }
  return "default";
}

namespace {
std::optional<AccessMode> metadata_access_mode(std::string_view word) {
  if (word == "read_only") return AccessMode::Read;
  if (word == "write_only") return AccessMode::Write;
  if (word == "read_write") return AccessMode::ReadWrite;
  return std::nullopt;  // absent or a word lrrt does not know: no proof
}
}  // namespace

DerivedAccess derived_access(const KernelArgInfo& arg) {
  if (arg.kind != ArgKind::GlobalBuffer) return {};
  if (auto m = metadata_access_mode(arg.actual_access)) return {*m, AccessSource::ActualAccess};
  if (auto m = metadata_access_mode(arg.access)) return {*m, AccessSource::Access};
  return {};
}

namespace amdgpu {
namespace {

constexpr uint32_t kNtAmdgpuMetadata = 32;
constexpr uint8_t kOsAbiAmdgpuHsa = 64;

[[noreturn]] void bad(const std::string& what) {
  throw FormatError("invalid AMDGPU code object: " + what);
}

#if defined(LRRT_FORMATS_HAVE_MSGPACK)
constexpr size_t kMaxMetadataDepth = 32;  // the metadata nests 4 deep

// msgpack helpers.
using Obj = msgpack::object;
std::string_view as_str(const Obj& o) {
  if (o.type == msgpack::type::STR) return {o.via.str.ptr, o.via.str.size};
  if (o.type == msgpack::type::BIN) return {o.via.bin.ptr, o.via.bin.size};
  return {};
}
std::optional<uint64_t> as_uint(const Obj& o) {
  if (o.type == msgpack::type::POSITIVE_INTEGER) return o.via.u64;
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
  if (!u) bad(fmt::format("metadata field {} is not a non-negative integer", key));
  if (*u > UINT32_MAX) bad(fmt::format("metadata field {} = {} does not fit in 32 bits", key, *u));
  return uint32_t(*u);
}
bool get_bool(const Obj& map, std::string_view key) {
  const Obj* v = map_get(map, key);
  if (!v) return false;
  if (v->type != msgpack::type::BOOLEAN) bad(fmt::format("metadata field {} is not a boolean", key));
  return v->via.boolean;
}
std::string get_str(const Obj& map, std::string_view key) {
  const Obj* v = map_get(map, key);
  return v ? std::string(as_str(*v)) : std::string();
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
  info.uses_dynamic_stack = get_bool(k, ".uses_dynamic_stack");
  info.max_workgroup_size = get_u32(k, ".max_flat_workgroup_size");
  info.wavefront_size = get_u32(k, ".wavefront_size");
  info.sgpr_count = get_u32(k, ".sgpr_count");
  info.vgpr_count = get_u32(k, ".vgpr_count");
  info.language = get_str(k, ".language");
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
      arg.access = get_str(a, ".access");
      arg.actual_access = get_str(a, ".actual_access");
      if (uint64_t(arg.offset) + arg.size > info.kernarg_size)
        bad(fmt::format("{}: argument {} ({} bytes at offset {}) exceeds the {}-byte kernarg segment",
                        info.name, i, arg.size, arg.offset, info.kernarg_size));
      info.args.push_back(std::move(arg));
    }
  }
  return info;
}

void read_metadata(std::span<const std::byte> note, CodeObject& co) {
  // Every array element and map entry takes at least one byte, every string
  // fits in the note: limits from the note's size keep a 5-byte header that
  // claims 2^32 elements from allocating 2^32 objects.
  const size_t n = note.size();
  const msgpack::unpack_limit limit(n, n / 2, n, n, n, kMaxMetadataDepth);
  msgpack::object_handle oh;
  try {
    oh = msgpack::unpack(reinterpret_cast<const char*>(note.data()), note.size(), nullptr, nullptr, limit);
  } catch (const std::exception& e) {
    bad(std::string("metadata note is not valid msgpack: ") + e.what());
  }
  const Obj& root = oh.get();
  if (root.type != msgpack::type::MAP) bad("metadata note is not a msgpack map");
  if (const Obj* v = map_get(root, "amdhsa.version"); v && v->type == msgpack::type::ARRAY)
    for (uint32_t i = 0; i < v->via.array.size; ++i)
      if (auto u = as_uint(v->via.array.ptr[i])) co.metadata_version.push_back(*u);
  co.target = get_str(root, "amdhsa.target");
  if (const Obj* p = map_get(root, "amdhsa.printf")) {
    if (p->type != msgpack::type::ARRAY) bad("amdhsa.printf is not an array");
    for (uint32_t i = 0; i < p->via.array.size; ++i) {
      const Obj& e = p->via.array.ptr[i];
      if (e.type != msgpack::type::STR) bad(fmt::format("amdhsa.printf entry {} is not a string", i));
      co.printf_formats.emplace_back(as_str(e));
    }
  }
  const Obj* kernels = map_get(root, "amdhsa.kernels");
  if (kernels) {
    if (kernels->type != msgpack::type::ARRAY) bad("amdhsa.kernels is not an array");
    for (uint32_t i = 0; i < kernels->via.array.size; ++i)
      co.kernels.push_back(parse_kernel(kernels->via.array.ptr[i]));
  }
}
#else
void read_metadata(std::span<const std::byte>, CodeObject&) {
  throw FormatError(
      "this lrrt was built without msgpack (libmsgpack-dev), so it cannot read the AMDGPU "
      "metadata note");
}
#endif

}  // namespace

bool can_read_metadata() {
#if defined(LRRT_FORMATS_HAVE_MSGPACK)
  return true;
#else
  return false;
#endif
}

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

std::string processor_from_e_flags(uint32_t flags) {
  struct M {
    uint32_t mach;
    const char* name;
  };
  static constexpr M table[] = {
      {0x2f, "gfx906"},  {0x30, "gfx908"},  {0x3f, "gfx90a"},  {0x40, "gfx940"},
      {0x4b, "gfx941"},  {0x4c, "gfx942"},  {0x36, "gfx1030"}, {0x41, "gfx1100"},
      {0x42, "gfx1101"}, {0x43, "gfx1102"}, {0x48, "gfx1200"}, {0x4e, "gfx1201"}};
  for (const auto& m : table)
    if ((flags & 0xff) == m.mach) return m.name;
  return fmt::format("gfx?(mach 0x{:x})", flags & 0xff);
}

ArgKind arg_kind_from_value_kind(std::string_view vk) {
  if (vk == "by_value") return ArgKind::ByValue;
  if (vk == "global_buffer") return ArgKind::GlobalBuffer;
  if (vk == "dynamic_shared_pointer") return ArgKind::DynamicShared;
  if (vk.rfind("hidden_", 0) == 0) return ArgKind::Hidden;
  return ArgKind::Other;
}

CodeObject parse_code_object(std::span<const std::byte> image) {
  elf::File file(image, "AMDGPU code object");
  const Elf64_Ehdr& eh = file.header();
  if (eh.e_machine != kEmAmdgpu)
    bad(fmt::format("ELF machine {} is not AMDGPU ({})", eh.e_machine, kEmAmdgpu));

  std::optional<std::span<const std::byte>> metadata;
  for (const auto& note : file.notes())
    if (note.owner == "AMDGPU" && note.type == kNtAmdgpuMetadata) {
      metadata = note.desc;
      break;
    }
  if (!metadata) bad("no NT_AMDGPU_METADATA note (code object v2/v3 or stripped)");

  CodeObject co;
  co.e_flags = eh.e_flags;
  read_metadata(*metadata, co);
  // The ELF header says which code object version (v6 keeps metadata 1.2).
  if (eh.e_ident[EI_OSABI] == kOsAbiAmdgpuHsa && eh.e_ident[EI_ABIVERSION] >= 2)
    co.code_object_version = uint32_t(eh.e_ident[EI_ABIVERSION]) + 2;  // 2 = v4, 3 = v5, 4 = v6
  else if (co.metadata_version.size() >= 2 && co.metadata_version[0] == 1)
    co.code_object_version = uint32_t(co.metadata_version[1]) + 3;  // [1,1] = v4
  if (co.target.empty()) co.target = "amdgcn-amd-amdhsa--" + processor_from_e_flags(eh.e_flags);
  co.target_id = parse_target_id(co.target);
  return co;
}

uint32_t hidden_args_offset(const KernelInfo& info) {
  uint32_t first = info.kernarg_size;
  for (const auto& a : info.args)
    if (a.kind == ArgKind::Hidden && a.offset < first) first = a.offset;
  return first;
}

uint32_t max_explicit_args_size(const KernelInfo& info) {
  uint64_t need = info.explicit_kernarg_size();
  uint64_t align = info.kernarg_align ? info.kernarg_align : 8;
  uint64_t rounded = (need + align - 1) / align * align;
  return static_cast<uint32_t>(std::max<uint64_t>(hidden_args_offset(info), rounded));
}

bool read_hidden_arg(const KernelInfo& info, std::span<const std::byte> k,
                     std::string_view value_kind, uint64_t* value) {
  for (const auto& a : info.args) {
    if (a.value_kind != value_kind) continue;
    if (a.size > 8 || a.offset > k.size() || a.size > k.size() - a.offset) return false;
    uint64_t v = 0;
    std::memcpy(&v, k.data() + a.offset, a.size);
    *value = v;
    return true;
  }
  return false;
}

}  // namespace amdgpu
}  // namespace lrrt::formats
