#include "kernargs.hpp"

#include <algorithm>
#include <cstring>

#include "error.hpp"
#include "lrrt/formats/amdgpu.hpp"

namespace lrrt::rt::hsa {
namespace {

void put(std::span<std::byte> out, uint32_t offset, uint32_t size, uint64_t value) {
  if (size > 8 || uint64_t(offset) + size > out.size()) return;
  std::memcpy(out.data() + offset, &value, size);  // little-endian host
}

uint64_t hidden_value(std::string_view vk, const LaunchConfig& c, uint64_t printf_buffer) {
  auto axis = [&](std::string_view prefix, uint64_t x, uint64_t y, uint64_t z) -> int64_t {
    if (vk.size() != prefix.size() + 1 || vk.substr(0, prefix.size()) != prefix) return -1;
    char a = vk.back();
    return a == 'x' ? int64_t(x) : a == 'y' ? int64_t(y) : a == 'z' ? int64_t(z) : -1;
  };
  int64_t v;
  if ((v = axis("hidden_block_count_", c.grid.x, c.grid.y, c.grid.z)) >= 0) return uint64_t(v);
  if ((v = axis("hidden_group_size_", c.block.x, c.block.y, c.block.z)) >= 0) return uint64_t(v);
  // lrrt's grid counts whole workgroups, so no workgroup is partial.
  if ((v = axis("hidden_remainder_", 0, 0, 0)) >= 0) return 0;
  if ((v = axis("hidden_global_offset_", 0, 0, 0)) >= 0) return 0;
  if (vk == "hidden_grid_dims") return grid_dims(c);
  if (vk == "hidden_dynamic_lds_size") return c.dynamic_shared_bytes;
  if (vk == "hidden_printf_buffer") return printf_buffer;
  // hidden_none, and what lrrt does not provide: a kernel that lists a
  // service lrrt lacks is refused before it gets here (services.hpp).
  return 0;
}

}  // namespace

void check_explicit_args(const KernelInfo& info, size_t args_size) {
  uint32_t need = info.explicit_kernarg_size();
  uint32_t max = formats::amdgpu::max_explicit_args_size(info);
  if (args_size < need || args_size > max) {
    if (need == max)
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT,
                 "kernel '{}' takes {} bytes of explicit arguments ({} argument(s)), but {} bytes were passed",
                 info.name, need, info.explicit_arg_count(), args_size);
    LRRT_THROW(LR_ERROR_INVALID_ARGUMENT,
               "kernel '{}' takes {} bytes of explicit arguments ({} argument(s), up to {} with padding), but {} bytes were passed",
               info.name, need, info.explicit_arg_count(), max, args_size);
  }
}

uint16_t grid_dims(const LaunchConfig& c) {
  if (uint64_t(c.grid.z) * c.block.z > 1) return 3;
  if (uint64_t(c.grid.y) * c.block.y > 1) return 2;
  return 1;
}

void pack_kernargs(const KernelInfo& info, const LaunchConfig& config,
                   std::span<const std::byte> args, std::span<std::byte> out, uint64_t printf_buffer) {
  size_t total = std::max<size_t>(info.kernarg_size, args.size());
  if (out.size() < total)
    LRRT_THROW(LR_ERROR_RUNTIME, "kernarg buffer of {} bytes is too small for kernel '{}' ({} bytes)",
               out.size(), info.name, total);
  std::memcpy(out.data(), args.data(), args.size());
  std::memset(out.data() + args.size(), 0, total - args.size());
  for (const auto& a : info.args)
    if (a.kind == ArgKind::Hidden) put(out, a.offset, a.size, hidden_value(a.value_kind, config, printf_buffer));
}

}  // namespace lrrt::rt::hsa
