#include "tool/bench_result.hpp"

#include "lrrt/lrrt.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "tool/errors.hpp"
#include "tool/version.hpp"

namespace lrrt::tool::bench {
namespace {

std::string params_text(const Measurement& m, bool with_backend) {
  std::string out;
  auto add = [&](const std::string& k, const std::string& v) {
    if (!out.empty()) out += ',';
    out += k + '=' + v;
  };
  if (with_backend) add("backend", m.backend);
  for (const auto& [k, v] : m.params) add(k, v);
  if (m.size) add("size", std::to_string(m.size));
  return out;
}

std::string run_command(const char* command) {
  std::string out;
  FILE* p = ::popen(command, "r");
  if (!p) return out;
  std::array<char, 256> buf{};
  while (fgets(buf.data(), buf.size(), p)) out += buf.data();
  int rc = ::pclose(p);
  if (rc != 0) return {};
  while (!out.empty() && std::isspace(static_cast<unsigned char>(out.back()))) out.pop_back();
  return out;
}

std::string value_text(const Measurement& m) {
  if (m.bytes) return fmt::format("{:.2f} GB/s", m.gbps());
  return format_time_ns(m.stats.median);
}

// Ratio of the shown value: GB/s for copies (higher is better), time
// otherwise (lower is better).
std::string ratio_text(const Measurement& lrrt, const Measurement& native) {
  if (lrrt.bytes && native.bytes) {
    double n = native.gbps();
    return n > 0 ? fmt::format("{:.2f}x bw", lrrt.gbps() / n) : "-";
  }
  return native.stats.median > 0 ? fmt::format("{:.2f}x time", lrrt.stats.median / native.stats.median) : "-";
}

struct Row {
  std::string benchmark, backend, label;
  const Measurement* lrrt = nullptr;
  const Measurement* native = nullptr;
};

std::vector<Row> paired_rows(const ResultSet& r) {
  std::vector<Row> rows;
  std::map<std::string, size_t> index;
  for (const auto& m : r.measurements) {
    std::string k = m.case_key();
    auto it = index.find(k);
    if (it == index.end()) {
      it = index.emplace(k, rows.size()).first;
      rows.push_back({m.benchmark, m.backend, m.case_label()});
    }
    Row& row = rows[it->second];
    if (m.impl == "native") row.native = &m;
    else row.lrrt = &m;
  }
  return rows;
}

std::string cell(const Measurement* m) { return m ? value_text(*m) : "-"; }

}  // namespace

std::string Measurement::key() const {
  return fmt::format("{}/{}[{}]/{}", benchmark, metric, params_text(*this, true), impl);
}

std::string Measurement::case_key() const {
  return fmt::format("{}/{}[{}]", benchmark, metric, params_text(*this, true));
}

std::string Measurement::case_label() const {
  std::string out = metric;
  for (const auto& [k, v] : params) out += " " + v;
  if (size) out += " " + format_bytes(size);
  return out;
}

double Measurement::gbps() const {
  return bytes && stats.median > 0 ? double(bytes) / stats.median : 0;
}

const Measurement* ResultSet::find(const std::string& benchmark, const std::string& metric,
                                   const std::string& backend, const std::string& impl,
                                   const std::map<std::string, std::string>& params, uint64_t size) const {
  for (const auto& m : measurements)
    if (m.benchmark == benchmark && m.metric == metric && m.backend == backend && m.impl == impl &&
        m.params == params && m.size == size)
      return &m;
  return nullptr;
}

std::string format_bytes(uint64_t b) {
  if (b >= (1ull << 30) && b % (1ull << 30) == 0) return fmt::format("{} GiB", b >> 30);
  if (b >= (1ull << 20) && b % (1ull << 20) == 0) return fmt::format("{} MiB", b >> 20);
  if (b >= (1ull << 10) && b % (1ull << 10) == 0) return fmt::format("{} KiB", b >> 10);
  if (b >= (1ull << 20)) return fmt::format("{:.1f} MiB", double(b) / double(1ull << 20));
  return fmt::format("{} B", b);
}

std::string format_time_ns(double ns) {
  if (ns < 1e3) return fmt::format("{:.0f} ns", ns);
  if (ns < 1e6) return fmt::format("{:.2f} us", ns / 1e3);
  if (ns < 1e9) return fmt::format("{:.2f} ms", ns / 1e6);
  return fmt::format("{:.2f} s", ns / 1e9);
}

uint64_t parse_size(const std::string& text) {
  std::string t;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c))) t += c;
  size_t pos = 0;
  while (pos < t.size() && std::isdigit(static_cast<unsigned char>(t[pos]))) ++pos;
  if (pos == 0) throw InputError(fmt::format("'{}' is not a size (examples: 4096, 4K, 64KiB, 1M, 1GiB)", text));
  uint64_t v = std::stoull(t.substr(0, pos));
  std::string suffix = t.substr(pos);
  for (auto& c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  uint64_t mult = 1;
  if (suffix.empty() || suffix == "B") mult = 1;
  else if (suffix == "K" || suffix == "KB" || suffix == "KIB") mult = 1ull << 10;
  else if (suffix == "M" || suffix == "MB" || suffix == "MIB") mult = 1ull << 20;
  else if (suffix == "G" || suffix == "GB" || suffix == "GIB") mult = 1ull << 30;
  else throw InputError(fmt::format("'{}': unknown size suffix '{}' (use K, M or G)", text, t.substr(pos)));
  if (v == 0) throw InputError(fmt::format("'{}': a size must be positive", text));
  return v * mult;
}

