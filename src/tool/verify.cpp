#include "tool/verify.hpp"

#include <fmt/format.h>

#include <cmath>
#include <map>

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
                               uint64_t count, double rtol, double atol, bool equal_nan, size_t max_reported) {
  CompareResult r;
  r.compared = count;
  for (uint64_t i = 0; i < count; ++i) {
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
  if (v == std::floor(v) && std::fabs(v) < 9.2e18L) {
    if (v >= 0) return static_cast<uint64_t>(v);
    return static_cast<int64_t>(v);
  }
  return static_cast<double>(v);
}

nlohmann::json compare_result_json(const CompareResult& r, const std::vector<uint64_t>& shape) {
  nlohmann::json first = nlohmann::json::array();
  for (const auto& m : r.first) {
    nlohmann::json e{{"index", m.index}, {"got", number_json(m.got)}, {"expected", number_json(m.expected)}};
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
};

Expected expected_from_npy(const VerifySpec& v, const BufferSpec& b) {
  NpyArray a;
  try {
    a = read_npy(v.file, {.count = b.count});  // the element count checked before the data is read
  } catch (const InputError& e) {
    throw ManifestError(v.pointer + "/expected/npy", fmt::format("buffer \"{}\" of {} elements: {}", b.name, b.count, e.what()));
  }
  return {std::move(a.data), a.type};
}

Expected expected_from_raw(const VerifySpec& v, const BufferSpec& b) {
  InputFile file(v.file);  // size checked before a byte is read
  if (file.size() != b.bytes)
    throw ManifestError(v.pointer + "/expected/raw", fmt::format("{} has {} bytes, buffer \"{}\" has {} ({} x {})",
                                                                 v.file.string(), file.size(), b.name, b.bytes, b.count,
                                                                 dtype_name(b.type)));
  Expected e{std::vector<std::byte>(b.bytes), b.type};
  file.read_at(0, e.values);
  return e;
}

// Inline values: floats as f64 (so "nan" and "inf" survive), integers in the
// buffer's own type.
Expected expected_from_values(const VerifySpec& v, const BufferSpec& b) {
  Expected e{{}, dtype_is_float(b.type) ? DType::f64 : b.type};
  e.values.resize(b.count * dtype_size(e.type));
  for (size_t k = 0; k < b.count; ++k) {
    const auto& j = v.values[k];
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
    return {(*in.sequence_reference)[v.buffer], b.type};
  }
  ReferenceInputs r{in.manifest, in.initial, in.grid, in.block};
  return {compute_reference(v.reference, r, v.buffer, v.pointer), b.type};
}

}  // namespace

nlohmann::json verify_outputs(const VerifyInputs& in, bool enabled) {
  const Manifest& m = *in.manifest;
  nlohmann::json checks = nlohmann::json::array();
  bool any_failed = false, any_passed = false;
  std::map<std::string, BufferContents> elsewhere;  // reference_backend runs, one per backend
  for (const auto& v : m.verify) {
    if (!enabled) break;
    const auto& b = m.buffers[v.buffer];
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
        expected = {it->second[v.buffer], b.type};
        break;
      }
    }
    const CompareResult r = compare_allclose(b.type, (*in.outputs)[v.buffer].data(), expected.type,
                                             expected.values.data(), b.count, v.rtol, v.atol, v.equal_nan);
    check.update(compare_result_json(r, b.shape));
    check["status"] = r.passed() ? "passed" : "failed";
    (r.passed() ? any_passed : any_failed) = true;
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
