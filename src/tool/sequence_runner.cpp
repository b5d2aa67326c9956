#include "tool/sequence_runner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <set>

#include "tool/reference_ops.hpp"
#include "tool/runner.hpp"
#include "tool/sampling.hpp"
#include "tool/verify.hpp"

namespace lrrt::tool {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// A ManifestError from a kernel step checked as a single-kernel manifest
// names /args, /launch, /kernel or /code_object; the sequence's pointers are
// the step's and its kernel's.
[[noreturn]] void rethrow_for_step(const ManifestError& e, const Manifest& m, const SequenceStep& step) {
  const std::string& p = e.pointer();
  std::string where = p;
  if (p.rfind("/args", 0) == 0 || p.rfind("/launch", 0) == 0) where = step.pointer + p;
  else if (p.rfind("/kernel", 0) == 0 || p.rfind("/code_object", 0) == 0)
    where = m.sequence->kernels[step.kernel].pointer + (p == "/kernel" ? "/kernel" : p);
  std::string what = e.what();
  const std::string prefix = (p.empty() ? std::string("/") : p) + ": ";
  if (what.rfind(prefix, 0) == 0) what = what.substr(prefix.size());
  throw ManifestError(where, fmt::format("step \"{}\": {}", step.name, what));
}

std::vector<const SequenceStep*> first_instances(const Sequence& seq) {
  std::vector<const SequenceStep*> out(seq.written_steps, nullptr);
  for (const auto& s : seq.steps)
    if (!out[s.written]) out[s.written] = &s;
  return out;
}

// A written kernel step loaded on the device: its kernel, packed arguments
// (ranged buffer arguments point at their range) and declared accesses.
struct KernelStep {
  std::unique_ptr<LoadedKernel> kernel;
  std::vector<std::byte> kernargs;
  std::vector<lr_graph_access_t> accesses;
  // Per buffer argument: the argument, its access and where it came from
  // (declared in the manifest, or derived: docs/access.md).
  json access_sources = json::array();
};

const char* access_word(lr_access_mode_t m) {
  return m == LR_ACCESS_READ ? "read" : m == LR_ACCESS_WRITE ? "write" : "read_write";
}

lr_access_mode_t access_mode(Access a) {
  switch (a) {
    case Access::Read: return LR_ACCESS_READ;
    case Access::Write: return LR_ACCESS_WRITE;
    default: return LR_ACCESS_READ_WRITE;
  }
}

// The sequence on a device: buffers, every written kernel step loaded, fill
// patterns in pinned host memory (the launch API has no fill: an eager fill
// is a host-to-device copy of the pattern).
class PreparedSequence {
 public:
  PreparedSequence(const Manifest& m, const lrrt::Device& device, const fs::path& kernel_dir)
      : m_(m), seq_(*m.sequence), device_(device), buffers_(allocate_buffers(m, device)) {
    const auto firsts = first_instances(seq_);
    written_.resize(seq_.written_steps);
    fills_.resize(seq_.written_steps);
    for (size_t w = 0; w < firsts.size(); ++w) {
      const SequenceStep& s = *firsts[w];
      if (s.kind == SequenceStep::Kind::Fill) {
        auto& pinned = fills_[w].emplace(device_, static_cast<size_t>(s.bytes));
        auto* dst = static_cast<std::byte*>(pinned.data());
        for (uint64_t i = 0; i < s.bytes; i += s.pattern_size) std::memcpy(dst + i, s.pattern.data(), s.pattern_size);
        continue;
      }
      if (s.kind != SequenceStep::Kind::Kernel) continue;
      KernelStep& k = written_[w].emplace();
      try {
        k.kernel = std::make_unique<LoadedKernel>(kernel_step_manifest(m, s), device, kernel_dir);
      } catch (const ManifestError& e) {
        rethrow_for_step(e, m, s);
      }
      k.kernargs = k.kernel->pack_args(buffers_);
      // Buffer arguments and struct pointer fields alike: each is a declared
      // access, so the derived edges and fences cover a pointer in a struct.
      for (const BufferUse& u : buffer_uses(s.args)) {
        const size_t i = u.arg;
        std::byte* base = static_cast<std::byte*>(buffers_[u.buffer].data());
        if (u.range_offset && !u.field) {  // pack_args put a field's range offset in already
          const uint64_t address = reinterpret_cast<uint64_t>(base + u.range_offset);
          std::memcpy(k.kernargs.data() + k.kernel->layout().slots[i].offset, &address, sizeof(address));
        }
        // An argument without "access" gets what its code object proves (a
        // struct's field or a tensor map: nothing, so read_write: a kernel may
        // store through a map, and no fence is dropped).
        lr_access_mode_t mode = access_mode(u.access);
        std::string source = "declared";
        if (u.access == Access::None) {
          const LoadedKernel::DerivedAccess d = k.kernel->derived_access(u.field ? SIZE_MAX : i);
          mode = d.mode;
          source = d.source;
        }
        k.accesses.push_back({base, u.range_offset, u.range_bytes, mode});
        json src{{"arg", i}, {"buffer", m.buffers[u.buffer].name}, {"access", access_word(mode)}, {"source", source}};
        if (u.field) src["field"] = u.path;
        k.access_sources.push_back(std::move(src));
      }
    }
  }

