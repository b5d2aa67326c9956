//! Code objects, kernels, launch configurations and kernel arguments packed
//! from the kernel's declared layout.
use std::ffi::CString;
use std::marker::PhantomData;
use std::os::raw::{c_char, c_void};
use std::path::Path;
use std::ptr::NonNull;

use lrrt_sys as sys;

use crate::device::Device;
use crate::error::{array_text, check, Error, Result};
use crate::memory::{DeviceBuffer, Pod};
use crate::sync::{Event, Queue};

/// A loaded code object (lr_module_load; lr_module_destroy on drop, which
/// waits for the device's pending work). Its kernels borrow it, so it
/// cannot be dropped while a kernel, a graph or an exec uses them.
#[derive(Debug)]
pub struct Module {
    raw: NonNull<sys::lr_module_t>,
    device: Device,
}

// SAFETY: lrrt.h lets every call on a module come from any thread; destroy
// happens in Drop, which has the module to itself.
unsafe impl Send for Module {}
unsafe impl Sync for Module {}

impl Module {
    /// Any format lrrt reads (HSACO, offload bundle, cubin, fatbin, PTX, host .so).
    pub fn load(device: Device, image: &[u8]) -> Result<Module> {
        crate::init()?;
        let mut m: *mut sys::lr_module_t = std::ptr::null_mut();
        // SAFETY: the image is valid for its length; lrrt copies what it keeps.
        check(
            unsafe { sys::lr_module_load(device.raw, image.as_ptr() as *const c_void, image.len(), &mut m) },
            "lr_module_load",
        )?;
        let raw = NonNull::new(m).ok_or_else(|| Error::invalid("lr_module_load", "returned no module"))?;
        Ok(Module { raw, device })
    }

    pub fn from_file(device: Device, path: impl AsRef<Path>) -> Result<Module> {
        let path = path.as_ref();
        let image = std::fs::read(path).map_err(|e| {
            Error::new(crate::Status::NotFound, "lrrt::Module::from_file", format!("cannot read {}: {}", path.display(), e))
        })?;
        Module::load(device, &image)
    }

    pub fn device(&self) -> Device {
        self.device
    }

    pub fn kernel_names(&self) -> Result<Vec<String>> {
        let mut n = 0u32;
        // SAFETY: a live module and an out-pointer.
        check(unsafe { sys::lr_module_kernel_count(self.raw.as_ptr(), &mut n) }, "lr_module_kernel_count")?;
        (0..n)
            .map(|i| {
                let mut name = [0 as c_char; sys::LR_NAME_CAPACITY as usize * 4];
                // SAFETY: a buffer with its true size.
                check(
                    unsafe { sys::lr_module_kernel_name(self.raw.as_ptr(), i, name.as_mut_ptr(), name.len()) },
                    "lr_module_kernel_name",
                )?;
                Ok(array_text(&name))
            })
            .collect()
    }

    /// Which code object of the image was loaded and why.
    pub fn source(&self) -> Result<String> {
        let mut size = 0usize;
        // SAFETY: a NULL text with size 0 asks for the size (lrrt.h).
        let _ = unsafe { sys::lr_module_source(self.raw.as_ptr(), std::ptr::null_mut(), &mut size) };
        let mut text = vec![0 as c_char; size.max(1)];
        size = text.len();
        // SAFETY: a buffer with its true size.
        check(unsafe { sys::lr_module_source(self.raw.as_ptr(), text.as_mut_ptr(), &mut size) }, "lr_module_source")?;
        Ok(array_text(&text))
    }

