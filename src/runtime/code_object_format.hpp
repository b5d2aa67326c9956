// Recognises a code object's format from its first bytes, so one load call
// takes any format and a wrong-backend image gets a message that says what it
// is ("an AMDGPU ELF for gfx1100") rather than a loader's error code.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace lrrt::rt {

enum class CodeObjectFormat {
  Unknown,
  AmdgpuElf,        // HSACO: ELF, e_machine EM_AMDGPU (224)
  ClangOffloadBundle,  // "__CLANG_OFFLOAD_BUNDLE__" (HIP fat binaries)
  CudaCubin,        // ELF, e_machine EM_CUDA (190)
  CudaFatbin,       // fatbin container, magic 0xBA55ED50
  CudaPtx,          // PTX text
  HostSharedObject, // ELF shared object for this host's machine
  OtherElf,         // ELF for a machine nobody here runs
};

CodeObjectFormat detect_code_object_format(std::span<const std::byte> image);
std::string_view format_name(CodeObjectFormat format);
// The backend that runs this format ("hsa", "cuda", "host"), or "" if none.
std::string_view format_backend(CodeObjectFormat format);
// A short description for error messages: "an AMDGPU code object (ELF)".
std::string describe_code_object(std::span<const std::byte> image);

}  // namespace lrrt::rt
