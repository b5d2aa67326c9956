// Sequences (docs/manifest.md, "Sequences"): kernels, steps, repeats and the patch.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "lrrt/bundle/json_input.hpp"
#include "lrrt/bundle/text.hpp"
#include "manifest_parse.hpp"

namespace lrrt::bundle {

using nlohmann::json;
namespace fs = std::filesystem;

namespace manifest_parse {

namespace {

// ---- Sequences (docs/manifest.md, "Sequences") -----------------------------

void parse_kernels(Sequence& seq, const json& v, const std::string& ptr, const fs::path& base_dir) {
  if (!v.is_object() || v.empty())
    throw ManifestError(ptr, "expected an object {\"alias\": {\"code_object\": ..., \"kernel\": ...}, ...}, got " + describe(v));
  for (auto it = v.begin(); it != v.end(); ++it) {
    SequenceKernel k;
    k.alias = it.key();
    k.pointer = ptr + "/" + pointer_token(it.key());
    if (k.alias.empty()) throw ManifestError(k.pointer, "a kernel alias must not be empty");
    Obj o(it.value(), k.pointer, {"code_object", "kernel", "description", "waits_for_producer"});
    o.finish();
    parse_code_object(k.code_object, o.req("code_object", "path of the compiled kernel, or one per backend"), o.ptr("code_object"));
    k.kernel = o.has("kernel") ? get_string(*o.opt("kernel"), o.ptr("kernel")) : k.alias;
    if (auto* w = o.opt("waits_for_producer")) k.waits_for_producer = get_bool(*w, o.ptr("waits_for_producer"));
    // A Triton cache entry (its folder or <name>.json): its binary, its
    // kernel, launch_pdl; the steps give its parameters (parse_triton_call).
    if (json entry = triton_entry_for(k.code_object, base_dir, o.ptr("code_object")); !entry.is_null()) {
      const std::string name = entry["name"].get<std::string>();
      if (o.has("kernel") && k.kernel != name)
        throw ManifestError(o.ptr("kernel"), fmt::format("the Triton entry's kernel is \"{}\", not \"{}\"", name, k.kernel));
      k.kernel = name;
      k.code_object.clear();
      k.code_object[entry["backend"].get<std::string>()] = entry["binary"].get<std::string>();
      if (entry.value("launch_pdl", false)) k.waits_for_producer = true;  // Triton's own word
      k.triton = std::move(entry);
    }
    if (auto* d = o.opt("description")) (void)get_string(*d, o.ptr("description"), true);
    seq.kernels.push_back(std::move(k));
  }
}

// Expands the written steps into Sequence::steps. Written steps are numbered
// in document order; `after` and `patch` name written steps.
class SequenceParser {
 public:
  SequenceParser(Manifest& m, Sequence& seq) : m_(m), seq_(seq) {}

  void parse(const json& v, const std::string& ptr) {
    if (!v.is_array() || v.empty()) throw ManifestError(ptr, "expected a non-empty array of steps, got " + describe(v));
    collect(v, ptr);
    seq_.written_steps = written_.size();
    last_instance_.assign(written_.size(), SIZE_MAX);
    size_t next = 0;
    expand(v, next, "", 0);
  }

  // The written step called `name` (unique), for "patch".
  size_t written_index(const json& v, const std::string& ptr) const {
    const std::string name = get_string(v, ptr);
    auto it = by_name_.find(name);
    if (it == by_name_.end())
      throw ManifestError(ptr, fmt::format("no step named \"{}\" (named steps: {})", printable(name, 60), names()));
    return it->second;
  }
  const SequenceStep& written(size_t w) const { return written_[w]; }
  // A written kernel step's arguments as a plain "args" array (a Triton
  // step's desugared: its parameters in order, without the scratch pointers).
  const json& written_args(size_t w) const { return written_args_[w]; }

 private:
  std::string names() const {
    std::string out;
    for (const auto& [n, _] : by_name_) out += (out.empty() ? "" : ", ") + n;
    return out.empty() ? "none" : out;
  }

