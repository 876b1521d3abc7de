//! Puts the runner's tflib/ directory (install.sh's links to the wheel's
//! TensorFlow libraries) into the binary's run path, relative to the binary
//! and absolute, so that it runs without LD_LIBRARY_PATH; records the rustc
//! version.
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let lib = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("tflib");
    // The binary sits in <manifest>/target/<profile> when CARGO_TARGET_DIR is
    // the runner's target/ (install.sh sets it).
    println!("cargo:rustc-link-arg=-Wl,-rpath,$ORIGIN/../../tflib:{}", lib.display());
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let rv = std::process::Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.split_whitespace().nth(1).map(str::to_string))
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=CB_RUSTC_VERSION={rv}");
}
