// The study's data files, read as every other binding reads them (same files,
// same sample order, same limits, same scaling): MNIST-format IDX (plain or
// gzip), CIFAR-10 binary batches and the prepared IMDb .npy files. Images
// come back in TensorFlow's NHWC order, ready for tf.tensor4d.
'use strict';
const fs = require('fs');
const path = require('path');
const zlib = require('zlib');

function readIdx(dir, base, ndim, limit) {
  let file = path.join(dir, base);
  if (!fs.existsSync(file)) file += '.gz';
  if (!fs.existsSync(file)) throw new Error(`cannot open ${path.join(dir, base)}[.gz]`);
  let b = fs.readFileSync(file);
  if (b[0] === 0x1f && b[1] === 0x8b) b = zlib.gunzipSync(b);
  if (b.length < 4 + 4 * ndim || b[0] || b[1] || b[2] !== 8 || b[3] !== ndim)
    throw new Error(`${file}: wrong IDX magic or truncated header`);
  const dims = [];
  for (let i = 0; i < ndim; i++) dims.push(b.readUInt32BE(4 + 4 * i));
  const count = dims.reduce((a, d) => a * d, 1);
  if (b.length - 4 - 4 * ndim !== count)
    throw new Error(`${file}: header promises ${count} bytes, file has ${b.length - 4 - 4 * ndim}`);
  const n = limit ? Math.min(limit, dims[0]) : dims[0];
  const per = dims[0] ? count / dims[0] : 0;
  return { n, dims: dims.slice(1), bytes: b.subarray(4 + 4 * ndim, 4 + 4 * ndim + per * n) };
}

// MNIST: images [n, 28, 28, 1] in [0, 1], labels 0-9.
function loadMnist(dir, train, limit) {
  const prefix = train ? 'train' : 't10k';
  const x = readIdx(dir, `${prefix}-images-idx3-ubyte`, 3, limit);
  const y = readIdx(dir, `${prefix}-labels-idx1-ubyte`, 1, limit);
  if (x.n !== y.n) throw new Error(`${dir}: ${x.n} images but ${y.n} labels`);
  const images = new Float32Array(x.bytes.length);
  for (let i = 0; i < images.length; i++) images[i] = x.bytes[i] / 255;
  return { n: x.n, shape: [x.dims[0], x.dims[1], 1], x: images, y: Int32Array.from(y.bytes), classes: 10 };
}

const CIFAR_RECORD = 1 + 3 * 32 * 32;

// CIFAR-10 binary batches (data_batch_1..5.bin or test_batch.bin): records of
// a label byte and 3 x 32 x 32 pixel bytes (planes); images [n, 32, 32, 3].
function loadCifar(dir, train, limit) {
  const names = train ? [1, 2, 3, 4, 5].map((i) => `data_batch_${i}.bin`) : ['test_batch.bin'];
  const recs = [];
  let total = 0;
  for (const name of names) {
    if (limit && total >= limit) break;
    const file = path.join(dir, name);
    let b;
    try {
      b = fs.readFileSync(file);
    } catch (e) {
      throw new Error(`cannot open ${file}: ${e.code || e.message}`);
    }
    if (!b.length || b.length % CIFAR_RECORD)
      throw new Error(`${file}: ${b.length} bytes is not a whole number of ${CIFAR_RECORD}-byte records`);
    let n = b.length / CIFAR_RECORD;
    if (limit) n = Math.min(n, limit - total);
    for (let i = 0; i < n; i++)
      if (b[i * CIFAR_RECORD] > 9) throw new Error(`${file}: a label is outside 0-9`);
    recs.push([b, n]);
    total += n;
  }
  const x = new Float32Array(total * 3072), y = new Int32Array(total);
  let s = 0;
  for (const [b, n] of recs) {
    for (let i = 0; i < n; i++, s++) {
      const r = i * CIFAR_RECORD;
      y[s] = b[r];
      for (let c = 0; c < 3; c++)
        for (let p = 0; p < 1024; p++) x[s * 3072 + p * 3 + c] = b[r + 1 + c * 1024 + p] / 255;
    }
  }
  return { n: total, shape: [32, 32, 3], x, y, classes: 10 };
}

// A little-endian int64 .npy file (C order) as {dims, values: BigInt64Array}.
function readNpyInt64(file) {
  let b;
  try {
    b = fs.readFileSync(file);
  } catch (e) {
    throw new Error(`cannot open ${file}: ${e.code || e.message}`);
  }
  if (b.length < 10 || b.toString('latin1', 0, 6) !== '\x93NUMPY') throw new Error(`${file} is not a .npy file`);
  const start = b[6] === 1 ? 10 : 12;
  const hlen = b[6] === 1 ? b.readUInt16LE(8) : b.readUInt32LE(8);
  if (start + hlen > b.length) throw new Error(`${file}: truncated .npy header`);
  const h = b.toString('latin1', start, start + hlen);
  const descr = /'descr':\s*'([^']*)'/.exec(h), shape = /'shape':\s*\(([^)]*)\)/.exec(h);
  if (!descr || !shape || /'fortran_order':\s*True/.test(h) || descr[1] !== '<i8') return { dtype: descr && descr[1] };
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s).map(Number);
  const count = dims.reduce((a, d) => a * d, 1);
  const body = b.subarray(start + hlen);
  if (body.length !== 8 * count) throw new Error(`${file}: ${body.length} data bytes, its shape needs ${8 * count}`);
  const values = new BigInt64Array(count);
  for (let i = 0; i < count; i++) values[i] = body.readBigInt64LE(8 * i);
  return { dtype: 'int64', dims, values };
}

// Prepared IMDb data (crossbind data imdb-prepare): int64 token ids
// x_{split}.npy [n, L] and labels y_{split}.npy [n] (1 positive, 0 negative).
function loadImdb(dir, train, limit) {
  const split = train ? 'train' : 'test';
  if (!fs.existsSync(path.join(dir, 'vocab.txt')))
    throw new Error(`${dir} is not prepared IMDb data (no vocab.txt): make it with ` +
      `crossbind data imdb-prepare --from ACLIMDB_DIR --out ${dir}`);
  const xs = readNpyInt64(path.join(dir, `x_${split}.npy`)), ys = readNpyInt64(path.join(dir, `y_${split}.npy`));
  if (xs.dtype !== 'int64' || xs.dims.length !== 2 || ys.dtype !== 'int64' || ys.dims.length !== 1 ||
      ys.dims[0] !== xs.dims[0])
    throw new Error(`${dir}: expected int64 x_${split}.npy [n, L] and y_${split}.npy [n]`);
  const n = limit ? Math.min(limit, xs.dims[0]) : xs.dims[0], len = xs.dims[1];
  const x = new Int32Array(n * len), y = new Float32Array(n);
  for (let i = 0; i < n * len; i++) {
    const v = xs.values[i];
    if (v < 0n || v >= 10000n) throw new Error(`${dir}/x_${split}.npy: token id ${v} is outside 0-9999`);
    x[i] = Number(v);
  }
  for (let i = 0; i < n; i++) {
    if (ys.values[i] !== 0n && ys.values[i] !== 1n) throw new Error(`${dir}/y_${split}.npy: label ${ys.values[i]} is not 0 or 1`);
    y[i] = Number(ys.values[i]);
  }
  return { n, shape: [len], x, y, classes: 2 };
}

module.exports = { loadMnist, loadCifar, loadImdb };
