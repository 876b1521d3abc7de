//! The `train` command: the protocol's training (seeded, file order, the
//! full training and test sets evaluated after every epoch and excluded
//! from the training time), run.json and the model in every format.
use crate::cli;
use crate::eval::{evaluate, load_data};
use crate::fail;
use crate::io::{self, num};
use crate::models::{loss_of, Arch, Net, Optim};
use serde_json::{json, Value};
use std::time::Instant;
use tch::nn::OptimizerConfig;
use tch::{nn, Reduction};

/// The protocol's seeds; run I uses the I-th.
pub const SEEDS: [i64; 5] = [287426343, 1850616268, 2068338201, 1202616822, 868822724];

fn machine() -> String {
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return "unknown".into();
    }
    let s = |f: &[libc::c_char]| unsafe { std::ffi::CStr::from_ptr(f.as_ptr()) }.to_string_lossy().into_owned();
    format!("{} {} {}", s(&u.sysname), s(&u.release), s(&u.machine))
}

pub fn cmd_train(args: &[String]) {
    let o = cli::parse(
        "train",
        args,
        &[
            "data", "epochs", "batch", "optimizer", "lr", "momentum", "weight-decay", "seed", "run", "init",
            "threads", "limit-train", "limit-test", "out", "device",
        ],
        &["subactivities", "quiet", "no-dropout"],
    );
    let arch = Arch::parse(o.model("train")).unwrap_or_else(|e| fail(e));
    if o.str("seed").is_some() && o.str("run").is_some() {
        fail("give --seed or --run, not both");
    }
    let run = o.int("run");
    if let Some(r) = run {
        if !(1..=5).contains(&r) {
            fail(format!("--run must be 1 to 5, got {r}"));
        }
    }
    let seed = o.int("seed").unwrap_or(SEEDS[(run.unwrap_or(1) - 1) as usize]);
    // What the user left out comes from the protocol's configuration.
    let (p_opt, p_lr, p_batch, p_epochs) = arch.protocol();
    let optimizer = match o.str("optimizer") {
        None => p_opt,
        Some("sgd") => Optim::Sgd,
        Some("adam") => Optim::Adam,
        Some(x) => fail(format!("--optimizer must be sgd or adam, got {x}")),
    };
    let lr = o.float("lr").unwrap_or(match (o.str("optimizer"), optimizer) {
        (None, _) => p_lr,
        (Some(_), Optim::Adam) => 1e-3,
        (Some(_), Optim::Sgd) => 0.05,
    });
    let momentum = o.float("momentum").unwrap_or(0.0);
    let weight_decay = o.float("weight-decay").unwrap_or(0.0);
    let batch = o.int_min("batch", 1).unwrap_or(p_batch);
    let epochs = o.int_min("epochs", 1).unwrap_or(p_epochs);
    let threads = o.int_min("threads", 1).unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get() as i64));
    let limit_train = o.int_min("limit-train", 0).unwrap_or(0);
    let limit_test = o.int_min("limit-test", 0).unwrap_or(0);
    let no_dropout = o.flag("no-dropout");
    let (sub_on, quiet) = (o.flag("subactivities"), o.flag("quiet"));
    o.check_device();
    crate::set_flush_denormal();
    tch::set_num_threads(threads as i32);

    let out = o.str("out").map(str::to_string).unwrap_or_else(|| format!("runs/{}-{seed}-tch", arch.name()));
    let probe = format!("{out}/.probe");
    if let Err(e) = std::fs::create_dir_all(&out).and_then(|_| std::fs::write(&probe, b"")).and_then(|_| std::fs::remove_file(&probe)) {
        fail(format!("output directory {out} is not writable: {e}"));
    }
    let run_json = format!("{out}/run.json");
    let _ = std::fs::remove_file(&run_json);
    let data_dir = o.str("data").map(str::to_string).unwrap_or(arch.data_format().default_dir().to_string());
    let (xtr, ytr) = load_data(arch, Some(&data_dir), true, limit_train);
    let (xte, yte) = load_data(arch, Some(&data_dir), false, limit_test);

    tch::manual_seed(seed);
    let net = Net::new(arch, if no_dropout { 0.0 } else { 0.5 });
    if let Some(init) = o.str("init") {
        io::load_weights(&net, init).unwrap_or_else(|e| fail(e));
    }
    io::save_all(&net, &out, "init").unwrap_or_else(|e| fail(e));
    if arch.binary() {
        // the vocabulary the token ids refer to travels with the run
        let src = format!("{data_dir}/vocab.txt");
        std::fs::copy(&src, format!("{out}/vocab.txt")).unwrap_or_else(|e| fail(format!("cannot copy {src}: {e}")));
    }
    let mut opt = match optimizer {
        Optim::Adam => nn::Adam { wd: weight_decay, ..Default::default() }.build(&net.vs, lr),
        Optim::Sgd => nn::Sgd { momentum, dampening: 0.0, wd: weight_decay, nesterov: false }.build(&net.vs, lr),
    }
    .unwrap_or_else(|e| fail(format!("cannot make the optimizer: {e}")));

    let (n, n_test) = (xtr.size()[0], xte.size()[0]);
    let mut info = json!({
        "format": "crossbind-run/1", "status": "incomplete", "binding": crate::BINDING, "model": arch.name(),
        "seed": seed, "run": run.unwrap_or(if o.str("seed").is_some() { 0 } else { 1 }), "data": data_dir,
        "n_train": n, "n_test": n_test, "batch": batch,
        "optimizer": if optimizer == Optim::Adam { "adam" } else { "sgd" },
        "lr": lr, "momentum": momentum, "weight_decay": weight_decay, "shuffle": false, "dropout": !no_dropout,
        "init": o.str("init"), "threads": threads,
        "versions": {"tch": crate::TCH_VERSION, "libtorch": crate::LIBTORCH_VERSION, "rustc": crate::RUSTC_VERSION},
        "machine": machine(), "epochs": [],
    });
    let (mut s_load, mut s_fwd, mut s_bwd) = (0.0f64, 0.0f64, 0.0f64);
    let mut eval_total = 0.0f64;
    let forward = |xs: &tch::Tensor| net.forward_t(xs, false);
    let t_start = Instant::now();
    let mut te = None;
    for epoch in 1..=epochs {
        let t_epoch = Instant::now();
        let mut i = 0;
        while i < n {
            let t0 = Instant::now();
            let len = batch.min(n - i);
            let (xb, yb) = (xtr.narrow(0, i, len), ytr.narrow(0, i, len));
            let t1 = Instant::now();
            opt.zero_grad();
            let loss = loss_of(arch, &net.forward_t(&xb, true), &yb, Reduction::Mean);
            let t2 = Instant::now();
            loss.backward();
            opt.step();
            if sub_on {
                let t3 = Instant::now();
                s_load += (t1 - t0).as_secs_f64();
                s_fwd += (t2 - t1).as_secs_f64();
                s_bwd += (t3 - t2).as_secs_f64();
            }
            i += len;
        }
        let t_eval = Instant::now();
        let tr = evaluate(forward, arch, &xtr, &ytr, batch, false);
        let last = epoch == epochs;
        let r = evaluate(forward, arch, &xte, &yte, batch, last);
        let eval_s = t_eval.elapsed().as_secs_f64();
        eval_total += eval_s;
        let train_s = (t_eval - t_epoch).as_secs_f64();
        info["epochs"].as_array_mut().unwrap().push(json!({
            "epoch": epoch, "train_acc": tr.accuracy, "test_acc": r.accuracy, "train_loss": num(tr.loss),
            "test_loss": num(r.loss), "train_time_s": train_s, "eval_time_s": eval_s,
        }));
        if !quiet {
            eprintln!(
                "epoch {epoch}/{epochs}  train acc {:.4} loss {:.4}  test acc {:.4} loss {:.4}  ({train_s:.2}s train, {eval_s:.2}s eval)",
                tr.accuracy, tr.loss, r.accuracy, r.loss
            );
        }
        if !last {
            io::write_json(&run_json, &info).unwrap_or_else(|e| fail(e));
        }
        te = Some(r);
    }
    let total = t_start.elapsed().as_secs_f64();
    io::save_all(&net, &out, "final").unwrap_or_else(|e| fail(e));
    let te = te.unwrap();
    let m = info.as_object_mut().unwrap();
    m.insert("status".into(), json!("complete"));
    m.insert("training_time_s".into(), json!(total - eval_total));
    m.insert("eval_time_s".into(), json!(eval_total));
    m.insert("total_time_s".into(), json!(total));
    m.insert("test_accuracy".into(), json!(te.accuracy));
    m.insert("test_correct".into(), json!(te.correct));
    m.insert("f1_macro".into(), num(te.f1));
    m.insert("auc_macro".into(), num(te.auc));
    if sub_on {
        m.insert("subactivities_s".into(), json!({"load": s_load, "forward": s_fwd, "backward": s_bwd}));
    }
    io::write_json(&run_json, &Value::Object(m.clone())).unwrap_or_else(|e| fail(e));
    println!(
        "{}: test accuracy {:.4} ({}/{}), macro F1 {:.4}, AUC {:.4}, training {:.2}s, eval {:.2}s -> {run_json}",
        arch.name(), te.accuracy, te.correct, n_test, te.f1, te.auc, total - eval_total, eval_total
    );
}
