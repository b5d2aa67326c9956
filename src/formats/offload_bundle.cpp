#include "lrrt/formats/offload_bundle.hpp"

#include <cstring>

#include <fmt/format.h>

#include "lrrt/formats/elf.hpp"
#include "lrrt/formats/error.hpp"
#include "magic.hpp"

namespace lrrt::formats {
namespace {

[[noreturn]] void bad(const std::string& what) {
  throw FormatError("invalid clang offload bundle: " + what);
}

constexpr uint64_t kMaxEntries = 4096;
constexpr uint64_t kMaxIdLength = 4096;

}  // namespace

std::vector<BundleEntry> parse_offload_bundle(std::span<const std::byte> b) {
  if (b.size() >= kCompressedBundleMagic.size() &&
      std::memcmp(b.data(), kCompressedBundleMagic.data(), kCompressedBundleMagic.size()) == 0)
    bad("compressed bundles (CCOB, --offload-compress) are not supported yet; rebuild without "
        "compression");
  if (b.size() < kBundleMagic.size() ||
      std::memcmp(b.data(), kBundleMagic.data(), kBundleMagic.size()) != 0)
    bad("missing __CLANG_OFFLOAD_BUNDLE__ magic");
  try {
    uint64_t pos = kBundleMagic.size();
    uint64_t count = checked_read<uint64_t>(b, pos, "entry count", "bundle");
    pos += 8;
    if (count > kMaxEntries) throw FormatError(fmt::format("implausible entry count {}", count));
    std::vector<BundleEntry> out;
    for (uint64_t i = 0; i < count; ++i) {
      // pos never exceeds b.size(): every step below is checked first.
      uint64_t offset = checked_read<uint64_t>(b, pos, "entry offset", "bundle");
      uint64_t size = checked_read<uint64_t>(b, pos + 8, "entry size", "bundle");
      uint64_t id_length = checked_read<uint64_t>(b, pos + 16, "entry id length", "bundle");
      pos += 24;
      if (id_length > kMaxIdLength)
        throw FormatError(fmt::format("entry {} has an id of {} bytes", i, id_length));
      auto id = checked_subspan(b, pos, id_length, fmt::format("entry {} id", i), "bundle");
      pos += id_length;
      BundleEntry e;
      e.id.assign(reinterpret_cast<const char*>(id.data()), id.size());
      e.offset = offset;
      e.image = checked_subspan(b, offset, size, fmt::format("entry {} ({})", i, e.id), "bundle");
      // "<kind>-<arch>-<vendor>-<os>-<env>-<target id>"
      size_t dash = e.id.find('-');
      e.kind = e.id.substr(0, dash);
      std::string rest = dash == std::string::npos ? std::string() : e.id.substr(dash + 1);
      size_t dd = rest.find("--");
      if (dd != std::string::npos) {
        e.triple = rest.substr(0, dd);
        e.target = rest.substr(dd + 2);
      } else {
        e.triple = rest;
        while (!e.triple.empty() && e.triple.back() == '-') e.triple.pop_back();
      }
      out.push_back(std::move(e));
    }
    return out;
  } catch (const FormatError& e) {
    bad(e.what());  // the messages above name the part; this adds the file's kind
  }
}

const BundleEntry& select_bundle_entry(const std::vector<BundleEntry>& entries,
                                       const amdgpu::TargetId& agent) {
  const BundleEntry* best = nullptr;
  int best_score = -1;
  std::string present;
  for (const auto& e : entries) {
    if (!e.is_amdgpu()) continue;
    present += (present.empty() ? "" : ", ") + e.target;
    if (e.image.empty()) continue;
    int s = amdgpu::target_match_score(amdgpu::parse_target_id(e.target), agent);
    if (s > best_score) {
      best_score = s;
      best = &e;
    }
  }
  if (!best)
    throw FormatError(fmt::format(
        "the offload bundle has no code object for {} (targets present: {})", agent.str(),
        present.empty() ? "none" : present));
  return *best;
}

}  // namespace lrrt::formats
