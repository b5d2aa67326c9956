#include "lrrt/bundle/sweep.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

#include "lrrt/bundle/json_input.hpp"
#include "lrrt/bundle/text.hpp"
#include "manifest_parse.hpp"

namespace lrrt::bundle {

using nlohmann::json;
namespace fs = std::filesystem;
// A JSON value in a message (manifest_fields.cpp), as the manifest parser words it.
using manifest_parse::describe;

namespace {

// Most values one axis may list (a range on the command line included).
constexpr uint64_t kMaxAxisValues = 100000;

bool sweep_axis_name_ok(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  if (!(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// One value of an axis as a manifest or the command line writes it: a
// number, a size ("64K") or text ("f32").
json sweep_value(const json& v, const std::string& ptr) {
  if (v.is_number()) {
    if (v.is_number_float() && !std::isfinite(v.get<double>())) throw ManifestError(ptr, "must be a finite number");
    return v;
  }
  if (!v.is_string())
    throw ManifestError(ptr, "an axis value is a number, a size (\"64K\") or a string (\"f32\"), got " + describe(v));
  const std::string& s = v.get_ref<const std::string&>();
  if (s.empty()) throw ManifestError(ptr, "must not be empty");
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) throw ManifestError(ptr, "holds a control character: " + printable(s, 60));
  uint64_t size = 0;
  try {
    if (parse_size_text(s, size)) return size;
  } catch (const InputError& e) {
    throw ManifestError(ptr, e.what());
  }
  return v;
}

json sweep_pow2(int64_t e, const std::string& ptr) {
  if (e < 0 || e > 63) throw ManifestError(ptr, fmt::format("a power-of-two exponent is from 0 to 63, got {}", e));
  return uint64_t(1) << e;
}

int64_t sweep_exponent(const json& v, const std::string& ptr) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_unsigned()) return v.get<uint64_t>() > 63 ? 64 : static_cast<int64_t>(v.get<uint64_t>());
  throw ManifestError(ptr, "a power-of-two exponent is a whole number from 0 to 63, got " + describe(v));
}

// A list of values or {"pow2": [lo, hi]}.
SweepAxisValues parse_axis_values(const json& v, const std::string& ptr) {
  SweepAxisValues a;
  if (v.is_array()) {
    if (v.empty()) throw ManifestError(ptr, "an axis needs at least one value");
    if (v.size() > kMaxAxisValues) throw ManifestError(ptr, fmt::format("more than {} values", kMaxAxisValues));
    for (size_t i = 0; i < v.size(); ++i) a.values.push_back(sweep_value(v[i], ptr + "/" + std::to_string(i)));
    return a;
  }
  if (v.is_object() && v.size() == 1 && v.contains("pow2")) {
    const json& r = v["pow2"];
    const std::string rp = ptr + "/pow2";
    if (!r.is_array() || r.size() != 2) throw ManifestError(rp, "expected [lo, hi]: the exponents of 2^lo .. 2^hi, got " + describe(r));
    const int64_t lo = sweep_exponent(r[0], rp + "/0"), hi = sweep_exponent(r[1], rp + "/1");
    (void)sweep_pow2(lo, rp + "/0");
    (void)sweep_pow2(hi, rp + "/1");
    if (lo > hi) throw ManifestError(rp, fmt::format("an axis needs at least one value: lo {} is above hi {}", lo, hi));
    for (int64_t e = lo; e <= hi; ++e) a.values.push_back(sweep_pow2(e, rp));
    a.pow2 = true;
    return a;
  }
  throw ManifestError(ptr, "an axis is a list of values or {\"pow2\": [lo, hi]}, got " + describe(v));
}

bool is_sweep_backend(const std::string& key) {
  return std::any_of(std::begin(kSweepBackends), std::end(kSweepBackends), [&](const char* b) { return key == b; });
}

SweepAxis parse_sweep_axis(const std::string& name, const json& v, const std::string& ptr) {
  SweepAxis a;
  a.name = name;
  a.pointer = ptr;
  if (!sweep_axis_name_ok(name))
    throw ManifestError(ptr, fmt::format("axis name \"{}\" is not a name (letters, digits, _; not starting with a digit; at "
                                         "most 64): --axis NAME=... must be able to name it",
                                         printable(name, 64)));
  // {"values": [...] or "pow2": [lo, hi], "host": AXIS, "cuda": AXIS, ...}:
  // the default values and a backend's own.
  if (v.is_object() && !(v.size() == 1 && v.contains("pow2"))) {
    bool has_default = false;
    for (auto it = v.begin(); it != v.end(); ++it) {
      const std::string kp = ptr + "/" + pointer_token(it.key());
      if (it.key() == "values" || it.key() == "pow2") {
        if (has_default)
          throw ManifestError(kp, "an axis has \"values\" or \"pow2\", not both");
        has_default = true;
        const SweepAxisValues d = it.key() == "pow2" ? parse_axis_values(json{{"pow2", it.value()}}, ptr)
                                                     : it.value().is_array()
                                                           ? parse_axis_values(it.value(), kp)
                                                           : throw ManifestError(kp, "expected a list of values, got " +
                                                                                         describe(it.value()));
        a.values = d.values;
        a.pow2 = d.pow2;
      } else if (is_sweep_backend(it.key())) {
        a.per_backend.emplace_back(it.key(), parse_axis_values(it.value(), kp));
      } else {
        throw ManifestError(kp, fmt::format("unknown field \"{}\": an axis object has \"values\" or \"pow2\" (the "
                                            "default), and host, hsa or cuda (that backend's values)",
                                            printable(it.key(), 64)));
      }
    }
    if (!has_default)
      throw ManifestError(ptr, "an axis object needs its default values: \"values\": [...] or \"pow2\": [lo, hi]");
    return a;
  }
  const SweepAxisValues d = parse_axis_values(v, ptr);
  a.values = d.values;
  a.pow2 = d.pow2;
  return a;
}

const SweepAxisValues* backend_values(const SweepAxis& a, const std::string& backend) {
  for (const auto& [b, v] : a.per_backend)
    if (b == backend) return &v;
  return nullptr;
}

size_t value_count(const SweepAxis& a, const std::string& backend) {
  const SweepAxisValues* v = backend_values(a, backend);
  return v ? v->values.size() : a.values.size();
}

// The states of the sweep with `backend`'s values: the product of the groups'
// lengths, bounded by max_states (ManifestError naming /axes).
uint64_t count_states(const Sweep& s, const std::string& backend, uint64_t max_states) {
  uint64_t count = 1;
  std::string factors;
  bool over = false;
  for (const auto& g : s.groups) {
    const uint64_t n = value_count(s.axes[g[0]], backend);
    factors += (factors.empty() ? "" : " x ") + std::to_string(n);
    if (count > UINT64_MAX / n) over = true;
    else count *= n;
  }
  if (over || count > max_states)
    throw ManifestError("/axes", fmt::format("the sweep has {} states ({}){}, more than the {} allowed: narrow an axis "
                                             "with --axis NAME=[...] or raise --max-states (at most {})",
                                             over ? std::string("over 2^64") : std::to_string(count), factors,
                                             backend.empty() ? "" : " on " + backend, max_states, kMaxStatesLimit));
  return count;
}

// Calls f(node, pointer) for every {"axis": ...} node of the document.
template <class F>
void for_each_axis_node(const json& j, const std::string& ptr, F&& f) {
  if (j.is_object()) {
    if (j.size() == 1 && j.contains("axis") && !j["axis"].is_number()) {
      f(j, ptr);
      return;
    }
    for (auto it = j.begin(); it != j.end(); ++it) for_each_axis_node(it.value(), ptr + "/" + pointer_token(it.key()), f);
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) for_each_axis_node(j[i], ptr + "/" + std::to_string(i), f);
  }
}

void substitute_axes(json& j, const std::map<std::string, const json*>& values) {
  if (j.is_object()) {
    if (j.size() == 1 && j.contains("axis") && j["axis"].is_string()) {
      auto it = values.find(j["axis"].get<std::string>());
      if (it != values.end()) j = *it->second;
      return;
    }
    for (auto it = j.begin(); it != j.end(); ++it) substitute_axes(it.value(), values);
  } else if (j.is_array()) {
    for (auto& e : j) substitute_axes(e, values);
  }
}

std::string axis_list(const std::vector<SweepAxis>& axes) {
  std::string out;
  for (const auto& a : axes) out += (out.empty() ? "" : ", ") + a.name;
  return out;
}

std::string value_label(const SweepAxis& a, const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (a.pow2 && v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u && !(u & (u - 1))) return fmt::format("2^{}", std::countr_zero(u));
  }
  return v.dump();
}

