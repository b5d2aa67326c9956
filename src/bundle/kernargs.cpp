#include "lrrt/bundle/kernargs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <string_view>
#include <cstring>

namespace lrrt::bundle {

KernargLayout layout_kernargs(const std::vector<ArgSpec>& args) {
  KernargLayout L;
  uint32_t cursor = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    const ArgSpec& a = args[i];
    ArgSlot s;
    s.size = a.size();
    s.pointer = a.kind == ArgSpec::Kind::Buffer || a.null_pointer;
    // A tensor map's 64 bytes are of the constant bank's address, which a
    // cubin's own offsets already account for (at_kernel_offsets: 48 on
    // sm_90); an explicit offset of one need only keep its 16-byte words.
    const uint32_t align = a.align();
    const uint32_t offset_align = a.kind == ArgSpec::Kind::TensorMap ? 16 : align;
    if (a.offset) {
      if (*a.offset % offset_align != 0)
        throw ManifestError(a.pointer + "/offset",
                            fmt::format("offset {} is not a multiple of the argument's alignment {}", *a.offset, offset_align));
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
    // The segment is padded to 8 at most for a tensor map: the cuda queue
    // passes a kernel's own parameter bytes, accepting padding up to 8.
    L.align = std::max(L.align, a.kind == ArgSpec::Kind::TensorMap ? 8u : align);
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

uint32_t declared_alignment(std::string_view type_name) {
  constexpr std::string_view prefix = ".align ";
  if (type_name.substr(0, prefix.size()) != prefix) return 0;
  uint64_t n = 0;
  size_t i = prefix.size();
  for (; i < type_name.size() && type_name[i] >= '0' && type_name[i] <= '9' && n <= UINT32_MAX; ++i) n = n * 10 + uint64_t(type_name[i] - '0');
  return i > prefix.size() && n <= UINT32_MAX ? static_cast<uint32_t>(n) : 0;
}

ScalarFamily scalar_family(std::string_view type_name) {
  std::string t;
  for (char c : type_name)
    if (!std::isspace(static_cast<unsigned char>(c))) t += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* qualifier : {"const", "volatile"})
    for (size_t at; (at = t.find(qualifier)) != std::string::npos;) t.erase(at, std::strlen(qualifier));
  if (t.empty() || t.find_first_of("*&[") != std::string::npos) return ScalarFamily::Unknown;
  static const std::set<std::string> floats = {"float", "double", "half", "_float16", "__half", "__bf16", "bfloat16",
                                               "__nv_bfloat16", "hip_bfloat16", "f16", "f32", "f64", "bf16"};
  static const std::set<std::string> integers = {
      "int",      "signed",   "signedint", "unsigned", "unsignedint", "long",     "signedlong", "unsignedlong",
      "longint",  "longlong", "unsignedlonglong", "short", "unsignedshort", "char", "signedchar", "unsignedchar",
      "bool",     "_bool",    "int8_t",   "int16_t",  "int32_t",  "int64_t",  "uint8_t",  "uint16_t", "uint32_t",
      "uint64_t", "size_t",   "ptrdiff_t", "s8",      "s16",      "s32",      "s64",      "u8",       "u16",
      "u32",      "u64"};
  if (floats.count(t)) return ScalarFamily::Float;
  if (integers.count(t)) return ScalarFamily::Integer;
  return ScalarFamily::Unknown;
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
    else if (s.size != k.size && args[i].kind == ArgSpec::Kind::Bytes)
      // A struct or raw bytes must be exactly the kernel's by-value argument.
      what = args[i].is_struct
                 ? fmt::format("args[{}]{} is a struct of {} bytes but the kernel's argument {} is {} bytes ({})", i,
                               args[i].name.empty() ? "" : " '" + args[i].name + "'", s.size, i, k.size,
                               s.size > k.size ? "wider" : "narrower")
                 : fmt::format("args[{}]{} is a bytes argument of {} bytes but the kernel's argument {} is {} bytes ({})", i,
                               args[i].name.empty() ? "" : " '" + args[i].name + "'", s.size, i, k.size,
                               s.size > k.size ? "wider" : "narrower");
    else if (s.size != k.size)
      what = fmt::format("is {} bytes ({}) but the kernel's argument {} is {} bytes", s.size,
                         s.pointer ? "pointer" : std::string(dtype_name(args[i].type)), i, k.size);
    else if (s.offset != k.offset)
      what = fmt::format("lands at offset {} but the kernel's argument {} is at offset {}", s.offset, i, k.offset);
    else if (args[i].kind == ArgSpec::Kind::Bytes && args[i].is_struct && declared_alignment(k.type_name) &&
             declared_alignment(k.type_name) != args[i].align())
      // Same bytes, other alignment: the struct the kernel was compiled with is not this one.
      what = fmt::format("args[{}]{} is a struct aligned to {} bytes but the kernel's argument {}{} is declared aligned to {} "
                         "(`{}`); give the struct \"align\": {} if the kernel's is right",
                         i, args[i].name.empty() ? "" : " '" + args[i].name + "'", args[i].align(), i,
                         k.name.empty() ? "" : " (" + k.name + ")", declared_alignment(k.type_name), k.type_name,
                         declared_alignment(k.type_name));
    else if (!s.pointer && args[i].kind == ArgSpec::Kind::Scalar) {
      // Same size, other kind of number: 2u read as a float is 2.8e-45.
      const ScalarFamily kernel_family = scalar_family(k.type_name);
      const ScalarFamily given = dtype_is_float(args[i].type) ? ScalarFamily::Float : ScalarFamily::Integer;
      if (kernel_family != ScalarFamily::Unknown && kernel_family != given)
        what = fmt::format("is {} ({}) but the kernel's argument {}{} is {} ({})", dtype_name(args[i].type),
                           given == ScalarFamily::Float ? "a float" : "an integer", i,
                           k.name.empty() ? "" : " (" + k.name + ")", k.type_name,
                           kernel_family == ScalarFamily::Float ? "a float" : "an integer");
    }
    if (!what.empty()) throw ManifestError(args[i].pointer, what + "; " + expected);
  }
}

std::vector<ArgSpec> at_kernel_offsets(const std::vector<ArgSpec>& args, const std::vector<KernelArg>& kernel_args) {
  const bool has_map = std::any_of(args.begin(), args.end(), [](const ArgSpec& a) { return a.kind == ArgSpec::Kind::TensorMap; });
  const bool any_offset = std::any_of(args.begin(), args.end(), [](const ArgSpec& a) { return a.offset.has_value(); });
  if (!has_map || any_offset || args.size() != kernel_args.size()) return args;
  std::vector<ArgSpec> out = args;
  for (size_t i = 0; i < out.size(); ++i) out[i].offset = kernel_args[i].offset;
  return out;
}

std::vector<std::byte> pack_kernargs(const std::vector<ArgSpec>& args, const KernargLayout& layout,
                                     const std::vector<uint64_t>& buffer_addresses, uint32_t min_size) {
  std::vector<std::byte> out(std::max(layout.size, min_size), std::byte{0});
  for (size_t i = 0; i < args.size(); ++i) {
    const ArgSlot& s = layout.slots[i];
    if (args[i].kind == ArgSpec::Kind::TensorMap) {
      continue;  // encoded on the device (LoadedKernel::pack_args)
    } else if (args[i].kind == ArgSpec::Kind::Buffer) {
      const uint64_t addr = buffer_addresses.at(args[i].buffer);
      std::memcpy(out.data() + s.offset, &addr, 8);
    } else if (args[i].kind == ArgSpec::Kind::Bytes) {
      std::memcpy(out.data() + s.offset, args[i].blob.data(), s.size);
      for (const auto& f : args[i].pointer_fields) {
        const uint64_t addr = buffer_addresses.at(f.buffer) + f.range_offset;
        std::memcpy(out.data() + s.offset + f.offset, &addr, 8);
      }
    } else {
      std::memcpy(out.data() + s.offset, args[i].bytes.data(), s.size);
    }
  }
  return out;
}

std::vector<BufferUse> buffer_uses(const std::vector<ArgSpec>& args) {
  std::vector<BufferUse> out;
  for (size_t i = 0; i < args.size(); ++i) {
    const ArgSpec& a = args[i];
    if (a.kind == ArgSpec::Kind::Buffer)
      out.push_back({i, a.buffer, a.access, a.range_offset, a.range_bytes, 0, false, "", fmt::format("argument {}", i)});
    else if (a.kind == ArgSpec::Kind::TensorMap)  // its access is its own (read by default; undeclared in a step)
      out.push_back({i, a.buffer, a.access, 0, 0, 0, false, "", fmt::format("argument {} (a tensor map)", i)});
    else if (a.kind == ArgSpec::Kind::Bytes)
      for (const auto& f : a.pointer_fields)
        out.push_back({i, f.buffer, f.access, f.range_offset, f.range_bytes, f.offset, true, f.path,
                       fmt::format("argument {} field {}", i, f.path)});
  }
  return out;
}

void SequencePatch::apply(ArgSpec& a, size_t k) const {
  if (field.empty()) {
    a.value = values[k];
    a.bytes = encoded[k];
    return;
  }
  std::memcpy(a.blob.data() + field_offset, encoded[k].data(), dtype_size(type));
  for (auto& f : a.scalar_fields)
    if (f.offset == field_offset) f.value = values[k];
}

}  // namespace lrrt::bundle
