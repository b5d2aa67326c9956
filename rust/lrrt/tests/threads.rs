// Send/Sync as lrrt.h's thread contract allows, and one exec and one queue
// used from several threads at once.
mod common;
use common::{device, load, Rng};
use lrrt::{args, Access, LaunchConfig};

fn send_sync<T: Send + Sync>() {}
fn send<T: Send>() {}

#[test]
fn handles_are_send_and_sync_where_lrrt_h_allows() {
    send_sync::<lrrt::Device>();
    send_sync::<lrrt::DeviceBuffer<f32>>();
    send_sync::<lrrt::PinnedBuffer<f32>>();
    send_sync::<lrrt::Module>();
    send_sync::<lrrt::Kernel<'static>>();
    send_sync::<lrrt::Queue>();
    send_sync::<lrrt::Event>();
    send_sync::<lrrt::Graph<'static>>();
    send_sync::<lrrt::GraphExec<'static>>();
    send::<lrrt::PinnedHostDoubleBuffer<f32>>();
    send_sync::<lrrt::Error>();
}

#[test]
fn one_exec_and_one_queue_from_several_threads() {
    let dev = device();
    let module = load(dev, "vector_add");
    let add = module.kernel("vector_add_i32").unwrap();
    let mut rng = Rng::new();
    let n = 1024usize;
    let ha: Vec<i32> = (0..n).map(|_| (rng.next_u64() % 1000) as i32).collect();
    let a = dev.buffer_from(&ha).unwrap();
    let c = dev.buffer_from(&vec![-1i32; n]).unwrap();
    let outs: Vec<_> = (0..4).map(|_| dev.buffer_from(&vec![-1i32; n]).unwrap()).collect();
    let graph = dev.graph().unwrap();
    let cfg = LaunchConfig::cover(n as u32, 128);
    graph.add_kernel(&add, &cfg, &args![&a, &a, &c, n as u32], &[Access::read(&a), Access::write(&c)]).unwrap();
    let exec = graph.instantiate().unwrap();
    let queue = dev.queue().unwrap();
    std::thread::scope(|s| {
        for out in &outs {
            let (exec, queue, add, a) = (&exec, &queue, &add, &a);
            s.spawn(move || {
                for _ in 0..10 {
                    exec.launch().unwrap();
                    add.launch_on(queue, &cfg, &args![a, a, out, n as u32]).unwrap();
                }
                exec.synchronize().unwrap();
                queue.synchronize().unwrap();
            });
        }
    });
    dev.synchronize().unwrap();
    let want: Vec<i32> = ha.iter().map(|v| 2 * v).collect();
    assert_eq!(c.to_vec().unwrap(), want);
    for out in &outs {
        assert_eq!(out.to_vec().unwrap(), want);
    }
}
