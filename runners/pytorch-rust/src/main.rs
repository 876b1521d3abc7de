//! The PyTorch/Rust binding of the crossbind study: trains and evaluates the
//! study's models with tch (libtorch 2.7 through Rust) by the protocol,
//! command line and JSON of runners/README.md, as runners/pytorch/
//! crossbind_torch.py does through Python.
//!
//! crossbind-tch train MODEL --run I --epochs E --threads T --data DIR --out DIR ...
//! crossbind-tch eval MODEL --weights FILE --data DIR --batch B --repeat R ...
//! crossbind-tch bench --model M --kind K --weights FILE ...
//! crossbind-tch version
mod bench;
mod cli;
mod data;
mod eval;
mod io;
mod models;
mod train;

use std::ffi::c_void;

pub const BINDING: &str = "pytorch-rust";
pub const TCH_VERSION: &str = "0.20.0";
pub const LIBTORCH_VERSION: &str = env!("CB_LIBTORCH_VERSION");
pub const RUSTC_VERSION: &str = env!("CB_RUSTC_VERSION");

/// One error line on stderr, exit status 1.
pub fn fail(msg: impl std::fmt::Display) -> ! {
    eprintln!("crossbind-tch: error: {msg}");
    std::process::exit(1)
}

// at::globalContext().setFlushDenormal(bool): what torch.set_flush_denormal
// calls. tch wraps no such function, so the two C++ symbols are declared here
// by their (Itanium ABI) names; torch-sys links libtorch_cpu, which exports them.
extern "C" {
    #[link_name = "_ZN2at13globalContextEv"]
    fn at_global_context() -> *mut c_void;
    #[link_name = "_ZN2at7Context16setFlushDenormalEb"]
    fn at_context_set_flush_denormal(ctx: *mut c_void, on: bool) -> bool;
}

/// Subnormal floats flushed to zero, as the Python runner and crossbind do
/// (gradients vanishing through 300 recurrent steps become subnormal and
/// each operation on one costs a microcode assist). Called before libtorch
/// starts its worker threads, which inherit the setting.
pub fn set_flush_denormal() {
    unsafe {
        at_context_set_flush_denormal(at_global_context(), true);
    }
}

fn usage() -> ! {
    eprintln!(
        "usage: crossbind-tch train MODEL --out DIR [--run I] [--epochs E] [--threads T] [--data DIR] ...\n       \
         crossbind-tch eval MODEL --weights FILE [--data DIR] [--batch B] [--repeat R] [--logits FILE.npy] [--json]\n       \
         crossbind-tch bench --model M --kind train|infer|latency|startup --weights FILE ...\n       \
         crossbind-tch version\n\
         models: {}",
        models::Arch::NAMES.join(", ")
    );
    std::process::exit(2)
}

fn main() {
    // A libtorch error that tch turns into a panic still ends as one error line.
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("unknown failure");
        let first = msg.lines().next().unwrap_or(msg);
        eprintln!("crossbind-tch: error: libtorch: {first}");
    }));
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(cmd) = args.first() else { usage() };
    let rest = &args[1..];
    match cmd.as_str() {
        "train" => train::cmd_train(rest),
        "eval" => eval::cmd_eval(rest),
        "bench" => bench::cmd_bench(rest),
        "version" | "--version" => {
            println!("tch {TCH_VERSION}");
            println!("libtorch {LIBTORCH_VERSION}");
            println!("rustc {RUSTC_VERSION}");
        }
        "-h" | "--help" | "help" => usage(),
        other => fail(format!("unknown command {other} (known: train, eval, bench, version)")),
    }
}
