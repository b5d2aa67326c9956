// `lrrt bench` results (tool/bench_result.hpp): per benchmark and backend a
// table of cases with lrrt beside native, then the summaries and errors.
#include <fmt/format.h>

#include <map>

#include "tool/bench_result.hpp"
#include "tool/printers/views.hpp"
#include "tool/units.hpp"

namespace lrrt::tool::printers {

using nlohmann::json;
using bench::Measurement;

namespace {

// The number a case is read by: GB/s when it moves bytes, else the median time.
std::string value_text(const Measurement* m) {
  if (!m) return "-";
  return m->bytes ? format_gbps(m->gbps()) : format_time_ns(m->stats.median);
}

// Ratio of the shown value: GB/s for copies (higher is better), time
// otherwise (lower is better).
std::string ratio_text(const Measurement* lrrt, const Measurement* native) {
  if (!lrrt || !native) return "-";
  if (lrrt->bytes && native->bytes)
    return native->gbps() > 0 ? format_ratio(lrrt->gbps() / native->gbps()) + " bw" : "-";
  return native->stats.median > 0 ? format_ratio(lrrt->stats.median / native->stats.median) + " time" : "-";
}

struct Row {
  std::string benchmark, backend, label;
  const Measurement* lrrt = nullptr;
  const Measurement* native = nullptr;
};

// lrrt and native of the same case side by side, in the order measured.
std::vector<Row> paired_rows(const bench::ResultSet& r) {
  std::vector<Row> rows;
  std::map<std::string, size_t> index;
  for (const auto& m : r.measurements) {
    auto it = index.find(m.case_key());
    if (it == index.end()) {
      it = index.emplace(m.case_key(), rows.size()).first;
      rows.push_back({m.benchmark, m.backend, m.case_label()});
    }
    (m.impl == "native" ? rows[it->second].native : rows[it->second].lrrt) = &m;
  }
  return rows;
}

}  // namespace

Table bench_records(const json& doc) {
  const bench::ResultSet r = bench::from_json(doc);
  Table t;
  t.columns = {"benchmark", "metric", "backend", "impl",    "params",    "size",  "bytes", "samples",
               "min_ns",    "median_ns", "mean_ns", "stddev_ns", "p90_ns", "max_ns", "gbps"};
  for (const auto& m : r.measurements) {
    std::string params;
    for (const auto& [k, v] : m.params) params += (params.empty() ? "" : ";") + k + "=" + v;
    const auto& s = m.stats;
    t.rows.push_back({m.benchmark, m.metric, m.backend, m.impl, params, std::to_string(m.size), std::to_string(m.bytes),
                      std::to_string(s.samples), fmt::format("{:.1f}", s.min), fmt::format("{:.1f}", s.median),
                      fmt::format("{:.1f}", s.mean), fmt::format("{:.1f}", s.stddev), fmt::format("{:.1f}", s.p90),
                      fmt::format("{:.1f}", s.max), m.bytes ? fmt::format("{:.3f}", m.gbps()) : ""});
  }
  return t;
}

Layout bench_layout(const json& doc) {
  const bench::ResultSet r = bench::from_json(doc);
  Layout out;
  std::string section;
  Table table;
  auto flush = [&] {
    if (!table.rows.empty()) out.table(std::move(table));
    table = Table{};
  };
  for (const auto& row : paired_rows(r)) {
    const std::string s = row.benchmark + " on " + row.backend;
    if (s != section) {
      flush();
      section = s;
      out.heading(s);
      table.columns = {"case", "lrrt", "native", "ratio", "lrrt p90", "samples"};
      table.align = {Align::Left, Align::Right, Align::Right, Align::Right, Align::Right, Align::Right};
    }
    const Measurement* any = row.lrrt ? row.lrrt : row.native;
    table.rows.push_back({row.label, value_text(row.lrrt), value_text(row.native), ratio_text(row.lrrt, row.native),
                          row.lrrt ? format_time_ns(row.lrrt->stats.p90) : "-", std::to_string(any->stats.samples)});
  }
  flush();
  if (!r.summaries.empty()) {
    out.heading("summary");
    std::vector<std::string> lines;
    for (const auto& s : r.summaries) lines.push_back(fmt::format("{} ({}): {}", s.benchmark, s.backend, bench::phrase(s)));
    out.items(std::move(lines));
  }
  if (!r.errors.empty()) {
    out.heading("errors");
    out.items(r.errors);
  }
  return out;
}

}  // namespace lrrt::tool::printers
