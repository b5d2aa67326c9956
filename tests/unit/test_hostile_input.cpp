// Files other programs wrote, read defensively: .npy headers parsed as the
// Python literal they are, only regular files read, sizes checked before
// bytes are read, JSON parsed strictly, hostile text escaped in messages.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "tool/bundle.hpp"
#include "tool/runner.hpp"

using namespace lrrt::tool;
namespace fs = std::filesystem;

namespace {

std::span<const std::byte> bytes_of(const std::string& s) { return {reinterpret_cast<const std::byte*>(s.data()), s.size()}; }

// A .npy file from a header dict given verbatim, version 1, padded like numpy.
std::string npy_with_header(const std::string& dict, const std::string& data, int version = 1, long header_len = -1) {
  std::string h = dict;
  const size_t prefix = version == 1 ? 10 : 12;
  size_t total = prefix + h.size() + 1;
  h.append((total + 63) / 64 * 64 - total, ' ');
  h += '\n';
  const size_t len = header_len < 0 ? h.size() : size_t(header_len);
  std::string out("\x93NUMPY", 6);
  out += char(version);
  out += '\0';
  out += char(len & 0xff);
  out += char((len >> 8) & 0xff);
  if (version != 1) {
    out += char((len >> 16) & 0xff);
    out += char((len >> 24) & 0xff);
  }
  return out + h + data;
}

std::string expect_npy_error(const std::string& file) {
  try {
    parse_npy(bytes_of(file), "hostile.npy");
  } catch (const InputError& e) {
    std::string m = e.what();
    CHECK(m.find("hostile.npy") != std::string::npos);
    return m;
  }
  FAIL("parse_npy accepted a hostile file");
  return {};
}

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("lrrt-hostile-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}()));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

}  // namespace

TEST_CASE("npy: a valid header with every spelling numpy writes") {
  std::string data(24, '\0');
  for (const char* dict : {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                           "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2, 3)}",
                           "{'shape': (2,3,), 'fortran_order': False, 'descr': '<f4'}",
                           "{'descr':'<f4','fortran_order':False,'shape':(6L,)}"}) {
    CAPTURE(dict);
    NpyArray a = parse_npy(bytes_of(npy_with_header(dict, data)), "ok.npy");
    CHECK(a.count() == 6);
    CHECK(a.type == DType::f32);
  }
  NpyArray scalar = parse_npy(bytes_of(npy_with_header("{'descr': '<i4', 'fortran_order': False, 'shape': ()}", "abcd")), "s");
  CHECK(scalar.shape.empty());
  CHECK(scalar.count() == 1);
}

TEST_CASE("npy: hostile headers are rejected, never misread") {
  const std::string d24(24, '\0');
  // A shape whose element count overflows 64 bits must not wrap to a small size.
  CHECK(expect_npy_error(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 2)}", d24))
            .find("64 bits") != std::string::npos);
  CHECK(expect_npy_error(npy_with_header("{'descr': '<f8', 'fortran_order': False, 'shape': (2305843009213693952,)}", d24))
            .find("64 bits") != std::string::npos);
  CHECK(expect_npy_error(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,)}", d24))
            .find("64 bits") != std::string::npos);
  // Keys are keys: 'shape' inside a string value is just text.
  CHECK(expect_npy_error(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'x': 'shape': (6,)}", d24))
            .find("unexpected key") != std::string::npos);
  CHECK(expect_npy_error(npy_with_header("{'descr': \"'shape': (6,)\", 'fortran_order': False, 'shape': (6,)}", d24))
            .find("unsupported dtype") != std::string::npos);
  // (1 6,) is not (1, 6); (6) is not a tuple.
  CHECK(expect_npy_error(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (1 6,)}", d24))
            .find("expected ','") != std::string::npos);
  CHECK(expect_npy_error(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (6)}", d24))
            .find("trailing comma") != std::string::npos);
  // Duplicate and missing keys.
  CHECK(expect_npy_error(npy_with_header("{'descr': '<f4', 'descr': '<i4', 'fortran_order': False, 'shape': (6,)}", d24))
            .find("twice") != std::string::npos);
  CHECK(expect_npy_error(npy_with_header("{'descr': '<f4', 'fortran_order': False}", d24)).find("no 'shape'") !=
        std::string::npos);
  // A header length shorter than the dict: the dict does not close inside it.
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }";
  CHECK(expect_npy_error(npy_with_header(dict, d24, 1, 20)).find("header") != std::string::npos);
  // A header length longer than the header: data bytes would be read as header.
  {
    std::string f = npy_with_header(dict, d24);
    f[8] = char(static_cast<unsigned char>(f[8]) + 16);
    std::string(16, 'Z').copy(f.data() + f.size() - 24, 16);
    CHECK(expect_npy_error(f).find("after the header dict") != std::string::npos);
  }
  // Version 2 header length near 4 GiB, and unknown versions.
  CHECK(expect_npy_error(npy_with_header(dict, d24, 2, 0xfffffff0L)).find("header length") != std::string::npos);
  CHECK(expect_npy_error(npy_with_header(dict, d24, 7)).find("version 7") != std::string::npos);
  // Data must be exactly what the shape needs.
  CHECK(expect_npy_error(npy_with_header(dict, d24.substr(0, 20))).find("truncated") != std::string::npos);
  CHECK(expect_npy_error(npy_with_header(dict, d24 + "junk")).find("follow") != std::string::npos);
  // Structured and big-endian dtypes, Fortran order, escapes, garbage.
  CHECK(expect_npy_error(npy_with_header("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,)}", d24))
            .find("structured") != std::string::npos);
  CHECK(expect_npy_error(npy_with_header("{'descr': '>f4', 'fortran_order': False, 'shape': (6,)}", d24))
            .find("unsupported dtype") != std::string::npos);
  CHECK(expect_npy_error(npy_with_header("{'descr': '<f4', 'fortran_order': True, 'shape': (6,)}", d24))
            .find("Fortran") != std::string::npos);
  CHECK(expect_npy_error(npy_with_header("{'descr': '<f\\x34', 'fortran_order': False, 'shape': (6,)}", d24))
            .find("escapes") != std::string::npos);
  CHECK(expect_npy_error(npy_with_header("[1, 2, 3]", d24)).find("expected '{'") != std::string::npos);
  CHECK(expect_npy_error(std::string("\x93NUMPY\x01", 7)).find("magic") != std::string::npos);
}

