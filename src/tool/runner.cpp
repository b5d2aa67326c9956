#include "tool/runner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <memory>
#include <set>

#include "tool/atomic_file.hpp"
#include "tool/bundle.hpp"
#include "tool/sequence_runner.hpp"
#include "tool/stats.hpp"
#include "tool/verify.hpp"

namespace lrrt::tool {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// The manifest's kernel loaded on a device with its buffers and packed
// arguments, ready to launch.
// The buffers, after what the whole run holds was checked against the
// memory there is (when `demand` is given: the run's own device, not a
// reference run's).
std::vector<lrrt::DeviceBuffer> allocate_checked(const Manifest& m, const lrrt::Device& device, const MemoryDemand* demand) {
  if (demand) check_memory_demand(m, *demand, device.properties());
  return allocate_buffers(m, device);
}

struct Prepared {
  Prepared(const Manifest& m, const lrrt::Device& device, const fs::path& kernel_dir, const MemoryDemand* demand = nullptr)
      : kernel(m, device, kernel_dir),
        buffers(allocate_checked(m, device, demand)),
        kernargs(kernel.pack_args(buffers)) {}
  LoadedKernel kernel;
  std::vector<lrrt::DeviceBuffer> buffers;
  std::vector<std::byte> kernargs;
  const lrrt::Device& device() const { return kernel.device(); }
  const lr_device_properties_t& props() const { return kernel.device_properties(); }
};

void upload(Prepared& P, const BufferContents& initial) { upload_buffers(P.buffers, initial); }

void launch(Prepared& P) { P.kernel.launch(P.kernargs); }

// Launches once from the initial data and returns every buffer's contents.
BufferContents run_once(Prepared& P, const Manifest& m, const BufferContents& initial, const std::vector<bool>& wanted) {
  upload(P, initial);
  launch(P);
  P.device().synchronize();
  std::vector<std::vector<std::byte>> out(m.buffers.size());
  for (size_t i = 0; i < m.buffers.size(); ++i) {
    if (!wanted[i]) continue;
    out[i].resize(initial[i].size());
    lrrt::copy_to_host(out[i].data(), P.buffers[i], out[i].size());
  }
  return out;
}

// The timing object (the samples' statistics, wall time, noise, the
// criterion, throughput); null with no iterations in fixed mode.
json time_runs(Prepared& P, const Manifest& m, const BufferContents& initial, uint32_t warmup, uint32_t iterations,
               const RunOptions& opt) {
  if (iterations == 0 && !opt.timing.noise_stop) return nullptr;
  upload(P, initial);
  std::optional<CacheFlush> flush;
  if (opt.timing.cold) flush.emplace(P.device());
  // A launch never waits for the device: its rounds can go behind a held
  // queue (cold samples cannot: each flush waits).
  std::string why_not = "--cold: each sample's cache flush waits for the device";
  std::unique_ptr<QueueHold> hold;
  if (!flush) hold = QueueHold::make(P.device(), opt.kernel_dir, &why_not);
  const SampleRun run = sample_launches(
      P.device(), opt.timing, warmup, iterations, [](uint64_t) {}, [&] { launch(P); }, flush ? &*flush : nullptr,
      hold.get());
  json timing = sample_json(run, opt.timing, iterations);
  if (flush) timing["flush"] = flush->describe();
  timing["queue_hold"] = hold ? hold->describe() : json{{"held", false}, {"why_not", why_not}};
  if (json t = throughput_json(m, timing["median_ns"].get<double>(), opt.memory); !t.is_null()) {
    // The fields of older results stay where they were.
    for (auto it = t.begin(); it != t.end(); ++it) timing[it.key()] = it.value();
  }
  return timing;
}

// A host kernel fault names the allocation its address lies in or after
// ("the 4000-byte device allocation at 0x7f..."): the manifest's buffer name
// goes after it.
std::string name_buffers(std::string message, const Manifest& m, const std::vector<const void*>& addresses) {
  for (size_t i = 0; i < addresses.size() && i < m.buffers.size(); ++i) {
    const std::string at = fmt::format("allocation at {}", addresses[i]);
    for (size_t pos = message.find(at); pos != std::string::npos; pos = message.find(at, pos + 1)) {
      const size_t end = pos + at.size();
      if (end < message.size() && std::isxdigit(static_cast<unsigned char>(message[end]))) continue;
      const std::string name = fmt::format(" (buffer \"{}\")", m.buffers[i].name);
      message.insert(end, name);
      pos = end + name.size();
    }
  }
  return message;
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

json buffers_json(const Manifest& m, const std::vector<std::optional<uint64_t>>& seeds,
                  const std::vector<std::string>* access_sources) {
  json out = json::array();
  for (size_t i = 0; i < m.buffers.size(); ++i) {
    const auto& b = m.buffers[i];
    json init = b.init.to_json();
    if (seeds[i] && b.init.kind == BufferInit::Kind::Random) init["random"]["seed"] = *seeds[i];
    json e{{"name", b.name}, {"type", dtype_name(b.type)}, {"shape", b.shape}, {"count", b.count}, {"bytes", b.bytes}, {"init", init}};
    if (b.access != Access::None)
      e["access"] = b.access == Access::Read ? "read" : b.access == Access::Write ? "write" : "read_write";
    if (access_sources && i < access_sources->size() && !(*access_sources)[i].empty())
      e["access_source"] = (*access_sources)[i];
    out.push_back(std::move(e));
  }
  return out;
}

// The buffers read back after the verified launch: the checked and the saved.
std::vector<bool> buffers_read_back(const Manifest& m) {
  std::vector<bool> wanted(m.buffers.size(), false);
  for (const auto& v : m.verify) wanted[v.buffer] = true;
  for (const auto& s : m.save) wanted[s.buffer] = true;
  return wanted;
}

namespace {

// a + b and k * a, saturating: sizes come from manifests.
uint64_t add_sat(uint64_t a, uint64_t b) { return b > UINT64_MAX - a ? UINT64_MAX : a + b; }
uint64_t mul_sat(uint64_t k, uint64_t a) { return k && a > UINT64_MAX / k ? UINT64_MAX : k * a; }

}  // namespace

MemoryDemand memory_demand(const Manifest& m, std::string_view backend, bool verify) {
  MemoryDemand d;
  uint64_t all = 0, read_back = 0, elements = 0;
  const std::vector<bool> wanted = buffers_read_back(m);
  for (size_t i = 0; i < m.buffers.size(); ++i) {
    all = add_sat(all, m.buffers[i].bytes);
    elements = add_sat(elements, m.buffers[i].count);
    if (wanted[i]) read_back = add_sat(read_back, m.buffers[i].bytes);
  }
  d.device_bytes = all;
  uint64_t expected = 0, sequence_reference = 0, elsewhere = 0;
  std::set<std::string> backends;
  for (const auto& v : m.verify) {
    if (!verify) break;
    const uint64_t bytes = m.buffers[v.buffer].bytes;
    if (v.kind == VerifySpec::Kind::ReferenceBackend) {
      // Its outputs (every buffer) stay for the other checks; on host its
      // buffers are host memory too.
      if (v.backend != backend && backends.insert(v.backend).second)
        elsewhere = add_sat(elsewhere, mul_sat(v.backend == "host" ? 2 : 1, all));
    } else if (v.kind == VerifySpec::Kind::Reference && v.reference == kSequenceReference) {
      // The state and, per element, its origin and whether it holds poison.
      sequence_reference = add_sat(all, mul_sat(2, elements));
    } else {
      // A built-in reference says of each element where it came from (one byte).
      const uint64_t origin = v.kind == VerifySpec::Kind::Reference ? m.buffers[v.buffer].count : 0;
      expected = std::max(expected, add_sat(bytes, origin));
    }
  }
  d.host_parts.emplace_back("initial contents", all);
  if (m.sequence) {
    // Eager and replayed outputs (and a patched replay's) are kept to the
    // end; the reference is the state (every buffer) and a step's outputs,
    // again for a patched replay.
    const uint64_t runs = m.sequence->patch ? 3 : 2;
    d.host_parts.emplace_back("outputs", mul_sat(runs, read_back));
    d.host_parts.emplace_back("sequence reference", mul_sat(m.sequence->patch ? 3 : 2, sequence_reference));
    uint64_t fills = 0;
    for (const auto& s : m.sequence->steps)
      if (s.kind == SequenceStep::Kind::Fill) fills = add_sat(fills, s.bytes);
    d.host_parts.emplace_back("fill patterns", fills);
  } else {
    d.host_parts.emplace_back("outputs", read_back);
  }
  d.host_parts.emplace_back("expected values", expected);
  d.host_parts.emplace_back("reference runs", elsewhere);
  return d;
}

namespace {

// Every file a run of m reads besides the manifest and the code object, with
// the field that names it.
std::vector<std::pair<std::string, fs::path>> files_read(const Manifest& m) {
  std::vector<std::pair<std::string, fs::path>> out;
  for (const auto& b : m.buffers)
    if (b.init.kind == BufferInit::Kind::Npy || b.init.kind == BufferInit::Kind::Raw)
      out.emplace_back(b.pointer + (b.init.kind == BufferInit::Kind::Npy ? "/init/npy" : "/init/raw"), b.init.file);
  for (const auto& v : m.verify)
    if (v.kind == VerifySpec::Kind::Npy || v.kind == VerifySpec::Kind::Raw)
      out.emplace_back(v.pointer + (v.kind == VerifySpec::Kind::Npy ? "/expected/npy" : "/expected/raw"), v.file);
  return out;
}

// One file: the same inode after following links; false when either is missing.
bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  if (!fs::exists(a, ec) || !fs::exists(b, ec)) return false;
  const bool same = fs::equivalent(a, b, ec);
  return !ec && same;
}

}  // namespace

void check_saves(const Manifest& m) {
  for (const auto& s : m.save)
    for (const auto& [pointer, path] : files_read(m))
      if (same_file(s.file, path))
        throw ManifestError(s.pointer + "/npy",
                            fmt::format("{} is read by this run ({}): saving buffer \"{}\" onto it would replace {} with the "
                                        "outputs; save to another file",
                                        s.file.string(), pointer, m.buffers[s.buffer].name,
                                        pointer.rfind("/verify", 0) == 0 ? "the expected values" : "the run's inputs"));
}

void check_command_writes(const std::vector<Manifest>& manifests, const fs::path& output) {
  auto refuse_read = [&](const fs::path& written, const std::string& who) {
    for (const auto& r : manifests) {
      if (same_file(written, r.path))
        throw InputError(fmt::format("{}: {} is the manifest {}, which this command reads", who, written.string(), r.path.string()));
      for (const auto& [pointer, path] : files_read(r))
        if (same_file(written, path))
          throw InputError(fmt::format("{}: {} is read by this command ({}: {}): writing it would replace what the next run "
                                       "reads; write to another file",
                                       who, written.string(), r.path.string(), pointer));
    }
  };
  if (!output.empty()) refuse_read(output, "-o");
  for (const auto& m : manifests)
    for (const auto& s : m.save) refuse_read(s.file, fmt::format("{}: {}/npy", m.path.string(), s.pointer));
}

// Writes the "save" outputs (the verified launch's) as .npy files.
json save_outputs(const Manifest& m, const BufferContents& outputs, PendingFiles* deferred) {
  json saved = json::array();
  for (const auto& s : m.save) {
    const auto& b = m.buffers[s.buffer];
    std::string bytes = npy_bytes(b.type, b.shape, outputs[s.buffer].data());
    if (deferred) deferred->add(s.file, std::move(bytes));
    else write_file_atomic(s.file, bytes);
    saved.push_back({{"buffer", b.name}, {"npy", s.file.string()}});
  }
  return saved;
}

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

bool cannot_run_here(const bundle::Error& e) {
  // The launch beyond the device's or the kernel's limits, or the run too
  // big for the memory there is; not a code object or kernel that is wrong.
  if (const auto* me = dynamic_cast<const ManifestError*>(&e)) return me->pointer().find("/launch") != std::string::npos;
  return dynamic_cast<const DeviceError*>(&e) && std::string_view(e.what()).rfind("/code_object", 0) != 0;
}

json throughput_json(const Manifest& m, double median_ns, const lr_device_memory_info_t* memory) {
  const auto bytes = m.traffic_bytes();
  if (!bytes && !m.elements_per_iteration) return nullptr;
  json t = json::object();
  if (bytes) {
    t["bytes_per_iteration"] = *bytes;
    const double gbps = median_ns > 0 ? double(*bytes) / median_ns : 0.0;
    t["bandwidth_gbps"] = gbps;
    if (memory && memory->peak_bandwidth_bytes_per_second > 0) {
      const double peak = memory->peak_bandwidth_bytes_per_second / 1e9;
      t["peak_bandwidth_gbps"] = peak;
      t["percent_of_peak"] = 100.0 * gbps / peak;
      t["peak_source"] = memory->peak_bandwidth_source == LR_PEAK_BANDWIDTH_MEASURED ? "measured" : "reported";
    }
  }
  if (m.elements_per_iteration) {
    t["elements_per_iteration"] = *m.elements_per_iteration;
    t["elements_per_second"] = median_ns > 0 ? double(*m.elements_per_iteration) / median_ns * 1e9 : 0.0;
  }
  return t;
}

namespace {

// The manifest with each buffer that declares no access given what the
// kernel's code object proves for the arguments naming it (docs/access.md):
// the union over those arguments, unless one of them is unknown (then none,
// as before: no traffic is claimed). sources[i]: where buffer i's access came
// from, "" when it has none.
Manifest with_derived_access(const Manifest& m, const LoadedKernel& k, std::vector<std::string>& sources) {
  Manifest out = m;
  sources.assign(m.buffers.size(), "");
  std::vector<int> bits(m.buffers.size(), 0);
  std::vector<bool> unknown(m.buffers.size(), false);
  for (size_t b = 0; b < m.buffers.size(); ++b)
    if (m.buffers[b].access != Access::None) sources[b] = "declared";
  // A struct's pointer field has no access of its own in a code object.
  for (const auto& u : buffer_uses(m.args))
    if (u.field && m.buffers[u.buffer].access == Access::None) unknown[u.buffer] = true;
  for (size_t i = 0; i < m.args.size(); ++i) {
    const ArgSpec& a = m.args[i];
    if (a.kind == ArgSpec::Kind::TensorMap && m.buffers[a.buffer].access == Access::None) {
      // The tensor map's own access (read unless it says otherwise).
      bits[a.buffer] |= a.access == Access::Read ? LR_ACCESS_READ : a.access == Access::Write ? LR_ACCESS_WRITE : LR_ACCESS_READ_WRITE;
      std::string& s = sources[a.buffer];
      s = s.empty() || s == "tensor_map" ? "tensor_map" : "derived";
      continue;
    }
    if (a.kind != ArgSpec::Kind::Buffer || m.buffers[a.buffer].access != Access::None) continue;
    const LoadedKernel::DerivedAccess d = k.derived_access(i);
    if (d.source == "default") {
      unknown[a.buffer] = true;
      continue;
    }
    bits[a.buffer] |= int(d.mode);
    std::string& s = sources[a.buffer];
    s = s.empty() || s == d.source ? d.source : "derived";
  }
  for (size_t b = 0; b < m.buffers.size(); ++b) {
    if (m.buffers[b].access != Access::None) continue;
    if (unknown[b] || !bits[b]) {
      sources[b].clear();
      continue;
    }
    out.buffers[b].access = bits[b] == LR_ACCESS_READ ? Access::Read : bits[b] == LR_ACCESS_WRITE ? Access::Write : Access::ReadWrite;
  }
  return out;
}

}  // namespace

json run_manifest(const Manifest& m, const lrrt::Device& device, const RunOptions& opt) {
  auto note = [&](const std::string& s) {
    if (opt.note) opt.note(s);
  };
  // Nothing is saved onto a file the run reads (before any work).
  check_saves(m);
  if (m.sequence) return run_sequence(m, device, opt);
  std::vector<const void*> addresses;  // of the buffers, for fault messages
  try {
    // The references the checks name exist (parse_manifest leaves that to
    // the verifier).
    check_references(m);

    // Resolve and load the code object, find the kernel, check the launch,
    // the argument layout and the buffers against the device; allocate.
    const MemoryDemand demand = memory_demand(m, device.backend(), opt.verify);
    std::unique_ptr<Prepared> P;
    try {
      P = std::make_unique<Prepared>(m, device, opt.kernel_dir, &demand);
    } catch (const bundle::Error& e) {
      if (opt.unrunnable_as_skip && cannot_run_here(e)) throw Unrunnable(e.exit_code(), e.what());
      throw;
    }
    for (const auto& b : P->buffers) addresses.push_back(b.data());

    // Initialise: every buffer's contents, generated once, uploaded before
    // the verified launch and again before timing.
    const InitialContents initial = initial_contents(m);

    // The verified launch.
    note(fmt::format("{}: kernel {} on {} ({})", m.name, m.kernel, P->props().name, P->props().backend));
    const BufferContents outputs = run_once(*P, m, initial.contents, buffers_read_back(m));

    // Time: warm-up and timed launches on the initial contents again.
    const uint32_t warmup = opt.warmup.value_or(m.warmup);
    const uint32_t iterations = opt.iterations.value_or(m.iterations);
    // Buffers without "access" get what the code object proves (bandwidth).
    std::vector<std::string> access_sources;
    const Manifest derived = with_derived_access(m, P->kernel, access_sources);
    const json timing = time_runs(*P, derived, initial.contents, warmup, iterations, opt);

    // Verify the verified launch's outputs.
    VerifyInputs checks;
    checks.manifest = &m;
    checks.initial = &initial.contents;
    checks.outputs = &outputs;
    checks.grid = P->kernel.launch_config().grid;
    checks.block = P->kernel.launch_config().block;
    checks.backend = P->props().backend;
    checks.run_elsewhere = [&](const lrrt::Device& other) {
      note(fmt::format("{}: reference run on {}", m.name, other.backend()));
      Prepared R(m, other, opt.kernel_dir);
      return run_once(R, m, initial.contents, std::vector<bool>(m.buffers.size(), true));
    };
    const json verification = verify_outputs(checks, opt.verify);

    // Save them.
    const json saved = save_outputs(m, outputs, opt.deferred_saves);

    return json{{"manifest", m.path.string()},
                {"name", m.name},
                {"kernel", m.kernel},
                {"code_object", P->kernel.code_object().string()},
                {"code_object_entry", P->kernel.code_object_entry()},
                {"backend", P->props().backend},
                {"device_index", P->device().index()},
                {"launch", launch_json(m)},
                {"kernargs", {{"bytes", P->kernargs.size()}, {"layout_checked", P->kernel.layout_checked()}}},
                {"buffers", buffers_json(derived, initial.seeds, &access_sources)},
                {"warmup", warmup},
                {"iterations", iterations},
                {"timing", timing},
                {"verification", verification},
                {"warnings", poison_read_warnings(m)},
                {"saved", saved}};
  } catch (const lrrt::Error& e) {
    if (e.status() == LR_ERROR_KERNEL_FAULT)
      throw DeviceError(fmt::format("kernel \"{}\" failed: {}", m.kernel, name_buffers(e.what(), m, addresses)));
    throw DeviceError(e.what());
  }
}

}  // namespace lrrt::tool
