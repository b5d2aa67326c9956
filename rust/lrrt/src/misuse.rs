//! Misuse that C leaves to the caller and Rust refuses to compile. Each
//! block is a `compile_fail` doctest with the error code it must fail with
//! (`cargo test --doc` runs them), so the refusal is checked, not assumed.
//!
//! A buffer used after it was freed (dropped):
//! ```compile_fail,E0382
//! # fn f(device: lrrt::Device) -> lrrt::Result<()> {
//! let x = lrrt::DeviceBuffer::<f32>::new(device, 16)?;
//! drop(x);
//! x.to_vec()?;
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
//!
//! A device buffer's memory cannot be reached as a Rust slice at all (no
//! `as_slice`), and a raw address as a kernel argument needs `unsafe`:
//! ```compile_fail,E0133
//! let a = lrrt::Arg::raw_pointer(0x1000);
//! ```
