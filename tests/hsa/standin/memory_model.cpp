// The memory model: what a dispatch writes, where the copy engine sees it,
// and when it lands in memory.
#include <cstdint>

#include "standin_internal.hpp"

namespace standin {

// A write-back L2 per agent, as strict as the hardware about what the copy
// engine sees (docs/backends/hsa.md "Memory model"). A dispatch runs on the
// host bytes; afterwards the bytes it changed in the GPU-pool allocations
// its kernarg buffer points to are dirty in the L2 that ran it, with the
// value memory held before ("old"). Until a release of sufficient scope
// writes them back:
//  - the copy engine reads the old value (SDMA reads memory, not the L2);
//  - a copy-engine write lands in memory, and the dirty bytes are written
//    back over it later (at the next release that covers that L2, at the
//    latest the replay's terminal system release): the copy's data is lost.
// Scopes: with one L2 (every target but gfx94x/gfx95x) only a system-scope
// release writes back; agent scope keeps the lines in the L2, which every
// dispatch of the agent shares. With several L2s (gfx942: one per XCD; two
// are modelled, dispatches alternate between them) agent scope writes the
// dispatch's L2 back (buffer_wbl2), and a barrier-AND's release writes back
// every L2, the most recently written first, so that of two L2s holding the
// same byte the older write lands last. Not modelled: stale reads through
// an L2 (acquire scopes have no effect here), and memory a kernel reaches
// other than through a pointer in its kernarg buffer (it is not cached).
struct Dirty {
  std::vector<std::byte> old_bytes, new_bytes;
  std::vector<uint8_t> mask;
};
struct L2Cache {
  std::map<uintptr_t, Dirty> lines;  // by allocation base
  uint64_t last_write = 0;           // the dispatch sequence number that last dirtied it
};
struct Snapshot {
  uintptr_t base = 0;
  size_t size = 0;
  std::vector<std::byte> bytes;
};
struct MemorySystem {
  std::mutex m;
  std::vector<L2Cache> l2 = std::vector<L2Cache>(1);
  uint64_t dispatches = 0;
  std::vector<Snapshot*> open;  // snapshots of dispatches running now
};
// Never destroyed, like State: a hung device's queue threads still write
// back their L2 while the process exits (a race with the destructor under TSan).
MemorySystem& memory() {
  static MemorySystem* s = new MemorySystem;
  return *s;
}
size_t l2_count_for(const std::string& isa) {
  return isa.rfind("gfx94", 0) == 0 || isa.rfind("gfx95", 0) == 0 ? 2 : 1;
}

// Host bytes changed by the memory system itself (a copy-engine write, a
// write-back) are not a running dispatch's writes: its snapshot follows.
void update_open_snapshots(MemorySystem& ms, uintptr_t dst, const std::byte* src, size_t size) {
  for (Snapshot* sn : ms.open) {
    uintptr_t lo = std::max(dst, sn->base), hi = std::min(dst + size, sn->base + sn->size);
    if (lo < hi) std::memcpy(sn->bytes.data() + (lo - sn->base), src + (lo - dst), hi - lo);
  }
}

void write_back(MemorySystem& ms, L2Cache& c) {
  for (auto& [base, d] : c.lines) {
    auto* mem = reinterpret_cast<std::byte*>(base);
    // Only bytes memory does not hold already: with one L2 a dispatch's
    // writes are in memory at once, and rewriting the same values raced (for
    // TSan) with kernels on other lanes reading them, which hardware never does.
    for (size_t i = 0; i < d.mask.size(); ++i)
      if (d.mask[i] && mem[i] != d.new_bytes[i]) mem[i] = d.new_bytes[i];
    update_open_snapshots(ms, base, mem, d.mask.size());
  }
  if (!c.lines.empty()) count("l2_write_backs");
  c.lines.clear();
}

// A release fence of `scope` by a dispatch that ran on L2 `which`, or by a
// barrier-AND (which = SIZE_MAX: every L2).
void release_fence(uint32_t scope, size_t which) {
  MemorySystem& ms = memory();
  std::lock_guard l(ms.m);
  const bool several = ms.l2.size() > 1;
  if (scope == HSA_FENCE_SCOPE_NONE || (!several && scope != HSA_FENCE_SCOPE_SYSTEM)) return;
  if (which < ms.l2.size()) {
    write_back(ms, ms.l2[which]);
    return;
  }
  std::vector<L2Cache*> order;
  for (auto& c : ms.l2) order.push_back(&c);
  std::sort(order.begin(), order.end(), [](L2Cache* a, L2Cache* b) { return a->last_write > b->last_write; });
  for (L2Cache* c : order) write_back(ms, *c);
}

// Dirty bytes of every L2 that overlap [p, p + size).
template <typename F>
void for_each_dirty(MemorySystem& ms, uintptr_t p, size_t size, F&& f) {
  for (auto& c : ms.l2)
    for (auto& [base, d] : c.lines) {
      uintptr_t lo = std::max(p, base), hi = std::min(p + size, base + d.mask.size());
      for (uintptr_t a = lo; a < hi; ++a)
        if (d.mask[a - base]) f(d, a - base, a - p);
    }
}

// The copy engine: reads memory (the old value of bytes dirty in an L2),
// writes memory (dirty bytes stay dirty, to be written back over it).
void engine_copy(void* dst, const void* src, size_t size) {
  MemorySystem& ms = memory();
  std::lock_guard l(ms.m);
  std::vector<std::byte> data(static_cast<const std::byte*>(src), static_cast<const std::byte*>(src) + size);
  for_each_dirty(ms, reinterpret_cast<uintptr_t>(src), size,
                 [&](Dirty& d, size_t at, size_t off) { data[off] = d.old_bytes[at]; });
  std::memcpy(dst, data.data(), size);
  for_each_dirty(ms, reinterpret_cast<uintptr_t>(dst), size,
                 [&](Dirty& d, size_t at, size_t off) { d.old_bytes[at] = data[off]; });
  update_open_snapshots(ms, reinterpret_cast<uintptr_t>(dst), data.data(), size);
}

// The GPU-pool allocations a dispatch can reach: those an aligned 64-bit
// word of its kernarg buffer points into.
std::vector<std::pair<uintptr_t, size_t>> reachable(const void* kernarg, size_t size) {
  std::vector<std::pair<uintptr_t, size_t>> out;
  if (!kernarg) return out;
  std::lock_guard l(state().mutex);
  const auto& allocs = state().device_allocations;
  for (size_t off = 0; off + 8 <= size; off += 8) {
    uint64_t v;
    std::memcpy(&v, static_cast<const std::byte*>(kernarg) + off, 8);
    auto it = allocs.upper_bound(uintptr_t(v));
    if (it == allocs.begin()) continue;
    --it;
    if (v < it->first || v >= it->first + it->second) continue;
    std::pair<uintptr_t, size_t> a{it->first, it->second};
    if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
  }
  return out;
}

DispatchWindow::DispatchWindow(const void* kernarg, size_t kernarg_size) {
  MemorySystem& ms = memory();
  auto reach = reachable(kernarg, kernarg_size);
  std::lock_guard l(ms.m);
  which = ms.dispatches++ % ms.l2.size();
  for (auto [base, size] : reach) {
    auto sn = std::make_unique<Snapshot>();
    sn->base = base;
    sn->size = size;
    auto* mem = reinterpret_cast<const std::byte*>(base);
    sn->bytes.assign(mem, mem + size);
    ms.open.push_back(sn.get());
    snaps.push_back(std::move(sn));
  }
}
void DispatchWindow::close(bool ran) {
  MemorySystem& ms = memory();
  std::lock_guard l(ms.m);
  for (auto& sn : snaps) {
    std::erase(ms.open, sn.get());
    if (!ran) continue;
    auto* mem = reinterpret_cast<const std::byte*>(sn->base);
    Dirty* d = nullptr;
    for (size_t i = 0; i < sn->size; ++i) {
      if (mem[i] == sn->bytes[i]) continue;
      if (!d) {
        d = &ms.l2[which].lines[sn->base];
        if (d->mask.empty()) {
          d->mask.assign(sn->size, 0);
          d->old_bytes.resize(sn->size);
          d->new_bytes.resize(sn->size);
        }
      }
      if (!d->mask[i]) {
        d->mask[i] = 1;
        d->old_bytes[i] = sn->bytes[i];
      }
      d->new_bytes[i] = mem[i];
    }
    if (d) ms.l2[which].last_write = ms.dispatches;
  }
  snaps.clear();
}
DispatchWindow::~DispatchWindow() { close(false); }

void configure_l2s(const std::string& isa) {
  std::lock_guard m(memory().m);
  memory().l2.assign(l2_count_for(isa), L2Cache{});
}

// A freed allocation's dirty bytes go with it.
void forget_dirty(uintptr_t base) {
  MemorySystem& ms = memory();
  std::lock_guard l(ms.m);
  for (auto& c : ms.l2) c.lines.erase(base);
}

}  // namespace standin