// Whether the text is a whole number, signed or with a size suffix ("-12",
// "4K"): such a value is kept exact or refused, never read as a double.
bool looks_whole(const std::string& item) {
  size_t i = item[0] == '-' || item[0] == '+' ? 1 : 0;
  const size_t digits = i;
  while (i < item.size() && std::isdigit(static_cast<unsigned char>(item[i]))) ++i;
  if (i == digits) return false;
  const std::string suffix = item.substr(i);
  return suffix.empty() || suffix == "K" || suffix == "k" || suffix == "M" || suffix == "m" || suffix == "G" ||
         suffix == "g";
}

// Text of one --axis item as a value: a size, a number, or text. `name` is
// the axis, for messages.
json override_item(const std::string& item, const std::string& text, const std::string& name) {
  if (item.empty()) throw InputError(fmt::format("--axis {}: an empty value", printable(text, 80)));
  uint64_t size = 0;
  try {
    if (parse_size_text(item, size)) return size;
  } catch (const InputError& e) {
    throw InputError(fmt::format("--axis {}: axis \"{}\": {}", printable(text, 80), name, e.what()));
  }
  errno = 0;
  char* end = nullptr;
  const long long i = std::strtoll(item.c_str(), &end, 10);
  if (*end == '\0' && errno == 0) return static_cast<int64_t>(i);
  if (looks_whole(item))
    throw InputError(fmt::format("--axis {}: axis \"{}\": \"{}\" does not fit in 64 bits (whole numbers from {} to {})",
                                 printable(text, 80), name, printable(item, 40), INT64_MIN, UINT64_MAX));
  errno = 0;
  const double d = std::strtod(item.c_str(), &end);
  if (*end == '\0' && errno == 0 && std::isfinite(d)) return d;
  for (unsigned char c : item)
    if (c < 0x20 || c == 0x7f) throw InputError(fmt::format("--axis {}: a control character", printable(text, 80)));
  return item;
}

