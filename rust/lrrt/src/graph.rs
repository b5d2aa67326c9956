//! Retained replay: a graph records kernel steps, copies and fills with the
//! buffers each touches; an exec replays it (lrrt.h, "Retained replay").
//!
//! Lifetimes carry what lrrt.h leaves to the caller: a `Graph<'a>` borrows
//! every kernel and buffer its steps use for `'a` (its modules cannot be
//! destroyed, its buffers cannot be freed while it lives), and a
//! `GraphExec<'g>` borrows its graph, so an exec never outlives the graph,
//! nor therefore the kernels and buffers it replays.
use std::marker::PhantomData;
use std::os::raw::{c_char, c_void};
use std::ptr::NonNull;
use std::sync::Mutex;

use lrrt_sys as sys;

use crate::device::Device;
use crate::error::{array_text, check, Error, Result};
use crate::memory::{DeviceBuffer, Pod};
use crate::registration::MemoryRegistration;
use crate::module::{Arg, ArgKind, Kernel, KernelArg, LaunchConfig, PackedArgs};
use crate::sync::{Event, Queue};

/// A step's id (lr_graph_node_t): steps count from 0 in the order added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Node(pub u32);

/// How a step uses a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccessMode {
    Read,
    Write,
    ReadWrite,
}

/// One range of a buffer a kernel step touches (lr_graph_access_t),
/// borrowing the buffer for `'a`.
#[derive(Debug, Clone, Copy)]
pub struct Access<'a> {
    raw: sys::lr_graph_access_t,
    _buffer: PhantomData<&'a ()>,
}

