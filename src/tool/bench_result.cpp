#include "tool/bench_result.hpp"

#include <optional>

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

using nlohmann::json;

// A key as a JSON pointer's reference token (RFC 6901: ~ is ~0, / is ~1).
std::string json_pointer_escape(const std::string& key) {
  std::string out;
  for (char c : key) out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return out;
}

// Reads a result file field by field: anything of the wrong shape is an
// InputError naming the field's JSON pointer ("/summaries: expected an
// array, found a number"), for every field `lrrt compare` reads, so a file
// of another shape is never compared silently.
class Reader {
 public:
  static const char* type_of(const json& j) {
    switch (j.type()) {
      case json::value_t::object: return "an object";
      case json::value_t::array: return "an array";
      case json::value_t::string: return "a string";
      case json::value_t::boolean: return "a boolean";
      case json::value_t::null: return "null";
      case json::value_t::number_integer:
      case json::value_t::number_unsigned:
      case json::value_t::number_float: return "a number";
      default: return "something else";
    }
  }
  [[noreturn]] static void wrong(const std::string& pointer, const char* expected, const json& found) {
    throw InputError(fmt::format("{}: expected {}, found {}", pointer, expected, type_of(found)));
  }
  // The member, or null when absent.
  static const json* field(const json& object, const char* key) {
    auto it = object.find(key);
    return it == object.end() ? nullptr : &*it;
  }
  static const json& require(const json& object, const std::string& at, const char* key) {
    const json* v = field(object, key);
    if (!v) throw InputError(fmt::format("{}/{}: missing (an lrrt bench result has it)", at, key));
    return *v;
  }
  static const json& object(const json& j, const std::string& at) {
    if (!j.is_object()) wrong(at, "an object", j);
    return j;
  }
  static const json& array(const json& j, const std::string& at) {
    if (!j.is_array()) wrong(at, "an array", j);
    return j;
  }
  static std::string text(const json& j, const std::string& at) {
    if (!j.is_string()) wrong(at, "a string", j);
    return j.get<std::string>();
  }
  static double number(const json& j, const std::string& at) {
    if (!j.is_number()) wrong(at, "a number", j);
    return j.get<double>();
  }
  static uint64_t whole(const json& j, const std::string& at) {
    if (!j.is_number_unsigned() && !(j.is_number_integer() && j.get<int64_t>() >= 0))
      wrong(at, "a whole number of 0 or more", j);
    return j.get<uint64_t>();
  }
  static bool boolean(const json& j, const std::string& at) {
    if (!j.is_boolean()) wrong(at, "true or false", j);
    return j.get<bool>();
  }
  // Optional members: the default when absent.
  static std::string text_or(const json& o, const std::string& at, const char* key, std::string missing = {}) {
    const json* v = field(o, key);
    return v ? text(*v, at + "/" + key) : missing;
  }
  static std::optional<double> number_if(const json& o, const std::string& at, const char* key) {
    const json* v = field(o, key);
    if (!v) return std::nullopt;
    return number(*v, at + "/" + key);
  }
};

Measurement read_measurement(const json& j, const std::string& at) {
  using R = Reader;
  R::object(j, at);
  Measurement m;
  m.benchmark = R::text(R::require(j, at, "benchmark"), at + "/benchmark");
  m.metric = R::text(R::require(j, at, "metric"), at + "/metric");
  m.backend = R::text(R::require(j, at, "backend"), at + "/backend");
  m.impl = R::text(R::require(j, at, "impl"), at + "/impl");
  const std::string params_at = at + "/params";
  for (const auto& [k, v] : R::object(R::require(j, at, "params"), params_at).items()) {
    const std::string key_at = params_at + "/" + json_pointer_escape(k);
    if (k == "backend") continue;
    if (k == "size") m.size = R::whole(v, key_at);
    else if (v.is_string()) m.params[k] = v.get<std::string>();
    else if (v.is_number() || v.is_boolean()) m.params[k] = v.dump();
    else R::wrong(key_at, "a string or a number", v);
  }
  if (const json* v = R::field(j, "bytes")) m.bytes = R::whole(*v, at + "/bytes");
  m.api = R::text_or(j, at, "api");
  if (const json* v = R::field(j, "samples")) {
    const std::string samples_at = at + "/samples";
    size_t i = 0;
    for (const auto& x : R::array(*v, samples_at)) {
      const double ns = R::number(x, fmt::format("{}/{}", samples_at, i++));
      m.samples.push_back(ns);
    }
  }
  // The statistics are recomputed from the samples; without samples they
  // are what the file says.
  const json* stats = R::field(j, "stats");
  if (stats) R::object(*stats, at + "/stats");
  if (!m.samples.empty()) {
    m.stats = compute_stats(m.samples);
  } else {
    if (!stats) throw InputError(fmt::format("{}: has neither samples nor stats", at));
    const std::string s_at = at + "/stats";
    m.stats.samples = 0;
    m.stats.min = R::number_if(*stats, s_at, "min").value_or(0.0);
    m.stats.median = R::number_if(*stats, s_at, "median").value_or(0.0);
    m.stats.mean = R::number_if(*stats, s_at, "mean").value_or(0.0);
    m.stats.stddev = R::number_if(*stats, s_at, "stddev").value_or(0.0);
    m.stats.p90 = R::number_if(*stats, s_at, "p90").value_or(0.0);
    m.stats.max = R::number_if(*stats, s_at, "max").value_or(0.0);
  }
  return m;
}