    pub fn kernel(&self, name: &str) -> Result<Kernel<'_>> {
        let cname = CString::new(name)
            .map_err(|_| Error::invalid("lrrt::Module::kernel", format!("kernel name {:?} holds a NUL", name)))?;
        let mut k: *mut sys::lr_kernel_t = std::ptr::null_mut();
        // SAFETY: a live module, a NUL-terminated name, an out-pointer.
        check(unsafe { sys::lr_kernel_get(self.raw.as_ptr(), cname.as_ptr(), &mut k) }, "lr_kernel_get")?;
        let raw = NonNull::new(k).ok_or_else(|| Error::invalid("lr_kernel_get", "returned no kernel"))?;
        let mut p: sys::lr_kernel_properties_t = unsafe { std::mem::zeroed() };
        // SAFETY: a live kernel and an out-pointer of the right type.
        check(unsafe { sys::lr_kernel_get_properties(raw.as_ptr(), &mut p) }, "lr_kernel_get_properties")?;
        let mut args = Vec::new();
        let mut raw_indices = Vec::new();
        for i in 0..p.arg_count {
            let mut a: sys::lr_kernel_arg_t = unsafe { std::mem::zeroed() };
            // SAFETY: index below arg_count, an out-pointer of the right type.
            check(unsafe { sys::lr_kernel_get_arg(raw.as_ptr(), i, &mut a) }, "lr_kernel_get_arg")?;
            if a.kind == sys::LR_ARG_HIDDEN {
                continue;
            }
            raw_indices.push(i);
            args.push(KernelArg {
                offset: a.offset as usize,
                size: a.size as usize,
                kind: ArgKind::from_raw(a.kind),
                name: array_text(&a.name),
                type_name: array_text(&a.type_name),
            });
        }
        Ok(Kernel {
            raw,
            device: self.device,
            name: array_text(&p.name),
            has_layout: p.has_arg_layout != 0,
            explicit_size: p.explicit_kernarg_size as usize,
            properties: p,
            args,
            raw_indices,
            _module: PhantomData,
        })
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        // Its kernels, graphs and execs borrow it, so none is left: BUSY cannot happen.
        // SAFETY: a live module, destroyed once.
        let _ = unsafe { sys::lr_module_destroy(self.raw.as_ptr()) };
    }
}

/// What an explicit argument is, by the code object's metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgKind {
    ByValue,
    GlobalBuffer,
    DynamicShared,
    Other,
}

impl ArgKind {
    fn from_raw(k: sys::lr_arg_kind_t) -> ArgKind {
        match k {
            sys::LR_ARG_BY_VALUE => ArgKind::ByValue,
            sys::LR_ARG_GLOBAL_BUFFER => ArgKind::GlobalBuffer,
            sys::LR_ARG_DYNAMIC_SHARED => ArgKind::DynamicShared,
            _ => ArgKind::Other,
        }
    }
}

/// Where a derived access comes from (lr_access_source_t), narrowest proof first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccessSource {
    /// Nothing known: read-write.
    Default,
    Declared,
    /// AMDGPU metadata .actual_access (the compiler proved it).
    ActualAccess,
    /// AMDGPU metadata .access (the source declared it).
    Access,
    /// lrrt's analysis of the kernel's Triton IR.
    TritonIr,
}

/// One explicit argument of a kernel's declared layout (lr_kernel_arg_t).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelArg {
    pub offset: usize,
    pub size: usize,
    pub kind: ArgKind,
    pub name: String,
    pub type_name: String,
}

/// A kernel of a module (owned by it: it borrows the module).
#[derive(Debug)]
pub struct Kernel<'m> {
    raw: NonNull<sys::lr_kernel_t>,
    device: Device,
    name: String,
    has_layout: bool,
    explicit_size: usize,
    properties: sys::lr_kernel_properties_t,
    args: Vec<KernelArg>,
    raw_indices: Vec<u32>, // lr_kernel_get_arg's index of each of `args`
    _module: PhantomData<&'m Module>,
}

// SAFETY: lrrt.h lets launches and queries of one kernel come from any
// thread at once; the kernel is never destroyed on its own.
unsafe impl Send for Kernel<'_> {}
unsafe impl Sync for Kernel<'_> {}

/// Launch geometry: workgroups per dimension (`grid`, CUDA's gridDim),
/// work-items per workgroup (`block`) and dynamic shared memory bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchConfig {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_memory_bytes: u32,
}

