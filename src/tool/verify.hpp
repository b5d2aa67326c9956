// Verification of a run's outputs (docs/manifest.md, "verify"): the
// expected values of each check from one of the five strategies of
// "expected" (npy, raw, values, a built-in reference, another backend), and
// the comparison with numpy.allclose semantics:
//   |got - expected| <= atol + rtol * |expected|
// NaN equals NaN only with equal_nan; infinities equal only the same
// infinity. Values are compared as long double, exact for 64-bit integers.
// Where the expected values come from a reference, elements it leaves
// untouched are compared bit for bit, and a check that cannot tell a written
// output from an unwritten one is "vacuous": failed, with the reason
// (docs/manifest.md, "What a check can tell").
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lrrt/lrrt.hpp"
#include "tool/bundle.hpp"
#include "tool/reference_ops.hpp"

namespace lrrt::tool {

bool isclose(long double got, long double expected, double rtol, double atol, bool equal_nan);

struct Mismatch {
  uint64_t index = 0;
  long double got = 0, expected = 0;
  // Complex elements: the imaginary parts (got and expected are the real ones).
  bool complex = false;
  long double got_imag = 0, expected_imag = 0;
};

struct CompareResult {
  uint64_t compared = 0;
  uint64_t mismatches = 0;
  long double max_abs_error = 0;  // over elements where both values are finite
  long double max_rel_error = 0;  // same, where expected != 0
  std::vector<Mismatch> first;    // the first few mismatches, in index order
  uint64_t untouched = 0;         // elements compared bit for bit (Origin::Untouched)
  uint64_t from_poison = 0;       // elements whose expected value came from poison
  bool passed() const { return mismatches == 0; }
};

// With `origin` (one per element, from a reference; expected_type ==
// got_type), an Untouched element is equal when its bytes are, whatever
// equal_nan says: the kernel must leave it as it was, poison included.
CompareResult compare_allclose(DType got_type, const std::byte* got, DType expected_type, const std::byte* expected,
                               uint64_t count, double rtol, double atol, bool equal_nan, size_t max_reported = 10,
                               const Origin* origin = nullptr);

// compare_allclose for complex buffers (c64, c128; expected of either
// complex type): an element matches when both its real and its imaginary
// parts pass isclose (verify_complex.cpp).
CompareResult compare_allclose_complex(DType got_type, const std::byte* got, DType expected_type, const std::byte* expected,
                                       uint64_t count, double rtol, double atol, bool equal_nan, size_t max_reported,
                                       const Origin* origin);

// A JSON value for a number that may be NaN or infinite ("nan", "inf",
// "-inf"); integral values in [-2^63, 2^64) are JSON integers, exactly.
nlohmann::json number_json(long double v);

// {"compared", "mismatches", "max_abs_error", "max_rel_error", "first_mismatches": [{"index", ["coords"], "got", "expected"}]}
nlohmann::json compare_result_json(const CompareResult& r, const std::vector<uint64_t>& shape);

// What the checks of a manifest need from the run.
struct VerifyInputs {
  const Manifest* manifest = nullptr;
  const BufferContents* initial = nullptr;  // what every buffer started with
  const BufferContents* outputs = nullptr;  // after the verified launch (the checked buffers at least)
  lr_dim3_t grid{1, 1, 1}, block{1, 1, 1};  // the launch, for built-in references
  std::string backend;                      // the backend under test
  // "reference_backend": the same manifest launched once on `device` from
  // the same initial contents; every buffer's contents after it.
  std::function<BufferContents(const lrrt::Device& device)> run_elsewhere;
  // A sequence's final buffers computed on the CPU (sequence_reference),
  // for {"reference": "sequence"}.
  const SequenceReference* sequence_reference = nullptr;
};

// The built-in reference of a whole sequence: every kernel step's built-in
// reference (named by the kernel's symbol), copies and fills, in program order.
inline constexpr const char* kSequenceReference = "sequence";
bool uses_sequence_reference(const Manifest& m);

// Checks what parse_manifest leaves to the verifier: every built-in
// reference the manifest names exists here (a sequence takes only
// "sequence"; a single kernel any but "sequence"). Throws ManifestError naming
// /verify/N/expected/reference.
void check_references(const Manifest& m);

// Reads of buffers nothing initialised (init poison, and for a sequence no
// earlier step writes them): one warning per buffer, for the results'
// "warnings". A single kernel reads an argument's buffer when the buffer
// declares "access" read or read_write, or when a built-in reference the
// manifest checks with reads that argument; a sequence step by its declared
// accesses and its kernel's built-in reference, a copy its source.
std::vector<std::string> poison_read_warnings(const Manifest& m);

// Runs every check of manifest->verify (none when `enabled` is false):
// {"status": "passed" | "failed" | "skipped", ["reason"], "checks": [{"buffer",
// "method", "rtol", "atol", "equal_nan", "status", ...compare_result_json}]}.
// Bad expected files throw ManifestError; a reference device that cannot be
// opened, DeviceError.
nlohmann::json verify_outputs(const VerifyInputs& in, bool enabled);

}  // namespace lrrt::tool