std::string trim_copy(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t b = 0;
  while (b < s.size() && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  return s.substr(b);
}

}  // namespace

bool parse_size_text(const std::string& text, uint64_t& out) {
  size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  if (i == 0 || i > 20) return false;
  const std::string suffix = text.substr(i);
  unsigned shift = 0;
  if (suffix.empty()) shift = 0;
  else if (suffix == "K" || suffix == "k") shift = 10;
  else if (suffix == "M" || suffix == "m") shift = 20;
  else if (suffix == "G" || suffix == "g") shift = 30;
  else return false;
  errno = 0;
  const unsigned long long n = std::strtoull(text.substr(0, i).c_str(), nullptr, 10);
  if (errno == ERANGE || (shift && n > (UINT64_MAX >> shift)))
    throw InputError(fmt::format("\"{}\" does not fit in 64 bits", printable(text, 40)));
  out = static_cast<uint64_t>(n) << shift;
  return true;
}

bool is_sweep(const json& doc) { return doc.is_object() && doc.contains("axes"); }

AxisOverride parse_axis_override(const std::string& text) {
  AxisOverride o;
  o.text = text;
  const size_t eq = text.find('=');
  if (eq == std::string::npos)
    throw InputError(fmt::format("--axis {}: expected NAME=VALUES, e.g. n=[1K,1M] or n[pow2]=[10:20]", printable(text, 80)));
  std::string name = trim_copy(text.substr(0, eq));
  const std::string tag = "[pow2]";
  if (name.size() > tag.size() && name.compare(name.size() - tag.size(), tag.size(), tag) == 0) {
    o.pow2 = true;
    name = name.substr(0, name.size() - tag.size());
  }
  if (!sweep_axis_name_ok(name))
    throw InputError(fmt::format("--axis {}: \"{}\" is not an axis name (a flag other than [pow2]?)", printable(text, 80),
                                 printable(name, 64)));
  o.name = name;
  std::string rest = trim_copy(text.substr(eq + 1));
  std::vector<std::string> items;
  std::vector<json> range_values;  // a [lo:hi:step] range's, exact
  if (!rest.empty() && rest.front() == '[') {
    if (rest.back() != ']') throw InputError(fmt::format("--axis {}: a list ends with ]", printable(text, 80)));
    rest = rest.substr(1, rest.size() - 2);
    if (rest.find(':') != std::string::npos) {
      // [lo:hi] or [lo:hi:step], inclusive, whole numbers.
      std::vector<std::string> parts;
      size_t start = 0;
      for (size_t p; (p = rest.find(':', start)) != std::string::npos; start = p + 1) parts.push_back(trim_copy(rest.substr(start, p - start)));
      parts.push_back(trim_copy(rest.substr(start)));
      // In 128 bits: every 64-bit value, signed or not, stays exact.
      std::vector<__int128> n;
      for (const auto& p : parts) {
        const json v = override_item(p, text, name);
        if (v.is_number_unsigned()) n.push_back(static_cast<__int128>(v.get<uint64_t>()));
        else if (v.is_number_integer()) n.push_back(static_cast<__int128>(v.get<int64_t>()));
        else throw InputError(fmt::format("--axis {}: a range [lo:hi:step] takes whole numbers", printable(text, 80)));
      }
      if (n.size() > 3 || n.size() < 2 || (n.size() == 3 && n[2] <= 0) || n[0] > n[1])
        throw InputError(fmt::format("--axis {}: a range is [lo:hi] or [lo:hi:step] with lo <= hi and step > 0", printable(text, 80)));
      const __int128 step = n.size() == 3 ? n[2] : 1;
      if ((n[1] - n[0]) / step >= static_cast<__int128>(kMaxAxisValues))
        throw InputError(fmt::format("--axis {}: more than {} values", printable(text, 80), kMaxAxisValues));
      for (__int128 v = n[0];; v += step) {
        range_values.push_back(v < 0 ? json(static_cast<int64_t>(v)) : json(static_cast<uint64_t>(v)));
        if (n[1] - v < step) break;
      }
    } else {
      size_t start = 0;
      for (size_t p; (p = rest.find(',', start)) != std::string::npos; start = p + 1) items.push_back(trim_copy(rest.substr(start, p - start)));
      items.push_back(trim_copy(rest.substr(start)));
      if (items.size() == 1 && items[0].empty()) items.clear();
    }
  } else {
    items.push_back(rest);
  }
  if (items.empty() && range_values.empty())
    throw InputError(fmt::format("--axis {}: an axis needs at least one value", printable(text, 80)));
  if (items.size() > kMaxAxisValues) throw InputError(fmt::format("--axis {}: more than {} values", printable(text, 80), kMaxAxisValues));
  std::vector<json> values = std::move(range_values);
  for (const auto& item : items) values.push_back(override_item(item, text, name));
  for (size_t i = 0; i < values.size(); ++i) {
    json v = std::move(values[i]);
    const std::string item = v.is_string() ? v.get<std::string>() : v.dump();
    if (o.pow2) {
      if (!v.is_number_integer() && !v.is_number_unsigned())
        throw InputError(fmt::format("--axis {}: [pow2] takes exponents (whole numbers from 0 to 63), got \"{}\"",
                                     printable(text, 80), printable(item, 40)));
      const int64_t e = v.is_number_unsigned() && v.get<uint64_t>() > 63 ? 64 : v.get<int64_t>();
      if (e < 0 || e > 63)
        throw InputError(fmt::format("--axis {}: a power-of-two exponent is from 0 to 63, got {}", printable(text, 80), item));
      v = uint64_t(1) << e;
    }
    o.values.push_back(std::move(v));
  }
  return o;
}

