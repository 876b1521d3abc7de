//! Accuracy, loss, macro F1 and macro one-vs-rest AUC of one pass's outputs,
//! computed as runners/pytorch/cb_metrics.py computes them (the same rules
//! every binding reports by).

pub struct Scores {
    pub correct: i64,
    pub loss: f64,
    pub f1: f64,
    pub auc: f64,
}

/// `out` is [n, k] row-major: logits (k = 10) or one probability (k = 1).
/// Binary models: prediction p >= 0.5, binary cross-entropy with p clipped
/// to [1e-12, 1 - 1e-12]; multi-class: argmax, cross-entropy of the
/// log-softmax in float64. F1 and AUC only when `with_metrics`.
pub fn score(out: &[f32], k: usize, labels: &[i64], with_metrics: bool) -> Scores {
    let n = labels.len();
    let mut pred = Vec::with_capacity(n);
    let mut loss = 0.0f64;
    let mut probs = Vec::new();
    if k == 1 {
        for (i, &y) in labels.iter().enumerate() {
            let p = (out[i] as f64).clamp(1e-12, 1.0 - 1e-12);
            loss -= if y == 1 { p.ln() } else { (1.0 - p).ln() };
            pred.push((out[i] >= 0.5) as i64);
        }
    } else {
        for (i, &y) in labels.iter().enumerate() {
            let row = &out[i * k..(i + 1) * k];
            let mut best = 0;
            for j in 1..k {
                if row[j] > row[best] {
                    best = j;
                }
            }
            pred.push(best as i64);
            let m = row.iter().fold(f64::NEG_INFINITY, |a, &v| a.max(v as f64));
            let lse = row.iter().map(|&v| (v as f64 - m).exp()).sum::<f64>().ln();
            loss -= row[y as usize] as f64 - m - lse;
            if with_metrics {
                probs.extend(row.iter().map(|&v| (v as f64 - m - lse).exp()));
            }
        }
    }
    let correct = pred.iter().zip(labels).filter(|(p, l)| p == l).count() as i64;
    let (mut f1, mut auc) = (f64::NAN, f64::NAN);
    if with_metrics {
        if k == 1 {
            f1 = f1_macro(&pred, labels, 2);
            let p: Vec<f64> = out.iter().map(|&v| v as f64).collect();
            let pos: Vec<bool> = labels.iter().map(|&l| l == 1).collect();
            auc = auc_binary(&p, &pos);
        } else {
            f1 = f1_macro(&pred, labels, k as i64);
            auc = auc_macro(&probs, k, labels);
        }
    }
    Scores { correct, loss: loss / n as f64, f1, auc }
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

/// The rank (Mann-Whitney) AUC with mid-ranks for ties; NaN scores or a
/// single class give NaN.
pub fn auc_binary(score: &[f64], positive: &[bool]) -> f64 {
    if score.iter().any(|s| s.is_nan()) {
        return f64::NAN;
    }
    let mut order: Vec<usize> = (0..score.len()).collect();
    order.sort_by(|&a, &b| score[a].total_cmp(&score[b]));
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
    let npos = positive.iter().filter(|&&p| p).count() as f64;
    let nneg = positive.len() as f64 - npos;
    if npos == 0.0 || nneg == 0.0 {
        return f64::NAN;
    }
    let rank_sum: f64 = order.iter().zip(&ranks).filter(|(&o, _)| positive[o]).map(|(_, r)| r).sum();
    (rank_sum - npos * (npos + 1.0) / 2.0) / (npos * nneg)
}

/// Mean one-vs-rest AUC over the classes where it is defined.
pub fn auc_macro(probs: &[f64], k: usize, labels: &[i64]) -> f64 {
    let vals: Vec<f64> = (0..k)
        .map(|c| {
            let p: Vec<f64> = probs.iter().skip(c).step_by(k).copied().collect();
            let pos: Vec<bool> = labels.iter().map(|&l| l == c as i64).collect();
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
