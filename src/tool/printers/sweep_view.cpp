// A sweep inside `lrrt run` results ({"kind": "sweep", "axes", "states"}):
// one row per state with the axis values as columns.
#include <fmt/format.h>

#include <set>

#include "tool/printers/views.hpp"
#include "tool/units.hpp"

namespace lrrt::tool::printers {

using nlohmann::json;

namespace {

std::string sweep_value_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  return v.dump();
}

std::vector<std::string> sweep_axis_names(const json& run) {
  std::vector<std::string> names;
  const json& axes = member(run, "axes");
  if (axes.is_array())
    for (const auto& a : axes) names.push_back(text_of(a, "name"));
  return names;
}

uint64_t sweep_mismatches(const json& state) {
  uint64_t n = 0;
  const json& checks = member(member(state, "verification"), "checks");
  if (checks.is_array())
    for (const auto& c : checks) n += static_cast<uint64_t>(number_of(c, "mismatches"));
  return n;
}

std::string sweep_percent(const json& t) {
  return member(t, "percent_of_peak").is_number() ? fmt::format("{:.1f}%", number_of(t, "percent_of_peak")) : "";
}

std::string sweep_rate(double per_second) {
  if (per_second <= 0) return "";
  if (per_second >= 1e9) return fmt::format("{:.2f} G/s", per_second / 1e9);
  if (per_second >= 1e6) return fmt::format("{:.2f} M/s", per_second / 1e6);
  return fmt::format("{:.3g} /s", per_second);
}

}  // namespace

std::vector<std::string> sweep_columns(const json& doc) {
  std::vector<std::string> axes;
  std::set<std::string> seen;
  const json& runs = member(doc, "runs");
  if (runs.is_array())
    for (const auto& r : runs)
      if (text_of(r, "kind") == "sweep")
        for (const auto& n : sweep_axis_names(r))
          if (seen.insert(n).second) axes.push_back(n);
  return axes;
}

void sweep_rows(Table& t, const json& doc, const json& run, const std::vector<std::string>& axes, size_t fixed_columns) {
  const std::string device_name = text_of(member(doc, "device"), "name");
  const json& states = member(run, "states");
  if (!states.is_array()) return;
  for (const auto& st : states) {
    const json& timing = member(st, "timing");
    std::vector<std::string> row = {text_of(run, "manifest"), text_of(run, "name"), text_of(run, "kernel"),
                                    text_of(run, "backend"), text_of(run, "device_index"), device_name,
                                    text_of(member(st, "launch"), "work_items"), text_of(timing, "sample_count"),
                                    text_of(timing, "min_ns"), text_of(timing, "median_ns"), text_of(timing, "mean_ns"),
                                    text_of(timing, "stddev_ns"), text_of(timing, "max_ns"), text_of(timing, "bandwidth_gbps"),
                                    text_of(member(st, "verification"), "status"),
                                    text_of(st, "status") == "ran" ? std::to_string(sweep_mismatches(st)) : ""};
    row.resize(fixed_columns);
    const json& values = member(st, "axes");
    row.push_back(text_of(st, "state"));
    row.push_back(text_of(st, "status"));
    row.push_back(text_of(st, "reason"));
    for (const auto& a : axes) row.push_back(values.is_object() && values.contains(a) ? sweep_value_text(values[a]) : "");
    const json& c = member(timing, "criterion");
    row.push_back(text_of(timing, "noise"));
    row.push_back(c.is_object() ? (c.value("met", false) ? "true" : "false") : "");
    row.push_back(text_of(timing, "elements_per_second"));
    row.push_back(text_of(timing, "percent_of_peak"));
    row.push_back(text_of(timing, "peak_source"));
    t.rows.push_back(std::move(row));
  }
}