  const lrrt::Device& device() const { return device_; }
  const std::vector<lrrt::DeviceBuffer>& buffers() const { return buffers_; }
  const KernelStep& kernel_step(size_t written) const { return *written_[written]; }

  std::byte* at(size_t buffer, uint64_t offset) const {
    return static_cast<std::byte*>(buffers_[buffer].data()) + offset;
  }

  // Enqueues every step once through the launch API.
  void run_eager() const {
    for (const auto& s : seq_.steps) {
      switch (s.kind) {
        case SequenceStep::Kind::Kernel: {
          const KernelStep& k = kernel_step(s.written);
          k.kernel->launch(k.kernargs);
          break;
        }
        case SequenceStep::Kind::Copy:
          lrrt::check(lr_memcpy_async(device_.get(), at(s.to, s.to_offset), at(s.from, s.from_offset), s.bytes,
                                      LR_MEMCPY_DEVICE_TO_DEVICE, nullptr),
                      "lr_memcpy_async");
          break;
        case SequenceStep::Kind::Fill:
          lrrt::check(lr_memcpy_async(device_.get(), at(s.to, s.to_offset), fills_[s.written]->data(), s.bytes,
                                      LR_MEMCPY_HOST_TO_DEVICE, nullptr),
                      "lr_memcpy_async");
          break;
      }
    }
  }

  // Records the steps as a graph (node i = step i) and instantiates it.
  lrrt::GraphExec instantiate() const {
    lrrt::Graph graph(device_);
    for (size_t i = 0; i < seq_.steps.size(); ++i) {
      const SequenceStep& s = seq_.steps[i];
      lrrt::GraphNode node = 0;
      switch (s.kind) {
        case SequenceStep::Kind::Kernel: {
          const KernelStep& k = kernel_step(s.written);
          node = graph.add_kernel(k.kernel->kernel(), k.kernel->launch_config(), k.kernargs, k.accesses);
          break;
        }
        case SequenceStep::Kind::Copy:
          node = graph.add_copy(at(s.to, s.to_offset), at(s.from, s.from_offset), s.bytes, LR_MEMCPY_DEVICE_TO_DEVICE);
          break;
        case SequenceStep::Kind::Fill:
          lrrt::check(lr_graph_add_fill(graph.get(), at(s.to, s.to_offset), s.bytes, s.pattern.data(), s.pattern_size, &node),
                      "lr_graph_add_fill");
          break;
      }
      if (node != i) throw DeviceError(fmt::format("lr_graph: step {} got node id {}", i, node));
      for (size_t a : s.after) graph.add_dependency(static_cast<lrrt::GraphNode>(a), node);
    }
    lr_graph_instantiate_options_t options{};
    // The patched run sets arguments right after a replay: waiting for it is
    // the point, not an error.
    if (seq_.patch) options.flags = LR_GRAPH_PATCH_WAITS;
    try {
      return graph.instantiate(&options);
    } catch (const lrrt::Error& e) {
      if (e.status() == LR_ERROR_INVALID_ARGUMENT || e.status() == LR_ERROR_NOT_SUPPORTED)
        throw InputError(fmt::format("/sequence: the runtime rejected the sequence: {}", e.what()));
      throw;
    }
  }

