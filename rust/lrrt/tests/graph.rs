// Graphs: a recorded chain replays to the exact result, patches apply to the
// next replay, a missing declaration is refused, copies and fills record.
mod common;
use common::{device, load, Rng};
use lrrt::{args, Access, AccessMode, Arg, InstantiateOptions, LaunchConfig, PinnedHostDoubleBuffer, Status};

#[test]
fn a_saxpy_chain_replays_exactly_and_patches_apply() {
    let dev = device();
    let module = load(dev, "saxpy");
    let saxpy = module.kernel("saxpy").unwrap();
    let mut rng = Rng::new();
    let n = 1024usize;
    let steps = 8 + rng.below(8) as usize;
    let (hx, hy) = (rng.quarters(n, 16), rng.quarters(n, 1000));
    let x = dev.buffer_from(&hx).unwrap();
    let y = dev.buffer_from(&hy).unwrap();
    let graph = dev.graph().unwrap();
    let cfg = LaunchConfig::cover(n as u32, 256);
    let mut nodes = Vec::new();
    for _ in 0..steps {
        nodes.push(
            graph.add_kernel(&saxpy, &cfg, &args![0.25f32, &x, &y, n as u32], &[Access::read(&x), Access::read_write(&y)]).unwrap(),
        );
    }
    assert_eq!(nodes[1].0, nodes[0].0 + 1);
    let exec = graph.instantiate_with(InstantiateOptions { max_lanes: 0, patch_waits: true }).unwrap();
    assert!(exec.plan_json().unwrap().contains("RAW"));
    // Two replays: y + 2 * steps * 0.25 * x.
    y.copy_from_slice(&vec![f32::NAN; n]).unwrap();
    y.copy_from_slice(&hy).unwrap();
    exec.launch().unwrap();
    exec.launch().unwrap();
    exec.synchronize().unwrap();
    assert!(exec.is_complete().unwrap());
    let got = y.to_vec().unwrap();
    for i in 0..n {
        assert_eq!(got[i], hy[i] + 2.0 * steps as f32 * 0.25 * hx[i], "y[{}]", i);
    }
    // Patch a of the first step, typed and checked, then raw bytes of the last.
    y.copy_from_slice(&hy).unwrap();
    exec.set_arg(nodes[0], 0, Arg::from(1.5f32)).unwrap();
    exec.set_kernargs(*nodes.last().unwrap(), 0, &2.0f32.to_ne_bytes()).unwrap();
    exec.launch().unwrap();
    exec.synchronize().unwrap();
    let got = y.to_vec().unwrap();
    let coef = 1.5 + 2.0 + (steps - 2) as f32 * 0.25;
    for i in 0..n {
        assert_eq!(got[i], hy[i] + coef * hx[i], "patched y[{}]", i);
    }
    assert!(exec.stats().unwrap().replays >= 3);
    let e = exec.set_arg(nodes[0], 0, Arg::from(1.5f64)).unwrap_err();
    assert!(e.message().contains("8 bytes but the kernel's is 4"), "{}", e);
    let e = exec.set_arg(nodes[0], 1, Arg::from(7u64)).unwrap_err();
    assert!(e.message().contains("is a value but the kernel's is a pointer"), "{}", e);
    let e = exec.set_arg(nodes[0], 4, Arg::from(1u32)).unwrap_err();
    assert!(e.message().contains("takes 4 argument(s)"), "{}", e);
}

#[test]
fn an_undeclared_buffer_is_refused_at_instantiate() {
    let dev = device();
    let module = load(dev, "saxpy");
    let saxpy = module.kernel("saxpy").unwrap();
    let (x, y) = (dev.buffer::<f32>(64).unwrap(), dev.buffer::<f32>(64).unwrap());
    let graph = dev.graph().unwrap();
    graph.add_kernel(&saxpy, &LaunchConfig::linear(1, 64), &args![1.0f32, &x, &y, 64u32], &[Access::read(&x)]).unwrap();
    let e = graph.instantiate().unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
    assert_eq!(e.call(), "lr_graph_instantiate");
    assert!(!e.message().is_empty());
    // The count is checked before anything is recorded.
    let e = graph.add_kernel(&saxpy, &LaunchConfig::linear(1, 64), &args![1.0f32, &x], &[]).unwrap_err();
    assert!(e.message().contains("takes 4 argument(s), got 2"), "{}", e);
}

