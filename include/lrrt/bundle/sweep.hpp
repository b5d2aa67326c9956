// Sweeps: a manifest with "axes" stands for many manifests, one per state
// (docs/manifest.md, "Sweeps"). Any value of the manifest may be
// {"axis": "name"}; a state substitutes each such node with its value and the
// result is an ordinary manifest, parsed and validated by parse_manifest.
// The states are the Cartesian product of the axes, except that axes named
// together in "zip" vary together.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lrrt/bundle/manifest.hpp"

namespace lrrt::bundle {

// Most states a sweep may have unless the caller raises it (--max-states),
// and the most it may be raised to: the results hold every state (a few KB
// each), and the states are checked one by one before the first runs.
inline constexpr uint64_t kDefaultMaxStates = 10000;
inline constexpr uint64_t kMaxStatesLimit = 100000;

// The backends an axis may give values of its own ({"pow2": [10, 28],
// "host": {"pow2": [10, 20]}}).
inline constexpr const char* kSweepBackends[] = {"host", "hsa", "cuda"};

struct SweepAxisValues {
  std::vector<nlohmann::json> values;  // numbers (sizes resolved: "64K" = 65536) or strings
  bool pow2 = false;                   // declared as powers of two (values are the powers)
};

struct SweepAxis {
  std::string name;
  std::vector<nlohmann::json> values;  // the values in use (the default's until select_backend)
  bool pow2 = false;
  std::string pointer;                 // "/axes/<name>"
  // Values of one backend instead of the default ("host" -> ...); none when
  // --axis replaced the axis.
  std::vector<std::pair<std::string, SweepAxisValues>> per_backend;
};

// --axis NAME=[...] / NAME[pow2]=[...]: replaces the axis's values.
struct AxisOverride {
  std::string name;
  std::vector<nlohmann::json> values;
  bool pow2 = false;
  std::string text;  // as given, for messages
};

struct Sweep {
  std::filesystem::path path;      // the manifest file ("" when parsed from a document)
  std::filesystem::path base_dir;
  nlohmann::json document;         // the manifest without "axes" and "zip"
  std::vector<SweepAxis> axes;     // in name order; the last varies fastest
  std::vector<std::vector<size_t>> groups;  // axes that vary together (a zip, or one axis), in order of their first axis
  uint64_t state_count = 0;
  std::string backend;             // whose axis values are in use ("" = the defaults)
  uint64_t max_states = kDefaultMaxStates;

  // Uses `backend`'s values of every axis that has its own (the defaults
  // otherwise) and recounts the states. parse_sweep checked every backend's.
  void select_backend(const std::string& backend);

  // The value index of every axis in state k (0 <= k < state_count).
  std::vector<size_t> state(uint64_t k) const;
  // {"n": 1024, "wg": 256}: the axis values of state k.
  nlohmann::json state_values(uint64_t k) const;
  // "n=1024 wg=256", for messages and progress lines.
  std::string state_label(uint64_t k) const;
  // The state's manifest document (every {"axis"} node substituted).
  nlohmann::json state_document(uint64_t k) const;
  // The state's manifest, parsed; a ManifestError names the field and the
  // state ("/buffers/0/count: ... (state 3: n=2^40)").
  Manifest state_manifest(uint64_t k) const;
};

// Whether a manifest document declares axes.
bool is_sweep(const nlohmann::json& doc);

// Parses "axes" and "zip", applies the overrides, checks every {"axis"} node
// names a declared axis and every axis is used, and counts the states, for
// the default values and each backend's (ManifestError naming the field; more
// than max_states is an error naming /axes). Does not parse the states'
// manifests: Sweep::state_manifest(k) builds one when it is needed.
Sweep parse_sweep(const nlohmann::json& doc, const std::filesystem::path& base_dir,
                  const std::vector<AxisOverride>& overrides = {}, uint64_t max_states = kDefaultMaxStates);
Sweep load_sweep(const std::filesystem::path& path, const std::vector<AxisOverride>& overrides = {},
                 uint64_t max_states = kDefaultMaxStates);

// nvbench's syntax: NAME=VALUE, NAME=[V1,V2,...], NAME=[LO:HI] or
// NAME=[LO:HI:STEP] (inclusive), NAME[pow2]=... with exponents. Values take
// size suffixes (1K = 1024, 16M, 1G) or are text (f32). InputError naming
// --axis otherwise.
AxisOverride parse_axis_override(const std::string& text);

// A size with an optional binary suffix ("64K" = 65536, "16M", "1G"); false
// when the text is not one. Overflow is an InputError.
bool parse_size_text(const std::string& text, uint64_t& out);

}  // namespace lrrt::bundle
