// The printers (json, csv, markdown, table) for every result kind: JSON
// reads back as written, CSV survives commas, quotes and newlines (checked
// with an RFC 4180 reader here), markdown tables have one cell per column in
// every row and a header from `meta`, terminal tables align their columns.
// (That every command writes the same meta keys is a CLI test.)
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tool/bench_result.hpp"
#include "tool/compare_core.hpp"
#include "tool/meta.hpp"
#include "result_documents.hpp"
#include "lrrt/bundle/text.hpp"
#include "tool/printers/printer.hpp"
#include "tool/printers/text_width.hpp"

using nlohmann::json;
using lrrt::tool::printers::render;
namespace bench = lrrt::tool::bench;

namespace {

// RFC 4180: fields separated by commas, quoted fields may hold commas,
// doubled quotes and line breaks; rows end in "\n".
std::vector<std::vector<std::string>> read_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1);
  std::string field;
  bool quoted = false, was_quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') field += '"', ++i;
      else if (c == '"') quoted = false;
      else field += c;
    } else if (c == '"') {
      REQUIRE_MESSAGE(field.empty(), "a quote inside an unquoted field");
      quoted = was_quoted = true;
    } else if (c == ',') {
      rows.back().push_back(std::move(field)), field.clear(), was_quoted = false;
    } else if (c == '\r') {
      FAIL("a carriage return in an unquoted field");
    } else if (c == '\n') {
      rows.back().push_back(std::move(field)), field.clear(), was_quoted = false;
      rows.emplace_back();
    } else {
      REQUIRE_MESSAGE(!was_quoted, "text after a closing quote");
      field += c;
    }
  }
  REQUIRE_MESSAGE(!quoted, "unterminated quoted field");
  REQUIRE_MESSAGE(rows.back().empty(), "the last row does not end in a newline");
  rows.pop_back();
  return rows;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

size_t markdown_cells(const std::string& line) {
  size_t pipes = 0;
  for (size_t i = 0; i < line.size(); ++i)
    if (line[i] == '|' && (i == 0 || line[i - 1] != '\\')) ++pipes;
  return pipes - 1;
}

// Every markdown table: a header, a rule with one cell per column, rows with
// as many cells. Returns how many tables there were.
size_t check_markdown_tables(const std::string& md) {
  auto lines = lines_of(md);
  size_t tables = 0;
  for (size_t i = 0; i < lines.size();) {
    if (lines[i].empty() || lines[i][0] != '|') {
      ++i;
      continue;
    }
    ++tables;
    const size_t columns = markdown_cells(lines[i]);
    REQUIRE(i + 1 < lines.size());
    CHECK(markdown_cells(lines[i + 1]) == columns);
    CHECK(lines[i + 1].find_first_not_of("|-: ") == std::string::npos);
    for (i += 2; i < lines.size() && !lines[i].empty() && lines[i][0] == '|'; ++i)
      CHECK_MESSAGE(markdown_cells(lines[i]) == columns, lines[i]);
  }
  return tables;
}

// The lines of the terminal table whose header line starts with
// `first_column` (indented): the header and the lines indented as much (a
// table whose first column is left-aligned).
std::vector<std::string> terminal_table(const std::string& text, const std::string& first_column) {
  auto lines = lines_of(text);
  auto indent = [](const std::string& l) { return l.find_first_not_of(' '); };
  std::vector<std::string> out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind("  " + first_column + " ", 0) != 0) continue;
    const size_t header_indent = indent(lines[i]);
    for (; i < lines.size() && !lines[i].empty() && indent(lines[i]) == header_indent; ++i) out.push_back(lines[i]);
    break;
  }
  return out;
}

// Text no CSV writer may pass through unquoted.
std::string awkward_text(std::mt19937& gen) {
  static const std::string alphabet = "ab ,\"\n\r|x";
  std::uniform_int_distribution<size_t> len(1, 12), pick(0, alphabet.size() - 1);
  std::string s = "n";
  for (size_t i = len(gen); i-- > 0;) s += alphabet[pick(gen)];
  return s;
}

json meta_for(const char* command) { return lrrt::tool::make_meta(command, {"lrrt", command}); }

json run_doc(const std::string& name) {
  json doc = sample_run_document();
  doc["runs"][0]["name"] = name;
  doc["meta"] = meta_for("run");
  return doc;
}

