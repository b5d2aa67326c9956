// What every test file shares: the backend under test, kernel files, and
// fresh random inputs.
#![allow(dead_code)]
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::path::PathBuf;

use lrrt::{Device, Module};

/// LRRT_RUST_TEST_BACKEND (ctest: "host" or "hsa" for the stand-in), default host.
pub fn backend() -> String {
    std::env::var("LRRT_RUST_TEST_BACKEND").unwrap_or_else(|_| "host".to_string())
}

pub fn device() -> Device {
    Device::select(&backend(), 0).unwrap_or_else(|e| panic!("no {} device: {}", backend(), e))
}

/// The build's kernel folder: $LRRT_KERNEL_DIR or build/kernels of the checkout.
pub fn kernel_dir() -> PathBuf {
    match std::env::var_os("LRRT_KERNEL_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../build/kernels"),
    }
}

/// kernels/<source>.cpp built for the backend under test.
pub fn kernel_file(source: &str) -> PathBuf {
    let suffix = match backend().as_str() {
        "hsa" => "gfx1100.hsaco",
        "cuda" => "sm_90.cubin",
        _ => "host.so",
    };
    kernel_dir().join(format!("{}.{}", source, suffix))
}

pub fn load(device: Device, source: &str) -> Module {
    let path = kernel_file(source);
    Module::from_file(device, &path).unwrap_or_else(|e| panic!("{}: {}", path.display(), e))
}

/// xorshift64*, seeded from the process's random hasher keys: fresh inputs each run.
pub struct Rng(u64);

impl Rng {
    pub fn new() -> Rng {
        let mut h = RandomState::new().build_hasher();
        h.write_u64(0x9E37_79B9_7F4A_7C15);
        Rng(h.finish() | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
    /// Multiples of 1/4 of small integers: sums and a*x+y stay exact in f32.
    pub fn quarters(&mut self, n: usize, max: u64) -> Vec<f32> {
        (0..n).map(|_| self.below(4 * max) as f32 / 4.0).collect()
    }
}
