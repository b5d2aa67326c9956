#include "lrrt/formats/select.hpp"

#include <optional>

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

}  // namespace

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
    const int score = amdgpu::target_match_score(amdgpu::parse_target_id(e.target), agent);
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
  const amdgpu::TargetId code = amdgpu::parse_target_id(best->target);
  std::string why = code.str() == agent.str()
                        ? fmt::format("the exact ISA of the device ({})", agent.str())
                        : fmt::format("{} runs on the device's {} (the features it leaves open match any)", code.str(),
                                      agent.str());
  return chosen(*best, why);
}

Selection select_for_cuda(std::span<const std::byte> image, uint32_t device_sm, std::string_view device) {
  std::vector<CodeObjectEntry> entries = code_object_entries(image);
  const std::string fix = fmt::format(
      "rebuild it for the device (nvcc -arch=sm_{0}, or add PTX with -gencode=arch=compute_{0},code=compute_{0})",
      device_sm);
  if (entries.size() == 1 && entries[0].id.empty() &&
      (entries[0].format == Format::Cubin || entries[0].format == Format::Ptx)) {
    if (std::string why = nvidia::check_image_for_device(image, device_sm, device); !why.empty())
      throw FormatError(why);
    const std::string why = entries[0].format == Format::Cubin
                                ? fmt::format("a cubin that runs on {}", device)
                                : fmt::format("PTX, JIT-compiled by the driver for sm_{}", device_sm);
    return chosen(std::move(entries[0]), why);
  }
  // Rank: 3 exact SASS (+1 arch-specific), 2 compatible SASS, 1 PTX; ties
  // go to the higher SM.
  struct Candidate {
    const CodeObjectEntry* entry;
    uint32_t sm;
    char variant;
    int rank;
  };
  std::optional<Candidate> best;
  std::vector<std::string> present;
  for (const auto& e : entries) {
    if (e.format != Format::Cubin && e.format != Format::Ptx) continue;
    present.push_back(e.target);
    const bool ptx = e.format == Format::Ptx;
    const std::string_view digits = std::string_view(e.target).substr(ptx ? 8 : 3);
    uint32_t sm = 0;
    size_t i = 0;
    while (i < digits.size() && digits[i] >= '0' && digits[i] <= '9' && sm < 100000) sm = sm * 10 + uint32_t(digits[i++] - '0');
    const char variant = i < digits.size() ? digits[i] : 0;
    int rank = -1;
    if (!ptx && sm == device_sm && nvidia::sass_runs_on(sm, variant, device_sm)) rank = variant == 'a' ? 4 : 3;
    else if (!ptx && nvidia::sass_runs_on(sm, variant, device_sm)) rank = 2;
    else if (ptx && nvidia::ptx_runs_on(sm, variant, device_sm)) rank = 1;
    if (rank < 0) continue;
    if (!best || rank > best->rank || (rank == best->rank && sm > best->sm)) best = Candidate{&e, sm, variant, rank};
  }
  if (!best) {
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
  const std::string name = best->entry->target;
  std::string why;
  if (best->rank >= 3) why = fmt::format("exact SASS for the device (sm_{})", device_sm);
  else if (best->rank == 2)
    why = fmt::format("compatible SASS: {} code runs on sm_{} (same major version); no exact SASS", name, device_sm);
  else why = fmt::format("PTX {}, JIT-compiled by the driver for sm_{}; no SASS for the device", name, device_sm);
  Selection s = chosen(*best->entry, why);
  // A cubin's own header decides, not only the container's word for it.
  if (s.entry.format == Format::Cubin)
    if (std::string bad = nvidia::check_image_for_device(s.entry.bytes, device_sm, device); !bad.empty())
      throw FormatError(fmt::format("{}: {}", s.entry.where(), bad));
  return s;
}

}  // namespace lrrt::formats
