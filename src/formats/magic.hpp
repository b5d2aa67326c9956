// Magic numbers and machine codes shared by the readers (private to src/formats).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace lrrt::formats {

inline constexpr std::string_view kBundleMagic = "__CLANG_OFFLOAD_BUNDLE__";
inline constexpr std::string_view kCompressedBundleMagic = "CCOB";
inline constexpr uint32_t kFatbinMagic = 0xBA55ED50u;
inline constexpr uint16_t kEmAmdgpu = 224;  // EM_AMDGPU (older <elf.h> lack it)
inline constexpr uint16_t kEmCuda = 190;    // EM_CUDA

// PTX text: ".version" and ".target" in the first 8 KiB, no NUL before them.
bool looks_like_ptx(std::span<const std::byte> image);

}  // namespace lrrt::formats
