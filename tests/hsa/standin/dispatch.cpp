// A kernel dispatch, run on the host by the processor thread: the host
// build of the kernel (its library found in the kernel folders), the
// geometry (hidden arguments or the packet), the faults injected at it, and
// the record tests read back.
#include <dirent.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <span>

#include "standin_internal.hpp"

#ifndef LRRT_STANDIN_DEFAULT_KERNEL_DIR
#define LRRT_STANDIN_DEFAULT_KERNEL_DIR ""
#endif

namespace standin {

// ------------------------------------------------------------ host kernels
namespace {
struct HostLib {
  void* handle;
  const lrrt_host_library_t* lib;
};
std::vector<HostLib>& host_libs() {
  static std::vector<HostLib> libs;
  return libs;
}
// One folder, or several separated by ':' (the conformance suite adds its
// test-only kernels' folder to the build's kernel folder).
std::vector<std::string> kernel_dirs() {
  // The folders named first, then the build's own kernels (lrrt itself
  // loads kernels of its own from there: `lrrt run`'s queue hold).
  std::string dirs = LRRT_STANDIN_DEFAULT_KERNEL_DIR;
  for (const char* env : {"LRRT_HSA_STANDIN_KERNEL_DIR", "LRRT_KERNEL_DIR"})
    if (const char* d = std::getenv(env); d && *d) {
      dirs = std::string(d) + ":" + dirs;
      break;
    }
  std::vector<std::string> out;
  for (size_t begin = 0; begin <= dirs.size();) {
    size_t end = dirs.find(':', begin);
    if (end == std::string::npos) end = dirs.size();
    if (end > begin) out.push_back(dirs.substr(begin, end - begin));
    begin = end + 1;
  }
  return out;
}
// Scans each kernel folder once: the folders named when a kernel is looked
// up, so a folder a later test adds to $LRRT_HSA_STANDIN_KERNEL_DIR is
// scanned at the first kernel not found in the folders scanned before.
std::mutex& host_libs_mutex() {
  static std::mutex m;
  return m;
}
void load_host_libs() {
  static std::vector<std::string> scanned;
  for (const std::string& dir : kernel_dirs()) {
    if (std::find(scanned.begin(), scanned.end(), dir) != scanned.end()) continue;
    scanned.push_back(dir);
    DIR* d = opendir(dir.c_str());
    if (!d) {
      std::fprintf(stderr, "hsa stand-in: cannot open kernel dir '%s'\n", dir.c_str());
      continue;
    }
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.size() < 8 || n.compare(n.size() - 8, 8, ".host.so") != 0) continue;
      std::string path = dir + "/" + n;
      void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!h) continue;
      auto q = reinterpret_cast<lrrt_host_library_query_fn_t>(dlsym(h, LRRT_HOST_LIBRARY_QUERY_SYMBOL));
      const lrrt_host_library_t* lib = q ? q(LRRT_HOST_ABI_VERSION) : nullptr;
      if (lib) host_libs().push_back({h, lib});
    }
    closedir(d);
  }
}
const lrrt_host_kernel_t* find_loaded(const std::string& name) {
  for (auto& l : host_libs())
    for (uint32_t i = 0; i < l.lib->kernel_count; ++i)
      if (name == l.lib->kernels[i].name) return &l.lib->kernels[i];
  return nullptr;
}
const lrrt_host_kernel_t* find_host_kernel(const std::string& name) {
  std::lock_guard lock(host_libs_mutex());
  if (const auto* k = find_loaded(name)) return k;
  load_host_libs();
  return find_loaded(name);
}
}  // namespace

