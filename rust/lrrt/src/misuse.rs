//! Misuse that C leaves to the caller and Rust refuses to compile. Each
//! `compile_fail` doctest is followed by the same code without the misuse,
//! which must compile (stable rustdoc does not check a `compile_fail`
//! block's error code, so the pair shows the refusal is for that line).
//!
//! A buffer used after it was freed (dropped):
//! ```compile_fail,E0382
//! # fn f(device: lrrt::Device) -> lrrt::Result<()> {
//! let x = lrrt::DeviceBuffer::<f32>::new(device, 16)?;
//! drop(x);
//! x.to_vec()?;
//! # Ok(()) }
//! ```
//! ```no_run
//! # fn f(device: lrrt::Device) -> lrrt::Result<()> {
//! let x = lrrt::DeviceBuffer::<f32>::new(device, 16)?;
//! x.to_vec()?;
//! drop(x);
//! # Ok(()) }
//! ```
//!
//! A kernel used after its module was destroyed:
//! ```compile_fail,E0505
//! # fn f(device: lrrt::Device) -> lrrt::Result<()> {
//! let module = lrrt::Module::from_file(device, "saxpy.host.so")?;
//! let saxpy = module.kernel("saxpy")?;
//! drop(module);
//! saxpy.launch(&lrrt::LaunchConfig::linear(1, 1), &[])?;
//! # Ok(()) }
//! ```
//! ```no_run
//! # fn f(device: lrrt::Device) -> lrrt::Result<()> {
//! let module = lrrt::Module::from_file(device, "saxpy.host.so")?;
//! let saxpy = module.kernel("saxpy")?;
//! saxpy.launch(&lrrt::LaunchConfig::linear(1, 1), &[])?;
//! drop(module);
//! # Ok(()) }
//! ```
//!
//! A graph exec outliving its graph:
//! ```compile_fail,E0505
//! # fn f(device: lrrt::Device) -> lrrt::Result<()> {
//! let graph = device.graph()?;
//! let exec = graph.instantiate()?;
//! drop(graph);
//! exec.launch()?;
//! # Ok(()) }
//! ```
//! ```no_run
//! # fn f(device: lrrt::Device) -> lrrt::Result<()> {
//! let graph = device.graph()?;
//! let exec = graph.instantiate()?;
//! exec.launch()?;
//! drop(exec);
//! drop(graph);
//! # Ok(()) }
//! ```
//!
//! A buffer freed while a graph that replays it lives:
//! ```compile_fail,E0505
//! # fn f(device: lrrt::Device, saxpy: &lrrt::Kernel) -> lrrt::Result<()> {
//! let (x, y) = (device.buffer::<f32>(64)?, device.buffer::<f32>(64)?);
//! let graph = device.graph()?;
//! graph.add_kernel(saxpy, &lrrt::LaunchConfig::linear(1, 64), &lrrt::args![1.0f32, &x, &y, 64u32],
//!                  &[lrrt::Access::read(&x), lrrt::Access::read_write(&y)])?;
//! drop(y);
//! graph.instantiate()?.launch()?;
//! # Ok(()) }
//! ```
//! ```no_run
//! # fn f(device: lrrt::Device, saxpy: &lrrt::Kernel) -> lrrt::Result<()> {
//! let (x, y) = (device.buffer::<f32>(64)?, device.buffer::<f32>(64)?);
//! let graph = device.graph()?;
//! graph.add_kernel(saxpy, &lrrt::LaunchConfig::linear(1, 64), &lrrt::args![1.0f32, &x, &y, 64u32],
//!                  &[lrrt::Access::read(&x), lrrt::Access::read_write(&y)])?;
//! graph.instantiate()?.launch()?;
//! drop(graph);
//! drop(y);
//! # Ok(()) }
//! ```
//!
//! A buffer that dies before the graph, even without an explicit drop:
//! ```compile_fail,E0597
//! # fn f(device: lrrt::Device) -> lrrt::Result<()> {
//! let graph = device.graph()?;
//! {
//!     let y = device.buffer::<u32>(64)?;
//!     graph.add_fill(&y, 7u32)?;
//! }
//! graph.instantiate()?.launch()?;
//! # Ok(()) }
//! ```
//! ```no_run
//! # fn f(device: lrrt::Device) -> lrrt::Result<()> {
//! let y = device.buffer::<u32>(64)?;
//! let graph = device.graph()?;
//! {
//!     graph.add_fill(&y, 7u32)?;
//! }
//! graph.instantiate()?.launch()?;
//! # Ok(()) }
//! ```
//!
//! Recording an event while a launch depends on it (lrrt.h: a race):
//! ```compile_fail,E0502
//! # fn f(device: lrrt::Device, k: &lrrt::Kernel) -> lrrt::Result<()> {
//! let mut event = device.event()?;
//! let deps = [&event];
//! event.record()?;
//! k.launch_after(&lrrt::LaunchConfig::linear(1, 1), &[], &deps)?;
//! # Ok(()) }
//! ```
//! ```no_run
//! # fn f(device: lrrt::Device, k: &lrrt::Kernel) -> lrrt::Result<()> {
//! let mut event = device.event()?;
//! event.record()?;
//! let deps = [&event];
//! k.launch_after(&lrrt::LaunchConfig::linear(1, 1), &[], &deps)?;
//! # Ok(()) }
//! ```
//!
//! Writing a double-buffer slot after its copy was submitted:
//! ```compile_fail,E0382
//! # fn f(device: lrrt::Device, x: &lrrt::DeviceBuffer<f32>) -> lrrt::Result<()> {
//! let mut db = lrrt::PinnedHostDoubleBuffer::<f32>::new(device, 64)?;
//! let mut slot = db.acquire()?;
//! let copying = slot.copy_to_device(x, 64)?;
//! slot[0] = 1.0;
//! # Ok(()) }
//! ```
//! ```no_run
//! # fn f(device: lrrt::Device, x: &lrrt::DeviceBuffer<f32>) -> lrrt::Result<()> {
//! let mut db = lrrt::PinnedHostDoubleBuffer::<f32>::new(device, 64)?;
//! let mut slot = db.acquire()?;
//! slot[0] = 1.0;
//! let copying = slot.copy_to_device(x, 64)?;
//! # Ok(()) }
//! ```
//!
//! Touching host memory while it is registered for the device:
//! ```compile_fail,E0502
//! # fn f(device: lrrt::Device) -> lrrt::Result<()> {
//! let mut v = vec![0.0f32; 64];
//! let r = lrrt::MemoryRegistration::new(device, &mut v[..])?;
//! let first = v[0];
//! drop(r);
//! # Ok(()) }
//! ```
//! ```no_run
//! # fn f(device: lrrt::Device) -> lrrt::Result<()> {
//! let mut v = vec![0.0f32; 64];
//! let r = lrrt::MemoryRegistration::new(device, &mut v[..])?;
//! drop(r);
//! let first = v[0];
//! # Ok(()) }
//! ```
//!
//! A raw address as a kernel argument needs `unsafe` (a device buffer's
//! memory cannot be reached as a Rust slice at all):
//! ```compile_fail,E0133
//! let a = lrrt::Arg::raw_pointer(0x1000);
//! ```
//! ```no_run
//! let a = unsafe { lrrt::Arg::raw_pointer(0x1000) };
//! ```