  // First pass: parse every written step once (names must be known before
  // `after` is resolved), check repeat counts and the expanded size.
  uint64_t collect(const json& v, const std::string& ptr) {
    uint64_t total = 0;
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string sp = fmt::format("{}/{}", ptr, i);
      const json& e = v[i];
      if (e.is_object() && e.contains("repeat")) {
        Obj o(e, sp, {"repeat", "steps", "description"});
        o.finish();
        const uint64_t n = get_uint(o.req("repeat"), o.ptr("repeat"), 1, kMaxSequenceSteps);
        const json& body = o.req("steps", "the steps to repeat");
        if (!body.is_array() || body.empty())
          throw ManifestError(o.ptr("steps"), "expected a non-empty array of steps, got " + describe(body));
        const uint64_t inner = collect(body, o.ptr("steps"));
        if (inner > kMaxSequenceSteps / n)
          throw ManifestError(o.ptr("repeat"), fmt::format("{} repetitions of {} step(s) exceed the limit of {} steps", n, inner, kMaxSequenceSteps));
        total += n * inner;
      } else {
        json args;
        written_.push_back(parse_step(e, sp, args));
        written_args_.push_back(std::move(args));
        total += 1;
      }
      if (total > kMaxSequenceSteps)
        throw ManifestError(sp, fmt::format("the sequence has more than {} steps", kMaxSequenceSteps));
    }
    return total;
  }

