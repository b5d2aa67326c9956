// lrrt run: runs manifests (docs/manifest.md), times them and verifies their
// outputs.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <exception>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "tool/atomic_file.hpp"
#include "tool/bundle.hpp"
#include "tool/meta.hpp"
#include "tool/runner.hpp"
#include "tool/sweep_runner.hpp"
#include "tool/verify.hpp"

namespace lrrt::cli {
namespace {

struct RunArgs {
  CommonOptions common;
  std::vector<std::string> manifests;
  int iterations = -1;
  int warmup = -1;
  bool no_verify = false;
  bool explain = false;
  // Sweeps and timing (docs/manifest.md, "Sweeps").
  std::vector<std::string> axes;
  uint64_t max_states = tool::kDefaultMaxStates;
  std::string verify = "all";
  double max_noise_percent = 0.5;
  uint32_t min_samples = 10;
  double min_time_s = 0.5;
  double max_time_s = 15;
  uint32_t batch = 1;
  bool cold = false;
  double sweep_time_s = -1;  // --sweep-time; -1: kDefaultHostSweepTimeS on host, no limit elsewhere
  bool noise_option_given = false;  // any of --max-noise, --min-samples, --min-time, --max-time
};

// The time a sweep's states may spend being timed, in all, on the host
// backend unless --sweep-time says otherwise: the bundled sweeps end within a
// minute on a two-core machine (docs/manifest.md, "Sweeps").
constexpr double kDefaultHostSweepTimeS = 20;

// One manifest of the command: a single manifest or a sweep.
struct RunEntry {
  std::string path;
  std::optional<tool::Sweep> sweep;
  // The manifest; for a sweep its first state with the default values (it
  // stands for the others in the write checks). The states are built one at
  // a time when checked and when run.
  std::vector<tool::Manifest> manifests;
  tool::SweepCheck checked;  // a sweep's, once every state was checked
};

RunEntry load_run_entry(const std::string& path, const std::vector<tool::AxisOverride>& overrides, uint64_t max_states) {
  RunEntry e;
  e.path = path;
  const nlohmann::json doc = tool::read_json_file(path, tool::kMaxManifestBytes);
  if (!tool::is_sweep(doc)) {
    e.manifests.push_back(tool::load_manifest(path));
    return e;
  }
  e.sweep = tool::load_sweep(path, overrides, max_states);
  try {
    tool::check_sweep(*e.sweep);
    e.manifests.push_back(e.sweep->state_manifest(0));
  } catch (const tool::ManifestError& ex) {
    throw tool::InputError(path + ": " + ex.what());
  }
  return e;
}

// Every state of the sweep, on the backend that runs it, parsed and checked
// one at a time (nothing kept but the names), before any state runs.
void check_states(RunEntry& e, const std::string& backend, const CommonOptions& common) {
  e.sweep->select_backend(backend);
  if (e.sweep->state_count > tool::kDefaultMaxStates)
    note(common, fmt::format("{}: checking {} states", e.path, e.sweep->state_count));
  try {
    e.checked = tool::check_sweep_states(*e.sweep, [](const tool::Manifest& m) {
      tool::check_references(m);
      tool::check_saves(m);
    });
  } catch (const tool::ManifestError& ex) {
    throw tool::InputError(e.path + ": " + ex.what());
  }
}

// Which axes take the backend's own values, for the note before a sweep.
std::string backend_axes(const tool::Sweep& s) {
  std::string out;
  for (const auto& a : s.axes)
    for (const auto& [b, v] : a.per_backend)
      if (b == s.backend) out += (out.empty() ? "" : ", ") + a.name;
  return out;
}

// The options of a run on any device (one, or each of --device all).
tool::RunOptions base_run_options(const RunArgs& a, const lr_device_memory_info_t* memory) {
  tool::RunOptions opt;
  opt.kernel_dir = kernel_dir(a.common);
  if (a.iterations >= 0) opt.iterations = static_cast<uint32_t>(a.iterations);
  if (a.warmup >= 0) opt.warmup = static_cast<uint32_t>(a.warmup);
  opt.verify = !a.no_verify && a.verify != "none";
  opt.explain = a.explain;
  opt.memory = memory;
  opt.timing.max_noise = a.max_noise_percent / 100.0;
  opt.timing.min_samples = a.min_samples;
  opt.timing.min_time_s = a.min_time_s;
  opt.timing.max_time_s = a.max_time_s;
  opt.timing.batch = a.batch;
  opt.timing.cold = a.cold;
  opt.timing.noise_stop = a.noise_option_given;
  return opt;
}

// The spread of one manifest's time over the devices: each device's median,
// the fastest and slowest, and how much slower the slowest is, so one slow
// device stands out.
nlohmann::json spread_of(const std::string& name, const std::vector<std::pair<uint32_t, double>>& medians) {
  nlohmann::json per = nlohmann::json::object();
  uint32_t fast = medians.front().first, slow = fast;
  double lo = medians.front().second, hi = lo;
  for (const auto& [d, v] : medians) {
    per[std::to_string(d)] = v;
    if (v < lo) lo = v, fast = d;
    if (v > hi) hi = v, slow = d;
  }
  std::vector<double> sorted;
  for (const auto& m : medians) sorted.push_back(m.second);
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];
  return {{"name", name},
          {"median_ns_per_device", per},
          {"fastest_device", fast},
          {"slowest_device", slow},
          {"median_of_devices_ns", median},
          {"slowest_over_median", median > 0 ? hi / median : 0.0},
          {"slowest_over_fastest", lo > 0 ? hi / lo : 0.0}};
}

// --device all: every manifest on every device of the backend at once, one
// thread per device; one document with each device's runs (device_index)
// and the spread of each manifest's median over the devices.
void run_on_every_device(const RunArgs& a, const std::vector<RunEntry>& entries, tool::PendingFiles& saves) {
  for (const auto& e : entries) {
    if (e.sweep)
      throw tool::InputError(fmt::format("{}: --device all runs manifests and sequences, not sweeps: run the sweep "
                                         "with --device N per device",
                                         e.path));
    for (const auto& m : e.manifests)
      if (!m.save.empty())
        throw tool::InputError(fmt::format("{}: {}: --device all would write the same file from every device; drop "
                                           "the save or run one --device",
                                           e.path, m.save.front().pointer));
  }
  lrrt::Device first = open_device(a.common);
  const std::string backend = first.backend();
  uint32_t count = 0;
  for (const auto& b : lrrt::Runtime::backends())
    if (b.name == backend) count = b.device_count;
  std::vector<lrrt::Device> devices;
  for (uint32_t i = 0; i < count; ++i) {
    CommonOptions one = a.common;
    one.backend = backend;
    one.device = i;
    devices.push_back(open_device(one));
  }
  note(a.common, fmt::format("--device all: {} {} device(s), one thread each", devices.size(), backend));
  std::vector<std::optional<lr_device_memory_info_t>> memory(devices.size());
  for (size_t d = 0; d < devices.size(); ++d)
    if (backend != "host") memory[d] = devices[d].memory_info();

  struct Outcome {
    nlohmann::json runs = nlohmann::json::array();
    std::exception_ptr error;
  };
  std::vector<Outcome> outcomes(devices.size());
  {
    std::vector<std::thread> threads;
    for (size_t d = 0; d < devices.size(); ++d)
      threads.emplace_back([&, d] {
        try {
          tool::RunOptions o = base_run_options(a, memory[d] ? &*memory[d] : nullptr);
          for (const auto& e : entries) {
            try {
              outcomes[d].runs.push_back(tool::run_manifest(e.manifests.front(), devices[d], o));
            } catch (const bundle::Error& ex) {
              throw bundle::Error(ex.exit_code(), fmt::format("{}: device {}: {}", e.path, devices[d].index(), ex.what()));
            }
          }
        } catch (...) {
          outcomes[d].error = std::current_exception();
        }
      });
    for (auto& t : threads) t.join();
  }
  for (auto& o : outcomes)
    if (o.error) std::rethrow_exception(o.error);

  bool failed = false;
  nlohmann::json runs = nlohmann::json::array(), device_entries = nlohmann::json::array(),
                 spread = nlohmann::json::array();
  for (size_t d = 0; d < devices.size(); ++d) {
    nlohmann::json entry = tool::device_json(devices[d]);
    if (memory[d]) entry["memory"] = tool::memory_json(*memory[d]);
    device_entries.push_back(std::move(entry));
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    std::vector<std::pair<uint32_t, double>> medians;
    for (size_t d = 0; d < devices.size(); ++d) {
      const nlohmann::json& r = outcomes[d].runs[i];
      if (r["verification"]["status"] == "failed") failed = true;
      const nlohmann::json* t = r.contains("timing") ? &r["timing"] : nullptr;
      if (t && t->is_object() && t->contains("median_ns") && (*t)["median_ns"].is_number())
        medians.emplace_back(devices[d].index(), (*t)["median_ns"].get<double>());
      note(a.common, fmt::format("{}: device {}: verification {}", entries[i].manifests.front().name,
                                 devices[d].index(), r["verification"]["status"].get<std::string>()));
      runs.push_back(r);
    }
    if (!medians.empty()) spread.push_back(spread_of(entries[i].manifests.front().name, medians));
  }
  saves.commit();
  nlohmann::json doc{{"lrrt_results", 1},
                     {"kind", "run"},
                     {"meta", tool::make_meta("run", argv(), backend == "host" ? &devices.front() : nullptr)},
                     {"device", device_entries.front()},
                     {"devices", device_entries},
                     {"runs", runs},
                     {"spread", spread}};
  emit_document(doc, a.common);
  set_exit_code(failed ? tool::kExitVerificationFailed : tool::kExitOk);
}

void run_command(const RunArgs& a) {
  if (a.cold && a.batch > 1)
    throw tool::InputError("--cold with --batch: a batch's launches after the first would run on a warm cache; use one "
                           "or the other");
  std::vector<tool::AxisOverride> overrides;
  for (const auto& text : a.axes) overrides.push_back(tool::parse_axis_override(text));
  for (size_t i = 0; i < overrides.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (overrides[i].name == overrides[j].name)
        throw tool::InputError(fmt::format("--axis {}: axis \"{}\" is given twice", overrides[i].text, overrides[i].name));

  // Parse every manifest before touching a device: input errors come first
  // (a sweep's states are checked once the backend that picks their values
  // is known, still before anything runs).
  std::vector<RunEntry> entries;
  std::vector<tool::Manifest> all;  // every manifest, for the write checks
  for (const auto& path : a.manifests) {
    entries.push_back(load_run_entry(path, overrides, a.max_states));
    for (const auto& m : entries.back().manifests) {
      try {
        tool::check_references(m);
        tool::check_saves(m);
      } catch (const tool::ManifestError& e) {
        throw tool::InputError(path + ": " + e.what());
      }
    }
    // The state list can be long: the first state stands for the others in
    // the write checks (they read the same files).
    all.push_back(entries.back().manifests.front());
  }
  if (!overrides.empty() && std::none_of(entries.begin(), entries.end(), [](const RunEntry& e) { return e.sweep.has_value(); }))
    throw tool::InputError(fmt::format("--axis {}: no manifest of the command declares \"axes\"", overrides.front().text));

  // Every file this command will write is checked now, not after the work:
  // -o, then each save (relative to its manifest's folder), none twice.
  tool::PendingFiles saves;
  if (!a.common.output.empty()) saves.check(a.common.output);
  for (const auto& m : all)
    for (const auto& s : m.save) {
      try {
        saves.check(s.file);
      } catch (const tool::InputError& e) {
        throw tool::InputError(fmt::format("{}: {}: {}", m.path.string(), s.pointer, e.what()));
      }
    }
  // Nor is any of them a file the command reads.
  tool::check_command_writes(all, a.common.output);

  lrrt::Runtime runtime;
  if (a.common.all_devices) {
    run_on_every_device(a, entries, saves);
    return;
  }
  lrrt::Device device = open_device(a.common);
  const bool on_host = device.backend() == "host";
  const bool any_sweep = std::any_of(entries.begin(), entries.end(), [](const RunEntry& e) { return e.sweep.has_value(); });
  // The peak bandwidth for "% of peak": free on a GPU; the host measures it
  // (tens of ms), so only for sweeps there.
  std::optional<lr_device_memory_info_t> memory;
  if (!on_host || any_sweep) memory = device.memory_info();

  for (auto& e : entries)
    if (e.sweep) check_states(e, device.backend(), a.common);

  tool::RunOptions opt = base_run_options(a, memory ? &*memory : nullptr);
  opt.note = [&](const std::string& s) { note(a.common, s); };
  opt.deferred_saves = &saves;  // written only when every manifest has run

  // Only a sweep stops at a boundary (a state) on SIGINT/SIGTERM; a run of
  // single manifests is ended by the signal at once, as any program.
  std::optional<StopSignals> stop_signals;
  if (any_sweep) stop_signals.emplace();
  const bool progress = !a.common.quiet && stderr_is_terminal();
  nlohmann::json runs = nlohmann::json::array();
  auto make_doc = [&](const nlohmann::json& run_list, bool complete, bool interrupted) {
    nlohmann::json device_entry = tool::device_json(device);
    if (memory) device_entry["memory"] = tool::memory_json(*memory);
    nlohmann::json doc{{"lrrt_results", 1},
                       {"kind", "run"},
                       {"meta", tool::make_meta("run", argv(), on_host ? &device : nullptr)},
                       {"device", device_entry},
                       {"runs", run_list}};
    if (any_sweep) {
      doc["complete"] = complete;
      doc["interrupted"] = interrupted;
    }
    return doc;
  };
  bool failed = false, interrupted = false;
  for (const auto& e : entries) {
    if (StopSignals::requested()) {
      interrupted = true;
      break;
    }
    nlohmann::json r;
    tool::RunOptions o = opt;
    // Sweeps stop on noise unless --iterations fixes the count; one
    // manifest keeps its iterations unless a noise option is given.
    o.timing.noise_stop = a.noise_option_given || (e.sweep && a.iterations < 0);
    try {
      if (e.sweep) {
        tool::SweepRunOptions so;
        so.verify = a.verify == "first" ? tool::SweepVerify::First : a.verify == "none" ? tool::SweepVerify::None
                                                                                        : tool::SweepVerify::All;
        so.stop_requested = [] { return StopSignals::requested(); };
        const std::string name = e.manifests.front().name;
        if (progress)
          so.progress = [&](uint64_t k, uint64_t n, const std::string& label) {
            std::cerr << "\r\033[K" << tool::terminal_safe(fmt::format("{}: state {} of {}: {}", name, k + 1, n, label))
                      << std::flush;
          };
        if (!a.common.output.empty())
          so.state_done = [&, last_write = std::optional<std::chrono::steady_clock::time_point>(),
                           write_cost = std::chrono::steady_clock::duration()](const nlohmann::json& partial) mutable {
            // -o holds the finished states (atomically replaced), marked
            // incomplete until the end: after the first state, then at most
            // once a second and with at most a tenth of the time spent
            // rewriting it (a long sweep's document is large).
            const auto now = std::chrono::steady_clock::now();
            if (last_write && (now - *last_write < std::chrono::seconds(1) || now - *last_write < write_cost * 10))
              return;
            nlohmann::json list = runs;
            list.push_back(partial);
            write_output_file(make_doc(list, false, false), a.common);
            last_write = std::chrono::steady_clock::now();
            write_cost = *last_write - now;
          };
        so.time_budget_s = a.sweep_time_s >= 0 ? a.sweep_time_s : on_host ? kDefaultHostSweepTimeS : 0;
        const std::string own = backend_axes(*e.sweep);
        note(a.common, fmt::format("{}: {} states on {}{}{}", name, e.sweep->state_count, device.backend(),
                                   own.empty() ? "" : fmt::format(" ({}'s own values of {})", device.backend(), own),
                                   so.time_budget_s > 0 && a.iterations < 0
                                       ? fmt::format(", timed within {:g} s in all (--sweep-time)", so.time_budget_s)
                                       : ""));
        o.note = nullptr;  // one line per sweep, not per state
        r = tool::run_sweep(*e.sweep, e.checked, device, o, so);
        if (progress) std::cerr << "\r\033[K" << std::flush;
        note(a.common, fmt::format("{}: {} states, {} ran, {} skipped{}, verification {}", name, r["state_count"].get<uint64_t>(),
                                   r["states_run"].get<uint64_t>(), r["states_skipped"].get<uint64_t>(),
                                   r["states_criterion_not_met"].get<uint64_t>()
                                       ? fmt::format(", {} without reaching the noise criterion",
                                                     r["states_criterion_not_met"].get<uint64_t>())
                                       : "",
                                   r["verification"]["status"].get<std::string>()));
        if (r["interrupted"].get<bool>()) interrupted = true;
      } else {
        r = tool::run_manifest(e.manifests.front(), device, o);
        note(a.common, fmt::format("{}: verification {}", e.manifests.front().name, r["verification"]["status"].get<std::string>()));
      }
    } catch (const bundle::Error& ex) {
      if (progress) std::cerr << "\r\033[K" << std::flush;
      throw bundle::Error(ex.exit_code(), e.path + ": " + ex.what());
    }
    if (r["verification"]["status"] == "failed") failed = true;
    runs.push_back(std::move(r));
    if (interrupted) break;
  }
  if (interrupted || StopSignals::requested()) {
    // What finished, marked interrupted; saves are not written (the command
    // did not complete).
    StopSignals::stopping();
    const nlohmann::json doc = make_doc(runs, false, true);
    std::cerr << fmt::format("lrrt run: interrupted{}\n", a.common.output.empty() ? "" : "; " + a.common.output + " holds the finished states, marked interrupted");
    emit_document(doc, a.common);
    set_exit_code(128 + (StopSignals::signal() ? StopSignals::signal() : 2));
    return;
  }
  saves.commit();
  emit_document(make_doc(runs, true, false), a.common);
  set_exit_code(failed ? tool::kExitVerificationFailed : tool::kExitOk);
}

}  // namespace

void register_run(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* sub = app.add_subcommand("run", "Run manifests: load the kernel, initialise buffers, launch, time and verify");
  sub->add_option("manifest", args->manifests, "Manifest file(s) (JSON, see docs/manifest.md)")->required()->check(CLI::ExistingFile);
  add_common_options(*sub, args->common, kOptAll | kOptDeviceAll);
  sub->add_option("--iterations", args->iterations, "Timed launches per manifest (overrides the manifest)")
      ->check(CLI::Range(0, 10000000));
  sub->add_option("--warmup", args->warmup, "Untimed launches before timing (overrides the manifest)")
      ->check(CLI::Range(0, 1000000));
  sub->add_flag("--no-verify", args->no_verify, "Skip verification (reported as skipped); the same as --verify none");
  sub->add_option("--axis", args->axes,
                  "Sweeps: replace an axis's values, nvbench's syntax: NAME=[V1,V2,...], NAME=[LO:HI] or "
                  "NAME=[LO:HI:STEP] (inclusive), NAME=V; NAME[pow2]=[...] takes exponents; values take 1K, 16M, 1G "
                  "(binary) or text (f32). Repeat per axis")
      ->type_name("NAME=VALUES")
      ->allow_extra_args(false)  // one NAME=VALUES per --axis: a manifest after it stays a manifest
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub->add_option("--max-states", args->max_states,
                  "Sweeps: most states allowed (default 10000, at most 100000: the results hold every state); more is "
                  "exit 2")
      ->check(whole_number(1, tool::kMaxStatesLimit, "states"));
  sub->add_option("--sweep-time", args->sweep_time_s,
                  "Sweeps: seconds all states' timing may take in all; each state's --max-time is cut to its share of "
                  "what is left (default 20 on the host backend, no limit on GPUs; 0: no limit). Printed before the "
                  "sweep starts")
      ->check(finite_number(0, 1e7, "SECONDS"));
  sub->add_option("--verify", args->verify,
                  "Sweeps: which states are verified: all (default: a kernel wrong at one size is what a sweep should "
                  "find), first (the first state that ran), none")
      ->check(CLI::IsMember({"all", "first", "none"}));
  auto noise = [args](CLI::Option* opt) {
    opt->each([args](const std::string&) { args->noise_option_given = true; });
    return opt;
  };
  noise(sub->add_option("--max-noise", args->max_noise_percent,
                        "Time until the samples' noise (1.4826 x MAD / median: outliers are counted apart) is at most "
                        "PERCENT (default 0.5) or has converged above it (stable over the last 16 checks); the "
                        "default for sweeps, a single manifest uses it when any of these four is given")
            ->check(finite_number(0, 1e6, "PERCENT")));
  noise(sub->add_option("--min-samples", args->min_samples, "With the noise criterion: at least N samples (default 10)")
            ->check(whole_number(1, 1000000, "samples")));
  noise(sub->add_option("--min-time", args->min_time_s,
                        "With the noise criterion: at least SECONDS of summed sample time (default 0.5)")
            ->check(finite_number(0, 86400, "SECONDS")));
  noise(sub->add_option("--max-time", args->max_time_s,
                        "With the noise criterion: the timeout per state, SECONDS of wall time (default 15); a state "
                        "that reaches it is reported with \"met\": false")
            ->check(finite_number(0.001, 86400, "SECONDS")));
  sub->add_flag("--cold", args->cold,
                "Flush the last-level cache before each sample (a device copy writing 2x the L2, or the host's LLC, "
                "outside the timed events), as nvbench's cold measurements");
  sub->add_option("--batch", args->batch,
                  "N back-to-back launches between one pair of events; the sample is their time / N (hides launch gaps "
                  "of short kernels)")
      ->check(whole_number(1, 100000, "launches"));
  sub->add_flag("--explain", args->explain,
                "Sequences: add the replay's plan (the derived graph, lanes and fences, as `lrrt plan` shows it) to the results");
  sub->footer(R"(The verified outputs come from one launch on freshly uploaded inputs; the timed
launches run afterwards on re-uploaded inputs, so kernels that update buffers in
place (saxpy) are checked against exactly one application.

A sequence manifest ("sequence": steps) runs three ways, each verified from fresh
inputs: eagerly (one launch per step), as a replay (recorded once, lr_graph_exec_launch),
and, with "patch", as replays with a scalar argument changed between them. The
results give the time per replay and per dispatch of each way and the eager/replay
ratio; --explain adds the plan (see `lrrt plan --help`).

A sweep manifest ("axes": {"n": {"pow2": [10, 28]}, "wg": [64, 256]}, with {"axis": "n"}
wherever a value varies) runs every state of the axes' product (axes named in "zip"
vary together): each state verified (--verify), timed until its noise is at most
--max-noise (or a fixed --iterations), and reported as one row with the axis values
as columns, with GB/s, elements/s and the share of the device's peak bandwidth. A
state the device cannot run (a workgroup over its limit, buffers beyond its memory)
is "skipped" with the reason and the sweep goes on. On the host backend the states'
timing shares 20 s in all unless --sweep-time says otherwise (printed before the
sweep starts), and an axis may give the host values of its own (docs/manifest.md).

Ctrl-C (or SIGTERM) stops a sweep after the current state: the results hold the
finished states, marked interrupted (exit 130, or 143). A state that does not end
within 5 s of the signal (a long kernel) is not waited for: lrrt ends at once, as
on a second signal, killed by that signal (-o keeps the states it held). A run
without a sweep ends at once on the signal.

Examples:
  lrrt run manifests/saxpy.json
  lrrt run manifests/saxpy_sweep.json --axis n[pow2]=[20:24] --axis wg=[256]
  lrrt run manifests/saxpy_sweep.json --max-noise 1 --min-time 0.1 -o sweep.csv
  lrrt run manifests/saxpy_sweep.json --cold --verify first -o cold.json
  lrrt run --backend host --iterations 100 -o results.json manifests/*.json
  lrrt run --format csv manifests/reduce.json > reduce.csv
  lrrt run --backend host --explain manifests/diamond.json

Exit codes: 0 ok, 1 verification failed, 2 usage/input error, 3 runtime/device error.)");
  sub->callback([args] { run_command(*args); });
}

}  // namespace lrrt::cli