TEST_CASE("npy: random corruption of a valid file never crashes and never passes silently with a wrong size") {
  std::mt19937_64 rng(20261201);
  std::vector<float> v(37);
  for (auto& x : v) x = float(rng() % 1000);
  const std::string good = npy_bytes(DType::f32, {37}, reinterpret_cast<const std::byte*>(v.data()));
  for (int trial = 0; trial < 5000; ++trial) {
    std::string f = good;
    const int flips = 1 + int(rng() % 4);
    for (int k = 0; k < flips; ++k) f[rng() % 128] = char(rng());  // header region
    if (rng() % 4 == 0) f.resize(rng() % f.size());
    try {
      NpyArray a = parse_npy(bytes_of(f), "fuzz.npy");
      // Accepted: the data must be exactly what its header says.
      CHECK(a.data.size() == a.count() * dtype_size(a.type));
    } catch (const InputError&) {
    }
  }
}

TEST_CASE("input files: only regular files are read, sizes are known before reading") {
  TempDir dir;
  for (const char* special : {"/dev/zero", "/dev/null", "/dev/urandom"}) {
    CAPTURE(special);
    CHECK_THROWS_WITH_AS(InputFile{special}, doctest::Contains("character device"), InputError);
  }
  CHECK_THROWS_WITH_AS(InputFile{dir.path}, doctest::Contains("directory"), InputError);
  const fs::path fifo = dir.path / "pipe";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THROWS_WITH_AS(InputFile{fifo}, doctest::Contains("FIFO"), InputError);  // and does not block
  CHECK_THROWS_WITH_AS(InputFile{dir.path / "missing"}, doctest::Contains("cannot open"), InputError);

  // A 3 GiB sparse file: its size is known at once, nothing is read.
  const fs::path sparse = dir.path / "sparse.raw";
  {
    int fd = ::open(sparse.c_str(), O_CREAT | O_WRONLY, 0600);
    REQUIRE(fd >= 0);
    REQUIRE(::ftruncate(fd, off_t(3) << 30) == 0);
    ::close(fd);
  }
  InputFile big(sparse);
  CHECK(big.size() == uint64_t(3) << 30);
  CHECK_THROWS_WITH_AS(big.read_all(uint64_t(1) << 20), doctest::Contains("more than the 1 MiB"), InputError);

  const fs::path small = dir.path / "small.bin";
  std::ofstream(small, std::ios::binary) << "0123456789";
  auto all = read_input_file(small, 100);
  CHECK(std::string(reinterpret_cast<const char*>(all.data()), all.size()) == "0123456789");
  std::vector<std::byte> part(4);
  InputFile(small).read_at(3, part);
  CHECK(std::string(reinterpret_cast<const char*>(part.data()), 4) == "3456");
  std::vector<std::byte> past(4);
  CHECK_THROWS_WITH_AS(InputFile(small).read_at(8, past), doctest::Contains("ends at byte 10"), InputError);
}

