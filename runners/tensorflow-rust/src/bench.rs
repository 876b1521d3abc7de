//! The benchmark worker for `crossbind bench` (runners/README.md,
//! "Benchmark worker"): one inference measurement of one model, given as a
//! SavedModel directory, printed as one JSON line. This binding does not
//! train, so its kinds are infer, latency and startup.
//!
//! Inputs are synthetic and the same in every binding: sample s is the flat
//! index range [s * size, (s + 1) * size) of the input in PyTorch's NCHW
//! order (moved to TensorFlow's NHWC here), with pixel i = (i % 251) / 251
//! for images and token i = (i * 7919) % 10000 for text. Batches are made
//! outside the timed region.
use crate::cli;
use crate::data::Inputs;
use crate::fail;
use crate::models::Arch;
use crate::savedmodel::{make_batch, Batch, Model};
use serde_json::json;
use std::time::Instant;

fn batch_of(arch: Arch, s0: usize, n: usize) -> Batch {
    let shape: Vec<u64> = arch.input_shape().iter().map(|&d| d as u64).collect();
    let size: usize = shape.iter().product::<u64>() as usize;
    let base = s0 * size;
    let x = if arch.binary() {
        Inputs::Tokens((base..base + n * size).map(|i| ((i as u64 * 7919) % 10000) as i32).collect())
    } else {
        let (h, w, c) = (shape[0] as usize, shape[1] as usize, shape[2] as usize);
        let mut v = Vec::with_capacity(n * size);
        for s in 0..n {
            for y in 0..h {
                for xx in 0..w {
                    for ch in 0..c {
                        let i = base + s * size + (ch * h + y) * w + xx; // the NCHW flat index
                        v.push((i % 251) as f32 / 251.0f32);
                    }
                }
            }
        }
        Inputs::Images(v)
    };
    make_batch(&x, &shape, 0, n)
}

/// Predicted labels: argmax of the logits, or p >= 0.5 of the probability.
fn predict(model: &Model, x: &Batch) -> Vec<i64> {
    let out = model.run(x).unwrap_or_else(|e| fail(e));
    let k = model.outputs;
    out.chunks(k)
        .map(|row| {
            if k == 1 {
                (row[0] >= 0.5) as i64
            } else {
                (0..k).fold(0, |b, j| if row[j] > row[b] { j } else { b }) as i64
            }
        })
        .collect()
}

fn infer_units(arch: Arch, model: &Model, batch: usize, samples: usize, repeat: usize) -> Vec<f64> {
    let batches: Vec<Batch> =
        (0..samples).step_by(batch).map(|s0| batch_of(arch, s0, batch.min(samples - s0))).collect();
    let mut times = Vec::new();
    for r in 0..=repeat {
        let t0 = Instant::now();
        for b in &batches {
            let _labels = predict(model, b);
        }
        if r > 0 {
            times.push(t0.elapsed().as_secs_f64());
        }
    }
    times
}

fn latency_units(arch: Arch, model: &Model, samples: usize) -> Vec<f64> {
    let inputs: Vec<Batch> = (0..samples + 5).map(|s| batch_of(arch, s, 1)).collect();
    let mut times = Vec::new();
    for (s, x) in inputs.iter().enumerate() {
        let t0 = Instant::now();
        let _label = predict(model, x);
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
    if kind == "train" {
        fail("bench: this binding does not train (inference only: infer, latency, startup)");
    }
    if !["infer", "latency", "startup"].contains(&kind) {
        fail(format!("bench: --kind must be infer, latency or startup, got {kind}"));
    }
    let Some(weights) = o.str("weights") else { fail("bench: --weights DIR (a SavedModel directory) is required") };
    let (batch, samples, repeat, threads) = (
        o.int("batch").unwrap_or(1),
        o.int("samples").unwrap_or(1),
        o.int("repeat").unwrap_or(1),
        o.int("threads").unwrap_or(1),
    );
    if batch < 1 || samples < 1 || repeat < 1 || threads < 1 {
        fail("bench: --batch, --samples, --repeat and --threads must be at least 1");
    }
    let model = Model::load(weights, arch, threads as usize).unwrap_or_else(|e| fail(e));
    if kind == "startup" {
        let label = predict(&model, &batch_of(arch, 0, 1))[0];
        // When the answer was ready, on the clock the harness started us by.
        println!("{}", json!({"label": label, "monotonic_s": monotonic_s(), "vmhwm_kib": vmhwm_kib()}));
        return;
    }
    let times = if kind == "infer" {
        infer_units(arch, &model, batch as usize, samples as usize, repeat as usize)
    } else {
        latency_units(arch, &model, samples as usize)
    };
    println!(
        "{}",
        json!({"times_s": times, "tensorflow": crate::tf_version(), "tensorflow_crate": crate::CRATE_VERSION,
               "intra_op_threads": threads, "vmhwm_kib": vmhwm_kib()})
    );
}
