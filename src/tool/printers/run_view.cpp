// `lrrt run` results: {"kind": "run", "meta", "device", "runs": [...]}.
#include <fmt/format.h>

#include <algorithm>

#include "tool/printers/views.hpp"
#include "tool/units.hpp"

namespace lrrt::tool::printers {

using nlohmann::json;

namespace {

std::string dims(const json& a) {
  std::string out;
  if (a.is_array())
    for (const auto& v : a) out += (out.empty() ? "" : " x ") + v.dump();
  return out;
}

std::string value_text(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

uint64_t mismatches(const json& run) {
  uint64_t n = 0;
  const json& checks = member(member(run, "verification"), "checks");
  if (checks.is_array())
    for (const auto& c : checks) n += static_cast<uint64_t>(number_of(c, "mismatches"));
  return n;
}

// A run's "warnings" (a poisoned buffer read), one field each.
void warning_fields(std::vector<std::pair<std::string, std::string>>& fields, const json& run) {
  const json& w = member(run, "warnings");
  if (w.is_array())
    for (const auto& e : w) fields.push_back({"warning", value_text(e)});
}

void check_blocks(Layout& out, const json& checks) {
  if (checks.is_array())
    for (const auto& c : checks) {
      // Sequence runs tag each check with the way it verified.
      const std::string label = c.contains("way") ? text_of(c, "way") + ": " + text_of(c, "buffer") : text_of(c, "buffer");
      if (text_of(c, "status") == "skipped") {
        out.fields({{label, "skipped: " + text_of(c, "reason")}}, 1);
        continue;
      }
      out.fields({{label,
                   fmt::format("{}: {} of {} mismatch(es), max abs err {:.3g}, max rel err {:.3g}  [{}, rtol {:g}, atol {:g}]",
                               text_of(c, "status"), text_of(c, "mismatches"), text_of(c, "compared"),
                               number_of(c, "max_abs_error"), number_of(c, "max_rel_error"), text_of(c, "method"),
                               number_of(c, "rtol"), number_of(c, "atol"))}},
                 1);
      if (c.contains("vacuous")) out.fields({{label, "vacuous: " + text_of(c, "reason")}}, 1);
      std::vector<std::string> first;
      const json& mm = member(c, "first_mismatches");
      if (mm.is_array())
        for (const auto& m : mm) {
          std::string where = m.contains("coords") ? member(m, "coords").dump() : "[" + text_of(m, "index") + "]";
          first.push_back(fmt::format("{} got {} expected {}", where, value_text(member(m, "got")),
                                      value_text(member(m, "expected"))));
        }
      if (!first.empty()) out.items(std::move(first), 2);
    }
}

std::string timing_text(const json& t, const json& r) {
  return fmt::format("median {}  min {}  mean {} ± {}  max {}  ({} iterations, {} warm-up)", format_time_ns(number_of(t, "median_ns")),
                     format_time_ns(number_of(t, "min_ns")), format_time_ns(number_of(t, "mean_ns")),
                     format_time_ns(number_of(t, "stddev_ns")), format_time_ns(number_of(t, "max_ns")), text_of(r, "iterations"),
                     text_of(r, "warmup"));
}

void sequence_layout(Layout& out, const json& dev, const json& r) {
  const json& seq = member(r, "sequence");
  out.heading(fmt::format("{}: sequence of {} steps ({} kernel dispatches, {} copies, {} fills) on {} device {} ({}, {})",
                          text_of(r, "name"), text_of(seq, "steps"), text_of(seq, "dispatches"), text_of(seq, "copies"),
                          text_of(seq, "fills"), text_of(r, "backend"), text_of(r, "device_index"), text_of(dev, "name"),
                          text_of(dev, "arch")));
  std::vector<std::pair<std::string, std::string>> fields;
  const json& patch = member(seq, "patch");
  if (patch.is_object())
    fields.push_back({"patch", fmt::format("argument {} of step {} (kernarg offset {}) takes {} in turn", text_of(patch, "arg"),
                                           text_of(patch, "step"), text_of(patch, "offset"), member(patch, "values").dump())});
  const json& ways = member(r, "ways");
  if (ways.is_array())
    for (const auto& w : ways) {
      const json& t = member(w, "timing");
      const std::string way = text_of(w, "way");
      fields.push_back({way, t.is_object() ? fmt::format("{} per replay, {} per dispatch", format_time_ns(number_of(t, "median_ns")),
                                                         format_time_ns(number_of(t, "per_dispatch_ns")))
                                           : "not timed (0 iterations)"});
      if (t.is_object()) fields.push_back({way + " timing", timing_text(t, r)});
      const json& v = member(w, "verification");
      fields.push_back({way + " verification", text_of(v, "status") + (v.contains("reason") ? " (" + text_of(v, "reason") + ")" : "")});
    }
  if (member(r, "eager_over_replay").is_number())
    fields.push_back({"eager / replay", fmt::format("{:.2f}x", number_of(r, "eager_over_replay"))});
  const json& v = member(r, "verification");
  fields.push_back({"verification", text_of(v, "status") + (v.contains("reason") ? " (" + text_of(v, "reason") + ")" : "")});
  warning_fields(fields, r);
  out.fields(std::move(fields));
  check_blocks(out, member(v, "checks"));
  if (r.contains("plan")) {
    out.heading("plan", 1);
    plan_blocks(out, member(r, "plan"), 0);
  }
}

}  // namespace

Table run_records(const json& doc) {
  Table t;
  t.columns = {"manifest",  "name",      "kernel",    "backend", "device",         "device_name",  "work_items", "iterations",
               "min_ns",    "median_ns", "mean_ns",   "stddev_ns", "max_ns",       "bandwidth_gbps", "verification", "mismatches"};
  const std::string device_name = text_of(member(doc, "device"), "name");
  const json& runs = member(doc, "runs");
  if (!runs.is_array()) return t;
  // With a sweep in the document: a row per state, the axis values as
  // columns (after the columns of every run), then the sweep's measures.
  bool sweeps = false;
  for (const auto& r : runs) sweeps = sweeps || text_of(r, "kind") == "sweep";
  const size_t fixed = t.columns.size();
  std::vector<std::string> axes;
  if (sweeps) {
    axes = sweep_columns(doc);
    for (const char* c : {"state", "status", "reason"}) t.columns.push_back(c);
    for (const auto& a : axes) {
      const bool clash = std::find(t.columns.begin(), t.columns.end(), a) != t.columns.end() || a == "noise" ||
                         a == "criterion_met" || a == "elements_per_second" || a == "percent_of_peak" || a == "peak_source";
      t.columns.push_back(clash ? "axis_" + a : a);
    }
    for (const char* c : {"noise", "criterion_met", "elements_per_second", "percent_of_peak", "peak_source"}) t.columns.push_back(c);
  }
  for (const auto& r : runs) {
    if (text_of(r, "kind") == "sweep") {
      sweep_rows(t, doc, r, axes, fixed);
      continue;
    }
    if (text_of(r, "kind") == "sequence") {
      // One row per way: name/eager, name/replay, name/patched.
      const json& ways = member(r, "ways");
      if (ways.is_array())
        for (const auto& w : ways) {
          const json& timing = member(w, "timing");
          uint64_t n = 0;
          const json& checks = member(member(w, "verification"), "checks");
          if (checks.is_array())
            for (const auto& c : checks) n += static_cast<uint64_t>(number_of(c, "mismatches"));
          t.rows.push_back({text_of(r, "manifest"), text_of(r, "name") + "/" + text_of(w, "way"), text_of(r, "kernel"),
                            text_of(r, "backend"), text_of(r, "device_index"), device_name, "", text_of(r, "iterations"),
                            text_of(timing, "min_ns"), text_of(timing, "median_ns"), text_of(timing, "mean_ns"),
                            text_of(timing, "stddev_ns"), text_of(timing, "max_ns"), "",
                            text_of(member(w, "verification"), "status"), std::to_string(n)});
        }
      continue;
    }
    const json& timing = member(r, "timing");
    t.rows.push_back({text_of(r, "manifest"), text_of(r, "name"), text_of(r, "kernel"), text_of(r, "backend"),
                      text_of(r, "device_index"), device_name, text_of(member(r, "launch"), "work_items"),
                      text_of(r, "iterations"), text_of(timing, "min_ns"), text_of(timing, "median_ns"),
                      text_of(timing, "mean_ns"), text_of(timing, "stddev_ns"), text_of(timing, "max_ns"),
                      text_of(timing, "bandwidth_gbps"), text_of(member(r, "verification"), "status"),
                      std::to_string(mismatches(r))});
  }
  for (auto& row : t.rows) row.resize(t.columns.size());
  return t;
}

Layout run_layout(const json& doc) {
  Layout out;
  const json& dev = member(doc, "device");
  const json& runs = member(doc, "runs");
  if (!runs.is_array()) return out;
  if (member(doc, "interrupted").is_boolean() && doc["interrupted"].get<bool>())
    out.text("interrupted: these results hold only what finished", true);
  for (const auto& r : runs) {
    if (text_of(r, "kind") == "sweep") {
      sweep_layout(out, dev, r);
      continue;
    }
    if (text_of(r, "kind") == "sequence") {
      sequence_layout(out, dev, r);
      std::vector<std::pair<std::string, std::string>> saved;
      const json& s = member(r, "saved");
      if (s.is_array())
        for (const auto& e : s) saved.push_back({"saved", text_of(e, "buffer") + " -> " + text_of(e, "npy")});
      if (!saved.empty()) out.fields(std::move(saved));
      continue;
    }
    out.heading(fmt::format("{}: kernel {} on {} device {} ({}, {})", text_of(r, "name"), text_of(r, "kernel"),
                            text_of(r, "backend"), text_of(r, "device_index"), text_of(dev, "name"),
                            text_of(dev, "arch")));
    const json& launch = member(r, "launch");
    std::vector<std::pair<std::string, std::string>> fields = {
        {"launch", fmt::format("{} workgroups of {} ({} work-items), {} dynamic shared",
                               dims(member(launch, "workgroup_count")), dims(member(launch, "workgroup_size")),
                               text_of(launch, "work_items"), format_bytes(number_of(launch, "dynamic_shared_bytes")))}};
    const json& t = member(r, "timing");
    if (t.is_object()) {
      fields.push_back({"timing", fmt::format("median {}  min {}  mean {} ± {}  max {}  ({} iterations, {} warm-up)",
                                              format_time_ns(number_of(t, "median_ns")),
                                              format_time_ns(number_of(t, "min_ns")),
                                              format_time_ns(number_of(t, "mean_ns")),
                                              format_time_ns(number_of(t, "stddev_ns")),
                                              format_time_ns(number_of(t, "max_ns")), text_of(r, "iterations"),
                                              text_of(r, "warmup"))});
      if (t.contains("bandwidth_gbps"))
        fields.push_back({"bandwidth", fmt::format("{} ({} per iteration){}", format_gbps(number_of(t, "bandwidth_gbps")),
                                                   format_bytes(number_of(t, "bytes_per_iteration")),
                                                   t.contains("percent_of_peak")
                                                       ? fmt::format(", {:.1f}% of the {} peak of {}", number_of(t, "percent_of_peak"),
                                                                     text_of(t, "peak_source"), format_gbps(number_of(t, "peak_bandwidth_gbps")))
                                                       : "")});
      if (t.contains("elements_per_second"))
        fields.push_back({"elements", fmt::format("{:.4g} per second", number_of(t, "elements_per_second"))});
      if (t.contains("criterion"))
        fields.push_back({"stopped", fmt::format("{} (noise {:.2f}%{})", text_of(member(t, "criterion"), "stop"), number_of(t, "noise") * 100,
                                                 member(t, "criterion").value("met", true) ? "" : ", criterion NOT met")});
    } else {
      fields.push_back({"timing", "none (0 iterations)"});
    }
    const json& v = member(r, "verification");
    fields.push_back({"verification", text_of(v, "status") + (v.contains("reason") ? " (" + text_of(v, "reason") + ")" : "")});
    warning_fields(fields, r);
    out.fields(std::move(fields));
    check_blocks(out, member(v, "checks"));
    std::vector<std::pair<std::string, std::string>> saved;
    const json& s = member(r, "saved");
    if (s.is_array())
      for (const auto& e : s) saved.push_back({"saved", text_of(e, "buffer") + " -> " + text_of(e, "npy")});
    if (!saved.empty()) out.fields(std::move(saved));
  }
  // --device all: each manifest's median per device, so one slow device
  // stands out.
  const json& spread = member(doc, "spread");
  if (spread.is_array() && !spread.empty()) {
    out.heading("Spread over the devices (median time per launch or replay)");
    Table t;
    t.columns = {"manifest", "fastest", "slowest", "median of devices", "slowest / median", "slowest / fastest"};
    t.align = {Align::Left, Align::Left, Align::Left, Align::Right, Align::Right, Align::Right};
    for (const auto& sp : spread) {
      const json& per = member(sp, "median_ns_per_device");
      auto at = [&](const char* which) {
        const std::string d = text_of(sp, which);
        return fmt::format("device {} ({})", d, format_time_ns(number_of(per, d.c_str())));
      };
      t.rows.push_back({text_of(sp, "name"), at("fastest_device"), at("slowest_device"),
                        format_time_ns(number_of(sp, "median_of_devices_ns")),
                        fmt::format("{:.2f}x", number_of(sp, "slowest_over_median")),
                        fmt::format("{:.2f}x", number_of(sp, "slowest_over_fastest"))});
    }
    out.table(std::move(t));
  }
  return out;
}

}  // namespace lrrt::tool::printers
