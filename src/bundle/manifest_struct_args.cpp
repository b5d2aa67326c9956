// By-value aggregate arguments: structs laid out like C ({"struct": [...]})
// and raw bytes ({"bytes": "hex"}, {"bytes_file": "arg.bin"}). A struct's
// pointer fields are buffer uses (ArgPointerField), its named scalars are
// patchable (ArgScalarField); docs/manifest.md, "Struct and bytes arguments".
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "lrrt/bundle/input_file.hpp"
#include "lrrt/bundle/text.hpp"
#include "manifest_parse.hpp"

namespace lrrt::bundle::manifest_parse {
namespace {

// An argument larger than any kernarg segment a backend takes is a mistake.
constexpr uint64_t kMaxAggregateBytes = 64 * 1024;
constexpr uint64_t kMaxAlign = 256;

uint32_t round_up(uint64_t v, uint64_t a) { return static_cast<uint32_t>((v + a - 1) / a * a); }
bool power_of_two(uint64_t v) { return v && !(v & (v - 1)); }

// A laid-out struct (or one of its fields): bytes, alignment, and the
// pointer and named scalar fields at offsets relative to its start.
struct Piece {
  std::vector<std::byte> bytes;
  uint32_t align = 1;
  std::vector<ArgPointerField> pointers;
  std::vector<ArgScalarField> scalars;
};

class StructParser {
 public:
  StructParser(const Manifest& m, bool step) : m_(m), step_(step) {}

  // fields: the array of a "struct"; o: the object holding it (its "align"
  // and "size"); label: "args[1]" or "args[1].struct[2] 'inner'"; path: the
  // dotted name ("" when unnamed).
  Piece parse_struct(const Obj& o, const std::string& label, const std::string& path, size_t depth) {
    const std::string sp = o.ptr("struct");
    if (depth >= kMaxStructDepth)
      throw ManifestError(sp, fmt::format("{}: structs nest deeper than {} levels", label, kMaxStructDepth));
    const json& fields = o.req("struct");
    if (!fields.is_array() || fields.empty())
      throw ManifestError(sp, fmt::format("{}: expected a non-empty array of fields, got {}", label, describe(fields)));
    std::optional<uint32_t> pack;
    if (auto* a = o.opt("align")) {
      const uint64_t v = get_uint(*a, o.ptr("align"), 1, kMaxAlign);
      if (!power_of_two(v)) throw ManifestError(o.ptr("align"), fmt::format("{}: align {} is not a power of two", label, v));
      pack = static_cast<uint32_t>(v);
    }
    Piece out;
    std::map<std::string, size_t> names;  // field name -> its index
    uint64_t cursor = 0;
    uint32_t natural = 1;
    for (size_t k = 0; k < fields.size(); ++k) {
      const std::string fp = fmt::format("{}/{}", sp, k);
      Obj f(fields[k], fp, {"name", "type", "value", "buffer", "struct", "pad", "offset", "align", "size", "access", "range"});
      f.finish();
      std::string name;
      if (auto* n = f.opt("name")) name = get_string(*n, f.ptr("name"));
      // A dotted name ("p.x") must pick one field: for patches, and for the
      // plan's and errors' naming of pointer fields.
      if (!name.empty()) {
        if (auto [it, fresh] = names.emplace(name, k); !fresh)
          throw ManifestError(f.ptr("name"), fmt::format("{}.struct[{}]: the name '{}' is already struct[{}]'s", label, k,
                                                         printable(name, 60), it->second));
      }
      const std::string flabel = fmt::format("{}.struct[{}]{}", label, k, name.empty() ? "" : " '" + printable(name, 60) + "'");
      const std::string fpath = path.empty() || name.empty() ? std::string() : path + "." + name;
      Piece p = parse_field(f, flabel, fpath, depth);
      // Packed (#pragma pack(A)): a field aligns to at most A.
      const uint32_t falign = pack ? std::min(p.align, *pack) : p.align;
      natural = std::max(natural, falign);
      uint64_t at = round_up(cursor, falign);
      if (auto* off = f.opt("offset")) {
        const uint64_t want = get_uint(*off, f.ptr("offset"), 0, kMaxAggregateBytes);
        if (want % falign)
          throw ManifestError(f.ptr("offset"), fmt::format("{}: offset {} is not a multiple of the field's alignment {}", flabel,
                                                           want, falign));
        if (want < cursor)
          throw ManifestError(f.ptr("offset"), fmt::format("{}: offset {} overlaps the fields before it (they end at byte {})",
                                                           flabel, want, cursor));
        at = want;
      }
      if (at + p.bytes.size() > kMaxAggregateBytes)
        throw ManifestError(fp, fmt::format("{}: the struct grows past {} bytes", flabel, kMaxAggregateBytes));
      if (out.bytes.size() < at + p.bytes.size()) out.bytes.resize(at + p.bytes.size(), std::byte{0});
      std::copy(p.bytes.begin(), p.bytes.end(), out.bytes.begin() + static_cast<std::ptrdiff_t>(at));
      for (auto& q : p.pointers) {
        q.offset += static_cast<uint32_t>(at);
        out.pointers.push_back(std::move(q));
      }
      for (auto& q : p.scalars) {
        q.offset += static_cast<uint32_t>(at);
        out.scalars.push_back(std::move(q));
      }
      cursor = at + p.bytes.size();
    }
    // Over-aligned (alignas(A)) when A is more than the fields need.
    out.align = pack ? *pack : natural;
    uint64_t size = round_up(cursor, out.align);
    if (auto* s = o.opt("size")) {
      const uint64_t want = get_uint(*s, o.ptr("size"), 1, kMaxAggregateBytes);
      if (want < cursor)
        throw ManifestError(o.ptr("size"), fmt::format("{}: size {} is smaller than its fields, which end at byte {}", label, want,
                                                       cursor));
      if (want % out.align)
        throw ManifestError(o.ptr("size"), fmt::format("{}: size {} is not a multiple of the struct's alignment {}", label, want,
                                                       out.align));
      size = want;
    }
    out.bytes.resize(size, std::byte{0});
    return out;
  }

