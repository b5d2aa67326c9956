// Shared by the manifest tests (test_manifest*.cpp): a minimal single-kernel
// manifest, a sequence manifest, parsing one, and the JSON pointer of the
// error a document gives.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "lrrt/bundle.hpp"

namespace lrrt::test::manifest_test {

using nlohmann::json;
using namespace lrrt::bundle;

inline json base() {
  return json::parse(R"({
    "lrrt_manifest": 1,
    "code_object": "k.so",
    "kernel": "k",
    "buffers": [
      {"name": "x", "type": "f32", "count": 100, "init": "zeros"},
      {"name": "m", "type": "i16", "shape": [3, 5]}
    ],
    "args": [{"buffer": "x"}, {"type": "u32", "value": 7}],
    "launch": {"workgroup_size": [32], "global_size": [100]}
  })");
}

inline Manifest parse(const json& j) { return parse_manifest(j, "."); }

// The error's pointer for a document (or "" when it parses).
inline std::string error_pointer(const json& j, std::string* message = nullptr) {
  try {
    parse(j);
  } catch (const ManifestError& e) {
    if (message) *message = e.what();
    return e.pointer();
  }
  return "";
}

// A sequence manifest: a copy, a fill, three repetitions of two kernel steps,
// a patch.
inline json sequence_base() {
  return json::parse(R"({
    "lrrt_manifest": 1,
    "kernels": {"saxpy": {"code_object": "k.so"}, "add": {"code_object": {"host": "a.so"}, "kernel": "vector_add_f32"}},
    "buffers": [
      {"name": "x", "type": "f32", "count": 100, "init": "random"},
      {"name": "y", "type": "f32", "count": 100, "init": "random"},
      {"name": "z", "type": "f32", "count": 100},
      {"name": "w", "type": "i64", "count": 10}
    ],
    "sequence": [
      {"name": "load", "copy": {"from": "x", "to": "z", "bytes": 40, "to_offset": 8}},
      {"name": "clear", "fill": {"buffer": "y", "value": 1.5, "range": {"offset": 4, "bytes": 8}}},
      {"repeat": 3, "steps": [
        {"name": "step", "kernel": "saxpy",
         "args": [{"name": "a", "type": "f32", "value": 2},
                  {"buffer": "x", "access": "read", "range": {"offset": 16, "bytes": 64}},
                  {"buffer": "y", "access": "read_write"},
                  {"type": "u32", "value": 100}],
         "launch": {"workgroup_size": [32], "global_size": [100]}},
        {"name": "sum", "kernel": "add", "after": ["step", "load"],
         "args": [{"buffer": "y", "access": "read"}, {"buffer": "y", "access": "read"}, {"buffer": "z", "access": "write"},
                  {"type": "u32", "value": 100}],
         "launch": {"workgroup_size": [32], "workgroup_count": [4]}}
      ]}
    ],
    "patch": {"step": "step", "arg": "a", "values": [1, -2.5]},
    "verify": [{"buffer": "z", "expected": {"reference": "sequence"}}]
  })");
}

}  // namespace lrrt::test::manifest_test
