//! The study's data sets, read as runners/pytorch/cb_data.py reads them:
//! MNIST IDX (plain or gzip), CIFAR-10 binary batches and the prepared IMDb
//! .npy files; the same sample order, limits and scaling. Images are turned
//! from the files' channel-first order into TensorFlow's NHWC here.
use flate2::read::GzDecoder;
use std::io::Read;
use std::path::Path;

/// Inputs as the SavedModel takes them, flat, with the labels.
pub enum Inputs {
    /// float32 NHWC pixels in [0, 1]
    Images(Vec<f32>),
    /// int32 token ids
    Tokens(Vec<i32>),
}

pub struct Split {
    pub x: Inputs,
    pub labels: Vec<i64>,
    /// one sample's shape (NHWC or [L])
    pub shape: Vec<u64>,
}

impl Split {
    pub fn len(&self) -> usize {
        self.labels.len()
    }
}

/// DIR/base or DIR/base.gz, decompressed when it starts with the gzip magic.
fn read_maybe_gz(dir: &str, base: &str) -> Result<(Vec<u8>, String), String> {
    for name in [base.to_string(), format!("{base}.gz")] {
        let path = Path::new(dir).join(&name);
        if path.exists() {
            let p = path.display().to_string();
            let raw = std::fs::read(&path).map_err(|e| format!("cannot read {p}: {e}"))?;
            if raw.starts_with(&[0x1f, 0x8b]) {
                let mut out = Vec::new();
                GzDecoder::new(raw.as_slice())
                    .read_to_end(&mut out)
                    .map_err(|e| format!("{p}: corrupt gzip stream: {e}"))?;
                return Ok((out, p));
            }
            return Ok((raw, p));
        }
    }
    Err(format!("cannot open {}[.gz]", Path::new(dir).join(base).display()))
}

/// An IDX file of unsigned bytes: (data of the first `limit` items, dims).
fn read_idx(dir: &str, base: &str, ndim: usize, limit: usize) -> Result<(Vec<u8>, Vec<usize>), String> {
    let (blob, path) = read_maybe_gz(dir, base)?;
    if blob.len() < 4 + 4 * ndim || blob[..4] != [0, 0, 8, ndim as u8] {
        return Err(format!("{path}: wrong IDX magic or truncated header"));
    }
    let mut dims: Vec<usize> = (0..ndim)
        .map(|d| u32::from_be_bytes(blob[4 + 4 * d..8 + 4 * d].try_into().unwrap()) as usize)
        .collect();
    let count = dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    let mut data = blob[4 + 4 * ndim..].to_vec();
    if count != Some(data.len()) {
        return Err(format!("{path}: the header's dimensions {dims:?} do not match the file's {} data bytes", data.len()));
    }
    if limit > 0 && limit < dims[0] {
        dims[0] = limit;
        data.truncate(dims.iter().product());
    }
    Ok((data, dims))
}

/// MNIST test or training images, [n, 28, 28, 1] (one channel: NCHW and NHWC
/// are the same bytes).
pub fn load_mnist(dir: &str, train: bool, limit: usize) -> Result<Split, String> {
    let prefix = if train { "train" } else { "t10k" };
    let (x, xd) = read_idx(dir, &format!("{prefix}-images-idx3-ubyte"), 3, limit)?;
    let (y, yd) = read_idx(dir, &format!("{prefix}-labels-idx1-ubyte"), 1, limit)?;
    if xd[0] != yd[0] {
        return Err(format!("{dir}: {} images but {} labels", xd[0], yd[0]));
    }
    if xd[1] != 28 || xd[2] != 28 {
        return Err(format!("{dir}: images are {}x{}, the models take 28x28", xd[1], xd[2]));
    }
    Ok(Split {
        x: Inputs::Images(x.iter().map(|&b| b as f32 / 255.0f32).collect()),
        labels: y.iter().map(|&b| b as i64).collect(),
        shape: vec![28, 28, 1],
    })
}

const CIFAR_RECORD: usize = 1 + 3 * 32 * 32;

