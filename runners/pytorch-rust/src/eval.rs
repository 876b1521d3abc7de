//! Evaluation passes, the metrics (accuracy, macro F1, macro one-vs-rest
//! AUC) and the `eval` command.
use crate::cli;
use crate::data;
use crate::fail;
use crate::io::{self, num};
use crate::models::{loss_of, Arch, DataFormat};
use serde_json::json;
use std::time::Instant;
use tch::{Kind, Reduction, Tensor};

pub struct EvalResult {
    pub correct: i64,
    pub accuracy: f64,
    pub loss: f64,
    pub f1: f64,
    pub auc: f64,
    pub seconds: f64,
    pub logits: Tensor,
}

/// One pass in file order in batches of `batch`, gradients off. Binary
/// models: prediction p >= 0.5, binary cross-entropy, F1 over both classes
/// and the AUC of p. The time covers the forward passes and losses only.
pub fn evaluate<F: Fn(&Tensor) -> Tensor>(
    forward: F,
    arch: Arch,
    x: &Tensor,
    y: &Tensor,
    batch: i64,
    with_metrics: bool,
) -> EvalResult {
    let _guard = tch::no_grad_guard();
    let n = x.size()[0];
    let t0 = Instant::now();
    let mut outs = Vec::new();
    let mut loss_sum = 0.0f64;
    let mut i = 0;
    while i < n {
        let len = batch.min(n - i);
        let out = forward(&x.narrow(0, i, len));
        loss_sum += f64::try_from(loss_of(arch, &out, &y.narrow(0, i, len), Reduction::Sum)).unwrap();
        outs.push(out);
        i += len;
    }
    let seconds = t0.elapsed().as_secs_f64();
    let logits = Tensor::cat(&outs, 0);
    let labels: Vec<i64> = Vec::try_from(y.to_kind(Kind::Int64)).unwrap();
    let pred_t = if arch.binary() { logits.select(1, 0).ge(0.5).to_kind(Kind::Int64) } else { logits.argmax(1, false) };
    let pred: Vec<i64> = Vec::try_from(pred_t).unwrap();
    let correct = pred.iter().zip(&labels).filter(|(p, l)| p == l).count() as i64;
    let (mut f1, mut auc) = (f64::NAN, f64::NAN);
    if with_metrics {
        if arch.binary() {
            let p: Vec<f32> = Vec::try_from(logits.select(1, 0).contiguous()).unwrap();
            f1 = f1_macro(&pred, &labels, 2);
            let pos: Vec<bool> = labels.iter().map(|&l| l == 1).collect();
            auc = auc_binary(&p, &pos);
        } else {
            let probs = logits.softmax(1, Kind::Float);
            f1 = f1_macro(&pred, &labels, 10);
            auc = auc_macro(&probs, &labels, 10);
        }
    }
    EvalResult {
        correct,
        accuracy: correct as f64 / n as f64,
        loss: loss_sum / n as f64,
        f1,
        auc,
        seconds,
        logits,
    }
}

/// Macro F1 over the classes that occur in the predictions or the labels.
pub fn f1_macro(pred: &[i64], labels: &[i64], k: i64) -> f64 {
    let mut scores = Vec::new();
    for c in 0..k {
        let (mut tp, mut fp, mut fneg) = (0u64, 0u64, 0u64);
        for (&p, &l) in pred.iter().zip(labels) {
            match (p == c, l == c) {
                (true, true) => tp += 1,
                (true, false) => fp += 1,
                (false, true) => fneg += 1,
                _ => {}
            }
        }
        if tp + fp + fneg > 0 {
            scores.push(2.0 * tp as f64 / (2 * tp + fp + fneg) as f64);
        }
    }
    if scores.is_empty() {
        f64::NAN
    } else {
        scores.iter().sum::<f64>() / scores.len() as f64
    }
}

/// The rank (Mann-Whitney) AUC with mid-ranks for ties.
pub fn auc_binary(score: &[f32], positive: &[bool]) -> f64 {
    let mut order: Vec<usize> = (0..score.len()).collect();
    order.sort_by(|&a, &b| score[a].total_cmp(&score[b])); // stable, as numpy's mergesort
    let mut ranks = vec![0.0f64; order.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j < order.len() && score[order[j]] == score[order[i]] {
            j += 1;
        }
        for r in &mut ranks[i..j] {
            *r = (i + 1 + j) as f64 / 2.0;
        }
        i = j;
    }
    let npos = order.iter().filter(|&&o| positive[o]).count() as f64;
    let nneg = order.len() as f64 - npos;
    if npos == 0.0 || nneg == 0.0 {
        return f64::NAN;
    }
    let rank_sum: f64 = order.iter().zip(&ranks).filter(|(&o, _)| positive[o]).map(|(_, r)| r).sum();
    (rank_sum - npos * (npos + 1.0) / 2.0) / (npos * nneg)
}

