// The OpenCL printf decoder (lrrt/formats/amdgpu_printf.hpp) fed bytes:
// format-table entries, and printf buffers built here the way a kernel
// writes them, from random values, checked against C's printf of the same
// values; truncated, overflowing and lying buffers, which must end in an
// error and never in a crash or a read outside the buffer (each buffer here
// is exactly as long as its header says, so a sanitizer build sees any
// over-read).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "lrrt/formats/amdgpu_printf.hpp"

using namespace lrrt::formats::amdgpu;
using lrrt::formats::FormatError;

namespace {

std::mt19937_64& rng() {
  static std::mt19937_64 r(std::random_device{}());
  return r;
}

template <typename T>
void put(std::vector<std::byte>& out, T v) {
  const size_t at = out.size();
  out.resize(at + sizeof v);
  std::memcpy(out.data() + at, &v, sizeof v);
}

template <typename... A>
std::string c_printf(const char* f, A... a) {
  char buf[512];
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
#pragma GCC diagnostic ignored "-Wformat-security"
  int n = std::snprintf(buf, sizeof buf, f, a...);
#pragma GCC diagnostic pop
  REQUIRE(n >= 0);
  REQUIRE(size_t(n) < sizeof buf);
  return std::string(buf, size_t(n));
}

// One conversion a generated format uses: as written in the format, its
// argument's bytes in a record, and a generator that appends random bytes
// and returns what C's printf prints for them.
struct Conversion {
  const char* spec;
  uint32_t size;  // 0: takes no argument (%%)
  std::function<std::string(std::vector<std::byte>&)> make;
};

int32_t i32() { return int32_t(uint32_t(rng()())); }
uint32_t u32() { return uint32_t(rng()()); }
float finite_float() {
  std::uniform_real_distribution<float> d(-1e6f, 1e6f);
  return d(rng());
}

// A random string of 0..12 letters as the printf pass stores a literal: its
// bytes in 4-byte words, the last zero-padded; no NUL when the length is a
// multiple of 4; the empty string as 0xFFFFFF00.
struct StoredString {
  std::string text;
  std::vector<std::byte> bytes;
};
StoredString stored_string(size_t len) {
  StoredString s;
  for (size_t i = 0; i < len; ++i) s.text += char('a' + rng()() % 26);
  if (len == 0) {
    put<uint32_t>(s.bytes, 0xFFFFFF00u);
    return s;
  }
  for (char c : s.text) s.bytes.push_back(std::byte(uint8_t(c)));
  while (s.bytes.size() % 4) s.bytes.push_back(std::byte{0});
  return s;
}

std::vector<Conversion> conversions() {
  std::vector<Conversion> c;
  for (const char* f : {"%d", "%i", "%+d", "%5d", "%-7i", "%hhd", "%hd"})
    c.push_back({f, 4, [f](auto& b) { int32_t v = i32(); put(b, v); return c_printf(f, v); }});
  for (const char* f : {"%u", "%x", "%#X", "%o", "%08x", "%hu", "%hhx"})
    c.push_back({f, 4, [f](auto& b) { uint32_t v = u32(); put(b, v); return c_printf(f, v); }});
  c.push_back({"%ld", 8, [](auto& b) { int64_t v = int64_t(rng()()); put(b, v); return c_printf("%lld", (long long)v); }});
  c.push_back({"%lu", 8, [](auto& b) { uint64_t v = rng()(); put(b, v); return c_printf("%llu", (unsigned long long)v); }});
  c.push_back({"%#lx", 8, [](auto& b) { uint64_t v = rng()(); put(b, v); return c_printf("%#llx", (unsigned long long)v); }});
  c.push_back({"%c", 4, [](auto& b) { int32_t v = 'A' + int32_t(rng()() % 58); put(b, v); return c_printf("%c", v); }});
  c.push_back({"%3c", 4, [](auto& b) { int32_t v = '!' + int32_t(rng()() % 90); put(b, v); return c_printf("%3c", v); }});
  for (const char* f : {"%f", "%.3f", "%e", "%g", "%10.2E", "%a"})
    c.push_back({f, 4, [f](auto& b) { float v = finite_float(); put(b, v); return c_printf(f, double(v)); }});
  for (const char* f : {"%f", "%.12e", "%G"})
    c.push_back({f, 8, [f](auto& b) {
                   double v = std::ldexp(double(int64_t(rng()() >> 11)), int(rng()() % 40) - 60);
                   put(b, v);
                   return c_printf(f, v);
                 }});
  c.push_back({"%p", 8, [](auto& b) {
                 uint64_t v = rng()() >> (rng()() % 64);
                 put(b, v);
                 return c_printf("0x%llx", (unsigned long long)v);
               }});
  c.push_back({"%v4hld", 16, [](auto& b) {
                 std::string out;
                 for (int e = 0; e < 4; ++e) {
                   int32_t v = i32();
                   put(b, v);
                   out += (e ? "," : "") + c_printf("%d", v);
                 }
                 return out;
               }});
  c.push_back({"%v2hlf", 8, [](auto& b) {
                 std::string out;
                 for (int e = 0; e < 2; ++e) {
                   float v = finite_float();
                   put(b, v);
                   out += (e ? "," : "") + c_printf("%f", double(v));
                 }
                 return out;
               }});
  // A 3-element vector takes the space of 4 (the fourth is padding).
  c.push_back({"%v3hd", 8, [](auto& b) {
                 std::string out;
                 for (int e = 0; e < 4; ++e) {
                   int16_t v = int16_t(rng()());
                   put(b, v);
                   if (e < 3) out += (e ? "," : "") + c_printf("%hd", v);
                 }
                 return out;
               }});
  c.push_back({"%%", 0, [](auto&) { return std::string("%"); }});
  return c;
}

// A random format: literal text (with the characters the table escapes) and
// conversions; its table entry and a generator of records.
struct Generated {
  PrintfFormat expected_format;  // what parse_printf_format must give
  std::string entry;             // the amdhsa.printf string
  std::vector<const Conversion*> convs;
  std::vector<std::string> literals;  // before each conversion, then the tail
};

std::string random_literal() {
  static const std::string alphabet = "abcxyz ABC019 ,.;=()[]-_\n\t:\a\r\v\f";
  std::string s;
  for (size_t n = rng()() % 6; n; --n) s += alphabet[rng()() % alphabet.size()];
  return s;
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '\n': out += "\\n"; break;
      case '\a': out += "\\a"; break;
      case '\r': out += "\\r"; break;
      case '\v': out += "\\v"; break;
      case '\f': out += "\\f"; break;
      case ':': out += "\\72"; break;
      default: out += c;
    }
  }
  return out;
}

