//! Memory lrrt did not allocate, declared to a device so that its graphs
//! accept it (lr_memory_register).
use std::marker::PhantomData;
use std::os::raw::c_void;

use lrrt_sys as sys;

use crate::device::Device;
use crate::error::{check, Result};
use crate::memory::Pod;
use crate::module::Arg;

/// A registered range (lr_memory_unregister on drop, after waiting for the
/// device's pending work, as lr_free does; when that wait times out the
/// process aborts rather than hand back memory a hung kernel may write). Registering a slice borrows it
/// mutably for `'m`: Rust cannot touch the memory while the device may, and a
/// graph that uses it borrows the registration, so it cannot outlive it.
#[derive(Debug)]
pub struct MemoryRegistration<'m> {
    device: Device,
    ptr: *mut c_void,
    bytes: usize,
    _memory: PhantomData<&'m mut [u8]>,
}

// SAFETY: an address and a size; lrrt's calls may come from any thread and
// Drop has the registration to itself.
unsafe impl Send for MemoryRegistration<'_> {}
unsafe impl Sync for MemoryRegistration<'_> {}

impl<'m> MemoryRegistration<'m> {
    /// Host memory the device reaches directly (any host memory on the host
    /// backend; lrrt does not check reachability, a GPU faults on memory it
    /// cannot reach). The slice stays borrowed until the registration drops.
    pub fn new<T: Pod>(device: Device, memory: &'m mut [T]) -> Result<MemoryRegistration<'m>> {
        // SAFETY: the slice is valid for its bytes and exclusively borrowed for 'm.
        unsafe { MemoryRegistration::register(device, memory.as_mut_ptr() as *mut c_void, std::mem::size_of_val(memory)) }
    }

    /// Memory of another allocator (a CUDA allocation of another runtime, a
    /// mapped buffer).
    ///
    /// # Safety
    /// [ptr, ptr + bytes) must stay allocated and unused by Rust code while
    /// the registration, or any graph or launch that uses it, lives.
    pub unsafe fn from_raw(device: Device, ptr: *mut c_void, bytes: usize) -> Result<MemoryRegistration<'static>> {
        MemoryRegistration::register(device, ptr, bytes)
    }

    unsafe fn register<'x>(device: Device, ptr: *mut c_void, bytes: usize) -> Result<MemoryRegistration<'x>> {
        crate::init()?;
        check(sys::lr_memory_register(device.raw, ptr, bytes), "lr_memory_register")?;
        Ok(MemoryRegistration { device, ptr, bytes, _memory: PhantomData })
    }

    pub fn device(&self) -> Device {
        self.device
    }
    pub fn as_ptr(&self) -> *const c_void {
        self.ptr
    }
    pub fn size_bytes(&self) -> usize {
        self.bytes
    }
}

impl<'a> From<&'a MemoryRegistration<'_>> for Arg<'a> {
    /// The range's start as a pointer argument.
    fn from(m: &'a MemoryRegistration<'_>) -> Arg<'a> {
        // SAFETY: the address is registered memory, borrowed for 'a.
        unsafe { Arg::raw_pointer(m.ptr as u64) }
    }
}

impl Drop for MemoryRegistration<'_> {
    fn drop(&mut self) {
        // The device may still be running work that uses the range: wait
        // first, so the slice borrow ends only when the device is done. A wait
        // that fails (a hung kernel past the wait limit may still write the
        // range) cannot give the memory back to Rust: the process aborts.
        // SAFETY: a registered range, unregistered once.
        unsafe {
            let waited = crate::error::check(sys::lr_synchronize(self.device.raw), "lr_synchronize");
            if let Err(e) = waited {
                if e.status() == crate::Status::Timeout || e.status() == crate::Status::DeviceLost {
                    eprintln!("lrrt: a registered range cannot be released while the device may still write it: {}", e);
                    std::process::abort();
                }
            }
            let _ = sys::lr_memory_unregister(self.device.raw, self.ptr);
        }
    }
}
