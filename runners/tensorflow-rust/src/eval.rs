//! The `eval` command: a SavedModel over the test set, one warm-up pass and
//! R timed passes in batches, the last pass's outputs to --logits, one JSON
//! line (runners/README.md).
use crate::cli;
use crate::data::{self, Split};
use crate::fail;
use crate::metrics;
use crate::models::{Arch, DataFormat};
use crate::npy;
use crate::savedmodel::{make_batch, Batch, Model};
use serde_json::json;
use std::time::Instant;

/// A number for JSON, null where it is not finite.
pub fn num(x: f64) -> serde_json::Value {
    if x.is_finite() {
        json!(x)
    } else {
        serde_json::Value::Null
    }
}

/// The model's test split (--data or the model's default directory).
pub fn load_data(arch: Arch, dir: Option<&str>, limit: usize) -> Split {
    let fmt = arch.data_format();
    let dir = dir.unwrap_or(fmt.default_dir());
    let r = match fmt {
        DataFormat::Mnist => data::load_mnist(dir, false, limit),
        DataFormat::Cifar => data::load_cifar(dir, false, limit),
        DataFormat::Imdb => data::load_imdb(dir, false, limit),
    };
    let split = r.unwrap_or_else(|e| fail(e));
    if split.shape != arch.input_shape().iter().map(|&d| d as u64).collect::<Vec<_>>() {
        fail(format!("{dir}: samples of shape {:?}, {} takes {:?}", split.shape, arch.name(), arch.input_shape()));
    }
    if split.len() == 0 {
        fail(format!("{dir}: the test set is empty"));
    }
    split
}

/// One pass in file order: the outputs [n * k] and the seconds the session
/// runs took (feeding the prepared batches and copying the outputs out).
fn pass(model: &Model, batches: &[Batch]) -> (Vec<f32>, f64) {
    let mut out = Vec::new();
    let t0 = Instant::now();
    for b in batches {
        let t = model.run(b).unwrap_or_else(|e| fail(e));
        out.extend_from_slice(&t);
    }
    (out, t0.elapsed().as_secs_f64())
}

pub fn cmd_eval(args: &[String]) {
    let o = cli::parse(
        "eval",
        args,
        &["weights", "data", "batch", "repeat", "limit-test", "threads", "logits", "device"],
        &["json"],
    );
    let arch = Arch::parse(o.model("eval")).unwrap_or_else(|e| fail(e));
    let Some(weights) = o.str("weights") else { fail("eval: --weights DIR (a SavedModel directory) is required") };
    let batch = o.int_min("batch", 1).unwrap_or(128) as usize;
    let repeat = o.int_min("repeat", 1).unwrap_or(5) as usize;
    let threads =
        o.int_min("threads", 1).unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get() as i64));
    let limit = o.int_min("limit-test", 0).unwrap_or(0) as usize;
    o.check_device();
    let model = Model::load(weights, arch, threads as usize).unwrap_or_else(|e| fail(e));
    let split = load_data(arch, o.str("data"), limit);
    let n = split.len();
    let batches: Vec<Batch> =
        (0..n).step_by(batch).map(|s0| make_batch(&split.x, &split.shape, s0, batch.min(n - s0))).collect();
    drop(split.x);
    pass(&model, &batches); // warm-up
    let (mut times, mut counts) = (Vec::new(), Vec::new());
    let mut last = None;
    for i in 0..repeat {
        let (out, seconds) = pass(&model, &batches);
        // F1 and AUC of the last pass; no pass's time includes the scoring
        let s = metrics::score(&out, model.outputs, &split.labels, i == repeat - 1);
        times.push(seconds);
        counts.push(s.correct);
        last = Some((out, s));
    }
    let (out, s) = last.unwrap();
    if let Some(path) = o.str("logits") {
        npy::write_f32(path, &out, n, model.outputs).unwrap_or_else(|e| fail(e));
    }
    let accuracy = s.correct as f64 / n as f64;
    let mean = times.iter().sum::<f64>() / times.len() as f64;
    if o.flag("json") {
        let res = json!({
            "binding": crate::BINDING, "model": arch.name(), "load_mode": "serialization", "format": "savedmodel",
            "weights": weights, "correct": s.correct, "total": n, "accuracy": num(accuracy),
            "loss": num(s.loss), "f1_macro": num(s.f1), "auc_macro": num(s.auc), "batch": batch,
            "threads": threads, "times_s": times, "correct_per_pass": counts, "mean_time_s": mean,
        });
        println!("{res}");
    } else {
        println!(
            "{}: {}/{} correct, accuracy {:.4}, loss {:.4}, macro F1 {:.4}, AUC {:.4}, mean time {:.4}s over {} passes",
            arch.name(), s.correct, n, accuracy, s.loss, s.f1, s.auc, mean, repeat
        );
    }
}