Generated generate(uint32_t id, const std::vector<Conversion>& all) {
  Generated g;
  g.expected_format.id = id;
  std::string fmt_text;
  for (size_t n = rng()() % 7; n; --n) {
    const Conversion* c = &all[rng()() % all.size()];
    g.literals.push_back(random_literal());
    fmt_text += g.literals.back() + c->spec;
    g.convs.push_back(c);
    if (c->size) g.expected_format.arg_sizes.push_back(c->size);
  }
  g.literals.push_back(random_literal());
  fmt_text += g.literals.back();
  g.expected_format.format = fmt_text;
  g.entry = std::to_string(id) + ":" + std::to_string(g.expected_format.arg_sizes.size()) + ":";
  for (uint32_t s : g.expected_format.arg_sizes) g.entry += std::to_string(s) + ":";
  g.entry += escape(fmt_text);
  return g;
}

// Appends one record (id, then arguments) and returns its expected text.
std::string append_record(std::vector<std::byte>& buf, const Generated& g) {
  put<uint32_t>(buf, g.expected_format.id);
  std::string text;
  for (size_t i = 0; i < g.convs.size(); ++i) text += g.literals[i] + g.convs[i]->make(buf);
  return text + g.literals.back();
}

// A whole buffer: header (used, capacity) and the records.
std::vector<std::byte> with_header(const std::vector<std::byte>& records, uint32_t capacity, uint32_t used) {
  std::vector<std::byte> buf;
  put<uint32_t>(buf, used);
  put<uint32_t>(buf, capacity);
  buf.insert(buf.end(), records.begin(), records.end());
  return buf;
}

}  // namespace