/// Mean one-vs-rest AUC over the classes where it is defined.
pub fn auc_macro(probs: &Tensor, labels: &[i64], k: i64) -> f64 {
    let vals: Vec<f64> = (0..k)
        .map(|c| {
            let p: Vec<f32> = Vec::try_from(probs.select(1, c).contiguous()).unwrap();
            let pos: Vec<bool> = labels.iter().map(|&l| l == c).collect();
            auc_binary(&p, &pos)
        })
        .filter(|v| !v.is_nan())
        .collect();
    if vals.is_empty() {
        f64::NAN
    } else {
        vals.iter().sum::<f64>() / vals.len() as f64
    }
}

/// The model's data split (--data or the model's default directory).
pub fn load_data(arch: Arch, dir: Option<&str>, train: bool, limit: i64) -> data::Split {
    let fmt = arch.data_format();
    let dir = dir.unwrap_or(fmt.default_dir());
    let r = match fmt {
        DataFormat::Mnist => data::load_mnist(dir, train, limit),
        DataFormat::Cifar => data::load_cifar(dir, train, limit),
        DataFormat::Imdb => data::load_imdb(dir, train, limit),
    };
    r.unwrap_or_else(|e| fail(e))
}

pub fn cmd_eval(args: &[String]) {
    let o = cli::parse(
        "eval",
        args,
        &["weights", "data", "batch", "repeat", "limit-test", "threads", "logits", "device"],
        &["json"],
    );
    let arch = Arch::parse(o.model("eval")).unwrap_or_else(|e| fail(e));
    let Some(weights) = o.str("weights") else { fail("eval: --weights FILE is required") };
    let batch = o.int_min("batch", 1).unwrap_or(128);
    let repeat = o.int_min("repeat", 1).unwrap_or(5);
    let threads = o.int_min("threads", 1).unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get() as i64));
    let limit = o.int_min("limit-test", 0).unwrap_or(0);
    o.check_device();
    crate::set_flush_denormal();
    tch::set_num_threads(threads as i32);
    let (model, mode, kind) = io::load_model(arch, weights).unwrap_or_else(|e| fail(e));
    let (x, y) = load_data(arch, o.str("data"), false, limit);
    let forward = |xs: &Tensor| model.forward(xs);
    evaluate(forward, arch, &x, &y, batch, false); // warm-up
    let (mut times, mut counts) = (Vec::new(), Vec::new());
    let mut last = None;
    for i in 0..repeat {
        // F1 and AUC from the last timed pass; its time excludes the metrics
        let r = evaluate(forward, arch, &x, &y, batch, i == repeat - 1);
        times.push(r.seconds);
        counts.push(r.correct);
        last = Some(r);
    }
    let r = last.unwrap();
    if let Some(path) = o.str("logits") {
        r.logits.to_kind(Kind::Float).contiguous().write_npy(path).unwrap_or_else(|e| fail(format!("cannot write {path}: {e}")));
    }
    let total = x.size()[0];
    let mean = times.iter().sum::<f64>() / times.len() as f64;
    if o.flag("json") {
        let res = json!({
            "binding": crate::BINDING, "model": arch.name(), "load_mode": mode, "format": kind.name(),
            "weights": weights, "correct": r.correct, "total": total, "accuracy": num(r.accuracy),
            "loss": num(r.loss), "f1_macro": num(r.f1), "auc_macro": num(r.auc), "batch": batch,
            "threads": threads, "times_s": times, "correct_per_pass": counts, "mean_time_s": mean,
        });
        println!("{res}");
    } else {
        println!(
            "{}: {}/{} correct, accuracy {:.4}, loss {:.4}, macro F1 {:.4}, AUC {:.4}, mean time {:.4}s over {} passes",
            arch.name(), r.correct, total, r.accuracy, r.loss, r.f1, r.auc, mean, repeat
        );
    }
}