Sweep parse_sweep(const json& doc, const fs::path& base_dir, const std::vector<AxisOverride>& overrides, uint64_t max_states) {
  if (!doc.is_object()) throw ManifestError("", "expected an object, got " + describe(doc));
  Sweep s;
  s.base_dir = base_dir;
  const json& axes = doc.contains("axes") ? doc["axes"] : json();
  if (!axes.is_object()) throw ManifestError("/axes", "expected an object of axes ({\"n\": [1024, \"64K\"]}), got " + describe(axes));
  if (axes.empty()) throw ManifestError("/axes", "a sweep needs at least one axis");
  for (auto it = axes.begin(); it != axes.end(); ++it)
    s.axes.push_back(parse_sweep_axis(it.key(), it.value(), "/axes/" + pointer_token(it.key())));

  for (const auto& o : overrides) {
    auto a = std::find_if(s.axes.begin(), s.axes.end(), [&](const SweepAxis& x) { return x.name == o.name; });
    if (a == s.axes.end())
      throw InputError(fmt::format("--axis {}: the manifest has no axis \"{}\" (its axes: {})", printable(o.text, 80), o.name,
                                   axis_list(s.axes)));
    a->values = o.values;
    a->pow2 = o.pow2;
    a->per_backend.clear();  // the command line's values, on every backend
  }

  // Zipped axes: one group each; every other axis is a group of its own.
  std::vector<int> group_of(s.axes.size(), -1);
  std::vector<std::vector<size_t>> zips;
  if (doc.contains("zip")) {
    const json& z = doc["zip"];
    if (!z.is_array()) throw ManifestError("/zip", "expected a list of lists of axis names ([[\"m\", \"k\"]]), got " + describe(z));
    for (size_t g = 0; g < z.size(); ++g) {
      const std::string gp = "/zip/" + std::to_string(g);
      if (!z[g].is_array() || z[g].size() < 2)
        throw ManifestError(gp, "a zip is a list of at least two axis names, got " + describe(z[g]));
      std::vector<size_t> members;
      for (size_t i = 0; i < z[g].size(); ++i) {
        const std::string ip = gp + "/" + std::to_string(i);
        if (!z[g][i].is_string()) throw ManifestError(ip, "expected an axis name, got " + describe(z[g][i]));
        const std::string name = z[g][i].get<std::string>();
        auto a = std::find_if(s.axes.begin(), s.axes.end(), [&](const SweepAxis& x) { return x.name == name; });
        if (a == s.axes.end())
          throw ManifestError(ip, fmt::format("unknown axis \"{}\" (axes: {})", printable(name, 64), axis_list(s.axes)));
        const size_t idx = static_cast<size_t>(a - s.axes.begin());
        if (group_of[idx] >= 0) throw ManifestError(ip, fmt::format("axis \"{}\" is zipped twice", name));
        group_of[idx] = static_cast<int>(zips.size());
        // Zipped axes vary together: as many values each, by default and on
        // every backend that gives one of them values of its own.
        if (!members.empty()) {
          const SweepAxis& first = s.axes[members[0]];
          for (const std::string backend : {"", "host", "hsa", "cuda"}) {
            const size_t mine = value_count(*a, backend), theirs = value_count(first, backend);
            if (mine != theirs)
              throw ManifestError(ip, fmt::format("axis \"{}\" has {} values{}, \"{}\" has {}: zipped axes vary together "
                                                  "and need as many values each",
                                                  name, mine, backend.empty() ? "" : " on " + backend, first.name, theirs));
          }
        }
        members.push_back(idx);
      }
      zips.push_back(std::move(members));
    }
  }
  std::vector<bool> placed(zips.size(), false);
  for (size_t i = 0; i < s.axes.size(); ++i) {
    if (group_of[i] < 0) s.groups.push_back({i});
    else if (!placed[static_cast<size_t>(group_of[i])]) {
      placed[static_cast<size_t>(group_of[i])] = true;
      s.groups.push_back(zips[static_cast<size_t>(group_of[i])]);
    }
  }

  // The states, bounded, by default and on every backend with values of its own.
  s.state_count = count_states(s, "", max_states);
  for (const char* backend : kSweepBackends)
    if (std::any_of(s.axes.begin(), s.axes.end(), [&](const SweepAxis& a) { return backend_values(a, backend); }))
      (void)count_states(s, backend, max_states);
  s.max_states = max_states;

  // The document without its axes; every {"axis"} node names one, and every
  // axis is used somewhere.
  s.document = doc;
  s.document.erase("axes");
  s.document.erase("zip");
  std::set<std::string> used;
  for_each_axis_node(s.document, "", [&](const json& node, const std::string& ptr) {
    const json& name = node["axis"];
    if (!name.is_string())
      throw ManifestError(ptr + "/axis", "expected the name of an axis, got " + describe(name));
    const std::string n = name.get<std::string>();
    if (std::none_of(s.axes.begin(), s.axes.end(), [&](const SweepAxis& a) { return a.name == n; }))
      throw ManifestError(ptr + "/axis", fmt::format("unknown axis \"{}\" (axes: {})", printable(n, 64), axis_list(s.axes)));
    used.insert(n);
  });
  for (const auto& a : s.axes)
    if (!used.count(a.name))
      throw ManifestError(a.pointer, fmt::format("axis \"{}\" is declared but no {{\"axis\": \"{}\"}} uses it", a.name, a.name));
  return s;
}

