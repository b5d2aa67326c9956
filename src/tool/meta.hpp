// What every result file says about where and how it was made, written once
// for every kind (run, info, inspect, bench, compare):
//   meta     the same keys in every file (docs/manifest.md, "Results")
//   devices  one entry per device, the same fields as `lrrt info`
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lrrt/lrrt.hpp"

namespace lrrt::tool {

// {"tool": "lrrt <command>", "version", "git_sha" (the commit the binary was
// built from), "build_git_sha" (the same; older readers look for it),
// "git_dirty" (whether that commit's tree had local changes, when lrrt runs
// inside it; else null), "cwd_git_sha" (the checkout lrrt runs in when it is
// another commit; else null), "argv", "date" (UTC), "host", "cpu",
// "cpu_cores", "memory_bytes", "kernel", "options" ({}: the command adds its
// own)}. `cpu` and `memory_bytes` come from the host device when the command
// has it open (`host`), else they are null: a command never opens a device
// only to describe the machine.
nlohmann::json make_meta(std::string_view command, const std::vector<std::string>& argv,
                         const lrrt::Device* host = nullptr);

// {"backend", "index", "backend_ordinal", "name", "arch", "compute_units",
// "wave_size", "max_workgroup_size", "max_workgroup_dims",
// "max_shared_memory_per_workgroup", "memory_bytes", "details": {...}}
nlohmann::json device_json(const lrrt::Device& device);
// The device's last-level cache and peak memory bandwidth
// (lr_device_get_memory_info; the host measures it on first use):
// {"last_level_cache_bytes", "last_level_cache_method", "peak_bandwidth_gbps",
// "peak_bandwidth_source": "reported" | "measured" | "unknown", "peak_bandwidth_method"}.
nlohmann::json memory_json(const lr_device_memory_info_t& info);

}  // namespace lrrt::tool
