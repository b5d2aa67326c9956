//! Queues and events.
use std::ptr::NonNull;

use lrrt_sys as sys;

use crate::device::Device;
use crate::error::{check, Error, Result};

/// A queue of the device (lr_queue_create; lr_queue_destroy on drop, which
/// waits for its work).
#[derive(Debug)]
pub struct Queue {
    raw: NonNull<sys::lr_queue_t>,
    device: Device,
}

// SAFETY: lrrt.h: one queue takes launches, copies and records from several
// threads at once; destroy happens in Drop, which has it to itself.
unsafe impl Send for Queue {}
unsafe impl Sync for Queue {}

impl Queue {
    pub fn new(device: Device) -> Result<Queue> {
        crate::init()?;
        let mut q: *mut sys::lr_queue_t = std::ptr::null_mut();
        // SAFETY: out-pointer to a local.
        check(unsafe { sys::lr_queue_create(device.raw, &mut q) }, "lr_queue_create")?;
        let raw = NonNull::new(q).ok_or_else(|| Error::invalid("lr_queue_create", "returned no queue"))?;
        Ok(Queue { raw, device })
    }
    pub fn device(&self) -> Device {
        self.device
    }
    /// Waits for the work submitted to this queue.
    pub fn synchronize(&self) -> Result<()> {
        // SAFETY: a live queue.
        check(unsafe { sys::lr_queue_synchronize(self.raw.as_ptr()) }, "lr_queue_synchronize")
    }
    pub(crate) fn raw(&self) -> *mut sys::lr_queue_t {
        self.raw.as_ptr()
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        // SAFETY: a live queue, destroyed once.
        let _ = unsafe { sys::lr_queue_destroy(self.raw.as_ptr()) };
    }
}

/// A marker in a queue's work (lr_event_create; lr_event_destroy on drop,
/// which waits for it). Recording takes `&mut self`: lrrt.h makes recording
/// while another thread records, waits for or depends on the same event a
/// race, and the borrow rules exclude exactly that.
#[derive(Debug)]
pub struct Event {
    raw: NonNull<sys::lr_event_t>,
    device: Device,
}

// SAFETY: as Queue; the one race lrrt.h names is excluded by `&mut self` on record.
unsafe impl Send for Event {}
unsafe impl Sync for Event {}

impl Event {
    pub fn new(device: Device) -> Result<Event> {
        crate::init()?;
        let mut e: *mut sys::lr_event_t = std::ptr::null_mut();
        // SAFETY: out-pointer to a local.
        check(unsafe { sys::lr_event_create(device.raw, &mut e) }, "lr_event_create")?;
        let raw = NonNull::new(e).ok_or_else(|| Error::invalid("lr_event_create", "returned no event"))?;
        Ok(Event { raw, device })
    }
    pub fn device(&self) -> Device {
        self.device
    }
    /// A marker after the work submitted so far to the device's default queue.
    pub fn record(&mut self) -> Result<()> {
        // SAFETY: a live event, borrowed exclusively.
        check(unsafe { sys::lr_event_record(self.raw.as_ptr()) }, "lr_event_record")
    }
    /// A marker after the work submitted so far to `queue`.
    pub fn record_on(&mut self, queue: &Queue) -> Result<()> {
        // SAFETY: a live event (exclusively) and a live queue.
        check(unsafe { sys::lr_event_record_on_queue(self.raw.as_ptr(), queue.raw()) }, "lr_event_record_on_queue")
    }
    /// Waits for the recorded marker.
    pub fn synchronize(&self) -> Result<()> {
        // SAFETY: a live event.
        check(unsafe { sys::lr_event_synchronize(self.raw.as_ptr()) }, "lr_event_synchronize")
    }
    /// Nanoseconds from this completed marker to `end`.
    pub fn elapsed_ns(&self, end: &Event) -> Result<u64> {
        let mut ns = 0u64;
        // SAFETY: two live events and an out-pointer.
        check(unsafe { sys::lr_event_elapsed_time_ns(self.raw.as_ptr(), end.raw.as_ptr(), &mut ns) }, "lr_event_elapsed_time_ns")?;
        Ok(ns)
    }
    /// Execution time of the one operation that completed the event.
    pub fn duration_ns(&self) -> Result<u64> {
        let mut ns = 0u64;
        // SAFETY: a live event and an out-pointer.
        check(unsafe { sys::lr_event_duration_ns(self.raw.as_ptr(), &mut ns) }, "lr_event_duration_ns")?;
        Ok(ns)
    }
    pub(crate) fn raw(&self) -> *mut sys::lr_event_t {
        self.raw.as_ptr()
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: a live event, destroyed once.
        let _ = unsafe { sys::lr_event_destroy(self.raw.as_ptr()) };
    }
}