std::vector<uint64_t> parse_sizes(const std::string& text) {
  std::vector<uint64_t> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    auto dots = item.find("..");
    if (dots == std::string::npos) {
      out.push_back(parse_size(item));
      continue;
    }
    std::string hi_text = item.substr(dots + 2);
    uint64_t step = 4;
    if (auto colon = hi_text.find(':'); colon != std::string::npos) {
      step = std::stoull(hi_text.substr(colon + 1));
      hi_text = hi_text.substr(0, colon);
      if (step < 2) throw InputError(fmt::format("'{}': the step factor must be at least 2", item));
    }
    uint64_t lo = parse_size(item.substr(0, dots)), hi = parse_size(hi_text);
    if (lo > hi) throw InputError(fmt::format("'{}': the range is empty", item));
    for (uint64_t v = lo; v <= hi; v *= step) out.push_back(v);
  }
  if (out.empty()) throw InputError(fmt::format("'{}' lists no sizes", text));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

nlohmann::json collect_meta(const std::vector<std::string>& argv) {
  nlohmann::json meta;
  meta["tool"] = "lrrt bench";
  meta["version"] = version();
  // git_sha is the commit the binary was built from. The tree it runs in
  // says whether that commit had local changes only when it is the same
  // commit; a different checkout (or a stale copy of one) is recorded apart.
  const std::string built = git_sha();
  std::string sha = run_command("git rev-parse --short=12 HEAD 2>/dev/null");
  meta["build_git_sha"] = built;
  meta["git_sha"] = built;
  meta["git_dirty"] = nullptr;  // unknown unless run in the tree it was built from
  if (!sha.empty() && sha == built) {
    std::string status = run_command("git status --porcelain --untracked-files=no 2>/dev/null");
    meta["git_dirty"] = !status.empty();
  } else if (!sha.empty()) {
    meta["cwd_git_sha"] = sha;
  }
  meta["argv"] = argv;
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char date[64];
  std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", &tm);
  meta["date"] = date;
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  meta["host"] = host;
  // The host device describes this machine (CPU model, memory) when the
  // runtime is up; without it (compare), those keys are left out.
  lr_device_t host_device{};
  lr_device_properties_t host_props{};
  if (lr_device_select("host", 0, &host_device) == LR_SUCCESS &&
      lr_device_get_properties(host_device, &host_props) == LR_SUCCESS) {
    meta["cpu"] = host_props.name;
    meta["memory_bytes"] = host_props.memory_bytes;
  }
  meta["cpu_cores"] = std::thread::hardware_concurrency();
  struct utsname u {};
  if (uname(&u) == 0) meta["kernel"] = fmt::format("{} {} {}", u.sysname, u.release, u.machine);
  return meta;
}

nlohmann::json to_json(const ResultSet& r) {
  nlohmann::json doc;
  doc["schema"] = kSchema;
  doc["meta"] = r.meta;
  doc["devices"] = r.devices;
  auto& ms = doc["measurements"] = nlohmann::json::array();
  for (const auto& m : r.measurements) {
    nlohmann::json j;
    j["name"] = m.key();
    j["benchmark"] = m.benchmark;
    j["metric"] = m.metric;
    j["backend"] = m.backend;
    j["impl"] = m.impl;
    nlohmann::json params = nlohmann::json::object();
    params["backend"] = m.backend;
    for (const auto& [k, v] : m.params) params[k] = v;
    if (m.size) params["size"] = m.size;
    j["params"] = params;
    j["unit"] = "ns";
    if (m.bytes) {
      j["bytes"] = m.bytes;
      j["gbps"] = m.gbps();
    }
    j["api"] = m.api;
    j["stats"] = {{"samples", m.stats.samples}, {"min", m.stats.min},     {"median", m.stats.median},
                  {"mean", m.stats.mean},       {"stddev", m.stats.stddev}, {"p90", m.stats.p90},
                  {"max", m.stats.max}};
    j["samples"] = m.samples;
    ms.push_back(std::move(j));
  }
  auto& ss = doc["summaries"] = nlohmann::json::array();
  for (const auto& s : r.summaries)
    ss.push_back({{"benchmark", s.benchmark}, {"backend", s.backend}, {"name", s.name},
                  {"value", s.value}, {"unit", s.unit}, {"text", s.text}});
  doc["errors"] = r.errors;
  return doc;
}