 private:
  Piece parse_field(const Obj& f, const std::string& label, const std::string& path, size_t depth) {
    const int kinds = f.has("type") + f.has("buffer") + f.has("struct") + f.has("pad");
    if (kinds != 1)
      throw ManifestError(f.ptr(), fmt::format("{}: a field is exactly one of a scalar (\"type\" and \"value\"), a pointer "
                                               "(\"buffer\"), a nested \"struct\" or padding (\"pad\")",
                                               label));
    auto only = [&](const char* key, const char* which) {
      if (f.has(key)) throw ManifestError(f.ptr(key), fmt::format("{}: only {} take \"{}\"", label, which, key));
    };
    if (!f.has("struct")) {
      only("align", "nested structs");
      only("size", "nested structs");
    }
    if (!f.has("buffer")) {
      only("access", "pointer fields");
      only("range", "pointer fields");
    }
    if (!f.has("type")) only("value", "scalar fields");
    Piece p;
    if (f.has("struct")) return parse_struct(f, label, path, depth + 1);
    if (f.has("pad")) {
      p.bytes.resize(get_uint(*f.opt("pad"), f.ptr("pad"), 1, kMaxAggregateBytes), std::byte{0});
      return p;
    }
    if (f.has("buffer")) {
      ArgPointerField q;
      q.buffer = find_buffer_index(m_, *f.opt("buffer"), f.ptr("buffer"));
      q.pointer = f.ptr();
      q.path = path.empty() ? label : path;
      if (!step_ && (f.has("access") || f.has("range")))
        throw ManifestError(f.ptr(f.has("access") ? "access" : "range"),
                            fmt::format("{}: a single kernel's buffers declare \"access\" on the buffer; only sequence steps "
                                        "give it per argument",
                                        label));
      if (auto* acc = f.opt("access")) q.access = parse_access(*acc, f.ptr("access"));
      if (auto* r = f.opt("range")) parse_range(m_.buffers[q.buffer], *r, f.ptr("range"), q.range_offset, q.range_bytes);
      p.bytes.resize(8, std::byte{0});
      p.align = 8;
      p.pointers.push_back(std::move(q));
      return p;
    }
    // A scalar: the same reading as a scalar argument's.
    const std::string type = f.opt("type")->is_string() ? f.opt("type")->get<std::string>() : "";
    if (!parse_dtype(type))
      throw ManifestError(f.ptr("type"), fmt::format("{}: unknown field type {} (expected one of: {})", label,
                                                     type.empty() ? describe(*f.opt("type")) : "\"" + printable(type, 40) + "\"",
                                                     dtype_list()));
    ArgSpec s;
    parse_scalar(m_, f, s, label);
    p.bytes.assign(s.bytes.begin(), s.bytes.begin() + s.size());
    p.align = s.align();
    if (!path.empty()) p.scalars.push_back({0, s.type, s.value, path, f.ptr()});
    return p;
  }

