#include "tool/sweep_compare.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace lrrt::tool {

using nlohmann::json;

namespace {

struct SweepCompareState {
  std::string sweep, label, backend;
  double median = 0, noise = 0;
  bool timed = false;
};

// "sweep|n=1024 wg=256" -> the state, for every state of every sweep.
std::map<std::string, SweepCompareState> sweep_compare_index(const json& doc) {
  std::map<std::string, SweepCompareState> out;
  const auto runs = doc.find("runs");
  if (runs == doc.end() || !runs->is_array()) return out;
  for (const auto& r : *runs) {
    if (!r.is_object() || r.value("kind", "") != "sweep" || !r.contains("states") || !r["states"].is_array()) continue;
    const std::string name = r.value("name", "");
    for (const auto& st : r["states"]) {
      if (!st.is_object()) continue;
      SweepCompareState s;
      s.sweep = name;
      s.backend = r.value("backend", "");
      // The axis values as JSON (sorted keys): the same state whatever the order.
      s.label = st.contains("axes") ? st["axes"].dump() : st.value("label", "");
      const json& t = st.contains("timing") ? st["timing"] : json();
      if (t.is_object() && t.contains("median_ns") && t["median_ns"].is_number()) {
        s.timed = st.value("status", "") == "ran";
        s.median = t["median_ns"].get<double>();
        s.noise = t.contains("noise") && t["noise"].is_number() ? t["noise"].get<double>() : 0;
      }
      out[name + "|" + s.label] = s;
    }
  }
  return out;
}

}  // namespace

bool holds_sweeps(const json& doc) {
  if (!doc.is_object() || doc.value("kind", "") != "run" || !doc.contains("runs") || !doc["runs"].is_array()) return false;
  return std::any_of(doc["runs"].begin(), doc["runs"].end(),
                     [](const json& r) { return r.is_object() && r.value("kind", "") == "sweep"; });
}

json compare_sweeps(const json& base, const json& next, double threshold) {
  const auto b = sweep_compare_index(base), n = sweep_compare_index(next);
  json rows = json::array(), only_base = json::array(), only_new = json::array();
  size_t same = 0, faster = 0, slower = 0, unsure = 0;
  for (const auto& [key, bs] : b) {
    auto it = n.find(key);
    if (it == n.end()) {
      only_base.push_back(key);
      continue;
    }
    const SweepCompareState& ns = it->second;
    std::string verdict, reason;
    double ratio = 1;
    if (!bs.timed || !ns.timed || bs.median <= 0) {
      verdict = "unsure";
      reason = "not timed in both (skipped or 0 iterations)";
      ++unsure;
    } else {
      ratio = ns.median / bs.median;
      const double tol = std::max({bs.noise, ns.noise, threshold});
      const double change = ratio - 1;
      if (std::abs(change) <= tol) {
        verdict = "same";
        ++same;
      } else if (change < 0) {
        verdict = "faster";
        ++faster;
      } else {
        verdict = "slower";
        ++slower;
      }
      reason = fmt::format("{:+.2f}% against a tolerance of {:.2f}% (noise {:.2f}% / {:.2f}%, threshold {:.2f}%)", change * 100,
                           tol * 100, bs.noise * 100, ns.noise * 100, threshold * 100);
    }
    rows.push_back({{"name", key},
                    {"benchmark", bs.sweep},
                    {"backend", bs.backend},
                    {"impl", "lrrt"},
                    {"case", bs.label},
                    {"base_median_ns", bs.median},
                    {"new_median_ns", ns.median},
                    {"ratio", ratio},
                    {"p_value", nullptr},
                    {"tested", false},
                    {"verdict", verdict},
                    {"reason", reason}});
  }
  for (const auto& [key, s] : n)
    if (!b.count(key)) only_new.push_back(key);
  return {{"kind", "compare"},
          {"threshold", threshold},
          {"alpha", nullptr},
          {"summary",
           {{"rows", rows.size()}, {"same", same}, {"faster", faster}, {"slower", slower}, {"unsure", unsure}, {"regression", slower > 0}}},
          {"rows", rows},
          {"only_in_base", only_base},
          {"only_in_new", only_new}};
}

}  // namespace lrrt::tool
