// What `lrrt inspect` reports about a code object, for every format in one
// shape: the file's format, then per target (one for a plain code object,
// one per entry of a container) the target's facts and its kernels with
// their argument layout. Fields a format does not record are absent
// (std::nullopt), not zero. docs/code-objects.md "What lrrt inspect prints"
// describes the JSON the CLI writes from it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "lrrt/formats/error.hpp"
#include "lrrt/formats/format.hpp"
#include "lrrt/formats/kernel.hpp"
#include "lrrt/formats/select.hpp"

namespace lrrt::formats {

struct InspectedKernel {
  std::string name;
  std::string symbol;
  std::optional<uint32_t> kernarg_size;           // bytes of the kernarg segment / parameter bank
  std::optional<uint32_t> explicit_kernarg_size;  // bytes the caller passes
  std::optional<uint32_t> kernarg_align;
  std::optional<uint32_t> group_segment_size;    // static shared memory
  std::optional<uint32_t> private_segment_size;  // per work-item scratch / stack frame
  std::optional<bool> uses_dynamic_stack;        // AMD: a stack the compiler cannot bound
  std::optional<uint32_t> max_workgroup_size;
  std::optional<uint32_t> wavefront_size;
  std::optional<uint32_t> sgpr_count;
  std::optional<uint32_t> vgpr_count;
  std::optional<uint32_t> registers;  // NVIDIA: registers per thread
  bool has_arg_layout = false;
  std::vector<KernelArgInfo> args;
};

// A format-specific fact: code_object_version 5, e_flags "0x5a04", ...
using FactValue = std::variant<std::string, uint64_t>;
using Fact = std::pair<std::string, FactValue>;

struct InspectedTarget {
  std::string target;  // gfx90a:xnack+, sm_90, compute_90, x86_64
  Format format = Format::Unknown;
  std::string entry;  // container entry id; "" for a plain file
  uint64_t offset = 0;
  uint64_t size = 0;
  std::vector<Fact> facts;  // in display order
  std::vector<InspectedKernel> kernels;
  std::string note;  // why kernels are missing or partial; "" when all is known
};

struct Inspection {
  Format format = Format::Unknown;
  uint64_t size = 0;
  std::vector<InspectedTarget> targets;
};

// What to list: entries whose target is `target` (or, for AMD targets,
// `target` plus features: "gfx90a" takes "gfx90a:xnack+"), kernels for which
// `kernel` says yes. A target none of whose kernels pass is left out when a
// kernel filter is given. Entries a filter leaves out are not decoded.
struct InspectFilter {
  std::string target;  // "" for all; else exactly this target (target_matches)
  // Only entries the entry choice could take for this device (runs_on in
  // select.hpp): an sm_90 device runs sm_90a and sm_90 SASS and PTX up to
  // compute_90.
  std::optional<DeviceTarget> runs_on;
  std::function<bool(std::string_view)> kernel;  // empty for all
};

// FormatError when the bytes are no code object lrrt reads, or malformed.
// With `each`, every target is handed to it as soon as it is read and not
// kept in the result (a library of 10^4 entries streams); without, the
// result holds them all.
Inspection inspect_code_object(std::span<const std::byte> image, const InspectFilter& filter = {},
                               const std::function<void(InspectedTarget&&)>& each = {});
// Whether a target passes the target filter.
bool target_matches(std::string_view target, std::string_view filter);

}  // namespace lrrt::formats
