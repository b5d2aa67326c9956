// `lrrt run` results: {"kind": "run", "meta", "device", "runs": [...]}.
#include <fmt/format.h>

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

}  // namespace

Table run_records(const json& doc) {
  Table t;
  t.columns = {"manifest",  "name",      "kernel",    "backend", "device",         "device_name",  "work_items", "iterations",
               "min_ns",    "median_ns", "mean_ns",   "stddev_ns", "max_ns",       "bandwidth_gbps", "verification", "mismatches"};
  const std::string device_name = text_of(member(doc, "device"), "name");
  const json& runs = member(doc, "runs");
  if (!runs.is_array()) return t;
  for (const auto& r : runs) {
    const json& timing = member(r, "timing");
    t.rows.push_back({text_of(r, "manifest"), text_of(r, "name"), text_of(r, "kernel"), text_of(r, "backend"),
                      text_of(r, "device_index"), device_name, text_of(member(r, "launch"), "work_items"),
                      text_of(r, "iterations"), text_of(timing, "min_ns"), text_of(timing, "median_ns"),
                      text_of(timing, "mean_ns"), text_of(timing, "stddev_ns"), text_of(timing, "max_ns"),
                      text_of(timing, "bandwidth_gbps"), text_of(member(r, "verification"), "status"),
                      std::to_string(mismatches(r))});
  }
  return t;
}

Layout run_layout(const json& doc) {
  Layout out;
  const json& dev = member(doc, "device");
  const json& runs = member(doc, "runs");
  if (!runs.is_array()) return out;
  for (const auto& r : runs) {
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
        fields.push_back({"bandwidth", fmt::format("{} ({} per iteration)", format_gbps(number_of(t, "bandwidth_gbps")),
                                                   format_bytes(number_of(t, "bytes_per_iteration")))});
    } else {
      fields.push_back({"timing", "none (0 iterations)"});
    }
    const json& v = member(r, "verification");
    fields.push_back({"verification", text_of(v, "status") + (v.contains("reason") ? " (" + text_of(v, "reason") + ")" : "")});
    out.fields(std::move(fields));
    const json& checks = member(v, "checks");
    if (checks.is_array())
      for (const auto& c : checks) {
        if (text_of(c, "status") == "skipped") {
          out.fields({{text_of(c, "buffer"), "skipped: " + text_of(c, "reason")}}, 1);
          continue;
        }
        out.fields({{text_of(c, "buffer"),
                     fmt::format("{}: {} of {} mismatch(es), max abs err {:.3g}, max rel err {:.3g}  [{}, rtol {:g}, atol {:g}]",
                                 text_of(c, "status"), text_of(c, "mismatches"), text_of(c, "compared"),
                                 number_of(c, "max_abs_error"), number_of(c, "max_rel_error"), text_of(c, "method"),
                                 number_of(c, "rtol"), number_of(c, "atol"))}},
                   1);
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
    std::vector<std::pair<std::string, std::string>> saved;
    const json& s = member(r, "saved");
    if (s.is_array())
      for (const auto& e : s) saved.push_back({"saved", text_of(e, "buffer") + " -> " + text_of(e, "npy")});
    if (!saved.empty()) out.fields(std::move(saved));
  }
  return out;
}

}  // namespace lrrt::tool::printers
