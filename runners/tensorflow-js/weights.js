// crossbind's canonical weights (safetensors under PyTorch's state-dict names
// and layouts) to and from the TF.js layers of models.js, by the mapping
// documented in runners/tensorflow/cb_keras_map.py (TF.js layers hold their
// weights exactly as Keras' do: HWIO kernels, [in, out] dense kernels, gate
// blocks i,f,c,o for the LSTM and z,r,h for the GRU).
'use strict';
const fs = require('fs');

const VGG16_PLAN = [64, 64, 'M', 128, 128, 'M', 256, 256, 256, 'M', 512, 512, 512, 'M', 512, 512, 512, 'M'];

// [conv index, BatchNorm index] of PyTorch's VGG-16 `features`.
function vggLayers() {
  const out = [];
  let i = 0;
  for (const v of VGG16_PLAN) {
    if (v === 'M') i += 1;
    else { out.push([i, i + 1]); i += 3; }
  }
  return out;
}

function canonicalNames(model) {
  const wb = (layers) => layers.flatMap((l) => [`${l}.weight`, `${l}.bias`]);
  if (model === 'lenet1') return wb(['conv1', 'conv2', 'fc']);
  if (model === 'lenet5') return wb(['conv1', 'conv2', 'conv3', 'fc1', 'fc2']);
  if (model === 'vgg16') {
    const names = [];
    for (const [c, b] of vggLayers()) {
      names.push(`features.${c}.weight`);
      for (const p of ['weight', 'bias', 'running_mean', 'running_var', 'num_batches_tracked']) names.push(`features.${b}.${p}`);
    }
    return names.concat(wb(['classifier.0', 'classifier.3', 'classifier.6']));
  }
  return ['embedding.weight', 'rnn.weight_ih_l0', 'rnn.weight_hh_l0', 'rnn.bias_ih_l0', 'rnn.bias_hh_l0', 'fc.weight', 'fc.bias'];
}

// The canonical tensors' shapes (PyTorch's layouts).
function canonicalShapes(model) {
  const s = {};
  const conv = (n, o, i, k) => { s[`${n}.weight`] = [o, i, k, k]; s[`${n}.bias`] = [o]; };
  const lin = (n, o, i) => { s[`${n}.weight`] = [o, i]; s[`${n}.bias`] = [o]; };
  if (model === 'lenet1') { conv('conv1', 4, 1, 5); conv('conv2', 12, 4, 5); lin('fc', 10, 300); }
  else if (model === 'lenet5') {
    conv('conv1', 6, 1, 5); conv('conv2', 16, 6, 5); conv('conv3', 120, 16, 5); lin('fc1', 84, 120); lin('fc2', 10, 84);
  } else if (model === 'vgg16') {
    let cin = 3, j = 0;
    const plan = VGG16_PLAN.filter((v) => v !== 'M');
    for (const [c, b] of vggLayers()) {
      const o = plan[j++];
      s[`features.${c}.weight`] = [o, cin, 3, 3];
      for (const p of ['weight', 'bias', 'running_mean', 'running_var']) s[`features.${b}.${p}`] = [o];
      s[`features.${b}.num_batches_tracked`] = [];
      cin = o;
    }
    lin('classifier.0', 4096, 512); lin('classifier.3', 4096, 4096); lin('classifier.6', 10, 4096);
  } else {
    const g = (model === 'lstm' ? 4 : 3) * 512;
    s['embedding.weight'] = [10000, 300];
    s['rnn.weight_ih_l0'] = [g, 300]; s['rnn.weight_hh_l0'] = [g, 512]; s['rnn.bias_ih_l0'] = [g]; s['rnn.bias_hh_l0'] = [g];
    lin('fc', 1, 512);
  }
  return s;
}

const DTYPES = { F32: [Float32Array, 4], F64: [Float64Array, 8], I64: [BigInt64Array, 8], I32: [Int32Array, 4] };

