// Tests and examples of this crate run against the liblrrt.so lrrt-sys
// linked (DEP_LRRT_LIB_DIR): carry its folder as an rpath, since cargo puts
// only paths inside target/ on the loader's path.
fn main() {
    if let Ok(dir) = std::env::var("DEP_LRRT_LIB_DIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir);
    }
}
