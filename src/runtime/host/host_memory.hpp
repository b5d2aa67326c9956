// The host backend's device memory, guarded at its end. A host kernel runs
// in lrrt's own process: without a guard, one that writes past a buffer
// corrupts lrrt's heap (an abort, a SIGSEGV far from the kernel) or, a few
// bytes past, nothing visible at all, and the run passes.
//
// Each allocation is its own mapping, laid out so the buffer ends where its
// last page ends, and a PROT_NONE guard follows (64 MiB of address space,
// one page where the process cannot spare that):
//
//   [ unused | buffer (256-byte aligned start) | canary ][ guard ]
//                                               < 256 B   PROT_NONE
//
// The buffer's start is 256-byte aligned (as GPU allocators give), so when
// the size is not a multiple of 256 up to 255 bytes of slack lie between its
// end and the guard. They hold a canary, checked after every launch
// (scan_and_repair). So an overrun either faults on the guard (the
// kernel-fault path, describe() names the allocation) or changes the canary;
// it is never silent. Cost per allocation: its pages rounded up, 64 MiB of
// address space for the guard (no memory behind it), and two kernel memory
// mappings (vm.max_map_count, 65530 by default, bounds live allocations to
// about 32 thousand).
//
// Not caught: a write that jumps over the whole guard into other memory, and
// writes before a buffer's start.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

namespace lrrt::rt::host {

class GuardedMemory {
 public:
  GuardedMemory();
  ~GuardedMemory();  // unmaps what is still allocated
  GuardedMemory(const GuardedMemory&) = delete;
  GuardedMemory& operator=(const GuardedMemory&) = delete;

  // LR_ERROR_OUT_OF_MEMORY naming `what` when the mapping fails.
  void* allocate(size_t size, const char* what);
  // Pointers not from allocate() are ignored.
  void free(void* ptr);

  // Checks every allocation's canary and rewrites those that changed (the
  // next launch is judged on its own). Returns a sentence naming the first
  // allocation whose canary changed ("the 4000-byte device allocation at
  // 0x7f..: 64 of the 96 bytes after its end were overwritten"), or "".
  std::string scan_and_repair();

  // Where an address lies relative to the allocation whose mapping holds it:
  // "the address lies 96 bytes after the end of the 4000-byte device
  // allocation at 0x7f..". An address in no allocation's mapping is placed
  // after the nearest allocation below it (saying so), "" when none is.
  std::string describe(const void* address) const;

  size_t page_size() const { return page_; }

 private:
  struct Block {
    std::byte* base = nullptr;  // of the mapping
    size_t mapped = 0;          // bytes mapped, the guard page included
    std::byte* start = nullptr;
    size_t size = 0;   // what was asked for
    size_t slack = 0;  // canary bytes after start + size
    const char* what = "";
  };
  static std::string name(const Block& b);

  size_t page_;
  mutable std::mutex mutex_;
  std::map<uintptr_t, Block> blocks_;  // by start
  size_t with_slack_ = 0;              // blocks whose canary is not empty
};

}  // namespace lrrt::rt::host
