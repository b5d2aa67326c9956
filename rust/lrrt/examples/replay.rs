// cargo run --release --example replay [-- --backend B --kernel-dir DIR --samples N --json]
// The saxpy chain of `lrrt bench replay` (saxpy-chain-1000): 1000 steps of
// y = 0.25*x + y over 1024 floats, each reading x and read-writing y, so
// every step depends on the one before (RAW). Recorded once as a graph,
// then timed two ways in alternation, the order rotated each sample as the
// bench does: replay (lr_graph_exec_launch + lr_graph_exec_synchronize) and
// per-launch (1000 x lr_launch + lr_synchronize). Both are first checked
// element by element from fresh inputs. Prints each way's median time per
// dispatch (--json: one JSON object) for comparison with
// `lrrt bench replay` (scripts/gpu-session's `rust` step).
mod common;
use std::time::Instant;

use lrrt::{args, Access, Device, LaunchConfig};

const N: u32 = 1024;
const STEPS: usize = 1000;
const A: f32 = 0.25;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

fn run() -> lrrt::Result<()> {
    let o = common::options();
    let device = Device::select(&o.backend, 0)?;
    let props = device.properties()?;
    let module = common::load_kernel_module(device, &o.kernel_dir, "saxpy")?;
    let saxpy = module.kernel("saxpy")?;
    let mut rng = common::Rng::new();
    let hx: Vec<f32> = (0..N).map(|_| (1 + rng.below(16)) as f32).collect();
    let hy0: Vec<f32> = (0..N).map(|_| rng.below(1000) as f32).collect();
    let x = device.buffer_from(&hx)?;
    let y = device.buffer_from(&hy0)?;
    let cfg = LaunchConfig::linear(N / 256, 256);
    let packed = saxpy.pack(&args![A, &x, &y, N])?;

    let graph = device.graph()?;
    for _ in 0..STEPS {
        graph.add_kernel_packed(&saxpy, &cfg, &packed, &[Access::read(&x), Access::read_write(&y)])?;
    }
    let exec = graph.instantiate()?;

    let replay = || -> lrrt::Result<()> {
        exec.launch()?;
        exec.synchronize()
    };
    let per_launch = || -> lrrt::Result<()> {
        for _ in 0..STEPS {
            saxpy.launch_packed(&cfg, &packed)?;
        }
        device.synchronize()
    };
    let ways: [(&str, &dyn Fn() -> lrrt::Result<()>); 2] = [("replay", &replay), ("per-launch", &per_launch)];

    // Results first: each way once from fresh y, every element exact.
    for (name, way) in &ways {
        y.copy_from_slice(&hy0)?;
        way()?;
        let mut got = vec![f32::NAN; N as usize];
        y.copy_to_slice(&mut got)?;
        for i in 0..N as usize {
            let want = hy0[i] + STEPS as f32 * A * hx[i];
            if got[i] != want {
                eprintln!("{}: y[{}] = {}, expected {}", name, i, got[i], want);
                std::process::exit(1);
            }
        }
    }

    // Warm-up (caches, the host backend's workers, the GPU's clocks).
    for _ in 0..3 {
        for (_, way) in &ways {
            way()?;
        }
    }
    let mut times: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for sample in 0..o.samples {
        for j in 0..2 {
            let w = (sample + j) % 2;
            let t0 = Instant::now();
            (ways[w].1)()?;
            times[w].push(t0.elapsed().as_nanos() as f64 / STEPS as f64);
        }
    }
    let replay_ns = median(times[0].clone());
    let launch_ns = median(times[1].clone());
    if o.json {
        println!(
            "{{\"chain\": {}, \"backend\": \"{}\", \"device\": \"{}\", \"samples\": {}, \
             \"replay_ns_per_dispatch\": {:.1}, \"per_launch_ns_per_dispatch\": {:.1}}}",
            STEPS,
            props.backend,
            props.name.replace('"', "'"),
            o.samples,
            replay_ns,
            launch_ns
        );
    } else {
        println!("saxpy chain of {} steps on {} ({}), {} samples, median per dispatch:", STEPS, props.backend, props.name, o.samples);
        println!("  replay      {:>10.1} ns  (lr_graph_exec_launch + lr_graph_exec_synchronize)", replay_ns);
        println!("  per-launch  {:>10.1} ns  (lr_launch x {} + lr_synchronize)", launch_ns, STEPS);
        println!("  per-launch / replay = {:.2}x", launch_ns / replay_ns);
    }
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {}", e);
        std::process::exit(common::exit_code(&e));
    }
}