  // Sets the patched argument to value k in every repetition of its step.
  void patch(const lrrt::GraphExec& exec, size_t k) const {
    const SequencePatch& p = *seq_.patch;
    const KernelStep& ks = kernel_step(p.written);
    const ArgSlot& slot = ks.kernel->layout().slots[p.arg];
    // A struct's scalar field: its bytes at its offset inside the argument.
    const uint32_t size = p.field.empty() ? slot.size : static_cast<uint32_t>(dtype_size(p.type));
    const auto bytes = std::span<const std::byte>(p.encoded[k].data(), size);
    for (size_t i = 0; i < seq_.steps.size(); ++i)
      if (seq_.steps[i].written == p.written)
        exec.set_kernargs(static_cast<lrrt::GraphNode>(i), slot.offset + p.field_offset, bytes);
  }

  BufferContents read_back(const BufferContents& initial, const std::vector<bool>& wanted) const {
    BufferContents out(m_.buffers.size());
    for (size_t i = 0; i < m_.buffers.size(); ++i) {
      if (!wanted[i]) continue;
      out[i].resize(initial[i].size());
      lrrt::copy_to_host(out[i].data(), buffers_[i], out[i].size());
    }
    return out;
  }

 private:
  const Manifest& m_;
  const Sequence& seq_;
  lrrt::Device device_;
  std::vector<lrrt::DeviceBuffer> buffers_;
  std::vector<std::optional<KernelStep>> written_;
  std::vector<std::optional<lrrt::PinnedHostBuffer>> fills_;
};

// Timed sequences: an event before and after each whole sequence
// (sampling.hpp). `before` runs ahead of each iteration outside the events
// (the patch).
json time_way(const lrrt::Device& device, uint32_t warmup, uint32_t iterations, uint64_t steps,
              const std::function<void(uint32_t)>& before, const std::function<void()>& enqueue, const TimingOptions& t) {
  if (iterations == 0 && !t.noise_stop) return nullptr;
  std::optional<CacheFlush> flush;
  if (t.cold) flush.emplace(device);
  const SampleRun run = sample_launches(
      device, t, warmup, iterations, [&](uint64_t i) { before(static_cast<uint32_t>(i)); }, enqueue, flush ? &*flush : nullptr);
  json timing = sample_json(run, t, iterations);
  if (flush) timing["flush"] = flush->describe();
  // A dispatch is one step: a kernel, a copy or a fill.
  timing["per_dispatch_ns"] = timing["median_ns"].get<double>() / double(steps);
  return timing;
}

// One verification object over several, each check tagged with its way:
// failed if any failed, else passed if any passed, else skipped.
json combine(const std::vector<std::pair<std::string, json>>& parts) {
  json checks = json::array();
  bool failed = false, passed = false;
  std::string reason;
  for (const auto& [way, v] : parts) {
    for (json c : v["checks"]) {
      c["way"] = way;
      checks.push_back(std::move(c));
    }
    const std::string st = v["status"];
    failed |= st == "failed";
    passed |= st == "passed";
    if (reason.empty() && v.contains("reason")) reason = v["reason"];
  }
  json out{{"status", failed ? "failed" : passed ? "passed" : "skipped"}, {"checks", checks}};
  if (!failed && !passed && !reason.empty()) out["reason"] = reason;
  return out;
}

const char* kind_name(SequenceStep::Kind k) {
  switch (k) {
    case SequenceStep::Kind::Kernel: return "kernel";
    case SequenceStep::Kind::Copy: return "copy";
    case SequenceStep::Kind::Fill: return "fill";
  }
  return "";
}

json steps_json(const Sequence& seq, const PreparedSequence& P) {
  json out = json::array();
  for (size_t i = 0; i < seq.steps.size(); ++i) {
    json step{{"node", i}, {"step", seq.steps[i].label}, {"kind", kind_name(seq.steps[i].kind)}};
    if (seq.steps[i].kind == SequenceStep::Kind::Kernel) step["accesses"] = P.kernel_step(seq.steps[i].written).access_sources;
    out.push_back(std::move(step));
  }
  return out;
}

json buffer_ranges_json(const Manifest& m, const PreparedSequence& P) {
  json out = json::array();
  for (size_t i = 0; i < m.buffers.size(); ++i) {
    const auto begin = reinterpret_cast<uint64_t>(P.buffers()[i].data());
    out.push_back({{"name", m.buffers[i].name},
                   {"bytes", {fmt::format("{:#x}", begin), fmt::format("{:#x}", begin + m.buffers[i].bytes)}}});
  }
  return out;
}

json plan_json(const Manifest& m, const PreparedSequence& P, const lrrt::GraphExec& exec) {
  json plan;
  try {
    plan = json::parse(exec.plan_json());
  } catch (const json::exception& e) {
    throw DeviceError(fmt::format("lr_graph_exec_get_plan returned malformed JSON: {}", e.what()));
  }
  return {{"manifest", m.path.string()},
          {"name", m.name},
          {"steps", steps_json(*m.sequence, P)},
          {"buffers", buffer_ranges_json(m, P)},
          {"plan", std::move(plan)}};
}

template <typename F>
auto device_errors(const Manifest& m, F&& f) {
  try {
    return f();
  } catch (const lrrt::Error& e) {
    if (e.status() == LR_ERROR_KERNEL_FAULT) throw DeviceError(fmt::format("sequence \"{}\" failed: {}", m.name, e.what()));
    throw DeviceError(e.what());
  }
}

}  // namespace

