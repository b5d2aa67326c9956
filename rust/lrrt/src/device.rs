//! The runtime (initialised once per process, never shut down: a handle may
//! be dropped on any thread at any time, and lr_shutdown must not race any
//! call) and devices.
use std::ffi::CString;
use std::sync::{Mutex, Once};

use lrrt_sys as sys;

use crate::error::{array_text, check, Error, Result};

static INIT: Once = Once::new();
static INIT_RESULT: Mutex<Option<Result<()>>> = Mutex::new(None);

/// Initialises every backend that can be loaded (lr_init), once per process;
/// later calls return the first call's result. Every constructor of this
/// crate calls it, so calling it yourself is only needed to see its error
/// first. The runtime then lives until the process exits.
pub fn init() -> Result<()> {
    INIT.call_once(|| {
        // SAFETY: lr_init takes no arguments; Once runs it before any other call of this crate.
        let r = match unsafe { sys::lr_init() } {
            sys::LR_ERROR_ALREADY_INITIALIZED => Ok(()), // initialised by C code of the same process
            code => check(code, "lr_init"),
        };
        *INIT_RESULT.lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
    });
    INIT_RESULT.lock().unwrap_or_else(|p| p.into_inner()).clone().expect("lr_init ran")
}

/// "0.1.0".
pub fn version() -> String {
    // SAFETY: a static string.
    unsafe { crate::error::c_text(sys::lr_version_string()) }
}

/// Longest any wait waits for device work before it fails with
/// `Status::Timeout` (0: forever). Process-wide, for waits that start later.
pub fn set_wait_timeout_ms(milliseconds: u64) -> Result<()> {
    // SAFETY: plain value.
    check(unsafe { sys::lr_set_wait_timeout_ms(milliseconds) }, "lr_set_wait_timeout_ms")
}

/// A backend lrrt knows: whether it is usable, and why not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendInfo {
    pub name: String,
    pub usable: bool,
    pub device_count: u32,
    pub message: String,
}

pub fn backends() -> Result<Vec<BackendInfo>> {
    init()?;
    let mut n = 0u32;
    // SAFETY: out-pointers to locals.
    check(unsafe { sys::lr_backend_count(&mut n) }, "lr_backend_count")?;
    (0..n)
        .map(|i| {
            let mut info: sys::lr_backend_info_t = unsafe { std::mem::zeroed() };
            check(unsafe { sys::lr_backend_get_info(i, &mut info) }, "lr_backend_get_info")?;
            Ok(BackendInfo {
                name: array_text(&info.name),
                usable: info.usable != 0,
                device_count: info.device_count,
                message: array_text(&info.message),
            })
        })
        .collect()
}

/// Devices of every backend: GPU backends first, host last.
pub fn device_count() -> Result<u32> {
    init()?;
    let mut n = 0u32;
    // SAFETY: out-pointer to a local.
    check(unsafe { sys::lr_device_count(&mut n) }, "lr_device_count")?;
    Ok(n)
}

/// lr_device_properties_t with Rust strings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceProperties {
    pub backend: String,
    pub name: String,
    pub arch: String,
    pub backend_ordinal: u32,
    pub compute_units: u32,
    pub wave_size: u32,
    pub max_workgroup_size: u32,
    pub max_workgroup_dims: [u32; 3],
    pub max_shared_memory_per_workgroup: u64,
    pub memory_bytes: u64,
}

/// lr_memory_stats_t: allocations, pinned host allocations and copies.
pub type MemoryStats = sys::lr_memory_stats_t;

/// A device: an index into lrrt's device list (lr_device_t), so Copy, Send
/// and Sync; it owns nothing. A device lrrt does not have makes each call
/// fail with a `Result`, never anything worse.
#[derive(Debug, Clone, Copy)]
pub struct Device {
    pub(crate) raw: sys::lr_device_t,
}

