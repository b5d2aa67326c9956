// lrrt C++ wrapper: PinnedHostDoubleBuffer, pinned staging for a producer loop.
// One concept of lrrt/lrrt.hpp, the header to include.
#pragma once

#include <cstddef>
#include <span>

#include "lrrt/c/memory.h"
#include "lrrt/c/module.h"
#include "lrrt/cpp/device.hpp"
#include "lrrt/cpp/error.hpp"
#include "lrrt/cpp/memory.hpp"
#include "lrrt/cpp/module.hpp"
#include "lrrt/cpp/queue.hpp"

namespace lrrt {

// Two pinned staging buffers for a producer loop, three stages at once: the
// CPU fills one slot while the other slot's H2D copy runs on the device's
// copy queue and the kernel of the round before runs on the default queue.
//
//   PinnedHostDoubleBuffer db(device, bytes);
//   for (...) {
//     auto& slot = db.acquire();                      // waits until the slot's last copy has read it
//     fill(slot.host.data());
//     db.copy_to_device_async(slot, dst, n);          // H2D on the copy queue, after the slot's last work
//     db.launch_after_copy(slot, kernel, cfg, args);  // on the default queue, after this copy
//     db.mark_work_submitted(slot);                   // the slot's next copy waits for this work
//   }
//   db.finish();
//
// The copy waits only for the slot's own last work (which read the data the
// copy overwrites, when the destination alternates with the slot), not for
// every earlier dispatch, so it overlaps the other slot's kernel. A kernel
// launched with plain lr_launch after copy_to_device_async does not wait for
// the copy: launch it with launch_after_copy (or with slot.copied among its
// dependencies).
class PinnedHostDoubleBuffer {
 public:
  struct Slot {
    PinnedHostBuffer host;
    Event copied;  // completes when the slot's last copy has read `host`
    Event ready;   // completes when the work submitted after the slot's last copy is done
    bool copying = false, in_flight = false;
  };

  PinnedHostDoubleBuffer(Device device, size_t slot_bytes)
      : device_(device),
        slots_{Slot{PinnedHostBuffer(device, slot_bytes), Event(device), Event(device)},
               Slot{PinnedHostBuffer(device, slot_bytes), Event(device), Event(device)}} {}

  size_t slot_bytes() const { return slots_[0].host.size(); }

  Slot& acquire() {
    Slot& slot = slots_[next_];
    next_ ^= 1;
    if (slot.copying) {
      slot.copied.synchronize();
      slot.copying = false;
    }
    return slot;
  }
  void copy_to_device_async(Slot& slot, void* device_dst, size_t size) {
    if (size > slot.host.size()) throw Error(LR_ERROR_INVALID_ARGUMENT, "double buffer copy larger than slot");
    lr_event_t* after = slot.in_flight ? slot.ready.get() : nullptr;
    check(lr_memcpy_async_with_dependencies(device_.get(), device_dst, slot.host.data(), size,
                                            LR_MEMCPY_HOST_TO_DEVICE, slot.copied.get(), &after, after ? 1 : 0),
          "lr_memcpy_async_with_dependencies");
    slot.copying = true;
  }
  // The slot's kernel on the default queue, after the slot's copy.
  void launch_after_copy(Slot& slot, const Kernel& kernel, const LaunchConfig& config,
                         std::span<const std::byte> args) {
    lr_event_t* copy = slot.copied.get();
    check(lr_launch_with_dependencies(kernel.get(), &config, args.data(), args.size(), &copy, 1),
          "lr_launch_with_dependencies");
  }
  // Records the slot's `ready` after everything submitted so far on the
  // default queue: the slot's next copy waits for it. Its last record is
  // waited for first (two rounds back), so a record still pending is never
  // recorded again.
  void mark_work_submitted(Slot& slot) {
    if (slot.in_flight) slot.ready.synchronize();
    slot.ready.record();
    slot.in_flight = true;
  }
  void finish() {
    for (auto& slot : slots_) {
      if (slot.copying) slot.copied.synchronize();
      if (slot.in_flight) slot.ready.synchronize();
      slot.copying = slot.in_flight = false;
    }
    device_.synchronize();
  }

 private:
  Device device_;
  Slot slots_[2];
  unsigned next_ = 0;
};

}  // namespace lrrt
