// What both examples share: options, finding a kernel's build for the
// device (as `lrrt run` resolves @kernels/NAME.*), fresh random inputs.
#![allow(dead_code)]
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::path::PathBuf;

use lrrt::{Device, Module};

pub struct Options {
    pub backend: String,
    pub kernel_dir: PathBuf,
    /// At least this many samples (`lrrt bench --min-samples`, default 10) ...
    pub samples: usize,
    /// ... and at least this many seconds of them (`--min-time`, default 0.2).
    pub min_time: f64,
    pub json: bool,
}

/// --backend B (default auto), --kernel-dir DIR (default $LRRT_KERNEL_DIR,
/// else the checkout's build/kernels), --samples N (at least N samples, as
/// `lrrt bench --min-samples`), --min-time S (and at least S seconds of
/// them, as `lrrt bench --min-time`), --json.
pub fn options() -> Options {
    let mut o = Options {
        backend: "auto".to_string(),
        kernel_dir: match std::env::var_os("LRRT_KERNEL_DIR") {
            Some(d) if !d.is_empty() => PathBuf::from(d),
            _ => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../build/kernels"),
        },
        samples: 10,
        min_time: 0.2,
        json: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().unwrap_or_else(|| fail(&format!("{} needs a value", name)));
        match a.as_str() {
            "--backend" => o.backend = value("--backend"),
            "--kernel-dir" => o.kernel_dir = PathBuf::from(value("--kernel-dir")),
            "--samples" => {
                o.samples = value("--samples").parse().ok().filter(|&n| n > 0).unwrap_or_else(|| fail("--samples takes a count > 0"))
            }
            "--min-time" => {
                o.min_time = value("--min-time")
                    .parse()
                    .ok()
                    .filter(|&s: &f64| s.is_finite() && (0.0..=86400.0).contains(&s))
                    .unwrap_or_else(|| fail("--min-time takes seconds from 0 to 86400"))
            }
            "--json" => o.json = true,
            other => fail(&format!(
                "unknown option {:?} (--backend B, --kernel-dir DIR, --samples N, --min-time S, --json)",
                other
            )),
        }
    }
    o
}

pub fn fail(message: &str) -> ! {
    eprintln!("error: {}", message);
    std::process::exit(2)
}

/// kernels/<source>.cpp as built for the device: <source>.host.so,
/// <source>.<arch>.hsaco or <source>.<arch>.cubin (then .fatbin, .ptx).
pub fn load_kernel_module(device: Device, dir: &std::path::Path, source: &str) -> lrrt::Result<Module> {
    let p = device.properties()?;
    let names: Vec<String> = match p.backend.as_str() {
        "host" => vec![format!("{}.host.so", source)],
        "hsa" => vec![format!("{}.{}.hsaco", source, p.arch), format!("{}.bundle.hsaco", source)],
        _ => vec![format!("{}.{}.cubin", source, p.arch), format!("{}.fatbin", source), format!("{}.ptx", source)],
    };
    for n in &names {
        let path = dir.join(n);
        if path.is_file() {
            return Module::from_file(device, path);
        }
    }
    Err(lrrt::Error::new(
        lrrt::Status::NotFound,
        "examples::load_kernel_module",
        format!("no {} build of {} for {} in {} (looked for {}; set --kernel-dir or $LRRT_KERNEL_DIR)",
                p.backend, source, p.arch, dir.display(), names.join(", ")),
    ))
}

pub struct Rng(u64);
impl Rng {
    pub fn new() -> Rng {
        let mut h = RandomState::new().build_hasher();
        h.write_u64(0x9E37_79B9_7F4A_7C15);
        Rng(h.finish() | 1)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

/// lrrt's exit codes (docs/errors.md): 2 for an input error (an invalid
/// argument, a bad or missing code object, an unknown kernel), 3 otherwise.
pub fn exit_code(e: &lrrt::Error) -> i32 {
    use lrrt::Status::*;
    match e.status() {
        InvalidArgument | InvalidImage | NotFound => 2,
        _ => 3,
    }
}
