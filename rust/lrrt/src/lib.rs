//! lrrt from Rust: the safe counterpart of `include/lrrt/lrrt.hpp` and the
//! Python package, over liblrrt.so's C ABI (`lrrt-sys`). docs/rust.md maps
//! each C call to its Rust form.
//!
//! ```no_run
//! # fn main() -> lrrt::Result<()> {
//! use lrrt::{args, Device, DeviceBuffer, LaunchConfig, Module};
//! let device = Device::select("auto", 0)?;
//! let module = Module::from_file(device, "build/kernels/saxpy.host.so")?;
//! let saxpy = module.kernel("saxpy")?;
//! let x = DeviceBuffer::from_slice(device, &[1.0f32; 1024])?;
//! let y = DeviceBuffer::from_slice(device, &[2.0f32; 1024])?;
//! saxpy.launch(&LaunchConfig::cover(1024, 256), &args![3.0f32, &x, &y, 1024u32])?;
//! assert!(y.to_vec()?.iter().all(|&v| v == 5.0)); // the copy waits for the launch
//! # Ok(()) }
//! ```
//!
//! Ownership is RAII: dropping a handle frees it (lr_free, lr_*_destroy),
//! after the waits lrrt.h describes. Every failure is an [`Error`] with the
//! status and `lr_last_error_message`. Lifetimes keep a kernel within its
//! module, and a graph and its execs within the kernels and buffers they
//! use. `Send`/`Sync` follow lrrt.h's thread contract (docs/rust.md).
//!
//! The runtime is initialised on first use and never shut down (lr_shutdown
//! must not race any call, and handles may drop on any thread).

mod device;
mod double_buffer;
mod error;
mod graph;
mod memory;
pub mod misuse;
mod module;
mod registration;
mod sync;

pub use device::{backends, device_count, init, set_wait_timeout_ms, version, BackendInfo, Device, DeviceProperties, MemoryStats};
pub use double_buffer::{PinnedHostDoubleBuffer, SlotCopying, SlotWriter};
pub use error::{Error, Result, Status};
pub use graph::{Access, AccessMode, FillPattern, Graph, GraphExec, GraphExecStats, InstantiateOptions, Node};
pub use memory::{DeviceBuffer, PinnedBuffer, Pod};
pub use module::{AccessSource, Arg, ArgKind, Kernel, KernelArg, LaunchConfig, Module, PackedArgs};
pub use registration::MemoryRegistration;
pub use sync::{Event, Queue};

/// The raw bindings, for what this crate does not wrap.
pub use lrrt_sys as sys;

impl Device {
    pub fn buffer<T: Pod>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        DeviceBuffer::new(*self, len)
    }
    pub fn buffer_from<T: Pod>(&self, data: &[T]) -> Result<DeviceBuffer<T>> {
        DeviceBuffer::from_slice(*self, data)
    }
    pub fn pinned<T: Pod>(&self, len: usize) -> Result<PinnedBuffer<T>> {
        PinnedBuffer::new(*self, len)
    }
    pub fn queue(&self) -> Result<Queue> {
        Queue::new(*self)
    }
    pub fn event(&self) -> Result<Event> {
        Event::new(*self)
    }
    pub fn graph<'a>(&self) -> Result<Graph<'a>> {
        Graph::new(*self)
    }
    pub fn load_module(&self, image: &[u8]) -> Result<Module> {
        Module::load(*self, image)
    }
}