  const Manifest& m_;
  bool step_;
};

uint8_t hex_digit(char c) {
  if (c >= '0' && c <= '9') return static_cast<uint8_t>(c - '0');
  if (c >= 'a' && c <= 'f') return static_cast<uint8_t>(c - 'a' + 10);
  if (c >= 'A' && c <= 'F') return static_cast<uint8_t>(c - 'A' + 10);
  return 0xFF;
}

std::vector<std::byte> parse_hex(const json& v, const std::string& ptr, const std::string& label) {
  const std::string s = get_string(v, ptr);
  if (s.size() % 2)
    throw ManifestError(ptr, fmt::format("{}: {} hex digits is not a whole number of bytes", label, s.size()));
  if (s.size() / 2 > kMaxAggregateBytes)
    throw ManifestError(ptr, fmt::format("{}: more than {} bytes", label, kMaxAggregateBytes));
  std::vector<std::byte> out(s.size() / 2);
  for (size_t i = 0; i < s.size(); i += 2) {
    const uint8_t hi = hex_digit(s[i]), lo = hex_digit(s[i + 1]);
    if (hi == 0xFF || lo == 0xFF)
      throw ManifestError(ptr, fmt::format("{}: \"{}\" at character {} is not a hex digit", label,
                                           printable(s.substr(hi == 0xFF ? i : i + 1, 1), 4), hi == 0xFF ? i : i + 1));
    out[i / 2] = std::byte{static_cast<uint8_t>(hi << 4 | lo)};
  }
  return out;
}

}  // namespace

void parse_aggregate_arg(const Manifest& m, const Obj& o, ArgSpec& a, const std::string& label_base, bool step) {
  const std::string label = a.name.empty() ? label_base : fmt::format("{} '{}'", label_base, printable(a.name, 60));
  const int forms = o.has("struct") + o.has("bytes") + o.has("bytes_file");
  if (forms != 1 || o.has("buffer") || o.has("type") || o.has("value"))
    throw ManifestError(o.ptr(), fmt::format("{}: give exactly one of \"struct\", \"bytes\", \"bytes_file\", \"buffer\" or a "
                                             "scalar's \"type\" and \"value\"",
                                             label));
  for (const char* key : {"bounds", "access", "range"})
    if (o.has(key))
      throw ManifestError(o.ptr(key), fmt::format("{}: a {} argument takes no \"{}\"{}", label,
                                                  o.has("struct") ? "struct" : "bytes", key,
                                                  o.has("struct") ? " (its pointer fields declare access)" : ""));
  a.kind = ArgSpec::Kind::Bytes;
  if (o.has("struct")) {
    Piece p = StructParser(m, step).parse_struct(o, label, a.name, 0);
    a.blob = std::move(p.bytes);
    a.blob_align = p.align;
    a.is_struct = true;
    a.pointer_fields = std::move(p.pointers);
    a.scalar_fields = std::move(p.scalars);
    return;
  }
  if (o.has("bytes")) {
    a.blob = parse_hex(*o.opt("bytes"), o.ptr("bytes"), label);
  } else {
    const fs::path file = resolve_input_file(m, *o.opt("bytes_file"), o.ptr("bytes_file"));
    try {
      InputFile in(file);
      if (in.size() > kMaxAggregateBytes)
        throw ManifestError(o.ptr("bytes_file"), fmt::format("{}: {} has {} bytes, more than {}", label, file.string(), in.size(),
                                                             kMaxAggregateBytes));
      a.blob.resize(static_cast<size_t>(in.size()));
      in.read_at(0, a.blob);
    } catch (const ManifestError&) {
      throw;
    } catch (const InputError& e) {
      throw ManifestError(o.ptr("bytes_file"), fmt::format("{}: {}", label, e.what()));
    }
  }
  if (a.blob.empty()) throw ManifestError(o.ptr(o.has("bytes") ? "bytes" : "bytes_file"), label + ": no bytes");
  if (auto* s = o.opt("size")) {
    const uint64_t want = get_uint(*s, o.ptr("size"), 1, kMaxAggregateBytes);
    if (want != a.blob.size())
      throw ManifestError(o.ptr("size"), fmt::format("{}: has {} bytes, \"size\" says {}", label, a.blob.size(), want));
  }
  // Raw bytes have no type to align by: the largest power of two up to 8
  // that divides their size (a 16-byte struct's bytes at 8), or "align".
  a.blob_align = 1;
  while (a.blob_align < 8 && a.blob.size() % (a.blob_align * 2) == 0) a.blob_align *= 2;
  if (auto* al = o.opt("align")) {
    const uint64_t v = get_uint(*al, o.ptr("align"), 1, kMaxAlign);
    if (!power_of_two(v)) throw ManifestError(o.ptr("align"), fmt::format("{}: align {} is not a power of two", label, v));
    a.blob_align = static_cast<uint32_t>(v);
  }
}

}  // namespace lrrt::bundle::manifest_parse