TEST_CASE("amdgpu printf: table entries parse, escapes undone, malformed entries are errors") {
  PrintfFormat f = parse_printf_format("7:3:4:8:16:a\\72b %d %ld %v4hld\\n");
  CHECK(f.id == 7);
  CHECK(f.arg_sizes == std::vector<uint32_t>{4, 8, 16});
  CHECK(f.format == "a:b %d %ld %v4hld\n");
  CHECK(f.record_bytes() == 32);
  // No arguments, an empty format, escapes of every kind; other backslashes stay.
  CHECK(parse_printf_format("1:0:").format.empty());
  CHECK(parse_printf_format("2:0:\\a\\b\\f\\n\\r\\v\\72\\t\\\\7").format == "\a\b\f\n\r\v:\\t\\\\7");
  // A ':' left in the format (not escaped) is part of it.
  CHECK(parse_printf_format("3:1:4:x:%d:y").format == "x:%d:y");

  auto err = [](const char* entry) {
    try {
      parse_printf_format(entry);
    } catch (const FormatError& e) {
      return std::string(e.what());
    }
    FAIL("no FormatError for ", entry);
    return std::string();
  };
  CHECK(err("").find("ends before its format id") != std::string::npos);
  CHECK(err("x:0:").find("format id is not a number") != std::string::npos);
  CHECK(err("1:").find("ends before its argument count") != std::string::npos);
  CHECK(err("1:two:4:%d").find("argument count is not a number") != std::string::npos);
  CHECK(err("1:2:4:%d %d").find("ends before its argument sizes") != std::string::npos);
  CHECK(err("1:2:4:x:%d %d").find("argument sizes is not a number") != std::string::npos);
  CHECK(err("1:1:0:%d").find("argument 0 takes 0 bytes") != std::string::npos);
  CHECK(err("1:1:99999999:%d").find("takes 99999999 bytes") != std::string::npos);
  CHECK(err("1:5000:4").find("more than lrrt reads") != std::string::npos);
  CHECK(err("99999999999:0:").find("format id is not a number") != std::string::npos);
  // Control characters of a hostile entry are not quoted raw.
  CHECK(err("\x1b[2J:0:").find('\x1b') == std::string::npos);
}

TEST_CASE("amdgpu printf: a table keeps good entries and remembers broken ones by id") {
  PrintfTable t({"1:1:4:one %d\\n", "2:x:broken", "3:0:three", "3:0:again", "nonsense"});
  CHECK(t.size() == 1);  // 3 is listed twice: neither copy is trusted
  REQUIRE(t.find(1));
  CHECK(t.find(1)->format == "one %d\n");
  CHECK(t.find(4) == nullptr);
  CHECK_THROWS_AS(t.find(2), FormatError);
  CHECK_THROWS_AS(t.find(3), FormatError);
  CHECK(t.errors().size() == 3);
  CHECK(t.max_record_bytes() == 8);
  // Tables of the same entries are equal (two loads of one code object).
  CHECK(PrintfTable({"1:0:a", "2:1:4:%d"}) == PrintfTable({"1:0:a", "2:1:4:%d"}));
  CHECK_FALSE(PrintfTable({"1:0:a", "2:1:4:%d"}) == PrintfTable({"1:0:b", "2:1:4:%d"}));
  CHECK_FALSE(PrintfTable({"1:0:a"}) == PrintfTable({"1:0:a", "2:1:4:%d"}));
}

TEST_CASE("amdgpu printf: init_printf_buffer writes an empty header with the capacity ROCclr writes") {
  std::vector<std::byte> b(4096, std::byte{0xcd});
  init_printf_buffer(b);
  uint32_t h[2];
  std::memcpy(h, b.data(), 8);
  CHECK(h[0] == 0);
  CHECK(h[1] == 4096 - 8);
  CHECK(b[8] == std::byte{0xcd});  // the records area is left alone
  std::vector<std::byte> tiny(15);
  CHECK_THROWS_AS(init_printf_buffer(tiny), FormatError);
}