TEST_CASE("npy files: header and size are checked before the data is read") {
  TempDir dir;
  // A sparse file whose header claims 3 GiB of float32 but whose element count
  // the caller does not want: rejected from the header alone.
  const fs::path p = dir.path / "big.npy";
  {
    std::string head = npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (805306368,), }", "");
    std::ofstream(p, std::ios::binary) << head;
    REQUIRE(::truncate(p.c_str(), off_t(head.size()) + (off_t(3) << 30)) == 0);
  }
  CHECK_THROWS_WITH_AS(read_npy(p, {.count = 16}), doctest::Contains("805306368 elements"), InputError);
  CHECK_THROWS_WITH_AS(read_npy("/dev/zero"), doctest::Contains("character device"), InputError);
  const fs::path ok = dir.path / "ok.npy";
  std::vector<int16_t> v = {1, -2, 3};
  std::ofstream(ok, std::ios::binary) << npy_bytes(DType::i16, {3}, reinterpret_cast<const std::byte*>(v.data()));
  NpyArray a = read_npy(ok, {.count = 3});
  CHECK(a.type == DType::i16);
  CHECK(std::memcmp(a.data.data(), v.data(), 6) == 0);
}

TEST_CASE("strict JSON: one document, no duplicate keys, bounded nesting, valid UTF-8") {
  CHECK(parse_json_strict(R"({"a": [1, {"b": 2}], "c": "d"})", "ok.json")["a"][1]["b"] == 2);
  CHECK_THROWS_WITH_AS(parse_json_strict(R"({"a": 1} trailing)", "t.json"), doctest::Contains("t.json: malformed JSON"),
                       InputError);
  CHECK_THROWS_WITH_AS(parse_json_strict(R"({"a": 1}{"b": 2})", "t.json"), doctest::Contains("malformed"), InputError);
  CHECK_THROWS_WITH_AS(parse_json_strict(R"({"kernel": "a", "kernel": "b"})", "d.json"),
                       doctest::Contains("key \"kernel\" appears twice in the top-level object"), InputError);
  CHECK_THROWS_WITH_AS(parse_json_strict(R"({"x": {"y": {"k": 1, "k": 2}}})", "d.json"),
                       doctest::Contains("appears twice in object /x/y"), InputError);
  // The same key in two different objects is fine.
  CHECK_NOTHROW(parse_json_strict(R"({"a": {"k": 1}, "b": {"k": 2}, "c": [{"k": 1}, {"k": 2}]})", "ok.json"));
  std::string deep(100000, '[');
  deep += std::string(100000, ']');
  CHECK_THROWS_WITH_AS(parse_json_strict(deep, "deep.json"), doctest::Contains("nested more than"), InputError);
  std::string deep_obj;
  for (int i = 0; i < 100000; ++i) deep_obj += "{\"a\":";
  deep_obj += "1" + std::string(100000, '}');
  CHECK_THROWS_WITH_AS(parse_json_strict(deep_obj, "deep.json"), doctest::Contains("nested more than"), InputError);
  CHECK_THROWS_WITH_AS(parse_json_strict("{\"a\": \"\xff\xfe\"}", "u.json"), doctest::Contains("malformed"), InputError);
}

TEST_CASE("printable: hostile text is escaped and bounded") {
  CHECK(printable("plain text, ünïcödé") == "plain text, ünïcödé");
  CHECK(printable(std::string("a\x1b[31mred\0z", 11)) == "a\\x1b[31mred\\x00z");
  CHECK(printable("left\xe2\x80\xaeright") == "left\\u{202e}right");  // right-to-left override
  CHECK(printable("bad \xff\xc0 utf8") == "bad \\xff\\xc0 utf8");
  CHECK(printable("tab\tnew\nline") == "tab\\tnew\\nline");
  std::string huge(100'000'000, 'k');
  std::string p = printable(huge, 50);
  CHECK(p.size() < 100);
  CHECK(p.find("99999950 more bytes") != std::string::npos);
  CHECK(json_excerpt(nlohmann::json::parse(R"({"a": "\u001b\u202e"})")) == R"({"a":"\u001b\u202e"})");
}