namespace {
ResultSet from_json_unchecked(const nlohmann::json& doc) {
  ResultSet r;
  if (!doc.is_object() || !doc.contains("measurements") || !doc["measurements"].is_array())
    throw InputError("not an lrrt bench result: no \"measurements\" array");
  if (doc.contains("schema") && doc["schema"] != kSchema)
    throw InputError(fmt::format("unsupported result schema {} (this lrrt reads {})", doc["schema"].dump(), kSchema));
  r.meta = doc.value("meta", nlohmann::json::object());
  r.devices = doc.value("devices", nlohmann::json::array());
  size_t i = 0;
  for (const auto& j : doc["measurements"]) {
    try {
      Measurement m;
      m.benchmark = j.at("benchmark").get<std::string>();
      m.metric = j.at("metric").get<std::string>();
      m.backend = j.at("backend").get<std::string>();
      m.impl = j.at("impl").get<std::string>();
      for (const auto& [k, v] : j.at("params").items()) {
        if (k == "backend") continue;
        if (k == "size") m.size = v.get<uint64_t>();
        else m.params[k] = v.is_string() ? v.get<std::string>() : v.dump();
      }
      m.bytes = j.value("bytes", uint64_t(0));
      m.api = j.value("api", std::string());
      m.samples = j.value("samples", std::vector<double>{});
      if (!m.samples.empty()) {
        m.stats = compute_stats(m.samples);
      } else {
        const auto& s = j.at("stats");
        m.stats.samples = 0;
        m.stats.min = s.value("min", 0.0);
        m.stats.median = s.value("median", 0.0);
        m.stats.mean = s.value("mean", 0.0);
        m.stats.stddev = s.value("stddev", 0.0);
        m.stats.p90 = s.value("p90", 0.0);
        m.stats.max = s.value("max", 0.0);
      }
      r.measurements.push_back(std::move(m));
    } catch (const nlohmann::json::exception& e) {
      throw InputError(fmt::format("measurement {} is malformed: {}", i, e.what()));
    }
    ++i;
  }
  if (doc.contains("summaries"))
    for (const auto& s : doc["summaries"])
      r.summaries.push_back({s.value("benchmark", ""), s.value("backend", ""), s.value("name", ""),
                             s.value("value", 0.0), s.value("unit", ""), s.value("text", "")});
  if (doc.contains("errors")) r.errors = doc["errors"].get<std::vector<std::string>>();
  return r;
}
}  // namespace

ResultSet from_json(const nlohmann::json& doc) {
  try {
    return from_json_unchecked(doc);
  } catch (const nlohmann::json::exception& e) {
    // A field of the wrong type anywhere: the file is the problem (exit 2).
    throw InputError(fmt::format("not an lrrt bench result: {}", e.what()));
  }
}

std::string to_csv(const ResultSet& r) {
  auto quote = [](const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string out = "\"";
    for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + "\"";
  };
  std::string out =
      "benchmark,metric,backend,impl,params,size,bytes,samples,min_ns,median_ns,mean_ns,stddev_ns,p90_ns,max_ns,gbps\n";
  for (const auto& m : r.measurements) {
    std::string params;
    for (const auto& [k, v] : m.params) params += (params.empty() ? "" : ";") + k + "=" + v;
    out += fmt::format("{},{},{},{},{},{},{},{},{:.1f},{:.1f},{:.1f},{:.1f},{:.1f},{:.1f},{}\n", quote(m.benchmark),
                       quote(m.metric), m.backend, m.impl, quote(params), m.size, m.bytes, m.stats.samples,
                       m.stats.min, m.stats.median, m.stats.mean, m.stats.stddev, m.stats.p90, m.stats.max,
                       m.bytes ? fmt::format("{:.3f}", m.gbps()) : "");
  }
  return out;
}

