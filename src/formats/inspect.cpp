#include "lrrt/formats/inspect.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "lrrt/formats/amdgpu.hpp"
#include "lrrt/formats/container.hpp"
#include "lrrt/formats/error.hpp"
#include "lrrt/formats/host_library.hpp"
#include "lrrt/formats/nvidia.hpp"

namespace lrrt::formats {
namespace {

std::string_view as_text(std::span<const std::byte> bytes) {
  return std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

std::string hex(uint64_t value) { return fmt::format("{:#x}", value); }

// Everything a KernelInfo records (AMDGPU metadata, host kernel records).
InspectedKernel from_kernel_info(const KernelInfo& k, bool amdgpu) {
  InspectedKernel out;
  out.name = k.name;
  out.symbol = k.symbol;
  out.kernarg_size = k.kernarg_size;
  out.explicit_kernarg_size = k.explicit_kernarg_size();
  out.kernarg_align = k.kernarg_align;
  out.group_segment_size = k.group_segment_size;
  if (amdgpu) {
    out.private_segment_size = k.private_segment_size;
    out.uses_dynamic_stack = k.uses_dynamic_stack;
    out.max_workgroup_size = k.max_workgroup_size;
    out.wavefront_size = k.wavefront_size;
    out.sgpr_count = k.sgpr_count;
    out.vgpr_count = k.vgpr_count;
  }
  out.has_arg_layout = k.has_arg_layout;
  out.args = k.args;
  return out;
}

// A cubin or PTX kernel: the parameter bank is the kernarg segment.
InspectedKernel from_image_kernel(const nvidia::ImageKernel& k) {
  InspectedKernel out;
  out.name = k.name;
  out.symbol = k.name;
  if (k.has_params) {
    out.kernarg_size = k.param_bytes;
    uint32_t explicit_end = 0, align = 1;
    for (const auto& p : k.params) {
      explicit_end = std::max(explicit_end, p.offset + p.size);
      align = std::max(align, p.align);
    }
    out.explicit_kernarg_size = explicit_end;
    // PTX records each parameter's alignment; a cubin does not.
    bool aligns_recorded = std::any_of(k.params.begin(), k.params.end(),
                                       [](const nvidia::ImageParam& p) { return p.align != 0; });
    if (aligns_recorded) out.kernarg_align = align;
  }
  if (k.static_shared_bytes >= 0) out.group_segment_size = static_cast<uint32_t>(k.static_shared_bytes);
  if (k.frame_bytes >= 0) out.private_segment_size = static_cast<uint32_t>(k.frame_bytes);
  if (k.registers >= 0) out.registers = static_cast<uint32_t>(k.registers);
  out.has_arg_layout = k.has_params;
  for (const auto& p : k.params) {
    KernelArgInfo a;
    a.offset = p.offset;
    a.size = p.size;
    // Only PTX's `.ptr` says "pointer"; otherwise the image does not tell.
    a.kind = p.pointer ? ArgKind::GlobalBuffer : ArgKind::Other;
    a.name = p.name;
    a.type_name = p.type;
    if (p.pointer) a.address_space = "global";
    out.args.push_back(std::move(a));
  }
  return out;
}

void inspect_hsaco(std::span<const std::byte> bytes, InspectedTarget& t) {
  auto co = amdgpu::parse_code_object(bytes);
  std::string triple = co.target;
  if (auto dd = co.target.find("--"); dd != std::string::npos) {
    triple = co.target.substr(0, dd);
    t.target = co.target.substr(dd + 2);
  } else {
    t.target = co.target;
    triple.clear();
  }
  if (!triple.empty()) t.facts.emplace_back("triple", triple);
  t.facts.emplace_back("code_object_version", uint64_t(co.code_object_version));
  std::string version;
  for (auto v : co.metadata_version) version += (version.empty() ? "" : ".") + std::to_string(v);
  if (!version.empty()) t.facts.emplace_back("metadata_version", version);
  t.facts.emplace_back("e_flags", hex(co.e_flags));
  for (const auto& k : co.kernels) t.kernels.push_back(from_kernel_info(k, true));
}

void inspect_cubin(std::span<const std::byte> bytes, InspectedTarget& t) {
  auto c = nvidia::parse_cubin(bytes);
  t.target = nvidia::arch_name(c.sm, c.variant, false);
  t.facts.emplace_back("elf_abi_version", uint64_t(c.elf_abi_version));
  t.facts.emplace_back("e_flags", hex(c.e_flags));
  for (const auto& k : c.kernels) t.kernels.push_back(from_image_kernel(k));
}

void inspect_ptx(std::span<const std::byte> bytes, InspectedTarget& t) {
  auto p = nvidia::parse_ptx(as_text(bytes));
  t.target = p.sm ? nvidia::arch_name(p.sm, p.variant, true) : p.target;
  t.facts.emplace_back("ptx_version", p.version);
  t.facts.emplace_back("ptx_target", p.target);
  for (const auto& k : p.kernels) t.kernels.push_back(from_image_kernel(k));
}

void inspect_host_library(std::span<const std::byte> bytes, InspectedTarget& t) {
  auto lib = host::read_host_library(bytes);
  t.target = lib.machine;
  if (lib.has_records) {
    t.facts.emplace_back("kernel_record_version", uint64_t(LRRT_HOST_KERNEL_RECORD_VERSION));
  } else {
    t.note = "the library exports " LRRT_HOST_LIBRARY_QUERY_SYMBOL
             " but no kernel records (built before records existed, or by hand): its kernels "
             "are known only once it is loaded (lrrt run); inspect runs no library code";
  }
  for (const auto& k : lib.kernels) t.kernels.push_back(from_kernel_info(k, false));
}

// Where an entry lies and what it is, before anything is read from it.
InspectedTarget entry_header(const CodeObjectEntry& e) {
  InspectedTarget t;
  t.format = e.format;
  t.entry = e.id;
  t.offset = e.offset;
  t.size = e.size;
  t.target = e.target;
  return t;
}

InspectedTarget inspect_entry(CodeObjectEntry& e) {
  InspectedTarget t = entry_header(e);
  if (!e.compression.empty()) {
    t.facts.emplace_back("compression", e.compression);
    t.facts.emplace_back("uncompressed_size", e.uncompressed_size);
  }
  if (!e.section.empty()) {
    t.facts.emplace_back("section", e.section);
    t.facts.emplace_back(e.container_kind() == "fatbin" ? "fatbin" : "bundle", uint64_t(e.group));
  }
  decode_entry(e);
  if (e.bytes.empty()) {
    t.note = "the entry is empty";
    return t;
  }
  switch (e.format) {
    case Format::Hsaco: inspect_hsaco(e.bytes, t); break;
    case Format::Cubin: inspect_cubin(e.bytes, t); break;
    case Format::Ptx: inspect_ptx(e.bytes, t); break;
    case Format::HostSharedObject: inspect_host_library(e.bytes, t); break;
    default:
      t.note = fmt::format("the entry is {}, which lrrt does not read", describe_format(e.bytes));
  }
  // The container's name for the target ("sm_90a" from the fatbin's flags)
  // stays when the code agrees; a cubin that says otherwise is reported.
  if (!e.target.empty() && t.target != e.target && e.format != Format::Hsaco) {
    t.facts.emplace_back("container_target", e.target);
  }
  return t;
}

}  // namespace

// More kernels than any real fat library holds (rocBLAS: tens of thousands
// per architecture); beyond it a small file would make a huge listing.
constexpr size_t kMaxInspectedKernels = size_t(1) << 20;

bool target_matches(std::string_view target, std::string_view filter) {
  if (filter.empty() || target == filter) return true;
  // AMD target ids add features after a colon: "gfx90a" takes them all.
  return target.size() > filter.size() && target.substr(0, filter.size()) == filter && target[filter.size()] == ':';
}

Inspection inspect_code_object(std::span<const std::byte> image, const InspectFilter& filter,
                               const std::function<void(InspectedTarget&&)>& each) {
  Inspection out;
  out.format = file_format(image);
  out.size = image.size();
  if (out.format == Format::Unknown || out.format == Format::OtherElf)
    throw FormatError(fmt::format("{}; lrrt reads HSACO, clang offload bundles (compressed or not), cubin, fatbin, "
                                  "PTX, host kernel libraries, and host executables and libraries carrying GPU code",
                                  describe_format(image)));
  // A container's entries may not overlap, and identical ones are read once:
  // 4096 entries naming one image of 100k kernels once made 4x10^8 objects.
  // Offsets compare within one bundle or fatbin (a compressed bundle's
  // entries lie in its decompressed bytes).
  std::vector<CodeObjectEntry> entries = code_object_entries(image);
  if (out.format == Format::HostSharedObject && entries.size() == 1 && entries[0].id.empty())
    out.format = Format::HostSharedObject;  // a host kernel library, or the reader says why not
  std::vector<size_t> order(entries.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto key = [&](size_t i) { return std::tie(entries[i].group, entries[i].offset, entries[i].size); };
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
  for (size_t k = 1; k < order.size(); ++k) {
    const CodeObjectEntry &prev = entries[order[k - 1]], &e = entries[order[k]];
    if (prev.group != e.group) continue;
    const bool same = prev.offset == e.offset && prev.size == e.size;
    if (!same && e.size && prev.size && e.offset < prev.offset + prev.size)
      throw FormatError(fmt::format("{} entries {} and {} overlap (bytes {}..{} and {}..{}): not a container a tool wrote",
                                    format_name(out.format), prev.id, e.id, prev.offset, prev.offset + prev.size,
                                    e.offset, e.offset + e.size));
  }
  std::map<std::tuple<uint32_t, uint64_t, uint64_t>, std::string> first_of;  // (group, offset, size) -> entry id
  size_t kernels = 0;
  auto emit = [&](InspectedTarget&& t) {
    if (each) each(std::move(t));
    else out.targets.push_back(std::move(t));
  };
  // A container names its entries' targets, so the target filters run
  // before an entry is decoded; a plain file's target is read from it.
  auto passes = [&](Format format, const std::string& target) {
    return target_matches(target, filter.target) && (!filter.runs_on || runs_on(format, target, *filter.runs_on));
  };
  for (auto& e : entries) {
    if (!e.target.empty() && !passes(e.format, e.target)) continue;
    if (e.size) {
      auto [it, fresh] = first_of.try_emplace({e.group, e.offset, e.size}, e.id);
      if (!fresh) {
        if (filter.kernel) continue;  // it lists no kernels
        InspectedTarget t = entry_header(e);
        t.note = fmt::format("the same bytes as entry {}: its kernels are listed there", it->second);
        emit(std::move(t));
        continue;
      }
    }
    try {
      InspectedTarget t = inspect_entry(e);
      e.storage.reset();  // decoded bytes are not needed once read
      if (e.target.empty() && !passes(t.format, t.target)) continue;
      if (filter.kernel) {
        std::erase_if(t.kernels, [&](const InspectedKernel& k) { return !filter.kernel(k.name); });
        if (t.kernels.empty()) continue;
      }
      kernels += t.kernels.size();
      if (kernels > kMaxInspectedKernels)
        throw FormatError(fmt::format("lists more than {} kernels; lrrt inspect stops there", kMaxInspectedKernels));
      emit(std::move(t));
    } catch (const FormatError& error) {
      if (e.id.empty()) throw;
      throw FormatError(fmt::format("{} ({} bytes at offset {}): {}", e.where(), e.size, e.offset, error.what()));
    }
  }
  return out;
}

}  // namespace lrrt::formats
