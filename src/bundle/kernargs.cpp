#include "lrrt/bundle/kernargs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace lrrt::bundle {

KernargLayout layout_kernargs(const std::vector<ArgSpec>& args) {
  KernargLayout L;
  uint32_t cursor = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    const ArgSpec& a = args[i];
    ArgSlot s;
    s.size = a.size();
    s.pointer = a.kind == ArgSpec::Kind::Buffer;
    const uint32_t align = a.align();
    if (a.offset) {
      if (*a.offset % align != 0)
        throw ManifestError(a.pointer + "/offset", fmt::format("offset {} is not a multiple of the argument's alignment {}", *a.offset, align));
      s.offset = *a.offset;
      for (size_t j = 0; j < i; ++j) {
        const ArgSlot& o = L.slots[j];
        if (s.offset < o.offset + o.size && o.offset < s.offset + s.size)
          throw ManifestError(a.pointer + "/offset", fmt::format("bytes [{}, {}) overlap argument {} at [{}, {})", s.offset,
                                                                  s.offset + s.size, j, o.offset, o.offset + o.size));
      }
    } else {
      s.offset = (cursor + align - 1) / align * align;
    }
    cursor = std::max(cursor, s.offset + s.size);
    L.align = std::max(L.align, align);
    L.slots.push_back(s);
  }
  L.size = (cursor + L.align - 1) / L.align * L.align;
  return L;
}

std::string describe_kernel_layout(const std::vector<KernelArg>& args) {
  if (args.empty()) return "no arguments";
  std::string out;
  for (size_t i = 0; i < args.size(); ++i) {
    const auto& a = args[i];
    out += fmt::format("{}({}){}: offset {}, {} bytes, {}", i ? "; " : "", i, a.name.empty() ? "" : " " + a.name, a.offset,
                       a.size, !a.kind_known ? "pointer or value" : a.pointer ? "pointer" : "value");
  }
  return out;
}

void check_kernargs(const std::vector<ArgSpec>& args, const KernargLayout& layout, const std::vector<KernelArg>& kernel_args,
                    const std::string& kernel_name) {
  const std::string expected = fmt::format("kernel \"{}\" expects {} argument(s): {}", kernel_name, kernel_args.size(),
                                           describe_kernel_layout(kernel_args));
  if (args.size() != kernel_args.size())
    throw ManifestError("/args", fmt::format("too {} arguments: the manifest gives {}, {}",
                                             args.size() < kernel_args.size() ? "few" : "many", args.size(), expected));
  for (size_t i = 0; i < args.size(); ++i) {
    const ArgSlot& s = layout.slots[i];
    const KernelArg& k = kernel_args[i];
    std::string what;
    if (k.kind_known && s.pointer != k.pointer)
      what = fmt::format("is a {} but the kernel's argument {} is a {}", s.pointer ? "buffer (pointer)" : "scalar value", i,
                         k.pointer ? "pointer" : "value");
    else if (s.size != k.size)
      what = fmt::format("is {} bytes ({}) but the kernel's argument {} is {} bytes", s.size,
                         s.pointer ? "pointer" : std::string(dtype_name(args[i].type)), i, k.size);
    else if (s.offset != k.offset)
      what = fmt::format("lands at offset {} but the kernel's argument {} is at offset {}", s.offset, i, k.offset);
    if (!what.empty()) throw ManifestError(args[i].pointer, what + "; " + expected);
  }
}

std::vector<std::byte> pack_kernargs(const std::vector<ArgSpec>& args, const KernargLayout& layout,
                                     const std::vector<uint64_t>& buffer_addresses, uint32_t min_size) {
  std::vector<std::byte> out(std::max(layout.size, min_size), std::byte{0});
  for (size_t i = 0; i < args.size(); ++i) {
    const ArgSlot& s = layout.slots[i];
    if (args[i].kind == ArgSpec::Kind::Buffer) {
      const uint64_t addr = buffer_addresses.at(args[i].buffer);
      std::memcpy(out.data() + s.offset, &addr, 8);
    } else {
      std::memcpy(out.data() + s.offset, args[i].bytes.data(), s.size);
    }
  }
  return out;
}

}  // namespace lrrt::bundle