#[test]
fn copies_fills_and_explicit_dependencies_replay() {
    let dev = device();
    let mut rng = Rng::new();
    let n = 777usize;
    let host: Vec<u32> = (0..n).map(|_| rng.next_u64() as u32).collect();
    let src = dev.buffer_from(&host).unwrap();
    let dst = dev.buffer_from(&vec![0u32; n]).unwrap();
    let filled = dev.buffer_from(&vec![0u32; n]).unwrap();
    let pattern = rng.next_u64() as u32;
    let graph = dev.graph().unwrap();
    let fill = graph.add_fill(&filled, pattern).unwrap();
    let copy = graph.add_copy(&dst, &src, n).unwrap();
    graph.add_dependency(fill, copy).unwrap();
    assert!(graph.add_copy(&dst, &src, n + 1).is_err());
    let exec = graph.instantiate().unwrap();
    let queue = dev.queue().unwrap();
    let mut done = dev.event().unwrap();
    exec.launch_with_event(Some(&queue), &mut done).unwrap();
    done.synchronize().unwrap();
    assert_eq!(dst.to_vec().unwrap(), host);
    assert!(filled.to_vec().unwrap().iter().all(|&v| v == pattern));
    // A fill whose pattern does not divide the size is the C ABI's error.
    let odd = dev.buffer::<u8>(3).unwrap();
    let g2 = dev.graph().unwrap();
    let e = g2.add_fill(&odd, 0xABCDu16).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument, "{}", e);
}

#[test]
fn a_partial_access_range_is_enough_for_its_step() {
    let dev = device();
    let module = load(dev, "saxpy");
    let saxpy = module.kernel("saxpy").unwrap();
    let mut rng = Rng::new();
    let n = 256usize;
    let (hx, hy) = (rng.quarters(2 * n, 16), rng.quarters(2 * n, 16));
    let x = dev.buffer_from(&hx).unwrap();
    let y = dev.buffer_from(&hy).unwrap();
    let graph = dev.graph().unwrap();
    graph
        .add_kernel(
            &saxpy,
            &LaunchConfig::cover(n as u32, 64),
            &args![2.0f32, &x, &y, n as u32],
            &[Access::elements(&x, AccessMode::Read, 0, n), Access::elements(&y, AccessMode::ReadWrite, 0, n)],
        )
        .unwrap();
    graph.instantiate().unwrap().launch().unwrap();
    dev.synchronize().unwrap();
    let got = y.to_vec().unwrap();
    for i in 0..2 * n {
        let want = if i < n { 2.0 * hx[i] + hy[i] } else { hy[i] };
        assert_eq!(got[i], want, "y[{}]", i);
    }
}

#[test]
fn the_double_buffer_streams_every_round() {
    let dev = device();
    let module = load(dev, "saxpy");
    let saxpy = module.kernel("saxpy").unwrap();
    let mut rng = Rng::new();
    let n = 2048usize;
    let rounds = 6;
    let xs = [dev.buffer::<f32>(n).unwrap(), dev.buffer::<f32>(n).unwrap()];
    let y = dev.buffer_from(&vec![0.0f32; n]).unwrap();
    let inputs: Vec<Vec<f32>> = (0..rounds).map(|_| rng.quarters(n, 64)).collect();
    let mut db = PinnedHostDoubleBuffer::<f32>::new(dev, n).unwrap();
    assert_eq!(db.slot_len(), n);
    for (round, input) in inputs.iter().enumerate() {
        let x = &xs[round % 2];
        let mut slot = db.acquire().unwrap();
        slot.copy_from_slice(input);
        let copying = slot.copy_to_device(x, n).unwrap();
        copying.launch_after_copy(&saxpy, &LaunchConfig::cover(n as u32, 256), &args![1.0f32, x, &y, n as u32]).unwrap();
        copying.mark_work_submitted().unwrap();
    }
    db.finish().unwrap();
    let got = y.to_vec().unwrap();
    for i in 0..n {
        let want: f32 = inputs.iter().map(|v| v[i]).sum();
        assert_eq!(got[i], want, "y[{}]", i);
    }
    let slot = db.acquire().unwrap();
    let e = slot.copy_to_device(&y, n + 1).err().unwrap();
    assert!(e.message().contains("needs 2049"), "{}", e);
}

