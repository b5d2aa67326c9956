// The committed bindings are what bindgen makes of include/lrrt/lrrt.h now:
// a change of the C ABI without `rust/lrrt-sys/regenerate` fails here.
use std::path::PathBuf;
use std::process::Command;

#[test]
fn bindings_match_the_header() {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let bindgen = std::env::var("BINDGEN").unwrap_or_else(|_| "bindgen".to_string());
    if Command::new(&bindgen).arg("--version").output().is_err() {
        assert!(
            std::env::var_os("LRRT_REQUIRE_BINDGEN").is_none(),
            "LRRT_REQUIRE_BINDGEN is set but {} does not run (apt-get install bindgen; scripts/setup does)",
            bindgen
        );
        eprintln!("SKIPPED: {} does not run, the bindings were not regenerated (apt-get install bindgen)", bindgen);
        return;
    }
    let fresh = std::env::temp_dir().join(format!("lrrt-sys-bindings-{}.rs", std::process::id()));
    let status = Command::new(here.join("regenerate")).arg(&fresh).status().expect("run regenerate");
    assert!(status.success(), "rust/lrrt-sys/regenerate failed: {}", status);
    let fresh_text = std::fs::read_to_string(&fresh).unwrap();
    let _ = std::fs::remove_file(&fresh);
    let committed = std::fs::read_to_string(here.join("src/bindings.rs")).unwrap();
    if fresh_text != committed {
        let line = fresh_text
            .lines()
            .zip(committed.lines())
            .position(|(a, b)| a != b)
            .map(|i| i + 1)
            .unwrap_or_else(|| fresh_text.lines().count().min(committed.lines().count()) + 1);
        panic!(
            "rust/lrrt-sys/src/bindings.rs differs from what bindgen makes of include/lrrt/lrrt.h \
             (first at line {}): run rust/lrrt-sys/regenerate and commit the result",
            line
        );
    }
}
