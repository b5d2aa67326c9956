// A run result document (the shape `lrrt run` writes, docs/manifest.md,
// "Results") for the printer tests: one run, a failed check with a NaN, a
// quoted device name.
#pragma once

#include <nlohmann/json.hpp>

inline nlohmann::json sample_run_document() {
  return nlohmann::json::parse(R"({
    "lrrt_results": 1, "kind": "run",
    "device": {"backend": "host", "index": 0, "name": "CPU, fast", "arch": "x86_64"},
    "runs": [{
      "manifest": "m.json", "name": "saxpy", "kernel": "saxpy", "backend": "host", "device_index": 0,
      "launch": {"workgroup_size": [256, 1, 1], "workgroup_count": [4, 1, 1], "work_items": 1024, "dynamic_shared_bytes": 0},
      "warmup": 1, "iterations": 3,
      "timing": {"samples": [10, 20, 30], "min_ns": 10, "median_ns": 20, "mean_ns": 20, "stddev_ns": 10, "max_ns": 30,
                 "bytes_per_iteration": 12288, "bandwidth_gbps": 614.4},
      "verification": {"status": "failed", "checks": [{"buffer": "y", "method": "reference:saxpy", "status": "failed",
        "compared": 1024, "mismatches": 1, "max_abs_error": 1.5, "max_rel_error": 0.5, "rtol": 1e-5, "atol": 1e-8,
        "first_mismatches": [{"index": 7, "got": "nan", "expected": 3}]}]},
      "saved": [{"buffer": "y", "npy": "y.npy"}]
    }]
  })");
}
