#include "tool/bench_result.hpp"

#include <fmt/format.h>

#include "tool/bundle.hpp"
#include "tool/units.hpp"

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

std::optional<double> Summary::ratio() const {
  if (!baseline || *baseline == 0) return std::nullopt;
  return value / *baseline;
}

std::string format_value(double value, const std::string& unit) {
  if (unit == "ns") return format_time_ns(value);
  if (unit == "GB/s") return format_gbps(value);
  if (unit == "x") return format_ratio(value);
  if (unit == "fraction") return format_percent(value);
  return fmt::format("{:g}{}{}", value, unit.empty() ? "" : " ", unit);
}

std::string phrase(const Summary& s) {
  if (s.label.empty()) return s.text;  // an older file: its own sentence
  std::string out = s.label + ": " + format_value(s.value, s.unit);
  if (s.baseline) {
    out += fmt::format(" vs {} {}", s.baseline_label, format_value(*s.baseline, s.unit));
    if (auto ratio = s.ratio()) out += fmt::format(" ({})", format_ratio(*ratio));
  }
  if (!s.note.empty()) out += "; " + s.note;
  return out;
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

nlohmann::json to_json(const ResultSet& r) {
  nlohmann::json doc;
  doc["kind"] = "bench";
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
  for (const auto& s : r.summaries) {
    nlohmann::json j = {{"benchmark", s.benchmark}, {"backend", s.backend}, {"name", s.name}, {"label", s.label},
                        {"value", s.value},         {"unit", s.unit}};
    if (s.baseline) {
      j["baseline"] = *s.baseline;
      j["baseline_label"] = s.baseline_label;
    }
    if (auto ratio = s.ratio()) j["ratio"] = *ratio;
    if (!s.note.empty()) j["note"] = s.note;
    j["text"] = phrase(s);
    ss.push_back(std::move(j));
  }
  doc["errors"] = r.errors;
  doc["complete"] = r.complete;
  if (r.interrupted) doc["interrupted"] = true;
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
  if (doc.contains("summaries") && doc["summaries"].is_array())
    for (const auto& j : doc["summaries"]) {
      if (!j.is_object()) continue;
      auto text = [&](const char* key) {
        auto it = j.find(key);
        return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
      };
      Summary s;
      s.benchmark = text("benchmark");
      s.backend = text("backend");
      s.name = text("name");
      s.label = text("label");
      s.unit = text("unit");
      s.value = j.contains("value") && j["value"].is_number() ? j["value"].get<double>() : 0.0;
      if (j.contains("baseline") && j["baseline"].is_number()) s.baseline = j["baseline"].get<double>();
      s.baseline_label = text("baseline_label");
      s.note = text("note");
      s.text = text("text");
      r.summaries.push_back(std::move(s));
    }
  if (doc.contains("errors")) r.errors = doc["errors"].get<std::vector<std::string>>();
  // Files from before the field existed were written only at the end.
  r.complete = doc.value("complete", true);
  r.interrupted = doc.value("interrupted", false);
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