Sweep load_sweep(const fs::path& path, const std::vector<AxisOverride>& overrides, uint64_t max_states) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw InputError(fmt::format("{}: manifest not found", path.string()));
  const json doc = read_json_file(path, kMaxManifestBytes);
  fs::path base = path.parent_path();
  if (base.empty()) base = ".";
  try {
    Sweep s = parse_sweep(doc, base, overrides, max_states);
    s.path = path;
    return s;
  } catch (const ManifestError& e) {
    throw InputError(path.string() + ": " + e.what());
  }
}

void Sweep::select_backend(const std::string& name) {
  if (name == backend) return;
  if (!backend.empty()) throw std::logic_error("Sweep::select_backend: a backend was selected already");
  for (auto& a : axes)
    if (const SweepAxisValues* v = backend_values(a, name)) {
      a.values = v->values;
      a.pow2 = v->pow2;
    }
  backend = name;
  state_count = count_states(*this, name, max_states);
}

std::vector<size_t> Sweep::state(uint64_t k) const {
  std::vector<size_t> idx(axes.size(), 0);
  for (size_t g = groups.size(); g-- > 0;) {
    const uint64_t n = axes[groups[g][0]].values.size();
    for (size_t a : groups[g]) idx[a] = static_cast<size_t>(k % n);
    k /= n;
  }
  return idx;
}

