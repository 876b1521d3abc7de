//! A SavedModel as the study exports it, loaded with the C API through the
//! `tensorflow` crate (SavedModelBundle, tag "serve") and run through its
//! signature: `serving_default` with one input `x` (float32 NHWC images or
//! int32 token ids, batch dimension free) and one output `output` (the
//! logits before the softmax, or the IMDb models' sigmoid probability).
use crate::models::Arch;
use std::path::Path;
use tensorflow::{
    DataType, Graph, Operation, SavedModelBundle, SessionOptions, SessionRunArgs, Shape, Status, Tensor,
};

pub const TAG: &str = "serve";
pub const SIGNATURE: &str = "serving_default";
pub const INPUT: &str = "x";
pub const OUTPUT: &str = "output";

/// One batch, ready to feed.
pub enum Batch {
    Images(Tensor<f32>),
    Tokens(Tensor<i32>),
}

impl Batch {
    pub fn len(&self) -> usize {
        match self {
            Batch::Images(t) => t.dims()[0] as usize,
            Batch::Tokens(t) => t.dims()[0] as usize,
        }
    }
}

pub struct Model {
    bundle: SavedModelBundle,
    input: Operation,
    input_index: i32,
    output: Operation,
    output_index: i32,
    pub outputs: usize,
}

/// The first line of a TensorFlow status, without the code name's prefix noise.
pub fn status_line(s: &Status) -> String {
    let text = s.to_string();
    text.lines().find(|l| !l.trim().is_empty()).unwrap_or(&text).trim().to_string()
}

/// A ConfigProto with intra_op_parallelism_threads = T (field 2) and
/// inter_op_parallelism_threads = 1 (field 5), the settings the Python
/// runner makes through tf.config.threading; serialized by hand, as the
/// crate takes the protocol buffer's bytes.
fn config_proto(threads: usize) -> Vec<u8> {
    let mut out = vec![0x10];
    let mut v = threads as u64;
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            break;
        }
        out.push(b | 0x80);
    }
    out.extend_from_slice(&[0x28, 0x01]);
    out
}

fn shape_text(s: &Shape) -> String {
    match s.dims() {
        None => "unknown".into(),
        Some(n) => {
            let d: Vec<String> = (0..n).map(|i| s[i].map_or("None".into(), |v| v.to_string())).collect();
            format!("[{}]", d.join(", "))
        }
    }
}

fn sorted_keys<V>(m: &std::collections::HashMap<String, V>) -> String {
    // (entries such as __saved_model_init_op are the format's own, not signatures)
    let mut k: Vec<&str> = m.keys().map(String::as_str).filter(|k| !k.starts_with("__")).collect();
    k.sort_unstable();
    if k.is_empty() {
        "none".into()
    } else {
        k.join(", ")
    }
}

/// TF_CPP_MIN_LOG_LEVEL as TensorFlow reads it (0 info ... 3 fatal only); 2
/// when unset, the Python runner's default.
fn min_log_level() -> i32 {
    std::env::var("TF_CPP_MIN_LOG_LEVEL").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(2)
}

/// Whether a line the library wrote to stderr is below the log level: absl's
/// "I0000 ..." / "W0000 ..." lines and its notice that logging was not
/// initialized. (TensorFlow 2.18 logs a few messages through absl, such as the
/// MLIR pass notice at a session's first run, and those ignore
/// TF_CPP_MIN_LOG_LEVEL.)
fn below_level(line: &str, level: i32) -> bool {
    let b = line.as_bytes();
    let absl = |c: u8| b.len() > 5 && b[0] == c && b[1..5].iter().all(u8::is_ascii_digit) && b[5] == b' ';
    (level >= 1 && (absl(b'I') || line.starts_with("WARNING: All log messages before absl::InitializeLog()")))
        || (level >= 2 && absl(b'W'))
}

/// Runs `f` with the process's stderr (fd 2, where the C++ library logs)
/// going to a scratch file, then writes back the lines at or above the log
/// level. Errors come back as statuses, so a refusal stays one line.
fn filtered_stderr<T>(f: impl FnOnce() -> T) -> T {
    use std::io::{Read, Seek, Write};
    use std::os::fd::AsRawFd;
    let path = std::env::temp_dir().join(format!("crossbind-tfrs-{}.log", std::process::id()));
    let Ok(mut file) = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&path) else {
        return f();
    };
    let _ = std::fs::remove_file(&path);
    let saved = unsafe { libc::dup(2) };
    if saved < 0 || unsafe { libc::dup2(file.as_raw_fd(), 2) } < 0 {
        return f();
    }
    let r = f();
    unsafe {
        libc::fflush(std::ptr::null_mut());
        libc::dup2(saved, 2);
        libc::close(saved);
    }
    let mut text = String::new();
    if file.rewind().is_ok() && file.read_to_string(&mut text).is_ok() {
        let level = min_log_level();
        let mut err = std::io::stderr();
        for line in text.lines().filter(|l| !below_level(l, level)) {
            let _ = writeln!(err, "{line}");
        }
    }
    r
}

