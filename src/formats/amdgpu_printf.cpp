#include "lrrt/formats/amdgpu_printf.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

namespace lrrt::formats::amdgpu {
namespace {

constexpr uint32_t kMaxArgs = 4096;          // far beyond any printf call
constexpr uint32_t kMaxArgBytes = 1u << 16;  // a %s of a 64 KiB literal
constexpr uint32_t kMaxWidth = 4096;         // width and precision

[[noreturn]] void bad_entry(std::string_view entry, const std::string& what) {
  // Entries come from the code object: quote a bounded, printable prefix.
  std::string shown;
  for (char c : entry.substr(0, 80)) shown += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (entry.size() > 80) shown += "...";
  throw FormatError(fmt::format("invalid amdhsa.printf entry '{}': {}", shown, what));
}

// A decimal field of at most 10 digits that fits in 32 bits.
std::optional<uint32_t> parse_u32(std::string_view s) {
  if (s.empty() || s.size() > 10) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + uint64_t(c - '0');
  }
  if (v > UINT32_MAX) return std::nullopt;
  return uint32_t(v);
}

// Undoes the escapes LLVM writes into the table (and only those, as ROCclr
// does): \a \b \f \n \r \v and \72 for ':'. Any other backslash is itself.
std::string unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '\\' && i + 1 < s.size()) {
      char n = s[i + 1];
      char r = 0;
      switch (n) {
        case 'a': r = '\a'; break;
        case 'b': r = '\b'; break;
        case 'f': r = '\f'; break;
        case 'n': r = '\n'; break;
        case 'r': r = '\r'; break;
        case 'v': r = '\v'; break;
        case '7':
          if (i + 2 < s.size() && s[i + 2] == '2') {
            out += ':';
            i += 2;
            continue;
          }
          break;
        default: break;
      }
      if (r) {
        out += r;
        ++i;
        continue;
      }
    }
    out += c;
  }
  return out;
}

uint64_t read_le(std::span<const std::byte> b, size_t offset, size_t size) {
  uint64_t v = 0;
  for (size_t i = 0; i < size; ++i) v |= uint64_t(std::to_integer<uint8_t>(b[offset + i])) << (8 * i);
  return v;
}

double half_to_double(uint16_t h) {
  const int sign = (h >> 15) & 1;
  const int exp = (h >> 10) & 0x1f;
  const int mant = h & 0x3ff;
  double v;
  if (exp == 0) v = std::ldexp(double(mant), -24);               // zero, subnormal
  else if (exp == 31) v = mant ? std::nan("") : INFINITY;         // inf, NaN
  else v = std::ldexp(double(mant | 0x400), exp - 25);
  return sign ? -v : v;
}

// One conversion specification, as written: %[flags][width][.precision]
// [vN][length]conversion.
struct Spec {
  std::string flags;
  std::optional<uint32_t> width;
  std::optional<uint32_t> precision;
  uint32_t vector = 0;  // 0: a scalar
  int length_bits = 0;  // 0: none; hh 8, h 16, hl 32, l/ll 64
  char conversion = 0;
  std::string text;  // the whole specification, for printing it as written
};