json Sweep::state_values(uint64_t k) const {
  const auto idx = state(k);
  json out = json::object();
  for (size_t i = 0; i < axes.size(); ++i) out[axes[i].name] = axes[i].values[idx[i]];
  return out;
}

std::string Sweep::state_label(uint64_t k) const {
  const auto idx = state(k);
  std::string out;
  for (size_t i = 0; i < axes.size(); ++i)
    out += (out.empty() ? "" : " ") + axes[i].name + "=" + printable(value_label(axes[i], axes[i].values[idx[i]]), 40);
  return out;
}

json Sweep::state_document(uint64_t k) const {
  const auto idx = state(k);
  std::map<std::string, const json*> values;
  for (size_t i = 0; i < axes.size(); ++i) values[axes[i].name] = &axes[i].values[idx[i]];
  json doc = document;
  substitute_axes(doc, values);
  return doc;
}

Manifest Sweep::state_manifest(uint64_t k) const {
  try {
    Manifest m = parse_manifest(state_document(k), base_dir);
    m.path = path;
    return m;
  } catch (const ManifestError& e) {
    std::string what = e.what();
    const std::string head = (e.pointer().empty() ? std::string("/") : e.pointer()) + ": ";
    if (what.rfind(head, 0) == 0) what = what.substr(head.size());
    throw ManifestError(e.pointer(), fmt::format("{} (state {} of {}: {})", what, k + 1, state_count, state_label(k)));
  }
}

}  // namespace lrrt::bundle
