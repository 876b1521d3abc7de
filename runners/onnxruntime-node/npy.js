// NumPy .npy files (version 1-3, little-endian float32/float64/int64, C order).
'use strict';
const fs = require('fs');
const os = require('os');

function readNpy(path) {
  const b = fs.readFileSync(path);
  if (b.length < 10 || b.toString('latin1', 0, 6) !== '\x93NUMPY') throw new Error(`${path} is not a .npy file`);
  const major = b[6];
  const hlen = major === 1 ? b.readUInt16LE(8) : b.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  if (start + hlen > b.length) throw new Error(`${path}: truncated .npy header`);
  const h = b.toString('latin1', start, start + hlen);
  const descr = /'descr':\s*'([^']*)'/.exec(h);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(h);
  if (!descr || !shape || /'fortran_order':\s*True/.test(h)) throw new Error(`${path}: unsupported .npy header`);
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s).map(Number);
  const n = dims.reduce((a, d) => a * d, 1);
  const data = b.subarray(start + hlen);
  let out;
  if (descr[1] === '<f4' && data.length === 4 * n) {
    out = new Float32Array(n);
    for (let i = 0; i < n; i++) out[i] = data.readFloatLE(4 * i);
  } else if (descr[1] === '<f8' && data.length === 8 * n) {
    out = new Float32Array(n);
    for (let i = 0; i < n; i++) out[i] = data.readDoubleLE(8 * i);
  } else if (descr[1] === '<i8' && data.length === 8 * n) {
    out = new BigInt64Array(n); // token ids: ONNX Runtime takes int64 tensors as BigInt64Array
    for (let i = 0; i < n; i++) out[i] = data.readBigInt64LE(8 * i);
    return { dims, data: out, dtype: 'int64', descr: descr[1] };
  } else {
    throw new Error(`${path}: .npy must hold float32, float64 or int64 data matching its shape`);
  }
  return { dims, data: out, dtype: 'float32', descr: descr[1] };
}

// ONNX Runtime's tensor types as .npy descriptors (the data of each is a
// typed array of that width; bool comes as Uint8Array).
const DESCR = {
  float32: '<f4', float64: '<f8', float16: '<f2', int8: '|i1', uint8: '|u1', bool: '|b1', int16: '<i2',
  uint16: '<u2', int32: '<i4', uint32: '<u4', int64: '<i8', uint64: '<u8',
};

// Writes `data` (numbers, or a typed array of ONNX Runtime's `type`) as a
// .npy of shape `dims`: float32 unless a type is given. Under a temporary
// name, then renamed.
function writeNpy(path, dims, data, type = 'float32') {
  if (!(type in DESCR)) throw new Error(`${path}: cannot write tensors of type ${type} as .npy`);
  let h = `{'descr': '${DESCR[type]}', 'fortran_order': False, 'shape': (${dims.map((d) => d + ',').join(' ')}), }`;
  while ((10 + h.length + 1) % 64) h += ' ';
  h += '\n';
  const pre = Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0, h.length & 255, h.length >> 8]);
  let body;
  if (ArrayBuffer.isView(data) && os.endianness() === 'LE' && (type !== 'float32' || data instanceof Float32Array)) {
    body = Buffer.from(data.buffer, data.byteOffset, data.byteLength); // already the file's bytes
  } else if (type === 'float32') {
    body = Buffer.alloc(4 * data.length);
    for (let i = 0; i < data.length; i++) body.writeFloatLE(data[i], 4 * i);
  } else {
    throw new Error(`${path}: ${type} data must be a typed array on a little-endian machine`);
  }
  const tmp = `${path}.tmp.${process.pid}`;
  fs.writeFileSync(tmp, Buffer.concat([pre, Buffer.from(h, 'latin1'), body]));
  fs.renameSync(tmp, path);
}

module.exports = { readNpy, writeNpy };
