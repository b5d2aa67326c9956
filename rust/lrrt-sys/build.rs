// Finds liblrrt.so and links it: $LRRT_LIBRARY_DIR, else the source tree's
// CMake build (build/src/runtime), else pkg-config's lrrt.pc (an installed
// lrrt). The folder is passed on to dependents as DEP_LRRT_LIB_DIR, so that
// their tests and examples can carry it as an rpath.
use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn has_library(dir: &Path) -> bool {
    dir.join("liblrrt.so").exists()
}

fn from_pkg_config() -> Option<PathBuf> {
    let out = Command::new("pkg-config").args(["--variable=libdir", "lrrt"]).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    if has_library(&dir) {
        Some(dir)
    } else {
        None
    }
}

fn main() {
    println!("cargo:rerun-if-env-changed=LRRT_LIBRARY_DIR");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let build_tree = manifest.join("../../build/src/runtime");
    let dir = match env::var_os("LRRT_LIBRARY_DIR") {
        Some(d) if !d.is_empty() => {
            let d = PathBuf::from(d);
            if !has_library(&d) {
                panic!("LRRT_LIBRARY_DIR={} has no liblrrt.so", d.display());
            }
            d
        }
        _ if has_library(&build_tree) => build_tree.canonicalize().unwrap(),
        _ => from_pkg_config().unwrap_or_else(|| {
            panic!(
                "liblrrt.so not found: set LRRT_LIBRARY_DIR to its folder, build lrrt in {} \
                 (cmake -S . -B build && cmake --build build), or install lrrt where pkg-config \
                 finds lrrt.pc (PKG_CONFIG_PATH)",
                manifest.join("../../build").display()
            )
        }),
    };
    println!("cargo:rerun-if-changed={}", dir.join("liblrrt.so").display());
    println!("cargo:rustc-link-search=native={}", dir.display());
    println!("cargo:rustc-link-lib=dylib=lrrt");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
    println!("cargo:lib_dir={}", dir.display());
}
