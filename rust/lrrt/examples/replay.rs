// cargo run --release --example replay [-- --backend B --kernel-dir DIR --samples N --min-time S --json]
// The saxpy chain of `lrrt bench replay` (saxpy-chain-1000): 1000 steps of
// y = 0.25*x + y over 1024 floats, each reading x and read-writing y
// (declared accesses), so every step depends on the one before (RAW).
// Recorded once as a graph, checked both ways element by element from fresh
// inputs, then timed exactly as the bench times its ways (docs/rust.md):
// replay (lr_graph_exec_launch + lr_graph_exec_synchronize) and per-launch
// (1000 x lr_launch + lr_synchronize), each once per sample in rotated order,
// with the bench's warm-up, stopping rule, median and wait limit. Prints each
// way's median time per dispatch and the method (--json: one JSON object) for
// comparison with `LRRT_BENCH_REPLAY_WAYS=lrrt lrrt bench replay`
// (scripts/rust-replay-check).
mod common;
use std::time::Instant;

use lrrt::{args, Access, Device, LaunchConfig};

const N: u32 = 1024;
const STEPS: usize = 1000;
const A: f32 = 0.25;
// `lrrt bench`'s default sampling (src/tool/bench/sampler.hpp): warm-up
// samples, the cap on samples and the time after which 3 samples suffice.
const WARMUP_SAMPLES: usize = 2;
const MAX_SAMPLES: usize = 1000;
const MAX_TIME_S: f64 = 3.0;
// The CLI's wait limit when LRRT_WAIT_TIMEOUT_MS is unset (src/cli/common.hpp,
// kDefaultTimeoutSeconds): with a limit set, a cuda wait past its spin polls
// with naps instead of sleeping in cuEventSynchronize, so both sides must wait
// under the same setting.
const CLI_WAIT_TIMEOUT_MS: u64 = 300_000;

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
    if std::env::var_os("LRRT_WAIT_TIMEOUT_MS").is_none() {
        lrrt::set_wait_timeout_ms(CLI_WAIT_TIMEOUT_MS)?;
    }
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

    // Sampling exactly as `lrrt bench` samples (src/tool/bench/sampler.cpp,
    // default_sampling): two warm-up samples, then samples until at least
    // `min_samples` exist and `min_time` passed (at most 1000 samples; past
    // 3 s, once 3 exist). A sample times each way once, the order rotated
    // by one each sample (warm-ups included), as `measure` in
    // src/tool/bench/replay.cpp does with its ways; a way's time is its
    // elapsed wall time / dispatches, from before its launch to after its
    // wait returned.
    let mut turn = 0usize;
    let mut sample = |times: &mut [Vec<f64>; 2]| -> lrrt::Result<()> {
        let start = turn % 2;
        turn += 1;
        for j in 0..2 {
            let w = (start + j) % 2;
            let t0 = Instant::now();
            (ways[w].1)()?;
            times[w].push(t0.elapsed().as_nanos() as f64 / STEPS as f64);
        }
        Ok(())
    };
    let begin = Instant::now();
    for _ in 0..WARMUP_SAMPLES {
        sample(&mut [Vec::new(), Vec::new()])?;
        if begin.elapsed().as_secs_f64() > MAX_TIME_S * 0.25 {
            break; // slow ways: one warm-up is enough (as the CLI)
        }
    }
    let mut times: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    let t0 = Instant::now();
    loop {
        sample(&mut times)?;
        let n = times[0].len();
        let elapsed = t0.elapsed().as_secs_f64();
        if n >= MAX_SAMPLES || (n >= o.samples && elapsed >= o.min_time) || (n >= 3 && elapsed >= MAX_TIME_S) {
            break;
        }
    }
    let samples = times[0].len();
    // Sample i (after the warm-ups) began with replay when WARMUP_SAMPLES + i
    // is even, so its replay followed the previous sample's replay; else it
    // followed this sample's per-launch pass (scripts/rust-replay-check splits them).
    let list = |v: &Vec<f64>| v.iter().map(|x| format!("{:.1}", x)).collect::<Vec<_>>().join(", ");
    let replay_ns = median(times[0].clone());
    let launch_ns = median(times[1].clone());
    let timeout = match std::env::var("LRRT_WAIT_TIMEOUT_MS") {
        Ok(v) => format!("LRRT_WAIT_TIMEOUT_MS={}", v),
        Err(_) => format!("{} ms (the CLI's default)", CLI_WAIT_TIMEOUT_MS),
    };
    let method = format!(
        "per sample: each way once, order rotated; replay = lr_graph_exec_launch + lr_graph_exec_synchronize, \
         per-launch = lr_launch x {} + lr_synchronize; wall time / {} dispatches; {} warm-up samples, then >= {} samples \
         and >= {} s; median; wait limit {}",
        STEPS, STEPS, WARMUP_SAMPLES, o.samples, o.min_time, timeout
    );
    if o.json {
        println!(
            "{{\"chain\": {}, \"backend\": \"{}\", \"device\": \"{}\", \"samples\": {}, \
             \"replay_ns_per_dispatch\": {:.1}, \"per_launch_ns_per_dispatch\": {:.1}, \"method\": \"{}\", \
             \"replay_samples_ns\": [{}], \"per_launch_samples_ns\": [{}]}}",
            STEPS,
            props.backend,
            props.name.replace('"', "'"),
            samples,
            replay_ns,
            launch_ns,
            method,
            list(&times[0]),
            list(&times[1])
        );
    } else {
        println!("saxpy chain of {} steps on {} ({}), {} samples, median per dispatch:", STEPS, props.backend, props.name, samples);
        println!("  replay      {:>10.1} ns  (lr_graph_exec_launch + lr_graph_exec_synchronize)", replay_ns);
        println!("  per-launch  {:>10.1} ns  (lr_launch x {} + lr_synchronize)", launch_ns, STEPS);
        println!("  per-launch / replay = {:.2}x", launch_ns / replay_ns);
        println!("  method: {}", method);
    }
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {}", e);
        std::process::exit(common::exit_code(&e));
    }
}