SequenceReference sequence_reference(const Manifest& m, const BufferContents& initial, const std::optional<size_t>& patch_value,
                                     const std::string& verify_pointer) {
  const Sequence& seq = *m.sequence;
  const auto firsts = first_instances(seq);
  // One single-kernel manifest per written kernel step, the patch applied.
  std::vector<std::optional<Manifest>> step_manifests(seq.written_steps);
  for (size_t w = 0; w < firsts.size(); ++w) {
    if (firsts[w]->kind != SequenceStep::Kind::Kernel) continue;
    Manifest& km = step_manifests[w].emplace(kernel_step_manifest(m, *firsts[w]));
    for (const auto& u : buffer_uses(km.args))
      if (u.range_offset)
        throw ManifestError(verify_pointer + "/expected/reference",
                            fmt::format("step \"{}\" passes a range of buffer \"{}\" (offset {}); the sequence reference runs "
                                        "the built-in references on whole buffers: check this sequence with npy, raw or values",
                                        firsts[w]->name, m.buffers[u.buffer].name, u.range_offset));
    if (patch_value && seq.patch->written == w) seq.patch->apply(km.args[seq.patch->arg], *patch_value);
  }
  SequenceReference ref{initial, {}};
  BufferContents& state = ref.state;
  // Per element: its origin so far, and whether it holds poison (untouched
  // in a buffer whose init is poison, or computed from poison).
  std::vector<std::vector<uint8_t>> poisoned(m.buffers.size());
  ref.origin.resize(m.buffers.size());
  for (size_t b = 0; b < m.buffers.size(); ++b) {
    ref.origin[b].assign(m.buffers[b].count, Origin::Untouched);
    poisoned[b].assign(m.buffers[b].count, m.buffers[b].init.kind == BufferInit::Kind::Poison ? 1 : 0);
  }
  auto mark = [&](size_t b, uint64_t i, bool from_poison) {
    ref.origin[b][i] = from_poison ? Origin::FromPoison : Origin::Computed;
    poisoned[b][i] = from_poison ? 1 : 0;
  };
  for (const auto& s : seq.steps) {
    switch (s.kind) {
      case SequenceStep::Kind::Kernel: {
        const Manifest& km = *step_manifests[s.written];
        const lrrt::LaunchConfig cfg = to_launch_config(km.launch);
        ReferenceInputs in{&km, &state, cfg.grid, cfg.block, &poisoned};
        // The buffers the kernel's signature writes (a conservative
        // "read_write" on an input does not make it an output).
        std::set<size_t> written;
        for (size_t b : reference_op_buffers(km.kernel, km.args, true)) written.insert(b);
        // Every output from the state before the step, then all at once.
        std::vector<std::pair<size_t, ReferenceOutput>> outputs;
        for (size_t b : written) outputs.emplace_back(b, compute_reference(km.kernel, in, b, verify_pointer));
        for (auto& [b, out] : outputs) {
          state[b] = std::move(out.values);
          for (uint64_t i = 0; i < out.origin.size(); ++i)
            if (out.origin[i] != Origin::Untouched) mark(b, i, out.origin[i] == Origin::FromPoison);
        }
        break;
      }
      case SequenceStep::Kind::Copy: {
        // Each destination element the copy reaches holds poison when any
        // source element its bytes come from does.
        const uint64_t ds = dtype_size(m.buffers[s.to].type), ss = dtype_size(m.buffers[s.from].type);
        const uint64_t end = s.to_offset + s.bytes;
        std::vector<std::pair<uint64_t, bool>> marks;
        for (uint64_t j = s.to_offset / ds; j * ds < end; ++j) {
          const uint64_t lo = std::max(j * ds, s.to_offset) - s.to_offset + s.from_offset;
          const uint64_t hi = std::min((j + 1) * ds, end) - s.to_offset + s.from_offset;
          bool from_poison = false;
          for (uint64_t k = lo / ss; k * ss < hi; ++k) from_poison |= poisoned[s.from][k] != 0;
          marks.emplace_back(j, from_poison);
        }
        for (const auto& [j, p] : marks) mark(s.to, j, p);
        std::memmove(state[s.to].data() + s.to_offset, state[s.from].data() + s.from_offset, s.bytes);
        break;
      }
      case SequenceStep::Kind::Fill: {
        for (uint64_t i = 0; i < s.bytes; i += s.pattern_size)
          std::memcpy(state[s.to].data() + s.to_offset + i, s.pattern.data(), s.pattern_size);
        const uint64_t es = dtype_size(m.buffers[s.to].type);
        for (uint64_t j = s.to_offset / es; j * es < s.to_offset + s.bytes; ++j) mark(s.to, j, false);
        break;
      }
    }
  }
  return ref;
}