  SequenceStep parse_step(const json& e, const std::string& sp, json& args) {
    if (!e.is_object()) throw ManifestError(sp, "expected a step object (a kernel, copy, fill or {\"repeat\": N, \"steps\": [...]}), got " + describe(e));
    SequenceStep s;
    s.pointer = sp;
    s.written = written_.size();
    const bool is_copy = e.contains("copy"), is_fill = e.contains("fill"), is_kernel = e.contains("kernel");
    if (int(is_copy) + int(is_fill) + int(is_kernel) != 1)
      throw ManifestError(sp, "a step needs exactly one of \"kernel\", \"copy\" or \"fill\" (or is {\"repeat\": N, \"steps\": [...]})");
    std::vector<std::string> known = {"name", "after", "description"};
    if (is_kernel) known.insert(known.end(), {"kernel", "args", "launch"});
    else known.push_back(is_copy ? "copy" : "fill");
    Obj o(e, sp, known);
    o.finish();
    if (auto* d = o.opt("description")) (void)get_string(*d, o.ptr("description"), true);
    if (auto* n = o.opt("name")) {
      s.name = get_string(*n, o.ptr("name"));
      if (by_name_.count(s.name))
        throw ManifestError(o.ptr("name"), fmt::format("duplicate step name \"{}\" (first at {})", printable(s.name, 60),
                                                       written_[by_name_[s.name]].pointer));
    }
    if (is_kernel) {
      s.kind = SequenceStep::Kind::Kernel;
      const std::string alias = get_string(o.req("kernel"), o.ptr("kernel"));
      auto k = std::find_if(seq_.kernels.begin(), seq_.kernels.end(), [&](const SequenceKernel& x) { return x.alias == alias; });
      if (k == seq_.kernels.end()) {
        std::string known_k;
        for (const auto& x : seq_.kernels) known_k += (known_k.empty() ? "" : ", ") + x.alias;
        throw ManifestError(o.ptr("kernel"), fmt::format("no kernel \"{}\" in /kernels (it has: {})", printable(alias, 60), known_k));
      }
      s.kernel = static_cast<size_t>(k - seq_.kernels.begin());
      if (s.name.empty()) s.name = alias;
      if (k->triton.is_object()) {
        // A Triton entry's step: its parameters by name (or in order) and
        // Triton's grid, as a single-launch manifest on the entry gives them.
        TritonCall c;
        c.args = &o.req("args", fmt::format("Triton kernel {}'s arguments by parameter name", k->kernel));
        c.args_ptr = o.ptr("args");
        c.launch = &o.req("launch", "Triton's grid: {\"grid\": [programs]}");
        c.launch_ptr = o.ptr("launch");
        c.step = &s.name;
        c.scratch_prefix = fmt::format("triton_{}_{}_", s.written, s.name);
        parse_triton_call(m_, k->triton, c, s.args, s.launch, &args);
      } else {
        args = o.req("args", "the kernel's arguments in order; [] for none");
        if (args.is_object())
          throw ManifestError(o.ptr("args"), fmt::format("step \"{}\": {} (kernel \"{}\")", s.name,
                                                         not_a_triton_entry(k->code_object, m_.base_dir), k->alias));
        parse_args(m_, args, o.ptr("args"), s.args, &s.name);
        parse_launch(m_, o.req("launch"), o.ptr("launch"), s.launch);
      }
    } else if (is_copy) {
      s.kind = SequenceStep::Kind::Copy;
      if (s.name.empty()) s.name = "copy";
      const std::string cp = o.ptr("copy");
      Obj c(*o.opt("copy"), cp, {"from", "to", "bytes", "from_offset", "to_offset"});
      c.finish();
      s.from = find_buffer_index(m_, c.req("from"), c.ptr("from"));
      s.to = find_buffer_index(m_, c.req("to"), c.ptr("to"));
      const auto& from = m_.buffers[s.from];
      const auto& to = m_.buffers[s.to];
      if (auto* x = c.opt("from_offset")) s.from_offset = get_uint(*x, c.ptr("from_offset"));
      if (auto* x = c.opt("to_offset")) s.to_offset = get_uint(*x, c.ptr("to_offset"));
      if (s.from_offset >= from.bytes) throw ManifestError(c.ptr("from_offset"), fmt::format("is past the end of buffer \"{}\" ({} bytes)", from.name, from.bytes));
      if (s.to_offset >= to.bytes) throw ManifestError(c.ptr("to_offset"), fmt::format("is past the end of buffer \"{}\" ({} bytes)", to.name, to.bytes));
      s.bytes = c.has("bytes") ? get_uint(*c.opt("bytes"), c.ptr("bytes"), 1) : from.bytes - s.from_offset;
      const std::string bp = c.has("bytes") ? c.ptr("bytes") : cp;
      if (s.bytes > from.bytes - s.from_offset)
        throw ManifestError(bp, fmt::format("{} bytes from offset {} reach past the end of buffer \"{}\" ({} bytes)", s.bytes, s.from_offset, from.name, from.bytes));
      if (s.bytes > to.bytes - s.to_offset)
        throw ManifestError(bp, fmt::format("{} bytes at offset {} do not fit buffer \"{}\" ({} bytes)", s.bytes, s.to_offset, to.name, to.bytes));
      if (s.from == s.to && s.from_offset < s.to_offset + s.bytes && s.to_offset < s.from_offset + s.bytes)
        throw ManifestError(cp, "the source and destination ranges overlap");
    } else {
      s.kind = SequenceStep::Kind::Fill;
      if (s.name.empty()) s.name = "fill";
      const std::string fp = o.ptr("fill");
      Obj f(*o.opt("fill"), fp, {"buffer", "value", "range"});
      f.finish();
      s.from = s.to = find_buffer_index(m_, f.req("buffer"), f.ptr("buffer"));
      const auto& b = m_.buffers[s.to];
      const long double value = get_number(f.req("value", "the element value to fill with"), f.ptr("value"));
      check_value_fits(b.type, value, f.ptr("value"));
      ScalarBytes bytes{};
      store_element(b.type, bytes.data(), 0, value);
      const size_t esize = dtype_size(b.type);
      if (esize >= 8) {
        // The runtime fills with 1-, 2- or 4-byte patterns (cuMemsetD8/16/32).
        bool repeats = true;
        for (size_t q = 4; q < esize; q += 4) repeats = repeats && std::memcmp(bytes.data(), bytes.data() + q, 4) == 0;
        if (!repeats)
          throw ManifestError(f.ptr("value"), fmt::format("{} is not a repeated 4-byte pattern; fills of {} buffers take such values only (e.g. 0)",
                                                          static_cast<double>(value), dtype_name(b.type)));
        s.pattern_size = 4;
      } else {
        s.pattern_size = static_cast<uint32_t>(esize);
      }
      std::memcpy(s.pattern.data(), bytes.data(), s.pattern_size);
      s.to_offset = 0;
      s.bytes = b.bytes;
      if (auto* r = f.opt("range")) parse_range(b, *r, f.ptr("range"), s.to_offset, s.bytes);
    }
    if (o.has("name")) by_name_[s.name] = s.written;
    // `after` is resolved against the names known so far: an edge may only
    // point back in the sequence, so explicit edges can never form a cycle.
    if (auto* a = o.opt("after")) {
      const std::string ap = o.ptr("after");
      if (!a->is_array()) throw ManifestError(ap, "expected an array of names of earlier steps, got " + describe(*a));
      for (size_t k = 0; k < a->size(); ++k) {
        const std::string kp = fmt::format("{}/{}", ap, k);
        const std::string target = get_string((*a)[k], kp);
        if (o.has("name") && target == s.name)
          throw ManifestError(kp, fmt::format("step \"{}\" cannot come after itself (a cycle)", printable(target, 60)));
        auto it = by_name_.find(target);
        if (it == by_name_.end()) {
          if (later_name(target))
            throw ManifestError(kp, fmt::format("step \"{}\" comes later in the sequence: \"after\" names earlier steps "
                                                "only (an edge to a later step would form a cycle with program order)",
                                                printable(target, 60)));
          throw ManifestError(kp, fmt::format("no earlier step named \"{}\" (named steps before this one: {})", printable(target, 60), names()));
        }
        pending_after_[s.written].push_back(it->second);
      }
    }
    return s;
  }

