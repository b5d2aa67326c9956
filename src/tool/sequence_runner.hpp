// Runs a sequence manifest (docs/manifest.md, "Sequences") three ways and
// verifies each from freshly uploaded initial contents (outputs poisoned):
//   eager    every step through the ordinary launch API (lrrt::launch,
//            lr_memcpy_async) on the device's default queue;
//   replay   the steps recorded once as an lrrt::Graph, instantiated and
//            replayed with lr_graph_exec_launch;
//   patched  the same exec with the manifest's "patch" argument set through
//            lr_graph_exec_set_kernargs to each value in turn, one replay per
//            value, each verified against the sequence reference for that
//            value (only when the manifest has a "patch").
// Each way is then timed (warm-up and timed iterations; one sample = one whole
// sequence, between two events on the default queue).
//
// The dependency graph, lanes and fences are the runtime's: the tool records
// steps with their declared accesses and prints lr_graph_exec_get_plan, it
// derives nothing itself.
#pragma once

#include <filesystem>

#include <nlohmann/json.hpp>

#include "lrrt/lrrt.hpp"
#include "tool/bundle.hpp"
#include "tool/reference_ops.hpp"
#include "tool/runner.hpp"

namespace lrrt::tool {

// The run object of a sequence manifest ("kind": "sequence" inside a run
// document). Errors as run_manifest.
nlohmann::json run_sequence(const Manifest& m, const lrrt::Device& device, const RunOptions& options);

// The plan of a sequence manifest on a device: {"manifest", "name",
// "steps": [{"node", "step", "kind"}], "buffers": [{"name", "bytes": [begin,
// end]}], "plan": <lr_graph_exec_get_plan>}. Buffers are allocated but not
// initialised; nothing runs.
nlohmann::json plan_sequence(const Manifest& m, const lrrt::Device& device, const std::filesystem::path& kernel_dir);

// The sequence's final buffers computed on the CPU: every kernel step's
// built-in reference (by kernel symbol; it writes the arguments its
// signature writes, whatever access the step declares), copies and fills, in
// program order; with patch_value, the patched argument takes it (its
// encoded bytes) in every repetition of the patched step. Every element's
// origin is tracked: untouched, computed, or computed from poison (an
// element nothing initialised). verify_pointer names the check in errors.
SequenceReference sequence_reference(const Manifest& m, const BufferContents& initial,
                                  const std::optional<size_t>& patch_value, const std::string& verify_pointer);

}  // namespace lrrt::tool
