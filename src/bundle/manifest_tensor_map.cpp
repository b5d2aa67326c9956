// A tensor map argument: {"tensor_map": {"buffer": ..., "box": [...], ...}}
// (docs/manifest.md, "Tensor maps"). Shapes are written outermost first, like
// a buffer's shape, and strides in elements, like torch and Triton; the
// descriptor CUDA takes is innermost first with byte strides, so they are
// reversed here. The CUDA driver's rules are checked now, without a device
// (lr_tensor_map_validate), and reported at the manifest's field.
#include <fmt/format.h>

#include <cstring>

#include "lrrt/bundle/text.hpp"
#include "lrrt/lrrt.hpp"
#include "manifest_parse.hpp"

namespace lrrt::bundle {

using nlohmann::json;

namespace manifest_parse {
namespace {

// The TMA element type of a buffer type. TMA copies bits, so i8/i16 travel
// as u8/u16 (only a NaN fill needs a float type, and it checks that).
uint32_t tma_dtype(DType t) {
  switch (t) {
    case DType::u8:
    case DType::i8: return LR_TENSOR_MAP_U8;
    case DType::u16:
    case DType::i16: return LR_TENSOR_MAP_U16;
    case DType::u32: return LR_TENSOR_MAP_U32;
    case DType::i32: return LR_TENSOR_MAP_I32;
    case DType::u64: return LR_TENSOR_MAP_U64;
    case DType::i64: return LR_TENSOR_MAP_I64;
    case DType::f16: return LR_TENSOR_MAP_F16;
    case DType::bf16: return LR_TENSOR_MAP_BF16;
    case DType::f32: return LR_TENSOR_MAP_F32;
    case DType::f64: return LR_TENSOR_MAP_F64;
  }
  return LR_TENSOR_MAP_U8;
}

uint32_t pick_word(const json& v, const std::string& ptr, std::initializer_list<const char*> words) {
  const std::string s = get_string(v, ptr);
  uint32_t i = 0;
  std::string list;
  for (const char* w : words) {
    if (s == w) return i;
    list += (i ? ", " : "") + std::string(w);
    ++i;
  }
  throw ManifestError(ptr, fmt::format("unknown value \"{}\" (expected {})", printable(s, 40), list));
}

// An array of `rank` sizes (rank 0: any of 1 to 5 entries) in [min, max];
// entries may be count_of/shape_of.
std::vector<uint64_t> sizes(const Manifest& m, const json& v, const std::string& ptr, size_t rank, uint64_t min, uint64_t max) {
  if (!v.is_array() || v.empty() || v.size() > LR_TENSOR_MAP_MAX_RANK || (rank && v.size() != rank))
    throw ManifestError(ptr, rank ? fmt::format("expected an array of {} integers (one per dimension of \"dims\"), got {}", rank,
                                                describe(v))
                                  : "expected an array of 1 to 5 integers (outermost first), got " + describe(v));
  std::vector<uint64_t> out;
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string p = fmt::format("{}/{}", ptr, i);
    const auto ref = size_reference(m, v[i], p);
    const uint64_t n = ref ? *ref : get_uint(v[i], p, min, max);
    if (n < min || n > max) throw ManifestError(p, fmt::format("{} is not {} to {}", n, min, max));
    out.push_back(n);
  }
  return out;
}

// lr_tensor_map_validate's field ("box_dims[0]") as the manifest's pointer.
std::string field_pointer(const std::string& message, const std::string& tp, size_t rank) {
  const size_t at = message.find("tensor map ");
  if (at == std::string::npos) return tp;
  const std::string rest = message.substr(at + 11);
  const std::string field = rest.substr(0, rest.find_first_of("[:"));
  size_t index = 0;
  if (rest.size() > field.size() && rest[field.size()] == '[') index = std::strtoul(rest.c_str() + field.size() + 1, nullptr, 10);
  auto reversed = [&](const char* name, size_t n) { return fmt::format("{}/{}/{}", tp, name, n > index ? n - 1 - index : 0); };
  if (field == "box_dims") return reversed("box", rank);
  if (field == "element_strides") return reversed("element_strides", rank);
  if (field == "global_dims") return reversed("dims", rank);
  if (field == "global_strides") return reversed("strides", rank - 1);  // strides[rank-1] is the unit one
  if (field == "swizzle" || field == "interleave" || field == "oob_fill" || field == "l2_promotion") return tp + "/" + field;
  if (field == "rank") return tp + "/dims";
  return tp + "/buffer";  // dtype, global_address
}

}  // namespace

bool is_tensor_map_arg(const json& v) { return v.is_object() && v.contains("tensor_map"); }

ArgSpec parse_tensor_map_arg(const Manifest& m, const json& v, const std::string& ptr, const std::string* step) {
  Obj outer(v, ptr, {"tensor_map", "name", "offset"});
  outer.finish();
  ArgSpec a;
  a.kind = ArgSpec::Kind::TensorMap;
  a.pointer = ptr;
  if (auto* n = outer.opt("name")) a.name = get_string(*n, outer.ptr("name"));
  if (auto* off = outer.opt("offset")) a.offset = static_cast<uint32_t>(get_uint(*off, outer.ptr("offset"), 0, 1u << 20));
  const std::string tp = outer.ptr("tensor_map");
  Obj o(outer.req("tensor_map"), tp,
        {"buffer", "dims", "strides", "box", "element_strides", "swizzle", "interleave", "l2_promotion", "oob_fill", "access"});
  o.finish();
  a.buffer = find_buffer_index(m, o.req("buffer", "the buffer the tensor map views"), o.ptr("buffer"));
  const BufferSpec& b = m.buffers[a.buffer];
  // A single launch takes a map as read unless told (the checks ask no more
  // of it). A sequence step leaves it undeclared: its fences then take the
  // buffer as read and written, since a kernel may store through a map
  // (docs/manifest.md, "Tensor maps").
  a.access = o.has("access") ? parse_access(*o.opt("access"), o.ptr("access")) : step ? Access::None : Access::Read;
  std::vector<uint64_t> dims;
  if (auto* d = o.opt("dims")) dims = sizes(m, *d, o.ptr("dims"), 0, 1, uint64_t(1) << 32);
  else if (b.shape.size() <= LR_TENSOR_MAP_MAX_RANK) dims = b.shape;
  else throw ManifestError(tp, fmt::format("buffer \"{}\" has {} dimensions, a tensor map at most 5: give \"dims\"", b.name, b.shape.size()));
  const size_t rank = dims.size();
  std::vector<uint64_t> strides(rank, 1);  // elements; dense by default
  if (auto* s = o.opt("strides")) {
    strides = sizes(m, *s, o.ptr("strides"), rank, 1, uint64_t(1) << 40);
    if (strides.back() != 1)
      throw ManifestError(fmt::format("{}/{}", o.ptr("strides"), rank - 1), "the innermost stride of a tensor map must be 1");
  } else {
    for (size_t i = rank - 1; i-- > 0;) strides[i] = strides[i + 1] * dims[i + 1];
  }
  const auto box = sizes(m, o.req("box", "the tile one TMA copy moves, outermost first"), o.ptr("box"), rank, 1, 256);
  std::vector<uint64_t> estrides(rank, 1);
  if (auto* e = o.opt("element_strides")) estrides = sizes(m, *e, o.ptr("element_strides"), rank, 1, 8);

  lr_tensor_map_desc_t& d = a.tensor_map.emplace().desc;
  d.dtype = tma_dtype(b.type);
  d.rank = static_cast<uint32_t>(rank);
  const uint64_t esize = dtype_size(b.type);
  for (size_t i = 0; i < rank; ++i) {
    const size_t r = rank - 1 - i;  // CUDA's dimension i is the manifest's r
    d.global_dims[i] = dims[r];
    d.box_dims[i] = static_cast<uint32_t>(box[r]);
    d.element_strides[i] = static_cast<uint32_t>(estrides[r]);
    if (i > 0) d.global_strides[i - 1] = strides[r] * esize;
  }
  if (auto* s = o.opt("swizzle")) d.swizzle = pick_word(*s, o.ptr("swizzle"), {"none", "32B", "64B", "128B"});
  if (auto* s = o.opt("interleave")) d.interleave = pick_word(*s, o.ptr("interleave"), {"none", "16B", "32B"});
  if (auto* s = o.opt("l2_promotion")) d.l2_promotion = pick_word(*s, o.ptr("l2_promotion"), {"none", "64B", "128B", "256B"});
  if (auto* s = o.opt("oob_fill")) d.oob_fill = pick_word(*s, o.ptr("oob_fill"), {"zero", "nan"});

  // The view must lie inside the buffer: its last element's byte.
  unsigned __int128 last = 0;
  for (size_t i = 0; i < rank; ++i) last += static_cast<unsigned __int128>(dims[i] - 1) * strides[i];
  if ((last + 1) * esize > b.bytes)
    throw ManifestError(o.ptr("dims"), fmt::format("buffer \"{}\" is too small: the tensor map's view reaches byte {}, the buffer "
                                                   "has {} bytes",
                                                   b.name, static_cast<uint64_t>((last + 1) * esize), b.bytes));
  // The driver's rules, at an address as aligned as lrrt's buffers (256).
  d.global_address = reinterpret_cast<void*>(uintptr_t(256));
  if (lr_tensor_map_validate(&d) != LR_SUCCESS) {
    const std::string why = lr_last_error_message();
    throw ManifestError(field_pointer(why, tp, rank), why.substr(why.find(": ") == std::string::npos ? 0 : why.find(": ") + 2));
  }
  d.global_address = nullptr;
  return a;
}

}  // namespace manifest_parse

void encode_tensor_map(lr_device_t device, const TensorMapSpec& spec, uint64_t address, std::byte* out128) {
  lr_tensor_map_desc_t d = spec.desc;
  d.global_address = reinterpret_cast<void*>(address);
  const lr_status_t s = lr_tensor_map_encode(device, &d, out128);
  if (s != LR_SUCCESS) throw lrrt::Error(s, lr_last_error_message());
}

std::string tensor_map_unsupported_reason(const lr_device_properties_t& p) {
  const std::string arch = p.arch;
  if (std::strcmp(p.backend, "cuda") == 0 && arch.rfind("sm_", 0) == 0 && std::atoi(arch.c_str() + 3) >= 90) return "";
  return fmt::format("a tensor map needs the cuda backend on sm_90+ (this device is {}, {})", p.backend, p.arch);
}

}  // namespace lrrt::bundle
