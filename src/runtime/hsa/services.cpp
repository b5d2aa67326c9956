#include "services.hpp"

#include <string_view>
#include <vector>

#include "error.hpp"

namespace lrrt::rt::hsa {
namespace {

// The hidden arguments kernargs.cpp fills with their real values (hidden_none
// marks a slot the kernel does not use: zero is right).
bool filled_by_lrrt(std::string_view vk) {
  for (std::string_view prefix : {"hidden_block_count_", "hidden_group_size_", "hidden_remainder_",
                                  "hidden_global_offset_"})
    if (vk.size() == prefix.size() + 1 && vk.substr(0, prefix.size()) == prefix &&
        (vk.back() == 'x' || vk.back() == 'y' || vk.back() == 'z'))
      return true;
  return vk == "hidden_grid_dims" || vk == "hidden_dynamic_lds_size" || vk == "hidden_none";
}

// The service a hidden argument stands for, in words, with its value kind and
// what uses it.
std::string describe(std::string_view vk, const KernelInfo& k) {
  if (vk == "hidden_hostcall_buffer")
    return "a hostcall buffer (hidden_hostcall_buffer, used by HIP printf and hostcall)";
  if (vk == "hidden_heap_v1") return "a device heap (hidden_heap_v1, used by device-side malloc and free)";
  if (vk == "hidden_multigrid_sync_arg")
    return "multi-grid synchronisation (hidden_multigrid_sync_arg, used by cooperative multi-device launches)";
  if (vk == "hidden_default_queue")
    return "a default device queue (hidden_default_queue, used by OpenCL device-side enqueue)";
  if (vk == "hidden_completion_action")
    return "a completion action (hidden_completion_action, used by OpenCL device-side enqueue)";
  if (vk == "hidden_queue_ptr")
    return "the address of its AQL queue (hidden_queue_ptr, used by __builtin_amdgcn_queue_ptr and by "
           "address-space casts on targets without aperture registers)";
  if (vk == "hidden_private_base" || vk == "hidden_shared_base")
    return fmt::format("the {} aperture base ({}, used by address-space casts on targets without aperture "
                       "registers)",
                       vk == "hidden_private_base" ? "private" : "shared", vk);
  if (vk == "hidden_printf_buffer")
    return fmt::format("a printf buffer in HIP's buffered format (hidden_printf_buffer in a kernel whose "
                       "language is {}, as clang's -mprintf-kind=buffered builds it; lrrt prints only "
                       "OpenCL C printf records)",
                       k.language.empty() ? "not recorded" : "'" + k.language + "'");
  return fmt::format("an implicit argument lrrt does not know ({})", vk);
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += i + 1 == items.size() ? " and " : ", ";
    out += items[i];
  }
  return out;
}

}  // namespace

KernelServices kernel_services(const KernelInfo& k) {
  KernelServices s;
  std::vector<std::string> missing;
  std::vector<std::string_view> seen;
  for (const auto& a : k.args) {
    if (a.kind != ArgKind::Hidden || filled_by_lrrt(a.value_kind)) continue;
    if (a.value_kind == "hidden_printf_buffer" && k.language == "OpenCL C") {
      s.printf_buffer = true;
      continue;
    }
    bool dup = false;
    for (std::string_view v : seen) dup = dup || v == a.value_kind;
    if (dup) continue;
    seen.push_back(a.value_kind);
    missing.push_back(describe(a.value_kind, k));
  }
  if (missing.empty()) return s;
  if (missing.size() == 1) {
    s.refusal = fmt::format("kernel '{}' needs {}; lrrt does not provide it", k.name, missing[0]);
  } else {
    s.refusal = fmt::format(
        "kernel '{}' needs {}; lrrt does not provide them (the metadata lists such arguments whenever the "
        "compiler could not prove the kernel does not use them: if it does not, build it with -O1 or higher "
        "and without calls to functions the compiler cannot see)",
        k.name, join(missing));
  }
  return s;
}

void check_services(const KernelServices& s) {
  if (!s.refusal.empty()) throw Error(LR_ERROR_NOT_SUPPORTED, s.refusal);
}

}  // namespace lrrt::rt::hsa