// Parses the specification starting at fmt[pos] == '%' (not "%%"); pos ends
// after it. FormatError for what lrrt cannot print.
Spec parse_spec(std::string_view fmt, size_t& pos) {
  const size_t start = pos++;
  Spec s;
  auto fail = [&](const std::string& what) -> void {
    throw FormatError(fmt::format("conversion '{}' {}", std::string(fmt.substr(start, std::min<size_t>(pos - start + 1, 16))), what));
  };
  while (pos < fmt.size() && std::strchr("-+ #0", fmt[pos]) && fmt[pos]) s.flags += fmt[pos++];
  auto number = [&](std::optional<uint32_t>& out) {
    uint64_t v = 0;
    size_t digits = 0;
    while (pos < fmt.size() && fmt[pos] >= '0' && fmt[pos] <= '9') {
      v = v * 10 + uint64_t(fmt[pos++] - '0');
      if (++digits > 9 || v > kMaxWidth) fail(fmt::format("has a width or precision over {}", kMaxWidth));
    }
    out = uint32_t(v);
  };
  if (pos < fmt.size() && fmt[pos] == '*') fail("takes its width from an argument ('*'), which lrrt cannot print");
  if (pos < fmt.size() && fmt[pos] >= '0' && fmt[pos] <= '9') number(s.width);
  if (pos < fmt.size() && fmt[pos] == '.') {
    ++pos;
    if (pos < fmt.size() && fmt[pos] == '*') fail("takes its precision from an argument ('*'), which lrrt cannot print");
    number(s.precision);  // "." alone is precision 0
  }
  if (pos < fmt.size() && fmt[pos] == 'v') {
    ++pos;
    if (fmt.substr(pos, 2) == "16") s.vector = 16, pos += 2;
    else if (pos < fmt.size() && std::strchr("2348", fmt[pos]) && fmt[pos]) s.vector = uint32_t(fmt[pos++] - '0');
    else fail("has a vector size other than 2, 3, 4, 8 or 16");
  }
  if (fmt.substr(pos, 2) == "hh") s.length_bits = 8, pos += 2;
  else if (fmt.substr(pos, 2) == "hl") s.length_bits = 32, pos += 2;
  else if (fmt.substr(pos, 2) == "ll") s.length_bits = 64, pos += 2;
  else if (pos < fmt.size() && fmt[pos] == 'h') s.length_bits = 16, ++pos;
  else if (pos < fmt.size() && fmt[pos] == 'l') s.length_bits = 64, ++pos;
  if (pos >= fmt.size()) {
    --pos;
    fail("is cut off at the end of the format");
  }
  const char c = fmt[pos];
  if (c == 'n') fail("(%n) writes to memory; lrrt does not print it");
  if (!std::strchr("diouxXfFeEgGaAcsp", c) || c == 0) fail("has a conversion lrrt does not know");
  s.conversion = c;
  ++pos;
  s.text = std::string(fmt.substr(start, pos - start));
  return s;
}

// "%" + flags + width + precision, the common head of the C format.
std::string c_head(const Spec& s, bool with_precision) {
  std::string f = "%" + s.flags;
  if (s.width) f += std::to_string(*s.width);
  if (with_precision && s.precision) f += "." + std::to_string(*s.precision);
  return f;
}

template <typename T>
void append_c(std::string& out, const std::string& cfmt, T value) {
  // cfmt is built by c_head and a conversion lrrt chose: the value's type is
  // the one the conversion takes.
  char small[128];
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
  int n = std::snprintf(small, sizeof small, cfmt.c_str(), value);
  if (n < 0) throw FormatError("a conversion could not be formatted");
  if (size_t(n) < sizeof small) {
    out.append(small, size_t(n));
    return;
  }
  std::string big(size_t(n) + 1, '\0');
  std::snprintf(big.data(), big.size(), cfmt.c_str(), value);
#pragma GCC diagnostic pop
  big.resize(size_t(n));
  out += big;
}

// Formats one scalar element of `size` bytes at `offset` of `arg`.
void format_element(std::string& out, const Spec& s, std::span<const std::byte> arg, size_t offset, size_t size) {
  const char c = s.conversion;
  auto bad_size = [&]() -> void {
    throw FormatError(fmt::format("conversion '{}' cannot print a {}-byte value", s.text, size));
  };
  if (std::strchr("fFeEgGaA", c)) {
    double v;
    if (size == 2) v = half_to_double(uint16_t(read_le(arg, offset, 2)));
    else if (size == 4) {
      uint32_t bits = uint32_t(read_le(arg, offset, 4));
      float f;
      std::memcpy(&f, &bits, 4);
      v = f;
    } else if (size == 8) {
      uint64_t bits = read_le(arg, offset, 8);
      std::memcpy(&v, &bits, 8);
    } else {
      bad_size();
      return;
    }
    append_c(out, c_head(s, true) + c, v);
    return;
  }
  if (size != 1 && size != 2 && size != 4 && size != 8) bad_size();
  const uint64_t raw = read_le(arg, offset, size);
  if (c == 'p') {
    const std::string text = fmt::format("0x{:x}", raw);
    append_c(out, c_head(s, false) + 's', text.c_str());
    return;
  }
  if (c == 'c') {
    append_c(out, c_head(s, false) + 'c', int(uint8_t(raw)));
    return;
  }
  int bits = int(size) * 8;
  if (s.length_bits) bits = std::min(bits, s.length_bits);
  const uint64_t mask = bits == 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1;
  const uint64_t u = raw & mask;
  if (c == 'd' || c == 'i') {
    const uint64_t sign = uint64_t(1) << (bits - 1);
    const long long v = (u & sign) ? (long long)(u | ~mask) : (long long)u;
    append_c(out, c_head(s, true) + "ll" + c, v);
  } else {
    append_c(out, c_head(s, true) + "ll" + c, (unsigned long long)u);
  }
}

}  // namespace

