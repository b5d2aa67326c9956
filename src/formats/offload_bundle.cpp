#include "lrrt/formats/offload_bundle.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "lrrt/formats/compression.hpp"
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
  if (is_compressed(b)) bad("a compressed bundle (CCOB) must be read with read_offload_bundle");
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


namespace {

// CCOB headers (clang's OffloadBundler, versions 1-3): magic, u16 version,
// u16 method (0 zlib, 1 zstd), then
//   v1: u32 uncompressed size, u64 hash                      (20 bytes)
//   v2: u32 total size, u32 uncompressed size, u64 hash      (24 bytes)
//   v3: u64 total size, u64 uncompressed size, u64 hash      (32 bytes)
// The hash is the first 8 bytes (little-endian) of the uncompressed bundle's
// MD5; the total size counts the header and the compressed data.
struct CompressedHeader {
  uint16_t version = 0;
  Codec codec = Codec::Zstd;
  uint64_t header_size = 0;
  uint64_t total_size = 0;  // 0 in version 1: the stream's end is found by decoding
  uint64_t uncompressed_size = 0;
  uint64_t hash = 0;
};

CompressedHeader read_compressed_header(std::span<const std::byte> b) {
  CompressedHeader h;
  h.version = checked_read<uint16_t>(b, 4, "CCOB version", "bundle");
  const uint16_t method = checked_read<uint16_t>(b, 6, "CCOB compression method", "bundle");
  if (method == 0) h.codec = Codec::Zlib;
  else if (method == 1) h.codec = Codec::Zstd;
  else bad(fmt::format("compressed bundle (CCOB) with compression method {} (clang writes 0 for zlib, 1 for zstd)", method));
  switch (h.version) {
    case 1:
      h.uncompressed_size = checked_read<uint32_t>(b, 8, "CCOB uncompressed size", "bundle");
      h.hash = checked_read<uint64_t>(b, 12, "CCOB hash", "bundle");
      h.header_size = 20;
      break;
    case 2:
      h.total_size = checked_read<uint32_t>(b, 8, "CCOB total size", "bundle");
      h.uncompressed_size = checked_read<uint32_t>(b, 12, "CCOB uncompressed size", "bundle");
      h.hash = checked_read<uint64_t>(b, 16, "CCOB hash", "bundle");
      h.header_size = 24;
      break;
    case 3:
      h.total_size = checked_read<uint64_t>(b, 8, "CCOB total size", "bundle");
      h.uncompressed_size = checked_read<uint64_t>(b, 16, "CCOB uncompressed size", "bundle");
      h.hash = checked_read<uint64_t>(b, 24, "CCOB hash", "bundle");
      h.header_size = 32;
      break;
    default:
      bad(fmt::format("compressed bundle (CCOB) version {}; lrrt reads versions 1 to 3", h.version));
  }
  if (h.version >= 2 && (h.total_size < h.header_size || h.total_size > b.size()))
    bad(fmt::format("the compressed bundle's header says it is {} bytes, but {} bytes {}", h.total_size,
                    h.total_size < h.header_size ? "its header alone is" : "are left in the file",
                    h.total_size < h.header_size ? h.header_size : b.size()));
  return h;
}

uint64_t uncompressed_bundle_size(const std::vector<BundleEntry>& entries, uint64_t header_end) {
  uint64_t end = header_end;
  for (const auto& e : entries) end = std::max(end, e.offset + e.image.size());
  return end;
}

}  // namespace

bool is_compressed(std::span<const std::byte> b) {
  return b.size() >= kCompressedBundleMagic.size() &&
         std::memcmp(b.data(), kCompressedBundleMagic.data(), kCompressedBundleMagic.size()) == 0;
}

OffloadBundle read_offload_bundle(std::span<const std::byte> b) {
  OffloadBundle out;
  if (!is_compressed(b)) {
    out.entries = parse_offload_bundle(b);
    uint64_t header_end = kBundleMagic.size() + 8;
    for (const auto& e : out.entries) header_end += 24 + e.id.size();
    out.stored_size = uncompressed_bundle_size(out.entries, header_end);
    return out;
  }
  CompressedHeader h;
  try {
    h = read_compressed_header(b);
  } catch (const FormatError& e) {
    const std::string what = e.what();
    if (what.rfind("invalid clang offload bundle", 0) == 0) throw;
    bad("compressed bundle (CCOB): " + what);
  }
  out.compression = std::string(codec_name(h.codec));
  out.compressed_version = h.version;
  std::span<const std::byte> data = b.subspan(h.header_size, h.version >= 2 ? h.total_size - h.header_size
                                                                            : b.size() - h.header_size);
  if (h.version == 1) data = data.first(compressed_frame_size(h.codec, data, "compressed bundle (CCOB version 1)"));
  out.stored_size = h.header_size + data.size();
  const std::string what = fmt::format("invalid clang offload bundle: compressed bundle (CCOB version {}, {})",
                                       h.version, out.compression);
  auto storage = std::make_shared<std::vector<std::byte>>(decompress(h.codec, data, h.uncompressed_size, what));
  const auto digest = md5(*storage);
  uint64_t hash = 0;
  for (int i = 0; i < 8; ++i) hash |= uint64_t(digest[i]) << (8 * i);
  if (hash != h.hash)
    bad(fmt::format("the compressed bundle's hash {:#018x} does not match its {} bytes once decompressed "
                    "(MD5 {:#018x}): corrupt",
                    h.hash, storage->size(), hash));
  if (is_compressed(*storage)) bad("a compressed bundle inside a compressed bundle");
  out.entries = parse_offload_bundle(*storage);
  out.storage = std::move(storage);
  return out;
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