  // Whether a step later in the document carries this name (for the message).
  bool later_name(const std::string& name) const { return later_names_.count(name) != 0; }

 public:
  // Every "name" in the document, so that a forward `after` is reported as
  // such rather than as unknown.
  void note_names(const json& v) {
    if (!v.is_array()) return;
    for (const auto& e : v) {
      if (!e.is_object()) continue;
      if (e.contains("repeat") && e.contains("steps")) note_names(e["steps"]);
      else if (e.contains("name") && e["name"].is_string()) later_names_.insert(e["name"].get<std::string>());
    }
  }

 private:
  // Second pass: repetitions in program order, `after` bound to the latest
  // expanded instance of the named step. A repeated step's label carries its
  // repetition per enclosing repeat: "saxpy[41]", "stage[2][0]".
  void expand(const json& v, size_t& next, const std::string& suffix, uint64_t repetition) {
    for (const json& e : v) {
      if (e.is_object() && e.contains("repeat")) {
        const uint64_t n = get_uint(e["repeat"], "", 1);
        const size_t first = next;
        for (uint64_t r = 0; r < n; ++r) {
          next = first;
          expand(e["steps"], next, fmt::format("{}[{}]", suffix, r), r);
        }
      } else {
        SequenceStep s = written_[next++];
        for (size_t w : pending_after_[s.written]) s.after.push_back(last_instance_[w]);
        last_instance_[s.written] = seq_.steps.size();
        s.label = s.name + suffix;
        s.repetition = repetition;
        seq_.steps.push_back(std::move(s));
      }
    }
  }

