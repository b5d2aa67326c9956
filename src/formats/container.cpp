#include "lrrt/formats/container.hpp"

#include <fmt/format.h>

#include "lrrt/formats/nvidia.hpp"
#include "lrrt/formats/offload_bundle.hpp"

namespace lrrt::formats {
namespace {

std::vector<CodeObjectEntry> bundle_entries(std::span<const std::byte> image) {
  std::vector<CodeObjectEntry> out;
  for (const auto& b : parse_offload_bundle(image)) {
    CodeObjectEntry e;
    e.container = Format::OffloadBundle;
    e.format = b.image.empty() ? Format::Unknown : detect_format(b.image);
    e.id = b.id;
    e.target = b.is_amdgpu() ? b.target : b.triple;
    e.offset = b.offset;
    e.size = b.image.size();
    e.bytes = b.image;
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<CodeObjectEntry> fatbin_entries(std::span<const std::byte> image) {
  using Kind = nvidia::FatbinEntry::Kind;
  std::vector<CodeObjectEntry> out;
  for (const auto& f : nvidia::parse_fatbin(image).entries) {
    CodeObjectEntry e;
    e.container = Format::Fatbin;
    // What the entry holds, from the fatbin's header: its bytes may be
    // compressed and unreadable here.
    e.format = f.kind == Kind::Cubin ? Format::Cubin : f.kind == Kind::Ptx ? Format::Ptx : Format::Unknown;
    e.id = f.describe();
    e.target = fmt::format("{}_{}", f.kind == Kind::Ptx ? "compute" : "sm", f.sm);
    e.offset = f.offset;
    e.size = f.size;
    e.compression = f.compression;
    if (e.compression.empty()) {
      e.bytes = f.bytes;
      // A kind-2 entry that is no cubin after all: say what it is.
      if (e.format == Format::Cubin && detect_format(f.bytes) != Format::Cubin) e.format = detect_format(f.bytes);
    }
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace

std::vector<CodeObjectEntry> code_object_entries(std::span<const std::byte> image) {
  Format format = detect_format(image);
  switch (format) {
    case Format::OffloadBundle:
    case Format::CompressedOffloadBundle:  // the parser says why it cannot read it yet
      return bundle_entries(image);
    case Format::Fatbin: return fatbin_entries(image);
    default: break;
  }
  CodeObjectEntry e;
  e.container = format;
  e.format = format;
  e.size = image.size();
  e.bytes = image;
  return {std::move(e)};
}

}  // namespace lrrt::formats