std::string to_markdown(const ResultSet& r) {
  std::string out;
  const auto& meta = r.meta;
  out += fmt::format("# lrrt bench results\n\n- lrrt {} (git {}{})\n- {} on {} ({} cores)\n- {}\n\n",
                     meta.value("version", "?"), meta.value("git_sha", "?"),
                     meta.contains("git_dirty") && meta["git_dirty"].is_boolean() && meta["git_dirty"].get<bool>()
                         ? ", dirty"
                         : "",
                     meta.value("date", "?"), meta.value("cpu", "?"), meta.value("cpu_cores", 0),
                     meta.value("host", "?"));
  for (const auto& d : r.devices)
    out += fmt::format("- device: {} `{}` ({})\n", d.value("backend", "?"), d.value("name", "?"), d.value("arch", "?"));
  std::string current;
  for (const auto& row : paired_rows(r)) {
    std::string section = row.benchmark + " (" + row.backend + ")";
    if (section != current) {
      current = section;
      out += fmt::format("\n## {}\n\n| case | lrrt | native | ratio | lrrt p90 | samples |\n| --- | ---: | ---: | ---: | ---: | ---: |\n",
                         section);
    }
    const Measurement* any = row.lrrt ? row.lrrt : row.native;
    out += fmt::format("| {} | {} | {} | {} | {} | {} |\n", row.label, cell(row.lrrt), cell(row.native),
                       row.lrrt && row.native ? ratio_text(*row.lrrt, *row.native) : "-",
                       row.lrrt ? format_time_ns(row.lrrt->stats.p90) : "-", any->stats.samples);
  }
  if (!r.summaries.empty()) {
    out += "\n## Summary\n\n";
    for (const auto& s : r.summaries) out += fmt::format("- **{} ({})**: {}\n", s.benchmark, s.backend, s.text);
  }
  if (!r.errors.empty()) {
    out += "\n## Errors\n\n";
    for (const auto& e : r.errors) out += "- " + e + "\n";
  }
  return out;
}

std::string to_table(const ResultSet& r) {
  auto rows = paired_rows(r);
  size_t w = 4;
  for (const auto& row : rows) w = std::max(w, row.label.size());
  std::string out;
  std::string current;
  for (const auto& row : rows) {
    std::string section = row.benchmark + " on " + row.backend;
    if (section != current) {
      current = section;
      if (!out.empty()) out += "\n";
      out += fmt::format("{}\n  {:<{}}  {:>14}  {:>14}  {:>12}  {:>10}\n", section, "case", w, "lrrt", "native",
                         "ratio", "lrrt p90");
    }
    out += fmt::format("  {:<{}}  {:>14}  {:>14}  {:>12}  {:>10}\n", row.label, w, cell(row.lrrt), cell(row.native),
                       row.lrrt && row.native ? ratio_text(*row.lrrt, *row.native) : "-",
                       row.lrrt ? format_time_ns(row.lrrt->stats.p90) : "-");
  }
  if (!r.summaries.empty()) {
    out += "\nsummary\n";
    for (const auto& s : r.summaries) out += fmt::format("  {} ({}): {}\n", s.benchmark, s.backend, s.text);
  }
  if (!r.errors.empty()) {
    out += "\nerrors\n";
    for (const auto& e : r.errors) out += "  " + e + "\n";
  }
  return out;
}

nlohmann::json to_google_benchmark(const ResultSet& r) {
  nlohmann::json doc;
  const auto& meta = r.meta;
  doc["context"] = {{"date", meta.value("date", "")},
                    {"host_name", meta.value("host", "")},
                    {"executable", "lrrt bench"},
                    {"num_cpus", meta.value("cpu_cores", 0)},
                    {"mhz_per_cpu", 0},
                    {"cpu_scaling_enabled", false},
                    {"caches", nlohmann::json::array()},
                    {"library_build_type", "release"},
                    {"lrrt_version", meta.value("version", "")},
                    {"lrrt_git_sha", meta.value("git_sha", "")}};
  auto& bs = doc["benchmarks"] = nlohmann::json::array();
  for (const auto& m : r.measurements) {
    std::string name = m.key();
    auto row = [&](const char* run_type, const char* aggregate, double value) {
      nlohmann::json j = {{"name", aggregate ? name + "_" + aggregate : name},
                          {"run_name", name},
                          {"run_type", run_type},
                          {"repetitions", m.stats.samples},
                          {"threads", 1},
                          {"iterations", m.stats.samples},
                          {"real_time", value},
                          {"cpu_time", value},
                          {"time_unit", "ns"}};
      if (aggregate) j["aggregate_name"] = aggregate;
      if (m.bytes && value > 0) j["bytes_per_second"] = double(m.bytes) / value * 1e9;
      bs.push_back(std::move(j));
    };
    row("iteration", nullptr, m.stats.median);
    row("aggregate", "mean", m.stats.mean);
    row("aggregate", "median", m.stats.median);
    row("aggregate", "stddev", m.stats.stddev);
  }
  return doc;
}

}  // namespace lrrt::tool::bench
