#include "tool/verify.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "tool/bundle.hpp"
#include "tool/reference_ops.hpp"

namespace lrrt::tool {

void check_references(const Manifest& m) {
  for (const auto& v : m.verify) {
    if (v.kind != VerifySpec::Kind::Reference) continue;
    if (v.reference == kSequenceReference) {
      if (!m.sequence)
        throw ManifestError(v.pointer + "/expected/reference",
                            "reference \"sequence\" checks sequence manifests; this manifest runs one kernel (available: " +
                                reference_op_list() + ")");
      for (const auto& k : m.sequence->kernels)
        if (!has_reference_op(k.kernel))
          throw ManifestError(v.pointer + "/expected/reference",
                              fmt::format("reference \"sequence\" runs every step's built-in reference, and kernel \"{}\" ({}) has "
                                          "none (available: {})",
                                          printable(k.kernel, 80), k.pointer, reference_op_list()));
      continue;
    }
    if (m.sequence)
      throw ManifestError(v.pointer + "/expected/reference",
                          fmt::format("a sequence's outputs are checked against {{\"reference\": \"sequence\"}} (every step's "
                                      "built-in reference in program order), not \"{}\" alone",
                                      printable(v.reference, 80)));
    if (!has_reference_op(v.reference))
      throw ManifestError(v.pointer + "/expected/reference",
                          fmt::format("no built-in reference \"{}\" (available: {})", printable(v.reference, 80), reference_op_list()));
  }
}

bool uses_sequence_reference(const Manifest& m) {
  for (const auto& v : m.verify)
    if (v.kind == VerifySpec::Kind::Reference && v.reference == kSequenceReference) return true;
  return false;
}

bool isclose(long double got, long double expected, double rtol, double atol, bool equal_nan) {
  const bool gn = std::isnan(got), en = std::isnan(expected);
  if (gn || en) return gn && en && equal_nan;
  if (std::isinf(got) || std::isinf(expected)) return got == expected;
  return std::fabs(got - expected) <= static_cast<long double>(atol) + static_cast<long double>(rtol) * std::fabs(expected);
}

CompareResult compare_allclose(DType got_type, const std::byte* got, DType expected_type, const std::byte* expected,
                               uint64_t count, double rtol, double atol, bool equal_nan, size_t max_reported,
                               const Origin* origin) {
  if (dtype_is_complex(got_type) || dtype_is_complex(expected_type))
    return compare_allclose_complex(got_type, got, expected_type, expected, count, rtol, atol, equal_nan, max_reported, origin);
  CompareResult r;
  r.compared = count;
  const size_t size = dtype_size(got_type);
  for (uint64_t i = 0; i < count; ++i) {
    if (origin && origin[i] == Origin::Untouched && expected_type == got_type) {
      // Left as it was by the reference: the kernel must leave it too, bit
      // for bit (poison NaN equals poison NaN; equal_nan is about NaNs a
      // kernel computes).
      ++r.untouched;
      if (std::memcmp(got + i * size, expected + i * size, size) != 0) {
        ++r.mismatches;
        if (r.first.size() < max_reported) r.first.push_back({i, load_element(got_type, got, i), load_element(expected_type, expected, i)});
      }
      continue;
    }
    if (origin && origin[i] == Origin::FromPoison) ++r.from_poison;
    const long double g = load_element(got_type, got, i);
    const long double e = load_element(expected_type, expected, i);
    if (std::isfinite(g) && std::isfinite(e)) {
      const long double abs_err = std::fabs(g - e);
      if (abs_err > r.max_abs_error) r.max_abs_error = abs_err;
      if (e != 0) {
        const long double rel = abs_err / std::fabs(e);
        if (rel > r.max_rel_error) r.max_rel_error = rel;
      }
    }
    if (!isclose(g, e, rtol, atol, equal_nan)) {
      ++r.mismatches;
      if (r.first.size() < max_reported) r.first.push_back({i, g, e});
    }
  }
  return r;
}

nlohmann::json number_json(long double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  // Integral values are JSON integers, exactly: every u64 and i64 (and a
  // large float's exact value) fits one of uint64_t and int64_t.
  if (v == std::floor(v) && v >= -9223372036854775808.0L && v < 18446744073709551616.0L) {
    if (v >= 0) return static_cast<uint64_t>(v);
    return static_cast<int64_t>(v);
  }
  return static_cast<double>(v);
}

nlohmann::json compare_result_json(const CompareResult& r, const std::vector<uint64_t>& shape) {
  nlohmann::json first = nlohmann::json::array();
  for (const auto& m : r.first) {
    nlohmann::json e{{"index", m.index}, {"got", number_json(m.got)}, {"expected", number_json(m.expected)}};
    if (m.complex) {
      e["got"] = {number_json(m.got), number_json(m.got_imag)};
      e["expected"] = {number_json(m.expected), number_json(m.expected_imag)};
    }
    if (shape.size() > 1) {
      std::vector<uint64_t> coords(shape.size());
      uint64_t rem = m.index;
      for (size_t d = shape.size(); d-- > 0;) {
        coords[d] = rem % shape[d];
        rem /= shape[d];
      }
      e["coords"] = coords;
    }
    first.push_back(std::move(e));
  }
  return {{"compared", r.compared},
          {"mismatches", r.mismatches},
          {"max_abs_error", static_cast<double>(r.max_abs_error)},
          {"max_rel_error", static_cast<double>(r.max_rel_error)},
          {"first_mismatches", first}};
}

namespace {

// The expected values of one check and their type: one of the five
// strategies of "expected".
struct Expected {
  std::vector<std::byte> values;
  DType type = DType::f32;
  std::vector<Origin> origin;  // from a reference, one per element; empty: not known
};

Expected expected_from_npy(const VerifySpec& v, const BufferSpec& b) {
  NpyArray a;
  try {
    a = read_npy(v.file, {.count = b.count});  // the element count checked before the data is read
  } catch (const InputError& e) {
    throw ManifestError(v.pointer + "/expected/npy", fmt::format("buffer \"{}\" of {} elements: {}", b.name, b.count, e.what()));
  }
  if (dtype_is_complex(a.type) && !dtype_is_complex(b.type))
    throw ManifestError(v.pointer + "/expected/npy", fmt::format("{} holds complex values ({}) but buffer \"{}\" is {}",
                                                                 v.file.string(), a.descr, b.name, dtype_name(b.type)));
  if (dtype_is_complex(a.type) && dtype_is_complex(b.type) && a.type != b.type) {
    // Both parts rounded to the buffer's part type.
    Expected e{std::vector<std::byte>(b.bytes), b.type, {}};
    for (uint64_t i = 0; i < 2 * b.count; ++i)
      store_element(dtype_part(b.type), e.values.data(), i, load_element(dtype_part(a.type), a.data.data(), i));
    return e;
  }
  // Floats are rounded to the buffer's float type (round to nearest even),
  // as the kernel stores them: f64 expected values can meet an f32 output
  // bit for bit. A real file against a complex buffer: imaginary parts 0.
  if (dtype_is_float(a.type) && dtype_is_float(b.type) && a.type != b.type) {
    Expected e{std::vector<std::byte>(b.bytes), b.type, {}};
    for (uint64_t i = 0; i < b.count; ++i) store_element(b.type, e.values.data(), i, load_element(a.type, a.data.data(), i));
    return e;
  }
  return {std::move(a.data), a.type, {}};
}

Expected expected_from_raw(const VerifySpec& v, const BufferSpec& b) {
  InputFile file(v.file);  // size checked before a byte is read
  if (file.size() != b.bytes)
    throw ManifestError(v.pointer + "/expected/raw", fmt::format("{} has {} bytes, buffer \"{}\" has {} ({} x {})",
                                                                 v.file.string(), file.size(), b.name, b.bytes, b.count,
                                                                 dtype_name(b.type)));
  Expected e{std::vector<std::byte>(b.bytes), b.type, {}};
  file.read_at(0, e.values);
  return e;
}

// Inline values in the buffer's own type: floats rounded to nearest even, as
// fill and the kernel round them ([0.1] meets an f32 output's 0.1f bit for
// bit; "nan" and "inf" survive), integers exactly (parse_manifest checked
// that each fits).
Expected expected_from_values(const VerifySpec& v, const BufferSpec& b) {
  Expected e{{}, b.type, {}};
  e.values.resize(b.count * dtype_size(e.type));
  auto number = [](const nlohmann::json& j) -> long double {
    return j.is_string() ? (j.get<std::string>() == "nan" ? NAN : (j.get<std::string>()[0] == '-' ? -INFINITY : INFINITY))
           : j.is_number_unsigned() ? static_cast<long double>(j.get<uint64_t>())
           : j.is_number_integer()  ? static_cast<long double>(j.get<int64_t>())
                                    : static_cast<long double>(j.get<double>());
  };
  for (size_t k = 0; k < b.count; ++k) {
    const auto& j = v.values[k];
    if (dtype_is_complex(b.type)) {
      // [re, im] or a real number (parse_manifest checked the shape).
      store_element(dtype_part(b.type), e.values.data(), 2 * k, j.is_array() ? number(j[0]) : number(j));
      store_element(dtype_part(b.type), e.values.data(), 2 * k + 1, j.is_array() ? number(j[1]) : 0);
      continue;
    }
    long double x = j.is_string() ? (j.get<std::string>() == "nan" ? NAN : (j.get<std::string>()[0] == '-' ? -INFINITY : INFINITY))
                    : j.is_number_unsigned() ? static_cast<long double>(j.get<uint64_t>())
                    : j.is_number_integer()  ? static_cast<long double>(j.get<int64_t>())
                                             : static_cast<long double>(j.get<double>());
    store_element(e.type, e.values.data(), k, x);
  }
  return e;
}

Expected expected_from_reference(const VerifySpec& v, const BufferSpec& b, const VerifyInputs& in) {
  if (v.reference == kSequenceReference) {
    if (!in.sequence_reference) throw ManifestError(v.pointer + "/expected/reference", "no sequence reference was computed");
    return {in.sequence_reference->state[v.buffer], b.type, in.sequence_reference->origin[v.buffer]};
  }
  ReferenceInputs r{in.manifest, in.initial, in.grid, in.block};
  ReferenceOutput out = compute_reference(v.reference, r, v.buffer, v.pointer);
  return {std::move(out.values), b.type, std::move(out.origin)};
}

bool element_is_nan(DType t, const std::vector<std::byte>& values, uint64_t i) {
  return dtype_is_float(t) && values.size() >= (i + 1) * dtype_size(t) && std::isnan(load_element(t, values.data(), i));
}

// Another backend's run: an element it left at its initial NaN poison is
// untouched there, and must be untouched here, bit for bit.
std::vector<Origin> untouched_poison(const BufferSpec& b, const std::vector<std::byte>& expected, const std::vector<std::byte>* initial) {
  std::vector<Origin> origin(b.count, Origin::Computed);
  if (!initial || initial->size() != b.bytes || expected.size() != b.bytes || !dtype_is_float(b.type)) return origin;
  const size_t size = dtype_size(b.type);
  for (uint64_t i = 0; i < b.count; ++i)
    if (std::memcmp(expected.data() + i * size, initial->data() + i * size, size) == 0 && element_is_nan(b.type, *initial, i))
      origin[i] = Origin::Untouched;
  return origin;
}

std::string poison_text(DType t) { return dtype_is_float(t) ? "NaN" : "0xAB bytes"; }

const char* access_name(Access a) {
  switch (a) {
    case Access::Read: return "read";
    case Access::Write: return "write";
    case Access::ReadWrite: return "read_write";
    default: return "none";
  }
}

// Reads of buffers nothing initialised: (buffer, warning), one per buffer.
std::vector<std::pair<size_t, std::string>> poisoned_reads(const Manifest& m) {
  std::vector<std::pair<size_t, std::string>> out;
  std::vector<bool> warned(m.buffers.size(), false);
  auto poison = [&](size_t b) { return m.buffers[b].init.kind == BufferInit::Kind::Poison; };
  if (!m.sequence) {
    std::set<size_t> op_reads;  // buffers
    for (const auto& v : m.verify)
      if (v.kind == VerifySpec::Kind::Reference)
        for (size_t b : reference_op_buffers(v.reference, m.args, false)) op_reads.insert(b);
    for (const BufferUse& u : buffer_uses(m.args)) {
      if (warned[u.buffer] || !poison(u.buffer)) continue;
      const BufferSpec& b = m.buffers[u.buffer];
      const bool declared = b.access == Access::Read || b.access == Access::ReadWrite;
      if (!declared && !op_reads.count(u.buffer)) continue;
      warned[u.buffer] = true;
      out.emplace_back(u.buffer, fmt::format("buffer \"{}\" is read by the kernel ({}, {}) but has no init: it holds "
                                             "poison ({}), and so does every value computed from it; give it an init",
                                             b.name, u.label,
                                             declared ? fmt::format("declared \"access\": \"{}\"", access_name(b.access))
                                                      : std::string("by its built-in reference"),
                                             poison_text(b.type)));
    }
    return out;
  }
  std::vector<bool> initialised(m.buffers.size());
  for (size_t b = 0; b < m.buffers.size(); ++b) initialised[b] = !poison(b);
  for (const auto& s : m.sequence->steps) {
    std::vector<std::pair<size_t, std::string>> reads;  // buffer, how
    std::vector<size_t> writes;
    if (s.kind == SequenceStep::Kind::Kernel) {
      const std::string& symbol = m.sequence->kernels[s.kernel].kernel;
      const auto op_reads = reference_op_buffers(symbol, s.args, false);
      const auto op_writes = reference_op_buffers(symbol, s.args, true);
      for (const BufferUse& u : buffer_uses(s.args)) {
        const size_t i = u.arg;
        // Reference ops name whole arguments, never a struct's fields.
        const bool op_reads_it = std::find(op_reads.begin(), op_reads.end(), u.buffer) != op_reads.end();
        const bool op_writes_it = std::find(op_writes.begin(), op_writes.end(), u.buffer) != op_writes.end();
        if (u.access == Access::Read || u.access == Access::ReadWrite || op_reads_it) reads.emplace_back(u.buffer, u.label);
        if (u.access == Access::Write || u.access == Access::ReadWrite || op_writes_it) writes.push_back(u.buffer);
      }
    } else {
      if (s.kind == SequenceStep::Kind::Copy) reads.emplace_back(s.from, "the copy's source");
      writes.push_back(s.to);
    }
    for (const auto& [b, how] : reads) {
      if (initialised[b] || warned[b]) continue;
      warned[b] = true;
      out.emplace_back(b, fmt::format("step \"{}\" reads buffer \"{}\" ({}), which has no init and no earlier step writes: "
                                      "it holds poison ({}), and so does every value computed from it; give it an init",
                                      s.label, m.buffers[b].name, how, poison_text(m.buffers[b].type)));
    }
    for (size_t b : writes) initialised[b] = true;
  }
  return out;
}

// Why a check cannot tell a kernel that wrote its buffer from one that did
// not, or "" when it can.
std::string vacuous_reason(const BufferSpec& b, const Expected& e, const CompareResult& r, const std::vector<std::byte>* initial,
                           const Manifest& m) {
  if (r.from_poison) {
    std::string names;
    for (const auto& [buffer, _] : poisoned_reads(m))
      names += (names.empty() ? "" : ", ") + fmt::format("\"{}\"", m.buffers[buffer].name);
    return fmt::format("{} of {} expected values are computed from poison (buffers without init that are read: {}); they say "
                       "nothing about the kernel, whatever it wrote: give the inputs an init",
                       r.from_poison, b.count, names.empty() ? "see the warnings" : names);
  }
  // Untouched elements are compared bit for bit (a stray write fails them);
  // a written element tells a kernel that wrote it from one that did not
  // unless its expected value is NaN where the buffer starts as NaN.
  bool any_written = false;
  for (uint64_t i = 0; i < b.count; ++i) {
    if (!e.origin.empty() && e.origin[i] == Origin::Untouched) continue;
    any_written = true;
    if (!(element_is_nan(e.type, e.values, i) && initial && element_is_nan(b.type, *initial, i))) return "";
  }
  if (!any_written) return "";
  return fmt::format("every expected value is NaN where buffer \"{}\" starts as NaN (its poison, or its init): an output the "
                     "kernel never wrote would match; initialise the buffer (e.g. \"init\": \"zeros\") or check values that "
                     "differ from its initial contents",
                     b.name);
}

}  // namespace

std::vector<std::string> poison_read_warnings(const Manifest& m) {
  std::vector<std::string> out;
  for (auto& [_, w] : poisoned_reads(m)) out.push_back(std::move(w));
  return out;
}

nlohmann::json verify_outputs(const VerifyInputs& in, bool enabled) {
  const Manifest& m = *in.manifest;
  nlohmann::json checks = nlohmann::json::array();
  bool any_failed = false, any_passed = false;
  std::map<std::string, BufferContents> elsewhere;  // reference_backend runs, one per backend
  for (const auto& v : m.verify) {
    if (!enabled) break;
    const auto& b = m.buffers[v.buffer];
    const std::vector<std::byte>* initial =
        in.initial && v.buffer < in.initial->size() && (*in.initial)[v.buffer].size() == b.bytes ? &(*in.initial)[v.buffer] : nullptr;
    nlohmann::json check{{"buffer", b.name}, {"method", v.method()}, {"rtol", v.rtol}, {"atol", v.atol},
                         {"equal_nan", v.equal_nan}};
    Expected expected;
    switch (v.kind) {
      case VerifySpec::Kind::Npy: expected = expected_from_npy(v, b); break;
      case VerifySpec::Kind::Raw: expected = expected_from_raw(v, b); break;
      case VerifySpec::Kind::Values: expected = expected_from_values(v, b); break;
      case VerifySpec::Kind::Reference: expected = expected_from_reference(v, b, in); break;
      case VerifySpec::Kind::ReferenceBackend: {
        if (v.backend == in.backend) {
          check["status"] = "skipped";
          check["reason"] = fmt::format("the reference backend is the backend under test ({}); use a built-in reference or "
                                        "expected values for an independent check",
                                        v.backend);
          checks.push_back(std::move(check));
          continue;
        }
        auto it = elsewhere.find(v.backend);
        if (it == elsewhere.end()) {
          lrrt::Device device;
          try {
            device = lrrt::Device::select(v.backend, 0);
          } catch (const lrrt::Error& e) {
            throw DeviceError(fmt::format("{}/expected/reference_backend: cannot open a {} device: {}", v.pointer, v.backend,
                                          e.what()));
          }
          it = elsewhere.emplace(v.backend, in.run_elsewhere(device)).first;
        }
        expected = {it->second[v.buffer], b.type, {}};
        expected.origin = untouched_poison(b, expected.values, initial);
        break;
      }
    }
    const CompareResult r = compare_allclose(b.type, (*in.outputs)[v.buffer].data(), expected.type, expected.values.data(),
                                             b.count, v.rtol, v.atol, v.equal_nan, 10,
                                             expected.origin.empty() ? nullptr : expected.origin.data());
    check.update(compare_result_json(r, b.shape));
    if (!expected.origin.empty()) {
      check["untouched"] = r.untouched;
      check["from_poison"] = r.from_poison;
    }
    const std::string vacuous = vacuous_reason(b, expected, r, initial, m);
    const bool passed = r.passed() && vacuous.empty();
    check["status"] = passed ? "passed" : "failed";
    if (!vacuous.empty()) {
      check["vacuous"] = true;
      check["reason"] = vacuous;
    }
    (passed ? any_passed : any_failed) = true;
    checks.push_back(std::move(check));
  }
  nlohmann::json verification{{"checks", checks}};
  if (any_failed) verification["status"] = "failed";
  else if (any_passed) verification["status"] = "passed";
  else {
    verification["status"] = "skipped";
    if (!enabled) verification["reason"] = "verification disabled (--no-verify)";
    else if (!m.verify_skip_reason.empty()) verification["reason"] = m.verify_skip_reason;
    else if (m.verify.empty()) verification["reason"] = "the manifest declares no verification";
    else verification["reason"] = "no check was independent of the backend under test";
  }
  return verification;
}

}  // namespace lrrt::tool