impl PartialEq for Device {
    fn eq(&self, other: &Device) -> bool {
        self.raw.index == other.raw.index
    }
}
impl Eq for Device {}
impl std::hash::Hash for Device {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.raw.index.hash(state)
    }
}

impl Device {
    /// backend "auto" (the first GPU, else host), "host", "hsa" or "cuda";
    /// ordinal counts that backend's devices.
    pub fn select(backend: &str, ordinal: u32) -> Result<Device> {
        init()?;
        let name = CString::new(backend)
            .map_err(|_| Error::invalid("lrrt::Device::select", format!("backend name {:?} holds a NUL", backend)))?;
        let mut raw = sys::lr_device_t { index: 0 };
        // SAFETY: a NUL-terminated string and an out-pointer to a local.
        check(unsafe { sys::lr_device_select(name.as_ptr(), ordinal, &mut raw) }, "lr_device_select")?;
        Ok(Device { raw })
    }

    /// Device `index` of lrrt's list (device_count()).
    pub fn open(index: u32) -> Result<Device> {
        init()?;
        let mut raw = sys::lr_device_t { index: 0 };
        // SAFETY: out-pointer to a local.
        check(unsafe { sys::lr_device_open(index, &mut raw) }, "lr_device_open")?;
        Ok(Device { raw })
    }

    pub fn index(&self) -> u32 {
        self.raw.index
    }

    pub fn properties(&self) -> Result<DeviceProperties> {
        let mut p: sys::lr_device_properties_t = unsafe { std::mem::zeroed() };
        // SAFETY: out-pointer to a local of the right type.
        check(unsafe { sys::lr_device_get_properties(self.raw, &mut p) }, "lr_device_get_properties")?;
        Ok(DeviceProperties {
            backend: array_text(&p.backend),
            name: array_text(&p.name),
            arch: array_text(&p.arch),
            backend_ordinal: p.backend_ordinal,
            compute_units: p.compute_units,
            wave_size: p.wave_size,
            max_workgroup_size: p.max_workgroup_size,
            max_workgroup_dims: [p.max_workgroup_dims.x, p.max_workgroup_dims.y, p.max_workgroup_dims.z],
            max_shared_memory_per_workgroup: p.max_shared_memory_per_workgroup,
            memory_bytes: p.memory_bytes,
        })
    }

    /// Backend-specific facts (driver version, clocks, ...) as key/value text.
    pub fn details(&self) -> Result<Vec<(String, String)>> {
        let mut n = 0u32;
        // SAFETY: out-pointer to a local.
        check(unsafe { sys::lr_device_detail_count(self.raw, &mut n) }, "lr_device_detail_count")?;
        (0..n)
            .map(|i| {
                let mut key = [0 as std::os::raw::c_char; 256];
                let mut value = [0 as std::os::raw::c_char; 1024];
                // SAFETY: buffers with their true sizes.
                check(
                    unsafe {
                        sys::lr_device_get_detail(self.raw, i, key.as_mut_ptr(), key.len(), value.as_mut_ptr(), value.len())
                    },
                    "lr_device_get_detail",
                )?;
                Ok((array_text(&key), array_text(&value)))
            })
            .collect()
    }

    pub fn memory_stats(&self) -> Result<MemoryStats> {
        let mut s: MemoryStats = unsafe { std::mem::zeroed() };
        // SAFETY: out-pointer to a local of the right type.
        check(unsafe { sys::lr_get_memory_stats(self.raw, &mut s) }, "lr_get_memory_stats")?;
        Ok(s)
    }

    /// Keeps live bytes, sets peaks to live and every counter to zero.
    pub fn reset_memory_stats(&self) -> Result<()> {
        // SAFETY: plain value.
        check(unsafe { sys::lr_reset_memory_stats(self.raw) }, "lr_reset_memory_stats")
    }

    /// Waits for all work enqueued on the device (every queue).
    pub fn synchronize(&self) -> Result<()> {
        // SAFETY: plain value.
        check(unsafe { sys::lr_synchronize(self.raw) }, "lr_synchronize")
    }
}
