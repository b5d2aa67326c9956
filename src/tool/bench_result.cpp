#include "tool/bench_result.hpp"

#include <fmt/format.h>

#include "tool/errors.hpp"
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