Summary read_summary(const json& j, const std::string& at) {
  using R = Reader;
  R::object(j, at);
  Summary s;
  s.benchmark = R::text_or(j, at, "benchmark");
  s.backend = R::text_or(j, at, "backend");
  s.name = R::text_or(j, at, "name");
  s.label = R::text_or(j, at, "label");
  s.unit = R::text_or(j, at, "unit");
  s.value = R::number_if(j, at, "value").value_or(0.0);
  s.baseline = R::number_if(j, at, "baseline");
  (void)R::number_if(j, at, "ratio");  // derived: checked, not kept
  s.baseline_label = R::text_or(j, at, "baseline_label");
  s.note = R::text_or(j, at, "note");
  s.text = R::text_or(j, at, "text");
  return s;
}

ResultSet read_results(const json& doc) {
  using R = Reader;
  if (!doc.is_object()) R::wrong("/", "an object (an lrrt bench result)", doc);
  if (const json* kind = R::field(doc, "kind"); kind && (!kind->is_string() || *kind != "bench"))
    throw InputError(fmt::format("/kind: {}, not \"bench\": not an lrrt bench result",
                                 kind->is_string() ? "\"" + printable(kind->get<std::string>(), 40) + "\"" : R::type_of(*kind)));
  if (const json* schema = R::field(doc, "schema"); schema && *schema != kSchema)
    throw InputError(fmt::format("/schema: unsupported result schema {} (this lrrt reads {})",
                                 printable(schema->dump(-1, ' ', false, json::error_handler_t::replace), 60), kSchema));
  const json* measurements = R::field(doc, "measurements");
  if (!measurements) throw InputError("not an lrrt bench result: no \"measurements\" array");
  R::array(*measurements, "/measurements");
  ResultSet r;
  if (const json* v = R::field(doc, "meta")) r.meta = R::object(*v, "/meta");
  if (const json* v = R::field(doc, "devices")) {
    size_t i = 0;
    for (const auto& d : R::array(*v, "/devices")) R::object(d, fmt::format("/devices/{}", i++));
    r.devices = *v;
  }
  size_t i = 0;
  for (const auto& j : *measurements) r.measurements.push_back(read_measurement(j, fmt::format("/measurements/{}", i++)));
  if (const json* v = R::field(doc, "summaries")) {
    i = 0;
    for (const auto& j : R::array(*v, "/summaries")) r.summaries.push_back(read_summary(j, fmt::format("/summaries/{}", i++)));
  }
  if (const json* v = R::field(doc, "errors")) {
    i = 0;
    for (const auto& e : R::array(*v, "/errors")) r.errors.push_back(R::text(e, fmt::format("/errors/{}", i++)));
  }
  // Files from before the field existed were written only at the end.
  if (const json* v = R::field(doc, "complete")) r.complete = R::boolean(*v, "/complete");
  if (const json* v = R::field(doc, "interrupted")) r.interrupted = R::boolean(*v, "/interrupted");
  return r;
}

}  // namespace

ResultSet from_json(const nlohmann::json& doc) {
  try {
    return read_results(doc);
  } catch (const nlohmann::json::exception& e) {
    // Not expected (every field is checked before it is read); still the
    // file's fault, never a crash.
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
