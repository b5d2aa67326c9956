#include "tool/sweep_runner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

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

SweepCheck check_sweep_states(const Sweep& s, const std::function<void(const Manifest&)>& check) {
  SweepCheck c;
  for (uint64_t k = 0; k < s.state_count; ++k) {
    const Manifest m = s.state_manifest(k);
    if (check) check(m);
    if (k == 0) c.name = m.name;
    const std::string kernel = m.sequence ? "sequence" : m.kernel;
    if (std::find(c.kernels.begin(), c.kernels.end(), kernel) == c.kernels.end()) c.kernels.push_back(kernel);
  }
  return c;
}

json run_sweep(const Sweep& s, const SweepCheck& checked, const lrrt::Device& device, const RunOptions& options,
               const SweepRunOptions& so) {
  json result{{"manifest", s.path.string()},
              {"name", checked.name},
              {"kind", "sweep"},
              {"kernel", fmt::format("{}", fmt::join(checked.kernels, ", "))},
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
  const auto start = std::chrono::steady_clock::now();
  for (uint64_t k = 0; k < s.state_count; ++k) {
    if (so.stop_requested && so.stop_requested()) {
      result["interrupted"] = true;
      break;
    }
    if (so.progress) so.progress(k, s.state_count, s.state_label(k));
    RunOptions opt = options;
    opt.unrunnable_as_skip = true;
    opt.timing.keep_samples = false;
    if (so.time_budget_s > 0) {
      // This state's share of what is left of the budget.
      const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const double share = std::max(so.time_budget_s - spent, 0.0) / double(s.state_count - k);
      // --min-time stays: a state that cannot reach it within its share
      // reports "met": false, as any timeout.
      opt.timing.max_time_s = std::min(opt.timing.max_time_s, std::max(share, kMinStateTimeS));
    }
    if (so.stop_requested) opt.timing.should_stop = so.stop_requested;
    const bool verify_this = options.verify && (so.verify == SweepVerify::All || (so.verify == SweepVerify::First && !verified_one));
    opt.verify = verify_this;
    json entry;
    try {
      json r = run_manifest(s.state_manifest(k), device, opt);
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
