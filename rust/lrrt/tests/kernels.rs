// Kernels: launches verified element by element, and every way an argument
// block can be wrong is an Err before anything reaches the device.
mod common;
use common::{device, load, Rng};
use lrrt::{args, Arg, ArgKind, LaunchConfig, Module, Status};

#[test]
fn saxpy_launch_computes_every_element() {
    let dev = device();
    let module = load(dev, "saxpy");
    let saxpy = module.kernel("saxpy").unwrap();
    let mut rng = Rng::new();
    let n = 1000 + rng.below(2000) as usize; // not a multiple of the block
    let (hx, hy) = (rng.quarters(n, 64), rng.quarters(n, 64));
    let a = 0.25 * (1 + rng.below(8)) as f32;
    let x = dev.buffer_from(&hx).unwrap();
    let y = dev.buffer_from(&hy).unwrap();
    saxpy.launch(&LaunchConfig::cover(n as u32, 256), &args![a, &x, &y, n as u32]).unwrap();
    let mut got = vec![f32::NAN; n];
    y.copy_to_slice(&mut got).unwrap();
    for i in 0..n {
        assert_eq!(got[i], a * hx[i] + hy[i], "y[{}]", i);
    }
}

#[test]
fn vector_add_writes_a_poisoned_output() {
    let dev = device();
    let module = load(dev, "vector_add");
    let add = module.kernel("vector_add_i32").unwrap();
    let mut rng = Rng::new();
    let n = 4096usize;
    let ha: Vec<i32> = (0..n).map(|_| rng.next_u64() as i32 >> 2).collect();
    let hb: Vec<i32> = (0..n).map(|_| rng.next_u64() as i32 >> 2).collect();
    let (a, b) = (dev.buffer_from(&ha).unwrap(), dev.buffer_from(&hb).unwrap());
    let c = dev.buffer_from(&vec![0x5A5A_5A5Ai32; n]).unwrap();
    let queue = dev.queue().unwrap();
    add.launch_on(&queue, &LaunchConfig::cover(n as u32, 128), &args![&a, &b, &c, n as u32]).unwrap();
    queue.synchronize().unwrap();
    let got = c.to_vec().unwrap();
    for i in 0..n {
        assert_eq!(got[i], ha[i] + hb[i], "c[{}]", i);
    }
}

#[test]
fn the_declared_layout_is_read() {
    let dev = device();
    let module = load(dev, "saxpy");
    assert!(module.kernel_names().unwrap().iter().any(|k| k == "saxpy"));
    let saxpy = module.kernel("saxpy").unwrap();
    assert!(saxpy.has_arg_layout());
    let kinds: Vec<(usize, usize, ArgKind)> = saxpy.args().iter().map(|a| (a.offset, a.size, a.kind)).collect();
    assert_eq!(
        kinds,
        vec![(0, 4, ArgKind::ByValue), (8, 8, ArgKind::GlobalBuffer), (16, 8, ArgKind::GlobalBuffer), (24, 4, ArgKind::ByValue)]
    );
    let x = dev.buffer::<f32>(4).unwrap();
    let packed = saxpy.pack(&args![1.5f32, &x, &x, 7u32]).unwrap();
    let b = packed.bytes();
    assert_eq!(&b[0..4], &1.5f32.to_ne_bytes());
    assert_eq!(&b[8..16], &(x.as_ptr() as u64).to_ne_bytes());
    assert_eq!(&b[24..28], &7u32.to_ne_bytes());
}

fn invalid(r: lrrt::Result<()>, words: &[&str]) {
    let e = r.expect_err("must fail");
    assert_eq!(e.status(), Status::InvalidArgument, "{}", e);
    for w in words {
        assert!(e.message().contains(w), "message {:?} lacks {:?}", e.message(), w);
    }
}