/// CIFAR-10 binary batches (data_batch_1..5.bin or test_batch.bin); each
/// record's planes (R, G, B, channel-first) interleaved into NHWC.
pub fn load_cifar(dir: &str, train: bool, limit: usize) -> Result<Split, String> {
    let names: Vec<String> =
        if train { (1..=5).map(|i| format!("data_batch_{i}.bin")).collect() } else { vec!["test_batch.bin".into()] };
    let (mut pixels, mut labels) = (Vec::<f32>::new(), Vec::<i64>::new());
    for name in names {
        if limit > 0 && labels.len() >= limit {
            break;
        }
        let path = Path::new(dir).join(&name);
        let p = path.display().to_string();
        let blob = std::fs::read(&path).map_err(|e| format!("cannot open {p}: {e}"))?;
        if blob.is_empty() || blob.len() % CIFAR_RECORD != 0 {
            return Err(format!("{p}: {} bytes is not a whole number of {CIFAR_RECORD}-byte records", blob.len()));
        }
        let mut records: Vec<&[u8]> = blob.chunks(CIFAR_RECORD).collect();
        if limit > 0 {
            records.truncate(limit - labels.len());
        }
        if records.iter().any(|r| r[0] > 9) {
            return Err(format!("{p}: a label is outside 0-9"));
        }
        for r in records {
            labels.push(r[0] as i64);
            let planes = &r[1..];
            for hw in 0..32 * 32 {
                for c in 0..3 {
                    pixels.push(planes[c * 1024 + hw] as f32 / 255.0f32);
                }
            }
        }
    }
    Ok(Split { x: Inputs::Images(pixels), labels, shape: vec![32, 32, 3] })
}

/// A little-endian int64 .npy file: (values, shape).
fn read_npy_i64(path: &Path) -> Result<(Vec<i64>, Vec<usize>), String> {
    let p = path.display().to_string();
    let blob = std::fs::read(path).map_err(|e| format!("cannot open {p}: {e}"))?;
    let bad = || format!("{p}: not a .npy file (bad magic or truncated header)");
    if blob.len() < 10 || &blob[..6] != b"\x93NUMPY" {
        return Err(bad());
    }
    let (hlen, start) = match blob[6] {
        1 => (u16::from_le_bytes([blob[8], blob[9]]) as usize, 10),
        2 | 3 if blob.len() >= 12 => (u32::from_le_bytes(blob[8..12].try_into().unwrap()) as usize, 12),
        _ => return Err(bad()),
    };
    if blob.len() < start + hlen {
        return Err(bad());
    }
    let header = String::from_utf8_lossy(&blob[start..start + hlen]).to_string();
    let field = |key: &str| header.find(key).map(|i| header[i + key.len()..].trim_start_matches([':', ' ']).to_string());
    let descr = field("'descr'").unwrap_or_default();
    let fortran = field("'fortran_order'").unwrap_or_default();
    let shape_src = field("'shape'").unwrap_or_default();
    if !(descr.starts_with("'<i8'") || descr.starts_with("'|i8'")) || !fortran.starts_with("False") {
        return Err(format!("{p}: expected a C-ordered little-endian int64 array"));
    }
    let inner = shape_src
        .strip_prefix('(')
        .and_then(|s| s.split(')').next())
        .ok_or_else(|| format!("{p}: cannot read the array's shape"))?;
    let shape = inner
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<usize>().map_err(|_| format!("{p}: cannot read the array's shape")))
        .collect::<Result<Vec<_>, _>>()?;
    let count = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    let data = &blob[start + hlen..];
    if count.and_then(|c| c.checked_mul(8)) != Some(data.len()) {
        return Err(format!("{p}: shape {shape:?} does not match the file's {} data bytes", data.len()));
    }
    Ok((data.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect(), shape))
}

/// Prepared IMDb-format data (crossbind data imdb-prepare): token ids
/// [n, L] as int32 (the models' input type) and labels 1 / 0.
pub fn load_imdb(dir: &str, train: bool, limit: usize) -> Result<Split, String> {
    let split = if train { "train" } else { "test" };
    if !Path::new(dir).join("vocab.txt").exists() {
        return Err(format!(
            "{dir} is not prepared IMDb data (no vocab.txt): make it with \
             crossbind data imdb-prepare --from ACLIMDB_DIR --out {dir}"
        ));
    }
    let (x, xs) = read_npy_i64(&Path::new(dir).join(format!("x_{split}.npy")))?;
    let (y, ys) = read_npy_i64(&Path::new(dir).join(format!("y_{split}.npy")))?;
    if xs.len() != 2 || ys.len() != 1 || ys[0] != xs[0] {
        return Err(format!("{dir}: expected int64 x_{split}.npy [n, L] and y_{split}.npy [n]"));
    }
    let mut n = xs[0];
    if limit > 0 && limit < n {
        n = limit;
    }
    let tokens = x[..n * xs[1]]
        .iter()
        .map(|&t| i32::try_from(t).map_err(|_| format!("{dir}: x_{split}.npy holds token id {t}, outside int32")))
        .collect::<Result<Vec<i32>, String>>()?;
    Ok(Split { x: Inputs::Tokens(tokens), labels: y[..n].to_vec(), shape: vec![xs[1] as u64] })
}
