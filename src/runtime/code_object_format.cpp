#include "code_object_format.hpp"

#include <elf.h>

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

namespace lrrt::rt {
namespace {

constexpr std::string_view kBundleMagic = "__CLANG_OFFLOAD_BUNDLE__";
constexpr uint32_t kFatbinMagic = 0xBA55ED50u;
#ifndef EM_AMDGPU
constexpr uint16_t EM_AMDGPU = 224;
#endif
#ifndef EM_CUDA
constexpr uint16_t EM_CUDA = 190;
#endif

bool starts_with(std::span<const std::byte> image, std::string_view prefix) {
  return image.size() >= prefix.size() &&
         std::memcmp(image.data(), prefix.data(), prefix.size()) == 0;
}

uint16_t elf_machine(std::span<const std::byte> image) {
  if (image.size() < sizeof(Elf64_Ehdr) || !starts_with(image, ELFMAG)) return 0;
  Elf64_Ehdr header;
  std::memcpy(&header, image.data(), sizeof(header));
  if (header.e_ident[EI_CLASS] != ELFCLASS64) return 0;
  return header.e_machine;
}

bool looks_like_ptx(std::span<const std::byte> image) {
  // PTX is text starting with comments or directives and holds ".version".
  size_t n = std::min<size_t>(image.size(), 4096);
  std::string_view head(reinterpret_cast<const char*>(image.data()), n);
  if (head.find_first_of(std::string_view("\0", 1)) != std::string_view::npos &&
      head.find('\0') < head.find(".version"))
    return false;
  return head.find(".version") != std::string_view::npos &&
         head.find(".target") != std::string_view::npos;
}

}  // namespace

CodeObjectFormat detect_code_object_format(std::span<const std::byte> image) {
  if (starts_with(image, kBundleMagic)) return CodeObjectFormat::ClangOffloadBundle;
  if (image.size() >= 4) {
    uint32_t magic;
    std::memcpy(&magic, image.data(), 4);
    if (magic == kFatbinMagic) return CodeObjectFormat::CudaFatbin;
  }
  if (starts_with(image, ELFMAG)) {
    uint16_t machine = elf_machine(image);
    if (machine == EM_AMDGPU) return CodeObjectFormat::AmdgpuElf;
    if (machine == EM_CUDA) return CodeObjectFormat::CudaCubin;
#if defined(__x86_64__)
    if (machine == EM_X86_64) return CodeObjectFormat::HostSharedObject;
#elif defined(__aarch64__)
    if (machine == EM_AARCH64) return CodeObjectFormat::HostSharedObject;
#endif
    return CodeObjectFormat::OtherElf;
  }
  if (looks_like_ptx(image)) return CodeObjectFormat::CudaPtx;
  return CodeObjectFormat::Unknown;
}

std::string_view format_name(CodeObjectFormat format) {
  switch (format) {
    case CodeObjectFormat::AmdgpuElf: return "hsaco";
    case CodeObjectFormat::ClangOffloadBundle: return "clang-offload-bundle";
    case CodeObjectFormat::CudaCubin: return "cubin";
    case CodeObjectFormat::CudaFatbin: return "fatbin";
    case CodeObjectFormat::CudaPtx: return "ptx";
    case CodeObjectFormat::HostSharedObject: return "host-shared-object";
    case CodeObjectFormat::OtherElf: return "elf";
    case CodeObjectFormat::Unknown: break;
  }
  return "unknown";
}

std::string_view format_backend(CodeObjectFormat format) {
  switch (format) {
    case CodeObjectFormat::AmdgpuElf:
    case CodeObjectFormat::ClangOffloadBundle: return "hsa";
    case CodeObjectFormat::CudaCubin:
    case CodeObjectFormat::CudaFatbin:
    case CodeObjectFormat::CudaPtx: return "cuda";
    case CodeObjectFormat::HostSharedObject: return "host";
    default: return "";
  }
}

std::string describe_code_object(std::span<const std::byte> image) {
  CodeObjectFormat f = detect_code_object_format(image);
  switch (f) {
    case CodeObjectFormat::AmdgpuElf: return "an AMDGPU code object (HSACO, for the hsa backend)";
    case CodeObjectFormat::ClangOffloadBundle: return "a clang offload bundle (for the hsa backend)";
    case CodeObjectFormat::CudaCubin: return "a CUDA cubin (for the cuda backend)";
    case CodeObjectFormat::CudaFatbin: return "a CUDA fatbin (for the cuda backend)";
    case CodeObjectFormat::CudaPtx: return "PTX text (for the cuda backend)";
    case CodeObjectFormat::HostSharedObject: return "a host shared object (for the host backend)";
    case CodeObjectFormat::OtherElf:
      return fmt::format("an ELF file for machine {} that no lrrt backend runs", elf_machine(image));
    case CodeObjectFormat::Unknown: break;
  }
  return image.empty() ? "an empty file" : "not a code object lrrt recognises";
}

}  // namespace lrrt::rt
