// MNIST-format IDX files (plain or gzip): the same files and scaling as crossbind.
'use strict';
const fs = require('fs');
const path = require('path');
const zlib = require('zlib');
const { readNpy } = require('./npy');

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
  if (b.length - 4 - 4 * ndim !== count) throw new Error(`${file}: header promises ${count} bytes`);
  const n = limit ? Math.min(limit, dims[0]) : dims[0];
  return { dims: [n, ...dims.slice(1)], bytes: b.subarray(4 + 4 * ndim, 4 + 4 * ndim + (count / dims[0]) * n) };
}

// Test images as float32 in [0, 1] ([n, 1, 28, 28] flattened) and labels.
function loadMnistTest(dir, limit) {
  const x = readIdx(dir, 't10k-images-idx3-ubyte', 3, limit);
  const y = readIdx(dir, 't10k-labels-idx1-ubyte', 1, limit);
  if (x.dims[0] !== y.dims[0]) throw new Error(`${dir}: ${x.dims[0]} images but ${y.dims[0]} labels`);
  const images = new Float32Array(x.bytes.length);
  for (let i = 0; i < images.length; i++) images[i] = x.bytes[i] / 255;
  return { n: x.dims[0], sample: x.dims[1] * x.dims[2], images, labels: Uint8Array.from(y.bytes) };
}

// CIFAR-10 binary test batch (test_batch.bin): records of a label byte and
// 3 x 32 x 32 pixel bytes; pixels scaled to [0, 1].
function loadCifarTest(dir, limit) {
  const file = path.join(dir, 'test_batch.bin');
  const b = fs.readFileSync(file);
  const rec = 1 + 3 * 32 * 32;
  if (!b.length || b.length % rec) throw new Error(`${file}: not a whole number of ${rec}-byte records`);
  const n = limit ? Math.min(limit, b.length / rec) : b.length / rec;
  const images = new Float32Array(n * (rec - 1)), labels = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    labels[i] = b[i * rec];
    if (labels[i] > 9) throw new Error(`${file}: record ${i} has label ${labels[i]}`);
    for (let p = 1; p < rec; p++) images[i * (rec - 1) + p - 1] = b[i * rec + p] / 255;
  }
  return { n, sample: rec - 1, dims: [3, 32, 32], images, labels };
}

// Prepared IMDb data (crossbind data imdb-prepare): int64 token ids
// x_test.npy [n, 300] and labels y_test.npy [n].
function loadImdbTest(dir, limit) {
  const x = readNpy(path.join(dir, 'x_test.npy')), y = readNpy(path.join(dir, 'y_test.npy'));
  if (x.dtype !== 'int64' || x.dims.length !== 2 || y.dtype !== 'int64' || y.dims[0] !== x.dims[0])
    throw new Error(`${dir}: expected int64 x_test.npy [n, L] and y_test.npy [n]`);
  const n = limit ? Math.min(limit, x.dims[0]) : x.dims[0], len = x.dims[1];
  const labels = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    if (y.data[i] !== 0n && y.data[i] !== 1n) throw new Error(`${dir}/y_test.npy: label ${y.data[i]} is not 0 or 1`);
    labels[i] = Number(y.data[i]);
  }
  return { n, sample: len, dims: [len], images: x.data.subarray(0, n * len), labels, dtype: 'int64' };
}

// The test set in whichever format the directory holds.
function loadTest(dir, limit) {
  if (fs.existsSync(path.join(dir, 'x_test.npy'))) return loadImdbTest(dir, limit);
  if (fs.existsSync(path.join(dir, 'test_batch.bin'))) return loadCifarTest(dir, limit);
  return { ...loadMnistTest(dir, limit), dims: [1, 28, 28] };
}

module.exports = { loadMnistTest, loadCifarTest, loadImdbTest, loadTest };
