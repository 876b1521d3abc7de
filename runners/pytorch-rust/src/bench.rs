//! The benchmark worker for `crossbind bench` (runners/README.md,
//! "Benchmark worker"), as runners/pytorch/cb_bench.py: one measurement of
//! one model, printed as one JSON line.
//!
//! Inputs are synthetic and the same in every binding: sample s of a batch
//! is the flat index range [s * size, (s + 1) * size) of the input, with
//! pixel i = (i % 251) / 251 for images and token i = (i * 7919) % 10000 for
//! text; the label of sample s is s % 10 (s % 2 for the binary models).
//! Batches are made outside the timed region.
use crate::cli;
use crate::fail;
use crate::io::{self, Loaded};
use crate::models::{loss_of, Arch, Net, Optim};
use serde_json::json;
use std::time::Instant;
use tch::nn::OptimizerConfig;
use tch::{nn, Kind, Reduction, Tensor};

fn batch_of(arch: Arch, s0: i64, n: i64) -> (Tensor, Tensor) {
    let shape = arch.input_shape();
    let size: i64 = shape.iter().product();
    let mut full = vec![n];
    full.extend(&shape);
    let i = Tensor::arange_start(s0 * size, (s0 + n) * size, (Kind::Int64, tch::Device::Cpu));
    let s = Tensor::arange_start(s0, s0 + n, (Kind::Int64, tch::Device::Cpu));
    if arch.binary() {
        ((i * 7919i64).remainder(10000).reshape(full.as_slice()), s.remainder(2).to_kind(Kind::Float))
    } else {
        ((i.remainder(251).to_kind(Kind::Float) / 251.0).reshape(full.as_slice()), s.remainder(10))
    }
}

/// The predicted labels, computed as cb_bench.predict does: argmax, or
/// p >= 0.5 on the binary models' output, which is already a probability.
fn predict(arch: Arch, model: &Loaded, x: &Tensor) -> Tensor {
    let out = model.forward(x);
    if arch.binary() {
        out.reshape([-1]).ge(0.5).to_kind(Kind::Int64)
    } else {
        out.argmax(1, false)
    }
}

fn train_units(arch: Arch, net: &Net, batch: i64, samples: i64, repeat: i64) -> Vec<f64> {
    let (kind, lr, _, _) = arch.protocol();
    let mut opt = match kind {
        Optim::Adam => nn::Adam::default().build(&net.vs, lr),
        Optim::Sgd => nn::Sgd::default().build(&net.vs, lr),
    }
    .unwrap_or_else(|e| fail(format!("cannot make the optimizer: {e}")));
    let mut step = |x: &Tensor, y: &Tensor| {
        let t0 = Instant::now();
        opt.zero_grad();
        loss_of(arch, &net.forward_t(x, true), y, Reduction::Mean).backward();
        opt.step();
        t0.elapsed().as_secs_f64()
    };
    let (x, y) = batch_of(arch, 0, batch);
    step(&x, &y); // warm-up
    (0..repeat)
        .map(|_| {
            let mut t = 0.0;
            let mut s0 = 0;
            while s0 < samples {
                let (x, y) = batch_of(arch, s0, batch.min(samples - s0));
                t += step(&x, &y);
                s0 += batch;
            }
            t
        })
        .collect()
}

fn infer_units(arch: Arch, model: &Loaded, batch: i64, samples: i64, repeat: i64) -> Vec<f64> {
    let _guard = tch::no_grad_guard();
    let mut times = Vec::new();
    for r in 0..=repeat {
        let mut t = 0.0;
        let mut s0 = 0;
        while s0 < samples {
            let (x, _) = batch_of(arch, s0, batch.min(samples - s0));
            let t0 = Instant::now();
            let _labels = predict(arch, model, &x);
            t += t0.elapsed().as_secs_f64();
            s0 += batch;
        }
        if r > 0 {
            times.push(t);
        }
    }
    times
}

fn latency_units(arch: Arch, model: &Loaded, samples: i64) -> Vec<f64> {
    let _guard = tch::no_grad_guard();
    let mut times = Vec::new();
    for s in 0..samples + 5 {
        let (x, _) = batch_of(arch, s, 1);
        let t0 = Instant::now();
        let _labels = predict(arch, model, &x);
        if s >= 5 {
            times.push(t0.elapsed().as_secs_f64());
        }
    }
    times
}

/// This process's peak resident memory (VmHWM), KiB; -1 if unknown.
fn vmhwm_kib() -> i64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:").and_then(|v| v.split_whitespace().next()?.parse().ok()))
        })
        .unwrap_or(-1)
}

fn monotonic_s() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

pub fn cmd_bench(args: &[String]) {
    let o = cli::parse("bench", args, &["model", "kind", "weights", "batch", "samples", "repeat", "threads"], &[]);
    if let Some(extra) = o.positional.first() {
        fail(format!("bench: unexpected argument {extra}"));
    }
    let Some(model) = o.str("model") else { fail("bench: --model is required") };
    let arch = Arch::parse(model).unwrap_or_else(|e| fail(e));
    let kind = o.str("kind").unwrap_or_else(|| fail("bench: --kind is required"));
    if !["train", "infer", "latency", "startup"].contains(&kind) {
        fail(format!("bench: --kind must be train, infer, latency or startup, got {kind}"));
    }
    let Some(weights) = o.str("weights") else { fail("bench: --weights is required") };
    let (batch, samples, repeat, threads) = (
        o.int("batch").unwrap_or(1),
        o.int("samples").unwrap_or(1),
        o.int("repeat").unwrap_or(1),
        o.int("threads").unwrap_or(1),
    );
    if batch < 1 || samples < 1 || repeat < 1 || threads < 1 {
        fail("bench: --batch, --samples, --repeat and --threads must be at least 1");
    }
    if kind == "train" && samples < batch {
        fail("bench: a training unit needs at least one whole batch (--samples >= --batch)");
    }
    crate::set_flush_denormal();
    tch::set_num_threads(threads as i32);
    let (model, _, _) = io::load_model(arch, weights).unwrap_or_else(|e| fail(e));
    if kind == "startup" {
        let label = tch::no_grad(|| i64::try_from(predict(arch, &model, &batch_of(arch, 0, 1).0).get(0)).unwrap());
        // When the answer was ready, on the clock the harness started us by.
        println!("{}", json!({"label": label, "monotonic_s": monotonic_s(), "vmhwm_kib": vmhwm_kib()}));
        return;
    }
    let times = match kind {
        "train" => match &model {
            Loaded::Native(net) => train_units(arch, net, batch, samples, repeat),
            Loaded::Script(_) => fail("bench: training needs parameters (a .safetensors or .pt file), not TorchScript"),
        },
        "infer" => infer_units(arch, &model, batch, samples, repeat),
        _ => latency_units(arch, &model, samples),
    };
    println!(
        "{}",
        json!({"times_s": times, "torch": crate::LIBTORCH_VERSION, "tch": crate::TCH_VERSION,
               "torch_threads": tch::get_num_threads(), "vmhwm_kib": vmhwm_kib()})
    );
}
