// Recognises a code object's format from its first bytes, so one load call
// takes any format and a wrong-backend image gets a message that says what it
// is ("an AMDGPU code object (HSACO, for the hsa backend)") rather than a
// loader's error code.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace lrrt::formats {

enum class Format {
  Unknown,
  Hsaco,                    // ELF, e_machine EM_AMDGPU (224)
  OffloadBundle,            // "__CLANG_OFFLOAD_BUNDLE__" (HIP fat binaries)
  CompressedOffloadBundle,  // "CCOB" (clang --offload-compress)
  Cubin,                    // ELF, e_machine EM_CUDA (190)
  Fatbin,                   // fatbin container, magic 0xBA55ED50
  Ptx,                      // PTX text
  HostSharedObject,         // ELF for this host's machine (a host kernel library)
  HostBinary,               // host ELF carrying GPU code (.hip_fatbin, .nv_fatbin): file_format() only
  OtherElf,                 // ELF for a machine no backend runs
};

Format detect_format(std::span<const std::byte> image);
// "hsaco", "clang-offload-bundle", "compressed-clang-offload-bundle", "cubin",
// "fatbin", "ptx", "host-so", "host-binary", "elf", "unknown": the words `lrrt inspect` prints.
std::string_view format_name(Format format);
// The backend that runs this format ("hsa", "cuda", "host"), or "" if none.
std::string_view format_backend(Format format);
// A short description for messages: "an AMDGPU code object (HSACO, for the
// hsa backend)", "an empty file", "an ELF file for machine riscv ...".
std::string describe_format(std::span<const std::byte> image);
// This host's machine as lrrt names it: "x86_64", "aarch64".
std::string_view host_machine();

}  // namespace lrrt::formats