  Manifest& m_;
  Sequence& seq_;
  std::vector<SequenceStep> written_;
  std::vector<json> written_args_;
  std::map<std::string, size_t> by_name_;
  std::set<std::string> later_names_;
  std::map<size_t, std::vector<size_t>> pending_after_;
  std::vector<size_t> last_instance_;
};

void parse_patch(const Manifest& m, Sequence& seq, const SequenceParser& P, const json& v, const std::string& ptr) {
  Obj o(v, ptr, {"step", "arg", "values"});
  o.finish();
  SequencePatch p;
  p.pointer = ptr;
  p.written = P.written_index(o.req("step", "the name of the kernel step whose argument changes"), o.ptr("step"));
  const SequenceStep& s = P.written(p.written);
  if (s.kind != SequenceStep::Kind::Kernel)
    throw ManifestError(o.ptr("step"), fmt::format("step \"{}\" is not a kernel step; only kernel arguments can be patched", s.name));
  const json& a = o.req("arg", "the argument's name or index, or a struct's scalar field by dotted name (\"p.bias\")");
  const std::string ap = o.ptr("arg");
  const ArgScalarField* field = nullptr;
  if (a.is_string()) {
    const std::string name = a.get<std::string>();
    // "p.bias": argument "p", its scalar field "bias" (nested: "p.inner.k").
    const std::string root = name.substr(0, name.find('.'));
    auto it = std::find_if(s.args.begin(), s.args.end(), [&](const ArgSpec& x) { return x.name == root; });
    if (it == s.args.end())
      throw ManifestError(ap, fmt::format("step \"{}\" has no argument named \"{}\"", s.name, printable(root, 60)));
    p.arg = static_cast<size_t>(it - s.args.begin());
    if (root != name) {
      for (const auto& f : it->scalar_fields)
        if (f.path == name) field = &f;
      if (!field)
        throw ManifestError(ap, fmt::format("argument \"{}\" of step \"{}\" has no named scalar field \"{}\"", root, s.name,
                                            printable(name, 80)));
    }
  } else {
    p.arg = static_cast<size_t>(get_uint(a, ap));
    if (p.arg >= s.args.size())
      throw ManifestError(ap, fmt::format("step \"{}\" has {} argument(s)", s.name, s.args.size()));
  }
  const json& written_args = P.written_args(p.written);
  const json& triton = seq.kernels[s.kernel].triton;
  if (p.arg >= written_args.size() ||
      (triton.is_object() && triton["params"].size() > p.arg && triton["params"][p.arg].contains("part_of")))
    throw ManifestError(ap, fmt::format("argument {} (\"{}\") of step \"{}\" is lrrt's to pass (a Triton scratch pointer or a "
                                        "tensor descriptor's shape or stride); only the kernel's parameters can be patched",
                                        p.arg, s.args[p.arg].name, s.name));
  const ArgSpec& arg = s.args[p.arg];
  if (arg.kind != ArgSpec::Kind::Scalar && !field)
    throw ManifestError(ap, fmt::format("argument {} of step \"{}\" is a {}; only scalars can be patched (and a struct's "
                                        "named scalar fields, \"arg\": \"p.name\")",
                                        p.arg, s.name, arg.kind == ArgSpec::Kind::Buffer ? "buffer" : "struct or bytes"));
  p.type = field ? field->type : arg.type;
  if (field) {
    p.field = field->path;
    p.field_offset = field->offset;
  }
  if (dtype_is_complex(p.type))
    throw ManifestError(ap, fmt::format("a {} argument cannot be patched (patch values are real numbers)", dtype_name(p.type)));
  const json& vals = o.req("values", "the values the argument takes, one per patched replay");
  const std::string vp = o.ptr("values");
  if (!vals.is_array() || vals.empty() || vals.size() > 1000)
    throw ManifestError(vp, "expected an array of 1 to 1000 values, got " + describe(vals));
  // The buffers a patched value must not index past, with the field that
  // says so: the argument's "bounds" (parse_args checked them); the buffer its
  // value is the "count_of" (the argument *is* that buffer's size); and, for a
  // count_of argument, every buffer the step's launch "covers" (one element
  // per work-item up to that size).
  struct PatchLimit {
    size_t buffer;
    std::string because;
  };
  std::vector<PatchLimit> limits;
  const json& arg_json = written_args.at(p.arg);
  if (auto b = arg_json.find("bounds"); !field && b != arg_json.end())
    for (size_t k = 0; k < b->size(); ++k)
      limits.push_back({find_buffer_index(m, (*b)[k], fmt::format("{}/bounds/{}", arg.pointer, k)),
                        fmt::format("its \"bounds\" ({}/bounds) say the kernel indexes the buffer with [0, value)", arg.pointer)});
  if (auto v = arg_json.find("value"); !field && v != arg_json.end() && v->is_object() && v->contains("count_of")) {
    limits.push_back({find_buffer_index(m, v->at("count_of"), arg.pointer + "/value/count_of"),
                      fmt::format("its value is the buffer's size ({}/value/count_of)", arg.pointer)});
    for (const Coverage& c : s.launch.covers)
      limits.push_back({c.buffer, fmt::format("its value is a size (count_of) and the launch covers the buffer ({})", c.pointer)});
  }
  for (size_t k = 0; k < vals.size(); ++k) {
    const std::string kp = fmt::format("{}/{}", vp, k);
    const long double x = get_number(vals[k], kp);
    check_value_fits(p.type, x, kp);
    // "bounds" holds for every value the argument takes: a patched size
    // larger than a buffer would make the replay index past its end.
    for (const PatchLimit& lim : limits) {
      const BufferSpec& buf = m.buffers[lim.buffer];
      if (x > static_cast<long double>(buf.count))
        throw ManifestError(kp, fmt::format("buffer \"{}\" is too small: the patched argument {} of step \"{}\" takes {}, but "
                                            "{} and the buffer has {} elements",
                                            buf.name, arg.name.empty() ? std::to_string(p.arg) : arg.name, s.name,
                                            x >= 0 ? fmt::to_string(static_cast<uint64_t>(x)) : fmt::to_string(static_cast<int64_t>(x)),
                                            lim.because, buf.count));
    }
    ScalarBytes bytes{};
    store_element(p.type, bytes.data(), 0, x);
    p.values.push_back(x);
    p.encoded.push_back(bytes);
  }
  seq.patch = std::move(p);
}

}  // namespace

void parse_sequence(Manifest& m, const Obj& o) {
  for (const char* single : {"code_object", "kernel", "args", "launch"})
    if (o.has(single))
      throw ManifestError(o.ptr(single), fmt::format("a sequence manifest names its kernels in /kernels and gives \"{}\" per step", single));
  Sequence seq;
  parse_kernels(seq, o.req("kernels", "the kernels the steps dispatch: {\"alias\": {\"code_object\": ..., \"kernel\": ...}}"), "/kernels", m.base_dir);
  SequenceParser P(m, seq);
  P.note_names(*o.opt("sequence"));
  P.parse(*o.opt("sequence"), "/sequence");
  if (auto* p = o.opt("patch")) parse_patch(m, seq, P, *p, "/patch");
  m.sequence = std::move(seq);
}

// With a patch, every check follows the patched value: only the sequence's
// built-in reference can.
void check_patch_verifiable(const Manifest& m) {
  if (!m.sequence || !m.sequence->patch) return;
  for (const auto& v : m.verify)
    if (!(v.kind == VerifySpec::Kind::Reference && v.reference == "sequence"))
      throw ManifestError("/patch", fmt::format("the patched replays are verified against {{\"reference\": \"sequence\"}}, which follows the "
                                                "patched value; check {} ({}) cannot", v.pointer, v.method()));
}

}  // namespace manifest_parse

uint64_t Sequence::dispatches() const {
  return static_cast<uint64_t>(std::count_if(steps.begin(), steps.end(), [](const SequenceStep& s) { return s.kind == SequenceStep::Kind::Kernel; }));
}

Manifest kernel_step_manifest(const Manifest& m, const SequenceStep& step) {
  Manifest k;
  k.path = m.path;
  k.base_dir = m.base_dir;
  k.name = m.name + ": " + step.label;
  k.buffers = m.buffers;
  const SequenceKernel& sk = m.sequence->kernels.at(step.kernel);
  k.code_object = sk.code_object;
  k.kernel = sk.kernel;
  k.args = step.args;
  k.launch = step.launch;
  k.waits_for_producer = sk.waits_for_producer;
  k.triton = sk.triton;
  return k;
}

}  // namespace lrrt::bundle
