// npy read/write, atomic file writes, printers.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <thread>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tool/atomic_file.hpp"
#include "tool/bundle.hpp"
#include "tool/csv.hpp"
#include "tool/meta.hpp"
#include "result_documents.hpp"
#include "tool/printers/printer.hpp"
#include "tool/units.hpp"

using namespace lrrt::tool;
using lrrt::tool::printers::make_printer;
using lrrt::tool::printers::render;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {
std::span<const std::byte> as_bytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}
fs::path temp_dir(const char* name) {
  fs::path p = fs::temp_directory_path() / (std::string(name) + "-" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}
}  // namespace

TEST_CASE("npy: write then read round trip, header layout") {
  std::vector<int32_t> v = {1, -2, 3, 4, 5, 6};
  std::string file = npy_bytes(DType::i32, {2, 3}, reinterpret_cast<const std::byte*>(v.data()));
  CHECK(file.substr(1, 5) == "NUMPY");
  CHECK(file[6] == 1);
  const size_t header = static_cast<unsigned char>(file[8]) | (static_cast<unsigned char>(file[9]) << 8);
  CHECK((10 + header) % 64 == 0);
  CHECK(file[10 + header - 1] == '\n');
  CHECK(file.find("'descr': '<i4'") != std::string::npos);
  CHECK(file.find("'shape': (2, 3)") != std::string::npos);
  NpyArray a = parse_npy(as_bytes(file), "mem");
  CHECK(a.type == DType::i32);
  CHECK(a.shape == std::vector<uint64_t>{2, 3});
  CHECK(a.count() == 6);
  CHECK(std::memcmp(a.data.data(), v.data(), 24) == 0);
  std::string one = npy_bytes(DType::f64, {3}, reinterpret_cast<const std::byte*>(std::vector<double>{1, 2, 3}.data()));
  CHECK(one.find("'shape': (3,)") != std::string::npos);
}

TEST_CASE("npy: bf16 is written as float32") {
  std::vector<uint16_t> b = {0x3F80, 0xC000};  // 1, -2
  std::string file = npy_bytes(DType::bf16, {2}, reinterpret_cast<const std::byte*>(b.data()));
  NpyArray a = parse_npy(as_bytes(file), "mem");
  CHECK(a.type == DType::f32);
  float f[2];
  std::memcpy(f, a.data.data(), 8);
  CHECK(f[0] == 1.0f);
  CHECK(f[1] == -2.0f);
}

TEST_CASE("npy: reads numpy's own headers (v1 and v2) and rejects what it cannot use") {
  // Exactly what numpy 1.x writes for np.arange(3, dtype='<f4').
  std::string h = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }";
  h.append(128 - 10 - h.size() - 1, ' ');
  h += '\n';
  std::string file = std::string("\x93NUMPY\x01\x00", 8) + char(h.size()) + '\0' + h;
  float vals[3] = {0, 1, 2};
  file.append(reinterpret_cast<char*>(vals), 12);
  NpyArray a = parse_npy(as_bytes(file), "mem");
  CHECK(a.count() == 3);
  // Version 2: 4-byte header length.
  std::string v2 = std::string("\x93NUMPY\x02\x00", 8) + char(h.size()) + std::string(3, '\0') + h;
  v2.append(reinterpret_cast<char*>(vals), 12);
  CHECK(parse_npy(as_bytes(v2), "mem").count() == 3);

  CHECK_THROWS_WITH_AS(parse_npy(as_bytes("not npy at all"), "x.npy"), doctest::Contains("x.npy"), InputError);
  std::string trunc = file.substr(0, file.size() - 4);
  CHECK_THROWS_WITH_AS(parse_npy(as_bytes(trunc), "t.npy"), doctest::Contains("truncated"), InputError);
  std::string fortran = file;
  fortran.replace(fortran.find("False"), 5, "True ");
  CHECK_THROWS_WITH_AS(parse_npy(as_bytes(fortran), "f.npy"), doctest::Contains("Fortran"), InputError);
  std::string big = file;
  big.replace(big.find("<f4"), 3, ">f4");
  CHECK_THROWS_WITH_AS(parse_npy(as_bytes(big), "b.npy"), doctest::Contains("unsupported dtype"), InputError);
}