uint64_t PrintfFormat::record_bytes() const {
  uint64_t n = 4;
  for (uint32_t s : arg_sizes) n += s;
  return n;
}

PrintfFormat parse_printf_format(std::string_view entry) {
  auto field = [&](size_t& pos, const char* what) -> uint32_t {
    size_t colon = entry.find(':', pos);
    if (colon == std::string_view::npos) bad_entry(entry, fmt::format("it ends before its {}", what));
    auto v = parse_u32(entry.substr(pos, colon - pos));
    if (!v) bad_entry(entry, fmt::format("its {} is not a number", what));
    pos = colon + 1;
    return *v;
  };
  size_t pos = 0;
  PrintfFormat f;
  f.id = field(pos, "format id");
  const uint32_t n = field(pos, "argument count");
  if (n > kMaxArgs) bad_entry(entry, fmt::format("{} arguments, more than lrrt reads ({})", n, kMaxArgs));
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t size = field(pos, "argument sizes");
    if (size == 0 || size > kMaxArgBytes)
      bad_entry(entry, fmt::format("argument {} takes {} bytes (lrrt reads 1 to {})", i, size, kMaxArgBytes));
    f.arg_sizes.push_back(size);
  }
  f.format = unescape(entry.substr(pos));
  return f;
}

PrintfTable::PrintfTable(const std::vector<std::string>& entries) : entries_(entries) {
  for (const auto& e : entries) {
    try {
      PrintfFormat f = parse_printf_format(e);
      auto same = [&](const PrintfFormat& g) { return g.id == f.id; };
      if (std::any_of(formats_.begin(), formats_.end(), same)) {
        std::string why = fmt::format("amdhsa.printf lists format id {} twice", f.id);
        broken_.emplace_back(f.id, why);
        errors_.push_back(std::move(why));
        continue;
      }
      max_record_bytes_ = std::max(max_record_bytes_, f.record_bytes());
      formats_.push_back(std::move(f));
    } catch (const FormatError& err) {
      errors_.push_back(err.what());
      // The id, when it can be read, so a record that uses the entry says why.
      size_t colon = e.find(':');
      if (auto id = parse_u32(std::string_view(e).substr(0, colon == std::string::npos ? 0 : colon)))
        broken_.emplace_back(*id, err.what());
    }
  }
  // A duplicate id is broken for every record: drop the first entry too.
  for (const auto& [id, why] : broken_)
    std::erase_if(formats_, [id = id](const PrintfFormat& f) { return f.id == id; });
  std::sort(formats_.begin(), formats_.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
}

const PrintfFormat* PrintfTable::find(uint32_t id) const {
  for (const auto& [bid, why] : broken_)
    if (bid == id) throw FormatError(why);
  auto it = std::lower_bound(formats_.begin(), formats_.end(), id,
                             [](const PrintfFormat& f, uint32_t v) { return f.id < v; });
  return it != formats_.end() && it->id == id ? &*it : nullptr;
}

void init_printf_buffer(std::span<std::byte> buffer) {
  if (buffer.size() < 2 * kPrintfHeaderBytes || buffer.size() - kPrintfHeaderBytes > UINT32_MAX)
    throw FormatError(fmt::format("a printf buffer of {} bytes is too small or too large", buffer.size()));
  const uint32_t header[2] = {0, uint32_t(buffer.size() - kPrintfHeaderBytes)};
  std::memcpy(buffer.data(), header, sizeof header);  // little-endian host, as the GPU
}

std::string format_printf_record(const PrintfFormat& f, std::span<const std::byte> args) {
  if (args.size() != f.record_bytes() - 4)
    throw FormatError(fmt::format("format id {} takes {} bytes of arguments, the record has {}", f.id,
                                  f.record_bytes() - 4, args.size()));
  const std::string_view fmt_text = f.format;
  std::string out;
  size_t arg = 0, offset = 0;
  size_t pos = 0;
  while (pos < fmt_text.size()) {
    const size_t pct = fmt_text.find('%', pos);
    out.append(fmt_text.substr(pos, pct == std::string_view::npos ? std::string_view::npos : pct - pos));
    if (pct == std::string_view::npos) break;
    pos = pct;
    if (fmt_text.substr(pos, 2) == "%%") {
      out += '%';
      pos += 2;
      continue;
    }
    const Spec s = parse_spec(fmt_text, pos);
    if (arg >= f.arg_sizes.size()) {  // more conversions than arguments
      out += s.text;
      continue;
    }
    const size_t size = f.arg_sizes[arg++];
    const auto bytes = args.subspan(offset, size);
    offset += size;
    if (s.conversion == 's') {
      if (s.vector) throw FormatError(fmt::format("conversion '{}': a vector of strings", s.text));
      std::string text;
      for (std::byte b : bytes) {
        if (b == std::byte{0}) break;
        text += char(b);
      }
      append_c(out, c_head(s, true) + 's', text.c_str());
      continue;
    }
    if (!s.vector) {
      format_element(out, s, bytes, 0, size);
      continue;
    }
    // OpenCL vectors: a 3-element vector takes the space of 4.
    const uint32_t slots = s.vector == 3 ? 4 : s.vector;
    if (size % slots != 0)
      throw FormatError(fmt::format("conversion '{}' cannot print a {}-byte argument as {} elements", s.text,
                                    size, s.vector));
    const size_t elem = size / slots;
    for (uint32_t e = 0; e < s.vector; ++e) {
      if (e) out += ',';
      format_element(out, s, bytes, e * elem, elem);
    }
  }
  return out;
}

PrintfDecoded decode_printf_buffer(const PrintfTable& table, std::span<const std::byte> buffer) {
  PrintfDecoded d;
  if (buffer.size() < kPrintfHeaderBytes) {
    d.error = fmt::format("the printf buffer has {} bytes, less than its {}-byte header", buffer.size(),
                          kPrintfHeaderBytes);
    return d;
  }
  d.used_bytes = read_le(buffer, 0, 4);
  d.capacity = read_le(buffer, 4, 4);
  const uint64_t room = buffer.size() - kPrintfHeaderBytes;
  uint64_t end = d.used_bytes;
  if (d.used_bytes > room) {
    d.error = fmt::format("the printf buffer's header says {} bytes of records were written, but it holds {}",
                          d.used_bytes, room);
    end = room;  // decode what is there, then report
  }
  if (table.max_record_bytes() &&
      kPrintfHeaderBytes + d.used_bytes + table.max_record_bytes() > d.capacity)
    d.maybe_dropped = true;
  const auto data = buffer.subspan(kPrintfHeaderBytes, size_t(end));
  uint64_t pos = 0;
  size_t index = 0;
  while (pos < end) {
    const uint64_t left = end - pos;
    auto stop = [&](const std::string& why) {
      std::string msg = fmt::format("record {} at byte {}: {}", index, kPrintfHeaderBytes + pos, why);
      d.error = d.error.empty() ? msg : msg + "; " + d.error;
    };
    if (left < 4) {
      stop(fmt::format("truncated: {} bytes left, less than its 4-byte format id", left));
      break;
    }
    const uint32_t id = uint32_t(read_le(data, size_t(pos), 4));
    const PrintfFormat* f = nullptr;
    try {
      f = table.find(id);
    } catch (const FormatError& e) {
      stop(fmt::format("format id {}: {}", id, e.what()));
      break;
    }
    if (!f) {
      stop(fmt::format("format id {} is not in the code object's printf table ({} entries)", id, table.size()));
      break;
    }
    const uint64_t need = f->record_bytes();
    if (need > left) {
      stop(fmt::format("truncated: format id {} takes {} bytes, only {} are left", id, need, left));
      break;
    }
    try {
      d.records.push_back(format_printf_record(*f, data.subspan(size_t(pos) + 4, size_t(need) - 4)));
    } catch (const FormatError& e) {
      stop(fmt::format("format id {}: {}", id, e.what()));
      break;
    }
    pos += need;
    ++index;
  }
  return d;
}

}  // namespace lrrt::formats::amdgpu
