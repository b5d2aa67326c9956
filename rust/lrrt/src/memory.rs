//! Device buffers and pinned host buffers, typed, freed on drop.
//!
//! Device memory is never seen as a Rust slice: it is read and written only
//! through lrrt's calls, and the synchronous copies here wait for the
//! device's pending work first (lr_memcpy covers the whole device), so a
//! copy never races a kernel. That is why copies into a `DeviceBuffer` take
//! `&self`: a graph may hold a shared borrow of a buffer for as long as it
//! replays, and the host still refills its inputs between replays.
use std::marker::PhantomData;
use std::os::raw::c_void;
use std::ptr::NonNull;

use lrrt_sys as sys;

use crate::device::Device;
use crate::error::{check, Error, Result};

/// Plain data: any bit pattern is a valid value and there is no padding,
/// so bytes from the device can be read as `Self`.
///
/// # Safety
/// Implement only for types that satisfy that (the crate does for the
/// primitive numbers).
pub unsafe trait Pod: Copy + Send + Sync + 'static {}
macro_rules! pod {
    ($($t:ty)*) => { $(unsafe impl Pod for $t {})* };
}
pod!(u8 u16 u32 u64 i8 i16 i32 i64 f32 f64 usize isize);

fn byte_size<T>(len: usize, call: &'static str) -> Result<usize> {
    len.checked_mul(std::mem::size_of::<T>())
        .ok_or_else(|| Error::invalid(call, format!("{} elements of {} bytes overflow usize", len, std::mem::size_of::<T>())))
}

fn check_fits(call: &'static str, what: &str, needed: usize, held: usize) -> Result<()> {
    if needed > held {
        return Err(Error::invalid(
            call,
            format!("{} has {} elements but the copy needs {}", what, held, needed),
        ));
    }
    Ok(())
}

/// `len` elements of `T` in device memory (lr_malloc; lr_free on drop, which
/// waits for the device's pending work first).
#[derive(Debug)]
pub struct DeviceBuffer<T: Pod> {
    device: Device,
    ptr: NonNull<c_void>,
    len: usize,
    _element: PhantomData<T>,
}

// SAFETY: the handle is an address; lrrt's calls on it may come from any
// thread (lrrt.h, "Threads"), and lr_free in Drop cannot race another use
// because Drop has the buffer to itself.
unsafe impl<T: Pod> Send for DeviceBuffer<T> {}
unsafe impl<T: Pod> Sync for DeviceBuffer<T> {}

impl<T: Pod> DeviceBuffer<T> {
    /// Uninitialised (whatever the device memory held).
    pub fn new(device: Device, len: usize) -> Result<DeviceBuffer<T>> {
        crate::init()?;
        let bytes = byte_size::<T>(len, "lrrt::DeviceBuffer::new")?;
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: out-pointer to a local.
        check(unsafe { sys::lr_malloc(device.raw, bytes, &mut p) }, "lr_malloc")?;
        let ptr = NonNull::new(p).ok_or_else(|| Error::invalid("lr_malloc", format!("returned NULL for {} bytes", bytes)))?;
        Ok(DeviceBuffer { device, ptr, len, _element: PhantomData })
    }

    /// A buffer holding a copy of `data`.
    pub fn from_slice(device: Device, data: &[T]) -> Result<DeviceBuffer<T>> {
        let b = DeviceBuffer::new(device, data.len())?;
        b.copy_from_slice(data)?;
        Ok(b)
    }