TEST_CASE("memory admission: a run is counted with its host copies, against the memory available") {
  std::mt19937_64 rng(std::random_device{}());
  // saxpy-shaped: x and y of n floats, y verified against the built-in
  // reference (expected values of y's size), nothing saved.
  const uint64_t n = std::uniform_int_distribution<uint64_t>(1000, 1u << 24)(rng);
  CAPTURE(n);
  const nlohmann::json doc = {
      {"lrrt_manifest", 1},
      {"code_object", {{"host", "saxpy.host.so"}}},
      {"kernel", "saxpy"},
      {"buffers",
       {{{"name", "x"}, {"type", "f32"}, {"count", n}, {"init", {{"random", {{"min", -1}, {"max", 1}}}}}},
        {{"name", "y"}, {"type", "f32"}, {"count", n}, {"init", "zeros"}}}},
      {"args", {{{"type", "f32"}, {"value", 2}}, {{"buffer", "x"}}, {{"buffer", "y"}}, {{"type", "u32"}, {"value", n}}}},
      {"launch", {{"workgroup_size", {64}}, {"global_size", {n}}}},
      {"verify", {{{"buffer", "y"}, {"expected", {{"reference", "saxpy"}}}}}}};
  const Manifest m = parse_manifest(doc, fs::temp_directory_path());
  const uint64_t buffers = 8 * n;
  const MemoryDemand d = memory_demand(m, "host", true);
  CHECK(d.device_bytes == buffers);
  // initial contents (x, y), outputs (y), expected values (y) with the
  // reference's origin of each element (a byte each).
  CHECK(d.host_bytes() == 8 * n + 4 * n + 4 * n + n);
  CHECK(memory_demand(m, "host", false).host_bytes() == 8 * n + 4 * n);  // --no-verify: no expected values
  const uint64_t holds = buffers + d.host_bytes();

  auto limit = [](uint64_t bytes) { setenv("LRRT_TEST_MEMAVAILABLE_BYTES", std::to_string(bytes).c_str(), 1); };
  lr_device_properties_t host{};
  std::strcpy(host.backend, "host");
  std::strcpy(host.name, "test CPU");
  host.memory_bytes = uint64_t(1) << 50;
  // Between "the buffers fit" and "what the run holds fits": before the fix
  // only the buffers were counted (against physical RAM) and this passed.
  const uint64_t between = std::uniform_int_distribution<uint64_t>(buffers, holds - 1)(rng);
  limit(between);
  CHECK(available_host_memory() == between);
  std::string message;
  try {
    check_memory_demand(m, d, host);
  } catch (const DeviceError& e) {
    message = e.what();
  }
  CHECK_MESSAGE(message.find("the run holds " + std::to_string(holds) + " bytes") != std::string::npos, message);
  CHECK_MESSAGE(message.find(std::to_string(between) + " bytes of host memory available") != std::string::npos, message);
  CHECK_MESSAGE(message.find("LRRT_TEST_MEMAVAILABLE_BYTES") != std::string::npos, message);
  // The check can fail: exactly what the run holds fits.
  limit(holds);
  CHECK_NOTHROW(check_memory_demand(m, d, host));
  // A buffer that alone does not fit is named first.
  limit(4 * n - 1);
  CHECK_THROWS_WITH_AS(check_memory_demand(m, d, host), doctest::Contains("/buffers/0: buffer \"x\""), DeviceError);

  // On a GPU the buffers count against the device, the host copies against
  // host memory.
  lr_device_properties_t gpu = host;
  std::strcpy(gpu.backend, "cuda");
  gpu.memory_bytes = buffers;
  limit(d.host_bytes() - 1);
  CHECK_THROWS_WITH_AS(check_memory_demand(m, d, gpu), doctest::Contains("host copies"), DeviceError);
  limit(d.host_bytes());
  CHECK_NOTHROW(check_memory_demand(m, d, gpu));
  gpu.memory_bytes = buffers - 1;
  CHECK_THROWS_WITH_AS(check_memory_demand(m, d, gpu), doctest::Contains("device's"), DeviceError);
  // A reference run on host adds its outputs and its buffers (host memory).
  nlohmann::json cross = doc;
  cross["verify"][0]["expected"] = {{"reference_backend", "host"}};
  CHECK(memory_demand(parse_manifest(cross, fs::temp_directory_path()), "cuda", true).host_bytes() ==
        8 * n + 4 * n + 2 * 8 * n);

  limit(0);
  CHECK(available_host_memory() == 0);  // unknown: nothing is checked
  setenv("LRRT_TEST_MEMAVAILABLE_BYTES", "12GB", 1);
  CHECK_THROWS_AS(available_host_memory(), InputError);
  unsetenv("LRRT_TEST_MEMAVAILABLE_BYTES");
  CHECK(available_host_memory() > 0);  // /proc/meminfo
}

TEST_CASE("strict JSON: a number beyond a double is malformed JSON, not an escaped exception") {
  // Found by fuzz_manifest: nlohmann throws out_of_range (not parse_error) for it.
  for (const char* text : {"77.7e777777", "[1, -9e99999]", "{\"a\": 1e400000}"}) {
    CAPTURE(text);
    CHECK_THROWS_WITH_AS(parse_json_strict(text, "n.json"), doctest::Contains("n.json: malformed JSON"), InputError);
  }
}
