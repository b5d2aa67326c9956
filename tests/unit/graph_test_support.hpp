// Shared by the graph unit tests: kernels with a chosen argument layout
// (no device needed) and a fake allocation table.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "backend.hpp"
#include "graph/graph.hpp"

namespace lrrt::test {

// A kernel that only describes itself: enough to record and derive.
struct FakeKernel final : rt::Kernel {
  rt::KernelInfo info_;
  const rt::KernelInfo& info() const override { return info_; }
};

// Arguments: each (name, kind, size) at natural alignment.
struct FakeArg {
  std::string name;
  lr_arg_kind_t kind;
  uint32_t size;
};

inline FakeKernel make_kernel(const std::string& name, const std::vector<FakeArg>& args, bool layout = true) {
  FakeKernel k;
  k.info_.name = name;
  k.info_.has_arg_layout = layout;
  uint32_t offset = 0;
  for (const auto& a : args) {
    offset = (offset + a.size - 1) / a.size * a.size;
    rt::KernelArgInfo info;
    info.offset = offset;
    info.size = a.size;
    info.kind = static_cast<lrrt::formats::ArgKind>(a.kind);  // same values as lr_arg_kind_t
    info.name = a.name;
    k.info_.args.push_back(info);
    offset += a.size;
  }
  k.info_.kernarg_size = (offset + 7) / 8 * 8;
  return k;
}

// A kernel taking `count` global buffers (named p0, p1, ...).
inline FakeKernel buffers_kernel(const std::string& name, int count) {
  std::vector<FakeArg> args;
  for (int i = 0; i < count; ++i) args.push_back({"p" + std::to_string(i), LR_ARG_GLOBAL_BUFFER, 8});
  return make_kernel(name, args);
}

inline std::vector<std::byte> pointer_args(std::initializer_list<uintptr_t> pointers) {
  std::vector<std::byte> out(pointers.size() * 8);
  size_t i = 0;
  for (uintptr_t p : pointers) std::memcpy(out.data() + 8 * i++, &p, 8);
  return out;
}

inline rt::graph::DeclaredAccess access(uintptr_t p, rt::graph::AccessMode mode, uint64_t bytes = 0,
                                        uint64_t offset = 0) {
  return {p, offset, bytes, mode, true};
}

// Fake device memory: four 4 KiB buffers at made-up addresses (never touched).
constexpr uintptr_t kBufA = 0x100000, kBufB = 0x200000, kBufC = 0x300000, kBufD = 0x400000;
constexpr uint64_t kBufBytes = 4096;

inline rt::graph::AllocationTable fake_allocations(int buffers = 16) {
  rt::graph::AllocationTable t;
  for (int i = 0; i < buffers; ++i) t.add(0x100000 * uintptr_t(i + 1), kBufBytes);
  t.finish();
  return t;
}
inline uintptr_t buf(int i) { return 0x100000 * uintptr_t(i + 1); }

inline rt::LaunchConfig one_group() { return {}; }

}  // namespace lrrt::test
