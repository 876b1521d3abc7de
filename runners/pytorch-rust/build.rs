//! Puts the shared libtorch's directory (found by torch-sys) into the
//! binary's run path, relative to the binary and absolute, so that it runs
//! without LD_LIBRARY_PATH; records the libtorch and rustc versions.
use std::path::{Component, Path, PathBuf};

/// `to` relative to `from`, both absolute, lexically (no symlink resolution:
/// the virtual environment may be a link).
fn relative(from: &Path, to: &Path) -> Option<PathBuf> {
    let f: Vec<Component> = from.components().collect();
    let t: Vec<Component> = to.components().collect();
    if f.first() != t.first() || f.iter().chain(t.iter()).any(|c| matches!(c, Component::ParentDir)) {
        return None;
    }
    let common = f.iter().zip(t.iter()).take_while(|(a, b)| a == b).count();
    let mut rel = PathBuf::new();
    for _ in common..f.len() {
        rel.push("..");
    }
    for c in &t[common..] {
        rel.push(c.as_os_str());
    }
    Some(rel)
}

fn main() {
    println!("cargo:rerun-if-env-changed=DEP_TCH_LIBTORCH_LIB");
    println!("cargo:rerun-if-changed=build.rs");
    let lib = PathBuf::from(std::env::var("DEP_TCH_LIBTORCH_LIB").expect("torch-sys did not report libtorch's directory"));
    // OUT_DIR is <target>/<profile>/build/<pkg>-<hash>/out; the binary sits in <target>/<profile>.
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let bin_dir = out.ancestors().nth(3).unwrap().to_path_buf();
    let mut rpath = Vec::new();
    if let Some(rel) = relative(&bin_dir, &lib) {
        rpath.push(format!("$ORIGIN/{}", rel.display()));
    }
    rpath.push(lib.display().to_string());
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", rpath.join(":"));

    let version_py = lib.parent().map(|p| p.join("version.py"));
    let version = version_py
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("__version__ = ").map(|v| v.trim_matches(|c| c == '\'' || c == '"').to_string()))
        })
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=CB_LIBTORCH_VERSION={version}");
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
