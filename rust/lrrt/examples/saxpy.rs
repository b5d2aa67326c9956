// cargo run --example saxpy [-- --backend B --kernel-dir DIR]
// y = a*x + y with the saxpy kernel on the default backend ("auto": the
// first GPU, else host): fresh random inputs, the output poisoned before
// the launch, every element checked. Exit 1 on a wrong element, 2 on an
// input error (a missing kernel file), 3 on a runtime error.
mod common;
use lrrt::{args, Device, LaunchConfig};

fn run() -> lrrt::Result<bool> {
    let o = common::options();
    let device = Device::select(&o.backend, 0)?;
    let props = device.properties()?;
    let module = common::load_kernel_module(device, &o.kernel_dir, "saxpy")?;
    let saxpy = module.kernel("saxpy")?;
    let mut rng = common::Rng::new();
    let n = (1 << 20) + rng.below(1000) as usize;
    // Quarters of small integers: a*x + y is exact, so equality is the check.
    let hx: Vec<f32> = (0..n).map(|_| rng.below(4096) as f32 / 4.0).collect();
    let hy: Vec<f32> = (0..n).map(|_| rng.below(4096) as f32 / 4.0).collect();
    let a = 0.25 * (1 + rng.below(16)) as f32;
    let x = device.buffer_from(&hx)?;
    let y = device.buffer_from(&hy)?;
    saxpy.launch(&LaunchConfig::cover(n as u32, 256), &args![a, &x, &y, n as u32])?;
    let mut got = vec![f32::NAN; n]; // poisoned: an element the copy misses stays NaN
    y.copy_to_slice(&mut got)?;
    let wrong: Vec<usize> = (0..n).filter(|&i| got[i] != a * hx[i] + hy[i]).collect();
    for &i in wrong.iter().take(5) {
        eprintln!("y[{}] = {}, expected {} * {} + {} = {}", i, got[i], a, hx[i], hy[i], a * hx[i] + hy[i]);
    }
    println!(
        "saxpy on {} {} ({}): {} elements, a = {}: {}",
        props.backend,
        device.index(),
        props.name,
        n,
        a,
        if wrong.is_empty() { "every element correct".to_string() } else { format!("{} wrong", wrong.len()) }
    );
    Ok(wrong.is_empty())
}

fn main() {
    match run() {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("error: {}", e);
            std::process::exit(common::exit_code(&e));
        }
    }
}