impl LaunchConfig {
    /// A 1-D launch: `grid` workgroups of `block` work-items.
    pub fn linear(grid: u32, block: u32) -> LaunchConfig {
        LaunchConfig { grid: [grid, 1, 1], block: [block, 1, 1], shared_memory_bytes: 0 }
    }
    /// Enough workgroups of `block` work-items to cover `n` items.
    pub fn cover(n: u32, block: u32) -> LaunchConfig {
        LaunchConfig::linear((n + block - 1) / block.max(1), block)
    }
    pub(crate) fn raw(&self) -> sys::lr_launch_config_t {
        let d = |v: [u32; 3]| sys::lr_dim3_t { x: v[0], y: v[1], z: v[2] };
        sys::lr_launch_config_t { grid: d(self.grid), block: d(self.block), shared_memory_bytes: self.shared_memory_bytes }
    }
}

/// One kernel argument: a scalar by value, or a device buffer's address.
/// `'a` is the buffer's borrow, so a packed argument block (and a graph
/// step) cannot outlive the buffers it points into.
#[derive(Debug, Clone, Copy)]
pub struct Arg<'a> {
    bytes: [u8; 8],
    size: u8,
    pointer: bool,
    _buffer: PhantomData<&'a ()>,
}

macro_rules! scalar_arg {
    ($($t:ty)*) => {$(
        impl From<$t> for Arg<'static> {
            fn from(v: $t) -> Arg<'static> {
                let mut bytes = [0u8; 8];
                let b = v.to_ne_bytes();
                bytes[..b.len()].copy_from_slice(&b);
                Arg { bytes, size: b.len() as u8, pointer: false, _buffer: PhantomData }
            }
        }
    )*};
}
scalar_arg!(u8 u16 u32 u64 i8 i16 i32 i64 f32 f64);

impl<'a, T: Pod> From<&'a DeviceBuffer<T>> for Arg<'a> {
    fn from(b: &'a DeviceBuffer<T>) -> Arg<'a> {
        Arg { bytes: (b.as_ptr() as u64).to_ne_bytes(), size: 8, pointer: true, _buffer: PhantomData }
    }
}

impl Arg<'static> {
    /// An address lrrt did not allocate through this crate (foreign memory).
    ///
    /// # Safety
    /// The kernel may read or write `[address, ...)` while it runs: the
    /// memory must stay valid and must not be used by Rust code meanwhile.
    pub unsafe fn raw_pointer(address: u64) -> Arg<'static> {
        Arg { bytes: address.to_ne_bytes(), size: 8, pointer: true, _buffer: PhantomData }
    }
}

impl Arg<'_> {
    pub fn is_pointer(&self) -> bool {
        self.pointer
    }
    pub fn bytes(&self) -> &[u8] {
        &self.bytes[..self.size as usize]
    }
}

/// `args![2.0f32, &x, &y, n]`: an array of `Arg`s.
#[macro_export]
macro_rules! args {
    ($($a:expr),* $(,)?) => { [$($crate::Arg::from($a)),*] };
}

/// An argument block packed for one kernel by its layout; it borrows the
/// kernel (so the identity check of a launch cannot be fooled by a kernel
/// freed and another loaded at its address) and the buffers it points into.
#[derive(Debug, Clone)]
pub struct PackedArgs<'a> {
    pub(crate) bytes: Vec<u8>,
    pub(crate) kernel: *const sys::lr_kernel_t,
    _buffers: PhantomData<&'a ()>,
}

// SAFETY: the kernel pointer is only compared, never dereferenced.
unsafe impl Send for PackedArgs<'_> {}
unsafe impl Sync for PackedArgs<'_> {}

impl PackedArgs<'_> {
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

impl<'m> Kernel<'m> {
    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn device(&self) -> Device {
        self.device
    }
    pub fn properties(&self) -> &sys::lr_kernel_properties_t {
        &self.properties
    }
    /// The explicit arguments the code object declares (hidden ones left out);
    /// empty when it declares none (`has_arg_layout()` false).
    pub fn args(&self) -> &[KernelArg] {
        &self.args
    }
    pub fn has_arg_layout(&self) -> bool {
        self.has_layout
    }
    pub(crate) fn raw(&self) -> *mut sys::lr_kernel_t {
        self.raw.as_ptr()
    }