json run_sequence(const Manifest& m, const lrrt::Device& device, const RunOptions& opt) {
  auto note = [&](const std::string& s) {
    if (opt.note) opt.note(s);
  };
  const Sequence& seq = *m.sequence;
  check_references(m);
  return device_errors(m, [&]() -> json {
    std::optional<PreparedSequence> prepared;
    try {
      check_memory_demand(m, memory_demand(m, device.backend(), opt.verify), device.properties());
      prepared.emplace(m, device, opt.kernel_dir);
    } catch (const bundle::Error& e) {
      if (opt.unrunnable_as_skip && cannot_run_here(e)) throw Unrunnable(e.exit_code(), e.what());
      throw;
    }
    PreparedSequence& P = *prepared;
    const lr_device_properties_t props = device.properties();
    const InitialContents initial = initial_contents(m);
    const std::vector<bool> wanted = buffers_read_back(m);
    const uint32_t warmup = opt.warmup.value_or(m.warmup);
    const uint32_t iterations = opt.iterations.value_or(m.iterations);
    const uint64_t steps = seq.steps.size();
    note(fmt::format("{}: sequence of {} steps ({} dispatches) on {} ({})", m.name, steps, seq.dispatches(), props.name,
                     props.backend));

    const bool need_reference = opt.verify && uses_sequence_reference(m);
    const std::string ref_pointer = [&] {
      for (const auto& v : m.verify)
        if (v.kind == VerifySpec::Kind::Reference) return v.pointer;
      return std::string("/verify");
    }();
    std::optional<SequenceReference> reference;
    if (need_reference) reference = sequence_reference(m, initial.contents, std::nullopt, ref_pointer);

    auto verify = [&](const BufferContents& outputs, const SequenceReference* ref) {
      VerifyInputs checks;
      checks.manifest = &m;
      checks.initial = &initial.contents;
      checks.outputs = &outputs;
      checks.backend = props.backend;
      checks.sequence_reference = ref;
      checks.run_elsewhere = [&](const lrrt::Device& other) {
        note(fmt::format("{}: reference run on {}", m.name, other.backend()));
        PreparedSequence R(m, other, opt.kernel_dir);
        upload_buffers(R.buffers(), initial.contents);
        R.run_eager();
        other.synchronize();
        return R.read_back(initial.contents, std::vector<bool>(m.buffers.size(), true));
      };
      return verify_outputs(checks, opt.verify);
    };
    // One way's verified run: initial contents (outputs poisoned), the steps,
    // the buffers read back.
    auto verified_run = [&](const std::function<void()>& enqueue) {
      upload_buffers(P.buffers(), initial.contents);
      enqueue();
      device.synchronize();
      return P.read_back(initial.contents, wanted);
    };
    auto nothing = [](uint32_t) {};

    // 1. Eager.
    const BufferContents eager_out = verified_run([&] { P.run_eager(); });
    const json eager_verification = verify(eager_out, reference ? &*reference : nullptr);
    upload_buffers(P.buffers(), initial.contents);
    const json eager_timing = time_way(device, warmup, iterations, steps, nothing, [&] { P.run_eager(); }, opt.timing);

    // 2. Replay.
    const lrrt::GraphExec exec = P.instantiate();
    const BufferContents replay_out = verified_run([&] { exec.launch(); });
    const json replay_verification = verify(replay_out, reference ? &*reference : nullptr);
    upload_buffers(P.buffers(), initial.contents);
    const json replay_timing = time_way(device, warmup, iterations, steps, nothing, [&] { exec.launch(); }, opt.timing);

    json ways = json::array();
    ways.push_back({{"way", "eager"}, {"verification", eager_verification}, {"timing", eager_timing}});
    ways.push_back({{"way", "replay"}, {"verification", replay_verification}, {"timing", replay_timing}});
    std::vector<std::pair<std::string, json>> parts = {{"eager", eager_verification}, {"replay", replay_verification}};

    // 3. Patched replay: one verified replay per value, then timing with the
    // values in turn before every replay.
    json patch_json = nullptr;
    if (seq.patch) {
      const SequencePatch& p = *seq.patch;
      json variants = json::array();
      std::vector<std::pair<std::string, json>> variant_parts;
      for (size_t k = 0; k < p.values.size(); ++k) {
        std::optional<SequenceReference> ref;
        if (need_reference) ref = sequence_reference(m, initial.contents, k, ref_pointer);
        exec.synchronize();
        P.patch(exec, k);
        const BufferContents out = verified_run([&] { exec.launch(); });
        const json v = verify(out, ref ? &*ref : nullptr);
        const std::string label = fmt::format("patched[{}]", k);
        variants.push_back({{"value", number_json(p.values[k])}, {"verification", v}});
        variant_parts.emplace_back(label, v);
        parts.emplace_back(label, v);
      }
      upload_buffers(P.buffers(), initial.contents);
      const json timing = time_way(
          device, warmup, iterations, steps, [&](uint32_t i) { P.patch(exec, i % p.values.size()); }, [&] { exec.launch(); }, opt.timing);
      exec.synchronize();
      json values = json::array();
      for (long double v : p.values) values.push_back(number_json(v));
      const SequenceStep& target = *first_instances(seq)[p.written];
      const ArgSpec& arg = target.args[p.arg];
      patch_json = {{"step", target.name},
                    {"arg", !p.field.empty() ? json(p.field) : arg.name.empty() ? json(p.arg) : json(arg.name)},
                    {"offset", P.kernel_step(p.written).kernel->layout().slots[p.arg].offset + p.field_offset},
                    {"values", values}};
      ways.push_back({{"way", "patched"}, {"verification", combine(variant_parts)}, {"variants", variants}, {"timing", timing}});
    }

    json kernels = json::array();
    const auto firsts = first_instances(seq);
    for (size_t w = 0; w < firsts.size(); ++w) {
      if (firsts[w]->kind != SequenceStep::Kind::Kernel) continue;
      const LoadedKernel& k = *P.kernel_step(w).kernel;
      kernels.push_back({{"step", firsts[w]->name},
                         {"kernel", k.kernel_name()},
                         {"code_object", k.code_object().string()},
                         {"code_object_entry", k.code_object_entry()},
                         {"kernargs", {{"bytes", P.kernel_step(w).kernargs.size()}, {"layout_checked", k.layout_checked()}}},
                         {"accesses", P.kernel_step(w).access_sources}});
    }
    const uint64_t copies = static_cast<uint64_t>(
        std::count_if(seq.steps.begin(), seq.steps.end(), [](const SequenceStep& s) { return s.kind == SequenceStep::Kind::Copy; }));
    json ratio = nullptr;
    if (eager_timing.is_object() && replay_timing.is_object() && replay_timing["median_ns"].get<double>() > 0)
      ratio = eager_timing["median_ns"].get<double>() / replay_timing["median_ns"].get<double>();

    // Save the replay's outputs: the sequence's final buffers.
    const json saved = save_outputs(m, replay_out, opt.deferred_saves);
    json run{{"manifest", m.path.string()},
             {"name", m.name},
             {"kind", "sequence"},
             {"kernel", fmt::format("sequence of {} steps", steps)},
             {"backend", props.backend},
             {"device_index", device.index()},
             {"sequence",
              {{"steps", steps},
               {"written_steps", seq.written_steps},
               {"dispatches", seq.dispatches()},
               {"copies", copies},
               {"fills", steps - seq.dispatches() - copies},
               {"kernels", kernels},
               {"patch", patch_json}}},
             {"buffers", buffers_json(m, initial.seeds)},
             {"warmup", warmup},
             {"iterations", iterations},
             {"ways", ways},
             {"eager_over_replay", ratio},
             {"timing", replay_timing},
             {"verification", combine(parts)},
             {"warnings", poison_read_warnings(m)},
             {"saved", saved}};
    if (opt.explain) run["plan"] = plan_json(m, P, exec);
    return run;
  });
}

json plan_sequence(const Manifest& m, const lrrt::Device& device, const fs::path& kernel_dir) {
  if (!m.sequence)
    throw InputError(fmt::format("{}: not a sequence manifest (it runs kernel \"{}\"); `lrrt plan` shows the graph of a "
                                 "manifest with \"sequence\" (docs/manifest.md, \"Sequences\")",
                                 m.path.string(), m.kernel));
  return device_errors(m, [&] {
    PreparedSequence P(m, device, kernel_dir);
    const lrrt::GraphExec exec = P.instantiate();
    json out = plan_json(m, P, exec);
    out["backend"] = device.backend();
    return out;
  });
}

}  // namespace lrrt::tool