// Runs a dispatch on the processor thread. Returns false when the queue
// failed.
bool run_dispatch(SQueue* q, const hsa_kernel_dispatch_packet_t& p, uint16_t header) {
  auto* k = reinterpret_cast<SKernel*>(p.kernel_object);
  lrrt_hsa_standin_dispatch_t rec{};
  std::snprintf(rec.kernel, sizeof rec.kernel, "%s", k ? k->info.name.c_str() : "?");
  rec.header = header;
  rec.setup = p.setup;
  rec.workgroup_size[0] = p.workgroup_size_x;
  rec.workgroup_size[1] = p.workgroup_size_y;
  rec.workgroup_size[2] = p.workgroup_size_z;
  rec.grid_size[0] = p.grid_size_x;
  rec.grid_size[1] = p.grid_size_y;
  rec.grid_size[2] = p.grid_size_z;
  rec.group_segment_size = p.group_segment_size;
  rec.private_segment_size = p.private_segment_size;
  if (!k) {
    queue_fail(q, HSA_STATUS_ERROR_INVALID_PACKET_FORMAT);
    return false;
  }
  uint32_t ksize = std::min<uint32_t>(k->info.kernarg_size, LRRT_STANDIN_MAX_KERNARG);
  rec.kernarg_size = ksize;
  if (p.kernarg_address) std::memcpy(rec.kernarg, p.kernarg_address, ksize);
  rec.explicit_size = k->info.explicit_kernarg_size();

  // Geometry: from the hidden arguments when the code object has them (a
  // v5 kernel reads its workgroup size there), else from the packet.
  uint32_t wg[3] = {p.workgroup_size_x, p.workgroup_size_y, p.workgroup_size_z};
  uint32_t count_[3];
  const uint32_t grid[3] = {p.grid_size_x, p.grid_size_y, p.grid_size_z};
  for (int d = 0; d < 3; ++d) count_[d] = wg[d] ? (grid[d] + wg[d] - 1) / wg[d] : 0;
  std::span<const std::byte> ka(static_cast<const std::byte*>(p.kernarg_address), ksize);
  static const char* kCount[] = {"hidden_block_count_x", "hidden_block_count_y", "hidden_block_count_z"};
  static const char* kSize[] = {"hidden_group_size_x", "hidden_group_size_y", "hidden_group_size_z"};
  for (int d = 0; d < 3; ++d) {
    uint64_t v;
    if (lrrt::formats::amdgpu::read_hidden_arg(k->info, ka, kSize[d], &v)) {
      rec.used_hidden_args = 1;
      if (v != wg[d]) rec.hidden_mismatch = 1;
      wg[d] = uint32_t(v);
    }
    if (lrrt::formats::amdgpu::read_hidden_arg(k->info, ka, kCount[d], &v)) {
      rec.used_hidden_args = 1;
      if (v != count_[d]) rec.hidden_mismatch = 1;
      count_[d] = uint32_t(v);
    }
  }

  Faults f = faults();
  {
    std::lock_guard l(state().mutex);
    state().dispatches.push_back(rec);
  }
  if (!f.queue_error_kernel.empty() && f.queue_error_kernel == k->info.name) {
    queue_fail(q, hsa_status_t(HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION));
    return false;
  }
  if (!f.hw_exception_kernel.empty() && f.hw_exception_kernel == k->info.name) {
    hw_exception(1, "injected hw_exception: the kernel hung and the GPU was reset");
    return false;
  }
  if (!f.vm_fault_kernel.empty() && f.vm_fault_kernel == k->info.name) {
    uint64_t address = 0;  // the first argument word: write_to_address's target
    if (p.kernarg_address) std::memcpy(&address, p.kernarg_address, 8);
    vm_fault(q, address, HSA_AMD_MEMORY_FAULT_PAGE_NOT_PRESENT, "injected vm_fault");
    return false;
  }
  // Scratch: the packet's private segment per work-item must hold the
  // kernel's fixed frames, and a kernel with a dynamic stack (recursion,
  // indirect calls) runs past them: given no more than its fixed size, its
  // stack overruns the scratch wave slot, which on the GPU is a memory
  // fault (or silent corruption of another wave's scratch).
  if (p.private_segment_size < k->info.private_segment_size ||
      (k->info.uses_dynamic_stack && p.private_segment_size <= k->info.private_segment_size)) {
    count("scratch_overruns");
    vm_fault(q, 0x7f0000000000ull + p.private_segment_size, HSA_AMD_MEMORY_FAULT_PAGE_NOT_PRESENT,
             "the kernel's stack overran its private segment");
    return false;
  }
  // Looked up once per kernel, by whichever queue runs it first.
  const lrrt_host_kernel_t* host = nullptr;
  {
    static std::mutex lookup_mutex;
    std::lock_guard l(lookup_mutex);
    if (!k->host) k->host = find_host_kernel(k->info.name);
    host = k->host;
  }
  if (!host) {
    std::string dirs;
    for (const auto& d : kernel_dirs()) dirs += (dirs.empty() ? "" : ", ") + d;
    std::fprintf(stderr, "hsa stand-in: no host build of kernel '%s' in %s\n", k->info.name.c_str(),
                 dirs.c_str());
    queue_fail(q, HSA_STATUS_ERROR_EXCEPTION);
    return false;
  }
  uint32_t dynamic = p.group_segment_size > k->info.group_segment_size
                         ? p.group_segment_size - k->info.group_segment_size
                         : 0;
  lrrt_host_dispatch_state_t ds{};
  for (int d = 0; d < 3; ++d) {
    ds.workgroup_size[d] = wg[d];
    ds.workgroup_count[d] = count_[d];
  }
  ds.kernargs = p.kernarg_address;
  ds.kernarg_size = rec.explicit_size;
  ds.dynamic_shared_bytes = dynamic;
  void* shared = dynamic ? std::aligned_alloc(64, (dynamic + 63) & ~63u) : nullptr;
  lrrt_host_workgroup_state_t ws{};
  ws.dynamic_shared = shared;
  int rc = 0;
  for (uint32_t z = 0; z < count_[2] && rc == 0; ++z)
    for (uint32_t y = 0; y < count_[1] && rc == 0; ++y)
      for (uint32_t x = 0; x < count_[0] && rc == 0; ++x) {
        ws.workgroup_id[0] = x;
        ws.workgroup_id[1] = y;
        ws.workgroup_id[2] = z;
        rc = host->entry(&ds, &ws);
      }
  std::free(shared);
  count("dispatches");
  if (rc != 0) {
    queue_fail(q, HSA_STATUS_ERROR_EXCEPTION);
    return false;
  }
  return true;
}

}  // namespace standin