    /// Packs `args` by the kernel's declared layout: the count, pointer or
    /// value, and each size must match it (an error names the argument).
    /// Without a declared layout, natural alignment in the given order.
    pub fn pack<'a>(&'a self, args: &[Arg<'a>]) -> Result<PackedArgs<'a>> {
        const CALL: &str = "lrrt::Kernel::pack";
        let mut out: Vec<u8> = Vec::with_capacity(self.explicit_size);
        if self.has_layout {
            if args.len() != self.args.len() {
                return Err(Error::invalid(
                    CALL,
                    format!("kernel {} takes {} argument(s), got {}", self.name, self.args.len(), args.len()),
                ));
            }
            for (i, (a, decl)) in args.iter().zip(&self.args).enumerate() {
                let label = if decl.name.is_empty() { "?" } else { decl.name.as_str() };
                let declared_pointer = decl.kind == ArgKind::GlobalBuffer;
                if matches!(decl.kind, ArgKind::ByValue | ArgKind::GlobalBuffer) && declared_pointer != a.pointer {
                    return Err(Error::invalid(
                        CALL,
                        format!(
                            "kernel {} argument {} ({}) is a {} but the kernel's is a {}",
                            self.name,
                            i,
                            label,
                            if a.pointer { "pointer" } else { "value" },
                            if declared_pointer { "pointer" } else { "value" }
                        ),
                    ));
                }
                if decl.size != a.size as usize {
                    return Err(Error::invalid(
                        CALL,
                        format!(
                            "kernel {} argument {} ({}) is {} bytes but the kernel's is {} bytes",
                            self.name, i, label, a.size, decl.size
                        ),
                    ));
                }
                let end = decl.offset + decl.size;
                if out.len() < end {
                    out.resize(end, 0);
                }
                out[decl.offset..end].copy_from_slice(a.bytes());
            }
        } else {
            for a in args {
                let size = a.size as usize;
                let offset = (out.len() + size - 1) / size * size;
                out.resize(offset, 0);
                out.extend_from_slice(a.bytes());
            }
        }
        if out.len() < self.explicit_size {
            out.resize(self.explicit_size, 0);
        }
        Ok(PackedArgs { bytes: out, kernel: self.raw.as_ptr(), _buffers: PhantomData })
    }

    pub(crate) fn check_packed(&self, args: &PackedArgs<'_>, call: &'static str) -> Result<()> {
        if args.kernel != self.raw.as_ptr() as *const _ {
            return Err(Error::invalid(call, format!("the arguments were packed for another kernel than {}", self.name)));
        }
        Ok(())
    }

    /// Packs `args` and enqueues one dispatch on the device's default queue.
    pub fn launch(&self, config: &LaunchConfig, args: &[Arg<'_>]) -> Result<()> {
        self.launch_packed(config, &self.pack(args)?)
    }

    pub fn launch_packed(&self, config: &LaunchConfig, args: &PackedArgs<'_>) -> Result<()> {
        self.check_packed(args, "lrrt::Kernel::launch_packed")?;
        let cfg = config.raw();
        // SAFETY: a live kernel; the argument block is valid for its length and
        // packed for this kernel; lrrt copies it before returning.
        check(
            unsafe { sys::lr_launch(self.raw.as_ptr(), &cfg, args.bytes.as_ptr() as *const c_void, args.bytes.len()) },
            "lr_launch",
        )
    }

    /// On `queue`, with no implicit dependency on other queues' work.
    pub fn launch_on(&self, queue: &Queue, config: &LaunchConfig, args: &[Arg<'_>]) -> Result<()> {
        let packed = self.pack(args)?;
        let cfg = config.raw();
        // SAFETY: as launch_packed, on a live queue.
        check(
            unsafe {
                sys::lr_launch_on_queue(
                    queue.raw(),
                    self.raw.as_ptr(),
                    &cfg,
                    packed.bytes.as_ptr() as *const c_void,
                    packed.bytes.len(),
                )
            },
            "lr_launch_on_queue",
        )
    }

    /// On the default queue, after the recorded events complete.
    pub fn launch_after(&self, config: &LaunchConfig, args: &[Arg<'_>], after: &[&Event]) -> Result<()> {
        let packed = self.pack(args)?;
        self.launch_packed_after(config, &packed, after)
    }

    pub fn launch_packed_after(&self, config: &LaunchConfig, args: &PackedArgs<'_>, after: &[&Event]) -> Result<()> {
        self.check_packed(args, "lrrt::Kernel::launch_packed_after")?;
        let deps: Vec<*mut sys::lr_event_t> = after.iter().map(|e| e.raw()).collect();
        let cfg = config.raw();
        // SAFETY: as launch_packed; the events are live and borrowed shared,
        // so no thread records them meanwhile.
        check(
            unsafe {
                sys::lr_launch_with_dependencies(
                    self.raw.as_ptr(),
                    &cfg,
                    args.bytes.as_ptr() as *const c_void,
                    args.bytes.len(),
                    deps.as_ptr(),
                    deps.len(),
                )
            },
            "lr_launch_with_dependencies",
        )
    }

    /// The access a derived graph step gives explicit argument `index` (of
    /// `args()`), and where it comes from (lr_kernel_get_arg_access).
    pub fn arg_access(&self, index: usize) -> Result<(crate::AccessMode, AccessSource)> {
        const CALL: &str = "lrrt::Kernel::arg_access";
        let raw_index = *self.raw_indices.get(index).ok_or_else(|| {
            Error::invalid(CALL, format!("kernel {} takes {} argument(s), not argument {}", self.name, self.args.len(), index))
        })?;
        let (mut mode, mut source) = (0 as sys::lr_access_mode_t, 0 as sys::lr_access_source_t);
        // SAFETY: a live kernel, an index below its arg_count, out-pointers.
        check(unsafe { sys::lr_kernel_get_arg_access(self.raw.as_ptr(), raw_index, &mut mode, &mut source) }, "lr_kernel_get_arg_access")?;
        let mode = match mode {
            sys::LR_ACCESS_READ => crate::AccessMode::Read,
            sys::LR_ACCESS_WRITE => crate::AccessMode::Write,
            _ => crate::AccessMode::ReadWrite,
        };
        let source = match source {
            sys::LR_ACCESS_SOURCE_DECLARED => AccessSource::Declared,
            sys::LR_ACCESS_SOURCE_ACTUAL_ACCESS => AccessSource::ActualAccess,
            sys::LR_ACCESS_SOURCE_ACCESS => AccessSource::Access,
            sys::LR_ACCESS_SOURCE_TTIR => AccessSource::TritonIr,
            _ => AccessSource::Default,
        };
        Ok((mode, source))
    }

    /// The Triton IR (.ttir text) the kernel was compiled from: derived
    /// accesses then use lrrt's analysis of it (lr_kernel_set_triton_ir).
    pub fn set_triton_ir(&self, ir: &str) -> Result<()> {
        let text = CString::new(ir).map_err(|_| Error::invalid("lrrt::Kernel::set_triton_ir", "the IR text holds a NUL"))?;
        // SAFETY: a live kernel and a NUL-terminated text lrrt copies.
        check(unsafe { sys::lr_kernel_set_triton_ir(self.raw.as_ptr(), text.as_ptr()) }, "lr_kernel_set_triton_ir")
    }

    /// lr_kernel_flags_t bits (LR_KERNEL_WAITS_FOR_PRODUCER), for launches
    /// and graph steps added afterwards.
    pub fn set_flags(&self, flags: u32) -> Result<()> {
        // SAFETY: a live kernel.
        check(unsafe { sys::lr_kernel_set_flags(self.raw.as_ptr(), flags) }, "lr_kernel_set_flags")
    }
    pub fn flags(&self) -> Result<u32> {
        let mut f = 0u32;
        // SAFETY: a live kernel and an out-pointer.
        check(unsafe { sys::lr_kernel_get_flags(self.raw.as_ptr(), &mut f) }, "lr_kernel_get_flags")?;
        Ok(f)
    }
}
