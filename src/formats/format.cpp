#include "lrrt/formats/format.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include <fmt/format.h>

#include "lrrt/formats/elf.hpp"
#include "magic.hpp"

namespace lrrt::formats {
namespace {

bool starts_with(std::span<const std::byte> image, std::string_view prefix) {
  return image.size() >= prefix.size() &&
         std::memcmp(image.data(), prefix.data(), prefix.size()) == 0;
}

uint16_t host_elf_machine() {
#if defined(__x86_64__)
  return EM_X86_64;
#elif defined(__aarch64__)
  return EM_AARCH64;
#else
  return EM_NONE;
#endif
}

}  // namespace

bool looks_like_ptx(std::span<const std::byte> image) {
  // PTX is text holding ".version" and ".target" near its start; a NUL
  // before ".version" means binary data that happens to contain the words.
  size_t n = std::min<size_t>(image.size(), 8192);
  std::string_view head(reinterpret_cast<const char*>(image.data()), n);
  size_t version = head.find(".version");
  if (version == std::string_view::npos || head.find(".target") == std::string_view::npos)
    return false;
  return head.substr(0, version).find('\0') == std::string_view::npos;
}

Format detect_format(std::span<const std::byte> image) {
  if (starts_with(image, kBundleMagic)) return Format::OffloadBundle;
  if (starts_with(image, kCompressedBundleMagic)) return Format::CompressedOffloadBundle;
  if (image.size() >= 4) {
    uint32_t magic;
    std::memcpy(&magic, image.data(), 4);
    if (magic == kFatbinMagic) return Format::Fatbin;
  }
  if (starts_with(image, ELFMAG)) {
    uint16_t machine = elf::machine_of(image);
    if (machine == kEmAmdgpu) return Format::Hsaco;
    if (machine == kEmCuda) return Format::Cubin;
    if (machine != EM_NONE && machine == host_elf_machine()) return Format::HostSharedObject;
    return Format::OtherElf;
  }
  if (looks_like_ptx(image)) return Format::Ptx;
  return Format::Unknown;
}

std::string_view format_name(Format format) {
  switch (format) {
    case Format::Hsaco: return "hsaco";
    case Format::OffloadBundle: return "clang-offload-bundle";
    case Format::CompressedOffloadBundle: return "compressed-clang-offload-bundle";
    case Format::Cubin: return "cubin";
    case Format::Fatbin: return "fatbin";
    case Format::Ptx: return "ptx";
    case Format::HostSharedObject: return "host-so";
    case Format::HostBinary: return "host-binary";
    case Format::OtherElf: return "elf";
    case Format::Unknown: break;
  }
  return "unknown";
}

std::string_view format_backend(Format format) {
  switch (format) {
    case Format::Hsaco:
    case Format::OffloadBundle:
    case Format::CompressedOffloadBundle: return "hsa";
    case Format::Cubin:
    case Format::Fatbin:
    case Format::Ptx: return "cuda";
    case Format::HostSharedObject: return "host";
    default: return "";
  }
}

std::string describe_format(std::span<const std::byte> image) {
  switch (detect_format(image)) {
    case Format::Hsaco: return "an AMDGPU code object (HSACO, for the hsa backend)";
    case Format::OffloadBundle: return "a clang offload bundle (for the hsa backend)";
    case Format::CompressedOffloadBundle:
      return "a compressed clang offload bundle (CCOB, for the hsa backend)";
    case Format::Cubin: return "a CUDA cubin (for the cuda backend)";
    case Format::Fatbin: return "a CUDA fatbin (for the cuda backend)";
    case Format::Ptx: return "PTX text (for the cuda backend)";
    case Format::HostSharedObject: return "a host shared object (for the host backend)";
    case Format::HostBinary: return "a host executable or library carrying GPU code";
    case Format::OtherElf: {
      uint16_t machine = elf::machine_of(image);
      if (machine == 0) return "an ELF file that is not 64-bit, which no lrrt backend runs";
      return fmt::format("an ELF file for {} that no lrrt backend runs",
                         elf::machine_name(machine));
    }
    case Format::Unknown: break;
  }
  return image.empty() ? "an empty file" : "not a code object lrrt recognises";
}

std::string_view host_machine() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#else
  return "host";
#endif
}

}  // namespace lrrt::formats
