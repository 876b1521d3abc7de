// MNIST-format IDX files (plain or gzip): the same files and scaling as crossbind.
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

module.exports = { loadMnistTest };
