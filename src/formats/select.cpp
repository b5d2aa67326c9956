#include "lrrt/formats/select.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "lrrt/formats/nvidia.hpp"

namespace lrrt::formats {
namespace {

std::string list(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out.empty() ? "none" : out;
}

Selection chosen(CodeObjectEntry entry, const std::string& why) {
  decode_entry(entry);
  Selection s;
  s.description = fmt::format("{}: {}", entry.where(), why);
  s.entry = std::move(entry);
  return s;
}

// Higher is a better AMDGPU entry for the agent; -1: it does not run there.
int amdgpu_score(Format format, std::string_view target, const amdgpu::TargetId& agent) {
  if (format != Format::Hsaco) return -1;
  return amdgpu::target_match_score(amdgpu::parse_target_id(target), agent);
}

std::string amdgpu_reason(const CodeObjectEntry& e, const amdgpu::TargetId& agent) {
  const amdgpu::TargetId code = amdgpu::parse_target_id(e.target);
  if (code.str() == agent.str()) return fmt::format("the exact ISA of the device ({})", agent.str());
  return fmt::format("{} runs on the device's {} (the features it leaves open match any)", code.str(), agent.str());
}

}  // namespace

std::string describe_parts(const std::vector<Selection>& parts, std::string_view container) {
  if (parts.size() == 1) return parts[0].description;
  std::string out = fmt::format("{} {} with kernels, each from its best entry for the device: ", parts.size(), container);
  for (size_t i = 0; i < parts.size() && i < 3; ++i) out += (i ? "; " : "") + parts[i].description;
  if (parts.size() > 3) out += fmt::format("; and {} more", parts.size() - 3);
  return out;
}

std::vector<Selection> select_parts_for_amdgpu(std::span<const std::byte> image, const amdgpu::TargetId& agent) {
  Selection first = select_for_amdgpu(image, agent);  // the checks and messages for one entry
  std::vector<Selection> out;
  if (first.entry.id.empty() || first.entry.section.empty()) {
    out.push_back(std::move(first));
    return out;
  }
  // A host binary's .hip_fatbin holds one bundle per translation unit (hipcc
  // without -fgpu-rdc): the best entry of each bundle that has kernels.
  std::vector<CodeObjectEntry> entries = code_object_entries(image);
  std::map<uint32_t, std::pair<int, const CodeObjectEntry*>> best_of_group;
  for (const auto& e : entries) {
    if (e.format != Format::Hsaco) continue;
    const int score = amdgpu_score(e.format, e.target, agent);
    if (score < 0) continue;
    auto& best = best_of_group[e.group];
    if (!best.second || score > best.first) best = {score, &e};
  }
  for (const auto& [group, best] : best_of_group) {
    if (amdgpu::parse_code_object(best.second->bytes).kernels.empty()) continue;
    out.push_back(chosen(*best.second, amdgpu_reason(*best.second, agent)));
  }
  if (out.empty()) out.push_back(std::move(first));
  return out;
}

Selection select_for_amdgpu(std::span<const std::byte> image, const amdgpu::TargetId& agent) {
  std::vector<CodeObjectEntry> entries = code_object_entries(image);
  const Format format = entries.size() == 1 && entries[0].id.empty() ? entries[0].format : Format::Unknown;
  if (format == Format::Hsaco) return chosen(std::move(entries[0]), "an AMDGPU code object");
  const CodeObjectEntry* best = nullptr;
  int best_score = -1;
  std::vector<std::string> present;
  for (const auto& e : entries) {
    if (e.format != Format::Hsaco) continue;
    present.push_back(e.target);
    const int score = amdgpu_score(e.format, e.target, agent);
    if (score > best_score) {
      best_score = score;
      best = &e;
    }
  }
  if (!best) {
    if (present.empty() && entries.size() == 1 && entries[0].id.empty())
      throw FormatError(fmt::format("the hsa backend cannot load {}; it takes AMDGPU code objects (HSACO), clang "
                                    "offload bundles and host binaries with a .hip_fatbin section",
                                    describe_format(image)));
    throw FormatError(fmt::format("nothing in the file runs on {} (AMDGPU targets present: {}); rebuild with "
                                  "--offload-arch={}",
                                  agent.str(), list(present), agent.processor));
  }
  return chosen(*best, amdgpu_reason(*best, agent));
}

namespace {

struct CudaCandidate {
  const CodeObjectEntry* entry = nullptr;
  uint32_t sm = 0;
  int rank = -1;  // 4 exact arch-specific SASS, 3 exact SASS, 2 compatible SASS, 1 PTX
};

CudaCandidate rank_for_cuda(Format format, std::string_view target, uint32_t device_sm) {
  CudaCandidate c;
  if (format != Format::Cubin && format != Format::Ptx) return c;
  const bool ptx = format == Format::Ptx;
  const std::string_view digits = target.substr(std::min<size_t>(target.size(), ptx ? 8 : 3));
  size_t i = 0;
  while (i < digits.size() && digits[i] >= '0' && digits[i] <= '9' && c.sm < 100000) c.sm = c.sm * 10 + uint32_t(digits[i++] - '0');
  const char variant = i < digits.size() ? digits[i] : 0;
  if (!ptx && c.sm == device_sm && nvidia::sass_runs_on(c.sm, variant, device_sm)) c.rank = variant == 'a' ? 4 : 3;
  else if (!ptx && nvidia::sass_runs_on(c.sm, variant, device_sm)) c.rank = 2;
  else if (ptx && nvidia::ptx_runs_on(c.sm, variant, device_sm)) c.rank = 1;
  return c;
}

CudaCandidate rank_for_cuda(const CodeObjectEntry& e, uint32_t device_sm) {
  CudaCandidate c = rank_for_cuda(e.format, e.target, device_sm);
  c.entry = &e;
  return c;
}

std::string cuda_reason(const CudaCandidate& best, uint32_t device_sm) {
  const std::string& name = best.entry->target;
  if (best.rank >= 3) return fmt::format("exact SASS for the device (sm_{})", device_sm);
  if (best.rank == 2)
    return fmt::format("compatible SASS: {} code runs on sm_{} (same major version); no exact SASS", name, device_sm);
  return fmt::format("PTX {}, JIT-compiled by the driver for sm_{}; no SASS for the device", name, device_sm);
}

}  // namespace

std::vector<Selection> select_parts_for_cuda(std::span<const std::byte> image, uint32_t device_sm,
                                             std::string_view device) {
  std::vector<CodeObjectEntry> entries = code_object_entries(image);
  const std::string fix = fmt::format(
      "rebuild it for the device (nvcc -arch=sm_{0}, or add PTX with -gencode=arch=compute_{0},code=compute_{0})",
      device_sm);
  if (entries.size() == 1 && entries[0].id.empty() &&
      (entries[0].format == Format::Cubin || entries[0].format == Format::Ptx)) {
    if (std::string why = nvidia::check_image_for_device(image, device_sm, device); !why.empty())
      throw FormatError(why);
    std::string why;
    if (entries[0].format == Format::Cubin) {
      const nvidia::CubinInfo c = nvidia::parse_cubin(entries[0].bytes);
      why = fmt::format("an {} cubin{}, which runs on {}", nvidia::arch_name(c.sm, c.variant, false),
                        nvidia::variant_note(c.sm, c.variant), device);
    } else {
      why = fmt::format("PTX, JIT-compiled by the driver for sm_{}", device_sm);
    }
    std::vector<Selection> out;
    out.push_back(chosen(std::move(entries[0]), why));
    return out;
  }
  // The best entry of each bundle of code (a fatbin: one per translation
  // unit in a library); ties go to the higher SM.
  std::map<uint32_t, CudaCandidate> best_of_group;
  std::vector<std::string> present;
  for (const auto& e : entries) {
    if (e.format != Format::Cubin && e.format != Format::Ptx) continue;
    present.push_back(e.target);
    const CudaCandidate c = rank_for_cuda(e, device_sm);
    if (c.rank < 0) continue;
    CudaCandidate& best = best_of_group[e.group];
    if (c.rank > best.rank || (c.rank == best.rank && c.sm > best.sm)) best = c;
  }
  if (best_of_group.empty()) {
    if (present.empty())
      throw FormatError(fmt::format("the cuda backend cannot load {}: it holds no cubin or PTX (it takes cubins, "
                                    "fatbins, PTX and host binaries with a .nv_fatbin section)",
                                    entries.size() == 1 && entries[0].id.empty() ? describe_format(image)
                                                                                  : "this file"));
    throw FormatError(fmt::format("nothing in the file runs on {} (sm_{}): it holds {}; arch-specific code (sm_90a) "
                                  "runs only on its own SM, SASS only within its major version, PTX only on its "
                                  "target or newer; {}",
                                  device, device_sm, list(present), fix));
  }
  // Code without kernels (a library's fatbin of device functions only) is
  // not loaded; a file of nothing else still loads its best part.
  std::vector<Selection> out, empty;
  for (const auto& [group, best] : best_of_group) {
    Selection s = chosen(*best.entry, cuda_reason(best, device_sm));
    // A cubin's own header decides, not only the container's word for it.
    if (s.entry.format == Format::Cubin)
      if (std::string bad = nvidia::check_image_for_device(s.entry.bytes, device_sm, device); !bad.empty())
        throw FormatError(fmt::format("{}: {}", s.entry.where(), bad));
    (nvidia::image_kernel_names(s.entry.bytes).empty() ? empty : out).push_back(std::move(s));
  }
  if (out.empty()) out.push_back(std::move(empty.front()));
  return out;
}

DeviceTarget parse_device_target(std::string_view text) {
  DeviceTarget d;
  d.name = std::string(text);
  auto digits = [](std::string_view s) {
    return !s.empty() && s.size() <= 5 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (text.substr(0, 3) == "sm_" && digits(text.substr(3))) {
    for (char c : text.substr(3)) d.cuda_sm = d.cuda_sm * 10 + uint32_t(c - '0');
    if (d.cuda_sm >= 10) return d;
  }
  if (text.substr(0, 3) == "gfx") {
    const std::string_view processor = text.substr(0, text.find(':'));
    bool ok = processor.size() > 3 && std::all_of(processor.begin() + 3, processor.end(), [](char c) {
      return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
    });
    // Only the features target IDs have, each once with + or -.
    for (size_t at = processor.size(); ok && at < text.size();) {
      const size_t next = std::min(text.find(':', at + 1), text.size());
      const std::string_view f = text.substr(at + 1, next - at - 1);
      ok = f == "xnack+" || f == "xnack-" || f == "sramecc+" || f == "sramecc-";
      at = next;
    }
    if (ok) {
      d.agent = amdgpu::parse_target_id(text);
      return d;
    }
  }
  std::string hint;
  if (text.substr(0, 3) == "sm_" && !text.empty() && (text.back() == 'a' || text.back() == 'f'))
    hint = fmt::format(" ({} is code for a device: name the device, {})", text, text.substr(0, text.size() - 1));
  else if (text.substr(0, 8) == "compute_")
    hint = fmt::format(" ({} is PTX for a device: name the device, sm_{})", text, text.substr(8));
  throw FormatError(fmt::format("\"{}\" names no device{}; give an NVIDIA device's SM (sm_90) or an AMD agent's "
                                "target ID (gfx90a, gfx90a:sramecc+:xnack-)",
                                text, hint));
}

bool runs_on(Format format, std::string_view target, const DeviceTarget& device) {
  if (device.agent) return amdgpu_score(format, target, *device.agent) >= 0;
  return device.cuda_sm != 0 && rank_for_cuda(format, target, device.cuda_sm).rank >= 0;
}

Selection select_for_cuda(std::span<const std::byte> image, uint32_t device_sm, std::string_view device) {
  std::vector<Selection> parts = select_parts_for_cuda(image, device_sm, device);
  return std::move(parts.front());
}

}  // namespace lrrt::formats
