#include "tool/runner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <new>

#include "tool/atomic_file.hpp"
#include "tool/fill.hpp"
#include "tool/input_file.hpp"
#include "tool/kernargs.hpp"
#include "tool/npy.hpp"
#include "tool/stats.hpp"
#include "tool/verify.hpp"

namespace lrrt::tool {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

bool is_input_status(lr_status_t s) {
  return s == LR_ERROR_INVALID_ARGUMENT || s == LR_ERROR_INVALID_IMAGE || s == LR_ERROR_NOT_FOUND ||
         s == LR_ERROR_NOT_SUPPORTED;
}

// A loaded kernel with its device buffers, ready to launch.
struct Prepared {
  lrrt::Device device;
  lr_device_properties_t props{};
  fs::path code_object;
  std::unique_ptr<lrrt::Module> module;
  lrrt::Kernel kernel;
  bool layout_checked = false;
  std::vector<lrrt::DeviceBuffer> buffers;
  std::vector<std::byte> kernargs;
  lrrt::LaunchConfig config{};
};

void check_launch_against_device(const Manifest& m, const lr_device_properties_t& p) {
  const auto& L = m.launch;
  const uint64_t items = uint64_t(L.workgroup_size[0]) * L.workgroup_size[1] * L.workgroup_size[2];
  if (p.max_workgroup_size && items > p.max_workgroup_size)
    throw ManifestError("/launch/workgroup_size", fmt::format("workgroup of {} work-items exceeds the device's maximum of {} ({})",
                                                              items, p.max_workgroup_size, p.name));
  const uint32_t maxd[3] = {p.max_workgroup_dims.x, p.max_workgroup_dims.y, p.max_workgroup_dims.z};
  for (int d = 0; d < 3; ++d)
    if (maxd[d] && L.workgroup_size[d] > maxd[d])
      throw ManifestError(fmt::format("/launch/workgroup_size/{}", d),
                          fmt::format("{} exceeds the device's maximum of {} in dimension {}", L.workgroup_size[d], maxd[d], "xyz"[d]));
  if (p.max_shared_memory_per_workgroup && L.dynamic_shared_bytes > p.max_shared_memory_per_workgroup)
    throw ManifestError("/launch/dynamic_shared_bytes", fmt::format("{} bytes exceed the device's {} bytes of shared memory per workgroup",
                                                                    L.dynamic_shared_bytes, p.max_shared_memory_per_workgroup));
}

void check_memory(const Manifest& m, const lr_device_properties_t& p) {
  if (!p.memory_bytes) return;
  uint64_t total = 0;
  for (const auto& b : m.buffers) {
    if (b.bytes > p.memory_bytes)
      throw DeviceError(fmt::format("{}: buffer \"{}\" needs {} bytes ({} x {}), more than the device's {} bytes of memory ({})",
                                    b.pointer, b.name, b.bytes, b.count, dtype_name(b.type), p.memory_bytes, p.name));
    total += b.bytes;
  }
  if (total > p.memory_bytes)
    throw DeviceError(fmt::format("/buffers: the buffers need {} bytes together, more than the device's {} bytes of memory ({})",
                                  total, p.memory_bytes, p.name));
}

std::unique_ptr<Prepared> prepare(const Manifest& m, const lrrt::Device& device, const fs::path& kernel_dir) {
  auto P = std::make_unique<Prepared>();
  P->device = device;
  P->props = device.properties();
  P->code_object = resolve_code_object(m, P->props.backend, P->props.arch, kernel_dir);
  check_launch_against_device(m, P->props);
  check_memory(m, P->props);

  const auto image = read_input_file(P->code_object, kMaxCodeObjectBytes);
  try {
    P->module = std::make_unique<lrrt::Module>(device, std::span<const std::byte>(image));
  } catch (const lrrt::Error& e) {
    const std::string msg = fmt::format("cannot load code object {} on {} ({}): {}", P->code_object.string(),
                                        P->props.backend, P->props.arch, e.what());
    if (is_input_status(e.status())) throw InputError("/code_object: " + msg);
    throw DeviceError("/code_object: " + msg);
  }
  try {
    P->kernel = P->module->kernel(m.kernel);
  } catch (const lrrt::Error& e) {
    if (e.status() != LR_ERROR_NOT_FOUND && !is_input_status(e.status())) throw DeviceError(e.what());
    std::string names;
    try {
      for (const auto& n : P->module->kernel_names()) names += (names.empty() ? "" : ", ") + n;
    } catch (const lrrt::Error&) {
    }
    throw ManifestError("/kernel", fmt::format("no kernel \"{}\" in {} (it has: {})", m.kernel, P->code_object.string(),
                                               names.empty() ? "none listed" : names));
  }

  const KernargLayout layout = layout_kernargs(m.args);
  const lr_kernel_properties_t kp = P->kernel.properties();
  uint32_t min_size = 0;
  if (kp.has_arg_layout) {
    std::vector<KernelArg> kargs;
    for (const auto& a : P->kernel.args()) {
      if (a.kind == LR_ARG_HIDDEN) continue;
      kargs.push_back(KernelArg{a.offset, a.size, a.kind == LR_ARG_GLOBAL_BUFFER, a.name, a.kind != LR_ARG_OTHER});
    }
    check_kernargs(m.args, layout, kargs, m.kernel);
    P->layout_checked = true;
    min_size = kp.explicit_kernarg_size;
  }
  if (kp.max_workgroup_size) {
    const uint64_t items = uint64_t(m.launch.workgroup_size[0]) * m.launch.workgroup_size[1] * m.launch.workgroup_size[2];
    if (items > kp.max_workgroup_size)
      throw ManifestError("/launch/workgroup_size", fmt::format("workgroup of {} work-items exceeds kernel \"{}\"'s maximum of {}",
                                                                items, m.kernel, kp.max_workgroup_size));
  }

  std::vector<uint64_t> addresses;
  for (const auto& b : m.buffers) {
    try {
      P->buffers.emplace_back(device, static_cast<size_t>(b.bytes));
    } catch (const lrrt::Error& e) {
      throw DeviceError(fmt::format("{}: cannot allocate {} bytes for buffer \"{}\" on {}: {}", b.pointer, b.bytes, b.name,
                                    P->props.name, e.what()));
    }
    addresses.push_back(reinterpret_cast<uint64_t>(P->buffers.back().data()));
  }
  P->kernargs = pack_kernargs(m.args, layout, addresses, min_size);
  const auto& L = m.launch;
  P->config = lrrt::launch_config({L.workgroup_count[0], L.workgroup_count[1], L.workgroup_count[2]},
                                  {L.workgroup_size[0], L.workgroup_size[1], L.workgroup_size[2]}, L.dynamic_shared_bytes);
  return P;
}

void upload(Prepared& P, const Manifest& m, const std::vector<std::vector<std::byte>>& initial) {
  for (size_t i = 0; i < m.buffers.size(); ++i) lrrt::copy_to_device(P.buffers[i], initial[i].data(), initial[i].size());
}

void launch(Prepared& P, const Manifest& m) {
  try {
    lrrt::launch(P.kernel, P.config, std::span<const std::byte>(P.kernargs));
  } catch (const lrrt::Error& e) {
    if (e.status() == LR_ERROR_INVALID_ARGUMENT)
      throw InputError(fmt::format("/launch: kernel \"{}\" cannot be launched with this configuration: {}", m.kernel, e.what()));
    throw;
  }
}

// Launches once from the initial data and returns every buffer's contents.
std::vector<std::vector<std::byte>> run_once(Prepared& P, const Manifest& m,
                                             const std::vector<std::vector<std::byte>>& initial,
                                             const std::vector<bool>& wanted) {
  upload(P, m, initial);
  launch(P, m);
  P.device.synchronize();
  std::vector<std::vector<std::byte>> out(m.buffers.size());
  for (size_t i = 0; i < m.buffers.size(); ++i) {
    if (!wanted[i]) continue;
    out[i].resize(initial[i].size());
    lrrt::copy_to_host(out[i].data(), P.buffers[i], out[i].size());
  }
  return out;
}

// Runs the timed loop: events around every launch, recorded in rounds so
// the number of live events stays bounded.
std::vector<uint64_t> time_launches(Prepared& P, const Manifest& m, uint32_t warmup, uint32_t iterations,
                                    uint64_t& wall_ns) {
  for (uint32_t i = 0; i < warmup; ++i) launch(P, m);
  P.device.synchronize();
  std::vector<uint64_t> samples;
  samples.reserve(iterations);
  constexpr uint32_t kRound = 256;
  std::vector<lrrt::Event> starts, ends;
  for (uint32_t i = 0; i < std::min(iterations, kRound); ++i) {
    starts.emplace_back(P.device);
    ends.emplace_back(P.device);
  }
  const auto t0 = std::chrono::steady_clock::now();
  for (uint32_t done = 0; done < iterations;) {
    const uint32_t n = std::min(kRound, iterations - done);
    for (uint32_t k = 0; k < n; ++k) {
      starts[k].record();
      launch(P, m);
      ends[k].record();
    }
    ends[n - 1].synchronize();
    for (uint32_t k = 0; k < n; ++k) samples.push_back(ends[k].elapsed_ns_since(starts[k]));
    done += n;
  }
  P.device.synchronize();
  wall_ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
  return samples;
}

json buffers_json(const Manifest& m, const std::vector<std::optional<uint64_t>>& seeds) {
  json out = json::array();
  for (size_t i = 0; i < m.buffers.size(); ++i) {
    const auto& b = m.buffers[i];
    json init = b.init.to_json();
    if (seeds[i] && b.init.kind == BufferInit::Kind::Random) init["random"]["seed"] = *seeds[i];
    json e{{"name", b.name}, {"type", dtype_name(b.type)}, {"shape", b.shape}, {"count", b.count}, {"bytes", b.bytes}, {"init", init}};
    if (b.access != Access::None)
      e["access"] = b.access == Access::Read ? "read" : b.access == Access::Write ? "write" : "read_write";
    out.push_back(std::move(e));
  }
  return out;
}

// Every buffer's initial contents and the seed a random fill drew.
struct Initial {
  BufferContents contents;
  std::vector<std::optional<uint64_t>> seeds;
};

Initial initial_contents(const Manifest& m) {
  Initial in{BufferContents(m.buffers.size()), std::vector<std::optional<uint64_t>>(m.buffers.size())};
  for (size_t i = 0; i < m.buffers.size(); ++i) {
    const auto& b = m.buffers[i];
    try {
      in.contents[i].resize(static_cast<size_t>(b.bytes));
    } catch (const std::bad_alloc&) {
      throw DeviceError(fmt::format("{}: cannot allocate {} bytes of host memory for buffer \"{}\"", b.pointer, b.bytes, b.name));
    }
    in.seeds[i] = fill_buffer(b, in.contents[i].data());
  }
  return in;
}

// The buffers read back after the verified launch: the checked and the saved.
std::vector<bool> buffers_read_back(const Manifest& m) {
  std::vector<bool> wanted(m.buffers.size(), false);
  for (const auto& v : m.verify) wanted[v.buffer] = true;
  for (const auto& s : m.save) wanted[s.buffer] = true;
  return wanted;
}

// The timing object (timing_json plus wall time and bandwidth); null with
// no iterations.
json time_runs(Prepared& P, const Manifest& m, const BufferContents& initial, uint32_t warmup, uint32_t iterations) {
  if (iterations == 0) return nullptr;
  upload(P, m, initial);
  uint64_t wall_ns = 0;
  const std::vector<uint64_t> samples = time_launches(P, m, warmup, iterations, wall_ns);
  json timing = timing_json(samples);
  timing["wall_ns"] = wall_ns;
  timing["wall_per_iteration_ns"] = double(wall_ns) / double(samples.size());
  if (auto bytes = m.traffic_bytes()) {
    timing["bytes_per_iteration"] = *bytes;
    const double median = timing["median_ns"].get<double>();
    timing["bandwidth_gbps"] = median > 0 ? double(*bytes) / median : 0.0;
  }
  return timing;
}

// Writes the "save" outputs (the verified launch's) as .npy files.
json save_outputs(const Manifest& m, const BufferContents& outputs) {
  json saved = json::array();
  for (const auto& s : m.save) {
    const auto& b = m.buffers[s.buffer];
    write_file_atomic(s.file, npy_bytes(b.type, b.shape, outputs[s.buffer].data()));
    saved.push_back({{"buffer", b.name}, {"npy", s.file.string()}});
  }
  return saved;
}

json launch_json(const Manifest& m) {
  const auto& L = m.launch;
  json launch{{"workgroup_size", L.workgroup_size},
              {"workgroup_count", L.workgroup_count},
              {"work_items", L.total_workitems()},
              {"dynamic_shared_bytes", L.dynamic_shared_bytes}};
  if (L.from_global_size) launch["global_size"] = L.requested;
  return launch;
}

}  // namespace