json info_doc(const std::string& message) {
  json doc = {{"lrrt_results", 1},
              {"kind", "info"},
              {"backends", {{{"name", "host"}, {"usable", true}, {"device_count", 1}, {"message", message}},
                            {{"name", "cuda"}, {"usable", false}, {"device_count", 0}, {"message", "no driver"}}}},
              {"devices", {{{"backend", "host"}, {"index", 0}, {"backend_ordinal", 0}, {"name", "cpu"}, {"arch", "x86_64"},
                            {"compute_units", 16}, {"memory_bytes", 3ull << 30}, {"details", {{"threads", "16"}}}}}}};
  doc["meta"] = meta_for("info");
  return doc;
}

bench::Measurement measurement(const std::string& metric, const std::string& impl, double center, uint64_t size,
                               std::mt19937& gen) {
  std::normal_distribution<double> d(center, center * 0.05);
  bench::Measurement m;
  m.benchmark = "copy-bandwidth";
  m.metric = metric;
  m.backend = "host";
  m.impl = impl;
  m.params = {{"direction", "h2d"}, {"memory", "pinned"}};
  m.size = m.bytes = size;
  m.api = impl == "lrrt" ? "lr_memcpy" : "memcpy";
  for (int i = 0; i < 20; ++i) m.samples.push_back(std::max(1.0, d(gen)));
  m.stats = bench::compute_stats(m.samples);
  return m;
}

bench::ResultSet bench_results(std::mt19937& gen, double scale = 1) {
  bench::ResultSet r;
  r.meta = meta_for("bench");
  r.devices = json::array({{{"backend", "host"}, {"name", "cpu"}, {"arch", "x86_64"}}});
  for (uint64_t size : {4096ull, 1ull << 20, 64ull << 20})
    for (const char* impl : {"lrrt", "native"})
      r.measurements.push_back(measurement("copy", impl, double(size) / 10 * scale, size, gen));
  bench::Summary s;
  s.benchmark = "copy-bandwidth";
  s.backend = "host";
  s.name = "h2d-pinned";
  s.value = 1.5;
  s.unit = "x";
  s.text = "a summary";
  r.summaries.push_back(s);
  r.errors.push_back("saxpy-bandwidth on host failed: out of memory");
  return r;
}

json compare_doc(std::mt19937& gen) {
  auto base = bench_results(gen), next = bench_results(gen, 1.5);
  next.measurements.erase(next.measurements.begin() + 4);  // lrrt at 64 MiB: only in base
  json doc = bench::report_json(bench::compare_results(base, next), {});
  doc["meta"] = meta_for("compare");
  return doc;
}

// An inspect document in the one shape lrrt_formats writes for every format
// (docs/code-objects.md): a cubin, and a bundle with an hsaco entry and an
// empty one.
json inspect_doc(const std::string& file_name) {
  json doc = json::parse(R"({"kind": "inspect", "lrrt_results": 1, "objects": [
    {"file": "k/saxpy.sm_90.cubin", "format": "cubin", "size": 3848, "targets": [
      {"target": "sm_90", "format": "cubin", "offset": 0, "size": 3848, "e_flags": "0x6005a04", "elf_abi_version": 8,
       "kernels": [{"name": "saxpy", "symbol": "saxpy", "kernarg_size": 28, "explicit_kernarg_size": 28,
                    "group_segment_size": 0, "private_segment_size": 0, "registers": 10, "has_arg_layout": true,
                    "args": [{"index": 0, "offset": 0, "size": 4, "kind": "other"},
                             {"index": 1, "offset": 8, "size": 8, "kind": "other"},
                             {"index": 2, "offset": 16, "size": 8, "kind": "other"},
                             {"index": 3, "offset": 24, "size": 4, "kind": "other"}]}]}]},
    {"file": "k/saxpy.bundle.hsaco", "format": "clang-offload-bundle", "size": 25440, "targets": [
      {"target": "gfx90a:xnack+", "format": "hsaco", "entry": "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+",
       "offset": 12288, "size": 4960, "code_object_version": 5, "metadata_version": "1.2",
       "kernels": [{"name": "saxpy", "symbol": "saxpy.kd", "kernarg_size": 288, "explicit_kernarg_size": 28,
                    "kernarg_align": 8, "sgpr_count": 11, "vgpr_count": 4, "wavefront_size": 64, "has_arg_layout": true,
                    "args": [{"index": 0, "offset": 0, "size": 4, "kind": "by_value", "value_kind": "by_value", "name": "a"},
                             {"index": 1, "offset": 8, "size": 8, "kind": "global_buffer", "value_kind": "global_buffer",
                              "address_space": "global"},
                             {"index": 2, "offset": 32, "size": 4, "kind": "hidden", "value_kind": "hidden_block_count_x"}]},
                   {"name": "opaque", "symbol": "opaque.kd", "has_arg_layout": false, "args": []}]},
      {"target": "host-x86_64-unknown-linux-gnu", "format": "unknown", "entry": "host-x86_64-unknown-linux-gnu",
       "offset": 4096, "size": 0, "note": "empty entry", "kernels": []}]}]})");
  doc["objects"][0]["file"] = file_name;
  doc["meta"] = meta_for("inspect");
  return doc;
}

}  // namespace