#[test]
fn registered_host_memory_replays_in_a_graph() {
    let dev = device();
    if common::backend() != "host" {
        // Only the host backend's kernels reach plain host memory.
        eprintln!("SKIPPED on {}: plain host memory is reachable by the host backend only", common::backend());
        return;
    }
    let module = load(dev, "saxpy");
    let saxpy = module.kernel("saxpy").unwrap();
    let mut rng = Rng::new();
    let n = 300usize;
    let hx = rng.quarters(n, 16);
    let hy0 = rng.quarters(n, 100);
    let x = dev.buffer_from(&hx).unwrap();
    let mut y_host = hy0.clone();
    {
        let y = lrrt::MemoryRegistration::new(dev, &mut y_host[..]).unwrap();
        assert_eq!(y.size_bytes(), n * 4);
        let graph = dev.graph().unwrap();
        graph
            .add_kernel(
                &saxpy,
                &LaunchConfig::cover(n as u32, 64),
                &args![0.5f32, &x, &y, n as u32],
                &[Access::read(&x), Access::registered(&y, AccessMode::ReadWrite, 0, 0)],
            )
            .unwrap();
        let exec = graph.instantiate().unwrap();
        exec.launch().unwrap();
        exec.launch().unwrap();
        // No synchronize: dropping the exec (then the registration) waits for the replays.
    }
    for i in 0..n {
        assert_eq!(y_host[i], hy0[i] + hx[i], "y[{}]", i);
    }
    // A range overlapping another registration is the C ABI's error.
    let mut v = vec![0u32; 16];
    let r = lrrt::MemoryRegistration::new(dev, &mut v[..]).unwrap();
    let e = unsafe { lrrt::MemoryRegistration::from_raw(dev, (r.as_ptr() as *mut u8).add(4) as *mut _, 8) }.unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument, "{}", e);
}

#[test]
fn derived_accesses_need_no_declaration() {
    let dev = device();
    let module = load(dev, "saxpy");
    let saxpy = module.kernel("saxpy").unwrap();
    let (mode, _source) = saxpy.arg_access(2).unwrap();
    assert!(matches!(mode, AccessMode::Write | AccessMode::ReadWrite), "{:?}", mode);
    assert!(saxpy.arg_access(4).is_err());
    let mut rng = Rng::new();
    let n = 512usize;
    let (hx, hy) = (rng.quarters(n, 16), rng.quarters(n, 100));
    let x = dev.buffer_from(&hx).unwrap();
    let y = dev.buffer_from(&hy).unwrap();
    let cfg = LaunchConfig::cover(n as u32, 128);
    // Without derivation the undeclared buffers are refused...
    let plain = dev.graph().unwrap();
    plain.add_kernel(&saxpy, &cfg, &args![1.0f32, &x, &y, n as u32], &[]).unwrap();
    assert!(plain.instantiate().is_err());
    // ...with it, two RAW-ordered steps replay exactly.
    let graph = dev.graph().unwrap();
    graph.add_kernel_derived(&saxpy, &cfg, &args![1.0f32, &x, &y, n as u32], &[]).unwrap();
    graph.add_kernel_derived(&saxpy, &cfg, &args![2.0f32, &x, &y, n as u32], &[]).unwrap();
    let exec = graph.instantiate().unwrap();
    assert!(exec.plan_json().unwrap().contains("source"));
    exec.launch().unwrap();
    exec.synchronize().unwrap();
    let got = y.to_vec().unwrap();
    for i in 0..n {
        assert_eq!(got[i], hy[i] + 3.0 * hx[i], "y[{}]", i);
    }
}