// name -> {dtype, shape, data (typed array)}; throws an Error naming the file.
function readSafetensors(file) {
  let b;
  try {
    b = fs.readFileSync(file);
  } catch (e) {
    throw new Error(`cannot open weights ${file}: ${e.code === 'ENOENT' ? 'no such file' : e.message}`);
  }
  if (b.length < 8) throw new Error(`${file}: too short to be a safetensors file (truncated?)`);
  const hlen = b.readBigUInt64LE(0);
  if (hlen > BigInt(b.length - 8)) throw new Error(`${file}: header length ${hlen} exceeds the file (truncated?)`);
  let header;
  try {
    header = JSON.parse(b.toString('utf8', 8, 8 + Number(hlen)));
  } catch (e) {
    throw new Error(`${file}: the safetensors header is not JSON (${e.message})`);
  }
  if (!header || typeof header !== 'object' || Array.isArray(header)) throw new Error(`${file}: the header is not a JSON object`);
  const data = b.subarray(8 + Number(hlen));
  const out = {};
  for (const [name, e] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const dt = e && DTYPES[e.dtype];
    if (!dt) throw new Error(`${file}: tensor ${name} has unsupported dtype ${e && e.dtype}`);
    const shape = e.shape, off = e.data_offsets;
    if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0) || !Array.isArray(off) || off.length !== 2)
      throw new Error(`${file}: tensor ${name} has a malformed entry`);
    const count = shape.reduce((a, d) => a * d, 1);
    const [begin, end] = off;
    if (!(Number.isInteger(begin) && Number.isInteger(end) && begin >= 0 && end <= data.length && end - begin === count * dt[1]))
      throw new Error(`${file}: tensor ${name} lies outside the file or mismatches its shape (truncated?)`);
    const copy = Buffer.from(data.subarray(begin, end)); // aligned copy
    out[name] = { dtype: e.dtype, shape, data: new dt[0](copy.buffer, copy.byteOffset, count) };
  }
  return out;
}

// Writes [[name, {dtype, shape, data}], ...] in order, atomically.
function writeSafetensors(file, entries, metadata) {
  const header = {};
  if (metadata) header.__metadata__ = metadata;
  let offset = 0;
  const bodies = [];
  for (const [name, t] of entries) {
    const bytes = Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);
    header[name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + bytes.length] };
    offset += bytes.length;
    bodies.push(bytes);
  }
  let h = JSON.stringify(header);
  while (h.length % 8) h += ' ';
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(Buffer.byteLength(h)));
  const tmp = `${file}.tmp`;
  fs.writeFileSync(tmp, Buffer.concat([len, Buffer.from(h), ...bodies]));
  fs.renameSync(tmp, file);
}