TEST_CASE("printers: inspect documents, one shape for every code object format") {
  const unsigned seed = std::random_device{}();
  CAPTURE(seed);  // reproduce a failure by putting this seed here
  std::mt19937 gen(seed);
  // A line break before a '|' once turned a heading into a table row: that
  // name is always tried, a random one beside it.
  for (const std::string& name : {std::string("n\n| a,\"b\r|x"), awkward_text(gen)}) {
    CAPTURE(name);
    const json doc = inspect_doc(name);
    CHECK(json::parse(render(doc, "json")) == doc);

    // CSV: one row per argument (a kernel without any still gets one), the file name intact.
    auto rows = read_csv(render(doc, "csv"));
    REQUIRE(rows.size() == 1 + 4 + 3 + 1);
    CHECK(rows[0][0] == "file");
    for (const auto& r : rows) CHECK(r.size() == rows[0].size());
    CHECK(rows[1][0] == name);
    CHECK(rows[1][2] == "sm_90");
    CHECK(rows[4][8] == "24");  // the cubin's fourth argument at offset 24
    CHECK(rows[7][11] == "hidden_block_count_x");
    CHECK(rows[8][5] == "opaque");

    // The terminal table: a table for a cubin as for an hsaco, never JSON.
    const std::string table = render(doc, "table");
    INFO(table);
    CHECK(table.find('{') == std::string::npos);
    CHECK(table.find("target sm_90 (cubin)") != std::string::npos);
    CHECK(table.find("  e_flags 0x6005a04, elf_abi_version 8") != std::string::npos);
    auto kernels = terminal_table(table, "kernel");
    REQUIRE(kernels.size() >= 2);
    CHECK(kernels[0].find("regs") != std::string::npos);
    CHECK(kernels[0].find("sgpr") == std::string::npos);  // no cubin records it: the column is left out
    CHECK(table.find("saxpy arguments:") != std::string::npos);
    auto lines = lines_of(table);
    auto header = std::find(lines.begin(), lines.end(), "    index  offset  size  kind");
    REQUIRE(header != lines.end());
    REQUIRE(lines.end() - header > 5);
    std::vector<std::string> args(header, header + 5);
    // offset is right-aligned: every value ends under the header's last letter.
    const size_t offset_end = args[0].find("offset") + 5;
    for (size_t i = 1; i < args.size(); ++i) {
      CHECK(std::isdigit(static_cast<unsigned char>(args[i][offset_end])));
      CHECK(args[i][offset_end + 1] == ' ');
    }
    CHECK(table.find("target gfx90a:xnack+ (hsaco; entry hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+, 4960 bytes at offset 12288)") !=
          std::string::npos);
    CHECK(table.find("hidden_block_count_x") != std::string::npos);
    CHECK(table.find("opaque arguments: not recorded in the code object") != std::string::npos);
    CHECK(table.find("note: empty entry") != std::string::npos);
    CHECK(table.find("no kernels listed") != std::string::npos);

    const std::string md = render(doc, "markdown");
    CHECK(md.rfind("# lrrt inspect results", 0) == 0);
    CHECK(check_markdown_tables(md) == 2 + 2);  // a kernel table per target with kernels, an argument table per laid-out kernel
    CHECK(md.find("### target sm_90 (cubin)") != std::string::npos);
  }

  // An inspect document of another shape prints as JSON.
  json old = {{"kind", "inspect"}, {"format", "cubin"}, {"kernels", json::array()}};
  for (const char* f : {"table", "csv", "markdown"}) CHECK(json::parse(render(old, f)) == old);
}

