#include "offload_bundle.hpp"

#include <cstring>

#include "error.hpp"

namespace lrrt::rt::amdgpu {
namespace {

constexpr std::string_view kMagic = "__CLANG_OFFLOAD_BUNDLE__";
constexpr std::string_view kCompressedMagic = "CCOB";

[[noreturn]] void bad(const std::string& what) {
  throw Error(LR_ERROR_INVALID_IMAGE, "invalid clang offload bundle: " + what);
}

uint64_t read_u64(std::span<const std::byte> b, uint64_t off, const char* what) {
  if (off > b.size() || b.size() - off < 8)
    bad(fmt::format("{} at offset {} lies outside the {}-byte bundle", what, off, b.size()));
  uint64_t v;
  std::memcpy(&v, b.data() + off, 8);
  return v;
}

}  // namespace

std::vector<BundleEntry> parse_offload_bundle(std::span<const std::byte> b) {
  if (b.size() >= kCompressedMagic.size() &&
      std::memcmp(b.data(), kCompressedMagic.data(), kCompressedMagic.size()) == 0)
    bad("compressed bundles (CCOB, --offload-compress) are not supported; rebuild without compression");
  if (b.size() < kMagic.size() || std::memcmp(b.data(), kMagic.data(), kMagic.size()) != 0)
    bad("missing __CLANG_OFFLOAD_BUNDLE__ magic");
  uint64_t pos = kMagic.size();
  uint64_t count = read_u64(b, pos, "entry count");
  pos += 8;
  if (count > 4096) bad(fmt::format("implausible entry count {}", count));
  std::vector<BundleEntry> out;
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t off = read_u64(b, pos, "entry offset");
    uint64_t size = read_u64(b, pos + 8, "entry size");
    uint64_t idlen = read_u64(b, pos + 16, "entry id length");
    pos += 24;
    if (idlen > 4096 || pos > b.size() || b.size() - pos < idlen)
      bad(fmt::format("entry {} id ({} bytes) lies outside the bundle", i, idlen));
    BundleEntry e;
    e.id.assign(reinterpret_cast<const char*>(b.data() + pos), idlen);
    pos += idlen;
    if (off > b.size() || b.size() - off < size)
      bad(fmt::format("entry {} ({}: {} bytes at offset {}) lies outside the {}-byte bundle", i,
                      e.id, size, off, b.size()));
    e.image = b.subspan(off, size);
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
    }
    out.push_back(std::move(e));
  }
  return out;
}

const BundleEntry& select_bundle_entry(const std::vector<BundleEntry>& entries,
                                       const TargetId& agent) {
  const BundleEntry* best = nullptr;
  int best_score = -1;
  std::string present;
  for (const auto& e : entries) {
    if (!e.is_amdgpu()) continue;
    present += (present.empty() ? "" : ", ") + e.target;
    if (e.image.empty()) continue;
    int s = target_match_score(parse_target_id(e.target), agent);
    if (s > best_score) {
      best_score = s;
      best = &e;
    }
  }
  if (!best)
    throw Error(LR_ERROR_INVALID_IMAGE,
                fmt::format("the offload bundle has no code object for {} (targets present: {})",
                            agent.str(), present.empty() ? "none" : present));
  return *best;
}

}  // namespace lrrt::rt::amdgpu