TEST_CASE("atomic write: complete file, no temporaries, failures leave nothing") {
  fs::path dir = temp_dir("lrrt-atomic");
  write_file_atomic(dir / "a.json", "first");
  write_file_atomic(dir / "a.json", "second");
  std::ifstream in(dir / "a.json");
  std::string s;
  std::getline(in, s);
  CHECK(s == "second");
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) (void)e, ++n;
  CHECK(n == 1);
  CHECK_THROWS_AS(write_file_atomic(dir / "missing" / "b.json", "x"), InputError);
  CHECK_FALSE(fs::exists(dir / "missing"));
  // Renaming over a directory fails: the temporary is removed.
  fs::create_directories(dir / "d.json" / "sub");
  CHECK_THROWS_AS(write_file_atomic(dir / "d.json", "x"), InputError);  // a directory: refused before any temporary
  n = 0;
  for (const auto& e : fs::directory_iterator(dir)) (void)e, ++n;
  CHECK(n == 2);
  fs::remove_all(dir);
}

TEST_CASE("atomic write: links stay links, pipes and devices are written through, the rest is refused") {
  fs::path dir = temp_dir("lrrt-atomic-kinds");
  auto read_all = [](const fs::path& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  auto count = [&] {
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(dir)) (void)e, ++n;
    return n;
  };
  const std::string content = "payload " + std::to_string(std::random_device{}());
  // A link: its target is replaced, the link itself stays a link.
  write_file_atomic(dir / "target.json", "old");
  fs::create_symlink("target.json", dir / "link.json");
  write_file_atomic(dir / "link.json", content);
  CHECK(fs::is_symlink(dir / "link.json"));
  CHECK(read_all(dir / "target.json") == content);
  // A chain of links, and a link into another folder.
  fs::create_directories(dir / "other");
  write_file_atomic(dir / "other" / "t2.json", "old");
  fs::create_symlink(dir / "other" / "t2.json", dir / "l2.json");
  fs::create_symlink("l2.json", dir / "l3.json");
  write_file_atomic(dir / "l3.json", content + "3");
  CHECK(fs::is_symlink(dir / "l3.json"));
  CHECK(fs::is_symlink(dir / "l2.json"));
  CHECK(read_all(dir / "other" / "t2.json") == content + "3");
  // A dangling link is refused, and nothing is created at its target.
  fs::create_symlink("nowhere/x.json", dir / "dangling.json");
  CHECK_THROWS_WITH_AS(write_file_atomic(dir / "dangling.json", "x"), doctest::Contains("symbolic link"), InputError);
  CHECK_THROWS_AS(check_output_path(dir / "dangling.json"), InputError);
  // A character device is written through and stays a device.
  write_file_atomic("/dev/null", content);
  CHECK(fs::is_character_file("/dev/null"));
  // A full device: the write fails as an output error (exit 3), not an input error.
  if (fs::exists("/dev/full")) {
    try {
      write_file_atomic("/dev/full", content);
      FAIL("writing /dev/full succeeded");
    } catch (const OutputError& e) {
      CHECK(std::string(e.what()).find("No space left") != std::string::npos);
      CHECK(e.exit_code() == 3);
    }
  }
  // A FIFO with a reader gets the bytes and stays a FIFO; one without a reader is refused at once.
  const fs::path fifo = dir / "pipe.json";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THROWS_WITH_AS(write_file_atomic(fifo, content), doctest::Contains("no reader"), InputError);
  std::string got;
  std::thread reader([&] { got = read_all(fifo); });
  // The reader may not have opened yet: retry until it has.
  bool written = false;
  for (int i = 0; i < 500 && !written; ++i) {
    try {
      write_file_atomic(fifo, content);
      written = true;
    } catch (const InputError&) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  reader.join();
  CHECK(written);
  CHECK(got == content);
  CHECK(fs::is_fifo(fifo));
  // Directories, sockets, folders that are files: refused up front, nothing created.
  CHECK_THROWS_WITH_AS(check_output_path(dir / "other"), doctest::Contains("a directory"), InputError);
  CHECK_THROWS_WITH_AS(check_output_path(dir / "target.json" / "x.json"), doctest::Contains("Not a directory"), InputError);
  CHECK_THROWS_AS(check_output_path(""), InputError);
  const size_t before = count();
  CHECK_NOTHROW(check_output_path(dir / "new.json"));
  CHECK_FALSE(fs::exists(dir / "new.json"));
  CHECK(count() == before);
  // A replaced file keeps its mode.
  fs::permissions(dir / "target.json", fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  write_file_atomic(dir / "target.json", "again");
  CHECK(fs::status(dir / "target.json").permissions() ==
        (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read));
  fs::remove_all(dir);
}

TEST_CASE("pending files: checked when added, written only at commit, never twice") {
  fs::path dir = temp_dir("lrrt-pending");
  PendingFiles pending;
  pending.check(dir / "a.npy");
  CHECK_THROWS_WITH_AS(pending.check(dir / "." / "a.npy"), doctest::Contains("twice"), InputError);
  CHECK_THROWS_AS(pending.check(dir / "missing" / "b.npy"), InputError);
  const std::string content = std::to_string(std::random_device{}());
  pending.add(dir / "a.npy", content);
  CHECK_FALSE(fs::exists(dir / "a.npy"));  // nothing before commit
  pending.commit();
  std::ifstream in(dir / "a.npy");
  CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == content);
  CHECK(pending.empty());
  fs::remove_all(dir);
}

TEST_CASE("printers: json, csv, table for run and info") {
  json doc = sample_run_document();
  doc["meta"] = {{"lrrt_version", "0.1.0"}};
  CHECK(json::parse(render(doc, "json")) == doc);
  std::string csv = render(doc, "csv");
  std::istringstream lines(csv);
  std::string header, row;
  std::getline(lines, header);
  std::getline(lines, row);
  CHECK(header.rfind("manifest,name,kernel,backend,device,device_name", 0) == 0);
  CHECK(row.find("\"CPU, fast\"") != std::string::npos);  // quoted
  CHECK(row.find(",failed,1") != std::string::npos);
  std::string table = render(doc, "table");
  CHECK(table.find("saxpy") != std::string::npos);
  CHECK(table.find("614.40 GB/s") != std::string::npos);
  CHECK(table.find("[7] got nan expected 3") != std::string::npos);

  json info = {{"kind", "info"},
               {"backends", {{{"name", "host"}, {"usable", true}, {"device_count", 1}, {"message", ""}},
                             {{"name", "cuda"}, {"usable", false}, {"device_count", 0}, {"message", "libcuda.so.1 not found"}}}},
               {"devices", {{{"backend", "host"}, {"index", 0}, {"name", "cpu"}, {"arch", "x86_64"}, {"memory_bytes", 1 << 30}}}}};
  std::string it = render(info, "table");
  CHECK(it.find("libcuda.so.1 not found") != std::string::npos);
  CHECK(it.find("1 GiB") != std::string::npos);
  CHECK(render(info, "csv").find("0,host,") != std::string::npos);

  CHECK_THROWS_WITH_AS(make_printer("xml"), doctest::Contains("markdown"), InputError);
  // Unknown kinds fall back to JSON in every format.
  json other = {{"kind", "something-else"}, {"x", 1}};
  for (const char* f : {"table", "csv", "markdown"}) CHECK(json::parse(render(other, f)) == other);
}

TEST_CASE("printers: human units and csv quoting") {
  CHECK(format_time_ns(512) == "512 ns");
  CHECK(format_time_ns(1500) == "1.50 us");
  CHECK(format_time_ns(4140) == "4.14 us");
  CHECK(format_time_ns(2.5e6) == "2.50 ms");
  CHECK(format_time_ns(3e9) == "3.00 s");
  CHECK(format_bytes(512) == "512 B");
  CHECK(format_bytes(1088) == "1.1 KiB");
  CHECK(format_bytes(4096) == "4 KiB");
  CHECK(format_bytes(64ull << 20) == "64 MiB");
  CHECK(format_bytes(3ull << 29) == "1.5 GiB");
  CHECK(format_gbps(12.345) == "12.35 GB/s");
  CHECK(format_ratio(0.97) == "0.97x");
  CHECK(format_percent(0.477) == "48%");
  CHECK(csv_field("a\"b") == "\"a\"\"b\"");
  CHECK(csv_field("plain") == "plain");
  CHECK(csv_field("a,b") == "\"a,b\"");
  CHECK(csv_field("two\nlines") == "\"two\nlines\"");
  CHECK(csv_field("cr\r") == "\"cr\r\"");
  CHECK(csv_row({"x", "y,z", ""}) == "x,\"y,z\",\n");
  json meta = make_meta("run", {"lrrt", "run"});
  for (const char* k : {"tool", "version", "git_sha", "git_dirty", "argv", "date", "host", "cpu", "cpu_cores", "kernel", "options"})
    CHECK_MESSAGE(meta.contains(k), k);
  CHECK(meta["tool"] == "lrrt run");
  CHECK(meta["date"].get<std::string>().back() == 'Z');
  CHECK(meta["cpu"].is_null());  // no host device given: not described
}
