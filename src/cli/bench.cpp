// `lrrt bench NAME|all`: runtime benchmarks beside their native baselines
// (src/tool/bench/, listed in its registry), on every usable backend unless --backend says
// otherwise. Results: a table on the terminal, --format json|csv|markdown,
// -o FILE rewritten atomically after each benchmark so partial results
// survive a failure, --benchmark-format google for Google Benchmark's JSON.
#include <algorithm>
#include <thread>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <iostream>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "tool/bench_result.hpp"
#include "tool/bench/registry.hpp"
#include "tool/bundle.hpp"
#include "tool/meta.hpp"
#include "tool/units.hpp"

namespace lrrt::cli {
namespace {

struct BenchCli {
  CommonOptions common;
  std::vector<std::string> names;
  std::string backends;  // "" = every usable backend
  std::string benchmark_format = "lrrt";
  bool quick = false;
  bool list = false;
  std::string sizes;
  double min_time = -1;
  size_t min_samples = 0;
  double max_time = -1;
  size_t max_samples = 0;
};

struct Interrupted {};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

// One run of a benchmark: on one device, or (--device all, EveryDevice::AtOnce)
// on every device of a backend at once.
struct Job {
  const tool::bench::Benchmark* benchmark;
  std::vector<lrrt::Device> devices;
  bool tag_device;  // params["device"] on each measurement: several devices of a backend ran
};

std::vector<Job> plan_jobs(const std::vector<const tool::bench::Benchmark*>& chosen,
                           const std::vector<lrrt::Device>& devices, bool all_devices) {
  using tool::bench::EveryDevice;
  std::vector<Job> jobs;
  for (const auto* b : chosen) {
    if (!all_devices) {
      for (const auto& d : devices) jobs.push_back({b, {d}, false});
      continue;
    }
    // Devices come grouped by backend (pick_devices).
    for (size_t first = 0; first < devices.size();) {
      size_t end = first;
      while (end < devices.size() && devices[end].backend() == devices[first].backend()) ++end;
      std::vector<lrrt::Device> group(devices.begin() + first, devices.begin() + end);
      const bool several = group.size() > 1;
      if (b->every_device == EveryDevice::Once || !several) {
        jobs.push_back({b, {group.front()}, false});
      } else if (b->every_device == EveryDevice::InTurn) {
        for (const auto& d : group) jobs.push_back({b, {d}, true});
      } else {
        jobs.push_back({b, group, true});
      }
      first = end;
    }
  }
  return jobs;
}

// Marks what a run on `device` added (from the given counts on) as that
// device's: a "device" parameter on measurements (so lrrt compare pairs
// devices), the device in summaries' names and labels.
void tag_device(tool::bench::ResultSet& r, size_t measurements_from, size_t summaries_from, const lrrt::Device& device) {
  const uint32_t ordinal = device.properties().backend_ordinal;
  for (size_t i = measurements_from; i < r.measurements.size(); ++i)
    r.measurements[i].params["device"] = std::to_string(ordinal);
  for (size_t i = summaries_from; i < r.summaries.size(); ++i) {
    r.summaries[i].name += fmt::format("-device-{}", ordinal);
    r.summaries[i].label += fmt::format(" (device {})", ordinal);
  }
}

// One benchmark on several devices at once, a thread each, each into its
// own result; merged in device order. Returns the number that failed. An
// interrupt drops every device's measurements of this benchmark.
size_t run_at_once(const tool::bench::Benchmark& benchmark, const std::vector<lrrt::Device>& devices,
                   const tool::bench::BenchOptions& options, tool::bench::ResultSet& results) {
  std::vector<tool::bench::ResultSet> parts(devices.size());
  std::vector<std::string> failed(devices.size());
  std::vector<char> interrupted(devices.size(), 0);
  tool::bench::BenchOptions each = options;
  each.progress = [](const std::string&) {
    if (StopSignals::requested()) throw Interrupted{};
  };
  {
    std::vector<std::jthread> threads;
    for (size_t i = 0; i < devices.size(); ++i)
      threads.emplace_back([&, i] {
        try {
          tool::bench::run_benchmark(benchmark, devices[i], each, parts[i]);
        } catch (const Interrupted&) {
          interrupted[i] = 1;
        } catch (const std::exception& e) {
          failed[i] = e.what();
        }
        try {
          devices[i].synchronize();  // failed work must not reach the next benchmark
        } catch (...) {
        }
      });
  }
  if (StopSignals::requested() || std::count(interrupted.begin(), interrupted.end(), 1)) return 0;
  size_t failures = 0;
  for (size_t i = 0; i < devices.size(); ++i) {
    const size_t m0 = results.measurements.size(), s0 = results.summaries.size();
    for (auto& m : parts[i].measurements) results.measurements.push_back(std::move(m));
    for (auto& su : parts[i].summaries) results.summaries.push_back(std::move(su));
    tag_device(results, m0, s0, devices[i]);
    const uint32_t ordinal = devices[i].properties().backend_ordinal;
    for (auto& e : parts[i].errors) results.errors.push_back(fmt::format("device {}: {}", ordinal, e));
    if (!failed[i].empty()) {
      ++failures;
      results.errors.push_back(
          fmt::format("{} on {} device {} failed: {}", benchmark.name, devices[i].backend(), ordinal, failed[i]));
      std::cerr << "lrrt bench: " << results.errors.back() << "\n";
    }
  }
  return failures;
}

// The devices to run on: each usable backend's device --device (every
// device with --device all), GPU first.
std::vector<lrrt::Device> pick_devices(const BenchCli& o) {
  std::vector<std::string> wanted = split(o.backends);
  bool every = wanted.empty() || (wanted.size() == 1 && wanted[0] == "all");
  std::vector<lrrt::Device> out;
  auto backends = lrrt::Runtime::backends();
  if (!every) {
    for (const auto& w : wanted) {
      if (w == "auto") continue;
      bool known = false;
      for (const auto& b : backends) known |= w == b.name;
      if (!known) {
        std::string names;
        for (const auto& b : backends) names += std::string(", ") + b.name;
        throw tool::InputError(fmt::format("--backend {}: unknown backend (this build has all, auto{})", w, names));
      }
    }
  }
  for (const auto& b : backends) {
    bool chosen = every;
    for (const auto& w : wanted) chosen |= w == b.name;
    if (!chosen) continue;
    if (!b.usable) {
      if (!every)
        throw tool::DeviceError(fmt::format("--backend {}: not usable: {} (see `lrrt info`)", b.name, b.message));
      continue;
    }
    if (o.common.all_devices) {
      for (uint32_t i = 0; i < b.device_count; ++i) out.push_back(lrrt::Device::select(b.name, i));
      continue;
    }
    try {
      out.push_back(lrrt::Device::select(b.name, o.common.device));
    } catch (const lrrt::Error& e) {
      if (!every) throw tool::DeviceError(fmt::format("--backend {} --device {}: {}", b.name, o.common.device, e.what()));
    }
  }
  if (std::find(wanted.begin(), wanted.end(), "auto") != wanted.end() && out.empty())
    out.push_back(lrrt::Device::select("auto", o.common.device));
  if (out.empty()) throw tool::DeviceError("no usable device to benchmark (see `lrrt info`)");
  return out;
}

void run(BenchCli& o) {
  using namespace tool::bench;
  if (o.list) {
    for (const auto& b : benchmarks()) std::cout << fmt::format("{:<18} {}\n", b.name, b.description);
    return;
  }
  if (o.names.empty()) throw tool::InputError("name a benchmark or 'all' (lrrt bench --list shows them)");
  std::vector<const Benchmark*> chosen;
  for (const auto& item : o.names)
    for (const auto& n : split(item)) {
      if (n == "all")
        for (const auto& b : benchmarks()) chosen.push_back(&b);
      else
        chosen.push_back(&find_benchmark(n));
    }
  const bool google = o.benchmark_format == "google";
  if (google && effective_format(o.common) != "json")
    throw tool::InputError("--benchmark-format google writes JSON: use --format json or a .json output file");

  BenchOptions options;
  options.quick = o.quick;
  options.sampling = default_sampling(o.quick);
  // The validators above refuse out-of-range values; "not given" is the
  // sentinel (-1 or 0), which keeps the defaults.
  if (o.min_time >= 0) options.sampling.min_time_s = o.min_time;
  if (o.min_samples) options.sampling.min_samples = o.min_samples;
  if (o.max_time >= 0) options.sampling.max_time_s = o.max_time;
  if (o.max_samples) {
    if (o.min_samples && o.max_samples < o.min_samples)
      throw tool::InputError(
          fmt::format("--max-samples {} is below --min-samples {}", o.max_samples, o.min_samples));
    options.sampling.max_samples = o.max_samples;
    options.sampling.min_samples = std::min(options.sampling.min_samples, o.max_samples);
  }
  if (o.min_time >= 0 && o.max_time >= 0 && o.max_time < o.min_time)
    throw tool::InputError(fmt::format("--max-time {:g} is below --min-time {:g}", o.max_time, o.min_time));
  if (!o.sizes.empty()) options.sizes = tool::parse_sizes(o.sizes);
  options.kernel_dir = kernel_dir(o.common);

  lrrt::Runtime runtime;
  auto devices = pick_devices(o);

  ResultSet results;
  // The host device describes the machine (CPU, memory) in meta.
  std::optional<lrrt::Device> host;
  try {
    host = lrrt::Device::select("host", 0);
  } catch (const lrrt::Error&) {
  }
  results.meta = tool::make_meta("bench", argv(), host ? &*host : nullptr);
  results.meta["options"] = {{"quick", o.quick},
                             {"min_time_s", options.sampling.min_time_s},
                             {"min_samples", options.sampling.min_samples},
                             {"max_time_s", options.sampling.max_time_s},
                             {"max_samples", options.sampling.max_samples}};
  for (auto& d : devices) results.devices.push_back(tool::device_json(d));
  // What goes to -o (and to stdout in the chosen format): the lrrt document,
  // or Google Benchmark's layout of it.
  auto file_doc = [&] { return google ? to_google_benchmark(results) : to_json(results); };

  const bool tty = ::isatty(STDERR_FILENO) == 1;
  const std::vector<Job> jobs = plan_jobs(chosen, devices, o.common.all_devices);
  const size_t total = jobs.size();
  size_t done = 0, failures = 0;
  StopSignals stop_signals(0);  // a benchmark is bounded: the stop waits for it
  results.complete = false;  // every rewrite of -o until the last says so
  for (const Job& job : jobs) {
    const Benchmark* benchmark = job.benchmark;
    const std::string& name = benchmark->name;
    if (job.devices.size() > 1) {
      if (StopSignals::requested()) break;
      if (!o.common.quiet)
        std::cerr << fmt::format("[{}/{}] {} on {} {} devices at once\n", done + 1, total, name, job.devices.size(),
                                 job.devices.front().backend());
      failures += run_at_once(*benchmark, job.devices, options, results);
      if (StopSignals::requested()) break;
      ++done;
      write_output_file(file_doc(), o.common);
      continue;
    }
    {
      auto& device = job.devices.front();
      if (StopSignals::requested()) break;
      std::string backend = device.backend();
      std::string prefix = fmt::format("[{}/{}] ", done + 1, total);
      options.progress = [&](const std::string& what) {
        // Benchmarks report progress before each measurement: the place to stop.
        if (StopSignals::requested()) throw Interrupted{};
        if (o.common.quiet) return;
        if (tty) std::cerr << "\r\033[K" << prefix << what << std::flush;
      };
      if (!o.common.quiet && !tty) std::cerr << prefix << name << " on " << backend << "\n";
      const size_t measurements_before = results.measurements.size(), summaries_before = results.summaries.size();
      try {
        run_benchmark(*benchmark, device, options, results);
        if (job.tag_device) tag_device(results, measurements_before, summaries_before, device);
      } catch (const Interrupted&) {
        results.measurements.resize(measurements_before);
        results.summaries.resize(summaries_before);
        try {
          device.synchronize();
        } catch (...) {
        }
        break;
      } catch (const std::exception& e) {
        ++failures;
        results.errors.push_back(fmt::format("{} on {} failed: {}", name, backend, e.what()));
        if (!o.common.quiet) std::cerr << (tty ? "\r\033[K" : "") << "lrrt bench: " << results.errors.back() << "\n";
        // The device may hold failed work; clear it so the next benchmark starts clean.
        try {
          device.synchronize();
        } catch (...) {
        }
      }
      if (StopSignals::requested()) break;
      ++done;
      write_output_file(file_doc(), o.common);  // partial results survive a later failure
    }
    if (StopSignals::requested()) break;
  }
  if (!o.common.quiet && tty) std::cerr << "\r\033[K" << std::flush;
  if (StopSignals::requested()) {
    // The measurements of the unfinished benchmark are dropped with it: a
    // file holds whole benchmarks only.
    StopSignals::stopping();
    results.interrupted = true;
    write_output_file(file_doc(), o.common);
    std::cerr << fmt::format("lrrt bench: interrupted after {} of {} benchmark runs{}\n", done, total,
                             o.common.output.empty() ? "" : "; " + o.common.output + " is marked incomplete");
    set_exit_code(128 + StopSignals::signal());
    return;
  }
  results.complete = true;

  emit_document(to_json(results), file_doc(), o.common);
  if (failures) set_exit_code(tool::kExitRuntimeError);
}

}  // namespace

void register_bench(CLI::App& app) {
  auto o = std::make_shared<BenchCli>();
  CLI::App* sub = app.add_subcommand(
      "bench", "Runtime benchmarks beside the native API of each backend (launch overhead, copies, ...)");
  std::string names;
  for (const auto& b : tool::bench::benchmarks()) names += ", " + b.name;
  sub->add_option("name", o->names, "Benchmarks to run (comma-separated or several): all" + names);
  sub->add_flag("--list", o->list, "List the benchmarks and what they measure");
  sub->add_option("--backend", o->backends,
                  "Backends to run on, comma-separated (host, hsa, cuda), all or auto (default: every usable "
                  "backend, host included)");
  add_common_options(*sub, o->common,
                     kOptDevice | kOptDeviceAll | kOptFormat | kOptOutput | kOptQuiet | kOptKernelDir | kOptTimeout);
  sub->add_option("--benchmark-format", o->benchmark_format,
                  "JSON layout: lrrt (default; what lrrt compare reads) or google (Google Benchmark's format)")
      ->check(CLI::IsMember({"lrrt", "google"}));
  sub->add_flag("--quick", o->quick, "CI-sized run: short sampling, 5 copy sizes up to 64 MiB");
  sub->add_option("--sizes", o->sizes,
                  "copy-bandwidth sizes: a list (4K,64K,1M) or a range (4KiB..1GiB in x4 steps, 4K..1G:2 in x2); "
                  "capped by device and host memory (default 4KiB..1GiB)");
  // Bounds: a day of sampling or a million samples is already far past any
  // useful measurement; beyond them a typo would run for ever.
  sub->add_option("--min-time", o->min_time, "Seconds each measurement samples at least (default 0.2, quick 0.03)")
      ->check(finite_number(0, 86400, "seconds"));
  sub->add_option("--min-samples", o->min_samples, "Samples each measurement takes at least (default 10, quick 5)")
      ->check(whole_number(1, 1000000, "samples"));
  sub->add_option("--max-time", o->max_time, "Seconds after which a measurement stops (default 3, quick 0.5)")
      ->check(finite_number(0.001, 86400, "seconds"));
  sub->add_option("--max-samples", o->max_samples, "Samples after which a measurement stops (default 1000)")
      ->check(whole_number(1, 1000000, "samples"));
  std::string list = "Benchmarks (lrrt bench --list):\n";
  for (const auto& b : tool::bench::benchmarks()) list += fmt::format("  {}\n", b.name);
  sub->footer(list + R"(
Each measurement warms up, then repeats until --min-time and --min-samples are both reached,
and reports samples, min, median, mean, stddev, p90 and max. lrrt is measured through the public
C ABI; the native baseline (raw cuLaunchKernel/cuMemcpy*, a raw AQL packet, a direct call of the
host kernel entry) in the same process on the same buffers.

Examples:
  lrrt bench all --quick -o results.json
  lrrt bench launch-overhead --backend host
  lrrt bench copy-bandwidth --backend cuda --sizes 4K..1G --format markdown
  lrrt compare base.json results.json

Exit codes: 0 success; 2 usage error; 3 a benchmark failed (the others' results are still written).)");
  sub->callback([o] { run(*o); });
}

}  // namespace lrrt::cli
