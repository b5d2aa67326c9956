// Results of `lrrt bench`: one Measurement per (benchmark, case, backend,
// implementation) with its samples and statistics, and summaries derived
// from them; the document (JSON, "schema": "lrrt-bench/1") that the printers
// print and `lrrt compare` reads back, and Google Benchmark's layout of it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tool/bench_stats.hpp"

namespace lrrt::tool::bench {

inline constexpr const char* kSchema = "lrrt-bench/1";

struct Measurement {
  std::string benchmark;  // launch-overhead, copy-bandwidth, ...
  std::string metric;     // enqueue, round-trip, copy, ...
  std::string backend;    // host, cuda, hsa
  std::string impl;       // "lrrt" or "native"
  // Case parameters besides backend: direction, memory, variant ... (size
  // separately, numeric).
  std::map<std::string, std::string> params;
  uint64_t size = 0;      // bytes the case is about (0: none)
  uint64_t bytes = 0;     // bytes moved per operation, for GB/s (0: none)
  std::string api;        // what was called, in words
  std::vector<double> samples;  // nanoseconds per operation
  Stats stats;

  // Identity for matching across runs: everything but the samples.
  std::string key() const;
  // The case without implementation: pairs lrrt with native.
  std::string case_key() const;
  // "h2d pinned 64 MiB" for tables.
  std::string case_label() const;
  // GB/s at the median (bytes / ns); 0 when bytes is 0.
  double gbps() const;
};

// A headline number of a benchmark, as data: what it is, its value, and what
// it is compared with. The printers phrase it (phrase()); the JSON also
// keeps that sentence as "text" for readers of older files.
struct Summary {
  std::string benchmark, backend;
  std::string name;   // stable id within (benchmark, backend): "round-trip", "h2d-pinned-67108864"
  std::string label;  // what the value is: "h2d pinned 64 MiB", "empty dispatch, launch + synchronize"
  double value = 0;
  std::string unit;   // "ns", "GB/s", "x", "fraction"
  std::optional<double> baseline;  // the value compared with, in the same unit
  std::string baseline_label;      // what that is: "native", "host waits"
  std::string note;                // context: "1234 saxpy launches"
  std::string text;                // files without label: their sentence, as read

  // value / baseline; none without a baseline (or when it is 0).
  std::optional<double> ratio() const;
};

// "h2d pinned 64 MiB: 9.45 GB/s vs native 13.30 GB/s (0.71x)": the label,
// the value in its unit, the baseline and the ratio, then "; " and the note.
std::string phrase(const Summary& summary);
// A value in a summary's unit: "4.06 us", "9.45 GB/s", "1.35x", "48%".
std::string format_value(double value, const std::string& unit);

struct ResultSet {
  nlohmann::json meta = nlohmann::json::object();
  nlohmann::json devices = nlohmann::json::array();
  std::vector<Measurement> measurements;
  std::vector<Summary> summaries;
  std::vector<std::string> errors;  // benchmarks that failed, with why
  // false while `lrrt bench` still runs (each rewrite of -o says so) and when
  // it was interrupted: compare refuses such a file unless --allow-missing.
  bool complete = true;
  bool interrupted = false;  // stopped by SIGINT/SIGTERM

  const Measurement* find(const std::string& benchmark, const std::string& metric, const std::string& backend,
                          const std::string& impl,
                          const std::map<std::string, std::string>& params = {}, uint64_t size = 0) const;
};

// The document: {"kind": "bench", "schema", "meta", "devices",
// "measurements", "summaries", "errors", "complete"[, "interrupted"]}.
nlohmann::json to_json(const ResultSet& results);
// Throws InputError naming what is wrong.
ResultSet from_json(const nlohmann::json& doc);

// Google Benchmark's JSON layout ("context" and "benchmarks" with
// real_time/cpu_time in ns, one iteration row plus mean/median/stddev
// aggregates per measurement).
nlohmann::json to_google_benchmark(const ResultSet& results);

}  // namespace lrrt::tool::bench