// The mapping, with TF.js ops (pure data movement, and float32 sums for the
// recurrent biases). tensors: canonical name -> {shape, data}. Returns
// {layer name: [tf.Tensor in getWeights() order]}; throws naming missing tensors.
function toLayers(tf, model, t) {
  const missing = canonicalNames(model).filter((n) => !(n in t) && !n.endsWith('num_batches_tracked'));
  if (missing.length) throw new Error(`parameters missing from the weights: ${missing.join(', ')}`);
  for (const [n, want] of Object.entries(canonicalShapes(model))) {
    if (!(n in t) || n.endsWith('num_batches_tracked')) continue;
    if (t[n].shape.join(',') !== want.join(','))
      throw new Error(`tensor ${n} has shape [${t[n].shape.join(', ')}], ${model} needs [${want.join(', ')}]`);
  }
  const T = (n) => {
    const e = t[n];
    const data = e.data instanceof Float32Array ? e.data : Float32Array.from(e.data, Number);
    return tf.tensor(data, e.shape, 'float32');
  };
  const hwio = (n) => tf.transpose(T(n), [2, 3, 1, 0]);
  const swapRz = (x) => { // PyTorch's GRU blocks r,z,n <-> z,r,h along axis 0
    const [r, z, n] = tf.split(x, 3, 0);
    return tf.concat([z, r, n], 0);
  };
  const out = {};
  if (model === 'lenet1' || model === 'lenet5') {
    for (const c of model === 'lenet1' ? ['conv1', 'conv2'] : ['conv1', 'conv2', 'conv3'])
      out[c] = [hwio(`${c}.weight`), T(`${c}.bias`)];
    if (model === 'lenet1') // PyTorch flattens C,H,W, TF.js H,W,C
      out.fc = [tf.reshape(tf.transpose(tf.reshape(T('fc.weight'), [10, 12, 5, 5]), [2, 3, 1, 0]), [300, 10]), T('fc.bias')];
    else for (const d of ['fc1', 'fc2']) out[d] = [tf.transpose(T(`${d}.weight`)), T(`${d}.bias`)];
    return out;
  }
  if (model === 'vgg16') {
    for (const [c, b] of vggLayers()) {
      out[`features_${c}`] = [hwio(`features.${c}.weight`)];
      out[`features_${b}`] = ['weight', 'bias', 'running_mean', 'running_var'].map((p) => T(`features.${b}.${p}`));
    }
    for (const i of [0, 3, 6]) out[`classifier_${i}`] = [tf.transpose(T(`classifier.${i}.weight`)), T(`classifier.${i}.bias`)];
    return out;
  }
  out.embedding = [T('embedding.weight')];
  const [wih, whh, bih, bhh] = ['weight_ih_l0', 'weight_hh_l0', 'bias_ih_l0', 'bias_hh_l0'].map((n) => T(`rnn.${n}`));
  if (model === 'lstm') out.rnn = [tf.transpose(wih), tf.transpose(whh), tf.add(bih, bhh)];
  else if (model === 'gru-rb') out.rnn = [tf.transpose(swapRz(wih)), tf.transpose(swapRz(whh)), swapRz(tf.add(bih, bhh))];
  else out.rnn = [tf.transpose(swapRz(wih)), tf.transpose(swapRz(whh)), tf.stack([swapRz(bih), swapRz(bhh)])];
  out.fc = [tf.transpose(T('fc.weight')), T('fc.bias')];
  return out;
}

// The layers' weights that cb_keras_map lists, by layer name.
function layerNames(model) {
  if (model === 'lenet1') return ['conv1', 'conv2', 'fc'];
  if (model === 'lenet5') return ['conv1', 'conv2', 'conv3', 'fc1', 'fc2'];
  if (model === 'vgg16') return vggLayers().flatMap(([c, b]) => [`features_${c}`, `features_${b}`])
    .concat(['classifier_0', 'classifier_3', 'classifier_6']);
  return ['embedding', 'rnn', 'fc'];
}

const f32 = (x) => ({ dtype: 'F32', shape: x.shape, data: x.dataSync().slice() });

// Keras' one recurrent bias back to PyTorch's pair: an unchanged sum gives
// the reference pair back bit for bit; a changed one keeps the reference's
// b_hh; without a reference b_hh = 0.
function splitBias(tf, total, ref, ih, hh) {
  const tot = f32(total);
  if (!ref || !ref[ih] || !ref[hh]) return [tot, { dtype: 'F32', shape: tot.shape, data: new Float32Array(tot.data.length) }];
  const rih = Float32Array.from(ref[ih].data, Number), rhh = Float32Array.from(ref[hh].data, Number);
  const sum = tf.add(tf.tensor(rih), tf.tensor(rhh)).dataSync();
  const same = sum.every((v, i) => Object.is(v, tot.data[i]));
  if (same) return [{ dtype: 'F32', shape: tot.shape, data: rih }, { dtype: 'F32', shape: tot.shape, data: rhh }];
  return [f32(tf.sub(total, tf.tensor(rhh))), { dtype: 'F32', shape: tot.shape, data: rhh }];
}