TEST_CASE("amdgpu printf: records of random formats and values decode to what C's printf prints") {
  const auto all = conversions();
  for (int round = 0; round < 200; ++round) {
    // A table of 1..6 random formats with scattered ids.
    std::vector<Generated> formats;
    std::vector<std::string> entries;
    const size_t nformats = 1 + rng()() % 6;
    for (size_t i = 0; i < nformats; ++i) {
      formats.push_back(generate(uint32_t(1 + i * 3 + rng()() % 3), all));
      entries.push_back(formats.back().entry);
    }
    PrintfTable table(entries);
    REQUIRE_MESSAGE(table.errors().empty(), table.errors().front());
    for (const auto& g : formats) {
      const PrintfFormat* f = table.find(g.expected_format.id);
      REQUIRE(f);
      CHECK(f->arg_sizes == g.expected_format.arg_sizes);
      CHECK(f->format == g.expected_format.format);
    }
    // 0..40 records, each of a random format.
    std::vector<std::byte> records;
    std::vector<std::string> expected;
    for (size_t n = rng()() % 41; n; --n) expected.push_back(append_record(records, formats[rng()() % nformats]));
    const uint32_t capacity = uint32_t(records.size() + 8 + 4096);
    const auto buf = with_header(records, capacity, uint32_t(records.size()));
    const PrintfDecoded d = decode_printf_buffer(table, buf);
    CAPTURE(round);
    REQUIRE_MESSAGE(d.error.empty(), d.error);
    CHECK(d.used_bytes == records.size());
    CHECK(d.capacity == capacity);
    CHECK_FALSE(d.maybe_dropped);
    REQUIRE(d.records.size() == expected.size());
    for (size_t i = 0; i < expected.size(); ++i) CHECK(d.records[i] == expected[i]);
  }
}

TEST_CASE("amdgpu printf: a truncated or overflowing record is an error, never a crash or an over-read") {
  const auto all = conversions();
  std::vector<Generated> formats = {generate(1, all), generate(2, all), generate(5, all)};
  // One format with arguments for sure, so records are longer than the id.
  formats.push_back(generate(9, all));
  while (formats.back().expected_format.arg_sizes.empty()) formats.back() = generate(9, all);
  std::vector<std::string> entries;
  for (const auto& g : formats) entries.push_back(g.entry);
  PrintfTable table(entries);
  std::vector<std::byte> records;
  std::vector<size_t> ends;  // where each record ends
  std::vector<std::string> expected;
  for (int i = 0; i < 12; ++i) {
    expected.push_back(append_record(records, formats[i % 4 == 3 ? 3 : rng()() % 4]));
    ends.push_back(records.size());
  }
  // Every cut: the header claims `cut` bytes and the buffer holds exactly
  // them. Whole records before the cut decode; a cut inside one is an error.
  for (size_t cut = 0; cut <= records.size(); ++cut) {
    CAPTURE(cut);
    std::vector<std::byte> part(records.begin(), records.begin() + long(cut));
    const auto buf = with_header(part, uint32_t(cut + 8), uint32_t(cut));
    const PrintfDecoded d = decode_printf_buffer(table, buf);
    size_t whole = 0;
    while (whole < ends.size() && ends[whole] <= cut) ++whole;
    REQUIRE(d.records.size() == whole);
    for (size_t i = 0; i < whole; ++i) CHECK(d.records[i] == expected[i]);
    const bool at_boundary = cut == 0 || (whole > 0 && ends[whole - 1] == cut);
    CHECK(d.error.empty() == at_boundary);
    if (!at_boundary) CHECK(d.error.find("truncated") != std::string::npos);
  }
  // A header that claims more than the buffer holds: the records there
  // decode, then the error says so.
  {
    std::vector<std::byte> part(records.begin(), records.begin() + long(ends[2]));
    const auto buf = with_header(part, 1u << 20, uint32_t(ends[5]));
    const PrintfDecoded d = decode_printf_buffer(table, buf);
    CHECK(d.records.size() == 3);
    CHECK(d.error.find("but it holds " + std::to_string(ends[2])) != std::string::npos);
  }
  // Shorter than its header.
  for (size_t n = 0; n < kPrintfHeaderBytes; ++n) {
    std::vector<std::byte> b(n, std::byte{0xff});
    const PrintfDecoded d = decode_printf_buffer(table, b);
    CHECK(d.records.empty());
    CHECK(d.error.find("less than its 8-byte header") != std::string::npos);
  }
  // Huge counts in the header are no reason to read on.
  {
    const auto buf = with_header(records, 0xffffffffu, 0xffffffffu);
    const PrintfDecoded d = decode_printf_buffer(table, buf);
    CHECK(d.records.size() == expected.size());
    CHECK_FALSE(d.error.empty());
  }
}