#[test]
fn wrong_argument_count_size_or_kind_is_an_error() {
    let dev = device();
    let module = load(dev, "saxpy");
    let saxpy = module.kernel("saxpy").unwrap();
    let n = 256u32;
    let x = dev.buffer_from(&vec![1.0f32; n as usize]).unwrap();
    let y = dev.buffer_from(&vec![2.0f32; n as usize]).unwrap();
    let cfg = LaunchConfig::cover(n, 256);
    invalid(saxpy.launch(&cfg, &args![2.0f32, &x, &y]), &["takes 4 argument(s), got 3"]);
    invalid(saxpy.launch(&cfg, &args![2.0f32, &x, &y, n, n]), &["takes 4 argument(s), got 5"]);
    invalid(saxpy.launch(&cfg, &args![2.0f64, &x, &y, n]), &["argument 0", "8 bytes", "4 bytes"]);
    invalid(saxpy.launch(&cfg, &args![2.0f32, &x, &y, n as u64]), &["argument 3", "8 bytes"]);
    invalid(saxpy.launch(&cfg, &args![2.0f32, 5u64, &y, n]), &["argument 1", "is a value but the kernel's is a pointer"]);
    invalid(saxpy.launch(&cfg, &args![&x, &x, &y, n]), &["argument 0", "is a pointer but the kernel's is a value"]);
    // Arguments packed for one kernel are refused by another.
    let other = load(dev, "saxpy4");
    let saxpy4 = other.kernel("saxpy4").unwrap();
    let packed = saxpy4.pack(&args![2.0f32, &x, &y, n]).unwrap();
    invalid(saxpy.launch_packed(&cfg, &packed), &["packed for another kernel"]);
    // None of them reached the device: y is untouched.
    assert!(y.to_vec().unwrap().iter().all(|&v| v == 2.0));
}

#[test]
fn bad_modules_and_names_are_errors_with_the_c_message() {
    let dev = device();
    let e = Module::load(dev, b"not a code object at all").unwrap_err();
    assert_eq!(e.call(), "lr_module_load");
    assert!(!e.message().is_empty());
    assert!(e.to_string().contains("lr_module_load failed"), "{}", e);
    let module = load(dev, "saxpy");
    let e = module.kernel("no_such_kernel").unwrap_err();
    assert_eq!(e.status(), Status::NotFound, "{}", e);
    assert!(e.message().contains("no_such_kernel"), "{}", e.message());
    let e = module.kernel("sa\0xpy").unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
    let e = Module::from_file(dev, "/nonexistent/saxpy.so").unwrap_err();
    assert!(e.message().contains("/nonexistent/saxpy.so"), "{}", e);
    let e = lrrt::Device::select("no-such-backend", 0).unwrap_err();
    assert_eq!(e.status(), Status::NotFound, "{}", e);
}

#[test]
fn events_order_and_time_work() {
    let dev = device();
    let module = load(dev, "saxpy");
    let saxpy = module.kernel("saxpy").unwrap();
    let n = 512usize;
    let mut rng = Rng::new();
    let (hx, hy) = (rng.quarters(n, 32), rng.quarters(n, 32));
    let (x, y) = (dev.buffer_from(&hx).unwrap(), dev.buffer_from(&hy).unwrap());
    let queue = dev.queue().unwrap();
    let (mut start, mut end) = (dev.event().unwrap(), dev.event().unwrap());
    start.record_on(&queue).unwrap();
    saxpy.launch_on(&queue, &LaunchConfig::cover(n as u32, 64), &args![1.0f32, &x, &y, n as u32]).unwrap();
    end.record_on(&queue).unwrap();
    // A default-queue launch after the queue's event: y = 2x + (x + y).
    saxpy.launch_after(&LaunchConfig::cover(n as u32, 64), &args![2.0f32, &x, &y, n as u32], &[&end]).unwrap();
    end.synchronize().unwrap();
    start.elapsed_ns(&end).unwrap();
    let got = y.to_vec().unwrap();
    for i in 0..n {
        assert_eq!(got[i], 3.0 * hx[i] + hy[i], "y[{}]", i);
    }
}

#[test]
fn a_raw_pointer_argument_is_only_built_unsafely() {
    // SAFETY: never launched; only its bytes are looked at.
    let a = unsafe { Arg::raw_pointer(0x1000) };
    assert!(a.is_pointer());
    assert_eq!(a.bytes(), &0x1000u64.to_ne_bytes());
}
