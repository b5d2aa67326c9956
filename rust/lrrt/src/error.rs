//! Errors: every failed C call becomes an `Error` with its status and
//! `lr_last_error_message`; checks the Rust side makes before a call (an
//! argument count, a slice too long) use the same type.
use std::ffi::CStr;
use std::fmt;

use lrrt_sys as sys;

/// `lr_status_t`, less `LR_SUCCESS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    InvalidArgument,
    NotInitialized,
    AlreadyInitialized,
    NotSupported,
    Runtime,
    OutOfMemory,
    InvalidImage,
    NotFound,
    KernelFault,
    Timeout,
    Unavailable,
    DeviceLost,
    Busy,
    /// A code this crate does not know (a newer liblrrt.so).
    Other(u32),
}

impl Status {
    pub fn from_raw(code: sys::lr_status_t) -> Option<Status> {
        Some(match code {
            sys::LR_SUCCESS => return None,
            sys::LR_ERROR_INVALID_ARGUMENT => Status::InvalidArgument,
            sys::LR_ERROR_NOT_INITIALIZED => Status::NotInitialized,
            sys::LR_ERROR_ALREADY_INITIALIZED => Status::AlreadyInitialized,
            sys::LR_ERROR_NOT_SUPPORTED => Status::NotSupported,
            sys::LR_ERROR_RUNTIME => Status::Runtime,
            sys::LR_ERROR_OUT_OF_MEMORY => Status::OutOfMemory,
            sys::LR_ERROR_INVALID_IMAGE => Status::InvalidImage,
            sys::LR_ERROR_NOT_FOUND => Status::NotFound,
            sys::LR_ERROR_KERNEL_FAULT => Status::KernelFault,
            sys::LR_ERROR_TIMEOUT => Status::Timeout,
            sys::LR_ERROR_UNAVAILABLE => Status::Unavailable,
            sys::LR_ERROR_DEVICE_LOST => Status::DeviceLost,
            sys::LR_ERROR_BUSY => Status::Busy,
            other => Status::Other(other),
        })
    }

    pub fn raw(self) -> sys::lr_status_t {
        match self {
            Status::InvalidArgument => sys::LR_ERROR_INVALID_ARGUMENT,
            Status::NotInitialized => sys::LR_ERROR_NOT_INITIALIZED,
            Status::AlreadyInitialized => sys::LR_ERROR_ALREADY_INITIALIZED,
            Status::NotSupported => sys::LR_ERROR_NOT_SUPPORTED,
            Status::Runtime => sys::LR_ERROR_RUNTIME,
            Status::OutOfMemory => sys::LR_ERROR_OUT_OF_MEMORY,
            Status::InvalidImage => sys::LR_ERROR_INVALID_IMAGE,
            Status::NotFound => sys::LR_ERROR_NOT_FOUND,
            Status::KernelFault => sys::LR_ERROR_KERNEL_FAULT,
            Status::Timeout => sys::LR_ERROR_TIMEOUT,
            Status::Unavailable => sys::LR_ERROR_UNAVAILABLE,
            Status::DeviceLost => sys::LR_ERROR_DEVICE_LOST,
            Status::Busy => sys::LR_ERROR_BUSY,
            Status::Other(code) => code,
        }
    }

    /// lr_status_string's name, "LR_ERROR_INVALID_ARGUMENT".
    pub fn name(self) -> String {
        // SAFETY: lr_status_string returns a static string for any code.
        unsafe { c_text(sys::lr_status_string(self.raw())) }
    }
}

/// A failed call: its status, the call ("lr_malloc", or a Rust-side
/// check such as "lrrt::Kernel::pack") and the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    status: Status,
    call: &'static str,
    message: String,
}

impl Error {
    pub fn new(status: Status, call: &'static str, message: impl Into<String>) -> Error {
        Error { status, call, message: message.into() }
    }
    pub(crate) fn invalid(call: &'static str, message: impl Into<String>) -> Error {
        Error::new(Status::InvalidArgument, call, message)
    }
    pub fn status(&self) -> Status {
        self.status
    }
    pub fn call(&self) -> &'static str {
        self.call
    }
    /// lr_last_error_message of the failed call (or the Rust check's own).
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed ({}): {}", self.call, self.status.name(), self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// Ok for LR_SUCCESS, else the status with this thread's last message.
pub(crate) fn check(code: sys::lr_status_t, call: &'static str) -> Result<()> {
    match Status::from_raw(code) {
        None => Ok(()),
        // SAFETY: lr_last_error_message returns this thread's NUL-terminated message.
        Some(status) => Err(Error::new(status, call, unsafe { c_text(sys::lr_last_error_message()) })),
    }
}

/// A C string the library owns, copied; "" for NULL.
pub(crate) unsafe fn c_text(p: *const std::os::raw::c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

/// A fixed char array of a C struct, up to its NUL.
pub(crate) fn array_text(chars: &[std::os::raw::c_char]) -> String {
    let bytes: Vec<u8> = chars.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}
