//! Weights in and out: safetensors and PyTorch state dicts (the parameters
//! load mode), TorchScript (the serialization mode, tch::CModule), the
//! run's JSON files.
use crate::models::{Arch, Net};
use std::collections::HashMap;
use std::fs::File;
use std::io::Read;
use std::path::Path;
use tch::{CModule, Kind, Tensor};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum FileKind {
    Safetensors,
    Pt,
    TorchScript,
    Onnx,
    Unknown,
}

impl FileKind {
    pub fn name(self) -> &'static str {
        match self {
            FileKind::Safetensors => "safetensors",
            FileKind::Pt => "pt",
            FileKind::TorchScript => "torchscript",
            FileKind::Onnx => "onnx",
            FileKind::Unknown => "unknown",
        }
    }
}

/// The weights format by content, as the Python runner decides it: a zip
/// archive with a constants.pkl is TorchScript, any other zip a torch.save
/// state dict; then safetensors and ONNX by their first bytes.
pub fn file_kind(path: &str) -> Result<FileKind, String> {
    let mut f = File::open(path).map_err(|e| format!("cannot open weights {path}: {e}"))?;
    let mut head = Vec::with_capacity(9);
    f.by_ref().take(9).read_to_end(&mut head).map_err(|e| format!("cannot read weights {path}: {e}"))?;
    if head.starts_with(b"PK\x03\x04") {
        let archive = zip::ZipArchive::new(File::open(path).map_err(|e| format!("cannot open weights {path}: {e}"))?)
            .map_err(|e| format!("{path}: corrupt zip archive: {e}"))?;
        let script = archive.file_names().any(|n| n.ends_with("/constants.pkl"));
        return Ok(if script { FileKind::TorchScript } else { FileKind::Pt });
    }
    if head.len() == 9 && head[8] == b'{' && head[5..8] == [0, 0, 0] {
        return Ok(FileKind::Safetensors);
    }
    if head.len() >= 2 && head[0] == 0x08 {
        return Ok(FileKind::Onnx);
    }
    Ok(FileKind::Unknown)
}

/// Named tensors of a parameters file: safetensors through tch's reader; a
/// torch.save archive through libtorch's unpickler (Tensor::loadz_multi).
/// That unpickler reads a plain dict of tensors but turns the OrderedDict
/// that torch.save(model.state_dict()) writes into None, so "pt" is not
/// among the formats this binding declares it loads.
fn read_named(path: &str, kind: FileKind) -> Result<HashMap<String, Tensor>, String> {
    let named = match kind {
        FileKind::Safetensors => Tensor::read_safetensors(path)
            .map_err(|e| format!("cannot read weights {path}: {}", first_line(&e.to_string()))),
        FileKind::Pt => Tensor::loadz_multi(path).map_err(|e| {
            let msg = e.to_string();
            if msg.contains("Expected GenericDict but got None") {
                return format!(
                    "cannot read weights {path}: libtorch's unpickler (tch's Tensor::loadz_multi) reads a plain \
                     dict of tensors, not the OrderedDict of torch.save(model.state_dict()); use the run's \
                     .safetensors or .ts file"
                );
            }
            format!("cannot read weights {path}: {}", first_line(&msg))
        }),
        _ => return Err(format!("{path}: unrecognised weights format")),
    };
    Ok(named?.into_iter().collect())
}

pub fn first_line(s: &str) -> String {
    s.lines().find(|l| !l.trim().is_empty()).unwrap_or(s).trim().to_string()
}

/// Sets every variable of the model from a parameters file, which must hold
/// each of them with its shape (extra entries are ignored). An absent
/// BatchNorm step counter starts at 0, as in the Python runner.
pub fn load_weights(net: &Net, path: &str) -> Result<(), String> {
    let kind = file_kind(path)?;
    let mut tensors = read_named(path, kind)?;
    let state = net.state_dict();
    let mut missing = Vec::new();
    for (k, v) in &state {
        if k.ends_with("num_batches_tracked") {
            match tensors.get(k) {
                None => {
                    tensors.insert(k.clone(), Tensor::zeros_like(v));
                }
                Some(t) if t.numel() == 1 => {
                    let t = t.reshape(v.size());
                    tensors.insert(k.clone(), t);
                }
                _ => {}
            }
        }
        if !tensors.contains_key(k) {
            missing.push(k.clone());
        }
    }
    if !missing.is_empty() {
        return Err(format!("{path}: parameters missing from the file: {}", missing.join(", ")));
    }
    for (k, v) in &state {
        let t = &tensors[k];
        if t.size() != v.size() {
            return Err(format!("{path}: parameter {k} has shape {:?}, the model needs {:?}", t.size(), v.size()));
        }
        if !matches!(t.kind(), Kind::Float | Kind::Double | Kind::Half | Kind::BFloat16 | Kind::Int64 | Kind::Int) {
            return Err(format!("{path}: parameter {k} has unsupported type {:?}", t.kind()));
        }
    }
    tch::no_grad(|| {
        for (k, v) in &state {
            let mut v = v.shallow_clone();
            v.copy_(&tensors[k].to_kind(v.kind()));
        }
    });
    Ok(())
}

/// A tensor for the safetensors writer.
struct View {
    dtype: safetensors::Dtype,
    shape: Vec<usize>,
    data: Vec<u8>,
}