TEST_CASE("amdgpu printf: unknown ids, broken entries and conversions lrrt cannot print stop decoding with a reason") {
  PrintfTable table({"1:1:4:v=%d\\n", "2:1:4:bad %n", "3:1:4:star %*d", "4:1:8:%d of 8 bytes", "5:1:6:%f",
                     "6:0:%v5d", "7:1:4:%99999d", "8:1:4:cut %"});
  auto decode = [&](uint32_t id, std::initializer_list<uint32_t> args) {
    std::vector<std::byte> recs;
    put<uint32_t>(recs, 1);
    put<int32_t>(recs, 42);
    put<uint32_t>(recs, id);
    for (uint32_t a : args) put(recs, a);
    return decode_printf_buffer(table, with_header(recs, uint32_t(recs.size() + 64), uint32_t(recs.size())));
  };
  struct Case {
    uint32_t id;
    std::initializer_list<uint32_t> args;
    const char* error;
  };
  const Case cases[] = {
      {0, {}, "format id 0 is not in the code object's printf table"},
      {77, {1}, "format id 77 is not in the code object's printf table"},
      {2, {5}, "writes to memory"},
      {3, {5}, "'*'"},
      {5, {1, 2}, "cannot print a 6-byte value"},
      {6, {}, "vector size"},
      {7, {5}, "over 4096"},
      {8, {5}, "cut off"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.id);
    const PrintfDecoded d = decode(c.id, c.args);
    REQUIRE(d.records.size() == 1);  // the good record before it
    CHECK(d.records[0] == "v=42\n");
    CHECK(d.error.find(c.error) != std::string::npos);
    CHECK(d.error.find("record 1 at byte 16") != std::string::npos);
  }
  // %d of an 8-byte argument prints all 64 bits.
  {
    std::vector<std::byte> recs;
    put<uint32_t>(recs, 4);
    put<int64_t>(recs, -5000000000LL);
    const auto d = decode_printf_buffer(table, with_header(recs, 64, uint32_t(recs.size())));
    REQUIRE(d.records.size() == 1);
    CHECK(d.records[0] == "-5000000000 of 8 bytes");
  }
  // A conversion with no argument left is printed as written.
  PrintfTable few({"1:1:4:%d and %d and %s"});
  std::vector<std::byte> recs;
  put<uint32_t>(recs, 1);
  put<int32_t>(recs, -3);
  const auto d = decode_printf_buffer(few, with_header(recs, 64, uint32_t(recs.size())));
  REQUIRE(d.records.size() == 1);
  CHECK(d.records[0] == "-3 and %d and %s");
}

TEST_CASE("amdgpu printf: a buffer too full for the largest record says records may have been dropped") {
  PrintfTable table({"1:1:4:%d\\n", "2:2:8:16:%ld %v4hld\\n"});  // records of 8 and 28 bytes
  std::vector<std::byte> recs;
  for (int i = 0; i < 3; ++i) {
    put<uint32_t>(recs, 1);
    put<int32_t>(recs, i);
  }
  // The device refuses a record when 8 + used + bytes > capacity.
  auto full = [&](uint32_t capacity) {
    return decode_printf_buffer(table, with_header(recs, capacity, uint32_t(recs.size()))).maybe_dropped;
  };
  CHECK_FALSE(full(uint32_t(8 + recs.size() + 28)));  // the largest still fits
  CHECK(full(uint32_t(8 + recs.size() + 27)));
  CHECK(full(uint32_t(8 + recs.size())));
}