TEST_CASE("printers: json reads back as written, for every kind") {
  const unsigned seed = std::random_device{}();
  CAPTURE(seed);  // reproduce a failure by putting this seed here
  std::mt19937 gen(seed);
  for (const json& doc : {run_doc("saxpy"), info_doc("ok"), compare_doc(gen)}) {
    INFO(doc["kind"]);
    CHECK(json::parse(render(doc, "json")) == doc);
  }
  const auto results = bench_results(gen);
  const auto back = bench::from_json(json::parse(render(bench::to_json(results), "json")));
  REQUIRE(back.measurements.size() == results.measurements.size());
  for (size_t i = 0; i < back.measurements.size(); ++i) {
    CHECK(back.measurements[i].key() == results.measurements[i].key());
    CHECK(back.measurements[i].samples == results.measurements[i].samples);
  }
  CHECK(back.errors == results.errors);
  CHECK(back.meta == results.meta);
}

TEST_CASE("printers: csv quotes commas, quotes and line breaks so a reader gets every field back") {
  const unsigned seed = std::random_device{}();
  CAPTURE(seed);  // reproduce a failure by putting this seed here
  std::mt19937 gen(seed);
  for (int round = 0; round < 20; ++round) {
    const std::string name = awkward_text(gen), message = awkward_text(gen);
    INFO("name: " << json(name).dump() << " message: " << json(message).dump());
    auto run = read_csv(render(run_doc(name), "csv"));
    REQUIRE(run.size() == 2);
    CHECK(run[0].size() == 16);
    REQUIRE(run[1].size() == run[0].size());
    CHECK(run[1][1] == name);
    CHECK(run[1][5] == "CPU, fast");
    CHECK(run[1][14] == "failed");
    CHECK(run[1][15] == "1");

    auto info = read_csv(render(info_doc(message), "csv"));
    REQUIRE(info.size() == 2);  // one row per device
    CHECK(info[1][1] == "host");
    CHECK(info[1].size() == info[0].size());
  }
  auto results = bench_results(gen);
  results.measurements[0].params["variant"] = "a,\"b\"\nc";
  auto rows = read_csv(render(bench::to_json(results), "csv"));
  REQUIRE(rows.size() == 1 + results.measurements.size());
  CHECK(rows[0][0] == "benchmark");
  for (size_t i = 1; i < rows.size(); ++i) CHECK(rows[i].size() == rows[0].size());
  CHECK(rows[1][4].find("variant=a,\"b\"\nc") != std::string::npos);

  auto compared = read_csv(render(compare_doc(gen), "csv"));
  REQUIRE(compared.size() == 3);  // the lrrt rows in common (native ones are left out by default)
  for (const auto& row : compared) CHECK(row.size() == compared[0].size());
  CHECK(compared[1][0].find("copy-bandwidth/copy[") == 0);  // keys hold commas: quoted
}

TEST_CASE("printers: markdown has the meta header and well-formed tables for every kind") {
  const unsigned seed = std::random_device{}();
  CAPTURE(seed);  // reproduce a failure by putting this seed here
  std::mt19937 gen(seed);
  struct Case {
    json doc;
    const char* kind;
    size_t tables;
  };
  const Case cases[] = {{run_doc("a|b"), "run", 0},
                        {info_doc("pipes | here"), "info", 2},
                        {bench::to_json(bench_results(gen)), "bench", 1},
                        {compare_doc(gen), "compare", 1}};
  for (const auto& c : cases) {
    INFO(c.kind);
    const std::string md = render(c.doc, "markdown");
    CHECK(md.rfind(std::string("# lrrt ") + c.kind + " results\n", 0) == 0);
    CHECK(md.find("- lrrt ") != std::string::npos);       // version and git
    CHECK(md.find("- `lrrt " + std::string(c.kind)) != std::string::npos);  // argv
    CHECK(check_markdown_tables(md) >= c.tables);
  }
  const std::string bench_md = render(bench::to_json(bench_results(gen)), "markdown");
  CHECK(bench_md.find("## copy-bandwidth on host") != std::string::npos);
  CHECK(bench_md.find("## errors") != std::string::npos);
  const std::string run_md = render(run_doc("x"), "markdown");
  CHECK(run_md.find("- **verification**: failed") != std::string::npos);
  CHECK(run_md.find("    - [7] got nan expected 3") != std::string::npos);  // nested under its check
}

