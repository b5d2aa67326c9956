// Runs a sweep (docs/manifest.md, "Sweeps"): every state's manifest through
// run_manifest, one after the other on one device. A state that cannot run
// on the device is reported skipped with the reason and the sweep goes on;
// any other error ends the command as it would for one manifest.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lrrt/lrrt.hpp"
#include "tool/bundle.hpp"
#include "tool/runner.hpp"

namespace lrrt::tool {

enum class SweepVerify { All, First, None };

struct SweepRunOptions {
  SweepVerify verify = SweepVerify::All;
  // Before each state: k (0-based), the count, the axis values in words.
  std::function<void(uint64_t, uint64_t, const std::string&)> progress;
  // After each state, with the sweep's result so far (to rewrite -o).
  std::function<void(const nlohmann::json&)> state_done;
  // Checked before each state and by the timed loop; a state it cut short is
  // dropped and the result says "interrupted": true.
  std::function<bool()> stop_requested;
  // Seconds all states' timed loops may take together (0: no limit): each
  // state's --max-time is cut to its share of what is left, at least
  // kMinStateTimeS (docs/manifest.md, "Sweeps").
  double time_budget_s = 0;
};

inline constexpr double kMinStateTimeS = 0.05;

// What checking every state found: the first state's name, the kernels in
// first-seen order ("sequence" for a sequence).
struct SweepCheck {
  std::string name;
  std::vector<std::string> kernels;
};

// Builds every state's manifest one at a time (none is kept: a sweep of
// 100,000 states holds one at a time) and passes each to `check`; a bad
// state throws ManifestError naming the field and the state.
SweepCheck check_sweep_states(const Sweep& sweep, const std::function<void(const Manifest&)>& check);

// Runs every state, building its manifest when it runs. The result:
// {"kind": "sweep", "axes", "states": [{"state", "axes", "status": "ran" |
// "skipped", "reason"?, "timing", "verification", ...}], "verification",
// "interrupted", ...}.
nlohmann::json run_sweep(const Sweep& sweep, const SweepCheck& checked, const lrrt::Device& device,
                         const RunOptions& options, const SweepRunOptions& sweep_options);

// Refuses what a sweep cannot do: a `save` (every state would write the same
// file). ManifestError naming the field.
void check_sweep(const Sweep& sweep);

}  // namespace lrrt::tool
