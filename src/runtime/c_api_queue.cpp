// The C ABI's queues and events (lr_queue_*, lr_event_*): create, destroy,
// record, synchronize and time them. Shared helpers: c_api_support.hpp.
#include "c_api_support.hpp"

using namespace lrrt::c_api;

extern "C" {

lr_status_t lr_queue_create(lr_device_t device, lr_queue_t** queue) {
  return create_on_device("lr_queue_create", device, queue, "queue", &Runtime::create_queue);
}

lr_status_t lr_queue_destroy(lr_queue_t* queue) {
  return guard("lr_queue_destroy", [&] { rt().destroy_queue(queue); });
}

lr_status_t lr_queue_synchronize(lr_queue_t* queue) {
  return guard("lr_queue_synchronize", [&] {
    Runtime& r = rt();
    r.check_queue(queue);
    r.synchronize_tracked(*queue->device, *queue->queue, queue->submissions);
  });
}

lr_status_t lr_event_create(lr_device_t device, lr_event_t** event) {
  return create_on_device("lr_event_create", device, event, "event", &Runtime::create_event);
}

lr_status_t lr_event_destroy(lr_event_t* event) {
  return guard("lr_event_destroy", [&] { rt().destroy_event(event); });
}

lr_status_t lr_event_record(lr_event_t* event) {
  return guard("lr_event_record", [&] {
    rt().check_event(event);
    {
      lrrt::rt::SubmitScope submitted(event->device->default_queue_submissions);
      event->device->default_queue->record(*event->event);
    }
    event->recorded.store(true);
  });
}

lr_status_t lr_event_record_on_queue(lr_event_t* event, lr_queue_t* queue) {
  return guard("lr_event_record_on_queue", [&] {
    Runtime& r = rt();
    r.check_event(event);
    r.check_queue(queue);
    if (event->device != queue->device)
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "event and queue belong to different devices");
    {
      lrrt::rt::SubmitScope submitted(queue->submissions);
      queue->queue->record(*event->event);
    }
    event->recorded.store(true);
  });
}

lr_status_t lr_event_synchronize(lr_event_t* event) {
  return guard("lr_event_synchronize", [&] {
    rt().check_event(event);
    if (event->recorded.load()) event->event->synchronize();
  });
}

lr_status_t lr_event_elapsed_time_ns(const lr_event_t* start, const lr_event_t* end, uint64_t* elapsed_ns) {
  return guard("lr_event_elapsed_time_ns", [&] {
    require(elapsed_ns, "elapsed_ns");
    Runtime& r = rt();
    r.check_event(start);
    r.check_event(end);
    if (!start->recorded.load() || !end->recorded.load())
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "both events must be recorded before timing them");
    if (start->device != end->device)
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "events belong to different devices");
    *elapsed_ns = end->event->elapsed_ns_since(*start->event);
  });
}

lr_status_t lr_event_duration_ns(const lr_event_t* event, uint64_t* duration_ns) {
  return guard("lr_event_duration_ns", [&] {
    require(duration_ns, "duration_ns");
    rt().check_event(event);
    if (!event->recorded.load())
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "event has not signalled any operation");
    try {
      *duration_ns = event->event->duration_ns();
    } catch (const std::logic_error& e) {
      LRRT_THROW(LR_ERROR_NOT_SUPPORTED, "this backend cannot time single operations: {}", e.what());
    }
  });
}

}  // extern "C"