// The model's weights as canonical entries [[name, {dtype, shape, data}], ...]
// in state-dict order. reference: the canonical tensors training started from.
function toCanonical(tf, model, layers, reference) {
  let entries; // set inside tidy: typed arrays are not walked as tensor containers
  tf.tidy(() => {
    const k = {};
    for (const l of layerNames(model)) k[l] = layers.getLayer(l).getWeights();
    const t = {};
    const oihw = (x) => f32(tf.transpose(x, [3, 2, 0, 1]));
    const swapRz = (x) => { const [a, b, c] = tf.split(x, 3, 0); return tf.concat([b, a, c], 0); };
    if (model === 'lenet1' || model === 'lenet5') {
      for (const c of model === 'lenet1' ? ['conv1', 'conv2'] : ['conv1', 'conv2', 'conv3']) {
        t[`${c}.weight`] = oihw(k[c][0]);
        t[`${c}.bias`] = f32(k[c][1]);
      }
      if (model === 'lenet1') {
        t['fc.weight'] = f32(tf.reshape(tf.transpose(tf.reshape(k.fc[0], [5, 5, 12, 10]), [3, 2, 0, 1]), [10, 300]));
        t['fc.bias'] = f32(k.fc[1]);
      } else for (const d of ['fc1', 'fc2']) { t[`${d}.weight`] = f32(tf.transpose(k[d][0])); t[`${d}.bias`] = f32(k[d][1]); }
    } else if (model === 'vgg16') {
      for (const [c, b] of vggLayers()) {
        t[`features.${c}.weight`] = oihw(k[`features_${c}`][0]);
        ['weight', 'bias', 'running_mean', 'running_var'].forEach((p, i) => { t[`features.${b}.${p}`] = f32(k[`features_${b}`][i]); });
        const nbt = reference && reference[`features.${b}.num_batches_tracked`];
        t[`features.${b}.num_batches_tracked`] = { dtype: 'I64', shape: [],
          data: BigInt64Array.of(nbt ? BigInt(nbt.data[0]) : 0n) };
      }
      for (const i of [0, 3, 6]) {
        t[`classifier.${i}.weight`] = f32(tf.transpose(k[`classifier_${i}`][0]));
        t[`classifier.${i}.bias`] = f32(k[`classifier_${i}`][1]);
      }
    } else {
      t['embedding.weight'] = f32(k.embedding[0]);
      const [kern, rec, bias] = k.rnn;
      if (model === 'lstm') {
        t['rnn.weight_ih_l0'] = f32(tf.transpose(kern));
        t['rnn.weight_hh_l0'] = f32(tf.transpose(rec));
        [t['rnn.bias_ih_l0'], t['rnn.bias_hh_l0']] = splitBias(tf, bias, reference, 'rnn.bias_ih_l0', 'rnn.bias_hh_l0');
      } else {
        t['rnn.weight_ih_l0'] = f32(swapRz(tf.transpose(kern)));
        t['rnn.weight_hh_l0'] = f32(swapRz(tf.transpose(rec)));
        if (model === 'gru') { // reset-after: two bias rows, lossless
          const [bx, bh] = tf.unstack(bias);
          t['rnn.bias_ih_l0'] = f32(swapRz(bx));
          t['rnn.bias_hh_l0'] = f32(swapRz(bh));
        } else {
          [t['rnn.bias_ih_l0'], t['rnn.bias_hh_l0']] = splitBias(tf, swapRz(bias), reference, 'rnn.bias_ih_l0', 'rnn.bias_hh_l0');
        }
      }
      t['fc.weight'] = f32(tf.transpose(k.fc[0]));
      t['fc.bias'] = f32(k.fc[1]);
    }
    entries = canonicalNames(model).map((n) => [n, t[n]]);
  });
  return entries;
}

// Sets canonical weights on a model built by models.js; throws on a missing
// tensor or a shape the model does not have.
function setCanonical(tf, model, name, tensors) {
  tf.tidy(() => {
    const w = toLayers(tf, name, tensors);
    for (const [layer, arrs] of Object.entries(w)) {
      const want = model.getLayer(layer).getWeights().map((x) => x.shape.join('x'));
      const got = arrs.map((x) => x.shape.join('x'));
      if (want.join(',') !== got.join(','))
        throw new Error(`layer ${layer}: the weights give shapes [${got.join(', ')}], the model needs [${want.join(', ')}]`);
      model.getLayer(layer).setWeights(arrs);
    }
  });
}

module.exports = { readSafetensors, writeSafetensors, setCanonical, toCanonical, canonicalNames, VGG16_PLAN };