    pub fn device(&self) -> Device {
        self.device
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn size_bytes(&self) -> usize {
        self.len * std::mem::size_of::<T>()
    }
    /// The device address (for a C call or a kernel argument built by hand).
    pub fn as_ptr(&self) -> *const c_void {
        self.ptr.as_ptr()
    }

    /// Writes `src` to the first `src.len()` elements; a slice longer than
    /// the buffer is an error. Waits for the device's pending work first.
    pub fn copy_from_slice(&self, src: &[T]) -> Result<()> {
        check_fits("lrrt::DeviceBuffer::copy_from_slice", "the device buffer", src.len(), self.len)?;
        // SAFETY: src is valid for its bytes, the buffer holds at least as many.
        check(
            unsafe {
                sys::lr_memcpy(
                    self.device.raw,
                    self.ptr.as_ptr(),
                    src.as_ptr() as *const c_void,
                    std::mem::size_of_val(src),
                    sys::LR_MEMCPY_HOST_TO_DEVICE,
                )
            },
            "lr_memcpy",
        )
    }

    /// Reads the first `dst.len()` elements; a slice longer than the buffer
    /// is an error. Waits for the device's pending work first.
    pub fn copy_to_slice(&self, dst: &mut [T]) -> Result<()> {
        check_fits("lrrt::DeviceBuffer::copy_to_slice", "the device buffer", dst.len(), self.len)?;
        // SAFETY: dst is valid for writes of its bytes, the buffer holds at least as many.
        check(
            unsafe {
                sys::lr_memcpy(
                    self.device.raw,
                    dst.as_mut_ptr() as *mut c_void,
                    self.ptr.as_ptr(),
                    std::mem::size_of_val(dst),
                    sys::LR_MEMCPY_DEVICE_TO_HOST,
                )
            },
            "lr_memcpy",
        )
    }

    pub fn to_vec(&self) -> Result<Vec<T>> {
        // SAFETY: all-zero bytes are a valid value of every Pod type.
        let mut v = vec![unsafe { std::mem::zeroed::<T>() }; self.len];
        self.copy_to_slice(&mut v)?;
        Ok(v)
    }

    /// Copies the first `count` elements of `src` (device to device).
    pub fn copy_from_buffer(&self, src: &DeviceBuffer<T>, count: usize) -> Result<()> {
        check_fits("lrrt::DeviceBuffer::copy_from_buffer", "the destination buffer", count, self.len)?;
        check_fits("lrrt::DeviceBuffer::copy_from_buffer", "the source buffer", count, src.len)?;
        // SAFETY: both buffers hold at least count elements.
        check(
            unsafe {
                sys::lr_memcpy(
                    self.device.raw,
                    self.ptr.as_ptr(),
                    src.ptr.as_ptr(),
                    count * std::mem::size_of::<T>(),
                    sys::LR_MEMCPY_DEVICE_TO_DEVICE,
                )
            },
            "lr_memcpy",
        )
    }

    /// Reads pinned host memory (a synchronous copy, like copy_from_slice).
    pub fn copy_from_pinned(&self, src: &PinnedBuffer<T>) -> Result<()> {
        self.copy_from_slice(src.as_slice())
    }
}

impl<T: Pod> Drop for DeviceBuffer<T> {
    fn drop(&mut self) {
        // A failure (a timed-out wait) keeps the memory allocated: lrrt.h.
        // SAFETY: the pointer came from lr_malloc on this device and is freed once.
        let _ = unsafe { sys::lr_free(self.device.raw, self.ptr.as_ptr()) };
    }
}

/// `len` elements of page-locked host memory the device reaches directly
/// (lr_host_malloc; lr_host_free on drop), zeroed, seen as a slice. The
/// safe API hands it to the device only through calls that wait
/// (DeviceBuffer's copies) or that order the host's writes against the
/// device's reads (`PinnedHostDoubleBuffer`): a slice borrow never races the
/// device.
#[derive(Debug)]
pub struct PinnedBuffer<T: Pod> {
    device: Device,
    ptr: NonNull<T>,
    len: usize,
}

// SAFETY: as DeviceBuffer; the slice view follows Rust's borrow rules.
unsafe impl<T: Pod> Send for PinnedBuffer<T> {}
unsafe impl<T: Pod> Sync for PinnedBuffer<T> {}

impl<T: Pod> PinnedBuffer<T> {
    pub fn new(device: Device, len: usize) -> Result<PinnedBuffer<T>> {
        crate::init()?;
        let bytes = byte_size::<T>(len, "lrrt::PinnedBuffer::new")?;
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: out-pointer to a local.
        check(unsafe { sys::lr_host_malloc(device.raw, bytes.max(1), &mut p) }, "lr_host_malloc")?;
        let ptr = NonNull::new(p as *mut T)
            .ok_or_else(|| Error::invalid("lr_host_malloc", format!("returned NULL for {} bytes", bytes)))?;
        if ptr.as_ptr() as usize % std::mem::align_of::<T>() != 0 {
            // SAFETY: allocated above, freed once.
            unsafe { sys::lr_host_free(device.raw, p) };
            return Err(Error::invalid("lr_host_malloc", "returned memory not aligned for the element type"));
        }
        // SAFETY: bytes are writable; zero is a valid Pod value.
        unsafe { std::ptr::write_bytes(p as *mut u8, 0, bytes) };
        Ok(PinnedBuffer { device, ptr, len })
    }
    pub fn device(&self) -> Device {
        self.device
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn as_slice(&self) -> &[T] {
        // SAFETY: len initialised elements, borrowed with self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: as above, exclusively.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
    /// Fills the first `count` elements from a device buffer (synchronous).
    pub fn copy_from_buffer(&mut self, src: &DeviceBuffer<T>, count: usize) -> Result<()> {
        check_fits("lrrt::PinnedBuffer::copy_from_buffer", "the pinned buffer", count, self.len)?;
        src.copy_to_slice(&mut self.as_mut_slice()[..count])
    }
    pub(crate) fn as_raw(&self) -> *mut c_void {
        self.ptr.as_ptr() as *mut c_void
    }
}

impl<T: Pod> Drop for PinnedBuffer<T> {
    fn drop(&mut self) {
        // SAFETY: the pointer came from lr_host_malloc on this device and is freed once.
        let _ = unsafe { sys::lr_host_free(self.device.raw, self.ptr.as_ptr() as *mut c_void) };
    }
}
