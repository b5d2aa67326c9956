// lrrt C++ wrapper: Queue and Event.
// One concept of lrrt/lrrt.hpp, the header to include.
#pragma once

#include <cstdint>

#include "lrrt/c/queue.h"
#include "lrrt/cpp/device.hpp"
#include "lrrt/cpp/error.hpp"
#include "lrrt/cpp/handle.hpp"

namespace lrrt {

class Queue {
 public:
  explicit Queue(Device device) {
    lr_queue_t* q = nullptr;
    check(lr_queue_create(device.get(), &q), "lr_queue_create");
    queue_ = Handle(q);
  }
  lr_queue_t* get() const { return queue_.get(); }
  void synchronize() const { check(lr_queue_synchronize(get()), "lr_queue_synchronize"); }

 private:
  using Handle = UniqueHandle<lr_queue_t, lr_queue_destroy>;
  Handle queue_;
};

class Event {
 public:
  explicit Event(Device device) {
    lr_event_t* e = nullptr;
    check(lr_event_create(device.get(), &e), "lr_event_create");
    event_ = Handle(e);
  }
  lr_event_t* get() const { return event_.get(); }
  void record() { check(lr_event_record(get()), "lr_event_record"); }
  void record(const Queue& queue) {
    check(lr_event_record_on_queue(get(), queue.get()), "lr_event_record_on_queue");
  }
  void synchronize() const { check(lr_event_synchronize(get()), "lr_event_synchronize"); }
  // Nanoseconds from start to this event.
  uint64_t elapsed_ns_since(const Event& start) const {
    uint64_t ns = 0;
    check(lr_event_elapsed_time_ns(start.get(), get(), &ns), "lr_event_elapsed_time_ns");
    return ns;
  }
  uint64_t duration_ns() const {
    uint64_t ns = 0;
    check(lr_event_duration_ns(get(), &ns), "lr_event_duration_ns");
    return ns;
  }

 private:
  using Handle = UniqueHandle<lr_event_t, lr_event_destroy>;
  Handle event_;
};

}  // namespace lrrt
