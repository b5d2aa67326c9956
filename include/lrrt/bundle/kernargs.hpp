// Kernel argument packing: natural alignment (each argument at the next
// multiple of its size; pointers are 8 bytes), or explicit offsets, and a
// check against the layout the code object declares when a backend can read
// it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lrrt/bundle/manifest.hpp"

namespace lrrt::bundle {

struct ArgSlot {
  uint32_t offset = 0;
  uint32_t size = 0;
  bool pointer = false;
};

struct KernargLayout {
  std::vector<ArgSlot> slots;  // one per manifest argument
  uint32_t size = 0;           // padded to the largest alignment
  uint32_t align = 1;
};

// Lays the arguments out; explicit offsets must be aligned and must not
// overlap. Throws ManifestError naming /args/N.
KernargLayout layout_kernargs(const std::vector<ArgSpec>& args);

// The kernel's explicit argument as the code object describes it.
struct KernelArg {
  uint32_t offset = 0;
  uint32_t size = 0;
  bool pointer = false;
  std::string name;  // may be empty
  // False when the code object records offsets and sizes but not whether an
  // argument is a pointer (cuda cubins: LR_ARG_OTHER); either kind matches.
  bool kind_known = true;
  // The source type when the code object records it ("float", "uint32_t",
  // PTX "f32"): a float argument given an integer, or the other way round,
  // is refused before the launch. A PTX aggregate's written alignment comes
  // first (".align 8 .b8[16]"): a struct argument of another alignment is
  // refused (declared_alignment).
  std::string type_name;
};

// The alignment a recorded type name declares (".align 8 .b8[16]": 8), 0
// when it declares none.
uint32_t declared_alignment(std::string_view type_name);

// Whether a recorded type name is a floating-point or an integer scalar;
// Unknown for pointers, untyped words (PTX b32), structs and anything else.
enum class ScalarFamily { Unknown, Float, Integer };
ScalarFamily scalar_family(std::string_view type_name);

// "(0) a: offset 0, 4 bytes, value; (1) x: offset 8, 8 bytes, pointer; ..."
std::string describe_kernel_layout(const std::vector<KernelArg>& args);

// Throws ManifestError naming /args (count) or /args/N (offset, size, kind)
// when the manifest disagrees with the kernel.
void check_kernargs(const std::vector<ArgSpec>& args, const KernargLayout& layout,
                    const std::vector<KernelArg>& kernel_args, const std::string& kernel_name);

// The arguments at the kernel's own offsets, when they hold a tensor map and
// give no offsets themselves: a cubin places a 64-byte aligned parameter at a
// 64-byte aligned address of its constant bank, so its first one may sit past
// offset 0 (48 on sm_90), where natural alignment would not put it. Otherwise
// (or when the counts differ: check_kernargs says so) `args` unchanged.
std::vector<ArgSpec> at_kernel_offsets(const std::vector<ArgSpec>& args, const std::vector<KernelArg>& kernel_args);

// Packs the argument bytes; pointers[i] is the device address of
// manifest->buffers[i]. The result is at least min_size bytes.
std::vector<std::byte> pack_kernargs(const std::vector<ArgSpec>& args, const KernargLayout& layout,
                                     const std::vector<uint64_t>& buffer_addresses, uint32_t min_size = 0);

}  // namespace lrrt::bundle