impl<'a> Access<'a> {
    /// The whole buffer.
    pub fn whole<T: Pod>(buffer: &'a DeviceBuffer<T>, mode: AccessMode) -> Access<'a> {
        Access::bytes(buffer, mode, 0, 0)
    }
    pub fn read<T: Pod>(buffer: &'a DeviceBuffer<T>) -> Access<'a> {
        Access::whole(buffer, AccessMode::Read)
    }
    pub fn write<T: Pod>(buffer: &'a DeviceBuffer<T>) -> Access<'a> {
        Access::whole(buffer, AccessMode::Write)
    }
    pub fn read_write<T: Pod>(buffer: &'a DeviceBuffer<T>) -> Access<'a> {
        Access::whole(buffer, AccessMode::ReadWrite)
    }
    /// `count` elements from element `first`; the graph rejects a range
    /// outside the buffer when the step is added.
    pub fn elements<T: Pod>(buffer: &'a DeviceBuffer<T>, mode: AccessMode, first: usize, count: usize) -> Access<'a> {
        let size = std::mem::size_of::<T>() as u64;
        let offset = (first as u64).saturating_mul(size);
        // A zero count would mean "to the end" in the C ABI: say one byte instead,
        // the narrowest range that still names the buffer.
        let bytes = (count as u64).saturating_mul(size).max(1);
        Access::bytes(buffer, mode, offset, bytes)
    }
    /// Bytes [offset, offset + bytes) of the buffer; bytes 0 means to its end.
    pub fn bytes<T: Pod>(buffer: &'a DeviceBuffer<T>, mode: AccessMode, offset: u64, bytes: u64) -> Access<'a> {
        Access::at(buffer.as_ptr(), mode, offset, bytes)
    }
    /// Bytes [offset, offset + bytes) of registered foreign memory; bytes 0
    /// means to its end.
    pub fn registered(memory: &'a MemoryRegistration<'_>, mode: AccessMode, offset: u64, bytes: u64) -> Access<'a> {
        Access::at(memory.as_ptr(), mode, offset, bytes)
    }
    fn at(pointer: *const c_void, mode: AccessMode, offset: u64, bytes: u64) -> Access<'a> {
        let mode = match mode {
            AccessMode::Read => sys::LR_ACCESS_READ,
            AccessMode::Write => sys::LR_ACCESS_WRITE,
            AccessMode::ReadWrite => sys::LR_ACCESS_READ_WRITE,
        };
        Access { raw: sys::lr_graph_access_t { pointer, offset, bytes, mode }, _buffer: PhantomData }
    }
}

/// A fill pattern: 1, 2 or 4 bytes (cuMemsetD8/D16/D32).
pub trait FillPattern: Pod {}
impl FillPattern for u8 {}
impl FillPattern for u16 {}
impl FillPattern for u32 {}

/// lr_graph_instantiate_options_t.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InstantiateOptions {
    /// Most queues independent branches spread over (0: the default, 2).
    pub max_lanes: u32,
    /// Patching an exec whose replay runs waits for it instead of failing
    /// with `Status::Busy` (LR_GRAPH_PATCH_WAITS).
    pub patch_waits: bool,
}

/// The declared layout of each kernel step, for typed patches.
type NodeLayouts = Mutex<Vec<Option<Vec<KernelArg>>>>;

/// A recording (lr_graph_create; lr_graph_destroy on drop). Invariant in
/// `'a`, the borrow of every kernel and buffer its steps use.
#[derive(Debug)]
pub struct Graph<'a> {
    raw: NonNull<sys::lr_graph_t>,
    device: Device,
    layouts: NodeLayouts,
    _borrows: PhantomData<fn(&'a ()) -> &'a ()>,
}

// SAFETY: lrrt.h lets recording calls on one graph come from several
// threads; destroy happens in Drop, which has the graph to itself.
unsafe impl Send for Graph<'_> {}
unsafe impl Sync for Graph<'_> {}

impl<'a> Graph<'a> {
    pub fn new(device: Device) -> Result<Graph<'a>> {
        crate::init()?;
        let mut g: *mut sys::lr_graph_t = std::ptr::null_mut();
        // SAFETY: out-pointer to a local.
        check(unsafe { sys::lr_graph_create(device.raw, &mut g) }, "lr_graph_create")?;
        let raw = NonNull::new(g).ok_or_else(|| Error::invalid("lr_graph_create", "returned no graph"))?;
        Ok(Graph { raw, device, layouts: Mutex::new(Vec::new()), _borrows: PhantomData })
    }

    pub fn device(&self) -> Device {
        self.device
    }

    /// A kernel dispatch with the buffers it touches. Every buffer among the
    /// arguments must be covered by an access (instantiate checks it).
    pub fn add_kernel(
        &self,
        kernel: &'a Kernel<'_>,
        config: &LaunchConfig,
        args: &[Arg<'a>],
        accesses: &[Access<'a>],
    ) -> Result<Node> {
        let packed = kernel.pack(args)?;
        self.add_kernel_packed(kernel, config, &packed, accesses)
    }

    pub fn add_kernel_packed(
        &self,
        kernel: &'a Kernel<'_>,
        config: &LaunchConfig,
        args: &PackedArgs<'a>,
        accesses: &[Access<'a>],
    ) -> Result<Node> {
        self.add_kernel_flags(kernel, config, args, accesses, 0)
    }

    /// As add_kernel, and every pointer argument no access covers gets the
    /// access lrrt derives for it (`Kernel::arg_access`: the Triton IR, the
    /// code object's metadata, else read-write) over the whole allocation it
    /// points into, at instantiate (LR_GRAPH_KERNEL_DERIVE_ACCESS). The
    /// buffers are borrowed for `'a` through the arguments, as declared ones are.
    pub fn add_kernel_derived(
        &self,
        kernel: &'a Kernel<'_>,
        config: &LaunchConfig,
        args: &[Arg<'a>],
        accesses: &[Access<'a>],
    ) -> Result<Node> {
        let packed = kernel.pack(args)?;
        self.add_kernel_flags(kernel, config, &packed, accesses, sys::LR_GRAPH_KERNEL_DERIVE_ACCESS)
    }

    pub fn add_kernel_packed_derived(
        &self,
        kernel: &'a Kernel<'_>,
        config: &LaunchConfig,
        args: &PackedArgs<'a>,
        accesses: &[Access<'a>],
    ) -> Result<Node> {
        self.add_kernel_flags(kernel, config, args, accesses, sys::LR_GRAPH_KERNEL_DERIVE_ACCESS)
    }

    fn add_kernel_flags(
        &self,
        kernel: &'a Kernel<'_>,
        config: &LaunchConfig,
        args: &PackedArgs<'a>,
        accesses: &[Access<'a>],
        flags: u32,
    ) -> Result<Node> {
        kernel.check_packed(args, "lrrt::Graph::add_kernel")?;
        let raw_accesses: Vec<sys::lr_graph_access_t> = accesses.iter().map(|a| a.raw).collect();
        let cfg = config.raw();
        let mut node: sys::lr_graph_node_t = 0;
        // SAFETY: a live graph and kernel; arguments and accesses are valid
        // for their lengths and copied by lrrt.
        check(
            unsafe {
                sys::lr_graph_add_kernel_ex(
                    self.raw.as_ptr(),
                    kernel.raw(),
                    &cfg,
                    args.bytes.as_ptr() as *const c_void,
                    args.bytes.len(),
                    raw_accesses.as_ptr(),
                    raw_accesses.len(),
                    flags,
                    &mut node,
                )
            },
            "lr_graph_add_kernel_ex",
        )?;
        let layout = if kernel.has_arg_layout() { Some(kernel.args().to_vec()) } else { None };
        let mut layouts = self.layouts.lock().unwrap_or_else(|p| p.into_inner());
        if layouts.len() <= node as usize {
            layouts.resize(node as usize + 1, None);
        }
        layouts[node as usize] = layout;
        Ok(Node(node))
    }

    /// Copies the first `count` elements of `src` to `dst` (device to device).
    pub fn add_copy<T: Pod>(&self, dst: &'a DeviceBuffer<T>, src: &'a DeviceBuffer<T>, count: usize) -> Result<Node> {
        for (what, len) in [("destination", dst.len()), ("source", src.len())] {
            if count > len {
                return Err(Error::invalid(
                    "lrrt::Graph::add_copy",
                    format!("the {} buffer has {} elements but the copy needs {}", what, len, count),
                ));
            }
        }
        let mut node: sys::lr_graph_node_t = 0;
        // SAFETY: a live graph; both buffers hold count elements and are borrowed for 'a.
        check(
            unsafe {
                sys::lr_graph_add_copy(
                    self.raw.as_ptr(),
                    dst.as_ptr() as *mut c_void,
                    src.as_ptr(),
                    count * std::mem::size_of::<T>(),
                    sys::LR_MEMCPY_DEVICE_TO_DEVICE,
                    &mut node,
                )
            },
            "lr_graph_add_copy",
        )?;
        Ok(Node(node))
    }

    /// Fills the whole of `dst` with `pattern` repeated.
    pub fn add_fill<T: Pod, P: FillPattern>(&self, dst: &'a DeviceBuffer<T>, pattern: P) -> Result<Node> {
        let mut node: sys::lr_graph_node_t = 0;
        // SAFETY: a live graph; the pattern is valid for its size; the C ABI
        // checks that the size is a multiple of it.
        check(
            unsafe {
                sys::lr_graph_add_fill(
                    self.raw.as_ptr(),
                    dst.as_ptr() as *mut c_void,
                    dst.size_bytes(),
                    &pattern as *const P as *const c_void,
                    std::mem::size_of::<P>(),
                    &mut node,
                )
            },
            "lr_graph_add_fill",
        )?;
        Ok(Node(node))
    }

    /// `to` runs after `from`, whatever they access.
    pub fn add_dependency(&self, from: Node, to: Node) -> Result<()> {
        // SAFETY: a live graph; lrrt checks the ids.
        check(unsafe { sys::lr_graph_add_dependency(self.raw.as_ptr(), from.0, to.0) }, "lr_graph_add_dependency")
    }

    pub fn instantiate(&self) -> Result<GraphExec<'_>> {
        self.instantiate_with(InstantiateOptions::default())
    }

    /// Validates and lowers the graph once. The exec borrows the graph (and
    /// so its kernels and buffers); the graph may still be extended and
    /// instantiated again, the exec keeps what it was given.
    pub fn instantiate_with(&self, options: InstantiateOptions) -> Result<GraphExec<'_>> {
        let opts = sys::lr_graph_instantiate_options_t {
            max_lanes: options.max_lanes,
            flags: if options.patch_waits { sys::LR_GRAPH_PATCH_WAITS } else { 0 },
        };
        let mut e: *mut sys::lr_graph_exec_t = std::ptr::null_mut();
        // SAFETY: a live graph, options and an out-pointer.
        check(unsafe { sys::lr_graph_instantiate(self.raw.as_ptr(), &opts, &mut e) }, "lr_graph_instantiate")?;
        let raw = NonNull::new(e).ok_or_else(|| Error::invalid("lr_graph_instantiate", "returned no exec"))?;
        Ok(GraphExec { raw, layouts: &self.layouts })
    }
}

impl Drop for Graph<'_> {
    fn drop(&mut self) {
        // SAFETY: a live graph, destroyed once; its execs borrow it, so none is left.
        let _ = unsafe { sys::lr_graph_destroy(self.raw.as_ptr()) };
    }
}

/// lr_graph_exec_stats_t.
pub type GraphExecStats = sys::lr_graph_exec_stats_t;

/// An instantiated graph (lr_graph_exec_destroy on drop, which waits for
/// its replays). Borrows its graph for `'g`.
#[derive(Debug)]
pub struct GraphExec<'g> {
    raw: NonNull<sys::lr_graph_exec_t>,
    layouts: &'g NodeLayouts,
}

// SAFETY: lrrt.h: launches, patches, waits and queries of one exec may come
// from several threads; destroy happens in Drop, which has it to itself.
unsafe impl Send for GraphExec<'_> {}
unsafe impl Sync for GraphExec<'_> {}

impl<'g> GraphExec<'g> {
    /// One replay on the device's default queue.
    pub fn launch(&self) -> Result<()> {
        // SAFETY: a live exec; NULL is the default queue.
        check(unsafe { sys::lr_graph_exec_launch(self.raw.as_ptr(), std::ptr::null_mut()) }, "lr_graph_exec_launch")
    }
    /// One replay on `queue`, ordered with its other work.
    pub fn launch_on(&self, queue: &Queue) -> Result<()> {
        // SAFETY: a live exec and queue.
        check(unsafe { sys::lr_graph_exec_launch(self.raw.as_ptr(), queue.raw()) }, "lr_graph_exec_launch")
    }
    /// One replay; `completion` completes when every step of it finished.
    pub fn launch_with_event(&self, queue: Option<&Queue>, completion: &mut Event) -> Result<()> {
        let q = queue.map_or(std::ptr::null_mut(), |q| q.raw());
        // SAFETY: a live exec, queue (or NULL) and event, the event exclusively.
        check(
            unsafe { sys::lr_graph_exec_launch_with_event(self.raw.as_ptr(), q, completion.raw()) },
            "lr_graph_exec_launch_with_event",
        )
    }
    /// Waits for the last replay; returns its first execution error.
    pub fn synchronize(&self) -> Result<()> {
        // SAFETY: a live exec.
        check(unsafe { sys::lr_graph_exec_synchronize(self.raw.as_ptr()) }, "lr_graph_exec_synchronize")
    }
    /// True when no replay is running.
    pub fn is_complete(&self) -> Result<bool> {
        let mut c = 0u32;
        // SAFETY: a live exec and an out-pointer.
        check(unsafe { sys::lr_graph_exec_query(self.raw.as_ptr(), &mut c) }, "lr_graph_exec_query")?;
        Ok(c != 0)
    }

    /// Overwrites bytes of a kernel step's explicit arguments for later
    /// replays; a pointer the bytes overlap must still point into one of the
    /// step's declared ranges (lrrt checks).
    pub fn set_kernargs(&self, node: Node, offset: usize, bytes: &[u8]) -> Result<()> {
        // SAFETY: a live exec; bytes valid for their length and copied.
        check(
            unsafe {
                sys::lr_graph_exec_set_kernargs(self.raw.as_ptr(), node.0, offset, bytes.as_ptr() as *const c_void, bytes.len())
            },
            "lr_graph_exec_set_kernargs",
        )
    }

    /// Replaces explicit argument `index` of kernel step `node`, checked
    /// against the kernel's declared layout like `Kernel::pack`.
    pub fn set_arg(&self, node: Node, index: usize, arg: Arg<'g>) -> Result<()> {
        const CALL: &str = "lrrt::GraphExec::set_arg";
        let decl = {
            let layouts = self.layouts.lock().unwrap_or_else(|p| p.into_inner());
            match layouts.get(node.0 as usize) {
                Some(Some(layout)) => layout.get(index).cloned().ok_or_else(|| {
                    Error::invalid(CALL, format!("step {} takes {} argument(s), not argument {}", node.0, layout.len(), index))
                })?,
                _ => {
                    return Err(Error::invalid(
                        CALL,
                        format!("step {} is not a kernel step with a declared argument layout (use set_kernargs)", node.0),
                    ))
                }
            }
        };
        let declared_pointer = decl.kind == ArgKind::GlobalBuffer;
        if matches!(decl.kind, ArgKind::ByValue | ArgKind::GlobalBuffer) && declared_pointer != arg.is_pointer() {
            return Err(Error::invalid(
                CALL,
                format!(
                    "step {} argument {} is a {} but the kernel's is a {}",
                    node.0,
                    index,
                    if arg.is_pointer() { "pointer" } else { "value" },
                    if declared_pointer { "pointer" } else { "value" }
                ),
            ));
        }
        if decl.size != arg.bytes().len() {
            return Err(Error::invalid(
                CALL,
                format!("step {} argument {} is {} bytes but the kernel's is {} bytes", node.0, index, arg.bytes().len(), decl.size),
            ));
        }
        self.set_kernargs(node, decl.offset, arg.bytes())
    }

    /// Replays that may be in flight at once (hsa; others accept it).
    pub fn set_max_in_flight(&self, count: u32) -> Result<()> {
        // SAFETY: a live exec.
        check(unsafe { sys::lr_graph_exec_set_max_in_flight(self.raw.as_ptr(), count) }, "lr_graph_exec_set_max_in_flight")
    }

    pub fn stats(&self) -> Result<GraphExecStats> {
        let mut s: GraphExecStats = unsafe { std::mem::zeroed() };
        // SAFETY: a live exec and an out-pointer of the right type.
        check(unsafe { sys::lr_graph_exec_get_stats(self.raw.as_ptr(), &mut s) }, "lr_graph_exec_get_stats")?;
        Ok(s)
    }

    /// The plan the exec runs, as JSON (nodes, edges with hazards, lanes, fences).
    pub fn plan_json(&self) -> Result<String> {
        let mut length = 0usize;
        // SAFETY: capacity 0 asks for the length only.
        check(
            unsafe { sys::lr_graph_exec_get_plan(self.raw.as_ptr(), std::ptr::null_mut(), 0, &mut length) },
            "lr_graph_exec_get_plan",
        )?;
        let mut text = vec![0 as c_char; length + 1];
        // SAFETY: a buffer of its true capacity.
        check(
            unsafe { sys::lr_graph_exec_get_plan(self.raw.as_ptr(), text.as_mut_ptr(), text.len(), &mut length) },
            "lr_graph_exec_get_plan",
        )?;
        Ok(array_text(&text))
    }
}

impl Drop for GraphExec<'_> {
    fn drop(&mut self) {
        // SAFETY: a live exec, destroyed once.
        let _ = unsafe { sys::lr_graph_exec_destroy(self.raw.as_ptr()) };
    }
}