impl Model {
    pub fn load(dir: &str, arch: Arch, threads: usize) -> Result<Model, String> {
        let path = Path::new(dir);
        if !path.exists() {
            return Err(format!("cannot open weights {dir}: no such SavedModel directory"));
        }
        if !path.is_dir() {
            return Err(format!("{dir}: not a SavedModel directory (this binding loads SavedModels, e.g. final.savedmodel/)"));
        }
        if !path.join("saved_model.pb").exists() && !path.join("saved_model.pbtxt").exists() {
            return Err(format!("{dir}: not a SavedModel directory (no saved_model.pb)"));
        }
        let mut opts = SessionOptions::new();
        opts.set_config(&config_proto(threads)).map_err(|e| format!("cannot set the session's threads: {}", status_line(&e)))?;
        let mut graph = Graph::new();
        let bundle = filtered_stderr(|| SavedModelBundle::load(&opts, [TAG], &mut graph, path))
            .map_err(|e| format!("{dir}: cannot load the SavedModel (tag {TAG}): {}", status_line(&e)))?;
        let meta = bundle.meta_graph_def();
        let sig = meta.get_signature(SIGNATURE).map_err(|_| {
            format!("{dir}: the SavedModel has no signature {SIGNATURE} (it has: {})", sorted_keys(meta.signatures()))
        })?;
        let x = sig.get_input(INPUT).map_err(|_| {
            format!("{dir}: signature {SIGNATURE} has no input named {INPUT} (it has: {})", sorted_keys(sig.inputs()))
        })?;
        let y = sig.get_output(OUTPUT).map_err(|_| {
            format!("{dir}: signature {SIGNATURE} has no output named {OUTPUT} (it has: {})", sorted_keys(sig.outputs()))
        })?;
        let want_type = if arch.binary() { DataType::Int32 } else { DataType::Float };
        if x.dtype() != want_type {
            return Err(format!("{dir}: input {INPUT} is {:?}, {} takes {want_type:?}", x.dtype(), arch.name()));
        }
        let want: Vec<i64> = arch.input_shape();
        let xs = x.shape();
        let fits = xs.dims() == Some(want.len() + 1) && want.iter().enumerate().all(|(i, &d)| xs[i + 1].is_none_or(|v| v == d));
        if !fits {
            return Err(format!(
                "{dir}: input {INPUT} has shape {}, {} takes [None, {}]",
                shape_text(xs),
                arch.name(),
                want.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")
            ));
        }
        let ys = y.shape();
        let k = arch.outputs();
        if y.dtype() != DataType::Float || ys.dims() != Some(2) || ys[1].is_some_and(|v| v != k) {
            return Err(format!(
                "{dir}: output {OUTPUT} is {:?} {}, {} gives float32 [None, {k}]",
                y.dtype(),
                shape_text(ys),
                arch.name()
            ));
        }
        let op = |name: &str| {
            graph.operation_by_name_required(name).map_err(|e| format!("{dir}: {}", status_line(&e)))
        };
        Ok(Model {
            input: op(&x.name().name)?,
            input_index: x.name().index,
            output: op(&y.name().name)?,
            output_index: y.name().index,
            outputs: k as usize,
            bundle,
        })
    }

    /// The model's outputs for one batch, [n * outputs] row-major.
    pub fn run(&self, batch: &Batch) -> Result<Tensor<f32>, String> {
        let mut args = SessionRunArgs::new();
        match batch {
            Batch::Images(t) => args.add_feed(&self.input, self.input_index, t),
            Batch::Tokens(t) => args.add_feed(&self.input, self.input_index, t),
        }
        let token = args.request_fetch(&self.output, self.output_index);
        self.bundle.session.run(&mut args).map_err(|e| format!("the session failed: {}", status_line(&e)))?;
        let out: Tensor<f32> = args.fetch(token).map_err(|e| format!("cannot read the output: {}", status_line(&e)))?;
        if out.dims().len() != 2 || out.dims()[0] as usize != batch.len() || out.dims()[1] as usize != self.outputs {
            return Err(format!("the model answered shape {:?} for {} samples", out.dims(), batch.len()));
        }
        Ok(out)
    }
}

/// Samples [s0, s0 + n) of flat inputs as one tensor of shape [n, shape...].
pub fn make_batch(x: &crate::data::Inputs, shape: &[u64], s0: usize, n: usize) -> Batch {
    let size: usize = shape.iter().product::<u64>() as usize;
    let mut dims = vec![n as u64];
    dims.extend_from_slice(shape);
    let range = s0 * size..(s0 + n) * size;
    match x {
        crate::data::Inputs::Images(v) => Batch::Images(Tensor::new(&dims).with_values(&v[range]).unwrap()),
        crate::data::Inputs::Tokens(v) => Batch::Tokens(Tensor::new(&dims).with_values(&v[range]).unwrap()),
    }
}
