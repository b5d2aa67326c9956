#include "tool/sweep_runner.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace lrrt::tool {

using nlohmann::json;

namespace {

// The run result's fields a state keeps: what varies with the state. The
// code object, buffers and saves are the sweep's (or the first state's).
json sweep_state_entry(const Sweep& s, uint64_t k, json run) {
  json e{{"state", k}, {"axes", s.state_values(k)}, {"label", s.state_label(k)}, {"status", "ran"}};
  for (const char* key : {"kind", "launch", "warmup", "iterations", "sequence", "timing", "ways", "eager_over_replay",
                          "verification", "warnings"})
    if (run.contains(key)) e[key] = std::move(run[key]);
  if (e.contains("sequence")) {
    // The per-kernel list repeats for every state; the counts are what vary.
    e["sequence"].erase("kernels");
  }
  return e;
}

json sweep_axes_json(const Sweep& s) {
  json axes = json::array();
  for (const auto& a : s.axes) axes.push_back({{"name", a.name}, {"values", a.values}, {"pow2", a.pow2}});
  return axes;
}

}  // namespace

void check_sweep(const Sweep& s) {
  if (s.document.contains("save"))
    throw ManifestError("/save", "a sweep cannot save outputs: every state would write the same file (run one state's "
                                 "manifest to save its outputs)");
}

namespace {

// The kernel a sweep runs, or every kernel when "kernel" is an axis, in
// first-seen order.
std::string kernels_of(const std::vector<Manifest>& states) {
  std::vector<std::string> seen;
  for (const Manifest& m : states) {
    const std::string k = m.sequence ? "sequence" : m.kernel;
    if (std::find(seen.begin(), seen.end(), k) == seen.end()) seen.push_back(k);
  }
  return fmt::format("{}", fmt::join(seen, ", "));
}

}  // namespace

json run_sweep(const Sweep& s, const std::vector<Manifest>& states, const lrrt::Device& device, const RunOptions& options,
               const SweepRunOptions& so) {
  json result{{"manifest", s.path.string()},
              {"name", states.empty() ? std::string() : states.front().name},
              {"kind", "sweep"},
              {"kernel", kernels_of(states)},
              {"backend", device.backend()},
              {"device_index", device.index()},
              {"axes", sweep_axes_json(s)},
              {"state_count", s.state_count},
              {"verify", so.verify == SweepVerify::All ? "all" : so.verify == SweepVerify::First ? "first" : "none"},
              {"states", json::array()},
              {"interrupted", false}};
  json zips = json::array();
  for (const auto& g : s.groups)
    if (g.size() > 1) {
      json z = json::array();
      for (size_t a : g) z.push_back(s.axes[a].name);
      zips.push_back(z);
    }
  result["zip"] = zips;

  uint64_t ran = 0, skipped = 0, failed = 0, passed = 0, unmet = 0;
  bool verified_one = false;
  auto summarize = [&] {
    result["states_run"] = ran;
    result["states_skipped"] = skipped;
    result["states_criterion_not_met"] = unmet;
    json v{{"status", failed ? "failed" : passed ? "passed" : "skipped"}, {"states_failed", failed}, {"states_passed", passed}};
    if (!failed && !passed) v["reason"] = ran ? "no state was verified" : "no state ran";
    result["verification"] = v;
  };
  for (uint64_t k = 0; k < s.state_count; ++k) {
    if (so.stop_requested && so.stop_requested()) {
      result["interrupted"] = true;
      break;
    }
    if (so.progress) so.progress(k, s.state_count, s.state_label(k));
    RunOptions opt = options;
    opt.unrunnable_as_skip = true;
    opt.timing.keep_samples = false;
    if (so.stop_requested) opt.timing.should_stop = so.stop_requested;
    const bool verify_this = options.verify && (so.verify == SweepVerify::All || (so.verify == SweepVerify::First && !verified_one));
    opt.verify = verify_this;
    json entry;
    try {
      json r = run_manifest(states[k], device, opt);
      if (!result.contains("code_object") && r.contains("code_object")) {
        result["code_object"] = r["code_object"];
        result["code_object_entry"] = r["code_object_entry"];
      }
      entry = sweep_state_entry(s, k, std::move(r));
    } catch (const Unrunnable& e) {
      entry = {{"state", k}, {"axes", s.state_values(k)}, {"label", s.state_label(k)}, {"status", "skipped"}, {"reason", e.what()}};
    } catch (const bundle::Error& e) {
      throw bundle::Error(e.exit_code(), fmt::format("state {} of {} ({}): {}", k + 1, s.state_count, s.state_label(k), e.what()));
    }
    // A state the stop cut short is not a finished state.
    if (so.stop_requested && so.stop_requested()) {
      result["interrupted"] = true;
      break;
    }
    if (entry["status"] == "ran") {
      ++ran;
      if (verify_this) verified_one = true;
      else if (options.verify && so.verify == SweepVerify::First)
        entry["verification"] = {{"status", "skipped"}, {"reason", "--verify first: only the first state that ran is verified"}};
      const std::string status = entry["verification"].value("status", "skipped");
      if (status == "failed") ++failed;
      if (status == "passed") ++passed;
      const json& t = entry.contains("timing") ? entry["timing"] : json();
      if (t.is_object() && t.contains("criterion") && !t["criterion"].value("met", true)) ++unmet;
    } else {
      ++skipped;
    }
    result["states"].push_back(std::move(entry));
    summarize();
    if (so.state_done) so.state_done(result);
  }
  summarize();
  return result;
}

}  // namespace lrrt::tool
