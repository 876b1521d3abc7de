//! The TensorFlow/Rust binding of the crossbind study: evaluates the study's
//! models, exported by the TensorFlow/Python runner as SavedModels, with the
//! `tensorflow` crate (the TensorFlow 2.18 C library of the tensorflow-cpu
//! wheel through Rust), by the command line and JSON of runners/README.md.
//! Inference only, as in the published study.
//!
//! crossbind-tfrs eval MODEL --weights DIR.savedmodel --data DIR --batch B --repeat R ...
//! crossbind-tfrs bench --model M --kind infer|latency|startup --weights DIR.savedmodel ...
//! crossbind-tfrs version
// The option parser is the PyTorch/Rust runner's (it needs only `fail` and
// `models::Arch::NAMES` from this crate).
#[allow(dead_code)]
#[path = "../../pytorch-rust/src/cli.rs"]
mod cli;
mod bench;
mod data;
mod eval;
mod metrics;
mod models;
mod npy;
mod savedmodel;

pub const BINDING: &str = "tensorflow-rust";
pub const CRATE_VERSION: &str = "0.21.0";
pub const RUSTC_VERSION: &str = env!("CB_RUSTC_VERSION");

/// The C library's own version string (TF_Version).
pub fn tf_version() -> String {
    tensorflow::version().unwrap_or_else(|_| "unknown".into())
}

/// One error line on stderr, exit status 1.
pub fn fail(msg: impl std::fmt::Display) -> ! {
    eprintln!("crossbind-tfrs: error: {msg}");
    std::process::exit(1)
}

fn usage() -> ! {
    eprintln!(
        "usage: crossbind-tfrs eval MODEL --weights DIR.savedmodel [--data DIR] [--batch B] [--repeat R] \
         [--threads T] [--limit-test N] [--logits FILE.npy] [--json]\n       \
         crossbind-tfrs bench --model M --kind infer|latency|startup --weights DIR.savedmodel ...\n       \
         crossbind-tfrs version\n\
         models: {}",
        models::Arch::NAMES.join(", ")
    );
    std::process::exit(2)
}

fn main() {
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("unknown failure");
        eprintln!("crossbind-tfrs: error: {}", msg.lines().next().unwrap_or(msg));
    }));
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(cmd) = args.first() else { usage() };
    let rest = &args[1..];
    match cmd.as_str() {
        "eval" => eval::cmd_eval(rest),
        "bench" => bench::cmd_bench(rest),
        "train" => fail("train: this binding is inference only (as in the published study); train with tensorflow-python"),
        "version" | "--version" => {
            println!("tensorflow-crate {CRATE_VERSION}");
            println!("tensorflow {}", tf_version());
            println!("rustc {RUSTC_VERSION}");
        }
        "-h" | "--help" | "help" => usage(),
        other => fail(format!("unknown command {other} (known: eval, bench, version)")),
    }
}
