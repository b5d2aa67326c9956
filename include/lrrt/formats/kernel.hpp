// The one description of a kernel and its arguments, shared by every reader
// (AMDGPU metadata, host kernel records) and by the runtime's backends
// (lrrt::rt::KernelInfo is this type).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lrrt::formats {

// The same values as the C ABI's lr_arg_kind_t (the runtime checks this).
enum class ArgKind : uint32_t {
  ByValue = 0,
  GlobalBuffer = 1,   // a device pointer
  DynamicShared = 2,  // pointer to dynamic shared memory (AMD)
  Hidden = 3,         // filled by the runtime (AMD implicit arguments)
  Other = 4,          // not recorded (cubins) or something else
};
// "by_value", "global_buffer", "dynamic_shared", "hidden", "other".
std::string_view arg_kind_name(ArgKind kind);

struct KernelArgInfo {
  uint32_t offset = 0;
  uint32_t size = 0;
  ArgKind kind = ArgKind::ByValue;
  std::string value_kind;     // the code object's own word: by_value, global_buffer, hidden_*
  std::string name;           // when recorded
  std::string type_name;      // when recorded
  std::string address_space;  // AMD metadata: global, generic, ...
  // AMD metadata of a global_buffer: .access is what the source declared
  // (`const`), .actual_access what the compiler proved (noalias and only
  // read, or only written); each read_only, write_only or read_write, ""
  // when absent. derived_access() reads them.
  std::string access;
  std::string actual_access;
};

// How a kernel uses a buffer argument, as lrrt's graph declarations say it
// (the values of the C ABI's lr_access_mode_t).
enum class AccessMode : uint32_t { Read = 1, Write = 2, ReadWrite = 3 };
// "read", "write", "read_write".
std::string_view access_mode_name(AccessMode mode);

// Where an argument's access came from, narrowest proof first (docs/access.md).
enum class AccessSource : uint32_t {
  Default = 0,       // nothing known: read-write
  Declared = 1,      // given by the user (manifest, caller)
  ActualAccess = 2,  // AMD metadata .actual_access
  Access = 3,        // AMD metadata .access
  Ttir = 4,          // lrrt's analysis of a Triton kernel's IR (triton_access.hpp)
};
// "default", "declared", "actual_access", "access", "ttir".
std::string_view access_source_name(AccessSource source);

struct DerivedAccess {
  AccessMode mode = AccessMode::ReadWrite;
  AccessSource source = AccessSource::Default;
};
// The access a code object's metadata proves for an argument: .actual_access,
// else .access; read-write from Default when neither holds one of the three
// words (or the argument is no global_buffer).
DerivedAccess derived_access(const KernelArgInfo& arg);

struct KernelInfo {
  std::string name;
  std::string symbol;
  bool has_arg_layout = false;
  std::vector<KernelArgInfo> args;  // explicit first, then hidden, metadata order
  uint32_t kernarg_size = 0;
  uint32_t kernarg_align = 8;
  uint32_t group_segment_size = 0;
  uint32_t private_segment_size = 0;
  // AMD metadata .uses_dynamic_stack: recursion, indirect or external calls
  // whose stack the compiler cannot bound; the dispatch must give more
  // private segment than private_segment_size (docs/backends/hsa.md).
  bool uses_dynamic_stack = false;
  uint32_t max_workgroup_size = 0;
  uint32_t wavefront_size = 0;
  uint32_t sgpr_count = 0;
  uint32_t vgpr_count = 0;
  std::string language;  // AMD metadata .language ("OpenCL C"), when recorded

  uint32_t explicit_arg_count() const {
    uint32_t n = 0;
    for (const auto& a : args) n += a.kind != ArgKind::Hidden;
    return n;
  }
  // Bytes of explicit arguments: end of the last explicit argument.
  uint32_t explicit_kernarg_size() const {
    uint32_t end = 0;
    for (const auto& a : args)
      if (a.kind != ArgKind::Hidden && a.offset + a.size > end) end = a.offset + a.size;
    return end;
  }
};

}  // namespace lrrt::formats