json timing_json(const std::vector<uint64_t>& samples_ns) {
  if (samples_ns.empty()) return nullptr;
  const Stats s = compute_stats(std::vector<double>(samples_ns.begin(), samples_ns.end()));
  // min and max are samples: integers, as recorded.
  return {{"samples", samples_ns},
          {"min_ns", static_cast<uint64_t>(s.min)},
          {"median_ns", s.median},
          {"mean_ns", s.mean},
          {"stddev_ns", s.stddev},
          {"max_ns", static_cast<uint64_t>(s.max)}};
}

json run_manifest(const Manifest& m, const lrrt::Device& device, const RunOptions& opt) {
  auto note = [&](const std::string& s) {
    if (opt.note) opt.note(s);
  };
  try {
    // Resolve and load the code object, find the kernel, check the launch,
    // the argument layout and the buffers against the device; allocate.
    std::unique_ptr<Prepared> P = prepare(m, device, opt.kernel_dir);

    // Initialise: every buffer's contents, generated once, uploaded before
    // the verified launch and again before timing.
    const Initial initial = initial_contents(m);

    // The verified launch.
    note(fmt::format("{}: kernel {} on {} ({})", m.name, m.kernel, P->props.name, P->props.backend));
    const BufferContents outputs = run_once(*P, m, initial.contents, buffers_read_back(m));

    // Time: warm-up and timed launches on the initial contents again.
    const uint32_t warmup = opt.warmup.value_or(m.warmup);
    const uint32_t iterations = opt.iterations.value_or(m.iterations);
    const json timing = time_runs(*P, m, initial.contents, warmup, iterations);

    // Verify the verified launch's outputs.
    VerifyInputs checks;
    checks.manifest = &m;
    checks.initial = &initial.contents;
    checks.outputs = &outputs;
    checks.grid = P->config.grid;
    checks.block = P->config.block;
    checks.backend = P->props.backend;
    checks.run_elsewhere = [&](const lrrt::Device& other) {
      note(fmt::format("{}: reference run on {}", m.name, other.backend()));
      auto R = prepare(m, other, opt.kernel_dir);
      return run_once(*R, m, initial.contents, std::vector<bool>(m.buffers.size(), true));
    };
    const json verification = verify_outputs(checks, opt.verify);

    // Save them.
    const json saved = save_outputs(m, outputs);

    return json{{"manifest", m.path.string()},
                {"name", m.name},
                {"kernel", m.kernel},
                {"code_object", P->code_object.string()},
                {"backend", P->props.backend},
                {"device_index", P->device.index()},
                {"launch", launch_json(m)},
                {"kernargs", {{"bytes", P->kernargs.size()}, {"layout_checked", P->layout_checked}}},
                {"buffers", buffers_json(m, initial.seeds)},
                {"warmup", warmup},
                {"iterations", iterations},
                {"timing", timing},
                {"verification", verification},
                {"saved", saved}};
  } catch (const lrrt::Error& e) {
    if (e.status() == LR_ERROR_KERNEL_FAULT)
      throw DeviceError(fmt::format("kernel \"{}\" failed: {}", m.kernel, e.what()));
    throw DeviceError(e.what());
  }
}

}  // namespace lrrt::tool
