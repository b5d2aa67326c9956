//! Two pinned staging slots for a producer loop (lrrt.hpp's
//! PinnedHostDoubleBuffer): the CPU fills one slot while the other slot's
//! host-to-device copy runs on the copy queue and the kernel of the round
//! before runs on the default queue.
//!
//! ```no_run
//! # fn main() -> lrrt::Result<()> {
//! # let device = lrrt::Device::select("host", 0)?;
//! # let module = lrrt::Module::from_file(device, "build/kernels/saxpy.host.so")?;
//! # let kernel = module.kernel("saxpy")?;
//! # let (x, y) = (lrrt::DeviceBuffer::<f32>::new(device, 1024)?, lrrt::DeviceBuffer::<f32>::new(device, 1024)?);
//! let mut db = lrrt::PinnedHostDoubleBuffer::<f32>::new(device, 1024)?;
//! for round in 0..8 {
//!     let mut slot = db.acquire()?;              // waits until the slot's last copy read it
//!     slot.fill(round as f32);                   // the CPU writes the slot
//!     let copying = slot.copy_to_device(&x, 1024)?; // H2D on the copy queue; the slot is no longer writable
//!     copying.launch_after_copy(&kernel, &lrrt::LaunchConfig::cover(1024, 256), &lrrt::args![2.0f32, &x, &y, 1024u32])?;
//!     copying.mark_work_submitted()?;            // the slot's next copy waits for this work
//! }
//! db.finish()?;
//! # Ok(()) }
//! ```
//!
//! The types enforce the order lrrt.hpp documents: the host slice is
//! reachable only between `acquire` (after the slot's last copy read it) and
//! `copy_to_device`, which consumes the writer.
use std::ops::{Deref, DerefMut};
use std::os::raw::c_void;

use lrrt_sys as sys;

use crate::device::Device;
use crate::error::{check, Error, Result};
use crate::memory::{DeviceBuffer, PinnedBuffer, Pod};
use crate::module::{Arg, Kernel, LaunchConfig};
use crate::sync::Event;

struct Slot<T: Pod> {
    host: PinnedBuffer<T>,
    copied: Event, // completes when the slot's last copy has read `host`
    ready: Event,  // completes when the work submitted after the slot's last copy is done
    copying: bool,
    in_flight: bool,
}

/// See the module documentation.
pub struct PinnedHostDoubleBuffer<T: Pod> {
    device: Device,
    slots: [Slot<T>; 2],
    next: usize,
}

impl<T: Pod> PinnedHostDoubleBuffer<T> {
    pub fn new(device: Device, slot_len: usize) -> Result<PinnedHostDoubleBuffer<T>> {
        let slot = || -> Result<Slot<T>> {
            Ok(Slot {
                host: PinnedBuffer::new(device, slot_len)?,
                copied: Event::new(device)?,
                ready: Event::new(device)?,
                copying: false,
                in_flight: false,
            })
        };
        Ok(PinnedHostDoubleBuffer { device, slots: [slot()?, slot()?], next: 0 })
    }

    pub fn slot_len(&self) -> usize {
        self.slots[0].host.len()
    }

    /// The next slot, once its last copy has read it: its host memory is
    /// writable through the returned writer.
    pub fn acquire(&mut self) -> Result<SlotWriter<'_, T>> {
        let slot = &mut self.slots[self.next];
        self.next ^= 1;
        if slot.copying {
            slot.copied.synchronize()?;
            slot.copying = false;
        }
        Ok(SlotWriter { device: self.device, slot })
    }

    /// Waits for every copy and every marked round, then for the device.
    pub fn finish(&mut self) -> Result<()> {
        for slot in &mut self.slots {
            if slot.copying {
                slot.copied.synchronize()?;
            }
            if slot.in_flight {
                slot.ready.synchronize()?;
            }
            slot.copying = false;
            slot.in_flight = false;
        }
        self.device.synchronize()
    }
}

/// A slot the host may write (Deref to its slice).
pub struct SlotWriter<'d, T: Pod> {
    device: Device,
    slot: &'d mut Slot<T>,
}

impl<T: Pod> Deref for SlotWriter<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.slot.host.as_slice()
    }
}
impl<T: Pod> DerefMut for SlotWriter<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        self.slot.host.as_mut_slice()
    }
}

impl<'d, T: Pod> SlotWriter<'d, T> {
    /// Copies the slot's first `count` elements to `dst` on the copy queue,
    /// after the slot's last marked work (not after every dispatch), and
    /// gives the slot up until the next `acquire` of it.
    pub fn copy_to_device(self, dst: &DeviceBuffer<T>, count: usize) -> Result<SlotCopying<'d, T>> {
        for (what, len) in [("the slot", self.slot.host.len()), ("the device buffer", dst.len())] {
            if count > len {
                return Err(Error::invalid(
                    "lrrt::PinnedHostDoubleBuffer::copy_to_device",
                    format!("{} has {} elements but the copy needs {}", what, len, count),
                ));
            }
        }
        let slot = self.slot;
        let after: *mut sys::lr_event_t = if slot.in_flight { slot.ready.raw() } else { std::ptr::null_mut() };
        // SAFETY: both ranges hold count elements; the pinned slot is not
        // reachable from Rust until the copy has read it (acquire waits for
        // `copied`), and lr_host_free / lr_free on drop wait for the device.
        check(
            unsafe {
                sys::lr_memcpy_async_with_dependencies(
                    self.device.raw,
                    dst.as_ptr() as *mut c_void,
                    slot.host.as_raw(),
                    count * std::mem::size_of::<T>(),
                    sys::LR_MEMCPY_HOST_TO_DEVICE,
                    slot.copied.raw(),
                    &after,
                    if after.is_null() { 0 } else { 1 },
                )
            },
            "lr_memcpy_async_with_dependencies",
        )?;
        slot.copying = true;
        Ok(SlotCopying { slot })
    }
}

/// A slot whose copy was submitted.
pub struct SlotCopying<'d, T: Pod> {
    slot: &'d mut Slot<T>,
}

impl<T: Pod> SlotCopying<'_, T> {
    /// The slot's kernel on the default queue, after the slot's copy.
    pub fn launch_after_copy(&self, kernel: &Kernel<'_>, config: &LaunchConfig, args: &[Arg<'_>]) -> Result<()> {
        kernel.launch_after(config, args, &[&self.slot.copied])
    }

    /// Records the slot's `ready` after everything submitted so far on the
    /// default queue: the slot's next copy waits for it. Its previous record
    /// is waited for first, so a pending record is never recorded again.
    pub fn mark_work_submitted(self) -> Result<()> {
        if self.slot.in_flight {
            self.slot.ready.synchronize()?;
        }
        self.slot.ready.record()?;
        self.slot.in_flight = true;
        Ok(())
    }
}
