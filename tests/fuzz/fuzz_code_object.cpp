// libFuzzer target: lrrt_formats, every reader through the paths the runtime
// and `lrrt inspect` take. Anything malformed must be a FormatError; what is
// accepted must point inside the input. What inspect reports is printed in
// every format, as `lrrt inspect` prints it: names from the input (any bytes)
// must come out as valid UTF-8, JSON that parses back, with no raw control
// character outside JSON's escapes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include <string>

#include <nlohmann/json.hpp>

#include "lrrt/bundle/text.hpp"
#include "lrrt/formats.hpp"
#include "tool/inspect_doc.hpp"
#include "tool/printers/printer.hpp"

namespace {

// The inspect document of the targets, printed in every format.
void print_every_way(const lrrt::formats::Inspection& inspection) {
  nlohmann::json targets = nlohmann::json::array();
  for (const auto& t : inspection.targets) targets.push_back(lrrt::tool::inspect_target_json(t));
  nlohmann::json object{{"file", "fuzz\xff.bin"}, {"format", "fuzz"}, {"size", inspection.size}};
  object["targets"] = std::move(targets);
  const nlohmann::json doc{{"kind", "inspect"}, {"lrrt_results", 1}, {"objects", nlohmann::json::array({object})}};
  for (const auto& format : lrrt::tool::printers::formats()) {
    const std::string text = lrrt::tool::printers::render(doc, format);
    if (!lrrt::bundle::is_valid_utf8(text)) std::abort();
    if (format == "json") {
      (void)nlohmann::json::parse(text);  // throws (aborts) when it is not JSON
      continue;
    }
    for (unsigned char c : text)
      if ((c < 0x20 && c != '\n' && c != '\t' && c != '\r') || c == 0x7f) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lrrt::formats;
  const std::span<const std::byte> image(reinterpret_cast<const std::byte*>(data), size);
  auto inside = [&](std::span<const std::byte> s) {
    return s.empty() || (s.data() >= image.data() && s.size() <= size_t(image.data() + size - s.data()));
  };
  // Entries point into the input, or into bytes they own (decoded).
  auto owned = [](const CodeObjectEntry& e) {
    if (!e.storage) return false;
    const auto* begin = e.storage->data();
    return e.bytes.empty() || (e.bytes.data() >= begin && e.bytes.size() <= size_t(begin + e.storage->size() - e.bytes.data()));
  };
  try {
    for (auto& e : code_object_entries(image)) {
      if (!(inside(e.bytes) || owned(e)) || !inside(e.stored)) std::abort();
      if (!e.in_compressed_bundle && (e.offset > size || e.size > size - e.offset)) std::abort();
      try {
        decode_entry(e);
        if (!(inside(e.bytes) || owned(e))) std::abort();
        if (!e.compression.empty() && e.bytes.size() != e.uncompressed_size) std::abort();
      } catch (const FormatError&) {
      }
    }
  } catch (const FormatError&) {
  }
  // The entry choice of both GPU backends.
  for (const char* agent : {"gfx90a:sramecc+:xnack+", "gfx1100"})
    try {
      (void)select_for_amdgpu(image, amdgpu::parse_target_id(agent));
    } catch (const FormatError&) {
    }
  for (uint32_t sm : {80u, 90u, 100u})
    try {
      (void)select_for_cuda(image, sm, "fuzz device");
    } catch (const FormatError&) {
    }
  try {
    const Inspection inspection = inspect_code_object(image);
    print_every_way(inspection);
    for (const auto& t : inspection.targets) {
      if (t.size > kMaxDecompressedBytes) std::abort();
      if (t.format != Format::Hsaco && t.format != Format::HostSharedObject) continue;
      // These readers check every argument against the kernarg segment.
      for (const auto& k : t.kernels)
        for (const auto& a : k.args)
          if (uint64_t(a.offset) + a.size > k.kernarg_size.value_or(0)) std::abort();
    }
  } catch (const FormatError&) {
  }
  // The cuda backend's lenient paths never throw.
  nvidia::image_kernel_names(image);
  nvidia::image_kernel(image, "saxpy");
  nvidia::check_image_for_device(image, 90, "fuzz device");
  // The hsa backend's printf path: an HSACO's format table, then the same
  // bytes as a printf buffer decoded with it (never throws, never reads out).
  try {
    const auto co = amdgpu::parse_code_object(image);
    const amdgpu::PrintfTable table(co.printf_formats);
    const auto decoded = amdgpu::decode_printf_buffer(table, image);
    if (decoded.used_bytes > UINT32_MAX) std::abort();
  } catch (const FormatError&) {
  }
  {
    const amdgpu::PrintfTable table({"1:2:4:8:%d %ld\\n", "2:1:16:%v4hld", "3:1:8:%s"});
    amdgpu::decode_printf_buffer(table, image);
  }
  try {
    auto entries = parse_offload_bundle(image);
    const auto& chosen = select_bundle_entry(entries, amdgpu::parse_target_id("gfx90a:sramecc+:xnack+"));
    if (!inside(chosen.image)) std::abort();
  } catch (const FormatError&) {
  }
  return 0;
}