void sweep_layout(Layout& out, const json& dev, const json& r) {
  const std::vector<std::string> axes = sweep_axis_names(r);
  std::string over;
  const json& axes_json = member(r, "axes");
  if (axes_json.is_array())
    for (const auto& a : axes_json)
      over += (over.empty() ? "" : " x ") + fmt::format("{} ({})", text_of(a, "name"), member(a, "values").size());
  out.heading(fmt::format("{}: sweep of {} states over {} on {} device {} ({}, {})", text_of(r, "name"), text_of(r, "state_count"),
                          over, text_of(r, "backend"), text_of(r, "device_index"), text_of(dev, "name"), text_of(dev, "arch")));
  std::vector<std::pair<std::string, std::string>> fields;
  fields.push_back({"kernel", text_of(r, "kernel")});
  const json& zip = member(r, "zip");
  if (zip.is_array() && !zip.empty()) fields.push_back({"zip", zip.dump()});
  fields.push_back({"states", fmt::format("{} ran, {} skipped{}", text_of(r, "states_run", "0"), text_of(r, "states_skipped", "0"),
                                          member(r, "interrupted").is_boolean() && r["interrupted"].get<bool>()
                                              ? fmt::format(", interrupted after {} of {}", member(r, "states").size(),
                                                            text_of(r, "state_count"))
                                              : "")});
  if (number_of(r, "states_criterion_not_met") > 0)
    fields.push_back({"noise criterion", fmt::format("not met in {} state(s)", text_of(r, "states_criterion_not_met"))});
  const json& v = member(r, "verification");
  fields.push_back({"verification", fmt::format("{} (--verify {}; {} passed, {} failed)", text_of(v, "status"), text_of(r, "verify"),
                                                text_of(v, "states_passed", "0"), text_of(v, "states_failed", "0"))});
  const json& mem = member(dev, "memory");
  if (number_of(mem, "peak_bandwidth_gbps") > 0)
    fields.push_back({"peak bandwidth", fmt::format("{} ({})", format_gbps(number_of(mem, "peak_bandwidth_gbps")),
                                                    text_of(mem, "peak_bandwidth_method"))});
  out.fields(std::move(fields));

  Table t;
  t.columns = axes;
  for (const char* c : {"status", "median", "noise", "samples", "GB/s", "% peak", "elements/s", "verification"}) t.columns.push_back(c);
  t.align.assign(axes.size(), Align::Right);
  for (Align a : {Align::Left, Align::Right, Align::Right, Align::Right, Align::Right, Align::Right, Align::Right, Align::Left})
    t.align.push_back(a);
  std::vector<std::string> notes;
  const json& states = member(r, "states");
  if (states.is_array())
    for (const auto& st : states) {
      std::vector<std::string> row;
      const json& values = member(st, "axes");
      for (const auto& a : axes) row.push_back(values.is_object() && values.contains(a) ? sweep_value_text(values[a]) : "");
      const json& tm = member(st, "timing");
      if (text_of(st, "status") == "skipped") {
        row.push_back("skipped");
        row.resize(t.columns.size());
        notes.push_back(fmt::format("state {} ({}): skipped: {}", text_of(st, "state"), text_of(st, "label"), text_of(st, "reason")));
      } else {
        const json& c = member(tm, "criterion");
        const bool met = !c.is_object() || c.value("met", true);
        row.push_back(met ? "ok" : "noisy");
        row.push_back(tm.is_object() ? format_time_ns(number_of(tm, "median_ns")) : "");
        row.push_back(tm.is_object() ? fmt::format("{:.2f}%", number_of(tm, "noise") * 100) : "");
        row.push_back(text_of(tm, "sample_count"));
        row.push_back(member(tm, "bandwidth_gbps").is_number() ? format_gbps(number_of(tm, "bandwidth_gbps")) : "");
        row.push_back(sweep_percent(tm));
        row.push_back(sweep_rate(number_of(tm, "elements_per_second")));
        const json& sv = member(st, "verification");
        const std::string status = text_of(sv, "status");
        row.push_back(status == "failed" ? fmt::format("FAILED ({} mismatches)", sweep_mismatches(st)) : status);
        if (!met) notes.push_back(fmt::format("state {} ({}): {}", text_of(st, "state"), text_of(st, "label"), text_of(c, "stop")));
      }
      t.rows.push_back(std::move(row));
    }
  out.table(std::move(t));
  if (!notes.empty()) out.items(std::move(notes));
}

}  // namespace lrrt::tool::printers