TEST_CASE("printers: terminal tables align their columns") {
  const unsigned seed = std::random_device{}();
  CAPTURE(seed);  // reproduce a failure by putting this seed here
  std::mt19937 gen(seed);
  const std::string bench_text = render(bench::to_json(bench_results(gen)), "table");
  CHECK(bench_text.find("copy-bandwidth on host") == 0);
  auto rows = terminal_table(bench_text, "case");
  REQUIRE(rows.size() == 4);  // header + 3 sizes, lrrt beside native
  // The last column (samples) is right-aligned: every line ends at the same column.
  for (const auto& r : rows) CHECK(lrrt::tool::printers::text_width(r) == lrrt::tool::printers::text_width(rows[0]));
  CHECK(rows[1].find("x bw") != std::string::npos);

  const std::string info_text = render(info_doc("ok"), "table");
  auto devices = terminal_table(info_text, "#");
  REQUIRE(devices.size() == 2);
  CHECK(devices[0].size() == devices[1].size());
  CHECK(devices[1].find("3 GiB") != std::string::npos);
  CHECK(info_text.find("{") == std::string::npos);  // not JSON

  const std::string compare_text = render(compare_doc(gen), "table");
  CHECK(compare_text.find("SLOWER") != std::string::npos);
  CHECK(compare_text.find("REGRESSION") != std::string::npos);
  CHECK(compare_text.find("1 measurement(s) only in base") != std::string::npos);
  for (const auto& line : lines_of(compare_text)) CHECK(line.rfind("|", 0) != 0);
}

TEST_CASE("printers: names that are not UTF-8 print as \\xNN in every format, and the JSON parses back") {
  // Before json_text the json printer threw nlohmann's type_error 316 on
  // such a name (lrrt inspect: exit 3).
  std::mt19937 rng(std::random_device{}());
  const unsigned seed = rng();
  CAPTURE(seed);
  std::mt19937 gen(seed);
  std::vector<std::string> names = {std::string("s\xff" "p"), std::string("\xc0\xaf"), std::string("ok\xe2\x82"),
                                    "plain", "caf\xc3\xa9"};
  for (int i = 0; i < 20; ++i) {
    std::string raw(std::uniform_int_distribution<size_t>(1, 24)(gen), '\0');
    for (char& c : raw) c = static_cast<char>(std::uniform_int_distribution<int>(0, 255)(gen));
    names.push_back(raw);
  }
  CHECK(lrrt::bundle::escape_invalid_utf8(names[0]) == "s\\xffp");
  CHECK(lrrt::bundle::escape_invalid_utf8("caf\xc3\xa9") == "caf\xc3\xa9");  // valid text unchanged
  for (const auto& raw : names) {
    CAPTURE(lrrt::bundle::printable(raw));
    json target{{"target", "x86_64"}, {"format", "host-so"}, {"offset", 0}, {"size", 1},
                {"kernels", json::array({{{"name", raw}, {"symbol", raw}, {"has_arg_layout", true},
                                          {"args", json::array({{{"index", 0}, {"offset", 0}, {"size", 8},
                                                                 {"kind", "by_value"}, {"name", raw}}})}}})}};
    json doc{{"kind", "inspect"}, {"lrrt_results", 1},
             {"objects", json::array({{{"file", raw + ".so"}, {"format", "host-so"}, {"size", 1},
                                       {"targets", json::array({target})}}})},
             {"meta", {{"argv", json::array({"lrrt", raw})}, {raw, 1}}}};
    const std::string shown = lrrt::bundle::escape_invalid_utf8(raw);
    CHECK(lrrt::bundle::is_valid_utf8(shown));
    const json back = json::parse(lrrt::tool::printers::json_text(doc));
    CHECK(back["objects"][0]["targets"][0]["kernels"][0]["name"] == shown);
    CHECK(back["objects"][0]["targets"][0]["kernels"][0]["args"][0]["name"] == shown);
    CHECK(back["objects"][0]["file"] == shown + ".so");
    CHECK(back["meta"]["argv"][1] == shown);
    CHECK(back["meta"].contains(shown));  // keys too
    for (const auto& format : lrrt::tool::printers::formats()) {
      CAPTURE(format);
      const std::string text = render(doc, format);
      CHECK(lrrt::bundle::is_valid_utf8(text));
      if (format == "json") CHECK(json::parse(text) == back);
    }
  }
}