impl safetensors::View for &View {
    fn dtype(&self) -> safetensors::Dtype {
        self.dtype
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> std::borrow::Cow<'_, [u8]> {
        std::borrow::Cow::Borrowed(&self.data)
    }
    fn data_len(&self) -> usize {
        self.data.len()
    }
}

/// The state dict as safetensors, with the metadata crossbind writes
/// (model, format crossbind-weights/1); atomically.
pub fn save_safetensors(net: &Net, path: &str) -> Result<(), String> {
    let mut views = Vec::new();
    for (name, t) in net.state_dict() {
        let t = t.contiguous();
        let (dtype, size) = match t.kind() {
            Kind::Int64 => (safetensors::Dtype::I64, 8),
            _ => (safetensors::Dtype::F32, 4),
        };
        let n = t.numel();
        let mut data = vec![0u8; n * size];
        t.f_copy_data_u8(&mut data, n).map_err(|e| format!("cannot write {path}: {e}"))?;
        views.push((name, View { dtype, shape: t.size().iter().map(|&d| d as usize).collect(), data }));
    }
    let meta: HashMap<String, String> =
        [("model".to_string(), net.arch.name().to_string()), ("format".to_string(), "crossbind-weights/1".to_string())]
            .into_iter()
            .collect();
    let tmp = format!("{path}.tmp");
    safetensors::serialize_to_file(views.iter().map(|(n, v)| (n.as_str(), v)), &Some(meta), Path::new(&tmp))
        .map_err(|e| format!("cannot write {path}: {e:?}"))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("cannot write {path}: {e}"))
}

/// The model traced in evaluation mode on one zero sample, saved as a
/// TorchScript module (the serialization load mode). The batch dimension
/// stays free: tracing records shape-generic operations.
pub fn save_torchscript(net: &Net, path: &str) -> Result<(), String> {
    let mut shape = vec![1i64];
    shape.extend(net.arch.input_shape());
    let kind = if net.arch.binary() { Kind::Int64 } else { Kind::Float };
    let example = Tensor::zeros(shape.as_slice(), (kind, tch::Device::Cpu));
    // The variables enter the trace as constants (the same tensors), which
    // must not require gradients when the module is traced and saved: the
    // store is frozen meanwhile (VarStore::freeze, without &mut).
    let vars = net.vs.trainable_variables();
    for v in &vars {
        let _ = v.set_requires_grad(false);
    }
    let tmp = format!("{path}.tmp");
    let saved = tch::no_grad(|| {
        CModule::create_by_tracing(net.arch.name(), "forward", &[example], &mut |inputs| {
            vec![net.forward_t(&inputs[0], false)]
        })
    })
    .map_err(|e| format!("cannot trace {}: {}", net.arch.name(), first_line(&e.to_string())))
    .and_then(|m| m.save(&tmp).map_err(|e| format!("cannot write {path}: {}", first_line(&e.to_string()))));
    for v in &vars {
        let _ = v.set_requires_grad(true);
    }
    saved?;
    std::fs::rename(&tmp, path).map_err(|e| format!("cannot write {path}: {e}"))
}

/// Every format this binding writes: OUT/STEM.safetensors and OUT/STEM.ts.
pub fn save_all(net: &Net, out: &str, stem: &str) -> Result<(), String> {
    save_safetensors(net, &format!("{out}/{stem}.safetensors"))?;
    save_torchscript(net, &format!("{out}/{stem}.ts"))
}

/// A model ready for evaluation: tch modules with loaded parameters, or a
/// TorchScript module.
pub enum Loaded {
    Native(Net),
    Script(CModule),
}

impl Loaded {
    pub fn forward(&self, xs: &Tensor) -> Tensor {
        match self {
            Loaded::Native(net) => net.forward_t(xs, false),
            Loaded::Script(m) => m.forward_ts(&[xs]).unwrap_or_else(|e| {
                crate::fail(format!("TorchScript forward failed: {}", first_line(&e.to_string())))
            }),
        }
    }
}

/// (model, load mode, format): parameters for safetensors / .pt, serialization for TorchScript.
pub fn load_model(arch: Arch, path: &str) -> Result<(Loaded, &'static str, FileKind), String> {
    let kind = file_kind(path)?;
    match kind {
        FileKind::TorchScript => {
            let mut m = CModule::load(path)
                .map_err(|e| format!("{path}: cannot load TorchScript: {}", first_line(&e.to_string())))?;
            m.set_eval();
            Ok((Loaded::Script(m), "serialization", kind))
        }
        FileKind::Onnx => {
            Err(format!("{path}: tch cannot run ONNX models (unsupported load mode for this binding)"))
        }
        FileKind::Safetensors | FileKind::Pt => {
            let net = Net::new(arch, 0.5);
            load_weights(&net, path)?;
            Ok((Loaded::Native(net), "parameters", kind))
        }
        FileKind::Unknown => Err(format!("{path}: unrecognised weights format")),
    }
}

/// JSON with two-space indentation, written atomically.
pub fn write_json(path: &str, v: &serde_json::Value) -> Result<(), String> {
    let tmp = format!("{path}.tmp");
    let mut s = serde_json::to_string_pretty(v).map_err(|e| e.to_string())?;
    s.push('\n');
    std::fs::write(&tmp, s).map_err(|e| format!("cannot write {path}: {e}"))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("cannot write {path}: {e}"))
}

/// A JSON number, or null where it is not finite (JSON has no NaN).
pub fn num(x: f64) -> serde_json::Value {
    if x.is_finite() {
        serde_json::json!(x)
    } else {
        serde_json::Value::Null
    }
}
